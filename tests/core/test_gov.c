/* test_gov.c: governance (core/gov.h) on hand-built fleets: names and the UTC
 * calendar, rule matching and profile compilation, residency, the budget
 * ledger with dollar amounts worked out by hand, data gravity, validation
 * messages, deep copies, and random reserve/settle sequences that must
 * never let settled + reserved pass a budget. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "tap.h"
#include "core/gov.h"
#include "core/model.h"
#include "util/rng.h"

/* 2026-11-01 00:00 UTC, the engine's time 0 in the ledger tests. */
#define NOV1 1793491200.0
#define DAY 86400.0

/* ---- building fleets and specs ----------------------------------------------- */

/* The fleet every test starts from.  Prices per GPU-hour, on demand / spot:
 *   0 aws   us-east-1    p4d.24xlarge        A100      x8   4.00 / 1.50
 *   1 aws   eu-west-1    p4d.24xlarge        A100      x8   5.00 / none
 *   2 gcp   europe-west4 a2-highgpu-1g       A100      x1   3.00 / 1.20
 *   3 gcp   us-central1  a3-highgpu-8g       H100      x8  11.00 / 3.00
 *   4 azure westeurope   Standard_ND96asr_v4 A100-80GB x8   3.50 / none
 *   5 aws   us-east-1    p5.48xlarge         H100      x8  12.29 / 5.00
 * Pools: 0 dc-a100 (A100), 1 dc-v100 (V100), and with any_pool 2 dc-any. */
static void base_fleet(spw_fleet_t *f, int any_pool)
{
    spw_fleet_init(f);
    add_pool(f, "dc-a100", 1, 8, "A100", 1);
    add_pool(f, "dc-v100", 1, 8, "V100", 1);
    if (any_pool)
        add_pool(f, "dc-any", 1, 8, NULL, 1);
    add_offer(f, "aws", "us-east-1", "p4d.24xlarge", "A100", 8, 32, 12, 60);
    add_offer(f, "aws", "eu-west-1", "p4d.24xlarge", "A100", 8, 40, NAN, 60);
    add_offer(f, "gcp", "europe-west4", "a2-highgpu-1g", "A100", 1, 3, 1.2, 60);
    add_offer(f, "gcp", "us-central1", "a3-highgpu-8g", "H100", 8, 88, 24, 60);
    add_offer(f, "azure", "westeurope", "Standard_ND96asr_v4", "A100-80GB", 8, 28, NAN, 60);
    add_offer(f, "aws", "us-east-1", "p5.48xlarge", "H100", 8, 98.32, 40, 60);
}

/* Replaces an owned string list with a copy of the NULL-terminated items. */
static void set_list(char ***v, size_t *n, const char *const *items)
{
    for (size_t i = 0; i < *n; i++)
        free((*v)[i]);
    free(*v);
    size_t k = 0;
    while (items[k])
        k++;
    *v = spw_xcalloc(k, sizeof(char *));
    for (size_t i = 0; i < k; i++)
        (*v)[i] = spw_xstrdup(items[i]);
    *n = k;
}
#define REGIONS(res, ...) \
    set_list(&(res)->regions, &(res)->nregions, (const char *const[]){__VA_ARGS__, NULL})
