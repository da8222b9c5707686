/* test_store.c: daemon/store against real SQLite files in a temporary
 * directory: each call's round trip, migrations, refusing foreign and newer
 * databases, and crash safety under SIGKILL at random moments. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "daemon/jobspec.h"
#include "daemon/store.h"
#include "tap.h"
#include "util/rng.h"

static char dir[64];

static const char *path_in(const char *name)
{
    static char buf[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
    return buf[k];
}

static int spec(const char *yaml, spw_jobspec_t *s)
{
    spw_error_t err;
    if (spw_jobspec_parse("t", yaml, strlen(yaml), s, &err) < 0) {
        diag("spec: %s", err.text);
        return -1;
    }
    return 0;
}

/* Runs one SQL statement on path with a separate connection and returns the
 * first column of the first row as text (static), or "" / "ERR: ...". */
static const char *raw(const char *path, const char *sql)
{
    static char out[256];
    sqlite3 *db;
    sqlite3_stmt *s;

    out[0] = '\0';
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        snprintf(out, sizeof(out), "ERR: open");
        sqlite3_close(db);
        return out;
    }
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        snprintf(out, sizeof(out), "ERR: %s", sqlite3_errmsg(db));
    } else {
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW && sqlite3_column_text(s, 0))
            snprintf(out, sizeof(out), "%s", sqlite3_column_text(s, 0));
        else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            snprintf(out, sizeof(out), "ERR: %s", sqlite3_errmsg(db));
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return out;
}

/* ---- list callbacks ----------------------------------------------------- */

typedef struct collect {
    int n;               /* jobs seen */
    char ids[16][24];    /* the first 16 ids */
    int stop_after;      /* stop after this many (0 = never) */
} collect_t;

static int collect_cb(const spw_store_job_t *j, void *arg)
{
    collect_t *c = arg;
    if (c->n < 16)
        snprintf(c->ids[c->n], sizeof(c->ids[0]), "%s", j->id);
    c->n++;
    return c->stop_after && c->n >= c->stop_after;
}

typedef struct icollect {
    int n;               /* instances seen */
    char ids[8][32];     /* their ids */
    int busy;            /* how many had a job */
    char addrs[8][64];   /* their addresses ("" = none) */
    char accts[8][32];   /* their accounts */
    char cids[8][64];    /* their cloud ids ("" = none) */
} icollect_t;

static int inst_cb(const spw_store_instance_t *in, void *arg)
{
    icollect_t *c = arg;
    if (c->n < 8)
        snprintf(c->ids[c->n], sizeof(c->ids[0]), "%s", in->id);
    if (c->n < 8)
        snprintf(c->addrs[c->n], sizeof(c->addrs[0]), "%s", in->addr ? in->addr : "");
    if (c->n < 8) {
        snprintf(c->accts[c->n], sizeof(c->accts[0]), "%s", in->account ? in->account : "");
        snprintf(c->cids[c->n], sizeof(c->cids[0]), "%s", in->cloud_id ? in->cloud_id : "");
    }
    c->n++;
    c->busy += in->job_id != NULL;
    return 0;
}

static int list_before(spw_store_t *st, int state, const char *team, int64_t after,
                       int64_t before, size_t limit, collect_t *c)
{
    spw_store_filter_t f = {state, team, after, limit, before};
    spw_error_t err;
    memset(c, 0, sizeof(*c));
    if (spw_store_job_list(st, &f, collect_cb, c, &err) < 0) {
        diag("list: %s", err.text);
        return -1;
    }
    return c->n;
}

static int list(spw_store_t *st, int state, const char *team, int64_t after, size_t limit,
                collect_t *c)
{
    return list_before(st, state, team, after, 0, limit, c);
}

/* ---- round trips -------------------------------------------------------- */

