/* provider.h: the versioned interface through which the daemon acquires,
 * watches and releases cloud instances (the emulated cloud today; command
 * scripts and native AWS / GCP / Azure later, each one folder implementing
 * struct spw_provider_ops, made by name in registry.h), and the plain values
 * it trades in.  The daemon knows a provider only through this table. */
#ifndef SPW_PROVIDERS_PROVIDER_H
#define SPW_PROVIDERS_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "util/error.h"

/* The version of struct spw_provider_ops this header describes.  Members are
 * only ever appended; a caller checks ops->version >= N before touching a
 * member added in version N. */
#define SPW_PROVIDER_VERSION 5
/* Version 2 added: spw_instance_t.addr (how to reach a ready instance), the
 * describe member, and LOST from poll() for an instance whose boot failed.
 * Version 3: the optional members preempt, defer_saves and flush, so that
 * the daemon needs no call of a concrete provider.
 * Version 4: real clouds, several accounts at once, no network on the
 * scheduler thread.  spw_acquire_t.token (an idempotency key the daemon
 * commits before it calls acquire); spw_instance_t.cloud_id and account;
 * spw_inst_event_t.reason/block/block_s and the FAILED event; ops.async
 * (acquire queues, the cloud answers later through poll()); the optional
 * members list (every instance the account holds with spillway's tags,
 * orphans included) and health (why the account cannot launch).
 * Version 5: the optional spot_prices (live spot prices, refreshed on the
 * provider's own threads). */

/* Whether ops (not NULL) has member m, one added in version v:
 * SPW_PROVIDER_HAS(ops, 3, preempt). */
#define SPW_PROVIDER_HAS(ops, v, m) ((ops)->version >= (v) && (ops)->m != NULL)

/* Buffer sizes of the strings copied into an instance, bytes, NUL included.
 * A provider refuses (at create) offers whose names do not fit, so acquire()
 * never truncates.  SPW_INSTANCE_JOB_MAX equals SPW_JOB_ID_MAX of
 * backends/backend.h; it is repeated so that providers need no backend. */
#define SPW_INSTANCE_ID_MAX 32
#define SPW_INSTANCE_JOB_MAX 64
#define SPW_INSTANCE_PROVIDER_MAX 32
#define SPW_INSTANCE_REGION_MAX 64
#define SPW_INSTANCE_ZONE_MAX 64
#define SPW_INSTANCE_TYPE_MAX 64
#define SPW_INSTANCE_ADDR_MAX 64
#define SPW_INSTANCE_CLOUD_ID_MAX 64
#define SPW_INSTANCE_ACCOUNT_MAX 32
#define SPW_ACQUIRE_TOKEN_MAX 64   /* EC2's ClientToken is at most 64 ASCII */

/* Time: every `now_s` below is the daemon's wall clock (seconds since the Unix
 * epoch), read once per loop turn, as in backend.h: wall clock rather than
 * monotonic so that an instance persisted before a restart means the same
 * thing after it.  Providers never read the clock themselves.
 *
 * Offers: a provider is created with the fleet's offer array (spw_offer_t,
 * core/model.h), borrowed until it is destroyed; requests and instances name
 * an offer by its index in that array. */

/* How one offer of an emulated cloud behaves (a provider with
 * ops.emulated honours these; a real cloud's offers behave as the cloud
 * does).  Offers without an entry keep the defaults: no capacity limit, no
 * preemption rate, no availability trace. */
typedef struct spw_offer_emulation {
    size_t offer;               /* index into the provider's offers; at most
                                   one entry per offer */
    uint32_t capacity;          /* most live instances of the offer at once
                                   (spot and on-demand); 0 = unlimited */
    double preempt_rate_per_h;  /* spot preemptions per instance-hour, >= 0;
                                   0 = none from a rate */
    int rate_ondemand;          /* 1: the rate also stops on-demand instances
                                   (emulated failures), so a daemon that buys
                                   only on-demand still sees preemptions */
    const char *trace_path;     /* spot availability trace file, or NULL */
    double trace_start_s;       /* daemon clock at which the trace's tick 0
                                   begins, seconds (a start offset into the
                                   trace is a start time before now) */
} spw_offer_emulation_t;

/* ---- Instances ------------------------------------------------------- */

#define SPW_INSTANCE_STATES(X)                                                \
    X(BOOTING, "booting")                                                     \
    X(READY, "ready")                                                         \
    X(RELEASED, "released")                                                   \
    X(PREEMPTED, "preempted")
