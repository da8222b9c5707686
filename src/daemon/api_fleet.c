/* api_fleet.c: the API's fleet calls (daemon.h): pools and cloud
 * instances, costs per team and period, health and readiness, and the
 * admin's preempt and node commands. */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fair.h"
#include "daemon/api_private.h"
#include "util/version.h"

/* ---- pools, costs, health ----------------------------------------------------------- */

/* A cloud account's name, type and whether it is emulated, as JSON. */
static json_t *acct_json(const dacct_t *a)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(a->name));
    json_object_set_new(o, "type", json_string(a->conf ? a->conf->type : a->ops->name));
    json_object_set_new(o, "emulated", json_boolean(a->ops->emulated));
    return o;
}

static json_t *inst_json(spw_daemon_t *d, const dinst_t *x)
{
    char on[200];
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(x->in.id));
    json_object_set_new(o, "offer", json_string(spw_daemon_offer_name(&d->fleet.offers[x->in.offer], on, sizeof(on))));
    json_object_set_new(o, "state", json_string(spw_instance_state_name(x->in.state)));
    json_object_set_new(o, "job_id", x->job_seq ? json_string(d->jobs[x->job_seq]->id) : json_null());
    json_object_set_new(o, "launched_ts", spw_daemon_ts_json(x->in.launched_s));
    json_object_set_new(o, "ready_ts", x->in.state == SPW_INSTANCE_BOOTING ? json_null() : spw_daemon_ts_json(x->in.ready_s));
    json_object_set_new(o, "ended_ts", spw_daemon_ts_json(x->in.ended_s));
    json_object_set_new(o, "price_usd_per_h", json_real(x->in.price_usd_per_h));
    json_object_set_new(o, "cost_usd", json_real(spw_instance_cost_usd(&x->in, d->now)));
    json_object_set_new(o, "emulated", json_boolean(dm_inst_emulated(d, x)));
    json_object_set_new(o, "account", json_string(x->in.account));
    json_object_set_new(o, "cloud_id", x->in.cloud_id[0] ? json_string(x->in.cloud_id) : json_null());
    /* where its jobs run over ssh (daemon.emulated.boot_command); null
     * for an instance that is no host */
    json_object_set_new(o, "addr", x->in.addr[0] ? json_string(x->in.addr) : json_null());
    /* the Slurm cloud node it is (cloud.slurm_partition), or null */
    json_object_set_new(o, "slurm_node", x->snode && x->snode <= d->nscloud
                                             ? json_string(d->scloud_nodes[x->snode - 1])
                                             : json_null());
    return o;
}

/* GPUs of pool p on nodes out of service. */
uint64_t api_pool_down_gpus(const spw_daemon_t *d, size_t p)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < d->fleet.pools[p].nnodes; k++)
        if (d->node_down[p][k])
            n += d->fleet.pools[p].node_gpus[k];
    return n;
}

/* GPUs of pool p free for a job now: neither held nor on a node that is down. */
uint64_t api_pool_free_gpus(const spw_daemon_t *d, size_t p)
{
    uint64_t used = d->pool_busy[p] + api_pool_down_gpus(d, p);
    return d->pool_gpus[p] > used ? d->pool_gpus[p] - used : 0;
}


offer_tally_t *api_tally_offers(const spw_daemon_t *d, double now)
{
    offer_tally_t *t = spw_xcalloc(d->fleet.noffers + 1, sizeof(*t));
    for (size_t k = 0; k < d->ninst; k++) {
        offer_tally_t *o = &t[d->inst[k].in.offer];
        o->by_state[d->inst[k].in.state]++;
        o->n++;
        o->usd += spw_instance_cost_usd(&d->inst[k].in, now);
    }
    return t;
}

/* For the first offer of its provider, the provider's totals over all its
 * offers (0); -1 when an earlier offer already stands for the provider. */
int api_provider_total(const spw_daemon_t *d, const offer_tally_t *t, size_t i,
                       double *usd, size_t *n)
{
    const char *prov = d->fleet.offers[i].provider;
    for (size_t k = 0; k < i; k++)
        if (strcmp(d->fleet.offers[k].provider, prov) == 0)
            return -1;
    *usd = 0;
    *n = 0;
    for (size_t k = i; k < d->fleet.noffers; k++)
        if (strcmp(d->fleet.offers[k].provider, prov) == 0) {
            *usd += t[k].usd;
            *n += t[k].n;
        }
    return 0;
}

