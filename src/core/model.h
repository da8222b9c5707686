/* model.h: the engine's vocabulary: GPU models, pools, cloud offers, policy
 * and the job record that the engine schedules.
 *
 * Ownership: a spw_fleet_t owns its names, node arrays and offers
 * (spw_fleet_clear frees them).  Jobs are owned by the caller; the engine
 * borrows each submitted job until it has finished or been dropped. */
#ifndef SPW_CORE_MODEL_H
#define SPW_CORE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/gov.h"
#include "core/spot.h"
#include "util/error.h"

#define SPW_MAX_MODELS 64      /* GPU model names per fleet (a job's mask is 64 bits) */
#define SPW_MAX_NODE_GPUS 1024 /* sanity bound on GPUs in one node */

/* ---- GPU models ------------------------------------------------------- */

/* Interned GPU model names; a job's acceptable models are a bit mask over it. */
typedef struct spw_models {
    char *name[SPW_MAX_MODELS]; /* owned, as first written (e.g. "A100") */
    int n;                      /* names in use */
} spw_models_t;

/* Index of `name` (case-insensitive), interning it if new; -1 with err when
 * the table is full. */
int spw_models_intern(spw_models_t *m, const char *name, size_t len, spw_error_t *err);
int spw_models_find(const spw_models_t *m, const char *name);
void spw_models_clear(spw_models_t *m);
/* Forgets the names from index n on (undoing interns after a failure). */
void spw_models_truncate(spw_models_t *m, int n);

/* Whether a job asking for model `want` can use a GPU named `have`: equal
 * ignoring case, or `have` is `want` followed by "-" and a variant
 * ("A100" accepts "A100-80GB"). */
int spw_model_accepts(const char *want, const char *have);

/* ---- Policy ----------------------------------------------------------- */

#define SPW_QUEUE_ORDERS(X)                                                   \
    X(FIFO, "fifo") X(SJF, "sjf") X(PRIORITY, "priority") X(FAIR, "fair")
#define SPW_SCANS(X) X(HOL, "hol") X(SKIP, "skip")
#define SPW_BACKFILLS(X) X(NONE, "none") X(EASY, "easy")
#define SPW_FITS(X) X(FIRST, "first") X(BEST, "best")
#define SPW_WAITS(X)                                                          \
    X(NEVER, "never") X(NONE, "none") X(CONSTANT, "constant")                 \
    X(RUNTIME, "runtime") X(COMPUTE, "compute") X(PREDICT, "predict")

/* A job's use of spot capacity: as its spot policy decides, only spot
 * (waits for it, no deadline safety net), or never. */
#define SPW_SPOT_MODES(X) X(AUTO, "auto") X(ALWAYS, "always") X(NEVER, "never")
/* Where a preempted cloud job looks first: its region, or any other. */
#define SPW_RECOVERIES(X)                                                     \
    X(SAME_REGION_FIRST, "same_region_first") X(NEXT_REGION, "next_region")
/* A job whose on-prem node failed: back in the on-prem queue with its wait
 * counted from the failure, or to the cloud at once when it has waited its
 * wait since submission or would now miss its deadline on-prem. */
#define SPW_FAILOVERS(X) X(REQUEUE, "requeue") X(BURST, "burst")
/* What a cloud's refusal to sell capacity rules out (an EC2 error code's
 * class, a simulated capacity error), for how long the caller says:
 * nothing but a retry after a backoff; the offer in its zone and market;
 * the offer's instance family in its region (spw_offer_family); every
 * offer of the account (of its provider); or the job itself (its shape
 * can never be bought: it fails). */
#define SPW_BLOCKS(X)                                                         \
    X(NONE, "none") X(OFFER, "offer") X(FAMILY, "family") X(ACCOUNT, "account") \
    X(JOB, "job")