static void test_jobs(void)
{
    spw_store_t *st;
    spw_error_t err;
    spw_jobspec_t a, b, c, back;
    const spw_jobspec_t *specs[3] = {&a, &b, &c};
    char ids[3][SPW_STORE_ID_LEN];
    spw_store_job_t j;
    spw_store_job_update_t u;
    collect_t col;
    const char *db = path_in("jobs.db");

    if (spec("name: a\nteam: vision\nrun: [sleep, '1']\ngpus: 2\n", &a) ||
        spec("team: nlp\nrun: echo hi\ngpus: A100:1\nest_runtime: 1h\n",
             &b) ||
        spec("run: [true]\ngpus: 1\n", &c))
        return;

    st = spw_store_open(db, NULL, &err);
    if (!ok(st != NULL, "open a new database")) {
        diag("%s", err.text);
        return;
    }
    is(spw_store_schema_version(st), SPW_STORE_SCHEMA_VERSION,
       "schema version after migration");
    is_str(raw(db, "PRAGMA journal_mode"), "wal", "WAL mode");
    char want_v[16];
    snprintf(want_v, sizeof(want_v), "%d", SPW_STORE_SCHEMA_VERSION);
    is_str(raw(db, "SELECT version FROM schema_version"), want_v,
           "schema_version table holds the latest version");

    is(spw_store_submit_batch(st, specs, 0, 100.0, ids, &err), 0,
       "an empty batch is fine");
    is(spw_store_submit_batch(st, specs, 3, 100.5, ids, &err), 0,
       "submit a batch of 3");
    is_str(ids[0], "j-000001", "first id");
    is_str(ids[2], "j-000003", "third id");

    if (ok(spw_store_job_get(st, "j-000002", &j, &err) == 0, "get j-000002")) {
        is(j.seq, 2, "seq");
        is_str(j.id, "j-000002", "id");
        is_str(j.team, "nlp", "team");
        is(j.state, SPW_DJOB_QUEUED, "queued");
        is_double(j.submit_ts, 100.5, 0, "submit_ts");
        ok(isnan(j.placed_ts) && isnan(j.start_ts) && isnan(j.end_ts),
           "times unset");
        ok(j.placement == NULL && j.gpus_assigned == NULL && j.reason == NULL,
           "strings unset");
        ok(j.pid == 0 && !j.has_exit_code && j.attempts == 0 &&
           j.cost_usd == 0, "numbers unset");
        ok(spw_jobspec_parse("db", j.spec_json, strlen(j.spec_json), &back,
                             &err) == 0 && spw_jobspec_equal(&back, &b),
           "spec_json parses back to the submitted spec");
        spw_jobspec_free(&back);
        spw_store_job_clear(&j);
    }
    if (ok(spw_store_job_get(st, "j-000003", &j, &err) == 0, "get j-000003")) {
        is_str(j.team, "", "no team is stored as ''");
        spw_store_job_clear(&j);
    }
    errno = 0;
    is(spw_store_job_get(st, "j-999999", &j, &err), -1, "unknown id");
    is(errno, ENOENT, "ENOENT for an unknown id");
    is_str(err.text, "unknown job 'j-999999'", "unknown job message");
    ok(j.team == NULL, "output zeroed");

    memset(&u, 0, sizeof(u));
    u.set = SPW_JU_STATE | SPW_JU_PLACED_TS | SPW_JU_START_TS |
        SPW_JU_PLACEMENT | SPW_JU_GPUS | SPW_JU_PID | SPW_JU_ATTEMPTS |
        SPW_JU_REASON | SPW_JU_COST;
    u.state = SPW_DJOB_RUNNING;
    u.placed_ts = 101;
    u.start_ts = 101.25;
    u.placement = "local/node0";
    u.ran_on = "emu-i-1,emu-i-2";
    u.gpus_assigned = "0,1";
    u.pid = 4242;
    u.pid_start_ticks = 987654321;
    u.attempts = 1;
    u.reason = "fits on-prem";
    u.cost_usd = 0.5;
    u.onprem_gpu_h = 0.75;
    u.cloud_gpu_h = 1.25;
    is(spw_store_job_update(st, "j-000001", &u, &err), 0, "update to running");
    if (ok(spw_store_job_get(st, "j-000001", &j, &err) == 0, "get it")) {
        is(j.state, SPW_DJOB_RUNNING, "state running");
        is_double(j.placed_ts, 101, 0, "placed_ts");
        is_double(j.start_ts, 101.25, 0, "start_ts");
        ok(isnan(j.end_ts), "end_ts untouched");
        is_str(j.placement, "local/node0", "placement");
        is_str(j.ran_on, "emu-i-1,emu-i-2", "ran_on with the placement (schema 8)");
        is_str(j.gpus_assigned, "0,1", "gpus_assigned");
        is(j.pid, 4242, "pid");
        is(j.pid_start_ticks, 987654321, "pid_start_ticks");
        is(j.attempts, 1, "attempts");
        is_str(j.reason, "fits on-prem", "reason");
        is_double(j.cost_usd, 0.5, 0, "cost");
        ok(j.onprem_gpu_h == 0.75 && j.cloud_gpu_h == 1.25, "GPU-hours with the cost (schema 6)");
        ok(!j.has_exit_code, "no exit code yet");
        spw_store_job_clear(&j);
    }
    memset(&u, 0, sizeof(u));
    u.set = SPW_JU_STATE | SPW_JU_END_TS | SPW_JU_PID | SPW_JU_EXIT |
        SPW_JU_GPUS;
    u.state = SPW_DJOB_SUCCEEDED;
    u.end_ts = 160;
    u.has_exit_code = 1;
    u.exit_code = 0;
    is(spw_store_job_update(st, "j-000001", &u, &err), 0, "update to done");
    if (ok(spw_store_job_get(st, "j-000001", &j, &err) == 0, "get it")) {
        is(j.state, SPW_DJOB_SUCCEEDED, "succeeded");
        is_double(j.end_ts, 160, 0, "end_ts");
        ok(j.pid == 0 && j.pid_start_ticks == 0, "pid cleared");
        ok(j.has_exit_code && j.exit_code == 0, "exit code 0 recorded");
        ok(j.gpus_assigned == NULL, "gpus cleared");
        is_str(j.placement, "local/node0", "placement kept (not in set)");
        is_str(j.ran_on, "emu-i-1,emu-i-2", "ran_on kept with it");
        is_double(j.placed_ts, 101, 0, "placed_ts kept");
        spw_store_job_clear(&j);
    }
    memset(&u, 0, sizeof(u));
    u.set = SPW_JU_STATE;
    u.state = SPW_DJOB_RUNNING;
    is(spw_store_job_update(st, "j-000002", &u, &err), 0, "j2 running");
    errno = 0;
    is(spw_store_job_update(st, "nope", &u, &err), -1, "update unknown id");
    is(errno, ENOENT, "ENOENT");
    u.state = (spw_djob_state_t)77;
    is(spw_store_job_update(st, "j-000002", &u, &err), -1,
       "an invalid state is refused");

    is(list(st, -1, NULL, 0, 0, &col), 3, "list all");
    is_str(col.ids[0], "j-000001", "oldest first");
    is(list(st, SPW_DJOB_RUNNING, NULL, 0, 0, &col), 1, "list running");
    is_str(col.ids[0], "j-000002", "the running one");
    is(list(st, -1, "vision", 0, 0, &col), 1, "list team vision");
    is(list(st, SPW_DJOB_QUEUED, "nlp", 0, 0, &col), 0,
       "state and team filters combine");
    is(list(st, -1, NULL, 1, 0, &col), 2, "after_seq pages");
    is_str(col.ids[0], "j-000002", "page starts after seq 1");
    is(list(st, -1, NULL, 0, 2, &col), 2, "limit");
    is(list_before(st, -1, NULL, 0, 3, 0, &col), 2, "before_seq bounds the list (seqs 1, 2)");
    is(list_before(st, -1, NULL, 1, 3, 0, &col), 1, "... with after_seq too (seq 2)");
    memset(&col, 0, sizeof(col));
    col.stop_after = 1;
    is(spw_store_job_list(st, NULL, collect_cb, &col, &err), 0,
       "NULL filter lists all");
    is(col.n, 1, "the callback can stop early");
    {
        spw_store_filter_t f = {SPW_DJOB_STATE_COUNT, NULL, 0, 0, 0};
        is(spw_store_job_list(st, &f, collect_cb, &col, &err), -1,
           "invalid state filter");
    }
    memset(&col, 0, sizeof(col));
    is(spw_store_job_each_active(st, collect_cb, &col, &err), 0,
       "each active");
    is(col.n, 2, "two active jobs (running, queued)");
    is_str(col.ids[0], "j-000002", "oldest active first");
    is_str(col.ids[1], "j-000003", "then the queued one");

    /* Explicit transactions group writes; rollback undoes them. */
    is(spw_store_begin(st, &err), 0, "begin");
    is(spw_store_begin(st, &err), -1, "transactions do not nest");
    is(spw_store_submit_batch(st, specs, 2, 200, ids, &err), 0,
       "submit inside a transaction");
    is_str(ids[0], "j-000004", "next id");
    spw_store_rollback(st);
    is(list(st, -1, NULL, 0, 0, &col), 3, "rollback undid the submit");
    is(spw_store_commit(st, &err), -1, "commit with none open fails");
    is(spw_store_begin(st, &err), 0, "begin again");
    is(spw_store_submit_batch(st, specs, 2, 200, ids, &err), 0, "submit");
    u.set = SPW_JU_STATE;
    u.state = SPW_DJOB_CANCELLED;
    is(spw_store_job_update(st, ids[0], &u, &err), 0, "update in the "
       "same transaction");
    is(spw_store_commit(st, &err), 0, "commit");
    is_str(ids[0], "j-000004", "ids continue after the rollback");
    is(list(st, -1, NULL, 0, 0, &col), 5, "five jobs");
    is(list(st, SPW_DJOB_CANCELLED, NULL, 0, 0, &col), 1, "one cancelled");
    u.set = SPW_JU_STATE;
    u.state = SPW_DJOB_PLACED;
    is(spw_store_job_update(st, "j-000003", &u, &err), 0, "j3 placed");
    memset(&col, 0, sizeof(col));
    is(spw_store_job_each_active(st, collect_cb, &col, &err), 0,
       "each active again");
    is(col.n, 3, "running, placed and queued jobs are active");
    is_str(col.ids[1], "j-000003", "placed is active");
    is_str(col.ids[2], "j-000005", "queued is active; cancelled is not");

    spw_store_close(st);

    /* Reopen: everything is there and ids continue. */
    st = spw_store_open(db, NULL, &err);
    if (ok(st != NULL, "reopen")) {
        is(list(st, -1, NULL, 0, 0, &col), 5, "five jobs after reopen");
        is(spw_store_submit_batch(st, specs, 1, 300, ids, &err), 0,
           "submit after reopen");
        is_str(ids[0], "j-000006", "ids continue after reopen");
        spw_store_close(st);
    } else {
        diag("%s", err.text);
    }
    /* A deleted newest job does not give its id to the next one. */
    is_str(raw(db, "DELETE FROM jobs WHERE seq = 6"), "", "delete j-000006");
    st = spw_store_open(db, NULL, &err);
    if (ok(st != NULL, "reopen after delete")) {
        is(spw_store_submit_batch(st, specs, 1, 300, ids, &err), 0,
           "submit");
        is_str(ids[0], "j-000007", "ids are never reused");
        spw_store_close(st);
    }
    spw_store_close(NULL);
    spw_jobspec_free(&a);
    spw_jobspec_free(&b);
    spw_jobspec_free(&c);
}

