/* test_engine_live.c: the engine calls the daemon needs beyond the
 * simulator's: cancel, requeue (retries and preemptions) and explain.
 * Every expected number is worked out in the comments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "tap.h"

static char *dup(const char *s)
{
    return spw_xstrdup(s);
}

static void add_offer(spw_fleet_t *f, const char *type, const char *gpu, uint32_t gpus,
                      double usd_h, double boot_s)
{
    f->offers = spw_xrealloc(f->offers, (f->noffers + 1) * sizeof(spw_offer_t));
    spw_offer_t *o = &f->offers[f->noffers++];
    memset(o, 0, sizeof(*o));
    o->provider = dup("test");
    o->region = dup("r1");
    o->zone = dup("");
    o->instance_type = dup(type);
    o->model = spw_models_intern(&f->models, gpu, strlen(gpu), NULL);
    o->gpus = gpus;
    o->ondemand_usd_per_h = usd_h;
    o->spot_usd_per_h = NAN;
    o->boot_delay_s = boot_s;
}

/* One node of 4 A100 at $1/GPU-h; offers x4 (4 x T4, $4/h), a1 (1 x A100,
 * $3/h), a4 (4 x A100-80GB, $10/h), each booting in 60 s. */
static void make_fleet(spw_fleet_t *f)
{
    spw_fleet_init(f);
    f->pools = spw_xcalloc(1, sizeof(spw_pool_spec_t));
    f->npools = 1;
    f->pools[0].name = dup("a");
    f->pools[0].nnodes = 1;
    f->pools[0].node_gpus = spw_xmalloc(sizeof(uint16_t));
    f->pools[0].node_gpus[0] = 4;
    f->pools[0].model = spw_models_intern(&f->models, "A100", 4, NULL);
    f->pools[0].cost_usd_per_gpu_h = 1.0;
    add_offer(f, "x4", "T4", 4, 4.0, 60);
    add_offer(f, "a1", "A100", 1, 3.0, 60);
    add_offer(f, "a4", "A100-80GB", 4, 10.0, 60);
}

static spw_engine_t *engine(const spw_fleet_t *f, const char *wait)
{
    spw_policy_t p;
    spw_policy_default(&p);
    p.scan = SPW_SCAN_HOL;
    spw_wait_parse(wait, &p.wait, NULL);
    spw_error_t err;
    spw_engine_t *e = spw_engine_create(f, &p, &err);
    if (!e)
        diag("engine: %s", err.text);
    return e;
}

static void job(spw_job_t *j, const char *id, double submit, uint32_t gpus, double est,
                uint32_t order, uint64_t mask)
{
    spw_job_clear(j);   /* jobs are zero-initialised (= {0}) or inited before */
    memset(j, 0, sizeof(*j));
    spw_job_reset(j);
    j->id = id;
    j->submit_s = submit;
    j->gpus = gpus;
    j->est_runtime_s = est;
    j->order = order;
    j->gpu_mask = mask;
    j->deadline_s = NAN;
}

static size_t sched(spw_engine_t *e, double now)
{
    spw_job_t **placed;
    return spw_engine_schedule(e, now, &placed);
}

