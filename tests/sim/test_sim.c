/* test_sim.c: the trace-driven simulator: hand-computed scenarios with every
 * summary field checked, the time series, nearest-rank quantiles, and
 * properties over random workloads (each job ends once, no negative waits,
 * capacity never exceeded, `never` never pays the cloud, `none` never waits,
 * byte-identical reruns). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "core/model.h"
#include "sim/gen.h"
#include "sim/sim.h"
#include "util/rng.h"

/* ---- fleets and jobs ---------------------------------------------------------- */

static int add_pool(spw_fleet_t *f, const char *name, uint32_t nnodes, uint16_t gpus_each,
                    const char *model, double cost_usd_per_gpu_h)
{
    f->pools = spw_xrealloc(f->pools, (f->npools + 1) * sizeof(*f->pools));
    spw_pool_spec_t *p = &f->pools[f->npools];
    memset(p, 0, sizeof(*p));
    p->name = spw_xstrdup(name);
    p->nnodes = nnodes;
    p->node_gpus = spw_xmalloc(nnodes * sizeof(uint16_t));
    for (uint32_t k = 0; k < nnodes; k++)
        p->node_gpus[k] = gpus_each;
    p->model = model ? spw_models_intern(&f->models, model, strlen(model), NULL) : -1;
    p->cost_usd_per_gpu_h = cost_usd_per_gpu_h;
    return (int)f->npools++;
}

static int add_offer(spw_fleet_t *f, const char *model, uint32_t gpus, double usd_per_h,
                     double boot_delay_s)
{
    f->offers = spw_xrealloc(f->offers, (f->noffers + 1) * sizeof(*f->offers));
    spw_offer_t *o = &f->offers[f->noffers];
    memset(o, 0, sizeof(*o));
    o->provider = spw_xstrdup("test");
    o->region = spw_xstrdup("");
    o->zone = spw_xstrdup("");
    o->instance_type = spw_xstrdup("t");
    o->model = model ? spw_models_intern(&f->models, model, strlen(model), NULL) : -1;
    o->gpus = gpus;
    o->ondemand_usd_per_h = usd_per_h;
    o->spot_usd_per_h = NAN;
    o->boot_delay_s = boot_delay_s;
    return (int)f->noffers++;
}

static void job_init(spw_job_t *j, const char *id, double submit_s, double est_s, uint32_t gpus,
                     uint32_t order)
{
    spw_job_clear(j);   /* jobs are zero-initialised (= {0}) or inited before */
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->submit_s = submit_s;
    j->est_runtime_s = est_s;
    j->gpus = gpus;
    j->order = order;
    j->deadline_s = NAN;
}

static spw_policy_t policy(spw_queue_order_t q, spw_scan_t s, spw_backfill_t b, spw_fit_t fit,
                           const char *wait)
{
    spw_policy_t p;
    spw_policy_default(&p);
    p.queue = q;
    p.scan = s;
    p.backfill = b;
    p.fit = fit;
    spw_error_t err;
    if (spw_wait_parse(wait, &p.wait, &err) < 0)
        diag("bad wait '%s' in the test: %s", wait, err.text);
    return p;
}

/* ---- samples ------------------------------------------------------------------------ */

#define MAXSAMPLES 200000

typedef struct samples {
    spw_sim_sample_t *v;
    size_t n;
} samples_t;

static void on_sample(void *ctx, const spw_sim_sample_t *s)
{
    samples_t *ss = ctx;
    if (ss->n < MAXSAMPLES)
        ss->v[ss->n] = *s;
    ss->n++;
}

typedef struct progress {
    size_t calls, last_done, last_total;
} progress_t;

/* ---- a hand-computed scenario -------------------------------------------------------- */

/* One node of 4 GPUs at $1/GPU-h; a flat cloud of 1-GPU instances at $3/h
 * that take 60 s to boot; fifo, hol, no backfill, first fit, constant:600.
 *
 *   job  submit  GPUs  runtime   what happens
 *   a       0     4     3600     on-prem 0..3600                      $4 (4 x 1 x 1 h)
 *   b       0     2     1800     blocked; bursts at 600, runs 660..2460  $3 (2 x 3 x 0.5 h)
 *   c     100     1     7200     blocked (hol, then a holds all 4);
 *                                bursts at 700, runs 760..7960        $6 (1 x 3 x 2 h)
 *   d    3000     2     1800     queued (wait until 3600); a ends at 3600 and the
 *                                pass runs before the expiry: on-prem 3600..5400  $1
 *
 * waits 0, 660, 660, 600; JCTs 3600, 2460, 7860, 2400; makespan 7960.
 * Instants: 0, 100, 600, 660 (b booted), 700, 760 (c booted), 2460, 3000,
 * 3600, 5400, 7960 = 11.
 * Passes (only when something changed): 0, 100, 600 (after b's burst),
 * 700 (after c's), 3000, 3600, 5400 = 7. */
