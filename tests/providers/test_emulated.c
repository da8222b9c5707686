/* test_emulated.c: the emulated provider: boot delays and READY events, per-
 * second billing with hand-computed costs, release, injected, rate-driven and
 * trace-driven spot preemption, capacity limits, bad trace files, failed saves
 * that leave nothing behind, and reconcile() after a kill -9 and a new
 * provider made over the same state dir; made by name through the provider
 * registry, and its version 3 members through the table. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "providers/provider.h"
#include "providers/emulated/emulated.h"
#include "providers/registry.h"
#include "util/spot_trace.h"

static char tmp[1024];          /* scratch directory, removed at the end */
static const struct spw_provider_ops *ops = &spw_emulated_ops;

/* The offers every test uses:
 * 0: aws p3.2xlarge, $3.06/h on demand, $0.918/h spot, boots in 60 s;
 * 1: gcp a2-highgpu-1g, $2.00/h, no spot price, boots in 30 s;
 * 2: aws p3.2xlarge in another zone, $3.06 / $1.00, boots in 30 s (traces);
 * 3: azure NC6s_v3, $3.00 / $0.50, boots at once (rates). */
static char s_aws[] = "aws", s_gcp[] = "gcp", s_azure[] = "azure";
static char s_use1[] = "us-east-1", s_use1a[] = "us-east-1a", s_use1b[] = "us-east-1b";
static char s_usc1[] = "us-central1", s_usc1a[] = "us-central1-a";
static char s_eus[] = "eastus", s_empty[] = "";
static char s_p3[] = "p3.2xlarge", s_a2[] = "a2-highgpu-1g", s_nc[] = "Standard_NC6s_v3";
static spw_offer_t offers[4];

static void init_offers(void)
{
    offers[0] = (spw_offer_t){s_aws, s_use1, s_use1a, s_p3, -1, 1, 3.06, 0.918, 60, NULL, 0, 0};
    offers[1] = (spw_offer_t){s_gcp, s_usc1, s_usc1a, s_a2, -1, 1, 2.00, NAN, 30, NULL, 0, 0};
    offers[2] = (spw_offer_t){s_aws, s_use1, s_use1b, s_p3, -1, 1, 3.06, 1.00, 30, NULL, 0, 0};
    offers[3] = (spw_offer_t){s_azure, s_eus, s_empty, s_nc, -1, 1, 3.00, 0.50, 0, NULL, 0, 0};
}

static spw_emulated_t *make(const spw_offer_emulation_t *oo, size_t noo, uint64_t seed,
                            const char *state_dir, spw_error_t *err)
{
    spw_emulated_opts_t o = {
        .offers = offers, .noffers = 4, .offer_opts = oo, .noffer_opts = noo,
        .seed = seed, .state_dir = state_dir,
    };
    return spw_emulated_create(&o, err);
}

static int acquire(spw_emulated_t *em, size_t offer, uint32_t count, int spot,
                   const char *job, double now_s, spw_instance_t *out, spw_error_t *err)
{
    spw_acquire_t req = {.offer = offer, .count = count, .spot = spot, .job_id = job,
                         .now_s = now_s};
    return ops->acquire(em, &req, out, err);
}

/* Writes text to tmp/name and returns the path (static buffer per call site). */
static const char *write_file(const char *name, const char *text, char *path, size_t len)
{
    FILE *f;
    snprintf(path, len, "%s/%s", tmp, name);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
    return path;
}

static size_t count_state(spw_emulated_t *em, spw_instance_state_t st)
{
    spw_instance_t buf[64];
    size_t n = spw_emulated_list(em, buf, 64), c = 0;
    for (size_t k = 0; k < n && k < 64; k++)
        c += buf[k].state == st;
    return c;
}

static int find_inst(spw_emulated_t *em, const char *id, spw_instance_t *out)
{
    spw_instance_t buf[64];
    size_t n = spw_emulated_list(em, buf, 64);
    for (size_t k = 0; k < n && k < 64; k++)
        if (strcmp(buf[k].id, id) == 0) {
            *out = buf[k];
            return 1;
        }
    return 0;
}

/* ---- tests -------------------------------------------------------------- */

static void test_interface(void)
{
    ok(ops->version == SPW_PROVIDER_VERSION, "ops table has the current version");
    is_str(ops->name, "emulated", "ops name is 'emulated'");
    ok(ops->emulated == 1, "ops says it is emulated");
    is_str(spw_instance_state_name(SPW_INSTANCE_PREEMPTED), "preempted", "state names");
    is_str(spw_inst_event_name(SPW_INST_EV_READY), "ready", "event names");
    spw_instance_state_t st;
    ok(spw_instance_state_parse("ready", &st, NULL) == 0 && st == SPW_INSTANCE_READY,
       "state parse");
    spw_error_t err;
    ok(spw_instance_state_parse("gone", &st, &err) < 0 && strstr(err.text, "gone"),
       "unknown state names it: %s", err.text);
}

static void test_boot(void)
{
    spw_error_t err = {{0}};
    spw_emulated_t *em = make(NULL, 0, 1, NULL, &err);
    spw_instance_t in[1];
    spw_inst_event_t ev[8];

    ok(em != NULL, "create without options beyond offers: %s", err.text);
    ok(acquire(em, 0, 1, 0, "job-1", 1000, in, &err) == 0, "acquire 1 on-demand: %s",
       err.text);
    is_str(in[0].id, "emu-i-000001", "first id");
    is_str(in[0].job_id, "job-1", "job id recorded");
    is_str(in[0].provider, "aws", "provider copied");
    is_str(in[0].zone, "us-east-1a", "zone copied");
    is_str(in[0].instance_type, "p3.2xlarge", "type copied");
    ok(in[0].state == SPW_INSTANCE_BOOTING, "booting after acquire");
    is_double(in[0].launched_s, 1000, 0, "launched_s = now");
    is_double(in[0].ready_s, 1060, 0, "ready_s = now + boot delay");
    ok(isnan(in[0].ended_s), "ended_s is NAN while live");
    is_double(in[0].price_usd_per_h, 3.06, 0, "on-demand price");
    ok(in[0].spot == 0, "not spot");

    is(ops->poll(em, 1059.9, ev, 8), 0, "no event before the boot delay");
    is(ops->poll(em, 1075, ev, 8), 1, "one event after it");
    ok(ev[0].kind == SPW_INST_EV_READY, "it is READY");
    is_str(ev[0].instance_id, "emu-i-000001", "for the instance");
    is_str(ev[0].job_id, "job-1", "with its job");
    is_double(ev[0].time_s, 1060, 0, "at launch + boot delay, not at poll time");
    is(ops->poll(em, 2000, ev, 8), 0, "reported once");
    is(count_state(em, SPW_INSTANCE_READY), 1, "instance is ready in the list");

    /* max = 0 leaves events queued for the next call, and events come out
     * oldest first even when they were found in one late poll. */
    ok(acquire(em, 1, 1, 0, "job-2", 3000, in, &err) == 0, "acquire on offer 1");
    ok(acquire(em, 0, 1, 0, "job-3", 3000, in, &err) == 0, "acquire on offer 0");
    is(ops->poll(em, 4000, ev, 0), 0, "poll with max 0 returns nothing");
    is(ops->poll(em, 4000, ev, 1), 1, "then one at a time");
    is_str(ev[0].instance_id, "emu-i-000002", "30 s boot first");
    is_double(ev[0].time_s, 3030, 0, "at 3030");
    is(ops->poll(em, 4000, ev, 8), 1, "the other is still queued");
    is_str(ev[0].instance_id, "emu-i-000003", "60 s boot second");
    is_double(ev[0].time_s, 3060, 0, "at 3060");
    ops->destroy(em);
}

