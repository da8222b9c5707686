/* policy.c: `spillway policy check` prints the governance a config sets, as
 * the engine applies it; `spillway policy test` shows where one job spec may
 * run under it, what that may cost, and what excluded everything else.
 * Every allowed set comes from the governance runtime (core/gov.h), never
 * from a second copy of its matching logic. */
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/client_private.h"
#include "cli/policy.h"
#include "config/config.h"
#include "core/engine.h"
#include "core/gov.h"
#include "core/model.h"
#include "daemon/jobspec.h"
#include "util/file.h"

static const char policy_usage[] =
    "usage: spillway policy check CONFIG [-o json]\n"
    "       spillway policy test CONFIG JOB.yaml [-o json]\n"
    "\n"
    "Governance lives in the config file (docs/governance.md): team budgets\n"
    "(teams:), organisation caps (caps:), placement rules (rules:), residency\n"
    "classes (residency:) and datasets (data:).  These commands read it without\n"
    "running anything, so a rule can be tried before it governs real money.\n"
    "\n"
    "  check   validate CONFIG and print what it sets: each team's budget and\n"
    "          caps, the organisation caps, residency classes, datasets, and every\n"
    "          rule in order with how many pools and cloud offers it leaves\n"
    "  test    take one job spec (the file `spillway submit` sends) and show the\n"
    "          rules it matches, its residency, placement and spot rule, every\n"
    "          place it may run with its worst-case cost, and what excluded the rest\n"
    "\n"
    "Examples:\n"
    "  spillway policy check examples/governance.yaml\n"
    "  spillway policy test examples/governance.yaml examples/job-restricted.yaml\n"
    "  spillway policy test examples/governance.yaml examples/job-experiment.yaml -o json\n"
    "\n"
    "Exit status: 0 valid (check) or the job may run somewhere (test); 1 the job\n"
    "may run nowhere; 2 a bad config, a bad job spec or bad usage.\n";

static const char check_usage[] =
    "usage: spillway policy check CONFIG [-o json]\n"
    "\n"
    "Loads CONFIG (fleet, policy and governance; docs/governance.md) and prints\n"
    "the governance it sets:\n"
    "  - teams: budget per month or ISO week, what happens when it runs out\n"
    "    (on_exhausted), and the team's cloud caps;\n"
    "  - organisation caps and the worst-case runtime of jobs without max_runtime;\n"
    "  - residency classes and the pools and offers each allows;\n"
    "  - datasets, where they live, and the data-gravity prices;\n"
    "  - every rule in the order it applies: its match, its effect, and how many\n"
    "    pools and offers a job matching only that rule keeps.\n"
    "A config error stops with FILE:LINE:COL and what to write instead.\n"
    "\n"
    "  -o, --output FMT   table (default) or json\n"
    "  -h, --help         this text\n"
    "\n"
    "Example:\n"
    "  spillway policy check examples/governance.yaml\n"
    "\n"
    "Exit status: 0 valid; 1 it loads, but its rules leave some job class nowhere\n"
    "to run (each named on stderr); 2 the config has an error, or bad usage.\n";

static const char test_usage[] =
    "usage: spillway policy test CONFIG JOB.yaml [-o json]\n"
    "\n"
    "Shows what CONFIG's governance makes of one job spec, the same YAML or JSON\n"
    "`spillway submit` takes (run, gpus, team, class, labels, data, residency,\n"
    "max_runtime, ...; docs/daemon.md):\n"
    "  - the rules it matches, in order, with their config lines;\n"
    "  - its residency, placement, spot rule and price cap;\n"
    "  - its worst case: max_runtime, else caps.default_max_runtime_s;\n"
    "  - where it may run: each allowed on-prem pool with the GPUs for it, and\n"
    "    the allowed cloud offers as the engine ranks them (cost for the work),\n"
    "    each with the worst case the engine would reserve for it (compute for\n"
    "    boot, transfer, the worst case and the daemon's billing margin, plus\n"
    "    moving its dataset there);\n"
    "  - how many pools and offers were excluded, and by which rule or residency.\n"
    "A job team with no entry in teams: is only under the organisation caps\n"
    "(a warning says so); an unknown dataset or residency is an error.\n"
    "\n"
    "  -o, --output FMT   table (default) or json (every allowed offer, not 10)\n"
    "  -h, --help         this text\n"
    "\n"
    "Example:\n"
    "  spillway policy test examples/governance.yaml examples/job-restricted.yaml\n"
    "\n"
    "Exit status: 0 it may run somewhere; 1 no place is allowed (the excluded\n"
    "list says why); 2 a bad config or job spec, or bad usage.\n";

/* ---- formatting ------------------------------------------------------------ */

/* "$5,000", "$12.50", "$0.023"; "none" for INFINITY. */
static const char *usd(double v, char *buf, size_t len)
{
    if (isinf(v)) {
        snprintf(buf, len, "none");
        return buf;
    }
    char num[64];
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(num, sizeof(num), "%.0f", v);
    else if (fabs(v) >= 1)
        snprintf(num, sizeof(num), "%.2f", v);
    else
        snprintf(num, sizeof(num), "%.4g", v);
    /* Thousands separators in the whole part. */
    const char *dot = strchr(num, '.');
    size_t whole = dot ? (size_t)(dot - num) : strlen(num), o = 0;
    char out[96];
    out[o++] = '$';
    for (size_t i = 0; i < whole; i++) {
        out[o++] = num[i];
        if ((whole - i - 1) % 3 == 0 && i + 1 < whole)
            out[o++] = ',';
    }
    snprintf(out + o, sizeof(out) - o, "%s", dot ? dot : "");
    snprintf(buf, len, "%s", out);
    return buf;
}

/* "24h", "7d", "90m", "45s", or compact mixed units. */
static const char *dur(double s, char *buf, size_t len)
{
    if (s == floor(s) && s > 0) {
        long long t = (long long)s;
        if (t % 86400 == 0 && t > 86400)
            snprintf(buf, len, "%lldd", t / 86400);
        else if (t % 3600 == 0)
            snprintf(buf, len, "%lldh", t / 3600);
        else if (t % 60 == 0)
            snprintf(buf, len, "%lldm", t / 60);
        else
            spw_cli_dur(s, buf, len);
        return buf;
    }
    return spw_cli_dur(s, buf, len);
}

static const char *num(double v, char *buf, size_t len)
{
    if (isinf(v))
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "%g", v);
    return buf;
}

/* A number, or null for INFINITY / NAN. */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jstrv(char *const *v, size_t n)
{
    if (!v)
        return json_null();
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* Appends ", "-separated text to buf. */
static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    if (used)
        used += (size_t)snprintf(buf + used, len - used, ", ");
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

static void add_list(char *buf, size_t len, const char *key, char *const *v, size_t n)
{
    if (!v)
        return;
    char items[512] = "";
    for (size_t i = 0; i < n; i++)
        add(items, sizeof(items), "%s", v[i]);
    add(buf, len, "%s %s", key, items);
}

static const char *site(const spw_fleet_t *f, const spw_site_t *s, char *buf, size_t len)
{
    if (s->pool >= 0)
        snprintf(buf, len, "%s", f->pools[s->pool].name);
    else
        snprintf(buf, len, "%s%s%s", s->provider ? s->provider : "", s->provider ? ":" : "",
                 s->region ? s->region : "?");
    return buf;
}

static uint64_t pool_gpus(const spw_pool_spec_t *p)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < p->nnodes; k++)
        n += p->node_gpus[k];
    return n;
}

static const char *model_name(const spw_fleet_t *f, int model)
{
    return model >= 0 ? f->models.name[model] : "any";
}