#define SPW_ENUM_INSTANCE_STATE(a, s) SPW_INSTANCE_##a,
typedef enum spw_instance_state {
    SPW_INSTANCE_STATES(SPW_ENUM_INSTANCE_STATE) SPW_INSTANCE_STATE_COUNT
} spw_instance_state_t;
const char *spw_instance_state_name(spw_instance_state_t s);
/* Parses a name written by spw_instance_state_name; -1 with err if unknown. */
int spw_instance_state_parse(const char *s, spw_instance_state_t *out, spw_error_t *err);

/* Whether an instance in state s is billing (booting or ready). */
int spw_instance_state_live(spw_instance_state_t s);

/* What to acquire.  Borrowed for the duration of acquire() only. */
typedef struct spw_acquire {
    size_t offer;               /* index into the provider's offers */
    uint32_t count;             /* instances wanted, > 0: all of them or none */
    int spot;                   /* 1: spot (preemptible, spot price);
                                   0: on demand */
    const char *job_id;         /* job they are for, recorded in each instance;
                                   shorter than SPW_INSTANCE_JOB_MAX */
    double now_s;               /* the daemon's clock at the request, seconds */
    const char *token;          /* (version 4) the acquisition's idempotency
                                   key, [A-Za-z0-9._-], shorter than
                                   SPW_ACQUIRE_TOKEN_MAX, committed by the
                                   daemon before it calls acquire: asking
                                   again with a token already asked (after a
                                   restart) never buys twice but answers with
                                   what the token bought (EC2: ClientToken);
                                   NULL = none (providers before version 4) */
} spw_acquire_t;

/* One cloud instance, as the daemon persists it (SQLite) so that a restarted
 * daemon can reconcile() it.  A plain value: copy it freely; it owns nothing
 * and points nowhere (the offer's names are copied in). */
typedef struct spw_instance {
    char id[SPW_INSTANCE_ID_MAX];   /* the provider's id ("emu-i-000001"),
                                       unique for the provider's lifetime,
                                       restarts included */
    char job_id[SPW_INSTANCE_JOB_MAX];  /* the job it was acquired for */
    size_t offer;                   /* index into the provider's offers */
    char provider[SPW_INSTANCE_PROVIDER_MAX];  /* copied from the offer ("aws") */
    char region[SPW_INSTANCE_REGION_MAX];      /* copied from the offer, may be "" */
    char zone[SPW_INSTANCE_ZONE_MAX];          /* copied from the offer, may be "" */
    char instance_type[SPW_INSTANCE_TYPE_MAX]; /* copied from the offer */
    int spot;                       /* 1: spot, may be preempted; 0: on demand */
    double price_usd_per_h;         /* what one hour of it is charged, USD */
    spw_instance_state_t state;     /* where it is in its life */
    double launched_s;              /* acquired (billing starts), daemon clock */
    double ready_s;                 /* when it is (or will be) ready: launched_s
                                       plus the offer's boot delay */
    double ended_s;                 /* released or preempted (billing stops);
                                       NAN while it is live */
    char addr[SPW_INSTANCE_ADDR_MAX];  /* (version 2) the address the daemon
                                       reaches it at over ssh, set by the time
                                       it is READY; "" = the provider gives
                                       none (the daemon then runs the job on
                                       its own host) */
    char cloud_id[SPW_INSTANCE_CLOUD_ID_MAX];  /* (version 4) the cloud's own
                                       id ("i-0abc..."), "" until the cloud
                                       has answered (async providers) or
                                       where it is id itself */
    char account[SPW_INSTANCE_ACCOUNT_MAX];    /* (version 4) the cloud
                                       account (cloud.accounts[].name) that
                                       holds it; set by the daemon */
} spw_instance_t;

/* What instance i has cost up to now_s, USD: price_usd_per_h times the billed
 * seconds / 3600.  Billing runs from launched_s to ended_s (or to now_s while
 * the instance is live, or if now_s is earlier than ended_s), per second with
 * fractions kept, no minimum charge and no rounding.  Boot time is billed, as
 * real clouds bill it: an instance costs money from the moment it is
 * requested, whether or not the job has started.  0 if now_s is before
 * launched_s. */
double spw_instance_cost_usd(const spw_instance_t *i, double now_s);

/* ---- Events -------------------------------------------------------------- */

