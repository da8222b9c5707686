/* sim.c: the discrete-event loop that replays a trace through the engine.
 *
 * Arrivals come straight from the sorted job array; everything else that
 * happens at a given time sits in one binary heap ordered by (time, class,
 * sequence): job events (a cloud job's boot ends, a job ends) and world
 * events (a spot trace tick changes an offer's capacity, a spot instance is
 * preempted at random, an on-prem node goes down or comes back).  The
 * engine's wait expiries are the third source of instants.  At one instant:
 * job events, then world events (interruptions), then arrivals, then one call
 * to spw_engine_schedule (see engine.h).
 *
 * Attempts: a placed job's attempt runs from j->start_s; its first
 * spw_engine_overhead_s seconds make no progress, then it needs its true
 * runtime minus the progress kept from interrupted attempts (j->done_s).
 * Every placement is a new attempt with its own number, and events carry the
 * number of the attempt they belong to, so those of an interrupted attempt go
 * stale and are dropped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "util/rng.h"

/* Idle time after which held jobs are given up (see spw_sim_run). */
#define SPW_SIM_GIVE_UP_S (40 * 86400.0)

/* What an event is.  Job events sort before world events at one instant: a
 * job that ends at the moment its capacity goes away has finished. */
typedef enum ev_kind {
    EV_BOOT,      /* a cloud job's boot ends and billing starts */
    EV_END,       /* a job's attempt ends (done, or stopped at max runtime) */
    EV_PREEMPT,   /* a spot attempt is preempted (preempt_rate_per_h) */
    EV_TICK,      /* a spot trace reaches a tick with a different count */
    EV_DOWN,      /* an on-prem node fails */
    EV_UP,        /* an on-prem node is repaired */
} ev_kind_t;

/* Where a failure event comes from (event.aux of EV_DOWN and EV_UP). */
enum { FAIL_LIST = 0, FAIL_MTBF = 1 };

typedef struct event {
    double t;        /* when it happens, sim seconds */
    uint64_t key;    /* equal times: world class (bit 63, ev_push) then
                        insertion sequence, so they stay in order */
    union {
        spw_job_t *job;  /* EV_BOOT, EV_END, EV_PREEMPT */
        size_t idx;      /* EV_TICK: spot entry; EV_DOWN/EV_UP: failure
                            entry (FAIL_LIST) or global node (FAIL_MTBF) */
    } u;
    uint32_t aux;    /* job events: the attempt; failures: FAIL_LIST / FAIL_MTBF */
    uint8_t kind;    /* ev_kind_t */
} event_t;

typedef struct evheap {
    event_t *v;
    size_t n, cap;
    uint64_t seq;
} evheap_t;

/* Job events (boot, end) come before world events at equal times; within
 * each class, insertion order.  Without branches: which of two events is
 * earlier is a coin toss the branch predictor loses. */
static inline int ev_before(const event_t *a, const event_t *b)
{
    return (a->t < b->t) | ((a->t == b->t) & (a->key < b->key));
}

/* The heap is 4-ary (children of i: 4i+1..4i+4): half the levels of a
 * binary one, and a node's children are 128 contiguous bytes. */
#define EV_PARENT(i) (((i) - 1) / 4)

static void ev_push(evheap_t *h, const event_t *e)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 1024;
        h->v = spw_xrealloc(h->v, h->cap * sizeof(event_t));
    }
    event_t x = *e;
    x.key = (uint64_t)(x.kind >= EV_PREEMPT) << 63 | h->seq++;   /* world class */
    size_t i = h->n++;
    while (i && ev_before(&x, &h->v[EV_PARENT(i)])) {
        h->v[i] = h->v[EV_PARENT(i)];
        i = EV_PARENT(i);
    }
    h->v[i] = x;
}

/* Removes the first event.  The hole it leaves goes down the earliest
 * child to a leaf, then the last event climbs back up from there (it
 * mostly belongs near the bottom: fewer comparisons than sifting it down).
 * Every key differs, so the order events come out in is the same for any
 * valid heap. */
static void ev_pop(evheap_t *h)
{
    size_t n = --h->n, i = 0, c;
    if (!n)
        return;
    event_t *v = h->v, x = v[n];
    while ((c = 4 * i + 1) + 3 < n) {
        size_t a = c + (size_t)ev_before(&v[c + 1], &v[c]);
        size_t b = c + 2 + (size_t)ev_before(&v[c + 3], &v[c + 2]);
        c = ev_before(&v[b], &v[a]) ? b : a;
        v[i] = v[c];
        i = c;
    }
    if (c < n) {   /* fewer than four children, all leaves */
        for (size_t k = c + 1; k < n; k++)
            if (ev_before(&v[k], &v[c]))
                c = k;
        v[i] = v[c];
        i = c;
    }
    while (i && ev_before(&x, &v[EV_PARENT(i)])) {
        v[i] = v[EV_PARENT(i)];
        i = EV_PARENT(i);
    }
    v[i] = x;
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

/* The index of the nearest-rank q-quantile of n > 0 sorted values: the
 * smallest value with at least q*n values at or below. */
static size_t quantile_rank(size_t n, double q)
{
    double r = ceil(q * (double)n);
    size_t k = r < 1 ? 0 : (size_t)r - 1;
    return k < n ? k : n - 1;
}

double spw_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t k = quantile_rank(n, q);
    select_kth(v, n, k);
    return v[k];
}

/* The quantiles q[0] <= q[1] <= ... of v[0..n) (n > 0) into out, as
 * spw_quantile gives them: a selection leaves nothing above the rank it
 * found on its left, so each next one looks only right of the last. */
