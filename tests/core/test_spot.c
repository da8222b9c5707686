/* test_spot.c: the spot policies (core/spot.h) decision by decision on cases
 * worked out by hand, replays of one job (sim/spotjob.h) on hand-built
 * availability sequences, and properties over random traces: no progress
 * counted twice, cost = paid seconds x price, greedy and uniform-progress
 * never miss a feasible deadline, same seed gives the same sweep. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "core/spot.h"
#include "sim/spotjob.h"
#include "util/rng.h"

#define OD SPW_SPOT_ONDEMAND
#define SP SPW_SPOT_SPOT
#define ID SPW_SPOT_IDLE
#define GREEDY SPW_SPOT_POLICY_GREEDY
#define UP SPW_SPOT_POLICY_UNIFORM_PROGRESS
#define ONDEMAND SPW_SPOT_POLICY_ONDEMAND

static spw_spot_inst_t dec(spw_spot_policy_t p, const spw_spot_job_t *j, spw_spot_inst_t inst,
                           double t, double done, int avail)
{
    spw_spot_view_t v = {inst, t, done};
    return spw_spot_decide(p, j, &v, avail);
}

static void test_decisions(void)
{
    /* W = 10, D = 20, d = 1, decisions every 1: safety slack 1 + 1 = 2. */
    spw_spot_job_t j = {10, 20, 1, 0, 1};
    is_double(spw_spot_safety_slack_s(&j), 2, 1e-12, "slack is 2d when ticks are <= d");
    ok(spw_spot_feasible(&j), "10 of work + 1 overhead fits in 20");

    is(dec(ONDEMAND, &j, ID, 0, 0, 1), OD, "ondemand: on demand even with spot available");
    is(dec(ONDEMAND, &j, OD, 5, 10, 0), ID, "ondemand: idle once the work is done (Thrifty)");

    is(dec(GREEDY, &j, ID, 0, 0, 1), SP, "greedy: idle and spot available -> spot");
    is(dec(GREEDY, &j, ID, 0, 0, 0), ID, "greedy: idle, no spot, R-C = 10 >= 2 -> wait");
    is(dec(GREEDY, &j, ID, 8, 0, 0), ID, "greedy: R-C = 12-10 = 2, not < 2d -> still wait");
    is(dec(GREEDY, &j, ID, 9, 0, 0), OD, "greedy: R-C = 1 < 2d -> Safety Net, on demand");
    is(dec(GREEDY, &j, ID, 9, 0, 1), OD, "greedy: Safety Net wins over an available spot");
    is(dec(GREEDY, &j, SP, 9, 0, 1), SP, "greedy: on spot, stays until preempted (Exploitation)");
    is(dec(GREEDY, &j, SP, 9, 0, 0), OD, "greedy: spot preempted with R-C = 1 -> on demand");
    is(dec(GREEDY, &j, SP, 2, 1, 0), ID, "greedy: spot preempted with slack left -> wait");
    is(dec(GREEDY, &j, OD, 9.5, 0.5, 1), OD, "greedy: on demand stays there until the end");
    is(dec(GREEDY, &j, SP, 15, 10, 1), ID, "greedy: done -> idle (Thrifty)");

    /* Uniform Progress: ep(t) = t * 10 / 20 = t / 2. */
    is(dec(UP, &j, ID, 4, 1, 0), OD, "UP: idle, cp 1 < ep(4) = 2 -> on demand");
    is(dec(UP, &j, ID, 4, 2, 0), ID, "UP: idle, cp 2 = ep(4) -> not behind, wait");
    is(dec(UP, &j, ID, 4, 1, 1), SP, "UP: behind but spot available -> spot (Taking Risks)");
    is(dec(UP, &j, OD, 4, 2.9, 1), OD, "UP: on demand, cp 2.9 < ep(4 + 2d) = 3 -> stay (Hysteresis)");
    is(dec(UP, &j, OD, 4, 2.9, 0), OD, "UP: on demand, behind ep(t + 2d), no spot -> stay");
    is(dec(UP, &j, OD, 4, 3, 1), SP, "UP: on demand, cp 3 >= ep(6) = 3, spot -> spot");
    is(dec(UP, &j, OD, 4, 3, 0), OD, "UP: on demand, ahead, no spot -> stay (left only for spot)");
    is(dec(UP, &j, OD, 1, 10, 0), ID, "UP: on demand, work done -> idle (Thrifty)");
    is(dec(UP, &j, ID, 9, 0, 1), OD, "UP: R-C = 1 < 2d -> Safety Net even with spot");
    is(dec(UP, &j, OD, 17, 8.5, 1), OD, "UP: R-C = 1.5 < 2d on demand -> stay to the end");
    is(dec(UP, &j, SP, 17, 9, 1), SP, "UP: on spot near the deadline -> stay (Exploitation)");

    /* Ticks longer than d: the slack must also cover one idle tick. */
    spw_spot_job_t k = {10, 20, 1, 0, 5};
    is_double(spw_spot_safety_slack_s(&k), 6, 1e-12, "slack is d + tick when ticks are > d");
    is(dec(GREEDY, &k, ID, 4, 0, 0), ID, "tick 5: R-C = 6 -> can wait one more tick");
    is(dec(GREEDY, &k, ID, 5, 0, 0), OD, "tick 5: R-C = 5 < 6 -> on demand now");
    spw_spot_job_t c = {10, 20, 1, 3, 1};
    is_double(spw_spot_safety_slack_s(&c), 5, 1e-12, "a checkpoint interval adds what a "
              "preemption can lose");

    /* Infeasible: 10 of work + 1 overhead does not fit in 10. */
    spw_spot_job_t inf = {10, 10, 1, 0, 1};
    ok(!spw_spot_feasible(&inf), "deadline 10 < work 10 + overhead 1 is infeasible");
    is(dec(UP, &inf, ID, 0, 0, 1), OD, "infeasible: the policies go on demand at once");

    spw_spot_policy_t p;
    spw_error_t err;
    ok(spw_spot_policy_parse("uniform-progress", &p, &err) == 0 && p == UP, "parse a name");
    ok(spw_spot_policy_parse("up", &p, &err) < 0 && strstr(err.text, "greedy"),
       "unknown names are rejected with the list: %s", err.text);
    is_str(spw_spot_policy_name(GREEDY), "greedy", "names round-trip");
    is_str(spw_spot_inst_name(OD), "ondemand", "instance names");
}

