/* client_fleet.c: the capacity and money commands of the client: pools,
 * costs, and admin preempt and node (docs/api.md, "Capacity and money",
 * "Administration"). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/client.h"
#include "cli/client_private.h"
#include "util/timeparse.h"
#include "util/error.h"

const char spw_cli_pools_usage[] =
    "usage: spillway pools [OPTIONS]\n"
    "\n"
    "Shows what the daemon can run on: the on-prem pools with their busy and\n"
    "free GPUs, the cloud offers with their prices, and the cloud instances\n"
    "that are up (a team token sees only its own jobs' instances).\n"
    "\n" SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway pools\n"
    "  spillway pools -o json | jq '.pools[] | {name, gpus_free}'\n"
    SPW_CLI_EXIT_HELP;

const char spw_cli_costs_usage[] =
    "usage: spillway costs [--period P] [OPTIONS]\n"
    "\n"
    "Shows the spend of one budget period, on-prem (amortised GPU cost) and\n"
    "cloud side by side, by team, provider and pool, with each team's budget:\n"
    "what is settled, what live cloud placements reserve for their worst case,\n"
    "what remains, and the jobs a budget or cap holds or rejected.  A job's\n"
    "spend counts in the period of its last placement.  Cloud idle is what\n"
    "instances billed while bound to no job (it is in no team's budget).  A\n"
    "team token sees its own team only; the organisation's caps and the\n"
    "providers' bills are for admins.  Under fair share, a last table gives\n"
    "each team's and cohort's on-prem GPUs now, as spillway queue does.\n"
    "\n"
    "  --period P           a month (2026-11) or an ISO week (2026-W47); default:\n"
    "                       the current month, and each team's current budget\n"
    "                       period\n"
    SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway costs\n"
    "  spillway costs --period 2026-10\n"
    "  spillway costs -o json | jq '.teams[] | {team, remaining_usd}'\n"
    SPW_CLI_EXIT_HELP;

const char spw_cli_admin_usage[] =
    "usage: spillway admin preempt INSTANCE_ID [OPTIONS]\n"
    "       spillway admin node POOL/INDEX down|up [OPTIONS]\n"
    "\n"
    "Administration; needs an admin token (or a daemon with no tokens).\n"
    "\n"
    "  preempt INSTANCE_ID  the emulated cloud takes the instance back now, as a\n"
    "                       spot reclaim would; its job resumes from its\n"
    "                       checkpoint wherever it is placed next\n"
    "  node POOL/INDEX down take on-prem node INDEX (0-based) of POOL out of\n"
    "                       service, as a failure would: its jobs are stopped and\n"
    "                       placed again (resuming from their checkpoints); it\n"
    "                       stays down, across daemon restarts too, until 'up'\n"
    "  node POOL/INDEX up   put the node back in service\n"
    "\n" SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway pools                       # the instance ids are in the last table\n"
    "  spillway admin preempt emu-i-000001\n"
    "  spillway admin node local/0 down\n"
    SPW_CLI_EXIT_HELP;

/* Parses a command that takes the common options and nargs positionals
 * (stored in args). */
static void parse_plain(int argc, char **argv, const char *cmd, const char *usage,
                        spw_cli_common_t *co, int nargs, const char **args, const char *missing)
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
    if (argc - optind < nargs || (nargs && !*argv[optind]))
        spw_cli_die_usage(cmd, missing);
    if (argc - optind > nargs)
        spw_cli_die_usage(cmd, "unexpected argument");
    for (int i = 0; i < nargs; i++)
        args[i] = argv[optind + i];
}

/* A number as text ("4", "1.1"), or "-" when key is not a number. */
static char *num(const json_t *o, const char *key, char *buf, size_t len)
{
    double v;
    if (spw_cli_jnum(o, key, &v) < 0)
        snprintf(buf, len, "-");
    else
        spw_cli_real(v, buf, len);
    return buf;
}

/* "name" or "name*" when o is emulated; sets *emulated. */
static char *starred(const json_t *o, const char *key, char *buf, size_t len, int *emulated)
{
    const char *s = spw_cli_jstr(o, key);
    int e = spw_cli_jbool(o, "emulated");
    snprintf(buf, len, "%s%s", s ? s : "-", e ? "*" : "");
    *emulated |= e;
    return buf;
}

