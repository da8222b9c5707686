/* spot_mr.c: the multi-region spot policy and the omniscient optimum (see
 * spot_mr.h and docs/spot.md, "Multi-region spot"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/spot_mr.h"

/* Slack for float noise when a duration is compared with the step grid. */
#define STEP_EPS 1e-9

/* The cost of region r's price for the rest of the work, plus the egress of
 * moving there from the region that holds the job's state. */
static double region_score(const spw_spot_mr_job_t *j, const spw_spot_mr_view_t *v, int r,
                           double usd_per_h)
{
    double left_s = j->job.work_s - v->done_s + j->job.restart_overhead_s;
    double move = v->region >= 0 && v->region != r ? j->egress_usd : 0;
    return usd_per_h * left_s / 3600 + move;
}

spw_spot_mr_choice_t spw_spot_mr_decide(spw_spot_policy_t policy, const spw_spot_mr_job_t *j,
                                        const spw_spot_mr_view_t *view, const uint8_t *avail,
                                        const uint32_t *streak_steps, const double *up_share)
{
    spw_spot_view_t v = {view->inst, view->elapsed_s, view->done_s};
    spw_spot_mr_choice_t c = {SPW_SPOT_IDLE, view->region};
    int any = 0, best = -1;
    double best_score = 0;

    for (size_t r = 0; r < j->nregions; r++)
        any |= avail[r] != 0;
    if (v.inst == SPW_SPOT_SPOT && (view->region < 0 || !avail[view->region]))
        v.inst = SPW_SPOT_IDLE;
    c.inst = spw_spot_decide(policy, &j->job, &v, any);
    if (c.inst == SPW_SPOT_IDLE || c.inst == v.inst)
        return c;
    /* Ski rental: an idle job whose state's region has lost its spot waits
     * for it to come back, rather than pay egress to move, until the waiting
     * has cost as much as the move, valuing an hour of slack at what an hour
     * on demand costs over spot there.  Waiting is safe: the policy chose
     * spot, so its Safety Net holds. */
    if (c.inst == SPW_SPOT_SPOT && v.inst == SPW_SPOT_IDLE && view->region >= 0 &&
        !avail[view->region] && streak_steps) {
        const spw_spot_region_t *h = &j->regions[view->region];
        double dear_h = h->ondemand_usd_per_h - h->spot_usd_per_h;
        double waited_h = (double)streak_steps[view->region] * j->job.step_s / 3600;
        if (dear_h > 0 && waited_h * dear_h < j->egress_usd)
            return (spw_spot_mr_choice_t){SPW_SPOT_IDLE, view->region};
    }
    for (size_t r = 0; r < j->nregions; r++) {
        if (c.inst == SPW_SPOT_SPOT && !avail[r])
            continue;
        double price = c.inst == SPW_SPOT_SPOT ? j->regions[r].spot_usd_per_h
                                               : j->regions[r].ondemand_usd_per_h;
        double s = region_score(j, view, (int)r, price);
        int better = best < 0 || s < best_score - STEP_EPS;
        if (!better && s <= best_score + STEP_EPS) {
            if (up_share && up_share[r] != up_share[best])
                better = up_share[r] > up_share[best];
            else if (streak_steps)
                better = streak_steps[r] > streak_steps[best];
        }
        if (better) {
            best = (int)r;
            best_score = s;
        }
    }
    c.region = best;
    return c;
}

/* Whole steps in d: rounded up (up != 0) or down, float noise forgiven. */
static double whole_steps(double d, double step, int up)
{
    return up ? ceil(d / step - STEP_EPS) : floor(d / step + STEP_EPS);
}

void spw_spot_mr_round(spw_spot_job_t *job)
{
    double g = job->step_s;
    job->work_s = whole_steps(job->work_s, g, 1) * g;
    job->restart_overhead_s = whole_steps(job->restart_overhead_s, g, 1) * g;
    job->deadline_s = whole_steps(job->deadline_s, g, 0) * g;
}

