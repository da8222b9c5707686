/* run.h: running a program to its end with a bounded runtime: stdin from a
 * string, stdout captured, the first line of stderr kept for messages.  Used
 * on worker threads (the Slurm backend's sbatch and squeue, the command
 * cloud provider's site executables); thread-safe. */
#ifndef SPW_UTIL_RUN_H
#define SPW_UTIL_RUN_H

#include <stddef.h>

#include "util/error.h"

/* One run.  Everything is borrowed for the call. */
typedef struct spw_run {
    const char *path;           /* the program (a path, or a name looked up
                                   in PATH when search_path) */
    const char *const *argv;    /* NULL-terminated; argv[0] names it in
                                   messages */
    char *const *envp;          /* its environment; NULL = this process's */
    int search_path;            /* 1: look path up in PATH (execvpe) */
    const char *in;             /* written to its stdin; NULL = /dev/null */
    double timeout_s;           /* killed (its whole process group) past
                                   this many seconds, > 0 */
    const char *timeout_hint;   /* appended to the timeout message ("is
                                   slurmctld up?"); NULL = none */
    const char *where;          /* where it was looked for, for "not found"
                                   ("PATH", a directory); NULL = "PATH" */
    const char *name;           /* what messages call it; NULL = argv[0] */
} spw_run_t;

/* Runs r in a process group of its own.  Returns its exit status (0..255)
 * with *out (caller frees, NUL-terminated; out may be NULL) holding its
 * stdout; a non-zero status also writes "ARGV0 failed (exit N): first line
 * of stderr" to err.  Returns -1 with a sentence in err when it could not
 * be run, timed out or was killed by a signal (*out then NULL). */
int spw_run(const spw_run_t *r, char **out, spw_error_t *err);

#endif
