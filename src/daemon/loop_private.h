/* loop_private.h: what the rooms of the scheduler loop call of each other
 * (daemon.c, jobs.c, launch.c, decisions.c, cloud.c, submit.c, turn.c,
 * nodes.c, recover.c, pools.c, cloud_hosts.c, slurmcloud.c).  The HTTP
 * API's files do not include it: they see daemon_private.h only.  Every
 * function here runs on the loop's thread, or under spw_daemon.mu. */
#ifndef SPW_DAEMON_LOOP_PRIVATE_H
#define SPW_DAEMON_LOOP_PRIVATE_H

#include "daemon/daemon_private.h"

/* Every field of a job's stored row (job_save). */
#define SAVE_ALL                                                              \
    (SPW_JU_STATE | SPW_JU_PLACED_TS | SPW_JU_START_TS | SPW_JU_END_TS |      \
     SPW_JU_PLACEMENT | SPW_JU_GPUS | SPW_JU_PID | SPW_JU_EXIT |              \
     SPW_JU_ATTEMPTS | SPW_JU_REASON | SPW_JU_COST | SPW_JU_MONEY |          \
     SPW_JU_PROGRESS | SPW_JU_LAUNCH | SPW_JU_CANCEL)

/* The backend running job j's process (pools.c), and its state. */
#define JOB_OPS(d, j) spw_daemon_job_ops((d), (j), &(void *){NULL})
#define JOB_BE(d, j) dm_job_be((d), (j))
void *dm_job_be(spw_daemon_t *d, const djob_t *j);

