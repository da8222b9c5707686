/* main.c: the `spillway` command: argument parsing and subcommand dispatch.
 * Entry points are the only place that prints or exits. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/plan.h"
#include "cli/policy.h"
#include "cli/report.h"
#include "cli/report_html.h"
#include "cli/serve.h"
#include "cli/slurm.h"
#include "cli/spotjob_report.h"
#include "config/config.h"
#include "sim/gen.h"
#include "sim/sim.h"
#include "sim/trace.h"

#include "util/names.h"
#include "util/version.h"

/* The example fleet used when no --config is given: one on-prem pool of
 * 4 nodes x 8 A100 and a flat cloud price. */
static const char default_config[] =
    "# embedded default: a small on-prem pool and a flat cloud price\n"
    "onprem:\n"
    "  - name: dc1\n"
    "    nodes: 4\n"
    "    gpus_per_node: 8\n"
    "    gpu: A100\n"
    "    cost_usd_per_gpu_h: 1.10\n"
    "cloud:\n"
    "  price_usd_per_gpu_h: 2.5\n"
    "  boot_delay_s: 0\n"
    "policy:\n"
    "  queue: fifo\n"
    "  scan: hol\n"
    "  backfill: none\n"
    "  fit: first\n"
    "  wait: compute:0.25\n";

static const char main_usage[] =
    "spillway " SPW_VERSION ": one queue over on-prem GPUs and the clouds.\n"
    "\n"
    "usage: spillway COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  sim       replay a job trace on a fleet and policy; report cost, waits, use\n"
    "  plan      how much to own and how long to wait before bursting: a sweep\n"
    "  gen       write a synthetic job trace (spillway CSV) to stdout\n"
    "  demo      generate a workload and compare burst policies on the example fleet\n"
    "  serve     run the orchestrator daemon: the queue, its HTTP API (docs/api.md)\n"
    "  policy    check a config's budgets, caps and rules; test where a job may run\n"
    "\n"
    "  submit    queue a job on the daemon: a YAML/JSON spec, or --gpus N -- COMMAND\n"
    "  queue     list jobs: state, where they run, for how long, what they cost\n"
    "  show      one job in full\n"
    "  cancel    cancel a job\n"
    "  explain   why a job is where it is: the decision and every candidate\n"
    "  logs      a job's stdout or stderr; -f follows it to the end\n"
    "  context   the daemon this client talks to: list, use NAME (a kubeconfig-like file)\n"
    "  pools     on-prem pools, cloud offers and the cloud instances up\n"
    "  costs     spend so far, on-prem and cloud, by team, provider and pool\n"
    "  audit     who did what: the daemon's audit log (admin)\n"
    "  instances every instance the cloud accounts hold, orphans marked (admin)\n"
    "  admin     administration: 'spillway admin preempt INSTANCE_ID',\n"
    "            'spillway admin node POOL/INDEX down|up'\n"
    "  slurm     Slurm helpers: 'spillway slurm nodes PARTITION', and resume /\n"
    "            suspend HOSTLIST as Slurm's power-saving programs (docs/slurm.md)\n"
    "\n"
    "  version   print the version\n"
    "  help      this text; 'spillway help COMMAND' for one command\n"
    "\n"
    "First steps:\n"
    "  spillway demo\n"
    "  spillway gen --jobs 2000 --rate 16 --runtime lognormal:1800:1.2 > jobs.csv\n"
    "  spillway sim --trace jobs.csv --compare never,none,constant:3600,compute:0.25\n"
    "  spillway sim --trace jobs.csv --config examples/fleet.yaml -o json\n"
    "\n"
    "With a daemon (the client commands find it at $SPILLWAY_URL, else\n"
    "http://127.0.0.1:8470, and send $SPILLWAY_TOKEN or the token in the file\n"
    "$SPILLWAY_TOKEN_FILE):\n"
    "  spillway submit --gpus 2 --name train -- python train.py --epochs 3\n"
    "  spillway queue\n"
    "  spillway logs -f j-000001\n"
    "\n"
    "Docs: docs/simulator.md (semantics), docs/config.md (fleet and policy file).\n";

static const char sim_usage[] =
    "usage: spillway sim --trace FILE [--config FILE] [OPTIONS]\n"
    "\n"
    "Replays a job trace through spillway's scheduling engine on the fleet and\n"
    "policy of the config, and reports what it cost and how long jobs waited.\n"
    "\n"
    "  --trace FILE          job trace: spillway CSV (id,submit_s,gpus,runtime_s[,gpu,\n"
    "                        team,priority,deadline_s,est_runtime_s,class,data,residency,\n"
    "                        labels,max_runtime_s,spot,spot_policy,checkpoint_interval_s,\n"
    "                        gpus_per_node])\n"
    "                        or an Alibaba 2023 pod list (openb_pod_list_*.csv); team,\n"
    "                        class, data, residency and labels (k=v;k2=v2) name the\n"
    "                        config's governance; deadline_s is a time on the clock of\n"
    "                        submit_s; spot is auto, always or never\n"
    "  --format F            auto (default), spillway or alibaba\n"
    "  --config FILE         fleet and policy YAML (default: the embedded example,\n"
    "                        4 nodes x 8 A100 on-prem and cloud at $2.50/GPU-h)\n"
    "  --wait P              burst rule, overriding the config: never, none,\n"
    "                        constant:SECONDS, runtime:K, compute:K (K x GPUs x runtime),\n"
    "                        predict:K (compute:K's budget; bursts at once when the\n"
    "                        projected on-prem start is past it)\n"
    "  --compare P1,P2,...   run once per wait policy and print them side by side\n"
    "  --compare gravity     run twice, data gravity on and off (same wait policy), and\n"
    "                        print them side by side: egress GB and $, cloud and total\n"
    "                        cost, waits\n"
    "  --compare S1,S2,...   run once per spot policy (ondemand, greedy,\n"
    "                        uniform-progress), the policy of jobs without their own\n"
    "  --compare Q1,Q2,...   run once per queue order (fifo, sjf, priority, fair;\n"
    "                        docs/fairshare.md): per-team waits and rho side by side\n"
    "  --gravity on|off      whether data egress and transfer time weigh in placement\n"
    "                        (default on); with off, egress is still paid\n"
    "  -o, --output FMT      table (default) or json\n"
    "  --jobs-out FILE       per-job CSV: id,submit_s,start_s,end_s,placement,wait_s,cost_usd,\n"
    "                        reason,held,spot,restarts,lost_s (reason: why the engine\n"
    "                        placed it there, as explain says)\n"
    "  --timeseries-out FILE CSV sampled every --step seconds: t_s,queued,onprem_busy_gpus,\n"
    "                        cloud_gpus,cloud_usd_per_h\n"
    "  --step SECONDS        time-series step (default 3600)\n"
    "  --report FILE.html    also write one self-contained HTML report: the comparison,\n"
    "                        cost vs mean wait per policy, queue and cloud GPUs over\n"
    "                        time, wait and JCT distributions, spend per team, and the\n"
    "                        inputs to run it again; it opens offline\n"
    "  -q, --quiet           no progress bar and no warnings\n"
    "\n"
    "Spot, restarts and failures (these override the config's spot: and failures:):\n"
    "  --spot-policy P       ondemand, greedy or uniform-progress: the policy of jobs\n"
    "                        without a spot_policy column (default: spot.policy, else\n"
    "                        ondemand)\n"
    "  --restart-overhead D  paid time without progress at the start of every attempt:\n"
    "                        first start, restart, new instance (default 0)\n"
    "  --checkpoint-interval D|continuous\n"
    "                        how often jobs without a checkpoint_interval_s column save\n"
    "                        their progress; an interruption loses what came after the\n"
    "                        last save.  0 (default): restart from scratch; continuous:\n"
    "                        nothing is lost\n"
    "  --max-restarts N      interruptions a job survives; the next one fails it\n"
    "                        (default: unlimited)\n"
    "  --recovery R          where a preempted job looks first: same_region_first\n"
    "                        (default) or next_region\n"
    "  --failover F          jobs of a failed on-prem node: requeue (default), or burst\n"
    "                        to the cloud when on-prem would miss their wait or deadline\n"
    "  --failures FILE       on-prem node failures instead of the config's: a CSV\n"
    "                        node,down_s,up_s (node is POOL/INDEX such as dc1/0; up_s\n"
    "                        empty = the node never comes back)\n"
    "  --seed S              seed of preemption and failure draws (default: spot.seed, 1)\n"
    "\n"
    "Single spot job (the \"Can't Be Late\" experiment; see docs/spot.md):\n"
    "  --spot-job DURATION   replay one job needing DURATION of work (e.g. 48h) on spot\n"
    "                        availability traces instead of a job trace\n"
    "  --deadline DURATION   deadline after the job's start (required, e.g. 60h)\n"
    "  --restart-overhead D  as above (default 0)\n"
    "  --checkpoint-interval D|continuous\n"
    "                        continuous (default; the paper's model): a preemption loses\n"
    "                        nothing; D: it loses the work since the last checkpoint;\n"
    "                        0: it restarts the work from scratch\n"
    "  --spot-trace FILE     availability trace {\"metadata\":{\"gap_seconds\":N},\"data\":[..]};\n"
    "                        repeat for several traces (results are pooled)\n"
    "  --spot-policy LIST    ondemand,greedy,uniform-progress (default: all three)\n"
    "  --offsets N           random start offsets per trace (default 300)\n"
    "  --seed S              seed of the start offsets (default 1)\n"
    "  --spot-price X        spot USD per hour (default 0.92)\n"
    "  --ondemand-price Y    on-demand USD per hour (default 3.06, p3.2xlarge)\n"
    "  --multi-region        the --spot-trace files are regions (zones) of the same days:\n"
    "                        compare each policy in each region alone, across the\n"
    "                        regions, and the omniscient multi-region optimum\n"
    "  --egress-usd X        with --multi-region: USD to move the job's state to another\n"
    "                        region (default 0; the restart overhead is paid as well)\n"
    "  --region-prices LIST  with --multi-region: SPOT:ONDEMAND USD per hour per trace\n"
    "                        (default: --spot-price and --ondemand-price everywhere)\n"
    "  --step S              with --multi-region: decision step in seconds, a whole\n"
    "                        number of trace ticks (default: one tick)\n"
    "  Durations are seconds, or a number with d, h, m or s (0.2h, 90m).\n"
    "\n"
    "Examples:\n"
    "  spillway sim --trace jobs.csv --wait constant:3600\n"
    "  spillway sim --trace team-jobs.csv --config examples/governance.yaml --compare gravity\n"
    "  spillway sim --trace examples/spot-jobs.csv --config examples/spot.yaml \\\n"
    "      --compare ondemand,greedy,uniform-progress\n"
    "  spillway sim --trace examples/spot-jobs.csv --config examples/spot.yaml \\\n"
    "      --spot-policy greedy --checkpoint-interval 30m --failures examples/failures.csv\n"
    "  spillway sim --spot-job 48h --deadline 60h --restart-overhead 0.2h \\\n"
    "      --spot-trace ../shared/data/spot-traces/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json\n"
    "  spillway sim --trace ../shared/data/alibaba-gpu-2023/openb_pod_list_default.csv \\\n"
    "      --config examples/alibaba.yaml --compare never,compute:0.25\n";

