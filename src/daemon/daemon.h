/* daemon.h: `spillway serve`: the live orchestrator.  One scheduler loop
 * thread runs the same engine as the simulator (core/engine.h) on the wall
 * clock, over a durable SQLite queue (store.h), the local backend (on-prem
 * GPUs of this machine) and a cloud provider (the emulated cloud).
 *
 * Threads: the HTTP layer (http.h) calls the functions below from its own
 * threads; they are all thread-safe.  One mutex guards the daemon's state;
 * each call holds it briefly.  Submits are group-committed: concurrent
 * spw_daemon_submit calls are gathered by the loop thread into one SQLite
 * transaction, and each returns only once its jobs are committed.
 *
 * Time: the loop reads the clock once per turn (CLOCK_REALTIME, unix
 * seconds) and passes that `now` to the engine, backend and provider. */
#ifndef SPW_DAEMON_DAEMON_H
#define SPW_DAEMON_DAEMON_H

#include <jansson.h>
#include <stddef.h>

#include "daemon/jobspec.h"
#include "daemon/store.h"
#include "config/config.h"
#include "util/error.h"

typedef struct spw_daemon spw_daemon_t;

/* Who is calling, from the bearer token (http.c).  team is borrowed from
 * the config; NULL for admin. */
typedef struct spw_caller {
    const char *team;   /* the token's team; NULL = admin (sees all) */
    int admin;          /* 1: may see and cancel every job, preempt */
    int metrics;        /* 1: a metrics token: may read /metrics and
                           nothing else (team is NULL, admin 0) */
    int viewer;         /* 1: role viewer: reads only (GET, HEAD); with no
                           team it sees what an admin sees (admin is 1) */
    const char *token_name; /* the token's name, for the audit log; NULL
                           when there is no token (open daemon) or it is
                           unknown.  Set for a revoked token too (auth
                           then fails).  For an OpenID Connect token it
                           points at user below. */
    char user[160];     /* "oidc:NAME" of an OpenID Connect token's user
                           (daemon.oidc); "" for static tokens */
    char why[256];      /* why spw_daemon_auth refused an OpenID Connect
                           token, a sentence for the 401; "" otherwise */
} spw_caller_t;

/* Options given on the command line (they win over the config's daemon:
 * section).  NULL / 0 = take the config's value. */
typedef struct spw_daemon_opts {
    const char *state_dir;     /* --state-dir */
    int sync_full;             /* store commits wait for fsync */
    int quiet;                 /* no progress lines on stderr */
    int release_all_on_stop;   /* --release-all-on-stop: destroy releases
                                  every live cloud instance */
} spw_daemon_opts_t;

/* Makes the daemon from a loaded config (borrowed until destroy): opens or
 * creates the state dir (db, logs/, emulated.json), detects GPUs, recovers
 * what a previous daemon left (re-queues, re-adopts processes, reconciles
 * cloud instances).  Does not start the loop.  NULL with a sentence in err. */
spw_daemon_t *spw_daemon_create(const spw_config_t *cfg, const spw_daemon_opts_t *opts,
                                spw_error_t *err);

/* Starts the scheduler loop thread.  0, or -1 with err. */
int spw_daemon_start(spw_daemon_t *d, spw_error_t *err);

/* Asks the loop to stop, waits for it, and frees everything.  Running jobs
 * keep running (a new daemon re-adopts them).  NULL-safe. */
void spw_daemon_destroy(spw_daemon_t *d);

/* Runs one loop turn now, on the calling thread (tests and fuzzers drive
 * a daemon without its thread this way).  Not to be mixed with start().
 * Without a started loop, spw_daemon_submit commits inline on the caller's
 * thread, so a test or fuzzer can use the whole API single-threaded. */
void spw_daemon_turn(spw_daemon_t *d);

/* ---- the API the HTTP layer calls ---------------------------------------
 * Each returns an HTTP status: 200/201 on success, else 400, 403, 404, 409,
 * 503 with a sentence in err (the body's message). */

/* Looks up a bearer token (constant-time compare) in the current token
 * table.  0 with *out filled, or -1 when unknown or revoked (for a revoked
 * one out->token_name names it).  When the config has no tokens every
 * request is admin. */
int spw_daemon_auth(spw_daemon_t *d, const char *token, spw_caller_t *out);
/* Whether the config has tokens at all (no tokens = open, loopback only). */
int spw_daemon_auth_required(const spw_daemon_t *d);
/* GET /v1/ui/login (no token): what the dashboard needs to log in through
 * daemon.oidc (see spw_oidc_login); {"login": false} without daemon.oidc
 * or its client_id.  200 with *out, or 503 with err when the provider's
 * discovery document cannot be had. */
int spw_daemon_login_info(spw_daemon_t *d, json_t **out, spw_error_t *err);

/* Validates and durably queues one parsed spec; on 201 *id_out holds its id.
 * Takes ownership of *spec (it is zeroed).  Blocks until committed. */
int spw_daemon_submit(spw_daemon_t *d, const spw_caller_t *who, spw_jobspec_t *spec,
                      char id_out[SPW_STORE_ID_LEN], spw_error_t *err);

/* GET /v1/jobs/{id}: *out = the job object (see docs/api.md). */
int spw_daemon_job(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                   spw_error_t *err);

/* GET /v1/jobs?state=&team=&after=&limit=: *out = {"jobs":[...], "next_after":N|null}.
 * state/team may be NULL. */
int spw_daemon_jobs(spw_daemon_t *d, const spw_caller_t *who, const char *state,
                    const char *team, long long after, long limit, json_t **out,
                    spw_error_t *err);

