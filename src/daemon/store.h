/* store.h: the daemon's durable state (jobs, cloud instances, placement
 * decisions) in one SQLite database in WAL mode, with versioned schema
 * migrations.
 *
 * Durability: a call that returns 0 has committed.  With the default
 * SPW_STORE_SYNC_NORMAL a commit is in the WAL file in the OS page cache
 * before the call returns, so it survives the process dying at any moment
 * (kill -9, a crash), which is what "nothing lost" asks of the daemon; it may
 * lose the last commits on a power failure or kernel crash.  With
 * SPW_STORE_SYNC_FULL every commit also waits for fsync of the WAL and
 * survives those too, at the cost of one disk flush per transaction (which
 * is why submits are written in batches).
 *
 * Threads: a store is used from one thread (the daemon's scheduler loop);
 * it has no locks of its own.  One daemon owns a database file: the store
 * keeps the next job number in memory, so two writers on one file would
 * fail each other's inserts (it never corrupts, SQLite locks the file).
 *
 * Ownership: a spw_store_t owns its connection and cached statements.
 * Records passed in are copied; records handed to callbacks are borrowed
 * until the callback returns; records filled by *_get are owned by the
 * caller and released with the matching *_clear. */
#ifndef SPW_DAEMON_STORE_H
#define SPW_DAEMON_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/jobspec.h"
#include "util/error.h"

/* Schema version this binary writes; opening a newer database fails. */
#define SPW_STORE_SCHEMA_VERSION 12

/* Room for a job id ("j-000123", up to "j-" and 19 digits) and its NUL. */
#define SPW_STORE_ID_LEN 24

/* Job states as stored (the state column holds the name).  Terminal states
 * are succeeded, failed, cancelled and rejected; the rest are live and come
 * back from spw_store_job_each_active after a restart. */
#define SPW_DJOB_STATES(X)                                                    \
    X(QUEUED, "queued")        /* waiting for a placement */                  \
    X(PLACED, "placed")        /* placed; launching (cloud: booting) */       \
    X(RUNNING, "running")      /* its process runs */                         \
    X(SUCCEEDED, "succeeded")  /* exited 0 */                                 \
    X(FAILED, "failed")        /* failed with no retries left, or killed */   \
    X(CANCELLED, "cancelled")  /* cancelled by a user */                      \
    X(REJECTED, "rejected")    /* its team's budget ran out (on_exhausted:    \
                                  reject); it never ran */
#define SPW_ENUM_DJOB(a, s) SPW_DJOB_##a,
typedef enum spw_djob_state {
    SPW_DJOB_STATES(SPW_ENUM_DJOB) SPW_DJOB_STATE_COUNT
} spw_djob_state_t;

const char *spw_djob_state_name(spw_djob_state_t s);
/* -1 if s is not a state name. */
int spw_djob_state_parse(const char *s, spw_djob_state_t *out);
int spw_djob_state_terminal(spw_djob_state_t s);

/* Cloud instance states.  Released is terminal. */
#define SPW_INST_STATES(X)                                                    \
    X(BOOTING, "booting")      /* requested, not ready yet */                 \
    X(READY, "ready")          /* ready; busy when job_id is set */           \
    X(RELEASED, "released")    /* given back; no longer billed */
#define SPW_ENUM_INST(a, s) SPW_INST_##a,
typedef enum spw_inst_state {
    SPW_INST_STATES(SPW_ENUM_INST) SPW_INST_STATE_COUNT
} spw_inst_state_t;

const char *spw_inst_state_name(spw_inst_state_t s);
int spw_inst_state_parse(const char *s, spw_inst_state_t *out);

typedef enum spw_store_sync {
    SPW_STORE_SYNC_NORMAL,  /* durable against process crashes (default) */
    SPW_STORE_SYNC_FULL,    /* durable against power loss as well */
} spw_store_sync_t;

typedef struct spw_store_opts {
    spw_store_sync_t sync;  /* PRAGMA synchronous for every commit */
    int busy_timeout_ms;    /* wait this long for a lock held by another
                               process (a backup, sqlite3 shell); 0 = 5000 */
} spw_store_opts_t;

