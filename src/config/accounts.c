/* accounts.c: cloud.accounts, the cloud accounts the daemon buys from
 * (docs/clouds.md): each entry's common keys, and its type's own keys,
 * passed on to the provider as "key=value" options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"
#include "util/names.h"
#include "util/strbuf.h"
#include "util/yaml.h"

/* The shape of a type's own key, and how it becomes options. */
typedef enum {
    OPT_SCALAR,         /* "OPT=value" */
    OPT_SCALAR_OR_MAP,  /* a scalar as OPT_SCALAR, or a map as OPT_MAP */
    OPT_MAP,            /* "OPT.KEY=value" per pair */
    OPT_LIST,           /* "OPT=a,b,c" */
} opt_shape_t;

typedef struct {
    const char *type;   /* the account type that knows it */
    const char *key;    /* the config key */
    const char *opt;    /* the option name the provider reads
                           (providers/registry.h) */
    opt_shape_t shape;
} opt_key_t;

/* Each type's own keys, by type. */
static const opt_key_t type_keys[] = {
    {"aws", "image", "image", OPT_SCALAR_OR_MAP},     /* ami-, ssm:, or region -> ami */
    {"aws", "subnets", "subnet", OPT_MAP},            /* zone -> subnet id */
    {"aws", "security_groups", "security_groups", OPT_LIST},
    {"aws", "key_name", "key_name", OPT_SCALAR},
    {"aws", "ssh_user", "user", OPT_SCALAR},
    {"aws", "ssh_public_key", "ssh_public_key", OPT_SCALAR},
    {"aws", "address", "address", OPT_SCALAR},        /* public | private */
    {"aws", "profile", "profile", OPT_SCALAR},
    {"aws", "timeout_s", "timeout_s", OPT_SCALAR},
    {"aws", "describe_s", "describe_s", OPT_SCALAR},
    {"aws", "describe_page", "describe_page", OPT_SCALAR},
    {"aws", "threads", "threads", OPT_SCALAR},
    {"aws", "imds_url", "imds_url", OPT_SCALAR},      /* where hosts read spot notices */
    {"aws", "spot_price_s", "spot_price_s", OPT_SCALAR},  /* live spot price refresh */
    {"command", "command", "command", OPT_SCALAR},
    {"command", "ssh_user", "user", OPT_SCALAR},
    {"command", "timeout_s", "timeout_s", OPT_SCALAR},
    {"command", "describe_interval_s", "describe_interval_s", OPT_SCALAR},
    {"command", "boot_timeout_s", "boot_timeout_s", OPT_SCALAR},
    {"command", "acquire", "acquire", OPT_SCALAR},
    {"command", "describe", "describe", OPT_SCALAR},
    {"command", "release", "release", OPT_SCALAR},
    {"command", "list", "list", OPT_SCALAR},
    {"emulated", "capacity", "capacity", OPT_SCALAR},
    {"emulated", "preempt_rate_per_h", "preempt_rate_per_h", OPT_SCALAR},
    {"emulated", "seed", "seed", OPT_SCALAR},
    {"emulated", "refuse", "refuse", OPT_MAP},       /* zone ("*" = any) -> error code */
};
#define NTYPE_KEYS (sizeof(type_keys) / sizeof(type_keys[0]))

/* The types known; gcp and azure are refused as not yet supported. */
static const char *const types[] = {"aws", "command", "emulated", NULL};
static const char *const types_later[] = {"gcp", "azure", NULL};

static const char *const common_keys[] = {"name", "type", "regions", "max_instances",
                                          "max_usd_per_h", "dry_run", "endpoint_url", NULL};

static void add_opt(char ***opts, size_t *n, const char *opt, const char *sub, const char *val)
{
    *opts = spw_xrealloc(*opts, (*n + 2) * sizeof(char *));
    size_t len = strlen(opt) + (sub ? strlen(sub) + 1 : 0) + strlen(val) + 2;
    char *s = spw_xmalloc(len);
    snprintf(s, len, "%s%s%s=%s", opt, sub ? "." : "", sub ? sub : "", val);
    (*opts)[(*n)++] = s;
    (*opts)[*n] = NULL;
}