static void test_hand_scenario(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 4, NULL, 1.0);
    add_offer(&f, NULL, 1, 3.0, 60);
    spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST,
                            "constant:600");
    spw_job_t j[4] = {0};
    double rt[4] = {3600, 1800, 7200, 1800};
    job_init(&j[0], "a", 0, 3600, 4, 0);
    job_init(&j[1], "b", 0, 1800, 2, 1);
    job_init(&j[2], "c", 100, 7200, 1, 2);
    job_init(&j[3], "d", 3000, 1800, 2, 3);
    samples_t ss = {calloc(MAXSAMPLES, sizeof(spw_sim_sample_t)), 0};
    spw_sim_opts_t o = {.step_s = 1000, .on_sample = on_sample, .ctx = &ss};
    spw_sim_summary_t s;
    spw_error_t err;
    is(spw_sim_run(&f, &p, j, rt, 4, &o, &s, &err), 0, "hand: runs");

    is(j[0].state, SPW_JOB_DONE, "hand: a done");
    is(j[0].offer, -1, "hand: a on-prem");
    is_double(j[0].start_s, 0, 0, "hand: a starts 0");
    is_double(j[0].end_s, 3600, 0, "hand: a ends 3600");
    is_double(j[0].cost_usd, 4.0, 1e-9, "hand: a costs $4");
    is(j[1].offer, 0, "hand: b in the cloud");
    is(j[1].reason, SPW_REASON_WAIT_EXPIRED, "hand: b's wait expired");
    is(j[1].instances, 2, "hand: b 2 instances");
    is_double(j[1].placed_s, 600, 0, "hand: b placed 600");
    is_double(j[1].start_s, 660, 0, "hand: b starts 660");
    is_double(j[1].end_s, 2460, 0, "hand: b ends 2460");
    is_double(j[1].cost_usd, 3.0, 1e-9, "hand: b costs $3");
    is(j[2].offer, 0, "hand: c in the cloud");
    is_double(j[2].placed_s, 700, 0, "hand: c placed 700");
    is_double(j[2].start_s, 760, 0, "hand: c starts 760");
    is_double(j[2].end_s, 7960, 0, "hand: c ends 7960");
    is_double(j[2].cost_usd, 6.0, 1e-9, "hand: c costs $6");
    is(j[3].offer, -1, "hand: d on-prem");
    is(j[3].reason, SPW_REASON_FITS_ONPREM, "hand: d fits on-prem at 3600");
    is_double(j[3].start_s, 3600, 0, "hand: d starts 3600");
    is_double(j[3].end_s, 5400, 0, "hand: d ends 5400");
    is_double(j[3].cost_usd, 1.0, 1e-9, "hand: d costs $1");

    is(s.jobs, 4, "hand: jobs");
    is(s.jobs_onprem, 2, "hand: jobs_onprem");
    is(s.jobs_cloud, 2, "hand: jobs_cloud");
    is(s.jobs_unschedulable, 0, "hand: jobs_unschedulable");
    is(s.jobs_backfilled, 0, "hand: jobs_backfilled");
    is_double(s.cloud_cost_usd, 9.0, 1e-9, "hand: cloud_cost_usd");
    is_double(s.onprem_cost_usd, 5.0, 1e-9, "hand: onprem_cost_usd");
    /* Owned: 4 GPUs x $1 x 7960 s, used or not; 5 GPU-h of it used. */
    is_double(s.owned_cost_usd, 4 * 7960 / 3600.0, 1e-9, "hand: owned_cost_usd 4 GPUs x 7960 s");
    is_double(s.owned_used_usd, 5.0, 1e-9, "hand: owned_used_usd = the used GPU-hours");
    is_double(s.owned_idle_usd, 4 * 7960 / 3600.0 - 5, 1e-9, "hand: owned_idle_usd the rest");
    is_double(s.useful_gpu_hours, 8.0, 1e-9, "hand: useful GPU-hours 4 + 1 + 2 + 1");
    is_double(s.cost_per_useful_gpu_h, (9.0 + 4 * 7960 / 3600.0) / 8, 1e-9,
              "hand: cost per useful GPU-hour (cloud + owned) / 8");
    is_double(s.cloud_gpu_hours, 3.0, 1e-9, "hand: cloud_gpu_hours (2 x 0.5 + 1 x 2)");
    is_double(s.onprem_gpu_hours, 5.0, 1e-9, "hand: onprem_gpu_hours (4 x 1 + 2 x 0.5)");
    is_double(s.wait_mean_s, 480, 1e-9, "hand: wait_mean_s (0+660+660+600)/4");
    is_double(s.wait_p50_s, 600, 0, "hand: wait_p50_s (2nd of 0,600,660,660)");
    is_double(s.wait_p90_s, 660, 0, "hand: wait_p90_s (4th)");
    is_double(s.wait_p99_s, 660, 0, "hand: wait_p99_s");
    is_double(s.jct_mean_s, 4080, 1e-9, "hand: jct_mean_s (3600+2460+7860+2400)/4");
    is_double(s.jct_p50_s, 2460, 0, "hand: jct_p50_s (2nd of 2400,2460,3600,7860)");
    is_double(s.jct_p90_s, 7860, 0, "hand: jct_p90_s");
    is_double(s.jct_p99_s, 7860, 0, "hand: jct_p99_s");
    is_double(s.makespan_s, 7960, 0, "hand: makespan_s");
    is_double(s.onprem_utilization, 5.0 / (4 * 7960 / 3600.0), 1e-12,
              "hand: onprem_utilization 5 GPU-h / (4 GPUs x 7960 s)");
    is(s.queue_max, 2, "hand: queue_max (b and c at t=100)");
    is(s.onprem_gpus, 4, "hand: onprem_gpus");
    /* Instants: the 9 above plus the two boot ends (660, 760), when the
     * cloud spend rate goes up. */
    is(s.events, 11, "hand: events");
    is(s.passes, 7, "hand: passes");

    /* Samples every 1000 s from t=0 to the last end, each the state after
     * every instant at or before its time. */
    static const struct {
        size_t queued;
        uint64_t busy, cloud;
        double rate;
    } want[8] = {
        {1, 4, 0, 0},  /* 0: b waiting */
        {0, 4, 3, 9},  /* 1000: b (2) and c (1) in the cloud */
        {0, 4, 3, 9},  /* 2000 */
        {1, 4, 1, 3},  /* 3000: b done at 2460, d waiting */
        {0, 2, 1, 3},  /* 4000: d on-prem */
        {0, 2, 1, 3},  /* 5000 */
        {0, 0, 1, 3},  /* 6000: d done at 5400 */
        {0, 0, 1, 3},  /* 7000 */
    };
    is(ss.n, 8, "hand: 8 samples (0, 1000, ..., 7000)");
    int good = ss.n == 8;
    for (size_t i = 0; i < 8 && i < ss.n; i++) {
        const spw_sim_sample_t *x = &ss.v[i];
        if (x->t_s != 1000.0 * (double)i || x->queued != want[i].queued
            || x->onprem_busy_gpus != want[i].busy || x->cloud_gpus != want[i].cloud
            || fabs(x->cloud_usd_per_h - want[i].rate) > 1e-9) {
            diag("sample %zu: t=%g queued=%zu busy=%llu cloud=%llu rate=%g", i, x->t_s, x->queued,
                 (unsigned long long)x->onprem_busy_gpus, (unsigned long long)x->cloud_gpus,
                 x->cloud_usd_per_h);
            good = 0;
        }
    }
    ok(good, "hand: every sample as worked out");

    /* Every 50 s around the boots: cloud GPUs count from placement, the
     * spend rate only once an instance has booted (b: 600..660, c: 700..760). */
    ss.n = 0;
    o.step_s = 50;
    is(spw_sim_run(&f, &p, j, rt, 4, &o, &s, &err), 0, "hand, step 50: runs");
    static const struct {
        double t;
        uint64_t cloud;
        double rate;
    } boot[] = {
        {550, 0, 0}, {600, 2, 0}, {650, 2, 0}, {700, 3, 6}, {750, 3, 6}, {800, 3, 9},
        {2450, 3, 9}, {2500, 1, 3},
    };
    good = ss.n == 160;   /* 0, 50, ..., 7950 */
    for (size_t i = 0; i < sizeof(boot) / sizeof(boot[0]) && good; i++) {
        const spw_sim_sample_t *x = &ss.v[(size_t)(boot[i].t / 50)];
        if (x->t_s != boot[i].t || x->cloud_gpus != boot[i].cloud
            || fabs(x->cloud_usd_per_h - boot[i].rate) > 1e-9) {
            diag("t=%g: cloud=%llu rate=%g, want %llu and %g", x->t_s,
                 (unsigned long long)x->cloud_gpus, x->cloud_usd_per_h,
                 (unsigned long long)boot[i].cloud, boot[i].rate);
            good = 0;
        }
    }
    ok(good, "hand: booting instances hold GPUs but are not billed (%zu samples)", ss.n);
    free(ss.v);
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 4);
}

/* EASY backfill, an unschedulable job, estimates that differ from runtimes.
 * One node of 4 GPUs at $2/GPU-h, no cloud, fifo + easy + never.
 *   j1 0  2 GPUs est 100 rt 100: on-prem 0..100
 *   j2 0  4 GPUs est 100 rt 100: blocked, reserved at 100: runs 100..200
 *   j3 0  2 GPUs est 50  rt 40:  backfilled 0..40
 *   j4 10 8 GPUs: can never fit and there is no cloud: unschedulable
 * GPU-hours (2x100 + 4x100 + 2x40)/3600 = 680/3600; cost x $2.
 * waits 0, 100, 0; JCTs 100, 200, 40; makespan 200; utilisation 680/800. */
static void test_hand_backfill(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 4, NULL, 2.0);
    spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_EASY, SPW_FIT_FIRST, "never");
    spw_job_t j[4] = {0};
    double rt[4] = {100, 100, 40, 100};
    job_init(&j[0], "j1", 0, 100, 2, 0);
    job_init(&j[1], "j2", 0, 100, 4, 1);
    job_init(&j[2], "j3", 0, 50, 2, 2);
    job_init(&j[3], "j4", 10, 100, 8, 3);
    spw_sim_summary_t s;
    spw_error_t err;
    is(spw_sim_run(&f, &p, j, rt, 4, NULL, &s, &err), 0, "backfill: runs");
    is(j[2].reason, SPW_REASON_BACKFILLED, "backfill: j3 backfilled");
    is_double(j[2].start_s, 0, 0, "backfill: j3 starts at 0");
    is_double(j[2].end_s, 40, 0, "backfill: j3 ends at its true runtime (40), not the estimate");
    is_double(j[1].start_s, 100, 0, "backfill: j2 at its reservation");
    is(j[3].state, SPW_JOB_UNSCHEDULABLE, "backfill: j4 unschedulable");
    is(j[3].reason, SPW_REASON_NO_PLACE, "backfill: j4 no place");
    is(s.jobs, 4, "backfill: jobs");
    is(s.jobs_onprem, 3, "backfill: jobs_onprem");
    is(s.jobs_cloud, 0, "backfill: jobs_cloud");
    is(s.jobs_unschedulable, 1, "backfill: jobs_unschedulable");
    is(s.jobs_backfilled, 1, "backfill: jobs_backfilled");
    is_double(s.cloud_cost_usd, 0, 0, "backfill: cloud_cost_usd");
    is_double(s.onprem_cost_usd, 2 * 680 / 3600.0, 1e-12, "backfill: onprem_cost_usd");
    is_double(s.cloud_gpu_hours, 0, 0, "backfill: cloud_gpu_hours");
    is_double(s.onprem_gpu_hours, 680 / 3600.0, 1e-12, "backfill: onprem_gpu_hours");
    is_double(s.wait_mean_s, 100 / 3.0, 1e-9, "backfill: wait_mean_s");
    is_double(s.wait_p50_s, 0, 0, "backfill: wait_p50_s (2nd of 0,0,100)");
    is_double(s.wait_p90_s, 100, 0, "backfill: wait_p90_s (3rd)");
    is_double(s.wait_p99_s, 100, 0, "backfill: wait_p99_s");
    is_double(s.jct_mean_s, 340 / 3.0, 1e-9, "backfill: jct_mean_s");
    is_double(s.jct_p50_s, 100, 0, "backfill: jct_p50_s (2nd of 40,100,200)");
    is_double(s.jct_p90_s, 200, 0, "backfill: jct_p90_s");
    is_double(s.jct_p99_s, 200, 0, "backfill: jct_p99_s");
    is_double(s.makespan_s, 200, 0, "backfill: makespan_s");
    is_double(s.onprem_utilization, 0.85, 1e-12, "backfill: onprem_utilization 680/800");
    is(s.queue_max, 1, "backfill: queue_max");
    is(s.onprem_gpus, 4, "backfill: onprem_gpus");
    is(s.events, 5, "backfill: events (0, 10, 40, 100, 200)");

    spw_fleet_clear(&f);
    spw_jobs_clear(j, 4);
}

