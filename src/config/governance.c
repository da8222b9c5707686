/* governance.c: governance: the teams, caps, residency, rules, data (datasets) and sim
 * (calendar start) sections, all landing in fleet.gov. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"
#include "util/numparse.h"
#include "util/timeparse.h"
#include "util/yaml.h"

/* ---- governance ------------------------------------------------------------ */

/* Letters, digits, '_', '.' and '-', 1 to 64 of them: the names a job spec
 * can carry (team, class, data, residency). */
static int is_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
            return 0;
    return 1;
}

/* A name at node n (a scalar that is_name accepts). */
static int name_value(ctx_t *x, const spw_ynode_t *n, const char *what, const char **out,
                      spw_error_t *err)
{
    if (spw_ynode_str(x->d, n, what, out, err) < 0)
        return -1;
    if (!is_name(*out))
        return cfg_at(x, n, err, "%s '%.40s': use 1 to 64 letters, digits, '_', '.' or '-'", what,
                  *out);
    return 0;
}

/* Index of name in a table of owned strings, adding it when new; -1 with
 * an error at n when the table already holds max names. */
int cfg_intern_name(ctx_t *x, const spw_ynode_t *n, char ***tab, size_t *cnt, size_t max,
                const char *what, const char *name, spw_error_t *err)
{
    for (size_t i = 0; i < *cnt; i++)
        if (strcmp((*tab)[i], name) == 0)
            return (int)i;
    if (*cnt >= max)
        return cfg_at(x, n, err, "more than %zu %s names in rules and residency; '%s' is one too many",
                  max, what, name);
    *tab = spw_xrealloc(*tab, (*cnt + 1) * sizeof(char *));
    (*tab)[*cnt] = spw_xstrdup(name);
    return (int)(*cnt)++;
}

/* A dollar amount at key of map n: a number, optionally written "$5000";
 * left as it is when absent.  Must be >= lo, or > lo when strict. */
static int usd_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, int strict,
                   double *out, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    const char *s;
    if (spw_ynode_str(x->d, v, key, &s, err) < 0)
        return -1;
    const char *p = s[0] == '$' ? s + 1 : s;
    double d;
    if (spw_parse_double(p, strlen(p), &d) < 0) {
        if (strstr(key, "monthly") || strstr(key, "weekly"))
            return cfg_at(x, v, err,
                      "budget in the wrong unit: write dollars as a number, e.g. %s: 5000 "
                      "(got '%.40s')", key, s);
        return cfg_at(x, v, err, "%s: write dollars as a number, e.g. %s: 40 (got '%.40s')", key,
                  key, s);
    }
    if (strict ? !(d > lo) : !(d >= lo))
        return cfg_at(x, v, err, "%s must be %s %g dollars", key, strict ? "more than" : "at least",
                  lo);
    *out = d;
    return 0;
}

/* A whole number of GPUs from lo to 1e8 at key of map n (caps: lo 1;
 * quotas: lo 0), left as it is when absent. */
int cfg_count_key(ctx_t *x, const spw_ynode_t *n, const char *key, long lo, double *out,
                  spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    long c;
    if (spw_ynode_int(x->d, v, key, &c, err) < 0)
        return -1;
    if (c < lo || c > 100000000)
        return cfg_at(x, v, err, "%s must be a whole number from %ld to 100000000", key, lo);
    *out = (double)c;
    return 0;
}

/* A duration at key of map n: seconds, or "24h", "7d", "1h30m"; >= lo. */
static int duration_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, double *out,
                        spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    const char *s;
    double d;
    if (spw_ynode_str(x->d, v, key, &s, err) < 0)
        return -1;
    if (spw_parse_duration(s, &d) < 0)
        return cfg_at(x, v, err, "%s: expected seconds or a duration like 24h, 7d or 1h30m, got '%.40s'",
                  key, s);
    if (d < lo || d > 3.1536e8)
        return cfg_at(x, v, err, "%s must be from %g seconds to ten years", key, lo);
    *out = d;
    return 0;
}

/* Appends "a, b, c" of names (at most len bytes) to buf. */
static void join_names(char *buf, size_t len, const char *const *names, size_t stride, size_t n)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < n && used + 1 < len; i++) {
        const char *s = *(const char *const *)((const char *)names + i * stride);
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s);
    }
}