/* ---- pools --------------------------------------------------------------- */

static void pools_table(const json_t *doc)
{
    size_t i;
    json_t *o;
    int emulated = 0;
    char a[64], b[64], c[64], d[64], e[64], g[64];

    spw_table_t *t =
        spw_table_create("POOL|KIND|BACKEND|>NODES|GPU|>GPUS|>BUSY|>FREE|>$/GPU-H|NODES DOWN");
    json_array_foreach(json_object_get(doc, "pools"), i, o) {
        /* the nodes an administrator took out of service: "0,3", or "-" */
        char down[128] = "";
        size_t k, used = 0;
        json_t *n;
        json_array_foreach(json_object_get(o, "nodes_down"), k, n)
            if (used < sizeof(down))
                used += (size_t)snprintf(down + used, sizeof(down) - used, "%s%lld",
                                         used ? "," : "", (long long)json_integer_value(n));
        spw_table_row(t, spw_cli_jstr(o, "name"), spw_cli_jstr(o, "kind"),
                      spw_cli_jstr(o, "backend"), num(o, "nodes", a, sizeof(a)),
                      spw_cli_jstr(o, "gpu_model"), num(o, "gpus", b, sizeof(b)),
                      num(o, "gpus_busy", c, sizeof(c)), num(o, "gpus_free", d, sizeof(d)),
                      spw_cli_money(o, "cost_usd_per_gpu_h", e, sizeof(e)), used ? down : "-");
    }
    if (spw_table_rows(t))
        spw_table_print(t, stdout, 0);
    else
        printf("no on-prem pools\n");
    spw_table_destroy(t);

    t = spw_table_create("OFFER|GPU|>GPUS|>ON-DEMAND/H|>SPOT/H|>BOOT|>LIVE");
    json_array_foreach(json_object_get(doc, "offers"), i, o) {
        double boot;
        char name[192];
        if (spw_cli_jnum(o, "boot_delay_s", &boot) == 0)
            spw_cli_dur(boot, e, sizeof(e));
        else
            snprintf(e, sizeof(e), "-");
        spw_table_row(t, starred(o, "name", name, sizeof(name), &emulated),
                      spw_cli_jstr(o, "gpu_model"), num(o, "gpus", a, sizeof(a)),
                      spw_cli_money(o, "ondemand_usd_per_h", b, sizeof(b)),
                      spw_cli_money(o, "spot_usd_per_h", c, sizeof(c)), e,
                      num(o, "instances_live", d, sizeof(d)));
    }
    printf("\n");
    if (spw_table_rows(t))
        spw_table_print(t, stdout, 0);
    else
        printf("no cloud offers\n");
    spw_table_destroy(t);

    double now = spw_cli_now();
    t = spw_table_create("INSTANCE|OFFER|STATE|JOB|>AGE|>COST");
    json_array_foreach(json_object_get(doc, "instances"), i, o) {
        double launched;
        char id[128];
        if (spw_cli_jnum(o, "launched_ts", &launched) == 0)
            spw_cli_dur(now - launched, a, sizeof(a));
        else
            snprintf(a, sizeof(a), "-");
        spw_table_row(t, starred(o, "id", id, sizeof(id), &emulated), spw_cli_jstr(o, "offer"),
                      spw_cli_jstr(o, "state"), spw_cli_jstr(o, "job_id"), a,
                      spw_cli_money(o, "cost_usd", g, sizeof(g)));
    }
    printf("\n");
    if (spw_table_rows(t))
        spw_table_print(t, stdout, 0);
    else
        printf("no cloud instances up\n");
    spw_table_destroy(t);
    if (emulated)
        printf("* emulated cloud\n");
}

/* GETs path and prints it: the JSON with -o json, else table(). */
static int show(const spw_cli_common_t *co, const char *cmd, const char *path,
                void (*table)(const json_t *))
{
    spw_client_t cl;
    json_t *doc;
    spw_client_open(&cl, co, cmd);
    int rc = spw_client_get_json(&cl, path, &doc);
    spw_client_close(&cl);
    if (rc != SPW_CLI_OK)
        return rc;
    if (co->json)
        spw_cli_json_print(stdout, doc);
    else
        table(doc);
    json_decref(doc);
    return spw_cli_flush(cmd);
}

