/* slurmcloud.c: cloud instances that are the State=CLOUD nodes of a Slurm
 * partition (cloud.slurm_partition; docs/slurm.md, "Bursting to Slurm cloud
 * nodes").  The engine bursts a job to a cloud offer as always (its wait
 * policy, budgets, caps, rules and residency decide); the daemon acquires
 * the instances from its provider, makes each one a node of the partition
 * no live instance is, and submits the job there (SPILLWAY_SLURM_NODES pins
 * it).  Slurm then powers the nodes up through its ResumeProgram, which asks
 * the daemon which instance a node is (POST /v1/slurm/nodes/N/resume): a
 * node that is no instance is refused, and the program sets it DOWN.  Its
 * SuspendProgram releases the node's instance (.../suspend). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "daemon/loop_private.h"
#include "util/file.h"

int spw_daemon_scloud_setup(spw_daemon_t *d, spw_error_t *err)
{
    const char *part = d->cfg->cloud_slurm_partition;
    if (!part)
        return 0;
    spw_backend_conf_t bc = {.name = SPW_BACKEND_CLOUD_NODES,
                             .partition = part,
                             .slurm_conf = d->cfg->cloud_slurm_conf};
    spw_error_t e2;
    const struct spw_backend_ops *ops;
    void *sb;
    if (spw_backend_create(&bc, &ops, &sb, &e2) < 0)
        return spw_errorf(err, "cloud.slurm_partition %s: %s", part, e2.text);
    spw_backend_node_t *v;
    size_t n;
    if (ops->nodes(sb, &v, &n, &e2) == 0) {
        spw_daemon_slurm_cache_write(d, "slurm-cloud-partition", v, n);
    } else if (spw_daemon_slurm_cache_read(d, "slurm-cloud-partition", &v, &n) == 0) {
        /* Up to the first read that works, no node counts as down: a node
         * Slurm has down refuses its resume, and the job is placed again. */
        if (!d->quiet)
            fprintf(stderr, "spillway: cloud.slurm_partition %s: Slurm does not answer (%s); "
                    "using its %zu nodes as last read, until it does\n", part, e2.text, n);
    } else {
        ops->destroy(sb);
        return spw_errorf(err, "cloud.slurm_partition %s: cannot read its nodes: %s", part, e2.text);
    }
    if (n == 0) {
        free(v);
        ops->destroy(sb);
        return spw_errorf(err, "cloud.slurm_partition %s has no node", part);
    }
    ops->set_nodes(sb, v, n);
    d->scloud_nodes = spw_xcalloc(n, sizeof(char *));
    d->scloud_down = spw_xcalloc(n, 1);
    for (size_t i = 0; i < n; i++) {
        d->scloud_nodes[i] = spw_xstrdup(v[i].name);
        d->scloud_down[i] = (uint8_t)(v[i].down != 0);
    }
    d->nscloud = n;
    free(v);
    d->scloud_ops = ops;
    d->scloud_be = sb;
    char path[4200];
    snprintf(path, sizeof(path), "%s/slurm-cloud-nodes", d->state_dir);
    spw_error_t e3;
    size_t len;
    d->scloud_saved = spw_read_file(path, &len, &e3);   /* none: a first start */
    return 0;
}

/* STATE_DIR/slurm-cloud-nodes: which node each live instance is, one
 * "INSTANCE NODE" line each, rewritten whenever that changes, so that a
 * daemon restarted (even after kill -9) still knows which instance a node
 * is when Slurm resumes or suspends it. */
static void save_nodes(const spw_daemon_t *d)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/slurm-cloud-nodes", d->state_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    for (size_t i = 0; i < d->ninst; i++) {
        const dinst_t *x = &d->inst[i];
        if (x->snode && x->snode <= d->nscloud && spw_instance_state_live(x->in.state))
            fprintf(f, "%s %s\n", x->in.id, d->scloud_nodes[x->snode - 1]);
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        remove(tmp);
}

