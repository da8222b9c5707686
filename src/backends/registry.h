/* registry.h: backends by name, so that each pool of the daemon's config
 * can name the backend that runs its jobs (`backend: local` or `slurm`). */
#ifndef SPW_BACKENDS_REGISTRY_H
#define SPW_BACKENDS_REGISTRY_H

#include <stdint.h>

#include "backends/backend.h"
#include "util/error.h"

/* What any backend may need; each takes the members it knows.  All
 * borrowed for the call only. */
typedef struct spw_backend_conf {
    const char *name;           /* "local", "slurm" or "ssh" */
    const char *log_dir;        /* the daemon's log directory */
    double grace_s;             /* local: SIGTERM to SIGKILL on cancel */
    const char *partition;      /* slurm: the partition; required */
    const char *slurm_conf;     /* slurm: SLURM_CONF; NULL = environment */
    const char *const *hosts;   /* ssh: the hosts, nhosts of them */
    size_t nhosts;              /* ssh: entries in hosts */
    const uint32_t *host_gpus;  /* ssh: GPU slots per host; NULL = detect */
    const char *ssh_user;       /* ssh: login user; NULL = ssh's default */
    const char *ssh_key;        /* ssh: private key file; NULL = default */
    const char *ssh_known_hosts; /* ssh: known_hosts file; NULL = default */
    int ssh_port;               /* ssh: port; 0 = 22 */
    double down_after_s;        /* ssh: a host silent this long is down; 0 = 10 */
} spw_backend_conf_t;

/* The names known, NULL-terminated, for messages. */
extern const char *const spw_backend_names[];

/* Makes the backend named c->name: 0 with *ops and *be (free with
 * (*ops)->destroy), or -1 with a sentence in err (unknown name, bad
 * options). */
int spw_backend_create(const spw_backend_conf_t *c, const struct spw_backend_ops **ops, void **be,
                       spw_error_t *err);

#endif