int spw_daemon_pools(spw_daemon_t *d, const spw_caller_t *who, json_t **out, spw_error_t *err)
{
    (void)err;
    json_t *pools = json_array(), *offers = json_array(), *insts = json_array();
    LOCK(d);
    for (size_t i = 0; i < d->fleet.npools; i++) {
        const spw_pool_spec_t *p = &d->fleet.pools[i];
        uint64_t total = d->pool_gpus[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(p->name));
        json_object_set_new(o, "kind", json_string("onprem"));
        json_object_set_new(o, "backend", json_string(spw_daemon_pool_backend(d, i)));
        json_object_set_new(o, "nodes", json_integer(p->nnodes));
        json_object_set_new(o, "gpu_model", p->model >= 0 ? json_string(d->fleet.models.name[p->model]) : json_null());
        json_object_set_new(o, "gpus", json_integer((json_int_t)total));
        json_object_set_new(o, "gpus_busy", json_integer((json_int_t)d->pool_busy[i]));
        json_object_set_new(o, "gpus_free", json_integer((json_int_t)api_pool_free_gpus(d, i)));
        json_object_set_new(o, "gpus_down", json_integer((json_int_t)api_pool_down_gpus(d, i)));
        json_object_set_new(o, "cost_usd_per_gpu_h", json_real(p->cost_usd_per_gpu_h));
        json_t *down = json_array();
        for (uint32_t n = 0; n < p->nnodes; n++)
            if (d->node_down[i][n])
                json_array_append_new(down, json_integer(n));
        json_object_set_new(o, "nodes_down", down);
        json_array_append_new(pools, o);
    }
    offer_tally_t *t = api_tally_offers(d, d->now);
    for (size_t i = 0; i < d->fleet.noffers; i++) {
        const spw_offer_t *f = &d->fleet.offers[i];
        char on[200];
        size_t live = t[i].by_state[SPW_INSTANCE_BOOTING] + t[i].by_state[SPW_INSTANCE_READY];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(spw_daemon_offer_name(f, on, sizeof(on))));
        json_object_set_new(o, "provider", json_string(f->provider));
        json_object_set_new(o, "region", json_string(f->region));
        json_object_set_new(o, "instance_type", json_string(f->instance_type));
        json_object_set_new(o, "gpu_model", f->model >= 0 ? json_string(d->fleet.models.name[f->model]) : json_null());
        json_object_set_new(o, "gpus", json_integer(f->gpus));
        json_object_set_new(o, "ondemand_usd_per_h", json_real(f->ondemand_usd_per_h));
        json_object_set_new(o, "spot_usd_per_h", spw_daemon_ts_json(f->spot_usd_per_h));
        /* Where that spot price comes from: the account's cloud (live, as
         * of spot_price_at) or the catalog. */
        int live_price = d->spot_live_ts && !isnan(d->spot_live_ts[i]);
        json_object_set_new(o, "spot_price_source", json_string(live_price ? "live" : "catalog"));
        json_object_set_new(o, "spot_price_at",
                            live_price ? json_real(d->spot_live_ts[i]) : json_null());
        json_object_set_new(o, "boot_delay_s", json_real(f->boot_delay_s));
        json_object_set_new(o, "emulated", json_boolean(dm_offer_emulated(d, i)));
        const dacct_t *a = dm_acct_of_offer(d, i);
        json_object_set_new(o, "account", a ? json_string(a->name) : json_null());
        char bw[256];
        const char *blocked = dm_offer_blocked(d, i, 0, bw, sizeof(bw));
        json_object_set_new(o, "blocked", blocked ? json_string(blocked) : json_null());
        json_object_set_new(o, "instances_live", json_integer((json_int_t)live));
        json_array_append_new(offers, o);
    }
    free(t);
    for (size_t k = 0; k < d->ninst; k++) {
        const dinst_t *x = &d->inst[k];
        const djob_t *j = x->job_seq ? d->jobs[x->job_seq] : NULL;
        if (!spw_instance_state_live(x->in.state) && !who->admin)
            continue;
        if (!who->admin && !(j && api_visible(who, j)))
            continue;
        json_array_append_new(insts, inst_json(d, x));
    }
    /* The cloud accounts, and the offers their refusals block now (the
     * loop writes them: read under the lock). */
    json_t *accts = json_array();
    for (size_t i = 0; i < d->nacct; i++) {
        const dacct_t *a = &d->acct[i];
        json_t *o = acct_json(a);
        json_object_set_new(o, "instances_live", json_integer((json_int_t)a->live));
        json_object_set_new(o, "usd_per_h_live", json_real(a->live_usd_per_h));
        json_object_set_new(o, "max_instances", a->conf && a->conf->max_instances
                                                    ? json_integer(a->conf->max_instances)
                                                    : json_null());
        json_object_set_new(o, "max_usd_per_h", a->conf && a->conf->max_usd_per_h > 0
                                                    ? json_real(a->conf->max_usd_per_h)
                                                    : json_null());
        json_object_set_new(o, "blocked", a->blocked_until > d->now ? json_string(a->blocked_why)
                                                                    : json_null());
        json_array_append_new(accts, o);
    }
    json_t *blocked = dm_blocked_json(d);
    UNLOCK(d);
    *out = json_object();
    json_object_set_new(*out, "pools", pools);
    json_object_set_new(*out, "offers", offers);
    json_object_set_new(*out, "instances", insts);
    json_object_set_new(*out, "accounts", accts);
    json_object_set_new(*out, "blocked", blocked);
    return 200;
}

/* ---- costs ------------------------------------------------------------------------ */

/* One team's row of /v1/costs. */
typedef struct teamsum {
    const char *team;            /* borrowed: the config's or a job's */
    int gov;                     /* index in fleet.gov.teams, or -1 */
    double onprem_usd, cloud_usd, onprem_gpu_h, cloud_gpu_h;  /* its jobs in the period */
    double commit_usd;           /* its jobs' share of commitments, at the committed rate */
    double settled_usd;          /* from its jobs: settled against its budget */
    double egress_usd;           /* from its jobs: egress settled */
    double reserved_usd;         /* from its jobs: live reservations charged in the period */
    long jobs;                   /* jobs charged in the period */
    long held, onprem_only;      /* queued jobs a budget or cap holds now */
    long rejected;               /* jobs rejected in the period */
} teamsum_t;

