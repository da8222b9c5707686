/* store.c: the daemon's SQLite state: schema migrations, a cache of prepared
 * statements, and the job / instance / decision records. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <sqlite3.h>

#include "daemon/store.h"

/* ---- state names -------------------------------------------------------- */

#define SPW_NAME_OF(a, s) s,
static const char *const djob_names[] = {SPW_DJOB_STATES(SPW_NAME_OF)};
static const char *const inst_names[] = {SPW_INST_STATES(SPW_NAME_OF)};

const char *spw_djob_state_name(spw_djob_state_t s)
{
    return (unsigned)s < SPW_DJOB_STATE_COUNT ? djob_names[s] : "?";
}

int spw_djob_state_parse(const char *s, spw_djob_state_t *out)
{
    int i;

    for (i = 0; i < SPW_DJOB_STATE_COUNT; i++)
        if (strcmp(s, djob_names[i]) == 0) {
            *out = (spw_djob_state_t)i;
            return 0;
        }
    return -1;
}

int spw_djob_state_terminal(spw_djob_state_t s)
{
    return s == SPW_DJOB_SUCCEEDED || s == SPW_DJOB_FAILED ||
        s == SPW_DJOB_CANCELLED || s == SPW_DJOB_REJECTED;
}

const char *spw_inst_state_name(spw_inst_state_t s)
{
    return (unsigned)s < SPW_INST_STATE_COUNT ? inst_names[s] : "?";
}

int spw_inst_state_parse(const char *s, spw_inst_state_t *out)
{
    int i;

    for (i = 0; i < SPW_INST_STATE_COUNT; i++)
        if (strcmp(s, inst_names[i]) == 0) {
            *out = (spw_inst_state_t)i;
            return 0;
        }
    return -1;
}

/* ---- schema ------------------------------------------------------------- */

/* migrations[i] takes the schema from version i to i + 1.  Append only:
 * a released migration is never edited, a change is a new entry. */
static const char *const migrations[] = {
    /* 0 -> 1: the first schema. */
    "CREATE TABLE jobs ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  id TEXT NOT NULL UNIQUE,"
    "  team TEXT NOT NULL,"
    "  spec_json TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  submit_ts REAL NOT NULL,"
    "  placed_ts REAL,"
    "  start_ts REAL,"
    "  end_ts REAL,"
    "  placement TEXT,"
    "  gpus_assigned TEXT,"
    "  pid INTEGER,"
    "  pid_start_ticks INTEGER,"
    "  exit_code INTEGER,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  reason TEXT,"
    "  cost_usd REAL NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX jobs_state ON jobs(state, seq);"
    "CREATE INDEX jobs_team ON jobs(team, seq);"
    "CREATE TABLE instances ("
    "  id TEXT PRIMARY KEY,"
    "  provider TEXT NOT NULL,"
    "  offer TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  launched_ts REAL NOT NULL,"
    "  ready_ts REAL,"
    "  released_ts REAL,"
    "  price_usd_per_h REAL NOT NULL,"
    "  job_id TEXT"
    ");"
    "CREATE TABLE decisions ("
    "  seq INTEGER PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"
    "  ts REAL NOT NULL,"
    "  json TEXT NOT NULL"
    ");"
    "CREATE INDEX decisions_job ON decisions(job_id, seq);",
    /* 1 -> 2: money: the cloud share of a job's cost, the worst case its
     * live cloud placement reserves, and what it settled against its
     * team's budget, so a restart rebuilds the ledger.  Rows from schema 1
     * had no budgets: what they billed in the cloud counts as settled in
     * the period of their last placement. */
    "ALTER TABLE jobs ADD COLUMN cloud_usd REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN reserved_usd REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN charge_ts REAL;"
    "ALTER TABLE jobs ADD COLUMN egress_usd REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN egress_gb REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN ledger_usd REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN ledger_egress_usd REAL NOT NULL DEFAULT 0;"
    "UPDATE jobs SET charge_ts = placed_ts;"
    "UPDATE jobs SET cloud_usd = cost_usd, ledger_usd = cost_usd "
    "  WHERE placement LIKE 'cloud:%';",
    /* 2 -> 3: interruptions (spot preemptions, node failures): what each
     * job kept and lost, its restart counts, and the nodes an administrator
     * took down, so a restart keeps them down. */
    "ALTER TABLE jobs ADD COLUMN done_s REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN lost_s REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN lost_gpu_s REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN spot_gpu_s REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN ondemand_gpu_s REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN last_offer INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE jobs ADD COLUMN spot INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE nodes ("
    "  pool TEXT NOT NULL,"
    "  node INTEGER NOT NULL,"
    "  down_ts REAL NOT NULL,"
    "  PRIMARY KEY (pool, node)"
    ");",
    /* 3 -> 4: launch safety: the launch token of each job's latest launch
     * intent (committed before the launch, so recovery finds what it
     * started), its pending cancel, and a key-value table for the daemon
     * id (filled by spw_store_daemon_id) and the health heartbeat. */
    "ALTER TABLE jobs ADD COLUMN launch_token TEXT;"
    "ALTER TABLE jobs ADD COLUMN cancel_req INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE meta ("
    "  key TEXT PRIMARY KEY,"
    "  value TEXT NOT NULL"
    ");",
    /* 4 -> 5: cloud instances that are hosts: the address the daemon
     * reaches each at (NULL for instances from before, and for instances
     * that are records only). */
    "ALTER TABLE instances ADD COLUMN addr TEXT;",
    /* 5 -> 6: the GPU-hours each job settled, on-prem and in the cloud,
     * so the costs view is the same after a restart (rows from before
     * hold 0: their hours were never written). */
    "ALTER TABLE jobs ADD COLUMN onprem_gpu_h REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN cloud_gpu_h REAL NOT NULL DEFAULT 0;"
    /* ... and who took each node down: 1 = its backend saw it fail (it
     * comes back when the backend sees it answer, also after a restart),
     * 0 = an administrator (it stays down until one brings it back). */
    "ALTER TABLE nodes ADD COLUMN by_backend INTEGER NOT NULL DEFAULT 0;",
    /* 6 -> 7: cloud accounts: the account that holds each instance and the
     * cloud's own id for it (rows from before: the default account,
     * "emulated", whose ids are the cloud's), and each cloud acquisition's
     * intent, committed before the provider is asked, so that a restart asks
     * again with the same token and never buys twice. */
    "ALTER TABLE instances ADD COLUMN account TEXT NOT NULL DEFAULT 'emulated';"
    "ALTER TABLE instances ADD COLUMN cloud_id TEXT;"
    "CREATE TABLE acquisitions ("
    "  token TEXT PRIMARY KEY,"
    "  job_id TEXT NOT NULL,"
    "  account TEXT NOT NULL,"
    "  offer TEXT NOT NULL,"
    "  count INTEGER NOT NULL,"
    "  spot INTEGER NOT NULL,"
    "  ts REAL NOT NULL"
    ");",
    /* 7 -> 8: the instances a job's last cloud attempt ran on, so a job read
     * back from the database (it left the daemon's memory, or the daemon
     * restarted) still lists them. */
    "ALTER TABLE jobs ADD COLUMN ran_on TEXT;",
    /* 8 -> 9: the fences of failed-over attempts (what a backend must
     * still kill on a host that stopped answering), so that a restart
     * gives them back to the backend until the host confirmed the kill. */
    "CREATE TABLE fences ("
    "  pool TEXT NOT NULL,"
    "  host TEXT NOT NULL,"
    "  what TEXT NOT NULL,"
    "  ts REAL NOT NULL,"
    "  PRIMARY KEY (pool, host, what)"
    ");",
    /* 9 -> 10: the dashboard's time series (ui.c), so that a restart keeps
     * its history: one row per sample and tier (0: every sample, 1: one a
     * minute, 2: one every ten minutes), each tier pruned to its own span
     * as it is written. */
    "CREATE TABLE series ("
    "  tier INTEGER NOT NULL,"
    "  ts REAL NOT NULL,"
    "  json TEXT NOT NULL,"
    "  PRIMARY KEY (tier, ts)"
    ");",
    /* 10 -> 11: the part of each job's egress paid to copy data into
     * on-prem pools, which counts against its team's egress month but not
     * its budget, so that a restart rebuilds both as the running engine
     * kept them (rows from before hold 0: their egress counts as before). */
    "ALTER TABLE jobs ADD COLUMN onprem_egress_usd REAL NOT NULL DEFAULT 0;",
    /* 11 -> 12: the part of each job's cloud_usd paid at a commitment's
     * rate (cloud.commitments), which is outside budgets and shows as
     * committed, not cloud, after a restart too (rows from before hold 0:
     * their committed share stays inside cloud_usd). */
    "ALTER TABLE jobs ADD COLUMN commit_usd REAL NOT NULL DEFAULT 0;",
};
#define NMIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