/* ---- daemon.c -------------------------------------------------------------- */
/* A progress line on stderr ("spillway: ..."), unless the daemon is quiet. */
void dm_say(spw_daemon_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How often a repeating error is said again while it lasts, seconds. */
#define DM_REPEAT_EVERY_S 300.0

/* Reports whether the error of r happened now (failing, with its text in
 * fmt): said once when it starts, then with a count every
 * DM_REPEAT_EVERY_S while it lasts, and once when it ends (what, a few
 * words, names it then). */
void dm_say_repeat(spw_daemon_t *d, dm_repeat_t *r, int failing, double now, const char *what,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* ---- jobs.c ---------------------------------------------------------------- */
/* Replaces j's reason (why it is where it is). */
void dm_set_reason(djob_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A new job record of sequence number seq, owned by d->jobs. */
djob_t *dm_job_new(spw_daemon_t *d, int64_t seq);
/* The same, owned by the caller (not in d->jobs)... */
djob_t *dm_job_alloc(int64_t seq);
/* ... until it is put there. */
void dm_job_put(spw_daemon_t *d, djob_t *j);
/* Frees a job record; NULL-safe. */
void dm_job_free(djob_t *j);
/* Sets j's state (never j->st = directly): keeps its team's queued count
 * in d->teamq. */
void dm_job_state(spw_daemon_t *d, djob_t *j, spw_djob_state_t st);
/* The entry of team in d->teamq, added when missing. */
dteamq_t *dm_teamq(spw_daemon_t *d, const char *team);
/* Writes the fields in set (SPW_JU_*) of j to the store. */
void dm_job_save(spw_daemon_t *d, djob_t *j, unsigned set);
/* Resolves the governance names of j's spec and its team into the engine
 * record.  A name the config does not know counts as none (an unknown team
 * has no budget); submit has refused unknown datasets and residencies. */
void dm_job_gov(spw_daemon_t *d, djob_t *j);
/* The engine's runtime estimate of a job with this spec: its est_runtime,
 * else daemon.default_est_runtime_s, but never more than its max_runtime
 * (a job that says it stops within 12 s is not thought to need an hour;
 * the engine never buys what cannot finish, judged on this estimate). */
double dm_job_est_runtime(const spw_daemon_t *d, const spw_jobspec_t *spec);
/* The engine's finish / cancel of j, with its cloud attempt billed first
 * (clamped to its reservation under money limits, as the ledger does). */
void dm_eng_finish(spw_daemon_t *d, djob_t *j, double now);
void dm_eng_cancel(spw_daemon_t *d, djob_t *j, double now);
/* spw_job_reset, keeping what the daemon reports of earlier attempts:
 * egress, holds, and the progress and interruptions of its attempts. */
void dm_ej_reset(djob_t *j);
/* How long j's process may run before the backend stops it: its
 * max_runtime, or in the cloud under a budget or cap the default the
 * engine reserved its worst case for; 0 = no limit. */
double dm_run_limit(const spw_daemon_t *d, const djob_t *j);
/* Unbinds every instance of job j at now, settling what each billed while
 * bound; they become idle (released later by the idle timeout). */
void dm_unbind_instances(spw_daemon_t *d, djob_t *j, double now);
/* Takes j off the list of cloud jobs waiting for their instances. */
void dm_unwait(spw_daemon_t *d, djob_t *j);
/* Ends job j in state st: releases what it holds and forgets its spec. */
void dm_job_end(spw_daemon_t *d, djob_t *j, spw_djob_state_t st, double now);
/* Puts a placed job back in the queue (retry or preemption). */
void dm_job_requeue(spw_daemon_t *d, djob_t *j, double now);
/* Job j lost the capacity it was placed on at now: its cloud instance was
 * preempted (or released under it), or its on-prem node failed (why).  The
 * engine settles the attempt (what it kept up to its last checkpoint, what
 * it lost) and decides where the job goes next; a process still running is
 * stopped, and its exit only lets the job's next placement start.  Past
 * the policy's max_restarts the job fails.  `what` says what happened, for
 * its reason. */
void dm_job_interrupt(spw_daemon_t *d, djob_t *j, spw_interrupt_t why, const char *what,
                      double now);

/* ---- launch.c -------------------------------------------------------------- */
/* A handle its backend changed (changed(), version 3): the launch of an
 * asynchronous backend took; the job now runs. */
void dm_handle_changed(spw_daemon_t *d, const spw_handle_t *h, double now);
/* Picks the GPUs of an on-prem placement and starts the job, or, while the
 * process of its interrupted attempt is still being stopped, holds them
 * until it has exited. */
void dm_place_onprem(spw_daemon_t *d, djob_t *j, double now);
/* Starts a cloud job whose instances are all ready. */
void dm_launch_cloud(spw_daemon_t *d, djob_t *j, double now);
/* Whether every instance bound to j is ready (and it has some), and, for
 * instances that are hosts of the cloud backend, each host has answered
 * since it was added (or did not for 2 minutes: it is tried anyway). */
int dm_cloud_ready(const spw_daemon_t *d, const djob_t *j);
/* Launches the cloud jobs waiting for their instances (d->waiting) that
 * are ready now: their hosts answered since the last turn. */
void dm_launch_waiting(spw_daemon_t *d, double now);
/* Puts placed job j on d->waiting, unless it is there already. */
void dm_wait_for_hosts(spw_daemon_t *d, djob_t *j);
/* A process a backend reports ended: the job succeeds, fails, is retried,
 * or its interrupted attempt lets the next placement start. */
void dm_handle_exit(spw_daemon_t *d, const spw_exit_t *ex, double now);
/* Removes the fences and exit records of the attempts whose end the last
 * commit made durable. */
void dm_gc_run(spw_daemon_t *d);
/* Forks every launch whose intent the last commit made durable, in a
 * transaction of its own that records their handles (pid, start ticks).
 * Should that commit fail, recovery still finds each process by its
 * token. */
void dm_launch_pending(spw_daemon_t *d, double now);
/* What dm_launch_pending and dm_acquire_pending share: step() for each job
 * of seqs[0 .. *n) still known, in a transaction of its own (committed; a
 * failure is said as "cannot record WHAT"), then *n = 0. */
void dm_after_commit(spw_daemon_t *d, const int64_t *seqs, size_t *n,
                     void (*step)(spw_daemon_t *d, djob_t *j, double now), const char *what,
                     double now);

/* ---- decisions.c ----------------------------------------------------------- */
/* Stores j's placement of now with every candidate the engine weighed. */
void dm_record_decision(spw_daemon_t *d, djob_t *j, double now);

/* ---- cloud.c --------------------------------------------------------------- */
/* Writes instance x to the store (a failure fails the turn's commit). */
void dm_inst_save(spw_daemon_t *d, const dinst_t *x);
/* Appends an idle record of instance in to d->inst; its index. */
size_t dm_inst_add(spw_daemon_t *d, const spw_instance_t *in);
/* Inserts a loaded instance record in d->inst, kept in launch order. */
void dm_inst_insert(spw_daemon_t *d, const dinst_t *x);
/* A cloud placement: reuses idle instances of the offer (of the same kind,
 * spot or on-demand: the engine reserved at that price), acquires the rest. */
void dm_place_cloud(spw_daemon_t *d, djob_t *j, double now);
/* After the turn's commit: asks the providers for the acquisitions whose
 * intent it committed (with their tokens), in a transaction of its own
 * that records what they bought.  dm_acq_rewrite writes the pending
 * intents again (after a failed commit undid them). */
void dm_acquire_pending(spw_daemon_t *d, double now);
void dm_acq_rewrite(spw_daemon_t *d);
/* At start-up, before the providers reconcile: every acquisition intent
 * recorded but not answered is asked again with its token (the provider
 * answers what the token bought, or buys it now), for jobs still placed;
 * the others are dropped. */
int dm_recover_acquisitions(spw_daemon_t *d, spw_error_t *err);
/* recover.c: the index of the offer named `name` (spw_daemon_offer_name), or -1. */
int dm_offer_by_name(const spw_daemon_t *d, const char *name);

/* accounts.c: the cloud accounts.  setup makes each account's provider
 * (eo: daemon.emulated's offer emulation) and which account serves each
 * offer (an offer none serves is never chosen); destroy frees them. */
int dm_accounts_setup(spw_daemon_t *d, const spw_offer_emulation_t *eo, spw_error_t *err);
void dm_accounts_destroy(spw_daemon_t *d);
/* serve --release-all-on-stop: releases every live instance of every
 * account at now and records it (jobs on them are left to the next
 * daemon's recovery, which finds their instances gone). */
void dm_release_all(spw_daemon_t *d, double now);
/* 1 with a sentence in why when account a may not buy `inst` more
 * instances of offer o (spot or not) now: blocked, or at max_instances or
 * max_usd_per_h; else 0. */
int dm_acct_limit(const spw_daemon_t *d, const dacct_t *a, size_t o, int spot, uint32_t inst,
                  char *why, size_t len);
/* Before each schedule: the accounts' live counts, and the engine told
 * which offers their limits and the blocked-offer cache rule out. */
void dm_accounts_gate(spw_daemon_t *d, double now);
/* A refusal of an acquisition of offer o (spot or not) that blocks `cls`
 * (OFFER, FAMILY, ACCOUNT; others do nothing here) for block_s seconds (0 =
 * the default) from now. */
void dm_block_refusal(spw_daemon_t *d, size_t o, int spot, spw_block_t cls, double block_s,
                      const char *reason, double now);
/* Each account's events (dm_handle_inst_event); their saves, once per turn
 * before the commit, and their health for /healthz. */
void dm_accounts_poll(spw_daemon_t *d, double now);
void dm_accounts_flush(spw_daemon_t *d, double now);

/* What the provider reports of an instance: ready (its job may launch),
 * preempted or lost (its job is interrupted), released. */
void dm_handle_inst_event(spw_daemon_t *d, const spw_inst_event_t *ev, double now);
/* Releases instances idle for longer than the idle timeout, and every
 * instance older than max_instance_lifetime_s: a job on one is requeued as
 * after a preemption (it does not use up a retry). */
void dm_release_idle(spw_daemon_t *d, double now);
/* Money safety: a cloud attempt must not bill more than the worst case its
 * placement reserved.  The backend stops the process at its max_runtime
 * (run_limit); this is the net under it, for what max_runtime does not
 * bound (a boot that took longer than the offer says, a job still waiting
 * for its instances): once the attempt's bill comes within a turn and the
 * kill grace of the reserved compute, the job is stopped; its reservation
 * holds kill_grace_s + 2 turns + 1 s of billing beyond max_runtime for
 * exactly this (policy.reserve_extra_s). */
void dm_stop_over_worst_case(spw_daemon_t *d, double now);
/* Tells the engine the spot capacity of each offer that has an
 * availability trace (spot.availability), as of now, whenever it changes.
 * The emulated provider preempts and refuses spot instances from the same
 * trace with the same start, so both see the same ticks. */
void dm_spot_capacity(spw_daemon_t *d, double now);
/* Which spot.availability entry applies to each offer (the last that
 * matches), where their traces start (the daemon's start, less each
 * entry's start_offset), and the per-offer state of spot capacity and
 * capacity-error backoffs. */
void dm_spot_setup(spw_daemon_t *d);

/* ---- submit.c -------------------------------------------------------------- */
/* Jobs the engine rejected in the last schedule (a budget ran out under
 * on_exhausted: reject) end as rejected. */
void dm_end_rejected(spw_daemon_t *d, spw_job_t **rej, size_t n, double now);
/* Queued jobs the engine held (a budget or cap had no room for their worst
 * case) since they were last saved: their held count and reason are
 * written, so they survive a restart and `show` says why. */
void dm_save_held(spw_daemon_t *d);
/* Commits every pending submit in one transaction and wakes the callers. */
void dm_commit_submits(spw_daemon_t *d, double now);

/* ---- turn.c ---------------------------------------------------------------- */
/* Notes whether a commit worked, for /healthz. */
/* Whether the state or log filesystem is below daemon.min_free_mib (as
 * the loop last measured it, every 2 s): 1 with the reason in why. */
int dm_disk_low(spw_daemon_t *d, char *why, size_t len);
void dm_note_commit(spw_daemon_t *d, int ok, const char *why);

/* ---- nodes.c --------------------------------------------------------------- */
/* After recovery: the nodes an administrator took down stay down. */
int dm_restore_nodes(spw_daemon_t *d, spw_error_t *err);

/* ---- fences.c -------------------------------------------------------------- */
/* Writes the fences pool p's backend (SPW_DAEMON_CLOUD_POOL: the cloud
 * instances' hosts) added and let go since the last call into the turn's
 * transaction: call it after the backend's poll(), so a failed-over
 * attempt's fence commits with its job's requeue. */
void dm_fences_collect(spw_daemon_t *d, int32_t p, double now);
/* While commits fail: writes again every fence event taken since the last
 * commit that worked.  After one worked: forgets them. */
void dm_fences_rewrite(spw_daemon_t *d);
void dm_fences_committed(spw_daemon_t *d);
/* At start, after recovery (in its transaction): gives every stored fence
 * back to its pool's backend (fence_add), and writes those recovery itself
 * made.  A fence whose pool or host the config no longer has is kept in
 * the store, said once.  0, or -1 with err. */
int dm_fences_restore(spw_daemon_t *d, spw_error_t *err);

/* ---- recover.c ------------------------------------------------------------- */
/* Asks again, every UNSURE_RECHECK_S, about the attempts whose backend
 * could not tell at recovery whether they run. */
void dm_recheck_unsure(spw_daemon_t *d, double now);
/* Loads jobs and instances from the store and brings every live one back
 * (inside the caller's transaction); 0, or -1 with err. */
int dm_recover(spw_daemon_t *d, spw_error_t *err);
/* A job record from its stored row, owned by the caller (not in d->jobs);
 * a live job keeps its spec, an ended one's is freed once its engine record
 * is filled as at submit.  NULL with err when the row cannot be read. */
djob_t *dm_job_from_row(spw_daemon_t *d, const spw_store_job_t *r, spw_error_t *err);

/* ---- retain.c -------------------------------------------------------------- */
/* Whether an ended job of this end time stays in memory at now
 * (daemon.job_retention_s). */
int dm_job_retained(const spw_daemon_t *d, double end_ts, double now);
/* Adds what ended job j counts for (jobs by state, interruptions, its costs
 * by period) to d->gone, as it leaves memory or is not loaded at start. */
void dm_job_retire(spw_daemon_t *d, const djob_t *j);
/* Ended job j (in d->jobs) is one dm_evict looks at from now on. */
void dm_note_ended(spw_daemon_t *d, const djob_t *j);
/* Ended jobs past the retention window, their end committed and nothing
 * of them running, leave memory (at most once a second): the cost is the
 * ended jobs in memory, not the queue. */
void dm_evict(spw_daemon_t *d, double now);
/* Frees d->gone. */
void dm_gone_free(spw_daemon_t *d);
/* After recovery: removes from STATE_DIR/run the fences and exit records
 * of attempts that are over (their job ended, or has another launch intent
 * now), which a crash kept from being removed after their end committed. */
void dm_sweep_run_dir(spw_daemon_t *d);

/* pools.c: per-pool backends. */
/* Creates the backend of every pool that names one; a Slurm pool's nodes
 * and GPUs are read from Slurm and replace the config's.  Call after the
 * fleet is copied, before the engine is made.  0, or -1 with err. */
int spw_daemon_pools_setup(spw_daemon_t *d, spw_error_t *err);
/* Node `node` of pool `pool` is going down: what the engine holds there for
 * jobs spillway did not submit (Slurm pools) is let go first, so the node
 * is empty of jobs as spw_engine_node_down wants. */
void spw_daemon_pools_node_down(spw_daemon_t *d, size_t pool, uint32_t node, double now);
/* Applies Slurm's node states (at most every 2 s, read on the backend's
 * worker thread): a node that went down, drained or not responding is
 * taken down (its jobs fail over), one that came back is brought up; and
 * holds in the engine the GPUs that foreign jobs (not submitted through
 * spillway) hold on each node. */
void spw_daemon_pools_sync(spw_daemon_t *d, double now);
void spw_daemon_pools_destroy(spw_daemon_t *d);
/* The backend that runs job j's process (j->be_pool), into *be. */
const struct spw_backend_ops *spw_daemon_job_ops(spw_daemon_t *d, const djob_t *j, void **be);
/* The backend of pool `pool` (-1 = the local one, SPW_DAEMON_CLOUD_POOL =
 * the cloud instances' hosts), into *be. */
const struct spw_backend_ops *spw_daemon_pool_ops(spw_daemon_t *d, int32_t pool, void **be);

/* Cloud instances as hosts (cloud_hosts.c; docs/hosts.md, "Cloud instances"). */
#define SPW_DAEMON_CLOUD_POOL (-2)
/* Cloud instances as the State=CLOUD nodes of a Slurm partition
 * (cloud.slurm_partition; slurmcloud.c, docs/slurm.md). */
#define SPW_DAEMON_SLURM_CLOUD_POOL (-3)
/* STATE_DIR/NAME: the nodes (names, GPUs) last read from a Slurm partition,
 * written after each read at start and read back when Slurm does not answer
 * (pools.c).  read: 0 with *out (caller frees) and *n, or -1 (none). */
void spw_daemon_slurm_cache_write(const spw_daemon_t *d, const char *name,
                                  const spw_backend_node_t *v, size_t n);
int spw_daemon_slurm_cache_read(const spw_daemon_t *d, const char *name,
                                spw_backend_node_t **out, size_t *n);
/* Makes d->scloud_be and reads its nodes when cloud.slurm_partition is set;
 * while Slurm does not answer, the nodes as last read (a warning says so).
 * 0, or -1 with err. */
int spw_daemon_scloud_setup(spw_daemon_t *d, spw_error_t *err);
void spw_daemon_scloud_destroy(spw_daemon_t *d);
/* Takes the partition's node states read on the backend's worker thread
 * (asks for the next read); never waits on Slurm. */
void spw_daemon_scloud_sync(spw_daemon_t *d);
/* Nodes of the partition that no live instance is and Slurm has up. */
size_t spw_daemon_scloud_free(spw_daemon_t *d);
/* Gives each instance of j that is no node yet a free node; 0, or -1 when
 * too few are free (those bound stay bound). */
int spw_daemon_scloud_bind(spw_daemon_t *d, djob_t *j);
/* "SPILLWAY_SLURM_NODES=c1,c2": the nodes of j's instances (caller frees),
 * or NULL when there is no Slurm cloud. */
char *spw_daemon_scloud_env(const spw_daemon_t *d, const djob_t *j);
/* Releases idle instance x at now (provider, store); 0, or -1 with err. */
int spw_daemon_inst_release(spw_daemon_t *d, dinst_t *x, double now, spw_error_t *err);
/* Makes d->cloud_be when daemon.emulated.boot_command is set: an ssh
 * backend whose hosts are the instances' addresses.  0, or -1 with err. */
int spw_daemon_cloud_setup(spw_daemon_t *d, spw_error_t *err);
/* The be_pool a cloud placement of j runs on: SPW_DAEMON_CLOUD_POOL when
 * every instance of j has an address and there is a cloud backend, else -1
 * (the local backend, as without hosts). */
int32_t spw_daemon_cloud_pool(const spw_daemon_t *d, const djob_t *j);
/* Instance x is ready (or found ready after a restart): its address from
 * the provider, and its host added to the cloud backend. */
void spw_daemon_cloud_host_up(spw_daemon_t *d, dinst_t *x);

/* The orphan sweep at start of accounts whose provider is async and can
 * list (recover.c): a thread lists each and releases what carries the
 * daemon's tag but no record or live job of its has; joined by
 * dm_orphan_sweep_join before the accounts go. */
void dm_orphan_sweep_start(spw_daemon_t *d);
void dm_orphan_sweep_join(spw_daemon_t *d);

/* Instance x's name among the hosts: its address, after its account's
 * login user when the account has one ("ubuntu@10.0.4.17"), into buf. */
void spw_daemon_cloud_host_name(const spw_daemon_t *d, const dinst_t *x, char *buf, size_t len);
/* Instance x ended at now: its host leaves the cloud backend (jobs with a
 * rank there are lost). */
void spw_daemon_cloud_host_gone(spw_daemon_t *d, dinst_t *x, double now);
/* Once a turn: the ready spot instances of aws accounts are watched for
 * the cloud's interruption notice, read on each host from the metadata
 * service (the account's imds_url) by its ssh status rounds, so nothing
 * here waits; an instance with a notice takes no more work, and its job
 * is interrupted at once (SIGTERM: it checkpoints) and requeued. */
void spw_daemon_cloud_notices(spw_daemon_t *d, double now);

/* ---- fairshare.c ------------------------------------------------------------ */
/* Stops the jobs whose reclaim grace is over (spw_engine_reclaims) after the
 * turn's schedule: each is interrupted as RECLAIMED (SIGTERM first, so it
 * can checkpoint) and queues again to resume from its checkpoint. */
void dm_reclaim(spw_daemon_t *d, double now);

#endif
