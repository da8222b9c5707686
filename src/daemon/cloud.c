/* cloud.c: cloud instances: acquiring them for a placement through the
 * provider (with backoff after capacity errors), binding them to jobs,
 * their events (ready, preempted, lost), idle release, the worst-case
 * stop, spot capacity told to the engine, and the admin's preempt. */

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spot.h"
#include "daemon/loop_private.h"

/* Backoff after a capacity error (EAGAIN) on an offer: the first, and the
 * longest it doubles to while errors come in a row, seconds. */
#define SPW_DAEMON_BACKOFF_S 5.0
#define SPW_DAEMON_BACKOFF_MAX_S 300.0
/* Seconds an instance under an interruption notice is left for the cloud
 * to end (EC2 ends it 120 s after the notice) before the daemon releases
 * it itself. */
#define SPW_DAEMON_NOTICE_HOLD_S 150.0

void dm_inst_save(spw_daemon_t *d, const dinst_t *x)
{
    char on[200];
    spw_store_instance_t si = {
        .id = x->in.id,
        .provider = x->in.provider,
        .offer = spw_daemon_offer_name(&d->fleet.offers[x->in.offer], on, sizeof(on)),
        .state = x->in.state == SPW_INSTANCE_BOOTING ? SPW_INST_BOOTING
                 : x->in.state == SPW_INSTANCE_READY ? SPW_INST_READY
                                                     : SPW_INST_RELEASED,
        .launched_ts = x->in.launched_s,
        .ready_ts = x->in.state == SPW_INSTANCE_BOOTING ? NAN : x->in.ready_s,
        .released_ts = x->in.ended_s,
        .price_usd_per_h = x->in.price_usd_per_h,
        .job_id = x->job_seq ? d->jobs[x->job_seq]->id : NULL,
        .addr = x->in.addr,
        .account = x->in.account,
        .cloud_id = x->in.cloud_id,
    };
    spw_error_t err;
    if (spw_store_instance_update(d->store, &si, &err) < 0)
        dm_say(d, "cannot record instance %s: %s", x->in.id, err.text);
}

size_t dm_inst_add(spw_daemon_t *d, const spw_instance_t *in)
{
    if (d->ninst == d->capinst) {
        d->capinst = d->capinst ? d->capinst * 2 : 64;
        d->inst = spw_xrealloc(d->inst, d->capinst * sizeof(dinst_t));
    }
    dinst_t *x = &d->inst[d->ninst];
    memset(x, 0, sizeof(*x));
    x->in = *in;
    x->idle_ts = NAN;
    x->acct = dm_acct_index(d, in->account);
    return d->ninst++;
}

void dm_inst_insert(spw_daemon_t *d, const dinst_t *x)
{
    char on[200];
    spw_store_instance_t si = {
        .id = x->in.id,
        .provider = x->in.provider,
        .offer = spw_daemon_offer_name(&d->fleet.offers[x->in.offer], on, sizeof(on)),
        .state = SPW_INST_BOOTING,
        .launched_ts = x->in.launched_s,
        .ready_ts = NAN,
        .released_ts = NAN,
        .price_usd_per_h = x->in.price_usd_per_h,
        .job_id = x->job_seq ? d->jobs[x->job_seq]->id : NULL,
        .account = x->in.account,
        .cloud_id = x->in.cloud_id,
    };
    spw_error_t err;
    if (spw_store_instance_insert(d->store, &si, &err) < 0)
        dm_say(d, "cannot record instance %s: %s", x->in.id, err.text);
}

static void bind_inst(spw_daemon_t *d, djob_t *j, size_t xi, double now)
{
    dinst_t *x = &d->inst[xi];
    x->job_seq = j->seq;
    x->bound_ts = now;
    x->idle_ts = NAN;
    j->inst = spw_xrealloc(j->inst, (j->ninst + 1) * sizeof(size_t));
    j->inst[j->ninst++] = xi;
}

/* Leaves an offer (of one kind, spot or on-demand) alone in the engine for
 * a while after the provider refused it or one of its instances failed to
 * boot: SPW_DAEMON_BACKOFF_S, twice as long each time in a row, at most
 * SPW_DAEMON_BACKOFF_MAX_S; an instance of it becoming ready starts over.
 * Returns the wait in seconds. */