static void test_cost(void)
{
    spw_error_t err = {{0}};
    spw_emulated_t *em = make(NULL, 0, 1, NULL, &err);
    spw_instance_t in[2], cur;
    spw_inst_event_t ev[8];
    double total = 0;

    ok(acquire(em, 0, 2, 0, "train", 0, in, &err) == 0, "acquire 2 on-demand at $3.06/h");
    is_str(in[1].id, "emu-i-000002", "ids are consecutive");
    total = spw_instance_cost_usd(&in[0], 1800) + spw_instance_cost_usd(&in[1], 1800);
    is_double(total, 3.06, 1e-9, "2 x $3.06/h x 1800 s = $3.06");
    is_double(spw_instance_cost_usd(&in[0], 30), 3.06 * 30 / 3600, 1e-12,
              "boot time is billed (30 s into a 60 s boot)");
    is_double(spw_instance_cost_usd(&in[0], -5), 0, 0, "nothing before launch");

    ok(ops->release(em, &in[0], 1800, &err) == 0, "release one at 1800 s: %s", err.text);
    ok(find_inst(em, in[0].id, &cur) && cur.state == SPW_INSTANCE_RELEASED,
       "it is released");
    is_double(cur.ended_s, 1800, 0, "ended at 1800 s");
    is_double(spw_instance_cost_usd(&cur, 7200), 1.53, 1e-9,
              "released: billing stopped at $1.53");
    ok(find_inst(em, in[1].id, &cur) && spw_instance_state_live(cur.state), "other live");
    is_double(spw_instance_cost_usd(&cur, 3600), 3.06, 1e-9, "other keeps billing: $3.06 at 1 h");
    ok(ops->release(em, &in[0], 5000, &err) == 0, "releasing again is a no-op");
    ok(find_inst(em, in[0].id, &cur) && cur.ended_s == 1800, "end time unchanged");

    /* A release before the boot is polled: no READY for it afterwards. */
    is(ops->poll(em, 6000, ev, 8), 1, "the other's READY (found at 1800 s) is polled");
    ok(acquire(em, 0, 1, 0, "train", 6000, in, &err) == 0, "acquire another at 6000 s");
    ok(ops->release(em, &in[0], 6020, &err) == 0, "release it while booting");
    is(ops->poll(em, 7000, ev, 8), 0, "no READY for a released instance");

    spw_instance_t bogus = in[0];
    snprintf(bogus.id, sizeof(bogus.id), "emu-i-000777");
    errno = 0;
    ok(ops->release(em, &bogus, 100, &err) < 0 && errno == ENOENT,
       "release of an unknown instance: ENOENT");
    ok(strstr(err.text, "emu-i-000777") != NULL, "message names it: %s", err.text);
    snprintf(bogus.id, sizeof(bogus.id), "emu-i-1");
    ok(ops->release(em, &bogus, 100, &err) < 0 && errno == ENOENT,
       "a non-canonical id is not an instance");
    ops->destroy(em);
}

static void test_inject(void)
{
    spw_error_t err = {{0}};
    spw_emulated_t *em = make(NULL, 0, 1, NULL, &err);
    spw_instance_t in[2], cur;
    spw_inst_event_t ev[8];

    ok(acquire(em, 0, 1, 1, "spot-job", 0, in, &err) == 0, "acquire a spot instance");
    is_double(in[0].price_usd_per_h, 0.918, 0, "at the spot price");
    ok(in[0].spot == 1, "spot flag");
    is(ops->poll(em, 100, ev, 8), 1, "READY at 60");
    ok(spw_emulated_preempt(em, in[0].id, 500, &err) == 0, "admin preempt at 500: %s",
       err.text);
    is(ops->poll(em, 501, ev, 8), 1, "one event");
    ok(ev[0].kind == SPW_INST_EV_PREEMPTED, "PREEMPTED");
    is_str(ev[0].instance_id, in[0].id, "for the instance");
    is_double(ev[0].time_s, 500, 0, "at the injection time");
    ok(find_inst(em, in[0].id, &cur) && cur.state == SPW_INSTANCE_PREEMPTED, "preempted");
    is_double(spw_instance_cost_usd(&cur, 9999), 0.918 * 500 / 3600, 1e-12,
              "billing stopped at the preemption");
    errno = 0;
    ok(spw_emulated_preempt(em, in[0].id, 600, &err) < 0 && errno == ESRCH,
       "preempting it again: ESRCH (%s)", err.text);
    ok(spw_emulated_preempt(em, "emu-i-000042", 600, &err) < 0 && errno == ENOENT,
       "preempting an unknown instance: ENOENT");
    ok(ops->release(em, &in[0], 700, &err) == 0, "releasing a preempted instance is a no-op");
    ok(find_inst(em, in[0].id, &cur) && cur.state == SPW_INSTANCE_PREEMPTED &&
       cur.ended_s == 500, "still preempted at 500");

    /* Preempted while booting: PREEMPTED only, never READY. */
    ok(acquire(em, 0, 1, 0, "od-job", 1000, in, &err) == 0, "acquire on-demand");
    ok(spw_emulated_preempt(em, in[0].id, 1010, &err) == 0,
       "admin preempt works on on-demand too (emulated failure)");
    is(ops->poll(em, 2000, ev, 8), 1, "one event");
    ok(ev[0].kind == SPW_INST_EV_PREEMPTED && ev[0].time_s == 1010,
       "PREEMPTED at 1010, no READY");
    ops->destroy(em);
}

/* Acquires n spot instances on offer 3 at time 0 (rate-preempted) and returns
 * the preemption times in instance order in times[]. */