/* A value of type-specific key k at v into options; "key=value" strings
 * hold no '=' in keys nor ',' in list items. */
static int type_opt(ctx_t *x, const opt_key_t *k, const spw_ynode_t *v, spw_account_conf_t *a,
                    size_t *nopt, spw_error_t *err)
{
    const char *s;
    if (v->kind == SPW_Y_MAP && (k->shape == OPT_MAP || k->shape == OPT_SCALAR_OR_MAP)) {
        if (v->n == 0)
            return cfg_at(x, v, err, "cloud.accounts[%s].%s: an empty map; leave the key out "
                          "instead", a->name, k->key);
        for (size_t i = 0; i < v->n; i++) {
            if (spw_ynode_str(x->d, v->items[i], k->key, &s, err) < 0)
                return -1;
            if (!v->keys[i][0] || strchr(v->keys[i], '=') || !s[0])
                return cfg_at(x, v->items[i], err, "cloud.accounts[%s].%s: expected NAME: VALUE "
                              "pairs with names and values that are not empty (and names "
                              "without '=')", a->name, k->key);
            add_opt(&a->options, nopt, k->opt, v->keys[i], s);
        }
        return 0;
    }
    if (k->shape == OPT_LIST) {
        const char **l;
        if (cfg_str_list(x, v, k->key, &l, err) < 0)
            return -1;
        spw_strbuf_t b = {0};
        for (size_t i = 0; l[i]; i++) {
            if (!l[i][0] || strchr(l[i], ',')) {
                free(l);
                free(b.s);
                return cfg_at(x, v, err, "cloud.accounts[%s].%s: expected names that are not "
                              "empty and hold no ','", a->name, k->key);
            }
            spw_strbuf_printf(&b, "%s%s", i ? "," : "", l[i]);
        }
        free(l);
        add_opt(&a->options, nopt, k->opt, NULL, b.s ? b.s : "");
        free(b.s);
        return 0;
    }
    if (k->shape == OPT_MAP)
        return cfg_at(x, v, err, "cloud.accounts[%s].%s: expected a map (NAME: VALUE)", a->name,
                      k->key);
    if (spw_ynode_str(x->d, v, k->key, &s, err) < 0)
        return -1;
    add_opt(&a->options, nopt, k->opt, NULL, s);
    return 0;
}

/* Account names go into instance ids and records: short, and plain. */
static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SPW_ACCOUNT_NAME_MAX)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_'))
            return 0;
    return 1;
}

