/* test_engine.c: the decision engine driven directly, on hand-built fleets
 * and jobs whose placements, start times, reasons and costs are worked out
 * by hand, plus a randomized comparison against a naive reference scheduler
 * written from the spec (docs/simulator.md). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "core/engine.h"
#include "core/model.h"
#include "util/rng.h"

/* ---- building fleets and jobs ---------------------------------------------- */

/* Adds a pool of nnodes nodes: node k has gpus[k] GPUs, or `each` if gpus is
 * NULL.  model NULL = unspecified.  Returns the pool index. */
static int add_pool(spw_fleet_t *f, const char *name, uint32_t nnodes, const uint16_t *gpus,
                    uint16_t each, const char *model, double cost_usd_per_gpu_h)
{
    f->pools = spw_xrealloc(f->pools, (f->npools + 1) * sizeof(*f->pools));
    spw_pool_spec_t *p = &f->pools[f->npools];
    memset(p, 0, sizeof(*p));
    p->name = spw_xstrdup(name);
    p->nnodes = nnodes;
    p->node_gpus = spw_xmalloc(nnodes * sizeof(uint16_t));
    for (uint32_t k = 0; k < nnodes; k++)
        p->node_gpus[k] = gpus ? gpus[k] : each;
    p->model = model ? spw_models_intern(&f->models, model, strlen(model), NULL) : -1;
    p->cost_usd_per_gpu_h = cost_usd_per_gpu_h;
    return (int)f->npools++;
}

/* Adds a cloud offer (model NULL = any model, like the flat price). */
static int add_offer(spw_fleet_t *f, const char *type, const char *model, uint32_t gpus,
                     double usd_per_h, double boot_delay_s)
{
    f->offers = spw_xrealloc(f->offers, (f->noffers + 1) * sizeof(*f->offers));
    spw_offer_t *o = &f->offers[f->noffers];
    memset(o, 0, sizeof(*o));
    o->provider = spw_xstrdup("test");
    o->region = spw_xstrdup("");
    o->zone = spw_xstrdup("");
    o->instance_type = spw_xstrdup(type);
    o->model = model ? spw_models_intern(&f->models, model, strlen(model), NULL) : -1;
    o->gpus = gpus;
    o->ondemand_usd_per_h = usd_per_h;
    o->spot_usd_per_h = NAN;
    o->boot_delay_s = boot_delay_s;
    return (int)f->noffers++;
}

/* The job mask bit of a model name (interned into the fleet if new). */
static uint64_t mask_of(spw_fleet_t *f, const char *model)
{
    return 1ULL << spw_models_intern(&f->models, model, strlen(model), NULL);
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
    spw_job_reset(j);
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

static spw_engine_t *engine(const spw_fleet_t *f, spw_policy_t p)
{
    spw_error_t err;
    spw_engine_t *e = spw_engine_create(f, &p, &err);
    if (!e)
        diag("spw_engine_create: %s", err.text);
    return e;
}

/* Runs the instant `now` and returns how many jobs were placed. */
static size_t sched(spw_engine_t *e, double now)
{
    spw_job_t **placed;
    return spw_engine_schedule(e, now, &placed);
}

static uint64_t busy(spw_engine_t *e)
{
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    return st.onprem_busy_gpus;
}

static size_t queued(spw_engine_t *e)
{
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    return st.queued;
}

/* ---- HOL vs skip vs EASY: the classic case ------------------------------------ */

/* One node of 4 GPUs.  At t=0: j1 (2 GPUs, 100 s), j2 (4 GPUs, 100 s), j3
 * (2 GPUs, est3).  j1 starts; j2 is blocked (2 free); j3 fits in the 2 free
 * GPUs.  EASY reserves the whole node for j2 at t=100 (j1's estimated end). */
static void classic(spw_scan_t scan, spw_backfill_t bf, double est3, const char *what,
                    double want_j2_start, double want_j3_start, spw_reason_t want_j3_reason)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 4, NULL, 1.0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, scan, bf, SPW_FIT_FIRST, "never"));
    spw_job_t j1 = {0}, j2 = {0}, j3 = {0}, *all[3] = {&j1, &j2, &j3};
    job_init(&j1, "j1", 0, 100, 2, 0);
    job_init(&j2, "j2", 0, 100, 4, 1);
    job_init(&j3, "j3", 0, est3, 2, 2);
    for (int i = 0; i < 3; i++)
        spw_engine_submit(e, all[i], 0);
    sched(e, 0);
    is(j1.state, SPW_JOB_ONPREM, "%s: j1 starts at once", what);
    is(j2.state, SPW_JOB_QUEUED, "%s: j2 (4 GPUs) is blocked", what);

    /* Play the rest out with true runtime = estimate. */
    double t = 0;
    for (int round = 0; round < 10; round++) {
        double next = INFINITY;
        for (int i = 0; i < 3; i++)
            if (all[i]->state == SPW_JOB_ONPREM && all[i]->start_s + all[i]->est_runtime_s < next)
                next = all[i]->start_s + all[i]->est_runtime_s;
        if (next == INFINITY)
            break;
        t = next;
        for (int i = 0; i < 3; i++)
            if (all[i]->state == SPW_JOB_ONPREM && all[i]->start_s + all[i]->est_runtime_s == t)
                spw_engine_finish(e, all[i], t);
        sched(e, t);
    }
    is_double(j2.start_s, want_j2_start, 1e-9, "%s: j2 starts at %g", what, want_j2_start);
    is_double(j3.start_s, want_j3_start, 1e-9, "%s: j3 starts at %g", what, want_j3_start);
    is(j3.reason, want_j3_reason, "%s: j3's reason is '%s'", what, spw_reason_text(want_j3_reason));
    is(j1.state == SPW_JOB_DONE && j2.state == SPW_JOB_DONE && j3.state == SPW_JOB_DONE, 1,
       "%s: every job done", what);
    is(busy(e), 0, "%s: all GPUs free at the end", what);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&j3);
}

static void test_scan_and_backfill(void)
{
    /* HOL: j3 waits behind j2: j2 starts at 100 when j1 ends, j3 at 200. */
    classic(SPW_SCAN_HOL, SPW_BACKFILL_NONE, 50, "hol", 100, 200, SPW_REASON_FITS_ONPREM);
    /* skip: j3 starts at 0 beside j1; j2 at 100 (j3 ended at 50). */
    classic(SPW_SCAN_SKIP, SPW_BACKFILL_NONE, 50, "skip", 100, 0, SPW_REASON_FITS_ONPREM);
    /* skip with a long j3 (150 s) delays j2 to 150. */
    classic(SPW_SCAN_SKIP, SPW_BACKFILL_NONE, 150, "skip, long j3", 150, 0, SPW_REASON_FITS_ONPREM);
    /* EASY: j3 (50 s) ends by j2's reservation at 100: backfilled at 0. */
    classic(SPW_SCAN_HOL, SPW_BACKFILL_EASY, 50, "easy, short j3", 100, 0, SPW_REASON_BACKFILLED);
    /* EASY: j3 ending exactly at the reservation (0 + 100 <= 100) is allowed. */
    classic(SPW_SCAN_HOL, SPW_BACKFILL_EASY, 100, "easy, j3 ends at the reservation", 100, 0,
            SPW_REASON_BACKFILLED);
    /* EASY: j3 (150 s) would hold 2 GPUs past t=100 when j2 needs all 4: refused;
     * j2 starts at 100 and j3 after it at 200. */
    classic(SPW_SCAN_HOL, SPW_BACKFILL_EASY, 150, "easy, long j3", 100, 200, SPW_REASON_FITS_ONPREM);
    /* EASY ignores `scan` (documented): skip + easy behaves as easy. */
    classic(SPW_SCAN_SKIP, SPW_BACKFILL_EASY, 150, "easy+skip, long j3", 100, 200,
            SPW_REASON_FITS_ONPREM);
}

/* EASY when the head leaves GPUs spare at its reservation.  One node of 8.
 * t=0: j1 (4 GPUs, 100 s) starts; head j2 (6 GPUs) is blocked, reserved at
 * t=100 when 8 are free, so 2 GPUs are spare even for long jobs.
 *   j3 (2 GPUs, 1000 s): uses the spare 2 -> backfilled.
 *   j4 (2 GPUs, 1000 s): would leave 4 < 6 at t=100 -> refused.
 *   j5 (2 GPUs, 50 s, after j4 in the queue): ends by 100 -> backfilled, ahead
 *   of j4 (same demand class: the engine must look past the class head). */
static void test_easy_spare_gpus(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 8, NULL, 1.0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_EASY,
                                        SPW_FIT_FIRST, "never"));
    spw_job_t j1 = {0}, j2 = {0}, j3 = {0}, j4 = {0}, j5 = {0};
    job_init(&j1, "j1", 0, 100, 4, 0);
    job_init(&j2, "j2", 0, 100, 6, 1);
    job_init(&j3, "j3", 0, 1000, 2, 2);
    job_init(&j4, "j4", 0, 1000, 2, 3);
    job_init(&j5, "j5", 0, 50, 2, 4);
    spw_job_t *all[] = {&j1, &j2, &j3, &j4, &j5};
    for (int i = 0; i < 5; i++)
        spw_engine_submit(e, all[i], 0);
    is(sched(e, 0), 3, "easy spare: three jobs start at 0 (j1, j3, j5)");
    is(j1.reason, SPW_REASON_FITS_ONPREM, "easy spare: j1 fits");
    is(j3.state, SPW_JOB_ONPREM, "easy spare: long j3 uses the head's spare GPUs");
    is(j3.reason, SPW_REASON_BACKFILLED, "easy spare: j3 is backfilled");
    is(j4.state, SPW_JOB_QUEUED, "easy spare: long j4 would delay the head: refused");
    is(j5.state, SPW_JOB_ONPREM, "easy spare: short j5 passes j4");
    is(j5.reason, SPW_REASON_BACKFILLED, "easy spare: j5 is backfilled");
    is(busy(e), 8, "easy spare: node full");
    /* t=50: j5 ends; j4 still may not start (ends at 1050 > 100 and only 4
     * would be free at 100). */
    spw_engine_finish(e, &j5, 50);
    is(sched(e, 50), 0, "easy spare: nothing starts at 50");
    /* t=100: j1 ends, 6 free: the head starts exactly at its reservation. */
    spw_engine_finish(e, &j1, 100);
    is(sched(e, 100), 1, "easy spare: one start at 100");
    is(j2.state, SPW_JOB_ONPREM, "easy spare: head j2 starts at its reservation");
    is_double(j2.start_s, 100, 0, "easy spare: j2 start 100");
    is(j4.state, SPW_JOB_QUEUED, "easy spare: j4 still waits");
    spw_engine_finish(e, &j2, 200);
    sched(e, 200);
    is(j4.state, SPW_JOB_ONPREM, "easy spare: j4 starts when j2 ends");
    spw_engine_finish(e, &j3, 1000);
    spw_engine_finish(e, &j4, 1200);
    sched(e, 1200);
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    ok(st.reservations >= 1, "easy spare: reservations were computed (%llu)",
       (unsigned long long)st.reservations);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&j3);
    spw_job_clear(&j4);
    spw_job_clear(&j5);
}

