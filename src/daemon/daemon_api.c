/* daemon_api.c: the thread-safe calls the HTTP layer makes (daemon.h): auth,
 * submit, and the JSON views of jobs, pools, costs, explain and metrics. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/spot.h"
#include "daemon/audit.h"
#include "daemon/daemon_private.h"

#include "util/version.h"

#define LOCK(d) pthread_mutex_lock(&(d)->mu)
#define UNLOCK(d) pthread_mutex_unlock(&(d)->mu)

/* ---- auth --------------------------------------------------------------- */

/* Compares without an early exit, so timing does not reveal a prefix. */
static int same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < lb; i++)
        diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
    return diff == 0;
}

/* The current token table (NULL until guard_init). */
static dtokens_t *tokens_now(spw_daemon_t *d)
{
    return __atomic_load_n(&d->tokens, __ATOMIC_ACQUIRE);
}

static dtokens_t *tokens_copy(const spw_token_t *v, size_t n)
{
    dtokens_t *t = spw_xcalloc(1, sizeof(*t));
    t->v = spw_xcalloc(n ? n : 1, sizeof(*t->v));
    t->n = n;
    for (size_t i = 0; i < n; i++) {
        t->v[i].name = spw_xstrdup(v[i].name ? v[i].name : "token");
        t->v[i].token = spw_xstrdup(v[i].token);
        t->v[i].team = v[i].team ? spw_xstrdup(v[i].team) : NULL;
        t->v[i].admin = v[i].admin;
        t->v[i].revoked = v[i].revoked;
    }
    return t;
}

int spw_daemon_auth(spw_daemon_t *d, const char *token, spw_caller_t *out)
{
    out->token_name = NULL;
    if (!d->auth_required) {
        out->team = NULL;
        out->admin = 1;
        return 0;
    }
    const dtokens_t *t = tokens_now(d);
    int found = -1;
    for (size_t i = 0; t && i < t->n; i++)
        if (token && same_secret(token, t->v[i].token) && found < 0)
            found = (int)i;
    if (found < 0)
        return -1;
    out->token_name = t->v[found].name;
    out->team = t->v[found].team;
    out->admin = t->v[found].admin;
    return t->v[found].revoked ? -1 : 0;
}

int spw_daemon_auth_required(const spw_daemon_t *d)
{
    return d->auth_required;
}

size_t spw_daemon_reload_tokens(spw_daemon_t *d, const spw_daemon_conf_t *dc)
{
    dtokens_t *t = tokens_copy(dc->tokens, dc->ntokens);
    LOCK(d);  /* one writer at a time; readers do not take it */
    t->older = d->tokens;
    __atomic_store_n(&d->tokens, t, __ATOMIC_RELEASE);
    UNLOCK(d);
    size_t live = 0;
    for (size_t i = 0; i < t->n; i++)
        live += !t->v[i].revoked;
    char what[64];
    snprintf(what, sizeof(what), "%zu live, %zu revoked", live, t->n - live);
    spw_daemon_audit(d, NULL, "tokens.reload", what, 200);
    return live;
}

void spw_daemon_audit(spw_daemon_t *d, const spw_caller_t *who, const char *action,
                      const char *target, int status)
{
    spw_audit_add(d->audit, spw_daemon_clock(), who ? who->token_name : "daemon",
                  who ? who->team : NULL, action, target, status);
}

int spw_daemon_audit_list(spw_daemon_t *d, const spw_caller_t *who, double since_ts,
                          const char *team, long limit, json_t **out, spw_error_t *err)
{
    if (!who->admin) {
        spw_errorf(err, "the audit log needs an admin token");
        return 403;
    }
    LOCK(d);
    spw_error_t e2;
    if (spw_audit_flush(d->audit, &e2) < 0) {
        UNLOCK(d);
        *err = e2;
        return 503;
    }
    int rc = spw_audit_query(d->audit, since_ts, team, limit, out, err);
    UNLOCK(d);
    return rc < 0 ? 503 : 200;
}

static void teamq_clear(spw_daemon_t *d);

int spw_daemon_guard_init(spw_daemon_t *d, spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &d->cfg->daemon;
    d->auth_required = dc->ntokens > 0;
    d->tokens = tokens_copy(dc->tokens, dc->ntokens);
    if (!(d->audit = spw_audit_open(spw_store_db(d->store), err)))
        return -1;
    return 0;
}

void spw_daemon_guard_flush(spw_daemon_t *d)
{
    spw_error_t err;
    if (d->audit && spw_audit_flush(d->audit, &err) < 0 && !d->quiet)
        fprintf(stderr, "spillway: %s\n", err.text);
}