static void test_instances_decisions(void)
{
    spw_store_t *st;
    spw_error_t err;
    spw_store_instance_t in = {0};
    icollect_t ic;
    char *json;
    double ts;
    spw_store_opts_t opts = {SPW_STORE_SYNC_FULL, 1000};

    st = spw_store_open(path_in("inst.db"), &opts, &err);
    if (!ok(st != NULL, "open with synchronous=FULL")) {
        diag("%s", err.text);
        return;
    }
    in.id = "emu-1";
    in.provider = "emulated";
    in.offer = "aws/us-east-1/p4d.24xlarge";
    in.state = SPW_INST_BOOTING;
    in.launched_ts = 10;
    in.ready_ts = NAN;
    in.released_ts = NAN;
    in.price_usd_per_h = 32.77;
    is(spw_store_instance_insert(st, &in, &err), 0, "insert instance 1");
    is(spw_store_instance_insert(st, &in, &err), -1,
       "a duplicate id is refused");
    in.id = "emu-2";
    in.launched_ts = 11;
    in.account = "prod";
    in.cloud_id = "i-0abc";
    is(spw_store_instance_insert(st, &in, &err), 0, "insert instance 2");
    in.account = NULL;
    in.cloud_id = NULL;

    in.id = "emu-1";
    in.state = SPW_INST_READY;
    in.ready_ts = 70;
    in.job_id = "j-000001";
    in.addr = "10.1.2.3";
    is(spw_store_instance_update(st, &in, &err), 0, "instance 1 ready, busy, a host");
    in.addr = NULL;
    in.id = "emu-2";
    in.state = SPW_INST_RELEASED;
    in.ready_ts = 71;
    in.released_ts = 90;
    in.job_id = NULL;
    is(spw_store_instance_update(st, &in, &err), 0, "release instance 2");
    in.id = "emu-9";
    errno = 0;
    is(spw_store_instance_update(st, &in, &err), -1, "unknown instance");
    is(errno, ENOENT, "ENOENT");

    memset(&ic, 0, sizeof(ic));
    is(spw_store_instance_list(st, 0, inst_cb, &ic, &err), 0, "list all");
    is(ic.n, 2, "two instances");
    is_str(ic.ids[0], "emu-1", "oldest launch first");
    is(ic.busy, 1, "one busy");
    is_str(ic.accts[0], "emulated", "no account given: the default (schema 7)");
    is_str(ic.accts[1], "prod", "an account kept (schema 7)");
    is_str(ic.cids[1], "i-0abc", "a cloud id kept (schema 7)");

    /* Acquisition intents (schema 7): put, replaced by token, listed,
     * removed. */
    spw_store_acq_t aq = {.token = "d.j-000003.1000", .job_id = "j-000003", .account = "prod",
                          .offer = "aws/us-east-1/p3.2xlarge", .count = 2, .spot = 1, .ts = 5};
    is(spw_store_acq_put(st, &aq, &err), 0, "record an acquisition intent");
    aq.count = 3;
    is(spw_store_acq_put(st, &aq, &err), 0, "the same token again replaces it");
    is_str(raw(path_in("inst.db"), "SELECT count || ',' || spot || ',' || account FROM "
               "acquisitions"), "3,1,prod", "one intent, as last written");
    is(spw_store_acq_delete(st, aq.token, &err), 0, "remove it");
    is_str(raw(path_in("inst.db"), "SELECT count(*) FROM acquisitions"), "0", "none left");
    memset(&ic, 0, sizeof(ic));
    is(spw_store_instance_list(st, 1, inst_cb, &ic, &err), 0, "list active");
    is(ic.n, 1, "one not released");
    is_str(ic.ids[0], "emu-1", "the ready one");
    is_str(ic.addrs[0], "10.1.2.3", "with its address (schema 5)");

    is(spw_store_decision_insert(st, "j-000001", 5, "{\"pick\":\"wait\"}",
                                 &err), 0, "insert decision");
    is(spw_store_decision_insert(st, "j-000001", 9, "{\"pick\":\"cloud\"}",
                                 &err), 0, "insert a later decision");
    is(spw_store_decision_insert(st, "j-000002", 6, "{\"pick\":\"onprem\"}",
                                 &err), 0, "another job's decision");
    if (ok(spw_store_decision_latest(st, "j-000001", &json, &ts, &err) == 0,
           "latest decision")) {
        is_str(json, "{\"pick\":\"cloud\"}", "the latest one");
        is_double(ts, 9, 0, "its time");
        free(json);
    }
    errno = 0;
    is(spw_store_decision_latest(st, "j-000003", &json, NULL, &err), -1,
       "no decision");
    is(errno, ENOENT, "ENOENT");
    ok(json == NULL, "json_out NULL");
    spw_store_close(st);

    /* Instance state round trip after reopen. */
    st = spw_store_open(path_in("inst.db"), NULL, &err);
    if (ok(st != NULL, "reopen")) {
        memset(&ic, 0, sizeof(ic));
        spw_store_instance_list(st, 1, inst_cb, &ic, &err);
        is(ic.n, 1, "active instance survives reopen");
        is_str(ic.addrs[0], "10.1.2.3", "its address too");
        spw_store_close(st);
    }
}

