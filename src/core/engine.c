/* engine.c: queue, placement and burst decisions (see engine.h).
 *
 * Data structures, chosen so that a pass costs what it starts, not what is
 * queued:
 * - Jobs are grouped into demand classes (GPU count, acceptable models).
 *   Jobs of one class are interchangeable for placement, so if a class's
 *   first job does not fit, none of that class does.  Each class keeps its
 *   jobs in a treap ordered by the queue key, augmented with the smallest
 *   runtime estimate of each subtree (EASY backfill asks "the first job of
 *   this class short enough to finish before the reservation").
 * - Each on-prem pool keeps one bitmap of nodes per free-GPU count, so first
 *   and best fit are a few word scans, not a walk over the nodes.
 * - Wait expiries sit in a binary heap; running jobs sit in a heap by
 *   estimated end when EASY backfill needs them. */
#include <math.h>
#include <stdio.h>   /* snprintf for explain texts; the engine never prints */
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/fair.h"

/* ---- bitmaps with a one-level summary ---------------------------------- */

typedef struct bits {
    uint64_t *w;     /* one bit per node */
    uint64_t *sum;   /* bit k set when w[k] != 0 */
    uint32_t nw;     /* words in w */
    uint32_t nsum;   /* words in sum */
} bits_t;

static void bits_init(bits_t *b, uint32_t n)
{
    b->nw = (n + 63) / 64;
    b->nsum = (b->nw + 63) / 64;
    b->w = spw_xcalloc(b->nw ? b->nw : 1, sizeof(uint64_t));
    b->sum = spw_xcalloc(b->nsum ? b->nsum : 1, sizeof(uint64_t));
}

static void bits_free(bits_t *b)
{
    free(b->w);
    free(b->sum);
}

static inline void bits_set(bits_t *b, uint32_t i)
{
    b->w[i >> 6] |= 1ULL << (i & 63);
    b->sum[i >> 12] |= 1ULL << ((i >> 6) & 63);
}

static inline void bits_clear(bits_t *b, uint32_t i)
{
    uint64_t *w = &b->w[i >> 6];
    *w &= ~(1ULL << (i & 63));
    if (*w == 0)
        b->sum[i >> 12] &= ~(1ULL << ((i >> 6) & 63));
}

/* Lowest set bit at or after `from`, or UINT32_MAX. */
static uint32_t bits_next(const bits_t *b, uint32_t from)
{
    uint32_t wi = from >> 6;
    if (wi >= b->nw)
        return UINT32_MAX;
    uint64_t w = b->w[wi] & (~0ULL << (from & 63));
    if (w)
        return (wi << 6) | (uint32_t)__builtin_ctzll(w);
    if (++wi >= b->nw)
        return UINT32_MAX;
    uint32_t si = wi >> 6;
    uint64_t s = b->sum[si] & (~0ULL << (wi & 63));
    while (!s) {
        if (++si >= b->nsum)
            return UINT32_MAX;
        s = b->sum[si];
    }
    uint32_t k = (si << 6) | (uint32_t)__builtin_ctzll(s);
    return (k << 6) | (uint32_t)__builtin_ctzll(b->w[k]);
}

/* ---- pools -------------------------------------------------------------- */

typedef struct pool {
    const spw_pool_spec_t *spec; /* borrowed from the fleet */
    uint32_t n;                  /* nodes */
    uint32_t maxcap;             /* GPUs of the largest node */
    uint16_t *freeg;             /* free GPUs per node */
    uint16_t *shadow;            /* free GPUs per node at the EASY reservation time,
                                    valid where stamp[] equals the engine's epoch */
    uint32_t *stamp;             /* reservation epoch that last wrote shadow[] */
    bits_t *level;               /* level[f]: nodes with exactly f free GPUs, f = 1..maxcap */
    uint32_t *level_n;           /* nodes in each level */
    bits_t full;                 /* nodes with every GPU free */
    uint64_t full_gpus;          /* GPUs of the nodes in `full` */
    uint64_t total;              /* GPUs in the pool */
    uint64_t busy;               /* GPUs held by running jobs */
    uint8_t *down;               /* 1: node out of service (spw_engine_node_down) */
    /* EASY scratch, valid during one reservation: */
    int head_ok;                 /* the blocked head may run in this pool */
    int64_t sh_cnt;              /* nodes whose shadow free >= the head's demand */
    uint64_t sh_full;            /* GPUs of nodes entirely free in the shadow */
} pool_t;

static void pool_set_free(pool_t *p, uint32_t node, uint16_t f)
{
    uint16_t old = p->freeg[node], cap = p->spec->node_gpus[node];
    if (old) {
        bits_clear(&p->level[old], node);
        p->level_n[old]--;
    }
    if (f) {
        bits_set(&p->level[f], node);
        p->level_n[f]++;
    }
    if (old == cap && f != cap) {
        bits_clear(&p->full, node);
        p->full_gpus -= cap;
    } else if (old != cap && f == cap) {
        bits_set(&p->full, node);
        p->full_gpus += cap;
    }
    p->busy = p->busy + old - f;
    p->freeg[node] = f;
}

/* ---- demand classes ----------------------------------------------------- */

typedef struct jclass {
    uint32_t gpus;           /* demand */
    uint64_t mask;           /* acceptable models, 0 = any */
    uint32_t per_node;       /* spw_job_t.gpus_per_node: 0 = one node only */
    uint32_t perf_cls;       /* governance class + 1 that rates GPUs its own
                                way (performance: classes:), else 0 */
    double *offer_speed;     /* per fleet offer, for perf_cls; NULL = the
                                engine's (owned) */
    double *pool_speed;      /* per fleet pool likewise */
    uint32_t profile;        /* governance profile: where its rules let it run */
    uint32_t data;           /* dataset + 1 it reads; 0 = none */
    uint32_t *pools;         /* eligible on-prem pools: fleet order, the pools
                                holding its data first under gravity */
    uint32_t npools;
    int never_onprem;        /* no eligible pool can ever hold it */
    uint32_t *offers;        /* allowed offers that can serve it, cheapest first */
    uint32_t noffers;
    int offer;               /* cheapest allowed offer, -1 = none */
    uint32_t instances;      /* instances of that offer */
    int spot;                /* its rules require spot capacity */
    int spot_ok;             /* its rules allow spot capacity */
    uint32_t *soffers;       /* allowed offers with a spot price, cheapest
                                spot first (= offers when spot is required) */
    uint32_t nsoffers;
    double max_boot_s;       /* slowest boot among its offers */
    double min_speed;        /* slowest GPU among its offers (spw_fleet_speed),
                                1 without offers: deadlines plan with it */
    spw_placement_t placement; /* from its rules */
    int any_offer;           /* some offer could serve it if its rules allowed */
    int denied;              /* its rules or residency took away some pool or
                                offer that could serve it */
    int same_boot;           /* its offers all boot equally fast: worst cases
                                then rise with the price */
    uint32_t team;           /* its team (index + 1) when fair share, quotas
                                or an egress cap split classes by team;
                                else 0 */
    spw_job_t *root;         /* treap of queued jobs */
    spw_job_t *head;         /* first job in queue order (cached) */
    size_t count;            /* queued jobs */
} jclass_t;

/* A running on-prem job in the EASY heap; the key is copied in so the
 * reservation walk does not chase job pointers. */
typedef struct runent {
    double end;      /* estimated end: start + est_runtime_s */
    uint32_t order;  /* tie-break */
    spw_job_t *job;
} runent_t;

typedef struct expiry {
    double t;        /* when the wait expires */
    uint32_t order;  /* tie-break */
    spw_job_t *job;
} expiry_t;

struct spw_engine {
    const spw_fleet_t *fleet;     /* borrowed */
    spw_policy_t policy;
    pool_t *pools;
    size_t npools;
    double *offer_speed;          /* per fleet offer: spw_fleet_speed of its GPU */
    double *pool_speed;           /* per fleet pool: likewise */
    jclass_t *cls;                /* demand classes */
    size_t ncls, capcls;
    uint32_t *cls_hash;           /* open addressing: class index + 1, 0 = empty */
    size_t hash_cap;
    expiry_t *exp;                /* min-heap of wait expiries (lazy deletion) */
    size_t nexp, capexp;
    runent_t *run;                /* min-heap of on-prem jobs by estimated end (EASY) */
    size_t nrun, caprun;
    uint32_t *aux;                /* scratch heap of run indices */
    size_t capaux;
    spw_job_t **burst;            /* jobs to burst at this instant */
    size_t nburst, capburst;
    spw_job_t **multi;            /* running jobs that hold a node list (freed on destroy) */
    size_t nmulti, capmulti;
    spw_job_t **placed;           /* placements of the current instant */
    size_t nplaced, capplaced;
    spw_job_t **rejected;         /* jobs rejected by a budget this instant */
    size_t nrejected, caprejected;
    spw_job_t **newheld;          /* jobs whose held count grew since the
                                     caller last asked (spw_engine_held) */
    size_t nnewheld, capnewheld;
    int newheld_read;             /* the caller has read newheld: the next
                                     hold starts a new list */
    spw_govrt_t *gov;             /* profiles, ledger, data caches */
    struct heldq *hq;             /* held bursts per team (0 = no team), each a
                                     heap in queue order */
    size_t nhq;
    size_t nheld;                 /* entries in all of them (stale ones too) */
    int held_dirty;               /* some team's money or a cap freed up */
    int org_freed;                /* an organisation cap freed up */
    double held_retry_at;         /* a budget period ends: retry the held then */
    uint32_t *spot_cap;           /* per offer: spot instances that can be held */
    uint32_t *held_inst[2];       /* per offer: instances held, [0] on demand, [1] spot */
    double *unavail_until[2];     /* per offer: capacity error backoff, per kind */
    spw_job_t **swait;            /* jobs waiting for spot or capacity (lazy) */
    size_t nswait, capswait;
    int spot_dirty;               /* capacity changed: retry them */
    struct odrun *od;             /* on-demand jobs that may move back to spot (lazy) */
    size_t nod, capod;
    double od_next;               /* earliest time one of them may move */
    int od_dirty;                 /* spot capacity freed or changed: look again */
    spw_job_t **sw;               /* jobs to move to spot, from the last schedule */
    size_t nsw, capsw;
    double swait_next;            /* earliest time a waiting job's choice changes */
    int commits;                  /* some offer is a commitment (spw_offer_committed):
                                     queued jobs fill it after each pass */
    int money_limits;             /* some budget or cap exists: cloud worst
                                     cases bind and max_runtime stops jobs */
    int egress_gate;              /* some team caps egress and some dataset
                                     exists: copies into pools wait for the
                                     cap (classes are split by team) */
    double pass_now;              /* engine seconds of the pass under way: the
                                     egress gate prices copies then */
    double egress_retry_at;       /* engine seconds: a calendar month ends
                                     while a copy waited for its team's egress
                                     cap: a pass then; INFINITY = none */
    uint32_t epoch;               /* EASY reservation counter (see pool_t.stamp) */
    size_t queued;
    int dirty;                    /* something changed since the last pass */
    uint64_t passes, reservations;
    spw_job_links_t **lchunk;     /* the links of jobs in the engine, in chunks */
    size_t nlchunk, caplchunk;
    spw_job_links_t **lfree;      /* free links (a stack) */
    size_t nlfree, caplfree;
    spw_fair_t *fair;             /* fair share and quotas (core/fair.c) */
    int by_team;                  /* queue: fair or quotas: classes per team */
    spw_job_t **recl;             /* victims to preempt now, from the last schedule */
    size_t nrecl;
    struct predict *pr;           /* predict:K: jobs to predict and scratch
                                     (NULL under every other wait rule) */
};

/* A job waiting for spot or cloud capacity is looked at again no sooner
 * than this after the last look (seconds), so that a threshold reached in
 * rounding dust cannot spin the engine.  The spot policies count it as the
 * step between two decisions in their Safety Net slack. */
#define RELOOK_S 1e-3

#define GROW(arr, n, cap)                                                     \
    do {                                                                      \
        if ((n) == (cap)) {                                                   \
            (cap) = (cap) ? (cap) * 2 : 64;                                   \
            (arr) = spw_xrealloc((arr), (cap) * sizeof(*(arr)));              \
        }                                                                     \
    } while (0)

/* ---- job links ------------------------------------------------------------ */

/* A job's links exist from submit (or restore) to its final state, so the
 * engine's memory follows the jobs it holds, not every job it has seen.
 * Taken from chunks the engine owns; a job that leaves has l = NULL, so a
 * stale reference to it cannot reach another job's links. */
#define LINKS_PER_CHUNK 1024

static void links_take(spw_engine_t *e, spw_job_t *j)
{
    if (!e->nlfree) {
        GROW(e->lchunk, e->nlchunk, e->caplchunk);
        spw_job_links_t *c = spw_xmalloc(LINKS_PER_CHUNK * sizeof(*c));
        e->lchunk[e->nlchunk++] = c;
        if (e->caplfree < LINKS_PER_CHUNK) {
            e->caplfree = LINKS_PER_CHUNK;
            e->lfree = spw_xrealloc(e->lfree, e->caplfree * sizeof(*e->lfree));
        }
        for (size_t i = 0; i < LINKS_PER_CHUNK; i++)
            e->lfree[e->nlfree++] = &c[LINKS_PER_CHUNK - 1 - i];
    }
    spw_job_links_t *l = e->lfree[--e->nlfree];
    memset(l, 0, sizeof(*l));
    j->l = l;
}

/* Job j leaves the engine for good (done, cancelled, failed, rejected or
 * unschedulable). */
static void links_drop(spw_engine_t *e, spw_job_t *j)
{
    if (!j->l)
        return;
    GROW(e->lfree, e->nlfree, e->caplfree);
    e->lfree[e->nlfree++] = j->l;
    j->l = NULL;
}

/* ---- queue key and treap ----------------------------------------------- */

static inline double key1(const spw_engine_t *e, const spw_job_t *j)
{
    switch (e->policy.queue) {
    case SPW_QUEUE_SJF: return j->est_runtime_s;
    case SPW_QUEUE_PRIORITY: return -(double)j->priority;
    default: return 0;
    }
}

/* Queue order: policy key, then submit time, then the caller's order. */
static inline int job_before(const spw_engine_t *e, const spw_job_t *a, const spw_job_t *b)
{
    double ka = key1(e, a), kb = key1(e, b);
    if (ka != kb)
        return ka < kb;
    if (a->submit_s != b->submit_s)
        return a->submit_s < b->submit_s;
    return a->order < b->order;
}

static inline double min_est(const spw_job_t *t)
{
    return t ? t->l->min_est_s : INFINITY;
}

static inline void treap_update(spw_job_t *t)
{
    double m = t->est_runtime_s, a = min_est(t->l->left), b = min_est(t->l->right);
    t->l->min_est_s = m < a ? (m < b ? m : b) : (a < b ? a : b);
}

static spw_job_t *treap_insert(const spw_engine_t *e, spw_job_t *t, spw_job_t *j)
{
    if (!t)
        return j;
    if (job_before(e, j, t)) {
        t->l->left = treap_insert(e, t->l->left, j);
        if (t->l->left->l->prio > t->l->prio) {
            spw_job_t *l = t->l->left;
            t->l->left = l->l->right;
            l->l->right = t;
            treap_update(t);
            t = l;
        }
    } else {
        t->l->right = treap_insert(e, t->l->right, j);
        if (t->l->right->l->prio > t->l->prio) {
            spw_job_t *r = t->l->right;
            t->l->right = r->l->left;
            r->l->left = t;
            treap_update(t);
            t = r;
        }
    }
    treap_update(t);
    return t;
}

static spw_job_t *treap_merge(spw_job_t *a, spw_job_t *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (a->l->prio > b->l->prio) {
        a->l->right = treap_merge(a->l->right, b);
        treap_update(a);
        return a;
    }
    b->l->left = treap_merge(a, b->l->left);
    treap_update(b);
    return b;
}

static spw_job_t *treap_remove(const spw_engine_t *e, spw_job_t *t, spw_job_t *j)
{
    if (!t)
        return NULL;
    if (t == j) {
        spw_job_t *m = treap_merge(t->l->left, t->l->right);
        j->l->left = j->l->right = NULL;
        return m;
    }
    if (job_before(e, j, t))
        t->l->left = treap_remove(e, t->l->left, j);
    else
        t->l->right = treap_remove(e, t->l->right, j);
    treap_update(t);
    return t;
}

static spw_job_t *treap_first(spw_job_t *t)
{
    while (t && t->l->left)
        t = t->l->left;
    return t;
}

/* First job in queue order whose estimate is at most `limit`, or NULL. */
static spw_job_t *treap_first_short(spw_job_t *t, double limit)
{
    while (t) {
        if (min_est(t->l->left) <= limit)
            t = t->l->left;
        else if (t->est_runtime_s <= limit)
            return t;
        else if (min_est(t->l->right) <= limit)
            t = t->l->right;
        else
            return NULL;
    }
    return NULL;
}

static uint32_t hash32(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static void queue_add(spw_engine_t *e, jclass_t *c, spw_job_t *j)
{
    j->l->left = j->l->right = NULL;
    j->l->prio = hash32(j->order);
    j->l->min_est_s = j->est_runtime_s;
    c->root = treap_insert(e, c->root, j);
    if (!c->head || job_before(e, j, c->head))
        c->head = j;
    c->count++;
}

static void queue_del(spw_engine_t *e, jclass_t *c, spw_job_t *j)
{
    c->root = treap_remove(e, c->root, j);
    c->count--;
    if (c->head == j)
        c->head = treap_first(c->root);
}

/* ---- classes -------------------------------------------------------------- */

static int pool_accepts(const spw_engine_t *e, const pool_t *p, uint64_t mask)
{
    const spw_models_t *m = &e->fleet->models;
    if (mask == 0 || p->spec->model < 0)
        return 1;
    for (int k = 0; k < m->n; k++)
        if ((mask >> k & 1) && spw_model_accepts(m->name[k], m->name[p->spec->model]))
            return 1;
    return 0;
}

static int offer_accepts(const spw_engine_t *e, const spw_offer_t *o, uint64_t mask)
{
    const spw_models_t *m = &e->fleet->models;
    if (mask == 0 || o->model < 0)
        return 1;
    for (int k = 0; k < m->n; k++)
        if ((mask >> k & 1) && spw_model_accepts(m->name[k], m->name[o->model]))
            return 1;
    return 0;
}

/* Price per hour of the instances an offer needs for gpus GPUs. */
static double offer_usd_h(const spw_offer_t *o, uint32_t gpus, int spot)
{
    uint32_t inst = (gpus + o->gpus - 1) / o->gpus;
    return inst * (spot ? o->spot_usd_per_h : o->ondemand_usd_per_h);
}

/* Data transfer seconds and egress for job data `data` (+1) at a place. */
static double data_cost(const spw_engine_t *e, uint32_t data, int pool, int offer, double now,
                        double *gb, double *transfer_s)
{
    *gb = *transfer_s = 0;
    if (!data)
        return 0;
    return spw_govrt_data_cost(e->gov, (int)data - 1, pool, offer, now, gb, transfer_s);
}

/* Speed of offer oi / pool pi for class c. */
static inline double c_offer_speed(const spw_engine_t *e, const jclass_t *c, uint32_t oi)
{
    return c->offer_speed ? c->offer_speed[oi] : e->offer_speed[oi];
}

static inline double c_pool_speed(const spw_engine_t *e, const jclass_t *c, uint32_t pi)
{
    return c->pool_speed ? c->pool_speed[pi] : e->pool_speed[pi];
}

/* What one unit of work costs on offer o for class c, per hour of the
 * reference GPU: its price per hour over its speed.  Offers are ranked by
 * it, so the cheapest offer is the cheapest for the work, not per hour. */
static double offer_work_usd_h(const spw_engine_t *e, const jclass_t *c, uint32_t oi, int spot)
{
    return offer_usd_h(&e->fleet->offers[oi], c->gpus, spot) / c_offer_speed(e, c, oi);
}

/* Sorts v[0..n) by offer_work_usd_h, then index (a stable merge sort with
 * its context passed in: engines may run in parallel threads). */
static void sort_offers(const spw_engine_t *e, const jclass_t *c, uint32_t *v, uint32_t n,
                        int spot)
{
    if (n < 2)
        return;
    double *key = spw_xmalloc(n * sizeof(double));
    uint32_t *tmp = spw_xmalloc(n * sizeof(uint32_t));
    double *ktmp = spw_xmalloc(n * sizeof(double));
    for (uint32_t i = 0; i < n; i++)
        key[i] = offer_work_usd_h(e, c, v[i], spot);
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t a = lo, b = mid, k = lo;
            while (a < mid || b < hi) {
                int take_a = b >= hi || (a < mid && (key[a] < key[b] ||
                                                     (key[a] == key[b] && v[a] <= v[b])));
                uint32_t from = take_a ? a++ : b++;
                tmp[k] = v[from];
                ktmp[k++] = key[from];
            }
        }
        memcpy(v, tmp, n * sizeof(uint32_t));
        memcpy(key, ktmp, n * sizeof(double));
    }
    free(key);
    free(tmp);
    free(ktmp);
}

