/* registry.c: backends by name (see registry.h). */
#include "backends/registry.h"

#include "backends/kubernetes/kubernetes.h"
#include "backends/local/local.h"
#include "backends/slurm/slurm.h"
#include "backends/ssh/ssh.h"
#include "util/names.h"

const char *const spw_backend_names[] = {"local", "slurm", "ssh", "kubernetes", NULL};

static void *make_local(const spw_backend_conf_t *c, spw_error_t *err)
{
    spw_local_opts_t lo = {.grace_s = c->grace_s,
                           .log_dir = c->log_dir,
                           .run_dir = c->run_dir,
                           .max_log_bytes = c->max_log_bytes,
                           .image_dir = c->image_dir,
                           .image_max_bytes = c->image_max_bytes,
                           .image_max_files = c->image_max_files,
                           .cgroups = 1,
                           .pids_max = c->job_pids_max,
                           .memory_mib = c->job_memory_mib};
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
                         .accept_new_keys = c->ssh_accept_new_keys,
                         .port = c->ssh_port,
                         .log_dir = c->log_dir,
                         .grace_s = c->grace_s,
                         .cmd_timeout_s = c->cmd_timeout_s,
                         .down_after_s = c->down_after_s,
                         .max_log_bytes = c->max_log_bytes,
                         .image_max_bytes = c->image_max_bytes,
                         .image_max_files = c->image_max_files,
                         .dynamic = c->dynamic,
                         .job_pids_max = c->job_pids_max,
                         .job_memory_mib = c->job_memory_mib};
    return spw_ssh_create(&so, err);
}

static void *make_kube(const spw_backend_conf_t *c, spw_error_t *err)
{
    spw_kube_opts_t ko = {.kubeconfig = c->kubeconfig,
                          .context = c->kube_context,
                          .ns = c->kube_namespace,
                          .node_selector = c->kube_node_selector,
                          .tolerations_json = c->kube_tolerations,
                          .priority_class = c->kube_priority_class,
                          .local_queue = c->kube_local_queue,
                          .image = c->kube_image,
                          .log_dir = c->log_dir,
                          .kill_grace_s = c->grace_s,
                          .ttl_after_finished_s = c->kube_ttl_s,
                          .timeout_s = c->cmd_timeout_s};
    return spw_kube_create(&ko, err);
}

/* In the order of spw_backend_names[]. */
static const struct {
    const struct spw_backend_ops *ops;
    void *(*make)(const spw_backend_conf_t *c, spw_error_t *err);
} registry[] = {
    {&spw_local_ops, make_local},
    {&spw_slurm_ops, make_slurm},
    {&spw_ssh_ops, make_ssh},
    {&spw_kube_ops, make_kube},
};
_Static_assert(sizeof(registry) / sizeof(registry[0]) ==
                   sizeof(spw_backend_names) / sizeof(spw_backend_names[0]) - 1,
               "one registry entry per name");

int spw_backend_create(const spw_backend_conf_t *c, const struct spw_backend_ops **ops, void **be,
                       spw_error_t *err)
{
    int k = spw_names_find(spw_backend_names, c->name);
    if (k < 0) {
        char known[128];
        return spw_errorf(err, "unknown backend '%s' (known: %s)", c->name ? c->name : "",
                          spw_names_join(spw_backend_names, known, sizeof(known)));
    }
    void *made = registry[k].make(c, err);
    if (!made)
        return -1;
    *ops = registry[k].ops;
    *be = made;
    return 0;
}