static const char *rfc3339(double t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/* ---- the runtime over narrowed governance ------------------------------------ */

static int bit(const uint64_t *w, size_t i)
{
    return (int)(w[i / 64] >> (i % 64) & 1);
}

static size_t count_bits(const uint64_t *w, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (size_t)bit(w, i);
    return c;
}

/* A runtime over f whose governance keeps only `rules` (borrowed) and, when
 * with_residency is 0, no residency classes.  *view borrows everything from
 * f; it must outlive the runtime and is never cleared. */
static spw_govrt_t *view_runtime(const spw_fleet_t *f, spw_fleet_t *view, const spw_rule_t *rules,
                                 size_t nrules, int with_residency)
{
    *view = *f;
    view->gov.rules = (spw_rule_t *)rules;
    view->gov.nrules = nrules;
    if (!with_residency) {
        view->gov.residencies = NULL;
        view->gov.nresidencies = 0;
    }
    return spw_govrt_create(view);
}

static void job_init(spw_job_t *j)
{
    memset(j, 0, sizeof(*j));
    j->gpus = 1;
    j->deadline_s = NAN;
    j->max_runtime_s = NAN;
    spw_job_reset(j);
}

static int lowest_bit(uint64_t v)
{
    for (int i = 0; i < 64; i++)
        if (v >> i & 1)
            return i;
    return -1;
}

/* Pools and offers a job matching only rule r (or only residency res) keeps. */
static void rule_counts(const spw_fleet_t *f, const spw_rule_t *r, int res, size_t *pools,
                        size_t *offers)
{
    spw_fleet_t view;
    spw_govrt_t *rt = view_runtime(f, &view, r, r ? 1 : 0, res >= 0);
    spw_job_t j;
    job_init(&j);
    if (r) {
        j.team = r->teams ? (uint32_t)lowest_bit(r->teams) + 1 : 0;
        j.jclass = r->classes ? (uint32_t)lowest_bit(r->classes) + 1 : 0;
        j.labels = r->labels;
        j.gpus = r->gpus_min;
    }
    j.residency = res >= 0 ? (uint32_t)res + 1 : 0;
    const spw_profile_t *p = spw_govrt_profile(rt, spw_govrt_profile_of(rt, &j));
    *pools = count_bits(p->pools, f->npools);
    *offers = count_bits(p->offers, f->noffers);
    spw_govrt_destroy(rt);
}

/* ---- describing the spec ------------------------------------------------------ */

static void match_text(const spw_gov_t *g, const spw_rule_t *r, char *buf, size_t len)
{
    buf[0] = '\0';
    char part[512];
    if (r->teams) {
        part[0] = '\0';
        for (size_t t = 0; t < g->nteams && t < 64; t++)
            if (r->teams >> t & 1)
                add(part, sizeof(part), "%s", g->teams[t].name);
        add(buf, len, "team %s", part);
    }
    if (r->classes) {
        part[0] = '\0';
        for (size_t c = 0; c < g->nclasses && c < 64; c++)
            if (r->classes >> c & 1)
                add(part, sizeof(part), "%s", g->classes[c]);
        add(buf, len, "class %s", part);
    }
    if (r->labels) {
        part[0] = '\0';
        for (size_t l = 0; l < g->nlabels && l < 64; l++)
            if (r->labels >> l & 1)
                add(part, sizeof(part), "%s", g->labels[l]);
        add(buf, len, "labels %s", part);
    }
    if (r->gpus_min != 1 || r->gpus_max != UINT32_MAX) {
        if (r->gpus_max == UINT32_MAX)
            add(buf, len, "gpus >=%u", r->gpus_min);
        else if (r->gpus_min == 1)
            add(buf, len, "gpus <=%u", r->gpus_max);
        else if (r->gpus_min == r->gpus_max)
            add(buf, len, "gpus %u", r->gpus_min);
        else
            add(buf, len, "gpus %u-%u", r->gpus_min, r->gpus_max);
    }
    if (!buf[0])
        snprintf(buf, len, "every job");
}

static void effect_text(const spw_rule_t *r, char *buf, size_t len)
{
    char m[32];
    buf[0] = '\0';
    if (r->placement != SPW_PLACE_UNSET)
        add(buf, len, "placement %s", spw_placement_name(r->placement));
    if (r->spot != SPW_SPOT_UNSET)
        add(buf, len, "spot %s", spw_spot_rule_name(r->spot));
    add_list(buf, len, "allow_providers", r->allow_providers, r->n_allow_providers);
    add_list(buf, len, "deny_providers", r->deny_providers, r->n_deny_providers);
    add_list(buf, len, "allow_regions", r->allow_regions, r->n_allow_regions);
    add_list(buf, len, "deny_regions", r->deny_regions, r->n_deny_regions);
    add_list(buf, len, "allow_families", r->allow_families, r->n_allow_families);
    add_list(buf, len, "deny_families", r->deny_families, r->n_deny_families);
    add_list(buf, len, "allow_gpus", r->allow_gpus, r->n_allow_gpus);
    if (!isinf(r->max_usd_per_gpu_h))
        add(buf, len, "at most %s/GPU-h", usd(r->max_usd_per_gpu_h, m, sizeof(m)));
}

static json_t *rule_json(const spw_gov_t *g, const spw_rule_t *r, size_t idx, size_t pools,
                         size_t offers)
{
    json_t *teams = json_array(), *classes = json_array(), *labels = json_array();
    for (size_t t = 0; t < g->nteams && t < 64; t++)
        if (r->teams >> t & 1)
            json_array_append_new(teams, json_string(g->teams[t].name));
    for (size_t c = 0; c < g->nclasses && c < 64; c++)
        if (r->classes >> c & 1)
            json_array_append_new(classes, json_string(g->classes[c]));
    for (size_t l = 0; l < g->nlabels && l < 64; l++)
        if (r->labels >> l & 1)
            json_array_append_new(labels, json_string(g->labels[l]));
    json_t *match = json_pack("{s:o,s:o,s:o,s:I,s:o}", "teams", teams, "classes", classes,
                              "labels", labels, "gpus_min", (json_int_t)r->gpus_min, "gpus_max",
                              r->gpus_max == UINT32_MAX ? json_null()
                                                        : json_integer(r->gpus_max));
    json_t *o = json_pack("{s:I,s:s,s:I,s:o}", "index", (json_int_t)idx + 1, "name", r->name,
                          "line", (json_int_t)r->line, "match", match);
    json_object_set_new(o, "placement", r->placement == SPW_PLACE_UNSET
                                            ? json_null()
                                            : json_string(spw_placement_name(r->placement)));
    json_object_set_new(o, "spot", r->spot == SPW_SPOT_UNSET
                                       ? json_null()
                                       : json_string(spw_spot_rule_name(r->spot)));
    json_object_set_new(o, "allow_providers", jstrv(r->allow_providers, r->n_allow_providers));
    json_object_set_new(o, "deny_providers", jstrv(r->deny_providers, r->n_deny_providers));
    json_object_set_new(o, "allow_regions", jstrv(r->allow_regions, r->n_allow_regions));
    json_object_set_new(o, "deny_regions", jstrv(r->deny_regions, r->n_deny_regions));
    json_object_set_new(o, "allow_families", jstrv(r->allow_families, r->n_allow_families));
    json_object_set_new(o, "deny_families", jstrv(r->deny_families, r->n_deny_families));
    json_object_set_new(o, "allow_gpus", jstrv(r->allow_gpus, r->n_allow_gpus));
    json_object_set_new(o, "max_usd_per_gpu_h", jnum(r->max_usd_per_gpu_h));
    json_object_set_new(o, "pools_allowed", json_integer((json_int_t)pools));
    json_object_set_new(o, "offers_allowed", json_integer((json_int_t)offers));
    return o;
}

/* ---- options -------------------------------------------------------------------- */

/* Parses -o/-h and the positional arguments (exactly npos of them); exits
 * on bad usage. */
static int parse_args(int argc, char **argv, const char *cmd, const char *usage, int npos,
                      const char **pos)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (strcmp(optarg, "json") == 0)
                json = 1;
            else if (strcmp(optarg, "table") == 0)
                json = 0;
            else
                spw_cli_die_usage(cmd, "-o takes 'table' or 'json'");
            break;
        case 'h':
            fputs(usage, stdout);
            exit(0);
        default: spw_cli_die_usage(cmd, "unknown option");
        }
    }
    if (argc - optind != npos)
        spw_cli_die_usage(cmd, npos == 1 ? "give one CONFIG file"
                                         : "give a CONFIG file and a JOB spec file");
    for (int i = 0; i < npos; i++)
        pos[i] = argv[optind + i];
    return json;
}

static int load(spw_config_t *cfg, const char *path, const char *cmd)
{
    spw_error_t err;
    if (spw_config_load(cfg, path, &err) < 0) {
        fprintf(stderr, "spillway %s: %s\n", cmd, err.text);
        return -1;
    }
    return 0;
}

