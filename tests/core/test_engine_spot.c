/* test_engine_spot.c: spot capacity, interruptions, deadlines and node
 * failures in the decision engine, driven directly on hand-built fleets.
 * Every placement, progress figure and cost is worked out by hand in the
 * comments. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fleet.h"
#include "tap.h"
#include "core/engine.h"
#include "core/model.h"
#include "core/spot.h"

#define EPS 1e-9

static void job_init(spw_job_t *j, const char *id, double submit_s, double est_s, uint32_t gpus,
                     uint32_t order)
{
    spw_job_clear(j);   /* jobs are zero-initialised (= {0}) or inited before */
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->submit_s = submit_s;
    j->est_runtime_s = est_s;
    j->gpus = gpus;
    j->order = order;
    j->deadline_s = NAN;
    j->checkpoint_interval_s = SPW_CKPT_CONTINUOUS;
    spw_job_reset(j);
}

/* An engine with FIFO, head-of-line, first fit, the given wait rule, spot
 * policy and restart overhead. */
static spw_engine_t *engine(const spw_fleet_t *f, const char *wait, spw_spot_policy_t sp,
                            double overhead_s, void (*tweak)(spw_policy_t *))
{
    spw_policy_t p;
    spw_policy_default(&p);
    p.spot_policy = sp;
    p.restart_overhead_s = overhead_s;
    spw_error_t err;
    if (spw_wait_parse(wait, &p.wait, &err) < 0)
        diag("bad wait '%s' in the test: %s", wait, err.text);
    if (tweak)
        tweak(&p);
    spw_engine_t *e = spw_engine_create(f, &p, &err);
    if (!e)
        diag("spw_engine_create: %s", err.text);
    return e;
}

static size_t sched(spw_engine_t *e, double now)
{
    spw_job_t **placed;
    return spw_engine_schedule(e, now, &placed);
}

/* ---- 1. spot without a deadline, a preemption, checkpoints ------------------ */

/* One offer: $10/h on demand, $3/h spot, 1 GPU, boot 0; no pools.  Greedy,
 * restart overhead 60 s; the job: 1 GPU, est 3600 s, checkpoint every 600 s.
 * t=0: spot is unlimited -> spot.  t=1000: preempted: it ran 1000 - 60 =
 * 940 s of work, kept to the checkpoint at 600, lost 340.  No deadline and
 * no spot left -> on demand at once, for the 3000 s left.  Costs: spot
 * 1000 s x $3/h = $0.8333; on demand 60 + 3000 s x $10/h = $8.5. */
static void test_spot_no_deadline(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_GREEDY, 60, NULL);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 3600, 1, 1);
    j.checkpoint_interval_s = 600;
    spw_engine_submit(e, &j, 0);
    is(sched(e, 0), 1, "no deadline: placed at t=0");
    ok(j.state == SPW_JOB_CLOUD && j.spot == 1, "no deadline: on spot while spot is free");
    is(spw_engine_offer_held(e, 0, 1), 1, "no deadline: one spot instance held");
    is(spw_engine_offer_held(e, 0, 0), 0, "no deadline: no on-demand instance held");

    spw_engine_set_spot_capacity(e, 0, 0, 1000);
    is(spw_engine_interrupt(e, &j, SPW_INTERRUPT_PREEMPTED, 1000), 0,
       "no deadline: the preempted job is requeued");
    is_double(spw_job_rare(&j)->done_s, 600, EPS, "no deadline: 940 s of work kept to the checkpoint at 600 s");
    is_double(spw_job_rare(&j)->lost_s, 340, EPS, "no deadline: 340 s of work lost");
    is_double(spw_job_rare(&j)->lost_gpu_s, 340, EPS, "no deadline: 340 GPU-seconds lost");
    ok(spw_job_rare(&j)->preemptions == 1 && spw_job_rare(&j)->restarts == 1 && spw_job_rare(&j)->failures == 0,
       "no deadline: one preemption, one restart");
    is(spw_job_rare(&j)->last_offer, 0, "no deadline: it remembers the offer it lost");
    is_double(spw_job_rare(&j)->spot_gpu_s, 1000, EPS, "no deadline: 1000 paid spot GPU-seconds");
    is_double(j.cost_usd, 1000 * 3.0 / 3600, EPS, "no deadline: the spot attempt cost $0.8333");
    is(spw_engine_offer_held(e, 0, 1), 0, "no deadline: the spot instance is released");

    is(sched(e, 1000), 1, "no deadline: re-placed at once");
    ok(j.state == SPW_JOB_CLOUD && j.spot == 0, "no deadline: on demand, spot being gone");
    spw_engine_finish(e, &j, 1000 + 60 + 3000);
    is_double(spw_job_rare(&j)->ondemand_gpu_s, 3060, EPS, "no deadline: 3060 paid on-demand GPU-seconds");
    is_double(j.cost_usd, 1000 * 3.0 / 3600 + 3060 * 10.0 / 3600, 1e-9,
              "no deadline: cost = paid seconds x price of each attempt");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* ---- 2. greedy with a deadline ----------------------------------------------- */

