/* plan_slurm.h: `spillway plan --slurm PARTITION`: the configurations split
 * into a Slurm job array (one `spillway plan --part I/N` per task, in a run
 * directory the nodes share), and the parts merged back into the results of
 * a local run.  Also the part file that `--part` writes (docs/roi.md §4b). */
#ifndef SPW_CLI_PLAN_SLURM_H
#define SPW_CLI_PLAN_SLURM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/plan.h"
#include "util/error.h"

/* What one `plan --slurm` runs; everything borrowed for the call. */
typedef struct spw_plan_slurm {
    const char *partition;       /* the Slurm partition of the array */
    size_t tasks;                /* array tasks, 1 .. the configurations */
    const char *parent;          /* directory the nodes share, where the run
                                    directory plan-XXXXXX is made; NULL = the
                                    current directory */
    const char *bin;             /* the spillway the tasks run; NULL = this
                                    process's own executable */
    const char *const *args;     /* the plan options every task runs with
                                    (trace, config, sweep), NULL-terminated */
    int threads;                 /* threads (and Slurm CPUs) per task, >= 1 */
    int quiet;                   /* 1: no progress on stderr */
} spw_plan_slurm_t;

/* Writes part opts->part of opts->nparts of res (planned by spw_plan_run
 * with those opts) to f, every figure exact (hex floats), with njobs and
 * the simulator runs the part made.  0, or -1 with err on a write error. */
int spw_plan_part_write(FILE *f, const spw_plan_opts_t *opts, const spw_plan_result_t *res,
                        size_t njobs, uint64_t runs, spw_error_t *err);

/* Runs the sweep of opts (nparts unset) as a Slurm job array: submits it,
 * shows progress, waits for every task, and merges the parts into
 * res[0 .. nnodes x nwaits) exactly as spw_plan_run would have filled it
 * (frontier included), with *runs summed from the parts.  *njobs is the
 * trace's job count as loaded here (0: not known, then the parts' count):
 * every part must have planned as many.  A task that
 * failed or ended without a result gives -1 with err naming it and its log
 * (every one is listed on stderr); the run directory is then kept, and
 * removed on success.  On SIGINT or SIGTERM the array is cancelled. */
int spw_plan_slurm_run(const spw_plan_slurm_t *s, const spw_plan_opts_t *opts,
                       spw_plan_result_t *res, size_t *njobs, uint64_t *runs, spw_error_t *err);

#endif
