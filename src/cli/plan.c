/* plan.c: `spillway plan`: how much capacity to own and how long jobs should
 * wait before bursting, from a replay of history (docs/roi.md). */
#include <errno.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/plan.h"
#include "cli/plan_slurm.h"
#include "config/config.h"
#include "sim/plan.h"
#include "sim/trace.h"

const char spw_cli_plan_usage[] =
    "usage: spillway plan --trace FILE --config FILE [OPTIONS]\n"
    "\n"
    "Answers \"how much capacity should we own, and how long should jobs wait\n"
    "before bursting?\" from your history.  For every owned capacity (node count\n"
    "of one pool) and every wait policy, it replays the trace, searches the\n"
    "policy's parameter for your target wait, and prints two columns: the knife\n"
    "edge (the cheapest setting that meets the target) with its swing, and the\n"
    "robust setting (one that still meets it with the parameter moved +-10%)\n"
    "with its price; then the cost/wait frontier and the cheapest fleet that\n"
    "meets the target, with its total cost of ownership (cloud + owned capacity,\n"
    "used or idle, + egress) over a horizon.  The capital of the nodes already\n"
    "owned is sunk unless --capex asks what to buy.\n"
    "Owned capacity is priced by the pool's owned: model or cost_usd_per_gpu_h\n"
    "(docs/config.md, On-prem cost).\n"
    "\n"
    "  --trace FILE           jobs: spillway CSV or an Alibaba pod list (as for sim)\n"
    "  --format F             trace format: auto (default), spillway, alibaba\n"
    "  --config FILE          fleet, owned-cost model and policy\n"
    "  --pool NAME            the pool whose node count varies (default: the first)\n"
    "  --nodes LIST           node counts: 0,4,8,16 or FROM:TO:STEP (0:64:8);\n"
    "                         default: the pool's own count x 0, 0.5, 1, 1.5, 2\n"
    "  --waits LIST           wait policies to try (default none,compute,runtime;\n"
    "                         also never, constant, predict);\n"
    "                         a parameter is the top of its search: compute:4\n"
    "  --target-wait S:DUR    the wait to meet: mean:30m (default) or p90:2h\n"
    "  --horizon DUR          TCO horizon (default 3y); durations take s, m, h, d, y\n"
    "  --threads N            worker threads (default: every core)\n"
    "  -o, --output FMT       table (default) or json\n"
    "  --csv FILE             also write every configuration as CSV\n"
    "  --swing PCT            the parameter move the swing and the robust setting\n"
    "                         are measured over (default 10, i.e. +-10%)\n"
    "  --commit LIST          GPUs of the config's cloud commitment to try (its\n"
    "                         last one): 0,8,16,32 or FROM:TO:STEP; every owned\n"
    "                         capacity and wait is planned at each, and the\n"
    "                         cheapest commitment meeting the target is shown\n"
    "                         beside the node count (how much to commit)\n"
    "  --capex                nothing is owned yet: count every node's capital (the\n"
    "                         question is what to buy); by default the config's\n"
    "                         nodes of the pool are owned and their capital is sunk\n"
    "  -q, --quiet            no progress on stderr\n"
    "  --slurm PARTITION      run the sweep as a Slurm job array on PARTITION of\n"
    "                         the cluster of $SLURM_CONF (a part of the\n"
    "                         configurations per task) and print what a local run\n"
    "                         prints; the trace, the config and spillway must be at\n"
    "                         the same paths on the nodes (docs/roi.md, section 4b)\n"
    "  --slurm-tasks N        array tasks (default: one per configuration)\n"
    "  --slurm-dir DIR        where the run's files go, a directory the nodes share\n"
    "                         (default: the current directory); removed on success,\n"
    "                         kept with each task's log when a task fails\n"
    "  --slurm-bin PATH       the spillway the tasks run (default: this one's path)\n"
    "                         (with --slurm, --threads counts per task: default 1)\n"
    "\n"
    "Example, should we buy 64 more GPUs (8 nodes of 8) or burst?\n"
    "  spillway plan --trace jobs.csv --config fleet.yaml --nodes 4,8,12 \\\n"
    "      --target-wait mean:30m --horizon 3y\n";

