/* fairshare.c: fair share and quotas: a team's quota, weight and cohort
 * (teams[]), the cohorts: tree, and their checks against the fleet
 * (docs/fairshare.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"
#include "util/yaml.h"

/* A weight > 0 at key `weight` of map n (1 when absent). */
static int weight_key(ctx_t *x, const spw_ynode_t *n, double *out, spw_error_t *err)
{
    *out = 1;
    if (cfg_num_key(x, n, "weight", 1e-6, 1e6, out, err) < 0)
        return -1;
    return 0;
}

static int cohort_index(const spw_gov_t *g, const char *name)
{
    for (size_t i = 0; i < g->ncohorts; i++)
        if (strcmp(g->cohorts[i].name, name) == 0)
            return (int)i;
    return -1;
}

int cfg_team_fair(ctx_t *x, const spw_ynode_t *n, spw_team_spec_t *t, spw_error_t *err)
{
    static const char *const qkeys[] = {"gpus", "borrowing_limit", "lending_limit", "pools", NULL};
    const spw_gov_t *g = &x->cfg->fleet.gov;
    t->borrowing_limit_gpus = INFINITY;
    t->lending_limit_gpus = INFINITY;
    t->cohort = 0;
    if (weight_key(x, n, &t->weight, err) < 0)
        return -1;
    const spw_ynode_t *q = spw_ymap_get(n, "quota");
    if (q) {
        if (q->kind != SPW_Y_MAP)
            return cfg_at(x, q, err, "%s", "quota: expected a map like '{gpus: 16}'");
        if (spw_ymap_check_keys(x->d, q, "a team's quota", qkeys, err) < 0)
            return -1;
        if (!spw_ymap_get(q, "gpus"))
            return cfg_at(x, q, err, "%s", "quota: give the team's nominal GPUs, e.g. '{gpus: 16}'");
        t->has_quota = 1;
        if (cfg_count_key(x, q, "gpus", 0, &t->quota_gpus, err) < 0 ||
            cfg_count_key(x, q, "borrowing_limit", 0, &t->borrowing_limit_gpus, err) < 0 ||
            cfg_count_key(x, q, "lending_limit", 0, &t->lending_limit_gpus, err) < 0)
            return -1;
        const spw_ynode_t *ln = spw_ymap_get(q, "lending_limit");
        if (ln && t->lending_limit_gpus > t->quota_gpus)
            return cfg_at(x, ln, err, "lending_limit %g is above the quota's %g GPUs: a team "
                          "can lend only GPUs it has", t->lending_limit_gpus, t->quota_gpus);
    }
    const spw_ynode_t *cn = spw_ymap_get(n, "cohort");
    if (cn) {
        const char *name;
        if (spw_ynode_str(x->d, cn, "cohort", &name, err) < 0)
            return -1;
        int c = cohort_index(g, name);
        t->cohort = (uint32_t)(c + 1);
        if (c < 0)
            return cfg_at(x, cn, err, "cohort '%.40s' is not in cohorts: (add '- {name: %.40s}' "
                          "there)", name, name);
    }
    return 0;
}

/* GPUs of on-prem pool p. */
static double pool_gpus(const spw_pool_spec_t *p)
{
    double s = 0;
    for (uint32_t k = 0; k < p->nnodes; k++)
        s += p->node_gpus[k];
    return s;
}

int cfg_team_pool_quotas(ctx_t *x, const spw_ynode_t *n, spw_team_spec_t *t, spw_error_t *err)
{
    const spw_fleet_t *fl = &x->cfg->fleet;
    const spw_ynode_t *q = spw_ymap_get(n, "quota"), *pn = q ? spw_ymap_get(q, "pools") : NULL;
    if (!pn)
        return 0;
    if (pn->kind != SPW_Y_MAP || !pn->n)
        return cfg_at(x, pn, err, "%s", "quota.pools: expected a map of on-prem pool names to "
                      "GPUs, like '{a100-pool: 4}'");
    double *pq = spw_xcalloc(fl->npools ? fl->npools : 1, sizeof(*pq)), sum = 0;
    for (size_t i = 0; i < pn->n; i++) {
        size_t p = 0;
        while (p < fl->npools && strcmp(fl->pools[p].name, pn->keys[i]) != 0)
            p++;
        if (p == fl->npools) {
            free(pq);
            return cfg_at(x, pn->items[i], err, "quota.pools: '%.40s' is not an on-prem pool "
                          "(name one under pools:, e.g. '%.40s')", pn->keys[i],
                          fl->npools ? fl->pools[0].name : "none defined");
        }
        if (cfg_count_key(x, pn, pn->keys[i], 0, &pq[p], err) < 0) {
            free(pq);
            return -1;
        }
        sum += pq[p];
    }
    if (sum > t->quota_gpus) {
        free(pq);
        return cfg_at(x, pn, err, "quota.pools add up to %g GPUs, above the quota's %g: raise "
                      "quota.gpus or lower the pools' parts (quota.gpus covers them and the "
                      "rest floats)", sum, t->quota_gpus);
    }
    t->quota_pool_gpus = pq;
    return 0;
}