static void quantiles(double *v, size_t n, const double *q, double *out, size_t nq)
{
    size_t lo = 0;
    for (size_t i = 0; i < nq; i++) {
        size_t k = quantile_rank(n, q[i]);
        if (k >= lo) {
            select_kth(v + lo, n - lo, k - lo);
            lo = k + 1;
        }
        out[i] = v[k];
    }
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

/* Spend rate of a cloud job's instances: the spot price on spot. */
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

/* ---- spend per team and budget period ----------------------------------------- */

/* Spend charged to one (team, budget period). */
typedef struct period_sum {
    uint32_t team;           /* config team + 1; 0 = empty slot */
    double start;            /* period start, unix seconds */
    double usd;
} period_sum_t;

/* An open-addressing table of period_sum_t, filled as cloud attempts settle:
 * each attempt's compute and egress are charged to the budget period of its
 * placement, as the engine's ledger does (egress into on-prem is outside
 * budgets; it counts against the egress cap only). */
typedef struct periods {
    period_sum_t *h;         /* cap slots, a power of two */
    size_t cap, used;
    /* The period of each team's last charge: attempts settle in roughly
     * submit order, so most charges fall in it and need no calendar
     * arithmetic. */
    double cur_start[SPW_GOV_MAX_TEAMS], cur_end[SPW_GOV_MAX_TEAMS];
} periods_t;

static size_t period_slot(uint32_t team, double start, size_t cap)
{
    return (size_t)((team * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)(int64_t)start) & (cap - 1);
}

static void periods_init(periods_t *p)
{
    p->cap = 64;
    p->used = 0;
    p->h = spw_xcalloc(p->cap, sizeof(*p->h));
    for (size_t k = 0; k < SPW_GOV_MAX_TEAMS; k++)
        p->cur_start[k] = p->cur_end[k] = NAN;
}

/* Charges usd to team `team` (config team + 1) in the period holding sim
 * time placed_s. */
static void periods_add(periods_t *p, const spw_gov_t *g, uint32_t team, double placed_s,
                        double usd)
{
    if (!team || team > g->nteams || !(usd > 0))
        return;
    size_t k = team - 1;
    double t = g->origin_s + placed_s;
    if (!(t >= p->cur_start[k] && t < p->cur_end[k])) {
        p->cur_start[k] = spw_period_start(g->teams[k].period, t);
        p->cur_end[k] = spw_period_end(g->teams[k].period, t);
    }
    if (p->used * 2 >= p->cap) {
        size_t ncap = p->cap * 2;
        period_sum_t *nh = spw_xcalloc(ncap, sizeof(*nh));
        for (size_t s = 0; s < p->cap; s++) {
            if (!p->h[s].team)
                continue;
            size_t x = period_slot(p->h[s].team, p->h[s].start, ncap);
            while (nh[x].team)
                x = (x + 1) & (ncap - 1);
            nh[x] = p->h[s];
        }
        free(p->h);
        p->h = nh;
        p->cap = ncap;
    }
    size_t x = period_slot(team, p->cur_start[k], p->cap);
    while (p->h[x].team && !(p->h[x].team == team && p->h[x].start == p->cur_start[k]))
        x = (x + 1) & (p->cap - 1);
    if (!p->h[x].team) {
        p->h[x].team = team;
        p->h[x].start = p->cur_start[k];
        p->used++;
    }
    p->h[x].usd += usd;
}

/* Fills budget_use and worst_period_usd of every team, and frees p. */
static void periods_finish(periods_t *p, const spw_gov_t *g, spw_sim_summary_t *out)
{
    for (size_t s = 0; s < p->cap; s++) {
        if (!p->h[s].team)
            continue;
        spw_sim_team_t *tm = &out->team[p->h[s].team];
        double budget = g->teams[p->h[s].team - 1].budget_usd;
        if (p->h[s].usd > tm->worst_period_usd)
            tm->worst_period_usd = p->h[s].usd;
        if (isfinite(budget) && budget > 0 && p->h[s].usd / budget > tm->budget_use)
            tm->budget_use = p->h[s].usd / budget;
    }
    free(p->h);
    p->h = NULL;
}

/* ---- the simulator's state ------------------------------------------------------ */

/* The simulator's own record of one job, beside the fields the engine
 * writes.  Kept small (12 bytes): a million-job trace pays for it. */
typedef struct jrec {
    uint32_t attempt;        /* placements so far: the current attempt's number */
    uint32_t extra;          /* 1 + index in sim_t.extra once interrupted; 0 = none */
    uint8_t billing;         /* the current cloud attempt's boot is over */
    uint8_t capped;          /* the current attempt ends at its max runtime */
    uint8_t ran_spot;        /* placed on spot at least once */
    uint8_t ran_cloud;       /* placed in the cloud at least once */
} jrec_t;

/* What only an interrupted job needs: its first start (j->start_s then
 * moves on) and what its settled attempts already added up to. */
typedef struct jextra {
    double first_start_s;    /* start of its first attempt: waits count to it */
    double cost_seen;        /* j->cost_usd after its last settlement */
    double egress_seen;      /* j->egress_usd after its last settlement */
} jextra_t;

/* One spot placement on an offer with a trace. */
typedef struct spot_ent {
    spw_job_t *job;
    uint32_t attempt;        /* stale once the job's attempt moves on */
} spot_ent_t;

/* Spot state of one offer. */
typedef struct offer_w {
    spot_ent_t *v;           /* spot placements in placement order (offers
                                with a trace); ended ones are dropped lazily */
    size_t n, cap;
    size_t live;             /* entries whose attempt still holds the offer */
    int traced;              /* its capacity follows a trace */
    double rate_per_h;       /* random preemptions per instance-hour; 0 = none */
} offer_w_t;

/* One spot trace being replayed. */
typedef struct trace_w {
    const spw_sim_spot_t *spec;
    int64_t tick;            /* tick whose count is in force */
    uint32_t count;          /* spw_spot_trace_at(tick) */
    int64_t next_tick;       /* next tick with another count (its event is queued) */
} trace_w_t;

/* On-prem jobs running in one pool (kept only when nodes can fail). */
typedef struct pool_w {
    spw_job_t **v;
    size_t n, cap;
} pool_w_t;

typedef struct sim {
    const spw_fleet_t *fleet;
    const spw_policy_t *policy;
    const spw_sim_world_t *world;  /* NULL = none */
    spw_engine_t *e;
    spw_job_t *jobs;
    const double *runtime_s;
    size_t n;
    jrec_t *rec;             /* per job */
    jextra_t *extra;         /* per interrupted job (jrec_t.extra) */
    size_t nextra, extra_cap;
    uint32_t *slot;          /* per job, when nodes can fail: an on-prem
                                job's index in its pool's running list */
    evheap_t h;
    sampler_t smp;
    spw_sim_summary_t *out;
    int gov;                 /* governance is active: charge periods */
    periods_t per;
    offer_w_t *offers;       /* per fleet offer; NULL without spot entries */
    trace_w_t *traces;       /* spot entries with a trace */
    size_t ntraces;
    pool_w_t *pools;         /* per fleet pool; NULL when no node can fail */
    size_t *node_base;       /* per pool: its first node's global index */
    uint32_t *down;          /* per global node: failures in force (they nest) */
    spw_rng_t rng_spot;      /* random preemptions */
    spw_rng_t rng_fail;      /* MTBF failures and repairs */
    spw_rng_t rng_refuse;    /* capacity errors */
    size_t running;          /* jobs placed and not yet ended */
    size_t finished;         /* jobs that will never change again */
    double progress_s;       /* last instant where a job moved */
    double last_end;         /* last job end (or failure) */
    spw_job_t **scratch;     /* jobs on a failing node */
    size_t scratch_cap;
    double *pool_held_gpu_s; /* per fleet pool: GPU-seconds jobs held there,
                                from placement (data transfer included) */
    /* Giving up early (spw_sim_opts_t.give_up_wait_s): */
    double give_up_sum_s;    /* mean: give up once done_wait_sum_s exceeds this */
    size_t give_up_over;     /* p90: give up once done_over exceeds this */
    double done_wait_sum_s;  /* waits of the jobs done so far, seconds */
    size_t done_over;        /* jobs done so far that waited over give_up_wait_s */
    int gave_up;             /* the statistic is sure to end over the bound */
    /* The mean's sharper proof (give_up_check), bound B = give_up_wait_s: */
    double excess_s;         /* over jobs done, wait - B; over jobs started
                                and not done, min(0, wait - B), seconds */
    uint8_t *left;           /* per job: started once, or ended unplaced */
    size_t nleft;            /* jobs with left set */
    size_t old_n;            /* jobs[0..old_n) were submitted at least B ago */
    size_t old_left;         /* jobs in jobs[0..old_n) with left set */
} sim_t;

static jrec_t *rec_of(sim_t *s, const spw_job_t *j)
{
    return &s->rec[j - s->jobs];
}

/* The extra record of j, made on its first interruption (from its first
 * start); NULL before when `make` is 0. */
static jextra_t *extra_of(sim_t *s, const spw_job_t *j, int make)
{
    jrec_t *r = rec_of(s, j);
    if (r->extra)
        return &s->extra[r->extra - 1];
    if (!make)
        return NULL;
    if (s->nextra == s->extra_cap) {
        s->extra_cap = s->extra_cap ? s->extra_cap * 2 : 64;
        s->extra = spw_xrealloc(s->extra, s->extra_cap * sizeof(*s->extra));
    }
    jextra_t *x = &s->extra[s->nextra++];
    x->first_start_s = j->start_s;
    x->cost_seen = x->egress_seen = 0;
    r->extra = (uint32_t)s->nextra;
    return x;
}

static void push_job_ev(sim_t *s, ev_kind_t kind, double t, spw_job_t *j)
{
    event_t x = {.t = t, .kind = (uint8_t)kind, .u.job = j, .aux = rec_of(s, j)->attempt};
    ev_push(&s->h, &x);
}

static void push_world_ev(sim_t *s, ev_kind_t kind, double t, size_t idx, uint32_t aux)
{
    event_t x = {.t = t, .kind = (uint8_t)kind, .u.idx = idx, .aux = aux};
    ev_push(&s->h, &x);
}

/* Asks for the cache lines of job j and its record ahead of their use:
 * the jobs whose events come next are anywhere in a large array.  Inlined
 * always: GCC 12 finds a function that only prefetches free of side
 * effects and drops the calls to it. */
static inline __attribute__((always_inline)) void prefetch_job(const sim_t *s, const spw_job_t *j)
{
    const char *p = (const char *)j;
    for (size_t o = 0; o < sizeof(*j); o += 64)
        __builtin_prefetch(p + o);
    __builtin_prefetch(p + sizeof(*j) - 1);
    __builtin_prefetch(&s->rec[j - s->jobs]);
}

/* The same for the job of event x. */
static inline __attribute__((always_inline)) void prefetch_ev(const sim_t *s, const event_t *x)
{
    if (x->kind <= EV_PREEMPT)
        prefetch_job(s, x->u.job);
}

/* Before the first event of h is handled: the jobs of it and of its two
 * children (one of which is mostly next), and the engine's links of the
 * first, whose job was mostly asked for when it was a child. */
static inline __attribute__((always_inline)) void prefetch_next(const sim_t *s,
                                                               const evheap_t *h)
{
    for (size_t k = 0; k < 3 && k < h->n; k++)
        prefetch_ev(s, &h->v[k]);
    if (h->n && h->v[0].kind <= EV_PREEMPT && h->v[0].u.job->l)
        __builtin_prefetch(h->v[0].u.job->l);
}

/* An event that no longer means anything: one of an attempt that has
 * ended, or a world event once every job has finished (the world stops
 * with the last job, so repeating traces and failure processes end). */
static int ev_stale(const sim_t *s, const event_t *x)
{
    if (x->kind <= EV_PREEMPT) {
        const spw_job_t *j = x->u.job;
        return s->rec[j - s->jobs].attempt != x->aux
               || (j->state != SPW_JOB_ONPREM && j->state != SPW_JOB_CLOUD);
    }
    return s->finished == s->n;
}

/* Adds the cost settled since the last settlement of j to the totals: its
 * attempt was in the cloud (on spot, or on a commitment when cloud is 2) or
 * on-prem, placed at placed_s.  A commitment's share is outside the cloud
 * spend and every budget, as its whole cost is (docs/roi.md). */
static void settle(sim_t *s, spw_job_t *j, int cloud, int spot, double placed_s)
{
    jextra_t *x = extra_of(s, j, 0);
    double dc = j->cost_usd, de = spw_job_rare(j)->egress_usd;
    if (x) {
        dc -= x->cost_seen;
        de -= x->egress_seen;
        x->cost_seen = j->cost_usd;
        x->egress_seen = spw_job_rare(j)->egress_usd;
    }
    double compute = dc - de;
    uint32_t ti = j->team <= s->fleet->gov.nteams ? j->team : 0;
    spw_sim_team_t *tm = &s->out->team[ti];
    if (cloud == 2) {
        s->out->commit_used_usd += compute;
        if (s->gov)
            periods_add(&s->per, &s->fleet->gov, j->team, placed_s, de);
    } else if (cloud) {
        s->out->cloud_cost_usd += compute;
        tm->cloud_usd += compute;
        if (spot)
            s->out->spot_cost_usd += compute;
        if (s->gov)
            periods_add(&s->per, &s->fleet->gov, j->team, placed_s, dc);
    } else {
        s->out->onprem_cost_usd += compute;
        tm->onprem_usd += compute;
    }
}

/* Takes a placed job out of the simulator's running state at t (before the
 * engine hears that it ended). */
static void detach(sim_t *s, spw_job_t *j, double t)
{
    jrec_t *r = rec_of(s, j);
    s->running--;
    if (j->state == SPW_JOB_CLOUD) {
        const spw_offer_t *o = &s->fleet->offers[j->offer];
        s->smp.cloud_gpus -= (uint64_t)j->instances * o->gpus;
        if (spw_offer_committed(o) && t > j->start_s - spw_job_rare(j)->transfer_s)
            s->out->commit_gpu_hours += (t - (j->start_s - spw_job_rare(j)->transfer_s)) / 3600.0 *
                                        j->instances * o->gpus;
        if (r->billing)
            s->smp.cloud_usd_per_h -= job_usd_per_h(s->fleet, j);
        r->billing = 0;
        if (j->spot && s->offers && s->offers[j->offer].traced)
            s->offers[j->offer].live--;
        return;
    }
    /* On-prem GPU-hours count from the start (after any data transfer);
     * the owned cost's busy share from the placement, as the engine prices
     * the attempt. */
    double run = t - j->start_s;
    if (run > 0)
        s->out->onprem_gpu_hours += run / 3600.0 * j->alloc_gpus;
    if (t > j->placed_s)
        s->pool_held_gpu_s[j->pool] += (t - j->placed_s) * j->alloc_gpus;
    if (s->pools) {
        pool_w_t *p = &s->pools[j->pool];
        uint32_t at = s->slot[j - s->jobs];
        spw_job_t *last = p->v[--p->n];
        p->v[at] = last;
        s->slot[last - s->jobs] = at;
    }
}

/* Counts the wait of j, done, towards giving up.  The summary's mean is
 * over the jobs done (ran <= n of them), so once the waits of those done so
 * far add up to more than bound x n the mean ends above the bound; its p90
 * (nearest rank) ends above the bound once more than ran - ceil(0.9 ran)
 * jobs waited longer, and that count never decreases while ran - ceil(0.9
 * ran) is at most n - ceil(0.9 n).  Waits are the summary's own values. */
static void note_done_wait(sim_t *s, const spw_job_t *j)
{
    const jrec_t *r = rec_of(s, j);
    double w = (r->extra ? s->extra[r->extra - 1].first_start_s : j->start_s) - j->submit_s;
    if (s->smp.o->give_up_p90) {
        if (w > s->smp.o->give_up_wait_s && ++s->done_over > s->give_up_over)
            s->gave_up = 1;
    } else {
        s->done_wait_sum_s += w;
        if (s->done_wait_sum_s > s->give_up_sum_s)
            s->gave_up = 1;
    }
}

/* Job j left the queue for good: its first start is set (its wait is
 * known) or it ended without a placement. */
static void note_left(sim_t *s, const spw_job_t *j)
{
    size_t i = (size_t)(j - s->jobs);
    if (!s->left || s->left[i])
        return;
    s->left[i] = 1;
    s->nleft++;
    if (i < s->old_n)
        s->old_left++;
    if (j->state == SPW_JOB_CLOUD || j->state == SPW_JOB_ONPREM) {
        double w = j->start_s - j->submit_s - s->smp.o->give_up_wait_s;
        s->excess_s += w < 0 ? w : 0;
    }
}

/* The mean's sharper proof, at the end of instant t.  The final mean is
 * over the jobs that end done.  Each job adds wait - B to their sum less
 * B x their count, or nothing if it does not end done: a job done adds
 * exactly wait - B; one started adds at least min(0, wait - B) (its wait
 * is known); one that ended unplaced adds nothing; one still queued will
 * wait at least t - submit, so adds at least 0 once submitted B ago and
 * at least -B before; one not yet submitted at least -B.  When even that
 * lowest sum is above 0 (by the margin of give_up_sum_s), the mean ends
 * above B.  It never proves less than done_wait_sum_s > B x n does. */
static void give_up_check(sim_t *s, double t)
{
    double b = s->smp.o->give_up_wait_s;
    while (s->old_n < s->n && s->jobs[s->old_n].submit_s <= t - b)
        s->old_left += s->left[s->old_n++];
    size_t young = (s->n - s->old_n) - (s->nleft - s->old_left);
    if (s->excess_s - b * (double)young > s->give_up_sum_s - b * (double)s->n)
        s->gave_up = 1;
}

/* settle()'s cloud argument for placed job j: 0 on-prem, 1 cloud, 2 a
 * commitment. */
static int cloud_kind(const sim_t *s, const spw_job_t *j)
{
    if (j->state != SPW_JOB_CLOUD)
        return 0;
    return spw_offer_committed(&s->fleet->offers[j->offer]) ? 2 : 1;
}

static void on_end(sim_t *s, spw_job_t *j, double t)
{
    int cloud = cloud_kind(s, j), spot = j->spot;
    double placed_s = j->placed_s;
    detach(s, j, t);
    spw_engine_finish(s->e, j, t);
    settle(s, j, cloud, spot, placed_s);
    if (rec_of(s, j)->capped) {
        s->out->jobs_stopped_max_runtime++;
        j->stopped_max_run = 1;
    }
    if (j->state == SPW_JOB_DONE && s->smp.o && s->smp.o->give_up_wait_s > 0) {
        note_done_wait(s, j);
        if (s->left) {   /* its min(0, wait - B) becomes wait - B */
            const jrec_t *r = rec_of(s, j);
            double w = (r->extra ? s->extra[r->extra - 1].first_start_s : j->start_s) -
                       j->submit_s - s->smp.o->give_up_wait_s;
            s->excess_s += w > 0 ? w : 0;
        }
    }
    s->finished++;
    if (t > s->last_end)
        s->last_end = t;
    s->progress_s = t;
}

/* Ends j's attempt at t: its capacity was preempted or its node failed. */
static void interrupt(sim_t *s, spw_job_t *j, spw_interrupt_t why, double t)
{
    int cloud = cloud_kind(s, j), spot = j->spot;
    double placed_s = j->placed_s;
    if (!cloud && j->state != SPW_JOB_ONPREM)
        return;
    extra_of(s, j, 1);   /* keeps its first start */
    detach(s, j, t);
    int rc = spw_engine_interrupt(s->e, j, why, t);
    settle(s, j, cloud, spot, placed_s);
    if (why == SPW_INTERRUPT_PREEMPTED)
        s->out->preemptions++;
    else if (why == SPW_INTERRUPT_NODE_FAILED)
        s->out->jobs_interrupted_by_failure++;
    else if (why == SPW_INTERRUPT_RECLAIMED)
        s->out->reclaims++;
    else
        s->out->switches_to_spot++;
    if (rc == 1) {   /* past max_restarts: the engine gave it up */
        s->finished++;
        if (t > s->last_end)
            s->last_end = t;
    }
    s->progress_s = t;
}

/* A placement made at t: the attempt's end, its boot, its random preemption. */
static void on_placed(sim_t *s, spw_job_t *j, double t)
{
    jrec_t *r = rec_of(s, j);
    if (!r->attempt)
        note_left(s, j);
    r->attempt++;
    s->running++;
    /* The attempt pays its restart overhead, then runs what is left of the
     * true runtime.  A job that reaches its max runtime is stopped there
     * (in the cloud its worst case was reserved for that long). */
    double left = s->runtime_s[j - s->jobs] - spw_job_rare(j)->done_s;
    double speed = j->speed > 0 ? j->speed : 1;   /* of the GPU it runs on */
    double dur = spw_engine_overhead_s(s->e, j) + (left > 0 ? left / speed : 0);
    double max_rt = spw_engine_max_runtime(s->e, j);
    r->capped = dur > max_rt;
    if (r->capped)
        dur = max_rt;
    if (j->state == SPW_JOB_CLOUD) {
        const spw_offer_t *o = &s->fleet->offers[j->offer];
        r->ran_cloud = 1;
        s->smp.cloud_gpus += (uint64_t)j->instances * o->gpus;
        /* Billing starts when the boot ends, before any data transfer.
         * The boot event goes in before the end event, so at equal times
         * it fires first. */
        double bill_s = j->start_s - spw_job_rare(j)->transfer_s;
        if (bill_s > t) {
            push_job_ev(s, EV_BOOT, bill_s, j);
        } else {
            r->billing = 1;
            s->smp.cloud_usd_per_h += job_usd_per_h(s->fleet, j);
        }
        if (j->spot) {
            r->ran_spot = 1;
            offer_w_t *ow = s->offers ? &s->offers[j->offer] : NULL;
            if (ow && ow->traced) {
                if (ow->n == ow->cap && ow->live * 2 < ow->n) {
                    /* Mostly ended placements: squeeze them out. */
                    size_t k = 0;
                    for (size_t i = 0; i < ow->n; i++) {
                        spot_ent_t x = ow->v[i];
                        if (rec_of(s, x.job)->attempt == x.attempt
                            && x.job->state == SPW_JOB_CLOUD)
                            ow->v[k++] = x;
                    }
                    ow->n = k;
                }
                if (ow->n == ow->cap) {
                    ow->cap = ow->cap ? ow->cap * 2 : 16;
                    ow->v = spw_xrealloc(ow->v, ow->cap * sizeof(*ow->v));
                }
                ow->v[ow->n++] = (spot_ent_t){.job = j, .attempt = r->attempt};
                ow->live++;
            }
            /* Each instance goes after an exponential time: the gang goes
             * at the first of them. */
            if (ow && ow->rate_per_h > 0) {
                double mean_s = 3600.0 / (ow->rate_per_h * j->instances);
                push_job_ev(s, EV_PREEMPT, bill_s + spw_rng_exp(&s->rng_spot, mean_s), j);
            }
        }
    } else if (s->pools) {
        pool_w_t *p = &s->pools[j->pool];
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 16;
            p->v = spw_xrealloc(p->v, p->cap * sizeof(*p->v));
        }
        s->slot[j - s->jobs] = (uint32_t)p->n;
        p->v[p->n++] = j;
    }
    push_job_ev(s, EV_END, j->start_s + dur, j);
    s->progress_s = t;
}

