/* fair.c: fair share and quotas over the on-prem GPUs: admission tiers,
 * the fair-share key with its decay, and the choice of reclaim victims
 * (fair.h, docs/fairshare.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fair.h"
#include "core/spot.h"
#include "util/error.h"

/* A running job and its links, kept beside it: moving the last job into
 * a freed slot then updates its fair_idx without reading the job. */
typedef struct frun {
    spw_job_t *job;
    spw_job_links_t *l;    /* job->l */
} frun_t;

typedef struct fteam {
    double nominal;        /* quota GPUs; 0 without one */
    double borrow_limit;   /* GPUs above nominal it may use; INFINITY = any */
    double lend;           /* GPUs of its idle quota it lends: min(limit, nominal) */
    int tree;              /* cohort tree index; each team without a cohort is its own */
    double share;          /* normalised share, 0..1 (product of levels) */
    uint32_t used;         /* GPUs held by its running on-prem jobs */
    uint32_t taken;        /* GPUs of candidates taken in this reclaim (scratch) */
    const double *pq;      /* per pool, the part of nominal held there
                              (quota.pools, borrowed from the spec); NULL = none */
    double floating;       /* with pq: nominal less the per-pool parts, GPUs
                              that count in any pool */
    uint32_t *upool;       /* when some team has pq: GPUs its running jobs
                              hold per pool; NULL otherwise */
    uint32_t *tkpool;      /* with upool: taken per pool in this reclaim (scratch) */
    double usage;          /* decayed GPU-seconds at usage_at */
    double usage_at;       /* when usage was last brought forward */
    frun_t *run;           /* its running on-prem jobs */
    size_t nrun, caprun;
} fteam_t;

typedef struct ftree {
    double over;           /* GPUs its teams hold above their nominal */
    double idle;           /* idle quota its teams lend */
} ftree_t;

typedef struct mark {
    spw_job_t *job;        /* a victim under notice */
    uint32_t for_team;     /* the team it is preempted for */
    int part;              /* for that team's part of the victim's pool */
} mark_t;

struct spw_fair {
    const spw_gov_t *g;    /* borrowed */
    double half_life_s;    /* usage half-life; INFINITY = no decay */
    double grace_s;        /* reclaim notice */
    int quotas;            /* some team has a quota */
    double unassigned;     /* on-prem GPUs no quota covers */
    double need;           /* GPUs all trees borrow beyond what they lend */
    fteam_t *t;            /* nteams + 1 (slot 0: no team) */
    size_t nt;
    ftree_t *tr;
    size_t ntr;
    mark_t *mk;            /* victims under notice */
    size_t nmk, capmk;
    spw_job_t **out;       /* candidates or due victims (scratch) */
    size_t nout, capout;
    double restart_overhead_s; /* the policy's: no progress before it */
    size_t npools;         /* on-prem pools (indices of jobs' pool) */
    int part_pool;         /* reclaim for a team's part of this pool (may_take
                              takes what teams hold there above their parts);
                              -1 = for its quota as a whole */
};

static void grow(void **arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return;
    *cap = *cap ? *cap * 2 : 16;
    *arr = spw_xrealloc(*arr, *cap * size);
}

/* The share of cohort c among its siblings, times its parent's, down to
 * the root level; teams and cohorts with the same parent are siblings. */
/* A team's weight (0, as a hand-built spec leaves it, counts as 1) and
 * cohort index (-1 = none). */
static double team_weight(const spw_team_spec_t *t)
{
    return t->weight > 0 ? t->weight : 1;
}

static int team_cohort(const spw_gov_t *g, const spw_team_spec_t *t)
{
    return t->cohort >= 1 && t->cohort <= g->ncohorts ? (int)t->cohort - 1 : -1;
}

static double level_weight_sum(const spw_gov_t *g, int parent)
{
    double s = 0;
    for (size_t i = 0; i < g->nteams; i++)
        if (team_cohort(g, &g->teams[i]) == parent)
            s += team_weight(&g->teams[i]);
    for (size_t i = 0; i < g->ncohorts; i++)
        if (g->cohorts[i].parent == parent)
            s += g->cohorts[i].weight;
    return parent < 0 ? s + 1 : s;   /* the root level holds "no team" too */
}

static double cohort_share(const spw_gov_t *g, int c)
{
    double s = 1;
    for (; c >= 0; c = g->cohorts[c].parent)
        s *= g->cohorts[c].weight / level_weight_sum(g, g->cohorts[c].parent);
    return s;
}

