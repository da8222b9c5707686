/* registry.c: backends by name (see registry.h). */
#include "backends/registry.h"

#include <stdio.h>
#include <string.h>

#include "backends/local/local.h"
#include "backends/slurm/slurm.h"
#include "backends/ssh/ssh.h"

const char *const spw_backend_names[] = {"local", "slurm", "ssh", NULL};

static void *make_local(const spw_backend_conf_t *c, spw_error_t *err)
{
    spw_local_opts_t lo = {.grace_s = c->grace_s, .log_dir = c->log_dir, .run_dir = c->run_dir,
                           .max_log_bytes = c->max_log_bytes};
    return spw_local_create(&lo, err);
}

static void *make_slurm(const spw_backend_conf_t *c, spw_error_t *err)
{
    spw_slurm_opts_t so = {.partition = c->partition,
                           .slurm_conf = c->slurm_conf,
                           .cmd_timeout_s = c->cmd_timeout_s};
    return spw_slurm_create(&so, err);
}

static void *make_ssh(const spw_backend_conf_t *c, spw_error_t *err)
{
    spw_ssh_opts_t so = {.hosts = c->hosts,
                         .nhosts = c->nhosts,
                         .host_gpus = c->host_gpus,
                         .user = c->ssh_user,
                         .key = c->ssh_key,
                         .known_hosts = c->ssh_known_hosts,
                         .port = c->ssh_port,
                         .log_dir = c->log_dir,
                         .grace_s = c->grace_s,
                         .cmd_timeout_s = c->cmd_timeout_s,
                         .down_after_s = c->down_after_s,
                         .max_log_bytes = c->max_log_bytes,
                         .dynamic = c->dynamic};
    return spw_ssh_create(&so, err);
}

static const struct {
    const char *name;
    const struct spw_backend_ops *ops;
    void *(*make)(const spw_backend_conf_t *c, spw_error_t *err);
} registry[] = {
    {"local", &spw_local_ops, make_local},
    {"slurm", &spw_slurm_ops, make_slurm},
    {"ssh", &spw_ssh_ops, make_ssh},
};

int spw_backend_create(const spw_backend_conf_t *c, const struct spw_backend_ops **ops, void **be,
                       spw_error_t *err)
{
    for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
        if (!c->name || strcmp(registry[i].name, c->name) != 0)
            continue;
        void *b = registry[i].make(c, err);
        if (!b)
            return -1;
        *ops = registry[i].ops;
        *be = b;
        return 0;
    }
    char known[128] = "";
    for (size_t i = 0; spw_backend_names[i]; i++)
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
                 spw_backend_names[i]);
    return spw_errorf(err, "unknown backend '%s' (known: %s)", c->name ? c->name : "", known);
}