static void test_state_names(void)
{
    spw_djob_state_t s;
    spw_inst_state_t i;
    int k;

    for (k = 0; k < SPW_DJOB_STATE_COUNT; k++)
        ok(spw_djob_state_parse(spw_djob_state_name(k), &s) == 0 &&
           (int)s == k, "job state %s round trips",
           spw_djob_state_name(k));
    is(spw_djob_state_parse("bogus", &s), -1, "unknown job state");
    is_str(spw_djob_state_name(SPW_DJOB_STATE_COUNT), "?", "out of range");
    ok(!spw_djob_state_terminal(SPW_DJOB_QUEUED) &&
       !spw_djob_state_terminal(SPW_DJOB_PLACED) &&
       !spw_djob_state_terminal(SPW_DJOB_RUNNING) &&
       spw_djob_state_terminal(SPW_DJOB_SUCCEEDED) &&
       spw_djob_state_terminal(SPW_DJOB_FAILED) &&
       spw_djob_state_terminal(SPW_DJOB_CANCELLED) &&
       spw_djob_state_terminal(SPW_DJOB_REJECTED),
       "terminal states (matching the store's active query)");
    ok(spw_inst_state_parse("released", &i) == 0 && i == SPW_INST_RELEASED,
       "instance state parse");
    is(spw_inst_state_parse("gone", &i), -1, "unknown instance state");
}

/* ---- money: reservations and the ledger's share -------------------------- */

