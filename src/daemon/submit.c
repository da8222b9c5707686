/* submit.c: submits: what a spec may ask of this fleet (GPU models, gang
 * sizes), the group commit that turns queued submits into jobs in one
 * transaction, and the held reasons written back each turn. */

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/loop_private.h"
#include "util/names.h"

/* Jobs the engine rejected in the last schedule (a budget ran out under
 * on_exhausted: reject) end as rejected. */
void dm_end_rejected(spw_daemon_t *d, spw_job_t **rej, size_t n, double now)
{
    for (size_t i = 0; i < n; i++) {
        djob_t *j = (djob_t *)((char *)rej[i] - offsetof(djob_t, ej));
        dm_set_reason(j, "%s", spw_reason_text(j->ej.reason));
        dm_say(d, "job %s %s", j->id, j->reason);
        dm_job_end(d, j, SPW_DJOB_REJECTED, now);
    }
}

/* Queued jobs the engine held (a budget or cap had no room for their worst
 * case) since they were last saved: their held count is written, so it
 * survives a restart.  The engine names them (spw_engine_held): the cost is
 * what changed, not the queue.  Why a queued job waits is worked out when
 * it is shown (dm_queued_reason), from the engine's state. */
void dm_save_held(spw_daemon_t *d)
{
    spw_job_t **held;
    size_t n = spw_engine_held(d->engine, &held);
    for (size_t i = 0; i < n; i++) {
        djob_t *j = (djob_t *)((char *)held[i] - offsetof(djob_t, ej));
        if (spw_job_rare(&j->ej)->held == j->held_saved || spw_djob_state_terminal(j->st))
            continue;
        dm_job_save(d, j, SPW_JU_MONEY);
    }
}

double dm_job_est_runtime(const spw_daemon_t *d, const spw_jobspec_t *spec)
{
    if (!isnan(spec->est_runtime_s))
        return spec->est_runtime_s;
    double est = d->cfg->daemon.default_est_runtime_s;
    return spec->max_runtime_s > 0 && spec->max_runtime_s < est ? spec->max_runtime_s : est;
}

/* The engine's fields of job j from its spec (j->spec, j->team) and GPU
 * mask, as submitted at now. */
static void engine_fields(spw_daemon_t *d, djob_t *j, uint64_t mask, double now)
{
    j->gpus = j->spec.gpus;
    j->gpu_mask = mask;
    j->ej.submit_s = now;
    j->ej.est_runtime_s = dm_job_est_runtime(d, &j->spec);
    j->ej.gpus = j->gpus;
    j->ej.gpu_mask = j->gpu_mask;
    j->ej.priority = j->spec.priority;
    j->ej.gpus_per_node = j->spec.gpus_per_node;
    j->ej.deadline_s = j->spec.deadline_s;
    dm_job_gov(d, j);
}

int spw_daemon_can_run(spw_daemon_t *d, const spw_jobspec_t *spec, uint64_t mask,
                       spw_error_t *err)
{
    djob_t *j = spw_xcalloc(1, sizeof(*j));
    spw_job_reset(&j->ej);
    j->spec = *spec;                        /* borrowed: not freed here */
    j->team = spec->team ? spec->team : (char *)"";
    engine_fields(d, j, mask, d->now);
    spw_reason_t why = spw_engine_never_runs(d->engine, &j->ej);
    spw_job_clear(&j->ej);
    free(j);
    if (why == SPW_REASON_NONE)
        return 0;
    return spw_errorf(err, "this job can never run here: %s", spw_reason_text(why));
}

/* Turns committed spec r into a job and hands it to the engine. */
static void job_from_submit(spw_daemon_t *d, subreq_t *r, double now)
{
    djob_t *j = dm_job_new(d, strtoll(r->id + 2, NULL, 10));
    j->spec = *r->spec;
    memset(r->spec, 0, sizeof(*r->spec));
    j->team = spw_xstrdup(j->spec.team ? j->spec.team : "");
    j->name = j->spec.name ? spw_xstrdup(j->spec.name) : NULL;
    dm_job_state(d, j, SPW_DJOB_QUEUED);
    j->submit_ts = now;
    engine_fields(d, j, r->mask, now);
    if (isnan(d->since_ts))
        d->since_ts = now;
    spw_engine_submit(d->engine, &j->ej, now);
    if (j->ej.state == SPW_JOB_UNSCHEDULABLE) {
        dm_set_reason(j, "%s", spw_reason_text(j->ej.reason));
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
    }
    d->submitted++;
}

