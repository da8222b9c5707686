/* daemon_private.h: the daemon's state, shared by daemon.c (the loop,
 * recovery and the actions on jobs and instances) and daemon_api.c (the
 * thread-safe calls the HTTP layer makes).  Everything here is guarded by
 * spw_daemon.mu. */
#ifndef SPW_DAEMON_PRIVATE_H
#define SPW_DAEMON_PRIVATE_H

#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include "backends/backend.h"
#include "core/engine.h"
#include "daemon/daemon.h"
#include "daemon/jobuser.h"
#include "daemon/store.h"
#include "providers/provider.h"

/* One job the daemon knows (all of them, ended ones included, so lists and
 * costs need no database scan). */
typedef struct djob {
    spw_job_t ej;               /* the engine's record; ej.id points at id */
    char id[SPW_STORE_ID_LEN];  /* "j-000042" */
    int64_t seq;                /* 42 */
    char *team;                 /* owned; "" when none */
    char *name;                 /* owned; NULL when none */
    spw_jobspec_t spec;         /* owned; zeroed once the job has ended */
    spw_djob_state_t st;        /* state as stored */
    double submit_ts;           /* unix seconds */
    double placed_ts;           /* current or last placement; NAN = none */
    double start_ts;            /* process start; NAN = none */
    double end_ts;              /* ended; NAN = live */
    int attempts;               /* times its process was started */
    int has_exit;               /* exit_code is set */
    int exit_code;              /* exit status, or 128 + signal */
    char *reason;               /* owned; why it is where it is; NULL */
    int cancel_req;             /* cancel asked (and committed): its process
                                   is stopping; stored, so a restart
                                   finishes the cancel */
    char token[SPW_TOKEN_MAX];  /* launch token of its current launch
                                   intent, "DAEMONID.JOBID.ATTEMPT"; "" =
                                   none (cleared when it is requeued) */
    int pending;                /* its launch intent is recorded but not yet
                                   committed: the fork waits for the turn's
                                   commit (launch_pending) */
    uint32_t *pend_gpus;        /* owned: the GPUs of that launch */
    size_t pend_ngpus;          /* entries in pend_gpus */
    char **pend_extra;          /* owned, NULL-terminated: its extra env */
    int touched;                /* written since the last commit that
                                   worked: written again (whole) while
                                   commits fail, so a failed commit loses
                                   nothing once one works */
    int stopping;               /* its process belongs to an attempt that
                                   was interrupted (preempted instance,
                                   failed node) and already settled: it is
                                   being stopped, its exit only lets a new
                                   placement start */
    int running;                /* the backend tracks its process (h) */
    int unsure;                 /* after a restart its backend could not
                                   tell whether the attempt of its launch
                                   token runs (Slurm did not answer): it
                                   keeps its placement, and the loop asks
                                   again (recheck_unsure) until it can */
    spw_handle_t h;             /* the process, while running */
    int32_t be_pool;            /* pool whose backend runs h (pools.c);
                                   -1 = the daemon's own (local) backend */
    int32_t pool;               /* on-prem pool it is (or last was) placed
                                   in; -1 = none */
    int32_t node;               /* its node; -1 */
    int holds;                  /* 1: it holds GPUs of pool/node now */
    uint32_t held_gpus;         /* on-prem GPUs it holds (all its nodes), as
                                   the engine gave them: kept here because
                                   the engine forgets them when it requeues
                                   or interrupts the job */
    uint64_t gpu_bits;          /* GPU indices held on that node */
    char *gpus_assigned;        /* owned "0,1" as CUDA_VISIBLE_DEVICES; NULL */
    int32_t offer;              /* cloud offer it is (or last was) placed
                                   on; -1 = none */
    size_t *inst;               /* owned; indices into daemon.inst */
    size_t ninst;               /* instances bound to the job now */
    char *ran_on;               /* owned "emu-i-1,emu-i-2": the instances of
                                   its last cloud attempt, kept after it ends;
                                   NULL = none */
    double onprem_usd;          /* settled amortised on-prem cost */
    double onprem_gpu_h;        /* settled on-prem GPU-hours */
    double cloud_usd;           /* settled cloud cost, billed while bound */
    double cloud_gpu_h;         /* settled cloud GPU-hours while running */
    double charge_ts;           /* when its spend is charged: its last
                                   placement (a cloud one: when its worst
                                   case was reserved); NAN = never placed */
    double led_usd;             /* cloud compute its ended attempts settled
                                   against its team's budget (each bill
                                   clamped to its reservation, as the
                                   engine's ledger does) */
    double led_egress_usd;      /* egress settled against that budget: all
                                   of ej.egress_usd but what a live cloud
                                   placement still holds in its reservation */
    uint32_t held_saved;        /* ej.held as last written to the store */
    int stop_cost;              /* its process is being stopped because its
                                   cloud bill reached its worst case */
    int last_spot;              /* its current or last cloud attempt is on
                                   spot capacity */
    uint32_t gpus;              /* GPUs asked (kept after the spec is freed) */
    uint64_t gpu_mask;          /* acceptable models over the fleet's table */
    struct djob *next_wait;     /* list of cloud jobs waiting for boots */
} djob_t;

