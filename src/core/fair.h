/* fair.h: fair share and quotas over the on-prem GPUs (docs/fairshare.md).
 *
 * One engine owns one spw_fair_t.  It keeps, per team (index + 1; slot 0
 * holds jobs of no team): the team's nominal quota, the GPUs its running
 * on-prem jobs hold, and its usage decayed by the policy's half-life; per
 * cohort tree the GPUs borrowed and the idle quota lent.  From them come
 * the admission tier of a job (within its quota, borrowing, or refused),
 * the fair-share key of queue: fair, and the victims of a reclaim.
 *
 * Quotas (when any team has one): a team may always use its nominal GPUs;
 * above them it borrows, up to its borrowing_limit, from the idle quota its
 * cohort tree lends (each team lends at most its lending_limit) and from
 * GPUs no quota covers.  A team without a quota has 0 nominal GPUs.
 *
 * Like the rest of core it never reads a clock and never prints.  It
 * borrows the governance spec and the jobs it is told about. */
#ifndef SPW_CORE_FAIR_H
#define SPW_CORE_FAIR_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

typedef struct spw_fair spw_fair_t;

/* Admission tiers, in the order the queue serves them. */
typedef enum spw_fair_tier {
    SPW_FAIR_NOMINAL = 0,   /* the job fits in its team's nominal quota */
    SPW_FAIR_BORROW = 1,    /* it would borrow idle quota */
    SPW_FAIR_REFUSED = 2,   /* its team may not take more now */
} spw_fair_tier_t;

/* For the teams of g over capacity_gpus on-prem GPUs in npools pools (a
 * job's pool indexes them, as do the teams' quota_pool_gpus) under policy
 * p (its half-life and reclaim grace).  Borrows g until destroyed. */
spw_fair_t *spw_fair_create(const spw_gov_t *g, uint64_t capacity_gpus, size_t npools,
                            const spw_policy_t *p);
void spw_fair_destroy(spw_fair_t *f);

/* Whether some team has a quota (admission and reclaim apply). */
int spw_fair_quotas(const spw_fair_t *f);
/* Whether team (index + 1) has per-pool quota parts (quota.pools). */
int spw_fair_parts(const spw_fair_t *f, uint32_t team);

/* The tier of `gpus` more on-prem GPUs for team (index + 1, 0 = none):
 * in pool `pool` (fleet index), or with pool -1 in the pool best for it
 * (the same for a team without per-pool parts: quota.pools).  With
 * per-pool parts a team is within its nominal share while each pool holds
 * at most its part there plus what its floating rest (quota less the
 * parts) covers. */
spw_fair_tier_t spw_fair_tier_in(const spw_fair_t *f, uint32_t team, uint32_t gpus, int pool);
spw_fair_tier_t spw_fair_tier(const spw_fair_t *f, uint32_t team, uint32_t gpus);

/* queue: fair: team's usage at now (GPU-seconds decayed by the half-life)
 * over its share (its weight among its siblings times its cohort's share,
 * up the tree).  Lower runs first. */
double spw_fair_key(const spw_fair_t *f, uint32_t team, double now);

/* Job j started holding gpus on-prem GPUs at now, or let them go. */
void spw_fair_start(spw_fair_t *f, spw_job_t *j, uint32_t gpus, double now);
void spw_fair_stop(spw_fair_t *f, spw_job_t *j, double now);

/* One team's figures now (for reports and the API). */
typedef struct spw_fair_team {
    double nominal_gpus;    /* its quota; 0 without one */
    uint32_t used_gpus;     /* on-prem GPUs its running jobs hold */
    uint32_t borrowed_gpus; /* used above nominal */
    uint32_t lent_gpus;     /* its idle quota others hold now (its share of
                               the borrowed GPUs of its tree) */
    double usage_gpu_s;     /* decayed usage, GPU-seconds */
    double share;           /* its normalised share, 0..1 */
} spw_fair_team_t;
void spw_fair_team(const spw_fair_t *f, uint32_t team, double now, spw_fair_team_t *out);

/* ---- reclaim ----
 *
 * Candidates to preempt for team `for_team` (whose waiting job fits in its
 * nominal quota): running on-prem jobs of teams above their nominal quota,
 * not already chosen, best victim first: least progress lost since its
 * last checkpoint, then lowest priority, then most recently started.
 * Valid until the next call into f.  spw_fair_may_take then says whether
 * taking candidate v keeps its team at or above its nominal quota, counting
 * the candidates already taken since spw_fair_take_reset; with per-pool
 * parts also at or above its part in v's pool (only borrowed GPUs of that
 * pool are taken).  With part_pool >= 0 (for_team has per-pool parts and
 * reclaims for its part of that pool) candidates are any other team's jobs
 * there, and v may be taken while its team keeps its own part of the pool:
 * a part outranks another team's floating quota in its pool. */
size_t spw_fair_candidates(spw_fair_t *f, uint32_t for_team, double now, spw_job_t ***out);
void spw_fair_take_reset(spw_fair_t *f, int part_pool);
int spw_fair_may_take(spw_fair_t *f, const spw_job_t *v);

/* Gives victim v notice at now: it is preempted at now + the reclaim grace,
 * for team for_team.  Whether team for_team has victims under notice. */
void spw_fair_mark(spw_fair_t *f, spw_job_t *v, uint32_t for_team, double now);
int spw_fair_reclaiming(const spw_fair_t *f, uint32_t team);
/* Victims whose grace is over at now (still running); valid until the next
 * call into f.  Earliest end of a grace, INFINITY if none. */
size_t spw_fair_due(spw_fair_t *f, double now, spw_job_t ***out);
double spw_fair_next(const spw_fair_t *f);
/* The team a marked victim is preempted for (index + 1), 0 if none. */
uint32_t spw_fair_marked_for(const spw_fair_t *f, const spw_job_t *v);

#endif
