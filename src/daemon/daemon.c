/* daemon.c: the scheduler loop of `spillway serve`, recovery after a
 * restart, and what the daemon does to jobs and instances (place, launch,
 * reap, retry, cancel, preempt, release).  The thread-safe API views live in
 * daemon_api.c. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/local/local.h"
#include "core/spot.h"
#include "daemon/daemon_private.h"
#include "daemon/ui.h"
#include "util/file.h"

/* Backoff after a capacity error (EAGAIN) on an offer: the first, and the
 * longest it doubles to while errors come in a row, seconds. */
#define SPW_DAEMON_BACKOFF_S 5.0
#define SPW_DAEMON_BACKOFF_MAX_S 300.0

const double spw_daemon_hist_le[SPW_HIST_BUCKETS] = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.05, 0.25, 1.0,
};

double spw_daemon_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note_commit(spw_daemon_t *d, int ok, const char *why);
static void gc_add(spw_daemon_t *d, const char *token);
/* The backend running job j's process (pools.c). */
static void *job_be(spw_daemon_t *d, const djob_t *j)
{
    void *be;
    spw_daemon_job_ops(d, j, &be);
    return be;
}
#define JOB_OPS(d, j) spw_daemon_job_ops((d), (j), &(void *){NULL})
#define JOB_BE(d, j) job_be((d), (j))

static void say(spw_daemon_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(spw_daemon_t *d, const char *fmt, ...)
{
    if (d->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("spillway: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *spw_daemon_offer_name(const spw_offer_t *o, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s/%s", o->provider, o->region[0] ? "/" : "", o->region,
             o->zone[0] ? "/" : "", o->zone, o->instance_type);
    return buf;
}

static void set_reason(djob_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reason(djob_t *j, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    free(j->reason);
    j->reason = spw_xstrdup(buf);
}

/* ---- jobs in memory ------------------------------------------------------ */

static djob_t *job_new(spw_daemon_t *d, int64_t seq)
{
    if ((size_t)seq >= d->capjobs) {
        size_t cap = d->capjobs ? d->capjobs : 1024;
        while (cap <= (size_t)seq)
            cap *= 2;
        d->jobs = spw_xrealloc(d->jobs, cap * sizeof(djob_t *));
        memset(d->jobs + d->capjobs, 0, (cap - d->capjobs) * sizeof(djob_t *));
        d->capjobs = cap;
    }
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
    d->jobs[seq] = j;
    if ((size_t)seq >= d->njobs)
        d->njobs = (size_t)seq + 1;
    return j;
}

static void job_free(djob_t *j)
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
static void job_save(spw_daemon_t *d, djob_t *j, unsigned set)
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
        .cost_usd = j->onprem_usd + j->cloud_usd,
        .cloud_usd = j->cloud_usd,
        .reserved_usd = j->ej.reserved_usd,
        .charge_ts = j->charge_ts,
        .egress_usd = j->ej.egress_usd,
        .egress_gb = j->ej.egress_gb,
        .held = j->ej.held,
        .ledger_usd = j->led_usd,
        .ledger_egress_usd = j->led_egress_usd,
        .done_s = j->ej.done_s,
        .lost_s = j->ej.lost_s,
        .lost_gpu_s = j->ej.lost_gpu_s,
        .spot_gpu_s = j->ej.spot_gpu_s,
        .ondemand_gpu_s = j->ej.ondemand_gpu_s,
        .restarts = j->ej.restarts,
        .preemptions = j->ej.preemptions,
        .failures = j->ej.failures,
        .last_offer = j->ej.last_offer,
        .spot = j->last_spot,
        .launch_token = j->token[0] ? j->token : NULL,
        .cancel_req = j->cancel_req,
    };
    spw_error_t err;
    if (spw_store_job_update(d->store, j->id, &u, &err) < 0) {
        say(d, "cannot record job %s: %s", j->id, err.text);
        d->write_failed = 1;
    } else if (set & SPW_JU_MONEY) {
        j->held_saved = j->ej.held;
    }
}

/* Every field: a placement and its reservation are written together, in
 * the turn's transaction, so a crash keeps both or neither. */
#define SAVE_ALL                                                              \
    (SPW_JU_STATE | SPW_JU_PLACED_TS | SPW_JU_START_TS | SPW_JU_END_TS |      \
     SPW_JU_PLACEMENT | SPW_JU_GPUS | SPW_JU_PID | SPW_JU_EXIT |              \
     SPW_JU_ATTEMPTS | SPW_JU_REASON | SPW_JU_COST | SPW_JU_MONEY |          \
     SPW_JU_PROGRESS | SPW_JU_LAUNCH | SPW_JU_CANCEL)

/* ---- costs ------------------------------------------------------------- */

/* What instance x billed from `from` to `to` (clipped to its life). */
static double inst_span_usd(const dinst_t *x, double from, double to)
{
    double end = spw_instance_state_live(x->in.state) ? to : fmin(to, x->in.ended_s);
    double start = fmax(from, x->in.launched_s);
    return end > start ? x->in.price_usd_per_h * (end - start) / 3600.0 : 0.0;
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
    double usd = 0;
    for (size_t k = 0; k < j->ninst; k++) {
        const dinst_t *x = &d->inst[j->inst[k]];
        usd += inst_span_usd(x, x->bound_ts, now);
    }
    return usd;
}

double spw_daemon_job_cloud_usd(const spw_daemon_t *d, const djob_t *j, double now)
{
    return j->cloud_usd + spw_daemon_attempt_usd(d, j, now);
}

double spw_daemon_att_egress(const djob_t *j)
{
    return j->ej.state == SPW_JOB_CLOUD && j->ej.egress_usd > j->led_egress_usd
               ? j->ej.egress_usd - j->led_egress_usd
               : 0;
}

/* ---- the engine's side of money ------------------------------------------------ */

/* Resolves the governance names of j's spec and its team into the engine
 * record.  A name the config does not know counts as none (an unknown team
 * has no budget); submit has refused unknown datasets and residencies. */
static void job_gov(spw_daemon_t *d, djob_t *j)
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
    double compute = j->ej.reserved_usd - spw_daemon_att_egress(j);
    j->ej.bill_usd = bill;
    j->ej.billed = 1;
    j->led_usd += d->money_limits ? fmin(bill, fmax(compute, 0)) : bill;
}

/* After the engine let go: all of the job's egress is settled now. */
static void billed(djob_t *j)
{
    j->ej.billed = 0;
    j->ej.bill_usd = 0;
    j->led_egress_usd = j->ej.egress_usd;
}

static void eng_finish(spw_daemon_t *d, djob_t *j, double now)
{
    bill_attempt(d, j, now);
    spw_engine_finish(d->engine, &j->ej, now);
    billed(j);
}

static void eng_cancel(spw_daemon_t *d, djob_t *j, double now)
{
    bill_attempt(d, j, now);
    spw_engine_cancel(d->engine, &j->ej, now);
    billed(j);
}

/* spw_job_reset, keeping what the daemon reports of earlier attempts:
 * egress, holds, and the progress and interruptions of its attempts. */
static void ej_reset(djob_t *j)
{
    spw_job_t keep = j->ej;
    spw_job_reset(&j->ej);
    j->ej.egress_usd = keep.egress_usd;
    j->ej.egress_gb = keep.egress_gb;
    j->ej.held = keep.held;
    j->ej.done_s = keep.done_s;
    j->ej.lost_s = keep.lost_s;
    j->ej.lost_gpu_s = keep.lost_gpu_s;
    j->ej.spot_gpu_s = keep.spot_gpu_s;
    j->ej.ondemand_gpu_s = keep.ondemand_gpu_s;
    j->ej.restarts = keep.restarts;
    j->ej.preemptions = keep.preemptions;
    j->ej.failures = keep.failures;
    j->ej.last_offer = keep.last_offer;
}

/* How long j's process may run before the backend stops it: its
 * max_runtime, or in the cloud under a budget or cap the default the
 * engine reserved its worst case for; 0 = no limit. */
static double run_limit(const spw_daemon_t *d, const djob_t *j)
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

static void inst_save(spw_daemon_t *d, const dinst_t *x)
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
    };
    spw_error_t err;
    if (spw_store_instance_update(d->store, &si, &err) < 0)
        say(d, "cannot record instance %s: %s", x->in.id, err.text);
}

/* Unbinds every instance of job j at now, settling what each billed while
 * bound; they become idle (released later by the idle timeout). */
static void unbind_instances(spw_daemon_t *d, djob_t *j, double now)
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
        double usd = inst_span_usd(x, x->bound_ts, now);
        x->bound_usd += usd;
        j->cloud_usd += usd;
        double end = spw_instance_state_live(x->in.state) ? now : fmin(now, x->in.ended_s);
        if (!isnan(j->start_ts) && end > j->start_ts)
            j->cloud_gpu_h += d->fleet.offers[x->in.offer].gpus * (end - j->start_ts) / 3600.0;
        x->job_seq = 0;
        x->idle_ts = now;
        inst_save(d, x);
    }
    j->ninst = 0;
}

static void unwait(spw_daemon_t *d, djob_t *j)
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
    unbind_instances(d, j, now);
    unwait(d, j);
}

/* Ends job j in state st: releases what it holds and forgets its spec. */
static void job_end(spw_daemon_t *d, djob_t *j, spw_djob_state_t st, double now)
{
    settle(d, j, now);
    j->st = st;
    j->end_ts = now;
    j->running = 0;
    j->stopping = 0;
    j->cancel_req = 0;
    spw_jobspec_free(&j->spec);
    job_save(d, j, SAVE_ALL);
}

/* Puts a placed job back in the queue (retry or preemption). */
static void job_requeue(spw_daemon_t *d, djob_t *j, double now)
{
    /* The engine first, while the instances are still bound: their bill
     * settles the attempt. */
    if (j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD) {
        bill_attempt(d, j, now);
        spw_engine_requeue(d->engine, &j->ej, now);
        billed(j);
    }
    settle(d, j, now);
    j->st = SPW_DJOB_QUEUED;
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
    job_save(d, j, SAVE_ALL);
}

/* Job j lost the capacity it was placed on at now: its cloud instance was
 * preempted (or released under it), or its on-prem node failed (why).  The
 * engine settles the attempt (what it kept up to its last checkpoint, what
 * it lost) and decides where the job goes next; a process still running is
 * stopped, and its exit only lets the job's next placement start.  Past
 * the policy's max_restarts the job fails.  `what` says what happened, for
 * its reason. */
static void job_interrupt(spw_daemon_t *d, djob_t *j, spw_interrupt_t why, const char *what,
                          double now)
{
    if (j->running && !j->stopping) {
        spw_error_t err;
        if (JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, now, &err) < 0)
            say(d, "job %s: cannot stop it: %s", j->id, err.text);
        j->stopping = 1;
    }
    if (j->ej.state != SPW_JOB_ONPREM && j->ej.state != SPW_JOB_CLOUD) {
        set_reason(j, "%s; requeued", what);
        job_requeue(d, j, now);
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
        uint32_t n = j->ej.preemptions + j->ej.failures;
        if (j->ej.failures == 0)
            set_reason(j, "%s; failed: preempted %u time%s; max_restarts %u", what, n,
                       n == 1 ? "" : "s", mr);
        else
            set_reason(j, "%s; failed: interrupted %u time%s (%u preemptions, %u node "
                       "failures); max_restarts %u", what, n, n == 1 ? "" : "s",
                       j->ej.preemptions, j->ej.failures, mr);
        say(d, "job %s %s", j->id, j->reason);
        /* Its process, if any, is still being stopped: the backend reaps
         * it, and its exit finds the job ended. */
        job_end(d, j, SPW_DJOB_FAILED, now);
        return;
    }
    j->st = SPW_DJOB_QUEUED;
    /* While its process is being stopped the token stays (stored): a
     * restart finds that attempt by it and stops it again (stop_old).  Its
     * next placement records a new one. */
    if (!j->running)
        j->token[0] = '\0';
    set_reason(j, "%s; requeued (restart %u, %.0f s of work kept)", what, j->ej.restarts,
               j->ej.done_s);
    if (why == SPW_INTERRUPT_PREEMPTED)
        say(d, "job %s requeued after its instance was preempted", j->id);
    else if (why == SPW_INTERRUPT_NODE_FAILED)
        say(d, "job %s requeued after its node failed", j->id);
    else
        say(d, "job %s stopped on demand to move to spot", j->id);
    job_save(d, j, SAVE_ALL);
}

/* ---- launching --------------------------------------------------------- */

