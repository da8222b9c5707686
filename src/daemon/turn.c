/* turn.c: the turn and the loop thread: one turn commits submits, asks the
 * engine for decisions, places, launches, reaps and settles, then commits
 * everything in one transaction; health (/healthz) is judged from the
 * turns' heartbeat. */

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "daemon/loop_private.h"
#include "daemon/ui.h"

const double spw_daemon_hist_le[SPW_HIST_BUCKETS] = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.0002, 0.00025, 0.0003, 0.0005, 0.001, 0.0025,
    0.01, 0.05, 0.25, 1.0,
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Notes whether a commit worked, for /healthz. */
void dm_note_commit(spw_daemon_t *d, int ok, const char *why)
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
        dm_say(d, "commits fail: %s; nothing is launched until a commit works (/healthz says "
               "503 meanwhile)", why);
    else if (ok && was)
        dm_say(d, "commits work again");
}

/* MiB free to the daemon on the filesystem of path; NAN if unknown. */
static double free_mib(const char *path)
{
    struct statvfs sv;
    if (statvfs(path, &sv) < 0)
        return NAN;
    return (double)sv.f_bavail * (double)sv.f_frsize / 1048576.0;
}

/* Every 2 s: whether the state dir's filesystem, or the log dir's, has
 * fallen below daemon.min_free_mib (said once when it starts and once when
 * it ends), for /healthz and for submits. */
static void watch_disk(spw_daemon_t *d)
{
    double min = d->cfg->daemon.min_free_mib, t = mono();
    if (!(min > 0) || t - d->disk_mono < 2)
        return;
    d->disk_mono = t;
    const char *dirs[2] = {d->state_dir, d->log_dir}, *names[2] = {"state", "log"};
    char why[256] = "";
    for (int k = 0; k < 2 && !why[0]; k++) {
        double mib = free_mib(dirs[k]);
        if (mib < min)
            snprintf(why, sizeof(why), "the %s filesystem (%s) has %.0f MiB free, below "
                     "daemon.min_free_mib (%.0f): free space there", names[k], dirs[k], mib, min);
    }
    pthread_mutex_lock(&d->hmu);
    int was = d->disk_low;
    d->disk_low = why[0] != '\0';
    if (why[0])
        snprintf(d->disk_err, sizeof(d->disk_err), "%s", why);
    pthread_mutex_unlock(&d->hmu);
    if (why[0] && !was)
        dm_say(d, "%s; submits get 503 and /healthz says so until it has", why);
    else if (!why[0] && was)
        dm_say(d, "the state and log filesystems have more than daemon.min_free_mib free again");
}

int dm_disk_low(spw_daemon_t *d, char *why, size_t len)
{
    pthread_mutex_lock(&d->hmu);
    int low = d->disk_low;
    if (low)
        snprintf(why, len, "%s", d->disk_err);
    pthread_mutex_unlock(&d->hmu);
    return low;
}

static void note_time(dm_hist_t *h, double s)
{
    size_t b = 0;
    while (b < SPW_HIST_BUCKETS && s > spw_daemon_hist_le[b])
        b++;
    h->b[b]++;
    h->sum_s += s;
    h->n++;
}

static void turn_body(spw_daemon_t *d);

/* One turn, timed whole for spillway_turn_seconds. */
static void turn_locked(spw_daemon_t *d)
{
    double t0 = mono();
    turn_body(d);
    note_time(&d->turn_hist, mono() - t0);
    d->turns++;
}

