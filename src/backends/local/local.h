/* local.h: the local backend, which runs each job as a process group on this
 * machine (local.c), plus the helpers the daemon needs around it: process
 * identity from /proc (local.c) and GPU detection (gpu.c).  Linux only. */
#ifndef SPW_BACKENDS_LOCAL_H
#define SPW_BACKENDS_LOCAL_H

#include <stdint.h>
#include <sys/types.h>

#include "backends/backend.h"
#include "util/error.h"

/* How a job runs:
 * - fork, then in the child setsid() (its own session and process group, so
 *   signals reach everything it starts), stdin from /dev/null, stdout and
 *   stderr appended to LOG_DIR/JOBID.out and .err (created 0640), every other
 *   descriptor closed on exec, ignored signals and the signal mask reset,
 *   chdir(workdir), then execve: argv[0] searched in the job's PATH (no
 *   shell, and no shell fallback for an executable without "#!": that fails
 *   with "Exec format error"), or /bin/sh -c SCRIPT.
 * - environment: the daemon's, then the job's env (which wins), then
 *   CUDA_VISIBLE_DEVICES (the assigned indices, comma-separated) and
 *   SPILLWAY_JOB_ID, which win over both; PWD follows workdir.
 * - a failed chdir or exec is sent to the parent through a close-on-exec pipe,
 *   so launch() fails with the reason, reaps the child and removes log files
 *   it created.
 * - when the job's first process exits, whatever is left of its process group
 *   is killed with SIGKILL, so no stray process keeps holding a GPU unseen.
 *
 * A backend is not thread-safe: call it from one thread (the scheduler loop).
 * The backend owns its children: the daemon must not reap them (no
 * waitpid(-1, ...)) and must not set SIGCHLD to SIG_IGN.  Only async-signal-
 * safe calls run between fork and exec, so launching from a threaded daemon
 * is safe. */

typedef struct spw_local spw_local_t;

/* Options for spw_local_create; all borrowed for the call only. */
typedef struct spw_local_opts {
    double grace_s;             /* SIGTERM to SIGKILL delay on cancel and
                                   max_runtime, seconds, >= 0 */
} spw_local_opts_t;

#define SPW_LOCAL_GRACE_S 10.0  /* grace_s when opts is NULL */

/* The function table; use it with a backend from spw_local_create. */
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

/* Finds the running job process launched for job_id (by any daemon): the
 * process group leader whose environment holds SPILLWAY_JOB_ID=job_id.  A
 * daemon killed between launch() and recording the pid uses it to adopt the
 * job instead of starting it twice.  Returns 0 with *pid and *start_ticks,
 * or -1 with errno ESRCH when there is none. */
int spw_local_find_job(const char *job_id, pid_t *pid, uint64_t *start_ticks);

/* Counts this machine's NVIDIA GPUs by running
 * `nvidia-smi --query-gpu=index --format=csv,noheader` from PATH (at most
 * 10 s).  Their indices are 0 .. *count-1.  Returns 0 with *count set (which
 * may be 0), or -1 with *count = 0 and a sentence in err saying why there is
 * no answer ("nvidia-smi not found in PATH", or its own message when it
 * fails), so the daemon can fall back to the gpus: slots of its config. */
int spw_local_detect_gpus(int *count, spw_error_t *err);

#endif