static int rate_run(uint64_t seed, size_t n, double rate_per_h, double *times)
{
    spw_offer_emulation_t oo = {.offer = 3, .preempt_rate_per_h = rate_per_h};
    spw_error_t err;
    spw_emulated_t *em = make(&oo, 1, seed, NULL, &err);
    spw_instance_t *in = calloc(1000, sizeof(*in));
    spw_inst_event_t *ev = calloc(2 * n + 8, sizeof(*ev));
    size_t got, npre = 0;
    int rc = 0;

    for (size_t k = 0; k < n; k += 1000)
        if (acquire(em, 3, (uint32_t)(n - k < 1000 ? n - k : 1000), 1, "many", 0, in, &err) < 0)
            rc = -1;
    got = ops->poll(em, 1e12, ev, 2 * n + 8);
    for (size_t k = 0; k < got; k++) {
        if (ev[k].kind != SPW_INST_EV_PREEMPTED)
            continue;
        size_t idx = strtoul(ev[k].instance_id + 6, NULL, 10) - 1;
        if (idx < n)
            times[idx] = ev[k].time_s;
        npre++;
    }
    if (npre != n)
        rc = -1;
    free(in);
    free(ev);
    ops->destroy(em);
    return rc;
}

static void test_rate(void)
{
    const size_t n = 20000;
    double *a = calloc(n, sizeof(*a)), *b = calloc(n, sizeof(*b)), *c = calloc(n, sizeof(*c));
    double sum = 0;
    size_t same = 0, diff = 0;

    ok(rate_run(42, n, 2.0, a) == 0, "%zu spot instances at 2 preemptions/h all preempted", n);
    ok(rate_run(42, n, 2.0, b) == 0, "again with the same seed");
    ok(rate_run(43, n, 2.0, c) == 0, "and with another seed");
    for (size_t k = 0; k < n; k++) {
        sum += a[k];
        same += a[k] == b[k];
        diff += a[k] != c[k];
    }
    is(same, n, "same seed: identical preemption times");
    ok(diff > n * 9 / 10, "another seed: different times (%zu of %zu differ)", diff, n);
    is_double(sum / n, 1800, 1800 * 0.03, "mean time to preemption ~ 1 / rate = 1800 s "
              "(got %.1f)", sum / n);

    /* On-demand instances of the same offer never draw a preemption. */
    spw_offer_emulation_t oo = {.offer = 3, .preempt_rate_per_h = 1000};
    spw_error_t err;
    spw_emulated_t *em = make(&oo, 1, 7, NULL, &err);
    spw_instance_t in[50];
    spw_inst_event_t ev[128];
    size_t got, pre = 0;
    ok(acquire(em, 3, 50, 0, "od", 0, in, &err) == 0, "50 on-demand on the rated offer");
    got = ops->poll(em, 1e9, ev, 128);
    for (size_t k = 0; k < got; k++)
        pre += ev[k].kind == SPW_INST_EV_PREEMPTED;
    is(got, 50, "50 READY events");
    is(pre, 0, "no on-demand instance preempted by a rate of 1000/h");
    ops->destroy(em);
    free(a);
    free(b);
    free(c);
}

static void test_trace(void)
{
    char path[PATH_MAX], path2[PATH_MAX];
    spw_error_t err = {{0}};
    spw_instance_t in[4], od[1], cur;
    spw_inst_event_t ev[16];
    size_t n, npre = 0;

    write_file("drop.json",
               "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [2, 2, 2, 0, 0, 2]}",
               path, sizeof(path));
    spw_offer_emulation_t oo = {.offer = 2, .trace_path = path, .trace_start_s = 0};
    spw_emulated_t *em = make(&oo, 1, 1, NULL, &err);
    ok(em != NULL, "create with a trace: %s", err.text);
    ok(acquire(em, 2, 2, 1, "sj", 10, in, &err) == 0, "2 spot instances at 10 s (tick 0: 2)");
    errno = 0;
    ok(acquire(em, 2, 1, 1, "sj", 20, in + 2, &err) < 0 && errno == EAGAIN,
       "a third spot instance: EAGAIN");
    ok(strstr(err.text, "no spot capacity") && strstr(err.text, path),
       "message says so and names the trace: %s", err.text);
    ok(acquire(em, 2, 1, 0, "odj", 20, od, &err) == 0, "on-demand of the same offer is fine");
    n = ops->poll(em, 179.9, ev, 16);
    is(n, 3, "three READY events before tick 3");
    for (size_t k = 0; k < n; k++)
        npre += ev[k].kind == SPW_INST_EV_PREEMPTED;
    is(npre, 0, "no preemption before tick 3");
    n = ops->poll(em, 185, ev, 16);
    is(n, 2, "two events once availability drops to 0 at tick 3");
    ok(n == 2 && ev[0].kind == SPW_INST_EV_PREEMPTED && ev[1].kind == SPW_INST_EV_PREEMPTED,
       "both PREEMPTED");
    ok(n == 2 && ev[0].time_s == 180 && ev[1].time_s == 180, "both at 3 x gap = 180 s");
    ok(n == 2 && strcmp(ev[0].instance_id, "emu-i-000001") == 0 &&
       strcmp(ev[1].instance_id, "emu-i-000002") == 0, "the two spot instances");
    ok(find_inst(em, od[0].id, &cur) && cur.state == SPW_INSTANCE_READY,
       "the on-demand instance is untouched");
    errno = 0;
    ok(acquire(em, 2, 1, 1, "sj", 200, in, &err) < 0 && errno == EAGAIN,
       "no spot at tick 3 either");
    ok(acquire(em, 2, 2, 1, "sj", 300, in, &err) == 0, "spot again at tick 5 (2 available)");
    ok(acquire(em, 2, 2, 1, "sj", 360, in + 2, &err) < 0 && errno == EAGAIN,
       "the trace repeats: tick 6 is tick 0 (2 available, 2 held)");
    ops->destroy(em);

    /* A poll that comes late still reports the preemption at its tick. */
    em = make(&oo, 1, 1, NULL, &err);
    ok(acquire(em, 2, 2, 1, "sj", 10, in, &err) == 0, "2 spot at 10 s, fresh provider");
    n = ops->poll(em, 1000, ev, 16);
    npre = 0;
    for (size_t k = 0; k < n; k++)
        if (ev[k].kind == SPW_INST_EV_PREEMPTED && ev[k].time_s == 180)
            npre++;
    is(npre, 2, "first poll at 1000 s: both PREEMPTED at 180 s");
    ok(n == 4 && ev[0].kind == SPW_INST_EV_READY && ev[0].time_s == 40,
       "after their READY at 40 s, in time order");
    ops->destroy(em);

    /* A partial drop preempts the newest; the oldest keeps running. */
    write_file("partial.json",
               "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [2, 2, 1, 1]}",
               path2, sizeof(path2));
    spw_offer_emulation_t oo2 = {.offer = 2, .trace_path = path2, .trace_start_s = 0};
    em = make(&oo2, 1, 1, NULL, &err);
    ok(acquire(em, 2, 1, 1, "old", 10, in, &err) == 0 &&
       acquire(em, 2, 1, 1, "new", 20, in + 1, &err) == 0, "spot at 10 s and at 20 s");
    n = ops->poll(em, 500, ev, 16);
    npre = 0;
    for (size_t k = 0; k < n; k++)
        if (ev[k].kind == SPW_INST_EV_PREEMPTED) {
            npre++;
            ok(strcmp(ev[k].instance_id, in[1].id) == 0 && ev[k].time_s == 120,
               "the newer one is preempted at 120 s");
        }
    is(npre, 1, "only one preempted when availability drops from 2 to 1");
    ok(find_inst(em, in[0].id, &cur) && cur.state == SPW_INSTANCE_READY,
       "the older one survives, and the return to 2 at tick 4 changes nothing");
    ops->destroy(em);

    /* The mean over a real shared trace is not the point here; one loads. */
    spw_spot_trace_t t = {0};
    const char *real = "../shared/data/spot-traces/availability/1-node/aws-02-15-2023/"
                       "us-east-1a_v100_1.json";
    if (access(real, R_OK) == 0) {
        int rc = spw_spot_trace_load(real, &t, &err);
        ok(rc == 0 && t.gap_s == 195 && t.n > 1000, "a shared trace loads (gap %g, %zu ticks)",
           rc == 0 ? t.gap_s : 0, rc == 0 ? t.n : 0);
        spw_spot_trace_clear(&t);
    } else {
        ok(1, "# SKIP shared traces not found at %s", real);
    }
}