void spw_daemon_guard_free(spw_daemon_t *d)
{
    teamq_clear(d);
    spw_audit_close(d->audit);
    d->audit = NULL;
    for (dtokens_t *t = d->tokens, *older; t; t = older) {
        older = t->older;
        for (size_t i = 0; i < t->n; i++) {
            free(t->v[i].name);
            explicit_bzero(t->v[i].token, strlen(t->v[i].token));
            free(t->v[i].token);
            free(t->v[i].team);
        }
        free(t->v);
        free(t);
    }
    d->tokens = NULL;
}

static int visible(const spw_caller_t *who, const djob_t *j)
{
    return who->admin || (who->team && strcmp(who->team, j->team) == 0);
}

/* Finds job id as caller who may see it; 404 otherwise. */
static djob_t *lookup(spw_daemon_t *d, const spw_caller_t *who, const char *id, spw_error_t *err)
{
    djob_t *j = spw_daemon_find(d, id);
    if (!j || !visible(who, j)) {
        spw_errorf(err, "no job %s", id);
        return NULL;
    }
    return j;
}

/* ---- submit ---------------------------------------------------------------- */

/* "a, b, c" of n names (at most len bytes). */
static void name_list(char *buf, size_t len, size_t n, const char *(*name)(const spw_gov_t *, size_t),
                      const spw_gov_t *g)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", name(g, i));
}

static const char *dataset_name(const spw_gov_t *g, size_t i) { return g->datasets[i].name; }
static const char *residency_name(const spw_gov_t *g, size_t i) { return g->residencies[i].name; }

int spw_daemon_check_gov(const spw_daemon_t *d, const spw_jobspec_t *s, spw_error_t *err)
{
    const spw_gov_t *g = &d->fleet.gov;
    char have[400];
    if (s->data && spw_gov_dataset(g, s->data) < 0) {
        name_list(have, sizeof(have), g->ndatasets, dataset_name, g);
        return spw_errorf(err, "field 'data': no dataset '%s' in the config (%s%s)", s->data,
                          g->ndatasets ? "it has: " : "its data: section declares no datasets",
                          have);
    }
    if (s->residency && spw_gov_residency(g, s->residency) < 0) {
        name_list(have, sizeof(have), g->nresidencies, residency_name, g);
        return spw_errorf(err, "field 'residency': no residency '%s' in the config (%s%s)",
                          s->residency,
                          g->nresidencies ? "it has: " : "it has no residency: section", have);
    }
    return 0;
}

/* Default of daemon.max_instances_per_job. */
#define DEFAULT_MAX_INSTANCES 256

/* The largest gang a job of model mask can get: the biggest on-prem pool
 * that accepts it, or an offer's GPUs per instance times the instances one
 * job may take (daemon.max_instances_per_job, and the emulated capacity
 * when it is smaller); *by_cloud = 1 when the cloud gives the most. */
static uint64_t largest_gang(const spw_daemon_t *d, uint64_t mask, int *by_cloud)
{
    const spw_fleet_t *f = &d->fleet;
    const spw_daemon_conf_t *dc = &d->cfg->daemon;
    uint64_t most = 0;
    *by_cloud = 0;
    for (size_t i = 0; i < f->npools; i++)
        if (spw_daemon_model_ok(&f->models, mask, f->pools[i].model) && d->pool_gpus[i] > most)
            most = d->pool_gpus[i];
    if (d->cfg->policy.wait.kind == SPW_WAIT_NEVER)
        return most;
    uint64_t inst = dc->max_instances_per_job ? dc->max_instances_per_job : DEFAULT_MAX_INSTANCES;
    if (dc->emulated_capacity && dc->emulated_capacity < inst)
        inst = dc->emulated_capacity;
    for (size_t i = 0; i < f->noffers; i++)
        if (spw_daemon_model_ok(&f->models, mask, f->offers[i].model) &&
            (uint64_t)f->offers[i].gpus * inst > most) {
            most = (uint64_t)f->offers[i].gpus * inst;
            *by_cloud = 1;
        }
    return most;
}

/* Queued jobs of one team, as of the last count. */
typedef struct dteamq {
    char *team;                 /* owned */
    uint64_t n;
} dteamq_t;

/* The entry of team in d->teamq, added when missing. */
static dteamq_t *teamq_of(spw_daemon_t *d, const char *team)
{
    for (size_t i = 0; i < d->nteamq; i++)
        if (strcmp(d->teamq[i].team, team) == 0)
            return &d->teamq[i];
    d->teamq = spw_xrealloc(d->teamq, (d->nteamq + 1) * sizeof(*d->teamq));
    d->teamq[d->nteamq] = (dteamq_t){spw_xstrdup(team), 0};
    return &d->teamq[d->nteamq++];
}