/* Whether offer o can hold class c's gang: one instance with all its GPUs;
 * several only when the job may span nodes of at least per_node GPUs
 * (instances of one offer are in one zone).  A flat-price offer (no GPU
 * model: the simulator's price model, not real instances) is priced per
 * GPU and takes any job. */
static int offer_fits_gang(const spw_offer_t *o, const jclass_t *c)
{
    if (o->model < 0 || c->gpus <= o->gpus)
        return 1;
    return c->per_node > 0 && o->gpus >= c->per_node;
}

static int bit(const uint64_t *set, size_t i)
{
    return (int)(set[i >> 6] >> (i & 63) & 1);
}

/* GPUs of pool p as configured, nodes out of service included: whether a
 * job can ever fit on-prem is judged on these, so a node down or drained
 * when a job arrives makes it wait rather than fail or burst for good. */
static uint64_t pool_configured_gpus(const pool_t *p)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < p->n; k++)
        n += p->spec->node_gpus[k];
    return n;
}

static void class_setup(spw_engine_t *e, jclass_t *c)
{
    const spw_profile_t *pr = spw_govrt_profile(e->gov, c->profile);
    c->placement = pr->placement;
    c->spot = pr->spot == SPW_SPOT_REQUIRED;
    c->spot_ok = pr->spot != SPW_SPOT_NEVER;
    c->pools = spw_xmalloc((e->npools ? e->npools : 1) * sizeof(uint32_t));
    c->npools = 0;
    c->never_onprem = 1;
    /* Under gravity the pools that hold the data come first, so first fit
     * and the pass try them before paying a transfer. */
    for (int local = 1; local >= 0; local--) {
        for (size_t i = 0; i < e->npools; i++) {
            pool_t *p = &e->pools[i];
            if (!pool_accepts(e, p, c->mask))
                continue;
            if (!bit(pr->pools, i)) {
                c->denied |= local && (c->gpus <= p->maxcap ||
                                       c->gpus <= pool_configured_gpus(p));
                continue;
            }
            double gb, tr;
            int here = !c->data || !e->policy.gravity ||
                       (data_cost(e, c->data, (int)i, -1, 0, &gb, &tr) == 0 && tr == 0);
            if (here != local)
                continue;
            c->pools[c->npools++] = (uint32_t)i;
            if (c->gpus <= p->maxcap || c->gpus <= pool_configured_gpus(p))
                c->never_onprem = 0;
        }
    }
    c->offer = -1;
    c->noffers = 0;
    c->any_offer = 0;
    c->offers = spw_xmalloc((e->fleet->noffers ? e->fleet->noffers : 1) * sizeof(uint32_t));
    /* Under `wait: never` nothing goes to the cloud, not even a job that
     * can never fit on-prem: that one is unschedulable. */
    size_t noffers = e->policy.wait.kind == SPW_WAIT_NEVER ? 0 : e->fleet->noffers;
    for (size_t i = 0; i < noffers; i++) {
        const spw_offer_t *o = &e->fleet->offers[i];
        if (!offer_accepts(e, o, c->mask) || !offer_fits_gang(o, c))
            continue;
        c->any_offer = 1;
        if (bit(pr->offers, i) && !isnan(offer_usd_h(o, c->gpus, c->spot)))
            c->offers[c->noffers++] = (uint32_t)i;
        else
            c->denied = 1;
    }
    sort_offers(e, c, c->offers, c->noffers, c->spot);
    /* The offers it may buy spot on, cheapest spot first. */
    c->soffers = spw_xmalloc((c->noffers ? c->noffers : 1) * sizeof(uint32_t));
    c->nsoffers = 0;
    c->max_boot_s = 0;
    c->min_speed = c->noffers ? INFINITY : 1;
    for (uint32_t k = 0; k < c->noffers; k++) {
        const spw_offer_t *o = &e->fleet->offers[c->offers[k]];
        if (c_offer_speed(e, c, c->offers[k]) < c->min_speed)
            c->min_speed = c_offer_speed(e, c, c->offers[k]);
        if (c->spot_ok && !isnan(offer_usd_h(o, c->gpus, 1)))
            c->soffers[c->nsoffers++] = c->offers[k];
        if (o->boot_delay_s > c->max_boot_s)
            c->max_boot_s = o->boot_delay_s;
    }
    sort_offers(e, c, c->soffers, c->nsoffers, 1);
    c->same_boot = 1;
    for (uint32_t k = 1; k < c->noffers; k++)
        c->same_boot &= e->fleet->offers[c->offers[k]].boot_delay_s ==
                        e->fleet->offers[c->offers[0]].boot_delay_s;
    if (c->noffers) {
        const spw_offer_t *o = &e->fleet->offers[c->offers[0]];
        c->offer = (int)c->offers[0];
        c->instances = (c->gpus + o->gpus - 1) / o->gpus;
    }
}

static inline uint64_t class_key(uint32_t gpus, uint64_t mask, uint32_t profile, uint32_t data)
{
    return ((uint64_t)gpus * 0x9E3779B97F4A7C15ULL ^ mask) +
           ((uint64_t)profile << 32 | data) * 0xC2B2AE3D27D4EB4FULL;
}

static uint32_t class_of(spw_engine_t *e, uint32_t gpus, uint64_t mask, uint32_t profile,
                         uint32_t data, uint32_t per_node, uint32_t perf_cls, uint32_t team)
{
    size_t i = hash32(class_key(gpus, mask, profile, data) ^ per_node ^ (uint64_t)perf_cls << 32 ^
                      (uint64_t)team << 48) & (e->hash_cap - 1);
    for (;; i = (i + 1) & (e->hash_cap - 1)) {
        uint32_t v = e->cls_hash[i];
        if (!v)
            break;
        jclass_t *c = &e->cls[v - 1];
        if (c->gpus == gpus && c->mask == mask && c->profile == profile && c->data == data &&
            c->per_node == per_node && c->perf_cls == perf_cls && c->team == team)
            return v - 1;
    }
    GROW(e->cls, e->ncls, e->capcls);
    jclass_t *c = &e->cls[e->ncls];
    memset(c, 0, sizeof(*c));
    c->gpus = gpus;
    c->mask = mask;
    c->per_node = per_node;
    c->perf_cls = perf_cls;
    if (perf_cls) {
        const spw_fleet_t *f = e->fleet;
        c->offer_speed = spw_xmalloc((f->noffers ? f->noffers : 1) * sizeof(double));
        for (size_t k = 0; k < f->noffers; k++)
            c->offer_speed[k] = spw_fleet_class_speed(f, perf_cls, f->offers[k].model);
        c->pool_speed = spw_xmalloc((f->npools ? f->npools : 1) * sizeof(double));
        for (size_t k = 0; k < f->npools; k++)
            c->pool_speed[k] =
                f->perf.scale_pools ? spw_fleet_class_speed(f, perf_cls, f->pools[k].model) : 1;
    }
    c->profile = profile;
    c->data = data;
    c->team = team;
    class_setup(e, c);
    e->cls_hash[i] = (uint32_t)++e->ncls;
    if (e->ncls * 2 > e->hash_cap) {
        /* Rehash into a table twice the size. */
        size_t cap = e->hash_cap * 2;
        uint32_t *h = spw_xcalloc(cap, sizeof(uint32_t));
        for (size_t k = 0; k < e->ncls; k++) {
            const jclass_t *ck = &e->cls[k];
            size_t s = hash32(class_key(ck->gpus, ck->mask, ck->profile, ck->data) ^
                              ck->per_node ^ (uint64_t)ck->perf_cls << 32 ^
                              (uint64_t)ck->team << 48) & (cap - 1);
            while (h[s])
                s = (s + 1) & (cap - 1);
            h[s] = (uint32_t)(k + 1);
        }
        free(e->cls_hash);
        e->cls_hash = h;
        e->hash_cap = cap;
    }
    return (uint32_t)(e->ncls - 1);
}

/* The class of job j, its profile computed from its attributes. */
static uint32_t job_class(spw_engine_t *e, const spw_job_t *j)
{
    return class_of(e, j->gpus, j->gpu_mask, spw_govrt_profile_of(e->gov, j), j->data,
                    j->gpus_per_node, spw_fleet_perf_class(e->fleet, j->jclass) ? j->jclass : 0,
                    e->by_team || e->egress_gate ? j->team : 0);
}

/* ---- placement ----------------------------------------------------------- */

/* Where a job of class c would go now: pool and node (single-node) or pool
 * only (multi-node: whole free nodes, lowest index first).  -1 if nowhere. */
typedef struct place {
    int pool;       /* pool index, -1 = does not fit */
    uint32_t node;  /* node for a single-node job */
    int multi;      /* takes whole nodes */
} place_t;

/* Dollars by which copying class c's data into pool `pool` at now would
 * overshoot its team's egress cap (left gets what the cap has left, usd
 * the copy's price); 0 when it fits, or without a cap, data or copy. */
static double copy_over(const spw_engine_t *e, const jclass_t *c, uint32_t pool, double now,
                        double *left, double *usd)
{
    *left = INFINITY;
    *usd = 0;
    if (!e->egress_gate || !c->data || !c->team)
        return 0;
    *left = spw_govrt_egress_left(e->gov, (int)c->team - 1, now);
    if (!isfinite(*left))
        return 0;
    double gb, tr;
    *usd = data_cost(e, c->data, (int)pool, -1, now, &gb, &tr);
    return *usd > *left + 1e-9 ? *usd - *left : 0;
}

/* Whether class c's head may have its data copied into pool `pool` in the
 * pass under way (docs/governance.md: every egress dollar counts against
 * the team's cap).  A refusal asks for a pass when the month ends. */
static int copy_fits(spw_engine_t *e, const jclass_t *c, uint32_t pool)
{
    double left, usd;
    if (copy_over(e, c, pool, e->pass_now, &left, &usd) <= 0)
        return 1;
    if (usd > e->fleet->gov.teams[c->team - 1].max_egress_usd_per_month + 1e-9)
        return 0;                /* over the whole cap: no month will do */
    double origin = e->fleet->gov.origin_s;
    double end = spw_period_end(SPW_PERIOD_MONTH, origin + e->pass_now) - origin;
    if (end < e->egress_retry_at)
        e->egress_retry_at = end;
    return 0;
}

static spw_fair_tier_t class_tier(const spw_engine_t *e, const jclass_t *c);

/* Whether class c's jobs may start in pool `pool` as far as its team's
 * per-pool quota parts go: only in the pools of its best tier (work that
 * fits a part it has idle goes there, not to borrow elsewhere; without
 * parts every pool is alike and head_ok decides). */
static int pool_quota_fits(const spw_engine_t *e, const jclass_t *c, uint32_t pool)
{
    return !spw_fair_quotas(e->fair) || !spw_fair_parts(e->fair, c->team) ||
           spw_fair_tier_in(e->fair, c->team, c->gpus, (int)pool) == class_tier(e, c);
}

static place_t find_place(spw_engine_t *e, const jclass_t *c)
{
    place_t best = {.pool = -1, .node = 0, .multi = 0};
    uint32_t best_level = UINT32_MAX;
    uint32_t g = c->gpus;
    for (uint32_t k = 0; k < c->npools; k++) {
        const pool_t *p = &e->pools[c->pools[k]];
        if (!copy_fits(e, c, c->pools[k]) || !pool_quota_fits(e, c, c->pools[k]))
            continue;
        if (g > p->maxcap) {
            if (p->full_gpus >= g && best.pool < 0) {
                best.pool = (int)c->pools[k];
                best.multi = 1;
                if (e->policy.fit == SPW_FIT_FIRST)
                    return best;
                best_level = UINT32_MAX - 1;   /* any single-node fit is better */
            }
            continue;
        }
        if (e->policy.fit == SPW_FIT_FIRST) {
            uint32_t lo = UINT32_MAX;
            for (uint32_t f = g; f <= p->maxcap; f++)
                if (p->level_n[f]) {
                    uint32_t n = bits_next(&p->level[f], 0);
                    if (n < lo)
                        lo = n;
                }
            if (lo != UINT32_MAX) {
                best.pool = (int)c->pools[k];
                best.node = lo;
                best.multi = 0;
                return best;
            }
        } else {
            for (uint32_t f = g; f <= p->maxcap && f < best_level; f++)
                if (p->level_n[f]) {
                    best_level = f;
                    best.pool = (int)c->pools[k];
                    best.node = bits_next(&p->level[f], 0);
                    best.multi = 0;
                    break;
                }
        }
    }
    return best;
}

static inline int class_fits(spw_engine_t *e, const jclass_t *c)
{
    uint32_t g = c->gpus;
    for (uint32_t k = 0; k < c->npools; k++) {
        const pool_t *p = &e->pools[c->pools[k]];
        if (!copy_fits(e, c, c->pools[k]) || !pool_quota_fits(e, c, c->pools[k]))
            continue;
        if (g > p->maxcap) {
            if (p->full_gpus >= g)
                return 1;
            continue;
        }
        for (uint32_t f = g; f <= p->maxcap; f++)
            if (p->level_n[f])
                return 1;
    }
    return 0;
}

/* ---- running heap (EASY) --------------------------------------------------- */

/* Work seconds per wall-clock second of j's current placement. */
static inline double job_speed(const spw_job_t *j)
{
    return j->speed > 0 ? j->speed : 1;
}

/* Work an attempt of j still plans to do: its estimate less what earlier
 * attempts kept, never below 0. */
static inline double est_left(const spw_job_t *j)
{
    double left = j->est_runtime_s - spw_job_rare(j)->done_s;
    return left > 0 ? left : 0;
}

static inline double est_end(const spw_engine_t *e, const spw_job_t *j)
{
    return j->start_s + spw_engine_overhead_s(e, j) + est_left(j) / job_speed(j);
}

/* The running heap serves EASY reservations and predict:K's projection. */
static inline int keeps_run_heap(const spw_engine_t *e)
{
    return e->policy.backfill == SPW_BACKFILL_EASY || e->policy.wait.kind == SPW_WAIT_PREDICT;
}

static inline int run_before(const runent_t *a, const runent_t *b)
{
    return a->end != b->end ? a->end < b->end : a->order < b->order;
}

static void run_swap(spw_engine_t *e, size_t a, size_t b)
{
    runent_t t = e->run[a];
    e->run[a] = e->run[b];
    e->run[b] = t;
    e->run[a].job->l->run_idx = (uint32_t)a;
    e->run[b].job->l->run_idx = (uint32_t)b;
}