#define LIST(obj, field, ...) \
    set_list(&(obj)->field, &(obj)->n_##field, (const char *const[]){__VA_ARGS__, NULL})

static void push_str(char ***v, size_t *n, const char *s)
{
    *v = spw_xrealloc(*v, (*n + 1) * sizeof(char *));
    (*v)[(*n)++] = spw_xstrdup(s);
}

/* Appends a rule that matches every job and changes nothing; the pointer
 * is good until the next rule_add. */
static spw_rule_t *rule_add(spw_gov_t *g, const char *name, int line)
{
    g->rules = spw_xrealloc(g->rules, (g->nrules + 1) * sizeof(*g->rules));
    spw_rule_t *r = &g->rules[g->nrules++];
    memset(r, 0, sizeof(*r));
    r->name = spw_xstrdup(name);
    r->line = line;
    r->gpus_min = 1;
    r->gpus_max = UINT32_MAX;
    r->max_usd_per_gpu_h = INFINITY;
    return r;
}

static int team_add(spw_gov_t *g, const char *name, double budget, spw_period_t period)
{
    g->teams = spw_xrealloc(g->teams, (g->nteams + 1) * sizeof(*g->teams));
    spw_team_spec_t *t = &g->teams[g->nteams];
    memset(t, 0, sizeof(*t));
    t->name = spw_xstrdup(name);
    t->line = 3 + (int)g->nteams;
    t->budget_usd = budget;
    t->period = period;
    t->on_exhausted = SPW_EXHAUSTED_HOLD;
    t->max_cloud_usd_per_h = INFINITY;
    t->max_cloud_gpus = INFINITY;
    t->max_egress_usd_per_month = INFINITY;
    return (int)g->nteams++;
}

static spw_residency_spec_t *residency_add(spw_gov_t *g, const char *name, int line, int onprem)
{
    g->residencies = spw_xrealloc(g->residencies, (g->nresidencies + 1) * sizeof(*g->residencies));
    spw_residency_spec_t *r = &g->residencies[g->nresidencies++];
    memset(r, 0, sizeof(*r));
    r->name = spw_xstrdup(name);
    r->line = line;
    r->onprem = onprem;
    return r;
}

static spw_site_t site_pool(int pool)
{
    spw_site_t s = {pool, NULL, NULL};
    return s;
}

static spw_site_t site_region(const char *provider, const char *region)
{
    spw_site_t s = {-1, provider ? spw_xstrdup(provider) : NULL, spw_xstrdup(region)};
    return s;
}

static spw_dataset_spec_t *dataset_add(spw_gov_t *g, const char *name, int line, double gb,
                                       spw_site_t home)
{
    g->datasets = spw_xrealloc(g->datasets, (g->ndatasets + 1) * sizeof(*g->datasets));
    spw_dataset_spec_t *d = &g->datasets[g->ndatasets++];
    memset(d, 0, sizeof(*d));
    d->name = spw_xstrdup(name);
    d->line = line;
    d->size_gb = gb;
    d->home = home;
    return d;
}

static void replica_add(spw_dataset_spec_t *d, spw_site_t s)
{
    d->replicas = spw_xrealloc(d->replicas, (d->nreplicas + 1) * sizeof(*d->replicas));
    d->replicas[d->nreplicas++] = s;
}

/* A job with governance fields only ("index + 1, 0 = none"). */
static spw_job_t job(uint32_t team, uint32_t jclass, uint64_t labels, uint32_t gpus,
                     uint32_t residency)
{
    spw_job_t j;
    memset(&j, 0, sizeof(j));
    j.id = "j";
    j.gpus = gpus;
    j.deadline_s = NAN;
    j.max_runtime_s = NAN;
    j.team = team;
    j.jclass = jclass;
    j.labels = labels;
    j.residency = residency;
    spw_job_reset(&j);
    return j;
}

static const spw_profile_t *prof(spw_govrt_t *rt, spw_job_t j)
{
    return spw_govrt_profile(rt, spw_govrt_profile_of(rt, &j));
}

static spw_charge_t charge(double usd, double egress, double rate, double gpus)
{
    spw_charge_t c = {usd, egress, rate, gpus};
    return c;
}

static int contains(const char *s, const char *part)
{
    int yes = strstr(s, part) != NULL;
    if (!yes)
        diag("'%s' does not contain '%s'", s, part);
    return yes;
}

/* ---- names ------------------------------------------------------------------------ */

static void test_names(void)
{
    spw_error_t err;
    is_str(spw_period_name(SPW_PERIOD_MONTH), "month", "period name month");
    is_str(spw_period_name(SPW_PERIOD_WEEK), "week", "period name week");
    is_str(spw_period_name((spw_period_t)7), "?", "period name out of range");

    static const char *const xs[] = {"hold", "onprem_only", "reject"};
    for (int i = 0; i < 3; i++) {
        spw_exhausted_t x = SPW_EXHAUSTED_HOLD;
        is_str(spw_exhausted_name((spw_exhausted_t)i), xs[i], "exhausted name %s", xs[i]);
        ok(spw_exhausted_parse(xs[i], &x, &err) == 0 && (int)x == i, "exhausted parse %s", xs[i]);
    }
    spw_exhausted_t x = SPW_EXHAUSTED_REJECT;
    ok(spw_exhausted_parse("stop", &x, &err) < 0 && x == SPW_EXHAUSTED_REJECT,
       "exhausted parse rejects 'stop' and leaves the output alone");
    ok(contains(err.text, "unknown on_exhausted 'stop' (expected one of: hold, onprem_only, reject)"),
       "exhausted parse error lists the names");

    static const char *const ss[] = {"unset", "allowed", "required", "never"};
    for (int i = 0; i < 4; i++) {
        spw_spot_rule_t s = SPW_SPOT_UNSET;
        is_str(spw_spot_rule_name((spw_spot_rule_t)i), ss[i], "spot name %s", ss[i]);
        int rc = spw_spot_rule_parse(ss[i], &s, &err);
        if (i == 0)
            ok(rc < 0 && contains(err.text, "expected one of: allowed, required, never)"),
               "spot parse refuses 'unset' and lists the three it accepts");
        else
            ok(rc == 0 && (int)s == i, "spot parse %s", ss[i]);
    }

    static const char *const ps[] = {"unset", "onprem_first", "cloud_first", "onprem_only"};
    for (int i = 0; i < 4; i++) {
        spw_placement_t p = SPW_PLACE_UNSET;
        is_str(spw_placement_name((spw_placement_t)i), ps[i], "placement name %s", ps[i]);
        int rc = spw_placement_parse(ps[i], &p, &err);
        if (i == 0)
            ok(rc < 0 && contains(err.text, "unknown placement 'unset' (expected one of: "
                                            "onprem_first, cloud_first, onprem_only)"),
               "placement parse refuses 'unset'");
        else
            ok(rc == 0 && (int)p == i, "placement parse %s", ps[i]);
    }
    spw_placement_t p;
    ok(spw_placement_parse("Cloud_First", &p, &err) < 0, "placement parse is case-sensitive");
}

/* ---- calendar ------------------------------------------------------------------------- */

static void check_period(spw_period_t p, double t, double start, double end, const char *label)
{
    char buf[32];
    spw_period_label(p, t, buf, sizeof(buf));
    is_double(spw_period_start(p, t), start, 0, "%s: start of %.0f", label, t);
    is_double(spw_period_end(p, t), end, 0, "%s: end of %.0f", label, t);
    is_str(buf, label, "%s: label of %.0f", label, t);
}

static void test_calendar(void)
{
    /* Months, from `date -u -d ... +%s`. */
    check_period(SPW_PERIOD_MONTH, 1794744000, 1793491200, 1796083200, "2026-11");  /* Nov 15 noon */
    check_period(SPW_PERIOD_MONTH, 1793491200, 1793491200, 1796083200, "2026-11");  /* first second */
    check_period(SPW_PERIOD_MONTH, 1793491199, 1790812800, 1793491200, "2026-10");  /* last second of Oct */
    check_period(SPW_PERIOD_MONTH, 1796083200 + 30 * DAY, 1796083200, 1798761600, "2026-12");  /* Dec -> Jan */
    check_period(SPW_PERIOD_MONTH, 1835481599, 1832976000, 1835481600, "2028-02");  /* Feb 29 2028 23:59:59 */
    check_period(SPW_PERIOD_MONTH, 1835481600, 1835481600, 1835481600 + 31 * DAY, "2028-03");
    check_period(SPW_PERIOD_MONTH, -86400, -2678400, 0, "1969-12");                 /* before 1970 */
    check_period(SPW_PERIOD_MONTH, 0, 0, 31 * DAY, "1970-01");

    /* ISO weeks: Monday 00:00 to Monday; the year is the Thursday's. */
    check_period(SPW_PERIOD_WEEK, 1794787200 + 3 * DAY, 1794787200, 1795392000, "2026-W47");
    check_period(SPW_PERIOD_WEEK, 1794787199, 1794787200 - 7 * DAY, 1794787200, "2026-W46"); /* Sun 23:59:59 */
    check_period(SPW_PERIOD_WEEK, 1798761600, 1798416000, 1799020800, "2026-W53");  /* Fri 2027-01-01 */
    check_period(SPW_PERIOD_WEEK, 1799020799, 1798416000, 1799020800, "2026-W53");  /* Sun 2027-01-03 */
    check_period(SPW_PERIOD_WEEK, 1799020800, 1799020800, 1799020800 + 7 * DAY, "2027-W01");
    check_period(SPW_PERIOD_WEEK, 1735689600, 1735516800, 1735516800 + 7 * DAY, "2025-W01"); /* Wed 2025-01-01 */
    check_period(SPW_PERIOD_WEEK, -86400, -259200, -259200 + 7 * DAY, "1970-W01");  /* Wed 1969-12-31 */
    check_period(SPW_PERIOD_WEEK, 0, -259200, -259200 + 7 * DAY, "1970-W01");

    is_double(spw_period_start(SPW_PERIOD_MONTH, NAN), NAN, 0, "NAN stays NAN");
    is_double(spw_period_end(SPW_PERIOD_WEEK, INFINITY), INFINITY, 0, "INFINITY stays INFINITY");
    char small[4];
    spw_period_label(SPW_PERIOD_MONTH, 0, small, sizeof(small));
    is_str(small, "197", "a short label buffer is truncated, not overrun");

    /* Parsing. */
    spw_error_t err;
    spw_period_t p = SPW_PERIOD_WEEK;
    double start = 0;
    ok(spw_period_parse("2026-11", &p, &start, &err) == 0 && p == SPW_PERIOD_MONTH
       && start == 1793491200, "parse 2026-11");
    ok(spw_period_parse("2028-02", &p, &start, &err) == 0 && start == 1832976000, "parse 2028-02");
    ok(spw_period_parse("2026-W47", &p, &start, &err) == 0 && p == SPW_PERIOD_WEEK
       && start == 1794787200, "parse 2026-W47 (Monday 2026-11-16)");
    ok(spw_period_parse("2026-W53", &p, &start, &err) == 0 && start == 1798416000,
       "parse 2026-W53: 2026 has 53 ISO weeks");
    ok(spw_period_parse("2027-W01", &p, &start, &err) == 0 && start == 1799020800,
       "parse 2027-W01 starts Monday 2027-01-04");
    ok(spw_period_parse("2025-W01", &p, &start, &err) == 0 && start == 1735516800,
       "parse 2025-W01 starts Monday 2024-12-30");
    ok(spw_period_parse("2026-13", &p, &start, &err) < 0
       && contains(err.text, "period '2026-13': month must be 01 to 12 (write YYYY-MM or YYYY-Www)"),
       "2026-13 is refused with the month range");
    ok(spw_period_parse("2026-00", &p, &start, &err) < 0 && contains(err.text, "month must be"),
       "2026-00 is refused");
    ok(spw_period_parse("2027-W53", &p, &start, &err) < 0
       && contains(err.text, "week must be 01 to 52"), "2027-W53 is refused: 2027 has 52 weeks");
    ok(spw_period_parse("2026-W00", &p, &start, &err) < 0 && contains(err.text, "week must be 01 to 53"),
       "2026-W00 is refused");
    static const char *const bad[] = {"2026-1", "26-11", "2026-11x", "2026/11", "2026-w47",
                                      "2026-W4", "", "november", "2026-W47 "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ok(spw_period_parse(bad[i], &p, &start, &err) < 0
           && contains(err.text, "(write YYYY-MM or YYYY-Www)"), "'%s' is refused", bad[i]);
    start = 42;
    spw_period_parse("2026-13", &p, &start, &err);
    is_double(start, 42, 0, "a failed parse leaves start alone");

    /* Properties over random instants 1900..2100: a period holds its
     * instant, weeks start on Monday and last 7 days, months start on day
     * 1 (their label parses back to their start). */
    spw_rng_t rng;
    spw_rng_seed(&rng, 7);
    int bad_month = 0, bad_week = 0;
    for (int i = 0; i < 20000; i++) {
        double t = floor(-2208988800.0 + spw_rng_uniform(&rng) * 6311433600.0);
        for (int k = 0; k < 2; k++) {
            spw_period_t kind = k ? SPW_PERIOD_WEEK : SPW_PERIOD_MONTH;
            double s = spw_period_start(kind, t), e = spw_period_end(kind, t), back = -1;
            char label[32];
            spw_period_label(kind, t, label, sizeof(label));
            spw_period_t pk;
            int fine = s <= t && t < e && spw_period_parse(label, &pk, &back, NULL) == 0
                       && pk == kind && back == s && spw_period_start(kind, e) == e;
            if (kind == SPW_PERIOD_WEEK)
                fine = fine && e - s == 7 * DAY && fmod(s / DAY + 3 + 7e6, 7) == 0;
            else
                fine = fine && e - s >= 28 * DAY && e - s <= 31 * DAY;
            int *bad_count = k ? &bad_week : &bad_month;
            if (!fine && *bad_count == 0)
                diag("t = %.0f kind %d: start %.0f end %.0f label %s back %.0f", t, k, s, e,
                     label, back);
            *bad_count += !fine;
        }
    }
    is(bad_month, 0, "20000 random months: start <= t < end, label parses back to start");
    is(bad_week, 0, "20000 random weeks: Monday start, 7 days, label parses back to start");
}

/* ---- spec lifetime -------------------------------------------------------------------------- */

static void test_init_lookup(void)
{
    spw_gov_t g;
    spw_gov_init(&g);
    ok(g.origin_s == 0 && g.nteams == 0 && g.nrules == 0 && g.teams == NULL, "init: empty");
    ok(isinf(g.max_cloud_usd_per_h) && isinf(g.max_cloud_gpus), "init: org caps INFINITY");
    ok(g.default_max_runtime_s == 86400 && g.bandwidth_gbps == 10 && g.cache_ttl_s == 7 * DAY,
       "init: runtime 1 day, 10 Gb/s, 7-day cache");
    ok(g.storage_usd_per_gb_month == 0.023 && g.egress_onprem_usd_per_gb == 0
       && g.egress_aws_usd_per_gb == 0.09 && g.egress_gcp_usd_per_gb == 0.12
       && g.egress_azure_usd_per_gb == 0.087, "init: storage and egress list prices");
    ok(!spw_gov_active(&g), "init: not active");
    g.max_cloud_gpus = 8;
    ok(spw_gov_active(&g), "a finite org GPU cap is active");
    g.max_cloud_gpus = INFINITY;
    g.max_cloud_usd_per_h = 100;
    ok(spw_gov_active(&g), "a finite org rate cap is active");
    g.max_cloud_usd_per_h = INFINITY;
    push_str(&g.classes, &g.nclasses, "eu");
    push_str(&g.labels, &g.nlabels, "prio=high");
    ok(!spw_gov_active(&g), "class and label names alone are not active");
    residency_add(&g, "eu", 9, 1);
    ok(spw_gov_active(&g), "a residency is active");
    spw_gov_clear(&g);
    ok(!spw_gov_active(&g) && g.bandwidth_gbps == 10, "clear leaves the init state");
    team_add(&g, "ml", INFINITY, SPW_PERIOD_MONTH);
    ok(spw_gov_active(&g), "a team is active");
    spw_gov_clear(&g);
    rule_add(&g, "r", 1);
    ok(spw_gov_active(&g), "a rule is active");
    spw_gov_clear(&g);
    dataset_add(&g, "d", 1, 1, site_pool(0));
    ok(spw_gov_active(&g), "a dataset is active");
    spw_gov_clear(&g);

    team_add(&g, "ml", 500, SPW_PERIOD_MONTH);
    team_add(&g, "vision", 100, SPW_PERIOD_WEEK);
    push_str(&g.classes, &g.nclasses, "eu");
    push_str(&g.classes, &g.nclasses, "batch");
    push_str(&g.labels, &g.nlabels, "prio=high");
    push_str(&g.labels, &g.nlabels, "tier=free");
    residency_add(&g, "eu", 9, 1);
    residency_add(&g, "restricted", 10, 0);
    dataset_add(&g, "imagenet", 12, 150, site_pool(0));
    is(spw_gov_team(&g, "vision"), 1, "team lookup");
    is(spw_gov_team(&g, "Vision"), -1, "team lookup is exact");
    is(spw_gov_team(&g, "nobody"), -1, "unknown team");
    is(spw_gov_class(&g, "batch"), 1, "class lookup");
    is(spw_gov_class(&g, "gpu"), -1, "unknown class");
    is(spw_gov_label(&g, "tier=free"), 1, "label lookup by key=value");
    is(spw_gov_label(&g, "tier"), -1, "a key alone is no label");
    is(spw_gov_label(&g, "tier=paid"), -1, "another value is another label");
    is(spw_gov_residency(&g, "restricted"), 1, "residency lookup");
    is(spw_gov_residency(&g, "us"), -1, "unknown residency");
    is(spw_gov_dataset(&g, "imagenet"), 0, "dataset lookup");
    is(spw_gov_dataset(&g, "coco"), -1, "unknown dataset");
    spw_gov_clear(&g);

    ok(spw_family_matches("p4d", "p4d.24xlarge"), "family p4d matches p4d.24xlarge");
    ok(!spw_family_matches("p4", "p4d.24xlarge"), "family p4 does not match p4d.24xlarge");
    ok(spw_family_matches("a2", "a2-highgpu-1g"), "family a2 matches a2-highgpu-1g");
    ok(spw_family_matches("Standard_ND96asr", "Standard_ND96asr_v4"), "'_' ends a family");
    ok(spw_family_matches("g5", "g5"), "a family matches the whole type");
    ok(!spw_family_matches("g5", "g5x"), "g5 does not match g5x");
    ok(!spw_family_matches("p4d.24xlarge.x", "p4d.24xlarge"), "longer than the type");
}

/* Whether two specs are equal field by field and share no owned pointer. */
static int strv_equal(char *const *a, char *const *b, size_t n)
{
    if ((a == NULL) != (b == NULL))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i], b[i]) != 0 || a[i] == b[i])
            return 0;
    return a == NULL || a != b;
}

