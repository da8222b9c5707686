/* config.h: the fleet and policy configuration file (YAML).
 *
 *   onprem:                      # a list of pools (or one pool as a map)
 *     - name: dc1
 *       nodes: 4
 *       gpus_per_node: 8
 *       gpu: A100                # optional model name
 *       cost_usd_per_gpu_h: 1.10
 *     - name: openb               # or: nodes from an Alibaba node list,
 *       nodes_from: FILE          # one pool per GPU model (openb-G2, ...)
 *   cloud:
 *     price_usd_per_gpu_h: 2.5   # a flat price, or instead:
 *     offers: FILE               # a catalog CSV (provider,region,zone,instance_type,gpu,gpus,...)
 *     providers: [aws, gcp]      # optional filters on the catalog
 *     regions: [us-east-1]
 *     boot_delay_s: 0
 *   policy:
 *     queue: fifo | sjf | priority
 *     scan: hol | skip
 *     backfill: none | easy
 *     fit: first | best
 *     wait: never | none | constant:S | runtime:K | compute:K
 *
 * Relative file names are taken from the directory of the config file. */
#ifndef SPW_SIM_CONFIG_H
#define SPW_SIM_CONFIG_H

#include "core/model.h"
#include "util/error.h"

typedef struct spw_config {
    spw_fleet_t fleet;      /* pools, offers and GPU model names (owned) */
    spw_policy_t policy;    /* scheduling policy */
    char *offers_path;      /* catalog file read, or NULL (owned) */
} spw_config_t;

/* Loads a config file.  On error nothing is left allocated and err names
 * FILE:LINE:COL and what to change. */
int spw_config_load(spw_config_t *cfg, const char *path, spw_error_t *err);
/* The same from memory; relative file names are taken from `base_dir`. */
int spw_config_load_mem(spw_config_t *cfg, const char *name, const char *data, size_t len,
                        const char *base_dir, spw_error_t *err);
void spw_config_free(spw_config_t *cfg);

/* Reads a cloud offer catalog CSV into fleet->offers (appending), keeping
 * rows whose provider and region pass the filters (NULL = all). */
int spw_offers_load(spw_fleet_t *fleet, const char *path, const char *const *providers,
                    const char *const *regions, double boot_delay_s, spw_error_t *err);

/* Adds pools from an Alibaba node list (columns `gpu` and `model`): one pool
 * per GPU model, named PREFIX-MODEL, nodes in file order. */
int spw_nodes_load(spw_fleet_t *fleet, const char *path, const char *prefix,
                   double cost_usd_per_gpu_h, spw_error_t *err);

#endif
