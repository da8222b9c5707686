/* spotjob_report.c: runs and prints `spillway sim --spot-job` (see
 * spotjob_report.h).  An entry point: it prints, the libraries do not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spotjob_report.h"

/* The checkpoint mode in words, for the table: what a preemption loses. */
static const char *ckpt_text(double interval_s, char *buf, size_t size)
{
    if (interval_s == SPW_CKPT_CONTINUOUS)
        return "continuous (a preemption loses nothing)";
    if (interval_s == 0)
        return "none: restart from scratch";
    snprintf(buf, size, "every %.2f h", interval_s / 3600);
    return buf;
}

/* The checkpoint mode as one word, for JSON. */
static const char *ckpt_mode(double interval_s)
{
    if (interval_s == SPW_CKPT_CONTINUOUS)
        return "continuous";
    return interval_s == 0 ? "none" : "interval";
}

static void print_table(const spw_cli_spotjob_t *o, const spw_spotjob_summary_t *s,
                        size_t runs_per_policy)
{
    const spw_spotjob_params_t *p = &o->params;
    /* The baseline: on demand from the start, one restart overhead. */
    double od_usd = (p->work_s + p->restart_overhead_s) / 3600 * p->ondemand_usd_per_h;
    char buf[48];

    printf("spot job: %.2f h of work, deadline %.2f h (job fraction %.2f), restart overhead "
           "%.2f h\ncheckpoints: %s\n",
           p->work_s / 3600, p->deadline_s / 3600, p->work_s / p->deadline_s,
           p->restart_overhead_s / 3600, ckpt_text(p->checkpoint_interval_s, buf, sizeof(buf)));
    printf("prices: spot $%.4f/h, on-demand $%.4f/h; %zu trace(s) x %zu start offsets = "
           "%zu runs per policy (seed %llu)\n\n",
           p->spot_usd_per_h, p->ondemand_usd_per_h, o->ntraces, o->offsets, runs_per_policy,
           (unsigned long long)o->seed);
    printf("%-17s %14s %14s %9s %9s %7s %10s %8s %7s %7s %10s\n", "policy", "ondemand_h",
           "spot_h", "od_paid_h", "spot_pd_h", "lost_h", "cost_usd", "vs_od", "preempt",
           "misses", "infeasible");
    for (size_t q = 0; q < o->npolicies; q++) {
        char od[32], sp[32];
        snprintf(od, sizeof(od), "%.1f+-%.1f", s[q].ondemand_work_h_mean,
                 s[q].ondemand_work_h_sd);
        snprintf(sp, sizeof(sp), "%.1f+-%.1f", s[q].spot_work_h_mean, s[q].spot_work_h_sd);
        printf("%-17s %14s %14s %9.2f %9.2f %7.2f %10.2f %8.3f %7.2f %7zu %10zu\n",
               spw_spot_policy_name(s[q].policy), od, sp, s[q].ondemand_paid_h_mean,
               s[q].spot_paid_h_mean, s[q].lost_h_mean, s[q].cost_usd_mean,
               od_usd > 0 ? s[q].cost_usd_mean / od_usd : 0.0, s[q].preemptions_mean,
               s[q].missed, s[q].infeasible);
    }
    printf("\nondemand_h, spot_h: hours of progress (mean +- sd), overheads excluded as in "
           "the paper's Table 3,\nlost progress included; *_paid_h include restart "
           "overheads; lost_h: progress lost to\npreemptions; vs_od: mean cost / cost of "
           "on-demand from the start ($%.2f).\n", od_usd);
    if (s[0].infeasible)
        printf("infeasible: the deadline is shorter than the work plus one restart overhead; "
               "no policy can meet it.\n");
}