/* Same offer, no pools.  Greedy, overhead d = 60 s (boot 0), continuous
 * checkpoints: safety slack = d + max(d, 0) + 0 = 120 s.  Job: est 3600 s,
 * deadline t=7200, no spot at first.  t=0: slack 7200 - 3600 = 3600 >= 120
 * -> wait for spot; greedy turns to on demand at 7200 - 3600 - 120 = 3480.
 * t=1800: spot returns -> spot (reason SPOT).  t=2400: preempted after
 * 2400 - 1800 - 60 = 540 s of work, all kept.  No spot: wait again until
 * 7200 - 3060 - 120 = 4020, then on demand (reason DEADLINE), ending at
 * 4020 + 60 + 3060 = 7140 <= 7200. */
static void test_greedy_deadline(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_GREEDY, 60, NULL);
    spw_engine_set_spot_capacity(e, 0, 0, 0);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 3600, 1, 1);
    j.deadline_s = 7200;
    spw_engine_submit(e, &j, 0);
    is(sched(e, 0), 0, "greedy: nothing placed while spot is gone and slack is left");
    ok(j.state == SPW_JOB_QUEUED && j.reason == SPW_REASON_WAIT_SPOT, "greedy: waiting for spot");
    is_double(spw_engine_next_wakeup(e), 3480, 1e-6, "greedy: the engine wakes at t=3480");
    spw_engine_set_spot_capacity(e, 0, 1, 1800);
    is(sched(e, 1800), 1, "greedy: spot returns at t=1800 and the job takes it");
    ok(j.spot == 1 && j.reason == SPW_REASON_SPOT, "greedy: on spot, reason SPOT");

    spw_engine_set_spot_capacity(e, 0, 0, 2400);
    is(spw_engine_interrupt(e, &j, SPW_INTERRUPT_PREEMPTED, 2400), 0, "greedy: preempted at t=2400");
    is_double(spw_job_rare(&j)->done_s, 540, EPS, "greedy: 540 s of work kept (continuous checkpoints)");
    is_double(spw_job_rare(&j)->lost_s, 0, EPS, "greedy: nothing lost");
    is(sched(e, 2400), 0, "greedy: waits for spot again");
    is_double(spw_engine_next_wakeup(e), 4020, 1e-6, "greedy: until t=4020");
    is(sched(e, 4019), 0, "greedy: still waiting at t=4019");
    is(sched(e, spw_engine_next_wakeup(e)), 1, "greedy: on demand just after t=4020");
    ok(j.spot == 0 && j.reason == SPW_REASON_DEADLINE, "greedy: on demand because of the deadline");
    double end = j.start_s + 60 + (3600 - spw_job_rare(&j)->done_s);
    ok(end <= j.deadline_s, "greedy: ends at %.0f, by its deadline 7200", end);
    spw_engine_finish(e, &j, end);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* ---- 3. uniform progress, spot only, ondemand ----------------------------------- */

/* Same setup under Uniform Progress: at t=0 it has done 0 = ep(0), not
 * behind, so it waits; ep(t) > 0 for any t > 0, so it turns to on demand
 * at once (the engine looks again 1 ms later). */