static int account_entry(ctx_t *x, const spw_ynode_t *n, spw_account_conf_t *a, spw_error_t *err)
{
    const char *s;
    a->line = n->line;
    if (n->kind != SPW_Y_MAP)
        return spw_ymap_check_keys(x->d, n, "cloud.accounts entry", common_keys, err);
    const spw_ynode_t *nn = spw_ymap_get(n, "name"), *tn = spw_ymap_get(n, "type");
    if (!nn || !tn)
        return cfg_at(x, n, err, "a cloud.accounts entry needs a name and a type (aws, command "
                      "or emulated)");
    if (spw_ynode_str(x->d, nn, "name", &s, err) < 0)
        return -1;
    if (!name_ok(s))
        return cfg_at(x, nn, err, "cloud.accounts: name '%.40s' must be 1 to %d letters, digits, "
                      "'-' or '_'", s, SPW_ACCOUNT_NAME_MAX);
    a->name = spw_xstrdup(s);
    if (spw_ynode_str(x->d, tn, "type", &s, err) < 0)
        return -1;
    if (spw_names_find(types_later, s) >= 0)
        return cfg_at(x, tn, err, "cloud.accounts[%s]: type %s is not yet supported (aws, "
                      "command and emulated are)", a->name, s);
    if (spw_names_find(types, s) < 0)
        return cfg_at(x, tn, err, "cloud.accounts[%s]: unknown type '%.40s' (known: aws, "
                      "command, emulated)", a->name, s);
    a->type = spw_xstrdup(s);
    /* The keys this type knows: the common ones and its own. */
    const char *known[32];
    size_t nk = 0;
    for (size_t i = 0; common_keys[i]; i++)
        known[nk++] = common_keys[i];
    for (size_t k = 0; k < NTYPE_KEYS; k++)
        if (strcmp(type_keys[k].type, a->type) == 0)
            known[nk++] = type_keys[k].key;
    known[nk] = NULL;
    char section[64];
    snprintf(section, sizeof(section), "cloud.accounts[%s] (type %s)", a->name, a->type);
    if (spw_ymap_check_keys(x->d, n, section, known, err) < 0)
        return -1;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(n, "regions"))) {
        size_t cnt;
        if (cfg_owned_list(x, n, "regions", "region", &a->regions, &cnt, err) < 0)
            return -1;
        a->regions = spw_xrealloc(a->regions, (cnt + 1) * sizeof(char *));
        a->regions[cnt] = NULL;
    }
    double mi = 0;
    if (cfg_num_key(x, n, "max_instances", 0, 1e6, &mi, err) < 0 ||
        cfg_num_key(x, n, "max_usd_per_h", 0, 1e9, &a->max_usd_per_h, err) < 0)
        return -1;
    if (mi != (double)(uint32_t)mi)
        return cfg_at(x, spw_ymap_get(n, "max_instances"), err,
                      "max_instances must be a whole number");
    a->max_instances = (uint32_t)mi;
    if ((v = spw_ymap_get(n, "dry_run")) && spw_ynode_bool(x->d, v, "dry_run", &a->dry_run, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "endpoint_url"))) {
        if (spw_ynode_str(x->d, v, "endpoint_url", &s, err) < 0)
            return -1;
        if (strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0)
            return cfg_at(x, v, err, "cloud.accounts[%s].endpoint_url: expected an http:// or "
                          "https:// URL", a->name);
        a->endpoint_url = spw_xstrdup(s);
    }
    size_t nopt = 0;
    for (size_t k = 0; k < NTYPE_KEYS; k++)
        if (strcmp(type_keys[k].type, a->type) == 0 && (v = spw_ymap_get(n, type_keys[k].key)) &&
            type_opt(x, &type_keys[k], v, a, &nopt, err) < 0)
            return -1;
    return 0;
}

void cfg_free_accounts(spw_config_t *cfg)
{
    for (size_t i = 0; i < cfg->naccounts; i++) {
        spw_account_conf_t *a = &cfg->accounts[i];
        free(a->name);
        free(a->type);
        for (size_t k = 0; a->regions && a->regions[k]; k++)
            free(a->regions[k]);
        free(a->regions);
        free(a->endpoint_url);
        for (size_t k = 0; a->options && a->options[k]; k++)
            free(a->options[k]);
        free(a->options);
    }
    free(cfg->accounts);
    cfg->accounts = NULL;
    cfg->naccounts = 0;
}

int cfg_accounts(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    if (n->kind != SPW_Y_SEQ || n->n == 0)
        return cfg_at(x, n, err, "cloud.accounts: expected a list of accounts (name, type, ...)");
    if (n->n > SPW_MAX_ACCOUNTS)
        return cfg_at(x, n, err, "cloud.accounts: at most %d accounts", SPW_MAX_ACCOUNTS);
    spw_config_t *cfg = x->cfg;
    cfg->accounts = spw_xcalloc(n->n, sizeof(spw_account_conf_t));
    for (size_t i = 0; i < n->n; i++) {
        cfg->naccounts = i + 1;
        if (account_entry(x, n->items[i], &cfg->accounts[i], err) < 0)
            goto error;
        for (size_t k = 0; k < i; k++)
            if (strcmp(cfg->accounts[k].name, cfg->accounts[i].name) == 0) {
                cfg_at(x, n->items[i], err, "cloud.accounts: a second account named %s (the "
                       "first is at line %d); names must be unique", cfg->accounts[i].name,
                       cfg->accounts[k].line);
                goto error;
            }
    }
    return 0;
error:
    cfg_free_accounts(cfg);
    return -1;
}
