/* plan_slurm.c: `spillway plan --slurm`: the sweep as a Slurm job array
 * and the part files its tasks write (see plan_slurm.h, docs/roi.md §4b). */
#include "cli/plan_slurm.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/file.h"
#include "util/run.h"
#include "util/strbuf.h"

#define PART_MAGIC "spillway-plan-part 1"
/* Seconds between two looks at the run directory, and between two squeue. */
#define POLL_S 0.2
#define SQUEUE_EVERY_S 1.0
/* Limit of one sbatch, squeue or scancel, seconds. */
#define CMD_TIMEOUT_S 30.0
/* A path in the run directory (whose own path is at most PATH_MAX). */
#define PATHBUF (PATH_MAX + 64)

/* How a field of spw_plan_result_t is written in a part file. */
typedef enum field_type { F_DBL, F_INT, F_U32, F_U64, F_KIND } field_type_t;

typedef struct field {
    size_t off;                  /* offsetof in spw_plan_result_t */
    field_type_t type;
} field_t;

#define FD(name) {offsetof(spw_plan_result_t, name), F_DBL}
/* Every field of a result but frontier, which the merge marks over all. */
static const field_t fields[] = {
    {offsetof(spw_plan_result_t, nodes), F_U32},
    {offsetof(spw_plan_result_t, onprem_gpus), F_U64},
    {offsetof(spw_plan_result_t, wait.kind), F_KIND},
    FD(wait.param),
    {offsetof(spw_plan_result_t, meets), F_INT},
    FD(param_lo), FD(param_hi), FD(swing),
    {offsetof(spw_plan_result_t, edge_breaks), F_INT},
    FD(robust_param),
    {offsetof(spw_plan_result_t, robust_meets), F_INT},
    FD(robust_wait_s), FD(robust_tco_usd), FD(sunk_usd), FD(decide_usd), FD(wait_s),
    FD(wait_mean_s), FD(wait_p90_s), FD(cloud_usd), FD(owned_usd), FD(owned_idle_usd),
    FD(egress_usd), FD(commit_usd), FD(commit_idle_usd), FD(total_usd), FD(makespan_s), FD(tco_usd), FD(cost_per_useful_gpu_h),
    {offsetof(spw_plan_result_t, sims), F_U32},
};
#undef FD
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* The configurations of part p of n, in spw_plan_order's order, into a new
 * array of *count. */
static size_t *part_members(const spw_plan_opts_t *o, size_t p, size_t n, size_t *count)
{
    size_t total = o->nnodes * o->nwaits, c = 0;
    size_t *order = spw_xmalloc(total * sizeof(size_t));
    spw_plan_order(o, order);
    for (size_t k = p; k < total; k += n)
        order[c++] = order[k];
    *count = c;
    return order;
}

int spw_plan_part_write(FILE *f, const spw_plan_opts_t *opts, const spw_plan_result_t *res,
                        size_t njobs, uint64_t runs, spw_error_t *err)
{
    size_t count, *m = part_members(opts, opts->part, opts->nparts, &count);
    fprintf(f, "%s %zu %zu %zu %zu %" PRIu64 " %zu\n", PART_MAGIC, opts->part, opts->nparts,
            opts->nnodes * opts->nwaits, njobs, runs, count);
    for (size_t k = 0; k < count; k++) {
        const char *r = (const char *)&res[m[k]];
        fprintf(f, "%zu", m[k]);
        for (size_t j = 0; j < NFIELDS; j++) {
            const void *v = r + fields[j].off;
            switch (fields[j].type) {
            case F_DBL: fprintf(f, " %a", *(const double *)v); break;
            case F_INT: fprintf(f, " %d", *(const int *)v); break;
            case F_U32: fprintf(f, " %" PRIu32, *(const uint32_t *)v); break;
            case F_U64: fprintf(f, " %" PRIu64, *(const uint64_t *)v); break;
            case F_KIND: fprintf(f, " %d", (int)*(const spw_wait_kind_t *)v); break;
            }
        }
        fputc('\n', f);
    }
    fprintf(f, "end\n");
    free(m);
    if (fflush(f) != 0 || ferror(f))
        return spw_errorf(err, "cannot write the part: %s", strerror(errno));
    return 0;
}