int cfg_cohorts_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"name", "parent", "weight", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (n->kind != SPW_Y_SEQ)
        return cfg_at(x, n, err, "%s", "cohorts: expected a list like '- {name: research, parent: org}'");
    for (size_t i = 0; i < n->n; i++) {
        const spw_ynode_t *c = n->items[i], *nn = spw_ymap_get(c, "name");
        const char *name;
        if (spw_ymap_check_keys(x->d, c, "a cohort", keys, err) < 0)
            return -1;
        if (!nn)
            return cfg_at(x, c, err, "%s", "a cohort needs 'name: NAME' (the name teams give as cohort:)");
        if (spw_ynode_str(x->d, nn, "name", &name, err) < 0)
            return -1;
        int k = cohort_index(g, name);
        if (k >= 0)
            return cfg_at(x, nn, err, "two cohorts are named '%.40s' (first at line %d)", name,
                          g->cohorts[k].line);
        spw_cohort_spec_t s = {.line = c->line, .parent = -1};
        if (weight_key(x, c, &s.weight, err) < 0)
            return -1;
        s.name = spw_xstrdup(name);
        g->cohorts = spw_xrealloc(g->cohorts, (g->ncohorts + 1) * sizeof(*g->cohorts));
        g->cohorts[g->ncohorts++] = s;
    }
    /* Parents may name cohorts further down the list. */
    for (size_t i = 0; i < n->n; i++) {
        const spw_ynode_t *pn = spw_ymap_get(n->items[i], "parent");
        const char *name;
        if (!pn)
            continue;
        if (spw_ynode_str(x->d, pn, "parent", &name, err) < 0)
            return -1;
        g->cohorts[i].parent = cohort_index(g, name);
        if (g->cohorts[i].parent < 0)
            return cfg_at(x, pn, err, "cohort '%s': parent '%.40s' is not in cohorts:",
                          g->cohorts[i].name, name);
    }
    /* A walk up from any cohort must reach a root within ncohorts steps. */
    for (size_t i = 0; i < g->ncohorts; i++) {
        int c = (int)i;
        for (size_t steps = 0; c >= 0; steps++) {
            if (steps > g->ncohorts) {
                const spw_ynode_t *pn = spw_ymap_get(n->items[i], "parent");
                return cfg_at(x, pn ? pn : n->items[i], err,
                              "cohort '%s': its parents form a cycle; one cohort of the tree "
                              "must have no parent", g->cohorts[i].name);
            }
            c = g->cohorts[c].parent;
        }
    }
    return 0;
}

/* The root of cohort c's tree; -1 for -1. */
static int cohort_root(const spw_gov_t *g, int c)
{
    while (c >= 0 && g->cohorts[c].parent >= 0)
        c = g->cohorts[c].parent;
    return c;
}

/* Per pool: the teams' quota.pools parts, in one cohort tree and all
 * together, fit in the pool's GPUs. */
static int pool_quotas_validate(ctx_t *x, const char *file, spw_error_t *err)
{
    const spw_gov_t *g = &x->cfg->fleet.gov;
    const spw_fleet_t *fl = &x->cfg->fleet;
    for (size_t p = 0; p < fl->npools; p++) {
        double cap = pool_gpus(&fl->pools[p]), all = 0;
        for (size_t i = 0; i < g->nteams; i++) {
            const spw_team_spec_t *t = &g->teams[i];
            if (!t->has_quota || !t->quota_pool_gpus || !t->quota_pool_gpus[p])
                continue;
            all += t->quota_pool_gpus[p];
            int root = cohort_root(g, (int)t->cohort - 1);
            double tree = 0;
            for (size_t k = 0; k <= i && root >= 0; k++)
                if (g->teams[k].has_quota && g->teams[k].quota_pool_gpus &&
                    cohort_root(g, (int)g->teams[k].cohort - 1) == root)
                    tree += g->teams[k].quota_pool_gpus[p];
            if (tree > cap)
                return spw_errorf(err, "%s:%d: team '%s': the quota.pools parts of cohort '%s' "
                                  "in pool '%s' add up to %g GPUs, above its %g; lower them or "
                                  "add nodes", file, t->line, t->name, g->cohorts[root].name,
                                  fl->pools[p].name, tree, cap);
            if (all > cap)
                return spw_errorf(err, "%s:%d: team '%s': the teams' quota.pools parts in pool "
                                  "'%s' add up to %g GPUs, above its %g; lower them or add "
                                  "nodes", file, t->line, t->name, fl->pools[p].name, all, cap);
        }
    }
    return 0;
}

int cfg_fair_validate(ctx_t *x, const char *file, spw_error_t *err)
{
    const spw_gov_t *g = &x->cfg->fleet.gov;
    if (pool_quotas_validate(x, file, err) < 0)
        return -1;
    double cap = (double)spw_fleet_gpus(&x->cfg->fleet), all = 0;
    for (size_t i = 0; i < g->nteams; i++) {
        const spw_team_spec_t *t = &g->teams[i];
        if (!t->has_quota)
            continue;
        all += t->quota_gpus;
        /* Quotas inside one cohort tree can all be in use at once. */
        int root = cohort_root(g, (int)t->cohort - 1);
        double tree = 0;
        for (size_t k = 0; k <= i; k++)
            if (g->teams[k].has_quota && root >= 0 &&
                cohort_root(g, (int)g->teams[k].cohort - 1) == root)
                tree += g->teams[k].quota_gpus;
        if (root >= 0 && tree > cap)
            return spw_errorf(err, "%s:%d: team '%s': the quotas of cohort '%s' add up to %g GPUs, "
                              "above the %g on-prem GPUs; lower them or add pools", file, t->line,
                              t->name, g->cohorts[root].name, tree, cap);
        if (all > cap)
            return spw_errorf(err, "%s:%d: team '%s': the teams' quotas add up to %g GPUs, above "
                              "the %g on-prem GPUs; lower them or add pools", file, t->line,
                              t->name, all, cap);
    }
    if (x->cfg->policy.queue == SPW_QUEUE_FAIR && !g->nteams)
        return spw_errorf(err, "%s: policy.queue: fair shares the GPUs among teams, and there "
                          "is no teams: section", file);
    return 0;
}
