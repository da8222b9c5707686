/* spotjob_report.h: `spillway sim --spot-job`: one deadline job replayed on
 * spot availability traces under each spot policy, printed as a table or JSON. */
#ifndef SPW_CLI_SPOTJOB_REPORT_H
#define SPW_CLI_SPOTJOB_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/spot.h"
#include "sim/spotjob.h"
#include "sim/spotjob_mr.h"

#define SPW_CLI_SPOTJOB_MAX_TRACES 32

/* What the command line asked for; strings are borrowed from argv. */
typedef struct spw_cli_spotjob {
    spw_spotjob_params_t params;  /* the job and prices */
    spw_spot_policy_t policies[SPW_SPOT_POLICY_COUNT];  /* policies to compare */
    size_t npolicies;             /* entries in policies */
    const char *traces[SPW_CLI_SPOTJOB_MAX_TRACES];  /* --spot-trace files */
    size_t ntraces;               /* entries in traces */
    size_t offsets;               /* random start offsets per trace */
    uint64_t seed;                /* seed of the start-offset generator */
    int multi;                    /* --multi-region: the traces are regions of the
                                     same days to hop between */
    double egress_usd;            /* --egress-usd: USD per move to another region */
    double step_s;                /* --step: decision step of --multi-region,
                                     seconds; 0 = the traces' tick */
    spw_spot_region_t regions[SPW_CLI_SPOTJOB_MAX_TRACES];  /* --region-prices, one
                                     per trace; unset ones take the job's prices */
    size_t nregion_prices;        /* entries of regions given */
    int json;                     /* -o json */
    int quiet;                    /* no warnings */
} spw_cli_spotjob_t;

/* Loads the traces, warns about doubtful settings on stderr, runs the sweep
 * and prints the report on stdout.  Returns the exit status. */
int spw_cli_spotjob_run(const spw_cli_spotjob_t *o);

#endif
