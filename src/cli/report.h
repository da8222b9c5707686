/* report.h: how simulation results are shown to people (tables) and to
 * programs (JSON, CSV).  Only entry points print; these helpers take the
 * stream to write to. */
#ifndef SPW_CLI_REPORT_H
#define SPW_CLI_REPORT_H

#include <stdio.h>

#include "config/config.h"
#include "sim/sim.h"
#include "sim/trace.h"

/* One simulated scenario, as reported. */
typedef struct spw_report_row {
    char wait[48];               /* wait policy text */
    char label[48];              /* column heading under --compare */
    const spw_policy_t *policy;  /* the policy that ran */
    const spw_gov_t *gov;        /* the governance it ran under (team names) */
    spw_sim_summary_t sum;       /* its results */
    double seconds;              /* wall time of the run */
} spw_report_row_t;

void spw_report_json(FILE *f, const spw_trace_t *t, const spw_report_row_t *r);
void spw_report_table(FILE *f, const spw_trace_t *t, const spw_config_t *cfg,
                      const spw_report_row_t *r);
/* `what` names what the columns vary: "wait policy", "data gravity". */
void spw_report_compare_table(FILE *f, const spw_trace_t *t, const char *what,
                              const spw_report_row_t *rows, size_t n);
void spw_report_compare_json(FILE *f, const spw_trace_t *t, const spw_report_row_t *rows,
                             size_t n);
/* Per-job CSV: id,submit_s,start_s,end_s,placement,wait_s,cost_usd,reason,
 * held,spot,restarts,lost_s,outcome (reason: why the engine placed it there,
 * as the live explain says it; held: times a budget or cap held its burst;
 * spot: its last placement was a cloud one on spot; restarts after
 * interruptions; work lost, s; outcome: done, stopped_max_runtime, or the
 * state of a job that did not run).  path "-" is standard output. */
int spw_report_jobs_csv(const char *path, const spw_trace_t *t, const spw_fleet_t *fleet,
                        spw_error_t *err);

#endif
