/* policy.c: the policy, spot (availability, interruption), failures (with the pools'
 * mtbf / mttr) and performance sections. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"
#include "sim/trace.h"
#include "util/spot_trace.h"
#include "util/timeparse.h"
#include "util/yaml.h"

static int duration_value(ctx_t *x, const spw_ynode_t *v, const char *key, double lo, double hi,
                          double *out, spw_error_t *err);

int cfg_policy_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"queue", "scan", "backfill", "fit", "wait", "half_life",
                                       "reclaim_grace", NULL};
    spw_policy_t *p = &x->cfg->policy;
    if (spw_ymap_check_keys(x->d, n, "policy", keys, err) < 0)
        return -1;
    const char *s;
    spw_error_t e2;
    const spw_ynode_t *v;
#define POLICY_KEY(key, parse, field)                                          \
    if ((v = spw_ymap_get(n, key))) {                                          \
        if (spw_ynode_str(x->d, v, key, &s, err) < 0)                          \
            return -1;                                                         \
        if (parse(s, &p->field, &e2) < 0)                                      \
            return cfg_at(x, v, err, "%s", e2.text);                               \
    }
    POLICY_KEY("queue", spw_queue_order_parse, queue)
    POLICY_KEY("scan", spw_scan_parse, scan)
    POLICY_KEY("backfill", spw_backfill_parse, backfill)
    POLICY_KEY("fit", spw_fit_parse, fit)
    POLICY_KEY("wait", spw_wait_parse, wait)
#undef POLICY_KEY
    if ((v = spw_ymap_get(n, "half_life"))) {
        if (spw_ynode_str(x->d, v, "half_life", &s, err) < 0)
            return -1;
        if (strcmp(s, "never") == 0)
            p->half_life_s = INFINITY;
        else if (duration_value(x, v, "half_life", 60, 3.1536e8, &p->half_life_s, err) < 0)
            return -1;
    }
    if ((v = spw_ymap_get(n, "reclaim_grace")) &&
        duration_value(x, v, "reclaim_grace", 0, 86400, &p->reclaim_grace_s, err) < 0)
        return -1;
    return 0;
}

/* ---- spot, failures ---------------------------------------------------------- */

/* A duration value at node v: seconds or "36h", "1d12h"; lo .. hi seconds. */
static int duration_value(ctx_t *x, const spw_ynode_t *v, const char *key, double lo, double hi,
                          double *out, spw_error_t *err)
{
    const char *s;
    double d;
    if (spw_ynode_str(x->d, v, key, &s, err) < 0)
        return -1;
    if (spw_parse_duration(s, &d) < 0)
        return cfg_at(x, v, err, "%s: expected seconds or a duration like 30m, 4h or 30d, got '%.40s'",
                  key, s);
    if (d < lo || d > hi)
        return cfg_at(x, v, err, "%s is %.40s: it must be from %g to %g seconds", key, s, lo, hi);
    *out = d;
    return 0;
}

/* Gives cfg->failures.mtbf_s / mttr_s an entry (0 = never fails) for
 * every pool. */
void cfg_grow_rates(ctx_t *x)
{
    spw_failure_conf_t *fc = &x->cfg->failures;
    size_t n = x->cfg->fleet.npools;
    if (x->nrates >= n)
        return;
    fc->mtbf_s = spw_xrealloc(fc->mtbf_s, n * sizeof(double));
    fc->mttr_s = spw_xrealloc(fc->mttr_s, n * sizeof(double));
    for (size_t i = x->nrates; i < n; i++)
        fc->mtbf_s[i] = fc->mttr_s[i] = 0;
    x->nrates = n;
}

/* Per-pool mean time between failures / to repair, for the pools [start,
 * npools) one onprem entry made. */