static spw_spot_trace_t mk_trace(uint32_t *a, size_t n, double gap_s)
{
    spw_spot_trace_t t = {gap_s, a, n};
    return t;
}

static void test_replays(void)
{
    spw_spotjob_result_t r;
    spw_error_t err;
    /* W = 300, d = 50, ticks of 100 s, spot $1/h, on demand $10/h. */
    spw_spotjob_params_t p = {300, 600, 50, 0, 1, 10};
    uint32_t a1[10] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    spw_spot_trace_t t1 = mk_trace(a1, 10, 100);

    /* Greedy by hand: spot at 0 (50 overhead + 50 work), 100 more by 200;
     * preempted at 200 (R-C = 400-150 = 250 >= 150: wait); at 300 R-C = 150,
     * wait; at 400 R-C = 50 < 150: on demand, 50 overhead + 150 work, ends at
     * 600 exactly. */
    ok(spw_spotjob_run(&p, GREEDY, &t1, 0, &r, &err) == 0, "greedy replay runs");
    is_double(r.spot_work_s, 150, 1e-9, "greedy: 150 s of progress on spot");
    is_double(r.spot_paid_s, 200, 1e-9, "greedy: 200 s paid on spot");
    is_double(r.ondemand_work_s, 150, 1e-9, "greedy: 150 s of progress on demand");
    is_double(r.ondemand_paid_s, 200, 1e-9, "greedy: 200 s paid on demand");
    is_double(r.finish_s, 600, 1e-9, "greedy: finishes at the deadline exactly");
    ok(r.deadline_met, "greedy: deadline met");
    is(r.preemptions, 1, "greedy: one preemption");
    is(r.starts, 2, "greedy: two instance starts");
    is_double(r.cost_usd, (200 * 1 + 200 * 10) / 3600.0, 1e-12, "greedy: cost by hand");

    /* The same start later in a repeating trace gives the same replay. */
    spw_spotjob_result_t r2;
    ok(spw_spotjob_run(&p, GREEDY, &t1, 10, &r2, &err) == 0 && r2.cost_usd == r.cost_usd,
       "start tick n is tick 0 again");

    /* Deadline 800, spot only in tick 0.  Greedy: spot 0..100 (50 work),
     * preempted, waits until R-C < 150 at t = 500, then 50 + 250 on demand. */
    p.deadline_s = 800;
    uint32_t a2[10] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    spw_spot_trace_t t2 = mk_trace(a2, 10, 100);
    spw_spotjob_run(&p, GREEDY, &t2, 0, &r, &err);
    ok(r.spot_work_s == 50 && r.ondemand_work_s == 250 && r.ondemand_paid_s == 300 &&
       r.finish_s == 800 && r.starts == 2,
       "greedy, deadline 800: spot 50, on demand 250 (paid 300), ends at 800");
    /* UP: ep(t) = 3t/8.  t=100: cp 50 >= 37.5, wait.  t=200: 50 < 75, on
     * demand (50 + 50 work).  t=300: cp 100 < ep(400) = 150, stay (+100).
     * t=400: cp 200 >= ep(500) = 187.5 but no spot: stay on demand (+100),
     * done at 500. */
    spw_spotjob_run(&p, UP, &t2, 0, &r, &err);
    ok(r.spot_work_s == 50 && r.ondemand_work_s == 250 && r.ondemand_paid_s == 300 &&
       r.finish_s == 500 && r.starts == 2 && r.deadline_met,
       "UP, deadline 800: behind at 200, on demand to the end without spot "
       "(od paid %g, starts %u, finish %g)", r.ondemand_paid_s, r.starts, r.finish_s);

    /* Checkpoints every 100 s of progress: preempted at 300 with 250 done
     * since the run began, 200 kept, 50 lost. */
    spw_spotjob_params_t q = {1000, 5000, 50, 100, 1, 10};
    uint32_t a3[60] = {1, 1, 1};
    spw_spot_trace_t t3 = mk_trace(a3, 60, 100);
    spw_spotjob_run(&q, GREEDY, &t3, 0, &r, &err);
    is_double(r.lost_s, 50, 1e-9, "checkpoint 100: a preemption at 250 done loses 50");
    is(r.preemptions, 1, "checkpoint 100: one preemption");
    is_double(r.spot_work_s + r.ondemand_work_s - r.lost_s, 1000, 1e-6,
              "checkpoint 100: kept progress adds up to the work");

    /* Infeasible deadline: counted, not a crash. */
    spw_spotjob_params_t inf = {300, 320, 50, 0, 1, 10};
    ok(spw_spotjob_run(&inf, UP, &t1, 0, &r, &err) == 0 && r.infeasible && !r.deadline_met,
       "deadline 320 < 300 + 50: replay ends, marked infeasible and missed");

    spw_spotjob_params_t bad = {0, 600, 50, 0, 1, 10};
    ok(spw_spotjob_run(&bad, UP, &t1, 0, &r, &err) < 0 && strstr(err.text, "work"),
       "zero work is an error: %s", err.text);
    spw_spot_trace_t empty = {600, NULL, 0};
    ok(spw_spotjob_run(&p, UP, &empty, 0, &r, &err) < 0 && strstr(err.text, "empty"),
       "an empty trace is an error: %s", err.text);
}

