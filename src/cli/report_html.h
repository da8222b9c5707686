/* report_html.h: `spillway sim --report FILE.html`: one self-contained HTML
 * file (no network: its script and styles are inlined from web/report.*,
 * embedded at build time) with the comparison table, cost against mean wait
 * for every policy (the frontier), queue length and cloud GPUs over time,
 * wait and JCT distributions, per-team spend, and the inputs needed to run
 * it again.
 *
 * Ownership: a spw_html_run_t owns its samples; spw_html_run_clear frees
 * them.  Everything else is borrowed for the call. */
#ifndef SPW_CLI_REPORT_HTML_H
#define SPW_CLI_REPORT_HTML_H

#include "cli/report.h"
#include "util/error.h"

/* Points of each distribution: percentiles 0, 1, ..., 100. */
#define SPW_HTML_PCT 101

/* What one simulated scenario adds to the report beyond its summary. */
typedef struct spw_html_run {
    spw_sim_sample_t *samples;   /* the time series, owned */
    size_t nsamples, cap;
    size_t ndone;                /* jobs that ended done (the distributions' n) */
    double wait_pct[SPW_HTML_PCT]; /* wait percentiles, seconds */
    double jct_pct[SPW_HTML_PCT];  /* job completion time percentiles, seconds */
} spw_html_run_t;

/* Where the report came from, for reproduction. */
typedef struct spw_html_inputs {
    const char *trace_path;      /* --trace */
    const char *config_path;     /* --config, NULL = built-in fleet */
    const char *compare_what;    /* "wait policy", ..., NULL without --compare */
    const char *command;         /* the command line, joined */
    const spw_config_t *cfg;     /* the fleet and policy */
    double step_s;               /* time-series step */
} spw_html_inputs_t;

void spw_html_run_add_sample(spw_html_run_t *r, const spw_sim_sample_t *s);
/* Fills the distributions from the trace's jobs as the last run left them. */
void spw_html_run_finish(spw_html_run_t *r, const spw_trace_t *t);
void spw_html_run_clear(spw_html_run_t *r);

/* Writes the report.  0, or -1 with err. */
int spw_report_html(const char *path, const spw_trace_t *t, const spw_html_inputs_t *in,
                    const spw_report_row_t *rows, const spw_html_run_t *runs, size_t n,
                    spw_error_t *err);

#endif
