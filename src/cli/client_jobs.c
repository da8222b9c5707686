/* client_jobs.c: the job commands of the client: submit, queue, show,
 * cancel, explain and logs (docs/api.md, "Jobs"). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/client_private.h"
#include "daemon/jobspec.h"
#include "util/error.h"
#include "util/file.h"

const char spw_cli_submit_usage[] =
    "usage: spillway submit FILE|- [OPTIONS]\n"
    "       spillway submit --gpus N [OPTIONS] -- COMMAND [ARG...]\n"
    "       spillway submit --sbatch SCRIPT [OPTIONS] [-- ARG...]\n"
    "\n"
    "Queues one job on the daemon and prints its id.  The job is a spec file\n"
    "(YAML or JSON, the fields of docs/daemon.md; '-' reads it from stdin), or\n"
    "it is built from the options below and runs COMMAND directly (no shell).\n"
    "\n"
    "Options that build the job (with a COMMAND):\n"
    "  --gpus N             GPUs the job needs (required with a COMMAND)\n"
    "  --model M            the GPU model it needs: A100, or A100|H100 for either\n"
    "  --name NAME          a name to know it by in `spillway queue`\n"
    "  --team TEAM          the team it is filed under (a team token files it\n"
    "                       under the token's team)\n"
    "  --est-runtime D      how long it should run: 90s, 30m, 1h30m, 2h, or as\n"
    "                       Slurm writes it: 01:30:00, 2-12:00:00; helps the\n"
    "                       scheduler decide between waiting and bursting\n"
    "  --max-runtime D      stop it after it has run this long\n"
    "  --priority P         larger runs first (default 0)\n"
    "  --gpus-per-node N    it may span nodes of N GPUs each (a gang: one process\n"
    "                       per node, RANK/WORLD_SIZE/MASTER_ADDR set; in the\n"
    "                       cloud, several instances); default: one node\n"
    "  --retries N          re-runs after a failure, 0 to 100 (default 0)\n"
    "  --deadline T         it should end by T: 2026-11-21T18:00:00Z or unix seconds\n"
    "  --spot MODE          auto (its spot policy decides), always (spot capacity\n"
    "                       only: it waits for spot) or never\n"
    "  --spot-policy P      ondemand, greedy or uniform-progress (default: the\n"
    "                       config's spot.policy)\n"
    "  --checkpoint-interval D  how often it saves its progress to\n"
    "                       $SPILLWAY_CHECKPOINT_DIR: 10m, 1h; 0 = never (an\n"
    "                       interrupted attempt starts over); continuous\n"
    "  --workdir DIR        where it runs (a relative DIR is taken from here);\n"
    "                       default: the directory submit is run in, which the\n"
    "                       job's user must be able to enter\n"
    "  --env K=V            an environment variable; repeat for more\n"
    "  --image IMG          run it in a container: an unpacked root filesystem\n"
    "                       (a directory on the host, run under bubblewrap), an\n"
    "                       OCI image archive (a .tar file, unpacked on the host),\n"
    "                       or a registry reference such as\n"
    "                       docker.io/library/ubuntu:22.04 (run with podman where\n"
    "                       the host has it); a path starting with . is taken\n"
    "                       from here (docs/hosts.md)\n"
    "  --class C            its governance class (rules match it; a class named like\n"
    "                       a residency gives it that residency)\n"
    "  --label K=V          a label rules match as key=value; repeat for more\n"
    "  --data DATASET       the dataset it reads (the config's data.datasets): egress\n"
    "                       and transfer time count where the data is not\n"
    "  --residency R        a residency of the config: where it may run\n"
    "  --sbatch SCRIPT      run a Slurm batch script: its #SBATCH --gres=gpu:N,\n"
    "                       --gpus, --gpus-per-node, --nodes, --time, --job-name,\n"
    "                       --output and --error are read (options given here\n"
    "                       win); others are ignored, with a warning\n"
    "\n"
    "Options of every client command:\n"
    SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway submit job.yaml\n"
    "  spillway submit --gpus 2 --model A100 --name train --est-runtime 2h -- \\\n"
    "      python train.py --epochs 3\n"
    "  id=$(spillway submit --gpus 1 -- nvidia-smi) && spillway logs -f \"$id\"\n"
    "  spillway submit --gpus 1 --env SEED=7 -- sh -c 'python eval.py > out.txt'\n"
    "  spillway submit --gpus 1 --image /srv/images/pytorch --workdir . -- \\\n"
    "      python3 train.py\n"
    "  printf 'run: [python, eval.py]\\ngpus: A100:1\\n' | spillway submit - -o json\n"
    "  spillway submit --sbatch train.sbatch -- --epochs 3\n"
    SPW_CLI_EXIT_HELP;

const char spw_cli_queue_usage[] =
    "usage: spillway queue [--state S] [--team T] [--all] [--watch[=D]] [OPTIONS]\n"
    "\n"
    "Lists jobs, oldest first: where each runs or will run, for how long, and\n"
    "what it has cost so far.  Ended jobs are left out unless --all or --state\n"
    "asks for them.  Under fair share (quotas or queue: fair), a table under\n"
    "the jobs gives each team's and cohort's nominal, used, borrowed and lent\n"
    "on-prem GPUs now (GET /v1/teams; docs/fairshare.md).\n"
    "\n"
    "  --state S            only jobs in state S: queued, placed (cloud instance\n"
    "                       booting), running, succeeded, failed, cancelled or\n"
    "                       rejected (its team's budget ran out)\n"
    "  --team T             only team T's jobs (a team token sees only its own)\n"
    "  -a, --all            ended jobs too\n"
    "  --watch[=D]          print it again every D (default 2s) until interrupted\n"
    SPW_CLI_COMMON_HELP
    "\n"
    "Columns: AGE/RUNTIME is the time since submit for a job not started yet,\n"
    "else its running time; COST is what it has cost so far; WHERE cloud* is\n"
    "the emulated cloud.  -o json prints {\"jobs\": [...], \"next_after\": null}\n"
    "with every page the daemon gave, filtered the same way.\n"
    "\n"
    "Examples:\n"
    "  spillway queue\n"
    "  spillway queue --all --team ml\n"
    "  spillway queue --watch=5s\n"
    "  spillway queue --state failed -o json | jq -r '.jobs[].id'\n"
    SPW_CLI_EXIT_HELP;

const char spw_cli_show_usage[] =
    "usage: spillway show ID [OPTIONS]\n"
    "\n"
    "Prints one job as 'key: value' lines: its state, times, placement, cost\n"
    "and the spec it was submitted with (spec.* lines).\n"
    "\n" SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway show j-000042\n"
    "  spillway show j-000042 -o json | jq .exit_code\n"
    SPW_CLI_EXIT_HELP;

const char spw_cli_cancel_usage[] =
    "usage: spillway cancel ID... [OPTIONS]\n"
    "       spillway cancel [--team T] [--label K=V]... [OPTIONS]\n"
    "\n"
    "Cancels jobs: those named, or every job not ended yet of team T and with\n"
    "all the labels given.  A queued job, or one whose cloud instance is\n"
    "booting, is cancelled at once; a running one is sent SIGTERM (SIGKILL\n"
    "after the daemon's kill_grace_s) and is cancelled once it has exited.\n"
    "Cancelling a job that has already ended is an error (exit status 1);\n"
    "the others named are still cancelled.\n"
    "\n"
    "  --team T             the jobs of team T (a team token sees only its own)\n"
    "  --label K=V          the jobs labelled K=V; repeat for more (all must match)\n"
    SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway cancel j-000042\n"
    "  spillway cancel j-000042 j-000043 j-000044\n"
    "  spillway cancel --team ml --label sweep=lr-3\n"
    SPW_CLI_EXIT_HELP;

const char spw_cli_explain_usage[] =
    "usage: spillway explain ID [--all] [OPTIONS]\n"
    "\n"
    "Says why a job is where it is: the placement the scheduler last decided\n"
    "(or why it was rejected or is held) and, as of now, every candidate (each\n"
    "on-prem pool, the wait policy, each cloud offer) with whether it could take\n"
    "the job, and if not why, when it could start, and what it would cost.\n"
    "With a large catalog the table shows the best few offers of each provider\n"
    "and counts the rest by reason; --all lists every candidate.\n"
    "\n"
    "  --all                every candidate, one line each\n"
    SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway explain j-000042\n"
    "  spillway explain j-000042 -o json | jq '.candidates[] | select(.ok)'\n"
    SPW_CLI_EXIT_HELP;

const char spw_cli_logs_usage[] =
    "usage: spillway logs ID [-f] [--stdout|--stderr] [--rank N|--all-ranks] [OPTIONS]\n"
    "\n"
    "Writes what the job has written, as raw bytes: its stdout to stdout and\n"
    "its stderr to stderr.  A gang's ranks each have their own logs.\n"
    "\n"
    "  -f, --follow         keep polling (every 0.5 s) until the job has ended\n"
    "                       and everything it wrote has been printed; the\n"
    "                       daemon may restart meanwhile (logs -f reconnects,\n"
    "                       for up to 10 minutes); then exits with the job's\n"
    "                       status (below)\n"
    "  --stdout             only the job's stdout\n"
    "  --stderr             only the job's stderr, written to stdout\n"
    "  --rank N             rank N of a gang (default 0, the first node's)\n"
    "  --all-ranks          every rank, each line prefixed with [rank N]\n"
    "  --url URL            the daemon (default: $SPILLWAY_URL, else\n"
    "                       " SPW_CLI_DEFAULT_URL ")\n"
    "  --token-file FILE    read the bearer token from FILE (mode 600); default:\n"
    "                       $SPILLWAY_TOKEN, else the file $SPILLWAY_TOKEN_FILE\n"
    "\n"
    "Examples:\n"
    "  spillway logs j-000042\n"
    "  spillway logs -f j-000042 | tee train.log\n"
    "  spillway logs --stderr j-000042 | tail\n"
    "  spillway logs --all-ranks j-000042 | grep loss\n"
    "\n"
    "Exit status: 0 done; 1 the daemon refused (its message is on stderr);\n"
    "2 bad usage, or the daemon cannot be reached.  With -f, once the job has\n"
    "ended: 0 if it succeeded, its exit code if it failed with one (1 when it\n"
    "has none, or was cancelled or rejected).\n";

/* Parses a command that takes the common options and one job id. */
static const char *parse_id_cmd(int argc, char **argv, const char *cmd, const char *usage,
                                spw_cli_common_t *co)
{
    static const struct option opts[] = {SPW_CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int c;
    spw_cli_common_init(co);
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            exit(0);
        }
        if (!spw_cli_common_opt(co, cmd, c, optarg))
            spw_cli_die_usage(cmd, "unknown option");
    }
    if (optind >= argc)
        spw_cli_die_usage(cmd, "missing the job id (as `spillway queue` shows it: j-000042)");
    if (optind + 1 < argc)
        spw_cli_die_usage(cmd, "one job id at a time");
    if (!*argv[optind])
        spw_cli_die_usage(cmd, "the job id is empty");
    return argv[optind];
}