/* Whether d is a whole number of steps. */
static int on_grid(double d, double step)
{
    return fabs(d / step - floor(d / step + 0.5)) < 1e-6;
}

int spw_spot_mr_check(const spw_spot_mr_job_t *j, spw_error_t *err)
{
    const spw_spot_job_t *b = &j->job;
    if (j->nregions == 0 || j->nregions > SPW_SPOT_MR_MAX_REGIONS)
        return spw_errorf(err, "a multi-region job needs 1 to %d regions (got %zu)",
                          SPW_SPOT_MR_MAX_REGIONS, j->nregions);
    if (!(j->egress_usd >= 0) || !isfinite(j->egress_usd))
        return spw_errorf(err, "the egress price of a move must be a number >= 0 (got %g)",
                          j->egress_usd);
    for (size_t r = 0; r < j->nregions; r++) {
        const spw_spot_region_t *p = &j->regions[r];
        if (!(p->spot_usd_per_h >= 0) || !isfinite(p->spot_usd_per_h) ||
            !(p->ondemand_usd_per_h >= 0) || !isfinite(p->ondemand_usd_per_h))
            return spw_errorf(err, "region %zu: prices must be numbers >= 0 (spot %g, "
                              "on-demand %g USD/h)", r + 1, p->spot_usd_per_h,
                              p->ondemand_usd_per_h);
    }
    if (b->checkpoint_interval_s != SPW_CKPT_CONTINUOUS)
        return spw_errorf(err, "the multi-region model keeps all progress across a "
                          "preemption: use continuous checkpoints");
    if (!(b->step_s > 0) || !isfinite(b->step_s))
        return spw_errorf(err, "the step must be a duration > 0 (got %g s)", b->step_s);
    if (!(b->work_s > 0) || !(b->deadline_s > 0) || !(b->restart_overhead_s >= 0) ||
        !on_grid(b->work_s, b->step_s) || !on_grid(b->deadline_s, b->step_s) ||
        !on_grid(b->restart_overhead_s, b->step_s))
        return spw_errorf(err, "work (%g s) and deadline (%g s) must be whole numbers > 0 of "
                          "the %g s step, the overhead (%g s) a whole number >= 0",
                          b->work_s, b->deadline_s, b->step_s, b->restart_overhead_s);
    if (b->work_s / b->step_s > 1e6 || b->deadline_s / b->step_s > 1e6)
        return spw_errorf(err, "more than 1e6 steps of work or deadline (step %g s)",
                          b->step_s);
    return 0;
}

/* The DP's states at a step boundary: 0, not started (no state anywhere);
 * 1 + r, idle with the state in region r; 1 + R + r, spot running in r (its
 * overhead paid); 1 + 2R + r, on demand running in r.  Cells hold the least
 * cost of reaching (boundary, state, progress in steps). */
#define ST_IDLE(r) (1 + (r))
#define ST_SPOT(R, r) (1 + (R) + (r))
#define ST_OD(R, r) (1 + 2 * (R) + (r))