/* One cloud instance the daemon has acquired (ended ones kept for costs). */
typedef struct dinst {
    spw_instance_t in;          /* the provider's record */
    int64_t job_seq;            /* job bound to it; 0 = idle */
    double bound_ts;            /* when it was bound to that job */
    double idle_ts;             /* when it last became idle; NAN if busy */
    double bound_usd;           /* billed while bound to jobs, settled */
    uint32_t snode;             /* the Slurm cloud node it is (index + 1 in
                                   d->scloud_nodes; slurmcloud.c); 0 = none */
} dinst_t;

/* A fence a backend added or let go (fences.c), written in the turn that
 * took it and kept until that turn's commit worked. */
typedef struct dfence {
    int32_t pool;               /* the backend's pool (SPW_DAEMON_CLOUD_POOL
                                   for the cloud instances' hosts) */
    spw_backend_fence_t f;      /* what the backend said */
    double ts;                  /* daemon clock when it was taken, seconds */
} dfence_t;

/* One submit waiting for the loop's group commit. */
typedef struct subreq {
    spw_jobspec_t *spec;        /* borrowed from the caller */
    uint64_t mask;              /* its model mask */
    char id[SPW_STORE_ID_LEN];  /* filled on success */
    int status;                 /* 0 = pending, then 201 or 503 */
    spw_error_t err;            /* when status is 503 */
    struct subreq *next;
} subreq_t;

#define SPW_HIST_BUCKETS 12

/* One generation of the token table (daemon_api.c).  A SIGHUP reload
 * swaps in a new one atomically; old ones stay allocated until destroy, so
 * a caller's team and token name (borrowed from it) never dangle. */
typedef struct dtokens {
    spw_token_t *v;             /* owned deep copies */
    size_t n;
    struct dtokens *older;      /* the generation it replaced, or NULL */
} dtokens_t;

struct spw_audit;

/* An error that may repeat every turn, said with a count rather than each
 * time (dm_say_repeat). */
typedef struct dm_repeat {
    int on;                     /* it happened at the last report */
    uint64_t count;             /* times since it was last said */
    double said_ts;             /* when it was last said, daemon clock */
} dm_repeat_t;