static void turn_body(spw_daemon_t *d)
{
    double now = spw_daemon_clock();
    if (now < d->now)
        now = d->now;   /* the engine needs a clock that never goes back */
    d->now = now;
    watch_disk(d);
    dm_commit_submits(d, now);
    spw_daemon_pools_sync(d, now);
    spw_error_t err;
    int tx = spw_store_begin(d->store, &err) == 0;
    if (!tx) {
        /* Nothing this turn decides could be recorded (another process
         * holds the database, or it cannot be written): decide nothing.
         * Exits stay unreaped and placements unmade until a turn can
         * begin. */
        dm_note_commit(d, 0, err.text);
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
                    dm_handle_changed(d, &hc[i], now);
        }
        spw_exit_t ex[64];
        int n;
        while ((n = ops->poll(be, ex, 64)) > 0)
            for (int i = 0; i < n; i++)
                dm_handle_exit(d, &ex[i], now);
        dm_fences_collect(d, p, now);
    }
    dm_recheck_unsure(d, now);
    dm_accounts_poll(d, now);
    spw_daemon_cloud_notices(d, now);
    dm_launch_waiting(d, now);
    dm_release_idle(d, now);
    dm_stop_over_worst_case(d, now);
    dm_spot_capacity(d, now);
    dm_accounts_gate(d, now);
    spw_job_t **placed, **rejected;
    double t0 = mono();
    size_t np = spw_engine_schedule(d->engine, now, &placed);
    note_time(&d->decide_hist, mono() - t0);
    /* The engine reuses its placed and rejected arrays on the next call:
     * copy them. */
    size_t nr = spw_engine_rejected(d->engine, &rejected);
    spw_job_t **copy = np + nr ? spw_xmalloc((np + nr) * sizeof(*copy)) : NULL;
    if (np)
        memcpy(copy, placed, np * sizeof(*copy));
    if (nr)
        memcpy(copy + np, rejected, nr * sizeof(*copy));
    if (nr)
        dm_end_rejected(d, copy + np, nr, now);
    for (size_t i = 0; i < np; i++) {
        djob_t *j = (djob_t *)((char *)copy[i] - offsetof(djob_t, ej));
        dm_record_decision(d, j, now);
        if (j->ej.state == SPW_JOB_ONPREM)
            dm_place_onprem(d, j, now);
        else
            dm_place_cloud(d, j, now);
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
        dm_job_interrupt(d, (djob_t *)((char *)copy[i] - offsetof(djob_t, ej)),
                         SPW_INTERRUPT_SWITCH, "ahead of uniform progress with spot free: moving "
                         "from on demand to spot", now);
    free(copy);
    dm_reclaim(d, now);
    dm_save_held(d);
    /* The providers' state (the emulated cloud's file): once per turn,
     * before the commit. */
    dm_accounts_flush(d, now);
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
                dm_job_save(d, j, SAVE_ALL);
        }
        dm_acq_rewrite(d);
        dm_fences_rewrite(d);
        if (spw_store_heartbeat(d->store, now, &err) < 0)
            d->write_failed = 1;
    }
    if (d->write_failed) {
        /* Keep what did get written, but launch nothing: an intent may be
         * among what failed.  The next turn writes them again. */
        if (spw_store_commit(d->store, &err) < 0)
            spw_store_rollback(d->store);
        dm_note_commit(d, 0, "a write to the database failed (see the daemon's log)");
        return;
    }
    if (spw_store_commit(d->store, &err) < 0) {
        spw_store_rollback(d->store);
        dm_note_commit(d, 0, err.text);
        return;   /* its launch intents wait for a commit that works */
    }
    dm_note_commit(d, 1, NULL);
    dm_fences_committed(d);
    dm_say_repeat(d, &d->rep_save, 0, now, "recording jobs", "%s", "");
    for (size_t i = 0; i < d->ntouched; i++)
        if (d->jobs[d->touched[i]])
            d->jobs[d->touched[i]]->touched = 0;
    d->ntouched = 0;
    dm_gc_run(d);
    dm_acquire_pending(d, now);
    dm_evict(d, now);
    dm_launch_pending(d, now);
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
    dm_orphan_sweep_start(d);
    return 0;
}

int spw_daemon_health_state(spw_daemon_t *d, char *why, size_t len, double *turn_age_s)
{
    /* Under hmu only: a loop stuck while holding mu must not stall this. */
    double stall_s = fmax(SPW_DAEMON_STALL_S, 50 * d->cfg->daemon.tick_s);
    pthread_mutex_lock(&d->hmu);
    double age = d->loop_running ? mono() - d->turn_mono : NAN;
    int failing = d->commit_failing, running = d->loop_running, low = d->disk_low;
    if (low)
        snprintf(why, len, "%s", d->disk_err);
    else
        snprintf(why, len, "commits to the database fail: %s", d->commit_err);
    pthread_mutex_unlock(&d->hmu);
    *turn_age_s = age;
    if (failing || low)
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

int spw_daemon_series_put(spw_daemon_t *d, int tier, double ts, const char *json,
                          double keep_from_ts, spw_error_t *err)
{
    LOCK(d);
    int rc = spw_store_series_put(d->store, tier, ts, json, keep_from_ts, err);
    UNLOCK(d);
    return rc;
}

int spw_daemon_series_list(spw_daemon_t *d, int tier, spw_store_series_f cb, void *arg,
                           spw_error_t *err)
{
    LOCK(d);
    int rc = spw_store_series_list(d->store, tier, cb, arg, err);
    UNLOCK(d);
    return rc;
}