/* Reads one result line ("INDEX FIELD...") into res; 0 or -1. */
static int read_line(char *line, spw_plan_result_t *res, size_t total, size_t *index)
{
    char *p = line, *end;
    errno = 0;
    unsigned long long i = strtoull(p, &end, 10);
    if (end == p || errno || i >= total)
        return -1;
    *index = (size_t)i;
    char *r = (char *)&res[i];
    for (size_t j = 0; j < NFIELDS; j++) {
        void *v = r + fields[j].off;
        p = end;
        if (fields[j].type == F_DBL) {
            *(double *)v = strtod(p, &end);
        } else {
            long long x = strtoll(p, &end, 10);
            if (fields[j].type == F_KIND && (x < 0 || x >= SPW_WAIT_COUNT))
                return -1;
            if (fields[j].type == F_INT)
                *(int *)v = (int)x;
            else if (fields[j].type == F_U32)
                *(uint32_t *)v = (uint32_t)x;
            else if (fields[j].type == F_U64)
                *(uint64_t *)v = (uint64_t)x;
            else
                *(spw_wait_kind_t *)v = (spw_wait_kind_t)x;
        }
        if (end == p || errno)
            return -1;
    }
    return *end == '\n' || *end == '\0' ? 0 : -1;
}

/* Reads the part file path (part p of n of a sweep of total) into res,
 * checking that it holds exactly that part's configurations.  *njobs (0:
 * not known yet) must agree with the other parts'; *runs grows. */
static int read_part(const char *path, const spw_plan_opts_t *o, size_t p, size_t n,
                     spw_plan_result_t *res, size_t *njobs, uint64_t *runs, spw_error_t *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return spw_errorf(err, "%s: cannot read: %s", path, strerror(errno));
    size_t total = o->nnodes * o->nwaits, count, *m = part_members(o, p, n, &count);
    size_t hp, hn, ht, hj, hc;
    uint64_t hr;
    char *line = NULL;
    size_t cap = 0, got = 0;
    int rc = -1, ended = 0;
    if (getline(&line, &cap, f) < 0 ||
        sscanf(line, PART_MAGIC " %zu %zu %zu %zu %" SCNu64 " %zu", &hp, &hn, &ht, &hj, &hr,
               &hc) != 6 || hp != p || hn != n || ht != total || hc != count) {
        spw_errorf(err, "%s is not part %zu of %zu of this sweep of %zu configurations", path, p,
                   n, total);
        goto out;
    }
    if (*njobs && hj != *njobs) {
        spw_errorf(err, "%s planned %zu jobs, another part %zu: was the trace changed while "
                        "the tasks ran?", path, hj, *njobs);
        goto out;
    }
    while (getline(&line, &cap, f) >= 0) {
        size_t i;
        if (strcmp(line, "end\n") == 0) {
            ended = 1;
            break;
        }
        if (got == count || read_line(line, res, total, &i) < 0 || i != m[got]) {
            spw_errorf(err, "%s:%zu: not a result of this part", path, got + 2);
            goto out;
        }
        got++;
    }
    if (!ended || got != count) {
        spw_errorf(err, "%s is cut short: %zu of its %zu results", path, got, count);
        goto out;
    }
    *njobs = hj;
    *runs += hr;
    rc = 0;
out:
    free(line);
    free(m);
    fclose(f);
    return rc;
}

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs a Slurm command (argv[0] from PATH) into *out; see spw_run. */
static int slurm_cmd(const char *const *argv, char **out, spw_error_t *err)
{
    spw_run_t r = {.path = argv[0], .argv = argv, .search_path = 1, .timeout_s = CMD_TIMEOUT_S,
                   .timeout_hint = " (is slurmctld up?)"};
    return spw_run(&r, out, err);
}

