/* emulated.h: the emulated cloud provider: instances that exist only in
 * spillway's books, so the daemon's whole loop (acquire, boot, run, preempt,
 * release, bill) runs on one machine with no cloud account.  It is labelled
 * emulated everywhere (ops.emulated = 1).
 *
 * Behaviour:
 * - acquire() makes instances BOOTING; poll() turns each READY once the
 *   offer's boot_delay_s has passed (event time launched_s + boot_delay_s).
 * - billing: the on-demand or spot price of the offer, per second from
 *   acquire to release or preemption, boot included (provider.h).
 * - capacity: optionally at most `capacity` live instances per offer (spot and
 *   on-demand together); beyond it acquire() fails with errno EAGAIN.
 * - preemption hits spot instances only (unless rate_ondemand), from three
 *   sources:
 *   - spw_emulated_preempt(), the admin command (it may also stop an
 *     on-demand instance, to emulate a failure);
 *   - a rate per instance-hour: at acquire each spot instance draws an
 *     exponential time to preemption (mean 1 / rate hours) from the
 *     provider's seeded generator, so the same seed and the same calls give
 *     the same preemptions;
 *   - an availability trace (spot_trace.h) mapped to the offer: at each tick
 *     boundary where the trace's count falls below the spot instances of the
 *     offer held then, the newest of them are preempted (those that have run
 *     longest survive) until the count is met, at the boundary's time; a spot
 *     acquire() that would hold more than the current tick's count fails with
 *     EAGAIN.
 *   poll() applies everything that happened up to now in time order, so a
 *   poll that comes late still reports each event at its own time.
 * - every call that takes now_s first brings the emulation up to now_s, as
 *   poll() does (boots finish, preemptions happen, events are queued).  That
 *   is time passing, not an effect of the call, so it happens even when the
 *   call then fails; the call's own effect is all or nothing.
 * - persistence: with a state dir, the provider keeps its instances (live ones
 *   and those that ended within retain_ended_s), its next id and its
 *   generator in STATE_DIR/emulated.json, rewritten (write, fsync, rename) on
 *   every change, so that after a kill -9 of the daemon a new provider made
 *   over the same dir still knows which instances bill, and reconcile()
 *   returns the ones the daemon's records lack.  Each write costs time in
 *   proportion to the instances remembered.  STATE_DIR/emulated.lock (flock)
 *   keeps two providers off the same dir.  Queued events are not saved:
 *   reconcile() and poll() derive them again from the saved instances.
 *
 * - hosts (boot_command): acquire() starts `CMD add HOSTS_DIR ID` per instance
 *   as a child process (stdout on a non-blocking pipe; never waited for);
 *   poll() collects it without blocking.  An instance becomes READY once
 *   both its boot delay has passed and its command printed an address
 *   (exit 0); a command that fails ends the instance (RELEASED, billing
 *   stops) and poll() returns LOST for it.  An instance that ends (release,
 *   preemption, failed boot) gets `CMD del HOSTS_DIR ID`, started by the
 *   next poll().  Addresses are kept in emulated.json; a BOOTING instance
 *   loaded without one is booted again (`add` of a running ID answers its
 *   address).
 *
 * - tokens (version 4): each instance keeps the token of the acquire() that
 *   made it (saved in emulated.json); acquire() with a token already asked
 *   answers with those instances and buys nothing.
 * - refusals (`refuse`): an acquisition of an offer whose zone is refused is
 *   answered as an asynchronous cloud answers: acquire() returns the
 *   instances BOOTING, and the next poll() returns FAILED for each (never
 *   billed), with the block class of the EC2 code (InsufficientInstance-
 *   Capacity and the other capacity codes: OFFER; VcpuLimitExceeded,
 *   InstanceLimitExceeded: FAMILY; AuthFailure, UnauthorizedOperation,
 *   OptInRequired: ACCOUNT, and health() names it from then on;
 *   InvalidParameterValue: JOB; RequestLimitExceeded, InternalError,
 *   Unavailable: NONE).
 *
 * Ownership: the offers in the options are borrowed until destroy; everything
 * else in the options is copied. */
