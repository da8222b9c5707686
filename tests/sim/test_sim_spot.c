/* test_sim_spot.c: the simulator's world: spot capacity from hand-built
 * availability traces, random preemptions, on-prem node failures, restarts
 * and the summary fields they fill.  Every scenario is worked out by hand
 * in the comments; properties over random small instances check that no
 * progress is counted twice, that cost is paid seconds times price, that
 * greedy and uniform progress meet every deadline an on-demand start at
 * submission would meet, and that reruns are identical. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "tap.h"
#include "core/model.h"
#include "core/spot.h"
#include "sim/sim.h"
#include "util/rng.h"
#include "util/spot_trace.h"

#define EPS 1e-6

/* ---- builders ------------------------------------------------------------------ */

static void job_init(spw_job_t *j, const char *id, double submit_s, double runtime_s,
                     uint32_t gpus, uint32_t order)
{
    spw_job_clear(j);   /* jobs are zero-initialised (= {0}) or inited before */
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->submit_s = submit_s;
    j->est_runtime_s = runtime_s;
    j->gpus = gpus;
    j->order = order;
    j->deadline_s = NAN;
    j->checkpoint_interval_s = SPW_CKPT_CONTINUOUS;
}

/* A trace of n ticks of gap_s seconds (owned: spw_spot_trace_clear). */
static spw_spot_trace_t trace_of(double gap_s, size_t n, const uint32_t *avail)
{
    spw_spot_trace_t t = {.gap_s = gap_s, .n = n};
    t.avail = spw_xmalloc(n * sizeof(uint32_t));
    memcpy(t.avail, avail, n * sizeof(uint32_t));
    return t;
}

static spw_policy_t policy(const char *wait, spw_spot_policy_t sp, double overhead_s)
{
    spw_policy_t p;
    spw_policy_default(&p);
    p.spot_policy = sp;
    p.restart_overhead_s = overhead_s;
    spw_error_t err;
    if (spw_wait_parse(wait, &p.wait, &err) < 0)
        diag("bad wait '%s' in the test: %s", wait, err.text);
    return p;
}

/* The cloud of most scenarios: one offer of 1-GPU instances, $10/h on
 * demand, $3/h spot, no boot delay; no on-prem pool. */
static void cloud_fleet(spw_fleet_t *f)
{
    spw_fleet_init(f);
    add_offer(f, "aws", "us-east-1", "g1", NULL, 1, 10.0, 3.0, 0);
}

static int run(const spw_fleet_t *f, const spw_policy_t *p, spw_job_t *j, const double *rt,
               size_t n, const spw_sim_world_t *w, spw_sim_summary_t *s)
{
    spw_sim_opts_t o = {.world = w};
    spw_error_t err;
    int rc = spw_sim_run(f, p, j, rt, n, &o, s, &err);
    if (rc < 0)
        diag("spw_sim_run: %s", err.text);
    return rc;
}

/* Samples kept for the spend-rate checks. */
typedef struct samples {
    spw_sim_sample_t v[64];
    size_t n;
} samples_t;

static void on_sample(void *ctx, const spw_sim_sample_t *s)
{
    samples_t *ss = ctx;
    if (ss->n < 64)
        ss->v[ss->n] = *s;
    ss->n++;
}

/* Everything a rerun must reproduce. */
static int same_run(const spw_sim_summary_t *a, const spw_sim_summary_t *b, const spw_job_t *ja,
                    const spw_job_t *jb, size_t n)
{
    if (memcmp(a, b, sizeof(*a)) != 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ja[i].state != jb[i].state || ja[i].end_s != jb[i].end_s
            || ja[i].cost_usd != jb[i].cost_usd || spw_job_rare(&ja[i])->restarts != spw_job_rare(&jb[i])->restarts)
            return 0;
    return 1;
}

/* ---- 1. a preemption at a trace tick, checkpoints, resuming on spot ------------ */

/* Trace (600 s ticks, from t=0): 1 1 0 0 1 1 1 1 1 1 1 1, repeating.  Greedy,
 * restart overhead 60 s.  Job: 1 GPU, runtime 3600 s, spot only (it waits
 * for spot), no deadline.
 *
 *   t=0     capacity 1: on spot; its attempt would end at 0 + 60 + 3600.
 *   t=1200  tick 2 has 0: preempted after 1200 - 60 = 1140 s of work.
 *           checkpoint 600: keeps 600, loses 540; every 0 (from scratch):
 *           keeps 0, loses 1140; continuous: keeps 1140, loses 0.
 *           It waits: spot only.
 *   t=2400  tick 4 has 1 again: spot, 60 s of overhead, then the rest:
 *           ends 2400 + 60 + (3600 - kept) = 5460 / 6060 / 4920.
 * Cost: 1200 s + (60 + 3600 - kept) s of spot at $3/h.  The next count
 * change (tick 14, t=8400) comes after the job: the run ends there. */
