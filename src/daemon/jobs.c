/* jobs.c: jobs in memory and their money: a job's record and how it is
 * written to the store, what it has cost (on-prem amortised, cloud billed,
 * egress) and what the engine's ledger is told, and the transitions that
 * end, requeue or interrupt it (cancel included). */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/loop_private.h"

void dm_set_reason(djob_t *j, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    free(j->reason);
    j->reason = spw_xstrdup(buf);
}

djob_t *dm_job_alloc(int64_t seq)
{
    djob_t *j = spw_xcalloc(1, sizeof(djob_t));
    j->seq = seq;
    snprintf(j->id, sizeof(j->id), "j-%06" PRId64, seq);
    j->ej.id = j->id;
    j->ej.order = (uint32_t)seq;
    j->ej.deadline_s = NAN;
    spw_job_reset(&j->ej);
    j->placed_ts = j->start_ts = j->end_ts = j->charge_ts = NAN;
    j->pool = j->node = j->offer = -1;
    j->be_pool = -1;
    return j;
}

void dm_job_put(spw_daemon_t *d, djob_t *j)
{
    size_t seq = (size_t)j->seq;
    if (seq >= d->capjobs) {
        size_t cap = d->capjobs ? d->capjobs : 1024;
        while (cap <= seq)
            cap *= 2;
        d->jobs = spw_xrealloc(d->jobs, cap * sizeof(djob_t *));
        memset(d->jobs + d->capjobs, 0, (cap - d->capjobs) * sizeof(djob_t *));
        d->capjobs = cap;
    }
    d->jobs[seq] = j;
    d->njobs_mem++;
    if (spw_djob_state_terminal(j->st))
        dm_note_ended(d, j);
    if (seq >= d->njobs)
        d->njobs = seq + 1;
}

djob_t *dm_job_new(spw_daemon_t *d, int64_t seq)
{
    djob_t *j = dm_job_alloc(seq);
    dm_job_put(d, j);
    return j;
}

dteamq_t *dm_teamq(spw_daemon_t *d, const char *team)
{
    for (size_t i = 0; i < d->nteamq; i++)
        if (strcmp(d->teamq[i].team, team) == 0)
            return &d->teamq[i];
    d->teamq = spw_xrealloc(d->teamq, (d->nteamq + 1) * sizeof(*d->teamq));
    d->teamq[d->nteamq] = (dteamq_t){spw_xstrdup(team), 0, 0};
    return &d->teamq[d->nteamq++];
}

/* The count follows the state as it changes (a few teams, a few compares),
 * so a submit never walks the queue to check max_queued_per_team. */
void dm_job_state(spw_daemon_t *d, djob_t *j, spw_djob_state_t st)
{
    int queued = st == SPW_DJOB_QUEUED;
    if (j->in_teamq != queued) {
        dteamq_t *q = dm_teamq(d, j->team ? j->team : "");
        if (queued)
            q->n++;
        else if (q->n)
            q->n--;
        j->in_teamq = queued;
    }
    j->st = st;
}

void dm_job_free(djob_t *j)
{
    if (!j)
        return;
    free(j->team);
    free(j->name);
    free(j->reason);
    free(j->gpus_assigned);
    free(j->inst);
    free(j->ran_on);
    free(j->pend_gpus);
    for (char **e = j->pend_extra; e && *e; e++)
        free(*e);
    free(j->pend_extra);
    spw_jobspec_free(&j->spec);
    spw_job_clear(&j->ej);
    free(j);
}

/* Forgets job j's launch intent that was not forked yet. */
static void pend_clear(djob_t *j)
{
    j->pending = 0;
    free(j->pend_gpus);
    j->pend_gpus = NULL;
    j->pend_ngpus = 0;
    for (char **e = j->pend_extra; e && *e; e++)
        free(*e);
    free(j->pend_extra);
    j->pend_extra = NULL;
}

djob_t *spw_daemon_find(spw_daemon_t *d, const char *id)
{
    if (strncmp(id, "j-", 2) != 0 || !id[2])
        return NULL;
    char *end;
    errno = 0;
    long long seq = strtoll(id + 2, &end, 10);
    if (*end || errno || seq <= 0 || (size_t)seq >= d->njobs || !d->jobs[seq])
        return NULL;
    return strcmp(d->jobs[seq]->id, id) == 0 ? d->jobs[seq] : NULL;
}