int cfg_pool_rates(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err)
{
    spw_failure_conf_t *fc = &x->cfg->failures;
    const spw_fleet_t *f = &x->cfg->fleet;
    const spw_ynode_t *bn = spw_ymap_get(n, "mtbf"), *rn = spw_ymap_get(n, "mttr");
    double mtbf = 0, mttr = 0;
    if (!bn && !rn)
        return 0;
    if (!bn)
        return cfg_at(x, rn, err, "pool '%s': mttr needs mtbf (the mean time between failures of "
                              "one node, e.g. mtbf: 30d)", f->pools[start].name);
    /* Up to about 3,000 years: a disk's quoted MTBF is in the millions of hours. */
    if (duration_value(x, bn, "mtbf", 0, 1e11, &mtbf, err) < 0
        || (rn && duration_value(x, rn, "mttr", 0, 3.1536e8, &mttr, err) < 0))
        return -1;
    if (!(mtbf > 0))
        return cfg_at(x, bn, err, "pool '%s': mtbf must be more than 0 (leave it out for a pool "
                              "that never fails)", f->pools[start].name);
    cfg_grow_rates(x);
    for (size_t i = start; i < f->npools; i++) {
        fc->mtbf_s[i] = mtbf;
        fc->mttr_s[i] = mttr;
    }
    return 0;
}

/* The AWS Spot Advisor's interruption buckets: the chance that a spot
 * instance is interrupted within a month. */
static const struct {
    const char *label;
    double monthly;     /* the bucket's midpoint (">20%": 25%) */
} interruption_buckets[] = {
    {"<5%", 0.025}, {"5-10%", 0.075}, {"10-15%", 0.125}, {"15-20%", 0.175}, {">20%", 0.25},
};

/* Preemptions per instance-hour of a bucket: the rate of an exponential
 * lifetime that ends within a month (730 h) with the bucket's chance. */
static int interruption_rate(ctx_t *x, const spw_ynode_t *v, double *rate_per_h, spw_error_t *err)
{
    const char *s;
    if (spw_ynode_str(x->d, v, "interruption", &s, err) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(interruption_buckets) / sizeof(interruption_buckets[0]); i++)
        if (strcmp(s, interruption_buckets[i].label) == 0) {
            *rate_per_h = -log(1 - interruption_buckets[i].monthly) / 730;
            return 0;
        }
    return cfg_at(x, v, err, "interruption: expected a Spot Advisor bucket, \"<5%%\", \"5-10%%\", "
                         "\"10-15%%\", \"15-20%%\" or \">20%%\" (quoted), got '%.40s'", s);
}

/* Whether every field a selector names (provider, region, zone,
 * instance_type; NULL = any) equals offer o's. */
static int sel_matches(const char *provider, const char *region, const char *zone,
                       const char *instance_type, const spw_offer_t *o)
{
    return (!provider || strcmp(provider, o->provider) == 0)
           && (!region || strcmp(region, o->region) == 0)
           && (!zone || strcmp(zone, o->zone) == 0)
           && (!instance_type || strcmp(instance_type, o->instance_type) == 0);
}

/* Whether every field availability entry a names equals offer o's. */
static int avail_matches(const spw_spot_avail_conf_t *a, const spw_offer_t *o)
{
    return sel_matches(a->provider, a->region, a->zone, a->instance_type, o);
}

/* Reads the selector keys of entry n (provider, region, zone,
 * instance_type) into *field[0..3] (owned copies; absent = NULL) and
 * describes them in want ("zone us-east-1a, ..."), for messages. */
static int offer_selector(ctx_t *x, const spw_ynode_t *n, char **field[4], char *want,
                          size_t wantlen, spw_error_t *err)
{
    static const char *const sel[] = {"provider", "region", "zone", "instance_type"};
    want[0] = '\0';
    for (size_t k = 0; k < 4; k++) {
        const spw_ynode_t *v = spw_ymap_get(n, sel[k]);
        const char *s;
        if (!v)
            continue;
        if (spw_ynode_str(x->d, v, sel[k], &s, err) < 0)
            return -1;
        *field[k] = spw_xstrdup(s);
        size_t used = strlen(want);
        snprintf(want + used, wantlen - used, "%s%s %.30s", used ? ", " : "", sel[k], s);
    }
    return 0;
}

int spw_spot_avail_of(const spw_config_t *cfg, const spw_offer_t *o)
{
    int hit = -1;
    for (size_t k = 0; k < cfg->spot.navail; k++)
        if (avail_matches(&cfg->spot.avail[k], o))
            hit = (int)k;
    return hit;
}