static void test_uniform_progress(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_UNIFORM_PROGRESS, 60, NULL);
    spw_engine_set_spot_capacity(e, 0, 0, 0);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 3600, 1, 1);
    j.deadline_s = 7200;
    spw_engine_submit(e, &j, 0);
    is(sched(e, 0), 0, "UP: not behind at t=0: waits");
    double w = spw_engine_next_wakeup(e);
    ok(w > 0 && w <= 0.01, "UP: looks again just after t=0 (%g)", w);
    is(sched(e, w), 1, "UP: behind uniform progress: placed");
    ok(j.spot == 0 && j.reason == SPW_REASON_DEADLINE, "UP: on demand to catch up");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* Uniform Progress's hysteresis in the multi-job engine.  Same offer and
 * job as above (d = 60 s + boot 0; k = work / deadline = 0.5).  The job goes
 * on demand at w (just after 0); its progress starts at r0 = w + 60.  It is
 * ahead by the margin when done(t) = t - r0 >= ep(t + 2d) = (t + 120) / 2,
 * i.e. from t* = 2 r0 + 120 = 240 + 2w.  Spot returns at t=200: not ahead yet,
 * no move.  At t* it moves: stopped cleanly, all 180 s of work kept, one
 * restart, no preemption, back at once on spot (reason SWITCH_SPOT), paying
 * its 60 s overhead again.  A greedy job on demand never moves. */
static void test_up_switch(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_UNIFORM_PROGRESS, 60, NULL);
    spw_engine_set_spot_capacity(e, 0, 0, 0);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 3600, 1, 1);
    j.deadline_s = 7200;
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    double w = spw_engine_next_wakeup(e);
    is(sched(e, w), 1, "switch: on demand just after t=0");
    ok(j.state == SPW_JOB_CLOUD && j.spot == 0, "switch: on demand while no spot");
    spw_job_t **moves;
    double tstar = 2 * (w + 60) + 120;
    is_double(spw_engine_next_wakeup(e), tstar, 1e-6, "switch: it looks again at t* = %.3f", tstar);

    spw_engine_set_spot_capacity(e, 0, 1, 200);
    sched(e, 200);
    is(spw_engine_switches(e, &moves), 0, "switch: spot at t=200, but not ahead yet: stays");
    double t = spw_engine_next_wakeup(e);
    size_t n = 0;
    for (int k = 0; k < 3 && !n && t < 300; k++) {
        sched(e, t);
        n = spw_engine_switches(e, &moves);
        if (!n)
            t = spw_engine_next_wakeup(e);
    }
    ok(n == 1 && moves[0] == &j, "switch: moved once ahead (t=%.3f)", t);
    ok(t >= tstar && t <= tstar + 1.01, "switch: at t* or within the 1 s rounding retry");
    ok(j.state == SPW_JOB_CLOUD && j.spot == 0, "switch: the engine waits for the caller to stop it");
    is(spw_engine_interrupt(e, &j, SPW_INTERRUPT_SWITCH, t), 0, "switch: interrupted by the caller");
    is_double(spw_job_rare(&j)->done_s, t - w - 60, 1e-6, "switch: a clean stop keeps all %.3f s of work", t - w - 60);
    is_double(spw_job_rare(&j)->lost_s, 0, 0, "switch: nothing lost");
    ok(spw_job_rare(&j)->restarts == 1 && spw_job_rare(&j)->preemptions == 0 && spw_job_rare(&j)->failures == 0,
       "switch: one restart, no preemption or failure");
    is_double(spw_job_rare(&j)->ondemand_gpu_s, t - w, 1e-6, "switch: the on-demand attempt is paid to now");
    is(sched(e, t), 1, "switch: re-placed at once");
    ok(j.state == SPW_JOB_CLOUD && j.spot == 1 && j.reason == SPW_REASON_SWITCH_SPOT,
       "switch: on spot, reason SWITCH_SPOT (spot %d, %s)", j.spot, spw_reason_text(j.reason));
    is(spw_engine_switches(e, &moves), 0, "switch: a spot job is not moved again");
    double end = t + 60 + (3600 - spw_job_rare(&j)->done_s);
    ok(end <= j.deadline_s, "switch: ends at %.0f, by its deadline", end);
    spw_engine_finish(e, &j, end);
    spw_engine_destroy(e);

    /* Greedy: on demand only through the Safety Net, and it stays there. */
    e = engine(&f, "none", SPW_SPOT_POLICY_GREEDY, 60, NULL);
    spw_engine_set_spot_capacity(e, 0, 0, 0);
    spw_job_clear(&j);
    job_init(&j, "g", 0, 3600, 1, 1);
    j.deadline_s = 3800;        /* slack 200 - d: on demand soon */
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    for (int k = 0; k < 4 && j.state == SPW_JOB_QUEUED; k++)
        sched(e, spw_engine_next_wakeup(e));
    ok(j.state == SPW_JOB_CLOUD && j.spot == 0, "switch: greedy on demand by its safety net");
    spw_engine_set_spot_capacity(e, 0, 1, 500);
    sched(e, 500);
    is(spw_engine_switches(e, &moves), 0, "switch: greedy never moves back to spot");
    ok(isinf(spw_engine_next_wakeup(e)), "switch: nothing to look at later for greedy");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

