/* registry.c: providers by name (see registry.h). */
#include "providers/registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/aws/aws.h"
#include "providers/command/command.h"
#include "providers/emulated/emulated.h"
#include "util/names.h"

const char *const spw_provider_names[] = {"emulated", "command", "aws", NULL};

/* The value of option KEY ("KEY=value") in c->options, or NULL. */
static const char *option(const spw_provider_conf_t *c, const char *key)
{
    size_t n = strlen(key);
    for (size_t k = 0; c->options && c->options[k]; k++)
        if (strncmp(c->options[k], key, n) == 0 && c->options[k][n] == '=')
            return c->options[k] + n + 1;
    return NULL;
}

/* A number option in [lo, hi]: 0 (with *out, left alone when absent) or -1. */
static int num_option(const spw_provider_conf_t *c, const char *key, double lo, double hi,
                      double *out, spw_error_t *err)
{
    const char *v = option(c, key);
    if (!v)
        return 0;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        return spw_errorf(err, "account %s: %s must be a number from %g to %g, not '%.40s'",
                          c->name ? c->name : "emulated", key, lo, hi, v);
    *out = x;
    return 0;
}

static void *make_emulated(const spw_provider_conf_t *c, spw_error_t *err)
{
    /* An account's own capacity, preemption rate and seed (options) win
     * over daemon.emulated's, given through offer_emulation and seed. */
    double cap = NAN, rate = NAN, seed = (double)c->seed;
    if (num_option(c, "capacity", 0, 1e9, &cap, err) < 0 ||
        num_option(c, "preempt_rate_per_h", 0, 3600, &rate, err) < 0 ||
        num_option(c, "seed", 0, 9007199254740992.0, &seed, err) < 0)
        return NULL;
    spw_offer_emulation_t *oe = NULL;
    if (c->noffer_emulation) {
        oe = spw_xcalloc(c->noffer_emulation, sizeof(*oe));
        memcpy(oe, c->offer_emulation, c->noffer_emulation * sizeof(*oe));
        for (size_t k = 0; k < c->noffer_emulation; k++) {
            if (!isnan(cap))
                oe[k].capacity = (uint32_t)cap;
            if (!isnan(rate) && !oe[k].trace_path)
                oe[k].preempt_rate_per_h = rate;
        }
    }
    /* "refuse.ZONE=CODE" options become "ZONE=CODE" entries. */
    size_t nr = 0;
    for (size_t k = 0; c->options && c->options[k]; k++)
        nr++;
    const char **refuse = spw_xcalloc(nr + 1, sizeof(char *));
    nr = 0;
    for (size_t k = 0; c->options && c->options[k]; k++)
        if (strncmp(c->options[k], "refuse.", 7) == 0)
            refuse[nr++] = c->options[k] + 7;
    char prefix[SPW_INSTANCE_ACCOUNT_MAX + 4];
    if (c->name)
        snprintf(prefix, sizeof(prefix), "%.*s-i-", SPW_INSTANCE_ACCOUNT_MAX - 1, c->name);
    spw_emulated_opts_t eo = {.offers = c->offers,
                              .noffers = c->noffers,
                              .offer_opts = oe,
                              .noffer_opts = c->noffer_emulation,
                              .seed = (uint64_t)seed,
                              .state_dir = c->state_dir,
                              .boot_command = c->boot_command,
                              .hosts_dir = c->hosts_dir,
                              .id_prefix = c->name ? prefix : NULL,
                              .refuse = refuse};
    void *em = spw_emulated_create(&eo, err);
    free(oe);
    free(refuse);
    return em;
}

static void *make_command(const spw_provider_conf_t *c, spw_error_t *err)
{
    spw_command_opts_t co = {.name = c->name,
                             .daemon_id = c->daemon_id,
                             .offers = c->offers,
                             .noffers = c->noffers,
                             .options = c->options,
                             .dry_run = c->dry_run};
    return spw_command_create(&co, err);
}

static void *make_aws(const spw_provider_conf_t *c, spw_error_t *err)
{
    spw_aws_opts_t ao = {.name = c->name,
                         .offers = c->offers,
                         .noffers = c->noffers,
                         .daemon_id = c->daemon_id,
                         .regions = c->regions,
                         .endpoint_url = c->endpoint_url,
                         .dry_run = c->dry_run,
                         .options = c->options};
    return spw_aws_create(&ao, err);
}

/* In the order of spw_provider_names[]. */
static const struct {
    const struct spw_provider_ops *ops;
    void *(*make)(const spw_provider_conf_t *c, spw_error_t *err);
} registry[] = {
    {&spw_emulated_ops, make_emulated},
    {&spw_command_ops, make_command},
    {&spw_aws_ops, make_aws},
};
_Static_assert(sizeof(registry) / sizeof(registry[0]) ==
                   sizeof(spw_provider_names) / sizeof(spw_provider_names[0]) - 1,
               "one registry entry per name");

int spw_provider_create(const spw_provider_conf_t *c, const struct spw_provider_ops **ops,
                        void **pv, spw_error_t *err)
{
    int k = spw_names_find(spw_provider_names, c->type);
    if (k < 0) {
        char known[128];
        return spw_errorf(err, "unknown provider '%s' (known: %s)", c->type ? c->type : "",
                          spw_names_join(spw_provider_names, known, sizeof(known)));
    }
    void *made = registry[k].make(c, err);
    if (!made)
        return -1;
    *ops = registry[k].ops;
    *pv = made;
    return 0;
}
