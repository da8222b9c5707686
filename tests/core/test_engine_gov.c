/* test_engine_gov.c: the decision engine's governance (budgets, caps, rules,
 * residency, data gravity) driven directly on hand-built fleets, with every
 * placement, ledger figure and cost worked out by hand in the comments. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "tap.h"
#include "core/engine.h"
#include "core/gov.h"
#include "core/model.h"

#define EPS 1e-9

/* 2026-03-01T00:00:00Z and 2026-01-31T23:00:00Z, unix seconds. */
#define MAR_2026 1772323200.0
#define JAN_31_2300 1769900400.0
#define JAN_2026 1767225600.0

/* ---- building fleets ------------------------------------------------------- */

/* A team with a monthly budget (INFINITY = none) and no caps; returns
 * the value for spw_job_t.team (index + 1). */
static uint32_t add_team(spw_fleet_t *f, const char *name, double budget_usd, spw_exhausted_t x)
{
    spw_gov_t *g = &f->gov;
    g->teams = spw_xrealloc(g->teams, (g->nteams + 1) * sizeof(*g->teams));
    spw_team_spec_t *t = &g->teams[g->nteams];
    memset(t, 0, sizeof(*t));
    t->name = spw_xstrdup(name);
    t->line = (int)g->nteams + 1;
    t->budget_usd = budget_usd;
    t->period = SPW_PERIOD_MONTH;
    t->on_exhausted = x;
    t->max_cloud_usd_per_h = INFINITY;
    t->max_cloud_gpus = INFINITY;
    t->max_egress_usd_per_month = INFINITY;
    return (uint32_t)++g->nteams;
}

/* A class name; returns the value for spw_job_t.jclass (index + 1). */
static uint32_t add_class(spw_fleet_t *f, const char *name)
{
    spw_gov_t *g = &f->gov;
    g->classes = spw_xrealloc(g->classes, (g->nclasses + 1) * sizeof(char *));
    g->classes[g->nclasses] = spw_xstrdup(name);
    return (uint32_t)++g->nclasses;
}

/* A rule matching jobs of class jclass (index + 1; 0 = every job) with no
 * effect yet; the pointer is valid until the next add_rule. */
static spw_rule_t *add_rule(spw_fleet_t *f, const char *name, uint32_t jclass)
{
    spw_gov_t *g = &f->gov;
    g->rules = spw_xrealloc(g->rules, (g->nrules + 1) * sizeof(*g->rules));
    spw_rule_t *r = &g->rules[g->nrules];
    memset(r, 0, sizeof(*r));
    r->name = spw_xstrdup(name);
    r->line = 100 + (int)g->nrules;
    r->classes = jclass ? 1ULL << (jclass - 1) : 0;
    r->gpus_min = 1;
    r->gpus_max = UINT32_MAX;
    r->max_usd_per_gpu_h = INFINITY;
    g->nrules++;
    return r;
}

/* A residency (regions: owned list from strv, or NULL); returns index + 1. */
static uint32_t add_residency(spw_fleet_t *f, const char *name, int onprem, char **regions,
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
    return (uint32_t)++g->nresidencies;
}

/* A dataset at home in pool `pool` (>= 0) or in provider:region; returns
 * the value for spw_job_t.data (index + 1). */
static uint32_t add_dataset(spw_fleet_t *f, const char *name, double size_gb, int pool,
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
    return (uint32_t)++g->ndatasets;
}

static void job_init(spw_job_t *j, const char *id, double submit_s, double est_s, uint32_t gpus,
                     uint32_t order, uint32_t team)
{
    spw_job_clear(j);   /* jobs are zero-initialised (= {0}) or inited before */
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->submit_s = submit_s;
    j->est_runtime_s = est_s;
    j->gpus = gpus;
    j->order = order;
    j->team = team;
    j->deadline_s = NAN;
    spw_job_reset(j);
}

/* Submits job j (as job_init) reading dataset `data` at time at. */
static void submit_data(spw_engine_t *e, spw_job_t *j, const char *id, double at, double est_s,
                        uint32_t gpus, uint32_t order, uint32_t team, uint32_t data)
{
    job_init(j, id, at, est_s, gpus, order, team);
    j->data = data;
    spw_engine_submit(e, j, at);
}

static spw_engine_t *engine(const spw_fleet_t *f, const char *wait, int gravity)
{
    spw_policy_t p;
    spw_policy_default(&p);
    p.queue = SPW_QUEUE_FIFO;
    p.scan = SPW_SCAN_HOL;
    p.backfill = SPW_BACKFILL_NONE;
    p.fit = SPW_FIT_FIRST;
    p.gravity = gravity;
    spw_error_t err;
    if (spw_wait_parse(wait, &p.wait, &err) < 0)
        diag("bad wait '%s' in the test: %s", wait, err.text);
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

static spw_team_ledger_t ledger(spw_engine_t *e, uint32_t team, double at)
{
    spw_team_ledger_t L;
    spw_govrt_ledger(spw_engine_gov(e), (int)team - 1, at, &L);
    return L;
}

static size_t count_state(spw_job_t *jobs, size_t n, spw_job_state_t s)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += jobs[i].state == s;
    return k;
}

/* ---- 1. budget hold ----------------------------------------------------------- */

/* Team ml: $100 a month (March 2026), hold.  Offer: $10/h, 1 GPU, boot 0;
 * default_max_runtime 3600 s, so each burst's worst case is
 * $10 x (0 + 3600)/3600 = $10.  One 1-GPU node, held by a blocker for good;
 * wait none.  15 jobs at t=0: 10 x $10 = $100 fill the budget exactly, the
 * 5 others are held. */
