/* backend.h: the versioned interface through which the daemon launches, signals
 * and reaps jobs inside a pool (local processes, ssh hosts, Slurm; Kubernetes
 * next), each one folder implementing struct spw_backend_ops, made by name in
 * registry.h.  The daemon knows a backend only through this table. */
#ifndef SPW_BACKENDS_BACKEND_H
#define SPW_BACKENDS_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

/* The version of struct spw_backend_ops this header describes.  Members are
 * only ever appended; a caller checks ops->version >= N before touching a
 * member added in version N. */
#define SPW_BACKEND_VERSION 7
/* Version 2 added find() and the launch token; version 3 changed(); version
 * 4 the optional members of a node inventory (nodes, nodes_async, set_nodes,
 * node_index, foreign_async), of hosts that come and go (host_count,
 * host_info, host_add, host_remove), of this machine (detect_gpus,
 * read_exit) and of a cluster's own tools (run), so that the daemon and
 * the CLI ask the table, not a concrete backend; version 5 the optional
 * fences that outlive the backend (fence_events, fence_add), so that a
 * daemon persists what a backend must still kill and gives it back after a
 * restart; version 6 the optional host_notice (a cloud's interruption
 * notice read on a host, e.g. EC2's spot/instance-action from IMDS);
 * version 7 the optional cancel_wait (a cancel that a backend hands to a
 * thread of its own is done before the daemon answers it). */

/* Whether ops (not NULL) has member m, one added in version v:
 * SPW_BACKEND_HAS(ops, 4, nodes).  A pool whose backend has `nodes` takes
 * its nodes from the backend's inventory; one whose backend has
 * `host_info`, from its hosts. */
#define SPW_BACKEND_HAS(ops, v, m) ((ops)->version >= (v) && (ops)->m != NULL)

/* Longest launch token, bytes, including the NUL.  A launch token names one
 * attempt of one job of one daemon: "DAEMONID.JOBID.ATTEMPT" (the daemon id
 * is random per state dir, see docs/daemon.md).  Everything a launch starts
 * carries it (SPILLWAY_LAUNCH_TOKEN in a process's environment, a Slurm
 * job's comment, an instance's tag), and recovery finds and adopts by it:
 * a process carrying another daemon's or another attempt's token is never
 * touched. */
#define SPW_TOKEN_MAX 96

/* Longest backend-specific handle text (a Slurm job id, a host list),
 * bytes, including the NUL. */
#define SPW_HANDLE_EXT_MAX 128

/* Longest job id a backend accepts, bytes, including the NUL.  Ids name log
 * files, so a backend also accepts only [A-Za-z0-9._-] not starting with '.'. */
#define SPW_JOB_ID_MAX 64

/* Time: every `now_s` below is the daemon's wall clock (seconds since the Unix
 * epoch), read once per loop turn.  Wall clock rather than monotonic so that a
 * handle persisted before a restart still means the same thing after it.
 * Backends never read the clock themselves. */

