/* bench_store.c: durable submit throughput of daemon/store, and job spec
 * parse throughput, for the daemon's submit targets.
 *
 *   build/bench/bench_store [--dir DIR] [--seconds S] [--reps R]
 *
 * For synchronous=NORMAL and FULL and batch sizes 1, 8 and 64 it submits the
 * same small job spec (canonical JSON written per job, as the daemon does)
 * with spw_store_submit_batch for S seconds (default 0.5) into a fresh
 * database in DIR (default build/), and reports jobs/s and commits/s.  Every
 * job counted was committed when its call returned.  The daemon gathers
 * concurrent submits into one batch (group commit), so batch 1 is one client
 * waiting for each acknowledgement and batch 8 is about 8 concurrent
 * clients; the targets are >= 2,000 jobs/s and >= 5,000 jobs/s.
 *
 * Every result is one line of key=value pairs (best and median of R runs).
 * DIR must be on the disk the daemon's state dir would use: on tmpfs fsync
 * is free and FULL means nothing (the fs line says which it is). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/jobspec.h"
#include "daemon/store.h"

#define MAX_BATCH 64
#define MAX_REPS 16

static const char spec_json[] =
    "{\"name\": \"bench\", \"team\": \"vision\", \"run\": [\"python3\", "
    "\"train.py\", \"--epochs\", \"10\"], \"gpus\": \"A100:2\", "
    "\"est_runtime\": \"1h30m\", \"max_runtime\": \"2h\", \"priority\": 1, "
    "\"env\": {\"BATCH\": \"64\"}, \"retries\": 1}";

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Submits batches of `batch` into a fresh database for `seconds`; returns
 * jobs per second, or -1. */
static double run_once(const char *dir, spw_store_sync_t sync, int batch,
                       double seconds, const spw_jobspec_t *spec,
                       long *jobs_out)
{
    const spw_jobspec_t *specs[MAX_BATCH];
    char ids[MAX_BATCH][SPW_STORE_ID_LEN], path[600], side[640];
    spw_store_opts_t opts = {sync, 0};
    spw_store_t *st;
    spw_error_t err;
    double t0, t;
    long jobs = 0;
    int i;

    for (i = 0; i < batch; i++)
        specs[i] = spec;
    snprintf(path, sizeof(path), "%s/bench.db", dir);
    st = spw_store_open(path, &opts, &err);
    if (!st) {
        fprintf(stderr, "bench_store: %s\n", err.text);
        return -1;
    }
    t0 = now_s();
    do {
        if (spw_store_submit_batch(st, specs, (size_t)batch, t0, ids,
                                   &err) < 0) {
            fprintf(stderr, "bench_store: %s\n", err.text);
            spw_store_close(st);
            return -1;
        }
        jobs += batch;
        t = now_s();
    } while (t - t0 < seconds);
    spw_store_close(st);
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
    *jobs_out = jobs;
    return (double)jobs / (t - t0);
}

static void bench_parse(int reps, double seconds)
{
    static const char yaml[] =
        "name: bench\nteam: vision\nrun: [python3, train.py, --epochs, "
        "\"10\"]\ngpus: A100:2\nest_runtime: 1h30m\nmax_runtime: 2h\n"
        "priority: 1\nenv: {BATCH: \"64\"}\nretries: 1\n";
    const char *fmts[2] = {"json", "yaml"};
    const char *texts[2] = {spec_json, yaml};
    int f, r;

    for (f = 0; f < 2; f++) {
        double rate[MAX_REPS];
        long n = 0;
        for (r = 0; r < reps; r++) {
            double t0 = now_s(), t;
            n = 0;
            do {
                spw_jobspec_t s;
                spw_error_t err;
                int i;
                for (i = 0; i < 256; i++, n++) {
                    if (spw_jobspec_parse("bench", texts[f],
                                          strlen(texts[f]), &s, &err) < 0) {
                        fprintf(stderr, "bench_store: %s\n", err.text);
                        exit(1);
                    }
                    spw_jobspec_free(&s);
                }
                t = now_s();
            } while (t - t0 < seconds);
            rate[r] = (double)n / (t - t0);
        }
        qsort(rate, (size_t)reps, sizeof(double), cmp_double);
        printf("parse format=%s bytes=%zu reps=%d best_per_s=%.0f "
               "median_per_s=%.0f\n", fmts[f], strlen(texts[f]), reps,
               rate[reps - 1], rate[reps / 2]);
    }
}

int main(int argc, char **argv)
{
    static const int batches[] = {1, 8, 64};
    const char *base = "build";
    char dir[512];
    double seconds = 0.5;
    int reps = 3, i, b, s, r;
    spw_jobspec_t spec;
    spw_error_t err;
    struct statfs sf;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            base = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_store [--dir DIR] [--seconds S] "
                    "[--reps R]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || !(seconds > 0)) {
        fprintf(stderr, "bench_store: --reps takes 1 to %d, --seconds a "
                "positive number\n", MAX_REPS);
        return 2;
    }
    if (spw_jobspec_parse("bench", spec_json, strlen(spec_json), &spec,
                          &err) < 0) {
        fprintf(stderr, "bench_store: %s\n", err.text);
        return 1;
    }
    snprintf(dir, sizeof(dir), "%s/bench-store-XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror("bench_store: mkdtemp");
        return 1;
    }
    if (statfs(dir, &sf) == 0)
        printf("info dir=%s fs_magic=0x%lx%s\n", dir,
               (unsigned long)sf.f_type,
               sf.f_type == 0x01021994 ? " (tmpfs: fsync is free, FULL "
               "figures mean nothing)" : "");
    for (s = 0; s < 2; s++) {
        spw_store_sync_t sync = s ? SPW_STORE_SYNC_FULL
            : SPW_STORE_SYNC_NORMAL;
        for (b = 0; b < 3; b++) {
            double rate[MAX_REPS];
            long jobs = 0;
            for (r = 0; r < reps; r++) {
                rate[r] = run_once(dir, sync, batches[b], seconds, &spec,
                                   &jobs);
                if (rate[r] < 0)
                    return 1;
            }
            qsort(rate, (size_t)reps, sizeof(double), cmp_double);
            printf("store sync=%s batch=%d reps=%d jobs_last=%ld "
                   "best_jobs_per_s=%.0f median_jobs_per_s=%.0f "
                   "median_commits_per_s=%.0f\n",
                   s ? "full" : "normal", batches[b], reps, jobs,
                   rate[reps - 1], rate[reps / 2],
                   rate[reps / 2] / batches[b]);
            fflush(stdout);
        }
    }
    bench_parse(reps, seconds);
    spw_jobspec_free(&spec);
    rmdir(dir);
    return 0;
}
