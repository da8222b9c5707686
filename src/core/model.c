/* model.c: names, parsing and lifetimes of the engine's vocabulary types. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "core/model.h"

#define SPW_NAME_ENTRY(a, s) s,
static const char *const queue_names[] = {SPW_QUEUE_ORDERS(SPW_NAME_ENTRY)};
static const char *const scan_names[] = {SPW_SCANS(SPW_NAME_ENTRY)};
static const char *const backfill_names[] = {SPW_BACKFILLS(SPW_NAME_ENTRY)};
static const char *const fit_names[] = {SPW_FITS(SPW_NAME_ENTRY)};
static const char *const wait_names[] = {SPW_WAITS(SPW_NAME_ENTRY)};
static const char *const spotmode_names[] = {SPW_SPOT_MODES(SPW_NAME_ENTRY)};
static const char *const recovery_names[] = {SPW_RECOVERIES(SPW_NAME_ENTRY)};
static const char *const failover_names[] = {SPW_FAILOVERS(SPW_NAME_ENTRY)};
static const char *const block_names[] = {SPW_BLOCKS(SPW_NAME_ENTRY)};
static const char *const jstate_names[] = {SPW_JOB_STATES(SPW_NAME_ENTRY)};
static const char *const reason_texts[] = {SPW_REASONS(SPW_NAME_ENTRY)};

static const char *name_of(const char *const *names, int n, int v)
{
    return v >= 0 && v < n ? names[v] : "?";
}

const char *spw_queue_order_name(spw_queue_order_t v) { return name_of(queue_names, SPW_QUEUE_COUNT, v); }
const char *spw_scan_name(spw_scan_t v) { return name_of(scan_names, SPW_SCAN_COUNT, v); }
const char *spw_backfill_name(spw_backfill_t v) { return name_of(backfill_names, SPW_BACKFILL_COUNT, v); }
const char *spw_fit_name(spw_fit_t v) { return name_of(fit_names, SPW_FIT_COUNT, v); }
const char *spw_wait_kind_name(spw_wait_kind_t v) { return name_of(wait_names, SPW_WAIT_COUNT, v); }
const char *spw_spot_mode_name(spw_spot_mode_t v) { return name_of(spotmode_names, SPW_SPOTMODE_COUNT, v); }
const char *spw_recovery_name(spw_recovery_t v) { return name_of(recovery_names, SPW_RECOVERY_COUNT, v); }
const char *spw_failover_name(spw_failover_t v) { return name_of(failover_names, SPW_FAILOVER_COUNT, v); }
const char *spw_block_name(spw_block_t v) { return name_of(block_names, SPW_BLOCK_COUNT, v); }
const char *spw_job_state_name(spw_job_state_t s) { return name_of(jstate_names, SPW_JOB_STATE_COUNT, s); }
const char *spw_reason_text(spw_reason_t r) { return name_of(reason_texts, SPW_REASON_COUNT, r); }

/* Looks s up in names; on failure err says which names are accepted. */
static int parse_name(const char *what, const char *const *names, int n,
                      const char *s, int *out, spw_error_t *err)
{
    char list[96] = "";
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
        size_t used = strlen(list);
        snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", names[i]);
    }
    return spw_errorf(err, "unknown %s '%s' (expected one of: %s)", what, s, list);
}

#define SPW_PARSER(fn, type, what, names, count)                              \
    int fn(const char *s, type *out, spw_error_t *err)                        \
    {                                                                         \
        int v = 0;                                                            \
        if (parse_name(what, names, count, s, &v, err) < 0)                   \
            return -1;                                                        \
        *out = (type)v;                                                       \
        return 0;                                                             \
    }
SPW_PARSER(spw_queue_order_parse, spw_queue_order_t, "queue order", queue_names, SPW_QUEUE_COUNT)
SPW_PARSER(spw_scan_parse, spw_scan_t, "scan", scan_names, SPW_SCAN_COUNT)
SPW_PARSER(spw_backfill_parse, spw_backfill_t, "backfill", backfill_names, SPW_BACKFILL_COUNT)
SPW_PARSER(spw_fit_parse, spw_fit_t, "fit", fit_names, SPW_FIT_COUNT)
SPW_PARSER(spw_spot_mode_parse, spw_spot_mode_t, "spot mode", spotmode_names, SPW_SPOTMODE_COUNT)
SPW_PARSER(spw_recovery_parse, spw_recovery_t, "recovery", recovery_names, SPW_RECOVERY_COUNT)
SPW_PARSER(spw_failover_parse, spw_failover_t, "failover", failover_names, SPW_FAILOVER_COUNT)
SPW_PARSER(spw_block_parse, spw_block_t, "block", block_names, SPW_BLOCK_COUNT)