static void test_budget_hold(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t ml = add_team(&f, "ml", 100, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 3600;
    f.gov.origin_s = MAR_2026;
    spw_engine_t *e = engine(&f, "none", 1);

    spw_job_t b = {0}, j[15] = {0};
    char ids[15][16];
    job_init(&b, "b", 0, 1e7, 1, 0, 0);
    spw_engine_submit(e, &b, 0);
    for (int i = 0; i < 15; i++) {
        snprintf(ids[i], sizeof(ids[i]), "j%d", i);
        job_init(&j[i], ids[i], 0, 3600, 1, (uint32_t)i + 1, ml);
        spw_engine_submit(e, &j[i], 0);
    }
    is(sched(e, 0), 11, "budget: the blocker and 10 bursts placed at t=0");
    is(b.state, SPW_JOB_ONPREM, "budget: the blocker holds the only GPU");
    is(count_state(j, 15, SPW_JOB_CLOUD), 10, "budget: exactly 10 jobs in the cloud");
    is(j[9].state, SPW_JOB_CLOUD, "budget: the first 10 in queue order burst (j9 did)");
    int held_ok = 1;
    for (int i = 10; i < 15; i++)
        held_ok &= j[i].state == SPW_JOB_QUEUED && j[i].reason == SPW_REASON_HELD_BUDGET &&
                   spw_job_rare(&j[i])->held == 1 && j[i].offer == -1;
    ok(held_ok, "budget: j10..j14 queued, reason HELD_BUDGET, held once");
    /* The caller learns who was held without walking its queue. */
    spw_job_t **nh;
    size_t nn = spw_engine_held(e, &nh);
    int named = nn == 5;
    for (size_t k = 0; named && k < nn; k++)
        named = nh[k] == &j[10 + k];
    ok(named, "budget: spw_engine_held names j10..j14 in queue order (%zu)", nn);
    is(spw_engine_held(e, &nh), 0, "budget: asked again, nothing new was held");
    ok(isinf(spw_engine_burst_at(e, &j[10])) && isinf(spw_engine_burst_at(e, &j[0])),
       "budget: a held job and a placed one never burst by their wait");
    is_double(spw_job_rare(&j[0])->reserved_usd, 10, EPS, "budget: a burst reserves $10");
    is_double(spw_job_rare(&j[0])->charge_s, 0, EPS, "budget: charged to the period of t=0");
    is_double(spw_engine_max_runtime(e, &j[0]), 3600, EPS,
              "budget: a cloud job must stop at default_max_runtime");
    is(spw_engine_queued(e), 5, "budget: 5 jobs still wait");
    spw_team_ledger_t L = ledger(e, ml, 0);
    is_double(L.budget_usd, 100, EPS, "budget: ledger budget $100");
    is_double(L.settled_usd, 0, EPS, "budget: nothing settled yet");
    is_double(L.reserved_usd, 100, EPS, "budget: $100 reserved");
    is_double(L.remaining_usd, 0, EPS, "budget: $0 left");
    is_double(L.cloud_usd_per_h, 100, EPS, "budget: spending $100/h");
    is_double(L.cloud_gpus, 10, EPS, "budget: 10 cloud GPUs");
    is_double(L.period_start_s, 0, EPS, "budget: period starts at engine 0 (March 1)");
    is_double(L.period_end_s, 31 * 86400.0, EPS, "budget: period ends April 1 (31 days)");
    is_double(spw_engine_next_wakeup(e), 31 * 86400.0, EPS,
              "budget: next wakeup is the period's end, when the held retry");

    /* Nothing freed: a later instant does not retry the held. */
    is(sched(e, 900), 0, "budget: nothing placed at 900 s when no money freed");
    is(spw_job_rare(&j[10])->held, 1, "budget: held jobs were not retried for nothing");

    /* Three jobs end after 30 min: 0.5 h x $10 = $5 each.  Ledger: settled
     * $15, reserved $70, remaining $15.  The retry places j10 (85 + 10 = 95
     * <= 100); j11 (95 + 10 > 100) is held again; j12..j14 wait their turn. */
    for (int i = 0; i < 3; i++)
        spw_engine_finish(e, &j[i], 1800);
    is_double(j[0].cost_usd, 5, EPS, "budget: 30 min at $10/h cost $5");
    is_double(spw_job_rare(&j[0])->reserved_usd, 0, EPS, "budget: its reservation is released");
    L = ledger(e, ml, 1800);
    is_double(L.settled_usd, 15, EPS, "budget: settled $15 after three jobs");
    is_double(L.reserved_usd, 70, EPS, "budget: $70 still reserved");
    is_double(L.remaining_usd, 15, EPS, "budget: $15 left");
    is_double(L.cloud_usd_per_h, 70, EPS, "budget: spending $70/h");
    is(sched(e, 1800), 1, "budget: exactly one held job placed when $15 freed");
    is(j[10].state, SPW_JOB_CLOUD, "budget: j10, first in queue order, bursts");
    is(j[10].reason, SPW_REASON_WAIT_EXPIRED, "budget: its reason is the expired wait");
    is(j[11].state, SPW_JOB_QUEUED, "budget: j11 is held again");
    is(spw_job_rare(&j[11])->held, 2, "budget: j11 held twice");
    is(spw_job_rare(&j[12])->held, 1, "budget: j12 was not tried after its team's refusal");
    L = ledger(e, ml, 1800);
    is_double(L.reserved_usd, 80, EPS, "budget: $80 reserved");
    is_double(L.remaining_usd, 5, EPS, "budget: $5 left");
    is(spw_engine_queued(e), 4, "budget: 4 jobs wait");

    /* At 3600 s j3..j9 end after 1 h ($10 each, exactly their reservation)
     * and j10 after 30 min ($5): settled 15 + 70 + 5 = $90, reserved 0.
     * The worst case $10 fits exactly (90 + 10 = 100): j11 bursts, j12 not. */
    for (int i = 3; i <= 10; i++)
        spw_engine_finish(e, &j[i], 3600);
    L = ledger(e, ml, 3600);
    is_double(L.settled_usd, 90, EPS, "budget: settled $90");
    is_double(L.reserved_usd, 0, EPS, "budget: nothing reserved");
    is(sched(e, 3600), 1, "budget: one more placed at 3600 s");
    is(j[11].state, SPW_JOB_CLOUD, "budget: j11 bursts: $10 fits the last $10 exactly");
    is(j[12].state, SPW_JOB_QUEUED, "budget: j12 still held");
    is(spw_job_rare(&j[12])->held, 2, "budget: j12 held twice");
    L = ledger(e, ml, 3600);
    is_double(L.remaining_usd, 0, EPS, "budget: $0 left again");

    /* j11 overruns to 5000 s: billed 5000/3600 x $10 = $13.89, clamped to
     * its $10 reservation (the caller should have stopped it at 3600 s). */
    spw_engine_finish(e, &j[11], 3600 + 5000);
    is_double(j[11].cost_usd, 10, EPS, "budget: an overrun is settled at the reservation");
    L = ledger(e, ml, 3600);
    is_double(L.settled_usd, 100, EPS, "budget: settled $100 for the month");

    /* The blocker ends: the held jobs sit in the on-prem queue, so j12 runs
     * on-prem (a HOL pass: j13 does not fit behind it). */
    spw_engine_finish(e, &b, 9000);
    sched(e, 9000);
    is(j[12].state, SPW_JOB_ONPREM, "budget: a held job starts on-prem when a GPU frees");
    is(j[12].reason, SPW_REASON_FITS_ONPREM, "budget: reason fits on-prem");
    is_double(spw_job_rare(&j[12])->reserved_usd, 0, EPS, "budget: on-prem reserves nothing");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_jobs_clear(j, 15);
}

/* The same fleet at 1800 s, with a new job j15 arriving then (wait none):
 * the $15 freed should go to j10, held since t=0, before j15 (queue order),
 * not to the newcomer whose wait expires in the same instant. */
static void test_budget_held_first(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t ml = add_team(&f, "ml", 100, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 3600;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j[16] = {0};
    job_init(&b, "b", 0, 1e7, 1, 0, 0);
    spw_engine_submit(e, &b, 0);
    for (int i = 0; i < 15; i++) {
        job_init(&j[i], "j", 0, 3600, 1, (uint32_t)i + 1, ml);
        spw_engine_submit(e, &j[i], 0);
    }
    sched(e, 0);
    for (int i = 0; i < 3; i++)
        spw_engine_finish(e, &j[i], 1800);
    job_init(&j[15], "j15", 1800, 3600, 1, 16, ml);
    spw_engine_submit(e, &j[15], 1800);
    sched(e, 1800);
    ok(j[10].state == SPW_JOB_CLOUD && j[15].state == SPW_JOB_QUEUED,
         "budget: freed money goes to the job held longest, not a newcomer (j10 %s, j15 %s)",
       spw_job_state_name(j[10].state), spw_job_state_name(j[15].state));
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_jobs_clear(j, 16);
}

/* The budget refusal of the cheapest offer does not hold for a dearer one
 * when their boot delays differ.  Budget $15; offers: slow $10/h with a
 * 1 h boot (worst case 10 x (3600 + 3600)/3600 = $20) and fast $11/h
 * with no boot ($11).  The fast one fits and should be taken. */
static void test_budget_boot_delay(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "test", "", "slow", NULL, 1, 10.0, NAN, 3600);
    add_offer(&f, "test", "", "fast", NULL, 1, 11.0, NAN, 0);
    uint32_t ml = add_team(&f, "ml", 15, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 3600;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 3600, 1, 1, ml);
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    ok(j.state == SPW_JOB_CLOUD && j.offer == 1,
         "budget: a dearer offer with a shorter boot fits when the cheapest does not "
         "(state %s, offer %d)",
       spw_job_state_name(j.state), j.offer);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* ---- 2. on_exhausted ------------------------------------------------------------ */

/* Team t: $10, onprem_only.  One 1-GPU node (blocker until 100 s), offer
 * $10/h 1 GPU, worst case $10.  j1 bursts ($10 = the whole budget); j2 is
 * refused and goes back to the on-prem queue for good; j3 wants 2 GPUs
 * (2 instances, worst case $20) and no pool can ever hold it: rejected. */
static void test_onprem_only(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t t = add_team(&f, "t", 10, SPW_EXHAUSTED_ONPREM_ONLY);
    f.gov.default_max_runtime_s = 3600;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j1 = {0}, j2 = {0}, j3 = {0};
    job_init(&b, "b", 0, 100, 1, 0, 0);
    job_init(&j1, "j1", 0, 3600, 1, 1, t);
    job_init(&j2, "j2", 0, 3600, 1, 2, t);
    job_init(&j3, "j3", 0, 3600, 2, 3, t);
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &j1, 0);
    spw_engine_submit(e, &j2, 0);
    spw_engine_submit(e, &j3, 0);
    is(spw_engine_queued(e), 4, "onprem_only: 4 queued before the instant");
    sched(e, 0);
    spw_job_t **rej;
    size_t nrej = spw_engine_rejected(e, &rej);
    is(nrej, 1, "onprem_only: one job rejected");
    ok(nrej == 1 && rej[0] == &j3, "onprem_only: the rejected one is j3 (never fits on-prem)");
    is(j3.state, SPW_JOB_REJECTED, "onprem_only: j3 state rejected");
    /* j3's worst case (2 x $10/h x 1 h = $20) is over the whole $10 budget. */
    is(j3.reason, SPW_REASON_OVER_LIMIT, "onprem_only: j3 reason over a limit outright");
    is_double(j3.end_s, 0, EPS, "onprem_only: j3 ended at t=0");
    is(j1.state, SPW_JOB_CLOUD, "onprem_only: j1 bursts");
    is(j2.state, SPW_JOB_QUEUED, "onprem_only: j2 waits");
    is(j2.reason, SPW_REASON_ONPREM_ONLY_BUDGET, "onprem_only: j2 reason onprem_only (budget)");
    is(spw_engine_queued(e), 1, "onprem_only: only j2 queued");

    /* j1 ends at 50 s ($10 x 50/3600 = $0.139): money is back, but j2
     * never bursts again. */
    spw_engine_finish(e, &j1, 50);
    is_double(j1.cost_usd, 10.0 * 50 / 3600, EPS, "onprem_only: j1 cost $0.139");
    is(sched(e, 50), 0, "onprem_only: nothing placed when money frees");
    is(j2.state, SPW_JOB_QUEUED, "onprem_only: j2 still waits for on-prem");
    ok(isinf(spw_engine_next_wakeup(e)), "onprem_only: no wakeup pending for it");
    nrej = spw_engine_rejected(e, &rej);
    is(nrej, 0, "onprem_only: no rejection at 50 s");
    spw_engine_finish(e, &b, 100);
    sched(e, 100);
    is(j2.state, SPW_JOB_ONPREM, "onprem_only: j2 starts on-prem when the GPU frees");
    is_double(j2.start_s, 100, EPS, "onprem_only: at 100 s");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&j3);
}