typedef struct spw_store spw_store_t;

/* Opens (creating if needed) the database at path, switches it to WAL and
 * applies any pending migrations in one transaction.  opts may be NULL for
 * the defaults.  Fails, leaving the file as it was, when the file is not a
 * spillway database or its schema is newer than SPW_STORE_SCHEMA_VERSION.
 * Returns the store or NULL with a message in err. */
spw_store_t *spw_store_open(const char *path, const spw_store_opts_t *opts,
                            spw_error_t *err);

/* Finalizes statements and closes the database.  NULL-safe. */
void spw_store_close(spw_store_t *st);

/* The schema version of the open database (SPW_STORE_SCHEMA_VERSION). */
int spw_store_schema_version(const spw_store_t *st);

/* This state dir's daemon id: 12 lowercase hex characters from getrandom(),
 * made once when the database is created (or first opened by a spillway
 * that has them) and never changed; into out (13 bytes with the NUL).
 * Everything the daemon starts carries it (launch tokens), so two daemons
 * with separate state dirs never take each other's processes.  0, or -1
 * with err. */
int spw_store_daemon_id(spw_store_t *st, char out[13], spw_error_t *err);

/* A write that touches nothing a reader sees (one row of table meta),
 * inside the open transaction or on its own: the daemon's health check
 * uses it to learn whether commits work again after one failed. */
int spw_store_heartbeat(spw_store_t *st, double now, spw_error_t *err);
/* The SQLite connection, for tables kept beside the store's own (the audit
 * log, audit.h); used under the same lock as the store. */
struct sqlite3;
struct sqlite3 *spw_store_db(spw_store_t *st);

/* Groups several writes into one transaction (one commit, one fsync under
 * FULL): the scheduler loop wraps a turn's updates in begin/commit.  The
 * other write calls work inside or outside one; each is atomic by itself
 * either way.  Transactions do not nest.  rollback is safe to call when no
 * transaction is open. */
int spw_store_begin(spw_store_t *st, spw_error_t *err);
int spw_store_commit(spw_store_t *st, spw_error_t *err);
void spw_store_rollback(spw_store_t *st);

/* ---- jobs --------------------------------------------------------------- */