/* Commits every pending submit in one transaction and wakes the callers. */
void dm_commit_submits(spw_daemon_t *d, double now)
{
    size_t n = 0;
    for (subreq_t *r = d->subq; r; r = r->next)
        n++;
    if (!n)
        return;
    const spw_jobspec_t **specs = spw_xmalloc(n * sizeof(*specs));
    char(*ids)[SPW_STORE_ID_LEN] = spw_xmalloc(n * sizeof(*ids));
    size_t i = 0;
    for (subreq_t *r = d->subq; r; r = r->next)
        specs[i++] = r->spec;
    spw_error_t err;
    int rc = spw_store_submit_batch(d->store, specs, n, now, ids, &err);
    if (rc < 0)
        dm_note_commit(d, 0, err.text);
    i = 0;
    for (subreq_t *r = d->subq; r; r = r->next, i++) {
        if (rc == 0) {
            memcpy(r->id, ids[i], SPW_STORE_ID_LEN);
            job_from_submit(d, r, now);
            r->status = 201;
        } else {
            r->err = err;
            r->status = 503;
        }
    }
    d->subq = NULL;
    d->subq_tail = &d->subq;
    free(specs);
    free(ids);
    pthread_cond_broadcast(&d->committed);
}

int spw_daemon_commit_one(spw_daemon_t *d, subreq_t *r)
{
    if (d->stopping) {
        spw_errorf(&r->err, "the daemon is shutting down");
        return r->status = 503;
    }
    char why[256];
    if (dm_disk_low(d, why, sizeof(why))) {
        spw_errorf(&r->err, "%s", why);
        return r->status = 503;
    }
    r->next = NULL;
    *d->subq_tail = r;
    d->subq_tail = &r->next;
    if (!d->started) {
        d->now = fmax(spw_daemon_clock(), d->now);
        dm_commit_submits(d, d->now);
        return r->status;
    }
    pthread_cond_signal(&d->wake);
    while (!r->status)
        pthread_cond_wait(&d->committed, &d->mu);
    return r->status;
}

uint64_t spw_daemon_mask(spw_daemon_t *d, const spw_jobspec_t *s, spw_error_t *err)
{
    uint64_t mask = 0;
    spw_models_t *m = &d->fleet.models;
    for (size_t i = 0; i < s->n_gpu_models; i++) {
        const char *want = s->gpu_models[i];
        int k = spw_models_find(m, want);
        if (k < 0) {
            int any = 0;
            for (int h = 0; h < m->n && !any; h++)
                any = spw_model_accepts(want, m->name[h]);
            if (!any)
                continue;
            k = spw_models_intern(m, want, strlen(want), err);
            if (k < 0)
                return 0;
        }
        mask |= 1ull << k;
    }
    if (s->n_gpu_models && !mask) {
        char have[512] = "";
        size_t used = 0;
        for (int h = 0; h < m->n && used < sizeof(have); h++)
            used += (size_t)snprintf(have + used, sizeof(have) - used, "%s%s", h ? ", " : "", m->name[h]);
        const char *near = spw_names_lookalike((const char *const *)m->name, (size_t)m->n,
                                               s->gpu_models[0]);
        spw_errorf(err, "field 'gpus': no pool or cloud offer has GPU model %s (%s%s%sthe fleet "
                   "has: %s)", s->gpu_models[0], near ? "did you mean " : "", near ? near : "",
                   near ? "? " : "", m->n ? have : "no named models");
        return 0;
    }
    return mask;
}

int spw_daemon_model_ok(const spw_models_t *m, uint64_t mask, int model)
{
    if (!mask || model < 0)
        return 1;
    for (int k = 0; k < m->n; k++)
        if (mask >> k & 1 && spw_model_accepts(m->name[k], m->name[model]))
            return 1;
    return 0;
}

int spw_daemon_feasible(spw_daemon_t *d, uint32_t gpus, uint64_t mask, spw_error_t *err)
{
    const spw_fleet_t *f = &d->fleet;
    uint64_t most = 0;
    for (size_t i = 0; i < f->npools; i++) {
        if (!spw_daemon_model_ok(&f->models, mask, f->pools[i].model))
            continue;
        uint64_t total = d->pool_gpus[i];
        if (total >= gpus)
            return 0;
        if (total > most)
            most = total;
    }
    if (d->cfg->policy.wait.kind != SPW_WAIT_NEVER)
        for (size_t i = 0; i < f->noffers; i++)
            if (spw_daemon_model_ok(&f->models, mask, f->offers[i].model))
                return 0;
    return spw_errorf(err, "field 'gpus': %u GPUs is more than any pool can ever give (the largest that "
                      "accepts the job has %" PRIu64 ")%s", gpus, most,
                      d->cfg->policy.wait.kind == SPW_WAIT_NEVER ? " and the wait policy 'never' keeps jobs off the cloud"
                      : f->noffers ? " and no cloud offer has its GPU model" : " and there is no cloud");
}

