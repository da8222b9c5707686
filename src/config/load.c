/* config.c: reads the fleet/policy/governance YAML, the offer catalog and node lists. */
#include <ctype.h>
#include <libgen.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "config/config.h"
#include "util/file.h"
#include "sim/trace.h"
#include "util/csv.h"
#include "util/numparse.h"
#include "util/spot_trace.h"
#include "util/timeparse.h"
#include "util/yaml.h"

/* ---- helpers -------------------------------------------------------------- */

static char *resolve(const char *base_dir, const char *file)
{
    if (file[0] == '/' || !base_dir || !*base_dir || strcmp(base_dir, ".") == 0)
        return spw_xstrdup(file);
    size_t n = strlen(base_dir) + strlen(file) + 2;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s/%s", base_dir, file);
    return p;
}

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

/* ---- YAML -------------------------------------------------------------------- */

typedef struct ctx {
    spw_ydoc_t *d;
    const char *base_dir;
    spw_config_t *cfg;
    size_t nrates;          /* entries allocated in cfg->failures.mtbf_s / mttr_s */
} ctx_t;

/* Formats "NAME:LINE:COL: message" for node n into err; returns -1. */
static int at(ctx_t *x, const spw_ynode_t *n, spw_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int at(ctx_t *x, const spw_ynode_t *n, spw_error_t *err, const char *fmt, ...)
{
    char msg[sizeof(err->text)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return spw_errorf(err, "%s:%d:%d: %s", spw_ydoc_name(x->d), n ? n->line : 0, n ? n->col : 0, msg);
}

static int pool_rates(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err);
static int pool_owned(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err);
static int throughput_map(ctx_t *x, const spw_ynode_t *n, const char *what, char ***names,
                          double **tp, size_t *cnt, spw_error_t *err);

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

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
        return at(x, n, err, "pool '%s': an ssh pool needs 'hosts: [HOST, ...]' or "
                             "'hosts_file: FILE' (one of them)", pool);
    if (hn) {
        size_t k = hn->kind == SPW_Y_SEQ ? hn->n : 1;
        v = spw_xcalloc(k ? k : 1, sizeof(char *));
        for (size_t i = 0; i < k; i++) {
            const char *h;
            if (spw_ynode_str(x->d, hn->kind == SPW_Y_SEQ ? hn->items[i] : hn, "hosts", &h,
                              err) < 0) {
                free_strs(v, cnt);
                return -1;
            }
            v[cnt++] = spw_xstrdup(h);
        }
    } else {
        const char *f;
        if (spw_ynode_str(x->d, fn, "hosts_file", &f, err) < 0)
            return -1;
        char *path = resolve(x->base_dir, f);
        size_t len;
        spw_error_t e2;
        char *text = spw_read_file(path, &len, &e2);
        free(path);
        if (!text)
            return at(x, fn, err, "pool '%s': %s", pool, e2.text);
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
        free_strs(v, cnt);
        return at(x, hn ? hn : fn, err, "pool '%s': an ssh pool needs 1 to 256 hosts", pool);
    }
    for (size_t i = 0; i < cnt; i++)
        if (!v[i][0] || v[i][0] == '-' || strpbrk(v[i], " \t,'\"\\;&|$`")) {
            spw_error_t e2;
            spw_errorf(&e2, "pool '%s': '%s' is not a host name or address", pool, v[i]);
            free_strs(v, cnt);
            return at(x, hn ? hn : fn, err, "%s", e2.text);
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
                                       "hosts", "hosts_file", "ssh", NULL};
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
            return at(x, n, err, "two on-prem pools are named '%s'", name);
    if (spw_ymap_get(n, "cost_usd_per_gpu_h")
        && spw_ynode_double(x->d, spw_ymap_get(n, "cost_usd_per_gpu_h"), "cost_usd_per_gpu_h", &cost, err) < 0)
        return -1;
    if (cost < 0)
        return at(x, spw_ymap_get(n, "cost_usd_per_gpu_h"), err,
                  "pool '%s': cost_usd_per_gpu_h must be >= 0", name);
    if (spw_ymap_get(n, "nodes_from")) {
        if (spw_ymap_get(n, "nodes") || spw_ymap_get(n, "gpus_per_node") || spw_ymap_get(n, "gpu"))
            return at(x, n, err, "pool '%s': nodes_from replaces nodes, gpus_per_node and gpu; "
                                 "give one or the other", name);
        if (spw_ynode_str(x->d, spw_ymap_get(n, "nodes_from"), "nodes_from", &from, err) < 0)
            return -1;
        char *path = resolve(x->base_dir, from);
        spw_error_t e2;
        int rc = spw_nodes_load(f, path, name, cost, &e2);
        free(path);
        if (rc < 0)
            return at(x, spw_ymap_get(n, "nodes_from"), err, "%s", e2.text);
        return 0;
    }
    const spw_ynode_t *nn = spw_ymap_get(n, "nodes"), *gn = spw_ymap_get(n, "gpus_per_node");
    const spw_ynode_t *bk = spw_ymap_get(n, "backend");
    if (bk && bk->kind == SPW_Y_SCALAR && strcmp(bk->str, "local") != 0 &&
        strcmp(bk->str, "slurm") != 0 && strcmp(bk->str, "ssh") != 0)
        return at(x, bk, err, "pool '%s': unknown backend '%s' (known: local, slurm, ssh)", name,
                  bk->str);
    if (bk && bk->kind == SPW_Y_SCALAR && !nn && !gn && strcmp(bk->str, "slurm") == 0) {
        /* A Slurm pool's nodes are read from Slurm when the daemon starts;
         * until then (and in `sim`) it is one node of one GPU. */
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
                return at(x, spw_ymap_get(n, "gpu"), err, "%s", e2.text);
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
        free_strs(hl, nh);
        if (nn && (spw_ynode_int(x->d, nn, "nodes", &nodes, err) < 0 || nodes != (long)nh))
            return at(x, nn, err, "pool '%s': an ssh pool has one node per host (%zu); leave "
                                  "out 'nodes'", name, nh);
        nodes = (long)nh;
        gpn = 1;
        if (gn && spw_ynode_int(x->d, gn, "gpus_per_node", &gpn, err) < 0)
            return -1;
        nn = n;
        gn = gn ? gn : n;
    } else {
        if (!nn)
            return at(x, n, err, "pool '%s': missing 'nodes' (how many nodes the pool has)", name);
        if (!gn)
            return at(x, n, err, "pool '%s': missing 'gpus_per_node'", name);
        if (spw_ynode_int(x->d, nn, "nodes", &nodes, err) < 0
            || spw_ynode_int(x->d, gn, "gpus_per_node", &gpn, err) < 0)
            return -1;
    }
    if (nodes <= 0 || nodes > 10000000)
        return at(x, nn, err, "pool '%s': nodes must be from 1 to 10000000", name);
    if (gpn <= 0 || gpn > SPW_MAX_NODE_GPUS)
        return at(x, gn, err, "pool '%s': gpus_per_node must be from 1 to 1024", name);
    int model = -1;
    if (spw_ymap_get(n, "gpu")) {
        if (spw_ynode_str(x->d, spw_ymap_get(n, "gpu"), "gpu", &gpu, err) < 0)
            return -1;
        spw_error_t e2;
        if ((model = spw_models_intern(&f->models, gpu, strlen(gpu), &e2)) < 0)
            return at(x, spw_ymap_get(n, "gpu"), err, "%s", e2.text);
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
static int ssh_keys(ctx_t *x, const spw_ynode_t *m, const char *pool, spw_pool_backend_conf_t *b,
                    spw_error_t *err)
{
    static const char *const keys[] = {"user", "key", "known_hosts", "port", "down_after_s",
                                       NULL};
    if (m->kind != SPW_Y_MAP)
        return at(x, m, err, "pool '%s': ssh must be a map (user, key, known_hosts, port, "
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
        b->ssh_key = resolve(x->base_dir, s);
    }
    if ((v = spw_ymap_get(m, "known_hosts"))) {
        if (spw_ynode_str(x->d, v, "known_hosts", &s, err) < 0)
            return -1;
        b->ssh_known_hosts = resolve(x->base_dir, s);
    }
    if ((v = spw_ymap_get(m, "port"))) {
        if (spw_ynode_int(x->d, v, "port", &port, err) < 0)
            return -1;
        if (port < 1 || port > 65535)
            return at(x, v, err, "pool '%s': ssh port must be 1..65535", pool);
        b->ssh_port = (int)port;
    }
    if ((v = spw_ymap_get(m, "down_after_s"))) {
        if (spw_ynode_double(x->d, v, "down_after_s", &b->ssh_down_after_s, err) < 0)
            return -1;
        if (!(b->ssh_down_after_s > 0 && b->ssh_down_after_s <= 86400))
            return at(x, v, err, "pool '%s': ssh down_after_s must be > 0 s and at most a day",
                      pool);
    }
    return 0;
}

/* A pool's backend keys (backend, partition, cluster, slurm_conf), for
 * the pools from index start on. */
static int pool_backend(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err)
{
    static const char *const names[] = {"local", "slurm", "ssh", NULL};
    const spw_ynode_t *bn = spw_ymap_get(n, "backend"), *pn = spw_ymap_get(n, "partition"),
                      *cn = spw_ymap_get(n, "cluster"), *sn = spw_ymap_get(n, "slurm_conf");
    const spw_ynode_t *hn = spw_ymap_get(n, "hosts"), *hf = spw_ymap_get(n, "hosts_file"),
                      *sshn = spw_ymap_get(n, "ssh");
    spw_config_t *c = x->cfg;
    if (!bn && !pn && !cn && !sn && !hn && !hf && !sshn)
        return 0;
    const char *be = "local", *part = NULL, *cluster = NULL, *conf = NULL;
    if (bn && spw_ynode_str(x->d, bn, "backend", &be, err) < 0)
        return -1;
    size_t k = 0;
    while (names[k] && strcmp(names[k], be) != 0)
        k++;
    if (!names[k])
        return at(x, bn, err, "pool '%s': unknown backend '%s' (known: local, slurm, ssh)",
                  c->fleet.pools[start].name, be);
    if ((pn && spw_ynode_str(x->d, pn, "partition", &part, err) < 0) ||
        (cn && spw_ynode_str(x->d, cn, "cluster", &cluster, err) < 0) ||
        (sn && spw_ynode_str(x->d, sn, "slurm_conf", &conf, err) < 0))
        return -1;
    if (strcmp(be, "slurm") != 0 && (pn || cn || sn))
        return at(x, pn ? pn : cn ? cn : sn, err,
                  "pool '%s': partition, cluster and slurm_conf need 'backend: slurm'",
                  c->fleet.pools[start].name);
    if (strcmp(be, "slurm") == 0 && (!part || !part[0]))
        return at(x, bn, err, "pool '%s': a slurm pool needs 'partition: NAME' (the Slurm "
                              "partition its jobs are submitted to)", c->fleet.pools[start].name);
    if (strcmp(be, "ssh") != 0 && (hn || hf || sshn))
        return at(x, hn ? hn : hf ? hf : sshn, err,
                  "pool '%s': hosts, hosts_file and ssh need 'backend: ssh'",
                  c->fleet.pools[start].name);
    spw_pool_backend_conf_t sc;
    memset(&sc, 0, sizeof(sc));
    if (strcmp(be, "ssh") == 0) {
        const char *pool = c->fleet.pools[start].name;
        if (ssh_hosts(x, n, pool, &sc.hosts, &sc.nhosts, err) < 0)
            return -1;
        sc.gpus_given = spw_ymap_get(n, "gpus_per_node") != NULL;
        if (sshn && ssh_keys(x, sshn, pool, &sc, err) < 0) {
            free_strs(sc.hosts, sc.nhosts);
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
        b->slurm_conf = conf ? resolve(x->base_dir, conf) : NULL;
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
        memset(&sc, 0, sizeof(sc));
    }
    return 0;
}

static int pool_entry(ctx_t *x, const spw_ynode_t *n, size_t idx, spw_error_t *err)
{
    size_t start = x->cfg->fleet.npools;
    if (pool_fleet(x, n, idx, err) < 0 || pool_owned(x, n, start, err) < 0)
        return -1;
    if (pool_backend(x, n, start, err) < 0)
        return -1;
    return pool_rates(x, n, start, err);
}

/* Reads a list of strings (or one string) into a NULL-terminated array. */
static int str_list(ctx_t *x, const spw_ynode_t *n, const char *what, const char ***out,
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

static int cloud_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"price_usd_per_gpu_h", "offers", "providers",
                                       "regions", "boot_delay_s", "slurm_partition",
                                       "slurm_conf", NULL};
    if (spw_ymap_check_keys(x->d, n, "cloud", keys, err) < 0)
        return -1;
    const spw_ynode_t *spn = spw_ymap_get(n, "slurm_partition"), *scn = spw_ymap_get(n, "slurm_conf");
    const char *sp = NULL, *sc = NULL;
    if ((spn && spw_ynode_str(x->d, spn, "slurm_partition", &sp, err) < 0) ||
        (scn && spw_ynode_str(x->d, scn, "slurm_conf", &sc, err) < 0))
        return -1;
    if (scn && !spn)
        return at(x, scn, err, "%s", "cloud.slurm_conf needs cloud.slurm_partition (the Slurm "
                  "partition of State=CLOUD nodes the cloud instances are)");
    if (spn && !*sp)
        return at(x, spn, err, "%s", "cloud.slurm_partition must name a Slurm partition");
    if (sp)
        x->cfg->cloud_slurm_partition = spw_xstrdup(sp);
    if (sc)
        x->cfg->cloud_slurm_conf = resolve(x->base_dir, sc);
    double boot = 0, price = 0;
    const spw_ynode_t *pn = spw_ymap_get(n, "price_usd_per_gpu_h"), *on = spw_ymap_get(n, "offers");
    if (spw_ymap_get(n, "boot_delay_s")
        && spw_ynode_double(x->d, spw_ymap_get(n, "boot_delay_s"), "boot_delay_s", &boot, err) < 0)
        return -1;
    if (boot < 0)
        return at(x, spw_ymap_get(n, "boot_delay_s"), err, "%s", "boot_delay_s must be >= 0");
    if (pn && on)
        return at(x, on, err, "%s",
                  "give either price_usd_per_gpu_h (a flat price) or offers (a catalog), not both");
    if ((spw_ymap_get(n, "providers") || spw_ymap_get(n, "regions")) && !on)
        return at(x, n, err, "%s", "providers and regions filter a catalog: add 'offers: FILE'");
    spw_fleet_t *f = &x->cfg->fleet;
    if (pn) {
        if (spw_ynode_double(x->d, pn, "price_usd_per_gpu_h", &price, err) < 0)
            return -1;
        if (price < 0)
            return at(x, pn, err, "%s", "price_usd_per_gpu_h must be >= 0");
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
        return 0;
    }
    if (!on)
        return 0;
    const char *file, **prov = NULL, **reg = NULL;
    if (spw_ynode_str(x->d, on, "offers", &file, err) < 0)
        return -1;
    if (spw_ymap_get(n, "providers")
        && str_list(x, spw_ymap_get(n, "providers"), "providers", &prov, err) < 0)
        return -1;
    if (spw_ymap_get(n, "regions") && str_list(x, spw_ymap_get(n, "regions"), "regions", &reg, err) < 0) {
        free(prov);
        return -1;
    }
    char *path = resolve(x->base_dir, file);
    spw_error_t e2;
    int rc = spw_offers_load(f, path, prov, reg, boot, &e2);
    free(prov);
    free(reg);
    if (rc < 0) {
        free(path);
        return at(x, on, err, "%s", e2.text);
    }
    if (f->noffers == 0) {
        free(path);
        return at(x, on, err, "%s", "no offer in the catalog passes the providers/regions filters");
    }
    x->cfg->offers_path = path;
    return 0;
}

static int policy_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"queue", "scan", "backfill", "fit", "wait", NULL};
    spw_policy_t *p = &x->cfg->policy;
    if (spw_ymap_check_keys(x->d, n, "policy", keys, err) < 0)
        return -1;
    const char *s;
    spw_error_t e2;
    const spw_ynode_t *v;
#define POLICY_KEY(key, parse, field)                                          \
    if ((v = spw_ymap_get(n, key))) {                                          \
        if (spw_ynode_str(x->d, v, key, &s, err) < 0)                          \
            return -1;                                                         \
        if (parse(s, &p->field, &e2) < 0)                                      \
            return at(x, v, err, "%s", e2.text);                               \
    }
    POLICY_KEY("queue", spw_queue_order_parse, queue)
    POLICY_KEY("scan", spw_scan_parse, scan)
    POLICY_KEY("backfill", spw_backfill_parse, backfill)
    POLICY_KEY("fit", spw_fit_parse, fit)
    POLICY_KEY("wait", spw_wait_parse, wait)
#undef POLICY_KEY
    return 0;
}

/* A number >= lo (and <= hi) at key of map n, left as it is when absent. */
static int num_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, double hi,
                   double *out, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    double d;
    if (spw_ynode_double(x->d, v, key, &d, err) < 0)
        return -1;
    if (d < lo || d > hi)
        return at(x, v, err, "%s must be between %g and %g", key, lo, hi);
    *out = d;
    return 0;
}