static int avail_entry(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"provider", "region", "zone", "instance_type", "trace",
                                       "start_offset", "interruption", "preempt_rate_per_h",
                                       NULL};
    spw_spot_conf_t *sc = &x->cfg->spot;
    const spw_fleet_t *f = &x->cfg->fleet;
    if (spw_ymap_check_keys(x->d, n, "a spot.availability entry", keys, err) < 0)
        return -1;
    const spw_ynode_t *tn = spw_ymap_get(n, "trace"), *in = spw_ymap_get(n, "interruption");
    const spw_ynode_t *rn = spw_ymap_get(n, "preempt_rate_per_h");
    const spw_ynode_t *on = spw_ymap_get(n, "start_offset");
    if (!!tn + !!in + !!rn != 1)
        return cfg_at(x, n, err, "%s", !tn && !in && !rn
                  ? "an availability entry needs one of trace: FILE.json, interruption: "
                    "\"5-10%\" (a Spot Advisor bucket) or preempt_rate_per_h: RATE"
                  : "an availability entry takes one of trace, interruption and "
                    "preempt_rate_per_h, not several");
    if (on && !tn)
        return cfg_at(x, on, err, "%s", "start_offset is a position in an availability trace: it "
                                    "goes with trace: FILE.json");
    sc->avail = spw_xrealloc(sc->avail, (sc->navail + 1) * sizeof(*sc->avail));
    spw_spot_avail_conf_t *a = &sc->avail[sc->navail++];
    memset(a, 0, sizeof(*a));
    a->line = n->line;
    char **field[] = {&a->provider, &a->region, &a->zone, &a->instance_type};
    char want[160];
    if (offer_selector(x, n, field, want, sizeof(want), err) < 0)
        return -1;
    size_t matched = 0, spot_priced = 0;
    for (size_t i = 0; i < f->noffers; i++)
        if (avail_matches(a, &f->offers[i])) {
            matched++;
            spot_priced += !isnan(f->offers[i].spot_usd_per_h);
        }
    if (!f->noffers)
        return cfg_at(x, n, err, "%s", "spot capacity for no cloud offer: add a cloud: section with "
                                   "offers: FILE (a catalog with spot prices)");
    if (!matched)
        return cfg_at(x, n, err, "this availability entry (%s) matches no cloud offer; check the "
                             "names against the catalog", want[0] ? want : "any offer");
    if (!spot_priced)
        return cfg_at(x, n, err, "this availability entry (%s) matches %zu offers, none with a spot "
                             "price (catalog column spot_usd_per_h), so it has no effect",
                  want[0] ? want : "any offer", matched);
    if (tn) {
        const char *file;
        if (spw_ynode_str(x->d, tn, "trace", &file, err) < 0)
            return -1;
        a->trace_path = cfg_resolve(x->base_dir, file);
        spw_error_t e2;
        if (spw_spot_trace_load(a->trace_path, &a->trace, &e2) < 0)
            return cfg_at(x, tn, err, "%s", e2.text);
        if (on && duration_value(x, on, "start_offset", 0, 3.1536e8, &a->start_offset_s, err) < 0)
            return -1;
    } else if (in) {
        if (interruption_rate(x, in, &a->preempt_rate_per_h, err) < 0)
            return -1;
    } else if (cfg_num_key(x, n, "preempt_rate_per_h", 0, 3600, &a->preempt_rate_per_h, err) < 0) {
        return -1;
    }
    return 0;
}