/* Team t: $10, reject.  j1 bursts, j2's burst is refused: rejected. */
static void test_reject(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t t = add_team(&f, "t", 10, SPW_EXHAUSTED_REJECT);
    f.gov.default_max_runtime_s = 3600;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j1 = {0}, j2 = {0};
    job_init(&b, "b", 0, 1e7, 1, 0, 0);
    job_init(&j1, "j1", 0, 3600, 1, 1, t);
    job_init(&j2, "j2", 0, 3600, 1, 2, t);
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &j1, 0);
    spw_engine_submit(e, &j2, 0);
    is(spw_engine_queued(e), 3, "reject: 3 queued before the instant");
    sched(e, 0);
    spw_job_t **rej;
    size_t nrej = spw_engine_rejected(e, &rej);
    ok(nrej == 1 && rej[0] == &j2, "reject: j2 rejected and returned");
    is(j2.state, SPW_JOB_REJECTED, "reject: j2 state rejected");
    is(j2.reason, SPW_REASON_REJECTED_BUDGET, "reject: reason rejected (budget)");
    ok(j2.offer == -1 && j2.pool == -1, "reject: j2 holds nothing");
    is(j1.state, SPW_JOB_CLOUD, "reject: j1 in the cloud");
    is(spw_engine_queued(e), 0, "reject: nothing queued (j2 is not)");
    sched(e, 10);
    is(spw_engine_rejected(e, &rej), 0, "reject: the list is per instant");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
}

/* ---- 3. budget period roll ------------------------------------------------------- */

/* Engine time 0 = 2026-01-31T23:00:00Z; team $10 a month.  j1 bursts in
 * January; j2, j3 are held.  The February period starts at 3600 s: the
 * held are retried then against February's budget.  j1 ends exactly at
 * 3600 s: its cost settles to January, where it was reserved. */
static void test_period_roll(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t t = add_team(&f, "t", 10, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 3600;
    f.gov.origin_s = JAN_31_2300;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j1 = {0}, j2 = {0}, j3 = {0};
    job_init(&b, "b", 0, 1e7, 1, 0, 0);
    job_init(&j1, "j1", 0, 3600, 1, 1, t);
    job_init(&j2, "j2", 0, 3600, 1, 2, t);
    job_init(&j3, "j3", 0, 3600, 1, 3, t);
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &j1, 0);
    spw_engine_submit(e, &j2, 0);
    spw_engine_submit(e, &j3, 0);
    sched(e, 0);
    ok(j1.state == SPW_JOB_CLOUD && j2.reason == SPW_REASON_HELD_BUDGET &&
       j3.reason == SPW_REASON_HELD_BUDGET, "roll: j1 bursts, j2 and j3 held");
    is_double(spw_engine_next_wakeup(e), 3600, EPS, "roll: next wakeup is Feb 1 00:00 (3600 s)");
    spw_team_ledger_t L = ledger(e, t, 0);
    is_double(L.period_start_s, JAN_2026 - JAN_31_2300, EPS, "roll: January starts at -2674800 s");
    is_double(L.period_end_s, 3600, EPS, "roll: January ends at 3600 s");
    is_double(L.reserved_usd, 10, EPS, "roll: January holds $10");
    is(sched(e, 1800), 0, "roll: nothing retried before the period ends");

    spw_engine_finish(e, &j1, 3600);
    is(sched(e, 3600), 1, "roll: one held job placed at the new period");
    is(j2.state, SPW_JOB_CLOUD, "roll: j2 placed against February's budget");
    is_double(spw_job_rare(&j2)->charge_s, 3600, EPS, "roll: j2 charged at 3600 s");
    is(j3.state, SPW_JOB_QUEUED, "roll: j3 still held (February's $10 is reserved)");
    is(spw_job_rare(&j3)->held, 2, "roll: j3 held twice");
    L = ledger(e, t, 0);
    is_double(L.settled_usd, 10, EPS, "roll: January settled $10 (j1, ended in February)");
    is_double(L.reserved_usd, 0, EPS, "roll: January reserves nothing");
    L = ledger(e, t, 3600);
    is_double(L.period_start_s, 3600, EPS, "roll: February starts at 3600 s");
    is_double(L.period_end_s, 3600 + 28 * 86400.0, EPS, "roll: February ends 28 days later");
    is_double(L.settled_usd, 0, EPS, "roll: February settled nothing (j1 is January's)");
    is_double(L.reserved_usd, 10, EPS, "roll: February reserves j2's $10");
    is_double(L.remaining_usd, 0, EPS, "roll: February has $0 left");
    is_double(spw_engine_next_wakeup(e), 3600 + 28 * 86400.0, EPS,
              "roll: next wakeup is March 1");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&j3);
}

/* ---- 4. caps ---------------------------------------------------------------------- */

/* Organisation max_cloud_gpus 8; offer g4: 4 GPUs for $8/h; a 4-GPU node
 * held by a blocker.  Four 4-GPU jobs without team: two fit the cap. */
static void test_org_cap(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 4, NULL, 1.0);
    add_offer(&f, "test", "", "g4", NULL, 4, 8.0, NAN, 0);
    f.gov.max_cloud_gpus = 8;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j[4] = {0};
    job_init(&b, "b", 0, 1e7, 4, 0, 0);
    spw_engine_submit(e, &b, 0);
    for (int i = 0; i < 4; i++) {
        job_init(&j[i], "j", 0, 3600, 4, (uint32_t)i + 1, 0);
        spw_engine_submit(e, &j[i], 0);
    }
    sched(e, 0);
    ok(j[0].state == SPW_JOB_CLOUD && j[1].state == SPW_JOB_CLOUD, "org cap: two jobs in the cloud");
    ok(j[2].state == SPW_JOB_QUEUED && j[2].reason == SPW_REASON_HELD_CAP &&
       j[3].reason == SPW_REASON_HELD_CAP, "org cap: the rest held, reason HELD_CAP");
    double rate, gpus;
    spw_govrt_org(spw_engine_gov(e), &rate, &gpus);
    is_double(gpus, 8, EPS, "org cap: 8 cloud GPUs held");
    is_double(rate, 16, EPS, "org cap: $16/h");
    ok(isinf(spw_engine_next_wakeup(e)), "org cap: no timed retry (a cap frees on finish)");
    /* j0 ends at 1000 s: 1000/3600 x $8 = $2.22 (under its reservation of
     * 8 x 86400/3600 = $192, the default max runtime). */
    spw_engine_finish(e, &j[0], 1000);
    is_double(j[0].cost_usd, 8.0 * 1000 / 3600, EPS, "org cap: j0 cost $2.22");
    is(sched(e, 1000), 1, "org cap: one held job placed when 4 GPUs free");
    is(j[2].state, SPW_JOB_CLOUD, "org cap: j2 (first in queue order) bursts");
    is(spw_job_rare(&j[3])->held, 2, "org cap: j3 held again");
    spw_govrt_org(spw_engine_gov(e), &rate, &gpus);
    is_double(gpus, 8, EPS, "org cap: 8 cloud GPUs again");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_jobs_clear(j, 4);
}

/* Team a: max_cloud_usd_per_h 20; team b: 8.  Offer g4 $8/h.  a1, a2 fit
 * ($16/h), a3 would make $24/h; b1 fits ($8/h), b2 would make $16/h.  When
 * b1 ends b2 goes; a3 stays held (team a is still at $16/h), and goes
 * when a1 ends. */
static void test_team_rate_cap(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 4, NULL, 1.0);
    add_offer(&f, "test", "", "g4", NULL, 4, 8.0, NAN, 0);
    uint32_t a = add_team(&f, "a", INFINITY, SPW_EXHAUSTED_HOLD);
    uint32_t bt = add_team(&f, "b", INFINITY, SPW_EXHAUSTED_HOLD);
    f.gov.teams[a - 1].max_cloud_usd_per_h = 20;
    f.gov.teams[bt - 1].max_cloud_usd_per_h = 8;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t blk = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b1 = {0}, b2 = {0};
    job_init(&blk, "blk", 0, 1e7, 4, 0, 0);
    job_init(&a1, "a1", 0, 3600, 4, 1, a);
    job_init(&a2, "a2", 0, 3600, 4, 2, a);
    job_init(&a3, "a3", 0, 3600, 4, 3, a);
    job_init(&b1, "b1", 0, 3600, 4, 4, bt);
    job_init(&b2, "b2", 0, 3600, 4, 5, bt);
    spw_job_t *all[] = {&blk, &a1, &a2, &a3, &b1, &b2};
    for (int i = 0; i < 6; i++)
        spw_engine_submit(e, all[i], 0);
    is(sched(e, 0), 4, "team cap: blocker, a1, a2, b1 placed");
    ok(a3.reason == SPW_REASON_HELD_CAP && b2.reason == SPW_REASON_HELD_CAP,
       "team cap: a3 and b2 held by caps");
    spw_team_ledger_t L = ledger(e, a, 0);
    is_double(L.cloud_usd_per_h, 16, EPS, "team cap: team a spends $16/h");
    is_double(L.cloud_gpus, 8, EPS, "team cap: team a holds 8 GPUs");
    ok(isinf(L.budget_usd) && isinf(L.remaining_usd), "team cap: team a has no budget");
    spw_engine_finish(e, &b1, 100);
    is(sched(e, 100), 1, "team cap: one placed when b1 ends");
    is(b2.state, SPW_JOB_CLOUD, "team cap: b2 bursts (its team has room)");
    is(a3.state, SPW_JOB_QUEUED, "team cap: a3 still held (team a at $16/h)");
    is(spw_job_rare(&a3)->held, 1, "team cap: a3 not retried: nothing of team a's changed");
    spw_engine_finish(e, &a1, 200);
    is(sched(e, 200), 1, "team cap: one placed when a1 ends");
    is(a3.state, SPW_JOB_CLOUD, "team cap: a3 bursts");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&blk);
    spw_job_clear(&a1);
    spw_job_clear(&a2);
    spw_job_clear(&a3);
    spw_job_clear(&b1);
    spw_job_clear(&b2);
}