static void run_up(spw_engine_t *e, size_t i)
{
    while (i && run_before(&e->run[i], &e->run[(i - 1) / 2])) {
        run_swap(e, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void run_down(spw_engine_t *e, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->nrun && run_before(&e->run[l], &e->run[m]))
            m = l;
        if (r < e->nrun && run_before(&e->run[r], &e->run[m]))
            m = r;
        if (m == i)
            return;
        run_swap(e, i, m);
        i = m;
    }
}

static void run_push(spw_engine_t *e, spw_job_t *j)
{
    GROW(e->run, e->nrun, e->caprun);
    e->run[e->nrun] = (runent_t){.end = est_end(e, j), .order = j->order, .job = j};
    j->l->run_idx = (uint32_t)e->nrun;
    run_up(e, e->nrun++);
}

static void run_del(spw_engine_t *e, spw_job_t *j)
{
    size_t i = j->l->run_idx;
    if (i >= e->nrun || e->run[i].job != j)
        return;
    e->nrun--;
    if (i != e->nrun) {
        e->run[i] = e->run[e->nrun];
        e->run[i].job->l->run_idx = (uint32_t)i;
        run_down(e, i);
        run_up(e, i);
    }
}

/* ---- expiry heap --------------------------------------------------------- */

static inline int exp_before(const expiry_t *a, const expiry_t *b)
{
    return a->t != b->t ? a->t < b->t : a->order < b->order;
}

static void exp_insert(spw_engine_t *e, expiry_t x)
{
    GROW(e->exp, e->nexp, e->capexp);
    size_t i = e->nexp++;
    while (i && exp_before(&x, &e->exp[(i - 1) / 2])) {
        e->exp[i] = e->exp[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->exp[i] = x;
}

static void exp_push(spw_engine_t *e, spw_job_t *j)
{
    exp_insert(e, (expiry_t){.t = j->l->burst_at_s, .order = j->order, .job = j});
}

static void exp_pop(spw_engine_t *e)
{
    expiry_t x = e->exp[--e->nexp];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = l;
        if (l >= e->nexp)
            break;
        if (r < e->nexp && exp_before(&e->exp[r], &e->exp[l]))
            m = r;
        if (!exp_before(&e->exp[m], &x))
            break;
        e->exp[i] = e->exp[m];
        i = m;
    }
    if (e->nexp)
        e->exp[i] = x;
}

/* Drops heap entries whose job is no longer waiting. */
static void exp_clean(spw_engine_t *e)
{
    while (e->nexp) {
        const expiry_t *x = &e->exp[0];
        if (x->job->state == SPW_JOB_QUEUED && x->job->l->burst_at_s == x->t)
            return;
        exp_pop(e);
    }
}

/* ---- starting jobs ------------------------------------------------------- */

static void note_placed(spw_engine_t *e, spw_job_t *j)
{
    GROW(e->placed, e->nplaced, e->capplaced);
    e->placed[e->nplaced++] = j;
}

/* Takes the GPUs of place pl for job j of class c (not queued any more). */
static void take_onprem(spw_engine_t *e, const jclass_t *c, spw_job_t *j, place_t pl)
{
    pool_t *p = &e->pools[pl.pool];
    j->pool = pl.pool;
    if (!pl.multi) {
        j->node = (int32_t)pl.node;
        j->nnodes = 1;
        j->alloc_gpus = c->gpus;
        pool_set_free(p, pl.node, (uint16_t)(p->freeg[pl.node] - c->gpus));
    } else {
        uint32_t cnt = 0, got = 0, cap = 8;
        uint32_t *nodes = spw_xmalloc(cap * sizeof(uint32_t));
        for (uint32_t n = bits_next(&p->full, 0); got < c->gpus; n = bits_next(&p->full, n + 1)) {
            if (cnt == cap) {
                cap *= 2;
                nodes = spw_xrealloc(nodes, cap * sizeof(uint32_t));
            }
            nodes[cnt++] = n;
            got += p->spec->node_gpus[n];
        }
        for (uint32_t k = 0; k < cnt; k++)
            pool_set_free(p, nodes[k], 0);
        j->l->nodes = nodes;
        GROW(e->multi, e->nmulti, e->capmulti);
        j->l->multi_idx = (uint32_t)e->nmulti;
        e->multi[e->nmulti++] = j;
        j->node = (int32_t)nodes[0];
        j->nnodes = cnt;
        j->alloc_gpus = got;
    }
    if (keeps_run_heap(e))
        run_push(e, j);
    spw_fair_start(e->fair, j, j->alloc_gpus, j->placed_s);
}

static void start_onprem(spw_engine_t *e, jclass_t *c, spw_job_t *j, place_t pl,
                         spw_reason_t why, double now)
{
    queue_del(e, c, j);
    e->queued--;
    j->state = SPW_JOB_ONPREM;
    j->speed = c_pool_speed(e, c, (uint32_t)pl.pool);
    /* Data from elsewhere is copied first: the GPUs are held meanwhile.
     * Egress into on-prem is paid at once and counts against the team's
     * egress cap (the pass made sure it fits); the budgets gate cloud
     * placements only (docs/governance.md). */
    double gb, tr;
    double egress = data_cost(e, j->data, pl.pool, -1, now, &gb, &tr);
    j->placed_s = now;
    j->start_s = now + tr;
    if (tr != 0 || egress != 0 || gb != 0 || j->rare) {
        /* A job that moves no data keeps no side record (model.h). */
        spw_job_rare_t *x = spw_job_rare_w(j);
        x->transfer_s = tr;
        x->egress_usd += egress;
        x->onprem_egress_usd += egress;
        x->egress_gb += gb;
    }
    j->cost_usd += egress;
    spw_govrt_egress_paid(e->gov, (int)j->team - 1, now, egress);
    if (gb > 0)
        spw_govrt_data_placed(e->gov, (int)j->data - 1, pl.pool, -1, now);
    take_onprem(e, c, j, pl);
    j->reason = why;
    note_placed(e, j);
}

/* ---- cloud placements and money --------------------------------------------- */

/* One offer priced for one job: what it would hold and how long data takes. */
typedef struct cloud_pick {
    uint32_t offer;
    uint32_t inst;           /* instances */
    int spot;                /* on spot capacity */
    spw_charge_t ch;         /* worst case against budgets and caps */
    double gb, transfer_s;   /* data to move first */
} cloud_pick_t;

/* Seconds a cloud placement may bill besides boot and data transfer. */
static double worst_run_s(const spw_engine_t *e, const spw_job_t *j)
{
    double mr = j->max_runtime_s > 0 ? j->max_runtime_s : e->fleet->gov.default_max_runtime_s;
    return mr + e->policy.reserve_extra_s;
}

/* Prices offer oi for job j of class c at now into *pk, on spot capacity or
 * on demand; returns the rank the engine minimises: expected compute, plus
 * egress under gravity. */
static double pick_eval(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j, uint32_t oi,
                        int spot, double now, cloud_pick_t *pk)
{
    const spw_offer_t *o = &e->fleet->offers[oi];
    pk->offer = oi;
    pk->inst = (c->gpus + o->gpus - 1) / o->gpus;
    pk->spot = spot;
    double usd_h = offer_usd_h(o, c->gpus, spot);
    double egress = data_cost(e, c->data, -1, (int)oi, now, &pk->gb, &pk->transfer_s);
    pk->ch.usd = usd_h * (o->boot_delay_s + pk->transfer_s + worst_run_s(e, j)) / 3600.0;
    pk->ch.egress_usd = egress;
    pk->ch.usd_per_h = usd_h;
    /* Committed GPUs are paid anyway: outside every cap (their price, 0
     * here, keeps them out of budgets and spend rates). */
    pk->ch.gpus = spw_offer_committed(o) ? 0 : (double)pk->inst * o->gpus;
    /* Expected compute: the estimate runs at this offer's GPU speed. */
    double rank = usd_h * j->est_runtime_s / c_offer_speed(e, c, oi) / 3600.0;
    return e->policy.gravity ? rank + egress : rank;
}

/* Whether `inst` more instances of offer oi (spot or not) can be had now:
 * spot capacity left, room in a commitment, and no capacity error backing
 * off. */
static int has_capacity(const spw_engine_t *e, uint32_t oi, int spot, uint32_t inst, double now)
{
    if (now < e->unavail_until[spot][oi])
        return 0;
    const spw_offer_t *o = &e->fleet->offers[oi];
    if (spw_offer_committed(o))
        return !spot && e->held_inst[0][oi] + inst <= o->commit_gpus / o->gpus;
    if (!spot || e->spot_cap[oi] == UINT32_MAX)
        return 1;
    uint32_t held = e->held_inst[1][oi];
    return held <= e->spot_cap[oi] && e->spot_cap[oi] - held >= inst;
}

/* How long job j may run on a cloud placement: its max_runtime, else under
 * a budget or cap the governance default; INFINITY when nothing bounds it
 * (spw_engine_max_runtime of a cloud job). */
static double cloud_max_run_s(const spw_engine_t *e, const spw_job_t *j)
{
    if (j->max_runtime_s > 0)
        return j->max_runtime_s;
    return e->money_limits ? e->fleet->gov.default_max_runtime_s : INFINITY;
}

/* Whether job j of class c can finish on offer oi placed at now. */
typedef enum finish {
    FIN_OK,          /* it can */
    FIN_MAX_RUN,     /* its work left at that GPU's speed, after a new
                        instance's restart overhead, is over the time it may
                        run: it would be stopped unfinished after paying */
    FIN_DEADLINE,    /* it would end after its deadline */
} finish_t;

/* Whether job j of class c can finish on offer oi placed at now; *run_s
 * (if not NULL) receives the seconds it would run there and *end_s the
 * time it would end (data transfer not counted). */
static finish_t offer_finish(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                             uint32_t oi, double now, double *run_s, double *end_s)
{
    double run = e->policy.restart_overhead_s + est_left(j) / c_offer_speed(e, c, oi);
    double end = now + e->fleet->offers[oi].boot_delay_s + run;
    if (run_s)
        *run_s = run;
    if (end_s)
        *end_s = end;
    if (run > cloud_max_run_s(e, j))
        return FIN_MAX_RUN;
    if (isfinite(j->deadline_s) && end > j->deadline_s)
        return FIN_DEADLINE;
    return FIN_OK;
}

/* Whether some offer of list[0..n) can finish job j of class c in time
 * when placed at now (only those with capacity when cap is set). */
static int some_offer_in_time(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                              const uint32_t *list, uint32_t n, int spot, double now, int cap)
{
    for (uint32_t k = 0; k < n; k++) {
        const spw_offer_t *o = &e->fleet->offers[list[k]];
        if ((!cap || has_capacity(e, list[k], spot, (c->gpus + o->gpus - 1) / o->gpus, now)) &&
            offer_finish(e, c, j, list[k], now, NULL, NULL) == FIN_OK)
            return 1;
    }
    return 0;
}

/* Whether offer oi is excluded for job j: it could not finish within the
 * time it may run, or it would miss its deadline while another offer of
 * the list meets it (late_ok: none does, so lateness does not exclude). */
static int offer_excluded(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                          uint32_t oi, double now, int late_ok)
{
    finish_t f = offer_finish(e, c, j, oi, now, NULL, NULL);
    return f == FIN_MAX_RUN || (f == FIN_DEADLINE && !late_ok);
}

static int same_region(const spw_offer_t *a, const spw_offer_t *b)
{
    return strcmp(a->provider, b->provider) == 0 && strcmp(a->region, b->region) == 0;
}

/* Recovery preference of offer oi for a job that lost offer j->last_offer
 * to a preemption: 0 first, then 1, then 2.  same_region_first: that offer,
 * its region, the rest; next_region: other regions, then its region. */
static int recovery_tier(const spw_engine_t *e, const spw_job_t *j, uint32_t oi)
{
    int32_t last = spw_job_rare(j)->last_offer;
    if (last < 0 || (size_t)last >= e->fleet->noffers)
        return 0;
    const spw_offer_t *lost = &e->fleet->offers[last], *o = &e->fleet->offers[oi];
    int same = same_region(lost, o);
    if (e->policy.recovery == SPW_RECOVERY_NEXT_REGION)
        return same;
    return (int)oi == spw_job_rare(j)->last_offer ? 0 : same ? 1 : 2;
}

/* Why pick_offer found no offer, besides budgets and caps. */
enum { NONE_CAP = 1,      /* no offer it may buy has capacity now */
       NONE_FINISH = 2 }; /* none could finish its work within its max runtime */

/* Picks the cloud offer for job j, on spot capacity or on demand: the
 * lowest rank among the offers its rules allow, with capacity now, on
 * which it can finish (offer_excluded: within the time it may run, and by
 * its deadline when some offer meets it), whose worst case fits every
 * budget and cap (after a preemption, the recovery preference comes before
 * the rank).  Returns SPW_ADMIT_OK with *out; SPW_ADMIT_NEVER when no
 * allowed offer could fit even with nothing else spent (*none, if not
 * NULL, is then NONE_CAP when none has capacity, NONE_FINISH when none
 * could finish, else 0); else the refusal of the best-ranked offer that
 * could (why, if not NULL, says it). */
static spw_admit_t pick_offer(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                              int spot, double now, cloud_pick_t *out, char *why, size_t len,
                              int *none)
{
    int team = (int)j->team - 1;
    double best = INFINITY, best_refused = INFINITY;
    spw_admit_t refusal = SPW_ADMIT_NEVER;
    int found = 0, skipped = 0;
    /* Offers are sorted by price: without data to weigh, the first one
     * admitted is the best; a refusal by spend rate holds for every dearer
     * offer, and so does a budget's when they all boot alike. */
    int sorted = (!c->data || !e->policy.gravity) && spw_job_rare(j)->last_offer < 0;
    const uint32_t *list = spot ? c->soffers : c->offers;
    uint32_t nlist = spot ? c->nsoffers : c->noffers;
    int late_ok = !isfinite(j->deadline_s) ||
                  !some_offer_in_time(e, c, j, list, nlist, spot, now, 1);
    int unfinished = 0;
    for (uint32_t k = 0; k < nlist; k++) {
        cloud_pick_t pk;
        if (!has_capacity(e, list[k], spot, (c->gpus + e->fleet->offers[list[k]].gpus - 1) /
                                                e->fleet->offers[list[k]].gpus, now)) {
            skipped = 1;
            continue;
        }
        if (offer_excluded(e, c, j, list[k], now, late_ok)) {
            unfinished = 1;
            continue;
        }
        double rank = pick_eval(e, c, j, list[k], spot, now, &pk);
        /* A tier is worth more than any price: 1e15 dollars. */
        rank += 1e15 * recovery_tier(e, j, list[k]);
        if (rank >= best || !spw_govrt_could_fit(e->gov, team, &pk.ch))
            continue;
        int first = rank < best_refused;
        spw_admit_t a = spw_govrt_admit(e->gov, team, now, &pk.ch, first ? why : NULL, len);
        if (a == SPW_ADMIT_OK) {
            best = rank;
            *out = pk;
            found = 1;
            if (sorted)
                break;
            continue;
        }
        if (first) {
            best_refused = rank;
            refusal = a;
        }
        if (sorted && !c->data &&
            (a == SPW_ADMIT_TEAM_RATE || a == SPW_ADMIT_ORG_RATE ||
             (a == SPW_ADMIT_BUDGET && c->same_boot)))
            break;
    }
    int nf = !found && refusal == SPW_ADMIT_NEVER;
    if (none)
        *none = nf && skipped ? NONE_CAP : nf && unfinished ? NONE_FINISH : 0;
    if (nf && why)
        snprintf(why, len, skipped ? "no capacity left on the offers it may buy"
                 : unfinished ? "no offer it may buy can finish its work within its max runtime"
                              : "its worst case is over a budget or cap even with nothing else spent");
    return found ? SPW_ADMIT_OK : refusal;
}

static void start_cloud(spw_engine_t *e, spw_job_t *j, const cloud_pick_t *pk,
                        spw_reason_t why, double now)
{
    const spw_offer_t *o = &e->fleet->offers[pk->offer];
    j->state = SPW_JOB_CLOUD;
    j->reason = why;
    j->offer = (int32_t)pk->offer;
    j->instances = pk->inst;
    j->spot = (uint8_t)pk->spot;
    j->speed = c_offer_speed(e, &e->cls[j->l->cls], pk->offer);
    e->held_inst[pk->spot][pk->offer] += pk->inst;
    j->placed_s = now;
    spw_job_rare_t *x = spw_job_rare_w(j);
    x->transfer_s = pk->transfer_s;
    j->start_s = now + o->boot_delay_s + pk->transfer_s;
    x->reserved_usd = pk->ch.usd + pk->ch.egress_usd;
    x->charge_s = now;
    j->l->att_egress_usd = pk->ch.egress_usd;
    x->egress_usd += pk->ch.egress_usd;
    x->egress_gb += pk->gb;
    spw_govrt_reserve(e->gov, (int)j->team - 1, now, &pk->ch);
    if (pk->gb > 0)
        spw_govrt_data_placed(e->gov, (int)j->data - 1, -1, (int)pk->offer, now);
    note_placed(e, j);
}

/* ---- held bursts --------------------------------------------------------------- */

/* The bursts of one team that a budget or cap held, as a heap in queue
 * order.  Entries go stale when their job starts on-prem, is cancelled or
 * rejected; they are dropped when they reach the top. */
typedef struct heldq {
    spw_job_t **h;
    size_t n, cap;
    int dirty;       /* the team's money freed, or its period ended: retry */
    int org_scope;   /* a job here waits for an organisation cap */
} heldq_t;

static int org_level(spw_admit_t a)
{
    return a == SPW_ADMIT_ORG_RATE || a == SPW_ADMIT_ORG_GPUS;
}

static heldq_t *heldq_of(spw_engine_t *e, const spw_job_t *j)
{
    size_t t = j->team <= e->fleet->gov.nteams ? j->team : 0;
    return &e->hq[t];
}

static void heldq_push(spw_engine_t *e, heldq_t *q, spw_job_t *j)
{
    GROW(q->h, q->n, q->cap);
    size_t i = q->n++;
    while (i > 0 && job_before(e, j, q->h[(i - 1) / 2])) {
        q->h[i] = q->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->h[i] = j;
    e->nheld++;
}

static spw_job_t *heldq_pop(spw_engine_t *e, heldq_t *q)
{
    spw_job_t *top = q->h[0], *last = q->h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < q->n && job_before(e, q->h[l], last))
            m = l;
        if (l + 1 < q->n && job_before(e, q->h[l + 1], m == i ? last : q->h[m]))
            m = l + 1;
        if (m == i)
            break;
        q->h[i] = q->h[m];
        i = m;
    }
    if (q->n)
        q->h[i] = last;
    e->nheld--;
    return top;
}

static int is_held(const spw_job_t *j)
{
    return j->state == SPW_JOB_QUEUED &&
           (j->reason == SPW_REASON_HELD_BUDGET || j->reason == SPW_REASON_HELD_CAP);
}

/* Job j's held count grew and it stays queued: the caller learns it from
 * spw_engine_held without walking its queue. */
static void note_held(spw_engine_t *e, spw_job_t *j)
{
    if (e->newheld_read) {
        e->nnewheld = 0;
        e->newheld_read = 0;
    }
    GROW(e->newheld, e->nnewheld, e->capnewheld);
    e->newheld[e->nnewheld++] = j;
}

/* A burst refused by a budget or cap: the job is held (retried when money
 * or capacity frees, or its budget period ends), kept on-prem only, or
 * rejected, per its team's on_exhausted.  Caps always hold.  A job over a
 * limit outright, or that no offer could finish (unfinishable: reason
 * CANNOT_FINISH, not counted as held), goes on-prem only, or is rejected if
 * no pool can hold it. */
static void refused(spw_engine_t *e, jclass_t *c, spw_job_t *j, spw_admit_t a, double now,
                    int in_queue, int unfinishable)
{
    int team = (int)j->team - 1;
    int money = a == SPW_ADMIT_BUDGET || a == SPW_ADMIT_EGRESS;
    spw_exhausted_t x = money && team >= 0 ? e->fleet->gov.teams[team].on_exhausted
                                           : SPW_EXHAUSTED_HOLD;
    /* Over a limit outright: holding would wait forever. */
    if (a == SPW_ADMIT_NEVER)
        x = team >= 0 && e->fleet->gov.teams[team].on_exhausted == SPW_EXHAUSTED_REJECT
                ? SPW_EXHAUSTED_REJECT
                : SPW_EXHAUSTED_ONPREM_ONLY;
    if (!unfinishable)
        spw_job_rare_w(j)->held++;
    spw_reason_t never = unfinishable ? SPW_REASON_CANNOT_FINISH : SPW_REASON_OVER_LIMIT;
    if (x == SPW_EXHAUSTED_REJECT || (x == SPW_EXHAUSTED_ONPREM_ONLY && c->never_onprem)) {
        if (in_queue)
            queue_del(e, c, j);
        e->queued--;
        e->dirty = 1;
        j->state = SPW_JOB_REJECTED;
        j->reason = a == SPW_ADMIT_NEVER ? never : SPW_REASON_REJECTED_BUDGET;
        j->end_s = now;
        GROW(e->rejected, e->nrejected, e->caprejected);
        e->rejected[e->nrejected++] = j;
        links_drop(e, j);
        return;
    }
    if (!in_queue && !c->never_onprem) {
        queue_add(e, c, j);      /* cloud_first: on-prem takes it meanwhile */
        e->dirty = 1;
    }
    if (x == SPW_EXHAUSTED_ONPREM_ONLY) {
        j->reason = a == SPW_ADMIT_NEVER ? never : SPW_REASON_ONPREM_ONLY_BUDGET;
        note_held(e, j);  /* its reason changed: the daemon writes it */
        j->by_budget = !unfinishable;
        j->l->burst_at_s = INFINITY;
        return;
    }
    j->reason = money ? SPW_REASON_HELD_BUDGET : SPW_REASON_HELD_CAP;
    note_held(e, j);
    heldq_t *q = heldq_of(e, j);
    q->org_scope |= org_level(a);
    if (!j->l->held_list) {
        j->l->held_list = 1;
        heldq_push(e, q, j);
    }
    if (money) {
        spw_team_ledger_t L;
        spw_govrt_ledger(e->gov, team, now, &L);
        double end = L.period_end_s;
        if (a == SPW_ADMIT_EGRESS)
            end = spw_period_end(SPW_PERIOD_MONTH, e->fleet->gov.origin_s + now) -
                  e->fleet->gov.origin_s;
        if (end < e->held_retry_at)
            e->held_retry_at = end;
    }
}

/* ---- spot or on demand ------------------------------------------------------ */

/* How job j of class c may use spot capacity. */
typedef enum spot_use {
    USE_ONDEMAND,      /* never spot */
    USE_POLICY,        /* as its spot policy decides */
    USE_SPOT_ONLY,     /* spot or nothing: spot_mode always, or spot: required */
} spot_use_t;

static spot_use_t spot_use(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                           spw_spot_policy_t *policy)
{
    if (c->spot || (j->spot_mode == SPW_SPOTMODE_ALWAYS && c->spot_ok))
        return USE_SPOT_ONLY;
    if (!c->nsoffers || j->spot_mode == SPW_SPOTMODE_NEVER)
        return USE_ONDEMAND;
    spw_spot_policy_t p = e->policy.spot_policy;
    if (j->spot_policy && j->spot_policy <= SPW_SPOT_POLICY_COUNT)
        p = (spw_spot_policy_t)(j->spot_policy - 1);
    if (p == SPW_SPOT_POLICY_ONDEMAND)
        return USE_ONDEMAND;
    *policy = p;
    return USE_POLICY;
}

/* Whether job j of class c has any cloud place at all. */
static int cloud_ok(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j)
{
    if (c->offer < 0)
        return 0;
    if (j->spot_mode == SPW_SPOTMODE_ALWAYS && !c->spot)
        return c->spot_ok && c->nsoffers > 0;
    (void)e;
    return 1;
}

/* The job as its spot policy sees it (core/spot.h): time from submission,
 * the deadline relative to it, the overhead of a new instance (restart
 * overhead and the slowest boot).  0 when the policy has nothing to go by:
 * no deadline, no estimate, or the estimated work already done. */
static int spot_view(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j, double now,
                     spw_spot_job_t *sj, spw_spot_view_t *v)
{
    if (!isfinite(j->deadline_s) || !(j->est_runtime_s > 0) || !(est_left(j) > 0))
        return 0;
    /* Work and progress as wall-clock seconds on its slowest offer, so a
     * deadline holds whichever GPU it gets. */
    sj->work_s = j->est_runtime_s / c->min_speed;
    sj->deadline_s = j->deadline_s - j->submit_s;
    sj->restart_overhead_s = e->policy.restart_overhead_s + c->max_boot_s;
    sj->checkpoint_interval_s = j->checkpoint_interval_s;
    sj->step_s = RELOOK_S;
    if (!(sj->deadline_s > 0))
        return 0;
    v->inst = SPW_SPOT_IDLE;
    v->elapsed_s = now - j->submit_s;
    v->done_s = spw_job_rare(j)->done_s / c->min_speed;
    return 1;
}

/* The price per hour of the cheapest offer in list[0..n) (sorted by that
 * price) with capacity for class c now, spot or on demand, on which job j
 * can finish (offer_excluded); INFINITY if none. */
static double cheapest_free(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                            const uint32_t *list, uint32_t n, int spot, double now)
{
    int late_ok = !isfinite(j->deadline_s) || !some_offer_in_time(e, c, j, list, n, spot, now, 1);
    for (uint32_t k = 0; k < n; k++) {
        const spw_offer_t *o = &e->fleet->offers[list[k]];
        if (has_capacity(e, list[k], spot, (c->gpus + o->gpus - 1) / o->gpus, now) &&
            !offer_excluded(e, c, j, list[k], now, late_ok))
            return offer_work_usd_h(e, c, list[k], spot);
    }
    return INFINITY;
}

/* Whether spot capacity worth taking is free for job j of class c now: some
 * spot offer it can finish on has room and, unless spot is all it may
 * take, is cheaper than the cheapest such on-demand offer with room (a
 * spot instance bigger than the job needs can cost more than a small one
 * on demand). */
static int spot_free(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j, int only,
                     double now)
{
    double spot = cheapest_free(e, c, j, c->soffers, c->nsoffers, 1, now);
    if (only || !isfinite(spot))
        return isfinite(spot);
    return spot < cheapest_free(e, c, j, c->offers, c->noffers, 0, now);
}

/* What job j should take now: SPOT, ONDEMAND, or IDLE (wait for spot, on-prem
 * still taking it meanwhile).  For IDLE, *flip is when the choice turns to
 * on demand if capacity stays as it is (INFINITY: never).  *by_deadline is
 * set when the deadline, not the lack of spot, made it on demand. */
static spw_spot_inst_t spot_choice(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                                   double now, double *flip, int *by_deadline)
{
    *flip = INFINITY;
    *by_deadline = 0;
    spw_spot_policy_t pol = SPW_SPOT_POLICY_ONDEMAND;
    spot_use_t use = spot_use(e, c, j, &pol);
    if (use == USE_ONDEMAND)
        return SPW_SPOT_ONDEMAND;
    int free_ = spot_free(e, c, j, use == USE_SPOT_ONLY, now);
    if (use == USE_SPOT_ONLY)
        return free_ ? SPW_SPOT_SPOT : SPW_SPOT_IDLE;
    spw_spot_job_t sj;
    spw_spot_view_t v;
    if (!spot_view(e, c, j, now, &sj, &v))
        return free_ ? SPW_SPOT_SPOT : SPW_SPOT_ONDEMAND;
    spw_spot_inst_t d = spw_spot_decide(pol, &sj, &v, free_);
    if (d == SPW_SPOT_ONDEMAND)
        *by_deadline = 1;
    if (d == SPW_SPOT_IDLE) {
        /* Greedy waits until the Safety Net; Uniform Progress also until
         * it falls behind: done < elapsed x work / deadline.  A job waiting
         * is looked at again no sooner than RELOOK_S from now
         * (wait_capacity): when the Safety Net's time t comes before that,
         * it fires now rather than at a re-look too late.  Otherwise the
         * wake-up at t itself puts it on demand, by this same comparison,
         * whatever rounding does to R(t) - C(t) there.  With the slack
         * counting RELOOK_S as the step between decisions, an on-demand
         * start comes at least that early: the explicit margin that keeps
         * a deadline met when restart overhead and boot are 0. */
        double left = sj.work_s - v.done_s;
        double t = j->submit_s + sj.deadline_s - left - spw_spot_safety_slack_s(&sj);
        if (!(t >= now + RELOOK_S)) {
            *by_deadline = 1;
            return SPW_SPOT_ONDEMAND;
        }
        if (pol == SPW_SPOT_POLICY_UNIFORM_PROGRESS) {
            double tu = nextafter(j->submit_s + v.done_s * sj.deadline_s / sj.work_s, INFINITY);
            if (tu < t)
                t = tu;   /* at tu itself it is not behind yet */
        }
        *flip = t;
    }
    return d;
}

/* When a capacity error on any offer of the list (spot or on demand) of
 * class c ends; INFINITY when none is backing off. */
static double backoff_end(const spw_engine_t *e, const jclass_t *c, int spot, double now)
{
    const uint32_t *list = spot ? c->soffers : c->offers;
    uint32_t n = spot ? c->nsoffers : c->noffers;
    double t = INFINITY;
    for (uint32_t k = 0; k < n; k++) {
        double u = e->unavail_until[spot][list[k]];
        if (u > now && u < t)
            t = u;
    }
    return t;
}

/* Job j waits for spot or cloud capacity until capacity changes or `flip`:
 * in the on-prem queue meanwhile when it can run there. */
static void wait_capacity(spw_engine_t *e, jclass_t *c, spw_job_t *j, double now, int in_queue,
                          double flip)
{
    if (!in_queue && !c->never_onprem) {
        queue_add(e, c, j);
        e->dirty = 1;
    }
    j->reason = SPW_REASON_WAIT_SPOT;
    if (!(flip >= now + RELOOK_S))
        flip = now + RELOOK_S;   /* at or near the threshold: look again just after */
    if (flip < e->swait_next)
        e->swait_next = flip;
    if (!j->l->swait) {
        j->l->swait = 1;
        GROW(e->swait, e->nswait, e->capswait);
        e->swait[e->nswait++] = j;
    }
}

static void od_track(spw_engine_t *e, const jclass_t *c, spw_job_t *j);
static int commit_fill(spw_engine_t *e, jclass_t *c, spw_job_t *j, double now, int in_queue);
static int head_before(const spw_engine_t *e, const jclass_t *a, const jclass_t *b, double now);

/* Tries to put queued job j of class c in the cloud now (in_queue: it sits
 * in the on-prem queue): on spot or on demand as its spot policy decides,
 * or it waits for capacity.  Returns SPW_ADMIT_OK when placed. */
static spw_admit_t try_burst(spw_engine_t *e, jclass_t *c, spw_job_t *j, spw_reason_t why,
                             double now, int in_queue)
{
    if (commit_fill(e, c, j, now, in_queue))
        return SPW_ADMIT_OK;
    double flip;
    int by_deadline, waited = j->reason == SPW_REASON_WAIT_SPOT;
    spw_spot_inst_t d = spot_choice(e, c, j, now, &flip, &by_deadline);
    if (d == SPW_SPOT_IDLE) {
        wait_capacity(e, c, j, now, in_queue, fmin(flip, backoff_end(e, c, 1, now)));
        return SPW_ADMIT_NEVER;
    }
    int spot = d == SPW_SPOT_SPOT;
    cloud_pick_t pk;
    int none = 0;
    spw_admit_t a = pick_offer(e, c, j, spot, now, &pk, NULL, 0, &none);
    if (a != SPW_ADMIT_OK && none == NONE_CAP) {
        wait_capacity(e, c, j, now, in_queue, backoff_end(e, c, spot, now));
        return a;
    }
    if (a != SPW_ADMIT_OK) {
        refused(e, c, j, a, now, in_queue, none == NONE_FINISH);
        return a;
    }
    if (in_queue) {
        queue_del(e, c, j);
        e->dirty = 1;            /* jobs behind it may fit on-prem now */
    }
    e->queued--;
    if (spot && waited)
        why = SPW_REASON_SPOT;
    else if (by_deadline)
        why = SPW_REASON_DEADLINE;
    else if (spot && why == SPW_REASON_DEADLINE)
        why = SPW_REASON_DEADLINE_SPOT;   /* not "on-demand capacity" */
    start_cloud(e, j, &pk, why, now);
    if (!spot)
        od_track(e, c, j);
    return SPW_ADMIT_OK;
}

/* ---- commitments ------------------------------------------------------------------ */

/* A commitment of class c's offers with room now on which queued job j can
 * finish (by its deadline and within its max runtime, offer_finish) and
 * whose egress its team's caps admit: *pk is filled, 1.  Jobs that must
 * run on spot, or whose rules keep them out of the cloud, take none. */
static int commit_pick(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                       double now, cloud_pick_t *pk)
{
    if (c->spot || j->spot_mode == SPW_SPOTMODE_ALWAYS || !cloud_ok(e, c, j))
        return 0;
    for (uint32_t k = 0; k < c->noffers; k++) {
        const spw_offer_t *o = &e->fleet->offers[c->offers[k]];
        if (!spw_offer_committed(o) ||
            !has_capacity(e, c->offers[k], 0, (c->gpus + o->gpus - 1) / o->gpus, now) ||
            offer_finish(e, c, j, c->offers[k], now, NULL, NULL) != FIN_OK)
            continue;
        pick_eval(e, c, j, c->offers[k], 0, now, pk);
        if (spw_govrt_admit(e->gov, (int)j->team - 1, now, &pk->ch, NULL, 0) == SPW_ADMIT_OK)
            return 1;
    }
    return 0;
}

/* Places job j of class c on a commitment now when one has room for it
 * (commit_pick): committed GPUs are paid used or idle, so a job that has
 * no on-prem room takes them at once, before its wait runs out and before
 * on-demand or spot capacity.  1 when placed. */
static int commit_fill(spw_engine_t *e, jclass_t *c, spw_job_t *j, double now, int in_queue)
{
    cloud_pick_t pk;
    if (!e->commits || !commit_pick(e, c, j, now, &pk))
        return 0;
    if (in_queue) {
        queue_del(e, c, j);
        e->dirty = 1;
    }
    e->queued--;
    start_cloud(e, j, &pk, SPW_REASON_COMMITTED, now);
    return 1;
}

/* After a pass, queued jobs that found no on-prem room fill the
 * commitments, in queue order over the class heads (a class whose head
 * cannot take one waits behind it, as in the pass). */
static void fill_commitments(spw_engine_t *e, double now)
{
    if (!e->commits)
        return;
    for (;;) {
        jclass_t *best = NULL;
        cloud_pick_t pk;
        for (size_t i = 0; i < e->ncls; i++) {
            jclass_t *c = &e->cls[i];
            if (c->head && (!best || head_before(e, c, best, now)) &&
                commit_pick(e, c, c->head, now, &pk))
                best = c;
        }
        if (!best || !commit_fill(e, best, best->head, now, 1))
            return;
    }
}

/* ---- back to spot: Uniform Progress's hysteresis -------------------------------- */

/* An on-demand placement that may move back to spot once the job is ahead:
 * stale when the job is no longer on that placement. */
typedef struct odrun {
    double at;          /* earliest time the move can be right */
    double placed_s;    /* the placement it belongs to */
    spw_job_t *job;
} odrun_t;

/* Where on-demand job j stands at now, as its policy sees it: *sj and *v
 * (inst ONDEMAND, progress of this attempt after its restart overhead
 * counted).  0 when it is not under Uniform Progress or has no deadline. */
static int od_view(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j, double now,
                   spw_spot_job_t *sj, spw_spot_view_t *v)
{
    spw_spot_policy_t pol = SPW_SPOT_POLICY_ONDEMAND;
    if (spot_use(e, c, j, &pol) != USE_POLICY || pol != SPW_SPOT_POLICY_UNIFORM_PROGRESS ||
        !spot_view(e, c, j, now, sj, v))
        return 0;
    double run = (now - j->start_s - spw_engine_overhead_s(e, j)) * job_speed(j);
    v->inst = SPW_SPOT_ONDEMAND;
    v->done_s = (spw_job_rare(j)->done_s + (run > 0 ? run : 0)) / c->min_speed;
    return v->done_s < sj->work_s;   /* past its estimate: nothing to move */
}

/* Starts watching on-demand job j of class c, just placed: under Uniform
 * Progress it goes back to spot once it is ahead by the hysteresis margin,
 * cp(t) >= ep(t + 2d), spot is free, and the Safety Net allows it.  On
 * demand, progress grows at 1 per second and ep at work / deadline < 1, so
 * that time is worked out once; the Safety Net's R - C stays as it is once
 * the attempt makes progress, so a job that fails it then never moves. */
static void od_track(spw_engine_t *e, const jclass_t *c, spw_job_t *j)
{
    spw_spot_job_t sj;
    spw_spot_view_t v;
    double r0 = j->start_s + spw_engine_overhead_s(e, j);    /* progress starts */
    /* Without checkpoints a move would start the work over: it stays; on a
     * commitment it runs at no extra cost: it stays too. */
    if (j->checkpoint_interval_s == 0 || spw_offer_committed(&e->fleet->offers[j->offer]) || !od_view(e, c, j, r0, &sj, &v) ||
        sj.work_s >= sj.deadline_s)
        return;
    if ((sj.deadline_s - v.elapsed_s) - (sj.work_s - v.done_s) < spw_spot_safety_slack_s(&sj))
        return;
    double k = sj.work_s / sj.deadline_s;
    /* done0 + (t - r0) = (t - submit + 2d) k */
    double t = (r0 - v.done_s + k * (2 * sj.restart_overhead_s - j->submit_s)) / (1 - k);
    if (t < r0)
        t = r0;
    if (!(t < r0 + (sj.work_s - v.done_s)))
        return;    /* done before it would be ahead */
    if (e->nod == e->capod) {
        /* Drop entries whose placement ended before growing. */
        size_t n = 0;
        for (size_t i = 0; i < e->nod; i++) {
            spw_job_t *o = e->od[i].job;
            if (o->l && o->state == SPW_JOB_CLOUD && !o->spot && o->placed_s == e->od[i].placed_s)
                e->od[n++] = e->od[i];
        }
        e->nod = n;
    }
    GROW(e->od, e->nod, e->capod);
    e->od[e->nod++] = (odrun_t){.at = nextafter(t, INFINITY), .placed_s = j->placed_s, .job = j};
    if (e->od[e->nod - 1].at < e->od_next)
        e->od_next = e->od[e->nod - 1].at;
}

/* Collects into e->sw the on-demand jobs that should move to spot now:
 * looked at once one may have become ahead, or spot capacity changed. */
static void find_switches(spw_engine_t *e, double now)
{
    e->nsw = 0;
    if (!e->nod || (now < e->od_next && !e->od_dirty))
        return;
    e->od_dirty = 0;
    e->od_next = INFINITY;
    size_t n = 0;
    for (size_t i = 0; i < e->nod; i++) {
        odrun_t x = e->od[i];
        spw_job_t *j = x.job;
        if (!j->l || j->state != SPW_JOB_CLOUD || j->spot || j->placed_s != x.placed_s)
            continue;                         /* stale */
        int keep = 1;
        if (x.at <= now) {
            const jclass_t *c = &e->cls[j->l->cls];
            spw_spot_job_t sj;
            spw_spot_view_t v;
            cloud_pick_t pk;
            int viewed = od_view(e, c, j, now, &sj, &v);
            int free_ = viewed && spot_free(e, c, j, 0, now);
            int ahead = free_ && spw_spot_decide(SPW_SPOT_POLICY_UNIFORM_PROGRESS, &sj, &v, 1) ==
                                     SPW_SPOT_SPOT;
            /* The spot placement must be admitted while the on-demand one
             * still holds its worst case: it surely is once that goes. */
            if (ahead && pick_offer(e, c, j, 1, now, &pk, NULL, 0, NULL) == SPW_ADMIT_OK) {
                size_t k = 0;
                while (k < e->nsw && e->sw[k] != j)
                    k++;
                if (k == e->nsw) {
                    GROW(e->sw, e->nsw, e->capsw);
                    e->sw[e->nsw++] = j;
                }
                keep = 0;
            } else if (!viewed) {
                keep = 0;                     /* past its estimate: it stays */
            } else if (free_ && !ahead) {
                /* Spot is free but at the threshold it is not quite
                 * ahead yet (rounding): look again a second later.  A
                 * refused pick waits for spot capacity to change. */
                x.at = now + 1;
            }
        }
        if (keep) {
            e->od[n++] = x;
            if (x.at > now && x.at < e->od_next)
                e->od_next = x.at;
        }
    }
    e->nod = n;
}

/* Sorts v[0..n) into queue order (a merge sort with the engine passed in:
 * engines may run in parallel threads, so no file-scope sort context). */
static void sort_jobs(const spw_engine_t *e, spw_job_t **v, size_t n)
{
    if (n < 2)
        return;
    spw_job_t **tmp = spw_xmalloc(n * sizeof(*tmp));
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid || b < hi)
                tmp[k++] = b >= hi || (a < mid && !job_before(e, v[b], v[a])) ? v[a++] : v[b++];
        }
        memcpy(v, tmp, n * sizeof(*tmp));
    }
    free(tmp);
}

