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

typedef struct spw_sim_opts {
    double step_s;               /* time-series step in seconds; 0 = no samples */
    spw_sim_sample_f on_sample;  /* receives samples (may be NULL) */
    spw_sim_progress_f on_progress; /* may be NULL */
    void *ctx;                   /* passed to both callbacks */
} spw_sim_opts_t;

typedef struct spw_sim_summary {
    size_t jobs;                 /* jobs submitted to the engine */
    size_t jobs_onprem;          /* jobs that ran on-prem */
    size_t jobs_cloud;           /* jobs that ran in the cloud */
    size_t jobs_unschedulable;   /* jobs nothing could ever run */
    size_t jobs_backfilled;      /* on-prem starts made by EASY backfill */
    double cloud_cost_usd;       /* on-demand cloud compute */
    double onprem_cost_usd;      /* amortised cost of the on-prem GPU-hours used */
    double cloud_gpu_hours;      /* paid cloud GPU-hours (whole instances) */
    double onprem_gpu_hours;     /* on-prem GPU-hours held by jobs */
    double wait_mean_s, wait_p50_s, wait_p90_s, wait_p99_s;  /* submit to running */
    double jct_mean_s, jct_p50_s, jct_p90_s, jct_p99_s;      /* submit to end */
    double onprem_utilization;   /* onprem_gpu_hours / (on-prem GPUs x makespan), 0..1 */
    size_t queue_max;            /* most jobs waiting at once */
    double makespan_s;           /* last end minus first submit */
    uint64_t onprem_gpus;        /* size of the on-prem fleet */
    uint64_t events;             /* instants processed */
    uint64_t passes;             /* scheduling passes the engine ran */
} spw_sim_summary_t;

/* Replays jobs[0..n) (sorted by submit_s, then order) whose true runtimes are
 * runtime_s[0..n) on the fleet under the policy.  Jobs are reset first and
 * hold their results afterwards.  Returns 0, or -1 with err. */
int spw_sim_run(const spw_fleet_t *fleet, const spw_policy_t *policy,
                spw_job_t *jobs, const double *runtime_s, size_t n,
                const spw_sim_opts_t *opts, spw_sim_summary_t *out, spw_error_t *err);

/* Value at quantile q (0..1) of v[0..n), nearest-rank; reorders v. */
double spw_quantile(double *v, size_t n, double q);

#endif