static int get_and_show(int argc, char **argv, const char *cmd, const char *usage,
                        const char *path, void (*table)(const json_t *))
{
    spw_cli_common_t co;
    parse_plain(argc, argv, cmd, usage, &co, 0, NULL, NULL);
    return show(&co, cmd, path, table);
}

int spw_cli_pools(int argc, char **argv)
{
    return get_and_show(argc, argv, "pools", spw_cli_pools_usage, "/v1/pools", pools_table);
}

/* ---- costs --------------------------------------------------------------- */

/* "$12.00", "none" for null (no budget or cap), "-" when absent. */
static char *limit(const json_t *o, const char *key, char *buf, size_t len)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_null(v))
        snprintf(buf, len, "none");
    else
        spw_cli_money(o, key, buf, len);
    return buf;
}

/* Whether a team row has anything of governance to show. */
static int governed(const json_t *o)
{
    double v;
    /* budget_period_kind: the team has a budget over another kind of
     * period than the one asked (a monthly budget, --period 2026-W48). */
    return json_is_number(json_object_get(o, "budget_usd")) ||
           json_is_string(json_object_get(o, "budget_period_kind")) ||
           json_is_number(json_object_get(o, "max_cloud_usd_per_h")) ||
           json_is_number(json_object_get(o, "max_cloud_gpus")) ||
           (spw_cli_jnum(o, "reserved_usd", &v) == 0 && v > 0) ||
           (spw_cli_jnum(o, "held_jobs", &v) == 0 && v > 0) ||
           (spw_cli_jnum(o, "rejected_jobs", &v) == 0 && v > 0);
}