/* The reason a job bursting from a wait list goes to the cloud. */
static spw_reason_t burst_reason(const jclass_t *c)
{
    return c->never_onprem                        ? SPW_REASON_NEVER_FITS_ONPREM
           : c->placement == SPW_PLACE_CLOUD_FIRST ? SPW_REASON_CLOUD_FIRST
                                                   : SPW_REASON_WAIT_EXPIRED;
}

/* Tries the jobs waiting for spot or cloud capacity again, in queue order,
 * once capacity has changed or one of them would choose differently. */
static void retry_spot(spw_engine_t *e, double now)
{
    if (!e->nswait || (!e->spot_dirty && now < e->swait_next))
        return;
    e->spot_dirty = 0;
    e->swait_next = INFINITY;
    size_t n = 0;
    for (size_t i = 0; i < e->nswait; i++) {
        spw_job_t *j = e->swait[i];
        if (!j->l)                   /* it left the engine */
            continue;
        j->l->swait = 0;
        if (j->state == SPW_JOB_QUEUED && j->reason == SPW_REASON_WAIT_SPOT)
            e->swait[n++] = j;
    }
    spw_job_t **todo = spw_xmalloc((n ? n : 1) * sizeof(*todo));
    memcpy(todo, e->swait, n * sizeof(*todo));
    e->nswait = 0;
    sort_jobs(e, todo, n);
    for (size_t i = 0; i < n; i++) {
        jclass_t *c = &e->cls[todo[i]->l->cls];
        try_burst(e, c, todo[i], burst_reason(c), now, !c->never_onprem);
    }
    free(todo);
}

/* Retries held bursts once money or a cap has freed up or a budget period
 * has ended: only the teams that can have gained room, each from its
 * first job in queue order until one is refused again, and across teams
 * the earliest first.  An organisation cap's refusal ends the round. */
static void retry_held(spw_engine_t *e, double now)
{
    if (!e->nheld)
        return;
    if (now >= e->held_retry_at) {
        e->held_retry_at = INFINITY;
        for (size_t t = 0; t < e->nhq; t++)
            e->hq[t].dirty = 1;
        e->held_dirty = 1;
    }
    if (!e->held_dirty)
        return;
    e->held_dirty = 0;
    if (e->org_freed)
        for (size_t t = 0; t < e->nhq; t++)
            e->hq[t].dirty |= e->hq[t].org_scope;
    e->org_freed = 0;
    for (;;) {
        heldq_t *best = NULL;
        for (size_t t = 0; t < e->nhq; t++) {
            heldq_t *q = &e->hq[t];
            while (q->n && !is_held(q->h[0])) {
                spw_job_t *gone = heldq_pop(e, q);
                if (gone->l)         /* NULL once it left the engine */
                    gone->l->held_list = 0;
            }
            if (q->dirty && q->n && (!best || job_before(e, q->h[0], best->h[0])))
                best = q;
        }
        if (!best)
            return;
        spw_job_t *j = heldq_pop(e, best);
        j->l->held_list = 0;
        jclass_t *c = &e->cls[j->l->cls];
        spw_admit_t a = try_burst(e, c, j, burst_reason(c), now, !c->never_onprem);
        if (a == SPW_ADMIT_OK || !is_held(j))
            continue;                 /* placed, rejected or on-prem only */
        if (org_level(a)) {
            /* Nobody fits until an organisation cap frees up. */
            for (size_t t = 0; t < e->nhq; t++) {
                e->hq[t].org_scope |= e->hq[t].dirty;
                e->hq[t].dirty = 0;
            }
            return;
        }
        best->dirty = 0;
        best->org_scope = 0;
    }
}

/* ---- fair share and quotas (core/fair.c, docs/fairshare.md) ----------------- */

/* The tier of class c's jobs (their team and GPUs): in the best of the
 * pools it may use (the same in all of them without per-pool quota parts). */