static void test_spot_only_and_never(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_GREEDY, 0, NULL);
    spw_engine_set_spot_capacity(e, 0, 0, 0);
    spw_job_t a = {0}, b = {0};
    job_init(&a, "always", 0, 3600, 1, 1);
    a.spot_mode = SPW_SPOTMODE_ALWAYS;
    a.deadline_s = 3600;    /* no slack at all: spot only ignores it */
    job_init(&b, "never", 0, 3600, 1, 2);
    b.spot_mode = SPW_SPOTMODE_NEVER;
    spw_engine_submit(e, &a, 0);
    spw_engine_submit(e, &b, 0);
    is(sched(e, 0), 1, "spot modes: one job placed at t=0");
    ok(b.state == SPW_JOB_CLOUD && b.spot == 0, "spot never: on demand");
    ok(a.state == SPW_JOB_QUEUED && a.reason == SPW_REASON_WAIT_SPOT, "spot always: waits for spot");
    ok(isinf(spw_engine_next_wakeup(e)), "spot always: no wake-up until capacity changes");
    spw_engine_set_spot_capacity(e, 0, 1, 500);
    is(sched(e, 500), 1, "spot always: placed when spot returns");
    ok(a.spot == 1, "spot always: on spot");

    /* Policy ondemand: never spot although spot is free. */
    spw_engine_t *e2 = engine(&f, "none", SPW_SPOT_POLICY_ONDEMAND, 0, NULL);
    spw_job_t c = {0};
    job_init(&c, "c", 0, 3600, 1, 1);
    spw_engine_submit(e2, &c, 0);
    is(sched(e2, 0), 1, "ondemand: placed");
    is(c.spot, 0, "ondemand: never on spot");
    /* A job naming greedy overrides the policy's ondemand. */
    spw_job_t d = {0};
    job_init(&d, "d", 0, 3600, 1, 2);
    d.spot_policy = SPW_SPOT_POLICY_GREEDY + 1;
    spw_engine_submit(e2, &d, 0);
    is(sched(e2, 0), 1, "job's own greedy: placed");
    is(d.spot, 1, "job's own greedy: on spot");
    spw_engine_destroy(e);
    spw_engine_destroy(e2);
    spw_fleet_clear(&f);
    spw_job_clear(&a);
    spw_job_clear(&b);
    spw_job_clear(&c);
    spw_job_clear(&d);
}

/* ---- 4. checkpoints, max_restarts -------------------------------------------- */

static void one_restart(spw_policy_t *p)
{
    p->max_restarts = 1;
}

/* Checkpoint 0: an interruption loses everything.  max_restarts 1: the
 * second interruption fails the job. */
