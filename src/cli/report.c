/* report.c: tables, JSON and CSV for simulation results. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/report.h"

/* Prints a duration in the largest unit that keeps it readable. */
static const char *human_s(double s, char *buf, size_t len)
{
    if (s < 120)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, len, "%.1f min", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%.1f h", s / 3600);
    else
        snprintf(buf, len, "%.1f d", s / 86400);
    return buf;
}

static const char *money(double usd, char *buf, size_t len)
{
    if (usd >= 1e6)
        snprintf(buf, len, "$%.2fM", usd / 1e6);
    else
        snprintf(buf, len, "$%.2f", usd);
    return buf;
}

/* GPU-hours for a summary line: whole hours, but one decimal below 10 so
 * that a short paid attempt (0.3 GPU-h beside $0.30) does not read 0. */
static const char *gpu_h(double h, char *buf, size_t len)
{
    snprintf(buf, len, h > 0 && h < 9.95 ? "%.1f" : "%.0f", h);
    return buf;
}

static size_t skipped(const spw_trace_t *t)
{
    return t->skipped_no_gpu + t->skipped_unscheduled;
}

/* JSON numbers: finite with enough digits, never "nan". */
static void jnum(FILE *f, const char *key, double v, int last)
{
    if (!isfinite(v))
        v = 0;
    fprintf(f, "\"%s\": %.10g%s", key, v, last ? "" : ", ");
}