static void test_preempt_resume(void)
{
    static const uint32_t av[12] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static const struct {
        const char *name;
        double ckpt, kept, end;
    } c[] = {
        {"checkpoint 600", 600, 600, 5460},
        {"from scratch", 0, 0, 6060},
        {"continuous", SPW_CKPT_CONTINUOUS, 1140, 4920},
    };
    spw_fleet_t f;
    cloud_fleet(&f);
    spw_spot_trace_t tr = trace_of(600, 12, av);
    spw_sim_spot_t sp = {.offer = 0, .trace = &tr, .trace_start_s = 0};
    spw_sim_world_t w = {.spot = &sp, .nspot = 1, .seed = 1};
    spw_policy_t p = policy("none", SPW_SPOT_POLICY_GREEDY, 60);
    for (size_t k = 0; k < 3; k++) {
        spw_job_t j = {0};
        double rt = 3600;
        job_init(&j, "j", 0, rt, 1, 1);
        j.spot_mode = SPW_SPOTMODE_ALWAYS;
        j.checkpoint_interval_s = c[k].ckpt;
        samples_t ss = {.n = 0};
        spw_sim_opts_t o = {.world = &w, .step_s = 600, .on_sample = on_sample, .ctx = &ss};
        spw_sim_summary_t s;
        spw_error_t err;
        is(spw_sim_run(&f, &p, &j, &rt, 1, &o, &s, &err), 0, "%s: runs", c[k].name);
        is(j.state, SPW_JOB_DONE, "%s: done", c[k].name);
        ok(j.offer == 0 && j.spot, "%s: ended on spot", c[k].name);
        is_double(j.start_s, 2400, EPS, "%s: last attempt starts at t=2400", c[k].name);
        is_double(spw_job_rare(&j)->done_s, c[k].kept, EPS, "%s: %.0f s kept from the preempted attempt",
                  c[k].name, c[k].kept);
        is_double(j.end_s, c[k].end, EPS, "%s: ends at t=%.0f", c[k].name, c[k].end);
        double paid = 1200 + 60 + 3600 - c[k].kept;
        is_double(j.cost_usd, paid * 3.0 / 3600, EPS, "%s: pays %.0f spot seconds at $3/h",
                  c[k].name, paid);
        is_double(s.spot_cost_usd, j.cost_usd, EPS, "%s: all of it spot", c[k].name);
        is_double(s.cloud_cost_usd, j.cost_usd, EPS, "%s: cloud cost includes spot", c[k].name);
        is_double(s.spot_gpu_hours, paid / 3600, EPS, "%s: spot GPU-hours", c[k].name);
        is_double(s.ondemand_gpu_hours, 0, EPS, "%s: no on-demand GPU-hours", c[k].name);
        is_double(s.cloud_gpu_hours, paid / 3600, EPS, "%s: cloud GPU-hours = spot + on demand",
                  c[k].name);
        ok(s.preemptions == 1 && s.restarts == 1 && s.jobs_spot == 1 && s.jobs_cloud == 1,
           "%s: one preemption, one restart, one spot job", c[k].name);
        is_double(s.lost_gpu_hours, (1140 - c[k].kept) / 3600, EPS, "%s: %.0f s lost",
                  c[k].name, 1140 - c[k].kept);
        is_double(s.wait_mean_s, 0, EPS, "%s: waited 0 (to its first start)", c[k].name);
        is_double(s.jct_mean_s, c[k].end, EPS, "%s: JCT to the last end", c[k].name);
        is_double(s.makespan_s, c[k].end, EPS, "%s: makespan", c[k].name);
        /* Samples at 0, 600, ...: on spot ($3/h) at 0 and 600, gone at
         * 1200 and 1800, back from 2400. */
        ok(ss.n >= 6 && ss.v[1].cloud_usd_per_h == 3.0 && ss.v[2].cloud_usd_per_h == 0
           && ss.v[3].cloud_gpus == 0 && ss.v[4].cloud_usd_per_h == 3.0,
           "%s: the spend rate is the spot price while on spot, 0 while waiting", c[k].name);
        spw_job_clear(&j);
    }
    /* The same job may also use on demand (spot auto), without a deadline:
     * preempted at 1200 it goes on demand at once (no spot left) and ends
     * at 1200 + 60 + 3000 (checkpoint 600).  $1 of spot + 3060 s at $10/h. */
    spw_job_t j = {0};
    double rt = 3600;
    spw_job_clear(&j);
    job_init(&j, "j", 0, rt, 1, 1);
    j.checkpoint_interval_s = 600;
    spw_sim_summary_t s;
    is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "auto: runs");
    ok(j.state == SPW_JOB_DONE && !j.spot, "auto: ended on demand");
    is_double(j.end_s, 4260, EPS, "auto: ends at t=4260");
    is_double(j.cost_usd, 1.0 + 3060 * 10.0 / 3600, EPS, "auto: $1 spot + $8.50 on demand");
    is_double(s.spot_cost_usd, 1.0, EPS, "auto: spot cost $1");
    is_double(s.spot_gpu_hours, 1200.0 / 3600, EPS, "auto: 1200 spot GPU-seconds");
    is_double(s.ondemand_gpu_hours, 3060.0 / 3600, EPS, "auto: 3060 on-demand GPU-seconds");
    spw_spot_trace_clear(&tr);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* ---- 2. never spot ------------------------------------------------------------- */

/* The same trace; spot never, or the policy ondemand: on demand from t=0 to
 * 60 + 3600 = 3660, $10.1667, untouched by the trace. */
static void test_never_spot(void)
{
    static const uint32_t av[4] = {1, 1, 0, 0};
    spw_fleet_t f;
    cloud_fleet(&f);
    spw_spot_trace_t tr = trace_of(600, 4, av);
    spw_sim_spot_t sp = {.offer = 0, .trace = &tr};
    spw_sim_world_t w = {.spot = &sp, .nspot = 1};
    for (int k = 0; k < 2; k++) {
        spw_policy_t p = policy("none", k ? SPW_SPOT_POLICY_ONDEMAND : SPW_SPOT_POLICY_GREEDY, 60);
        spw_job_t j = {0};
        double rt = 3600;
        job_init(&j, "j", 0, rt, 1, 1);
        if (!k)
            j.spot_mode = SPW_SPOTMODE_NEVER;
        else
            j.deadline_s = 3000;   /* before 0 + 3600 + 60: infeasible */
        spw_sim_summary_t s;
        const char *name = k ? "policy ondemand" : "spot never";
        is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "%s: runs", name);
        ok(j.state == SPW_JOB_DONE && !j.spot, "%s: on demand", name);
        is_double(j.end_s, 3660, EPS, "%s: ends at t=3660", name);
        is_double(j.cost_usd, 3660 * 10.0 / 3600, EPS, "%s: $10.17", name);
        ok(s.jobs_spot == 0 && s.preemptions == 0 && s.spot_cost_usd == 0, "%s: no spot at all",
           name);
        if (k)
            ok(s.jobs_deadline == 1 && s.deadline_infeasible == 1 && s.deadline_met == 0
               && s.deadline_missed == 0, "%s: a deadline before runtime + overhead is "
               "infeasible, neither met nor missed", name);
        spw_job_clear(&j);
    }
    spw_spot_trace_clear(&tr);
    spw_fleet_clear(&f);
}

/* ---- 3. uniform progress against greedy with a deadline ------------------------ */

/* Trace 1 1 0 0 1 ... (600 s ticks), overhead 60 s, continuous checkpoints,
 * runtime 3600 s, deadline t=7200: ep(t) = t / 2.
 *
 *   t=0     spot: both take it (slack 3600 >= 120).
 *   t=1200  preempted with 1140 s done.  ep(1200) = 600 <= 1140.
 *   greedy: waits for spot (slack 7200 - 1200 - 2460 = 3540 >= 120); at
 *           2400 back on spot: ends 2400 + 60 + 2460 = 4920; pays 1200 +
 *           2520 s of spot: $3.10.
 *   UP:     not behind, waits; behind once t/2 > 1140, just after t=2280:
 *           on demand; progress from r0 = 2340.  Spot is back at 2400, but
 *           the job is ahead by the hysteresis margin only once
 *           1140 + (t - 2340) >= ep(t + 2d) = (t + 120) / 2, at t* = 2520:
 *           it moves to spot then (1320 s kept, a restart, no preemption)
 *           and ends t* + 60 + (3600 - 1320) = 4860; pays $1 of spot, 240 s
 *           on demand ($0.6667) and 2340 s of spot ($1.95): $3.6167. */
