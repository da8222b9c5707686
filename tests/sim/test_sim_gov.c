/* test_sim_gov.c: governance in the simulator.  Hand-worked scenarios
 * (on_exhausted hold / onprem_only / reject, max runtime, data gravity on
 * and off, many jobs racing for the last dollars of a budget) and properties
 * over random fleets, rules and workloads: no budget period, egress cap,
 * spend-rate or GPU cap is ever exceeded (checked by an independent sweep
 * over the jobs' cloud intervals), and no job runs anywhere its rules or
 * residency forbid (checked by an independent re-evaluation of the rules
 * and by spw_govrt_why_not on a fresh runtime). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "tap.h"
#include "config/config.h"
#include "core/gov.h"
#include "core/model.h"
#include "sim/sim.h"
#include "util/rng.h"

#define EPS 1e-6

static int add_team(spw_fleet_t *f, const char *name, double budget_usd, spw_period_t period,
                    spw_exhausted_t x)
{
    spw_gov_t *g = &f->gov;
    g->teams = spw_xrealloc(g->teams, (g->nteams + 1) * sizeof(*g->teams));
    spw_team_spec_t *t = &g->teams[g->nteams];
    memset(t, 0, sizeof(*t));
    t->name = spw_xstrdup(name);
    t->budget_usd = budget_usd;
    t->period = period;
    t->on_exhausted = x;
    t->max_cloud_usd_per_h = INFINITY;
    t->max_cloud_gpus = INFINITY;
    t->max_egress_usd_per_month = INFINITY;
    return (int)g->nteams++;
}

static int add_name(char ***v, size_t *n, const char *name)
{
    *v = spw_xrealloc(*v, (*n + 1) * sizeof(char *));
    (*v)[*n] = spw_xstrdup(name);
    return (int)(*n)++;
}

/* A rule matching every job and changing nothing; the caller fills it in.
 * The pointer is valid until the next add_rule. */
static spw_rule_t *add_rule(spw_fleet_t *f, const char *name)
{
    spw_gov_t *g = &f->gov;
    g->rules = spw_xrealloc(g->rules, (g->nrules + 1) * sizeof(*g->rules));
    spw_rule_t *r = &g->rules[g->nrules++];
    memset(r, 0, sizeof(*r));
    r->name = spw_xstrdup(name);
    r->gpus_min = 1;
    r->gpus_max = UINT32_MAX;
    r->max_usd_per_gpu_h = INFINITY;
    return r;
}

static int add_residency(spw_fleet_t *f, const char *name, int onprem, char **regions,
                         size_t nregions)
{
    spw_gov_t *g = &f->gov;
    g->residencies = spw_xrealloc(g->residencies, (g->nresidencies + 1) * sizeof(*g->residencies));
    spw_residency_spec_t *r = &g->residencies[g->nresidencies];
    memset(r, 0, sizeof(*r));
    r->name = spw_xstrdup(name);
    r->onprem = onprem;
    r->regions = regions;
    r->nregions = nregions;
    return (int)g->nresidencies++;
}

/* A dataset at an on-prem pool (pool >= 0) or a cloud region. */
static int add_dataset(spw_fleet_t *f, const char *name, double size_gb, int pool,
                       const char *provider, const char *region)
{
    spw_gov_t *g = &f->gov;
    g->datasets = spw_xrealloc(g->datasets, (g->ndatasets + 1) * sizeof(*g->datasets));
    spw_dataset_spec_t *d = &g->datasets[g->ndatasets];
    memset(d, 0, sizeof(*d));
    d->name = spw_xstrdup(name);
    d->size_gb = size_gb;
    d->home.pool = pool;
    d->home.provider = provider ? spw_xstrdup(provider) : NULL;
    d->home.region = region ? spw_xstrdup(region) : NULL;
    return (int)g->ndatasets++;
}

static void add_replica(spw_fleet_t *f, int dataset, const char *provider, const char *region)
{
    spw_dataset_spec_t *d = &f->gov.datasets[dataset];
    d->replicas = spw_xrealloc(d->replicas, (d->nreplicas + 1) * sizeof(*d->replicas));
    spw_site_t *s = &d->replicas[d->nreplicas++];
    s->pool = -1;
    s->provider = spw_xstrdup(provider);
    s->region = spw_xstrdup(region);
}

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
}

static spw_policy_t policy(const char *wait)
{
    spw_policy_t p;
    spw_policy_default(&p);
    spw_error_t err;
    if (spw_wait_parse(wait, &p.wait, &err) < 0)
        diag("bad wait '%s' in the test: %s", wait, err.text);
    return p;
}

/* ---- (e) on_exhausted, hand-worked ----------------------------------------------------- */

/* One on-prem GPU at $1/GPU-h; a 1-GPU cloud offer at $2/h, no boot.  Team
 * t has $10 a month; every job's worst case is 1 h = $2.  Ten 1-GPU jobs of
 * 1800 s arrive at 0 under `wait: none`:
 *   job 0 takes the on-prem GPU (0..1800);
 *   jobs 1-5 burst, reserving $2 each: $10, the whole budget;
 *   jobs 6-9 are refused.
 * hold: at 1800 jobs 1-5 settle at $1 each ($5); the pass puts job 6
 *   on-prem (1800..3600), the held retry bursts 7 and 8 ($5 + $4 <= $10)
 *   and holds 9 again ($11 > $10); at 3600 job 9 goes on-prem (..5400).
 *   Cloud: 7 jobs, $7; on-prem 0, 6, 9; 4 jobs held; use 70%.
 * onprem_only: 6-9 wait for on-prem one after another: 6 at 1800, 7 at
 *   3600, 8 at 5400, 9 at 7200 (ends 9000).  Cloud: 5 jobs, $5.
 * reject: 6-9 are rejected at 0.  Cloud 5 jobs, $5; on-prem job 0 only. */
static void exhausted_fleet(spw_fleet_t *f, spw_exhausted_t x)
{
    spw_fleet_init(f);
    add_pool(f, "dc", 1, 1, NULL, 1.0);
    add_offer(f, "aws", "us-east-1", "g1", NULL, 1, 2.0, NAN, 0);
    add_team(f, "t", 10, SPW_PERIOD_MONTH, x);
    f->gov.default_max_runtime_s = 3600;
}

static void exhausted_jobs(spw_job_t *j, double *rt, char ids[][24], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 24, "j%zu", i);
        job_init(&j[i], ids[i], 0, 1800, 1, (uint32_t)i);
        j[i].team = 1;
        rt[i] = 1800;
    }
}

