/* api_jobs.c: the API's job calls (daemon.h): submit with its checks
 * (governance names, gang sizes, per-team queue limits), the JSON views of
 * one job and of the job list, cancel, explain and logs.  Every call takes
 * mu; changes go through the loop's functions (commit_one, do_cancel). */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/spot.h"
#include "daemon/api_private.h"
#include "daemon/loop_private.h"

/* How long a cancel's answer waits for a backend that does the cancel on a
 * thread of its own (cancel_wait): one request to the cluster, or two when
 * the Job's create is in flight.  Past it the 200 comes anyway. */
#define CANCEL_WAIT_S 10.0

int api_visible(const spw_caller_t *who, const djob_t *j)
{
    return who->admin || (who->team && strcmp(who->team, j->team) == 0);
}

/* Finds job id as caller who may see it, in memory or else in the store
 * (an ended job that left memory: a record made for the call, which *owned
 * gets too, for spw_daemon_view_free); 404 otherwise. */
static djob_t *lookup(spw_daemon_t *d, const spw_caller_t *who, const char *id, djob_t **owned,
                      spw_error_t *err)
{
    djob_t *j = spw_daemon_find_stored(d, id, owned);
    if (!j || !api_visible(who, j)) {
        spw_daemon_view_free(*owned);
        *owned = NULL;
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

/* Why job j is where it is, into o: "reason", a sentence (for a queued job
 * why it waits and what would start it sooner; then its last event; then,
 * last, which nodes out of service it waits for); for a queued job also
 * "reason_code" (one word, spw_daemon_wait_name) and "burst_ts" (when it
 * bursts to the cloud if on-prem does not take it first). */
static void put_reason(json_t *o, const spw_daemon_t *d, const djob_t *j)
{
    char why[400] = "", nodes[512] = "", all[1500];
    int queued = j->st == SPW_DJOB_QUEUED;
    if (queued) {
        spw_dm_wait_t w = spw_daemon_queued_reason(d, j, why, sizeof(why));
        double at = spw_engine_burst_at(d->engine, &j->ej);
        json_object_set_new(o, "reason_code", json_string(spw_daemon_wait_name(w)));
        json_object_set_new(o, "burst_ts", w == SPW_DM_WAIT_BURST ? json_real(at) : json_null());
    }
    if (!spw_daemon_waits_for_nodes(d, j, nodes, sizeof(nodes)))
        nodes[0] = '\0';
    /* A held text an older daemon stored says what why says now. */
    const char *last = j->reason && !(queued && strncmp(j->reason, "held", 4) == 0) ? j->reason : "";
    snprintf(all, sizeof(all), "%s%s%s%s%s", why, why[0] && last[0] ? "; " : "", last,
             (why[0] || last[0]) && nodes[0] ? "; " : "", nodes);
    json_object_set_new(o, "reason", all[0] ? json_string(all) : json_null());
}

void spw_daemon_api_free(spw_daemon_t *d)
{
    for (size_t i = 0; i < d->nteamq; i++)
        free(d->teamq[i].team);
    free(d->teamq);
    d->teamq = NULL;
    d->nteamq = 0;
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
    const dteamq_t *q = dc->max_queued_per_team && spec->team ? dm_teamq(d, spec->team) : NULL;
    if (q && q->n + q->pending >= dc->max_queued_per_team) {
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
    /* The job's user must be able to enter its workdir (the CLI sends the
     * directory it was run in): say so now, not as a failed start later.
     * d->users is set at start and never changes. */
    char blocker[4096];
    if (spec->workdir &&
        !spw_jobuser_enters(spw_jobusers_for(&d->users, spec->team), spec->workdir, blocker,
                            sizeof(blocker))) {
        const spw_jobuser_t *u = spw_jobusers_for(&d->users, spec->team);
        spw_errorf(err, "field 'workdir': this team's jobs run as %.32s, who cannot enter %.96s; "
                   "submit from a directory %.32s can reach, or pass --workdir DIR",
                   u->name ? u->name : "?", blocker, u->name ? u->name : "?");
        goto out;
    }
    LOCK(d);
    spw_error_t e2 = {{0}};
    uint64_t mask = spw_daemon_mask(d, spec, &e2);
    if (e2.text[0] || spw_daemon_feasible(d, spec->gpus, mask, &e2) < 0 ||
        spw_daemon_check_gov(d, spec, &e2) < 0 || spw_daemon_can_run(d, spec, mask, &e2) < 0) {
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
     * concurrent submits of a team cannot all pass the bound; the commit
     * counts the job itself as queued (dm_job_state). */
    char *qteam = spec->team ? spw_xstrdup(spec->team) : NULL;
    if (qteam)
        dm_teamq(d, qteam)->pending++;
    subreq_t r = {.spec = spec, .mask = mask};
    status = spw_daemon_commit_one(d, &r);
    if (qteam)
        dm_teamq(d, qteam)->pending--;
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

/* The log of a job's rank in dir: rank 0 writes ID.out and ID.err, the
 * others ID.nodeN.* (local, ssh hosts) or ID.rankN.out (Kubernetes). */
static void rank_log_path(const char *dir, const char *id, unsigned rank, int err_stream,
                          char *path, size_t cap)
{
    const char *ext = err_stream ? "err" : "out";
    if (rank == 0) {
        snprintf(path, cap, "%s/%s.%s", dir, id, ext);
        return;
    }
    snprintf(path, cap, "%s/%s.node%u.%s", dir, id, rank, ext);
    if (access(path, F_OK) == 0)
        return;
    char alt[4096];
    snprintf(alt, sizeof(alt), "%s/%s.rank%u.%s", dir, id, rank, ext);
    if (access(alt, F_OK) == 0)
        snprintf(path, cap, "%s", alt);
}

/* The ranks whose logs a job has: its nodes while it runs, else the rank
 * files its log directory holds (at least 1). */
static unsigned job_ranks(const spw_daemon_t *d, const djob_t *j)
{
    unsigned n = j->ej.nnodes > j->ninst ? j->ej.nnodes : (unsigned)j->ninst;
    if (n < 1)
        n = 1;
    char dir[4096], path[4200];
    snprintf(dir, sizeof(dir), "%s/%s", d->log_dir, j->id);
    for (unsigned r = n; r < SPW_DAEMON_MAX_RANKS; r++) {
        rank_log_path(dir, j->id, r, 0, path, sizeof(path));
        if (access(path, F_OK) < 0)
            break;
        n = r + 1;
    }
    return n;
}

/* ---- job views -------------------------------------------------------------- */

static json_t *job_json(spw_daemon_t *d, const djob_t *j, int with_spec)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(j->id));
    json_object_set_new(o, "seq", json_integer(j->seq));
    json_object_set_new(o, "name", j->name ? json_string(j->name) : json_null());
    json_object_set_new(o, "team", json_string(j->team));
    json_object_set_new(o, "state", json_string(spw_djob_state_name(j->st)));
    json_object_set_new(o, "gpus", json_integer(j->gpus));
    json_object_set_new(o, "submit_ts", spw_daemon_ts_json(j->submit_ts));
    json_object_set_new(o, "placed_ts", spw_daemon_ts_json(j->placed_ts));
    json_object_set_new(o, "start_ts", spw_daemon_ts_json(j->start_ts));
    json_object_set_new(o, "end_ts", spw_daemon_ts_json(j->end_ts));
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
    if (with_spec)  /* one job's view: its log directory may be read */
        json_object_set_new(o, "ranks", json_integer(job_ranks(d, j)));
    json_object_set_new(o, "emulated", json_boolean(j->offer >= 0 && dm_offer_emulated(d, (size_t)j->offer)));
    json_object_set_new(o, "exit_code", j->has_exit ? json_integer(j->exit_code) : json_null());
    json_object_set_new(o, "attempts", json_integer(j->attempts));
    /* interruptions: the engine's account of its attempts */
    json_object_set_new(o, "restarts", json_integer(spw_job_rare(&j->ej)->restarts));
    json_object_set_new(o, "preemptions", json_integer(spw_job_rare(&j->ej)->preemptions));
    json_object_set_new(o, "failures", json_integer(spw_job_rare(&j->ej)->failures));
    json_object_set_new(o, "done_s", json_real(spw_job_rare(&j->ej)->done_s));
    json_object_set_new(o, "lost_s", json_real(spw_job_rare(&j->ej)->lost_s));
    json_object_set_new(o, "spot", json_boolean(j->ej.state == SPW_JOB_CLOUD ? j->ej.spot : j->last_spot));
    int live = !spw_djob_state_terminal(j->st);
    double iv = j->ej.checkpoint_interval_s;
    json_object_set_new(o, "checkpoint_interval_s",
                        !live                     ? json_null()
                        : iv == SPW_CKPT_CONTINUOUS ? json_string("continuous")
                                                    : json_real(iv));
    char ckpt[4200];
    dm_ckpt_path(d, j, ckpt, sizeof(ckpt));
    json_object_set_new(o, "checkpoint_dir", json_string(ckpt));
    /* deadline: whether the work left, after a restart overhead, still
     * ends in time at the current placement (or starting now) */
    double dl = live ? j->ej.deadline_s : NAN;
    json_object_set_new(o, "deadline_ts", spw_daemon_ts_json(dl));
    json_object_set_new(o, "deadline_at_risk",
                        isnan(dl) ? json_null() : json_boolean(!(spw_daemon_est_end(d, j) <= dl)));
    put_reason(o, d, j);
    if (j->cancel_req)
        json_object_set_new(o, "cancel_requested", json_true());
    /* a commitment's share is part of its cost (outside its team's budget) */
    double commit_usd = spw_daemon_job_commit_usd(d, j, d->now);
    json_object_set_new(o, "cost_usd", json_real(spw_daemon_job_onprem_usd(d, j, d->now) +
                                                 spw_daemon_job_cloud_usd(d, j, d->now) + commit_usd));
    json_object_set_new(o, "commit_usd", json_real(commit_usd));
    /* money: what its live cloud placement reserves against its team's
     * budget, its data egress, and how often a budget or cap held it */
    json_object_set_new(o, "reserved_usd", json_real(j->ej.state == SPW_JOB_CLOUD
                                                         ? spw_job_rare(&j->ej)->reserved_usd
                                                         : 0));
    json_object_set_new(o, "egress_usd", json_real(spw_job_rare(&j->ej)->egress_usd));
    json_object_set_new(o, "egress_gb", json_real(spw_job_rare(&j->ej)->egress_gb));
    json_object_set_new(o, "held", json_integer(spw_job_rare(&j->ej)->held));
    json_object_set_new(o, "charge_ts", spw_daemon_ts_json(j->charge_ts));
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
    djob_t *owned, *j = lookup(d, who, id, &owned, err);
    if (j)
        *out = job_json(d, j, 1);
    spw_daemon_view_free(owned);
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
    long n = 0, nm = 0, no = 0;
    long long next = -1;
    djob_t **mem = spw_xmalloc((size_t)(limit + 1) * sizeof(*mem));
    djob_t **old = spw_xmalloc((size_t)(limit + 1) * sizeof(*old));
    LOCK(d);
    /* The page's jobs in memory; the one past it (if any) bounds the ended
     * jobs that left memory to read from the store, and the two lists
     * merge by seq. */
    for (size_t s = (size_t)after + 1; s < d->njobs && nm <= limit; s++) {
        djob_t *j = d->jobs[s];
        if (j && api_visible(who, j) && (!state || j->st == st) && (!team || strcmp(team, j->team) == 0))
            mem[nm++] = j;
    }
    const char *in_team = who->admin ? team : who->team;
    if (who->admin || who->team)
        no = spw_daemon_stored_jobs(d, after, nm > limit ? mem[limit]->seq : 0, state ? (int)st : -1,
                                    in_team, limit + 1, old, err);
    if (no < 0) {
        UNLOCK(d);
        free(mem);
        free(old);
        json_decref(arr);
        return 503;
    }
    for (long i = 0, k = 0; i < nm || k < no;) {
        djob_t *j = k == no || (i < nm && mem[i]->seq < old[k]->seq) ? mem[i++] : old[k++];
        if (n == limit) {
            next = j->seq - 1;
            break;
        }
        json_array_append_new(arr, job_json(d, j, 0));
        n++;
    }
    for (long k = 0; k < no; k++)
        spw_daemon_view_free(old[k]);
    UNLOCK(d);
    free(mem);
    free(old);
    *out = json_object();
    json_object_set_new(*out, "jobs", arr);
    json_object_set_new(*out, "next_after", next >= 0 ? json_integer(next) : json_null());
    return 200;
}

int spw_daemon_cancel(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                      spw_error_t *err)
{
    LOCK(d);
    djob_t *owned, *j = lookup(d, who, id, &owned, err);
    int status = j ? spw_daemon_do_cancel(d, j, err) : 404;
    void *be = NULL;
    const struct spw_backend_ops *ops = NULL;
    char token[SPW_TOKEN_MAX] = "", jid[SPW_JOB_ID_MAX] = "";
    if (status == 200) {
        *out = job_json(d, j, 0);
        if (j->running && !owned) {
            ops = spw_daemon_job_ops(d, j, &be);
            snprintf(token, sizeof(token), "%s", j->h.token);
            snprintf(jid, sizeof(jid), "%s", j->id);
        }
    }
    spw_daemon_view_free(owned);
    UNLOCK(d);
    /* A backend that hands the cancel to a thread (Kubernetes) has done it
     * before the 200: a pod still waiting for its kubelet cannot start after
     * the answer.  Outside the lock: the daemon goes on meanwhile. */
    if (ops && token[0] && SPW_BACKEND_HAS(ops, 7, cancel_wait) &&
        ops->cancel_wait(be, token, spw_daemon_clock() + CANCEL_WAIT_S) > 0) {
        LOCK(d);
        dm_say(d, "job %s: its cancel was not done by its backend within %.0f s; answered "
                  "anyway (the cancel is recorded and goes on)", jid, CANCEL_WAIT_S);
        UNLOCK(d);
    }
    return status;
}

int spw_daemon_explain(spw_daemon_t *d, const spw_caller_t *who, const char *id, json_t **out,
                       spw_error_t *err)
{
    LOCK(d);
    djob_t *owned, *j = lookup(d, who, id, &owned, err);
    if (!j) {
        UNLOCK(d);
        return 404;
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(j->id));
    json_object_set_new(o, "state", json_string(spw_djob_state_name(j->st)));
    json_object_set_new(o, "now_ts", json_real(d->now));
    put_reason(o, d, j);
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
    json_object_set_new(o, "fair_share", owned ? json_null() : api_fair_explain(d, j));
    spw_daemon_view_free(owned);
    UNLOCK(d);
    *out = o;
    return 200;
}

/* ---- logs ------------------------------------------------------------------------ */

int spw_daemon_logs(spw_daemon_t *d, const spw_caller_t *who, const char *id, int err_stream,
                    unsigned rank, long long offset, size_t max, char **buf, size_t *len, long long *next,
                    const char **state, spw_error_t *err)
{
    LOCK(d);
    djob_t *owned, *j = lookup(d, who, id, &owned, err);
    if (!j) {
        UNLOCK(d);
        return 404;
    }
    *state = spw_djob_state_name(j->st);
    char dir[4096], path[4200];
    snprintf(dir, sizeof(dir), "%s/%s", d->log_dir, j->id);
    rank_log_path(dir, j->id, rank, err_stream, path, sizeof(path));
    spw_daemon_view_free(owned);
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