/* One row of jobs.  Timestamps are unix seconds; NAN = not yet. */
typedef struct spw_store_job {
    int64_t seq;                   /* insertion order, 1, 2, ... */
    char id[SPW_STORE_ID_LEN];     /* "j-000123" */
    char *team;                    /* "" when the spec had none */
    char *spec_json;               /* the spec's canonical JSON */
    spw_djob_state_t state;        /* where the job is */
    double submit_ts;              /* when it was accepted */
    double placed_ts;              /* when the engine placed it */
    double start_ts;               /* when its process started */
    double end_ts;                 /* when it reached a terminal state */
    char *placement;               /* "pool/node" or an offer; NULL = none */
    char *gpus_assigned;           /* "0,1" as CUDA_VISIBLE_DEVICES; NULL */
    int64_t pid;                   /* process id while running; 0 = none */
    int64_t pid_start_ticks;       /* field 22 of /proc/PID/stat, clock
                                      ticks after boot, so a reused pid is
                                      not mistaken for the job; 0 = none */
    int has_exit_code;             /* whether exit_code is set */
    int exit_code;                 /* exit status, or 128 + signal */
    int attempts;                  /* times it was started */
    char *reason;                  /* why it is in its state; NULL = none */
    double cost_usd;               /* settled cost so far, dollars: on-prem
                                      amortised plus cloud compute */
    /* ---- money (schema 2; 0 / NAN in rows written before) ---- */
    double cloud_usd;              /* of cost_usd, the cloud compute billed */
    double reserved_usd;           /* worst case its live cloud placement
                                      holds against budgets; 0 = none */
    double charge_ts;              /* when its spend is charged (its last
                                      placement, unix seconds); NAN = never */
    double egress_usd;             /* data egress and cache storage, dollars */
    double egress_gb;              /* data moved, gigabytes */
    int64_t held;                  /* times a budget or cap held its burst */
    double ledger_usd;             /* cloud compute settled against its team's
                                      budget by ended attempts (the bill,
                                      clamped to each attempt's reservation) */
    double ledger_egress_usd;      /* egress settled against that budget (what
                                      a live cloud placement holds is not) */
    /* ---- interruptions (schema 3; 0 in rows written before) ---- */
    double done_s;                 /* work kept from interrupted attempts up
                                      to their last checkpoint, seconds */
    double lost_s;                 /* work lost to interruptions, seconds */
    double lost_gpu_s;             /* the same in GPU-seconds */
    double spot_gpu_s;             /* paid spot GPU-seconds, every attempt */
    double ondemand_gpu_s;         /* paid on-demand GPU-seconds */
    int64_t restarts;              /* attempts begun after an interruption */
    int64_t preemptions;           /* cloud attempts preempted */
    int64_t failures;              /* on-prem attempts ended by a node failure */
    int64_t last_offer;            /* offer index of the last preempted
                                      attempt, -1 = none */
    int spot;                      /* its current or last cloud attempt ran
                                      on spot */
    /* ---- launch safety (schema 4; NULL / 0 in rows written before) ---- */
    char *launch_token;            /* "DAEMONID.JOBID.ATTEMPT" of its latest
                                      launch intent, committed before that
                                      launch; NULL = never launched */
    int cancel_req;                /* an acknowledged cancel is pending: its
                                      process is being stopped */
    /* ---- GPU-hours (schema 6; 0 in rows written before) ---- */
    double onprem_gpu_h;           /* on-prem GPU-hours its ended attempts
                                      settled */
    double cloud_gpu_h;            /* cloud GPU-hours its ended attempts ran */
    /* ---- where it ran (schema 7; NULL in rows written before) ---- */
    char *ran_on;                  /* "emu-i-1,emu-i-2": the instances of its
                                      last cloud attempt, once they are
                                      unbound; NULL = none */
    /* ---- on-prem egress (schema 11; 0 in rows written before) ---- */
    double onprem_egress_usd;      /* of egress_usd, the dollars paid to copy
                                      data into on-prem pools: counted in
                                      its team's egress month, not in its
                                      budget */
    /* ---- commitments (schema 12; 0 in rows written before) ---- */
    double commit_usd;             /* of cloud_usd, the dollars billed at a
                                      commitment's rate (outside budgets) */
} spw_store_job_t;

/* Releases what a job filled by spw_store_job_get owns.  NULL-safe. */
void spw_store_job_clear(spw_store_job_t *job);

/* Inserts n jobs as queued in ONE transaction: all are committed or none
 * (group commit: the daemon gathers concurrent submits into one call).
 * Each spec's team ("" when NULL) and canonical JSON are stored; now is the
 * submit time.  ids_out[i] receives the id of specs[i].  Returns 0 only once
 * the transaction committed (inside spw_store_begin, once the insert is
 * done: the commit is the caller's).  n may be 0. */
int spw_store_submit_batch(spw_store_t *st, const spw_jobspec_t *const *specs,
                           size_t n, double now,
                           char (*ids_out)[SPW_STORE_ID_LEN], spw_error_t *err);

/* Fields of a job to change: set says which (SPW_JU_* bits); the others are
 * ignored.  A NAN time, NULL string or 0 pid writes NULL. */