/* Writes the fields in set (SPW_JU_*) of j to the store. */
void dm_job_save(spw_daemon_t *d, djob_t *j, unsigned set)
{
    if (!j->touched) {
        j->touched = 1;
        if (d->ntouched == d->captouched) {
            d->captouched = d->captouched ? 2 * d->captouched : 64;
            d->touched = spw_xrealloc(d->touched, d->captouched * sizeof(*d->touched));
        }
        d->touched[d->ntouched++] = j->seq;
    }
    char place[256];
    const char *pl = NULL;
    if (j->pool >= 0) {
        snprintf(place, sizeof(place), "onprem:%s/%d", d->fleet.pools[j->pool].name, j->node);
        pl = place;
    } else if (j->offer >= 0) {
        char on[200];
        snprintf(place, sizeof(place), "cloud:%s",
                 spw_daemon_offer_name(&d->fleet.offers[j->offer], on, sizeof(on)));
        pl = place;
    }
    spw_store_job_update_t u = {
        .set = set,
        .state = j->st,
        .placed_ts = j->placed_ts,
        .start_ts = j->start_ts,
        .end_ts = j->end_ts,
        .placement = pl,
        .gpus_assigned = j->gpus_assigned,
        /* -1: a live handle of a backend without pids (Slurm), found
         * again by its launch token.  0 while an asynchronous launch has
         * not taken yet (placed, its sbatch in flight; not the old attempt
         * of a job placed again): a restart finds it by its token, or
         * requeues it as never started. */
        .pid = j->running && !(j->st == SPW_DJOB_PLACED && !j->stopping)
                   ? (j->h.pid ? j->h.pid : -1)
                   : 0,
        .pid_start_ticks = j->running ? (int64_t)j->h.start_ticks : 0,
        .has_exit_code = j->has_exit,
        .exit_code = j->exit_code,
        .attempts = j->attempts,
        .reason = j->reason,
        .cost_usd = j->onprem_usd + j->cloud_usd + j->commit_usd,
        .cloud_usd = j->cloud_usd + j->commit_usd,
        .reserved_usd = spw_job_rare(&j->ej)->reserved_usd,
        .charge_ts = j->charge_ts,
        .egress_usd = spw_job_rare(&j->ej)->egress_usd,
        .egress_gb = spw_job_rare(&j->ej)->egress_gb,
        .held = spw_job_rare(&j->ej)->held,
        .ledger_usd = j->led_usd,
        .ledger_egress_usd = j->led_egress_usd,
        .onprem_egress_usd = spw_job_rare(&j->ej)->onprem_egress_usd,
        .done_s = spw_job_rare(&j->ej)->done_s,
        .lost_s = spw_job_rare(&j->ej)->lost_s,
        .lost_gpu_s = spw_job_rare(&j->ej)->lost_gpu_s,
        .spot_gpu_s = spw_job_rare(&j->ej)->spot_gpu_s,
        .ondemand_gpu_s = spw_job_rare(&j->ej)->ondemand_gpu_s,
        .restarts = spw_job_rare(&j->ej)->restarts,
        .preemptions = spw_job_rare(&j->ej)->preemptions,
        .failures = spw_job_rare(&j->ej)->failures,
        .last_offer = spw_job_rare(&j->ej)->last_offer,
        .spot = j->last_spot,
        .launch_token = j->token[0] ? j->token : NULL,
        .cancel_req = j->cancel_req,
        .onprem_gpu_h = j->onprem_gpu_h,
        .cloud_gpu_h = j->cloud_gpu_h,
        .ran_on = j->ran_on,
        .commit_usd = j->commit_usd,
    };
    spw_error_t err;
    if (spw_store_job_update(d->store, j->id, &u, &err) < 0) {
        dm_say_repeat(d, &d->rep_save, 1, d->now, "recording jobs", "cannot record job %s: %s",
                      j->id, err.text);
        d->write_failed = 1;
    } else if (set & SPW_JU_MONEY) {
        j->held_saved = spw_job_rare(&j->ej)->held;
    }
}

/* What instance x billed from `from` to `to` (clipped to its life): a
 * commitment's instance at the committed rate of its GPUs (paid used or
 * idle), any other at its market price. */
