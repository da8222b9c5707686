/* registry.c: providers by name (see registry.h). */
#include "providers/registry.h"

#include <stdio.h>
#include <string.h>

#include "providers/emulated/emulated.h"

const char *const spw_provider_names[] = {"emulated", NULL};

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

static const struct {
    const char *name;
    const struct spw_provider_ops *ops;
    void *(*make)(const spw_provider_conf_t *c, spw_error_t *err);
} registry[] = {
    {"emulated", &spw_emulated_ops, make_emulated},
};

int spw_provider_create(const spw_provider_conf_t *c, const struct spw_provider_ops **ops,
                        void **pv, spw_error_t *err)
{
    for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++) {
        if (!c->type || strcmp(registry[i].name, c->type) != 0)
            continue;
        void *p = registry[i].make(c, err);
        if (!p)
            return -1;
        *ops = registry[i].ops;
        *pv = p;
        return 0;
    }
    char known[128] = "";
    for (size_t i = 0; spw_provider_names[i]; i++)
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
                 spw_provider_names[i]);
    return spw_errorf(err, "unknown provider '%s' (known: %s)", c->type ? c->type : "", known);
}
