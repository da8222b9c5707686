/* plan.c: the capacity planner (see plan.h and docs/roi.md for the method). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/plan.h"

/* Bisection steps on a wait parameter: at least BISECT_STEPS, then more
 * (up to BISECT_MAX) until the bracket is within BISECT_REL of its top, so
 * a small optimum far below the top of the range is found to 1% (8 steps
 * from 10 leave a bracket of 0.039: compute:0.039 where 0.06 meets).  A
 * bracket whose bottom is still 0 goes on too: below 10 / 256 the answer
 * would otherwise be 0, bursting every job at once. */
#define BISECT_STEPS 8
#define BISECT_MAX 24
#define BISECT_REL 0.01
/* Points of the grid below the largest parameter that meets the target. */
#define GRID 6
/* Halvings of the step of the local search around the cheapest grid point
 * (cost is not monotone in the parameter: a later burst can cost more). */
#define REFINE 4
/* Costs within this fraction of the chosen one count as the same plateau. */
#define FLAT 0.02

/* What one simulator run gave. */
typedef struct point {
    double param;
    double stat_s;               /* the targeted wait statistic */
    double total_usd;
    spw_sim_summary_t sum;
    int full;                    /* the run went to the end (a probe that
                                    gave up did not): sum is its summary */
} point_t;

/* The full runs one search made, by parameter.  A probe that did not give
 * up is one (giving up only stops a run early), so the grid and the swing
 * take a run the bisection already made instead of making it again. */
typedef struct memo {
    point_t p[BISECT_MAX + GRID + 2 * REFINE + 16];  /* probes, grid, local search,
                                                       swing (2) and robust (3 x 3) */
    size_t n;
} memo_t;

/* One worker: its own jobs and fleet copy; the shared run, read only. */
typedef struct worker {
    struct run *run;
    spw_job_t *jobs;             /* owned copy, made once: the simulator resets
                                    the fields it writes at the start of every
                                    run and never writes the trace's own */
    int checked;                 /* a run of jobs returned: the simulator need
                                    not check the trace again */
    uint64_t runs;               /* simulator runs it made */
    spw_fleet_t fleet;           /* shallow copy of run->fleet with its own pools */
    spw_pool_spec_t *pools;      /* owned: the pools array of fleet */
    uint16_t *node_gpus;         /* owned: the swept pool's nodes */
    size_t ni;                   /* index in opts->nodes of the current fleet */
    spw_error_t err;
    int failed;
} worker_t;

typedef struct run {
    const spw_fleet_t *fleet;
    const spw_policy_t *policy;
    const spw_job_t *jobs;
    const double *runtime_s;
    size_t njobs;
    const spw_plan_opts_t *opts;
    spw_plan_result_t *out;
    double span_s;               /* last submit - first submit */
    /* Per node count: the run with no wait at all.  Wait none and a
     * parameter of 0 under constant, runtime and compute all give every
     * job a wait of 0 (runtime and compute multiply finite estimates),
     * and nothing else in the engine reads the wait policy, so it is one
     * simulation: made once, by whichever configuration needs it first. */
    int zero_ok;                 /* every estimate is finite: sharing is exact */
    point_t *zero;               /* per node count, under mu */
    uint8_t *zero_have;          /* per node count: zero[] is filled */
    size_t *order;               /* configurations in the order they are handed
                                    out: searched ones (many runs each) first,
                                    so no thread is left with one at the end */
    size_t total, next, done;
    int failed;
    spw_error_t err;
    pthread_mutex_t mu;
} run_t;

static double stat_of(const spw_plan_opts_t *o, const spw_sim_summary_t *s)
{
    return o->stat == SPW_PLAN_P90 ? s->wait_p90_s : s->wait_mean_s;
}

/* x as spw_wait_format prints it (%g): every run is made at the parameter
 * the output shows, so `spillway sim --wait` of a printed setting replays
 * exactly that run. */
static double snap(double x)
{
    char b[32];
    snprintf(b, sizeof(b), "%g", x);
    return strtod(b, NULL);
}

/* One simulator run of the worker's fleet under wait w.  With probe set
 * only whether it meets the target matters: the run may stop as soon as it
 * cannot, and then p holds only param and an infinite stat_s. */