static void test_uniform_vs_greedy(void)
{
    static const uint32_t av[12] = {1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    spw_fleet_t f;
    cloud_fleet(&f);
    spw_spot_trace_t tr = trace_of(600, 12, av);
    spw_sim_spot_t sp = {.offer = 0, .trace = &tr};
    spw_sim_world_t w = {.spot = &sp, .nspot = 1};
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "uniform progress" : "greedy";
        spw_policy_t p = policy("none", k ? SPW_SPOT_POLICY_UNIFORM_PROGRESS
                                          : SPW_SPOT_POLICY_GREEDY, 60);
        spw_job_t j = {0};
        double rt = 3600;
        job_init(&j, "j", 0, rt, 1, 1);
        j.deadline_s = 7200;
        spw_sim_summary_t s;
        is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "%s: runs", name);
        is(j.state, SPW_JOB_DONE, "%s: done", name);
        is(spw_job_rare(&j)->preemptions, 1, "%s: preempted once", name);
        is_double(spw_job_rare(&j)->done_s, k ? 1320 : 1140, 1e-6, "%s: %s s kept", name, k ? "1320" : "1140");
        if (k) {
            ok(j.spot && j.reason == SPW_REASON_SWITCH_SPOT, "UP: ends on spot, moved there");
            is(s.switches_to_spot, 1, "UP: one move from on demand to spot");
            is(spw_job_rare(&j)->restarts, 2, "UP: two restarts (the preemption, the move)");
            is_double(j.start_s, 2520, 0.01, "UP: the move at t*=2520");
            is_double(spw_job_rare(&j)->ondemand_gpu_s, 240, 0.01, "UP: 240 s on demand, from 2280");
            is_double(j.end_s, 4860, 0.01, "UP: ends at t=4860");
            is_double(j.cost_usd, 1 + 240 * 10.0 / 3600 + 2340 * 3.0 / 3600, 1e-4,
                      "UP: $1 spot + $0.6667 on demand + $1.95 spot");
            is_double(s.spot_cost_usd, 1 + 2340 * 3.0 / 3600, 1e-4, "UP: $2.95 of it spot");
        } else {
            ok(j.spot, "greedy: ends on spot");
            is_double(j.start_s, 2400, EPS, "greedy: back on spot at t=2400");
            is_double(j.end_s, 4920, EPS, "greedy: ends at t=4920");
            is_double(j.cost_usd, 3.1, EPS, "greedy: $3.10, all spot");
        }
        ok(s.jobs_deadline == 1 && s.deadline_met == 1 && s.deadline_missed == 0
           && s.deadline_infeasible == 0, "%s: deadline met", name);
        spw_job_clear(&j);
    }
    spw_spot_trace_clear(&tr);
    spw_fleet_clear(&f);
}

/* ---- 4. gangs and the newest placement first ----------------------------------- */

/* Trace 2 2 1 1 2 2 2 2 (600 s ticks, repeating), overhead 60, continuous,
 * spot only.
 * Gang: one job of 2 GPUs = 2 instances.  t=1200: capacity 1 < 2 held: the
 * whole gang goes (1140 s done); 1 instance is not enough, it waits; t=2400:
 * back, ends 2400 + 60 + 2460 = 4920.  Pays 2 x (1200 + 2520) s at $3/h =
 * $6.20.
 * Two 1-GPU jobs, a at 0 and b at 100: at 1200 only b, the newest, goes
 * (1200 - 100 - 60 = 1040 s done); a ends at 3660; b resumes at 2400 and
 * ends 2400 + 60 + 2560 = 5020. */
static void test_gang_and_newest(void)
{
    static const uint32_t av[8] = {2, 2, 1, 1, 2, 2, 2, 2};
    spw_fleet_t f;
    cloud_fleet(&f);
    spw_spot_trace_t tr = trace_of(600, 8, av);
    spw_sim_spot_t sp = {.offer = 0, .trace = &tr};
    spw_sim_world_t w = {.spot = &sp, .nspot = 1};
    spw_policy_t p = policy("none", SPW_SPOT_POLICY_GREEDY, 60);

    spw_job_t g = {0};
    double rt = 3600;
    job_init(&g, "g", 0, rt, 2, 1);
    g.spot_mode = SPW_SPOTMODE_ALWAYS;
    spw_sim_summary_t s;
    is(run(&f, &p, &g, &rt, 1, &w, &s), 0, "gang: runs");
    ok(g.state == SPW_JOB_DONE && g.instances == 2, "gang: done on 2 instances");
    is(spw_job_rare(&g)->preemptions, 1, "gang: preempted once, as a whole");
    is_double(g.end_s, 4920, EPS, "gang: ends at t=4920");
    is_double(g.cost_usd, 2 * 3720 * 3.0 / 3600, EPS, "gang: $6.20");
    is_double(s.spot_gpu_hours, 2 * 3720 / 3600.0, EPS, "gang: 7440 spot GPU-seconds");
    is(s.preemptions, 1, "gang: one preemption in the summary");

    spw_job_t j[2] = {0};
    double rt2[2] = {3600, 3600};
    job_init(&j[0], "a", 0, 3600, 1, 1);
    job_init(&j[1], "b", 100, 3600, 1, 2);
    j[0].spot_mode = j[1].spot_mode = SPW_SPOTMODE_ALWAYS;
    is(run(&f, &p, j, rt2, 2, &w, &s), 0, "newest: runs");
    ok(spw_job_rare(&j[0])->preemptions == 0 && spw_job_rare(&j[1])->preemptions == 1, "newest: b, placed last, is preempted");
    is_double(j[0].end_s, 3660, EPS, "newest: a ends at t=3660");
    is_double(spw_job_rare(&j[1])->done_s, 1040, EPS, "newest: b kept 1040 s");
    is_double(j[1].end_s, 5020, EPS, "newest: b ends at t=5020");
    spw_spot_trace_clear(&tr);
    spw_fleet_clear(&f);
    spw_job_clear(&g);
    spw_jobs_clear(j, 2);
}

/* ---- 5. max_restarts ------------------------------------------------------------ */

/* Trace 1 0 (600 s ticks), no overhead, spot only, max_restarts 1: spot at
 * 0, preempted at 600, back at 1200, preempted again at 1800: the second
 * interruption fails the job.  It paid 1200 s of spot: $1.  The trace goes
 * on changing forever; the run must still end. */
static void test_max_restarts(void)
{
    static const uint32_t av[2] = {1, 0};
    spw_fleet_t f;
    cloud_fleet(&f);
    spw_spot_trace_t tr = trace_of(600, 2, av);
    spw_sim_spot_t sp = {.offer = 0, .trace = &tr};
    spw_sim_world_t w = {.spot = &sp, .nspot = 1};
    spw_policy_t p = policy("none", SPW_SPOT_POLICY_GREEDY, 0);
    p.max_restarts = 1;
    spw_job_t j = {0};
    double rt = 3600;
    job_init(&j, "j", 0, rt, 1, 1);
    j.spot_mode = SPW_SPOTMODE_ALWAYS;
    j.checkpoint_interval_s = 0;
    j.deadline_s = 1e6;
    spw_sim_summary_t s;
    is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "max_restarts: runs and ends");
    is(j.state, SPW_JOB_FAILED, "max_restarts: FAILED");
    is(j.reason, SPW_REASON_MAX_RESTARTS, "max_restarts: reason MAX_RESTARTS");
    ok(s.jobs_failed == 1 && s.preemptions == 2 && s.restarts == 1,
       "max_restarts: 1 failed job, 2 preemptions, 1 restart");
    ok(s.jobs_cloud == 0 && s.jobs_onprem == 0, "max_restarts: not counted as run");
    is_double(s.cloud_cost_usd, 1.0, EPS, "max_restarts: its $1 of spot still counts");
    is_double(s.lost_gpu_hours, 1200 / 3600.0, EPS, "max_restarts: 1200 s lost");
    ok(s.deadline_missed == 1 && s.deadline_met == 0, "max_restarts: its deadline is missed");
    is_double(s.makespan_s, 1800, EPS, "max_restarts: the run ends with the failure");
    spw_spot_trace_clear(&tr);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* ---- 6. spot that never comes ---------------------------------------------------- */