/* Random availability with runs: stays in the current state with prob stay. */
static void random_trace(spw_rng_t *g, uint32_t *a, size_t n, double p_on, double stay)
{
    int on = spw_rng_uniform(g) < p_on;
    for (size_t i = 0; i < n; i++) {
        if (spw_rng_uniform(g) > stay)
            on = spw_rng_uniform(g) < p_on;
        a[i] = on ? (uint32_t)(1 + spw_rng_below(g, 3)) : 0;
    }
}

static void test_properties(void)
{
    static uint32_t a[600];
    spw_rng_t g;
    int twice = 0, cost = 0, missed = 0, od_wrong = 0, runs = 0, feasible = 0, errs = 0;
    spw_rng_seed(&g, 42);
    for (int it = 0; it < 3000; it++) {
        size_t n = 5 + spw_rng_below(&g, 595);
        random_trace(&g, a, n, spw_rng_uniform(&g), 0.5 + 0.5 * spw_rng_uniform(&g));
        spw_spot_trace_t t = mk_trace(a, n, 60 + 600 * spw_rng_uniform(&g));
        spw_spotjob_params_t p;
        p.work_s = 600 + 30000 * spw_rng_uniform(&g);
        p.deadline_s = p.work_s * (0.9 + 1.5 * spw_rng_uniform(&g));
        p.restart_overhead_s = 1200 * spw_rng_uniform(&g);
        p.checkpoint_interval_s = it % 3 == 0 ? 300 + 3000 * spw_rng_uniform(&g) : 0;
        p.spot_usd_per_h = 0.3 + spw_rng_uniform(&g);
        p.ondemand_usd_per_h = 3 + spw_rng_uniform(&g);
        uint64_t start = spw_rng_below(&g, n);
        for (int pol = 0; pol < SPW_SPOT_POLICY_COUNT; pol++) {
            spw_spotjob_result_t r;
            spw_error_t err;
            if (spw_spotjob_run(&p, (spw_spot_policy_t)pol, &t, start, &r, &err) < 0) {
                if (errs++ == 0)
                    diag("replay error: %s", err.text);
                continue;
            }
            runs++;
            /* Kept progress is the work, and one instance at a time means
             * the paid time fits in the elapsed time. */
            if (fabs(r.spot_work_s + r.ondemand_work_s - r.lost_s - p.work_s) > 1e-6 ||
                r.spot_paid_s + r.ondemand_paid_s > r.finish_s + 1e-6 ||
                r.spot_work_s > r.spot_paid_s + 1e-6 ||
                r.ondemand_work_s > r.ondemand_paid_s + 1e-6) {
                if (twice++ == 0)
                    diag("progress/paid mismatch: policy %d work %g spot %g/%g od %g/%g lost %g "
                         "finish %g", pol, p.work_s, r.spot_work_s, r.spot_paid_s,
                         r.ondemand_work_s, r.ondemand_paid_s, r.lost_s, r.finish_s);
            }
            double want = r.spot_paid_s / 3600 * p.spot_usd_per_h +
                          r.ondemand_paid_s / 3600 * p.ondemand_usd_per_h;
            if (fabs(r.cost_usd - want) > 1e-9 * (1 + want))
                cost++;
            if (!r.infeasible && pol != ONDEMAND) {
                feasible++;
                if (!r.deadline_met && missed++ == 0)
                    diag("missed: policy %d W %g D %g d %g ckpt %g gap %g finish %g", pol,
                         p.work_s, p.deadline_s, p.restart_overhead_s, p.checkpoint_interval_s,
                         t.gap_s, r.finish_s);
            }
            if (pol == ONDEMAND && r.deadline_met == r.infeasible)
                od_wrong++;
        }
    }
    is(errs, 0, "every random replay ends (%d runs)", runs);
    is(twice, 0, "no progress counted twice: kept progress = work, paid <= elapsed");
    is(cost, 0, "cost = paid seconds x price, summed");
    is(missed, 0, "greedy and uniform-progress meet every feasible deadline (%d runs)", feasible);
    is(od_wrong, 0, "ondemand meets the deadline exactly when it is feasible");
}

