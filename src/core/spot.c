/* spot.c: the spot / on-demand / idle decision rules (see spot.h and
 * docs/spot.md for the paper's definitions and where this code had to choose). */
#include <math.h>
#include <string.h>

#include "core/spot.h"

/* Progress within this many seconds of the work counts as done, so that
 * floating-point dust never buys one more step. */
#define SPW_SPOT_EPS_S 1e-6

double spw_ckpt_kept_s(double checkpoint_interval_s, double done_s, double run_s)
{
    if (!(run_s > 0))
        run_s = 0;
    if (checkpoint_interval_s < 0)
        return done_s + run_s;
    if (checkpoint_interval_s == 0)
        return 0;
    return done_s + floor(run_s / checkpoint_interval_s) * checkpoint_interval_s;
}

double spw_ckpt_max_loss_s(double checkpoint_interval_s, double work_s)
{
    if (checkpoint_interval_s < 0)
        return 0;
    if (checkpoint_interval_s == 0 || checkpoint_interval_s > work_s)
        return work_s;
    return checkpoint_interval_s;
}

double spw_spot_safety_slack_s(const spw_spot_job_t *job)
{
    double d = job->restart_overhead_s;
    double step = job->step_s > d ? job->step_s : d;
    return d + step + spw_ckpt_max_loss_s(job->checkpoint_interval_s, job->work_s);
}

int spw_spot_feasible(const spw_spot_job_t *job)
{
    return job->restart_overhead_s + job->work_s <= job->deadline_s + SPW_SPOT_EPS_S;
}

/* ep(t) = t * C(0) / R(0): the progress a job spreading its work evenly up to
 * the deadline has made at time t (the paper's equation 5). */
static double expected_progress(const spw_spot_job_t *job, double t_s)
{
    return t_s * job->work_s / job->deadline_s;
}

spw_spot_inst_t spw_spot_decide(spw_spot_policy_t policy, const spw_spot_job_t *job,
                                const spw_spot_view_t *view, int spot_available)
{
    double left_s = job->work_s - view->done_s;        /* C(t) */
    double time_left_s = job->deadline_s - view->elapsed_s;  /* R(t) */
    spw_spot_inst_t inst = view->inst;

    /* Thrifty Rule: nothing left to do, hold nothing. */
    if (left_s <= SPW_SPOT_EPS_S)
        return SPW_SPOT_IDLE;
    if (policy == SPW_SPOT_POLICY_ONDEMAND)
        return SPW_SPOT_ONDEMAND;
    if (inst == SPW_SPOT_SPOT && !spot_available)
        inst = SPW_SPOT_IDLE;
    /* Exploitation Rule: stay on a spot instance until it is preempted. */
    if (inst == SPW_SPOT_SPOT)
        return SPW_SPOT_SPOT;
    /* Safety Net Rule: without the slack to survive one more change, run on
     * demand.  On demand R(t) - C(t) never grows, so once this fires it holds
     * until the end: "switch to on-demand and stay on it until the end". */
    if (time_left_s - left_s < spw_spot_safety_slack_s(job))
        return SPW_SPOT_ONDEMAND;
    if (policy == SPW_SPOT_POLICY_GREEDY) {
        /* Greedy reaches on-demand only through the Safety Net. */
        if (inst == SPW_SPOT_ONDEMAND)
            return SPW_SPOT_ONDEMAND;
        return spot_available ? SPW_SPOT_SPOT : SPW_SPOT_IDLE;
    }
    /* Uniform Progress. */
    if (inst == SPW_SPOT_ONDEMAND) {
        /* "Switch to on-demand and stay on it": on demand is left only for
         * a spot instance (Figure 10b; the authors' simulator keeps the
         * on-demand VM while no spot is available), and, by Hysteresis, only
         * once cp(t) >= ep(t + 2d). */
        if (spot_available &&
            view->done_s >= expected_progress(job, view->elapsed_s + 2 * job->restart_overhead_s))
            return SPW_SPOT_SPOT;
        return SPW_SPOT_ONDEMAND;
    }
    /* Taking Risks: spot whenever it is available, even when behind. */
    if (spot_available)
        return SPW_SPOT_SPOT;
    /* Uniform Progress rule: idle and behind, catch up on demand. */
    if (view->done_s < expected_progress(job, view->elapsed_s))
        return SPW_SPOT_ONDEMAND;
    return SPW_SPOT_IDLE;
}

static const char *const policy_names[] = {
#define SPW_X(id, name) [id] = name,
    SPW_SPOT_POLICIES(SPW_X)
#undef SPW_X
};

static const char *const inst_names[] = {
#define SPW_X(id, name) [id] = name,
    SPW_SPOT_INSTS(SPW_X)
#undef SPW_X
};

const char *spw_spot_policy_name(spw_spot_policy_t p)
{
    return (unsigned)p < SPW_SPOT_POLICY_COUNT ? policy_names[p] : "?";
}

const char *spw_spot_inst_name(spw_spot_inst_t i)
{
    return (unsigned)i < SPW_SPOT_INST_COUNT ? inst_names[i] : "?";
}

int spw_spot_policy_parse(const char *s, spw_spot_policy_t *out, spw_error_t *err)
{
    for (int p = 0; p < SPW_SPOT_POLICY_COUNT; p++) {
        if (strcmp(s, policy_names[p]) == 0) {
            *out = (spw_spot_policy_t)p;
            return 0;
        }
    }
    return spw_errorf(err, "unknown spot policy '%s': use ondemand, greedy or uniform-progress",
                      s);
}