static void teamq_clear(spw_daemon_t *d)
{
    for (size_t i = 0; i < d->nteamq; i++)
        free(d->teamq[i].team);
    free(d->teamq);
    d->teamq = NULL;
    d->nteamq = 0;
}

/* Queued jobs of team: the live jobs are counted once per turn (one scan,
 * not one per submit); submits accepted since are added as they come
 * (submit_counted), so the count only errs high until the next turn. */
static uint64_t team_queued(spw_daemon_t *d, const char *team)
{
    if (d->teamq_turn != d->turns + 1) {
        teamq_clear(d);
        for (size_t s = d->job_lo; s < d->njobs; s++) {
            const djob_t *j = d->jobs[s];
            if (j && j->st == SPW_DJOB_QUEUED)
                teamq_of(d, j->team)->n++;
        }
        d->teamq_turn = d->turns + 1;
    }
    return teamq_of(d, team)->n;
}

/* The per-request and per-team bounds (docs/daemon.md, "Limits"): 0, or
 * 400 / 429 with a sentence naming the limit and its key. */
static int check_limits(spw_daemon_t *d, const spw_jobspec_t *spec, uint64_t mask,
                        spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &d->cfg->daemon;
    if (dc->max_gpus_per_job && spec->gpus > dc->max_gpus_per_job) {
        spw_errorf(err, "field 'gpus': %u GPUs is more than one job may ask for here "
                        "(daemon.max_gpus_per_job: %u)", spec->gpus, dc->max_gpus_per_job);
        return 400;
    }
    int by_cloud;
    uint64_t most = largest_gang(d, mask, &by_cloud);
    if (!dc->max_gpus_per_job && spec->gpus > most) {
        uint64_t inst = dc->max_instances_per_job ? dc->max_instances_per_job
                                                  : DEFAULT_MAX_INSTANCES;
        if (dc->emulated_capacity && dc->emulated_capacity < inst)
            inst = dc->emulated_capacity;
        spw_errorf(err, "field 'gpus': %u GPUs is more than the fleet can ever give one job "
                        "(at most %" PRIu64 ": the largest pool, or %" PRIu64 " cloud instances "
                        "per job (daemon.max_instances_per_job%s) of the largest offer)",
                   spec->gpus, most, inst,
                   dc->emulated_capacity && dc->emulated_capacity <= inst
                       ? ", daemon.emulated.capacity" : "");
        return 400;
    }
    if (dc->max_queued_per_team && spec->team &&
        team_queued(d, spec->team) >= dc->max_queued_per_team) {
        spw_errorf(err, "team '%s' has %u jobs queued, the most it may have "
                        "(daemon.max_queued_per_team); wait for some to start or cancel some",
                   spec->team, dc->max_queued_per_team);
        return 429;
    }
    return 0;
}

int spw_daemon_submit(spw_daemon_t *d, const spw_caller_t *who, spw_jobspec_t *spec,
                      char id_out[SPW_STORE_ID_LEN], spw_error_t *err)
{
    int status = 400;
    if (!who->admin) {
        if (spec->team && (!who->team || strcmp(spec->team, who->team) != 0)) {
            spw_errorf(err, "field 'team': your token belongs to team '%s'; it cannot submit for '%s'",
                       who->team ? who->team : "", spec->team);
            status = 403;
            goto out;
        }
        if (!spec->team && who->team)
            spec->team = spw_xstrdup(who->team);
    }
    LOCK(d);
    spw_error_t e2 = {{0}};
    uint64_t mask = spw_daemon_mask(d, spec, &e2);
    if (e2.text[0] || spw_daemon_feasible(d, spec->gpus, mask, &e2) < 0 ||
        spw_daemon_check_gov(d, spec, &e2) < 0) {
        UNLOCK(d);
        *err = e2;
        goto out;
    }
    if ((status = check_limits(d, spec, mask, &e2)) != 0) {
        UNLOCK(d);
        *err = e2;
        goto out;
    }
    /* Counted before the commit (the lock is let go while it waits), so
     * concurrent submits of a team cannot all pass the bound. */
    char *qteam = d->cfg->daemon.max_queued_per_team && spec->team ? spw_xstrdup(spec->team) : NULL;
    uint64_t qturn = d->teamq_turn;
    if (qteam)
        teamq_of(d, qteam)->n++;
    subreq_t r = {.spec = spec, .mask = mask};
    status = spw_daemon_commit_one(d, &r);
    if (qteam && status != 201 && d->teamq_turn == qturn && teamq_of(d, qteam)->n)
        teamq_of(d, qteam)->n--;
    free(qteam);
    UNLOCK(d);
    if (status == 201)
        memcpy(id_out, r.id, SPW_STORE_ID_LEN);
    else
        *err = r.err;
out:
    spw_jobspec_free(spec);
    return status;
}