#define SPW_ENUM_QUEUE(a, s) SPW_QUEUE_##a,
#define SPW_ENUM_SCAN(a, s) SPW_SCAN_##a,
#define SPW_ENUM_BACKFILL(a, s) SPW_BACKFILL_##a,
#define SPW_ENUM_FIT(a, s) SPW_FIT_##a,
#define SPW_ENUM_WAIT(a, s) SPW_WAIT_##a,
#define SPW_ENUM_SPOTMODE(a, s) SPW_SPOTMODE_##a,
#define SPW_ENUM_RECOVERY(a, s) SPW_RECOVERY_##a,
#define SPW_ENUM_FAILOVER(a, s) SPW_FAILOVER_##a,
#define SPW_ENUM_BLOCK(a, s) SPW_BLOCK_##a,
typedef enum spw_queue_order { SPW_QUEUE_ORDERS(SPW_ENUM_QUEUE) SPW_QUEUE_COUNT } spw_queue_order_t;
typedef enum spw_scan { SPW_SCANS(SPW_ENUM_SCAN) SPW_SCAN_COUNT } spw_scan_t;
typedef enum spw_backfill { SPW_BACKFILLS(SPW_ENUM_BACKFILL) SPW_BACKFILL_COUNT } spw_backfill_t;
typedef enum spw_fit { SPW_FITS(SPW_ENUM_FIT) SPW_FIT_COUNT } spw_fit_t;
typedef enum spw_wait_kind { SPW_WAITS(SPW_ENUM_WAIT) SPW_WAIT_COUNT } spw_wait_kind_t;
typedef enum spw_spot_mode { SPW_SPOT_MODES(SPW_ENUM_SPOTMODE) SPW_SPOTMODE_COUNT } spw_spot_mode_t;
typedef enum spw_recovery { SPW_RECOVERIES(SPW_ENUM_RECOVERY) SPW_RECOVERY_COUNT } spw_recovery_t;
typedef enum spw_failover { SPW_FAILOVERS(SPW_ENUM_FAILOVER) SPW_FAILOVER_COUNT } spw_failover_t;
typedef enum spw_block { SPW_BLOCKS(SPW_ENUM_BLOCK) SPW_BLOCK_COUNT } spw_block_t;

const char *spw_queue_order_name(spw_queue_order_t v);
const char *spw_scan_name(spw_scan_t v);
const char *spw_backfill_name(spw_backfill_t v);
const char *spw_fit_name(spw_fit_t v);
const char *spw_wait_kind_name(spw_wait_kind_t v);
const char *spw_spot_mode_name(spw_spot_mode_t v);
const char *spw_recovery_name(spw_recovery_t v);
const char *spw_failover_name(spw_failover_t v);
const char *spw_block_name(spw_block_t v);
/* Parse a name; -1 when unknown (err lists the accepted names). */
int spw_queue_order_parse(const char *s, spw_queue_order_t *out, spw_error_t *err);
int spw_scan_parse(const char *s, spw_scan_t *out, spw_error_t *err);
int spw_backfill_parse(const char *s, spw_backfill_t *out, spw_error_t *err);
int spw_fit_parse(const char *s, spw_fit_t *out, spw_error_t *err);
int spw_spot_mode_parse(const char *s, spw_spot_mode_t *out, spw_error_t *err);
int spw_recovery_parse(const char *s, spw_recovery_t *out, spw_error_t *err);
int spw_failover_parse(const char *s, spw_failover_t *out, spw_error_t *err);
int spw_block_parse(const char *s, spw_block_t *out, spw_error_t *err);

/* When a queued job gives up on on-prem and bursts to the cloud. */
typedef struct spw_wait {
    spw_wait_kind_t kind; /* which rule */
    double param;         /* W seconds (constant) or factor K (runtime,
                             compute, predict: seconds of wait per GPU-second
                             of estimated work) */
} spw_wait_t;

/* Parses "never", "none", "constant:W", "runtime:K", "compute:K",
 * "predict:K".  predict:K has compute:K's budget, K x gpus x est_runtime_s,
 * but bursts at once a job whose predicted on-prem start (the queue played
 * forward with estimated runtimes) is past that budget. */