static teamsum_t *team_row(teamsum_t **ts, size_t *nts, const char *team, int gov)
{
    for (size_t k = 0; k < *nts; k++)
        if (strcmp((*ts)[k].team, team) == 0)
            return &(*ts)[k];
    *ts = spw_xrealloc(*ts, (*nts + 1) * sizeof(**ts));
    teamsum_t *t = &(*ts)[(*nts)++];
    memset(t, 0, sizeof(*t));
    t->team = team;
    t->gov = gov;
    return t;
}

/* A team and the seq of its first job. */
typedef struct team_first {
    const char *team;            /* borrowed */
    int64_t seq;
} team_first_t;

static int by_first_seq(const void *a, const void *b)
{
    int64_t x = ((const team_first_t *)a)->seq, y = ((const team_first_t *)b)->seq;
    return (x > y) - (x < y);
}

/* A row for each team of the jobs caller who may see, in the order of each
 * team's first job, whether that job is in memory or left it (retain.c),
 * so that the rows keep their order when jobs leave memory. */
static void job_team_rows(const spw_daemon_t *d, const spw_caller_t *who, teamsum_t **ts,
                          size_t *nts)
{
    const dgone_t *gn = &d->gone;
    team_first_t *f = NULL;
    size_t nf = 0, cap = 0;
    for (size_t s = 0; s < gn->nteams + d->njobs; s++) {
        const djob_t *j = s < gn->nteams ? NULL : d->jobs[s - gn->nteams];
        if (s >= gn->nteams && !j)
            continue;
        const char *team = j ? j->team : gn->teams[s].name;
        int64_t seq = j ? j->seq : gn->teams[s].first_seq;
        if (!(who->admin || (who->team && strcmp(who->team, team) == 0)))
            continue;
        size_t k = 0;
        while (k < nf && strcmp(f[k].team, team) != 0)
            k++;
        if (k < nf) {
            if (seq < f[k].seq)
                f[k].seq = seq;
            continue;
        }
        if (nf == cap) {
            cap = cap ? 2 * cap : 16;
            f = spw_xrealloc(f, cap * sizeof(*f));
        }
        f[nf++] = (team_first_t){team, seq};
    }
    if (nf)
        qsort(f, nf, sizeof(*f), by_first_seq);
    for (size_t k = 0; k < nf; k++)
        team_row(ts, nts, f[k].team, spw_gov_team(&d->fleet.gov, f[k].team));
    free(f);
}