static void test_money(void)
{
    spw_store_t *st;
    spw_error_t err;
    spw_jobspec_t a;
    const spw_jobspec_t *specs[1] = {&a};
    char ids[1][SPW_STORE_ID_LEN];
    spw_store_job_t j;
    spw_store_job_update_t u;
    const char *db = path_in("money.db");

    if (spec("team: ml\nrun: [true]\ngpus: 1\n", &a))
        return;
    st = spw_store_open(db, NULL, &err);
    if (!ok(st != NULL, "open a database for money")) {
        diag("%s", err.text);
        spw_jobspec_free(&a);
        return;
    }
    is(spw_store_submit_batch(st, specs, 1, 50, ids, &err), 0, "submit one");
    if (ok(spw_store_job_get(st, ids[0], &j, &err) == 0, "get it")) {
        ok(j.cloud_usd == 0 && j.reserved_usd == 0 && isnan(j.charge_ts) &&
           j.egress_usd == 0 && j.egress_gb == 0 && j.held == 0 &&
           j.ledger_usd == 0 && j.ledger_egress_usd == 0,
           "a new job holds no money and has no charge time");
        spw_store_job_clear(&j);
    }
    /* The placement and its reservation go in one transaction. */
    is(spw_store_begin(st, &err), 0, "begin the turn");
    memset(&u, 0, sizeof(u));
    u.set = SPW_JU_STATE | SPW_JU_PLACEMENT | SPW_JU_MONEY;
    u.state = SPW_DJOB_PLACED;
    u.placement = "cloud:flat/any";
    u.reserved_usd = 12.5;
    u.charge_ts = 51;
    u.egress_usd = 0.9;
    u.egress_gb = 10;
    u.held = 3;
    u.ledger_usd = 1.25;
    u.ledger_egress_usd = 0.4;
    is(spw_store_job_update(st, ids[0], &u, &err), 0, "write the placement");
    spw_store_rollback(st);
    if (ok(spw_store_job_get(st, ids[0], &j, &err) == 0, "get it after a rollback")) {
        ok(j.state == SPW_DJOB_QUEUED && j.reserved_usd == 0,
           "a rolled-back turn leaves neither placement nor reservation");
        spw_store_job_clear(&j);
    }
    is(spw_store_begin(st, &err), 0, "begin again");
    is(spw_store_job_update(st, ids[0], &u, &err), 0, "write it again");
    is(spw_store_commit(st, &err), 0, "commit");
    if (ok(spw_store_job_get(st, ids[0], &j, &err) == 0, "get it")) {
        is_double(j.reserved_usd, 12.5, 0, "reserved_usd");
        is_double(j.charge_ts, 51, 0, "charge_ts");
        is_double(j.egress_usd, 0.9, 0, "egress_usd");
        is_double(j.egress_gb, 10, 0, "egress_gb");
        is(j.held, 3, "held");
        is_double(j.ledger_usd, 1.25, 0, "ledger_usd");
        is_double(j.ledger_egress_usd, 0.4, 0, "ledger_egress_usd");
        spw_store_job_clear(&j);
    }
    memset(&u, 0, sizeof(u));
    u.set = SPW_JU_STATE | SPW_JU_COST;
    u.state = SPW_DJOB_REJECTED;
    u.cost_usd = 3;
    u.cloud_usd = 2;
    is(spw_store_job_update(st, ids[0], &u, &err), 0, "costs and a rejected state");
    if (ok(spw_store_job_get(st, ids[0], &j, &err) == 0, "get it")) {
        is(j.state, SPW_DJOB_REJECTED, "rejected is stored");
        is_double(j.cost_usd, 3, 0, "cost_usd");
        is_double(j.cloud_usd, 2, 0, "cloud_usd with it");
        is_double(j.reserved_usd, 12.5, 0, "money fields untouched without SPW_JU_MONEY");
        spw_store_job_clear(&j);
    }
    spw_store_close(st);
    spw_jobspec_free(&a);

    /* A schema-1 database (written before budgets) migrates in place: the
     * cloud spend of a job counts as settled in the period of its
     * placement. */
    db = path_in("v1.db");
    is_str(raw(db, "CREATE TABLE schema_version (version INTEGER NOT NULL)"), "",
           "a schema-1 database by hand");
    raw(db, "INSERT INTO schema_version VALUES (1)");
    raw(db, "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL "
            "UNIQUE, team TEXT NOT NULL, spec_json TEXT NOT NULL, state TEXT NOT NULL, "
            "submit_ts REAL NOT NULL, placed_ts REAL, start_ts REAL, end_ts REAL, "
            "placement TEXT, gpus_assigned TEXT, pid INTEGER, pid_start_ticks INTEGER, "
            "exit_code INTEGER, attempts INTEGER NOT NULL DEFAULT 0, reason TEXT, "
            "cost_usd REAL NOT NULL DEFAULT 0)");
    raw(db, "CREATE TABLE instances (id TEXT PRIMARY KEY, provider TEXT NOT NULL, offer TEXT "
            "NOT NULL, state TEXT NOT NULL, launched_ts REAL NOT NULL, ready_ts REAL, "
            "released_ts REAL, price_usd_per_h REAL NOT NULL, job_id TEXT)");
    raw(db, "CREATE TABLE decisions (seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, ts REAL "
            "NOT NULL, json TEXT NOT NULL)");
    raw(db, "INSERT INTO jobs (seq, id, team, spec_json, state, submit_ts, placed_ts, "
            "placement, cost_usd) VALUES (1, 'j-000001', 'ml', '{\"run\":[\"true\"],"
            "\"gpus\":1}', 'succeeded', 10, 11, 'cloud:flat/any', 4.5)");
    raw(db, "INSERT INTO jobs (seq, id, team, spec_json, state, submit_ts, placed_ts, "
            "placement, cost_usd) VALUES (2, 'j-000002', 'ml', '{\"run\":[\"true\"],"
            "\"gpus\":1}', 'succeeded', 10, 12, 'onprem:local/0', 1.5)");
    st = spw_store_open(db, NULL, &err);
    if (!ok(st != NULL, "a schema-1 database opens")) {
        diag("%s", err.text);
        return;
    }
    is(spw_store_schema_version(st), SPW_STORE_SCHEMA_VERSION, "it is migrated to the latest version");
    if (ok(spw_store_job_get(st, "j-000001", &j, &err) == 0, "its cloud job")) {
        ok(j.cloud_usd == 4.5 && j.ledger_usd == 4.5 && j.charge_ts == 11 &&
           j.reserved_usd == 0, "cloud spend settled at its placement");
        spw_store_job_clear(&j);
    }
    if (ok(spw_store_job_get(st, "j-000002", &j, &err) == 0, "its on-prem job")) {
        ok(j.cloud_usd == 0 && j.ledger_usd == 0 && j.cost_usd == 1.5 && j.charge_ts == 12,
           "on-prem spend stays out of the cloud columns");
        ok(j.done_s == 0 && j.restarts == 0 && j.preemptions == 0 && j.failures == 0 &&
           j.last_offer == -1 && j.spot == 0, "schema 3 columns take their defaults");
        spw_store_job_clear(&j);
    }
    spw_store_close(st);
}

/* ---- interruptions and nodes (schema 3) ---------------------------------- */

static int count_node(const spw_store_node_t *n, void *arg)
{
    char *buf = arg;
    size_t used = strlen(buf);
    snprintf(buf + used, 256 - used, "%s%s/%lld@%g%s", used ? " " : "", n->pool,
             (long long)n->node, n->down_ts, n->by_backend ? "(backend)" : "");
    return 0;
}