static double offer_backoff(spw_daemon_t *d, size_t offer, int spot, double now)
{
    double *b = &d->backoff_s[2 * offer + (spot != 0)];
    *b = *b > 0 ? fmin(2 * *b, SPW_DAEMON_BACKOFF_MAX_S) : SPW_DAEMON_BACKOFF_S;
    spw_engine_offer_unavailable(d->engine, offer, spot, now + *b);
    return *b;
}

/* An acquisition the daemon did not make or the provider refused (errno
 * e, why): a refusal asking again cannot change (E2BIG: more than the
 * offer can ever hold; EINVAL: a malformed request) ends the job instead
 * of placing it and being refused every turn; anything else (capacity,
 * EAGAIN, or an error that may pass) requeues it, the engine leaving the
 * offer (of this kind) alone for a while. */
static void acquire_refused(spw_daemon_t *d, djob_t *j, uint32_t n, int e, const char *why,
                            int quiet, double now)
{
    if (e == E2BIG || e == EINVAL) {
        dm_say(d, "job %s: failed: the provider refuses %u instance(s) for good: %s", j->id, n,
               why);
        dm_set_reason(j, "the cloud provider refuses it and would again: %s", why);
        dm_eng_cancel(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
        return;
    }
    if (quiet)
        dm_say_repeat(d, &d->rep_nobuy, 1, now, "buying instances", "job %s: cannot acquire "
                      "%u instance(s): %s", j->id, n, why);
    else
        dm_say(d, "job %s: cannot acquire %u instance(s): %s", j->id, n, why);
    double wait_s = offer_backoff(d, (size_t)j->offer, j->ej.spot, now);
    dm_set_reason(j, "%s: %s; requeued (the offer's %s capacity is not tried again for "
                  "%.0f s)", e == EAGAIN ? "cloud capacity" : "cloud provider", why,
                  j->ej.spot ? "spot" : "on-demand", wait_s);
    dm_job_requeue(d, j, now);
}

static void acq_write(spw_daemon_t *d, const djob_t *j)
{
    char on[200];
    const dacct_t *a = dm_acct_of_offer(d, (size_t)j->offer);
    spw_store_acq_t r = {.token = j->acq_token, .job_id = j->id,
                         .account = a ? a->name : "",
                         .offer = spw_daemon_offer_name(&d->fleet.offers[j->offer], on, sizeof(on)),
                         .count = j->acq_count, .spot = j->ej.spot, .ts = j->placed_ts};
    spw_error_t err;
    if (spw_store_acq_put(d->store, &r, &err) < 0) {
        dm_say(d, "cannot record the acquisition of job %s: %s", j->id, err.text);
        d->write_failed = 1;
    }
}

static void acq_forget(spw_daemon_t *d, const char *token)
{
    spw_error_t err;
    if (token[0] && spw_store_acq_delete(d->store, token, &err) < 0)
        dm_say(d, "cannot remove acquisition %s: %s", token, err.text);
}

/* Records job j's acquisition of n instances (the intent: its token, in
 * the turn's transaction).  Nothing is bought here: dm_acquire_pending()
 * asks the provider once the turn has committed, so a purchase is always
 * on disk before it is made, and a turn whose commit fails buys nothing. */
static void acq_intent(spw_daemon_t *d, djob_t *j, uint32_t n, double now)
{
    if (j->acq_token[0])
        acq_forget(d, j->acq_token);   /* an earlier placement's, never asked */
    snprintf(j->acq_token, sizeof(j->acq_token), "%s.%s.%lld", d->daemon_id, j->id,
             (long long)llround(now * 1000));
    j->acq_count = n;
    j->acq_pending = 1;
    acq_write(d, j);
    if (d->nacq == d->capacq) {
        d->capacq = d->capacq ? 2 * d->capacq : 16;
        d->acq = spw_xrealloc(d->acq, d->capacq * sizeof(*d->acq));
    }
    d->acq[d->nacq++] = j->seq;
}

void dm_acq_rewrite(spw_daemon_t *d)
{
    for (size_t i = 0; i < d->nacq; i++) {
        djob_t *j = d->jobs[d->acq[i]];
        if (j && j->acq_pending)
            acq_write(d, j);
    }
}

/* Adds the instances the provider answered for job j (got[0..n), from
 * account a) to the daemon's records, bound to j. */
static void adopt_acquired(spw_daemon_t *d, djob_t *j, dacct_t *a, spw_instance_t *got,
                           uint32_t n, double now)
{
    for (uint32_t k = 0; k < n; k++) {
        snprintf(got[k].account, sizeof(got[k].account), "%s", a->name);
        size_t xi = dm_inst_add(d, &got[k]);
        if (spw_instance_state_live(got[k].state)) {
            a->live++;
            a->live_usd_per_h += got[k].price_usd_per_h;
        }
        bind_inst(d, j, xi, now);
        dm_inst_insert(d, &d->inst[xi]);
        if (got[k].state != SPW_INSTANCE_BOOTING)
            dm_inst_save(d, &d->inst[xi]);
    }
}

/* Asks the provider for job j's committed acquisition (j->acq_token). */
static void do_acquire(spw_daemon_t *d, djob_t *j, double now)
{
    uint32_t n = j->acq_count;
    dacct_t *a = dm_acct_of_offer(d, (size_t)j->offer);
    spw_instance_t *got = spw_xcalloc(n, sizeof(spw_instance_t));
    spw_acquire_t req = {.offer = (size_t)j->offer, .count = n, .spot = j->ej.spot,
                         .job_id = j->id, .now_s = now, .token = j->acq_token};
    spw_error_t err;
    j->acq_pending = 0;
    /* Buying works again: the refusals said with a count end here. */
    dm_say_repeat(d, &d->rep_nobuy, 0, now, "buying instances", "%s", "");
    int rc = a ? a->ops->acquire(a->pv, &req, got, &err)
               : (errno = EAGAIN, spw_errorf(&err, "no cloud account serves %s offers",
                                             d->fleet.offers[j->offer].provider));
    int e = errno;
    acq_forget(d, j->acq_token);
    if (rc < 0) {
        free(got);
        acquire_refused(d, j, n, e, err.text, 0, now);
        return;
    }
    adopt_acquired(d, j, a, got, n, now);
    free(got);
    if (d->scloud_be && spw_daemon_scloud_bind(d, j) < 0)
        dm_say(d, "job %s: some of its instances are no Slurm cloud node (none free)", j->id);
    if (dm_cloud_ready(d, j) && !j->running)
        dm_launch_cloud(d, j, now);
}

static void acquire_step(spw_daemon_t *d, djob_t *j, double now)
{
    if (!j->acq_pending)
        return;
    if (j->st != SPW_DJOB_PLACED || j->offer < 0) {
        /* requeued, cancelled or ended since: never asked */
        j->acq_pending = 0;
        acq_forget(d, j->acq_token);
        return;
    }
    do_acquire(d, j, now);
}

void dm_acquire_pending(spw_daemon_t *d, double now)
{
    dm_after_commit(d, d->acq, &d->nacq, acquire_step, "the instances just acquired", now);
}

/* A cloud placement: reuses idle instances of the offer (of the same kind,
 * spot or on-demand: the engine reserved at that price); the rest is an
 * acquisition intent, asked once the turn has committed. */
void dm_place_cloud(spw_daemon_t *d, djob_t *j, double now)
{
    uint32_t want = j->ej.instances;
    j->offer = j->ej.offer;
    j->pool = j->node = -1;
    j->last_spot = j->ej.spot;
    j->placed_ts = now;
    j->charge_ts = isnan(spw_job_rare(&j->ej)->charge_s) ? now : spw_job_rare(&j->ej)->charge_s;
    dm_job_state(d, j, SPW_DJOB_PLACED);
    for (size_t i = 0; i < d->ninst && j->ninst < want; i++) {
        dinst_t *x = &d->inst[i];
        if (!x->job_seq && spw_instance_state_live(x->in.state) && (int32_t)x->in.offer == j->offer &&
            !x->in.spot == !j->ej.spot && !(x->noticed_ts > 0)) {
            bind_inst(d, j, i, now);
            dm_inst_save(d, x);
        }
    }
    if (j->ninst < want) {
        uint32_t n = want - (uint32_t)j->ninst;
        dacct_t *a = dm_acct_of_offer(d, (size_t)j->offer);
        char why[256];
        /* Nothing is bought while the daemon cannot record what it buys:
         * the last commit failed, or its disk is nearly full (said with a
         * count, not once a turn). */
        pthread_mutex_lock(&d->hmu);
        int failing = d->commit_failing;
        pthread_mutex_unlock(&d->hmu);
        char low[200];
        if (failing || dm_disk_low(d, low, sizeof(low))) {
            snprintf(why, sizeof(why), "no instance is bought while the daemon cannot record "
                     "it (%.180s)", failing ? "its last commit failed" : low);
            acquire_refused(d, j, n, EAGAIN, why, 1, now);
            return;
        }
        /* Instances that are Slurm cloud nodes: no more than the partition
         * has nodes left (as a provider out of capacity). */
        if (d->scloud_be && spw_daemon_scloud_free(d) < n) {
            snprintf(why, sizeof(why), "Slurm cloud partition %s has %zu free node(s) for %u "
                     "instance(s)", d->cfg->cloud_slurm_partition, spw_daemon_scloud_free(d), n);
            acquire_refused(d, j, n, EAGAIN, why, 0, now);
            return;
        }
        if (!a || dm_acct_limit(d, a, (size_t)j->offer, j->ej.spot, n, why, sizeof(why))) {
            if (!a)
                snprintf(why, sizeof(why), "no cloud account serves %s offers",
                         d->fleet.offers[j->offer].provider);
            acquire_refused(d, j, n, EAGAIN, why, 0, now);
            return;
        }
        acq_intent(d, j, n, now);
        /* Counted at once, so that the account's limits hold for the
         * other placements of this turn. */
        a->live += n;
        a->live_usd_per_h += n * (j->ej.spot ? d->fleet.offers[j->offer].spot_usd_per_h
                                             : d->fleet.offers[j->offer].ondemand_usd_per_h);
    } else if (d->scloud_be && spw_daemon_scloud_bind(d, j) < 0) {
        dm_say(d, "job %s: some of its instances are no Slurm cloud node (none free)", j->id);
    }
    dm_set_reason(j, "%s", spw_reason_text(j->ej.reason));
    char on[200];
    dm_say(d, "job %s placed on %u x %s%s", j->id, want,
           spw_daemon_offer_name(&d->fleet.offers[j->offer], on, sizeof(on)),
           dm_offer_emulated(d, (size_t)j->offer) ? " (emulated)" : "");
    /* It starts once its instances are ready and the process of an
     * interrupted attempt, if one is still being stopped, has exited. */
    if (dm_cloud_ready(d, j) && !j->running) {
        dm_launch_cloud(d, j, now);
        return;
    }
    if (!dm_cloud_ready(d, j)) {
        j->next_wait = d->waiting;
        d->waiting = j;
    }
    dm_job_save(d, j, SAVE_ALL);
}

static dinst_t *inst_find(spw_daemon_t *d, const char *id)
{
    for (size_t i = d->ninst; i-- > 0;)
        if (strcmp(d->inst[i].in.id, id) == 0)
            return &d->inst[i];
    return NULL;
}

/* One recorded acquisition intent, copied out of the store's callback. */
typedef struct acq_rec {
    char token[SPW_ACQUIRE_TOKEN_MAX];
    char job_id[SPW_INSTANCE_JOB_MAX];
    char account[SPW_INSTANCE_ACCOUNT_MAX];
    char offer[200];
    uint32_t count;
    int spot;
} acq_rec_t;

typedef struct acq_list {
    acq_rec_t *v;
    size_t n;
} acq_list_t;

static int acq_collect(const spw_store_acq_t *a, void *arg)
{
    acq_list_t *l = arg;
    l->v = spw_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
    acq_rec_t *r = &l->v[l->n++];
    snprintf(r->token, sizeof(r->token), "%s", a->token ? a->token : "");
    snprintf(r->job_id, sizeof(r->job_id), "%s", a->job_id ? a->job_id : "");
    snprintf(r->account, sizeof(r->account), "%s", a->account ? a->account : "");
    snprintf(r->offer, sizeof(r->offer), "%s", a->offer ? a->offer : "");
    r->count = a->count;
    r->spot = a->spot;
    return 0;
}

int dm_recover_acquisitions(spw_daemon_t *d, spw_error_t *err)
{
    acq_list_t l = {0};
    if (spw_store_acq_list(d->store, acq_collect, &l, err) < 0)
        return -1;
    for (size_t i = 0; i < l.n; i++) {
        acq_rec_t *r = &l.v[i];
        djob_t *j = spw_daemon_find(d, r->job_id);
        int offer = dm_offer_by_name(d, r->offer);
        int32_t ai = dm_acct_index(d, r->account);
        acq_forget(d, r->token);
        if (!j || j->st != SPW_DJOB_PLACED || offer < 0 || ai < 0 || j->offer != offer ||
            r->count == 0)
            continue;   /* not waiting for it: whatever it bought is an orphan */
        dacct_t *a = &d->acct[ai];
        spw_instance_t *got = spw_xcalloc(r->count, sizeof(spw_instance_t));
        spw_acquire_t req = {.offer = (size_t)offer, .count = r->count, .spot = r->spot,
                             .job_id = j->id, .now_s = d->now, .token = r->token};
        spw_error_t e2;
        if (a->ops->acquire(a->pv, &req, got, &e2) < 0) {
            dm_say(d, "job %s: its acquisition %s, asked again after a restart, failed: %s",
                   j->id, r->token, e2.text);
            free(got);
            continue;   /* placed without instances: requeued by recovery */
        }
        /* Only those the records lack (a crash between the answer and its
         * record); the rest are bound already. */
        uint32_t m = 0;
        for (uint32_t k = 0; k < r->count; k++)
            if (!inst_find(d, got[k].id))
                got[m++] = got[k];
        adopt_acquired(d, j, a, got, m, d->now);
        dm_say(d, "job %s: acquisition %s asked again after a restart: %u instance(s), %u new "
               "to the records", j->id, r->token, r->count, m);
        free(got);
    }
    free(l.v);
    return 0;
}

/* The cloud refused instance x (FAILED, from an asynchronous provider):
 * it never billed; what the refusal blocks is blocked (accounts.c), and
 * its job fails (JOB) or goes back to the engine, which re-picks the next
 * allowed offer at once. */
static void inst_failed(spw_daemon_t *d, dinst_t *x, djob_t *j, const spw_inst_event_t *ev,
                        double now)
{
    x->in.state = SPW_INSTANCE_RELEASED;
    x->in.ended_s = x->in.launched_s;   /* asked for, never made: no bill */
    dm_inst_save(d, x);
    const char *reason = ev->reason[0] ? ev->reason : "the cloud refused it";
    dm_say(d, "instance %s refused (%s): %s", x->in.id, spw_block_name(ev->block), reason);
    if (ev->block == SPW_BLOCK_NONE)
        offer_backoff(d, x->in.offer, x->in.spot, now);
    else
        dm_block_refusal(d, x->in.offer, x->in.spot, ev->block, ev->block_s, reason, now);
    spw_daemon_cloud_host_gone(d, x, now);
    if (!j || spw_djob_state_terminal(j->st) || j->st != SPW_DJOB_PLACED)
        return;
    if (ev->block == SPW_BLOCK_JOB) {
        dm_say(d, "job %s: failed: the cloud refuses its shape: %s", j->id, reason);
        dm_set_reason(j, "the cloud refuses it and would again: %s", reason);
        dm_eng_cancel(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
        return;
    }
    dm_set_reason(j, "cloud refused %s (%s blocked): %s; requeued", x->in.id,
                  spw_block_name(ev->block), reason);
    dm_job_requeue(d, j, now);
}

void dm_handle_inst_event(spw_daemon_t *d, const spw_inst_event_t *ev, double now)
{
    dinst_t *x = inst_find(d, ev->instance_id);
    if (!x || !spw_instance_state_live(x->in.state))
        return;
    djob_t *j = x->job_seq ? d->jobs[x->job_seq] : NULL;
    if (ev->kind == SPW_INST_EV_FAILED) {
        inst_failed(d, x, j, ev, now);
        return;
    }
    if (ev->kind == SPW_INST_EV_READY) {
        x->in.state = SPW_INSTANCE_READY;
        x->in.ready_s = ev->time_s;
        d->backoff_s[2 * (size_t)x->in.offer + (x->in.spot != 0)] = 0;
        /* The cloud's own id, once an asynchronous cloud has answered. */
        const dacct_t *a = dm_acct_of_inst(d, x);
        spw_instance_t now_in;
        spw_error_t derr;
        if (!x->in.cloud_id[0] && a && a->ops->version >= 2 && a->ops->describe &&
            a->ops->describe(a->pv, x->in.id, &now_in, &derr) == 0 && now_in.cloud_id[0])
            snprintf(x->in.cloud_id, sizeof(x->in.cloud_id), "%s", now_in.cloud_id);
        spw_daemon_cloud_host_up(d, x);
        dm_inst_save(d, x);
        if (j && !j->running && j->st == SPW_DJOB_PLACED && dm_cloud_ready(d, j))
            dm_launch_cloud(d, j, now);
        return;
    }
    int boot_failed = ev->kind == SPW_INST_EV_LOST && x->in.state == SPW_INSTANCE_BOOTING;
    x->in.state = ev->kind == SPW_INST_EV_PREEMPTED ? SPW_INSTANCE_PREEMPTED : SPW_INSTANCE_RELEASED;
    x->in.ended_s = ev->kind == SPW_INST_EV_LOST ? now : ev->time_s;
    dm_inst_save(d, x);
    dm_say(d, "instance %s %s", x->in.id, spw_inst_event_name(ev->kind));
    if (boot_failed) {
        /* A boot that failed (boot_command exited non-zero or printed no
         * address) would most likely fail again at once: the offer backs
         * off like a refused acquire, instead of booting at every turn. */
        double wait_s = offer_backoff(d, (size_t)x->in.offer, x->in.spot, now);
        dm_say(d, "instance %s failed to boot: the offer's %s capacity is not tried again for "
               "%.0f s", x->in.id, x->in.spot ? "spot" : "on-demand", wait_s);
    }
    if (!j) {
        spw_daemon_cloud_host_gone(d, x, now);
        return;
    }
    /* Capacity taken back under the job, whichever way (a preemption, an
     * instance released at its lifetime or lost while the daemon was
     * down): the job resumes from its checkpoint elsewhere. */
    char what[96];
    snprintf(what, sizeof(what), "instance %s %s", x->in.id, spw_inst_event_name(ev->kind));
    dm_job_interrupt(d, j, SPW_INTERRUPT_PREEMPTED, what, now);
    /* After the cancel: its ranks there are lost with the machine. */
    spw_daemon_cloud_host_gone(d, x, now);
}

/* Releases instances idle for longer than the idle timeout, and every
 * instance older than max_instance_lifetime_s: a job on one is requeued as
 * after a preemption (it does not use up a retry). */
void dm_release_idle(spw_daemon_t *d, double now)
{
    double life = d->cfg->daemon.max_instance_lifetime_s;
    for (size_t i = 0; i < d->ninst; i++) {
        dinst_t *x = &d->inst[i];
        if (!spw_instance_state_live(x->in.state))
            continue;
        int old = life > 0 && now - x->in.launched_s >= life;
        if (!old && (x->job_seq || !(now - x->idle_ts >= d->cfg->daemon.idle_timeout_s)))
            continue;
        /* An instance under an interruption notice is the cloud's to end
         * (EC2: two minutes after it); until then its last job may still
         * be writing its checkpoint there.  Released only if the cloud has
         * not ended it well after. */
        if (x->noticed_ts > 0 && now - x->noticed_ts < SPW_DAEMON_NOTICE_HOLD_S)
            continue;
        spw_error_t err;
        const dacct_t *a = dm_acct_of_inst(d, x);
        if (!a) {
            dm_say_repeat(d, &d->rep_orphan_acct, 1, now, "releasing instances",
                          "cannot release instance %s: its account %s is no longer in "
                          "cloud.accounts", x->in.id, x->in.account);
            continue;
        }
        if (a->ops->release(a->pv, &x->in, now, &err) < 0 && errno != ENOENT) {
            dm_say(d, "cannot release instance %s: %s", x->in.id, err.text);
            continue;
        }
        if (x->job_seq) {
            spw_inst_event_t ev = {.kind = SPW_INST_EV_RELEASED, .time_s = now};
            snprintf(ev.instance_id, sizeof(ev.instance_id), "%s", x->in.id);
            dm_say(d, "instance %s reached max_instance_lifetime_s (%.0f s)", x->in.id, life);
            dm_handle_inst_event(d, &ev, now);
            continue;
        }
        x->in.state = SPW_INSTANCE_RELEASED;
        x->in.ended_s = now;
        dm_inst_save(d, x);
        spw_daemon_cloud_host_gone(d, x, now);
        x->snode = 0;
        if (old)
            dm_say(d, "instance %s released: it reached max_instance_lifetime_s (%.0f s)", x->in.id, life);
        else
            dm_say(d, "instance %s released after %.0f s idle", x->in.id, now - x->idle_ts);
    }
}

/* An idle instance released on request (a Slurm cloud node suspended,
 * slurmcloud.c): as release_idle does, at once. */
int spw_daemon_inst_release(spw_daemon_t *d, dinst_t *x, double now, spw_error_t *err)
{
    if (!spw_instance_state_live(x->in.state))
        return 0;
    if (x->job_seq)
        return spw_errorf(err, "instance %s runs job %s", x->in.id, d->jobs[x->job_seq]->id);
    const dacct_t *a = dm_acct_of_inst(d, x);
    if (!a)
        return spw_errorf(err, "instance %s: its account %s is no longer in cloud.accounts",
                          x->in.id, x->in.account);
    if (a->ops->release(a->pv, &x->in, now, err) < 0 && errno != ENOENT)
        return -1;
    x->in.state = SPW_INSTANCE_RELEASED;
    x->in.ended_s = now;
    dm_inst_save(d, x);
    spw_daemon_cloud_host_gone(d, x, now);
    dm_say(d, "instance %s released: its Slurm cloud node was suspended", x->in.id);
    return 0;
}

/* Money safety: a cloud attempt must not bill more than the worst case its
 * placement reserved.  The backend stops the process at its max_runtime
 * (dm_run_limit); this is the net under it, for what max_runtime does not
 * bound (a boot that took longer than the offer says, a job still waiting
 * for its instances): once the attempt's bill comes within a turn and the
 * kill grace of the reserved compute, the job is stopped; its reservation
 * holds kill_grace_s + 2 turns + 1 s of billing beyond max_runtime for
 * exactly this (policy.reserve_extra_s). */
void dm_stop_over_worst_case(spw_daemon_t *d, double now)
{
    while (d->inst_lo < d->ninst && !spw_instance_state_live(d->inst[d->inst_lo].in.state))
        d->inst_lo++;
    for (size_t i = d->inst_lo; i < d->ninst; i++) {
        const dinst_t *x = &d->inst[i];
        if (!x->job_seq || !spw_instance_state_live(x->in.state))
            continue;
        djob_t *j = d->jobs[x->job_seq];
        /* once per job: at its first instance */
        if (!j->ninst || j->inst[0] != i || j->ej.state != SPW_JOB_CLOUD || j->stop_cost ||
            j->cancel_req || j->stopping || !(spw_job_rare(&j->ej)->reserved_usd > 0) ||
            !isfinite(spw_engine_max_runtime(d->engine, &j->ej)))
            continue;
        double usd_h = 0;
        for (size_t k = 0; k < j->ninst; k++)
            usd_h += d->inst[j->inst[k]].in.price_usd_per_h;
        double compute = spw_job_rare(&j->ej)->reserved_usd - spw_daemon_att_egress(j);
        double margin = usd_h * (d->cfg->daemon.kill_grace_s + d->cfg->daemon.tick_s) / 3600.0;
        double bill = spw_daemon_attempt_usd(d, j, now);
        if (bill < compute - margin)
            continue;
        dm_set_reason(j, "stopped: reached its worst-case cost ($%.4f billed of the $%.4f "
                      "reserved for its compute)", bill, compute);
        dm_say(d, "job %s %s", j->id, j->reason);
        if (j->running) {
            spw_error_t err;
            if (JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, now, &err) < 0) {
                dm_say(d, "job %s: cannot stop it: %s", j->id, err.text);
                continue;
            }
            j->stop_cost = 1;
            dm_job_save(d, j, SPW_JU_REASON);
        } else {
            dm_eng_finish(d, j, now);
            dm_job_end(d, j, SPW_DJOB_FAILED, now);
        }
    }
}

/* Tells the engine the spot capacity of each offer that has an
 * availability trace (spot.availability), as of now, whenever it changes.
 * The emulated provider preempts and refuses spot instances from the same
 * trace with the same start, so both see the same ticks. */
void dm_spot_capacity(spw_daemon_t *d, double now)
{
    for (size_t i = 0; i < d->fleet.noffers; i++) {
        if (d->offer_avail[i] < 0)
            continue;
        const spw_spot_avail_conf_t *a = &d->cfg->spot.avail[d->offer_avail[i]];
        if (!a->trace_path || !a->trace.n)
            continue;
        double start = d->spot_trace_start_ts - a->start_offset_s;
        uint32_t n = spw_spot_trace_at(&a->trace, spw_spot_trace_tick(&a->trace, start, now));
        if (n == d->spot_cap[i])
            continue;
        char on[200];
        dm_say(d, "spot capacity of %s: %u instance(s)",
               spw_daemon_offer_name(&d->fleet.offers[i], on, sizeof(on)), n);
        d->spot_cap[i] = n;
        spw_engine_set_spot_capacity(d->engine, i, n, now);
    }
}

int spw_daemon_do_preempt(spw_daemon_t *d, const char *instance_id, spw_error_t *err)
{
    dinst_t *x = inst_find(d, instance_id);
    if (!x)
        return spw_errorf(err, "no instance %s", instance_id), 404;
    if (!spw_instance_state_live(x->in.state))
        return spw_errorf(err, "instance %s has already ended (%s)", instance_id,
                          spw_instance_state_name(x->in.state)), 409;
    const dacct_t *a = dm_acct_of_inst(d, x);
    if (!a || !SPW_PROVIDER_HAS(a->ops, 3, preempt))
        return spw_errorf(err, "only emulated instances can be preempted by hand"), 400;
    double now = fmax(spw_daemon_clock(), d->now);
    if (a->ops->preempt(a->pv, instance_id, now, err) < 0)
        return errno == ENOENT ? 404 : 409;
    pthread_cond_signal(&d->wake);
    return 200;
}

/* Which spot.availability entry applies to each offer (the last that
 * matches), where their traces start (the daemon's start, less each
 * entry's start_offset), and the per-offer state of spot capacity and
 * capacity-error backoffs. */
void dm_spot_setup(spw_daemon_t *d)
{
    size_t n = d->fleet.noffers;
    d->offer_avail = spw_xmalloc((n + 1) * sizeof(int32_t));
    d->spot_cap = spw_xmalloc((n + 1) * sizeof(uint32_t));
    d->backoff_s = spw_xcalloc(2 * n + 2, sizeof(double));
    d->spot_live_ts = spw_xmalloc((n + 1) * sizeof(double));
    for (size_t i = 0; i < n; i++)
        d->spot_live_ts[i] = NAN;
    d->spot_trace_start_ts = d->started_ts;
    for (size_t i = 0; i < n; i++) {
        d->offer_avail[i] = spw_spot_avail_of(d->cfg, &d->fleet.offers[i]);
        d->spot_cap[i] = UINT32_MAX;
    }
}
