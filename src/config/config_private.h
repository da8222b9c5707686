/* config_private.h: what the files of src/config/ share: the loading context, cfg_at() and
 * the helpers of load.c, and the section readers load_doc calls.  Not for callers
 * outside src/config/ (they include config/config.h). */
#ifndef SPW_CONFIG_PRIVATE_H
#define SPW_CONFIG_PRIVATE_H

#include <stddef.h>

#include "config/config.h"
#include "util/error.h"
#include "util/yaml.h"

typedef struct ctx {
    spw_ydoc_t *d;
    const char *base_dir;
    spw_config_t *cfg;
    size_t nrates;          /* entries allocated in cfg->failures.mtbf_s / mttr_s */
} ctx_t;

/* load.c: helpers shared by the sections. */
/* Formats "NAME:LINE:COL: message" for node n into err; returns -1. */
int cfg_at(ctx_t *x, const spw_ynode_t *n, spw_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
char *cfg_resolve(const char *base_dir, const char *file);
void cfg_free_strs(char **v, size_t n);
int cfg_str_list(ctx_t *x, const spw_ynode_t *n, const char *what, const char ***out,
             spw_error_t *err);
int cfg_num_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, double hi,
            double *out, spw_error_t *err);
int cfg_owned_list(ctx_t *x, const spw_ynode_t *n, const char *key, const char *what,
               char ***out, size_t *cnt, spw_error_t *err);

/* daemon_conf.c: 0 when sb (of path, a `what` holding API tokens) is a
 * regular file owned by root or this process's user, with no group or
 * other permission bits; else -1 with a sentence saying how to fix it. */
struct stat;
int cfg_private_stat(const char *path, const char *what, const struct stat *sb,
                     spw_error_t *err);

/* fleet.c: onprem pools, their ssh: maps (also daemon.emulated.ssh), cloud. */
int cfg_pool_entry(ctx_t *x, const spw_ynode_t *n, size_t idx, spw_error_t *err);
int cfg_ssh_keys(ctx_t *x, const spw_ynode_t *m, const char *pool, spw_pool_backend_conf_t *b,
             spw_error_t *err);
int cfg_cloud_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
/* Frees b's kubernetes members (NULL-safe members). */
void cfg_free_kube(spw_pool_backend_conf_t *b);

/* accounts.c: cloud.accounts (a list), and freeing it. */
int cfg_accounts(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
void cfg_free_accounts(spw_config_t *cfg);

/* policy.c: policy, spot, failures (and the pools' mtbf / mttr), performance. */
int cfg_policy_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
void cfg_grow_rates(ctx_t *x);
int cfg_pool_rates(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err);
int cfg_spot_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_capacity_errors(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_failures_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_performance_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_perf_classes(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);

/* gov.c: governance sections; intern_name also for performance: classes. */
int cfg_intern_name(ctx_t *x, const spw_ynode_t *n, char ***tab, size_t *cnt, size_t max,
                const char *what, const char *name, spw_error_t *err);
int cfg_count_key(ctx_t *x, const spw_ynode_t *n, const char *key, long lo, double *out,
                  spw_error_t *err);
int cfg_teams_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_caps_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_residency_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_rules_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_data_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_sim_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);

/* fairshare.c: a team's quota, weight and cohort (into t, from team map
 * n), the cohorts section (before teams), and the checks of quotas
 * against the fleet once everything is read (file names the config). */
int cfg_team_fair(ctx_t *x, const spw_ynode_t *n, spw_team_spec_t *t, spw_error_t *err);
/* quota.pools of team map n into t->quota_pool_gpus (allocated only on
 * success: call it last, before t joins the teams). */
int cfg_team_pool_quotas(ctx_t *x, const spw_ynode_t *n, spw_team_spec_t *t, spw_error_t *err);
int cfg_cohorts_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_fair_validate(ctx_t *x, const char *file, spw_error_t *err);

/* daemon.c: the daemon section; user_value also for teams' run_as. */
void cfg_daemon_defaults(spw_daemon_conf_t *dc);
/* oidc_conf.c: daemon.oidc, and freeing it. */
int cfg_oidc_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
void cfg_oidc_free(spw_oidc_conf_t *oc);
int cfg_daemon_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err);
int cfg_user_value(ctx_t *x, const spw_ynode_t *n, const char *key, const char **out,
               spw_error_t *err);

#endif
