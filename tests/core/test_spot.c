/* test_spot.c: the checkpoint helpers and the spot policies (core/spot.h)
 * decision by decision on cases worked out by hand, replays of one job
 * (sim/spotjob.h) on hand-built availability sequences under each checkpoint
 * mode (continuous, every k seconds, none: from scratch), and properties over
 * random traces: no progress counted twice, cost = paid seconds x price,
 * greedy and uniform-progress never miss a feasible deadline, same seed gives
 * the same sweep.  Multi-region (core/spot_mr.h, sim/spotjob_mr.h): the
 * omniscient optimum on a trace worked out by hand, the policy's choices of
 * region, and over random and adversarial traces: no missed deadline and no
 * policy cheaper than the optimum. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "core/spot.h"
#include "core/spot_mr.h"
#include "sim/spotjob.h"
#include "sim/spotjob_mr.h"
#include "util/rng.h"

#define OD SPW_SPOT_ONDEMAND
#define SP SPW_SPOT_SPOT
#define ID SPW_SPOT_IDLE
#define GREEDY SPW_SPOT_POLICY_GREEDY
#define UP SPW_SPOT_POLICY_UNIFORM_PROGRESS
#define ONDEMAND SPW_SPOT_POLICY_ONDEMAND
#define CONT SPW_CKPT_CONTINUOUS

static spw_spot_inst_t dec(spw_spot_policy_t p, const spw_spot_job_t *j, spw_spot_inst_t inst,
                           double t, double done, int avail)
{
    spw_spot_view_t v = {inst, t, done};
    return spw_spot_decide(p, j, &v, avail);
}

static void test_checkpoints(void)
{
    /* Continuous: everything the attempt made is kept. */
    is_double(spw_ckpt_kept_s(CONT, 5, 3), 8, 0, "continuous: 5 kept + 3 run = 8 kept");
    is_double(spw_ckpt_kept_s(CONT, 5, -1), 5, 0, "a negative run counts as none");
    is_double(spw_ckpt_kept_s(CONT, 5, NAN), 5, 0, "a NaN run counts as none");
    /* Every 2 s: the whole intervals of the run are kept. */
    is_double(spw_ckpt_kept_s(2, 5, 3), 7, 0, "every 2: run 3 keeps one interval, 7");
    is_double(spw_ckpt_kept_s(2, 5, 4), 9, 0, "every 2: run 4 ends on a checkpoint, 9");
    is_double(spw_ckpt_kept_s(2, 5, 1.999), 5, 0, "every 2: run 1.999 keeps nothing new");
    is_double(spw_ckpt_kept_s(2, 5, 0), 5, 0, "every 2: no run, what was kept stays");
    is_double(spw_ckpt_kept_s(10, 1, 9.5), 1, 0, "an interval longer than the run keeps "
              "only the attempt's start");
    /* Never: from scratch, progress carried into the attempt included. */
    is_double(spw_ckpt_kept_s(0, 5, 3), 0, 0, "none: everything is lost, even the 5 kept");
    is_double(spw_ckpt_kept_s(0, 0, 0), 0, 0, "none: nothing from nothing");

    is_double(spw_ckpt_max_loss_s(CONT, 10), 0, 0, "max loss continuous: 0");
    is_double(spw_ckpt_max_loss_s(0, 10), 10, 0, "max loss without checkpoints: the work");
    is_double(spw_ckpt_max_loss_s(3, 10), 3, 0, "max loss every 3: 3");
    is_double(spw_ckpt_max_loss_s(10, 10), 10, 0, "max loss every 10 of 10: 10");
    is_double(spw_ckpt_max_loss_s(15, 10), 10, 0, "max loss every 15 of 10: capped at the work");

    /* kept - done is a whole number of intervals, and at most one interval
     * short of the run: on random arguments. */
    spw_rng_t g;
    int bad = 0;
    spw_rng_seed(&g, 11);
    for (int i = 0; i < 10000; i++) {
        double k = 1 + 99 * spw_rng_uniform(&g), done = 1000 * spw_rng_uniform(&g);
        double run = 1000 * spw_rng_uniform(&g), kept = spw_ckpt_kept_s(k, done, run);
        double n = (kept - done) / k;
        if (kept < done || kept > done + run || kept <= done + run - k ||
            fabs(n - round(n)) > 1e-9)
            bad++;
    }
    is(bad, 0, "every k: done <= kept <= done + run, less than k lost, whole intervals");
}