/* What to run.  Everything is borrowed for the duration of launch() only. */
typedef struct spw_launch {
    const char *job_id;         /* unique id; names the log files, SPILLWAY_JOB_ID */
    const char *const *argv;    /* NULL-terminated; argv[0] looked up in the job's
                                   PATH; run without a shell.  NULL if script */
    const char *script;         /* run by /bin/sh -c SCRIPT; NULL if argv */
    const char *const *env;     /* NULL-terminated "NAME=VALUE" added to the
                                   daemon's variables that env_pass lets
                                   through (job wins); may be NULL */
    const char *workdir;        /* directory to run in; NULL = the daemon's */
    const uint32_t *gpus;       /* assigned GPU indices, ngpus of them */
    size_t ngpus;               /* entries in gpus; 0 hides every GPU */
    const char *log_dir;        /* existing directory for JOBID.out / JOBID.err */
    double max_runtime_s;       /* killed (TERM, then KILL) past this, seconds;
                                   0 = no limit */
    double now_s;               /* the daemon's clock at launch, seconds */
    /* Version 2: */
    const char *token;          /* launch token (SPW_TOKEN_MAX); never NULL
                                   for a version-2 backend */
    uint32_t nodes;             /* nodes of a gang, one process per node;
                                   0 or 1 = one node */
    int set_user;               /* 1: the job runs as uid/gid below (the
                                   daemon must be root to switch); 0: as the
                                   daemon's own user */
    uid_t uid;                  /* user the job runs as, when set_user */
    gid_t gid;                  /* its group (the only one it keeps) */
    const char *const *env_pass; /* NULL-terminated names of the daemon's own
                                   variables the job inherits ("LC_*": a
                                   trailing '*' matches a prefix); every
                                   other one is left out.  NULL = all of
                                   them (the version 1 behaviour) */
    /* Appended in version 2 (a field, no new member of the table): */
    const char *image;          /* the container image the job runs in (the
                                   job spec's image, docs/hosts.md): an
                                   absolute path (an unpacked root filesystem
                                   directory, or an OCI image archive file),
                                   "oci-archive:PATH", or a registry
                                   reference; NULL = no container.  A backend
                                   that cannot run it fails the launch with
                                   the reason, never runs the job without it */
    const char *user;           /* with set_user: the user's name, for a
                                   backend that switches users on another
                                   machine (ssh: uid numbers may differ
                                   there); NULL = not known */
    const char *team;           /* the job's team: an OCI archive is unpacked
                                   into that team's image cache alone
                                   (container.h); NULL = none */
} spw_launch_t;

/* A running job, as the daemon persists it so that a restarted daemon can
 * adopt() it.  A plain value: copy it freely; it owns nothing. */
typedef struct spw_handle {
    char job_id[SPW_JOB_ID_MAX];  /* the job this process runs */
    pid_t pid;                  /* process id of the job's first process */
    pid_t pgid;                 /* its process group, signalled as a whole */
    uint64_t start_ticks;       /* the process's start time after boot, clock
                                   ticks (/proc/PID/stat field 22): with pid,
                                   tells our process from a reused pid; 0 if
                                   unknown */
    double started_s;           /* the daemon's clock at launch, seconds */
    double max_runtime_s;       /* limit given at launch, seconds; 0 = none */
    /* Version 2: */
    char token[SPW_TOKEN_MAX];  /* the launch token it was started with */
    char ext[SPW_HANDLE_EXT_MAX]; /* the backend's own handle (Slurm job id,
                                   hosts); "" = none */
} spw_handle_t;

#define SPW_EXIT_KINDS(X)                                                     \
    X(EXITED, "exited")                                                       \
    X(SIGNALED, "killed by a signal")                                         \
    X(LOST, "lost, exit code unknown")                                        \
    X(NOT_STARTED, "failed to start")
#define SPW_ENUM_EXIT_KIND(a, s) SPW_EXIT_##a,
typedef enum spw_exit_kind { SPW_EXIT_KINDS(SPW_ENUM_EXIT_KIND) SPW_EXIT_KIND_COUNT } spw_exit_kind_t;
const char *spw_exit_kind_name(spw_exit_kind_t k);

/* Why the backend ended a job itself (NONE: the job ended on its own, or was
 * killed by someone else). */
#define SPW_EXIT_CAUSES(X)                                                    \
    X(NONE, "none")                                                           \
    X(CANCELLED, "cancelled")                                                 \
    X(MAX_RUNTIME, "killed after max_runtime")
#define SPW_ENUM_EXIT_CAUSE(a, s) SPW_CAUSE_##a,
typedef enum spw_exit_cause { SPW_EXIT_CAUSES(SPW_ENUM_EXIT_CAUSE) SPW_EXIT_CAUSE_COUNT } spw_exit_cause_t;
const char *spw_exit_cause_name(spw_exit_cause_t c);

