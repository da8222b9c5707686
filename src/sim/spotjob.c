/* spotjob.c: tick-by-tick replay of one deadline job on a spot availability
 * trace, and the sweep over random start offsets (see spotjob.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/spotjob.h"
#include "util/rng.h"

#define EPS_S 1e-6

int spw_spotjob_params_check(const spw_spotjob_params_t *p, spw_error_t *err)
{
    if (!(p->work_s > 0) || !isfinite(p->work_s))
        return spw_errorf(err, "the job's work must be a duration > 0 (got %g s)", p->work_s);
    if (!(p->deadline_s > 0) || !isfinite(p->deadline_s))
        return spw_errorf(err, "the deadline must be a duration > 0 (got %g s)", p->deadline_s);
    if (!(p->restart_overhead_s >= 0) || !isfinite(p->restart_overhead_s))
        return spw_errorf(err, "the restart overhead must be a duration >= 0 (got %g s)",
                          p->restart_overhead_s);
    if (p->checkpoint_interval_s != SPW_CKPT_CONTINUOUS &&
        (!(p->checkpoint_interval_s >= 0) || !isfinite(p->checkpoint_interval_s)))
        return spw_errorf(err, "the checkpoint interval must be a duration >= 0 (0 = restart "
                          "from scratch) or continuous (got %g s)", p->checkpoint_interval_s);
    if (!(p->spot_usd_per_h >= 0) || !isfinite(p->spot_usd_per_h) ||
        !(p->ondemand_usd_per_h >= 0) || !isfinite(p->ondemand_usd_per_h))
        return spw_errorf(err, "prices must be numbers >= 0 (spot %g, on-demand %g USD/h)",
                          p->spot_usd_per_h, p->ondemand_usd_per_h);
    return 0;
}

int spw_spotjob_run(const spw_spotjob_params_t *p, spw_spot_policy_t policy,
                    const spw_spot_trace_t *trace, uint64_t start_tick,
                    spw_spotjob_result_t *out, spw_error_t *err)
{
    spw_spotjob_result_t r;
    spw_spot_job_t job;
    spw_spot_view_t v = {SPW_SPOT_IDLE, 0, 0};
    double g, overhead_left_s = 0, run_base_s = 0, max_ticks;
    uint64_t k;

    if (spw_spotjob_params_check(p, err) < 0)
        return -1;
    if (!trace || trace->n == 0 || !(trace->gap_s > 0))
        return spw_errorf(err, "the spot trace is empty or has no tick length");
    if ((unsigned)policy >= SPW_SPOT_POLICY_COUNT)
        return spw_errorf(err, "unknown spot policy %d", (int)policy);
    g = trace->gap_s;
    job.work_s = p->work_s;
    job.deadline_s = p->deadline_s;
    job.restart_overhead_s = p->restart_overhead_s;
    job.checkpoint_interval_s = p->checkpoint_interval_s;
    job.step_s = g;
    memset(&r, 0, sizeof(r));
    r.infeasible = !spw_spot_feasible(&job);
    /* Every policy ends on demand once the slack is gone, so the work ends by
     * deadline + overhead + work + safety slack; far past that is a bug. */
    max_ticks = 4 * (p->deadline_s + p->work_s + spw_spot_safety_slack_s(&job)) / g + 16;
    if (max_ticks > 1e9)
        return spw_errorf(err, "%g s of work in ticks of %g s is more than 1e9 ticks to replay",
                          p->work_s, g);
    for (k = 0; v.done_s < p->work_s - EPS_S; k++) {
        if ((double)k > max_ticks)
            return spw_errorf(err, "the replay of %s did not end within %.0f ticks",
                              spw_spot_policy_name(policy), max_ticks);
        int avail = spw_spot_trace_at(trace, (int64_t)((start_tick + k) % trace->n)) > 0;
        if (v.inst == SPW_SPOT_SPOT && !avail) {
            /* The attempt began with run_base_s kept; what it made since is
             * kept up to its last checkpoint (all of it when continuous,
             * none of it, and nothing before it either, without checkpoints). */
            double kept = spw_ckpt_kept_s(p->checkpoint_interval_s, run_base_s,
                                          v.done_s - run_base_s);
            if (kept > v.done_s)  /* base + (done - base) may round up */
                kept = v.done_s;
            r.preemptions++;
            r.lost_s += v.done_s - kept;
            v.done_s = kept;
            v.inst = SPW_SPOT_IDLE;
            overhead_left_s = 0;
        }
        spw_spot_inst_t next = spw_spot_decide(policy, &job, &v, avail);
        /* A job without checkpoints cannot move without starting over, and
         * the policy's slack does not count a loss it chose: such a job stays
         * on the instance it runs on (this only stops uniform-progress from
         * leaving on demand for spot). */
        if (p->checkpoint_interval_s == 0 && v.inst != SPW_SPOT_IDLE && next != SPW_SPOT_IDLE)
            next = v.inst;
        if (next != v.inst) {
            /* A switch the policy chooses is a clean stop: the job saves its
             * state and resumes it on the next instance; only preemptions
             * lose work. */
            overhead_left_s = next == SPW_SPOT_IDLE ? 0 : p->restart_overhead_s;
            if (next != SPW_SPOT_IDLE)
                r.starts++;
            run_base_s = v.done_s;
            v.inst = next;
        }
        if (v.inst != SPW_SPOT_IDLE) {
            double ov = overhead_left_s < g ? overhead_left_s : g;
            double work = g - ov;
            if (work > p->work_s - v.done_s)
                work = p->work_s - v.done_s;
            overhead_left_s -= ov;
            v.done_s += work;
            if (v.inst == SPW_SPOT_SPOT) {
                r.spot_paid_s += ov + work;
                r.spot_work_s += work;
            } else {
                r.ondemand_paid_s += ov + work;
                r.ondemand_work_s += work;
            }
            if (v.done_s >= p->work_s - EPS_S) {
                r.finish_s = v.elapsed_s + ov + work;
                break;
            }
        }
        v.elapsed_s = (double)(k + 1) * g;
    }
    r.cost_usd = r.spot_paid_s / 3600 * p->spot_usd_per_h +
                 r.ondemand_paid_s / 3600 * p->ondemand_usd_per_h;
    r.deadline_met = r.finish_s <= p->deadline_s + EPS_S;
    *out = r;
    return 0;
}