/* daemon.emulated's boot_command, hosts_dir and ssh: emulated instances
 * that are real hosts (docs/hosts.md, "Cloud instances"). */
static int emulated_hosts(ctx_t *x, const spw_ynode_t *v, spw_daemon_conf_t *dc,
                          spw_error_t *err)
{
    const spw_ynode_t *b = spw_ymap_get(v, "boot_command"), *h = spw_ymap_get(v, "hosts_dir"),
                      *sn = spw_ymap_get(v, "ssh");
    const char *s;
    if (!b && (h || sn))
        return at(x, h ? h : sn, err, "daemon.emulated: hosts_dir and ssh need boot_command "
                                      "(the program that boots an instance, e.g. "
                                      "scripts/netns-hosts.sh)");
    if (!b)
        return 0;
    if (spw_ynode_str(x->d, b, "boot_command", &s, err) < 0)
        return -1;
    free(dc->emulated_boot_command);
    dc->emulated_boot_command = resolve(x->base_dir, s);
    if (h) {
        if (spw_ynode_str(x->d, h, "hosts_dir", &s, err) < 0)
            return -1;
        free(dc->emulated_hosts_dir);
        dc->emulated_hosts_dir = resolve(x->base_dir, s);
    }
    if (sn) {
        spw_pool_backend_conf_t sc;
        memset(&sc, 0, sizeof(sc));
        if (ssh_keys(x, sn, "(daemon.emulated)", &sc, err) < 0) {
            free(sc.ssh_user);
            free(sc.ssh_key);
            free(sc.ssh_known_hosts);
            return -1;
        }
        free(dc->emulated_ssh_user);
        free(dc->emulated_ssh_key);
        free(dc->emulated_ssh_known_hosts);
        dc->emulated_ssh_user = sc.ssh_user;
        dc->emulated_ssh_key = sc.ssh_key;
        dc->emulated_ssh_known_hosts = sc.ssh_known_hosts;
        dc->emulated_ssh_port = sc.ssh_port;
        dc->emulated_ssh_down_after_s = sc.ssh_down_after_s;
    }
    return 0;
}

static int token_entry(ctx_t *x, const spw_ynode_t *n, spw_token_t *t, spw_error_t *err)
{
    static const char *const keys[] = {"name", "token", "team", "admin", "revoked", NULL};
    if (spw_ymap_check_keys(x->d, n, "a token", keys, err) < 0)
        return -1;
    const char *tok, *team = NULL, *name = NULL;
    int admin = 0, revoked = 0;
    if (spw_ynode_str(x->d, spw_ymap_get(n, "token"), "token", &tok, err) < 0)
        return -1;
    if (strlen(tok) < 16)
        return at(x, spw_ymap_get(n, "token"), err, "%s",
                  "token: use at least 16 characters (e.g. from `openssl rand -hex 16`)");
    for (const char *c = tok; *c; c++)
        if (*c <= ' ' || *c > '~')
            return at(x, spw_ymap_get(n, "token"), err, "%s",
                      "token: printable ASCII without spaces only");
    if (spw_ymap_get(n, "team") && spw_ynode_str(x->d, spw_ymap_get(n, "team"), "team", &team, err) < 0)
        return -1;
    if (spw_ymap_get(n, "admin") && spw_ynode_bool(x->d, spw_ymap_get(n, "admin"), "admin", &admin, err) < 0)
        return -1;
    if (spw_ymap_get(n, "revoked") &&
        spw_ynode_bool(x->d, spw_ymap_get(n, "revoked"), "revoked", &revoked, err) < 0)
        return -1;
    if (!admin == !team)
        return at(x, n, err, "%s", "a token needs either 'team: NAME' or 'admin: true' (not both)");
    if (spw_ymap_get(n, "name")) {
        if (spw_ynode_str(x->d, spw_ymap_get(n, "name"), "name", &name, err) < 0)
            return -1;
        size_t len = strlen(name);
        if (len == 0 || len > 64 || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                 "0123456789._-") != len)
            return at(x, spw_ymap_get(n, "name"), err,
                      "name: 1 to 64 letters, digits, '.', '_' or '-', got '%s'", name);
    }
    t->name = name ? spw_xstrdup(name) : NULL;
    t->token = spw_xstrdup(tok);
    t->team = team ? spw_xstrdup(team) : NULL;
    t->admin = admin;
    t->revoked = revoked;
    return 0;
}