static void progress_cb(void *ctx, size_t done, size_t total)
{
    progress_t *p = ctx;
    p->calls++;
    p->last_done = done;
    p->last_total = total;
}

static void test_edges(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 2, 2, NULL, 1.0);
    spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "never");
    spw_sim_summary_t s;
    spw_error_t err;

    /* No jobs at all. */
    is(spw_sim_run(&f, &p, NULL, NULL, 0, NULL, &s, &err), 0, "empty trace: runs");
    is(s.jobs, 0, "empty trace: no jobs");
    is_double(s.makespan_s, 0, 0, "empty trace: makespan 0");
    is_double(s.onprem_utilization, 0, 0, "empty trace: utilisation 0");
    is(s.onprem_gpus, 4, "empty trace: fleet size still reported");

    /* Unsorted input is refused. */
    spw_job_t j[3] = {0};
    double rt[3] = {10, 10, 10};
    job_init(&j[0], "x", 5, 10, 1, 0);
    job_init(&j[1], "y", 3, 10, 1, 1);
    job_init(&j[2], "z", 7, 10, 1, 2);
    is(spw_sim_run(&f, &p, j, rt, 3, NULL, &s, &err), -1, "unsorted: refused");
    ok(strstr(err.text, "sorted") != NULL && strstr(err.text, "y") != NULL,
       "unsorted: message names the job: %s", err.text);

    /* Only unschedulable jobs: nothing ran, makespan 0. */
    job_init(&j[0], "x", 5, 10, 9, 0);
    is(spw_sim_run(&f, &p, j, rt, 1, NULL, &s, &err), 0, "all unschedulable: runs");
    is(s.jobs_unschedulable, 1, "all unschedulable: counted");
    is_double(s.makespan_s, 0, 0, "all unschedulable: makespan 0");
    is_double(s.wait_mean_s, 0, 0, "all unschedulable: wait mean 0");

    /* Progress callback: the final call reports (n, n). */
    job_init(&j[0], "x", 0, 10, 1, 0);
    job_init(&j[1], "y", 3, 10, 1, 1);
    job_init(&j[2], "z", 7, 10, 1, 2);
    progress_t pr = {0};
    spw_sim_opts_t o = {.on_progress = progress_cb, .ctx = &pr};
    is(spw_sim_run(&f, &p, j, rt, 3, &o, &s, &err), 0, "progress: runs");
    ok(pr.calls >= 1 && pr.last_done == 3 && pr.last_total == 3, "progress: ends with (3, 3)");

    /* Jobs are reset first: a second run over the same records gives the
     * same answer even though they hold results. */
    spw_sim_summary_t s2;
    is(spw_sim_run(&f, &p, j, rt, 3, NULL, &s2, &err), 0, "rerun over used records: runs");
    ok(memcmp(&s, &s2, sizeof(s)) == 0, "rerun over used records: same summary");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 3);
}

/* ---- quantiles -------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least ceil(q n) values at or below. */
static double ref_quantile(const double *sorted, size_t n, double q)
{
    size_t r = (size_t)ceil(q * (double)n);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return sorted[r - 1];
}

static void test_quantile(void)
{
    double v[] = {5, 1, 4, 2, 3};
    is_double(spw_quantile(v, 5, 0.5), 3, 0, "quantile: median of 1..5");
    double w[] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
    is_double(spw_quantile(w, 10, 0.9), 90, 0, "quantile: p90 of 10..100 is the 9th");
    is_double(spw_quantile(w, 10, 0.99), 100, 0, "quantile: p99 of 10 values is the 10th");
    is_double(spw_quantile(w, 10, 0.0), 10, 0, "quantile: q=0 gives the smallest");
    is_double(spw_quantile(w, 10, 1.0), 100, 0, "quantile: q=1 gives the largest");
    is_double(spw_quantile(w, 0, 0.5), 0, 0, "quantile: empty gives 0");
    double one = 7;
    is_double(spw_quantile(&one, 1, 0.5), 7, 0, "quantile: one value");

    spw_rng_t g;
    spw_rng_seed(&g, 99);
    static double a[1000], b[1000], sorted[1000];
    static const double qs[] = {0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1};
    int bad = 0;
    for (int it = 0; it < 3000; it++) {
        size_t n = 1 + spw_rng_below(&g, it < 2000 ? 40 : 1000);
        int kind = (int)spw_rng_below(&g, 4);
        for (size_t i = 0; i < n; i++) {
            switch (kind) {
            case 0: a[i] = spw_rng_uniform(&g); break;                     /* distinct */
            case 1: a[i] = (double)spw_rng_below(&g, 3); break;            /* many ties */
            case 2: a[i] = (double)i; break;                               /* sorted */
            default: a[i] = (double)(n - i) * (spw_rng_below(&g, 2) ? 1 : -1); break;
            }
        }
        memcpy(sorted, a, n * sizeof(double));
        qsort(sorted, n, sizeof(double), cmp_d);
        for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
            memcpy(b, a, n * sizeof(double));
            double got = spw_quantile(b, n, qs[k]), want = ref_quantile(sorted, n, qs[k]);
            if (got != want && bad++ < 3)
                diag("quantile n=%zu kind=%d q=%g: got %g want %g", n, kind, qs[k], got, want);
        }
    }
    is(bad, 0, "quantile: matches a sort-based nearest rank on 3000 random arrays");
}

/* ---- random workloads --------------------------------------------------------------- */

#define MAXJ 400

typedef struct world {
    spw_fleet_t f;
    spw_policy_t p;
    spw_job_t jobs[MAXJ];
    double rt[MAXJ];
    char ids[MAXJ][12];
    size_t n;
    int flat_any;        /* an any-model offer exists (every job can burst) */
} world_t;

static const char *const wait_names[] = {"never", "none", "constant:120", "runtime:1",
                                         "compute:0.25"};