/* Whether the cloud refuses placement j made at t (world refusals): then
 * the job is back in the queue, what the refusal rules out is blocked, and
 * the next schedule at t places it elsewhere. */
static int refused(sim_t *s, spw_job_t *j, double t)
{
    const spw_sim_world_t *w = s->world;
    if (j->state != SPW_JOB_CLOUD || !w)
        return 0;
    for (size_t k = 0; k < w->nrefusals; k++) {
        const spw_sim_refusal_t *r = &w->refusals[k];
        if (r->offer != (size_t)j->offer || (r->market >= 0 && r->market != !!j->spot))
            continue;
        if (spw_rng_uniform(&s->rng_refuse) >= r->rate)
            continue;
        int spot = j->spot;
        size_t offer = (size_t)j->offer;
        spw_engine_requeue(s->e, j, t);
        spw_engine_block(s->e, offer, spot, r->block, t + r->block_s);
        s->out->capacity_errors++;
        return 1;
    }
    return 0;
}

/* ---- the world: spot traces, random preemptions, node failures ------------------ */

/* Queues the next tick of trace k whose count differs from the one in
 * force at t; none when the trace is constant (it repeats). */
static void trace_next(sim_t *s, size_t k, double t)
{
    trace_w_t *w = &s->traces[k];
    const spw_spot_trace_t *tr = w->spec->trace;
    int64_t len = (int64_t)tr->n, at = w->tick % len;
    if (at < 0)
        at += len;
    for (int64_t step = 1; step <= len; step++) {
        int64_t i = at + step;
        if (i >= len)
            i -= len;
        if (tr->avail[i] != w->count) {
            w->next_tick = w->tick + step;
            /* Far from the trace's start, rounding must not put it before now. */
            double at_s = w->spec->trace_start_s + (double)w->next_tick * tr->gap_s;
            push_world_ev(s, EV_TICK, at_s > t ? at_s : t, k, 0);
            return;
        }
    }
}