static const char gen_usage[] =
    "usage: spillway gen --jobs N --rate JOBS_PER_H [OPTIONS] > jobs.csv\n"
    "\n"
    "Writes a synthetic trace in spillway CSV (id,submit_s,gpus,runtime_s).\n"
    "\n"
    "  --jobs N             number of jobs (required)\n"
    "  --rate R             mean arrivals per hour (required)\n"
    "  --cv C               coefficient of variation of inter-arrival times: 1 (default)\n"
    "                       is Poisson, >1 burstier (gamma), 0 evenly spaced\n"
    "  --runtime SPEC       exp:MEAN_S (default exp:3600), lognormal:MEDIAN_S:SIGMA, or\n"
    "                       file:PATH to resample a one-column file of seconds\n"
    "  --gpus SPEC          GPU counts and weights (default 1:0.7,2:0.15,4:0.1,8:0.05)\n"
    "  --seed S             random seed (default 1); same seed, same trace\n"
    "  -o, --output FILE    write there instead of stdout\n";

static const char demo_usage[] =
    "usage: spillway demo [--jobs N] [--seed S] [-o json] [--report FILE.html]\n"
    "\n"
    "Generates a synthetic workload (lognormal runtimes, mostly 1-GPU jobs, about\n"
    "10%% more work than the on-prem pool can take) and compares the burst\n"
    "policies never, none, constant:3600 and compute:0.25 on the embedded example\n"
    "fleet.  Nothing is read from disk.  --report writes the comparison as one\n"
    "self-contained HTML file with charts (as `spillway sim --report`).\n";

static void die_usage(const char *cmd, const char *msg)
{
    fprintf(stderr, "spillway %s: %s\n(see 'spillway %s --help')\n", cmd, msg, cmd);
    exit(2);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- progress and samples ------------------------------------------------ */

typedef struct run_ctx {
    FILE *ts;              /* time-series output, or NULL */
    spw_html_run_t *html;  /* the HTML report's copy of the samples, or NULL */
    const char *prefix;    /* first column of each sample (--compare), or NULL */
    int progress;          /* draw a progress bar on stderr */
    const char *label;     /* what is running */
} run_ctx_t;

static void on_progress(void *p, size_t done, size_t total)
{
    run_ctx_t *c = p;
    if (!c->progress || total == 0)
        return;
    int width = 30, fill = (int)(width * (double)done / (double)total);
    fprintf(stderr, "\r%-16s [%.*s%*s] %3d%% %zu/%zu jobs", c->label, fill,
            "##############################", width - fill, "", (int)(100.0 * done / total),
            done, total);
    if (done == total)
        fprintf(stderr, "\r%*s\r", 80, "");
}

static void on_sample(void *p, const spw_sim_sample_t *s)
{
    run_ctx_t *c = p;
    if (c->html)
        spw_html_run_add_sample(c->html, s);
    if (!c->ts)
        return;
    if (c->prefix)
        fprintf(c->ts, "%s,", c->prefix);
    fprintf(c->ts, "%.0f,%zu,%llu,%llu,%.4f\n", s->t_s, s->queued,
            (unsigned long long)s->onprem_busy_gpus, (unsigned long long)s->cloud_gpus,
            s->cloud_usd_per_h);
}

/* ---- sim ------------------------------------------------------------------ */

/* The command line as one string, for the report's inputs (caller frees). */
static char *join_args(int argc, char **argv)
{
    size_t n = strlen("spillway") + 1;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 3;
    char *s = spw_xmalloc(n + 1);
    strcpy(s, "spillway");
    for (int i = 0; i < argc; i++) {
        int quote = strcspn(argv[i], " \t'\"$") != strlen(argv[i]);
        strcat(s, quote ? " '" : " ");
        strcat(s, argv[i]);
        if (quote)
            strcat(s, "'");
    }
    return s;
}

static int parse_output(const char *cmd, const char *s)
{
    if (strcmp(s, "table") == 0)
        return 0;
    if (strcmp(s, "json") == 0)
        return 1;
    die_usage(cmd, "-o takes 'table' or 'json'");
    return 0;
}

/* Splits "a,b,c" into wait policies; exits on a bad one. */
static size_t parse_compare(const char *list, spw_wait_t *out, size_t max)
{
    size_t n = 0;
    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        spw_error_t err;
        if (n == max)
            die_usage("sim", "--compare: at most 16 policies");
        if (spw_wait_parse(tok, &out[n++], &err) < 0)
            die_usage("sim", err.text);
    }
    free(copy);
    if (n == 0)
        die_usage("sim", "--compare needs a list such as never,none,compute:0.25");
    return n;
}

/* What --compare varies. */
typedef enum { CMP_NONE, CMP_WAIT, CMP_GRAVITY, CMP_SPOT, CMP_QUEUE } compare_t;

/* One item of a --compare or --spot-policy list as an enum's int; -1 with err. */
typedef int (*item_parse_t)(const char *tok, int *out, spw_error_t *err);