/* A small random fleet, policy and spw_gen workload from one seed. */
static void make_world(world_t *w, uint64_t seed, size_t jobs, double rt_mean_s, double rate_per_h)
{
    spw_rng_t g;
    spw_rng_seed(&g, seed * 7919 + 1);
    spw_fleet_init(&w->f);
    static const uint16_t sizes[] = {2, 4, 8};
    size_t np = 1 + spw_rng_below(&g, 2);
    for (size_t i = 0; i < np; i++) {
        char name[8] = "pA";
        name[1] = (char)('A' + i);
        add_pool(&w->f, name, 1 + (uint32_t)spw_rng_below(&g, 4), sizes[spw_rng_below(&g, 3)],
                 spw_rng_below(&g, 2) ? "A100" : NULL, 0.5 + (double)spw_rng_below(&g, 4));
    }
    /* Job masks name A100 (maybe no pool or offer has it) and H100. */
    spw_models_intern(&w->f.models, "A100", 4, NULL);
    spw_models_intern(&w->f.models, "H100", 4, NULL);
    w->flat_any = 0;
    size_t no = spw_rng_below(&g, 3);
    for (size_t i = 0; i < no; i++) {
        int any = spw_rng_below(&g, 2) == 0;
        add_offer(&w->f, any ? NULL : "A100", 1u << spw_rng_below(&g, 4),
                  1 + (double)spw_rng_below(&g, 30), (double)(30 * spw_rng_below(&g, 3)));
        w->flat_any |= any;
    }
    w->p = policy((spw_queue_order_t)spw_rng_below(&g, 3), (spw_scan_t)spw_rng_below(&g, 2),
                  (spw_backfill_t)spw_rng_below(&g, 2), (spw_fit_t)spw_rng_below(&g, 2),
                  wait_names[seed % 5]);

    spw_gen_opts_t o = {0};
    spw_error_t err;
    o.jobs = jobs;
    o.rate_per_h = rate_per_h;
    o.cv = seed % 2 ? 1 : 2;
    o.runtime = SPW_DIST_EXP;
    o.rt_a = rt_mean_s;
    o.seed = seed;
    if (spw_gen_parse_gpus(&o, "1:0.5,2:0.2,4:0.15,8:0.1,16:0.05", &err) < 0)
        diag("gen gpus: %s", err.text);
    spw_gen_job_t *gj = malloc(jobs * sizeof(*gj));
    spw_gen(&o, gj);
    w->n = jobs;
    for (size_t i = 0; i < jobs; i++) {
        snprintf(w->ids[i], sizeof(w->ids[i]), "g%u", (unsigned)i);
        double rt = gj[i].runtime_s < 1 ? 1 : gj[i].runtime_s;
        job_init(&w->jobs[i], w->ids[i], gj[i].submit_s, rt, gj[i].gpus, (uint32_t)i);
        /* Estimates off by up to +-50 %. */
        w->jobs[i].est_runtime_s = rt * (0.5 + spw_rng_uniform(&g));
        w->jobs[i].priority = (int32_t)spw_rng_below(&g, 3);
        uint64_t r = spw_rng_below(&g, 10);
        if (r == 0)
            w->jobs[i].gpu_mask = 1ULL << spw_models_find(&w->f.models, "H100");
        else if (r == 1)
            w->jobs[i].gpu_mask = 1ULL << spw_models_find(&w->f.models, "A100");
        w->rt[i] = rt;
    }
    free(gj);
    spw_gen_opts_free(&o);
}

/* Sweep of one pool's start/end events: the most GPUs held at once.  Ends
 * sort before starts at the same time (a job ending at t frees its GPUs for
 * one starting at t). */
typedef struct sweep_ev {
    double t;
    int delta;
} sweep_ev_t;

static int cmp_ev(const void *a, const void *b)
{
    const sweep_ev_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta;
}

static long peak(sweep_ev_t *ev, size_t n)
{
    qsort(ev, n, sizeof(*ev), cmp_ev);
    long cur = 0, max = 0;
    for (size_t i = 0; i < n; i++) {
        cur += ev[i].delta;
        if (cur > max)
            max = cur;
    }
    return max;
}

/* Checks the capacity of every pool and of every node (single-node jobs). */
static int capacity_ok(const world_t *w, char *why, size_t whylen)
{
    static sweep_ev_t ev[2 * MAXJ];
    for (size_t p = 0; p < w->f.npools; p++) {
        const spw_pool_spec_t *ps = &w->f.pools[p];
        size_t n = 0;
        long total = 0;
        for (uint32_t k = 0; k < ps->nnodes; k++)
            total += ps->node_gpus[k];
        for (size_t i = 0; i < w->n; i++) {
            const spw_job_t *j = &w->jobs[i];
            if (j->state != SPW_JOB_DONE || j->offer >= 0 || j->pool != (int32_t)p)
                continue;
            ev[n++] = (sweep_ev_t){j->start_s, (int)j->alloc_gpus};
            ev[n++] = (sweep_ev_t){j->end_s, -(int)j->alloc_gpus};
        }
        long pk = peak(ev, n);
        if (pk > total) {
            snprintf(why, whylen, "pool %s: %ld GPUs held at once of %ld", ps->name, pk, total);
            return 0;
        }
        for (uint32_t k = 0; k < ps->nnodes; k++) {
            n = 0;
            for (size_t i = 0; i < w->n; i++) {
                const spw_job_t *j = &w->jobs[i];
                if (j->state != SPW_JOB_DONE || j->offer >= 0 || j->pool != (int32_t)p)
                    continue;
                int holds = j->nnodes == 1 ? j->node == (int32_t)k : 0;
                if (!holds)
                    continue;
                ev[n++] = (sweep_ev_t){j->start_s, (int)j->alloc_gpus};
                ev[n++] = (sweep_ev_t){j->end_s, -(int)j->alloc_gpus};
            }
            pk = peak(ev, n);
            if (pk > ps->node_gpus[k]) {
                snprintf(why, whylen, "pool %s node %u: %ld GPUs held of %u", ps->name, k, pk,
                         ps->node_gpus[k]);
                return 0;
            }
        }
    }
    return 1;
}

/* The state at sample time t recomputed from the job records. */
static int sample_matches(const world_t *w, const spw_sim_sample_t *s, char *why, size_t whylen)
{
    size_t q = 0;
    uint64_t busy = 0, cloud = 0;
    double rate = 0;
    for (size_t i = 0; i < w->n; i++) {
        const spw_job_t *j = &w->jobs[i];
        if (j->state == SPW_JOB_UNSCHEDULABLE)
            continue;
        if (j->submit_s <= s->t_s && !(j->placed_s <= s->t_s))
            q++;
        if (!(j->placed_s <= s->t_s && s->t_s < j->end_s))
            continue;
        if (j->offer >= 0) {
            /* GPUs count from placement, the spend rate once booted. */
            cloud += (uint64_t)j->instances * w->f.offers[j->offer].gpus;
            if (j->start_s <= s->t_s)
                rate += j->instances * w->f.offers[j->offer].ondemand_usd_per_h;
        } else {
            busy += j->alloc_gpus;
        }
    }
    if (q != s->queued || busy != s->onprem_busy_gpus || cloud != s->cloud_gpus
        || fabs(rate - s->cloud_usd_per_h) > 1e-6) {
        snprintf(why, whylen,
                 "t=%g: sample queued=%zu busy=%llu cloud=%llu rate=%g, records say %zu %llu %llu %g",
                 s->t_s, s->queued, (unsigned long long)s->onprem_busy_gpus,
                 (unsigned long long)s->cloud_gpus, s->cloud_usd_per_h, q,
                 (unsigned long long)busy, (unsigned long long)cloud, rate);
        return 0;
    }
    return 1;
}