static int owned_list(ctx_t *x, const spw_ynode_t *n, const char *key, const char *what,
                      char ***out, size_t *cnt, spw_error_t *err);

/* A user name (as useradd takes them: a letter or '_' first, then letters,
 * digits, '_', '-' or '.', at most 32) at n, borrowed into *out. */
static int user_value(ctx_t *x, const spw_ynode_t *n, const char *key, const char **out,
                      spw_error_t *err)
{
    const char *s;
    if (spw_ynode_str(x->d, n, key, &s, err) < 0)
        return -1;
    size_t len = strlen(s);
    int good = len > 0 && len <= 32 && (isalpha((unsigned char)s[0]) || s[0] == '_');
    for (size_t i = 1; good && i < len; i++)
        good = isalnum((unsigned char)s[i]) || strchr("_-.", s[i]);
    if (!good)
        return at(x, n, err, "%s: '%.40s' is not a user name (a letter first, then letters, "
                  "digits, '_', '-' or '.'; create it with useradd)", key, s);
    *out = s;
    return 0;
}

/* daemon.job_env: names of variables, or PREFIX*; never a token. */
static int job_env_key(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    spw_daemon_conf_t *dc = &x->cfg->daemon;
    if (owned_list(x, n, "job_env", "variable", &dc->job_env, &dc->njob_env, err) < 0)
        return -1;
    const spw_ynode_t *v = spw_ymap_get(n, "job_env");
    for (size_t i = 0; i < dc->njob_env; i++) {
        const char *e = dc->job_env[i];
        const spw_ynode_t *at_n = v && v->kind == SPW_Y_SEQ ? v->items[i] : v;
        size_t len = strlen(e);
        int good = len > 0 && (isalpha((unsigned char)e[0]) || e[0] == '_');
        for (size_t k = 1; good && k < len; k++)
            good = isalnum((unsigned char)e[k]) || e[k] == '_' || (e[k] == '*' && k == len - 1);
        if (!good)
            return at(x, at_n, err, "job_env: '%.40s' is not a variable name (letters, digits "
                      "and '_', optionally ending in '*' for a prefix)", e);
        int prefix = e[len - 1] == '*';
        if (prefix ? strncmp("SPILLWAY_TOKEN", e, len - 1) == 0 : strncmp(e, "SPILLWAY_", 9) == 0)
            return at(x, at_n, err, "job_env: '%.40s' would pass the daemon's SPILLWAY_* "
                      "variables (its tokens among them) to jobs; name the variables you need "
                      "instead", e);
    }
    return 0;
}

/* Appends the token entries of list v (a YAML sequence) to dc->tokens. */
static int token_list(ctx_t *x, const spw_ynode_t *v, spw_daemon_conf_t *dc, spw_error_t *err)
{
    if (v->kind != SPW_Y_SEQ)
        return at(x, v, err, "%s", "tokens: expected a list of {name: ..., token: ..., team: ...}");
    dc->tokens = spw_xrealloc(dc->tokens, (dc->ntokens + v->n + 1) * sizeof(spw_token_t));
    for (size_t i = 0; i < v->n; i++) {
        spw_token_t *t = &dc->tokens[dc->ntokens];
        memset(t, 0, sizeof(*t));
        if (token_entry(x, v->items[i], t, err) < 0)
            return -1;
        dc->ntokens++;
        for (size_t k = 0; k + 1 < dc->ntokens; k++) {
            if (strcmp(dc->tokens[k].token, t->token) == 0)
                return at(x, v->items[i], err, "%s", "the same token is given twice");
            if (t->name && dc->tokens[k].name && strcmp(dc->tokens[k].name, t->name) == 0)
                return at(x, v->items[i], err, "the token name '%s' is given twice", t->name);
        }
    }
    return 0;
}

/* Tokens without a name get TEAM-N (admin-N): N counts that team's tokens
 * in file order, skipping names already taken. */
static void token_default_names(spw_daemon_conf_t *dc)
{
    for (size_t i = 0; i < dc->ntokens; i++) {
        spw_token_t *t = &dc->tokens[i];
        if (t->name)
            continue;
        const char *base = t->admin ? "admin" : t->team;
        char buf[160];
        for (unsigned k = 1;; k++) {
            snprintf(buf, sizeof(buf), "%.140s-%u", base, k);
            size_t j = 0;
            while (j < dc->ntokens && !(dc->tokens[j].name && strcmp(dc->tokens[j].name, buf) == 0))
                j++;
            if (j == dc->ntokens)
                break;
        }
        t->name = spw_xstrdup(buf);
    }
}

/* Reads daemon.tokens_file: a YAML list of tokens, or a map whose
 * `tokens:` is that list. */
static int tokens_file(ctx_t *x, spw_daemon_conf_t *dc, spw_error_t *err)
{
    spw_ydoc_t *doc = spw_ydoc_load_file(dc->tokens_file, err);
    if (!doc)
        return -1;
    ctx_t fx = *x;
    fx.d = doc;
    const spw_ynode_t *root = spw_ydoc_root(doc);
    int rc = 0;
    if (!root) {
        rc = spw_errorf(err, "%s: empty tokens file: expected a list of {name: ..., token: ..., "
                             "team: ...}", dc->tokens_file);
    } else if (root->kind == SPW_Y_MAP) {
        static const char *const keys[] = {"tokens", NULL};
        const spw_ynode_t *v = spw_ymap_get(root, "tokens");
        if (spw_ymap_check_keys(doc, root, "the tokens file", keys, err) < 0)
            rc = -1;
        else if (!v)
            rc = at(&fx, root, err, "%s", "expected 'tokens:' with a list of tokens");
        else
            rc = token_list(&fx, v, dc, err);
    } else {
        rc = token_list(&fx, root, dc, err);
    }
    spw_ydoc_destroy(doc);
    return rc;
}