int spw_wait_parse(const char *s, spw_wait_t *out, spw_error_t *err)
{
    static const char usage[] =
        "(expected never, none, constant:SECONDS, runtime:K, compute:K or predict:K)";
    const char *colon = strchr(s, ':');
    size_t klen = colon ? (size_t)(colon - s) : strlen(s);
    int kind = -1;
    for (int i = 0; i < SPW_WAIT_COUNT; i++)
        if (strlen(wait_names[i]) == klen && strncmp(s, wait_names[i], klen) == 0)
            kind = i;
    if (kind < 0)
        return spw_errorf(err, "unknown wait policy '%s' %s", s, usage);
    spw_wait_t w = {.kind = (spw_wait_kind_t)kind, .param = 0};
    int needs_param = kind == SPW_WAIT_CONSTANT || kind == SPW_WAIT_RUNTIME
                      || kind == SPW_WAIT_COMPUTE || kind == SPW_WAIT_PREDICT;
    if (needs_param != (colon != NULL))
        return spw_errorf(err, "wait policy '%s': %s %s", s,
                          needs_param ? "needs a value after ':'" : "takes no value", usage);
    if (needs_param) {
        char *end;
        w.param = strtod(colon + 1, &end);
        if (end == colon + 1 || *end != '\0' || !isfinite(w.param) || w.param < 0)
            return spw_errorf(err, "wait policy '%s': '%s' is not a non-negative number",
                              s, colon + 1);
    }
    *out = w;
    return 0;
}

void spw_wait_format(const spw_wait_t *w, char *buf, size_t len)
{
    if (w->kind == SPW_WAIT_NEVER || w->kind == SPW_WAIT_NONE)
        snprintf(buf, len, "%s", spw_wait_kind_name(w->kind));
    else
        snprintf(buf, len, "%s:%g", spw_wait_kind_name(w->kind), w->param);
}

void spw_policy_default(spw_policy_t *p)
{
    p->queue = SPW_QUEUE_FIFO;
    p->scan = SPW_SCAN_HOL;
    p->backfill = SPW_BACKFILL_NONE;
    p->fit = SPW_FIT_FIRST;
    p->wait.kind = SPW_WAIT_COMPUTE;
    p->wait.param = 0.25;
    p->gravity = 1;
    p->reserve_extra_s = 0;
    p->spot_policy = SPW_SPOT_POLICY_ONDEMAND;
    p->restart_overhead_s = 0;
    p->max_restarts = UINT32_MAX;
    p->recovery = SPW_RECOVERY_SAME_REGION_FIRST;
    p->failover = SPW_FAILOVER_REQUEUE;
    p->half_life_s = 7 * 86400.0;
    p->reclaim_grace_s = 300;
}

int spw_models_find(const spw_models_t *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcasecmp(m->name[i], name) == 0)
            return i;
    return -1;
}

int spw_models_intern(spw_models_t *m, const char *name, size_t len, spw_error_t *err)
{
    for (int i = 0; i < m->n; i++)
        if (strlen(m->name[i]) == len && strncasecmp(m->name[i], name, len) == 0)
            return i;
    if (m->n == SPW_MAX_MODELS)
        return spw_errorf(err, "too many distinct GPU models (at most %d)", SPW_MAX_MODELS);
    char *copy = spw_xmalloc(len + 1);
    memcpy(copy, name, len);
    copy[len] = '\0';
    m->name[m->n] = copy;
    return m->n++;
}

void spw_models_truncate(spw_models_t *m, int n)
{
    for (int i = n; i < m->n; i++)
        free(m->name[i]);
    if (n < m->n)
        m->n = n;
}

void spw_models_clear(spw_models_t *m)
{
    spw_models_truncate(m, 0);
}

int spw_model_accepts(const char *want, const char *have)
{
    size_t n = strlen(want);
    if (strncasecmp(want, have, n) != 0)
        return 0;
    return have[n] == '\0' || have[n] == '-';
}

void spw_offer_clear(spw_offer_t *o)
{
    free(o->provider);
    free(o->region);
    free(o->zone);
    free(o->instance_type);
    free(o->commit_name);
    o->provider = o->region = o->zone = o->instance_type = o->commit_name = NULL;
}