static void costs_table(const json_t *doc)
{
    char a[64], b[64], c[64], d[64], e[64], f[64], g[64], h[64], k[64];
    double now = spw_cli_now(), idle, v;
    size_t i;
    json_t *o;
    int emulated = 0;
    const char *period = spw_cli_jstr(doc, "period");

    spw_cli_jnum(doc, "now_ts", &now);
    printf("spend in %s%s\n", period ? period : "this period",
           spw_cli_jbool(doc, "current") ? " (so far)" : "");
    printf("  %-9s %s\n", "total", spw_cli_money(doc, "total_usd", a, sizeof(a)));
    printf("  %-9s %s (the GPU-hours jobs used)\n", "on-prem", spw_cli_money(doc, "onprem_usd", a, sizeof(a)));
    double owned, owned_idle;
    if (spw_cli_jnum(doc, "owned_usd", &owned) == 0 && owned > 0 &&
        spw_cli_jnum(doc, "owned_idle_usd", &owned_idle) == 0)
        printf("  %-9s %s, of which %s idle (every owned GPU since the first submit)\n", "owned",
               spw_cli_usd(owned, a, sizeof(a)), spw_cli_usd(owned_idle, b, sizeof(b)));
    double commit, commit_idle;
    if (spw_cli_jnum(doc, "commit_usd", &commit) == 0 && commit > 0) {
        printf("  %-9s %s", "committed", spw_cli_usd(commit, a, sizeof(a)));
        if (spw_cli_jnum(doc, "commit_idle_usd", &commit_idle) == 0)
            printf(", of which %s idle (every committed GPU since the first submit)",
                   spw_cli_usd(commit_idle, b, sizeof(b)));
        printf("\n");
    }
    printf("  %-9s %s", "cloud", spw_cli_money(doc, "cloud_usd", a, sizeof(a)));
    if (spw_cli_jnum(doc, "cloud_idle_usd", &idle) == 0 && idle > 0)
        printf(", of which %s idle (instances bound to no job)", spw_cli_usd(idle, b, sizeof(b)));
    printf("\n");

    /* budgets: settled + reserved never exceeds the budget */
    spw_table_t *t = spw_table_create("TEAM|PERIOD|>BUDGET|>SETTLED|>RESERVED|>REMAINING|>EGRESS|"
                                      ">CLOUD $/H|>CLOUD GPUS|>HELD|>REJECTED");
    json_array_foreach(json_object_get(doc, "teams"), i, o) {
        if (!governed(o))
            continue;
        if (spw_cli_jnum(o, "cloud_gpus", &v) == 0)
            spw_cli_real(v, g, sizeof(g));
        else
            snprintf(g, sizeof(g), "-");
        const char *bkind = spw_cli_jstr(o, "budget_period_kind");
        if (bkind && !json_is_number(json_object_get(o, "budget_usd")))
            snprintf(a, sizeof(a), "(per %s)", bkind);
        else
            limit(o, "budget_usd", a, sizeof(a));
        spw_table_row(t, spw_cli_jstr(o, "team"), spw_cli_jstr(o, "period"), a,
                      spw_cli_money(o, "settled_usd", b, sizeof(b)),
                      spw_cli_money(o, "reserved_usd", c, sizeof(c)),
                      bkind && !json_is_number(json_object_get(o, "budget_usd"))
                          ? strcpy(d, "-") : limit(o, "remaining_usd", d, sizeof(d)),
                      spw_cli_money(o, "egress_usd", e, sizeof(e)),
                      spw_cli_money(o, "cloud_usd_per_h", f, sizeof(f)), g,
                      num(o, "held_jobs", h, sizeof(h)),
                      num(o, "rejected_jobs", k, sizeof(k)));
    }
    if (spw_table_rows(t)) {
        printf("\nbudgets\n");
        spw_table_print(t, stdout, 0);
    }
    spw_table_destroy(t);

    t = spw_table_create("TEAM|>ON-PREM|>CLOUD|>ON-PREM GPU-H|>CLOUD GPU-H|>JOBS");
    json_array_foreach(json_object_get(doc, "teams"), i, o) {
        double gh;
        if (spw_cli_jnum(o, "onprem_gpu_h", &gh) == 0)
            snprintf(c, sizeof(c), "%.1f", gh);
        else
            snprintf(c, sizeof(c), "-");
        if (spw_cli_jnum(o, "cloud_gpu_h", &gh) == 0)
            snprintf(d, sizeof(d), "%.1f", gh);
        else
            snprintf(d, sizeof(d), "-");
        spw_table_row(t, spw_cli_jstr(o, "team"), spw_cli_money(o, "onprem_usd", a, sizeof(a)),
                      spw_cli_money(o, "cloud_usd", b, sizeof(b)), c, d,
                      num(o, "jobs", e, sizeof(e)));
    }
    if (spw_table_rows(t)) {
        printf("\n");
        spw_table_print(t, stdout, 0);
    }
    spw_table_destroy(t);

    const json_t *org = json_object_get(doc, "org");
    if (json_is_object(org)) {
        printf("\norganisation, now\n");
        printf("  %-16s %s/h", "cloud spend rate", spw_cli_money(org, "cloud_usd_per_h", a, sizeof(a)));
        if (json_is_number(json_object_get(org, "max_cloud_usd_per_h")))
            printf(" of a %s/h cap", spw_cli_money(org, "max_cloud_usd_per_h", b, sizeof(b)));
        else
            printf(" (no cap)");
        if (spw_cli_jnum(org, "idle_usd_per_h", &v) == 0 && v > 0)
            printf(" (and %s/h of idle instances, outside budgets and caps)", spw_cli_usd(v, c, sizeof(c)));
        printf("\n");
        if (spw_cli_jnum(org, "cloud_gpus", &v) == 0)
            spw_cli_real(v, a, sizeof(a));
        else
            snprintf(a, sizeof(a), "-");
        if (spw_cli_jnum(org, "max_cloud_gpus", &v) == 0)
            printf("  %-16s %s of a cap of %s\n", "cloud GPUs", a, spw_cli_real(v, b, sizeof(b)));
        else
            printf("  %-16s %s (no cap)\n", "cloud GPUs", a);
    }

    t = spw_table_create("PROVIDER|>SPEND|>INSTANCES");
    json_array_foreach(json_object_get(doc, "providers"), i, o) {
        char name[128];
        spw_table_row(t, starred(o, "provider", name, sizeof(name), &emulated),
                      spw_cli_money(o, "usd", a, sizeof(a)), num(o, "instances", b, sizeof(b)));
    }
    if (spw_table_rows(t)) {
        printf("\n");
        spw_table_print(t, stdout, 0);
    }
    spw_table_destroy(t);

    t = spw_table_create("POOL|>SPEND|>GPU-H");
    json_array_foreach(json_object_get(doc, "pools"), i, o) {
        double gh;
        if (spw_cli_jnum(o, "gpu_h", &gh) == 0)
            snprintf(b, sizeof(b), "%.1f", gh);
        else
            snprintf(b, sizeof(b), "-");
        spw_table_row(t, spw_cli_jstr(o, "pool"), spw_cli_money(o, "usd", a, sizeof(a)), b);
    }
    if (spw_table_rows(t)) {
        printf("\n");
        spw_table_print(t, stdout, 0);
    }
    spw_table_destroy(t);
    if (emulated)
        printf("* emulated cloud: what it would have billed; nothing was paid\n");
}