static int is_ended(const char *state)
{
    return state && (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
                     strcmp(state, "cancelled") == 0 || strcmp(state, "rejected") == 0);
}

/* ---- submit ------------------------------------------------------------------ */

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Puts the options' gpus (with model; none when 0), env and labels into
 * spec; env and labels are consumed. */
static void spec_common(json_t *spec, const char *model, long gpus, json_t *env, json_t *labels)
{
    if (gpus && model) {
        char g[160];
        snprintf(g, sizeof(g), "%s:%ld", model, gpus);
        json_object_set_new(spec, "gpus", json_string(g));
    } else if (gpus) {
        json_object_set_new(spec, "gpus", json_integer(gpus));
    }
    if (json_object_size(env))
        json_object_set(spec, "env", env);
    if (json_object_size(labels))
        json_object_set(spec, "labels", labels);
    json_decref(env);
    json_decref(labels);
}

/* Adds --label K=V (arg) to the object labels; exits 2 for a bad one. */
static void add_label(json_t *labels, const char *cmd, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        spw_cli_die_usage(cmd, "--label takes KEY=VALUE, e.g. --label env=prod");
    char *key = spw_xstrdup(arg);
    key[eq - arg] = '\0';
    json_object_set_new(labels, key, json_string(eq + 1));
    free(key);
}

/* Sets key to a duration as the user wrote it ("1h30m"), after checking it. */
static void set_duration(json_t *spec, const char *key, const char *opt, const char *s)
{
    double v;
    if (spw_parse_duration(s, &v) < 0 || !(v > 0)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s takes a duration > 0 such as 90s, 30m, 1h30m, 3600, "
                 "01:30:00 or 1-12:00:00",
                 opt);
        spw_cli_die_usage("submit", msg);
    }
    json_object_set_new(spec, key, json_string(s));
}

static char *absolute_dir(const char *dir)
{
    if (dir[0] == '/')
        return spw_xstrdup(dir);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd))) {
        fprintf(stderr, "spillway submit: --workdir %s: cannot tell the current directory: %s\n",
                dir, strerror(errno));
        exit(SPW_CLI_EREMOTE);
    }
    if (strcmp(dir, ".") == 0)
        return spw_xstrdup(cwd);
    size_t n = strlen(cwd) + strlen(dir) + 2;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s/%s", cwd, dir);
    return p;
}

/* Sends a job spec (body[0..len), of content type ctype; freed here) and
 * prints the new job's id; body_name names the file it came from. */
static int submit_body(const spw_cli_common_t *co, char *body, size_t len, const char *ctype,
                       const char *body_name)
{
    spw_client_t cl;
    spw_resp_t r;
    json_t *doc = NULL;
    spw_client_open(&cl, co, "submit");
    cl.body_name = body_name;
    int rc = spw_client_request(&cl, "POST", "/v1/jobs", body, len, ctype, &r);
    free(body);
    if (rc == SPW_CLI_OK)
        rc = spw_client_parse(&cl, &r, &doc);
    if (rc == SPW_CLI_OK) {
        const char *id = spw_cli_jstr(doc, "id");
        if (co->json) {
            spw_cli_json_print(stdout, doc);
        } else if (id) {
            printf("%s\n", id);
        } else {
            fprintf(stderr, "spillway: submit: the daemon's answer has no job id\n");
            rc = SPW_CLI_EREMOTE;
        }
    }
    json_decref(doc);
    spw_resp_free(&r);
    spw_client_close(&cl);
    return rc ? rc : spw_cli_flush("submit");
}

/* Sends spec (consumed), run where submit is run unless it says. */
static int submit_spec(const spw_cli_common_t *co, json_t *spec)
{
    /* Like sbatch, the job runs where it was submitted from. */
    if (!json_object_get(spec, "workdir")) {
        char *here = absolute_dir(".");
        json_object_set_new(spec, "workdir", json_string(here));
        free(here);
    }
    char *body = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(spec);
    if (!body) {
        fprintf(stderr, "spillway submit: an argument is not valid UTF-8\n");
        return SPW_CLI_EUNREACH;
    }
    return submit_body(co, body, strlen(body), "application/json", NULL);
}