/* Spot only, on a trace of zeros: it never runs and the run ends at once.
 * On a trace of 0 1 (it changes forever) for a 2-GPU gang: 1 instance is
 * never enough; the run gives up after 40 idle days. */
static void test_spot_never_comes(void)
{
    static const uint32_t zeros[3] = {0, 0, 0}, one[2] = {0, 1};
    spw_fleet_t f;
    cloud_fleet(&f);
    spw_policy_t p = policy("none", SPW_SPOT_POLICY_GREEDY, 0);
    for (int k = 0; k < 2; k++) {
        spw_spot_trace_t tr = k ? trace_of(600, 2, one) : trace_of(600, 3, zeros);
        spw_sim_spot_t sp = {.offer = 0, .trace = &tr};
        spw_sim_world_t w = {.spot = &sp, .nspot = 1};
        spw_job_t j = {0};
        double rt = 3600;
        job_init(&j, "j", 0, rt, k ? 2 : 1, 1);
        j.spot_mode = SPW_SPOTMODE_ALWAYS;
        spw_sim_summary_t s;
        const char *name = k ? "too little spot" : "no spot";
        is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "%s: the run ends", name);
        ok(j.state == SPW_JOB_QUEUED && s.jobs_never_ran == 1, "%s: the job never ran", name);
        if (k)
            ok(s.events > 40 * 144 && s.events < 42 * 144,
               "too little spot: given up after about 40 days of ticks (%llu instants)",
               (unsigned long long)s.events);
        spw_spot_trace_clear(&tr);
        spw_job_clear(&j);
    }
    spw_fleet_clear(&f);
}

/* ---- 7. node failures -------------------------------------------------------------- */

/* Two 1-GPU nodes at $1/GPU-h; on demand $10/h, boot 0; wait constant:1000.
 * a (runtime 4000, checkpoint 1000) on node 0 and b (runtime 4000) on node 1
 * from t=0.  Node 0 fails at t=2000 (repaired at 10000): a keeps 2000 s.
 * requeue: a waits on-prem again for 1000 s: bursts at 3000 and runs
 *          3000..5000 in the cloud ($5.56).
 * burst:   a has waited its 1000 s since submission: to the cloud at
 *          once, 2000..4000.
 * a's on-prem attempt cost 2000 s x $1/h; b 4000 s x $1/h. */
static void test_node_failure(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 2, 1, NULL, 1.0);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 10.0, NAN, 0);
    spw_sim_failure_t fl = {.pool = 0, .node = 0, .down_s = 2000, .up_s = 10000};
    spw_sim_world_t w = {.failures = &fl, .nfailures = 1};
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "failover burst" : "failover requeue";
        spw_policy_t p = policy("constant:1000", SPW_SPOT_POLICY_ONDEMAND, 0);
        p.failover = k ? SPW_FAILOVER_BURST : SPW_FAILOVER_REQUEUE;
        spw_job_t j[2] = {0};
        double rt[2] = {4000, 4000};
        job_init(&j[0], "a", 0, 4000, 1, 1);
        job_init(&j[1], "b", 0, 4000, 1, 2);
        j[0].checkpoint_interval_s = 1000;
        spw_sim_summary_t s;
        is(run(&f, &p, j, rt, 2, &w, &s), 0, "%s: runs", name);
        ok(j[0].state == SPW_JOB_DONE && j[0].offer == 0, "%s: a ends in the cloud", name);
        is(spw_job_rare(&j[0])->failures, 1, "%s: a lost its node once", name);
        is_double(spw_job_rare(&j[0])->done_s, 2000, EPS, "%s: a kept 2000 s", name);
        is_double(j[0].start_s, k ? 2000 : 3000, EPS, "%s: a restarts at t=%d", name,
                  k ? 2000 : 3000);
        is_double(j[0].end_s, k ? 4000 : 5000, EPS, "%s: a ends at t=%d", name, k ? 4000 : 5000);
        ok(j[1].state == SPW_JOB_DONE && j[1].offer < 0 && j[1].end_s == 4000,
           "%s: b untouched on node 1", name);
        ok(s.node_failures == 1 && s.jobs_interrupted_by_failure == 1 && s.restarts == 1,
           "%s: 1 node failure, 1 attempt ended, 1 restart", name);
        is_double(s.cloud_cost_usd, 2000 * 10.0 / 3600, EPS, "%s: cloud $5.56", name);
        is_double(s.onprem_cost_usd, 6000 * 1.0 / 3600, EPS,
                  "%s: on-prem $1.67, a's lost attempt included", name);
        is_double(s.onprem_gpu_hours, 6000 / 3600.0, EPS, "%s: 6000 on-prem GPU-seconds", name);
        is_double(s.wait_mean_s, 0, EPS, "%s: waits count to the first start", name);
        ok(s.jobs_cloud == 1 && s.jobs_onprem == 1, "%s: one job of each", name);
        spw_jobs_clear(j, 2);
    }
    spw_fleet_clear(&f);
}

/* One 1-GPU node, no cloud.  Failures [100, 500] and [300, 800] overlap:
 * one failure, down from 100 to 800.  A job (runtime 1000, continuous)
 * loses its node at 100 (100 s kept) and restarts at 800: ends at 1700.
 * A node that never comes back: the job waits forever; the run ends. */
