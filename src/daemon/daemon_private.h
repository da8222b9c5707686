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

/* One job in the daemon's memory: every live job, and ended ones until
 * daemon.job_retention_s after their end (retain.c); older ones are read
 * from the store when asked for. */
/* Queued jobs of one team, for daemon.max_queued_per_team (jobs.c). */
typedef struct dteamq {
    char *team;                 /* the team's name; owned */
    uint64_t n;                 /* its jobs in state queued */
    uint64_t pending;           /* its submits past the limit check, not
                                   yet answered (counted before the commit,
                                   which lets go of mu while it waits) */
} dteamq_t;

typedef struct djob {
    spw_job_t ej;               /* the engine's record; ej.id points at id */
    char id[SPW_STORE_ID_LEN];  /* "j-000042" */
    int64_t seq;                /* 42 */
    char *team;                 /* owned; "" when none */
    char *name;                 /* owned; NULL when none */
    spw_jobspec_t spec;         /* owned; zeroed once the job has ended */
    spw_djob_state_t st;        /* state as stored; set only by
                                   dm_job_state (jobs.c) */
    int in_teamq;               /* 1 while counted in its team's entry of
                                   d->teamq (it is queued) */
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
    double commit_usd;          /* settled share of commitments at their
                                   committed rate, dollars (outside budgets;
                                   stored inside cloud_usd and apart in
                                   commit_usd, schema 12) */
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
    char acq_token[SPW_ACQUIRE_TOKEN_MAX]; /* its latest cloud acquisition's
                                   token, "DAEMONID.JOBID.MS"; "" = none */
    uint32_t acq_count;         /* instances that acquisition asks */
    int acq_pending;            /* its intent is recorded, the provider not
                                   yet asked (dm_acquire_pending, after the
                                   turn's commit) */
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
    int32_t acct;               /* the account that holds it (index into
                                   d->acct; in.account is its name); -1 =
                                   one the config no longer has */
    double noticed_ts;          /* when the cloud's interruption notice was
                                   seen on it (cloud_hosts.c), daemon clock;
                                   0 = none: it takes no more work after */
} dinst_t;

/* One cloud account the daemon buys from (accounts.c): cloud.accounts[i],
 * or the default emulated account when the config declares none. */
typedef struct dacct {
    char name[SPW_INSTANCE_ACCOUNT_MAX]; /* its name; "emulated" for the
                                   default account */
    const spw_account_conf_t *conf; /* borrowed from the config; NULL = the
                                   default account (no limits) */
    const struct spw_provider_ops *ops; /* its provider's table */
    void *pv;                   /* its provider */
    char *state_dir;            /* owned: STATE_DIR/accounts/NAME; NULL for
                                   the default account (STATE_DIR itself) */
    uint32_t live;              /* its live instances, recounted each turn */
    double live_usd_per_h;      /* what they cost together, USD per hour */
    double blocked_until;       /* an account-wide refusal (auth): nothing
                                   is bought before, daemon clock; 0 = none */
    char blocked_why[200];      /* why, from the refusal */
} dacct_t;

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

#define SPW_HIST_BUCKETS 14

/* A latency histogram for /metrics (bounds: spw_daemon_hist_le). */
typedef struct dm_hist {
    uint64_t b[SPW_HIST_BUCKETS + 1]; /* counts per bucket, the last +Inf */
    double sum_s;                /* total of the times observed, seconds */
    uint64_t n;                  /* times observed */
} dm_hist_t;

/* What the ended jobs that left memory charged to one period (a month or a
 * week, as `costs` asks), for one team, pool and commitment (retain.c). */