static int daemon_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"listen", "state_dir", "gpus", "default_est_runtime_s",
                                       "kill_grace_s", "idle_timeout_s", "max_instance_lifetime_s", "tick_s",
                                       "max_body_bytes", "tokens", "tokens_file",
                                       "max_gpus_per_job", "max_instances_per_job",
                                       "max_queued_per_team", "max_header_bytes",
                                       "request_timeout_s", "max_connections",
                                       "max_connections_per_ip", "emulated", "run_as",
                                       "allow_root_jobs", "job_env", "sample_s",
                                       "idle_gpu", NULL};
    static const char *const ekeys[] = {"seed", "capacity", "preempt_rate_per_h",
                                        "boot_command", "hosts_dir", "ssh", NULL};
    static const char *const ikeys[] = {"threshold_pct", "window_s", "action", NULL};
    spw_daemon_conf_t *dc = &x->cfg->daemon;
    if (spw_ymap_check_keys(x->d, n, "daemon", keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    const char *s;
    if ((v = spw_ymap_get(n, "listen"))) {
        if (spw_ynode_str(x->d, v, "listen", &s, err) < 0)
            return -1;
        const char *colon = strrchr(s, ':');
        char *end;
        long port = colon ? strtol(colon + 1, &end, 10) : -1;
        if (!colon || colon == s || !colon[1] || *end || port < 1 || port > 65535)
            return at(x, v, err, "listen: expected HOST:PORT like 127.0.0.1:8470, got '%s'", s);
        free(dc->listen);
        dc->listen = spw_xstrdup(s);
    }
    if ((v = spw_ymap_get(n, "state_dir"))) {
        if (spw_ynode_str(x->d, v, "state_dir", &s, err) < 0)
            return -1;
        dc->state_dir = resolve(x->base_dir, s);
    }
    if ((v = spw_ymap_get(n, "gpus"))) {
        if (spw_ynode_str(x->d, v, "gpus", &s, err) < 0)
            return -1;
        if (strcmp(s, "auto") == 0)
            dc->gpus_auto = 1;
        else if (strcmp(s, "slots") == 0)
            dc->gpus_auto = 0;
        else
            return at(x, v, err, "gpus: expected 'auto' (nvidia-smi) or 'slots' (gpus_per_node), got '%s'", s);
    }
    double body = (double)dc->max_body_bytes;
    if (num_key(x, n, "default_est_runtime_s", 1, 3.1536e8, &dc->default_est_runtime_s, err) < 0 ||
        num_key(x, n, "kill_grace_s", 0, 3600, &dc->kill_grace_s, err) < 0 ||
        num_key(x, n, "idle_timeout_s", 0, 3.1536e8, &dc->idle_timeout_s, err) < 0 ||
        num_key(x, n, "max_instance_lifetime_s", 0, 3.1536e8, &dc->max_instance_lifetime_s, err) < 0 ||
        num_key(x, n, "tick_s", 0.001, 10, &dc->tick_s, err) < 0 ||
        num_key(x, n, "max_body_bytes", 1024, 64 << 20, &body, err) < 0 ||
        num_key(x, n, "sample_s", 0.1, 3600, &dc->sample_s, err) < 0)
        return -1;
    dc->max_body_bytes = (size_t)body;
    if ((v = spw_ymap_get(n, "idle_gpu"))) {
        const spw_ynode_t *a;
        if (spw_ymap_check_keys(x->d, v, "daemon.idle_gpu", ikeys, err) < 0 ||
            num_key(x, v, "threshold_pct", 0, 100, &dc->idle_threshold_pct, err) < 0 ||
            num_key(x, v, "window_s", 1, 3.1536e8, &dc->idle_window_s, err) < 0)
            return -1;
        if ((a = spw_ymap_get(v, "action"))) {
            if (spw_ynode_str(x->d, a, "action", &s, err) < 0)
                return -1;
            if (strcmp(s, "flag") == 0)
                dc->idle_stop = 0;
            else if (strcmp(s, "stop") == 0)
                dc->idle_stop = 1;
            else
                return at(x, a, err, "idle_gpu.action: expected 'flag' (show it) or 'stop' "
                                     "(cancel the job), got '%s'", s);
        }
    }
    double hdr = dc->max_header_bytes ? (double)dc->max_header_bytes : 16384;
    double conns = dc->max_connections ? dc->max_connections : 1024;
    double per_ip = dc->max_connections_per_ip ? dc->max_connections_per_ip : 64;
    if (num_key(x, n, "max_header_bytes", 1024, 1 << 20, &hdr, err) < 0 ||
        num_key(x, n, "request_timeout_s", 0.5, 3600, &dc->request_timeout_s, err) < 0 ||
        num_key(x, n, "max_connections", 4, 65536, &conns, err) < 0 ||
        num_key(x, n, "max_connections_per_ip", 1, 65536, &per_ip, err) < 0)
        return -1;
    dc->max_header_bytes = (size_t)hdr;
    dc->max_connections = (uint32_t)conns;
    dc->max_connections_per_ip = (uint32_t)per_ip;
    double lim[3] = {dc->max_gpus_per_job, dc->max_instances_per_job, dc->max_queued_per_team};
    if (num_key(x, n, "max_gpus_per_job", 0, 1e6, &lim[0], err) < 0 ||
        num_key(x, n, "max_instances_per_job", 0, 1e6, &lim[1], err) < 0 ||
        num_key(x, n, "max_queued_per_team", 0, 1e9, &lim[2], err) < 0)
        return -1;
    dc->max_gpus_per_job = (uint32_t)lim[0];
    dc->max_instances_per_job = (uint32_t)lim[1];
    dc->max_queued_per_team = (uint32_t)lim[2];
    if ((v = spw_ymap_get(n, "tokens")) && token_list(x, v, dc, err) < 0)
        return -1;
    dc->ntokens_inline = dc->ntokens;
    if ((v = spw_ymap_get(n, "tokens_file"))) {
        if (spw_ynode_str(x->d, v, "tokens_file", &s, err) < 0)
            return -1;
        if (!*s)
            return at(x, v, err, "%s", "tokens_file: expected a file name");
        dc->tokens_file = resolve(x->base_dir, s);
        if (tokens_file(x, dc, err) < 0)
            return -1;
    }
    token_default_names(dc);
    if ((v = spw_ymap_get(n, "run_as"))) {
        if (user_value(x, v, "run_as", &s, err) < 0)
            return -1;
        free(dc->run_as);
        dc->run_as = spw_xstrdup(s);
    }
    if ((v = spw_ymap_get(n, "allow_root_jobs")) &&
        spw_ynode_bool(x->d, v, "allow_root_jobs", &dc->allow_root_jobs, err) < 0)
        return -1;
    if (job_env_key(x, n, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "emulated"))) {
        if (spw_ymap_check_keys(x->d, v, "daemon.emulated", ekeys, err) < 0)
            return -1;
        double seed = (double)dc->emulated_seed, cap = 0;
        if (num_key(x, v, "seed", 0, 9007199254740992.0, &seed, err) < 0 ||
            num_key(x, v, "capacity", 0, 1e6, &cap, err) < 0 ||
            num_key(x, v, "preempt_rate_per_h", 0, 3600, &dc->emulated_preempt_rate_per_h, err) < 0)
            return -1;
        dc->emulated_seed = (uint64_t)seed;
        dc->emulated_capacity = (uint32_t)cap;
        if (emulated_hosts(x, v, dc, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- governance ------------------------------------------------------------ */

/* Letters, digits, '_', '.' and '-', 1 to 64 of them: the names a job spec
 * can carry (team, class, data, residency). */
static int is_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
            return 0;
    return 1;
}

/* A name at node n (a scalar that is_name accepts). */
static int name_value(ctx_t *x, const spw_ynode_t *n, const char *what, const char **out,
                      spw_error_t *err)
{
    if (spw_ynode_str(x->d, n, what, out, err) < 0)
        return -1;
    if (!is_name(*out))
        return at(x, n, err, "%s '%.40s': use 1 to 64 letters, digits, '_', '.' or '-'", what,
                  *out);
    return 0;
}

/* Index of name in a table of owned strings, adding it when new; -1 with
 * an error at n when the table already holds max names. */
static int intern_name(ctx_t *x, const spw_ynode_t *n, char ***tab, size_t *cnt, size_t max,
                       const char *what, const char *name, spw_error_t *err)
{
    for (size_t i = 0; i < *cnt; i++)
        if (strcmp((*tab)[i], name) == 0)
            return (int)i;
    if (*cnt >= max)
        return at(x, n, err, "more than %zu %s names in rules and residency; '%s' is one too many",
                  max, what, name);
    *tab = spw_xrealloc(*tab, (*cnt + 1) * sizeof(char *));
    (*tab)[*cnt] = spw_xstrdup(name);
    return (int)(*cnt)++;
}

/* A dollar amount at key of map n: a number, optionally written "$5000";
 * left as it is when absent.  Must be >= lo, or > lo when strict. */
static int usd_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, int strict,
                   double *out, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    const char *s;
    if (spw_ynode_str(x->d, v, key, &s, err) < 0)
        return -1;
    const char *p = s[0] == '$' ? s + 1 : s;
    double d;
    if (spw_parse_double(p, strlen(p), &d) < 0) {
        if (strstr(key, "monthly") || strstr(key, "weekly"))
            return at(x, v, err,
                      "budget in the wrong unit: write dollars as a number, e.g. %s: 5000 "
                      "(got '%.40s')", key, s);
        return at(x, v, err, "%s: write dollars as a number, e.g. %s: 40 (got '%.40s')", key,
                  key, s);
    }
    if (strict ? !(d > lo) : !(d >= lo))
        return at(x, v, err, "%s must be %s %g dollars", key, strict ? "more than" : "at least",
                  lo);
    *out = d;
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
        return at(x, v, err, "%s must be %s %g (%s)", key, strict ? "more than" : "at least", lo,
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
        return at(x, spw_ymap_get(n, "cost_usd_per_gpu_h"), err,
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
        return at(x, spw_ymap_get(o, "gpu_idle_w"), err,
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

/* A whole number > 0 at key of map n (GPU caps), left as it is when absent. */
static int count_key(ctx_t *x, const spw_ynode_t *n, const char *key, double *out,
                     spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    long c;
    if (spw_ynode_int(x->d, v, key, &c, err) < 0)
        return -1;
    if (c < 1 || c > 100000000)
        return at(x, v, err, "%s must be a whole number from 1 to 100000000", key);
    *out = (double)c;
    return 0;
}

/* A duration at key of map n: seconds, or "24h", "7d", "1h30m"; >= lo. */
static int duration_key(ctx_t *x, const spw_ynode_t *n, const char *key, double lo, double *out,
                        spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    const char *s;
    double d;
    if (spw_ynode_str(x->d, v, key, &s, err) < 0)
        return -1;
    if (spw_parse_duration(s, &d) < 0)
        return at(x, v, err, "%s: expected seconds or a duration like 24h, 7d or 1h30m, got '%.40s'",
                  key, s);
    if (d < lo || d > 3.1536e8)
        return at(x, v, err, "%s must be from %g seconds to ten years", key, lo);
    *out = d;
    return 0;
}

/* A non-empty list of strings (or one string) at key of map n, copied
 * into *out / *cnt; left as they are when absent. */
static int owned_list(ctx_t *x, const spw_ynode_t *n, const char *key, const char *what,
                      char ***out, size_t *cnt, spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(n, key);
    if (!v)
        return 0;
    if (v->kind == SPW_Y_SEQ && v->n == 0)
        return at(x, v, err, "%s: an empty list %s nothing; leave the key out instead", key,
                  strncmp(key, "deny", 4) == 0 ? "denies" : "allows");
    const char **tmp;
    if (str_list(x, v, key, &tmp, err) < 0)
        return -1;
    size_t k = 0;
    while (tmp[k])
        k++;
    for (size_t i = 0; i < k; i++)
        if (!tmp[i][0]) {
            free(tmp);
            return at(x, v->kind == SPW_Y_SEQ ? v->items[i] : v, err, "%s: an empty %s name", key,
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

/* Appends "a, b, c" of names (at most len bytes) to buf. */
static void join_names(char *buf, size_t len, const char *const *names, size_t stride, size_t n)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < n && used + 1 < len; i++) {
        const char *s = *(const char *const *)((const char *)names + i * stride);
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s);
    }
}

static int team_entry(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"name", "monthly_usd", "weekly_usd", "on_exhausted",
                                       "max_cloud_usd_per_h", "max_cloud_gpus",
                                       "max_cloud_egress_usd_per_month",
                                       "max_egress_usd_per_month", "run_as", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "a team", keys, err) < 0)
        return -1;
    const spw_ynode_t *nn = spw_ymap_get(n, "name");
    const char *name;
    if (!nn)
        return at(x, n, err, "%s", "a team needs 'name: NAME' (the team jobs name with team:)");
    if (name_value(x, nn, "team name", &name, err) < 0)
        return -1;
    for (size_t i = 0; i < g->nteams; i++)
        if (strcmp(g->teams[i].name, name) == 0)
            return at(x, nn, err, "two teams are named '%s' (first at line %d)", name,
                      g->teams[i].line);
    if (g->nteams >= SPW_GOV_MAX_TEAMS)
        return at(x, n, err, "more than %d teams; merge some (a rule's team set is %d bits)",
                  SPW_GOV_MAX_TEAMS, SPW_GOV_MAX_TEAMS);
    const spw_ynode_t *ru = spw_ymap_get(n, "run_as");
    if (ru) {
        const char *user;
        spw_daemon_conf_t *dc = &x->cfg->daemon;
        if (user_value(x, ru, "run_as", &user, err) < 0)
            return -1;
        dc->team_run_as = spw_xrealloc(dc->team_run_as,
                                       (dc->nteam_run_as + 1) * sizeof(*dc->team_run_as));
        dc->team_run_as[dc->nteam_run_as].team = spw_xstrdup(name);
        dc->team_run_as[dc->nteam_run_as++].user = spw_xstrdup(user);
    }
    const spw_ynode_t *mn = spw_ymap_get(n, "monthly_usd"), *wn = spw_ymap_get(n, "weekly_usd");
    if (mn && wn)
        return at(x, wn, err, "team '%s': give monthly_usd or weekly_usd, not both", name);
    /* The egress cap covers cloud placements only (copies into on-prem
     * pools are paid and reported, not capped: docs/governance.md), hence
     * its name; max_egress_usd_per_month is its old name, still read. */
    const spw_ynode_t *en = spw_ymap_get(n, "max_cloud_egress_usd_per_month"),
                      *on = spw_ymap_get(n, "max_egress_usd_per_month");
    if (en && on)
        return at(x, on, err, "team '%s': max_egress_usd_per_month is the old name of "
                  "max_cloud_egress_usd_per_month; give only max_cloud_egress_usd_per_month", name);
    spw_team_spec_t t = {
        .line = n->line,
        .budget_usd = INFINITY,
        .period = wn ? SPW_PERIOD_WEEK : SPW_PERIOD_MONTH,
        .on_exhausted = SPW_EXHAUSTED_HOLD,
        .max_cloud_usd_per_h = INFINITY,
        .max_cloud_gpus = INFINITY,
        .max_egress_usd_per_month = INFINITY,
    };
    if (usd_key(x, n, wn ? "weekly_usd" : "monthly_usd", 0, 0, &t.budget_usd, err) < 0 ||
        usd_key(x, n, "max_cloud_usd_per_h", 0, 1, &t.max_cloud_usd_per_h, err) < 0 ||
        usd_key(x, n, on ? "max_egress_usd_per_month" : "max_cloud_egress_usd_per_month", 0, 0,
                &t.max_egress_usd_per_month, err) < 0 ||
        count_key(x, n, "max_cloud_gpus", &t.max_cloud_gpus, err) < 0)
        return -1;
    const spw_ynode_t *ev = spw_ymap_get(n, "on_exhausted");
    if (ev) {
        const char *s;
        spw_error_t e2;
        if (spw_ynode_str(x->d, ev, "on_exhausted", &s, err) < 0)
            return -1;
        if (spw_exhausted_parse(s, &t.on_exhausted, &e2) < 0)
            return at(x, ev, err, "team '%s': on_exhausted: %s", name, e2.text);
    }
    t.name = spw_xstrdup(name);
    g->teams = spw_xrealloc(g->teams, (g->nteams + 1) * sizeof(*g->teams));
    g->teams[g->nteams++] = t;
    return 0;
}

static int teams_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    if (n->kind != SPW_Y_SEQ)
        return at(x, n, err, "%s", "teams: expected a list like '- {name: ml, monthly_usd: 5000}'");
    for (size_t i = 0; i < n->n; i++)
        if (team_entry(x, n->items[i], err) < 0)
            return -1;
    return 0;
}

static int caps_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"max_cloud_usd_per_h", "max_cloud_gpus",
                                       "default_max_runtime_s", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "caps", keys, err) < 0)
        return -1;
    if (usd_key(x, n, "max_cloud_usd_per_h", 0, 1, &g->max_cloud_usd_per_h, err) < 0 ||
        count_key(x, n, "max_cloud_gpus", &g->max_cloud_gpus, err) < 0 ||
        duration_key(x, n, "default_max_runtime_s", 1, &g->default_max_runtime_s, err) < 0)
        return -1;
    return 0;
}

