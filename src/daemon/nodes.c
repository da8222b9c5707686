/* nodes.c: on-prem nodes taken out of service and brought back (by an
 * administrator, or by a backend that saw them fail): their jobs fail over,
 * and the down state survives restarts. */

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "daemon/loop_private.h"

typedef struct nodectx {
    spw_daemon_t *d;
} nodectx_t;

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
        dm_job_interrupt(d, j, SPW_INTERRUPT_NODE_FAILED, what, now);
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
        dm_say(d, "the engine refused to take node %s/%u down", d->fleet.pools[pool].name, node);
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
        dm_say(d, "node %s/%u is down (by an administrator)", name, node);
    } else {
        if (spw_engine_node_down(d->engine, pool, node, 0, now) < 0)
            dm_say(d, "the engine refused to bring node %s/%u back", name, node);
        d->node_down[pool][node] = 0;
        dm_say(d, "node %s/%u is up again", name, node);
    }
    if (tx && spw_store_commit(d->store, &e2) < 0)
        dm_say(d, "cannot commit the state of node %s/%u: %s", name, node, e2.text);
    pthread_cond_signal(&d->wake);
    return 200;
}

/* Whether pool p could hold a job of `gpus` GPUs on its nodes in service
 * (all its nodes when all_nodes): on one node, or over whole nodes when the
 * job is larger than the largest node, as the engine places it. */
static int pool_holds(const spw_daemon_t *d, size_t p, uint32_t gpus, int all_nodes)
{
    const spw_pool_spec_t *ps = &d->fleet.pools[p];
    uint64_t total = 0;
    uint32_t most = 0, most_up = 0;
    for (uint32_t k = 0; k < ps->nnodes; k++) {
        if (ps->node_gpus[k] > most)
            most = ps->node_gpus[k];
        if (d->node_down[p][k] && !all_nodes)
            continue;
        total += ps->node_gpus[k];
        if (ps->node_gpus[k] > most_up)
            most_up = ps->node_gpus[k];
    }
    return gpus <= most ? most_up >= gpus : total >= gpus;
}

int spw_daemon_waits_for_nodes(const spw_daemon_t *d, const djob_t *j, char *buf, size_t len)
{
    const spw_fleet_t *f = &d->fleet;
    if (j->st != SPW_DJOB_QUEUED || !d->node_down)
        return 0;
    int wait = 0;
    for (size_t p = 0; p < f->npools; p++) {
        if (!spw_daemon_model_ok(&f->models, j->gpu_mask, f->pools[p].model))
            continue;
        if (pool_holds(d, p, j->gpus, 0))
            return 0;
        wait |= pool_holds(d, p, j->gpus, 1);
    }
    if (!wait)
        return 0;
    size_t used = (size_t)snprintf(buf, len, "waits: nodes ");
    int first = 1;
    for (size_t p = 0; p < f->npools && used < len; p++) {
        if (!spw_daemon_model_ok(&f->models, j->gpu_mask, f->pools[p].model) ||
            !pool_holds(d, p, j->gpus, 1))
            continue;
        for (uint32_t k = 0; k < f->pools[p].nnodes && used < len; k++)
            if (d->node_down[p][k]) {
                used += (size_t)snprintf(buf + used, len - used, "%s%s/%u", first ? "" : ", ",
                                         f->pools[p].name, k);
                first = 0;
            }
    }
    if (used < len)
        snprintf(buf + used, len - used, " are down");
    return 1;
}

int spw_daemon_pool_index(const spw_daemon_t *d, const char *name)
{
    for (size_t i = 0; i < d->fleet.npools; i++)
        if (strcmp(d->fleet.pools[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int load_node(const spw_store_node_t *n, void *arg)
{
    spw_daemon_t *d = ((nodectx_t *)arg)->d;
    int p = spw_daemon_pool_index(d, n->pool);
    if (p < 0 || n->node < 0 || (uint64_t)n->node >= d->fleet.pools[p].nnodes) {
        dm_say(d, "node %s/%" PRId64 " was down, but the config no longer has it", n->pool, n->node);
        return 0;
    }
    d->node_down[p][n->node] = 2;   /* down in the store; the engine not told yet */
    if (n->by_backend && d->pool_ops && d->pool_ops[p] && d->pool_slurm_down) {
        /* Its backend took it down: it comes back when the backend sees it
         * answer again (pools.c), however many restarts later. */
        if (!d->pool_slurm_down[p])
            d->pool_slurm_down[p] = spw_xcalloc(d->fleet.pools[p].nnodes, sizeof(uint8_t));
        d->pool_slurm_down[p][n->node] = 1;
    }
    return 0;
}

/* After recovery: the nodes an administrator took down stay down; those
 * their backend took down stay down until it sees them answer. */
int dm_restore_nodes(spw_daemon_t *d, spw_error_t *err)
{
    nodectx_t c = {d};
    if (spw_store_node_list(d->store, load_node, &c, err) < 0)
        return -1;
    for (size_t p = 0; p < d->fleet.npools; p++)
        for (uint32_t n = 0; n < d->fleet.pools[p].nnodes; n++)
            if (d->node_down[p][n] == 2) {
                node_down_now(d, p, n, NULL, d->now);
                dm_say(d, "node %s/%u stays down", d->fleet.pools[p].name, n);
            }
    return 0;
}
