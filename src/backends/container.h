/* container.h: how a backend runs a job in a container image (the job
 * spec's image, docs/hosts.md), shared by the local and ssh backends: a
 * POSIX-sh fragment that turns the job's command into the command that runs
 * it under podman or bubblewrap on the host it runs on, and podman's
 * command line.
 *
 * Image forms (decided on the host, where the files are):
 * - an absolute path to a directory: an unpacked root filesystem, run under
 *   bubblewrap (bwrap);
 * - an absolute path to a file, or "oci-archive:PATH": an OCI image archive
 *   (`podman save --format oci-archive`, `skopeo copy ... oci-archive:`),
 *   run by podman when the host has it, else unpacked once with tar into a
 *   cache directory (layers applied in order, whiteouts honoured) and run
 *   under bubblewrap;
 * - anything else: a registry reference, which needs podman on the host.
 * Under podman: --network=host, the GPUs as CDI devices (nvidia.com/gpu=N)
 * when the host has an NVIDIA CDI spec, else their /dev/nvidia* nodes.
 * Under bubblewrap: every top-level entry of the root filesystem bound
 * read-only (symlinks kept), fresh /proc, /dev and /tmp, every /dev/nvidia*
 * of the host bound, the host's network, its own pid namespace, killed with
 * its parent.  Both mount the workdir (also the starting directory) and the
 * checkpoint directory read-write at the same paths. */
#ifndef SPW_BACKENDS_CONTAINER_H
#define SPW_BACKENDS_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

/* What to wrap; everything borrowed for the call. */
typedef struct spw_container {
    const char *image;          /* as in the job spec; required */
    const char *token;          /* launch token: names the podman container */
    const char *workdir;        /* mounted read-write, started in; NULL = none */
    const char *ckpt;           /* checkpoint directory, mounted read-write;
                                   NULL = none */
    const uint32_t *gpus;       /* the job's GPU indices on this host */
    size_t ngpus;               /* entries in gpus */
    const char *const *env_names; /* NULL-terminated names podman passes on
                                   from the launching shell (-e NAME) */
    const char *cache_dir;      /* shell text (expanded, not quoted: the
                                   backend's own, never the user's) of the
                                   directory where OCI archives are unpacked,
                                   e.g. "$R/images"; NULL = the job's
                                   $SPILLWAY_IMAGE_CACHE, else
                                   ${TMPDIR:-/tmp}/spillway-images-UID */
} spw_container_t;

/* Appends to s the sh lines that replace the positional parameters (the
 * job's command, "$@") with the command that runs it in c->image.  The
 * script must define `die` (called with a sentence when the host can run
 * neither podman nor bubblewrap, or the image is missing; it must not
 * return) before these lines run.  When the script runs as root for a job
 * of another user (ssh hosts), it sets SPW_JOB_UID and SPW_JOB_GID to that
 * user's before these lines: an OCI archive is then unpacked as that user
 * (setpriv), never as root, into that user's cache directory, so that a
 * hostile archive (a layer's symlink leading out of the root filesystem)
 * can write nowhere the job could not. */
void spw_container_wrap(spw_strbuf_t *s, const spw_container_t *c);

/* podman's command line for c, to which the job's command is appended:
 * `podman run --rm --name spw-TOKEN --pull=missing --network=host
 * --security-opt=label=disable [GPUs] [-v WORKDIR:WORKDIR -w WORKDIR]
 * [-v CKPT:CKPT] [-e NAME, per name] IMAGE`, where GPUs are `--device
 * nvidia.com/gpu=N` per GPU when cdi is 1, else `--device /dev/nvidiaN` per
 * GPU plus /dev/nvidiactl and /dev/nvidia-uvm.  An image given as an
 * absolute path becomes oci-archive:PATH.  Returns a NULL-terminated argv;
 * free it with spw_container_argv_free. */
char **spw_container_podman_argv(const spw_container_t *c, int cdi);
void spw_container_argv_free(char **argv);

#endif