/* A held job at the head of a HOL queue blocks the jobs behind it; once a
 * retry bursts it, they must start on-prem in the same instant.  One
 * 2-GPU node with a 1-GPU blocker; team cap 2 cloud GPUs; offer $10/h per
 * GPU; wait constant:1e6, so only cloud_first jobs burst.  c (cloud_first,
 * 1 GPU) takes 1 cloud GPU; h (cloud_first, 2 GPUs) would make 3: held,
 * and queued as the head; q (1 GPU) waits behind it with 1 GPU free.  c
 * ends at 100 s: the retry bursts h, and q should start at 100 s. */
static void test_held_head_unblocks(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 2, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t t = add_team(&f, "t", INFINITY, SPW_EXHAUSTED_HOLD);
    f.gov.teams[t - 1].max_cloud_gpus = 2;
    uint32_t cf = add_class(&f, "cf");
    add_rule(&f, "cf", cf)->placement = SPW_PLACE_CLOUD_FIRST;
    spw_engine_t *e = engine(&f, "constant:1000000", 1);
    spw_job_t b = {0}, c = {0}, h = {0}, q = {0};
    job_init(&b, "b", 0, 1e7, 1, 0, 0);
    job_init(&c, "c", 0, 3600, 1, 1, t);
    c.jclass = cf;
    job_init(&h, "h", 0, 3600, 2, 2, t);
    h.jclass = cf;
    job_init(&q, "q", 0, 3600, 1, 3, 0);
    spw_engine_submit(e, &b, 0);
    sched(e, 0);
    spw_engine_submit(e, &c, 0);
    spw_engine_submit(e, &h, 0);
    spw_engine_submit(e, &q, 0);
    sched(e, 0);
    ok(c.state == SPW_JOB_CLOUD && h.reason == SPW_REASON_HELD_CAP && q.state == SPW_JOB_QUEUED,
       "held head: c bursts, h held by the team's GPU cap, q blocked behind h");
    spw_engine_finish(e, &c, 100);
    sched(e, 100);
    is(h.state, SPW_JOB_CLOUD, "held head: h bursts when c's GPU frees");
    ok(q.state == SPW_JOB_ONPREM,
         "held head: q starts on-prem at once behind the burst head (%s)",
         spw_job_state_name(q.state));
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_job_clear(&c);
    spw_job_clear(&h);
    spw_job_clear(&q);
}

/* ---- 5. rules and residency -------------------------------------------------------- */

/* One 4-GPU node; offers (per instance):
 *   o0 aws   us-east-1    p3.2xlarge     1 GPU  $3/h   spot $1.20
 *   o1 gcp   europe-west4 a2-highgpu-1g  1 GPU  $2/h   no spot
 *   o2 azure westeurope   nc24           4 GPUs $10/h  no spot ($2.50/GPU-h)
 *   o3 aws   eu-west-1    p3.2xlarge     1 GPU  $4/h   spot $1.00
 * Rules by class: x onprem_only; y cloud_first; prov allow aws, azure;
 * cap deny gcp + max $2.75/GPU-h; spot spot required; z allow azure.
 * Residency eu: no on-prem, eu-west-1 and gcp:europe-west4; local:
 * on-prem only.  Class "eu" takes the eu residency by its name. */
typedef struct rules_fleet {
    spw_fleet_t f;
    uint32_t x, y, prov, cap, spot, z, eu_class;
    uint32_t eu, local;
} rules_fleet_t;

static void rules_fleet(rules_fleet_t *rf)
{
    spw_fleet_t *f = &rf->f;
    spw_fleet_init(f);
    add_pool(f, "p", 1, 4, NULL, 1.0);
    add_offer(f, "aws", "us-east-1", "p3.2xlarge", NULL, 1, 3.0, 1.2, 0);
    add_offer(f, "gcp", "europe-west4", "a2-highgpu-1g", NULL, 1, 2.0, NAN, 0);
    add_offer(f, "azure", "westeurope", "nc24", NULL, 4, 10.0, NAN, 0);
    add_offer(f, "aws", "eu-west-1", "p3.2xlarge", NULL, 1, 4.0, 1.0, 0);
    rf->x = add_class(f, "x");
    rf->y = add_class(f, "y");
    rf->prov = add_class(f, "prov");
    rf->cap = add_class(f, "cap");
    rf->spot = add_class(f, "spot");
    rf->z = add_class(f, "z");
    rf->eu_class = add_class(f, "eu");
    add_rule(f, "x-local", rf->x)->placement = SPW_PLACE_ONPREM_ONLY;
    add_rule(f, "y-cloud", rf->y)->placement = SPW_PLACE_CLOUD_FIRST;
    spw_rule_t *r = add_rule(f, "aws-azure", rf->prov);
    r->allow_providers = strv(2, "aws", "azure");
    r->n_allow_providers = 2;
    r = add_rule(f, "no-gcp", rf->cap);
    r->deny_providers = strv(1, "gcp");
    r->n_deny_providers = 1;
    add_rule(f, "cheap", rf->cap)->max_usd_per_gpu_h = 2.75;
    add_rule(f, "spot", rf->spot)->spot = SPW_SPOT_REQUIRED;
    r = add_rule(f, "z-azure", rf->z);
    r->allow_providers = strv(1, "azure");
    r->n_allow_providers = 1;
    rf->eu = add_residency(f, "eu", 0, strv(2, "eu-west-1", "gcp:europe-west4"), 2);
    rf->local = add_residency(f, "local", 1, NULL, 0);
}