/* POST /v1/jobs/{id}/cancel: *out = the job object after the request. */
int spw_daemon_cancel(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                      spw_error_t *err);

/* GET /v1/jobs/{id}/explain. */
int spw_daemon_explain(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                       spw_error_t *err);

/* The highest rank whose log can be asked for (a gang's nodes - 1). */
#define SPW_DAEMON_MAX_RANKS 1024

/* GET /v1/jobs/{id}/logs?stream=out|err&offset=N&rank=R: up to max bytes
 * of rank R's log (0: the first node's) from offset into *buf (caller
 * frees), *len, the offset after them in *next and the job's state name in
 * *state (static).  A log not written yet reads as empty. */
int spw_daemon_logs(spw_daemon_t *d, const spw_caller_t *who, const char *id, int err_stream,
                    unsigned rank,
                    long long offset, size_t max, char **buf, size_t *len, long long *next,
                    const char **state, spw_error_t *err);

/* GET /v1/pools, GET /healthz. */
int spw_daemon_pools(spw_daemon_t *d, const spw_caller_t *who, json_t **out, spw_error_t *err);
/* Every instance each cloud account holds with this daemon's tags (the
 * providers' list, asked off the scheduler thread for async providers),
 * with its state, cost so far and job, and `orphan` for those the daemon
 * has no live record of; release_orphans: those are released (admin only;
 * 403 otherwise). */
int spw_daemon_instances(spw_daemon_t *d, const spw_caller_t *who, int release_orphans,
                         json_t **out, spw_error_t *err);
/* GET /v1/teams: fair share and quotas: per team (a team's caller sees its
 * own) nominal, used, borrowed and lent on-prem GPUs, decayed usage and
 * share; per cohort (admins) the same summed over its subtree. */
int spw_daemon_teams(spw_daemon_t *d, const spw_caller_t *who, json_t **out, spw_error_t *err);
/* GET /v1/costs?period=P: spend, budgets and caps for period P ("2026-11",
 * "2026-W47"; NULL or "" = the current month, each team's budget over its
 * own current period); 400 for a period that does not parse. */
int spw_daemon_costs(spw_daemon_t *d, const spw_caller_t *who, const char *period, json_t **out,
                     spw_error_t *err);
/* GET /healthz: 200, or 503 with "status" and "reason" while commits to
 * the database fail or the scheduler loop has completed no turn for
 * SPW_DAEMON_STALL_S.  GET /readyz (for load balancers): 200 once recovery
 * is done and the loop runs, 503 otherwise.  Neither waits on the loop. */
int spw_daemon_health(spw_daemon_t *d, json_t **out, spw_error_t *err);
int spw_daemon_ready(spw_daemon_t *d, json_t **out, spw_error_t *err);

/* GET /metrics: Prometheus text exposition (caller frees). */
char *spw_daemon_metrics(spw_daemon_t *d);
/* daemon.metrics_auth (1: /metrics needs an admin or metrics token) and
 * daemon.metrics_per_job (1: series naming jobs are included). */
void spw_daemon_metrics_conf(const spw_daemon_t *d, int *auth, int *per_job);

/* POST /v1/slurm/nodes/{node}/resume and .../suspend (admin only; Slurm's
 * ResumeProgram and SuspendProgram, `spillway slurm resume|suspend`): the
 * instance a cloud node of cloud.slurm_partition is (409 when it is none,
 * 404 for a node not in the partition), or release of its idle instance. */
int spw_daemon_slurm_node(spw_daemon_t *d, const spw_caller_t *who, const char *node, int resume,
                          json_t **out, spw_error_t *err);

/* POST /v1/admin/instances/{id}/preempt (admin only). */
int spw_daemon_preempt(spw_daemon_t *d, const spw_caller_t *who, const char *instance_id,
                       json_t **out, spw_error_t *err);

/* POST /v1/admin/nodes/{pool}/{index}/down and .../up (admin only): takes
 * an on-prem node out of service, as a failure would (its jobs are stopped
 * and placed again, resuming from their checkpoints), or back in.  The
 * state is kept across restarts.  *out = {"pool", "node", "state",
 * "jobs_interrupted": [ids]}; 404 for an unknown pool or index, 409 when
 * the node is already in that state. */
int spw_daemon_node(spw_daemon_t *d, const spw_caller_t *who, const char *pool,
                    const char *index, int down, json_t **out, spw_error_t *err);

/* Replaces the token table with dc's tokens (a config loaded again on
 * SIGHUP); requests after the call see only the new table.  A token the
 * current table marks revoked stays revoked whatever dc says (until a
 * restart), so a file caught half-rewritten cannot bring one back; their
 * number goes to *kept_revoked when not NULL.  Audited as `tokens.reload`.
 * Returns the number of live (not revoked) tokens. */
size_t spw_daemon_reload_tokens(spw_daemon_t *d, const spw_daemon_conf_t *dc,
                                size_t *kept_revoked);

/* Records one audited action (audit.h) by caller who (NULL = the daemon
 * itself) with the HTTP status answered. */
void spw_daemon_audit(spw_daemon_t *d, const spw_caller_t *who, const char *action,
                      const char *target, int status);

/* GET /v1/audit?since=&team=&limit= (admin only, else 403): newest first. */
int spw_daemon_audit_list(spw_daemon_t *d, const spw_caller_t *who, double since_ts,
                          const char *team, long limit, json_t **out, spw_error_t *err);

/* Records how long an HTTP request took, for /metrics. */
void spw_daemon_note_request(spw_daemon_t *d, int status, double seconds);

#endif
