/* api_private.h: what the API's files (api_jobs.c, api_fleet.c,
 * api_metrics.c) share: who may see a job, and the fleet tallies that both
 * the JSON views and /metrics print.  All called with mu held. */
#ifndef SPW_DAEMON_API_PRIVATE_H
#define SPW_DAEMON_API_PRIVATE_H

#include "daemon/daemon_private.h"

/* Whether caller who may see job j: an admin, or a caller of j's team. */
int api_visible(const spw_caller_t *who, const djob_t *j);

/* GPUs of pool p on nodes out of service. */
uint64_t api_pool_down_gpus(const spw_daemon_t *d, size_t p);
/* GPUs of pool p free for a job now: neither held nor on a node that is down. */
uint64_t api_pool_free_gpus(const spw_daemon_t *d, size_t p);

/* What the instances of each offer add up to, in one pass over them. */
typedef struct offer_tally {
    size_t by_state[SPW_INSTANCE_STATE_COUNT]; /* instances in each state */
    size_t n;                   /* instances ever acquired */
    double usd;                 /* what they billed up to now */
} offer_tally_t;
/* One tally per offer (caller frees), in one pass over the instances. */
offer_tally_t *api_tally_offers(const spw_daemon_t *d, double now);
/* For the first offer of its provider, the provider's totals over all its
 * offers (0); -1 when an earlier offer already stands for the provider. */
int api_provider_total(const spw_daemon_t *d, const offer_tally_t *t, size_t i, double *usd,
                       size_t *n);

/* api_teams.c: fair share and quotas.  Team i's (config index) on-prem
 * GPUs: v[0] nominal, v[1] used, v[2] borrowed, v[3] lent. */
void api_team_gpus(const spw_daemon_t *d, size_t i, double v[4]);
/* The same summed over the teams of cohort c's subtree (config index). */
void api_cohort_gpus(const spw_daemon_t *d, size_t c, double v[4]);
/* What explain says of job j's fair share: "waits: team cv is above its
 * fair share (61% used vs 50%)", "will preempt j-000123 (borrowed by team
 * a)", ...; JSON null when fair share does not concern it. */
json_t *api_fair_explain(const spw_daemon_t *d, const djob_t *j);

#endif