struct spw_daemon {
    pthread_mutex_t mu;          /* guards everything below */
    pthread_cond_t wake;         /* the loop sleeps on it */
    pthread_cond_t committed;    /* submitters sleep on it */
    pthread_t thread;            /* the loop, once started */
    int started;                 /* the loop thread runs */
    int stopping;                /* destroy asked the loop to end */
    const spw_config_t *cfg;     /* borrowed */
    spw_fleet_t fleet;           /* the engine's fleet (pools from cfg, GPU
                                    counts possibly from nvidia-smi) */
    spw_engine_t *engine;
    spw_store_t *store;
    const struct spw_backend_ops *be_ops; /* the local backend: cloud jobs
                                    and pools without a backend of their own */
    void *be;
    /* Per-pool backends (pools.c; config pool key `backend:`): */
    const struct spw_backend_ops **pool_ops; /* per pool; NULL = be_ops */
    void **pool_be;              /* per pool; NULL = be */
    uint8_t **pool_slurm_down;   /* per Slurm pool, per node: down as Slurm
                                    last said (changes are applied with
                                    spw_daemon_do_node); NULL otherwise */
    spw_job_t ***pool_foreign;   /* per Slurm pool, per node: the engine's
                                   stand-in for the GPUs that jobs submitted
                                   behind spillway's back hold there (owned;
                                   NULL = none); pools.c */
    uint32_t **pool_foreign_gpus; /* per Slurm pool, per node: those GPUs as
                                   Slurm last reported them */
    double nodes_sync_ts;        /* last read of Slurm's node states */
    size_t nunsure;              /* jobs with `unsure` set (recovery) */
    double unsure_ts;            /* when recheck_unsure last asked */
    const struct spw_provider_ops *pv_ops;
    void *pv;
    const struct spw_backend_ops *cloud_ops; /* cloud_be's table */
    void *cloud_be;              /* the backend of plain hosts (registry:
                                    SPW_BACKEND_HOSTS) whose hosts are the
                                    cloud instances (daemon.emulated.
                                    boot_command), whose jobs it runs (be_pool
                                    SPW_DAEMON_CLOUD_POOL); NULL = cloud jobs
                                    run on the local backend */
    char *cloud_hosts_dir;       /* owned; the boot command's HOSTS_DIR */
    const struct spw_backend_ops *scloud_ops; /* scloud_be's table */
    void *scloud_be;             /* the Slurm backend of cloud.slurm_partition
                                    (registry: SPW_BACKEND_CLOUD_NODES), whose
                                    State=CLOUD nodes the cloud instances are
                                    and which runs cloud jobs (be_pool
                                    SPW_DAEMON_SLURM_CLOUD_POOL); NULL = none */
    char **scloud_nodes;         /* owned: that partition's node names */
    size_t nscloud;              /* entries in scloud_nodes */
    char *scloud_saved;          /* owned: STATE_DIR/slurm-cloud-nodes as read
                                    at start ("INSTANCE NODE" lines), applied
                                    to the recovered instances at the first
                                    use of a binding, then freed; NULL after */
    uint8_t *scloud_down;        /* owned, nscloud: 1 = Slurm has the node
                                    down, drained or failing (no instance is
                                    made that node) */
    char *state_dir;             /* owned */
    char *log_dir;               /* owned: STATE_DIR/logs (a directory per
                                    job in it) */
    char *run_dir;               /* owned: STATE_DIR/run, the local
                                    backend's launch fences and exit
                                    records, by launch token */
    char daemon_id[13];          /* this state dir's random id (store) */
    int64_t *pend;               /* seqs of jobs whose launch waits for the
                                    turn's commit */
    size_t npend, cappend;
    char **gc;                   /* owned: launch tokens of attempts that
                                    ended; their fence and exit record are
                                    removed once that end is committed */
    size_t ngc, capgc;
    dfence_t *fev;               /* owned: fences added and let go since the
                                    last commit that worked (fences.c),
                                    written again while commits fail */
    size_t nfev, capfev;         /* used, allocated */
    int64_t *touched;            /* seqs of the jobs flagged touched */
    size_t ntouched, captouched;
    int write_failed;            /* a store write of this turn failed: the
                                    turn counts as not committed */
    /* Health, under hmu (never under mu, so /healthz answers even while
     * the loop holds mu): */
    pthread_mutex_t hmu;
    double turn_mono;            /* monotonic time the last turn ended */
    int commit_failing;          /* the last commit failed */
    char commit_err[256];        /* why */
    uint64_t commit_failures;    /* turns (and cancels) whose commit failed */
    dm_repeat_t rep_flush;       /* the provider's state cannot be saved */
    dm_repeat_t rep_save;        /* job records cannot be written */
    int disk_low;                /* the state (or log) filesystem has less
                                    than daemon.min_free_mib free */
    char disk_err[256];          /* why, as /healthz and 503s say it */
    double disk_mono;            /* monotonic time of the last statvfs (mu) */
    int loop_running;            /* the loop thread runs its turns */
    djob_t **jobs;               /* by seq; jobs[0] unused */
    size_t njobs, capjobs;       /* highest seq + 1, capacity */
    dinst_t *inst;               /* every instance acquired */
    size_t ninst, capinst;
    size_t inst_lo;              /* instances below it have all ended */
    size_t job_lo;               /* jobs below this seq have all ended */
    int money_limits;            /* some budget or cap exists (the engine
                                    then clamps a settled bill to its
                                    reservation, and bounds every cloud
                                    job's runtime) */
    uint64_t **node_used;        /* per pool, per node: GPU bits in use */
    uint64_t *pool_busy;         /* per pool: GPUs held by jobs */
    uint64_t *pool_gpus;         /* per pool: GPUs in all (fixed at create) */
    uint8_t **node_down;         /* per pool, per node: 1 = taken out of
                                    service by an administrator */
    char *ckpt_dir;              /* owned: absolute STATE_DIR/checkpoints */
    spw_jobusers_t users;        /* who jobs run as, what they inherit */
    /* Spot capacity (config spot.availability): */
    int32_t *offer_avail;        /* per offer: the entry of cfg->spot.avail
                                    that applies (the last that matches),
                                    -1 = none */
    double spot_trace_start_ts;  /* unix time at which tick 0 of the traces
                                    begins, before each entry's offset */
    uint32_t *spot_cap;          /* per offer: spot capacity last told to the
                                    engine; UINT32_MAX = no limit */
    double *backoff_s;           /* per offer and kind (2 * offer + spot):
                                    the next capacity-error backoff, seconds;
                                    0 = none pending */
    djob_t *waiting;             /* cloud jobs placed, waiting for boots */
    subreq_t *subq;              /* submits to commit, oldest first */
    subreq_t **subq_tail;
    double now;                  /* the clock of the current turn */
    double started_ts;           /* when this daemon started */
    double since_ts;             /* first submit ever (costs period) */
    int quiet;                   /* no progress lines */
    /* metrics */
    uint64_t submitted;          /* jobs committed by this process */
    uint64_t node_failures;      /* nodes taken down by this process */
    uint64_t turn_hist[SPW_HIST_BUCKETS + 1]; /* decision time buckets */
    double turn_sum_s;           /* total decision time */
    uint64_t turns;              /* turns run */
    uint64_t http_codes[6];      /* requests by status class 1xx..5xx */
    /* guard (daemon_api.c) */
    dtokens_t *tokens;           /* the current token table; read with an
                                    atomic load, without mu */
    int auth_required;           /* the config had tokens at start */
    struct spw_audit *audit;     /* the audit log (audit.h) */
    struct dteamq *teamq;        /* queued jobs per team, for
                                    max_queued_per_team: counted once per
                                    turn, plus the submits since */
    size_t nteamq;
    uint64_t teamq_turn;         /* turns + 1 when last counted; 0 = never */
    struct spw_ui *ui;           /* the dashboard's sampler thread (ui.h),
                                    started with the loop; NULL before */
};

