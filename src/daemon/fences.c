/* fences.c: fences that outlive the daemon.  What a backend must still kill
 * on a host that stopped answering (the copy of an attempt that failed over
 * while its host was cut off) is written to the store in the turn that
 * learns of it, the turn that also requeues the job, and given back to the
 * backend at every start, until the host has answered and confirmed the
 * kill.  So a kill -9 (or a SIGTERM) of the daemon never lets a stale
 * attempt run on beside the next one. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/loop_private.h"

/* The store's pool names of the backends that are no configured pool (a
 * config's pool names are its own; these cannot be told from one only if
 * a pool is named so). */
#define FENCE_CLOUD_HOSTS "@cloud-hosts"    /* SPW_DAEMON_CLOUD_POOL */
#define FENCE_SLURM_CLOUD "@slurm-cloud"    /* SPW_DAEMON_SLURM_CLOUD_POOL */

/* No backend: a pool the config no longer has. */
#define FENCE_NO_POOL INT32_MIN

/* The store's name of pool p's backend. */
static const char *fence_pool_name(const spw_daemon_t *d, int32_t p)
{
    if (p == SPW_DAEMON_CLOUD_POOL)
        return FENCE_CLOUD_HOSTS;
    if (p == SPW_DAEMON_SLURM_CLOUD_POOL)
        return FENCE_SLURM_CLOUD;
    return d->fleet.pools[p].name;
}

/* The pool a stored fence names (FENCE_NO_POOL: none now). */
static int32_t fence_pool_index(const spw_daemon_t *d, const char *name)
{
    if (strcmp(name, FENCE_CLOUD_HOSTS) == 0)
        return d->cloud_be ? SPW_DAEMON_CLOUD_POOL : FENCE_NO_POOL;
    if (strcmp(name, FENCE_SLURM_CLOUD) == 0)
        return d->scloud_be ? SPW_DAEMON_SLURM_CLOUD_POOL : FENCE_NO_POOL;
    int p = spw_daemon_pool_index(d, name);
    return p < 0 ? FENCE_NO_POOL : (int32_t)p;
}

/* Writes fence event e into the turn's transaction; a failure fails the
 * turn's commit, and the event is written again with the next one. */
static void fence_write(spw_daemon_t *d, const dfence_t *e)
{
    spw_error_t err;
    if (spw_store_fence_set(d->store, fence_pool_name(d, e->pool), e->f.host, e->f.what,
                            !e->f.done, e->ts, &err) < 0) {
        dm_say(d, "cannot record the fence of %s on host %s: %s", e->f.what, e->f.host, err.text);
        d->write_failed = 1;
    }
}

/* Takes the fences pool p's backend added and let go since the last call
 * and writes them (kept in d->fev until their commit worked). */
static void fences_collect_pool(spw_daemon_t *d, int32_t p, double now)
{
    void *be;
    const struct spw_backend_ops *ops = spw_daemon_pool_ops(d, p, &be);
    if (!SPW_BACKEND_HAS(ops, 5, fence_events))
        return;
    spw_backend_fence_t ev[32];
    int n;
    while ((n = ops->fence_events(be, ev, 32)) > 0)
        for (int i = 0; i < n; i++) {
            if (d->nfev == d->capfev) {
                d->capfev = d->capfev ? 2 * d->capfev : 16;
                d->fev = spw_xrealloc(d->fev, d->capfev * sizeof(*d->fev));
            }
            dfence_t *e = &d->fev[d->nfev++];
            e->pool = p;
            e->f = ev[i];
            e->ts = now;
            fence_write(d, e);
            if (e->f.done)
                dm_say(d, "fence of %s on host %s (%s) let go: the host confirmed the kill, or "
                       "is gone", e->f.what, e->f.host, fence_pool_name(d, p));
            else
                dm_say(d, "fenced %s on host %s (%s): killed as soon as the host answers, also "
                       "after a restart", e->f.what, e->f.host, fence_pool_name(d, p));
        }
}

void dm_fences_collect(spw_daemon_t *d, int32_t p, double now)
{
    if (p == SPW_DAEMON_CLOUD_POOL ? d->cloud_be != NULL
        : p == SPW_DAEMON_SLURM_CLOUD_POOL ? d->scloud_be != NULL
        : p >= 0 && (size_t)p < d->fleet.npools && d->pool_ops && d->pool_ops[p] != NULL)
        fences_collect_pool(d, p, now);
}

void dm_fences_rewrite(spw_daemon_t *d)
{
    for (size_t i = 0; i < d->nfev; i++)
        fence_write(d, &d->fev[i]);
}

void dm_fences_committed(spw_daemon_t *d)
{
    d->nfev = 0;
}

typedef struct restorectx {
    spw_daemon_t *d;
    size_t given, kept;         /* fences given back, kept without a backend */
} restorectx_t;

static int restore_one(const spw_store_fence_t *f, void *arg)
{
    restorectx_t *c = arg;
    spw_daemon_t *d = c->d;
    int32_t p = fence_pool_index(d, f->pool);
    void *be = NULL;
    const struct spw_backend_ops *ops = p == FENCE_NO_POOL ? NULL : spw_daemon_pool_ops(d, p, &be);
    spw_error_t err;
    if (!ops || !SPW_BACKEND_HAS(ops, 5, fence_add)) {
        snprintf(err.text, sizeof(err.text), "pool %s has no such backend in this config",
                 f->pool);
    } else if (ops->fence_add(be, f->host, f->what, &err) == 0) {
        c->given++;
        return 0;
    }
    /* Kept: should the host come back in the config, the fence applies. */
    dm_say(d, "fence of %s on host %s (%s) kept but not applied: %s", f->what, f->host, f->pool,
           err.text);
    c->kept++;
    return 0;
}

int dm_fences_restore(spw_daemon_t *d, spw_error_t *err)
{
    restorectx_t c = {d, 0, 0};
    if (spw_store_fence_list(d->store, restore_one, &c, err) < 0)
        return -1;
    if (c.given)
        dm_say(d, "%zu fence%s of attempts that failed over given back to their backends: each "
               "is killed when its host answers", c.given, c.given == 1 ? "" : "s");
    /* What recovery fenced itself (find() of a launch it could not adopt). */
    for (int32_t p = SPW_DAEMON_SLURM_CLOUD_POOL; p < (int32_t)d->fleet.npools; p++)
        if (p != -1)
            dm_fences_collect(d, p, d->now);
    if (d->write_failed)
        return spw_errorf(err, "cannot record the fences recovery made (see above)");
    return 0;
}
