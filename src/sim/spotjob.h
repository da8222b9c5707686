/* spotjob.h: replays one deadline job on a spot availability trace under a
 * spot policy (core/spot.h), and sweeps many random start offsets: the
 * single-job experiment of "Can't Be Late" (Wu et al., NSDI'24). */
#ifndef SPW_SIM_SPOTJOB_H
#define SPW_SIM_SPOTJOB_H

#include <stddef.h>
#include <stdint.h>

#include "core/spot.h"
#include "util/spot_trace.h"
#include "util/error.h"

/* The job and the prices. */
typedef struct spw_spotjob_params {
    double work_s;                /* computation the job needs, > 0 */
    double deadline_s;            /* deadline after the job's start, > 0 */
    double restart_overhead_s;    /* paid time without progress per instance start, >= 0 */
    double checkpoint_interval_s; /* SPW_CKPT_CONTINUOUS: a preemption loses
                                     nothing (the paper's model); > 0: progress
                                     is saved every this many seconds of it, a
                                     preemption loses what came after the last
                                     save; 0: never saved, a preemption
                                     restarts the work from scratch */
    double spot_usd_per_h;        /* spot price, >= 0 */
    double ondemand_usd_per_h;    /* on-demand price, >= 0 */
} spw_spotjob_params_t;

/* One replay. */
typedef struct spw_spotjob_result {
    double spot_work_s;      /* progress made on spot, lost progress included */
    double ondemand_work_s;  /* progress made on demand */
    double spot_paid_s;      /* time paid on spot: work plus restart overheads */
    double ondemand_paid_s;  /* time paid on demand: work plus restart overheads */
    double lost_s;           /* progress lost to preemptions (0 when continuous) */
    double cost_usd;         /* spot_paid_s and ondemand_paid_s times their prices */
    double finish_s;         /* when the work was done, after the job's start */
    unsigned preemptions;    /* spot instances taken away while the job ran on them */
    unsigned starts;         /* instance starts (the first, restarts and switches) */
    int deadline_met;        /* finish_s <= deadline_s */
    int infeasible;          /* even on demand from the start misses the deadline */
} spw_spotjob_result_t;

/* Checks p (checkpoint_interval_s is >= 0 or SPW_CKPT_CONTINUOUS): 0, or -1
 * with err saying which value is wrong. */
int spw_spotjob_params_check(const spw_spotjob_params_t *p, spw_error_t *err);

/* Replays the job from trace tick start_tick (the trace repeats past its end)
 * until the work is done; spot is available in a tick whose count is > 0.
 * A preemption keeps spw_ckpt_kept_s of the progress; a switch the policy
 * makes itself (uniform-progress leaving on demand for spot) is a clean stop
 * that carries all progress over, and a job without checkpoints (interval 0)
 * makes none: it stays on the instance it runs on.  Progress adds up:
 * spot_work_s + ondemand_work_s - lost_s = work_s.
 * The trace is borrowed for the call.  Returns 0 with *out filled, or -1 with
 * err (bad parameters, or a replay that does not end) and *out untouched. */
int spw_spotjob_run(const spw_spotjob_params_t *p, spw_spot_policy_t policy,
                    const spw_spot_trace_t *trace, uint64_t start_tick,
                    spw_spotjob_result_t *out, spw_error_t *err);

/* Aggregate over many replays of one policy.  Means and standard deviations
 * (population) are over every run, infeasible ones included. */
typedef struct spw_spotjob_summary {
    spw_spot_policy_t policy;  /* the policy summarised */
    size_t runs;               /* replays */
    size_t infeasible;         /* replays whose deadline no policy can meet */
    size_t missed;             /* feasible replays that missed the deadline */
    double spot_work_h_mean, spot_work_h_sd;          /* hours of progress on spot */
    double ondemand_work_h_mean, ondemand_work_h_sd;  /* hours of progress on demand */
    double spot_paid_h_mean;      /* hours paid on spot, overheads included */
    double ondemand_paid_h_mean;  /* hours paid on demand, overheads included */
    double lost_h_mean;           /* hours of progress lost to preemptions */
    double cost_usd_mean, cost_usd_sd;  /* cost per run */
    double preemptions_mean;      /* preemptions per run */
    double starts_mean;           /* instance starts per run */
    double finish_h_mean;         /* hours from start to the end of the work */
} spw_spotjob_summary_t;

/* Replays every policy in policies[0 .. npolicies) from `offsets` random
 * start ticks per trace (the same starts for every policy), drawn with the
 * seeded generator: uniform over the ticks from which the whole deadline
 * window fits in the trace, or over the whole trace when it is shorter than
 * the window.  Fills out[0 .. npolicies).  Traces are borrowed.  Returns 0,
 * or -1 with err and out unspecified. */
int spw_spotjob_sweep(const spw_spotjob_params_t *p, const spw_spot_policy_t *policies,
                      size_t npolicies, const spw_spot_trace_t *traces, size_t ntraces,
                      size_t offsets, uint64_t seed, spw_spotjob_summary_t *out,
                      spw_error_t *err);

#endif