/* One entry of cloud.capacity_errors (docs/clouds.md). */
static int capacity_error_entry(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"provider", "region", "zone", "instance_type", "market",
                                       "rate", "block", "block_s", "code", NULL};
    if (spw_ymap_check_keys(x->d, n, "a cloud.capacity_errors entry", keys, err) < 0)
        return -1;
    spw_config_t *cfg = x->cfg;
    cfg->capacity_errors = spw_xrealloc(cfg->capacity_errors,
                                        (cfg->ncapacity_errors + 1) * sizeof(spw_capacity_error_conf_t));
    spw_capacity_error_conf_t *c = &cfg->capacity_errors[cfg->ncapacity_errors++];
    memset(c, 0, sizeof(*c));
    c->line = n->line;
    c->market = -1;
    c->block = SPW_BLOCK_OFFER;
    c->block_s = 300;
    char **field[] = {&c->provider, &c->region, &c->zone, &c->instance_type};
    char want[160];
    if (offer_selector(x, n, field, want, sizeof(want), err) < 0)
        return -1;
    size_t matched = 0;
    for (size_t i = 0; i < cfg->fleet.noffers; i++)
        matched += spw_capacity_error_matches(c, &cfg->fleet.offers[i]);
    if (!matched)
        return cfg_at(x, n, err, "this capacity_errors entry (%s) matches no cloud offer; check "
                      "the names against the catalog", want[0] ? want : "any offer");
    const spw_ynode_t *v;
    const char *s;
    if (!spw_ymap_get(n, "rate"))
        return cfg_at(x, n, err, "%s", "a capacity_errors entry needs rate: the share of "
                      "acquisitions refused, from 0 to 1");
    if (cfg_num_key(x, n, "rate", 0, 1, &c->rate, err) < 0 ||
        cfg_num_key(x, n, "block_s", 1, 3.1536e8, &c->block_s, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "market"))) {
        if (spw_ynode_str(x->d, v, "market", &s, err) < 0)
            return -1;
        if (strcmp(s, "spot") == 0)
            c->market = 1;
        else if (strcmp(s, "on_demand") == 0)
            c->market = 0;
        else if (strcmp(s, "any") != 0)
            return cfg_at(x, v, err, "market: expected spot, on_demand or any, got '%.40s'", s);
    }
    if ((v = spw_ymap_get(n, "block"))) {
        spw_error_t e2;
        if (spw_ynode_str(x->d, v, "block", &s, err) < 0)
            return -1;
        if (spw_block_parse(s, &c->block, &e2) < 0 || c->block == SPW_BLOCK_JOB)
            return cfg_at(x, v, err, "block: expected none, offer, family or account (what the "
                          "refusal rules out), got '%.40s'", s);
    }
    c->code = spw_xstrdup("InsufficientInstanceCapacity");
    if ((v = spw_ymap_get(n, "code"))) {
        if (spw_ynode_str(x->d, v, "code", &s, err) < 0)
            return -1;
        free(c->code);
        c->code = spw_xstrdup(s);
    }
    return 0;
}

int spw_capacity_error_matches(const spw_capacity_error_conf_t *c, const spw_offer_t *o)
{
    return sel_matches(c->provider, c->region, c->zone, c->instance_type, o);
}

int cfg_capacity_errors(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    if (n->kind != SPW_Y_SEQ)
        return cfg_at(x, n, err, "%s", "capacity_errors: expected a list like '- {zone: "
                      "us-east-1a, market: spot, rate: 0.3}'");
    if (!x->cfg->fleet.noffers)
        return cfg_at(x, n, err, "%s", "capacity_errors need cloud offers: add offers: FILE or "
                      "price_usd_per_gpu_h");
    for (size_t i = 0; i < n->n; i++)
        if (capacity_error_entry(x, n->items[i], err) < 0)
            return -1;
    return 0;
}

