/* daemon.c: the daemon's start-up and shutdown: the state dir and its
 * permissions, the fleet copied from the config, the backends and the cloud
 * provider made through their registries, recovery run once (recover.c),
 * and everything freed again.  Also the few basics every room uses: the
 * clock, progress lines, offer names. */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "backends/cgroup.h"
#include "backends/registry.h"
#include "daemon/loop_private.h"
#include "daemon/ui.h"
#include "providers/registry.h"

double spw_daemon_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void dm_say(spw_daemon_t *d, const char *fmt, ...)
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

void dm_say_repeat(spw_daemon_t *d, dm_repeat_t *r, int failing, double now, const char *what,
                   const char *fmt, ...)
{
    if (!failing) {
        if (r->on)
            dm_say(d, "%s works again (%" PRIu64 " more failure%s since last said)", what,
                   r->count, r->count == 1 ? "" : "s");
        r->on = 0;
        r->count = 0;
        return;
    }
    r->count++;
    if (r->on && now - r->said_ts < DM_REPEAT_EVERY_S)
        return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (!r->on)
        dm_say(d, "%s (said again every %.0f s while it lasts)", text, DM_REPEAT_EVERY_S);
    else
        dm_say(d, "%s (%" PRIu64 " times in the last %.0f s)", text, r->count, now - r->said_ts);
    r->on = 1;
    r->count = 0;
    r->said_ts = now;
}

const char *spw_daemon_offer_name(const spw_offer_t *o, char *buf, size_t len)
{
    /* A commitment is the same instance type as its offer: its name tells
     * them apart (recover.c finds offers by name). */
    snprintf(buf, len, "%s%s%s%s%s/%s%s%s", o->provider, o->region[0] ? "/" : "", o->region,
             o->zone[0] ? "/" : "", o->zone, o->instance_type, o->commit_name ? "@" : "",
             o->commit_name ? o->commit_name : "");
    return buf;
}

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
        o->commit_name = s->commit_name ? spw_xstrdup(s->commit_name) : NULL;
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

/* nvidia-smi's GPU count replaces the slots of a one-node pool. */
static void detect_gpus(spw_daemon_t *d)
{
    if (!d->cfg->daemon.gpus_auto || d->fleet.npools != 1 || d->fleet.pools[0].nnodes != 1)
        return;
    uint32_t count;
    spw_error_t err;
    if (!SPW_BACKEND_HAS(d->be_ops, 4, detect_gpus) ||
        d->be_ops->detect_gpus(d->be, &count, &err) < 0) {
        dm_say(d, "no GPU detected (%s); pool %s uses its %u configured slots", err.text,
               d->fleet.pools[0].name, d->fleet.pools[0].node_gpus[0]);
        return;
    }
    if (count > 0 && count <= 64) {
        dm_say(d, "nvidia-smi found %u GPU(s): pool %s uses them", count, d->fleet.pools[0].name);
        d->fleet.pools[0].node_gpus[0] = (uint16_t)count;
    }
}