typedef struct dgone_cost {
    spw_period_t kind;          /* SPW_PERIOD_MONTH or SPW_PERIOD_WEEK */
    double start_ts;            /* the period's start, unix seconds */
    uint32_t team;              /* index into dgone_t.teams */
    int32_t pool;               /* on-prem pool they last ran in; -1 = none */
    int32_t commit;             /* the commitment (index of its offer) their
                                   committed share was billed on; -1 = none */
    double onprem_usd;          /* settled on-prem cost, dollars */
    double onprem_gpu_h;        /* settled on-prem GPU-hours */
    double cloud_usd;           /* settled cloud cost, dollars */
    double commit_usd;          /* settled share of commitments, dollars */
    double cloud_gpu_h;         /* cloud GPU-hours */
    double settled_usd;         /* settled against their team's budget
                                   (cloud compute and egress), dollars */
    double egress_usd;          /* of it, egress, dollars */
    uint64_t jobs;              /* jobs charged to the period */
    uint64_t rejected;          /* of them, rejected */
} dgone_cost_t;

/* A team of the ended jobs that left memory. */
typedef struct dgone_team {
    char *name;                 /* owned */
    int64_t first_seq;          /* the seq of its first job among them
                                   (`costs` lists teams in that order) */
} dgone_team_t;

/* The ended jobs that left memory after daemon.job_retention_s (served from
 * the store after that): what they add to /metrics and `costs`, so those
 * figures do not change when a job leaves.  Kept per period, team and pool,
 * not per job. */
typedef struct dgone {
    uint64_t n;                 /* jobs out of memory */
    uint64_t *by_state;         /* (npools + 1) * SPW_DJOB_STATE_COUNT: by
                                   pool (npools = none) and state, as
                                   spillway_jobs counts them; NULL = none */
    uint64_t preemptions;       /* their cloud attempts preempted */
    uint64_t restarts;          /* their attempts begun after an interruption */
    uint64_t failures;          /* their attempts ended by a node failure */
    double onprem_usd;          /* their settled on-prem cost, dollars */
    dgone_team_t *teams;        /* owned: the teams the costs rows refer to */
    size_t nteams;
    dgone_cost_t *cost;         /* owned rows, one per (kind, start, team,
                                   pool, commitment) */
    size_t ncost, capcost;
} dgone_t;

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
    pthread_t sweep_thread;      /* the orphan sweep at start (recover.c) */
    int sweep_started;           /* 1: sweep_thread runs or ran, to join */
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
    dacct_t *acct;               /* owned: the cloud accounts (accounts.c) */
    size_t nacct;                /* entries in acct, >= 1 once made */
    int32_t *offer_acct;         /* owned, per offer: the account that serves
                                    it; -1 = none (the offer is never chosen) */
    double *blk_until;           /* owned, per offer and kind (2 * offer +
                                    spot): blocked by a refusal until, daemon
                                    clock; 0 = not blocked */
    char (*blk_why)[160];        /* owned, the same: why it is blocked */
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
    int64_t *acq;                /* seqs of jobs whose cloud acquisition
                                    waits for the turn's commit */
    size_t nacq, capacq;
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
    dm_repeat_t rep_nobuy;       /* acquisitions refused while the daemon
                                    cannot record them */
    dm_repeat_t rep_orphan_acct; /* an instance's account is gone from the
                                    config: it cannot be released */
    char acct_health[256];       /* why a cloud account cannot launch (its
                                    health, or an account-wide refusal);
                                    "" = every account can */
    int disk_low;                /* the state (or log) filesystem has less
                                    than daemon.min_free_mib free */
    char disk_err[256];          /* why, as /healthz and 503s say it */
    double disk_mono;            /* monotonic time of the last statvfs (mu) */
    int loop_running;            /* the loop thread runs its turns */
    djob_t **jobs;               /* by seq; jobs[0] unused; NULL = no such
                                    job, or an ended job that left memory
                                    (retain.c: read from the store then) */
    size_t njobs, capjobs;       /* highest seq in memory + 1, capacity */
    size_t njobs_mem;            /* jobs in memory (entries of jobs set) */
    size_t evict_lo;             /* entries of jobs below it are all NULL */
    int64_t *ended;              /* owned: seqs of ended jobs that may still
                                    be in memory, in the order they ended:
                                    what dm_evict looks at, not the queue */
    size_t nended, capended;
    double evict_ts;             /* when the loop last looked for ended jobs
                                    to leave memory (unix seconds) */
    dgone_t gone;                /* what the jobs that left add up to */
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
    double *spot_live_ts;        /* per offer: when its spot price (in
                                    fleet.offers) last came live from its
                                    account's cloud (spot_prices()), daemon
                                    clock; NAN = the catalog's price */
    djob_t *waiting;             /* cloud jobs placed, waiting for boots */
    subreq_t *subq;              /* submits to commit, oldest first */
    subreq_t **subq_tail;
    double now;                  /* the clock of the current turn */
    double started_ts;           /* when this daemon started */
    double since_ts;             /* first submit ever (costs period) */
    int quiet;                   /* no progress lines */
    int release_all_on_stop;     /* serve --release-all-on-stop */
    /* metrics */
    uint64_t submitted;          /* jobs committed by this process */
    uint64_t node_failures;      /* nodes taken down by this process */
    dm_hist_t decide_hist;       /* the engine's schedule of each turn */
    dm_hist_t turn_hist;         /* each turn whole: commit of submits,
                                    events, schedule, saves, the commit */
    uint64_t turns;              /* turns run */
    uint64_t http_codes[6];      /* requests by status class 1xx..5xx */
    /* guard (daemon_api.c) */
    dtokens_t *tokens;           /* the current token table; read with an
                                    atomic load, without mu */
    int auth_required;           /* the config had tokens at start */
    struct spw_audit *audit;     /* the audit log (audit.h) */
    struct spw_oidc *oidc;       /* daemon.oidc's verifier (oidc.h); NULL
                                    when off */
    struct dteamq *teamq;        /* per team: its queued jobs, kept by
                                    dm_job_state as they change, and its
                                    submits on their way to the commit,
                                    for max_queued_per_team */
    size_t nteamq;               /* entries of teamq (teams seen) */
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