int spw_wait_parse(const char *s, spw_wait_t *out, spw_error_t *err);
/* Writes the canonical text of w ("compute:0.25") into buf. */
void spw_wait_format(const spw_wait_t *w, char *buf, size_t len);

typedef struct spw_policy {
    spw_queue_order_t queue; /* queue order */
    spw_scan_t scan;         /* how a pass walks the queue (ignored with easy backfill) */
    spw_backfill_t backfill; /* EASY backfill on or off */
    spw_fit_t fit;           /* node choice on-prem */
    spw_wait_t wait;         /* burst rule */
    int gravity;             /* 1: data egress and transfer time weigh in
                                placement (default); 0: they are paid but
                                ignored when choosing (for --compare) */
    double reserve_extra_s;  /* added to max_runtime in a cloud worst case:
                                time billed besides the run (the daemon's
                                kill grace and turn); 0 in the simulator */
    /* Spot, restarts and failover (docs/spot.md): */
    spw_spot_policy_t spot_policy; /* for jobs that name none; ondemand */
    double restart_overhead_s; /* paid seconds without progress at the start
                                of every attempt (first start, restart, new
                                instance); 0 */
    uint32_t max_restarts;   /* interruptions a job survives; the next one
                                fails it; UINT32_MAX = no bound (default) */
    spw_recovery_t recovery; /* where a preempted job looks first */
    spw_failover_t failover; /* what a node failure does to its jobs */
    /* Fair share and quotas (docs/fairshare.md): */
    double half_life_s;      /* queue: fair: a team's past GPU-seconds count
                                half after this long (Slurm's
                                PriorityDecayHalfLife); 7 days; INFINITY = no
                                decay */
    double reclaim_grace_s;  /* notice a job running on borrowed quota gets
                                before it is preempted for a team under its
                                nominal share (time to checkpoint); 300 */
} spw_policy_t;

void spw_policy_default(spw_policy_t *p);

/* ---- Fleet -------------------------------------------------------------- */

/* What owning a pool costs, used or not (the `owned:` map of a pool,
 * docs/config.md "On-prem cost").  All zero = not given: the pool's
 * cost_usd_per_gpu_h alone is the amortised price of owning one GPU for an
 * hour (the simple form). */
typedef struct spw_owned_cost {
    double price_usd_per_gpu;    /* purchase price of one GPU with its share of
                                    the server, network and installation */
    double years;                /* the purchase is spread evenly over this many
                                    years (8,766 hours each), > 0 when priced */
    double gpu_busy_w;           /* draw of one busy GPU with its share of the
                                    server, watts */
    double gpu_idle_w;           /* draw of one idle GPU likewise, watts */
    double pue;                  /* power usage effectiveness of the site, >= 1
                                    (facility power / IT power) */
    double usd_per_kwh;          /* price of electricity */
    double node_usd_per_month;   /* space, cooling contract, network and
                                    operations of one node per month (730.5 h) */
} spw_owned_cost_t;

/* One on-prem pool: fixed nodes with a GPU count each. */
typedef struct spw_pool_spec {
    char *name;                 /* owned; unique in the fleet */
    uint32_t nnodes;            /* nodes in the pool, > 0 */
    uint16_t *node_gpus;        /* owned; GPUs of each node, > 0 */
    int model;                  /* index in the fleet's models, -1 = unspecified (accepts any job) */
    double cost_usd_per_gpu_h;  /* amortised cost of owning one GPU for an hour;
                                   with an owned model, what one busy GPU-hour
                                   costs under it (spw_owned_busy_usd_per_gpu_h),
                                   which prices a job's on-prem attempts */
    int has_owned;              /* owned below was given */
    spw_owned_cost_t owned;     /* the owned-capacity model, when has_owned */
} spw_pool_spec_t;