static double inst_span_usd(const spw_daemon_t *d, const dinst_t *x, double from, double to)
{
    const spw_offer_t *o = &d->fleet.offers[x->in.offer];
    double usd_h = spw_offer_committed(o) ? o->gpus * o->commit_usd_per_gpu_h
                                          : x->in.price_usd_per_h;
    double end = spw_instance_state_live(x->in.state) ? to : fmin(to, x->in.ended_s);
    double start = fmax(from, x->in.launched_s);
    return end > start ? usd_h * (end - start) / 3600.0 : 0.0;
}

/* What job j's current attempt billed up to now on commitments
 * (committed != 0) or on the market (committed == 0). */
static double attempt_part_usd(const spw_daemon_t *d, const djob_t *j, double now, int committed)
{
    double usd = 0;
    for (size_t k = 0; k < j->ninst; k++) {
        const dinst_t *x = &d->inst[j->inst[k]];
        if (!spw_offer_committed(&d->fleet.offers[x->in.offer]) == !committed)
            usd += inst_span_usd(d, x, x->bound_ts, now);
    }
    return usd;
}

int32_t dm_job_commitment(const spw_daemon_t *d, const djob_t *j)
{
    return j->offer >= 0 && (size_t)j->offer < d->fleet.noffers &&
                   spw_offer_committed(&d->fleet.offers[j->offer])
               ? j->offer
               : -1;
}

double spw_daemon_job_budget_egress(const djob_t *j)
{
    double onprem = spw_job_rare(&j->ej)->onprem_egress_usd;
    return j->led_egress_usd - fmin(fmax(onprem, 0), j->led_egress_usd);
}

double spw_daemon_job_onprem_usd(const spw_daemon_t *d, const djob_t *j, double now)
{
    double usd = j->onprem_usd;
    if (j->holds && !isnan(j->start_ts) && now > j->start_ts)
        usd += j->held_gpus * d->fleet.pools[j->pool].cost_usd_per_gpu_h *
               (now - j->start_ts) / 3600.0;
    return usd;
}

double spw_daemon_attempt_usd(const spw_daemon_t *d, const djob_t *j, double now)
{
    return attempt_part_usd(d, j, now, 0);
}

double spw_daemon_job_cloud_usd(const spw_daemon_t *d, const djob_t *j, double now)
{
    return j->cloud_usd + spw_daemon_attempt_usd(d, j, now);
}

double spw_daemon_job_commit_usd(const spw_daemon_t *d, const djob_t *j, double now)
{
    return j->commit_usd + attempt_part_usd(d, j, now, 1);
}

double spw_daemon_att_egress(const djob_t *j)
{
    return j->ej.state == SPW_JOB_CLOUD && spw_job_rare(&j->ej)->egress_usd > j->led_egress_usd
               ? spw_job_rare(&j->ej)->egress_usd - j->led_egress_usd
               : 0;
}

/* Resolves the governance names of j's spec and its team into the engine
 * record.  A name the config does not know counts as none (an unknown team
 * has no budget); submit has refused unknown datasets and residencies. */
void dm_job_gov(spw_daemon_t *d, djob_t *j)
{
    const spw_gov_t *g = &d->fleet.gov;
    const spw_jobspec_t *s = &j->spec;
    j->ej.team = (uint32_t)(spw_gov_team(g, j->team) + 1);
    j->ej.jclass = s->jclass ? (uint32_t)(spw_gov_class(g, s->jclass) + 1) : 0;
    j->ej.labels = 0;
    for (size_t i = 0; i < s->nlabels; i++) {
        size_t len = strlen(s->labels[i].key) + strlen(s->labels[i].value) + 2;
        char *kv = spw_xmalloc(len);
        snprintf(kv, len, "%s=%s", s->labels[i].key, s->labels[i].value);
        int b = spw_gov_label(g, kv);
        free(kv);
        if (b >= 0 && b < 64)
            j->ej.labels |= 1ull << b;
    }
    j->ej.data = s->data ? (uint32_t)(spw_gov_dataset(g, s->data) + 1) : 0;
    j->ej.residency = s->residency ? (uint32_t)(spw_gov_residency(g, s->residency) + 1) : 0;
    j->ej.max_runtime_s = isnan(s->max_runtime_s) ? 0 : s->max_runtime_s;
    /* spot and checkpoints (docs/spot.md) */
    j->ej.spot_mode = s->spot_mode;
    j->ej.spot_policy = s->spot_policy;
    j->ej.checkpoint_interval_s = isnan(s->checkpoint_interval_s)
                                      ? d->cfg->spot.checkpoint_interval_s
                                      : s->checkpoint_interval_s;
}