/* One finished job, as poll() reports it. */
typedef struct spw_exit {
    spw_handle_t handle;        /* the handle launch() or adopt() was given */
    spw_exit_kind_t kind;       /* how it ended */
    int status;                 /* exit code if EXITED, signal number if
                                   SIGNALED, -1 if LOST */
    spw_exit_cause_t cause;     /* whether the backend killed it, and why */
    /* Appended in version 2 (a field, no new member of the table): */
    char reason[160];           /* with SPW_EXIT_NOT_STARTED only: why the
                                   launch failed after launch() had returned
                                   (a backend that submits asynchronously,
                                   e.g. Slurm's sbatch on a worker thread:
                                   its message); unset for other kinds */
} spw_exit_t;

/* ---- Nodes and hosts (version 4) -------------------------------------- */

/* One node of a backend's inventory (a node of a Slurm partition; of a
 * Kubernetes cluster next), as the cluster reports it.  A plain value. */
typedef struct spw_backend_node {
    char name[64];              /* the cluster's node name ("n1") */
    uint32_t gpus;              /* GPUs it offers (Slurm: its gres, gpu:TYPE:N
                                   or gpu:N) */
    char gpu_type[32];          /* their model (TYPE); "" if untyped */
    char features[128];         /* its features, comma-separated */
    char state[48];             /* the cluster's word for its state (Slurm:
                                   base state "idle", "mixed", "down", ...,
                                   then "+FLAG" for DRAIN, POWERED_DOWN...) */
    int down;                   /* 1: down, drained, draining, failing or not
                                   responding: takes no new work (a cloud
                                   node powered down is not: the cluster
                                   powers it up when a job needs it) */
    char reason[128];           /* why, when the cluster says */
} spw_backend_node_t;

/* GPUs that jobs this daemon did not launch hold on one node of the
 * inventory (submitted to the cluster behind spillway's back). */
typedef struct spw_backend_foreign {
    char name[64];              /* the node's name, as in spw_backend_node_t */
    uint32_t gpus;              /* GPUs of running foreign jobs on it */
} spw_backend_foreign_t;

/* One host of a backend that runs jobs on a list of machines (ssh). */
typedef struct spw_backend_host {
    const char *addr;           /* its address, as configured or added;
                                   borrowed from the backend until its next
                                   host_add() or destroy() */
    uint32_t gpus;              /* GPU slots; for a host whose count was not
                                   given, counted again in the round that
                                   brings it back up after it was down */
    uint32_t used;              /* slots held by tracked jobs */
    int up;                     /* 1: answered within the backend's down
                                   delay */
    double last_ok_s;           /* daemon clock of its last answer, seconds;
                                   0 = never */
} spw_backend_host_t;

/* ---- Fences (version 5) ------------------------------------------------ */

/* One fence of a backend that runs jobs on hosts it may lose touch with
 * (ssh): a process of an ended attempt that must be killed as soon as its
 * host answers again, before anything else runs there (the attempt failed
 * over while its host was cut off; its copy may still run there).  A plain
 * value. */
typedef struct spw_backend_fence {
    char host[256];             /* the host's address, as configured or added */
    char what[SPW_TOKEN_MAX + 16]; /* what to kill there, in the backend's own
                                   words (ssh: the rank directory
                                   "TOKEN-rN"); [A-Za-z0-9._-] only */
    int done;                   /* 0: the backend fenced it (persist it);
                                   1: the backend let it go: its host
                                   confirmed the kill, or the host was
                                   removed for good, or the attempt was
                                   found and adopted after all (forget it) */
} spw_backend_fence_t;

/* The function table.  `be` is the backend's own state, made by its
 * create function (e.g. spw_local_create).  No member takes a callback; results
 * come back as values.  A member that fails leaves no side effects: no process
 * started, nothing tracked, no file left behind. */
struct spw_backend_ops {
    int version;                /* SPW_BACKEND_VERSION the table was built for */
    const char *name;           /* "local", "slurm", ...: for messages and the API */