/* EASY with two pools: backfilling into a pool the head cannot use never
 * delays it, however long the job. */
static void test_easy_other_pool(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "a", 1, NULL, 4, "A100", 1.0);
    add_pool(&f, "b", 1, NULL, 4, "V100", 1.0);
    uint64_t a100 = mask_of(&f, "A100"), v100 = mask_of(&f, "V100");
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_EASY,
                                        SPW_FIT_FIRST, "never"));
    spw_job_t j1 = {0}, j2 = {0}, j3 = {0}, j4 = {0};
    job_init(&j1, "j1", 0, 100, 4, 0);
    j1.gpu_mask = a100;
    job_init(&j2, "j2", 0, 100, 4, 1);
    j2.gpu_mask = a100;
    job_init(&j3, "j3", 0, 10000, 2, 2);
    j3.gpu_mask = v100;
    job_init(&j4, "j4", 0, 10000, 2, 3);   /* any model: first fit finds pool b */
    spw_engine_submit(e, &j1, 0);
    spw_engine_submit(e, &j2, 0);
    spw_engine_submit(e, &j3, 0);
    spw_engine_submit(e, &j4, 0);
    is(sched(e, 0), 3, "easy two pools: j1, j3, j4 start");
    is(j1.pool, 0, "easy two pools: j1 in pool a");
    is(j2.state, SPW_JOB_QUEUED, "easy two pools: A100 head j2 waits");
    is(j3.pool, 1, "easy two pools: V100 job j3 in pool b");
    is(j3.reason, SPW_REASON_BACKFILLED, "easy two pools: j3 backfilled");
    is(j4.pool, 1, "easy two pools: any-model j4 in pool b");
    is(j4.node, 0, "easy two pools: j4 on node 0 of pool b");
    is(j4.reason, SPW_REASON_BACKFILLED, "easy two pools: j4 backfilled");
    spw_engine_finish(e, &j1, 100);
    sched(e, 100);
    is_double(j2.start_s, 100, 0, "easy two pools: head on time");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&j3);
    spw_job_clear(&j4);
}

/* EASY with a multi-node head.  Four nodes of 4.  j1 (4 GPUs, 100 s) on node
 * 0, j2 (4 GPUs, 300 s) on node 1; head h (12 GPUs = 3 whole nodes) sees only
 * nodes 2 and 3 free; reserved at t=100 (nodes 0, 2, 3).  j4 (4 GPUs, 50 s)
 * ends first -> backfilled on node 2; j5 (4 GPUs, 500 s) would take node 3
 * past t=100 -> refused. */
static void test_easy_multinode_head(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 4, NULL, 4, NULL, 1.0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_EASY,
                                        SPW_FIT_FIRST, "never"));
    spw_job_t j1 = {0}, j2 = {0}, h = {0}, j4 = {0}, j5 = {0};
    job_init(&j1, "j1", 0, 100, 4, 0);
    job_init(&j2, "j2", 0, 300, 4, 1);
    job_init(&h, "h", 0, 100, 12, 2);
    job_init(&j4, "j4", 0, 50, 4, 3);
    job_init(&j5, "j5", 0, 500, 4, 4);
    spw_job_t *all[] = {&j1, &j2, &h, &j4, &j5};
    for (int i = 0; i < 5; i++)
        spw_engine_submit(e, all[i], 0);
    is(sched(e, 0), 3, "easy multi-node head: j1, j2, j4 start");
    is(j4.state, SPW_JOB_ONPREM, "easy multi-node head: short j4 backfilled");
    is(j4.node, 2, "easy multi-node head: j4 on node 2");
    is(j5.state, SPW_JOB_QUEUED, "easy multi-node head: long j5 refused");
    spw_engine_finish(e, &j4, 50);
    is(sched(e, 50), 0, "easy multi-node head: j5 still refused at 50");
    spw_engine_finish(e, &j1, 100);
    is(sched(e, 100), 1, "easy multi-node head: head starts at 100");
    is(h.state, SPW_JOB_ONPREM, "easy multi-node head: h on-prem");
    is(h.node, 0, "easy multi-node head: lowest node 0");
    is(h.nnodes, 3, "easy multi-node head: three whole nodes");
    is(h.alloc_gpus, 12, "easy multi-node head: 12 GPUs held");
    spw_engine_finish(e, &j2, 300);
    sched(e, 300);
    is(j5.state, SPW_JOB_ONPREM, "easy multi-node head: j5 on node 1 at 300");
    is(j5.node, 1, "easy multi-node head: j5 node 1");
    spw_engine_finish(e, &h, 400);
    spw_engine_finish(e, &j5, 800);
    is(busy(e), 0, "easy multi-node head: all free at the end");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&h);
    spw_job_clear(&j4);
    spw_job_clear(&j5);
}

/* ---- queue orders ---------------------------------------------------------------- */

/* One 1-GPU node held by j0 until t=10; then the queue drains one job at a
 * time (true runtime = estimate).  Jobs (submit, est, priority, order):
 *   a (1, 300, 0, 1)  b (2, 100, 5, 2)  e (2, 100, 5, 3)  c (3, 100, 5, 4)  d (4, 200, 9, 5)
 * e is handed to the engine before b, but b's order is lower. */
static void check_order(spw_queue_order_t q, const char *want)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 1, NULL, 1.0);
    spw_engine_t *e = engine(&f, policy(q, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "never"));
    spw_job_t j[6] = {0};
    static const char *const ids[6] = {"j0", "a", "b", "e", "c", "d"};
    static const double submit[6] = {0, 1, 2, 2, 3, 4}, est[6] = {10, 300, 100, 100, 100, 200};
    static const int prio[6] = {0, 0, 5, 5, 5, 9};
    for (int i = 0; i < 6; i++) {
        job_init(&j[i], ids[i], submit[i], est[i], 1, (uint32_t)i);
        j[i].priority = prio[i];
    }
    spw_engine_submit(e, &j[0], 0);
    sched(e, 0);
    spw_engine_submit(e, &j[1], 1);
    sched(e, 1);
    spw_engine_submit(e, &j[3], 2);   /* e before b */
    spw_engine_submit(e, &j[2], 2);
    sched(e, 2);
    spw_engine_submit(e, &j[4], 3);
    sched(e, 3);
    spw_engine_submit(e, &j[5], 4);
    sched(e, 4);
    char got[16] = "";
    spw_job_t *run = &j[0];
    for (int k = 0; k < 5; k++) {
        double t = run->start_s + run->est_runtime_s;
        spw_engine_finish(e, run, t);
        spw_job_t **placed;
        size_t np = spw_engine_schedule(e, t, &placed);
        if (np != 1)
            break;
        run = placed[0];
        strcat(got, run->id);
    }
    is_str(got, want, "queue %s runs %s", spw_queue_order_name(q), want);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_jobs_clear(j, 6);
}

static void test_queue_orders(void)
{
    check_order(SPW_QUEUE_FIFO, "abecd");
    check_order(SPW_QUEUE_SJF, "becda");       /* 100,100,100 by submit/order, then 200, 300 */
    check_order(SPW_QUEUE_PRIORITY, "dbeca");  /* 9, then the three 5s by submit/order, then 0 */
}

/* ---- node choice ------------------------------------------------------------------- */

static void test_fit(void)
{
    /* Nodes of 8, 2 and 4 GPUs; jobs of 2, 3, 1, 1 GPUs in that order.
     * first: all on node 0 (8 -> 6 -> 3 -> 2 -> 1 free).
     * best:  2 -> node 1 (exactly 2 free); 3 -> node 2 (4 free, fewest that fit);
     *        1 -> node 2 (1 free left there); 1 -> node 0 (8, the only one left). */
    static const uint16_t gpus[3] = {8, 2, 4};
    static const uint32_t demand[4] = {2, 3, 1, 1};
    static const int want_first[4] = {0, 0, 0, 0}, want_best[4] = {1, 2, 2, 0};
    for (int fit = 0; fit < 2; fit++) {
        spw_fleet_t f;
    spw_fleet_init(&f);
        add_pool(&f, "p", 3, gpus, 0, NULL, 1.0);
        spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                            (spw_fit_t)fit, "never"));
        spw_job_t j[4] = {0};
        char ids[4][16];
        for (int i = 0; i < 4; i++) {
            snprintf(ids[i], sizeof(ids[i]), "f%d", i);
            job_init(&j[i], ids[i], 0, 100, demand[i], (uint32_t)i);
            spw_engine_submit(e, &j[i], 0);
            sched(e, 0);
            is(j[i].node, fit ? want_best[i] : want_first[i], "fit %s: job of %u GPUs on node %d",
               spw_fit_name((spw_fit_t)fit), demand[i], fit ? want_best[i] : want_first[i]);
            is(j[i].alloc_gpus, demand[i], "fit %s: job %d holds %u GPUs",
               spw_fit_name((spw_fit_t)fit), i, demand[i]);
        }
        is(busy(e), 7, "fit %s: 7 GPUs busy", spw_fit_name((spw_fit_t)fit));
        for (int i = 0; i < 4; i++)
            spw_engine_finish(e, &j[i], 100);
        is(busy(e), 0, "fit %s: all free after finishing", spw_fit_name((spw_fit_t)fit));
        spw_engine_destroy(e);
        spw_fleet_clear(&f);
        spw_jobs_clear(j, 4);
    }

    /* Best fit: ties go to the lower node; across pools, fewest free GPUs
     * wins and ties go to the earlier pool.  First fit takes the first pool. */
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "big", 2, NULL, 8, NULL, 1.0);
    add_pool(&f, "small", 2, NULL, 2, NULL, 1.0);
    add_pool(&f, "small2", 1, NULL, 2, NULL, 1.0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_BEST, "never"));
    spw_job_t a = {0}, b = {0}, c = {0};
    job_init(&a, "a", 0, 100, 2, 0);
    job_init(&b, "b", 0, 100, 5, 1);
    job_init(&c, "c", 0, 100, 2, 2);
    spw_engine_submit(e, &a, 0);
    spw_engine_submit(e, &b, 0);
    spw_engine_submit(e, &c, 0);
    sched(e, 0);
    is(a.pool, 1, "best fit across pools: 2 GPUs go to pool 'small'");
    is(a.node, 0, "best fit: tie between small's nodes goes to node 0");
    is(b.pool, 0, "best fit: 5 GPUs only fit pool 'big'");
    is(b.node, 0, "best fit: tie between big's nodes goes to node 0");
    is(c.pool, 1, "best fit: next 2 GPUs to pool 'small' node 1 (tie with small2 -> earlier pool)");
    is(c.node, 1, "best fit: small node 1");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);

    spw_fleet_init(&f);
    add_pool(&f, "big", 1, NULL, 8, NULL, 1.0);
    add_pool(&f, "small", 1, NULL, 2, NULL, 1.0);
    e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "never"));
    spw_job_clear(&a);
    job_init(&a, "a", 0, 100, 2, 0);
    spw_engine_submit(e, &a, 0);
    sched(e, 0);
    is(a.pool, 0, "first fit across pools: the first pool that fits");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&a);
    spw_job_clear(&b);
    spw_job_clear(&c);
}

/* ---- multi-node jobs ------------------------------------------------------------------ */

