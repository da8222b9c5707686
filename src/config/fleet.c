/* fleet.c: the fleet: onprem pools (counts, node lists, owned: costs, local / slurm / ssh
 * backends), the cloud section, the offer catalog and node list CSVs. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"
#include "sim/trace.h"
#include "util/csv.h"
#include "util/file.h"
#include "util/numparse.h"
#include "util/strbuf.h"
#include "util/yaml.h"

/* ---- helpers -------------------------------------------------------------- */

static spw_pool_spec_t *add_pool(spw_fleet_t *f, const char *name)
{
    f->pools = spw_xrealloc(f->pools, (f->npools + 1) * sizeof(spw_pool_spec_t));
    spw_pool_spec_t *p = &f->pools[f->npools++];
    memset(p, 0, sizeof(*p));
    p->name = spw_xstrdup(name);
    p->model = -1;
    return p;
}

static int in_list(const char *const *list, const char *s, size_t n)
{
    if (!list)
        return 1;
    for (; *list; list++)
        if (strlen(*list) == n && strncmp(*list, s, n) == 0)
            return 1;
    return 0;
}

static char *dup_field(const spw_csv_t *c, int i)
{
    if (i < 0)
        return spw_xstrdup("");
    char *s = spw_xmalloc(c->field_len[i] + 1);
    memcpy(s, c->field[i], c->field_len[i]);
    s[c->field_len[i]] = '\0';
    return s;
}

/* ---- offer catalog --------------------------------------------------------- */

int spw_offers_load(spw_fleet_t *fleet, const char *path, const char *const *providers,
                    const char *const *regions, double boot_delay_s, spw_error_t *err)
{
    static const char *const need[] = {"provider", "region", "instance_type", "gpu", "gpus",
                                       "ondemand_usd_per_h"};
    enum { O_PROV, O_REGION, O_TYPE, O_GPU, O_GPUS, O_OD, O_N };
    spw_csv_t c;
    if (spw_csv_open(&c, path, err) < 0)
        return -1;
    size_t start = fleet->noffers;
    int models_before = fleet->models.n;
    int col[O_N], zone, spot, r = spw_csv_next(&c, err);
    if (r <= 0) {
        if (r == 0)
            spw_errorf(err, "%s: empty file: expected a header line", path);
        goto error;
    }
    for (int k = 0; k < O_N; k++)
        if ((col[k] = spw_csv_field_index(&c, need[k])) < 0) {
            spw_errorf(err, "%s:%ld: missing column '%s' in the offer catalog", path, c.line, need[k]);
            goto error;
        }
    zone = spw_csv_field_index(&c, "zone");
    spot = spw_csv_field_index(&c, "spot_usd_per_h");
    size_t ncol = c.nfields;
    while ((r = spw_csv_next(&c, err)) == 1) {
        if (c.nfields != ncol) {
            spw_errorf(err, "%s:%ld: expected %zu fields like the header, got %zu", path, c.line,
                       ncol, c.nfields);
            goto error;
        }
        if (!in_list(providers, c.field[col[O_PROV]], c.field_len[col[O_PROV]])
            || !in_list(regions, c.field[col[O_REGION]], c.field_len[col[O_REGION]]))
            continue;
        int64_t gpus;
        double od, sp = NAN;
        if (spw_parse_i64(c.field[col[O_GPUS]], c.field_len[col[O_GPUS]], &gpus) < 0 || gpus < 1
            || gpus > SPW_MAX_NODE_GPUS) {
            spw_errorf(err, "%s:%ld: column 'gpus': expected a whole number from 1 to %d", path,
                       c.line, SPW_MAX_NODE_GPUS);
            goto error;
        }
        if (spw_parse_double(c.field[col[O_OD]], c.field_len[col[O_OD]], &od) < 0 || od < 0) {
            spw_errorf(err, "%s:%ld: column 'ondemand_usd_per_h': expected a price >= 0", path,
                       c.line);
            goto error;
        }
        if (spot >= 0 && c.field_len[spot]
            && (spw_parse_double(c.field[spot], c.field_len[spot], &sp) < 0 || sp < 0)) {
            spw_errorf(err, "%s:%ld: column 'spot_usd_per_h': expected a price >= 0 or nothing",
                       path, c.line);
            goto error;
        }
        int m = spw_models_intern(&fleet->models, c.field[col[O_GPU]], c.field_len[col[O_GPU]], err);
        if (m < 0)
            goto error;
        fleet->offers = spw_xrealloc(fleet->offers, (fleet->noffers + 1) * sizeof(spw_offer_t));
        spw_offer_t *o = &fleet->offers[fleet->noffers++];
        *o = (spw_offer_t){0};
        o->provider = dup_field(&c, col[O_PROV]);
        o->region = dup_field(&c, col[O_REGION]);
        o->zone = dup_field(&c, zone);
        o->instance_type = dup_field(&c, col[O_TYPE]);
        o->model = m;
        o->gpus = (uint32_t)gpus;
        o->ondemand_usd_per_h = od;
        o->spot_usd_per_h = sp;
        o->boot_delay_s = boot_delay_s;
    }
    if (r < 0)
        goto error;
    spw_csv_close(&c);
    return 0;
error:
    for (size_t i = start; i < fleet->noffers; i++)
        spw_offer_clear(&fleet->offers[i]);
    fleet->noffers = start;
    spw_models_truncate(&fleet->models, models_before);
    spw_csv_close(&c);
    return -1;
}

/* ---- node lists ------------------------------------------------------------ */