_Static_assert(NMIGRATIONS == SPW_STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* ---- statement cache ---------------------------------------------------- */

#define JOB_COLS                                                              \
    "seq, id, team, spec_json, state, submit_ts, placed_ts, start_ts, "       \
    "end_ts, placement, gpus_assigned, pid, pid_start_ticks, exit_code, "     \
    "attempts, reason, cost_usd, cloud_usd, reserved_usd, charge_ts, "        \
    "egress_usd, egress_gb, held, ledger_usd, ledger_egress_usd, "            \
    "done_s, lost_s, lost_gpu_s, spot_gpu_s, ondemand_gpu_s, restarts, "      \
    "preemptions, failures, last_offer, spot, launch_token, cancel_req, "    \
    "onprem_gpu_h, cloud_gpu_h, ran_on, onprem_egress_usd, commit_usd"
#define INST_COLS                                                             \
    "id, provider, offer, state, launched_ts, ready_ts, released_ts, "        \
    "price_usd_per_h, job_id, addr, account, cloud_id"

/* Every statement the store runs more than once, prepared on first use. */
#define STMTS(X)                                                              \
    X(SAVEPOINT, "SAVEPOINT spw")                                             \
    X(RELEASE, "RELEASE spw")                                                 \
    X(ROLLBACK_TO, "ROLLBACK TO spw")                                         \
    X(JOB_INSERT,                                                             \
      "INSERT INTO jobs (seq, id, team, spec_json, state, submit_ts) "        \
      "VALUES (?1, ?2, ?3, ?4, 'queued', ?5)")                                \
    X(JOB_UPDATE,                                                             \
      "UPDATE jobs SET "                                                      \
      "state = CASE WHEN ?1 & 1 THEN ?2 ELSE state END, "                     \
      "placed_ts = CASE WHEN ?1 & 2 THEN ?3 ELSE placed_ts END, "             \
      "start_ts = CASE WHEN ?1 & 4 THEN ?4 ELSE start_ts END, "               \
      "end_ts = CASE WHEN ?1 & 8 THEN ?5 ELSE end_ts END, "                   \
      "placement = CASE WHEN ?1 & 16 THEN ?6 ELSE placement END, "            \
      "gpus_assigned = CASE WHEN ?1 & 32 THEN ?7 ELSE gpus_assigned END, "    \
      "pid = CASE WHEN ?1 & 64 THEN ?8 ELSE pid END, "                        \
      "pid_start_ticks = CASE WHEN ?1 & 64 THEN ?9 ELSE pid_start_ticks END, "\
      "exit_code = CASE WHEN ?1 & 128 THEN ?10 ELSE exit_code END, "          \
      "attempts = CASE WHEN ?1 & 256 THEN ?11 ELSE attempts END, "            \
      "reason = CASE WHEN ?1 & 512 THEN ?12 ELSE reason END, "                \
      "cost_usd = CASE WHEN ?1 & 1024 THEN ?13 ELSE cost_usd END, "           \
      "cloud_usd = CASE WHEN ?1 & 1024 THEN ?15 ELSE cloud_usd END, "         \
      "reserved_usd = CASE WHEN ?1 & 2048 THEN ?16 ELSE reserved_usd END, "   \
      "charge_ts = CASE WHEN ?1 & 2048 THEN ?17 ELSE charge_ts END, "         \
      "egress_usd = CASE WHEN ?1 & 2048 THEN ?18 ELSE egress_usd END, "       \
      "egress_gb = CASE WHEN ?1 & 2048 THEN ?19 ELSE egress_gb END, "         \
      "held = CASE WHEN ?1 & 2048 THEN ?20 ELSE held END, "                   \
      "ledger_usd = CASE WHEN ?1 & 2048 THEN ?21 ELSE ledger_usd END, "       \
      "ledger_egress_usd = CASE WHEN ?1 & 2048 THEN ?22 "                     \
      "  ELSE ledger_egress_usd END, "                                        \
      "done_s = CASE WHEN ?1 & 4096 THEN ?23 ELSE done_s END, "               \
      "lost_s = CASE WHEN ?1 & 4096 THEN ?24 ELSE lost_s END, "               \
      "lost_gpu_s = CASE WHEN ?1 & 4096 THEN ?25 ELSE lost_gpu_s END, "       \
      "spot_gpu_s = CASE WHEN ?1 & 4096 THEN ?26 ELSE spot_gpu_s END, "       \
      "ondemand_gpu_s = CASE WHEN ?1 & 4096 THEN ?27 "                        \
      "  ELSE ondemand_gpu_s END, "                                           \
      "restarts = CASE WHEN ?1 & 4096 THEN ?28 ELSE restarts END, "           \
      "preemptions = CASE WHEN ?1 & 4096 THEN ?29 ELSE preemptions END, "     \
      "failures = CASE WHEN ?1 & 4096 THEN ?30 ELSE failures END, "           \
      "last_offer = CASE WHEN ?1 & 4096 THEN ?31 ELSE last_offer END, "       \
      "spot = CASE WHEN ?1 & 4096 THEN ?32 ELSE spot END, "                   \
      "launch_token = CASE WHEN ?1 & 8192 THEN ?33 ELSE launch_token END, "   \
      "cancel_req = CASE WHEN ?1 & 16384 THEN ?34 ELSE cancel_req END, "      \
      "onprem_gpu_h = CASE WHEN ?1 & 1024 THEN ?35 ELSE onprem_gpu_h END, "   \
      "cloud_gpu_h = CASE WHEN ?1 & 1024 THEN ?36 ELSE cloud_gpu_h END, "     \
      "ran_on = CASE WHEN ?1 & 16 THEN ?37 ELSE ran_on END, "                 \
      "onprem_egress_usd = CASE WHEN ?1 & 2048 THEN ?38 "                     \
      "  ELSE onprem_egress_usd END, "                                        \
      "commit_usd = CASE WHEN ?1 & 1024 THEN ?39 ELSE commit_usd END "         \
      "WHERE id = ?14")                                                       \
    X(JOB_GET, "SELECT " JOB_COLS " FROM jobs WHERE id = ?1")                 \
    X(JOB_LIST, "SELECT " JOB_COLS " FROM jobs WHERE seq > ?3 "               \
      "AND seq < ?5 ORDER BY seq LIMIT ?4")                                   \
    X(JOB_LIST_STATE, "SELECT " JOB_COLS " FROM jobs WHERE state = ?1 "       \
      "AND seq > ?3 AND seq < ?5 ORDER BY seq LIMIT ?4")                      \
    X(JOB_LIST_TEAM, "SELECT " JOB_COLS " FROM jobs WHERE team = ?2 "         \
      "AND seq > ?3 AND seq < ?5 ORDER BY seq LIMIT ?4")                      \
    X(JOB_LIST_STATE_TEAM, "SELECT " JOB_COLS " FROM jobs WHERE "             \
      "state = ?1 AND team = ?2 AND seq > ?3 AND seq < ?5 "                   \
      "ORDER BY seq LIMIT ?4")                                                \
    X(JOB_ACTIVE, "SELECT " JOB_COLS " FROM jobs WHERE state IN "             \
      "('queued', 'placed', 'running') ORDER BY seq")                         \
    X(INST_INSERT, "INSERT INTO instances (" INST_COLS ") "                   \
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")           \
    X(INST_UPDATE, "UPDATE instances SET state = ?4, ready_ts = ?6, "         \
      "released_ts = ?7, job_id = ?9, addr = ?10, cloud_id = COALESCE(?12, cloud_id) "            \
      "WHERE id = ?1")                                                        \
    X(ACQ_INSERT, "INSERT OR REPLACE INTO acquisitions (token, job_id, "      \
      "account, offer, count, spot, ts) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)") \
    X(ACQ_DELETE, "DELETE FROM acquisitions WHERE token = ?1")                \
    X(ACQ_LIST, "SELECT token, job_id, account, offer, count, spot, ts "      \
      "FROM acquisitions ORDER BY ts, rowid")                                 \
    X(INST_LIST, "SELECT " INST_COLS " FROM instances "                       \
      "ORDER BY launched_ts, rowid")                                          \
    X(INST_ACTIVE, "SELECT " INST_COLS " FROM instances "                     \
      "WHERE state <> 'released' ORDER BY launched_ts, rowid")                \
    X(NODE_DOWN, "INSERT OR REPLACE INTO nodes (pool, node, down_ts, "        \
      "by_backend) VALUES (?1, ?2, ?3, ?4)")                                  \
    X(NODE_UP, "DELETE FROM nodes WHERE pool = ?1 AND node = ?2")             \
    X(NODE_LIST, "SELECT pool, node, down_ts, by_backend FROM nodes "         \
      "ORDER BY pool, node")                                                  \
    X(FENCE_ADD, "INSERT OR IGNORE INTO fences (pool, host, what, ts) "       \
      "VALUES (?1, ?2, ?3, ?4)")                                              \
    X(FENCE_DEL, "DELETE FROM fences WHERE pool = ?1 AND host = ?2 "          \
      "AND what = ?3")                                                        \
    X(FENCE_LIST, "SELECT pool, host, what, ts FROM fences "                  \
      "ORDER BY pool, host, what")                                            \
    X(META_GET, "SELECT value FROM meta WHERE key = ?1")                      \
    X(META_PUT, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")   \
    X(DEC_INSERT, "INSERT INTO decisions (job_id, ts, json) "                 \
      "VALUES (?1, ?2, ?3)")                                                  \
    X(DEC_LATEST, "SELECT json, ts FROM decisions WHERE job_id = ?1 "         \
      "ORDER BY seq DESC LIMIT 1")                                            \
    X(SERIES_PUT, "INSERT OR REPLACE INTO series (tier, ts, json) "           \
      "VALUES (?1, ?2, ?3)")                                                  \
    X(SERIES_PRUNE, "DELETE FROM series WHERE tier = ?1 AND ts < ?2")         \
    X(SERIES_LIST, "SELECT ts, json FROM series WHERE tier = ?1 "             \
      "ORDER BY ts")

