/* load.c: the one loader of the configuration file: checks the top-level keys and
 * reads each section in order; frees the config; checks the secrets' modes;
 * the helpers the section files share (cfg_at(), cfg_resolve(), number and list keys). */
#include <libgen.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "config/config_private.h"
#include "util/yaml.h"

/* ---- helpers -------------------------------------------------------------- */

char *cfg_resolve(const char *base_dir, const char *file)
{
    if (file[0] == '/' || !base_dir || !*base_dir || strcmp(base_dir, ".") == 0)
        return spw_xstrdup(file);
    size_t n = strlen(base_dir) + strlen(file) + 2;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s/%s", base_dir, file);
    return p;
}

/* Formats "NAME:LINE:COL: message" for node n into err; returns -1. */
int cfg_at(ctx_t *x, const spw_ynode_t *n, spw_error_t *err, const char *fmt, ...)
{
    char msg[sizeof(err->text)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return spw_errorf(err, "%s:%d:%d: %s", spw_ydoc_name(x->d), n ? n->line : 0, n ? n->col : 0, msg);
}

void cfg_free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Reads a list of strings (or one string) into a NULL-terminated array. */
int cfg_str_list(ctx_t *x, const spw_ynode_t *n, const char *what, const char ***out,
             spw_error_t *err)
{
    size_t cnt = n->kind == SPW_Y_SEQ ? n->n : 1;
    const char **v = spw_xcalloc(cnt + 1, sizeof(char *));
    for (size_t i = 0; i < cnt; i++)
        if (spw_ynode_str(x->d, n->kind == SPW_Y_SEQ ? n->items[i] : n, what, &v[i], err) < 0) {
            free(v);
            return -1;
        }
    *out = v;
    return 0;
}

/* A number >= lo (and <= hi) at key of map n, left as it is when absent. */
int cfg_num_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, double hi,
            double *out, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    double d;
    if (spw_ynode_double(x->d, v, key, &d, err) < 0)
        return -1;
    if (d < lo || d > hi)
        return cfg_at(x, v, err, "%s must be between %g and %g", key, lo, hi);
    *out = d;
    return 0;
}

/* A non-empty list of strings (or one string) at key of map n, copied
 * into *out / *cnt; left as they are when absent. */
int cfg_owned_list(ctx_t *x, const spw_ynode_t *n, const char *key, const char *what,
               char ***out, size_t *cnt, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    if (v->kind == SPW_Y_SEQ && v->n == 0)
        return cfg_at(x, v, err, "%s: an empty list %s nothing; leave the key out instead", key,
                  strncmp(key, "deny", 4) == 0 ? "denies" : "allows");
    const char **tmp;
    if (cfg_str_list(x, v, key, &tmp, err) < 0)
        return -1;
    size_t k = 0;
    while (tmp[k])
        k++;
    for (size_t i = 0; i < k; i++)
        if (!tmp[i][0]) {
            free(tmp);
            return cfg_at(x, v->kind == SPW_Y_SEQ ? v->items[i] : v, err, "%s: an empty %s name", key,
                      what);
        }
    char **own = spw_xcalloc(k, sizeof(char *));
    for (size_t i = 0; i < k; i++)
        own[i] = spw_xstrdup(tmp[i]);
    free(tmp);
    *out = own;
    *cnt = k;
    return 0;
}

/* ---- loading ------------------------------------------------------------------ */