int spw_nodes_load(spw_fleet_t *fleet, const char *path, const char *prefix,
                   double cost_usd_per_gpu_h, spw_error_t *err)
{
    spw_csv_t c;
    if (spw_csv_open(&c, path, err) < 0)
        return -1;
    size_t start = fleet->npools;
    int models_before = fleet->models.n;
    int r = spw_csv_next(&c, err), cg, cm;
    if (r <= 0) {
        if (r == 0)
            spw_errorf(err, "%s: empty file: expected a header line", path);
        goto error;
    }
    if ((cg = spw_csv_field_index(&c, "gpu")) < 0 || (cm = spw_csv_field_index(&c, "model")) < 0) {
        spw_errorf(err, "%s:%ld: a node list needs columns 'gpu' and 'model'", path, c.line);
        goto error;
    }
    size_t ncol = c.nfields;
    while ((r = spw_csv_next(&c, err)) == 1) {
        if (c.nfields != ncol) {
            spw_errorf(err, "%s:%ld: expected %zu fields like the header, got %zu", path, c.line,
                       ncol, c.nfields);
            goto error;
        }
        int64_t g;
        if (spw_parse_i64(c.field[cg], c.field_len[cg], &g) < 0 || g < 0 || g > SPW_MAX_NODE_GPUS) {
            spw_errorf(err, "%s:%ld: column 'gpu': expected a whole number from 0 to %d", path,
                       c.line, SPW_MAX_NODE_GPUS);
            goto error;
        }
        if (g == 0)
            continue;
        size_t mlen;
        const char *mname = spw_alibaba_model(c.field[cm], c.field_len[cm], &mlen);
        if (mlen == 0) {
            mname = "unknown";
            mlen = strlen(mname);
        }
        int m = spw_models_intern(&fleet->models, mname, mlen, err);
        if (m < 0)
            goto error;
        spw_pool_spec_t *p = NULL;
        for (size_t i = start; i < fleet->npools; i++)
            if (fleet->pools[i].model == m)
                p = &fleet->pools[i];
        if (!p) {
            char name[128];
            snprintf(name, sizeof(name), "%s-%s", prefix, fleet->models.name[m]);
            p = add_pool(fleet, name);
            p->model = m;
            p->cost_usd_per_gpu_h = cost_usd_per_gpu_h;
        }
        p->node_gpus = spw_xrealloc(p->node_gpus, (p->nnodes + 1) * sizeof(uint16_t));
        p->node_gpus[p->nnodes++] = (uint16_t)g;
    }
    if (r < 0)
        goto error;
    if (fleet->npools == start) {
        spw_errorf(err, "%s: no node with GPUs", path);
        goto error;
    }
    spw_csv_close(&c);
    return 0;
error:
    for (size_t i = start; i < fleet->npools; i++)
        spw_pool_spec_clear(&fleet->pools[i]);
    fleet->npools = start;
    spw_models_truncate(&fleet->models, models_before);
    spw_csv_close(&c);
    return -1;
}

/* ---- onprem pools ---------------------------------------------------------- */

/* An ssh pool's hosts: `hosts: [a, b]` or `hosts_file: FILE` (one host per
 * line; blank lines and # comments skipped).  0 with *out (caller frees
 * with free_strs) and *n >= 1, or -1 with err. */
static int ssh_hosts(ctx_t *x, const spw_ynode_t *n, const char *pool, char ***out, size_t *nout,
                     spw_error_t *err)
{
    const spw_ynode_t *hn = spw_ymap_get(n, "hosts"), *fn = spw_ymap_get(n, "hosts_file");
    char **v = NULL;
    size_t cnt = 0;
    if (!hn == !fn)
        return cfg_at(x, n, err, "pool '%s': an ssh pool needs 'hosts: [HOST, ...]' or "
                             "'hosts_file: FILE' (one of them)", pool);
    if (hn) {
        size_t k = hn->kind == SPW_Y_SEQ ? hn->n : 1;
        v = spw_xcalloc(k ? k : 1, sizeof(char *));
        for (size_t i = 0; i < k; i++) {
            const char *h;
            if (spw_ynode_str(x->d, hn->kind == SPW_Y_SEQ ? hn->items[i] : hn, "hosts", &h,
                              err) < 0) {
                cfg_free_strs(v, cnt);
                return -1;
            }
            v[cnt++] = spw_xstrdup(h);
        }
    } else {
        const char *f;
        if (spw_ynode_str(x->d, fn, "hosts_file", &f, err) < 0)
            return -1;
        char *path = cfg_resolve(x->base_dir, f);
        size_t len;
        spw_error_t e2;
        char *text = spw_read_file(path, &len, &e2);
        free(path);
        if (!text)
            return cfg_at(x, fn, err, "pool '%s': %s", pool, e2.text);
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            line += strspn(line, " \t\r");
            size_t l = strcspn(line, " \t\r#");
            if (l == 0)
                continue;
            v = spw_xrealloc(v, (cnt + 1) * sizeof(char *));
            v[cnt] = spw_xmalloc(l + 1);
            memcpy(v[cnt], line, l);
            v[cnt++][l] = '\0';
        }
        free(text);
    }
    if (cnt == 0 || cnt > 256) {
        cfg_free_strs(v, cnt);
        return cfg_at(x, hn ? hn : fn, err, "pool '%s': an ssh pool needs 1 to 256 hosts", pool);
    }
    for (size_t i = 0; i < cnt; i++)
        if (!v[i][0] || v[i][0] == '-' || strpbrk(v[i], " \t,'\"\\;&|$`")) {
            spw_error_t e2;
            spw_errorf(&e2, "pool '%s': '%s' is not a host name or address", pool, v[i]);
            cfg_free_strs(v, cnt);
            return cfg_at(x, hn ? hn : fn, err, "%s", e2.text);
        }
    *out = v;
    *nout = cnt;
    return 0;
}