/* GPUs team t holds above its nominal if it held `add` more in pool
 * `pool` (add may be negative; pool < 0 with add 0): without per-pool
 * parts, what it uses above its quota; with them, what it uses above each
 * pool's part, less the floating rest of its quota.  May be negative (its
 * unused quota). */
static double excess(const spw_fair_t *f, const fteam_t *t, int pool, double add)
{
    if (!t->pq)
        return (double)t->used + add - t->nominal;
    double x = -t->floating;
    for (size_t p = 0; p < f->npools; p++) {
        double u = (double)t->upool[p] + ((int)p == pool ? add : 0);
        x += u > t->pq[p] ? u - t->pq[p] : 0;
    }
    return x;
}

/* Its borrowed GPUs and the idle quota it lends (at most its lend). */
static double over_of(const spw_fair_t *f, const fteam_t *t)
{
    double x = excess(f, t, -1, 0);
    return x > 0 ? x : 0;
}

static double idle_of(const spw_fair_t *f, const fteam_t *t)
{
    double in = (double)t->used - over_of(f, t);
    double idle = in < t->nominal ? t->nominal - in : 0;
    return idle < t->lend ? idle : t->lend;
}

static void refresh(spw_fair_t *f)
{
    /* Without quotas no team lends (every idle is 0), and need is read
     * only by spw_fair_tier_in, which then answers at once: the sums stay
     * 0 and every start and stop of a job skips them. */
    if (!f->quotas)
        return;
    for (size_t r = 0; r < f->ntr; r++)
        f->tr[r].over = f->tr[r].idle = 0;
    for (size_t i = 0; i < f->nt; i++) {
        const fteam_t *t = &f->t[i];
        f->tr[t->tree].over += over_of(f, t);
        f->tr[t->tree].idle += idle_of(f, t);
    }
    f->need = 0;
    for (size_t r = 0; r < f->ntr; r++)
        if (f->tr[r].over > f->tr[r].idle)
            f->need += f->tr[r].over - f->tr[r].idle;
}

spw_fair_t *spw_fair_create(const spw_gov_t *g, uint64_t capacity_gpus, size_t npools,
                            const spw_policy_t *p)
{
    spw_fair_t *f = spw_xcalloc(1, sizeof(*f));
    f->npools = npools;
    f->g = g;
    f->half_life_s = p->half_life_s > 0 ? p->half_life_s : INFINITY;
    f->grace_s = p->reclaim_grace_s > 0 ? p->reclaim_grace_s : 0;
    f->restart_overhead_s = p->restart_overhead_s;
    f->nt = g->nteams + 1;
    f->t = spw_xcalloc(f->nt, sizeof(*f->t));
    /* Trees: one per root cohort, then one per team without a cohort. */
    int *root_tree = spw_xcalloc(g->ncohorts + 1, sizeof(int));
    for (size_t c = 0; c < g->ncohorts; c++)
        if (g->cohorts[c].parent < 0)
            root_tree[c] = (int)f->ntr++;
    double assigned = 0;
    for (size_t i = 0; i < f->nt; i++) {
        fteam_t *t = &f->t[i];
        const spw_team_spec_t *ts = i ? &g->teams[i - 1] : NULL;
        t->borrow_limit = INFINITY;
        if (ts && ts->has_quota) {
            f->quotas = 1;
            t->nominal = ts->quota_gpus;
            assigned += t->nominal;
            t->borrow_limit = ts->borrowing_limit_gpus;
            t->lend = ts->lending_limit_gpus < t->nominal ? ts->lending_limit_gpus : t->nominal;
            if (ts->quota_pool_gpus && npools) {
                t->pq = ts->quota_pool_gpus;
                t->floating = t->nominal;
                for (size_t k = 0; k < npools; k++)
                    t->floating -= t->pq[k];
            }
        }
        int c = ts ? team_cohort(g, ts) : -1, own = c;
        if (c >= 0) {
            while (g->cohorts[c].parent >= 0)
                c = g->cohorts[c].parent;
            t->tree = root_tree[c];
        } else {
            t->tree = (int)f->ntr++;
        }
        double w = ts ? team_weight(ts) : 1;
        t->share = w / level_weight_sum(g, own) * cohort_share(g, own);
    }
    free(root_tree);
    f->part_pool = -1;
    /* Some team has parts: every team's GPUs are counted per pool. */
    int parts = 0;
    for (size_t i = 0; i < f->nt; i++)
        parts |= f->t[i].pq != NULL;
    for (size_t k = 0; k < f->nt && parts; k++) {
        f->t[k].upool = spw_xcalloc(npools, sizeof(*f->t[k].upool));
        f->t[k].tkpool = spw_xcalloc(npools, sizeof(*f->t[k].tkpool));
    }
    f->unassigned = (double)capacity_gpus > assigned ? (double)capacity_gpus - assigned : 0;
    f->tr = spw_xcalloc(f->ntr ? f->ntr : 1, sizeof(*f->tr));
    refresh(f);
    return f;
}