static void test_cancel(void)
{
    spw_fleet_t f;
    make_fleet(&f);
    spw_engine_t *e = engine(&f, "constant:100");
    uint64_t a100 = 1ULL << spw_models_find(&f.models, "A100");
    spw_job_t j1 = {0}, j2 = {0};
    spw_engine_stats_t st;

    job(&j1, "j1", 0, 4, 3600, 0, a100);
    spw_engine_submit(e, &j1, 0);
    sched(e, 0);
    is(j1.state, SPW_JOB_ONPREM, "cancel: j1 runs on-prem");
    job(&j2, "j2", 10, 2, 3600, 1, a100);
    spw_engine_submit(e, &j2, 10);
    sched(e, 10);
    is(j2.state, SPW_JOB_QUEUED, "cancel: j2 waits behind j1");
    is_double(spw_engine_next_wakeup(e), 110, 0, "cancel: j2 would burst at 10 + 100");

    /* A queued job leaves the queue; its expiry no longer wakes the engine. */
    is(spw_engine_cancel(e, &j2, 20), 0, "cancel: queued j2 cancelled");
    is(j2.state, SPW_JOB_CANCELLED, "cancel: j2 is cancelled");
    is_double(j2.end_s, 20, 0, "cancel: j2 ended at 20");
    spw_engine_stats(e, &st);
    is((long)st.queued, 0, "cancel: nothing queued");
    ok(spw_engine_next_wakeup(e) == INFINITY, "cancel: no wake-up left for j2");
    is((long)sched(e, 110), 0, "cancel: nothing bursts at 110");
    is_double(j2.cost_usd, 0, 0, "cancel: a job that never ran costs nothing");

    /* A running job frees its GPUs and pays for 1800 s: 4 GPUs x $1 x 0.5 h = $2. */
    is(spw_engine_cancel(e, &j1, 1800), 0, "cancel: running j1 cancelled");
    is_double(j1.cost_usd, 2.0, 1e-9, "cancel: j1 paid 4 x $1 x 0.5 h");
    spw_engine_stats(e, &st);
    is((long)st.onprem_busy_gpus, 0, "cancel: j1's GPUs are free");
    is(spw_engine_cancel(e, &j1, 1900), -1, "cancel: cancelling twice is refused");
    is(spw_engine_cancel(e, &j2, 1900), -1, "cancel: a cancelled queued job is refused too");
    is_double(j1.cost_usd, 2.0, 1e-9, "cancel: a refused cancel changes nothing");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j1);
    spw_job_clear(&j2);
}

/* Jobs that left the engine may be freed after spw_engine_forget_left,
 * while the lists it cleans lazily still held them (j2's wait expiry): the
 * jobs still in them keep their place (j3 bursts at 30 + 100).  Under
 * valgrind or ASan (make valgrind, make san) a reference kept would show. */
static void test_forget_left(void)
{
    spw_fleet_t f;
    make_fleet(&f);
    spw_engine_t *e = engine(&f, "constant:100");
    uint64_t a100 = 1ULL << spw_models_find(&f.models, "A100");
    spw_job_t j1 = {0}, j3 = {0}, *j2 = spw_xcalloc(1, sizeof(*j2));

    job(&j1, "j1", 0, 4, 3600, 0, a100);
    spw_engine_submit(e, &j1, 0);
    sched(e, 0);
    job(j2, "j2", 10, 2, 3600, 1, a100);
    spw_engine_submit(e, j2, 10);
    job(&j3, "j3", 30, 1, 3600, 2, 0);
    spw_engine_submit(e, &j3, 30);
    sched(e, 30);
    is(spw_engine_cancel(e, j2, 40), 0, "forget: queued j2 cancelled (its expiry is stale)");
    spw_engine_forget_left(e);
    memset(j2, 0xa5, sizeof(*j2));
    free(j2);
    is_double(spw_engine_next_wakeup(e), 130, 0, "forget: j3 still bursts at 30 + 100");
    is((long)sched(e, 110), 0, "forget: nothing at j2's old time");
    is((long)sched(e, 130), 1, "forget: j3 bursts at 130");
    is(j3.state, SPW_JOB_CLOUD, "forget: j3 went to the cloud");
    spw_engine_destroy(e);
    spw_job_clear(&j1);
    spw_job_clear(&j3);
    spw_fleet_clear(&f);
}