static int die(const char *fmt, const char *a)
{
    fprintf(stderr, "spillway plan: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return 2;
}

/* Seconds from "90", "30m", "2h", "7d", "3y" (365.25 days); -1 if bad. */
static double dur(const char *s)
{
    char *end;
    double v = strtod(s, &end), unit = 1;
    if (end == s)
        return -1;
    switch (*end) {
    case 'y': unit = 365.25 * 86400; end++; break;
    case 'd': unit = 86400; end++; break;
    case 'h': unit = 3600; end++; break;
    case 'm': unit = 60; end++; break;
    case 's': end++; break;
    default: break;
    }
    if (*end || !isfinite(v) || v < 0)
        return -1;
    return v * unit;
}

/* Node counts from "0,4,8" or "FROM:TO:STEP" into a new array. */
static uint32_t *parse_nodes(const char *s, size_t *n)
{
    unsigned long a, b, st;
    char tail;
    *n = 0;
    if (sscanf(s, "%lu:%lu:%lu%c", &a, &b, &st, &tail) == 3) {
        if (!st || b < a || (b - a) / st > 10000 || b > 10000000)
            return NULL;
        uint32_t *v = spw_xmalloc(((b - a) / st + 1) * sizeof(uint32_t));
        for (unsigned long x = a; x <= b; x += st)
            v[(*n)++] = (uint32_t)x;
        return v;
    }
    size_t cap = 8;
    uint32_t *v = spw_xmalloc(cap * sizeof(uint32_t));
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long x = strtoul(p, &end, 10);
        if (end == p || errno || x > 10000000 || (*end && *end != ',')) {
            free(v);
            return NULL;
        }
        if (*n == cap)
            v = spw_xrealloc(v, (cap *= 2) * sizeof(uint32_t));
        v[(*n)++] = (uint32_t)x;
        p = *end ? end + 1 : end;
    }
    if (!*n) {
        free(v);
        return NULL;
    }
    return v;
}

static void on_progress(void *ctx, size_t done, size_t total)
{
    const double *t0 = ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double el = (double)ts.tv_sec + ts.tv_nsec / 1e9 - *t0;
    /* On a terminal a line that updates; elsewhere (a log) the last one. */
    if (isatty(2))
        fprintf(stderr, "\rspillway plan: %zu of %zu configurations (%.1f s)%s", done, total, el,
                done == total ? "\n" : "");
    else if (done == total)
        fprintf(stderr, "spillway plan: %zu configurations in %.1f s\n", total, el);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *usd(double v, char *buf, size_t len)
{
    if (fabs(v) >= 1e6)
        snprintf(buf, len, "$%.2fM", v / 1e6);
    else
        snprintf(buf, len, "$%.0f", v);
    return buf;
}

static const char *hms(double s, char *buf, size_t len)
{
    if (s < 120)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, len, "%.1f min", s / 60);
    else
        snprintf(buf, len, "%.2f h", s / 3600);
    return buf;
}

static void write_csv(FILE *f, const spw_plan_result_t *r, size_t n, const char *pool)
{
    fprintf(f, "pool,nodes,onprem_gpus,wait_policy,meets,wait_stat_s,wait_mean_s,wait_p90_s,"
               "cloud_usd,owned_usd,owned_idle_usd,egress_usd,total_usd,makespan_s,tco_usd,"
               "cost_per_useful_gpu_h,param_lo,param_hi,swing,frontier,sims,edge_breaks,"
               "robust_param,robust_meets,robust_wait_s,robust_tco_usd,sunk_usd,decide_usd\n");
    for (size_t i = 0; i < n; i++) {
        char w[64];
        spw_wait_format(&r[i].wait, w, sizeof(w));
        fprintf(f, "%s,%u,%llu,%s,%d,%.3f,%.3f,%.3f,%.6f,%.6f,%.6f,%.6f,%.6f,%.3f,%.6f,%.6f,"
                   "%.9g,%.9g,%.6f,%d,%u,%d,%.9g,%d,%.3f,%.6f,%.6f,%.6f\n",
                pool, r[i].nodes, (unsigned long long)r[i].onprem_gpus, w, r[i].meets,
                r[i].wait_s, r[i].wait_mean_s, r[i].wait_p90_s, r[i].cloud_usd, r[i].owned_usd,
                r[i].owned_idle_usd, r[i].egress_usd, r[i].total_usd, r[i].makespan_s,
                r[i].tco_usd, r[i].cost_per_useful_gpu_h, r[i].param_lo, r[i].param_hi,
                r[i].swing, r[i].frontier, r[i].sims, r[i].edge_breaks, r[i].robust_param,
                r[i].robust_meets, r[i].robust_wait_s, r[i].robust_tco_usd, r[i].sunk_usd,
                r[i].decide_usd);
    }
}