/* One row of the fair share table: a team's or a cohort's GPUs. */
static void fair_row(spw_table_t *t, const char *kind, const json_t *o, const char *name,
                     const char *group)
{
    char a[32], b[32], c[32], d[32], e[32], f[72] = "", g[32], h[32];
    double share, cl;
    if (spw_cli_jnum(o, "share", &share) == 0)
        snprintf(e, sizeof(e), "%.0f%%", 100 * share);
    else
        snprintf(e, sizeof(e), "-");
    /* The cloud GPUs held now over the team's max_cloud_gpus (teams only). */
    if (spw_cli_jnum(o, "cloud_gpus", &cl) == 0)
        snprintf(f, sizeof(f), "%s/%s", num(o, "cloud_gpus", g, sizeof(g)),
                 num(o, "max_cloud_gpus", h, sizeof(h)));
    spw_table_row(t, kind, spw_cli_jstr(o, name), group ? group : "-",
                  num(o, "nominal_gpus", a, sizeof(a)), num(o, "used_gpus", b, sizeof(b)),
                  num(o, "borrowed_gpus", c, sizeof(c)), num(o, "lent_gpus", d, sizeof(d)), e, f);
}

void spw_cli_fair_table(const json_t *doc)
{
    size_t i;
    json_t *o;
    const char *queue = spw_cli_jstr(doc, "queue");
    if (!spw_cli_jbool(doc, "quotas") && !(queue && strcmp(queue, "fair") == 0))
        return;
    spw_table_t *t = spw_table_create("KIND|NAME|COHORT|>NOMINAL|>USED|>BORROWED|>LENT|>SHARE|>CLOUD");
    json_array_foreach(json_object_get(doc, "teams"), i, o)
        fair_row(t, "team", o, "team", spw_cli_jstr(o, "cohort"));
    json_array_foreach(json_object_get(doc, "cohorts"), i, o)
        fair_row(t, "cohort", o, "cohort", spw_cli_jstr(o, "parent"));
    if (spw_table_rows(t)) {
        char cap[32];
        printf("\nfair share: on-prem GPUs now (%s in all; queue %s)\n",
               num(doc, "onprem_gpus", cap, sizeof(cap)), queue ? queue : "-");
        spw_table_print(t, stdout, 0);
    }
    spw_table_destroy(t);
}

int spw_cli_fair_show(const spw_cli_common_t *co, const char *cmd)
{
    spw_client_t cl;
    json_t *doc;
    spw_client_open(&cl, co, cmd);
    int rc = spw_client_get_json(&cl, "/v1/teams", &doc);
    spw_client_close(&cl);
    if (rc != SPW_CLI_OK)
        return rc;
    spw_cli_fair_table(doc);
    json_decref(doc);
    return SPW_CLI_OK;
}