static void print_json(const spw_cli_spotjob_t *o, const spw_spotjob_summary_t *s)
{
    const spw_spotjob_params_t *p = &o->params;
    double od_usd = (p->work_s + p->restart_overhead_s) / 3600 * p->ondemand_usd_per_h;
    char ckpt[32] = "null";  /* continuous: no interval */

    if (p->checkpoint_interval_s != SPW_CKPT_CONTINUOUS)
        snprintf(ckpt, sizeof(ckpt), "%.17g", p->checkpoint_interval_s);
    printf("{\"work_s\": %.17g, \"deadline_s\": %.17g, \"restart_overhead_s\": %.17g, "
           "\"checkpoint\": \"%s\", \"checkpoint_interval_s\": %s, "
           "\"spot_usd_per_h\": %.17g, \"ondemand_usd_per_h\": %.17g, \"traces\": %zu, "
           "\"offsets\": %zu, \"seed\": %llu, \"ondemand_baseline_usd\": %.17g, "
           "\"policies\": [",
           p->work_s, p->deadline_s, p->restart_overhead_s, ckpt_mode(p->checkpoint_interval_s),
           ckpt, p->spot_usd_per_h, p->ondemand_usd_per_h, o->ntraces, o->offsets,
           (unsigned long long)o->seed, od_usd);
    for (size_t q = 0; q < o->npolicies; q++) {
        const spw_spotjob_summary_t *x = &s[q];
        printf("%s{\"policy\": \"%s\", \"runs\": %zu, \"infeasible\": %zu, \"missed\": %zu, "
               "\"ondemand_h_mean\": %.6f, \"ondemand_h_sd\": %.6f, \"spot_h_mean\": %.6f, "
               "\"spot_h_sd\": %.6f, \"ondemand_paid_h_mean\": %.6f, "
               "\"spot_paid_h_mean\": %.6f, \"lost_h_mean\": %.6f, \"cost_usd_mean\": %.6f, "
               "\"cost_usd_sd\": %.6f, \"cost_vs_ondemand\": %.6f, "
               "\"preemptions_mean\": %.6f, \"starts_mean\": %.6f, \"finish_h_mean\": %.6f}",
               q ? ", " : "", spw_spot_policy_name(x->policy), x->runs, x->infeasible,
               x->missed, x->ondemand_work_h_mean, x->ondemand_work_h_sd, x->spot_work_h_mean,
               x->spot_work_h_sd, x->ondemand_paid_h_mean, x->spot_paid_h_mean,
               x->lost_h_mean, x->cost_usd_mean, x->cost_usd_sd,
               od_usd > 0 ? x->cost_usd_mean / od_usd : 0.0, x->preemptions_mean,
               x->starts_mean, x->finish_h_mean);
    }
    printf("]}\n");
}

/* A region's name for the table: its trace file's name without directory
 * and ".json". */
static void region_name(const char *path, char *buf, size_t size)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && strcmp(b + n - 5, ".json") == 0)
        n -= 5;
    snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), b);
}

/* The row's label: "greedy @REGION", "greedy multi-region" or "optimum". */
static void row_label(const spw_cli_spotjob_t *o, const spw_spotjob_mr_row_t *x, char *buf,
                      size_t size)
{
    char reg[64];
    if (x->kind == SPW_SPOTJOB_MR_OPTIMUM) {
        snprintf(buf, size, "optimum (omniscient)");
    } else if (x->kind == SPW_SPOTJOB_MR_MULTI) {
        snprintf(buf, size, "%s multi-region", spw_spot_policy_name(x->policy));
    } else {
        region_name(o->traces[x->region], reg, sizeof(reg));
        snprintf(buf, size, "%s @%s", spw_spot_policy_name(x->policy), reg);
    }
}