static void test_multinode(void)
{
    /* Four nodes of 4 GPUs at $2/GPU-h. */
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 4, NULL, 4, NULL, 2.0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "never"));
    spw_job_t j1 = {0}, j2 = {0}, j3 = {0}, j4 = {0}, big = {0}, huge = {0};
    job_init(&j1, "j1", 0, 100, 1, 0);
    job_init(&j2, "j2", 0, 100, 5, 1);   /* 5 > 4: two whole nodes, 8 GPUs */
    job_init(&j3, "j3", 0, 100, 6, 2);   /* needs 2 whole nodes, only node 3 is whole */
    job_init(&j4, "j4", 0, 100, 2, 3);   /* fits node 0, but HOL-blocked by j3 */
    spw_engine_submit(e, &j1, 0);
    spw_engine_submit(e, &j2, 0);
    spw_engine_submit(e, &j3, 0);
    spw_engine_submit(e, &j4, 0);
    is(sched(e, 0), 2, "multi-node: j1 and j2 start");
    is(j1.node, 0, "multi-node: j1 on node 0");
    is(j2.node, 1, "multi-node: j2's lowest node is 1 (node 0 is not whole)");
    is(j2.nnodes, 2, "multi-node: j2 holds two nodes");
    is(j2.alloc_gpus, 8, "multi-node: j2 holds 8 GPUs for 5 wanted");
    is(busy(e), 9, "multi-node: 9 GPUs busy");
    is(j3.state, SPW_JOB_QUEUED, "multi-node: j3 does not take a part of its nodes");
    is(j4.state, SPW_JOB_QUEUED, "multi-node: j4 waits behind j3 (hol)");
    /* j2 ends after half an hour: cost 8 GPUs x $2 x 0.5 h = $8. */
    spw_engine_finish(e, &j2, 1800);
    is_double(j2.cost_usd, 8.0, 1e-9, "multi-node: cost counts whole nodes");
    is_double(j2.end_s, 1800, 0, "multi-node: end_s");
    is(j2.state, SPW_JOB_DONE, "multi-node: done");
    is(sched(e, 1800), 2, "multi-node: j3 and j4 start at 1800");
    is(j3.node, 1, "multi-node: j3 takes the lowest whole nodes (1 and 2)");
    is(j3.nnodes, 2, "multi-node: j3 holds two nodes");
    is(j3.alloc_gpus, 8, "multi-node: j3 holds 8 GPUs");
    is(j4.node, 0, "multi-node: j4 on node 0 beside j1");
    spw_engine_finish(e, &j1, 1800);
    spw_engine_finish(e, &j3, 1900);
    spw_engine_finish(e, &j4, 1900);
    is(busy(e), 0, "multi-node: all free");
    /* 16 GPUs takes the whole pool; 17 can never fit and there is no cloud. */
    job_init(&big, "big", 2000, 100, 16, 4);
    job_init(&huge, "huge", 2000, 100, 17, 5);
    spw_engine_submit(e, &big, 2000);
    spw_engine_submit(e, &huge, 2000);
    is(huge.state, SPW_JOB_UNSCHEDULABLE, "multi-node: 17 GPUs on 16 with no cloud: unschedulable");
    is(huge.reason, SPW_REASON_NO_PLACE, "multi-node: reason no place");
    is(sched(e, 2000), 1, "multi-node: the 16-GPU job starts");
    is(big.nnodes, 4, "multi-node: all four nodes");
    is(big.alloc_gpus, 16, "multi-node: 16 GPUs");
    spw_engine_finish(e, &big, 2100);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);

    /* Heterogeneous nodes 8, 2, 2, 8: a job larger than the largest node (8)
     * takes whole nodes, lowest index first, until it has enough. */
    static const uint16_t het[4] = {8, 2, 2, 8};
    spw_fleet_init(&f);
    add_pool(&f, "h", 4, het, 0, NULL, 1.0);
    e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "never"));
    spw_job_t k1 = {0}, k2 = {0};
    job_init(&k1, "k1", 0, 100, 10, 0);   /* nodes 0 (8) + 1 (2) */
    job_init(&k2, "k2", 0, 100, 9, 1);    /* nodes 2 (2) + 3 (8) */
    spw_engine_submit(e, &k1, 0);
    spw_engine_submit(e, &k2, 0);
    is(sched(e, 0), 2, "heterogeneous: both start");
    is(k1.node, 0, "heterogeneous: k1 from node 0");
    is(k1.nnodes, 2, "heterogeneous: k1 on 2 nodes");
    is(k1.alloc_gpus, 10, "heterogeneous: k1 holds 10");
    is(k2.node, 2, "heterogeneous: k2 from node 2");
    is(k2.nnodes, 2, "heterogeneous: k2 on 2 nodes");
    is(k2.alloc_gpus, 10, "heterogeneous: k2 holds 10 for 9 wanted");
    spw_engine_finish(e, &k1, 100);
    spw_engine_finish(e, &k2, 100);
    is(busy(e), 0, "heterogeneous: all free");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
    spw_job_clear(&j3);
    spw_job_clear(&j4);
    spw_job_clear(&big);
    spw_job_clear(&huge);
    spw_job_clear(&k1);
    spw_job_clear(&k2);
}

/* Destroying an engine while a multi-node job still runs must not leak its
 * node list (engine.h: the engine owns it).  Only visible under
 * LeakSanitizer or valgrind. */
static void test_destroy_with_running_multinode(void)
{
    for (int bf = 0; bf < 2; bf++) {
        spw_fleet_t f;
    spw_fleet_init(&f);
        add_pool(&f, "p", 2, NULL, 4, NULL, 1.0);
        spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, (spw_backfill_t)bf,
                                            SPW_FIT_FIRST, "never"));
        spw_job_t j = {0};
        job_init(&j, "j", 0, 100, 8, 0);
        spw_engine_submit(e, &j, 0);
        is(sched(e, 0), 1, "destroy while running (backfill %s): multi-node job started",
           spw_backfill_name((spw_backfill_t)bf));
        spw_engine_destroy(e);   /* j is still running */
        spw_fleet_clear(&f);
        spw_job_clear(&j);
    }
}

/* ---- wait policies -------------------------------------------------------------------- */

/* One node of 4 GPUs held by a blocker until t=10000; a 2-GPU job (est 400)
 * arrives at t=100 and bursts to a 1-GPU $2/h offer (2 instances) with a
 * 60 s boot delay when its wait expires. */
static void check_wait(const char *wait, double want_burst_at)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 4, NULL, 1.0);
    add_offer(&f, "g1", NULL, 1, 2.0, 60);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, wait));
    spw_job_t blocker = {0}, j = {0};
    job_init(&blocker, "blocker", 0, 10000, 4, 0);
    job_init(&j, "j", 100, 400, 2, 1);
    spw_engine_submit(e, &blocker, 0);
    sched(e, 0);
    spw_engine_submit(e, &j, 100);
    size_t np = sched(e, 100);
    if (want_burst_at == 100) {
        is(np, 1, "wait %s: bursts in its arrival instant", wait);
    } else {
        is(np, 0, "wait %s: nothing placed at arrival", wait);
        is(j.state, SPW_JOB_QUEUED, "wait %s: queued", wait);
        ok(spw_engine_next_wakeup(e) == want_burst_at, "wait %s: next wakeup %g", wait, want_burst_at);
        if (want_burst_at < INFINITY) {
            is(sched(e, want_burst_at - 1), 0, "wait %s: still queued 1 s before", wait);
            is(sched(e, want_burst_at), 1, "wait %s: bursts at %g", wait, want_burst_at);
        }
    }
    if (want_burst_at < INFINITY) {
        is(j.state, SPW_JOB_CLOUD, "wait %s: in the cloud", wait);
        if (strncmp(wait, "predict:", 8) == 0)
            is(j.reason, SPW_REASON_PREDICTED_WAIT, "wait %s: reason predicted wait", wait);
        else
            is(j.reason, SPW_REASON_WAIT_EXPIRED, "wait %s: reason wait expired", wait);
        is(j.offer, 0, "wait %s: offer 0", wait);
        is(j.instances, 2, "wait %s: 2 instances of 1 GPU", wait);
        is_double(j.placed_s, want_burst_at, 1e-9, "wait %s: placed at %g", wait, want_burst_at);
        is_double(j.start_s, want_burst_at + 60, 1e-9, "wait %s: starts after the 60 s boot", wait);
        ok(spw_engine_next_wakeup(e) == INFINITY, "wait %s: no wakeup left", wait);
        /* 2 instances x $2/h x 400 s. */
        spw_engine_finish(e, &j, j.start_s + 400);
        is_double(j.cost_usd, 2 * 2.0 * 400 / 3600.0, 1e-9, "wait %s: cloud cost", wait);
        is(j.state, SPW_JOB_DONE, "wait %s: done", wait);
    } else {
        ok(spw_engine_next_wakeup(e) == INFINITY, "wait %s: never wakes", wait);
    }
    is(busy(e), 4, "wait %s: blocker still holds the node", wait);
    spw_engine_finish(e, &blocker, 10000);
    sched(e, 10000);
    if (want_burst_at == INFINITY) {
        is(j.state, SPW_JOB_ONPREM, "wait %s: starts on-prem at 10000", wait);
        is(j.reason, SPW_REASON_FITS_ONPREM, "wait %s: fits on-prem", wait);
        spw_engine_finish(e, &j, 10400);
    }
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&blocker);
    spw_job_clear(&j);
}

static void test_wait_policies(void)
{
    check_wait("never", INFINITY);
    check_wait("none", 100);
    check_wait("constant:0", 100);
    check_wait("constant:300", 400);            /* 100 + 300 */
    check_wait("runtime:2", 900);               /* 100 + 2 x 400 */
    check_wait("compute:0.5", 500);             /* 100 + 0.5 x 2 GPUs x 400 */
    check_wait("compute:0.25", 300);            /* 100 + 0.25 x 2 x 400 */

    /* The job's wait counts from its submit time, not from when the engine
     * was told: a job submitted late (now > submit_s) with constant:300. */
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 1, NULL, 1.0);
    add_offer(&f, "g1", NULL, 1, 2.0, 0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "constant:300"));
    spw_job_t blocker = {0}, j = {0};
    job_init(&blocker, "blocker", 0, 1000, 1, 0);
    job_init(&j, "j", 0, 100, 1, 1);
    spw_engine_submit(e, &blocker, 0);
    sched(e, 0);
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    is_double(spw_engine_next_wakeup(e), 300, 0, "constant:300: wakeup at submit + 300");
    /* The on-prem node frees before the wait expires: the job starts there
     * and its expiry is forgotten. */
    spw_engine_finish(e, &blocker, 200);
    is(sched(e, 200), 1, "constant:300: starts on-prem when the node frees at 200");
    is(j.state, SPW_JOB_ONPREM, "constant:300: on-prem");
    ok(spw_engine_next_wakeup(e) == INFINITY, "constant:300: expiry dropped once started");
    is(queued(e), 0, "constant:300: queue empty");
    spw_engine_finish(e, &j, 300);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&blocker);
    spw_job_clear(&j);
}