void spw_fair_destroy(spw_fair_t *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nt; i++) {
        free(f->t[i].run);
        free(f->t[i].upool);
        free(f->t[i].tkpool);
    }
    void *owned[] = {f->t, f->tr, f->mk, f->out, f};
    for (size_t k = 0; k < sizeof(owned) / sizeof(owned[0]); k++)
        free(owned[k]);
}

int spw_fair_quotas(const spw_fair_t *f)
{
    return f->quotas;
}

static const fteam_t *team_of(const spw_fair_t *f, uint32_t team)
{
    return &f->t[team < f->nt ? team : 0];
}

int spw_fair_parts(const spw_fair_t *f, uint32_t team)
{
    return team_of(f, team)->pq != NULL;
}

spw_fair_tier_t spw_fair_tier_in(const spw_fair_t *f, uint32_t team, uint32_t gpus, int pool)
{
    if (!f->quotas)
        return SPW_FAIR_NOMINAL;
    const fteam_t *t = team_of(f, team);
    if (t->pq && pool < 0) {
        /* The best pool for it. */
        spw_fair_tier_t best = SPW_FAIR_REFUSED;
        for (size_t p = 0; p < f->npools && best; p++) {
            spw_fair_tier_t k = spw_fair_tier_in(f, team, gpus, (int)p);
            best = k < best ? k : best;
        }
        return best;
    }
    if (pool >= (int)f->npools)
        pool = -1;
    double x2 = t->pq ? excess(f, t, pool, gpus) : excess(f, t, -1, gpus);
    if (x2 <= 0)
        /* With parts: only a pool's part is guaranteed there (reclaimed
         * for); GPUs beyond it on the floating rest are the team's own but
         * queue as borrowing. */
        return t->pq && pool >= 0 && t->upool[pool] + gpus > t->pq[pool] ? SPW_FAIR_BORROW
                                                                          : SPW_FAIR_NOMINAL;
    if (x2 > t->borrow_limit)
        return SPW_FAIR_REFUSED;
    /* Its tree's need with the new GPUs: its borrowed grows, its idle
     * lent shrinks; the trees together may not need more than no quota
     * covers. */
    const ftree_t *r = &f->tr[t->tree];
    double in2 = (double)t->used + gpus - x2, idle2 = in2 < t->nominal ? t->nominal - in2 : 0;
    if (idle2 > t->lend)
        idle2 = t->lend;
    double over = r->over - over_of(f, t) + x2, idle = r->idle - idle_of(f, t) + idle2;
    double old_need = r->over > r->idle ? r->over - r->idle : 0;
    double new_need = over > idle ? over - idle : 0;
    return f->need - old_need + new_need <= f->unassigned + 1e-9 ? SPW_FAIR_BORROW
                                                               : SPW_FAIR_REFUSED;
}

spw_fair_tier_t spw_fair_tier(const spw_fair_t *f, uint32_t team, uint32_t gpus)
{
    return spw_fair_tier_in(f, team, gpus, -1);
}

/* Usage of team t brought forward to now without changing it. */
static double usage_at(const spw_fair_t *f, const fteam_t *t, double now)
{
    double dt = now - t->usage_at;
    if (!(dt > 0))
        return t->usage;
    if (isinf(f->half_life_s))
        return t->usage + t->used * dt;
    double d = exp2(-dt / f->half_life_s);
    return t->usage * d + t->used * (f->half_life_s / M_LN2) * (1 - d);
}

double spw_fair_key(const spw_fair_t *f, uint32_t team, double now)
{
    const fteam_t *t = team_of(f, team);
    return usage_at(f, t, now) / (t->share > 0 ? t->share : 1e-12);
}

static void bring_forward(spw_fair_t *f, fteam_t *t, double now)
{
    t->usage = usage_at(f, t, now);
    if (now > t->usage_at)
        t->usage_at = now;
}

void spw_fair_start(spw_fair_t *f, spw_job_t *j, uint32_t gpus, double now)
{
    fteam_t *t = &f->t[j->team < f->nt ? j->team : 0];
    bring_forward(f, t, now);
    t->used += gpus;
    if (t->upool && j->pool >= 0 && (size_t)j->pool < f->npools)
        t->upool[j->pool] += gpus;
    grow((void **)&t->run, t->nrun, &t->caprun, sizeof(*t->run));
    j->l->fair_idx = (uint32_t)t->nrun;
    j->l->reclaim_at_s = 0;
    t->run[t->nrun++] = (frun_t){.job = j, .l = j->l};
    refresh(f);
}