int spw_cli_submit(int argc, char **argv)
{
    enum {
        O_GPUS = SPW_CLI_O_FIRST, O_MODEL, O_NAME, O_TEAM, O_EST, O_MAX, O_PRIO, O_RETRIES, O_GPN,
        O_DEADLINE, O_WORKDIR, O_ENV, O_SPOT, O_SPOT_POLICY, O_CKPT, O_CLASS, O_LABEL, O_DATA,
        O_RESIDENCY, O_IMAGE, O_SBATCH
    };
    static const struct option opts[] = {
        {"gpus", required_argument, NULL, O_GPUS},
        {"model", required_argument, NULL, O_MODEL},
        {"name", required_argument, NULL, O_NAME},
        {"team", required_argument, NULL, O_TEAM},
        {"est-runtime", required_argument, NULL, O_EST},
        {"max-runtime", required_argument, NULL, O_MAX},
        {"priority", required_argument, NULL, O_PRIO},
        {"gpus-per-node", required_argument, NULL, O_GPN},
        {"retries", required_argument, NULL, O_RETRIES},
        {"deadline", required_argument, NULL, O_DEADLINE},
        {"workdir", required_argument, NULL, O_WORKDIR},
        {"env", required_argument, NULL, O_ENV},
        {"spot", required_argument, NULL, O_SPOT},
        {"spot-policy", required_argument, NULL, O_SPOT_POLICY},
        {"checkpoint-interval", required_argument, NULL, O_CKPT},
        {"class", required_argument, NULL, O_CLASS},
        {"label", required_argument, NULL, O_LABEL},
        {"data", required_argument, NULL, O_DATA},
        {"residency", required_argument, NULL, O_RESIDENCY},
        {"image", required_argument, NULL, O_IMAGE},
        {"sbatch", required_argument, NULL, O_SBATCH},
        SPW_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    /* Everything after the first "--" is the command, never options. */
    int nopt = argc, have_cmd = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            nopt = i;
            have_cmd = 1;
            break;
        }
    spw_cli_common_t co;
    spw_cli_common_init(&co);
    json_t *spec = json_object(), *env = json_object(), *labels = json_object();
    long gpus = 0, v;
    const char *model = NULL, *sbatch = NULL;
    int spec_opts = 0, c;
    while ((c = getopt_long(nopt, argv, "o:h", opts, NULL)) != -1) {
        spec_opts += c >= SPW_CLI_O_FIRST;
        switch (c) {
        case O_GPUS:
            if (parse_int(optarg, 1, SPW_JOBSPEC_MAX_GPUS, &gpus) < 0)
                spw_cli_die_usage("submit", "--gpus takes a whole number of GPUs >= 1");
            break;
        case O_MODEL:
            if (!*optarg || strchr(optarg, ':'))
                spw_cli_die_usage("submit", "--model takes a GPU model such as A100 or A100|H100");
            model = optarg;
            break;
        case O_NAME: json_object_set_new(spec, "name", json_string(optarg)); break;
        case O_TEAM: json_object_set_new(spec, "team", json_string(optarg)); break;
        case O_EST: set_duration(spec, "est_runtime", "--est-runtime", optarg); break;
        case O_MAX: set_duration(spec, "max_runtime", "--max-runtime", optarg); break;
        case O_PRIO:
            if (parse_int(optarg, INT32_MIN, INT32_MAX, &v) < 0)
                spw_cli_die_usage("submit", "--priority takes a whole number, e.g. 10 or -5");
            json_object_set_new(spec, "priority", json_integer(v));
            break;
        case O_GPN:
            if (parse_int(optarg, 1, 1024, &v) < 0)
                spw_cli_die_usage("submit", "--gpus-per-node takes a count from 1 to 1024");
            json_object_set_new(spec, "gpus_per_node", json_integer(v));
            break;
        case O_RETRIES:
            if (parse_int(optarg, 0, SPW_JOBSPEC_MAX_RETRIES, &v) < 0)
                spw_cli_die_usage("submit", "--retries takes a count from 0 to 100");
            json_object_set_new(spec, "retries", json_integer(v));
            break;
        case O_DEADLINE: {
            double ts;
            char *end;
            strtod(optarg, &end);
            if ((end == optarg || *end) && spw_parse_rfc3339(optarg, &ts) < 0)
                spw_cli_die_usage("submit", "--deadline takes a time such as "
                                            "2026-11-21T18:00:00Z, or unix seconds");
            json_object_set_new(spec, "deadline", json_string(optarg));
            break;
        }
        case O_SPOT:
            if (strcmp(optarg, "auto") && strcmp(optarg, "always") && strcmp(optarg, "never"))
                spw_cli_die_usage("submit", "--spot takes auto, always or never");
            json_object_set_new(spec, "spot", json_string(optarg));
            break;
        case O_SPOT_POLICY:
            if (strcmp(optarg, "ondemand") && strcmp(optarg, "greedy") &&
                strcmp(optarg, "uniform-progress"))
                spw_cli_die_usage("submit", "--spot-policy takes ondemand, greedy or "
                                            "uniform-progress");
            json_object_set_new(spec, "spot_policy", json_string(optarg));
            break;
        case O_CKPT: {
            double iv;
            if (strcmp(optarg, "continuous") && (spw_parse_duration(optarg, &iv) < 0 || iv < 0))
                spw_cli_die_usage("submit", "--checkpoint-interval takes a duration such as "
                                            "10m, 0 (never) or continuous");
            json_object_set_new(spec, "checkpoint_interval", json_string(optarg));
            break;
        }
        case O_WORKDIR: {
            if (!*optarg)
                spw_cli_die_usage("submit", "--workdir takes a directory");
            char *dir = absolute_dir(optarg);
            json_object_set_new(spec, "workdir", json_string(dir));
            free(dir);
            break;
        }
        case O_IMAGE: {
            if (!*optarg)
                spw_cli_die_usage("submit", "--image takes a root filesystem directory, an OCI "
                                            "archive or a registry reference");
            /* ./rootfs, ../img.tar: this machine's paths, made absolute;
             * anything else goes as written (the daemon checks it). */
            char *img = optarg[0] == '.' ? absolute_dir(optarg) : spw_xstrdup(optarg);
            json_object_set_new(spec, "image", json_string(img));
            free(img);
            break;
        }
        case O_SBATCH: sbatch = optarg; break;
        case O_CLASS: json_object_set_new(spec, "class", json_string(optarg)); break;
        case O_DATA: json_object_set_new(spec, "data", json_string(optarg)); break;
        case O_RESIDENCY: json_object_set_new(spec, "residency", json_string(optarg)); break;
        case O_LABEL: add_label(labels, "submit", optarg); break;
        case O_ENV: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg)
                spw_cli_die_usage("submit", "--env takes KEY=VALUE, e.g. --env SEED=7");
            size_t klen = (size_t)(eq - optarg);
            char *key = spw_xmalloc(klen + 1);
            memcpy(key, optarg, klen);
            key[klen] = '\0';
            json_object_set_new(env, key, json_string(eq + 1));
            free(key);
            break;
        }
        case 'h':
            fputs(spw_cli_submit_usage, stdout);
            json_decref(spec);
            json_decref(env);
            return 0;
        default:
            if (!spw_cli_common_opt(&co, "submit", c, optarg))
                spw_cli_die_usage("submit", "unknown option");
        }
    }
    if (sbatch) {
        if (have_cmd && nopt + 1 < argc && optind < nopt)
            spw_cli_die_usage("submit", "--sbatch SCRIPT takes the script's arguments after "
                                        "it or after '--', not both");
        spec_common(spec, model, gpus, env, labels);
        int first = have_cmd ? nopt + 1 : optind, last = have_cmd ? argc : nopt;
        int src = spw_cli_sbatch_spec(spec, sbatch, argv + first, last - first);
        if (src != SPW_CLI_OK) {
            json_decref(spec);
            return src;
        }
        return submit_spec(&co, spec);
    }
    const char *file = optind < nopt ? argv[optind] : NULL;
    if (spec_opts && !have_cmd && file && access(file, F_OK) == 0)
        spw_cli_die_usage("submit", "--gpus, --name and the like build a job around a COMMAND; "
                                    "with a spec FILE, set them in the file");
    if (spec_opts && !have_cmd)
        spw_cli_die_usage("submit", file ? "the command goes after '--': spillway submit "
                                           "--gpus N [OPTIONS] -- COMMAND [ARG...]"
                                         : "missing '-- COMMAND [ARG...]' after the options");
    if (optind + 1 < nopt)
        spw_cli_die_usage("submit", "one spec file at a time; a command goes after '--'");
    if (file && have_cmd)
        spw_cli_die_usage("submit", "give either a spec FILE, or --gpus N [OPTIONS] -- COMMAND, "
                                    "not both");
    if (!file && !have_cmd)
        spw_cli_die_usage("submit", "missing the job: a spec FILE ('-' for stdin), or "
                                    "--gpus N -- COMMAND [ARG...]");
    if (have_cmd && nopt + 1 >= argc)
        spw_cli_die_usage("submit", "missing the command after '--'");
    if (have_cmd && !gpus)
        spw_cli_die_usage("submit", "--gpus N is required with a command");

    char *body;
    size_t len;
    const char *ctype = "application/json";
    if (file) {
        spw_error_t err;
        body = spw_read_file(strcmp(file, "-") == 0 ? "/dev/stdin" : file, &len, &err);
        if (!body) {
            fprintf(stderr, "spillway submit: %s\n", err.text);
            json_decref(labels);
    json_decref(spec);
            json_decref(env);
            return SPW_CLI_EREMOTE;
        }
        size_t i = strspn(body, " \t\r\n");
        if (body[i] != '{')
            ctype = "application/yaml";
    } else {
        json_t *run = json_array();
        for (int i = nopt + 1; i < argc; i++)
            json_array_append_new(run, json_string(argv[i]));
        json_object_set_new(spec, "run", run);
        spec_common(spec, model, gpus, env, labels);
        return submit_spec(&co, spec);
    }
    json_decref(labels);
    json_decref(spec);
    json_decref(env);
    return submit_body(&co, body, len, ctype, file ? strcmp(file, "-") == 0 ? "stdin" : file
                                                   : NULL);
}