/* Before the engine lets go of a placed job (finish, cancel, requeue): for
 * a cloud attempt, tells it what the instances really billed, so the ledger
 * settles to the bill and not to the engine's estimate, and keeps the share
 * the ledger settles (clamped to the reservation as the engine does). */
static void bill_attempt(spw_daemon_t *d, djob_t *j, double now)
{
    if (j->ej.state != SPW_JOB_CLOUD)
        return;
    double bill = spw_daemon_attempt_usd(d, j, now);
    double compute = spw_job_rare(&j->ej)->reserved_usd - spw_daemon_att_egress(j);
    spw_job_rare_w(&j->ej)->bill_usd = bill;
    spw_job_rare_w(&j->ej)->billed = 1;
    j->led_usd += d->money_limits ? fmin(bill, fmax(compute, 0)) : bill;
}

/* After the engine let go: all of the job's egress is settled now. */
static void billed(djob_t *j)
{
    if (j->ej.rare) {
        j->ej.rare->billed = 0;
        j->ej.rare->bill_usd = 0;
    }
    j->led_egress_usd = spw_job_rare(&j->ej)->egress_usd;
}

void dm_eng_finish(spw_daemon_t *d, djob_t *j, double now)
{
    bill_attempt(d, j, now);
    spw_engine_finish(d->engine, &j->ej, now);
    billed(j);
}

void dm_eng_cancel(spw_daemon_t *d, djob_t *j, double now)
{
    bill_attempt(d, j, now);
    spw_engine_cancel(d->engine, &j->ej, now);
    billed(j);
}

/* spw_job_reset, keeping what the daemon reports of earlier attempts:
 * egress, holds, and the progress and interruptions of its attempts. */
void dm_ej_reset(djob_t *j)
{
    spw_job_rare_t *keep = j->ej.rare;
    j->ej.rare = NULL;
    spw_job_reset(&j->ej);
    if (keep) {
        /* All but the current attempt's transfer and reservation. */
        keep->transfer_s = spw_job_rare_none.transfer_s;
        keep->reserved_usd = spw_job_rare_none.reserved_usd;
        keep->charge_s = spw_job_rare_none.charge_s;
        j->ej.rare = keep;
    }
}

/* How long j's process may run before the backend stops it: its
 * max_runtime, or in the cloud under a budget or cap the default the
 * engine reserved its worst case for; 0 = no limit. */
double dm_run_limit(const spw_daemon_t *d, const djob_t *j)
{
    double mr = spw_engine_max_runtime(d->engine, &j->ej);
    return isfinite(mr) && mr > 0 ? mr : 0;
}

/* Frees the on-prem GPUs job j holds and settles their cost up to now. */
static void settle_onprem(spw_daemon_t *d, djob_t *j, double now)
{
    if (!j->holds)
        return;
    if (!isnan(j->start_ts) && now > j->start_ts) {
        double h = (now - j->start_ts) / 3600.0;
        j->onprem_gpu_h += h * j->held_gpus;
        j->onprem_usd += h * j->held_gpus * d->fleet.pools[j->pool].cost_usd_per_gpu_h;
    }
    d->node_used[j->pool][j->node] &= ~j->gpu_bits;
    d->pool_busy[j->pool] -= j->held_gpus;
    j->held_gpus = 0;
    j->gpu_bits = 0;
    j->holds = 0;
}

/* Unbinds every instance of job j at now, settling what each billed while
 * bound; they become idle (released later by the idle timeout). */