static void test_exhausted(void)
{
    spw_job_t j[10] = {0};
    double rt[10];
    char ids[10][24];
    spw_policy_t p = policy("none");
    spw_sim_summary_t s;
    spw_error_t err;
    spw_fleet_t f;

    exhausted_fleet(&f, SPW_EXHAUSTED_HOLD);
    exhausted_jobs(j, rt, ids, 10);
    is(spw_sim_run(&f, &p, j, rt, 10, NULL, &s, &err), 0, "hold: runs");
    is(s.jobs_cloud, 7, "hold: 7 cloud jobs");
    is(s.jobs_onprem, 3, "hold: 3 on-prem jobs");
    is_double(s.cloud_cost_usd, 7, 1e-9, "hold: cloud $7");
    is(s.jobs_held, 4, "hold: jobs 6-9 held");
    is(spw_job_rare(&j[9])->held, 2, "hold: job 9 held twice (at 0 and 1800)");
    is(s.jobs_rejected, 0, "hold: none rejected");
    ok(j[6].offer < 0 && j[6].start_s == 1800, "hold: job 6 on-prem at 1800");
    ok(j[7].offer >= 0 && j[7].start_s == 1800 && j[8].offer >= 0 && j[8].start_s == 1800,
       "hold: jobs 7 and 8 burst at 1800 when money freed");
    ok(j[9].offer < 0 && j[9].start_s == 3600, "hold: job 9 on-prem at 3600");
    is_double(s.makespan_s, 5400, 0, "hold: makespan 5400");
    is(s.nteams, 1, "hold: one team");
    is(s.team[1].jobs, 10, "hold: team t has 10 jobs");
    is_double(s.team[1].cloud_usd, 7, 1e-9, "hold: team t cloud $7");
    is_double(s.team[1].onprem_usd, 1.5, 1e-9, "hold: team t on-prem $1.50");
    is_double(s.team[1].budget_use, 0.7, 1e-9, "hold: team t used 70%% of its budget");
    is_double(s.team[1].worst_period_usd, 7, 1e-9, "hold: $7 in its one period");
    is(s.jobs_onprem_only_budget, 0, "hold: no job kept on-prem by onprem_only");
    is_double(s.peak_cloud_usd_per_h, 10, 1e-9, "hold: peak $10/h (5 instances)");
    is_double(s.peak_cloud_gpus, 5, 1e-9, "hold: peak 5 cloud GPUs");
    ok(s.gov, "hold: governance is active");
    spw_fleet_clear(&f);

    exhausted_fleet(&f, SPW_EXHAUSTED_ONPREM_ONLY);
    exhausted_jobs(j, rt, ids, 10);
    is(spw_sim_run(&f, &p, j, rt, 10, NULL, &s, &err), 0, "onprem_only: runs");
    is(s.jobs_cloud, 5, "onprem_only: 5 cloud jobs");
    is(s.jobs_onprem, 5, "onprem_only: 5 on-prem jobs");
    is_double(s.cloud_cost_usd, 5, 1e-9, "onprem_only: cloud $5");
    is(s.jobs_held, 4, "onprem_only: 4 jobs refused");
    is(s.jobs_onprem_only_budget, 4, "onprem_only: 4 kept on-prem by the budget");
    ok(j[6].start_s == 1800 && j[7].start_s == 3600 && j[8].start_s == 5400 &&
       j[9].start_s == 7200 && j[9].offer < 0,
       "onprem_only: 6-9 on-prem at 1800, 3600, 5400, 7200");
    is_double(s.makespan_s, 9000, 0, "onprem_only: makespan 9000");
    is_double(s.team[1].budget_use, 0.5, 1e-9, "onprem_only: 50%% of the budget");
    spw_fleet_clear(&f);

    exhausted_fleet(&f, SPW_EXHAUSTED_REJECT);
    exhausted_jobs(j, rt, ids, 10);
    is(spw_sim_run(&f, &p, j, rt, 10, NULL, &s, &err), 0, "reject: runs");
    is(s.jobs_cloud, 5, "reject: 5 cloud jobs");
    is(s.jobs_onprem, 1, "reject: 1 on-prem job");
    is(s.jobs_rejected, 4, "reject: 4 rejected");
    is(s.team[1].jobs_rejected, 4, "reject: counted for team t");
    ok(j[6].state == SPW_JOB_REJECTED && j[9].state == SPW_JOB_REJECTED &&
       j[6].reason == SPW_REASON_REJECTED_BUDGET && j[6].end_s == 0,
       "reject: jobs 6-9 rejected at 0 with the budget reason");
    is_double(s.cloud_cost_usd, 5, 1e-9, "reject: cloud $5");
    is_double(s.makespan_s, 1800, 0, "reject: makespan 1800");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 10);
}

/* ---- max runtime ------------------------------------------------------------------------ */

/* No on-prem; a $3/h 1-GPU offer with 60 s boot.  Job a is estimated at
 * 900 s, runs 3600 s, but may run only 1000: stopped at 60 + 1000, billed
 * 1000 s = $0.8333.  Job b has no cap of its own; the governance default
 * (7200 s, in force because a budget exists) is above its 3600 s.  A budget
 * of $100.  Job c's estimate (3600 s) is over its max runtime (1000 s): no
 * offer could finish it, so it is never bought (issue 24: before, it was
 * bought and stopped after paying). */
static void test_max_runtime(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 3.0, NAN, 60);
    add_team(&f, "t", 100, SPW_PERIOD_MONTH, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 7200;
    spw_job_t j[3] = {0};
    double rt[3] = {3600, 3600, 3600};
    job_init(&j[0], "a", 0, 900, 1, 0);
    job_init(&j[1], "b", 0, 3600, 1, 1);
    job_init(&j[2], "c", 0, 3600, 1, 2);
    j[0].team = j[1].team = j[2].team = 1;
    j[0].max_runtime_s = j[2].max_runtime_s = 1000;
    spw_policy_t p = policy("none");
    spw_sim_summary_t s;
    spw_error_t err;
    is(spw_sim_run(&f, &p, j, rt, 3, NULL, &s, &err), 0, "max runtime: runs");
    ok(j[2].state == SPW_JOB_UNSCHEDULABLE && j[2].reason == SPW_REASON_CANNOT_FINISH &&
           j[2].cost_usd == 0, "max runtime: c, which no offer could finish, is never bought: %s",
       spw_reason_text(j[2].reason));
    ok(j[0].stopped_max_run && !j[1].stopped_max_run, "max runtime: a's outcome is stopped");
    is_double(s.useful_gpu_hours, 1.0, 1e-9, "max runtime: only b's hour counts as work done");
    is_double(j[0].end_s, 1060, 0, "max runtime: a stopped at 60 + 1000 s");
    is_double(j[0].cost_usd, 3.0 * 1000 / 3600, 1e-9, "max runtime: a billed 1000 s");
    is_double(j[1].end_s, 3660, 0, "max runtime: b runs its 3600 s");
    is(s.jobs_stopped_max_runtime, 1, "max runtime: one job stopped");
    is_double(s.team[1].cloud_usd, 3.0 * 4600 / 3600, 1e-9, "max runtime: team spend");
    spw_fleet_clear(&f);

    /* Without any budget or cap, no default cap: the job runs out. */
    spw_fleet_init(&f);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 3.0, NAN, 0);
    f.gov.default_max_runtime_s = 100;
    job_init(&j[0], "a", 0, 3600, 1, 0);
    is(spw_sim_run(&f, &p, j, rt, 1, NULL, &s, &err), 0, "no limits: runs");
    is_double(j[0].end_s, 3600, 0, "no limits: the default max runtime does not stop it");
    is(s.jobs_stopped_max_runtime, 0, "no limits: nothing stopped");
    ok(!s.gov, "no limits: governance inactive");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 3);
}