    /* Starts req and fills *out.  From then on the backend tracks the job
     * until poll() reports its exit.  Returns 0, or -1 with a sentence in err
     * ("cannot run 'foo': No such file or directory") and no job started.
     * A backend may start the job asynchronously (Slurm: sbatch on a
     * worker thread, so that a slow controller never holds the caller):
     * then *out carries the token and job id at once and its ext only
     * later (the backend matches handles by token meanwhile), and a start
     * that fails after launch() returned is reported by poll() as an exit
     * of kind SPW_EXIT_NOT_STARTED with the reason. */
    int (*launch)(void *be, const spw_launch_t *req, spw_handle_t *out,
                  spw_error_t *err);

    /* Sends signum to every process of the job.  Returns 0, or -1 if h is not
     * a job the backend tracks or the signal cannot be sent. */
    int (*signal)(void *be, const spw_handle_t *h, int signum, spw_error_t *err);

    /* Asks the job to stop: SIGTERM now, SIGKILL once a grace period has passed
     * (escalated by tick()).  Idempotent; the exit is reported with cause
     * CANCELLED unless the job had already ended on its own.  Returns 0, or
     * -1 if h is not tracked. */
    int (*cancel)(void *be, const spw_handle_t *h, double now_s, spw_error_t *err);

    /* Called once per loop turn: enforces max_runtime and escalates cancels
     * whose grace period has passed.  Never blocks. */
    void (*tick)(void *be, double now_s);

    /* Reaps finished jobs without blocking: writes up to max of them into
     * exits and stops tracking them; returns how many.  Jobs beyond max are
     * reported by the next call. */
    int (*poll)(void *be, spw_exit_t *exits, size_t max);

    /* After a daemon restart: takes h back under tracking if its process is
     * still the one that was started (same pid and start time).  Returns 0
     * (also if h is already tracked), or -1 with errno ESRCH and a sentence in
     * err if the process is gone or the pid now belongs to another process;
     * the daemon then applies the job's retry rule. */
    int (*adopt)(void *be, const spw_handle_t *h, spw_error_t *err);

    /* Frees the backend.  Running jobs keep running, untracked, so that a new
     * daemon can adopt() them.  NULL-safe. */
    void (*destroy)(void *be);

    /* ---- version 2 ---- */

    /* Recovery of a launch whose handle was never recorded (the daemon
     * committed the intent, then died around launch()): looks for anything
     * carrying `token`.  Returns 1 with *out filled and the job tracked (as
     * adopt() would), 0 when nothing carries it and nothing ever will (the
     * backend has fenced the token, so a launch still in flight cannot start
     * it later: the daemon may then launch a new attempt), or -1 with err
     * when it cannot tell now (retry later; never launch again meanwhile). */
    int (*find)(void *be, const char *token, spw_handle_t *out, spw_error_t *err);

    /* ---- version 3 ---- */

    /* Handles that changed since the last call, without blocking: writes
     * up to max of them into out and returns how many (the rest come with
     * the next call).  A backend that launches asynchronously reports here
     * the handle of a launch that took (its ext now filled: the Slurm job
     * id once sbatch answered); the daemon records the job as running only
     * then, so that a restart before it requeues the job as never started.
     * NULL: handles never change after launch(). */
    int (*changed)(void *be, spw_handle_t *out, size_t max);

    /* ---- version 4 ---- */

    /* Every member below is optional: NULL where the backend has no such
     * thing (check with SPW_BACKEND_HAS).  A node inventory (slurm): */

    /* The nodes of the backend's pool as the cluster reports them now, in
     * the cluster's order, powered-down cloud nodes included.  Blocks on
     * the cluster (at most the backend's command timeout): for start-up and
     * the CLI, not the loop.  Returns 0 with *out (caller frees) and *n, or
     * -1 with a sentence in err (the cluster does not answer). */
    int (*nodes)(void *be, spw_backend_node_t **out, size_t *n, spw_error_t *err);