static char *gpu_list(const uint32_t *g, size_t n)
{
    size_t cap = n * 11 + 1, used = 0;
    char *s = spw_xmalloc(cap);
    s[0] = '\0';
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(s + used, cap - used, "%s%u", i ? "," : "", g[i]);
    return s;
}

/* "NAME=VALUE", newly allocated. */
static char *env_kv(const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *s = spw_xmalloc(len);
    snprintf(s, len, "%s=%s", name, value);
    return s;
}

/* Makes directory `path` (0750) as the daemon's own: never a link, since a
 * job may have left one, or a FIFO, at a future job's name; whatever else is
 * found there is replaced by a real directory.  0, or -1 with errno. */
static int real_dir(const char *path)
{
    for (int tries = 0; tries < 3; tries++) {
        struct stat sb;
        if (mkdir(path, 0750) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            return 0;
        if (unlink(path) < 0 && errno != ENOENT)
            return -1;
    }
    return -1;
}

/* The job's checkpoint directory, STATE_DIR/checkpoints/JOBID (absolute),
 * into buf; created (once) when create is set.  0, or -1 with err. */
static int ckpt_path(const spw_daemon_t *d, const djob_t *j, char *buf, size_t len, int create,
                     spw_error_t *err)
{
    snprintf(buf, len, "%s/%s", d->ckpt_dir, j->id);
    if (!create || real_dir(buf) == 0)
        return 0;
    return spw_errorf(err, "cannot create its checkpoint directory %s: %s", buf,
                      strerror(errno));
}

/* The checkpoint interval job j runs with: its spec's, else the config's. */
static double ckpt_interval(const spw_daemon_t *d, const djob_t *j)
{
    return isnan(j->spec.checkpoint_interval_s) ? d->cfg->spot.checkpoint_interval_s
                                                 : j->spec.checkpoint_interval_s;
}

/* Makes job j's log directory, STATE_DIR/logs/JOBID, into buf: created by
 * the daemon (0750), never a link (one found there is replaced).  0, or -1
 * with err. */
static int job_log_dir(const spw_daemon_t *d, const djob_t *j, char *buf, size_t len,
                       spw_error_t *err)
{
    snprintf(buf, len, "%s/%s", d->log_dir, j->id);
    if (real_dir(buf) == 0)
        return 0;
    return spw_errorf(err, "cannot create its log directory %s: %s", buf, strerror(errno));
}

/* Records job j's launch intent on GPUs g[0..ng): a new attempt and its
 * launch token, written in this turn's transaction.  Nothing is started
 * here: launch_pending() forks once the turn has committed, so a launch is
 * always on disk before its process exists, and a turn whose commit fails
 * starts nothing.  extra is NULL-terminated "K=V" added to the spec's env
 * (and wins over it), besides what every attempt gets. */
static int launch(spw_daemon_t *d, djob_t *j, const uint32_t *g, size_t ng, const char **extra,
                  double now)
{
    (void)now;
    if (j->pending)
        return 0;
    size_t nextra = 0;
    while (extra && extra[nextra])
        nextra++;
    free(j->gpus_assigned);
    j->gpus_assigned = gpu_list(g, ng);
    j->attempts++;
    snprintf(j->token, sizeof(j->token), "%s.%s.%d", d->daemon_id, j->id, j->attempts);
    j->pend_gpus = spw_xmalloc((ng + 1) * sizeof(*g));
    if (ng)
        memcpy(j->pend_gpus, g, ng * sizeof(*g));
    j->pend_ngpus = ng;
    j->pend_extra = spw_xcalloc(nextra + 1, sizeof(char *));
    for (size_t i = 0; i < nextra; i++)
        j->pend_extra[i] = spw_xstrdup(extra[i]);
    j->pending = 1;
    j->st = SPW_DJOB_PLACED;
    job_save(d, j, SAVE_ALL);
    if (d->npend == d->cappend) {
        d->cappend = d->cappend ? 2 * d->cappend : 16;
        d->pend = spw_xrealloc(d->pend, d->cappend * sizeof(*d->pend));
    }
    d->pend[d->npend++] = j->seq;
    return 0;
}

/* Starts the process of job j's committed launch intent (j->pending).  On
 * failure the job fails. */
static int do_launch(spw_daemon_t *d, djob_t *j, double now)
{
    int async = 0;
    const spw_jobspec_t *s = &j->spec;
    const spw_jobuser_t *u = spw_jobusers_for(&d->users, j->team);
    char dir[4096], ckpt[4200], attempt[48], restarts[48], interval[80], logs[4096];
    spw_error_t err;
    uint32_t *g = j->pend_gpus;
    size_t ng = j->pend_ngpus;
    char **extra = j->pend_extra;
    j->pend_gpus = NULL;
    j->pend_extra = NULL;
    j->pending = 0;
    int rc = ckpt_path(d, j, dir, sizeof(dir), 1, &err);
    if (rc == 0)
        rc = job_log_dir(d, j, logs, sizeof(logs), &err);
    char **env = NULL;
    size_t nenv = 0;
    /* The job's user owns its checkpoint directory, and no one else may
     * look into it (jobs of other teams may run as other users). */
    if (rc == 0 && u->set && (chown(dir, u->uid, u->gid) < 0 || chmod(dir, 0700) < 0))
        rc = spw_errorf(&err, "cannot hand its checkpoint directory %s to user %s: %s", dir,
                        u->name, strerror(errno));
    if (rc == 0) {
        snprintf(ckpt, sizeof(ckpt), "SPILLWAY_CHECKPOINT_DIR=%s", dir);
        snprintf(attempt, sizeof(attempt), "SPILLWAY_ATTEMPT=%d", j->attempts);
        snprintf(restarts, sizeof(restarts), "SPILLWAY_RESTARTS=%u", j->ej.restarts);
        double iv = ckpt_interval(d, j);
        if (iv == SPW_CKPT_CONTINUOUS)
            snprintf(interval, sizeof(interval), "SPILLWAY_CHECKPOINT_INTERVAL_S=continuous");
        else
            snprintf(interval, sizeof(interval), "SPILLWAY_CHECKPOINT_INTERVAL_S=%.17g", iv);
        const char *own[] = {ckpt, attempt, restarts, interval};
        size_t nown = sizeof(own) / sizeof(own[0]), nextra = 0;
        while (extra && extra[nextra])
            nextra++;
        env = spw_xcalloc(s->nenv + nown + nextra + 4, sizeof(char *));
        if (u->set) {  /* its user's, not the daemon's; the spec may override */
            env[nenv++] = env_kv("HOME", u->home);
            env[nenv++] = env_kv("USER", u->name);
            env[nenv++] = env_kv("LOGNAME", u->name);
        }
        for (size_t i = 0; i < s->nenv; i++)
            env[nenv++] = env_kv(s->env[i].key, s->env[i].value);
        for (size_t i = 0; i < nown; i++)
            env[nenv++] = spw_xstrdup(own[i]);
        for (size_t i = 0; i < nextra; i++)
            env[nenv++] = spw_xstrdup(extra[i]);
        spw_launch_t req = {
            .job_id = j->id,
            .argv = s->run_kind == SPW_RUN_ARGV ? (const char *const *)s->argv : NULL,
            .script = s->run_kind == SPW_RUN_SCRIPT ? s->script : NULL,
            .env = (const char *const *)env,
            /* A job of another user without a workdir would start in the
             * daemon's, which it may not even enter: its checkpoint
             * directory is the one place it surely owns. */
            .workdir = s->workdir ? s->workdir : u->set ? dir : NULL,
            .set_user = u->set,
            .uid = u->uid,
            .gid = u->gid,
            .env_pass = d->users.env_pass,
            .gpus = g,
            .ngpus = ng,
            .log_dir = logs,
            .max_runtime_s = run_limit(d, j),
            .now_s = now,
            .token = j->token,
            .nodes = j->ej.nnodes,
            .image = s->image,
            .user = u->set ? u->name : NULL,
        };
        /* An on-prem placement runs on its pool's backend (pools.c), a
         * cloud one on its instances when they are hosts (one rank each). */
        void *be;
        int32_t bp = j->ej.state == SPW_JOB_ONPREM ? j->pool : spw_daemon_cloud_pool(d, j);
        const struct spw_backend_ops *ops = spw_daemon_pool_ops(d, bp, &be);
        if (bp == SPW_DAEMON_CLOUD_POOL || bp == SPW_DAEMON_SLURM_CLOUD_POOL)
            req.nodes = (uint32_t)j->ninst;
        rc = ops->launch(be, &req, &j->h, &err);
        if (rc == 0)
            j->be_pool = ops == d->be_ops ? -1 : bp;
        /* A backend that submits asynchronously (a Slurm pool's sbatch on
         * its op threads) reports the launch through changed() once it
         * took: until then the job stays recorded as placed, so that a
         * restart meanwhile requeues it as never started (find() fences
         * its token) instead of failing it as ended. */
        async = rc == 0 && !j->h.ext[0] && ops->version >= 3 && ops->changed;
    }
    for (size_t i = 0; i < nenv; i++)
        free(env[i]);
    free(env);
    free(g);
    for (char **e = extra; e && *e; e++)
        free(*e);
    free(extra);
    if (rc < 0) {
        set_reason(j, "%s", err.text);
        say(d, "job %s failed to start: %s", j->id, err.text);
        if (j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD)
            eng_finish(d, j, now);
        job_end(d, j, SPW_DJOB_FAILED, now);
        return -1;
    }
    j->running = 1;
    if (!async) {
        j->st = SPW_DJOB_RUNNING;
        j->start_ts = now;
    }
    job_save(d, j, SAVE_ALL);
    return 0;
}

/* A handle its backend changed (changed(), version 3): the launch of an
 * asynchronous backend took; the job now runs. */
static void handle_changed(spw_daemon_t *d, const spw_handle_t *h, double now)
{
    djob_t *j = spw_daemon_find(d, h->job_id);
    if (!j || !j->running || strcmp(j->token, h->token) != 0)
        return;
    j->h = *h;
    if (j->st == SPW_DJOB_PLACED && !j->stopping) {
        j->st = SPW_DJOB_RUNNING;
        j->start_ts = now;
        job_save(d, j, SAVE_ALL);
    }
}

/* Starts the process of an on-prem placement on the GPUs it holds. */
static void start_onprem(spw_daemon_t *d, djob_t *j, double now)
{
    const spw_pool_spec_t *p = &d->fleet.pools[j->pool];
    uint32_t g[64];
    size_t ng = 0;
    for (uint32_t i = 0; i < 64; i++)
        if (j->gpu_bits >> i & 1)
            g[ng++] = i;
    char nodes[48], place[160];
    snprintf(nodes, sizeof(nodes), "SPILLWAY_NODES=%u", j->ej.nnodes);
    snprintf(place, sizeof(place), "SPILLWAY_PLACEMENT=%s/%d", p->name, j->node);
    const char *extra[] = {nodes, place, NULL};
    launch(d, j, g, ng, extra, now);
}

/* Picks the GPUs of an on-prem placement and starts the job, or, while the
 * process of its interrupted attempt is still being stopped, holds them
 * until it has exited. */
static void place_onprem(spw_daemon_t *d, djob_t *j, double now)
{
    const spw_pool_spec_t *p = &d->fleet.pools[j->ej.pool];
    uint32_t node = (uint32_t)j->ej.node;
    uint32_t want = j->ej.nnodes > 1 ? p->node_gpus[node] : j->ej.alloc_gpus;
    uint32_t g[64];
    size_t ng = 0;
    uint64_t used = d->node_used[j->ej.pool][node], bits = 0;
    for (uint32_t i = 0; i < p->node_gpus[node] && ng < want; i++)
        if (!(used >> i & 1)) {
            g[ng++] = i;
            bits |= 1ull << i;
        }
    j->pool = j->ej.pool;
    j->node = (int32_t)node;
    j->offer = -1;
    j->last_spot = 0;
    j->holds = 1;
    j->gpu_bits = bits;
    d->node_used[j->pool][node] |= bits;
    j->held_gpus = j->ej.alloc_gpus;
    d->pool_busy[j->pool] += j->held_gpus;
    j->placed_ts = j->charge_ts = now;
    j->led_egress_usd = j->ej.egress_usd;   /* on-prem egress is settled at once */
    j->st = SPW_DJOB_PLACED;
    set_reason(j, "%s", spw_reason_text(j->ej.reason));
    free(j->gpus_assigned);
    j->gpus_assigned = gpu_list(g, ng);
    if (j->running) {
        job_save(d, j, SAVE_ALL);
        return;
    }
    start_onprem(d, j, now);
}

/* Starts a cloud job whose instances are all ready. */
static void launch_cloud(spw_daemon_t *d, djob_t *j, double now)
{
    const spw_offer_t *o = &d->fleet.offers[j->offer];
    uint32_t ng = j->gpus < o->gpus ? j->gpus : o->gpus, g[1024];
    for (uint32_t i = 0; i < ng && i < 1024; i++)
        g[i] = i;
    size_t cap = j->ninst * SPW_INSTANCE_ID_MAX + 64, used = 0;
    char *ids = spw_xmalloc(cap);
    used += (size_t)snprintf(ids, cap, "SPILLWAY_INSTANCE_IDS=");
    for (size_t k = 0; k < j->ninst; k++)
        used += (size_t)snprintf(ids + used, cap - used, "%s%s", k ? "," : "",
                                 d->inst[j->inst[k]].in.id);
    char nodes[48], on[200], place[240];
    snprintf(nodes, sizeof(nodes), "SPILLWAY_NODES=%zu", j->ninst);
    snprintf(place, sizeof(place), "SPILLWAY_PLACEMENT=%s",
             spw_daemon_offer_name(o, on, sizeof(on)));
    /* Instances that are hosts: rank k runs on instance k (the ssh
     * backend's SPILLWAY_SSH_HOSTS). */
    char *hosts = NULL;
    if (spw_daemon_cloud_pool(d, j) == SPW_DAEMON_CLOUD_POOL) {
        size_t hcap = j->ninst * SPW_INSTANCE_ADDR_MAX + 32, hu = 0;
        hosts = spw_xmalloc(hcap);
        hu += (size_t)snprintf(hosts, hcap, "SPILLWAY_SSH_HOSTS=");
        for (size_t k = 0; k < j->ninst; k++)
            hu += (size_t)snprintf(hosts + hu, hcap - hu, "%s%s", k ? "," : "",
                                   d->inst[j->inst[k]].in.addr);
    }
    /* Instances that are Slurm cloud nodes: the job is pinned to them. */
    char *snodes = spw_daemon_scloud_env(d, j);
    const char *extra[] = {ids, nodes, place,
                           d->pv_ops->emulated ? "SPILLWAY_EMULATED=1" : "SPILLWAY_EMULATED=0",
                           snodes ? snodes : hosts, snodes ? hosts : NULL, NULL};
    unwait(d, j);
    launch(d, j, g, ng, extra, now);
    free(ids);
    free(hosts);
    free(snodes);
}

static int cloud_ready(const spw_daemon_t *d, const djob_t *j)
{
    for (size_t k = 0; k < j->ninst; k++)
        if (d->inst[j->inst[k]].in.state != SPW_INSTANCE_READY)
            return 0;
    return j->ninst > 0;
}

static size_t inst_add(spw_daemon_t *d, const spw_instance_t *in)
{
    if (d->ninst == d->capinst) {
        d->capinst = d->capinst ? d->capinst * 2 : 64;
        d->inst = spw_xrealloc(d->inst, d->capinst * sizeof(dinst_t));
    }
    dinst_t *x = &d->inst[d->ninst];
    memset(x, 0, sizeof(*x));
    x->in = *in;
    x->idle_ts = NAN;
    return d->ninst++;
}

static void inst_insert(spw_daemon_t *d, const dinst_t *x)
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
    };
    spw_error_t err;
    if (spw_store_instance_insert(d->store, &si, &err) < 0)
        say(d, "cannot record instance %s: %s", x->in.id, err.text);
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