/* ---- queue ------------------------------------------------------------------- */

/* "2", "A100:2", "A100|H100:2": as the spec writes it. */
static void gpus_text(const json_t *job, char *buf, size_t len)
{
    double g = 0;
    spw_cli_jnum(job, "gpus", &g);
    json_t *models = json_object_get(job, "gpu_models");
    size_t n = json_array_size(models), k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && k + 1 < len; i++) {
        const char *m = json_string_value(json_array_get(models, i));
        if (m)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? "|" : "", m);
    }
    if (k >= len)
        k = len - 1;
    snprintf(buf + k, len - k, "%s%.0f", k ? ":" : "", g);
}

static void job_row(spw_table_t *t, const json_t *job, double now, int *emulated)
{
    const char *state = spw_cli_jstr(job, "state");
    const char *where = spw_cli_jstr(job, "where");
    char st[64], g[96], w[32], age[32], cost[32], why[48] = "-";
    double submit, start, end, burst;
    snprintf(st, sizeof(st), "%s%s", state ? state : "?",
             spw_cli_jbool(job, "cancel_requested") && !is_ended(state) ? " (cancelling)" : "");
    gpus_text(job, g, sizeof(g));
    snprintf(w, sizeof(w), "%s", where ? where : "-");
    if (where && spw_cli_jbool(job, "emulated")) {
        strcat(w, "*");
        *emulated = 1;
    }
    snprintf(age, sizeof(age), "-");
    if (spw_cli_jnum(job, "start_ts", &start) == 0) {
        if (spw_cli_jnum(job, "end_ts", &end) < 0)
            end = now;
        spw_cli_dur(end - start, age, sizeof(age));
    } else if (!is_ended(state) && spw_cli_jnum(job, "submit_ts", &submit) == 0) {
        spw_cli_dur(now - submit, age, sizeof(age));
    }
    /* REASON, as squeue's: why a queued job waits, in a word (show gives
     * the sentence); a job that will burst says in how long. */
    const char *code = spw_cli_jstr(job, "reason_code");
    if (code && spw_cli_jnum(job, "burst_ts", &burst) == 0) {
        char in[32];
        snprintf(why, sizeof(why), "burst in %s", spw_cli_dur(burst - now, in, sizeof(in)));
    } else if (code) {
        snprintf(why, sizeof(why), "%s", code);
    }
    spw_table_row(t, spw_cli_jstr(job, "id"), spw_cli_jstr(job, "name"),
                  spw_cli_jstr(job, "team"), st, g, w, spw_cli_jstr(job, "placement"), age,
                  spw_cli_money(job, "cost_usd", cost, sizeof(cost)), why);
}

/* Every job the daemon lists (paging through), of state and team when
 * given, ended ones left out (counted in *hidden) unless all or state.
 * *jobs: a new array (caller decrefs).  0, or the exit status after
 * printing why. */
static int fetch_jobs(const spw_cli_common_t *co, const char *cmd, const char *state,
                      const char *team, int all, json_t **jobs_out, size_t *hidden_out)
{
    spw_client_t cl;
    spw_client_open(&cl, co, cmd);
    char *qstate = state ? spw_client_escape(state) : NULL;
    char *qteam = team ? spw_client_escape(team) : NULL;
    json_t *jobs = json_array();
    long long after = -1;
    size_t hidden = 0;
    int rc = SPW_CLI_OK;
    for (;;) {
        char path[1024];
        size_t n = (size_t)snprintf(path, sizeof(path), "/v1/jobs?limit=1000");
        if (qstate)
            n += (size_t)snprintf(path + n, sizeof(path) - n, "&state=%s", qstate);
        if (qteam && n < sizeof(path))
            n += (size_t)snprintf(path + n, sizeof(path) - n, "&team=%s", qteam);
        if (after >= 0 && n < sizeof(path))
            n += (size_t)snprintf(path + n, sizeof(path) - n, "&after=%lld", after);
        if (n >= sizeof(path))
            spw_cli_die_usage(cmd, "--team is too long");
        json_t *page;
        if ((rc = spw_client_get_json(&cl, path, &page)) != SPW_CLI_OK)
            break;
        json_t *list = json_object_get(page, "jobs"), *job;
        size_t i;
        if (!json_is_array(list)) {
            fprintf(stderr, "spillway: %s: the daemon's answer has no \"jobs\" list\n", cmd);
            json_decref(page);
            rc = SPW_CLI_EREMOTE;
            break;
        }
        json_array_foreach(list, i, job) {
            if (!all && !state && is_ended(spw_cli_jstr(job, "state")))
                hidden++;
            else
                json_array_append(jobs, job);
        }
        json_t *next = json_object_get(page, "next_after");
        int more = json_is_integer(next);
        long long nx = more ? json_integer_value(next) : -1;
        json_decref(page);
        if (!more)
            break;
        if (nx <= after) {
            fprintf(stderr, "spillway: %s: the daemon's next_after %lld does not move past "
                            "%lld; stopped paging\n", cmd, nx, after);
            rc = SPW_CLI_EREMOTE;
            break;
        }
        after = nx;
    }
    free(qstate);
    free(qteam);
    spw_client_close(&cl);
    if (rc != SPW_CLI_OK) {
        json_decref(jobs);
        return rc;
    }
    *jobs_out = jobs;
    *hidden_out = hidden;
    return SPW_CLI_OK;
}

static int queue_print(const spw_cli_common_t *cop, json_t *jobs_in, size_t hidden,
                       const char *state, const char *team);