enum {
    SPW_JU_STATE = 1 << 0,
    SPW_JU_PLACED_TS = 1 << 1,
    SPW_JU_START_TS = 1 << 2,
    SPW_JU_END_TS = 1 << 3,
    SPW_JU_PLACEMENT = 1 << 4,  /* placement and ran_on together */
    SPW_JU_GPUS = 1 << 5,
    SPW_JU_PID = 1 << 6,        /* pid and pid_start_ticks together */
    SPW_JU_EXIT = 1 << 7,       /* has_exit_code and exit_code */
    SPW_JU_ATTEMPTS = 1 << 8,
    SPW_JU_REASON = 1 << 9,
    SPW_JU_COST = 1 << 10,      /* cost_usd, cloud_usd, commit_usd,
                                   onprem_gpu_h and cloud_gpu_h together */
    SPW_JU_MONEY = 1 << 11,     /* reserved_usd, charge_ts, egress_usd,
                                   egress_gb, held, ledger_usd,
                                   ledger_egress_usd and onprem_egress_usd
                                   together */
    SPW_JU_PROGRESS = 1 << 12,  /* done_s, lost_s, lost_gpu_s, spot_gpu_s,
                                   ondemand_gpu_s, restarts, preemptions,
                                   failures, last_offer and spot together */
    SPW_JU_LAUNCH = 1 << 13,    /* launch_token */
    SPW_JU_CANCEL = 1 << 14,    /* cancel_req */
};

typedef struct spw_store_job_update {
    unsigned set;                  /* SPW_JU_* bits of the fields to write */
    spw_djob_state_t state;        /* new state */
    double placed_ts;              /* unix seconds or NAN */
    double start_ts;               /* unix seconds or NAN */
    double end_ts;                 /* unix seconds or NAN */
    const char *placement;         /* borrowed; NULL clears */
    const char *gpus_assigned;     /* borrowed; NULL clears */
    int64_t pid;                   /* 0 clears pid and start ticks */
    int64_t pid_start_ticks;       /* from /proc/PID/stat field 22 */
    int has_exit_code;             /* 0 clears the exit code */
    int exit_code;                 /* exit status, or 128 + signal */
    int attempts;                  /* times started */
    const char *reason;            /* borrowed; NULL clears */
    double cost_usd;               /* dollars */
    double cloud_usd;              /* dollars (with SPW_JU_COST) */
    double reserved_usd;           /* dollars; the rest with SPW_JU_MONEY */
    double charge_ts;              /* unix seconds or NAN */
    double egress_usd;             /* dollars */
    double egress_gb;              /* gigabytes */
    int64_t held;                  /* times held */
    double ledger_usd;             /* dollars */
    double ledger_egress_usd;      /* dollars */
    double done_s;                 /* seconds; the rest with SPW_JU_PROGRESS */
    double lost_s;                 /* seconds */
    double lost_gpu_s;             /* GPU-seconds */
    double spot_gpu_s;             /* GPU-seconds */
    double ondemand_gpu_s;         /* GPU-seconds */
    int64_t restarts;              /* count */
    int64_t preemptions;           /* count */
    int64_t failures;              /* count */
    int64_t last_offer;            /* offer index, -1 = none */
    int spot;                      /* 0 or 1 */
    const char *launch_token;      /* borrowed; NULL clears (SPW_JU_LAUNCH) */
    int cancel_req;                /* 0 or 1 (SPW_JU_CANCEL) */
    double onprem_gpu_h;           /* GPU-hours (with SPW_JU_COST) */
    double cloud_gpu_h;            /* GPU-hours (with SPW_JU_COST) */
    const char *ran_on;            /* borrowed; NULL clears (SPW_JU_PLACEMENT) */
    double onprem_egress_usd;      /* dollars (with SPW_JU_MONEY) */
    double commit_usd;             /* of cloud_usd, dollars (with SPW_JU_COST) */
} spw_store_job_update_t;

/* Applies u to job id.  -1 with errno ENOENT when there is no such job. */
int spw_store_job_update(spw_store_t *st, const char *id,
                         const spw_store_job_update_t *u, spw_error_t *err);

/* Fills *out (release it with spw_store_job_clear).  -1 with errno ENOENT
 * when there is no such job, leaving *out zeroed. */
int spw_store_job_get(spw_store_t *st, const char *id, spw_store_job_t *out,
                      spw_error_t *err);

/* Called for each job listed; the job is borrowed until it returns, and the
 * callback must not call the store.  Return nonzero to stop early. */