static int spot_item(const char *tok, int *out, spw_error_t *err)
{
    spw_spot_policy_t p;
    if (spw_spot_policy_parse(tok, &p, err) < 0)
        return -1;
    *out = (int)p;
    return 0;
}

static int queue_item(const char *tok, int *out, spw_error_t *err)
{
    spw_queue_order_t q;
    if (spw_queue_order_parse(tok, &q, err) < 0)
        return -1;
    *out = (int)q;
    return 0;
}

/* Whether list's first item is one that parse takes: what --compare varies. */
static int compares(const char *list, item_parse_t parse)
{
    char first[32];
    size_t n = strcspn(list, ",");
    int v;
    spw_error_t err;
    if (n >= sizeof(first))
        return 0;
    memcpy(first, list, n);
    first[n] = '\0';
    return parse(first, &v, &err) == 0;
}

/* Splits list into at most max distinct items; exits naming opt on a bad,
 * repeated or missing one (example: a list to show). */
static size_t parse_items(const char *opt, const char *list, item_parse_t parse, int *out,
                          size_t max, const char *example)
{
    size_t n = 0;
    char *copy = spw_xstrdup(list), *save = NULL, msg[160];
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        spw_error_t err;
        snprintf(msg, sizeof(msg), "%s: list each policy once", opt);
        if (n == max)
            die_usage("sim", msg);
        if (parse(tok, &out[n], &err) < 0)
            die_usage("sim", err.text);
        for (size_t i = 0; i < n; i++)
            if (out[i] == out[n])
                die_usage("sim", msg);
        n++;
    }
    free(copy);
    if (n == 0) {
        snprintf(msg, sizeof(msg), "%s needs a list such as %s", opt, example);
        die_usage("sim", msg);
    }
    return n;
}

static size_t parse_spot_policies(const char *opt, const char *list, spw_spot_policy_t *out);

/* What --compare varies, as the reports name it. */
static const char *compare_name(compare_t c)
{
    return c == CMP_GRAVITY ? "data gravity"
           : c == CMP_SPOT  ? "spot policy"
           : c == CMP_QUEUE ? "queue order"
                            : "wait policy";
}

static int run_scenarios(spw_config_t *cfg, spw_trace_t *tr, const spw_wait_t *waits, size_t nw,
                         const spw_spot_policy_t *spots, const spw_queue_order_t *queues,
                         const spw_sim_world_t *world,
                         int json, compare_t compare, const char *jobs_out, const char *ts_out,
                         double step, int quiet, const char *report, spw_html_inputs_t *hin)
{
    spw_report_row_t rows[16];
    spw_policy_t pol[16];
    spw_html_run_t html[16];
    memset(html, 0, sizeof(html));
    FILE *ts = NULL;
    /* The report samples the run too: at --step with --timeseries-out, else
     * about 500 times over the trace. */
    double rstep = step;
    if (report && !ts_out) {
        double span = tr->njobs ? tr->jobs[tr->njobs - 1].submit_s - tr->jobs[0].submit_s : 0;
        for (size_t i = 0; i < tr->njobs; i++)
            if (tr->jobs[i].submit_s - tr->jobs[0].submit_s + tr->runtime_s[i] > span)
                span = tr->jobs[i].submit_s - tr->jobs[0].submit_s + tr->runtime_s[i];
        rstep = span / 500 > 1 ? span / 500 : 1;
    }
    if (ts_out && !(ts = fopen(ts_out, "w"))) {
        fprintf(stderr, "spillway sim: %s: cannot write: %s\n", ts_out, strerror(errno));
        return 1;
    }
    if (ts)
        fprintf(ts, "%st_s,queued,onprem_busy_gpus,cloud_gpus,cloud_usd_per_h\n",
                compare == CMP_WAIT      ? "wait_policy,"
                : compare == CMP_GRAVITY ? "gravity,"
                : compare == CMP_SPOT    ? "spot_policy,"
                : compare == CMP_QUEUE   ? "queue,"
                                         : "");
    if (compare == CMP_GRAVITY)
        nw = 2;
    for (size_t i = 0; i < nw; i++) {
        pol[i] = cfg->policy;
        rows[i].policy = &pol[i];
        rows[i].gov = &cfg->fleet.gov;
        if (compare == CMP_GRAVITY) {
            pol[i].wait = waits[0];
            pol[i].gravity = i == 0;
            snprintf(rows[i].label, sizeof(rows[i].label), "%s", i == 0 ? "on" : "off");
        } else if (compare == CMP_SPOT) {
            pol[i].wait = waits[0];
            pol[i].spot_policy = spots[i];
            snprintf(rows[i].label, sizeof(rows[i].label), "%s",
                     spw_spot_policy_name(spots[i]));
        } else if (compare == CMP_QUEUE) {
            pol[i].wait = waits[0];
            pol[i].queue = queues[i];
            snprintf(rows[i].label, sizeof(rows[i].label), "%s", spw_queue_order_name(queues[i]));
        } else {
            pol[i].wait = waits[i];
        }
        spw_wait_format(&pol[i].wait, rows[i].wait, sizeof(rows[i].wait));
        if (compare == CMP_WAIT || compare == CMP_NONE)
            memcpy(rows[i].label, rows[i].wait, sizeof(rows[i].label));
        /* With --compare the time series gets a column for what varies. */
        run_ctx_t rc = {.ts = ts, .html = report ? &html[i] : NULL,
                        .prefix = compare ? rows[i].label : NULL,
                        .progress = !quiet && isatty(2), .label = rows[i].label};
        spw_sim_opts_t o = {
            .step_s = ts || report ? rstep : 0,
            .on_sample = ts || report ? on_sample : NULL,
            .on_progress = on_progress,
            .ctx = &rc,
            .world = world,
        };
        spw_error_t err;
        double t0 = now_s();
        if (spw_sim_run(&cfg->fleet, &pol[i], tr->jobs, tr->runtime_s, tr->njobs, &o,
                        &rows[i].sum, &err) < 0) {
            fprintf(stderr, "spillway sim: %s\n", err.text);
            if (ts)
                fclose(ts);
            for (size_t k = 0; k <= i; k++)
                spw_html_run_clear(&html[k]);
            return 1;
        }
        if (cfg->fleet.gov.nteams &&
            spw_sim_fairness(&cfg->fleet, &pol[i], tr->jobs, tr->runtime_s, tr->njobs,
                             &rows[i].sum, &err) < 0) {
            fprintf(stderr, "spillway sim: %s\n", err.text);
            return 1;
        }
        rows[i].seconds = now_s() - t0;
        if (report)
            spw_html_run_finish(&html[i], tr);
        if (jobs_out && i == nw - 1) {
            if (spw_report_jobs_csv(jobs_out, tr, &cfg->fleet, &err) < 0) {
                fprintf(stderr, "spillway sim: %s\n", err.text);
                return 1;
            }
        }
    }
    if (ts && fclose(ts) != 0) {
        fprintf(stderr, "spillway sim: %s: write failed\n", ts_out);
        return 1;
    }
    if (report) {
        spw_error_t err;
        hin->step_s = rstep;
        hin->compare_what = !compare ? NULL : compare_name(compare);
        int hrc = spw_report_html(report, tr, hin, rows, html, nw, &err);
        for (size_t k = 0; k < nw; k++)
            spw_html_run_clear(&html[k]);
        if (hrc < 0) {
            fprintf(stderr, "spillway sim: %s\n", err.text);
            return 1;
        }
        if (!quiet)
            fprintf(stderr, "spillway: wrote the report %s (open it in a browser; it works offline)\n",
                    report);
    }
    /* --jobs-out - took standard output: the summary goes to stderr. */
    FILE *sum = jobs_out && strcmp(jobs_out, "-") == 0 ? stderr : stdout;
    if (compare) {
        if (json)
            spw_report_compare_json(sum, tr, rows, nw);
        else
            spw_report_compare_table(sum, tr, compare_name(compare), rows, nw);
    } else if (json) {
        spw_report_json(sum, tr, &rows[0]);
        fprintf(sum, "\n");
    } else {
        spw_report_table(sum, tr, cfg, &rows[0]);
    }
    return 0;
}

/* Whether some pool or offer of f has a GPU that model name `want`
 * accepts, or takes any model. */