static int sim_at(worker_t *w, spw_wait_t wait, point_t *p, int probe)
{
    const spw_plan_opts_t *o = w->run->opts;
    spw_policy_t pol = *w->run->policy;
    wait.param = snap(wait.param);
    pol.wait = wait;
    spw_sim_opts_t so = {
        .give_up_wait_s = probe ? o->target_s : 0,
        .give_up_p90 = o->stat == SPW_PLAN_P90,
        .checked = w->checked,
    };
    int rc = spw_sim_run(&w->fleet, &pol, w->jobs, w->run->runtime_s, w->run->njobs, &so,
                         &p->sum, &w->err);
    if (rc < 0)
        return -1;
    w->checked = 1;
    w->runs++;
    p->param = wait.param;
    p->full = rc == 0;
    if (rc == 1) {
        p->stat_s = p->total_usd = INFINITY;
        return 0;
    }
    p->stat_s = stat_of(w->run->opts, &p->sum);
    p->total_usd = p->sum.cloud_cost_usd + p->sum.owned_cost_usd + p->sum.commit_cost_usd +
                   p->sum.egress_usd;
    return 0;
}

/* sim_at(w, wait, p, 0) for a wait that is 0 for every job: from the
 * run's shared result for the worker's node count when there is one. */
static int sim_zero(worker_t *w, spw_wait_t wait, point_t *p)
{
    run_t *r = w->run;
    if (!r->zero_ok)
        return sim_at(w, wait, p, 0);
    pthread_mutex_lock(&r->mu);
    int have = r->zero_have[w->ni];
    if (have)
        *p = r->zero[w->ni];
    pthread_mutex_unlock(&r->mu);
    if (!have) {
        if (sim_at(w, wait, p, 0) < 0)
            return -1;
        pthread_mutex_lock(&r->mu);
        if (!r->zero_have[w->ni]) {
            r->zero[w->ni] = *p;
            r->zero_have[w->ni] = 1;
        }
        pthread_mutex_unlock(&r->mu);
    }
    p->param = wait.param;
    return 0;
}

static void memo_put(memo_t *m, const point_t *p)
{
    if (p->full && m->n < sizeof(m->p) / sizeof(m->p[0]))
        m->p[m->n++] = *p;
}

/* sim_at(w, x, p, 0) for a kind that takes a parameter: the shared run of
 * no wait when the parameter is 0 (it gives every job a wait of 0, as
 * sim_zero says), else a run of this search at the same parameter, else a
 * new run (remembered in m). */
static int sim_full(worker_t *w, spw_wait_t x, point_t *p, memo_t *m)
{
    x.param = snap(x.param);
    if (x.param == 0)
        return sim_zero(w, x, p);
    for (size_t i = 0; i < m->n; i++)
        if (m->p[i].param == x.param) {
            *p = m->p[i];
            return 0;
        }
    if (sim_at(w, x, p, 0) < 0)
        return -1;
    memo_put(m, p);
    return 0;
}

/* The default upper end of the search for a kind whose parameter is 0. */
static double default_hi(spw_wait_kind_t k)
{
    return k == SPW_WAIT_CONSTANT ? 86400.0 : 10.0;
}

static int has_param(spw_wait_kind_t k)
{
    return k == SPW_WAIT_CONSTANT || k == SPW_WAIT_RUNTIME || k == SPW_WAIT_COMPUTE ||
           k == SPW_WAIT_PREDICT;
}

/* Over the horizon: owned capacity at its cost per hour of the run, and
 * the cloud and egress the trace's demand pays per second of arrivals (a
 * long tail of slow jobs stretches the makespan, not the demand). */
static double tco_of(const spw_plan_opts_t *o, const point_t *p, double w_span_s)
{
    double span = w_span_s > 0 ? w_span_s : p->sum.makespan_s;
    return (p->sum.makespan_s > 0 ? p->sum.owned_cost_usd / p->sum.makespan_s : 0) *
               o->horizon_s +
           (span > 0 ? (p->sum.cloud_cost_usd + p->sum.egress_usd) / span : 0) * o->horizon_s +
           (p->sum.makespan_s > 0 ? p->sum.commit_cost_usd / p->sum.makespan_s : 0) *
               o->horizon_s;
}