/* A dollar amount that may be "none": null for INFINITY. */
static json_t *usd_json(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The budget part of a team's row: from the engine's ledger for the
 * current period of the team's kind, else from its jobs' records. */
static void team_budget_json(spw_daemon_t *d, json_t *o, const teamsum_t *t, spw_period_t kind,
                             double start, double end, int explicit_period, double now)
{
    const spw_gov_t *g = &d->fleet.gov;
    const spw_team_spec_t *ts = t->gov >= 0 ? &g->teams[t->gov] : NULL;
    spw_govrt_t *rt = spw_engine_gov(d->engine);
    char label[32];
    spw_team_ledger_t L;
    int ledger = ts && (!explicit_period || (ts->period == kind && start <= now && now < end));
    if (ledger) {
        spw_govrt_ledger(rt, t->gov, now, &L);
        spw_period_label(ts->period, now, label, sizeof(label));
        json_object_set_new(o, "period", json_string(label));
        json_object_set_new(o, "period_kind", json_string(spw_period_name(ts->period)));
        json_object_set_new(o, "period_start_ts", json_real(L.period_start_s));
        json_object_set_new(o, "period_end_ts", json_real(L.period_end_s));
        json_object_set_new(o, "source", json_string("ledger"));
        json_object_set_new(o, "budget_usd", usd_json(L.budget_usd));
        json_object_set_new(o, "settled_usd", json_real(L.settled_usd));
        json_object_set_new(o, "reserved_usd", json_real(L.reserved_usd));
        json_object_set_new(o, "remaining_usd", usd_json(L.remaining_usd));
        json_object_set_new(o, "egress_usd", json_real(L.egress_settled_usd + L.egress_reserved_usd));
    } else {
        /* Past or future periods, teams outside the config, and teams whose
         * budget runs over another kind of period: from the job records. */
        int same = ts && ts->period == kind;
        spw_period_label(kind, start, label, sizeof(label));
        json_object_set_new(o, "period", json_string(label));
        json_object_set_new(o, "period_kind", json_string(spw_period_name(kind)));
        json_object_set_new(o, "period_start_ts", json_real(start));
        json_object_set_new(o, "period_end_ts", json_real(end));
        json_object_set_new(o, "source", json_string("jobs"));
        double budget = same ? ts->budget_usd : INFINITY;
        json_object_set_new(o, "budget_usd", usd_json(budget));
        if (ts && !same)
            json_object_set_new(o, "budget_period_kind", json_string(spw_period_name(ts->period)));
        json_object_set_new(o, "settled_usd", json_real(t->settled_usd));
        json_object_set_new(o, "reserved_usd", json_real(t->reserved_usd));
        json_object_set_new(o, "remaining_usd",
                            usd_json(isfinite(budget) ? budget - t->settled_usd - t->reserved_usd
                                                      : INFINITY));
        json_object_set_new(o, "egress_usd", json_real(t->egress_usd));
    }
    json_object_set_new(o, "on_exhausted", ts ? json_string(spw_exhausted_name(ts->on_exhausted))
                                              : json_null());
    json_object_set_new(o, "max_egress_usd_per_month", usd_json(ts ? ts->max_egress_usd_per_month : INFINITY));
    /* now, whatever the period */
    if (ts) {
        spw_govrt_ledger(rt, t->gov, now, &L);
        json_object_set_new(o, "cloud_usd_per_h", json_real(L.cloud_usd_per_h));
        json_object_set_new(o, "cloud_gpus", json_real(L.cloud_gpus));
    } else {
        json_object_set_new(o, "cloud_usd_per_h", json_null());
        json_object_set_new(o, "cloud_gpus", json_null());
    }
    json_object_set_new(o, "max_cloud_usd_per_h", usd_json(ts ? ts->max_cloud_usd_per_h : INFINITY));
    json_object_set_new(o, "max_cloud_gpus", usd_json(ts ? ts->max_cloud_gpus : INFINITY));
    json_object_set_new(o, "held_jobs", json_integer(t->held));
    json_object_set_new(o, "onprem_only_jobs", json_integer(t->onprem_only));
    json_object_set_new(o, "rejected_jobs", json_integer(t->rejected));
    /* Fair share and quotas, now (api_teams.c); null outside them. */
    static const char *const gk[] = {"nominal_gpus", "used_gpus", "borrowed_gpus", "lent_gpus"};
    double gv[4];
    int fair = ts && (d->cfg->policy.queue == SPW_QUEUE_FAIR ||
                      spw_fair_quotas(spw_engine_fair(d->engine)));
    if (fair)
        api_team_gpus(d, (size_t)t->gov, gv);
    for (int k = 0; k < 4; k++)
        json_object_set_new(o, gk[k], fair ? json_real(gv[k]) : json_null());
}

int spw_daemon_costs(spw_daemon_t *d, const spw_caller_t *who, const char *period, json_t **out,
                     spw_error_t *err)
{
    spw_period_t kind = SPW_PERIOD_MONTH;
    double start;
    int explicit_period = period && *period;
    LOCK(d);
    double now = d->now;
    if (explicit_period) {
        spw_error_t e2;
        if (spw_period_parse(period, &kind, &start, &e2) < 0) {
            UNLOCK(d);
            return spw_errorf(err, "period: %s (give YYYY-MM or YYYY-Www, e.g. 2026-11 or "
                              "2026-W47)", e2.text), 400;
        }
    } else {
        start = spw_period_start(kind, now);
    }
    double end = spw_period_end(kind, start);
    double upto = fmin(end, now);
    const spw_gov_t *g = &d->fleet.gov;
    teamsum_t *ts = NULL;
    size_t nts = 0;
    /* Every team of the config has a row (budgets show even before a
     * first job); a team token sees only its own. */
    for (size_t i = 0; i < g->nteams; i++)
        if (who->admin || (who->team && strcmp(who->team, g->teams[i].name) == 0))
            team_row(&ts, &nts, g->teams[i].name, (int)i);
    double *pool_usd = spw_xcalloc(d->fleet.npools + 1, sizeof(double));
    double *pool_gh = spw_xcalloc(d->fleet.npools + 1, sizeof(double));
    double onprem = 0, cloud_bound = 0, commit_jobs = 0;
    /* Per commitment (by offer index): its jobs' share charged to the
     * period, as their teams' commit_usd counts it. */
    double *commit_by = spw_xcalloc(d->fleet.noffers + 1, sizeof(double));
    /* Ended jobs that left memory (retain.c) first, as they are the older,
     * by the period they were charged to. */
    const dgone_t *gn = &d->gone;
    job_team_rows(d, who, &ts, &nts);
    for (size_t k = 0; k < gn->ncost; k++) {
        const dgone_cost_t *r = &gn->cost[k];
        const char *team = gn->teams[r->team].name;
        if (r->kind != kind || !(r->start_ts >= start && r->start_ts < end) ||
            !(who->admin || (who->team && strcmp(who->team, team) == 0)))
            continue;
        teamsum_t *t = team_row(&ts, &nts, team, spw_gov_team(g, team));
        if (r->pool >= 0) {
            pool_usd[r->pool] += r->onprem_usd;
            pool_gh[r->pool] += r->onprem_gpu_h;
        }
        t->onprem_usd += r->onprem_usd;
        t->onprem_gpu_h += r->onprem_gpu_h;
        t->cloud_usd += r->cloud_usd;
        t->commit_usd += r->commit_usd;
        commit_jobs += r->commit_usd;
        if (r->commit >= 0)
            commit_by[r->commit] += r->commit_usd;
        t->cloud_gpu_h += r->cloud_gpu_h;
        t->jobs += (long)r->jobs;
        t->settled_usd += r->settled_usd;
        t->egress_usd += r->egress_usd;
        t->rejected += (long)r->rejected;
        onprem += r->onprem_usd;
        cloud_bound += r->cloud_usd;
    }
    for (size_t s = 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j || !api_visible(who, j))
            continue;
        teamsum_t *t = team_row(&ts, &nts, j->team, spw_gov_team(g, j->team));
        if (j->st == SPW_DJOB_QUEUED) {
            t->held += j->ej.reason == SPW_REASON_HELD_BUDGET || j->ej.reason == SPW_REASON_HELD_CAP ||
                       j->ej.reason == SPW_REASON_OVER_LIMIT;
            t->onprem_only += j->ej.reason == SPW_REASON_ONPREM_ONLY_BUDGET;
        }
        /* A job's spend counts in the period it is charged to: that of its
         * last placement, as budgets do. */
        double at = isnan(j->charge_ts) ? j->submit_ts : j->charge_ts;
        if (!(at >= start && at < end))
            continue;
        double on_usd = spw_daemon_job_onprem_usd(d, j, now), on_gh = j->onprem_gpu_h;
        if (j->holds && !isnan(j->start_ts) && now > j->start_ts)
            on_gh += (now - j->start_ts) / 3600.0 * j->held_gpus;
        if (j->pool >= 0) {
            pool_usd[j->pool] += on_usd;
            pool_gh[j->pool] += on_gh;
        }
        double cl = spw_daemon_job_cloud_usd(d, j, now);
        t->onprem_usd += on_usd;
        t->onprem_gpu_h += on_gh;
        t->cloud_usd += cl;
        double cm = spw_daemon_job_commit_usd(d, j, now);
        t->commit_usd += cm;
        commit_jobs += cm;
        int32_t ci = dm_job_commitment(d, j);
        if (ci >= 0)
            commit_by[ci] += cm;
        t->cloud_gpu_h += j->cloud_gpu_h;
        t->jobs++;
        t->settled_usd += j->led_usd + spw_daemon_job_budget_egress(j);
        t->egress_usd += j->led_egress_usd;
        if (j->ej.state == SPW_JOB_CLOUD)
            t->reserved_usd += spw_job_rare(&j->ej)->reserved_usd;
        t->rejected += j->st == SPW_DJOB_REJECTED;
        onprem += on_usd;
        cloud_bound += cl;
    }
    json_t *teams = json_array(), *provs = json_array(), *pools = json_array();
    for (size_t k = 0; k < nts; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "team", json_string(ts[k].team));
        team_budget_json(d, o, &ts[k], kind, start, end, explicit_period, now);
        json_object_set_new(o, "onprem_usd", json_real(ts[k].onprem_usd));
        json_object_set_new(o, "cloud_usd", json_real(ts[k].cloud_usd));
        json_object_set_new(o, "commit_usd", json_real(ts[k].commit_usd));
        json_object_set_new(o, "onprem_gpu_h", json_real(ts[k].onprem_gpu_h));
        json_object_set_new(o, "cloud_gpu_h", json_real(ts[k].cloud_gpu_h));
        json_object_set_new(o, "jobs", json_integer(ts[k].jobs));
        json_array_append_new(teams, o);
    }
    double cloud = cloud_bound;
    json_t *org = json_null();
    if (who->admin) {
        /* Billing truth: what every instance billed in the period, bound to
         * a job or not. */
        cloud = 0;
        double idle_usd_h = 0;
        for (size_t i = 0; i < d->fleet.noffers; i++) {
            const char *prov = d->fleet.offers[i].provider;
            int first = 1;
            for (size_t k = 0; k < i && first; k++)
                first = strcmp(d->fleet.offers[k].provider, prov) != 0;
            if (!first)
                continue;
            double usd = 0;
            size_t n = 0;
            for (size_t k = 0; k < d->ninst; k++) {
                const spw_instance_t *in = &d->inst[k].in;
                if (strcmp(d->fleet.offers[in->offer].provider, prov) != 0)
                    continue;
                double a = fmax(start, in->launched_s);
                double b = spw_instance_state_live(in->state) ? upto : fmin(upto, in->ended_s);
                if (!(in->launched_s < end) || !(b > a || in->launched_s >= start))
                    continue;
                n++;
                if (b > a)
                    usd += in->price_usd_per_h * (b - a) / 3600.0;
            }
            if (n == 0)
                continue;
            json_t *o = json_object();
            json_object_set_new(o, "provider", json_string(prov));
            json_object_set_new(o, "emulated", json_boolean(dm_all_emulated(d)));
            json_object_set_new(o, "usd", json_real(usd));
            json_object_set_new(o, "instances", json_integer((json_int_t)n));
            json_array_append_new(provs, o);
            cloud += usd;
        }
        for (size_t k = d->inst_lo; k < d->ninst; k++)
            if (!d->inst[k].job_seq && spw_instance_state_live(d->inst[k].in.state))
                idle_usd_h += d->inst[k].in.price_usd_per_h;
        double usd_h, gpus;
        spw_govrt_org(spw_engine_gov(d->engine), &usd_h, &gpus);
        org = json_object();
        json_object_set_new(org, "max_cloud_usd_per_h", usd_json(g->max_cloud_usd_per_h));
        json_object_set_new(org, "cloud_usd_per_h", json_real(usd_h));
        json_object_set_new(org, "max_cloud_gpus", usd_json(g->max_cloud_gpus));
        json_object_set_new(org, "cloud_gpus", json_real(gpus));
        json_object_set_new(org, "idle_usd_per_h", json_real(idle_usd_h));
        json_object_set_new(org, "default_max_runtime_s", json_real(g->default_max_runtime_s));
    }
    /* Owned capacity costs money used or not (the simulator's model,
     * spw_pool_owned_cost): every GPU from the first submit (or the period
     * start) to now.  Admins see it: a team's view holds only its jobs. */
    double owned = 0, owned_idle = 0;
    double from = isnan(d->since_ts) ? upto : fmax(start, d->since_ts);
    for (size_t i = 0; i < d->fleet.npools; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "pool", json_string(d->fleet.pools[i].name));
        json_object_set_new(o, "usd", json_real(pool_usd[i]));
        json_object_set_new(o, "gpu_h", json_real(pool_gh[i]));
        if (who->admin) {
            spw_owned_split_t os;
            spw_pool_owned_cost(&d->fleet.pools[i], upto > from ? (upto - from) / 3600.0 : 0,
                                pool_gh[i], &os);
            json_object_set_new(o, "owned_usd", json_real(os.total_usd));
            json_object_set_new(o, "owned_idle_usd", json_real(os.idle_usd));
            owned += os.total_usd;
            owned_idle += os.idle_usd;
        }
        json_array_append_new(pools, o);
    }
    /* Commitments cost money used or not, like owned capacity: every
     * committed GPU over the same window, split into the share of the jobs
     * charged to the period (settled and running, kept across restarts by
     * the jobs' own commit_usd) and the idle rest.  Admins see them; a team
     * sees its jobs' share. */
    double commit = commit_jobs, commit_used = 0, commit_idle = 0;
    json_t *commits = json_array();
    if (who->admin) {
        for (size_t i = 0; i < d->fleet.noffers; i++) {
            const spw_offer_t *co = &d->fleet.offers[i];
            if (!spw_offer_committed(co))
                continue;
            double all = spw_commit_cost_usd(co, upto > from ? (upto - from) / 3600.0 : 0);
            double used = fmin(commit_by[i], all), idle = all - used;
            json_t *c = json_object();
            json_object_set_new(c, "name", json_string(co->commit_name));
            json_object_set_new(c, "gpus", json_integer(co->commit_gpus));
            json_object_set_new(c, "usd_per_gpu_h", json_real(co->commit_usd_per_gpu_h));
            json_object_set_new(c, "usd", json_real(used + idle));
            json_object_set_new(c, "used_usd", json_real(used));
            json_object_set_new(c, "idle_usd", json_real(idle));
            json_array_append_new(commits, c);
            commit_used += used;
            commit_idle += idle;
        }
        commit = commit_used + commit_idle;
    }
    free(ts);
    free(commit_by);
    free(pool_usd);
    free(pool_gh);
    char label[32];
    spw_period_label(kind, start, label, sizeof(label));
    json_t *o = json_object();
    json_object_set_new(o, "now_ts", json_real(now));
    json_object_set_new(o, "period", json_string(label));
    json_object_set_new(o, "period_kind", json_string(spw_period_name(kind)));
    json_object_set_new(o, "period_start_ts", json_real(start));
    json_object_set_new(o, "period_end_ts", json_real(end));
    json_object_set_new(o, "current", json_boolean(start <= now && now < end));
    json_object_set_new(o, "since_ts", spw_daemon_ts_json(d->since_ts));
    json_object_set_new(o, "total_usd", json_real(onprem + cloud + commit));
    json_object_set_new(o, "onprem_usd", json_real(onprem));
    json_object_set_new(o, "cloud_usd", json_real(cloud));
    json_object_set_new(o, "cloud_idle_usd", json_real(cloud - cloud_bound > 0 ? cloud - cloud_bound : 0));
    json_object_set_new(o, "owned_usd", who->admin ? json_real(owned) : json_null());
    json_object_set_new(o, "owned_idle_usd", who->admin ? json_real(owned_idle) : json_null());
    json_object_set_new(o, "commit_usd", json_real(commit));
    json_object_set_new(o, "commit_used_usd", who->admin ? json_real(commit_used) : json_null());
    json_object_set_new(o, "commit_idle_usd", who->admin ? json_real(commit_idle) : json_null());
    json_object_set_new(o, "commitments", commits);
    json_object_set_new(o, "teams", teams);
    json_object_set_new(o, "providers", provs);
    json_object_set_new(o, "pools", pools);
    json_object_set_new(o, "org", org);
    UNLOCK(d);
    *out = o;
    return 200;
}