    /* The same, read in the background so that the caller never waits on
     * the cluster: returns 1 with the list the last read gave (*out, caller
     * frees, and *n), -1 with err when that read failed, 0 when no read has
     * finished since the last call; each call that takes a result asks for
     * the next read. */
    int (*nodes_async)(void *be, spw_backend_node_t **out, size_t *n, spw_error_t *err);

    /* Names the pool's nodes in the order the daemon numbers them (copied;
     * only their names are read).  Then a one-node launch whose env holds
     * SPILLWAY_PLACEMENT=POOL/INDEX runs on node INDEX, where the engine
     * placed it. */
    void (*set_nodes)(void *be, const spw_backend_node_t *nodes, size_t n);

    /* The index of node `name` among those set_nodes() named, or -1. */
    int (*node_index)(void *be, const char *name);

    /* The GPUs held, node by node, by the running jobs of the pool whose
     * launch token does not start with own_prefix (this daemon's
     * "DAEMONID."): jobs someone gave the cluster behind spillway's back.
     * Read in the background like nodes_async (the same answers; *out lists
     * only nodes with GPUs held). */
    int (*foreign_async)(void *be, const char *own_prefix, spw_backend_foreign_t **out,
                         size_t *n, spw_error_t *err);

    /* Hosts (ssh): */

    /* Number of hosts, removed ones included (indexes stay stable: a
     * removed host keeps its slot, shown down, while a job or fence names
     * it). */
    size_t (*host_count)(void *be);

    /* Host i's state into *out (0 <= i < host_count()). */
    void (*host_info)(void *be, size_t i, spw_backend_host_t *out);

    /* On a backend made with dynamic hosts (registry.h: conf.dynamic), for
     * the daemon's cloud instances: makes addr a host with `gpus` slots
     * (1..64, not detected), up until it stops answering.  Adding a host
     * that is there is a no-op; an address removed before comes back as a
     * new host.  Returns 0, or -1 with err. */
    int (*host_add)(void *be, const char *addr, uint32_t gpus, spw_error_t *err);

    /* Takes addr away for good at now_s (its machine is gone): nothing more
     * runs there, and every job with a rank there is lost at once (poll()
     * reports it LOST), without fencing; fences held there are let go
     * (version 5: reported done).  Returns 0, or -1 if addr is no host. */
    int (*host_remove)(void *be, const char *addr, double now_s);

    /* This machine (local): */

    /* Counts the GPUs of the machine the backend runs jobs on (local:
     * nvidia-smi, at most 10 s).  Their indices are 0 .. *count-1.
     * Returns 0 with *count (which may be 0), or -1 with *count = 0 and a
     * sentence in err saying why there is no answer, so that the caller
     * can fall back to the configured slots. */
    int (*detect_gpus)(void *be, uint32_t *count, spw_error_t *err);

    /* The exit record a launch left behind, read once its process is gone
     * (adopt() failed with ESRCH, or find() returned 0), even if the daemon
     * that launched it is gone too: the launch with `token`, or, when token
     * is NULL or "", the last launch of job_id without a token (records of
     * an older spillway).  Returns 0 with *kind EXITED (*status the exit
     * code) or SIGNALED (*status the signal number), or -1 with errno
     * ENOENT when there is no record (never started, killed with SIGKILL,
     * or still running), EPROTO when it is malformed, EINVAL for a
     * malformed token or job id or a backend made without the directory
     * the record lives in, or another errno from reading it. */
    int (*read_exit)(void *be, const char *token, const char *job_id, spw_exit_kind_t *kind,
                     int *status);

    /* A cluster's own tools (slurm): */

    /* Runs one of the cluster's own commands (Slurm: scontrol, sinfo; argv[0]
     * looked up as the backend looks up its commands) with the backend's
     * configuration (SLURM_CONF) and command timeout, stdin from `in` (NULL =
     * none).  Thread-safe.  Returns its exit status (0..255) with *out
     * (caller frees, NUL-terminated; out may be NULL) holding its stdout, or
     * -1 with a sentence in err (not found, timed out, killed). */
    int (*run)(void *be, const char *const *argv, const char *in, char **out, spw_error_t *err);