static int residency_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"onprem", "regions", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (n->kind != SPW_Y_MAP)
        return at(x, n, err, "%s",
                  "residency: expected a map of classes like 'eu: {onprem: true, regions: "
                  "[eu-west-1]}'");
    for (size_t i = 0; i < n->n; i++) {
        const char *name = n->keys[i];
        const spw_ynode_t *v = n->items[i];
        spw_ynode_t pos = {.line = n->key_lines[i], .col = n->key_cols[i]};
        if (!is_name(name))
            return at(x, &pos, err,
                      "residency '%.40s': use 1 to 64 letters, digits, '_', '.' or '-'", name);
        for (size_t k = 0; k < g->nresidencies; k++)
            if (strcmp(g->residencies[k].name, name) == 0)
                return at(x, &pos, err, "residency '%s' is given twice (first at line %d)", name,
                          g->residencies[k].line);
        char section[96];
        snprintf(section, sizeof(section), "residency '%s'", name);
        if (spw_ymap_check_keys(x->d, v, section, keys, err) < 0)
            return -1;
        if (intern_name(x, &pos, &g->classes, &g->nclasses, SPW_GOV_MAX_CLASSES, "class", name,
                        err) < 0)
            return -1;
        g->residencies = spw_xrealloc(g->residencies, (g->nresidencies + 1) * sizeof(*g->residencies));
        spw_residency_spec_t *r = &g->residencies[g->nresidencies++];
        memset(r, 0, sizeof(*r));
        r->name = spw_xstrdup(name);
        r->line = pos.line;
        r->onprem = 1;
        const spw_ynode_t *on = spw_ymap_get(v, "onprem"), *rn = spw_ymap_get(v, "regions");
        if (on && spw_ynode_bool(x->d, on, "onprem", &r->onprem, err) < 0)
            return -1;
        if (rn && !(rn->kind == SPW_Y_SEQ && rn->n == 0)
            && owned_list(x, v, "regions", "region", &r->regions, &r->nregions, err) < 0)
            return -1;
    }
    return 0;
}

/* The gpus condition of a match: N, "A-B", ">=N" or "<=N". */
static int gpus_range(ctx_t *x, const spw_ynode_t *v, spw_rule_t *r, spw_error_t *err)
{
    const char *s;
    if (spw_ynode_str(x->d, v, "gpus", &s, err) < 0)
        return -1;
    int64_t a = 0, b = 0;
    const char *dash = strchr(s, '-');
    int good;
    if (strncmp(s, ">=", 2) == 0) {
        good = spw_parse_i64(s + 2, strlen(s + 2), &a) == 0;
        b = UINT32_MAX;
    } else if (strncmp(s, "<=", 2) == 0) {
        good = spw_parse_i64(s + 2, strlen(s + 2), &b) == 0;
        a = 1;
    } else if (dash && dash != s) {
        good = spw_parse_i64(s, (size_t)(dash - s), &a) == 0
               && spw_parse_i64(dash + 1, strlen(dash + 1), &b) == 0;
    } else {
        good = spw_parse_i64(s, strlen(s), &a) == 0;
        b = a;
    }
    if (!good)
        return at(x, v, err, "gpus: expected a count (8), a range (\"1-8\"), \">=N\" or \"<=N\", "
                             "got '%.40s'", s);
    if (a < 1 || b < 1 || a > UINT32_MAX || b > UINT32_MAX)
        return at(x, v, err, "gpus: counts must be from 1 to %u, got '%.40s'", UINT32_MAX, s);
    if (a > b)
        return at(x, v, err, "gpus: the range '%.40s' is empty (write the smaller count first)", s);
    r->gpus_min = (uint32_t)a;
    r->gpus_max = (uint32_t)b;
    return 0;
}

static int rule_match(ctx_t *x, const spw_ynode_t *m, spw_rule_t *r, spw_error_t *err)
{
    static const char *const keys[] = {"team", "class", "labels", "gpus", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    char section[96];
    snprintf(section, sizeof(section), "the match of rule '%s'", r->name);
    if (spw_ymap_check_keys(x->d, m, section, keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(m, "team"))) {
        size_t cnt = v->kind == SPW_Y_SEQ ? v->n : 1;
        if (cnt == 0)
            return at(x, v, err, "rule '%s': team: an empty list matches nothing; leave it out",
                      r->name);
        for (size_t i = 0; i < cnt; i++) {
            const spw_ynode_t *t = v->kind == SPW_Y_SEQ ? v->items[i] : v;
            const char *name;
            if (spw_ynode_str(x->d, t, "team", &name, err) < 0)
                return -1;
            size_t k = 0;
            while (k < g->nteams && strcmp(g->teams[k].name, name) != 0)
                k++;
            if (k == g->nteams) {
                if (!g->nteams)
                    return at(x, t, err, "rule '%s': team '%.40s' is not in teams: (there is no "
                                         "teams: section; declare the team there)", r->name, name);
                char known[160] = "";
                join_names(known, sizeof(known), (const char *const *)&g->teams[0].name,
                           sizeof(g->teams[0]), g->nteams);
                return at(x, t, err, "rule '%s': team '%.40s' is not in teams: (known: %s)",
                          r->name, name, known);
            }
            r->teams |= 1ull << k;
        }
    }
    if ((v = spw_ymap_get(m, "class"))) {
        size_t cnt = v->kind == SPW_Y_SEQ ? v->n : 1;
        if (cnt == 0)
            return at(x, v, err, "rule '%s': class: an empty list matches nothing; leave it out",
                      r->name);
        for (size_t i = 0; i < cnt; i++) {
            const spw_ynode_t *c = v->kind == SPW_Y_SEQ ? v->items[i] : v;
            const char *name;
            if (name_value(x, c, "class", &name, err) < 0)
                return -1;
            int k = intern_name(x, c, &g->classes, &g->nclasses, SPW_GOV_MAX_CLASSES, "class",
                                name, err);
            if (k < 0)
                return -1;
            r->classes |= 1ull << k;
        }
    }
    if ((v = spw_ymap_get(m, "labels"))) {
        if (v->kind != SPW_Y_MAP || v->n == 0)
            return at(x, v, err, "rule '%s': labels: expected a map like {env: prod}", r->name);
        for (size_t i = 0; i < v->n; i++) {
            spw_ynode_t pos = {.line = v->key_lines[i], .col = v->key_cols[i]};
            const char *key = v->keys[i], *val;
            if (spw_ynode_str(x->d, v->items[i], key, &val, err) < 0)
                return -1;
            if (!key[0] || strchr(key, '=') || !val[0] || strchr(val, '=')
                || strlen(key) > 128 || strlen(val) > 128)
                return at(x, &pos, err, "rule '%s': label %.40s: %.40s: keys and values must be "
                                        "1 to 128 characters, without '='", r->name, key, val);
            char kv[260];
            snprintf(kv, sizeof(kv), "%.128s=%.128s", key, val);
            int k = intern_name(x, &pos, &g->labels, &g->nlabels, SPW_GOV_MAX_LABELS, "label", kv,
                                err);
            if (k < 0)
                return -1;
            r->labels |= 1ull << k;
        }
    }
    if ((v = spw_ymap_get(m, "gpus")) && gpus_range(x, v, r, err) < 0)
        return -1;
    return 0;
}

static int rule_entry(ctx_t *x, const spw_ynode_t *n, size_t idx, spw_error_t *err)
{
    static const char *const keys[] = {"name", "match", "placement", "spot", "allow_providers",
                                       "deny_providers", "allow_regions", "deny_regions",
                                       "allow_families", "deny_families", "allow_gpus",
                                       "max_usd_per_gpu_h", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "a rule", keys, err) < 0)
        return -1;
    if (g->nrules >= SPW_GOV_MAX_RULES)
        return at(x, n, err, "more than %d rules; merge some", SPW_GOV_MAX_RULES);
    char defname[32];
    const char *name = defname;
    snprintf(defname, sizeof(defname), "rule %zu", idx + 1);
    const spw_ynode_t *nn = spw_ymap_get(n, "name");
    if (nn) {
        if (spw_ynode_str(x->d, nn, "name", &name, err) < 0)
            return -1;
        if (!name[0] || strlen(name) > 128)
            return at(x, nn, err, "%s", "a rule's name must be 1 to 128 characters");
    }
    for (size_t i = 0; i < g->nrules; i++)
        if (strcmp(g->rules[i].name, name) == 0)
            return at(x, nn ? nn : n, err, "two rules are named '%s' (first at line %d)", name,
                      g->rules[i].line);
    g->rules = spw_xrealloc(g->rules, (g->nrules + 1) * sizeof(*g->rules));
    spw_rule_t *r = &g->rules[g->nrules++];
    memset(r, 0, sizeof(*r));
    r->name = spw_xstrdup(name);
    r->line = n->line;
    r->gpus_min = 1;
    r->gpus_max = UINT32_MAX;
    r->max_usd_per_gpu_h = INFINITY;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(n, "match")) && rule_match(x, v, r, err) < 0)
        return -1;
    const char *s;
    spw_error_t e2;
    if ((v = spw_ymap_get(n, "placement"))) {
        if (spw_ynode_str(x->d, v, "placement", &s, err) < 0)
            return -1;
        if (spw_placement_parse(s, &r->placement, &e2) < 0)
            return at(x, v, err, "rule '%s': placement: %s", r->name, e2.text);
    }
    if ((v = spw_ymap_get(n, "spot"))) {
        if (spw_ynode_str(x->d, v, "spot", &s, err) < 0)
            return -1;
        if (spw_spot_rule_parse(s, &r->spot, &e2) < 0)
            return at(x, v, err, "rule '%s': spot: %s", r->name, e2.text);
    }
    if (owned_list(x, n, "allow_providers", "provider", &r->allow_providers,
                   &r->n_allow_providers, err) < 0 ||
        owned_list(x, n, "deny_providers", "provider", &r->deny_providers, &r->n_deny_providers,
                   err) < 0 ||
        owned_list(x, n, "allow_regions", "region", &r->allow_regions, &r->n_allow_regions,
                   err) < 0 ||
        owned_list(x, n, "deny_regions", "region", &r->deny_regions, &r->n_deny_regions, err) < 0 ||
        owned_list(x, n, "allow_families", "family", &r->allow_families, &r->n_allow_families,
                   err) < 0 ||
        owned_list(x, n, "deny_families", "family", &r->deny_families, &r->n_deny_families,
                   err) < 0 ||
        owned_list(x, n, "allow_gpus", "GPU model", &r->allow_gpus, &r->n_allow_gpus, err) < 0 ||
        usd_key(x, n, "max_usd_per_gpu_h", 0, 1, &r->max_usd_per_gpu_h, err) < 0)
        return -1;
    if (r->placement == SPW_PLACE_UNSET && r->spot == SPW_SPOT_UNSET && !r->n_allow_providers
        && !r->n_deny_providers && !r->n_allow_regions && !r->n_deny_regions
        && !r->n_allow_families && !r->n_deny_families && !r->n_allow_gpus
        && isinf(r->max_usd_per_gpu_h))
        return at(x, n, err, "rule '%s' has no effect: give placement, spot, an allow_/deny_ "
                             "list or max_usd_per_gpu_h", r->name);
    return 0;
}