static int fleet_has_model(const spw_fleet_t *f, const char *want)
{
    const spw_models_t *m = &f->models;
    for (size_t i = 0; i < f->npools; i++)
        if (f->pools[i].model < 0 || spw_model_accepts(want, m->name[f->pools[i].model]))
            return 1;
    for (size_t i = 0; i < f->noffers; i++)
        if (f->offers[i].model < 0 || spw_model_accepts(want, m->name[f->offers[i].model]))
            return 1;
    return 0;
}

/* A GPU model a spillway trace's job names that no pool or offer has (a
 * typo such as A1OO would make the job silently unschedulable): -1 with a
 * message naming the job and the model it was likely meant to be, or, when
 * it is no close misspelling of one, the models the fleet has. */
static int check_trace_models(const spw_config_t *cfg, const spw_trace_t *tr, const char *path)
{
    const spw_fleet_t *f = &cfg->fleet;
    const spw_models_t *m = &f->models;
    uint64_t used = 0;
    for (size_t i = 0; tr->format == SPW_TRACE_SPILLWAY && i < tr->njobs; i++)
        used |= tr->jobs[i].gpu_mask;
    for (int k = 0; k < m->n && k < 64; k++) {
        if (!(used >> k & 1) || fleet_has_model(f, m->name[k]))
            continue;
        size_t first = 0;
        while (!(tr->jobs[first].gpu_mask >> k & 1))
            first++;
        const char **have = spw_xmalloc((f->npools + f->noffers + 1) * sizeof(char *));
        size_t n = 0;
        for (size_t i = 0; i < f->npools; i++)
            have[n++] = f->pools[i].model >= 0 ? m->name[f->pools[i].model] : NULL;
        for (size_t i = 0; i < f->noffers; i++)
            have[n++] = f->offers[i].model >= 0 ? m->name[f->offers[i].model] : NULL;
        const char *near = spw_names_lookalike(have, n, m->name[k]);
        /* Not a close misspelling: the models the fleet has, each once. */
        char list[256] = "";
        size_t used = 0;
        for (size_t i = 0; i < n && !near && used < sizeof(list); i++) {
            size_t h = 0;
            while (h < i && (!have[h] || !have[i] || strcmp(have[h], have[i])))
                h++;
            if (have[i] && h == i)
                used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
                                         used ? ", " : "", have[i]);
        }
        fprintf(stderr, "spillway sim: %s: job %s: no pool or cloud offer has GPU model '%s' "
                "(%s%s%s)\n", path, tr->jobs[first].id, m->name[k],
                near ? "did you mean " : "the fleet has: ", near ? near : used ? list : "no named models",
                near ? "?" : "");
        free(have);
        return -1;
    }
    return 0;
}

static void warn_trace(const spw_trace_t *tr, const char *path, int quiet)
{
    if (quiet)
        return;
    if (tr->first_unsorted_line)
        fprintf(stderr,
                "spillway sim: warning: %s:%ld: rows are not sorted by submit time; "
                "sorted them (by submit, then id)\n",
                path, tr->first_unsorted_line);
    if (tr->skipped_no_gpu || tr->skipped_unscheduled)
        fprintf(stderr,
                "spillway sim: %s: skipped %zu rows without GPUs and %zu pods that were never "
                "scheduled (no runtime)\n",
                path, tr->skipped_no_gpu, tr->skipped_unscheduled);
}

static void warn_bind(const spw_trace_bind_info_t *b, int quiet)
{
    if (quiet)
        return;
    if (b->jobs_unknown_team)
        fprintf(stderr,
                "spillway sim: warning: %zu jobs of teams not in the config: %s (no budget, "
                "no team rule)\n",
                b->jobs_unknown_team, b->unknown_teams);
    if (b->jobs_unknown_class)
        fprintf(stderr,
                "spillway sim: warning: %zu jobs of classes no rule or residency names: %s\n",
                b->jobs_unknown_class, b->unknown_classes);
}

static int load_config(spw_config_t *cfg, const char *path, const char *cmd)
{
    spw_error_t err;
    int rc = path ? spw_config_load(cfg, path, &err)
                  : spw_config_load_mem(cfg, "<embedded default config>", default_config,
                                        sizeof(default_config) - 1, ".", &err);
    if (rc < 0)
        fprintf(stderr, "spillway %s: %s\n", cmd, err.text);
    return rc;
}

static int parse_size(const char *s, size_t *out);

/* A duration: seconds, or a number with a d, h, m or s suffix; finite, >= 0. */
static int parse_dur(const char *s, double *out_s)
{
    char *end;
    double v = strtod(s, &end), unit = 1;
    if (end == s)
        return -1;
    if (*end == 'd')
        unit = 86400, end++;
    else if (*end == 'h')
        unit = 3600, end++;
    else if (*end == 'm')
        unit = 60, end++;
    else if (*end == 's')
        end++;
    if (*end || !isfinite(v) || v < 0)
        return -1;
    *out_s = v * unit;
    return 0;
}

static double sim_dur(const char *opt, const char *s)
{
    double v;
    if (parse_dur(s, &v) < 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s takes a duration >= 0 such as 48h, 90m or 3600 (got '%s')",
                 opt, s);
        die_usage("sim", msg);
    }
    return v;
}

static double sim_price(const char *opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s takes a price in USD per hour >= 0 (got '%s')", opt, s);
        die_usage("sim", msg);
    }
    return v;
}

/* Parses --region-prices "SPOT:ONDEMAND,SPOT:ONDEMAND,..." (USD per hour, one
 * pair per --spot-trace) into out; returns the count.  Exits on bad input. */
static size_t parse_region_prices(const char *s, spw_spot_region_t *out)
{
    size_t n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        double sp = strtod(p, &end), od = 0;
        int bad = end == p || *end != ':';
        if (!bad) {
            const char *q = end + 1;
            od = strtod(q, &end);
            bad = end == q || (*end != ',' && *end != '\0');
        }
        if (bad || n == SPW_CLI_SPOTJOB_MAX_TRACES || !isfinite(sp) || sp < 0 ||
            !isfinite(od) || od < 0)
            die_usage("sim", "--region-prices takes SPOT:ONDEMAND USD per hour for each "
                             "--spot-trace, comma-separated (e.g. 0.92:3.06,0.95:3.06), "
                             "at most 32");
        out[n].spot_usd_per_h = sp;
        out[n].ondemand_usd_per_h = od;
        n++;
        if (*end == '\0')
            return n;
        p = end + 1;
    }
}

/* Splits "greedy,uniform-progress" (the value of option opt) into spot
 * policies; exits on a bad one. */
static size_t parse_spot_policies(const char *opt, const char *list, spw_spot_policy_t *out)
{
    int v[SPW_SPOT_POLICY_COUNT];
    size_t n = parse_items(opt, list, spot_item, v, SPW_SPOT_POLICY_COUNT,
                           "ondemand,greedy,uniform-progress");
    for (size_t i = 0; i < n; i++)
        out[i] = (spw_spot_policy_t)v[i];
    return n;
}

/* A checkpoint interval: a duration >= 0 or "continuous". */
static double sim_ckpt(const char *s)
{
    if (strcmp(s, "continuous") == 0)
        return SPW_CKPT_CONTINUOUS;
    double v;
    if (parse_dur(s, &v) < 0) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "--checkpoint-interval takes a duration >= 0 such as 30m (0 = restart from "
                 "scratch) or continuous (nothing lost), got '%s'", s);
        die_usage("sim", msg);
    }
    return v;
}

/* The simulator's world from the config: one spot entry per offer that has
 * a spot price, from the availability entry that matches it (the last such
 * entry wins), else at spot.default_interruption's rate; one refusal per offer and cloud.capacity_errors entry that
 * matches it, the failure list and the pools' MTBF/MTTR.  *spot_out and
 * *ref_out receive the arrays w->spot and w->refusals point into (free
 * them after the runs). */
