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
 *   unpacked once by the trusted side (root, or the daemon's user) with
 *   skopeo and umoci into its team's image cache, keyed by the sha256 of
 *   the archive's bytes, every blob checked against its digest, the image
 *   of the host's platform chosen, bounded in bytes and files
 *   (spw_container_unpack_script), and run under bubblewrap from there,
 *   read-only; by podman where the host has no bubblewrap, no skopeo or
 *   umoci, or the backend no cache (image_fn NULL);
 * - anything else: a registry reference, which needs podman on the host.
 * Under podman: the settings that work rather than the host's defaults
 * (runc where installed, cgroupfs and a file of events where systemd is
 * not running, the launching shell's own limits of open files and
 * processes, and, for a user whose home is not writable, its images under
 * $TMPDIR/spillway-podman-UID), --network=host, the GPUs as CDI devices
 * (nvidia.com/gpu=N) when the host has an NVIDIA CDI spec, else those of
 * their /dev/nvidia* nodes that exist.
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

/* The bounds of an OCI archive when none is configured
 * (daemon.image_max_bytes, daemon.image_max_files). */
#define SPW_IMAGE_MAX_BYTES (32ull << 30)   /* bytes: 32 GiB */
#define SPW_IMAGE_MAX_FILES 1000000ull      /* entries */
#define SPW_IMAGE_TEAM_DIR_MAX 300          /* bytes of a team's directory
                                               name (spw_container_team_dir),
                                               NUL included */

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
    const char *image_fn;       /* sh text that defines `spw_image ARCHIVE`,
                                   which prints the root filesystem the
                                   trusted side unpacked ARCHIVE into, or a
                                   sentence and fails (spw_container_image_fn
                                   where the script runs as the trusted
                                   side); NULL = OCI archives cannot run
                                   without podman */
} spw_container_t;

/* Appends to s the sh lines that replace the positional parameters (the
 * job's command, "$@") with the command that runs it in c->image.  The
 * script must define `die` (called with a sentence when the host can run
 * neither podman nor bubblewrap, or the image is missing; it must not
 * return) before these lines run. */
void spw_container_wrap(spw_strbuf_t *s, const spw_container_t *c);

/* The trusted side's OCI unpacker: a POSIX sh script (static text) for
 * `sh -c SCRIPT NAME ARCHIVE CACHE MAX_BYTES MAX_FILES UID GID WHY`.  It
 * runs as root (or as the daemon's user, where jobs run as that user too),
 * reads ARCHIVE as UID:GID (empty: as itself), and prints the read-only
 * root filesystem CACHE/sha256-HEX/rootfs, HEX the sha256 of the archive's
 * bytes, unpacking it there first (layers applied as UID) unless a valid
 * entry is there; or prints a sentence (also written to the file WHY
 * unless empty) and exits 1: skopeo or umoci is not installed, the
 * archive is not readable by UID, not an OCI layout, has no image for this
 * host's platform, a blob is missing or does not match its digest, or it
 * is larger than MAX_BYTES, unpacks to more than MAX_BYTES or MAX_FILES
 * entries (naming daemon.image_max_bytes / image_max_files) or more than
 * the free space;
 * checked before anything is unpacked.  CACHE's parent must exist or be
 * creatable as the trusted side's own, writable by no one else; CACHE is
 * the team's (made 0711). */
const char *spw_container_unpack_script(void);

/* Appends the definition of spw_image (see image_fn) for a script that
 * runs as the trusted side: it runs spw_container_unpack_script with the
 * cache directory CACHE (shell words, the backend's own, never the job's),
 * the bounds, and $SPW_JOB_UID / $SPW_JOB_GID as the job's user. */
void spw_container_image_fn(spw_strbuf_t *s, const char *cache, uint64_t max_bytes,
                            uint64_t max_files);

/* Writes into buf (cap bytes) the name of team's directory in an image
 * cache: "team-TEAM", any character of TEAM but letters, digits, '_', '.'
 * and '-' made '_' (a name from the config, never a path); "no-team" for
 * NULL. */
void spw_container_team_dir(char *buf, size_t cap, const char *team);

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