static int rules_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    if (n->kind != SPW_Y_SEQ)
        return at(x, n, err, "%s",
                  "rules: expected a list like '- {match: {team: ml}, placement: onprem_only}'");
    for (size_t i = 0; i < n->n; i++)
        if (rule_entry(x, n->items[i], i, err) < 0)
            return -1;
    return 0;
}

/* A place data lives: an on-prem pool's name, "REGION" or "PROVIDER:REGION". */
static int site_value(ctx_t *x, const spw_ynode_t *v, const char *what, spw_site_t *out,
                      spw_error_t *err)
{
    const spw_fleet_t *f = &x->cfg->fleet;
    const char *s;
    if (spw_ynode_str(x->d, v, what, &s, err) < 0)
        return -1;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < f->npools; i++)
        if (strcmp(f->pools[i].name, s) == 0) {
            out->pool = (int)i;
            return 0;
        }
    const char *colon = strchr(s, ':');
    if (colon && (colon == s || !colon[1]))
        return at(x, v, err, "%s: expected a pool, REGION or PROVIDER:REGION, got '%.40s'", what, s);
    size_t plen = colon ? (size_t)(colon - s) : 0;
    const char *region = colon ? colon + 1 : s;
    int known = 0;
    for (size_t i = 0; i < f->noffers && !known; i++)
        known = strcmp(f->offers[i].region, region) == 0
                && (!colon || (strlen(f->offers[i].provider) == plen
                               && strncmp(f->offers[i].provider, s, plen) == 0));
    if (!known) {
        char pools[128] = "";
        if (f->npools)        /* pools is NULL without any */
            join_names(pools, sizeof(pools), (const char *const *)&f->pools[0].name,
                       sizeof(f->pools[0]), f->npools);
        return at(x, v, err, "%s '%.40s' is neither an on-prem pool (%s) nor a region of a cloud "
                             "offer; write a pool name or a region like aws:us-east-1",
                  what, s, f->npools ? pools : "there are none");
    }
    out->pool = -1;
    if (colon) {
        out->provider = spw_xmalloc(plen + 1);
        memcpy(out->provider, s, plen);
        out->provider[plen] = '\0';
    }
    out->region = spw_xstrdup(region);
    return 0;
}

static int dataset_entry(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"name", "size_gb", "home", "replicas", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "a dataset", keys, err) < 0)
        return -1;
    const spw_ynode_t *nn = spw_ymap_get(n, "name"), *hn = spw_ymap_get(n, "home");
    const spw_ynode_t *sn = spw_ymap_get(n, "size_gb"), *rn = spw_ymap_get(n, "replicas");
    const char *name;
    if (!nn)
        return at(x, n, err, "%s", "a dataset needs 'name: NAME' (what jobs write as data:)");
    if (name_value(x, nn, "dataset name", &name, err) < 0)
        return -1;
    for (size_t i = 0; i < g->ndatasets; i++)
        if (strcmp(g->datasets[i].name, name) == 0)
            return at(x, nn, err, "two datasets are named '%s' (first at line %d)", name,
                      g->datasets[i].line);
    if (!sn)
        return at(x, n, err, "dataset '%s': missing 'size_gb' (its size in gigabytes)", name);
    if (!hn)
        return at(x, n, err, "dataset '%s': missing 'home' (a pool, or a region like "
                             "aws:us-east-1)", name);
    double size;
    if (spw_ynode_double(x->d, sn, "size_gb", &size, err) < 0)
        return -1;
    if (!(size > 0) || size > 1e9)
        return at(x, sn, err, "dataset '%s': size_gb must be more than 0", name);
    if (rn && rn->kind != SPW_Y_SEQ && rn->kind != SPW_Y_SCALAR)
        return at(x, rn, err, "dataset '%s': replicas: expected a list of pools or regions", name);
    g->datasets = spw_xrealloc(g->datasets, (g->ndatasets + 1) * sizeof(*g->datasets));
    spw_dataset_spec_t *ds = &g->datasets[g->ndatasets++];
    memset(ds, 0, sizeof(*ds));
    ds->home.pool = -1;
    ds->name = spw_xstrdup(name);
    ds->line = n->line;
    ds->size_gb = size;
    if (site_value(x, hn, "home", &ds->home, err) < 0)
        return -1;
    size_t cnt = !rn ? 0 : rn->kind == SPW_Y_SEQ ? rn->n : 1;
    if (cnt)
        ds->replicas = spw_xcalloc(cnt, sizeof(spw_site_t));
    for (size_t i = 0; i < cnt; i++) {
        if (site_value(x, rn->kind == SPW_Y_SEQ ? rn->items[i] : rn, "replica", &ds->replicas[i],
                       err) < 0)
            return -1;
        ds->nreplicas = i + 1;
    }
    return 0;
}

static int data_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"bandwidth_gbps", "cache_ttl_s", "storage_usd_per_gb_month",
                                       "egress_usd_per_gb", "datasets", NULL};
    static const char *const ekeys[] = {"aws", "gcp", "azure", "onprem", NULL};
    spw_gov_t *g = &x->cfg->fleet.gov;
    if (spw_ymap_check_keys(x->d, n, "data", keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(n, "bandwidth_gbps"))) {
        double bw;
        if (spw_ynode_double(x->d, v, "bandwidth_gbps", &bw, err) < 0)
            return -1;
        if (!(bw > 0) || bw > 1e6)
            return at(x, v, err, "%s", "bandwidth_gbps must be more than 0 (gigabits per second)");
        g->bandwidth_gbps = bw;
    }
    if (duration_key(x, n, "cache_ttl_s", 0, &g->cache_ttl_s, err) < 0 ||
        usd_key(x, n, "storage_usd_per_gb_month", 0, 0, &g->storage_usd_per_gb_month, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "egress_usd_per_gb"))) {
        if (spw_ymap_check_keys(x->d, v, "data.egress_usd_per_gb", ekeys, err) < 0)
            return -1;
        if (usd_key(x, v, "aws", 0, 0, &g->egress_aws_usd_per_gb, err) < 0 ||
            usd_key(x, v, "gcp", 0, 0, &g->egress_gcp_usd_per_gb, err) < 0 ||
            usd_key(x, v, "azure", 0, 0, &g->egress_azure_usd_per_gb, err) < 0 ||
            usd_key(x, v, "onprem", 0, 0, &g->egress_onprem_usd_per_gb, err) < 0)
            return -1;
    }
    if ((v = spw_ymap_get(n, "datasets"))) {
        if (v->kind != SPW_Y_SEQ)
            return at(x, v, err, "%s",
                      "datasets: expected a list like '- {name: imagenet, size_gb: 150, home: dc1}'");
        for (size_t i = 0; i < v->n; i++)
            if (dataset_entry(x, v->items[i], err) < 0)
                return -1;
    }
    return 0;
}

static int sim_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"start", NULL};
    if (spw_ymap_check_keys(x->d, n, "sim", keys, err) < 0)
        return -1;
    const spw_ynode_t *v = spw_ymap_get(n, "start");
    if (!v)
        return 0;
    const char *s;
    if (spw_ynode_str(x->d, v, "start", &s, err) < 0)
        return -1;
    char full[40];
    double t;
    /* A bare date is that day's midnight UTC. */
    if (strlen(s) == 10) {
        snprintf(full, sizeof(full), "%sT00:00:00Z", s);
        s = full;
    }
    if (spw_parse_rfc3339(s, &t) < 0)
        return at(x, v, err, "start: expected a date or an RFC 3339 time like 2026-11-01T00:00:00Z, "
                             "got '%.40s'", v->str);
    x->cfg->fleet.gov.origin_s = t;
    return 0;
}

/* ---- spot, failures ---------------------------------------------------------- */

/* A duration value at node v: seconds or "36h", "1d12h"; lo .. hi seconds. */
static int duration_value(ctx_t *x, const spw_ynode_t *v, const char *key, double lo, double hi,
                          double *out, spw_error_t *err)
{
    const char *s;
    double d;
    if (spw_ynode_str(x->d, v, key, &s, err) < 0)
        return -1;
    if (spw_parse_duration(s, &d) < 0)
        return at(x, v, err, "%s: expected seconds or a duration like 30m, 4h or 30d, got '%.40s'",
                  key, s);
    if (d < lo || d > hi)
        return at(x, v, err, "%s is %.40s: it must be from %g to %g seconds", key, s, lo, hi);
    *out = d;
    return 0;
}

/* Gives cfg->failures.mtbf_s / mttr_s an entry (0 = never fails) for
 * every pool. */
static void grow_rates(ctx_t *x)
{
    spw_failure_conf_t *fc = &x->cfg->failures;
    size_t n = x->cfg->fleet.npools;
    if (x->nrates >= n)
        return;
    fc->mtbf_s = spw_xrealloc(fc->mtbf_s, n * sizeof(double));
    fc->mttr_s = spw_xrealloc(fc->mttr_s, n * sizeof(double));
    for (size_t i = x->nrates; i < n; i++)
        fc->mtbf_s[i] = fc->mttr_s[i] = 0;
    x->nrates = n;
}