static void fill(spw_plan_result_t *r, const spw_plan_opts_t *o, const point_t *p,
                 spw_wait_kind_t kind, double w_span_s)
{
    r->wait.kind = kind;
    r->wait.param = p->param;
    r->meets = p->stat_s <= o->target_s;
    r->wait_s = p->stat_s;
    r->wait_mean_s = p->sum.wait_mean_s;
    r->wait_p90_s = p->sum.wait_p90_s;
    r->cloud_usd = p->sum.cloud_cost_usd;
    r->owned_usd = p->sum.owned_cost_usd;
    r->owned_idle_usd = p->sum.owned_idle_usd;
    r->egress_usd = p->sum.egress_usd;
    r->commit_usd = p->sum.commit_cost_usd;
    r->commit_idle_usd = p->sum.commit_idle_usd;
    r->total_usd = p->total_usd;
    r->makespan_s = p->sum.makespan_s;
    r->tco_usd = tco_of(o, p, w_span_s);
    /* A setting without a parameter to move is its own robust choice. */
    r->robust_param = p->param;
    r->robust_meets = r->meets;
    r->robust_wait_s = r->wait_s;
    r->robust_tco_usd = r->tco_usd;
    r->edge_breaks = 0;
    r->swing = 0;
    r->cost_per_useful_gpu_h = p->sum.cost_per_useful_gpu_h;
    r->onprem_gpus = p->sum.onprem_gpus;
}

/* The robust figures of r for parameter c of kind: runs at c and at c
 * moved f either way; it holds when all three meet the target, and its
 * price is the dearest TCO of the three. */
static int price3(worker_t *w, spw_wait_kind_t kind, double c, double f, memo_t *m,
                  spw_plan_result_t *r)
{
    const spw_plan_opts_t *o = w->run->opts;
    double xs[3] = {c * (1 - f), c, c * (1 + f)};
    r->robust_param = c;
    r->robust_meets = 1;
    r->robust_tco_usd = 0;
    for (int k = 0; k < 3; k++) {
        spw_wait_t x = {kind, xs[k]};
        point_t p;
        if (sim_full(w, x, &p, m) < 0)
            return -1;
        r->sims++;
        double t = tco_of(o, &p, w->run->span_s);
        if (p.stat_s > o->target_s)
            r->robust_meets = 0;
        if (t > r->robust_tco_usd)
            r->robust_tco_usd = t;
        if (k == 1)
            r->robust_wait_s = p.stat_s;
    }
    return 0;
}

/* Searches wait kind `kind` up to hi for the target (the largest parameter
 * that meets it, best), then chooses the knife edge (the cheapest run that
 * meets it, refined by a local search) and prices a robust setting, one
 * that still meets it when the parameter moves swing_frac either way. */