/* Recomputes the summary from the job records. */
static int summary_matches(const world_t *w, const spw_sim_summary_t *s, char *why, size_t whylen)
{
    static double wait[MAXJ], jct[MAXJ];
    size_t ran = 0, onprem = 0, cloud = 0, unsched = 0, bf = 0;
    double ccost = 0, ocost = 0, cgh = 0, ogh = 0, wsum = 0, jsum = 0, last = w->jobs[0].submit_s;
    uint64_t gpus = spw_fleet_gpus(&w->f);
    for (size_t i = 0; i < w->n; i++) {
        const spw_job_t *j = &w->jobs[i];
        if (j->state == SPW_JOB_UNSCHEDULABLE) {
            unsched++;
            continue;
        }
        double h = (j->end_s - j->start_s) / 3600;
        if (j->offer >= 0) {
            cloud++;
            ccost += j->cost_usd;
            cgh += h * j->instances * w->f.offers[j->offer].gpus;
        } else {
            onprem++;
            ocost += j->cost_usd;
            ogh += h * j->alloc_gpus;
            bf += j->reason == SPW_REASON_BACKFILLED;
        }
        wait[ran] = j->start_s - j->submit_s;
        jct[ran] = j->end_s - j->submit_s;
        wsum += wait[ran];
        jsum += jct[ran];
        ran++;
        if (j->end_s > last)
            last = j->end_s;
    }
    qsort(wait, ran, sizeof(double), cmp_d);
    qsort(jct, ran, sizeof(double), cmp_d);
    double mk = last - w->jobs[0].submit_s;
#define CHECK(cond, ...)                                                      \
    if (!(cond)) {                                                            \
        snprintf(why, whylen, __VA_ARGS__);                                   \
        return 0;                                                             \
    }
#define CLOSE(a, b) (fabs((a) - (b)) <= 1e-9 * (1 + fabs(b)))
    CHECK(s->jobs == w->n, "jobs %zu vs %zu", s->jobs, w->n);
    CHECK(s->jobs_onprem == onprem && s->jobs_cloud == cloud && s->jobs_unschedulable == unsched,
          "counts %zu/%zu/%zu vs %zu/%zu/%zu", s->jobs_onprem, s->jobs_cloud,
          s->jobs_unschedulable, onprem, cloud, unsched);
    CHECK(s->jobs_backfilled == bf, "backfilled %zu vs %zu", s->jobs_backfilled, bf);
    CHECK(CLOSE(s->cloud_cost_usd, ccost) && CLOSE(s->onprem_cost_usd, ocost), "costs");
    CHECK(CLOSE(s->cloud_gpu_hours, cgh) && CLOSE(s->onprem_gpu_hours, ogh), "GPU-hours");
    if (ran) {
        CHECK(CLOSE(s->wait_mean_s, wsum / ran) && CLOSE(s->jct_mean_s, jsum / ran), "means");
        CHECK(s->wait_p50_s == ref_quantile(wait, ran, 0.5)
              && s->wait_p90_s == ref_quantile(wait, ran, 0.9)
              && s->wait_p99_s == ref_quantile(wait, ran, 0.99), "wait percentiles");
        CHECK(s->jct_p50_s == ref_quantile(jct, ran, 0.5)
              && s->jct_p90_s == ref_quantile(jct, ran, 0.9)
              && s->jct_p99_s == ref_quantile(jct, ran, 0.99), "jct percentiles");
    }
    CHECK(s->makespan_s == mk, "makespan %g vs %g", s->makespan_s, mk);
    CHECK(s->onprem_gpus == gpus, "onprem_gpus");
    CHECK(mk <= 0 || CLOSE(s->onprem_utilization, ogh / (gpus * mk / 3600)), "utilisation %g vs %g",
          s->onprem_utilization, ogh / (gpus * mk / 3600));
    CHECK(s->onprem_utilization <= 1 + 1e-9, "utilisation %g above 1", s->onprem_utilization);
#undef CHECK
#undef CLOSE
    return 1;
}

/* Per-job checks: ended exactly once, true runtime, start rules, cost. */
static int jobs_ok(const world_t *w, char *why, size_t whylen)
{
    for (size_t i = 0; i < w->n; i++) {
        const spw_job_t *j = &w->jobs[i];
        if (j->state == SPW_JOB_UNSCHEDULABLE) {
            if (!isnan(j->start_s) || !isnan(j->end_s) || j->cost_usd != 0) {
                snprintf(why, whylen, "%s: unschedulable but has times or cost", j->id);
                return 0;
            }
            continue;
        }
        if (j->state != SPW_JOB_DONE) {
            snprintf(why, whylen, "%s: ends in state %s", j->id, spw_job_state_name(j->state));
            return 0;
        }
        if (!(j->start_s >= j->submit_s) || !(j->placed_s >= j->submit_s)) {
            snprintf(why, whylen, "%s: negative wait (submit %g placed %g start %g)", j->id,
                     j->submit_s, j->placed_s, j->start_s);
            return 0;
        }
        if (fabs(j->end_s - j->start_s - w->rt[i]) > 1e-6 * (1 + w->rt[i])) {
            snprintf(why, whylen, "%s: ran %g s, runtime %g", j->id, j->end_s - j->start_s, w->rt[i]);
            return 0;
        }
        double h = (j->end_s - j->start_s) / 3600, want;
        if (j->offer >= 0) {
            const spw_offer_t *o = &w->f.offers[j->offer];
            if (j->start_s != j->placed_s + o->boot_delay_s || j->pool != -1 || j->alloc_gpus
                || j->instances * o->gpus < j->gpus) {
                snprintf(why, whylen, "%s: bad cloud placement", j->id);
                return 0;
            }
            want = h * j->instances * o->ondemand_usd_per_h;
        } else {
            const spw_pool_spec_t *ps = &w->f.pools[j->pool];
            if (j->start_s != j->placed_s || j->alloc_gpus < j->gpus || j->node < 0
                || (uint32_t)j->node >= ps->nnodes || j->nnodes < 1) {
                snprintf(why, whylen, "%s: bad on-prem placement", j->id);
                return 0;
            }
            want = h * j->alloc_gpus * ps->cost_usd_per_gpu_h;
        }
        if (fabs(j->cost_usd - want) > 1e-9 * (1 + want)) {
            snprintf(why, whylen, "%s: cost %g, want %g", j->id, j->cost_usd, want);
            return 0;
        }
    }
    return 1;
}

typedef struct record {
    double placed_s, start_s, end_s, cost_usd;
    int32_t pool, node, offer;
    uint32_t nnodes, alloc_gpus, instances;
    int state, reason;
} record_t;

static void take(const world_t *w, record_t *r)
{
    memset(r, 0, w->n * sizeof(*r));
    for (size_t i = 0; i < w->n; i++) {
        const spw_job_t *j = &w->jobs[i];
        r[i].placed_s = j->placed_s;
        r[i].start_s = j->start_s;
        r[i].end_s = j->end_s;
        r[i].cost_usd = j->cost_usd;
        r[i].pool = j->pool;
        r[i].node = j->node;
        r[i].offer = j->offer;
        r[i].nnodes = j->nnodes;
        r[i].alloc_gpus = j->alloc_gpus;
        r[i].instances = j->instances;
        r[i].state = j->state;
        r[i].reason = j->reason;
    }
}