static int team_entry(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"name", "monthly_usd", "weekly_usd", "on_exhausted",
                                       "max_cloud_usd_per_h", "max_cloud_gpus",
                                       "max_cloud_egress_usd_per_month",
                                       "max_egress_usd_per_month", "run_as", "quota",
                                       "weight", "cohort", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "a team", keys, err) < 0)
        return -1;
    const spw_ynode_t *nn = spw_ymap_get(n, "name");
    const char *name;
    if (!nn)
        return cfg_at(x, n, err, "%s", "a team needs 'name: NAME' (the team jobs name with team:)");
    if (name_value(x, nn, "team name", &name, err) < 0)
        return -1;
    for (size_t i = 0; i < g->nteams; i++)
        if (strcmp(g->teams[i].name, name) == 0)
            return cfg_at(x, nn, err, "two teams are named '%s' (first at line %d)", name,
                      g->teams[i].line);
    if (g->nteams >= SPW_GOV_MAX_TEAMS)
        return cfg_at(x, n, err, "more than %d teams; merge some (a rule's team set is %d bits)",
                  SPW_GOV_MAX_TEAMS, SPW_GOV_MAX_TEAMS);
    const spw_ynode_t *ru = spw_ymap_get(n, "run_as");
    if (ru) {
        const char *user;
        spw_daemon_conf_t *dc = &x->cfg->daemon;
        if (cfg_user_value(x, ru, "run_as", &user, err) < 0)
            return -1;
        dc->team_run_as = spw_xrealloc(dc->team_run_as,
                                       (dc->nteam_run_as + 1) * sizeof(*dc->team_run_as));
        dc->team_run_as[dc->nteam_run_as].team = spw_xstrdup(name);
        dc->team_run_as[dc->nteam_run_as++].user = spw_xstrdup(user);
    }
    const spw_ynode_t *mn = spw_ymap_get(n, "monthly_usd"), *wn = spw_ymap_get(n, "weekly_usd");
    if (mn && wn)
        return cfg_at(x, wn, err, "team '%s': give monthly_usd or weekly_usd, not both", name);
    /* The egress cap holds every egress dollar of the team, copies into
     * on-prem pools included (docs/governance.md); max_egress_usd_per_month
     * is its old name, still read. */
    const spw_ynode_t *en = spw_ymap_get(n, "max_cloud_egress_usd_per_month"),
                      *on = spw_ymap_get(n, "max_egress_usd_per_month");
    if (en && on)
        return cfg_at(x, on, err, "team '%s': max_egress_usd_per_month is the old name of "
                  "max_cloud_egress_usd_per_month; give only max_cloud_egress_usd_per_month", name);
    spw_team_spec_t t = {
        .line = n->line,
        .budget_usd = INFINITY,
        .period = wn ? SPW_PERIOD_WEEK : SPW_PERIOD_MONTH,
        .on_exhausted = SPW_EXHAUSTED_HOLD,
        .max_cloud_usd_per_h = INFINITY,
        .max_cloud_gpus = INFINITY,
        .max_egress_usd_per_month = INFINITY,
    };
    if (usd_key(x, n, wn ? "weekly_usd" : "monthly_usd", 0, 0, &t.budget_usd, err) < 0 ||
        usd_key(x, n, "max_cloud_usd_per_h", 0, 1, &t.max_cloud_usd_per_h, err) < 0 ||
        usd_key(x, n, on ? "max_egress_usd_per_month" : "max_cloud_egress_usd_per_month", 0, 0,
                &t.max_egress_usd_per_month, err) < 0 ||
        cfg_count_key(x, n, "max_cloud_gpus", 1, &t.max_cloud_gpus, err) < 0 ||
        cfg_team_fair(x, n, &t, err) < 0)
        return -1;
    const spw_ynode_t *ev = spw_ymap_get(n, "on_exhausted");
    if (ev) {
        const char *s;
        spw_error_t e2;
        if (spw_ynode_str(x->d, ev, "on_exhausted", &s, err) < 0)
            return -1;
        if (spw_exhausted_parse(s, &t.on_exhausted, &e2) < 0)
            return cfg_at(x, ev, err, "team '%s': on_exhausted: %s", name, e2.text);
    }
    if (cfg_team_pool_quotas(x, n, &t, err) < 0)
        return -1;
    t.name = spw_xstrdup(name);
    g->teams = spw_xrealloc(g->teams, (g->nteams + 1) * sizeof(*g->teams));
    g->teams[g->nteams++] = t;
    return 0;
}

