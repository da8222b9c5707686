/* bench_engine.c: engine-only and loader-only timings for bench/run.sh.
 *
 *   build/bench/bench_engine [--jobs N,N,...] [--reps R] [--policy NAME,...]
 *   build/bench/bench_engine --load FILE [--reps R]
 *
 * Engine mode builds the synthetic workload of the spec in memory with
 * spw_gen (rate 2048/h, exp:3600 runtimes, GPUs 1:0.7,2:0.15,4:0.1,8:0.05,
 * seed 1; submit and runtimes rounded to the millisecond exactly as
 * `spillway gen` writes them), so no CSV is parsed, and times spw_sim_run
 * alone for each policy:
 *
 *   c025      512 nodes x 8 GPUs, wait compute:0.25, scan hol, no backfill
 *   hol       256 nodes x 8 GPUs, wait never, scan hol
 *   skip      256 nodes x 8 GPUs, wait never, scan skip
 *   easy      256 nodes x 8 GPUs, wait never, EASY backfill
 *
 * Load mode times spw_trace_load of one spillway CSV (what `spillway sim`
 * does before simulating).
 *
 * Every result is one line of key=value pairs (best and median of R runs) so
 * run.sh can pick it apart with awk. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "core/model.h"
#include "sim/gen.h"
#include "sim/sim.h"
#include "sim/trace.h"

typedef struct policy_def {
    const char *name;
    const char *yaml;
} policy_def_t;

#define FLEET(NODES)                                                           \
    "onprem:\n  - name: dc\n    nodes: " #NODES "\n    gpus_per_node: 8\n"     \
    "    gpu: A100\n    cost_usd_per_gpu_h: 1.10\n"                            \
    "cloud:\n  price_usd_per_gpu_h: 2.5\n  boot_delay_s: 0\n"

static const policy_def_t policies[] = {
    {"c025", FLEET(512) "policy:\n  queue: fifo\n  scan: hol\n  backfill: none\n"
                        "  fit: first\n  wait: compute:0.25\n"},
    {"hol", FLEET(256) "policy:\n  queue: fifo\n  scan: hol\n  backfill: none\n"
                       "  fit: first\n  wait: never\n"},
    {"skip", FLEET(256) "policy:\n  queue: fifo\n  scan: skip\n  backfill: none\n"
                        "  fit: first\n  wait: never\n"},
    {"easy", FLEET(256) "policy:\n  queue: fifo\n  scan: hol\n  backfill: easy\n"
                        "  fit: first\n  wait: never\n"},
};
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Best (smallest) and median of v[0..n); sorts v. */
static void best_median(double *v, int n, double *best, double *median)
{
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    *best = v[0];
    *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Rounds x as "%.3f" prints it, so the in-memory jobs equal the CSV's. */
static double ms_round(double x)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%.3f", x);
    return strtod(buf, NULL);
}

typedef struct workload {
    spw_job_t *jobs;
    double *runtime_s;
    char *ids;
    size_t n;
} workload_t;

static void workload_make(workload_t *w, size_t n)
{
    spw_gen_opts_t o = {.jobs = n, .rate_per_h = 2048, .cv = 1, .seed = 1};
    spw_error_t err;
    if (spw_gen_parse_runtime(&o, "exp:3600", &err) < 0 ||
        spw_gen_parse_gpus(&o, "1:0.7,2:0.15,4:0.1,8:0.05", &err) < 0) {
        fprintf(stderr, "bench_engine: %s\n", err.text);
        exit(1);
    }
    spw_gen_job_t *g = spw_xmalloc(n * sizeof(*g));
    spw_gen(&o, g);
    spw_gen_opts_free(&o);
    w->n = n;
    w->jobs = spw_xcalloc(n, sizeof(spw_job_t));
    w->runtime_s = spw_xmalloc(n * sizeof(double));
    w->ids = spw_xmalloc(n * 24);
    for (size_t i = 0; i < n; i++) {
        spw_job_t *j = &w->jobs[i];
        char *id = w->ids + i * 24;
        snprintf(id, 24, "%zu", i + 1);
        j->id = id;
        j->submit_s = ms_round(g[i].submit_s);
        w->runtime_s[i] = ms_round(g[i].runtime_s);
        j->est_runtime_s = w->runtime_s[i];
        j->gpus = g[i].gpus;
        j->gpu_mask = 0;
        j->priority = 0;
        j->deadline_s = NAN;
        j->order = (uint32_t)i;
        j->team = 0;
    }
    free(g);
}