/* ---- job views -------------------------------------------------------------- */

static json_t *ts_json(double t)
{
    return isnan(t) ? json_null() : json_real(t);
}

static json_t *job_json(spw_daemon_t *d, const djob_t *j, int with_spec)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(j->id));
    json_object_set_new(o, "seq", json_integer(j->seq));
    json_object_set_new(o, "name", j->name ? json_string(j->name) : json_null());
    json_object_set_new(o, "team", json_string(j->team));
    json_object_set_new(o, "state", json_string(spw_djob_state_name(j->st)));
    json_object_set_new(o, "gpus", json_integer(j->gpus));
    json_object_set_new(o, "submit_ts", ts_json(j->submit_ts));
    json_object_set_new(o, "placed_ts", ts_json(j->placed_ts));
    json_object_set_new(o, "start_ts", ts_json(j->start_ts));
    json_object_set_new(o, "end_ts", ts_json(j->end_ts));
    char place[256];
    if (j->pool >= 0) {
        snprintf(place, sizeof(place), "%s/%d", d->fleet.pools[j->pool].name, j->node);
        json_object_set_new(o, "where", json_string("onprem"));
        json_object_set_new(o, "placement", json_string(place));
    } else if (j->offer >= 0) {
        json_object_set_new(o, "where", json_string("cloud"));
        json_object_set_new(o, "placement", json_string(spw_daemon_offer_name(
                                                &d->fleet.offers[j->offer], place, sizeof(place))));
    } else {
        json_object_set_new(o, "where", json_null());
        json_object_set_new(o, "placement", json_null());
    }
    json_object_set_new(o, "gpus_assigned", j->gpus_assigned ? json_string(j->gpus_assigned) : json_null());
    json_t *inst = json_array();
    for (size_t k = 0; k < j->ninst; k++)
        json_array_append_new(inst, json_string(d->inst[j->inst[k]].in.id));
    for (const char *p = j->ninst ? NULL : j->ran_on; p && *p;) {
        size_t n = strcspn(p, ",");
        json_array_append_new(inst, json_stringn(p, n));
        p += n + (p[n] == ',');
    }
    json_object_set_new(o, "instances", inst);
    json_object_set_new(o, "emulated", json_boolean(j->offer >= 0 && d->pv_ops->emulated));
    json_object_set_new(o, "exit_code", j->has_exit ? json_integer(j->exit_code) : json_null());
    json_object_set_new(o, "attempts", json_integer(j->attempts));
    /* interruptions: the engine's account of its attempts */
    json_object_set_new(o, "restarts", json_integer(j->ej.restarts));
    json_object_set_new(o, "preemptions", json_integer(j->ej.preemptions));
    json_object_set_new(o, "failures", json_integer(j->ej.failures));
    json_object_set_new(o, "done_s", json_real(j->ej.done_s));
    json_object_set_new(o, "lost_s", json_real(j->ej.lost_s));
    json_object_set_new(o, "spot", json_boolean(j->ej.state == SPW_JOB_CLOUD ? j->ej.spot : j->last_spot));
    int live = !spw_djob_state_terminal(j->st);
    double iv = j->ej.checkpoint_interval_s;
    json_object_set_new(o, "checkpoint_interval_s",
                        !live                     ? json_null()
                        : iv == SPW_CKPT_CONTINUOUS ? json_string("continuous")
                                                    : json_real(iv));
    char ckpt[4200];
    snprintf(ckpt, sizeof(ckpt), "%s/%s", d->ckpt_dir, j->id);
    json_object_set_new(o, "checkpoint_dir", json_string(ckpt));
    /* deadline: whether the work left, after a restart overhead, still
     * ends in time at the current placement (or starting now) */
    double dl = live ? j->ej.deadline_s : NAN;
    json_object_set_new(o, "deadline_ts", ts_json(dl));
    json_object_set_new(o, "deadline_at_risk",
                        isnan(dl) ? json_null() : json_boolean(!(spw_daemon_est_end(d, j) <= dl)));
    json_object_set_new(o, "reason", j->reason ? json_string(j->reason) : json_null());
    if (j->cancel_req)
        json_object_set_new(o, "cancel_requested", json_true());
    json_object_set_new(o, "cost_usd", json_real(spw_daemon_job_onprem_usd(d, j, d->now) + spw_daemon_job_cloud_usd(d, j, d->now)));
    /* money: what its live cloud placement reserves against its team's
     * budget, its data egress, and how often a budget or cap held it */
    json_object_set_new(o, "reserved_usd", json_real(j->ej.state == SPW_JOB_CLOUD ? j->ej.reserved_usd : 0));
    json_object_set_new(o, "egress_usd", json_real(j->ej.egress_usd));
    json_object_set_new(o, "egress_gb", json_real(j->ej.egress_gb));
    json_object_set_new(o, "held", json_integer(j->ej.held));
    json_object_set_new(o, "charge_ts", ts_json(j->charge_ts));
    if (j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD) {
        double mr = spw_engine_max_runtime(d->engine, &j->ej);
        json_object_set_new(o, "max_runtime_s", isfinite(mr) ? json_real(mr) : json_null());
    }
    if (with_spec) {
        spw_store_job_t r;
        spw_error_t err;
        json_t *spec = NULL;
        if (spw_store_job_get(d->store, j->id, &r, &err) == 0) {
            spec = json_loads(r.spec_json, 0, NULL);
            spw_store_job_clear(&r);
        }
        json_object_set_new(o, "spec", spec ? spec : json_null());
        if (spec && json_object_get(spec, "gpu_models"))
            json_object_set(o, "gpu_models", json_object_get(spec, "gpu_models"));
    }
    return o;
}

