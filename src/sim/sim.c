/* sim.c: the discrete-event loop that replays a trace through the engine.
 *
 * Arrivals come straight from the sorted job array; completions sit in a
 * binary heap ordered by (time, sequence); the engine's wait expiries are the
 * third source of instants.  At one instant: completions, then arrivals,
 * then one call to spw_engine_schedule (see engine.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* Idle time after which held jobs are given up (see spw_sim_run). */
#define SPW_SIM_GIVE_UP_S (40 * 86400.0)

typedef struct event {
    double t;        /* when it happens */
    uint64_t seq;    /* insertion sequence: equal times stay in order */
    spw_job_t *job;
    int boot;        /* 1: a cloud job's boot ends and billing starts; 0: the job ends */
} event_t;

typedef struct evheap {
    event_t *v;
    size_t n, cap;
    uint64_t seq;
} evheap_t;

static inline int ev_before(const event_t *a, const event_t *b)
{
    return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static void ev_push(evheap_t *h, double t, spw_job_t *j, int boot)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 1024;
        h->v = spw_xrealloc(h->v, h->cap * sizeof(event_t));
    }
    event_t x = {.t = t, .seq = h->seq++, .job = j, .boot = boot};
    size_t i = h->n++;
    while (i && ev_before(&x, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = x;
}

static void ev_pop(evheap_t *h)
{
    event_t x = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = l;
        if (l >= h->n)
            break;
        if (r < h->n && ev_before(&h->v[r], &h->v[l]))
            m = r;
        if (!ev_before(&h->v[m], &x))
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n)
        h->v[i] = x;
}

static void swap_d(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Hoare-style quickselect: puts the k-th smallest at v[k]. */
static void select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < v[lo])
            swap_d(&v[mid], &v[lo]);
        if (v[hi] < v[lo])
            swap_d(&v[hi], &v[lo]);
        if (v[hi] < v[mid])
            swap_d(&v[hi], &v[mid]);
        double pivot = v[mid];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                swap_d(&v[i], &v[j]);
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

double spw_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    /* Nearest rank: the smallest value with at least q*n values at or below. */
    double r = ceil(q * (double)n);
    size_t k = r < 1 ? 0 : (size_t)r - 1;
    if (k >= n)
        k = n - 1;
    select_kth(v, n, k);
    return v[k];
}

typedef struct sampler {
    const spw_sim_opts_t *o;
    double first_s;          /* time of sample 0 */
    uint64_t k;              /* index of the next sample */
    double next_s;           /* first_s + k * step: recomputed, never accumulated,
                                so large times cannot stall it */
    uint64_t cloud_gpus;     /* cloud GPUs held now, booting or running */
    double cloud_usd_per_h;  /* cloud spend rate now (running instances) */
} sampler_t;

/* Spend rate of a cloud job's instances. */
static double job_usd_per_h(const spw_fleet_t *f, const spw_job_t *j)
{
    const spw_offer_t *o = &f->offers[j->offer];
    return j->instances * (j->spot ? o->spot_usd_per_h : o->ondemand_usd_per_h);
}

/* Emits every sample due before instant t, with the state as it is now
 * (that is, after the previous instant). */
static void sample_until(sampler_t *s, spw_engine_t *e, double t)
{
    if (!s->o || s->o->step_s <= 0 || !s->o->on_sample)
        return;
    if (s->next_s >= t)
        return;
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    spw_sim_sample_t smp = {
        .queued = st.queued,
        .onprem_busy_gpus = st.onprem_busy_gpus,
        .cloud_gpus = s->cloud_gpus,
        .cloud_usd_per_h = s->cloud_usd_per_h,
    };
    while (s->next_s < t) {
        smp.t_s = s->next_s;
        s->o->on_sample(s->o->ctx, &smp);
        double next = s->first_s + (double)++s->k * s->o->step_s;
        if (next <= s->next_s)   /* the step is below the resolution of these times */
            next = nextafter(s->next_s, INFINITY);
        s->next_s = next;
    }
}