/* predict:K on a hand-worked queue.  Two nodes of 4 GPUs; at 0, r1 (4 GPUs,
 * est 1000) takes node 0, r2 (2 GPUs, est 300) node 1, and q1 (8 GPUs, est
 * 500: whole nodes; no offer has 8 GPUs, so it never bursts) waits.  At 12,
 * k (3 GPUs, est 128) arrives.  Played forward: q1 starts at 1000 when r1
 * ends.  Head of line, k waits behind q1 and starts at 1500; with skip or
 * EASY it starts at 300 on node 1 (r2's end) and ends before q1 needs it.
 * k's budget is K x 3 x 128 = 384 K seconds: it bursts at 12 exactly when
 * that is less than its predicted wait (1488 = 3.875 x 384 head of line,
 * 288 = 0.75 x 384 otherwise), and else starts on-prem when predicted. */
static void check_predict(spw_scan_t scan, spw_backfill_t bf, const char *wait, double want_start,
                          int want_burst)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 2, NULL, 4, NULL, 1.0);
    add_offer(&f, "g1", NULL, 1, 2.0, 0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, scan, bf, SPW_FIT_FIRST, wait));
    const char *how = bf == SPW_BACKFILL_EASY ? "easy" : spw_scan_name(scan);
    /* r1, r2, q1 and k: id, submit, estimate, GPUs. */
    static const struct { const char *id; double submit_s, est_s; uint32_t gpus; } spec[] = {
        {"r1", 0, 1000, 4}, {"r2", 0, 300, 2}, {"q1", 0, 500, 8}, {"k", 12, 128, 3}};
    spw_job_t js[4] = {0};
    for (uint32_t i = 0; i < 4; i++) {
        job_init(&js[i], spec[i].id, spec[i].submit_s, spec[i].est_s, spec[i].gpus, i);
        if (i < 3)
            spw_engine_submit(e, &js[i], 0);
    }
    spw_job_t *r1 = &js[0], *r2 = &js[1], *q1 = &js[2], *k = &js[3];
    is(sched(e, 0), 2, "%s %s: r1 and r2 start at 0", how, wait);
    is_double(spw_engine_predicted_start(e, q1, 0), 1000, 1e-9,
              "%s %s: q1 is predicted to start at 1000 (r1's estimated end)", how, wait);
    spw_engine_submit(e, k, 12);
    size_t np = sched(e, 12);
    if (want_burst) {
        is(np, 1, "%s %s: k is placed in its arrival instant", how, wait);
        is(k->state, SPW_JOB_CLOUD, "%s %s: k bursts: its predicted wait exceeds its budget", how,
           wait);
        is(k->reason, SPW_REASON_PREDICTED_WAIT, "%s %s: reason: predicted start past its budget",
           how, wait);
        is_double(k->placed_s, 12, 0, "%s %s: k bursts at 12, not when its budget runs out", how,
                  wait);
    } else {
        is(np, 0, "%s %s: nothing placed at 12", how, wait);
        is(k->state, SPW_JOB_QUEUED, "%s %s: k waits: its predicted wait is within its budget", how,
           wait);
        is_double(spw_engine_predicted_start(e, k, 12), want_start, 1e-9,
                  "%s %s: k is predicted to start at %g", how, wait, want_start);
        spw_candidate_t c[8];
        size_t nc = spw_engine_explain(e, k, 12, c, 8);
        char want[64];
        snprintf(want, sizeof(want), "starts it on-prem at t=%.0f s", want_start);
        const spw_candidate_t *w = NULL;
        for (size_t i = 0; i < nc; i++)
            if (c[i].kind == SPW_CAND_WAIT)
                w = &c[i];
        ok(w && strstr(w->why, want) && w->est_start_s == want_start, "%s %s: explain: %s", how,
           wait, w ? w->why : "-");
    }
    spw_engine_finish(e, r2, 300);
    sched(e, 300);
    if (k->state == SPW_JOB_ONPREM) {   /* started at 300 (skip, EASY) */
        spw_engine_finish(e, k, 300 + 128);
        sched(e, 300 + 128);
    }
    spw_engine_finish(e, r1, 1000);
    sched(e, 1000);
    is(q1->state, SPW_JOB_ONPREM, "%s %s: q1 starts at 1000 as predicted", how, wait);
    is_double(q1->start_s, 1000, 0, "%s %s: q1's start", how, wait);
    spw_engine_finish(e, q1, 1500);
    sched(e, 1500);
    if (!want_burst) {
        is(k->pool, 0, "%s %s: k ran on-prem", how, wait);
        is_double(k->start_s, want_start, 0, "%s %s: k started on-prem at %g, as predicted", how,
                  wait, want_start);
    }
    if (k->state == SPW_JOB_ONPREM || k->state == SPW_JOB_CLOUD)
        spw_engine_finish(e, k, k->start_s + 128);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_jobs_clear(js, 4);
}

static void test_predict_wait(void)
{
    check_predict(SPW_SCAN_HOL, SPW_BACKFILL_NONE, "predict:3.875", 1500, 0);
    check_predict(SPW_SCAN_HOL, SPW_BACKFILL_NONE, "predict:3.87", 1500, 1);
    check_predict(SPW_SCAN_SKIP, SPW_BACKFILL_NONE, "predict:0.75", 300, 0);
    check_predict(SPW_SCAN_SKIP, SPW_BACKFILL_NONE, "predict:0.74", 300, 1);
    check_predict(SPW_SCAN_HOL, SPW_BACKFILL_EASY, "predict:0.75", 300, 0);
    check_predict(SPW_SCAN_HOL, SPW_BACKFILL_EASY, "predict:0.74", 300, 1);

    /* compute:K with the same budget waits it out, then bursts: predict
     * bursts the same job at its arrival instead. */
    check_wait("predict:0.25", 100);            /* blocker ends at 10000: past 100 + 200 */
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 4, NULL, 1.0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "compute:1"));
    spw_job_t j = {0};
    job_init(&j, "j", 0, 100, 1, 0);
    ok(isnan(spw_engine_predicted_start(e, &j, 0)), "no prediction outside predict:K");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* The order of one instant: finished jobs free GPUs, arrivals join, the pass
 * runs, and only then do expired waits burst; a burst reruns the pass. */
static void test_instant_order(void)
{
    /* A job whose wait expires in the instant its GPUs free up stays
     * on-prem: the pass runs before expiries. */
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 4, NULL, 1.0);
    add_offer(&f, "g1", NULL, 1, 2.0, 0);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "constant:100"));
    spw_job_t blocker = {0}, j = {0}, k = {0};
    job_init(&blocker, "blocker", 0, 400, 2, 0);
    job_init(&j, "j", 300, 100, 4, 1);
    spw_engine_submit(e, &blocker, 0);
    sched(e, 0);
    spw_engine_submit(e, &j, 300);
    sched(e, 300);
    is_double(spw_engine_next_wakeup(e), 400, 0, "instant order: j would burst at 400");
    spw_engine_finish(e, &blocker, 400);
    is(sched(e, 400), 1, "instant order: one placement at 400");
    is(j.state, SPW_JOB_ONPREM, "instant order: finish + pass before the expiry: on-prem");
    spw_engine_finish(e, &j, 500);

    /* A burst unblocks a HOL queue in the same instant: head h (4 GPUs)
     * waits 100 s then bursts; k (1 GPU) queued behind it then fits. */
    spw_job_clear(&blocker);
    job_init(&blocker, "blocker", 1000, 5000, 2, 2);
    spw_job_t h = {0};
    job_init(&h, "h", 1000, 100, 4, 3);
    job_init(&k, "k", 1050, 100, 1, 4);
    spw_engine_submit(e, &blocker, 1000);
    spw_engine_submit(e, &h, 1000);
    sched(e, 1000);
    spw_engine_submit(e, &k, 1050);
    is(sched(e, 1050), 0, "burst rerun: k waits behind h at 1050");
    is_double(spw_engine_next_wakeup(e), 1100, 0, "burst rerun: h's wait ends at 1100");
    spw_job_t **placed;
    size_t np = spw_engine_schedule(e, 1100, &placed);
    is(np, 2, "burst rerun: two placements at 1100");
    is(h.state, SPW_JOB_CLOUD, "burst rerun: h bursts");
    is(k.state, SPW_JOB_ONPREM, "burst rerun: k starts on-prem in the same instant");
    is_double(k.start_s, 1100, 0, "burst rerun: k starts at 1100");
    is(k.reason, SPW_REASON_FITS_ONPREM, "burst rerun: k fits");
    int seen_h = 0, seen_k = 0;
    for (size_t i = 0; i < np; i++) {
        seen_h += placed[i] == &h;
        seen_k += placed[i] == &k;
    }
    ok(seen_h == 1 && seen_k == 1, "burst rerun: placed[] lists h and k once each");
    spw_engine_finish(e, &h, 1200);
    spw_engine_finish(e, &k, 1200);
    spw_engine_finish(e, &blocker, 6000);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&blocker);
    spw_job_clear(&j);
    spw_job_clear(&k);
    spw_job_clear(&h);
}

/* Zero wait: exactly one try on-prem, at arrival. */
static void test_zero_wait(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 2, NULL, 1.0);
    add_offer(&f, "g1", NULL, 1, 2.0, 30);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "none"));
    spw_job_t a = {0}, b = {0}, c = {0}, d = {0}, x = {0};
    job_init(&a, "a", 0, 100, 2, 0);
    job_init(&b, "b", 0, 100, 1, 1);
    job_init(&c, "c", 50, 100, 1, 2);
    job_init(&d, "d", 100, 100, 1, 3);
    spw_engine_submit(e, &a, 0);
    spw_engine_submit(e, &b, 0);
    is(sched(e, 0), 2, "zero wait: both placed at 0");
    is(a.state, SPW_JOB_ONPREM, "zero wait: a fits on-prem");
    is(a.reason, SPW_REASON_FITS_ONPREM, "zero wait: a reason fits");
    is(b.state, SPW_JOB_CLOUD, "zero wait: b does not fit at arrival: cloud");
    is(b.reason, SPW_REASON_WAIT_EXPIRED, "zero wait: b reason wait expired");
    is_double(b.start_s, 30, 0, "zero wait: b starts after the 30 s boot");
    spw_engine_submit(e, &c, 50);
    is(sched(e, 50), 1, "zero wait: c bursts at its arrival (50)");
    is(c.state, SPW_JOB_CLOUD, "zero wait: c in the cloud");
    is_double(c.placed_s, 50, 0, "zero wait: c placed at 50");
    /* At 100 a finishes, then d arrives: d gets the freed GPUs. */
    spw_engine_finish(e, &a, 100);
    spw_engine_submit(e, &d, 100);
    is(sched(e, 100), 1, "zero wait: d placed at 100");
    is(d.state, SPW_JOB_ONPREM, "zero wait: d uses the GPUs a freed in the same instant");
    is(queued(e), 0, "zero wait: nothing left queued");
    ok(spw_engine_next_wakeup(e) == INFINITY, "zero wait: no wakeups");
    spw_engine_finish(e, &b, 130);
    spw_engine_finish(e, &c, 180);
    spw_engine_finish(e, &d, 200);

    /* With no cloud offer a zero-wait job simply waits. */
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_fleet_init(&f);
    add_pool(&f, "p", 1, NULL, 2, NULL, 1.0);
    e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "none"));
    spw_job_clear(&a);
    job_init(&a, "a", 0, 100, 2, 0);
    job_init(&x, "x", 0, 100, 2, 1);
    spw_engine_submit(e, &a, 0);
    spw_engine_submit(e, &x, 0);
    is(sched(e, 0), 1, "zero wait, no cloud: one start");
    is(x.state, SPW_JOB_QUEUED, "zero wait, no cloud: x waits");
    ok(spw_engine_next_wakeup(e) == INFINITY, "zero wait, no cloud: no wakeup");
    spw_engine_finish(e, &a, 100);
    sched(e, 100);
    is(x.state, SPW_JOB_ONPREM, "zero wait, no cloud: x starts when a ends");
    spw_engine_finish(e, &x, 200);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&a);
    spw_job_clear(&b);
    spw_job_clear(&c);
    spw_job_clear(&d);
    spw_job_clear(&x);
}