int spw_spot_mr_optimum(const spw_spot_mr_job_t *j, const uint8_t *const *avail,
                        size_t nsteps, double *cost_usd, spw_error_t *err)
{
    if (spw_spot_mr_check(j, err) < 0)
        return -1;
    const double g = j->job.step_s;
    const size_t R = j->nregions, S = 1 + 3 * R;
    const size_t W = (size_t)whole_steps(j->job.work_s, g, 0);
    const size_t m = (size_t)whole_steps(j->job.restart_overhead_s, g, 0);
    const size_t D = (size_t)whole_steps(j->job.deadline_s, g, 0);
    const size_t rows = m + 2, P = W + 1;  /* boundaries k .. k + m + 1 live */
    if (nsteps < D)
        return spw_errorf(err, "the optimum needs availability for the %zu steps up to the "
                          "deadline (got %zu)", D, nsteps);
    double *c = spw_xcalloc(rows * S * P, sizeof(*c));
    /* up_ahead[r * (D + 1) + k]: steps from k on that spot stays up in r. */
    uint32_t *up_ahead = spw_xcalloc(R * (D + 1), sizeof(*up_ahead));
    double best = INFINITY;

    for (size_t i = 0; i < rows * S * P; i++)
        c[i] = INFINITY;
    for (size_t r = 0; r < R; r++)
        for (size_t k = D; k-- > 0;)
            up_ahead[r * (D + 1) + k] = avail[r][k] ? up_ahead[r * (D + 1) + k + 1] + 1 : 0;
#define CELL(k, s, p) c[(((k) % rows) * S + (s)) * P + (p)]
    CELL(0, 0, 0) = 0;
    for (size_t k = 0; k <= D; k++) {
        /* A running instance may stop at any boundary, for free. */
        for (size_t r = 0; r < R; r++)
            for (size_t p = 0; p < P; p++) {
                double *idle = &CELL(k, ST_IDLE(r), p);
                double a = CELL(k, ST_SPOT(R, r), p), b = CELL(k, ST_OD(R, r), p);
                if (a < *idle)
                    *idle = a;
                if (b < *idle)
                    *idle = b;
            }
        for (size_t s = 0; s < S; s++)
            if (CELL(k, s, W) < best)
                best = CELL(k, s, W);
        if (k == D)
            break;
        /* Starts: from idle (or not started) to an instance in any region,
         * running from boundary k + m on; spot only if it stays up through
         * the overhead and the first step of work. */
        if (k + m < D) {
            for (size_t from = 0; from <= R; from++)
                for (size_t r = 0; r < R; r++) {
                    double move = from > 0 && from - 1 != r ? j->egress_usd : 0;
                    double od = move + (double)m * g / 3600 * j->regions[r].ondemand_usd_per_h;
                    double sp = move + (double)m * g / 3600 * j->regions[r].spot_usd_per_h;
                    int spot_ok = up_ahead[r * (D + 1) + k] > m;
                    for (size_t p = 0; p < W; p++) {
                        double base = CELL(k, from, p);
                        if (base == INFINITY)
                            continue;
                        double *t = &CELL(k + m, ST_OD(R, r), p);
                        if (base + od < *t)
                            *t = base + od;
                        t = &CELL(k + m, ST_SPOT(R, r), p);
                        if (spot_ok && base + sp < *t)
                            *t = base + sp;
                    }
                }
        }
        /* One step: idle stays, a running instance makes a step of progress
         * (spot only while up in its region). */
        for (size_t s = 0; s <= R; s++)
            for (size_t p = 0; p < W; p++) {
                double *t = &CELL(k + 1, s, p);
                if (CELL(k, s, p) < *t)
                    *t = CELL(k, s, p);
            }
        for (size_t r = 0; r < R; r++) {
            double sp = g / 3600 * j->regions[r].spot_usd_per_h;
            double od = g / 3600 * j->regions[r].ondemand_usd_per_h;
            for (size_t p = 0; p < W; p++) {
                double a = CELL(k, ST_SPOT(R, r), p), b = CELL(k, ST_OD(R, r), p);
                double *t = &CELL(k + 1, ST_SPOT(R, r), p + 1);
                if (avail[r][k] && a + sp < *t)
                    *t = a + sp;
                t = &CELL(k + 1, ST_OD(R, r), p + 1);
                if (b + od < *t)
                    *t = b + od;
            }
        }
        /* Row k is done; it is reused for boundary k + rows. */
        for (size_t i = 0; i < S * P; i++)
            c[(k % rows) * S * P + i] = INFINITY;
    }
#undef CELL
    free(c);
    free(up_ahead);
    if (best == INFINITY)
        return 1;
    *cost_usd = best;
    return 0;
}
