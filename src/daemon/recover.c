/* recover.c: recovery at start-up: jobs and instances loaded from the
 * store, the provider reconciled, every placed job's attempt found again by
 * its launch token and re-adopted, or settled as gone, or stopped when it
 * belongs to a fenced attempt; and the follow-up for attempts whose backend
 * could not tell yet. */

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "daemon/loop_private.h"

/* How often attempts whose backend could not tell whether they run are
 * asked again, seconds. */
#define UNSURE_RECHECK_S 2.0

typedef struct loadctx {
    spw_daemon_t *d;
    spw_error_t *err;
    int failed;
    size_t left;                /* ended jobs left in the store, not loaded */
} loadctx_t;

static int readopt(spw_daemon_t *d, djob_t *j, spw_error_t *ferr);
static void engine_fields(spw_daemon_t *d, djob_t *j);

void dm_recheck_unsure(spw_daemon_t *d, double now)
{
    if (!d->nunsure || now - d->unsure_ts < UNSURE_RECHECK_S)
        return;
    d->unsure_ts = now;
    size_t left = 0;
    for (size_t s = d->job_lo; s < d->njobs; s++) {
        djob_t *j = d->jobs[s];
        if (!j || !j->unsure)
            continue;
        if (j->st != SPW_DJOB_PLACED && j->st != SPW_DJOB_RUNNING) {
            j->unsure = 0;   /* ended or requeued meanwhile (a cancel, a node down) */
            continue;
        }
        spw_error_t err;
        int rc = readopt(d, j, &err);
        if (rc == -2) {
            left++;
            continue;
        }
        j->unsure = 0;
        if (rc == 0) {
            if (j->cancel_req &&
                JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, now, &err) < 0)
                dm_say(d, "job %s: cannot stop it yet: %s", j->id, err.text);
            if (!j->cancel_req)
                dm_set_reason(j, "re-adopted once its backend answered again");
            dm_job_state(d, j, SPW_DJOB_RUNNING);
            dm_job_save(d, j, SAVE_ALL);
            continue;
        }
        if (j->cancel_req) {
            dm_set_reason(j, "cancelled by a user");
            dm_eng_cancel(d, j, now);
            dm_job_end(d, j, SPW_DJOB_CANCELLED, now);
        } else if (j->st == SPW_DJOB_PLACED || (uint32_t)j->attempts <= j->spec.retries) {
            dm_set_reason(j, "requeued: its launch %s is gone (it ended, or never started, while "
                          "the daemon could not see it)", j->token);
            dm_job_requeue(d, j, now);
        } else {
            dm_set_reason(j, "its launch %s ended while the daemon could not see it (exit status "
                          "unknown)", j->token);
            dm_eng_finish(d, j, now);
            dm_job_end(d, j, SPW_DJOB_FAILED, now);
        }
        dm_say(d, "job %s %s (%s)", j->id, spw_djob_state_name(j->st), j->reason);
    }
    d->nunsure = left;
}

int dm_offer_by_name(const spw_daemon_t *d, const char *name)
{
    char on[200];
    for (size_t i = 0; i < d->fleet.noffers; i++)
        if (strcmp(spw_daemon_offer_name(&d->fleet.offers[i], on, sizeof(on)), name) == 0)
            return (int)i;
    return -1;
}

