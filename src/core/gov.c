/* gov.c: governance: the names, the UTC calendar of budget periods, the spec's
 * lifetime and validation, and the runtime (profiles, ledger, data cache). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/gov.h"
#include "core/model.h"

/* ---- names ----------------------------------------------------------------- */

static const char *const period_names[] = {"month", "week"};
static const char *const exhausted_names[] = {"hold", "onprem_only", "reject"};
static const char *const spot_names[] = {"unset", "allowed", "required", "never"};
static const char *const placement_names[] = {"unset", "onprem_first", "cloud_first",
                                              "onprem_only"};
#define NNAMES(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *name_of(const char *const *names, int n, int v)
{
    return v >= 0 && v < n ? names[v] : "?";
}

const char *spw_period_name(spw_period_t p) { return name_of(period_names, NNAMES(period_names), p); }
const char *spw_exhausted_name(spw_exhausted_t x) { return name_of(exhausted_names, NNAMES(exhausted_names), x); }
const char *spw_spot_rule_name(spw_spot_rule_t s) { return name_of(spot_names, NNAMES(spot_names), s); }
const char *spw_placement_name(spw_placement_t p) { return name_of(placement_names, NNAMES(placement_names), p); }

/* Looks s up in names[first..n); on failure err lists the accepted names.
 * `first` skips "unset", which a config cannot write. */
static int parse_name(const char *what, const char *const *names, int first, int n,
                      const char *s, int *out, spw_error_t *err)
{
    char list[96] = "";
    for (int i = first; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
        size_t used = strlen(list);
        snprintf(list + used, sizeof(list) - used, "%s%s", i > first ? ", " : "", names[i]);
    }
    return spw_errorf(err, "unknown %s '%s' (expected one of: %s)", what, s, list);
}

int spw_exhausted_parse(const char *s, spw_exhausted_t *out, spw_error_t *err)
{
    int v = 0;
    if (parse_name("on_exhausted", exhausted_names, 0, NNAMES(exhausted_names), s, &v, err) < 0)
        return -1;
    *out = (spw_exhausted_t)v;
    return 0;
}

int spw_spot_rule_parse(const char *s, spw_spot_rule_t *out, spw_error_t *err)
{
    int v = 0;
    if (parse_name("spot", spot_names, 1, NNAMES(spot_names), s, &v, err) < 0)
        return -1;
    *out = (spw_spot_rule_t)v;
    return 0;
}

int spw_placement_parse(const char *s, spw_placement_t *out, spw_error_t *err)
{
    int v = 0;
    if (parse_name("placement", placement_names, 1, NNAMES(placement_names), s, &v, err) < 0)
        return -1;
    *out = (spw_placement_t)v;
    return 0;
}

/* ---- calendar ---------------------------------------------------------------- */

#define DAY_S 86400.0
/* Beyond this many seconds from 1970 (about 3 million years) the day count
 * would lose precision; such times are returned unchanged. */
#define CALENDAR_LIMIT_S 1e14

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard
 * Hinnant's days_from_civil): pure arithmetic, so no TZ or libc state. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The inverse of days_from_civil. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Non-negative remainder, for weekdays of days before 1970. */
static int64_t mod7(int64_t x)
{
    int64_t r = x % 7;
    return r < 0 ? r + 7 : r;
}

/* The Monday of the ISO week holding day z (1970-01-01 was a Thursday). */
static int64_t monday_of(int64_t z)
{
    return z - mod7(z + 3);
}

/* Day number of t, or 0 when t is too far out for the calendar. */
static int day_of(double t, int64_t *z)
{
    if (!(fabs(t) < CALENDAR_LIMIT_S))
        return 0;
    *z = (int64_t)floor(t / DAY_S);
    return 1;
}

/* ISO week-year and week number of day z. */
static void iso_week(int64_t z, int64_t *year, int *week)
{
    int64_t thursday = monday_of(z) + 3;  /* a week belongs to its Thursday's year */
    int m, d;
    civil_from_days(thursday, year, &m, &d);
    *week = (int)((thursday - days_from_civil(*year, 1, 1)) / 7 + 1);
}

static int iso_weeks_in(int64_t year)
{
    int64_t y;
    int w;
    iso_week(days_from_civil(year, 12, 28), &y, &w);  /* Dec 28 is always in the last week */
    return w;
}

double spw_period_start(spw_period_t p, double t)
{
    int64_t z, y;
    int m, d;
    if (!day_of(t, &z))
        return t;
    if (p == SPW_PERIOD_WEEK)
        return (double)monday_of(z) * DAY_S;
    civil_from_days(z, &y, &m, &d);
    return (double)days_from_civil(y, m, 1) * DAY_S;
}

double spw_period_end(spw_period_t p, double t)
{
    int64_t z, y;
    int m, d;
    if (!day_of(t, &z))
        return t;
    if (p == SPW_PERIOD_WEEK)
        return (double)(monday_of(z) + 7) * DAY_S;
    civil_from_days(z, &y, &m, &d);
    return (double)(m == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, m + 1, 1)) * DAY_S;
}

void spw_period_label(spw_period_t p, double t, char *buf, size_t len)
{
    int64_t z, y;
    int m, d, w;
    if (!len)
        return;
    if (!day_of(t, &z)) {
        snprintf(buf, len, "?");
    } else if (p == SPW_PERIOD_WEEK) {
        iso_week(z, &y, &w);
        snprintf(buf, len, "%04lld-W%02d", (long long)y, w);
    } else {
        civil_from_days(z, &y, &m, &d);
        snprintf(buf, len, "%04lld-%02d", (long long)y, m);
    }
}

/* Reads exactly n decimal digits. */
static int read_digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int spw_period_parse(const char *s, spw_period_t *p, double *start, spw_error_t *err)
{
    static const char hint[] = "(write YYYY-MM or YYYY-Www)";
    int year, n;
    size_t len = strlen(s);
    if (len < 7 || read_digits(s, 4, &year) < 0 || s[4] != '-')
        return spw_errorf(err, "period '%s' is not a month or an ISO week %s", s, hint);
    if (len == 7 && read_digits(s + 5, 2, &n) == 0) {
        if (n < 1 || n > 12)
            return spw_errorf(err, "period '%s': month must be 01 to 12 %s", s, hint);
        if (p)
            *p = SPW_PERIOD_MONTH;
        if (start)
            *start = (double)days_from_civil(year, n, 1) * DAY_S;
        return 0;
    }
    if (len == 8 && s[5] == 'W' && read_digits(s + 6, 2, &n) == 0) {
        int weeks = iso_weeks_in(year);
        if (n < 1 || n > weeks)
            return spw_errorf(err, "period '%s': week must be 01 to %d (%d has %d ISO weeks) %s",
                              s, weeks, year, weeks, hint);
        if (p)
            *p = SPW_PERIOD_WEEK;
        if (start)
            *start = (double)(monday_of(days_from_civil(year, 1, 4)) + 7 * (int64_t)(n - 1)) * DAY_S;
        return 0;
    }
    return spw_errorf(err, "period '%s' is not a month or an ISO week %s", s, hint);
}

/* ---- spec lifetime ------------------------------------------------------------ */