/* JOB_UPDATE tests these bits by value. */
_Static_assert(SPW_JU_STATE == 1 && SPW_JU_PLACED_TS == 2 &&
               SPW_JU_START_TS == 4 && SPW_JU_END_TS == 8 &&
               SPW_JU_PLACEMENT == 16 && SPW_JU_GPUS == 32 &&
               SPW_JU_PID == 64 && SPW_JU_EXIT == 128 &&
               SPW_JU_ATTEMPTS == 256 && SPW_JU_REASON == 512 &&
               SPW_JU_COST == 1024 && SPW_JU_MONEY == 2048 &&
               SPW_JU_PROGRESS == 4096 && SPW_JU_LAUNCH == 8192 &&
               SPW_JU_CANCEL == 16384,
               "JOB_UPDATE's bit values");

#define STMT_ENUM(a, sql) S_##a,
#define STMT_SQL(a, sql) sql,
enum { STMTS(STMT_ENUM) S_COUNT };
static const char *const stmt_sql[] = {STMTS(STMT_SQL)};

struct spw_store {
    sqlite3 *db;                   /* the connection */
    char *path;                    /* file name, for messages */
    sqlite3_stmt *stmt[S_COUNT];   /* prepared on first use; NULL before */
    int64_t next_seq;              /* seq of the next job inserted */
    int version;                   /* schema version after migrations */
    int in_txn;                    /* inside spw_store_begin */
};