/* ---- (d) many jobs race for the last dollars ------------------------------------------ */

/* No on-prem at all, so every job bursts the instant it arrives.  One
 * 1-GPU offer at $3/h with 60 s boot; max runtime 3600 s, so each worst case
 * is 3 x 3660 / 3600 = $3.05.  500 identical jobs at t = 0 against $100:
 * floor(100 / 3.05) = 32 are placed and the other 468 are refused. */
static void race_fleet(spw_fleet_t *f, spw_exhausted_t x, double budget)
{
    spw_fleet_init(f);
    add_offer(f, "aws", "us-east-1", "g1", NULL, 1, 3.0, NAN, 60);
    add_team(f, "ml", budget, SPW_PERIOD_MONTH, x);
    f->gov.origin_s = 1769558400;   /* 2026-01-28T00:00:00Z: a month ends on day 4 */
}

#define RACE_N 500

static void race_jobs(spw_job_t *j, double *rt, char (*ids)[24], double runtime_s)
{
    for (size_t i = 0; i < RACE_N; i++) {
        snprintf(ids[i], 24, "r%zu", i);
        job_init(&j[i], ids[i], 0, runtime_s, 1, (uint32_t)i);
        j[i].team = 1;
        j[i].max_runtime_s = 3600;
        rt[i] = runtime_s;
    }
}

/* Spend charged to each budget period of team 1 must stay within budget. */
static int periods_within(const spw_fleet_t *f, const spw_job_t *j, size_t n, double budget,
                          size_t *nperiods)
{
    double start[64], usd[64];
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        if (j[i].state != SPW_JOB_DONE || j[i].offer < 0)
            continue;
        double ps = spw_period_start(SPW_PERIOD_MONTH, f->gov.origin_s + j[i].placed_s);
        size_t k = 0;
        while (k < np && start[k] != ps)
            k++;
        if (k == np) {
            if (np == 64)
                return 0;
            start[np] = ps;
            usd[np++] = 0;
        }
        usd[k] += j[i].cost_usd;
    }
    *nperiods = np;
    for (size_t k = 0; k < np; k++)
        if (usd[k] > budget + EPS) {
            diag("period starting %.0f: $%.6f > $%.2f", start[k], usd[k], budget);
            return 0;
        }
    return 1;
}

static void test_race(void)
{
    spw_job_t *j = spw_xcalloc(RACE_N, sizeof(*j));
    double *rt = spw_xmalloc(RACE_N * sizeof(double));
    char (*ids)[24] = spw_xmalloc(RACE_N * sizeof(*ids));
    spw_policy_t p = policy("none");
    spw_sim_summary_t s;
    spw_error_t err;
    spw_fleet_t f;
    size_t np;

    /* reject: exactly 32 run, 468 are rejected at once. */
    race_fleet(&f, SPW_EXHAUSTED_REJECT, 100);
    race_jobs(j, rt, ids, 1800);
    is(spw_sim_run(&f, &p, j, rt, RACE_N, NULL, &s, &err), 0, "race reject: runs");
    is(s.jobs_cloud, 32, "race reject: floor(100 / 3.05) = 32 placed");
    is(s.jobs_rejected, RACE_N - 32, "race reject: 468 rejected");
    ok(s.cloud_cost_usd <= 100 + EPS, "race reject: spend $%.2f <= $100", s.cloud_cost_usd);
    is_double(s.cloud_cost_usd, 32 * 3.0 * 0.5, 1e-9, "race reject: 32 x $1.50 settled");
    ok(periods_within(&f, j, RACE_N, 100, &np), "race reject: within budget per period");
    is_double(s.peak_cloud_gpus, 32, 0, "race reject: 32 GPUs at once");
    spw_fleet_clear(&f);

    /* hold: 32 at 0; the rest burst as money frees and months turn, and
     * no month ever goes over. */
    race_fleet(&f, SPW_EXHAUSTED_HOLD, 100);
    race_jobs(j, rt, ids, 1800);
    is(spw_sim_run(&f, &p, j, rt, RACE_N, NULL, &s, &err), 0, "race hold: runs");
    size_t at0 = 0;
    for (size_t i = 0; i < RACE_N; i++)
        at0 += j[i].state == SPW_JOB_DONE && j[i].placed_s == 0;
    is(at0, 32, "race hold: 32 placed at t = 0");
    is(s.jobs_cloud, RACE_N, "race hold: every job runs in the end");
    is(s.jobs_held, RACE_N - 32, "race hold: the other 468 were held");
    ok(periods_within(&f, j, RACE_N, 100, &np), "race hold: within budget in each of %zu months",
       np);
    ok(np >= 7, "race hold: $750 of work over $100 months takes >= 7 months (%zu)", np);
    spw_fleet_clear(&f);

    /* Identical jobs, budget for exactly 10 worst cases: 10 placed. */
    race_fleet(&f, SPW_EXHAUSTED_REJECT, 30.5);
    race_jobs(j, rt, ids, 3600);
    is(spw_sim_run(&f, &p, j, rt, RACE_N, NULL, &s, &err), 0, "race exact: runs");
    is(s.jobs_cloud, 10, "race exact: $30.50 / $3.05 = 10 placed");
    is_double(s.cloud_cost_usd, 30, 1e-9, "race exact: 10 x $3.00 settled (boot unbilled)");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, RACE_N);
    free(j);
    free(rt);
    free(ids);
}

/* ---- (f) data gravity, hand-worked ---------------------------------------------------- */

/* Dataset ds (100 GB) lives in pool dc and has a replica in aws:us-west-2.
 * Leaving on-prem costs $0.05/GB, aws $0.09/GB; no cache; 10 Gbps, so a
 * copy takes 80 s.  The on-prem GPU is busy with job a (no data) for 7200 s.
 * Job b reads ds for 3600 s and bursts at once (wait none):
 *   gravity on:  us-west-2 at $2.10/h holds a copy: $2.10, no egress;
 *   gravity off: us-east-1 at $2.00/h is cheapest: the data comes from dc
 *                ($5 egress, the cheapest source) and takes 80 s:
 *                2 x 3680 / 3600 + 5 = $7.0444. */
static void gravity_fleet(spw_fleet_t *f)
{
    spw_fleet_init(f);
    int dc = add_pool(f, "dc", 1, 1, NULL, 1.0);
    add_offer(f, "aws", "us-east-1", "g1", NULL, 1, 2.00, NAN, 0);
    add_offer(f, "aws", "us-west-2", "g1", NULL, 1, 2.10, NAN, 0);
    int ds = add_dataset(f, "ds", 100, dc, NULL, NULL);
    add_replica(f, ds, "aws", "us-west-2");
    f->gov.egress_onprem_usd_per_gb = 0.05;
    f->gov.cache_ttl_s = 0;
}