/* READY and PREEMPTED come from poll() as things happen.  RELEASED and LOST
 * are queued by reconcile(), for instances the daemon still lists as live
 * after a restart: RELEASED = a release() that succeeded but that the
 * daemon may not have recorded; LOST = the provider has no record of the
 * instance at all (it is not billing; when it stopped is unknown).  Since
 * version 2 poll() also returns LOST for an instance whose boot failed (it
 * stopped billing at the event's time; its job is placed again).
 * Version 4: FAILED, from an async provider, for an instance the cloud
 * refused to make (it never billed); block and block_s say what the
 * refusal rules out and for how long, reason says why in a sentence. */

/* What a refusal rules out (spw_block_t, SPW_BLOCK_*) is the engine's
 * vocabulary: core/model.h (spw_engine_block applies it). */
#define SPW_INST_EVENTS(X)                                                    \
    X(READY, "ready")                                                         \
    X(PREEMPTED, "preempted")                                                 \
    X(RELEASED, "released")                                                   \
    X(LOST, "lost")                                                           \
    X(FAILED, "failed")
#define SPW_ENUM_INST_EVENT(a, s) SPW_INST_EV_##a,
typedef enum spw_inst_event_kind {
    SPW_INST_EVENTS(SPW_ENUM_INST_EVENT) SPW_INST_EVENT_COUNT
} spw_inst_event_kind_t;
const char *spw_inst_event_name(spw_inst_event_kind_t k);

/* One thing that happened to an instance.  A plain value. */
typedef struct spw_inst_event {
    spw_inst_event_kind_t kind;         /* what happened */
    char instance_id[SPW_INSTANCE_ID_MAX];  /* to which instance */
    char job_id[SPW_INSTANCE_JOB_MAX];  /* the job it was acquired for (for
                                           LOST, as the daemon's record says) */
    double time_s;                      /* when it happened (not when it was
                                           polled), daemon clock; for LOST the
                                           now_s of reconcile() */
    spw_block_t block;                  /* (version 4) FAILED: what the refusal
                                           rules out; NONE otherwise */
    double block_s;                     /* (version 4) FAILED: for how long,
                                           seconds; 0 = the daemon's backoff */
    char reason[256];                   /* (version 4) FAILED, LOST,
                                           PREEMPTED: why, a sentence naming the
                                           cloud's code ("InsufficientInstance
                                           Capacity in us-east-1a"); "" = none */
} spw_inst_event_t;

/* ---- The function table ------------------------------------------------ */

/* `pv` is the provider's own state, made by its create function (e.g.
 * spw_emulated_create).  No member takes a callback; results come back as
 * values.  A member that fails leaves no side effects: nothing acquired,
 * nothing released, nothing queued.  A provider is not thread-safe: call it
 * from one thread (the scheduler loop). */
struct spw_provider_ops {
    int version;                /* SPW_PROVIDER_VERSION the table was built for */
    const char *name;           /* "emulated", "aws", ...: for messages and the API */
    int emulated;               /* 1: no real cloud behind it; the daemon labels
                                   its pools, instances and costs "emulated"
                                   everywhere (API, metrics, dashboard) */
    int async;                  /* (version 4) 1: acquire, release and
                                   reconcile only queue work for the
                                   provider's own threads (no network on the
                                   caller's thread) and answer through
                                   poll(): acquire returns the instances
                                   BOOTING under ids the provider makes from
                                   req->token, and a refusal comes back as
                                   FAILED; 0: they act before returning */

    /* Acquires req->count instances of one offer and writes them to
     * out[0 .. count-1], each BOOTING with launched_s = req->now_s.  From then
     * on the instances bill until release() or a preemption.  Returns 0, or
     * -1 with a sentence in err and nothing acquired: errno EAGAIN when the
     * offer has no capacity for that many now (the daemon tries the next
     * offer), E2BIG when it never could (more than the offer's whole
     * capacity: the daemon ends the job), EINVAL for a bad request (offer
     * index, count, no spot price). */
    int (*acquire)(void *pv, const spw_acquire_t *req, spw_instance_t *out,
                   spw_error_t *err);

    /* Stops inst (matched by id) at now_s; billing ends there.  Releasing an
     * instance that has already ended (preempted, released) returns 0 and
     * changes nothing; a preemption not yet polled is still reported.
     * Returns -1 with errno ENOENT if the provider has no such instance. */
    int (*release)(void *pv, const spw_instance_t *inst, double now_s,
                   spw_error_t *err);