int spw_cli_queue(int argc, char **argv)
{
    enum { O_STATE = SPW_CLI_O_FIRST, O_TEAM, O_WATCH };
    static const struct option opts[] = {
        {"state", required_argument, NULL, O_STATE},
        {"team", required_argument, NULL, O_TEAM},
        {"all", no_argument, NULL, 'a'},
        {"watch", optional_argument, NULL, O_WATCH},
        SPW_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    static const char *const states[] = {"queued", "placed", "running",
                                         "succeeded", "failed", "cancelled", "rejected"};
    spw_cli_common_t co;
    spw_cli_common_init(&co);
    const char *state = NULL, *team = NULL;
    int all = 0, c;
    double watch = 0;
    while ((c = getopt_long(argc, argv, "ao:h", opts, NULL)) != -1) {
        switch (c) {
        case O_WATCH:
            watch = 2;
            if (optarg && (spw_parse_duration(optarg, &watch) < 0 || !(watch >= 0.1) ||
                           watch > 86400))
                spw_cli_die_usage("queue", "--watch=D takes a period from 0.1s to 1d: 5, 10s, 1m");
            break;
        case O_STATE: {
            int found = 0;
            for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
                found |= strcmp(optarg, states[i]) == 0;
            if (!found)
                spw_cli_die_usage("queue", "--state takes queued, placed, running, succeeded, "
                                           "failed, cancelled or rejected");
            state = optarg;
            break;
        }
        case O_TEAM:
            if (!*optarg)
                spw_cli_die_usage("queue", "--team takes a team name");
            team = optarg;
            break;
        case 'a': all = 1; break;
        case 'h': fputs(spw_cli_queue_usage, stdout); return 0;
        default:
            if (!spw_cli_common_opt(&co, "queue", c, optarg))
                spw_cli_die_usage("queue", "unknown option");
        }
    }
    if (optind < argc)
        spw_cli_die_usage("queue", "unexpected argument; to see one job: spillway show ID");

    for (;;) {
        json_t *jobs;
        size_t hidden;
        int rc = fetch_jobs(&co, "queue", state, team, all, &jobs, &hidden);
        if (rc != SPW_CLI_OK)
            return rc;
        if (watch > 0 && isatty(STDOUT_FILENO))
            fputs("\033[H\033[2J", stdout);  /* as watch(1): the screen anew */
        rc = queue_print(&co, jobs, hidden, state, team);
        json_decref(jobs);
        if (rc != SPW_CLI_OK || !(watch > 0))
            return rc;
        struct timespec ts = {(time_t)watch, (long)((watch - (double)(time_t)watch) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Prints jobs as queue does (a table, or -o json). */
static int queue_print(const spw_cli_common_t *cop, json_t *jobs_in, size_t hidden,
                       const char *state, const char *team)
{
    json_t *jobs = json_incref(jobs_in);
    if (cop->json) {
        json_t *doc = json_pack("{s:o, s:n}", "jobs", jobs, "next_after");
        spw_cli_json_print(stdout, doc);
        json_decref(doc);
        return spw_cli_flush("queue");
    }
    double now = spw_cli_now();
    int emulated = 0;
    spw_table_t *t = spw_table_create("ID|NAME|TEAM|STATE|>GPUS|WHERE|PLACEMENT|>AGE/RUNTIME|>COST|REASON");
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job)
        job_row(t, job, now, &emulated);
    if (spw_table_rows(t))
        spw_table_print(t, stdout, 0);
    else
        printf("no %s%sjobs%s%s\n", state ? state : "", state ? " " : "",
               team ? " of team " : "", team ? team : "");
    if (emulated)
        printf("* emulated cloud\n");
    if (hidden)
        printf("(%zu ended job%s not shown; --all shows them)\n", hidden, hidden == 1 ? "" : "s");
    spw_table_destroy(t);
    json_decref(jobs);
    int rc = spw_cli_fair_show(cop, "queue");
    return rc != SPW_CLI_OK ? rc : spw_cli_flush("queue");
}

/* ---- show -------------------------------------------------------------------- */

/* Writes s quoted for a POSIX shell when it needs quoting. */
static void shell_word(FILE *f, const char *s)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                        "_@%+=:,./-") == strlen(s)) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    fputc('\'', f);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Writes text with each new line indented by pad spaces, so that a value
 * of several lines stays under its key. */
static void indented(FILE *f, const char *s, int pad)
{
    for (; *s; s++) {
        fputc(*s, f);
        if (*s == '\n' && s[1])
            fprintf(f, "%*s", pad, "");
    }
}

static void show_value(FILE *f, const char *key, const json_t *v, double now, int pad)
{
    char buf[64], rel[64];
    size_t i;
    json_t *e;
    if (json_is_null(v)) {
        fputs("-", f);
    } else if ((ends_with(key, "_ts") || strcmp(key, "deadline") == 0) && json_is_number(v)) {
        double ts = json_number_value(v);
        fprintf(f, "%s (%s)", spw_cli_time(ts, buf, sizeof(buf)),
                spw_cli_rel(ts, now, rel, sizeof(rel)));
    } else if (ends_with(key, "_usd") && json_is_number(v)) {
        fputs(spw_cli_usd(json_number_value(v), buf, sizeof(buf)), f);
    } else if ((ends_with(key, "runtime") || ends_with(key, "_s")) && json_is_number(v)) {
        double secs = json_number_value(v);
        fprintf(f, "%s s", spw_cli_real(secs, buf, sizeof(buf)));
        if (secs >= 60)
            fprintf(f, " (%s)", spw_cli_dur(secs, rel, sizeof(rel)));
    } else if (json_is_number(v)) {
        fputs(spw_cli_real(json_number_value(v), buf, sizeof(buf)), f);
    } else if (json_is_string(v)) {
        indented(f, *json_string_value(v) ? json_string_value(v) : "-", pad);
    } else if (json_is_boolean(v)) {
        fputs(json_is_true(v) ? "yes" : "no", f);
    } else if (json_is_array(v) && strcmp(key, "run") == 0) {
        json_array_foreach(v, i, e) {
            if (i)
                fputc(' ', f);
            if (json_is_string(e))
                shell_word(f, json_string_value(e));
            else
                spw_cli_json_compact(f, e);
        }
    } else if (json_is_array(v)) {
        if (!json_array_size(v))
            fputs("-", f);
        json_array_foreach(v, i, e) {
            if (i)
                fputs(", ", f);
            if (json_is_string(e))
                fputs(json_string_value(e), f);
            else
                spw_cli_json_compact(f, e);
        }
    } else {
        spw_cli_json_compact(f, v);
    }
}

/* Whether show_object prints v's members as "prefix.key" lines. */
static int flattened(const json_t *v, size_t full_len)
{
    return json_is_object(v) && json_object_size(v) && full_len < 64;
}

/* The length of the longest "prefix.key" show_object prints for o. */
static size_t key_width(const json_t *o, size_t prefix_len)
{
    const char *key;
    json_t *v;
    size_t w = 0;
    json_object_foreach((json_t *)o, key, v) {
        size_t n = prefix_len + (prefix_len ? 1 : 0) + strlen(key);
        size_t k = flattened(v, n) ? key_width(v, n) : n;
        if (k > w)
            w = k;
    }
    return w;
}

/* "key: value" lines for every member of o; objects inside (the spec, its
 * env) become "prefix.key" lines.  width: where the values start. */
static void show_object(FILE *f, const json_t *o, const char *prefix, double now, int width)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        char full[128];
        snprintf(full, sizeof(full), "%s%s%s", prefix, *prefix ? "." : "", key);
        if (flattened(v, strlen(full))) {
            show_object(f, v, full, now, width);
            continue;
        }
        int n = fprintf(f, "%s:", full);
        fprintf(f, "%*s", n < width ? width - n : 1, "");
        show_value(f, key, v, now, n < width ? width : n + 1);
        fputc('\n', f);
    }
}