static void test_random_properties(void)
{
    static world_t w;
    static record_t r1[MAXJ], r2[MAXJ];
    samples_t ss = {calloc(MAXSAMPLES, sizeof(spw_sim_sample_t)), 0};
    int seeds = 0, run_fail = 0, jobs_bad = 0, cap_bad = 0, sum_bad = 0, samp_bad = 0;
    int never_bad = 0, never_runs = 0, none_bad = 0, none_runs = 0, det_bad = 0;
    size_t nsamples = 0, ncloud = 0, nonprem = 0, nunsched = 0;
    char why[256];
    for (uint64_t seed = 1; seed <= 60; seed++) {
        /* Short jobs arriving fast keep the makespan to a few thousand
         * seconds, so a 1 s sample step stays cheap. */
        make_world(&w, seed, 40 + (size_t)(seed % 5) * 30, 120, 180);
        ss.n = 0;
        spw_sim_opts_t o = {.step_s = 1, .on_sample = on_sample, .ctx = &ss};
        spw_sim_summary_t s1, s2;
        spw_error_t err;
        seeds++;
        if (spw_sim_run(&w.f, &w.p, w.jobs, w.rt, w.n, &o, &s1, &err) < 0) {
            if (run_fail++ < 3)
                diag("seed %llu: %s", (unsigned long long)seed, err.text);
            spw_fleet_clear(&w.f);
            continue;
        }
        if (!jobs_ok(&w, why, sizeof(why)) && jobs_bad++ < 3)
            diag("seed %llu: %s", (unsigned long long)seed, why);
        if (!capacity_ok(&w, why, sizeof(why)) && cap_bad++ < 3)
            diag("seed %llu: %s", (unsigned long long)seed, why);
        if (!summary_matches(&w, &s1, why, sizeof(why)) && sum_bad++ < 3)
            diag("seed %llu: summary: %s", (unsigned long long)seed, why);
        /* Samples: one per second from the first submit to the last end. */
        int sbad = ss.n > MAXSAMPLES;
        double expect_n = floor(s1.makespan_s) + 1;
        if (!sbad && s1.jobs_onprem + s1.jobs_cloud > 0 && (double)ss.n != expect_n) {
            snprintf(why, sizeof(why), "%zu samples for makespan %g", ss.n, s1.makespan_s);
            sbad = 1;
        }
        for (size_t i = 0; i < ss.n && !sbad; i++) {
            if (ss.v[i].onprem_busy_gpus > s1.onprem_gpus) {
                snprintf(why, sizeof(why), "t=%g: %llu GPUs busy of %llu", ss.v[i].t_s,
                         (unsigned long long)ss.v[i].onprem_busy_gpus,
                         (unsigned long long)s1.onprem_gpus);
                sbad = 1;
            } else if (!sample_matches(&w, &ss.v[i], why, sizeof(why))) {
                sbad = 1;
            }
        }
        if (sbad && samp_bad++ < 3)
            diag("seed %llu: samples: %s", (unsigned long long)seed, why);
        nsamples += ss.n;
        ncloud += s1.jobs_cloud;
        nonprem += s1.jobs_onprem;
        nunsched += s1.jobs_unschedulable;

        if (w.p.wait.kind == SPW_WAIT_NEVER) {
            never_runs++;
            size_t nf = 0;
            for (size_t i = 0; i < w.n; i++)
                nf += w.jobs[i].offer >= 0 && w.jobs[i].reason == SPW_REASON_NEVER_FITS_ONPREM;
            if ((s1.jobs_cloud != 0 || s1.cloud_cost_usd != 0) && never_bad++ < 3)
                diag("seed %llu: wait never but %zu jobs in the cloud ($%g), %zu of them with "
                     "reason '%s'", (unsigned long long)seed, s1.jobs_cloud, s1.cloud_cost_usd, nf,
                     spw_reason_text(SPW_REASON_NEVER_FITS_ONPREM));
        }
        if (w.p.wait.kind == SPW_WAIT_NONE && w.flat_any) {
            /* Every job can burst: each one starts at its submit time on-prem,
             * or boots in the cloud straight away. */
            none_runs++;
            for (size_t i = 0; i < w.n; i++) {
                const spw_job_t *j = &w.jobs[i];
                double want = j->offer >= 0 ? w.f.offers[j->offer].boot_delay_s : 0;
                if (j->state != SPW_JOB_DONE || fabs(j->start_s - j->submit_s - want) > 1e-6) {
                    if (none_bad++ < 3)
                        diag("seed %llu: wait none: %s (%u GPUs, mask %llx) %s: waited %g s, "
                             "reason '%s'", (unsigned long long)seed, j->id, j->gpus,
                             (unsigned long long)j->gpu_mask, j->offer >= 0 ? "cloud" : "on-prem",
                             j->start_s - j->submit_s, spw_reason_text(j->reason));
                    break;
                }
            }
        }

        /* Determinism: the same inputs give the same records and summary. */
        take(&w, r1);
        if (spw_sim_run(&w.f, &w.p, w.jobs, w.rt, w.n, NULL, &s2, &err) < 0
            || (take(&w, r2), memcmp(r1, r2, w.n * sizeof(record_t)) != 0)
            || memcmp(&s1, &s2, sizeof(s1)) != 0) {
            if (det_bad++ < 3)
                diag("seed %llu: a second run differs", (unsigned long long)seed);
        }
        spw_fleet_clear(&w.f);
    }
    free(ss.v);
    is(run_fail, 0, "random: %d simulations ran", seeds);
    is(jobs_bad, 0, "random: every job ends once, true runtime, waits >= 0, start rules, cost");
    is(cap_bad, 0, "random: no pool or node ever holds more GPUs than it has (event sweep)");
    is(samp_bad, 0, "random: %zu 1-second samples match the job records, busy <= capacity",
       nsamples);
    is(sum_bad, 0, "random: every summary field recomputed from the records");
    ok(never_runs > 0, "random: %d runs with wait never", never_runs);
    is(never_bad, 0, "random: wait never: no cloud job and no cloud cost");
    ok(none_runs > 0, "random: %d runs with wait none and a cloud for every job", none_runs);
    is(none_bad, 0, "random: wait none: each job starts at submit (+ boot delay in the cloud)");
    is(det_bad, 0, "random: a second run gives identical job records and summary");
    ok(ncloud > 0 && nonprem > 0 && nunsched > 0,
       "random: runs cover on-prem (%zu), cloud (%zu) and unschedulable (%zu) jobs", nonprem,
       ncloud, nunsched);
}


/* ---- owned capacity costs money, used or not ----------------------------------------- */

/* One node of 2 GPUs under an owned model priced to round numbers: capital
 * $1 per GPU-hour (35,064 over 4 years of 8,766 h), node costs $730.50 a
 * month = $1 per node-hour = $0.50 per GPU-hour, power at PUE 2 and
 * $0.10/kWh: 500 W busy = $0.10 per GPU-hour, 100 W idle = $0.02.  One job
 * of 1 GPU for an hour: 1 busy GPU-hour ($1.60) and 1 idle ($1.52). */
static void test_owned_model(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 2, NULL, 0);
    f.pools[0].has_owned = 1;
    f.pools[0].owned = (spw_owned_cost_t){.price_usd_per_gpu = 35064, .years = 4,
                                          .gpu_busy_w = 500, .gpu_idle_w = 100, .pue = 2,
                                          .usd_per_kwh = 0.10, .node_usd_per_month = 730.5};
    f.pools[0].cost_usd_per_gpu_h = spw_owned_busy_usd_per_gpu_h(&f.pools[0].owned, 2);
    is_double(f.pools[0].cost_usd_per_gpu_h, 1.6, 1e-12, "owned: a busy GPU-hour is $1.60");
    spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "none");
    spw_job_t j[1] = {0};
    double rt[1] = {3600};
    job_init(&j[0], "a", 0, 3600, 1, 0);
    spw_sim_summary_t s;
    spw_error_t err;
    ok(spw_sim_run(&f, &p, j, rt, 1, NULL, &s, &err) == 0, "owned: runs");
    is_double(j[0].cost_usd, 1.6, 1e-9, "owned: the job's attempt costs its busy GPU-hour");
    is_double(s.owned_used_usd, 1.6, 1e-9, "owned: used $1.60 = capital 1 + node 0.5 + 500 W");
    is_double(s.owned_idle_usd, 1.52, 1e-9, "owned: idle $1.52 = capital 1 + node 0.5 + 100 W");
    is_double(s.owned_cost_usd, 3.12, 1e-9, "owned: the pool costs $3.12 for the hour");
    is_double(s.cost_per_useful_gpu_h, 3.12, 1e-9, "owned: $3.12 per useful GPU-hour");
    spw_fleet_clear(&f);

    /* The same trace on 4 and on 40 owned GPUs at the same price per GPU:
     * the same work is done and used, but owning ten times the GPUs costs
     * about ten times as much (issue 12: 32 vs 320 GPUs cost the same). */
    double owned[2], used[2];
    for (int k = 0; k < 2; k++) {
        spw_fleet_init(&f);
        add_pool(&f, "dc", k ? 10 : 1, 4, NULL, 1.0);
        add_offer(&f, NULL, 1, 3.0, 60);
        spw_job_t jj[20] = {0};
        double rr[20];
        char id[20][16];
        for (int i = 0; i < 20; i++) {
            snprintf(id[i], sizeof(id[i]), "j%d", i);
            rr[i] = 1800 + 300 * (i % 5);
            job_init(&jj[i], id[i], 60.0 * i, rr[i], 1, (uint32_t)i);
        }
        spw_policy_t q = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST,
                                "never");
        spw_sim_run(&f, &q, jj, rr, 20, NULL, &s, &err);
        owned[k] = s.owned_cost_usd;
        used[k] = s.owned_used_usd;
        is_double(s.owned_used_usd, s.onprem_cost_usd, 1e-9,
                  "owned %d GPUs: the used share is the used GPU-hours' cost", k ? 40 : 4);
        is_double(s.owned_cost_usd, (k ? 40 : 4) * s.makespan_s / 3600.0, 1e-9,
                  "owned %d GPUs: every GPU for the makespan", k ? 40 : 4);
        spw_fleet_clear(&f);
        spw_jobs_clear(jj, 20);
    }
    is_double(used[0], used[1], 1e-9, "4 vs 40 GPUs: the same GPU-hours used ($%.2f)", used[0]);
    ok(owned[1] > 2 * owned[0], "4 vs 40 GPUs: owning more costs more ($%.2f vs $%.2f)", owned[0],
       owned[1]);
    spw_jobs_clear(j, 1);
}