void spw_offer_commitment(spw_offer_t *dst, const spw_offer_t *src, const char *name,
                          uint32_t gpus, double usd_per_gpu_h)
{
    *dst = *src;
    dst->provider = spw_xstrdup(src->provider);
    dst->region = spw_xstrdup(src->region);
    dst->zone = spw_xstrdup(src->zone);
    dst->instance_type = spw_xstrdup(src->instance_type);
    dst->ondemand_usd_per_h = 0;
    dst->spot_usd_per_h = NAN;
    dst->commit_name = spw_xstrdup(name);
    dst->commit_gpus = gpus;
    dst->commit_usd_per_gpu_h = usd_per_gpu_h;
}

double spw_commit_cost_usd(const spw_offer_t *o, double hours_h)
{
    if (!spw_offer_committed(o) || !(hours_h > 0))
        return 0;
    return (double)o->commit_gpus * o->commit_usd_per_gpu_h * hours_h;
}

void spw_pool_spec_clear(spw_pool_spec_t *p)
{
    free(p->name);
    free(p->node_gpus);
    p->name = NULL;
    p->node_gpus = NULL;
}

/* Hours in a year (365.25 days) and in a month (a twelfth of that). */
#define YEAR_H 8766.0
#define MONTH_H (YEAR_H / 12)

double spw_owned_busy_usd_per_gpu_h(const spw_owned_cost_t *m, double gpus_per_node)
{
    double capital = m->years > 0 ? m->price_usd_per_gpu / (m->years * YEAR_H) : 0;
    double power = m->gpu_busy_w / 1000.0 * m->pue * m->usd_per_kwh;
    double node = gpus_per_node > 0 ? m->node_usd_per_month / MONTH_H / gpus_per_node : 0;
    return capital + power + node;
}

void spw_pool_owned_cost(const spw_pool_spec_t *p, double hours_h, double busy_gpu_h,
                         spw_owned_split_t *out)
{
    double gpus = 0;
    for (uint32_t k = 0; k < p->nnodes; k++)
        gpus += p->node_gpus[k];
    if (!(hours_h > 0) || !(gpus > 0)) {
        *out = (spw_owned_split_t){0};
        return;
    }
    double all_gpu_h = gpus * hours_h;
    if (!(busy_gpu_h > 0))
        busy_gpu_h = 0;
    if (busy_gpu_h > all_gpu_h)
        busy_gpu_h = all_gpu_h;
    double idle_gpu_h = all_gpu_h - busy_gpu_h;
    if (!p->has_owned) {
        out->used_usd = busy_gpu_h * p->cost_usd_per_gpu_h;
        out->idle_usd = idle_gpu_h * p->cost_usd_per_gpu_h;
    } else {
        const spw_owned_cost_t *m = &p->owned;
        double capital = m->years > 0 ? m->price_usd_per_gpu / (m->years * YEAR_H) : 0;
        double node_per_gpu_h = m->node_usd_per_month * p->nnodes / MONTH_H / gpus;
        double kwh_usd = m->pue * m->usd_per_kwh / 1000.0;
        out->used_usd = busy_gpu_h * (capital + node_per_gpu_h + m->gpu_busy_w * kwh_usd);
        out->idle_usd = idle_gpu_h * (capital + node_per_gpu_h + m->gpu_idle_w * kwh_usd);
    }
    out->total_usd = out->used_usd + out->idle_usd;
}

/* Relative training throughput, A100 = 1, rounded from published
 * benchmark ratios (docs/config.md "GPU performance" gives the sources and
 * how to override them).  Longer names first where one is a prefix of
 * another is not needed: matching needs the whole name or name + "-". */
static const struct {
    const char *name;
    double throughput;
} gpu_table[] = {
    {"K80", 0.07}, {"M60", 0.08}, {"P4", 0.08}, {"P100", 0.25}, {"T4", 0.16},
    {"V100", 0.45}, {"A10G", 0.33}, {"A10", 0.37}, {"L4", 0.30}, {"A40", 0.60},
    {"L40", 0.80}, {"L40S", 0.90}, {"A100", 1.00}, {"H100", 2.20}, {"H200", 2.60},
};

double spw_gpu_throughput(const char *model)
{
    for (size_t i = 0; i < sizeof(gpu_table) / sizeof(gpu_table[0]); i++)
        if (spw_model_accepts(gpu_table[i].name, model))
            return gpu_table[i].throughput;
    return NAN;
}

