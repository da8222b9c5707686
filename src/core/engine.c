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
    uint32_t *pools;         /* eligible on-prem pools, in fleet order */
    uint32_t npools;
    int never_onprem;        /* no eligible pool can ever hold it */
    int offer;               /* cheapest cloud offer, -1 = none */
    uint32_t instances;      /* instances of that offer */
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
    uint32_t epoch;               /* EASY reservation counter (see pool_t.stamp) */
    size_t queued;
    int dirty;                    /* something changed since the last pass */
    uint64_t passes, reservations;
};

#define GROW(arr, n, cap)                                                     \
    do {                                                                      \
        if ((n) == (cap)) {                                                   \
            (cap) = (cap) ? (cap) * 2 : 64;                                   \
            (arr) = spw_xrealloc((arr), (cap) * sizeof(*(arr)));              \
        }                                                                     \
    } while (0)

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
    return t ? t->l.min_est_s : INFINITY;
}

static inline void treap_update(spw_job_t *t)
{
    double m = t->est_runtime_s, a = min_est(t->l.left), b = min_est(t->l.right);
    t->l.min_est_s = m < a ? (m < b ? m : b) : (a < b ? a : b);
}

static spw_job_t *treap_insert(const spw_engine_t *e, spw_job_t *t, spw_job_t *j)
{
    if (!t)
        return j;
    if (job_before(e, j, t)) {
        t->l.left = treap_insert(e, t->l.left, j);
        if (t->l.left->l.prio > t->l.prio) {
            spw_job_t *l = t->l.left;
            t->l.left = l->l.right;
            l->l.right = t;
            treap_update(t);
            t = l;
        }
    } else {
        t->l.right = treap_insert(e, t->l.right, j);
        if (t->l.right->l.prio > t->l.prio) {
            spw_job_t *r = t->l.right;
            t->l.right = r->l.left;
            r->l.left = t;
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
    if (a->l.prio > b->l.prio) {
        a->l.right = treap_merge(a->l.right, b);
        treap_update(a);
        return a;
    }
    b->l.left = treap_merge(a, b->l.left);
    treap_update(b);
    return b;
}

static spw_job_t *treap_remove(const spw_engine_t *e, spw_job_t *t, spw_job_t *j)
{
    if (!t)
        return NULL;
    if (t == j) {
        spw_job_t *m = treap_merge(t->l.left, t->l.right);
        j->l.left = j->l.right = NULL;
        return m;
    }
    if (job_before(e, j, t))
        t->l.left = treap_remove(e, t->l.left, j);
    else
        t->l.right = treap_remove(e, t->l.right, j);
    treap_update(t);
    return t;
}

static spw_job_t *treap_first(spw_job_t *t)
{
    while (t && t->l.left)
        t = t->l.left;
    return t;
}

/* First job in queue order whose estimate is at most `limit`, or NULL. */
static spw_job_t *treap_first_short(spw_job_t *t, double limit)
{
    while (t) {
        if (min_est(t->l.left) <= limit)
            t = t->l.left;
        else if (t->est_runtime_s <= limit)
            return t;
        else if (min_est(t->l.right) <= limit)
            t = t->l.right;
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
    j->l.left = j->l.right = NULL;
    j->l.prio = hash32(j->order);
    j->l.min_est_s = j->est_runtime_s;
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

static void class_setup(spw_engine_t *e, jclass_t *c)
{
    c->pools = spw_xmalloc(e->npools * sizeof(uint32_t));
    c->npools = 0;
    c->never_onprem = 1;
    for (size_t i = 0; i < e->npools; i++) {
        pool_t *p = &e->pools[i];
        if (!pool_accepts(e, p, c->mask))
            continue;
        c->pools[c->npools++] = (uint32_t)i;
        if (c->gpus <= p->maxcap || c->gpus <= p->total)
            c->never_onprem = 0;
    }
    c->offer = -1;
    /* Under `wait: never` nothing goes to the cloud, not even a job that
     * can never fit on-prem: that one is unschedulable. */
    size_t noffers = e->policy.wait.kind == SPW_WAIT_NEVER ? 0 : e->fleet->noffers;
    double best = INFINITY;
    for (size_t i = 0; i < noffers; i++) {
        const spw_offer_t *o = &e->fleet->offers[i];
        if (!offer_accepts(e, o, c->mask))
            continue;
        uint32_t inst = (c->gpus + o->gpus - 1) / o->gpus;
        double usd = o->ondemand_usd_per_h * inst;
        if (usd < best) {
            best = usd;
            c->offer = (int)i;
            c->instances = inst;
        }
    }
}

static uint32_t class_of(spw_engine_t *e, uint32_t gpus, uint64_t mask)
{
    uint64_t key = (uint64_t)gpus * 0x9E3779B97F4A7C15ULL ^ mask;
    size_t i = hash32(key) & (e->hash_cap - 1);
    for (;; i = (i + 1) & (e->hash_cap - 1)) {
        uint32_t v = e->cls_hash[i];
        if (!v)
            break;
        jclass_t *c = &e->cls[v - 1];
        if (c->gpus == gpus && c->mask == mask)
            return v - 1;
    }
    GROW(e->cls, e->ncls, e->capcls);
    jclass_t *c = &e->cls[e->ncls];
    memset(c, 0, sizeof(*c));
    c->gpus = gpus;
    c->mask = mask;
    class_setup(e, c);
    e->cls_hash[i] = (uint32_t)++e->ncls;
    if (e->ncls * 2 > e->hash_cap) {
        /* Rehash into a table twice the size. */
        size_t cap = e->hash_cap * 2;
        uint32_t *h = spw_xcalloc(cap, sizeof(uint32_t));
        for (size_t k = 0; k < e->ncls; k++) {
            uint64_t kk = (uint64_t)e->cls[k].gpus * 0x9E3779B97F4A7C15ULL ^ e->cls[k].mask;
            size_t s = hash32(kk) & (cap - 1);
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

/* ---- placement ----------------------------------------------------------- */

/* Where a job of class c would go now: pool and node (single-node) or pool
 * only (multi-node: whole free nodes, lowest index first).  -1 if nowhere. */
typedef struct place {
    int pool;       /* pool index, -1 = does not fit */
    uint32_t node;  /* node for a single-node job */
    int multi;      /* takes whole nodes */
} place_t;

static place_t find_place(const spw_engine_t *e, const jclass_t *c)
{
    place_t best = {.pool = -1, .node = 0, .multi = 0};
    uint32_t best_level = UINT32_MAX;
    uint32_t g = c->gpus;
    for (uint32_t k = 0; k < c->npools; k++) {
        const pool_t *p = &e->pools[c->pools[k]];
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

static inline int class_fits(const spw_engine_t *e, const jclass_t *c)
{
    uint32_t g = c->gpus;
    for (uint32_t k = 0; k < c->npools; k++) {
        const pool_t *p = &e->pools[c->pools[k]];
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

static inline double est_end(const spw_job_t *j)
{
    return j->start_s + j->est_runtime_s;
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
    e->run[a].job->l.run_idx = (uint32_t)a;
    e->run[b].job->l.run_idx = (uint32_t)b;
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
    e->run[e->nrun] = (runent_t){.end = est_end(j), .order = j->order, .job = j};
    j->l.run_idx = (uint32_t)e->nrun;
    run_up(e, e->nrun++);
}

static void run_del(spw_engine_t *e, spw_job_t *j)
{
    size_t i = j->l.run_idx;
    if (i >= e->nrun || e->run[i].job != j)
        return;
    e->nrun--;
    if (i != e->nrun) {
        e->run[i] = e->run[e->nrun];
        e->run[i].job->l.run_idx = (uint32_t)i;
        run_down(e, i);
        run_up(e, i);
    }
}

/* ---- expiry heap --------------------------------------------------------- */

static inline int exp_before(const expiry_t *a, const expiry_t *b)
{
    return a->t != b->t ? a->t < b->t : a->order < b->order;
}

static void exp_push(spw_engine_t *e, spw_job_t *j)
{
    GROW(e->exp, e->nexp, e->capexp);
    size_t i = e->nexp++;
    expiry_t x = {.t = j->l.burst_at_s, .order = j->order, .job = j};
    while (i && exp_before(&x, &e->exp[(i - 1) / 2])) {
        e->exp[i] = e->exp[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->exp[i] = x;
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
        if (x->job->state == SPW_JOB_QUEUED && x->job->l.burst_at_s == x->t)
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
        j->l.nodes = nodes;
        GROW(e->multi, e->nmulti, e->capmulti);
        j->l.multi_idx = (uint32_t)e->nmulti;
        e->multi[e->nmulti++] = j;
        j->node = (int32_t)nodes[0];
        j->nnodes = cnt;
        j->alloc_gpus = got;
    }
    if (e->policy.backfill == SPW_BACKFILL_EASY)
        run_push(e, j);
}

static void start_onprem(spw_engine_t *e, jclass_t *c, spw_job_t *j, place_t pl,
                         spw_reason_t why, double now)
{
    queue_del(e, c, j);
    e->queued--;
    j->state = SPW_JOB_ONPREM;
    j->placed_s = j->start_s = now;
    take_onprem(e, c, j, pl);
    j->reason = why;
    note_placed(e, j);
}

static void start_cloud(spw_engine_t *e, spw_job_t *j, spw_reason_t why, double now)
{
    const jclass_t *c = &e->cls[j->l.cls];
    const spw_offer_t *o = &e->fleet->offers[c->offer];
    j->state = SPW_JOB_CLOUD;
    j->reason = why;
    j->offer = c->offer;
    j->instances = c->instances;
    j->placed_s = now;
    j->start_s = now + o->boot_delay_s;
    note_placed(e, j);
}

/* ---- passes --------------------------------------------------------------- */

static jclass_t *global_head(spw_engine_t *e)
{
    jclass_t *best = NULL;
    for (size_t i = 0; i < e->ncls; i++) {
        jclass_t *c = &e->cls[i];
        if (c->head && (!best || job_before(e, c->head, best->head)))
            best = c;
    }
    return best;
}

static void pass_hol(spw_engine_t *e, double now)
{
    for (;;) {
        jclass_t *c = global_head(e);
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
            if (c->head && (!best || job_before(e, c->head, best->head)) && class_fits(e, c))
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
        p->head_ok = 1;
        p->sh_full = p->full_gpus;
        p->sh_cnt = 0;
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
        if (j->l.nodes) {
            for (uint32_t k = 0; k < j->nnodes; k++)
                shadow_set(e, p, j->l.nodes[k], p->spec->node_gpus[j->l.nodes[k]], g);
        } else {
            uint32_t n = (uint32_t)j->node;
            shadow_set(e, p, n, (uint16_t)(sh_get(e, p, n) + j->alloc_gpus), g);
        }
        if (shadow_fits_pool(p, g)) {
            double t = est_end(j);
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
    int ends_first = j->est_runtime_s <= r->t - now;
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
        h = global_head(e);
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
        any = e->cls[i].head && &e->cls[i] != h && class_fits(e, &e->cls[i]);
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
            if (!c->head || c == h)
                continue;
            place_t pl = find_place(e, c);
            if (pl.pool < 0)
                continue;
            spw_job_t *cand = c->head;
            if (!keeps_reservation(e, &r, c, cand, pl, now, 0))
                cand = treap_first_short(c->root, r.t - now);
            if (cand && (!bj || job_before(e, cand, bj))) {
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
    if (e->policy.backfill == SPW_BACKFILL_EASY)
        pass_easy(e, now);
    else if (e->policy.scan == SPW_SCAN_SKIP)
        pass_skip(e, now);
    else
        pass_hol(e, now);
}

/* ---- public calls --------------------------------------------------------- */

spw_engine_t *spw_engine_create(const spw_fleet_t *fleet, const spw_policy_t *policy,
                                spw_error_t *err)
{
    for (size_t i = 0; i < fleet->npools; i++) {
        const spw_pool_spec_t *ps = &fleet->pools[i];
        if (ps->nnodes == 0)
            return spw_errorf(err, "pool '%s' has no nodes", ps->name), NULL;
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
    for (size_t i = 0; i < e->npools; i++) {
        pool_t *p = &e->pools[i];
        p->spec = &fleet->pools[i];
        p->n = p->spec->nnodes;
        for (uint32_t k = 0; k < p->n; k++)
            if (p->spec->node_gpus[k] > p->maxcap)
                p->maxcap = p->spec->node_gpus[k];
        p->freeg = spw_xcalloc(p->n, sizeof(uint16_t));
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
        free(p->shadow);
        free(p->stamp);
    }
    free(e->pools);
    for (size_t i = 0; i < e->ncls; i++)
        free(e->cls[i].pools);
    /* Node lists of multi-node jobs still running are the engine's. */
    for (size_t i = 0; i < e->nmulti; i++) {
        free(e->multi[i]->l.nodes);
        e->multi[i]->l.nodes = NULL;
    }
    free(e->multi);
    free(e->cls);
    free(e->cls_hash);
    free(e->exp);
    free(e->run);
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
    case SPW_WAIT_COMPUTE: return w->param * j->gpus * j->est_runtime_s;
    default: return INFINITY;
    }
}

void spw_engine_submit(spw_engine_t *e, spw_job_t *j, double now)
{
    uint32_t ci = class_of(e, j->gpus, j->gpu_mask);
    jclass_t *c = &e->cls[ci];
    j->l.cls = ci;
    j->l.nodes = NULL;
    if (c->never_onprem) {
        if (c->offer < 0) {
            j->state = SPW_JOB_UNSCHEDULABLE;
            j->reason = SPW_REASON_NO_PLACE;
            return;
        }
        j->state = SPW_JOB_QUEUED;
        j->reason = SPW_REASON_NEVER_FITS_ONPREM;
        j->l.burst_at_s = now;
        GROW(e->burst, e->nburst, e->capburst);
        e->burst[e->nburst++] = j;
        e->queued++;
        return;
    }
    j->state = SPW_JOB_QUEUED;
    j->l.burst_at_s = c->offer < 0 ? INFINITY : j->submit_s + wait_for(e, j);
    queue_add(e, c, j);
    e->queued++;
    e->dirty = 1;
    if (j->l.burst_at_s < INFINITY)
        exp_push(e, j);
}

size_t spw_engine_schedule(spw_engine_t *e, double now, spw_job_t ***placed)
{
    e->nplaced = 0;
    pass(e, now);
    /* Jobs that can never fit on-prem burst at once. */
    for (size_t i = 0; i < e->nburst; i++) {
        e->queued--;
        start_cloud(e, e->burst[i], SPW_REASON_NEVER_FITS_ONPREM, now);
    }
    e->nburst = 0;
    int burst = 0;
    for (exp_clean(e); e->nexp && e->exp[0].t <= now; exp_clean(e)) {
        spw_job_t *j = e->exp[0].job;
        exp_pop(e);
        queue_del(e, &e->cls[j->l.cls], j);
        e->queued--;
        start_cloud(e, j, SPW_REASON_WAIT_EXPIRED, now);
        burst = 1;
    }
    if (burst) {
        e->dirty = 1;
        pass(e, now);
    }
    *placed = e->placed;
    return e->nplaced;
}

/* Frees what a placed job holds and adds the cost of this attempt (from
 * start to now; nothing while a cloud instance was still booting). */
static void release(spw_engine_t *e, spw_job_t *j, double now)
{
    double hours = (now - j->start_s) / 3600.0;
    if (!(hours > 0))
        hours = 0;
    if (j->state == SPW_JOB_ONPREM) {
        pool_t *p = &e->pools[j->pool];
        if (e->policy.backfill == SPW_BACKFILL_EASY)
            run_del(e, j);
        if (j->l.nodes) {
            for (uint32_t k = 0; k < j->nnodes; k++)
                pool_set_free(p, j->l.nodes[k], p->spec->node_gpus[j->l.nodes[k]]);
            free(j->l.nodes);
            j->l.nodes = NULL;
            spw_job_t *last = e->multi[--e->nmulti];
            e->multi[j->l.multi_idx] = last;
            last->l.multi_idx = j->l.multi_idx;
        } else {
            pool_set_free(p, (uint32_t)j->node, (uint16_t)(p->freeg[j->node] + j->alloc_gpus));
        }
        j->cost_usd += hours * j->alloc_gpus * p->spec->cost_usd_per_gpu_h;
        e->dirty = 1;
    } else if (j->state == SPW_JOB_CLOUD) {
        const spw_offer_t *o = &e->fleet->offers[j->offer];
        j->cost_usd += hours * j->instances * o->ondemand_usd_per_h;
    }
}

void spw_engine_finish(spw_engine_t *e, spw_job_t *j, double now)
{
    release(e, j, now);
    j->end_s = now;
    j->state = SPW_JOB_DONE;
}

int spw_engine_cancel(spw_engine_t *e, spw_job_t *j, double now)
{
    if (j->state == SPW_JOB_QUEUED) {
        size_t k = 0;
        while (k < e->nburst && e->burst[k] != j)
            k++;
        if (k < e->nburst)
            e->burst[k] = e->burst[--e->nburst];
        else
            queue_del(e, &e->cls[j->l.cls], j);   /* its expiry entry goes stale */
        e->queued--;
        e->dirty = 1;
    } else if (j->state == SPW_JOB_ONPREM || j->state == SPW_JOB_CLOUD) {
        release(e, j, now);
    } else {
        return -1;
    }
    j->end_s = now;
    j->state = SPW_JOB_CANCELLED;
    return 0;
}

int spw_engine_requeue(spw_engine_t *e, spw_job_t *j, double now)
{
    if (j->state != SPW_JOB_ONPREM && j->state != SPW_JOB_CLOUD)
        return -1;
    release(e, j, now);
    jclass_t *c = &e->cls[j->l.cls];
    j->pool = j->node = j->offer = -1;
    j->nnodes = j->alloc_gpus = j->instances = 0;
    j->placed_s = j->start_s = NAN;
    j->state = SPW_JOB_QUEUED;
    e->queued++;
    if (c->never_onprem) {
        GROW(e->burst, e->nburst, e->capburst);
        e->burst[e->nburst++] = j;
        return 0;
    }
    j->reason = SPW_REASON_NONE;
    j->l.burst_at_s = c->offer < 0 ? INFINITY : now + wait_for(e, j);
    queue_add(e, c, j);
    e->dirty = 1;
    if (j->l.burst_at_s < INFINITY)
        exp_push(e, j);
    return 0;
}

int spw_engine_restore(spw_engine_t *e, spw_job_t *j)
{
    if (j->gpus == 0)
        return -1;
    uint32_t ci = class_of(e, j->gpus, j->gpu_mask);
    jclass_t *c = &e->cls[ci];
    if (j->state == SPW_JOB_CLOUD) {
        if (j->offer < 0 || (size_t)j->offer >= e->fleet->noffers || j->instances == 0)
            return -1;
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
        j->l.cls = ci;
        take_onprem(e, c, j, pl);
        e->dirty = 1;
        return 0;
    } else {
        return -1;
    }
    j->l.cls = ci;
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

size_t spw_engine_explain(spw_engine_t *e, const spw_job_t *j, double now,
                          spw_candidate_t *out, size_t max)
{
    uint32_t ci = class_of(e, j->gpus, j->gpu_mask);
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
    for (size_t i = 0; i < e->npools; i++) {
        const pool_t *p = &e->pools[i];
        memset(&x, 0, sizeof(x));
        x.kind = SPW_CAND_ONPREM;
        x.index = (int)i;
        x.est_start_s = NAN;
        x.est_cost_usd = g * p->spec->cost_usd_per_gpu_h * j->est_runtime_s / 3600.0;
        uint32_t maxfree = 0;
        for (uint32_t f = p->maxcap; f > 0 && !maxfree; f--)
            if (p->level_n[f])
                maxfree = f;
        if (!pool_accepts(e, p, j->gpu_mask)) {
            snprintf(x.why, sizeof(x.why), "pool %s has %s GPUs; the job accepts %s",
                     p->spec->name, e->fleet->models.name[p->spec->model], want);
        } else if (g > p->maxcap && g > p->total) {
            snprintf(x.why, sizeof(x.why), "needs %u GPUs; pool %s has %llu in all", g,
                     p->spec->name, (unsigned long long)p->total);
        } else if (g > p->maxcap ? p->full_gpus >= g : maxfree >= g) {
            x.ok = 1;
            x.est_start_s = now;
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
    memset(&x, 0, sizeof(x));
    x.kind = SPW_CAND_WAIT;
    x.index = -1;
    x.est_start_s = NAN;
    x.est_cost_usd = NAN;
    char wtxt[48];
    spw_wait_format(&e->policy.wait, wtxt, sizeof(wtxt));
    x.ok = 1;
    if (c->never_onprem)
        snprintf(x.why, sizeof(x.why), "no pool can ever hold %u GPUs of %s: no wait, it bursts", g,
                 want);
    else if (c->offer < 0)
        snprintf(x.why, sizeof(x.why), "%s: it waits for on-prem as long as it takes",
                 e->policy.wait.kind == SPW_WAIT_NEVER ? "wait policy never keeps it on-prem"
                                                       : "no cloud offer can serve it");
    else if (j->state == SPW_JOB_QUEUED) {
        x.est_start_s = j->l.burst_at_s;
        snprintf(x.why, sizeof(x.why), "wait policy %s: it bursts at t=%.0f s unless on-prem frees up first",
                 wtxt, j->l.burst_at_s);
    } else {
        double w = wait_for(e, j);
        x.est_start_s = now + w;
        snprintf(x.why, sizeof(x.why), "wait policy %s: it would wait %.0f s before bursting", wtxt, w);
    }
    EMIT();
    const spw_offer_t *best = c->offer >= 0 ? &e->fleet->offers[c->offer] : NULL;
    for (size_t i = 0; i < e->fleet->noffers; i++) {
        const spw_offer_t *o = &e->fleet->offers[i];
        memset(&x, 0, sizeof(x));
        x.kind = SPW_CAND_CLOUD;
        x.index = (int)i;
        x.instances = (g + o->gpus - 1) / o->gpus;
        double usd_h = x.instances * o->ondemand_usd_per_h;
        x.est_start_s = now + o->boot_delay_s;
        x.est_cost_usd = usd_h * j->est_runtime_s / 3600.0;
        if (e->policy.wait.kind == SPW_WAIT_NEVER) {
            x.est_start_s = x.est_cost_usd = NAN;
            snprintf(x.why, sizeof(x.why), "wait policy never keeps every job on-prem");
        } else if (!offer_accepts(e, o, j->gpu_mask)) {
            x.est_start_s = x.est_cost_usd = NAN;
            snprintf(x.why, sizeof(x.why), "%s has %s GPUs; the job accepts %s", o->instance_type,
                     o->model >= 0 ? e->fleet->models.name[o->model] : "?", want);
        } else if ((int)i == c->offer) {
            x.ok = 1;
            snprintf(x.why, sizeof(x.why), "the cheapest offer that serves it: %u x %s at $%.4g/h",
                     x.instances, o->instance_type, usd_h);
        } else {
            snprintf(x.why, sizeof(x.why), "%u x %s costs $%.4g/h, more than the cheapest $%.4g/h",
                     x.instances, o->instance_type, usd_h,
                     best ? c->instances * best->ondemand_usd_per_h : 0.0);
        }
        EMIT();
    }
#undef EMIT
    return n;
}

double spw_engine_next_wakeup(spw_engine_t *e)
{
    exp_clean(e);
    return e->nexp ? e->exp[0].t : INFINITY;
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
    uint32_t ci = class_of(e, gpus, gpu_mask);   /* may grow e->cls */
    const jclass_t *c = &e->cls[ci];
    if (instances)
        *instances = c->instances;
    return c->offer;
}