static void build_world(const spw_config_t *cfg, spw_sim_world_t *w, spw_sim_spot_t **spot_out,
                        spw_sim_refusal_t **ref_out)
{
    const spw_fleet_t *f = &cfg->fleet;
    const spw_spot_conf_t *sc = &cfg->spot;
    spw_sim_spot_t *spot = spw_xcalloc(f->noffers ? f->noffers : 1, sizeof(*spot));
    size_t nspot = 0;
    for (size_t i = 0; i < f->noffers; i++) {
        const spw_offer_t *o = &f->offers[i];
        int k = spw_spot_avail_of(cfg, o);
        if (isnan(o->spot_usd_per_h))
            continue;
        if (k < 0) {   /* no data: the default interruption rate, never none */
            spot[nspot++] = (spw_sim_spot_t){.offer = i,
                                             .preempt_rate_per_h = sc->default_rate_per_h};
            continue;
        }
        const spw_spot_avail_conf_t *hit = &sc->avail[k];
        spot[nspot++] = (spw_sim_spot_t){
            .offer = i,
            .trace = hit->trace_path ? &hit->trace : NULL,
            .trace_start_s = 0 - hit->start_offset_s,   /* 0, not -0, without an offset */
            .preempt_rate_per_h = hit->trace_path ? 0 : hit->preempt_rate_per_h,
        };
    }
    size_t nref = 0;
    spw_sim_refusal_t *ref = spw_xcalloc(f->noffers * cfg->ncapacity_errors + 1, sizeof(*ref));
    for (size_t c = 0; c < cfg->ncapacity_errors; c++)
        for (size_t i = 0; i < f->noffers; i++) {
            const spw_capacity_error_conf_t *ce = &cfg->capacity_errors[c];
            if (spw_capacity_error_matches(ce, &f->offers[i]))
                ref[nref++] = (spw_sim_refusal_t){.offer = i, .market = ce->market,
                                                  .rate = ce->rate, .block = ce->block,
                                                  .block_s = ce->block_s};
        }
    *w = (spw_sim_world_t){
        .spot = spot,
        .nspot = nspot,
        .refusals = ref,
        .nrefusals = nref,
        .failures = cfg->failures.list,
        .nfailures = cfg->failures.n,
        .mtbf_s = cfg->failures.mtbf_s,
        .mttr_s = cfg->failures.mttr_s,
        .seed = sc->seed,
    };
    *spot_out = spot;
    *ref_out = ref;
}

/* Warnings about spot settings that are allowed but probably not meant. */
static void warn_spot(const spw_config_t *cfg, const spw_trace_t *tr, const char *config,
                      int overhead_flag, int ckpt_flag)
{
    const spw_policy_t *p = &cfg->policy;
    double ckpt = cfg->spot.checkpoint_interval_s, d = p->restart_overhead_s;
    char where[300];
    snprintf(where, sizeof(where), "%s: ", config ? config : "<embedded default config>");
    if (d > 0 && ckpt > 0 && d > ckpt)
        fprintf(stderr,
                "spillway sim: warning: %s%s (%g s) is longer than %s (%g s): each restart "
                "costs more than the work an interruption can lose; checkpoint less often or "
                "check the overhead\n",
                overhead_flag && ckpt_flag ? "" : where,
                overhead_flag ? "--restart-overhead" : "spot.restart_overhead_s", d,
                ckpt_flag ? "--checkpoint-interval" : "spot.checkpoint_interval_s", ckpt);
    size_t shorter = 0;
    const char *first = NULL;
    for (size_t i = 0; tr->own_ckpt && i < tr->njobs; i++) {
        double c = tr->jobs[i].checkpoint_interval_s;
        if (tr->own_ckpt[i] && c > 0 && d > c && !shorter++)
            first = tr->jobs[i].id;
    }
    if (shorter)
        fprintf(stderr,
                "spillway sim: warning: %s: %zu jobs (first: %s) have a checkpoint_interval_s "
                "shorter than the restart overhead (%g s)\n",
                tr->name, shorter, first, d);
    int spot_policy = p->spot_policy != SPW_SPOT_POLICY_ONDEMAND;
    for (size_t i = 0; i < tr->njobs && !spot_policy; i++)
        spot_policy = tr->jobs[i].spot_mode == SPW_SPOTMODE_ALWAYS
                      || tr->jobs[i].spot_policy > SPW_SPOT_POLICY_ONDEMAND + 1;
    int priced = 0;
    for (size_t i = 0; i < cfg->fleet.noffers && !priced; i++)
        priced = !isnan(cfg->fleet.offers[i].spot_usd_per_h);
    if (spot_policy && !priced)
        fprintf(stderr,
                "spillway sim: warning: %sjobs may take spot capacity, but no cloud offer has a "
                "spot price (catalog column spot_usd_per_h): every cloud job runs on demand\n",
                where);
}

/* Jobs may take spot capacity on offers no spot.availability entry
 * describes: said always (-q too), since the figures rest on a guess. */
static void warn_spot_data(const spw_config_t *cfg, const spw_trace_t *tr, const char *config,
                           const spw_spot_policy_t *spots, size_t nspots)
{
    int spot_policy = cfg->policy.spot_policy != SPW_SPOT_POLICY_ONDEMAND;
    for (size_t i = 0; i < nspots && !spot_policy; i++)
        spot_policy = spots[i] != SPW_SPOT_POLICY_ONDEMAND;
    for (size_t i = 0; i < tr->njobs && !spot_policy; i++)
        spot_policy = tr->jobs[i].spot_mode == SPW_SPOTMODE_ALWAYS
                      || tr->jobs[i].spot_policy > SPW_SPOT_POLICY_ONDEMAND + 1;
    size_t nodata = 0;
    for (size_t i = 0; i < cfg->fleet.noffers; i++)
        nodata += !isnan(cfg->fleet.offers[i].spot_usd_per_h) &&
                  spw_spot_avail_of(cfg, &cfg->fleet.offers[i]) < 0;
    if (spot_policy && nodata)
        fprintf(stderr,
                "spillway sim: WARNING: %s: %zu offers with a spot price have no "
                "spot.availability entry: their spot capacity is modelled as unlimited, each "
                "instance interrupted at spot.default_interruption \"%s\" (%.3g per hour); "
                "give spot.availability (trace: or interruption:) for figures you can rely "
                "on (docs/spot.md)\n",
                config ? config : "<embedded default config>", nodata, cfg->spot.default_label,
                cfg->spot.default_rate_per_h);
}