/* One 4-GPU A100 node and an 8-GPU A100 offer at $32/h with a 90 s boot. */
static void node_and_offer(spw_fleet_t *f)
{
    spw_fleet_init(f);
    add_pool(f, "p", 1, NULL, 4, "A100", 1.0);
    add_offer(f, "p4d", "A100", 8, 32.0, 90);
}

/* The side record (spw_job_rare_t): a job that stays on-prem never gets
 * one; a cloud job does; spw_job_reset keeps it at the defaults;
 * spw_jobs_copy does not share it; spw_job_clear frees it. */
static void test_side_record(void)
{
    spw_job_t on = {0}, big = {0}, copy = {0};
    job_init(&on, "on", 0, 3600, 4, 0);      /* fits the node */
    job_init(&big, "big", 0, 3600, 8, 1);    /* never fits it: bursts */
    spw_fleet_t f;
    node_and_offer(&f);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "constant:1000"));
    spw_job_t *both[] = {&on, &big};
    for (int i = 0; i < 2; i++)
        spw_engine_submit(e, both[i], 0);
    is(sched(e, 0), 2, "side record: both placed");
    ok(on.state == SPW_JOB_ONPREM && big.state == SPW_JOB_CLOUD, "side record: on-prem and cloud");
    ok(on.rare == NULL, "side record: none for the on-prem job");
    ok(big.rare != NULL && big.rare->reserved_usd > 0 && big.rare->charge_s == 0,
       "side record: the cloud job's record holds its reservation and budget period");
    spw_engine_finish(e, &on, 3600);
    spw_engine_finish(e, &big, 3690);
    ok(on.rare == NULL, "side record: still none once the on-prem job is done");
    ok(spw_job_rare(&on)->last_offer == -1 && isnan(spw_job_rare(&on)->charge_s)
           && spw_job_rare(&on)->egress_usd == 0,
       "side record: a job without one reads the defaults");
    spw_jobs_copy(&copy, &big, 1);
    ok(copy.rare == NULL && copy.cost_usd == big.cost_usd,
       "side record: a copy has the job's fields but not its record");
    spw_job_rare_t *kept = big.rare;
    spw_job_rare_w(&big)->restarts = 3;
    spw_job_reset(&big);
    ok(big.rare == kept && spw_job_rare(&big)->restarts == 0 && isnan(big.rare->charge_s)
           && big.rare->last_offer == -1,
       "side record: reset keeps it, back at the defaults");
    spw_job_clear(&big);
    ok(big.rare == NULL, "side record: clear frees it");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
}

/* Never fits on-prem: burst at once whatever the wait; no place at all:
 * unschedulable. */
static void test_never_fits(void)
{
    spw_fleet_t f;
    node_and_offer(&f);
    uint64_t h100 = mask_of(&f, "H100");
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "constant:1000"));
    spw_job_t big = {0}, other = {0};
    job_init(&big, "big", 10, 3600, 8, 0);
    spw_engine_submit(e, &big, 10);
    is(big.state, SPW_JOB_QUEUED, "never fits: queued until the instant's schedule");
    is(queued(e), 1, "never fits: counted as queued");
    is(sched(e, 10), 1, "never fits: placed in its arrival instant");
    is(big.state, SPW_JOB_CLOUD, "never fits: in the cloud despite constant:1000");
    is(big.reason, SPW_REASON_NEVER_FITS_ONPREM, "never fits: reason");
    is(big.instances, 1, "never fits: one 8-GPU instance");
    is_double(big.start_s, 100, 0, "never fits: start = 10 + 90 s boot");
    spw_engine_finish(e, &big, 3700);
    is_double(big.cost_usd, 32.0, 1e-9, "never fits: 1 x $32/h x 1 h");
    /* H100 job: the A100 pool and the A100 offer both refuse it. */
    job_init(&other, "other", 20, 100, 1, 1);
    other.gpu_mask = h100;
    spw_engine_submit(e, &other, 20);
    is(other.state, SPW_JOB_UNSCHEDULABLE, "unschedulable: no pool and no offer for H100");
    is(other.reason, SPW_REASON_NO_PLACE, "unschedulable: reason no place");
    is(sched(e, 20), 0, "unschedulable: nothing placed");
    is(queued(e), 0, "unschedulable: not kept");
    spw_engine_destroy(e);

    /* `never` means no cloud ever: a job that cannot fit on-prem must not
     * burst; with nowhere to run it is unschedulable. */
    e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE, SPW_FIT_FIRST, "never"));
    spw_job_clear(&big);
    job_init(&big, "big", 0, 3600, 8, 0);
    spw_engine_submit(e, &big, 0);
    sched(e, 0);
    ok(big.state != SPW_JOB_CLOUD, "wait never: a job too big for on-prem does not go to the cloud");
    is(big.state, SPW_JOB_UNSCHEDULABLE, "wait never: too big for on-prem is unschedulable");
    if (big.state == SPW_JOB_CLOUD)
        spw_engine_finish(e, &big, 3600);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&big);
    spw_job_clear(&other);
}

/* ---- GPU models ---------------------------------------------------------------------------- */

static void test_models(void)
{
    ok(spw_model_accepts("A100", "A100"), "accepts: equal");
    ok(spw_model_accepts("a100", "A100-80GB"), "accepts: prefix + '-' ignoring case");
    ok(spw_model_accepts("A100", "a100-80gb"), "accepts: variant in lower case");
    ok(!spw_model_accepts("A100-80GB", "A100"), "accepts: a variant does not accept the base");
    ok(!spw_model_accepts("A10", "A100"), "accepts: A10 does not accept A100");
    ok(!spw_model_accepts("A100", "A100_80"), "accepts: only '-' separates a variant");
    ok(!spw_model_accepts("H100", "A100-80GB"), "accepts: different model");

    spw_models_t m = {0};
    int i1 = spw_models_intern(&m, "A100", 4, NULL), i2 = spw_models_intern(&m, "a100", 4, NULL);
    is(i1, i2, "intern: case-insensitive");
    is(spw_models_find(&m, "A100"), i1, "find: A100");
    is(spw_models_find(&m, "H100"), -1, "find: unknown is -1");
    spw_models_clear(&m);

    /* Pool A100-80GB (1 x 8) and an unspecified pool behind it (1 x 2). */
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "a100", 1, NULL, 8, "A100-80GB", 1.0);
    add_pool(&f, "any", 1, NULL, 2, NULL, 1.0);
    add_offer(&f, "flat", NULL, 1, 3.0, 0);
    uint64_t a100 = mask_of(&f, "A100"), h100 = mask_of(&f, "H100"), v100 = mask_of(&f, "v100");
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_SKIP, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "constant:1000"));
    spw_job_t ja = {0}, jh = {0}, jh4 = {0}, jmix = {0};
    job_init(&ja, "ja", 0, 100, 4, 0);
    ja.gpu_mask = a100;
    job_init(&jh, "jh", 0, 100, 2, 1);
    jh.gpu_mask = h100;
    job_init(&jh4, "jh4", 0, 100, 4, 2);   /* H100 x 4: only the 2-GPU any pool: never fits */
    jh4.gpu_mask = h100;
    job_init(&jmix, "jmix", 0, 100, 4, 3);
    jmix.gpu_mask = h100 | v100 | a100;
    spw_engine_submit(e, &ja, 0);
    spw_engine_submit(e, &jh, 0);
    spw_engine_submit(e, &jh4, 0);
    spw_engine_submit(e, &jmix, 0);
    is(sched(e, 0), 4, "models: four placements");
    is(ja.state, SPW_JOB_ONPREM, "models: an A100 job runs on the A100-80GB pool");
    is(ja.pool, 0, "models: pool a100");
    is(jh.state, SPW_JOB_ONPREM, "models: an H100 job may use the unspecified pool");
    is(jh.pool, 1, "models: pool any, not the A100-80GB one");
    is(jh4.state, SPW_JOB_CLOUD, "models: 4 x H100 can never fit the 2-GPU pool");
    is(jh4.reason, SPW_REASON_NEVER_FITS_ONPREM, "models: reason never fits");
    is(jmix.state, SPW_JOB_ONPREM, "models: H100|V100|A100 job on the A100-80GB pool");
    is(jmix.pool, 0, "models: mixed mask -> pool a100");
    spw_engine_finish(e, &ja, 100);
    spw_engine_finish(e, &jh, 100);
    spw_engine_finish(e, &jh4, 100);
    spw_engine_finish(e, &jmix, 100);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&ja);
    spw_job_clear(&jh);
    spw_job_clear(&jh4);
    spw_job_clear(&jmix);
}

/* ---- cloud offers ---------------------------------------------------------------------------- */

/* Offers x8, y1, z4 (T4), h8 (H100), a8 (A100-80GB), a1 (A100) behind a
 * 1-GPU P100 pool that none of the test jobs can use, so each bursts at once. */
static void cheapest_fleet(spw_fleet_t *f, uint64_t masks[4])
{
    spw_fleet_init(f);
    add_pool(f, "tiny", 1, NULL, 1, "P100", 1.0);
    add_offer(f, "x8", "T4", 8, 20.0, 0);          /* 0 */
    add_offer(f, "y1", "T4", 1, 2.6, 0);           /* 1 */
    add_offer(f, "z4", "T4", 4, 10.0, 0);          /* 2 */
    add_offer(f, "h8", "H100", 8, 30.0, 45);       /* 3 */
    add_offer(f, "a8", "A100-80GB", 8, 25.0, 30);  /* 4 */
    add_offer(f, "a1", "A100", 1, 5.0, 30);        /* 5 */
    masks[0] = 0;
    masks[1] = mask_of(f, "T4");
    masks[2] = mask_of(f, "H100");
    masks[3] = mask_of(f, "A100");
}

/* A job that allows several nodes (per_node > 0: gpus_per_node) may take
 * several instances of one offer with at least that many GPUs each; one
 * that does not (0) takes one instance with all its GPUs. */