static void test_gravity(void)
{
    spw_job_t j[2] = {0};
    double rt[2] = {7200, 3600};
    spw_sim_summary_t on, off;
    spw_error_t err;
    spw_fleet_t f;
    gravity_fleet(&f);
    spw_policy_t p = policy("none");
    job_init(&j[0], "a", 0, 7200, 1, 0);
    job_init(&j[1], "b", 0, 3600, 1, 1);
    j[1].data = 1;
    is(spw_sim_run(&f, &p, j, rt, 2, NULL, &on, &err), 0, "gravity on: runs");
    ok(j[1].offer == 1, "gravity on: b goes where its data is (us-west-2)");
    is_double(j[1].cost_usd, 2.10, 1e-9, "gravity on: b costs $2.10");
    is_double(on.egress_gb, 0, 0, "gravity on: no egress");
    p.gravity = 0;
    job_init(&j[0], "a", 0, 7200, 1, 0);
    job_init(&j[1], "b", 0, 3600, 1, 1);
    j[1].data = 1;
    is(spw_sim_run(&f, &p, j, rt, 2, NULL, &off, &err), 0, "gravity off: runs");
    ok(j[1].offer == 0, "gravity off: b goes to the cheapest compute (us-east-1)");
    is_double(j[1].start_s, 80, 1e-9, "gravity off: b starts after an 80 s copy");
    is_double(off.egress_gb, 100, 0, "gravity off: 100 GB moved");
    is_double(off.egress_usd, 5, 1e-9, "gravity off: $5 egress from dc");
    is_double(j[1].cost_usd, 2.0 * 3680 / 3600 + 5, 1e-9, "gravity off: b costs $7.04");
    ok(on.egress_usd <= off.egress_usd, "gravity on pays no more egress than off");
    ok(on.cloud_cost_usd + on.egress_usd < off.cloud_cost_usd + off.egress_usd,
       "gravity on is cheaper in total here");
    spw_fleet_clear(&f);

    /* On-prem: pool far (first in the fleet) and pool dc (holds ds).  With
     * gravity the job goes to dc; without, first fit takes far and copies. */
    spw_fleet_init(&f);
    add_pool(&f, "far", 1, 1, NULL, 1.0);
    int dc = add_pool(&f, "dc", 1, 1, NULL, 1.0);
    add_dataset(&f, "ds", 100, dc, NULL, NULL);
    f.gov.egress_onprem_usd_per_gb = 0.05;
    f.gov.cache_ttl_s = 0;
    p = policy("never");
    job_init(&j[0], "c", 0, 3600, 1, 0);
    j[0].data = 1;
    rt[0] = 3600;
    is(spw_sim_run(&f, &p, j, rt, 1, NULL, &on, &err), 0, "on-prem gravity on: runs");
    ok(j[0].pool == dc && on.egress_gb == 0, "on-prem gravity on: c runs in dc, no copy");
    p.gravity = 0;
    job_init(&j[0], "c", 0, 3600, 1, 0);
    j[0].data = 1;
    is(spw_sim_run(&f, &p, j, rt, 1, NULL, &off, &err), 0, "on-prem gravity off: runs");
    ok(j[0].pool == 0 && off.egress_gb == 100, "on-prem gravity off: c runs in far, 100 GB copied");
    is_double(j[0].start_s, 80, 1e-9, "on-prem gravity off: starts after the copy");
    is_double(off.onprem_cost_usd, 3680.0 / 3600, 1e-9,
              "on-prem gravity off: the GPU is held through the copy");
    is_double(off.egress_usd, 5, 1e-9, "on-prem gravity off: $5 egress");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 2);
}

/* ---- residency ------------------------------------------------------------------------ */

/* Class restricted names a residency with on-prem only; class eu-data names
 * residency eu (eu-west-1 only, no on-prem).  The on-prem GPU is busy, the
 * wait is none. */
static void test_residency(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 1, NULL, 1.0);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 1.0, NAN, 0);
    add_offer(&f, "aws", "eu-west-1", "g1", NULL, 1, 2.0, NAN, 0);
    add_name(&f.gov.classes, &f.gov.nclasses, "restricted");
    add_residency(&f, "restricted", 1, NULL, 0);
    add_residency(&f, "eu", 0, strv(1, "eu-west-1"), 1);
    spw_job_t j[3] = {0};
    double rt[3] = {3600, 600, 600};
    job_init(&j[0], "busy", 0, 3600, 1, 0);
    job_init(&j[1], "secret", 0, 600, 1, 1);
    job_init(&j[2], "gdpr", 0, 600, 1, 2);
    j[1].jclass = 1;
    j[2].residency = 2;
    spw_policy_t p = policy("none");
    spw_sim_summary_t s;
    spw_error_t err;
    is(spw_sim_run(&f, &p, j, rt, 3, NULL, &s, &err), 0, "residency: runs");
    ok(j[1].offer < 0 && j[1].start_s == 3600, "residency: restricted waits for on-prem");
    ok(j[1].by_residency, "residency: kept on-prem by residency");
    is(s.jobs_onprem_by_residency, 1, "residency: counted");
    ok(j[2].offer == 1, "residency: eu job runs in eu-west-1 although us-east-1 is cheaper");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 3);
}

/* ---- properties over random seeds ---------------------------------------------------- */

static const char *const PROVIDERS[] = {"aws", "gcp", "azure"};
static const char *const REGIONS[] = {"us-east-1", "us-west-2", "eu-west-1", "eu-central-1"};
#define NPROV 3
#define NREG 4

static double uni(spw_rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * spw_rng_uniform(r);
}

static size_t pick(spw_rng_t *r, size_t n)
{
    return (size_t)spw_rng_below(r, n);
}