int spw_daemon_job(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                   spw_error_t *err)
{
    LOCK(d);
    djob_t *j = lookup(d, who, id, err);
    if (j)
        *out = job_json(d, j, 1);
    UNLOCK(d);
    return j ? 200 : 404;
}

int spw_daemon_jobs(spw_daemon_t *d, const spw_caller_t *who, const char *state,
                    const char *team, long long after, long limit, json_t **out,
                    spw_error_t *err)
{
    spw_djob_state_t st = 0;
    if (state && spw_djob_state_parse(state, &st) < 0)
        return spw_errorf(err, "state: expected one of queued, placed, running, succeeded, failed, "
                          "cancelled, rejected; got '%s'", state), 400;
    if (team && !who->admin && (!who->team || strcmp(team, who->team) != 0))
        return spw_errorf(err, "team: your token belongs to team '%s'; it cannot list team '%s'",
                          who->team ? who->team : "", team), 403;
    if (limit <= 0)
        limit = 1000;
    if (limit > 10000)
        limit = 10000;
    if (after < 0)
        after = 0;
    json_t *arr = json_array();
    long n = 0;
    long long next = -1;
    LOCK(d);
    for (size_t s = (size_t)after + 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j || !visible(who, j) || (state && j->st != st) || (team && strcmp(team, j->team) != 0))
            continue;
        if (n == limit) {
            next = (long long)s - 1;
            break;
        }
        json_array_append_new(arr, job_json(d, j, 0));
        n++;
    }
    UNLOCK(d);
    *out = json_object();
    json_object_set_new(*out, "jobs", arr);
    json_object_set_new(*out, "next_after", next >= 0 ? json_integer(next) : json_null());
    return 200;
}

int spw_daemon_cancel(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                      spw_error_t *err)
{
    LOCK(d);
    djob_t *j = lookup(d, who, id, err);
    int status = j ? spw_daemon_do_cancel(d, j, err) : 404;
    if (status == 200)
        *out = job_json(d, j, 0);
    UNLOCK(d);
    return status;
}

/* ---- explain -------------------------------------------------------------------- */

json_t *spw_daemon_candidates_json(spw_daemon_t *d, djob_t *j)
{
    json_t *arr = json_array();
    if (!j->gpus)
        return arr;
    if (!j->ej.gpus) {
        j->ej.gpus = j->gpus;
        j->ej.gpu_mask = j->gpu_mask;
    }
    size_t cap = d->fleet.npools + d->fleet.noffers + 1;
    spw_candidate_t *c = spw_xmalloc(cap * sizeof(*c));
    size_t n = spw_engine_explain(d->engine, &j->ej, d->now, c, cap);
    char wtxt[48], on[200];
    spw_wait_format(&d->cfg->policy.wait, wtxt, sizeof(wtxt));
    for (size_t i = 0; i < n && i < cap; i++) {
        json_t *o = json_object();
        const char *kind = c[i].kind == SPW_CAND_ONPREM ? "onprem" : c[i].kind == SPW_CAND_WAIT ? "wait" : "cloud";
        const char *name = c[i].kind == SPW_CAND_ONPREM ? d->fleet.pools[c[i].index].name
                           : c[i].kind == SPW_CAND_WAIT
                               ? wtxt
                               : spw_daemon_offer_name(&d->fleet.offers[c[i].index], on, sizeof(on));
        json_object_set_new(o, "kind", json_string(kind));
        json_object_set_new(o, "name", json_string(name));
        json_object_set_new(o, "ok", json_boolean(c[i].ok));
        if (c[i].kind == SPW_CAND_CLOUD) {
            json_object_set_new(o, "instances", json_integer(c[i].instances));
            json_object_set_new(o, "emulated", json_boolean(d->pv_ops->emulated));
        }
        json_object_set_new(o, "est_start_ts", ts_json(c[i].est_start_s));
        json_object_set_new(o, "est_cost_usd", ts_json(c[i].est_cost_usd));
        json_object_set_new(o, "why", json_string(c[i].why));
        json_array_append_new(arr, o);
    }
    free(c);
    return arr;
}