void spw_fair_stop(spw_fair_t *f, spw_job_t *j, double now)
{
    fteam_t *t = &f->t[j->team < f->nt ? j->team : 0];
    uint32_t k = j->l->fair_idx;
    if (k >= t->nrun || t->run[k].job != j)
        return;
    bring_forward(f, t, now);
    t->used -= j->alloc_gpus < t->used ? j->alloc_gpus : t->used;
    if (t->upool && j->pool >= 0 && (size_t)j->pool < f->npools) {
        uint32_t *u = &t->upool[j->pool];
        *u -= j->alloc_gpus < *u ? j->alloc_gpus : *u;
    }
    t->run[k] = t->run[--t->nrun];
    t->run[k].l->fair_idx = k;
    if (j->l->reclaim_at_s > 0)
        for (size_t i = 0; i < f->nmk; i++)
            if (f->mk[i].job == j) {
                f->mk[i] = f->mk[--f->nmk];
                break;
            }
    j->l->reclaim_at_s = 0;
    refresh(f);
}

void spw_fair_team(const spw_fair_t *f, uint32_t team, double now, spw_fair_team_t *out)
{
    const fteam_t *t = team_of(f, team);
    const ftree_t *r = &f->tr[t->tree];
    memset(out, 0, sizeof(*out));
    out->nominal_gpus = t->nominal;
    out->used_gpus = t->used;
    out->borrowed_gpus = (uint32_t)floor(over_of(f, t) + 0.5);
    double idle = idle_of(f, t);
    /* The tree's borrowed GPUs come out of its idle quota first, shared
     * in proportion to what each team lends. */
    if (r->idle > 0) {
        double lent = (r->over < r->idle ? r->over : r->idle) * idle / r->idle;
        out->lent_gpus = (uint32_t)floor(lent + 0.5);
    }
    out->usage_gpu_s = usage_at(f, t, now);
    out->share = t->share;
}

/* ---- reclaim ---- */

/* Progress victim v would lose if stopped at now: what it ran since its
 * last checkpoint. */
static double loss_s(const spw_fair_t *f, const spw_job_t *v, double now)
{
    double over = spw_job_rare(v)->restarts ? f->restart_overhead_s : 0;
    double run = (now - v->start_s - over) * (v->speed > 0 ? v->speed : 1);
    if (!(run > 0))
        return 0;
    double done = spw_job_rare(v)->done_s;
    return done + run - spw_ckpt_kept_s(v->checkpoint_interval_s, done, run);
}

static int victim_before(const spw_fair_t *f, const spw_job_t *a, const spw_job_t *b, double now)
{
    double la = loss_s(f, a, now), lb = loss_s(f, b, now);
    if (la != lb)
        return la < lb;
    if (a->priority != b->priority)
        return a->priority < b->priority;
    if (a->start_s != b->start_s)
        return a->start_s > b->start_s;
    return a->order > b->order;
}

size_t spw_fair_candidates(spw_fair_t *f, uint32_t for_team, double now, spw_job_t ***out)
{
    f->nout = 0;
    for (size_t i = 0; i < f->nt; i++) {
        const fteam_t *t = &f->t[i];
        if (i == for_team || !(over_of(f, t) > 0 || (f->t[for_team < f->nt ? for_team : 0].pq &&
                                                      t->upool)))
            continue;
        for (size_t k = 0; k < t->nrun; k++) {
            spw_job_t *v = t->run[k].job;
            if (v->l->reclaim_at_s > 0)
                continue;
            grow((void **)&f->out, f->nout, &f->capout, sizeof(*f->out));
            f->out[f->nout++] = v;
        }
    }
    /* Insertion sort: the borrowed jobs of a turn are few. */
    for (size_t i = 1; i < f->nout; i++) {
        spw_job_t *v = f->out[i];
        size_t k = i;
        for (; k && victim_before(f, v, f->out[k - 1], now); k--)
            f->out[k] = f->out[k - 1];
        f->out[k] = v;
    }
    *out = f->out;
    return f->nout;
}

void spw_fair_take_reset(spw_fair_t *f, int part_pool)
{
    f->part_pool = part_pool >= 0 && (size_t)part_pool < f->npools && f->t[0].upool ? part_pool : -1;
    for (size_t i = 0; i < f->nt; i++) {
        f->t[i].taken = 0;
        if (f->t[i].tkpool)
            memset(f->t[i].tkpool, 0, f->npools * sizeof(*f->t[i].tkpool));
    }
}