static void test_scratch_and_max_restarts(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_GREEDY, 0, one_restart);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 3600, 2, 1);     /* 2 GPUs: a gang of 2 instances */
    j.checkpoint_interval_s = 0;
    spw_engine_submit(e, &j, 0);
    is(sched(e, 0), 1, "scratch: placed");
    is(spw_engine_offer_held(e, 0, 1), 2, "gang: two spot instances held");
    is(spw_engine_interrupt(e, &j, SPW_INTERRUPT_PREEMPTED, 1500), 0, "scratch: first preemption requeues");
    is_double(spw_job_rare(&j)->done_s, 0, EPS, "scratch: nothing kept without checkpoints");
    is_double(spw_job_rare(&j)->lost_s, 1500, EPS, "scratch: all 1500 s lost");
    is_double(spw_job_rare(&j)->lost_gpu_s, 3000, EPS, "scratch: 3000 GPU-seconds lost (2 GPUs)");
    is(sched(e, 1500), 1, "scratch: re-placed");
    is(spw_engine_interrupt(e, &j, SPW_INTERRUPT_PREEMPTED, 2000), 1,
       "max_restarts 1: the second preemption fails the job");
    ok(j.state == SPW_JOB_FAILED && j.reason == SPW_REASON_MAX_RESTARTS, "max_restarts: FAILED");
    is_double(j.end_s, 2000, EPS, "max_restarts: ended at t=2000");
    is(spw_engine_offer_held(e, 0, 1), 0, "max_restarts: nothing held");
    is(spw_engine_queued(e), 0, "max_restarts: nothing queued");
    is(spw_engine_interrupt(e, &j, SPW_INTERRUPT_PREEMPTED, 2000), -1,
       "interrupting a job that is not placed: -1");

    /* Spot capacity 1 for a gang of 2: no spot; greedy without a deadline
     * takes on demand. */
    spw_engine_set_spot_capacity(e, 0, 1, 3000);
    spw_job_t g = {0};
    job_init(&g, "g", 3000, 600, 2, 2);
    spw_engine_submit(e, &g, 3000);
    is(sched(e, 3000), 1, "gang: placed");
    is(g.spot, 0, "gang: one spot instance is not enough for two: on demand");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
    spw_job_clear(&g);
}

/* ---- 5. recovery ------------------------------------------------------------- */

static void next_region(spw_policy_t *p)
{
    p->recovery = SPW_RECOVERY_NEXT_REGION;
}

/* Spot prices: A us-east-1 $2, B us-west-2 $3, C us-east-1 $4.  A job on A
 * is preempted and A has no spot left.  same_region_first: C (its region)
 * before B though B is cheaper; next_region: B. */
static void test_recovery(void)
{
    for (int mode = 0; mode < 2; mode++) {
        spw_fleet_t f;
        spw_fleet_init(&f);
        add_offer(&f, "aws", "us-east-1", "A", NULL, 1, 10.0, 2.0, 0);
        add_offer(&f, "aws", "us-west-2", "B", NULL, 1, 10.0, 3.0, 0);
        add_offer(&f, "aws", "us-east-1", "C", NULL, 1, 10.0, 4.0, 0);
        spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_GREEDY, 0, mode ? next_region : NULL);
        spw_job_t j = {0};
        job_init(&j, "j", 0, 3600, 1, 1);
        spw_engine_submit(e, &j, 0);
        sched(e, 0);
        is(j.offer, 0, "recovery: first on the cheapest spot, A");
        spw_engine_set_spot_capacity(e, 0, 0, 100);
        spw_engine_interrupt(e, &j, SPW_INTERRUPT_PREEMPTED, 100);
        sched(e, 100);
        is(j.offer, mode ? 1 : 2, "recovery %s: re-placed on %s", mode ? "next_region" : "same_region_first",
           mode ? "B (another region)" : "C (the same region)");
        ok(j.spot == 1, "recovery: still on spot");
        /* A returns: a later preemption of C goes back to A first (same
         * offer) under same_region_first. */
        if (!mode) {
            spw_engine_set_spot_capacity(e, 0, 1, 200);
            spw_engine_set_spot_capacity(e, 2, 0, 200);
            spw_engine_interrupt(e, &j, SPW_INTERRUPT_PREEMPTED, 200);
            sched(e, 200);
            is(j.offer, 0, "recovery: C lost: back to C's region, A now the cheapest there");
        }
        spw_engine_destroy(e);
        spw_fleet_clear(&f);
        spw_job_clear(&j);
    }
}

/* ---- 6. deadlines and on-prem waits ----------------------------------------- */

/* One 1-GPU node held by a blocker; one offer, on demand only, boot 100 s.
 * Wait constant 1e6 s.  A job with est 1000 s and deadline t=5000 bursts at
 * 5000 - 1000 - 100 = 3900, not after 1e6 s. */