/* Builds a random fleet with governance. */
static void random_fleet(spw_fleet_t *f, spw_rng_t *r)
{
    spw_fleet_init(f);
    spw_gov_t *g = &f->gov;
    g->origin_s = 1769558400 + 86400.0 * (double)pick(r, 7);   /* late January 2026 */
    size_t npools = 1 + pick(r, 2);
    for (size_t i = 0; i < npools; i++) {
        char name[32];
        snprintf(name, sizeof(name), "p%zu", i);
        add_pool(f, name, 1 + (uint32_t)pick(r, 3), (uint16_t)(2 << pick(r, 3)),
                 pick(r, 2) ? "A100" : "H100", uni(r, 0.5, 1.5));
    }
    size_t noffers = 4 + pick(r, 8);
    for (size_t i = 0; i < noffers; i++) {
        uint32_t gpus = 1u << pick(r, 4);
        double per_gpu = uni(r, 1, 4);
        double spot = pick(r, 3) ? per_gpu * gpus * uni(r, 0.2, 0.5) : NAN;
        add_offer(f, PROVIDERS[pick(r, NPROV)], REGIONS[pick(r, NREG)], "x", pick(r, 2) ? "A100" : "H100",
                  gpus, per_gpu * gpus, spot, (double)pick(r, 3) * 60);
    }
    size_t nteams = 1 + pick(r, 4);
    for (size_t i = 0; i < nteams; i++) {
        char name[32];
        snprintf(name, sizeof(name), "team%zu", i);
        int t = add_team(f, name, pick(r, 5) ? uni(r, 20, 400) : INFINITY,
                         pick(r, 2) ? SPW_PERIOD_WEEK : SPW_PERIOD_MONTH,
                         (spw_exhausted_t)pick(r, 3));
        spw_team_spec_t *ts = &g->teams[t];
        if (pick(r, 2))
            ts->max_cloud_usd_per_h = uni(r, 5, 60);
        if (pick(r, 2))
            ts->max_cloud_gpus = (double)(4 + pick(r, 28));
        if (pick(r, 3) == 0)
            ts->max_egress_usd_per_month = uni(r, 2, 40);
    }
    if (pick(r, 2))
        g->max_cloud_usd_per_h = uni(r, 10, 120);
    if (pick(r, 2))
        g->max_cloud_gpus = (double)(8 + pick(r, 56));
    g->default_max_runtime_s = uni(r, 3600, 6 * 3600);
    add_name(&g->classes, &g->nclasses, "restricted");
    add_name(&g->classes, &g->nclasses, "experiment");
    add_name(&g->classes, &g->nclasses, "prod");
    add_name(&g->classes, &g->nclasses, "eu");
    add_name(&g->labels, &g->nlabels, "env=prod");
    add_name(&g->labels, &g->nlabels, "tier=gold");
    add_residency(f, "restricted", 1, NULL, 0);
    add_residency(f, "eu", (int)pick(r, 2), strv(2, "eu-west-1", "eu-central-1"), 2);
    size_t nrules = pick(r, 8);
    for (size_t i = 0; i < nrules; i++) {
        char name[32];
        snprintf(name, sizeof(name), "rule%zu", i);
        spw_rule_t *ru = add_rule(f, name);
        if (pick(r, 2))
            ru->teams = spw_rng_next(r) & ((1ULL << nteams) - 1);
        if (pick(r, 3) == 0)
            ru->classes = spw_rng_next(r) & 0xF;
        if (pick(r, 4) == 0)
            ru->labels = 1ULL << pick(r, 2);
        if (pick(r, 4) == 0) {
            ru->gpus_min = 1u << pick(r, 3);
            ru->gpus_max = ru->gpus_min * (1u << pick(r, 3));
        }
        switch (pick(r, 6)) {
        case 0: ru->allow_providers = strv(1, PROVIDERS[pick(r, NPROV)]); ru->n_allow_providers = 1; break;
        case 1: ru->deny_providers = strv(1, PROVIDERS[pick(r, NPROV)]); ru->n_deny_providers = 1; break;
        case 2:
            ru->allow_regions = strv(2, REGIONS[pick(r, NREG)], REGIONS[pick(r, NREG)]);
            ru->n_allow_regions = 2;
            break;
        case 3: ru->deny_regions = strv(1, REGIONS[pick(r, NREG)]); ru->n_deny_regions = 1; break;
        case 4: ru->allow_gpus = strv(1, pick(r, 2) ? "A100" : "H100"); ru->n_allow_gpus = 1; break;
        default: break;
        }
        if (pick(r, 3) == 0)
            ru->placement = (spw_placement_t)(1 + pick(r, 3));
        if (pick(r, 4) == 0)
            ru->spot = (spw_spot_rule_t)(1 + pick(r, 3));
        if (pick(r, 4) == 0)
            ru->max_usd_per_gpu_h = uni(r, 1, 4);
    }
    /* Datasets at home on-prem (leaving it is free here, so on-prem copies
     * charge no budget) or in a cloud region. */
    size_t nds = pick(r, 3);
    for (size_t i = 0; i < nds; i++) {
        char name[32];
        snprintf(name, sizeof(name), "ds%zu", i);
        if (pick(r, 2))
            add_dataset(f, name, uni(r, 10, 500), (int)pick(r, npools), NULL, NULL);
        else
            add_dataset(f, name, uni(r, 10, 500), -1, PROVIDERS[pick(r, NPROV)],
                        REGIONS[pick(r, NREG)]);
    }
    g->egress_onprem_usd_per_gb = 0;
    g->cache_ttl_s = pick(r, 2) ? 0 : uni(r, 3600, 3 * 86400);
}

static void random_jobs(const spw_fleet_t *f, spw_rng_t *r, spw_job_t *j, double *rt, size_t n)
{
    const spw_gov_t *g = &f->gov;
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        /* Bursts of simultaneous arrivals now and then. */
        if (pick(r, 4))
            t += spw_rng_exp(r, 1800);
        rt[i] = 60 + spw_rng_exp(r, 3 * 3600);
        job_init(&j[i], "", t, rt[i] * uni(r, 0.5, 1.5), 1u << pick(r, 4), (uint32_t)i);
        j[i].team = (uint32_t)pick(r, g->nteams + 1);
        j[i].jclass = pick(r, 3) == 0 ? (uint32_t)(1 + pick(r, g->nclasses)) : 0;
        j[i].labels = spw_rng_next(r) & 3;
        j[i].data = g->ndatasets && pick(r, 3) == 0 ? (uint32_t)(1 + pick(r, g->ndatasets)) : 0;
        j[i].residency = pick(r, 10) == 0 ? (uint32_t)(1 + pick(r, g->nresidencies)) : 0;
        if (pick(r, 3) == 0)
            j[i].max_runtime_s = rt[i] * uni(r, 0.3, 2);
    }
}

/* The residency a job is bound by: its own, or its class's; -1 = none. */
static int job_res(const spw_gov_t *g, const spw_job_t *j)
{
    if (j->residency)
        return (int)j->residency - 1;
    if (j->jclass)
        return spw_gov_residency(g, g->classes[j->jclass - 1]);
    return -1;
}