static int pool_by_name(const spw_daemon_t *d, const char *name, size_t len)
{
    for (size_t i = 0; i < d->fleet.npools; i++)
        if (strlen(d->fleet.pools[i].name) == len && memcmp(d->fleet.pools[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

djob_t *dm_job_from_row(spw_daemon_t *d, const spw_store_job_t *r, spw_error_t *err)
{
    djob_t *j = dm_job_alloc(r->seq);
    if (strcmp(j->id, r->id) != 0) {
        spw_errorf(err, "the database holds job %s at sequence %" PRId64 "; expected %s", r->id,
                   r->seq, j->id);
        dm_job_free(j);
        return NULL;
    }
    spw_jobspec_t spec;
    spw_error_t e2;
    if (spw_jobspec_parse(r->id, r->spec_json, strlen(r->spec_json), &spec, &e2) < 0) {
        spw_errorf(err, "the database holds a job spec this version cannot read: %s", e2.text);
        dm_job_free(j);
        return NULL;
    }
    j->team = spw_xstrdup(r->team ? r->team : "");
    j->name = spec.name ? spw_xstrdup(spec.name) : NULL;
    dm_job_state(d, j, r->state);
    j->submit_ts = r->submit_ts;
    j->placed_ts = r->placed_ts;
    j->start_ts = r->start_ts;
    j->end_ts = r->end_ts;
    j->attempts = r->attempts;
    j->has_exit = r->has_exit_code;
    j->exit_code = r->exit_code;
    j->reason = r->reason ? spw_xstrdup(r->reason) : NULL;
    j->gpus = spec.gpus;
    /* The stored cloud_usd holds the committed share too (schema 12 keeps
     * it apart: 0 in older rows, whose share stays cloud). */
    j->commit_usd = fmin(fmax(r->commit_usd, 0), r->cloud_usd);
    j->cloud_usd = r->cloud_usd - j->commit_usd;
    j->onprem_usd = r->cost_usd > r->cloud_usd ? r->cost_usd - r->cloud_usd : 0;
    j->onprem_gpu_h = r->onprem_gpu_h;
    j->cloud_gpu_h = r->cloud_gpu_h;
    j->charge_ts = r->charge_ts;
    j->led_usd = r->ledger_usd;
    j->led_egress_usd = r->ledger_egress_usd;
    spw_job_rare_t *x = spw_job_rare_w(&j->ej);
    x->reserved_usd = r->reserved_usd;
    x->egress_usd = r->egress_usd;
    x->egress_gb = r->egress_gb;
    x->onprem_egress_usd = r->onprem_egress_usd;
    x->held = j->held_saved = (uint32_t)r->held;
    x->done_s = r->done_s;
    x->lost_s = r->lost_s;
    x->lost_gpu_s = r->lost_gpu_s;
    x->spot_gpu_s = r->spot_gpu_s;
    x->ondemand_gpu_s = r->ondemand_gpu_s;
    x->restarts = (uint32_t)r->restarts;
    x->preemptions = (uint32_t)r->preemptions;
    x->failures = (uint32_t)r->failures;
    x->last_offer = r->last_offer >= 0 && (uint64_t)r->last_offer < d->fleet.noffers
                        ? (int32_t)r->last_offer
                        : -1;
    j->last_spot = r->spot;
    j->ej.team = (uint32_t)(spw_gov_team(&d->fleet.gov, j->team) + 1);
    j->gpus_assigned = r->gpus_assigned ? spw_xstrdup(r->gpus_assigned) : NULL;
    j->ran_on = r->ran_on ? spw_xstrdup(r->ran_on) : NULL;
    if (r->pid) {
        j->h.pid = j->h.pgid = (pid_t)r->pid;
        j->h.start_ticks = (uint64_t)r->pid_start_ticks;
    }
    if (r->launch_token)
        snprintf(j->token, sizeof(j->token), "%s", r->launch_token);
    j->cancel_req = r->cancel_req && !spw_djob_state_terminal(r->state);
    if (r->placement && strncmp(r->placement, "onprem:", 7) == 0) {
        const char *s = r->placement + 7, *slash = strrchr(s, '/');
        j->pool = slash ? pool_by_name(d, s, (size_t)(slash - s)) : -1;
        j->node = slash && j->pool >= 0 ? atoi(slash + 1) : -1;
        if (j->pool >= 0 && (j->node < 0 || (uint32_t)j->node >= d->fleet.pools[j->pool].nnodes))
            j->pool = j->node = -1;
    } else if (r->placement && strncmp(r->placement, "cloud:", 6) == 0) {
        j->offer = dm_offer_by_name(d, r->placement + 6);
    }
    j->spec = spec;
    if (spw_djob_state_terminal(j->st)) {
        /* Its engine record as at submit (explain weighs it so), then the
         * spec goes, as when a job ends. */
        engine_fields(d, j);
        spw_jobspec_free(&j->spec);
    }
    return j;
}

/* What job j settled against its team's budget, told to the ledger in the
 * period it was charged to. */
static void ledger_settled(spw_daemon_t *d, const djob_t *j)
{
    if (!j->ej.team || !(j->led_usd > 0 || j->led_egress_usd > 0))
        return;
    /* Egress into on-prem pools counts in the egress month only, as the
     * running engine counted it (spw_govrt_egress_paid); the rest in the
     * budget period as well. */
    double at = isnan(j->charge_ts) ? j->submit_ts : j->charge_ts;
    double budget = spw_daemon_job_budget_egress(j);
    spw_govrt_t *gov = spw_engine_gov(d->engine);
    spw_govrt_add_settled(gov, (int)j->ej.team - 1, at, j->led_usd, budget);
    spw_govrt_egress_paid(gov, (int)j->ej.team - 1, at, j->led_egress_usd - budget);
}

static int load_job(const spw_store_job_t *r, void *arg)
{
    loadctx_t *c = arg;
    spw_daemon_t *d = c->d;
    djob_t *j = dm_job_from_row(d, r, c->err);
    if (!j) {
        c->failed = 1;
        return 1;
    }
    if (isnan(d->since_ts) || r->submit_ts < d->since_ts)
        d->since_ts = r->submit_ts;
    if (spw_djob_state_terminal(j->st) && !dm_job_retained(d, j->end_ts, d->now)) {
        /* Ended before the retention window: it stays in the store, and
         * what it settled and counts for is kept without it. */
        ledger_settled(d, j);
        dm_job_retire(d, j);
        dm_job_free(j);
        c->left++;
        return 0;
    }
    dm_job_put(d, j);
    return 0;
}

static int load_inst(const spw_store_instance_t *r, void *arg)
{
    loadctx_t *c = arg;
    spw_daemon_t *d = c->d;
    int offer = dm_offer_by_name(d, r->offer);
    if (offer < 0) {
        dm_say(d, "instance %s: offer %s is no longer in the config; it is kept for its cost only",
               r->id, r->offer);
        offer = 0;
        if (!d->fleet.noffers)
            return 0;
    }
    spw_instance_t in;
    memset(&in, 0, sizeof(in));
    snprintf(in.id, sizeof(in.id), "%s", r->id);
    snprintf(in.job_id, sizeof(in.job_id), "%s", r->job_id ? r->job_id : "");
    in.offer = (size_t)offer;
    const spw_offer_t *o = &d->fleet.offers[offer];
    snprintf(in.provider, sizeof(in.provider), "%s", o->provider);
    snprintf(in.region, sizeof(in.region), "%s", o->region);
    snprintf(in.zone, sizeof(in.zone), "%s", o->zone);
    snprintf(in.instance_type, sizeof(in.instance_type), "%s", o->instance_type);
    in.price_usd_per_h = r->price_usd_per_h;
    /* The store keeps the price, not the kind: a spot instance is one
     * billed at the offer's spot price. */
    in.spot = !isnan(o->spot_usd_per_h) && o->spot_usd_per_h != o->ondemand_usd_per_h &&
              r->price_usd_per_h == o->spot_usd_per_h;
    in.state = r->state == SPW_INST_BOOTING ? SPW_INSTANCE_BOOTING
               : r->state == SPW_INST_READY ? SPW_INSTANCE_READY
                                            : SPW_INSTANCE_RELEASED;
    in.launched_s = r->launched_ts;
    in.ready_s = isnan(r->ready_ts) ? r->launched_ts + o->boot_delay_s : r->ready_ts;
    in.ended_s = r->released_ts;
    snprintf(in.addr, sizeof(in.addr), "%s", r->addr ? r->addr : "");
    snprintf(in.account, sizeof(in.account), "%s", r->account && *r->account ? r->account
                                                                             : "emulated");
    snprintf(in.cloud_id, sizeof(in.cloud_id), "%s", r->cloud_id ? r->cloud_id : "");
    size_t xi = dm_inst_add(d, &in);
    djob_t *j = r->job_id ? spw_daemon_find(d, r->job_id) : NULL;
    if (j && spw_instance_state_live(in.state) && !spw_djob_state_terminal(j->st)) {
        d->inst[xi].job_seq = j->seq;
        d->inst[xi].bound_ts = isnan(j->placed_ts) ? in.launched_s : j->placed_ts;
        j->inst = spw_xrealloc(j->inst, (j->ninst + 1) * sizeof(size_t));
        j->inst[j->ninst++] = xi;
    } else {
        d->inst[xi].idle_ts = d->now;
    }
    return 0;
}

/* Hands every live cloud instance of account ai to its provider's
 * reconcile; releases the orphans it reports (acquired but never
 * recorded). */
static int reconcile(spw_daemon_t *d, size_t ai, spw_error_t *err)
{
    dacct_t *a = &d->acct[ai];
    size_t nlive = 0;
    spw_instance_t *known = spw_xcalloc(d->ninst + 1, sizeof(spw_instance_t));
    for (size_t i = 0; i < d->ninst; i++)
        if (spw_instance_state_live(d->inst[i].in.state) && d->inst[i].acct == (int32_t)ai)
            known[nlive++] = d->inst[i].in;
    size_t max = 16, norph = 0;
    spw_instance_t *orph = NULL;
    for (;;) {
        orph = spw_xrealloc(orph, max * sizeof(spw_instance_t));
        if (a->ops->reconcile(a->pv, known, nlive, d->now, orph, max, &norph, err) < 0) {
            free(known);
            free(orph);
            return -1;
        }
        if (norph <= max)
            break;
        max = norph;
    }
    for (size_t i = 0; i < norph; i++) {
        spw_error_t e2;
        if (a->ops->release(a->pv, &orph[i], d->now, &e2) < 0) {
            dm_say(d, "cannot release orphan instance %s: %s", orph[i].id, e2.text);
            continue;
        }
        dm_say(d, "released instance %s, acquired before a crash but never recorded", orph[i].id);
        orph[i].state = SPW_INSTANCE_RELEASED;
        orph[i].ended_s = d->now;
        snprintf(orph[i].account, sizeof(orph[i].account), "%s", a->name);
        size_t xi = dm_inst_add(d, &orph[i]);
        dm_inst_insert(d, &d->inst[xi]);
        dm_inst_save(d, &d->inst[xi]);
    }
    free(known);
    free(orph);
    return 0;
}

/* Fills the engine record of a live job loaded from the database. */
static void engine_fields(spw_daemon_t *d, djob_t *j)
{
    j->ej.submit_s = j->submit_ts;
    j->ej.est_runtime_s = dm_job_est_runtime(d, &j->spec);
    j->ej.gpus = j->gpus;
    spw_error_t e2;
    j->gpu_mask = spw_daemon_mask(d, &j->spec, &e2);
    j->ej.gpu_mask = j->gpu_mask;
    j->ej.priority = j->spec.priority;
    j->ej.gpus_per_node = j->spec.gpus_per_node;
    j->ej.deadline_s = j->spec.deadline_s;
    dm_job_gov(d, j);
}

/* Parses "0,1,3" into GPU bits. */
static uint64_t parse_bits(const char *s)
{
    uint64_t b = 0;
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        if (v >= 0 && v < 64)
            b |= 1ull << v;
        s = *end == ',' ? end + 1 : end;
    }
    return b;
}

/* Asks the backend, by launch token, whether the launch of an intent whose
 * handle was never recorded runs: 1 with *h (tracked), 0 when nothing of
 * it runs or ever will, -1 when it cannot tell (after retrying for a few
 * seconds; err says why). */
static int find_launch(spw_daemon_t *d, const char *token, spw_handle_t *h, spw_error_t *err)
{
    if (d->be_ops->version < 2 || !d->be_ops->find)
        return spw_errorf(err, "the %s backend cannot find a launch by its token",
                          d->be_ops->name);
    for (int tries = 0;; tries++) {
        int rc = d->be_ops->find(d->be, token, h, err);
        if (rc >= 0 || tries >= 250)
            return rc;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Re-adopts the process of a placed job: by its recorded pid and start
 * time, or, when the daemon died before recording them, by the token of its
 * launch intent.  0 if it runs, -1 if it is gone (or never started), -2 if
 * the backend cannot tell (err). */
static int readopt(spw_daemon_t *d, djob_t *j, spw_error_t *ferr)
{
    void *pbe;
    int32_t pool = j->ej.state == SPW_JOB_ONPREM ? j->ej.pool
                   : j->ej.state == SPW_JOB_CLOUD ? spw_daemon_cloud_pool(d, j) : j->pool;
    const struct spw_backend_ops *pops = spw_daemon_pool_ops(d, pool, &pbe);
    if (pops != d->be_ops) {
        /* A pool with its own backend (Slurm): whatever carries the token
         * of the attempt's committed intent, recorded handle or not. */
        if (!j->token[0])
            return -1;   /* no intent: nothing was launched */
        spw_handle_t ph;
        int rc = pops->find(pbe, j->token, &ph, ferr);
        if (rc < 0)
            return -2;
        if (rc == 0)
            return -1;
        j->h = ph;
        j->be_pool = pool;
        j->running = 1;
        if (isnan(j->start_ts))
            j->start_ts = d->now;
        dm_say(d, "job %s: re-adopted %s job %s", j->id, pops->name, ph.ext);
        return 0;
    }
    spw_handle_t h;
    spw_error_t err;
    memset(&h, 0, sizeof(h));
    if (j->h.pid < 0)
        return -1;   /* a Slurm job's, its pool now local (a config change) */
    if (!j->h.pid) {
        if (!j->token[0])
            return -1;   /* no intent: nothing was launched */
        int rc = find_launch(d, j->token, &h, ferr);
        if (rc < 0)
            return -2;
        if (rc == 0)
            return -1;
    } else {
        h.pid = h.pgid = j->h.pid;
        h.start_ticks = j->h.start_ticks;
    }
    snprintf(h.job_id, sizeof(h.job_id), "%s", j->id);
    /* The token of the attempt that process runs (a pid without an intent
     * is from before schema 4: its exit record is by job id). */
    snprintf(h.token, sizeof(h.token), "%s", j->token);
    h.started_s = isnan(j->start_ts) ? d->now : j->start_ts;
    h.max_runtime_s = dm_run_limit(d, j);
    pid_t pid = h.pid;
    if (d->be_ops->adopt(d->be, &h, &err) < 0)
        return -1;
    j->h = h;
    j->running = 1;
    if (isnan(j->start_ts))
        j->start_ts = d->now;
    dm_say(d, "job %s: re-adopted its process %ld", j->id, (long)pid);
    return 0;
}

/* A placed job whose process is gone after a restart. */
static void recover_gone(spw_daemon_t *d, djob_t *j)
{
    spw_exit_kind_t kind;
    int status;
    /* The exit record of the attempt its intent names (by token); rows
     * from before schema 4 have theirs by job id. */
    int known = SPW_BACKEND_HAS(d->be_ops, 4, read_exit) &&
                d->be_ops->read_exit(d->be, j->token, j->id, &kind, &status) == 0;
    if (known) {
        if (j->attempts == 0)
            j->attempts = 1;   /* launched in the instant before it was recorded */
        j->has_exit = 1;
        j->exit_code = kind == SPW_EXIT_EXITED ? status : 128 + status;
    }
    if (j->cancel_req) {
        /* An acknowledged cancel: it ends cancelled, whatever its exit. */
        dm_set_reason(j, "cancelled by a user");
        dm_job_end(d, j, SPW_DJOB_CANCELLED, d->now);
        return;
    }
    if (known && kind == SPW_EXIT_EXITED && status == 0) {
        dm_set_reason(j, "exited 0 while the daemon was down");
        dm_job_end(d, j, SPW_DJOB_SUCCEEDED, d->now);
        return;
    }
    if (known && (uint32_t)j->attempts > j->spec.retries) {
        dm_set_reason(j, "%s %d while the daemon was down", kind == SPW_EXIT_EXITED ? "exited with" : "killed by signal",
                      status);
        dm_job_end(d, j, SPW_DJOB_FAILED, d->now);
        return;
    }
    if (j->st == SPW_DJOB_PLACED && !j->h.pid && !known) {
        dm_set_reason(j, "requeued: placed but not started when the daemon stopped");
    } else if ((uint32_t)j->attempts <= j->spec.retries) {
        dm_set_reason(j, "its process ended while the daemon was down; retry %d of %u", j->attempts,
                      j->spec.retries);
    } else {
        dm_set_reason(j, "its process ended while the daemon was down (exit status unknown)");
        dm_job_end(d, j, SPW_DJOB_FAILED, d->now);
        return;
    }
    j->pool = j->node = -1;
    free(j->gpus_assigned);
    j->gpus_assigned = NULL;
    j->h.pid = 0;
    j->token[0] = '\0';
    dm_unbind_instances(d, j, d->now);
    dm_job_state(d, j, SPW_DJOB_QUEUED);
    j->placed_ts = j->start_ts = NAN;
    dm_job_save(d, j, SAVE_ALL);
    spw_engine_submit(d->engine, &j->ej, d->now);
}

/* A job placed when the daemon stopped: it holds its GPUs, or in the cloud
 * its instances and its reservation, again; or it is ended or requeued
 * when its process is gone.  Its onprem_usd and cloud_usd, as loaded, are
 * what earlier attempts settled; the current one accrues from its start. */
static int recover_placed(spw_daemon_t *d, djob_t *j, spw_error_t *err)
{
    int rc;
    if (j->pool >= 0) {
        j->ej.state = SPW_JOB_ONPREM;
        j->ej.pool = j->pool;
        j->ej.node = j->node;
        j->ej.placed_s = isnan(j->placed_ts) ? d->now : j->placed_ts;
        j->ej.start_s = isnan(j->start_ts) ? d->now : j->start_ts;
        int32_t pool = j->pool, node = j->node;
        j->pool = j->node = -1;
        spw_error_t uerr;
        void *pbe;
        int pooled = spw_daemon_pool_ops(d, j->ej.pool, &pbe) != d->be_ops;
        rc = readopt(d, j, &uerr);
        if (rc == -2 && !pooled)
            /* the local backend's "cannot tell" is a file it cannot read:
             * no state to start from */
            return spw_errorf(err, "%s", uerr.text);
        if (rc == -2) {
            /* Its backend cannot tell now (Slurm does not answer): the job
             * keeps its placement as if it ran, and is never placed again
             * meanwhile; the loop asks again (dm_recheck_unsure). */
            if (spw_engine_restore(d->engine, &j->ej) < 0)
                return spw_errorf(err, "job %s: cannot tell whether it runs (%s), and its "
                                  "GPUs are taken after a config change", j->id, uerr.text);
            j->unsure = 1;
            d->nunsure++;
            dm_say(d, "job %s: cannot tell yet whether its launch %s runs (%s); keeping its "
                   "placement and asking again", j->id, j->token, uerr.text);
        } else if (rc < 0 || spw_engine_restore(d->engine, &j->ej) < 0) {
            dm_ej_reset(j);
            if (j->running) {
                spw_error_t err;
                JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, d->now, &err);
                j->cancel_req = 1;
                dm_set_reason(j, "its GPUs are taken after a config change; stopping it");
                return 0;
            }
            recover_gone(d, j);
            return 0;
        }
        j->pool = pool;
        j->node = node;
        j->holds = 1;
        j->gpu_bits = parse_bits(j->gpus_assigned);
        d->node_used[pool][node] |= j->gpu_bits;
        j->held_gpus = j->ej.alloc_gpus;
        d->pool_busy[pool] += j->held_gpus;
        if (!j->unsure)
            dm_job_state(d, j, SPW_DJOB_RUNNING);
        dm_job_save(d, j, SAVE_ALL);
        return 0;
    }
    if (j->offer < 0 || j->ninst == 0) {
        spw_job_rare_w(&j->ej)->reserved_usd = 0;   /* its instances are gone: nothing to hold */
        recover_gone(d, j);
        return 0;
    }
    j->ej.state = SPW_JOB_CLOUD;
    j->ej.offer = j->offer;
    j->ej.instances = (uint32_t)j->ninst;
    j->ej.spot = (uint8_t)(d->inst[j->inst[0]].in.spot != 0);
    j->ej.placed_s = isnan(j->placed_ts) ? d->now : j->placed_ts;
    j->ej.start_s = isnan(j->start_ts) ? d->now : j->start_ts;
    /* Its reservation, as committed with the placement, holds again in
     * the period it was charged to; of its egress, the engine re-reserves
     * what this attempt has not settled. */
    spw_job_rare_t *x = spw_job_rare_w(&j->ej);
    x->charge_s = isnan(j->charge_ts) ? j->ej.placed_s : j->charge_ts;
    double egress = x->egress_usd;
    x->egress_usd = egress > j->led_egress_usd ? egress - j->led_egress_usd : 0;
    int restored = spw_engine_restore(d->engine, &j->ej) == 0;
    spw_job_rare_w(&j->ej)->egress_usd = egress;
    if (!restored) {
        dm_ej_reset(j);
        recover_gone(d, j);
        return 0;
    }
    if ((rc = readopt(d, j, err)) == -2)
        return -1;   /* cloud jobs run on the local backend (see above) */
    if (rc == 0) {
        dm_job_state(d, j, SPW_DJOB_RUNNING);
        dm_job_save(d, j, SAVE_ALL);
    } else if (j->st == SPW_DJOB_RUNNING || j->h.pid || j->token[0]) {
        /* It ended while the daemon was down (or its launch intent never
         * started): the attempt settles to what its instances billed up to
         * now. */
        dm_eng_finish(d, j, d->now);
        dm_ej_reset(j);
        recover_gone(d, j);
    } else {
        j->next_wait = d->waiting;   /* still booting: launched on READY */
        d->waiting = j;
    }
    return 0;
}

/* After a restart, the process of an attempt that was interrupted (its
 * instance preempted, its node down) and still being stopped when the
 * daemon went down: adopted and stopped again, its exit ignored. */
static void stop_old(spw_daemon_t *d, djob_t *j)
{
    spw_error_t err;
    if (j->h.pid < 0 && j->token[0]) {
        /* A pool backend's job (Slurm) has no pid (stored as -1): its
         * launch token stayed stored while it was being stopped
         * (dm_job_interrupt), until a new launch replaces it. */
        for (size_t p = 0; p < d->fleet.npools; p++) {
            void *be;
            const struct spw_backend_ops *ops = spw_daemon_pool_ops(d, (int32_t)p, &be);
            if (ops == d->be_ops || ops->version < 2 || !ops->find)
                continue;
            spw_handle_t h;
            int rc = ops->find(be, j->token, &h, &err);
            if (rc < 0)
                dm_say(d, "job %s: cannot tell whether its interrupted attempt %s still runs "
                       "in pool %s: %s", j->id, j->token, d->fleet.pools[p].name, err.text);
            if (rc != 1)
                continue;
            j->h = h;
            j->be_pool = (int32_t)p;
            j->running = 1;
            if (ops->cancel(be, &j->h, d->now, &err) < 0)
                dm_say(d, "job %s: cannot stop its interrupted attempt: %s", j->id, err.text);
            else
                dm_say(d, "job %s: stopping its interrupted attempt again (%s job %s)", j->id,
                       ops->name, h.ext);
            j->stopping = 1;
            return;
        }
        return;
    }
    if (!j->h.pid || readopt(d, j, &err) < 0) {
        j->h.pid = 0;
        return;
    }
    if (JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, d->now, &err) < 0)
        dm_say(d, "job %s: cannot stop the process of its interrupted attempt: %s", j->id, err.text);
    j->stopping = 1;
}

int dm_recover(spw_daemon_t *d, spw_error_t *err)
{
    loadctx_t c = {.d = d, .err = err};
    if (spw_store_job_list(d->store, NULL, load_job, &c, err) < 0 || c.failed)
        return -1;
    if (spw_store_instance_list(d->store, 0, load_inst, &c, err) < 0)
        return -1;
    for (size_t i = 0; i < d->ninst; i++)
        if (d->inst[i].acct < 0 && spw_instance_state_live(d->inst[i].in.state))
            return spw_errorf(err, "instance %s is live in cloud account %s, which cloud.accounts "
                              "no longer has: put the account back (and release the instance "
                              "if it is no longer wanted)", d->inst[i].in.id, d->inst[i].in.account);
    if (dm_recover_acquisitions(d, err) < 0)
        return -1;
    for (size_t i = 0; i < d->nacct; i++)
        if (reconcile(d, i, err) < 0)
            return -1;
    /* Ready instances that are hosts rejoin the cloud backend before their
     * jobs are looked for there. */
    for (size_t i = 0; i < d->ninst; i++)
        if (d->inst[i].in.state == SPW_INSTANCE_READY)
            spw_daemon_cloud_host_up(d, &d->inst[i]);
    /* The ledger remembers what every job settled against its team's
     * budget, in the period it was charged to, as the database has it
     * (before recovery settles anything more); live cloud placements hold
     * their reservations again through spw_engine_restore below. */
    for (size_t s = 1; s < d->njobs; s++)
        if (d->jobs[s])
            ledger_settled(d, d->jobs[s]);
    size_t requeued = 0, adopted = 0, queued = 0;
    /* Placed jobs first, so they hold their GPUs before the queue is looked at. */
    for (size_t s = 1; s < d->njobs; s++) {
        djob_t *j = d->jobs[s];
        if (!j || (j->st != SPW_DJOB_PLACED && j->st != SPW_DJOB_RUNNING))
            continue;
        if (j->st == SPW_DJOB_PLACED && j->h.pid) {
            /* Placed again after an interruption, waiting for the old
             * process to exit: that process is stopped, the placement
             * (never started) made again. */
            stop_old(d, j);
            dm_unbind_instances(d, j, d->now);
            j->pool = j->node = j->offer = -1;
            free(j->gpus_assigned);
            j->gpus_assigned = NULL;
            dm_job_state(d, j, SPW_DJOB_QUEUED);
            j->placed_ts = j->start_ts = NAN;
            dm_set_reason(j, "requeued: placed after an interruption but not started when the "
                          "daemon stopped");
            dm_job_save(d, j, SAVE_ALL);
            continue;
        }
        engine_fields(d, j);
        if (recover_placed(d, j, err) < 0)
            return -1;
        if (j->running)
            adopted++;
        else if (j->st == SPW_DJOB_QUEUED)
            requeued++;
    }
    for (size_t s = 1; s < d->njobs; s++) {
        djob_t *j = d->jobs[s];
        if (!j || j->st != SPW_DJOB_QUEUED || j->ej.state == SPW_JOB_QUEUED)
            continue;
        if (!j->stopping)
            stop_old(d, j);
        engine_fields(d, j);
        spw_engine_submit(d->engine, &j->ej, d->now);
        if (j->ej.state == SPW_JOB_UNSCHEDULABLE) {
            dm_set_reason(j, "%s (after a config change)", spw_reason_text(j->ej.reason));
            dm_job_end(d, j, SPW_DJOB_FAILED, d->now);
        } else {
            queued++;
        }
    }
    /* Acknowledged cancels the daemon had not finished: a process still
     * running is stopped again (SIGTERM, the grace, SIGKILL) and ends the
     * job cancelled; a job without one ends cancelled now. */
    size_t cancels = 0;
    for (size_t s = 1; s < d->njobs; s++) {
        djob_t *j = d->jobs[s];
        if (!j || !j->cancel_req || spw_djob_state_terminal(j->st))
            continue;
        cancels++;
        if (j->unsure)
            continue;   /* stopped once its backend answers (dm_recheck_unsure) */
        if (j->running) {
            spw_error_t e2;
            if (JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, d->now, &e2) < 0)
                dm_say(d, "job %s: cannot stop it: %s", j->id, e2.text);
            continue;
        }
        dm_set_reason(j, "cancelled by a user");
        dm_eng_cancel(d, j, d->now);
        dm_job_end(d, j, SPW_DJOB_CANCELLED, d->now);
    }
    if (d->njobs_mem || c.left)
        dm_say(d, "recovered %zu jobs from %s: %zu queued, %zu re-adopted, %zu requeued, %zu "
               "cancels finished; %zu ended more than daemon.job_retention_s ago stay in the "
               "database", d->njobs_mem, d->state_dir, queued, adopted, requeued, cancels,
               c.left);
    return 0;
}

/* After recovery: removes from STATE_DIR/run the fences and exit records
 * of attempts that are over (their job ended, or has another launch intent
 * now), which a crash kept from being removed after their end committed. */
void dm_sweep_run_dir(spw_daemon_t *d)
{
    DIR *dir = opendir(d->run_dir);
    struct dirent *de;
    size_t removed = 0;
    if (!dir)
        return;
    while ((de = readdir(dir))) {
        char tok[SPW_TOKEN_MAX], path[4096];
        const char *name = de->d_name, *suffix;
        if (name[0] == '.')
            continue;
        size_t n = strlen(name);
        if ((suffix = strstr(name, ".exit")) && (strcmp(suffix, ".exit") == 0 ||
                                                  strcmp(suffix, ".exit.tmp") == 0))
            n = (size_t)(suffix - name);
        if (n >= sizeof(tok))
            continue;
        memcpy(tok, name, n);
        tok[n] = '\0';
        const char *dot1 = strchr(tok, '.'), *dot2 = strrchr(tok, '.');
        if (!dot1 || dot2 == dot1 || strncmp(tok, d->daemon_id, (size_t)(dot1 - tok)) != 0)
            continue;   /* not a token of ours: leave it */
        char id[SPW_STORE_ID_LEN];
        size_t il = (size_t)(dot2 - dot1 - 1);
        if (il >= sizeof(id))
            continue;
        memcpy(id, dot1 + 1, il);
        id[il] = '\0';
        djob_t *j = spw_daemon_find(d, id);
        if (j && !spw_djob_state_terminal(j->st) && (strcmp(j->token, tok) == 0 || j->running))
            continue;   /* its current attempt, or a process still being stopped */
        snprintf(path, sizeof(path), "%s/%s", d->run_dir, name);
        if (unlink(path) == 0)
            removed++;
    }
    closedir(dir);
    if (removed)
        dm_say(d, "removed %zu fences and exit records of attempts that are over", removed);
}

/* The start-up sweep of accounts whose provider answers reconcile() with
 * no orphans (async ones: finding them means listing the cloud, which is
 * network): a thread of its own lists them once and releases the orphans,
 * as `spillway instances --release-orphans` does. */
static void *sweep_main(void *arg)
{
    spw_daemon_t *d = arg;
    spw_caller_t admin = {.admin = 1, .token_name = "orphan sweep at start"};
    json_t *out = NULL;
    spw_error_t err;
    if (spw_daemon_instances(d, &admin, 1, &out, &err) == 200) {
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(out, "released"), k, v)
            dm_say(d, "released instance %s: it carries this daemon's tag, but no record or "
                   "live job of the daemon's has it (an orphan)", json_string_value(v));
        json_array_foreach(json_object_get(out, "instances"), k, v)
            if (json_object_get(v, "release_error"))
                dm_say(d, "cannot release orphan instance %s: %s",
                       json_string_value(json_object_get(v, "id")),
                       json_string_value(json_object_get(v, "release_error")));
        json_array_foreach(json_object_get(out, "accounts"), k, v)
            if (json_object_get(v, "error"))
                dm_say(d, "cloud account %s: the orphan sweep could not list it: %s",
                       json_string_value(json_object_get(v, "name")),
                       json_string_value(json_object_get(v, "error")));
    }
    json_decref(out);
    return NULL;
}

void dm_orphan_sweep_start(spw_daemon_t *d)
{
    int want = 0;
    for (size_t ai = 0; ai < d->nacct; ai++)
        want |= d->acct[ai].ops->async && SPW_PROVIDER_HAS(d->acct[ai].ops, 4, list);
    if (want && pthread_create(&d->sweep_thread, NULL, sweep_main, d) == 0)
        d->sweep_started = 1;
}

void dm_orphan_sweep_join(spw_daemon_t *d)
{
    if (d->sweep_started)
        pthread_join(d->sweep_thread, NULL);
    d->sweep_started = 0;
}