extern const double spw_daemon_hist_le[SPW_HIST_BUCKETS];

/* A turn older than this (or 50 ticks, if longer), seconds: the loop is
 * stuck and /healthz says so. */
#define SPW_DAEMON_STALL_S 10.0

/* guard.c, for daemon.c and turn.c: sets up the token table and the audit log
 * (after the store is open), writes the queued audit rows (in the turn's
 * transaction), and frees both. */
int spw_daemon_guard_init(spw_daemon_t *d, spw_error_t *err);
void spw_daemon_guard_flush(spw_daemon_t *d);
void spw_daemon_guard_free(spw_daemon_t *d);
/* api_jobs.c, for daemon.c: frees what the API keeps between calls (the
 * per-team queue counts of max_queued_per_team). */
void spw_daemon_api_free(spw_daemon_t *d);

/* The API's calls hold mu while they read the loop's records. */
#define LOCK(d) pthread_mutex_lock(&(d)->mu)
#define UNLOCK(d) pthread_mutex_unlock(&(d)->mu)

/* A timestamp as JSON: null when NAN (never happened). */
static inline json_t *spw_daemon_ts_json(double t)
{
    return isnan(t) ? json_null() : json_real(t);
}


/* The loop's rooms, for the API (each takes mu as the API holds it). */
/* Health without taking mu: 0 healthy; 1 unhealthy (commits fail, or the
 * loop is stuck) or 2 the loop is not running, with a sentence in why.
 * *turn_age_s: seconds since the last turn ended (NAN when none). */