int cfg_teams_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    if (n->kind != SPW_Y_SEQ)
        return cfg_at(x, n, err, "%s", "teams: expected a list like '- {name: ml, monthly_usd: 5000}'");
    for (size_t i = 0; i < n->n; i++)
        if (team_entry(x, n->items[i], err) < 0)
            return -1;
    return 0;
}

int cfg_caps_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"max_cloud_usd_per_h", "max_cloud_gpus",
                                       "default_max_runtime_s", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "caps", keys, err) < 0)
        return -1;
    if (usd_key(x, n, "max_cloud_usd_per_h", 0, 1, &g->max_cloud_usd_per_h, err) < 0 ||
        cfg_count_key(x, n, "max_cloud_gpus", 1, &g->max_cloud_gpus, err) < 0 ||
        duration_key(x, n, "default_max_runtime_s", 1, &g->default_max_runtime_s, err) < 0)
        return -1;
    return 0;
}

int cfg_residency_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"onprem", "regions", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (n->kind != SPW_Y_MAP)
        return cfg_at(x, n, err, "%s",
                  "residency: expected a map of classes like 'eu: {onprem: true, regions: "
                  "[eu-west-1]}'");
    for (size_t i = 0; i < n->n; i++) {
        const char *name = n->keys[i];
        const spw_ynode_t *v = n->items[i];
        spw_ynode_t pos = {.line = n->key_lines[i], .col = n->key_cols[i]};
        if (!is_name(name))
            return cfg_at(x, &pos, err,
                      "residency '%.40s': use 1 to 64 letters, digits, '_', '.' or '-'", name);
        for (size_t k = 0; k < g->nresidencies; k++)
            if (strcmp(g->residencies[k].name, name) == 0)
                return cfg_at(x, &pos, err, "residency '%s' is given twice (first at line %d)", name,
                          g->residencies[k].line);
        char section[96];
        snprintf(section, sizeof(section), "residency '%s'", name);
        if (spw_ymap_check_keys(x->d, v, section, keys, err) < 0)
            return -1;
        if (cfg_intern_name(x, &pos, &g->classes, &g->nclasses, SPW_GOV_MAX_CLASSES, "class", name,
                        err) < 0)
            return -1;
        g->residencies = spw_xrealloc(g->residencies, (g->nresidencies + 1) * sizeof(*g->residencies));
        spw_residency_spec_t *r = &g->residencies[g->nresidencies++];
        memset(r, 0, sizeof(*r));
        r->name = spw_xstrdup(name);
        r->line = pos.line;
        r->onprem = 1;
        const spw_ynode_t *on = spw_ymap_get(v, "onprem"), *rn = spw_ymap_get(v, "regions");
        if (on && spw_ynode_bool(x->d, on, "onprem", &r->onprem, err) < 0)
            return -1;
        if (rn && !(rn->kind == SPW_Y_SEQ && rn->n == 0)
            && cfg_owned_list(x, v, "regions", "region", &r->regions, &r->nregions, err) < 0)
            return -1;
    }
    return 0;
}