void spw_gov_init(spw_gov_t *g)
{
    memset(g, 0, sizeof(*g));
    g->origin_s = 0;
    g->max_cloud_usd_per_h = INFINITY;
    g->max_cloud_gpus = INFINITY;
    g->default_max_runtime_s = 86400;
    g->bandwidth_gbps = 10;
    g->cache_ttl_s = 7 * 86400;
    g->storage_usd_per_gb_month = 0.023;
    g->egress_onprem_usd_per_gb = 0;
    g->egress_aws_usd_per_gb = 0.09;
    g->egress_gcp_usd_per_gb = 0.12;
    g->egress_azure_usd_per_gb = 0.087;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static char **strv_dup(char *const *v, size_t n)
{
    if (!v)
        return NULL;
    char **c = spw_xcalloc(n, sizeof(*c));
    for (size_t i = 0; i < n; i++)
        c[i] = v[i] ? spw_xstrdup(v[i]) : NULL;
    return c;
}

static char *str_dup(const char *s)
{
    return s ? spw_xstrdup(s) : NULL;
}

static void rule_free(spw_rule_t *r)
{
    free(r->name);
    strv_free(r->allow_providers, r->n_allow_providers);
    strv_free(r->deny_providers, r->n_deny_providers);
    strv_free(r->allow_regions, r->n_allow_regions);
    strv_free(r->deny_regions, r->n_deny_regions);
    strv_free(r->allow_families, r->n_allow_families);
    strv_free(r->deny_families, r->n_deny_families);
    strv_free(r->allow_gpus, r->n_allow_gpus);
}

static void site_free(spw_site_t *s)
{
    free(s->provider);
    free(s->region);
}

void spw_gov_clear(spw_gov_t *g)
{
    for (size_t i = 0; i < g->nteams; i++) {
        free(g->teams[i].name);
        free(g->teams[i].quota_pool_gpus);
    }
    free(g->teams);
    for (size_t i = 0; i < g->ncohorts; i++)
        free(g->cohorts[i].name);
    free(g->cohorts);
    strv_free(g->classes, g->nclasses);
    strv_free(g->labels, g->nlabels);
    for (size_t i = 0; i < g->nrules; i++)
        rule_free(&g->rules[i]);
    free(g->rules);
    for (size_t i = 0; i < g->nresidencies; i++) {
        free(g->residencies[i].name);
        strv_free(g->residencies[i].regions, g->residencies[i].nregions);
    }
    free(g->residencies);
    for (size_t i = 0; i < g->ndatasets; i++) {
        spw_dataset_spec_t *d = &g->datasets[i];
        free(d->name);
        site_free(&d->home);
        for (size_t k = 0; k < d->nreplicas; k++)
            site_free(&d->replicas[k]);
        free(d->replicas);
    }
    free(g->datasets);
    spw_gov_init(g);
}

static void site_copy(spw_site_t *dst, const spw_site_t *src)
{
    dst->pool = src->pool;
    dst->provider = str_dup(src->provider);
    dst->region = str_dup(src->region);
}

/* Duplicates an array of n elements (NULL stays NULL). */
static void *array_dup(const void *a, size_t n, size_t size)
{
    if (!a)
        return NULL;
    void *c = spw_xcalloc(n, size);
    if (n)
        memcpy(c, a, n * size);
    return c;
}

void spw_gov_copy(spw_gov_t *dst, const spw_gov_t *src)
{
    *dst = *src;  /* scalars; every owned pointer is replaced below */
    dst->teams = array_dup(src->teams, src->nteams, sizeof(*src->teams));
    for (size_t i = 0; i < src->nteams; i++)
        dst->teams[i].name = str_dup(src->teams[i].name);
    dst->cohorts = array_dup(src->cohorts, src->ncohorts, sizeof(*src->cohorts));
    for (size_t i = 0; i < src->ncohorts; i++)
        dst->cohorts[i].name = str_dup(src->cohorts[i].name);
    dst->classes = strv_dup(src->classes, src->nclasses);
    dst->labels = strv_dup(src->labels, src->nlabels);
    dst->rules = array_dup(src->rules, src->nrules, sizeof(*src->rules));
    for (size_t i = 0; i < src->nrules; i++) {
        const spw_rule_t *s = &src->rules[i];
        spw_rule_t *d = &dst->rules[i];
        d->name = str_dup(s->name);
        d->allow_providers = strv_dup(s->allow_providers, s->n_allow_providers);
        d->deny_providers = strv_dup(s->deny_providers, s->n_deny_providers);
        d->allow_regions = strv_dup(s->allow_regions, s->n_allow_regions);
        d->deny_regions = strv_dup(s->deny_regions, s->n_deny_regions);
        d->allow_families = strv_dup(s->allow_families, s->n_allow_families);
        d->deny_families = strv_dup(s->deny_families, s->n_deny_families);
        d->allow_gpus = strv_dup(s->allow_gpus, s->n_allow_gpus);
    }
    dst->residencies = array_dup(src->residencies, src->nresidencies, sizeof(*src->residencies));
    for (size_t i = 0; i < src->nresidencies; i++) {
        dst->residencies[i].name = str_dup(src->residencies[i].name);
        dst->residencies[i].regions = strv_dup(src->residencies[i].regions,
                                               src->residencies[i].nregions);
    }
    dst->datasets = array_dup(src->datasets, src->ndatasets, sizeof(*src->datasets));
    for (size_t i = 0; i < src->ndatasets; i++) {
        const spw_dataset_spec_t *s = &src->datasets[i];
        spw_dataset_spec_t *d = &dst->datasets[i];
        d->name = str_dup(s->name);
        site_copy(&d->home, &s->home);
        d->replicas = array_dup(s->replicas, s->nreplicas, sizeof(*s->replicas));
        for (size_t k = 0; k < s->nreplicas; k++)
            site_copy(&d->replicas[k], &s->replicas[k]);
    }
}

int spw_gov_active(const spw_gov_t *g)
{
    return g->nteams || g->nrules || g->nresidencies || g->ndatasets
           || isfinite(g->max_cloud_usd_per_h) || isfinite(g->max_cloud_gpus);
}

static int find_str(char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] && strcmp(v[i], name) == 0)
            return (int)i;
    return -1;
}

int spw_gov_team(const spw_gov_t *g, const char *name)
{
    for (size_t i = 0; i < g->nteams; i++)
        if (strcmp(g->teams[i].name, name) == 0)
            return (int)i;
    return -1;
}

int spw_gov_class(const spw_gov_t *g, const char *name) { return find_str(g->classes, g->nclasses, name); }
int spw_gov_label(const spw_gov_t *g, const char *kv) { return find_str(g->labels, g->nlabels, kv); }

int spw_gov_dataset(const spw_gov_t *g, const char *name)
{
    for (size_t i = 0; i < g->ndatasets; i++)
        if (strcmp(g->datasets[i].name, name) == 0)
            return (int)i;
    return -1;
}