static void test_rules(void)
{
    rules_fleet_t rf;
    rules_fleet(&rf);
    /* Pool full (blocker), wait none: whatever may burst does at t=0. */
    spw_engine_t *e = engine(&rf.f, "none", 1);
    spw_job_t blk = {0}, jx = {0}, jp = {0}, jc = {0}, js = {0}, jeu = {0}, jeu2 = {0}, jloc = {0}, jz = {0}, jplain = {0};
    job_init(&blk, "blk", 0, 100, 4, 0, 0);
    job_init(&jx, "jx", 0, 3600, 1, 1, 0);
    jx.jclass = rf.x;
    job_init(&jp, "jp", 0, 3600, 1, 2, 0);
    jp.jclass = rf.prov;
    job_init(&jc, "jc", 0, 3600, 2, 3, 0);
    jc.jclass = rf.cap;
    job_init(&js, "js", 0, 3600, 1, 4, 0);
    js.jclass = rf.spot;
    job_init(&jeu, "jeu", 0, 3600, 1, 5, 0);
    jeu.residency = rf.eu;
    job_init(&jeu2, "jeu2", 0, 3600, 1, 6, 0);
    jeu2.jclass = rf.eu_class;
    job_init(&jloc, "jloc", 0, 3600, 1, 7, 0);
    jloc.residency = rf.local;
    job_init(&jz, "jz", 0, 3600, 1, 8, 0);
    jz.jclass = rf.z;
    jz.residency = rf.eu;
    job_init(&jplain, "jplain", 0, 3600, 1, 9, 0);
    spw_job_t *all[] = {&blk, &jx, &jp, &jc, &js, &jeu, &jeu2, &jloc, &jz, &jplain};
    for (int i = 0; i < 10; i++)
        spw_engine_submit(e, all[i], 0);
    /* z allows azure only; eu allows no pool and no azure region. */
    is(jz.state, SPW_JOB_UNSCHEDULABLE, "rules: a job its rules allow nowhere is unschedulable");
    is(jz.reason, SPW_REASON_NO_ALLOWED_PLACE, "rules: reason no allowed place");
    sched(e, 0);
    is(blk.state, SPW_JOB_ONPREM, "rules: the blocker fills the pool");
    ok(jx.state == SPW_JOB_QUEUED && jx.offer == -1, "rules: onprem_only job never bursts");
    ok(jplain.state == SPW_JOB_CLOUD && jplain.offer == 1,
       "rules: without rules the cheapest offer overall (gcp $2) is taken");
    ok(jp.state == SPW_JOB_CLOUD && jp.offer == 0,
       "rules: allow_providers aws, azure takes the cheapest allowed (aws us-east-1 $3), "
       "not gcp (offer %d)", jp.offer);
    /* 2 GPUs: o0 2 x $3 = $6/h would be cheapest without gcp, but $3/GPU-h
     * is over $2.75; o3 ($4) too; o2: 1 x $10 at $2.50/GPU-h. */
    ok(jc.state == SPW_JOB_CLOUD && jc.offer == 2 && jc.instances == 1,
       "rules: max_usd_per_gpu_h excludes pricier GPU-hours: azure nc24 (offer %d, %u inst)",
       jc.offer, jc.instances);
    /* Spot required: o3 $1.00 < o0 $1.20; o1, o2 have no spot price. */
    ok(js.state == SPW_JOB_CLOUD && js.offer == 3 && js.spot == 1,
       "rules: spot required takes the cheapest spot price (aws eu-west-1, offer %d, spot %d)",
       js.offer, js.spot);
    /* Worst case at the spot price: $1 x 86400/3600 = $24. */
    is_double(spw_job_rare(&js)->reserved_usd, 24, EPS, "rules: a spot job reserves at the spot price");
    ok(jeu.state == SPW_JOB_CLOUD && jeu.offer == 1 && jeu.pool == -1,
       "rules: residency eu: never on-prem, the cheapest eu region (gcp europe-west4)");
    is(jeu.reason, SPW_REASON_NEVER_FITS_ONPREM, "rules: residency eu bursts at once");
    ok(jeu2.state == SPW_JOB_CLOUD && jeu2.offer == 1,
       "rules: class eu takes residency eu by its name (offer %d)", jeu2.offer);
    ok(jloc.state == SPW_JOB_QUEUED && jloc.offer == -1, "rules: residency local never bursts");
    is(jloc.by_residency, 1, "rules: by_residency set for the on-prem-only residency");
    is(jp.by_residency, 0, "rules: by_residency clear otherwise");
    is(sched(e, 5000), 0, "rules: still nothing for them much later");

    /* js ends at 1800 s: 0.5 h at the spot $1.00 = $0.50. */
    spw_engine_finish(e, &js, 1800);
    is_double(js.cost_usd, 0.5, EPS, "rules: a spot job costs the spot price");
    spw_engine_finish(e, &blk, 6000);
    sched(e, 6000);
    ok(jx.state == SPW_JOB_ONPREM && jloc.state == SPW_JOB_ONPREM,
       "rules: onprem_only and on-prem residency jobs run on-prem once it frees");
    spw_engine_destroy(e);

    /* Pool free, wait constant:1000: cloud_first bursts at once, a plain
     * job takes the free GPUs. */
    e = engine(&rf.f, "constant:1000", 1);
    spw_job_t jy = {0}, jq = {0};
    job_init(&jy, "jy", 0, 3600, 1, 1, 0);
    jy.jclass = rf.y;
    job_init(&jq, "jq", 0, 3600, 1, 2, 0);
    spw_engine_submit(e, &jy, 0);
    spw_engine_submit(e, &jq, 0);
    sched(e, 0);
    ok(jy.state == SPW_JOB_CLOUD && jy.offer == 1, "rules: cloud_first bursts though on-prem is free");
    is(jy.reason, SPW_REASON_CLOUD_FIRST, "rules: reason cloud_first");
    is(jq.state, SPW_JOB_ONPREM, "rules: a plain job stays on-prem");
    spw_engine_destroy(e);
    spw_fleet_clear(&rf.f);
    spw_job_clear(&blk);
    spw_job_clear(&jx);
    spw_job_clear(&jp);
    spw_job_clear(&jc);
    spw_job_clear(&js);
    spw_job_clear(&jeu);
    spw_job_clear(&jeu2);
    spw_job_clear(&jloc);
    spw_job_clear(&jz);
    spw_job_clear(&jplain);
    spw_job_clear(&jy);
    spw_job_clear(&jq);
}

/* ---- 6. data gravity --------------------------------------------------------------- */

/* Pools B (index 0) and A (index 1), one 4-GPU A100 node each, $3.60 per
 * GPU-hour; dataset ds (100 GB) at home in A; 10 Gbit/s: a copy takes
 * 100 x 8 / 10 = 80 s; egress out of on-prem is free. */
/* Pools `first` (0) and `second` (1), one 4-GPU A100 node each at usd_h
 * per GPU-hour, and dataset ds (100 GB) at home in pool `home`; returns
 * ds's value for spw_job_t.data. */
static uint32_t two_pools_fleet(spw_fleet_t *f, const char *first, const char *second,
                                double usd_h, int home)
{
    spw_fleet_init(f);
    add_pool(f, first, 1, 4, "A100", usd_h);
    add_pool(f, second, 1, 4, "A100", usd_h);
    return add_dataset(f, "ds", 100, home, NULL, NULL);
}

static void test_gravity_onprem(void)
{
    spw_fleet_t f;
    uint32_t ds = two_pools_fleet(&f, "B", "A", 3.6, 1);

    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t d1 = {0}, plain = {0};
    job_init(&d1, "d1", 0, 100, 1, 1, 0);
    d1.data = ds;
    job_init(&plain, "plain", 0, 100, 1, 2, 0);
    spw_engine_submit(e, &d1, 0);
    spw_engine_submit(e, &plain, 0);
    sched(e, 0);
    ok(d1.state == SPW_JOB_ONPREM && d1.pool == 1, "gravity: first fit picks A, home of the data");
    ok(spw_job_rare(&d1)->transfer_s == 0 && d1.start_s == 0 && spw_job_rare(&d1)->egress_gb == 0, "gravity: no copy in A");
    is(plain.pool, 0, "gravity: a job without data keeps fleet order (B)");
    spw_engine_destroy(e);

    e = engine(&f, "none", 0);
    spw_job_clear(&d1);
    job_init(&d1, "d1", 0, 100, 1, 1, 0);
    d1.data = ds;
    spw_engine_submit(e, &d1, 0);
    sched(e, 0);
    is(d1.pool, 0, "gravity 0: fleet order (B)");
    is_double(spw_job_rare(&d1)->transfer_s, 80, EPS, "gravity 0: the copy to B takes 80 s");
    is_double(d1.start_s, 80, EPS, "gravity 0: it starts at placed + 80 s");
    is_double(spw_job_rare(&d1)->egress_gb, 100, EPS, "gravity 0: 100 GB moved");
    /* On-prem is paid from placement: 180 s x 1 GPU x $3.60/h = $0.18. */
    spw_engine_finish(e, &d1, 180);
    is_double(d1.cost_usd, 0.18, EPS, "gravity 0: the GPUs are paid during the copy too");
    spw_engine_destroy(e);

    /* Gravity on, A full: B with the 80 s copy. */
    e = engine(&f, "none", 1);
    spw_job_t d0 = {0};
    job_init(&d0, "d0", 0, 1e6, 4, 1, 0);
    d0.data = ds;
    spw_job_clear(&d1);
    job_init(&d1, "d1", 10, 100, 1, 2, 0);
    d1.data = ds;
    spw_engine_submit(e, &d0, 0);
    sched(e, 0);
    spw_engine_submit(e, &d1, 10);
    sched(e, 10);
    ok(d0.pool == 1 && d1.pool == 0, "gravity: A full, so B");
    is_double(d1.start_s, 90, EPS, "gravity: placed at 10 s, starts at 90 s");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&d1);
    spw_job_clear(&plain);
    spw_job_clear(&d0);
}

/* Cloud: no pools; o0 aws r1 $10/h, o1 aws r2 $9/h, 1 GPU, boot 0;
 * dataset ds 100 GB at home in aws:r1; egress $0.09/GB, storage
 * $0.023/GB-month, cache_ttl 30 days: a copy to r2 costs 100 x 0.09 +
 * 100 x 0.023 = $9 + $2.30 = $11.30 and takes 80 s.  est 1 h:
 *   gravity: r1 $10 < r2 $9 + $11.30 -> r1;  gravity 0: r2 ($9 < $10). */
static void gravity_cloud_fleet(spw_fleet_t *f, uint32_t *ds)
{
    spw_fleet_init(f);
    add_offer(f, "aws", "r1", "g.1", NULL, 1, 10.0, NAN, 0);
    add_offer(f, "aws", "r2", "g.1", NULL, 1, 9.0, NAN, 0);
    *ds = add_dataset(f, "ds", 100, -1, "aws", "r1");
    f->gov.cache_ttl_s = 30 * 86400.0;
    f->gov.default_max_runtime_s = 3600;
}