/* Preempts whole spot jobs on offer `offer`, newest placement first, until
 * what is held fits in `count` instances. */
static void preempt_over(sim_t *s, size_t offer, uint32_t count, double t)
{
    offer_w_t *ow = &s->offers[offer];
    while (ow->n && spw_engine_offer_held(s->e, offer, 1) > count) {
        spot_ent_t x = ow->v[--ow->n];
        if (rec_of(s, x.job)->attempt != x.attempt || x.job->state != SPW_JOB_CLOUD)
            continue;
        interrupt(s, x.job, SPW_INTERRUPT_PREEMPTED, t);
    }
}

static void trace_tick(sim_t *s, size_t k, double t)
{
    trace_w_t *w = &s->traces[k];
    w->tick = w->next_tick;
    w->count = spw_spot_trace_at(w->spec->trace, w->tick);
    spw_engine_set_spot_capacity(s->e, w->spec->offer, w->count, t);
    preempt_over(s, w->spec->offer, w->count, t);
    trace_next(s, k, t);
}

/* Node `node` of pool `pool` fails at t.  A node already down stays down
 * (the failures merge): its repair comes with the last of them. */
static void node_fail(sim_t *s, size_t pool, uint32_t node, double t)
{
    if (s->down[s->node_base[pool] + node]++ > 0)
        return;
    s->out->node_failures++;
    pool_w_t *p = &s->pools[pool];
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!spw_engine_job_on_node(p->v[i], pool, node))
            continue;
        if (m == s->scratch_cap) {
            s->scratch_cap = s->scratch_cap ? s->scratch_cap * 2 : 16;
            s->scratch = spw_xrealloc(s->scratch, s->scratch_cap * sizeof(*s->scratch));
        }
        s->scratch[m++] = p->v[i];
    }
    for (size_t i = 0; i < m; i++)
        interrupt(s, s->scratch[i], SPW_INTERRUPT_NODE_FAILED, t);
    spw_engine_node_down(s->e, pool, node, 1, t);
}