static spw_fair_tier_t class_tier(const spw_engine_t *e, const jclass_t *c)
{
    if (!c->npools)
        return spw_fair_tier(e->fair, c->team, c->gpus);
    spw_fair_tier_t best = SPW_FAIR_REFUSED;
    for (uint32_t k = 0; k < c->npools && best != SPW_FAIR_NOMINAL; k++) {
        spw_fair_tier_t t = spw_fair_tier_in(e->fair, c->team, c->gpus, (int)c->pools[k]);
        best = t < best ? t : best;
    }
    return best;
}

/* Queue order across teams: with quotas, work that fits in its team's
 * nominal quota before work that would borrow (within a team too when it
 * has per-pool parts: work for a part it has idle goes first); under queue: fair, the team
 * with the lower fair-share key (usage over share) first; then the
 * policy's order. */
static int fair_job_before(const spw_engine_t *e, const jclass_t *ca, const spw_job_t *a,
                           const jclass_t *cb, const spw_job_t *b, double now)
{
    if (e->by_team && (a->team != b->team || spw_fair_parts(e->fair, a->team))) {
        if (spw_fair_quotas(e->fair)) {
            spw_fair_tier_t ta = class_tier(e, ca), tb = class_tier(e, cb);
            if (ta != tb)
                return ta < tb;
        }
        if (e->policy.queue == SPW_QUEUE_FAIR && a->team != b->team) {
            double ka = spw_fair_key(e->fair, a->team, now), kb = spw_fair_key(e->fair, b->team, now);
            if (ka != kb)
                return ka < kb;
        }
    }
    return job_before(e, a, b);
}

static int head_before(const spw_engine_t *e, const jclass_t *a, const jclass_t *b, double now)
{
    return fair_job_before(e, a, a->head, b, b->head, now);
}

/* Whether class c's jobs may start on-prem now as far as quotas and the
 * team's egress cap go (some pool can take its data's copy). */
static int head_ok(spw_engine_t *e, const jclass_t *c)
{
    if (spw_fair_quotas(e->fair) && class_tier(e, c) == SPW_FAIR_REFUSED)
        return 0;
    if (!e->egress_gate || !c->data || !c->team)
        return 1;
    for (uint32_t k = 0; k < c->npools; k++)
        if (copy_fits(e, c, c->pools[k]))
            return 1;
    return 0;
}

/* Gives notice to victims in one pool of class c, taken in
 * spw_fair_candidates' order until their preemption lets c's head start
 * there: for a job that fits a node, those on the first node that becomes
 * roomy enough; for a bigger one, all taken until enough whole nodes are
 * free.  1 when it found them. */
static int reclaim_for(spw_engine_t *e, const jclass_t *c, double now)
{
    spw_job_t **cand;
    size_t n = spw_fair_candidates(e->fair, c->team, now, &cand);
    for (uint32_t k = 0; k < c->npools && n; k++) {
        /* With per-pool quota parts, only where c's team is under its share. */
        if (spw_fair_tier_in(e->fair, c->team, c->gpus, (int)c->pools[k]) != SPW_FAIR_NOMINAL)
            continue;
        const pool_t *p = &e->pools[c->pools[k]];
        uint32_t *extra = spw_xcalloc(p->n, sizeof(uint32_t));
        uint8_t *taken = spw_xcalloc(n, 1);
        uint64_t full = p->full_gpus;
        int multi = c->gpus > p->maxcap;
        int64_t at = -1;   /* the node that fits (single), or 0 (multi) */
        spw_fair_take_reset(e->fair, spw_fair_parts(e->fair, c->team) ? (int)c->pools[k] : -1);
        for (size_t i = 0; i < n && at < 0; i++) {
            spw_job_t *v = cand[i];
            if (v->pool != (int32_t)c->pools[k] || !spw_fair_may_take(e->fair, v))
                continue;
            taken[i] = 1;
            for (uint32_t m = 0; m < v->nnodes && at < 0; m++) {
                uint32_t node = v->l->nodes ? v->l->nodes[m] : (uint32_t)v->node;
                uint16_t cap = p->spec->node_gpus[node];
                uint32_t was = p->freeg[node] + extra[node];
                extra[node] += v->l->nodes ? cap : v->alloc_gpus;
                uint32_t now_free = p->freeg[node] + extra[node];
                if (!multi && now_free >= c->gpus)
                    at = node;
                if (multi && was < cap && now_free >= cap && (full += cap) >= c->gpus)
                    at = 0;
            }
        }
        for (size_t i = 0; i < n && at >= 0; i++) {
            if (!taken[i])
                continue;
            int on = multi;
            for (uint32_t m = 0; m < cand[i]->nnodes && !on; m++)
                on = (cand[i]->l->nodes ? cand[i]->l->nodes[m] : (uint32_t)cand[i]->node) ==
                     (uint32_t)at;
            if (on)
                spw_fair_mark(e->fair, cand[i], c->team, now);
        }
        free(extra);
        free(taken);
        if (at >= 0)
            return 1;
    }
    return 0;
}

/* After the pass: each team under its nominal quota whose next job fits
 * in it but finds no room reclaims borrowed GPUs; victims whose grace is
 * over are listed for the caller. */
static void reclaim(spw_engine_t *e, double now)
{
    e->nrecl = 0;
    if (!spw_fair_quotas(e->fair))
        return;
    e->pass_now = now;
    for (size_t i = 0; i < e->ncls; i++) {
        jclass_t *c = &e->cls[i];
        if (!c->head || c->never_onprem || !head_ok(e, c) ||
            spw_fair_reclaiming(e->fair, c->team) ||
            class_tier(e, c) != SPW_FAIR_NOMINAL || find_place(e, c).pool >= 0)
            continue;
        reclaim_for(e, c, now);
    }
    e->nrecl = spw_fair_due(e->fair, now, &e->recl);
}

/* ---- passes --------------------------------------------------------------- */

static jclass_t *global_head(spw_engine_t *e, double now)
{
    jclass_t *best = NULL;
    for (size_t i = 0; i < e->ncls; i++) {
        jclass_t *c = &e->cls[i];
        if (c->head && head_ok(e, c) && (!best || head_before(e, c, best, now)))
            best = c;
    }
    return best;
}

static void pass_hol(spw_engine_t *e, double now)
{
    for (;;) {
        jclass_t *c = global_head(e, now);
        if (!c)
            return;
        place_t pl = find_place(e, c);
        if (pl.pool < 0)
            return;
        start_onprem(e, c, c->head, pl, SPW_REASON_FITS_ONPREM, now);
    }
}

/* Starts, in queue order, every job that fits; classes that stop fitting
 * drop out, since a pass only ever takes capacity away. */
static void pass_skip(spw_engine_t *e, double now)
{
    for (;;) {
        jclass_t *best = NULL;
        for (size_t i = 0; i < e->ncls; i++) {
            jclass_t *c = &e->cls[i];
            if (c->head && head_ok(e, c) && (!best || head_before(e, c, best, now)) &&
                class_fits(e, c))
                best = c;
        }
        if (!best)
            return;
        start_onprem(e, best, best->head, find_place(e, best), SPW_REASON_FITS_ONPREM, now);
    }
}

/* An EASY reservation for the blocked head job of class h.  The pools'
 * shadow[] arrays hold the free GPUs at time t, when the head could start if
 * running jobs end at their estimates. */
typedef struct resv {
    const jclass_t *h;   /* the head's class */
    double t;            /* reservation (shadow) time */
} resv_t;

static inline uint16_t sh_get(const spw_engine_t *e, const pool_t *p, uint32_t n)
{
    return p->stamp[n] == e->epoch ? p->shadow[n] : p->freeg[n];
}

/* Whether the head fits in the shadow state of pool p. */
static inline int shadow_fits_pool(const pool_t *p, uint32_t g)
{
    return g > p->maxcap ? p->sh_full >= g : p->sh_cnt > 0;
}

static int shadow_fits(const spw_engine_t *e, const resv_t *r)
{
    for (uint32_t k = 0; k < r->h->npools; k++)
        if (shadow_fits_pool(&e->pools[r->h->pools[k]], r->h->gpus))
            return 1;
    return 0;
}

/* Sets a node's shadow free count, keeping the pool's counters for a head
 * that needs g GPUs. */
static void shadow_set(spw_engine_t *e, pool_t *p, uint32_t node, uint16_t f, uint32_t g)
{
    uint16_t old = sh_get(e, p, node), cap = p->spec->node_gpus[node];
    p->sh_cnt += (f >= g) - (old >= g);
    if (old == cap && f != cap)
        p->sh_full -= cap;
    else if (old != cap && f == cap)
        p->sh_full += cap;
    p->shadow[node] = f;
    p->stamp[node] = e->epoch;
}

/* Pops the next running job in estimated-end order from the scratch heap
 * of run indices. */
static spw_job_t *aux_pop(spw_engine_t *e, size_t *na)
{
    uint32_t top = e->aux[0];
    uint32_t last = e->aux[--*na];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, rr = l + 1, m = l;
        if (l >= *na)
            break;
        if (rr < *na && run_before(&e->run[e->aux[rr]], &e->run[e->aux[l]]))
            m = rr;
        if (!run_before(&e->run[e->aux[m]], &e->run[last]))
            break;
        e->aux[i] = e->aux[m];
        i = m;
    }
    if (*na)
        e->aux[i] = last;
    for (uint32_t ch = 2 * top + 1; ch <= 2 * top + 2 && ch < e->nrun; ch++) {
        GROW(e->aux, *na, e->capaux);
        size_t k = (*na)++;
        while (k && run_before(&e->run[ch], &e->run[e->aux[(k - 1) / 2]])) {
            e->aux[k] = e->aux[(k - 1) / 2];
            k = (k - 1) / 2;
        }
        e->aux[k] = ch;
    }
    return e->run[top].job;
}

/* Computes when the head (class r->h) could start if running jobs end at
 * their estimates, leaving each eligible pool's shadow as the free state at
 * that time.  Running jobs are visited in order of estimated end without
 * disturbing the running heap. */
static void reserve(spw_engine_t *e, resv_t *r, double now)
{
    const jclass_t *h = r->h;
    uint32_t g = h->gpus;
    e->reservations++;
    e->epoch++;
    for (uint32_t k = 0; k < h->npools; k++) {
        pool_t *p = &e->pools[h->pools[k]];
        p->sh_full = 0;
        p->sh_cnt = 0;
        /* A pool its data may not be copied into holds no reservation. */
        p->head_ok = copy_fits(e, h, h->pools[k]);
        if (!p->head_ok)
            continue;
        p->sh_full = p->full_gpus;
        for (uint32_t f = g; f <= p->maxcap; f++)
            p->sh_cnt += p->level_n[f];
    }
    r->t = INFINITY;
    size_t na = 0;
    if (e->nrun) {
        GROW(e->aux, na, e->capaux);
        e->aux[na++] = 0;
    }
    while (na) {
        spw_job_t *j = aux_pop(e, &na);
        pool_t *p = &e->pools[j->pool];
        if (!p->head_ok)
            continue;
        if (j->l->nodes) {
            for (uint32_t k = 0; k < j->nnodes; k++)
                shadow_set(e, p, j->l->nodes[k], p->spec->node_gpus[j->l->nodes[k]], g);
        } else {
            uint32_t n = (uint32_t)j->node;
            shadow_set(e, p, n, (uint16_t)(sh_get(e, p, n) + j->alloc_gpus), g);
        }
        if (shadow_fits_pool(p, g)) {
            double t = est_end(e, j);
            r->t = t > now ? t : now;
            return;
        }
    }
}

/* Whether starting job j (class c) at placement pl keeps the head's
 * reservation.  With `apply` set, the start is about to happen: the shadow
 * is updated (a job that outlives the reservation holds its GPUs there too)
 * and the answer is 1. */
static int keeps_reservation(spw_engine_t *e, resv_t *r, const jclass_t *c,
                             const spw_job_t *j, place_t pl, double now, int apply)
{
    pool_t *p = &e->pools[pl.pool];
    if (!p->head_ok)
        return 1;
    /* The same test as treap_first_short(), so rounding cannot make the two disagree. */
    int ends_first = j->est_runtime_s <= r->t - now - e->policy.restart_overhead_s;
    if (ends_first && !apply)
        return 1;
    uint32_t g = r->h->gpus;
    int64_t cnt = p->sh_cnt;
    uint64_t full = p->sh_full;
    uint32_t got = 0;
    uint32_t n = pl.multi ? bits_next(&p->full, 0) : pl.node;
    for (;;) {
        uint16_t old = sh_get(e, p, n), cap = p->spec->node_gpus[n];
        uint16_t f = pl.multi ? 0 : (uint16_t)(old - c->gpus);
        if (ends_first)
            f = old;   /* pin the shadow before freeg changes under it */
        if (apply) {
            shadow_set(e, p, n, f, g);
        } else {
            cnt += (f >= g) - (old >= g);
            if (old == cap && f != cap)
                full -= cap;
        }
        if (!pl.multi)
            break;
        got += cap;
        if (got >= c->gpus)
            break;
        n = bits_next(&p->full, n + 1);
    }
    if (apply)
        return 1;
    int64_t save_cnt = p->sh_cnt;
    uint64_t save_full = p->sh_full;
    p->sh_cnt = cnt;
    p->sh_full = full;
    int ok = shadow_fits(e, r);
    p->sh_cnt = save_cnt;
    p->sh_full = save_full;
    return ok;
}

static void pass_easy(spw_engine_t *e, double now)
{
    jclass_t *h;
    for (;;) {
        h = global_head(e, now);
        if (!h)
            return;
        place_t pl = find_place(e, h);
        if (pl.pool < 0)
            break;
        start_onprem(e, h, h->head, pl, SPW_REASON_FITS_ONPREM, now);
    }
    /* The head is blocked.  Nothing to backfill unless some class fits. */
    int any = 0;
    for (size_t i = 0; i < e->ncls && !any; i++)
        any = e->cls[i].head && &e->cls[i] != h && head_ok(e, &e->cls[i]) &&
              class_fits(e, &e->cls[i]);
    if (!any)
        return;
    resv_t r = {.h = h, .t = INFINITY};
    reserve(e, &r, now);
    for (;;) {
        jclass_t *best = NULL;
        spw_job_t *bj = NULL;
        place_t bpl = {.pool = -1, .node = 0, .multi = 0};
        for (size_t i = 0; i < e->ncls; i++) {
            jclass_t *c = &e->cls[i];
            if (!c->head || c == h || !head_ok(e, c))
                continue;
            place_t pl = find_place(e, c);
            if (pl.pool < 0)
                continue;
            spw_job_t *cand = c->head;
            if (!keeps_reservation(e, &r, c, cand, pl, now, 0))
                cand = treap_first_short(c->root, r.t - now - e->policy.restart_overhead_s);
            if (cand && (!bj || fair_job_before(e, c, cand, best, bj, now))) {
                best = c;
                bj = cand;
                bpl = pl;
            }
        }
        if (!best)
            break;
        keeps_reservation(e, &r, best, bj, bpl, now, 1);
        start_onprem(e, best, bj, bpl, SPW_REASON_BACKFILLED, now);
    }
    for (uint32_t k = 0; k < h->npools; k++)
        e->pools[h->pools[k]].head_ok = 0;
}

static void pass(spw_engine_t *e, double now)
{
    if (!e->dirty)
        return;
    e->dirty = 0;
    e->passes++;
    e->pass_now = now;
    if (e->policy.backfill == SPW_BACKFILL_EASY)
        pass_easy(e, now);
    else if (e->policy.scan == SPW_SCAN_SKIP)
        pass_skip(e, now);
    else
        pass_hol(e, now);
}

/* ---- predicted wait (predict:K) -------------------------------------------- */

/* predict:K gives a job compute:K's budget, but does not wait it out when
 * waiting cannot pay: at the instant a job arrives and the pass leaves it
 * queued, the engine plays its on-prem schedule forward (running jobs end
 * at their estimates; queued jobs start in queue order, head of line
 * blocking or not as the policy scans, on the nodes they would take) and
 * bursts the job at once when its projected start is past its budget.  A
 * job projected to start within its budget waits, with the budget's
 * expiry as before if the projection was wrong.  One projection serves
 * every arrival of the instant; it runs only as far as their budgets. */

/* GPUs that come back in the projection: node `node` of pool `pool` gets
 * `gpus` at time t. */
typedef struct pev {
    double t;        /* engine seconds */
    uint32_t pool;   /* pool index */
    uint32_t node;   /* node index in the pool */
    uint32_t gpus;   /* GPUs freed */
} pev_t;

/* A queued job in the projection. */
typedef struct pjob {
    spw_job_t *job;
    const jclass_t *c;   /* its class */
    double key;          /* key1() of the job: queue order */
    double start;        /* projected start, engine seconds; INFINITY = not yet */
    double budget_at;    /* for a job whose answer is wanted: the latest
                            start within its budget; NAN for the others */
} pjob_t;

typedef struct predict {
    spw_job_t **jobs;    /* this instant's arrivals that wait for an answer */
    size_t njobs, capjobs;
    uint16_t **freeg;    /* per pool: projected free GPUs per node */
    pev_t *ev;           /* min-heap of releases by time */
    size_t nev, capev;
    pjob_t *q;           /* queued jobs in queue order */
    size_t nq, capq;
    size_t *live;        /* positions in q of the jobs not started yet */
    size_t nlive, caplive;
    size_t *tg;          /* positions in q of the jobs whose answer is wanted */
    size_t ntg, captg;
    double start;        /* predict_start's answer, engine seconds */
} predict_t;

static predict_t *predict_create(const spw_engine_t *e)
{
    predict_t *pr = spw_xcalloc(1, sizeof(*pr));
    pr->freeg = spw_xcalloc(e->npools ? e->npools : 1, sizeof(*pr->freeg));
    for (size_t i = 0; i < e->npools; i++)
        pr->freeg[i] = spw_xcalloc(e->pools[i].n ? e->pools[i].n : 1, sizeof(uint16_t));
    return pr;
}

static void predict_free(predict_t *pr, size_t npools)
{
    if (!pr)
        return;
    for (size_t i = 0; i < npools; i++)
        free(pr->freeg[i]);
    void *bufs[] = {pr->freeg, pr->jobs, pr->ev, pr->q, pr->live, pr->tg, pr};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        free(bufs[i]);
}

static void predict_add(predict_t *pr, spw_job_t *j)
{
    GROW(pr->jobs, pr->njobs, pr->capjobs);
    pr->jobs[pr->njobs++] = j;
}

static void pev_push(predict_t *pr, pev_t v)
{
    GROW(pr->ev, pr->nev, pr->capev);
    size_t i = pr->nev++;
    while (i && v.t < pr->ev[(i - 1) / 2].t) {
        pr->ev[i] = pr->ev[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    pr->ev[i] = v;
}

static pev_t pev_pop(predict_t *pr)
{
    pev_t top = pr->ev[0], last = pr->ev[--pr->nev];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= pr->nev)
            break;
        if (l + 1 < pr->nev && pr->ev[l + 1].t < pr->ev[l].t)
            m = l + 1;
        if (!(pr->ev[m].t < last.t))
            break;
        pr->ev[i] = pr->ev[m];
        i = m;
    }
    if (pr->nev)
        pr->ev[i] = last;
    return top;
}

/* Where a job of class c would start in the projected free state: as
 * find_place() chooses (fit, pool order, whole nodes for a job bigger than
 * a pool's nodes), without the pass's egress and quota gates. */
static place_t proj_place(const spw_engine_t *e, const predict_t *pr, const jclass_t *c)
{
    place_t best = {.pool = -1, .node = 0, .multi = 0};
    uint32_t g = c->gpus, best_f = UINT32_MAX;
    int first = e->policy.fit == SPW_FIT_FIRST;
    for (uint32_t k = 0; k < c->npools; k++) {
        uint32_t pi = c->pools[k];
        const pool_t *p = &e->pools[pi];
        const uint16_t *f = pr->freeg[pi];
        if (g > p->maxcap) {
            uint64_t full = 0;
            for (uint32_t n = 0; n < p->n && full < g && best.pool < 0; n++)
                if (f[n] == p->spec->node_gpus[n])
                    full += f[n];
            if (full >= g) {
                best = (place_t){.pool = (int)pi, .node = 0, .multi = 1};
                if (first)
                    return best;
                best_f = UINT32_MAX - 1;
            }
            continue;
        }
        for (uint32_t n = 0; n < p->n; n++)
            if (f[n] >= g && f[n] < best_f) {
                best = (place_t){.pool = (int)pi, .node = n, .multi = 0};
                if (first)
                    return best;
                best_f = f[n];
            }
    }
    return best;
}