spw_daemon_t *spw_daemon_create(const spw_config_t *cfg, const spw_daemon_opts_t *opts,
                                spw_error_t *err)
{
    spw_daemon_opts_t none = {0};
    if (!opts)
        opts = &none;
    spw_daemon_t *d = spw_xcalloc(1, sizeof(*d));
    char *image_dir = NULL;     /* STATE_DIR/images, given to the local backend */
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->wake, NULL);
    pthread_cond_init(&d->committed, NULL);
    pthread_mutex_init(&d->hmu, NULL);
    d->cfg = cfg;
    spw_fleet_init(&d->fleet);
    d->quiet = opts->quiet;
    d->release_all_on_stop = opts->release_all_on_stop;
    d->subq_tail = &d->subq;
    d->now = d->started_ts = spw_daemon_clock();
    d->since_ts = NAN;
    const char *sd = opts->state_dir ? opts->state_dir
                     : cfg->daemon.state_dir ? cfg->daemon.state_dir : "spillway-state";
    d->state_dir = spw_xstrdup(sd);
    size_t len = strlen(sd) + 16;
    if (cfg->daemon.log_dir) {
        d->log_dir = spw_xstrdup(cfg->daemon.log_dir);
    } else {
        d->log_dir = spw_xmalloc(len);
        snprintf(d->log_dir, len, "%s/logs", sd);
    }
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
    /* The OCI image caches, a directory per team, are this daemon's:
     * its user unpacks archives there (container.h). */
    image_dir = spw_xmalloc(strlen(abs) + sizeof("/images"));
    sprintf(image_dir, "%s/images", abs);
    free(abs);
    if (mkdir_p(d->ckpt_dir, err) < 0 || mkdir_p(image_dir, err) < 0)
        goto error;
    if (spw_jobusers_init(&d->users, &cfg->daemon, err) < 0 ||
        spw_jobusers_check_shared(&d->users, cfg, err) < 0)
        goto error;
    /* Jobs never need the logs (the API serves them) nor the database; a
     * job of another user must only be able to pass through the state dir
     * to its own checkpoint directory.  The logs directory stays 0711 once
     * a Slurm launch made it so (slurmstepd opens a job's log files as the
     * job's user, through it): a restart must not lock those jobs out. */
    struct stat lst;
    mode_t lmode = stat(d->log_dir, &lst) == 0 && (lst.st_mode & 0011) == 0011 ? 0711 : 0700;
    if (chmod(d->log_dir, lmode) < 0 ||
        chmod(d->state_dir, spw_jobusers_switch(&d->users) ? 0711 : 0700) < 0 ||
        chmod(d->ckpt_dir, spw_jobusers_switch(&d->users) ? 0711 : 0700) < 0 ||
        chmod(image_dir, spw_jobusers_switch(&d->users) ? 0711 : 0700) < 0) {
        spw_errorf(err, "cannot set the permissions of the state dir %s: %s", d->state_dir,
                   strerror(errno));
        goto error;
    }
    if (spw_jobusers_switch(&d->users)) {
        dm_say(d, "jobs run as user %s (uid %ld)%s", d->users.dflt.name, (long)d->users.dflt.uid,
               d->users.nteams ? ", or their team's run_as user" : "");
        char blocker[4096];
        if (!spw_jobuser_reaches(&d->users.dflt, d->ckpt_dir, blocker, sizeof(blocker)))
            dm_say(d, "warning: jobs running as %s cannot reach their checkpoint directories "
                   "under %s: %s lets only its owner through; chmod o+x %s, or choose a "
                   "--state-dir they can reach (jobs without a workdir will fail to start)",
                   d->users.dflt.name, d->ckpt_dir, blocker, blocker);
    }
    else
        dm_say(d, "jobs run as this daemon's own user (uid %ld): they can read any file it can, "
               "its config among them; run the daemon as root for per-job users "
               "(docs/daemon.md)", (long)geteuid());
    /* The backend of this machine: cloud jobs without hosts and pools that
     * name no backend run on it. */
    spw_backend_conf_t bc = {.name = SPW_BACKEND_THIS_MACHINE,
                             .log_dir = d->log_dir,
                             .run_dir = d->run_dir,
                             .grace_s = cfg->daemon.kill_grace_s,
                             .job_pids_max = cfg->daemon.job_pids_max,
                             .job_memory_mib = cfg->daemon.job_memory_mib,
                             .max_log_bytes = cfg->daemon.max_log_bytes,
                             .image_dir = image_dir,
                             .image_max_bytes = cfg->daemon.image_max_bytes,
                             .image_max_files = cfg->daemon.image_max_files};
    int brc = spw_backend_create(&bc, &d->be_ops, &d->be, err);
    free(image_dir);
    image_dir = NULL;
    if (brc < 0)
        goto error;
    {
        /* The local and ssh backends detect the same (cgroup.h); said once. */
        spw_cgroups_t cg;
        char line[400];
        spw_cgroups_init(&cg, NULL, cfg->daemon.job_pids_max, cfg->daemon.job_memory_mib);
        spw_cgroups_describe(&cg, line, sizeof(line));
        dm_say(d, "%s", line);
    }
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
     * max_runtime (policy.reserve_extra_s). */
    spw_policy_t pol = spw_config_daemon_policy(cfg);
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
    dm_spot_setup(d);
    spw_offer_emulation_t *eo = spw_xcalloc(d->fleet.noffers + 1, sizeof(*eo));
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
    }
    if (spw_daemon_cloud_setup(d, err) < 0) {
        free(eo);
        goto error;
    }
    int made = dm_accounts_setup(d, eo, err);
    free(eo);
    if (made < 0)
        goto error;
    if (spw_daemon_scloud_setup(d, err) < 0)
        goto error;
    if (spw_store_begin(d->store, err) < 0)
        goto error;
    if (dm_recover(d, err) < 0 || dm_restore_nodes(d, err) < 0 ||
        dm_fences_restore(d, err) < 0) {
        spw_store_rollback(d->store);
        goto error;
    }
    dm_spot_capacity(d, d->now);
    if (spw_store_commit(d->store, err) < 0)
        goto error;
    dm_fences_committed(d);
    for (size_t i = 0; i < d->ntouched; i++)
        if (d->jobs[d->touched[i]])
            d->jobs[d->touched[i]]->touched = 0;
    d->ntouched = 0;
    dm_gc_run(d);
    dm_sweep_run_dir(d);
    return d;
error:
    free(image_dir);
    spw_daemon_destroy(d);
    return NULL;
}

void spw_daemon_destroy(spw_daemon_t *d)
{
    if (!d)
        return;
    spw_ui_destroy(d->ui);  /* first: its thread calls the API below */
    dm_orphan_sweep_join(d); /* and so does the sweep */
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
    if (d->release_all_on_stop && d->store)
        dm_release_all(d, fmax(spw_daemon_clock(), d->now));
    dm_accounts_destroy(d);
    spw_daemon_guard_free(d);
    spw_daemon_api_free(d);
    spw_store_close(d->store);
    spw_engine_destroy(d->engine);
    for (size_t s = 0; s < d->njobs; s++)
        dm_job_free(d->jobs[s]);
    free(d->jobs);
    free(d->ended);
    dm_gone_free(d);
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
    free(d->spot_live_ts);
    free(d->pool_busy);
    free(d->pool_gpus);
    spw_fleet_clear(&d->fleet);
    free(d->state_dir);
    free(d->cloud_hosts_dir);
    free(d->log_dir);
    free(d->run_dir);
    free(d->pend);
    free(d->acq);
    free(d->touched);
    for (size_t i = 0; i < d->ngc; i++)
        free(d->gc[i]);
    free(d->gc);
    free(d->fev);
    pthread_mutex_destroy(&d->hmu);
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->committed);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