/* One pool (or the pools of one node list), then its mtbf / mttr. */
static int pool_fleet(ctx_t *x, const spw_ynode_t *n, size_t idx, spw_error_t *err)
{
    static const char *const keys[] = {"name", "nodes", "gpus_per_node", "gpu",
                                       "cost_usd_per_gpu_h", "owned", "nodes_from", "mtbf",
                                       "mttr", "backend", "partition", "cluster", "slurm_conf",
                                       "hosts", "hosts_file", "ssh", "kubeconfig", "context",
                                       "namespace", "node_selector", "tolerations",
                                       "priority_class", "local_queue", "image", "kill_grace_s",
                                       "ttl_after_finished_s", NULL};
    spw_fleet_t *f = &x->cfg->fleet;
    if (spw_ymap_check_keys(x->d, n, "onprem pool", keys, err) < 0)
        return -1;
    const char *name = NULL, *from = NULL, *gpu = NULL;
    char defname[32];
    double cost = 0;
    long nodes = 0, gpn = 0;
    if (spw_ymap_get(n, "name") && spw_ynode_str(x->d, spw_ymap_get(n, "name"), "name", &name, err) < 0)
        return -1;
    if (!name) {
        snprintf(defname, sizeof(defname), "pool%zu", idx + 1);
        name = defname;
    }
    for (size_t i = 0; i < f->npools; i++)
        if (strcmp(f->pools[i].name, name) == 0)
            return cfg_at(x, n, err, "two on-prem pools are named '%s'", name);
    if (spw_ymap_get(n, "cost_usd_per_gpu_h")
        && spw_ynode_double(x->d, spw_ymap_get(n, "cost_usd_per_gpu_h"), "cost_usd_per_gpu_h", &cost, err) < 0)
        return -1;
    if (cost < 0)
        return cfg_at(x, spw_ymap_get(n, "cost_usd_per_gpu_h"), err,
                  "pool '%s': cost_usd_per_gpu_h must be >= 0", name);
    if (spw_ymap_get(n, "nodes_from")) {
        if (spw_ymap_get(n, "nodes") || spw_ymap_get(n, "gpus_per_node") || spw_ymap_get(n, "gpu"))
            return cfg_at(x, n, err, "pool '%s': nodes_from replaces nodes, gpus_per_node and gpu; "
                                 "give one or the other", name);
        if (spw_ynode_str(x->d, spw_ymap_get(n, "nodes_from"), "nodes_from", &from, err) < 0)
            return -1;
        char *path = cfg_resolve(x->base_dir, from);
        spw_error_t e2;
        int rc = spw_nodes_load(f, path, name, cost, &e2);
        free(path);
        if (rc < 0)
            return cfg_at(x, spw_ymap_get(n, "nodes_from"), err, "%s", e2.text);
        return 0;
    }
    const spw_ynode_t *nn = spw_ymap_get(n, "nodes"), *gn = spw_ymap_get(n, "gpus_per_node");
    const spw_ynode_t *bk = spw_ymap_get(n, "backend");
    if (bk && bk->kind == SPW_Y_SCALAR && strcmp(bk->str, "local") != 0 &&
        strcmp(bk->str, "slurm") != 0 && strcmp(bk->str, "ssh") != 0 &&
        strcmp(bk->str, "kubernetes") != 0)
        return cfg_at(x, bk, err, "pool '%s': unknown backend '%s' (known: local, slurm, ssh, "
                  "kubernetes)", name, bk->str);
    if (bk && bk->kind == SPW_Y_SCALAR && !nn && !gn &&
        (strcmp(bk->str, "slurm") == 0 || strcmp(bk->str, "kubernetes") == 0)) {
        /* A Slurm or Kubernetes pool's nodes are read from the cluster when
         * the daemon starts; until then (and in `sim`) it is one node of
         * one GPU. */
        spw_pool_spec_t *p = add_pool(f, name);
        p->nnodes = 1;
        p->node_gpus = spw_xmalloc(sizeof(uint16_t));
        p->node_gpus[0] = 1;
        p->model = -1;
        p->cost_usd_per_gpu_h = cost;
        if (spw_ymap_get(n, "gpu")) {
            if (spw_ynode_str(x->d, spw_ymap_get(n, "gpu"), "gpu", &gpu, err) < 0)
                return -1;
            spw_error_t e2;
            if ((p->model = spw_models_intern(&f->models, gpu, strlen(gpu), &e2)) < 0)
                return cfg_at(x, spw_ymap_get(n, "gpu"), err, "%s", e2.text);
        }
        return 0;
    }
    if (bk && bk->kind == SPW_Y_SCALAR && strcmp(bk->str, "ssh") == 0) {
        /* An ssh pool has one node per host; GPUs detected on each host at
         * daemon start unless gpus_per_node says (1 until then). */
        char **hl = NULL;
        size_t nh = 0;
        if (ssh_hosts(x, n, name, &hl, &nh, err) < 0)
            return -1;
        cfg_free_strs(hl, nh);
        if (nn && (spw_ynode_int(x->d, nn, "nodes", &nodes, err) < 0 || nodes != (long)nh))
            return cfg_at(x, nn, err, "pool '%s': an ssh pool has one node per host (%zu); leave "
                                  "out 'nodes'", name, nh);
        nodes = (long)nh;
        gpn = 1;
        if (gn && spw_ynode_int(x->d, gn, "gpus_per_node", &gpn, err) < 0)
            return -1;
        nn = n;
        gn = gn ? gn : n;
    } else {
        if (!nn)
            return cfg_at(x, n, err, "pool '%s': missing 'nodes' (how many nodes the pool has)", name);
        if (!gn)
            return cfg_at(x, n, err, "pool '%s': missing 'gpus_per_node'", name);
        if (spw_ynode_int(x->d, nn, "nodes", &nodes, err) < 0
            || spw_ynode_int(x->d, gn, "gpus_per_node", &gpn, err) < 0)
            return -1;
    }
    if (nodes <= 0 || nodes > 10000000)
        return cfg_at(x, nn, err, "pool '%s': nodes must be from 1 to 10000000", name);
    if (gpn <= 0 || gpn > SPW_MAX_NODE_GPUS)
        return cfg_at(x, gn, err, "pool '%s': gpus_per_node must be from 1 to 1024", name);
    int model = -1;
    if (spw_ymap_get(n, "gpu")) {
        if (spw_ynode_str(x->d, spw_ymap_get(n, "gpu"), "gpu", &gpu, err) < 0)
            return -1;
        spw_error_t e2;
        if ((model = spw_models_intern(&f->models, gpu, strlen(gpu), &e2)) < 0)
            return cfg_at(x, spw_ymap_get(n, "gpu"), err, "%s", e2.text);
    }
    spw_pool_spec_t *p = add_pool(f, name);
    p->nnodes = (uint32_t)nodes;
    p->node_gpus = spw_xmalloc((size_t)nodes * sizeof(uint16_t));
    for (long i = 0; i < nodes; i++)
        p->node_gpus[i] = (uint16_t)gpn;
    p->model = model;
    p->cost_usd_per_gpu_h = cost;
    return 0;
}