static int cmd_sim(int argc, char **argv)
{
    enum { O_TRACE = 256, O_CONFIG, O_FORMAT, O_WAIT, O_COMPARE, O_GRAVITY, O_JOBS, O_TS, O_STEP, O_REPORT,
           O_SPOT_JOB, O_DEADLINE, O_OVERHEAD, O_CKPT, O_SPOT_TRACE, O_SPOT_POLICY,
           O_OFFSETS, O_SEED, O_SPOT_PRICE, O_OD_PRICE, O_MAX_RESTARTS, O_RECOVERY,
           O_FAILOVER, O_FAILURES, O_MULTI, O_EGRESS, O_REGION_PRICES };
    static const struct option opts[] = {
        {"trace", required_argument, NULL, O_TRACE},
        {"multi-region", no_argument, NULL, O_MULTI},
        {"egress-usd", required_argument, NULL, O_EGRESS},
        {"region-prices", required_argument, NULL, O_REGION_PRICES},
        {"config", required_argument, NULL, O_CONFIG},
        {"format", required_argument, NULL, O_FORMAT},
        {"wait", required_argument, NULL, O_WAIT},
        {"compare", required_argument, NULL, O_COMPARE},
        {"gravity", required_argument, NULL, O_GRAVITY},
        {"output", required_argument, NULL, 'o'},
        {"jobs-out", required_argument, NULL, O_JOBS},
        {"timeseries-out", required_argument, NULL, O_TS},
        {"step", required_argument, NULL, O_STEP},
        {"report", required_argument, NULL, O_REPORT},
        {"spot-job", required_argument, NULL, O_SPOT_JOB},
        {"deadline", required_argument, NULL, O_DEADLINE},
        {"restart-overhead", required_argument, NULL, O_OVERHEAD},
        {"checkpoint-interval", required_argument, NULL, O_CKPT},
        {"spot-trace", required_argument, NULL, O_SPOT_TRACE},
        {"spot-policy", required_argument, NULL, O_SPOT_POLICY},
        {"offsets", required_argument, NULL, O_OFFSETS},
        {"seed", required_argument, NULL, O_SEED},
        {"spot-price", required_argument, NULL, O_SPOT_PRICE},
        {"ondemand-price", required_argument, NULL, O_OD_PRICE},
        {"max-restarts", required_argument, NULL, O_MAX_RESTARTS},
        {"recovery", required_argument, NULL, O_RECOVERY},
        {"failover", required_argument, NULL, O_FAILOVER},
        {"failures", required_argument, NULL, O_FAILURES},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *trace = NULL, *config = NULL, *wait = NULL, *compare = NULL;
    const char *jobs_out = NULL, *ts_out = NULL, *failures = NULL, *report = NULL;
    const char *spot_only = NULL;   /* a --spot-job option given without it */
    const char *trace_only = NULL;  /* a trace-replay option given with --spot-job */
    spw_trace_format_t fmt = SPW_TRACE_AUTO;
    int json = 0, quiet = 0, c, gravity = -1;
    double step = 3600;
    spw_error_t err;
    /* --spot-job mode: the Can't Be Late single-job replay, on the paper's
     * model (a preemption loses nothing) unless told otherwise. */
    spw_cli_spotjob_t sj = {
        .params = {.spot_usd_per_h = 0.92, .ondemand_usd_per_h = 3.06,
                   .checkpoint_interval_s = SPW_CKPT_CONTINUOUS},
        .policies = {SPW_SPOT_POLICY_ONDEMAND, SPW_SPOT_POLICY_GREEDY,
                     SPW_SPOT_POLICY_UNIFORM_PROGRESS},
        .npolicies = 3,
        .offsets = 300,
        .seed = 1,
    };
    int spot_job = 0, have_deadline = 0, have_overhead = 0, have_ckpt = 0, have_seed = 0;
    int have_step = 0;
    const char *multi_only = NULL;  /* a --multi-region option given without it */
    int have_spot_policy = 0, have_max_restarts = 0, have_recovery = 0, have_failover = 0;
    uint32_t max_restarts = UINT32_MAX;
    spw_recovery_t recovery = SPW_RECOVERY_SAME_REGION_FIRST;
    spw_failover_t failover = SPW_FAILOVER_REQUEUE;
    while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (c) {
        case O_SPOT_JOB:
            sj.params.work_s = sim_dur("--spot-job", optarg);
            spot_job = 1;
            break;
        case O_DEADLINE:
            sj.params.deadline_s = sim_dur("--deadline", optarg);
            have_deadline = 1;
            spot_only = "--deadline";
            break;
        case O_OVERHEAD:
            sj.params.restart_overhead_s = sim_dur("--restart-overhead", optarg);
            have_overhead = 1;
            break;
        case O_CKPT:
            sj.params.checkpoint_interval_s = sim_ckpt(optarg);
            have_ckpt = 1;
            break;
        case O_SPOT_TRACE:
            if (sj.ntraces == SPW_CLI_SPOTJOB_MAX_TRACES)
                die_usage("sim", "--spot-trace: at most 32 traces");
            sj.traces[sj.ntraces++] = optarg;
            spot_only = "--spot-trace";
            break;
        case O_SPOT_POLICY:
            sj.npolicies = parse_spot_policies("--spot-policy", optarg, sj.policies);
            have_spot_policy = 1;
            break;
        case O_OFFSETS: {
            size_t n;
            if (parse_size(optarg, &n) < 0 || n == 0 || n > 10000000)
                die_usage("sim", "--offsets takes a count from 1 to 10000000");
            sj.offsets = n;
            spot_only = "--offsets";
            break;
        }
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (end == optarg || *end || errno || optarg[0] == '-')
                die_usage("sim", "--seed takes a whole number >= 0");
            sj.seed = v;
            have_seed = 1;
            break;
        }
        case O_SPOT_PRICE:
            sj.params.spot_usd_per_h = sim_price("--spot-price", optarg);
            spot_only = "--spot-price";
            break;
        case O_OD_PRICE:
            sj.params.ondemand_usd_per_h = sim_price("--ondemand-price", optarg);
            spot_only = "--ondemand-price";
            break;
        case O_MULTI:
            sj.multi = 1;
            spot_only = "--multi-region";
            break;
        case O_EGRESS:
            sj.egress_usd = sim_price("--egress-usd", optarg);
            multi_only = spot_only = "--egress-usd";
            break;
        case O_REGION_PRICES:
            sj.nregion_prices = parse_region_prices(optarg, sj.regions);
            multi_only = spot_only = "--region-prices";
            break;
        case O_MAX_RESTARTS:
            if (strcmp(optarg, "unlimited") == 0) {
                max_restarts = UINT32_MAX;
            } else {
                size_t n;
                if (parse_size(optarg, &n) < 0 || n >= UINT32_MAX)
                    die_usage("sim", "--max-restarts takes a count >= 0 or unlimited");
                max_restarts = (uint32_t)n;
            }
            have_max_restarts = 1;
            trace_only = "--max-restarts";
            break;
        case O_RECOVERY:
            if (spw_recovery_parse(optarg, &recovery, &err) < 0)
                die_usage("sim", err.text);
            have_recovery = 1;
            trace_only = "--recovery";
            break;
        case O_FAILOVER:
            if (spw_failover_parse(optarg, &failover, &err) < 0)
                die_usage("sim", err.text);
            have_failover = 1;
            trace_only = "--failover";
            break;
        case O_FAILURES: failures = optarg; trace_only = "--failures"; break;
        case O_TRACE: trace = optarg; break;
        case O_CONFIG: config = optarg; break;
        case O_FORMAT:
            if (spw_trace_format_parse(optarg, &fmt, &err) < 0)
                die_usage("sim", err.text);
            break;
        case O_WAIT: wait = optarg; break;
        case O_COMPARE: compare = optarg; break;
        case O_GRAVITY:
            if (strcmp(optarg, "on") == 0)
                gravity = 1;
            else if (strcmp(optarg, "off") == 0)
                gravity = 0;
            else
                die_usage("sim", "--gravity takes on or off");
            break;
        case 'o': json = parse_output("sim", optarg); break;
        case O_JOBS: jobs_out = optarg; break;
        case O_TS: ts_out = optarg; break;
        case O_REPORT: report = optarg; break;
        case O_STEP: {
            char *end;
            step = strtod(optarg, &end);
            if (*end || !(step > 0))
                die_usage("sim", "--step takes a number of seconds > 0");
            have_step = 1;
            break;
        }
        case 'q': quiet = 1; break;
        case 'h': fputs(sim_usage, stdout); return 0;
        default: die_usage("sim", "unknown option");
        }
    }
    if (optind < argc)
        die_usage("sim", "unexpected argument; the trace is given with --trace FILE");
    char msg[200];
    if (spot_job) {
        if (trace || config || wait || compare || jobs_out || ts_out || report || gravity >= 0)
            die_usage("sim", "--spot-job replays one job on --spot-trace files; it does not "
                             "take --trace, --config, --wait, --compare or the CSV outputs");
        if (trace_only) {
            snprintf(msg, sizeof(msg), "%s applies to a trace replay (--trace FILE), not to "
                                       "--spot-job", trace_only);
            die_usage("sim", msg);
        }
        if (!have_deadline)
            die_usage("sim", "--spot-job needs --deadline DURATION (e.g. 60h)");
        if (sj.ntraces == 0)
            die_usage("sim", "--spot-job needs at least one --spot-trace FILE");
        if (!(sj.params.work_s > 0))
            die_usage("sim", "--spot-job takes a duration > 0 such as 48h");
        if (!(sj.params.deadline_s > 0))
            die_usage("sim", "--deadline takes a duration > 0 such as 60h");
        if (multi_only && !sj.multi) {
            snprintf(msg, sizeof(msg), "%s applies to --multi-region", multi_only);
            die_usage("sim", msg);
        }
        if (have_step && !sj.multi)
            die_usage("sim", "--step with --spot-job is the decision step of --multi-region; "
                             "one region decides at every trace tick");
        sj.step_s = have_step ? step : 0;
        sj.json = json;
        sj.quiet = quiet;
        return spw_cli_spotjob_run(&sj);
    }
    if (spot_only) {
        snprintf(msg, sizeof(msg), "%s goes with --spot-job DURATION (the single-job replay); "
                                   "a trace replay takes spot capacity from the config's "
                                   "spot.availability", spot_only);
        die_usage("sim", msg);
    }
    if (!trace)
        die_usage("sim", "missing --trace FILE");
    compare_t cmp = !compare                          ? CMP_NONE
                    : strcmp(compare, "gravity") == 0 ? CMP_GRAVITY
                    : compares(compare, spot_item)    ? CMP_SPOT
                    : compares(compare, queue_item)   ? CMP_QUEUE
                                                      : CMP_WAIT;
    if (wait && cmp == CMP_WAIT)
        die_usage("sim", "--wait and --compare do not mix: list the policies in --compare");
    if (gravity >= 0 && cmp == CMP_GRAVITY)
        die_usage("sim", "--gravity and --compare gravity do not mix: the comparison runs both");
    if (have_spot_policy && cmp == CMP_SPOT)
        die_usage("sim", "--spot-policy and --compare of spot policies do not mix: list the "
                         "policies in --compare");
    if (have_spot_policy && sj.npolicies != 1)
        die_usage("sim", "in a trace replay --spot-policy takes one policy, the default of jobs "
                         "without their own; to compare several, --compare "
                         "ondemand,greedy,uniform-progress");
    spw_spot_policy_t spots[SPW_SPOT_POLICY_COUNT];
    size_t nw = 1;
    if (cmp == CMP_SPOT)
        nw = parse_spot_policies("--compare", compare, spots);
    spw_config_t cfg;
    if (load_config(&cfg, config, "sim") < 0)
        return 1;
    spw_wait_t waits[16];
    waits[0] = cfg.policy.wait;
    if (wait && spw_wait_parse(wait, &waits[0], &err) < 0) {
        spw_config_free(&cfg);
        die_usage("sim", err.text);
    }
    if (gravity >= 0)
        cfg.policy.gravity = gravity;
    if (cmp == CMP_WAIT)
        nw = parse_compare(compare, waits, 16);
    spw_queue_order_t queues[SPW_QUEUE_COUNT];
    if (cmp == CMP_QUEUE) {
        int v[SPW_QUEUE_COUNT];
        nw = parse_items("--compare", compare, queue_item, v, SPW_QUEUE_COUNT, "fifo,fair");
        for (size_t i = 0; i < nw; i++)
            queues[i] = (spw_queue_order_t)v[i];
    }
    /* The command line overrides the config's spot: and failures:. */
    if (have_spot_policy)
        cfg.policy.spot_policy = sj.policies[0];
    if (have_overhead)
        cfg.policy.restart_overhead_s = sj.params.restart_overhead_s;
    if (have_ckpt)
        cfg.spot.checkpoint_interval_s = sj.params.checkpoint_interval_s;
    if (have_max_restarts)
        cfg.policy.max_restarts = max_restarts;
    if (have_recovery)
        cfg.policy.recovery = recovery;
    if (have_failover)
        cfg.policy.failover = failover;
    if (have_seed)
        cfg.spot.seed = sj.seed;
    if (failures) {
        spw_sim_failure_t *list;
        size_t n;
        if (spw_failures_load(failures, &cfg.fleet, &list, &n, &err) < 0) {
            fprintf(stderr, "spillway sim: %s\n", err.text);
            spw_config_free(&cfg);
            return 1;
        }
        free(cfg.failures.list);
        cfg.failures.list = list;
        cfg.failures.n = n;
    }
    spw_trace_t tr;
    if (spw_trace_load(&tr, trace, fmt, &cfg.fleet.models, &err) < 0) {
        fprintf(stderr, "spillway sim: %s\n", err.text);
        spw_config_free(&cfg);
        return 1;
    }
    if (check_trace_models(&cfg, &tr, trace) < 0) {
        spw_trace_free(&tr);
        spw_config_free(&cfg);
        return 1;
    }
    warn_trace(&tr, trace, quiet);
    spw_trace_bind_info_t bi;
    if (spw_trace_bind(&tr, &cfg.fleet.gov, cfg.spot.checkpoint_interval_s, &bi, &err) < 0) {
        fprintf(stderr, "spillway sim: %s\n", err.text);
        spw_trace_free(&tr);
        spw_config_free(&cfg);
        return 1;
    }
    warn_bind(&bi, quiet);
    if (!quiet)
        warn_spot(&cfg, &tr, config, have_overhead, have_ckpt);
    warn_spot_data(&cfg, &tr, config, spots, cmp == CMP_SPOT ? nw : 0);
    if (ts_out && tr.njobs) {
        /* A time series longer than this is a mistake in --step, not a wish. */
        double span = tr.jobs[tr.njobs - 1].submit_s - tr.jobs[0].submit_s;
        for (size_t i = 0; i < tr.njobs; i++)
            if (tr.runtime_s[i] > span - (tr.jobs[i].submit_s - tr.jobs[0].submit_s))
                span = tr.jobs[i].submit_s - tr.jobs[0].submit_s + tr.runtime_s[i];
        if (span / step > 1e8) {
            fprintf(stderr,
                    "spillway sim: --step %g over a trace spanning at least %.0f s would write "
                    "more than 100 million rows; use a larger --step\n",
                    step, span);
            spw_trace_free(&tr);
            spw_config_free(&cfg);
            return 1;
        }
    }
    spw_sim_world_t world;
    spw_sim_spot_t *spot;
    spw_sim_refusal_t *refusals;
    build_world(&cfg, &world, &spot, &refusals);
    char *cmdline = join_args(argc, argv);
    spw_html_inputs_t hin = {.trace_path = trace, .config_path = config, .command = cmdline,
                             .cfg = &cfg};
    int rc = run_scenarios(&cfg, &tr, waits, nw, spots, queues, &world, json, cmp, jobs_out, ts_out,
                           step, quiet, report, &hin);
    free(cmdline);
    free(spot);
    free(refusals);
    spw_trace_free(&tr);
    spw_config_free(&cfg);
    return rc;
}

