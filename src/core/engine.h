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
 * job lazily, so a job must stay allocated while the engine lives, or
 * until spw_engine_forget_left once it has left the engine. */
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

/* Why a job with j's caller-set fields would be UNSCHEDULABLE at submit
 * (spw_engine_submit), or SPW_REASON_NONE when it could run: lets a caller
 * refuse such a job before accepting it.  Changes no decision. */
spw_reason_t spw_engine_never_runs(spw_engine_t *e, const spw_job_t *j);

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
 * must stop a cloud job once it has run max_runtime.  An offer on which the
 * job cannot finish is never bought: its estimated work left at that GPU's
 * speed plus the restart overhead is over spw_engine_max_runtime, or it
 * would end after the job's deadline while another offer meets it.  A job
 * no offer can finish waits for on-prem (reason CANNOT_FINISH), or, when no
 * pool can ever hold it, is UNSCHEDULABLE at submit with that reason. */
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

/* ---- spot capacity, interruptions and node failures (docs/spot.md) ----
 *
 * A job that may use spot (its spot_mode, spot policy and rules allow it)
 * chooses at each burst among spot, on demand and waiting, by its spot
 * policy (core/spot.h) applied to its deadline: t = now - submit_s, work =
 * est_runtime_s, progress = done_s, restart overhead = the policy's plus the
 * offer's boot delay and data transfer.  A job without a deadline takes spot
 * when some is free and on demand otherwise; spot_mode ALWAYS (or a rule's
 * spot: required) waits for spot however long it takes.  A job waiting for
 * spot stays in the on-prem queue and is tried again when spot capacity
 * changes or when its policy would stop waiting (spw_engine_next_wakeup).
 *
 * A job with a deadline also bursts when waiting longer on-prem would leave
 * the cloud too little time: at deadline - (est_runtime_s - done_s) -
 * restart overhead - boot delay - data transfer - the spot safety slack
 * (core/spot.h) when it may use spot, unless its wait rule bursts it
 * sooner (not under wait: never). */

/* Spot instances of offer `offer` that can be held at once from `now` on:
 * a trace tick, or a provider's answer; UINT32_MAX (the default) = no limit.
 * Lowering it below what is held preempts nothing: the world that took the
 * capacity back reports each job it ended with spw_engine_interrupt.  Jobs
 * waiting for spot are tried again at the next spw_engine_schedule. */
void spw_engine_set_spot_capacity(spw_engine_t *e, size_t offer, uint32_t instances, double now);

/* Instances of `offer` (spot when spot != 0, else on demand) held by placed
 * jobs, booting included. */
uint32_t spw_engine_offer_held(const spw_engine_t *e, size_t offer, int spot);

/* A capacity error: the provider refused instances of `offer` (spot when
 * spot != 0) at now.  The engine does not try that offer and kind again
 * before until_s; the caller chooses the backoff (the daemon doubles it). */
void spw_engine_offer_unavailable(spw_engine_t *e, size_t offer, int spot, double until_s);

/* The caller changed offer prices in the fleet it gave spw_engine_create
 * (live spot prices from a cloud): the engine ranks its offers again by
 * them from the next schedule on.  Jobs already placed keep their price. */
void spw_engine_offers_repriced(spw_engine_t *e);

/* A refusal of the cloud, classed (core/model.h): blocks, until until_s,
 * what `what` rules out around `offer` (spot when spot != 0): NONE and
 * OFFER that offer and kind; FAMILY every offer of the same provider,
 * region and instance family (spw_offer_same_family), of that kind;
 * ACCOUNT every offer of the provider, both kinds; JOB nothing (the
 * caller fails the job).  Returns how many offers it blocked.  The
 * daemon's blocked-offer cache and the simulator's capacity errors both
 * come here, so that both re-pick the same next offer. */
size_t spw_engine_block(spw_engine_t *e, size_t offer, int spot, spw_block_t what,
                        double until_s);

typedef enum spw_interrupt {
    SPW_INTERRUPT_PREEMPTED,     /* the provider took the cloud capacity back */
    SPW_INTERRUPT_NODE_FAILED,   /* an on-prem node it held went down */
    SPW_INTERRUPT_SWITCH,        /* the caller stopped it to move it to spot
                                    (spw_engine_switches) */
    SPW_INTERRUPT_RECLAIMED,     /* the caller preempted it for a team under
                                    its quota (spw_engine_reclaims) */
} spw_interrupt_t;

/* A placed job lost its capacity at `now`.  Its GPUs or instances are freed
 * and the attempt is settled (as spw_engine_requeue); the progress it made
 * after its restart overhead, from start_s to now, is kept up to its last
 * checkpoint (spw_ckpt_kept_s into done_s), the rest counts in lost_s and
 * lost_gpu_s; preemptions or failures and restarts grow by one.  Past the
 * policy's max_restarts the job ends FAILED (reason MAX_RESTARTS; returns 1).
 * Otherwise it is re-placed (returns 0): a preempted job may burst at once
 * (its wait is over), preferring per the policy's recovery the offer and
 * region it lost or the others, or on-prem when free; a job whose node
 * failed queues on-prem again with its wait counted from now, or under
 * failover: burst goes to the cloud when it has waited its wait since
 * submission or its deadline can no longer wait.  Returns -1 (nothing
 * changed) when j is not placed. */
