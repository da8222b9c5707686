/* cloud_hosts.c: cloud instances as hosts (the instances of real cloud
 * accounts, aws and command, and emulated ones with daemon.emulated.
 * boot_command; docs/hosts.md, "Cloud instances", docs/clouds.md): an ssh
 * backend whose hosts come and go with the instances runs the cloud jobs
 * on them; an instance joins it once ready and leaves it when it ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "daemon/loop_private.h"

/* EC2's instance metadata service, as every instance reaches it. */
#define SPW_DAEMON_IMDS_URL "http://169.254.169.254"

static char *in_dir(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* The first cloud account whose instances are real hosts (not emulated),
 * or NULL. */
static const char *real_account(const spw_config_t *cfg)
{
    for (size_t k = 0; k < cfg->naccounts; k++)
        if (strcmp(cfg->accounts[k].type, "emulated") != 0)
            return cfg->accounts[k].name;
    return NULL;
}

int spw_daemon_cloud_setup(spw_daemon_t *d, spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &d->cfg->daemon;
    int emu = dc->emulated_boot_command && d->cloud_hosts_dir;
    const char *real = real_account(d->cfg);
    if (!emu && !real)
        return 0;
    if (real && !emu && !(dc->cloud_ssh_given && dc->cloud_ssh_key))
        return spw_errorf(err, "cloud account %s runs its jobs on its instances over ssh: give "
                          "daemon.cloud_ssh.key (the private key whose public half the instances "
                          "accept: the account's key_name or ssh_public_key), and "
                          "daemon.cloud_ssh.user if the login is not root", real);
    /* daemon.cloud_ssh, when given, is how every instance is reached;
     * without it, the emulated hosts' own key and known_hosts. */
    int cs = dc->cloud_ssh_given;
    char *key, *kh;
    if (cs) {
        key = dc->cloud_ssh_key ? spw_xstrdup(dc->cloud_ssh_key)
                                : in_dir(d->cloud_hosts_dir, "id_ed25519");
        kh = dc->cloud_ssh_known_hosts ? spw_xstrdup(dc->cloud_ssh_known_hosts)
                                       : in_dir(d->state_dir, "cloud_known_hosts");
    } else {
        key = dc->emulated_ssh_key ? spw_xstrdup(dc->emulated_ssh_key)
                                   : in_dir(d->cloud_hosts_dir, "id_ed25519");
        kh = dc->emulated_ssh_known_hosts ? spw_xstrdup(dc->emulated_ssh_known_hosts)
                                          : in_dir(d->cloud_hosts_dir, "known_hosts");
    }
    const char *user = cs ? dc->cloud_ssh_user : dc->emulated_ssh_user;
    int port = cs ? (dc->cloud_ssh_port ? dc->cloud_ssh_port : 22)
                  : (dc->emulated_ssh_port ? dc->emulated_ssh_port : 2222);
    spw_backend_conf_t bc = {.name = SPW_BACKEND_HOSTS,
                             .dynamic = 1,
                             .ssh_user = user ? user : "root",
                             .ssh_key = key,
                             .ssh_known_hosts = kh,
                             /* A real cloud's host keys are not known before
                              * its instances boot: learnt at first contact
                              * into STATE_DIR/cloud_known_hosts, unless the
                              * config names a known_hosts file. */
                             .ssh_accept_new_keys = cs && !dc->cloud_ssh_known_hosts,
                             .ssh_port = port,
                             .log_dir = d->log_dir,
                             .max_log_bytes = dc->max_log_bytes,
                             .image_max_bytes = dc->image_max_bytes,
                             .image_max_files = dc->image_max_files,
                             .grace_s = dc->kill_grace_s,
                             .job_pids_max = dc->job_pids_max,
                             .job_memory_mib = dc->job_memory_mib,
                             .down_after_s = cs ? dc->cloud_ssh_down_after_s
                                                : dc->emulated_ssh_down_after_s};
    spw_error_t e2;
    int rc = spw_backend_create(&bc, &d->cloud_ops, &d->cloud_be, &e2);
    free(key);
    free(kh);
    if (rc < 0)
        return spw_errorf(err, "%s: the cloud instances' ssh backend: %s",
                          cs ? "daemon.cloud_ssh" : "daemon.emulated", e2.text);
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

/* The value of account a's option `key` ("KEY=VALUE"), or NULL. */
static const char *acct_option(const dacct_t *a, const char *key)
{
    size_t n = strlen(key);
    const char *v = NULL;
    for (char **o = a && a->conf ? a->conf->options : NULL; o && *o; o++)
        if (strncmp(*o, key, n) == 0 && (*o)[n] == '=')
            v = *o + n + 1;
    return v;
}

void spw_daemon_cloud_host_name(const spw_daemon_t *d, const dinst_t *x, char *buf, size_t len)
{
    const char *user = acct_option(dm_acct_of_inst(d, x), "user");
    snprintf(buf, len, "%s%s%s", user ? user : "", user ? "@" : "", x->in.addr);
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
    char host[SPW_INSTANCE_ADDR_MAX + 64];
    spw_daemon_cloud_host_name(d, x, host, sizeof(host));
    uint32_t g = d->fleet.offers[x->in.offer].gpus;
    if (d->cloud_ops->host_add(d->cloud_be, host, g ? g : 1, &err) < 0 && !d->quiet)
        fprintf(stderr, "spillway: instance %s (%s): %s\n", x->in.id, host, err.text);
    else if (!d->quiet)
        fprintf(stderr, "spillway: instance %s is host %s\n", x->in.id, host);
}

void spw_daemon_cloud_host_gone(spw_daemon_t *d, dinst_t *x, double now)
{
    if (!d->cloud_be || !x->in.addr[0])
        return;
    char host[SPW_INSTANCE_ADDR_MAX + 64];
    spw_daemon_cloud_host_name(d, x, host, sizeof(host));
    (void)d->cloud_ops->host_remove(d->cloud_be, host, now);
}

/* The metadata service the hosts of account a read spot notices from: the
 * account's imds_url (EC2's own address by default), NULL for an account
 * that is not aws or whose imds_url is none. */
static const char *imds_url(const dacct_t *a)
{
    if (!a || !a->conf || strcmp(a->conf->type, "aws") != 0)
        return NULL;
    const char *v = acct_option(a, "imds_url");
    if (!v)
        return SPW_DAEMON_IMDS_URL;
    return strcmp(v, "none") == 0 ? NULL : v;
}

void spw_daemon_cloud_notices(spw_daemon_t *d, double now)
{
    if (!d->cloud_be || !SPW_BACKEND_HAS(d->cloud_ops, 6, host_notice))
        return;
    for (size_t i = 0; i < d->ninst; i++) {
        dinst_t *x = &d->inst[i];
        if (x->in.state != SPW_INSTANCE_READY || !x->in.spot || !x->in.addr[0] ||
            x->noticed_ts > 0)
            continue;
        const char *url = imds_url(dm_acct_of_inst(d, x));
        if (!url)
            continue;
        char host[SPW_INSTANCE_ADDR_MAX + 64], notice[256];
        spw_daemon_cloud_host_name(d, x, host, sizeof(host));
        if (d->cloud_ops->host_notice(d->cloud_be, host, url, notice, sizeof(notice)) != 1)
            continue;
        /* The cloud takes the instance back soon (EC2: two minutes): its
         * job stops now, while the machine is still there to write its
         * checkpoint (SIGTERM, kill_grace_s), and resumes elsewhere; the
         * instance takes no more work. */
        x->noticed_ts = now;
        dm_say(d, "instance %s: spot interruption notice on the host: %s", x->in.id, notice);
        djob_t *j = x->job_seq ? d->jobs[x->job_seq] : NULL;
        if (j) {
            char what[128];
            snprintf(what, sizeof(what), "instance %s: spot interruption notice", x->in.id);
            dm_job_interrupt(d, j, SPW_INTERRUPT_PREEMPTED, what, now);
        }
    }
}