static void test_sweep(void)
{
    static uint32_t a[2000];
    spw_rng_t g;
    spw_rng_seed(&g, 7);
    random_trace(&g, a, 2000, 0.6, 0.95);
    spw_spot_trace_t t = mk_trace(a, 2000, 600);
    spw_spotjob_params_t p = {48 * 3600.0, 60 * 3600.0, 720, 0, 0.92, 3.06};
    spw_spot_policy_t pols[3] = {ONDEMAND, GREEDY, UP};
    spw_spotjob_summary_t s1[3], s2[3];
    spw_error_t err;
    ok(spw_spotjob_sweep(&p, pols, 3, &t, 1, 200, 5, s1, &err) == 0 &&
       spw_spotjob_sweep(&p, pols, 3, &t, 1, 200, 5, s2, &err) == 0,
       "two sweeps with the same seed run");
    ok(memcmp(s1, s2, sizeof(s1)) == 0, "and give identical summaries");
    is_double(s1[0].ondemand_work_h_mean, 48, 1e-9, "ondemand: 48 h on demand");
    is_double(s1[0].cost_usd_mean, 48.2 * 3.06, 1e-9, "ondemand: (48 + 0.2) h x $3.06");
    ok(s1[1].missed == 0 && s1[2].missed == 0, "no misses for greedy and UP");
    ok(s1[1].cost_usd_mean < s1[0].cost_usd_mean && s1[2].cost_usd_mean < s1[0].cost_usd_mean,
       "spot policies are cheaper than on demand on a 60%% available trace (%.1f, %.1f < %.1f)",
       s1[1].cost_usd_mean, s1[2].cost_usd_mean, s1[0].cost_usd_mean);
    ok(spw_spotjob_sweep(&p, pols, 3, &t, 1, 0, 5, s1, &err) < 0, "zero offsets is an error");
}

int main(void)
{
    test_decisions();
    test_replays();
    test_properties();
    test_sweep();
    return done_testing();
}