static int plan_one(worker_t *w, spw_wait_t wait, spw_plan_result_t *r)
{
    const spw_plan_opts_t *o = w->run->opts;
    point_t p;
    r->sims = 0;
    if (!has_param(wait.kind)) {
        if ((wait.kind == SPW_WAIT_NONE ? sim_zero(w, wait, &p) : sim_at(w, wait, &p, 0)) < 0)
            return -1;
        r->sims = 1;
        fill(r, o, &p, wait.kind, w->run->span_s);
        r->param_lo = r->param_hi = 0;
        r->swing = 0;
        return 0;
    }
    double hi = wait.param > 0 ? wait.param : default_hi(wait.kind), lo = 0;
    spw_wait_t x = {wait.kind, hi};
    /* A probe: when it misses the target its summary is never used. */
    memo_t *m = spw_xmalloc(sizeof(*m));
    m->n = 0;
    if (sim_at(w, x, &p, 1) < 0) {
        free(m);
        return -1;
    }
    memo_put(m, &p);
    r->sims++;
    double best = hi;
    /* Runs already made that the grid can reuse: at 0 and at best. */
    point_t *at0 = spw_xmalloc(sizeof(point_t)), *atb = spw_xmalloc(sizeof(point_t));
    int have0 = 0, haveb = 1;
    *atb = p;
    if (p.stat_s > o->target_s) {
        haveb = 0;
        /* Bisect for the largest parameter that meets the target (the wait
         * grows with the parameter). */
        x.param = 0;
        if (sim_zero(w, x, at0) < 0)
            goto fail;
        r->sims++;
        have0 = 1;
        if (at0->stat_s > o->target_s) {
            fill(r, o, at0, wait.kind, w->run->span_s);   /* not even bursting at once meets it */
            r->param_lo = r->param_hi = 0;
            r->swing = 0;
            free(at0);
            free(atb);
            free(m);
            return 0;
        }
        *atb = *at0;
        haveb = 1;
        for (int i = 0; i < BISECT_MAX && (i < BISECT_STEPS || hi - lo > BISECT_REL * hi);
             i++) {
            x.param = (lo + hi) / 2;
            if (sim_at(w, x, &p, 1) < 0)
                goto fail;
            memo_put(m, &p);
            r->sims++;
            if (p.stat_s <= o->target_s) {
                lo = x.param;
                *atb = p;
            } else {
                hi = x.param;
            }
        }
        best = lo;
    }
    /* The robustness grid: GRID + 1 points from 0 to best. */
    point_t *g = spw_xmalloc((GRID + 1) * sizeof(point_t));
    for (int k = 0; k <= GRID; k++) {
        x.param = best * k / GRID;
        if (k == 0 && have0) {
            g[k] = *at0;
            continue;
        }
        if (k == GRID && haveb && atb->param == x.param) {
            g[k] = *atb;
            continue;
        }
        if (sim_full(w, x, &g[k], m) < 0) {
            free(g);
            goto fail;
        }
        r->sims++;
    }
    free(at0);
    free(atb);
    /* The knife edge: the cheapest run that meets the target, of the grid
     * and of every full run the search made (the bisection's best among
     * them). */
    const point_t *kp = NULL;
    for (int k = 0; k <= GRID; k++)
        if (g[k].stat_s <= o->target_s && (!kp || g[k].total_usd < kp->total_usd))
            kp = &g[k];
    for (size_t i = 0; i < m->n; i++)
        if (m->p[i].stat_s <= o->target_s && (!kp || m->p[i].total_usd < kp->total_usd))
            kp = &m->p[i];
    point_t knife = kp ? *kp : g[0];
    /* A local search: try half a step either side of the cheapest, keep a
     * cheaper one that meets the target, halve the step. */
    double h = best / GRID;
    for (int it = 0; kp && h > 0 && it < REFINE; it++) {
        h /= 2;
        double c = knife.param;
        for (int s = -1; s <= 1; s += 2) {
            x.param = c + s * h;
            if (x.param <= 0)
                continue;
            if (sim_full(w, x, &p, m) < 0) {
                free(g);
                goto fail_m;
            }
            r->sims++;
            if (p.stat_s <= o->target_s && p.total_usd < knife.total_usd)
                knife = p;
        }
    }
    fill(r, o, &knife, wait.kind, w->run->span_s);
    /* The flat region: grid points below the choice that meet the target
     * within FLAT of its cost, without a break. */
    int a = GRID;
    while (a > 0 && g[a].param > knife.param)
        a--;
    while (a > 0 && g[a - 1].stat_s <= o->target_s &&
           fabs(g[a - 1].total_usd - knife.total_usd) <= FLAT * knife.total_usd)
        a--;
    r->param_lo = g[a].param < knife.param ? g[a].param : knife.param;
    r->param_hi = knife.param;
    free(g);
    double f = o->swing_frac > 0 ? o->swing_frac : 0.10;
    if (knife.param > 0) {
        /* The swing: real runs with the choice moved f either way. */
        for (int s = -1; s <= 1; s += 2) {
            x.param = knife.param * (1 + s * f);
            if (sim_full(w, x, &p, m) < 0)
                goto fail_m;
            r->sims++;
            double d = knife.total_usd > 0 ? fabs(p.total_usd - knife.total_usd) / knife.total_usd
                                           : 0;
            if (d > r->swing)
                r->swing = d;
            if (s > 0)
                r->edge_breaks = p.stat_s > o->target_s;
        }
    }
    /* The robust setting: the knife edge when it meets the target moved f
     * either way (a parameter of 0 always does), else knife / (1 + f)
     * (moved up it is the knife edge), else best / (1 + f); the first that
     * holds, priced at the dearest of its three runs. */
    double cand[3] = {knife.param, knife.param / (1 + f), best / (1 + f)};
    for (int k = 0; knife.param > 0 && k < 3; k++) {
        if (price3(w, wait.kind, cand[k], f, m, r) < 0)
            goto fail_m;
        if (r->robust_meets)
            break;
    }
    free(m);
    return 0;
fail_m:
    free(m);
    return -1;
fail:
    free(at0);
    free(atb);
    free(m);
    return -1;
}