static void test_requeue(void)
{
    spw_fleet_t f;
    make_fleet(&f);
    spw_engine_t *e = engine(&f, "constant:100");
    uint64_t a100 = 1ULL << spw_models_find(&f.models, "A100");
    spw_job_t j3 = {0}, j4 = {0}, j5 = {0};

    /* On-prem: runs 2000..2500, requeued, starts again at once, ends 3500.
     * Cost: 2 GPUs x $1 x (500 + 1000) s / 3600 = $0.8333. */
    job(&j3, "j3", 2000, 2, 1000, 0, a100);
    spw_engine_submit(e, &j3, 2000);
    sched(e, 2000);
    is(j3.state, SPW_JOB_ONPREM, "requeue: j3 on-prem");
    is(spw_engine_requeue(e, &j3, 2500), 0, "requeue: j3 back in the queue");
    is(j3.state, SPW_JOB_QUEUED, "requeue: j3 queued");
    is(j3.pool, -1, "requeue: placement cleared");
    is_double(j3.cost_usd, 2.0 * 500 / 3600, 1e-9, "requeue: the first attempt is paid");
    is((long)sched(e, 2500), 1, "requeue: placed again at 2500");
    is(j3.state, SPW_JOB_ONPREM, "requeue: j3 on-prem again");
    is_double(j3.start_s, 2500, 0, "requeue: restarted at 2500");
    spw_engine_finish(e, &j3, 3500);
    is_double(j3.cost_usd, 2.0 * 1500 / 3600, 1e-9, "requeue: both attempts paid");
    is(spw_engine_requeue(e, &j3, 3600), -1, "requeue: a finished job is refused");

    /* Cloud: j4 fills the node; j5 (1 x A100) bursts at 4100 to a1 ($3/h),
     * starts at 4160, is preempted at 5960 (0.5 h: $1.50), queues with its
     * wait counted from 5960, bursts again at 6060, starts at 6120 and ends
     * at 9720 (1 h: $3).  Total $4.50. */
    job(&j4, "j4", 4000, 4, 10000, 1, a100);
    job(&j5, "j5", 4000, 1, 3600, 2, a100);
    spw_engine_submit(e, &j4, 4000);
    spw_engine_submit(e, &j5, 4000);
    sched(e, 4000);
    is(j5.state, SPW_JOB_QUEUED, "requeue: j5 waits");
    sched(e, 4100);
    is(j5.state, SPW_JOB_CLOUD, "requeue: j5 bursts at 4100");
    is(j5.offer, 1, "requeue: to a1");
    is_double(j5.start_s, 4160, 0, "requeue: after a 60 s boot");
    is(spw_engine_requeue(e, &j5, 5960), 0, "requeue: j5 preempted at 5960");
    is_double(j5.cost_usd, 1.5, 1e-9, "requeue: half an hour of a1 paid");
    is_double(spw_engine_next_wakeup(e), 6060, 0, "requeue: the wait restarts at 5960");
    is((long)sched(e, 5960), 0, "requeue: the node is still full");
    is((long)sched(e, 6060), 1, "requeue: bursts again at 6060");
    is_double(j5.start_s, 6120, 0, "requeue: running again at 6120");
    spw_engine_finish(e, &j5, 9720);
    is_double(j5.cost_usd, 4.5, 1e-9, "requeue: $1.50 + $3.00");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j3);
    spw_job_clear(&j4);
    spw_job_clear(&j5);
}

static const spw_candidate_t *find(const spw_candidate_t *c, size_t n, spw_cand_kind_t k, int idx)
{
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == k && c[i].index == idx)
            return &c[i];
    return NULL;
}