static void node_repair(sim_t *s, size_t pool, uint32_t node, double t)
{
    uint32_t *d = &s->down[s->node_base[pool] + node];
    if (*d && --*d == 0)
        spw_engine_node_down(s->e, pool, node, 0, t);
}

/* The pool and node of global node index g. */
static void node_of(const sim_t *s, size_t g, size_t *pool, uint32_t *node)
{
    size_t p = 0;
    while (p + 1 < s->fleet->npools && s->node_base[p + 1] <= g)
        p++;
    *pool = p;
    *node = (uint32_t)(g - s->node_base[p]);
}

static double pool_mean(const double *v, size_t pool)
{
    if (!v || !(v[pool] > 0) || !isfinite(v[pool]))
        return 0;
    return v[pool];
}

static void on_failure(sim_t *s, const event_t *x, double t)
{
    size_t pool;
    uint32_t node;
    if (x->aux == FAIL_LIST) {
        const spw_sim_failure_t *f = &s->world->failures[x->u.idx];
        pool = f->pool;
        node = f->node;
    } else {
        node_of(s, x->u.idx, &pool, &node);
    }
    if (x->kind == EV_DOWN) {
        node_fail(s, pool, node, t);
        if (x->aux == FAIL_LIST) {
            const spw_sim_failure_t *f = &s->world->failures[x->u.idx];
            if (f->up_s < INFINITY)
                push_world_ev(s, EV_UP, f->up_s, x->u.idx, FAIL_LIST);
        } else {
            double mttr = pool_mean(s->world->mttr_s, pool);
            push_world_ev(s, EV_UP, t + spw_rng_exp(&s->rng_fail, mttr), x->u.idx, FAIL_MTBF);
        }
        return;
    }
    node_repair(s, pool, node, t);
    if (x->aux == FAIL_MTBF && s->finished < s->n) {
        double mtbf = pool_mean(s->world->mtbf_s, pool);
        push_world_ev(s, EV_DOWN, t + spw_rng_exp(&s->rng_fail, mtbf), x->u.idx, FAIL_MTBF);
    }
}

/* Checks the world against the fleet: every index in range, every number a
 * number. */
static int world_check(const spw_fleet_t *fleet, const spw_sim_world_t *w, spw_error_t *err)
{
    for (size_t i = 0; i < w->nspot; i++) {
        const spw_sim_spot_t *sp = &w->spot[i];
        if (sp->offer >= fleet->noffers)
            return spw_errorf(err, "spot entry %zu: offer %zu is not in the fleet (%zu offers)",
                              i, sp->offer, fleet->noffers);
        for (size_t k = 0; k < i; k++)
            if (w->spot[k].offer == sp->offer)
                return spw_errorf(err, "spot entries %zu and %zu both describe offer %zu", k, i,
                                  sp->offer);
        if (sp->trace && (!(sp->trace->gap_s > 0) || !isfinite(sp->trace->gap_s)
                          || !sp->trace->n || !isfinite(sp->trace_start_s)))
            return spw_errorf(err, "spot entry %zu: the trace needs ticks, a finite start and "
                              "a tick length > 0", i);
        if (!(sp->preempt_rate_per_h >= 0) || !isfinite(sp->preempt_rate_per_h))
            return spw_errorf(err, "spot entry %zu: preempt_rate_per_h must be a number >= 0",
                              i);
    }
    for (size_t i = 0; i < w->nfailures; i++) {
        const spw_sim_failure_t *f = &w->failures[i];
        if (f->pool >= fleet->npools || f->node >= fleet->pools[f->pool].nnodes)
            return spw_errorf(err, "failure %zu: pool %zu node %u is not in the fleet", i,
                              f->pool, f->node);
        if (!isfinite(f->down_s) || !(f->up_s >= f->down_s))
            return spw_errorf(err, "failure %zu: down_s must be finite and up_s at or after "
                              "it (INFINITY = never repaired)", i);
    }
    for (size_t p = 0; p < fleet->npools; p++)
        if ((w->mtbf_s && !(w->mtbf_s[p] >= 0)) || (w->mttr_s && !(w->mttr_s[p] >= 0)))
            return spw_errorf(err, "pool %s: mtbf and mttr must be >= 0",
                              fleet->pools[p].name);
    return 0;
}

/* Sets up the world at sim start t0: spot capacities in force, the first
 * tick changes, preemption rates, failures. */