/* What a pool cost over a stretch of time: every GPU owned for all of it,
 * split into the part its jobs used and the part that stood idle. */
typedef struct spw_owned_split {
    double total_usd;           /* used_usd + idle_usd */
    double used_usd;            /* the busy GPU-hours' share: their capital,
                                   busy power and node costs */
    double idle_usd;            /* the rest: idle GPUs' capital, idle power and
                                   node costs */
} spw_owned_split_t;

/* The cost of one busy GPU-hour of an owned model: capital per hour, busy
 * power x PUE, and the node costs shared over the node's GPUs. */
double spw_owned_busy_usd_per_gpu_h(const spw_owned_cost_t *m, double gpus_per_node);

/* What pool p cost over hours_h hours in which its jobs held busy_gpu_h
 * GPU-hours (clamped to 0 .. GPUs x hours_h).  The simple form prices every
 * GPU-hour, busy or idle, at cost_usd_per_gpu_h; an owned model adds power
 * at busy or idle draw and the node costs.  The same function serves the
 * simulator's summary and the daemon's costs. */
void spw_pool_owned_cost(const spw_pool_spec_t *p, double hours_h, double busy_gpu_h,
                         spw_owned_split_t *out);

/* One purchasable cloud shape. */
typedef struct spw_offer {
    char *provider;             /* owned: "aws", "gcp", "azure", "flat" */
    char *region;               /* owned, may be "" */
    char *zone;                 /* owned, may be "" */
    char *instance_type;        /* owned */
    int model;                  /* index in the fleet's models, -1 = any model (flat price) */
    uint32_t gpus;              /* GPUs per instance, > 0; a multi-GPU job bursts
                                   to one instance with enough GPUs, or to
                                   several in one zone when it allows more than
                                   one node (spw_job_t.gpus_per_node) */
    double ondemand_usd_per_h;  /* price of one instance for an hour, on demand */
    double spot_usd_per_h;      /* spot price of one instance for an hour; NAN if none */
    double boot_delay_s;        /* seconds from request to the job running */
    /* A commitment (cloud.commitments: reserved instances, a savings plan,
     * committed use) is an offer of its own, a copy of the catalog offer it
     * stands for with these set; 0 / NULL for an ordinary offer. */
    char *commit_name;          /* owned: the commitment's name; NULL = an
                                   ordinary offer */
    uint32_t commit_gpus;       /* GPUs committed: paid every hour, used or
                                   idle; at most commit_gpus / gpus instances
                                   of it are held at once (0: none, as the
                                   planner's "commit nothing") */
    double commit_usd_per_gpu_h;/* the committed rate of one GPU-hour */
} spw_offer_t;

/* Whether offer o is a commitment. */
static inline int spw_offer_committed(const spw_offer_t *o)
{
    return o->commit_name != NULL;
}

/* What commitment o costs over hours_h hours (all of them paid): its GPUs
 * x its rate x hours; 0 for an ordinary offer. */
double spw_commit_cost_usd(const spw_offer_t *o, double hours_h);

/* Makes *dst the commitment `name` of gpus GPUs (a multiple of src->gpus)
 * at usd_per_gpu_h, standing for ordinary offer src: a deep copy of src
 * with no market price (on-demand 0, no spot), so the engine ranks it
 * first.  dst's old contents are not freed. */
void spw_offer_commitment(spw_offer_t *dst, const spw_offer_t *src, const char *name,
                          uint32_t gpus, double usd_per_gpu_h);

/* Whether offers a and b are of one instance family: the instance type up
 * to its first '.' ("p3" of "p3.2xlarge"), or, for types without a '.',
 * up to the last '-' or '_' ("a2-highgpu" of "a2-highgpu-1g",
 * "Standard_NC6s" of "Standard_NC6s_v3"), or the whole type. */
int spw_offer_same_family(const spw_offer_t *a, const spw_offer_t *b);

/* The GPU performance model (docs/config.md "GPU performance"): a job's
 * runtime is measured on the reference model and scales with relative
 * training throughput elsewhere. */