/* Starts job q->job in the projection at t on placement pl. */
static void proj_take(const spw_engine_t *e, predict_t *pr, pjob_t *q, place_t pl, double t)
{
    const spw_job_t *j = q->job;
    const pool_t *p = &e->pools[pl.pool];
    uint16_t *f = pr->freeg[pl.pool];
    double end = t + (spw_job_rare(j)->restarts ? e->policy.restart_overhead_s : 0) +
                 est_left(j) / c_pool_speed(e, q->c, (uint32_t)pl.pool);
    q->start = t;
    if (!pl.multi) {
        f[pl.node] = (uint16_t)(f[pl.node] - q->c->gpus);
        pev_push(pr, (pev_t){end, (uint32_t)pl.pool, pl.node, q->c->gpus});
        return;
    }
    uint32_t got = 0;
    for (uint32_t n = 0; n < p->n && got < q->c->gpus; n++)
        if (f[n] == p->spec->node_gpus[n]) {
            got += f[n];
            pev_push(pr, (pev_t){end, (uint32_t)pl.pool, n, f[n]});
            f[n] = 0;
        }
}

static void proj_collect(predict_t *pr, const spw_engine_t *e, const jclass_t *c, spw_job_t *t,
                         double now)
{
    if (!t)
        return;
    proj_collect(pr, e, c, t->l->left, now);
    /* A job that bursts at this instant holds no place in the queue. */
    if (t->l->burst_at_s > now) {
        GROW(pr->q, pr->nq, pr->capq);
        pr->q[pr->nq++] = (pjob_t){.job = t, .c = c, .key = key1(e, t),
                                   .start = INFINITY, .budget_at = NAN};
    }
    proj_collect(pr, e, c, t->l->right, now);
}

/* job_before() on the keys the projection copied. */
static int pjob_cmp(const void *va, const void *vb)
{
    const pjob_t *a = va, *b = vb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->job->submit_s != b->job->submit_s)
        return a->job->submit_s < b->job->submit_s ? -1 : 1;
    return a->job->order < b->job->order ? -1 : a->job->order > b->job->order;
}

static int ptr_cmp(const void *va, const void *vb)
{
    uintptr_t a = (uintptr_t) * (spw_job_t *const *)va, b = (uintptr_t) * (spw_job_t *const *)vb;
    return a < b ? -1 : a > b;
}

/* Fills pr->q with the queue in queue order, up to the last of the n jobs
 * ws (sorted by address) whose answer is wanted, and marks those with
 * their budget (INFINITY when `whole` asks for the start itself). */
static size_t proj_queue(const spw_engine_t *e, predict_t *pr, spw_job_t *const *ws, size_t n,
                         int whole, double now)
{
    pr->nq = 0;
    for (size_t i = 0; i < e->ncls; i++)
        proj_collect(pr, e, &e->cls[i], e->cls[i].root, now);
    qsort(pr->q, pr->nq, sizeof(*pr->q), pjob_cmp);
    size_t last = 0, found = 0;
    for (size_t i = 0; i < pr->nq; i++) {
        spw_job_t *j = pr->q[i].job;
        if (bsearch(&j, ws, n, sizeof(*ws), ptr_cmp)) {
            pr->q[i].budget_at = whole ? INFINITY : j->l->burst_at_s;
            last = i + 1;
            found++;
        }
    }
    pr->nq = last;   /* jobs behind the last one asked about change nothing */
    return found;
}

/* Plays the on-prem schedule forward from now for pr->q (proj_queue) and
 * returns the first job, in queue order, whose projected start is past
 * its budget, or NULL when each of them starts within it.  Each job's
 * projected start is left in pr->q. */
static spw_job_t *project(const spw_engine_t *e, predict_t *pr, size_t left, double now)
{
    uint16_t maxfree = 0;   /* the most free GPUs of any node: an upper bound */
    uint32_t mincap = UINT32_MAX;   /* the smallest pool's largest node */
    for (size_t i = 0; i < e->npools; i++)
        memcpy(pr->freeg[i], e->pools[i].freeg, e->pools[i].n * sizeof(uint16_t));
    pr->nev = 0;
    for (size_t i = 0; i < e->nrun; i++) {
        const spw_job_t *j = e->run[i].job;
        const pool_t *p = &e->pools[j->pool];
        double t = e->run[i].end > now ? e->run[i].end : now;   /* overdue: any moment */
        if (j->l->nodes)
            for (uint32_t k = 0; k < j->nnodes; k++)
                pev_push(pr, (pev_t){t, (uint32_t)j->pool, j->l->nodes[k],
                                     p->spec->node_gpus[j->l->nodes[k]]});
        else
            pev_push(pr, (pev_t){t, (uint32_t)j->pool, (uint32_t)j->node, j->alloc_gpus});
    }
    for (size_t i = 0; i < e->npools; i++) {
        if (e->pools[i].maxcap < mincap)
            mincap = e->pools[i].maxcap;
        for (uint32_t n = 0; n < e->pools[i].n; n++)
            if (pr->freeg[i][n] > maxfree)
                maxfree = pr->freeg[i][n];
    }
    /* The jobs not started yet (positions in pr->q, in order) and those
     * whose answer is wanted. */
    pr->nlive = pr->ntg = 0;
    for (size_t i = 0; i < pr->nq; i++) {
        GROW(pr->live, pr->nlive, pr->caplive);
        pr->live[pr->nlive++] = i;
        if (!isnan(pr->q[i].budget_at)) {
            GROW(pr->tg, pr->ntg, pr->captg);
            pr->tg[pr->ntg++] = i;
        }
    }
    int hol = e->policy.backfill == SPW_BACKFILL_NONE && e->policy.scan == SPW_SCAN_HOL;
    double t = now;
    for (;;) {
        size_t k = 0, i = 0;
        for (; i < pr->nlive; i++) {
            pjob_t *q = &pr->q[pr->live[i]];
            place_t pl = {.pool = -1, .node = 0, .multi = 0};
            /* No node has its GPUs free, and it is a one-node job in
             * every pool: it cannot start yet. */
            if (q->c->gpus <= maxfree || q->c->gpus > mincap)
                pl = proj_place(e, pr, q->c);
            if (pl.pool < 0) {
                pr->live[k++] = pr->live[i];
                if (hol)
                    break;
                continue;
            }
            proj_take(e, pr, q, pl, t);
            if (!isnan(q->budget_at) && --left == 0)
                return NULL;
        }
        if (i < pr->nlive) {   /* head of line: the rest wait behind it */
            memmove(&pr->live[k], &pr->live[i + 1], (pr->nlive - i - 1) * sizeof(*pr->live));
            k += pr->nlive - i - 1;
        }
        pr->nlive = k;
        double next = pr->nev ? pr->ev[0].t : INFINITY;
        /* A job still waiting when its budget runs out is the answer. */
        for (size_t m = 0; m < pr->ntg; m++) {
            const pjob_t *q = &pr->q[pr->tg[m]];
            if (q->start == INFINITY && q->budget_at < next)
                return q->job;
        }
        if (!pr->nev)
            return NULL;
        t = next;
        while (pr->nev && pr->ev[0].t <= t) {
            pev_t v = pev_pop(pr);
            const pool_t *p = &e->pools[v.pool];
            if (p->down && p->down[v.node])
                continue;
            uint16_t f = (uint16_t)(pr->freeg[v.pool][v.node] + v.gpus);
            pr->freeg[v.pool][v.node] = f;
            if (f > maxfree)
                maxfree = f;
        }
    }
}

/* Bursts this instant's arrivals that the pass left queued and whose
 * projected start is past their budget; one projection again after each
 * burst, since the jobs behind it then start sooner. */
static void predict_bursts(spw_engine_t *e, double now)
{
    predict_t *pr = e->pr;
    size_t n = 0;
    for (size_t i = 0; i < pr->njobs; i++) {
        spw_job_t *j = pr->jobs[i];
        if (j->l && j->state == SPW_JOB_QUEUED && j->l->burst_at_s > now &&
            isfinite(j->l->burst_at_s))
            pr->jobs[n++] = j;
    }
    pr->njobs = 0;
    if (!n)
        return;
    qsort(pr->jobs, n, sizeof(*pr->jobs), ptr_cmp);
    for (;;) {
        size_t left = proj_queue(e, pr, pr->jobs, n, 0, now);
        spw_job_t *j = left ? project(e, pr, left, now) : NULL;
        if (!j)
            return;
        j->l->burst_at_s = now;
        j->l->burst_why = SPW_REASON_PREDICTED_WAIT;
        exp_push(e, j);
    }
}

double spw_engine_predicted_start(spw_engine_t *e, const spw_job_t *j, double now)
{
    if (!e->pr || !j->l || j->state != SPW_JOB_QUEUED || j->l->burst_at_s <= now)
        return NAN;
    spw_job_t *w = (spw_job_t *)j;
    if (!proj_queue(e, e->pr, &w, 1, 1, now))
        return NAN;
    project(e, e->pr, 1, now);
    return e->pr->q[e->pr->nq - 1].start;
}

/* ---- public calls --------------------------------------------------------- */

spw_engine_t *spw_engine_create(const spw_fleet_t *fleet, const spw_policy_t *policy,
                                spw_error_t *err)
{
    for (size_t i = 0; i < fleet->npools; i++) {
        const spw_pool_spec_t *ps = &fleet->pools[i];
        /* A pool of no nodes (a planner's "own none") takes no job. */
        for (uint32_t k = 0; k < ps->nnodes; k++)
            if (ps->node_gpus[k] == 0 || ps->node_gpus[k] > SPW_MAX_NODE_GPUS)
                return spw_errorf(err, "pool '%s': node %u has %u GPUs (expected 1 to %d)",
                                  ps->name, k, ps->node_gpus[k], SPW_MAX_NODE_GPUS), NULL;
    }
    for (size_t i = 0; i < fleet->noffers; i++)
        if (fleet->offers[i].gpus == 0)
            return spw_errorf(err, "cloud offer %s has 0 GPUs", fleet->offers[i].instance_type), NULL;
    spw_engine_t *e = spw_xcalloc(1, sizeof(*e));
    e->fleet = fleet;
    e->policy = *policy;
    e->npools = fleet->npools;
    e->pools = spw_xcalloc(e->npools ? e->npools : 1, sizeof(pool_t));
    e->pool_speed = spw_xmalloc((e->npools ? e->npools : 1) * sizeof(double));
    for (size_t i = 0; i < e->npools; i++)
        e->pool_speed[i] =
            fleet->perf.scale_pools ? spw_fleet_speed(fleet, fleet->pools[i].model) : 1;
    e->offer_speed = spw_xmalloc((fleet->noffers ? fleet->noffers : 1) * sizeof(double));
    for (size_t i = 0; i < fleet->noffers; i++)
        e->offer_speed[i] = spw_fleet_speed(fleet, fleet->offers[i].model);
    for (size_t i = 0; i < e->npools; i++) {
        pool_t *p = &e->pools[i];
        p->spec = &fleet->pools[i];
        p->n = p->spec->nnodes;
        for (uint32_t k = 0; k < p->n; k++)
            if (p->spec->node_gpus[k] > p->maxcap)
                p->maxcap = p->spec->node_gpus[k];
        p->freeg = spw_xcalloc(p->n, sizeof(uint16_t));
        p->down = spw_xcalloc(p->n, sizeof(uint8_t));
        p->shadow = spw_xcalloc(p->n, sizeof(uint16_t));
        p->stamp = spw_xcalloc(p->n, sizeof(uint32_t));
        p->level = spw_xcalloc(p->maxcap + 1, sizeof(bits_t));
        p->level_n = spw_xcalloc(p->maxcap + 1, sizeof(uint32_t));
        for (uint32_t f = 1; f <= p->maxcap; f++)
            bits_init(&p->level[f], p->n);
        bits_init(&p->full, p->n);
        for (uint32_t k = 0; k < p->n; k++) {
            uint16_t cap = p->spec->node_gpus[k];
            p->total += cap;
            p->busy += cap;          /* pool_set_free subtracts it again */
            p->freeg[k] = 0;
            /* Start from "all busy" so pool_set_free does the bookkeeping. */
            if (cap == 0)
                continue;
            p->freeg[k] = 0;
            pool_set_free(p, k, cap);
        }
    }
    e->hash_cap = 64;
    e->cls_hash = spw_xcalloc(e->hash_cap, sizeof(uint32_t));
    e->gov = spw_govrt_create(fleet);
    const spw_gov_t *g = &fleet->gov;
    e->nhq = g->nteams + 1;
    e->hq = spw_xcalloc(e->nhq, sizeof(heldq_t));
    e->money_limits = isfinite(g->max_cloud_usd_per_h) || isfinite(g->max_cloud_gpus);
    for (size_t i = 0; i < g->nteams; i++) {
        const spw_team_spec_t *t = &g->teams[i];
        e->money_limits |= isfinite(t->budget_usd) || isfinite(t->max_cloud_usd_per_h) ||
                           isfinite(t->max_cloud_gpus) || isfinite(t->max_egress_usd_per_month);
    }
    e->held_retry_at = INFINITY;
    e->egress_retry_at = INFINITY;
    for (size_t i = 0; i < g->nteams && g->ndatasets; i++)
        e->egress_gate |= isfinite(g->teams[i].max_egress_usd_per_month);
    for (size_t i = 0; i < fleet->noffers; i++)
        e->commits |= spw_offer_committed(&fleet->offers[i]);
    size_t no = fleet->noffers ? fleet->noffers : 1;
    e->spot_cap = spw_xmalloc(no * sizeof(uint32_t));
    for (size_t i = 0; i < no; i++)
        e->spot_cap[i] = UINT32_MAX;
    for (int k = 0; k < 2; k++) {
        e->held_inst[k] = spw_xcalloc(no, sizeof(uint32_t));
        e->unavail_until[k] = spw_xcalloc(no, sizeof(double));
    }
    e->swait_next = INFINITY;
    e->od_next = INFINITY;
    if (e->policy.wait.kind == SPW_WAIT_PREDICT)
        e->pr = predict_create(e);
    e->fair = spw_fair_create(g, spw_fleet_gpus(fleet), fleet->npools, &e->policy);
    e->by_team = e->policy.queue == SPW_QUEUE_FAIR || spw_fair_quotas(e->fair);
    return e;
}

void spw_engine_destroy(spw_engine_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->npools; i++) {
        pool_t *p = &e->pools[i];
        for (uint32_t f = 1; f <= p->maxcap; f++)
            bits_free(&p->level[f]);
        bits_free(&p->full);
        free(p->level);
        free(p->level_n);
        free(p->freeg);
        free(p->down);
        free(p->shadow);
        free(p->stamp);
    }
    spw_fair_destroy(e->fair);
    free(e->pools);
    free(e->pool_speed);
    free(e->offer_speed);
    for (size_t i = 0; i < e->ncls; i++) {
        free(e->cls[i].pools);
        free(e->cls[i].offers);
        free(e->cls[i].soffers);
        free(e->cls[i].offer_speed);
        free(e->cls[i].pool_speed);
    }
    spw_govrt_destroy(e->gov);
    for (size_t t = 0; t < e->nhq; t++)
        free(e->hq[t].h);
    free(e->hq);
    free(e->rejected);
    free(e->newheld);
    free(e->swait);
    free(e->spot_cap);
    for (int k = 0; k < 2; k++) {
        free(e->held_inst[k]);
        free(e->unavail_until[k]);
    }
    /* Node lists of multi-node jobs still running are the engine's. */
    for (size_t i = 0; i < e->nmulti; i++) {
        free(e->multi[i]->l->nodes);
        e->multi[i]->l->nodes = NULL;
    }
    free(e->multi);
    for (size_t i = 0; i < e->nlchunk; i++)
        free(e->lchunk[i]);
    free(e->lchunk);
    free(e->lfree);
    free(e->od);
    free(e->sw);
    free(e->cls);
    free(e->cls_hash);
    free(e->exp);
    free(e->run);
    predict_free(e->pr, e->npools);
    free(e->aux);
    free(e->burst);
    free(e->placed);
    free(e);
}

static double wait_for(const spw_engine_t *e, const spw_job_t *j)
{
    const spw_wait_t *w = &e->policy.wait;
    switch (w->kind) {
    case SPW_WAIT_NEVER: return INFINITY;
    case SPW_WAIT_NONE: return 0;
    case SPW_WAIT_CONSTANT: return w->param;
    case SPW_WAIT_RUNTIME: return w->param * j->est_runtime_s;
    case SPW_WAIT_COMPUTE:
    case SPW_WAIT_PREDICT: return w->param * j->gpus * j->est_runtime_s;
    default: return INFINITY;
    }
}

/* Under gravity a job whose data would have to move waits longer before
 * bursting: on the offer it would pick (least compute + egress), the
 * transfer time plus the egress expressed as time on that offer (bursting
 * pays that much more than staying). */
static double gravity_wait(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j,
                           double now)
{
    if (!e->policy.gravity || !c->data || c->offer < 0)
        return 0;
    double best = INFINITY, extra = 0;
    for (uint32_t k = 0; k < c->noffers; k++) {
        cloud_pick_t pk;
        double rank = pick_eval(e, c, j, c->offers[k], c->spot, now, &pk);
        if (rank < best) {
            best = rank;
            extra = pk.transfer_s +
                    (pk.ch.usd_per_h > 0 ? pk.ch.egress_usd / pk.ch.usd_per_h * 3600.0 : 0);
        }
    }
    return extra;
}

/* Puts job j of class c on the list of bursts tried at this instant. */
static void burst_now(spw_engine_t *e, spw_job_t *j, spw_reason_t why, double now)
{
    j->reason = why;
    j->l->burst_at_s = now;
    GROW(e->burst, e->nburst, e->capburst);
    e->burst[e->nburst++] = j;
}

/* The latest time job j of class c can burst and still meet its deadline
 * in the cloud: its work left, a new instance's overhead and, when its
 * spot policy decides, the slack that policy keeps; INFINITY without a
 * deadline or an estimate. */
static double deadline_burst_at(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j)
{
    if (!isfinite(j->deadline_s) || !(j->est_runtime_s > 0))
        return INFINITY;
    double d = e->policy.restart_overhead_s + c->max_boot_s;
    double margin = d;
    spw_spot_policy_t pol;
    if (spot_use(e, c, j, &pol) == USE_POLICY) {
        spw_spot_job_t sj = {
            .work_s = j->est_runtime_s / c->min_speed,
            .deadline_s = j->deadline_s - j->submit_s,
            .restart_overhead_s = d,
            .checkpoint_interval_s = j->checkpoint_interval_s,
            .step_s = RELOOK_S,
        };
        margin = spw_spot_safety_slack_s(&sj);
    }
    return j->deadline_s - est_left(j) / c->min_speed - margin;
}

/* Queues job j of class c at now.  A job that can never run on-prem, or is
 * cloud_first, bursts at once; the others wait on-prem until wait_until
 * (the burst then has reason why, or WAIT_EXPIRED) or their deadline's
 * latest burst, whichever comes first. */
static void enqueue(spw_engine_t *e, jclass_t *c, spw_job_t *j, double now, double wait_until,
                    spw_reason_t why)
{
    int cloud = cloud_ok(e, c, j);
    j->state = SPW_JOB_QUEUED;
    e->queued++;
    if (c->never_onprem) {
        burst_now(e, j, why == SPW_REASON_SWITCH_SPOT ? why : SPW_REASON_NEVER_FITS_ONPREM, now);
        return;
    }
    if (cloud && c->placement == SPW_PLACE_CLOUD_FIRST) {
        burst_now(e, j, SPW_REASON_CLOUD_FIRST, now);
        return;
    }
    double t = cloud ? wait_until : INFINITY;
    j->l->burst_why = why == SPW_REASON_WAIT_EXPIRED ? 0 : (uint8_t)why;
    double dl = cloud ? deadline_burst_at(e, c, j) : INFINITY;
    if (dl < t) {
        t = dl;
        j->l->burst_why = SPW_REASON_DEADLINE;
    }
    j->l->burst_at_s = t;
    queue_add(e, c, j);
    e->dirty = 1;
    if (t < INFINITY)
        exp_push(e, j);
}