/* Per-pool mean time between failures / to repair, for the pools [start,
 * npools) one onprem entry made. */
static int pool_rates(ctx_t *x, const spw_ynode_t *n, size_t start, spw_error_t *err)
{
    spw_failure_conf_t *fc = &x->cfg->failures;
    const spw_fleet_t *f = &x->cfg->fleet;
    const spw_ynode_t *bn = spw_ymap_get(n, "mtbf"), *rn = spw_ymap_get(n, "mttr");
    double mtbf = 0, mttr = 0;
    if (!bn && !rn)
        return 0;
    if (!bn)
        return at(x, rn, err, "pool '%s': mttr needs mtbf (the mean time between failures of "
                              "one node, e.g. mtbf: 30d)", f->pools[start].name);
    /* Up to about 3,000 years: a disk's quoted MTBF is in the millions of hours. */
    if (duration_value(x, bn, "mtbf", 0, 1e11, &mtbf, err) < 0
        || (rn && duration_value(x, rn, "mttr", 0, 3.1536e8, &mttr, err) < 0))
        return -1;
    if (!(mtbf > 0))
        return at(x, bn, err, "pool '%s': mtbf must be more than 0 (leave it out for a pool "
                              "that never fails)", f->pools[start].name);
    grow_rates(x);
    for (size_t i = start; i < f->npools; i++) {
        fc->mtbf_s[i] = mtbf;
        fc->mttr_s[i] = mttr;
    }
    return 0;
}

/* The AWS Spot Advisor's interruption buckets: the chance that a spot
 * instance is interrupted within a month. */
static const struct {
    const char *label;
    double monthly;     /* the bucket's midpoint (">20%": 25%) */
} interruption_buckets[] = {
    {"<5%", 0.025}, {"5-10%", 0.075}, {"10-15%", 0.125}, {"15-20%", 0.175}, {">20%", 0.25},
};

/* Preemptions per instance-hour of a bucket: the rate of an exponential
 * lifetime that ends within a month (730 h) with the bucket's chance. */
static int interruption_rate(ctx_t *x, const spw_ynode_t *v, double *rate_per_h, spw_error_t *err)
{
    const char *s;
    if (spw_ynode_str(x->d, v, "interruption", &s, err) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(interruption_buckets) / sizeof(interruption_buckets[0]); i++)
        if (strcmp(s, interruption_buckets[i].label) == 0) {
            *rate_per_h = -log(1 - interruption_buckets[i].monthly) / 730;
            return 0;
        }
    return at(x, v, err, "interruption: expected a Spot Advisor bucket, \"<5%%\", \"5-10%%\", "
                         "\"10-15%%\", \"15-20%%\" or \">20%%\" (quoted), got '%.40s'", s);
}

/* Whether every field availability entry a names equals offer o's. */
static int avail_matches(const spw_spot_avail_conf_t *a, const spw_offer_t *o)
{
    return (!a->provider || strcmp(a->provider, o->provider) == 0)
           && (!a->region || strcmp(a->region, o->region) == 0)
           && (!a->zone || strcmp(a->zone, o->zone) == 0)
           && (!a->instance_type || strcmp(a->instance_type, o->instance_type) == 0);
}

int spw_spot_avail_of(const spw_config_t *cfg, const spw_offer_t *o)
{
    int hit = -1;
    for (size_t k = 0; k < cfg->spot.navail; k++)
        if (avail_matches(&cfg->spot.avail[k], o))
            hit = (int)k;
    return hit;
}

static int avail_entry(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"provider", "region", "zone", "instance_type", "trace",
                                       "start_offset", "interruption", "preempt_rate_per_h",
                                       NULL};
    static const char *const sel[] = {"provider", "region", "zone", "instance_type"};
    spw_spot_conf_t *sc = &x->cfg->spot;
    const spw_fleet_t *f = &x->cfg->fleet;
    if (spw_ymap_check_keys(x->d, n, "a spot.availability entry", keys, err) < 0)
        return -1;
    const spw_ynode_t *tn = spw_ymap_get(n, "trace"), *in = spw_ymap_get(n, "interruption");
    const spw_ynode_t *rn = spw_ymap_get(n, "preempt_rate_per_h");
    const spw_ynode_t *on = spw_ymap_get(n, "start_offset");
    if (!!tn + !!in + !!rn != 1)
        return at(x, n, err, "%s", !tn && !in && !rn
                  ? "an availability entry needs one of trace: FILE.json, interruption: "
                    "\"5-10%\" (a Spot Advisor bucket) or preempt_rate_per_h: RATE"
                  : "an availability entry takes one of trace, interruption and "
                    "preempt_rate_per_h, not several");
    if (on && !tn)
        return at(x, on, err, "%s", "start_offset is a position in an availability trace: it "
                                    "goes with trace: FILE.json");
    sc->avail = spw_xrealloc(sc->avail, (sc->navail + 1) * sizeof(*sc->avail));
    spw_spot_avail_conf_t *a = &sc->avail[sc->navail++];
    memset(a, 0, sizeof(*a));
    a->line = n->line;
    char **field[] = {&a->provider, &a->region, &a->zone, &a->instance_type};
    char want[160] = "";
    for (size_t k = 0; k < 4; k++) {
        const spw_ynode_t *v = spw_ymap_get(n, sel[k]);
        const char *s;
        if (!v)
            continue;
        if (spw_ynode_str(x->d, v, sel[k], &s, err) < 0)
            return -1;
        *field[k] = spw_xstrdup(s);
        size_t used = strlen(want);
        snprintf(want + used, sizeof(want) - used, "%s%s %.30s", used ? ", " : "", sel[k], s);
    }
    size_t matched = 0, spot_priced = 0;
    for (size_t i = 0; i < f->noffers; i++)
        if (avail_matches(a, &f->offers[i])) {
            matched++;
            spot_priced += !isnan(f->offers[i].spot_usd_per_h);
        }
    if (!f->noffers)
        return at(x, n, err, "%s", "spot capacity for no cloud offer: add a cloud: section with "
                                   "offers: FILE (a catalog with spot prices)");
    if (!matched)
        return at(x, n, err, "this availability entry (%s) matches no cloud offer; check the "
                             "names against the catalog", want[0] ? want : "any offer");
    if (!spot_priced)
        return at(x, n, err, "this availability entry (%s) matches %zu offers, none with a spot "
                             "price (catalog column spot_usd_per_h), so it has no effect",
                  want[0] ? want : "any offer", matched);
    if (tn) {
        const char *file;
        if (spw_ynode_str(x->d, tn, "trace", &file, err) < 0)
            return -1;
        a->trace_path = resolve(x->base_dir, file);
        spw_error_t e2;
        if (spw_spot_trace_load(a->trace_path, &a->trace, &e2) < 0)
            return at(x, tn, err, "%s", e2.text);
        if (on && duration_value(x, on, "start_offset", 0, 3.1536e8, &a->start_offset_s, err) < 0)
            return -1;
    } else if (in) {
        if (interruption_rate(x, in, &a->preempt_rate_per_h, err) < 0)
            return -1;
    } else if (num_key(x, n, "preempt_rate_per_h", 0, 3600, &a->preempt_rate_per_h, err) < 0) {
        return -1;
    }
    return 0;
}

static int spot_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"policy", "restart_overhead_s", "checkpoint_interval_s",
                                       "max_restarts", "recovery", "failover", "seed",
                                       "availability", NULL};
    spw_policy_t *p = &x->cfg->policy;
    spw_spot_conf_t *sc = &x->cfg->spot;
    if (spw_ymap_check_keys(x->d, n, "spot", keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    const char *s;
    spw_error_t e2;
    if ((v = spw_ymap_get(n, "policy"))) {
        if (spw_ynode_str(x->d, v, "policy", &s, err) < 0)
            return -1;
        if (spw_spot_policy_parse(s, &p->spot_policy, &e2) < 0)
            return at(x, v, err, "spot.policy: %s", e2.text);
    }
    if ((v = spw_ymap_get(n, "recovery"))) {
        if (spw_ynode_str(x->d, v, "recovery", &s, err) < 0)
            return -1;
        if (spw_recovery_parse(s, &p->recovery, &e2) < 0)
            return at(x, v, err, "spot.recovery: %s", e2.text);
    }
    if ((v = spw_ymap_get(n, "failover"))) {
        if (spw_ynode_str(x->d, v, "failover", &s, err) < 0)
            return -1;
        if (spw_failover_parse(s, &p->failover, &e2) < 0)
            return at(x, v, err, "spot.failover: %s", e2.text);
    }
    if ((v = spw_ymap_get(n, "restart_overhead_s"))
        && duration_value(x, v, "restart_overhead_s", 0, 3.1536e8, &p->restart_overhead_s,
                          err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "checkpoint_interval_s"))) {
        if (v->kind == SPW_Y_SCALAR && strcmp(v->str, "continuous") == 0)
            sc->checkpoint_interval_s = SPW_CKPT_CONTINUOUS;
        else if (duration_value(x, v, "checkpoint_interval_s", 0, 3.1536e8,
                                &sc->checkpoint_interval_s, err) < 0)
            return -1;
    }
    if ((v = spw_ymap_get(n, "max_restarts"))) {
        long c;
        if (v->kind == SPW_Y_SCALAR && strcmp(v->str, "unlimited") == 0)
            p->max_restarts = UINT32_MAX;
        else if (v->kind != SPW_Y_SCALAR || spw_ynode_int(x->d, v, "max_restarts", &c, &e2) < 0
                 || c < 0 || c >= (long)UINT32_MAX)
            return at(x, v, err, "max_restarts: expected a count of restarts from 0 or "
                                 "unlimited, got '%.40s'", v->str ? v->str : "a list or map");
        else
            p->max_restarts = (uint32_t)c;
    }
    double seed = (double)sc->seed;
    if (num_key(x, n, "seed", 0, 9007199254740992.0, &seed, err) < 0)
        return -1;
    if (seed != floor(seed))
        return at(x, spw_ymap_get(n, "seed"), err, "%s", "seed must be a whole number");
    sc->seed = (uint64_t)seed;
    if ((v = spw_ymap_get(n, "availability"))) {
        if (v->kind != SPW_Y_SEQ)
            return at(x, v, err, "%s", "availability: expected a list like '- {zone: us-east-1a, "
                                       "trace: FILE.json}'");
        for (size_t i = 0; i < v->n; i++)
            if (avail_entry(x, v->items[i], err) < 0)
                return -1;
    }
    return 0;
}

