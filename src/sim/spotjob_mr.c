/* spotjob_mr.c: step-by-step replay of one deadline job across regions, and
 * the sweep that compares it with one region and with the optimum (see
 * spotjob_mr.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/spotjob.h"
#include "sim/spotjob_mr.h"
#include "util/rng.h"

#define EPS_S 1e-6

int spw_spotjob_mr_run(const spw_spot_mr_job_t *j, spw_spot_policy_t policy,
                       const uint8_t *const *avail, size_t nsteps, size_t past,
                       spw_spotjob_mr_result_t *out, spw_error_t *err)
{
    double share[SPW_SPOT_MR_MAX_REGIONS];
    spw_spotjob_mr_result_t r;
    spw_spot_mr_view_t v = {SPW_SPOT_IDLE, -1, 0, 0};
    uint8_t now[SPW_SPOT_MR_MAX_REGIONS];
    uint32_t streak[SPW_SPOT_MR_MAX_REGIONS] = {0};  /* steps up, or down, so far */
    const double g = j->job.step_s, work_s = j->job.work_s;
    double overhead_left_s = 0;

    if (spw_spot_mr_check(j, err) < 0)
        return -1;
    if ((unsigned)policy >= SPW_SPOT_POLICY_COUNT)
        return spw_errorf(err, "unknown spot policy %d", (int)policy);
    if (past >= nsteps)
        return spw_errorf(err, "%zu steps of history leave none of the %zu to replay", past,
                          nsteps);
    memset(&r, 0, sizeof(r));
    /* Steps 0 .. past - 1 are history, what the regions did before the job:
     * streaks run through them, and share[q] is the share of the last `past`
     * steps (this one included) that region q had spot. */
    for (size_t q = 0; q < j->nregions; q++) {
        share[q] = 0;
        for (size_t k = 0; k < past; k++)
            share[q] += (avail[q][k] != 0) / (double)past;
    }
    for (size_t k = 0; v.done_s < work_s - EPS_S; k++) {
        if (k >= nsteps)
            return spw_errorf(err, "the replay of %s ran past the %zu steps of availability",
                              spw_spot_policy_name(policy), nsteps);
        for (size_t q = 0; q < j->nregions; q++) {
            uint8_t was = k > 0 && avail[q][k - 1] != 0;
            now[q] = avail[q][k] != 0;
            streak[q] = k > 0 && now[q] == was ? streak[q] + 1 : 1;
            if (past && k >= past)
                share[q] += (now[q] - (avail[q][k - past] != 0)) / (double)past;
        }
        if (k < past)
            continue;
        if (v.inst == SPW_SPOT_SPOT && !now[v.region]) {
            r.preemptions++;
            v.inst = SPW_SPOT_IDLE;
            overhead_left_s = 0;
        }
        spw_spot_mr_choice_t c = spw_spot_mr_decide(policy, j, &v, now, streak,
                                                    past ? share : NULL);
        if (c.inst != v.inst || (c.inst != SPW_SPOT_IDLE && c.region != v.region)) {
            if (c.inst != SPW_SPOT_IDLE) {
                r.starts++;
                overhead_left_s = j->job.restart_overhead_s;
                if (v.region >= 0 && c.region != v.region) {
                    r.moves++;
                    r.egress_usd += j->egress_usd;
                }
                v.region = c.region;
            }
            v.inst = c.inst;
        }
        if (v.inst != SPW_SPOT_IDLE) {
            const spw_spot_region_t *p = &j->regions[v.region];
            double ov = overhead_left_s < g ? overhead_left_s : g;
            double work = g - ov;
            if (work > work_s - v.done_s)
                work = work_s - v.done_s;
            overhead_left_s -= ov;
            v.done_s += work;
            if (v.inst == SPW_SPOT_SPOT) {
                r.spot_paid_s += ov + work;
                r.cost_usd += (ov + work) / 3600 * p->spot_usd_per_h;
            } else {
                r.ondemand_paid_s += ov + work;
                r.cost_usd += (ov + work) / 3600 * p->ondemand_usd_per_h;
            }
            if (v.done_s >= work_s - EPS_S) {
                r.finish_s = v.elapsed_s + ov + work;
                break;
            }
        }
        v.elapsed_s = (double)(k + 1 - past) * g;
    }
    r.cost_usd += r.egress_usd;
    r.deadline_met = r.finish_s <= j->job.deadline_s + EPS_S;
    *out = r;
    return 0;
}

/* Sums of the cost and of its square for one row, USD and USD^2. */
typedef struct mr_acc {
    double cost, cost2;
} mr_acc_t;

/* Adds one run to a row.  The row's means hold sums until the sweep ends. */
static void add_run(spw_spotjob_mr_row_t *row, mr_acc_t *a, double cost, int met,
                    double spot_s, double od_s, double egress, double moves, double preempt)
{
    row->runs++;
    row->missed += !met;
    a->cost += cost;
    a->cost2 += cost * cost;
    row->spot_paid_h_mean += spot_s / 3600;
    row->ondemand_paid_h_mean += od_s / 3600;
    row->egress_usd_mean += egress;
    row->moves_mean += moves;
    row->preemptions_mean += preempt;
}