    /* ---- version 5 ---- */

    /* Every member below is optional (check with SPW_BACKEND_HAS).  A
     * backend's fences live in its memory; these let the daemon keep them
     * across its own restarts (kill -9 or SIGTERM), so that a stale attempt
     * cut off with its host is killed when the host answers, however many
     * restarts later. */

    /* Fences added and let go since the last call, in the order they
     * happened, without blocking: writes up to max of them into out and
     * returns how many (the rest come with the next call).  A fence the
     * backend adds is reported once with done 0, and once with done 1 when
     * it lets it go (the host ran the kill and said so).  Fences given
     * with fence_add() are reported only when let go.  The daemon drains
     * this in the turn that handles the attempt's exit, so the fence is
     * committed with the job's requeue, before any new attempt starts. */
    int (*fence_events)(void *be, spw_backend_fence_t *out, size_t max);

    /* Gives a fence back after a restart: the backend kills `what` on host
     * `host` the first time that host answers, before anything else runs
     * there, and reports it done then (fence_events).  Adding a fence it
     * holds is a no-op.  Returns 0, or -1 with a sentence in err when it
     * has no such host (its address is no longer configured, or its
     * instance is gone) or `what` is malformed; nothing is held then. */
    int (*fence_add)(void *be, const char *host, const char *what, spw_error_t *err);

    /* ---- version 6 ---- */

    /* Optional.  Watches host `host` (as given to host_add) for a cloud's
     * interruption notice: from now on each of its status rounds also asks
     * the instance metadata service at imds_url (EC2's IMDSv2: a token PUT
     * to IMDS_URL/latest/api/token, then GET
     * IMDS_URL/latest/meta-data/spot/instance-action with it), on the host
     * itself, in the background of the caller's thread.  imds_url NULL
     * stops watching; a new url replaces the old.  Returns 1 with the
     * notice (the metadata's answer, one line, truncated to cap) in buf
     * once a round has seen one (and on every later call), 0 while none
     * was seen, -1 if host is no host.  Never blocks. */
    int (*host_notice)(void *be, const char *host, const char *imds_url, char *buf,
                       size_t cap);

    /* ---- version 7 ---- */

    /* Optional: a backend whose cancel() only queues the work for a thread
     * of its own (Kubernetes: the Job's delete).  Waits until what cancel()
     * of the attempt `token` queued is done (the cluster answered it,
     * whatever the answer), or until the wall clock reaches deadline_s.
     * Returns 0 when done (or nothing was queued), 1 when the deadline
     * came first.  Thread-safe: the daemon calls it without its lock, from
     * the thread that answers the cancel, so that a job whose cancel was
     * answered can no longer start (a pod still waiting for its kubelet). */
    int (*cancel_wait)(void *be, const char *token, double deadline_s);
};

/* Whether the daemon's variable `entry` ("NAME=VALUE") may pass to a job
 * under spw_launch_t.env_pass `pass`: pass is NULL (all may), or names it,
 * or holds a "PREFIX*" it starts with. */
int spw_env_passes(const char *const *pass, const char *entry);

/* Moves up to max items of elem bytes from the front of a queue of *n
 * items into out, the rest to the front; returns how many moved (what a
 * backend's poll() and changed() hand the daemon). */
int spw_queue_take(void *queue, size_t *n, size_t elem, void *out, size_t max);

/* Appends n bytes of a job's output to log descriptor fd, of which *size
 * bytes are written already, up to cap bytes (0 = no cap): the byte that
 * reaches the cap is followed by one line "[spillway: log truncated at CAP
 * bytes (daemon.max_log_bytes)]" and what comes after is dropped.  *size
 * counts what the job wrote, marker aside.  Async-signal-safe (no
 * allocation, no stdio): a backend's shim calls it between fork and exit. */
void spw_log_write_capped(int fd, const char *data, size_t n, uint64_t *size, uint64_t cap);

#endif
