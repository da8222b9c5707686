/* pools.c: the daemon's per-pool backends (config pool key `backend:`).
 * Pools without one use the daemon's local backend (d->be_ops), and so do
 * cloud jobs unless their instances are hosts (cloud_hosts.c).  A Slurm
 * pool's nodes come from Slurm: read at start (they
 * replace the config's nodes and gpus_per_node) and their states followed
 * in the loop, so a node Slurm takes down or drains leaves the pool and its
 * jobs fail over, and comes back when Slurm resumes it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/registry.h"
#include "daemon/loop_private.h"

#define NODES_SYNC_S 2.0

/* Pool p's backend keeps a node inventory (Slurm): its nodes, their
 * states and the jobs behind spillway's back come from the cluster. */
static int is_inventory(const spw_daemon_t *d, size_t p)
{
    return d->pool_ops && d->pool_ops[p] && SPW_BACKEND_HAS(d->pool_ops[p], 4, nodes);
}

/* Pool p's backend runs jobs on a list of hosts (ssh): its nodes are the
 * hosts, up while they answer. */
static int is_hosts(const spw_daemon_t *d, size_t p)
{
    return d->pool_ops && d->pool_ops[p] && SPW_BACKEND_HAS(d->pool_ops[p], 4, host_info);
}

/* An ssh pool's nodes are its hosts, with the GPUs the backend detected
 * (or gpus_per_node). */
static int ssh_nodes(spw_daemon_t *d, size_t p, spw_error_t *err)
{
    const struct spw_backend_ops *ops = d->pool_ops[p];
    void *sb = d->pool_be[p];
    spw_pool_spec_t *ps = &d->fleet.pools[p];
    size_t k = ops->host_count(sb);
    if (k != ps->nnodes)
        return spw_errorf(err, "pool %s: %zu hosts for %u nodes", ps->name, k, ps->nnodes);
    for (size_t i = 0; i < k; i++) {
        spw_backend_host_t hi;
        ops->host_info(sb, i, &hi);
        if (hi.gpus == 0 || hi.gpus > 64)
            return spw_errorf(err, "pool %s: host %s has %u GPUs (nvidia-smi); give the pool "
                              "gpus_per_node (1 to 64) to run jobs there anyway", ps->name,
                              hi.addr, hi.gpus);
        ps->node_gpus[i] = (uint16_t)hi.gpus;
    }
    return 0;
}

/* STATE_DIR/NAME (slurm-nodes-POOL for a Slurm pool, slurm-cloud-partition
 * for cloud.slurm_partition): the nodes (name and GPUs, one a line) the
 * daemon last read from Slurm, so that a daemon restarting while slurmctld
 * does not answer still knows them (and the jobs placed on them keep their
 * place until Slurm answers). */
void spw_daemon_slurm_cache_write(const spw_daemon_t *d, const char *name,
                                  const spw_backend_node_t *v, size_t n)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/%s", d->state_dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s %u\n", v[i].name, v[i].gpus);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