static int db_error(spw_store_t *st, spw_error_t *err, const char *what)
{
    return spw_errorf(err, "%s: %s: %s", st->path, what,
                      sqlite3_errmsg(st->db));
}

/* The cached statement id, reset and ready to bind, or NULL with err. */
static sqlite3_stmt *stmt(spw_store_t *st, int id, spw_error_t *err)
{
    if (!st->stmt[id] &&
        sqlite3_prepare_v3(st->db, stmt_sql[id], -1,
                           SQLITE_PREPARE_PERSISTENT, &st->stmt[id],
                           NULL) != SQLITE_OK) {
        db_error(st, err, "cannot prepare a statement");
        return NULL;
    }
    return st->stmt[id];
}

/* Resets a statement after use so it holds no read lock or bound text. */
static void done(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

/* Runs a statement that returns no rows. */
static int run(spw_store_t *st, int id, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, id, err);
    int rc;

    if (!s)
        return -1;
    rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "write failed");
    return 0;
}

static int exec(spw_store_t *st, const char *sql, spw_error_t *err)
{
    char *msg = NULL;

    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        spw_errorf(err, "%s: %s", st->path,
                   msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static void bind_time(sqlite3_stmt *s, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_double(s, i, v);
}

/* Money columns are NOT NULL: a NAN or infinite amount is stored as 0. */
static double finite_or_0(double v)
{
    return isfinite(v) ? v : 0;
}

static double col_time(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN
        : sqlite3_column_double(s, i);
}

static char *col_text(sqlite3_stmt *s, int i)
{
    return (char *)sqlite3_column_text(s, i);
}

/* ---- open, migrate, close ----------------------------------------------- */

/* One integer from a query with no parameters; *out = dflt when no row. */
static int query_int(spw_store_t *st, const char *sql, int64_t dflt,
                     int64_t *out, spw_error_t *err)
{
    sqlite3_stmt *s;
    int rc;

    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
        return db_error(st, err, "cannot read the database");
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    else if (rc == SQLITE_DONE)
        *out = dflt;
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_error(st, err, "cannot read the database");
    return 0;
}

/* Reads the schema version: 0 for an empty database, -1 with err when the
 * file holds tables but is no spillway database. */
static int read_version(spw_store_t *st, int64_t *version, spw_error_t *err)
{
    int64_t has_table, tables;

    if (query_int(st, "SELECT count(*) FROM sqlite_master WHERE "
                  "type = 'table' AND name = 'schema_version'", 0,
                  &has_table, err) < 0 ||
        query_int(st, "SELECT count(*) FROM sqlite_master", 0, &tables,
                  err) < 0)
        return -1;
    if (!has_table) {
        if (tables > 0)
            return spw_errorf(err, "%s: not a spillway state database (it "
                              "has tables but no schema_version)", st->path);
        *version = 0;
        return 0;
    }
    return query_int(st, "SELECT max(version) FROM schema_version", 0,
                     version, err);
}

static int migrate(spw_store_t *st, spw_error_t *err)
{
    int64_t v;
    char sql[96];

    /* IMMEDIATE: take the write lock before reading the version, so two
     * processes opening a new file cannot both run a migration. */
    if (exec(st, "BEGIN IMMEDIATE", err) < 0)
        return -1;
    if (read_version(st, &v, err) < 0)
        goto error;
    if (v > SPW_STORE_SCHEMA_VERSION) {
        spw_errorf(err, "%s: the database has schema version %" PRId64
                   ", newer than this spillway knows (%d): run a newer "
                   "spillway", st->path, v, SPW_STORE_SCHEMA_VERSION);
        goto error;
    }
    if (v == 0 && exec(st, "CREATE TABLE schema_version ("
                       "version INTEGER NOT NULL)", err) < 0)
        goto error;
    for (; v < NMIGRATIONS; v++) {
        if (exec(st, migrations[v], err) < 0)
            goto error;
        snprintf(sql, sizeof(sql), "DELETE FROM schema_version; INSERT "
                 "INTO schema_version VALUES (%" PRId64 ")", v + 1);
        if (exec(st, sql, err) < 0)
            goto error;
    }
    if (exec(st, "COMMIT", err) < 0)
        goto error;
    st->version = (int)v;
    return 0;
error:
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* The next job seq: one past the largest ever used, deleted rows included
 * (AUTOINCREMENT keeps that in sqlite_sequence), so ids are never reused. */
static int load_next_seq(spw_store_t *st, spw_error_t *err)
{
    int64_t a, b;

    if (query_int(st, "SELECT coalesce(max(seq), 0) FROM sqlite_sequence "
                  "WHERE name = 'jobs'", 0, &a, err) < 0 ||
        query_int(st, "SELECT coalesce(max(seq), 0) FROM jobs", 0, &b,
                  err) < 0)
        return -1;
    st->next_seq = (a > b ? a : b) + 1;
    return 0;
}

spw_store_t *spw_store_open(const char *path, const spw_store_opts_t *opts,
                            spw_error_t *err)
{
    spw_store_opts_t o = {SPW_STORE_SYNC_NORMAL, 0};
    spw_store_t *st;
    int64_t v;
    char sql[64];
    sqlite3_stmt *s = NULL;
    const char *mode;

    if (opts)
        o = *opts;
    st = spw_xcalloc(1, sizeof(*st));
    st->path = spw_xstrdup(path);
    if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE |
                        SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        if (st->db)
            db_error(st, err, "cannot open");
        else
            spw_errorf(err, "%s: cannot open: out of memory", path);
        goto error;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, o.busy_timeout_ms > 0 ? o.busy_timeout_ms
                         : 5000);
    /* Check what the file is before changing anything in it: a foreign or
     * newer database is refused untouched (WAL mode is persistent). */
    if (read_version(st, &v, err) < 0)
        goto error;
    if (v > SPW_STORE_SCHEMA_VERSION) {
        spw_errorf(err, "%s: the database has schema version %" PRId64
                   ", newer than this spillway knows (%d): run a newer "
                   "spillway", path, v, SPW_STORE_SCHEMA_VERSION);
        goto error;
    }
    if (sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &s,
                           NULL) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
        db_error(st, err, "cannot switch to WAL mode");
        goto error;
    }
    mode = (const char *)sqlite3_column_text(s, 0);
    if (!mode || strcmp(mode, "wal") != 0) {
        spw_errorf(err, "%s: cannot switch to WAL mode (the journal mode "
                   "stays '%s')", path, mode ? mode : "?");
        goto error;
    }
    sqlite3_finalize(s);
    s = NULL;
    snprintf(sql, sizeof(sql), "PRAGMA synchronous=%s",
             o.sync == SPW_STORE_SYNC_FULL ? "FULL" : "NORMAL");
    if (exec(st, sql, err) < 0 || migrate(st, err) < 0 ||
        load_next_seq(st, err) < 0)
        goto error;
    return st;
error:
    sqlite3_finalize(s);
    spw_store_close(st);
    return NULL;
}

void spw_store_close(spw_store_t *st)
{
    int i;

    if (!st)
        return;
    for (i = 0; i < S_COUNT; i++)
        sqlite3_finalize(st->stmt[i]);
    sqlite3_close(st->db);
    free(st->path);
    free(st);
}

int spw_store_schema_version(const spw_store_t *st)
{
    return st->version;
}

/* Reads meta.key into buf (NUL-terminated); 1 found, 0 none, -1 error. */
static int meta_get(spw_store_t *st, const char *key, char *buf, size_t len,
                    spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_META_GET, err);
    int rc;

    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        snprintf(buf, len, "%s", v ? v : "");
        done(s);
        return 1;
    }
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot read table meta");
    return 0;
}