/* ---- gen ------------------------------------------------------------------ */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int write_gen_csv(FILE *f, const spw_gen_job_t *jobs, size_t n)
{
    fprintf(f, "id,submit_s,gpus,runtime_s\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%zu,%.3f,%u,%.3f\n", i + 1, jobs[i].submit_s, jobs[i].gpus, jobs[i].runtime_s);
    return ferror(f) ? -1 : 0;
}

static int cmd_gen(int argc, char **argv)
{
    enum { O_JOBS = 256, O_RATE, O_CV, O_RUNTIME, O_GPUS, O_SEED };
    static const struct option opts[] = {
        {"jobs", required_argument, NULL, O_JOBS},
        {"rate", required_argument, NULL, O_RATE},
        {"cv", required_argument, NULL, O_CV},
        {"runtime", required_argument, NULL, O_RUNTIME},
        {"gpus", required_argument, NULL, O_GPUS},
        {"seed", required_argument, NULL, O_SEED},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    spw_gen_opts_t o = {.cv = 1, .runtime = SPW_DIST_EXP, .rt_a = 3600, .seed = 1};
    spw_error_t err;
    const char *runtime = NULL, *gpus = "1:0.7,2:0.15,4:0.1,8:0.05", *out = NULL;
    int have_jobs = 0, c;
    char *end;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_JOBS:
            if (parse_size(optarg, &o.jobs) < 0 || o.jobs == 0 || o.jobs > 100000000)
                die_usage("gen", "--jobs takes a count from 1 to 100000000");
            have_jobs = 1;
            break;
        case O_RATE:
            o.rate_per_h = strtod(optarg, &end);
            if (*end || !(o.rate_per_h > 0) || !isfinite(o.rate_per_h))
                die_usage("gen", "--rate takes jobs per hour > 0");
            break;
        case O_CV:
            o.cv = strtod(optarg, &end);
            if (*end || !(o.cv >= 0) || o.cv > 100)
                die_usage("gen", "--cv takes a number from 0 to 100");
            break;
        case O_RUNTIME: runtime = optarg; break;
        case O_GPUS: gpus = optarg; break;
        case O_SEED: {
            size_t s;
            if (parse_size(optarg, &s) < 0)
                die_usage("gen", "--seed takes a whole number >= 0");
            o.seed = s;
            break;
        }
        case 'o': out = optarg; break;
        case 'h': fputs(gen_usage, stdout); return 0;
        default: die_usage("gen", "unknown option");
        }
    }
    if (optind < argc)
        die_usage("gen", "unexpected argument");
    if (!have_jobs || o.rate_per_h <= 0)
        die_usage("gen", "--jobs N and --rate JOBS_PER_H are required");
    if (spw_gen_parse_gpus(&o, gpus, &err) < 0)
        die_usage("gen", err.text);
    if (runtime && spw_gen_parse_runtime(&o, runtime, &err) < 0) {
        fprintf(stderr, "spillway gen: %s\n", err.text);
        return 1;
    }
    spw_gen_job_t *jobs = spw_xmalloc(o.jobs * sizeof(*jobs));
    spw_gen(&o, jobs);
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "spillway gen: %s: cannot write: %s\n", out, strerror(errno));
        free(jobs);
        spw_gen_opts_free(&o);
        return 1;
    }
    static char buf[1 << 16];
    setvbuf(f, buf, _IOFBF, sizeof(buf));
    int rc = write_gen_csv(f, jobs, o.jobs);
    if ((f != stdout ? fclose(f) : fflush(f)) != 0 || rc < 0) {
        fprintf(stderr, "spillway gen: write failed: %s\n", strerror(errno));
        rc = -1;
    }
    free(jobs);
    spw_gen_opts_free(&o);
    return rc < 0 ? 1 : 0;
}