/* The bindings saved before a restart, onto the instances recovered. */
static void restore_nodes(spw_daemon_t *d)
{
    char *save = NULL;
    for (char *l = strtok_r(d->scloud_saved, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char id[SPW_INSTANCE_ID_MAX], node[64];
        if (sscanf(l, "%31s %63s", id, node) != 2)
            continue;
        int k = d->scloud_ops->node_index(d->scloud_be, node);
        for (size_t i = 0; k >= 0 && i < d->ninst; i++)
            if (strcmp(d->inst[i].in.id, id) == 0 && spw_instance_state_live(d->inst[i].in.state))
                d->inst[i].snode = (uint32_t)k + 1;
    }
    free(d->scloud_saved);
    d->scloud_saved = NULL;
}

void spw_daemon_scloud_destroy(spw_daemon_t *d)
{
    free(d->scloud_saved);
    d->scloud_saved = NULL;
    if (d->scloud_be)
        d->scloud_ops->destroy(d->scloud_be);   /* forgets its jobs, cancels none */
    d->scloud_be = NULL;
    for (size_t i = 0; i < d->nscloud; i++)
        free(d->scloud_nodes[i]);
    free(d->scloud_nodes);
    d->scloud_nodes = NULL;
    free(d->scloud_down);
    d->scloud_down = NULL;
    d->nscloud = 0;
}

void spw_daemon_scloud_sync(spw_daemon_t *d)
{
    if (!d->scloud_be)
        return;
    if (d->scloud_saved)
        restore_nodes(d);
    spw_backend_node_t *v;
    size_t n;
    spw_error_t err;
    if (d->scloud_ops->nodes_async(d->scloud_be, &v, &n, &err) <= 0)
        return;   /* not read yet, or Slurm does not answer: keep what we know */
    for (size_t i = 0; i < n; i++) {
        int k = d->scloud_ops->node_index(d->scloud_be, v[i].name);
        if (k >= 0 && (size_t)k < d->nscloud)
            d->scloud_down[k] = (uint8_t)(v[i].down != 0);
    }
    free(v);
}

/* Which nodes cannot be made an instance now: taken[k] for node k, a node
 * a live instance is or one Slurm has down. */
static void taken_nodes(const spw_daemon_t *d, uint8_t *taken)
{
    memcpy(taken, d->scloud_down, d->nscloud);
    for (size_t i = 0; i < d->ninst; i++) {
        const dinst_t *x = &d->inst[i];
        if (x->snode && x->snode <= d->nscloud && spw_instance_state_live(x->in.state))
            taken[x->snode - 1] = 1;
    }
}

size_t spw_daemon_scloud_free(spw_daemon_t *d)
{
    if (!d->nscloud)
        return 0;
    if (d->scloud_saved)
        restore_nodes(d);
    uint8_t *taken = spw_xcalloc(d->nscloud, 1);
    taken_nodes(d, taken);
    size_t n = 0;
    for (size_t k = 0; k < d->nscloud; k++)
        n += !taken[k];
    free(taken);
    return n;
}

int spw_daemon_scloud_bind(spw_daemon_t *d, djob_t *j)
{
    if (!d->nscloud)
        return -1;
    if (d->scloud_saved)
        restore_nodes(d);
    uint8_t *taken = spw_xcalloc(d->nscloud, 1);
    taken_nodes(d, taken);
    int rc = 0;
    size_t k = 0;
    for (size_t i = 0; i < j->ninst; i++) {
        dinst_t *x = &d->inst[j->inst[i]];
        if (x->snode)
            continue;
        while (k < d->nscloud && taken[k])
            k++;
        if (k == d->nscloud) {
            rc = -1;
            break;
        }
        taken[k] = 1;
        x->snode = (uint32_t)k + 1;
    }
    free(taken);
    save_nodes(d);
    return rc;
}

char *spw_daemon_scloud_env(const spw_daemon_t *d, const djob_t *j)
{
    if (!d->scloud_be)
        return NULL;
    size_t cap = 32 + j->ninst * 66, used = 0;
    char *s = spw_xmalloc(cap);
    used += (size_t)snprintf(s, cap, "SPILLWAY_SLURM_NODES=");
    for (size_t i = 0; i < j->ninst; i++) {
        const dinst_t *x = &d->inst[j->inst[i]];
        if (x->snode && x->snode <= d->nscloud)
            used += (size_t)snprintf(s + used, cap - used, "%s%s", used > 21 ? "," : "",
                                     d->scloud_nodes[x->snode - 1]);
    }
    return s;
}

/* The live instance that node `name` is, or NULL; *known: the partition
 * has such a node. */
static dinst_t *node_inst(spw_daemon_t *d, const char *name, int *known)
{
    *known = 0;
    if (d->scloud_saved)
        restore_nodes(d);
    for (size_t k = 0; k < d->nscloud; k++) {
        if (strcmp(d->scloud_nodes[k], name) != 0)
            continue;
        *known = 1;
        for (size_t i = 0; i < d->ninst; i++)
            if (d->inst[i].snode == k + 1 && spw_instance_state_live(d->inst[i].in.state))
                return &d->inst[i];
    }
    return NULL;
}

int spw_daemon_scloud_node(spw_daemon_t *d, const char *node, int resume, dinst_t **xp,
                           const char **state, spw_error_t *err)
{
    *xp = NULL;
    *state = NULL;
    if (!d->scloud_be)
        return spw_errorf(err, "this daemon has no Slurm cloud partition (cloud.slurm_partition)"),
               404;
    int known;
    dinst_t *x = node_inst(d, node, &known);
    *xp = x;
    if (!known)
        return spw_errorf(err, "node %s is not in Slurm cloud partition %s", node,
                          d->cfg->cloud_slurm_partition),
               404;
    if (resume && !x)
        /* Slurm powers it up for a job spillway did not burst there (an
         * sbatch to the cloud partition, or a placement since refused). */
        return spw_errorf(err, "no spillway instance is node %s (only jobs spillway bursts run "
                          "on partition %s)", node, d->cfg->cloud_slurm_partition),
               409;
    if (resume) {
        *state = "up";
        return 200;
    }
    if (!x) {
        *state = "none";
        return 200;
    }
    if (x->job_seq) {
        *state = "busy";   /* bound again since Slurm found it idle: kept */
        return 200;
    }
    if (spw_daemon_inst_release(d, x, fmax(spw_daemon_clock(), d->now), err) < 0)
        return 503;
    save_nodes(d);
    *state = "released";
    return 200;
}