static int meta_put(spw_store_t *st, const char *key, const char *value,
                    spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_META_PUT, err);
    int rc;

    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot write table meta");
    return 0;
}

static int id_valid(const char *v)
{
    if (strlen(v) != 12)
        return 0;
    for (; *v; v++)
        if (!((*v >= '0' && *v <= '9') || (*v >= 'a' && *v <= 'f')))
            return 0;
    return 1;
}

int spw_store_daemon_id(spw_store_t *st, char out[13], spw_error_t *err)
{
    unsigned char raw[6];
    char hex[13];
    int rc = meta_get(st, "daemon_id", hex, sizeof(hex), err);

    if (rc < 0)
        return -1;
    if (rc == 1) {
        if (!id_valid(hex))
            return spw_errorf(err, "%s: the stored daemon id '%s' is not 12 hex "
                              "characters", st->path, hex);
        memcpy(out, hex, 13);
        return 0;
    }
    for (size_t got = 0; got < sizeof(raw);) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno != EINTR)
            return spw_errorf(err, "cannot draw a random daemon id: %s",
                              strerror(errno));
        if (n > 0)
            got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    if (meta_put(st, "daemon_id", hex, err) < 0)
        return -1;
    memcpy(out, hex, 13);
    return 0;
}

int spw_store_heartbeat(spw_store_t *st, double now, spw_error_t *err)
{
    char v[48];
    snprintf(v, sizeof(v), "%.6f", now);
    return meta_put(st, "heartbeat", v, err);
}

struct sqlite3 *spw_store_db(spw_store_t *st)
{
    return st->db;
}

/* ---- transactions ------------------------------------------------------- */

int spw_store_begin(spw_store_t *st, spw_error_t *err)
{
    if (st->in_txn)
        return spw_errorf(err, "%s: a transaction is already open",
                          st->path);
    if (exec(st, "BEGIN IMMEDIATE", err) < 0)
        return -1;
    st->in_txn = 1;
    return 0;
}

int spw_store_commit(spw_store_t *st, spw_error_t *err)
{
    if (!st->in_txn)
        return spw_errorf(err, "%s: no transaction is open", st->path);
    if (exec(st, "COMMIT", err) < 0) {
        spw_store_rollback(st);
        return -1;
    }
    st->in_txn = 0;
    return 0;
}

void spw_store_rollback(spw_store_t *st)
{
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_txn = 0;
    /* Inserts may have been undone: take the counter from the file again
     * (if that fails the counter stays ahead, which only skips ids). */
    load_next_seq(st, NULL);
}

/* Every multi-row write runs inside a savepoint: its own transaction when
 * none is open, a nested unit inside spw_store_begin. */
static int sp_begin(spw_store_t *st, spw_error_t *err)
{
    return run(st, S_SAVEPOINT, err);
}

static int sp_end(spw_store_t *st, int ok, spw_error_t *err)
{
    if (ok && run(st, S_RELEASE, err) == 0)
        return 0;
    /* ROLLBACK TO keeps the savepoint open; RELEASE then ends it. */
    run(st, S_ROLLBACK_TO, NULL);
    run(st, S_RELEASE, NULL);
    return -1;
}

/* ---- jobs --------------------------------------------------------------- */

void spw_store_job_clear(spw_store_job_t *job)
{
    if (!job)
        return;
    free(job->team);
    free(job->spec_json);
    free(job->placement);
    free(job->gpus_assigned);
    free(job->reason);
    free(job->launch_token);
    free(job->ran_on);
    memset(job, 0, sizeof(*job));
}

int spw_store_submit_batch(spw_store_t *st, const spw_jobspec_t *const *specs,
                           size_t n, double now,
                           char (*ids_out)[SPW_STORE_ID_LEN], spw_error_t *err)
{
    int64_t first = st->next_seq;
    sqlite3_stmt *s;
    size_t i;
    int rc;

    if (n == 0)
        return 0;
    if (sp_begin(st, err) < 0)
        return -1;
    if (!(s = stmt(st, S_JOB_INSERT, err)))
        goto error;
    for (i = 0; i < n; i++) {
        char id[SPW_STORE_ID_LEN];
        int64_t seq = first + (int64_t)i;
        char *json = spw_jobspec_to_json(specs[i]);
        if (!json) {
            spw_errorf(err, "%s: job %zu of the batch holds text that is "
                       "not valid UTF-8", st->path, i + 1);
            goto error;
        }
        snprintf(id, sizeof(id), "j-%06" PRId64, seq);
        sqlite3_bind_int64(s, 1, seq);
        sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, specs[i]->team ? specs[i]->team : "", -1,
                          SQLITE_STATIC);
        sqlite3_bind_text(s, 4, json, -1, SQLITE_STATIC);
        sqlite3_bind_double(s, 5, now);
        rc = sqlite3_step(s);
        done(s);
        free(json);
        if (rc != SQLITE_DONE) {
            db_error(st, err, "cannot insert a job");
            goto error;
        }
    }
    if (sp_end(st, 1, err) < 0)
        goto restore;
    /* Ids go out only after the commit, so a failure leaves no side
     * effects. */
    for (i = 0; i < n; i++)
        snprintf(ids_out[i], SPW_STORE_ID_LEN, "j-%06" PRId64,
                 first + (int64_t)i);
    st->next_seq = first + (int64_t)n;
    return 0;
error:
    sp_end(st, 0, NULL);
restore:
    st->next_seq = first;
    return -1;
}