#ifndef SPW_PROVIDERS_EMULATED_H
#define SPW_PROVIDERS_EMULATED_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "providers/provider.h"
#include "util/error.h"

typedef struct spw_emulated spw_emulated_t;

typedef struct spw_emulated_opts {
    const spw_offer_t *offers;  /* the fleet's offers, borrowed until destroy */
    size_t noffers;             /* entries in offers */
    const spw_offer_emulation_t *offer_opts; /* borrowed for the call */
    size_t noffer_opts;         /* entries in offer_opts */
    uint64_t seed;              /* seeds the preemption draws; ignored when
                                   the state dir holds a saved generator */
    const char *state_dir;      /* existing directory for emulated.json, or
                                   NULL to keep everything in memory only */
    double retain_ended_s;      /* how long ended instances are remembered (for
                                   reconcile), seconds; 0 = default */
    const char *boot_command;   /* instances as real hosts: a program run as
                                   `CMD add HOSTS_DIR ID` (prints the
                                   instance's address) and `CMD del HOSTS_DIR
                                   ID`, e.g. scripts/netns-hosts.sh; NULL =
                                   instances are records only (addr "") */
    const char *hosts_dir;      /* HOSTS_DIR given to boot_command; required
                                   with it */
    const char *id_prefix;      /* instance ids are this and a number (an
                                   account's "NAME-i-"); NULL = "emu-i-" */
    const char *const *refuse;  /* NULL-terminated "ZONE=CODE": every
                                   acquisition of an offer in ZONE ("*" =
                                   any) is refused with EC2 error CODE
                                   (see below); NULL = none */
} spw_emulated_opts_t;

#define SPW_EMULATED_RETAIN_S (7 * 86400.0)  /* retain_ended_s when 0 */
#define SPW_EMULATED_STATE_FILE "emulated.json"
#define SPW_EMULATED_LOCK_FILE "emulated.lock"

/* The function table; use it with a provider from spw_emulated_create.  It
 * has the version 3 members preempt, defer_saves and flush (the functions
 * below). */
extern const struct spw_provider_ops spw_emulated_ops;

/* Makes an emulated provider: loads every trace, and with a state dir locks it
 * and loads what an earlier provider saved there.  Returns the provider (free
 * with spw_emulated_destroy or spw_emulated_ops.destroy), or NULL with a
 * sentence in err: invalid options, an offer whose names are too long, a
 * trace that cannot be read or parsed (the message names the file), a state
 * dir that is missing, locked by another provider or holds a corrupt state
 * file. */
spw_emulated_t *spw_emulated_create(const spw_emulated_opts_t *opts, spw_error_t *err);

/* Frees the provider and unlocks its state dir; its instances keep billing in
 * the saved state (see provider.h).  NULL-safe. */
void spw_emulated_destroy(spw_emulated_t *em);

/* The admin command: preempts live instance `instance_id` at now_s (spot or
 * not), queueing a PREEMPTED event.  Returns 0, or -1 with errno ENOENT (no
 * such instance), ESRCH (it has already ended) or the errno of a failed save,
 * with a sentence in err and nothing changed. */
int spw_emulated_preempt(spw_emulated_t *em, const char *instance_id, double now_s,
                         spw_error_t *err);

/* Deferred saves (on = 1): a change no longer writes emulated.json at once;
 * spw_emulated_flush does, when anything changed.  The daemon turns this on
 * and flushes once per turn, before its own commit, so the file is written
 * once per turn instead of once per instance.  What changed after the last
 * flush is lost to a crash (instances the daemon then no longer finds in
 * the provider's state are treated as gone).  destroy flushes. */
void spw_emulated_defer_saves(spw_emulated_t *em, int on);
int spw_emulated_flush(spw_emulated_t *em, spw_error_t *err);

/* Copies up to max of the instances the provider remembers (live, and ended
 * within retain_ended_s) to out, oldest first, as of the last call that
 * changed them; returns how many it remembers (may exceed max). */
size_t spw_emulated_list(const spw_emulated_t *em, spw_instance_t *out, size_t max);

#endif