/* A cloud placement: reuses idle instances of the offer (of the same kind,
 * spot or on-demand: the engine reserved at that price), acquires the rest. */
static void place_cloud(spw_daemon_t *d, djob_t *j, double now)
{
    uint32_t want = j->ej.instances;
    j->offer = j->ej.offer;
    j->pool = j->node = -1;
    j->last_spot = j->ej.spot;
    j->placed_ts = now;
    j->charge_ts = isnan(j->ej.charge_s) ? now : j->ej.charge_s;
    j->st = SPW_DJOB_PLACED;
    for (size_t i = 0; i < d->ninst && j->ninst < want; i++) {
        dinst_t *x = &d->inst[i];
        if (!x->job_seq && spw_instance_state_live(x->in.state) && (int32_t)x->in.offer == j->offer &&
            !x->in.spot == !j->ej.spot) {
            bind_inst(d, j, i, now);
            inst_save(d, x);
        }
    }
    if (j->ninst < want) {
        uint32_t n = want - (uint32_t)j->ninst;
        spw_instance_t *got = spw_xcalloc(n, sizeof(spw_instance_t));
        spw_acquire_t req = {.offer = (size_t)j->offer, .count = n, .spot = j->ej.spot,
                             .job_id = j->id, .now_s = now};
        spw_error_t err;
        /* Instances that are Slurm cloud nodes: no more than the partition
         * has nodes left (as a provider out of capacity). */
        int arc = 0;
        if (d->scloud_be && spw_daemon_scloud_free(d) < n) {
            spw_errorf(&err, "Slurm cloud partition %s has %zu free node(s) for %u instance(s)",
                       d->cfg->cloud_slurm_partition, spw_daemon_scloud_free(d), n);
            errno = EAGAIN;
            arc = -1;
        }
        if (arc < 0 || d->pv_ops->acquire(d->pv, &req, got, &err) < 0) {
            int e = errno;
            free(got);
            if (e == E2BIG || e == EINVAL) {
                /* A refusal that asking again cannot change (more than the
                 * offer can ever hold, a malformed request): the job ends
                 * instead of being placed and refused every turn. */
                say(d, "job %s: failed: the provider refuses %u instance(s) for good: %s",
                    j->id, n, err.text);
                set_reason(j, "the cloud provider refuses it and would again: %s", err.text);
                eng_cancel(d, j, now);
                job_end(d, j, SPW_DJOB_FAILED, now);
                return;
            }
            say(d, "job %s: cannot acquire %u instance(s): %s", j->id, n, err.text);
            /* Capacity (EAGAIN) or any other error that may pass: the
             * engine leaves the offer (of this kind) alone for a while. */
            double wait_s = offer_backoff(d, (size_t)j->offer, j->ej.spot, now);
            set_reason(j, "%s: %s; requeued (the offer's %s capacity is not tried again for "
                       "%.0f s)", e == EAGAIN ? "cloud capacity" : "cloud provider", err.text,
                       j->ej.spot ? "spot" : "on-demand", wait_s);
            job_requeue(d, j, now);
            return;
        }
        for (uint32_t k = 0; k < n; k++) {
            size_t xi = inst_add(d, &got[k]);
            bind_inst(d, j, xi, now);
            inst_insert(d, &d->inst[xi]);
        }
        free(got);
    }
    if (d->scloud_be && spw_daemon_scloud_bind(d, j) < 0)
        say(d, "job %s: some of its instances are no Slurm cloud node (none free)", j->id);
    set_reason(j, "%s", spw_reason_text(j->ej.reason));
    char on[200];
    say(d, "job %s placed on %u x %s%s", j->id, want,
        spw_daemon_offer_name(&d->fleet.offers[j->offer], on, sizeof(on)),
        d->pv_ops->emulated ? " (emulated)" : "");
    /* It starts once its instances are ready and the process of an
     * interrupted attempt, if one is still being stopped, has exited. */
    if (cloud_ready(d, j) && !j->running) {
        launch_cloud(d, j, now);
        return;
    }
    if (!cloud_ready(d, j)) {
        j->next_wait = d->waiting;
        d->waiting = j;
    }
    job_save(d, j, SAVE_ALL);
}

static void record_decision(spw_daemon_t *d, djob_t *j, double now)
{
    json_t *o = json_object();
    json_object_set_new(o, "ts", json_real(now));
    json_object_set_new(o, "where", json_string(j->ej.state == SPW_JOB_ONPREM ? "onprem" : "cloud"));
    json_object_set_new(o, "reason", json_string(spw_reason_text(j->ej.reason)));
    if (j->ej.state == SPW_JOB_ONPREM) {
        char pl[160];
        snprintf(pl, sizeof(pl), "%s/%d", d->fleet.pools[j->ej.pool].name, j->ej.node);
        json_object_set_new(o, "placement", json_string(pl));
    } else {
        char on[200];
        json_object_set_new(o, "placement", json_string(spw_daemon_offer_name(
                                                &d->fleet.offers[j->ej.offer], on, sizeof(on))));
        json_object_set_new(o, "instances", json_integer(j->ej.instances));
        json_object_set_new(o, "emulated", json_boolean(d->pv_ops->emulated));
    }
    json_object_set_new(o, "waited_s", json_real(now - j->submit_ts));
    json_t *cands = spw_daemon_candidates_json(d, j);
    if (j->ej.state == SPW_JOB_ONPREM) {
        /* The candidates are listed after the placement took its GPUs: say
         * so for the pool that was chosen. */
        json_t *c = json_array_get(cands, (size_t)j->ej.pool);
        char why[200];
        snprintf(why, sizeof(why), "chosen: placed on node %d of pool %s (%s)", j->ej.node,
                 d->fleet.pools[j->ej.pool].name, spw_reason_text(j->ej.reason));
        json_object_set_new(c, "ok", json_true());
        json_object_set_new(c, "est_start_ts", json_real(now));
        json_object_set_new(c, "why", json_string(why));
    }
    json_object_set_new(o, "candidates", cands);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(o);
    spw_error_t err;
    if (text && spw_store_decision_insert(d->store, j->id, now, text, &err) < 0)
        say(d, "cannot record the decision for %s: %s", j->id, err.text);
    free(text);
}

/* ---- events ------------------------------------------------------------- */

static void handle_exit(spw_daemon_t *d, const spw_exit_t *ex, double now)
{
    djob_t *j = spw_daemon_find(d, ex->handle.job_id);
    if (!j || !j->running)
        return;
    j->running = 0;
    gc_add(d, ex->handle.token);
    j->has_exit = ex->kind != SPW_EXIT_LOST && ex->kind != SPW_EXIT_NOT_STARTED;
    j->exit_code = ex->kind == SPW_EXIT_EXITED ? ex->status
                   : ex->kind == SPW_EXIT_SIGNALED ? 128 + ex->status : 0;
    uint32_t retries = j->spec.retries;
    if (j->cancel_req) {
        set_reason(j, "cancelled by a user");
        eng_cancel(d, j, now);
        job_end(d, j, SPW_DJOB_CANCELLED, now);
    } else if (j->stopping) {
        /* The process of an interrupted attempt, settled when it was
         * interrupted: its exit lets the job's next placement start. */
        j->stopping = 0;
        if (j->st == SPW_DJOB_PLACED && j->holds)
            start_onprem(d, j, now);
        else if (j->st == SPW_DJOB_PLACED && cloud_ready(d, j))
            launch_cloud(d, j, now);
        else
            job_save(d, j, SPW_JU_PID | SPW_JU_EXIT);
        return;
    } else if (ex->kind == SPW_EXIT_NOT_STARTED) {
        /* An asynchronous launch (a Slurm pool's sbatch) that failed after
         * launch() had returned: the same end as a launch() that failed. */
        set_reason(j, "%s", ex->reason);
        say(d, "job %s failed to start: %s", j->id, ex->reason);
        if (j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD)
            eng_finish(d, j, now);
        job_end(d, j, SPW_DJOB_FAILED, now);
        return;
    } else if (ex->kind == SPW_EXIT_EXITED && ex->status == 0) {
        set_reason(j, "exited 0");
        eng_finish(d, j, now);
        job_end(d, j, SPW_DJOB_SUCCEEDED, now);
    } else if (j->stop_cost) {
        /* the reason, set when it was stopped, says why */
        eng_finish(d, j, now);
        job_end(d, j, SPW_DJOB_FAILED, now);
    } else if (ex->cause == SPW_CAUSE_MAX_RUNTIME) {
        set_reason(j, "killed after max_runtime (%.0f s)%s", j->h.max_runtime_s,
                   j->ej.state == SPW_JOB_CLOUD && !(j->ej.max_runtime_s > 0)
                       ? ", the governance default for cloud jobs"
                       : "");
        eng_finish(d, j, now);
        job_end(d, j, SPW_DJOB_FAILED, now);
    } else if (ex->kind == SPW_EXIT_LOST) {
        set_reason(j, "ended while the daemon was not its parent: exit status unknown");
        eng_finish(d, j, now);
        job_end(d, j, SPW_DJOB_FAILED, now);
    } else if ((uint32_t)j->attempts <= retries) {
        set_reason(j, "%s %d; retry %d of %u", ex->kind == SPW_EXIT_EXITED ? "exited with" : "killed by signal",
                   ex->status, j->attempts, retries);
        job_requeue(d, j, now);
    } else {
        set_reason(j, "%s %d", ex->kind == SPW_EXIT_EXITED ? "exited with" : "killed by signal",
                   ex->status);
        eng_finish(d, j, now);
        job_end(d, j, SPW_DJOB_FAILED, now);
    }
    say(d, "job %s %s (%s)", j->id, spw_djob_state_name(j->st), j->reason ? j->reason : "");
}