/* The cloud accounts (accounts.c), for the loop and the API alike. */
/* The account serving offer `offer` (NULL: none), holding x (NULL: one the
 * config no longer has); an account's index by name (-1). */
dacct_t *dm_acct_of_offer(const spw_daemon_t *d, size_t offer);
dacct_t *dm_acct_of_inst(const spw_daemon_t *d, const dinst_t *x);
int32_t dm_acct_index(const spw_daemon_t *d, const char *name);
/* Whether the offer's account, x's account, every account is emulated. */
int dm_offer_emulated(const spw_daemon_t *d, size_t offer);
int dm_inst_emulated(const spw_daemon_t *d, const dinst_t *x);
int dm_all_emulated(const spw_daemon_t *d);
/* Why offer o (spot or not) cannot be chosen now, in buf (returned), or
 * NULL when it can: no account serves it, a refusal blocks it, its
 * account is blocked or at a limit. */
const char *dm_offer_blocked(const spw_daemon_t *d, size_t o, int spot, char *buf, size_t len);
/* The blocked offers now, as JSON (offer, market, until_ts, why). */
json_t *dm_blocked_json(const spw_daemon_t *d);

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
/* Job id in memory, or else as the store has it (an ended job that left
 * memory): then a record made for the call, which *owned gets too (free it
 * with spw_daemon_view_free); NULL when there is no such job (retain.c). */
djob_t *spw_daemon_find_stored(spw_daemon_t *d, const char *id, djob_t **owned);
void spw_daemon_view_free(djob_t *owned);
/* The ended jobs out of memory with seqs after `after` and before `before`
 * (0 = no bound), oldest first, of state st (-1 = any) and team (NULL =
 * any), as records made for the call: up to max of them into out (caller
 * frees each with spw_daemon_view_free).  Returns how many, or -1 with err
 * when the store cannot be read. */