static void test_capacity(void)
{
    spw_offer_emulation_t oo = {.offer = 1, .capacity = 2};
    spw_error_t err = {{0}};
    spw_emulated_t *em = make(&oo, 1, 1, NULL, &err);
    spw_instance_t in[4];

    ok(acquire(em, 1, 3, 0, "big", 0, in, &err) < 0 && errno == E2BIG && strstr(err.text, "at most 2"),
       "3 instances of a 2-instance offer: E2BIG (never possible), all or nothing");
    is(spw_emulated_list(em, NULL, 0), 0, "nothing acquired");
    ok(acquire(em, 1, 2, 0, "a", 0, in, &err) == 0, "2 fit");
    errno = 0;
    ok(acquire(em, 1, 1, 0, "b", 10, in + 2, &err) < 0 && errno == EAGAIN,
       "a third: EAGAIN");
    ok(strstr(err.text, "no capacity") && strstr(err.text, "a2-highgpu-1g"),
       "message: %s", err.text);
    is(spw_emulated_list(em, NULL, 0), 2, "still 2 instances");
    ok(acquire(em, 0, 1, 0, "b", 10, in + 2, &err) == 0,
       "the daemon tries the next offer, which has room");
    is_str(in[2].id, "emu-i-000003", "failed acquires use up no id");
    ok(ops->release(em, &in[0], 20, &err) == 0, "release one");
    ok(acquire(em, 1, 1, 0, "b", 30, in + 3, &err) == 0, "then there is room again");

    errno = 0;
    ok(acquire(em, 1, 1, 1, "s", 30, in, &err) < 0 && errno == EINVAL &&
       strstr(err.text, "no spot price"), "spot on an offer with no spot price: %s", err.text);
    ok(acquire(em, 4, 1, 0, "s", 30, in, &err) < 0 && errno == EINVAL,
       "offer index out of range: %s", err.text);
    ok(acquire(em, 0, 0, 0, "s", 30, in, &err) < 0 && errno == EINVAL, "count 0: %s",
       err.text);
    ok(acquire(em, 0, 1, 0, "bad id/..", 30, in, &err) < 0 && errno == EINVAL,
       "a job id with '/': %s", err.text);
    ok(acquire(em, 0, 1, 0, "j", NAN, in, &err) < 0 && errno == EINVAL, "time NAN");
    is(spw_emulated_list(em, NULL, 0), 4, "failed requests changed nothing");
    ops->destroy(em);
}

static void test_bad_traces(void)
{
    static const struct {
        const char *name, *text, *want;
    } cases[] = {
        {"empty-data.json", "{\"metadata\":{\"gap_seconds\":60},\"data\":[]}", "empty"},
        {"gap-zero.json", "{\"metadata\":{\"gap_seconds\":0},\"data\":[1]}", "gap_seconds"},
        {"gap-negative.json", "{\"metadata\":{\"gap_seconds\":-5},\"data\":[1]}", "gap_seconds"},
        {"gap-missing.json", "{\"metadata\":{},\"data\":[1,2]}", "gap_seconds is missing"},
        {"no-metadata.json", "{\"data\":[1,2]}", "gap_seconds is missing"},
        {"gap-string.json", "{\"metadata\":{\"gap_seconds\":\"60\"},\"data\":[1]}", "number"},
        {"negative.json", "{\"metadata\":{\"gap_seconds\":60},\"data\":[1,-1]}",
         "data[1] is -1"},
        {"fraction.json", "{\"metadata\":{\"gap_seconds\":60},\"data\":[1,0.5]}",
         "data[1] is not an integer"},
        {"no-data.json", "{\"metadata\":{\"gap_seconds\":60}}", "\"data\" is missing"},
        {"malformed.json", "{\"metadata\": {\"gap_seconds\": 60},\n \"data\": [1, 2", ":2:"},
        {"array.json", "[1, 2]", "JSON object"},
    };
    char path[PATH_MAX];
    spw_error_t err;

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        write_file(cases[k].name, cases[k].text, path, sizeof(path));
        spw_offer_emulation_t oo = {.offer = 2, .trace_path = path};
        spw_emulated_t *em;
        memset(&err, 0, sizeof(err));
        em = make(&oo, 1, 1, NULL, &err);
        ok(!em && strstr(err.text, path) && strstr(err.text, cases[k].want),
           "%s: rejected naming the file: %s", cases[k].name, err.text);
        spw_emulated_destroy(em);
    }
    snprintf(path, sizeof(path), "%s/absent.json", tmp);
    spw_offer_emulation_t oo = {.offer = 2, .trace_path = path};
    ok(!make(&oo, 1, 1, NULL, &err) && strstr(err.text, path) &&
       strstr(err.text, "No such file"), "missing trace file: %s", err.text);
    write_file("ok.json", "{\"metadata\":{\"gap_seconds\":60},\"data\":[1]}", path,
               sizeof(path));
    spw_offer_emulation_t oo2 = {.offer = 1, .trace_path = path};
    ok(!make(&oo2, 1, 1, NULL, &err) && strstr(err.text, "no spot price"),
       "a trace on an offer without a spot price: %s", err.text);
    spw_offer_emulation_t dup[2] = {{.offer = 0, .capacity = 1}, {.offer = 0, .capacity = 2}};
    ok(!make(dup, 2, 1, NULL, &err) && strstr(err.text, "twice"), "settings twice: %s",
       err.text);
    spw_offer_emulation_t neg = {.offer = 0, .preempt_rate_per_h = -1};
    ok(!make(&neg, 1, 1, NULL, &err) && strstr(err.text, "preempt_rate_per_h"),
       "negative rate: %s", err.text);
}

/* The child's half of the restart test: acquires, releases, polls, and dies
 * by SIGKILL with its provider never destroyed. */