/* ---- instances every account holds ------------------------------------- */

/* What account a's provider lists (*got, caller frees; *n of them), or -1
 * with err.  An async provider is asked without the daemon's lock (its
 * list may wait on the network, and may be called beside the loop's
 * calls); any other provider under it, so it never runs beside the loop. */
static int acct_list(spw_daemon_t *d, const dacct_t *a, spw_instance_t **got, size_t *n,
                     spw_error_t *err)
{
    size_t max = 64;
    *got = NULL;
    for (;;) {
        *got = spw_xrealloc(*got, max * sizeof(spw_instance_t));
        if (!a->ops->async)
            LOCK(d);
        int rc = a->ops->list(a->pv, *got, max, n, err);
        if (!a->ops->async)
            UNLOCK(d);
        if (rc < 0)
            return -1;
        if (*n <= max)
            return 0;
        max = *n;
    }
}

/* The daemon's live record of instance id of account ai, or NULL. */
static dinst_t *known_live(spw_daemon_t *d, size_t ai, const char *id)
{
    for (size_t k = d->inst_lo; k < d->ninst; k++)
        if (d->inst[k].acct == (int32_t)ai && spw_instance_state_live(d->inst[k].in.state) &&
            strcmp(d->inst[k].in.id, id) == 0)
            return &d->inst[k];
    return NULL;
}

