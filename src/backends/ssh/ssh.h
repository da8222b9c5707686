/* ssh.h: the ssh backend, which runs jobs on a list of plain Linux hosts
 * (GPU servers, cloud VMs) through the system OpenSSH client, one detached
 * process per node under a small POSIX-sh shim on the host.  Nothing but
 * /bin/sh, setsid and coreutils is needed on a host (docs/hosts.md).
 *
 * How a job runs:
 * - every command is `ssh -i KEY -p PORT -o BatchMode=yes
 *   -o StrictHostKeyChecking=yes -o UserKnownHostsFile=KNOWN_HOSTS
 *   -o ConnectTimeout=.. -o ServerAliveInterval=.. [ControlMaster=auto,
 *   ControlPersist] -n USER@HOST 'exec /bin/sh -c SCRIPT'` (not on stdin,
 *   which a login shell's startup files may read), output into an in-memory
 *   file; one connection per host is kept open and shared.
 * - on the host everything lives under R = $SPILLWAY_HOST_DIR, or
 *   $HOME/.spillway: one directory R/jobs/TOKEN-rRANK per node of a launch
 *   (created with mkdir, so one token starts once per rank), holding `token`,
 *   `pid` (the shim's pid, also its process group), `out` and `err` (the
 *   job's output) and `exit` ("exited N" or "signaled N", through a rename).
 * - the shim, started with setsid (own session and group), runs the job in
 *   the background, waits for it (SIGTERM to the group acts on the job; the
 *   shim only notes it), writes the exit record, then SIGKILLs what is left
 *   of its group.  A status above 128 is reported as signal status-128 (the
 *   shell's convention: an exit 143 reads as SIGTERM).  A job survives the
 *   daemon and the ssh connection; its record is read after a restart.
 * - placement: a launch whose env holds SPILLWAY_PLACEMENT=POOL/K puts rank 0
 *   on host K with the GPU indices given (the daemon's node = host K); other
 *   launches take the first up host(s) with ngpus free slots.  A gang
 *   (nodes > 1) takes that many distinct hosts, one process each, with RANK
 *   and NODE_RANK, LOCAL_RANK=0, WORLD_SIZE=nodes, LOCAL_WORLD_SIZE=1,
 *   MASTER_ADDR (rank 0's address), MASTER_PORT (29500 + a hash of the
 *   token modulo 1000) and SPILLWAY_NODE_IPS (every rank's address, in rank
 *   order).  All or nothing: if one rank cannot start, those started are
 *   killed and launch() fails.  The handle's ext is the hosts in rank order,
 *   comma-separated, when that fits (SPW_HANDLE_EXT_MAX-1 bytes); a longer
 *   list goes to LOG_DIR/JOBID/JOBID.hosts ("TOKEN LIST") and ext is "@".
 *   Each rank's directory on its host holds the whole list (`hosts`), which
 *   find() reads back.  pid/pgid are rank 0's shim on its host.
 * - environment: the host's login environment, the job's env, then
 *   CUDA_VISIBLE_DEVICES, SPILLWAY_JOB_ID, SPILLWAY_LAUNCH_TOKEN and the rank
 *   variables, which win.
 * - logs: tick() fetches what each node wrote since the last fetch (all of
 *   it, in records of at most 1 MiB and at most 4 MiB per host per status
 *   round; a round that left bytes behind is followed by the next one at
 *   once) and appends it to LOG_DIR/JOBID.out and .err
 *   (rank 0) or LOG_DIR/JOBID.nodeN.out and .err (rank N, truncated at
 *   launch).  LOG_DIR/JOBID.ssh holds "TOKEN OUTBASE ERRBASE", the size of
 *   rank 0's files at launch, so a restarted daemon resumes fetching where
 *   the last one stopped.  An exit is reported once the logs are drained.
 * - tick() runs one status command per host every sync_interval_s, in the
 *   background (child processes polled without blocking); it doubles as the
 *   health check.  A host that has not answered for down_after_s is down:
 *   its jobs are reported LOST (every other rank of a gang is killed), and
 *   each rank on it is fenced: killed (SIGKILL to its group) as soon as the
 *   host answers again, before anything else runs there; then it is up.
 *   Until it answers, a partitioned host may still run the old copy while
 *   the daemon starts a new one elsewhere: that window is down_after_s plus
 *   the partition's length (docs/hosts.md).
 * - cancel(): SIGTERM to each rank's group, SIGKILL after grace_s (tick()).
 * - launch(), adopt() and find() wait for their commands (at most
 *   cmd_timeout_s each); everything else runs in the background.
 *
 * A backend is not thread-safe: call it from one thread (the scheduler loop).
 * It owns its ssh children: the daemon must not reap them (no
 * waitpid(-1, ...)). */