int cfg_spot_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"policy", "restart_overhead_s", "checkpoint_interval_s",
                                       "max_restarts", "recovery", "failover", "seed",
                                       "availability", "default_interruption", NULL};
    spw_policy_t *p = &x->cfg->policy;
    spw_spot_conf_t *sc = &x->cfg->spot;
    if (spw_ymap_check_keys(x->d, n, "spot", keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    const char *s;
    spw_error_t e2;
    if ((v = spw_ymap_get(n, "policy"))) {
        if (spw_ynode_str(x->d, v, "policy", &s, err) < 0)
            return -1;
        if (spw_spot_policy_parse(s, &p->spot_policy, &e2) < 0)
            return cfg_at(x, v, err, "spot.policy: %s", e2.text);
    }
    if ((v = spw_ymap_get(n, "recovery"))) {
        if (spw_ynode_str(x->d, v, "recovery", &s, err) < 0)
            return -1;
        if (spw_recovery_parse(s, &p->recovery, &e2) < 0)
            return cfg_at(x, v, err, "spot.recovery: %s", e2.text);
    }
    if ((v = spw_ymap_get(n, "failover"))) {
        if (spw_ynode_str(x->d, v, "failover", &s, err) < 0)
            return -1;
        if (spw_failover_parse(s, &p->failover, &e2) < 0)
            return cfg_at(x, v, err, "spot.failover: %s", e2.text);
    }
    if ((v = spw_ymap_get(n, "restart_overhead_s"))
        && duration_value(x, v, "restart_overhead_s", 0, 3.1536e8, &p->restart_overhead_s,
                          err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "checkpoint_interval_s"))) {
        if (v->kind == SPW_Y_SCALAR && strcmp(v->str, "continuous") == 0)
            sc->checkpoint_interval_s = SPW_CKPT_CONTINUOUS;
        else if (duration_value(x, v, "checkpoint_interval_s", 0, 3.1536e8,
                                &sc->checkpoint_interval_s, err) < 0)
            return -1;
    }
    if ((v = spw_ymap_get(n, "max_restarts"))) {
        long c;
        if (v->kind == SPW_Y_SCALAR && strcmp(v->str, "unlimited") == 0)
            p->max_restarts = UINT32_MAX;
        else if (v->kind != SPW_Y_SCALAR || spw_ynode_int(x->d, v, "max_restarts", &c, &e2) < 0
                 || c < 0 || c >= (long)UINT32_MAX)
            return cfg_at(x, v, err, "max_restarts: expected a count of restarts from 0 or "
                                 "unlimited, got '%.40s'", v->str ? v->str : "a list or map");
        else
            p->max_restarts = (uint32_t)c;
    }
    double seed = (double)sc->seed;
    if (cfg_num_key(x, n, "seed", 0, 9007199254740992.0, &seed, err) < 0)
        return -1;
    if (seed != floor(seed))
        return cfg_at(x, spw_ymap_get(n, "seed"), err, "%s", "seed must be a whole number");
    sc->seed = (uint64_t)seed;
    if ((v = spw_ymap_get(n, "default_interruption"))) {
        if (interruption_rate(x, v, &sc->default_rate_per_h, err) < 0)
            return -1;
        snprintf(sc->default_label, sizeof(sc->default_label), "%s", v->str);
    }
    if ((v = spw_ymap_get(n, "availability"))) {
        if (v->kind != SPW_Y_SEQ)
            return cfg_at(x, v, err, "%s", "availability: expected a list like '- {zone: us-east-1a, "
                                       "trace: FILE.json}'");
        for (size_t i = 0; i < v->n; i++)
            if (avail_entry(x, v->items[i], err) < 0)
                return -1;
    }
    return 0;
}

int cfg_failures_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"file", NULL};
    spw_failure_conf_t *fc = &x->cfg->failures;
    if (spw_ymap_check_keys(x->d, n, "failures", keys, err) < 0)
        return -1;
    const spw_ynode_t *v = spw_ymap_get(n, "file");
    const char *file;
    if (!v)
        return cfg_at(x, n, err, "%s", "failures: needs file: FILE.csv (a CSV node,down_s,up_s); "
                                   "for random failures give pools mtbf and mttr instead");
    if (spw_ynode_str(x->d, v, "file", &file, err) < 0)
        return -1;
    if (!x->cfg->fleet.npools)
        return cfg_at(x, v, err, "%s", "failures: there is no on-prem pool whose nodes could fail");
    char *path = cfg_resolve(x->base_dir, file);
    spw_error_t e2;
    int rc = spw_failures_load(path, &x->cfg->fleet, &fc->list, &fc->n, &e2);
    free(path);
    if (rc < 0)
        return cfg_at(x, v, err, "%s", e2.text);
    return 0;
}

/* ---- performance ------------------------------------------------------------- */