static dinst_t *inst_find(spw_daemon_t *d, const char *id)
{
    for (size_t i = d->ninst; i-- > 0;)
        if (strcmp(d->inst[i].in.id, id) == 0)
            return &d->inst[i];
    return NULL;
}

static void handle_inst_event(spw_daemon_t *d, const spw_inst_event_t *ev, double now)
{
    dinst_t *x = inst_find(d, ev->instance_id);
    if (!x || !spw_instance_state_live(x->in.state))
        return;
    djob_t *j = x->job_seq ? d->jobs[x->job_seq] : NULL;
    if (ev->kind == SPW_INST_EV_READY) {
        x->in.state = SPW_INSTANCE_READY;
        x->in.ready_s = ev->time_s;
        d->backoff_s[2 * (size_t)x->in.offer + (x->in.spot != 0)] = 0;
        spw_daemon_cloud_host_up(d, x);
        inst_save(d, x);
        if (j && !j->running && j->st == SPW_DJOB_PLACED && cloud_ready(d, j))
            launch_cloud(d, j, now);
        return;
    }
    int boot_failed = ev->kind == SPW_INST_EV_LOST && x->in.state == SPW_INSTANCE_BOOTING;
    x->in.state = ev->kind == SPW_INST_EV_PREEMPTED ? SPW_INSTANCE_PREEMPTED : SPW_INSTANCE_RELEASED;
    x->in.ended_s = ev->kind == SPW_INST_EV_LOST ? now : ev->time_s;
    inst_save(d, x);
    say(d, "instance %s %s", x->in.id, spw_inst_event_name(ev->kind));
    if (boot_failed) {
        /* A boot that failed (boot_command exited non-zero or printed no
         * address) would most likely fail again at once: the offer backs
         * off like a refused acquire, instead of booting at every turn. */
        double wait_s = offer_backoff(d, (size_t)x->in.offer, x->in.spot, now);
        say(d, "instance %s failed to boot: the offer's %s capacity is not tried again for "
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
    job_interrupt(d, j, SPW_INTERRUPT_PREEMPTED, what, now);
    /* After the cancel: its ranks there are lost with the machine. */
    spw_daemon_cloud_host_gone(d, x, now);
}

/* Releases instances idle for longer than the idle timeout, and every
 * instance older than max_instance_lifetime_s: a job on one is requeued as
 * after a preemption (it does not use up a retry). */
static void release_idle(spw_daemon_t *d, double now)
{
    double life = d->cfg->daemon.max_instance_lifetime_s;
    for (size_t i = 0; i < d->ninst; i++) {
        dinst_t *x = &d->inst[i];
        if (!spw_instance_state_live(x->in.state))
            continue;
        int old = life > 0 && now - x->in.launched_s >= life;
        if (!old && (x->job_seq || !(now - x->idle_ts >= d->cfg->daemon.idle_timeout_s)))
            continue;
        spw_error_t err;
        if (d->pv_ops->release(d->pv, &x->in, now, &err) < 0 && errno != ENOENT) {
            say(d, "cannot release instance %s: %s", x->in.id, err.text);
            continue;
        }
        if (x->job_seq) {
            spw_inst_event_t ev = {.kind = SPW_INST_EV_RELEASED, .time_s = now};
            snprintf(ev.instance_id, sizeof(ev.instance_id), "%s", x->in.id);
            say(d, "instance %s reached max_instance_lifetime_s (%.0f s)", x->in.id, life);
            handle_inst_event(d, &ev, now);
            continue;
        }
        x->in.state = SPW_INSTANCE_RELEASED;
        x->in.ended_s = now;
        inst_save(d, x);
        spw_daemon_cloud_host_gone(d, x, now);
        x->snode = 0;
        if (old)
            say(d, "instance %s released: it reached max_instance_lifetime_s (%.0f s)", x->in.id, life);
        else
            say(d, "instance %s released after %.0f s idle", x->in.id, now - x->idle_ts);
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
    if (d->pv_ops->release(d->pv, &x->in, now, err) < 0 && errno != ENOENT)
        return -1;
    x->in.state = SPW_INSTANCE_RELEASED;
    x->in.ended_s = now;
    inst_save(d, x);
    spw_daemon_cloud_host_gone(d, x, now);
    say(d, "instance %s released: its Slurm cloud node was suspended", x->in.id);
    return 0;
}

/* Money safety: a cloud attempt must not bill more than the worst case its
 * placement reserved.  The backend stops the process at its max_runtime
 * (run_limit); this is the net under it, for what max_runtime does not
 * bound (a boot that took longer than the offer says, a job still waiting
 * for its instances): once the attempt's bill comes within a turn and the
 * kill grace of the reserved compute, the job is stopped; its reservation
 * holds kill_grace_s + 2 turns + 1 s of billing beyond max_runtime for
 * exactly this (policy.reserve_extra_s). */
static void stop_over_worst_case(spw_daemon_t *d, double now)
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
            j->cancel_req || j->stopping || !(j->ej.reserved_usd > 0) ||
            !isfinite(spw_engine_max_runtime(d->engine, &j->ej)))
            continue;
        double usd_h = 0;
        for (size_t k = 0; k < j->ninst; k++)
            usd_h += d->inst[j->inst[k]].in.price_usd_per_h;
        double compute = j->ej.reserved_usd - spw_daemon_att_egress(j);
        double margin = usd_h * (d->cfg->daemon.kill_grace_s + d->cfg->daemon.tick_s) / 3600.0;
        double bill = spw_daemon_attempt_usd(d, j, now);
        if (bill < compute - margin)
            continue;
        set_reason(j, "stopped: reached its worst-case cost ($%.4f billed of the $%.4f "
                   "reserved for its compute)", bill, compute);
        say(d, "job %s %s", j->id, j->reason);
        if (j->running) {
            spw_error_t err;
            if (JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, now, &err) < 0) {
                say(d, "job %s: cannot stop it: %s", j->id, err.text);
                continue;
            }
            j->stop_cost = 1;
            job_save(d, j, SPW_JU_REASON);
        } else {
            eng_finish(d, j, now);
            job_end(d, j, SPW_DJOB_FAILED, now);
        }
    }
}

/* Jobs the engine rejected in the last schedule (a budget ran out under
 * on_exhausted: reject) end as rejected. */
static void end_rejected(spw_daemon_t *d, spw_job_t **rej, size_t n, double now)
{
    for (size_t i = 0; i < n; i++) {
        djob_t *j = (djob_t *)((char *)rej[i] - offsetof(djob_t, ej));
        set_reason(j, "%s", spw_reason_text(j->ej.reason));
        say(d, "job %s %s", j->id, j->reason);
        job_end(d, j, SPW_DJOB_REJECTED, now);
    }
}

/* Queued jobs the engine held (a budget or cap had no room for their worst
 * case) since they were last saved: their held count and reason are
 * written, so they survive a restart and `show` says why. */
static void save_held(spw_daemon_t *d)
{
    while (d->job_lo < d->njobs &&
           (!d->jobs[d->job_lo] || spw_djob_state_terminal(d->jobs[d->job_lo]->st)))
        d->job_lo++;
    for (size_t s = d->job_lo; s < d->njobs; s++) {
        djob_t *j = d->jobs[s];
        if (!j || j->ej.held == j->held_saved || spw_djob_state_terminal(j->st))
            continue;
        unsigned set = SPW_JU_MONEY;
        if (j->st == SPW_DJOB_QUEUED &&
            (j->ej.reason == SPW_REASON_HELD_BUDGET || j->ej.reason == SPW_REASON_HELD_CAP ||
             j->ej.reason == SPW_REASON_ONPREM_ONLY_BUDGET)) {
            set_reason(j, "%s", spw_reason_text(j->ej.reason));
            set |= SPW_JU_REASON;
        }
        job_save(d, j, set);
    }
}

/* ---- submits ------------------------------------------------------------ */

/* Turns committed spec r into a job and hands it to the engine. */
static void job_from_submit(spw_daemon_t *d, subreq_t *r, double now)
{
    djob_t *j = job_new(d, strtoll(r->id + 2, NULL, 10));
    j->spec = *r->spec;
    memset(r->spec, 0, sizeof(*r->spec));
    j->team = spw_xstrdup(j->spec.team ? j->spec.team : "");
    j->name = j->spec.name ? spw_xstrdup(j->spec.name) : NULL;
    j->st = SPW_DJOB_QUEUED;
    j->submit_ts = now;
    j->gpus = j->spec.gpus;
    j->gpu_mask = r->mask;
    j->ej.submit_s = now;
    j->ej.est_runtime_s = isnan(j->spec.est_runtime_s) ? d->cfg->daemon.default_est_runtime_s
                                                       : j->spec.est_runtime_s;
    j->ej.gpus = j->gpus;
    j->ej.gpu_mask = j->gpu_mask;
    j->ej.priority = j->spec.priority;
    j->ej.gpus_per_node = j->spec.gpus_per_node;
    j->ej.deadline_s = j->spec.deadline_s;
    job_gov(d, j);
    if (isnan(d->since_ts))
        d->since_ts = now;
    spw_engine_submit(d->engine, &j->ej, now);
    if (j->ej.state == SPW_JOB_UNSCHEDULABLE) {
        set_reason(j, "%s", spw_reason_text(j->ej.reason));
        job_end(d, j, SPW_DJOB_FAILED, now);
    }
    d->submitted++;
}

/* Commits every pending submit in one transaction and wakes the callers. */
static void commit_submits(spw_daemon_t *d, double now)
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
        note_commit(d, 0, err.text);
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
    r->next = NULL;
    *d->subq_tail = r;
    d->subq_tail = &r->next;
    if (!d->started) {
        d->now = fmax(spw_daemon_clock(), d->now);
        commit_submits(d, d->now);
        return r->status;
    }
    pthread_cond_signal(&d->wake);
    while (!r->status)
        pthread_cond_wait(&d->committed, &d->mu);
    return r->status;
}

/* ---- spot capacity ------------------------------------------------------- */

/* Tells the engine the spot capacity of each offer that has an
 * availability trace (spot.availability), as of now, whenever it changes.
 * The emulated provider preempts and refuses spot instances from the same
 * trace with the same start, so both see the same ticks. */
static void spot_capacity(spw_daemon_t *d, double now)
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
        say(d, "spot capacity of %s: %u instance(s)",
            spw_daemon_offer_name(&d->fleet.offers[i], on, sizeof(on)), n);
        d->spot_cap[i] = n;
        spw_engine_set_spot_capacity(d->engine, i, n, now);
    }
}

/* ---- the turn ------------------------------------------------------------- */

/* Notes whether a commit worked, for /healthz. */
static void note_commit(spw_daemon_t *d, int ok, const char *why)
{
    pthread_mutex_lock(&d->hmu);
    int was = d->commit_failing;
    if (ok) {
        d->commit_failing = 0;
    } else {
        d->commit_failing = 1;
        d->commit_failures++;
        snprintf(d->commit_err, sizeof(d->commit_err), "%s", why);
    }
    pthread_mutex_unlock(&d->hmu);
    /* Said once when it starts and once when it ends, not every turn. */
    if (!ok && !was)
        say(d, "commits fail: %s; nothing is launched until a commit works (/healthz says "
            "503 meanwhile)", why);
    else if (ok && was)
        say(d, "commits work again");
}

/* Launch tokens whose attempts ended: their fences and exit records go once
 * the end is committed (an uncommitted end still needs the exit record
 * after a crash). */
static void gc_add(spw_daemon_t *d, const char *token)
{
    if (!token[0])
        return;
    if (d->ngc == d->capgc) {
        d->capgc = d->capgc ? 2 * d->capgc : 16;
        d->gc = spw_xrealloc(d->gc, d->capgc * sizeof(*d->gc));
    }
    d->gc[d->ngc++] = spw_xstrdup(token);
}

static void gc_run(spw_daemon_t *d)
{
    char path[4096];
    for (size_t i = 0; i < d->ngc; i++) {
        snprintf(path, sizeof(path), "%s/%s", d->run_dir, d->gc[i]);
        unlink(path);
        free(d->gc[i]);
    }
    d->ngc = 0;
}

