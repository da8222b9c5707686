/* sim.h: trace-driven simulation of the engine on a hypothetical fleet.
 *
 * The simulator is one more "world" around src/core: an event heap ordered
 * by (time, sequence) replays arrivals and completions and calls the same
 * engine the daemon runs.  Same inputs give byte-identical results. */
#ifndef SPW_SIM_SIM_H
#define SPW_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/model.h"
#include "util/error.h"
#include "util/spot_trace.h"

/* One time-series sample: the state after every instant at or before t_s. */
typedef struct spw_sim_sample {
    double t_s;                  /* sample time, seconds */
    size_t queued;               /* jobs waiting */
    uint64_t onprem_busy_gpus;   /* on-prem GPUs held */
    uint64_t cloud_gpus;         /* cloud GPUs held (booting or running) */
    double cloud_usd_per_h;      /* cloud spend rate of running instances (boot is not billed) */
} spw_sim_sample_t;

typedef void (*spw_sim_sample_f)(void *ctx, const spw_sim_sample_t *s);
/* Called now and then with jobs submitted so far and in total. */
typedef void (*spw_sim_progress_f)(void *ctx, size_t done, size_t total);

/* Spot capacity of one cloud offer.  Offers with a spot price and no entry
 * have unlimited spot capacity and are never preempted. */
typedef struct spw_sim_spot {
    size_t offer;                   /* fleet offer index */
    const spw_spot_trace_t *trace;  /* instances available per tick, or NULL */
    double trace_start_s;           /* sim time at which the trace's tick 0
                                       begins (a start offset of X into the
                                       trace is -X); the trace repeats */
    double preempt_rate_per_h;      /* without a trace: each spot instance is
                                       preempted after an exponential time of
                                       this rate (per hour); 0 = never */
} spw_sim_spot_t;

/* One on-prem node failure: node `node` of pool `pool` is down from down_s
 * until up_s (sim seconds; up_s may be INFINITY). */
typedef struct spw_sim_failure {
    size_t pool;
    uint32_t node;
    double down_s, up_s;
} spw_sim_failure_t;

/* Capacity errors of one offer (cloud.capacity_errors): a share `rate` of
 * its acquisitions in a market is refused, ruling out `block` around it
 * for block_s (spw_engine_block), as a real cloud's InsufficientInstance
 * Capacity does; the job is placed again at once, elsewhere. */
typedef struct spw_sim_refusal {
    size_t offer;               /* index into fleet->offers */
    int market;                 /* 1 spot, 0 on demand, -1 both */
    double rate;                /* share of acquisitions refused, 0..1 */
    spw_block_t block;          /* what a refusal rules out (not JOB) */
    double block_s;             /* for how long, seconds, > 0 */
} spw_sim_refusal_t;

/* The world around the engine besides the jobs: spot capacity, capacity
 * errors and on-prem failures.  Everything borrowed for the call. */
typedef struct spw_sim_world {
    const spw_sim_spot_t *spot;     /* per offer, at most one entry each */
    size_t nspot;
    const spw_sim_failure_t *failures; /* in any order */
    size_t nfailures;
    const double *mtbf_s;           /* per pool (fleet->npools entries) mean
                                       time between failures of one node, or
                                       NULL; 0 or INFINITY = none */
    const double *mttr_s;           /* per pool mean time to repair; NULL = 0 */
    uint64_t seed;                  /* seeds preemption, failure and
                                       capacity-error draws */
    const spw_sim_refusal_t *refusals; /* in any order; several may name
                                       one offer (each draws) */
    size_t nrefusals;
} spw_sim_world_t;

typedef struct spw_sim_opts {
    double step_s;               /* time-series step in seconds; 0 = no samples */
    spw_sim_sample_f on_sample;  /* receives samples (may be NULL) */
    spw_sim_progress_f on_progress; /* may be NULL */
    void *ctx;                   /* passed to both callbacks */
    const spw_sim_world_t *world; /* spot capacity and failures; NULL = none */
    double give_up_wait_s;       /* > 0: stop as soon as the finished jobs prove
                                    that the wait statistic (mean, or p90 with
                                    give_up_p90) ends above this, and return 1
                                    with the summary unfilled (the planner's
                                    searches only need "above the target");
                                    0 = always run to the end */
    int give_up_p90;             /* the statistic give_up_wait_s bounds is the
                                    p90 wait (nearest rank), not the mean */
    int checked;                 /* 1: these jobs and runtimes already passed a
                                    run that did not fail (the planner's runs
                                    after the first): skip checking their
                                    order and values again */
} spw_sim_opts_t;