static void test_deadline_burst(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, NAN, 100);
    spw_engine_t *e = engine(&f, "constant:1000000", SPW_SPOT_POLICY_GREEDY, 0, NULL);
    spw_job_t b = {0}, j = {0};
    job_init(&b, "b", 0, 1e7, 1, 1);
    job_init(&j, "j", 0, 1000, 1, 2);
    j.deadline_s = 5000;
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &j, 0);
    is(sched(e, 0), 1, "deadline: the blocker starts on-prem");
    is_double(spw_engine_next_wakeup(e), 3900, 1e-9, "deadline: the job bursts at t=3900");
    is(sched(e, 3900), 1, "deadline: burst at t=3900");
    ok(j.state == SPW_JOB_CLOUD && j.reason == SPW_REASON_DEADLINE, "deadline: reason DEADLINE");
    is_double(j.start_s, 4000, EPS, "deadline: it runs from t=4000 and ends at 5000");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);

    /* The same on spot only (the offer has a spot price): the deadline sends
     * it to the cloud at 3900 and it takes spot.  Its reason says so, not
     * "needs on-demand capacity" (issue 24). */
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 100);
    e = engine(&f, "constant:1000000", SPW_SPOT_POLICY_GREEDY, 0, NULL);
    spw_job_clear(&b);
    job_init(&b, "b", 0, 1e7, 1, 1);
    spw_job_clear(&j);
    job_init(&j, "j", 0, 1000, 1, 2);
    j.deadline_s = 5000;
    j.spot_mode = SPW_SPOTMODE_ALWAYS;
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    sched(e, 3900);
    ok(j.state == SPW_JOB_CLOUD && j.spot && j.reason == SPW_REASON_DEADLINE_SPOT,
       "deadline on spot: reason '%s'", spw_reason_text(j.reason));
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_job_clear(&j);
}

/* ---- 7. capacity errors ------------------------------------------------------ */

/* On-demand offers A $5/h and B $6/h.  A refuses until t=500: the job goes
 * to B.  Both refuse until 500 and 800: a second job waits until 500 and
 * takes A then. */
static void test_capacity_errors(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "A", NULL, 1, 5.0, NAN, 0);
    add_offer(&f, "aws", "us-east-1", "B", NULL, 1, 6.0, NAN, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_ONDEMAND, 0, NULL);
    spw_engine_offer_unavailable(e, 0, 0, 500);
    spw_job_t j = {0}, k = {0};
    job_init(&j, "j", 0, 100, 1, 1);
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    is(j.offer, 1, "capacity: A backs off, the job takes B");
    spw_engine_offer_unavailable(e, 1, 0, 800);
    job_init(&k, "k", 10, 100, 1, 2);
    spw_engine_submit(e, &k, 10);
    is(sched(e, 10), 0, "capacity: both back off: the job waits");
    is(k.reason, SPW_REASON_WAIT_SPOT, "capacity: waiting for capacity");
    is_double(spw_engine_next_wakeup(e), 500, EPS, "capacity: until A's backoff ends at t=500");
    is(sched(e, 500), 1, "capacity: placed at t=500");
    is(k.offer, 0, "capacity: on A");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
    spw_job_clear(&k);
}

/* ---- 8. node failures ---------------------------------------------------------- */

static void failover_burst(spw_policy_t *p)
{
    p->failover = SPW_FAILOVER_BURST;
}

/* Pool of 2 one-GPU nodes, no cloud.  A job on node 0 loses it at t=100
 * (checkpoint 40 s: 100 s of work kept to 80); the node goes down; the job
 * restarts on node 1.  Node 1 cannot go down while held. */