int spw_daemon_explain(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                       spw_error_t *err)
{
    LOCK(d);
    djob_t *j = lookup(d, who, id, err);
    if (!j) {
        UNLOCK(d);
        return 404;
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(j->id));
    json_object_set_new(o, "state", json_string(spw_djob_state_name(j->st)));
    json_object_set_new(o, "now_ts", json_real(d->now));
    json_object_set_new(o, "reason", j->reason ? json_string(j->reason) : json_null());
    char *text = NULL;
    double ts;
    spw_error_t e2;
    json_t *dec = NULL;
    if (spw_store_decision_latest(d->store, j->id, &text, &ts, &e2) == 0) {
        dec = json_loads(text, 0, NULL);
        free(text);
    }
    json_object_set_new(o, "decision", dec ? dec : json_null());
    json_object_set_new(o, "candidates", spw_daemon_candidates_json(d, j));
    UNLOCK(d);
    *out = o;
    return 200;
}

/* ---- logs ------------------------------------------------------------------------ */

int spw_daemon_logs(spw_daemon_t *d, const spw_caller_t *who, const char *id, int err_stream,
                    long long offset, size_t max, char **buf, size_t *len, long long *next,
                    const char **state, spw_error_t *err)
{
    LOCK(d);
    djob_t *j = lookup(d, who, id, err);
    if (!j) {
        UNLOCK(d);
        return 404;
    }
    *state = spw_djob_state_name(j->st);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s/%s.%s", d->log_dir, j->id, j->id,
             err_stream ? "err" : "out");
    UNLOCK(d);
    if (offset < 0)
        offset = 0;
    *buf = spw_xmalloc(max + 1);
    *len = 0;
    *next = offset;
    /* Never blocks nor follows a link: only a regular file is read. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat sb;
    if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
        close(fd);
        fd = -1;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 200;   /* nothing written yet */
    }
    if (fseeko(f, (off_t)offset, SEEK_SET) == 0)
        *len = fread(*buf, 1, max, f);
    fclose(f);
    *next = offset + (long long)*len;
    return 200;
}

/* ---- pools, costs, health ----------------------------------------------------------- */

static json_t *inst_json(spw_daemon_t *d, const dinst_t *x)
{
    char on[200];
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(x->in.id));
    json_object_set_new(o, "offer", json_string(spw_daemon_offer_name(&d->fleet.offers[x->in.offer], on, sizeof(on))));
    json_object_set_new(o, "state", json_string(spw_instance_state_name(x->in.state)));
    json_object_set_new(o, "job_id", x->job_seq ? json_string(d->jobs[x->job_seq]->id) : json_null());
    json_object_set_new(o, "launched_ts", ts_json(x->in.launched_s));
    json_object_set_new(o, "ready_ts", x->in.state == SPW_INSTANCE_BOOTING ? json_null() : ts_json(x->in.ready_s));
    json_object_set_new(o, "ended_ts", ts_json(x->in.ended_s));
    json_object_set_new(o, "price_usd_per_h", json_real(x->in.price_usd_per_h));
    json_object_set_new(o, "cost_usd", json_real(spw_instance_cost_usd(&x->in, d->now)));
    json_object_set_new(o, "emulated", json_boolean(d->pv_ops->emulated));
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
static uint64_t pool_down_gpus(const spw_daemon_t *d, size_t p)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < d->fleet.pools[p].nnodes; k++)
        if (d->node_down[p][k])
            n += d->fleet.pools[p].node_gpus[k];
    return n;
}

/* GPUs of pool p free for a job now: neither held nor on a node that is down. */
static uint64_t pool_free_gpus(const spw_daemon_t *d, size_t p)
{
    uint64_t used = d->pool_busy[p] + pool_down_gpus(d, p);
    return d->pool_gpus[p] > used ? d->pool_gpus[p] - used : 0;
}