static int in_list(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

static int rule_matches(const spw_rule_t *ru, const spw_job_t *j)
{
    if (ru->teams && !(j->team && (ru->teams >> (j->team - 1) & 1)))
        return 0;
    if (ru->classes && !(j->jclass && (ru->classes >> (j->jclass - 1) & 1)))
        return 0;
    if ((ru->labels & ~j->labels) != 0)
        return 0;
    return ru->gpus_min <= j->gpus && j->gpus <= ru->gpus_max;
}

static int model_ok(const spw_fleet_t *f, const spw_rule_t *ru, int model)
{
    if (!ru->allow_gpus || model < 0)
        return 1;
    for (size_t k = 0; k < ru->n_allow_gpus; k++)
        if (spw_model_accepts(ru->allow_gpus[k], f->models.name[model]))
            return 1;
    return 0;
}

/* An independent reading of the rules: may job j run where it ran?  Says
 * why not in why. */
static int place_allowed(const spw_fleet_t *f, const spw_job_t *j, char *why, size_t len)
{
    const spw_gov_t *g = &f->gov;
    int res = job_res(g, j);
    spw_placement_t placement = SPW_PLACE_UNSET;
    spw_spot_rule_t spot = SPW_SPOT_UNSET;
    double max_gpu_h = INFINITY;
    for (size_t k = 0; k < g->nrules; k++) {
        const spw_rule_t *ru = &g->rules[k];
        if (!rule_matches(ru, j))
            continue;
        if (ru->placement != SPW_PLACE_UNSET)
            placement = ru->placement;
        if (ru->spot != SPW_SPOT_UNSET)
            spot = ru->spot;
        if (ru->max_usd_per_gpu_h < max_gpu_h)
            max_gpu_h = ru->max_usd_per_gpu_h;
        if (j->offer < 0) {
            if (!model_ok(f, ru, f->pools[j->pool].model)) {
                snprintf(why, len, "rule %s: pool model not allowed", ru->name);
                return 0;
            }
            continue;
        }
        const spw_offer_t *o = &f->offers[j->offer];
        if ((ru->allow_providers && !in_list(ru->allow_providers, ru->n_allow_providers, o->provider))
            || in_list(ru->deny_providers, ru->n_deny_providers, o->provider)
            || (ru->allow_regions && !in_list(ru->allow_regions, ru->n_allow_regions, o->region))
            || in_list(ru->deny_regions, ru->n_deny_regions, o->region)
            || !model_ok(f, ru, o->model)) {
            snprintf(why, len, "rule %s denies %s:%s", ru->name, o->provider, o->region);
            return 0;
        }
    }
    if (j->offer < 0) {
        if (res >= 0 && !g->residencies[res].onprem) {
            snprintf(why, len, "residency %s forbids on-prem", g->residencies[res].name);
            return 0;
        }
        return 1;
    }
    const spw_offer_t *o = &f->offers[j->offer];
    if (placement == SPW_PLACE_ONPREM_ONLY) {
        snprintf(why, len, "placement onprem_only");
        return 0;
    }
    if (spot == SPW_SPOT_REQUIRED && !j->spot) {
        snprintf(why, len, "spot required but on-demand");
        return 0;
    }
    if ((spot == SPW_SPOT_NEVER || spot == SPW_SPOT_UNSET || spot == SPW_SPOT_ALLOWED) && j->spot) {
        snprintf(why, len, "on spot without spot: required");
        return 0;
    }
    double price = (j->spot ? o->spot_usd_per_h : o->ondemand_usd_per_h) / o->gpus;
    if (!(price <= max_gpu_h)) {
        snprintf(why, len, "$%.2f/GPU-h over the rules' $%.2f", price, max_gpu_h);
        return 0;
    }
    if (res >= 0 && !in_list(g->residencies[res].regions, g->residencies[res].nregions, o->region)) {
        snprintf(why, len, "residency %s forbids %s", g->residencies[res].name, o->region);
        return 0;
    }
    return 1;
}

typedef struct edge {
    double t;
    int start;        /* 1: interval starts; ends sort first at equal t */
    uint32_t team;
    double usd_h, gpus;
} edge_t;

static int edge_cmp(const void *a, const void *b)
{
    const edge_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->start - y->start;
}

/* (b): the caps hold at every instant, by a sweep over cloud intervals. */
static int caps_hold(const spw_fleet_t *f, const spw_job_t *j, size_t n, char *why, size_t len,
                     double *fill)
{
    const spw_gov_t *g = &f->gov;
    edge_t *e = spw_xmalloc(2 * (n ? n : 1) * sizeof(*e));
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        if (j[i].state != SPW_JOB_DONE || j[i].offer < 0)
            continue;
        const spw_offer_t *o = &f->offers[j[i].offer];
        double usd_h = j[i].instances * (j[i].spot ? o->spot_usd_per_h : o->ondemand_usd_per_h);
        double gpus = (double)j[i].instances * o->gpus;
        e[ne++] = (edge_t){j[i].placed_s, 1, j[i].team, usd_h, gpus};
        e[ne++] = (edge_t){j[i].end_s, 0, j[i].team, -usd_h, -gpus};
    }
    qsort(e, ne, sizeof(*e), edge_cmp);
    double org_usd = 0, org_gpus = 0, t_usd[SPW_GOV_MAX_TEAMS + 1] = {0},
           t_gpus[SPW_GOV_MAX_TEAMS + 1] = {0};
    int good = 1;
    for (size_t k = 0; k < ne && good; k++) {
        org_usd += e[k].usd_h;
        org_gpus += e[k].gpus;
        t_usd[e[k].team] += e[k].usd_h;
        t_gpus[e[k].team] += e[k].gpus;
        if (!e[k].start)
            continue;
        if (org_usd / g->max_cloud_usd_per_h > *fill)
            *fill = org_usd / g->max_cloud_usd_per_h;
        if (org_usd > g->max_cloud_usd_per_h + EPS || org_gpus > g->max_cloud_gpus + EPS) {
            snprintf(why, len, "t=%.0f: org $%.2f/h, %.0f GPUs over caps $%.2f/h, %.0f", e[k].t,
                     org_usd, org_gpus, g->max_cloud_usd_per_h, g->max_cloud_gpus);
            good = 0;
        }
        uint32_t tm = e[k].team;
        if (tm && (t_usd[tm] > g->teams[tm - 1].max_cloud_usd_per_h + EPS ||
                   t_gpus[tm] > g->teams[tm - 1].max_cloud_gpus + EPS)) {
            snprintf(why, len, "t=%.0f: team %u $%.2f/h, %.0f GPUs over its caps", e[k].t, tm,
                     t_usd[tm], t_gpus[tm]);
            good = 0;
        }
    }
    free(e);
    return good;
}