int spw_engine_interrupt(spw_engine_t *e, spw_job_t *j, spw_interrupt_t why, double now);

/* On-demand cloud jobs that should move to spot now, found by the last
 * spw_engine_schedule: each is under Uniform Progress, ahead of its
 * expected progress by the hysteresis margin (cp(t) >= ep(t + 2d)), and
 * spot capacity cheaper than on demand is free and admitted for it (a job
 * without checkpoints, interval 0, is never moved: it would start over).  The
 * caller stops each job cleanly (it saves its progress) and calls
 * spw_engine_interrupt(SPW_INTERRUPT_SWITCH): all progress is kept, no
 * preemption or failure is counted, restarts grows by one, and the job is
 * re-placed at once (reason SWITCH_SPOT; on-prem if the pass finds room),
 * paying its restart overhead again.  A caller that ignores the list
 * changes nothing.  Valid until the next spw_engine_schedule. */
size_t spw_engine_switches(spw_engine_t *e, spw_job_t ***jobs);

/* ---- fair share and quotas (core/fair.h, docs/fairshare.md) ----
 *
 * With quotas, a job starts on-prem only when its team stays within its
 * nominal quota or may borrow (spw_fair_tier); jobs within their quota go
 * before jobs that would borrow, and under queue: fair teams go in order
 * of their fair-share key.  After each pass, a team under its nominal
 * quota whose next job fits in it but finds no room gives notice to
 * running on-prem jobs of teams above their quota (never taking a team
 * below it), chosen by spw_fair_candidates' order; once the policy's
 * reclaim_grace_s has passed they are listed here, the caller stops each
 * (it may checkpoint during the grace) and calls spw_engine_interrupt(
 * SPW_INTERRUPT_RECLAIMED): the job keeps its progress to its last
 * checkpoint, counts a preemption, and queues again (reason RECLAIMED),
 * its wait counted from its submission.  The caller then schedules again.
 * Valid until the next call into the engine. */
size_t spw_engine_reclaims(spw_engine_t *e, spw_job_t ***jobs);

/* The engine's fair-share state, for reports (spw_fair_team). */
struct spw_fair;
const struct spw_fair *spw_engine_fair(const spw_engine_t *e);

/* The restart overhead of placed job j's current attempt: the policy's
 * restart_overhead_s for a cloud attempt (a new instance) and for any
 * attempt after an interruption; 0 for a first start on-prem.  The attempt
 * makes no progress for that long after start_s. */
double spw_engine_overhead_s(const spw_engine_t *e, const spw_job_t *j);

/* Whether placed job j holds node `node` of pool `pool`. */
int spw_engine_job_on_node(const spw_job_t *j, size_t pool, uint32_t node);

/* Takes node `node` of pool `pool` out of service at `now` (1), or back (0).
 * The caller first interrupts every job on the node (spw_engine_job_on_node);
 * returns -1 (nothing changed) when a job still holds it, the node is
 * unknown or already in that state. */
int spw_engine_node_down(spw_engine_t *e, size_t pool, uint32_t node, int down, double now);

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

/* The worst case a burst of job j onto offer `offer` at `now` would reserve
 * against budgets and caps, in dollars: price x instances x (boot + data
 * transfer + max_runtime, else caps.default_max_runtime_s, +
 * policy.reserve_extra_s) / 3600 + egress, on spot capacity (spot 1) or on
 * demand.  The figure `spillway explain` gives for the offer it buys, and
 * `spillway policy test` for each offer. */
double spw_engine_worst_usd(spw_engine_t *e, const spw_job_t *j, size_t offer, int spot,
                            double now);

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

/* Jobs whose held count (j->held) grew since the previous call, and that
 * stayed queued (held by a budget or cap, or kept on-prem only by one): by
 * any call into the engine, spw_engine_schedule or a re-placement after an
 * interruption.  A job may appear more than once.  Lets a caller save what
 * changed without walking its queue.  Valid until the next call into the
 * engine; the list starts afresh at the next hold after this call. */
size_t spw_engine_held(spw_engine_t *e, spw_job_t ***held);

/* When queued job j bursts to the cloud if on-prem has not taken it by
 * then: its wait's expiry (INFINITY when it never bursts: wait never, held,
 * on-prem only, its rules keep it on-prem).  INFINITY for a job not queued. */
double spw_engine_burst_at(const spw_engine_t *e, const spw_job_t *j);

/* Under wait predict:K: when queued job j would start on-prem if the
 * schedule played forward from now (running jobs end at their estimates,
 * the jobs ahead of it start in queue order where they fit); INFINITY if
 * never, NAN under another wait rule or for a job that is not waiting. */
double spw_engine_predicted_start(spw_engine_t *e, const spw_job_t *j, double now);

/* The governance runtime: ledger per team and period, profiles, data
 * caches.  The caller may read the ledger and, after a restart, add spend
 * settled before it (spw_govrt_add_settled). */
spw_govrt_t *spw_engine_gov(spw_engine_t *e);
/* Drops every reference the engine still keeps to jobs that have left it
 * (done, cancelled, failed, rejected, unschedulable: those whose links are
 * gone) from the lists it cleans lazily (wait expiries, held bursts, jobs
 * waiting for spot, on-demand runs) and from the last pass's results
 * (placed, rejected, switches): afterwards the caller may free those jobs.
 * Linear in the entries kept; changes no decision. */
void spw_engine_forget_left(spw_engine_t *e);

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
