/* registry.c: providers by name (see registry.h). */
#include "providers/registry.h"

#include "providers/aws/aws.h"
#include "providers/command/command.h"
#include "providers/emulated/emulated.h"
#include "util/names.h"

const char *const spw_provider_names[] = {"emulated", "command", "aws", NULL};

static void *make_emulated(const spw_provider_conf_t *c, spw_error_t *err)
{
    spw_emulated_opts_t eo = {.offers = c->offers,
                              .noffers = c->noffers,
                              .offer_opts = c->offer_emulation,
                              .noffer_opts = c->noffer_emulation,
                              .seed = c->seed,
                              .state_dir = c->state_dir,
                              .boot_command = c->boot_command,
                              .hosts_dir = c->hosts_dir};
    return spw_emulated_create(&eo, err);
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