typedef struct spw_perf {
    char *reference;            /* owned: the model runtimes are measured on;
                                   NULL = no performance model (every GPU runs
                                   a job in its runtime) */
    int scale_pools;            /* on-prem pools run at their GPU's speed too
                                   (the config sets it with any reference,
                                   given or the first pool's); 0: pools run
                                   jobs in the runtimes the trace recorded on
                                   them, and only cloud offers are scaled */
    char **names;               /* owned: models whose throughput the config sets */
    double *throughput;         /* owned: theirs, relative to any common unit, > 0 */
    size_t n;
    struct spw_perf_class {
        uint32_t jclass;        /* governance class index + 1 */
        char **names;           /* owned: models this class rates its own way */
        double *throughput;     /* owned */
        size_t n;
    } *classes;                 /* owned: per job class overrides */
    size_t nclasses;
} spw_perf_t;

/* Relative training throughput of a GPU model in the built-in table (A100 =
 * 1; docs/config.md cites the sources), matched as spw_model_accepts does
 * ("A100" covers "A100-80GB"); NAN for a model the table lacks. */
double spw_gpu_throughput(const char *model);

typedef struct spw_fleet {
    spw_models_t models;        /* every GPU model name seen (pools, offers, jobs) */
    spw_pool_spec_t *pools;     /* owned array */
    size_t npools;
    spw_offer_t *offers;        /* owned array; empty = no cloud at all */
    size_t noffers;
    spw_gov_t gov;              /* budgets, caps, rules, residency, datasets
                                   (owned; spw_gov_init's state = none) */
    spw_perf_t perf;            /* GPU performance model; reference NULL = none */
} spw_fleet_t;

/* How fast a GPU of fleet model `model` (-1 = unspecified) runs a job
 * relative to the reference model: work seconds per second of wall clock.
 * 1 without a performance model, for -1, and for a model neither the
 * config nor the built-in table knows (or when the reference is unknown). */
double spw_fleet_speed(const spw_fleet_t *f, int model);

/* The same for a job of governance class jclass (index + 1; 0 = none): the
 * class's own throughputs first (performance: classes:), then the fleet's,
 * then the table's. */
double spw_fleet_class_speed(const spw_fleet_t *f, uint32_t jclass, int model);

/* Deep copy of src into dst (whose old contents are not freed). */
void spw_perf_copy(spw_perf_t *dst, const spw_perf_t *src);

/* Whether performance: classes: rates class jclass (index + 1) its own way. */
int spw_fleet_perf_class(const spw_fleet_t *f, uint32_t jclass);

void spw_fleet_init(spw_fleet_t *f);   /* an empty fleet with no governance */
void spw_fleet_clear(spw_fleet_t *f);  /* frees everything, leaves an empty fleet */
void spw_offer_clear(spw_offer_t *o);  /* frees an offer's strings */
void spw_pool_spec_clear(spw_pool_spec_t *p);  /* frees a pool's name and nodes */
uint64_t spw_fleet_gpus(const spw_fleet_t *f);  /* on-prem GPUs in total */

/* ---- Jobs ------------------------------------------------------------- */

#define SPW_JOB_STATES(X)                                                     \
    X(NEW, "new") X(QUEUED, "queued") X(ONPREM, "onprem")                     \
    X(CLOUD, "cloud") X(DONE, "done") X(UNSCHEDULABLE, "unschedulable")      \
    X(CANCELLED, "cancelled") X(REJECTED, "rejected") X(FAILED, "failed")
#define SPW_ENUM_JSTATE(a, s) SPW_JOB_##a,
/* Both enums below are one byte (packed: a trace holds millions of jobs). */
typedef enum __attribute__((packed)) spw_job_state {
    SPW_JOB_STATES(SPW_ENUM_JSTATE) SPW_JOB_STATE_COUNT
} spw_job_state_t;
const char *spw_job_state_name(spw_job_state_t s);