static int str_equal(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0 && a != b;
}

static int site_equal(const spw_site_t *a, const spw_site_t *b)
{
    return a->pool == b->pool && str_equal(a->provider, b->provider)
           && str_equal(a->region, b->region);
}

static int gov_equal(const spw_gov_t *a, const spw_gov_t *b)
{
    if (a->origin_s != b->origin_s || a->nteams != b->nteams || a->nclasses != b->nclasses
        || a->nlabels != b->nlabels || a->nrules != b->nrules
        || a->nresidencies != b->nresidencies || a->ndatasets != b->ndatasets
        || a->max_cloud_usd_per_h != b->max_cloud_usd_per_h
        || a->max_cloud_gpus != b->max_cloud_gpus
        || a->default_max_runtime_s != b->default_max_runtime_s
        || a->bandwidth_gbps != b->bandwidth_gbps || a->cache_ttl_s != b->cache_ttl_s
        || a->storage_usd_per_gb_month != b->storage_usd_per_gb_month
        || a->egress_onprem_usd_per_gb != b->egress_onprem_usd_per_gb
        || a->egress_aws_usd_per_gb != b->egress_aws_usd_per_gb
        || a->egress_gcp_usd_per_gb != b->egress_gcp_usd_per_gb
        || a->egress_azure_usd_per_gb != b->egress_azure_usd_per_gb)
        return 0;
    for (size_t i = 0; i < a->nteams; i++) {
        const spw_team_spec_t *x = &a->teams[i], *y = &b->teams[i];
        if (!str_equal(x->name, y->name) || x->line != y->line || x->budget_usd != y->budget_usd
            || x->period != y->period || x->on_exhausted != y->on_exhausted
            || x->max_cloud_usd_per_h != y->max_cloud_usd_per_h
            || x->max_cloud_gpus != y->max_cloud_gpus
            || x->max_egress_usd_per_month != y->max_egress_usd_per_month)
            return 0;
    }
    if (!strv_equal(a->classes, b->classes, a->nclasses) || !strv_equal(a->labels, b->labels, a->nlabels))
        return 0;
    for (size_t i = 0; i < a->nrules; i++) {
        const spw_rule_t *x = &a->rules[i], *y = &b->rules[i];
#define SAME_LIST(f) (x->n_##f == y->n_##f && strv_equal(x->f, y->f, x->n_##f))
        if (!str_equal(x->name, y->name) || x->line != y->line || x->teams != y->teams
            || x->classes != y->classes || x->labels != y->labels || x->gpus_min != y->gpus_min
            || x->gpus_max != y->gpus_max || !SAME_LIST(allow_providers)
            || !SAME_LIST(deny_providers) || !SAME_LIST(allow_regions) || !SAME_LIST(deny_regions)
            || !SAME_LIST(allow_families) || !SAME_LIST(deny_families) || !SAME_LIST(allow_gpus)
            || x->spot != y->spot || x->placement != y->placement
            || x->max_usd_per_gpu_h != y->max_usd_per_gpu_h)
            return 0;
#undef SAME_LIST
    }
    for (size_t i = 0; i < a->nresidencies; i++) {
        const spw_residency_spec_t *x = &a->residencies[i], *y = &b->residencies[i];
        if (!str_equal(x->name, y->name) || x->line != y->line || x->onprem != y->onprem
            || x->nregions != y->nregions || !strv_equal(x->regions, y->regions, x->nregions))
            return 0;
    }
    for (size_t i = 0; i < a->ndatasets; i++) {
        const spw_dataset_spec_t *x = &a->datasets[i], *y = &b->datasets[i];
        if (!str_equal(x->name, y->name) || x->line != y->line || x->size_gb != y->size_gb
            || !site_equal(&x->home, &y->home) || x->nreplicas != y->nreplicas)
            return 0;
        for (size_t k = 0; k < x->nreplicas; k++)
            if (!site_equal(&x->replicas[k], &y->replicas[k]))
                return 0;
    }
    return 1;
}

/* The spec the validation and copy tests share (on base_fleet(f, 0)). */
static void full_spec(spw_gov_t *g)
{
    g->origin_s = NOV1;
    g->max_cloud_usd_per_h = 200;
    g->egress_onprem_usd_per_gb = 0.01;
    int ml = team_add(g, "ml", 500, SPW_PERIOD_MONTH);
    int vision = team_add(g, "vision", 100, SPW_PERIOD_WEEK);
    g->teams[vision].max_cloud_gpus = 16;
    g->teams[vision].on_exhausted = SPW_EXHAUSTED_REJECT;
    push_str(&g->classes, &g->nclasses, "eu");
    push_str(&g->classes, &g->nclasses, "batch");
    push_str(&g->classes, &g->nclasses, "restricted");
    push_str(&g->labels, &g->nlabels, "prio=high");
    spw_residency_spec_t *eu = residency_add(g, "eu", 30, 1);
    REGIONS(eu, "eu-west-1", "europe-west4", "azure:westeurope");
    residency_add(g, "restricted", 33, 1);
    spw_rule_t *r = rule_add(g, "ml-spot", 12);
    r->teams = 1ULL << ml;
    r->spot = SPW_SPOT_REQUIRED;
    LIST(r, allow_providers, "aws", "GCP");
    LIST(r, deny_regions, "gcp:us-central1");
    r = rule_add(g, "eu-aws", 16);
    r->classes = 1ULL << 0;
    LIST(r, allow_regions, "aws:eu-west-1", "europe-west4");
    LIST(r, allow_gpus, "A100");
    r = rule_add(g, "batch-cheap", 20);
    r->classes = 1ULL << 1;
    r->labels = 1ULL << 0;
    r->gpus_min = 2;
    r->gpus_max = 8;
    r->max_usd_per_gpu_h = 4.5;
    r->placement = SPW_PLACE_CLOUD_FIRST;
    LIST(r, allow_families, "p4d", "a2");
    LIST(r, deny_families, "p5");
    spw_dataset_spec_t *d = dataset_add(g, "imagenet", 40, 150, site_pool(0));
    replica_add(d, site_region("gcp", "europe-west4"));
    replica_add(d, site_region(NULL, "us-east-1"));
}

static void test_copy(void)
{
    spw_gov_t g, c, e;
    spw_gov_init(&g);
    full_spec(&g);
    spw_gov_copy(&c, &g);
    ok(gov_equal(&c, &g), "copy equals its source and shares no string");
    spw_gov_clear(&g);
    ok(c.nrules == 3 && strcmp(c.rules[0].allow_providers[1], "GCP") == 0
       && strcmp(c.datasets[0].replicas[0].region, "europe-west4") == 0,
       "copy outlives its cleared source");
    spw_gov_copy(&g, &c);
    ok(gov_equal(&g, &c), "copy of the copy equals it");
    spw_gov_clear(&c);
    spw_gov_clear(&g);
    spw_gov_init(&e);
    spw_gov_copy(&c, &e);
    ok(gov_equal(&c, &e) && c.teams == NULL && c.rules == NULL, "copy of an empty spec is empty");
    spw_gov_clear(&c);
}

/* ---- profiles ------------------------------------------------------------------------------ */

#define O(i) (1ULL << (i))

static void test_profiles_plain(void)
{
    spw_fleet_t f;
    base_fleet(&f, 1);
    spw_govrt_t *rt = spw_govrt_create(&f);
    spw_job_t a = job(0, 0, 0, 1, 0), b = job(0, 0, 0, 64, 0);
    uint32_t ia = spw_govrt_profile_of(rt, &a), ib = spw_govrt_profile_of(rt, &b);
    const spw_profile_t *p = spw_govrt_profile(rt, ia);
    is(ia, 0, "no rules: first profile is 0");
    is(ib, 0, "no rules: every job shares it");
    ok(p->offers[0] == 0x3f && p->pools[0] == 0x7, "no rules: every offer and pool");
    ok(p->spot == SPW_SPOT_UNSET && p->placement == SPW_PLACE_UNSET && isinf(p->max_usd_per_gpu_h)
       && p->residency == -1 && !p->onprem_by_residency, "no rules: nothing set");
    ok(spw_govrt_profile(rt, 1) == NULL, "profile out of range is NULL");
    spw_govrt_destroy(rt);
    spw_govrt_destroy(NULL);
    spw_fleet_clear(&f);

    /* An empty fleet still gives profiles. */
    spw_fleet_init(&f);
    rt = spw_govrt_create(&f);
    a = job(1, 1, 3, 1, 1);
    ok(prof(rt, a) != NULL && prof(rt, a)->residency == -1, "empty fleet: a profile, out-of-range "
       "team, class and residency ignored");
    spw_govrt_destroy(rt);
    spw_fleet_clear(&f);
}