/* ---- check ------------------------------------------------------------------------ */

/* Quotas, weights and cohorts (docs/fairshare.md), when any is set. */
static void fair_table(const spw_config_t *cfg)
{
    const spw_gov_t *g = &cfg->fleet.gov;
    int any = cfg->policy.queue == SPW_QUEUE_FAIR || g->ncohorts;
    for (size_t i = 0; i < g->nteams; i++)
        any |= g->teams[i].has_quota;
    if (!any)
        return;
    char a[32], b[32], c[32], w[32];
    printf("\nfair share (docs/fairshare.md): queue %s, half-life %s, reclaim grace %s\n",
           spw_queue_order_name(cfg->policy.queue), dur(cfg->policy.half_life_s, a, sizeof(a)),
           dur(cfg->policy.reclaim_grace_s, b, sizeof(b)));
    spw_table_t *t = spw_table_create("team|>quota GPUs|>borrowing limit|>lending limit|cohort|>weight");
    for (size_t i = 0; i < g->nteams; i++) {
        const spw_team_spec_t *s = &g->teams[i];
        snprintf(w, sizeof(w), "%g", s->weight > 0 ? s->weight : 1);
        spw_table_row(t, s->name, s->has_quota ? num(s->quota_gpus, a, sizeof(a)) : "0 (none)",
                      num(s->borrowing_limit_gpus, b, sizeof(b)),
                      s->has_quota ? num(s->lending_limit_gpus < s->quota_gpus
                                             ? s->lending_limit_gpus : s->quota_gpus, c, sizeof(c))
                                   : "-",
                      s->cohort && s->cohort <= g->ncohorts ? g->cohorts[s->cohort - 1].name : "-",
                      w);
    }
    spw_table_print(t, stdout, 2);
    spw_table_destroy(t);
    for (size_t i = 0; i < g->ncohorts; i++)
        printf("  cohort %s: parent %s, weight %g\n", g->cohorts[i].name,
               g->cohorts[i].parent >= 0 ? g->cohorts[g->cohorts[i].parent].name : "none (a root)",
               g->cohorts[i].weight);
}

static void check_table(const char *path, const spw_config_t *cfg, const size_t *rp,
                        const size_t *ro, const size_t *sp, const size_t *so)
{
    const spw_fleet_t *f = &cfg->fleet;
    const spw_gov_t *g = &f->gov;
    char a[64], b[64], c[64], d[64], e[64], line[32];
    printf("%s: valid\n", path);
    printf("fleet: %zu on-prem pool%s", f->npools, f->npools == 1 ? "" : "s");
    for (size_t i = 0; i < f->npools; i++)
        printf("%s%s: %llu x %s", i ? ", " : " (", f->pools[i].name,
               (unsigned long long)pool_gpus(&f->pools[i]), model_name(f, f->pools[i].model));
    printf("%s; %zu cloud offer%s\n", f->npools ? ")" : "", f->noffers, f->noffers == 1 ? "" : "s");
    if (!spw_gov_active(g)) {
        printf("\nno governance configured: every pool and offer is allowed and nothing is "
               "capped.\nAdd teams:, caps:, rules:, residency: or data: (docs/governance.md).\n");
        return;
    }
    printf("budget calendar: trace time 0 of `spillway sim` is %s%s; the daemon uses real time\n",
           rfc3339(g->origin_s, a, sizeof(a)), g->origin_s == 0 ? " (no sim.start given)" : "");

    printf("\nteams (%zu):\n", g->nteams);
    if (g->nteams) {
        spw_table_t *t = spw_table_create("team|>budget|period|on_exhausted|>max cloud $/h|"
                                          ">max cloud GPUs|>max cloud egress $/month|>line");
        for (size_t i = 0; i < g->nteams; i++) {
            const spw_team_spec_t *s = &g->teams[i];
            snprintf(line, sizeof(line), "%d", s->line);
            spw_table_row(t, s->name, usd(s->budget_usd, a, sizeof(a)),
                          isinf(s->budget_usd) ? "-" : spw_period_name(s->period),
                          spw_exhausted_name(s->on_exhausted),
                          usd(s->max_cloud_usd_per_h, b, sizeof(b)),
                          num(s->max_cloud_gpus, c, sizeof(c)),
                          usd(s->max_egress_usd_per_month, d, sizeof(d)), line);
        }
        spw_table_print(t, stdout, 2);
        spw_table_destroy(t);
    } else {
        printf("  none: no team has a budget; jobs are only under the organisation caps\n");
    }
    printf("  (a job whose team is not listed is only under the organisation caps)\n");
    fair_table(cfg);
    printf("  (budgets and caps hold cloud placements: their compute, and the egress and cache\n"
           "   storage of copying their data into the cloud; the egress cap holds every egress\n"
           "   dollar of the team per calendar month, copies into on-prem pools too: such a\n"
           "   copy waits for the cap, and counts against no budget)\n");

    printf("\norganisation caps:\n  max cloud $/h: %s   max cloud GPUs: %s   "
           "worst case of a job without max_runtime: %s\n",
           usd(g->max_cloud_usd_per_h, a, sizeof(a)), num(g->max_cloud_gpus, b, sizeof(b)),
           dur(g->default_max_runtime_s, c, sizeof(c)));

    printf("\nresidency classes (%zu):\n", g->nresidencies);
    if (g->nresidencies) {
        spw_table_t *t = spw_table_create("class|on-prem|regions|>pools|>offers|>line");
        for (size_t i = 0; i < g->nresidencies; i++) {
            const spw_residency_spec_t *r = &g->residencies[i];
            char regions[512] = "";
            for (size_t k = 0; k < r->nregions; k++)
                add(regions, sizeof(regions), "%s", r->regions[k]);
            snprintf(a, sizeof(a), "%zu", sp[i]);
            snprintf(b, sizeof(b), "%zu", so[i]);
            snprintf(line, sizeof(line), "%d", r->line);
            spw_table_row(t, r->name, r->onprem ? "yes" : "no", regions, a, b, line);
        }
        spw_table_print(t, stdout, 2);
        spw_table_destroy(t);
        printf("  (a job gets a class's residency with class: NAME or residency: NAME)\n");
    } else {
        printf("  none\n");
    }

    printf("\ndata: %g Gbit/s between sites; copies cached %s at %s/GB-month; egress $/GB: "
           "aws %g, gcp %g, azure %g, on-prem %g\n",
           g->bandwidth_gbps, dur(g->cache_ttl_s, a, sizeof(a)),
           usd(g->storage_usd_per_gb_month, b, sizeof(b)), g->egress_aws_usd_per_gb,
           g->egress_gcp_usd_per_gb, g->egress_azure_usd_per_gb, g->egress_onprem_usd_per_gb);
    if (g->ndatasets) {
        spw_table_t *t = spw_table_create("dataset|>size|home|replicas|>line");
        for (size_t i = 0; i < g->ndatasets; i++) {
            const spw_dataset_spec_t *s = &g->datasets[i];
            char reps[512] = "";
            for (size_t k = 0; k < s->nreplicas; k++)
                add(reps, sizeof(reps), "%s", site(f, &s->replicas[k], e, sizeof(e)));
            snprintf(a, sizeof(a), "%g GB", s->size_gb);
            snprintf(line, sizeof(line), "%d", s->line);
            spw_table_row(t, s->name, a, site(f, &s->home, b, sizeof(b)), reps, line);
        }
        spw_table_print(t, stdout, 2);
        spw_table_destroy(t);
    } else {
        printf("  no datasets\n");
    }

    printf("\nrules (%zu), applied in order to every job they match; a later placement or spot\n"
           "overrides an earlier one, lists and price caps only narrow:\n", g->nrules);
    if (!g->nrules)
        printf("  none: every job may use every pool and offer\n");
    for (size_t i = 0; i < g->nrules; i++) {
        const spw_rule_t *r = &g->rules[i];
        char m[1024], fx[2048];
        match_text(g, r, m, sizeof(m));
        effect_text(r, fx, sizeof(fx));
        printf("  %zu. %s (line %d)\n", i + 1, r->name, r->line);
        printf("     match:  %s\n", m);
        printf("     effect: %s\n", fx);
        printf("     leaves: %zu of %zu pools, %zu of %zu offers\n", rp[i], f->npools, ro[i],
               f->noffers);
    }
}

