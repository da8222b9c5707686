/* plan.h: the capacity planner behind `spillway plan`: replays one trace over
 * a sweep of owned capacity (nodes of one pool) x wait policies, searches each
 * wait policy's parameter for a target mean or p90 wait, and picks a robust
 * setting (docs/roi.md).  Configurations run in parallel threads, each with its
 * own copy of the jobs (made once; every run resets only what the simulator
 * writes) and of the fleet it changes; the one thing shared is the run with
 * no wait of each node count (under the run's lock), and a search reuses
 * its own full runs.  Never prints; progress comes through a callback. */
#ifndef SPW_SIM_PLAN_H
#define SPW_SIM_PLAN_H

#include <stddef.h>

#include "core/model.h"
#include "sim/sim.h"
#include "util/error.h"

/* Which wait statistic the target bounds. */
typedef enum spw_plan_stat { SPW_PLAN_MEAN, SPW_PLAN_P90 } spw_plan_stat_t;

/* One configuration's answer. */
typedef struct spw_plan_result {
    uint32_t nodes;              /* nodes of the swept pool */
    uint64_t onprem_gpus;        /* all pools' GPUs with that many nodes */
    spw_wait_t wait;             /* the policy chosen (its parameter searched):
                                    the knife edge, the cheapest setting run
                                    that meets the target */
    int meets;                   /* its wait statistic is within the target */
    double param_lo, param_hi;   /* the flat region around the chosen parameter:
                                    every parameter there meets the target and
                                    costs within 2% of the chosen one (equal
                                    when the policy has no parameter) */
    double swing;                /* largest relative cost change when the
                                    chosen parameter moves by swing_frac either
                                    way (two real runs), >= 0 */
    int edge_breaks;             /* the chosen parameter x (1 + swing_frac)
                                    misses the target: a knife edge */
    double robust_param;         /* the robust setting: the largest searched
                                    parameter / (1 + swing_frac), so that it
                                    still meets the target when it moves by
                                    swing_frac either way (= param when the
                                    policy has none) */
    int robust_meets;            /* it and both moved settings meet the target */
    double robust_wait_s;        /* the targeted statistic at robust_param */
    double robust_tco_usd;       /* its price: the dearest TCO of it and its
                                    two moved settings */
    double sunk_usd;             /* capital of the owned nodes kept (the
                                    config's count or fewer) over the horizon:
                                    already spent; 0 with capex */
    double decide_usd;           /* tco_usd - sunk_usd: what the choice still
                                    costs from now on */
    double wait_s;               /* the targeted statistic, seconds */
    double wait_mean_s, wait_p90_s;
    double cloud_usd, owned_usd, owned_idle_usd, egress_usd;
    double commit_usd, commit_idle_usd; /* cloud commitments over the makespan,
                                    used or idle, and the idle part */
    double total_usd;            /* cloud + owned + committed + egress over the
                                    makespan */
    double makespan_s;
    double tco_usd;              /* over the horizon: owned_usd per second of the
                                    makespan, plus cloud and egress per second
                                    of the trace's arrivals (first to last
                                    submit), times horizon_s */
    double cost_per_useful_gpu_h;
    int frontier;                /* no other result is both cheaper and no
                                    slower (on the targeted statistic) */
    uint32_t sims;               /* simulator runs its search asked for (a run
                                    of wait 0 is shared by the configurations
                                    of one node count and counts in each; a
                                    search's probes may stop early) */
} spw_plan_result_t;

typedef struct spw_plan_opts {
    size_t pool;                 /* index of the pool whose nodes vary */
    const uint32_t *nodes;       /* node counts to try (0 = not owned) */
    size_t nnodes;
    const spw_wait_t *waits;     /* wait policies; a parameter of a kind that
                                    takes one is searched (its value is the
                                    upper end of the search) */
    size_t nwaits;
    spw_plan_stat_t stat;        /* the statistic the target bounds */
    double target_s;             /* target wait, seconds, > 0 */
    double horizon_s;            /* TCO horizon, seconds, > 0 */
    int threads;                 /* worker threads, >= 1 */
    double swing_frac;           /* the parameter move of the swing and the
                                    robust setting (0.10 = +-10%), > 0 */
    uint32_t owned_nodes;        /* nodes of the pool already owned (its count
                                    in the config): their capital is sunk */
    int capex;                   /* 1: nothing is owned yet, every node's
                                    capital counts (the question is what to
                                    buy) */
    void (*on_progress)(void *ctx, size_t done, size_t total);  /* from any
                                    thread, one call at a time; may be NULL */
    void *ctx;
    uint64_t *runs;              /* may be NULL: receives the simulator runs
                                    made (fewer than the results' sims: a run
                                    is shared or reused wherever it is the same
                                    simulation) */
    size_t part, nparts;         /* nparts > 1: plan only part `part` (0 ..
                                    nparts-1) of the configurations, those at
                                    positions k = part (mod nparts) of
                                    spw_plan_order's order (each result is
                                    the same as in a whole run); the others
                                    are left zeroed and the frontier is not
                                    marked (spw_plan_frontier does it once
                                    the parts are merged).  0 or 1: all */
} spw_plan_opts_t;

/* Runs the sweep: nnodes x nwaits configurations into out (caller's array
 * of that many, in row order nodes-major), the frontier marked.  The fleet,
 * policy and jobs are read only (each worker copies what it changes).
 * 0, or -1 with err (a simulator error, or no pool at index pool). */
int spw_plan_run(const spw_fleet_t *fleet, const spw_policy_t *policy, const spw_job_t *jobs,
                 const double *runtime_s, size_t njobs, const spw_plan_opts_t *opts,
                 spw_plan_result_t *out, spw_error_t *err);

/* The order the configurations are planned in, into order[0 .. nnodes x
 * nwaits): wait none first (its run is the searches' run at 0), then the
 * searched policies (many runs each, so no thread is left with one at the
 * end), then the rest.  Part p of n plans order[k] for k = p (mod n), so
 * every part gets its share of the dear ones. */
void spw_plan_order(const spw_plan_opts_t *opts, size_t *order);

/* Marks the frontier of res[0..n): frontier = 1 where no other result is
 * cheaper from now (decide_usd) and no slower (wait_s), one of them
 * strictly.  spw_plan_run does it for a whole run. */
void spw_plan_frontier(spw_plan_result_t *res, size_t n);

/* Index in res[0..n) of the cheapest (by decide_usd) result that meets the
 * target; -1 when none does. */
long spw_plan_best(const spw_plan_result_t *res, size_t n);

#endif