long spw_daemon_stored_jobs(spw_daemon_t *d, long long after, long long before, int st,
                            const char *team, long max, djob_t **out, spw_error_t *err);
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
/* -1 with err (a sentence with the engine's reason) when the engine would
 * find spec, of GPU mask `mask`, unschedulable: no place its rules allow,
 * or no place that could finish it within its max_runtime.  Under the
 * daemon's lock. */
int spw_daemon_can_run(spw_daemon_t *d, const spw_jobspec_t *spec, uint64_t mask,
                       spw_error_t *err);
/* A job's cost up to now: settled plus the attempt in progress. */
double spw_daemon_job_onprem_usd(const spw_daemon_t *d, const djob_t *j, double now);
double spw_daemon_job_cloud_usd(const spw_daemon_t *d, const djob_t *j, double now);
/* Job j's share of commitments at their committed rate (GPU-hours held x
 * usd_per_gpu_h), settled and running up to now: part of its cost, outside
 * every budget. */
double spw_daemon_job_commit_usd(const spw_daemon_t *d, const djob_t *j, double now);
/* The commitment job j's committed share is billed on (the index of its
 * offer: its last cloud placement, when that is a commitment), or -1. */
int32_t dm_job_commitment(const spw_daemon_t *d, const djob_t *j);
/* What its current cloud attempt has billed up to now (0 when none). */
double spw_daemon_attempt_usd(const spw_daemon_t *d, const djob_t *j, double now);
/* The egress its live cloud placement holds in its reservation. */
double spw_daemon_att_egress(const djob_t *j);
/* Of the egress it settled (led_egress_usd), what counts against its
 * team's budget: all but the copies into on-prem pools, which count in the
 * egress month only. */
double spw_daemon_job_budget_egress(const djob_t *j);
const char *spw_daemon_offer_name(const spw_offer_t *o, char *buf, size_t len);
double spw_daemon_clock(void);
json_t *spw_daemon_candidates_json(spw_daemon_t *d, djob_t *j);

/* Job j's checkpoint directory into buf (len bytes), absolute:
 * STATE_DIR/checkpoints/team-TEAM/JOBID (no-team/JOBID for jobs without a
 * team), or STATE_DIR/checkpoints/JOBID where an older daemon made that
 * one.  Nothing is created (launch.c does, at launch). */
void dm_ckpt_path(const spw_daemon_t *d, const djob_t *j, char *buf, size_t len);

/* Why a queued job waits, in one word (queue's REASON column, the API's
 * reason_code, spillway_jobs_held{reason}). */
#define SPW_DM_WAITS(X)                                                       \
    X(BUDGET, "budget")     /* its team's budget holds its burst */           \
    X(LIMIT, "limit")       /* its worst case is over a budget or cap outright */ \
    X(CAP, "cap")           /* a spend-rate or GPU cap is full */             \
    X(FINISH, "finish")     /* no cloud offer finishes it in max_runtime */   \
    X(RULE, "rule")         /* its residency keeps it on-prem */              \
    X(SPOT, "spot")         /* waits for spot capacity */                     \
    X(BURST, "burst")       /* waits for on-prem, bursts at a time */         \
    X(CAPACITY, "capacity") /* waits for on-prem GPUs, no burst */
#define SPW_DM_WAIT_ENUM(a, s) SPW_DM_WAIT_##a,
typedef enum spw_dm_wait { SPW_DM_WAITS(SPW_DM_WAIT_ENUM) SPW_DM_WAIT_COUNT } spw_dm_wait_t;
#undef SPW_DM_WAIT_ENUM
const char *spw_daemon_wait_name(spw_dm_wait_t w);
/* Why queued job j waits (submit.c), from the engine's state: O(1). */
spw_dm_wait_t spw_daemon_wait_of(const spw_daemon_t *d, const djob_t *j);
/* The same, with a one-line sentence into buf that says what would make it
 * start sooner (a shorter --max-runtime, fewer GPUs). */
spw_dm_wait_t spw_daemon_queued_reason(const spw_daemon_t *d, const djob_t *j, char *buf,
                                       size_t len);

#endif