static void world_start(sim_t *s, double t0)
{
    const spw_sim_world_t *w = s->world;
    spw_rng_seed(&s->rng_spot, w->seed);
    spw_rng_seed(&s->rng_fail, w->seed ^ 0x6A09E667F3BCC909ULL);
    spw_rng_seed(&s->rng_refuse, w->seed ^ 0xBB67AE8584CAA73BULL);
    if (w->nspot) {
        s->offers = spw_xcalloc(s->fleet->noffers, sizeof(*s->offers));
        s->traces = spw_xcalloc(w->nspot, sizeof(*s->traces));
    }
    for (size_t i = 0; i < w->nspot; i++) {
        const spw_sim_spot_t *sp = &w->spot[i];
        offer_w_t *ow = &s->offers[sp->offer];
        if (!sp->trace) {
            ow->rate_per_h = sp->preempt_rate_per_h;
            continue;
        }
        ow->traced = 1;
        size_t k = s->ntraces++;
        trace_w_t *tw = &s->traces[k];
        tw->spec = sp;
        tw->tick = spw_spot_trace_tick(sp->trace, sp->trace_start_s, t0);
        tw->count = spw_spot_trace_at(sp->trace, tw->tick);
        spw_engine_set_spot_capacity(s->e, sp->offer, tw->count, t0);
        trace_next(s, k, t0);
    }
    int mtbf = 0;
    for (size_t p = 0; p < s->fleet->npools; p++)
        mtbf |= pool_mean(w->mtbf_s, p) > 0;
    if (!w->nfailures && !mtbf)
        return;
    size_t nodes = 0;
    s->pools = spw_xcalloc(s->fleet->npools ? s->fleet->npools : 1, sizeof(*s->pools));
    s->node_base = spw_xcalloc(s->fleet->npools ? s->fleet->npools : 1, sizeof(size_t));
    for (size_t p = 0; p < s->fleet->npools; p++) {
        s->node_base[p] = nodes;
        nodes += s->fleet->pools[p].nnodes;
    }
    s->down = spw_xcalloc(nodes ? nodes : 1, sizeof(uint32_t));
    s->slot = spw_xcalloc(s->n ? s->n : 1, sizeof(uint32_t));
    /* The engine's time never goes back: a failure that began before the
     * start is in force from the start, one over by then never was. */
    for (size_t i = 0; i < w->nfailures; i++)
        if (w->failures[i].up_s > t0)
            push_world_ev(s, EV_DOWN, fmax(w->failures[i].down_s, t0), i, FAIL_LIST);
    for (size_t p = 0; p < s->fleet->npools; p++) {
        double m = pool_mean(w->mtbf_s, p);
        if (!(m > 0))
            continue;
        for (uint32_t k = 0; k < s->fleet->pools[p].nnodes; k++)
            push_world_ev(s, EV_DOWN, t0 + spw_rng_exp(&s->rng_fail, m), s->node_base[p] + k,
                          FAIL_MTBF);
    }
}

static void sim_free(sim_t *s)
{
    if (s->offers)
        for (size_t o = 0; o < s->fleet->noffers; o++)
            free(s->offers[o].v);
    if (s->pools)
        for (size_t p = 0; p < s->fleet->npools; p++)
            free(s->pools[p].v);
    free(s->offers);
    free(s->traces);
    free(s->pools);
    free(s->pool_held_gpu_s);
    free(s->left);
    free(s->node_base);
    free(s->down);
    free(s->scratch);
    free(s->rec);
    free(s->extra);
    free(s->slot);
    free(s->h.v);
    if (s->per.h)
        free(s->per.h);
}

/* The p90 wait of each team with jobs done, when more than one has them.
 * wait[0..ran) are the waits of the jobs done and slot[i] the team slot of
 * wait[i].  The teams' waits are gathered into a copy, so wait keeps its
 * values for the overall quantiles. */
static void team_p90s(sim_t *s, const double *wait, const uint8_t *slot, size_t ran)
{
    spw_sim_summary_t *out = s->out;
    uint32_t nt = (uint32_t)s->fleet->gov.nteams;
    double *v = spw_xmalloc((ran ? ran : 1) * sizeof(double));
    size_t at[SPW_GOV_MAX_TEAMS + 2];   /* where each team's next wait goes in v:
                                           its segment's start, its end once filled */
    at[0] = 0;
    for (uint32_t k = 0; k <= nt; k++)
        at[k + 1] = at[k] + out->team[k].jobs_done;
    for (size_t i = 0; i < ran; i++)
        v[at[slot[i]]++] = wait[i];
    for (uint32_t k = 0; k <= nt; k++) {
        spw_sim_team_t *tm = &out->team[k];
        if (tm->jobs_done)
            tm->wait_p90_s = spw_quantile(v + at[k] - tm->jobs_done, tm->jobs_done, 0.90);
    }
    free(v);
}