/* ---- demo ----------------------------------------------------------------- */

static int cmd_demo(int argc, char **argv)
{
    static const struct option opts[] = {
        {"jobs", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},
        {"report", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    size_t njobs = 3000, seed = 1;
    int json = 0, c;
    const char *report = NULL;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (parse_size(optarg, &njobs) < 0 || njobs == 0 || njobs > 10000000)
                die_usage("demo", "--jobs takes a count from 1 to 10000000");
            break;
        case 's':
            if (parse_size(optarg, &seed) < 0)
                die_usage("demo", "--seed takes a whole number");
            break;
        case 'o': json = parse_output("demo", optarg); break;
        case 'r': report = optarg; break;
        case 'h': fputs(demo_usage, stdout); return 0;
        default: die_usage("demo", "unknown option");
        }
    }
    spw_config_t cfg;
    if (load_config(&cfg, NULL, "demo") < 0)
        return 1;
    /* 32 GPUs; lognormal(1800 s, 1.2) has a mean of about 3,700 s; about 2 GPUs
     * a job; 17 jobs an hour is about 110% of the pool. */
    spw_gen_opts_t o = {.jobs = njobs, .rate_per_h = 17, .cv = 1.5, .seed = seed};
    spw_error_t err;
    spw_gen_parse_runtime(&o, "lognormal:1800:1.2", &err);
    spw_gen_parse_gpus(&o, "1:0.6,2:0.2,4:0.15,8:0.05", &err);
    spw_gen_job_t *g = spw_xmalloc(njobs * sizeof(*g));
    spw_gen(&o, g);
    /* Through the same CSV reader a user's trace takes. */
    size_t cap = njobs * 48 + 64, len = 0;
    char *csv = spw_xmalloc(cap);
    len += (size_t)snprintf(csv, cap, "id,submit_s,gpus,runtime_s\n");
    for (size_t i = 0; i < njobs; i++)
        len += (size_t)snprintf(csv + len, cap - len, "%zu,%.3f,%u,%.3f\n", i + 1, g[i].submit_s,
                                g[i].gpus, g[i].runtime_s);
    free(g);
    spw_trace_t tr;
    int rc = spw_trace_load_mem(&tr, "<demo workload>", csv, len, SPW_TRACE_SPILLWAY,
                                &cfg.fleet.models, &err);
    free(csv);
    if (rc < 0) {
        fprintf(stderr, "spillway demo: %s\n", err.text);
        spw_config_free(&cfg);
        return 1;
    }
    if (!json)
        printf("Demo: %zu synthetic jobs over %.0f days on 4 nodes x 8 A100 ($1.10/GPU-h "
               "amortised),\ncloud at $2.50/GPU-h.  What does each burst policy cost, and how "
               "long do jobs wait?\n\n",
               njobs, tr.njobs ? tr.jobs[tr.njobs - 1].submit_s / 86400 : 0);
    spw_wait_t waits[4];
    const char *names[] = {"never", "none", "constant:3600", "compute:0.25"};
    for (int i = 0; i < 4; i++)
        spw_wait_parse(names[i], &waits[i], &err);
    char *cmdline = join_args(argc, argv);
    spw_html_inputs_t hin = {.trace_path = "<demo workload>", .command = cmdline, .cfg = &cfg};
    rc = run_scenarios(&cfg, &tr, waits, 4, NULL, NULL, NULL, json, CMP_WAIT, NULL, NULL, 0, 1, report,
                       &hin);
    free(cmdline);
    if (report && rc == 0 && !json)
        printf("\nThe report with charts: %s (open it in a browser; it works offline)\n", report);
    if (!json && rc == 0)
        printf("\nnever = on-prem only; none = burst at once when nothing is free;\n"
               "constant:3600 = wait an hour; compute:0.25 = wait 0.25 x GPUs x runtime "
               "(Starburst's Compute-Wait).\nTry your own trace: spillway sim --trace FILE "
               "--compare never,none,compute:0.25\n");
    spw_trace_free(&tr);
    spw_config_free(&cfg);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------- */

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} command_t;

static const command_t commands[] = {
    {"sim", cmd_sim, sim_usage},
    {"plan", spw_cli_plan, spw_cli_plan_usage},
    {"gen", cmd_gen, gen_usage},
    {"demo", cmd_demo, demo_usage},
    {"serve", spw_cli_serve, NULL},  /* its usage: spw_cli_serve --help */
    {"policy", spw_cli_policy, NULL},  /* its usage: spw_cli_policy --help */
    {"submit", spw_cli_submit, spw_cli_submit_usage},
    {"queue", spw_cli_queue, spw_cli_queue_usage},
    {"show", spw_cli_show, spw_cli_show_usage},
    {"cancel", spw_cli_cancel, spw_cli_cancel_usage},
    {"explain", spw_cli_explain, spw_cli_explain_usage},
    {"logs", spw_cli_logs, spw_cli_logs_usage},
    {"context", spw_cli_context, spw_cli_context_usage},
    {"pools", spw_cli_pools, spw_cli_pools_usage},
    {"costs", spw_cli_costs, spw_cli_costs_usage},
    {"audit", spw_cli_audit, spw_cli_audit_usage},
    {"instances", spw_cli_instances, spw_cli_instances_usage},
    {"admin", spw_cli_admin, spw_cli_admin_usage},
    {"slurm", spw_cli_slurm, NULL},  /* its usage: spw_cli_slurm --help */
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(main_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2)
            for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    if (!commands[i].usage) {
                        char *help_argv[] = {argv[2], "--help", NULL};
                        return commands[i].run(2, help_argv);
                    }
                    fputs(commands[i].usage, stdout);
                    return 0;
                }
        fputs(main_usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("spillway %s\n", SPW_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    /* A typo gets a suggestion, not the whole usage. */
    enum { NCOMMANDS = sizeof(commands) / sizeof(commands[0]) };
    const char *names[NCOMMANDS + 3];
    for (size_t i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i].name;
    names[NCOMMANDS] = "help";
    names[NCOMMANDS + 1] = "version";
    names[NCOMMANDS + 2] = NULL;
    const char *near = spw_names_closest(names, (size_t)-1, cmd);
    char list[512];
    fprintf(stderr, "spillway: unknown command '%s'", cmd);
    if (near)
        fprintf(stderr, "; did you mean '%s'?\n", near);
    else
        fprintf(stderr, "; the commands are:\n    %s\n",
                spw_names_wrap(names, 60, "\n    ", list, sizeof(list)));
    fprintf(stderr, "(spillway --help says what each does)\n");
    return 2;
}

