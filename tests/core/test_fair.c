/* test_fair.c: fair share and quotas (core/fair.c) as properties of the
 * engine over random seeded workloads: a team under its nominal quota
 * starts waiting work within one reclaim grace; reclaims take only
 * borrowed GPUs; GPUs in use never exceed capacity; budgets are never
 * overshot; every job starts within the stated bound.  The same over two
 * pools with per-pool quota parts (quota.pools): a reclaim in a pool takes
 * only GPUs its victim's team holds there above its part, and a team under
 * its part of a pool starts work there within one grace. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "core/engine.h"
#include "core/fair.h"
#include "config/config.h"
#include "core/model.h"
#include "util/rng.h"

#define NTEAMS 3
#define GRACE_S 300.0

typedef struct world {
    spw_job_t *jobs;
    double *end;          /* end of the current attempt; INFINITY = not running */
    double *run_s;        /* true runtime */
    size_t n;
    double cond_since[NTEAMS + 1]; /* team has startable work within its quota since; NAN = not */
    double last_start[NTEAMS + 1];
    int bad_capacity, bad_reclaim, bad_budget, bad_latency, bad_pool;
    size_t reclaims;
} world_t;

/* GPUs team t's running jobs hold in pool p (t = 0: all teams). */
static double pool_used(const world_t *w, uint32_t t, int32_t p)
{
    double u = 0;
    for (size_t i = 0; i < w->n; i++)
        if (w->jobs[i].state == SPW_JOB_ONPREM && w->jobs[i].pool == p && (!t || w->jobs[i].team == t))
            u += w->jobs[i].alloc_gpus;
    return u;
}

/* With per-pool parts: whether team t has a queued job that fits in its
 * part of a pool it may run in, and that the pool's free GPUs plus those
 * other teams hold there above their parts (and borrow) could hold. */
static int startable_pool(const world_t *w, const spw_engine_t *e, const spw_fleet_t *fl,
                          uint32_t t, double now)
{
    const spw_fair_t *f = spw_engine_fair(e);
    for (size_t p = 0; p < fl->npools; p++) {
        double room = 8.0 * fl->pools[p].nnodes - pool_used(w, 0, (int32_t)p);
        /* Whole jobs of other teams that reclaim may take there. */
        for (uint32_t u = 1; u <= NTEAMS; u++) {
            const double *pq = fl->gov.teams[u - 1].quota_pool_gpus;
            spw_fair_team_t o;
            spw_fair_team(f, u, now, &o);
            double above = pool_used(w, u, (int32_t)p) - (pq ? pq[p] : 0), lent = o.borrowed_gpus;
            for (size_t i = 0; i < w->n && u != t; i++) {
                const spw_job_t *v = &w->jobs[i];
                if (v->team == u && v->state == SPW_JOB_ONPREM && v->pool == (int32_t)p &&
                    v->alloc_gpus <= above && v->alloc_gpus <= lent) {
                    room += v->alloc_gpus;
                    above -= v->alloc_gpus;
                    lent -= v->alloc_gpus;
                }
            }
        }
        for (size_t i = 0; i < w->n; i++) {
            const spw_job_t *j = &w->jobs[i];
            if (j->team == t && j->state == SPW_JOB_QUEUED && j->gpus <= room &&
                (!j->gpu_mask || j->gpu_mask == 1ull << fl->pools[p].model) &&
                spw_fair_tier_in(f, t, j->gpus, (int)p) == SPW_FAIR_NOMINAL)
                return 1;
        }
    }
    return 0;
}

/* Whether team t has a queued job that fits in its nominal quota and that
 * free plus borrowed GPUs (whole nodes here) could hold. */
static int startable(const world_t *w, const spw_engine_t *e, uint32_t t, double now)
{
    const spw_fair_t *f = spw_engine_fair(e);
    spw_fair_team_t ft, o;
    spw_fair_team(f, t, now, &ft);
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    double room = (double)(st.onprem_gpus - st.onprem_busy_gpus);
    for (uint32_t u = 1; u <= NTEAMS; u++)
        if (u != t) {
            spw_fair_team(f, u, now, &o);
            room += o.borrowed_gpus;
        }
    for (size_t i = 0; i < w->n; i++) {
        const spw_job_t *j = &w->jobs[i];
        if (j->team == t && j->state == SPW_JOB_QUEUED && ft.used_gpus + j->gpus <= ft.nominal_gpus &&
            j->gpus <= room)
            return 1;
    }
    return 0;
}

/* Two pools of models A100 and H100; a's quota lies in pa, b's in pb, c's
 * floats but for 8 GPUs in pb; a job asks for either model or any. */
static const char pool_yaml[] =
    "onprem:\n  - {name: pa, nodes: 3, gpus_per_node: 8, gpu: A100}\n"
    "  - {name: pb, nodes: 3, gpus_per_node: 8, gpu: H100}\n"
    "cloud: {price_usd_per_gpu_h: 3.75, boot_delay_s: 60}\n"
    "policy: {queue: fair, wait: constant:7200, reclaim_grace: 300, half_life: 1h}\n"
    "cohorts:\n  - {name: lab}\n"
    "teams:\n"
    "  - {name: a, quota: {gpus: 16, pools: {pa: 16}}, cohort: lab, monthly_usd: 400}\n"
    "  - {name: b, quota: {gpus: 16, pools: {pb: 8}}, cohort: lab, monthly_usd: 300}\n"
    "  - {name: c, quota: {gpus: 16, pools: {pb: 8}}}\n";