/* One team's results (spw_sim_summary_t.team). */
typedef struct spw_sim_team {
    size_t jobs;                 /* jobs of the team submitted */
    size_t jobs_held;            /* jobs a budget or cap held at least once */
    size_t jobs_rejected;        /* jobs rejected by a budget (on_exhausted: reject) */
    double cloud_usd;            /* cloud compute, settled */
    double onprem_usd;           /* amortised on-prem compute */
    double egress_usd;           /* data egress and cache storage */
    double onprem_egress_usd;    /* the part of egress_usd that copied data into
                                    on-prem pools: not under the team's cloud
                                    egress cap (egress_usd - this is) */
    double egress_gb;            /* data moved */
    double budget_use;           /* max over budget periods of the cloud + egress
                                    spend charged to the period / the budget;
                                    0 without a budget */
    double worst_period_usd;     /* cloud + egress charged to that period (the
                                    largest period's when there is no budget) */
    /* Fair share (docs/fairshare.md): over the team's jobs done */
    size_t jobs_done;            /* jobs of the team that ended done */
    double wait_mean_s, wait_p90_s; /* submit to first start */
    double jct_mean_s;           /* submit to end */
    size_t reclaimed;            /* its attempts preempted by a reclaim */
    double rho;                  /* Themis finish-time fairness: jct_mean_s
                                    over the team's mean JCT alone on 1/N of
                                    the pools (spw_sim_fairness); 0 = not
                                    computed */
} spw_sim_team_t;

typedef struct spw_sim_summary {
    size_t jobs;                 /* jobs submitted to the engine */
    size_t jobs_onprem;          /* jobs that ran on-prem */
    size_t jobs_cloud;           /* jobs that ran in the cloud */
    size_t jobs_unschedulable;   /* jobs nothing could ever run */
    size_t jobs_backfilled;      /* on-prem starts made by EASY backfill */
    double cloud_cost_usd;       /* cloud compute, on demand and spot, of every
                                    attempt (a failed job's too) */
    double onprem_cost_usd;      /* amortised cost of the on-prem GPU-hours used
                                    (every attempt) */
    double owned_cost_usd;       /* what owning the on-prem pools cost over the
                                    makespan, every GPU, used or not
                                    (spw_pool_owned_cost): owned_used_usd +
                                    owned_idle_usd */
    double owned_used_usd;       /* its share held by jobs (about onprem_cost_usd) */
    double owned_idle_usd;       /* its share that stood idle */
    double commit_cost_usd;      /* what the cloud commitments cost over the
                                    makespan, every committed GPU-hour, used or
                                    not (spw_commit_cost_usd): commit_used_usd
                                    + commit_idle_usd; 0 without commitments */
    double commit_used_usd;      /* its share jobs held, at the committed rate */
    double commit_idle_usd;      /* its share that stood idle */
    double commit_gpu_hours;     /* committed GPU-hours jobs held (whole
                                    instances, data transfer included; not
                                    in cloud_gpu_hours) */
    double useful_gpu_hours;     /* work of the jobs done: GPUs x runtime, without
                                    lost work, overhead, boot or transfers, nor
                                    jobs stopped at their max runtime */
    double stopped_gpu_hours;    /* GPU-hours the last attempts of jobs stopped
                                    at their max runtime ran: paid, unfinished */
    double cost_per_useful_gpu_h;/* (cloud + owned + committed + egress) /
                                    useful_gpu_hours;
                                    0 when no job was done */
    double cloud_gpu_hours;      /* paid cloud GPU-hours (whole instances, data
                                    transfer included): spot + on demand */
    double onprem_gpu_hours;     /* on-prem GPU-hours held by jobs, from each
                                    attempt's start to its end */
    double wait_mean_s, wait_p50_s, wait_p90_s, wait_p99_s;  /* submit to the
                                    first start, over jobs done */
    double jct_mean_s, jct_p50_s, jct_p90_s, jct_p99_s;      /* submit to end */
    double onprem_utilization;   /* onprem_gpu_hours / (on-prem GPUs x makespan), 0..1 */
    size_t queue_max;            /* most jobs waiting at once */
    double makespan_s;           /* last end minus first submit */
    uint64_t onprem_gpus;        /* size of the on-prem fleet */
    uint64_t events;             /* instants processed */
    uint64_t passes;             /* scheduling passes the engine ran */
    /* Governance: always filled; meaningful when gov is 1.  Costs above
     * leave egress out: the total is cloud + on-prem + egress. */
    int gov;                     /* some budget, cap, rule, residency or dataset is set */
    size_t nteams;               /* teams in the config */
    spw_sim_team_t team[SPW_GOV_MAX_TEAMS + 1]; /* [0] = jobs of no configured
                                                   team; [k] = config team k-1 */
    double egress_usd, egress_gb;/* all jobs */
    size_t jobs_held;            /* jobs a budget or cap held at least once */
    size_t jobs_rejected;        /* jobs rejected by a budget */
    size_t jobs_never_ran;       /* jobs still held when nothing could change any
                                    more (their worst case never fits) */
    size_t jobs_onprem_by_residency; /* ran on-prem because their residency
                                        allows no cloud region */
    size_t jobs_onprem_only_budget;  /* ran on-prem after a budget or cap kept it off
                                        them, in a team with on_exhausted:
                                        onprem_only */
    size_t jobs_stopped_max_runtime; /* stopped at their max runtime */
    double peak_cloud_usd_per_h; /* most cloud spend rate held at once (ledger) */
    double peak_cloud_gpus;      /* most cloud GPUs held at once (ledger) */
    /* Spot, deadlines and failures (always filled). */
    double spot_cost_usd;        /* the spot part of cloud_cost_usd */
    double spot_gpu_hours;       /* paid spot GPU-hours (part of cloud_gpu_hours) */
    double ondemand_gpu_hours;   /* paid on-demand GPU-hours */
    size_t jobs_spot;            /* jobs that ran on spot at least once */
    size_t jobs_ran_cloud;       /* jobs placed in the cloud at least once
                                    (jobs_cloud counts by the last placement) */
    size_t preemptions;          /* spot attempts preempted */
    size_t capacity_errors;      /* cloud acquisitions refused (world
                                    refusals), each re-placed at once */
    size_t node_failures;        /* on-prem node failures (events) */
    size_t jobs_interrupted_by_failure; /* attempts ended by a node failure */
    size_t restarts;             /* interruptions and moves to spot that put
                                    a job back in the queue (its restarts in
                                    --jobs-out, summed), whether or not it
                                    started again */
    size_t switches_to_spot;     /* on-demand attempts stopped to move to spot
                                    (Uniform Progress's hysteresis) */
    size_t reclaims;             /* on-prem attempts preempted by a reclaim
                                    for a team under its quota */
    double lost_gpu_hours;       /* work lost to interruptions, GPU-hours */
    size_t jobs_failed;          /* jobs given up after max_restarts */
    size_t jobs_deadline;        /* jobs with a deadline */
    size_t deadline_met;         /* ... that ended by it (within 1 µs) */
    size_t deadline_missed;      /* ... feasible ones that did not */
    size_t deadline_infeasible;  /* ... whose deadline is before submit +
                                    runtime (+ restart overhead): not counted
                                    as met or missed */
} spw_sim_summary_t;

