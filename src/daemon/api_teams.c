/* api_teams.c: fair share and quotas as the API shows them (docs/fairshare.md):
 * GET /v1/teams (nominal, used, borrowed and lent GPUs per team and cohort),
 * the teams' rows of /metrics, and the sentence `explain` gives a job that
 * waits on its team's share or whose GPUs are being reclaimed.  Called with
 * mu held. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/fair.h"
#include "daemon/api_private.h"

static uint64_t capacity(const spw_daemon_t *d)
{
    spw_engine_stats_t st;
    spw_engine_stats(d->engine, &st);
    return st.onprem_gpus;
}

/* Adds team t's (index + 1) figures to o. */
static void team_fields(const spw_daemon_t *d, uint32_t t, json_t *o)
{
    spw_fair_team_t ft;
    spw_fair_team(spw_engine_fair(d->engine), t, d->now, &ft);
    json_object_set_new(o, "nominal_gpus", json_real(ft.nominal_gpus));
    json_object_set_new(o, "used_gpus", json_integer(ft.used_gpus));
    json_object_set_new(o, "borrowed_gpus", json_integer(ft.borrowed_gpus));
    json_object_set_new(o, "lent_gpus", json_integer(ft.lent_gpus));
    json_object_set_new(o, "usage_gpu_h", json_real(ft.usage_gpu_s / 3600.0));
    json_object_set_new(o, "share", json_real(ft.share));
}

/* Adds team i's (index) per-pool quota parts (quota.pools, an object by
 * pool name, when it has them) and its cloud GPUs: held now and its cap
 * (governance's max_cloud_gpus, the cloud GPU quota; null = none). */
static void cloud_fields(const spw_daemon_t *d, size_t i, json_t *o)
{
    const spw_team_spec_t *ts = &d->fleet.gov.teams[i];
    if (ts->has_quota && ts->quota_pool_gpus) {
        json_t *p = json_object();
        for (size_t k = 0; k < d->fleet.npools; k++)
            if (ts->quota_pool_gpus[k] > 0)
                json_object_set_new(p, d->fleet.pools[k].name, json_real(ts->quota_pool_gpus[k]));
        json_object_set_new(o, "quota_pools", p);
    }
    spw_team_ledger_t lg;
    spw_govrt_ledger(spw_engine_gov(d->engine), (int)i, d->now, &lg);
    json_object_set_new(o, "cloud_gpus", json_real(lg.cloud_gpus));
    json_object_set_new(o, "max_cloud_gpus",
                        isfinite(ts->max_cloud_gpus) ? json_real(ts->max_cloud_gpus) : json_null());
}

/* The cohort tree's root of cohort c (index), and whether c is in the tree of r. */
static int in_tree(const spw_gov_t *g, int c, int r)
{
    for (; c >= 0; c = g->cohorts[c].parent)
        if (c == r)
            return 1;
    return 0;
}

int spw_daemon_teams(spw_daemon_t *d, const spw_caller_t *who, json_t **out, spw_error_t *err)
{
    (void)err;
    LOCK(d);
    const spw_gov_t *g = &d->fleet.gov;
    json_t *teams = json_array(), *cohorts = json_array();
    for (size_t i = 0; i < g->nteams; i++) {
        const spw_team_spec_t *ts = &g->teams[i];
        if (!who->admin && !(who->team && strcmp(who->team, ts->name) == 0))
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "team", json_string(ts->name));
        json_object_set_new(o, "cohort", ts->cohort && ts->cohort <= g->ncohorts
                                             ? json_string(g->cohorts[ts->cohort - 1].name)
                                             : json_null());
        json_object_set_new(o, "quota", json_boolean(ts->has_quota));
        team_fields(d, (uint32_t)i + 1, o);
        cloud_fields(d, i, o);
        json_array_append_new(teams, o);
    }
    for (size_t c = 0; c < g->ncohorts && who->admin; c++) {
        double v[4];
        api_cohort_gpus(d, c, v);
        json_t *o = json_object();
        json_object_set_new(o, "cohort", json_string(g->cohorts[c].name));
        json_object_set_new(o, "parent", g->cohorts[c].parent >= 0
                                             ? json_string(g->cohorts[g->cohorts[c].parent].name)
                                             : json_null());
        json_object_set_new(o, "nominal_gpus", json_real(v[0]));
        json_object_set_new(o, "used_gpus", json_integer((json_int_t)v[1]));
        json_object_set_new(o, "borrowed_gpus", json_integer((json_int_t)v[2]));
        json_object_set_new(o, "lent_gpus", json_integer((json_int_t)v[3]));
        json_array_append_new(cohorts, o);
    }
    json_t *o = json_object();
    json_object_set_new(o, "now_ts", json_real(d->now));
    json_object_set_new(o, "onprem_gpus", json_integer((json_int_t)capacity(d)));
    json_object_set_new(o, "queue", json_string(spw_queue_order_name(d->cfg->policy.queue)));
    json_object_set_new(o, "quotas", json_boolean(spw_fair_quotas(spw_engine_fair(d->engine))));
    json_object_set_new(o, "teams", teams);
    json_object_set_new(o, "cohorts", cohorts);
    UNLOCK(d);
    *out = o;
    return 200;
}

