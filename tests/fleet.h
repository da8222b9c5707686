/* fleet.h: hand-built fleets for the governance tests (header-only, like
 * tap.h): pools of equal nodes, cloud offers, owned string lists. */
#ifndef SPW_TESTS_FLEET_H
#define SPW_TESTS_FLEET_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "core/model.h"

/* Adds a pool of nnodes nodes with gpus_each GPUs; model NULL = any. */
__attribute__((unused)) static int add_pool(spw_fleet_t *f, const char *name, uint32_t nnodes,
                                            uint16_t gpus_each, const char *model,
                                            double cost_usd_per_gpu_h)
{
    f->pools = spw_xrealloc(f->pools, (f->npools + 1) * sizeof(*f->pools));
    spw_pool_spec_t *p = &f->pools[f->npools];
    memset(p, 0, sizeof(*p));
    p->name = spw_xstrdup(name);
    p->nnodes = nnodes;
    p->node_gpus = spw_xmalloc(nnodes * sizeof(uint16_t));
    for (uint32_t k = 0; k < nnodes; k++)
        p->node_gpus[k] = gpus_each;
    p->model = model ? spw_models_intern(&f->models, model, strlen(model), NULL) : -1;
    p->cost_usd_per_gpu_h = cost_usd_per_gpu_h;
    return (int)f->npools++;
}

/* Adds a cloud offer; model NULL = any model; spot NAN = none. */
__attribute__((unused)) static int add_offer(spw_fleet_t *f, const char *provider,
                                             const char *region, const char *type,
                                             const char *model, uint32_t gpus, double usd_per_h,
                                             double spot_usd_per_h, double boot_delay_s)
{
    f->offers = spw_xrealloc(f->offers, (f->noffers + 1) * sizeof(*f->offers));
    spw_offer_t *o = &f->offers[f->noffers];
    memset(o, 0, sizeof(*o));
    o->provider = spw_xstrdup(provider);
    o->region = spw_xstrdup(region);
    o->zone = spw_xstrdup("");
    o->instance_type = spw_xstrdup(type);
    o->model = model ? spw_models_intern(&f->models, model, strlen(model), NULL) : -1;
    o->gpus = gpus;
    o->ondemand_usd_per_h = usd_per_h;
    o->spot_usd_per_h = spot_usd_per_h;
    o->boot_delay_s = boot_delay_s;
    return (int)f->noffers++;
}

/* An owned list of n strings (the gov spec frees it). */
__attribute__((unused)) static char **strv(size_t n, ...)
{
    char **v = spw_xmalloc((n ? n : 1) * sizeof(char *));
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        v[i] = spw_xstrdup(va_arg(ap, const char *));
    va_end(ap);
    return v;
}

#endif