/* The gpus condition of a match: N, "A-B", ">=N" or "<=N". */
static int gpus_range(ctx_t *x, const spw_ynode_t *v, spw_rule_t *r, spw_error_t *err)
{
    const char *s;
    if (spw_ynode_str(x->d, v, "gpus", &s, err) < 0)
        return -1;
    int64_t a = 0, b = 0;
    const char *dash = strchr(s, '-');
    int good;
    if (strncmp(s, ">=", 2) == 0) {
        good = spw_parse_i64(s + 2, strlen(s + 2), &a) == 0;
        b = UINT32_MAX;
    } else if (strncmp(s, "<=", 2) == 0) {
        good = spw_parse_i64(s + 2, strlen(s + 2), &b) == 0;
        a = 1;
    } else if (dash && dash != s) {
        good = spw_parse_i64(s, (size_t)(dash - s), &a) == 0
               && spw_parse_i64(dash + 1, strlen(dash + 1), &b) == 0;
    } else {
        good = spw_parse_i64(s, strlen(s), &a) == 0;
        b = a;
    }
    if (!good)
        return cfg_at(x, v, err, "gpus: expected a count (8), a range (\"1-8\"), \">=N\" or \"<=N\", "
                             "got '%.40s'", s);
    if (a < 1 || b < 1 || a > UINT32_MAX || b > UINT32_MAX)
        return cfg_at(x, v, err, "gpus: counts must be from 1 to %u, got '%.40s'", UINT32_MAX, s);
    if (a > b)
        return cfg_at(x, v, err, "gpus: the range '%.40s' is empty (write the smaller count first)", s);
    r->gpus_min = (uint32_t)a;
    r->gpus_max = (uint32_t)b;
    return 0;
}

