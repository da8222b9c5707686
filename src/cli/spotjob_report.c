/* spotjob_report.c: runs and prints `spillway sim --spot-job` (see
 * spotjob_report.h).  An entry point: it prints, the libraries do not. */
#include <stdio.h>
#include <stdlib.h>

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