static const struct spw_perf_class *perf_class(const spw_perf_t *perf, uint32_t jclass)
{
    for (size_t i = 0; jclass && i < perf->nclasses; i++)
        if (perf->classes[i].jclass == jclass)
            return &perf->classes[i];
    return NULL;
}

/* Throughput of `model` under perf for class pc (may be NULL): the class's,
 * the config's, else the table's. */
static double perf_throughput(const spw_perf_t *perf, const struct spw_perf_class *pc,
                              const char *model)
{
    for (size_t i = 0; pc && i < pc->n; i++)
        if (spw_model_accepts(pc->names[i], model))
            return pc->throughput[i];
    for (size_t i = 0; i < perf->n; i++)
        if (spw_model_accepts(perf->names[i], model))
            return perf->throughput[i];
    return spw_gpu_throughput(model);
}

static void copy_rates(char ***dn, double **dt, char *const *sn, const double *st, size_t n)
{
    *dn = spw_xmalloc((n ? n : 1) * sizeof(char *));
    *dt = spw_xmalloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        (*dn)[i] = spw_xstrdup(sn[i]);
        (*dt)[i] = st[i];
    }
}

void spw_perf_copy(spw_perf_t *dst, const spw_perf_t *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->reference = src->reference ? spw_xstrdup(src->reference) : NULL;
    dst->scale_pools = src->scale_pools;
    copy_rates(&dst->names, &dst->throughput, src->names, src->throughput, src->n);
    dst->n = src->n;
    dst->classes = spw_xcalloc(src->nclasses ? src->nclasses : 1, sizeof(*dst->classes));
    for (size_t i = 0; i < src->nclasses; i++) {
        dst->classes[i].jclass = src->classes[i].jclass;
        copy_rates(&dst->classes[i].names, &dst->classes[i].throughput, src->classes[i].names,
                   src->classes[i].throughput, src->classes[i].n);
        dst->classes[i].n = src->classes[i].n;
    }
    dst->nclasses = src->nclasses;
}

int spw_fleet_perf_class(const spw_fleet_t *f, uint32_t jclass)
{
    return f->perf.reference && perf_class(&f->perf, jclass) != NULL;
}

double spw_fleet_class_speed(const spw_fleet_t *f, uint32_t jclass, int model)
{
    if (!f->perf.reference || model < 0 || model >= f->models.n)
        return 1;
    const struct spw_perf_class *pc = perf_class(&f->perf, jclass);
    double ref = perf_throughput(&f->perf, pc, f->perf.reference);
    double m = perf_throughput(&f->perf, pc, f->models.name[model]);
    if (!(ref > 0) || !(m > 0))
        return 1;
    return m / ref;
}

double spw_fleet_speed(const spw_fleet_t *f, int model)
{
    return spw_fleet_class_speed(f, 0, model);
}

void spw_fleet_init(spw_fleet_t *f)
{
    memset(f, 0, sizeof(*f));
    spw_gov_init(&f->gov);
}

void spw_fleet_clear(spw_fleet_t *f)
{
    for (size_t i = 0; i < f->npools; i++)
        spw_pool_spec_clear(&f->pools[i]);
    free(f->pools);
    for (size_t i = 0; i < f->noffers; i++)
        spw_offer_clear(&f->offers[i]);
    free(f->offers);
    spw_models_clear(&f->models);
    spw_gov_clear(&f->gov);
    free(f->perf.reference);
    for (size_t i = 0; i < f->perf.n; i++)
        free(f->perf.names[i]);
    free(f->perf.names);
    free(f->perf.throughput);
    for (size_t i = 0; i < f->perf.nclasses; i++) {
        for (size_t k = 0; k < f->perf.classes[i].n; k++)
            free(f->perf.classes[i].names[k]);
        free(f->perf.classes[i].names);
        free(f->perf.classes[i].throughput);
    }
    free(f->perf.classes);
    spw_fleet_init(f);
}

uint64_t spw_fleet_gpus(const spw_fleet_t *f)
{
    uint64_t n = 0;
    for (size_t i = 0; i < f->npools; i++)
        for (uint32_t k = 0; k < f->pools[i].nnodes; k++)
            n += f->pools[i].node_gpus[k];
    return n;
}

const spw_job_rare_t spw_job_rare_none = {.charge_s = NAN, .last_offer = -1};