/* What the instances of each offer add up to, in one pass over them. */
typedef struct offer_tally {
    size_t by_state[SPW_INSTANCE_STATE_COUNT]; /* instances in each state */
    size_t n;                   /* instances ever acquired */
    double usd;                 /* what they billed up to now */
} offer_tally_t;

static offer_tally_t *tally_offers(const spw_daemon_t *d, double now)
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
static int provider_total(const spw_daemon_t *d, const offer_tally_t *t, size_t i,
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
        json_object_set_new(o, "gpus_free", json_integer((json_int_t)pool_free_gpus(d, i)));
        json_object_set_new(o, "gpus_down", json_integer((json_int_t)pool_down_gpus(d, i)));
        json_object_set_new(o, "cost_usd_per_gpu_h", json_real(p->cost_usd_per_gpu_h));
        json_t *down = json_array();
        for (uint32_t n = 0; n < p->nnodes; n++)
            if (d->node_down[i][n])
                json_array_append_new(down, json_integer(n));
        json_object_set_new(o, "nodes_down", down);
        json_array_append_new(pools, o);
    }
    offer_tally_t *t = tally_offers(d, d->now);
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
        json_object_set_new(o, "spot_usd_per_h", ts_json(f->spot_usd_per_h));
        json_object_set_new(o, "boot_delay_s", json_real(f->boot_delay_s));
        json_object_set_new(o, "emulated", json_boolean(d->pv_ops->emulated));
        json_object_set_new(o, "instances_live", json_integer((json_int_t)live));
        json_array_append_new(offers, o);
    }
    free(t);
    for (size_t k = 0; k < d->ninst; k++) {
        const dinst_t *x = &d->inst[k];
        const djob_t *j = x->job_seq ? d->jobs[x->job_seq] : NULL;
        if (!spw_instance_state_live(x->in.state) && !who->admin)
            continue;
        if (!who->admin && !(j && visible(who, j)))
            continue;
        json_array_append_new(insts, inst_json(d, x));
    }
    UNLOCK(d);
    *out = json_object();
    json_object_set_new(*out, "pools", pools);
    json_object_set_new(*out, "offers", offers);
    json_object_set_new(*out, "instances", insts);
    return 200;
}

/* ---- costs ------------------------------------------------------------------------ */

