/* spot_mr.h: a deadline job that may hop between regions for spot capacity
 * (multi-region Can't Be Late): the policy's per-step choice of instance and
 * region, and the omniscient optimum over known availability by dynamic
 * programming, to measure the policy against.  Pure functions: no clock, no
 * I/O; docs/spot.md ("Multi-region spot") gives the model and the figures.
 *
 * The model, shared by the policy's replay (sim/spotjob_mr.h) and the optimum:
 * time runs in whole steps of step_s; every instance start pays the restart
 * overhead (a whole number of steps) without progress; a step on a running
 * instance makes step_s of progress; a preemption loses nothing (continuous
 * checkpoints, the paper's model); a start in another region than the one
 * that holds the job's state moves that state there and pays egress_usd (the
 * first start pays none: the input is where the job needs it). */
#ifndef SPW_CORE_SPOT_MR_H
#define SPW_CORE_SPOT_MR_H

#include <stddef.h>
#include <stdint.h>

#include "core/spot.h"
#include "util/error.h"

/* The most regions a job may hop between. */
#define SPW_SPOT_MR_MAX_REGIONS 32

/* Prices in one region. */
typedef struct spw_spot_region {
    double spot_usd_per_h;      /* spot price there, >= 0 */
    double ondemand_usd_per_h;  /* on-demand price there, >= 0 */
} spw_spot_region_t;

/* The job, its regions and the price of a move. */
typedef struct spw_spot_mr_job {
    spw_spot_job_t job;                 /* work, deadline, overhead and step, all
                                           seconds; checkpoints must be continuous */
    const spw_spot_region_t *regions;   /* borrowed; nregions entries */
    size_t nregions;                    /* 1 .. SPW_SPOT_MR_MAX_REGIONS */
    double egress_usd;                  /* USD to move the job's state (checkpoint,
                                           data) to another region, >= 0 */
} spw_spot_mr_job_t;

/* Where the job stands when a decision is due. */
typedef struct spw_spot_mr_view {
    spw_spot_inst_t inst;  /* instance held now; a preempted spot is IDLE */
    int region;            /* region of that instance, or where the job's state is
                              when idle; -1 before the first start */
    double elapsed_s;      /* t: time since the job's start */
    double done_s;         /* cp(t): progress kept, 0 .. work_s */
} spw_spot_mr_view_t;

/* A decision: the instance for the next step and its region (-1 with IDLE). */
typedef struct spw_spot_mr_choice {
    spw_spot_inst_t inst;  /* instance to hold during the next step */
    int region;            /* its region; the state's region is kept when IDLE */
} spw_spot_mr_choice_t;

/* The multi-region policy: `policy` (greedy or uniform-progress, the rules of
 * spw_spot_decide) decides idle / spot / on-demand as if one region offered
 * spot whenever any does, so its Safety Net, and with it the deadline, holds
 * as in one region.  Then:
 * - an idle job whose state's region has lost its spot waits for it (ski
 *   rental) while the hours it has been down there, times that region's
 *   on-demand price over its spot price, are below egress_usd: it waits no
 *   longer than a move is worth, valuing slack at the on-demand premium;
 * - spot goes to the available region that costs least for the rest of the
 *   work, egress of a move included (ties: the larger up_share, then the
 *   longer streak, then the lowest index); on demand goes to the cheapest
 *   region the same way; a job keeps the instance it holds while the policy
 *   keeps its kind.
 * avail[r] != 0: spot is available in region r during the next step;
 * streak_steps[r]: steps, this one included, that region r has been in its
 * present state (up or down), what anyone watching the regions knows; NULL
 * turns off the waiting and that tie rule; up_share[r]: the share of recent
 * steps region r had spot (NULL: not used).  Never returns SPOT in a region
 * without spot, and returns IDLE only where `policy` alone could idle. */
spw_spot_mr_choice_t spw_spot_mr_decide(spw_spot_policy_t policy, const spw_spot_mr_job_t *j,
                                        const spw_spot_mr_view_t *view, const uint8_t *avail,
                                        const uint32_t *streak_steps, const double *up_share);

/* Checks j: regions and prices, egress, continuous checkpoints, and that the
 * work, the overhead and the deadline are whole numbers of steps (the caller
 * rounds them; see spw_spot_mr_round).  0, or -1 with err. */
int spw_spot_mr_check(const spw_spot_mr_job_t *j, spw_error_t *err);

/* Rounds a job onto its step grid: work and overhead up, the deadline down,
 * to whole steps. */
void spw_spot_mr_round(spw_spot_job_t *job);

/* The omniscient optimum: the least cost (USD) of finishing the job by its
 * deadline when every region's availability is known in advance: avail[r][k]
 * != 0 when spot is up in region r during step k, for k < nsteps, nsteps >=
 * deadline / step.  Any strategy on the step grid is allowed (start, stop and
 * move at any step, spot only while up, on demand always), so this is a
 * lower bound for every policy replayed in the same model.  Returns 0 with
 * *cost_usd set, 1 when no strategy meets the deadline (*cost_usd untouched),
 * or -1 with err (a job spw_spot_mr_check refuses). */
int spw_spot_mr_optimum(const spw_spot_mr_job_t *j, const uint8_t *const *avail,
                        size_t nsteps, double *cost_usd, spw_error_t *err);

#endif