static void child_then_die(const char *dir)
{
    spw_offer_emulation_t oo = {.offer = 3, .preempt_rate_per_h = 0.5};
    spw_error_t err;
    spw_emulated_t *em = make(&oo, 1, 99, dir, &err);
    spw_instance_t in[8];
    spw_inst_event_t ev[8];

    if (!em)
        _exit(3);
    if (acquire(em, 0, 3, 0, "job-a", 0, in, &err) < 0 ||     /* 1, 2, 3 */
        acquire(em, 1, 1, 0, "job-b", 0, in + 3, &err) < 0 ||  /* 4 */
        acquire(em, 3, 1, 1, "job-c", 0, in + 4, &err) < 0)    /* 5: spot, rated */
        _exit(4);
    (void)ops->poll(em, 70, ev, 8);                            /* 1..5 ready */
    if (ops->release(em, &in[1], 100, &err) < 0)               /* 2 released */
        _exit(5);
    raise(SIGKILL);
    _exit(6);
}

static void test_restart(void)
{
    char dir[2048], path[PATH_MAX];
    spw_error_t err = {{0}};
    spw_emulated_t *em, *em2;
    spw_instance_t known[4], orphans[8], in[2];
    spw_inst_event_t ev[16];
    size_t norph = 99, n;
    int status;
    pid_t pid;

    snprintf(dir, sizeof(dir), "%s/state", tmp);
    mkdir(dir, 0700);
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        child_then_die(dir);
    waitpid(pid, &status, 0);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child provider killed with -9");

    err.text[0] = '\0';
    em = make(NULL, 0, 1, dir, &err);
    ok(em != NULL, "new provider over the same state dir: %s", err.text);
    if (!em)
        return;
    is(spw_emulated_list(em, NULL, 0), 5, "it remembers all 5 instances");
    ok(!make(NULL, 0, 1, dir, &err) && strstr(err.text, "in use"),
       "a second provider on the dir is refused: %s", err.text);

    /* What the daemon's store says: 1 ready, 2 ready (its release was not
     * committed), 3 booting (its READY was not committed), and an id this
     * provider never made. 4 and 5 are missing: the crash came between the
     * acquire and the commit. */
    ok(find_inst(em, "emu-i-000001", &known[0]) && find_inst(em, "emu-i-000002", &known[1]) &&
       find_inst(em, "emu-i-000003", &known[2]), "instances 1-3 are there");
    ok(known[0].state == SPW_INSTANCE_READY && known[1].state == SPW_INSTANCE_RELEASED &&
       known[1].ended_s == 100, "saved states survived the kill");
    known[1].state = SPW_INSTANCE_READY;
    known[1].ended_s = NAN;
    known[2].state = SPW_INSTANCE_BOOTING;
    known[3] = known[0];
    snprintf(known[3].id, sizeof(known[3].id), "emu-i-000123");

    err.text[0] = '\0';
    ok(ops->reconcile(em, known, 4, 200, orphans, 8, &norph, &err) == 0, "reconcile: %s",
       err.text);
    is(norph, 2, "two orphans");
    ok(norph == 2 && strcmp(orphans[0].id, "emu-i-000004") == 0 &&
       strcmp(orphans[1].id, "emu-i-000005") == 0,
       "exactly the instances the daemon did not list (4 and 5)");
    ok(norph == 2 && strcmp(orphans[1].job_id, "job-c") == 0 && orphans[1].spot == 1,
       "orphans carry their job and kind");
    err.text[0] = '\0';
    ok(ops->reconcile(em, known, 4, 200, orphans, 1, &norph, &err) == 0 && norph == 2 &&
       strcmp(orphans[0].id, "emu-i-000004") == 0,
       "with room for one: the first, and the count of all");
    ok(ops->reconcile(em, NULL, 0, 200, NULL, 0, &norph, &err) == 0 && norph == 4,
       "a daemon that knows nothing: every live instance is an orphan (1, 3, 4, 5)");

    n = ops->poll(em, 200, ev, 16);
    is(n, 3, "reconcile queued three events, once each despite three calls");
    ok(n == 3 && ev[0].kind == SPW_INST_EV_READY && strcmp(ev[0].instance_id, "emu-i-000003") == 0
       && ev[0].time_s == 60, "READY for 3 at 60 s (missed by the daemon)");
    ok(n == 3 && ev[1].kind == SPW_INST_EV_RELEASED &&
       strcmp(ev[1].instance_id, "emu-i-000002") == 0 && ev[1].time_s == 100,
       "RELEASED for 2 at 100 s");
    ok(n == 3 && ev[2].kind == SPW_INST_EV_LOST &&
       strcmp(ev[2].instance_id, "emu-i-000123") == 0 && ev[2].time_s == 200,
       "LOST for the unknown id at reconcile time");

    /* The rate-driven preemption drawn before the kill still happens, at the
     * same time a provider with the same seed would have drawn. */
    spw_offer_emulation_t oo = {.offer = 3, .preempt_rate_per_h = 0.5};
    spw_emulated_t *ref = make(&oo, 1, 99, NULL, &err);
    spw_inst_event_t rev[4];
    double want = NAN, got = NAN;
    acquire(ref, 3, 1, 1, "job-c", 0, in, &err);
    for (size_t k = 0, m = ops->poll(ref, 1e9, rev, 4); k < m; k++)
        if (rev[k].kind == SPW_INST_EV_PREEMPTED)
            want = rev[k].time_s;
    ops->destroy(ref);
    for (size_t k = 0, m = ops->poll(em, 1e9, ev, 16); k < m; k++)
        if (ev[k].kind == SPW_INST_EV_PREEMPTED && !strcmp(ev[k].instance_id, "emu-i-000005"))
            got = ev[k].time_s;
    ok(isfinite(want) && got == want, "saved spot instance preempted at its drawn time "
       "(%.3f s) after the restart", got);

    ok(acquire(em, 0, 1, 0, "job-d", 1e9, in, &err) == 0 && !strcmp(in[0].id, "emu-i-000006"),
       "ids continue after the restart (%s)", in[0].id);
    ops->destroy(em);

    /* A save that fails leaves nothing behind. */
    err.text[0] = '\0';
    em2 = make(NULL, 0, 1, dir, &err);
    ok(em2 != NULL, "provider made again: %s", err.text);
    n = spw_emulated_list(em2, NULL, 0);
    snprintf(path, sizeof(path), "%s/%s", dir, SPW_EMULATED_STATE_FILE);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s", dir, SPW_EMULATED_LOCK_FILE);
    unlink(path);
    ok(rmdir(dir) == 0, "state dir removed under it");
    errno = 0;
    ok(acquire(em2, 0, 1, 0, "job-e", 1e9 + 1, in, &err) < 0 && errno == ENOENT &&
       strstr(err.text, "cannot save"), "acquire fails when the state cannot be saved: %s",
       err.text);
    is(spw_emulated_list(em2, NULL, 0), n, "and acquires nothing");
    ok(find_inst(em2, "emu-i-000006", &in[1]) && in[1].state == SPW_INSTANCE_BOOTING,
       "instance 6 live");
    ok(ops->release(em2, &in[1], 1e9 + 2, &err) < 0, "release fails too");
    ok(find_inst(em2, "emu-i-000006", &in[1]) && spw_instance_state_live(in[1].state),
       "and leaves the instance live");
    ok(spw_emulated_preempt(em2, "emu-i-000006", 1e9 + 2, &err) < 0 &&
       find_inst(em2, "emu-i-000006", &in[1]) && spw_instance_state_live(in[1].state),
       "so does an admin preempt");
    mkdir(dir, 0700);
    ok(acquire(em2, 0, 1, 0, "job-e", 1e9 + 3, in, &err) == 0 &&
       !strcmp(in[0].id, "emu-i-000007"), "with the dir back, the next id is 7 (%s)", in[0].id);
    ops->destroy(em2);
    spw_emulated_t *em3 = make(NULL, 0, 1, dir, &err);
    ok(em3 && spw_emulated_list(em3, NULL, 0) == n + 1, "and the saved state has it");
    spw_emulated_destroy(em3);

    /* A corrupt state file stops creation, naming the file. */
    write_file("state/emulated.json", "{\"version\": 1, \"next_seq\": 0}", path, sizeof(path));
    ok(!make(NULL, 0, 1, dir, &err) && strstr(err.text, path) && strstr(err.text, "next_seq"),
       "corrupt state: %s", err.text);
    write_file("state/emulated.json", "{\"version\": 1,", path, sizeof(path));
    ok(!make(NULL, 0, 1, dir, &err) && strstr(err.text, path), "truncated state: %s",
       err.text);
    snprintf(path, sizeof(path), "%s/absent", tmp);
    ok(!make(NULL, 0, 1, path, &err) && strstr(err.text, "No such file"),
       "missing state dir: %s", err.text);
}

