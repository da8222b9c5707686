/* api_metrics.c: /metrics, the Prometheus text exposition of the queue,
 * pools, instances, costs and the loop's own timings. */

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/api_private.h"
#include "util/version.h"

/* ---- metrics -------------------------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf_t;

static void put(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap * 2 + (size_t)(n > 0 ? n : 0);
        b->s = spw_xrealloc(b->s, b->cap);
    }
}

/* Label values are names from the config: escape \ " and newlines anyway. */
static const char *esc(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    for (; *s && o + 3 < len; s++) {
        if (*s == '\\' || *s == '"') {
            buf[o++] = '\\';
            buf[o++] = *s;
        } else if (*s == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else {
            buf[o++] = *s;
        }
    }
    buf[o] = '\0';
    return buf;
}

/* spillway_team_gpus or spillway_cohort_gpus (what: "team" or "cohort") of
 * one team or cohort: v[0] nominal, v[1] used, v[2] borrowed, v[3] lent. */
static void put_gpus(sbuf_t *b, const char *what, const char *name, const double v[4])
{
    static const char *const kinds[] = {"nominal", "used", "borrowed", "lent"};
    char e[256];
    for (int k = 0; k < 4; k++)
        put(b, "spillway_%s_gpus{%s=\"%s\",kind=\"%s\"} %g\n", what, what,
            esc(name, e, sizeof(e)), kinds[k], v[k]);
}

void spw_daemon_metrics_conf(const spw_daemon_t *d, int *auth, int *per_job)
{
    *auth = d->cfg->daemon.metrics_auth;
    *per_job = d->cfg->daemon.metrics_per_job;
}

/* Histogram h as the Prometheus metric name, with its help line. */
static void put_hist(sbuf_t *b, const char *name, const char *help, const dm_hist_t *h)
{
    put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t acc = 0;
    for (int i = 0; i < SPW_HIST_BUCKETS; i++) {
        acc += h->b[i];
        put(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, spw_daemon_hist_le[i], acc);
    }
    acc += h->b[SPW_HIST_BUCKETS];
    put(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, acc);
    put(b, "%s_sum %.9f\n%s_count %" PRIu64 "\n", name, h->sum_s, name, h->n);
}

/* Owned capacity per pool and commitments as `spillway costs` prices them
 * (spw_daemon_costs, current period, from the first submit):
 * {"pools": {"pool": [used_usd, idle_usd]}, "commitments": {"name": [used_usd,
 * idle_usd]}} (new reference).  Asked before the metrics take the lock. */
static json_t *paid_used_or_idle(spw_daemon_t *d)
{
    static const spw_caller_t admin = {.team = NULL, .admin = 1, .token_name = "daemon"};
    json_t *c = NULL, *pools = json_object(), *commits = json_object();
    spw_error_t err = {{0}};
    if (spw_daemon_costs(d, &admin, NULL, &c, &err) == 200) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(c, "pools"), i, p) {
            const char *name = json_string_value(json_object_get(p, "pool"));
            double all = json_number_value(json_object_get(p, "owned_usd"));
            double idle = json_number_value(json_object_get(p, "owned_idle_usd"));
            if (name)
                json_object_set_new(pools, name, json_pack("[f, f]", all - idle, idle));
        }
        json_array_foreach(json_object_get(c, "commitments"), i, p) {
            const char *name = json_string_value(json_object_get(p, "name"));
            if (name)
                json_object_set_new(commits, name,
                                    json_pack("[f, f]", json_number_value(json_object_get(p, "used_usd")),
                                              json_number_value(json_object_get(p, "idle_usd"))));
        }
    }
    json_decref(c);
    return json_pack("{s:o, s:o}", "pools", pools, "commitments", commits);
}