static const char *const wait_names[] = {
#define SPW_WAIT_NAME(a, s) s,
    SPW_DM_WAITS(SPW_WAIT_NAME)
#undef SPW_WAIT_NAME
};

const char *spw_daemon_wait_name(spw_dm_wait_t w)
{
    return w < SPW_DM_WAIT_COUNT ? wait_names[w] : "?";
}

spw_dm_wait_t spw_daemon_wait_of(const spw_daemon_t *d, const djob_t *j)
{
    switch (j->ej.reason) {
    case SPW_REASON_HELD_BUDGET:
    case SPW_REASON_ONPREM_ONLY_BUDGET:
        return SPW_DM_WAIT_BUDGET;
    case SPW_REASON_OVER_LIMIT:
        return SPW_DM_WAIT_LIMIT;
    case SPW_REASON_HELD_CAP:
        return SPW_DM_WAIT_CAP;
    case SPW_REASON_WAIT_SPOT:
        return SPW_DM_WAIT_SPOT;
    case SPW_REASON_CANNOT_FINISH:
        return SPW_DM_WAIT_FINISH;
    default:
        break;
    }
    if (j->ej.by_residency)
        return SPW_DM_WAIT_RULE;
    return isfinite(spw_engine_burst_at(d->engine, &j->ej)) ? SPW_DM_WAIT_BURST
                                                            : SPW_DM_WAIT_CAPACITY;
}

spw_dm_wait_t spw_daemon_queued_reason(const spw_daemon_t *d, const djob_t *j, char *buf,
                                       size_t len)
{
    spw_dm_wait_t w = spw_daemon_wait_of(d, j);
    const char *team = j->team && j->team[0] ? j->team : NULL;
    char at[32] = "";
    double burst = spw_engine_burst_at(d->engine, &j->ej);
    if (isfinite(burst)) {
        time_t t = (time_t)ceil(burst);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    switch (w) {
    case SPW_DM_WAIT_BUDGET:
        snprintf(buf, len, "held by budget: %s%s's budget has no room for its worst case%s; it "
                 "runs when money frees or the period ends, or sooner with a shorter --max-runtime "
                 "or fewer GPUs (a smaller worst case)", team ? "team " : "its team",
                 team ? team : "",
                 j->ej.reason == SPW_REASON_ONPREM_ONLY_BUDGET ? " (on_exhausted: onprem_only: "
                 "waiting for on-prem GPUs)" : "");
        break;
    case SPW_DM_WAIT_LIMIT:
        snprintf(buf, len, "held by budget: its worst case is over a budget or cap even with "
                 "nothing else spent, so it waits for %u on-prem GPUs; a shorter --max-runtime "
                 "or fewer GPUs lowers the worst case", j->gpus);
        break;
    case SPW_DM_WAIT_CAP:
        snprintf(buf, len, "held by cap: a cloud spend-rate or GPU cap (max_cloud_usd_per_h, "
                 "max_cloud_gpus) is full; it runs when one frees, or sooner with fewer GPUs");
        break;
    case SPW_DM_WAIT_SPOT:
        snprintf(buf, len, "waiting for spot capacity while its deadline leaves slack");
        break;
    case SPW_DM_WAIT_FINISH:
        snprintf(buf, len, "no cloud offer can finish it within its max_runtime or deadline, so "
                 "it waits for %u on-prem GPUs; a longer --max-runtime lets it burst", j->gpus);
        break;
    case SPW_DM_WAIT_RULE:
        snprintf(buf, len, "held by rule: its residency keeps it off the cloud; waiting for %u "
                 "on-prem GPUs", j->gpus);
        break;
    case SPW_DM_WAIT_BURST:
        snprintf(buf, len, "no capacity: waiting for %u on-prem GPUs; bursts to the cloud at %s "
                 "if none frees", j->gpus, at);
        break;
    default:
        snprintf(buf, len, "no capacity: waiting for %u on-prem GPUs%s", j->gpus,
                 d->cfg->policy.wait.kind == SPW_WAIT_NEVER ? " (wait: never: no cloud burst)"
                 : "; fewer GPUs may start sooner");
        break;
    }
    return w;
}
