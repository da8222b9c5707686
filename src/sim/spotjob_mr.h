/* spotjob_mr.h: replays one deadline job across several regions' spot
 * traces of the same days (core/spot_mr.h), and sweeps random start offsets
 * comparing single-region policies in each region, the multi-region policy
 * and the omniscient multi-region optimum. */
#ifndef SPW_SIM_SPOTJOB_MR_H
#define SPW_SIM_SPOTJOB_MR_H

#include <stddef.h>
#include <stdint.h>

#include "core/spot_mr.h"
#include "util/spot_trace.h"
#include "util/error.h"

/* One replay of the multi-region policy. */
typedef struct spw_spotjob_mr_result {
    double spot_paid_s;      /* time paid on spot, overheads included */
    double ondemand_paid_s;  /* time paid on demand, overheads included */
    double egress_usd;       /* moves times the egress price */
    double cost_usd;         /* instances at their regions' prices, plus egress */
    double finish_s;         /* when the work was done, after the job's start */
    unsigned preemptions;    /* spot instances taken away while the job ran on them */
    unsigned starts;         /* instance starts */
    unsigned moves;          /* starts in another region than the job's state's */
    int deadline_met;        /* finish_s <= deadline_s */
} spw_spotjob_mr_result_t;

/* Replays j (spw_spot_mr_check must accept it) under policy on
 * avail[r][0 .. nsteps): steps 0 .. past - 1 are history before the job's
 * start (the policy sees each region's streak through them, and its share of
 * steps up over the last `past` steps); the job starts at step `past`, and
 * the rest must cover the whole replay.  Returns 0 with *out filled, or -1
 * with err. */
int spw_spotjob_mr_run(const spw_spot_mr_job_t *j, spw_spot_policy_t policy,
                       const uint8_t *const *avail, size_t nsteps, size_t past,
                       spw_spotjob_mr_result_t *out, spw_error_t *err);

/* History a sweep gives the policy: the day before each start. */
#define SPW_SPOTJOB_MR_HISTORY_S (24 * 3600.0)

/* What a row of the comparison replays. */
typedef enum spw_spotjob_mr_kind {
    SPW_SPOTJOB_MR_SINGLE,   /* a single-region policy in one region (sim/spotjob.h) */
    SPW_SPOTJOB_MR_MULTI,    /* the multi-region policy */
    SPW_SPOTJOB_MR_OPTIMUM,  /* the omniscient multi-region optimum */
} spw_spotjob_mr_kind_t;

/* One row of the comparison: means over every run. */
typedef struct spw_spotjob_mr_row {
    spw_spotjob_mr_kind_t kind;  /* what was replayed */
    spw_spot_policy_t policy;    /* its policy (not for the optimum) */
    int region;                  /* SINGLE: the region's index; else -1 */
    size_t runs;                 /* replays */
    size_t missed;               /* replays that missed the deadline */
    double cost_usd_mean, cost_usd_sd;  /* cost per run, egress included */
    double spot_paid_h_mean;     /* hours paid on spot (not for the optimum) */
    double ondemand_paid_h_mean; /* hours paid on demand (not for the optimum) */
    double egress_usd_mean;      /* egress per run (not for the optimum) */
    double moves_mean;           /* moves to another region per run */
    double preemptions_mean;     /* preemptions per run */
} spw_spotjob_mr_row_t;

/* Rows of a sweep over npolicies policies and j->nregions regions: each
 * policy in each region alone, then each policy across the regions, then
 * the optimum. */
#define SPW_SPOTJOB_MR_ROWS(npolicies, nregions) ((npolicies) * ((nregions) + 1) + 1)

/* traces[r] is region r's trace, every one with j->job.step_s as its tick
 * (spw_spot_trace_coarsen) and tick 0 at the same moment; the sweep uses
 * the ticks they all have.  Draws `offsets` start ticks as spw_spotjob_sweep
 * does and replays every row from each.  Fills out[0 ..
 * SPW_SPOTJOB_MR_ROWS).  Returns 0, or -1 with err (a job that even on
 * demand from the start cannot finish by its deadline included). */
int spw_spotjob_mr_sweep(const spw_spot_mr_job_t *j, const spw_spot_policy_t *policies,
                         size_t npolicies, const spw_spot_trace_t *traces, size_t offsets,
                         uint64_t seed, spw_spotjob_mr_row_t *out, spw_error_t *err);

#endif