int spw_cli_costs(int argc, char **argv)
{
    enum { O_PERIOD = SPW_CLI_O_FIRST };
    static const struct option opts[] = {
        {"period", required_argument, NULL, O_PERIOD},
        SPW_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    spw_cli_common_t co;
    const char *period = NULL;
    int c;
    spw_cli_common_init(&co);
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(spw_cli_costs_usage, stdout);
            return 0;
        }
        if (c == O_PERIOD) {
            if (!*optarg || strlen(optarg) > 16 || strspn(optarg, "0123456789-Ww") != strlen(optarg))
                spw_cli_die_usage("costs", "--period takes a month (2026-11) or an ISO week (2026-W47)");
            period = optarg;
            continue;
        }
        if (!spw_cli_common_opt(&co, "costs", c, optarg))
            spw_cli_die_usage("costs", "unknown option");
    }
    if (optind < argc)
        spw_cli_die_usage("costs", "unexpected argument");
    char path[64];
    snprintf(path, sizeof(path), "/v1/costs%s%s", period ? "?period=" : "", period ? period : "");
    int rc = show(&co, "costs", path, costs_table);
    if (rc != SPW_CLI_OK || co.json)
        return rc;
    if ((rc = spw_cli_fair_show(&co, "costs")) != SPW_CLI_OK)
        return rc;
    return spw_cli_flush("costs");
}

/* ---- audit --------------------------------------------------------------- */

const char spw_cli_audit_usage[] =
    "usage: spillway audit [--since WHEN] [--team T] [--limit N] [OPTIONS]\n"
    "\n"
    "The daemon's audit log, newest first: every submit, cancel, preempt,\n"
    "node down/up and token reload, and every mutating call refused for its\n"
    "token, with the time, the token's name (never the token), its team, the\n"
    "action, its target and the HTTP status answered.  Needs an admin token.\n"
    "\n"
    "  --since WHEN         only entries from WHEN on: a duration back from now\n"
    "                       (90s, 30m, 1h, 2d) or a time (2026-11-24T18:00:00Z);\n"
    "                       default: all\n"
    "  --team T             only team T's entries\n"
    "  --limit N            at most N entries (default 1000, at most 10000)\n"
    SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway audit --since 1h\n"
    "  spillway audit --team ml -o json | jq '.entries[] | select(.status >= 400)'\n"
    SPW_CLI_EXIT_HELP;

static void audit_table(const json_t *doc)
{
    const json_t *entries = json_object_get(doc, "entries");
    size_t i;
    const json_t *e;
    printf("%-20s %-16s %-10s %-14s %-20s %s\n", "TIME", "TOKEN", "TEAM", "ACTION", "TARGET",
           "STATUS");
    json_array_foreach(entries, i, e) {
        double ts = 0, st = 0;
        spw_cli_jnum(e, "ts", &ts);
        spw_cli_jnum(e, "status", &st);
        time_t t = (time_t)ts;
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        const char *tok = spw_cli_jstr(e, "token"), *team = spw_cli_jstr(e, "team");
        const char *action = spw_cli_jstr(e, "action"), *target = spw_cli_jstr(e, "target");
        printf("%-20s %-16s %-10s %-14s %-20s %d\n", when, tok ? tok : "-", team ? team : "-",
               action ? action : "?", target ? target : "-", (int)st);
    }
    if (json_array_size(entries) == 0)
        printf("(no entries)\n");
}

int spw_cli_audit(int argc, char **argv)
{
    enum { O_SINCE = SPW_CLI_O_FIRST, O_TEAM, O_LIMIT };
    static const struct option opts[] = {
        {"since", required_argument, NULL, O_SINCE},
        {"team", required_argument, NULL, O_TEAM},
        {"limit", required_argument, NULL, O_LIMIT},
        SPW_CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    spw_cli_common_t co;
    double since = -1;
    const char *team = NULL;
    long limit = 0;
    int c;
    spw_cli_common_init(&co);
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(spw_cli_audit_usage, stdout);
            return 0;
        }
        if (c == O_SINCE) {
            double v;
            if (spw_parse_duration(optarg, &v) == 0 && v >= 0) {
                since = (double)time(NULL) - v;
            } else if (spw_parse_rfc3339(optarg, &v) == 0) {
                since = v;
            } else {
                spw_cli_die_usage("audit", "--since takes a duration back from now (30m, 1h, "
                                           "2d) or a time like 2026-11-24T18:00:00Z");
            }
            if (since < 0)
                since = 0;
            continue;
        }
        if (c == O_TEAM) {
            if (!*optarg || strlen(optarg) > 64 || strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(optarg))
                spw_cli_die_usage("audit", "--team takes a team name");
            team = optarg;
            continue;
        }
        if (c == O_LIMIT) {
            char *end;
            limit = strtol(optarg, &end, 10);
            if (*end || end == optarg || limit < 1 || limit > 10000)
                spw_cli_die_usage("audit", "--limit takes a whole number from 1 to 10000");
            continue;
        }
        if (!spw_cli_common_opt(&co, "audit", c, optarg))
            spw_cli_die_usage("audit", "unknown option");
    }
    if (optind < argc)
        spw_cli_die_usage("audit", "unexpected argument");
    char path[256];
    int n = snprintf(path, sizeof(path), "/v1/audit?");
    if (since >= 0)
        n += snprintf(path + n, sizeof(path) - (size_t)n, "since=%.3f&", since);
    if (team)
        n += snprintf(path + n, sizeof(path) - (size_t)n, "team=%s&", team);
    if (limit)
        n += snprintf(path + n, sizeof(path) - (size_t)n, "limit=%ld&", limit);
    path[n - 1] = '\0';  /* the last '&' or the '?' */
    return show(&co, "audit", path, audit_table);
}

