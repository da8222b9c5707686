/* bench_slurm_sync.c: what the Slurm backend's state sync costs with many
 * jobs in Slurm.  Run by bench/slurm_spillway.sh against its throwaway
 * cluster (SLURM_CONF set), after it submitted N jobs whose comments are
 * "bench.0" .. "bench.N-1":
 *
 *   build/bench/bench_slurm_sync N PARTITION
 *
 * finds (adopts) all N by token, then times REPS syncs (tick(): one
 * `squeue --json --states=all`, its parse, and the walk over N tracked
 * jobs), and the squeue command alone.  Prints one line of key=value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/slurm/slurm.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !getenv("SLURM_CONF")) {
        fprintf(stderr, "usage: SLURM_CONF=... bench_slurm_sync N PARTITION\n");
        return 2;
    }
    long n = atol(argv[1]);
    const int reps = 5;
    spw_error_t err;
    spw_slurm_opts_t o = {.partition = argv[2], .cmd_timeout_s = 120, .sync_interval_s = 1};
    spw_slurm_t *sb = spw_slurm_create(&o, &err);
    if (!sb) {
        fprintf(stderr, "bench_slurm_sync: %s\n", err.text);
        return 1;
    }
    double t0 = mono();
    long found = 0;
    for (long i = 0; i < n; i++) {
        char tok[64];
        spw_handle_t h;
        snprintf(tok, sizeof(tok), "bench.%ld", i);
        if (spw_slurm_ops.find(sb, tok, &h, &err) == 1)
            found++;
    }
    double find_s = mono() - t0;
    double sync_ms[8], squeue_ms[8], now = 1e9;
    for (int r = 0; r < reps; r++) {
        now += 2;
        double a = mono();
        spw_slurm_ops.tick(sb, now);
        sync_ms[r] = (mono() - a) * 1e3;
        const char *av[] = {"squeue", "--json", "--states=all", NULL};
        char *out = NULL;
        a = mono();
        spw_slurm_run(sb, av, NULL, &out, &err);
        squeue_ms[r] = (mono() - a) * 1e3;
        free(out);
    }
    qsort(sync_ms, reps, sizeof(double), cmp);
    qsort(squeue_ms, reps, sizeof(double), cmp);
    printf("slurm_sync jobs=%ld tracked=%zu find_all_s=%.3f sync_ms_best=%.1f sync_ms_median=%.1f "
           "squeue_json_ms_median=%.1f\n",
           n, spw_slurm_count(sb), find_s, sync_ms[0], sync_ms[reps / 2], squeue_ms[reps / 2]);
    spw_slurm_ops.destroy(sb);
    return found == n ? 0 : 1;
}
