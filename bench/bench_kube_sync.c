/* bench_kube_sync.c: the Kubernetes backend's state-sync cost with many
 * Jobs, against the fake API server (tests/fake/kube.py) that bench/kube.sh
 * starts and fills with suspended Jobs labelled spillway.dev/daemon=bench.
 *
 *   bench_kube_sync KUBECONFIG NJOBS PATCHER
 *
 * Prints one line of figures:
 * - list_*: one paged list of the NJOBS Jobs (pages of 500), what the
 *   backend did every second before it watched: CPU (this thread) and wall;
 * - find_cpu_ms: the backend's start-up: its watches list, and find()
 *   tracks each of the NJOBS Jobs by its launch token;
 * - event_cpu_us: process CPU per watch event while PATCHER (a command,
 *   run in the background) changes Jobs: the watch threads parse and apply
 *   each event, the caller ticks every 10 ms and applies the news to the
 *   NJOBS tracked Jobs; event_marginal_cpu_us: the same less what that
 *   time costs with no news (idle_cpu_ms_per_s);
 * - idle_cpu_ms_per_s: process CPU per second over 3 s with no change
 *   (bookmarks only, ticks every 10 ms). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/kubernetes/api.h"
#include "backends/kubernetes/kubeconfig.h"
#include "backends/kubernetes/kubernetes.h"

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU seconds of this process (RUSAGE_SELF) or thread (RUSAGE_THREAD). */
static double cpu_s(int who)
{
    struct rusage u;
    getrusage(who, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_kube_sync KUBECONFIG NJOBS PATCHER\n");
        return 2;
    }
    const char *kcpath = argv[1];
    unsigned njobs = (unsigned)strtoul(argv[2], NULL, 10);
    spw_error_t err = {{0}};

    /* One paged list, as the backend made every second before it watched. */
    spw_kubeconfig_t *kc = spw_kubeconfig_load(kcpath, NULL, &err);
    spw_kube_api_t *api = kc ? spw_kube_api_create(kc, 60, &err) : NULL;
    if (!api) {
        fprintf(stderr, "bench_kube_sync: %s\n", err.text);
        return 1;
    }
    json_t *items = NULL;
    char rv[64];
    double c0 = cpu_s(RUSAGE_THREAD), w0 = wall_s();
    if (spw_kube_list(api, "/apis/batch/v1/namespaces/default/jobs", "spillway.dev/daemon", 500,
                      0, &items, rv, sizeof(rv), &err) < 0) {
        fprintf(stderr, "bench_kube_sync: %s\n", err.text);
        return 1;
    }
    double list_cpu = cpu_s(RUSAGE_THREAD) - c0, list_wall = wall_s() - w0;
    size_t listed = json_array_size(items);
    json_decref(items);
    spw_kube_api_destroy(api);
    spw_kubeconfig_destroy(kc);
    if (listed != njobs) {
        fprintf(stderr, "bench_kube_sync: listed %zu Jobs, not %u\n", listed, njobs);
        return 1;
    }

    /* The backend: its watches list, find() tracks every Job. */
    char logdir[] = "/tmp/spw-bench-kube-XXXXXX";
    if (!mkdtemp(logdir))
        return 1;
    spw_kube_opts_t o = {.kubeconfig = kcpath, .ns = "default", .log_dir = logdir,
                         .image = "busybox:1.36", .timeout_s = 60};
    spw_kube_t *kb = spw_kube_create(&o, &err);
    if (!kb) {
        fprintf(stderr, "bench_kube_sync: %s\n", err.text);
        return 1;
    }
    double now = 1000;
    c0 = cpu_s(RUSAGE_SELF);
    spw_kube_ops.tick(kb, now);
    for (unsigned i = 0; i < njobs; i++) {
        char tok[64];
        spw_handle_t h;
        snprintf(tok, sizeof(tok), "bench.j-%06u.1", i + 1);
        if (spw_kube_ops.find(kb, tok, &h, &err) != 1) {
            fprintf(stderr, "bench_kube_sync: Job of token %s not found: %s\n", tok, err.text);
            return 1;
        }
    }
    double find_cpu = cpu_s(RUSAGE_SELF) - c0;
    /* Let the pods' and Nodes' first lists land. */
    spw_kube_watch_stats_t st;
    for (int k = 0; k < 500; k++) {
        spw_kube_watch_stats(kb, &st);
        if (st.lists >= 3)
            break;
        sleep_s(0.01);
    }

    /* Idle: bookmarks only. */
    c0 = cpu_s(RUSAGE_SELF);
    w0 = wall_s();
    while (wall_s() - w0 < 3) {
        now += 0.01;
        spw_kube_ops.tick(kb, now);
        sleep_s(0.01);
    }
    double idle = (cpu_s(RUSAGE_SELF) - c0) / (wall_s() - w0);

    /* Events: PATCHER changes Jobs; wait for every change to arrive. */
    spw_kube_watch_stats(kb, &st);
    uint64_t ev0 = st.job_events, lists0 = st.lists;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", argv[3], (char *)NULL);
        _exit(127);
    }
    int status = 0;
    c0 = cpu_s(RUSAGE_SELF);
    w0 = wall_s();
    int done = 0;
    uint64_t want = 0;
    for (;;) {
        now += 0.01;
        spw_kube_ops.tick(kb, now);
        if (!done && waitpid(pid, &status, WNOHANG) == pid) {
            done = 1;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench_kube_sync: the patcher failed\n");
                return 1;
            }
            /* It prints how many Jobs it changed on its stdout: read by
             * the script; here, the events must reach that count. */
            want = (uint64_t)strtoull(getenv("BENCH_KUBE_PATCHES") ? getenv("BENCH_KUBE_PATCHES")
                                                                    : "0",
                                      NULL, 10);
        }
        spw_kube_watch_stats(kb, &st);
        if (done && st.job_events - ev0 >= want)
            break;
        if (wall_s() - w0 > 600) {
            fprintf(stderr, "bench_kube_sync: %llu of %llu events after 600 s\n",
                    (unsigned long long)(st.job_events - ev0), (unsigned long long)want);
            return 1;
        }
        sleep_s(0.01);
    }
    double ev_cpu = cpu_s(RUSAGE_SELF) - c0, ev_wall = wall_s() - w0;
    uint64_t events = st.job_events - ev0;
    /* Beyond what the same time would have cost with no news. */
    double marginal = ev_cpu - idle * ev_wall;
    printf("bench_kube_sync jobs=%u list_cpu_ms=%.1f list_wall_ms=%.1f find_cpu_ms=%.1f "
           "idle_cpu_ms_per_s=%.2f events=%llu event_cpu_us=%.1f event_marginal_cpu_us=%.1f "
           "events_wall_s=%.2f relists_during_events=%llu\n",
           njobs, list_cpu * 1e3, list_wall * 1e3, find_cpu * 1e3, idle * 1e3,
           (unsigned long long)events, events ? ev_cpu * 1e6 / (double)events : 0.0,
           events ? (marginal > 0 ? marginal : 0) * 1e6 / (double)events : 0.0, ev_wall,
           (unsigned long long)(st.lists - lists0));
    spw_kube_destroy(kb);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", logdir);
    return system(cmd) == 0 ? 0 : 1;
}