static const struct {
    uint32_t gpus;
    int mask;     /* index into masks[]: 0 any, 1 T4, 2 H100, 3 A100 */
    uint32_t per_node;
    int offer;
    uint32_t inst;
    const char *why;
} cheap_cases[] = {
    /* T4: x8 = ceil(g/8) x $20, y1 = g x $2.6, z4 = ceil(g/4) x $10. */
    {1, 1, 0, 1, 1, "1 x T4: y1 $2.6 (z4 $10, x8 $20)"},
    {3, 1, 1, 1, 3, "3 x T4 on nodes of 1: y1 3 x 2.6 = $7.8 (z4 $10)"},
    {3, 1, 0, 2, 1, "3 x T4 on one node: z4 $10 (3 x y1 cannot form the gang)"},
    {4, 1, 0, 2, 1, "4 x T4: z4 $10 (y1 $10.4)"},
    {5, 1, 1, 1, 5, "5 x T4 on nodes of 1: y1 $13 (z4 2 x 10 = $20, x8 $20)"},
    {5, 1, 4, 0, 1, "5 x T4 on nodes of 4: x8 $20 (z4 2 x 10 = $20: tie -> first offer; y1 < 4 GPUs)"},
    {5, 1, 0, 0, 1, "5 x T4 on one node: x8 $20 (only x8 has 5 GPUs)"},
    {8, 1, 0, 0, 1, "8 x T4: x8 $20 (one instance)"},
    {9, 1, 1, 1, 9, "9 x T4 on nodes of 1: y1 $23.4 (z4 3 x 10 = $30, x8 2 x 20 = $40)"},
    {16, 1, 8, 0, 2, "16 x T4 on nodes of 8: x8 2 x 20 = $40"},
    {4, 2, 0, 3, 1, "4 x H100: only h8 serves H100, one instance"},
    {8, 3, 0, 4, 1, "8 x A100: a8 (A100-80GB) 1 x $25 (8 x a1 cannot form the gang)"},
    {3, 3, 1, 5, 3, "3 x A100 on nodes of 1: a1 3 x $5 = $15 beats a8 $25"},
    {3, 3, 0, 4, 1, "3 x A100 on one node: a8 $25 (a1 has 1 GPU)"},
    {16, 0, 1, 0, 2, "16 x any model on nodes of 1: x8 $40 (z4 $40, y1 $41.6, a8 $50, h8 $60, a1 $80)"},
};
#define NCHEAP (sizeof(cheap_cases) / sizeof(cheap_cases[0]))

static void test_cheapest_offer(void)
{
    spw_fleet_t f;
    uint64_t masks[4];
    cheapest_fleet(&f, masks);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "none"));
    spw_job_t j[NCHEAP] = {0};
    for (size_t i = 0; i < NCHEAP; i++) {
        job_init(&j[i], cheap_cases[i].why, (double)i, 7200, cheap_cases[i].gpus, (uint32_t)i);
        j[i].gpu_mask = masks[cheap_cases[i].mask];
        j[i].gpus_per_node = cheap_cases[i].per_node;
        spw_engine_submit(e, &j[i], (double)i);
        sched(e, (double)i);
        is(j[i].state, SPW_JOB_CLOUD, "cheapest: %s: in the cloud", cheap_cases[i].why);
        is(j[i].offer, cheap_cases[i].offer, "cheapest: %s: offer", cheap_cases[i].why);
        is(j[i].instances, cheap_cases[i].inst, "cheapest: %s: instances", cheap_cases[i].why);
        double boot = f.offers[cheap_cases[i].offer].boot_delay_s;
        is_double(j[i].start_s, (double)i + boot, 0, "cheapest: %s: start after %g s boot",
                  cheap_cases[i].why, boot);
        spw_engine_finish(e, &j[i], j[i].start_s + 7200);
        /* instances x price x 2 h */
        is_double(j[i].cost_usd, cheap_cases[i].inst * f.offers[cheap_cases[i].offer].ondemand_usd_per_h * 2,
                  1e-9, "cheapest: %s: cost for 2 h", cheap_cases[i].why);
    }
    spw_engine_destroy(e);
    spw_fleet_clear(&f);

    /* spw_engine_cloud_choice answers the same, on a fresh engine too.  Run
     * in a child: a crash there must not take the other tests down. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        cheapest_fleet(&f, masks);
        e = spw_engine_create(&f, &(spw_policy_t){.wait = {SPW_WAIT_NONE, 0}}, NULL);
        int wrong = 0;
        for (size_t i = 0; i < NCHEAP; i++) {
            uint32_t inst = 0;
            if (cheap_cases[i].per_node)
                continue;   /* cloud_choice asks for one node */
            int o = spw_engine_cloud_choice(e, cheap_cases[i].gpus, masks[cheap_cases[i].mask], &inst);
            wrong += o != cheap_cases[i].offer || inst != cheap_cases[i].inst;
        }
        spw_engine_destroy(e);
        spw_fleet_clear(&f);
        _exit(wrong ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "spw_engine_cloud_choice on a fresh engine gives the cheapest offer for each case"))
        diag("  child %s %d", WIFSIGNALED(status) ? "killed by signal" : "exited with",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    spw_jobs_clear(j, NCHEAP);
}

/* ---- on-prem cost and stats -------------------------------------------------------------------- */

static void test_onprem_cost(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "a", 2, NULL, 8, NULL, 1.5);
    add_pool(&f, "b", 1, NULL, 4, NULL, 0.5);
    spw_engine_t *e = engine(&f, policy(SPW_QUEUE_FIFO, SPW_SCAN_HOL, SPW_BACKFILL_NONE,
                                        SPW_FIT_FIRST, "none"));
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    is(st.onprem_gpus, 20, "stats: 20 on-prem GPUs");
    is(spw_fleet_gpus(&f), 20, "spw_fleet_gpus: 20");
    spw_job_t j = {0};
    job_init(&j, "j", 0, 100, 3, 0);
    spw_engine_submit(e, &j, 0);
    sched(e, 0);
    is(busy(e), 3, "stats: 3 busy");
    spw_engine_finish(e, &j, 5400);
    /* 3 GPUs x $1.5 x 1.5 h. */
    is_double(j.cost_usd, 3 * 1.5 * 1.5, 1e-9, "on-prem cost: 3 x 1.5 x 1.5 h");
    is_double(j.end_s, 5400, 0, "on-prem: end_s");
    is(j.state, SPW_JOB_DONE, "on-prem: done");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j);
}

/* ---- a naive reference scheduler, straight from the spec ------------------------------------- */

#define RMAXP 4
#define RMAXN 160
#define RMAXJ 200

typedef struct rplace {
    int pool;
    uint32_t node;
    int multi;
} rplace_t;

typedef struct ref {
    const spw_fleet_t *f;
    spw_policy_t pol;
    uint16_t freeg[RMAXP][RMAXN];
    spw_job_t *q[RMAXJ];         /* queued for on-prem, any order */
    size_t nq;
    spw_job_t *run[RMAXJ];       /* on-prem running */
    size_t nrun;
    spw_job_t *nf[RMAXJ];        /* never fits: burst this instant */
    size_t nnf;
    double burst_at[RMAXJ];      /* by job order */
    uint32_t nodes[RMAXJ][RMAXN];
    spw_job_t *placed[RMAXJ];
    size_t nplaced;
} ref_t;

static int r_pool_ok(const spw_fleet_t *f, int p, uint64_t mask)
{
    int m = f->pools[p].model;
    if (!mask || m < 0)
        return 1;
    for (int k = 0; k < f->models.n; k++)
        if ((mask >> k & 1) && spw_model_accepts(f->models.name[k], f->models.name[m]))
            return 1;
    return 0;
}

static int r_offer_ok(const spw_fleet_t *f, size_t o, uint64_t mask)
{
    int m = f->offers[o].model;
    if (!mask || m < 0)
        return 1;
    for (int k = 0; k < f->models.n; k++)
        if ((mask >> k & 1) && spw_model_accepts(f->models.name[k], f->models.name[m]))
            return 1;
    return 0;
}

static uint32_t r_maxcap(const spw_fleet_t *f, int p)
{
    uint32_t m = 0;
    for (uint32_t k = 0; k < f->pools[p].nnodes; k++)
        if (f->pools[p].node_gpus[k] > m)
            m = f->pools[p].node_gpus[k];
    return m;
}

static uint32_t r_total(const spw_fleet_t *f, int p)
{
    uint32_t t = 0;
    for (uint32_t k = 0; k < f->pools[p].nnodes; k++)
        t += f->pools[p].node_gpus[k];
    return t;
}

static int r_cheapest(const spw_fleet_t *f, uint32_t g, uint64_t mask, uint32_t *inst)
{
    int best = -1;
    double usd = INFINITY;
    for (size_t o = 0; o < f->noffers; o++) {
        if (!r_offer_ok(f, o, mask))
            continue;
        /* One instance holds the gang (flat offers price per GPU). */
        if (f->offers[o].model >= 0 && g > f->offers[o].gpus)
            continue;
        uint32_t n = (g + f->offers[o].gpus - 1) / f->offers[o].gpus;
        if (n * f->offers[o].ondemand_usd_per_h < usd) {
            usd = n * f->offers[o].ondemand_usd_per_h;
            best = (int)o;
            *inst = n;
        }
    }
    return best;
}

static int r_before(const spw_policy_t *p, const spw_job_t *a, const spw_job_t *b)
{
    if (p->queue == SPW_QUEUE_SJF && a->est_runtime_s != b->est_runtime_s)
        return a->est_runtime_s < b->est_runtime_s;
    if (p->queue == SPW_QUEUE_PRIORITY && a->priority != b->priority)
        return a->priority > b->priority;
    if (a->submit_s != b->submit_s)
        return a->submit_s < b->submit_s;
    return a->order < b->order;
}

/* Sorts the queue by the policy's order (insertion sort, it is small). */
static void r_sort(ref_t *r)
{
    for (size_t i = 1; i < r->nq; i++)
        for (size_t k = i; k > 0 && r_before(&r->pol, r->q[k], r->q[k - 1]); k--) {
            spw_job_t *t = r->q[k];
            r->q[k] = r->q[k - 1];
            r->q[k - 1] = t;
        }
}

/* Sum of the GPUs of nodes wholly free in fr[] (a pool's free or shadow). */
static uint32_t r_whole(const spw_fleet_t *f, int p, const uint16_t *fr)
{
    uint32_t s = 0;
    for (uint32_t k = 0; k < f->pools[p].nnodes; k++)
        if (fr[k] == f->pools[p].node_gpus[k])
            s += fr[k];
    return s;
}

static rplace_t r_place(const ref_t *r, const spw_job_t *j)
{
    const spw_fleet_t *f = r->f;
    rplace_t best = {-1, 0, 0};
    uint32_t best_free = UINT32_MAX;
    for (size_t p = 0; p < f->npools; p++) {
        if (!r_pool_ok(f, (int)p, j->gpu_mask))
            continue;
        if (j->gpus > r_maxcap(f, (int)p)) {
            if (r_whole(f, (int)p, r->freeg[p]) >= j->gpus && best.pool < 0) {
                best = (rplace_t){(int)p, 0, 1};
                if (r->pol.fit == SPW_FIT_FIRST)
                    return best;
                best_free = UINT32_MAX - 1;
            }
            continue;
        }
        for (uint32_t k = 0; k < f->pools[p].nnodes; k++) {
            uint16_t fr = r->freeg[p][k];
            if (fr < j->gpus)
                continue;
            if (r->pol.fit == SPW_FIT_FIRST)
                return (rplace_t){(int)p, k, 0};
            if (fr < best_free) {
                best_free = fr;
                best = (rplace_t){(int)p, k, 0};
            }
        }
    }
    return best;
}