static void run_one(uint64_t seed, world_t *w, int per_pool)
{
    /* Teams a and b lend each other their quota in cohort lab; c has a
     * quota and no cohort; a and b have budgets for the cloud. */
    static const char one_yaml[] =
        "onprem:\n  - {name: p, nodes: 6, gpus_per_node: 8}\n"
        "cloud: {price_usd_per_gpu_h: 3.75, boot_delay_s: 60}\n"
        "policy: {queue: fair, wait: constant:7200, reclaim_grace: 300, half_life: 1h}\n"
        "cohorts:\n  - {name: lab}\n"
        "teams:\n"
        "  - {name: a, quota: {gpus: 16}, cohort: lab, monthly_usd: 400}\n"
        "  - {name: b, quota: {gpus: 16}, cohort: lab, monthly_usd: 300}\n"
        "  - {name: c, quota: {gpus: 16}}\n";
    spw_config_t cfg;
    spw_error_t err;
    const char *yaml = per_pool ? pool_yaml : one_yaml;
    if (spw_config_load_mem(&cfg, "fair.yaml", yaml, strlen(yaml), NULL, &err) < 0) {
        diag("%s", err.text);
        exit(1);
    }
    const spw_fleet_t *fl = &cfg.fleet;
    const spw_policy_t *pp = &cfg.policy;
    spw_rng_t r;
    spw_rng_seed(&r, seed);
    size_t n = 60;
    memset(w, 0, sizeof(*w));
    w->n = n;
    w->jobs = spw_xcalloc(n, sizeof(*w->jobs));
    w->end = spw_xmalloc(n * sizeof(double));
    w->run_s = spw_xmalloc(n * sizeof(double));
    char (*ids)[16] = spw_xcalloc(n, 16);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        spw_job_t *j = &w->jobs[i];
        snprintf(ids[i], 16, "j%zu", i);
        t += spw_rng_exp(&r, 600);
        j->id = ids[i];
        j->submit_s = floor(t);
        /* Over two pools one node each: the victims any reclaim may take
         * (least progress lost first) each free a node for it. */
        j->gpus = per_pool || spw_rng_below(&r, 3) ? 8 : 16;
        j->gpus_per_node = 8;
        w->run_s[i] = 600 + (double)spw_rng_below(&r, 7200);
        j->est_runtime_s = w->run_s[i];
        j->team = 1 + (uint32_t)spw_rng_below(&r, NTEAMS);
        j->order = (uint32_t)i;
        j->deadline_s = NAN;
        j->checkpoint_interval_s = spw_rng_below(&r, 2) ? 600 : 0;
        j->max_runtime_s = 3 * 3600;
        if (per_pool && spw_rng_below(&r, 3))
            j->gpu_mask = 1ull << spw_rng_below(&r, 2);
        w->end[i] = INFINITY;
        spw_job_reset(j);
    }
    for (int k = 0; k <= NTEAMS; k++) {
        w->cond_since[k] = NAN;
        w->last_start[k] = -1;
    }
    spw_engine_t *e = spw_engine_create(fl, pp, &err);
    size_t next = 0, left = n;
    double now = 0;
    while (left) {
        double tn = next < n ? w->jobs[next].submit_s : INFINITY;
        for (size_t i = 0; i < n; i++)
            if (w->end[i] < tn)
                tn = w->end[i];
        double wk = spw_engine_next_wakeup(e);
        if (wk < tn)
            tn = wk;
        if (!isfinite(tn))
            break;
        now = tn;
        for (size_t i = 0; i < n; i++)
            if (w->end[i] <= now) {
                w->end[i] = INFINITY;
                spw_engine_finish(e, &w->jobs[i], now);
                left--;
            }
        while (next < n && w->jobs[next].submit_s <= now)
            spw_engine_submit(e, &w->jobs[next++], now);
        size_t nrec;
        do {
            spw_job_t **placed, **rec;
            size_t np = spw_engine_schedule(e, now, &placed);
            for (size_t k = 0; k < np; k++) {
                spw_job_t *j = placed[k];
                size_t i = (size_t)(j - w->jobs);
                double dur = w->run_s[i] - spw_job_rare(j)->done_s + spw_engine_overhead_s(e, j);
                double cap = spw_engine_max_runtime(e, j);
                w->end[i] = j->start_s + (dur < cap ? dur : cap);
                w->last_start[j->team] = now;
            }
            nrec = spw_engine_reclaims(e, &rec);
            spw_job_t *v[64];
            size_t nv = nrec < 64 ? nrec : 64;
            if (nv)  /* rec may be NULL with none: no memcpy from NULL */
                memcpy(v, rec, nv * sizeof(*v));
            for (size_t k = 0; k < nv; k++) {
                spw_fair_team_t ft;
                uint32_t alloc = v[k]->alloc_gpus, team = v[k]->team;
                int32_t vp = v[k]->pool;
                w->end[v[k] - w->jobs] = INFINITY;
                spw_engine_interrupt(e, v[k], SPW_INTERRUPT_RECLAIMED, now);
                spw_fair_team(spw_engine_fair(e), team, now, &ft);
                /* The victim's team is still at or above its quota. */
                if (!per_pool && ft.used_gpus < ft.nominal_gpus) {
                    diag("seed %llu: reclaiming %s (%u GPUs) left team %u at %u < %g",
                         (unsigned long long)seed, v[k]->id, alloc, team, ft.used_gpus,
                         ft.nominal_gpus);
                    w->bad_reclaim++;
                }
                /* ... and at or above its part of the victim's pool. */
                const double *pq = fl->gov.teams[team - 1].quota_pool_gpus;
                if (pq && vp >= 0 && pool_used(w, team, vp) < pq[vp]) {
                    diag("seed %llu: reclaiming %s left team %u at %g < %g in pool %d",
                         (unsigned long long)seed, v[k]->id, team, pool_used(w, team, vp),
                         pq[vp], vp);
                    w->bad_pool++;
                }
                w->reclaims++;
            }
        } while (nrec);
        spw_engine_stats_t st;
        spw_engine_stats(e, &st);
        if (st.onprem_busy_gpus > st.onprem_gpus)
            w->bad_capacity++;
        for (uint32_t k = 1; k <= NTEAMS; k++) {
            spw_team_ledger_t lg;
            spw_govrt_ledger(spw_engine_gov(e), (int)k - 1, now, &lg);
            if (lg.settled_usd + lg.reserved_usd > lg.budget_usd + 1e-6)
                w->bad_budget++;
            int c = per_pool ? startable_pool(w, e, fl, k, now) : startable(w, e, k, now);
            if (!c) {
                w->cond_since[k] = NAN;
            } else if (isnan(w->cond_since[k])) {
                w->cond_since[k] = now;
            } else if (now > w->cond_since[k] + GRACE_S + 1e-6 &&
                       w->last_start[k] < w->cond_since[k]) {
                diag("%sseed %llu: team %u could start work within its quota since %.0f, "
                     "nothing started by %.0f", per_pool ? "pools " : "", (unsigned long long)seed, k, w->cond_since[k], now);
                w->bad_latency++;
                w->cond_since[k] = now;
            }
        }
    }
    free(ids);
    spw_engine_destroy(e);
    spw_config_free(&cfg);
}