int spw_spotjob_mr_sweep(const spw_spot_mr_job_t *j, const spw_spot_policy_t *policies,
                         size_t npolicies, const spw_spot_trace_t *traces, size_t offsets,
                         uint64_t seed, spw_spotjob_mr_row_t *out, spw_error_t *err)
{
    const size_t R = j->nregions, nrows = SPW_SPOTJOB_MR_ROWS(npolicies, R);
    const double g = j->job.step_s;
    const uint8_t *rows_of[SPW_SPOT_MR_MAX_REGIONS];
    uint8_t *av = NULL;
    mr_acc_t *acc = NULL;
    size_t n = SIZE_MAX;
    spw_rng_t rng;
    int rc = -1;

    if (spw_spot_mr_check(j, err) < 0)
        return -1;
    if (npolicies == 0 || offsets == 0)
        return spw_errorf(err, "a sweep needs at least one policy and start offset");
    if (!spw_spot_feasible(&j->job))
        return spw_errorf(err, "the deadline (%g h) is shorter than the work plus one restart "
                          "overhead (%g h): no policy can meet it", j->job.deadline_s / 3600,
                          (j->job.work_s + j->job.restart_overhead_s) / 3600);
    for (size_t r = 0; r < R; r++) {
        if (traces[r].n == 0 || fabs(traces[r].gap_s - g) > 1e-9 * g)
            return spw_errorf(err, "region %zu's trace has ticks of %g s, not the %g s step",
                              r + 1, traces[r].gap_s, g);
        if (traces[r].n < n)
            n = traces[r].n;
    }
    /* Every replay ends by the deadline plus one overhead, a step and the work
     * (on demand from the Safety Net at the latest); the optimum needs the
     * deadline's steps. */
    const size_t D = (size_t)floor(j->job.deadline_s / g + 1e-9);
    const size_t len = D + (size_t)ceil((j->job.work_s + j->job.restart_overhead_s) / g) + 4;
    /* The policy sees the day before the start as history. */
    const size_t past = (size_t)ceil(SPW_SPOTJOB_MR_HISTORY_S / g), all = past + len;
    spw_spotjob_params_t sp = {j->job.work_s, j->job.deadline_s, j->job.restart_overhead_s,
                               SPW_CKPT_CONTINUOUS, 0, 0};
    const uint8_t *hist_of[SPW_SPOT_MR_MAX_REGIONS];
    av = spw_xcalloc(R * all, 1);
    acc = spw_xcalloc(nrows, sizeof(*acc));
    memset(out, 0, nrows * sizeof(*out));
    for (size_t q = 0; q < npolicies; q++) {
        for (size_t r = 0; r <= R; r++) {
            spw_spotjob_mr_row_t *row = &out[q * (R + 1) + r];
            row->kind = r < R ? SPW_SPOTJOB_MR_SINGLE : SPW_SPOTJOB_MR_MULTI;
            row->policy = policies[q];
            row->region = r < R ? (int)r : -1;
        }
    }
    out[nrows - 1].kind = SPW_SPOTJOB_MR_OPTIMUM;
    out[nrows - 1].region = -1;
    for (size_t r = 0; r < R; r++) {
        hist_of[r] = av + r * all;
        rows_of[r] = hist_of[r] + past;
    }
    spw_rng_seed(&rng, seed);
    double window = (double)D + 1;
    uint64_t nstarts = (double)n > window ? n - (uint64_t)window + 1 : n;
    for (size_t o = 0; o < offsets; o++) {
        uint64_t start = spw_rng_below(&rng, nstarts);
        for (size_t r = 0; r < R; r++) {
            /* Region r's own trace, cut to the ticks every region has. */
            spw_spot_trace_t cut = {g, traces[r].avail, n};
            for (size_t k = 0; k < all; k++)
                av[r * all + k] = spw_spot_trace_at(&cut, (int64_t)start - (int64_t)past +
                                                              (int64_t)k) > 0;
        }
        for (size_t q = 0; q < npolicies; q++) {
            for (size_t r = 0; r < R; r++) {
                spw_spotjob_result_t s;
                spw_spot_trace_t cut = {g, traces[r].avail, n};
                sp.spot_usd_per_h = j->regions[r].spot_usd_per_h;
                sp.ondemand_usd_per_h = j->regions[r].ondemand_usd_per_h;
                if (spw_spotjob_run(&sp, policies[q], &cut, start, &s, err) < 0)
                    goto out;
                size_t i = q * (R + 1) + r;
                add_run(&out[i], &acc[i], s.cost_usd, s.deadline_met, s.spot_paid_s,
                        s.ondemand_paid_s, 0, 0, s.preemptions);
            }
            spw_spotjob_mr_result_t m;
            if (spw_spotjob_mr_run(j, policies[q], hist_of, all, past, &m, err) < 0)
                goto out;
            size_t i = q * (R + 1) + R;
            add_run(&out[i], &acc[i], m.cost_usd, m.deadline_met, m.spot_paid_s,
                    m.ondemand_paid_s, m.egress_usd, m.moves, m.preemptions);
        }
        double best;
        int got = spw_spot_mr_optimum(j, rows_of, len, &best, err);
        if (got < 0)
            goto out;
        if (got > 0) {
            spw_errorf(err, "the optimum found no way to meet the deadline from tick %llu",
                       (unsigned long long)start);
            goto out;
        }
        add_run(&out[nrows - 1], &acc[nrows - 1], best, 1, 0, 0, 0, 0, 0);
    }
    for (size_t i = 0; i < nrows; i++) {
        spw_spotjob_mr_row_t *x = &out[i];
        double runs = (double)x->runs, m = acc[i].cost / runs;
        double var = acc[i].cost2 / runs - m * m;
        double *sums[] = {&x->spot_paid_h_mean, &x->ondemand_paid_h_mean, &x->egress_usd_mean,
                          &x->moves_mean, &x->preemptions_mean};
        for (size_t f = 0; f < sizeof(sums) / sizeof(sums[0]); f++)
            *sums[f] /= runs;
        x->cost_usd_mean = m;
        x->cost_usd_sd = var > 0 ? sqrt(var) : 0;
    }
    rc = 0;
out:
    free(av);
    free(acc);
    return rc;
}