#ifndef SPW_BACKENDS_SSH_H
#define SPW_BACKENDS_SSH_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "util/error.h"

typedef struct spw_ssh spw_ssh_t;

#define SPW_SSH_MAX_HOSTS 256   /* hosts of one backend */

/* Options for spw_ssh_create; all borrowed for the call only. */
typedef struct spw_ssh_opts {
    const char *const *hosts;   /* addresses or names, nhosts of them */
    size_t nhosts;              /* 1 .. SPW_SSH_MAX_HOSTS */
    const uint32_t *host_gpus;  /* GPU slots of each host; NULL, or 0 for a
                                   host, = detect with nvidia-smi on the host
                                   (0 GPUs when it has none) */
    const char *user;           /* login user; NULL = ssh's default */
    const char *key;            /* private key file; NULL = ssh's default */
    const char *known_hosts;    /* known_hosts file (host keys are checked);
                                   NULL = the user's own */
    int accept_new_keys;        /* 1: a host whose key known_hosts lacks is
                                   trusted at first contact and its key
                                   added (StrictHostKeyChecking=accept-new),
                                   for cloud instances whose keys cannot be
                                   known before they boot; a changed key is
                                   still refused */
    int port;                   /* ssh port; 0 = 22 */
    const char *log_dir;        /* where JOBID.out/.err/.ssh live (copied);
                                   required */
    double grace_s;             /* SIGTERM to SIGKILL delay, seconds; < 0 = 10 */
    double cmd_timeout_s;       /* limit of one command, seconds; 0 = 20 */
    double sync_interval_s;     /* least time between two status commands of
                                   one host, seconds; 0 = 1 */
    double down_after_s;        /* a host silent this long is down, seconds;
                                   0 = 10 */
    uint64_t max_log_bytes;     /* bytes each local log file of a job may
                                   reach; fetched output past it is dropped
                                   behind one marker line; 0 = no cap */
    int no_multiplex;           /* 1: no ControlMaster (one TCP connection per
                                   command) */
    int dynamic;                /* 1: hosts come and go (host_add and
                                   host_remove of the table, or
                                   spw_ssh_host_add, spw_ssh_host_remove;
                                   the daemon's cloud instances); nhosts
                                   may be 0 */
    uint32_t job_pids_max;      /* processes per job, through its cgroup on
                                   the host (cgroup.h); 0 = no limit */
    uint64_t job_memory_mib;    /* memory per job, MiB, likewise; 0 = no
                                   limit */
    uint64_t image_max_bytes;   /* bytes an OCI archive and its unpacked
                                   tree may reach on a host; 0 = 32 GiB */
    uint64_t image_max_files;   /* entries an OCI archive may unpack to on
                                   a host; 0 = 1,000,000 */
} spw_ssh_opts_t;

/* The function table; use it with a backend from spw_ssh_create.  Of the
 * version 4 members it has the hosts (host_count, host_info, host_add,
 * host_remove: the functions below), and no node inventory nor
 * detect_gpus or read_exit.  Of version 5 it has both: fence_events
 * reports each rank directory it fences (host address, "TOKEN-rN") and,
 * as done, each one let go (the host's status round printed "F DIR" after
 * the kill; the host was removed or replaced at its address; find()
 * adopted the launch after all); fence_add takes one back after a
 * restart, by address, for the status rounds to kill as if it had never
 * been forgotten.  find() answers "cannot tell" (-1) at once while a host
 * does not answer its status rounds, rather than waiting out a connect
 * timeout. */
extern const struct spw_backend_ops spw_ssh_ops;

/* Makes an ssh backend with no jobs.  Detects the GPUs of every host whose
 * slot count is not given (one ssh per such host, in parallel).  Returns
 * NULL with a sentence in err for invalid options or a host whose GPUs
 * cannot be detected. */