static int load_doc(spw_config_t *cfg, spw_ydoc_t *d, const char *base_dir, spw_error_t *err)
{
    static const char *const keys[] = {"onprem", "cloud", "policy", "daemon", "spot", "failures",
                                       "teams", "caps", "rules", "residency", "data", "sim",
                                       "performance", "cohorts", NULL};
    memset(cfg, 0, sizeof(*cfg));
    spw_fleet_init(&cfg->fleet);
    spw_policy_default(&cfg->policy);
    cfg_daemon_defaults(&cfg->daemon);
    cfg->spot.seed = 1;
    cfg->spot.default_rate_per_h = -log(1 - 0.25) / 730;   /* ">20%": its midpoint, 25% */
    snprintf(cfg->spot.default_label, sizeof(cfg->spot.default_label), ">20%%");
    ctx_t x = {.d = d, .base_dir = base_dir, .cfg = cfg};
    spw_ynode_t *root = spw_ydoc_root(d);
    if (!root) {
        spw_errorf(err, "%s: the config is empty: it needs at least an 'onprem' section", spw_ydoc_name(d));
        goto error;
    }
    if (spw_ymap_check_keys(d, root, "the config", keys, err) < 0)
        goto error;
    const spw_ynode_t *on = spw_ymap_get(root, "onprem");
    if (on) {
        if (on->kind == SPW_Y_MAP) {
            if (cfg_pool_entry(&x, on, 0, err) < 0)
                goto error;
        } else if (on->kind == SPW_Y_SEQ) {
            for (size_t i = 0; i < on->n; i++)
                if (cfg_pool_entry(&x, on->items[i], i, err) < 0)
                    goto error;
        } else {
            cfg_at(&x, on, err, "%s", "onprem: expected a list of pools");
            goto error;
        }
        if (cfg->failures.mtbf_s)
            cfg_grow_rates(&x);
    }
    const spw_ynode_t *cn = spw_ymap_get(root, "cloud");
    if (cn && cfg_cloud_section(&x, cn, err) < 0)
        goto error;
    const spw_ynode_t *pn = spw_ymap_get(root, "policy");
    if (pn && cfg_policy_section(&x, pn, err) < 0)
        goto error;
    const spw_ynode_t *dn = spw_ymap_get(root, "daemon");
    if (dn && cfg_daemon_section(&x, dn, err) < 0)
        goto error;
    if (cfg->fleet.npools == 0 && cfg->fleet.noffers == 0) {
        spw_errorf(err, "%s: no on-prem pool and no cloud: add an 'onprem' or 'cloud' section",
                   spw_ydoc_name(d));
        goto error;
    }
    if (cfg_performance_section(&x, spw_ymap_get(root, "performance"), err) < 0)
        goto error;
    /* Spot capacity names offers and failures name pools: after the fleet. */
    const spw_ynode_t *sn = spw_ymap_get(root, "spot");
    if (sn && cfg_spot_section(&x, sn, err) < 0)
        goto error;
    const spw_ynode_t *fn = spw_ymap_get(root, "failures");
    if (fn && cfg_failures_section(&x, fn, err) < 0)
        goto error;
    /* Governance names pools, regions and GPU models, so it comes after
     * the fleet whatever the order in the file; residency before rules so
     * its classes take the first class indices. */
    static const struct {
        const char *key;
        int (*parse)(ctx_t *, const spw_ynode_t *, spw_error_t *);
    } gov_sections[] = {
        {"cohorts", cfg_cohorts_section},     {"teams", cfg_teams_section},
        {"caps", cfg_caps_section},
        {"residency", cfg_residency_section}, {"rules", cfg_rules_section},
        {"data", cfg_data_section},           {"sim", cfg_sim_section},
    };
    for (size_t i = 0; i < sizeof(gov_sections) / sizeof(gov_sections[0]); i++) {
        const spw_ynode_t *gn = spw_ymap_get(root, gov_sections[i].key);
        if (gn && gov_sections[i].parse(&x, gn, err) < 0)
            goto error;
    }
    if (cfg_perf_classes(&x, spw_ymap_get(root, "performance"), err) < 0)
        goto error;
    if (spw_gov_validate(&cfg->fleet.gov, &cfg->fleet, spw_ydoc_name(d), err) < 0 ||
        cfg_fair_validate(&x, spw_ydoc_name(d), err) < 0)
        goto error;
    spw_ydoc_destroy(d);
    return 0;
error:
    spw_ydoc_destroy(d);
    spw_config_free(cfg);
    return -1;
}

int spw_config_load(spw_config_t *cfg, const char *path, spw_error_t *err)
{
    memset(cfg, 0, sizeof(*cfg));
    spw_ydoc_t *d = spw_ydoc_load_file(path, err);
    if (!d)
        return -1;
    char *copy = spw_xstrdup(path);
    int rc = load_doc(cfg, d, dirname(copy), err);
    free(copy);
    if (rc == 0)
        cfg->daemon.config_path = spw_xstrdup(path);
    return rc;
}

int spw_config_load_mem(spw_config_t *cfg, const char *name, const char *data, size_t len,
                        const char *base_dir, spw_error_t *err)
{
    memset(cfg, 0, sizeof(*cfg));
    spw_ydoc_t *d = spw_ydoc_load_mem(name, data, len, err);
    if (!d)
        return -1;
    return load_doc(cfg, d, base_dir, err);
}

spw_policy_t spw_config_daemon_policy(const spw_config_t *cfg)
{
    spw_policy_t pol = cfg->policy;
    pol.reserve_extra_s = cfg->daemon.kill_grace_s + 2 * cfg->daemon.tick_s + 1;
    return pol;
}