/* Fills the summary from the jobs after the run. */
static void summarize(sim_t *s)
{
    spw_sim_summary_t *out = s->out;
    size_t n = s->n;
    double *wait = spw_xmalloc_huge((n ? n : 1) * sizeof(double));
    double *jct = spw_xmalloc_huge((n ? n : 1) * sizeof(double));
    uint8_t *slot = s->fleet->gov.nteams ? spw_xmalloc(n ? n : 1) : NULL;
    size_t ran = 0;
    double wsum = 0, jsum = 0;
    double spot_gpu_s = 0, od_gpu_s = 0, lost_gpu_s = 0;
    const spw_gov_t *g = &s->fleet->gov;
    out->nteams = g->nteams;
    for (size_t i = 0; i < n; i++) {
        const spw_job_t *j = &s->jobs[i];
        const jrec_t *r = &s->rec[i];
        uint32_t ti = j->team <= g->nteams ? j->team : 0;
        spw_sim_team_t *tm = &out->team[ti];
        tm->jobs++;
        if (spw_job_rare(j)->held) {
            tm->jobs_held++;
            out->jobs_held++;
        }
        if (j->state == SPW_JOB_REJECTED) {
            tm->jobs_rejected++;
            out->jobs_rejected++;
        } else if (j->state == SPW_JOB_QUEUED) {
            out->jobs_never_ran++;
        } else if (j->state == SPW_JOB_FAILED) {
            out->jobs_failed++;
        }
        /* Money, GPU-hours and egress of every attempt, whatever became of
         * the job (compute was added up as attempts settled). */
        tm->egress_usd += spw_job_rare(j)->egress_usd;
        tm->onprem_egress_usd += spw_job_rare(j)->onprem_egress_usd;
        tm->egress_gb += spw_job_rare(j)->egress_gb;
        out->egress_usd += spw_job_rare(j)->egress_usd;
        out->egress_gb += spw_job_rare(j)->egress_gb;
        spot_gpu_s += spw_job_rare(j)->spot_gpu_s;
        od_gpu_s += spw_job_rare(j)->ondemand_gpu_s;
        lost_gpu_s += spw_job_rare(j)->lost_gpu_s;
        /* The engine's count, as --jobs-out gives it: an interrupted job
         * back in the queue is a restart even if it never starts again
         * (a preempted job rejected by its budget). */
        out->restarts += spw_job_rare(j)->restarts;
        out->jobs_spot += r->ran_spot;
        out->jobs_ran_cloud += r->ran_cloud;
        if (isfinite(j->deadline_s)) {
            out->jobs_deadline++;
            if (j->deadline_s < j->submit_s + s->runtime_s[i] + s->policy->restart_overhead_s)
                out->deadline_infeasible++;
            /* Within a microsecond, or a few ulp of the deadline at times
             * where a microsecond is below the resolution of a double: a
             * job whose deadline leaves no slack at all ends on it but for
             * the rounding of the sums. */
            else if (j->state == SPW_JOB_DONE &&
                     j->end_s <= j->deadline_s + fmax(1e-6, ldexp(fabs(j->deadline_s), -50)))
                out->deadline_met++;
            else
                out->deadline_missed++;
        }
        if (j->state != SPW_JOB_DONE)
            continue;
        /* A job stopped at its max runtime did not do its work: what it
         * ran is paid for, not useful. */
        if (j->stopped_max_run)
            out->stopped_gpu_hours += (double)j->gpus * (j->end_s - j->start_s) / 3600.0;
        else
            out->useful_gpu_hours += (double)j->gpus * s->runtime_s[i] / 3600.0;
        if (j->offer >= 0) {
            out->jobs_cloud++;
        } else {
            out->jobs_onprem++;
            if (j->reason == SPW_REASON_BACKFILLED)
                out->jobs_backfilled++;
            if (j->by_residency)
                out->jobs_onprem_by_residency++;
            if (j->by_budget)
                out->jobs_onprem_only_budget++;
        }
        wait[ran] = (r->extra ? s->extra[r->extra - 1].first_start_s : j->start_s) - j->submit_s;
        jct[ran] = j->end_s - j->submit_s;
        if (slot)
            slot[ran] = (uint8_t)ti;
        wsum += wait[ran];
        jsum += jct[ran];
        tm->jobs_done++;
        tm->wait_mean_s += wait[ran];
        tm->jct_mean_s += jct[ran];
        ran++;
    }
    /* Per team: mean wait and JCT (added up above), and the p90 wait; when
     * one team did every job done, its p90 is the overall one. */
    size_t busy = 0;
    for (size_t k = 0; k <= g->nteams; k++) {
        spw_sim_team_t *tm = &out->team[k];
        if (!tm->jobs_done)
            continue;
        busy++;
        tm->wait_mean_s /= (double)tm->jobs_done;
        tm->jct_mean_s /= (double)tm->jobs_done;
    }
    if (busy > 1)
        team_p90s(s, wait, slot, ran);
    free(slot);
    out->spot_gpu_hours = spot_gpu_s / 3600.0;
    out->ondemand_gpu_hours = od_gpu_s / 3600.0;
    out->cloud_gpu_hours = (spot_gpu_s + od_gpu_s) / 3600.0;
    out->lost_gpu_hours = lost_gpu_s / 3600.0;
    out->jobs = n;
    if (ran) {
        out->wait_mean_s = wsum / (double)ran;
        out->jct_mean_s = jsum / (double)ran;
        static const double q[3] = {0.50, 0.90, 0.99};
        double w[3], c[3];
        quantiles(wait, ran, q, w, 3);
        quantiles(jct, ran, q, c, 3);
        out->wait_p50_s = w[0];
        out->wait_p90_s = w[1];
        out->wait_p99_s = w[2];
        out->jct_p50_s = c[0];
        out->jct_p90_s = c[1];
        out->jct_p99_s = c[2];
        for (size_t k = 0; k <= g->nteams && busy == 1; k++)
            if (out->team[k].jobs_done)
                out->team[k].wait_p90_s = w[1];
    }
    free(wait);
    free(jct);
}