/* Replays jobs[0..n) (sorted by submit_s, then order) whose true runtimes are
 * runtime_s[0..n) on the fleet under the policy.  Jobs are reset first and
 * hold their results afterwards.  The fleet's governance applies: a job
 * rejected by a budget ends unplaced; a placed job runs min(its runtime,
 * spw_engine_max_runtime); spend is charged to the budget period (calendar
 * from fleet->gov.origin_s) of its placement.  When nothing is left to
 * arrive or run and held jobs have not fitted for 40 days of budget
 * periods, they never will: the run stops (jobs_never_ran).
 *
 * Attempts: every placement is an attempt that starts running at
 * j->start_s, pays policy->restart_overhead_s without progress, then runs
 * its true runtime less the progress kept from interrupted attempts
 * (j->done_s).  The world (opts->world) interrupts attempts: an offer's
 * spot capacity follows its trace, and when it falls below the spot
 * instances held there, whole jobs go, newest placement first; without a
 * trace each spot instance is preempted after an exponential time; a node
 * failure (listed, or drawn from the pool's MTBF and MTTR) ends every
 * attempt holding the node.  Overlapping failures of one node merge; a
 * listed failure that began before the first submission is in force from
 * it.  The world stops with the last job: repeating traces and failure
 * processes add nothing after it.  Returns 0, 1 when it gave up early
 * (opts->give_up_wait_s: *out is then zeroed but for nothing), or -1 with
 * err (also for a world that names offers, pools or nodes the fleet
 * lacks). */
int spw_sim_run(const spw_fleet_t *fleet, const spw_policy_t *policy,
                spw_job_t *jobs, const double *runtime_s, size_t n,
                const spw_sim_opts_t *opts, spw_sim_summary_t *out, spw_error_t *err);

/* Themis's finish-time fairness for each of the N teams with jobs in a
 * finished run (out->team[k].jobs > 0): replays each team's jobs alone on
 * its own 1/N of every pool (nodes rounded, at least one), with quotas
 * off, and sets out->team[k].rho to the shared run's mean JCT over that
 * one.  Returns 0, or -1 with err. */
int spw_sim_fairness(const spw_fleet_t *fleet, const spw_policy_t *policy,
                     const spw_job_t *jobs, const double *runtime_s, size_t n,
                     spw_sim_summary_t *out, spw_error_t *err);

/* Value at quantile q (0..1) of v[0..n), nearest-rank; reorders v. */
double spw_quantile(double *v, size_t n, double q);

#endif