static void test_decisions(void)
{
    /* W = 10, D = 20, d = 1, decisions every 1, nothing lost to a
     * preemption (the paper's model): safety slack 1 + 1 = 2. */
    spw_spot_job_t j = {10, 20, 1, CONT, 1};
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
    spw_spot_job_t k = {10, 20, 1, CONT, 5};
    is_double(spw_spot_safety_slack_s(&k), 6, 1e-12, "slack is d + tick when ticks are > d");
    is(dec(GREEDY, &k, ID, 4, 0, 0), ID, "tick 5: R-C = 6 -> can wait one more tick");
    is(dec(GREEDY, &k, ID, 5, 0, 0), OD, "tick 5: R-C = 5 < 6 -> on demand now");

    /* Checkpoints every 3: a preemption loses up to 3, slack 1 + 1 + 3 = 5. */
    spw_spot_job_t c = {10, 20, 1, 3, 1};
    is_double(spw_spot_safety_slack_s(&c), 5, 1e-12, "every 3: the slack adds one interval");
    is(dec(GREEDY, &c, ID, 5, 0, 1), SP, "every 3: R-C = 15-10 = 5, not < 5 -> spot");
    is(dec(GREEDY, &c, ID, 6, 0, 1), OD, "every 3: R-C = 4 < 5 -> on demand despite spot");
    is(dec(GREEDY, &j, ID, 6, 0, 1), SP, "continuous, same point: R-C = 4 >= 2 -> spot");
    spw_spot_job_t big = {10, 30, 1, 15, 1};
    is_double(spw_spot_safety_slack_s(&big), 12, 1e-12,
              "every 15 on 10 of work: the slack adds the whole work, 1 + 1 + 10");

    /* No checkpoints: a preemption loses all progress, so the slack holds the
     * whole work: 1 + 1 + 10 = 12 (D = 30). */
    spw_spot_job_t n = {10, 30, 1, 0, 1};
    is_double(spw_spot_safety_slack_s(&n), 12, 1e-12, "from scratch: slack d + d + W = 12");
    spw_spot_job_t nt = {10, 30, 1, 0, 5};
    is_double(spw_spot_safety_slack_s(&nt), 16, 1e-12, "from scratch, ticks of 5: 1 + 5 + 10");
    is(dec(GREEDY, &n, ID, 0, 0, 1), SP, "from scratch: R-C = 20 >= 12 -> spot");
    is(dec(GREEDY, &n, ID, 8, 0, 0), ID, "from scratch: R-C = 22-10 = 12 -> still wait");
    is(dec(GREEDY, &n, ID, 9, 0, 1), OD, "from scratch: R-C = 11 < 12 -> on demand, not spot");
    is(dec(GREEDY, &n, SP, 5, 0, 0), ID,
       "from scratch: preempted, progress back to 0, R-C = 25-10 = 15 -> wait");
    is(dec(GREEDY, &n, SP, 9, 0, 1), SP, "from scratch: on spot, stays (Exploitation)");
    /* ep(t) = t * 10 / 30 = t / 3. */
    is(dec(UP, &n, ID, 6, 1, 0), OD, "from scratch, UP: cp 1 < ep(6) = 2, R-C = 15 -> on demand");
    is(dec(UP, &n, ID, 6, 2, 0), ID, "from scratch, UP: cp 2 = ep(6) -> wait");
    is(dec(UP, &n, OD, 3, 2, 1), SP, "from scratch, UP: the rule itself would leave on demand "
       "(cp 2 >= ep(5), R-C = 19); the replay keeps such a job where it runs");
    spw_spot_job_t n20 = {10, 20, 1, 0, 1};
    ok(spw_spot_feasible(&n20), "from scratch, D = 20: feasible on demand (10 + 1 <= 20)");
    is(dec(GREEDY, &n20, ID, 0, 0, 1), OD,
       "from scratch, D = 20: R-C = 10 < 12 -> greedy on demand from the start");
    is(dec(UP, &n20, ID, 0, 0, 1), OD, "from scratch, D = 20: UP on demand from the start");
    spw_spot_job_t c20 = {10, 20, 1, CONT, 1};
    is(dec(GREEDY, &c20, ID, 0, 0, 1), SP, "continuous, D = 20: R-C = 10 >= 2 -> spot");

    /* Infeasible: 10 of work + 1 overhead does not fit in 10. */
    spw_spot_job_t inf = {10, 10, 1, CONT, 1};
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
    /* W = 300, d = 50, ticks of 100 s, spot $1/h, on demand $10/h, nothing
     * lost to a preemption: slack 50 + 100 = 150. */
    spw_spotjob_params_t p = {300, 600, 50, CONT, 1, 10};
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

    /* One availability sequence, W = 300, d = 50, ticks of 100, D = 1500,
     * under the three checkpoint modes: spot in ticks 0-2, gone in tick 3,
     * back from tick 4 on.  The first attempt runs ticks 0-2: 50 overhead +
     * 50 work, then 100 + 100: 250 done when it is preempted at t = 300. */
    uint32_t a4[20] = {1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    spw_spot_trace_t t4 = mk_trace(a4, 20, 100);
    spw_spotjob_params_t m = {300, 1500, 50, CONT, 1, 10};
    /* Continuous: 250 kept; at 400 spot again (R-C = 1100-50 >= 150),
     * 50 overhead + the last 50: done at 500, paid 300 + 100 on spot. */
    spw_spotjob_run(&m, GREEDY, &t4, 0, &r, &err);
    ok(r.lost_s == 0 && r.spot_work_s == 300 && r.spot_paid_s == 400 && r.finish_s == 500 &&
       r.preemptions == 1 && r.starts == 2 && r.ondemand_paid_s == 0,
       "continuous: nothing lost, done at 500, 400 paid on spot (lost %g, work %g, paid %g, "
       "finish %g)", r.lost_s, r.spot_work_s, r.spot_paid_s, r.finish_s);
    /* Every 100: 200 kept, 50 lost; from 400: 50 overhead + 50, then the
     * last 50 in tick 5: done at 550; spot work 250 + 100, paid 300 + 150. */
    m.checkpoint_interval_s = 100;
    spw_spotjob_run(&m, GREEDY, &t4, 0, &r, &err);
    ok(r.lost_s == 50 && r.spot_work_s == 350 && r.spot_paid_s == 450 && r.finish_s == 550,
       "every 100: 50 lost, done at 550, 450 paid on spot (lost %g, work %g, paid %g, "
       "finish %g)", r.lost_s, r.spot_work_s, r.spot_paid_s, r.finish_s);
    /* None: slack 50 + 100 + 300 = 450; at 0 R-C = 1200 -> spot.  Preempted
     * at 300: all 250 lost, back to 0.  At 400 R-C = 1100-300 = 800 -> spot:
     * 50 overhead + 50, 100, 100, then 50: done at 750; spot work 550, paid
     * 300 + 350; cost 650 s at $1/h. */
    m.checkpoint_interval_s = 0;
    spw_spotjob_run(&m, GREEDY, &t4, 0, &r, &err);
    ok(r.lost_s == 250 && r.spot_work_s == 550 && r.spot_paid_s == 650 && r.finish_s == 750 &&
       r.ondemand_paid_s == 0 && r.starts == 2 && r.deadline_met,
       "from scratch: 250 lost, done at 750, 650 paid on spot (lost %g, work %g, paid %g, "
       "finish %g)", r.lost_s, r.spot_work_s, r.spot_paid_s, r.finish_s);
    is_double(r.cost_usd, 650 / 3600.0, 1e-12, "from scratch: cost 650 s x $1/h");
    /* None, D = 800: at 0 R-C = 500 >= 450 -> spot; preempted at 300 with
     * nothing kept: R-C = 500-300 = 200 < 450 -> on demand, 50 + 300: done
     * at 650, inside the deadline the slack protected. */
    m.deadline_s = 800;
    spw_spotjob_run(&m, GREEDY, &t4, 0, &r, &err);
    ok(r.lost_s == 250 && r.spot_paid_s == 300 && r.ondemand_work_s == 300 &&
       r.ondemand_paid_s == 350 && r.finish_s == 650 && r.deadline_met,
       "from scratch, D = 800: preempted, then on demand from 0, done at 650 (od %g/%g, "
       "finish %g)", r.ondemand_work_s, r.ondemand_paid_s, r.finish_s);
    /* None, D = 700: R-C = 400 < 450 at 0 -> on demand from the start even
     * though spot is there: 50 + 300, done at 350. */
    m.deadline_s = 700;
    spw_spotjob_run(&m, UP, &t4, 0, &r, &err);
    ok(r.spot_paid_s == 0 && r.ondemand_paid_s == 350 && r.finish_s == 350,
       "from scratch, D = 700: no room to lose the work, on demand from the start");

    /* A job on demand that uniform-progress would move to spot.  W = 300,
     * D = 2000, d = 50, ticks of 100, spot from tick 4; ep(t) = 0.15 t.
     * t=0: cp 0 = ep(0), idle.  t=100: cp 0 < 15 -> on demand, 50 + 50;
     * 100 at 200 and 300: cp 250 at t = 400. */
    uint32_t a5[20] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    spw_spot_trace_t t5 = mk_trace(a5, 20, 100);
    spw_spotjob_params_t u = {300, 2000, 50, CONT, 1, 10};
    /* Continuous: at 400 cp 250 >= ep(500) = 75 and R-C = 1550 >= 150 ->
     * spot (Hysteresis), a clean stop that keeps the 250: 50 + 50 on spot,
     * done at 500. */
    spw_spotjob_run(&u, UP, &t5, 0, &r, &err);
    ok(r.ondemand_work_s == 250 && r.ondemand_paid_s == 300 && r.spot_work_s == 50 &&
       r.spot_paid_s == 100 && r.starts == 2 && r.lost_s == 0 && r.finish_s == 500,
       "UP, continuous: on demand 100-400, then spot, done at 500 (od %g, spot %g, "
       "finish %g)", r.ondemand_work_s, r.spot_work_s, r.finish_s);
    /* None: the move would start the work over, so the job stays on demand:
     * the last 50 in tick 4, done at 450. */
    u.checkpoint_interval_s = 0;
    spw_spotjob_run(&u, UP, &t5, 0, &r, &err);
    ok(r.ondemand_work_s == 300 && r.ondemand_paid_s == 350 && r.spot_paid_s == 0 &&
       r.starts == 1 && r.lost_s == 0 && r.finish_s == 450,
       "UP, from scratch: stays on demand to the end, done at 450 (od %g, spot %g, "
       "starts %u, finish %g)", r.ondemand_work_s, r.spot_work_s, r.starts, r.finish_s);

    /* Infeasible deadline: counted, not a crash. */
    spw_spotjob_params_t inf = {300, 320, 50, CONT, 1, 10};
    ok(spw_spotjob_run(&inf, UP, &t1, 0, &r, &err) == 0 && r.infeasible && !r.deadline_met,
       "deadline 320 < 300 + 50: replay ends, marked infeasible and missed");

    spw_spotjob_params_t bad = {0, 600, 50, CONT, 1, 10};
    ok(spw_spotjob_run(&bad, UP, &t1, 0, &r, &err) < 0 && strstr(err.text, "work"),
       "zero work is an error: %s", err.text);
    bad.work_s = 300;
    bad.checkpoint_interval_s = -2;
    ok(spw_spotjob_params_check(&bad, &err) < 0 && strstr(err.text, "continuous"),
       "a negative interval other than continuous is an error: %s", err.text);
    bad.checkpoint_interval_s = INFINITY;
    ok(spw_spotjob_params_check(&bad, &err) < 0, "an infinite interval is an error");
    bad.checkpoint_interval_s = NAN;
    ok(spw_spotjob_params_check(&bad, &err) < 0, "a NaN interval is an error");
    bad.checkpoint_interval_s = 0;
    ok(spw_spotjob_params_check(&bad, &err) == 0, "interval 0 (from scratch) is accepted");
    bad.checkpoint_interval_s = CONT;
    ok(spw_spotjob_params_check(&bad, &err) == 0, "continuous is accepted");
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

/* Replays on random traces and jobs, every policy and checkpoint mode
 * (continuous, every k, none): the invariants of spotjob.h. */
static void test_properties(void)
{
    static uint32_t a[600];
    spw_rng_t g;
    int twice = 0, cost = 0, missed = 0, od_wrong = 0, runs = 0, feasible = 0, errs = 0;
    int lost_bad = 0, paid_bad = 0, scratch_spot = 0, scratch_lost = 0, k_lost = 0;
    spw_rng_seed(&g, 42);
    for (int it = 0; it < 3000; it++) {
        size_t n = 5 + spw_rng_below(&g, 595);
        random_trace(&g, a, n, spw_rng_uniform(&g), 0.5 + 0.5 * spw_rng_uniform(&g));
        spw_spot_trace_t t = mk_trace(a, n, 60 + 600 * spw_rng_uniform(&g));
        spw_spotjob_params_t p;
        int mode = it % 3;  /* 0 continuous, 1 every k, 2 none */
        p.work_s = 600 + 30000 * spw_rng_uniform(&g);
        /* Without checkpoints spot is safe only with more than twice the
         * work: give those jobs longer deadlines so that they use it. */
        p.deadline_s = p.work_s * (0.9 + (mode == 2 ? 3.0 : 1.5) * spw_rng_uniform(&g));
        p.restart_overhead_s = 1200 * spw_rng_uniform(&g);
        p.checkpoint_interval_s = mode == 0   ? CONT
                                  : mode == 1 ? 300 + 3000 * spw_rng_uniform(&g)
                                              : 0;
        p.spot_usd_per_h = 0.3 + spw_rng_uniform(&g);
        p.ondemand_usd_per_h = 3 + spw_rng_uniform(&g);
        double max_loss = spw_ckpt_max_loss_s(p.checkpoint_interval_s, p.work_s);
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
            /* Only spot is preempted, and one preemption loses at most the
             * most the checkpoint mode allows (nothing when continuous). */
            if (r.lost_s < 0 || r.lost_s > r.spot_work_s + 1e-6 ||
                r.lost_s > r.preemptions * max_loss + 1e-6) {
                if (lost_bad++ == 0)
                    diag("lost %g: policy %d ckpt %g spot work %g preemptions %u max loss %g",
                         r.lost_s, pol, p.checkpoint_interval_s, r.spot_work_s,
                         r.preemptions, max_loss);
            }
            /* Paid beyond progress is restart overhead: at most d per start. */
            double over = r.spot_paid_s + r.ondemand_paid_s - r.spot_work_s - r.ondemand_work_s;
            if (over < -1e-6 || over > r.starts * p.restart_overhead_s + 1e-6)
                paid_bad++;
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
            scratch_spot += mode == 2 && r.spot_work_s > 0;
            scratch_lost += mode == 2 && r.lost_s > 0;
            k_lost += mode == 1 && r.lost_s > 0;
        }
    }
    is(errs, 0, "every random replay ends (%d runs)", runs);
    is(twice, 0, "no progress counted twice: kept progress = work, paid <= elapsed");
    is(lost_bad, 0, "lost progress <= spot progress and <= preemptions x max loss");
    is(paid_bad, 0, "paid - progress is restart overhead, at most d per start");
    is(cost, 0, "cost = paid seconds x price, summed");
    is(missed, 0, "greedy and uniform-progress meet every feasible deadline (%d runs)", feasible);
    is(od_wrong, 0, "ondemand meets the deadline exactly when it is feasible");
    ok(scratch_spot > 100 && scratch_lost > 20 && k_lost > 20,
       "the cases reach the interesting paths: %d from-scratch runs on spot, %d of them "
       "losing work, %d runs losing work to an interval", scratch_spot, scratch_lost, k_lost);
}

static void test_sweep(void)
{
    static uint32_t a[2000];
    spw_rng_t g;
    spw_rng_seed(&g, 7);
    random_trace(&g, a, 2000, 0.6, 0.95);
    spw_spot_trace_t t = mk_trace(a, 2000, 600);
    spw_spotjob_params_t p = {48 * 3600.0, 60 * 3600.0, 720, CONT, 0.92, 3.06};
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

    /* A long deadline leaves room for spot even without checkpoints; then
     * restarting from scratch loses more and costs more than continuous. */
    p.deadline_s = 150 * 3600.0;
    spw_spotjob_sweep(&p, pols + 1, 1, &t, 1, 200, 5, s1, &err);
    p.checkpoint_interval_s = 0;
    spw_spotjob_sweep(&p, pols + 1, 1, &t, 1, 200, 5, s2, &err);
    ok(s1[0].lost_h_mean == 0 && s2[0].lost_h_mean > 1 &&
       s2[0].cost_usd_mean > s1[0].cost_usd_mean && s2[0].missed == 0,
       "greedy from scratch: %.1f h lost, $%.1f, against continuous %.1f h, $%.1f",
       s2[0].lost_h_mean, s2[0].cost_usd_mean, s1[0].lost_h_mean, s1[0].cost_usd_mean);
}

/* One hour steps; work, deadline and overhead in steps. */
static spw_spot_mr_job_t mr_job(const spw_spot_region_t *regs, size_t n, double work,
                                double deadline, double overhead, double egress)
{
    spw_spot_mr_job_t j = {{work * 3600, deadline * 3600, overhead * 3600, CONT, 3600}, regs, n,
                           egress};
    return j;
}

/* The optimum on a trace small enough to enumerate by hand.  Region 0 has
 * spot in steps 0-1, region 1 in steps 2-4; spot $1/h, on demand $3/h, one
 * step of overhead per start, 2 steps of work. */
static void test_mr_optimum(void)
{
    static const uint8_t r0[] = {1, 1, 0, 0, 0}, r1[] = {0, 0, 1, 1, 1};
    const uint8_t *av[] = {r0, r1};
    spw_spot_region_t regs[] = {{1, 3}, {1, 3}};
    spw_error_t err;
    double c = -1;

    /* Deadline 5: start in region 1 at step 2 (boot), work steps 3-4: $3. */
    spw_spot_mr_job_t j = mr_job(regs, 2, 2, 5, 1, 0.5);
    is(spw_spot_mr_optimum(&j, av, 5, &c, &err), 0, "optimum, deadline 5: found");
    is_double(c, 3, 1e-9, "deadline 5: region 1 alone, boot + 2 steps of spot = $3");
    /* Deadline 4: boot and one step in region 0, move (egress $0.5), boot and
     * one step in region 1: 2 + 0.5 + 2 = $4.5 (on demand would be $9). */
    j = mr_job(regs, 2, 2, 4, 1, 0.5);
    is(spw_spot_mr_optimum(&j, av, 5, &c, &err), 0, "deadline 4: found");
    is_double(c, 4.5, 1e-9, "deadline 4: one step in each region, one move = $4.5");
    j.egress_usd = 0;
    spw_spot_mr_optimum(&j, av, 5, &c, &err);
    is_double(c, 4, 1e-9, "deadline 4, free moves: $4");
    /* A dear move: region 0's step, then on demand in region 0 (no move):
     * 2 + 3 * 2 = $8, under the move's 2 + 5 + 2 and on demand's $9. */
    j.egress_usd = 5;
    spw_spot_mr_optimum(&j, av, 5, &c, &err);
    is_double(c, 8, 1e-9, "deadline 4, $5 moves: spot, then on demand where the state is = $8");
    /* Deadline 3: only on demand from the start fits: $9. */
    j = mr_job(regs, 2, 2, 3, 1, 0.5);
    spw_spot_mr_optimum(&j, av, 5, &c, &err);
    is_double(c, 9, 1e-9, "deadline 3: on demand from the start, boot + 2 steps = $9");
    /* Deadline 2: work + overhead does not fit. */
    c = -1;
    j = mr_job(regs, 2, 2, 2, 1, 0.5);
    is(spw_spot_mr_optimum(&j, av, 5, &c, &err), 1, "deadline 2: no strategy fits");
    is_double(c, -1, 0, "and the cost is left alone");
    /* No overhead: region 0's two steps: $2. */
    j = mr_job(regs, 2, 2, 2, 0, 0.5);
    spw_spot_mr_optimum(&j, av, 5, &c, &err);
    is_double(c, 2, 1e-9, "no overhead, deadline 2: region 0's two steps = $2");
    /* Refusals. */
    j = mr_job(regs, 2, 2, 4, 1, 0.5);
    is(spw_spot_mr_optimum(&j, av, 3, &c, &err), -1, "availability shorter than the deadline");
    j.job.work_s = 5000;
    ok(spw_spot_mr_optimum(&j, av, 5, &c, &err) == -1 && strstr(err.text, "whole numbers"),
       "work off the step grid is refused: %s", err.text);
    j = mr_job(regs, 2, 2, 4, 1, 0.5);
    j.job.checkpoint_interval_s = 600;
    ok(spw_spot_mr_check(&j, &err) == -1 && strstr(err.text, "continuous"),
       "checkpoints other than continuous are refused: %s", err.text);
    spw_spot_job_t b = {5000, 11000, 100, CONT, 3600};
    spw_spot_mr_round(&b);
    ok(b.work_s == 7200 && b.deadline_s == 10800 && b.restart_overhead_s == 3600,
       "rounding: work and overhead up, deadline down, to whole steps");
}

/* Whole steps of k ticks: the least count of each step's ticks. */
static void test_coarsen(void)
{
    uint32_t a[] = {1, 2, 0, 3, 4, 5, 9};
    spw_spot_trace_t t = mk_trace(a, 7, 30), c;
    spw_error_t err;
    is(spw_spot_trace_coarsen(&t, 2, &c, &err), 0, "coarsen by 2");
    ok(c.n == 3 && c.gap_s == 60 && c.avail[0] == 1 && c.avail[1] == 0 && c.avail[2] == 4,
       "steps of 2 ticks: least counts 1, 0, 4; 60 s; the odd last tick dropped");
    spw_spot_trace_clear(&c);
    ok(spw_spot_trace_coarsen(&t, 0, &c, &err) == -1 &&
       spw_spot_trace_coarsen(&t, 8, &c, &err) == -1, "steps of 0 ticks, or longer than the "
       "trace, are refused: %s", err.text);
}

/* The policy's choices of region. */
static void test_mr_decide(void)
{
    spw_spot_region_t regs[] = {{1, 3}, {0.5, 3}, {1, 2}};
    spw_spot_mr_job_t j = mr_job(regs, 3, 10, 100, 1, 2);
    spw_spot_mr_view_t v = {ID, -1, 0, 0};
    uint8_t av[3] = {1, 1, 0};
    uint32_t st[3] = {5, 1, 9};
    spw_spot_mr_choice_t c;

    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, NULL);
    ok(c.inst == SP && c.region == 1, "first start: the cheapest available spot region");
    v.region = 0;
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, NULL);
    ok(c.inst == SP && c.region == 1, "$0.5/h over 11 h beats staying at $1/h despite a "
       "$2 move");
    regs[1].spot_usd_per_h = 0.9;  /* saves $1.1, under the $2 move */
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, NULL);
    ok(c.inst == SP && c.region == 0, "a saving under the egress: stay where the state is");
    regs[1].spot_usd_per_h = 1;
    j.egress_usd = 0;
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, NULL);
    ok(c.inst == SP && c.region == 0, "a tie: the region up longest (5 steps against 1)");
    double share[3] = {0.4, 0.9, 1};
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, share);
    ok(c.inst == SP && c.region == 1, "a tie: the larger share of recent steps up (0.9 > 0.4) "
       "before the streak");
    /* Ski rental: region 0 down for 1 h, premium $2/h, move $3: wait; after
     * 2 h ($4 of slack): move. */
    j.egress_usd = 3;
    av[0] = 0;
    st[0] = 1;
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, NULL);
    ok(c.inst == ID && c.region == 0, "home down 1 h, $2 of slack < a $3 move: wait");
    st[0] = 2;
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, NULL);
    ok(c.inst == SP && c.region == 1, "home down 2 h, $4 >= $3: move to region 1");
    st[0] = 1;
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, NULL, NULL);
    ok(c.inst == SP && c.region == 1, "without streaks: no waiting");
    /* The Safety Net overrides the waiting: R - C = 1 h < 2d. */
    v.elapsed_s = 89 * 3600;
    c = spw_spot_mr_decide(GREEDY, &j, &v, av, st, NULL);
    ok(c.inst == OD && c.region == 2, "no slack: on demand, in the cheapest region ($2/h)");
    /* Running spot where it is up: stay. */
    v = (spw_spot_mr_view_t){SP, 0, 0, 0};
    av[0] = 1;
    c = spw_spot_mr_decide(UP, &j, &v, av, st, NULL);
    ok(c.inst == SP && c.region == 0, "running spot still up: stay");
    /* Uniform progress, idle, behind, no spot anywhere: on demand. */
    v = (spw_spot_mr_view_t){ID, 0, 10 * 3600, 0};
    memset(av, 0, sizeof(av));
    c = spw_spot_mr_decide(UP, &j, &v, av, st, NULL);
    ok(c.inst == OD && c.region == 2, "UP behind without spot: on demand, moved to region 2 "
       "($2/h x 11 h + $3 = $25 beats $3/h x 11 h = $33 where the state is)");
    regs[2].ondemand_usd_per_h = 2.8;  /* $30.8 + $3 > $33 */
    c = spw_spot_mr_decide(UP, &j, &v, av, st, NULL);
    ok(c.inst == OD && c.region == 0, "a premium under the move: on demand where the state is");
}