int spw_daemon_slurm_cache_read(const spw_daemon_t *d, const char *name,
                                spw_backend_node_t **out, size_t *n)
{
    char path[4200], line[256];
    snprintf(path, sizeof(path), "%s/%s", d->state_dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t k = 0, cap = 8;
    spw_backend_node_t *v = spw_xcalloc(cap, sizeof(*v));
    while (fgets(line, sizeof(line), f)) {
        char nm[64];
        unsigned gpus;
        if (sscanf(line, "%63s %u", nm, &gpus) != 2)
            continue;
        if (k == cap) {
            cap *= 2;
            v = spw_xrealloc(v, cap * sizeof(*v));
        }
        memset(&v[k], 0, sizeof(v[k]));
        snprintf(v[k].name, sizeof(v[k].name), "%s", nm);
        v[k].gpus = gpus;
        k++;
    }
    fclose(f);
    if (k == 0) {
        free(v);
        return -1;
    }
    *out = v;
    *n = k;
    return 0;
}

/* Replaces pool p's nodes by Slurm's (nodes without a GPU are left out). */
static int slurm_nodes(spw_daemon_t *d, size_t p, spw_error_t *err)
{
    const struct spw_backend_ops *ops = d->pool_ops[p];
    void *sb = d->pool_be[p];
    spw_pool_spec_t *ps = &d->fleet.pools[p];
    spw_backend_node_t *v;
    size_t n;
    spw_error_t e2;
    char cache[200];
    snprintf(cache, sizeof(cache), "slurm-nodes-%s", ps->name);
    if (ops->nodes(sb, &v, &n, &e2) == 0) {
        spw_daemon_slurm_cache_write(d, cache, v, n);
    } else if (spw_daemon_slurm_cache_read(d, cache, &v, &n) == 0) {
        if (!d->quiet)
            fprintf(stderr, "spillway: pool %s: Slurm does not answer (%s); using its %zu "
                    "nodes as last read, until it does\n", ps->name, e2.text, n);
    } else {
        return spw_errorf(err, "pool %s: cannot read the nodes of Slurm partition: %s", ps->name,
                          e2.text);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].gpus > 0 && v[i].gpus <= 64)
            v[k++] = v[i];
    if (k == 0) {
        free(v);
        return spw_errorf(err, "pool %s: its Slurm partition has no node with GPUs "
                               "(gres/gpu) of at most 64", ps->name);
    }
    ops->set_nodes(sb, v, k);
    ps->nnodes = (uint32_t)k;
    ps->node_gpus = spw_xrealloc(ps->node_gpus, k * sizeof(uint16_t));
    free(d->node_used[p]);
    free(d->node_down[p]);
    d->node_used[p] = spw_xcalloc(k, sizeof(uint64_t));
    d->node_down[p] = spw_xcalloc(k, sizeof(uint8_t));
    d->pool_slurm_down[p] = spw_xcalloc(k, sizeof(uint8_t));
    d->pool_foreign[p] = spw_xcalloc(k, sizeof(spw_job_t *));
    d->pool_foreign_gpus[p] = spw_xcalloc(k, sizeof(uint32_t));
    for (size_t i = 0; i < k; i++)
        ps->node_gpus[i] = (uint16_t)v[i].gpus;
    free(v);
    return 0;
}

int spw_daemon_pools_setup(spw_daemon_t *d, spw_error_t *err)
{
    const spw_config_t *cfg = d->cfg;
    size_t np = d->fleet.npools ? d->fleet.npools : 1;
    d->pool_ops = spw_xcalloc(np, sizeof(*d->pool_ops));
    d->pool_be = spw_xcalloc(np, sizeof(*d->pool_be));
    d->pool_slurm_down = spw_xcalloc(np, sizeof(*d->pool_slurm_down));
    d->pool_foreign = spw_xcalloc(np, sizeof(*d->pool_foreign));
    d->pool_foreign_gpus = spw_xcalloc(np, sizeof(*d->pool_foreign_gpus));
    d->nodes_sync_ts = -INFINITY;
    for (size_t p = 0; p < d->fleet.npools && p < cfg->npool_backends; p++) {
        const spw_pool_backend_conf_t *b = &cfg->pool_backends[p];
        if (!b->backend || strcmp(b->backend, SPW_BACKEND_THIS_MACHINE) == 0)
            continue;
        uint32_t *hg = NULL;
        if (b->gpus_given && b->nhosts) {
            hg = spw_xcalloc(b->nhosts, sizeof(uint32_t));
            for (size_t i = 0; i < b->nhosts && i < d->fleet.pools[p].nnodes; i++)
                hg[i] = d->fleet.pools[p].node_gpus[i];
        }
        spw_backend_conf_t bc = {.name = b->backend,
                                 .log_dir = d->log_dir,
                                 .max_log_bytes = cfg->daemon.max_log_bytes,
                                 .image_max_bytes = cfg->daemon.image_max_bytes,
                                 .image_max_files = cfg->daemon.image_max_files,
                                 .grace_s = cfg->daemon.kill_grace_s,
                                 .job_pids_max = cfg->daemon.job_pids_max,
                                 .job_memory_mib = cfg->daemon.job_memory_mib,
                                 .partition = b->partition,
                                 .slurm_conf = b->slurm_conf,
                                 .hosts = (const char *const *)b->hosts,
                                 .nhosts = b->nhosts,
                                 .host_gpus = hg,
                                 .ssh_user = b->ssh_user,
                                 .ssh_key = b->ssh_key,
                                 .ssh_known_hosts = b->ssh_known_hosts,
                                 .ssh_port = b->ssh_port,
                                 .down_after_s = b->ssh_down_after_s,
                                 .kubeconfig = b->kubeconfig,
                                 .kube_context = b->kube_context,
                                 .kube_namespace = b->kube_namespace,
                                 .kube_node_selector = (const char *const *)b->kube_node_selector,
                                 .kube_tolerations = b->kube_tolerations,
                                 .kube_priority_class = b->kube_priority_class,
                                 .kube_local_queue = b->kube_local_queue,
                                 .kube_image = b->kube_image,
                                 .kube_ttl_s = b->kube_ttl_s};
        if (b->kube_kill_grace_s > 0)
            bc.grace_s = b->kube_kill_grace_s;
        spw_error_t e2;
        int rc = spw_backend_create(&bc, &d->pool_ops[p], &d->pool_be[p], &e2);
        free(hg);
        if (rc < 0)
            return spw_errorf(err, "pool %s: %s", d->fleet.pools[p].name, e2.text);
        if (is_hosts(d, p) && ssh_nodes(d, p, err) < 0)
            return -1;
        if (is_inventory(d, p) && slurm_nodes(d, p, err) < 0)
            return -1;
    }
    return 0;
}