char *spw_daemon_metrics(spw_daemon_t *d)
{
    sbuf_t b = {spw_xmalloc(4096), 0, 4096};
    char e1[256], e2[256], e3[256];
    json_t *paid = paid_used_or_idle(d);
    const json_t *owned = json_object_get(paid, "pools");
    LOCK(d);
    double now = d->now;
    size_t np = d->fleet.npools;
    /* jobs by state and pool (np = not placed on-prem: "" or the offer's provider) */
    uint64_t *cnt = spw_xcalloc((np + 1) * SPW_DJOB_STATE_COUNT, sizeof(uint64_t));
    /* with the ended jobs that left memory (retain.c) */
    for (size_t k = 0; d->gone.by_state && k < (np + 1) * SPW_DJOB_STATE_COUNT; k++)
        cnt[k] = d->gone.by_state[k];
    for (size_t s = 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (j)
            cnt[(size_t)(j->pool >= 0 ? j->pool : (int32_t)np) * SPW_DJOB_STATE_COUNT + j->st]++;
    }
    put(&b, "# HELP spillway_jobs Jobs known to the daemon, by state and on-prem pool (\"\" = not on-prem).\n");
    put(&b, "# TYPE spillway_jobs gauge\n");
    for (size_t p = 0; p <= np; p++)
        for (int st = 0; st < SPW_DJOB_STATE_COUNT; st++)
            if (cnt[p * SPW_DJOB_STATE_COUNT + st] || p == np)
                put(&b, "spillway_jobs{state=\"%s\",pool=\"%s\"} %" PRIu64 "\n",
                    spw_djob_state_name((spw_djob_state_t)st),
                    p < np ? esc(d->fleet.pools[p].name, e1, sizeof(e1)) : "",
                    cnt[p * SPW_DJOB_STATE_COUNT + st]);
    free(cnt);
    put(&b, "# HELP spillway_jobs_in_memory Jobs the daemon holds in memory: the live ones, and "
            "ended ones for daemon.job_retention_s (older ones are read from its database).\n");
    put(&b, "# TYPE spillway_jobs_in_memory gauge\n");
    put(&b, "spillway_jobs_in_memory %zu\n", d->njobs_mem);
    put(&b, "# HELP spillway_jobs_submitted_total Jobs committed by this daemon process.\n");
    put(&b, "# TYPE spillway_jobs_submitted_total counter\n");
    put(&b, "spillway_jobs_submitted_total %" PRIu64 "\n", d->submitted);
    /* interruptions, summed over the jobs' records (they survive restarts) */
    uint64_t preempt = d->gone.preemptions, restarts = d->gone.restarts, failed = d->gone.failures;
    for (size_t s = 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j)
            continue;
        preempt += spw_job_rare(&j->ej)->preemptions;
        restarts += spw_job_rare(&j->ej)->restarts;
        failed += spw_job_rare(&j->ej)->failures;
    }
    put(&b, "# HELP spillway_preemptions_total Cloud attempts whose capacity was taken back (spot preemptions).\n");
    put(&b, "# TYPE spillway_preemptions_total counter\n");
    put(&b, "spillway_preemptions_total %" PRIu64 "\n", preempt);
    put(&b, "# HELP spillway_node_failures_total On-prem nodes taken down by this daemon process.\n");
    put(&b, "# TYPE spillway_node_failures_total counter\n");
    put(&b, "spillway_node_failures_total %" PRIu64 "\n", d->node_failures);
    put(&b, "# HELP spillway_jobs_interrupted_by_failure_total On-prem attempts ended by a node failure.\n");
    put(&b, "# TYPE spillway_jobs_interrupted_by_failure_total counter\n");
    put(&b, "spillway_jobs_interrupted_by_failure_total %" PRIu64 "\n", failed);
    put(&b, "# HELP spillway_restarts_total Attempts begun after an interruption or a move to spot.\n");
    put(&b, "# TYPE spillway_restarts_total counter\n");
    put(&b, "spillway_restarts_total %" PRIu64 "\n", restarts);
    put(&b, "# HELP spillway_nodes_down On-prem nodes out of service, by pool.\n");
    put(&b, "# TYPE spillway_nodes_down gauge\n");
    for (size_t p = 0; p < np; p++) {
        uint64_t down = 0;
        for (uint32_t n = 0; n < d->fleet.pools[p].nnodes; n++)
            down += d->node_down[p][n] != 0;
        put(&b, "spillway_nodes_down{pool=\"%s\"} %" PRIu64 "\n",
            esc(d->fleet.pools[p].name, e1, sizeof(e1)), down);
    }
    put(&b, "# HELP spillway_queue_length Jobs waiting in the engine's queue.\n");
    put(&b, "# TYPE spillway_queue_length gauge\n");
    put(&b, "spillway_queue_length %zu\n", spw_engine_queued(d->engine));
    put(&b, "# HELP spillway_pool_gpus On-prem GPUs by pool and state.\n");
    put(&b, "# TYPE spillway_pool_gpus gauge\n");
    for (size_t p = 0; p < np; p++) {
        esc(d->fleet.pools[p].name, e1, sizeof(e1));
        put(&b, "spillway_pool_gpus{pool=\"%s\",state=\"busy\"} %" PRIu64 "\n", e1, d->pool_busy[p]);
        put(&b, "spillway_pool_gpus{pool=\"%s\",state=\"free\"} %" PRIu64 "\n", e1, api_pool_free_gpus(d, p));
        put(&b, "spillway_pool_gpus{pool=\"%s\",state=\"down\"} %" PRIu64 "\n", e1, api_pool_down_gpus(d, p));
    }
    put(&b, "# HELP spillway_pool_owned_gpus On-prem GPUs a pool owns (every node, in service or "
            "down); busy, free (idle) and down ones are spillway_pool_gpus.\n");
    put(&b, "# TYPE spillway_pool_owned_gpus gauge\n");
    for (size_t p = 0; p < np; p++)
        put(&b, "spillway_pool_owned_gpus{pool=\"%s\"} %" PRIu64 "\n",
            esc(d->fleet.pools[p].name, e1, sizeof(e1)), d->pool_gpus[p]);
    put(&b, "# HELP spillway_pool_owned_usd What a pool's owned GPUs cost this month since the "
            "first submit, as spillway costs prices them: the share its jobs used and the "
            "share that stood idle.\n");
    put(&b, "# TYPE spillway_pool_owned_usd gauge\n");
    for (size_t p = 0; p < np; p++) {
        const json_t *v = json_object_get(owned, d->fleet.pools[p].name);
        esc(d->fleet.pools[p].name, e1, sizeof(e1));
        put(&b, "spillway_pool_owned_usd{pool=\"%s\",share=\"used\"} %.6f\n", e1,
            json_number_value(json_array_get(v, 0)));
        put(&b, "spillway_pool_owned_usd{pool=\"%s\",share=\"idle\"} %.6f\n", e1,
            json_number_value(json_array_get(v, 1)));
    }
    put(&b, "# HELP spillway_commitment_usd What a commitment (cloud.commitments) cost this month "
            "since the first submit, all its GPUs at the committed rate, paid used or idle: the "
            "share jobs held and the share that stood idle.\n");
    put(&b, "# TYPE spillway_commitment_usd gauge\n");
    const char *cname;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(paid, "commitments"), cname, v) {
        esc(cname, e1, sizeof(e1));
        put(&b, "spillway_commitment_usd{name=\"%s\",share=\"used\"} %.6f\n", e1,
            json_number_value(json_array_get(v, 0)));
        put(&b, "spillway_commitment_usd{name=\"%s\",share=\"idle\"} %.6f\n", e1,
            json_number_value(json_array_get(v, 1)));
    }
    json_decref(paid);
    put(&b, "# HELP spillway_cloud_instances Cloud instances the daemon holds, by offer and state.\n");
    put(&b, "# TYPE spillway_cloud_instances gauge\n");
    const char *emu = dm_all_emulated(d) ? "true" : "false";
    offer_tally_t *t = api_tally_offers(d, now);
    for (size_t i = 0; i < d->fleet.noffers; i++) {
        const size_t *live = t[i].by_state;
        const char *oemu = dm_offer_emulated(d, i) ? "true" : "false";
        char on[200];
        spw_daemon_offer_name(&d->fleet.offers[i], on, sizeof(on));
        for (int st = 0; st < SPW_INSTANCE_STATE_COUNT; st++)
            if (live[st] && spw_instance_state_live((spw_instance_state_t)st))
                put(&b, "spillway_cloud_instances{provider=\"%s\",offer=\"%s\",state=\"%s\",emulated=\"%s\"} %zu\n",
                    esc(d->fleet.offers[i].provider, e1, sizeof(e1)), esc(on, e2, sizeof(e2)),
                    spw_instance_state_name((spw_instance_state_t)st), oemu, live[st]);
    }
    put(&b, "# HELP spillway_offer_spot_usd_per_h The spot price each offer is ranked and "
        "reserved at, USD per hour, by offer and source (live: the account's cloud; catalog).\n");
    put(&b, "# TYPE spillway_offer_spot_usd_per_h gauge\n");
    for (size_t i = 0; i < d->fleet.noffers; i++) {
        if (isnan(d->fleet.offers[i].spot_usd_per_h))
            continue;
        char on[200];
        spw_daemon_offer_name(&d->fleet.offers[i], on, sizeof(on));
        put(&b, "spillway_offer_spot_usd_per_h{offer=\"%s\",source=\"%s\"} %.6f\n",
            esc(on, e2, sizeof(e2)),
            d->spot_live_ts && !isnan(d->spot_live_ts[i]) ? "live" : "catalog",
            d->fleet.offers[i].spot_usd_per_h);
    }
    put(&b, "# HELP spillway_offer_blocked Offers a cloud's refusal blocks now (1), by offer, "
        "market and why.\n");
    put(&b, "# TYPE spillway_offer_blocked gauge\n");
    for (size_t i = 0; i < d->fleet.noffers; i++)
        for (int s = 0; s < 2; s++) {
            if (!(d->blk_until[2 * i + (size_t)s] > now))
                continue;
            char on[200], e4[400];
            spw_daemon_offer_name(&d->fleet.offers[i], on, sizeof(on));
            put(&b, "spillway_offer_blocked{offer=\"%s\",market=\"%s\",why=\"%s\"} 1\n",
                esc(on, e2, sizeof(e2)), s ? "spot" : "ondemand",
                esc(d->blk_why[2 * i + (size_t)s], e4, sizeof(e4)));
        }
    put(&b, "# HELP spillway_spend_usd_total Dollars spent: amortised on-prem GPU cost and cloud billing.\n");
    put(&b, "# TYPE spillway_spend_usd_total counter\n");
    double onprem = d->gone.onprem_usd;
    for (size_t s = 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j)
            continue;
        onprem += spw_daemon_job_onprem_usd(d, j, now);
    }
    put(&b, "spillway_spend_usd_total{kind=\"onprem\",provider=\"onprem\",emulated=\"false\"} %.6f\n", onprem);
    for (size_t i = 0; i < d->fleet.noffers; i++) {
        double usd;
        size_t n;
        if (api_provider_total(d, t, i, &usd, &n) == 0 && n > 0)
            put(&b, "spillway_spend_usd_total{kind=\"cloud\",provider=\"%s\",emulated=\"%s\"} %.6f\n",
                esc(d->fleet.offers[i].provider, e3, sizeof(e3)), emu, usd);
    }
    free(t);
    /* queued jobs by why they wait; the held ones (budget, limit, cap: the
     * first three reasons) also by team */
    const spw_gov_t *g = &d->fleet.gov;
    uint64_t waiting[SPW_DM_WAIT_COUNT] = {0};
    uint64_t *held = spw_xcalloc(g->nteams * 3 + 1, sizeof(uint64_t));
    for (size_t s = d->job_lo; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j || j->st != SPW_DJOB_QUEUED)
            continue;
        spw_dm_wait_t w = spw_daemon_wait_of(d, j);
        waiting[w]++;
        if (w <= SPW_DM_WAIT_CAP && j->ej.team && j->ej.team <= g->nteams)
            held[(j->ej.team - 1) * 3 + w]++;
    }
    put(&b, "# HELP spillway_jobs_waiting Queued jobs by why they wait (the REASON of spillway queue).\n");
    put(&b, "# TYPE spillway_jobs_waiting gauge\n");
    for (int w = 0; w < SPW_DM_WAIT_COUNT; w++)
        put(&b, "spillway_jobs_waiting{reason=\"%s\"} %" PRIu64 "\n",
            spw_daemon_wait_name((spw_dm_wait_t)w), waiting[w]);
    /* budgets: each team of the config over its current period */
    if (g->nteams) {
        spw_govrt_t *rt = spw_engine_gov(d->engine);
        spw_team_ledger_t *L = spw_xcalloc(g->nteams, sizeof(*L));
        for (size_t i = 0; i < g->nteams; i++)
            spw_govrt_ledger(rt, (int)i, now, &L[i]);
        put(&b, "# HELP spillway_team_budget_usd A team's budget for its current period (+Inf = none).\n");
        put(&b, "# TYPE spillway_team_budget_usd gauge\n");
        for (size_t i = 0; i < g->nteams; i++) {
            if (isfinite(L[i].budget_usd))
                put(&b, "spillway_team_budget_usd{team=\"%s\"} %.6f\n",
                    esc(g->teams[i].name, e1, sizeof(e1)), L[i].budget_usd);
            else
                put(&b, "spillway_team_budget_usd{team=\"%s\"} +Inf\n",
                    esc(g->teams[i].name, e1, sizeof(e1)));
        }
        put(&b, "# HELP spillway_team_spend_usd Spend settled against a team's budget in its current period.\n");
        put(&b, "# TYPE spillway_team_spend_usd gauge\n");
        for (size_t i = 0; i < g->nteams; i++)
            put(&b, "spillway_team_spend_usd{team=\"%s\"} %.6f\n",
                esc(g->teams[i].name, e1, sizeof(e1)), L[i].settled_usd);
        put(&b, "# HELP spillway_team_reserved_usd Worst cases a team's live cloud placements reserve in its current period.\n");
        put(&b, "# TYPE spillway_team_reserved_usd gauge\n");
        for (size_t i = 0; i < g->nteams; i++)
            put(&b, "spillway_team_reserved_usd{team=\"%s\"} %.6f\n",
                esc(g->teams[i].name, e1, sizeof(e1)), L[i].reserved_usd);
        put(&b, "# HELP spillway_jobs_held Queued jobs of a team whose cloud burst a budget or cap holds now, by reason (budget, limit: over one outright, cap).\n");
        put(&b, "# TYPE spillway_jobs_held gauge\n");
        for (size_t i = 0; i < g->nteams; i++)
            for (int w = 0; w < 3; w++)
                put(&b, "spillway_jobs_held{team=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
                    esc(g->teams[i].name, e1, sizeof(e1)), spw_daemon_wait_name((spw_dm_wait_t)w),
                    held[i * 3 + w]);
        put(&b, "# HELP spillway_team_gpus On-prem GPUs per team: its quota (nominal), held by "
                "its jobs (used), held above its quota (borrowed), of its quota held by others "
                "(lent).\n");
        put(&b, "# TYPE spillway_team_gpus gauge\n");
        /* The teams, then the cohorts (each summed over its subtree). */
        for (size_t i = 0; i < g->nteams + g->ncohorts; i++) {
            double v[4];
            size_t c = i - g->nteams;
            if (i == g->nteams) {
                put(&b, "# HELP spillway_cohort_gpus On-prem GPUs per cohort, summed over the "
                        "teams of its subtree: nominal, used, borrowed and lent as "
                        "spillway_team_gpus.\n");
                put(&b, "# TYPE spillway_cohort_gpus gauge\n");
            }
            if (i < g->nteams)
                api_team_gpus(d, i, v);
            else
                api_cohort_gpus(d, c, v);
            put_gpus(&b, i < g->nteams ? "team" : "cohort",
                     i < g->nteams ? g->teams[i].name : g->cohorts[c].name, v);
        }
        free(L);
    }
    free(held);
    put_hist(&b, "spillway_decision_seconds",
             "Time the engine took for one scheduling decision (spw_engine_schedule, once a turn).",
             &d->decide_hist);
    put_hist(&b, "spillway_turn_seconds",
             "Time of one whole scheduler turn (submits committed, events, decision, saves, the "
             "database commit, launches).", &d->turn_hist);
    pthread_mutex_lock(&d->hmu);
    uint64_t cfail = d->commit_failures;
    int failing = d->commit_failing;
    pthread_mutex_unlock(&d->hmu);
    put(&b, "# HELP spillway_commit_failures_total Scheduler turns (and cancels) whose database commit failed; nothing they placed was launched.\n");
    put(&b, "# TYPE spillway_commit_failures_total counter\n");
    put(&b, "spillway_commit_failures_total %" PRIu64 "\n", cfail);
    put(&b, "# HELP spillway_commit_failing 1 while the last commit failed (/healthz is 503).\n");
    put(&b, "# TYPE spillway_commit_failing gauge\n");
    put(&b, "spillway_commit_failing %d\n", failing);
    put(&b, "# HELP spillway_http_requests_total HTTP requests answered, by status class.\n");
    put(&b, "# TYPE spillway_http_requests_total counter\n");
    for (int c = 1; c <= 5; c++)
        put(&b, "spillway_http_requests_total{code=\"%dxx\"} %" PRIu64 "\n", c, d->http_codes[c]);
    UNLOCK(d);
    return b.s;
}