static int rule_match(ctx_t *x, const spw_ynode_t *m, spw_rule_t *r, spw_error_t *err)
{
    static const char *const keys[] = {"team", "class", "labels", "gpus", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    char section[96];
    snprintf(section, sizeof(section), "the match of rule '%s'", r->name);
    if (spw_ymap_check_keys(x->d, m, section, keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(m, "team"))) {
        size_t cnt = v->kind == SPW_Y_SEQ ? v->n : 1;
        if (cnt == 0)
            return cfg_at(x, v, err, "rule '%s': team: an empty list matches nothing; leave it out",
                      r->name);
        for (size_t i = 0; i < cnt; i++) {
            const spw_ynode_t *t = v->kind == SPW_Y_SEQ ? v->items[i] : v;
            const char *name;
            if (spw_ynode_str(x->d, t, "team", &name, err) < 0)
                return -1;
            size_t k = 0;
            while (k < g->nteams && strcmp(g->teams[k].name, name) != 0)
                k++;
            if (k == g->nteams) {
                if (!g->nteams)
                    return cfg_at(x, t, err, "rule '%s': team '%.40s' is not in teams: (there is no "
                                         "teams: section; declare the team there)", r->name, name);
                char known[160] = "";
                join_names(known, sizeof(known), (const char *const *)&g->teams[0].name,
                           sizeof(g->teams[0]), g->nteams);
                return cfg_at(x, t, err, "rule '%s': team '%.40s' is not in teams: (known: %s)",
                          r->name, name, known);
            }
            r->teams |= 1ull << k;
        }
    }
    if ((v = spw_ymap_get(m, "class"))) {
        size_t cnt = v->kind == SPW_Y_SEQ ? v->n : 1;
        if (cnt == 0)
            return cfg_at(x, v, err, "rule '%s': class: an empty list matches nothing; leave it out",
                      r->name);
        for (size_t i = 0; i < cnt; i++) {
            const spw_ynode_t *c = v->kind == SPW_Y_SEQ ? v->items[i] : v;
            const char *name;
            if (name_value(x, c, "class", &name, err) < 0)
                return -1;
            int k = cfg_intern_name(x, c, &g->classes, &g->nclasses, SPW_GOV_MAX_CLASSES, "class",
                                name, err);
            if (k < 0)
                return -1;
            r->classes |= 1ull << k;
        }
    }
    if ((v = spw_ymap_get(m, "labels"))) {
        if (v->kind != SPW_Y_MAP || v->n == 0)
            return cfg_at(x, v, err, "rule '%s': labels: expected a map like {env: prod}", r->name);
        for (size_t i = 0; i < v->n; i++) {
            spw_ynode_t pos = {.line = v->key_lines[i], .col = v->key_cols[i]};
            const char *key = v->keys[i], *val;
            if (spw_ynode_str(x->d, v->items[i], key, &val, err) < 0)
                return -1;
            if (!key[0] || strchr(key, '=') || !val[0] || strchr(val, '=')
                || strlen(key) > 128 || strlen(val) > 128)
                return cfg_at(x, &pos, err, "rule '%s': label %.40s: %.40s: keys and values must be "
                                        "1 to 128 characters, without '='", r->name, key, val);
            char kv[260];
            snprintf(kv, sizeof(kv), "%.128s=%.128s", key, val);
            int k = cfg_intern_name(x, &pos, &g->labels, &g->nlabels, SPW_GOV_MAX_LABELS, "label", kv,
                                err);
            if (k < 0)
                return -1;
            r->labels |= 1ull << k;
        }
    }
    if ((v = spw_ymap_get(m, "gpus")) && gpus_range(x, v, r, err) < 0)
        return -1;
    return 0;
}

static int rule_entry(ctx_t *x, const spw_ynode_t *n, size_t idx, spw_error_t *err)
{
    static const char *const keys[] = {"name", "match", "placement", "spot", "allow_providers",
                                       "deny_providers", "allow_regions", "deny_regions",
                                       "allow_families", "deny_families", "allow_gpus",
                                       "max_usd_per_gpu_h", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "a rule", keys, err) < 0)
        return -1;
    if (g->nrules >= SPW_GOV_MAX_RULES)
        return cfg_at(x, n, err, "more than %d rules; merge some", SPW_GOV_MAX_RULES);
    char defname[32];
    const char *name = defname;
    snprintf(defname, sizeof(defname), "rule %zu", idx + 1);
    const spw_ynode_t *nn = spw_ymap_get(n, "name");
    if (nn) {
        if (spw_ynode_str(x->d, nn, "name", &name, err) < 0)
            return -1;
        if (!name[0] || strlen(name) > 128)
            return cfg_at(x, nn, err, "%s", "a rule's name must be 1 to 128 characters");
    }
    for (size_t i = 0; i < g->nrules; i++)
        if (strcmp(g->rules[i].name, name) == 0)
            return cfg_at(x, nn ? nn : n, err, "two rules are named '%s' (first at line %d)", name,
                      g->rules[i].line);
    g->rules = spw_xrealloc(g->rules, (g->nrules + 1) * sizeof(*g->rules));
    spw_rule_t *r = &g->rules[g->nrules++];
    memset(r, 0, sizeof(*r));
    r->name = spw_xstrdup(name);
    r->line = n->line;
    r->gpus_min = 1;
    r->gpus_max = UINT32_MAX;
    r->max_usd_per_gpu_h = INFINITY;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(n, "match")) && rule_match(x, v, r, err) < 0)
        return -1;
    const char *s;
    spw_error_t e2;
    if ((v = spw_ymap_get(n, "placement"))) {
        if (spw_ynode_str(x->d, v, "placement", &s, err) < 0)
            return -1;
        if (spw_placement_parse(s, &r->placement, &e2) < 0)
            return cfg_at(x, v, err, "rule '%s': placement: %s", r->name, e2.text);
    }
    if ((v = spw_ymap_get(n, "spot"))) {
        if (spw_ynode_str(x->d, v, "spot", &s, err) < 0)
            return -1;
        if (spw_spot_rule_parse(s, &r->spot, &e2) < 0)
            return cfg_at(x, v, err, "rule '%s': spot: %s", r->name, e2.text);
    }
    if (cfg_owned_list(x, n, "allow_providers", "provider", &r->allow_providers,
                   &r->n_allow_providers, err) < 0 ||
        cfg_owned_list(x, n, "deny_providers", "provider", &r->deny_providers, &r->n_deny_providers,
                   err) < 0 ||
        cfg_owned_list(x, n, "allow_regions", "region", &r->allow_regions, &r->n_allow_regions,
                   err) < 0 ||
        cfg_owned_list(x, n, "deny_regions", "region", &r->deny_regions, &r->n_deny_regions, err) < 0 ||
        cfg_owned_list(x, n, "allow_families", "family", &r->allow_families, &r->n_allow_families,
                   err) < 0 ||
        cfg_owned_list(x, n, "deny_families", "family", &r->deny_families, &r->n_deny_families,
                   err) < 0 ||
        cfg_owned_list(x, n, "allow_gpus", "GPU model", &r->allow_gpus, &r->n_allow_gpus, err) < 0 ||
        usd_key(x, n, "max_usd_per_gpu_h", 0, 1, &r->max_usd_per_gpu_h, err) < 0)
        return -1;
    if (r->placement == SPW_PLACE_UNSET && r->spot == SPW_SPOT_UNSET && !r->n_allow_providers
        && !r->n_deny_providers && !r->n_allow_regions && !r->n_deny_regions
        && !r->n_allow_families && !r->n_deny_families && !r->n_allow_gpus
        && isinf(r->max_usd_per_gpu_h))
        return cfg_at(x, n, err, "rule '%s' has no effect: give placement, spot, an allow_/deny_ "
                             "list or max_usd_per_gpu_h", r->name);
    return 0;
}