static void test_retention(void)
{
    spw_emulated_opts_t o = {.offers = offers, .noffers = 4, .retain_ended_s = 100};
    spw_error_t err;
    spw_emulated_t *em = spw_emulated_create(&o, &err);
    spw_instance_t in[2];
    spw_inst_event_t ev[4];

    ok(acquire(em, 0, 2, 0, "r", 0, in, &err) == 0, "acquire 2");
    ok(ops->release(em, &in[0], 10, &err) == 0, "release one at 10 s");
    ops->poll(em, 100, ev, 4);
    is(spw_emulated_list(em, NULL, 0), 2, "remembered within the retention");
    ops->poll(em, 111, ev, 4);
    is(spw_emulated_list(em, NULL, 0), 1, "forgotten after it; the live one stays");
    ok(ops->release(em, &in[0], 120, &err) < 0 && errno == ENOENT,
       "releasing a forgotten instance: ENOENT");
    ops->destroy(em);
    o.retain_ended_s = -1;
    ok(!spw_emulated_create(&o, &err) && strstr(err.text, "retain_ended_s"), "negative "
       "retention: %s", err.text);
}

static void rm_rf(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
}

/* 1 when the saved state file in dir mentions id. */
static int saved_has(const char *dir, const char *id)
{
    char path[1200];
    static char buf[1 << 16];
    snprintf(path, sizeof(path), "%s/emulated.json", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, id) != NULL;
}

/* Deferred saves: changes reach emulated.json at the flush only, once. */
static void test_deferred(void)
{
    char dir[sizeof(tmp) + 16];
    snprintf(dir, sizeof(dir), "%s/deferred", tmp);
    mkdir(dir, 0700);
    spw_error_t err = {{0}};
    spw_emulated_t *em = make(NULL, 0, 1, dir, &err);
    spw_instance_t in[40];
    ok(em != NULL, "a provider with a state dir: %s", err.text);
    if (!em)
        return;
    spw_emulated_defer_saves(em, 1);
    ok(acquire(em, 0, 40, 0, "j-deferred", 0, in, &err) == 0, "40 instances acquired");
    ok(!saved_has(dir, in[0].id), "deferred: the state file does not have them yet");
    ok(spw_emulated_flush(em, &err) == 0 && saved_has(dir, in[39].id),
       "the flush writes them all at once");
    for (int k = 0; k < 40; k++)
        ops->release(em, &in[k], 10, &err);
    ok(!saved_has(dir, "released"), "40 releases: the file is not rewritten for each");
    ok(spw_emulated_flush(em, &err) == 0 && saved_has(dir, "released"),
       "one flush writes the 40 releases");
    spw_emulated_destroy(em);
    em = make(NULL, 0, 1, dir, &err);
    spw_instance_t got[64];
    size_t n = em ? spw_emulated_list(em, got, 64) : 0;
    int all_released = n == 40;
    for (size_t k = 0; k < n && k < 64; k++)
        all_released &= got[k].state == SPW_INSTANCE_RELEASED;
    ok(all_released, "a new provider reads the flushed state: 40 released (%zu)", n);
    spw_emulated_destroy(em);
}

/* ---- the registry and the version 3 members ---------------------------- */

/* Made by name with the knobs the daemon gives it (providers/registry.h);
 * deferred saves, flush and the admin preempt through the table alone. */
static void test_registry(void)
{
    char dir[sizeof(tmp) + 16];
    snprintf(dir, sizeof(dir), "%s/registry", tmp);
    mkdir(dir, 0700);
    spw_offer_emulation_t oo = {.offer = 1, .capacity = 1};
    spw_provider_conf_t c = {.type = "oracle", .offers = offers, .noffers = 4, .state_dir = dir,
                             .offer_emulation = &oo, .noffer_emulation = 1, .seed = 7};
    const struct spw_provider_ops *pops = NULL;
    void *pv = NULL;
    spw_error_t err = {{0}};
    spw_instance_t in[2];
    spw_inst_event_t ev[8];

    ok(spw_provider_create(&c, &pops, &pv, &err) < 0 && !pops && !pv,
       "an unknown provider is refused, nothing made");
    char want[160] = "unknown provider 'oracle' (known: ";
    for (const char *const *nm = spw_provider_names; *nm; nm++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
                 nm == spw_provider_names ? "" : ", ", *nm);
    snprintf(want + strlen(want), sizeof(want) - strlen(want), ")");
    is_str(err.text, want, "the message lists every known name");
    is_str(spw_provider_names[0], "emulated", "the names known start with emulated");
    c.type = "emulated";
    c.boot_command = "/bin/true";
    ok(spw_provider_create(&c, &pops, &pv, &err) < 0 && strstr(err.text, "needs a hosts_dir"),
       "bad options are the provider's message: %s", err.text);
    c.boot_command = NULL;
    if (!ok(spw_provider_create(&c, &pops, &pv, &err) == 0 && pops == &spw_emulated_ops,
            "emulated by name")) {
        diag("%s", err.text);
        return;
    }
    ok(SPW_PROVIDER_HAS(pops, 3, preempt) && SPW_PROVIDER_HAS(pops, 3, defer_saves) &&
       SPW_PROVIDER_HAS(pops, 3, flush), "its table has preempt, defer_saves and flush");
    ok(acquire(pv, 1, 1, 0, "j-reg", 0, in, &err) == 0, "an instance of offer 1");
    errno = 0;
    ok(acquire(pv, 1, 1, 0, "j-reg2", 0, in + 1, &err) < 0 && errno == EAGAIN,
       "a second one: EAGAIN, the capacity of 1 given through the registry");
    pops->defer_saves(pv, 1);
    ok(acquire(pv, 0, 1, 1, "j-reg3", 0, in + 1, &err) == 0, "a spot instance of offer 0");
    ok(!saved_has(dir, in[1].id), "saves deferred through the table: not written yet");
    ok(pops->flush(pv, &err) == 0 && saved_has(dir, in[1].id), "the table's flush writes it");
    ok(pops->preempt(pv, in[1].id, 100, &err) == 0, "the table's preempt at 100");
    size_t n = pops->poll(pv, 200, ev, 8);
    ok(n >= 1 && ev[n - 1].kind == SPW_INST_EV_PREEMPTED &&
       strcmp(ev[n - 1].instance_id, in[1].id) == 0 && ev[n - 1].time_s == 100,
       "poll() reports it PREEMPTED at 100");
    errno = 0;
    ok(pops->preempt(pv, in[1].id, 300, &err) < 0 && errno == ESRCH,
       "preempting it again: ESRCH (%s)", err.text);
    ok(!saved_has(dir, "preempted"), "the preemption is not written before the flush");
    ok(pops->flush(pv, &err) == 0 && saved_has(dir, "preempted"), "and is after it");
    pops->destroy(pv);
}