static void write_json(FILE *f, const spw_plan_result_t *r, size_t n, long best, const char *pool,
                       const char *stat, double target_s, double horizon_s, size_t njobs,
                       double seconds, int threads, uint64_t sims, const spw_plan_opts_t *po)
{
    fprintf(f, "{\"pool\": \"%s\", \"target\": {\"stat\": \"%s\", \"wait_s\": %.3f}, "
               "\"horizon_s\": %.0f, \"jobs\": %zu, \"seconds\": %.3f, \"threads\": %d, "
               "\"sims\": %llu, \"swing_frac\": %.6g, \"owned_nodes\": %u, \"capex\": %s, "
               "\"best\": %ld, \"configurations\": [",
            pool, stat, target_s, horizon_s, njobs, seconds, threads, (unsigned long long)sims,
            po->swing_frac, po->owned_nodes, po->capex ? "true" : "false", best);
    for (size_t i = 0; i < n; i++) {
        char w[64];
        spw_wait_format(&r[i].wait, w, sizeof(w));
        fprintf(f, "%s\n  {\"nodes\": %u, \"onprem_gpus\": %llu, \"wait_policy\": \"%s\", "
                   "\"meets\": %s, \"wait_stat_s\": %.3f, \"wait_mean_s\": %.3f, "
                   "\"wait_p90_s\": %.3f, \"cloud_usd\": %.6f, \"owned_usd\": %.6f, "
                   "\"owned_idle_usd\": %.6f, \"egress_usd\": %.6f, \"total_usd\": %.6f, "
                   "\"makespan_s\": %.3f, \"tco_usd\": %.6f, \"cost_per_useful_gpu_h\": %.6f, "
                   "\"param_lo\": %.9g, \"param_hi\": %.9g, \"swing\": %.6f, \"frontier\": %s, "
                   "\"sims\": %u, \"edge_breaks\": %s, \"robust_param\": %.9g, "
                   "\"robust_meets\": %s, \"robust_wait_s\": %.3f, \"robust_tco_usd\": %.6f, "
                   "\"sunk_usd\": %.6f, \"decide_usd\": %.6f}",
                i ? "," : "", r[i].nodes, (unsigned long long)r[i].onprem_gpus, w,
                r[i].meets ? "true" : "false", r[i].wait_s, r[i].wait_mean_s, r[i].wait_p90_s,
                r[i].cloud_usd, r[i].owned_usd, r[i].owned_idle_usd, r[i].egress_usd,
                r[i].total_usd, r[i].makespan_s, r[i].tco_usd, r[i].cost_per_useful_gpu_h,
                r[i].param_lo, r[i].param_hi, r[i].swing, r[i].frontier ? "true" : "false",
                r[i].sims, r[i].edge_breaks ? "true" : "false", r[i].robust_param,
                r[i].robust_meets ? "true" : "false", r[i].robust_wait_s, r[i].robust_tco_usd,
                r[i].sunk_usd, r[i].decide_usd);
    }
    fprintf(f, "\n]}\n");
}