void spw_daemon_pools_destroy(spw_daemon_t *d)
{
    for (size_t p = 0; p < d->fleet.npools && d->pool_ops; p++) {
        if (d->pool_ops[p] && d->pool_be[p])
            d->pool_ops[p]->destroy(d->pool_be[p]);
        if (d->pool_slurm_down)
            free(d->pool_slurm_down[p]);
        for (uint32_t k = 0; d->pool_foreign && d->pool_foreign[p] && k < d->fleet.pools[p].nnodes;
             k++)
            free(d->pool_foreign[p][k]);   /* the engine is gone or going: no cancel */
        if (d->pool_foreign) {
            free(d->pool_foreign[p]);
            free(d->pool_foreign_gpus[p]);
        }
    }
    free(d->pool_foreign);
    free(d->pool_foreign_gpus);
    d->pool_foreign = NULL;
    d->pool_foreign_gpus = NULL;
    free(d->pool_ops);
    free(d->pool_be);
    free(d->pool_slurm_down);
    if (d->cloud_be)
        d->cloud_ops->destroy(d->cloud_be);
    d->cloud_be = NULL;
    spw_daemon_scloud_destroy(d);
    d->pool_ops = NULL;
    d->pool_be = NULL;
    d->pool_slurm_down = NULL;
}

const struct spw_backend_ops *spw_daemon_pool_ops(spw_daemon_t *d, int32_t pool, void **be)
{
    if (pool == SPW_DAEMON_SLURM_CLOUD_POOL && d->scloud_be) {
        *be = d->scloud_be;
        return d->scloud_ops;
    }
    if (pool == SPW_DAEMON_CLOUD_POOL && d->cloud_be) {
        *be = d->cloud_be;
        return d->cloud_ops;
    }
    if (pool >= 0 && (size_t)pool < d->fleet.npools && d->pool_ops && d->pool_ops[pool]) {
        *be = d->pool_be[pool];
        return d->pool_ops[pool];
    }
    *be = d->be;
    return d->be_ops;
}

const char *spw_daemon_pool_backend(spw_daemon_t *d, size_t pool)
{
    void *be;
    return spw_daemon_pool_ops(d, (int32_t)pool, &be)->name;
}

const struct spw_backend_ops *spw_daemon_job_ops(spw_daemon_t *d, const djob_t *j, void **be)
{
    return spw_daemon_pool_ops(d, j->be_pool, be);
}

/* A host coming back up may have other GPUs than before (the backend
 * counts them again): its node takes the new count while it is still down,
 * so the engine brings it back with that capacity.  The count stays within
 * the largest node of the pool (the engine sized its tables by it).
 * Returns 0, or -1 when the host has no GPU now (it stays down; said once). */