void dm_unbind_instances(spw_daemon_t *d, djob_t *j, double now)
{
    if (j->ninst) {
        size_t cap = j->ninst * SPW_INSTANCE_ID_MAX + 1, used = 0;
        free(j->ran_on);
        j->ran_on = spw_xmalloc(cap);
        j->ran_on[0] = '\0';
        for (size_t k = 0; k < j->ninst; k++)
            used += (size_t)snprintf(j->ran_on + used, cap - used, "%s%s", k ? "," : "",
                                     d->inst[j->inst[k]].in.id);
    }
    for (size_t k = 0; k < j->ninst; k++) {
        dinst_t *x = &d->inst[j->inst[k]];
        double usd = inst_span_usd(d, x, x->bound_ts, now);
        x->bound_usd += usd;
        if (spw_offer_committed(&d->fleet.offers[x->in.offer]))
            j->commit_usd += usd;
        else
            j->cloud_usd += usd;
        double end = spw_instance_state_live(x->in.state) ? now : fmin(now, x->in.ended_s);
        if (!isnan(j->start_ts) && end > j->start_ts)
            j->cloud_gpu_h += d->fleet.offers[x->in.offer].gpus * (end - j->start_ts) / 3600.0;
        x->job_seq = 0;
        x->idle_ts = now;
        dm_inst_save(d, x);
    }
    j->ninst = 0;
}

void dm_unwait(spw_daemon_t *d, djob_t *j)
{
    for (djob_t **p = &d->waiting; *p; p = &(*p)->next_wait)
        if (*p == j) {
            *p = j->next_wait;
            j->next_wait = NULL;
            return;
        }
}

/* Releases what the job holds (GPUs, instances, its place in the wait list). */
static void settle(spw_daemon_t *d, djob_t *j, double now)
{
    pend_clear(j);   /* a launch not yet forked never will be */
    settle_onprem(d, j, now);
    dm_unbind_instances(d, j, now);
    dm_unwait(d, j);
}

/* Ends job j in state st: releases what it holds and forgets its spec. */
void dm_job_end(spw_daemon_t *d, djob_t *j, spw_djob_state_t st, double now)
{
    settle(d, j, now);
    dm_job_state(d, j, st);
    j->end_ts = now;
    dm_note_ended(d, j);
    j->running = 0;
    j->stopping = 0;
    j->cancel_req = 0;
    spw_jobspec_free(&j->spec);
    dm_job_save(d, j, SAVE_ALL);
}

/* Puts a placed job back in the queue (retry or preemption). */
void dm_job_requeue(spw_daemon_t *d, djob_t *j, double now)
{
    /* The engine first, while the instances are still bound: their bill
     * settles the attempt. */
    if (j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD) {
        bill_attempt(d, j, now);
        spw_engine_requeue(d->engine, &j->ej, now);
        billed(j);
    }
    settle(d, j, now);
    dm_job_state(d, j, SPW_DJOB_QUEUED);
    if (!j->stopping)
        j->running = 0;   /* a process being stopped is still waited for */
    j->stop_cost = 0;
    j->placed_ts = j->start_ts = NAN;
    j->pool = j->node = j->offer = -1;
    free(j->gpus_assigned);
    j->gpus_assigned = NULL;
    free(j->ran_on);
    j->ran_on = NULL;
    j->token[0] = '\0';   /* its next placement records a new intent */
    dm_job_save(d, j, SAVE_ALL);
}

/* Job j lost the capacity it was placed on at now: its cloud instance was
 * preempted (or released under it), or its on-prem node failed (why).  The
 * engine settles the attempt (what it kept up to its last checkpoint, what
 * it lost) and decides where the job goes next; a process still running is
 * stopped, and its exit only lets the job's next placement start.  Past
 * the policy's max_restarts the job fails.  `what` says what happened, for
 * its reason. */