static void write_table(FILE *f, const spw_plan_result_t *r, size_t n, long best,
                        const char *pool, const char *stat, double target_s, double horizon_s,
                        size_t njobs, double seconds, int threads, uint64_t sims,
                        const spw_plan_opts_t *po)
{
    char a[32], b[32], c[32], d[32], e[32], g[32], h[32], k[32];
    fprintf(f, "plan: %zu jobs; pool %s sized by node count; target %s wait <= %s; TCO over "
               "%.1f years\n",
            njobs, pool, stat, hms(target_s, a, sizeof(a)), horizon_s / (365.25 * 86400));
    if (po->capex)
        fprintf(f, "--capex: nothing owned yet; every node's capital counts (what to buy)\n\n");
    else
        fprintf(f, "%u nodes of %s already owned: their capital is sunk (from now = TCO less it; "
                   "--capex to count it)\n\n", po->owned_nodes, pool);
    fprintf(f, "%6s %6s  %-20s %10s %10s %12s %12s %12s %12s %10s %6s  %-20s %10s %12s  %s\n",
            "nodes", "GPUs", "knife edge", stat, "cloud", "owned", "of it idle", "TCO", "from now",
            "$/useful", "swing", "robust", stat, "robust TCO", "");
    for (size_t i = 0; i < n; i++) {
        char w[64], rw[64];
        spw_wait_t rob = {r[i].wait.kind, r[i].robust_param};
        spw_wait_format(&r[i].wait, w, sizeof(w));
        spw_wait_format(&rob, rw, sizeof(rw));
        fprintf(f, "%6u %6llu  %-20s %10s %10s %12s %12s %12s %12s %10.2f %5.1f%%  %-20s %10s "
                   "%12s  %s%s%s%s%s\n",
                r[i].nodes, (unsigned long long)r[i].onprem_gpus, w, hms(r[i].wait_s, a, sizeof(a)),
                usd(r[i].cloud_usd, b, sizeof(b)), usd(r[i].owned_usd, c, sizeof(c)),
                usd(r[i].owned_idle_usd, d, sizeof(d)), usd(r[i].tco_usd, e, sizeof(e)),
                usd(r[i].decide_usd, g, sizeof(g)), r[i].cost_per_useful_gpu_h, 100 * r[i].swing,
                rw, hms(r[i].robust_wait_s, k, sizeof(k)), usd(r[i].robust_tco_usd, h, sizeof(h)),
                r[i].meets ? "meets" : "too slow", r[i].edge_breaks ? ", edge" : "",
                r[i].meets && !r[i].robust_meets ? ", robust misses" : "",
                r[i].frontier ? ", frontier" : "", (long)i == best ? "  <- cheapest" : "");
    }
    fprintf(f, "\n(cloud, owned: over the replay; TCO: owned capacity per hour of the replay and "
               "cloud + egress per hour\n of the trace's arrivals, over the horizon; from now: "
               "TCO less the sunk capital of the nodes\n already owned; knife edge: the cheapest "
               "setting found that meets the target; swing: the\n largest cost change when its "
               "parameter moves %.0f%% either way (real runs; edge: +%.0f%% misses\n the target); "
               "robust: the setting that still meets it moved %.0f%% either way, priced at the\n "
               "dearest of the three; frontier: no configuration is both cheaper from now and "
               "faster)\n\n",
            100 * po->swing_frac, 100 * po->swing_frac, 100 * po->swing_frac);
    if (best < 0) {
        fprintf(f, "no configuration meets a %s wait of %s: try more nodes, more wait policies "
                   "or a looser --target-wait\n", stat, hms(target_s, a, sizeof(a)));
    } else {
        const spw_plan_result_t *x = &r[best];
        char w[64], rw[64];
        spw_wait_t rob = {x->wait.kind, x->robust_param};
        spw_wait_format(&x->wait, w, sizeof(w));
        spw_wait_format(&rob, rw, sizeof(rw));
        fprintf(f, "cheapest meeting the target: %u nodes of %s (%llu on-prem GPUs), wait %s\n",
                x->nodes, pool, (unsigned long long)x->onprem_gpus, w);
        fprintf(f, "  %s wait %s; TCO over the horizon %s, %s from now (in the replay: cloud %s, "
                   "owned %s, egress %s)\n",
                stat, hms(x->wait_s, a, sizeof(a)), usd(x->tco_usd, b, sizeof(b)),
                usd(x->decide_usd, g, sizeof(g)), usd(x->cloud_usd, c, sizeof(c)),
                usd(x->owned_usd, d, sizeof(d)), usd(x->egress_usd, e, sizeof(e)));
        if (x->param_hi > x->param_lo)
            fprintf(f, "  the wait parameter can be anywhere in %.4g .. %.4g for about the same "
                       "cost (within 2%%)\n", x->param_lo, x->param_hi);
        fprintf(f, "  robust (meets the target with its parameter %.0f%% either way): wait "
                   "%s, %s wait %s, TCO %s at the dearest of the three (%+.1f%%)%s\n",
                100 * po->swing_frac, rw, stat, hms(x->robust_wait_s, a, sizeof(a)),
                usd(x->robust_tco_usd, b, sizeof(b)),
                x->tco_usd > 0 ? 100 * (x->robust_tco_usd / x->tco_usd - 1) : 0,
                x->robust_meets ? "" : "; it misses the target somewhere in that range");
    }
    fprintf(f, "(planned %zu configurations, %llu simulations, in %.2f s on %d threads: "
               "%.1f configurations/s, %.3g job-simulations/s)\n",
            n, (unsigned long long)sims, seconds, threads, seconds > 0 ? n / seconds : 0,
            seconds > 0 ? (double)sims * (double)njobs / seconds : 0);
}

/* --commit: the commitment whose GPUs vary and the counts to try. */
typedef struct commit_plan {
    size_t offer;                /* fleet offer index of the commitment */
    uint32_t *gpus;              /* owned: committed GPU counts to try */
    size_t n;
} commit_plan_t;

/* Finds the config's last commitment and parses --commit into *cp; -1
 * with a sentence on stderr. */
static int commit_setup(commit_plan_t *cp, spw_fleet_t *f, const char *list, const char *config)
{
    size_t i = f->noffers;
    while (i > 0 && !spw_offer_committed(&f->offers[i - 1]))
        i--;
    if (i == 0) {
        fprintf(stderr, "spillway plan: --commit varies a commitment, and %s has none: add "
                        "cloud.commitments (docs/config.md)\n", config);
        return -1;
    }
    cp->offer = i - 1;
    if (!(cp->gpus = parse_nodes(list, &cp->n))) {
        fprintf(stderr, "spillway plan: --commit takes GPU counts such as 0,8,16 or "
                        "FROM:TO:STEP such as 0:32:8, got '%s'\n", list);
        return -1;
    }
    const spw_offer_t *o = &f->offers[cp->offer];
    for (size_t k = 0; k < cp->n; k++)
        if (cp->gpus[k] % o->gpus) {
            fprintf(stderr, "spillway plan: --commit: %u is not a multiple of %u, the GPUs of "
                            "one %s (commitment %s)\n", cp->gpus[k], o->gpus, o->instance_type,
                    o->commit_name);
            free(cp->gpus);
            cp->gpus = NULL;
            return -1;
        }
    return 0;
}