/* Gives worker w the fleet of configuration nodes n. */
static void set_nodes(worker_t *w, uint32_t n)
{
    const spw_pool_spec_t *src = &w->run->fleet->pools[w->run->opts->pool];
    spw_pool_spec_t *p = &w->pools[w->run->opts->pool];
    uint16_t per = src->nnodes ? src->node_gpus[0] : 1;
    free(w->node_gpus);
    w->node_gpus = spw_xmalloc((n ? n : 1) * sizeof(uint16_t));
    for (uint32_t k = 0; k < n; k++)
        w->node_gpus[k] = k < src->nnodes ? src->node_gpus[k] : per;
    p->nnodes = n;
    p->node_gpus = w->node_gpus;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    run_t *r = w->run;
    const spw_plan_opts_t *o = r->opts;
    /* The worker's copy of the trace, made here so each thread touches its
     * own first; every run after resets only what the simulator writes. */
    spw_jobs_copy(w->jobs, r->jobs, r->njobs);
    for (;;) {
        pthread_mutex_lock(&r->mu);
        size_t k = r->failed ? r->total : r->next++;
        pthread_mutex_unlock(&r->mu);
        if (k >= r->total)
            break;
        size_t i = r->order[k];
        size_t ni = i / o->nwaits, wi = i % o->nwaits;
        set_nodes(w, o->nodes[ni]);
        w->ni = ni;
        spw_plan_result_t *res = &r->out[i];
        memset(res, 0, sizeof(*res));
        res->nodes = o->nodes[ni];
        int rc = plan_one(w, o->waits[wi], res);
        pthread_mutex_lock(&r->mu);
        if (rc < 0 && !r->failed) {
            r->failed = 1;
            r->err = w->err;
        }
        r->done++;
        if (o->on_progress && !r->failed)
            o->on_progress(o->ctx, r->done, r->total);
        pthread_mutex_unlock(&r->mu);
    }
    return NULL;
}