static void jint(FILE *f, const char *key, unsigned long long v)
{
    fprintf(f, "\"%s\": %llu, ", key, v);
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Everything the run cost: cloud compute, every owned GPU and every
 * committed cloud GPU for the whole run (used or idle), and egress. */
static double total_usd(const spw_sim_summary_t *s)
{
    return s->cloud_cost_usd + s->owned_cost_usd + s->commit_cost_usd + s->egress_usd;
}

/* The fleet has cloud commitments (their rows are shown). */
static int commit_shown(const spw_sim_summary_t *s)
{
    return s->commit_cost_usd > 0 || s->commit_gpu_hours > 0;
}

/* Team k of the summary (0 = no team) has something to show. */
static int team_shown(const spw_sim_summary_t *s, size_t k)
{
    return k > 0 || s->team[0].jobs;
}

static const char *team_name(const spw_report_row_t *r, size_t k)
{
    return k == 0 ? "(no team)" : r->gov->teams[k - 1].name;
}

static void json_governance(FILE *f, const spw_report_row_t *r)
{
    const spw_sim_summary_t *s = &r->sum;
    fprintf(f, "\"governance\": {\"active\": %s, ", s->gov ? "true" : "false");
    jint(f, "jobs_held", s->jobs_held);
    jint(f, "jobs_rejected", s->jobs_rejected);
    jint(f, "jobs_never_ran", s->jobs_never_ran);
    jint(f, "jobs_onprem_by_residency", s->jobs_onprem_by_residency);
    jint(f, "jobs_onprem_only_budget", s->jobs_onprem_only_budget);
    jint(f, "jobs_stopped_max_runtime", s->jobs_stopped_max_runtime);
    jnum(f, "egress_gb", s->egress_gb, 0);
    jnum(f, "egress_usd", s->egress_usd, 0);
    jnum(f, "peak_cloud_usd_per_h", s->peak_cloud_usd_per_h, 0);
    jnum(f, "peak_cloud_gpus", s->peak_cloud_gpus, 0);
    fprintf(f, "\"teams\": [");
    int first = 1;
    for (size_t k = 0; k <= s->nteams && r->gov; k++) {
        if (!team_shown(s, k))
            continue;
        const spw_sim_team_t *tm = &s->team[k];
        fprintf(f, "%s{\"team\": ", first ? "" : ", ");
        first = 0;
        if (k == 0) {
            fprintf(f, "null, ");
        } else {
            jstr(f, r->gov->teams[k - 1].name);
            fprintf(f, ", ");
        }
        if (k > 0 && isfinite(r->gov->teams[k - 1].budget_usd)) {
            jnum(f, "budget_usd", r->gov->teams[k - 1].budget_usd, 0);
            fprintf(f, "\"period\": \"%s\", ", spw_period_name(r->gov->teams[k - 1].period));
        } else {
            fprintf(f, "\"budget_usd\": null, \"period\": null, ");
        }
        jint(f, "jobs", tm->jobs);
        jint(f, "jobs_held", tm->jobs_held);
        jint(f, "jobs_rejected", tm->jobs_rejected);
        jnum(f, "cloud_usd", tm->cloud_usd, 0);
        jnum(f, "onprem_usd", tm->onprem_usd, 0);
        jnum(f, "egress_usd", tm->egress_usd, 0);
        jnum(f, "cloud_egress_usd", tm->egress_usd - tm->onprem_egress_usd, 0);
        jnum(f, "onprem_egress_usd", tm->onprem_egress_usd, 0);
        jnum(f, "egress_gb", tm->egress_gb, 0);
        jnum(f, "worst_period_usd", tm->worst_period_usd, 0);
        jnum(f, "budget_use", tm->budget_use, 0);
        jnum(f, "wait_mean_s", tm->wait_mean_s, 0);
        jnum(f, "wait_p90_s", tm->wait_p90_s, 0);
        jnum(f, "jct_mean_s", tm->jct_mean_s, 0);
        jint(f, "reclaimed", tm->reclaimed);
        jnum(f, "rho", tm->rho, 1);
        fprintf(f, "}");
    }
    fprintf(f, "]}, ");
}

/* Spot, failures and deadlines: always written, zeros when none. */
static void json_spot(FILE *f, const spw_sim_summary_t *s)
{
    jnum(f, "spot_cost_usd", s->spot_cost_usd, 0);
    jnum(f, "spot_gpu_hours", s->spot_gpu_hours, 0);
    jnum(f, "ondemand_gpu_hours", s->ondemand_gpu_hours, 0);
    jint(f, "jobs_spot", s->jobs_spot);
    jint(f, "jobs_ran_cloud", s->jobs_ran_cloud);
    jint(f, "preemptions", s->preemptions);
    jint(f, "capacity_errors", s->capacity_errors);
    jint(f, "node_failures", s->node_failures);
    jint(f, "jobs_interrupted_by_failure", s->jobs_interrupted_by_failure);
    jint(f, "restarts", s->restarts);
    jint(f, "switches_to_spot", s->switches_to_spot);
    jnum(f, "lost_gpu_hours", s->lost_gpu_hours, 0);
    jint(f, "jobs_failed", s->jobs_failed);
    jint(f, "jobs_deadline", s->jobs_deadline);
    jint(f, "deadline_met", s->deadline_met);
    jint(f, "deadline_missed", s->deadline_missed);
    jint(f, "deadline_infeasible", s->deadline_infeasible);
}

void spw_report_json(FILE *f, const spw_trace_t *t, const spw_report_row_t *r)
{
    const spw_sim_summary_t *s = &r->sum;
    fprintf(f, "{\"wait_policy\": \"%s\", \"gravity\": %s, ", r->wait,
            r->policy->gravity ? "true" : "false");
    fprintf(f, "\"queue\": \"%s\", \"scan\": \"%s\", \"backfill\": \"%s\", \"fit\": \"%s\", ",
            spw_queue_order_name(r->policy->queue), spw_scan_name(r->policy->scan),
            spw_backfill_name(r->policy->backfill), spw_fit_name(r->policy->fit));
    jint(f, "trace_rows", t->rows);
    jint(f, "jobs", s->jobs);
    jint(f, "jobs_onprem", s->jobs_onprem);
    jint(f, "jobs_cloud", s->jobs_cloud);
    jint(f, "jobs_skipped", skipped(t));
    jint(f, "jobs_unschedulable", s->jobs_unschedulable);
    jint(f, "jobs_backfilled", s->jobs_backfilled);
    jnum(f, "cloud_cost_usd", s->cloud_cost_usd, 0);
    jnum(f, "onprem_cost_usd", s->onprem_cost_usd, 0);
    jnum(f, "owned_cost_usd", s->owned_cost_usd, 0);
    jnum(f, "owned_used_usd", s->owned_used_usd, 0);
    jnum(f, "owned_idle_usd", s->owned_idle_usd, 0);
    if (commit_shown(s)) {
        jnum(f, "commit_cost_usd", s->commit_cost_usd, 0);
        jnum(f, "commit_used_usd", s->commit_used_usd, 0);
        jnum(f, "commit_idle_usd", s->commit_idle_usd, 0);
        jnum(f, "commit_gpu_hours", s->commit_gpu_hours, 0);
    }
    jnum(f, "egress_usd", s->egress_usd, 0);
    jnum(f, "total_cost_usd", total_usd(s), 0);
    jnum(f, "useful_gpu_hours", s->useful_gpu_hours, 0);
    jnum(f, "stopped_gpu_hours", s->stopped_gpu_hours, 0);
    jnum(f, "cost_per_useful_gpu_h", s->cost_per_useful_gpu_h, 0);
    jnum(f, "cloud_gpu_hours", s->cloud_gpu_hours, 0);
    jnum(f, "onprem_gpu_hours", s->onprem_gpu_hours, 0);
    jnum(f, "wait_mean_s", s->wait_mean_s, 0);
    jnum(f, "wait_p50_s", s->wait_p50_s, 0);
    jnum(f, "wait_p90_s", s->wait_p90_s, 0);
    jnum(f, "wait_p99_s", s->wait_p99_s, 0);
    jnum(f, "jct_mean_s", s->jct_mean_s, 0);
    jnum(f, "jct_p50_s", s->jct_p50_s, 0);
    jnum(f, "jct_p90_s", s->jct_p90_s, 0);
    jnum(f, "jct_p99_s", s->jct_p99_s, 0);
    jnum(f, "onprem_utilization", s->onprem_utilization, 0);
    jint(f, "onprem_gpus", s->onprem_gpus);
    jint(f, "queue_max", s->queue_max);
    jnum(f, "makespan_s", s->makespan_s, 0);
    jint(f, "events", s->events);
    json_spot(f, s);
    json_governance(f, r);
    jnum(f, "sim_seconds", r->seconds, 1);
    fprintf(f, "}");
}

void spw_report_compare_json(FILE *f, const spw_trace_t *t, const spw_report_row_t *rows,
                             size_t n)
{
    fprintf(f, "[\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "  ");
        spw_report_json(f, t, &rows[i]);
        fprintf(f, "%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "]\n");
}

/* Waits per team and Themis's finish-time fairness (docs/fairshare.md). */
static void table_teams(FILE *f, const spw_report_row_t *r)
{
    const spw_sim_summary_t *s = &r->sum;
    char a[32], b[32], c[32], rho[16];
    fprintf(f, "\n  %-16s %6s %12s %12s %12s %6s %9s\n", "team", "jobs", "mean wait", "p90 wait",
            "mean JCT", "rho", "reclaimed");
    for (size_t k = 0; k <= s->nteams; k++) {
        const spw_sim_team_t *tm = &s->team[k];
        if (!team_shown(s, k) || !tm->jobs)
            continue;
        snprintf(rho, sizeof(rho), tm->rho > 0 ? "%.2f" : "-", tm->rho);
        fprintf(f, "  %-16.16s %6zu %12s %12s %12s %6s %9zu\n", team_name(r, k), tm->jobs,
                human_s(tm->wait_mean_s, a, sizeof(a)), human_s(tm->wait_p90_s, b, sizeof(b)),
                human_s(tm->jct_mean_s, c, sizeof(c)), rho, tm->reclaimed);
    }
    fprintf(f, "  (rho: the team's mean JCT here over its mean JCT alone on 1/N of the pools;\n"
               "   reclaimed: attempts preempted for a team under its quota, %zu in all)\n",
            s->reclaims);
}

static void table_governance(FILE *f, const spw_report_row_t *r)
{
    const spw_sim_summary_t *s = &r->sum;
    char a[32], b[32], c[32];
    fprintf(f, "\ngovernance (data gravity %s):\n", r->policy->gravity ? "on" : "off");
    fprintf(f, "  %-22s %zu held by a budget or cap, %zu rejected", "jobs", s->jobs_held,
            s->jobs_rejected);
    if (s->jobs_never_ran)
        fprintf(f, ", %zu never ran (still held at the end)", s->jobs_never_ran);
    fprintf(f, "\n");
    fprintf(f, "  %-22s %zu by residency, %zu by budget (on_exhausted: onprem_only)\n",
            "kept on-prem", s->jobs_onprem_by_residency, s->jobs_onprem_only_budget);
    fprintf(f, "  %-22s %zu jobs\n", "stopped at max runtime", s->jobs_stopped_max_runtime);
    fprintf(f, "  %-22s %.1f GB, %s\n", "egress", s->egress_gb, money(s->egress_usd, a, sizeof(a)));
    fprintf(f, "  %-22s %s/h, %.0f GPUs\n", "peak cloud",
            money(s->peak_cloud_usd_per_h, a, sizeof(a)), s->peak_cloud_gpus);
    if (!s->nteams && !s->team[0].jobs)
        return;
    fprintf(f, "\n  %-16s %18s %12s %7s %6s %8s %21s %14s\n", "team", "budget", "spend", "use",
            "held", "rejected", "egress / cap", "into pools");
    for (size_t k = 0; k <= s->nteams; k++) {
        if (!team_shown(s, k))
            continue;
        const spw_sim_team_t *tm = &s->team[k];
        const spw_team_spec_t *ts = k ? &r->gov->teams[k - 1] : NULL;
        char budget[48] = "-", use[16] = "-";
        if (ts && isfinite(ts->budget_usd)) {
            snprintf(budget, sizeof(budget), "%s/%s", money(ts->budget_usd, a, sizeof(a)),
                     spw_period_name(ts->period));
            snprintf(use, sizeof(use), "%.1f%%", 100 * tm->budget_use);
        }
        char eg[64], cap[32] = "-", d[32];
        if (ts && isfinite(ts->max_egress_usd_per_month))
            money(ts->max_egress_usd_per_month, cap, sizeof(cap));
        snprintf(eg, sizeof(eg), "%s / %s", money(tm->egress_usd, c, sizeof(c)), cap);
        fprintf(f, "  %-16.16s %18s %12s %7s %6zu %8zu %21s %14s\n", team_name(r, k), budget,
                money(tm->cloud_usd + tm->egress_usd, b, sizeof(b)), use, tm->jobs_held,
                tm->jobs_rejected, eg, money(tm->onprem_egress_usd, d, sizeof(d)));
    }
    fprintf(f, "  (spend: cloud compute + egress over the whole run; use: the fullest budget "
               "period;\n   egress: every egress dollar of the team (copies into the cloud with "
               "cache storage,\n   and into pools), under its max_cloud_egress_usd_per_month "
               "each month;\n   into pools: the part that copied data into on-prem pools)\n");
}

/* Whether a run used spot, lost capacity or had deadlines: the "spot and
 * failures" block is shown only then. */
static int spot_shown(const spw_sim_summary_t *s)
{
    return s->jobs_spot || s->preemptions || s->node_failures || s->jobs_failed
           || s->jobs_deadline || s->restarts || s->capacity_errors;
}

static void table_spot(FILE *f, const spw_report_row_t *r)
{
    const spw_sim_summary_t *s = &r->sum;
    char a[32], b[32];
    fprintf(f, "\nspot and failures (spot policy %s, restart overhead %s):\n",
            spw_spot_policy_name(r->policy->spot_policy),
            human_s(r->policy->restart_overhead_s, a, sizeof(a)));
    fprintf(f, "  %-22s %zu jobs, %s of %s cloud compute\n", "ran on spot", s->jobs_spot,
            money(s->spot_cost_usd, a, sizeof(a)), money(s->cloud_cost_usd, b, sizeof(b)));
    fprintf(f, "  %-22s %s spot, %s on demand\n", "cloud GPU-hours",
            gpu_h(s->spot_gpu_hours, a, sizeof(a)), gpu_h(s->ondemand_gpu_hours, b, sizeof(b)));
    fprintf(f, "  %-22s %zu spot preemption(s); %zu node failure(s), which ended %zu "
            "attempt(s)\n", "interruptions", s->preemptions, s->node_failures,
            s->jobs_interrupted_by_failure);
    if (s->capacity_errors)
        fprintf(f, "  %-22s %zu acquisitions refused (cloud.capacity_errors), each placed "
                "again at once\n", "capacity errors", s->capacity_errors);
    fprintf(f, "  %-22s %zu restarts (%zu moves from on demand to spot), %.1f GPU-hours of "
            "work lost", "restarts", s->restarts, s->switches_to_spot, s->lost_gpu_hours);
    if (s->jobs_failed)
        fprintf(f, ", %zu jobs failed (max_restarts)", s->jobs_failed);
    fprintf(f, "\n");
    if (s->jobs_deadline) {
        fprintf(f, "  %-22s %zu jobs: %zu met, %zu missed", "deadlines", s->jobs_deadline,
                s->deadline_met, s->deadline_missed);
        if (s->deadline_infeasible)
            fprintf(f, ", %zu infeasible (shorter than the runtime)", s->deadline_infeasible);
        fprintf(f, "\n");
    }
}

void spw_report_table(FILE *f, const spw_trace_t *t, const spw_config_t *cfg,
                      const spw_report_row_t *r)
{
    const spw_sim_summary_t *s = &r->sum;
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(f, "spillway sim: %zu jobs (%s trace", s->jobs, spw_trace_format_name(t->format));
    if (skipped(t))
        fprintf(f, ", %zu rows skipped: %zu without GPUs, %zu never scheduled", skipped(t),
                t->skipped_no_gpu, t->skipped_unscheduled);
    fprintf(f, ")\n");
    fprintf(f, "fleet:  %zu on-prem pool(s), %llu GPUs; cloud: %zu offer(s)\n",
            cfg->fleet.npools, (unsigned long long)s->onprem_gpus, cfg->fleet.noffers);
    fprintf(f, "policy: queue %s, scan %s, backfill %s, fit %s, wait %s\n\n",
            spw_queue_order_name(r->policy->queue), spw_scan_name(r->policy->scan),
            spw_backfill_name(r->policy->backfill), spw_fit_name(r->policy->fit), r->wait);
    fprintf(f, "  %-22s %zu on-prem, %zu cloud", "jobs", s->jobs_onprem, s->jobs_cloud);
    if (s->jobs_ran_cloud != s->jobs_cloud)
        fprintf(f, " (by where they ended; %zu ran in the cloud at some attempt)",
                s->jobs_ran_cloud);
    if (s->jobs_unschedulable)
        fprintf(f, ", %zu unschedulable", s->jobs_unschedulable);
    if (s->jobs_backfilled)
        fprintf(f, " (%zu backfilled)", s->jobs_backfilled);
    fprintf(f, "\n");
    if (commit_shown(s))
        fprintf(f, "  %-22s %s cloud + %s on-prem owned + %s committed + %s egress = %s\n",
                "cost", money(s->cloud_cost_usd, a, sizeof(a)),
                money(s->owned_cost_usd, b, sizeof(b)), money(s->commit_cost_usd, d, sizeof(d)),
                money(s->egress_usd, e, sizeof(e)), money(total_usd(s), c, sizeof(c)));
    else if (s->egress_usd > 0)
        fprintf(f, "  %-22s %s cloud + %s on-prem owned + %s egress = %s\n", "cost",
                money(s->cloud_cost_usd, a, sizeof(a)), money(s->owned_cost_usd, b, sizeof(b)),
                money(s->egress_usd, d, sizeof(d)), money(total_usd(s), c, sizeof(c)));
    else
        fprintf(f, "  %-22s %s cloud + %s on-prem owned = %s\n", "cost",
                money(s->cloud_cost_usd, a, sizeof(a)), money(s->owned_cost_usd, b, sizeof(b)),
                money(total_usd(s), c, sizeof(c)));
    if (s->onprem_gpus)
        fprintf(f, "  %-22s %s used by jobs, %s idle (every owned GPU, for the makespan)\n",
                "on-prem owned", money(s->owned_used_usd, a, sizeof(a)),
                money(s->owned_idle_usd, b, sizeof(b)));
    if (commit_shown(s))
        fprintf(f, "  %-22s %s used by jobs (%.0f GPU-hours), %s idle (every committed GPU, "
                "for the makespan)\n", "cloud committed", money(s->commit_used_usd, a, sizeof(a)),
                s->commit_gpu_hours, money(s->commit_idle_usd, b, sizeof(b)));
    fprintf(f, "  %-22s %s (%.0f GPU-hours of work done)\n", "per useful GPU-hour",
            money(s->cost_per_useful_gpu_h, a, sizeof(a)), s->useful_gpu_hours);
    if (s->jobs_stopped_max_runtime)
        fprintf(f, "  %-22s %zu jobs stopped unfinished at their max runtime: %.0f GPU-hours "
                "paid, not counted as work done\n", "not finished", s->jobs_stopped_max_runtime,
                s->stopped_gpu_hours);
    if (commit_shown(s))
        fprintf(f, "  %-22s %s cloud, %s committed, %s on-prem\n", "GPU-hours",
                gpu_h(s->cloud_gpu_hours, a, sizeof(a)), gpu_h(s->commit_gpu_hours, b, sizeof(b)),
                gpu_h(s->onprem_gpu_hours, c, sizeof(c)));
    else
        fprintf(f, "  %-22s %s cloud, %s on-prem\n", "GPU-hours",
                gpu_h(s->cloud_gpu_hours, a, sizeof(a)), gpu_h(s->onprem_gpu_hours, b, sizeof(b)));
    fprintf(f, "  %-22s mean %s, p50 %s, p90 %s, p99 %s\n", "wait",
            human_s(s->wait_mean_s, a, sizeof(a)), human_s(s->wait_p50_s, b, sizeof(b)),
            human_s(s->wait_p90_s, c, sizeof(c)), human_s(s->wait_p99_s, d, sizeof(d)));
    fprintf(f, "  %-22s mean %s, p50 %s, p90 %s, p99 %s\n", "completion time",
            human_s(s->jct_mean_s, a, sizeof(a)), human_s(s->jct_p50_s, b, sizeof(b)),
            human_s(s->jct_p90_s, c, sizeof(c)), human_s(s->jct_p99_s, d, sizeof(d)));
    fprintf(f, "  %-22s %.1f%%\n", "on-prem utilisation", 100 * s->onprem_utilization);
    fprintf(f, "  %-22s %zu jobs\n", "longest queue", s->queue_max);
    fprintf(f, "  %-22s %s\n", "makespan", human_s(s->makespan_s, a, sizeof(a)));
    if (spot_shown(s))
        table_spot(f, r);
    if (s->gov)
        table_governance(f, r);
    if (s->gov && s->nteams)
        table_teams(f, r);
    fprintf(f, "  (simulated in %.2f s)\n", r->seconds);
}

void spw_report_compare_table(FILE *f, const spw_trace_t *t, const char *what,
                              const spw_report_row_t *rows, size_t n)
{
    char a[32];
    fprintf(f, "spillway sim --compare: %zu jobs", n ? rows[0].sum.jobs : 0);
    if (skipped(t))
        fprintf(f, " (%zu rows skipped)", skipped(t));
    fprintf(f, "\n\n%-20s", what);
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %16s", rows[i].label);
    fprintf(f, "\n");
#define ROW(label, expr)                                                      \
    do {                                                                      \
        fprintf(f, "%-20s", label);                                           \
        for (size_t i = 0; i < n; i++) {                                      \
            const spw_sim_summary_t *s = &rows[i].sum;                        \
            (void)s;                                                          \
            fprintf(f, " %16s", expr);                                        \
        }                                                                     \
        fprintf(f, "\n");                                                     \
    } while (0)
    char cell[64];
#define CELL(fmt, ...) (snprintf(cell, sizeof(cell), fmt, __VA_ARGS__), cell)
    ROW("jobs on-prem", CELL("%zu", s->jobs_onprem));
    ROW("jobs to cloud", CELL("%zu", s->jobs_cloud));
    ROW("cloud cost", money(s->cloud_cost_usd, a, sizeof(a)));
    ROW("on-prem owned", money(s->owned_cost_usd, a, sizeof(a)));
    ROW("  of it idle", money(s->owned_idle_usd, a, sizeof(a)));
    int commit = 0;
    for (size_t i = 0; i < n; i++)
        commit |= commit_shown(&rows[i].sum);
    if (commit) {
        ROW("cloud committed", money(s->commit_cost_usd, a, sizeof(a)));
        ROW("  of it idle", money(s->commit_idle_usd, a, sizeof(a)));
    }
    int gov = 0, egress = 0, spot = 0, deadline = 0;
    for (size_t i = 0; i < n; i++) {
        gov |= rows[i].sum.gov;
        egress |= rows[i].sum.egress_gb > 0;
        spot |= spot_shown(&rows[i].sum);
        deadline |= rows[i].sum.jobs_deadline > 0;
    }
    if (egress || gov) {
        ROW("egress GB", CELL("%.1f", s->egress_gb));
        ROW("egress cost", money(s->egress_usd, a, sizeof(a)));
    }
    ROW("total cost", money(total_usd(s), a, sizeof(a)));
    ROW("$ / useful GPU-h", money(s->cost_per_useful_gpu_h, a, sizeof(a)));
    ROW("cloud GPU-hours", CELL("%.0f", s->cloud_gpu_hours));
    ROW("wait mean", human_s(s->wait_mean_s, a, sizeof(a)));
    ROW("wait p50", human_s(s->wait_p50_s, a, sizeof(a)));
    ROW("wait p90", human_s(s->wait_p90_s, a, sizeof(a)));
    ROW("wait p99", human_s(s->wait_p99_s, a, sizeof(a)));
    ROW("JCT mean", human_s(s->jct_mean_s, a, sizeof(a)));
    ROW("JCT p99", human_s(s->jct_p99_s, a, sizeof(a)));
    ROW("on-prem util", CELL("%.1f%%", 100 * s->onprem_utilization));
    ROW("longest queue", CELL("%zu", s->queue_max));
    ROW("unschedulable", CELL("%zu", s->jobs_unschedulable));
    if (spot) {
        ROW("spot cost", money(s->spot_cost_usd, a, sizeof(a)));
        ROW("jobs on spot", CELL("%zu", s->jobs_spot));
        ROW("preemptions", CELL("%zu", s->preemptions));
        ROW("capacity errors", CELL("%zu", s->capacity_errors));
        ROW("node failures", CELL("%zu", s->node_failures));
        ROW("restarts", CELL("%zu", s->restarts));
        ROW("moves to spot", CELL("%zu", s->switches_to_spot));
        ROW("lost GPU-hours", CELL("%.1f", s->lost_gpu_hours));
        ROW("failed (restarts)", CELL("%zu", s->jobs_failed));
    }
    if (deadline) {
        ROW("deadlines met", CELL("%zu", s->deadline_met));
        ROW("deadlines missed", CELL("%zu", s->deadline_missed));
    }
    if (gov) {
        ROW("held (budget/cap)", CELL("%zu", s->jobs_held));
        ROW("rejected (budget)", CELL("%zu", s->jobs_rejected));
        ROW("on-prem: residency", CELL("%zu", s->jobs_onprem_by_residency));
        ROW("peak cloud $/h", money(s->peak_cloud_usd_per_h, a, sizeof(a)));
    }
    /* Fair share: each team's waits and rho side by side (docs/fairshare.md). */
    for (size_t k = 0; n && rows[0].sum.gov && k <= rows[0].sum.nteams; k++) {
        const spw_sim_summary_t *s0 = &rows[0].sum;
        if (!team_shown(s0, k) || !s0->team[k].jobs)
            continue;
        char label[24];
        snprintf(label, sizeof(label), "%.9s wait mean", team_name(&rows[0], k));
        ROW(label, human_s(s->team[k].wait_mean_s, a, sizeof(a)));
        snprintf(label, sizeof(label), "%.9s wait p90", team_name(&rows[0], k));
        ROW(label, human_s(s->team[k].wait_p90_s, a, sizeof(a)));
        snprintf(label, sizeof(label), "%.9s rho", team_name(&rows[0], k));
        ROW(label, s->team[k].rho > 0 ? CELL("%.2f", s->team[k].rho) : "-");
    }
#undef ROW
#undef CELL
}

/* Writes a CSV field, quoting it when it holds a comma, quote or newline. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int spw_report_jobs_csv(const char *path, const spw_trace_t *t, const spw_fleet_t *fleet,
                        spw_error_t *err)
{
    int out = strcmp(path, "-") == 0;   /* "-": standard output */
    FILE *f = out ? stdout : fopen(path, "w");
    if (!f)
        return spw_errorf(err, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "id,submit_s,start_s,end_s,placement,wait_s,cost_usd,reason,held,spot,restarts,"
               "lost_s,outcome\n");
    for (size_t i = 0; i < t->njobs; i++) {
        const spw_job_t *j = &t->jobs[i];
        /* spot: its last placement was a cloud one on spot capacity. */
        int spot = j->spot && j->offer >= 0;
        const spw_job_rare_t *x = spw_job_rare(j);
        if (j->state != SPW_JOB_DONE) {
            csv_field(f, j->id);
            /* Its cost too: attempts before it was rejected or failed were paid. */
            fprintf(f, ",%.3f,,,%s,,%.6f,", j->submit_s, spw_job_state_name(j->state),
                    j->cost_usd);
            csv_field(f, spw_reason_text(j->reason));
            fprintf(f, ",%u,%d,%u,%.3f,%s\n", x->held, spot, x->restarts, x->lost_s,
                    spw_job_state_name(j->state));
            continue;
        }
        char place[160];
        if (j->offer >= 0 && spw_offer_committed(&fleet->offers[j->offer])) {
            const spw_offer_t *o = &fleet->offers[j->offer];
            snprintf(place, sizeof(place), "commit:%s:%s*%u", o->commit_name, o->instance_type,
                     j->instances);
        } else if (j->offer >= 0) {
            const spw_offer_t *o = &fleet->offers[j->offer];
            snprintf(place, sizeof(place), "cloud:%s:%s:%s*%u", o->provider, o->region,
                     o->instance_type, j->instances);
        } else {
            snprintf(place, sizeof(place), "onprem:%s:%d", fleet->pools[j->pool].name, j->node);
        }
        csv_field(f, j->id);
        fprintf(f, ",%.3f,%.3f,%.3f,", j->submit_s, j->start_s, j->end_s);
        csv_field(f, place);
        fprintf(f, ",%.3f,%.6f,", j->start_s - j->submit_s, j->cost_usd);
        csv_field(f, spw_reason_text(j->reason));
        fprintf(f, ",%u,%d,%u,%.3f,%s\n", x->held, spot, x->restarts, x->lost_s,
                j->stopped_max_run ? "stopped_max_runtime" : "done");
    }
    if (out ? fflush(f) != 0 : fclose(f) != 0)
        return spw_errorf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}