int spw_store_job_update(spw_store_t *st, const char *id,
                         const spw_store_job_update_t *u, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_JOB_UPDATE, err);
    int rc;

    if (!s)
        return -1;
    if ((u->set & SPW_JU_STATE) &&
        (unsigned)u->state >= SPW_DJOB_STATE_COUNT) {
        done(s);
        return spw_errorf(err, "%s: job %s: invalid state %d", st->path, id,
                          (int)u->state);
    }
    sqlite3_bind_int(s, 1, (int)u->set);
    sqlite3_bind_text(s, 2, spw_djob_state_name(u->state), -1,
                      SQLITE_STATIC);
    bind_time(s, 3, u->placed_ts);
    bind_time(s, 4, u->start_ts);
    bind_time(s, 5, u->end_ts);
    bind_text(s, 6, u->placement);
    bind_text(s, 7, u->gpus_assigned);
    if (u->pid) {
        sqlite3_bind_int64(s, 8, u->pid);
        sqlite3_bind_int64(s, 9, u->pid_start_ticks);
    }
    if (u->has_exit_code)
        sqlite3_bind_int(s, 10, u->exit_code);
    sqlite3_bind_int(s, 11, u->attempts);
    bind_text(s, 12, u->reason);
    sqlite3_bind_double(s, 13, finite_or_0(u->cost_usd));
    sqlite3_bind_text(s, 14, id, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 15, finite_or_0(u->cloud_usd));
    sqlite3_bind_double(s, 16, finite_or_0(u->reserved_usd));
    bind_time(s, 17, u->charge_ts);
    sqlite3_bind_double(s, 18, finite_or_0(u->egress_usd));
    sqlite3_bind_double(s, 19, finite_or_0(u->egress_gb));
    sqlite3_bind_int64(s, 20, u->held);
    sqlite3_bind_double(s, 21, finite_or_0(u->ledger_usd));
    sqlite3_bind_double(s, 22, finite_or_0(u->ledger_egress_usd));
    sqlite3_bind_double(s, 23, finite_or_0(u->done_s));
    sqlite3_bind_double(s, 24, finite_or_0(u->lost_s));
    sqlite3_bind_double(s, 25, finite_or_0(u->lost_gpu_s));
    sqlite3_bind_double(s, 26, finite_or_0(u->spot_gpu_s));
    sqlite3_bind_double(s, 27, finite_or_0(u->ondemand_gpu_s));
    sqlite3_bind_int64(s, 28, u->restarts);
    sqlite3_bind_int64(s, 29, u->preemptions);
    sqlite3_bind_int64(s, 30, u->failures);
    sqlite3_bind_int64(s, 31, u->last_offer);
    sqlite3_bind_int(s, 32, u->spot != 0);
    bind_text(s, 33, u->launch_token);
    sqlite3_bind_int(s, 34, u->cancel_req != 0);
    sqlite3_bind_double(s, 35, finite_or_0(u->onprem_gpu_h));
    sqlite3_bind_double(s, 36, finite_or_0(u->cloud_gpu_h));
    bind_text(s, 37, u->ran_on);
    sqlite3_bind_double(s, 38, finite_or_0(u->onprem_egress_usd));
    sqlite3_bind_double(s, 39, finite_or_0(u->commit_usd));
    rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot update a job");
    if (sqlite3_changes(st->db) == 0) {
        spw_errorf(err, "unknown job '%.40s'", id);
        errno = ENOENT;
        return -1;
    }
    return 0;
}

/* Reads the current row of s (selected with JOB_COLS) into j, borrowing
 * SQLite's text.  -1 if the row holds an unknown state. */
static int read_job(sqlite3_stmt *s, spw_store_job_t *j)
{
    const char *id = col_text(s, 1), *state = col_text(s, 4);

    memset(j, 0, sizeof(*j));
    j->seq = sqlite3_column_int64(s, 0);
    snprintf(j->id, sizeof(j->id), "%s", id ? id : "");
    j->team = col_text(s, 2);
    j->spec_json = col_text(s, 3);
    if (!state || spw_djob_state_parse(state, &j->state) < 0)
        return -1;
    j->submit_ts = sqlite3_column_double(s, 5);
    j->placed_ts = col_time(s, 6);
    j->start_ts = col_time(s, 7);
    j->end_ts = col_time(s, 8);
    j->placement = col_text(s, 9);
    j->gpus_assigned = col_text(s, 10);
    j->pid = sqlite3_column_int64(s, 11);
    j->pid_start_ticks = sqlite3_column_int64(s, 12);
    j->has_exit_code = sqlite3_column_type(s, 13) != SQLITE_NULL;
    j->exit_code = sqlite3_column_int(s, 13);
    j->attempts = sqlite3_column_int(s, 14);
    j->reason = col_text(s, 15);
    j->cost_usd = sqlite3_column_double(s, 16);
    j->cloud_usd = sqlite3_column_double(s, 17);
    j->reserved_usd = sqlite3_column_double(s, 18);
    j->charge_ts = col_time(s, 19);
    j->egress_usd = sqlite3_column_double(s, 20);
    j->egress_gb = sqlite3_column_double(s, 21);
    j->held = sqlite3_column_int64(s, 22);
    j->ledger_usd = sqlite3_column_double(s, 23);
    j->ledger_egress_usd = sqlite3_column_double(s, 24);
    j->done_s = sqlite3_column_double(s, 25);
    j->lost_s = sqlite3_column_double(s, 26);
    j->lost_gpu_s = sqlite3_column_double(s, 27);
    j->spot_gpu_s = sqlite3_column_double(s, 28);
    j->ondemand_gpu_s = sqlite3_column_double(s, 29);
    j->restarts = sqlite3_column_int64(s, 30);
    j->preemptions = sqlite3_column_int64(s, 31);
    j->failures = sqlite3_column_int64(s, 32);
    j->last_offer = sqlite3_column_int64(s, 33);
    j->spot = sqlite3_column_int(s, 34);
    j->launch_token = col_text(s, 35);
    j->cancel_req = sqlite3_column_int(s, 36);
    j->onprem_gpu_h = sqlite3_column_double(s, 37);
    j->cloud_gpu_h = sqlite3_column_double(s, 38);
    j->ran_on = col_text(s, 39);
    j->onprem_egress_usd = sqlite3_column_double(s, 40);
    j->commit_usd = sqlite3_column_double(s, 41);
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s ? spw_xstrdup(s) : NULL;
}

int spw_store_job_get(spw_store_t *st, const char *id, spw_store_job_t *out,
                      spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_JOB_GET, err);
    spw_store_job_t j;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        done(s);
        spw_errorf(err, "unknown job '%.40s'", id);
        errno = ENOENT;
        return -1;
    }
    if (rc != SQLITE_ROW) {
        db_error(st, err, "cannot read a job");
        done(s);
        return -1;
    }
    if (read_job(s, &j) < 0) {
        done(s);
        return spw_errorf(err, "%s: job %s has an unknown state",
                          st->path, id);
    }
    *out = j;
    out->team = dup_or_null(j.team);
    out->spec_json = dup_or_null(j.spec_json);
    out->placement = dup_or_null(j.placement);
    out->gpus_assigned = dup_or_null(j.gpus_assigned);
    out->reason = dup_or_null(j.reason);
    out->launch_token = dup_or_null(j.launch_token);
    out->ran_on = dup_or_null(j.ran_on);
    done(s);
    return 0;
}