int spw_plan_run(const spw_fleet_t *fleet, const spw_policy_t *policy, const spw_job_t *jobs,
                 const double *runtime_s, size_t njobs, const spw_plan_opts_t *opts,
                 spw_plan_result_t *out, spw_error_t *err)
{
    if (opts->pool >= fleet->npools)
        return spw_errorf(err, "the planner needs an on-prem pool to size (the config has %zu)",
                          fleet->npools);
    if (!opts->nnodes || !opts->nwaits)
        return spw_errorf(err, "nothing to plan: give node counts and wait policies");
    if (opts->nparts > 1 && opts->part >= opts->nparts)
        return spw_errorf(err, "part %zu of %zu does not exist (parts count from 0)", opts->part,
                          opts->nparts);
    run_t r = {
        .fleet = fleet, .policy = policy, .jobs = jobs, .runtime_s = runtime_s,
        .njobs = njobs, .opts = opts, .out = out, .total = opts->nnodes * opts->nwaits,
        .span_s = njobs ? jobs[njobs - 1].submit_s - jobs[0].submit_s : 0,
    };
    r.zero_ok = 1;
    for (size_t i = 0; i < njobs; i++)
        if (!isfinite(jobs[i].est_runtime_s))
            r.zero_ok = 0;
    r.zero = spw_xcalloc(opts->nnodes, sizeof(point_t));
    r.zero_have = spw_xcalloc(opts->nnodes, 1);
    r.order = spw_xmalloc(r.total * sizeof(size_t));
    spw_plan_order(opts, r.order);
    if (opts->nparts > 1) {
        /* This part's configurations only, in the same order. */
        size_t no = 0;
        for (size_t k = opts->part; k < r.total; k += opts->nparts)
            r.order[no++] = r.order[k];
        r.total = no;
    }
    pthread_mutex_init(&r.mu, NULL);
    int nt = opts->threads > 0 ? opts->threads : 1;
    if ((size_t)nt > r.total)
        nt = (int)r.total;
    worker_t *ws = spw_xcalloc((size_t)nt, sizeof(worker_t));
    pthread_t *th = spw_xcalloc((size_t)nt, sizeof(pthread_t));
    for (int t = 0; t < nt; t++) {
        worker_t *w = &ws[t];
        w->run = &r;
        /* Zeroed, so a worker that never starts has no side records to free. */
        w->jobs = spw_xcalloc(njobs ? njobs : 1, sizeof(spw_job_t));
        w->fleet = *fleet;
        w->pools = spw_xmalloc(fleet->npools * sizeof(spw_pool_spec_t));
        memcpy(w->pools, fleet->pools, fleet->npools * sizeof(spw_pool_spec_t));
        w->fleet.pools = w->pools;
    }
    int started = 0;
    for (int t = 1; t < nt; t++)
        if (pthread_create(&th[t], NULL, work, &ws[t]) == 0)
            started = t;
        else
            break;
    work(&ws[0]);
    for (int t = 1; t <= started; t++)
        pthread_join(th[t], NULL);
    if (opts->runs)
        *opts->runs = 0;
    for (int t = 0; t < nt; t++) {
        if (opts->runs)
            *opts->runs += ws[t].runs;
        spw_jobs_clear(ws[t].jobs, njobs);
        free(ws[t].jobs);
        free(ws[t].pools);
        free(ws[t].node_gpus);
    }
    free(ws);
    free(th);
    free(r.zero);
    free(r.zero_have);
    pthread_mutex_destroy(&r.mu);
    if (r.failed) {
        free(r.order);
        if (err)
            *err = r.err;
        return -1;
    }
    /* What is already spent: the capital of the owned nodes a
     * configuration keeps, over the horizon (none with capex): the
     * purchase spread over its years of 8,766 h, as core/model.c prices it,
     * or the whole simple-form cost_usd_per_gpu_h. */
    const spw_pool_spec_t *sp = &fleet->pools[opts->pool];
    double cap_h = sp->has_owned ? (sp->owned.years > 0 ? sp->owned.price_usd_per_gpu /
                                                              (sp->owned.years * 8766.0)
                                                        : 0)
                                 : sp->cost_usd_per_gpu_h;
    for (size_t k = 0; k < r.total; k++) {
        size_t i = r.order[k];
        uint32_t kept = opts->capex ? 0
                        : out[i].nodes < opts->owned_nodes ? out[i].nodes : opts->owned_nodes;
        double gpus = 0;
        for (uint32_t g = 0; g < kept; g++)
            gpus += g < sp->nnodes ? sp->node_gpus[g] : (sp->nnodes ? sp->node_gpus[0] : 1);
        out[i].sunk_usd = gpus * cap_h * opts->horizon_s / 3600.0;
        out[i].decide_usd = out[i].tco_usd - out[i].sunk_usd;
    }
    free(r.order);
    if (opts->nparts <= 1)
        spw_plan_frontier(out, opts->nnodes * opts->nwaits);
    return 0;
}

void spw_plan_order(const spw_plan_opts_t *opts, size_t *order)
{
    size_t total = opts->nnodes * opts->nwaits, no = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < total; i++) {
            spw_wait_kind_t k = opts->waits[i % opts->nwaits].kind;
            int in = k == SPW_WAIT_NONE ? 0 : has_param(k) ? 1 : 2;
            if (in == pass)
                order[no++] = i;
        }
}

void spw_plan_frontier(spw_plan_result_t *out, size_t n)
{
    /* No other result cheaper (from now on) and no slower. */
    for (size_t i = 0; i < n; i++) {
        out[i].frontier = 1;
        for (size_t k = 0; k < n && out[i].frontier; k++)
            if (k != i && out[k].decide_usd <= out[i].decide_usd && out[k].wait_s <= out[i].wait_s &&
                (out[k].decide_usd < out[i].decide_usd || out[k].wait_s < out[i].wait_s))
                out[i].frontier = 0;
    }
}

long spw_plan_best(const spw_plan_result_t *res, size_t n)
{
    long best = -1;
    for (size_t i = 0; i < n; i++)
        if (res[i].meets && (best < 0 || res[i].decide_usd < res[best].decide_usd))
            best = (long)i;
    return best;
}