static int ssh_regpus(spw_daemon_t *d, size_t p, uint32_t i, const spw_backend_host_t *hi)
{
    spw_pool_spec_t *ps = &d->fleet.pools[p];
    uint16_t was = ps->node_gpus[i], most = 0;
    for (uint32_t k = 0; k < ps->nnodes; k++)
        if (ps->node_gpus[k] > most)
            most = ps->node_gpus[k];
    if (hi->gpus == was)
        return 0;
    if (hi->gpus == 0) {
        if (d->pool_slurm_down[p][i] != 2 && !d->quiet)
            fprintf(stderr, "spillway: host %s (%s/%u) answers again but nvidia-smi finds no "
                    "GPU there; it stays down\n", hi->addr, ps->name, i);
        d->pool_slurm_down[p][i] = 2;
        return -1;
    }
    uint16_t now = (uint16_t)(hi->gpus < most ? hi->gpus : most);
    if (!d->node_down[p][i] || now == was)
        return 0; /* only a node out of service changes size */
    for (size_t s = d->job_lo; s < d->njobs; s++) {
        const djob_t *j = d->jobs[s];
        if (j && j->ej.state == SPW_JOB_ONPREM && j->ej.pool == (int32_t)p &&
            spw_engine_job_on_node(&j->ej, p, i))
            return 0; /* the engine still counts it in use: keep its size */
    }
    ps->node_gpus[i] = now;
    d->pool_gpus[p] = d->pool_gpus[p] - was + now;
    if (!d->quiet)
        fprintf(stderr, "spillway: host %s (%s/%u) has %u GPU%s now (was %u)%s\n", hi->addr,
                ps->name, i, now, now == 1 ? "" : "s", was,
                now < hi->gpus ? "; more than the pool's largest node: not all used" : "");
    return 0;
}

/* Follows the ssh backend's health checks: a host it found silent for
 * down_after_s takes its node down (its jobs fail over); one that answers
 * again (after its fenced jobs were killed) brings it back. */
static void ssh_sync(spw_daemon_t *d, size_t p)
{
    const struct spw_backend_ops *ops = d->pool_ops[p];
    void *sb = d->pool_be[p];
    size_t k = ops->host_count(sb);
    for (size_t i = 0; i < k && i < d->fleet.pools[p].nnodes; i++) {
        spw_backend_host_t hi;
        ops->host_info(sb, i, &hi);
        uint8_t down = (uint8_t)!hi.up;
        if (d->pool_slurm_down[p] == NULL)
            d->pool_slurm_down[p] = spw_xcalloc(k, sizeof(uint8_t));
        if (d->pool_slurm_down[p][i] == down)
            continue;
        if (!down && ssh_regpus(d, p, (uint32_t)i, &hi) < 0)
            continue; /* answers, but with no GPU to run on: stays down */
        d->pool_slurm_down[p][i] = down;
        if (!d->node_down[p][i] == !down)
            continue;
        char *ids = NULL;
        spw_error_t err;
        int st = spw_daemon_do_node(d, p, (uint32_t)i, down ? 2 : 0, &ids, &err);
        if (!d->quiet)
            fprintf(stderr, "spillway: host %s (%s/%zu) %s%s\n", hi.addr, d->fleet.pools[p].name,
                    i, down ? "stopped answering ssh" : "answers again",
                    st == 200 ? "" : "; not applied");
        free(ids);
    }
}

/* Holds `gpus` GPUs of node k of Slurm pool p in the engine for jobs that
 * were submitted behind spillway's back (0: none), through a stand-in job
 * that is not a daemon job (never listed, billed or launched): the engine
 * then places nothing there that Slurm could not start.  It takes only
 * what spillway's own jobs leave free (they keep theirs; Slurm queues
 * whichever came second). */
static void foreign_hold(spw_daemon_t *d, size_t p, uint32_t k, uint32_t gpus, double now)
{
    spw_job_t **slot = &d->pool_foreign[p][k];
    d->pool_foreign_gpus[p][k] = gpus;
    uint32_t cap = d->fleet.pools[p].node_gpus[k];
    uint32_t ours = (uint32_t)__builtin_popcountll(d->node_used[p][k]);
    uint32_t left = ours < cap ? cap - ours : 0;
    uint32_t g = d->node_down[p][k] ? 0 : gpus < left ? gpus : left;
    if ((*slot ? (*slot)->gpus : 0) == g)
        return;
    if (*slot) {
        spw_engine_cancel(d->engine, *slot, now);
        free(*slot);
        *slot = NULL;
    }
    if (g == 0)
        return;
    /* Never interrupted nor in the cloud: no side record (model.h), so
     * free() alone frees it. */
    spw_job_t *fj = spw_xcalloc(1, sizeof(*fj));
    fj->id = "slurm-foreign";
    fj->gpus = g;
    fj->est_runtime_s = 3600;   /* unknown: what backfill plans with */
    fj->submit_s = fj->placed_s = fj->start_s = now;
    fj->deadline_s = NAN;
    fj->end_s = NAN;
    fj->speed = 1;
    fj->state = SPW_JOB_ONPREM;
    fj->pool = (int32_t)p;
    fj->node = (int32_t)k;
    fj->offer = -1;
    if (spw_engine_restore(d->engine, fj) < 0) {
        free(fj);
        return;
    }
    *slot = fj;
}