/* Running sums for one policy. */
typedef struct acc {
    double spot_h, spot_h2;  /* sum and sum of squares of spot work hours */
    double od_h, od_h2;      /* the same for on-demand work hours */
    double cost, cost2;      /* the same for cost, USD */
    double spot_paid_h, od_paid_h, lost_h, preempt, starts, finish_h;  /* sums */
} acc_t;

static double sd(double sum, double sum2, double n)
{
    double m = sum / n, v = sum2 / n - m * m;
    return v > 0 ? sqrt(v) : 0;
}

int spw_spotjob_sweep(const spw_spotjob_params_t *p, const spw_spot_policy_t *policies,
                      size_t npolicies, const spw_spot_trace_t *traces, size_t ntraces,
                      size_t offsets, uint64_t seed, spw_spotjob_summary_t *out,
                      spw_error_t *err)
{
    acc_t *acc;
    spw_rng_t rng;

    if (spw_spotjob_params_check(p, err) < 0)
        return -1;
    if (npolicies == 0 || ntraces == 0 || offsets == 0)
        return spw_errorf(err, "a sweep needs at least one policy, trace and start offset");
    acc = spw_xcalloc(npolicies, sizeof(*acc));
    memset(out, 0, npolicies * sizeof(*out));
    spw_rng_seed(&rng, seed);
    for (size_t i = 0; i < ntraces; i++) {
        const spw_spot_trace_t *tr = &traces[i];
        if (tr->n == 0 || !(tr->gap_s > 0)) {
            spw_errorf(err, "spot trace %zu is empty or has no tick length", i + 1);
            goto error;
        }
        /* Starts from which the deadline window lies inside the trace. */
        double window = ceil(p->deadline_s / tr->gap_s) + 1;
        uint64_t nstarts = (double)tr->n > window ? tr->n - (uint64_t)window + 1 : tr->n;
        for (size_t j = 0; j < offsets; j++) {
            uint64_t start = spw_rng_below(&rng, nstarts);
            for (size_t q = 0; q < npolicies; q++) {
                spw_spotjob_result_t r;
                if (spw_spotjob_run(p, policies[q], tr, start, &r, err) < 0)
                    goto error;
                acc_t *a = &acc[q];
                double sh = r.spot_work_s / 3600, oh = r.ondemand_work_s / 3600;
                out[q].runs++;
                out[q].infeasible += r.infeasible != 0;
                out[q].missed += !r.infeasible && !r.deadline_met;
                a->spot_h += sh;
                a->spot_h2 += sh * sh;
                a->od_h += oh;
                a->od_h2 += oh * oh;
                a->cost += r.cost_usd;
                a->cost2 += r.cost_usd * r.cost_usd;
                a->spot_paid_h += r.spot_paid_s / 3600;
                a->od_paid_h += r.ondemand_paid_s / 3600;
                a->lost_h += r.lost_s / 3600;
                a->preempt += r.preemptions;
                a->starts += r.starts;
                a->finish_h += r.finish_s / 3600;
            }
        }
    }
    for (size_t q = 0; q < npolicies; q++) {
        const acc_t *a = &acc[q];
        double n = (double)out[q].runs;
        out[q].policy = policies[q];
        out[q].spot_work_h_mean = a->spot_h / n;
        out[q].spot_work_h_sd = sd(a->spot_h, a->spot_h2, n);
        out[q].ondemand_work_h_mean = a->od_h / n;
        out[q].ondemand_work_h_sd = sd(a->od_h, a->od_h2, n);
        out[q].cost_usd_mean = a->cost / n;
        out[q].cost_usd_sd = sd(a->cost, a->cost2, n);
        out[q].spot_paid_h_mean = a->spot_paid_h / n;
        out[q].ondemand_paid_h_mean = a->od_paid_h / n;
        out[q].lost_h_mean = a->lost_h / n;
        out[q].preemptions_mean = a->preempt / n;
        out[q].starts_mean = a->starts / n;
        out[q].finish_h_mean = a->finish_h / n;
    }
    free(acc);
    return 0;
error:
    free(acc);
    return -1;
}