static void workload_free(workload_t *w)
{
    free(w->jobs);
    free(w->runtime_s);
    free(w->ids);
}

static int bench_engine(const char *sizes, const char *which, int reps)
{
    printf("info sizeof_spw_job_t=%zu sizeof_spw_sim_summary_t=%zu\n", sizeof(spw_job_t),
           sizeof(spw_sim_summary_t));
    char *list = strdup(sizes), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t n = strtoull(tok, NULL, 10);
        if (n == 0) {
            fprintf(stderr, "bench_engine: bad job count '%s'\n", tok);
            return 2;
        }
        workload_t w;
        workload_make(&w, n);
        for (size_t p = 0; p < NPOLICIES; p++) {
            if (which && !strstr(which, policies[p].name))
                continue;
            spw_config_t cfg;
            spw_error_t err;
            if (spw_config_load_mem(&cfg, policies[p].name, policies[p].yaml,
                                    strlen(policies[p].yaml), ".", &err) < 0) {
                fprintf(stderr, "bench_engine: %s\n", err.text);
                return 1;
            }
            double t[64];
            spw_sim_summary_t sum = {0};
            for (int r = 0; r < reps; r++) {
                double t0 = now_s();
                if (spw_sim_run(&cfg.fleet, &cfg.policy, w.jobs, w.runtime_s, n, NULL, &sum,
                                &err) < 0) {
                    fprintf(stderr, "bench_engine: %s\n", err.text);
                    return 1;
                }
                t[r] = now_s() - t0;
            }
            double best, med;
            best_median(t, reps, &best, &med);
            printf("engine policy=%s jobs=%zu reps=%d best_s=%.6f median_s=%.6f "
                   "ns_per_job=%.1f median_ns_per_job=%.1f queue_max=%zu events=%llu "
                   "passes=%llu backfilled=%zu\n",
                   policies[p].name, n, reps, best, med, best * 1e9 / (double)n,
                   med * 1e9 / (double)n, sum.queue_max, (unsigned long long)sum.events,
                   (unsigned long long)sum.passes, sum.jobs_backfilled);
            fflush(stdout);
            spw_config_free(&cfg);
        }
        workload_free(&w);
    }
    free(list);
    return 0;
}

static int bench_load(const char *path, int reps)
{
    double t[64];
    size_t rows = 0;
    for (int r = 0; r < reps; r++) {
        spw_models_t models = {0};
        spw_trace_t tr;
        spw_error_t err;
        double t0 = now_s();
        if (spw_trace_load(&tr, path, SPW_TRACE_AUTO, &models, &err) < 0) {
            fprintf(stderr, "bench_engine: %s\n", err.text);
            return 1;
        }
        t[r] = now_s() - t0;
        rows = tr.njobs;
        spw_trace_free(&tr);
        spw_models_clear(&models);
    }
    double best, med;
    best_median(t, reps, &best, &med);
    printf("load file=%s jobs=%zu reps=%d best_s=%.6f median_s=%.6f ns_per_job=%.1f\n", path,
           rows, reps, best, med, best * 1e9 / (double)(rows ? rows : 1));
    return 0;
}

int main(int argc, char **argv)
{
    const char *sizes = "10000,100000,1000000", *which = NULL, *load = NULL;
    int reps = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
            sizes = argv[++i];
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
            which = argv[++i];
        else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc)
            load = argv[++i];
        else {
            fprintf(stderr,
                    "usage: bench_engine [--jobs N,N,...] [--reps R] [--policy c025,hol,skip,easy]\n"
                    "       bench_engine --load FILE [--reps R]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64) {
        fprintf(stderr, "bench_engine: --reps takes 1 to 64\n");
        return 2;
    }
    return load ? bench_load(load, reps) : bench_engine(sizes, which, reps);
}