int spw_daemon_instances(spw_daemon_t *d, const spw_caller_t *who, int release_orphans,
                         json_t **out, spw_error_t *err)
{
    if (!who->admin)
        return spw_errorf(err, "listing the cloud accounts' instances needs an admin token"), 403;
    json_t *accts = json_array(), *insts = json_array(), *released = json_array();
    double now = fmax(spw_daemon_clock(), d->now);
    /* d->acct is made at start and never changes: safe to walk unlocked. */
    for (size_t ai = 0; ai < d->nacct; ai++) {
        const dacct_t *a = &d->acct[ai];
        json_t *ao = acct_json(a);
        json_array_append_new(accts, ao);
        if (!SPW_PROVIDER_HAS(a->ops, 4, list)) {
            json_object_set_new(ao, "error", json_string("its provider cannot list instances"));
            continue;
        }
        spw_instance_t *got;
        size_t n;
        spw_error_t e2;
        if (acct_list(d, a, &got, &n, &e2) < 0) {
            json_object_set_new(ao, "error", json_string(e2.text));
            free(got);
            continue;
        }
        LOCK(d);
        for (size_t k = 0; k < n; k++) {
            spw_instance_t *in = &got[k];
            const dinst_t *x = known_live(d, ai, in->id);
            char on[200];
            json_t *o = json_object();
            json_object_set_new(o, "account", json_string(a->name));
            json_object_set_new(o, "id", json_string(in->id));
            json_object_set_new(o, "cloud_id", in->cloud_id[0] ? json_string(in->cloud_id)
                                                               : json_null());
            json_object_set_new(o, "offer", json_string(in->offer < d->fleet.noffers
                                    ? spw_daemon_offer_name(&d->fleet.offers[in->offer], on,
                                                            sizeof(on))
                                    : in->instance_type));
            json_object_set_new(o, "zone", json_string(in->zone));
            json_object_set_new(o, "state", json_string(spw_instance_state_name(in->state)));
            json_object_set_new(o, "spot", json_boolean(in->spot));
            /* spillway's tags: the job it was bought for */
            json_object_set_new(o, "job_id", in->job_id[0] ? json_string(in->job_id) : json_null());
            json_object_set_new(o, "launched_ts", json_real(in->launched_s));
            json_object_set_new(o, "price_usd_per_h", json_real(in->price_usd_per_h));
            json_object_set_new(o, "cost_usd", json_real(spw_instance_cost_usd(in, now)));
            json_object_set_new(o, "orphan", json_boolean(x == NULL));
            /* An instance of a job that is still live is left alone: its
             * acquisition, committed before a restart, may be asked again
             * (and answered with this very instance) at any moment. */
            const djob_t *owner = in->job_id[0] ? spw_daemon_find(d, in->job_id) : NULL;
            if (!x && release_orphans && !(owner && !spw_djob_state_terminal(owner->st))) {
                if (a->ops->release(a->pv, in, now, &e2) < 0)
                    json_object_set_new(o, "release_error", json_string(e2.text));
                else
                    json_array_append_new(released, json_string(in->id));
            }
            json_array_append_new(insts, o);
        }
        UNLOCK(d);
        free(got);
    }
    *out = json_object();
    json_object_set_new(*out, "accounts", accts);
    json_object_set_new(*out, "instances", insts);
    if (release_orphans)
        json_object_set_new(*out, "released", released);
    else
        json_decref(released);
    return 200;
}