static void test_profiles_rules(void)
{
    spw_fleet_t f;
    base_fleet(&f, 1);
    spw_gov_t *g = &f.gov;
    int ml = team_add(g, "ml", INFINITY, SPW_PERIOD_MONTH);
    int vision = team_add(g, "vision", INFINITY, SPW_PERIOD_MONTH);
    int research = team_add(g, "research", INFINITY, SPW_PERIOD_MONTH);
    push_str(&g->classes, &g->nclasses, "batch");
    push_str(&g->labels, &g->nlabels, "prio=high");
    push_str(&g->labels, &g->nlabels, "tier=free");
    const uint64_t HIGH = 1, FREE = 2;
    spw_rule_t *r;
    r = rule_add(g, "a100-only", 1);           /* r0 */
    r->teams = 1ULL << vision;
    LIST(r, allow_gpus, "A100");
    r = rule_add(g, "ml-spot", 2);             /* r1 */
    r->teams = 1ULL << ml;
    r->spot = SPW_SPOT_REQUIRED;
    r = rule_add(g, "free-tier", 3);           /* r2 */
    r->labels = FREE;
    r->max_usd_per_gpu_h = 4;
    r = rule_add(g, "big", 4);                 /* r3 */
    r->gpus_min = 16;
    r->placement = SPW_PLACE_CLOUD_FIRST;
    r = rule_add(g, "ml-high", 5);             /* r4 */
    r->teams = 1ULL << ml;
    r->labels = HIGH;
    r->spot = SPW_SPOT_NEVER;
    r->max_usd_per_gpu_h = 6;
    r = rule_add(g, "no-azure", 6);            /* r5 */
    LIST(r, deny_providers, "AZURE");
    r = rule_add(g, "batch-us", 7);            /* r6 */
    r->classes = 1;
    LIST(r, allow_regions, "aws:us-east-1");
    LIST(r, deny_families, "p5");
    r = rule_add(g, "research-onprem", 8);     /* r7 */
    r->teams = 1ULL << research;
    r->placement = SPW_PLACE_ONPREM_ONLY;
    r = rule_add(g, "two-to-four", 9);         /* r8 */
    r->gpus_min = 2;
    r->gpus_max = 4;
    LIST(r, allow_families, "a2", "p4d");
    r = rule_add(g, "research-huge", 10);      /* r9 */
    r->teams = 1ULL << research;
    r->gpus_min = 32;
    r->placement = SPW_PLACE_CLOUD_FIRST;
    spw_govrt_t *rt = spw_govrt_create(&f);
    const uint32_t ML = (uint32_t)ml + 1, VISION = (uint32_t)vision + 1;
    const uint32_t RESEARCH = (uint32_t)research + 1;

    const spw_profile_t *p = prof(rt, job(0, 0, 0, 1, 0));
    ok(p->matched[0] == O(5) && p->offers[0] == 0x2f && p->pools[0] == 0x7,
       "no team: only no-azure matches; azure (offer 4) is gone, every pool stays");
    ok(p->spot == SPW_SPOT_UNSET && p->placement == SPW_PLACE_UNSET, "no team: nothing set");

    p = prof(rt, job(ML, 0, 0, 8, 0));
    ok(p->matched[0] == (O(1) | O(5)), "ml: ml-spot and no-azure");
    is(p->spot, SPW_SPOT_REQUIRED, "ml: spot required");
    is(p->offers[0], 0x2d, "ml, spot required: offer 1 (no spot price) and azure are gone");

    p = prof(rt, job(ML, 0, HIGH | FREE, 1, 0));
    ok(p->matched[0] == (O(1) | O(2) | O(4) | O(5)), "ml high free: r1 r2 r4 r5");
    is(p->spot, SPW_SPOT_NEVER, "later ml-high's spot: never overrides ml-spot's required");
    is_double(p->max_usd_per_gpu_h, 4, 0, "the lowest price cap applies (4 < 6)");
    is(p->offers[0], O(0) | O(2), "on-demand $/GPU-h <= 4: offers 0 ($4.00) and 2 ($3.00)");

    p = prof(rt, job(ML, 0, FREE, 1, 0));
    is(p->spot, SPW_SPOT_REQUIRED, "ml free: spot required");
    is(p->offers[0], O(0) | O(2) | O(3), "spot $/GPU-h <= 4: 1.50, 1.20, 3.00 (5.00 and none go)");

    p = prof(rt, job(ML, 0, HIGH, 1, 0));
    ok(p->matched[0] == (O(1) | O(4) | O(5)), "labels: all of a rule's labels must be on the job");
    is(p->offers[0], O(0) | O(1) | O(2), "ml high: on demand <= 6");

    p = prof(rt, job(VISION, 0, 0, 2, 0));
    ok(p->matched[0] == (O(0) | O(5) | O(8)), "vision 2 GPUs: r0 r5 r8");
    is(p->offers[0], O(0) | O(1) | O(2), "A100 (A100-80GB is denied by no-azure) in a2/p4d families");
    is(p->pools[0], O(0) | O(2), "allow_gpus keeps the A100 pool and the any-model pool");

    p = prof(rt, job(RESEARCH, 0, 0, 16, 0));
    ok(p->matched[0] == (O(3) | O(5) | O(7)), "research 16: r3 r5 r7");
    is(p->placement, SPW_PLACE_ONPREM_ONLY, "later onprem_only overrides cloud_first");
    is(p->offers[0], 0, "onprem_only: no offer");
    is(p->pools[0], 0x7, "onprem_only: every pool");
    ok(!p->onprem_by_residency, "onprem_only by rule is not by residency");

    p = prof(rt, job(RESEARCH, 0, 0, 32, 0));
    is(p->placement, SPW_PLACE_CLOUD_FIRST, "research 32: research-huge's cloud_first wins, last");
    is(p->offers[0], 0x2f, "research 32: offers back");

    p = prof(rt, job(0, 1, 0, 1, 0));
    ok(p->matched[0] == (O(5) | O(6)), "class batch: r5 r6");
    is(p->offers[0], O(0), "batch: aws:us-east-1 minus the p5 family");

    p = prof(rt, job(0, 2, 0, 1, 0));
    ok(p->matched[0] == O(5), "an unknown class index matches no class rule");

    /* Interning. */
    uint32_t i1 = spw_govrt_profile_of(rt, &(spw_job_t){.gpus = 1});
    spw_job_t j5 = job(0, 0, 0, 5, 0), j4 = job(0, 0, 0, 4, 0), j1 = job(0, 0, 0, 1, 0);
    is(spw_govrt_profile_of(rt, &j1), i1, "same job, same profile");
    is(spw_govrt_profile_of(rt, &j5), i1, "5 GPUs (outside 2-4) matches the same rules");
    ok(spw_govrt_profile_of(rt, &j4) != i1, "4 GPUs matches two-to-four: another profile");
    is(i1, 0, "the first job's profile is 0");
    spw_job_t ja = job(ML, 0, HIGH | FREE, 1, 0);
    uint32_t ia = spw_govrt_profile_of(rt, &ja);
    ok(ia > 0 && ia < 20, "indices are dense");
    ja.labels = HIGH | FREE | (1ULL << 40);
    is(spw_govrt_profile_of(rt, &ja), ia, "extra labels no rule names change nothing");
    spw_govrt_destroy(rt);
    spw_fleet_clear(&f);
}

static void test_profiles_residency(void)
{
    spw_fleet_t f;
    base_fleet(&f, 1);
    spw_gov_t *g = &f.gov;
    int ml = team_add(g, "ml", INFINITY, SPW_PERIOD_MONTH);
    int research = team_add(g, "research", INFINITY, SPW_PERIOD_MONTH);
    push_str(&g->classes, &g->nclasses, "eu");
    push_str(&g->classes, &g->nclasses, "batch");
    push_str(&g->classes, &g->nclasses, "restricted");
    spw_residency_spec_t *res = residency_add(g, "eu", 20, 1);
    REGIONS(res, "eu-west-1", "europe-west4", "westeurope");
    residency_add(g, "restricted", 21, 1);
    res = residency_add(g, "cloudonly", 22, 0);
    REGIONS(res, "aws:us-east-1");
    spw_rule_t *r = rule_add(g, "research-onprem", 1);
    r->teams = 1ULL << research;
    r->placement = SPW_PLACE_ONPREM_ONLY;
    r = rule_add(g, "ml-us", 2);
    r->teams = 1ULL << ml;
    LIST(r, allow_regions, "us-east-1");
    spw_govrt_t *rt = spw_govrt_create(&f);

    const spw_profile_t *p = prof(rt, job(0, 1, 0, 1, 0));
    is(p->residency, 0, "class eu names residency eu");
    is(p->offers[0], O(1) | O(2) | O(4), "eu: the three European regions");
    is(p->pools[0], 0x7, "eu: on-prem allowed");
    ok(!p->onprem_by_residency, "eu: cloud places left");

    p = prof(rt, job(0, 3, 0, 1, 0));
    is(p->residency, 1, "class restricted names residency restricted");
    ok(p->offers[0] == 0 && p->pools[0] == 0x7, "restricted: on-prem only");
    ok(p->onprem_by_residency, "restricted: residency took every offer");

    p = prof(rt, job(0, 0, 0, 1, 3));
    is(p->residency, 2, "explicit residency cloudonly");
    ok(p->offers[0] == (O(0) | O(5)) && p->pools[0] == 0, "cloudonly: aws:us-east-1, no pool");
    ok(!p->onprem_by_residency, "cloudonly: not on-prem by residency");

    p = prof(rt, job(0, 1, 0, 1, 3));
    is(p->residency, 2, "an explicit residency wins over the class's");
    p = prof(rt, job(0, 2, 0, 1, 0));
    is(p->residency, -1, "class batch is no residency");

    p = prof(rt, job((uint32_t)research + 1, 3, 0, 1, 0));
    ok(p->offers[0] == 0 && !p->onprem_by_residency,
       "rules had already taken the cloud away: not by residency");
    p = prof(rt, job((uint32_t)ml + 1, 1, 0, 1, 0));
    ok(p->offers[0] == 0 && p->onprem_by_residency, "ml-us then residency eu: nothing, by residency");
    uint32_t a = spw_govrt_profile_of(rt, &(spw_job_t){.gpus = 1, .jclass = 1});
    uint32_t b = spw_govrt_profile_of(rt, &(spw_job_t){.gpus = 1, .residency = 1});
    is(a, b, "class eu and explicit residency eu share a profile");
    uint32_t c = spw_govrt_profile_of(rt, &(spw_job_t){.gpus = 1, .residency = 2});
    ok(c != a, "same rules, other residency: another profile");
    spw_govrt_destroy(rt);
    spw_fleet_clear(&f);
}

