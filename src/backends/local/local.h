/* local.h: the local backend, which runs each job as a process group on this
 * machine (local.c), plus the helpers the daemon needs around it: process
 * identity from /proc (local.c) and GPU detection (gpu.c).  Linux only. */
#ifndef SPW_BACKENDS_LOCAL_H
#define SPW_BACKENDS_LOCAL_H

#include <stdint.h>
#include <sys/types.h>

#include "backends/backend.h"
#include "util/error.h"

/* Launch tokens (backend version 2).  A launch with req->token (and a
 * backend with opts.run_dir) also:
 * - creates RUN_DIR/TOKEN, the fence (O_EXCL, mode 0600: a token launches at
 *   most once), and takes an exclusive flock on it BEFORE forking.  The shim
 *   inherits that open file and keeps it (so the lock) until it ends; it
 *   first writes its own "PID START_TICKS\n" into it.  The parent closes its
 *   copy.  The job does not hold it (close-on-exec).
 * - records the exit in the fence itself, at SPW_LOCAL_FENCE_EXIT_OFF, instead
 *   of LOG_DIR/JOBID.exit, so each attempt's outcome is its own (and a launch
 *   costs one file in RUN_DIR, not two).
 * - sets SPILLWAY_LAUNCH_TOKEN=TOKEN in the job's environment.
 * find(TOKEN) then opens (creating if absent) the fence and tries the lock
 * without blocking: taken means the shim lives (adopted from the handle it
 * wrote: 1; or -1 EAGAIN in the instant before it wrote it); free means
 * nothing of that launch lives and nothing ever will (the daemon that would
 * have forked it is gone with its lock, and a fence made by find() makes a
 * late launch of the token fail): 0.  Log files are opened relative to the
 * log directory with O_NOFOLLOW | O_NONBLOCK; a FIFO or link found at a log
 * name is replaced by a new regular file, so a job cannot block a launch
 * nor redirect another job's output.
 *
 * How a job runs:
 * - fork a shim, which calls setsid() (its own session and process group, so
 *   signals reach everything the job starts), points stdin at /dev/null and
 *   stdout and stderr at LOG_DIR/JOBID.out and .err (appended to, created
 *   0640), and forks again: the job.  The job resets every signal disposition
 *   and the signal mask, closes every other descriptor on exec, does
 *   chdir(workdir), then execve: argv[0] searched in the job's PATH (no shell,
 *   and no shell fallback for an executable without "#!": that fails with
 *   "Exec format error"), or /bin/sh -c SCRIPT.
 * - the shim never execs.  It closes every descriptor but 0-2 (so nothing of
 *   the daemon's, such as its listen socket, outlives it), ignores every
 *   signal but SIGCHLD, SIGKILL, SIGSTOP and those faults raise (so SIGTERM
 *   or anything else sent to the group acts on the job alone), waits for the
 *   job, writes "exited N\n" or "signaled N\n" to LOG_DIR/JOBID.exit (through
 *   JOBID.exit.tmp and rename, so never half-written), and ends the same way:
 *   _exit(N), or dies of signal N (without a core dump).  So the handle's pid
 *   and pgid are the shim's, its exit status is the job's, and a daemon
 *   restarted meanwhile, to which the shim is no child, still learns the
 *   outcome from the file.  A SIGKILL to the group (cancel escalation) kills
 *   the shim too: then there is no record.  launch() removes the record of an
 *   earlier attempt of the same job id before it forks.
 * - environment: the daemon's variables that env_pass lets through (all of
 *   them when it is NULL), then the job's env (which wins), then
 *   CUDA_VISIBLE_DEVICES (the assigned indices, comma-separated),
 *   SPILLWAY_JOB_ID and (with a token) SPILLWAY_LAUNCH_TOKEN, which win over
 *   both; PWD follows workdir.
 * - user: with set_user, the job (not the shim, which stays the daemon's
 *   user so that it can write the exit record) switches to uid and gid,
 *   dropping every supplementary group, before chdir and exec; a failure is
 *   reported like a failed exec.
 * - a failed chdir or exec is sent to the parent through a close-on-exec pipe
 *   (the shim drops its copy once it has forked the job, so the parent reads
 *   EOF once the exec succeeded), so launch() fails with the reason, reaps
 *   the shim and removes the log files it created and the shim's record.
 * - when the job's first process (the shim, which ends right after the job)
 *   exits, whatever is left of its process group is killed with SIGKILL, so
 *   no stray process keeps holding a GPU unseen.
 * - the shim is a fork of the daemon that never execs, so each running job
 *   keeps a copy-on-write image of the daemon's memory as it was at launch.
 *
 * A backend is not thread-safe: call it from one thread (the scheduler loop).
 * The backend owns its children: the daemon must not reap them (no
 * waitpid(-1, ...)) and must not set SIGCHLD to SIG_IGN.  Only async-signal-
 * safe calls run in the shim and in the job before exec, so launching from a
 * threaded daemon is safe. */

typedef struct spw_local spw_local_t;