/* Forks every launch whose intent the last commit made durable, in a
 * transaction of its own that records their handles (pid, start ticks).
 * Should that commit fail, recovery still finds each process by its
 * token. */
static void launch_pending(spw_daemon_t *d, double now)
{
    if (!d->npend)
        return;
    spw_error_t err;
    int tx = spw_store_begin(d->store, &err) == 0;
    for (size_t i = 0; i < d->npend; i++) {
        djob_t *j = d->jobs[d->pend[i]];
        if (j && j->pending)
            do_launch(d, j, now);
    }
    d->npend = 0;
    if (tx && spw_store_commit(d->store, &err) < 0) {
        say(d, "cannot record the processes just started: %s", err.text);
        spw_store_rollback(d->store);
    }
}

static void note_turn(spw_daemon_t *d, double s)
{
    size_t b = 0;
    while (b < SPW_HIST_BUCKETS && s > spw_daemon_hist_le[b])
        b++;
    d->turn_hist[b]++;
    d->turn_sum_s += s;
    d->turns++;
}

/* Jobs whose backend could not tell, at the daemon's start, whether their
 * launch runs (recover_placed): asked again every few seconds.  Found, the
 * job is re-adopted (and stopped, when a cancel came meanwhile); gone, its
 * attempt ended (or never started) while nobody could see it, and it is
 * retried or ends as recovery would have decided. */
#define UNSURE_RECHECK_S 2.0
static int readopt(spw_daemon_t *d, djob_t *j, spw_error_t *ferr);
static void recheck_unsure(spw_daemon_t *d, double now)
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
                say(d, "job %s: cannot stop it yet: %s", j->id, err.text);
            if (!j->cancel_req)
                set_reason(j, "re-adopted once its backend answered again");
            j->st = SPW_DJOB_RUNNING;
            job_save(d, j, SAVE_ALL);
            continue;
        }
        if (j->cancel_req) {
            set_reason(j, "cancelled by a user");
            eng_cancel(d, j, now);
            job_end(d, j, SPW_DJOB_CANCELLED, now);
        } else if (j->st == SPW_DJOB_PLACED || (uint32_t)j->attempts <= j->spec.retries) {
            set_reason(j, "requeued: its launch %s is gone (it ended, or never started, while "
                       "the daemon could not see it)", j->token);
            job_requeue(d, j, now);
        } else {
            set_reason(j, "its launch %s ended while the daemon could not see it (exit status "
                       "unknown)", j->token);
            eng_finish(d, j, now);
            job_end(d, j, SPW_DJOB_FAILED, now);
        }
        say(d, "job %s %s (%s)", j->id, spw_djob_state_name(j->st), j->reason);
    }
    d->nunsure = left;
}

static void turn_locked(spw_daemon_t *d)
{
    double now = spw_daemon_clock();
    if (now < d->now)
        now = d->now;   /* the engine needs a clock that never goes back */
    d->now = now;
    commit_submits(d, now);
    spw_daemon_pools_sync(d, now);
    spw_error_t err;
    int tx = spw_store_begin(d->store, &err) == 0;
    if (!tx) {
        /* Nothing this turn decides could be recorded (another process
         * holds the database, or it cannot be written): decide nothing.
         * Exits stay unreaped and placements unmade until a turn can
         * begin. */
        note_commit(d, 0, err.text);
        return;
    }
    d->write_failed = 0;
    spw_daemon_guard_flush(d);  /* the audit rows join the turn's commit */
    /* The cloud instances' hosts, the local backend, then each pool's own
     * (pools.c). */
    for (int32_t p = SPW_DAEMON_SLURM_CLOUD_POOL; p < (int32_t)d->fleet.npools; p++) {
        void *be;
        if ((p == SPW_DAEMON_CLOUD_POOL && !d->cloud_be) ||
            (p == SPW_DAEMON_SLURM_CLOUD_POOL && !d->scloud_be))
            continue;
        const struct spw_backend_ops *ops = spw_daemon_pool_ops(d, p, &be);
        if (p >= 0 && ops == d->be_ops)
            continue;
        ops->tick(be, now);
        if (ops->version >= 3 && ops->changed) {
            spw_handle_t hc[64];
            int nc;
            while ((nc = ops->changed(be, hc, 64)) > 0)
                for (int i = 0; i < nc; i++)
                    handle_changed(d, &hc[i], now);
        }
        spw_exit_t ex[64];
        int n;
        while ((n = ops->poll(be, ex, 64)) > 0)
            for (int i = 0; i < n; i++)
                handle_exit(d, &ex[i], now);
    }
    recheck_unsure(d, now);
    spw_inst_event_t ev[64];
    size_t m;
    while ((m = d->pv_ops->poll(d->pv, now, ev, 64)) > 0)
        for (size_t i = 0; i < m; i++)
            handle_inst_event(d, &ev[i], now);
    release_idle(d, now);
    stop_over_worst_case(d, now);
    spot_capacity(d, now);
    spw_job_t **placed, **rejected;
    double t0 = mono();
    size_t np = spw_engine_schedule(d->engine, now, &placed);
    note_turn(d, mono() - t0);
    /* The engine reuses its placed and rejected arrays on the next call:
     * copy them. */
    size_t nr = spw_engine_rejected(d->engine, &rejected);
    spw_job_t **copy = np + nr ? spw_xmalloc((np + nr) * sizeof(*copy)) : NULL;
    if (np)
        memcpy(copy, placed, np * sizeof(*copy));
    if (nr)
        memcpy(copy + np, rejected, nr * sizeof(*copy));
    if (nr)
        end_rejected(d, copy + np, nr, now);
    for (size_t i = 0; i < np; i++) {
        djob_t *j = (djob_t *)((char *)copy[i] - offsetof(djob_t, ej));
        record_decision(d, j, now);
        if (j->ej.state == SPW_JOB_ONPREM)
            place_onprem(d, j, now);
        else
            place_cloud(d, j, now);
    }
    free(copy);
    /* On-demand jobs ahead of uniform progress, with spot free: stopped
     * (SIGTERM lets them checkpoint) and re-placed on spot next turn, once
     * their process has exited. */
    spw_job_t **moves;
    size_t nm = spw_engine_switches(d->engine, &moves);
    copy = nm ? spw_xmalloc(nm * sizeof(*copy)) : NULL;
    if (nm)
        memcpy(copy, moves, nm * sizeof(*copy));
    for (size_t i = 0; i < nm; i++)
        job_interrupt(d, (djob_t *)((char *)copy[i] - offsetof(djob_t, ej)),
                      SPW_INTERRUPT_SWITCH, "ahead of uniform progress with spot free: moving "
                      "from on demand to spot", now);
    free(copy);
    save_held(d);
    /* The emulated cloud's state file: once per turn, before the commit. */
    if (d->pv_ops->emulated && spw_emulated_flush(d->pv, &err) < 0)
        say(d, "cannot save the emulated cloud's state: %s", err.text);
    int failing;
    pthread_mutex_lock(&d->hmu);
    failing = d->commit_failing;
    pthread_mutex_unlock(&d->hmu);
    if (failing) {
        /* The last commit failed, so it undid what it held: write every job
         * written since the last commit that worked again, whole (launch
         * intents waiting included), and a heartbeat that tells whether
         * commits work again. */
        for (size_t i = 0; i < d->ntouched; i++) {
            djob_t *j = d->jobs[d->touched[i]];
            if (j)
                job_save(d, j, SAVE_ALL);
        }
        if (spw_store_heartbeat(d->store, now, &err) < 0)
            d->write_failed = 1;
    }
    if (d->write_failed) {
        /* Keep what did get written, but launch nothing: an intent may be
         * among what failed.  The next turn writes them again. */
        if (spw_store_commit(d->store, &err) < 0)
            spw_store_rollback(d->store);
        note_commit(d, 0, "a write to the database failed (see the daemon's log)");
        return;
    }
    if (spw_store_commit(d->store, &err) < 0) {
        spw_store_rollback(d->store);
        note_commit(d, 0, err.text);
        return;   /* its launch intents wait for a commit that works */
    }
    note_commit(d, 1, NULL);
    for (size_t i = 0; i < d->ntouched; i++)
        if (d->jobs[d->touched[i]])
            d->jobs[d->touched[i]]->touched = 0;
    d->ntouched = 0;
    gc_run(d);
    launch_pending(d, now);
}

void spw_daemon_turn(spw_daemon_t *d)
{
    pthread_mutex_lock(&d->mu);
    turn_locked(d);
    pthread_mutex_unlock(&d->mu);
}

static void *loop_main(void *arg)
{
    spw_daemon_t *d = arg;
    /* Named, so that an operator (top -H) and tests/daemon/healthz_stall.sh
     * can tell the scheduler thread from the HTTP and sampler threads. */
    pthread_setname_np(pthread_self(), "spw-loop");
    pthread_mutex_lock(&d->mu);
    while (!d->stopping) {
        turn_locked(d);
        pthread_mutex_lock(&d->hmu);
        d->turn_mono = mono();
        d->loop_running = 1;
        pthread_mutex_unlock(&d->hmu);
        if (d->subq)
            continue;
        double sleep_s = d->cfg->daemon.tick_s;
        double wake = spw_engine_next_wakeup(d->engine);
        if (wake - d->now < sleep_s)
            sleep_s = wake - d->now > 0.001 ? wake - d->now : 0.001;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + ts.tv_nsec / 1e9 + sleep_s;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!d->subq && !d->stopping)
            pthread_cond_timedwait(&d->wake, &d->mu, &ts);
    }
    pthread_mutex_lock(&d->hmu);
    d->loop_running = 0;
    pthread_mutex_unlock(&d->hmu);
    /* Wake any submitter left behind. */
    for (subreq_t *r = d->subq; r; r = r->next) {
        spw_errorf(&r->err, "the daemon is shutting down");
        r->status = 503;
    }
    d->subq = NULL;
    d->subq_tail = &d->subq;
    pthread_cond_broadcast(&d->committed);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int spw_daemon_start(spw_daemon_t *d, spw_error_t *err)
{
    pthread_mutex_lock(&d->mu);
    d->started = 1;
    int rc = pthread_create(&d->thread, NULL, loop_main, d);
    if (rc) {
        d->started = 0;
        pthread_mutex_unlock(&d->mu);
        return spw_errorf(err, "cannot start the scheduler loop: %s", strerror(rc));
    }
    pthread_mutex_unlock(&d->mu);
    d->ui = spw_ui_create(d, &d->cfg->daemon, 1);
    return 0;
}

/* ---- health ------------------------------------------------------------- */

int spw_daemon_health_state(spw_daemon_t *d, char *why, size_t len, double *turn_age_s)
{
    /* Under hmu only: a loop stuck while holding mu must not stall this. */
    double stall_s = fmax(SPW_DAEMON_STALL_S, 50 * d->cfg->daemon.tick_s);
    pthread_mutex_lock(&d->hmu);
    double age = d->loop_running ? mono() - d->turn_mono : NAN;
    int failing = d->commit_failing, running = d->loop_running;
    snprintf(why, len, "commits to the database fail: %s", d->commit_err);
    pthread_mutex_unlock(&d->hmu);
    *turn_age_s = age;
    if (failing)
        return 1;
    if (!running) {
        snprintf(why, len, "the scheduler loop is not running");
        return 2;
    }
    if (age > stall_s) {
        snprintf(why, len, "the scheduler loop has completed no turn for %.1f s (limit %.1f s)",
                 age, stall_s);
        return 1;
    }
    why[0] = '\0';
    return 0;
}

spw_ui_t *spw_daemon_ui(spw_daemon_t *d)
{
    return d->ui;
}

/* ---- cancel and preempt (API) -------------------------------------------- */

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
            note_commit(d, 0, err->text);
            return 503;
        }
    }
    if (j->unsure) {
        /* Whether its launch runs is not known yet (recovery): the cancel
         * is applied once its backend answers (recheck_unsure). */
        j->cancel_req = 1;
        set_reason(j, "cancel requested; applied once its backend answers again");
        job_save(d, j, SPW_JU_REASON | SPW_JU_CANCEL);
    } else if (j->running) {
        if (!j->cancel_req && JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, now, err) < 0) {
            /* Recorded: its exit ends it cancelled, and a restart stops it. */
            say(d, "job %s: cannot signal it yet: %s", j->id, err->text);
        }
        j->cancel_req = 1;
        set_reason(j, "cancel requested; stopping its processes");
        job_save(d, j, SPW_JU_REASON | SPW_JU_CANCEL);
    } else {
        j->cancel_req = 1;
        set_reason(j, "cancelled by a user");
        eng_cancel(d, j, now);
        job_end(d, j, SPW_DJOB_CANCELLED, now);
    }
    pthread_cond_signal(&d->wake);
    return 200;
}