static void test_overlapping_failures(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 1, NULL, 1.0);
    spw_sim_failure_t fl[2] = {
        {.pool = 0, .node = 0, .down_s = 300, .up_s = 800},
        {.pool = 0, .node = 0, .down_s = 100, .up_s = 500},
    };
    spw_sim_world_t w = {.failures = fl, .nfailures = 2};
    spw_policy_t p = policy("never", SPW_SPOT_POLICY_ONDEMAND, 0);
    spw_job_t j = {0};
    double rt = 1000;
    job_init(&j, "j", 0, rt, 1, 1);
    spw_sim_summary_t s;
    is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "overlap: runs");
    is(s.node_failures, 1, "overlap: one failure (the second merges)");
    is_double(j.start_s, 800, EPS, "overlap: restarts when the node is back at 800");
    is_double(j.end_s, 1700, EPS, "overlap: ends at 1700");
    is_double(s.onprem_gpu_hours, 1000 / 3600.0, EPS, "overlap: 100 + 900 GPU-seconds");

    spw_sim_failure_t never = {.pool = 0, .node = 0, .down_s = 100, .up_s = INFINITY};
    w.failures = &never;
    w.nfailures = 1;
    is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "never repaired: the run ends");
    ok(j.state == SPW_JOB_QUEUED && s.jobs_never_ran == 1, "never repaired: the job never ends");

    /* Bad worlds are refused. */
    spw_sim_failure_t bad = {.pool = 0, .node = 5, .down_s = 0, .up_s = 1};
    w.failures = &bad;
    spw_error_t err;
    spw_sim_opts_t o = {.world = &w};
    is(spw_sim_run(&f, &p, &j, &rt, 1, &o, &s, &err), -1, "a node outside the pool: refused");
    diag("%s", err.text);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* MTBF: two 1-GPU nodes failing every 2000 s on average, repaired in 300 s;
 * ten 1000 s jobs with checkpoints every 100 s, no cloud.  Every job ends;
 * the failure processes stop with the last job (the run ends); the same
 * seed gives the same run, another seed another one.  A failure listed
 * before the first job is in force from the start. */
static void test_mtbf(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 2, 1, NULL, 1.0);
    double mtbf = 2000, mttr = 300;
    spw_sim_world_t w = {.mtbf_s = &mtbf, .mttr_s = &mttr, .seed = 3};
    spw_policy_t p = policy("never", SPW_SPOT_POLICY_ONDEMAND, 0);
    spw_job_t j[10] = {0}, k[10] = {0};
    double rt[10];
    for (int i = 0; i < 10; i++) {
        job_init(&j[i], "j", 100.0 * i, 1000, 1, (uint32_t)i);
        j[i].checkpoint_interval_s = 100;
        rt[i] = 1000;
    }
    memcpy(k, j, sizeof(j));
    spw_sim_summary_t s, s2;
    is(run(&f, &p, j, rt, 10, &w, &s), 0, "mtbf: runs and ends");
    int done = 0;
    for (int i = 0; i < 10; i++)
        done += j[i].state == SPW_JOB_DONE;
    is(done, 10, "mtbf: every job done");
    ok(s.node_failures > 0 && s.jobs_interrupted_by_failure > 0,
       "mtbf: %zu failures ended %zu attempts", s.node_failures, s.jobs_interrupted_by_failure);
    ok(s.events < 200, "mtbf: no failures simulated past the last job (%llu instants)",
       (unsigned long long)s.events);
    is(run(&f, &p, k, rt, 10, &w, &s2), 0, "mtbf: runs again");
    ok(same_run(&s, &s2, j, k, 10), "mtbf: the same seed gives the same run");
    w.seed = 4;
    run(&f, &p, k, rt, 10, &w, &s2);
    ok(!same_run(&s, &s2, j, k, 10), "mtbf: another seed, another run");

    /* Node 0 down from -500 to 400, node 1 from -500 to -100 (over before
     * the start, ignored): the first job starts on node 1 at 0, the second
     * (at 100) waits for node 0 until 400. */
    spw_sim_failure_t fl[2] = {
        {.pool = 0, .node = 0, .down_s = -500, .up_s = 400},
        {.pool = 0, .node = 1, .down_s = -500, .up_s = -100},
    };
    spw_sim_world_t w2 = {.failures = fl, .nfailures = 2};
    is(run(&f, &p, j, rt, 2, &w2, &s), 0, "before the start: runs");
    ok(j[0].node == 1 && j[0].start_s == 0, "before the start: the first job on node 1 at 0");
    ok(j[1].node == 0 && j[1].start_s == 400, "before the start: the second on node 0 at 400");
    is(s.node_failures, 1, "before the start: one failure in force, one over");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 10);
    spw_jobs_clear(k, 10);
}

/* ---- 8. MTBF, random preemptions: determinism and invariants ------------------------ */

/* A small random instance from one seed: a pool (maybe), two spot offers
 * (one with a random trace, one with a preemption rate), random failures,
 * MTBF, and jobs with random spot modes, checkpoints and deadlines. */
typedef struct inst {
    spw_fleet_t f;
    spw_policy_t p;
    spw_job_t j[40];
    char id[40][8];
    double rt[40];
    size_t n;
    spw_spot_trace_t tr;
    spw_sim_spot_t sp[2];
    spw_sim_failure_t fl[4];
    double mtbf[1], mttr[1];
    spw_sim_world_t w;
} inst_t;

static void inst_make(inst_t *x, uint64_t seed, int pools, double overhead_s, double boot_s)
{
    spw_rng_t r;
    spw_rng_seed(&r, seed);
    memset(x, 0, sizeof(*x));
    spw_fleet_init(&x->f);
    if (pools)
        add_pool(&x->f, "dc", 3, 2, NULL, 0.5);
    add_offer(&x->f, "aws", "us-east-1", "a", NULL, 1, 10.0, 3.0, boot_s);
    /* One instance in four has spot only on the traced offer, so Uniform
     * Progress goes on demand when it is gone and moves back when it returns. */
    add_offer(&x->f, "aws", "us-west-2", "b", NULL, 1, 10.0, seed % 4 == 3 ? NAN : 3.0, boot_s);
    static const spw_spot_policy_t pol[3] = {SPW_SPOT_POLICY_ONDEMAND, SPW_SPOT_POLICY_GREEDY,
                                             SPW_SPOT_POLICY_UNIFORM_PROGRESS};
    x->p = policy(spw_rng_below(&r, 2) ? "none" : "constant:600", pol[spw_rng_below(&r, 3)],
                  overhead_s);
    if (spw_rng_below(&r, 3) == 0)
        x->p.max_restarts = (uint32_t)spw_rng_below(&r, 3);
    x->p.failover = spw_rng_below(&r, 2) ? SPW_FAILOVER_BURST : SPW_FAILOVER_REQUEUE;
    uint32_t av[24];
    for (size_t k = 0; k < 24; k++)
        av[k] = (uint32_t)spw_rng_below(&r, 4);
    x->tr = trace_of(300 + 300 * (double)spw_rng_below(&r, 3), 24, av);
    x->sp[0] = (spw_sim_spot_t){.offer = 0, .trace = &x->tr,
                                .trace_start_s = -(double)spw_rng_below(&r, 5000)};
    x->sp[1] = (spw_sim_spot_t){.offer = 1, .preempt_rate_per_h = 0.5 * spw_rng_uniform(&r)};
    x->w.spot = x->sp;
    x->w.nspot = 2;
    x->w.seed = seed;
    if (pools) {
        for (size_t k = 0; k < 4; k++) {
            double d = spw_rng_uniform(&r) * 20000;
            x->fl[k] = (spw_sim_failure_t){.pool = 0, .node = (uint32_t)spw_rng_below(&r, 3),
                                           .down_s = d, .up_s = d + spw_rng_uniform(&r) * 3000};
        }
        x->w.failures = x->fl;
        x->w.nfailures = 4;
        x->mtbf[0] = 20000;
        x->mttr[0] = 1000;
        x->w.mtbf_s = x->mtbf;
        x->w.mttr_s = x->mttr;
    }
    x->n = 10 + spw_rng_below(&r, 30);
    double t = 0;
    for (size_t i = 0; i < x->n; i++) {
        snprintf(x->id[i], sizeof(x->id[i]), "j%u", (unsigned)(i % 1000));
        t += spw_rng_exp(&r, 300);
        x->rt[i] = 60 + spw_rng_below(&r, 7200);
        job_init(&x->j[i], x->id[i], t, x->rt[i], 1 + (uint32_t)spw_rng_below(&r, 2),
                 (uint32_t)i);
        x->j[i].spot_mode = spw_rng_below(&r, 4) == 0 ? SPW_SPOTMODE_NEVER : SPW_SPOTMODE_AUTO;
        static const double ck[4] = {SPW_CKPT_CONTINUOUS, 0, 300, 900};
        x->j[i].checkpoint_interval_s = ck[spw_rng_below(&r, 4)];
        if (spw_rng_below(&r, 2))
            x->j[i].deadline_s = t + boot_s + overhead_s + x->rt[i] * (1 + 2 * spw_rng_uniform(&r));
    }
}