/* ---- instances ----------------------------------------------------------- */

const char spw_cli_instances_usage[] =
    "usage: spillway instances [--release-orphans] [OPTIONS]\n"
    "\n"
    "Every instance each cloud account holds with this daemon's tags, as the\n"
    "clouds list them: its state, job, cost so far, and ORPHAN for one the\n"
    "daemon has no live record of (bought before a crash, after a lost state\n"
    "dir).  Needs an admin token.\n"
    "\n"
    "  --release-orphans    release the orphans (they stop billing)\n"
    SPW_CLI_COMMON_HELP
    "\n"
    "Examples:\n"
    "  spillway instances\n"
    "  spillway instances -o json | jq '.instances[] | select(.orphan)'\n"
    "  spillway instances --release-orphans\n"
    SPW_CLI_EXIT_HELP;

static void instances_table(const json_t *doc)
{
    size_t i;
    json_t *o;
    char a[64], g[64];
    double now = spw_cli_now();
    spw_table_t *t = spw_table_create("ACCOUNT|INSTANCE|CLOUD ID|OFFER|STATE|JOB|>AGE|>COST|ORPHAN");
    json_array_foreach(json_object_get(doc, "instances"), i, o) {
        double launched;
        if (spw_cli_jnum(o, "launched_ts", &launched) == 0)
            spw_cli_dur(now - launched, a, sizeof(a));
        else
            snprintf(a, sizeof(a), "-");
        spw_table_row(t, spw_cli_jstr(o, "account"), spw_cli_jstr(o, "id"),
                      spw_cli_jstr(o, "cloud_id"), spw_cli_jstr(o, "offer"),
                      spw_cli_jstr(o, "state"), spw_cli_jstr(o, "job_id"), a,
                      spw_cli_money(o, "cost_usd", g, sizeof(g)),
                      spw_cli_jbool(o, "orphan") ? "yes" : "no");
    }
    if (spw_table_rows(t))
        spw_table_print(t, stdout, 0);
    else
        printf("no cloud instances\n");
    spw_table_destroy(t);
    json_array_foreach(json_object_get(doc, "accounts"), i, o)
        if (spw_cli_jstr(o, "error"))
            printf("account %s: %s\n", spw_cli_jstr(o, "name"), spw_cli_jstr(o, "error"));
    json_array_foreach(json_object_get(doc, "released"), i, o)
        printf("released orphan %s\n", json_string_value(o));
}

int spw_cli_instances(int argc, char **argv)
{
    static const struct option opts[] = {
        {"release-orphans", no_argument, NULL, 'R'}, SPW_CLI_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    spw_cli_common_t co;
    int c, release = 0;
    spw_cli_common_init(&co);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(spw_cli_instances_usage, stdout);
            return 0;
        }
        if (c == 'R')
            release = 1;
        else if (!spw_cli_common_opt(&co, "instances", c, optarg))
            spw_cli_die_usage("instances", "unknown option");
    }
    if (optind < argc)
        spw_cli_die_usage("instances", "unexpected argument");
    if (!release)
        return show(&co, "instances", "/v1/instances", instances_table);
    json_t *doc;
    int rc = spw_client_call(&co, "instances", "POST", "/v1/instances/release-orphans", "", "",
                             &doc);
    if (rc != SPW_CLI_OK)
        return rc;
    if (co.json)
        spw_cli_json_print(stdout, doc);
    else
        instances_table(doc);
    json_decref(doc);
    return spw_cli_flush("instances");
}