static void test_progress_and_nodes(void)
{
    const char *db = path_in("progress.db");
    spw_error_t err;
    spw_store_t *st = spw_store_open(db, NULL, &err);
    if (!ok(st != NULL, "open a store for interruptions")) {
        diag("%s", err.text);
        return;
    }
    spw_jobspec_t a;
    spw_jobspec_parse("t.yaml", "run: [x]\ngpus: 1\n", strlen("run: [x]\ngpus: 1\n"), &a, &err);
    const spw_jobspec_t *specs[] = {&a};
    char ids[1][SPW_STORE_ID_LEN];
    ok(spw_store_submit_batch(st, specs, 1, 100, ids, &err) == 0, "one job");
    spw_store_job_update_t u = {
        .set = SPW_JU_PROGRESS, .done_s = 120.5, .lost_s = 30, .lost_gpu_s = 60,
        .spot_gpu_s = 400, .ondemand_gpu_s = 50, .restarts = 2, .preemptions = 1,
        .failures = 1, .last_offer = 3, .spot = 1, .attempts = 99,
    };
    ok(spw_store_job_update(st, ids[0], &u, &err) == 0, "write its progress");
    spw_store_job_t j;
    if (ok(spw_store_job_get(st, ids[0], &j, &err) == 0, "read it back")) {
        ok(j.done_s == 120.5 && j.lost_s == 30 && j.lost_gpu_s == 60 && j.spot_gpu_s == 400 &&
           j.ondemand_gpu_s == 50 && j.restarts == 2 && j.preemptions == 1 && j.failures == 1 &&
           j.last_offer == 3 && j.spot == 1, "every progress field round-trips");
        is(j.attempts, 0, "attempts untouched without SPW_JU_ATTEMPTS");
        spw_store_job_clear(&j);
    }
    u.set = SPW_JU_ATTEMPTS;
    u.done_s = 0;
    spw_store_job_update(st, ids[0], &u, &err);
    if (spw_store_job_get(st, ids[0], &j, &err) == 0) {
        ok(j.done_s == 120.5 && j.attempts == 99, "progress untouched without SPW_JU_PROGRESS");
        spw_store_job_clear(&j);
    }

    char list[256] = "";
    ok(spw_store_node_list(st, count_node, list, &err) == 0 && !list[0], "no node is down");
    ok(spw_store_node_set(st, "dc1", 3, 1, 50, &err) == 0, "node dc1/3 down");
    ok(spw_store_node_set(st, "dc1", 0, 1, 60, &err) == 0, "node dc1/0 down");
    ok(spw_store_node_set(st, "dc1", 3, 1, 70, &err) == 0, "down again is not an error");
    ok(spw_store_node_set(st, "a", 1, 2, 80, &err) == 0, "node a/1 down, by its backend");
    spw_store_node_list(st, count_node, list, &err);
    is_str(list, "a/1@80(backend) dc1/0@60 dc1/3@70", "listed by pool then index, with who");
    ok(spw_store_node_set(st, "dc1", 0, 0, 0, &err) == 0, "dc1/0 up");
    ok(spw_store_node_set(st, "zz", 0, 0, 0, &err) == 0, "up for a node never down is fine");
    spw_store_close(st);
    st = spw_store_open(db, NULL, &err);
    list[0] = '\0';
    spw_store_node_list(st, count_node, list, &err);
    is_str(list, "a/1@80(backend) dc1/3@70", "the down nodes survive a reopen, and who took them down");
    ok(spw_store_node_set(st, NULL, 0, 1, 0, &err) < 0, "a node needs a pool");
    spw_store_close(st);
    spw_jobspec_free(&a);
}

/* ---- fences (schema 9) -------------------------------------------------- */

static int list_fence(const spw_store_fence_t *f, void *arg)
{
    char *buf = arg;
    size_t n = strlen(buf);
    snprintf(buf + n, 256 - n, "%s%s:%s:%s@%.0f", n ? " " : "", f->pool, f->host, f->what,
             f->ts);
    return 0;
}

static void test_fences(void)
{
    const char *db = path_in("fences.db");
    spw_error_t err;
    char list[256] = "";
    spw_store_t *st = spw_store_open(db, NULL, &err);
    if (!ok(st != NULL, "open a store for fences"))
        return;
    ok(spw_store_fence_list(st, list_fence, list, &err) == 0 && !list[0], "no fence at first");
    ok(spw_store_fence_set(st, "hosts", "10.0.0.2", "abc.j-000001.1-r0", 1, 50, &err) == 0,
       "a fence recorded");
    ok(spw_store_fence_set(st, "hosts", "10.0.0.2", "abc.j-000001.1-r0", 1, 70, &err) == 0,
       "recording it again is not an error");
    ok(spw_store_fence_set(st, "hosts", "10.0.0.3", "abc.j-000001.1-r1", 1, 60, &err) == 0 &&
       spw_store_fence_set(st, "@cloud", "10.9.0.2", "abc.j-000002.1-r0", 1, 80, &err) == 0,
       "two more, another rank and another pool");
    spw_store_fence_list(st, list_fence, list, &err);
    is_str(list, "@cloud:10.9.0.2:abc.j-000002.1-r0@80 hosts:10.0.0.2:abc.j-000001.1-r0@50 "
                 "hosts:10.0.0.3:abc.j-000001.1-r1@60",
           "listed by pool, host, what; the first time kept");
    ok(spw_store_fence_set(st, "hosts", "10.0.0.3", "abc.j-000001.1-r1", 0, 0, &err) == 0,
       "one removed");
    ok(spw_store_fence_set(st, "hosts", "10.0.0.9", "nothing-r0", 0, 0, &err) == 0,
       "removing one never recorded is fine");
    spw_store_close(st);
    st = spw_store_open(db, NULL, &err);
    list[0] = '\0';
    spw_store_fence_list(st, list_fence, list, &err);
    is_str(list, "@cloud:10.9.0.2:abc.j-000002.1-r0@80 hosts:10.0.0.2:abc.j-000001.1-r0@50",
           "the fences left survive a reopen");
    ok(spw_store_fence_set(st, "hosts", NULL, "x-r0", 1, 0, &err) < 0, "a fence needs a host");
    spw_store_close(st);
}

/* ---- launch safety (schema 4) ------------------------------------------- */