/* Spend charged to one (team, budget period). */
typedef struct period_sum {
    uint32_t team;           /* config team + 1; 0 = empty slot */
    double start;            /* period start, unix seconds */
    double usd;
} period_sum_t;

/* Fills budget_use and worst_period_usd of every team: a cloud job's
 * compute and egress are charged to the budget period of its placement, as
 * the engine's ledger does (egress into on-prem is outside budgets). */
static void budget_use(const spw_fleet_t *fleet, const spw_job_t *jobs, size_t n,
                       spw_sim_summary_t *out)
{
    const spw_gov_t *g = &fleet->gov;
    size_t cap = 64, used = 0;
    period_sum_t *h = spw_xcalloc(cap, sizeof(*h));
    /* The period of each team's last charge: jobs come in submit order, so
     * most charges fall in it and need no calendar arithmetic. */
    double cur_start[SPW_GOV_MAX_TEAMS], cur_end[SPW_GOV_MAX_TEAMS];
    for (size_t k = 0; k < g->nteams && k < SPW_GOV_MAX_TEAMS; k++)
        cur_start[k] = cur_end[k] = NAN;
    for (size_t i = 0; i < n; i++) {
        const spw_job_t *j = &jobs[i];
        if (j->state != SPW_JOB_DONE || !j->team || j->team > g->nteams)
            continue;
        double usd = j->offer >= 0 ? j->cost_usd : 0;
        if (!(usd > 0))
            continue;
        size_t k = j->team - 1;
        double t = g->origin_s + j->placed_s;
        if (!(t >= cur_start[k] && t < cur_end[k])) {
            cur_start[k] = spw_period_start(g->teams[k].period, t);
            cur_end[k] = spw_period_end(g->teams[k].period, t);
        }
        if (used * 2 >= cap) {
            size_t ncap = cap * 2;
            period_sum_t *nh = spw_xcalloc(ncap, sizeof(*nh));
            for (size_t s = 0; s < cap; s++) {
                if (!h[s].team)
                    continue;
                size_t x = (size_t)((h[s].team * 0x9E3779B97F4A7C15ULL) ^
                                    (uint64_t)(int64_t)h[s].start) & (ncap - 1);
                while (nh[x].team)
                    x = (x + 1) & (ncap - 1);
                nh[x] = h[s];
            }
            free(h);
            h = nh;
            cap = ncap;
        }
        size_t x = (size_t)((j->team * 0x9E3779B97F4A7C15ULL) ^
                            (uint64_t)(int64_t)cur_start[k]) & (cap - 1);
        while (h[x].team && !(h[x].team == j->team && h[x].start == cur_start[k]))
            x = (x + 1) & (cap - 1);
        if (!h[x].team) {
            h[x].team = j->team;
            h[x].start = cur_start[k];
            used++;
        }
        h[x].usd += usd;
    }
    for (size_t s = 0; s < cap; s++) {
        if (!h[s].team)
            continue;
        spw_sim_team_t *tm = &out->team[h[s].team];
        double budget = g->teams[h[s].team - 1].budget_usd;
        if (h[s].usd > tm->worst_period_usd)
            tm->worst_period_usd = h[s].usd;
        if (isfinite(budget) && budget > 0 && h[s].usd / budget > tm->budget_use)
            tm->budget_use = h[s].usd / budget;
    }
    free(h);
}