/* res[k * n .. k * n + n) is the plan at cp->gpus[k]. */
static void write_commit_json(FILE *f, const commit_plan_t *cp, const spw_fleet_t *fleet,
                              const spw_plan_result_t *res, size_t n, long best_commit)
{
    const spw_offer_t *o = &fleet->offers[cp->offer];
    fprintf(f, "{\"commitment\": \"%s\", \"usd_per_gpu_h\": %.6f, \"best_commit\": %ld, "
               "\"commit\": [", o->commit_name, o->commit_usd_per_gpu_h, best_commit);
    for (size_t k = 0; k < cp->n; k++) {
        const spw_plan_result_t *r = res + k * n;
        long b = spw_plan_best(r, n);
        fprintf(f, "%s\n  {\"gpus\": %u, \"best\": %ld", k ? "," : "", cp->gpus[k], b);
        if (b >= 0) {
            char w[64];
            spw_wait_format(&r[b].wait, w, sizeof(w));
            fprintf(f, ", \"nodes\": %u, \"wait_policy\": \"%s\", \"wait_stat_s\": %.3f, "
                       "\"cloud_usd\": %.6f, \"owned_usd\": %.6f, \"commit_usd\": %.6f, "
                       "\"commit_idle_usd\": %.6f, \"egress_usd\": %.6f, \"total_usd\": %.6f, "
                       "\"tco_usd\": %.6f, \"decide_usd\": %.6f",
                    r[b].nodes, w, r[b].wait_s, r[b].cloud_usd, r[b].owned_usd, r[b].commit_usd,
                    r[b].commit_idle_usd, r[b].egress_usd, r[b].total_usd, r[b].tco_usd,
                    r[b].decide_usd);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n], \"plan\": ");
}

static void write_commit_table(FILE *f, const commit_plan_t *cp, const spw_fleet_t *fleet,
                               const spw_plan_result_t *res, size_t n, long best_commit,
                               const char *stat)
{
    const spw_offer_t *o = &fleet->offers[cp->offer];
    char a[32], b[32], c[32], d[32], e[32], g[32];
    fprintf(f, "\nhow much to commit: commitment %s (%s %s %s, $%.4g per GPU-hour, paid used "
               "or idle), the cheapest configuration meeting the target at each size\n",
            o->commit_name, o->provider, o->region, o->instance_type, o->commit_usd_per_gpu_h);
    fprintf(f, "%8s %6s  %-20s %10s %12s %12s %12s %12s %12s\n", "commit", "nodes", "wait", stat,
            "cloud", "committed", "of it idle", "TCO", "from now");
    for (size_t k = 0; k < cp->n; k++) {
        const spw_plan_result_t *r = res + k * n;
        long x = spw_plan_best(r, n);
        if (x < 0) {
            fprintf(f, "%8u  no configuration meets the target\n", cp->gpus[k]);
            continue;
        }
        char w[64];
        spw_wait_format(&r[x].wait, w, sizeof(w));
        fprintf(f, "%8u %6u  %-20s %10s %12s %12s %12s %12s %12s%s\n", cp->gpus[k], r[x].nodes, w,
                hms(r[x].wait_s, a, sizeof(a)), usd(r[x].cloud_usd, b, sizeof(b)),
                usd(r[x].commit_usd, c, sizeof(c)), usd(r[x].commit_idle_usd, d, sizeof(d)),
                usd(r[x].tco_usd, e, sizeof(e)), usd(r[x].decide_usd, g, sizeof(g)),
                (long)k == best_commit ? "  <- cheapest" : "");
    }
    if (best_commit >= 0)
        fprintf(f, "commit %u GPUs of %s; the plan above is at that commitment\n",
                cp->gpus[best_commit], o->commit_name);
    else
        fprintf(f, "no commitment size meets the target\n");
}

