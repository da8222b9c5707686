/* fuzz_trace.c: libFuzzer driver for the trace readers (spillway CSV and the
 * Alibaba 2023 pod list), and for the simulator on whatever they accept.
 *
 * Input: the bytes of a trace file.  When the first byte is a control byte
 * (below 0x20 and not a tab, CR or LF) it is not part of the trace: its low
 * two bits force the format (1 = spillway, 2 = alibaba, else auto) and the
 * next three bits pick a policy variant for the simulation, so the fuzzer can
 * reach both readers and several engine paths from any seed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "core/model.h"
#include "sim/sim.h"
#include "sim/trace.h"

/* Simulations beyond this many jobs are skipped, to keep each run fast. */
#define MAX_SIM_JOBS 200
/* Time-series samples are taken (every SAMPLE_STEP_S) only when submit times
 * and the sum of runtimes stay below SAMPLE_SPAN_S, so a trace spanning
 * centuries does not turn into millions of samples. */
#define SAMPLE_STEP_S 3600.0
#define SAMPLE_SPAN_S 1e7

/* A tiny fleet: one pool of 2 nodes x 4 A100 and a flat cloud price. */
static const char fleet_yaml[] =
    "onprem:\n"
    "  - name: tiny\n"
    "    nodes: 2\n"
    "    gpus_per_node: 4\n"
    "    gpu: A100\n"
    "    cost_usd_per_gpu_h: 1.0\n"
    "cloud:\n"
    "  price_usd_per_gpu_h: 2.5\n"
    "  boot_delay_s: 60\n";

/* Loaded once; each input gets its own copy of the model table, so names a
 * trace interns never leak into the next input.  Reachable until exit. */
static spw_config_t base;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    spw_error_t err;
    if (spw_config_load_mem(&base, "<fuzz fleet>", fleet_yaml, sizeof(fleet_yaml) - 1, ".",
                            &err) < 0)
        abort();
    return 0;
}

static void policy_variant(unsigned v, spw_policy_t *p)
{
    static const char *const waits[] = {"compute:0.25", "never", "none", "constant:600"};
    spw_error_t err;
    spw_policy_default(p);
    if (spw_wait_parse(waits[v & 3], &p->wait, &err) < 0)
        abort();
    if (v & 4) {
        p->backfill = SPW_BACKFILL_EASY;
        p->queue = SPW_QUEUE_SJF;
        p->fit = SPW_FIT_BEST;
    }
}

/* What every sample must respect, whatever the trace. */
typedef struct bounds {
    size_t njobs;           /* jobs in the trace */
    uint64_t onprem_gpus;   /* GPUs of the fleet */
    uint64_t asked_gpus;    /* sum of the GPUs the jobs ask for */
    double last_t_s;        /* time of the previous sample */
} bounds_t;

static void on_sample(void *ctx, const spw_sim_sample_t *s)
{
    bounds_t *b = ctx;
    if (s->queued > b->njobs || s->onprem_busy_gpus > b->onprem_gpus
        || s->cloud_gpus > b->asked_gpus || !(s->cloud_usd_per_h > -1e-6)
        || !(s->t_s > b->last_t_s))
        abort();
    b->last_t_s = s->t_s;
}

static void run_sim(const spw_fleet_t *fleet, unsigned variant, spw_trace_t *tr)
{
    spw_policy_t pol;
    policy_variant(variant, &pol);
    bounds_t b = {.njobs = tr->njobs, .onprem_gpus = spw_fleet_gpus(fleet), .last_t_s = -1};
    double runtime_sum_s = 0;
    for (size_t i = 0; i < tr->njobs; i++) {
        b.asked_gpus += tr->jobs[i].gpus;
        runtime_sum_s += tr->runtime_s[i];
    }
    spw_sim_opts_t opts = {0};
    if (tr->njobs == 0
        || (tr->jobs[tr->njobs - 1].submit_s < SAMPLE_SPAN_S && runtime_sum_s < SAMPLE_SPAN_S)) {
        opts.step_s = SAMPLE_STEP_S;
        opts.on_sample = on_sample;
        opts.ctx = &b;
    }
    spw_sim_summary_t sum;
    spw_error_t err;
    if (spw_sim_run(fleet, &pol, tr->jobs, tr->runtime_s, tr->njobs, &opts, &sum, &err) < 0)
        return;
    /* Every job ends somewhere. */
    if (sum.jobs != tr->njobs || sum.jobs_onprem + sum.jobs_cloud + sum.jobs_unschedulable != sum.jobs)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spw_trace_format_t fmt = SPW_TRACE_AUTO;
    unsigned variant = 0;
    if (size > 0 && data[0] < 0x20 && data[0] != '\t' && data[0] != '\n' && data[0] != '\r') {
        fmt = (data[0] & 3) == 1 ? SPW_TRACE_SPILLWAY
            : (data[0] & 3) == 2 ? SPW_TRACE_ALIBABA
                                 : SPW_TRACE_AUTO;
        variant = (data[0] >> 2) & 7;
        data++;
        size--;
    }

    /* A fresh model table holding the fleet's names, so pool model indices
     * keep their meaning. */
    spw_models_t models = {0};
    spw_error_t err;
    for (int i = 0; i < base.fleet.models.n; i++)
        if (spw_models_intern(&models, base.fleet.models.name[i],
                              strlen(base.fleet.models.name[i]), &err) != i)
            abort();

    spw_trace_t tr;
    if (spw_trace_load_mem(&tr, "<fuzz>", (const char *)data, size, fmt, &models, &err) == 0) {
        if (tr.njobs <= MAX_SIM_JOBS) {
            spw_fleet_t fleet = base.fleet;
            fleet.models = models;
            run_sim(&fleet, variant, &tr);
        }
        spw_trace_free(&tr);
    }
    spw_models_clear(&models);
    return 0;
}