int spw_sim_run(const spw_fleet_t *fleet, const spw_policy_t *policy,
                spw_job_t *jobs, const double *runtime_s, size_t n,
                const spw_sim_opts_t *opts, spw_sim_summary_t *out, spw_error_t *err)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        if (i && jobs[i].submit_s < jobs[i - 1].submit_s)
            return spw_errorf(err, "jobs are not sorted by submit time (job %s)", jobs[i].id);
        /* Ends must be finite instants, or a job could outlive the loop unseen. */
        if (!isfinite(jobs[i].submit_s + runtime_s[i]) || runtime_s[i] < 0
            || !(jobs[i].est_runtime_s >= 0))
            return spw_errorf(err, "job %s: submit time, runtime and estimate must be finite "
                              "and >= 0", jobs[i].id);
    }
    spw_engine_t *e = spw_engine_create(fleet, policy, err);
    if (!e)
        return -1;
    for (size_t i = 0; i < n; i++)
        spw_job_reset(&jobs[i]);

    evheap_t h = {0};
    sampler_t smp = {.o = opts, .first_s = n ? jobs[0].submit_s : 0};
    smp.next_s = smp.first_s;
    size_t next = 0;
    double first_submit = n ? jobs[0].submit_s : 0, last_end = first_submit;
    size_t progress_every = 1 << 16;
    double progress_s = first_submit;   /* last instant where something happened */
    spw_govrt_t *gov = spw_engine_gov(e);

    for (;;) {
        double t = INFINITY;
        if (next < n)
            t = jobs[next].submit_s;
        if (h.n && h.v[0].t < t)
            t = h.v[0].t;
        double w = spw_engine_next_wakeup(e);
        if (w < t)
            t = w;
        if (t == INFINITY)
            break;
        sample_until(&smp, e, t);
        out->events++;

        while (h.n && h.v[0].t == t) {
            spw_job_t *j = h.v[0].job;
            int boot = h.v[0].boot;
            ev_pop(&h);
            if (boot) {
                smp.cloud_usd_per_h += job_usd_per_h(fleet, j);
                continue;
            }
            if (j->state == SPW_JOB_CLOUD) {
                const spw_offer_t *o = &fleet->offers[j->offer];
                smp.cloud_gpus -= (uint64_t)j->instances * o->gpus;
                smp.cloud_usd_per_h -= job_usd_per_h(fleet, j);
            }
            spw_engine_finish(e, j, t);
            if (t > last_end)
                last_end = t;
            progress_s = t;
        }
        while (next < n && jobs[next].submit_s == t) {
            spw_job_t *j = &jobs[next++];
            progress_s = t;
            spw_engine_submit(e, j, t);
            if (j->state == SPW_JOB_UNSCHEDULABLE)
                out->jobs_unschedulable++;
            if (opts && opts->on_progress && (next & (progress_every - 1)) == 0)
                opts->on_progress(opts->ctx, next, n);
        }
        spw_job_t **placed, **rejected;
        size_t np = spw_engine_schedule(e, t, &placed);
        /* Rejected jobs end here, never placed; the summary counts them. */
        if (spw_engine_rejected(e, &rejected))
            progress_s = t;
        for (size_t k = 0; k < np; k++) {
            spw_job_t *j = placed[k];
            double rt = runtime_s[j - jobs];
            /* A job that reaches its max runtime is stopped there (in the
             * cloud its worst case was reserved for that long). */
            double max_rt = spw_engine_max_runtime(e, j);
            if (rt > max_rt) {
                rt = max_rt;
                out->jobs_stopped_max_runtime++;
            }
            if (j->state == SPW_JOB_CLOUD) {
                const spw_offer_t *o = &fleet->offers[j->offer];
                smp.cloud_gpus += (uint64_t)j->instances * o->gpus;
                /* Billing starts when the boot ends, before any data
                 * transfer.  The boot event goes in before the end event,
                 * so at equal times it fires first. */
                double bill_s = j->start_s - j->transfer_s;
                if (bill_s > t)
                    ev_push(&h, bill_s, j, 1);
                else
                    smp.cloud_usd_per_h += job_usd_per_h(fleet, j);
            }
            ev_push(&h, j->start_s + rt, j, 0);
            progress_s = t;
        }
        double org_usd_h, org_gpus;
        spw_govrt_org(gov, &org_usd_h, &org_gpus);
        if (org_usd_h > out->peak_cloud_usd_per_h)
            out->peak_cloud_usd_per_h = org_usd_h;
        if (org_gpus > out->peak_cloud_gpus)
            out->peak_cloud_gpus = org_gpus;
        size_t queued = spw_engine_queued(e);
        if (queued > out->queue_max)
            out->queue_max = queued;
        /* Nothing left to arrive or run: only budget periods still turn.
         * Once every period touched by past spend is over (40 days covers a
         * month and a week) and the held jobs still do not fit, they never
         * will. */
        if (next == n && h.n == 0 && queued && t - progress_s > SPW_SIM_GIVE_UP_S)
            break;
    }
    if (opts && opts->on_progress)
        opts->on_progress(opts->ctx, n, n);
    sample_until(&smp, e, nextafter(last_end, INFINITY));

    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    out->onprem_gpus = st.onprem_gpus;
    out->passes = st.passes;
    spw_engine_destroy(e);
    free(h.v);

    /* Summary over the jobs that ran. */
    double *wait = spw_xmalloc((n ? n : 1) * sizeof(double));
    double *jct = spw_xmalloc((n ? n : 1) * sizeof(double));
    size_t ran = 0;
    double wsum = 0, jsum = 0;
    const spw_gov_t *g = &fleet->gov;
    out->gov = spw_gov_active(g);
    out->nteams = g->nteams;
    for (size_t i = 0; i < n; i++) {
        const spw_job_t *j = &jobs[i];
        uint32_t ti = j->team <= g->nteams ? j->team : 0;
        spw_sim_team_t *tm = &out->team[ti];
        tm->jobs++;
        if (j->held) {
            tm->jobs_held++;
            out->jobs_held++;
        }
        if (j->state == SPW_JOB_REJECTED) {
            tm->jobs_rejected++;
            out->jobs_rejected++;
        } else if (j->state == SPW_JOB_QUEUED) {
            out->jobs_never_ran++;
        }
        if (j->state != SPW_JOB_DONE)
            continue;
        double hours = (j->end_s - j->start_s) / 3600.0;
        double compute = j->cost_usd - j->egress_usd;
        tm->egress_usd += j->egress_usd;
        tm->egress_gb += j->egress_gb;
        out->egress_usd += j->egress_usd;
        out->egress_gb += j->egress_gb;
        if (j->offer >= 0) {
            out->jobs_cloud++;
            out->cloud_cost_usd += compute;
            tm->cloud_usd += compute;
            out->cloud_gpu_hours += hours * j->instances * fleet->offers[j->offer].gpus;
        } else {
            out->jobs_onprem++;
            out->onprem_cost_usd += compute;
            tm->onprem_usd += compute;
            out->onprem_gpu_hours += hours * j->alloc_gpus;
            if (j->reason == SPW_REASON_BACKFILLED)
                out->jobs_backfilled++;
            if (j->by_residency)
                out->jobs_onprem_by_residency++;
            if (j->by_budget)
                out->jobs_onprem_only_budget++;
        }
        wait[ran] = j->start_s - j->submit_s;
        jct[ran] = j->end_s - j->submit_s;
        wsum += wait[ran];
        jsum += jct[ran];
        ran++;
    }
    if (out->gov)
        budget_use(fleet, jobs, n, out);
    out->jobs = n;
    if (ran) {
        out->wait_mean_s = wsum / (double)ran;
        out->jct_mean_s = jsum / (double)ran;
        out->wait_p50_s = spw_quantile(wait, ran, 0.50);
        out->wait_p90_s = spw_quantile(wait, ran, 0.90);
        out->wait_p99_s = spw_quantile(wait, ran, 0.99);
        out->jct_p50_s = spw_quantile(jct, ran, 0.50);
        out->jct_p90_s = spw_quantile(jct, ran, 0.90);
        out->jct_p99_s = spw_quantile(jct, ran, 0.99);
    }
    free(wait);
    free(jct);
    out->makespan_s = last_end - first_submit;
    if (out->onprem_gpus && out->makespan_s > 0)
        out->onprem_utilization =
            out->onprem_gpu_hours / ((double)out->onprem_gpus * out->makespan_s / 3600.0);
    return 0;
}