/* (a): every team's budget per period and egress per month. */
static int budgets_hold(const spw_fleet_t *f, const spw_job_t *j, size_t n, char *why, size_t len,
                        double *fill)
{
    const spw_gov_t *g = &f->gov;
    enum { MAXP = 512 };
    static struct { uint32_t team; int month; double start, usd; } acc[MAXP];
    size_t na = 0;
    for (size_t i = 0; i < n; i++) {
        if (j[i].state != SPW_JOB_DONE || !j[i].team)
            continue;
        const spw_team_spec_t *ts = &g->teams[j[i].team - 1];
        double t = g->origin_s + j[i].placed_s;
        /* Cloud placements: compute + egress, admitted against the budget
         * and the egress cap.  Copies into on-prem pools are paid without
         * asking the budget, but every egress dollar counts against the
         * team's egress cap (each attempt's copy in the month it started:
         * a job that ran once on-prem has all of its egress there). */
        double usd = j[i].cost_usd;
        double eg = spw_job_rare(&j[i])->egress_usd;
        if (j[i].offer < 0 && spw_job_rare(&j[i])->restarts)
            continue;
        for (int month = j[i].offer < 0; month < 2; month++) {
            double start = month ? spw_period_start(SPW_PERIOD_MONTH, t)
                                 : spw_period_start(ts->period, t);
            size_t k = 0;
            while (k < na && !(acc[k].team == j[i].team && acc[k].month == month &&
                               acc[k].start == start))
                k++;
            if (k == na) {
                if (na == MAXP)
                    return snprintf(why, len, "too many periods"), 0;
                acc[na].team = j[i].team;
                acc[na].month = month;
                acc[na].start = start;
                acc[na++].usd = 0;
            }
            acc[k].usd += month ? eg : usd;
        }
    }
    for (size_t k = 0; k < na; k++) {
        const spw_team_spec_t *ts = &g->teams[acc[k].team - 1];
        double cap = acc[k].month ? ts->max_egress_usd_per_month : ts->budget_usd;
        if (!acc[k].month && acc[k].usd / cap > *fill)
            *fill = acc[k].usd / cap;
        if (acc[k].usd > cap + EPS) {
            snprintf(why, len, "team %s: $%.4f %s in the period from %.0f, over $%.4f", ts->name,
                     acc[k].usd, acc[k].month ? "egress" : "spent", acc[k].start, cap);
            return 0;
        }
    }
    return 1;
}

static void test_properties(void)
{
    enum { SEEDS = 200, JOBS = 300 };
    static const char *const waits[] = {"none", "constant:600", "compute:0.25", "runtime:0.5"};
    spw_job_t *j = spw_xcalloc(JOBS, sizeof(*j));
    double *rt = spw_xmalloc(JOBS * sizeof(double));
    int ok_budget = 1, ok_caps = 1, ok_places = 1, ok_whynot = 1, ok_restricted = 1,
        ok_runs = 1, ok_det = 1, ok_summary = 1;
    double budget_fill = 0, rate_fill = 0;
    size_t tot_cloud = 0, tot_held = 0, tot_rejected = 0, tot_restricted = 0, tot_stopped = 0,
           tot_egress = 0;
    char why[200];
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        spw_rng_t r;
        spw_rng_seed(&r, seed);
        spw_fleet_t f;
        random_fleet(&f, &r);
        random_jobs(&f, &r, j, rt, JOBS);
        spw_policy_t p = policy(waits[pick(&r, 4)]);
        p.gravity = (int)pick(&r, 2);
        spw_sim_summary_t s, s2;
        spw_error_t err;
        if (spw_sim_run(&f, &p, j, rt, JOBS, NULL, &s, &err) < 0) {
            if (ok_runs)
                diag("seed %llu: %s", (unsigned long long)seed, err.text);
            ok_runs = 0;
            spw_fleet_clear(&f);
            continue;
        }
        if (ok_budget && !budgets_hold(&f, j, JOBS, why, sizeof(why), &budget_fill)) {
            diag("seed %llu: %s", (unsigned long long)seed, why);
            ok_budget = 0;
        }
        if (ok_caps && !caps_hold(&f, j, JOBS, why, sizeof(why), &rate_fill)) {
            diag("seed %llu: %s", (unsigned long long)seed, why);
            ok_caps = 0;
        }
        /* (c) every placement allowed: by the rules read independently, and
         * by a fresh runtime's why_not. */
        spw_govrt_t *rt0 = spw_govrt_create(&f);
        size_t ran = 0, never = 0;
        for (size_t i = 0; i < JOBS; i++) {
            const spw_job_t *x = &j[i];
            tot_restricted += x->jclass == 1 && x->state == SPW_JOB_DONE;
            if (x->state == SPW_JOB_QUEUED)
                never++;
            if (x->state != SPW_JOB_DONE)
                continue;
            ran++;
            int res = job_res(&f.gov, x);
            if (ok_restricted && res == 0 && x->offer >= 0) {
                diag("seed %llu: restricted job %zu ran in the cloud", (unsigned long long)seed, i);
                ok_restricted = 0;
            }
            if (ok_places && !place_allowed(&f, x, why, sizeof(why))) {
                diag("seed %llu: job %zu: %s", (unsigned long long)seed, i, why);
                ok_places = 0;
            }
            uint32_t prof = spw_govrt_profile_of(rt0, x);
            char w2[160];
            if (ok_whynot && spw_govrt_why_not(rt0, prof, x->offer >= 0 ? -1 : x->pool,
                                               x->offer, w2, sizeof(w2)) >= 0) {
                diag("seed %llu: job %zu: why_not says %s", (unsigned long long)seed, i, w2);
                ok_whynot = 0;
            }
        }
        spw_govrt_destroy(rt0);
        /* The summary adds up. */
        size_t tj = 0, th = 0, trj = 0;
        for (size_t k = 0; k <= s.nteams; k++) {
            tj += s.team[k].jobs;
            th += s.team[k].jobs_held;
            trj += s.team[k].jobs_rejected;
        }
        if (ok_summary && (tj != JOBS || th != s.jobs_held || trj != s.jobs_rejected ||
                           s.jobs_onprem + s.jobs_cloud != ran || never != s.jobs_never_ran ||
                           ran + s.jobs_rejected + s.jobs_unschedulable + never != JOBS)) {
            diag("seed %llu: summary: %zu jobs in teams, %zu ran, %zu rejected, %zu "
                 "unschedulable, %zu never ran", (unsigned long long)seed, tj, ran,
                 s.jobs_rejected, s.jobs_unschedulable, s.jobs_never_ran);
            ok_summary = 0;
        }
        /* Byte-identical rerun (the summary is memset before it is filled). */
        if (seed % 20 == 0) {
            if (spw_sim_run(&f, &p, j, rt, JOBS, NULL, &s2, &err) < 0 || memcmp(&s, &s2, sizeof(s)))
                ok_det = 0;
        }
        tot_cloud += s.jobs_cloud;
        tot_held += s.jobs_held;
        tot_rejected += s.jobs_rejected;
        tot_stopped += s.jobs_stopped_max_runtime;
        tot_egress += s.egress_gb > 0;
        spw_fleet_clear(&f);
    }
    ok(ok_runs, "properties: %d seeds x %d jobs all run", SEEDS, JOBS);
    ok(ok_budget, "properties: no team's budget period or egress month is overspent");
    ok(ok_caps, "properties: no spend-rate or GPU cap, org or team, exceeded at any instant");
    ok(ok_restricted, "properties: no restricted job ran in the cloud (%zu ran on-prem)",
       tot_restricted);
    ok(ok_places, "properties: every placement allowed by an independent reading of the rules");
    ok(ok_whynot, "properties: spw_govrt_why_not finds nothing against any placement");
    ok(ok_summary, "properties: per-team counts add up to the totals");
    ok(ok_det, "properties: reruns give identical summaries");
    /* The workload must exercise what it claims to. */
    ok(tot_cloud > 1000 && tot_held > 100 && tot_rejected > 10 && tot_stopped > 100 &&
       tot_egress > 10 && budget_fill > 0.97 && rate_fill > 0.9,
       "properties: exercised: %zu cloud jobs, %zu held, %zu rejected, %zu stopped, %zu runs "
       "with egress; fullest budget period %.1f%%, org rate cap %.1f%%", tot_cloud, tot_held,
       tot_rejected, tot_stopped, tot_egress, 100 * budget_fill, 100 * rate_fill);
    spw_jobs_clear(j, JOBS);
    free(j);
    free(rt);
}