spw_ssh_t *spw_ssh_create(const spw_ssh_opts_t *opts, spw_error_t *err);

/* Forgets every job without cancelling it and closes the shared
 * connections.  NULL-safe. */
void spw_ssh_destroy(spw_ssh_t *sb);

/* Number of jobs the backend tracks (launched or adopted, not yet polled). */
size_t spw_ssh_count(const spw_ssh_t *sb);

/* Number of hosts, and host i's state (0 <= i < count). */
size_t spw_ssh_host_count(const spw_ssh_t *sb);
void spw_ssh_host(const spw_ssh_t *sb, size_t i, spw_backend_host_t *out);

/* Dynamic hosts (a daemon's cloud instances, opts.dynamic).  host_add makes
 * addr a host with `gpus` slots (1..64; no detection), up until it stops
 * answering; adding a host that is there is a no-op, and an address removed
 * before comes back as a new host.  host_remove takes addr away for good at
 * now_s (its machine is gone): no more commands go to it, and every job with
 * a rank there is lost at once (reported LOST by poll() once cancelled, or
 * after the lost grace), without fencing (nothing runs there any more).
 * Its fences go with it (reported done: nothing of it can run any more).
 * Host indexes stay stable: a removed host keeps its slot (shown as down)
 * until no job names it.  A launch whose env holds
 * SPILLWAY_SSH_HOSTS=A,B,... runs rank k on host k of that list (one per
 * node; every one up), with the GPU indices of the request; SPILLWAY_PLACEMENT
 * is then ignored.  host_remove also closes addr's shared ssh connection
 * (`ssh -O exit`, in the background), and an address added again gets a
 * ControlPath of its own: a new machine at an old address never talks
 * through the old one's connection.  host_add: 0, or -1 with err;
 * host_remove: 0, or -1 if addr is no host. */
int spw_ssh_host_add(spw_ssh_t *sb, const char *addr, uint32_t gpus, spw_error_t *err);
int spw_ssh_host_remove(spw_ssh_t *sb, const char *addr, double now_s);

/* The table's host_notice (version 6): watches host for a cloud's
 * interruption notice read on the host from imds_url (NULL: stop
 * watching).  Returns 1 with the notice in buf (cap bytes) once a status
 * round saw one, 0 while none was seen, -1 if host is no host.  Adding the
 * host again (a new machine at the address) forgets both. */
int spw_ssh_host_notice(spw_ssh_t *sb, const char *host, const char *imds_url, char *buf,
                        size_t cap);

/* The directory of the shared connections' sockets (one per host, named
 * GEN-HASH), or "" without multiplexing.  For tests and diagnostics. */
const char *spw_ssh_control_dir(const spw_ssh_t *sb);

/* Runs `script` with /bin/sh on host i and waits (cmd_timeout_s at most).
 * Returns its exit status (0..255) with *out (caller frees, NUL-terminated,
 * may be NULL) holding its stdout, or -1 with a sentence in err (ssh failed,
 * timed out).  For tests and the CLI. */
int spw_ssh_run(spw_ssh_t *sb, size_t i, const char *script, char **out, spw_error_t *err);

/* The podman command line that runs a job in an OCI image (a registry
 * reference such as docker.io/library/ubuntu:22.04, or oci-archive:PATH):
 * `podman run --rm --name spw-TOKEN --pull=missing --network=host
 * --security-opt=label=disable [--device nvidia.com/gpu=N (CDI), per GPU]
 * [-v WORKDIR:WORKDIR -w WORKDIR] [-v CKPT:CKPT] [-e NAME, per name]
 * IMAGE`, to which the job's command is appended.  `-e NAME` passes NAME's
 * value from the launching shell.  A launch with SPILLWAY_IMAGE that is not
 * a directory on the host runs this when the host has podman (bubblewrap
 * runs directories).  Returns a NULL-terminated argv, caller frees with
 * spw_ssh_argv_free. */
char **spw_ssh_podman_argv(const char *image, const char *token, const char *workdir,
                           const char *ckpt, const uint32_t *gpus, size_t ngpus,
                           const char *const *env_names);
void spw_ssh_argv_free(char **argv);

/* Appends to buf (capacity cap) the word s quoted for a POSIX shell.
 * Returns 0, or -1 if it does not fit. */
int spw_ssh_quote(char *buf, size_t cap, const char *s);

#endif