int spw_daemon_health_state(spw_daemon_t *d, char *why, size_t len, double *turn_age_s);
djob_t *spw_daemon_find(spw_daemon_t *d, const char *id);
int spw_daemon_do_cancel(spw_daemon_t *d, djob_t *j, spw_error_t *err);
int spw_daemon_do_preempt(spw_daemon_t *d, const char *instance_id, spw_error_t *err);
/* Takes node `node` of pool `pool` down (its jobs are interrupted; down 1:
 * by an administrator, 2: its backend saw it fail, and brings it back when
 * it answers, also after a restart) or back up (down 0); 200, 404 or 409
 * with err.  *ids (caller frees, may be NULL)
 * gets the ids of the jobs interrupted, comma-separated. */
int spw_daemon_do_node(spw_daemon_t *d, size_t pool, uint32_t node, int down, char **ids,
                       spw_error_t *err);
/* Whether queued job j waits only because nodes are down or drained: no
 * pool that takes it can hold it with the nodes in service, but one could
 * with all its nodes.  1 with "waits: nodes POOL/N, ... are down" in buf,
 * else 0. */
int spw_daemon_waits_for_nodes(const spw_daemon_t *d, const djob_t *j, char *buf, size_t len);
/* The name of the backend that runs pool `pool`'s jobs ("local", "slurm"...). */
const char *spw_daemon_pool_backend(spw_daemon_t *d, size_t pool);
/* Slurm's ResumeProgram / SuspendProgram for node `node` of the Slurm cloud
 * partition (slurmcloud.c): resume finds the live instance that the node is
 * (*xp; 409 when none); suspend releases it unless a job is bound to it
 * again.  200 with *state ("up", "released", "busy", "none") and *xp (NULL
 * when no instance is the node), or 404, 409, 503 with err. */
int spw_daemon_scloud_node(spw_daemon_t *d, const char *node, int resume, dinst_t **xp,
                           const char **state, spw_error_t *err);
/* The pool index of a name, or -1. */
int spw_daemon_pool_index(const spw_daemon_t *d, const char *name);
/* A placed job's estimated end, unix seconds (NAN when it cannot tell):
 * for judging whether its deadline is at risk. */
double spw_daemon_est_end(const spw_daemon_t *d, const djob_t *j);
uint64_t spw_daemon_mask(spw_daemon_t *d, const spw_jobspec_t *s, spw_error_t *err);
/* Whether a GPU of model index `model` (-1 = unnamed) suits a job whose
 * acceptable models are mask over m (0 = any). */
int spw_daemon_model_ok(const spw_models_t *m, uint64_t mask, int model);
int spw_daemon_feasible(spw_daemon_t *d, uint32_t gpus, uint64_t mask, spw_error_t *err);
int spw_daemon_commit_one(spw_daemon_t *d, subreq_t *r);
/* Checks the governance names of a spec against the config: 0, or -1 with
 * a sentence naming the field and the names the config has. */
int spw_daemon_check_gov(const spw_daemon_t *d, const spw_jobspec_t *s, spw_error_t *err);
/* A job's cost up to now: settled plus the attempt in progress. */
double spw_daemon_job_onprem_usd(const spw_daemon_t *d, const djob_t *j, double now);
double spw_daemon_job_cloud_usd(const spw_daemon_t *d, const djob_t *j, double now);
/* What its current cloud attempt has billed up to now (0 when none). */
double spw_daemon_attempt_usd(const spw_daemon_t *d, const djob_t *j, double now);
/* The egress its live cloud placement holds in its reservation. */
double spw_daemon_att_egress(const djob_t *j);
const char *spw_daemon_offer_name(const spw_offer_t *o, char *buf, size_t len);
double spw_daemon_clock(void);
json_t *spw_daemon_candidates_json(spw_daemon_t *d, djob_t *j);

/* Job j's checkpoint directory into buf (len bytes), absolute:
 * STATE_DIR/checkpoints/team-TEAM/JOBID (no-team/JOBID for jobs without a
 * team), or STATE_DIR/checkpoints/JOBID where an older daemon made that
 * one.  Nothing is created (launch.c does, at launch). */
void dm_ckpt_path(const spw_daemon_t *d, const djob_t *j, char *buf, size_t len);

#endif