int spw_daemon_health(spw_daemon_t *d, json_t **out, spw_error_t *err)
{
    char why[400];
    double age;
    /* A loop not started (yet) is not a fault: that is /readyz's. */
    int bad = spw_daemon_health_state(d, why, sizeof(why), &age) == 1;
    *out = json_object();
    json_object_set_new(*out, "status", json_string(bad ? "unhealthy" : "ok"));
    if (bad) {
        json_object_set_new(*out, "reason", json_string(why));
        spw_errorf(err, "%s", why);
    }
    json_object_set_new(*out, "version", json_string(SPW_VERSION));
    json_object_set_new(*out, "uptime_s", json_real(spw_daemon_clock() - d->started_ts));
    json_object_set_new(*out, "last_turn_age_s", isnan(age) ? json_null() : json_real(age));
    /* A cloud account that cannot launch (auth): the daemon still works
     * (on-prem, other accounts), so it is "degraded", not unhealthy, and
     * says which account and why. */
    char acct[256];
    pthread_mutex_lock(&d->hmu);
    snprintf(acct, sizeof(acct), "%s", d->acct_health);
    pthread_mutex_unlock(&d->hmu);
    if (acct[0]) {
        json_object_set_new(*out, "cloud_accounts", json_string(acct));
        if (!bad) {
            json_object_set_new(*out, "status", json_string("degraded"));
            json_object_set_new(*out, "reason", json_string(acct));
        }
    }
    /* Only if the loop does not hold the lock: health never waits on it. */
    if (pthread_mutex_trylock(&d->mu) == 0) {
        json_object_set_new(*out, "jobs_queued",
                            json_integer((json_int_t)spw_engine_queued(d->engine)));
        UNLOCK(d);
    }
    return bad ? 503 : 200;
}