/* ---- admin --------------------------------------------------------------- */

static int admin_preempt(int argc, char **argv)
{
    spw_cli_common_t co;
    const char *id;
    parse_plain(argc, argv, "admin preempt", spw_cli_admin_usage, &co, 1, &id,
                "missing the instance id (as `spillway pools` shows it: emu-i-000001)");
    json_t *inst;
    int rc = spw_client_call(&co, "admin preempt", "POST", "/v1/admin/instances/", id, "/preempt",
                             &inst);
    if (rc != SPW_CLI_OK)
        return rc;
    if (co.json) {
        spw_cli_json_print(stdout, inst);
    } else {
        const char *iid = spw_cli_jstr(inst, "id"), *state = spw_cli_jstr(inst, "state");
        const char *job = spw_cli_jstr(inst, "job_id");
        printf("%s: preempted (now %s)", iid ? iid : id, state ? state : "?");
        if (job)
            printf("; job %s goes back to the queue", job);
        printf("\n");
    }
    json_decref(inst);
    return spw_cli_flush("admin preempt");
}

static int admin_node(int argc, char **argv)
{
    spw_cli_common_t co;
    const char *args[2];
    parse_plain(argc, argv, "admin node", spw_cli_admin_usage, &co, 2, args,
                "expected POOL/INDEX and down or up: spillway admin node local/0 down");
    const char *node = args[0], *action = args[1];
    const char *slash = strrchr(node, '/');
    if (!slash || slash == node || !slash[1] || strspn(slash + 1, "0123456789") != strlen(slash + 1))
        spw_cli_die_usage("admin node", "the node is POOL/INDEX, with INDEX a number from 0: "
                                        "local/0");
    if (strcmp(action, "down") != 0 && strcmp(action, "up") != 0)
        spw_cli_die_usage("admin node", "the action is down or up");
    size_t plen = (size_t)(slash - node);
    char *pool = spw_xmalloc(plen + 1);
    memcpy(pool, node, plen);
    pool[plen] = '\0';
    size_t slen = strlen(slash) + strlen(action) + 2;
    char *suffix = spw_xmalloc(slen);
    snprintf(suffix, slen, "%s/%s", slash, action);
    json_t *res;
    int rc = spw_client_call(&co, "admin node", "POST", "/v1/admin/nodes/", pool, suffix, &res);
    free(pool);
    free(suffix);
    if (rc != SPW_CLI_OK)
        return rc;
    if (co.json) {
        spw_cli_json_print(stdout, res);
    } else {
        const char *state = spw_cli_jstr(res, "state");
        json_t *jobs = json_object_get(res, "jobs_interrupted");
        printf("node %s is %s", node, state ? state : "?");
        if (json_array_size(jobs)) {
            size_t i;
            json_t *e;
            printf("; jobs stopped and placed again:");
            json_array_foreach(jobs, i, e)
                printf(" %s", json_string_value(e) ? json_string_value(e) : "?");
        }
        printf("\n");
    }
    json_decref(res);
    return spw_cli_flush("admin node");
}

int spw_cli_admin(int argc, char **argv)
{
    if (argc < 2)
        spw_cli_die_usage("admin", "missing the action: spillway admin preempt INSTANCE_ID, "
                                   "or spillway admin node POOL/INDEX down|up");
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
        fputs(spw_cli_admin_usage, stdout);
        return 0;
    }
    if (!strcmp(sub, "preempt"))
        return admin_preempt(argc - 1, argv + 1);
    if (!strcmp(sub, "node"))
        return admin_node(argc - 1, argv + 1);
    fprintf(stderr, "spillway admin: unknown action '%s'; there are: preempt, node\n"
                    "(see 'spillway admin --help')\n", sub);
    return SPW_CLI_EUNREACH;
}
