/* bench_slurm_sync.c: what the Slurm backend's state sync costs with many
 * jobs in Slurm.  Run by bench/slurm_spillway.sh against its throwaway
 * cluster (SLURM_CONF set), after it submitted N jobs whose comments are
 * "bench.0" .. "bench.N-1":
 *
 *   build/bench/bench_slurm_sync N PARTITION
 *
 * finds (adopts) all N by token, then times REPS syncs: a tick() asks the
 * backend's worker for the listing (one text `squeue --states=all`), later
 * ticks (every ms) apply it (parse, walk over N tracked jobs).  It reports
 * the whole sync's latency (ask to applied), the caller's thread time (the
 * sum of those ticks: what the daemon's loop spends), the longest single
 * tick, and `squeue --json` of the same jobs alone for comparison.  Prints
 * one line of key=value. */
#include <stdint.h>
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
    double sync_ms[8], loop_ms[8], tick_max_ms = 0, squeue_ms[8], now = 1e9;
    for (int r = 0; r < reps; r++) {
        now += 2;
        uint64_t before = spw_slurm_syncs(sb);
        double a = mono(), spent = 0;
        while (spw_slurm_syncs(sb) == before && mono() - a < 120) {
            double t = mono();
            spw_slurm_ops.tick(sb, now);
            double dt = mono() - t;
            spent += dt;
            if (dt * 1e3 > tick_max_ms)
                tick_max_ms = dt * 1e3;
            if (spw_slurm_syncs(sb) == before)
                nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
        }
        sync_ms[r] = (mono() - a) * 1e3;
        loop_ms[r] = spent * 1e3;
        const char *av[] = {"squeue", "--json", "--states=all", NULL};
        char *out = NULL;
        a = mono();
        spw_slurm_run(sb, av, NULL, &out, &err);
        squeue_ms[r] = (mono() - a) * 1e3;
        free(out);
    }
    qsort(sync_ms, reps, sizeof(double), cmp);
    qsort(loop_ms, reps, sizeof(double), cmp);
    qsort(squeue_ms, reps, sizeof(double), cmp);
    printf("slurm_sync jobs=%ld tracked=%zu find_all_s=%.3f sync_ms_best=%.1f sync_ms_median=%.1f "
           "loop_thread_ms_median=%.1f longest_tick_ms=%.1f squeue_json_ms_median=%.1f\n",
           n, spw_slurm_count(sb), find_s, sync_ms[0], sync_ms[reps / 2], loop_ms[reps / 2],
           tick_max_ms, squeue_ms[reps / 2]);
    spw_slurm_ops.destroy(sb);
    return found == n ? 0 : 1;
}
