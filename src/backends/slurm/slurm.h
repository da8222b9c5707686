/* slurm.h: the Slurm backend, which runs each job as one Slurm batch job in
 * a partition, through Slurm's own command-line tools (sbatch, squeue,
 * scontrol, sinfo --json, scancel); see docs/slurm.md for why the CLIs and
 * not slurmrestd.
 *
 * How a job runs:
 * - launch() pipes a small /bin/sh batch script into
 *   `sbatch --parsable -p PARTITION -J spw-JOBID --comment=TOKEN
 *    --gres=gpu:N -N NODES --ntasks-per-node=1 --time=M:SS --no-requeue
 *    --open-mode=append -o LOG_DIR/JOBID.out -e LOG_DIR/JOBID.err -D WORKDIR`.
 *   The script exports the job's env (and SPILLWAY_JOB_ID,
 *   SPILLWAY_LAUNCH_TOKEN), then runs the job: directly on one node, or for a
 *   gang through `srun` (one task per node) with RANK and NODE_RANK
 *   (SLURM_NODEID), LOCAL_RANK=0, WORLD_SIZE (SLURM_NTASKS), MASTER_ADDR
 *   (the first host of the allocation) and MASTER_PORT (29500 + the Slurm
 *   job id modulo 1000, so two gangs on one host do not collide).
 *   Slurm picks the GPUs: `ngpus` is the count per node, the indices the
 *   daemon chose are not passed (CUDA_VISIBLE_DEVICES comes from Slurm).
 *   The sbatch runs on one of the backend's op threads (several at once):
 *   launch() returns at once with a handle carrying job id and token; its
 *   ext, the Slurm job id, is filled when sbatch answered (tick() applies
 *   it and changed() reports the handle), and a failed sbatch is reported
 *   by poll() as SPW_EXIT_NOT_STARTED with Slurm's message (its token
 *   fenced, in case slurmctld took the job after all).  pid and pgid are
 *   0.  Handles are matched by token, so one without ext works.
 * - tick() synchronises with Slurm at most every sync_interval_s: one text
 *   `squeue --states=all` for every job tracked, however many (indexed by
 *   id), run on the backend's worker thread: a tick asks for it, a later
 *   tick applies it (spw_slurm_syncs counts those); ended jobs are queued
 *   for poll().  Exit codes: COMPLETED is 0,
 *   FAILED gives the batch script's exit code or signal (`scontrol show
 *   job`, only for those, on the op threads), CANCELLED is SIGNALED 15 (cause
 *   CANCELLED when we asked), TIMEOUT is SIGNALED 9 with cause MAX_RUNTIME,
 *   NODE_FAIL, BOOT_FAIL, PREEMPTED and a job Slurm no longer knows are LOST.
 * - cancel() queues `scancel ID` to the op threads (Slurm applies its own
 *   KillWait grace); a cancel before sbatch answered is sent right after
 *   it; a scancel that fails (slurmctld down) is sent again by the next
 *   sync.
 * - launch() never submits a token twice: before the first sbatch an op
 *   thread lists Slurm's jobs once, and a launch whose token a job of an
 *   earlier daemon process already carries adopts that job.
 * - adopt() and find() read the last listing (one squeue however many
 *   jobs are adopted; a listing of its own only before the first one
 *   applied); find() looks for a job whose comment is the
 *   token and, when there is none, fences the token: a job carrying it that
 *   appears later (an sbatch of a killed daemon still in flight) is
 *   cancelled at once by tick().
 * - every command runs with a timeout (cmd_timeout_s, killed past it), with
 *   SLURM_CONF set when slurm_conf is given.  A launch whose sbatch timed out
 *   fences its token the same way, so it can never run twice.
 *
 * A backend is not thread-safe: call it from one thread (the scheduler loop).
 * Its reads run on a worker thread of its own: tick()'s squeue and the
 * *_async node and foreign-job reads; sbatch, scancel and the ExitCode of
 * a FAILED job run on its op threads (up to 4 at once); so a slow or hung
 * slurmctld does not hold the caller.  What still runs on the caller's
 * thread, within cmd_timeout_s: signal() (scancel --signal) and the first
 * listing of adopt()/find() before any tick (a recovery at start); adopt()
 * and find() answer "cannot tell" at once while the last listing failed.
 * destroy() waits for the commands in flight (cmd_timeout_s at most). */
#ifndef SPW_BACKENDS_SLURM_H
#define SPW_BACKENDS_SLURM_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "util/error.h"

typedef struct spw_slurm spw_slurm_t;