static void test_gravity_cloud(void)
{
    spw_fleet_t f;
    uint32_t ds;
    gravity_cloud_fleet(&f, &ds);
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t c1 = {0}, c2 = {0}, c3 = {0};
    job_init(&c1, "c1", 0, 3600, 1, 1, 0);
    c1.data = ds;
    spw_engine_submit(e, &c1, 0);
    sched(e, 0);
    ok(c1.state == SPW_JOB_CLOUD && c1.offer == 0, "gravity: r1 (with the data) beats cheaper r2");
    ok(spw_job_rare(&c1)->egress_usd == 0 && spw_job_rare(&c1)->transfer_s == 0 && c1.start_s == 0, "gravity: no egress in r1");
    is_double(spw_job_rare(&c1)->reserved_usd, 10, EPS, "gravity: r1 reserves $10");
    /* A copy cached in r2 makes r2 free of data: $9 < $10. */
    spw_govrt_data_placed(spw_engine_gov(e), (int)ds - 1, -1, 1, 0);
    job_init(&c2, "c2", 0, 3600, 1, 2, 0);
    c2.data = ds;
    spw_engine_submit(e, &c2, 0);
    sched(e, 0);
    ok(c2.offer == 1 && spw_job_rare(&c2)->egress_usd == 0, "gravity: a cached copy in r2 makes r2 the choice");
    spw_engine_destroy(e);

    e = engine(&f, "none", 0);
    spw_job_clear(&c1);
    job_init(&c1, "c1", 0, 3600, 1, 1, 0);
    c1.data = ds;
    spw_engine_submit(e, &c1, 0);
    sched(e, 0);
    is(c1.offer, 1, "gravity 0: the cheaper r2");
    is_double(spw_job_rare(&c1)->egress_usd, 11.3, 1e-9, "gravity 0: egress $9 + storage $2.30 paid");
    is_double(spw_job_rare(&c1)->egress_gb, 100, EPS, "gravity 0: 100 GB moved");
    is_double(spw_job_rare(&c1)->transfer_s, 80, EPS, "gravity 0: 80 s copy");
    is_double(c1.start_s, 80, EPS, "gravity 0: starts at 80 s");
    /* Worst case: 9 x (0 + 80 + 3600)/3600 = $9.20 compute + $11.30. */
    is_double(spw_job_rare(&c1)->reserved_usd, 20.5, 1e-9, "gravity 0: reserves $9.20 + $11.30 = $20.50");
    /* c2 at 100 s: r2 holds a cached copy until 30 days: no egress. */
    spw_job_clear(&c2);
    job_init(&c2, "c2", 100, 3600, 1, 2, 0);
    c2.data = ds;
    spw_engine_submit(e, &c2, 100);
    sched(e, 100);
    ok(c2.offer == 1 && spw_job_rare(&c2)->egress_usd == 0 && spw_job_rare(&c2)->egress_gb == 0 && spw_job_rare(&c2)->transfer_s == 0,
       "cache: a second job in r2 within cache_ttl pays no egress");
    is_double(c2.start_s, 100, EPS, "cache: and starts at once");
    /* c1 ends at 1880 s: billed from the instance up (0) through the copy:
     * 9 x 1880/3600 = $4.70, + $11.30 = $16.00. */
    spw_engine_finish(e, &c1, 1880);
    is_double(c1.cost_usd, 16.0, 1e-9, "gravity 0: c1 cost $4.70 + $11.30 egress");
    /* After the cache expires (30 days from t=0), egress again. */
    job_init(&c3, "c3", 30 * 86400.0 + 100, 3600, 1, 3, 0);
    c3.data = ds;
    spw_engine_submit(e, &c3, c3.submit_s);
    sched(e, c3.submit_s);
    is_double(spw_job_rare(&c3)->egress_usd, 11.3, 1e-9, "cache: an expired copy is paid again");
    spw_engine_destroy(e);

    /* Egress counts against a budget: team $20.  Under gravity 0, r2's
     * worst case $20.50 does not fit; r1's $10 does: the dearer r1. */
    uint32_t t = add_team(&f, "t", 20, SPW_EXHAUSTED_HOLD);
    e = engine(&f, "none", 0);
    submit_data(e, &c1, "c1", 0, 3600, 1, 1, t, ds);
    sched(e, 0);
    ok(c1.state == SPW_JOB_CLOUD && c1.offer == 0 && spw_job_rare(&c1)->egress_usd == 0,
       "gravity 0 + budget: egress makes r2 too dear for the budget; r1 taken");
    spw_team_ledger_t L = ledger(e, t, 0);
    is_double(L.reserved_usd, 10, EPS, "gravity 0 + budget: $10 reserved");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&c1);
    spw_job_clear(&c2);
    spw_job_clear(&c3);
}

/* ---- 7. restore --------------------------------------------------------------------- */

/* Team $100 (March 2026), offer $10/h 1 GPU.  A cloud job restored with
 * its reservation ($10, placed at 0) holds it again; finishing it at
 * 1800 s settles $5. */
static void test_restore(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t t = add_team(&f, "t", 100, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 3600;
    f.gov.origin_s = MAR_2026;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t r = {0}, r2 = {0}, r3 = {0};
    job_init(&r, "r", 0, 3600, 1, 1, t);
    r.state = SPW_JOB_CLOUD;
    r.offer = 0;
    r.instances = 1;
    r.placed_s = r.start_s = 0;
    spw_job_rare_w(&r)->reserved_usd = 10;
    spw_job_rare_w(&r)->charge_s = 0;
    is(spw_engine_restore(e, &r), 0, "restore: a cloud job is taken back");
    spw_team_ledger_t L = ledger(e, t, 0);
    is_double(L.reserved_usd, 10, EPS, "restore: its $10 is reserved again");
    is_double(L.remaining_usd, 90, EPS, "restore: $90 left");
    is_double(L.cloud_usd_per_h, 10, EPS, "restore: $10/h held");
    is_double(L.cloud_gpus, 1, EPS, "restore: 1 cloud GPU held");
    spw_engine_finish(e, &r, 1800);
    is_double(r.cost_usd, 5, EPS, "restore: 30 min cost $5");
    L = ledger(e, t, 0);
    is_double(L.settled_usd, 5, EPS, "restore: settled $5");
    is_double(L.reserved_usd, 0, EPS, "restore: nothing reserved after finish");
    is_double(L.cloud_usd_per_h, 0, EPS, "restore: no spend rate after finish");

    /* No reservation recorded, max_runtime 1800 s: the engine recomputes
     * $10 x 1800/3600 = $5, charged at placed_s. */
    job_init(&r2, "r2", 0, 3600, 1, 2, t);
    r2.state = SPW_JOB_CLOUD;
    r2.offer = 0;
    r2.instances = 1;
    r2.placed_s = r2.start_s = 100;
    r2.max_runtime_s = 1800;
    is(spw_engine_restore(e, &r2), 0, "restore: without a recorded reservation");
    is_double(spw_job_rare(&r2)->reserved_usd, 5, EPS, "restore: recomputed as $5 (max_runtime 1800 s)");
    is_double(spw_job_rare(&r2)->charge_s, 100, EPS, "restore: charged at placed_s");
    is_double(spw_engine_max_runtime(e, &r2), 1800, EPS, "restore: its own max_runtime binds");

    /* Placed in February (a day before engine 0): February's ledger. */
    job_init(&r3, "r3", 0, 3600, 1, 3, t);
    r3.state = SPW_JOB_CLOUD;
    r3.offer = 0;
    r3.instances = 1;
    r3.placed_s = r3.start_s = -86400;
    spw_job_rare_w(&r3)->reserved_usd = 10;
    spw_job_rare_w(&r3)->charge_s = -86400;
    is(spw_engine_restore(e, &r3), 0, "restore: a job placed last month");
    L = ledger(e, t, -86400);
    is_double(L.reserved_usd, 10, EPS, "restore: February holds its $10");
    L = ledger(e, t, 0);
    is_double(L.reserved_usd, 5, EPS, "restore: March holds only r2's $5");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&r);
    spw_job_clear(&r2);
    spw_job_clear(&r3);
}

/* ---- 8. explain ---------------------------------------------------------------------- */

static const spw_candidate_t *find_cand(const spw_candidate_t *c, size_t n, spw_cand_kind_t kind,
                                        int index)
{
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == kind && c[i].index == index)
            return &c[i];
    return NULL;
}

static void test_explain(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    uint32_t ml = add_team(&f, "ml", 10, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 3600;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j1 = {0}, j2 = {0};
    job_init(&b, "b", 0, 1e7, 1, 0, 0);
    job_init(&j1, "j1", 0, 3600, 1, 1, ml);
    job_init(&j2, "j2", 0, 3600, 1, 2, ml);
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &j1, 0);
    spw_engine_submit(e, &j2, 0);
    sched(e, 0);
    spw_candidate_t c[8];
    size_t n = spw_engine_explain(e, &j2, 0, c, 8);
    is(n, 3, "explain: one pool, the wait, one offer");
    const spw_candidate_t *w = find_cand(c, n, SPW_CAND_WAIT, -1);
    ok(w && strstr(w->why, "held") && strstr(w->why, "ml"),
       "explain: the wait of a held job says held and names its team ('%s')", w ? w->why : "");
    const spw_candidate_t *o = find_cand(c, n, SPW_CAND_CLOUD, 0);
    ok(o && !o->ok && strstr(o->why, "ml"), "explain: the refused offer names the budget ('%s')",
       o ? o->why : "");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);

    rules_fleet_t rf;
    rules_fleet(&rf);
    e = engine(&rf.f, "none", 1);
    spw_job_t jp = {0};
    job_init(&jp, "jp", 0, 3600, 1, 1, 0);
    jp.jclass = rf.prov;
    spw_candidate_t c2[8];
    n = spw_engine_explain(e, &jp, 0, c2, 8);
    is(n, 6, "explain: one pool, the wait, four offers");
    o = find_cand(c2, n, SPW_CAND_CLOUD, 1);
    ok(o && !o->ok && strstr(o->why, "aws-azure"),
       "explain: the denied gcp offer names rule aws-azure ('%s')", o ? o->why : "");
    o = find_cand(c2, n, SPW_CAND_CLOUD, 0);
    ok(o && o->ok, "explain: aws us-east-1 is the one it would buy");
    /* Class x is onprem_only and 8 GPUs are more than the 4-GPU node: the
     * job can never run, and its wait must not say that it bursts (issue 24:
     * "no wait, it bursts" for an on-prem-only job). */
    spw_job_t jx = {0};
    job_init(&jx, "jx", 0, 3600, 8, 2, 0);
    jx.jclass = rf.x;
    n = spw_engine_explain(e, &jx, 0, c2, 8);
    w = find_cand(c2, n, SPW_CAND_WAIT, -1);
    ok(w && strstr(w->why, "it may not burst: it can never run") && !strstr(w->why, "bursts"),
       "explain: an on-prem-only job no pool holds may not burst and can never run ('%s')",
       w ? w->why : "");
    spw_job_clear(&jx);
    spw_engine_destroy(e);
    spw_fleet_clear(&rf.f);
    spw_job_clear(&b);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&jp);
}