int cfg_rules_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    if (n->kind != SPW_Y_SEQ)
        return cfg_at(x, n, err, "%s",
                  "rules: expected a list like '- {match: {team: ml}, placement: onprem_only}'");
    for (size_t i = 0; i < n->n; i++)
        if (rule_entry(x, n->items[i], i, err) < 0)
            return -1;
    return 0;
}

/* A place data lives: an on-prem pool's name, "REGION" or "PROVIDER:REGION". */
static int site_value(ctx_t *x, const spw_ynode_t *v, const char *what, spw_site_t *out,
                      spw_error_t *err)
{
    const spw_fleet_t *f = &x->cfg->fleet;
    const char *s;
    if (spw_ynode_str(x->d, v, what, &s, err) < 0)
        return -1;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < f->npools; i++)
        if (strcmp(f->pools[i].name, s) == 0) {
            out->pool = (int)i;
            return 0;
        }
    const char *colon = strchr(s, ':');
    if (colon && (colon == s || !colon[1]))
        return cfg_at(x, v, err, "%s: expected a pool, REGION or PROVIDER:REGION, got '%.40s'", what, s);
    size_t plen = colon ? (size_t)(colon - s) : 0;
    const char *region = colon ? colon + 1 : s;
    int known = 0;
    for (size_t i = 0; i < f->noffers && !known; i++)
        known = strcmp(f->offers[i].region, region) == 0
                && (!colon || (strlen(f->offers[i].provider) == plen
                               && strncmp(f->offers[i].provider, s, plen) == 0));
    if (!known) {
        char pools[128] = "";
        if (f->npools)        /* pools is NULL without any */
            join_names(pools, sizeof(pools), (const char *const *)&f->pools[0].name,
                       sizeof(f->pools[0]), f->npools);
        return cfg_at(x, v, err, "%s '%.40s' is neither an on-prem pool (%s) nor a region of a cloud "
                             "offer; write a pool name or a region like aws:us-east-1",
                  what, s, f->npools ? pools : "there are none");
    }
    out->pool = -1;
    if (colon) {
        out->provider = spw_xmalloc(plen + 1);
        memcpy(out->provider, s, plen);
        out->provider[plen] = '\0';
    }
    out->region = spw_xstrdup(region);
    return 0;
}

static int dataset_entry(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"name", "size_gb", "home", "replicas", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "a dataset", keys, err) < 0)
        return -1;
    const spw_ynode_t *nn = spw_ymap_get(n, "name"), *hn = spw_ymap_get(n, "home");
    const spw_ynode_t *sn = spw_ymap_get(n, "size_gb"), *rn = spw_ymap_get(n, "replicas");
    const char *name;
    if (!nn)
        return cfg_at(x, n, err, "%s", "a dataset needs 'name: NAME' (what jobs write as data:)");
    if (name_value(x, nn, "dataset name", &name, err) < 0)
        return -1;
    for (size_t i = 0; i < g->ndatasets; i++)
        if (strcmp(g->datasets[i].name, name) == 0)
            return cfg_at(x, nn, err, "two datasets are named '%s' (first at line %d)", name,
                      g->datasets[i].line);
    if (!sn)
        return cfg_at(x, n, err, "dataset '%s': missing 'size_gb' (its size in gigabytes)", name);
    if (!hn)
        return cfg_at(x, n, err, "dataset '%s': missing 'home' (a pool, or a region like "
                             "aws:us-east-1)", name);
    double size;
    if (spw_ynode_double(x->d, sn, "size_gb", &size, err) < 0)
        return -1;
    if (!(size > 0) || size > 1e9)
        return cfg_at(x, sn, err, "dataset '%s': size_gb must be more than 0", name);
    if (rn && rn->kind != SPW_Y_SEQ && rn->kind != SPW_Y_SCALAR)
        return cfg_at(x, rn, err, "dataset '%s': replicas: expected a list of pools or regions", name);
    g->datasets = spw_xrealloc(g->datasets, (g->ndatasets + 1) * sizeof(*g->datasets));
    spw_dataset_spec_t *ds = &g->datasets[g->ndatasets++];
    memset(ds, 0, sizeof(*ds));
    ds->home.pool = -1;
    ds->name = spw_xstrdup(name);
    ds->line = n->line;
    ds->size_gb = size;
    if (site_value(x, hn, "home", &ds->home, err) < 0)
        return -1;
    size_t cnt = !rn ? 0 : rn->kind == SPW_Y_SEQ ? rn->n : 1;
    if (cnt)
        ds->replicas = spw_xcalloc(cnt, sizeof(spw_site_t));
    for (size_t i = 0; i < cnt; i++) {
        if (site_value(x, rn->kind == SPW_Y_SEQ ? rn->items[i] : rn, "replica", &ds->replicas[i],
                       err) < 0)
            return -1;
        ds->nreplicas = i + 1;
    }
    return 0;
}