/* An ssh pool's `ssh:` map: user, key, known_hosts, port, down_after_s. */
int cfg_ssh_keys(ctx_t *x, const spw_ynode_t *m, const char *pool, spw_pool_backend_conf_t *b,
             spw_error_t *err)
{
    static const char *const keys[] = {"user", "key", "known_hosts", "port", "down_after_s",
                                       NULL};
    if (m->kind != SPW_Y_MAP)
        return cfg_at(x, m, err, "pool '%s': ssh must be a map (user, key, known_hosts, port, "
                             "down_after_s)", pool);
    if (spw_ymap_check_keys(x->d, m, "ssh", keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    const char *s;
    long port = 0;
    if ((v = spw_ymap_get(m, "user"))) {
        if (spw_ynode_str(x->d, v, "user", &s, err) < 0)
            return -1;
        b->ssh_user = spw_xstrdup(s);
    }
    if ((v = spw_ymap_get(m, "key"))) {
        if (spw_ynode_str(x->d, v, "key", &s, err) < 0)
            return -1;
        b->ssh_key = cfg_resolve(x->base_dir, s);
    }
    if ((v = spw_ymap_get(m, "known_hosts"))) {
        if (spw_ynode_str(x->d, v, "known_hosts", &s, err) < 0)
            return -1;
        b->ssh_known_hosts = cfg_resolve(x->base_dir, s);
    }
    if ((v = spw_ymap_get(m, "port"))) {
        if (spw_ynode_int(x->d, v, "port", &port, err) < 0)
            return -1;
        if (port < 1 || port > 65535)
            return cfg_at(x, v, err, "pool '%s': ssh port must be 1..65535", pool);
        b->ssh_port = (int)port;
    }
    if ((v = spw_ymap_get(m, "down_after_s"))) {
        if (spw_ynode_double(x->d, v, "down_after_s", &b->ssh_down_after_s, err) < 0)
            return -1;
        if (!(b->ssh_down_after_s > 0 && b->ssh_down_after_s <= 86400))
            return cfg_at(x, v, err, "pool '%s': ssh down_after_s must be > 0 s and at most a day",
                      pool);
    }
    return 0;
}

void cfg_free_kube(spw_pool_backend_conf_t *b)
{
    free(b->kubeconfig);
    free(b->kube_context);
    free(b->kube_namespace);
    for (size_t i = 0; b->kube_node_selector && b->kube_node_selector[i]; i++)
        free(b->kube_node_selector[i]);
    free(b->kube_node_selector);
    free(b->kube_tolerations);
    free(b->kube_priority_class);
    free(b->kube_local_queue);
    free(b->kube_image);
}

/* The scalar string at key of n into *out (owned copy), left NULL when
 * absent. */
static int kube_str(ctx_t *x, const spw_ynode_t *n, const char *key, char **out, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    const char *s;
    if (!v)
        return 0;
    if (spw_ynode_str(x->d, v, key, &s, err) < 0)
        return -1;
    if (!s[0])
        return cfg_at(x, v, err, "%s must not be empty", key);
    *out = spw_xstrdup(s);
    return 0;
}

/* A YAML node as JSON (scalars as strings, but true/false and integers as
 * such: a Toleration's tolerationSeconds is a number). */
static void yaml_json(const spw_ynode_t *y, spw_strbuf_t *b)
{
    if (y->kind == SPW_Y_SCALAR) {
        char *end;
        long v = strtol(y->str, &end, 10);
        if (y->str[0] && *end == '\0')
            spw_strbuf_printf(b, "%ld", v);
        else if (strcmp(y->str, "true") == 0 || strcmp(y->str, "false") == 0)
            spw_strbuf_add(b, y->str);
        else {
            json_t *s = json_string(y->str);
            char *t = json_dumps(s, JSON_ENCODE_ANY);
            spw_strbuf_add(b, t ? t : "\"\"");
            free(t);
            json_decref(s);
        }
        return;
    }
    spw_strbuf_add(b, y->kind == SPW_Y_MAP ? "{" : "[");
    for (size_t i = 0; i < y->n; i++) {
        if (i)
            spw_strbuf_add(b, ",");
        if (y->kind == SPW_Y_MAP) {
            json_t *s = json_string(y->keys[i]);
            char *t = json_dumps(s, JSON_ENCODE_ANY);
            spw_strbuf_printf(b, "%s:", t ? t : "\"\"");
            free(t);
            json_decref(s);
        }
        yaml_json(y->items[i], b);
    }
    spw_strbuf_add(b, y->kind == SPW_Y_MAP ? "}" : "]");
}

/* A kubernetes pool's keys (docs/kubernetes.md) into b. */
static int kube_keys_of(ctx_t *x, const spw_ynode_t *n, spw_pool_backend_conf_t *b,
                        spw_error_t *err)
{
    static const char *const tol_keys[] = {"key", "operator", "value", "effect",
                                           "tolerationSeconds", NULL};
    char *kc = NULL;
    if (kube_str(x, n, "kubeconfig", &kc, err) < 0 ||
        kube_str(x, n, "context", &b->kube_context, err) < 0 ||
        kube_str(x, n, "namespace", &b->kube_namespace, err) < 0 ||
        kube_str(x, n, "priority_class", &b->kube_priority_class, err) < 0 ||
        kube_str(x, n, "local_queue", &b->kube_local_queue, err) < 0 ||
        kube_str(x, n, "image", &b->kube_image, err) < 0)
        return -1;
    if (kc) {
        b->kubeconfig = cfg_resolve(x->base_dir, kc);
        free(kc);
    }
    const spw_ynode_t *sel = spw_ymap_get(n, "node_selector"), *tol = spw_ymap_get(n, "tolerations");
    if (sel) {
        if (sel->kind != SPW_Y_MAP)
            return cfg_at(x, sel, err, "%s", "node_selector must be a mapping of label: value");
        b->kube_node_selector = spw_xcalloc(sel->n + 1, sizeof(char *));
        for (size_t i = 0; i < sel->n; i++) {
            const char *v;
            if (spw_ynode_str(x->d, sel->items[i], sel->keys[i], &v, err) < 0)
                return -1;
            size_t len = strlen(sel->keys[i]) + strlen(v) + 2;
            b->kube_node_selector[i] = spw_xmalloc(len);
            snprintf(b->kube_node_selector[i], len, "%s=%s", sel->keys[i], v);
        }
    }
    if (tol) {
        if (tol->kind != SPW_Y_SEQ)
            return cfg_at(x, tol, err, "%s", "tolerations must be a list of mappings (key, "
                          "operator, value, effect, tolerationSeconds)");
        for (size_t i = 0; i < tol->n; i++)
            if (spw_ymap_check_keys(x->d, tol->items[i], "tolerations", tol_keys, err) < 0)
                return -1;
        spw_strbuf_t js = {0};
        yaml_json(tol, &js);
        b->kube_tolerations = js.s;
    }
    if (cfg_num_key(x, n, "kill_grace_s", 0, 86400, &b->kube_kill_grace_s, err) < 0 ||
        cfg_num_key(x, n, "ttl_after_finished_s", 0, 30 * 86400.0, &b->kube_ttl_s, err) < 0)
        return -1;
    return 0;
}

/* A pool's backend keys (backend, partition, cluster, slurm_conf), for
 * the pools from index start on. */
static int pool_backend(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err)
{
    static const char *const names[] = {"local", "slurm", "ssh", "kubernetes", NULL};
    static const char *const kube_keys[] = {"kubeconfig", "context", "namespace", "node_selector",
                                            "tolerations", "priority_class", "local_queue",
                                            "image", "kill_grace_s", "ttl_after_finished_s",
                                            NULL};
    const spw_ynode_t *kn = NULL;
    for (size_t i = 0; kube_keys[i] && !kn; i++)
        kn = spw_ymap_get(n, kube_keys[i]);
    const spw_ynode_t *bn = spw_ymap_get(n, "backend"), *pn = spw_ymap_get(n, "partition"),
                      *cn = spw_ymap_get(n, "cluster"), *sn = spw_ymap_get(n, "slurm_conf");
    const spw_ynode_t *hn = spw_ymap_get(n, "hosts"), *hf = spw_ymap_get(n, "hosts_file"),
                      *sshn = spw_ymap_get(n, "ssh");
    spw_config_t *c = x->cfg;
    if (!bn && !pn && !cn && !sn && !hn && !hf && !sshn && !kn)
        return 0;
    const char *be = "local", *part = NULL, *cluster = NULL, *conf = NULL;
    if (bn && spw_ynode_str(x->d, bn, "backend", &be, err) < 0)
        return -1;
    size_t k = 0;
    while (names[k] && strcmp(names[k], be) != 0)
        k++;
    if (!names[k])
        return cfg_at(x, bn, err, "pool '%s': unknown backend '%s' (known: local, slurm, ssh, "
                  "kubernetes)", c->fleet.pools[start].name, be);
    if ((pn && spw_ynode_str(x->d, pn, "partition", &part, err) < 0) ||
        (cn && spw_ynode_str(x->d, cn, "cluster", &cluster, err) < 0) ||
        (sn && spw_ynode_str(x->d, sn, "slurm_conf", &conf, err) < 0))
        return -1;
    if (strcmp(be, "slurm") != 0 && (pn || cn || sn))
        return cfg_at(x, pn ? pn : cn ? cn : sn, err,
                  "pool '%s': partition, cluster and slurm_conf need 'backend: slurm'",
                  c->fleet.pools[start].name);
    if (strcmp(be, "slurm") == 0 && (!part || !part[0]))
        return cfg_at(x, bn, err, "pool '%s': a slurm pool needs 'partition: NAME' (the Slurm "
                              "partition its jobs are submitted to)", c->fleet.pools[start].name);
    if (strcmp(be, "ssh") != 0 && (hn || hf || sshn))
        return cfg_at(x, hn ? hn : hf ? hf : sshn, err,
                  "pool '%s': hosts, hosts_file and ssh need 'backend: ssh'",
                  c->fleet.pools[start].name);
    if (strcmp(be, "kubernetes") != 0 && kn)
        return cfg_at(x, kn, err, "pool '%s': kubeconfig, context, namespace, node_selector, "
                  "tolerations, priority_class, local_queue, image, kill_grace_s and "
                  "ttl_after_finished_s need 'backend: kubernetes'", c->fleet.pools[start].name);
    spw_pool_backend_conf_t sc;
    memset(&sc, 0, sizeof(sc));
    if (strcmp(be, "kubernetes") == 0 && kube_keys_of(x, n, &sc, err) < 0) {
        cfg_free_kube(&sc);
        return -1;
    }
    if (strcmp(be, "ssh") == 0) {
        const char *pool = c->fleet.pools[start].name;
        if (ssh_hosts(x, n, pool, &sc.hosts, &sc.nhosts, err) < 0)
            return -1;
        sc.gpus_given = spw_ymap_get(n, "gpus_per_node") != NULL;
        if (sshn && cfg_ssh_keys(x, sshn, pool, &sc, err) < 0) {
            cfg_free_strs(sc.hosts, sc.nhosts);
            free(sc.ssh_user);
            free(sc.ssh_key);
            free(sc.ssh_known_hosts);
            return -1;
        }
    }
    c->pool_backends = spw_xrealloc(c->pool_backends,
                                    c->fleet.npools * sizeof(*c->pool_backends));
    for (size_t i = c->npool_backends; i < c->fleet.npools; i++)
        memset(&c->pool_backends[i], 0, sizeof(c->pool_backends[i]));
    c->npool_backends = c->fleet.npools;
    for (size_t i = start; i < c->fleet.npools; i++) {
        spw_pool_backend_conf_t *b = &c->pool_backends[i];
        b->backend = spw_xstrdup(be);
        b->partition = part ? spw_xstrdup(part) : NULL;
        b->cluster = cluster ? spw_xstrdup(cluster) : NULL;
        b->slurm_conf = conf ? cfg_resolve(x->base_dir, conf) : NULL;
        b->line = bn ? bn->line : n->line;
        /* ssh keys (one pool: start is the only index here) */
        b->hosts = sc.hosts;
        b->nhosts = sc.nhosts;
        b->gpus_given = sc.gpus_given;
        b->ssh_user = sc.ssh_user;
        b->ssh_key = sc.ssh_key;
        b->ssh_known_hosts = sc.ssh_known_hosts;
        b->ssh_port = sc.ssh_port;
        b->ssh_down_after_s = sc.ssh_down_after_s;
        b->kubeconfig = sc.kubeconfig;
        b->kube_context = sc.kube_context;
        b->kube_namespace = sc.kube_namespace;
        b->kube_node_selector = sc.kube_node_selector;
        b->kube_tolerations = sc.kube_tolerations;
        b->kube_priority_class = sc.kube_priority_class;
        b->kube_local_queue = sc.kube_local_queue;
        b->kube_image = sc.kube_image;
        b->kube_kill_grace_s = sc.kube_kill_grace_s;
        b->kube_ttl_s = sc.kube_ttl_s;
        memset(&sc, 0, sizeof(sc));
    }
    return 0;
}

/* A number at key of map n, >= lo (> lo when strict), left as it is when
 * absent; what names the unit for the message. */
static int owned_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, int strict,
                   const char *what, double *out, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    double d;
    if (spw_ynode_double(x->d, v, key, &d, err) < 0)
        return -1;
    if (!isfinite(d) || (strict ? !(d > lo) : !(d >= lo)))
        return cfg_at(x, v, err, "%s must be %s %g (%s)", key, strict ? "more than" : "at least", lo,
                  what);
    *out = d;
    return 0;
}

/* The owned: map of the pool(s) just added from start on: what owning them
 * costs, used or not (docs/config.md "On-prem cost"). */
static int pool_owned(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err)
{
    static const char *const keys[] = {"price_usd_per_gpu", "years", "gpu_busy_w", "gpu_idle_w",
                                       "pue", "usd_per_kwh", "node_usd_per_month", NULL};
    const spw_ynode_t *o = spw_ymap_get(n, "owned");
    if (!o)
        return 0;
    spw_fleet_t *f = &x->cfg->fleet;
    const char *name = start < f->npools ? f->pools[start].name : "?";
    if (spw_ymap_get(n, "cost_usd_per_gpu_h"))
        return cfg_at(x, spw_ymap_get(n, "cost_usd_per_gpu_h"), err,
                  "pool '%s': give cost_usd_per_gpu_h (the simple form: an amortised price per "
                  "GPU-hour) or owned: (purchase, power, space), not both", name);
    if (spw_ymap_check_keys(x->d, o, "an owned: map", keys, err) < 0)
        return -1;
    spw_owned_cost_t m = {.years = 4, .pue = 1.0};
    if (owned_key(x, o, "price_usd_per_gpu", 0, 0, "dollars", &m.price_usd_per_gpu, err) < 0 ||
        owned_key(x, o, "years", 0, 1, "years the purchase is spread over", &m.years, err) < 0 ||
        owned_key(x, o, "gpu_busy_w", 0, 0, "watts", &m.gpu_busy_w, err) < 0 ||
        owned_key(x, o, "gpu_idle_w", 0, 0, "watts", &m.gpu_idle_w, err) < 0 ||
        owned_key(x, o, "pue", 1, 0, "facility power / IT power", &m.pue, err) < 0 ||
        owned_key(x, o, "usd_per_kwh", 0, 0, "dollars per kWh", &m.usd_per_kwh, err) < 0 ||
        owned_key(x, o, "node_usd_per_month", 0, 0, "dollars per node and month",
                &m.node_usd_per_month, err) < 0)
        return -1;
    if (m.gpu_idle_w > m.gpu_busy_w && spw_ymap_get(o, "gpu_busy_w"))
        return cfg_at(x, spw_ymap_get(o, "gpu_idle_w"), err,
                  "pool '%s': gpu_idle_w (%g W) is more than gpu_busy_w (%g W)", name,
                  m.gpu_idle_w, m.gpu_busy_w);
    for (size_t i = start; i < f->npools; i++) {
        spw_pool_spec_t *p = &f->pools[i];
        double gpus = 0;
        for (uint32_t k = 0; k < p->nnodes; k++)
            gpus += p->node_gpus[k];
        p->has_owned = 1;
        p->owned = m;
        p->cost_usd_per_gpu_h = spw_owned_busy_usd_per_gpu_h(&m, gpus / p->nnodes);
    }
    return 0;
}

int cfg_pool_entry(ctx_t *x, const spw_ynode_t *n, size_t idx, spw_error_t *err)
{
    size_t start = x->cfg->fleet.npools;
    if (pool_fleet(x, n, idx, err) < 0 || pool_owned(x, n, start, err) < 0)
        return -1;
    if (pool_backend(x, n, start, err) < 0)
        return -1;
    return cfg_pool_rates(x, n, start, err);
}

/* ---- cloud -------------------------------------------------------------------- */

/* Whether ordinary offer o matches a commitment's optional field `key` of
 * map m (absent = any; gpu as spw_model_accepts does). */
static int commit_matches(const spw_fleet_t *f, const spw_offer_t *o, const spw_ynode_t *m)
{
    static const char *const keys[] = {"provider", "region", "instance_type", "gpu"};
    const char *have[] = {o->provider, o->region, o->instance_type,
                          o->model >= 0 ? f->models.name[o->model] : NULL};
    for (int k = 0; k < 4; k++) {
        const spw_ynode_t *v = spw_ymap_get(m, keys[k]);
        if (!v || v->kind != SPW_Y_SCALAR)
            continue;
        if (!have[k] || (k == 3 ? !spw_model_accepts(v->str, have[k]) : strcmp(v->str, have[k]) != 0))
            return 0;
    }
    return 1;
}

/* One entry of cloud.commitments: a copy of the cheapest ordinary offer per
 * GPU that its provider, region, instance_type and gpu match, appended to
 * the fleet's offers with its GPUs and committed rate and no market price of
 * its own (its GPUs cost nothing more to use: spw_offer_committed). */
static int cloud_commitment(ctx_t *x, const spw_ynode_t *m, size_t nordinary, spw_error_t *err)
{
    static const char *const keys[] = {"name", "provider", "region", "instance_type", "gpu",
                                       "gpus", "usd_per_gpu_h", NULL};
    if (m->kind != SPW_Y_MAP)
        return cfg_at(x, m, err, "%s", "a commitment is a map: {name, gpus, usd_per_gpu_h, and "
                      "optionally provider, region, instance_type, gpu}");
    if (spw_ymap_check_keys(x->d, m, "cloud.commitments", keys, err) < 0)
        return -1;
    spw_fleet_t *f = &x->cfg->fleet;
    const spw_ynode_t *nn = spw_ymap_get(m, "name"), *gn = spw_ymap_get(m, "gpus"),
                      *rn = spw_ymap_get(m, "usd_per_gpu_h");
    const char *name;
    long gpus;
    double rate;
    if (!nn || !gn || !rn)
        return cfg_at(x, m, err, "%s", "a commitment needs name, gpus and usd_per_gpu_h (the "
                      "committed rate, paid for every GPU-hour used or idle)");
    if (spw_ynode_str(x->d, nn, "name", &name, err) < 0 ||
        spw_ynode_int(x->d, gn, "gpus", &gpus, err) < 0 ||
        spw_ynode_double(x->d, rn, "usd_per_gpu_h", &rate, err) < 0)
        return -1;
    if (!*name)
        return cfg_at(x, nn, err, "%s", "a commitment's name must not be empty");
    for (size_t i = nordinary; i < f->noffers; i++)
        if (strcmp(f->offers[i].commit_name, name) == 0)
            return cfg_at(x, nn, err, "two commitments are named '%s'", name);
    if (!(rate >= 0))
        return cfg_at(x, rn, err, "%s", "usd_per_gpu_h must be >= 0");
    long best = -1;
    for (size_t i = 0; i < nordinary; i++) {
        const spw_offer_t *o = &f->offers[i];
        if (commit_matches(f, o, m) && (best < 0 || o->ondemand_usd_per_h / o->gpus <
                                        f->offers[best].ondemand_usd_per_h / f->offers[best].gpus))
            best = (long)i;
    }
    if (best < 0)
        return cfg_at(x, m, err, "commitment '%s' matches no cloud offer: its provider, region, "
                      "instance_type and gpu must name an offer of the catalog", name);
    uint32_t per = f->offers[best].gpus;
    if (gpus < 1 || gpus > 1000000 || gpus % per)
        return cfg_at(x, gn, err, "commitment '%s': gpus must be a positive multiple of %u (the "
                      "GPUs of one %s)", name, per, f->offers[best].instance_type);
    f->offers = spw_xrealloc(f->offers, (f->noffers + 1) * sizeof(spw_offer_t));
    spw_offer_commitment(&f->offers[f->noffers], &f->offers[best], name, (uint32_t)gpus, rate);
    f->noffers++;
    return 0;
}

/* cloud.commitments and cloud.capacity_errors, once the offers are known. */
static int cloud_capacity_errors(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    const spw_ynode_t *c = spw_ymap_get(n, "commitments");
    if (c) {
        if (c->kind != SPW_Y_SEQ)
            return cfg_at(x, c, err, "%s", "cloud.commitments is a list of {name, gpus, "
                          "usd_per_gpu_h, provider, region, instance_type, gpu}");
        size_t nordinary = x->cfg->fleet.noffers;
        for (size_t i = 0; i < c->n; i++)
            if (cloud_commitment(x, c->items[i], nordinary, err) < 0)
                return -1;
    }
    const spw_ynode_t *v = spw_ymap_get(n, "capacity_errors");
    return v ? cfg_capacity_errors(x, v, err) : 0;
}

int cfg_cloud_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"price_usd_per_gpu_h", "offers", "providers",
                                       "regions", "boot_delay_s", "slurm_partition",
                                       "slurm_conf", "capacity_errors", "accounts",
                                       "commitments", NULL};
    if (spw_ymap_check_keys(x->d, n, "cloud", keys, err) < 0)
        return -1;
    if (spw_ymap_get(n, "accounts") && cfg_accounts(x, spw_ymap_get(n, "accounts"), err) < 0)
        return -1;
    const spw_ynode_t *spn = spw_ymap_get(n, "slurm_partition"), *scn = spw_ymap_get(n, "slurm_conf");
    const char *sp = NULL, *sc = NULL;
    if ((spn && spw_ynode_str(x->d, spn, "slurm_partition", &sp, err) < 0) ||
        (scn && spw_ynode_str(x->d, scn, "slurm_conf", &sc, err) < 0))
        return -1;
    if (scn && !spn)
        return cfg_at(x, scn, err, "%s", "cloud.slurm_conf needs cloud.slurm_partition (the Slurm "
                  "partition of State=CLOUD nodes the cloud instances are)");
    if (spn && !*sp)
        return cfg_at(x, spn, err, "%s", "cloud.slurm_partition must name a Slurm partition");
    if (sp)
        x->cfg->cloud_slurm_partition = spw_xstrdup(sp);
    if (sc)
        x->cfg->cloud_slurm_conf = cfg_resolve(x->base_dir, sc);
    double boot = 0, price = 0;
    const spw_ynode_t *pn = spw_ymap_get(n, "price_usd_per_gpu_h"), *on = spw_ymap_get(n, "offers");
    if (spw_ymap_get(n, "boot_delay_s")
        && spw_ynode_double(x->d, spw_ymap_get(n, "boot_delay_s"), "boot_delay_s", &boot, err) < 0)
        return -1;
    if (boot < 0)
        return cfg_at(x, spw_ymap_get(n, "boot_delay_s"), err, "%s", "boot_delay_s must be >= 0");
    if (pn && on)
        return cfg_at(x, on, err, "%s",
                  "give either price_usd_per_gpu_h (a flat price) or offers (a catalog), not both");
    if ((spw_ymap_get(n, "providers") || spw_ymap_get(n, "regions")) && !on)
        return cfg_at(x, n, err, "%s", "providers and regions filter a catalog: add 'offers: FILE'");
    spw_fleet_t *f = &x->cfg->fleet;
    if (pn) {
        if (spw_ynode_double(x->d, pn, "price_usd_per_gpu_h", &price, err) < 0)
            return -1;
        if (price < 0)
            return cfg_at(x, pn, err, "%s", "price_usd_per_gpu_h must be >= 0");
        f->offers = spw_xcalloc(1, sizeof(spw_offer_t));
        f->noffers = 1;
        spw_offer_t *o = &f->offers[0];
        o->provider = spw_xstrdup("flat");
        o->region = spw_xstrdup("");
        o->zone = spw_xstrdup("");
        o->instance_type = spw_xstrdup("gpu");
        o->model = -1;
        o->gpus = 1;
        o->ondemand_usd_per_h = price;
        o->spot_usd_per_h = NAN;
        o->boot_delay_s = boot;
        return cloud_capacity_errors(x, n, err);
    }
    if (!on)
        return cloud_capacity_errors(x, n, err);
    const char *file, **prov = NULL, **reg = NULL;
    if (spw_ynode_str(x->d, on, "offers", &file, err) < 0)
        return -1;
    if (spw_ymap_get(n, "providers")
        && cfg_str_list(x, spw_ymap_get(n, "providers"), "providers", &prov, err) < 0)
        return -1;
    if (spw_ymap_get(n, "regions") && cfg_str_list(x, spw_ymap_get(n, "regions"), "regions", &reg, err) < 0) {
        free(prov);
        return -1;
    }
    char *path = cfg_resolve(x->base_dir, file);
    spw_error_t e2;
    int rc = spw_offers_load(f, path, prov, reg, boot, &e2);
    free(prov);
    free(reg);
    if (rc < 0) {
        free(path);
        return cfg_at(x, on, err, "%s", e2.text);
    }
    if (f->noffers == 0) {
        free(path);
        return cfg_at(x, on, err, "%s", "no offer in the catalog passes the providers/regions filters");
    }
    x->cfg->offers_path = path;
    return cloud_capacity_errors(x, n, err);
}