static int failures_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"file", NULL};
    spw_failure_conf_t *fc = &x->cfg->failures;
    if (spw_ymap_check_keys(x->d, n, "failures", keys, err) < 0)
        return -1;
    const spw_ynode_t *v = spw_ymap_get(n, "file");
    const char *file;
    if (!v)
        return at(x, n, err, "%s", "failures: needs file: FILE.csv (a CSV node,down_s,up_s); "
                                   "for random failures give pools mtbf and mttr instead");
    if (spw_ynode_str(x->d, v, "file", &file, err) < 0)
        return -1;
    if (!x->cfg->fleet.npools)
        return at(x, v, err, "%s", "failures: there is no on-prem pool whose nodes could fail");
    char *path = resolve(x->base_dir, file);
    spw_error_t e2;
    int rc = spw_failures_load(path, &x->cfg->fleet, &fc->list, &fc->n, &e2);
    free(path);
    if (rc < 0)
        return at(x, v, err, "%s", e2.text);
    return 0;
}

static void daemon_defaults(spw_daemon_conf_t *dc)
{
    dc->listen = spw_xstrdup("127.0.0.1:8470");
    dc->gpus_auto = 1;
    dc->default_est_runtime_s = 3600;
    dc->kill_grace_s = 10;
    dc->idle_timeout_s = 300;
    dc->tick_s = 0.1;
    dc->max_body_bytes = 1 << 20;
    dc->sample_s = 5;
    dc->idle_threshold_pct = 5;
    dc->idle_window_s = 1800;
    dc->emulated_seed = 1;
}

/* The performance: section (n may be NULL): the reference GPU runtimes are
 * measured on (default: the first on-prem pool's model; none = no
 * performance model) and throughputs that override the built-in table. */
static int performance_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"reference", "throughput", "classes", NULL};
    spw_fleet_t *f = &x->cfg->fleet;
    const char *ref = NULL;
    if (n && spw_ymap_check_keys(x->d, n, "performance", keys, err) < 0)
        return -1;
    const spw_ynode_t *rn = n ? spw_ymap_get(n, "reference") : NULL;
    if (rn) {
        if (spw_ynode_str(x->d, rn, "reference", &ref, err) < 0)
            return -1;
        if (strcmp(ref, "none") == 0)
            return 0;
    } else {
        for (size_t i = 0; i < f->npools && !ref; i++)
            if (f->pools[i].model >= 0)
                ref = f->models.name[f->pools[i].model];
    }
    const spw_ynode_t *tn = n ? spw_ymap_get(n, "throughput") : NULL;
    if (tn && throughput_map(x, tn, "performance: throughput", &f->perf.names,
                             &f->perf.throughput, &f->perf.n, err) < 0)
        return -1;
    if (!ref)
        return 0;   /* no reference: every GPU runs a job in its runtime */
    int known = !isnan(spw_gpu_throughput(ref));
    for (size_t i = 0; i < f->perf.n && !known; i++)
        known = spw_model_accepts(f->perf.names[i], ref);
    if (!known && rn)
        return at(x, rn, err, "performance: reference GPU '%s' has no throughput: add it "
                  "under performance: throughput: (e.g. %s: 1), or set reference: none", ref, ref);
    if (known) {   /* a first pool of a model nobody rates: no performance model */
        f->perf.reference = spw_xstrdup(ref);
        f->perf.scale_pools = rn != NULL;
    }
    return 0;
}

/* Reads a map of GPU model to throughput (n) into names / tp. */
static int throughput_map(ctx_t *x, const spw_ynode_t *n, const char *what, char ***names,
                          double **tp, size_t *cnt, spw_error_t *err)
{
    if (n->kind != SPW_Y_MAP)
        return at(x, n, err, "%s: expected a map of GPU model to relative throughput, e.g. "
                             "{T4: 0.16, H100: 2.2}", what);
    *names = spw_xmalloc((n->n ? n->n : 1) * sizeof(char *));
    *tp = spw_xmalloc((n->n ? n->n : 1) * sizeof(double));
    *cnt = 0;
    for (size_t i = 0; i < n->n; i++) {
        double v;
        if (spw_ynode_double(x->d, n->items[i], n->keys[i], &v, err) < 0)
            return -1;
        if (!(v > 0) || !isfinite(v))
            return at(x, n->items[i], err, "%s: throughput of %s must be more than 0", what,
                      n->keys[i]);
        (*names)[*cnt] = spw_xstrdup(n->keys[i]);
        (*tp)[(*cnt)++] = v;
    }
    return 0;
}

/* performance: classes: a throughput map per job class (after governance,
 * so a class named only here joins the classes rules and residency know). */
static int perf_classes(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    const spw_ynode_t *cn = n ? spw_ymap_get(n, "classes") : NULL;
    spw_fleet_t *f = &x->cfg->fleet;
    spw_gov_t *g = &f->gov;
    if (!cn)
        return 0;
    if (cn->kind != SPW_Y_MAP)
        return at(x, cn, err, "%s", "performance: classes: expected a map of job class to a "
                                    "throughput map, e.g. {inference: {T4: 0.5}}");
    f->perf.classes = spw_xcalloc(cn->n ? cn->n : 1, sizeof(*f->perf.classes));
    for (size_t i = 0; i < cn->n; i++) {
        int k = intern_name(x, cn->items[i], &g->classes, &g->nclasses, SPW_GOV_MAX_CLASSES,
                            "class", cn->keys[i], err);
        if (k < 0)
            return -1;
        struct spw_perf_class *pc = &f->perf.classes[f->perf.nclasses++];
        pc->jclass = (uint32_t)k + 1;
        char what[96];
        snprintf(what, sizeof(what), "performance: classes: %s", cn->keys[i]);
        if (throughput_map(x, cn->items[i], what, &pc->names, &pc->throughput, &pc->n, err) < 0)
            return -1;
    }
    return 0;
}

static int load_doc(spw_config_t *cfg, spw_ydoc_t *d, const char *base_dir, spw_error_t *err)
{
    static const char *const keys[] = {"onprem", "cloud", "policy", "daemon", "spot", "failures",
                                       "teams", "caps", "rules", "residency", "data", "sim",
                                       "performance", NULL};
    memset(cfg, 0, sizeof(*cfg));
    spw_fleet_init(&cfg->fleet);
    spw_policy_default(&cfg->policy);
    daemon_defaults(&cfg->daemon);
    cfg->spot.seed = 1;
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
            if (pool_entry(&x, on, 0, err) < 0)
                goto error;
        } else if (on->kind == SPW_Y_SEQ) {
            for (size_t i = 0; i < on->n; i++)
                if (pool_entry(&x, on->items[i], i, err) < 0)
                    goto error;
        } else {
            at(&x, on, err, "%s", "onprem: expected a list of pools");
            goto error;
        }
        if (cfg->failures.mtbf_s)
            grow_rates(&x);
    }
    const spw_ynode_t *cn = spw_ymap_get(root, "cloud");
    if (cn && cloud_section(&x, cn, err) < 0)
        goto error;
    const spw_ynode_t *pn = spw_ymap_get(root, "policy");
    if (pn && policy_section(&x, pn, err) < 0)
        goto error;
    const spw_ynode_t *dn = spw_ymap_get(root, "daemon");
    if (dn && daemon_section(&x, dn, err) < 0)
        goto error;
    if (cfg->fleet.npools == 0 && cfg->fleet.noffers == 0) {
        spw_errorf(err, "%s: no on-prem pool and no cloud: add an 'onprem' or 'cloud' section",
                   spw_ydoc_name(d));
        goto error;
    }
    if (performance_section(&x, spw_ymap_get(root, "performance"), err) < 0)
        goto error;
    /* Spot capacity names offers and failures name pools: after the fleet. */
    const spw_ynode_t *sn = spw_ymap_get(root, "spot");
    if (sn && spot_section(&x, sn, err) < 0)
        goto error;
    const spw_ynode_t *fn = spw_ymap_get(root, "failures");
    if (fn && failures_section(&x, fn, err) < 0)
        goto error;
    /* Governance names pools, regions and GPU models, so it comes after
     * the fleet whatever the order in the file; residency before rules so
     * its classes take the first class indices. */
    static const struct {
        const char *key;
        int (*parse)(ctx_t *, const spw_ynode_t *, spw_error_t *);
    } gov_sections[] = {
        {"teams", teams_section}, {"caps", caps_section}, {"residency", residency_section},
        {"rules", rules_section}, {"data", data_section}, {"sim", sim_section},
    };
    for (size_t i = 0; i < sizeof(gov_sections) / sizeof(gov_sections[0]); i++) {
        const spw_ynode_t *gn = spw_ymap_get(root, gov_sections[i].key);
        if (gn && gov_sections[i].parse(&x, gn, err) < 0)
            goto error;
    }
    if (perf_classes(&x, spw_ymap_get(root, "performance"), err) < 0)
        goto error;
    if (spw_gov_validate(&cfg->fleet.gov, &cfg->fleet, spw_ydoc_name(d), err) < 0)
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

void spw_config_free(spw_config_t *cfg)
{
    if (!cfg)
        return;
    spw_fleet_clear(&cfg->fleet);
    for (size_t i = 0; i < cfg->npool_backends; i++) {
        free(cfg->pool_backends[i].backend);
        free(cfg->pool_backends[i].partition);
        free(cfg->pool_backends[i].cluster);
        free(cfg->pool_backends[i].slurm_conf);
        free_strs(cfg->pool_backends[i].hosts, cfg->pool_backends[i].nhosts);
        free(cfg->pool_backends[i].ssh_user);
        free(cfg->pool_backends[i].ssh_key);
        free(cfg->pool_backends[i].ssh_known_hosts);
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
    free(dc->run_as);
    free(dc->emulated_boot_command);
    free(dc->emulated_hosts_dir);
    free(dc->emulated_ssh_user);
    free(dc->emulated_ssh_key);
    free(dc->emulated_ssh_known_hosts);
    free(dc->tokens_file);
    free(dc->config_path);
    free(dc->listen);
    free(dc->state_dir);
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
    spw_failure_conf_t *fc = &cfg->failures;
    free(fc->list);
    free(fc->mtbf_s);
    free(fc->mttr_s);
    memset(fc, 0, sizeof(*fc));
}

/* ---- secrets ------------------------------------------------------------- */

/* 0 when path is a regular file no one but its owner may read or write. */
static int private_file(const char *path, const char *what, spw_error_t *err)
{
    struct stat sb;
    if (stat(path, &sb) < 0)
        return spw_errorf(err, "%s: cannot check the %s: %s", path, what, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return spw_errorf(err, "%s: the %s is not a regular file", path, what);
    if (sb.st_mode & (S_IRWXG | S_IRWXO))
        return spw_errorf(err, "%s: mode %04o lets other users read or change the %s (it holds "
                               "API tokens); make it private to the daemon's user: chmod 600 %s",
                          path, (unsigned)(sb.st_mode & 07777), what, path);
    return 0;
}

int spw_config_check_secrets(const spw_config_t *cfg, spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &cfg->daemon;
    if (dc->tokens_file && private_file(dc->tokens_file, "tokens file", err) < 0)
        return -1;
    if (dc->ntokens_inline && dc->config_path &&
        private_file(dc->config_path, "config file", err) < 0)
        return -1;
    return 0;
}