static void test_node_failure(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 2, 1, NULL, 1.0);
    spw_engine_t *e = engine(&f, "never", SPW_SPOT_POLICY_ONDEMAND, 0, NULL);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 1000, 1, 1);
    j.checkpoint_interval_s = 40;
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    ok(j.state == SPW_JOB_ONPREM && j.node == 0, "failure: the job runs on node 0");
    ok(spw_engine_job_on_node(&j, 0, 0) && !spw_engine_job_on_node(&j, 0, 1),
       "failure: job_on_node says node 0, not node 1");
    is(spw_engine_node_down(e, 0, 0, 1, 100), -1, "failure: a held node cannot go down first");
    is(spw_engine_interrupt(e, &j, SPW_INTERRUPT_NODE_FAILED, 100), 0, "failure: the job is requeued");
    is(spw_engine_node_down(e, 0, 0, 1, 100), 0, "failure: node 0 goes down");
    is(spw_engine_node_down(e, 0, 0, 1, 100), -1, "failure: down twice is refused");
    is_double(spw_job_rare(&j)->done_s, 80, EPS, "failure: 100 s of work kept to the checkpoint at 80 s");
    is(spw_job_rare(&j)->failures, 1, "failure: one failure counted");
    is(j.reason, SPW_REASON_NODE_FAILED, "failure: queued with reason NODE_FAILED");
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    is(st.onprem_gpus, 1, "failure: one on-prem GPU in service");
    sched(e, 100);
    ok(j.state == SPW_JOB_ONPREM && j.node == 1, "failure: restarted on node 1");
    is(spw_engine_node_down(e, 0, 1, 1, 150), -1, "failure: node 1 is held: refused");
    is(spw_engine_node_down(e, 0, 0, 0, 200), 0, "failure: node 0 comes back");
    spw_engine_stats(e, &st);
    is(st.onprem_gpus, 2, "failure: two on-prem GPUs again");
    spw_engine_destroy(e);

    /* failover: a blocker holds node 1; the job waits 1000 s (wait
     * constant:1000) before bursting.  Its node fails at t=2000: with
     * requeue it waits until 3000; with burst it has already waited 1000 s
     * since submission and goes to the cloud at once. */
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, NAN, 0);
    for (int mode = 0; mode < 2; mode++) {
        e = engine(&f, "constant:1000", SPW_SPOT_POLICY_ONDEMAND, 0, mode ? failover_burst : NULL);
        spw_job_t a = {0}, b = {0};
        job_init(&a, "a", 0, 1e6, 1, 1);
        job_init(&b, "b", 0, 1e6, 1, 2);
        spw_engine_submit(e, &a, 0);
        spw_engine_submit(e, &b, 0);
        sched(e, 0);
        spw_engine_interrupt(e, &a, SPW_INTERRUPT_NODE_FAILED, 2000);
        spw_engine_node_down(e, 0, 0, 1, 2000);
        sched(e, 2000);
        if (mode) {
            ok(a.state == SPW_JOB_CLOUD && a.reason == SPW_REASON_FAILOVER,
               "failover burst: to the cloud at once");
        } else {
            ok(a.state == SPW_JOB_QUEUED, "failover requeue: waits on-prem again");
            is_double(spw_engine_next_wakeup(e), 3000, EPS, "failover requeue: until t=3000");
        }
        spw_engine_destroy(e);
        spw_job_clear(&a);
        spw_job_clear(&b);
    }
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* ---- live spot prices -------------------------------------------------------- */

/* Two spot offers, A $3/h and B $4/h spot (on demand $10/h both).  A first
 * job goes to A, the cheaper.  Then the cloud raises A's spot price to $5/h
 * (the caller changes the fleet and says so): the next job of the same
 * class goes to B; the first keeps its price. */
static void test_repriced(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 4.0, 0);
    spw_engine_t *e = engine(&f, "none", SPW_SPOT_POLICY_GREEDY, 0, NULL);
    spw_job_t a = {0}, b = {0};
    job_init(&a, "a", 0, 3600, 1, 1);
    job_init(&b, "b", 0, 3600, 1, 2);
    spw_engine_submit(e, &a, 0);
    is(sched(e, 0), 1, "repriced: the first job is placed");
    ok(a.offer == 0 && a.spot, "repriced: on A's spot, the cheaper");
    f.offers[0].spot_usd_per_h = 5.0;
    spw_engine_offers_repriced(e);
    spw_engine_submit(e, &b, 1);
    is(sched(e, 1), 1, "repriced: the second job is placed");
    ok(b.offer == 1 && b.spot, "repriced: A's spot price rose to $5/h: on B's, now the cheaper");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&a);
    spw_job_clear(&b);
}

int main(void)
{
    test_repriced();
    test_spot_no_deadline();
    test_greedy_deadline();
    test_uniform_progress();
    test_up_switch();
    test_spot_only_and_never();
    test_scratch_and_max_restarts();
    test_recovery();
    test_deadline_burst();
    test_capacity_errors();
    test_node_failure();
    return done_testing();
}
