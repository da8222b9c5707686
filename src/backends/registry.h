/* registry.h: backends by name, the only place that names a concrete
 * backend: the daemon's local backend, each pool of its config (`backend:
 * local`, `slurm`, `ssh` or
 * `kubernetes`), the hosts of its cloud instances (ssh with
 * dynamic hosts) and its Slurm cloud partition are all made here, and used
 * through struct spw_backend_ops alone (backend.h; SPW_BACKEND_HAS tells
 * what a backend can do). */
#ifndef SPW_BACKENDS_REGISTRY_H
#define SPW_BACKENDS_REGISTRY_H

#include <stdint.h>

#include "backends/backend.h"
#include "util/error.h"

/* What any backend may need; each takes the members it knows and ignores
 * the others.  All borrowed for the call only. */
typedef struct spw_backend_conf {
    const char *name;           /* one of spw_backend_names */
    const char *log_dir;        /* the daemon's log directory (local: where
                                   exit records of jobs without a token are
                                   read; ssh: required) */
    const char *run_dir;        /* local: existing directory, private to the
                                   daemon, for launch fences and exit
                                   records by token; NULL = launches with a
                                   token fail */
    double grace_s;             /* local, ssh: SIGTERM to SIGKILL on cancel,
                                   seconds */
    double cmd_timeout_s;       /* slurm, ssh: limit of one command, seconds;
                                   0 = the backend's default */
    const char *partition;      /* slurm: the partition; required */
    const char *slurm_conf;     /* slurm: SLURM_CONF; NULL = environment */
    const char *const *hosts;   /* ssh: the hosts, nhosts of them */
    size_t nhosts;              /* ssh: entries in hosts */
    const uint32_t *host_gpus;  /* ssh: GPU slots per host; NULL = detect */
    int dynamic;                /* ssh: 1 = hosts come and go (host_add,
                                   host_remove: the daemon's cloud
                                   instances); nhosts may then be 0 */
    const char *ssh_user;       /* ssh: login user; NULL = ssh's default */
    const char *ssh_key;        /* ssh: private key file; NULL = default */
    const char *ssh_known_hosts; /* ssh: known_hosts file; NULL = default */
    int ssh_accept_new_keys;    /* ssh: learn unknown host keys at first
                                   contact (cloud instances); 0 = refuse */
    int ssh_port;               /* ssh: port; 0 = 22 */
    double down_after_s;        /* ssh: a host silent this long is down,
                                   seconds; 0 = 10 */
    uint32_t job_pids_max;      /* local, ssh: processes per job (its
                                   cgroup's pids.max); 0 = no limit */
    uint64_t job_memory_mib;    /* local, ssh: memory per job, MiB (its
                                   cgroup's limit); 0 = no limit */
    uint64_t max_log_bytes;     /* local, ssh: bytes each of a job's log
                                   files may reach; what comes after is
                                   dropped behind a marker line; 0 = no cap */
    const char *image_dir;      /* local: the trusted image cache, one
                                   directory per team under it (container.h);
                                   NULL = OCI archives need podman */
    uint64_t image_max_bytes;   /* local, ssh: bytes an OCI archive and its
                                   unpacked tree may reach; 0 = 32 GiB */
    uint64_t image_max_files;   /* local, ssh: entries an OCI archive may
                                   unpack to; 0 = 1,000,000 */
    const char *kubeconfig;     /* kubernetes: kubeconfig file; NULL = default */
    const char *kube_context;   /* kubernetes: its context; NULL = current */
    const char *kube_namespace; /* kubernetes: namespace; NULL = the context's */
    const char *const *kube_node_selector; /* kubernetes: "KEY=VALUE", NULL-terminated */
    const char *kube_tolerations; /* kubernetes: JSON array of Tolerations */
    const char *kube_priority_class; /* kubernetes: priorityClassName */
    const char *kube_local_queue; /* kubernetes: Kueue LocalQueue; NULL = none */
    const char *kube_image;     /* kubernetes: default image */
    double kube_ttl_s;          /* kubernetes: ttlSecondsAfterFinished; 0 = 3600 */
} spw_backend_conf_t;

/* The names known, NULL-terminated, for messages. */
extern const char *const spw_backend_names[];

/* The backends of the roles the daemon fills itself, so that it names a
 * role, not a backend: the one that runs jobs on this machine (the
 * daemon's own, and a pool's that names none), and the one that runs jobs
 * on plain hosts that come and go (a cloud's instances; make it with
 * conf.dynamic = 1). */
#define SPW_BACKEND_THIS_MACHINE "local"
#define SPW_BACKEND_HOSTS "ssh"
/* The backend of a partition whose powered-down cloud nodes the daemon's
 * cloud instances become (cloud.slurm_partition). */
#define SPW_BACKEND_CLOUD_NODES "slurm"

/* Makes the backend named c->name: 0 with *ops and *be (free with
 * (*ops)->destroy), or -1 with a sentence in err (an unknown name, which
 * lists the known ones; bad options) and nothing made. */
int spw_backend_create(const spw_backend_conf_t *c, const struct spw_backend_ops **ops, void **be,
                       spw_error_t *err);

#endif