int spw_daemon_do_preempt(spw_daemon_t *d, const char *instance_id, spw_error_t *err)
{
    dinst_t *x = inst_find(d, instance_id);
    if (!x)
        return spw_errorf(err, "no instance %s", instance_id), 404;
    if (!spw_instance_state_live(x->in.state))
        return spw_errorf(err, "instance %s has already ended (%s)", instance_id,
                          spw_instance_state_name(x->in.state)), 409;
    if (!d->pv_ops->emulated)
        return spw_errorf(err, "only emulated instances can be preempted by hand"), 400;
    double now = fmax(spw_daemon_clock(), d->now);
    if (spw_emulated_preempt(d->pv, instance_id, now, err) < 0)
        return errno == ENOENT ? 404 : 409;
    pthread_cond_signal(&d->wake);
    return 200;
}

/* ---- on-prem nodes ------------------------------------------------------------ */

/* Takes node `node` of pool `pool` out of service at now: every job on it
 * is interrupted (its process stopped; it resumes from its checkpoint
 * wherever the engine places it next), then the engine stops using the
 * node.  `ids`, when not NULL, collects the jobs' ids. */
static void node_down_now(spw_daemon_t *d, size_t pool, uint32_t node, char **ids, double now)
{
    size_t used = 0, cap = 0;
    char what[200];
    snprintf(what, sizeof(what), "node %s/%u went down", d->fleet.pools[pool].name, node);
    for (size_t s = d->job_lo; s < d->njobs; s++) {
        djob_t *j = d->jobs[s];
        if (!j || j->ej.state != SPW_JOB_ONPREM || j->ej.pool != (int32_t)pool ||
            !spw_engine_job_on_node(&j->ej, pool, node))
            continue;
        job_interrupt(d, j, SPW_INTERRUPT_NODE_FAILED, what, now);
        if (!ids)
            continue;
        if (used + SPW_STORE_ID_LEN + 2 > cap) {
            cap = 2 * cap + 4 * SPW_STORE_ID_LEN;
            *ids = spw_xrealloc(*ids, cap);
        }
        used += (size_t)snprintf(*ids + used, cap - used, "%s%s", used ? "," : "", j->id);
    }
    spw_daemon_pools_node_down(d, pool, node, now);   /* foreign jobs' hold (Slurm) */
    if (spw_engine_node_down(d->engine, pool, node, 1, now) < 0)
        say(d, "the engine refused to take node %s/%u down", d->fleet.pools[pool].name, node);
    d->node_down[pool][node] = 1;
}

int spw_daemon_do_node(spw_daemon_t *d, size_t pool, uint32_t node, int down, char **ids,
                       spw_error_t *err)
{
    const char *name = d->fleet.pools[pool].name;
    if (!d->node_down[pool][node] == !down)
        return spw_errorf(err, "node %s/%u is already %s", name, node, down ? "down" : "up"), 409;
    double now = fmax(spw_daemon_clock(), d->now);
    d->now = now;
    /* One transaction: the node's state and what happened to its jobs. */
    spw_error_t e2;
    int tx = spw_store_begin(d->store, &e2) == 0;
    if (spw_store_node_set(d->store, name, node, down, now, &e2) < 0) {
        if (tx)
            spw_store_rollback(d->store);
        return spw_errorf(err, "cannot record the node's state: %s", e2.text), 503;
    }
    if (down) {
        node_down_now(d, pool, node, ids, now);
        d->node_failures++;
        say(d, "node %s/%u is down (by an administrator)", name, node);
    } else {
        if (spw_engine_node_down(d->engine, pool, node, 0, now) < 0)
            say(d, "the engine refused to bring node %s/%u back", name, node);
        d->node_down[pool][node] = 0;
        say(d, "node %s/%u is up again", name, node);
    }
    if (tx && spw_store_commit(d->store, &e2) < 0)
        say(d, "cannot commit the state of node %s/%u: %s", name, node, e2.text);
    pthread_cond_signal(&d->wake);
    return 200;
}

int spw_daemon_pool_index(const spw_daemon_t *d, const char *name)
{
    for (size_t i = 0; i < d->fleet.npools; i++)
        if (strcmp(d->fleet.pools[i].name, name) == 0)
            return (int)i;
    return -1;
}

typedef struct nodectx {
    spw_daemon_t *d;
} nodectx_t;

static int load_node(const spw_store_node_t *n, void *arg)
{
    spw_daemon_t *d = ((nodectx_t *)arg)->d;
    int p = spw_daemon_pool_index(d, n->pool);
    if (p < 0 || n->node < 0 || (uint64_t)n->node >= d->fleet.pools[p].nnodes) {
        say(d, "node %s/%" PRId64 " was down, but the config no longer has it", n->pool, n->node);
        return 0;
    }
    d->node_down[p][n->node] = 2;   /* down in the store; the engine not told yet */
    return 0;
}

/* After recovery: the nodes an administrator took down stay down. */
static int restore_nodes(spw_daemon_t *d, spw_error_t *err)
{
    nodectx_t c = {d};
    if (spw_store_node_list(d->store, load_node, &c, err) < 0)
        return -1;
    for (size_t p = 0; p < d->fleet.npools; p++)
        for (uint32_t n = 0; n < d->fleet.pools[p].nnodes; n++)
            if (d->node_down[p][n] == 2) {
                node_down_now(d, p, n, NULL, d->now);
                say(d, "node %s/%u stays down", d->fleet.pools[p].name, n);
            }
    return 0;
}

/* ---- deadlines ----------------------------------------------------------------- */

double spw_daemon_est_end(const spw_daemon_t *d, const djob_t *j)
{
    if (spw_djob_state_terminal(j->st))
        return j->end_ts;
    double left = j->ej.est_runtime_s - j->ej.done_s;
    if (!(left > 0))
        left = 0;
    double start = j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD ? j->ej.start_s
                                                                                 : d->now;
    if (!isfinite(start))
        start = d->now;
    /* Every attempt first pays the restart overhead without progress. */
    return start + d->cfg->policy.restart_overhead_s + left;
}

/* ---- validation ------------------------------------------------------------ */

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
        spw_errorf(err, "field 'gpus': no pool or cloud offer has GPU model %s (the fleet has: %s)",
                   s->gpu_models[0], m->n ? have : "no named models");
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

/* ---- create, recover, destroy --------------------------------------------------- */

static int mkdir_p(const char *path, spw_error_t *err)
{
    char *p = spw_xstrdup(path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0750) < 0 && errno != EEXIST) {
                spw_errorf(err, "cannot create directory %s: %s", p, strerror(errno));
                free(p);
                return -1;
            }
            *s = '/';
        }
    free(p);
    if (mkdir(path, 0750) < 0 && errno != EEXIST)
        return spw_errorf(err, "cannot create directory %s: %s", path, strerror(errno));
    return 0;
}

/* Makes `path` (created empty if missing) and its SQLite companions
 * PATH-wal and PATH-shm, where they exist, readable by the daemon only. */
static int private_file(const char *path, spw_error_t *err)
{
    char side[4200];
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) < 0) {
        spw_errorf(err, "cannot make %s private to the daemon: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    for (int i = 0; i < 2; i++) {
        snprintf(side, sizeof(side), "%s-%s", path, i ? "shm" : "wal");
        if (chmod(side, 0600) < 0 && errno != ENOENT)
            return spw_errorf(err, "cannot make %s private to the daemon: %s", side,
                              strerror(errno));
    }
    return 0;
}

static int copy_fleet(spw_daemon_t *d, const spw_fleet_t *src, spw_error_t *err)
{
    spw_fleet_t *f = &d->fleet;
    spw_perf_copy(&f->perf, &src->perf);   /* the GPU performance model */
    for (int k = 0; k < src->models.n; k++)
        if (spw_models_intern(&f->models, src->models.name[k], strlen(src->models.name[k]), err) < 0)
            return -1;
    f->npools = src->npools;
    f->pools = spw_xcalloc(src->npools ? src->npools : 1, sizeof(spw_pool_spec_t));
    d->node_used = spw_xcalloc(src->npools ? src->npools : 1, sizeof(uint64_t *));
    d->node_down = spw_xcalloc(src->npools ? src->npools : 1, sizeof(uint8_t *));
    d->pool_busy = spw_xcalloc(src->npools ? src->npools : 1, sizeof(uint64_t));
    for (size_t i = 0; i < src->npools; i++) {
        const spw_pool_spec_t *s = &src->pools[i];
        spw_pool_spec_t *p = &f->pools[i];
        p->name = spw_xstrdup(s->name);
        p->nnodes = s->nnodes;
        p->node_gpus = spw_xmalloc(s->nnodes * sizeof(uint16_t));
        memcpy(p->node_gpus, s->node_gpus, s->nnodes * sizeof(uint16_t));
        p->model = s->model;
        p->cost_usd_per_gpu_h = s->cost_usd_per_gpu_h;
        p->has_owned = s->has_owned;
        p->owned = s->owned;
        d->node_used[i] = spw_xcalloc(s->nnodes, sizeof(uint64_t));
        d->node_down[i] = spw_xcalloc(s->nnodes ? s->nnodes : 1, sizeof(uint8_t));
        for (uint32_t n = 0; n < s->nnodes; n++)
            if (s->node_gpus[n] > 64)
                return spw_errorf(err, "pool %s: node %u has %u GPUs; the local backend runs nodes of "
                                  "at most 64", s->name, n, s->node_gpus[n]);
    }
    f->noffers = src->noffers;
    f->offers = spw_xcalloc(src->noffers ? src->noffers : 1, sizeof(spw_offer_t));
    for (size_t i = 0; i < src->noffers; i++) {
        const spw_offer_t *s = &src->offers[i];
        spw_offer_t *o = &f->offers[i];
        *o = *s;
        o->provider = spw_xstrdup(s->provider);
        o->region = spw_xstrdup(s->region);
        o->zone = spw_xstrdup(s->zone);
        o->instance_type = spw_xstrdup(s->instance_type);
    }
    spw_gov_clear(&f->gov);
    spw_gov_copy(&f->gov, &src->gov);
    /* The daemon's engine runs on unix time: its time 0 is the epoch (a
     * config's sim: start is for the simulator). */
    f->gov.origin_s = 0;
    const spw_gov_t *g = &f->gov;
    d->money_limits = isfinite(g->max_cloud_usd_per_h) || isfinite(g->max_cloud_gpus);
    for (size_t i = 0; i < g->nteams; i++)
        d->money_limits |= isfinite(g->teams[i].budget_usd) ||
                           isfinite(g->teams[i].max_cloud_usd_per_h) ||
                           isfinite(g->teams[i].max_cloud_gpus) ||
                           isfinite(g->teams[i].max_egress_usd_per_month);
    return 0;
}

/* Which spot.availability entry applies to each offer (the last that
 * matches), where their traces start (the daemon's start, less each
 * entry's start_offset), and the per-offer state of spot capacity and
 * capacity-error backoffs. */
static void spot_setup(spw_daemon_t *d)
{
    size_t n = d->fleet.noffers;
    d->offer_avail = spw_xmalloc((n + 1) * sizeof(int32_t));
    d->spot_cap = spw_xmalloc((n + 1) * sizeof(uint32_t));
    d->backoff_s = spw_xcalloc(2 * n + 2, sizeof(double));
    d->spot_trace_start_ts = d->started_ts;
    for (size_t i = 0; i < n; i++) {
        d->offer_avail[i] = spw_spot_avail_of(d->cfg, &d->fleet.offers[i]);
        d->spot_cap[i] = UINT32_MAX;
    }
}

/* nvidia-smi's GPU count replaces the slots of a one-node pool. */
static void detect_gpus(spw_daemon_t *d)
{
    if (!d->cfg->daemon.gpus_auto || d->fleet.npools != 1 || d->fleet.pools[0].nnodes != 1)
        return;
    int count;
    spw_error_t err;
    if (spw_local_detect_gpus(&count, &err) < 0) {
        say(d, "no GPU detected (%s); pool %s uses its %u configured slots", err.text,
            d->fleet.pools[0].name, d->fleet.pools[0].node_gpus[0]);
        return;
    }
    if (count > 0 && count <= 64) {
        say(d, "nvidia-smi found %d GPU(s): pool %s uses them", count, d->fleet.pools[0].name);
        d->fleet.pools[0].node_gpus[0] = (uint16_t)count;
    }
}