/* An adversarial pattern: each region's spot is up for exactly `up` steps,
 * in turn, so some region nearly always has spot but every start there is
 * preempted as its overhead ends, or one step after. */
static void blink_trace(uint8_t **av, size_t R, size_t n, size_t up)
{
    for (size_t k = 0; k < n; k++)
        for (size_t r = 0; r < R; r++)
            av[r][k] = (k / up) % R == r;
}

/* Random and adversarial multi-region replays: deadlines met, no policy
 * below the optimum, cost adds up. */
static void test_mr_properties(void)
{
    enum { MAXR = 4, N = 400 };
    static uint8_t buf[MAXR][N];
    static uint32_t a32[N];
    uint8_t *av[MAXR];
    spw_spot_region_t regs[MAXR];
    spw_rng_t g;
    int runs = 0, missed = 0, below = 0, errs = 0, cost_bad = 0, single_below = 0, moved = 0;
    int adversarial = 0, od_used = 0;

    for (size_t r = 0; r < MAXR; r++)
        av[r] = buf[r];
    spw_rng_seed(&g, 7);
    for (int it = 0; it < 600; it++) {
        size_t R = 1 + spw_rng_below(&g, MAXR);
        double m = (double)spw_rng_below(&g, 4), W = (double)(1 + spw_rng_below(&g, 60));
        double D = W + m + floor(spw_rng_uniform(&g) * 2 * W);
        int adv = it % 4 == 0;
        for (size_t r = 0; r < R; r++) {
            regs[r].spot_usd_per_h = 0.2 + spw_rng_uniform(&g);
            regs[r].ondemand_usd_per_h = 2 + spw_rng_uniform(&g);
            if (!adv) {
                random_trace(&g, a32, N, spw_rng_uniform(&g), 0.5 + 0.5 * spw_rng_uniform(&g));
                for (size_t k = 0; k < N; k++)
                    av[r][k] = a32[k] > 0;
            }
        }
        if (adv)
            blink_trace(av, R, N, (size_t)m + spw_rng_below(&g, 2) + (m == 0));
        adversarial += adv;
        spw_spot_mr_job_t j = {{W * 600, D * 600, m * 600, CONT, 600}, regs, R,
                               3 * spw_rng_uniform(&g)};
        double best;
        spw_error_t err;
        if (spw_spot_mr_optimum(&j, (const uint8_t *const *)av, N, &best, &err) != 0) {
            if (errs++ == 0)
                diag("optimum: %s", err.text);
            continue;
        }
        for (int pol = GREEDY; pol <= UP; pol++) {
            spw_spotjob_mr_result_t r;
            if (spw_spotjob_mr_run(&j, (spw_spot_policy_t)pol, (const uint8_t *const *)av, N,
                                   0, &r, &err) < 0) {
                if (errs++ == 0)
                    diag("replay: %s", err.text);
                continue;
            }
            runs++;
            if (!r.deadline_met && missed++ == 0)
                diag("missed: R %zu W %g D %g m %g adv %d finish %g", R, W, D, m, adv,
                     r.finish_s / 600);
            if (r.cost_usd < best - 1e-9 && below++ == 0)
                diag("policy %d $%g below the optimum $%g (R %zu W %g D %g m %g)", pol,
                     r.cost_usd, best, R, W, D, m);
            if (r.spot_paid_s + r.ondemand_paid_s < W * 600 - 1e-6 ||
                r.spot_paid_s + r.ondemand_paid_s > W * 600 + r.starts * m * 600 + 1e-6 ||
                fabs(r.egress_usd - r.moves * j.egress_usd) > 1e-9)
                cost_bad++;
            moved += r.moves > 0;
            od_used += r.ondemand_paid_s > 0;
            /* Each region alone, in the single-region replay, is a strategy
             * the optimum may also take. */
            if (pol == UP) {
                spw_spotjob_params_t p = {W * 600, D * 600, m * 600, CONT, 0, 0};
                for (size_t q = 0; q < R; q++) {
                    spw_spotjob_result_t s1;
                    for (size_t k = 0; k < N; k++)
                        a32[k] = av[q][k];
                    spw_spot_trace_t t = mk_trace(a32, N, 600);
                    p.spot_usd_per_h = regs[q].spot_usd_per_h;
                    p.ondemand_usd_per_h = regs[q].ondemand_usd_per_h;
                    if (spw_spotjob_run(&p, UP, &t, 0, &s1, &err) == 0 &&
                        s1.cost_usd < best - 1e-9)
                        single_below++;
                }
            }
        }
    }
    is(errs, 0, "every multi-region optimum and replay ends (%d replays, %d adversarial "
       "traces)", runs, adversarial);
    is(missed, 0, "greedy and uniform-progress across regions meet every deadline, on "
       "random traces and on ones that preempt every start");
    is(below, 0, "no replay costs less than the omniscient optimum");
    is(single_below, 0, "no single-region uniform-progress replay costs less than it");
    is(cost_bad, 0, "paid = work + at most one overhead per start; egress = moves x price");
    ok(moved > 100 && od_used > 100, "the cases reach moves (%d replays) and on demand (%d)",
       moved, od_used);
}

