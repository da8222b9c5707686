/* engine.h: the decision engine shared by the simulator and the daemon.
 *
 * The engine never reads a clock, never does I/O and never prints: the
 * caller passes `now` (seconds, non-decreasing) into every call, tells it
 * about arrivals and completions, and reads placements back.  One scheduling
 * instant is:
 *
 *   spw_engine_finish(...)    for every job that ended at `now`
 *   spw_engine_submit(...)    for every job that arrived at `now`
 *   spw_engine_schedule(now)  pass over the queue; expired waits burst;
 *                             if any burst, the pass runs again
 *
 * and the caller wakes the engine again at spw_engine_next_wakeup() even if
 * nothing else happens by then.
 *
 * Ownership: the engine borrows the fleet and every submitted job until
 * spw_engine_destroy: lists it keeps (wait expiries, held bursts) drop a
 * job lazily, so a job must stay allocated while the engine lives. */
#ifndef SPW_CORE_ENGINE_H
#define SPW_CORE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "util/error.h"

typedef struct spw_engine spw_engine_t;

/* Counters the caller may read at any time. */
typedef struct spw_engine_stats {
    size_t queued;               /* jobs waiting (on-prem queue and pending bursts) */
    uint64_t onprem_gpus;        /* on-prem GPUs in total */
    uint64_t onprem_busy_gpus;   /* on-prem GPUs held by running jobs */
    size_t classes;              /* demand classes created so far */
    uint64_t passes;             /* scheduling passes run */
    uint64_t reservations;       /* EASY reservations computed */
} spw_engine_stats_t;

spw_engine_t *spw_engine_create(const spw_fleet_t *fleet, const spw_policy_t *policy,
                                spw_error_t *err);
void spw_engine_destroy(spw_engine_t *e);

/* Hands a job to the engine at time `now`.  The job's caller-set fields must
 * be valid (gpus > 0, est_runtime_s >= 0).  Afterwards j->state is QUEUED, or
 * UNSCHEDULABLE when neither on-prem nor any cloud offer can ever run it
 * (reason NO_PLACE; under `wait: never` the cloud does not count): such a
 * job is not kept. */
void spw_engine_submit(spw_engine_t *e, spw_job_t *j, double now);

/* Runs the scheduling instant `now`.  Returns how many jobs were placed and
 * points *placed at them (valid until the next call into the engine).  A
 * placed job is ONPREM (start_s = now + data transfer) or CLOUD (start_s =
 * now + boot delay + data transfer).
 *
 * Governance: a job's team, class, labels, GPUs and residency pick the
 * pools and offers its rules allow (spw_govrt_profile_of); placement
 * cloud_first tries the cloud before on-prem, onprem_only never bursts.  A
 * burst reserves its worst case (price x instances x (boot + transfer +
 * max_runtime + policy.reserve_extra_s) + egress) against every budget and
 * cap it touches and is made only if all have room; otherwise the job is
 * held (retried when money frees or the period ends), kept on-prem, or
 * rejected (spw_engine_rejected), per its team's on_exhausted.  The caller
 * must stop a cloud job once it has run max_runtime. */
size_t spw_engine_schedule(spw_engine_t *e, double now, spw_job_t ***placed);

/* Reports that a placed job ended at `now`: frees its GPUs and settles its
 * cost (j->cost_usd, j->end_s); j->state becomes DONE. */
void spw_engine_finish(spw_engine_t *e, spw_job_t *j, double now);

/* Cancels a job at `now`: a queued job leaves the queue; a placed one frees
 * its GPUs and settles its cost so far.  j->state becomes CANCELLED.
 * Returns -1 (and changes nothing) when the job is not queued or placed. */
int spw_engine_cancel(spw_engine_t *e, spw_job_t *j, double now);

/* Puts a placed job back in the queue at `now` (it failed and may retry, or
 * its capacity was preempted): its GPUs are freed, the cost of the attempt
 * is added to j->cost_usd, and it queues again at its original place in
 * queue order (same submit time), with its wait counted from `now`.
 * Returns -1 (and changes nothing) when the job is not placed. */
int spw_engine_requeue(spw_engine_t *e, spw_job_t *j, double now);

/* Gives a fresh engine back a job that was already placed before a restart
 * of its caller (the daemon after kill -9), without queueing it.  The caller
 * sets the caller fields and state, placed_s, start_s and either pool and
 * node (ONPREM; node is ignored for a job bigger than the pool's nodes,
 * which takes the lowest entirely free nodes again) or offer and instances
 * (CLOUD).  A cloud job's reservation holds again: the caller sets
 * reserved_usd and charge_s as they were, and egress_usd to the egress of
 * this attempt (0 reserved = worked out again from the offer).  Returns 0
 * with the GPUs taken, or -1 (nothing changed) when the place is unknown,
 * does not accept the job or no longer has room. */
int spw_engine_restore(spw_engine_t *e, spw_job_t *j);

/* One place the engine considered for a job, for `spillway explain`. */
typedef enum spw_cand_kind {
    SPW_CAND_ONPREM,   /* an on-prem pool */
    SPW_CAND_WAIT,     /* waiting for on-prem before bursting */
    SPW_CAND_CLOUD,    /* a cloud offer */
} spw_cand_kind_t;

typedef struct spw_candidate {
    spw_cand_kind_t kind;
    int index;             /* pool or offer index; -1 for WAIT */
    uint32_t instances;    /* cloud instances the job would take */
    int ok;                /* 1: usable now (pool), the offer it would buy, or the wait in force */
    double est_start_s;    /* when it could start there; NAN if unknown */
    double est_cost_usd;   /* cost for est_runtime_s there; NAN if not applicable */
    char why[160];         /* the rule that allowed or excluded it, as a sentence */
} spw_candidate_t;

/* Lists the candidates for job j at `now`: every pool, the wait, then every
 * cloud offer, in fleet order.  Fills out[0..max) and returns how many there
 * are in total.  Does not change the engine's decisions. */
size_t spw_engine_explain(spw_engine_t *e, const spw_job_t *j, double now,
                          spw_candidate_t *out, size_t max);

/* How long placed job j may run before the caller must stop it: its own
 * max_runtime_s, or in the cloud, when some budget or cap exists, the
 * governance default (its worst case was reserved for that long);
 * INFINITY when nothing bounds it. */
double spw_engine_max_runtime(const spw_engine_t *e, const spw_job_t *j);

/* Jobs rejected during the last spw_engine_schedule (a budget ran out under
 * on_exhausted: reject, or on-prem only for a job no pool can hold): their
 * state is REJECTED and the engine has let go of them.  Valid until the
 * next call into the engine. */
size_t spw_engine_rejected(spw_engine_t *e, spw_job_t ***rejected);

/* The governance runtime: ledger per team and period, profiles, data
 * caches.  The caller may read the ledger and, after a restart, add spend
 * settled before it (spw_govrt_add_settled). */
spw_govrt_t *spw_engine_gov(spw_engine_t *e);

/* Earliest time at which a queued job's wait expires, or a held burst is
 * retried because a budget period ends; INFINITY if none. */
double spw_engine_next_wakeup(spw_engine_t *e);

void spw_engine_stats(const spw_engine_t *e, spw_engine_stats_t *out);
/* Jobs waiting now: the `queued` of spw_engine_stats, without the rest. */
size_t spw_engine_queued(const spw_engine_t *e);

/* The cloud shape the engine would buy for a job of this demand, or -1 when
 * no offer can serve it; *instances receives the instance count. */
int spw_engine_cloud_choice(spw_engine_t *e, uint32_t gpus, uint64_t gpu_mask,
                            uint32_t *instances);

#endif