/* Reads a map of GPU model to throughput (n) into names / tp. */
static int throughput_map(ctx_t *x, const spw_ynode_t *n, const char *what, char ***names,
                          double **tp, size_t *cnt, spw_error_t *err)
{
    if (n->kind != SPW_Y_MAP)
        return cfg_at(x, n, err, "%s: expected a map of GPU model to relative throughput, e.g. "
                             "{T4: 0.16, H100: 2.2}", what);
    *names = spw_xmalloc((n->n ? n->n : 1) * sizeof(char *));
    *tp = spw_xmalloc((n->n ? n->n : 1) * sizeof(double));
    *cnt = 0;
    for (size_t i = 0; i < n->n; i++) {
        double v;
        if (spw_ynode_double(x->d, n->items[i], n->keys[i], &v, err) < 0)
            return -1;
        if (!(v > 0) || !isfinite(v))
            return cfg_at(x, n->items[i], err, "%s: throughput of %s must be more than 0", what,
                      n->keys[i]);
        (*names)[*cnt] = spw_xstrdup(n->keys[i]);
        (*tp)[(*cnt)++] = v;
    }
    return 0;
}

/* The performance: section (n may be NULL): the reference GPU runtimes are
 * measured on (default: the first on-prem pool's model; none = no
 * performance model) and throughputs that override the built-in table. */
int cfg_performance_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"reference", "throughput", "classes", NULL};
    spw_fleet_t *f = &x->cfg->fleet;
    const char *ref = NULL;
    if (n && spw_ymap_check_keys(x->d, n, "performance", keys, err) < 0)
        return -1;
    const spw_ynode_t *rn = n ? spw_ymap_get(n, "reference") : NULL;
    if (rn) {
        if (spw_ynode_str(x->d, rn, "reference", &ref, err) < 0)
            return -1;
        if (strcmp(ref, "none") == 0)
            return 0;
    } else {
        for (size_t i = 0; i < f->npools && !ref; i++)
            if (f->pools[i].model >= 0)
                ref = f->models.name[f->pools[i].model];
    }
    const spw_ynode_t *tn = n ? spw_ymap_get(n, "throughput") : NULL;
    if (tn && throughput_map(x, tn, "performance: throughput", &f->perf.names,
                             &f->perf.throughput, &f->perf.n, err) < 0)
        return -1;
    if (!ref)
        return 0;   /* no reference: every GPU runs a job in its runtime */
    int known = !isnan(spw_gpu_throughput(ref));
    for (size_t i = 0; i < f->perf.n && !known; i++)
        known = spw_model_accepts(f->perf.names[i], ref);
    if (!known && rn)
        return cfg_at(x, rn, err, "performance: reference GPU '%s' has no throughput: add it "
                  "under performance: throughput: (e.g. %s: 1), or set reference: none", ref, ref);
    if (known) {   /* a first pool of a model nobody rates: no performance model */
        /* Every pool runs at its GPU's speed relative to the reference,
         * given or taken from the first pool (which then runs at 1). */
        f->perf.reference = spw_xstrdup(ref);
        f->perf.scale_pools = 1;
    }
    return 0;
}

/* performance: classes: a throughput map per job class (after governance,
 * so a class named only here joins the classes rules and residency know). */
int cfg_perf_classes(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    const spw_ynode_t *cn = n ? spw_ymap_get(n, "classes") : NULL;
    spw_fleet_t *f = &x->cfg->fleet;
    spw_gov_t *g = &f->gov;
    if (!cn)
        return 0;
    if (cn->kind != SPW_Y_MAP)
        return cfg_at(x, cn, err, "%s", "performance: classes: expected a map of job class to a "
                                    "throughput map, e.g. {inference: {T4: 0.5}}");
    f->perf.classes = spw_xcalloc(cn->n ? cn->n : 1, sizeof(*f->perf.classes));
    for (size_t i = 0; i < cn->n; i++) {
        int k = cfg_intern_name(x, cn->items[i], &g->classes, &g->nclasses, SPW_GOV_MAX_CLASSES,
                            "class", cn->keys[i], err);
        if (k < 0)
            return -1;
        struct spw_perf_class *pc = &f->perf.classes[f->perf.nclasses++];
        pc->jclass = (uint32_t)k + 1;
        char what[96];
        snprintf(what, sizeof(what), "performance: classes: %s", cn->keys[i]);
        if (throughput_map(x, cn->items[i], what, &pc->names, &pc->throughput, &pc->n, err) < 0)
            return -1;
    }
    return 0;
}