static void test_launch_safety(void)
{
    const char *db = path_in("launch.db"), *db2 = path_in("launch2.db");
    spw_error_t err;
    char id1[13], id1b[13], id2[13];
    spw_store_t *st = spw_store_open(db, NULL, &err);
    if (!ok(st != NULL, "open a store for launch safety")) {
        diag("%s", err.text);
        return;
    }
    ok(spw_store_daemon_id(st, id1, &err) == 0, "a daemon id");
    ok(strlen(id1) == 12 && strspn(id1, "0123456789abcdef") == 12,
       "12 lowercase hex characters (%s)", id1);
    ok(spw_store_daemon_id(st, id1b, &err) == 0 && strcmp(id1, id1b) == 0,
       "asked again, the same id");
    spw_jobspec_t a;
    spw_jobspec_parse("t.yaml", "run: [x]\ngpus: 1\n", strlen("run: [x]\ngpus: 1\n"), &a, &err);
    const spw_jobspec_t *specs[] = {&a};
    char ids[1][SPW_STORE_ID_LEN];
    ok(spw_store_submit_batch(st, specs, 1, 100, ids, &err) == 0, "one job");
    spw_store_job_t j;
    if (ok(spw_store_job_get(st, ids[0], &j, &err) == 0, "read it")) {
        ok(j.launch_token == NULL && j.cancel_req == 0, "no launch token, no cancel yet");
        spw_store_job_clear(&j);
    }
    char tok[96];
    snprintf(tok, sizeof(tok), "%s.%s.1", id1, ids[0]);
    spw_store_job_update_t u = {.set = SPW_JU_LAUNCH | SPW_JU_CANCEL, .launch_token = tok,
                                .cancel_req = 1, .attempts = 7};
    ok(spw_store_job_update(st, ids[0], &u, &err) == 0, "write a launch intent and a cancel");
    ok(spw_store_heartbeat(st, 123.5, &err) == 0, "a heartbeat write");
    spw_store_close(st);
    st = spw_store_open(db, NULL, &err);
    ok(st && spw_store_daemon_id(st, id1b, &err) == 0 && strcmp(id1, id1b) == 0,
       "the id survives a reopen");
    if (st && ok(spw_store_job_get(st, ids[0], &j, &err) == 0, "read it back")) {
        is_str(j.launch_token, tok, "the launch token round-trips");
        is(j.cancel_req, 1, "the pending cancel round-trips");
        is(j.attempts, 0, "attempts untouched without SPW_JU_ATTEMPTS");
        spw_store_job_clear(&j);
    }
    u.set = SPW_JU_CANCEL;
    u.cancel_req = 0;
    u.launch_token = NULL;
    ok(st && spw_store_job_update(st, ids[0], &u, &err) == 0, "clear the cancel");
    if (st && spw_store_job_get(st, ids[0], &j, &err) == 0) {
        ok(j.cancel_req == 0 && j.launch_token && strcmp(j.launch_token, tok) == 0,
           "the token stays without SPW_JU_LAUNCH");
        spw_store_job_clear(&j);
    }
    spw_store_close(st);
    st = spw_store_open(db2, NULL, &err);
    ok(st && spw_store_daemon_id(st, id2, &err) == 0 && strcmp(id1, id2) != 0,
       "another state dir has another id (%s, %s)", id1, id2);
    spw_store_close(st);
    spw_jobspec_free(&a);
}

/* ---- opening odd files -------------------------------------------------- */

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

static void test_open_cases(void)
{
    spw_store_t *st;
    spw_error_t err;
    const char *p;
    char junk[4096];

    /* A zero-byte file (as touch leaves it) migrates like a new one. */
    p = path_in("empty.db");
    write_file(p, "", 0);
    st = spw_store_open(p, NULL, &err);
    ok(st != NULL, "an empty file migrates");
    if (st)
        is(spw_store_schema_version(st), SPW_STORE_SCHEMA_VERSION, "to the latest version");
    spw_store_close(st);
    st = spw_store_open(p, NULL, &err);
    ok(st != NULL, "and reopens");
    spw_store_close(st);
    is_str(raw(p, "SELECT count(*) FROM schema_version"), "1",
           "one schema_version row");

    /* A database from a newer spillway is refused and left alone. */
    p = path_in("future.db");
    st = spw_store_open(p, NULL, &err);
    spw_store_close(st);
    is_str(raw(p, "UPDATE schema_version SET version = 99"), "",
           "pretend a newer binary wrote it");
    st = spw_store_open(p, NULL, &err);
    ok(st == NULL, "a newer schema is refused");
    spw_store_close(st);
    char want_m[120];
    snprintf(want_m, sizeof(want_m), "schema version 99, newer than this spillway knows (%d): "
             "run a newer spillway", SPW_STORE_SCHEMA_VERSION);
    ok(strstr(err.text, want_m) != NULL, "newer schema message");
    is_str(raw(p, "SELECT version FROM schema_version"), "99",
           "the file is untouched");

    /* A foreign database is refused without being switched to WAL. */
    p = path_in("foreign.db");
    is_str(raw(p, "CREATE TABLE other (x)"), "", "create a foreign database");
    st = spw_store_open(p, NULL, &err);
    ok(st == NULL, "a foreign database is refused");
    ok(strstr(err.text, "not a spillway state database") != NULL,
       "foreign database message");
    is_str(raw(p, "PRAGMA journal_mode"), "delete",
           "its journal mode is untouched");

    /* Not a database at all. */
    p = path_in("junk.db");
    memset(junk, 'x', sizeof(junk));
    write_file(p, junk, sizeof(junk));
    st = spw_store_open(p, NULL, &err);
    ok(st == NULL, "a junk file is refused");
    ok(strstr(err.text, "not a database") != NULL, "junk message: %s",
       err.text);

    /* A directory that does not exist. */
    st = spw_store_open(path_in("no/such/dir.db"), NULL, &err);
    ok(st == NULL, "a missing directory fails");
    ok(strstr(err.text, "no/such/dir.db: cannot open") != NULL,
       "missing directory message: %s", err.text);
}

/* ---- crash safety ------------------------------------------------------- */

#define CRASH_ROUNDS 13
#define CRASH_JOBS 1000
#define CRASH_BATCH 50

/* The child: submits CRASH_JOBS in batches and writes each acknowledged id
 * to fd, one per line, only after the commit returned. */
static void crash_child(const char *db, int fd)
{
    spw_jobspec_t s;
    const spw_jobspec_t *specs[CRASH_BATCH];
    char ids[CRASH_BATCH][SPW_STORE_ID_LEN], buf[CRASH_BATCH * 24];
    spw_error_t err;
    spw_store_t *st;
    int b, i;
    size_t len;

    if (spec("team: crash\nrun: [sleep, '60']\ngpus: 1\n", &s) < 0)
        _exit(2);
    for (i = 0; i < CRASH_BATCH; i++)
        specs[i] = &s;
    st = spw_store_open(db, NULL, &err);
    if (!st) {
        dprintf(fd, "ERR %s\n", err.text);
        _exit(1);
    }
    for (b = 0; b < CRASH_JOBS / CRASH_BATCH; b++) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (spw_store_submit_batch(st, specs, CRASH_BATCH,
                                   (double)now.tv_sec, ids, &err) < 0) {
            dprintf(fd, "ERR %s\n", err.text);
            _exit(1);
        }
        for (len = 0, i = 0; i < CRASH_BATCH; i++)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\n",
                                    ids[i]);
        /* Under PIPE_BUF, so the batch reaches the parent whole or not. */
        if (write(fd, buf, len) != (ssize_t)len)
            _exit(3);
    }
    spw_store_close(st);
    spw_jobspec_free(&s);
    _exit(0);
}

typedef struct idset {
    char (*ids)[SPW_STORE_ID_LEN];  /* acknowledged ids */
    size_t n, cap;                  /* used, allocated */
} idset_t;