int spw_gov_residency(const spw_gov_t *g, const char *name)
{
    for (size_t i = 0; i < g->nresidencies; i++)
        if (strcmp(g->residencies[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* ---- matching places ------------------------------------------------------------ */

int spw_family_matches(const char *family, const char *instance_type)
{
    size_t n = strlen(family);
    if (strncasecmp(family, instance_type, n) != 0)
        return 0;
    char c = instance_type[n];
    return c == '\0' || c == '.' || c == '-' || c == '_';
}

/* A region entry is "region" (any provider) or "provider:region". */
static int region_matches(const char *entry, const spw_offer_t *o)
{
    const char *colon = strchr(entry, ':');
    if (!colon)
        return strcmp(entry, o->region) == 0;
    size_t plen = (size_t)(colon - entry);
    return strlen(o->provider) == plen && strncasecmp(entry, o->provider, plen) == 0
           && strcmp(colon + 1, o->region) == 0;
}

static int in_list_ci(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(v[i], s) == 0)
            return 1;
    return 0;
}

static int any_region_matches(char *const *v, size_t n, const spw_offer_t *o)
{
    for (size_t i = 0; i < n; i++)
        if (region_matches(v[i], o))
            return 1;
    return 0;
}

static int any_family_matches(char *const *v, size_t n, const char *type)
{
    for (size_t i = 0; i < n; i++)
        if (spw_family_matches(v[i], type))
            return 1;
    return 0;
}

/* Whether a GPU of fleet model index `model` is accepted by a listed name;
 * -1 (unspecified or any model) is accepted by every list. */
static int model_listed(const spw_fleet_t *f, char *const *v, size_t n, int model)
{
    if (model < 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (spw_model_accepts(v[i], f->models.name[model]))
            return 1;
    return 0;
}

/* The rule's provider and region lists alone (where, not what). */
static int offer_in_places(const spw_rule_t *r, const spw_offer_t *o)
{
    if (r->allow_providers && !in_list_ci(r->allow_providers, r->n_allow_providers, o->provider))
        return 0;
    if (in_list_ci(r->deny_providers, r->n_deny_providers, o->provider))
        return 0;
    if (r->allow_regions && !any_region_matches(r->allow_regions, r->n_allow_regions, o))
        return 0;
    return !any_region_matches(r->deny_regions, r->n_deny_regions, o);
}

static int offer_allowed(const spw_fleet_t *f, const spw_rule_t *r, const spw_offer_t *o)
{
    if (!offer_in_places(r, o))
        return 0;
    if (r->allow_families && !any_family_matches(r->allow_families, r->n_allow_families,
                                                 o->instance_type))
        return 0;
    if (any_family_matches(r->deny_families, r->n_deny_families, o->instance_type))
        return 0;
    return !r->allow_gpus || model_listed(f, r->allow_gpus, r->n_allow_gpus, o->model);
}

static int pool_allowed(const spw_fleet_t *f, const spw_rule_t *r, const spw_pool_spec_t *p)
{
    return !r->allow_gpus || model_listed(f, r->allow_gpus, r->n_allow_gpus, p->model);
}

static int offer_in_residency(const spw_residency_spec_t *res, const spw_offer_t *o)
{
    return any_region_matches(res->regions, res->nregions, o);
}

static size_t words_for(size_t n)
{
    return (n + 63) / 64;
}

static void bit_set(uint64_t *w, size_t i) { w[i / 64] |= 1ULL << (i % 64); }
static int bit_get(const uint64_t *w, size_t i) { return (int)(w[i / 64] >> (i % 64) & 1); }

static int bits_empty(const uint64_t *w, size_t nw)
{
    for (size_t i = 0; i < nw; i++)
        if (w[i])
            return 0;
    return 1;
}

static void compile_rule(const spw_fleet_t *f, const spw_rule_t *r, uint64_t *offers,
                         uint64_t *pools)
{
    memset(offers, 0, words_for(f->noffers) * sizeof(uint64_t));
    memset(pools, 0, words_for(f->npools) * sizeof(uint64_t));
    for (size_t i = 0; i < f->noffers; i++)
        if (offer_allowed(f, r, &f->offers[i]))
            bit_set(offers, i);
    for (size_t i = 0; i < f->npools; i++)
        if (pool_allowed(f, r, &f->pools[i]))
            bit_set(pools, i);
}

/* ---- validation ------------------------------------------------------------------ */

/* Appends s to a comma-separated list in buf unless already there; ends
 * the list with "..." once it is full, so messages stay inside spw_error_t. */
static void list_add(char *buf, size_t len, const char *s)
{
    size_t used = strlen(buf);
    if (used >= 3 && strcmp(buf + used - 3, "...") == 0)
        return;
    /* Already listed? Compare against each element. */
    for (const char *p = buf; *p;) {
        const char *e = strstr(p, ", ");
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == strlen(s) && strncmp(p, s, n) == 0)
            return;
        if (!e)
            break;
        p = e + 2;
    }
    size_t need = strlen(s) + (used ? 2 : 0);
    if (used + need + 5 > len) {
        snprintf(buf + used, len - used, "%s...", used ? ", " : "");
        return;
    }
    snprintf(buf + used, len - used, "%s%s", used ? ", " : "", s);
}

/* The parenthesis of an unknown-provider message: what the fleet has. */
static void known_providers(const spw_fleet_t *f, char *buf, size_t len)
{
    char list[120] = "";
    for (size_t i = 0; i < f->noffers; i++)
        list_add(list, sizeof(list), f->offers[i].provider);
    if (list[0])
        snprintf(buf, len, "the fleet's offers have: %s", list);
    else
        snprintf(buf, len, "the fleet has no cloud offers");
}

static void known_regions(const spw_fleet_t *f, char *buf, size_t len)
{
    char list[120] = "";
    for (size_t i = 0; i < f->noffers; i++)
        if (f->offers[i].region[0])
            list_add(list, sizeof(list), f->offers[i].region);
    if (list[0])
        snprintf(buf, len, "the fleet's offers have: %s", list);
    else
        snprintf(buf, len, "the fleet's offers name no region");
}

static int provider_known(const spw_fleet_t *f, const char *p)
{
    for (size_t i = 0; i < f->noffers; i++)
        if (strcasecmp(f->offers[i].provider, p) == 0)
            return 1;
    return 0;
}

static int region_known(const spw_fleet_t *f, const char *entry)
{
    for (size_t i = 0; i < f->noffers; i++)
        if (region_matches(entry, &f->offers[i]))
            return 1;
    return 0;
}

static int family_known(const spw_fleet_t *f, const char *family)
{
    for (size_t i = 0; i < f->noffers; i++)
        if (spw_family_matches(family, f->offers[i].instance_type))
            return 1;
    return 0;
}

static int gpu_known(const spw_fleet_t *f, const char *name)
{
    for (size_t i = 0; i < f->npools; i++)
        if (f->pools[i].model >= 0 && spw_model_accepts(name, f->models.name[f->pools[i].model]))
            return 1;
    for (size_t i = 0; i < f->noffers; i++)
        if (f->offers[i].model >= 0 && spw_model_accepts(name, f->models.name[f->offers[i].model]))
            return 1;
    return 0;
}

static void known_gpus(const spw_fleet_t *f, char *buf, size_t len)
{
    char list[120] = "";
    for (size_t i = 0; i < f->npools; i++)
        if (f->pools[i].model >= 0)
            list_add(list, sizeof(list), f->models.name[f->pools[i].model]);
    for (size_t i = 0; i < f->noffers; i++)
        if (f->offers[i].model >= 0)
            list_add(list, sizeof(list), f->models.name[f->offers[i].model]);
    if (list[0])
        snprintf(buf, len, "known: %s", list);
    else
        snprintf(buf, len, "no pool or offer names a GPU model");
}

/* Everything a validation message needs to say where it comes from. */
typedef struct vctx {
    const spw_gov_t *g;
    const spw_fleet_t *f;
    const char *file;
    spw_error_t *err;
} vctx_t;

/* "FILE:LINE: KIND 'NAME': message" */
static __attribute__((format(printf, 5, 6)))
int verr(const vctx_t *v, const char *kind, const char *name, int line, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return spw_errorf(v->err, "%s:%d: %s '%s': %s", v->file ? v->file : "config", line, kind,
                      name ? name : "?", msg);
}

static int check_providers(const vctx_t *v, const spw_rule_t *r, char *const *list, size_t n,
                           const char *key)
{
    char known[160];
    for (size_t i = 0; i < n; i++)
        if (!provider_known(v->f, list[i])) {
            known_providers(v->f, known, sizeof(known));
            return verr(v, "rule", r->name, r->line,
                        "unknown provider '%s' in %s (%s)", list[i], key, known);
        }
    return 0;
}

static int check_regions(const vctx_t *v, const spw_rule_t *r, char *const *list, size_t n,
                         const char *key)
{
    char known[160];
    for (size_t i = 0; i < n; i++)
        if (!region_known(v->f, list[i])) {
            known_regions(v->f, known, sizeof(known));
            return verr(v, "rule", r->name, r->line,
                        "unknown region '%s' in %s (write REGION or PROVIDER:REGION; %s)",
                        list[i], key, known);
        }
    return 0;
}

static int check_families(const vctx_t *v, const spw_rule_t *r, char *const *list, size_t n,
                          const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!family_known(v->f, list[i]))
            return verr(v, "rule", r->name, r->line,
                        "%s: family '%s' matches no offer's instance type (a family is the "
                        "type's prefix, e.g. p4d for p4d.24xlarge)", key, list[i]);
    return 0;
}

/* The same name in an allow list and its deny list. */
static int check_contradiction(const vctx_t *v, const spw_rule_t *r, char *const *allow,
                               size_t nallow, char *const *deny, size_t ndeny, const char *what)
{
    for (size_t i = 0; i < nallow; i++)
        if (in_list_ci(deny, ndeny, allow[i]))
            return verr(v, "rule", r->name, r->line,
                        "contradicts itself: '%s' is in both allow_%s and deny_%s; keep it "
                        "in one of them", allow[i], what, what);
    return 0;
}

/* What a residency allows, for messages: "on-prem pools and eu-west-1, ...". */
static void residency_places(const spw_residency_spec_t *res, char *buf, size_t len)
{
    char regions[128] = "";
    for (size_t i = 0; i < res->nregions; i++)
        list_add(regions, sizeof(regions), res->regions[i]);
    if (res->onprem && res->nregions)
        snprintf(buf, len, "on-prem pools and regions %s", regions);
    else if (res->onprem)
        snprintf(buf, len, "on-prem pools");
    else if (res->nregions)
        snprintf(buf, len, "regions %s", regions);
    else
        snprintf(buf, len, "nothing");
}

/* A rule naming places for a class that is a residency must stay inside
 * it: the residency would quietly take those places away again, which is
 * never what the rule's author meant.  Only the places the rule names
 * count: a region entry outside the residency, or a provider with no
 * region inside it. */
static int check_widening(const vctx_t *v, const spw_rule_t *r, int c)
{
    int ri = spw_gov_residency(v->g, v->g->classes[c]);
    if (ri < 0 || (!r->allow_providers && !r->allow_regions))
        return 0;
    const spw_residency_spec_t *res = &v->g->residencies[ri];
    const spw_fleet_t *f = v->f;
    char places[160];
    residency_places(res, places, sizeof(places));
    if (r->allow_regions) {
        for (size_t i = 0; i < f->noffers; i++) {
            const spw_offer_t *o = &f->offers[i];
            if (offer_in_places(r, o) && !offer_in_residency(res, o))
                return verr(v, "rule", r->name, r->line,
                            "rules cannot widen residency '%s' (line %d), which allows only "
                            "%s; allow_regions names %s:%s", res->name, res->line, places,
                            o->provider, o->region);
        }
        return 0;
    }
    for (size_t k = 0; k < r->n_allow_providers; k++) {
        int inside = 0;
        for (size_t i = 0; i < f->noffers && !inside; i++)
            inside = strcasecmp(f->offers[i].provider, r->allow_providers[k]) == 0
                     && offer_in_residency(res, &f->offers[i]);
        if (!inside)
            return verr(v, "rule", r->name, r->line,
                        "rules cannot widen residency '%s' (line %d), which allows only %s; "
                        "allow_providers names '%s', which has no region in it", res->name,
                        res->line, places, r->allow_providers[k]);
    }
    return 0;
}

static int validate_rule(const vctx_t *v, const spw_rule_t *r, uint64_t *offers, uint64_t *pools)
{
    const spw_fleet_t *f = v->f;
    char known[160];
    if (check_providers(v, r, r->allow_providers, r->n_allow_providers, "allow_providers") < 0
        || check_providers(v, r, r->deny_providers, r->n_deny_providers, "deny_providers") < 0
        || check_regions(v, r, r->allow_regions, r->n_allow_regions, "allow_regions") < 0
        || check_regions(v, r, r->deny_regions, r->n_deny_regions, "deny_regions") < 0
        || check_families(v, r, r->allow_families, r->n_allow_families, "allow_families") < 0
        || check_families(v, r, r->deny_families, r->n_deny_families, "deny_families") < 0)
        return -1;
    for (size_t i = 0; i < r->n_allow_gpus; i++)
        if (!gpu_known(f, r->allow_gpus[i])) {
            known_gpus(f, known, sizeof(known));
            return verr(v, "rule", r->name, r->line,
                        "allow_gpus: '%s' matches no GPU model of a pool or offer (%s)",
                        r->allow_gpus[i], known);
        }
    if (check_contradiction(v, r, r->allow_providers, r->n_allow_providers, r->deny_providers,
                            r->n_deny_providers, "providers") < 0
        || check_contradiction(v, r, r->allow_regions, r->n_allow_regions, r->deny_regions,
                               r->n_deny_regions, "regions") < 0
        || check_contradiction(v, r, r->allow_families, r->n_allow_families, r->deny_families,
                               r->n_deny_families, "families") < 0)
        return -1;
    if (r->spot == SPW_SPOT_REQUIRED && r->placement == SPW_PLACE_ONPREM_ONLY)
        return verr(v, "rule", r->name, r->line,
                    "spot: required with placement: onprem_only can run nowhere (spot is a "
                    "cloud capacity); drop one of them");
    compile_rule(f, r, offers, pools);
    if (f->noffers + f->npools > 0 && bits_empty(offers, words_for(f->noffers))
        && bits_empty(pools, words_for(f->npools)))
        return verr(v, "rule", r->name, r->line,
                    "allows nothing: no on-prem pool and no cloud offer passes its allow and "
                    "deny lists together; loosen one of them");
    for (size_t c = 0; c < v->g->nclasses && c < 64; c++)
        if ((r->classes >> c & 1) && check_widening(v, r, (int)c) < 0)
            return -1;
    return 0;
}

static int validate_residency(const vctx_t *v, const spw_residency_spec_t *res)
{
    char known[160], mine[128] = "";
    if (res->onprem)
        return 0;
    for (size_t i = 0; i < v->f->noffers; i++)
        if (offer_in_residency(res, &v->f->offers[i]))
            return 0;
    for (size_t i = 0; i < res->nregions; i++)
        list_add(mine, sizeof(mine), res->regions[i]);
    known_regions(v->f, known, sizeof(known));
    return verr(v, "residency", res->name, res->line,
                "allows no place: onprem is off and no offer is in its regions (%s); add "
                "onprem: true or a region (%s)",
                mine[0] ? mine : "none given", known);
}

static int validate_site(const vctx_t *v, const spw_dataset_spec_t *d, const spw_site_t *s,
                         const char *which)
{
    const spw_fleet_t *f = v->f;
    char known[160];
    if (s->pool >= 0) {
        if ((size_t)s->pool >= f->npools)
            return verr(v, "dataset", d->name, d->line,
                        "%s names pool index %d but the fleet has %zu pools", which, s->pool,
                        f->npools);
        return 0;
    }
    if (!s->region)
        return verr(v, "dataset", d->name, d->line, "%s names neither a pool nor a region",
                    which);
    for (size_t i = 0; i < f->noffers; i++)
        if (strcmp(f->offers[i].region, s->region) == 0
            && (!s->provider || strcasecmp(f->offers[i].provider, s->provider) == 0))
            return 0;
    known_regions(f, known, sizeof(known));
    return verr(v, "dataset", d->name, d->line,
                "%s: region '%s%s%s' is not a region of the fleet's offers (%s)", which,
                s->provider ? s->provider : "", s->provider ? ":" : "", s->region, known);
}

static int validate_dataset(const vctx_t *v, const spw_dataset_spec_t *d)
{
    if (!(d->size_gb > 0))
        return verr(v, "dataset", d->name, d->line, "size_gb must be > 0 (got %g)", d->size_gb);
    if (validate_site(v, d, &d->home, "home") < 0)
        return -1;
    for (size_t k = 0; k < d->nreplicas; k++) {
        char which[32];
        snprintf(which, sizeof(which), "replica %zu", k + 1);
        if (validate_site(v, d, &d->replicas[k], which) < 0)
            return -1;
    }
    return 0;
}

int spw_gov_validate(const spw_gov_t *g, const struct spw_fleet *f, const char *file,
                     spw_error_t *err)
{
    vctx_t v = {g, f, file, err};
    int rc = 0;
    for (size_t i = 0; i < g->nresidencies && rc == 0; i++)
        rc = validate_residency(&v, &g->residencies[i]);
    uint64_t *offers = spw_xcalloc(words_for(f->noffers), sizeof(uint64_t));
    uint64_t *pools = spw_xcalloc(words_for(f->npools), sizeof(uint64_t));
    for (size_t i = 0; i < g->nrules && rc == 0; i++)
        rc = validate_rule(&v, &g->rules[i], offers, pools);
    free(offers);
    free(pools);
    for (size_t i = 0; i < g->ndatasets && rc == 0; i++)
        rc = validate_dataset(&v, &g->datasets[i]);
    return rc;
}

/* ---- runtime: profiles ------------------------------------------------------------ */

/* One interned profile with its bitsets in the same allocation, so its
 * pointers stay put while the profile table grows. */
typedef struct prof_node {
    spw_profile_t p;
    uint64_t bits[];             /* offer words, then pool words */
} prof_node_t;

/* Spend in one budget period (or one calendar month of egress). */
typedef struct ledger_entry {
    double start_s;              /* unix start of the period */
    double settled_usd;
    double reserved_usd;
    uint32_t nlive;              /* reservations still held; at 0 reserved is exactly 0 */
} ledger_entry_t;

typedef struct entry_list {
    ledger_entry_t *e;           /* owned, in order of first use */
    size_t n, cap;
} entry_list_t;

/* What a team holds right now and has spent per period. */
typedef struct team_rt {
    entry_list_t periods;        /* budget periods (the team's period kind) */
    entry_list_t months;         /* egress per calendar month */
    double usd_per_h;            /* cloud spend rate held */
    double gpus;                 /* cloud GPUs held */
    uint32_t nlive;              /* reservations held */
} team_rt_t;

/* A dataset copied into a cloud region or an on-prem pool. */
typedef struct cache_entry {
    int dataset;
    int pool;                    /* the pool holding the copy, or -1 for a region */
    const char *provider;        /* borrowed from the fleet's offer */
    const char *region;          /* borrowed from the fleet's offer */
    double expiry_s;             /* engine seconds; held while now < expiry */
} cache_entry_t;

struct spw_govrt {
    const spw_fleet_t *f;        /* borrowed for the runtime's life */
    const spw_gov_t *g;          /* &f->gov */
    size_t ow, pw;               /* words in offer and pool bitsets */
    size_t nrules;
    /* rule match conditions, one array each so the match loop stays in cache */
    uint64_t *m_teams, *m_classes, *m_labels;
    uint32_t *m_gmin, *m_gmax;
    uint64_t *rule_offers;       /* nrules x ow */
    uint64_t *rule_pools;        /* nrules x pw */
    uint64_t *res_offers;        /* nresidencies x ow: offers inside each residency */
    int *class_res;              /* class index -> residency of that name, or -1 */
    prof_node_t **profiles;      /* owned, index = profile index */
    uint32_t nprofiles, capprofiles;
    uint32_t *slots;             /* hash of (matched, residency) -> index + 1; 0 = empty */
    size_t nslots;               /* a power of two, at least twice nprofiles */
    team_rt_t *teams;            /* one per spec team */
    double org_usd_per_h, org_gpus;
    uint32_t org_nlive;
    cache_entry_t *cache;
    size_t ncache, capcache;
};

static uint64_t profile_hash(const uint64_t *matched, int residency)
{
    uint64_t h = (uint64_t)(residency + 1) * 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < SPW_GOV_RULE_WORDS; i++) {
        h ^= matched[i];
        h *= 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    return h;
}

spw_govrt_t *spw_govrt_create(const struct spw_fleet *f)
{
    const spw_gov_t *g = &f->gov;
    spw_govrt_t *rt = spw_xcalloc(1, sizeof(*rt));
    rt->f = f;
    rt->g = g;
    rt->ow = words_for(f->noffers);
    rt->pw = words_for(f->npools);
    rt->nrules = g->nrules < SPW_GOV_MAX_RULES ? g->nrules : SPW_GOV_MAX_RULES;
    size_t nr = rt->nrules;
    rt->m_teams = spw_xcalloc(nr, sizeof(uint64_t));
    rt->m_classes = spw_xcalloc(nr, sizeof(uint64_t));
    rt->m_labels = spw_xcalloc(nr, sizeof(uint64_t));
    rt->m_gmin = spw_xcalloc(nr, sizeof(uint32_t));
    rt->m_gmax = spw_xcalloc(nr, sizeof(uint32_t));
    rt->rule_offers = spw_xcalloc(nr * rt->ow, sizeof(uint64_t));
    rt->rule_pools = spw_xcalloc(nr * rt->pw, sizeof(uint64_t));
    for (size_t r = 0; r < nr; r++) {
        const spw_rule_t *rule = &g->rules[r];
        rt->m_teams[r] = rule->teams;
        rt->m_classes[r] = rule->classes;
        rt->m_labels[r] = rule->labels;
        rt->m_gmin[r] = rule->gpus_min;
        rt->m_gmax[r] = rule->gpus_max;
        compile_rule(f, rule, rt->rule_offers + r * rt->ow, rt->rule_pools + r * rt->pw);
    }
    rt->res_offers = spw_xcalloc(g->nresidencies * rt->ow, sizeof(uint64_t));
    for (size_t k = 0; k < g->nresidencies; k++)
        for (size_t i = 0; i < f->noffers; i++)
            if (offer_in_residency(&g->residencies[k], &f->offers[i]))
                bit_set(rt->res_offers + k * rt->ow, i);
    rt->class_res = spw_xcalloc(g->nclasses, sizeof(int));
    for (size_t c = 0; c < g->nclasses; c++)
        rt->class_res[c] = spw_gov_residency(g, g->classes[c]);
    rt->nslots = 64;
    rt->slots = spw_xcalloc(rt->nslots, sizeof(uint32_t));
    rt->teams = spw_xcalloc(g->nteams, sizeof(team_rt_t));
    return rt;
}

void spw_govrt_destroy(spw_govrt_t *rt)
{
    if (!rt)
        return;
    free(rt->m_teams);
    free(rt->m_classes);
    free(rt->m_labels);
    free(rt->m_gmin);
    free(rt->m_gmax);
    free(rt->rule_offers);
    free(rt->rule_pools);
    free(rt->res_offers);
    free(rt->class_res);
    for (uint32_t i = 0; i < rt->nprofiles; i++)
        free(rt->profiles[i]);
    free(rt->profiles);
    free(rt->slots);
    for (size_t t = 0; t < rt->g->nteams; t++) {
        free(rt->teams[t].periods.e);
        free(rt->teams[t].months.e);
    }
    free(rt->teams);
    free(rt->cache);
    free(rt);
}

/* Price per GPU-hour the profile's price cap is compared with: spot when
 * only spot may be used, else on demand. */
static double offer_gpu_price(const spw_offer_t *o, spw_spot_rule_t spot)
{
    double usd_per_h = spot == SPW_SPOT_REQUIRED ? o->spot_usd_per_h : o->ondemand_usd_per_h;
    return usd_per_h / (o->gpus ? o->gpus : 1);
}

/* Builds the profile of a (matched rules, residency) pair. */
static prof_node_t *build_profile(const spw_govrt_t *rt, const uint64_t *matched, int residency)
{
    const spw_fleet_t *f = rt->f;
    prof_node_t *n = spw_xcalloc(1, sizeof(*n) + (rt->ow + rt->pw) * sizeof(uint64_t));
    spw_profile_t *p = &n->p;
    uint64_t *offers = n->bits, *pools = n->bits + rt->ow;
    for (size_t i = 0; i < f->noffers; i++)
        bit_set(offers, i);
    for (size_t i = 0; i < f->npools; i++)
        bit_set(pools, i);
    p->max_usd_per_gpu_h = INFINITY;
    for (size_t r = 0; r < rt->nrules; r++) {
        if (!(matched[r / 64] >> (r % 64) & 1))
            continue;
        const spw_rule_t *rule = &rt->g->rules[r];
        for (size_t w = 0; w < rt->ow; w++)
            offers[w] &= rt->rule_offers[r * rt->ow + w];
        for (size_t w = 0; w < rt->pw; w++)
            pools[w] &= rt->rule_pools[r * rt->pw + w];
        if (rule->spot != SPW_SPOT_UNSET)
            p->spot = rule->spot;
        if (rule->placement != SPW_PLACE_UNSET)
            p->placement = rule->placement;
        if (rule->max_usd_per_gpu_h < p->max_usd_per_gpu_h)
            p->max_usd_per_gpu_h = rule->max_usd_per_gpu_h;
    }
    for (size_t i = 0; i < f->noffers; i++) {
        if (!bit_get(offers, i))
            continue;
        const spw_offer_t *o = &f->offers[i];
        double price = offer_gpu_price(o, p->spot);
        /* !(price <= max) also drops a NAN spot price when spot is required. */
        if (!(price <= p->max_usd_per_gpu_h) || p->placement == SPW_PLACE_ONPREM_ONLY)
            offers[i / 64] &= ~(1ULL << (i % 64));
    }
    p->residency = residency;
    if (residency >= 0) {
        int had_offers = !bits_empty(offers, rt->ow);
        if (!rt->g->residencies[residency].onprem)
            memset(pools, 0, rt->pw * sizeof(uint64_t));
        for (size_t w = 0; w < rt->ow; w++)
            offers[w] &= rt->res_offers[(size_t)residency * rt->ow + w];
        p->onprem_by_residency = had_offers && bits_empty(offers, rt->ow);
    }
    memcpy(p->matched, matched, sizeof(p->matched));
    p->offers = offers;
    p->pools = pools;
    return n;
}

static void grow_slots(spw_govrt_t *rt)
{
    size_t nslots = rt->nslots * 2;
    uint32_t *slots = spw_xcalloc(nslots, sizeof(uint32_t));
    for (uint32_t i = 0; i < rt->nprofiles; i++) {
        const spw_profile_t *p = &rt->profiles[i]->p;
        size_t s = profile_hash(p->matched, p->residency) & (nslots - 1);
        while (slots[s])
            s = (s + 1) & (nslots - 1);
        slots[s] = i + 1;
    }
    free(rt->slots);
    rt->slots = slots;
    rt->nslots = nslots;
}

static uint32_t intern_profile(spw_govrt_t *rt, const uint64_t *matched, int residency)
{
    uint64_t h = profile_hash(matched, residency);
    size_t s = h & (rt->nslots - 1);
    for (; rt->slots[s]; s = (s + 1) & (rt->nslots - 1)) {
        const spw_profile_t *p = &rt->profiles[rt->slots[s] - 1]->p;
        if (p->residency == residency && memcmp(p->matched, matched, sizeof(p->matched)) == 0)
            return rt->slots[s] - 1;
    }
    if (rt->nprofiles == rt->capprofiles) {
        rt->capprofiles = rt->capprofiles ? rt->capprofiles * 2 : 8;
        rt->profiles = spw_xrealloc(rt->profiles, rt->capprofiles * sizeof(*rt->profiles));
    }
    uint32_t idx = rt->nprofiles++;
    rt->profiles[idx] = build_profile(rt, matched, residency);
    rt->slots[s] = idx + 1;
    if (2 * (size_t)rt->nprofiles > rt->nslots)
        grow_slots(rt);
    return idx;
}

/* One bit of an "index + 1, 0 = none" field, or 0 when none or out of range. */
static uint64_t bit_of(uint32_t index1)
{
    return index1 && index1 <= 64 ? 1ULL << (index1 - 1) : 0;
}

static int job_residency(const spw_govrt_t *rt, const spw_job_t *j)
{
    if (j->residency)
        return j->residency <= rt->g->nresidencies ? (int)j->residency - 1 : -1;
    if (j->jclass && j->jclass <= rt->g->nclasses)
        return rt->class_res[j->jclass - 1];
    return -1;
}

uint32_t spw_govrt_profile_of(spw_govrt_t *rt, const struct spw_job *j)
{
    uint64_t matched[SPW_GOV_RULE_WORDS] = {0};
    uint64_t tb = bit_of(j->team), cb = bit_of(j->jclass), labels = j->labels;
    uint32_t gpus = j->gpus;
    for (size_t r = 0; r < rt->nrules; r++) {
        uint64_t t = rt->m_teams[r], c = rt->m_classes[r];
        if ((t == 0 || (t & tb)) && (c == 0 || (c & cb)) && (rt->m_labels[r] & ~labels) == 0
            && rt->m_gmin[r] <= gpus && gpus <= rt->m_gmax[r])
            matched[r / 64] |= 1ULL << (r % 64);
    }
    return intern_profile(rt, matched, job_residency(rt, j));
}

const spw_profile_t *spw_govrt_profile(const spw_govrt_t *rt, uint32_t idx)
{
    return idx < rt->nprofiles ? &rt->profiles[idx]->p : NULL;
}

/* ---- runtime: ledger --------------------------------------------------------------- */

/* Money and GPU comparisons forgive float dust below this. */
#define LEDGER_EPS 1e-9

static const spw_team_spec_t *team_spec(const spw_govrt_t *rt, int team)
{
    return team >= 0 && (size_t)team < rt->g->nteams ? &rt->g->teams[team] : NULL;
}

/* The entry starting at start_s, or NULL.  Searched from the newest: the
 * current period is nearly always the last one used. */
static ledger_entry_t *entry_find(const entry_list_t *l, double start_s)
{
    for (size_t i = l->n; i-- > 0;)
        if (l->e[i].start_s == start_s)
            return &l->e[i];
    return NULL;
}

static ledger_entry_t *entry_get(entry_list_t *l, double start_s)
{
    ledger_entry_t *e = entry_find(l, start_s);
    if (e)
        return e;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->e = spw_xrealloc(l->e, l->cap * sizeof(*l->e));
    }
    e = &l->e[l->n++];
    memset(e, 0, sizeof(*e));
    e->start_s = start_s;
    return e;
}

/* A live amount after giving one reservation back: exactly 0 once none is
 * held, never below 0 from float residue. */
static double give_back(double amount, double part, uint32_t *nlive)
{
    if (*nlive)
        (*nlive)--;
    amount -= part;
    return *nlive == 0 || amount < 0 ? 0 : amount;
}

/* The team's own checks, in the documented order: budget, egress, rate, GPUs. */
static spw_admit_t admit_team(const spw_govrt_t *rt, int team, double t, const spw_charge_t *c,
                              char *why, size_t len)
{
    const spw_team_spec_t *ts = &rt->g->teams[team];
    const team_rt_t *tr = &rt->teams[team];
    char label[24];
    const ledger_entry_t *e = entry_find(&tr->periods, spw_period_start(ts->period, t));
    double used = e ? e->settled_usd + e->reserved_usd : 0;
    double cost = c->usd + c->egress_usd;
    if (used + cost > ts->budget_usd + LEDGER_EPS) {
        if (why) {
            double left = ts->budget_usd - used;
            spw_period_label(ts->period, t, label, sizeof(label));
            snprintf(why, len, "team %s has $%.2f of its %s budget ($%.2f) left; this "
                     "placement may cost $%.2f", ts->name, left > 0 ? left : 0, label,
                     ts->budget_usd, cost);
        }
        return SPW_ADMIT_BUDGET;
    }
    const ledger_entry_t *m = entry_find(&tr->months, spw_period_start(SPW_PERIOD_MONTH, t));
    double egress = m ? m->settled_usd + m->reserved_usd : 0;
    if (egress + c->egress_usd > ts->max_egress_usd_per_month + LEDGER_EPS) {
        if (why) {
            double left = ts->max_egress_usd_per_month - egress;
            spw_period_label(SPW_PERIOD_MONTH, t, label, sizeof(label));
            snprintf(why, len, "team %s has $%.2f of its %s egress cap ($%.2f) left; this "
                     "placement's data may cost $%.2f", ts->name, left > 0 ? left : 0, label,
                     ts->max_egress_usd_per_month, c->egress_usd);
        }
        return SPW_ADMIT_EGRESS;
    }
    if (tr->usd_per_h + c->usd_per_h > ts->max_cloud_usd_per_h + LEDGER_EPS) {
        if (why)
            snprintf(why, len, "team %s spends $%.2f/h in the cloud of its cap of $%.2f/h; "
                     "this placement adds $%.2f/h", ts->name, tr->usd_per_h,
                     ts->max_cloud_usd_per_h, c->usd_per_h);
        return SPW_ADMIT_TEAM_RATE;
    }
    if (tr->gpus + c->gpus > ts->max_cloud_gpus + LEDGER_EPS) {
        if (why)
            snprintf(why, len, "team %s holds %g cloud GPUs of its cap of %g; this placement "
                     "needs %g more", ts->name, tr->gpus, ts->max_cloud_gpus, c->gpus);
        return SPW_ADMIT_TEAM_GPUS;
    }
    return SPW_ADMIT_OK;
}

static spw_admit_t admit_org(const spw_govrt_t *rt, const spw_charge_t *c, char *why, size_t len)
{
    const spw_gov_t *g = rt->g;
    if (rt->org_usd_per_h + c->usd_per_h > g->max_cloud_usd_per_h + LEDGER_EPS) {
        if (why)
            snprintf(why, len, "the organisation spends $%.2f/h in the cloud of its cap of "
                     "$%.2f/h; this placement adds $%.2f/h", rt->org_usd_per_h,
                     g->max_cloud_usd_per_h, c->usd_per_h);
        return SPW_ADMIT_ORG_RATE;
    }
    if (rt->org_gpus + c->gpus > g->max_cloud_gpus + LEDGER_EPS) {
        if (why)
            snprintf(why, len, "the organisation holds %g cloud GPUs of its cap of %g; this "
                     "placement needs %g more", rt->org_gpus, g->max_cloud_gpus, c->gpus);
        return SPW_ADMIT_ORG_GPUS;
    }
    return SPW_ADMIT_OK;
}

spw_admit_t spw_govrt_admit(const spw_govrt_t *rt, int team, double now, const spw_charge_t *c,
                            char *why, size_t len)
{
    if (!len)
        why = NULL;
    if (why)
        why[0] = '\0';
    spw_admit_t a = SPW_ADMIT_OK;
    if (team_spec(rt, team))
        a = admit_team(rt, team, rt->g->origin_s + now, c, why, len);
    return a != SPW_ADMIT_OK ? a : admit_org(rt, c, why, len);
}

int spw_govrt_could_fit(const spw_govrt_t *rt, int team, const spw_charge_t *c)
{
    const double eps = 1e-9;
    const spw_team_spec_t *ts = team_spec(rt, team);
    if (ts && (c->usd + c->egress_usd > ts->budget_usd + eps ||
               c->egress_usd > ts->max_egress_usd_per_month + eps ||
               c->usd_per_h > ts->max_cloud_usd_per_h + eps || c->gpus > ts->max_cloud_gpus + eps))
        return 0;
    return c->usd_per_h <= rt->g->max_cloud_usd_per_h + eps && c->gpus <= rt->g->max_cloud_gpus + eps;
}

void spw_govrt_reserve(spw_govrt_t *rt, int team, double now, const spw_charge_t *c)
{
    const spw_team_spec_t *ts = team_spec(rt, team);
    double t = rt->g->origin_s + now;
    if (ts) {
        team_rt_t *tr = &rt->teams[team];
        ledger_entry_t *e = entry_get(&tr->periods, spw_period_start(ts->period, t));
        e->reserved_usd += c->usd + c->egress_usd;
        e->nlive++;
        ledger_entry_t *m = entry_get(&tr->months, spw_period_start(SPW_PERIOD_MONTH, t));
        m->reserved_usd += c->egress_usd;
        m->nlive++;
        tr->usd_per_h += c->usd_per_h;
        tr->gpus += c->gpus;
        tr->nlive++;
    }
    rt->org_usd_per_h += c->usd_per_h;
    rt->org_gpus += c->gpus;
    rt->org_nlive++;
}

/* Frees one placement's spend rate and GPUs from a holder (team or org). */
static void release(double *usd_per_h, double *gpus, uint32_t *nlive, const spw_charge_t *r)
{
    uint32_t n = *nlive;
    *usd_per_h = give_back(*usd_per_h, r->usd_per_h, &n);
    *gpus = give_back(*gpus, r->gpus, nlive);
}

void spw_govrt_settle(spw_govrt_t *rt, int team, double placed_s, const spw_charge_t *reserved,
                      const spw_charge_t *actual)
{
    const spw_team_spec_t *ts = team_spec(rt, team);
    double t = rt->g->origin_s + placed_s;
    if (ts) {
        team_rt_t *tr = &rt->teams[team];
        ledger_entry_t *e = entry_get(&tr->periods, spw_period_start(ts->period, t));
        e->reserved_usd = give_back(e->reserved_usd, reserved->usd + reserved->egress_usd,
                                    &e->nlive);
        e->settled_usd += actual->usd + actual->egress_usd;
        ledger_entry_t *m = entry_get(&tr->months, spw_period_start(SPW_PERIOD_MONTH, t));
        m->reserved_usd = give_back(m->reserved_usd, reserved->egress_usd, &m->nlive);
        m->settled_usd += actual->egress_usd;
        release(&tr->usd_per_h, &tr->gpus, &tr->nlive, reserved);
    }
    release(&rt->org_usd_per_h, &rt->org_gpus, &rt->org_nlive, reserved);
}

void spw_govrt_set_aside(spw_govrt_t *rt, int team, double placed_s,
                         const spw_charge_t *reserved, spw_govrt_aside_t *a)
{
    const spw_team_spec_t *ts = team_spec(rt, team);
    double t = rt->g->origin_s + placed_s;
    memset(a, 0, sizeof(*a));
    a->team = ts ? team : -1;
    if (ts) {
        team_rt_t *tr = &rt->teams[team];
        ledger_entry_t *e = entry_get(&tr->periods, spw_period_start(ts->period, t));
        ledger_entry_t *m = entry_get(&tr->months, spw_period_start(SPW_PERIOD_MONTH, t));
        a->period_s = e->start_s;
        a->period_reserved_usd = e->reserved_usd;
        a->period_nlive = e->nlive;
        a->month_s = m->start_s;
        a->month_reserved_usd = m->reserved_usd;
        a->month_nlive = m->nlive;
        a->team_usd_per_h = tr->usd_per_h;
        a->team_gpus = tr->gpus;
        a->team_nlive = tr->nlive;
    }
    a->org_usd_per_h = rt->org_usd_per_h;
    a->org_gpus = rt->org_gpus;
    a->org_nlive = rt->org_nlive;
    const spw_charge_t none = {0, 0, 0, 0};
    spw_govrt_settle(rt, team, placed_s, reserved, &none);
}

void spw_govrt_put_back(spw_govrt_t *rt, const spw_govrt_aside_t *a)
{
    if (a->team >= 0) {
        team_rt_t *tr = &rt->teams[a->team];
        ledger_entry_t *e = entry_get(&tr->periods, a->period_s);
        ledger_entry_t *m = entry_get(&tr->months, a->month_s);
        e->reserved_usd = a->period_reserved_usd;
        e->nlive = a->period_nlive;
        m->reserved_usd = a->month_reserved_usd;
        m->nlive = a->month_nlive;
        tr->usd_per_h = a->team_usd_per_h;
        tr->gpus = a->team_gpus;
        tr->nlive = a->team_nlive;
    }
    rt->org_usd_per_h = a->org_usd_per_h;
    rt->org_gpus = a->org_gpus;
    rt->org_nlive = a->org_nlive;
}

double spw_govrt_egress_left(const spw_govrt_t *rt, int team, double now)
{
    const spw_team_spec_t *ts = team_spec(rt, team);
    if (!ts || !isfinite(ts->max_egress_usd_per_month))
        return INFINITY;
    double t = rt->g->origin_s + now;
    const ledger_entry_t *m =
        entry_find(&rt->teams[team].months, spw_period_start(SPW_PERIOD_MONTH, t));
    double left = ts->max_egress_usd_per_month - (m ? m->settled_usd + m->reserved_usd : 0);
    return left > 0 ? left : 0;
}

void spw_govrt_egress_paid(spw_govrt_t *rt, int team, double now, double usd)
{
    if (!team_spec(rt, team) || !(usd > 0))
        return;
    double t = rt->g->origin_s + now;
    entry_get(&rt->teams[team].months, spw_period_start(SPW_PERIOD_MONTH, t))->settled_usd += usd;
}

void spw_govrt_add_settled(spw_govrt_t *rt, int team, double placed_s, double usd,
                           double egress_usd)
{
    const spw_team_spec_t *ts = team_spec(rt, team);
    double t = rt->g->origin_s + placed_s;
    if (!ts)
        return;
    team_rt_t *tr = &rt->teams[team];
    entry_get(&tr->periods, spw_period_start(ts->period, t))->settled_usd += usd + egress_usd;
    entry_get(&tr->months, spw_period_start(SPW_PERIOD_MONTH, t))->settled_usd += egress_usd;
}

void spw_govrt_ledger(const spw_govrt_t *rt, int team, double at, spw_team_ledger_t *out)
{
    const spw_team_spec_t *ts = team_spec(rt, team);
    double origin = rt->g->origin_s, t = origin + at;
    spw_period_t period = ts ? ts->period : SPW_PERIOD_MONTH;
    memset(out, 0, sizeof(*out));
    double start = spw_period_start(period, t);
    out->period_start_s = start - origin;
    out->period_end_s = spw_period_end(period, t) - origin;
    out->budget_usd = INFINITY;
    out->remaining_usd = INFINITY;
    if (!ts)
        return;
    const team_rt_t *tr = &rt->teams[team];
    const ledger_entry_t *e = entry_find(&tr->periods, start);
    const ledger_entry_t *m = entry_find(&tr->months, spw_period_start(SPW_PERIOD_MONTH, t));
    out->budget_usd = ts->budget_usd;
    out->settled_usd = e ? e->settled_usd : 0;
    out->reserved_usd = e ? e->reserved_usd : 0;
    out->remaining_usd = ts->budget_usd - out->settled_usd - out->reserved_usd;
    out->egress_settled_usd = m ? m->settled_usd : 0;
    out->egress_reserved_usd = m ? m->reserved_usd : 0;
    out->cloud_usd_per_h = tr->usd_per_h;
    out->cloud_gpus = tr->gpus;
}

void spw_govrt_org(const spw_govrt_t *rt, double *usd_per_h, double *gpus)
{
    if (usd_per_h)
        *usd_per_h = rt->org_usd_per_h;
    if (gpus)
        *gpus = rt->org_gpus;
}

/* ---- runtime: data gravity ----------------------------------------------------------- */

/* Egress list price per GB out of a provider's region; unknown providers
 * (and region sites naming none) pay the aws price. */
static double provider_egress(const spw_gov_t *g, const char *provider)
{
    if (provider && strcasecmp(provider, "gcp") == 0)
        return g->egress_gcp_usd_per_gb;
    if (provider && strcasecmp(provider, "azure") == 0)
        return g->egress_azure_usd_per_gb;
    return g->egress_aws_usd_per_gb;
}

static double site_egress(const spw_gov_t *g, const spw_site_t *s)
{
    return s->pool >= 0 ? g->egress_onprem_usd_per_gb : provider_egress(g, s->provider);
}

/* Whether site s holds the data for the destination (pool, or offer o). */
static int site_holds(const spw_site_t *s, int site_pool, const spw_offer_t *o)
{
    if (s->pool >= 0)
        return site_pool >= 0 && s->pool == site_pool;
    return o && s->region && strcmp(s->region, o->region) == 0
           && (!s->provider || strcasecmp(s->provider, o->provider) == 0);
}

static int cache_holds(const cache_entry_t *c, int site_pool, const spw_offer_t *o)
{
    if (c->pool >= 0)
        return site_pool >= 0 && c->pool == site_pool;
    return o && strcmp(c->region, o->region) == 0 && strcasecmp(c->provider, o->provider) == 0;
}

double spw_govrt_data_cost(const spw_govrt_t *rt, int dataset, int site_pool, int site_offer,
                           double now, double *gb, double *transfer_s)
{
    const spw_gov_t *g = rt->g;
    const spw_offer_t *o = NULL;
    if (gb)
        *gb = 0;
    if (transfer_s)
        *transfer_s = 0;
    if (dataset < 0 || (size_t)dataset >= g->ndatasets)
        return 0;
    if (site_pool < 0) {
        if (site_offer < 0 || (size_t)site_offer >= rt->f->noffers)
            return 0;
        o = &rt->f->offers[site_offer];
    }
    const spw_dataset_spec_t *d = &g->datasets[dataset];
    /* Held at the destination: free.  Otherwise the cheapest holder sends it. */
    if (site_holds(&d->home, site_pool, o))
        return 0;
    double price = site_egress(g, &d->home);
    for (size_t k = 0; k < d->nreplicas; k++) {
        if (site_holds(&d->replicas[k], site_pool, o))
            return 0;
        double p = site_egress(g, &d->replicas[k]);
        if (p < price)
            price = p;
    }
    for (size_t k = 0; k < rt->ncache; k++) {
        const cache_entry_t *c = &rt->cache[k];
        if (c->dataset != dataset || !(now < c->expiry_s))
            continue;
        if (cache_holds(c, site_pool, o))
            return 0;
        double p = c->pool >= 0 ? g->egress_onprem_usd_per_gb : provider_egress(g, c->provider);
        if (p < price)
            price = p;
    }
    double size = d->size_gb;
    double usd = size * price;
    if (o && g->cache_ttl_s > 0)
        usd += size * g->storage_usd_per_gb_month * g->cache_ttl_s / (30 * 86400.0);
    if (gb)
        *gb = size;
    if (transfer_s)
        *transfer_s = g->bandwidth_gbps > 0 ? size * 8 / g->bandwidth_gbps : 0;
    return usd;
}

void spw_govrt_data_placed(spw_govrt_t *rt, int dataset, int site_pool, int site_offer,
                           double now)
{
    const spw_gov_t *g = rt->g;
    if (!(g->cache_ttl_s > 0) || dataset < 0 || (size_t)dataset >= g->ndatasets)
        return;
    if (site_pool >= 0 ? (size_t)site_pool >= rt->f->npools
                       : site_offer < 0 || (size_t)site_offer >= rt->f->noffers)
        return;
    const spw_offer_t *o = site_pool >= 0 ? NULL : &rt->f->offers[site_offer];
    double expiry = now + g->cache_ttl_s;
    cache_entry_t *slot = NULL;
    for (size_t k = 0; k < rt->ncache; k++) {
        cache_entry_t *c = &rt->cache[k];
        if (c->dataset == dataset && cache_holds(c, site_pool, o)) {
            if (expiry > c->expiry_s)
                c->expiry_s = expiry;
            return;
        }
        if (!slot && !(now < c->expiry_s))
            slot = c;  /* an expired copy's slot is reused, so the cache stays small */
    }
    if (!slot) {
        if (rt->ncache == rt->capcache) {
            rt->capcache = rt->capcache ? rt->capcache * 2 : 8;
            rt->cache = spw_xrealloc(rt->cache, rt->capcache * sizeof(*rt->cache));
        }
        slot = &rt->cache[rt->ncache++];
    }
    slot->dataset = dataset;
    slot->pool = site_pool >= 0 ? site_pool : -1;
    slot->provider = o ? o->provider : NULL;
    slot->region = o ? o->region : NULL;
    slot->expiry_s = expiry;
}

/* ---- runtime: explaining a refusal -------------------------------------------------- */

/* "eu-west-1, eu-central-1" (at most a few, then "..."). */
static void region_list(const spw_residency_spec_t *res, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < res->nregions && used < len; i++) {
        if (i == 4) {
            snprintf(buf + used, len - used, ", ...");
            break;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", res->regions[i]);
    }
}

int spw_govrt_why_not(const spw_govrt_t *rt, uint32_t profile, int pool, int offer, char *why,
                      size_t len)
{
    if (profile >= rt->nprofiles)
        return -1;
    const spw_profile_t *p = &rt->profiles[profile]->p;
    if (pool >= 0 ? bit_get(p->pools, (size_t)pool) : bit_get(p->offers, (size_t)offer))
        return -1;
    /* Replay the build: the first matching rule whose sets leave the place
     * out is the one to name. */
    spw_spot_rule_t spot = SPW_SPOT_UNSET;
    spw_placement_t placement = SPW_PLACE_UNSET;
    int placement_rule = -1, price_rule = -1;
    double max_price = INFINITY;
    for (size_t r = 0; r < rt->nrules; r++) {
        if (!(p->matched[r / 64] >> (r % 64) & 1))
            continue;
        const spw_rule_t *rule = &rt->g->rules[r];
        int out = pool >= 0 ? !bit_get(rt->rule_pools + r * rt->pw, (size_t)pool)
                            : !bit_get(rt->rule_offers + r * rt->ow, (size_t)offer);
        if (out) {
            snprintf(why, len, "denied by rule '%s' (line %d)", rule->name, rule->line);
            return 0;
        }
        if (rule->spot != SPW_SPOT_UNSET)
            spot = rule->spot;
        if (rule->placement != SPW_PLACE_UNSET) {
            placement = rule->placement;
            placement_rule = (int)r;
        }
        if (rule->max_usd_per_gpu_h < max_price) {
            max_price = rule->max_usd_per_gpu_h;
            price_rule = (int)r;
        }
    }
    if (pool < 0 && placement == SPW_PLACE_ONPREM_ONLY) {
        const spw_rule_t *rule = &rt->g->rules[placement_rule];
        snprintf(why, len, "placement onprem_only (rule '%s', line %d)", rule->name, rule->line);
        return 0;
    }
    if (pool < 0) {
        const spw_offer_t *o = &rt->f->offers[offer];
        double price = offer_gpu_price(o, spot);
        if (spot == SPW_SPOT_REQUIRED && isnan(o->spot_usd_per_h)) {
            snprintf(why, len, "%s has no spot price and its rules require spot", o->instance_type);
            return 0;
        }
        if (!(price <= max_price)) {
            const spw_rule_t *rule = &rt->g->rules[price_rule];
            snprintf(why, len, "$%.2f per GPU-hour is over rule '%s''s limit of $%.2f (line %d)",
                     price, rule->name, max_price, rule->line);
            return 0;
        }
    }
    if (p->residency >= 0) {
        const spw_residency_spec_t *res = &rt->g->residencies[p->residency];
        char regions[120];
        region_list(res, regions, sizeof(regions));
        if (!res->nregions)
            snprintf(why, len, "residency %s allows only on-prem", res->name);
        else
            snprintf(why, len, "residency %s allows only %s%s", res->name,
                     res->onprem ? "on-prem and " : "", regions);
        return 0;
    }
    snprintf(why, len, "not allowed by its rules");
    return 0;
}