/* ---- the GPU performance model and gang shapes ------------------------------------------ */

/* One job of 1 GPU and 3600 s on the reference A100, two offers: t4 (T4,
 * 0.16 of an A100) and a1 (A100, $3/h).  Cheapest means cheapest for the
 * work: at $0.40/h the T4 does the job for 0.40 x 3600 / 0.16 s = $2.50 in
 * 22,500 s; at $0.60/h it would cost $3.75, so the A100 wins at $3.  A job
 * pinned to H100|A100 never takes the T4; without a performance model the
 * T4 at $0.60/h is cheapest per hour and runs in 3600 s. */
static int perf_run(double t4_usd_h, int perf, uint64_t mask_bits, int *offer, double *end_s,
                    double *cost_usd)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_offer(&f, "T4", 1, t4_usd_h, 0);
    add_offer(&f, "A100", 1, 3.0, 0);
    spw_models_intern(&f.models, "H100", 4, NULL);
    if (perf)
        f.perf.reference = spw_xstrdup("A100");
    spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "none");
    spw_job_t j[1] = {0};
    double rt[1] = {3600};
    job_init(&j[0], "a", 0, 3600, 1, 0);
    if (mask_bits)
        j[0].gpu_mask = (1ULL << spw_models_find(&f.models, "A100")) |
                        (1ULL << spw_models_find(&f.models, "H100"));
    spw_sim_summary_t s;
    spw_error_t err;
    int rc = spw_sim_run(&f, &p, j, rt, 1, NULL, &s, &err);
    *offer = j[0].offer;
    *end_s = j[0].end_s;
    *cost_usd = j[0].cost_usd;
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 1);
    return rc;
}

static void test_performance(void)
{
    int o;
    double end, usd;
    is_double(spw_gpu_throughput("A100-80GB"), 1.0, 0, "perf: A100-80GB is an A100 in the table");
    ok(spw_gpu_throughput("T4") < spw_gpu_throughput("V100") &&
       spw_gpu_throughput("V100") < spw_gpu_throughput("A100") &&
       spw_gpu_throughput("A100") < spw_gpu_throughput("H100"),
       "perf: T4 < V100 < A100 < H100 in the table");
    ok(isnan(spw_gpu_throughput("A1000")), "perf: A1000 is not an A100");
    perf_run(0.40, 1, 0, &o, &end, &usd);
    is(o, 0, "perf: at $0.40/h the T4 is cheapest for the work");
    is_double(end, 3600 / 0.16, 1e-6, "perf: ... and runs 3600 s of A100 work in 22,500 s");
    is_double(usd, 2.5, 1e-9, "perf: ... for $2.50");
    perf_run(0.60, 1, 0, &o, &end, &usd);
    is(o, 1, "perf: at $0.60/h the T4 would cost $3.75: the A100 at $3 wins");
    is_double(end, 3600, 1e-9, "perf: ... in 3600 s");
    perf_run(0.40, 1, 1, &o, &end, &usd);
    is(o, 1, "perf: a job pinned to H100|A100 never takes the T4");
    perf_run(0.60, 0, 0, &o, &end, &usd);
    is(o, 0, "no perf model: the T4 is cheapest per hour");
    is_double(end, 3600, 1e-9, "no perf model: ... and runs in the job's runtime");

    /* Per job class: class 1 ("inference") rates the T4 at 0.5 of an A100.
     * At $0.60/h the T4 costs it $1.20 per A100-hour (under the A100's $3)
     * and runs its 3600 s of work in 7200 s; a job of no class takes the
     * A100. */
    {
        spw_fleet_t f;
        spw_fleet_init(&f);
        add_offer(&f, "T4", 1, 0.60, 0);
        add_offer(&f, "A100", 1, 3.0, 0);
        f.perf.reference = spw_xstrdup("A100");
        f.gov.classes = spw_xmalloc(sizeof(char *));
        f.gov.classes[0] = spw_xstrdup("inference");
        f.gov.nclasses = 1;
        f.perf.classes = spw_xcalloc(1, sizeof(*f.perf.classes));
        f.perf.nclasses = 1;
        f.perf.classes[0].jclass = 1;
        f.perf.classes[0].names = spw_xmalloc(sizeof(char *));
        f.perf.classes[0].names[0] = spw_xstrdup("T4");
        f.perf.classes[0].throughput = spw_xmalloc(sizeof(double));
        f.perf.classes[0].throughput[0] = 0.5;
        f.perf.classes[0].n = 1;
        is_double(spw_fleet_class_speed(&f, 1, 0), 0.5, 1e-12, "perf class: T4 at 0.5 for it");
        is_double(spw_fleet_class_speed(&f, 0, 0), 0.16, 1e-12, "perf class: 0.16 for others");
        spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST,
                                "none");
        spw_job_t j[2] = {0};
        double rt[2] = {3600, 3600};
        job_init(&j[0], "inf", 0, 3600, 1, 0);
        j[0].jclass = 1;
        job_init(&j[1], "other", 0, 3600, 1, 1);
        spw_sim_summary_t s;
        spw_error_t err;
        ok(spw_sim_run(&f, &p, j, rt, 2, NULL, &s, &err) == 0, "perf class: runs");
        is(j[0].offer, 0, "perf class: the inference job takes the T4");
        is_double(j[0].end_s, 7200, 1e-6, "perf class: ... and runs 7200 s");
        is(j[1].offer, 1, "perf class: the job of no class takes the A100");
        spw_fleet_clear(&f);
        spw_jobs_clear(j, 2);
    }

    /* Gang shapes: a 4-GPU job, offers of 1 x A100 at $3/h and 4 x A100
     * at $14/h: on one node it takes one 4-GPU instance ($14/h, not 4 x $3);
     * allowed nodes of 1 GPU it takes four 1-GPU instances ($12/h). */
    for (int per_node = 0; per_node <= 1; per_node++) {
        spw_fleet_t f;
        spw_fleet_init(&f);
        add_offer(&f, "A100", 1, 3.0, 0);
        add_offer(&f, "A100", 4, 14.0, 0);
        spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST,
                                "none");
        spw_job_t j[1] = {0};
        double rt[1] = {3600};
        job_init(&j[0], "g", 0, 3600, 4, 0);
        j[0].gpus_per_node = (uint32_t)per_node;
        spw_sim_summary_t s;
        spw_error_t err;
        spw_sim_run(&f, &p, j, rt, 1, NULL, &s, &err);
        is(j[0].offer, per_node ? 0 : 1, "gang: 4 GPUs, gpus_per_node %d: offer %s", per_node,
           per_node ? "4 x 1-GPU" : "1 x 4-GPU");
        is(j[0].instances, per_node ? 4 : 1, "gang: gpus_per_node %d: %d instance(s)", per_node,
           per_node ? 4 : 1);
        spw_fleet_clear(&f);
        spw_jobs_clear(j, 1);
    }
}

/* give_up_wait_s: over random worlds and bounds around their own wait
 * statistics, a run gives up (1) only when the whole run ends above the
 * bound, and a run that does not give up gives the same summary. */
