/* launch.c: launching and the backends' events: a placement's process is
 * started through the launch protocol (intent committed first, then the
 * fork or sbatch, carrying the launch token), and what backends report
 * (exits, late handles) is turned into job states.  Fences of ended
 * attempts are swept once their end is committed. */

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>

#include "daemon/loop_private.h"

static void gc_add(spw_daemon_t *d, const char *token);

/* The backend running job j's process (pools.c). */
void *dm_job_be(spw_daemon_t *d, const djob_t *j)
{
    void *be;
    spw_daemon_job_ops(d, j, &be);
    return be;
}

static char *gpu_list(const uint32_t *g, size_t n)
{
    size_t cap = n * 11 + 1, used = 0;
    char *s = spw_xmalloc(cap);
    s[0] = '\0';
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(s + used, cap - used, "%s%u", i ? "," : "", g[i]);
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

void dm_ckpt_path(const spw_daemon_t *d, const djob_t *j, char *buf, size_t len)
{
    struct stat sb;
    /* A job checkpointed before directories were per team keeps its own. */
    snprintf(buf, len, "%s/%s", d->ckpt_dir, j->id);
    if (lstat(buf, &sb) == 0 && S_ISDIR(sb.st_mode))
        return;
    if (j->team && j->team[0])
        snprintf(buf, len, "%s/team-%s/%s", d->ckpt_dir, j->team, j->id);
    else
        snprintf(buf, len, "%s/no-team/%s", d->ckpt_dir, j->id);
}

/* Job j's checkpoint directory (dm_ckpt_path) into buf, created with its
 * team's directory: that one is root's (the daemon's) and passable by the
 * team's job user alone (mode 0710, its group), so a job of another team
 * cannot even reach the directory, let alone read it.  0, or -1 with err. */
static int ckpt_create(const spw_daemon_t *d, const djob_t *j, const spw_jobuser_t *u,
                       char *buf, size_t len, spw_error_t *err)
{
    dm_ckpt_path(d, j, buf, len);
    char *slash = strrchr(buf, '/');
    *slash = '\0';
    int rc = strcmp(buf, d->ckpt_dir) == 0 ? 0 : real_dir(buf);
    if (rc == 0 && strcmp(buf, d->ckpt_dir) != 0)
        rc = u->set ? (chown(buf, geteuid(), u->gid) < 0 || chmod(buf, 0710) < 0 ? -1 : 0)
                    : chmod(buf, 0700);
    *slash = '/';
    if (rc == 0 && real_dir(buf) == 0)
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
 * here: dm_launch_pending() forks once the turn has committed, so a launch is
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
    dm_job_state(d, j, SPW_DJOB_PLACED);
    dm_job_save(d, j, SAVE_ALL);
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
    int rc = ckpt_create(d, j, u, dir, sizeof(dir), &err);
    if (rc == 0)
        rc = job_log_dir(d, j, logs, sizeof(logs), &err);
    char **env = NULL;
    /* The job's user owns its checkpoint directory, and no one else may
     * look into it (jobs of other teams may run as other users). */
    if (rc == 0 && u->set && (chown(dir, u->uid, u->gid) < 0 || chmod(dir, 0700) < 0))
        rc = spw_errorf(&err, "cannot hand its checkpoint directory %s to user %s: %s", dir,
                        u->name, strerror(errno));
    if (rc == 0) {
        snprintf(ckpt, sizeof(ckpt), "SPILLWAY_CHECKPOINT_DIR=%s", dir);
        snprintf(attempt, sizeof(attempt), "SPILLWAY_ATTEMPT=%d", j->attempts);
        snprintf(restarts, sizeof(restarts), "SPILLWAY_RESTARTS=%u",
                 spw_job_rare(&j->ej)->restarts);
        double iv = ckpt_interval(d, j);
        if (iv == SPW_CKPT_CONTINUOUS)
            snprintf(interval, sizeof(interval), "SPILLWAY_CHECKPOINT_INTERVAL_S=continuous");
        else
            snprintf(interval, sizeof(interval), "SPILLWAY_CHECKPOINT_INTERVAL_S=%.17g", iv);
        const char *own[] = {ckpt, attempt, restarts, interval, NULL};
        env = spw_jobenv_build(u, s->env, s->nenv, own, (const char *const *)extra);
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
            .max_runtime_s = dm_run_limit(d, j),
            .now_s = now,
            .token = j->token,
            .nodes = j->ej.nnodes,
            .image = s->image,
            .user = u->set ? u->name : NULL,
            .team = j->team && j->team[0] ? j->team : NULL,
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
    spw_jobenv_free(env);
    free(g);
    for (char **e = extra; e && *e; e++)
        free(*e);
    free(extra);
    if (rc < 0) {
        dm_set_reason(j, "%s", err.text);
        dm_say(d, "job %s failed to start: %s", j->id, err.text);
        if (j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD)
            dm_eng_finish(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
        return -1;
    }
    j->running = 1;
    if (!async) {
        dm_job_state(d, j, SPW_DJOB_RUNNING);
        j->start_ts = now;
    }
    dm_job_save(d, j, SAVE_ALL);
    return 0;
}

/* A handle its backend changed (changed(), version 3): the launch of an
 * asynchronous backend took; the job now runs. */
void dm_handle_changed(spw_daemon_t *d, const spw_handle_t *h, double now)
{
    djob_t *j = spw_daemon_find(d, h->job_id);
    if (!j || !j->running || strcmp(j->token, h->token) != 0)
        return;
    j->h = *h;
    if (j->st == SPW_DJOB_PLACED && !j->stopping) {
        dm_job_state(d, j, SPW_DJOB_RUNNING);
        j->start_ts = now;
        dm_job_save(d, j, SAVE_ALL);
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
void dm_place_onprem(spw_daemon_t *d, djob_t *j, double now)
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
    j->led_egress_usd = spw_job_rare(&j->ej)->egress_usd;   /* on-prem egress is settled at once */
    dm_job_state(d, j, SPW_DJOB_PLACED);
    dm_set_reason(j, "%s", spw_reason_text(j->ej.reason));
    free(j->gpus_assigned);
    j->gpus_assigned = gpu_list(g, ng);
    if (j->running) {
        dm_job_save(d, j, SAVE_ALL);
        return;
    }
    start_onprem(d, j, now);
}

/* Starts a cloud job whose instances are all ready. */
void dm_launch_cloud(spw_daemon_t *d, djob_t *j, double now)
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
        size_t hcap = j->ninst * (SPW_INSTANCE_ADDR_MAX + 64) + 32, hu = 0;
        hosts = spw_xmalloc(hcap);
        hu += (size_t)snprintf(hosts, hcap, "SPILLWAY_SSH_HOSTS=");
        for (size_t k = 0; k < j->ninst; k++) {
            char h[SPW_INSTANCE_ADDR_MAX + 64];
            spw_daemon_cloud_host_name(d, &d->inst[j->inst[k]], h, sizeof(h));
            hu += (size_t)snprintf(hosts + hu, hcap - hu, "%s%s", k ? "," : "", h);
        }
    }
    /* Instances that are Slurm cloud nodes: the job is pinned to them. */
    char *snodes = spw_daemon_scloud_env(d, j);
    const char *extra[] = {ids, nodes, place,
                           dm_offer_emulated(d, (size_t)j->offer) ? "SPILLWAY_EMULATED=1" : "SPILLWAY_EMULATED=0",
                           snodes ? snodes : hosts, snodes ? hosts : NULL, NULL};
    dm_unwait(d, j);
    launch(d, j, g, ng, extra, now);
    free(ids);
    free(hosts);
    free(snodes);
}

/* How long a ready instance's host may stay silent before its job is
 * launched anyway (the launch then fails, saying the host does not answer):
 * seconds after the provider called it ready. */
#define HOST_ANSWER_WAIT_S 120.0

/* Whether the host of ready instance x has answered the cloud backend's
 * status round since it was added (a fresh instance's sshd may start after
 * its provider calls it ready; a released address may come back on a new
 * machine that is still booting).  1 when the backend keeps no hosts, when
 * x is no host of it, or once HOST_ANSWER_WAIT_S have passed. */
static int host_answers(const spw_daemon_t *d, const dinst_t *x)
{
    if (!d->cloud_be || !SPW_BACKEND_HAS(d->cloud_ops, 4, host_info) || !x->in.addr[0] ||
        d->now - x->in.ready_s >= HOST_ANSWER_WAIT_S)
        return 1;
    char host[SPW_INSTANCE_ADDR_MAX + 64];
    spw_daemon_cloud_host_name(d, x, host, sizeof(host));
    size_t n = d->cloud_ops->host_count(d->cloud_be);
    for (size_t i = 0; i < n; i++) {
        spw_backend_host_t h;
        d->cloud_ops->host_info(d->cloud_be, i, &h);
        if (h.addr && strcmp(h.addr, host) == 0)
            return h.up && h.last_ok_s > 0;
    }
    return 1;
}

int dm_cloud_ready(const spw_daemon_t *d, const djob_t *j)
{
    if (j->acq_pending)
        return 0;   /* the rest of its instances are not asked yet */
    for (size_t k = 0; k < j->ninst; k++)
        if (d->inst[j->inst[k]].in.state != SPW_INSTANCE_READY)
            return 0;
    int hosts = spw_daemon_cloud_pool(d, j) == SPW_DAEMON_CLOUD_POOL;
    for (size_t k = 0; hosts && k < j->ninst; k++)
        if (!host_answers(d, &d->inst[j->inst[k]]))
            return 0;
    return j->ninst > 0;
}

void dm_launch_waiting(spw_daemon_t *d, double now)
{
    for (djob_t *j = d->waiting, *next; j; j = next) {
        next = j->next_wait;
        if (j->st == SPW_DJOB_PLACED && !j->running && !j->stopping && dm_cloud_ready(d, j))
            dm_launch_cloud(d, j, now);
    }
}

void dm_wait_for_hosts(spw_daemon_t *d, djob_t *j)
{
    for (djob_t *w = d->waiting; w; w = w->next_wait)
        if (w == j)
            return;
    j->next_wait = d->waiting;
    d->waiting = j;
}

void dm_handle_exit(spw_daemon_t *d, const spw_exit_t *ex, double now)
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
        dm_set_reason(j, "cancelled by a user");
        dm_eng_cancel(d, j, now);
        dm_job_end(d, j, SPW_DJOB_CANCELLED, now);
    } else if (j->stopping) {
        /* The process of an interrupted attempt, settled when it was
         * interrupted: its exit lets the job's next placement start. */
        j->stopping = 0;
        if (j->st == SPW_DJOB_PLACED && j->holds)
            start_onprem(d, j, now);
        else if (j->st == SPW_DJOB_PLACED && dm_cloud_ready(d, j))
            dm_launch_cloud(d, j, now);
        else {
            if (j->st == SPW_DJOB_PLACED && j->ninst)
                dm_wait_for_hosts(d, j);   /* launched once they answer */
            dm_job_save(d, j, SPW_JU_PID | SPW_JU_EXIT);
        }
        return;
    } else if (ex->kind == SPW_EXIT_NOT_STARTED) {
        /* An asynchronous launch (a Slurm pool's sbatch) that failed after
         * launch() had returned: the same end as a launch() that failed. */
        dm_set_reason(j, "%s", ex->reason);
        dm_say(d, "job %s failed to start: %s", j->id, ex->reason);
        if (j->ej.state == SPW_JOB_ONPREM || j->ej.state == SPW_JOB_CLOUD)
            dm_eng_finish(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
        return;
    } else if (ex->kind == SPW_EXIT_EXITED && ex->status == 0) {
        dm_set_reason(j, "exited 0");
        dm_eng_finish(d, j, now);
        dm_job_end(d, j, SPW_DJOB_SUCCEEDED, now);
    } else if (j->stop_cost) {
        /* the reason, set when it was stopped, says why */
        dm_eng_finish(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
    } else if (ex->cause == SPW_CAUSE_MAX_RUNTIME) {
        dm_set_reason(j, "killed after max_runtime (%.0f s)%s", j->h.max_runtime_s,
                      j->ej.state == SPW_JOB_CLOUD && !(j->ej.max_runtime_s > 0)
                       ? ", the governance default for cloud jobs"
                       : "");
        dm_eng_finish(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
    } else if (ex->kind == SPW_EXIT_LOST) {
        dm_set_reason(j, "ended while the daemon was not its parent: exit status unknown");
        dm_eng_finish(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
    } else if ((uint32_t)j->attempts <= retries) {
        dm_set_reason(j, "%s %d; retry %d of %u", ex->kind == SPW_EXIT_EXITED ? "exited with" : "killed by signal",
                      ex->status, j->attempts, retries);
        dm_job_requeue(d, j, now);
    } else {
        dm_set_reason(j, "%s %d", ex->kind == SPW_EXIT_EXITED ? "exited with" : "killed by signal",
                      ex->status);
        dm_eng_finish(d, j, now);
        dm_job_end(d, j, SPW_DJOB_FAILED, now);
    }
    dm_say(d, "job %s %s (%s)", j->id, spw_djob_state_name(j->st), j->reason ? j->reason : "");
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

void dm_gc_run(spw_daemon_t *d)
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
void dm_after_commit(spw_daemon_t *d, const int64_t *seqs, size_t *n,
                     void (*step)(spw_daemon_t *d, djob_t *j, double now), const char *what,
                     double now)
{
    if (!*n)
        return;
    spw_error_t err;
    int tx = spw_store_begin(d->store, &err) == 0;
    for (size_t i = 0; i < *n; i++)
        if (d->jobs[seqs[i]])
            step(d, d->jobs[seqs[i]], now);
    *n = 0;
    if (tx && spw_store_commit(d->store, &err) < 0) {
        dm_say(d, "cannot record %s: %s", what, err.text);
        spw_store_rollback(d->store);
    }
}

static void launch_step(spw_daemon_t *d, djob_t *j, double now)
{
    if (j->pending)
        do_launch(d, j, now);
}

void dm_launch_pending(spw_daemon_t *d, double now)
{
    dm_after_commit(d, d->pend, &d->npend, launch_step, "the processes just started", now);
}
