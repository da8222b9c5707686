/* command.h: the command cloud provider (cloud.accounts[].type: command):
 * a site's own executables acquire, describe, release and list instances,
 * for shops that wrap Terraform, OpenStack or an internal cloud.  The
 * provider is asynchronous (ops.async = 1): every command runs on the
 * account's op thread, never on the scheduler's, and its answer comes back
 * through poll().
 *
 * The contract (docs/clouds.md has it with examples).  Each operation runs
 * `/bin/sh -c CMD` where CMD is the account's option of that name
 * (`acquire`, `describe`, `release`, `list`), or `COMMAND OP` from the
 * option `command` (one executable taking the operation as its argument).
 * It reads one JSON object on stdin and writes one on stdout; it has
 * `timeout_s` (default 60) to answer, after which its process group is
 * killed and the operation counts as failed.
 *
 *   acquire  in:  {"op":"acquire", "account", "token", "count", "spot",
 *                  "job", "ids":[spillway's id of each instance],
 *                  "offer":{"provider","region","zone","instance_type",
 *                           "gpus","price_usd_per_h"},
 *                  "tags":{"spillway:daemon","spillway:job","spillway:token"},
 *                  "dry_run"}
 *            out: {"instances":[{"id", "state":"booting"|"ready",
 *                                "addr"}]}    (count of them, in ids' order)
 *             or: {"error":{"code","message","block":"none"|"offer"|
 *                  "family"|"account"|"job","retry_after_s"}}
 *            The command must honour the token: asked again with a token it
 *            has answered (after a restart of the daemon), it answers with
 *            the same instances and buys nothing.  It should keep each
 *            instance's spillway id, token and job (as tags) for list.
 *   describe in:  {"op":"describe", "account", "ids":[the site's ids]}
 *            out: {"instances":[{"id", "state":"booting"|"ready"|
 *                  "terminated"|"preempted", "addr", "reason"}]}
 *            An id missing from the answer is gone (LOST).
 *   release  in:  {"op":"release", "account", "ids":[the site's ids]}
 *            out: anything; exit status 0 = released (asked again until
 *            it is).
 *   list     in:  {"op":"list", "account", "tags":{"spillway:daemon"}}
 *            out: {"instances":[{"id", "state", "addr", "spillway_id",
 *                  "job", "token", "instance_type", "zone", "spot"}]}
 *            Every instance the site holds with that daemon tag, whether or
 *            not the daemon has a record of it (orphans).  Optional.
 *
 * A command that exits non-zero without an "error" object is a passing
 * failure (block none: the daemon backs off and asks again); an acquire
 * answered with "block" rules out what it names for retry_after_s (the
 * daemon's blocked-offer cache).  Describe runs every
 * describe_interval_s (default 2) while instances are booting or live; an
 * instance still booting after boot_timeout_s (default 600) is released and
 * reported FAILED.  The provider keeps no state of its own: after a
 * restart, reconcile() takes the daemon's records, describes those the site
 * had answered, and finds those it had not through list (by spillway id). */
#ifndef SPW_PROVIDERS_COMMAND_H
#define SPW_PROVIDERS_COMMAND_H

#include <stddef.h>

#include "core/model.h"
#include "providers/provider.h"
#include "util/error.h"

typedef struct spw_command_opts {
    const char *name;           /* the account's name (messages, "account") */
    const char *daemon_id;      /* the spillway:daemon tag */
    const spw_offer_t *offers;  /* the fleet's offers, borrowed until destroy */
    size_t noffers;
    const char *const *options; /* NULL-terminated "key=value": command,
                                   acquire, describe, release, list,
                                   timeout_s, describe_interval_s,
                                   boot_timeout_s; user (the instances'
                                   login user) is the daemon's */
    int dry_run;                /* passed on as "dry_run" */
} spw_command_opts_t;

typedef struct spw_command spw_command_t;

/* Makes the provider, its op thread started; NULL with a sentence in err
 * (an unknown option, no command for acquire/describe/release). */
spw_command_t *spw_command_create(const spw_command_opts_t *o, spw_error_t *err);

extern const struct spw_provider_ops spw_command_ops;

#endif