static void test_explain(void)
{
    spw_fleet_t f;
    make_fleet(&f);
    spw_engine_t *e = engine(&f, "constant:100");
    uint64_t a100 = 1ULL << spw_models_find(&f.models, "A100");
    spw_job_t j4 = {0}, j6 = {0};
    spw_candidate_t c[8];

    job(&j4, "j4", 0, 4, 10000, 0, a100);
    spw_engine_submit(e, &j4, 0);
    sched(e, 0);
    /* j6: 2 x A100 for 1 h while the node is full. */
    job(&j6, "j6", 6000, 2, 3600, 1, a100);
    /* A job on one node cannot take two 1-GPU instances of a1. */
    size_t n = spw_engine_explain(e, &j6, 6000, c, 8);
    const spw_candidate_t *one = find(c, n, SPW_CAND_CLOUD, 1);
    ok(one && !one->ok && strstr(one->why, "a1 has 1 GPU per instance; the job's 2 GPUs must be "
                                 "on one node"), "explain: gang: %s", one ? one->why : "-");
    j6.gpus_per_node = 1;   /* it may span 1-GPU nodes */
    n = spw_engine_explain(e, &j6, 6000, c, 8);
    is((long)n, 5, "explain: 1 pool + the wait + 3 offers");
    const spw_candidate_t *pool = find(c, n, SPW_CAND_ONPREM, 0);
    ok(pool && !pool->ok, "explain: the pool does not fit now");
    ok(pool && strstr(pool->why, "most free on a node of pool a is 0"), "explain: pool reason: %s",
       pool ? pool->why : "-");
    const spw_candidate_t *wait = find(c, n, SPW_CAND_WAIT, -1);
    ok(wait && wait->est_start_s == 6100, "explain: it would burst after 100 s");
    const spw_candidate_t *t4 = find(c, n, SPW_CAND_CLOUD, 0);
    ok(t4 && !t4->ok && strstr(t4->why, "has T4 GPUs; the job accepts A100"),
       "explain: x4 excluded by model: %s", t4 ? t4->why : "-");
    ok(t4 && isnan(t4->est_cost_usd), "explain: no cost for an excluded model");
    const spw_candidate_t *a1 = find(c, n, SPW_CAND_CLOUD, 1);
    ok(a1 && a1->ok && a1->instances == 2, "explain: a1 chosen, 2 instances");
    ok(a1 && fabs(a1->est_cost_usd - 6.0) < 1e-9, "explain: 2 x $3 x 1 h = $6");
    ok(a1 && a1->est_start_s == 6060, "explain: it would start after the 60 s boot");
    const spw_candidate_t *a4 = find(c, n, SPW_CAND_CLOUD, 2);
    ok(a4 && !a4->ok && strstr(a4->why, "$10 for the work (at $10/h), more than the chosen offer's $6"),
       "explain: a4 (A100-80GB) is dearer: %s", a4 ? a4->why : "-");
    is((long)spw_engine_explain(e, &j6, 6000, c, 2), 5, "explain: the total is returned even past max");

    /* Queued: the wait candidate gives its burst time. */
    spw_engine_submit(e, &j6, 6000);
    sched(e, 6000);
    n = spw_engine_explain(e, &j6, 6050, c, 8);
    wait = find(c, n, SPW_CAND_WAIT, -1);
    ok(wait && wait->est_start_s == 6100 && strstr(wait->why, "bursts at t=6100"),
       "explain: queued job bursts at 6100: %s", wait ? wait->why : "-");
    spw_engine_destroy(e);

    /* never: every offer is excluded by the policy. */
    e = engine(&f, "never");
    spw_job_clear(&j6);
    job(&j6, "j6b", 0, 2, 3600, 0, a100);
    n = spw_engine_explain(e, &j6, 0, c, 8);
    pool = find(c, n, SPW_CAND_ONPREM, 0);
    ok(pool && pool->ok && pool->est_start_s == 0, "explain/never: the empty pool fits now");
    a1 = find(c, n, SPW_CAND_CLOUD, 1);
    ok(a1 && !a1->ok && strstr(a1->why, "never"), "explain/never: offers excluded: %s",
       a1 ? a1->why : "-");
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&j4);
    spw_job_clear(&j6);
}

/* Never buy what cannot finish (issue 24).  The fleet of make_fleet with
 * the T4 offer x4 at $1/h and A100 the reference: a T4 runs at 0.16, so an
 * hour of A100 work takes 22,500 s there and costs 4 GPUs... $1/h x 6.25 h
 * = $6.25, less than a4's $10 for the hour (A100-80GB at speed >= 1). */