/* The whole nodes a multi-node job of g GPUs takes from fr[]. */
static uint32_t r_multi_nodes(const spw_fleet_t *f, int p, const uint16_t *fr, uint32_t g,
                              uint32_t *out, uint32_t *alloc)
{
    uint32_t n = 0, got = 0;
    for (uint32_t k = 0; k < f->pools[p].nnodes && got < g; k++)
        if (fr[k] == f->pools[p].node_gpus[k]) {
            out[n++] = k;
            got += fr[k];
        }
    *alloc = got;
    return n;
}

static void r_qdel(ref_t *r, spw_job_t *j)
{
    for (size_t i = 0; i < r->nq; i++)
        if (r->q[i] == j) {
            r->q[i] = r->q[--r->nq];
            r_sort(r);
            return;
        }
}

static void r_start(ref_t *r, spw_job_t *j, rplace_t pl, spw_reason_t why, double now)
{
    r_qdel(r, j);
    j->pool = pl.pool;
    if (!pl.multi) {
        j->node = (int32_t)pl.node;
        j->nnodes = 1;
        j->alloc_gpus = j->gpus;
        r->freeg[pl.pool][pl.node] -= (uint16_t)j->gpus;
    } else {
        uint32_t *nodes = r->nodes[j->order], alloc;
        j->nnodes = r_multi_nodes(r->f, pl.pool, r->freeg[pl.pool], j->gpus, nodes, &alloc);
        j->node = (int32_t)nodes[0];
        j->alloc_gpus = alloc;
        for (uint32_t k = 0; k < j->nnodes; k++)
            r->freeg[pl.pool][nodes[k]] = 0;
    }
    j->state = SPW_JOB_ONPREM;
    j->reason = why;
    j->placed_s = j->start_s = now;
    r->run[r->nrun++] = j;
    r->placed[r->nplaced++] = j;
}

static void r_cloud(ref_t *r, spw_job_t *j, spw_reason_t why, double now)
{
    uint32_t inst = 0;
    int o = r_cheapest(r->f, j->gpus, j->gpu_mask, &inst);
    j->state = SPW_JOB_CLOUD;
    j->reason = why;
    j->offer = o;
    j->instances = inst;
    j->placed_s = now;
    j->start_s = now + r->f->offers[o].boot_delay_s;
    r->placed[r->nplaced++] = j;
}

/* Whether the head h (g GPUs) fits pool p in the shadow sh[]. */
static int r_head_fits(const spw_fleet_t *f, int p, const uint16_t *sh, uint32_t g)
{
    if (g > r_maxcap(f, p))
        return r_whole(f, p, sh) >= g;
    for (uint32_t k = 0; k < f->pools[p].nnodes; k++)
        if (sh[k] >= g)
            return 1;
    return 0;
}

static void r_pass(ref_t *r, double now)
{
    const spw_fleet_t *f = r->f;
    r_sort(r);
    if (r->pol.backfill == SPW_BACKFILL_NONE) {
        for (size_t i = 0; i < r->nq;) {
            rplace_t pl = r_place(r, r->q[i]);
            if (pl.pool >= 0) {
                r_start(r, r->q[i], pl, SPW_REASON_FITS_ONPREM, now);
                i = 0;    /* restart from the front: the queue was re-sorted */
            } else if (r->pol.scan == SPW_SCAN_HOL) {
                return;
            } else {
                i++;
            }
        }
        return;
    }
    spw_job_t *h;
    for (;;) {
        if (!r->nq)
            return;
        h = r->q[0];
        rplace_t pl = r_place(r, h);
        if (pl.pool < 0)
            break;
        r_start(r, h, pl, SPW_REASON_FITS_ONPREM, now);
    }
    /* Reservation: running jobs end at start + estimate, in (end, order). */
    static uint16_t sh[RMAXP][RMAXN];
    int hok[RMAXP] = {0};
    memcpy(sh, r->freeg, sizeof(sh));
    for (size_t p = 0; p < f->npools; p++)
        hok[p] = r_pool_ok(f, (int)p, h->gpu_mask);
    spw_job_t *byend[RMAXJ];
    memcpy(byend, r->run, r->nrun * sizeof(*byend));
    for (size_t i = 1; i < r->nrun; i++)
        for (size_t k = i; k > 0; k--) {
            spw_job_t *a = byend[k], *b = byend[k - 1];
            double ea = a->start_s + a->est_runtime_s, eb = b->start_s + b->est_runtime_s;
            if (!(ea < eb || (ea == eb && a->order < b->order)))
                break;
            byend[k] = b;
            byend[k - 1] = a;
        }
    double t = INFINITY;
    for (size_t i = 0; i < r->nrun; i++) {
        spw_job_t *j = byend[i];
        if (!hok[j->pool])
            continue;
        if (j->gpus > r_maxcap(f, j->pool)) {
            for (uint32_t k = 0; k < j->nnodes; k++) {
                uint32_t n = r->nodes[j->order][k];
                sh[j->pool][n] = f->pools[j->pool].node_gpus[n];
            }
        } else {
            sh[j->pool][j->node] += (uint16_t)j->alloc_gpus;
        }
        if (r_head_fits(f, j->pool, sh[j->pool], h->gpus)) {
            double e = j->start_s + j->est_runtime_s;
            t = e > now ? e : now;
            break;
        }
    }
    for (;;) {
        spw_job_t *best = NULL;
        rplace_t bpl = {-1, 0, 0};
        for (size_t i = 0; i < r->nq && !best; i++) {
            spw_job_t *j = r->q[i];
            if (j == h)
                continue;
            rplace_t pl = r_place(r, j);
            if (pl.pool < 0)
                continue;
            if (!hok[pl.pool] || now + j->est_runtime_s <= t) {
                best = j;
                bpl = pl;
                break;
            }
            uint16_t save[RMAXN];
            memcpy(save, sh[pl.pool], sizeof(save));
            if (pl.multi) {
                uint32_t nodes[RMAXN], alloc;
                uint32_t nn = r_multi_nodes(f, pl.pool, r->freeg[pl.pool], j->gpus, nodes, &alloc);
                for (uint32_t k = 0; k < nn; k++)
                    sh[pl.pool][nodes[k]] = 0;
            } else {
                sh[pl.pool][pl.node] -= (uint16_t)j->gpus;
            }
            int fits = 0;
            for (size_t p = 0; p < f->npools && !fits; p++)
                fits = hok[p] && r_head_fits(f, (int)p, sh[p], h->gpus);
            memcpy(sh[pl.pool], save, sizeof(save));
            if (fits) {
                best = j;
                bpl = pl;
            }
        }
        if (!best)
            break;
        if (hok[bpl.pool] && !(now + best->est_runtime_s <= t)) {
            if (bpl.multi) {
                uint32_t nodes[RMAXN], alloc;
                uint32_t nn = r_multi_nodes(f, bpl.pool, r->freeg[bpl.pool], best->gpus, nodes, &alloc);
                for (uint32_t k = 0; k < nn; k++)
                    sh[bpl.pool][nodes[k]] = 0;
            } else {
                sh[bpl.pool][bpl.node] -= (uint16_t)best->gpus;
            }
        }
        r_start(r, best, bpl, SPW_REASON_BACKFILLED, now);
    }
}

static double r_wait(const spw_policy_t *p, const spw_job_t *j)
{
    switch (p->wait.kind) {
    case SPW_WAIT_NONE: return 0;
    case SPW_WAIT_CONSTANT: return p->wait.param;
    case SPW_WAIT_RUNTIME: return p->wait.param * j->est_runtime_s;
    case SPW_WAIT_COMPUTE: return p->wait.param * j->gpus * j->est_runtime_s;
    default: return INFINITY;
    }
}

static void *r_create(const spw_fleet_t *f, const spw_policy_t *p)
{
    ref_t *r = calloc(1, sizeof(*r));
    r->f = f;
    r->pol = *p;
    for (size_t i = 0; i < f->npools; i++)
        for (uint32_t k = 0; k < f->pools[i].nnodes; k++)
            r->freeg[i][k] = f->pools[i].node_gpus[k];
    return r;
}

static void r_submit(void *v, spw_job_t *j, double now)
{
    ref_t *r = v;
    const spw_fleet_t *f = r->f;
    uint32_t inst = 0;
    int offer = r_cheapest(f, j->gpus, j->gpu_mask, &inst);
    if (r->pol.wait.kind == SPW_WAIT_NEVER)
        offer = -1;   /* never: nothing goes to the cloud, not even a job too big for on-prem */
    int fits_ever = 0;
    for (size_t p = 0; p < f->npools; p++)
        if (r_pool_ok(f, (int)p, j->gpu_mask) && j->gpus <= r_total(f, (int)p))
            fits_ever = 1;
    (void)now;
    if (!fits_ever) {
        if (offer < 0) {
            j->state = SPW_JOB_UNSCHEDULABLE;
            j->reason = SPW_REASON_NO_PLACE;
            return;
        }
        j->state = SPW_JOB_QUEUED;
        j->reason = SPW_REASON_NEVER_FITS_ONPREM;
        r->nf[r->nnf++] = j;
        return;
    }
    j->state = SPW_JOB_QUEUED;
    r->burst_at[j->order] = offer < 0 ? INFINITY : j->submit_s + r_wait(&r->pol, j);
    r->q[r->nq++] = j;
}

static size_t r_schedule(void *v, double now, spw_job_t ***placed)
{
    ref_t *r = v;
    r->nplaced = 0;
    r_pass(r, now);
    for (size_t i = 0; i < r->nnf; i++)
        r_cloud(r, r->nf[i], SPW_REASON_NEVER_FITS_ONPREM, now);
    r->nnf = 0;
    int any = 0;
    for (;;) {
        spw_job_t *x = NULL;
        for (size_t i = 0; i < r->nq; i++) {
            spw_job_t *j = r->q[i];
            if (r->burst_at[j->order] <= now
                && (!x || r->burst_at[j->order] < r->burst_at[x->order]
                    || (r->burst_at[j->order] == r->burst_at[x->order] && j->order < x->order)))
                x = j;
        }
        if (!x)
            break;
        r_qdel(r, x);
        r_cloud(r, x, SPW_REASON_WAIT_EXPIRED, now);
        any = 1;
    }
    if (any)
        r_pass(r, now);
    *placed = r->placed;
    return r->nplaced;
}

static void r_finish(void *v, spw_job_t *j, double now)
{
    ref_t *r = v;
    double hours = (now - j->start_s) / 3600.0;
    if (hours < 0)
        hours = 0;
    if (j->state == SPW_JOB_ONPREM) {
        if (j->gpus > r_maxcap(r->f, j->pool)) {
            for (uint32_t k = 0; k < j->nnodes; k++) {
                uint32_t n = r->nodes[j->order][k];
                r->freeg[j->pool][n] = r->f->pools[j->pool].node_gpus[n];
            }
        } else {
            r->freeg[j->pool][j->node] += (uint16_t)j->alloc_gpus;
        }
        for (size_t i = 0; i < r->nrun; i++)
            if (r->run[i] == j) {
                r->run[i] = r->run[--r->nrun];
                break;
            }
        j->cost_usd = hours * j->alloc_gpus * r->f->pools[j->pool].cost_usd_per_gpu_h;
    } else if (j->state == SPW_JOB_CLOUD) {
        j->cost_usd = hours * j->instances * r->f->offers[j->offer].ondemand_usd_per_h;
    }
    j->end_s = now;
    j->state = SPW_JOB_DONE;
}