int main(void)
{
    size_t reclaims = 0, jobs = 0, done = 0, cloud = 0;
    int capacity = 0, reclaim = 0, budget = 0, latency = 0, starve = 0, pool = 0;
    size_t preclaims = 0;
    for (uint64_t run = 1; run <= 70; run++) {
        /* 40 runs over one pool, then 30 with per-pool parts over two. */
        int per_pool = run > 40;
        uint64_t seed = per_pool ? run - 40 : run;
        world_t w;
        run_one(seed, &w, per_pool);
        pool += w.bad_pool;
        if (per_pool)
            preclaims += w.reclaims;
        capacity += w.bad_capacity;
        reclaim += w.bad_reclaim;
        budget += w.bad_budget;
        latency += w.bad_latency;
        reclaims += w.reclaims;
        /* No starvation: every job started, by the last arrival plus every
         * runtime one after another plus a grace per reclaim. */
        double bound = w.jobs[w.n - 1].submit_s + (double)w.reclaims * GRACE_S;
        for (size_t i = 0; i < w.n; i++)
            bound += w.run_s[i];
        for (size_t i = 0; i < w.n; i++) {
            const spw_job_t *j = &w.jobs[i];
            jobs++;
            if (j->state == SPW_JOB_DONE)
                done++;
            cloud += j->offer >= 0;
            if (j->state != SPW_JOB_DONE || j->placed_s > bound)
                starve++;
        }
        spw_jobs_clear(w.jobs, w.n);
        free(w.jobs);
        free(w.end);
        free(w.run_s);
    }
    ok(reclaims > preclaims, "the random workloads reclaim borrowed GPUs (%zu reclaims in 40 runs)",
       reclaims - preclaims);
    ok(preclaims > 0, "with per-pool quota parts too (%zu reclaims in 30 runs over two pools)",
       preclaims);
    is(pool, 0, "reclaims in a pool take only GPUs the victim's team holds there above its part");
    is(capacity, 0, "GPUs in use never exceed the on-prem capacity");
    is(reclaim, 0, "reclaims take only borrowed GPUs: no victim's team falls below its quota");
    ok(cloud > 0, "some jobs burst to the cloud under the budgets (%zu)", cloud);
    is(budget, 0, "no team's settled + reserved spend ever exceeds its budget");
    is(latency, 0, "a team under its quota (or its part of a pool) with startable work starts "
       "some within one grace");
    is(starve, 0, "every job ran to the end, started before the stated bound (%zu/%zu done)",
       done, jobs);
    done_testing();
}