/* Many profiles: the hash grows, earlier profile pointers stay good. */
static void test_profiles_many(void)
{
    spw_fleet_t f;
    base_fleet(&f, 1);
    spw_gov_t *g = &f.gov;
    for (uint32_t k = 1; k <= 200; k++) {
        char name[16];
        snprintf(name, sizeof(name), "g%u", k);
        spw_rule_t *r = rule_add(g, name, (int)k);
        r->gpus_min = r->gpus_max = k;
        r->max_usd_per_gpu_h = 20 - k * 0.05;
    }
    spw_govrt_t *rt = spw_govrt_create(&f);
    spw_job_t j = job(0, 0, 0, 1, 0);
    uint32_t i0 = spw_govrt_profile_of(rt, &j);
    const spw_profile_t *p0 = spw_govrt_profile(rt, i0);
    uint64_t bits0 = p0->offers[0];
    int dense = 1, stable = 1;
    for (uint32_t k = 1; k <= 200; k++) {
        j.gpus = k;
        dense &= spw_govrt_profile_of(rt, &j) == k - 1;
    }
    for (uint32_t k = 200; k >= 1; k--) {
        j.gpus = k;
        const spw_profile_t *p = spw_govrt_profile(rt, spw_govrt_profile_of(rt, &j));
        stable &= p->matched[(k - 1) / 64] == 1ULL << ((k - 1) % 64);
    }
    ok(dense, "200 rules by GPU count: profiles 0..199 in order of first use");
    ok(stable, "each finds its own profile again after the table grew");
    ok(spw_govrt_profile(rt, i0) == p0 && p0->offers[0] == bits0, "profile 0's pointer survived");
    j.gpus = 201;
    is(spw_govrt_profile_of(rt, &j), 200, "no rule matched: profile 200");
    is(spw_govrt_profile(rt, 200)->offers[0], 0x3f, "no rule: every offer");
    j.gpus = 190;
    is(spw_govrt_profile(rt, spw_govrt_profile_of(rt, &j))->offers[0], 0x3f & ~(O(3) | O(5)),
       "rule g190 (in the third word) caps $/GPU-h at 20 - 190 x 0.05 = 10.50: offers 3 and 5 go");
    spw_govrt_destroy(rt);
    spw_fleet_clear(&f);
}

/* ---- ledger -------------------------------------------------------------------------------- */

static void test_ledger(void)
{
    spw_fleet_t f;
    base_fleet(&f, 1);
    spw_gov_t *g = &f.gov;
    g->origin_s = NOV1;
    g->max_cloud_usd_per_h = 100;
    g->max_cloud_gpus = 24;
    int ml = team_add(g, "ml", 500, SPW_PERIOD_MONTH);
    int vision = team_add(g, "vision", 100, SPW_PERIOD_WEEK);
    g->teams[vision].max_cloud_usd_per_h = 50;
    g->teams[vision].max_cloud_gpus = 16;
    g->teams[vision].max_egress_usd_per_month = 20;
    spw_govrt_t *rt = spw_govrt_create(&f);
    spw_team_ledger_t L;
    char why[256];
    spw_charge_t c;

    spw_govrt_ledger(rt, ml, 0, &L);
    ok(L.period_start_s == 0 && L.period_end_s == 30 * DAY, "ml: November in engine seconds");
    ok(L.budget_usd == 500 && L.remaining_usd == 500 && L.settled_usd == 0 && L.reserved_usd == 0,
       "ml: untouched budget");

    c = charge(300, 10, 20, 8);
    is(spw_govrt_admit(rt, ml, 3600, &c, why, sizeof(why)), SPW_ADMIT_OK, "ml: $310 fits $500");
    is_str(why, "", "admit OK clears why");
    spw_govrt_reserve(rt, ml, 3600, &c);
    spw_govrt_ledger(rt, ml, 3600, &L);
    ok(L.reserved_usd == 310 && L.remaining_usd == 190 && L.egress_reserved_usd == 10
       && L.cloud_usd_per_h == 20 && L.cloud_gpus == 8, "ml: $310 reserved, $190 left");
    c = charge(190, 0.01, 1, 1);
    is(spw_govrt_admit(rt, ml, 7200, &c, why, sizeof(why)), SPW_ADMIT_BUDGET, "ml: $190.01 > $190");
    is_str(why, "team ml has $190.00 of its 2026-11 budget ($500.00) left; this placement may "
                "cost $190.01", "budget refusal sentence");
    c = charge(190, 0, 1, 1);
    is(spw_govrt_admit(rt, ml, 7200, &c, NULL, 0), SPW_ADMIT_OK, "ml: exactly $190 fits");
    spw_charge_t actual = charge(120.5, 4.25, 0, 0);
    spw_charge_t held = charge(300, 10, 20, 8);
    spw_govrt_settle(rt, ml, 3600, &held, &actual);
    spw_govrt_ledger(rt, ml, 10 * DAY, &L);
    ok(L.settled_usd == 124.75 && L.reserved_usd == 0 && L.remaining_usd == 375.25,
       "ml settled: $120.50 + $4.25 egress; $375.25 left");
    ok(L.egress_settled_usd == 4.25 && L.egress_reserved_usd == 0 && L.cloud_usd_per_h == 0
       && L.cloud_gpus == 0, "ml settled: egress $4.25, no rate or GPUs held");

    /* Placed on Oct 31 at 23:00, settled in November: October pays. */
    c = charge(100, 0, 5, 1);
    spw_govrt_reserve(rt, ml, -3600, &c);
    spw_govrt_ledger(rt, ml, -3600, &L);
    ok(L.period_start_s == -31 * DAY && L.period_end_s == 0 && L.reserved_usd == 100,
       "October holds the reservation made on Oct 31");
    spw_govrt_ledger(rt, ml, 3 * DAY, &L);
    ok(L.reserved_usd == 0 && L.settled_usd == 124.75 && L.cloud_usd_per_h == 5,
       "November's budget is untouched by it, the rate is held now");
    actual = charge(80, 0, 0, 0);
    spw_govrt_settle(rt, ml, -3600, &c, &actual);
    spw_govrt_ledger(rt, ml, -DAY, &L);
    ok(L.settled_usd == 80 && L.reserved_usd == 0 && L.remaining_usd == 420,
       "settled in November, charged to October");
    spw_govrt_ledger(rt, ml, 3 * DAY, &L);
    ok(L.settled_usd == 124.75 && L.cloud_usd_per_h == 0, "November unchanged");
    spw_govrt_add_settled(rt, ml, 5 * DAY, 25, 5);
    spw_govrt_ledger(rt, ml, 29 * DAY, &L);
    ok(L.settled_usd == 154.75 && L.egress_settled_usd == 9.25, "add_settled: +$25 +$5 egress");
    spw_govrt_ledger(rt, ml, 30 * DAY, &L);
    ok(L.period_start_s == 30 * DAY && L.settled_usd == 0 && L.remaining_usd == 500,
       "December starts fresh");

    /* vision: weekly $100, rate $50/h, 16 GPUs, $20 egress a month.  Engine
     * day 15 is Monday 2026-11-16, ISO week 47. */
    double mon = 15 * DAY + 3600;
    spw_govrt_ledger(rt, vision, mon, &L);
    ok(L.period_start_s == 15 * DAY && L.period_end_s == 22 * DAY, "vision: week 47");
    c = charge(30, 25, 1, 1);
    is(spw_govrt_admit(rt, vision, mon, &c, why, sizeof(why)), SPW_ADMIT_EGRESS,
       "vision: $25 egress > $20 monthly cap");
    is_str(why, "team vision has $20.00 of its 2026-11 egress cap ($20.00) left; this "
                "placement's data may cost $25.00", "egress refusal sentence");
    c = charge(30, 5, 60, 8);
    is(spw_govrt_admit(rt, vision, mon, &c, why, sizeof(why)), SPW_ADMIT_TEAM_RATE,
       "vision: $60/h > $50/h");
    ok(contains(why, "team vision spends $0.00/h in the cloud of its cap of $50.00/h; this "
                     "placement adds $60.00/h"), "team rate sentence");
    c = charge(30, 5, 30, 20);
    is(spw_govrt_admit(rt, vision, mon, &c, why, sizeof(why)), SPW_ADMIT_TEAM_GPUS,
       "vision: 20 GPUs > 16");
    ok(contains(why, "team vision holds 0 cloud GPUs of its cap of 16; this placement needs 20 more"),
       "team GPU sentence");
    c = charge(200, 50, 60, 20);
    is(spw_govrt_admit(rt, vision, mon, &c, NULL, 0), SPW_ADMIT_BUDGET,
       "everything over: budget is reported first");
    c = charge(1, 0, 120, 30);
    is(spw_govrt_admit(rt, vision, mon, &c, NULL, 0), SPW_ADMIT_TEAM_RATE,
       "team and org rate over: the team's is reported first");
    c = charge(30, 5, 30, 8);
    is(spw_govrt_admit(rt, vision, mon, &c, NULL, 0), SPW_ADMIT_OK, "vision: $35, $30/h, 8 GPUs");
    spw_govrt_reserve(rt, vision, mon, &c);
    c = charge(60, 10, 10, 4);
    is(spw_govrt_admit(rt, vision, mon, &c, why, sizeof(why)), SPW_ADMIT_BUDGET,
       "vision: $35 + $70 > $100");
    is_str(why, "team vision has $65.00 of its 2026-W47 budget ($100.00) left; this placement "
                "may cost $70.00", "weekly budget sentence names the ISO week");
    c = charge(10, 0, 80, 1);
    is(spw_govrt_admit(rt, ml, mon, &c, why, sizeof(why)), SPW_ADMIT_ORG_RATE,
       "ml: org $30/h + $80/h > $100/h");
    is_str(why, "the organisation spends $30.00/h in the cloud of its cap of $100.00/h; this "
                "placement adds $80.00/h", "org rate sentence");
    c = charge(10, 0, 10, 20);
    is(spw_govrt_admit(rt, ml, mon, &c, why, sizeof(why)), SPW_ADMIT_ORG_GPUS,
       "ml: org 8 + 20 GPUs > 24");
    is_str(why, "the organisation holds 8 cloud GPUs of its cap of 24; this placement needs 20 "
                "more", "org GPU sentence");
    c = charge(1e9, 1e9, 70, 16);
    is(spw_govrt_admit(rt, -1, mon, &c, NULL, 0), SPW_ADMIT_OK,
       "no team: no budget; org exactly full is still OK");
    c.usd_per_h = 70.01;
    is(spw_govrt_admit(rt, -1, mon, &c, NULL, 0), SPW_ADMIT_ORG_RATE, "no team: org rate");
    is(spw_govrt_admit(rt, 99, mon, &c, NULL, 0), SPW_ADMIT_ORG_RATE,
       "an out-of-range team counts as none");

    /* Next week: a fresh budget, but November's egress is still held. */
    double next = mon + 7 * DAY;
    c = charge(84.5, 15.5, 10, 4);
    is(spw_govrt_admit(rt, vision, next, &c, NULL, 0), SPW_ADMIT_EGRESS,
       "week 48: $5 + $15.50 egress > $20 this month");
    c = charge(85, 15, 10, 4);
    is(spw_govrt_admit(rt, vision, next, &c, NULL, 0), SPW_ADMIT_OK,
       "week 48: $100 of a fresh $100, $20 of $20 egress");
    spw_govrt_reserve(rt, vision, next, &c);
    c = charge(0.01, 0, 0, 0);
    is(spw_govrt_admit(rt, vision, next, &c, NULL, 0), SPW_ADMIT_BUDGET, "week 48: full");
    is(spw_govrt_admit(rt, vision, mon, &c, NULL, 0), SPW_ADMIT_OK, "week 47 still has room");
    spw_govrt_ledger(rt, vision, next, &L);
    ok(L.reserved_usd == 100 && L.remaining_usd == 0 && L.egress_reserved_usd == 20
       && L.cloud_usd_per_h == 40 && L.cloud_gpus == 12, "vision week 48 ledger");
    double rate, gpus;
    spw_govrt_org(rt, &rate, &gpus);
    ok(rate == 40 && gpus == 12, "org holds vision's two placements");
    c = charge(0, 0.5, 0, 0);
    is(spw_govrt_admit(rt, vision, 30 * DAY + mon, &c, NULL, 0), SPW_ADMIT_OK,
       "December: a fresh egress month");

    spw_charge_t r1 = charge(30, 5, 30, 8), r2 = charge(85, 15, 10, 4);
    spw_charge_t a1 = charge(12.34, 1.11, 0, 0), a2 = charge(50, 15, 0, 0);
    spw_govrt_settle(rt, vision, mon, &r1, &a1);
    spw_govrt_settle(rt, vision, next, &r2, &a2);
    spw_govrt_ledger(rt, vision, mon, &L);
    is_double(L.settled_usd, 13.45, 1e-9, "week 47 settled $13.45");
    ok(L.reserved_usd == 0 && L.cloud_usd_per_h == 0 && L.cloud_gpus == 0, "nothing held");
    is_double(L.egress_settled_usd, 16.11, 1e-9, "November egress settled $1.11 + $15");
    ok(L.egress_reserved_usd == 0, "November egress reservations gone");
    spw_govrt_ledger(rt, vision, next, &L);
    is_double(L.settled_usd, 65, 1e-9, "week 48 settled $65");
    spw_govrt_org(rt, &rate, &gpus);
    ok(rate == 0 && gpus == 0, "org back to zero");
    spw_govrt_ledger(rt, -1, 0, &L);
    ok(isinf(L.budget_usd) && isinf(L.remaining_usd) && L.settled_usd == 0
       && L.period_start_s == 0, "no team: an empty ledger");

    /* Unlimited teams always fit their budget. */
    spw_govrt_destroy(rt);
    int free_team = team_add(g, "free", INFINITY, SPW_PERIOD_MONTH);
    rt = spw_govrt_create(&f);
    c = charge(1e12, 1e6, 1, 1);
    is(spw_govrt_admit(rt, free_team, 0, &c, NULL, 0), SPW_ADMIT_OK, "INFINITY budget: OK");
    spw_govrt_ledger(rt, free_team, 0, &L);
    ok(isinf(L.remaining_usd), "INFINITY budget: INFINITY remaining");
    spw_govrt_destroy(rt);
    spw_fleet_clear(&f);
}