/* The sweep on regions: one row per policy per region, per policy across the
 * regions, and the optimum, which no row's mean undercuts. */
static void test_mr_sweep(void)
{
    enum { N = 3000 };
    static uint32_t a[3][N];
    spw_spot_trace_t t[3];
    spw_spot_region_t regs[3] = {{1, 3}, {1, 3}, {1, 3}};
    spw_spot_policy_t pols[] = {GREEDY, UP};
    spw_spotjob_mr_row_t rows[SPW_SPOTJOB_MR_ROWS(2, 3)];
    spw_rng_t g;
    spw_error_t err;

    spw_rng_seed(&g, 5);
    for (int r = 0; r < 3; r++) {
        random_trace(&g, a[r], N, 0.6, 0.95);
        t[r] = mk_trace(a[r], N, 600);
    }
    spw_spot_mr_job_t j = {{48 * 600, 80 * 600, 2 * 600, CONT, 600}, regs, 3, 0.5};
    is(spw_spotjob_mr_sweep(&j, pols, 2, t, 40, 3, rows, &err), 0, "sweep over 3 regions");
    size_t nrows = SPW_SPOTJOB_MR_ROWS(2, 3);
    int low = 0, runs = 0, missed = 0;
    for (size_t i = 0; i < nrows; i++) {
        low += rows[i].cost_usd_mean < rows[nrows - 1].cost_usd_mean - 1e-9;
        runs += rows[i].runs == 40;
        missed += (int)rows[i].missed;
    }
    ok(rows[0].kind == SPW_SPOTJOB_MR_SINGLE && rows[0].region == 0 &&
       rows[3].kind == SPW_SPOTJOB_MR_MULTI && rows[7].region == -1 &&
       rows[8].kind == SPW_SPOTJOB_MR_OPTIMUM, "rows: 3 regions alone, then across, per policy, "
       "then the optimum");
    is(runs, (int)nrows, "40 runs in every row");
    is(low, 0, "no row's mean cost is below the optimum's");
    is(missed, 0, "no row misses a deadline");
    t[1].gap_s = 300;
    ok(spw_spotjob_mr_sweep(&j, pols, 2, t, 40, 3, rows, &err) == -1 &&
       strstr(err.text, "region 2"), "a trace with another tick is refused: %s", err.text);
}

int main(void)
{
    test_checkpoints();
    test_decisions();
    test_replays();
    test_properties();
    test_sweep();
    test_coarsen();
    test_mr_optimum();
    test_mr_decide();
    test_mr_properties();
    test_mr_sweep();
    return done_testing();
}