/* Side records are carved from slabs of each thread's own (so the
 * planner's threads never write into one cache line) and never returned to
 * the system; spw_job_clear puts a record on a free list, shared under a
 * mutex, that the next allocation takes first.  Slabs double from 16
 * records (a thread that makes one or two, such as a connection's, keeps
 * 2 KiB) to 2 MiB ones in huge pages: with one malloc and a 4 KiB page
 * fault per few records, a simulation in which most jobs burst took 1.6x
 * the time it took with these fields inside spw_job_t. */
typedef union rare_slot {
    spw_job_rare_t r;
    union rare_slot *next;      /* while on the free list */
} rare_slot_t;
#define RARE_HUGE ((size_t)2 << 20)
static pthread_mutex_t rare_mu = PTHREAD_MUTEX_INITIALIZER;
static rare_slot_t *rare_free;  /* records given back (under rare_mu) */
static _Thread_local rare_slot_t *rare_slab;        /* this thread's slab */
static _Thread_local size_t rare_carved, rare_cap;  /* records of it handed out / in it */

/* A new slab for this thread, twice its last one's size up to RARE_HUGE. */
static void rare_grow(void)
{
    size_t bytes = rare_cap ? rare_cap * 2 * sizeof(rare_slot_t) : 16 * sizeof(rare_slot_t);
    void *p = NULL;
    if (bytes >= RARE_HUGE) {
        bytes = RARE_HUGE;
        p = aligned_alloc(RARE_HUGE, RARE_HUGE);
#ifdef MADV_HUGEPAGE
        if (p)
            madvise(p, RARE_HUGE, MADV_HUGEPAGE);   /* advice only */
#endif
    }
    rare_slab = p ? p : spw_xmalloc(bytes);
    rare_cap = bytes / sizeof(rare_slot_t);
    rare_carved = 0;
}

spw_job_rare_t *spw_job_rare_alloc(spw_job_t *j)
{
    pthread_mutex_lock(&rare_mu);
    rare_slot_t *x = rare_free;
    if (x)
        rare_free = x->next;
    pthread_mutex_unlock(&rare_mu);
    if (!x) {
        if (rare_carved == rare_cap)
            rare_grow();
        x = &rare_slab[rare_carved++];
    }
    x->r = spw_job_rare_none;
    j->rare = &x->r;
    return j->rare;
}

void spw_job_clear(spw_job_t *j)
{
    if (!j->rare)
        return;
    rare_slot_t *x = (rare_slot_t *)j->rare;
    j->rare = NULL;
    pthread_mutex_lock(&rare_mu);
    x->next = rare_free;
    rare_free = x;
    pthread_mutex_unlock(&rare_mu);
}

void spw_jobs_clear(spw_job_t *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        spw_job_clear(&jobs[i]);
}

void spw_jobs_copy(spw_job_t *dst, const spw_job_t *src, size_t n)
{
    if (!n)
        return;
    memcpy(dst, src, n * sizeof(*dst));
    for (size_t i = 0; i < n; i++)
        dst[i].rare = NULL;
}

void spw_job_reset(spw_job_t *j)
{
    j->state = SPW_JOB_NEW;
    j->reason = SPW_REASON_NONE;
    j->pool = -1;
    j->node = -1;
    j->nnodes = 0;
    j->alloc_gpus = 0;
    j->offer = -1;
    j->instances = 0;
    j->placed_s = j->start_s = j->end_s = NAN;
    j->cost_usd = 0;
    j->by_residency = 0;
    j->by_budget = 0;
    j->stopped_max_run = 0;
    j->spot = 0;
    j->speed = 1;
    if (j->rare)
        *j->rare = spw_job_rare_none;   /* kept: the next run needs it again */
    j->l = NULL;
}

/* The length of t's family prefix (spw_offer_same_family). */
static size_t family_len(const char *t)
{
    const char *dot = strchr(t, '.');
    if (dot)
        return (size_t)(dot - t);
    const char *dash = strrchr(t, '-'), *us = strrchr(t, '_');
    const char *cut = dash > us ? dash : us;
    return cut && cut != t ? (size_t)(cut - t) : strlen(t);
}

int spw_offer_same_family(const spw_offer_t *a, const spw_offer_t *b)
{
    size_t la = family_len(a->instance_type), lb = family_len(b->instance_type);
    return la == lb && strncmp(a->instance_type, b->instance_type, la) == 0;
}