static int offer_by_name(const spw_daemon_t *d, const char *name)
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

typedef struct loadctx {
    spw_daemon_t *d;
    spw_error_t *err;
    int failed;
} loadctx_t;

static int load_job(const spw_store_job_t *r, void *arg)
{
    loadctx_t *c = arg;
    spw_daemon_t *d = c->d;
    djob_t *j = job_new(d, r->seq);
    if (strcmp(j->id, r->id) != 0) {
        c->failed = 1;
        spw_errorf(c->err, "the database holds job %s at sequence %" PRId64 "; expected %s", r->id,
                   r->seq, j->id);
        return 1;
    }
    spw_jobspec_t spec;
    spw_error_t e2;
    if (spw_jobspec_parse(r->id, r->spec_json, strlen(r->spec_json), &spec, &e2) < 0) {
        c->failed = 1;
        spw_errorf(c->err, "the database holds a job spec this version cannot read: %s", e2.text);
        return 1;
    }
    j->team = spw_xstrdup(r->team ? r->team : "");
    j->name = spec.name ? spw_xstrdup(spec.name) : NULL;
    j->st = r->state;
    j->submit_ts = r->submit_ts;
    j->placed_ts = r->placed_ts;
    j->start_ts = r->start_ts;
    j->end_ts = r->end_ts;
    j->attempts = r->attempts;
    j->has_exit = r->has_exit_code;
    j->exit_code = r->exit_code;
    j->reason = r->reason ? spw_xstrdup(r->reason) : NULL;
    j->gpus = spec.gpus;
    j->cloud_usd = r->cloud_usd;
    j->onprem_usd = r->cost_usd > r->cloud_usd ? r->cost_usd - r->cloud_usd : 0;
    j->charge_ts = r->charge_ts;
    j->led_usd = r->ledger_usd;
    j->led_egress_usd = r->ledger_egress_usd;
    j->ej.reserved_usd = r->reserved_usd;
    j->ej.egress_usd = r->egress_usd;
    j->ej.egress_gb = r->egress_gb;
    j->ej.held = j->held_saved = (uint32_t)r->held;
    j->ej.done_s = r->done_s;
    j->ej.lost_s = r->lost_s;
    j->ej.lost_gpu_s = r->lost_gpu_s;
    j->ej.spot_gpu_s = r->spot_gpu_s;
    j->ej.ondemand_gpu_s = r->ondemand_gpu_s;
    j->ej.restarts = (uint32_t)r->restarts;
    j->ej.preemptions = (uint32_t)r->preemptions;
    j->ej.failures = (uint32_t)r->failures;
    j->ej.last_offer = r->last_offer >= 0 && (uint64_t)r->last_offer < d->fleet.noffers
                           ? (int32_t)r->last_offer
                           : -1;
    j->last_spot = r->spot;
    j->ej.team = (uint32_t)(spw_gov_team(&d->fleet.gov, j->team) + 1);
    j->gpus_assigned = r->gpus_assigned ? spw_xstrdup(r->gpus_assigned) : NULL;
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
        j->offer = offer_by_name(d, r->placement + 6);
    }
    if (isnan(d->since_ts) || r->submit_ts < d->since_ts)
        d->since_ts = r->submit_ts;
    if (spw_djob_state_terminal(j->st)) {
        spw_jobspec_free(&spec);
    } else {
        j->spec = spec;
    }
    return 0;
}