static void print_mr(const spw_cli_spotjob_t *o, const spw_spot_mr_job_t *j,
                     const spw_spotjob_mr_row_t *rows, size_t nrows)
{
    const spw_spotjob_mr_row_t *opt = &rows[nrows - 1];
    const spw_spot_job_t *b = &j->job;
    char label[96];

    if (o->json) {
        printf("{\"multi_region\": true, \"work_s\": %.17g, \"deadline_s\": %.17g, "
               "\"restart_overhead_s\": %.17g, \"step_s\": %.17g, \"egress_usd\": %.17g, "
               "\"offsets\": %zu, \"seed\": %llu, \"regions\": [",
               b->work_s, b->deadline_s, b->restart_overhead_s, b->step_s, j->egress_usd,
               o->offsets, (unsigned long long)o->seed);
        for (size_t r = 0; r < j->nregions; r++) {
            region_name(o->traces[r], label, sizeof(label));
            printf("%s{\"name\": \"%s\", \"spot_usd_per_h\": %.17g, "
                   "\"ondemand_usd_per_h\": %.17g}", r ? ", " : "", label,
                   j->regions[r].spot_usd_per_h, j->regions[r].ondemand_usd_per_h);
        }
        printf("], \"rows\": [");
        for (size_t i = 0; i < nrows; i++) {
            const spw_spotjob_mr_row_t *x = &rows[i];
            static const char *const kinds[] = {"single", "multi", "optimum"};
            printf("%s{\"kind\": \"%s\", \"policy\": %s%s%s, \"region\": %d, \"runs\": %zu, "
                   "\"missed\": %zu, \"cost_usd_mean\": %.6f, \"cost_usd_sd\": %.6f, "
                   "\"cost_vs_optimum\": %.6f, \"spot_paid_h_mean\": %.6f, "
                   "\"ondemand_paid_h_mean\": %.6f, \"moves_mean\": %.6f, "
                   "\"egress_usd_mean\": %.6f, \"preemptions_mean\": %.6f}",
                   i ? ", " : "", kinds[x->kind],
                   x->kind == SPW_SPOTJOB_MR_OPTIMUM ? "" : "\"",
                   x->kind == SPW_SPOTJOB_MR_OPTIMUM ? "null" : spw_spot_policy_name(x->policy),
                   x->kind == SPW_SPOTJOB_MR_OPTIMUM ? "" : "\"", x->region, x->runs,
                   x->missed, x->cost_usd_mean, x->cost_usd_sd,
                   opt->cost_usd_mean > 0 ? x->cost_usd_mean / opt->cost_usd_mean : 0.0,
                   x->spot_paid_h_mean, x->ondemand_paid_h_mean, x->moves_mean,
                   x->egress_usd_mean, x->preemptions_mean);
        }
        printf("]}\n");
        return;
    }
    printf("multi-region spot job: %.2f h of work, deadline %.2f h, restart overhead %.3f h, "
           "step %.0f s\n(work and overhead rounded up, the deadline down, to whole steps; "
           "a preemption loses nothing)\n", b->work_s / 3600, b->deadline_s / 3600,
           b->restart_overhead_s / 3600, b->step_s);
    printf("moving the job's state to another region: $%.2f egress plus the restart "
           "overhead\n", j->egress_usd);
    for (size_t r = 0; r < j->nregions; r++) {
        region_name(o->traces[r], label, sizeof(label));
        printf("region %zu %s: spot $%.4f/h, on-demand $%.4f/h\n", r + 1, label,
               j->regions[r].spot_usd_per_h, j->regions[r].ondemand_usd_per_h);
    }
    printf("%zu start offsets (seed %llu), the same for every row\n\n", o->offsets,
           (unsigned long long)o->seed);
    printf("%-40s %10s %8s %8s %9s %9s %6s %7s %7s %6s\n", "policy", "cost_usd", "sd",
           "vs_opt", "spot_pd_h", "od_paid_h", "moves", "egress", "preempt", "misses");
    for (size_t i = 0; i < nrows; i++) {
        const spw_spotjob_mr_row_t *x = &rows[i];
        row_label(o, x, label, sizeof(label));
        if (x->kind == SPW_SPOTJOB_MR_OPTIMUM) {
            printf("%-40s %10.2f %8.2f %8.3f %9s %9s %6s %7s %7s %6zu\n", label,
                   x->cost_usd_mean, x->cost_usd_sd, 1.0, "-", "-", "-", "-", "-", x->missed);
            continue;
        }
        printf("%-40s %10.2f %8.2f %8.3f %9.2f %9.2f %6.2f %7.2f %7.2f %6zu\n", label,
               x->cost_usd_mean, x->cost_usd_sd,
               opt->cost_usd_mean > 0 ? x->cost_usd_mean / opt->cost_usd_mean : 0.0,
               x->spot_paid_h_mean, x->ondemand_paid_h_mean, x->moves_mean,
               x->egress_usd_mean, x->preemptions_mean, x->missed);
    }
    printf("\ncost_usd: mean per run, egress included; vs_opt: mean cost / the optimum's mean "
           "cost;\n*_paid_h: hours paid, overheads included; moves, egress, preempt: per run.\n"
           "optimum: the least cost to finish by the deadline knowing every region's "
           "availability ahead.\n");
}

/* --multi-region: the traces are regions; coarsens them to the step, runs
 * the comparison and prints it.  Returns the exit status. */