int spw_cli_show(int argc, char **argv)
{
    spw_cli_common_t co;
    const char *id = parse_id_cmd(argc, argv, "show", spw_cli_show_usage, &co);
    json_t *job;
    int rc = spw_client_call(&co, "show", "GET", "/v1/jobs/", id, "", &job);
    if (rc != SPW_CLI_OK)
        return rc;
    if (co.json)
        spw_cli_json_print(stdout, job);
    else
        show_object(stdout, job, "", spw_cli_now(), (int)key_width(job, 0) + 3);
    json_decref(job);
    return spw_cli_flush("show");
}

/* ---- cancel ------------------------------------------------------------------ */

/* Cancels one job and says what became of it; 0, or the exit status. */
static int cancel_one(const spw_cli_common_t *co, const char *id)
{
    json_t *job;
    int rc = spw_client_call(co, "cancel", "POST", "/v1/jobs/", id, "/cancel", &job);
    if (rc != SPW_CLI_OK)
        return rc;
    const char *state = spw_cli_jstr(job, "state");
    const char *jid = spw_cli_jstr(job, "id");
    if (co->json)
        spw_cli_json_print(stdout, job);
    else if (state && strcmp(state, "cancelled") == 0)
        printf("%s: cancelled\n", jid ? jid : id);
    else
        printf("%s: cancel requested; it is %s, and is cancelled once its process has exited\n",
               jid ? jid : id, state ? state : "in an unknown state");
    json_decref(job);
    return SPW_CLI_OK;
}

/* Whether job's spec carries every K=V of labels (an object). */
static int has_labels(const spw_cli_common_t *co, const char *id, const json_t *labels)
{
    if (!json_object_size(labels))
        return 1;
    json_t *job;
    if (spw_client_call(co, "cancel", "GET", "/v1/jobs/", id, "", &job) != SPW_CLI_OK)
        return 0;
    json_t *have = json_object_get(json_object_get(job, "spec"), "labels");
    const char *k;
    json_t *v;
    int ok = 1;
    json_object_foreach((json_t *)labels, k, v) {
        const char *got = spw_cli_jstr(have, k);
        ok &= got && strcmp(got, json_string_value(v)) == 0;
    }
    json_decref(job);
    return ok;
}

int spw_cli_cancel(int argc, char **argv)
{
    enum { O_TEAM = SPW_CLI_O_FIRST, O_LABEL };
    static const struct option opts[] = {
        {"team", required_argument, NULL, O_TEAM},
        {"label", required_argument, NULL, O_LABEL},
        SPW_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    spw_cli_common_t co;
    spw_cli_common_init(&co);
    const char *team = NULL;
    json_t *labels = json_object();
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_TEAM:
            if (!*optarg)
                spw_cli_die_usage("cancel", "--team takes a team name");
            team = optarg;
            break;
        case O_LABEL: add_label(labels, "cancel", optarg); break;
        case 'h':
            fputs(spw_cli_cancel_usage, stdout);
            json_decref(labels);
            return 0;
        default:
            if (!spw_cli_common_opt(&co, "cancel", c, optarg))
                spw_cli_die_usage("cancel", "unknown option");
        }
    }
    int selectors = team || json_object_size(labels);
    if (optind >= argc && !selectors)
        spw_cli_die_usage("cancel", "missing the job ids (as `spillway queue` shows them: "
                                    "j-000042), or --team/--label to choose them");
    if (optind < argc && selectors)
        spw_cli_die_usage("cancel", "give job ids or --team/--label, not both");
    int rc = SPW_CLI_OK;
    for (int i = optind; i < argc; i++) {
        if (!*argv[i])
            spw_cli_die_usage("cancel", "a job id is empty");
        int one = cancel_one(&co, argv[i]);
        if (one > rc)
            rc = one;
    }
    if (selectors) {
        json_t *jobs, *job;
        size_t hidden, i, n = 0;
        int frc = fetch_jobs(&co, "cancel", NULL, team, 0, &jobs, &hidden);
        if (frc != SPW_CLI_OK) {
            json_decref(labels);
            return frc;
        }
        json_array_foreach(jobs, i, job) {
            const char *id = spw_cli_jstr(job, "id");
            if (!id || spw_cli_jbool(job, "cancel_requested") || !has_labels(&co, id, labels))
                continue;
            n++;
            int one = cancel_one(&co, id);
            if (one > rc)
                rc = one;
        }
        json_decref(jobs);
        if (!n)
            fprintf(stderr, "spillway cancel: no job that has not ended matches\n");
    }
    json_decref(labels);
    int frc = spw_cli_flush("cancel");
    return rc ? rc : frc;
}

/* ---- explain ----------------------------------------------------------------- */

/* Candidates beyond which the table groups cloud offers (without --all). */
#define EXPLAIN_GROUP_OVER 20
/* Offers that could take the job, shown per provider when grouping. */
#define EXPLAIN_BEST_PER_PROVIDER 3

/* A candidate's whole why as a group key, into buf: without the offer's
 * own name at its start ("2 x g6.xlarge ...") and with every number as N,
 * so that offers refused for the same reason group while the sentence is
 * kept whole (not cut at a ':' or '('). */
static const char *why_head(const json_t *cand, char *buf, size_t len)
{
    const char *w = spw_cli_jstr(cand, "why"), *name = spw_cli_jstr(cand, "name");
    if (!w)
        w = "no reason given";
    const char *inst = name ? strrchr(name, '/') : NULL;
    inst = inst ? inst + 1 : name;
    const char *p = w;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p > w && strncmp(p, " x ", 3) == 0)
        w = p + 3;
    size_t il = inst ? strlen(inst) : 0;
    if (il && strncmp(w, inst, il) == 0 && (w[il] == ' ' || w[il] == ':')) {
        /* "g6.xlarge has ..." and "1 x g6.xlarge: $N for ..." both key
         * as the sentence after the name and its separator. */
        w += il + (w[il] == ':');
        while (*w == ' ')
            w++;
    }
    size_t n = 0;
    for (p = w; *p && n + 1 < len;) {
        if (*p >= '0' && *p <= '9') {
            buf[n++] = 'N';
            while ((*p >= '0' && *p <= '9') || ((*p == '.' || *p == ',') && p[1] >= '0' &&
                                                p[1] <= '9'))
                p++;
        } else {
            buf[n++] = *p++;
        }
    }
    buf[n] = '\0';
    return buf;
}

static double cand_cost(const json_t *c)
{
    double v;
    return spw_cli_jnum(c, "est_cost_usd", &v) == 0 ? v : INFINITY;
}

static int by_cost(const void *a, const void *b)
{
    double x = cand_cost(*(json_t *const *)a), y = cand_cost(*(json_t *const *)b);
    return (x > y) - (x < y);
}

/* Which candidates to list when grouping: every non-cloud one, and the
 * cheapest few that could take the job of each provider.  The others are
 * counted by provider and reason into *rest (caller decrefs: an object
 * "provider: reason" -> count).  Returns a new array. */
static json_t *group_candidates(const json_t *cands, json_t **rest)
{
    json_t *keep = json_array();
    *rest = json_object();
    size_t n = json_array_size(cands), i;
    json_t **cloud = spw_xmalloc((n + 1) * sizeof(*cloud));
    size_t nc = 0;
    json_t *c;
    json_array_foreach(cands, i, c) {
        const char *kind = spw_cli_jstr(c, "kind");
        if (kind && strcmp(kind, "cloud") == 0)
            cloud[nc++] = c;
        else
            json_array_append(keep, c);
    }
    qsort(cloud, nc, sizeof(*cloud), by_cost);
    json_t *shown = json_object();  /* provider -> count shown */
    for (size_t k = 0; k < nc; k++) {
        const char *name = spw_cli_jstr(cloud[k], "name");
        char prov[64], key[256], head[160];
        snprintf(prov, sizeof(prov), "%.*s", name ? (int)strcspn(name, "/") : 1, name ? name : "-");
        json_int_t had = json_integer_value(json_object_get(shown, prov));
        if (spw_cli_jbool(cloud[k], "ok") && had < EXPLAIN_BEST_PER_PROVIDER) {
            json_array_append(keep, cloud[k]);
            json_object_set_new(shown, prov, json_integer(had + 1));
            continue;
        }
        snprintf(key, sizeof(key), "%s: %s", prov,
                 spw_cli_jbool(cloud[k], "ok") ? "could take it, dearer than those shown"
                                               : why_head(cloud[k], head, sizeof(head)));
        json_object_set_new(*rest, key,
                            json_integer(json_integer_value(json_object_get(*rest, key)) + 1));
    }
    json_decref(shown);
    free(cloud);
    return keep;
}