void api_team_gpus(const spw_daemon_t *d, size_t i, double v[4])
{
    spw_fair_team_t ft;
    spw_fair_team(spw_engine_fair(d->engine), (uint32_t)i + 1, d->now, &ft);
    v[0] = ft.nominal_gpus;
    v[1] = ft.used_gpus;
    v[2] = ft.borrowed_gpus;
    v[3] = ft.lent_gpus;
}

/* A cohort's figures add up those of the teams in its subtree. */
void api_cohort_gpus(const spw_daemon_t *d, size_t c, double v[4])
{
    const spw_gov_t *g = &d->fleet.gov;
    v[0] = v[1] = v[2] = v[3] = 0;
    for (size_t i = 0; i < g->nteams; i++) {
        if (!g->teams[i].cohort || !in_tree(g, (int)g->teams[i].cohort - 1, (int)c))
            continue;
        double t[4];
        api_team_gpus(d, i, t);
        for (int k = 0; k < 4; k++)
            v[k] += t[k];
    }
}

json_t *api_fair_explain(const spw_daemon_t *d, const djob_t *j)
{
    const spw_fair_t *f = spw_engine_fair(d->engine);
    const spw_gov_t *g = &d->fleet.gov;
    uint32_t t = j->ej.team <= g->nteams ? j->ej.team : 0;
    if (!j->ej.l || !t || (!spw_fair_quotas(f) && d->cfg->policy.queue != SPW_QUEUE_FAIR))
        return json_null();
    char buf[240];
    spw_fair_team_t ft;
    spw_fair_team(f, t, d->now, &ft);
    double cap = (double)capacity(d);
    const char *name = g->teams[t - 1].name;
    if (j->ej.state == SPW_JOB_ONPREM) {
        uint32_t for_team = spw_fair_marked_for(f, &j->ej);
        if (!for_team || for_team > g->nteams)
            return json_null();
        snprintf(buf, sizeof(buf), "will be preempted at %.0f: team %s is under its quota and "
                 "takes back the GPUs borrowed by team %s", j->ej.l->reclaim_at_s,
                 g->teams[for_team - 1].name, name);
        return json_string(buf);
    }
    if (j->ej.state != SPW_JOB_QUEUED)
        return json_null();
    for (size_t s = 0; s < d->njobs; s++) {
        const djob_t *v = d->jobs[s];
        if (v && v->ej.l && v->ej.state == SPW_JOB_ONPREM && spw_fair_marked_for(f, &v->ej) == t) {
            uint32_t vt = v->ej.team <= g->nteams ? v->ej.team : 0;
            snprintf(buf, sizeof(buf), "will preempt %s (borrowed by team %s)", v->id,
                     vt ? g->teams[vt - 1].name : "(none)");
            return json_string(buf);
        }
    }
    double used = cap > 0 ? 100.0 * ft.used_gpus / cap : 0;
    double fair = spw_fair_quotas(f) ? (cap > 0 ? 100.0 * ft.nominal_gpus / cap : 0)
                                     : 100.0 * ft.share;
    if (spw_fair_tier(f, t, j->ej.gpus) == SPW_FAIR_REFUSED || used + 1e-9 >= fair)
        snprintf(buf, sizeof(buf), "waits: team %s is above its fair share (%.0f%% used vs "
                 "%.0f%%)", name, used, fair);
    else
        snprintf(buf, sizeof(buf), "team %s is within its fair share (%.0f%% used vs %.0f%%)",
                 name, used, fair);
    return json_string(buf);
}