/* One team's row of /v1/costs. */
typedef struct teamsum {
    const char *team;            /* borrowed: the config's or a job's */
    int gov;                     /* index in fleet.gov.teams, or -1 */
    double onprem_usd, cloud_usd, onprem_gpu_h, cloud_gpu_h;  /* its jobs in the period */
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
    double onprem = 0, cloud_bound = 0;
    for (size_t s = 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j || !visible(who, j))
            continue;
        teamsum_t *t = team_row(&ts, &nts, j->team, spw_gov_team(g, j->team));
        if (j->st == SPW_DJOB_QUEUED) {
            t->held += j->ej.reason == SPW_REASON_HELD_BUDGET || j->ej.reason == SPW_REASON_HELD_CAP;
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
        t->cloud_gpu_h += j->cloud_gpu_h;
        t->jobs++;
        t->settled_usd += j->led_usd + j->led_egress_usd;
        t->egress_usd += j->led_egress_usd;
        if (j->ej.state == SPW_JOB_CLOUD)
            t->reserved_usd += j->ej.reserved_usd;
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
            json_object_set_new(o, "emulated", json_boolean(d->pv_ops->emulated));
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
    free(ts);
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
    json_object_set_new(o, "since_ts", ts_json(d->since_ts));
    json_object_set_new(o, "total_usd", json_real(onprem + cloud));
    json_object_set_new(o, "onprem_usd", json_real(onprem));
    json_object_set_new(o, "cloud_usd", json_real(cloud));
    json_object_set_new(o, "cloud_idle_usd", json_real(cloud - cloud_bound > 0 ? cloud - cloud_bound : 0));
    json_object_set_new(o, "owned_usd", who->admin ? json_real(owned) : json_null());
    json_object_set_new(o, "owned_idle_usd", who->admin ? json_real(owned_idle) : json_null());
    json_object_set_new(o, "teams", teams);
    json_object_set_new(o, "providers", provs);
    json_object_set_new(o, "pools", pools);
    json_object_set_new(o, "org", org);
    UNLOCK(d);
    *out = o;
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

char *spw_daemon_metrics(spw_daemon_t *d)
{
    sbuf_t b = {spw_xmalloc(4096), 0, 4096};
    char e1[256], e2[256], e3[256];
    LOCK(d);
    double now = d->now;
    size_t np = d->fleet.npools;
    /* jobs by state and pool (np = not placed on-prem: "" or the offer's provider) */
    uint64_t *cnt = spw_xcalloc((np + 1) * SPW_DJOB_STATE_COUNT, sizeof(uint64_t));
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
    put(&b, "# HELP spillway_jobs_submitted_total Jobs committed by this daemon process.\n");
    put(&b, "# TYPE spillway_jobs_submitted_total counter\n");
    put(&b, "spillway_jobs_submitted_total %" PRIu64 "\n", d->submitted);
    /* interruptions, summed over the jobs' records (they survive restarts) */
    uint64_t preempt = 0, restarts = 0, failed = 0;
    for (size_t s = 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j)
            continue;
        preempt += j->ej.preemptions;
        restarts += j->ej.restarts;
        failed += j->ej.failures;
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
        put(&b, "spillway_pool_gpus{pool=\"%s\",state=\"free\"} %" PRIu64 "\n", e1, pool_free_gpus(d, p));
        put(&b, "spillway_pool_gpus{pool=\"%s\",state=\"down\"} %" PRIu64 "\n", e1, pool_down_gpus(d, p));
    }
    put(&b, "# HELP spillway_cloud_instances Cloud instances the daemon holds, by offer and state.\n");
    put(&b, "# TYPE spillway_cloud_instances gauge\n");
    const char *emu = d->pv_ops->emulated ? "true" : "false";
    offer_tally_t *t = tally_offers(d, now);
    for (size_t i = 0; i < d->fleet.noffers; i++) {
        const size_t *live = t[i].by_state;
        char on[200];
        spw_daemon_offer_name(&d->fleet.offers[i], on, sizeof(on));
        for (int st = 0; st < SPW_INSTANCE_STATE_COUNT; st++)
            if (live[st] && spw_instance_state_live((spw_instance_state_t)st))
                put(&b, "spillway_cloud_instances{provider=\"%s\",offer=\"%s\",state=\"%s\",emulated=\"%s\"} %zu\n",
                    esc(d->fleet.offers[i].provider, e1, sizeof(e1)), esc(on, e2, sizeof(e2)),
                    spw_instance_state_name((spw_instance_state_t)st), emu, live[st]);
    }
    put(&b, "# HELP spillway_spend_usd_total Dollars spent: amortised on-prem GPU cost and cloud billing.\n");
    put(&b, "# TYPE spillway_spend_usd_total counter\n");
    double onprem = 0;
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
        if (provider_total(d, t, i, &usd, &n) == 0 && n > 0)
            put(&b, "spillway_spend_usd_total{kind=\"cloud\",provider=\"%s\",emulated=\"%s\"} %.6f\n",
                esc(d->fleet.offers[i].provider, e3, sizeof(e3)), emu, usd);
    }
    free(t);
    /* budgets: each team of the config over its current period */
    const spw_gov_t *g = &d->fleet.gov;
    if (g->nteams) {
        spw_govrt_t *rt = spw_engine_gov(d->engine);
        uint64_t *held = spw_xcalloc(g->nteams, sizeof(uint64_t));
        for (size_t s = d->job_lo; s < d->njobs; s++) {
            const djob_t *j = d->jobs[s];
            if (j && j->st == SPW_DJOB_QUEUED && j->ej.team && j->ej.team <= g->nteams &&
                (j->ej.reason == SPW_REASON_HELD_BUDGET || j->ej.reason == SPW_REASON_HELD_CAP))
                held[j->ej.team - 1]++;
        }
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
        put(&b, "# HELP spillway_jobs_held Queued jobs whose cloud burst a budget or cap holds now.\n");
        put(&b, "# TYPE spillway_jobs_held gauge\n");
        for (size_t i = 0; i < g->nteams; i++)
            put(&b, "spillway_jobs_held{team=\"%s\"} %" PRIu64 "\n",
                esc(g->teams[i].name, e1, sizeof(e1)), held[i]);
        free(L);
        free(held);
    }
    put(&b, "# HELP spillway_decision_seconds Time the engine took for one scheduling decision (a turn).\n");
    put(&b, "# TYPE spillway_decision_seconds histogram\n");
    uint64_t acc = 0;
    for (int i = 0; i < SPW_HIST_BUCKETS; i++) {
        acc += d->turn_hist[i];
        put(&b, "spillway_decision_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", spw_daemon_hist_le[i], acc);
    }
    acc += d->turn_hist[SPW_HIST_BUCKETS];
    put(&b, "spillway_decision_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", acc);
    put(&b, "spillway_decision_seconds_sum %.9f\n", d->turn_sum_s);
    put(&b, "spillway_decision_seconds_count %" PRIu64 "\n", d->turns);
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