/* Task i's files in the run directory. */
static void task_path(char *buf, size_t len, const char *dir, const char *what, size_t i)
{
    snprintf(buf, len, "%s/%s-%zu%s", dir, strcmp(what, "log") == 0 ? "task" : "part", i,
             strcmp(what, "log") == 0 ? ".log" : strcmp(what, "rc") == 0 ? ".rc" : "");
}

/* The exit status task i wrote (its last act), or -1 while there is none. */
static int task_rc(const char *dir, size_t i)
{
    char p[PATHBUF];
    task_path(p, sizeof(p), dir, "rc", i);
    FILE *f = fopen(p, "r");
    int rc = -1;
    if (f) {
        if (fscanf(f, "%d", &rc) != 1)
            rc = -1;
        fclose(f);
    }
    return rc;
}

/* Tasks that have written their status. */
static size_t tasks_done(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > 3 && strcmp(e->d_name + l - 3, ".rc") == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* 1 while Slurm still lists array job id as pending or running, 0 once it
 * does not, -1 when squeue did not answer (err says why). */
static int array_alive(const char *id, spw_error_t *err)
{
    const char *argv[] = {"squeue", "-h", "-j", id, "-o", "%i", NULL};
    char *out = NULL;
    spw_error_t e;
    int rc = slurm_cmd(argv, &out, &e);
    int alive = rc == 0 ? out && strspn(out, " \n") != strlen(out)
                : rc > 0 && strstr(e.text, "Invalid job id") ? 0 : -1;
    if (alive < 0)
        *err = e;
    free(out);
    return alive;
}

/* The last non-empty line of file path, into buf ("" if none). */
static void last_line(const char *path, char *buf, size_t len)
{
    size_t n;
    char *t = spw_read_file(path, &n, NULL);
    buf[0] = '\0';
    if (!t)
        return;
    while (n && (t[n - 1] == '\n' || t[n - 1] == '\r'))
        t[--n] = '\0';
    char *nl = strrchr(t, '\n');
    snprintf(buf, len, "%s", nl ? nl + 1 : t);
    free(t);
}

/* Writes the batch script of the array into dir/task.sh. */
static int write_script(const spw_plan_slurm_t *s, const char *dir, const char *bin,
                        spw_error_t *err)
{
    spw_strbuf_t b = {0};
    spw_strbuf_printf(&b, "#!/bin/sh\n# spillway plan --slurm: task $SLURM_ARRAY_TASK_ID of "
                          "%zu, one part of the sweep\n", s->tasks);
    spw_strbuf_add(&b, "i=${SLURM_ARRAY_TASK_ID:?not a Slurm array task}\nd=");
    spw_strbuf_quote(&b, dir);
    spw_strbuf_add(&b, "\n");
    spw_strbuf_quote(&b, bin);
    spw_strbuf_printf(&b, " plan --part \"$i/%zu\" --threads %d -q", s->tasks, s->threads);
    for (const char *const *a = s->args; *a; a++) {
        spw_strbuf_add(&b, " ");
        spw_strbuf_quote(&b, *a);
    }
    spw_strbuf_add(&b, " >\"$d/part-$i.tmp\"\nrc=$?\n"
                       "if [ $rc = 0 ]; then mv \"$d/part-$i.tmp\" \"$d/part-$i\" || rc=1; fi\n"
                       "echo $rc >\"$d/part-$i.rc.tmp\" && mv \"$d/part-$i.rc.tmp\" "
                       "\"$d/part-$i.rc\"\nexit $rc\n");
    char p[PATHBUF];
    snprintf(p, sizeof(p), "%s/task.sh", dir);
    FILE *f = fopen(p, "w");
    int ok = f && fputs(b.s, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    free(b.s);
    if (!ok)
        return spw_errorf(err, "%s: cannot write the array's script: %s", p, strerror(errno));
    return 0;
}

/* Removes what the run wrote in dir, and dir. */
static void remove_run(const char *dir, size_t tasks)
{
    char p[PATHBUF];
    static const char *const what[] = {"log", "rc", "part"};
    for (size_t i = 0; i < tasks; i++)
        for (size_t w = 0; w < 3; w++) {
            task_path(p, sizeof(p), dir, what[w], i);
            unlink(p);
        }
    snprintf(p, sizeof(p), "%s/task.sh", dir);
    unlink(p);
    rmdir(dir);
}

/* Waits for array job id's tasks to end, with progress; 0 when every task
 * wrote its status or Slurm lists the job no more, -1 on a stop signal
 * (the array cancelled) with err. */
static int wait_array(const spw_plan_slurm_t *s, const char *dir, const char *id, double t0,
                      spw_error_t *err)
{
    double last_sq = 0;
    size_t shown = (size_t)-1;
    int tty = isatty(2);
    for (;;) {
        size_t done = tasks_done(dir);
        if (!s->quiet && tty && done != shown)
            fprintf(stderr, "\rspillway plan: Slurm job %s: %zu of %zu tasks done (%.1f s)", id,
                    done, s->tasks, now_s() - t0);
        shown = done;
        if (done >= s->tasks)
            break;
        if (stop_signal) {
            const char *argv[] = {"scancel", id, NULL};
            spw_error_t e;
            int rc = slurm_cmd(argv, NULL, &e);
            if (!s->quiet && tty)
                fputc('\n', stderr);
            return spw_errorf(err, "stopped by signal %d: %s; the run's files are in %s",
                              (int)stop_signal,
                              rc == 0 ? "Slurm job cancelled" : "scancel failed, cancel it",
                              dir);
        }
        if (now_s() - last_sq >= SQUEUE_EVERY_S) {
            spw_error_t e;
            int alive = array_alive(id, &e);
            last_sq = now_s();
            if (alive == 0) {
                /* Ended: a task's status is written before it ends. */
                break;
            }
            if (alive < 0 && !s->quiet)
                fprintf(stderr, "%sspillway plan: %s (still waiting)\n", tty ? "\n" : "", e.text);
        }
        struct timespec ts = {0, (long)(POLL_S * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (!s->quiet)
        fprintf(stderr, "%sspillway plan: Slurm job %s: %zu of %zu tasks ended in %.1f s\n",
                tty ? "\n" : "", id, tasks_done(dir), s->tasks, now_s() - t0);
    return 0;
}

/* Checks every task's status; lists each that failed on stderr and gives
 * the first in err.  0 when all succeeded. */
static int check_tasks(const spw_plan_slurm_t *s, const char *dir, const char *id,
                       spw_error_t *err)
{
    size_t bad = 0;
    spw_error_t first;
    for (size_t i = 0; i < s->tasks; i++) {
        int rc = task_rc(dir, i);
        if (rc == 0)
            continue;
        char log[PATHBUF], tail[160];
        spw_error_t e;
        task_path(log, sizeof(log), dir, "log", i);
        last_line(log, tail, sizeof(tail));
        /* A task Slurm stops may be killed before it writes its status,
         * or after its command died of the signal: both are one case. */
        char sig[24] = "";
        if (rc > 128)
            snprintf(sig, sizeof(sig), ": signal %d", rc - 128);
        if (rc < 0 || rc > 128)
            spw_errorf(&e, "task %zu of Slurm job %s ended without a result (cancelled, out of "
                           "time or its node failed%s); its log: %s", i, id, sig, log);
        else
            spw_errorf(&e, "task %zu of Slurm job %s failed (exit %d%s%s); its log: %s", i, id,
                       rc, tail[0] ? ": " : "", tail, log);
        /* One failure is the error; more are listed, then counted. */
        if (bad == 1)
            fprintf(stderr, "spillway plan: %s\n", first.text);
        if (bad++)
            fprintf(stderr, "spillway plan: %s\n", e.text);
        else
            first = e;
    }
    if (bad == 1)
        *err = first;
    else if (bad)
        spw_errorf(err, "%zu of the %zu tasks of Slurm job %s failed (each listed above; the "
                        "run's files are kept in %s)", bad, s->tasks, id, dir);
    return bad ? -1 : 0;
}

int spw_plan_slurm_run(const spw_plan_slurm_t *s, const spw_plan_opts_t *opts,
                       spw_plan_result_t *res, size_t *njobs, uint64_t *runs, spw_error_t *err)
{
    size_t total = opts->nnodes * opts->nwaits;
    if (s->tasks < 1 || s->tasks > total)
        return spw_errorf(err, "--slurm-tasks: %zu tasks for %zu configurations (give 1 to %zu)",
                          s->tasks, total, total);
    char cwd[PATH_MAX], parent[PATH_MAX], dir[PATH_MAX], bin[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
        return spw_errorf(err, "cannot tell the current directory: %s", strerror(errno));
    if (!realpath(s->parent ? s->parent : ".", parent))
        return spw_errorf(err, "--slurm-dir %s: %s (give a directory the Slurm nodes share)",
                          s->parent ? s->parent : ".", strerror(errno));
    if (s->bin) {
        if (!realpath(s->bin, bin) || access(bin, X_OK) != 0)
            return spw_errorf(err, "--slurm-bin %s: not an executable: %s", s->bin,
                              strerror(errno));
    } else {
        ssize_t n = readlink("/proc/self/exe", bin, sizeof(bin) - 1);
        if (n <= 0)
            return spw_errorf(err, "cannot tell this program's path (give --slurm-bin PATH)");
        bin[n] = '\0';
    }
    if ((size_t)snprintf(dir, sizeof(dir), "%s/plan-XXXXXX", parent) >= sizeof(dir) ||
        !mkdtemp(dir))
        return spw_errorf(err, "cannot make a run directory in %s: %s (--slurm-dir DIR: one the "
                               "Slurm nodes share, writable)", parent, strerror(errno));
    if (write_script(s, dir, bin, err) < 0) {
        remove_run(dir, s->tasks);
        return -1;
    }
    char array[48], cpus[24], log[PATHBUF], script[PATHBUF];
    snprintf(array, sizeof(array), "--array=0-%zu", s->tasks - 1);
    snprintf(cpus, sizeof(cpus), "--cpus-per-task=%d", s->threads);
    snprintf(log, sizeof(log), "--output=%s/task-%%a.log", dir);
    snprintf(script, sizeof(script), "%s/task.sh", dir);
    const char *argv[] = {"sbatch", "--parsable", "-p", s->partition, "-J", "spillway-plan",
                          array, cpus, log, "-D", cwd, script, NULL};
    double t0 = now_s();
    char *out = NULL;
    spw_error_t e;
    int rc = slurm_cmd(argv, &out, &e);
    char id[32] = "";
    if (rc == 0 && out)
        snprintf(id, sizeof(id), "%.*s", (int)strspn(out, "0123456789"), out);
    free(out);
    if (rc != 0 || !id[0]) {
        spw_errorf(err, "could not submit the array to partition %s: %s", s->partition,
                   rc != 0 ? e.text : "sbatch gave no job id");
        remove_run(dir, s->tasks);
        return -1;
    }
    if (!s->quiet)
        fprintf(stderr, "spillway plan: %zu configurations in %zu tasks: Slurm array job %s on "
                        "partition %s (its files: %s)\n", total, s->tasks, id, s->partition, dir);
    struct sigaction sa = {.sa_handler = on_stop}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rc = wait_array(s, dir, id, t0, err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc < 0 || check_tasks(s, dir, id, err) < 0)
        return -1;
    *runs = 0;
    for (size_t i = 0; i < s->tasks; i++) {
        char p[PATHBUF];
        task_path(p, sizeof(p), dir, "part", i);
        if (read_part(p, opts, i, s->tasks, res, njobs, runs, err) < 0)
            return -1;
    }
    spw_plan_frontier(res, total);
    remove_run(dir, s->tasks);
    return 0;
}
