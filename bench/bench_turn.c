/* bench_turn.c: how long one scheduling turn (spw_engine_schedule) takes with
 * a deep queue on a big fleet, for the daemon's target of <= 50 ms per turn
 * with 100,000 queued jobs and 1,000 nodes.
 *
 *   build/bench/bench_turn [--queue N] [--turns T] [--seed S]
 *                          [--policy hol,skip,easy] [--fleet 1pool,4pools]
 *
 * Fleets (1,000 nodes x 8 GPUs either way, flat cloud at $2.50/GPU-h,
 * wait compute:0.25, FIFO order, first fit):
 *
 *   1pool    one pool of 1,000 nodes; every job takes any GPU
 *   4pools   four pools of 250 nodes (A100, H100, L40S, V100); 40% of the
 *            jobs ask for one model, so there are more demand classes
 *
 * Policies: hol (scan hol), skip (scan skip), easy (backfill easy).
 *
 * Jobs: GPUs 1:0.55, 2:0.17, 4:0.14, 8:0.10, 16:0.03, 32:0.01 (16 and 32 span
 * whole nodes), est_runtime exponential with mean 1 h, clamped to 1 min ..
 * 24 h.  The loop is the daemon's:
 *
 *   1. fill: submit jobs in batches of 1,000 and schedule after each batch
 *      until N jobs (default 100,000) are queued behind a full cluster;
 *   2. idle: schedule with nothing changed (the daemon's tick);
 *   3. full: submit one 8-GPU job into the full cluster and schedule
 *      (nothing fits: the pass runs and starts nothing);
 *   4. T turns (default 20,000): finish one random running job, schedule;
 *      after every 100 of those, submit 100 jobs and schedule, so the queue
 *      stays near N.  A finish turn that started something is "finish+start",
 *      one that started nothing (the head still does not fit) is
 *      "finish+none"; the submit turns are "submit100";
 *   5. burst_all: the clock jumps a day, every queued job's wait has
 *      expired, and one turn sends the whole queue to the cloud.
 *
 * Only the spw_engine_schedule call is timed (CLOCK_MONOTONIC around it).
 * The clock the engine sees advances 1 ms per turn, so that the queue stays
 * at N: over the measurement only jobs with very short estimates reach their
 * compute:0.25 wait and burst (counted as cloud=).
 *
 * Every result is one line of key=value pairs, so run.sh can pick it apart:
 *   turn fleet=F policy=P kind=K n=... median_ms=... p99_ms=... max_ms=... mean_ms=...
 *   run fleet=F policy=P queued_after_fill=... fill_s=... ... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "core/engine.h"
#include "core/model.h"
#include "util/rng.h"

#define NODES 1000
#define ID_LEN 16
#define SUBMIT_EVERY 100 /* finish turns between two batches of submits */

/* ---- configurations -------------------------------------------------------- */

#define CLOUD_AND_POLICY(SCAN, BACKFILL)                                      \
    "cloud:\n  price_usd_per_gpu_h: 2.5\n  boot_delay_s: 0\n"                 \
    "policy:\n  queue: fifo\n  scan: " SCAN "\n  backfill: " BACKFILL "\n"    \
    "  fit: first\n  wait: compute:0.25\n"

#define ONE_POOL                                                              \
    "onprem:\n  - name: dc\n    nodes: 1000\n    gpus_per_node: 8\n"          \
    "    gpu: A100\n    cost_usd_per_gpu_h: 1.10\n"

#define POOL(NAME, GPU, COST)                                                 \
    "  - name: " NAME "\n    nodes: 250\n    gpus_per_node: 8\n"              \
    "    gpu: " GPU "\n    cost_usd_per_gpu_h: " COST "\n"
#define FOUR_POOLS                                                            \
    "onprem:\n" POOL("a100", "A100", "1.10") POOL("h100", "H100", "2.00")     \
        POOL("l40s", "L40S", "0.80") POOL("v100", "V100", "0.50")

typedef struct policy_def {
    const char *name;   /* as given to --policy */
    const char *scan;   /* policy.scan */
    const char *backfill; /* policy.backfill */
} policy_def_t;