static void inst_free(inst_t *x)
{
    spw_jobs_clear(x->j, x->n);
    spw_spot_trace_clear(&x->tr);
    spw_fleet_clear(&x->f);
}

static void test_properties(void)
{
    int bad_det = 0, bad_end = 0, bad_counts = 0, bad_work = 0, bad_cost = 0, bad_dl = 0;
    int bad_failed = 0, runs = 0;
    size_t preempts = 0, failures = 0, restarts = 0, deadlines = 0, checked = 0, interrupted = 0;
    size_t moves = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        int pools = seed % 3 != 0;
        /* Exact work conservation needs no overhead and no boot. */
        double overhead = seed % 2 ? 0 : 60, boot = seed % 5 == 0 ? 120 : 0;
        inst_t *x = malloc(sizeof(*x)), *y = malloc(sizeof(*y));
        inst_make(x, seed, pools, overhead, boot);
        inst_make(y, seed, pools, overhead, boot);
        spw_sim_summary_t s, s2;
        if (run(&x->f, &x->p, x->j, x->rt, x->n, &x->w, &s) < 0
            || run(&y->f, &y->p, y->j, y->rt, y->n, &y->w, &s2) < 0) {
            bad_det++;
            inst_free(x);
            inst_free(y);
            free(x);
            free(y);
            continue;
        }
        runs++;
        if (!same_run(&s, &s2, x->j, y->j, x->n) && bad_det++ < 3)
            diag("seed %llu: a rerun differs", (unsigned long long)seed);
        preempts += s.preemptions;
        failures += s.node_failures;
        restarts += s.restarts;
        moves += s.switches_to_spot;
        size_t np = 0, nf = 0, nfail = 0;
        double spot_usd = 0, cloud_usd = 0;
        for (size_t i = 0; i < x->n; i++) {
            const spw_job_t *j = &x->j[i];
            np += spw_job_rare(j)->preemptions;
            nf += spw_job_rare(j)->failures;
            nfail += j->state == SPW_JOB_FAILED;
            /* Every attempt counts in the summary, a failed job's too. */
            spot_usd += spw_job_rare(j)->spot_gpu_s * 3.0 / 3600;
            cloud_usd += (spw_job_rare(j)->spot_gpu_s * 3.0 + spw_job_rare(j)->ondemand_gpu_s * 10.0) / 3600;
            /* Each job ends done or failed (no budgets here). */
            if (j->state != SPW_JOB_DONE && j->state != SPW_JOB_FAILED) {
                if (bad_end++ < 3)
                    diag("seed %llu job %zu: state %s", (unsigned long long)seed, i,
                         spw_job_state_name(j->state));
                continue;
            }
            if (j->state == SPW_JOB_FAILED) {
                if (spw_job_rare(j)->preemptions + spw_job_rare(j)->failures != x->p.max_restarts + 1 && bad_failed++ < 3)
                    diag("seed %llu job %zu: failed after %u interruptions, max_restarts %u",
                         (unsigned long long)seed, i, spw_job_rare(j)->preemptions + spw_job_rare(j)->failures,
                         x->p.max_restarts);
                continue;
            }
            /* The last attempt ran its overhead (none for a first start
             * on-prem) and what was left. */
            double want = (j->offer >= 0 || spw_job_rare(j)->restarts ? overhead : 0) + x->rt[i] - spw_job_rare(j)->done_s;
            if (fabs((j->end_s - j->start_s) - want) > EPS && bad_work++ < 3)
                diag("seed %llu job %zu: last attempt %.6f s, want %.6f",
                     (unsigned long long)seed, i, j->end_s - j->start_s, want);
            /* Every attempt in the cloud (an on-prem attempt ends only by
             * finishing or by a node failure): paid GPU-seconds = the work,
             * the work lost, and one overhead per attempt, exact without
             * overhead. */
            if (spw_job_rare(j)->failures == 0 && j->offer >= 0) {
                checked++;
                interrupted += spw_job_rare(j)->preemptions > 0;
                double paid = spw_job_rare(j)->spot_gpu_s + spw_job_rare(j)->ondemand_gpu_s;
                double work = j->gpus * x->rt[i] + spw_job_rare(j)->lost_gpu_s;
                double lo = work + j->gpus * overhead;
                double hi = work + j->gpus * overhead * (spw_job_rare(j)->restarts + 1) + 1e-6;
                if (!(paid >= lo - 1e-6 && paid <= hi) && bad_work++ < 3)
                    diag("seed %llu job %zu: paid %.3f GPU-s, work %.3f (+overhead %.0f)",
                         (unsigned long long)seed, i, paid, work, overhead);
                /* Cost = paid seconds x price (both offers: $3 spot, $10). */
                double usd = (spw_job_rare(j)->spot_gpu_s * 3.0 + spw_job_rare(j)->ondemand_gpu_s * 10.0) / 3600;
                if (fabs(usd - j->cost_usd) > 1e-6 * fmax(1, usd) && bad_cost++ < 3)
                    diag("seed %llu job %zu: cost %.9f, paid seconds x price %.9f",
                         (unsigned long long)seed, i, j->cost_usd, usd);
            }
        }
        if ((s.preemptions != np || s.jobs_interrupted_by_failure != nf || s.jobs_failed != nfail)
            && bad_counts++ < 3)
            diag("seed %llu: preemptions %zu/%zu, failures %zu/%zu, failed %zu/%zu",
                 (unsigned long long)seed, s.preemptions, np, s.jobs_interrupted_by_failure, nf,
                 s.jobs_failed, nfail);
        if ((fabs(s.spot_cost_usd - spot_usd) > 1e-6 * fmax(1, spot_usd)
             || fabs(s.cloud_cost_usd - cloud_usd) > 1e-6 * fmax(1, cloud_usd))
            && bad_cost++ < 3)
            diag("seed %llu: summary spot $%.6f / cloud $%.6f, jobs $%.6f / $%.6f",
                 (unsigned long long)seed, s.spot_cost_usd, s.cloud_cost_usd, spot_usd, cloud_usd);
        /* Without on-prem and max_restarts, greedy and uniform progress meet
         * every deadline that on demand from submission meets. */
        if (!pools && x->p.spot_policy != SPW_SPOT_POLICY_ONDEMAND
            && x->p.max_restarts == UINT32_MAX) {
            deadlines += s.jobs_deadline;
            if (s.deadline_missed && bad_dl++ < 3)
                diag("seed %llu (%s): %zu of %zu deadlines missed", (unsigned long long)seed,
                     spw_spot_policy_name(x->p.spot_policy), s.deadline_missed, s.jobs_deadline);
        }
        inst_free(x);
        inst_free(y);
        free(x);
        free(y);
    }
    is(runs, 300, "properties: 300 random instances run");
    is(bad_det, 0, "properties: reruns are identical (summary and every job)");
    is(bad_end, 0, "properties: every job ends done or failed");
    is(bad_failed, 0, "properties: a failed job was interrupted max_restarts + 1 times");
    is(bad_work, 0, "properties: no progress counted twice (last attempt, paid GPU-seconds)");
    is(bad_cost, 0, "properties: cost = paid seconds x price, per job and in the summary");
    is(bad_counts, 0, "properties: preemptions, failures and failed jobs add up");
    is(bad_dl, 0, "properties: greedy / uniform progress miss no feasible deadline");
    ok(preempts > 100 && failures > 50 && restarts > 100 && deadlines > 100 && interrupted > 100
       && moves > 10,
       "properties: the instances exercise it (%zu preemptions, %zu failures, %zu restarts, "
       "%zu moves to spot, %zu deadlines checked; paid seconds checked on %zu cloud jobs, %zu "
       "of them preempted)", preempts, failures, restarts, moves, deadlines, checked, interrupted);
}