int cfg_data_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"bandwidth_gbps", "cache_ttl_s", "storage_usd_per_gb_month",
                                       "egress_usd_per_gb", "datasets", NULL};
    static const char *const ekeys[] = {"aws", "gcp", "azure", "onprem", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "data", keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(n, "bandwidth_gbps"))) {
        double bw;
        if (spw_ynode_double(x->d, v, "bandwidth_gbps", &bw, err) < 0)
            return -1;
        if (!(bw > 0) || bw > 1e6)
            return cfg_at(x, v, err, "%s", "bandwidth_gbps must be more than 0 (gigabits per second)");
        g->bandwidth_gbps = bw;
    }
    if (duration_key(x, n, "cache_ttl_s", 0, &g->cache_ttl_s, err) < 0 ||
        usd_key(x, n, "storage_usd_per_gb_month", 0, 0, &g->storage_usd_per_gb_month, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "egress_usd_per_gb"))) {
        if (spw_ymap_check_keys(x->d, v, "data.egress_usd_per_gb", ekeys, err) < 0)
            return -1;
        if (usd_key(x, v, "aws", 0, 0, &g->egress_aws_usd_per_gb, err) < 0 ||
            usd_key(x, v, "gcp", 0, 0, &g->egress_gcp_usd_per_gb, err) < 0 ||
            usd_key(x, v, "azure", 0, 0, &g->egress_azure_usd_per_gb, err) < 0 ||
            usd_key(x, v, "onprem", 0, 0, &g->egress_onprem_usd_per_gb, err) < 0)
            return -1;
    }
    if ((v = spw_ymap_get(n, "datasets"))) {
        if (v->kind != SPW_Y_SEQ)
            return cfg_at(x, v, err, "%s",
                      "datasets: expected a list like '- {name: imagenet, size_gb: 150, home: dc1}'");
        for (size_t i = 0; i < v->n; i++)
            if (dataset_entry(x, v->items[i], err) < 0)
                return -1;
    }
    return 0;
}

int cfg_sim_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"start", NULL};
    if (spw_ymap_check_keys(x->d, n, "sim", keys, err) < 0)
        return -1;
    const spw_ynode_t *v = spw_ymap_get(n, "start");
    if (!v)
        return 0;
    const char *s;
    if (spw_ynode_str(x->d, v, "start", &s, err) < 0)
        return -1;
    char full[40];
    double t;
    /* A bare date is that day's midnight UTC. */
    if (strlen(s) == 10) {
        snprintf(full, sizeof(full), "%sT00:00:00Z", s);
        s = full;
    }
    if (spw_parse_rfc3339(s, &t) < 0)
        return cfg_at(x, v, err, "start: expected a date or an RFC 3339 time like 2026-11-01T00:00:00Z, "
                             "got '%.40s'", v->str);
    x->cfg->fleet.gov.origin_s = t;
    return 0;
}