/* Random reserve / settle / add_settled sequences over three teams with
 * small budgets and caps: admit-then-reserve never lets settled + reserved
 * pass a budget, egress pass its cap, or rate and GPUs pass theirs, and
 * settling everything leaves exactly nothing reserved. */
typedef struct live {
    int team;
    double placed;
    spw_charge_t c;
} live_t;

static void test_ledger_random(void)
{
    spw_fleet_t f;
    base_fleet(&f, 0);
    spw_gov_t *g = &f.gov;
    g->origin_s = NOV1 - 20 * DAY;
    g->max_cloud_usd_per_h = 90;
    g->max_cloud_gpus = 40;
    team_add(g, "a", 100, SPW_PERIOD_MONTH);
    team_add(g, "b", 37.5, SPW_PERIOD_WEEK);
    team_add(g, "c", 250, SPW_PERIOD_MONTH);
    g->teams[0].max_egress_usd_per_month = 12;
    g->teams[1].max_cloud_gpus = 10;
    g->teams[2].max_cloud_usd_per_h = 45;
    spw_rng_t rng;
    spw_rng_seed(&rng, 2026);
    int over = 0, leftover = 0, mismatch = 0, admitted = 0, refused = 0;
    for (int seq = 0; seq < 2000; seq++) {
        spw_govrt_t *rt = spw_govrt_create(&f);
        live_t lv[64];
        int nlive = 0;
        double now = spw_rng_uniform(&rng) * 40 * DAY;
        /* shadow totals: settled per team per period start, egress per month */
        double ss[3][16], sstart[3][16];
        int ns[3] = {0, 0, 0};
        for (int op = 0; op < 40; op++) {
            now += spw_rng_exp(&rng, 2 * DAY);
            int kind = (int)spw_rng_below(&rng, 10);
            if (kind < 5 && nlive < 64) {
                int team = (int)spw_rng_below(&rng, 4) - 1;
                spw_charge_t c = charge(round(spw_rng_uniform(&rng) * 6000) / 100,
                                        round(spw_rng_uniform(&rng) * 800) / 100,
                                        round(spw_rng_uniform(&rng) * 3000) / 100,
                                        (double)spw_rng_below(&rng, 9));
                if (spw_govrt_admit(rt, team, now, &c, NULL, 0) == SPW_ADMIT_OK) {
                    spw_govrt_reserve(rt, team, now, &c);
                    lv[nlive++] = (live_t){team, now, c};
                    admitted++;
                } else {
                    refused++;
                }
            } else if (kind < 9 && nlive > 0) {
                int k = (int)spw_rng_below(&rng, (uint64_t)nlive);
                live_t x = lv[k];
                lv[k] = lv[--nlive];
                spw_charge_t a = charge(x.c.usd * spw_rng_uniform(&rng),
                                        x.c.egress_usd * spw_rng_uniform(&rng), 0, 0);
                spw_govrt_settle(rt, x.team, x.placed, &x.c, &a);
                if (x.team >= 0) {
                    double s = spw_period_start(g->teams[x.team].period, g->origin_s + x.placed);
                    int i = 0;
                    while (i < ns[x.team] && sstart[x.team][i] != s)
                        i++;
                    if (i == ns[x.team] && i < 16) {
                        sstart[x.team][i] = s;
                        ss[x.team][i] = 0;
                        ns[x.team]++;
                    }
                    if (i < 16)
                        ss[x.team][i] += a.usd + a.egress_usd;
                }
            }
            /* Invariants at now and at every live placement's period. */
            for (int t = 0; t < 3; t++) {
                spw_team_ledger_t L;
                spw_govrt_ledger(rt, t, now, &L);
                const spw_team_spec_t *ts = &g->teams[t];
                if (L.settled_usd + L.reserved_usd > ts->budget_usd + 1e-6
                    || L.egress_settled_usd + L.egress_reserved_usd > ts->max_egress_usd_per_month + 1e-6
                    || L.cloud_usd_per_h > ts->max_cloud_usd_per_h + 1e-6
                    || L.cloud_gpus > ts->max_cloud_gpus + 1e-6)
                    over++;
            }
            for (int k = 0; k < nlive; k++) {
                if (lv[k].team < 0)
                    continue;
                spw_team_ledger_t L;
                spw_govrt_ledger(rt, lv[k].team, lv[k].placed, &L);
                if (L.settled_usd + L.reserved_usd > L.budget_usd + 1e-6)
                    over++;
            }
            double rate, gpus;
            spw_govrt_org(rt, &rate, &gpus);
            if (rate > g->max_cloud_usd_per_h + 1e-6 || gpus > g->max_cloud_gpus + 1e-6)
                over++;
        }
        while (nlive > 0) {
            live_t x = lv[--nlive];
            spw_govrt_settle(rt, x.team, x.placed, &x.c, &x.c);
            if (x.team >= 0) {
                double s = spw_period_start(g->teams[x.team].period, g->origin_s + x.placed);
                int i = 0;
                while (i < ns[x.team] && sstart[x.team][i] != s)
                    i++;
                if (i == ns[x.team] && i < 16) {
                    sstart[x.team][i] = s;
                    ss[x.team][i] = 0;
                    ns[x.team]++;
                }
                if (i < 16)
                    ss[x.team][i] += x.c.usd + x.c.egress_usd;
            }
        }
        for (int t = 0; t < 3; t++) {
            for (int i = 0; i < ns[t]; i++) {
                spw_team_ledger_t L;
                spw_govrt_ledger(rt, t, sstart[t][i] - g->origin_s, &L);
                if (L.reserved_usd != 0 || L.egress_reserved_usd != 0 || L.cloud_usd_per_h != 0
                    || L.cloud_gpus != 0)
                    leftover++;
                if (fabs(L.settled_usd - ss[t][i]) > 1e-6)
                    mismatch++;
            }
        }
        double rate, gpus;
        spw_govrt_org(rt, &rate, &gpus);
        if (rate != 0 || gpus != 0)
            leftover++;
        spw_govrt_destroy(rt);
    }
    is(over, 0, "2000 random sequences: no budget, egress, rate or GPU cap ever passed");
    is(leftover, 0, "settling everything leaves exactly 0 reserved, 0 $/h, 0 GPUs");
    is(mismatch, 0, "settled spend per period equals the sum of what was settled there");
    ok(admitted > 10000 && refused > 5000, "both admissions (%d) and refusals (%d) happened",
       admitted, refused);
    spw_fleet_clear(&f);
}