/* ---- 9. rate preemptions ------------------------------------------------------------ */

/* Preemptions at 2 per instance-hour on the only offer, a job of 4 hours on
 * spot only, checkpoint continuous: preempted some times, it still ends,
 * with all 4 h of work, and the same seed gives the same run. */
static void test_rate(void)
{
    spw_fleet_t f;
    cloud_fleet(&f);
    spw_sim_spot_t sp = {.offer = 0, .preempt_rate_per_h = 2};
    spw_sim_world_t w = {.spot = &sp, .nspot = 1, .seed = 7};
    spw_policy_t p = policy("none", SPW_SPOT_POLICY_GREEDY, 0);
    spw_job_t j = {0}, j2 = {0};
    double rt = 4 * 3600;
    job_init(&j, "j", 0, rt, 1, 1);
    j.spot_mode = SPW_SPOTMODE_ALWAYS;
    j2 = j;
    spw_sim_summary_t s, s2;
    is(run(&f, &p, &j, &rt, 1, &w, &s), 0, "rate: runs");
    is(run(&f, &p, &j2, &rt, 1, &w, &s2), 0, "rate: runs again");
    ok(j.state == SPW_JOB_DONE && s.preemptions >= 2, "rate: done after %zu preemptions",
       s.preemptions);
    is_double(spw_job_rare(&j)->spot_gpu_s, rt, EPS, "rate: continuous: paid exactly its 4 h on spot");
    ok(same_run(&s, &s2, &j, &j2, 1), "rate: the same seed gives the same run");
    w.seed = 8;
    run(&f, &p, &j2, &rt, 1, &w, &s2);
    ok(j2.end_s != j.end_s || s2.preemptions != s.preemptions, "rate: another seed, another run");
    spw_fleet_clear(&f);
    spw_job_clear(&j);
    spw_job_clear(&j2);
}

/* ---- 9b. capacity errors: a refused offer, its family, its account -------------- */

/* Offers (on demand, no boot delay):
 *   0 aws us-east-1 p3.2xlarge  $3/h      (the cheapest)
 *   1 aws us-east-1 p3.8xlarge  $3.5/h    (same family)
 *   2 aws us-east-1 g5.xlarge   $4/h      (another family)
 *   3 gcp us-central1 a2-highgpu-1g $5/h  (another provider)
 * One 1-GPU job of 1 h at t=0, no on-prem pool.  Offer 0 refuses every
 * acquisition (rate 1) for 600 s with the block given: OFFER re-places it
 * at once on offer 1, FAMILY on offer 2, ACCOUNT on offer 3; the cost is
 * that offer's price for the hour; one capacity error each.  A second job
 * at t=900, after the block: offer 0 is tried (and refused) again. */
static void test_capacity_errors(void)
{
    static const struct {
        spw_block_t block;
        int offer;
        double usd;
    } c[] = {
        {SPW_BLOCK_OFFER, 1, 3.5},
        {SPW_BLOCK_FAMILY, 2, 4.0},
        {SPW_BLOCK_ACCOUNT, 3, 5.0},
    };
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "p3.2xlarge", NULL, 1, 3.0, NAN, 0);
    add_offer(&f, "aws", "us-east-1", "p3.8xlarge", NULL, 1, 3.5, NAN, 0);
    add_offer(&f, "aws", "us-east-1", "g5.xlarge", NULL, 1, 4.0, NAN, 0);
    add_offer(&f, "gcp", "us-central1", "a2-highgpu-1g", NULL, 1, 5.0, NAN, 0);
    spw_policy_t p = policy("none", SPW_SPOT_POLICY_GREEDY, 0);
    double rt[2] = {3600, 3600};
    for (size_t k = 0; k < 3; k++) {
        spw_sim_refusal_t r = {.offer = 0, .market = -1, .rate = 1, .block = c[k].block,
                               .block_s = 600};
        spw_sim_world_t w = {.refusals = &r, .nrefusals = 1, .seed = 3};
        spw_job_t j[2] = {0};
        job_init(&j[0], "a", 0, rt[0], 1, 1);
        job_init(&j[1], "b", 900, rt[1], 1, 2);
        spw_sim_summary_t s;
        is(run(&f, &p, j, rt, 1, &w, &s), 0, "capacity errors (%s): runs",
           spw_block_name(c[k].block));
        ok(j[0].state == SPW_JOB_DONE && j[0].offer == c[k].offer && j[0].start_s == 0,
           "%s: re-placed at once on offer %d (got %d, started at %g s)",
           spw_block_name(c[k].block), c[k].offer, j[0].offer, j[0].start_s);
        is_double(j[0].cost_usd, c[k].usd, EPS, "%s: paid that offer's hour",
                  spw_block_name(c[k].block));
        is(s.capacity_errors, 1, "%s: one capacity error", spw_block_name(c[k].block));
        job_init(&j[0], "a", 0, rt[0], 1, 1);
        run(&f, &p, j, rt, 2, &w, &s);
        is(s.capacity_errors, 2, "%s: a job after the block's 600 s is refused again",
           spw_block_name(c[k].block));
        spw_jobs_clear(j, 2);
    }
    /* A share: every job still ends; the same seed gives the same run. */
    enum { N = 200 };
    spw_job_t js[N] = {0}, js2[N] = {0};
    double rts[N];
    for (size_t i = 0; i < N; i++) {
        rts[i] = 600 + 60 * (double)(i % 7);
        job_init(&js[i], "j", 30.0 * (double)i, rts[i], 1, (uint32_t)i);
    }
    memcpy(js2, js, sizeof(js));
    spw_sim_refusal_t r = {.offer = 0, .market = 0, .rate = 0.5, .block = SPW_BLOCK_OFFER,
                           .block_s = 60};
    spw_sim_world_t w = {.refusals = &r, .nrefusals = 1, .seed = 11};
    spw_sim_summary_t s, s2;
    run(&f, &p, js, rts, N, &w, &s);
    run(&f, &p, js2, rts, N, &w, &s2);
    size_t done = 0, moved = 0;
    for (size_t i = 0; i < N; i++) {
        done += js[i].state == SPW_JOB_DONE;
        moved += js[i].offer != 0;
    }
    ok(done == N && s.capacity_errors > 0 && s.capacity_errors < N && moved >= s.capacity_errors / 2,
       "rate 0.5: all %d jobs end; %zu refused, %zu ran elsewhere", N, s.capacity_errors, moved);
    ok(same_run(&s, &s2, js, js2, N), "rate 0.5: the same seed gives the same run");
    spw_fleet_clear(&f);
    spw_jobs_clear(js, N);
    spw_jobs_clear(js2, N);
}