static void check_json(const char *path, const spw_config_t *cfg, const size_t *rp,
                       const size_t *ro, const size_t *sp, const size_t *so)
{
    const spw_fleet_t *f = &cfg->fleet;
    const spw_gov_t *g = &f->gov;
    char buf[64];
    json_t *pools = json_array();
    for (size_t i = 0; i < f->npools; i++)
        json_array_append_new(pools, json_pack("{s:s,s:I,s:s}", "name", f->pools[i].name, "gpus",
                                               (json_int_t)pool_gpus(&f->pools[i]), "gpu",
                                               model_name(f, f->pools[i].model)));
    json_t *teams = json_array();
    for (size_t i = 0; i < g->nteams; i++) {
        const spw_team_spec_t *t = &g->teams[i];
        json_t *o = json_pack("{s:s,s:I,s:o,s:s,s:s,s:o,s:o,s:o}", "name", t->name, "line",
                              (json_int_t)t->line, "budget_usd", jnum(t->budget_usd), "period",
                              spw_period_name(t->period), "on_exhausted",
                              spw_exhausted_name(t->on_exhausted), "max_cloud_usd_per_h",
                              jnum(t->max_cloud_usd_per_h), "max_cloud_gpus",
                              jnum(t->max_cloud_gpus), "max_cloud_egress_usd_per_month",
                              jnum(t->max_egress_usd_per_month));
        json_array_append_new(teams, o);
    }
    json_t *res = json_array();
    for (size_t i = 0; i < g->nresidencies; i++) {
        const spw_residency_spec_t *r = &g->residencies[i];
        json_array_append_new(res, json_pack("{s:s,s:I,s:b,s:o,s:I,s:I}", "name", r->name, "line",
                                             (json_int_t)r->line, "onprem", r->onprem, "regions",
                                             jstrv(r->regions, r->nregions), "pools_allowed",
                                             (json_int_t)sp[i], "offers_allowed",
                                             (json_int_t)so[i]));
    }
    json_t *ds = json_array();
    for (size_t i = 0; i < g->ndatasets; i++) {
        const spw_dataset_spec_t *s = &g->datasets[i];
        json_t *reps = json_array();
        for (size_t k = 0; k < s->nreplicas; k++)
            json_array_append_new(reps, json_string(site(f, &s->replicas[k], buf, sizeof(buf))));
        json_array_append_new(ds, json_pack("{s:s,s:I,s:f,s:s,s:o}", "name", s->name, "line",
                                            (json_int_t)s->line, "size_gb", s->size_gb, "home",
                                            site(f, &s->home, buf, sizeof(buf)), "replicas", reps));
    }
    json_t *data = json_pack("{s:f,s:f,s:f,s:{s:f,s:f,s:f,s:f},s:o}", "bandwidth_gbps",
                             g->bandwidth_gbps, "cache_ttl_s", g->cache_ttl_s,
                             "storage_usd_per_gb_month", g->storage_usd_per_gb_month,
                             "egress_usd_per_gb", "aws", g->egress_aws_usd_per_gb, "gcp",
                             g->egress_gcp_usd_per_gb, "azure", g->egress_azure_usd_per_gb,
                             "onprem", g->egress_onprem_usd_per_gb, "datasets", ds);
    json_t *rules = json_array();
    for (size_t i = 0; i < g->nrules; i++)
        json_array_append_new(rules, rule_json(g, &g->rules[i], i, rp[i], ro[i]));
    json_t *caps = json_pack("{s:o,s:o,s:f}", "max_cloud_usd_per_h", jnum(g->max_cloud_usd_per_h),
                             "max_cloud_gpus", jnum(g->max_cloud_gpus), "default_max_runtime_s",
                             g->default_max_runtime_s);
    json_t *doc = json_pack("{s:s,s:b,s:b,s:f,s:s,s:{s:o,s:I},s:o,s:o,s:o,s:o,s:o}", "config",
                            path, "valid", 1, "active", spw_gov_active(g), "origin_s",
                            g->origin_s, "sim_start", rfc3339(g->origin_s, buf, sizeof(buf)),
                            "fleet", "pools", pools, "offers", (json_int_t)f->noffers, "teams",
                            teams, "caps", caps, "residency", res, "data", data, "rules", rules);
    spw_cli_json_print(stdout, doc);
    json_decref(doc);
}

/* Whether bit set `set` of n bits has any bit. */
static int any_bit(const uint64_t *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i >> 6] >> (i & 63) & 1)
            return 1;
    return 0;
}

/* Classes the rules and residency leave nowhere to run (no pool, no offer)
 * for a job of that class alone or of it and some team: one line each on
 * stderr.  Returns how many. */
static size_t classes_nowhere(const spw_config_t *cfg, const char *path)
{
    const spw_fleet_t *f = &cfg->fleet;
    const spw_gov_t *g = &f->gov;
    spw_govrt_t *rt = spw_govrt_create(f);
    size_t bad = 0;
    for (size_t k = 0; k < g->nclasses; k++)
        for (size_t t = 0; t <= g->nteams; t++) {
            spw_job_t j;
            job_init(&j);
            j.jclass = (uint32_t)k + 1;
            j.team = (uint32_t)t;
            const spw_profile_t *p = spw_govrt_profile(rt, spw_govrt_profile_of(rt, &j));
            if (any_bit(p->pools, f->npools) || any_bit(p->offers, f->noffers))
                continue;
            fprintf(stderr, "spillway policy check: %s: class '%s'%s%s: its rules and residency "
                            "leave no pool and no cloud offer: its jobs can run nowhere\n",
                    path, g->classes[k], t ? " of team " : "", t ? g->teams[t - 1].name : "");
            bad++;
            break;
        }
    spw_govrt_destroy(rt);
    return bad;
}

static int cmd_check(int argc, char **argv)
{
    const char *path;
    int json = parse_args(argc, argv, "policy check", check_usage, 1, &path);
    spw_config_t cfg;
    if (load(&cfg, path, "policy check") < 0)
        return 2;
    const spw_fleet_t *f = &cfg.fleet;
    const spw_gov_t *g = &f->gov;
    size_t *rp = spw_xcalloc(g->nrules + 1, sizeof(size_t));
    size_t *ro = spw_xcalloc(g->nrules + 1, sizeof(size_t));
    size_t *sp = spw_xcalloc(g->nresidencies + 1, sizeof(size_t));
    size_t *so = spw_xcalloc(g->nresidencies + 1, sizeof(size_t));
    for (size_t i = 0; i < g->nrules; i++)
        rule_counts(f, &g->rules[i], -1, &rp[i], &ro[i]);
    for (size_t i = 0; i < g->nresidencies; i++)
        rule_counts(f, NULL, (int)i, &sp[i], &so[i]);
    size_t nowhere = classes_nowhere(&cfg, path);
    if (json)
        check_json(path, &cfg, rp, ro, sp, so);
    else if (!nowhere)
        check_table(path, &cfg, rp, ro, sp, so);
    free(rp);
    free(ro);
    free(sp);
    free(so);
    spw_config_free(&cfg);
    if (spw_cli_flush("policy check"))
        return 2;
    return nowhere ? 1 : 0;
}

/* ---- test ------------------------------------------------------------------------- */

/* One place the job may run. */
typedef struct place {
    size_t idx;            /* pool or offer index */
    uint32_t instances;    /* cloud instances (0 on-prem) */
    double usd_per_h;      /* all of it: instances x price, or GPUs x pool cost */
    double egress_usd;     /* moving its dataset there (and caching it) */
    double gb;             /* gigabytes moved */
    double transfer_s;     /* time moving them */
    double total_usd;      /* the worst case, dollars: on-prem usd_per_h x
                              worst case + egress; cloud what the engine
                              reserves (spw_engine_worst_usd: boot and
                              transfer and the daemon's margin too) */
    double work_usd;       /* cost for the work: usd_per_h x the estimate at
                              its GPU's speed (+ egress under gravity), the
                              engine's rank of cloud offers */
} place_t;