/* The candidates table; est start times are shown relative to ref_ts.
 * Unless all, a long list is grouped (group_candidates). */
static void candidates_table(const json_t *all_cands, double ref_ts, int indent, int all)
{
    spw_table_t *t = spw_table_create("KIND|NAME|OK|EST START|>EST COST|WHY");
    size_t i;
    json_t *cand, *rest = NULL;
    int emulated = 0;
    json_t *cands = !all && json_array_size(all_cands) > EXPLAIN_GROUP_OVER
                        ? group_candidates(all_cands, &rest)
                        : json_incref((json_t *)all_cands);
    json_array_foreach(cands, i, cand) {
        char name[192], start[48], cost[32];
        double ts, inst;
        const char *nm = spw_cli_jstr(cand, "name");
        int k = snprintf(name, sizeof(name), "%s", nm ? nm : "-");
        if (spw_cli_jnum(cand, "instances", &inst) == 0 && inst > 1 && k < (int)sizeof(name))
            k += snprintf(name + k, sizeof(name) - (size_t)k, " x%.0f", inst);
        if (spw_cli_jbool(cand, "emulated") && k < (int)sizeof(name) - 1) {
            strcat(name, "*");
            emulated = 1;
        }
        if (spw_cli_jnum(cand, "est_start_ts", &ts) == 0)
            spw_cli_rel(ts, ref_ts, start, sizeof(start));
        else
            snprintf(start, sizeof(start), "-");
        spw_table_row(t, spw_cli_jstr(cand, "kind"), name,
                      spw_cli_jbool(cand, "ok") ? "yes" : "no", start,
                      spw_cli_money(cand, "est_cost_usd", cost, sizeof(cost)),
                      spw_cli_jstr(cand, "why"));
    }
    if (spw_table_rows(t))
        spw_table_print(t, stdout, indent);
    else
        printf("%*s(none)\n", indent, "");
    if (rest && json_object_size(rest)) {
        size_t hidden = json_array_size(all_cands) - json_array_size(cands);
        printf("%*s%zu more offers, by provider and reason (--all lists them):\n", indent, "",
               hidden);
        const char *key;
        json_t *v;
        json_object_foreach(rest, key, v)
            printf("%*s  %6lld  %s\n", indent, "", (long long)json_integer_value(v), key);
    }
    if (emulated)
        printf("%*s* emulated cloud\n", indent, "");
    json_decref(rest);
    json_decref(cands);
    spw_table_destroy(t);
}

static void explain_table(const char *id, const json_t *doc, const json_t *job, int all)
{
    double now = spw_cli_now(), ts;
    char a[64], b[64];
    const char *jid = spw_cli_jstr(doc, "id"), *state = spw_cli_jstr(doc, "state");
    spw_cli_jnum(doc, "now_ts", &now);
    printf("%s: %s (as of %s)\n", jid ? jid : id, state ? state : "?",
           spw_cli_time(now, a, sizeof(a)));
    json_t *dec = json_object_get(doc, "decision");
    const char *jreason = job ? spw_cli_jstr(job, "reason") : NULL;
    if (!json_is_object(dec)) {
        if (state && strcmp(state, "rejected") == 0)
            printf("decision: rejected: %s\n", jreason ? jreason : "(the daemon gave no reason)");
        else if (jreason && *jreason)
            printf("decision: none yet (the scheduler has not placed it): %s\n", jreason);
        else
            printf("decision: none yet (the scheduler has not placed it)\n");
    } else {
        const char *where = spw_cli_jstr(dec, "where"), *reason = spw_cli_jstr(dec, "reason");
        int have_ts = spw_cli_jnum(dec, "ts", &ts) == 0;
        printf("decision");
        if (have_ts)
            printf(" %s (%s)", spw_cli_time(ts, a, sizeof(a)), spw_cli_rel(ts, now, b, sizeof(b)));
        printf(": %s%s%s\n", where ? where : "-", reason ? ": " : "", reason ? reason : "");
        /* Whatever else the daemon recorded with the decision. */
        const char *key;
        json_t *v;
        json_object_foreach(dec, key, v) {
            if (!strcmp(key, "ts") || !strcmp(key, "where") || !strcmp(key, "reason") ||
                !strcmp(key, "candidates"))
                continue;
            printf("  %s: ", key);
            show_value(stdout, key, v, now, (int)strlen(key) + 4);
            printf("\n");
        }
        json_t *then = json_object_get(dec, "candidates");
        if (json_is_array(then)) {
            printf("  candidates then (est start from the decision):\n");
            candidates_table(then, have_ts ? ts : now, 4, all);
        }
    }
    printf("candidates now:\n");
    candidates_table(json_object_get(doc, "candidates"), now, 2, all);
}

int spw_cli_explain(int argc, char **argv)
{
    enum { O_ALL = SPW_CLI_O_FIRST };
    static const struct option opts[] = {SPW_CLI_COMMON_OPTIONS, {"all", no_argument, NULL, O_ALL},
                                         {NULL, 0, NULL, 0}};
    spw_cli_common_t co;
    int c, all = 0;
    spw_cli_common_init(&co);
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(spw_cli_explain_usage, stdout);
            return 0;
        }
        if (c == O_ALL)
            all = 1;
        else if (!spw_cli_common_opt(&co, "explain", c, optarg))
            spw_cli_die_usage("explain", "unknown option");
    }
    if (optind >= argc)
        spw_cli_die_usage("explain", "missing the job id (as `spillway queue` shows it: j-000042)");
    if (optind + 1 < argc)
        spw_cli_die_usage("explain", "one job id at a time");
    const char *id = argv[optind];
    if (!*id)
        spw_cli_die_usage("explain", "the job id is empty");
    json_t *doc, *job = NULL;
    int rc = spw_client_call(&co, "explain", "GET", "/v1/jobs/", id, "/explain", &doc);
    if (rc != SPW_CLI_OK)
        return rc;
    /* With no decision, the job's own reason says why (rejected, held). */
    if (!co.json && !json_is_object(json_object_get(doc, "decision")) &&
        spw_client_call(&co, "explain", "GET", "/v1/jobs/", id, "", &job) != SPW_CLI_OK)
        job = NULL;
    if (co.json)
        spw_cli_json_print(stdout, doc);
    else
        explain_table(id, doc, job, all);
    json_decref(job);
    json_decref(doc);
    return spw_cli_flush("explain");
}

/* ---- logs -------------------------------------------------------------------- */

/* One log followed by `logs`: a rank's stdout or stderr. */
typedef struct log_stream {
    unsigned rank;          /* the gang rank, 0 = the first node's */
    int err;                /* 1: the job's stderr */
    FILE *to;               /* where its bytes go: stdout or stderr */
    long long offset;       /* bytes of it already written */
    int mid_line;           /* 1: the last byte written was not a newline
                               (no [rank N] prefix before the next one) */
} log_stream_t;

/* Writes n bytes of s's log to s->to, with a "[rank N] " before each line
 * when prefix.  0, or -1 when the output cannot be written. */