static void test_give_up(void)
{
    static world_t w;
    int wrong = 0, gave = 0, kept = 0, runs = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        make_world(&w, seed, 40 + (size_t)(seed % 5) * 30, 120, 180);
        spw_sim_summary_t full, s;
        spw_error_t err;
        if (spw_sim_run(&w.f, &w.p, w.jobs, w.rt, w.n, NULL, &full, &err) < 0) {
            spw_fleet_clear(&w.f);
            continue;
        }
        for (int p90 = 0; p90 <= 1; p90++) {
            double stat = p90 ? full.wait_p90_s : full.wait_mean_s;
            const double f[] = {0.25, 0.5, 0.9, 0.999, 1, 1.001, 2};
            for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
                spw_sim_opts_t o = {.give_up_wait_s = stat * f[k] + (stat == 0), .give_up_p90 = p90};
                int rc = spw_sim_run(&w.f, &w.p, w.jobs, w.rt, w.n, &o, &s, &err);
                runs++;
                if (rc == 1) {
                    gave++;
                    if (!(stat > o.give_up_wait_s) && wrong++ < 3)
                        diag("seed %llu: gave up at %g but the %s is %g",
                             (unsigned long long)seed, o.give_up_wait_s, p90 ? "p90" : "mean", stat);
                } else {
                    kept++;
                    if ((rc != 0 || memcmp(&s, &full, sizeof(s)) != 0) && wrong++ < 3)
                        diag("seed %llu: rc %d, or a summary unlike the full run's", (unsigned long long)seed, rc);
                }
            }
        }
        spw_fleet_clear(&w.f);
    }
    ok(wrong == 0, "give_up_wait_s: %d runs gave up, only above their bound; %d did not and "
       "match the full run (%d runs)", gave, kept, runs);
    ok(gave > 20 && kept > 20, "give_up_wait_s: both outcomes seen (%d, %d)", gave, kept);
}

/* predict:K over random worlds: the same record, capacity, summary and
 * determinism properties as the other rules; a job it bursts for its
 * predicted wait is placed at its arrival, and no cloud job waits past its
 * budget (K x gpus x est, as compute:K). */
static void test_predict_random(void)
{
    static world_t w;
    static record_t r1[MAXJ], r2[MAXJ];
    static const char *const ks[] = {"predict:0.25", "predict:1", "predict:4"};
    int bad = 0, predicted = 0, waited = 0, expired = 0;
    char why[256];
    for (uint64_t seed = 1; seed <= 45; seed++) {
        make_world(&w, seed, 40 + (size_t)(seed % 5) * 30, 120, 180);
        spw_error_t err;
        if (spw_wait_parse(ks[seed % 3], &w.p.wait, &err) < 0)
            diag("%s", err.text);
        spw_sim_summary_t s1, s2;
        int fail = spw_sim_run(&w.f, &w.p, w.jobs, w.rt, w.n, NULL, &s1, &err) < 0;
        if (fail)
            snprintf(why, sizeof(why), "%s", err.text);
        else if (!jobs_ok(&w, why, sizeof(why)) || !capacity_ok(&w, why, sizeof(why)) ||
                 !summary_matches(&w, &s1, why, sizeof(why)))
            fail = 1;
        for (size_t i = 0; i < w.n && !fail; i++) {
            const spw_job_t *j = &w.jobs[i];
            double budget = w.p.wait.param * j->gpus * j->est_runtime_s;
            if (j->reason == SPW_REASON_PREDICTED_WAIT) {
                predicted++;
                if (j->placed_s != j->submit_s) {
                    snprintf(why, sizeof(why), "%s: burst for its predicted wait at %g, "
                             "submitted at %g", j->id, j->placed_s, j->submit_s);
                    fail = 1;
                }
            }
            expired += j->reason == SPW_REASON_WAIT_EXPIRED;
            waited += j->offer < 0 && j->start_s > j->submit_s;
            if (j->offer >= 0 && j->placed_s > j->submit_s + budget + 1e-6) {
                snprintf(why, sizeof(why), "%s: in the cloud at %g, past its budget's end %g",
                         j->id, j->placed_s, j->submit_s + budget);
                fail = 1;
            }
        }
        take(&w, r1);
        if (!fail && (spw_sim_run(&w.f, &w.p, w.jobs, w.rt, w.n, NULL, &s2, &err) < 0 ||
                      (take(&w, r2), memcmp(r1, r2, w.n * sizeof(record_t)) != 0) ||
                      memcmp(&s1, &s2, sizeof(s1)) != 0)) {
            snprintf(why, sizeof(why), "a second run differs");
            fail = 1;
        }
        if (fail && bad++ < 3)
            diag("seed %llu (%s): %s", (unsigned long long)seed, ks[seed % 3], why);
        spw_fleet_clear(&w.f);
    }
    is(bad, 0, "predict random: records, capacity, summary, determinism; predicted bursts at "
       "arrival; no cloud placement past the budget");
    ok(predicted > 50 && waited > 50 && expired > 0,
       "predict random: %d bursts for a predicted wait, %d on-prem jobs that waited, %d budgets "
       "run out", predicted, waited, expired);
}

/* ---- cloud commitments ----------------------------------------------------------------- */

/* One node of 2 GPUs at $1; a flat cloud at $3 per GPU-hour; commitment ri
 * of 2 of its GPUs at $2, paid used or idle; constant:600.
 *   a  0  2 GPUs 3600 s  on-prem 0..3600
 *   b  0  1 GPU  1800 s  the commitment at once, 0..1800: $1 (0.5 h x $2)
 *   c  0  2 GPUs 3600 s  one committed GPU is free, it needs 2: bursts on
 *                        demand at 600, 600..4200: $6
 * makespan 4200 s: the commitment costs 2 x $2 x 4200/3600, $1 of it used. */
static void test_commitment(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc", 1, 2, NULL, 1.0);
    add_offer(&f, NULL, 1, 3.0, 0);
    f.offers = spw_xrealloc(f.offers, 2 * sizeof(*f.offers));
    spw_offer_commitment(&f.offers[1], &f.offers[0], "ri", 2, 2.0);
    f.noffers = 2;
    spw_policy_t p = policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST,
                            "constant:600");
    static const char *const ids[3] = {"a", "b", "c"};
    static const uint32_t gpus[3] = {2, 1, 2};
    double rt[3] = {3600, 1800, 3600};
    spw_job_t j[3] = {0};
    for (uint32_t i = 0; i < 3; i++)
        job_init(&j[i], ids[i], 0, rt[i], gpus[i], i);
    spw_sim_summary_t s;
    spw_error_t err;
    is(spw_sim_run(&f, &p, j, rt, 3, NULL, &s, &err), 0, "commit: runs");
    ok(j[1].offer == 1 && j[1].reason == SPW_REASON_COMMITTED && j[1].start_s == 0,
       "commit: b takes the commitment at once (offer %d, start %g)", j[1].offer, j[1].start_s);
    is_double(j[1].cost_usd, 1.0, 1e-9, "commit: b pays its committed GPU-hours: 0.5 h x $2");
    ok(j[2].offer == 0 && j[2].placed_s == 600, "commit: c, which the rest cannot hold, buys on "
       "demand when its wait ends (offer %d at %g)", j[2].offer, j[2].placed_s);
    is_double(s.makespan_s, 4200, 1e-9, "commit: makespan 4200 s");
    is_double(s.commit_cost_usd, 2 * 2.0 * 4200 / 3600.0, 1e-9,
              "commit: every committed GPU-hour of the makespan is paid");
    is_double(s.commit_used_usd, 1.0, 1e-9, "commit: $1 of it used by b");
    is_double(s.commit_idle_usd, 2 * 2.0 * 4200 / 3600.0 - 1, 1e-9, "commit: the rest idle");
    is_double(s.commit_gpu_hours, 0.5, 1e-9, "commit: 0.5 committed GPU-hours held");
    is_double(s.cloud_cost_usd, 6.0, 1e-9, "commit: cloud spend is c's on-demand $6 only");
    is_double(s.cloud_gpu_hours, 2.0, 1e-9, "commit: committed GPU-hours are not cloud GPU-hours");
    is_double(s.cost_per_useful_gpu_h,
              (6.0 + 2 * 4200 / 3600.0 + 2 * 2.0 * 4200 / 3600.0) / 4.5, 1e-9,
              "commit: per useful GPU-hour counts cloud + owned + committed");
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 3);
}

int main(void)
{
    test_hand_scenario();
    test_hand_backfill();
    test_edges();
    test_quantile();
    test_random_properties();
    test_predict_random();
    test_give_up();
    test_owned_model();
    test_performance();
    test_commitment();
    return done_testing();
}