static void test_finish(void)
{
    spw_fleet_t f;
    make_fleet(&f);
    f.offers[0].ondemand_usd_per_h = 1.0;
    f.perf.reference = dup("A100");
    f.perf.scale_pools = 1;
    spw_engine_t *e = engine(&f, "none");
    uint64_t a100 = 1ULL << spw_models_find(&f.models, "A100");
    spw_job_t fill = {0}, free_ = {0}, capped = {0}, late = {0}, hopeless = {0}, never = {0}, stuck = {0};
    spw_candidate_t c[8];

    /* The pool is full for good: every other job bursts at once (wait none). */
    job(&fill, "fill", 0, 4, 1e9, 0, a100);
    spw_engine_submit(e, &fill, 0);
    sched(e, 0);
    is(fill.state, SPW_JOB_ONPREM, "finish: the filler holds the pool");

    /* Nothing bounds it: the cheapest for the work, the T4, slow as it is. */
    job(&free_, "free", 10, 4, 3600, 1, 0);
    spw_engine_submit(e, &free_, 10);
    sched(e, 10);
    is(free_.offer, 0, "finish: without max_runtime the T4 offer x4 is cheapest for the work");

    /* max_runtime 2 h: 22,500 s on the T4 is over it; a4 finishes in 1 h. */
    job(&capped, "capped", 20, 4, 3600, 2, 0);
    capped.max_runtime_s = 7200;
    size_t n = spw_engine_explain(e, &capped, 20, c, 8);
    const spw_candidate_t *x4 = n > 2 ? &c[2] : NULL;
    ok(x4 && x4->kind == SPW_CAND_CLOUD && !x4->ok && strstr(x4->why, "x4 cannot finish") &&
           strstr(x4->why, "22500 s on T4") && strstr(x4->why, "7200 s"),
       "finish: explain says the T4 cannot finish within max_runtime: %s", x4 ? x4->why : "-");
    ok(n > 4 && c[4].ok && strstr(c[4].why, "the best allowed offer: 1 x a4"),
       "finish: explain picks a4: %s", n > 4 ? c[4].why : "-");
    spw_engine_submit(e, &capped, 20);
    sched(e, 20);
    is(capped.offer, 2, "finish: with max_runtime 2 h the engine buys a4, not the T4");

    /* Deadline 2 h after submit: the T4 would end at 30 + 60 + 22,500. */
    job(&late, "late", 30, 4, 3600, 3, 0);
    late.deadline_s = 30 + 7200;
    spw_engine_submit(e, &late, 30);
    sched(e, 30);
    is(late.offer, 2, "finish: a deadline the T4 would miss buys a4, which meets it");

    /* A deadline no offer meets excludes none: the cheapest still runs it. */
    job(&hopeless, "hopeless", 40, 4, 3600, 4, 0);
    hopeless.deadline_s = 40 + 100;
    spw_engine_submit(e, &hopeless, 40);
    sched(e, 40);
    is(hopeless.offer, 0, "finish: when every offer is late, lateness excludes none");

    /* 8 GPUs (4 a node) never fit the pool; 100 s of max_runtime fits no
     * offer. */
    job(&never, "never", 50, 8, 3600, 5, 0);
    never.gpus_per_node = 4;
    never.max_runtime_s = 100;
    spw_engine_submit(e, &never, 50);
    is(never.state, SPW_JOB_UNSCHEDULABLE, "finish: a job only the cloud could hold, and no "
                                           "offer could finish, is unschedulable at submit");
    is(never.reason, SPW_REASON_CANNOT_FINISH, "finish: its reason: %s",
       spw_reason_text(never.reason));

    /* It fits the pool: it waits for on-prem, not counted as held. */
    job(&stuck, "stuck", 60, 4, 3600, 6, 0);
    stuck.max_runtime_s = 100;
    spw_engine_submit(e, &stuck, 60);
    sched(e, 60);
    ok(stuck.state == SPW_JOB_QUEUED && stuck.reason == SPW_REASON_CANNOT_FINISH &&
           spw_job_rare(&stuck)->held == 0 && !stuck.by_budget,
       "finish: a job no offer can finish waits for on-prem (state %d, reason %s, held %u)",
       stuck.state, spw_reason_text(stuck.reason), spw_job_rare(&stuck)->held);
    spw_engine_destroy(e);
    spw_fleet_clear(&f);
    spw_job_clear(&fill);
    spw_job_clear(&free_);
    spw_job_clear(&capped);
    spw_job_clear(&late);
    spw_job_clear(&hopeless);
    spw_job_clear(&never);
    spw_job_clear(&stuck);
}

int main(void)
{
    test_cancel();
    test_forget_left();
    test_requeue();
    test_explain();
    test_finish();
    return done_testing();
}