/* Steps s, handing each job row to cb until it asks to stop. */
static int each_job(spw_store_t *st, sqlite3_stmt *s, spw_store_job_f cb,
                    void *arg, spw_error_t *err)
{
    spw_store_job_t j;
    int rc;

    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (read_job(s, &j) < 0) {
            done(s);
            return spw_errorf(err, "%s: job %s has an unknown state",
                              st->path, j.id);
        }
        if (cb(&j, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        db_error(st, err, "cannot list jobs");
        done(s);
        return -1;
    }
    done(s);
    return 0;
}

int spw_store_job_list(spw_store_t *st, const spw_store_filter_t *f,
                       spw_store_job_f cb, void *arg, spw_error_t *err)
{
    static const spw_store_filter_t all = {-1, NULL, 0, 0, 0};
    sqlite3_stmt *s;
    int id;

    if (!f)
        f = &all;
    if (f->state >= SPW_DJOB_STATE_COUNT)
        return spw_errorf(err, "%s: invalid job state %d", st->path,
                          f->state);
    id = f->state >= 0 ? (f->team ? S_JOB_LIST_STATE_TEAM : S_JOB_LIST_STATE)
        : (f->team ? S_JOB_LIST_TEAM : S_JOB_LIST);
    if (!(s = stmt(st, id, err)))
        return -1;
    if (f->state >= 0)
        sqlite3_bind_text(s, 1, spw_djob_state_name(f->state), -1,
                          SQLITE_STATIC);
    if (f->team)
        sqlite3_bind_text(s, 2, f->team, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, f->after_seq);
    sqlite3_bind_int64(s, 4, f->limit ? (int64_t)f->limit : -1);
    sqlite3_bind_int64(s, 5, f->before_seq > 0 ? f->before_seq : INT64_MAX);
    return each_job(st, s, cb, arg, err);
}

int spw_store_job_each_active(spw_store_t *st, spw_store_job_f cb, void *arg,
                              spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_JOB_ACTIVE, err);

    if (!s)
        return -1;
    return each_job(st, s, cb, arg, err);
}

/* ---- instances ---------------------------------------------------------- */

static int inst_write(spw_store_t *st, int id, const spw_store_instance_t *in,
                      spw_error_t *err)
{
    sqlite3_stmt *s;
    int rc;

    if ((unsigned)in->state >= SPW_INST_STATE_COUNT || !in->id)
        return spw_errorf(err, "%s: invalid instance record", st->path);
    if (!(s = stmt(st, id, err)))
        return -1;
    bind_text(s, 1, in->id);
    bind_text(s, 2, in->provider ? in->provider : "");
    bind_text(s, 3, in->offer ? in->offer : "");
    sqlite3_bind_text(s, 4, spw_inst_state_name(in->state), -1,
                      SQLITE_STATIC);
    sqlite3_bind_double(s, 5, in->launched_ts);
    bind_time(s, 6, in->ready_ts);
    bind_time(s, 7, in->released_ts);
    sqlite3_bind_double(s, 8, in->price_usd_per_h);
    bind_text(s, 9, in->job_id);
    bind_text(s, 10, in->addr && *in->addr ? in->addr : NULL);
    if (id == S_INST_INSERT)
        bind_text(s, 11, in->account && *in->account ? in->account : "emulated");
    bind_text(s, 12, in->cloud_id && *in->cloud_id ? in->cloud_id : NULL);
    rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, id == S_INST_INSERT
                        ? "cannot insert an instance"
                        : "cannot update an instance");
    if (id == S_INST_UPDATE && sqlite3_changes(st->db) == 0) {
        spw_errorf(err, "unknown instance '%.40s'", in->id);
        errno = ENOENT;
        return -1;
    }
    return 0;
}

int spw_store_instance_insert(spw_store_t *st, const spw_store_instance_t *in,
                              spw_error_t *err)
{
    return inst_write(st, S_INST_INSERT, in, err);
}

int spw_store_instance_update(spw_store_t *st, const spw_store_instance_t *in,
                              spw_error_t *err)
{
    return inst_write(st, S_INST_UPDATE, in, err);
}

int spw_store_instance_list(spw_store_t *st, int active_only,
                            spw_store_instance_f cb, void *arg,
                            spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, active_only ? S_INST_ACTIVE : S_INST_LIST,
                           err);
    spw_store_instance_t in;
    int rc;

    if (!s)
        return -1;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        memset(&in, 0, sizeof(in));
        in.id = col_text(s, 0);
        in.provider = col_text(s, 1);
        in.offer = col_text(s, 2);
        if (!col_text(s, 3) ||
            spw_inst_state_parse(col_text(s, 3), &in.state) < 0) {
            spw_errorf(err, "%s: instance %s has an unknown state",
                       st->path, in.id ? in.id : "?");
            done(s);
            return -1;
        }
        in.launched_ts = sqlite3_column_double(s, 4);
        in.ready_ts = col_time(s, 5);
        in.released_ts = col_time(s, 6);
        in.price_usd_per_h = sqlite3_column_double(s, 7);
        in.job_id = col_text(s, 8);
        in.addr = col_text(s, 9);
        in.account = col_text(s, 10);
        in.cloud_id = col_text(s, 11);
        if (cb(&in, arg))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        db_error(st, err, "cannot list instances");
        done(s);
        return -1;
    }
    done(s);
    return 0;
}

/* ---- cloud acquisitions -------------------------------------------------- */

int spw_store_acq_put(spw_store_t *st, const spw_store_acq_t *a, spw_error_t *err)
{
    sqlite3_stmt *s;
    if (!a->token || !a->job_id || !a->account || !a->offer)
        return spw_errorf(err, "%s: invalid acquisition record", st->path);
    if (!(s = stmt(st, S_ACQ_INSERT, err)))
        return -1;
    bind_text(s, 1, a->token);
    bind_text(s, 2, a->job_id);
    bind_text(s, 3, a->account);
    bind_text(s, 4, a->offer);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)a->count);
    sqlite3_bind_int(s, 6, a->spot != 0);
    sqlite3_bind_double(s, 7, a->ts);
    int rc = sqlite3_step(s);
    done(s);
    return rc == SQLITE_DONE ? 0 : db_error(st, err, "cannot record an acquisition");
}

int spw_store_acq_delete(spw_store_t *st, const char *token, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_ACQ_DELETE, err);
    if (!s)
        return -1;
    bind_text(s, 1, token);
    int rc = sqlite3_step(s);
    done(s);
    return rc == SQLITE_DONE ? 0 : db_error(st, err, "cannot remove an acquisition");
}