typedef int (*spw_store_job_f)(const spw_store_job_t *job, void *arg);

typedef struct spw_store_filter {
    int state;           /* an spw_djob_state_t, or -1 for any */
    const char *team;    /* only this team's jobs; NULL = any */
    int64_t after_seq;   /* only jobs with seq > after_seq (paging); 0 */
    size_t limit;        /* at most this many; 0 = no limit */
    int64_t before_seq;  /* only jobs with seq < before_seq; 0 = any */
} spw_store_filter_t;

/* Calls cb for each job matching f (NULL = all), oldest first.  Returns 0,
 * or -1 on a database error. */
int spw_store_job_list(spw_store_t *st, const spw_store_filter_t *f,
                       spw_store_job_f cb, void *arg, spw_error_t *err);

/* Calls cb for every job not in a terminal state, oldest first: the
 * daemon's recovery after a restart (requeue, re-adopt pids). */
int spw_store_job_each_active(spw_store_t *st, spw_store_job_f cb, void *arg,
                              spw_error_t *err);

/* ---- cloud instances ---------------------------------------------------- */

typedef struct spw_store_instance {
    const char *id;                /* unique instance id */
    const char *provider;          /* "emulated", "aws", ... */
    const char *offer;             /* offer name (instance type, region) */
    spw_inst_state_t state;        /* booting, ready or released */
    double launched_ts;            /* when it was requested, unix seconds */
    double ready_ts;               /* when it became ready; NAN = not yet */
    double released_ts;            /* when it was released; NAN = not yet */
    double price_usd_per_h;        /* what it costs per hour, dollars */
    const char *job_id;            /* job running on it; NULL = idle */
    const char *addr;              /* (schema 5) where the daemon reaches it
                                      over ssh; NULL or "" = not a host */
    const char *account;           /* (schema 7) the cloud account holding it
                                      (set at insert only); NULL or "" =
                                      "emulated", the default account */
    const char *cloud_id;          /* (schema 7) the cloud's own id; NULL or
                                      "" = none (yet; an update keeps the
                                      one recorded) */
} spw_store_instance_t;

/* Inserts a new instance (all fields).  Fails if the id exists. */
int spw_store_instance_insert(spw_store_t *st, const spw_store_instance_t *in,
                              spw_error_t *err);

/* Sets state, ready_ts, released_ts and job_id of instance in->id (the
 * other fields never change).  -1 with errno ENOENT for an unknown id. */
int spw_store_instance_update(spw_store_t *st, const spw_store_instance_t *in,
                              spw_error_t *err);

/* Called for each instance; borrowed until it returns; must not call the
 * store.  Return nonzero to stop. */
typedef int (*spw_store_instance_f)(const spw_store_instance_t *in,
                                    void *arg);

/* Calls cb for each instance, oldest launch first; only those not released
 * when active_only (what a restart must reconcile so none bills unseen). */
int spw_store_instance_list(spw_store_t *st, int active_only,
                            spw_store_instance_f cb, void *arg,
                            spw_error_t *err);

/* ---- cloud acquisitions (schema 7) ---------------------------------------- */

/* One cloud acquisition's intent, written in the turn that places the job
 * and committed before the provider is asked; removed once its instances
 * are recorded (or the job no longer waits for them). */
typedef struct spw_store_acq {
    const char *token;             /* the idempotency key, unique */
    const char *job_id;            /* the job it is for */
    const char *account;           /* the account asked */
    const char *offer;             /* offer name */
    uint32_t count;                /* instances asked */
    int spot;                      /* 1: spot */
    double ts;                     /* when it was placed, unix seconds */
} spw_store_acq_t;

/* Records (or replaces, by token) / removes an intent. */
int spw_store_acq_put(spw_store_t *st, const spw_store_acq_t *a, spw_error_t *err);
int spw_store_acq_delete(spw_store_t *st, const char *token, spw_error_t *err);
/* Calls cb for each recorded intent, oldest first (borrowed until it
 * returns; must not call the store; nonzero stops). */
