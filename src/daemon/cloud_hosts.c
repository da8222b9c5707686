/* cloud_hosts.c: cloud instances as hosts (daemon.emulated.boot_command;
 * docs/hosts.md, "Cloud instances"): an ssh backend whose hosts come and go
 * with the instances runs the cloud jobs on them; an instance joins it once
 * ready and leaves it when it ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "daemon/loop_private.h"

static char *in_dir(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int spw_daemon_cloud_setup(spw_daemon_t *d, spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &d->cfg->daemon;
    if (!dc->emulated_boot_command || !d->cloud_hosts_dir)
        return 0;
    char *key = dc->emulated_ssh_key ? spw_xstrdup(dc->emulated_ssh_key)
                                     : in_dir(d->cloud_hosts_dir, "id_ed25519");
    char *kh = dc->emulated_ssh_known_hosts ? spw_xstrdup(dc->emulated_ssh_known_hosts)
                                            : in_dir(d->cloud_hosts_dir, "known_hosts");
    spw_backend_conf_t bc = {.name = SPW_BACKEND_HOSTS,
                             .dynamic = 1,
                             .ssh_user = dc->emulated_ssh_user ? dc->emulated_ssh_user : "root",
                             .ssh_key = key,
                             .ssh_known_hosts = kh,
                             .ssh_port = dc->emulated_ssh_port ? dc->emulated_ssh_port : 2222,
                             .log_dir = d->log_dir,
                             .max_log_bytes = dc->max_log_bytes,
                             .image_max_bytes = dc->image_max_bytes,
                             .image_max_files = dc->image_max_files,
                             .grace_s = dc->kill_grace_s,
                             .job_pids_max = dc->job_pids_max,
                             .job_memory_mib = dc->job_memory_mib,
                             .down_after_s = dc->emulated_ssh_down_after_s};
    spw_error_t e2;
    int rc = spw_backend_create(&bc, &d->cloud_ops, &d->cloud_be, &e2);
    free(key);
    free(kh);
    if (rc < 0)
        return spw_errorf(err, "daemon.emulated: the cloud instances' ssh backend: %s", e2.text);
    return 0;
}

int32_t spw_daemon_cloud_pool(const spw_daemon_t *d, const djob_t *j)
{
    if (d->scloud_be)
        return SPW_DAEMON_SLURM_CLOUD_POOL;
    if (!d->cloud_be || j->ninst == 0)
        return -1;
    for (size_t k = 0; k < j->ninst; k++)
        if (!d->inst[j->inst[k]].in.addr[0])
            return -1;
    return SPW_DAEMON_CLOUD_POOL;
}

void spw_daemon_cloud_host_up(spw_daemon_t *d, dinst_t *x)
{
    spw_instance_t now;
    spw_error_t err;
    if (!d->cloud_be)
        return;
    /* The provider's word; else (it cannot describe it) the address the
     * store kept. */
    const dacct_t *a = dm_acct_of_inst(d, x);
    if (a && a->ops->version >= 2 && a->ops->describe &&
        a->ops->describe(a->pv, x->in.id, &now, &err) == 0 && now.addr[0])
        snprintf(x->in.addr, sizeof(x->in.addr), "%s", now.addr);
    if (!x->in.addr[0])
        return;
    uint32_t g = d->fleet.offers[x->in.offer].gpus;
    if (d->cloud_ops->host_add(d->cloud_be, x->in.addr, g ? g : 1, &err) < 0 && !d->quiet)
        fprintf(stderr, "spillway: instance %s (%s): %s\n", x->in.id, x->in.addr, err.text);
    else if (!d->quiet)
        fprintf(stderr, "spillway: instance %s is host %s\n", x->in.id, x->in.addr);
}

void spw_daemon_cloud_host_gone(spw_daemon_t *d, dinst_t *x, double now)
{
    if (d->cloud_be && x->in.addr[0])
        (void)d->cloud_ops->host_remove(d->cloud_be, x->in.addr, now);
}