/* Why the engine placed a job where it did (kept for explain). */
#define SPW_REASONS(X)                                                        \
    X(NONE, "none")                                                           \
    X(FITS_ONPREM, "fits on-prem")                                            \
    X(BACKFILLED, "backfilled without delaying the head job")                 \
    X(WAIT_EXPIRED, "wait policy expired")                                    \
    X(NEVER_FITS_ONPREM, "can never fit on-prem")                             \
    X(NO_PLACE, "no on-prem pool and no cloud offer can run it")             \
    X(CLOUD_FIRST, "placement rule cloud_first")                             \
    X(HELD_BUDGET, "held: its team's budget has no room for the worst case")  \
    X(HELD_CAP, "held: a cloud spend-rate or GPU cap is full")               \
    X(ONPREM_ONLY_BUDGET, "budget exhausted: on-prem only (on_exhausted)")   \
    X(REJECTED_BUDGET, "rejected: budget exhausted (on_exhausted: reject)")  \
    X(NO_ALLOWED_PLACE, "no place its rules and residency allow can run it")  \
    X(OVER_LIMIT, "its worst case is over a budget or cap even with nothing else spent") \
    X(WAIT_SPOT, "waiting for spot capacity while its deadline leaves slack")  \
    X(SPOT, "spot capacity is available")                                     \
    X(DEADLINE, "its deadline needs on-demand capacity now")                  \
    X(PREEMPTED, "requeued after its cloud capacity was preempted")           \
    X(NODE_FAILED, "requeued after its on-prem node failed")                  \
    X(FAILOVER, "its node failed and on-prem cannot meet its wait or deadline") \
    X(MAX_RESTARTS, "failed: interrupted more often than max_restarts")       \
    X(SWITCH_SPOT, "moved from on demand to spot: ahead of uniform progress") \
    X(CANNOT_FINISH, "no cloud offer can finish its work within its max_runtime") \
    X(DEADLINE_SPOT, "its deadline needs the cloud now; spot capacity is available") \
    X(RECLAIMED, "requeued: a team under its quota took back the GPUs it borrowed") \
    X(PREDICTED_WAIT, "its predicted on-prem start is past its wait budget") \
    X(COMMITTED, "committed cloud capacity is free (paid used or idle)")
#define SPW_ENUM_REASON(a, s) SPW_REASON_##a,
typedef enum __attribute__((packed)) spw_reason {
    SPW_REASONS(SPW_ENUM_REASON) SPW_REASON_COUNT
} spw_reason_t;
const char *spw_reason_text(spw_reason_t r);

typedef struct spw_job spw_job_t;

/* Links the engine keeps for each job it holds; the caller never touches
 * them.  They belong to the engine from spw_engine_submit (or restore) to
 * the job's final state. */
typedef struct spw_job_links {
    spw_job_t *left, *right;    /* queue treap children */
    double min_est_s;           /* smallest est_runtime_s in this treap subtree */
    uint32_t *nodes;            /* nodes held by a multi-node job (owned by the engine) */
    double burst_at_s;          /* when the wait expires; INFINITY = never */
    double att_egress_usd;      /* egress charged to the current attempt */
    uint32_t prio;              /* treap heap priority (hash of order) */
    uint32_t cls;               /* demand class index */
    uint32_t run_idx;           /* index in the running heap (EASY only) */
    uint32_t multi_idx;         /* index in the engine's list of multi-node jobs */
    uint8_t held_list;          /* in the engine's list of held bursts */
    uint8_t swait;              /* in the engine's list of jobs waiting for
                                   spot or cloud capacity */
    uint8_t burst_why;          /* spw_reason_t of the pending expiry; 0 =
                                   the wait rule */
    uint32_t fair_idx;          /* index in its team's running list (core/fair.c) */
    double reclaim_at_s;        /* a reclaim preempts it at this time; 0 = none */
} spw_job_links_t;