static void idset_add(idset_t *s, const char *id, size_t len)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->ids = realloc(s->ids, s->cap * sizeof(*s->ids));
    }
    snprintf(s->ids[s->n++], SPW_STORE_ID_LEN, "%.*s", (int)len, id);
}

typedef struct seen {
    int64_t last_seq;   /* seq of the previous row */
    int dup;            /* rows whose seq did not increase */
    int bad_id;         /* rows whose id does not match their seq */
    int n;              /* rows */
} seen_t;

static int seen_cb(const spw_store_job_t *j, void *arg)
{
    seen_t *s = arg;
    char want[SPW_STORE_ID_LEN];
    snprintf(want, sizeof(want), "j-%06lld", (long long)j->seq);
    s->dup += j->seq <= s->last_seq;
    s->bad_id += strcmp(want, j->id) != 0;
    s->last_seq = j->seq;
    s->n++;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_crash(void)
{
    const char *db = path_in("crash.db");
    idset_t acked = {0};
    spw_rng_t rng;
    uint64_t seed;
    int round, killed = 0, partial = 0, missing = 0, dups = 0, errors = 0;
    double full_us = 0;
    spw_store_t *st;
    spw_error_t err;
    seen_t seen = {0};
    size_t i;
    const char *env = getenv("SPW_TEST_SEED");

    seed = env ? strtoull(env, NULL, 0)
        : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    diag("crash test seed %llu (set SPW_TEST_SEED to repeat)",
         (unsigned long long)seed);
    spw_rng_seed(&rng, seed);

    /* Round 0 runs to the end and times the child; later rounds kill it
     * after a random part of that time, so kills land anywhere: opening,
     * inserting, committing, between batches. */
    for (round = 0; round < CRASH_ROUNDS; round++) {
        int fds[2], status;
        pid_t pid;
        char buf[8192], line[64];
        size_t linelen = 0, got = 0;
        ssize_t r;
        struct timespec t0, t1;

        if (pipe(fds) < 0)
            break;
        fflush(stdout);
        fflush(stderr);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid = fork();
        if (pid == 0) {
            close(fds[0]);
            free(acked.ids);  /* the parent's, copied by fork */
            crash_child(db, fds[1]);
        }
        close(fds[1]);
        if (pid < 0) {
            close(fds[0]);
            break;
        }
        if (round > 0) {
            /* The child never blocks on the pipe (its output fits), so
             * the parent can sleep before reading. */
            usleep((useconds_t)(spw_rng_uniform(&rng) * full_us));
            kill(pid, SIGKILL);
        }
        while ((r = read(fds[0], buf, sizeof(buf))) != 0) {
            ssize_t k;
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            for (k = 0; k < r; k++) {
                if (buf[k] != '\n') {
                    if (linelen < sizeof(line) - 1)
                        line[linelen++] = buf[k];
                    continue;
                }
                line[linelen] = '\0';
                if (strncmp(line, "ERR", 3) == 0) {
                    diag("child: %s", line);
                    errors++;
                } else {
                    idset_add(&acked, line, linelen);
                    got++;
                    if (round == 0 && got == CRASH_JOBS) {
                        /* Time to the last acknowledgement: kills in later
                         * rounds land before it (or just after, in the
                         * close, whose WAL checkpoint is worth hitting
                         * too). */
                        clock_gettime(CLOCK_MONOTONIC, &t1);
                        full_us = 1.2 * ((double)(t1.tv_sec - t0.tv_sec) *
                            1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3);
                    }
                }
                linelen = 0;
            }
        }
        /* An id left without its newline was not acknowledged. */
        close(fds[0]);
        waitpid(pid, &status, 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
            killed++;
            partial += got > 0 && got < CRASH_JOBS;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            errors++;
        }
    }
    is(errors, 0, "children ran without errors");
    ok(killed >= 1, "%d of %d children were killed (%d after some "
       "acknowledged batches, child run %.0f us)", killed, CRASH_ROUNDS - 1,
       partial, full_us);
    diag("%zu ids acknowledged over %d rounds", acked.n, CRASH_ROUNDS);

    st = spw_store_open(db, NULL, &err);
    if (!ok(st != NULL, "reopen after the crashes")) {
        diag("%s", err.text);
        free(acked.ids);
        return;
    }
    for (i = 0; i < acked.n; i++) {
        spw_store_job_t j;
        if (spw_store_job_get(st, acked.ids[i], &j, &err) < 0) {
            if (missing++ < 5)
                diag("missing %s: %s", acked.ids[i], err.text);
        } else {
            spw_store_job_clear(&j);
        }
    }
    is(missing, 0, "every acknowledged id is in the database");
    qsort(acked.ids, acked.n, sizeof(*acked.ids), cmp_id);
    for (i = 1; i < acked.n; i++)
        dups += strcmp(acked.ids[i - 1], acked.ids[i]) == 0;
    is(dups, 0, "no id was acknowledged twice");
    is(spw_store_job_list(st, NULL, seen_cb, &seen, &err), 0, "list all");
    is(seen.dup, 0, "no duplicated job rows");
    is(seen.bad_id, 0, "every id matches its seq");
    ok((size_t)seen.n >= acked.n &&
       (size_t)seen.n <= acked.n + (size_t)CRASH_ROUNDS * CRASH_BATCH,
       "rows (%d) = acknowledged (%zu) + at most one unacknowledged batch "
       "per crash", seen.n, acked.n);
    ok(seen.n % CRASH_BATCH == 0, "only whole batches were committed");
    spw_store_close(st);
    is_str(raw(db, "PRAGMA integrity_check"), "ok", "integrity_check");
    free(acked.ids);
}

/* ---- main --------------------------------------------------------------- */

static void rm_rf(const char *d)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    if (system(cmd) != 0)
        diag("could not remove %s", d);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, sizeof(dir), "%s/spw-store-XXXXXX",
             tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        printf("1..0 # SKIP cannot create a temporary directory\n");
        return 0;
    }
    test_state_names();
    test_jobs();
    test_instances_decisions();
    test_money();
    test_progress_and_nodes();
    test_launch_safety();
    test_fences();
    test_open_cases();
    test_crash();
    rm_rf(dir);
    return done_testing();
}