static int load_inst(const spw_store_instance_t *r, void *arg)
{
    loadctx_t *c = arg;
    spw_daemon_t *d = c->d;
    int offer = offer_by_name(d, r->offer);
    if (offer < 0) {
        say(d, "instance %s: offer %s is no longer in the config; it is kept for its cost only",
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
    size_t xi = inst_add(d, &in);
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

/* Hands every live cloud instance to the provider's reconcile; releases
 * the orphans it reports (acquired but never recorded). */
static int reconcile(spw_daemon_t *d, spw_error_t *err)
{
    size_t nlive = 0;
    spw_instance_t *known = spw_xcalloc(d->ninst + 1, sizeof(spw_instance_t));
    for (size_t i = 0; i < d->ninst; i++)
        if (spw_instance_state_live(d->inst[i].in.state))
            known[nlive++] = d->inst[i].in;
    size_t max = 16, norph = 0;
    spw_instance_t *orph = NULL;
    for (;;) {
        orph = spw_xrealloc(orph, max * sizeof(spw_instance_t));
        if (d->pv_ops->reconcile(d->pv, known, nlive, d->now, orph, max, &norph, err) < 0) {
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
        if (d->pv_ops->release(d->pv, &orph[i], d->now, &e2) < 0) {
            say(d, "cannot release orphan instance %s: %s", orph[i].id, e2.text);
            continue;
        }
        say(d, "released instance %s, acquired before a crash but never recorded", orph[i].id);
        orph[i].state = SPW_INSTANCE_RELEASED;
        orph[i].ended_s = d->now;
        size_t xi = inst_add(d, &orph[i]);
        inst_insert(d, &d->inst[xi]);
        inst_save(d, &d->inst[xi]);
    }
    free(known);
    free(orph);
    return 0;
}

/* Fills the engine record of a live job loaded from the database. */
static void engine_fields(spw_daemon_t *d, djob_t *j)
{
    j->ej.submit_s = j->submit_ts;
    j->ej.est_runtime_s = isnan(j->spec.est_runtime_s) ? d->cfg->daemon.default_est_runtime_s
                                                       : j->spec.est_runtime_s;
    j->ej.gpus = j->gpus;
    spw_error_t e2;
    j->gpu_mask = spw_daemon_mask(d, &j->spec, &e2);
    j->ej.gpu_mask = j->gpu_mask;
    j->ej.priority = j->spec.priority;
    j->ej.gpus_per_node = j->spec.gpus_per_node;
    j->ej.deadline_s = j->spec.deadline_s;
    job_gov(d, j);
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
        say(d, "job %s: re-adopted %s job %s", j->id, pops->name, ph.ext);
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
    h.max_runtime_s = run_limit(d, j);
    pid_t pid = h.pid;
    if (d->be_ops->adopt(d->be, &h, &err) < 0)
        return -1;
    j->h = h;
    j->running = 1;
    if (isnan(j->start_ts))
        j->start_ts = d->now;
    say(d, "job %s: re-adopted its process %ld", j->id, (long)pid);
    return 0;
}

/* A placed job whose process is gone after a restart. */
static void recover_gone(spw_daemon_t *d, djob_t *j)
{
    spw_exit_kind_t kind;
    int status;
    /* The exit record of the attempt its intent names (by token); rows
     * from before schema 4 have theirs by job id. */
    int known = j->token[0] ? spw_local_read_exit_token(d->run_dir, j->token, &kind, &status) == 0
                            : spw_local_read_exit(d->log_dir, j->id, &kind, &status) == 0;
    if (known) {
        if (j->attempts == 0)
            j->attempts = 1;   /* launched in the instant before it was recorded */
        j->has_exit = 1;
        j->exit_code = kind == SPW_EXIT_EXITED ? status : 128 + status;
    }
    if (j->cancel_req) {
        /* An acknowledged cancel: it ends cancelled, whatever its exit. */
        set_reason(j, "cancelled by a user");
        job_end(d, j, SPW_DJOB_CANCELLED, d->now);
        return;
    }
    if (known && kind == SPW_EXIT_EXITED && status == 0) {
        set_reason(j, "exited 0 while the daemon was down");
        job_end(d, j, SPW_DJOB_SUCCEEDED, d->now);
        return;
    }
    if (known && (uint32_t)j->attempts > j->spec.retries) {
        set_reason(j, "%s %d while the daemon was down", kind == SPW_EXIT_EXITED ? "exited with" : "killed by signal",
                   status);
        job_end(d, j, SPW_DJOB_FAILED, d->now);
        return;
    }
    if (j->st == SPW_DJOB_PLACED && !j->h.pid && !known) {
        set_reason(j, "requeued: placed but not started when the daemon stopped");
    } else if ((uint32_t)j->attempts <= j->spec.retries) {
        set_reason(j, "its process ended while the daemon was down; retry %d of %u", j->attempts,
                   j->spec.retries);
    } else {
        set_reason(j, "its process ended while the daemon was down (exit status unknown)");
        job_end(d, j, SPW_DJOB_FAILED, d->now);
        return;
    }
    j->pool = j->node = -1;
    free(j->gpus_assigned);
    j->gpus_assigned = NULL;
    j->h.pid = 0;
    j->token[0] = '\0';
    unbind_instances(d, j, d->now);
    j->st = SPW_DJOB_QUEUED;
    j->placed_ts = j->start_ts = NAN;
    job_save(d, j, SAVE_ALL);
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
             * meanwhile; the loop asks again (recheck_unsure). */
            if (spw_engine_restore(d->engine, &j->ej) < 0)
                return spw_errorf(err, "job %s: cannot tell whether it runs (%s), and its "
                                  "GPUs are taken after a config change", j->id, uerr.text);
            j->unsure = 1;
            d->nunsure++;
            say(d, "job %s: cannot tell yet whether its launch %s runs (%s); keeping its "
                "placement and asking again", j->id, j->token, uerr.text);
        } else if (rc < 0 || spw_engine_restore(d->engine, &j->ej) < 0) {
            ej_reset(j);
            if (j->running) {
                spw_error_t err;
                JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, d->now, &err);
                j->cancel_req = 1;
                set_reason(j, "its GPUs are taken after a config change; stopping it");
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
            j->st = SPW_DJOB_RUNNING;
        job_save(d, j, SAVE_ALL);
        return 0;
    }
    if (j->offer < 0 || j->ninst == 0) {
        j->ej.reserved_usd = 0;   /* its instances are gone: nothing to hold */
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
    j->ej.charge_s = isnan(j->charge_ts) ? j->ej.placed_s : j->charge_ts;
    double egress = j->ej.egress_usd;
    j->ej.egress_usd = egress > j->led_egress_usd ? egress - j->led_egress_usd : 0;
    int restored = spw_engine_restore(d->engine, &j->ej) == 0;
    j->ej.egress_usd = egress;
    if (!restored) {
        ej_reset(j);
        recover_gone(d, j);
        return 0;
    }
    if ((rc = readopt(d, j, err)) == -2)
        return -1;   /* cloud jobs run on the local backend (see above) */
    if (rc == 0) {
        j->st = SPW_DJOB_RUNNING;
        job_save(d, j, SAVE_ALL);
    } else if (j->st == SPW_DJOB_RUNNING || j->h.pid || j->token[0]) {
        /* It ended while the daemon was down (or its launch intent never
         * started): the attempt settles to what its instances billed up to
         * now. */
        eng_finish(d, j, d->now);
        ej_reset(j);
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
         * (job_interrupt), until a new launch replaces it. */
        for (size_t p = 0; p < d->fleet.npools; p++) {
            void *be;
            const struct spw_backend_ops *ops = spw_daemon_pool_ops(d, (int32_t)p, &be);
            if (ops == d->be_ops || ops->version < 2 || !ops->find)
                continue;
            spw_handle_t h;
            int rc = ops->find(be, j->token, &h, &err);
            if (rc < 0)
                say(d, "job %s: cannot tell whether its interrupted attempt %s still runs "
                    "in pool %s: %s", j->id, j->token, d->fleet.pools[p].name, err.text);
            if (rc != 1)
                continue;
            j->h = h;
            j->be_pool = (int32_t)p;
            j->running = 1;
            if (ops->cancel(be, &j->h, d->now, &err) < 0)
                say(d, "job %s: cannot stop its interrupted attempt: %s", j->id, err.text);
            else
                say(d, "job %s: stopping its interrupted attempt again (%s job %s)", j->id,
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
        say(d, "job %s: cannot stop the process of its interrupted attempt: %s", j->id, err.text);
    j->stopping = 1;
}

static int recover(spw_daemon_t *d, spw_error_t *err)
{
    loadctx_t c = {.d = d, .err = err};
    if (spw_store_job_list(d->store, NULL, load_job, &c, err) < 0 || c.failed)
        return -1;
    if (spw_store_instance_list(d->store, 0, load_inst, &c, err) < 0)
        return -1;
    if (reconcile(d, err) < 0)
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
    spw_govrt_t *rt = spw_engine_gov(d->engine);
    for (size_t s = 1; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (!j || !j->ej.team || !(j->led_usd > 0 || j->led_egress_usd > 0))
            continue;
        spw_govrt_add_settled(rt, (int)j->ej.team - 1, isnan(j->charge_ts) ? j->submit_ts : j->charge_ts,
                              j->led_usd, j->led_egress_usd);
    }
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
            unbind_instances(d, j, d->now);
            j->pool = j->node = j->offer = -1;
            free(j->gpus_assigned);
            j->gpus_assigned = NULL;
            j->st = SPW_DJOB_QUEUED;
            j->placed_ts = j->start_ts = NAN;
            set_reason(j, "requeued: placed after an interruption but not started when the "
                       "daemon stopped");
            job_save(d, j, SAVE_ALL);
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
            set_reason(j, "%s (after a config change)", spw_reason_text(j->ej.reason));
            job_end(d, j, SPW_DJOB_FAILED, d->now);
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
            continue;   /* stopped once its backend answers (recheck_unsure) */
        if (j->running) {
            spw_error_t e2;
            if (JOB_OPS(d, j)->cancel(JOB_BE(d, j), &j->h, d->now, &e2) < 0)
                say(d, "job %s: cannot stop it: %s", j->id, e2.text);
            continue;
        }
        set_reason(j, "cancelled by a user");
        eng_cancel(d, j, d->now);
        job_end(d, j, SPW_DJOB_CANCELLED, d->now);
    }
    if (d->njobs > 1)
        say(d, "recovered %zu jobs from %s: %zu queued, %zu re-adopted, %zu requeued, %zu "
            "cancels finished", d->njobs - 1, d->state_dir, queued, adopted, requeued, cancels);
    return 0;
}

/* After recovery: removes from STATE_DIR/run the fences and exit records
 * of attempts that are over (their job ended, or has another launch intent
 * now), which a crash kept from being removed after their end committed. */
static void sweep_run_dir(spw_daemon_t *d)
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
        say(d, "removed %zu fences and exit records of attempts that are over", removed);
}

spw_daemon_t *spw_daemon_create(const spw_config_t *cfg, const spw_daemon_opts_t *opts,
                                spw_error_t *err)
{
    spw_daemon_opts_t none = {0};
    if (!opts)
        opts = &none;
    spw_daemon_t *d = spw_xcalloc(1, sizeof(*d));
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->wake, NULL);
    pthread_cond_init(&d->committed, NULL);
    pthread_mutex_init(&d->hmu, NULL);
    d->cfg = cfg;
    spw_fleet_init(&d->fleet);
    d->quiet = opts->quiet;
    d->subq_tail = &d->subq;
    d->now = d->started_ts = spw_daemon_clock();
    d->since_ts = NAN;
    const char *sd = opts->state_dir ? opts->state_dir
                     : cfg->daemon.state_dir ? cfg->daemon.state_dir : "spillway-state";
    d->state_dir = spw_xstrdup(sd);
    size_t len = strlen(sd) + 16;
    d->log_dir = spw_xmalloc(len);
    snprintf(d->log_dir, len, "%s/logs", sd);
    d->run_dir = spw_xmalloc(len);
    snprintf(d->run_dir, len, "%s/run", sd);
    if (mkdir_p(d->state_dir, err) < 0 || mkdir_p(d->log_dir, err) < 0 ||
        mkdir_p(d->run_dir, err) < 0)
        goto error;
    /* Fences and exit records: the daemon's alone. */
    if (chmod(d->run_dir, 0700) < 0) {
        spw_errorf(err, "cannot make %s private: %s", d->run_dir, strerror(errno));
        goto error;
    }
    /* Checkpoint directories are handed to jobs that may run in another
     * working directory: an absolute path. */
    char *abs = realpath(d->state_dir, NULL);
    if (!abs) {
        spw_errorf(err, "cannot resolve the state dir %s: %s", d->state_dir, strerror(errno));
        goto error;
    }
    d->ckpt_dir = spw_xmalloc(strlen(abs) + sizeof("/checkpoints"));
    sprintf(d->ckpt_dir, "%s/checkpoints", abs);
    free(abs);
    if (mkdir_p(d->ckpt_dir, err) < 0)
        goto error;
    if (spw_jobusers_init(&d->users, &cfg->daemon, err) < 0)
        goto error;
    /* Jobs never need the logs (the API serves them) nor the database; a
     * job of another user must only be able to pass through the state dir
     * to its own checkpoint directory. */
    if (chmod(d->log_dir, 0700) < 0 ||
        chmod(d->state_dir, spw_jobusers_switch(&d->users) ? 0711 : 0700) < 0 ||
        chmod(d->ckpt_dir, spw_jobusers_switch(&d->users) ? 0711 : 0700) < 0) {
        spw_errorf(err, "cannot set the permissions of the state dir %s: %s", d->state_dir,
                   strerror(errno));
        goto error;
    }
    if (spw_jobusers_switch(&d->users)) {
        say(d, "jobs run as user %s (uid %ld)%s", d->users.dflt.name, (long)d->users.dflt.uid,
            d->users.nteams ? ", or their team's run_as user" : "");
        char blocker[4096];
        if (!spw_jobuser_reaches(&d->users.dflt, d->ckpt_dir, blocker, sizeof(blocker)))
            say(d, "warning: jobs running as %s cannot reach their checkpoint directories "
                "under %s: %s lets only its owner through; chmod o+x %s, or choose a "
                "--state-dir they can reach (jobs without a workdir will fail to start)",
                d->users.dflt.name, d->ckpt_dir, blocker, blocker);
    }
    else
        say(d, "jobs run as this daemon's own user (uid %ld): they can read any file it can, "
            "its config among them; run the daemon as root for per-job users "
            "(docs/daemon.md)", (long)geteuid());
    if (copy_fleet(d, &cfg->fleet, err) < 0)
        goto error;
    detect_gpus(d);
    if (spw_daemon_pools_setup(d, err) < 0)
        goto error;
    d->pool_gpus = spw_xcalloc(d->fleet.npools + 1, sizeof(uint64_t));
    for (size_t i = 0; i < d->fleet.npools; i++)
        for (uint32_t n = 0; n < d->fleet.pools[i].nnodes; n++)
            d->pool_gpus[i] += d->fleet.pools[i].node_gpus[n];
    /* A cloud worst case also covers what the daemon bills beyond a job's
     * max_runtime: the kill grace, and a turn each to notice the limit and
     * to reap the exit (and a second for rounding). */
    spw_policy_t pol = cfg->policy;
    pol.reserve_extra_s = cfg->daemon.kill_grace_s + 2 * cfg->daemon.tick_s + 1;
    if (!(d->engine = spw_engine_create(&d->fleet, &pol, err)))
        goto error;
    char *db = spw_xmalloc(strlen(sd) + 16);
    sprintf(db, "%s/spillway.db", sd);
    /* The database holds every job's spec (env values included): the
     * daemon's alone.  SQLite gives its -wal and -shm files the database's
     * mode, so making the file 0600 before the first open covers them. */
    if (private_file(db, err) < 0) {
        free(db);
        goto error;
    }
    spw_store_opts_t so = {.sync = opts->sync_full ? SPW_STORE_SYNC_FULL : SPW_STORE_SYNC_NORMAL};
    d->store = spw_store_open(db, &so, err);
    free(db);
    if (!d->store || spw_daemon_guard_init(d, err) < 0)
        goto error;
    if (spw_store_daemon_id(d->store, d->daemon_id, err) < 0)
        goto error;
    spw_local_opts_t lo = {.grace_s = cfg->daemon.kill_grace_s, .log_dir = d->log_dir,
                           .run_dir = d->run_dir};
    d->be_ops = &spw_local_ops;
    if (!(d->be = spw_local_create(&lo, err)))
        goto error;
    spot_setup(d);
    spw_emulated_offer_opts_t *eo = spw_xcalloc(d->fleet.noffers + 1, sizeof(*eo));
    for (size_t i = 0; i < d->fleet.noffers; i++) {
        eo[i].offer = i;
        eo[i].capacity = cfg->daemon.emulated_capacity;
        if (d->offer_avail[i] >= 0) {
            /* spot.availability: a trace, or a rate, for spot instances only */
            const spw_spot_avail_conf_t *a = &cfg->spot.avail[d->offer_avail[i]];
            eo[i].trace_path = a->trace_path;
            eo[i].trace_start_s = d->spot_trace_start_ts - a->start_offset_s;
            eo[i].preempt_rate_per_h = a->trace_path ? 0 : a->preempt_rate_per_h;
            eo[i].rate_ondemand = 0;
        } else {
            eo[i].preempt_rate_per_h = cfg->daemon.emulated_preempt_rate_per_h;
            eo[i].rate_ondemand = 1;   /* preemptions hit on-demand instances too */
        }
    }
    spw_emulated_opts_t emo = {
        .offers = d->fleet.offers,
        .noffers = d->fleet.noffers,
        .offer_opts = eo,
        .noffer_opts = d->fleet.noffers,
        .seed = cfg->daemon.emulated_seed,
        .state_dir = d->state_dir,
    };
    /* Instances that are real hosts (docs/hosts.md, "Cloud instances"). */
    if (cfg->daemon.emulated_boot_command) {
        if (cfg->daemon.emulated_hosts_dir) {
            d->cloud_hosts_dir = spw_xstrdup(cfg->daemon.emulated_hosts_dir);
        } else {
            size_t n = strlen(d->state_dir) + 16;
            d->cloud_hosts_dir = spw_xmalloc(n);
            snprintf(d->cloud_hosts_dir, n, "%s/instances", d->state_dir);
        }
        if (mkdir(d->cloud_hosts_dir, 0700) < 0 && errno != EEXIST) {
            spw_errorf(err, "daemon.emulated.hosts_dir %s: %s", d->cloud_hosts_dir,
                       strerror(errno));
            free(eo);
            goto error;
        }
        emo.boot_command = cfg->daemon.emulated_boot_command;
        emo.hosts_dir = d->cloud_hosts_dir;
        if (spw_daemon_cloud_setup(d, err) < 0) {
            free(eo);
            goto error;
        }
    }
    d->pv_ops = &spw_emulated_ops;
    d->pv = spw_emulated_create(&emo, err);
    free(eo);
    if (!d->pv)
        goto error;
    if (spw_daemon_scloud_setup(d, err) < 0)
        goto error;
    spw_emulated_defer_saves(d->pv, 1);  /* flushed once per turn */
    if (spw_store_begin(d->store, err) < 0)
        goto error;
    if (recover(d, err) < 0 || restore_nodes(d, err) < 0) {
        spw_store_rollback(d->store);
        goto error;
    }
    spot_capacity(d, d->now);
    if (spw_store_commit(d->store, err) < 0)
        goto error;
    for (size_t i = 0; i < d->ntouched; i++)
        if (d->jobs[d->touched[i]])
            d->jobs[d->touched[i]]->touched = 0;
    d->ntouched = 0;
    gc_run(d);
    sweep_run_dir(d);
    return d;
error:
    spw_daemon_destroy(d);
    return NULL;
}

void spw_daemon_destroy(spw_daemon_t *d)
{
    if (!d)
        return;
    spw_ui_destroy(d->ui);  /* first: its thread calls the API below */
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        d->stopping = 1;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
    }
    if (d->be_ops && d->be)
        d->be_ops->destroy(d->be);
    spw_daemon_pools_destroy(d);
    if (d->pv_ops && d->pv)
        d->pv_ops->destroy(d->pv);
    spw_daemon_guard_free(d);
    spw_store_close(d->store);
    spw_engine_destroy(d->engine);
    for (size_t s = 0; s < d->njobs; s++)
        job_free(d->jobs[s]);
    free(d->jobs);
    free(d->inst);
    for (size_t i = 0; i < d->fleet.npools && d->node_used; i++)
        free(d->node_used[i]);
    free(d->node_used);
    for (size_t i = 0; i < d->fleet.npools && d->node_down; i++)
        free(d->node_down[i]);
    free(d->node_down);
    free(d->ckpt_dir);
    spw_jobusers_clear(&d->users);
    free(d->offer_avail);
    free(d->spot_cap);
    free(d->backoff_s);
    free(d->pool_busy);
    free(d->pool_gpus);
    spw_fleet_clear(&d->fleet);
    free(d->state_dir);
    free(d->cloud_hosts_dir);
    free(d->log_dir);
    free(d->run_dir);
    free(d->pend);
    free(d->touched);
    for (size_t i = 0; i < d->ngc; i++)
        free(d->gc[i]);
    free(d->gc);
    pthread_mutex_destroy(&d->hmu);
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->committed);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