/* Whether some offer of class c (on demand, or spot when that is all it
 * may take) could run job j within its max runtime. */
static int finishes_somewhere(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j)
{
    int only_spot = c->spot || (j->spot_mode == SPW_SPOTMODE_ALWAYS && c->spot_ok);
    const uint32_t *list = only_spot ? c->soffers : c->offers;
    uint32_t n = only_spot ? c->nsoffers : c->noffers;
    for (uint32_t k = 0; k < n; k++)
        if (offer_finish(e, c, j, list[k], 0, NULL, NULL) != FIN_MAX_RUN)
            return 1;
    return 0;
}

/* Why job j of class c can never run (SPW_REASON_NONE: it can). */
static spw_reason_t never_runs(const spw_engine_t *e, const jclass_t *c, const spw_job_t *j)
{
    if (c->never_onprem && !cloud_ok(e, c, j))
        return c->denied ? SPW_REASON_NO_ALLOWED_PLACE : SPW_REASON_NO_PLACE;
    /* Only the cloud can hold it, and no offer could finish it: it would
     * only ever be bought and stopped unfinished. */
    if (c->never_onprem && isfinite(cloud_max_run_s(e, j)) && !finishes_somewhere(e, c, j))
        return SPW_REASON_CANNOT_FINISH;
    return SPW_REASON_NONE;
}

spw_reason_t spw_engine_never_runs(spw_engine_t *e, const spw_job_t *j)
{
    uint32_t ci = job_class(e, j);   /* may grow e->cls: before indexing it */
    return never_runs(e, &e->cls[ci], j);
}

void spw_engine_submit(spw_engine_t *e, spw_job_t *j, double now)
{
    uint32_t ci = job_class(e, j);
    jclass_t *c = &e->cls[ci];
    j->by_residency = (uint8_t)spw_govrt_profile(e->gov, c->profile)->onprem_by_residency;
    spw_reason_t never = never_runs(e, c, j);
    if (never != SPW_REASON_NONE) {
        j->state = SPW_JOB_UNSCHEDULABLE;
        j->reason = never;
        return;
    }
    links_take(e, j);
    j->l->cls = ci;
    enqueue(e, c, j, now, j->submit_s + wait_for(e, j) + gravity_wait(e, c, j, now),
            SPW_REASON_WAIT_EXPIRED);
    if (e->pr && j->state == SPW_JOB_QUEUED && wait_for(e, j) > 0 && j->l->burst_at_s > now)
        predict_add(e->pr, j);
}

size_t spw_engine_schedule(spw_engine_t *e, double now, spw_job_t ***placed)
{
    e->nplaced = 0;
    e->nrejected = 0;
    if (now >= e->egress_retry_at) {
        e->egress_retry_at = INFINITY;   /* a new month: copies may fit */
        e->dirty = 1;
    }
    /* Cloud-first jobs try the cloud before the pass can put them on-prem. */
    size_t nb = e->nburst;
    e->nburst = 0;
    for (size_t i = 0; i < nb; i++) {
        spw_job_t *j = e->burst[i];
        if (j->reason == SPW_REASON_CLOUD_FIRST)
            try_burst(e, &e->cls[j->l->cls], j, SPW_REASON_CLOUD_FIRST, now, 0);
        else
            e->burst[e->nburst++] = j;
    }
    pass(e, now);
    fill_commitments(e, now);
    /* predict:K: this instant's arrivals the pass left queued burst now
     * when their predicted start is past their budget. */
    if (e->pr)
        predict_bursts(e, now);
    /* Held bursts go before this instant's new ones: queue order. */
    retry_held(e, now);
    retry_spot(e, now);
    /* Jobs that can never fit on-prem burst at once. */
    nb = e->nburst;
    e->nburst = 0;
    for (size_t i = 0; i < nb; i++) {
        spw_job_t *j = e->burst[i];
        try_burst(e, &e->cls[j->l->cls], j, j->reason, now, 0);
    }
    for (exp_clean(e); e->nexp && e->exp[0].t <= now; exp_clean(e)) {
        spw_job_t *j = e->exp[0].job;
        exp_pop(e);
        spw_reason_t why = j->l->burst_why ? (spw_reason_t)j->l->burst_why : SPW_REASON_WAIT_EXPIRED;
        try_burst(e, &e->cls[j->l->cls], j, why, now, 1);
    }
    /* A burst, retried or rejected job left the queue: those behind it
     * may fit now (try_burst and refused set dirty). */
    pass(e, now);
    fill_commitments(e, now);
    reclaim(e, now);
    find_switches(e, now);
    *placed = e->placed;
    return e->nplaced;
}

size_t spw_engine_switches(spw_engine_t *e, spw_job_t ***jobs)
{
    *jobs = e->sw;
    return e->nsw;
}

/* Frees what a placed job holds and adds the cost of this attempt (from
 * start to now; nothing while a cloud instance was still booting). */
/* The worst case a live cloud placement of j holds against the budgets. */
static spw_charge_t held_charge(const spw_engine_t *e, const spw_job_t *j)
{
    const spw_offer_t *o = &e->fleet->offers[j->offer];
    double usd_h = j->instances * (j->spot ? o->spot_usd_per_h : o->ondemand_usd_per_h);
    spw_charge_t c = {
        .usd = spw_job_rare(j)->reserved_usd - j->l->att_egress_usd,
        .egress_usd = j->l->att_egress_usd,
        .usd_per_h = usd_h,
        .gpus = spw_offer_committed(o) ? 0 : (double)j->instances * o->gpus,
    };
    return c;
}

static void release(spw_engine_t *e, spw_job_t *j, double now)
{
    if (j->state == SPW_JOB_ONPREM) {
        /* The GPUs were held from placement, data transfer included. */
        double hours = (now - j->placed_s) / 3600.0;
        if (!(hours > 0))
            hours = 0;
        pool_t *p = &e->pools[j->pool];
        spw_fair_stop(e->fair, j, now);
        if (keeps_run_heap(e))
            run_del(e, j);
        if (j->l->nodes) {
            for (uint32_t k = 0; k < j->nnodes; k++)
                pool_set_free(p, j->l->nodes[k], p->spec->node_gpus[j->l->nodes[k]]);
            free(j->l->nodes);
            j->l->nodes = NULL;
            spw_job_t *last = e->multi[--e->nmulti];
            e->multi[j->l->multi_idx] = last;
            last->l->multi_idx = j->l->multi_idx;
        } else {
            pool_set_free(p, (uint32_t)j->node, (uint16_t)(p->freeg[j->node] + j->alloc_gpus));
        }
        j->cost_usd += hours * j->alloc_gpus * p->spec->cost_usd_per_gpu_h;
        e->dirty = 1;
    } else if (j->state == SPW_JOB_CLOUD) {
        /* Billed from the instance being up (boot is not billed here),
         * through the data transfer, to now; never above the reservation:
         * the caller stops a job at its max_runtime. */
        double hours = (now - (j->start_s - spw_job_rare(j)->transfer_s)) / 3600.0;
        if (!(hours > 0))
            hours = 0;
        const spw_offer_t *o = &e->fleet->offers[j->offer];
        double gpu_s = hours * 3600.0 * j->instances * o->gpus;
        if (j->spot)
            spw_job_rare_w(j)->spot_gpu_s += gpu_s;
        else if (!spw_offer_committed(o))
            spw_job_rare_w(j)->ondemand_gpu_s += gpu_s;
        uint32_t *held = &e->held_inst[j->spot][j->offer];
        *held = *held >= j->instances ? *held - j->instances : 0;
        if (j->spot)
            e->spot_dirty = e->od_dirty = 1;      /* spot capacity freed */
        spw_charge_t res = held_charge(e, j), act = res;
        act.usd = spw_job_rare(j)->billed ? spw_job_rare(j)->bill_usd : hours * res.usd_per_h;
        if (e->money_limits)
            act.usd = fmin(act.usd, res.usd);
        /* A commitment is paid used or idle, outside budgets: the job's
         * cost carries its share at the committed rate, no bill. */
        double committed = 0;
        if (spw_offer_committed(o)) {
            act.usd = 0;
            committed = gpu_s / 3600.0 * o->commit_usd_per_gpu_h;
        }
        spw_govrt_settle(e->gov, (int)j->team - 1, spw_job_rare(j)->charge_s, &res, &act);
        if (e->egress_gate && act.egress_usd < res.egress_usd)
            e->dirty = 1;        /* egress came back: a copy may fit now */
        j->cost_usd += act.usd + act.egress_usd + committed;
        spw_job_rare_t *x = spw_job_rare_w(j);
        x->reserved_usd = 0;
        x->charge_s = NAN;
        j->l->att_egress_usd = 0;
        /* Money and capacity came back: the team's held bursts, and those
         * waiting for an organisation cap, may go now. */
        heldq_of(e, j)->dirty = 1;
        e->org_freed = 1;
        e->held_dirty = 1;
    }
}

void spw_engine_finish(spw_engine_t *e, spw_job_t *j, double now)
{
    release(e, j, now);
    j->end_s = now;
    j->state = SPW_JOB_DONE;
    links_drop(e, j);
}

int spw_engine_cancel(spw_engine_t *e, spw_job_t *j, double now)
{
    if (j->state == SPW_JOB_QUEUED) {
        size_t k = 0;
        while (k < e->nburst && e->burst[k] != j)
            k++;
        if (k < e->nburst)
            e->burst[k] = e->burst[--e->nburst];
        else if (!e->cls[j->l->cls].never_onprem)
            queue_del(e, &e->cls[j->l->cls], j);   /* its expiry entry goes stale */
        /* else it is a held burst: its held entry goes stale */
        e->queued--;
        e->dirty = 1;
    } else if (j->state == SPW_JOB_ONPREM || j->state == SPW_JOB_CLOUD) {
        release(e, j, now);
    } else {
        return -1;
    }
    j->end_s = now;
    j->state = SPW_JOB_CANCELLED;
    links_drop(e, j);
    return 0;
}

/* Forgets where placed job j ran (it has been released). */
static void unplace(spw_job_t *j)
{
    j->pool = j->node = j->offer = -1;
    j->nnodes = j->alloc_gpus = j->instances = 0;
    j->placed_s = j->start_s = NAN;
}

int spw_engine_requeue(spw_engine_t *e, spw_job_t *j, double now)
{
    if (j->state != SPW_JOB_ONPREM && j->state != SPW_JOB_CLOUD)
        return -1;
    release(e, j, now);
    unplace(j);
    jclass_t *c = &e->cls[j->l->cls];
    j->reason = SPW_REASON_NONE;
    enqueue(e, c, j, now, now + wait_for(e, j) + gravity_wait(e, c, j, now),
            SPW_REASON_WAIT_EXPIRED);
    return 0;
}

int spw_engine_interrupt(spw_engine_t *e, spw_job_t *j, spw_interrupt_t why, double now)
{
    if (j->state != SPW_JOB_ONPREM && j->state != SPW_JOB_CLOUD)
        return -1;
    /* Progress of this attempt: after its restart overhead, up to now; it
     * is kept to the last checkpoint. */
    double run = (now - j->start_s - spw_engine_overhead_s(e, j)) * job_speed(j);
    if (!(run > 0))
        run = 0;
    /* A switch is a clean stop: the job saves all its progress first. */
    double kept = why == SPW_INTERRUPT_SWITCH
                      ? spw_job_rare(j)->done_s + run
                      : spw_ckpt_kept_s(j->checkpoint_interval_s, spw_job_rare(j)->done_s, run);
    double lost = spw_job_rare(j)->done_s + run - kept;
    spw_job_rare_t *x = spw_job_rare_w(j);
    x->lost_s += lost;
    x->lost_gpu_s += lost * j->gpus;
    x->done_s = kept;
    if (why == SPW_INTERRUPT_PREEMPTED || why == SPW_INTERRUPT_RECLAIMED) {
        x->preemptions++;
        if (j->state == SPW_JOB_CLOUD)
            x->last_offer = j->offer;
    } else if (why == SPW_INTERRUPT_NODE_FAILED) {
        x->failures++;
    }
    release(e, j, now);
    unplace(j);
    jclass_t *c = &e->cls[j->l->cls];
    if ((uint64_t)x->preemptions + x->failures > e->policy.max_restarts) {
        j->state = SPW_JOB_FAILED;
        j->reason = SPW_REASON_MAX_RESTARTS;
        j->end_s = now;
        links_drop(e, j);
        return 1;
    }
    x->restarts++;
    double wait = wait_for(e, j) + gravity_wait(e, c, j, now);
    if (why == SPW_INTERRUPT_PREEMPTED) {
        /* Its wait is over: on-prem if the pass finds room, else the cloud. */
        j->reason = SPW_REASON_PREEMPTED;
        enqueue(e, c, j, now, now, SPW_REASON_PREEMPTED);
    } else if (why == SPW_INTERRUPT_SWITCH) {
        /* The same, and its spot policy now picks spot. */
        j->reason = SPW_REASON_SWITCH_SPOT;
        enqueue(e, c, j, now, now, SPW_REASON_SWITCH_SPOT);
    } else if (why == SPW_INTERRUPT_RECLAIMED) {
        /* Back in the queue from its checkpoint; its wait counts from its
         * submission, as a failover's. */
        j->reason = SPW_REASON_RECLAIMED;
        enqueue(e, c, j, now, j->submit_s + wait, SPW_REASON_WAIT_EXPIRED);
    } else if (e->policy.failover == SPW_FAILOVER_BURST) {
        j->reason = SPW_REASON_NODE_FAILED;
        enqueue(e, c, j, now, j->submit_s + wait, SPW_REASON_FAILOVER);
    } else {
        j->reason = SPW_REASON_NODE_FAILED;
        enqueue(e, c, j, now, now + wait, SPW_REASON_WAIT_EXPIRED);
    }
    return 0;
}

int spw_engine_job_on_node(const spw_job_t *j, size_t pool, uint32_t node)
{
    if (j->state != SPW_JOB_ONPREM || j->pool < 0 || (size_t)j->pool != pool)
        return 0;
    if (!j->l->nodes)
        return j->node >= 0 && (uint32_t)j->node == node;
    for (uint32_t k = 0; k < j->nnodes; k++)
        if (j->l->nodes[k] == node)
            return 1;
    return 0;
}

int spw_engine_node_down(spw_engine_t *e, size_t pool, uint32_t node, int down, double now)
{
    (void)now;
    if (pool >= e->npools || node >= e->pools[pool].n)
        return -1;
    pool_t *p = &e->pools[pool];
    uint16_t cap = p->spec->node_gpus[node];
    down = !!down;
    if (p->down[node] == down)
        return -1;
    if (down) {
        if (p->freeg[node] != cap)
            return -1;              /* a job still holds it */
        pool_set_free(p, node, 0);
        p->busy -= cap;             /* out of service is not busy */
        p->total -= cap;
    } else {
        p->total += cap;
        p->busy += cap;
        pool_set_free(p, node, cap);
        e->dirty = 1;
    }
    p->down[node] = (uint8_t)down;
    return 0;
}

void spw_engine_set_spot_capacity(spw_engine_t *e, size_t offer, uint32_t instances, double now)
{
    (void)now;
    if (offer >= e->fleet->noffers || e->spot_cap[offer] == instances)
        return;
    e->spot_cap[offer] = instances;
    e->spot_dirty = e->od_dirty = 1;
}

uint32_t spw_engine_offer_held(const spw_engine_t *e, size_t offer, int spot)
{
    return offer < e->fleet->noffers ? e->held_inst[!!spot][offer] : 0;
}

void spw_engine_offer_unavailable(spw_engine_t *e, size_t offer, int spot, double until_s)
{
    if (offer >= e->fleet->noffers)
        return;
    double *u = &e->unavail_until[!!spot][offer];
    if (until_s > *u)
        *u = until_s;
    /* Jobs that wait for it look again when it ends (wait_capacity). */
}

size_t spw_engine_block(spw_engine_t *e, size_t offer, int spot, spw_block_t what,
                        double until_s)
{
    const spw_fleet_t *f = e->fleet;
    if (offer >= f->noffers)
        return 0;
    if (what == SPW_BLOCK_NONE || what == SPW_BLOCK_OFFER) {
        spw_engine_offer_unavailable(e, offer, spot, until_s);
        return 1;
    }
    const spw_offer_t *o = &f->offers[offer];
    size_t n = 0;
    for (size_t k = 0; k < f->noffers; k++) {
        const spw_offer_t *p = &f->offers[k];
        if (strcmp(p->provider, o->provider) != 0)
            continue;
        if (what == SPW_BLOCK_FAMILY) {
            if (strcmp(p->region, o->region) != 0 || !spw_offer_same_family(p, o))
                continue;
            spw_engine_offer_unavailable(e, k, spot, until_s);
        } else if (what == SPW_BLOCK_ACCOUNT) {
            spw_engine_offer_unavailable(e, k, 0, until_s);
            spw_engine_offer_unavailable(e, k, 1, until_s);
        } else {
            return 0;  /* JOB: the caller fails the job; no offer is blocked */
        }
        n++;
    }
    return n;
}

static int restore(spw_engine_t *e, spw_job_t *j)
{
    uint32_t ci = job_class(e, j);
    jclass_t *c = &e->cls[ci];
    if (j->state == SPW_JOB_CLOUD) {
        if (j->offer < 0 || (size_t)j->offer >= e->fleet->noffers || j->instances == 0)
            return -1;
        /* Its reservation holds again, in the period it was placed in. */
        spw_job_rare_t *x = spw_job_rare_w(j);
        if (isnan(x->charge_s))
            x->charge_s = j->placed_s;
        if (!(x->reserved_usd > 0)) {
            const spw_offer_t *o = &e->fleet->offers[j->offer];
            x->reserved_usd = j->instances * (j->spot ? o->spot_usd_per_h : o->ondemand_usd_per_h) *
                              (o->boot_delay_s + worst_run_s(e, j)) / 3600.0;
        }
        j->l->att_egress_usd = fmin(spw_job_rare(j)->egress_usd, spw_job_rare(j)->reserved_usd);
        spw_charge_t ch = held_charge(e, j);
        spw_govrt_reserve(e->gov, (int)j->team - 1, spw_job_rare(j)->charge_s, &ch);
        e->held_inst[!!j->spot][j->offer] += j->instances;
        j->l->cls = ci;
        if (!j->spot)
            od_track(e, c, j);
    } else if (j->state == SPW_JOB_ONPREM) {
        if (j->pool < 0 || (size_t)j->pool >= e->npools)
            return -1;
        pool_t *p = &e->pools[j->pool];
        if (!pool_accepts(e, p, j->gpu_mask))
            return -1;
        place_t pl = {.pool = j->pool, .node = 0, .multi = j->gpus > p->maxcap};
        if (pl.multi) {
            if (p->full_gpus < j->gpus)
                return -1;
        } else {
            if (j->node < 0 || (uint32_t)j->node >= p->spec->nnodes ||
                p->freeg[j->node] < j->gpus)
                return -1;
            pl.node = (uint32_t)j->node;
        }
        j->l->cls = ci;
        take_onprem(e, c, j, pl);
        e->dirty = 1;
        return 0;
    } else {
        return -1;
    }
    return 0;
}

int spw_engine_restore(spw_engine_t *e, spw_job_t *j)
{
    if (j->gpus == 0)
        return -1;
    links_take(e, j);
    if (restore(e, j) < 0) {
        links_drop(e, j);
        return -1;
    }
    return 0;
}

/* "A100|H100", or "any model". */
static void mask_text(const spw_engine_t *e, uint64_t mask, char *buf, size_t len)
{
    const spw_models_t *m = &e->fleet->models;
    size_t used = 0;
    buf[0] = '\0';
    if (mask == 0) {
        snprintf(buf, len, "any model");
        return;
    }
    for (int k = 0; k < m->n && used < len; k++)
        if (mask >> k & 1)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "|" : "", m->name[k]);
}