int spw_cli_plan(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"trace", required_argument, NULL, 't'},   {"config", required_argument, NULL, 'c'},
        {"format", required_argument, NULL, 'F'},  {"pool", required_argument, NULL, 'p'},
        {"nodes", required_argument, NULL, 'n'},   {"waits", required_argument, NULL, 'w'},
        {"target-wait", required_argument, NULL, 'T'},
        {"horizon", required_argument, NULL, 'H'}, {"threads", required_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},  {"csv", required_argument, NULL, 'C'},
        {"quiet", no_argument, NULL, 'q'},         {"help", no_argument, NULL, 'h'},
        {"capex", no_argument, NULL, 'X'},         {"swing", required_argument, NULL, 'S'},
        {"slurm", required_argument, NULL, 'L'},   {"slurm-tasks", required_argument, NULL, 'N'},
        {"slurm-dir", required_argument, NULL, 'D'},
        {"slurm-bin", required_argument, NULL, 'B'},
        {"part", required_argument, NULL, 'P'},    {"commit", required_argument, NULL, 'K'},
        {NULL, 0, NULL, 0},
    };
    const char *trace = NULL, *config = NULL, *pool_name = NULL, *nodes_s = NULL;
    const char *waits_s = "none,compute,runtime", *target_s = "mean:30m", *csv = NULL;
    const char *commit_s = NULL;
    /* --slurm: the array's settings; a task runs with the options given
     * here, as given (horizon_s, swing_s, format_s). */
    const char *horizon_s = NULL, *swing_s = NULL, *format_s = NULL;
    spw_plan_slurm_t sl = {.threads = 1};
    int threads_given = 0, out_given = 0;
    size_t part = 0, nparts = 0;
    spw_trace_format_t fmt = SPW_TRACE_AUTO;
    double horizon = 3 * 365.25 * 86400;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    double swing = 0.10;
    int json = 0, quiet = 0, capex = 0, ch;
    spw_error_t err;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        switch (ch) {
        case 't': trace = optarg; break;
        case 'c': config = optarg; break;
        case 'F':
            format_s = optarg;
            if (spw_trace_format_parse(optarg, &fmt, &err) < 0)
                return die("%s", err.text);
            break;
        case 'p': pool_name = optarg; break;
        case 'n': nodes_s = optarg; break;
        case 'w': waits_s = optarg; break;
        case 'T': target_s = optarg; break;
        case 'H':
            horizon_s = optarg;
            if ((horizon = dur(optarg)) <= 0)
                return die("--horizon takes a duration such as 3y, 18m... got '%s'", optarg);
            break;
        case 'j': {
            char *end;
            threads = strtol(optarg, &end, 10);
            if (*end || threads < 1 || threads > 1024)
                return die("--threads takes a number from 1 to 1024, got '%s'", optarg);
            threads_given = 1;
            break;
        }
        case 'o':
            out_given = 1;
            if (strcmp(optarg, "json") == 0)
                json = 1;
            else if (strcmp(optarg, "table") != 0)
                return die("-o takes table or json, got '%s'", optarg);
            break;
        case 'C': csv = optarg; break;
        case 'q': quiet = 1; break;
        case 'X': capex = 1; break;
        case 'K': commit_s = optarg; break;
        case 'S': {
            char *end;
            swing_s = optarg;
            swing = strtod(optarg, &end) / 100;
            if (end == optarg || (*end && strcmp(end, "%") != 0) || !(swing > 0 && swing < 1))
                return die("--swing takes a percentage from 0 to 100 such as 10, got '%s'", optarg);
            break;
        }
        case 'L': sl.partition = optarg; break;
        case 'N': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 1000000)
                return die("--slurm-tasks takes a number of array tasks, 1 or more, got '%s'",
                           optarg);
            sl.tasks = (size_t)v;
            break;
        }
        case 'D': sl.parent = optarg; break;
        case 'B': sl.bin = optarg; break;
        case 'P': {
            /* Hidden: one part of the sweep, as a --slurm task runs it. */
            char tail;
            if (sscanf(optarg, "%zu/%zu%c", &part, &nparts, &tail) != 2 || nparts < 1 ||
                part >= nparts)
                return die("--part takes I/N with 0 <= I < N, got '%s'", optarg);
            break;
        }
        case 'h': fputs(spw_cli_plan_usage, stdout); return 0;
        default: fputs(spw_cli_plan_usage, stderr); return 2;
        }
    }
    if (optind < argc)
        return die("unexpected argument '%s' (see spillway plan --help)", argv[optind]);
    if (!trace || !config)
        return die("%s", "needs --trace FILE and --config FILE (see spillway plan --help)");
    if (threads < 1)
        threads = 1;
    if (nparts && (sl.partition || csv || out_given))
        return die("%s", "--part writes a part file for --slurm to merge: it takes no --slurm, "
                         "--csv or -o");
    if (!sl.partition && (sl.tasks || sl.parent || sl.bin))
        return die("%s", "--slurm-tasks, --slurm-dir and --slurm-bin go with --slurm PARTITION");
    if (threads_given)
        sl.threads = (int)threads;
    spw_plan_stat_t stat;
    const char *colon = strchr(target_s, ':');
    double target = colon ? dur(colon + 1) : -1;
    if (colon && (size_t)(colon - target_s) == 4 && strncmp(target_s, "mean", 4) == 0)
        stat = SPW_PLAN_MEAN;
    else if (colon && (size_t)(colon - target_s) == 3 && strncmp(target_s, "p90", 3) == 0)
        stat = SPW_PLAN_P90;
    else
        target = -1, stat = SPW_PLAN_MEAN;
    if (!(target > 0))
        return die("--target-wait takes mean:DURATION or p90:DURATION (mean:30m), got '%s'",
                   target_s);
    /* Wait policies. */
    spw_wait_t waits[16];
    size_t nwaits = 0;
    char *wl = spw_xstrdup(waits_s);
    for (char *save = NULL, *tok = strtok_r(wl, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char buf[64];
        /* A bare kind that takes a parameter gets 0: the default search. */
        snprintf(buf, sizeof(buf), "%s%s", tok,
                 strchr(tok, ':') || strcmp(tok, "never") == 0 || strcmp(tok, "none") == 0 ? ""
                                                                                          : ":0");
        if (nwaits == 16 || spw_wait_parse(buf, &waits[nwaits], &err) < 0) {
            free(wl);
            return die("--waits: %s", nwaits == 16 ? "at most 16 policies" : err.text);
        }
        nwaits++;
    }
    free(wl);
    spw_config_t cfg;
    if (spw_config_load(&cfg, config, &err) < 0) {
        fprintf(stderr, "spillway plan: %s\n", err.text);
        return 1;
    }
    int rc = 1;
    commit_plan_t cp = {0};    /* --commit's sizes; freed at out */
    uint32_t *nodes = NULL;
    size_t nnodes = 0, pool = 0;
    spw_plan_result_t *res = NULL;
    spw_trace_t tr;
    int have_trace = 0;
    if (!cfg.fleet.npools) {
        fprintf(stderr, "spillway plan: %s has no on-prem pool to size\n", config);
        goto out;
    }
    if (pool_name) {
        for (pool = 0; pool < cfg.fleet.npools; pool++)
            if (strcmp(cfg.fleet.pools[pool].name, pool_name) == 0)
                break;
        if (pool == cfg.fleet.npools) {
            fprintf(stderr, "spillway plan: --pool %s: %s has no such pool (it has %s", pool_name,
                    config, cfg.fleet.pools[0].name);
            for (size_t i = 1; i < cfg.fleet.npools; i++)
                fprintf(stderr, ", %s", cfg.fleet.pools[i].name);
            fprintf(stderr, ")\n");
            goto out;
        }
    }
    if (nodes_s) {
        if (!(nodes = parse_nodes(nodes_s, &nnodes))) {
            fprintf(stderr, "spillway plan: --nodes takes counts such as 0,4,8 or FROM:TO:STEP "
                            "such as 0:64:8, got '%s'\n", nodes_s);
            goto out;
        }
    } else {
        uint32_t own = cfg.fleet.pools[pool].nnodes;
        static const double f[5] = {0, 0.5, 1, 1.5, 2};
        nodes = spw_xmalloc(5 * sizeof(uint32_t));
        for (int k = 0; k < 5; k++)
            if (nnodes == 0 || nodes[nnodes - 1] != (uint32_t)(own * f[k]))
                nodes[nnodes++] = (uint32_t)(own * f[k]);
    }
    if (spw_trace_load(&tr, trace, fmt, &cfg.fleet.models, &err) < 0 ||
        (have_trace = 1, spw_trace_bind(&tr, &cfg.fleet.gov, cfg.spot.checkpoint_interval_s,
                                        NULL, &err) < 0)) {
        fprintf(stderr, "spillway plan: %s\n", err.text);
        goto out;
    }
    size_t n = nnodes * nwaits, njobs = tr.njobs;
    double t0 = mono_s();
    uint64_t runs = 0;
    spw_plan_opts_t po = {
        .pool = pool, .nodes = nodes, .nnodes = nnodes, .waits = waits, .nwaits = nwaits,
        .stat = stat, .target_s = target, .horizon_s = horizon, .threads = (int)threads,
        .on_progress = quiet ? NULL : on_progress, .ctx = &t0, .runs = &runs,
        .swing_frac = swing, .owned_nodes = capex ? 0 : cfg.fleet.pools[pool].nnodes,
        .capex = capex, .part = part, .nparts = nparts,
    };
    /* Without --commit, one plan at the config's commitments. */
    if (commit_s && commit_setup(&cp, &cfg.fleet, commit_s, config) < 0)
        goto out;
    if (commit_s && nparts && cp.n != 1) {
        fprintf(stderr, "spillway plan: --part runs one commitment size: give --commit one "
                        "GPU count\n");
        goto out;
    }
    size_t ncommit = commit_s ? cp.n : 1;
    res = spw_xcalloc(n * ncommit, sizeof(*res));
    if (sl.partition) {
        /* The nodes get absolute paths: their tasks run in this directory
         * only where it is shared too. */
        char *abs_trace = realpath(trace, NULL), *abs_config = abs_trace ? realpath(config, NULL)
                                                                         : NULL;
        if (!abs_config) {
            fprintf(stderr, "spillway plan: %s: %s\n", abs_trace ? config : trace,
                    strerror(errno));
            free(abs_trace);
            goto out;
        }
        /* Every option that shapes the sweep, as given here ("" marks a
         * flag, NULL one not given). */
        const char *const opt[][2] = {
            {"--format", format_s}, {"--pool", pool_name}, {"--nodes", nodes_s},
            {"--waits", waits_s},   {"--target-wait", target_s}, {"--horizon", horizon_s},
            {"--swing", swing_s},   {"--capex", capex ? "" : NULL},
        };
        /* Room for the trace, the config, the options, a commitment size
         * and the end. */
        const char *targs[sizeof(opt) / sizeof(opt[0]) * 2 + 7];
        size_t nt = 0;
        targs[nt++] = "--trace", targs[nt++] = abs_trace;
        targs[nt++] = "--config", targs[nt++] = abs_config;
        for (size_t k = 0; k < sizeof(opt) / sizeof(opt[0]); k++)
            if (opt[k][1]) {
                targs[nt++] = opt[k][0];
                if (opt[k][1][0])
                    targs[nt++] = opt[k][1];
            }
        targs[nt] = NULL;
        sl.args = (const char *const *)targs;
        if (!sl.tasks)
            sl.tasks = n;
        sl.quiet = quiet;
        /* With --commit, one array per commitment size, in turn; its tasks
         * run at that size (--commit N). */
        int src = 0;
        char gpus[16];
        for (size_t k = 0; k < ncommit && src == 0; k++) {
            uint64_t r_k = 0;
            if (commit_s) {
                snprintf(gpus, sizeof(gpus), "%u", cp.gpus[k]);
                targs[nt] = "--commit", targs[nt + 1] = gpus, targs[nt + 2] = NULL;
                if (!quiet)
                    fprintf(stderr, "spillway plan: commitment %s at %u GPUs (%zu of %zu)\n",
                            cfg.fleet.offers[cp.offer].commit_name, cp.gpus[k], k + 1, ncommit);
            }
            src = spw_plan_slurm_run(&sl, &po, res + k * n, &njobs, &r_k, &err);
            runs += r_k;
        }
        free(abs_trace);
        free(abs_config);
        if (src < 0) {
            fprintf(stderr, "spillway plan: %s\n", err.text);
            goto out;
        }
        po.threads = (int)sl.tasks * sl.threads;
    } else {
#ifdef __GLIBC__
        /* Every simulator run allocates and frees arrays of the trace's
         * size (megabytes): keep them in the heap, not mapped afresh and
         * unmapped each run, whose first touch of new pages costs a plan
         * of hundreds of runs 5-7% of its CPU. */
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
        for (size_t k = 0; k < ncommit; k++) {
            if (commit_s)
                cfg.fleet.offers[cp.offer].commit_gpus = cp.gpus[k];
            if (spw_plan_run(&cfg.fleet, &cfg.policy, tr.jobs, tr.runtime_s, tr.njobs, &po,
                             res + k * n, &err) < 0) {
                fprintf(stderr, "spillway plan: %s\n", err.text);
                goto out;
            }
        }
    }
    if (nparts) {
        rc = spw_plan_part_write(stdout, &po, res, tr.njobs, runs, &err) < 0 ? 1 : 0;
        if (rc)
            fprintf(stderr, "spillway plan: %s\n", err.text);
        goto out;
    }
    double seconds = mono_s() - t0;
    /* The commitment whose cheapest configuration meeting the target is
     * the cheapest from now; its plan is the one shown in full. */
    long best_commit = -1, best = -1;
    for (size_t k = 0; k < ncommit; k++) {
        long b = spw_plan_best(res + k * n, n);
        if (b >= 0 && (best_commit < 0 ||
                       res[k * n + b].decide_usd < res[best_commit * n + best].decide_usd)) {
            best_commit = (long)k;
            best = b;
        }
    }
    size_t shown = best_commit >= 0 ? (size_t)best_commit : 0;
    spw_plan_result_t *r = res + shown * n;
    uint64_t sims = 0;
    for (size_t i = 0; i < n * ncommit; i++)
        sims += res[i].sims;
    if (!quiet)
        fprintf(stderr, "spillway plan: %llu simulator runs gave the %llu simulations (the "
                        "rest were the same simulation as one already made)\n",
                (unsigned long long)runs, (unsigned long long)sims);
    if (!commit_s)
        best = spw_plan_best(r, n);
    const char *statname = stat == SPW_PLAN_P90 ? "p90" : "mean";
    if (csv) {
        FILE *f = fopen(csv, "w");
        if (!f) {
            fprintf(stderr, "spillway plan: %s: cannot write: %s\n", csv, strerror(errno));
            goto out;
        }
        write_csv(f, r, n, cfg.fleet.pools[pool].name);
        if (fclose(f) != 0) {
            fprintf(stderr, "spillway plan: %s: write failed\n", csv);
            goto out;
        }
    }
    if (json && commit_s)
        write_commit_json(stdout, &cp, &cfg.fleet, res, n, best_commit);
    if (json)
        write_json(stdout, r, n, best, cfg.fleet.pools[pool].name, statname, target, horizon,
                   njobs, seconds, po.threads, sims, &po);
    else
        write_table(stdout, r, n, best, cfg.fleet.pools[pool].name, statname, target, horizon,
                    njobs, seconds, po.threads, sims, &po);
    if (json && commit_s)
        fprintf(stdout, "}\n");
    else if (commit_s)
        write_commit_table(stdout, &cp, &cfg.fleet, res, n, best_commit, statname);
    rc = 0;
out:
    free(cp.gpus);
    free(res);
    free(nodes);
    if (have_trace)
        spw_trace_free(&tr);
    spw_config_free(&cfg);
    return rc;
}