int spw_store_acq_list(spw_store_t *st, spw_store_acq_f cb, void *arg, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_ACQ_LIST, err);
    int rc;
    if (!s)
        return -1;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        spw_store_acq_t a = {.token = col_text(s, 0), .job_id = col_text(s, 1),
                             .account = col_text(s, 2), .offer = col_text(s, 3),
                             .count = (uint32_t)sqlite3_column_int64(s, 4),
                             .spot = sqlite3_column_int(s, 5), .ts = sqlite3_column_double(s, 6)};
        if (cb(&a, arg))
            break;
    }
    int bad = rc != SQLITE_ROW && rc != SQLITE_DONE;
    if (bad)
        db_error(st, err, "cannot list acquisitions");
    done(s);
    return bad ? -1 : 0;
}

/* ---- on-prem nodes ------------------------------------------------------ */

int spw_store_node_set(spw_store_t *st, const char *pool, int64_t node,
                       int down, double down_ts, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, down ? S_NODE_DOWN : S_NODE_UP, err);
    int rc;

    if (!s)
        return -1;
    if (!pool || node < 0)
        return spw_errorf(err, "%s: invalid node record", st->path);
    sqlite3_bind_text(s, 1, pool, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, node);
    if (down) {
        sqlite3_bind_double(s, 3, finite_or_0(down_ts));
        sqlite3_bind_int(s, 4, down == 2);
    }
    rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot record a node's state");
    return 0;
}

/* A list call's callback and its argument, for the row functions of
 * list_rows (fn is cast back to the list's own callback type). */
typedef struct rowcb {
    void (*fn)(void);
    void *arg;
} rowcb_t;

/* Steps statement id to its end, calling row(s, &cb) for each row until
 * one returns nonzero, then resets it.  0, or -1 with err ("cannot
 * WHAT"). */
static int list_rows(spw_store_t *st, int id, int (*row)(sqlite3_stmt *, const rowcb_t *),
                     rowcb_t cb, const char *what, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, id, err);
    int rc;

    if (!s)
        return -1;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        if (row(s, &cb))
            break;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        db_error(st, err, what);
        done(s);
        return -1;
    }
    done(s);
    return 0;
}

static int node_row(sqlite3_stmt *s, const rowcb_t *c)
{
    spw_store_node_t n = {
        .pool = col_text(s, 0),
        .node = sqlite3_column_int64(s, 1),
        .down_ts = sqlite3_column_double(s, 2),
        .by_backend = sqlite3_column_int(s, 3),
    };
    return n.pool ? ((spw_store_node_f)c->fn)(&n, c->arg) : 0;
}

int spw_store_node_list(spw_store_t *st, spw_store_node_f cb, void *arg,
                        spw_error_t *err)
{
    return list_rows(st, S_NODE_LIST, node_row, (rowcb_t){(void (*)(void))cb, arg},
                     "cannot list nodes", err);
}

/* ---- fences ------------------------------------------------------------- */

int spw_store_fence_set(spw_store_t *st, const char *pool, const char *host,
                        const char *what, int on, double ts, spw_error_t *err)
{
    if (!pool || !host || !what)
        return spw_errorf(err, "%s: invalid fence record", st->path);
    sqlite3_stmt *s = stmt(st, on ? S_FENCE_ADD : S_FENCE_DEL, err);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, pool, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, host, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, what, -1, SQLITE_STATIC);
    if (on)
        sqlite3_bind_double(s, 4, finite_or_0(ts));
    int rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot record a fence");
    return 0;
}

/* pool, host, what (none NULL), then ts. */
static int fence_row(sqlite3_stmt *s, const rowcb_t *c)
{
    const char *col[3];
    for (int i = 0; i < 3; i++)
        if (!(col[i] = col_text(s, i)))
            return 0;
    spw_store_fence_t f = {col[0], col[1], col[2], sqlite3_column_double(s, 3)};
    return ((spw_store_fence_f)c->fn)(&f, c->arg);
}

int spw_store_fence_list(spw_store_t *st, spw_store_fence_f cb, void *arg,
                         spw_error_t *err)
{
    return list_rows(st, S_FENCE_LIST, fence_row, (rowcb_t){(void (*)(void))cb, arg},
                     "cannot list fences", err);
}

/* ---- decisions ---------------------------------------------------------- */

int spw_store_decision_insert(spw_store_t *st, const char *job_id, double ts,
                              const char *json, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_DEC_INSERT, err);
    int rc;

    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, job_id, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 2, ts);
    sqlite3_bind_text(s, 3, json, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot insert a decision");
    return 0;
}

int spw_store_decision_latest(spw_store_t *st, const char *job_id,
                              char **json_out, double *ts_out,
                              spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_DEC_LATEST, err);
    int rc;

    *json_out = NULL;
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, job_id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *json = col_text(s, 0);
        *json_out = spw_xstrdup(json ? json : "");
        if (ts_out)
            *ts_out = sqlite3_column_double(s, 1);
        done(s);
        return 0;
    }
    if (rc == SQLITE_DONE) {
        done(s);
        spw_errorf(err, "no decision recorded for job '%.40s'", job_id);
        errno = ENOENT;
        return -1;
    }
    db_error(st, err, "cannot read a decision");
    done(s);
    return -1;
}

/* ---- the dashboard's series --------------------------------------------- */

int spw_store_series_put(spw_store_t *st, int tier, double ts, const char *json,
                         double keep_from_ts, spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_SERIES_PUT, err);
    if (!s)
        return -1;
    sqlite3_bind_int(s, 1, tier);
    sqlite3_bind_double(s, 2, finite_or_0(ts));
    sqlite3_bind_text(s, 3, json, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot record a dashboard sample");
    if (!(s = stmt(st, S_SERIES_PRUNE, err)))
        return -1;
    sqlite3_bind_int(s, 1, tier);
    sqlite3_bind_double(s, 2, finite_or_0(keep_from_ts));
    rc = sqlite3_step(s);
    done(s);
    if (rc != SQLITE_DONE)
        return db_error(st, err, "cannot prune the dashboard's series");
    return 0;
}

/* ts, then json (NULL rows are skipped). */
static int series_row(sqlite3_stmt *s, const rowcb_t *c)
{
    const char *json = col_text(s, 1);
    return json ? ((spw_store_series_f)c->fn)(sqlite3_column_double(s, 0), json, c->arg) : 0;
}

int spw_store_series_list(spw_store_t *st, int tier, spw_store_series_f cb, void *arg,
                          spw_error_t *err)
{
    sqlite3_stmt *s = stmt(st, S_SERIES_LIST, err);
    if (!s)
        return -1;
    sqlite3_bind_int(s, 1, tier);  /* list_rows takes it as bound */
    return list_rows(st, S_SERIES_LIST, series_row, (rowcb_t){(void (*)(void))cb, arg},
                     "cannot read the dashboard's series", err);
}