    /* Called once per loop turn: advances the provider to now_s (boots that
     * have finished, preemptions that have happened) and writes up to max
     * events into ev, oldest first (ties in instance order); returns how
     * many.  Events beyond max are returned by the next call.  Never blocks.
     * The daemon ignores events about instances it already holds as ended. */
    size_t (*poll)(void *pv, double now_s, spw_inst_event_t *ev, size_t max);

    /* After a daemon restart, before the first poll(): known[0 .. n-1] are the
     * instances the daemon's records list as live (entries in other states
     * are ignored).  Writes to orphans (up to max) the instances the provider
     * still bills that known lacks, so that none keeps billing unseen (the
     * daemon releases or adopts them), and sets *norphans to how many there
     * are (more than max: call again with more room).  For known instances
     * whose state moved on while the daemon was not looking, it queues the
     * events the daemon missed (READY, PREEMPTED, RELEASED, LOST), returned by
     * the next poll(), never queueing an event that is already queued.
     * Returns 0, or -1 with a sentence in err. */
    int (*reconcile)(void *pv, const spw_instance_t *known, size_t n,
                     double now_s, spw_instance_t *orphans, size_t max,
                     size_t *norphans, spw_error_t *err);

    /* Frees the provider.  Its instances keep billing, so that a new provider
     * made over the same state can reconcile() them.  NULL-safe. */
    void (*destroy)(void *pv);

    /* (version 2) Writes the provider's current record of instance id to
     * *out, addr included (events carry no address: the daemon asks here
     * when an instance turns READY, and after a restart).  Returns 0, or -1
     * with errno ENOENT if the provider has no such instance.  Never
     * blocks. */
    int (*describe)(void *pv, const char *id, spw_instance_t *out, spw_error_t *err);

    /* ---- version 3: optional, NULL where the provider has no such thing
     * (check with SPW_PROVIDER_HAS) ---- */

    /* The admin command of an emulated cloud: preempts live instance
     * instance_id at now_s (spot or not), queueing a PREEMPTED event for
     * poll().  Returns 0, or -1 with a sentence in err and nothing changed:
     * errno ENOENT (no such instance), ESRCH (it has already ended) or the
     * errno of a failed save.  NULL for a real cloud. */
    int (*preempt)(void *pv, const char *instance_id, double now_s, spw_error_t *err);

    /* Deferred saves (on = 1): a change no longer writes the provider's
     * state at once; flush() does, when anything changed, so that the
     * daemon writes it once per turn, before its own commit.  What changed
     * after the last flush is lost to a crash (instances the daemon then no
     * longer finds in the provider's state are treated as gone); destroy()
     * flushes.  NULL (both) for a provider whose state is the cloud's. */
    void (*defer_saves)(void *pv, int on);

    /* Writes what changed since the last flush.  Returns 0 (also when
     * nothing changed), or -1 with a sentence in err (the state stays
     * marked as changed, for the next flush). */
    int (*flush)(void *pv, spw_error_t *err);

    /* ---- version 4: optional ---- */

    /* Writes to out (up to max) every instance the account holds that
     * carries this daemon's tags, live or not yet terminated, whether or
     * not the daemon has a record of it (`spillway instances`, the orphan
     * sweep at start), and sets *n to how many there are (more than max:
     * call again with more room).  May block on the network: the daemon
     * calls it from a thread of its own, never the scheduler's.  Returns 0,
     * or -1 with a sentence in err. */
    int (*list)(void *pv, spw_instance_t *out, size_t max, size_t *n, spw_error_t *err);

    /* Why the account cannot launch now (AuthFailure, UnauthorizedOperation,
     * OptInRequired: /healthz names it), written to why (size len); returns
     * 0 when it can.  Never blocks. */
    int (*health)(void *pv, char *why, size_t len);

    /* ---- version 5: optional ---- */

    /* The cloud's live spot prices, which the provider refreshes on its own
     * threads (EC2: DescribeSpotPriceHistory every spot_price_s): when any
     * changed since the last call, writes each offer's (usd_per_h[k] for
     * offer k, n = the offers' count; NAN = no live price, keep the
     * catalog's) and returns 1; else returns 0 and writes nothing.  Never
     * blocks. */
    int (*spot_prices)(void *pv, double *usd_per_h, size_t n);
};

#endif