static int log_write(log_stream_t *s, const char *b, size_t n, int prefix)
{
    for (size_t i = 0; i < n;) {
        if (prefix && !s->mid_line && fprintf(s->to, "[rank %u] ", s->rank) < 0)
            return -1;
        const char *nl = memchr(b + i, '\n', n - i);
        size_t k = nl ? (size_t)(nl - (b + i)) + 1 : n - i;
        if (fwrite(b + i, 1, k, s->to) != k)
            return -1;
        s->mid_line = !nl;
        i += k;
    }
    return fflush(s->to) == 0 ? 0 : -1;
}

/* The exit status logs -f ends with for a job in state with exit_code. */
static int job_status(const json_t *job)
{
    const char *state = spw_cli_jstr(job, "state");
    double code;
    if (state && strcmp(state, "succeeded") == 0)
        return 0;
    if (state && strcmp(state, "failed") == 0 && spw_cli_jnum(job, "exit_code", &code) == 0 &&
        code >= 1 && code <= 255)
        return (int)code;
    return 1;
}

/* Sends GET path for logs, reconnecting while the daemon is away when
 * follow (up to LOGS_RECONNECT_S: it restarts).  A daemon never reached
 * (the first request) is not waited for.  The request's status, as
 * spw_client_request's. */
#define LOGS_RECONNECT_S 600.0
static int logs_request(spw_client_t *cl, const char *path, int follow, spw_resp_t *r)
{
    static int reached;    /* a request of this process had an answer */
    double since = 0;
    cl->quiet_unreach = follow && reached;
    for (;;) {
        int rc = spw_client_request(cl, "GET", path, NULL, 0, NULL, r);
        if (rc != SPW_CLI_EUNREACH || !follow || !reached) {
            reached |= rc != SPW_CLI_EUNREACH;
            return rc;
        }
        spw_resp_free(r);
        double now = spw_cli_now();
        if (since == 0) {
            since = now;
            fprintf(stderr, "spillway logs: the daemon at %s is not answering (%s); "
                            "retrying for up to %.0f minutes\n",
                    cl->url, cl->errbuf[0] ? cl->errbuf : "no answer", LOGS_RECONNECT_S / 60);
        } else if (now - since > LOGS_RECONNECT_S) {
            fprintf(stderr, "spillway logs: the daemon at %s has not answered for %.0f minutes; "
                            "giving up\n", cl->url, LOGS_RECONNECT_S / 60);
            return SPW_CLI_EUNREACH;
        }
        struct timespec half = {0, 500000000L};
        nanosleep(&half, NULL);
    }
}

int spw_cli_logs(int argc, char **argv)
{
    enum { O_STDERR = SPW_CLI_O_FIRST, O_STDOUT, O_RANK, O_ALL_RANKS };
    static const struct option opts[] = {
        {"follow", no_argument, NULL, 'f'},
        {"stderr", no_argument, NULL, O_STDERR},
        {"stdout", no_argument, NULL, O_STDOUT},
        {"rank", required_argument, NULL, O_RANK},
        {"all-ranks", no_argument, NULL, O_ALL_RANKS},
        {"url", required_argument, NULL, SPW_CLI_O_URL},
        {"token", required_argument, NULL, SPW_CLI_O_TOKEN},
        {"token-file", required_argument, NULL, SPW_CLI_O_TOKEN_FILE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    spw_cli_common_t co;
    spw_cli_common_init(&co);
    int follow = 0, only_err = 0, only_out = 0, all_ranks = 0, c;
    long rank = 0;
    while ((c = getopt_long(argc, argv, "fo:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f': follow = 1; break;
        case O_STDERR: only_err = 1; break;
        case O_STDOUT: only_out = 1; break;
        case O_ALL_RANKS: all_ranks = 1; break;
        case O_RANK:
            if (parse_int(optarg, 0, 1024, &rank) < 0)
                spw_cli_die_usage("logs", "--rank takes a rank from 0 to 1024");
            break;
        case 'o': spw_cli_die_usage("logs", "logs writes the job's output as it is; -o does not apply");
        case 'h': fputs(spw_cli_logs_usage, stdout); return 0;
        default:
            if (!spw_cli_common_opt(&co, "logs", c, optarg))
                spw_cli_die_usage("logs", "unknown option");
        }
    }
    if (only_err && only_out)
        spw_cli_die_usage("logs", "--stdout and --stderr each leave the other out: give one");
    if (all_ranks && rank)
        spw_cli_die_usage("logs", "--rank N and --all-ranks: give one");
    if (optind >= argc)
        spw_cli_die_usage("logs", "missing the job id (as `spillway queue` shows it: j-000042)");
    if (optind + 1 < argc)
        spw_cli_die_usage("logs", "one job id at a time");
    const char *id = argv[optind];
    if (!*id)
        spw_cli_die_usage("logs", "the job id is empty");

    spw_client_t cl;
    spw_client_open(&cl, &co, "logs");
    char *jpath = spw_client_path(&cl, "/v1/jobs/", id, "");
    char *prefix = spw_client_path(&cl, "/v1/jobs/", id, "/logs?stream=");
    unsigned nranks = 1;
    int rc = SPW_CLI_OK;
    if (all_ranks) {
        json_t *job;
        if ((rc = spw_client_get_json(&cl, jpath, &job)) == SPW_CLI_OK) {
            double v;
            if (spw_cli_jnum(job, "ranks", &v) == 0 && v >= 1 && v <= 1025)
                nranks = (unsigned)v;
            json_decref(job);
        }
    }
    log_stream_t *st = spw_xmalloc(2 * nranks * sizeof(*st));
    size_t ns = 0;
    for (unsigned r = 0; r < nranks && rc == SPW_CLI_OK; r++) {
        unsigned rk = all_ranks ? r : (unsigned)rank;
        if (!only_err)
            st[ns++] = (log_stream_t){.rank = rk, .err = 0, .to = stdout};
        if (!only_out)
            st[ns++] = (log_stream_t){.rank = rk, .err = 1, .to = only_err ? stdout : stderr};
    }
    int ended = 0;
    while (rc == SPW_CLI_OK) {
        size_t got = 0;
        for (size_t i = 0; i < ns && rc == SPW_CLI_OK; i++) {
            char path[1024];
            spw_resp_t r;
            snprintf(path, sizeof(path), "%s%s&offset=%lld&rank=%u", prefix,
                     st[i].err ? "err" : "out", st[i].offset, st[i].rank);
            if ((rc = logs_request(&cl, path, follow, &r)) != SPW_CLI_OK) {
                spw_resp_free(&r);
                break;
            }
            if (r.len && log_write(&st[i], r.body, r.len, all_ranks) < 0) {
                spw_resp_free(&r);
                rc = spw_cli_flush("logs");
                if (rc == SPW_CLI_OK)
                    rc = SPW_CLI_EREMOTE;
                break;
            }
            st[i].offset = r.offset >= 0 ? r.offset : st[i].offset + (long long)r.len;
            /* A daemon that does not say the state cannot be followed to the end. */
            ended = !r.job_state[0] || is_ended(r.job_state);
            got += r.len;
            spw_resp_free(&r);
        }
        if (rc != SPW_CLI_OK || got)
            continue;  /* more may be waiting: ask again at once */
        if (!follow || ended)
            break;
        struct timespec half = {0, 500000000L};
        nanosleep(&half, NULL);
    }
    if (rc == SPW_CLI_OK && follow) {
        json_t *job;
        cl.quiet_unreach = 0;
        if ((rc = spw_client_get_json(&cl, jpath, &job)) == SPW_CLI_OK) {
            rc = job_status(job);
            json_decref(job);
        }
    }
    free(st);
    free(jpath);
    free(prefix);
    spw_client_close(&cl);
    int frc = spw_cli_flush("logs");
    return rc ? rc : frc;
}