typedef int (*spw_store_acq_f)(const spw_store_acq_t *a, void *arg);
int spw_store_acq_list(spw_store_t *st, spw_store_acq_f cb, void *arg, spw_error_t *err);

/* ---- on-prem nodes ------------------------------------------------------ */

/* One node an administrator took out of service (schema 3).  Nodes not
 * listed are up. */
typedef struct spw_store_node {
    const char *pool;              /* pool name, as in the config */
    int64_t node;                  /* index in the pool, 0-based */
    double down_ts;                /* when it went down, unix seconds */
    int by_backend;                /* 1: its backend saw it fail (schema 6);
                                      0: an administrator took it down */
} spw_store_node_t;

/* Records node `node` of `pool` as down since down_ts (down 1: by an
 * administrator, 2: its backend saw it fail), or up (down 0: its row is
 * removed).  Setting a state it already has is not an error. */
int spw_store_node_set(spw_store_t *st, const char *pool, int64_t node,
                       int down, double down_ts, spw_error_t *err);

/* Called for each node that is down; borrowed until it returns; must not
 * call the store.  Return nonzero to stop. */
typedef int (*spw_store_node_f)(const spw_store_node_t *n, void *arg);

/* Calls cb for each node recorded down, by pool then index. */
int spw_store_node_list(spw_store_t *st, spw_store_node_f cb, void *arg,
                        spw_error_t *err);

/* ---- fences ------------------------------------------------------------- */

/* One fence a backend holds (schema 7): what it must kill on a host once
 * that host answers again (backend.h, spw_backend_fence_t). */
typedef struct spw_store_fence {
    const char *pool;              /* pool name, as in the config, or the
                                      daemon's name for its cloud hosts */
    const char *host;              /* the host's address */
    const char *what;              /* what to kill there (ssh: TOKEN-rN) */
    double ts;                     /* when it was fenced, unix seconds */
} spw_store_fence_t;

/* Records a fence (on 1; one already there is kept as it was) or removes
 * it (on 0; removing one that is not there is not an error). */
int spw_store_fence_set(spw_store_t *st, const char *pool, const char *host,
                        const char *what, int on, double ts, spw_error_t *err);

/* Called for each fence; borrowed until it returns; must not call the
 * store.  Return nonzero to stop. */
typedef int (*spw_store_fence_f)(const spw_store_fence_t *f, void *arg);

/* Calls cb for each fence recorded, by pool, host, then what. */
int spw_store_fence_list(spw_store_t *st, spw_store_fence_f cb, void *arg,
                         spw_error_t *err);

/* ---- decisions ---------------------------------------------------------- */

/* Records one placement decision (its JSON, with the candidates and the
 * reasons) for job_id at time ts. */
int spw_store_decision_insert(spw_store_t *st, const char *job_id, double ts,
                              const char *json, spw_error_t *err);

/* The latest decision recorded for job_id: *json_out (caller frees) and its
 * time in *ts_out (may be NULL).  -1 with errno ENOENT when there is none. */
int spw_store_decision_latest(spw_store_t *st, const char *job_id,
                              char **json_out, double *ts_out,
                              spw_error_t *err);

/* ---- the dashboard's series (schema 10) --------------------------------- */

/* Records one sample of the dashboard's series (ui.c) in tier (0, 1, 2:
 * finer to coarser) at ts, its JSON text, and removes the tier's samples
 * older than keep_from_ts (unix seconds).  A sample at the same tier and
 * ts replaces the one there. */
int spw_store_series_put(spw_store_t *st, int tier, double ts, const char *json,
                         double keep_from_ts, spw_error_t *err);

/* Called for each sample of a tier, oldest first; json borrowed until it
 * returns; must not call the store.  Return nonzero to stop. */
typedef int (*spw_store_series_f)(double ts, const char *json, void *arg);

int spw_store_series_list(spw_store_t *st, int tier, spw_store_series_f cb, void *arg,
                          spw_error_t *err);

#endif