/* Options for spw_local_create; all borrowed for the call only. */
typedef struct spw_local_opts {
    double grace_s;             /* SIGTERM to SIGKILL delay on cancel and
                                   max_runtime, seconds, >= 0 */
    const char *log_dir;        /* the directory jobs' log_dir names (copied):
                                   poll() reads an adopted job's exit record
                                   there (see spw_local_read_exit) instead of
                                   reporting it LOST, for a job launched
                                   without a token; NULL = never read */
    const char *run_dir;        /* existing directory, private to the daemon
                                   (copied), for launch fences and exit
                                   records by token (see "Launch tokens");
                                   NULL = launches with a token fail and
                                   find() cannot answer */
    int cgroups;                /* 1: each job launched with a token runs in
                                   a cgroup of its own (cgroup.h), where
                                   this process is root and a controller is
                                   usable; 0 = process groups only */
    uint32_t pids_max;          /* with cgroups: processes per job; 0 = no
                                   limit */
    uint64_t memory_mib;        /* with cgroups: memory per job, MiB; 0 = no
                                   limit */
    uint64_t max_log_bytes;     /* bytes each of a job's JOBID.out and
                                   JOBID.err may reach: the shim copies the
                                   job's output there and drops the rest
                                   behind one marker line; 0 = no cap (the
                                   job writes the files itself) */
    const char *image_dir;      /* the trusted OCI image cache (copied): a
                                   job's archive is unpacked into
                                   IMAGE_DIR/team-TEAM (container.h) by a
                                   process of this one's user, not the
                                   job's; NULL = archives need podman */
    uint64_t image_max_bytes;   /* bytes an archive and its unpacked tree
                                   may reach; 0 = 32 GiB */
    uint64_t image_max_files;   /* entries an archive may unpack to; 0 =
                                   1,000,000 */
} spw_local_opts_t;

#define SPW_LOCAL_GRACE_S 10.0  /* grace_s when opts is NULL */

/* The function table; use it with a backend from spw_local_create.  Of the
 * version 4 members it has detect_gpus (spw_local_detect_gpus) and
 * read_exit (spw_local_read_exit_token with a token, in opts.run_dir;
 * spw_local_read_exit without, in opts.log_dir), and no node inventory nor
 * hosts.  changed() is NULL: a handle is whole when launch() returns. */
extern const struct spw_backend_ops spw_local_ops;

/* Makes a local backend with no jobs.  opts may be NULL for defaults.  Returns
 * the backend (free with spw_local_destroy or spw_local_ops.destroy), or NULL
 * with a sentence in err for invalid options. */
spw_local_t *spw_local_create(const spw_local_opts_t *opts, spw_error_t *err);

/* Forgets every job without signalling it (see backend.h).  NULL-safe. */
void spw_local_destroy(spw_local_t *lb);

/* Number of jobs the backend tracks (launched or adopted, not yet polled). */
size_t spw_local_count(const spw_local_t *lb);

/* Reads /proc/PID/stat: the process's start time after boot in clock ticks
 * (field 22) and its one-letter state (field 3; 'Z' is a zombie).  state may
 * be NULL.  Returns 0, or -1 with errno ESRCH (no such process) or another
 * errno and a sentence in err. */
int spw_local_proc_start(pid_t pid, uint64_t *start_ticks, char *state,
                         spw_error_t *err);

/* Finds the running job launched with `token` (a diagnostic: recovery uses
 * find(), which reads the fence): a process whose environment holds
 * SPILLWAY_LAUNCH_TOKEN=token and whose parent leads its process group (the
 * job, child of its shim).  It matches the whole token, never the job id
 * alone, so another daemon's job of the same id is never found.  Returns 0
 * with the shim's *pid (the handle's pid and pgid) and *start_ticks, or -1
 * with errno ESRCH when there is none. */
int spw_local_find_token(const char *token, pid_t *pid, uint64_t *start_ticks);

/* Reads the exit record the shim of job_id left in log_dir (see "How a job
 * runs"): how the job ended, even if the daemon that launched it is gone.  A
 * daemon that finds a job's process gone after a restart (adopt() fails with
 * ESRCH) can learn its outcome here.  Returns 0 with *kind EXITED (*status
 * the exit code) or SIGNALED (*status the signal number), or -1 with errno
 * ENOENT when there is no record (the job still runs, was killed with
 * SIGKILL, or ran under an older spillway), EPROTO when it is malformed,
 * EINVAL for an invalid job id, or another errno from open/read. */
int spw_local_read_exit(const char *log_dir, const char *job_id, spw_exit_kind_t *kind,
                        int *status);

/* Where in a fence the shim records the exit, bytes from its start (the
 * handle "PID START_TICKS\n" is before it). */
#define SPW_LOCAL_FENCE_EXIT_OFF 64

/* The same for a launch with a token: the record the shim wrote into its
 * fence, RUN_DIR/TOKEN, at SPW_LOCAL_FENCE_EXIT_OFF.  Read it only once the
 * shim is gone (find() returned 0, or the process is gone).  Returns 0 with
 * *kind and *status, or -1 with errno ENOENT (no fence, or nothing recorded:
 * the launch never started, the shim was killed with SIGKILL, or it still
 * runs), EPROTO, EINVAL, or another errno. */
int spw_local_read_exit_token(const char *run_dir, const char *token, spw_exit_kind_t *kind,
                              int *status);

/* Counts this machine's NVIDIA GPUs by running
 * `nvidia-smi --query-gpu=index --format=csv,noheader` from PATH (at most
 * 10 s).  Their indices are 0 .. *count-1.  Returns 0 with *count set (which
 * may be 0), or -1 with *count = 0 and a sentence in err saying why there is
 * no answer ("nvidia-smi not found in PATH", or its own message when it
 * fails), so the daemon can fall back to the gpus: slots of its config. */
int spw_local_detect_gpus(int *count, spw_error_t *err);

#endif
