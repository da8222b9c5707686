/* registry.h: providers by name, the only place that names a concrete
 * provider: the daemon makes each cloud account of its config (its `type`)
 * here, and uses it through struct spw_provider_ops alone (provider.h;
 * SPW_PROVIDER_HAS tells what a provider can do). */
#ifndef SPW_PROVIDERS_REGISTRY_H
#define SPW_PROVIDERS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "providers/provider.h"
#include "util/error.h"

/* What any provider may need; each takes the members it knows and ignores
 * the others.  offers are borrowed until the provider is destroyed,
 * everything else for the call only. */
typedef struct spw_provider_conf {
    const char *type;           /* one of spw_provider_names */
    const spw_offer_t *offers;  /* the fleet's offers, which requests and
                                   instances name by index */
    size_t noffers;             /* entries in offers */
    const char *state_dir;      /* existing directory, private to the daemon,
                                   where the provider keeps what it must
                                   remember across restarts (emulated:
                                   emulated.json, locked); NULL = memory
                                   only */
    const spw_offer_emulation_t *offer_emulation; /* emulated: how each offer
                                   behaves (capacity, preemptions), at most
                                   one entry per offer */
    size_t noffer_emulation;    /* entries in offer_emulation */
    uint64_t seed;              /* emulated: seeds the preemption draws
                                   (a saved generator wins) */
    const char *boot_command;   /* emulated: instances as real hosts, a
                                   program run as `CMD add HOSTS_DIR ID`
                                   and `CMD del HOSTS_DIR ID`; NULL =
                                   instances are records only */
    const char *hosts_dir;      /* emulated: HOSTS_DIR of boot_command;
                                   required with it */
    /* ---- cloud accounts (cloud.accounts[] in docs/clouds.md) ---- */
    const char *name;           /* the account's name (unique in the config);
                                   NULL = the default emulated account
                                   (emulated: ids start "NAME-i-" rather
                                   than "emu-i-") */
    const char *daemon_id;      /* the daemon's id, tagged on what it buys
                                   (spillway:daemon) so that list() finds
                                   this daemon's instances only */
    const char *const *regions; /* NULL-terminated regions the account may
                                   use; NULL = those of its offers */
    const char *endpoint_url;   /* aws/gcp/azure: the API endpoint instead of
                                   the cloud's (a fake, a private endpoint);
                                   NULL = the standard one (AWS also honours
                                   AWS_ENDPOINT_URL_EC2 and AWS_ENDPOINT_URL) */
    int dry_run;                /* 1: mutating calls are permission checks
                                   only (EC2 DryRun=true): nothing is bought */
    const char *const *options; /* NULL-terminated "key=value" strings the
                                   type reads (aws: image or image.REGION,
                                   subnet.ZONE, security_groups (a,b),
                                   key_name, user, ssh_public_key; command:
                                   acquire, describe, release, list;
                                   emulated: capacity, preempt_rate_per_h,
                                   seed, refuse.ZONE=CODE), NULL = none */
} spw_provider_conf_t;

/* The provider of a daemon whose config names no cloud account: the
 * emulated cloud, whose instances are records (or namespaces with sshd). */
#define SPW_PROVIDER_DEFAULT "emulated"

/* The names known, NULL-terminated, for messages. */
extern const char *const spw_provider_names[];

/* Makes the provider named c->type: 0 with *ops and *pv (free with
 * (*ops)->destroy), or -1 with a sentence in err (an unknown name, which
 * lists the known ones; bad options) and nothing made. */
int spw_provider_create(const spw_provider_conf_t *c, const struct spw_provider_ops **ops,
                        void **pv, spw_error_t *err);

#endif