/* A job in the cloud is explained as if it held no place: team ml's $15
 * budget less its own $10 reservation on c1 ($10/h, worst case an hour)
 * would leave $5, and every offer would read as refused by the budget;
 * weighed without it, c1 is the best allowed offer and c2 ($12/h) is
 * dearer.  The ledger is the same, bit for bit, after the explain. */
static void test_explain_placed(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, NULL, 1.0);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    add_offer(&f, "test", "", "c2", NULL, 1, 12.0, NAN, 0);
    uint32_t ml = add_team(&f, "ml", 15, SPW_EXHAUSTED_HOLD);
    f.gov.default_max_runtime_s = 3600;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j1 = {0};
    job_init(&b, "b", 0, 1e7, 1, 0, 0);
    job_init(&j1, "j1", 0, 3600, 1, 1, ml);
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &j1, 0);
    sched(e, 0);
    is(j1.state, SPW_JOB_CLOUD, "explain placed: j1 bursts");
    is(j1.offer, 0, "explain placed: onto c1, the cheaper offer");
    spw_team_ledger_t before = ledger(e, ml, 10), after;
    double rate0, gpus0, rate1, gpus1;
    spw_govrt_org(spw_engine_gov(e), &rate0, &gpus0);
    spw_candidate_t c[8];
    size_t n = spw_engine_explain(e, &j1, 10, c, 8);
    const spw_candidate_t *o1 = find_cand(c, n, SPW_CAND_CLOUD, 0);
    const spw_candidate_t *o2 = find_cand(c, n, SPW_CAND_CLOUD, 1);
    ok(o1 && o1->ok && strstr(o1->why, "the best allowed offer"),
       "explain placed: its own offer is the best allowed, not refused by its own "
       "reservation ('%s')", o1 ? o1->why : "");
    ok(o2 && !o2->ok && strstr(o2->why, "more than the chosen offer's") &&
           !strstr(o2->why, "budget"),
       "explain placed: the other offer is dearer, not over the budget ('%s')",
       o2 ? o2->why : "");
    after = ledger(e, ml, 10);
    spw_govrt_org(spw_engine_gov(e), &rate1, &gpus1);
    ok(memcmp(&before, &after, sizeof(before)) == 0 && rate0 == rate1 && gpus0 == gpus1,
       "explain placed: the ledger and the organisation's figures are unchanged");
    /* Its reservation still holds: a second job's $10 worst case does not
     * fit the $5 left. */
    spw_job_t j2 = {0};
    job_init(&j2, "j2", 10, 3600, 1, 2, ml);
    spw_engine_submit(e, &j2, 10);
    sched(e, 10);
    ok(j2.state == SPW_JOB_QUEUED && j2.reason == SPW_REASON_HELD_BUDGET,
       "explain placed: the reservation still counts after the explain (j2 held)");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
}

/* ---- 10. commitments ------------------------------------------------------------------ */

/* Appends commitment `name` of gpus GPUs at usd_per_gpu_h, standing for
 * offer `of`; returns its offer index. */
static int add_commit(spw_fleet_t *f, int of, const char *name, uint32_t gpus, double usd)
{
    f->offers = spw_xrealloc(f->offers, (f->noffers + 1) * sizeof(*f->offers));
    spw_offer_commitment(&f->offers[f->noffers], &f->offers[of], name, gpus, usd);
    return (int)f->noffers++;
}

/* One 4-GPU node held by a blocker.  Offers: o0 aws us-east-1 1 GPU $3/h,
 * o1 aws eu-west-1 1 GPU $4/h; commitments us (2 GPUs of o0 at $1.50) and
 * eu (1 GPU of o1 at $2).  Team ml has a $10 budget: the third job's
 * on-demand worst case ($6) fits only because the $6 its first two spend
 * on the commitment is not its spend.  Wait constant:3600: on-demand only
 * after an hour. */
static void test_commitments(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 4, NULL, 1.0);
    int o0 = add_offer(&f, "aws", "us-east-1", "p3.2xlarge", NULL, 1, 3.0, NAN, 0);
    int o1 = add_offer(&f, "aws", "eu-west-1", "p3.2xlarge", NULL, 1, 4.0, NAN, 0);
    int cus = add_commit(&f, o0, "us", 2, 1.5);
    int ceu = add_commit(&f, o1, "eu", 1, 2.0);
    uint32_t ml = add_team(&f, "ml", 10, SPW_EXHAUSTED_HOLD);
    uint32_t eu = add_residency(&f, "eu", 0, strv(1, "eu-west-1"), 1);
    uint32_t us = add_residency(&f, "us", 1, strv(1, "us-east-1"), 1);
    is_double(spw_commit_cost_usd(&f.offers[cus], 10), 30, EPS,
              "commit: idle or not, 2 GPUs x $1.50 x 10 h are paid");
    is_double(spw_commit_cost_usd(&f.offers[o0], 10), 0, EPS, "commit: an ordinary offer costs 0 idle");

    spw_engine_t *e = engine(&f, "constant:3600", 1);
    spw_job_t blk = {0}, j[3] = {0}, r[2] = {0};
    job_init(&blk, "blk", 0, 100000, 4, 0, 0);
    static const char *ids[] = {"j0", "j1", "j2"};
    for (int i = 0; i < 3; i++) {
        job_init(&j[i], ids[i], 0, 7200, 1, (uint32_t)(1 + i), ml);
        j[i].max_runtime_s = 7200;
        j[i].residency = us;    /* on-prem or us-east-1 */
    }
    spw_engine_submit(e, &blk, 0);
    for (int i = 0; i < 3; i++)
        spw_engine_submit(e, &j[i], 0);
    sched(e, 0);
    ok(j[0].state == SPW_JOB_CLOUD && j[0].offer == cus && j[1].state == SPW_JOB_CLOUD &&
           j[1].offer == cus, "commit: the first two jobs fill the us commitment at once (offers %d %d)",
       j[0].offer, j[1].offer);
    is(j[0].reason, SPW_REASON_COMMITTED, "commit: reason: committed capacity is free");
    is_double(j[0].placed_s, 0, EPS, "commit: placed before the wait of an hour runs out");
    ok(j[2].state == SPW_JOB_QUEUED, "commit: the third waits: the us commitment is full, its "
       "residency rules out the eu one, and its wait is not over (%d)", j[2].offer);
    spw_team_ledger_t L = ledger(e, ml, 0);
    is_double(L.reserved_usd, 0, EPS, "commit: committed placements reserve nothing of the budget");
    is(spw_engine_offer_held(e, (size_t)cus, 0), 2, "commit: 2 instances of the commitment held");
    spw_candidate_t cand[8];
    size_t nc = spw_engine_explain(e, &j[2], 0, cand, 8);
    const spw_candidate_t *cc = find_cand(cand, nc, SPW_CAND_CLOUD, cus);
    ok(cc && !cc->ok && strstr(cc->why, "commitment us has no room: 2 of its 2 GPUs"),
       "commit: explain says the commitment is full ('%s')", cc ? cc->why : "");
    sched(e, 3600);
    ok(j[2].state == SPW_JOB_CLOUD && j[2].offer == o0 && j[2].reason == SPW_REASON_WAIT_EXPIRED,
       "commit: once its wait is over, the third buys on demand (offer %d)", j[2].offer);
    spw_engine_finish(e, &j[0], 7200);
    is_double(j[0].cost_usd, 3.0, EPS, "commit: a job pays its share at the committed rate: 2 h x $1.50");
    L = ledger(e, ml, 7200);
    is_double(L.settled_usd, 0, EPS, "commit: the committed share is not charged to the budget");

    /* Residency: an eu job never takes the us commitment. */
    job_init(&r[0], "r0", 7200, 3600, 1, 10, 0);
    job_init(&r[1], "r1", 7200, 3600, 1, 11, 0);
    r[0].residency = r[1].residency = eu;
    nc = spw_engine_explain(e, &r[0], 7200, cand, 8);
    cc = find_cand(cand, nc, SPW_CAND_CLOUD, ceu);
    ok(cc && cc->ok && strstr(cc->why, "commitment eu: 1 x p3.2xlarge free now, paid used or idle"),
       "commit: explain names the free commitment it would take ('%s')", cc ? cc->why : "");
    cc = find_cand(cand, nc, SPW_CAND_CLOUD, cus);
    ok(cc && !cc->ok, "commit: explain: not the us one its residency rules out ('%s')",
       cc ? cc->why : "");
    spw_engine_submit(e, &r[0], 7200);
    spw_engine_submit(e, &r[1], 7200);
    sched(e, 7200);
    ok(r[0].state == SPW_JOB_CLOUD && r[0].offer == ceu, "commit: an eu job takes the eu commitment (%d)",
       r[0].offer);
    ok(r[1].state == SPW_JOB_CLOUD && r[1].offer == o1,
       "commit: the next eu job buys eu-west-1 on demand, not the free us commitment (%d)",
       r[1].offer);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&blk);
    spw_jobs_clear(j, 3);
    spw_jobs_clear(r, 2);
}