/* No governance: the new summary fields stay zero and nothing is stopped. */
static void test_inactive(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 2, NULL, 1.0);
    add_offer(&f, "aws", "us-east-1", "g1", NULL, 1, 2.0, NAN, 30);
    spw_job_t j[3] = {0};
    double rt[3] = {100000, 100000, 100000};
    for (int i = 0; i < 3; i++)
        job_init(&j[i], "x", 0, 100000, 1, (uint32_t)i);
    spw_policy_t p = policy("none");
    spw_sim_summary_t s;
    spw_error_t err;
    is(spw_sim_run(&f, &p, j, rt, 3, NULL, &s, &err), 0, "inactive: runs");
    ok(!s.gov && s.nteams == 0 && s.jobs_held == 0 && s.egress_gb == 0 &&
       s.jobs_stopped_max_runtime == 0, "inactive: no governance figures");
    is(s.team[0].jobs, 3, "inactive: every job in the no-team bucket");
    is_double(s.peak_cloud_gpus, 1, 0, "inactive: the ledger still sees 1 cloud GPU");
    is_double(j[2].end_s, 30 + 100000, 0, "inactive: a long cloud job is not stopped");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 3);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Fair share (docs/fairshare.md), the scenario: one
 * 4 x 8-GPU pool; team a submits 200 one-hour 8-GPU jobs at 0, team b twenty
 * 30-minute 1-GPU jobs at 10 min.  FIFO makes b wait behind all of a;
 * queue: fair with quotas of 16 each reclaims borrowed GPUs for b within
 * the grace, so b waits less than one of its jobs, at about FIFO's
 * utilisation; rho is worked out for both teams. */
static void run_scenario(int fair, spw_sim_summary_t *out)
{
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "onprem:\n  - {name: pool, nodes: 4, gpus_per_node: 8}\n"
             "policy: {queue: %s, wait: never, reclaim_grace: 5m}\n"
             "cohorts:\n  - {name: lab}\n"
             "teams:\n  - {name: a%s}\n  - {name: b%s}\n",
             fair ? "fair" : "fifo", fair ? ", quota: {gpus: 16}, cohort: lab" : "",
             fair ? ", quota: {gpus: 16}, cohort: lab" : "");
    spw_config_t cfg;
    spw_error_t err;
    if (spw_config_load_mem(&cfg, "fair.yaml", yaml, strlen(yaml), NULL, &err) < 0) {
        ok(0, "the scenario's config loads: %s", err.text);
        return;
    }
    enum { NA = 200, NB = 20 };
    spw_job_t jobs[NA + NB] = {0};
    double rt[NA + NB];
    char ids[NA + NB][16];
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < NA + NB; i++) {
        spw_job_t *j = &jobs[i];
        snprintf(ids[i], sizeof(ids[i]), "%c%d", i < NA ? 'a' : 'b', i);
        j->id = ids[i];
        j->submit_s = i < NA ? 0 : 600;
        j->gpus = i < NA ? 8 : 1;
        rt[i] = j->est_runtime_s = i < NA ? 3600 : 1800;
        j->team = i < NA ? 1 : 2;
        j->order = (uint32_t)i;
        j->deadline_s = NAN;
        j->checkpoint_interval_s = 600;
    }
    memset(out, 0, sizeof(*out));
    ok(spw_sim_run(&cfg.fleet, &cfg.policy, jobs, rt, NA + NB, NULL, out, &err) == 0 &&
       spw_sim_fairness(&cfg.fleet, &cfg.policy, jobs, rt, NA + NB, out, &err) == 0,
       "the scenario runs under %s", fair ? "fair + quotas" : "fifo");
    if (!fair) {
        /* The overall quantiles are those of every job done, whatever the
         * per-team ones did with the same waits (nearest rank; fifo makes
         * no restarts, so a wait is start - submit). */
        double w[NA + NB];
        size_t m = 0;
        for (int i = 0; i < NA + NB; i++)
            if (jobs[i].state == SPW_JOB_DONE)
                w[m++] = jobs[i].start_s - jobs[i].submit_s;
        qsort(w, m, sizeof(*w), cmp_double);
        ok(m == NA + NB && out->wait_p50_s == w[(size_t)ceil(0.50 * m) - 1] &&
           out->wait_p90_s == w[(size_t)ceil(0.90 * m) - 1] &&
           out->wait_p99_s == w[(size_t)ceil(0.99 * m) - 1],
           "fifo: wait p50/p90/p99 %.0f/%.0f/%.0f s are those of all %zu jobs done "
           "(%.0f/%.0f/%.0f s)", out->wait_p50_s, out->wait_p90_s, out->wait_p99_s, m,
           m ? w[(size_t)ceil(0.50 * m) - 1] : 0, m ? w[(size_t)ceil(0.90 * m) - 1] : 0,
           m ? w[(size_t)ceil(0.99 * m) - 1] : 0);
    }
    spw_config_free(&cfg);
    spw_jobs_clear(jobs, NA + NB);
}

static void test_fairshare(void)
{
    spw_sim_summary_t fifo, fair;
    run_scenario(0, &fifo);
    run_scenario(1, &fair);
    ok(fifo.team[2].wait_mean_s > 5 * 3600, "fifo: team b waits behind all of a (mean %.0f s)",
       fifo.team[2].wait_mean_s);
    ok(fair.team[2].wait_mean_s < 1800, "fair: team b's mean wait %.0f s is under one of its "
       "30-minute jobs", fair.team[2].wait_mean_s);
    ok(fair.reclaims > 0 && fair.team[1].reclaimed == fair.reclaims,
       "fair: %zu of a's attempts were reclaimed, none of b's", fair.reclaims);
    ok(fabs(fair.onprem_utilization - fifo.onprem_utilization) < 0.02,
       "utilisation within 2 points of fifo (%.3f vs %.3f)", fair.onprem_utilization,
       fifo.onprem_utilization);
    ok(fair.team[1].jobs_done == 200 && fair.team[2].jobs_done == 20 &&
       fair.team[2].wait_p90_s >= fair.team[2].wait_mean_s,
       "per-team jobs done and p90 >= mean");
    ok(fifo.team[2].rho > fair.team[2].rho && fair.team[1].rho > 0 && fair.team[2].rho > 0,
       "rho for both teams; b's falls from %.2f to %.2f", fifo.team[2].rho, fair.team[2].rho);
}

int main(void)
{
    test_exhausted();
    test_max_runtime();
    test_race();
    test_gravity();
    test_residency();
    test_inactive();
    test_properties();
    test_fairshare();
    done_testing();
}