/* What only some jobs ever write: a job's cloud placement, egress and
 * data transfer, interruptions, holds, and the daemon's provider bill.  A
 * trace holds millions of jobs and nearly all of them stay on-prem, so
 * these live in a side record the job points at, allocated on the first
 * write of a value other than the default (spw_job_rare_w); a job without
 * one reads the defaults (spw_job_rare).
 *
 * Ownership: the job owns its side record.  spw_job_clear frees it
 * (spw_job_reset keeps it, back at the defaults, for the next run); whoever
 * frees a job (the trace's spw_trace_free, the daemon's job free) calls
 * spw_job_clear first.  A shallow copy of a
 * job (memcpy of a trace) shares the pointer: the copy must set rare to
 * NULL (or the original forget it) before either is reset or cleared. */
typedef struct spw_job_rare {
    double egress_usd;          /* egress and cache storage, all attempts; 0 */
    double egress_gb;           /* data moved, all attempts, GB; 0 */
    double onprem_egress_usd;   /* the part of egress_usd paid to copy data into
                                   on-prem pools: outside every budget and cap; 0 */
    double transfer_s;          /* data transfer before the current attempt runs
                                   (included in start_s), seconds; 0 */
    double reserved_usd;        /* worst case the current cloud placement holds
                                   (compute + egress); 0 = none */
    double charge_s;            /* when the current cloud placement was made
                                   (its budget period); NAN = none */
    /* Interruptions (spw_engine_interrupt): */
    double done_s;              /* work kept from interrupted attempts (up to
                                   their last checkpoint), seconds; the current
                                   attempt has est/true runtime - done_s left,
                                   after the policy's restart overhead; 0 */
    double lost_s;              /* work lost to interruptions, seconds; 0 */
    double lost_gpu_s;          /* the same in GPU-seconds (GPUs it held); 0 */
    double spot_gpu_s;          /* paid spot GPU-seconds, every attempt; 0 */
    double ondemand_gpu_s;      /* paid on-demand GPU-seconds, every attempt; 0 */
    double bill_usd;            /* set by the caller, with billed = 1: the cloud
                                   compute this attempt was really billed (the
                                   daemon's provider bill), which settles it
                                   instead of the engine's own estimate; set
                                   before finish/requeue/cancel; 0 */
    uint32_t restarts;          /* attempts begun after an interruption or a
                                   move to spot (spw_engine_switches); 0 */
    uint32_t preemptions;       /* cloud attempts preempted; 0 */
    uint32_t failures;          /* on-prem attempts ended by a node failure; 0 */
    uint32_t held;              /* times a budget or cap held its burst; 0 */
    int32_t last_offer;         /* offer of the last preempted attempt (for
                                   recovery), -1 = none */
    uint8_t billed;             /* set by the caller: bill_usd is set; 0 */
} spw_job_rare_t;

