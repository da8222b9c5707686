/* bench_ui.c: what one sample of the dashboard's sampler (daemon/ui.c)
 * costs with a deep queue: the series part (jobs, pools, costs through the
 * daemon API, each holding the daemon's lock) and the telemetry part
 * (running nvidia-smi), for the claim that sampling every few seconds does
 * not hold up the scheduler.
 *
 *   build/bench/bench_ui [--queue N] [--samples S]
 *
 * A daemon over a temporary state dir (never started, so nothing runs and
 * no job is launched) gets N queued jobs (default 10,000), then S samples
 * (default 20) are timed.  Every result is one key=value line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "daemon/daemon.h"
#include "daemon/jobspec.h"
#include "daemon/telemetry.h"
#include "daemon/ui.h"

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long queue = 10000, samples = 20;
    static const struct option opts[] = {{"queue", required_argument, NULL, 'q'},
                                         {"samples", required_argument, NULL, 's'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'q')
            queue = atol(optarg);
        else if (c == 's')
            samples = atol(optarg);
        else
            return 2;
    }
    if (queue < 0 || samples < 1)
        return 2;
    char dir[] = "/tmp/spw-bench-ui-XXXXXX", state[128], yaml[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(state, sizeof(state), "%s/state", dir);
    int n = snprintf(yaml, sizeof(yaml),
                     "onprem:\n  - {name: local, nodes: 1, gpus_per_node: 8, gpu: A100, "
                     "cost_usd_per_gpu_h: 1.0}\n"
                     "teams:\n  - {name: ml, monthly_usd: 1000}\n"
                     "daemon:\n  state_dir: %s\n  gpus: slots\n", state);
    spw_config_t cfg;
    spw_error_t err;
    if (spw_config_load_mem(&cfg, "bench.yaml", yaml, (size_t)n, dir, &err) < 0) {
        fprintf(stderr, "bench_ui: %s\n", err.text);
        return 1;
    }
    spw_daemon_opts_t o = {.state_dir = state, .quiet = 1};
    spw_daemon_t *d = spw_daemon_create(&cfg, &o, &err);
    if (!d) {
        fprintf(stderr, "bench_ui: %s\n", err.text);
        return 1;
    }
    spw_caller_t admin = {.team = NULL, .admin = 1};
    static const char spec_text[] = "{\"run\": [\"true\"], \"gpus\": 1, \"team\": \"ml\"}";
    double t0 = mono_ms();
    for (long i = 0; i < queue; i++) {
        spw_jobspec_t spec;
        char id[SPW_STORE_ID_LEN];
        if (spw_jobspec_parse("bench", spec_text, sizeof(spec_text) - 1, &spec, &err) < 0 ||
            spw_daemon_submit(d, &admin, &spec, id, &err) != 201) {
            fprintf(stderr, "bench_ui: submit: %s\n", err.text);
            return 1;
        }
        spw_jobspec_free(&spec);
    }
    printf("setup queue=%ld submit_s=%.1f\n", queue, (mono_ms() - t0) / 1e3);

    spw_daemon_conf_t dc = cfg.daemon;
    spw_ui_t *u = spw_ui_create(d, &dc, 0);
    double *ms = malloc((size_t)samples * sizeof(double));
    for (long i = 0; i < samples; i++) {
        double a = mono_ms();
        spw_ui_sample(u, 1e9 + (double)i);
        ms[i] = mono_ms() - a;
    }
    qsort(ms, (size_t)samples, sizeof(double), cmp);
    printf("sample queue=%ld n=%ld median_ms=%.2f max_ms=%.2f\n", queue, samples,
           ms[samples / 2], ms[samples - 1]);
    /* The telemetry part alone: nvidia-smi, or its absence, from PATH. */
    spw_telemetry_t *t = spw_telemetry_create(d, &dc);
    for (long i = 0; i < samples; i++) {
        double a = mono_ms();
        spw_telemetry_poll(t, 1e9 + (double)i);
        ms[i] = mono_ms() - a;
    }
    qsort(ms, (size_t)samples, sizeof(double), cmp);
    printf("telemetry n=%ld median_ms=%.2f max_ms=%.2f\n", samples, ms[samples / 2],
           ms[samples - 1]);
    spw_telemetry_destroy(t);
    free(ms);
    spw_ui_destroy(u);
    spw_daemon_destroy(d);
    spw_config_free(&cfg);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