void spw_config_free(spw_config_t *cfg)
{
    if (!cfg)
        return;
    spw_fleet_clear(&cfg->fleet);
    cfg_free_accounts(cfg);
    for (size_t i = 0; i < cfg->npool_backends; i++) {
        free(cfg->pool_backends[i].backend);
        free(cfg->pool_backends[i].partition);
        free(cfg->pool_backends[i].cluster);
        free(cfg->pool_backends[i].slurm_conf);
        cfg_free_strs(cfg->pool_backends[i].hosts, cfg->pool_backends[i].nhosts);
        free(cfg->pool_backends[i].ssh_user);
        free(cfg->pool_backends[i].ssh_key);
        free(cfg->pool_backends[i].ssh_known_hosts);
        cfg_free_kube(&cfg->pool_backends[i]);
    }
    free(cfg->pool_backends);
    cfg->pool_backends = NULL;
    cfg->npool_backends = 0;
    free(cfg->offers_path);
    cfg->offers_path = NULL;
    free(cfg->cloud_slurm_partition);
    cfg->cloud_slurm_partition = NULL;
    free(cfg->cloud_slurm_conf);
    cfg->cloud_slurm_conf = NULL;
    spw_daemon_conf_t *dc = &cfg->daemon;
    for (size_t i = 0; i < dc->ntokens; i++) {
        free(dc->tokens[i].name);
        free(dc->tokens[i].token);
        free(dc->tokens[i].team);
    }
    free(dc->tokens);
    for (size_t i = 0; i < dc->nteam_run_as; i++) {
        free(dc->team_run_as[i].team);
        free(dc->team_run_as[i].user);
    }
    free(dc->team_run_as);
    for (size_t i = 0; i < dc->njob_env; i++)
        free(dc->job_env[i]);
    free(dc->job_env);
    for (size_t i = 0; i < dc->nallowed_hosts; i++)
        free(dc->allowed_hosts[i]);
    free(dc->allowed_hosts);
    free(dc->run_as);
    free(dc->emulated_boot_command);
    free(dc->emulated_hosts_dir);
    free(dc->emulated_ssh_user);
    free(dc->emulated_ssh_key);
    free(dc->emulated_ssh_known_hosts);
    free(dc->cloud_ssh_user);
    free(dc->cloud_ssh_key);
    free(dc->cloud_ssh_known_hosts);
    free(dc->tokens_file);
    cfg_oidc_free(&dc->oidc);
    free(dc->tls_cert);
    free(dc->tls_key);
    free(dc->config_path);
    free(dc->listen);
    free(dc->state_dir);
    free(dc->log_dir);
    memset(dc, 0, sizeof(*dc));
    spw_spot_conf_t *sc = &cfg->spot;
    for (size_t i = 0; i < sc->navail; i++) {
        spw_spot_avail_conf_t *a = &sc->avail[i];
        free(a->provider);
        free(a->region);
        free(a->zone);
        free(a->instance_type);
        free(a->trace_path);
        spw_spot_trace_clear(&a->trace);
    }
    free(sc->avail);
    memset(sc, 0, sizeof(*sc));
    for (size_t i = 0; i < cfg->ncapacity_errors; i++) {
        spw_capacity_error_conf_t *c = &cfg->capacity_errors[i];
        free(c->provider);
        free(c->region);
        free(c->zone);
        free(c->instance_type);
        free(c->code);
    }
    free(cfg->capacity_errors);
    cfg->capacity_errors = NULL;
    cfg->ncapacity_errors = 0;
    spw_failure_conf_t *fc = &cfg->failures;
    free(fc->list);
    free(fc->mtbf_s);
    free(fc->mttr_s);
    memset(fc, 0, sizeof(*fc));
}

/* ---- secrets ------------------------------------------------------------- */

/* 0 when path is a regular file owned by root or the daemon's user that
 * no one but its owner may read or write. */
static int private_file(const char *path, const char *what, spw_error_t *err)
{
    struct stat sb;
    if (stat(path, &sb) < 0)
        return spw_errorf(err, "%s: cannot check the %s: %s", path, what, strerror(errno));
    return cfg_private_stat(path, what, &sb, err);
}

int spw_config_check_secrets(const spw_config_t *cfg, spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &cfg->daemon;
    if (dc->tokens_file && private_file(dc->tokens_file, "tokens file", err) < 0)
        return -1;
    if (dc->tls_key && private_file(dc->tls_key, "TLS private key", err) < 0)
        return -1;
    if (dc->ntokens_inline && dc->config_path &&
        private_file(dc->config_path, "config file", err) < 0)
        return -1;
    return 0;
}