/* ---- data gravity --------------------------------------------------------------------------- */

static void test_data(void)
{
    spw_fleet_t f;
    base_fleet(&f, 1);
    spw_gov_t *g = &f.gov;
    spw_dataset_spec_t *d = dataset_add(g, "imagenet", 40, 150, site_pool(0));
    replica_add(d, site_region("gcp", "europe-west4"));
    dataset_add(g, "corpus", 44, 1000, site_region(NULL, "us-east-1"));
    spw_govrt_t *rt = spw_govrt_create(&f);
    double gb = -1, tr = -1;
    /* storage for a week's cache: 150 GB x $0.023 x 7/30 = $0.805 */
    const double store150 = 150 * 0.023 * 7 / 30.0, store1000 = 1000 * 0.023 * 7 / 30.0;

    is_double(spw_govrt_data_cost(rt, 0, 0, -1, 0, &gb, &tr), 0, 0, "imagenet at home: free");
    ok(gb == 0 && tr == 0, "imagenet at home: nothing moves");
    is_double(spw_govrt_data_cost(rt, 0, 1, -1, 0, &gb, &tr), 0, 0,
              "imagenet to pool 1: on-prem egress is free");
    ok(gb == 150 && tr == 120, "imagenet to pool 1: 150 GB in 150 x 8 / 10 = 120 s");
    is_double(spw_govrt_data_cost(rt, 0, -1, 2, 0, &gb, &tr), 0, 0,
              "imagenet at gcp europe-west4: a replica is there");
    is_double(spw_govrt_data_cost(rt, 0, -1, 0, 0, &gb, &tr), store150, 1e-12,
              "imagenet to aws us-east-1: free egress from on-prem + $0.805 storage");
    g->egress_onprem_usd_per_gb = 0.5;
    is_double(spw_govrt_data_cost(rt, 0, -1, 0, 0, &gb, &tr), 150 * 0.12 + store150, 1e-12,
              "on-prem egress $0.50/GB: the gcp replica ($0.12/GB) sends it: $18.805");
    is_double(spw_govrt_data_cost(rt, 1, -1, 0, 0, NULL, NULL), 0, 0,
              "corpus (any provider's us-east-1) is in aws us-east-1");
    is_double(spw_govrt_data_cost(rt, 1, -1, 5, 0, NULL, NULL), 0, 0, "...for every offer there");
    is_double(spw_govrt_data_cost(rt, 1, -1, 1, 0, &gb, &tr), 90 + store1000, 1e-9,
              "corpus to aws eu-west-1: 1000 GB x $0.09 (a provider-less site pays aws) + storage");
    ok(gb == 1000 && tr == 800, "corpus: 1000 GB in 800 s");
    is_double(spw_govrt_data_cost(rt, 1, 2, -1, 0, &gb, &tr), 90, 1e-9,
              "corpus to pool 2: egress only, no cache storage");

    /* Caches: a copy is held until now + ttl, and sends data onwards. */
    spw_govrt_data_placed(rt, 1, -1, 1, 100);
    is_double(spw_govrt_data_cost(rt, 1, -1, 1, 100 + 7 * DAY - 1, NULL, NULL), 0, 0,
              "corpus cached in aws eu-west-1 for 7 days");
    is_double(spw_govrt_data_cost(rt, 1, -1, 1, 100 + 7 * DAY, NULL, NULL), 90 + store1000, 1e-9,
              "the cached copy expires at exactly 7 days");
    spw_govrt_data_placed(rt, 1, -1, 1, 200);
    is_double(spw_govrt_data_cost(rt, 1, -1, 1, 100 + 7 * DAY, NULL, NULL), 0, 0,
              "placing again refreshes the expiry");
    spw_govrt_data_placed(rt, 0, -1, 4, 0);
    is_double(spw_govrt_data_cost(rt, 0, -1, 1, DAY, NULL, NULL), 150 * 0.087 + store150, 1e-9,
              "imagenet cached in azure westeurope sends it at $0.087/GB: $13.855");
    is_double(spw_govrt_data_cost(rt, 0, -1, 4, DAY, NULL, NULL), 0, 0,
              "imagenet is in azure westeurope");
    is_double(spw_govrt_data_cost(rt, 0, 1, -1, DAY, NULL, NULL), 150 * 0.087, 1e-9,
              "to a pool from the azure cache: egress only");
    is_double(spw_govrt_data_cost(rt, 0, -1, 1, 7 * DAY, NULL, NULL), 150 * 0.12 + store150, 1e-9,
              "after the azure copy expires the gcp replica sends it again");
    spw_govrt_data_placed(rt, 0, -1, 3, 8 * DAY);
    is_double(spw_govrt_data_cost(rt, 0, -1, 3, 8 * DAY + 1, NULL, NULL), 0, 0,
              "an expired slot is reused for a new copy");
    is_double(spw_govrt_data_cost(rt, 0, -1, 4, 8 * DAY + 1, NULL, NULL), 150 * 0.12 + store150,
              1e-9, "...and the old copy stays gone");
    is_double(spw_govrt_data_cost(rt, 5, -1, 1, 0, &gb, &tr), 0, 0, "unknown dataset: free");
    ok(gb == 0 && tr == 0, "unknown dataset: nothing moves");
    is_double(spw_govrt_data_cost(rt, 0, -1, 99, 0, NULL, NULL), 0, 0, "unknown offer: 0");
    /* On-prem copies are cached too, without storage to pay. */
    is_double(spw_govrt_data_cost(rt, 1, 2, -1, 9 * DAY, NULL, NULL), 90, 1e-9,
              "corpus to pool 2 before a copy: $90 of egress");
    spw_govrt_data_placed(rt, 1, 2, -1, 9 * DAY);
    is_double(spw_govrt_data_cost(rt, 1, 2, -1, 9 * DAY + 1, &gb, &tr), 0, 0,
              "corpus cached in pool 2: free");
    ok(gb == 0 && tr == 0, "corpus cached in pool 2: nothing moves");
    is_double(spw_govrt_data_cost(rt, 1, 0, -1, 9 * DAY + 1, NULL, NULL), 90, 1e-9,
              "to pool 0 the aws home is still the cheaper sender ($90 < pool 2 at $0.50/GB)");
    is_double(spw_govrt_data_cost(rt, 1, 2, -1, 16 * DAY, NULL, NULL), 90, 1e-9,
              "pool 2's copy expires after 7 days");
    spw_govrt_destroy(rt);

    /* No cache: placing is a no-op and there is no storage to pay. */
    g->cache_ttl_s = 0;
    g->bandwidth_gbps = 2.5;
    rt = spw_govrt_create(&f);
    spw_govrt_data_placed(rt, 1, -1, 1, 0);
    is_double(spw_govrt_data_cost(rt, 1, -1, 1, 1, &gb, &tr), 90, 1e-9,
              "cache_ttl_s 0: no copy kept, no storage");
    is_double(tr, 3200, 1e-9, "2.5 Gb/s: 1000 GB in 3200 s");
    spw_govrt_destroy(rt);
    spw_fleet_clear(&f);
}

/* ---- validation -------------------------------------------------------------------------- */

/* Validates a copy of f's spec after `edit` changed it; returns the error. */
typedef void (*edit_f)(spw_gov_t *g);

static int validate_edit(const spw_fleet_t *base, edit_f edit, const char *file, spw_error_t *err)
{
    spw_fleet_t f = *base;
    spw_gov_t g;
    spw_gov_copy(&g, &base->gov);
    edit(&g);
    f.gov = g;
    snprintf(err->text, sizeof(err->text), "(untouched)");
    int rc = spw_gov_validate(&g, &f, file, err);
    spw_gov_clear(&g);
    return rc;
}

static void e_provider(spw_gov_t *g) { LIST(&g->rules[0], allow_providers, "aws", "oracle"); }
static void e_deny_provider(spw_gov_t *g) { LIST(&g->rules[2], deny_providers, "ibm"); }
static void e_region(spw_gov_t *g) { LIST(&g->rules[1], allow_regions, "mars-1"); }
static void e_region_pair(spw_gov_t *g) { LIST(&g->rules[0], deny_regions, "gcp:us-east-1"); }
static void e_family(spw_gov_t *g) { LIST(&g->rules[2], allow_families, "p4d", "p9"); }
static void e_deny_family(spw_gov_t *g) { LIST(&g->rules[2], deny_families, "zz"); }
static void e_gpus(spw_gov_t *g) { LIST(&g->rules[1], allow_gpus, "B200"); }
static void e_contra(spw_gov_t *g) { LIST(&g->rules[0], deny_providers, "AWS"); }
static void e_contra_fam(spw_gov_t *g) { LIST(&g->rules[2], deny_families, "a2"); }
static void e_contra_reg(spw_gov_t *g)
{
    spw_rule_t *r = rule_add(g, "contra", 50);
    LIST(r, allow_regions, "us-east-1");
    LIST(r, deny_regions, "us-east-1");
}
static void e_nothing(spw_gov_t *g)
{
    spw_rule_t *r = rule_add(g, "h100-a2", 51);
    LIST(r, allow_gpus, "H100");
    LIST(r, allow_families, "a2");
}
static void e_spot_onprem(spw_gov_t *g) { g->rules[0].placement = SPW_PLACE_ONPREM_ONLY; }
static void e_widen_region(spw_gov_t *g) { LIST(&g->rules[1], allow_regions, "eu-west-1", "us-east-1"); }
static void e_widen_provider(spw_gov_t *g)
{
    spw_rule_t *r = rule_add(g, "restricted-aws", 52);
    r->classes = 1ULL << 2;
    LIST(r, allow_providers, "aws");
}
static void e_residency(spw_gov_t *g)
{
    spw_residency_spec_t *r = residency_add(g, "moon", 60, 0);
    REGIONS(r, "mare-tranquillitatis", "gcp:eu-west-1");
}
static void e_residency_empty(spw_gov_t *g) { residency_add(g, "void", 61, 0); }
static void e_home_pool(spw_gov_t *g) { g->datasets[0].home.pool = 7; }
static void e_replica_pool(spw_gov_t *g) { replica_add(&g->datasets[0], site_pool(9)); }
static void e_site_region(spw_gov_t *g) { replica_add(&g->datasets[0], site_region(NULL, "mars-1")); }
static void e_site_provider(spw_gov_t *g) { replica_add(&g->datasets[0], site_region("azure", "us-east-1")); }
static void e_size(spw_gov_t *g) { g->datasets[0].size_gb = 0; }
static void e_size_nan(spw_gov_t *g) { g->datasets[0].size_gb = NAN; }

