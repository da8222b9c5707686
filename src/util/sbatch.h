/* sbatch.h: the #SBATCH directives at the top of a Slurm batch script, read
 * so that `spillway submit --sbatch script.sh` takes Slurm users' scripts as
 * they are.  Pure: no I/O. */
#ifndef SPW_UTIL_SBATCH_H
#define SPW_UTIL_SBATCH_H

#include <stddef.h>

#include "util/error.h"

/* What the directives asked for; 0 / NULL where they said nothing. */
typedef struct spw_sbatch {
    long gpus;              /* --gpus / -G: GPUs of the whole job */
    long gpus_per_node;     /* --gres=gpu[:MODEL]:N or --gpus-per-node: per node */
    long nodes;             /* --nodes / -N (the lower bound of a range) */
    double time_s;          /* --time / -t, seconds */
    char *model;            /* the GPU model of --gres or --gpus, owned */
    char *name;             /* --job-name / -J, owned */
    char *output;           /* --output / -o, owned: Slurm's pattern (%j, %x) */
    char *error;            /* --error / -e, owned */
    char ignored[160];      /* the directives spillway does not apply,
                               ", "-separated (for a warning) */
} spw_sbatch_t;

/* Reads the #SBATCH lines of the script text[0..len) (they end at the
 * first line that is neither blank nor a comment, as in sbatch).  0 and
 * *out filled (free with spw_sbatch_free), or -1 with err naming the line
 * ("script.sh:3: --time: ...") and *out empty. */
int spw_sbatch_parse(const char *name, const char *text, size_t len, spw_sbatch_t *out,
                     spw_error_t *err);

/* The GPUs of the whole job (gpus, else gpus_per_node x nodes); 0 = none. */
long spw_sbatch_total_gpus(const spw_sbatch_t *s);

/* Frees what parse made.  NULL-safe. */
void spw_sbatch_free(spw_sbatch_t *s);

#endif