int spw_sim_run(const spw_fleet_t *fleet, const spw_policy_t *policy,
                spw_job_t *jobs, const double *runtime_s, size_t n,
                const spw_sim_opts_t *opts, spw_sim_summary_t *out, spw_error_t *err)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < (opts && opts->checked ? 0 : n); i++) {
        if (i && jobs[i].submit_s < jobs[i - 1].submit_s)
            return spw_errorf(err, "jobs are not sorted by submit time (job %s)", jobs[i].id);
        /* Ends must be finite instants, or a job could outlive the loop unseen. */
        if (!isfinite(jobs[i].submit_s + runtime_s[i]) || runtime_s[i] < 0
            || !(jobs[i].est_runtime_s >= 0))
            return spw_errorf(err, "job %s: submit time, runtime and estimate must be finite "
                              "and >= 0", jobs[i].id);
    }
    if (!(policy->restart_overhead_s >= 0) || !isfinite(policy->restart_overhead_s))
        return spw_errorf(err, "restart_overhead_s must be finite and >= 0");
    const spw_sim_world_t *world = opts ? opts->world : NULL;
    if (world && world_check(fleet, world, err) < 0)
        return -1;
    spw_engine_t *e = spw_engine_create(fleet, policy, err);
    if (!e)
        return -1;
    /* Each job is reset as it arrives (its lines are then wanted anyway),
     * the rest after the loop: not one more pass over the whole array. */

    double first_submit = n ? jobs[0].submit_s : 0;
    sim_t s = {
        .fleet = fleet,
        .policy = policy,
        .world = world,
        .e = e,
        .jobs = jobs,
        .runtime_s = runtime_s,
        .n = n,
        .rec = memset(spw_xmalloc_huge((n ? n : 1) * sizeof(jrec_t)), 0,
                      (n ? n : 1) * sizeof(jrec_t)),
        .smp = {.o = opts, .first_s = first_submit, .next_s = first_submit},
        .out = out,
        .gov = spw_gov_active(&fleet->gov),
        .progress_s = first_submit,
        .last_end = first_submit,
        .pool_held_gpu_s = spw_xcalloc(fleet->npools ? fleet->npools : 1, sizeof(double)),
    };
    out->gov = s.gov;
    if (s.gov)
        periods_init(&s.per);
    if (opts && opts->give_up_wait_s > 0) {
        /* A margin far above the rounding of a sum of n waits in another
         * order than the summary's. */
        s.give_up_sum_s = opts->give_up_wait_s * (double)n * (1 + 1e-9);
        double r = ceil(0.90 * (double)n);
        size_t need = r < 1 ? 1 : (size_t)r;   /* waits at or below p90 */
        s.give_up_over = n > need ? n - need : 0;
        if (!opts->give_up_p90)
            s.left = spw_xcalloc(n ? n : 1, 1);
    }
    if (world && n)
        world_start(&s, first_submit);
    size_t next = 0;
    size_t progress_every = 1 << 16;
    evheap_t *h = &s.h;

    for (;;) {
        /* Stale events make no instant of their own. */
        while (h->n && ev_stale(&s, &h->v[0]))
            ev_pop(h);
        prefetch_next(&s, h);
        double t = INFINITY;
        if (next < n)
            t = jobs[next].submit_s;
        if (h->n && h->v[0].t < t)
            t = h->v[0].t;
        double w = spw_engine_next_wakeup(e);
        if (w < t)
            t = w;
        if (t == INFINITY)
            break;
        sample_until(&s.smp, e, t);
        out->events++;

        while (h->n && h->v[0].t == t) {
            event_t x = h->v[0];
            ev_pop(h);
            prefetch_next(&s, h);
            if (ev_stale(&s, &x))
                continue;
            switch ((ev_kind_t)x.kind) {
            case EV_BOOT:
                rec_of(&s, x.u.job)->billing = 1;
                s.smp.cloud_usd_per_h += job_usd_per_h(fleet, x.u.job);
                break;
            case EV_END:
                on_end(&s, x.u.job, t);
                break;
            case EV_PREEMPT:
                interrupt(&s, x.u.job, SPW_INTERRUPT_PREEMPTED, t);
                break;
            case EV_TICK:
                trace_tick(&s, x.u.idx, t);
                break;
            case EV_DOWN:
            case EV_UP:
                on_failure(&s, &x, t);
                break;
            }
        }
        while (next < n && jobs[next].submit_s == t) {
            spw_job_t *j = &jobs[next++];
            spw_job_reset(j);
            if (next < n)
                prefetch_job(&s, &jobs[next]);
            s.progress_s = t;
            spw_engine_submit(e, j, t);
            if (j->state == SPW_JOB_UNSCHEDULABLE) {
                out->jobs_unschedulable++;
                s.finished++;
                note_left(&s, j);
            }
            if (opts && opts->on_progress && (next & (progress_every - 1)) == 0)
                opts->on_progress(opts->ctx, next, n);
        }
        spw_job_t **placed, **rejected, **moves;
        size_t nmoves, nrefused;
        do {
            size_t np = spw_engine_schedule(e, t, &placed);
            /* Rejected jobs end here, never placed; the summary counts them. */
            size_t nrej = spw_engine_rejected(e, &rejected);
            if (nrej) {
                s.progress_s = t;
                s.finished += nrej;
                for (size_t k = 0; k < nrej; k++)
                    note_left(&s, rejected[k]);
            }
            nrefused = 0;
            for (size_t k = 0; k < np; k++) {
                if (refused(&s, placed[k], t))
                    nrefused++;
                else
                    on_placed(&s, placed[k], t);
            }
            /* On-demand jobs ahead of uniform progress move to free spot:
             * stopped cleanly here, re-placed by the next schedule. */
            nmoves = spw_engine_switches(e, &moves);
            for (size_t k = 0; k < nmoves; k++)
                interrupt(&s, moves[k], SPW_INTERRUPT_SWITCH, t);
            /* Borrowed GPUs a team under its quota takes back: the
             * victims' grace is over; they resume from their checkpoint. */
            size_t nrec = spw_engine_reclaims(e, &moves);
            for (size_t k = 0; k < nrec; k++) {
                spw_job_t *v = moves[k];
                out->team[v->team <= fleet->gov.nteams ? v->team : 0].reclaimed++;
                interrupt(&s, v, SPW_INTERRUPT_RECLAIMED, t);
            }
            nmoves += nrec;
        } while (nmoves || nrefused);
        double org_usd_h, org_gpus;
        spw_govrt_org(spw_engine_gov(e), &org_usd_h, &org_gpus);
        if (org_usd_h > out->peak_cloud_usd_per_h)
            out->peak_cloud_usd_per_h = org_usd_h;
        if (org_gpus > out->peak_cloud_gpus)
            out->peak_cloud_gpus = org_gpus;
        size_t queued = spw_engine_queued(e);
        if (queued > out->queue_max)
            out->queue_max = queued;
        /* Nothing left to arrive or run: only budget periods, spot traces
         * and node repairs still turn.  Once every period touched by past
         * spend is over (40 days covers a month and a week) and the held
         * jobs still do not fit (or the spot they wait for never comes),
         * they never will. */
        if (next == n && s.running == 0 && queued && t - s.progress_s > SPW_SIM_GIVE_UP_S)
            break;
        if (s.left && !s.gave_up)
            give_up_check(&s, t);
        if (s.gave_up)
            break;
    }
    for (; next < n; next++)   /* a run given up before its last arrivals */
        spw_job_reset(&jobs[next]);
    if (s.gave_up) {
        spw_engine_destroy(e);
        sim_free(&s);
        memset(out, 0, sizeof(*out));
        return 1;
    }
    if (opts && opts->on_progress)
        opts->on_progress(opts->ctx, n, n);
    sample_until(&s.smp, e, nextafter(s.last_end, INFINITY));

    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    out->onprem_gpus = st.onprem_gpus;
    out->passes = st.passes;
    spw_engine_destroy(e);

    summarize(&s);
    if (s.gov)
        periods_finish(&s.per, &fleet->gov, out);
    out->makespan_s = s.last_end - first_submit;
    /* Owned capacity costs money for the whole run, used or not. */
    for (size_t p = 0; p < fleet->npools; p++) {
        spw_owned_split_t o;
        spw_pool_owned_cost(&fleet->pools[p], out->makespan_s / 3600.0,
                            s.pool_held_gpu_s[p] / 3600.0, &o);
        out->owned_cost_usd += o.total_usd;
        out->owned_used_usd += o.used_usd;
        out->owned_idle_usd += o.idle_usd;
    }
    /* So does committed capacity: the part jobs did not use is idle. */
    for (size_t i = 0; i < fleet->noffers; i++)
        out->commit_cost_usd += spw_commit_cost_usd(&fleet->offers[i], out->makespan_s / 3600.0);
    out->commit_idle_usd = fmax(0, out->commit_cost_usd - out->commit_used_usd);
    out->commit_cost_usd = out->commit_used_usd + out->commit_idle_usd;
    double all_usd = out->cloud_cost_usd + out->owned_cost_usd + out->commit_cost_usd +
                     out->egress_usd;
    if (out->useful_gpu_hours > 0)
        out->cost_per_useful_gpu_h = all_usd / out->useful_gpu_hours;
    sim_free(&s);
    if (out->onprem_gpus && out->makespan_s > 0)
        out->onprem_utilization =
            out->onprem_gpu_hours / ((double)out->onprem_gpus * out->makespan_s / 3600.0);
    return 0;
}

int spw_sim_fairness(const spw_fleet_t *fleet, const spw_policy_t *policy,
                     const spw_job_t *jobs, const double *runtime_s, size_t n,
                     spw_sim_summary_t *out, spw_error_t *err)
{
    const spw_gov_t *g = &fleet->gov;
    size_t nt = g->nteams, teams = 0;
    for (size_t k = 0; k <= nt; k++)
        teams += out->team[k].jobs_done > 0;
    if (teams < 2)
        return 0;
    /* The team's own 1/N of the fleet: the same pools with fewer nodes,
     * the same cloud; the teams without quotas (it is alone). */
    spw_fleet_t f = *fleet;
    f.pools = spw_xcalloc(fleet->npools ? fleet->npools : 1, sizeof(*f.pools));
    for (size_t p = 0; p < fleet->npools; p++) {
        f.pools[p] = fleet->pools[p];
        double k = floor((double)fleet->pools[p].nnodes / (double)teams + 0.5);
        f.pools[p].nnodes = k < 1 ? 1 : (uint32_t)k;
    }
    f.gov.teams = spw_xcalloc(nt ? nt : 1, sizeof(*f.gov.teams));
    for (size_t k = 0; k < nt; k++) {
        f.gov.teams[k] = g->teams[k];
        f.gov.teams[k].has_quota = 0;
    }
    spw_job_t *js = spw_xcalloc(n ? n : 1, sizeof(*js));
    double *rt = spw_xcalloc(n ? n : 1, sizeof(*rt));
    spw_sim_summary_t *alone = spw_xcalloc(1, sizeof(*alone));
    int rc = 0;
    for (size_t k = 0; k <= nt && rc == 0; k++) {
        spw_sim_team_t *tm = &out->team[k];
        if (!tm->jobs_done)
            continue;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if ((jobs[i].team <= nt ? jobs[i].team : 0) == k) {
                spw_jobs_copy(&js[m], &jobs[i], 1);
                js[m].l = NULL;
                rt[m++] = runtime_s[i];
            }
        memset(alone, 0, sizeof(*alone));
        rc = spw_sim_run(&f, policy, js, rt, m, NULL, alone, err);
        spw_jobs_clear(js, m);
        if (rc == 0 && alone->team[k].jct_mean_s > 0)
            tm->rho = tm->jct_mean_s / alone->team[k].jct_mean_s;
    }
    free(alone);
    free(js);
    free(rt);
    free(f.gov.teams);
    free(f.pools);
    return rc < 0 ? -1 : 0;
}