/* ---- instances as hosts (boot_command) --------------------------------- */

/* Polls (at provider time now_s) until an event of kind about id comes, for
 * at most 10 s of real time (the boot command is a real child process). */
static int poll_for(spw_emulated_t *em, double now_s, spw_inst_event_kind_t kind,
                    const char *id)
{
    for (int tries = 0; tries < 500; tries++) {
        spw_inst_event_t ev[8];
        size_t n = ops->poll(em, now_s, ev, 8);
        for (size_t k = 0; k < n; k++)
            if (ev[k].kind == kind && strcmp(ev[k].instance_id, id) == 0)
                return 1;
        usleep(20000);
    }
    return 0;
}

/* Whether file tmp/hd/name has a line equal to line (10 s at most, polling
 * the provider meanwhile so that it reaps and starts its commands). */
static int file_gets(spw_emulated_t *em, double now_s, const char *name, const char *line)
{
    char path[1200], buf[256];
    snprintf(path, sizeof(path), "%s/hd/%s", tmp, name);
    for (int tries = 0; tries < 500; tries++) {
        spw_inst_event_t ev[8];
        ops->poll(em, now_s, ev, 8);
        FILE *f = fopen(path, "r");
        while (f && fgets(buf, sizeof(buf), f)) {
            buf[strcspn(buf, "\n")] = '\0';
            if (strcmp(buf, line) == 0) {
                fclose(f);
                return 1;
            }
        }
        if (f)
            fclose(f);
        usleep(20000);
    }
    return 0;
}

static void test_hosts(void)
{
    char script[1200], hd[1100], sd[1100], path[1200];
    spw_error_t err;
    spw_instance_t in[2], d;
    /* add: prints 10.9.9.N (N-th add) unless HOSTS_DIR/fail exists; sleeps
     * 2 s first when HOSTS_DIR/slow exists.  del: records the id. */
    write_file("boot.sh", "#!/bin/sh\n"
               "case $1 in\n"
               "add) [ -e \"$2/slow\" ] && sleep 2\n"
               "     [ -e \"$2/fail\" ] && { echo 'cannot boot' >&2; exit 1; }\n"
               "     echo \"$3\" >>\"$2/added\"; echo \"10.9.9.$(wc -l <\"$2/added\" | tr -d ' ')\" ;;\n"
               "del) echo \"$3\" >>\"$2/deleted\" ;;\n"
               "esac\n", script, sizeof(script));
    chmod(script, 0755);
    snprintf(hd, sizeof(hd), "%s/hd", tmp);
    snprintf(sd, sizeof(sd), "%s/hs", tmp);
    mkdir(hd, 0700);
    mkdir(sd, 0700);
    spw_emulated_opts_t o = {.offers = offers, .noffers = 4, .seed = 1, .state_dir = sd,
                             .boot_command = script, .hosts_dir = hd};

    spw_emulated_opts_t bad = o;
    bad.hosts_dir = NULL;
    ok(!spw_emulated_create(&bad, &err) && strstr(err.text, "needs a hosts_dir"),
       "boot_command without hosts_dir is refused: %s", err.text);
    bad = o;
    bad.boot_command = "/nonexistent/boot";
    ok(!spw_emulated_create(&bad, &err) && strstr(err.text, "not an executable"),
       "a boot_command that is not executable is refused: %s", err.text);

    spw_emulated_t *em = spw_emulated_create(&o, &err);
    if (!ok(em != NULL, "create with a boot_command: %s", err.text))
        return;
    ok(ops->version >= 2 && ops->describe, "the table has describe (version %d)", ops->version);

    /* Booted before its delay: an address, still BOOTING until the delay. */
    ok(acquire(em, 1, 1, 0, "j1", 0, in, &err) == 0, "acquire one instance (30 s boot)");
    ok(file_gets(em, 0, "added", in[0].id), "its boot command ran: add %s", in[0].id);
    /* The script appends to "added" before it prints the address: wait for
     * poll() to collect the address, not for the file. */
    for (int tries = 0; tries < 500; tries++) {
        spw_inst_event_t pe[8];
        ops->poll(em, 0, pe, 8);
        if (ops->describe(em, in[0].id, &d, &err) < 0 || d.addr[0])
            break;
        usleep(20000);
    }
    ok(ops->describe(em, in[0].id, &d, &err) == 0 && strcmp(d.addr, "10.9.9.1") == 0 &&
       d.state == SPW_INSTANCE_BOOTING, "it has address %s and is still booting", d.addr);
    ok(poll_for(em, 31, SPW_INST_EV_READY, in[0].id), "READY once its boot delay has passed");
    spw_emulated_flush(em, NULL);
    ok(saved_has(sd, "10.9.9.1"), "the address is in emulated.json");

    /* Delay passed but the host not answering yet: not READY before it does. */
    snprintf(path, sizeof(path), "%s/slow", hd);
    fclose(fopen(path, "w"));
    ok(acquire(em, 3, 1, 0, "j2", 40, in + 1, &err) == 0, "acquire one that boots at once");
    spw_inst_event_t ev[8];
    size_t n = ops->poll(em, 40, ev, 8);
    ok(n == 0 && ops->describe(em, in[1].id, &d, &err) == 0 && d.state == SPW_INSTANCE_BOOTING &&
       !d.addr[0], "its delay is 0 but its (slow) boot has not answered: still booting");
    ok(poll_for(em, 40, SPW_INST_EV_READY, in[1].id), "READY when the boot command answers");
    unlink(path);

    /* Release: the host is torn down (del), its address forgotten. */
    ok(ops->release(em, &in[0], 50, &err) == 0, "release %s", in[0].id);
    ok(file_gets(em, 50, "deleted", in[0].id), "`del` ran for it");
    /* The script writes "deleted" before it exits: wait for poll() to reap
     * it (slow under valgrind), not for the file. */
    for (int tries = 0; tries < 500; tries++) {
        spw_inst_event_t pe[8];
        ops->poll(em, 50, pe, 8);
        if (ops->describe(em, in[0].id, &d, &err) < 0 || !d.addr[0])
            break;
        usleep(20000);
    }
    ok(ops->describe(em, in[0].id, &d, &err) == 0 && !d.addr[0], "its address is gone");

    /* A boot that fails: the instance ends, LOST, and `del` cleans up. */
    snprintf(path, sizeof(path), "%s/fail", hd);
    fclose(fopen(path, "w"));
    spw_instance_t f;
    ok(acquire(em, 3, 1, 0, "j3", 60, &f, &err) == 0, "acquire one whose boot fails");
    ok(poll_for(em, 60, SPW_INST_EV_LOST, f.id), "poll reports it LOST");
    ok(ops->describe(em, f.id, &d, &err) == 0 && d.state == SPW_INSTANCE_RELEASED &&
       d.ended_s == 60, "it ended (released at 60, billing stops)");
    ok(file_gets(em, 61, "deleted", f.id), "and `del` cleaned up after it");
    unlink(path);

    /* A restart keeps the addresses of live instances. */
    spw_emulated_destroy(em);
    em = spw_emulated_create(&o, &err);
    ok(em && ops->describe(em, in[1].id, &d, &err) == 0 && strcmp(d.addr, "10.9.9.2") == 0 &&
       d.state == SPW_INSTANCE_READY, "after a restart %s is ready at %s", in[1].id, d.addr);
    errno = 0;
    ok(em && ops->describe(em, "emu-i-999999", &d, &err) < 0 && errno == ENOENT,
       "describe of an unknown id: ENOENT");
    spw_emulated_destroy(em);
}