void spw_daemon_pools_node_down(spw_daemon_t *d, size_t pool, uint32_t node, double now)
{
    if (!d->pool_foreign || !d->pool_foreign[pool] || node >= d->fleet.pools[pool].nnodes)
        return;
    spw_job_t **slot = &d->pool_foreign[pool][node];
    if (*slot) {
        spw_engine_cancel(d->engine, *slot, now);
        free(*slot);
        *slot = NULL;
    }
}

/* "Slurm" or "Kubernetes": whose nodes pool p's are, for messages. */
static const char *cluster_word(const spw_daemon_t *d, size_t p)
{
    return strcmp(d->pool_ops[p]->name, "kubernetes") == 0 ? "Kubernetes" : "Slurm";
}

/* Reads the GPUs foreign jobs hold on pool p's nodes (the cluster's view)
 * and holds them in the engine.  Cluster unreachable: kept as they were. */
static void foreign_sync(spw_daemon_t *d, size_t p, double now)
{
    const struct spw_backend_ops *ops = d->pool_ops[p];
    void *sb = d->pool_be[p];
    spw_backend_foreign_t *v;
    size_t n;
    spw_error_t err;
    char own[16];
    snprintf(own, sizeof(own), "%s.", d->daemon_id);
    if (!SPW_BACKEND_HAS(ops, 4, foreign_async) || ops->foreign_async(sb, own, &v, &n, &err) <= 0)
        return;   /* no new read yet, or Slurm unreachable: keep what we know */
    uint32_t nn = d->fleet.pools[p].nnodes;
    uint32_t *want = spw_xcalloc(nn ? nn : 1, sizeof(uint32_t));
    for (size_t i = 0; i < n; i++) {
        int k = ops->node_index(sb, v[i].name);
        if (k >= 0 && (uint32_t)k < nn)
            want[k] += v[i].gpus;
    }
    for (uint32_t k = 0; k < nn; k++) {
        if (want[k] != d->pool_foreign_gpus[p][k] && !d->quiet)
            fprintf(stderr, "spillway: %s node %s/%u: %u GPU%s held by jobs not "
                    "submitted through spillway\n", cluster_word(d, p), d->fleet.pools[p].name,
                    k, want[k], want[k] == 1 ? "" : "s");
        foreign_hold(d, p, k, want[k], now);
    }
    free(want);
    free(v);
}

void spw_daemon_pools_sync(spw_daemon_t *d, double now)
{
    if (now - d->nodes_sync_ts < NODES_SYNC_S)
        return;
    d->nodes_sync_ts = now;
    spw_daemon_scloud_sync(d);
    for (size_t p = 0; p < d->fleet.npools; p++) {
        if (is_hosts(d, p)) {
            ssh_sync(d, p);
            continue;
        }
        if (!is_inventory(d, p))
            continue;
        const struct spw_backend_ops *ops = d->pool_ops[p];
        void *sb = d->pool_be[p];
        spw_backend_node_t *v;
        size_t n;
        spw_error_t err;
        /* Read on the backend's worker thread: a slow slurmctld never
         * holds the loop; a read that has not finished yet, or failed
         * (unreachable), keeps what we know. */
        if (ops->nodes_async(sb, &v, &n, &err) <= 0) {
            foreign_sync(d, p, now);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            int k = ops->node_index(sb, v[i].name);
            if (k < 0 || (uint32_t)k >= d->fleet.pools[p].nnodes)
                continue;
            uint8_t down = (uint8_t)(v[i].down != 0);
            if (d->pool_slurm_down[p][k] == down)
                continue;
            d->pool_slurm_down[p][k] = down;
            if (!d->node_down[p][k] == !down)
                continue; /* already so (an administrator, or restored) */
            char *ids = NULL;
            int st = spw_daemon_do_node(d, p, (uint32_t)k, down ? 2 : 0, &ids, &err);
            if (!d->quiet)
                fprintf(stderr, "spillway: %s node %s (%s/%d) is %s%s%s%s%s\n",
                        cluster_word(d, p), v[i].name,
                        d->fleet.pools[p].name, k, down ? v[i].state : "back",
                        v[i].reason[0] ? " (" : "", v[i].reason, v[i].reason[0] ? ")" : "",
                        st == 200 ? "" : "; not applied");
            free(ids);
        }
        free(v);
        foreign_sync(d, p, now);
    }
}