static const policy_def_t policies[] = {
    {"hol", "hol", "none"},
    {"skip", "skip", "none"},
    {"easy", "hol", "easy"},
};
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

static const char *const fleets[] = {"1pool", "4pools"};
#define NFLEETS (sizeof(fleets) / sizeof(fleets[0]))

static const char *const models_4pools[] = {"A100", "H100", "L40S", "V100"};

/* ---- timing and series ------------------------------------------------------ */

static double now_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The durations of one kind of turn, seconds. */
typedef struct series {
    double *v;     /* owned */
    size_t n, cap;
} series_t;

static void series_add(series_t *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = spw_xrealloc(s->v, s->cap * sizeof(double));
    }
    s->v[s->n++] = x;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Prints one result line for s (sorting it) and empties it. */
static void series_print(series_t *s, const char *fleet, const char *policy, const char *kind)
{
    printf("turn fleet=%s policy=%s kind=%s n=%zu", fleet, policy, kind, s->n);
    if (s->n) {
        qsort(s->v, s->n, sizeof(double), cmp_d);
        double sum = 0;
        for (size_t i = 0; i < s->n; i++)
            sum += s->v[i];
        double med = s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
        size_t i99 = (size_t)ceil(0.99 * (double)s->n);
        i99 = i99 ? i99 - 1 : 0;
        printf(" median_ms=%.6f p99_ms=%.6f max_ms=%.6f mean_ms=%.6f", med * 1e3,
               s->v[i99] * 1e3, s->v[s->n - 1] * 1e3, sum / (double)s->n * 1e3);
    } else {
        printf(" median_ms=nan p99_ms=nan max_ms=nan mean_ms=nan");
    }
    printf("\n");
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* ---- the workload ------------------------------------------------------------ */

typedef struct bench {
    spw_engine_t *e;
    spw_rng_t rng;
    spw_job_t *jobs;       /* owned; fixed so the engine's borrowed pointers stay valid */
    char *ids;             /* owned; ID_LEN bytes per job */
    size_t njobs, capjobs; /* jobs made / room */
    spw_job_t **run;       /* placed jobs (on-prem or cloud), unordered */
    size_t nrun, caprun;
    uint64_t model_bit[4]; /* mask bit of each model of models_4pools (4pools only) */
    int restrict_models;   /* 1: 40% of the jobs ask for one model */
    uint64_t placed_onprem, placed_cloud;
} bench_t;

static uint32_t draw_gpus(spw_rng_t *r)
{
    double u = spw_rng_uniform(r);
    if (u < 0.55) return 1;
    if (u < 0.72) return 2;
    if (u < 0.86) return 4;
    if (u < 0.96) return 8;
    if (u < 0.99) return 16;
    return 32;
}

/* Makes and submits one job at `now`; gpus 0 = draw from the mix. */
static void submit_one(bench_t *b, double now, uint32_t gpus)
{
    if (b->njobs == b->capjobs) {
        fprintf(stderr, "bench_turn: job array full (%zu); raise the estimate in main\n",
                b->capjobs);
        exit(1);
    }
    size_t i = b->njobs++;
    spw_job_t *j = &b->jobs[i];
    char *id = b->ids + i * ID_LEN;
    snprintf(id, ID_LEN, "%zu", i + 1);
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->submit_s = now;
    double est = spw_rng_exp(&b->rng, 3600);
    j->est_runtime_s = est < 60 ? 60 : est > 86400 ? 86400 : round(est);
    j->gpus = gpus ? gpus : draw_gpus(&b->rng);
    j->gpu_mask = 0;
    if (b->restrict_models && spw_rng_uniform(&b->rng) < 0.4)
        j->gpu_mask = b->model_bit[spw_rng_below(&b->rng, 4)];
    j->priority = 0;
    j->deadline_s = NAN;
    j->order = (uint32_t)i;
    j->team = 0;
    spw_engine_submit(b->e, j, now);
    if (j->state == SPW_JOB_UNSCHEDULABLE) {
        fprintf(stderr, "bench_turn: job %s (%u GPUs) is unschedulable\n", id, j->gpus);
        exit(1);
    }
}

/* Times one spw_engine_schedule and files the placements as running. */
static double schedule_timed(bench_t *b, double now, size_t *nplaced)
{
    spw_job_t **placed;
    double t0 = now_mono_s();
    size_t n = spw_engine_schedule(b->e, now, &placed);
    double dt = now_mono_s() - t0;
    for (size_t i = 0; i < n; i++) {
        if (b->nrun == b->caprun) {
            b->caprun = b->caprun ? b->caprun * 2 : 4096;
            b->run = spw_xrealloc(b->run, b->caprun * sizeof(*b->run));
        }
        b->run[b->nrun++] = placed[i];
        if (placed[i]->state == SPW_JOB_CLOUD)
            b->placed_cloud++;
        else
            b->placed_onprem++;
    }
    *nplaced = n;
    return dt;
}

/* Runs the whole loop for one fleet and policy. */
static int bench_one(const char *fleet, const policy_def_t *pd, size_t queue, size_t turns,
                     uint64_t seed)
{
    char yaml[2048];
    int four = strcmp(fleet, "4pools") == 0;
    snprintf(yaml, sizeof(yaml), "%s" CLOUD_AND_POLICY("%s", "%s"), four ? FOUR_POOLS : ONE_POOL,
             pd->scan, pd->backfill);
    spw_config_t cfg;
    spw_error_t err;
    if (spw_config_load_mem(&cfg, "bench_turn", yaml, strlen(yaml), ".", &err) < 0) {
        fprintf(stderr, "bench_turn: %s\n", err.text);
        return 1;
    }
    bench_t b = {0};
    spw_rng_seed(&b.rng, seed);
    b.restrict_models = four;
    if (four)
        for (int m = 0; m < 4; m++) {
            int k = spw_models_find(&cfg.fleet.models, models_4pools[m]);
            if (k < 0) {
                fprintf(stderr, "bench_turn: model %s missing from the fleet\n", models_4pools[m]);
                return 1;
            }
            b.model_bit[m] = 1ULL << k;
        }
    b.e = spw_engine_create(&cfg.fleet, &cfg.policy, &err);
    if (!b.e) {
        fprintf(stderr, "bench_turn: %s\n", err.text);
        return 1;
    }
    /* Upper bound on the jobs made: the queue, what runs (<= 8,000: every
     * job takes a GPU), one batch of overshoot, the full turns, the submits
     * of the loop. */
    const size_t nfull = 200, nidle = 1000;
    b.capjobs = queue + NODES * 8 + 1000 + nfull + turns + SUBMIT_EVERY + 16;
    b.jobs = spw_xcalloc(b.capjobs, sizeof(spw_job_t));
    b.ids = spw_xmalloc(b.capjobs * ID_LEN);

    double now = 0, fill_s = 0;
    size_t np;
    series_t s_fill = {0}, s_idle = {0}, s_full = {0}, s_start = {0}, s_none = {0}, s_sub = {0};

    /* 1. fill */
    double t0 = now_mono_s();
    while (spw_engine_queued(b.e) < queue) {
        now += 0.001;
        for (int k = 0; k < 1000; k++)
            submit_one(&b, now, 0);
        series_add(&s_fill, schedule_timed(&b, now, &np));
    }
    fill_s = now_mono_s() - t0;
    size_t queued_fill = spw_engine_queued(b.e);
    spw_engine_stats_t st;
    spw_engine_stats(b.e, &st);
    double busy_fill = (double)st.onprem_busy_gpus / (double)st.onprem_gpus;

    /* 2. idle turns */
    for (size_t k = 0; k < nidle; k++) {
        now += 0.001;
        series_add(&s_idle, schedule_timed(&b, now, &np));
    }
    /* 3. one submit into the full cluster */
    size_t full_started = 0;
    for (size_t k = 0; k < nfull; k++) {
        now += 0.001;
        submit_one(&b, now, 8);
        series_add(&s_full, schedule_timed(&b, now, &np));
        full_started += np;
    }
    /* 4. finish one, schedule; every SUBMIT_EVERY turns submit as many */
    size_t qmin = (size_t)-1, qmax = 0;
    for (size_t t = 1; t <= turns && b.nrun; t++) {
        now += 0.001;
        size_t k = (size_t)spw_rng_below(&b.rng, b.nrun);
        spw_job_t *j = b.run[k];
        b.run[k] = b.run[--b.nrun];
        spw_engine_finish(b.e, j, now);
        double dt = schedule_timed(&b, now, &np);
        series_add(np ? &s_start : &s_none, dt);
        if (t % SUBMIT_EVERY == 0) {
            now += 0.001;
            for (int s = 0; s < SUBMIT_EVERY; s++)
                submit_one(&b, now, 0);
            series_add(&s_sub, schedule_timed(&b, now, &np));
        }
        size_t q = spw_engine_queued(b.e);
        if (q < qmin) qmin = q;
        if (q > qmax) qmax = q;
    }
    /* 5. the clock jumps a day: every wait has expired, the whole queue
     * bursts to the cloud in one turn (the worst turn there is) */
    size_t queued_before_burst = spw_engine_queued(b.e), burst_placed;
    now += 86400;
    series_t s_burst = {0};
    series_add(&s_burst, schedule_timed(&b, now, &burst_placed));
    spw_engine_stats(b.e, &st);

    printf("run fleet=%s policy=%s queued_after_fill=%zu busy_after_fill=%.4f fill_s=%.3f "
           "jobs_made=%zu queued_min=%zu queued_max=%zu queued_end=%zu running_end=%zu "
           "onprem_started=%llu cloud=%llu full_started=%zu classes=%zu passes=%llu "
           "reservations=%llu burst_all_queued=%zu burst_all_placed=%zu\n",
           fleet, pd->name, queued_fill, busy_fill, fill_s, b.njobs, qmin == (size_t)-1 ? 0 : qmin,
           qmax, spw_engine_queued(b.e), b.nrun, (unsigned long long)b.placed_onprem,
           (unsigned long long)b.placed_cloud, full_started, st.classes,
           (unsigned long long)st.passes, (unsigned long long)st.reservations, queued_before_burst,
           burst_placed);
    series_print(&s_fill, fleet, pd->name, "fill1000");
    series_print(&s_idle, fleet, pd->name, "idle");
    series_print(&s_full, fleet, pd->name, "full");
    series_print(&s_start, fleet, pd->name, "finish+start");
    series_print(&s_none, fleet, pd->name, "finish+none");
    series_print(&s_sub, fleet, pd->name, "submit100");
    series_print(&s_burst, fleet, pd->name, "burst_all");
    fflush(stdout);

    spw_engine_destroy(b.e);
    free(b.jobs);
    free(b.ids);
    free(b.run);
    spw_config_free(&cfg);
    return 0;
}

int main(int argc, char **argv)
{
    size_t queue = 100000, turns = 20000;
    uint64_t seed = 1;
    const char *which = NULL, *fleet = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--queue") == 0 && i + 1 < argc)
            queue = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--turns") == 0 && i + 1 < argc)
            turns = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
            which = argv[++i];
        else if (strcmp(argv[i], "--fleet") == 0 && i + 1 < argc)
            fleet = argv[++i];
        else {
            fprintf(stderr, "usage: bench_turn [--queue N] [--turns T] [--seed S] "
                            "[--policy hol,skip,easy] [--fleet 1pool,4pools]\n");
            return 2;
        }
    }
    if (queue == 0 || queue > 10000000 || turns > 10000000) {
        fprintf(stderr, "bench_turn: --queue takes 1 to 10,000,000, --turns up to 10,000,000\n");
        return 2;
    }
    printf("info nodes=%d gpus_per_node=8 queue=%zu turns=%zu seed=%llu sizeof_spw_job_t=%zu\n",
           NODES, queue, turns, (unsigned long long)seed, sizeof(spw_job_t));
    for (size_t f = 0; f < NFLEETS; f++) {
        if (fleet && !strstr(fleet, fleets[f]))
            continue;
        for (size_t p = 0; p < NPOLICIES; p++) {
            if (which && !strstr(which, policies[p].name))
                continue;
            if (bench_one(fleets[f], &policies[p], queue, turns, seed) != 0)
                return 1;
        }
    }
    return 0;
}