static int place_cmp(const void *a, const void *b)
{
    const place_t *x = a, *y = b;
    if (x->total_usd != y->total_usd)
        return x->total_usd < y->total_usd ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Cloud offers in the engine's order: cost for the work, then fleet order. */
static int work_cmp(const void *a, const void *b)
{
    const place_t *x = a, *y = b;
    if (x->work_usd != y->work_usd)
        return x->work_usd < y->work_usd ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Why some pools or offers are out. */
typedef struct excl {
    int offers;            /* 1 offers, 0 pools */
    size_t count;
    char reason[200];
    int rule;              /* rule index, or -1 */
} excl_t;

typedef struct test_ctx {
    spw_config_t cfg;
    spw_jobspec_t spec;
    spw_job_t job;
    const char *config_path, *job_path;
    double worst_s;        /* the cloud worst case, seconds */
    int worst_default;     /* 1: from caps.default_max_runtime_s */
    int residency;         /* in force: index or -1 */
    int residency_by_class;
    spw_govrt_t *rt;       /* over the whole governance */
    const spw_profile_t *prof;
    size_t matched[SPW_GOV_MAX_RULES];
    size_t nmatched;
    place_t *pools, *offers;
    size_t npools, noffers;
    excl_t ex[SPW_GOV_MAX_RULES + 16];
    size_t nex;
    int no_burst;          /* policy wait: never */
    int engine_offer;      /* the offer the engine buys for it first (the
                              daemon's choice on an idle fleet), -1 = none */
    char engine_why[160];  /* the engine's own words for that choice, or why
                              it buys none */
    double reserve_extra_s; /* seconds the daemon may bill past max_runtime,
                               in every cloud worst case */
} test_ctx_t;

static void excl_add(test_ctx_t *c, int offers, size_t count, int rule, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void excl_add(test_ctx_t *c, int offers, size_t count, int rule, const char *fmt, ...)
{
    if (!count || c->nex == sizeof(c->ex) / sizeof(c->ex[0]))
        return;
    excl_t *e = &c->ex[c->nex++];
    e->offers = offers;
    e->count = count;
    e->rule = rule;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
    va_end(ap);
}

/* The job's GPU models as a mask over the fleet's (interning a name such as
 * "A100" that a fleet model like "A100-80GB" answers to); -1 when none. */
static int job_mask(test_ctx_t *c, spw_error_t *err)
{
    spw_models_t *m = &c->cfg.fleet.models;
    const spw_jobspec_t *s = &c->spec;
    uint64_t mask = 0;
    for (size_t i = 0; i < s->n_gpu_models; i++) {
        const char *want = s->gpu_models[i];
        int k = spw_models_find(m, want);
        if (k < 0) {
            int any = 0;
            for (int h = 0; h < m->n && !any; h++)
                any = spw_model_accepts(want, m->name[h]);
            if (!any)
                continue;
            if ((k = spw_models_intern(m, want, strlen(want), err)) < 0)
                return -1;
        }
        mask |= 1ull << k;
    }
    if (s->n_gpu_models && !mask) {
        char have[160] = "";
        for (int h = 0; h < m->n; h++)
            add(have, sizeof(have), "%s", m->name[h]);
        return spw_errorf(err, "%s: gpus: no pool or cloud offer has GPU model %s (the fleet "
                               "has: %s)", c->job_path, s->gpu_models[0],
                          m->n ? have : "no named models");
    }
    c->job.gpu_mask = mask;
    return 0;
}

static int model_ok(const spw_fleet_t *f, uint64_t mask, int model)
{
    if (!mask || model < 0)
        return 1;
    for (int k = 0; k < f->models.n; k++)
        if ((mask >> k & 1) && spw_model_accepts(f->models.name[k], f->models.name[model]))
            return 1;
    return 0;
}

/* Fills c->job from the spec's names; -1 with err on an unknown dataset or
 * residency.  Warnings go to stderr. */
static int resolve_job(test_ctx_t *c, spw_error_t *err)
{
    const spw_gov_t *g = &c->cfg.fleet.gov;
    const spw_jobspec_t *s = &c->spec;
    spw_job_t *j = &c->job;
    char known[200] = "";
    job_init(j);
    j->id = s->name ? s->name : c->job_path;
    j->gpus = s->gpus;
    j->max_runtime_s = s->max_runtime_s;
    /* As the daemon submits it (daemon/submit.c). */
    j->est_runtime_s = isnan(s->est_runtime_s) ? c->cfg.daemon.default_est_runtime_s
                                               : s->est_runtime_s;
    j->gpus_per_node = s->gpus_per_node;
    j->deadline_s = s->deadline_s;
    j->priority = s->priority;
    if (job_mask(c, err) < 0)
        return -1;
    if (s->team) {
        int t = spw_gov_team(g, s->team);
        if (t < 0)
            fprintf(stderr, "spillway policy test: warning: team '%s' has no budget in %s; only "
                            "organisation caps apply\n", s->team, c->config_path);
        else
            j->team = (uint32_t)t + 1;
    }
    if (s->jclass) {
        int k = spw_gov_class(g, s->jclass);
        if (k < 0)
            fprintf(stderr, "spillway policy test: warning: class '%s' is named by no rule or "
                            "residency in %s; it changes nothing\n", s->jclass, c->config_path);
        else
            j->jclass = (uint32_t)k + 1;
    }
    for (size_t i = 0; i < s->nlabels; i++) {
        char kv[300];
        snprintf(kv, sizeof(kv), "%s=%s", s->labels[i].key, s->labels[i].value);
        int k = spw_gov_label(g, kv);
        if (k >= 0)
            j->labels |= 1ull << k;
    }
    if (s->data) {
        int k = spw_gov_dataset(g, s->data);
        if (k < 0) {
            for (size_t i = 0; i < g->ndatasets; i++)
                add(known, sizeof(known), "%s", g->datasets[i].name);
            return spw_errorf(err, "%s: data: dataset '%s' is not in %s (known: %s)",
                              c->job_path, s->data, c->config_path,
                              g->ndatasets ? known : "none; add it under data.datasets");
        }
        j->data = (uint32_t)k + 1;
    }
    if (s->residency) {
        int k = spw_gov_residency(g, s->residency);
        if (k < 0) {
            for (size_t i = 0; i < g->nresidencies; i++)
                add(known, sizeof(known), "%s", g->residencies[i].name);
            return spw_errorf(err, "%s: residency: '%s' is not a residency class of %s (known: "
                                   "%s)", c->job_path, s->residency, c->config_path,
                              g->nresidencies ? known : "none; add it under residency:");
        }
        j->residency = (uint32_t)k + 1;
    }
    c->residency = j->residency ? (int)j->residency - 1 : -1;
    if (c->residency < 0 && j->jclass) {
        c->residency = spw_gov_residency(g, g->classes[j->jclass - 1]);
        c->residency_by_class = c->residency >= 0;
    }
    c->worst_default = isnan(j->max_runtime_s);
    c->worst_s = c->worst_default ? g->default_max_runtime_s : j->max_runtime_s;
    return 0;
}

/* Asks the engine itself, with the daemon's policy, on an idle fleet at
 * time 0, which offer it would buy for the job (spw_engine_explain, the
 * daemon's `explain`) and what each offer's worst case reserves
 * (spw_engine_worst_usd, the figure explain gives), and moves that offer to
 * the front of c->offers: the preview shows the placement the engine
 * makes, not a ranking or a price of its own. */
static void engine_first(test_ctx_t *c, int spot)
{
    c->engine_offer = -1;
    snprintf(c->engine_why, sizeof(c->engine_why), "it buys no cloud offer for it");
    spw_error_t err;
    spw_policy_t pol = spw_config_daemon_policy(&c->cfg);
    c->reserve_extra_s = pol.reserve_extra_s;
    spw_engine_t *e = spw_engine_create(&c->cfg.fleet, &pol, &err);
    if (!e) {
        snprintf(c->engine_why, sizeof(c->engine_why), "%.150s", err.text);
        return;
    }
    spw_job_t j = c->job;
    j.deadline_s = NAN;   /* the spec's is a unix time; the preview has none */
    for (size_t i = 0; i < c->noffers; i++)
        c->offers[i].total_usd = spw_engine_worst_usd(e, &j, c->offers[i].idx, spot, 0);
    size_t n = spw_engine_explain(e, &j, 0, NULL, 0);
    spw_candidate_t *cand = spw_xmalloc((n ? n : 1) * sizeof(*cand));
    n = spw_engine_explain(e, &j, 0, cand, n);
    for (size_t i = 0; i < n; i++) {
        if (cand[i].kind == SPW_CAND_CLOUD && cand[i].ok) {
            c->engine_offer = cand[i].index;
            snprintf(c->engine_why, sizeof(c->engine_why), "%s", cand[i].why);
        } else if (cand[i].kind == SPW_CAND_WAIT && c->engine_offer < 0) {
            snprintf(c->engine_why, sizeof(c->engine_why), "%s", cand[i].why);
        }
    }
    free(cand);
    spw_engine_destroy(e);
    for (size_t i = 0; i < c->noffers; i++)
        if ((int)c->offers[i].idx == c->engine_offer) {
            place_t first = c->offers[i];
            memmove(c->offers + 1, c->offers, i * sizeof(place_t));
            c->offers[0] = first;
            break;
        }
}

/* Works out where the job may run and what excluded the rest. */
static void place_job(test_ctx_t *c)
{
    const spw_fleet_t *f = &c->cfg.fleet;
    const spw_gov_t *g = &f->gov;
    spw_job_t *j = &c->job;
    c->rt = spw_govrt_create(f);
    c->prof = spw_govrt_profile(c->rt, spw_govrt_profile_of(c->rt, j));
    for (size_t r = 0; r < g->nrules; r++)
        if (c->prof->matched[r / 64] >> (r % 64) & 1)
            c->matched[c->nmatched++] = r;
    c->no_burst = c->cfg.policy.wait.kind == SPW_WAIT_NEVER;

    /* What can hold the job at all: its GPU model, and enough GPUs on-prem. */
    uint8_t *pool_fit = spw_xcalloc(f->npools + 1, 1), *offer_fit = spw_xcalloc(f->noffers + 1, 1);
    size_t no_model = 0, too_small = 0, no_model_offers = 0;
    for (size_t i = 0; i < f->npools; i++) {
        if (!model_ok(f, j->gpu_mask, f->pools[i].model))
            no_model++;
        else if (j->gpus > pool_gpus(&f->pools[i]))
            too_small++;
        else
            pool_fit[i] = 1;
    }
    for (size_t i = 0; i < f->noffers; i++) {
        if (model_ok(f, j->gpu_mask, f->offers[i].model))
            offer_fit[i] = 1;
        else
            no_model_offers++;
    }
    char models[160] = "";
    for (size_t i = 0; i < c->spec.n_gpu_models; i++)
        add(models, sizeof(models), "%s", c->spec.gpu_models[i]);
    excl_add(c, 0, no_model, -1, "another GPU model than %s", models);
    excl_add(c, 0, too_small, -1, "fewer than %u GPUs in the whole pool", j->gpus);
    excl_add(c, 1, no_model_offers, -1, "another GPU model than %s", models);

    /* The rules it matched, applied one more at a time (without residency):
     * a place is charged to the rule after which it stays excluded. */
    size_t m = c->nmatched, ow = (f->noffers + 63) / 64, pw = (f->npools + 63) / 64;
    uint64_t *offers = spw_xcalloc((m + 1) * ow + 1, sizeof(uint64_t));
    uint64_t *pools = spw_xcalloc((m + 1) * pw + 1, sizeof(uint64_t));
    spw_rule_t *rules = spw_xcalloc(m + 1, sizeof(spw_rule_t));
    spw_job_t bare = *j;
    bare.residency = 0;
    for (size_t k = 0; k <= m; k++) {
        if (k)
            rules[k - 1] = g->rules[c->matched[k - 1]];  /* shallow: borrowed */
        spw_fleet_t view;
        spw_govrt_t *rt = view_runtime(f, &view, rules, k, 0);
        const spw_profile_t *p = spw_govrt_profile(rt, spw_govrt_profile_of(rt, &bare));
        memcpy(offers + k * ow, p->offers, ow * sizeof(uint64_t));
        memcpy(pools + k * pw, p->pools, pw * sizeof(uint64_t));
        spw_govrt_destroy(rt);
    }
    size_t *by_rule_o = spw_xcalloc(m + 1, sizeof(size_t)), *by_rule_p = spw_xcalloc(m + 1, sizeof(size_t));
    size_t by_res_o = 0, by_res_p = 0, by_policy = 0, by_gang = 0;
    const spw_profile_t *fin = c->prof;
    c->pools = spw_xcalloc(f->npools + 1, sizeof(place_t));
    c->offers = spw_xcalloc(f->noffers + 1, sizeof(place_t));
    double worst_h = c->worst_s / 3600;
    int dataset = j->data ? (int)j->data - 1 : -1;
    for (size_t i = 0; i < f->npools; i++) {
        if (!pool_fit[i])
            continue;
        if (!bit(fin->pools, i)) {
            if (bit(pools + m * pw, i)) {
                by_res_p++;
            } else {
                size_t k = m;
                while (k > 0 && !bit(pools + (k - 1) * pw, i))
                    k--;
                by_rule_p[k ? k - 1 : 0]++;
            }
            continue;
        }
        place_t *pl = &c->pools[c->npools++];
        pl->idx = i;
        pl->usd_per_h = f->pools[i].cost_usd_per_gpu_h * j->gpus;
        if (dataset >= 0)
            pl->egress_usd = spw_govrt_data_cost(c->rt, dataset, (int)i, -1, 0, &pl->gb,
                                                 &pl->transfer_s);
        pl->total_usd = pl->usd_per_h * worst_h + pl->egress_usd;
    }
    int spot = fin->spot == SPW_SPOT_REQUIRED;
    for (size_t i = 0; i < f->noffers; i++) {
        if (!offer_fit[i])
            continue;
        if (!bit(fin->offers, i)) {
            if (bit(offers + m * ow, i)) {
                by_res_o++;
            } else {
                size_t k = m;
                while (k > 0 && !bit(offers + (k - 1) * ow, i))
                    k--;
                by_rule_o[k ? k - 1 : 0]++;
            }
            continue;
        }
        if (c->no_burst) {
            by_policy++;
            continue;
        }
        const spw_offer_t *o = &f->offers[i];
        /* The gang rule (engine.c offer_fits_gang): a job on one node
         * needs one instance with all its GPUs. */
        if (o->model >= 0 && j->gpus > o->gpus &&
            !(j->gpus_per_node > 0 && o->gpus >= j->gpus_per_node)) {
            by_gang++;
            continue;
        }
        place_t *pl = &c->offers[c->noffers++];
        pl->idx = i;
        pl->instances = (j->gpus + o->gpus - 1) / o->gpus;
        pl->usd_per_h = pl->instances * (spot ? o->spot_usd_per_h : o->ondemand_usd_per_h);
        if (dataset >= 0)
            pl->egress_usd = spw_govrt_data_cost(c->rt, dataset, -1, (int)i, 0, &pl->gb,
                                                 &pl->transfer_s);
        pl->total_usd = NAN;   /* the engine's figure: engine_first */
        uint32_t pc = spw_fleet_perf_class(f, j->jclass) ? j->jclass : 0;
        pl->work_usd = pl->usd_per_h * j->est_runtime_s / 3600.0 /
                           spw_fleet_class_speed(f, pc, o->model) +
                       (c->cfg.policy.gravity ? pl->egress_usd : 0);
    }
    qsort(c->pools, c->npools, sizeof(place_t), place_cmp);
    qsort(c->offers, c->noffers, sizeof(place_t), work_cmp);
    engine_first(c, spot);
    for (size_t k = 0; k < m; k++) {
        const spw_rule_t *r = &g->rules[c->matched[k]];
        excl_add(c, 0, by_rule_p[k], (int)c->matched[k], "by rule '%s' (line %d)", r->name,
                 r->line);
        excl_add(c, 1, by_rule_o[k], (int)c->matched[k], "by rule '%s' (line %d)", r->name,
                 r->line);
    }
    if (c->residency >= 0) {
        const spw_residency_spec_t *rs = &g->residencies[c->residency];
        excl_add(c, 0, by_res_p, -1, "by residency '%s' (line %d)", rs->name, rs->line);
        excl_add(c, 1, by_res_o, -1, "by residency '%s' (line %d)", rs->name, rs->line);
    }
    excl_add(c, 1, by_policy, -1, "by the policy: wait: never sends nothing to the cloud");
    excl_add(c, 1, by_gang, -1, "fewer than %u GPUs an instance: the job's GPUs must be on one "
             "node (gpus_per_node lets it span several)", j->gpus);
    free(by_rule_o);
    free(by_rule_p);
    free(offers);
    free(pools);
    free(rules);
    free(pool_fit);
    free(offer_fit);
}

/* The rule that set the final placement / spot (the last matched one that
 * gives it), or NULL. */
static const spw_rule_t *setter(const test_ctx_t *c, int spot)
{
    const spw_gov_t *g = &c->cfg.fleet.gov;
    for (size_t k = c->nmatched; k-- > 0;) {
        const spw_rule_t *r = &g->rules[c->matched[k]];
        if (spot ? r->spot != SPW_SPOT_UNSET : r->placement != SPW_PLACE_UNSET)
            return r;
    }
    return NULL;
}

static const spw_rule_t *price_setter(const test_ctx_t *c)
{
    const spw_gov_t *g = &c->cfg.fleet.gov;
    for (size_t k = 0; k < c->nmatched; k++) {
        const spw_rule_t *r = &g->rules[c->matched[k]];
        if (r->max_usd_per_gpu_h == c->prof->max_usd_per_gpu_h)
            return r;
    }
    return NULL;
}

static const char *placement_meaning(spw_placement_t p)
{
    switch (p) {
    case SPW_PLACE_CLOUD_FIRST: return "bursts at once; on-prem only when the cloud cannot take it";
    case SPW_PLACE_ONPREM_ONLY: return "never the cloud";
    default: return "on-prem first; the policy's wait rule decides when to burst";
    }
}

static void test_table(const test_ctx_t *c)
{
    const spw_fleet_t *f = &c->cfg.fleet;
    const spw_gov_t *g = &f->gov;
    const spw_jobspec_t *s = &c->spec;
    char a[64], b[64], d[64], e[64], h[64], tot[64];
    char what[512] = "";
    if (s->n_gpu_models) {
        char models[160] = "";
        for (size_t i = 0; i < s->n_gpu_models; i++)
            snprintf(models + strlen(models), sizeof(models) - strlen(models), "%s%s",
                     i ? "|" : "", s->gpu_models[i]);
        add(what, sizeof(what), "%u x %s", s->gpus, models);
    } else {
        add(what, sizeof(what), "%u GPU%s (any model)", s->gpus, s->gpus == 1 ? "" : "s");
    }
    add(what, sizeof(what), "team %s", s->team ? s->team : "none");
    if (s->jclass)
        add(what, sizeof(what), "class %s", s->jclass);
    for (size_t i = 0; i < s->nlabels; i++)
        add(what, sizeof(what), "%s=%s", s->labels[i].key, s->labels[i].value);
    if (s->data)
        add(what, sizeof(what), "data %s", s->data);
    printf("job %s%s%s%s: %s\n", c->job_path, s->name ? " (" : "", s->name ? s->name : "",
           s->name ? ")" : "", what);
    if (c->job.team) {
        const spw_team_spec_t *t = &g->teams[c->job.team - 1];
        if (isinf(t->budget_usd))
            printf("team %s: no budget; its caps and the organisation caps apply\n", t->name);
        else
            printf("team %s: %s a %s, on_exhausted %s\n", t->name, usd(t->budget_usd, a, sizeof(a)),
                   spw_period_name(t->period), spw_exhausted_name(t->on_exhausted));
    }

    printf("\nrules it matches, in order (%zu of %zu):\n", c->nmatched, g->nrules);
    if (!c->nmatched)
        printf("  none\n");
    for (size_t k = 0; k < c->nmatched; k++) {
        const spw_rule_t *r = &g->rules[c->matched[k]];
        char fx[1024];
        effect_text(r, fx, sizeof(fx));
        printf("  %zu. %s (line %d): %s\n", c->matched[k] + 1, r->name, r->line, fx);
    }
    if (c->residency >= 0) {
        const spw_residency_spec_t *rs = &g->residencies[c->residency];
        char regions[512] = "";
        for (size_t k = 0; k < rs->nregions; k++)
            add(regions, sizeof(regions), "%s", rs->regions[k]);
        printf("residency: %s (line %d, from its %s): %s%s%s\n", rs->name, rs->line,
               c->residency_by_class ? "class" : "residency field",
               rs->onprem ? "on-prem pools" : "",
               rs->onprem && rs->nregions ? " and " : "",
               rs->nregions ? regions : rs->onprem ? " only" : "nothing");
    } else {
        printf("residency: none\n");
    }
    const spw_rule_t *ps = setter(c, 0), *ss = setter(c, 1), *pr = price_setter(c);
    spw_placement_t pl = c->prof->placement;
    printf("placement: %s (%s)%s%s%s\n",
           spw_placement_name(pl == SPW_PLACE_UNSET ? SPW_PLACE_ONPREM_FIRST : pl),
           placement_meaning(pl), ps ? " by rule '" : " by default", ps ? ps->name : "",
           ps ? "'" : "");
    printf("spot: %s%s%s%s\n",
           c->prof->spot == SPW_SPOT_UNSET ? "allowed" : spw_spot_rule_name(c->prof->spot),
           ss ? " by rule '" : " by default", ss ? ss->name : "", ss ? "'" : "");
    if (isinf(c->prof->max_usd_per_gpu_h))
        printf("price cap: none\n");
    else
        printf("price cap: %s/GPU-h by rule '%s'\n", usd(c->prof->max_usd_per_gpu_h, a, sizeof(a)),
               pr ? pr->name : "?");
    printf("worst case: %s (%s); a cloud offer reserves its price for that plus its boot, "
           "the data transfer and %gs the daemon may bill past it (kill grace, two turns, 1s), "
           "plus egress\n", dur(c->worst_s, a, sizeof(a)),
           c->worst_default ? "caps.default_max_runtime_s; the job gives no max_runtime"
                            : "its max_runtime", c->reserve_extra_s);

    printf("\nwhere it may run:\n");
    printf("  on-prem: ");
    if (!c->npools) {
        printf("nowhere\n");
    } else {
        printf("%zu pool%s\n", c->npools, c->npools == 1 ? "" : "s");
        spw_table_t *t = spw_table_create("pool|gpu|>GPUs|>$/h|>data moved|>transfer|>egress|"
                                          ">worst case");
        for (size_t i = 0; i < c->npools; i++) {
            const place_t *p = &c->pools[i];
            const spw_pool_spec_t *ps2 = &f->pools[p->idx];
            snprintf(a, sizeof(a), "%llu", (unsigned long long)pool_gpus(ps2));
            snprintf(d, sizeof(d), "%g GB", p->gb);
            spw_table_row(t, ps2->name, model_name(f, ps2->model), a,
                          usd(p->usd_per_h, b, sizeof(b)), d,
                          spw_cli_dur(p->transfer_s, e, sizeof(e)),
                          usd(p->egress_usd, h, sizeof(h)),
                          usd(p->total_usd, tot, sizeof(tot)));
        }
        spw_table_print(t, stdout, 4);
        spw_table_destroy(t);
    }
    printf("  cloud: ");
    if (!c->noffers) {
        printf("nowhere\n");
    } else {
        size_t show = c->noffers < 10 ? c->noffers : 10;
        printf("%zu offer%s; the first %zu as the engine ranks them, by cost for the work "
               "(%s estimated, %s), its first choice first\n", c->noffers,
               c->noffers == 1 ? "" : "s", show, dur(c->job.est_runtime_s, a, sizeof(a)),
               c->prof->spot == SPW_SPOT_REQUIRED ? "at the spot price" : "on demand");
        spw_table_t *t = spw_table_create("provider|region|zone|instance|gpu|>x|>$/h|>for the work|"
                                          ">data moved|>transfer|>egress|>worst case");
        for (size_t i = 0; i < show; i++) {
            const place_t *p = &c->offers[i];
            const spw_offer_t *o = &f->offers[p->idx];
            char n[16], price[32], moved[32], tr[32], eg[32], work[32], it[128];
            snprintf(n, sizeof(n), "%u", p->instances);
            snprintf(moved, sizeof(moved), "%g GB", p->gb);
            /* A commitment: its instance type, named (docs/config.md). */
            snprintf(it, sizeof(it), "%s%s%s", o->instance_type, o->commit_name ? "@" : "",
                     o->commit_name ? o->commit_name : "");
            spw_table_row(t, o->provider, o->region, o->zone, it,
                          model_name(f, o->model), n,
                          usd(p->usd_per_h, price, sizeof(price)),
                          usd(p->work_usd, work, sizeof(work)), moved,
                          spw_cli_dur(p->transfer_s, tr, sizeof(tr)),
                          usd(p->egress_usd, eg, sizeof(eg)), usd(p->total_usd, tot, sizeof(tot)));
        }
        spw_table_print(t, stdout, 4);
        spw_table_destroy(t);
        if (c->noffers > show)
            printf("    ... and %zu more\n", c->noffers - show);
    }
    if (!c->no_burst)
        printf("  the engine's first choice (as `spillway explain` gives it): %s\n",
               c->engine_why);

    printf("\nexcluded:\n");
    if (!c->nex)
        printf("  nothing\n");
    for (size_t i = 0; i < c->nex; i++)
        printf("  %zu %s%s: %s\n", c->ex[i].count, c->ex[i].offers ? "offer" : "pool",
               c->ex[i].count == 1 ? "" : "s", c->ex[i].reason);
    if (c->npools + c->noffers)
        printf("\nverdict: it may run on %zu pool%s and %zu cloud offer%s\n", c->npools,
               c->npools == 1 ? "" : "s", c->noffers, c->noffers == 1 ? "" : "s");
    else
        printf("\nverdict: it may run nowhere: no pool and no cloud offer is left (see "
               "excluded)\n");
}

static json_t *place_json(const test_ctx_t *c, const place_t *p, int offer)
{
    const spw_fleet_t *f = &c->cfg.fleet;
    json_t *o;
    if (offer) {
        const spw_offer_t *of = &f->offers[p->idx];
        o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "provider", of->provider, "region",
                      of->region, "zone", of->zone, "instance_type", of->instance_type, "gpu",
                      model_name(f, of->model), "gpus_per_instance", (json_int_t)of->gpus,
                      "instances", (json_int_t)p->instances);
        if (of->commit_name)
            json_object_set_new(o, "commitment", json_string(of->commit_name));
    } else {
        const spw_pool_spec_t *ps = &f->pools[p->idx];
        o = json_pack("{s:s,s:s,s:I}", "pool", ps->name, "gpu", model_name(f, ps->model), "gpus",
                      (json_int_t)pool_gpus(ps));
    }
    json_object_set_new(o, "usd_per_h", json_real(p->usd_per_h));
    json_object_set_new(o, "data_gb", json_real(p->gb));
    json_object_set_new(o, "transfer_s", json_real(p->transfer_s));
    json_object_set_new(o, "egress_usd", json_real(p->egress_usd));
    json_object_set_new(o, "worst_case_usd", jnum(p->total_usd));
    if (offer) {
        json_object_set_new(o, "work_usd", jnum(p->work_usd));
        json_object_set_new(o, "engine_choice", json_boolean((int)p->idx == c->engine_offer));
    }
    return o;
}

static void test_json(const test_ctx_t *c)
{
    const spw_gov_t *g = &c->cfg.fleet.gov;
    const spw_jobspec_t *s = &c->spec;
    json_t *labels = json_object();
    for (size_t i = 0; i < s->nlabels; i++)
        json_object_set_new(labels, s->labels[i].key, json_string(s->labels[i].value));
    json_t *job = json_pack("{s:s?,s:s?,s:s?,s:o,s:I,s:o,s:s?,s:s?,s:o}", "name", s->name, "team",
                            s->team, "class", s->jclass, "labels", labels, "gpus",
                            (json_int_t)s->gpus, "gpu_models",
                            jstrv(s->gpu_models, s->n_gpu_models), "data", s->data, "residency",
                            s->residency, "max_runtime_s", jnum(s->max_runtime_s));
    json_t *rules = json_array();
    for (size_t k = 0; k < c->nmatched; k++) {
        const spw_rule_t *r = &g->rules[c->matched[k]];
        json_array_append_new(rules, json_pack("{s:I,s:s,s:I}", "index",
                                               (json_int_t)c->matched[k] + 1, "name", r->name,
                                               "line", (json_int_t)r->line));
    }
    json_t *pools = json_array(), *offers = json_array(), *ex = json_array();
    for (size_t i = 0; i < c->npools; i++)
        json_array_append_new(pools, place_json(c, &c->pools[i], 0));
    for (size_t i = 0; i < c->noffers; i++)
        json_array_append_new(offers, place_json(c, &c->offers[i], 1));
    for (size_t i = 0; i < c->nex; i++) {
        const excl_t *e = &c->ex[i];
        json_t *o = json_pack("{s:s,s:I,s:s}", "what", e->offers ? "offers" : "pools", "count",
                              (json_int_t)e->count, "reason", e->reason);
        json_object_set_new(o, "rule", e->rule >= 0 ? json_string(g->rules[e->rule].name)
                                                    : json_null());
        json_object_set_new(o, "line", e->rule >= 0 ? json_integer(g->rules[e->rule].line)
                                                    : json_null());
        json_array_append_new(ex, o);
    }
    spw_placement_t pl = c->prof->placement;
    json_t *doc = json_pack(
        "{s:s,s:s,s:o,s:o,s:o,s:s,s:s,s:o,s:f,s:s,s:o,s:o,s:o,s:b}", "config", c->config_path,
        "job_file", c->job_path, "job", job, "rules", rules, "residency",
        c->residency >= 0 ? json_string(g->residencies[c->residency].name) : json_null(),
        "placement", spw_placement_name(pl == SPW_PLACE_UNSET ? SPW_PLACE_ONPREM_FIRST : pl),
        "spot", c->prof->spot == SPW_SPOT_UNSET ? "allowed" : spw_spot_rule_name(c->prof->spot),
        "max_usd_per_gpu_h", jnum(c->prof->max_usd_per_gpu_h), "worst_case_s", c->worst_s,
        "worst_case_from", c->worst_default ? "default_max_runtime_s" : "max_runtime", "onprem",
        pools, "cloud", offers, "excluded", ex, "may_run", c->npools + c->noffers > 0);
    spw_cli_json_print(stdout, doc);
    json_decref(doc);
}

static int cmd_test(int argc, char **argv)
{
    const char *pos[2];
    int json = parse_args(argc, argv, "policy test", test_usage, 2, pos);
    test_ctx_t *c = spw_xcalloc(1, sizeof(*c));
    c->config_path = pos[0];
    c->job_path = pos[1];
    int rc = 2;
    spw_error_t err;
    if (load(&c->cfg, c->config_path, "policy test") < 0) {
        free(c);
        return 2;
    }
    size_t len;
    char *text = spw_read_file(c->job_path, &len, &err);
    if (!text || spw_jobspec_parse(c->job_path, text, len, &c->spec, &err) < 0
        || resolve_job(c, &err) < 0) {
        fprintf(stderr, "spillway policy test: %s\n", err.text);
        goto done;
    }
    place_job(c);
    if (json)
        test_json(c);
    else
        test_table(c);
    rc = c->npools + c->noffers ? 0 : 1;
    if (spw_cli_flush("policy test"))
        rc = 2;
done:
    free(text);
    spw_govrt_destroy(c->rt);
    free(c->pools);
    free(c->offers);
    spw_jobspec_free(&c->spec);
    spw_config_free(&c->cfg);
    free(c);
    return rc;
}

/* ---- dispatch ---------------------------------------------------------------------- */

int spw_cli_policy(int argc, char **argv)
{
    if (argc < 2) {
        fputs(policy_usage, stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
        fputs(policy_usage, stdout);
        return 0;
    }
    if (strcmp(sub, "check") == 0)
        return cmd_check(argc - 1, argv + 1);
    if (strcmp(sub, "test") == 0)
        return cmd_test(argc - 1, argv + 1);
    fprintf(stderr, "spillway policy: unknown subcommand '%s' (expected check or test)\n\n%s", sub,
            policy_usage);
    return 2;
}