/* ---- 10. the Safety Net is exact at every time scale ---------------------------------- */

/* Random single-offer clouds whose spot comes and goes, jobs submitted at
 * times from minutes to about 3,000 years in, lengths from a second to days,
 * deadlines from exactly feasible (no slack at all) to three times the work,
 * restart overhead and boot each 0 or not: greedy and Uniform Progress miss
 * no deadline that on demand from submission meets, and every job ends by
 * its deadline without the microsecond of tolerance the summary allows
 * (a few ulp of rounding only where the deadline leaves no slack at all).
 * Before the engine's Safety Net counted its 1 ms re-look as a decision step
 * (an explicit margin), greedy with overhead 0 and boot 0 missed such
 * deadlines by that 1 ms: the wake-up at nextafter(t) found R(t) - C(t),
 * rounded, still just enough to wait. */
static void test_safety_net_exact(void)
{
    size_t jobs = 0, missed = 0, late = 0, tight = 0, runs = 0, ondemand = 0;
    static const double scale[5] = {1e2, 2.2e4, 1e6, 1e9, 1e11};
    for (uint64_t seed = 1; seed <= 400; seed++) {
        spw_rng_t r;
        spw_rng_seed(&r, seed * 7919);
        double overhead = spw_rng_below(&r, 2) ? 0 : spw_rng_uniform(&r) * 120;
        double boot = spw_rng_below(&r, 2) ? 0 : spw_rng_uniform(&r) * 300;
        spw_fleet_t f;
        spw_fleet_init(&f);
        add_offer(&f, "aws", "us-east-1", "a", NULL, 1, 10.0, 3.0, boot);
        spw_policy_t p = policy("none", spw_rng_below(&r, 2) ? SPW_SPOT_POLICY_GREEDY
                                        : SPW_SPOT_POLICY_UNIFORM_PROGRESS, overhead);
        uint32_t av[64];
        for (size_t k = 0; k < 64; k++)
            av[k] = spw_rng_below(&r, 3) ? 0 : 1 + (uint32_t)spw_rng_below(&r, 3);
        double base = scale[seed % 5] * (0.5 + spw_rng_uniform(&r));
        spw_spot_trace_t tr = trace_of(1 + spw_rng_uniform(&r) * 900, 64, av);
        spw_sim_spot_t sp = {.offer = 0, .trace = &tr, .trace_start_s = base};
        spw_sim_world_t w = {.spot = &sp, .nspot = 1, .seed = seed};
        size_t n = 5 + spw_rng_below(&r, 20);
        spw_job_t j[25] = {0};
        double rt[25];
        char id[25][16];
        double t = base, tol[25];
        for (size_t i = 0; i < n; i++) {
            snprintf(id[i], sizeof(id[i]), "j%u", (unsigned)i);
            t += spw_rng_uniform(&r) * 1000 + spw_rng_uniform(&r) / 7;
            rt[i] = 1 + spw_rng_uniform(&r) * (spw_rng_below(&r, 2) ? 600 : 200000);
            job_init(&j[i], id[i], t, rt[i], 1, (uint32_t)i);
            double slack = spw_rng_below(&r, 3) ? rt[i] * 2 * spw_rng_uniform(&r) : 0;
            tight += slack == 0;
            /* No slack at all: on demand from submission ends on the
             * deadline itself, but for the rounding of the sum (a few ulp). */
            tol[i] = slack >= 1e-3 ? 0 : ldexp(t + rt[i], -50);
            j[i].deadline_s = t + boot + overhead + rt[i] + slack;
        }
        spw_sim_summary_t s;
        if (run(&f, &p, j, rt, n, &w, &s) == 0) {
            runs++;
            jobs += s.jobs_deadline;
            missed += s.deadline_missed;
            for (size_t i = 0; i < n; i++) {
                ondemand += spw_job_rare(&j[i])->ondemand_gpu_s > 0;
                if (j[i].state == SPW_JOB_DONE && j[i].end_s <= j[i].deadline_s + tol[i])
                    continue;
                if (late++ < 3)
                    diag("seed %llu (%s, overhead %.3f, boot %.3f): job %zu ends %.9f s after "
                         "its deadline", (unsigned long long)seed,
                         spw_spot_policy_name(p.spot_policy), overhead, boot, i,
                         j[i].end_s - j[i].deadline_s);
            }
        }
        spw_spot_trace_clear(&tr);
        spw_fleet_clear(&f);
        spw_jobs_clear(j, 25);
    }
    is(runs, (size_t)400, "safety net: 400 random clouds run");
    ok(jobs > 4000 && tight > 1000 && ondemand > 1000,
       "safety net: %zu deadlines checked, %zu with no slack at all, %zu jobs went on demand",
       jobs, tight, ondemand);
    is(missed, (size_t)0, "safety net: no feasible deadline missed at any time scale");
    is(late, (size_t)0, "safety net: every job ends by its deadline (no tolerance "
       "but a few ulp for a deadline with no slack at all)");
}

int main(void)
{
    test_preempt_resume();
    test_never_spot();
    test_uniform_vs_greedy();
    test_gang_and_newest();
    test_max_restarts();
    test_spot_never_comes();
    test_node_failure();
    test_overlapping_failures();
    test_mtbf();
    test_rate();
    test_capacity_errors();
    test_properties();
    test_safety_net_exact();
    return done_testing();
}