/* Whether team t stays at or above its nominal share without v, when
 * `gone` GPUs of it (gone_pool of them in v's pool) are on their way out
 * too: all of v's GPUs are borrowed, and with per-pool parts none of them
 * is within its part of v's pool. */
static int takes_borrowed(const spw_fair_t *f, const fteam_t *t, const spw_job_t *v,
                          uint32_t gone, uint32_t gone_pool)
{
    if (f->part_pool >= 0)
        /* For a part of the pool: what t holds there above its own part. */
        return v->pool == f->part_pool &&
               (double)t->upool[v->pool] - gone_pool - v->alloc_gpus >= (t->pq ? t->pq[v->pool] : 0);
    if (!t->pq)
        return (double)t->used - gone - v->alloc_gpus >= t->nominal;
    if (v->pool < 0 || (size_t)v->pool >= f->npools)
        return 0;
    return (double)t->upool[v->pool] - gone_pool - v->alloc_gpus >= t->pq[v->pool] &&
           excess(f, t, -1, 0) - gone - v->alloc_gpus >= 0;
}

static void take(fteam_t *t, const spw_job_t *v)
{
    t->taken += v->alloc_gpus;
    if (t->tkpool && v->pool >= 0)
        t->tkpool[v->pool] += v->alloc_gpus;
}

int spw_fair_may_take(spw_fair_t *f, const spw_job_t *v)
{
    fteam_t *t = &f->t[v->team < f->nt ? v->team : 0];
    /* Marked victims of this team are already on their way out. */
    uint32_t gone = t->taken, gone_pool = t->tkpool && v->pool >= 0 ? t->tkpool[v->pool] : 0;
    for (size_t i = 0; i < f->nmk; i++)
        if (f->mk[i].job->team == v->team) {
            gone += f->mk[i].job->alloc_gpus;
            gone_pool += f->mk[i].job->pool == v->pool ? f->mk[i].job->alloc_gpus : 0;
        }
    if (!takes_borrowed(f, t, v, gone, gone_pool))
        return 0;
    take(t, v);
    return 1;
}

void spw_fair_mark(spw_fair_t *f, spw_job_t *v, uint32_t for_team, double now)
{
    grow((void **)&f->mk, f->nmk, &f->capmk, sizeof(*f->mk));
    f->mk[f->nmk++] = (mark_t){.job = v, .for_team = for_team, .part = f->part_pool >= 0};
    v->l->reclaim_at_s = now + f->grace_s;
    if (!(v->l->reclaim_at_s > 0))
        v->l->reclaim_at_s = 1e-9;   /* 0 means unmarked */
}

int spw_fair_reclaiming(const spw_fair_t *f, uint32_t team)
{
    for (size_t i = 0; i < f->nmk; i++)
        if (f->mk[i].for_team == team)
            return 1;
    return 0;
}

uint32_t spw_fair_marked_for(const spw_fair_t *f, const spw_job_t *v)
{
    for (size_t i = 0; i < f->nmk; i++)
        if (f->mk[i].job == v)
            return f->mk[i].for_team;
    return 0;
}

size_t spw_fair_due(spw_fair_t *f, double now, spw_job_t ***out)
{
    f->nout = 0;
    spw_fair_take_reset(f, -1);
    for (size_t i = 0; i < f->nmk;) {
        spw_job_t *v = f->mk[i].job;
        if (v->l->reclaim_at_s > now) {
            i++;
            continue;
        }
        /* Its team's other jobs may have ended during the grace: a victim
         * that would now take the team below its quota is let go (the
         * reclaiming team looks again at the next pass). */
        fteam_t *t = &f->t[v->team < f->nt ? v->team : 0];
        f->part_pool = f->mk[i].part ? v->pool : -1;
        if (!takes_borrowed(f, t, v, t->taken,
                            t->tkpool && v->pool >= 0 ? t->tkpool[v->pool] : 0)) {
            v->l->reclaim_at_s = 0;
            f->mk[i] = f->mk[--f->nmk];
            continue;
        }
        take(t, v);
        grow((void **)&f->out, f->nout, &f->capout, sizeof(*f->out));
        f->out[f->nout++] = v;
        i++;
    }
    f->part_pool = -1;
    *out = f->out;
    return f->nout;
}

double spw_fair_next(const spw_fair_t *f)
{
    double t = INFINITY;
    for (size_t i = 0; i < f->nmk; i++)
        if (f->mk[i].job->l->reclaim_at_s < t)
            t = f->mk[i].job->l->reclaim_at_s;
    return t;
}