static int run_multi(const spw_cli_spotjob_t *o, const spw_spot_trace_t *traces)
{
    const spw_spotjob_params_t *p = &o->params;
    spw_spot_trace_t coarse[SPW_CLI_SPOTJOB_MAX_TRACES];
    spw_spot_region_t regions[SPW_CLI_SPOTJOB_MAX_TRACES];
    spw_spotjob_mr_row_t *rows = NULL;
    spw_error_t err;
    size_t made = 0, nrows = SPW_SPOTJOB_MR_ROWS(o->npolicies, o->ntraces);
    double gap = traces[0].gap_s, k;
    int rc = 1;

    for (size_t r = 1; r < o->ntraces; r++)
        if (fabs(traces[r].gap_s - gap) > 1e-9 * gap) {
            fprintf(stderr, "spillway sim: --multi-region needs traces of the same tick: %s "
                    "has %g s, %s %g s\n", o->traces[0], gap, o->traces[r], traces[r].gap_s);
            return 1;
        }
    k = o->step_s > 0 ? o->step_s / gap : 1;
    if (fabs(k - floor(k + 0.5)) > 1e-9 || floor(k + 0.5) < 1) {
        fprintf(stderr, "spillway sim: --step %g s is not a whole number of the traces' %g s "
                "ticks\n", o->step_s, gap);
        return 2;
    }
    if (o->nregion_prices && o->nregion_prices != o->ntraces) {
        fprintf(stderr, "spillway sim: --region-prices gives %zu regions' prices for %zu "
                "--spot-trace files: give one SPOT:ONDEMAND pair per trace\n",
                o->nregion_prices, o->ntraces);
        return 2;
    }
    for (size_t r = 0; r < o->ntraces; r++) {
        spw_spot_region_t dflt = {p->spot_usd_per_h, p->ondemand_usd_per_h};
        regions[r] = o->nregion_prices ? o->regions[r] : dflt;
    }
    spw_spot_mr_job_t j = {
        .job = {p->work_s, p->deadline_s, p->restart_overhead_s, p->checkpoint_interval_s,
                gap * floor(k + 0.5)},
        .regions = regions,
        .nregions = o->ntraces,
        .egress_usd = o->egress_usd,
    };
    spw_spot_mr_round(&j.job);
    if (spw_spot_mr_check(&j, &err) < 0) {
        fprintf(stderr, "spillway sim: %s\n", err.text);
        return 2;
    }
    for (; made < o->ntraces; made++)
        if (spw_spot_trace_coarsen(&traces[made], (size_t)floor(k + 0.5), &coarse[made],
                                   &err) < 0) {
            fprintf(stderr, "spillway sim: %s: %s\n", o->traces[made], err.text);
            goto out;
        }
    rows = spw_xcalloc(nrows, sizeof(*rows));
    if (spw_spotjob_mr_sweep(&j, o->policies, o->npolicies, coarse, o->offsets, o->seed, rows,
                             &err) < 0) {
        fprintf(stderr, "spillway sim: %s\n", err.text);
        goto out;
    }
    print_mr(o, &j, rows, nrows);
    rc = 0;
out:
    free(rows);
    for (size_t i = 0; i < made; i++)
        spw_spot_trace_clear(&coarse[i]);
    return rc;
}

int spw_cli_spotjob_run(const spw_cli_spotjob_t *o)
{
    spw_spot_trace_t traces[SPW_CLI_SPOTJOB_MAX_TRACES];
    spw_spotjob_summary_t sum[SPW_SPOT_POLICY_COUNT];
    const spw_spotjob_params_t *p = &o->params;
    spw_error_t err;
    size_t loaded = 0;
    int rc = 1;

    if (spw_spotjob_params_check(p, &err) < 0) {
        fprintf(stderr, "spillway sim: %s\n", err.text);
        return 2;
    }
    for (; loaded < o->ntraces; loaded++) {
        if (spw_spot_trace_load(o->traces[loaded], &traces[loaded], &err) < 0) {
            fprintf(stderr, "spillway sim: %s\n", err.text);
            goto out;
        }
    }
    if (o->multi) {
        rc = run_multi(o, traces);
        goto out;
    }
    if (!o->quiet) {
        if (p->checkpoint_interval_s > 0 && p->restart_overhead_s > p->checkpoint_interval_s)
            fprintf(stderr,
                    "spillway sim: warning: the restart overhead (%g s) is longer than the "
                    "checkpoint interval (%g s): each restart costs more than the work a "
                    "preemption can lose; checkpoint less often or check the overhead\n",
                    p->restart_overhead_s, p->checkpoint_interval_s);
        if (p->checkpoint_interval_s == 0 &&
            p->deadline_s < 2 * p->work_s + 2 * p->restart_overhead_s)
            fprintf(stderr,
                    "spillway sim: note: without checkpoints (--checkpoint-interval 0) a "
                    "preemption restarts the work from scratch, so the safety net keeps the "
                    "whole work as slack: with a deadline under twice the work plus two "
                    "restart overheads no policy takes spot\n");
        if (p->work_s + p->restart_overhead_s > p->deadline_s)
            fprintf(stderr,
                    "spillway sim: warning: infeasible: %g s of work plus a %g s restart "
                    "overhead does not fit in the %g s deadline; every run is counted as "
                    "infeasible\n",
                    p->work_s, p->restart_overhead_s, p->deadline_s);
        for (size_t i = 0; i < o->ntraces; i++)
            if (traces[i].gap_s > p->restart_overhead_s && p->restart_overhead_s > 0)
                fprintf(stderr,
                        "spillway sim: note: %s: ticks of %g s are longer than the restart "
                        "overhead; the safety net keeps a slack of overhead + one tick\n",
                        o->traces[i], traces[i].gap_s);
    }
    if (spw_spotjob_sweep(p, o->policies, o->npolicies, traces, o->ntraces, o->offsets,
                          o->seed, sum, &err) < 0) {
        fprintf(stderr, "spillway sim: %s\n", err.text);
        goto out;
    }
    if (o->json)
        print_json(o, sum);
    else
        print_table(o, sum, sum[0].runs);
    rc = 0;
out:
    for (size_t i = 0; i < loaded; i++)
        spw_spot_trace_clear(&traces[i]);
    return rc;
}