struct spw_job {
    /* ---- set by the caller before spw_engine_submit ---- */
    const char *id;             /* borrowed; unique */
    double submit_s;            /* arrival time, seconds */
    double est_runtime_s;       /* runtime the engine plans with, seconds, >= 0 */
    uint32_t gpus;              /* GPUs wanted, > 0 */
    int32_t priority;           /* larger runs first under the priority order */
    uint64_t gpu_mask;          /* acceptable models (bits of fleet models); 0 = any */
    uint32_t gpus_per_node;     /* 0: one node, so in the cloud one instance with
                                   all its GPUs; N > 0: it may span nodes, in the
                                   cloud several instances of >= N GPUs each in
                                   one zone (on-prem a job bigger than a node
                                   always takes whole nodes) */
    uint32_t residency;         /* residency index + 1; 0 = none (its class may
                                   still name one) */
    double deadline_s;          /* absolute time it should end by; NAN = none */
    uint32_t order;             /* unique tie-break rank: equal keys run in this order */
    uint32_t team;              /* governance team index + 1; 0 = none */
    uint32_t jclass;            /* governance class index + 1; 0 = none */
    uint32_t data;              /* dataset index + 1; 0 = reads none */
    uint64_t labels;            /* governance label bits the job carries */
    double max_runtime_s;       /* stopped once it has run this long; 0 or NAN =
                                   the governance default; the cloud worst case */
    double checkpoint_interval_s; /* progress is saved every this many seconds
                                   of running; 0 = never: an interrupted job
                                   restarts from scratch; SPW_CKPT_CONTINUOUS
                                   = nothing is ever lost */
    uint8_t spot_mode;          /* spw_spot_mode_t; AUTO (0): as its spot
                                   policy decides */
    uint8_t spot_policy;        /* spw_spot_policy_t + 1; 0 = the policy's */
    /* ---- written by the engine ---- */
    spw_job_state_t state;      /* where the job is in its life */
    spw_reason_t reason;        /* why it was placed where it is */
    uint8_t spot;               /* the current cloud placement is on spot capacity */
    uint8_t by_residency;       /* residency alone kept it off the cloud */
    uint8_t by_budget;          /* a budget or cap kept it off the cloud for good
                                   (on_exhausted: onprem_only, or over a limit) */
    uint8_t stopped_max_run;    /* DONE only because its last attempt was
                                   stopped at its max runtime: unfinished
                                   (set by the world that ran it) */
    int32_t pool;               /* on-prem pool, -1 if none */
    int32_t node;               /* lowest node index held, -1 if none */
    uint32_t nnodes;            /* nodes held on-prem */
    uint32_t alloc_gpus;        /* GPUs held on-prem (whole nodes for a multi-node job) */
    int32_t offer;              /* cloud offer, -1 if none */
    uint32_t instances;         /* cloud instances held */
    double placed_s;            /* when the engine placed it */
    double start_s;             /* when it starts running (after boot in the cloud) */
    double end_s;               /* when it finished */
    double cost_usd;            /* settled cost of every attempt so far: amortised
                                   on-prem or cloud compute, plus egress */
    double speed;               /* work seconds per wall-clock second of the
                                   current placement: spw_fleet_speed of its
                                   GPU model (1 before any placement) */
    spw_job_links_t *l;         /* engine-private; NULL while the job is not
                                   in an engine (before submit, once final) */
    spw_job_rare_t *rare;       /* owned; NULL = every field at its default
                                   (read with spw_job_rare) */
};

/* The defaults a job without a side record reads. */
extern const spw_job_rare_t spw_job_rare_none;

/* j's rarely written fields, for reading: its side record or the defaults. */
static inline const spw_job_rare_t *spw_job_rare(const spw_job_t *j)
{
    return j->rare ? j->rare : &spw_job_rare_none;
}

/* Allocates j's side record, with the defaults (spw_job_rare_w's slow path). */
spw_job_rare_t *spw_job_rare_alloc(spw_job_t *j);

/* j's rarely written fields, for writing: allocated on first use.  A write
 * that may leave a value at its default (0 += 0) should test first, so a
 * job that never needs a side record does not get one. */
static inline spw_job_rare_t *spw_job_rare_w(spw_job_t *j)
{
    return j->rare ? j->rare : spw_job_rare_alloc(j);
}

/* Frees j's side record (the fields read their defaults again). */
void spw_job_clear(spw_job_t *j);
/* spw_job_clear of jobs[0 .. n). */
void spw_jobs_clear(spw_job_t *jobs, size_t n);
/* Copies n jobs from src to dst as memcpy does, but without their side
 * records (dst's read the defaults; src keeps its own). */
void spw_jobs_copy(spw_job_t *dst, const spw_job_t *src, size_t n);

/* Resets the engine-written fields so the same job can be submitted to a
 * fresh engine (the simulator replays one trace under several policies).
 * Its side record, if any, is kept with every field at its default (the
 * caller-set bill_usd and billed too). */
void spw_job_reset(spw_job_t *j);

#endif