/* Options for spw_slurm_create; all borrowed for the call only. */
typedef struct spw_slurm_opts {
    const char *partition;      /* partition jobs are submitted to; required */
    const char *slurm_conf;     /* SLURM_CONF for every command; NULL = the
                                   daemon's environment (or /etc/slurm) */
    const char *bin_dir;        /* directory of sbatch, squeue...; NULL = PATH */
    double cmd_timeout_s;       /* limit of one command, seconds; 0 = 30 */
    double sync_interval_s;     /* least time between two squeue of tick(),
                                   seconds; 0 = 1 */
} spw_slurm_opts_t;

/* The function table; use it with a backend from spw_slurm_create.  Of the
 * version 4 members it has the node inventory (nodes, nodes_async,
 * set_nodes, node_index, foreign_async: the functions below), and no hosts
 * nor detect_gpus or read_exit. */
extern const struct spw_backend_ops spw_slurm_ops;

/* Makes a Slurm backend with no jobs.  Runs nothing (a cluster that is not
 * up yet is no error).  Returns NULL with a sentence in err for invalid
 * options. */
spw_slurm_t *spw_slurm_create(const spw_slurm_opts_t *opts, spw_error_t *err);

/* Forgets every job without cancelling it.  NULL-safe. */
void spw_slurm_destroy(spw_slurm_t *sb);

/* The handle of the tracked job launched with token (*out): its ext is the
 * Slurm job id once the launch's sbatch answered, "" before.  0, or -1
 * when no tracked job carries the token (for tests and benchmarks: the
 * daemon matches its handles by token and needs no id). */
int spw_slurm_handle(spw_slurm_t *sb, const char *token, spw_handle_t *out);

/* Number of jobs the backend tracks (launched or adopted, not yet polled). */
size_t spw_slurm_count(const spw_slurm_t *sb);

/* Listings of Slurm's jobs that tick() has applied so far (for benchmarks
 * and tests: a sync is asked by one tick() and applied by a later one). */
uint64_t spw_slurm_syncs(const spw_slurm_t *sb);

/* The nodes of the backend's partition (`sinfo --json`), in Slurm's order,
 * cloud nodes that are powered down included.  Returns 0 with *out (caller
 * frees) and *n, or -1 with a sentence in err (Slurm unreachable). */
int spw_slurm_nodes(spw_slurm_t *sb, spw_backend_node_t **out, size_t *n, spw_error_t *err);

/* Names the partition's nodes in the order the daemon numbers them
 * (copied).  Then a one-node launch whose env holds
 * SPILLWAY_PLACEMENT=POOL/INDEX is pinned to node INDEX (--nodelist), so
 * that Slurm runs it where the engine placed it. */
void spw_slurm_set_nodes(spw_slurm_t *sb, const spw_backend_node_t *nodes, size_t n);

/* The index of a node name among those set, or -1. */
int spw_slurm_node_index(const spw_slurm_t *sb, const char *name);

/* spw_slurm_nodes, read on the backend's worker thread so that the caller
 * never waits on Slurm: returns 1 with the list that the last read gave
 * (*out, caller frees, and *n), -1 with err when that read failed, 0 when
 * no read has finished since the last call; each call that takes a result
 * asks for the next read. */
int spw_slurm_nodes_async(spw_slurm_t *sb, spw_backend_node_t **out, size_t *n, spw_error_t *err);

/* The GPUs held, node by node, by the running jobs of the partition whose
 * comment does not start with own_prefix (this daemon's "DAEMONID."):
 * jobs someone submitted with sbatch behind spillway's back.  Read on the
 * worker thread like spw_slurm_nodes_async (same answers; *out lists only
 * nodes with GPUs held): one squeue per read, plus one `scontrol -d show
 * job` per foreign job not seen yet (allocations are kept while a job
 * runs). */
int spw_slurm_foreign_async(spw_slurm_t *sb, const char *own_prefix, spw_backend_foreign_t **out,
                            size_t *n, spw_error_t *err);

/* Runs a Slurm command (thread-safe: the worker runs them too) (argv[0] looked up in bin_dir or PATH) with the
 * backend's SLURM_CONF and timeout, stdin from `in` (NULL = /dev/null).
 * Returns its exit status (0..255), with *out (caller frees, NUL-terminated,
 * may be NULL) holding stdout, or -1 with a sentence in err (not found,
 * timed out, killed: stderr's first line when it said something). */
int spw_slurm_run(spw_slurm_t *sb, const char *const *argv, const char *in, char **out,
                  spw_error_t *err);

#endif