static double r_wakeup(void *v)
{
    ref_t *r = v;
    double w = INFINITY;
    for (size_t i = 0; i < r->nq; i++)
        if (r->burst_at[r->q[i]->order] < w)
            w = r->burst_at[r->q[i]->order];
    return w;
}

static void r_destroy(void *v)
{
    free(v);
}

/* Engine wrappers with the same shape. */
static void *e_create(const spw_fleet_t *f, const spw_policy_t *p)
{
    return spw_engine_create(f, p, NULL);
}
static void e_submit(void *v, spw_job_t *j, double now) { spw_engine_submit(v, j, now); }
static size_t e_schedule(void *v, double now, spw_job_t ***placed)
{
    return spw_engine_schedule(v, now, placed);
}
static void e_finish(void *v, spw_job_t *j, double now) { spw_engine_finish(v, j, now); }
static double e_wakeup(void *v) { return spw_engine_next_wakeup(v); }
static void e_destroy(void *v) { spw_engine_destroy(v); }

typedef struct ops {
    void *(*create)(const spw_fleet_t *, const spw_policy_t *);
    void (*submit)(void *, spw_job_t *, double);
    size_t (*schedule)(void *, double, spw_job_t ***);
    void (*finish)(void *, spw_job_t *, double);
    double (*wakeup)(void *);
    void (*destroy)(void *);
} ops_t;

static const ops_t engine_ops = {e_create, e_submit, e_schedule, e_finish, e_wakeup, e_destroy};
static const ops_t ref_ops = {r_create, r_submit, r_schedule, r_finish, r_wakeup, r_destroy};

/* A tiny event loop: instants at arrivals, completions (start + true
 * runtime) and wakeups; completions before arrivals before the schedule. */
static void replay(const ops_t *o, const spw_fleet_t *f, const spw_policy_t *p, spw_job_t *jobs,
                   const double *rt, size_t n)
{
    void *s = o->create(f, p);
    double *end = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        spw_job_reset(&jobs[i]);
        end[i] = INFINITY;
    }
    size_t next = 0;
    for (int guard = 0; guard < 100000; guard++) {
        double t = next < n ? jobs[next].submit_s : INFINITY;
        for (size_t i = 0; i < n; i++)
            if (end[i] < t)
                t = end[i];
        double w = o->wakeup(s);
        if (w < t)
            t = w;
        if (t == INFINITY)
            break;
        for (size_t i = 0; i < n; i++)
            if (end[i] == t) {
                o->finish(s, &jobs[i], t);
                end[i] = INFINITY;
            }
        while (next < n && jobs[next].submit_s == t)
            o->submit(s, &jobs[next++], t);
        spw_job_t **placed;
        size_t np = o->schedule(s, t, &placed);
        for (size_t k = 0; k < np; k++)
            end[placed[k] - jobs] = placed[k]->start_s + rt[placed[k] - jobs];
    }
    free(end);
    o->destroy(s);
}

static const char *const model_names[] = {"A100", "A100-80GB", "H100", "V100"};

static void random_fleet(spw_rng_t *g, spw_fleet_t *f)
{
    spw_fleet_init(f);
    for (size_t i = 0; i < 4; i++)
        spw_models_intern(&f->models, model_names[i], strlen(model_names[i]), NULL);
    size_t np = 1 + spw_rng_below(g, 3);
    static const uint16_t sizes[] = {1, 2, 4, 8};
    for (size_t p = 0; p < np; p++) {
        uint32_t nn = spw_rng_below(g, 10) == 0 ? 65 + (uint32_t)spw_rng_below(g, 90)
                                                : 1 + (uint32_t)spw_rng_below(g, 6);
        uint16_t gpus[RMAXN];
        int het = spw_rng_below(g, 3) == 0;
        uint16_t each = sizes[spw_rng_below(g, 4)];
        for (uint32_t k = 0; k < nn; k++)
            gpus[k] = het ? sizes[spw_rng_below(g, 4)] : each;
        char name[16];
        snprintf(name, sizeof(name), "p%u", (unsigned)(p % 100));
        int m = (int)spw_rng_below(g, 6);
        add_pool(f, name, nn, gpus, 0, m < 4 ? model_names[m] : NULL,
                 0.25 * (double)(1 + spw_rng_below(g, 12)));
    }
    size_t no = spw_rng_below(g, 4);
    static const double boots[] = {0, 30, 120};
    for (size_t o = 0; o < no; o++) {
        int m = (int)spw_rng_below(g, 6);
        add_offer(f, "o", m < 4 ? model_names[m] : NULL, sizes[spw_rng_below(g, 4)],
                  (double)(1 + spw_rng_below(g, 40)), boots[spw_rng_below(g, 3)]);
    }
}

static spw_policy_t random_policy(spw_rng_t *g)
{
    static const char *const waits[] = {"never", "none", "constant:0", "constant:50",
                                        "constant:500", "runtime:0.5", "runtime:2",
                                        "compute:0.1", "compute:1"};
    return policy((spw_queue_order_t)spw_rng_below(g, 3), (spw_scan_t)spw_rng_below(g, 2),
                  (spw_backfill_t)spw_rng_below(g, 2), (spw_fit_t)spw_rng_below(g, 2),
                  waits[spw_rng_below(g, 9)]);
}

static size_t random_jobs(spw_rng_t *g, const spw_fleet_t *f, spw_job_t *jobs, double *rt,
                          char (*ids)[12], size_t max)
{
    static const uint32_t demand[] = {1, 1, 1, 2, 2, 3, 4, 4, 8, 12, 16, 40};
    size_t n = 20 + spw_rng_below(g, max - 20);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        if (spw_rng_below(g, 3))
            t += (double)(1 + spw_rng_below(g, 100));
        snprintf(ids[i], 12, "r%u", (unsigned)(i % 100000));
        job_init(&jobs[i], ids[i], t, (double)(10 + spw_rng_below(g, 990)),
                 demand[spw_rng_below(g, sizeof(demand) / sizeof(demand[0]))], (uint32_t)i);
        jobs[i].priority = (int32_t)spw_rng_below(g, 4);
        if (spw_rng_below(g, 3) == 0) {
            jobs[i].gpu_mask = 1ULL << spw_rng_below(g, 4);
            if (spw_rng_below(g, 3) == 0)
                jobs[i].gpu_mask |= 1ULL << spw_rng_below(g, 4);
        }
        /* True runtime: the estimate x 0.5 .. 1.5, whole seconds. */
        rt[i] = floor(jobs[i].est_runtime_s * (0.5 + spw_rng_uniform(g)));
        if (rt[i] < 1)
            rt[i] = 1;
    }
    (void)f;
    return n;
}

static int same_job(const spw_job_t *a, const spw_job_t *b)
{
    return a->state == b->state && a->reason == b->reason && a->pool == b->pool
           && a->node == b->node && a->nnodes == b->nnodes && a->alloc_gpus == b->alloc_gpus
           && a->offer == b->offer && a->instances == b->instances
           && (a->start_s == b->start_s || (isnan(a->start_s) && isnan(b->start_s)))
           && (a->end_s == b->end_s || (isnan(a->end_s) && isnan(b->end_s)))
           && fabs(a->cost_usd - b->cost_usd) <= 1e-9 * (1 + fabs(a->cost_usd));
}

static void describe(const char *who, const spw_job_t *j)
{
    diag("  %s: %s state=%s reason='%s' pool=%d node=%d nnodes=%u alloc=%u offer=%d inst=%u "
         "start=%g end=%g cost=%g", who, j->id, spw_job_state_name(j->state),
         spw_reason_text(j->reason), j->pool, j->node, j->nnodes, j->alloc_gpus, j->offer,
         j->instances, j->start_s, j->end_s, j->cost_usd);
}

static void test_against_reference(void)
{
    static spw_job_t ej[RMAXJ], rj[RMAXJ];
    static double rt[RMAXJ];
    static char ids[RMAXJ][12];
    int bad = 0, runs = 0;
    size_t reasons[SPW_REASON_COUNT] = {0}, multi = 0, unsched = 0;
    for (uint64_t seed = 1; seed <= 600; seed++) {
        spw_rng_t g;
        spw_rng_seed(&g, seed);
        spw_fleet_t f;
        random_fleet(&g, &f);
        spw_policy_t p = random_policy(&g);
        size_t n = random_jobs(&g, &f, ej, rt, ids, RMAXJ);
        memcpy(rj, ej, n * sizeof(spw_job_t));
        replay(&engine_ops, &f, &p, ej, rt, n);
        replay(&ref_ops, &f, &p, rj, rt, n);
        runs++;
        for (size_t i = 0; i < n; i++) {
            if (ej[i].state == SPW_JOB_DONE)
                reasons[ej[i].reason]++;
            if (ej[i].state == SPW_JOB_UNSCHEDULABLE)
                unsched++;
            if (ej[i].nnodes > 1)
                multi++;
        }
        for (size_t i = 0; i < n; i++)
            if (!same_job(&ej[i], &rj[i])) {
                if (bad++ < 3) {
                    char w[32];
                    spw_wait_format(&p.wait, w, sizeof(w));
                    diag("seed %llu: queue=%s scan=%s backfill=%s fit=%s wait=%s: first "
                         "difference at job %zu", (unsigned long long)seed,
                         spw_queue_order_name(p.queue), spw_scan_name(p.scan),
                         spw_backfill_name(p.backfill), spw_fit_name(p.fit), w, i);
                    describe("engine", &ej[i]);
                    describe("reference", &rj[i]);
                }
                break;
            }
        spw_fleet_clear(&f);
    }
    is(bad, 0, "engine agrees with the naive reference on %d random fleets/policies/traces", runs);
    ok(reasons[SPW_REASON_FITS_ONPREM] > 0 && reasons[SPW_REASON_BACKFILLED] > 0
       && reasons[SPW_REASON_WAIT_EXPIRED] > 0 && reasons[SPW_REASON_NEVER_FITS_ONPREM] > 0
       && unsched > 0 && multi > 0,
       "random runs cover every outcome (fits %zu, backfilled %zu, expired %zu, never-fits %zu, "
       "unschedulable %zu, multi-node %zu)", reasons[SPW_REASON_FITS_ONPREM],
       reasons[SPW_REASON_BACKFILLED], reasons[SPW_REASON_WAIT_EXPIRED],
       reasons[SPW_REASON_NEVER_FITS_ONPREM], unsched, multi);
    spw_jobs_clear(ej, RMAXJ);
    spw_jobs_clear(rj, RMAXJ);
}

int main(void)
{
    test_scan_and_backfill();
    test_easy_spare_gpus();
    test_easy_other_pool();
    test_easy_multinode_head();
    test_queue_orders();
    test_fit();
    test_multinode();
    test_destroy_with_running_multinode();
    test_wait_policies();
    test_predict_wait();
    test_instant_order();
    test_zero_wait();
    test_never_fits();
    test_side_record();
    test_models();
    test_cheapest_offer();
    test_onprem_cost();
    test_against_reference();
    return done_testing();
}