/* Version 4: an account's id prefix and options, an acquisition token asked
 * again after a restart buys nothing, and refusals answered as FAILED events
 * with what their EC2 code blocks (health names an account-wide one). */
static void test_accounts(void)
{
    char dir[sizeof(tmp) + 16];
    snprintf(dir, sizeof(dir), "%s/acct", tmp);
    mkdir(dir, 0700);
    static const char *const opts[] = {"refuse.us-east-1a=InsufficientInstanceCapacity",
                                       "refuse.us-central1-a=AuthFailure", "capacity=5", NULL};
    spw_provider_conf_t c = {.type = "emulated", .offers = offers, .noffers = 4,
                             .state_dir = dir, .name = "lab", .options = opts, .seed = 1};
    const struct spw_provider_ops *pops = NULL;
    void *pv = NULL;
    spw_error_t err = {{0}};
    spw_instance_t in[4], again[4];
    spw_inst_event_t ev[8];
    if (!ok(spw_provider_create(&c, &pops, &pv, &err) == 0, "an account with options: %s",
            err.text))
        return;
    char why[256];
    is(pops->health(pv, why, sizeof(why)), 0, "healthy before any refusal");
    spw_acquire_t req = {.offer = 2, .count = 2, .job_id = "j-1", .now_s = 100,
                         .token = "d1.j-1.1.a1"};
    ok(pops->acquire(pv, &req, in, &err) == 0, "acquire with a token");
    is_str(in[0].id, "lab-i-000001", "ids start with the account's name");
    pops->destroy(pv);  /* a restart: the token is saved */
    ok(spw_provider_create(&c, &pops, &pv, &err) == 0, "made again over the same dir");
    req.now_s = 120;
    ok(pops->acquire(pv, &req, again, &err) == 0 && strcmp(again[0].id, in[0].id) == 0 &&
           strcmp(again[1].id, in[1].id) == 0, "the same token answers the same instances");
    is(spw_emulated_list(pv, again, 4), 2, "and buys nothing more");
    size_t nl = 0;
    ok(SPW_PROVIDER_HAS(pops, 4, list) && pops->list(pv, again, 4, &nl, &err) == 0 && nl == 2 &&
           strcmp(again[0].id, in[0].id) == 0, "list: the live instances");
    req.count = 3;
    ok(pops->acquire(pv, &req, again, &err) < 0 && errno == EINVAL,
       "the token with another count is refused: %s", err.text);
    req = (spw_acquire_t){.offer = 0, .count = 1, .job_id = "j-2", .now_s = 130,
                          .token = "d1.j-2.1.a1"};
    ok(pops->acquire(pv, &req, in, &err) == 0 && in[0].state == SPW_INSTANCE_BOOTING,
       "a refused zone: acquire answers booting instances");
    size_t n = pops->poll(pv, 131, ev, 8), k = 0;
    while (k < n && ev[k].kind != SPW_INST_EV_FAILED)
        k++;
    ok(k < n && strcmp(ev[k].instance_id, in[0].id) == 0 && ev[k].block == SPW_BLOCK_OFFER &&
           ev[k].block_s > 0 && strstr(ev[k].reason, "InsufficientInstanceCapacity in us-east-1a"),
       "poll: FAILED, blocking the offer: %s", k < n ? ev[k].reason : "none");
    spw_instance_t d;
    ok(pops->describe(pv, in[0].id, &d, &err) == 0 && spw_instance_cost_usd(&d, 1000) == 0,
       "a refused instance never bills");
    req = (spw_acquire_t){.offer = 1, .count = 1, .job_id = "j-3", .now_s = 140};
    ok(pops->acquire(pv, &req, in, &err) == 0, "an auth refusal is answered the same way");
    n = pops->poll(pv, 141, ev, 8);
    ok(n == 1 && ev[0].kind == SPW_INST_EV_FAILED && ev[0].block == SPW_BLOCK_ACCOUNT,
       "poll: FAILED, blocking the account");
    ok(pops->health(pv, why, sizeof(why)) != 0 && strstr(why, "AuthFailure"),
       "health names it: %s", why);
    pops->destroy(pv);
    static const char *const bad[] = {"refuse.x=NoSuchCode", NULL};
    c.options = bad;
    ok(spw_provider_create(&c, &pops, &pv, &err) < 0 && strstr(err.text, "EC2 error code"),
       "an unknown code is refused: %s", err.text);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/spw-emu-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 2;
    }
    init_offers();
    test_interface();
    test_boot();
    test_cost();
    test_inject();
    test_rate();
    test_trace();
    test_capacity();
    test_bad_traces();
    test_restart();
    test_retention();
    test_deferred();
    test_registry();
    test_hosts();
    test_accounts();
    rm_rf(tmp);
    return done_testing();
}