int spw_daemon_ready(spw_daemon_t *d, json_t **out, spw_error_t *err)
{
    char why[400];
    double age;
    int bad = spw_daemon_health_state(d, why, sizeof(why), &age);
    *out = json_object();
    json_object_set_new(*out, "status", json_string(bad ? "not ready" : "ready"));
    if (bad) {
        json_object_set_new(*out, "reason", json_string(why));
        spw_errorf(err, "%s", why);
    }
    return bad ? 503 : 200;
}

int spw_daemon_preempt(spw_daemon_t *d, const spw_caller_t *who, const char *instance_id,
                       json_t **out, spw_error_t *err)
{
    if (!who->admin)
        return spw_errorf(err, "preempting an instance needs an admin token"), 403;
    LOCK(d);
    int status = spw_daemon_do_preempt(d, instance_id, err);
    if (status == 200) {
        *out = json_object();
        json_object_set_new(*out, "id", json_string(instance_id));
        json_object_set_new(*out, "state", json_string("preempted"));
        json_object_set_new(*out, "emulated", json_true());
    }
    UNLOCK(d);
    return status;
}

int spw_daemon_node(spw_daemon_t *d, const spw_caller_t *who, const char *pool,
                    const char *index, int down, json_t **out, spw_error_t *err)
{
    if (!who->admin)
        return spw_errorf(err, "taking a node down or up needs an admin token"), 403;
    char *end;
    errno = 0;
    long long n = strtoll(index, &end, 10);
    LOCK(d);
    int p = spw_daemon_pool_index(d, pool);
    if (p < 0) {
        UNLOCK(d);
        return spw_errorf(err, "no on-prem pool '%s'", pool), 404;
    }
    if (!*index || *end || errno || n < 0 || (unsigned long long)n >= d->fleet.pools[p].nnodes) {
        uint32_t nn = d->fleet.pools[p].nnodes;
        UNLOCK(d);
        return spw_errorf(err, "pool %s has no node '%s' (its nodes are 0 to %u)", pool, index,
                          nn ? nn - 1 : 0), 404;
    }
    char *ids = NULL;
    int status = spw_daemon_do_node(d, (size_t)p, (uint32_t)n, down, &ids, err);
    if (status == 200) {
        json_t *arr = json_array();
        for (const char *q = ids; q && *q;) {
            size_t k = strcspn(q, ",");
            json_array_append_new(arr, json_stringn(q, k));
            q += k + (q[k] == ',');
        }
        *out = json_object();
        json_object_set_new(*out, "pool", json_string(pool));
        json_object_set_new(*out, "node", json_integer(n));
        json_object_set_new(*out, "state", json_string(down ? "down" : "up"));
        json_object_set_new(*out, "jobs_interrupted", arr);
    }
    free(ids);
    UNLOCK(d);
    return status;
}

void spw_daemon_note_request(spw_daemon_t *d, int status, double seconds)
{
    (void)seconds;
    LOCK(d);
    int c = status / 100;
    d->http_codes[c >= 1 && c <= 5 ? c : 0]++;
    UNLOCK(d);
}

static json_t *scloud_node_json(const spw_daemon_t *d, const char *node, const dinst_t *x)
{
    json_t *o = json_object();
    char on[200];
    json_object_set_new(o, "node", json_string(node));
    json_object_set_new(o, "instance", json_string(x->in.id));
    json_object_set_new(o, "offer",
                        json_string(spw_daemon_offer_name(&d->fleet.offers[x->in.offer], on, sizeof(on))));
    json_object_set_new(o, "price_usd_per_h", json_real(x->in.price_usd_per_h));
    json_object_set_new(o, "addr", json_string(x->in.addr));
    json_object_set_new(o, "job", x->job_seq ? json_string(d->jobs[x->job_seq]->id) : json_null());
    return o;
}

int spw_daemon_slurm_node(spw_daemon_t *d, const spw_caller_t *who, const char *node, int resume,
                          json_t **out, spw_error_t *err)
{
    if (!who->admin)
        return spw_errorf(err, "powering Slurm cloud nodes up or down needs an admin token"), 403;
    LOCK(d);
    dinst_t *x;
    const char *st;
    int status = spw_daemon_scloud_node(d, node, resume, &x, &st, err);
    if (status == 200) {
        *out = x ? scloud_node_json(d, node, x) : json_object();
        if (!x)
            json_object_set_new(*out, "node", json_string(node));
        json_object_set_new(*out, "state", json_string(st));
    }
    UNLOCK(d);
    return status;
}