/* Edits that stay valid. */
static void v_pair(spw_gov_t *g) { LIST(&g->rules[0], allow_regions, "aws:us-east-1", "us-central1"); }
static void v_eu_gcp(spw_gov_t *g)
{
    spw_rule_t *r = rule_add(g, "eu-gcp", 70);
    r->classes = 1;
    LIST(r, allow_providers, "gcp");
}
static void v_variant(spw_gov_t *g)
{
    spw_rule_t *r = rule_add(g, "big-memory", 73);
    LIST(r, allow_gpus, "A100-80GB");
}
static void v_pools_only(spw_gov_t *g)
{
    spw_rule_t *r = rule_add(g, "onprem-eu", 71);
    LIST(r, allow_regions, "eu-west-1");
    LIST(r, deny_providers, "aws");
}
static void v_unclassed(spw_gov_t *g)
{
    spw_rule_t *r = rule_add(g, "any-class", 72);
    LIST(r, allow_regions, "us-east-1");
}
static void v_replica_pool(spw_gov_t *g) { replica_add(&g->datasets[0], site_pool(1)); }

static void check_bad(const spw_fleet_t *f, edit_f edit, const char *what, const char *prefix,
                      const char *part)
{
    spw_error_t err;
    int rc = validate_edit(f, edit, "cfg.yaml", &err);
    ok(rc < 0 && contains(err.text, prefix) && contains(err.text, part),
       "validate: %s", what);
}

static void check_good(const spw_fleet_t *f, edit_f edit, const char *what)
{
    spw_error_t err;
    int rc = validate_edit(f, edit, "cfg.yaml", &err);
    if (!ok(rc == 0, "validate accepts: %s", what))
        diag("%s", err.text);
}

static void no_edit(spw_gov_t *g) { (void)g; }

static void test_validate(void)
{
    spw_fleet_t f;
    base_fleet(&f, 0);
    full_spec(&f.gov);
    spw_error_t err;
    ok(spw_gov_validate(&f.gov, &f, "cfg.yaml", &err) == 0, "the full spec is valid");
    check_good(&f, v_pair, "provider:region pairs");
    check_good(&f, v_eu_gcp, "class eu on gcp (gcp has europe-west4)");
    check_good(&f, v_variant, "allow_gpus A100-80GB (the azure offer)");
    check_good(&f, v_pools_only, "a rule leaving only pools");
    check_good(&f, v_unclassed, "a region rule with no class");
    check_good(&f, v_replica_pool, "a pool replica");

    check_bad(&f, e_provider, "unknown provider", "cfg.yaml:12: rule 'ml-spot': ",
              "unknown provider 'oracle' in allow_providers (the fleet's offers have: aws, gcp, azure)");
    check_bad(&f, e_deny_provider, "unknown denied provider", "cfg.yaml:20: rule 'batch-cheap': ",
              "unknown provider 'ibm' in deny_providers");
    check_bad(&f, e_region, "unknown region", "cfg.yaml:16: rule 'eu-aws': ",
              "unknown region 'mars-1' in allow_regions (write REGION or PROVIDER:REGION; the "
              "fleet's offers have: us-east-1, eu-west-1, europe-west4, us-central1, westeurope)");
    check_bad(&f, e_region_pair, "a provider:region pair no offer has", "rule 'ml-spot'",
              "unknown region 'gcp:us-east-1' in deny_regions");
    check_bad(&f, e_family, "unknown family", "cfg.yaml:20: rule 'batch-cheap': ",
              "allow_families: family 'p9' matches no offer's instance type");
    check_bad(&f, e_deny_family, "unknown denied family", "rule 'batch-cheap'",
              "deny_families: family 'zz'");
    check_bad(&f, e_gpus, "unknown GPU", "cfg.yaml:16: rule 'eu-aws': ",
              "allow_gpus: 'B200' matches no GPU model of a pool or offer (known: A100, V100, "
              "H100, A100-80GB)");
    check_bad(&f, e_contra, "allow and deny the same provider", "cfg.yaml:12: rule 'ml-spot': ",
              "contradicts itself: 'aws' is in both allow_providers and deny_providers");
    check_bad(&f, e_contra_fam, "allow and deny the same family", "rule 'batch-cheap'",
              "'a2' is in both allow_families and deny_families");
    check_bad(&f, e_contra_reg, "allow and deny the same region", "cfg.yaml:50: rule 'contra': ",
              "in both allow_regions and deny_regions");
    check_bad(&f, e_nothing, "a rule allowing nothing", "cfg.yaml:51: rule 'h100-a2': ",
              "allows nothing");
    check_bad(&f, e_spot_onprem, "spot required with onprem_only", "cfg.yaml:12: rule 'ml-spot': ",
              "spot: required with placement: onprem_only");
    check_bad(&f, e_widen_region, "a region outside the class's residency",
              "cfg.yaml:16: rule 'eu-aws': ",
              "rules cannot widen residency 'eu' (line 30), which allows only on-prem pools and "
              "regions eu-west-1, europe-west4, azure:westeurope; allow_regions names aws:us-east-1");
    check_bad(&f, e_widen_provider, "a provider with no region in the residency",
              "cfg.yaml:52: rule 'restricted-aws': ",
              "rules cannot widen residency 'restricted' (line 33), which allows only on-prem "
              "pools; allow_providers names 'aws'");
    check_bad(&f, e_residency, "a residency with no place", "cfg.yaml:60: residency 'moon': ",
              "allows no place: onprem is off and no offer is in its regions "
              "(mare-tranquillitatis, gcp:eu-west-1); add onprem: true or a region (the "
              "fleet's offers have: us-east-1,");
    check_bad(&f, e_residency_empty, "a residency with nothing at all", "residency 'void'",
              "none given");
    check_bad(&f, e_home_pool, "a home pool out of range", "cfg.yaml:40: dataset 'imagenet': ",
              "home names pool index 7 but the fleet has 2 pools");
    check_bad(&f, e_replica_pool, "a replica pool out of range", "dataset 'imagenet'",
              "replica 3 names pool index 9");
    check_bad(&f, e_site_region, "a replica region no offer has", "dataset 'imagenet'",
              "replica 3: region 'mars-1' is not a region of the fleet's offers");
    check_bad(&f, e_site_provider, "a replica on a provider without that region",
              "dataset 'imagenet'", "region 'azure:us-east-1'");
    check_bad(&f, e_size, "size 0", "cfg.yaml:40: dataset 'imagenet': ", "size_gb must be > 0");
    check_bad(&f, e_size_nan, "size NAN", "dataset 'imagenet'", "size_gb must be > 0");

    err.text[0] = '\0';
    spw_fleet_t nf = f;
    spw_gov_t g;
    spw_gov_copy(&g, &f.gov);
    e_provider(&g);
    ok(spw_gov_validate(&g, &nf, NULL, &err) < 0 && contains(err.text, "config:12: rule 'ml-spot'"),
       "no file name: 'config'");
    ok(spw_gov_validate(&g, &nf, "x", NULL) < 0, "err may be NULL");
    spw_gov_clear(&g);
    spw_fleet_clear(&f);

    /* A flat-price fleet: one offer, provider "flat", no region. */
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 8, "A100", 1);
    add_offer(&f, "flat", "", "flat", NULL, 1, 3, NAN, 60);
    check_good(&f, no_edit, "an empty spec on a flat fleet");
    spw_rule_t *r = rule_add(&f.gov, "aws-only", 7);
    LIST(r, allow_providers, "aws");
    ok(spw_gov_validate(&f.gov, &f, "flat.yaml", &err) < 0
       && contains(err.text, "flat.yaml:7: rule 'aws-only': unknown provider 'aws' in "
                             "allow_providers (the fleet's offers have: flat)"),
       "flat fleet: allow_providers [aws] is an unknown provider");
    LIST(r, allow_providers, "flat");
    LIST(r, allow_regions, "us-east-1");
    ok(spw_gov_validate(&f.gov, &f, "flat.yaml", &err) < 0
       && contains(err.text, "(write REGION or PROVIDER:REGION; the fleet's offers name no region)"),
       "flat fleet: regions are unknown");
    spw_gov_clear(&f.gov);
    r = rule_add(&f.gov, "a100", 8);
    LIST(r, allow_gpus, "A100");
    ok(spw_gov_validate(&f.gov, &f, "flat.yaml", &err) == 0, "flat fleet: allow_gpus A100 "
       "(the pool has it)");
    spw_fleet_clear(&f);

    /* No offers at all. */
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 8, NULL, 1);
    r = rule_add(&f.gov, "gcp", 9);
    LIST(r, deny_providers, "gcp");
    ok(spw_gov_validate(&f.gov, &f, "c.yaml", &err) < 0
       && contains(err.text, "unknown provider 'gcp' in deny_providers (the fleet has no cloud offers)"),
       "no offers: every provider is unknown");
    spw_fleet_clear(&f);
}

int main(void)
{
    test_names();
    test_calendar();
    test_init_lookup();
    test_copy();
    test_profiles_plain();
    test_profiles_rules();
    test_profiles_residency();
    test_profiles_many();
    test_ledger();
    test_ledger_random();
    test_data();
    test_validate();
    return done_testing();
}