void dm_job_interrupt(spw_daemon_t *d, djob_t *j, spw_interrupt_t why, const char *what,
                          double now)
{
    if (j->running && !j->stopping) {
        spw_error_t err;
        if (JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, now, &err) < 0)
            dm_say(d, "job %s: cannot stop it: %s", j->id, err.text);
        j->stopping = 1;
    }
    if (j->ej.state != SPW_JOB_ONPREM && j->ej.state != SPW_JOB_CLOUD) {
        dm_set_reason(j, "%s; requeued", what);
        dm_job_requeue(d, j, now);
        return;
    }
    bill_attempt(d, j, now);
    int rc = spw_engine_interrupt(d->engine, &j->ej, why, now);
    billed(j);
    settle(d, j, now);
    j->stop_cost = 0;
    j->placed_ts = j->start_ts = NAN;
    j->pool = j->node = j->offer = -1;
    free(j->gpus_assigned);
    j->gpus_assigned = NULL;
    if (rc == 1) {
        uint32_t mr = d->cfg->policy.max_restarts;
        uint32_t n = spw_job_rare(&j->ej)->preemptions + spw_job_rare(&j->ej)->failures;
        if (spw_job_rare(&j->ej)->failures == 0)
            dm_set_reason(j, "%s; failed: preempted %u time%s; max_restarts %u", what, n,
                          n == 1 ? "" : "s", mr);
        else
            dm_set_reason(j, "%s; failed: interrupted %u time%s (%u preemptions, %u node "
                          "failures); max_restarts %u", what, n, n == 1 ? "" : "s",
                          spw_job_rare(&j->ej)->preemptions, spw_job_rare(&j->ej)->failures, mr);
        dm_say(d, "job %s %s", j->id, j->reason);
        /* Its process, if any, is still being stopped: the backend reaps
         * it, and its exit finds the job ended. */
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
        return;
    }
    dm_job_state(d, j, SPW_DJOB_QUEUED);
    /* While its process is being stopped the token stays (stored): a
     * restart finds that attempt by it and stops it again (stop_old).  Its
     * next placement records a new one. */
    if (!j->running)
        j->token[0] = '\0';
    dm_set_reason(j, "%s; requeued (restart %u, %.0f s of work kept)", what,
                  spw_job_rare(&j->ej)->restarts,
                  spw_job_rare(&j->ej)->done_s);
    if (why == SPW_INTERRUPT_PREEMPTED)
        dm_say(d, "job %s requeued after its instance was preempted", j->id);
    else if (why == SPW_INTERRUPT_NODE_FAILED)
        dm_say(d, "job %s requeued after its node failed", j->id);
    else
        dm_say(d, "job %s stopped on demand to move to spot", j->id);
    dm_job_save(d, j, SAVE_ALL);
}

int spw_daemon_do_cancel(spw_daemon_t *d, djob_t *j, spw_error_t *err)
{
    double now = fmax(spw_daemon_clock(), d->now);
    if (spw_djob_state_terminal(j->st))
        return spw_errorf(err, "job %s has already ended (%s)", j->id, spw_djob_state_name(j->st)), 409;
    if (!j->cancel_req) {
        /* On disk before anything is done or answered (outside a turn this
         * write commits by itself): a restart finishes the cancel. */
        spw_store_job_update_t u = {.set = SPW_JU_CANCEL, .cancel_req = 1};
        if (spw_store_job_update(d->store, j->id, &u, err) < 0) {
            dm_note_commit(d, 0, err->text);
            return 503;
        }
    }
    if (j->unsure) {
        /* Whether its launch runs is not known yet (recovery): the cancel
         * is applied once its backend answers (dm_recheck_unsure). */
        j->cancel_req = 1;
        dm_set_reason(j, "cancel requested; applied once its backend answers again");
        dm_job_save(d, j, SPW_JU_REASON | SPW_JU_CANCEL);
    } else if (j->running) {
        if (!j->cancel_req && JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, now, err) < 0) {
            /* Recorded: its exit ends it cancelled, and a restart stops it. */
            dm_say(d, "job %s: cannot signal it yet: %s", j->id, err->text);
        }
        j->cancel_req = 1;
        dm_set_reason(j, "cancel requested; stopping its processes");
        dm_job_save(d, j, SPW_JU_REASON | SPW_JU_CANCEL);
    } else {
        j->cancel_req = 1;
        dm_set_reason(j, "cancelled by a user");
        dm_eng_cancel(d, j, now);
        dm_job_end(d, j, SPW_DJOB_CANCELLED, now);
    }
    pthread_cond_signal(&d->wake);
    return 200;
}

double spw_daemon_est_end(const spw_daemon_t *d, const djob_t *j)
{
    if (spw_djob_state_terminal(j->st))
        return j->end_ts;
    double left = j->ej.est_runtime_s - spw_job_rare(&j->ej)->done_s;
    if (!(left > 0))
        left = 0;
    double start = j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD ? j->ej.start_s
                                                                                 : d->now;
    if (!isfinite(start))
        start = d->now;
    /* Every attempt first pays the restart overhead without progress. */
    return start + d->cfg->policy.restart_overhead_s + left;
}