/* A commitment of slow GPUs is not taken by a job it cannot finish within
 * its max_runtime; nor one that misses the job's deadline. */
static void test_commitment_finish(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, 1, "A100", 1.0);
    int a100 = add_offer(&f, "aws", "us-east-1", "p4", "A100", 1, 4.0, NAN, 0);
    int t4 = add_offer(&f, "aws", "us-east-1", "g4dn", "T4", 1, 0.5, NAN, 0);
    int ct4 = add_commit(&f, t4, "t4", 1, 0.3);
    f.perf.reference = spw_xstrdup("A100");
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t blk = {0}, slow = {0}, late = {0}, fits = {0};
    job_init(&blk, "blk", 0, 100000, 1, 0, 0);
    job_init(&slow, "slow", 0, 3600, 1, 1, 0);
    slow.max_runtime_s = 4000;          /* a T4 needs several hours */
    job_init(&late, "late", 0, 3600, 1, 2, 0);
    late.deadline_s = 5000;
    job_init(&fits, "fits", 0, 600, 1, 3, 0);
    spw_engine_submit(e, &blk, 0);
    spw_engine_submit(e, &slow, 0);
    spw_engine_submit(e, &late, 0);
    spw_engine_submit(e, &fits, 0);
    sched(e, 0);
    ok(slow.state == SPW_JOB_CLOUD && slow.offer == a100,
       "commit: a job the T4 commitment cannot finish in its max_runtime buys an A100 (%d)", slow.offer);
    ok(late.state == SPW_JOB_CLOUD && late.offer == a100,
       "commit: a job the T4 commitment would finish after its deadline buys an A100 (%d)", late.offer);
    ok(fits.state == SPW_JOB_CLOUD && fits.offer == ct4,
       "commit: a job it can finish takes the T4 commitment (%d)", fits.offer);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&blk);
    spw_job_clear(&slow);
    spw_job_clear(&late);
    spw_job_clear(&fits);
}

/* ---- 9. no governance ----------------------------------------------------------------- */

/* No budget or cap: a 100000 s cloud job (beyond the 86400 s default
 * max runtime) is not stopped and costs 100000/3600 x $10 = $277.78. */
/* Every egress dollar a team causes counts against its egress cap, copies
 * into on-prem pools included (issue 24).  Pools A (0) and B (1), one
 * 4-GPU A100 node each; dataset ds, 100 GB, at home in A; on-prem egress
 * $0.05/GB, so a copy into B costs $5; no cache.  Team ml caps egress at
 * $10 a month (March 2026).  A blocker fills A until 1000 s.
 *   t=0:    j1, j2 (1 GPU) copy into B: $10, the cap;
 *           j3 waits: another copy ($5) would make $15;
 *   t=1000: the blocker ends: j3 starts in A, where its data is ($0);
 *           j4 (4 GPUs) fits only B: it waits for April;
 *   April 1 (2678400 s): j4 copies into B against April's cap. */
static void test_egress_cap_onprem(void)
{
    spw_fleet_t f;
    uint32_t ds = two_pools_fleet(&f, "A", "B", 1.0, 0);
    uint32_t t = add_team(&f, "ml", INFINITY, SPW_EXHAUSTED_HOLD);
    f.gov.teams[t - 1].max_egress_usd_per_month = 10;
    f.gov.egress_onprem_usd_per_gb = 0.05;
    f.gov.cache_ttl_s = 0;
    f.gov.origin_s = MAR_2026;
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t b = {0}, j1 = {0}, j2 = {0}, j3 = {0}, j4 = {0};
    job_init(&b, "b", 0, 1e7, 4, 0, 0);
    spw_engine_submit(e, &b, 0);
    sched(e, 0);
    spw_job_t *js[] = {&j1, &j2, &j3};
    for (int i = 0; i < 3; i++)
        submit_data(e, js[i], i == 0 ? "j1" : i == 1 ? "j2" : "j3", 0, 100, 1, (uint32_t)i + 1, t,
                    ds);
    sched(e, 0);
    ok(b.pool == 0 && j1.pool == 1 && j2.pool == 1, "egress: j1 and j2 copy into B");
    is_double(spw_job_rare(&j1)->egress_usd + spw_job_rare(&j2)->egress_usd, 10, EPS, "egress: $5 each");
    is(j3.state, SPW_JOB_QUEUED, "egress: j3 waits: a third copy would overshoot the $10 cap");
    spw_team_ledger_t L = ledger(e, t, 0);
    is_double(L.egress_settled_usd, 10, EPS, "egress: the copies into the pool count: $10 of $10");
    spw_candidate_t c[8];
    size_t n = spw_engine_explain(e, &j3, 0, c, 8);
    int said = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        said |= c[i].kind == SPW_CAND_ONPREM && c[i].index == 1 && !c[i].ok &&
                strstr(c[i].why, "waits for team ml's egress cap") &&
                strstr(c[i].why, "costs $5.00; $0.00 of its 2026-03 cap ($10.00) is left");
    ok(said, "egress: explain says j3 waits for the egress cap in B");
    is_double(spw_engine_next_wakeup(e), 31 * 86400.0, EPS, "egress: a pass is due on April 1");

    spw_engine_finish(e, &j1, 100);
    spw_engine_finish(e, &j2, 100);
    sched(e, 100);
    is(j3.state, SPW_JOB_QUEUED, "egress: B is free, but the copy still waits");
    spw_engine_finish(e, &b, 1000);
    submit_data(e, &j4, "j4", 1000, 100, 4, 4, t, ds);
    sched(e, 1000);
    ok(j3.state == SPW_JOB_ONPREM && j3.pool == 0 && spw_job_rare(&j3)->egress_usd == 0,
       "egress: j3 starts in A, home of its data, without a copy");
    is(j4.state, SPW_JOB_QUEUED, "egress: j4 fits only B and waits for the cap");
    double april = 31 * 86400.0;
    sched(e, april - 1);
    is(j4.state, SPW_JOB_QUEUED, "egress: still waiting a second before April");
    sched(e, april);
    ok(j4.state == SPW_JOB_ONPREM && j4.pool == 1, "egress: April 1: j4 copies into B");
    is_double(ledger(e, t, april).egress_settled_usd, 5, EPS, "egress: April holds j4's $5");
    is_double(ledger(e, t, 0).egress_settled_usd, 10, EPS, "egress: March stays at $10");
    spw_engine_destroy(e);

    /* A $4 cap: the $5 copy into B never fits, so no month is waited for
     * (a replay would otherwise step from month to month for ever). */
    f.gov.teams[t - 1].max_egress_usd_per_month = 4;
    e = engine(&f, "none", 1);
    spw_job_clear(&b);
    job_init(&b, "b", 0, 1e7, 4, 0, 0);
    spw_engine_submit(e, &b, 0);
    submit_data(e, &j1, "j1", 0, 100, 1, 1, t, ds);
    sched(e, 0);
    is(j1.state, SPW_JOB_QUEUED, "egress over the whole cap: j1 waits");
    ok(isinf(spw_engine_next_wakeup(e)), "egress over the whole cap: no wakeup at a month's end");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&b);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&j3);
    spw_job_clear(&j4);
}

static void test_no_governance(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "test", "", "c1", NULL, 1, 10.0, NAN, 0);
    ok(!spw_gov_active(&f.gov), "none: no governance configured");
    spw_engine_t *e = engine(&f, "none", 1);
    spw_job_t j = {0};
    job_init(&j, "j", 0, 100000, 1, 1, 0);
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    is(j.state, SPW_JOB_CLOUD, "none: the job bursts");
    ok(isinf(spw_engine_max_runtime(e, &j)), "none: nothing bounds its runtime");
    spw_engine_finish(e, &j, 100000);
    is_double(j.cost_usd, 100000 * 10.0 / 3600, 1e-9, "none: the cost is not clamped");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

int main(void)
{
    test_budget_hold();
    test_budget_held_first();
    test_budget_boot_delay();
    test_onprem_only();
    test_reject();
    test_period_roll();
    test_org_cap();
    test_team_rate_cap();
    test_held_head_unblocks();
    test_rules();
    test_gravity_onprem();
    test_gravity_cloud();
    test_restore();
    test_explain();
    test_explain_placed();
    test_egress_cap_onprem();
    test_no_governance();
    test_commitments();
    test_commitment_finish();
    return done_testing();
}