double spw_engine_worst_usd(spw_engine_t *e, const spw_job_t *j, size_t offer, int spot,
                            double now)
{
    cloud_pick_t pk;
    uint32_t ci = job_class(e, j);   /* may grow e->cls */
    pick_eval(e, &e->cls[ci], j, (uint32_t)offer, spot, now, &pk);
    return pk.ch.usd + pk.ch.egress_usd;
}

size_t spw_engine_explain(spw_engine_t *e, const spw_job_t *job, double now,
                          spw_candidate_t *out, size_t max)
{
    const spw_job_t *j = job;
    uint32_t ci = job_class(e, j);
    const jclass_t *c = &e->cls[ci];
    uint32_t g = j->gpus;
    char want[96];
    mask_text(e, j->gpu_mask, want, sizeof(want));
    size_t n = 0;
    spw_candidate_t x;
#define EMIT()                                                                \
    do {                                                                      \
        if (n < max)                                                          \
            out[n] = x;                                                       \
        n++;                                                                  \
    } while (0)
    const spw_profile_t *pr = spw_govrt_profile(e->gov, c->profile);
    /* A job in the cloud is weighed as if it held no place: otherwise its
     * own reservation counts against its budget and caps, and its own
     * instances against its offer's capacity, and every other offer reads
     * "the budget has $0 left".  Both are put back exactly before the
     * return. */
    int aside = j->state == SPW_JOB_CLOUD && j->l && j->offer >= 0 &&
                (size_t)j->offer < e->fleet->noffers && j->instances > 0;
    spw_govrt_aside_t gov_aside;
    uint32_t *held_own = NULL, held_was = 0;
    if (aside) {
        spw_charge_t ch = held_charge(e, j);
        spw_govrt_set_aside(e->gov, (int)j->team - 1, spw_job_rare(j)->charge_s, &ch,
                            &gov_aside);
        held_own = &e->held_inst[!!j->spot][j->offer];
        held_was = *held_own;
        *held_own = held_was >= j->instances ? held_was - j->instances : 0;
    }
    for (size_t i = 0; i < e->npools; i++) {
        const pool_t *p = &e->pools[i];
        memset(&x, 0, sizeof(x));
        x.kind = SPW_CAND_ONPREM;
        x.index = (int)i;
        x.est_start_s = NAN;
        double gb, tr, left, copy_usd;
        double egress = data_cost(e, j->data, (int)i, -1, now, &gb, &tr);
        x.est_cost_usd = g * p->spec->cost_usd_per_gpu_h *
                             (tr + j->est_runtime_s / c_pool_speed(e, c, (uint32_t)i)) / 3600.0 +
                         egress;
        uint32_t maxfree = 0;
        for (uint32_t f = p->maxcap; f > 0 && !maxfree; f--)
            if (p->level_n[f])
                maxfree = f;
        if (!pool_accepts(e, p, j->gpu_mask)) {
            snprintf(x.why, sizeof(x.why), "pool %s has %s GPUs; the job accepts %s",
                     p->spec->name, e->fleet->models.name[p->spec->model], want);
        } else if (!bit(pr->pools, i)) {
            spw_govrt_why_not(e->gov, c->profile, (int)i, -1, x.why, sizeof(x.why));
        } else if (g > p->maxcap && g > pool_configured_gpus(p)) {
            snprintf(x.why, sizeof(x.why), "needs %u GPUs; pool %s has %llu in all", g,
                     p->spec->name, (unsigned long long)pool_configured_gpus(p));
        } else if (g > p->maxcap && g > p->total) {
            snprintf(x.why, sizeof(x.why), "needs %u GPUs; pool %s has %llu in service now "
                     "(nodes are down): it waits for them", g, p->spec->name,
                     (unsigned long long)p->total);
        } else if (copy_over(e, c, (uint32_t)i, now, &left, &copy_usd) > 0) {
            const spw_team_spec_t *ts = &e->fleet->gov.teams[c->team - 1];
            char month[24];
            spw_period_label(SPW_PERIOD_MONTH, e->fleet->gov.origin_s + now, month,
                             sizeof(month));
            snprintf(x.why, sizeof(x.why),
                     "waits for team %.20s's egress cap: its data (%.0f GB) to %.16s costs "
                     "$%.2f; $%.2f of its %.8s cap ($%.2f) is left",
                     ts->name, gb, p->spec->name, copy_usd, left, month,
                     ts->max_egress_usd_per_month);
        } else if (g > p->maxcap ? p->full_gpus >= g : maxfree >= g) {
            x.ok = 1;
            x.est_start_s = now + tr;
            if (gb > 0)
                snprintf(x.why, sizeof(x.why), "fits in pool %s now; its data (%.0f GB) takes %.0f s to copy",
                         p->spec->name, gb, tr);
            else
                snprintf(x.why, sizeof(x.why), "fits in pool %s now", p->spec->name);
        } else if (g > p->maxcap) {
            snprintf(x.why, sizeof(x.why),
                     "needs whole nodes with %u GPUs; pool %s has %llu on entirely free nodes now",
                     g, p->spec->name, (unsigned long long)p->full_gpus);
        } else {
            snprintf(x.why, sizeof(x.why),
                     "needs %u GPUs on one node; the most free on a node of pool %s is %u now",
                     g, p->spec->name, maxfree);
        }
        EMIT();
    }
    /* What a burst would do now: the offer it would take, or why none. */
    cloud_pick_t pick;
    char refusal[160] = "";
    double flip = INFINITY;
    int by_deadline = 0;
    spw_spot_inst_t choice =
        c->noffers ? spot_choice(e, c, j, now, &flip, &by_deadline) : SPW_SPOT_ONDEMAND;
    int espot = choice == SPW_SPOT_SPOT;
    spw_admit_t adm = c->noffers && choice != SPW_SPOT_IDLE
                          ? pick_offer(e, c, j, espot, now, &pick, refusal, sizeof(refusal), NULL)
                          : SPW_ADMIT_OK;
    int picked = c->noffers && choice != SPW_SPOT_IDLE && adm == SPW_ADMIT_OK;
    memset(&x, 0, sizeof(x));
    x.kind = SPW_CAND_WAIT;
    x.index = -1;
    x.est_start_s = NAN;
    x.est_cost_usd = NAN;
    char wtxt[48];
    spw_wait_format(&e->policy.wait, wtxt, sizeof(wtxt));
    x.ok = 1;
    if (c->never_onprem && !cloud_ok(e, c, j))
        snprintf(x.why, sizeof(x.why), "no pool %s %u GPUs of %.40s, and it may not burst: it "
                 "can never run", c->npools < e->npools ? "its rules allow can hold" : "can ever hold",
                 g, want);
    else if (c->never_onprem)
        snprintf(x.why, sizeof(x.why), "no pool %s %u GPUs of %.40s: no wait, it bursts",
                 c->npools < e->npools ? "its rules allow can hold" : "can ever hold", g, want);
    else if (c->offer < 0 && c->placement == SPW_PLACE_ONPREM_ONLY)
        snprintf(x.why, sizeof(x.why), "placement onprem_only: it waits for on-prem as long as it takes");
    else if (c->offer < 0 && pr->onprem_by_residency)
        snprintf(x.why, sizeof(x.why), "its residency allows no cloud region: it waits for on-prem");
    else if (c->offer < 0)
        snprintf(x.why, sizeof(x.why), "%s: it waits for on-prem as long as it takes",
                 e->policy.wait.kind == SPW_WAIT_NEVER ? "wait policy never keeps it on-prem"
                 : c->any_offer ? "its rules allow no cloud offer that serves it"
                                : "no cloud offer can serve it");
    else if (j->state == SPW_JOB_QUEUED && j->reason == SPW_REASON_ONPREM_ONLY_BUDGET)
        snprintf(x.why, sizeof(x.why), "its team's budget ran out (on_exhausted: onprem_only): "
                 "it waits for on-prem");
    else if (j->state == SPW_JOB_QUEUED &&
             (j->reason == SPW_REASON_HELD_BUDGET || j->reason == SPW_REASON_HELD_CAP))
        snprintf(x.why, sizeof(x.why), "held: %.150s", refusal[0] ? refusal : spw_reason_text(j->reason));
    else if (choice == SPW_SPOT_IDLE && isfinite(flip))
        snprintf(x.why, sizeof(x.why), "waits for spot capacity (on-prem may take it meanwhile); "
                 "its deadline sends it on demand at t=%.0f s", flip);
    else if (choice == SPW_SPOT_IDLE)
        snprintf(x.why, sizeof(x.why), "waits for spot capacity (spot only; on-prem may take it "
                 "meanwhile)");
    else if (c->placement == SPW_PLACE_CLOUD_FIRST)
        snprintf(x.why, sizeof(x.why), "placement cloud_first: no wait, it bursts");
    else if (j->state == SPW_JOB_QUEUED && isfinite(spw_engine_predicted_start(e, j, now))) {
        double ps = spw_engine_predicted_start(e, j, now);
        x.est_start_s = ps < j->l->burst_at_s ? ps : j->l->burst_at_s;
        snprintf(x.why, sizeof(x.why), "wait policy %s: the queue played forward starts it on-prem "
                 "at t=%.0f s; it bursts at t=%.0f s if on-prem has not by then",
                 wtxt, ps, j->l->burst_at_s);
    } else if (j->state == SPW_JOB_QUEUED) {
        x.est_start_s = j->l->burst_at_s;
        snprintf(x.why, sizeof(x.why), "wait policy %s: it bursts at t=%.0f s unless on-prem frees up first",
                 wtxt, j->l->burst_at_s);
    } else {
        double w = wait_for(e, j);
        x.est_start_s = now + w;
        snprintf(x.why, sizeof(x.why), "wait policy %s: it would wait %.0f s before bursting", wtxt, w);
    }
    EMIT();
    int late_ok = !isfinite(j->deadline_s) ||
                  !some_offer_in_time(e, c, j, espot ? c->soffers : c->offers,
                                      espot ? c->nsoffers : c->noffers, espot, now, 1);
    /* What the chosen offer costs for the work, as the engine ranks it. */
    double pick_work = picked ? pick.ch.usd_per_h * j->est_runtime_s /
                                        c_offer_speed(e, c, pick.offer) / 3600.0 +
                                    (e->policy.gravity ? pick.ch.egress_usd : 0)
                              : NAN;
    for (size_t i = 0; i < e->fleet->noffers; i++) {
        const spw_offer_t *o = &e->fleet->offers[i];
        double run_s, end_s;
        finish_t fin = offer_finish(e, c, j, (uint32_t)i, now, &run_s, &end_s);
        memset(&x, 0, sizeof(x));
        x.kind = SPW_CAND_CLOUD;
        x.index = (int)i;
        x.instances = (g + o->gpus - 1) / o->gpus;
        cloud_pick_t pk;
        double rank = pick_eval(e, c, j, (uint32_t)i, espot, now, &pk);
        double usd_h = pk.ch.usd_per_h;
        x.est_start_s = now + o->boot_delay_s + pk.transfer_s;
        x.est_cost_usd = usd_h * j->est_runtime_s / c_offer_speed(e, c, (uint32_t)i) / 3600.0 +
                         pk.ch.egress_usd;
        if (e->policy.wait.kind == SPW_WAIT_NEVER) {
            x.est_start_s = x.est_cost_usd = NAN;
            snprintf(x.why, sizeof(x.why), "wait policy never keeps every job on-prem");
        } else if (!offer_accepts(e, o, j->gpu_mask)) {
            x.est_start_s = x.est_cost_usd = NAN;
            snprintf(x.why, sizeof(x.why), "%s has %s GPUs; the job accepts %s", o->instance_type,
                     o->model >= 0 ? e->fleet->models.name[o->model] : "?", want);
        } else if (!offer_fits_gang(o, c)) {
            if (c->per_node)
                snprintf(x.why, sizeof(x.why), "%s has %u GPU%s per instance; the job's nodes need "
                         "%u", o->instance_type, o->gpus, o->gpus == 1 ? "" : "s", c->per_node);
            else
                snprintf(x.why, sizeof(x.why), "%s has %u GPU%s per instance; the job's %u GPUs "
                         "must be on one node (gpus_per_node lets it span several)",
                         o->instance_type, o->gpus, o->gpus == 1 ? "" : "s", g);
        } else if (!bit(pr->offers, i) || isnan(usd_h)) {
            if (spw_govrt_why_not(e->gov, c->profile, -1, (int)i, x.why, sizeof(x.why)) < 0)
                snprintf(x.why, sizeof(x.why), "%s has no spot price", o->instance_type);
        } else if (fin == FIN_MAX_RUN) {
            snprintf(x.why, sizeof(x.why), "%u x %s cannot finish: its work takes %.0f s on %s, "
                     "more than it may run (%.0f s): it would be stopped unfinished",
                     x.instances, o->instance_type, run_s,
                     o->model >= 0 ? e->fleet->models.name[o->model] : "?", cloud_max_run_s(e, j));
        } else if (fin == FIN_DEADLINE && !late_ok) {
            snprintf(x.why, sizeof(x.why), "%u x %s would end at t=%.0f s, after its deadline "
                     "(t=%.0f s); other offers meet it", x.instances, o->instance_type, end_s,
                     j->deadline_s);
        } else if (spw_offer_committed(o) && !has_capacity(e, (uint32_t)i, 0, x.instances, now)) {
            snprintf(x.why, sizeof(x.why), "commitment %.40s has no room: %u of its %u GPUs are "
                     "held (paid used or idle)", o->commit_name, e->held_inst[0][i] * o->gpus,
                     o->commit_gpus);
        } else if (picked && pick.offer == i && spw_offer_committed(o)) {
            x.ok = 1;
            snprintf(x.why, sizeof(x.why), "commitment %.40s: %u x %s free now, paid used or "
                     "idle at $%.4g/GPU-h: no cost beyond the commitment", o->commit_name,
                     x.instances, o->instance_type, o->commit_usd_per_gpu_h);
        } else if (picked && pick.offer == i) {
            x.ok = 1;
            snprintf(x.why, sizeof(x.why),
                     "the best allowed offer: %u x %s, $%.4g for the work at $%.4g/h%s; worst "
                     "case $%.2f fits every budget", x.instances, o->instance_type, pick_work,
                     usd_h, espot ? " (spot)" : "", pk.ch.usd + pk.ch.egress_usd);
        } else if (picked) {
            snprintf(x.why, sizeof(x.why), "%u x %s: $%.4g for the work%s (at $%.4g/h), more "
                     "than the chosen offer's $%.4g", x.instances, o->instance_type, rank,
                     e->policy.gravity && (pk.ch.egress_usd > 0 || pick.ch.egress_usd > 0)
                         ? " with egress" : "", usd_h, pick_work);
        } else {
            char w2[160];
            if (spw_govrt_admit(e->gov, (int)j->team - 1, now, &pk.ch, w2, sizeof(w2)) != SPW_ADMIT_OK)
                snprintf(x.why, sizeof(x.why), "%s", w2);
            else
                snprintf(x.why, sizeof(x.why), "%u x %s at $%.4g/h", x.instances, o->instance_type, usd_h);
        }
        EMIT();
    }
#undef EMIT
    if (aside) {
        spw_govrt_put_back(e->gov, &gov_aside);
        *held_own = held_was;
    }
    return n;
}

double spw_engine_next_wakeup(spw_engine_t *e)
{
    exp_clean(e);
    double t = e->nexp ? e->exp[0].t : INFINITY;
    if (e->nswait && e->swait_next < t)
        t = e->swait_next;
    if (e->nod && e->od_next < t)
        t = e->od_next;
    double r = spw_fair_next(e->fair);
    if (r < t)
        t = r;
    if (e->queued && e->egress_retry_at < t)
        t = e->egress_retry_at;
    return e->nheld && e->held_retry_at < t ? e->held_retry_at : t;
}

double spw_engine_overhead_s(const spw_engine_t *e, const spw_job_t *j)
{
    return j->state == SPW_JOB_CLOUD || spw_job_rare(j)->restarts ? e->policy.restart_overhead_s
                                                                  : 0;
}

double spw_engine_max_runtime(const spw_engine_t *e, const spw_job_t *j)
{
    if (j->max_runtime_s > 0 || j->state == SPW_JOB_CLOUD)
        return cloud_max_run_s(e, j);
    return INFINITY;
}

/* Keeps the entries of v[0..*n) whose job is still in the engine. */
static void keep_present(spw_job_t **v, size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (v[i]->l)
            v[k++] = v[i];
    *n = k;
}

void spw_engine_forget_left(spw_engine_t *e)
{
    /* The heaps are rebuilt from what stays: a stale entry of a job still
     * in the engine stays too, and is dropped lazily as before. */
    expiry_t *exp = e->exp;
    size_t nexp = e->nexp;
    e->exp = NULL;
    e->nexp = e->capexp = 0;
    for (size_t i = 0; i < nexp; i++)
        if (exp[i].job->l)
            exp_insert(e, exp[i]);
    free(exp);
    for (size_t t = 0; t < e->nhq; t++) {
        heldq_t *q = &e->hq[t];
        size_t n = q->n;
        spw_job_t **h = q->h;
        e->nheld -= n;
        q->h = NULL;
        q->n = q->cap = 0;
        for (size_t i = 0; i < n; i++)
            if (h[i]->l)
                heldq_push(e, q, h[i]);
        free(h);
    }
    size_t k = 0;
    for (size_t i = 0; i < e->nod; i++)
        if (e->od[i].job->l)
            e->od[k++] = e->od[i];
    e->nod = k;
    keep_present(e->swait, &e->nswait);
    keep_present(e->sw, &e->nsw);
    keep_present(e->burst, &e->nburst);
    keep_present(e->placed, &e->nplaced);
    keep_present(e->rejected, &e->nrejected);
    keep_present(e->newheld, &e->nnewheld);
    if (e->pr)
        keep_present(e->pr->jobs, &e->pr->njobs);
}

size_t spw_engine_held(spw_engine_t *e, spw_job_t ***held)
{
    if (e->newheld_read)
        e->nnewheld = 0;
    e->newheld_read = 1;
    *held = e->newheld;
    return e->nnewheld;
}

double spw_engine_burst_at(const spw_engine_t *e, const spw_job_t *j)
{
    (void)e;
    return j->state == SPW_JOB_QUEUED && j->l && !is_held(j) ? j->l->burst_at_s : INFINITY;
}

size_t spw_engine_rejected(spw_engine_t *e, spw_job_t ***rejected)
{
    *rejected = e->rejected;
    return e->nrejected;
}

size_t spw_engine_reclaims(spw_engine_t *e, spw_job_t ***jobs)
{
    *jobs = e->recl;
    return e->nrecl;
}

const spw_fair_t *spw_engine_fair(const spw_engine_t *e)
{
    return e->fair;
}

spw_govrt_t *spw_engine_gov(spw_engine_t *e)
{
    return e->gov;
}

size_t spw_engine_queued(const spw_engine_t *e)
{
    return e->queued;
}

void spw_engine_stats(const spw_engine_t *e, spw_engine_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    out->queued = e->queued;
    for (size_t i = 0; i < e->npools; i++) {
        out->onprem_gpus += e->pools[i].total;
        out->onprem_busy_gpus += e->pools[i].busy;
    }
    out->classes = e->ncls;
    out->passes = e->passes;
    out->reservations = e->reservations;
}

int spw_engine_cloud_choice(spw_engine_t *e, uint32_t gpus, uint64_t gpu_mask,
                            uint32_t *instances)
{
    spw_job_t j;
    memset(&j, 0, sizeof(j));
    j.gpus = gpus;
    j.gpu_mask = gpu_mask;
    uint32_t ci = job_class(e, &j);   /* may grow e->cls */
    const jclass_t *c = &e->cls[ci];
    if (instances)
        *instances = c->instances;
    return c->offer;
}

void spw_engine_offers_repriced(spw_engine_t *e)
{
    for (size_t k = 0; k < e->ncls; k++) {
        jclass_t *c = &e->cls[k];
        sort_offers(e, c, c->offers, c->noffers, c->spot);
        sort_offers(e, c, c->soffers, c->nsoffers, 1);
        if (c->noffers) {
            const spw_offer_t *o = &e->fleet->offers[c->offers[0]];
            c->offer = (int)c->offers[0];
            c->instances = (c->gpus + o->gpus - 1) / o->gpus;
        }
    }
    e->spot_dirty = e->od_dirty = 1;
}
