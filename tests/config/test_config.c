/* test_config.c: the fleet/policy YAML: pools, flat price, catalog offers
 * (with provider/region filters, from a temporary CSV), node lists, policy
 * fields and defaults, and errors that name FILE:LINE. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "config/config.h"
#include "core/model.h"

static int load(spw_config_t *c, const char *yaml, const char *base_dir, spw_error_t *err)
{
    err->text[0] = '\0';
    return spw_config_load_mem(c, "c.yaml", yaml, strlen(yaml), base_dir, err);
}

/* Writes text to a new temporary file; path receives its name. */
static int write_temp(char *path, const char *text)
{
    strcpy(path, "/tmp/spw_test_config_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int rc = write(fd, text, n) == (ssize_t)n ? 0 : -1;
    close(fd);
    return rc;
}

static const spw_pool_spec_t *pool_named(const spw_fleet_t *f, const char *name)
{
    for (size_t i = 0; i < f->npools; i++)
        if (strcmp(f->pools[i].name, name) == 0)
            return &f->pools[i];
    return NULL;
}

static void test_valid(void)
{
    spw_config_t c;
    spw_error_t err;
    const char *yaml = "onprem:\n"
                       "  - name: dc1\n"
                       "    nodes: 4\n"
                       "    gpus_per_node: 8\n"
                       "    gpu: A100\n"
                       "    cost_usd_per_gpu_h: 1.10\n"
                       "  - name: dc2\n"
                       "    nodes: 2\n"
                       "    gpus_per_node: 4\n"
                       "cloud:\n"
                       "  price_usd_per_gpu_h: 2.5\n"
                       "  boot_delay_s: 90\n"
                       "policy:\n"
                       "  queue: sjf\n"
                       "  scan: skip\n"
                       "  backfill: easy\n"
                       "  fit: best\n"
                       "  wait: runtime:1.5\n";
    is(load(&c, yaml, NULL, &err), 0, "valid: loads (%s)", err.text);
    is(c.fleet.npools, 2, "valid: two pools");
    const spw_pool_spec_t *p = &c.fleet.pools[0];
    is_str(p->name, "dc1", "valid: dc1");
    is(p->nnodes, 4, "valid: dc1 4 nodes");
    int all8 = 1;
    for (uint32_t k = 0; k < p->nnodes; k++)
        all8 &= p->node_gpus[k] == 8;
    ok(all8, "valid: dc1 nodes of 8 GPUs");
    ok(p->model >= 0 && strcmp(c.fleet.models.name[p->model], "A100") == 0, "valid: dc1 model A100");
    is_double(p->cost_usd_per_gpu_h, 1.10, 1e-12, "valid: dc1 cost 1.10");
    p = &c.fleet.pools[1];
    is_str(p->name, "dc2", "valid: dc2");
    is(p->nnodes, 2, "valid: dc2 2 nodes");
    is(p->node_gpus[1], 4, "valid: dc2 nodes of 4");
    is(p->model, -1, "valid: dc2 has no model (accepts any job)");
    is_double(p->cost_usd_per_gpu_h, 0, 0, "valid: dc2 cost defaults to 0");
    is(spw_fleet_gpus(&c.fleet), 40, "valid: 40 GPUs");
    is(c.fleet.noffers, 1, "valid: flat price is one offer");
    const spw_offer_t *o = &c.fleet.offers[0];
    is_str(o->provider, "flat", "valid: provider flat");
    is(o->model, -1, "valid: flat offer takes any model");
    is(o->gpus, 1, "valid: flat offer of one GPU");
    is_double(o->ondemand_usd_per_h, 2.5, 0, "valid: flat price");
    is_double(o->boot_delay_s, 90, 0, "valid: boot delay");
    ok(isnan(o->spot_usd_per_h), "valid: no spot price");
    ok(c.offers_path == NULL, "valid: no catalog path");
    is(c.policy.queue, SPW_QUEUE_SJF, "valid: queue sjf");
    is(c.policy.scan, SPW_SCAN_SKIP, "valid: scan skip");
    is(c.policy.backfill, SPW_BACKFILL_EASY, "valid: backfill easy");
    is(c.policy.fit, SPW_FIT_BEST, "valid: fit best");
    is(c.policy.wait.kind, SPW_WAIT_RUNTIME, "valid: wait runtime");
    is_double(c.policy.wait.param, 1.5, 0, "valid: wait K 1.5");
    spw_config_free(&c);
    spw_config_free(&c);   /* idempotent */

    /* One pool as a map, default name, default policy, no cloud. */
    is(load(&c, "onprem:\n  nodes: 1\n  gpus_per_node: 2\n", NULL, &err), 0,
       "single pool map: loads (%s)", err.text);
    is(c.fleet.npools, 1, "single pool map: one pool");
    is_str(c.fleet.pools[0].name, "pool1", "single pool map: default name pool1");
    is(c.fleet.noffers, 0, "single pool map: no cloud");
    is(c.policy.queue, SPW_QUEUE_FIFO, "default policy: fifo");
    is(c.policy.scan, SPW_SCAN_HOL, "default policy: hol");
    is(c.policy.backfill, SPW_BACKFILL_NONE, "default policy: no backfill");
    is(c.policy.fit, SPW_FIT_FIRST, "default policy: first fit");
    is(c.policy.wait.kind, SPW_WAIT_COMPUTE, "default policy: compute wait");
    is_double(c.policy.wait.param, 0.25, 0, "default policy: compute:0.25");
    spw_config_free(&c);

    /* Cloud only. */
    is(load(&c, "cloud:\n  price_usd_per_gpu_h: 3\n", NULL, &err), 0, "cloud only: loads");
    is(c.fleet.npools, 0, "cloud only: no pools");
    is(c.fleet.noffers, 1, "cloud only: one offer");
    spw_config_free(&c);

    /* Every wait policy spelling. */
    static const struct {
        const char *text;
        spw_wait_kind_t kind;
        double param;
    } waits[] = {{"never", SPW_WAIT_NEVER, 0},          {"none", SPW_WAIT_NONE, 0},
                 {"constant:3600", SPW_WAIT_CONSTANT, 3600}, {"runtime:0.5", SPW_WAIT_RUNTIME, 0.5},
                 {"compute:2", SPW_WAIT_COMPUTE, 2}};
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        char yaml2[256];
        snprintf(yaml2, sizeof(yaml2), "onprem:\n  nodes: 1\n  gpus_per_node: 1\npolicy:\n  wait: %s\n",
                 waits[i].text);
        int rc = load(&c, yaml2, NULL, &err);
        ok(rc == 0 && c.policy.wait.kind == waits[i].kind && c.policy.wait.param == waits[i].param,
           "wait %s parsed", waits[i].text);
        char back[64];
        spw_wait_format(&c.policy.wait, back, sizeof(back));
        is_str(back, waits[i].text, "wait %s formats back the same", waits[i].text);
        spw_config_free(&c);
    }
}

static const char catalog[] =
    "provider,region,zone,instance_type,gpu,gpus,vcpus,ondemand_usd_per_h,spot_usd_per_h\n"
    "aws,us-east-1,use1-az1,p4d.24xlarge,A100,8,96,32.77,9.8\n"
    "aws,eu-west-1,euw1-az1,p4d.24xlarge,A100,8,96,35.0,\n"
    "gcp,us-central1,us-central1-a,a2-highgpu-1g,A100,1,12,3.67,1.1\n"
    "azure,eastus,,NC6,K80,1,6,0.9,\n";

static void test_offers(void)
{
    char path[64], yaml[1024];
    spw_config_t c;
    spw_error_t err;
    if (write_temp(path, catalog) < 0) {
        ok(0, "cannot write a temporary catalog");
        return;
    }
    snprintf(yaml, sizeof(yaml),
             "onprem:\n  - name: dc\n    nodes: 1\n    gpus_per_node: 8\n"
             "cloud:\n  offers: %s\n  providers: [aws, gcp]\n  regions: [us-east-1, us-central1]\n"
             "  boot_delay_s: 120\n", path);
    is(load(&c, yaml, NULL, &err), 0, "offers: loads (%s)", err.text);
    is(c.fleet.noffers, 2, "offers: two pass the provider and region filters");
    const spw_offer_t *o = &c.fleet.offers[0];
    is_str(o->provider, "aws", "offers: aws first (file order)");
    is_str(o->region, "us-east-1", "offers: region");
    is_str(o->zone, "use1-az1", "offers: zone");
    is_str(o->instance_type, "p4d.24xlarge", "offers: instance type");
    ok(o->model >= 0 && strcmp(c.fleet.models.name[o->model], "A100") == 0, "offers: model A100");
    is(o->gpus, 8, "offers: 8 GPUs");
    is_double(o->ondemand_usd_per_h, 32.77, 1e-12, "offers: on-demand price");
    is_double(o->spot_usd_per_h, 9.8, 1e-12, "offers: spot price");
    is_double(o->boot_delay_s, 120, 0, "offers: boot delay from the config");
    o = &c.fleet.offers[1];
    is_str(o->provider, "gcp", "offers: then gcp");
    is(o->gpus, 1, "offers: gcp 1 GPU");
    is_str(c.offers_path, path, "offers: path kept");
    spw_config_free(&c);

    /* No filters: all four; empty spot is NAN; a relative name is taken
     * from base_dir. */
    const char *base = strrchr(path, '/') + 1;
    snprintf(yaml, sizeof(yaml), "cloud:\n  offers: %s\n", base);
    is(load(&c, yaml, "/tmp", &err), 0, "offers relative to base_dir: loads (%s)", err.text);
    is(c.fleet.noffers, 4, "offers: all four without filters");
    ok(isnan(c.fleet.offers[1].spot_usd_per_h), "offers: empty spot price is NAN");
    is_str(c.fleet.offers[3].zone, "", "offers: empty zone");
    is_str(c.offers_path, path, "offers: relative name resolved against base_dir");
    spw_config_free(&c);

    /* Commitments: a copy of the matching offer, cheapest per GPU, with
     * its GPUs and committed rate, and no market price of its own. */
    static const char commit_fmt[] =
        "cloud:\n  offers: %s\n  commitments:\n"
        "    - {name: ri, provider: aws, region: us-east-1, gpus: 16, usd_per_gpu_h: 2.5}\n"
        "    - {name: cud, gpu: A100, gpus: 3, usd_per_gpu_h: 2.2}\n";
    snprintf(yaml, sizeof(yaml), commit_fmt, path);
    ok(load(&c, yaml, NULL, &err) == 0 && c.fleet.noffers == 6,
       "commitments: load, two offers appended to the four (%s)", err.text);
    o = &c.fleet.offers[4];
    ok(spw_offer_committed(o) && strcmp(o->commit_name, "ri") == 0 &&
           strcmp(o->instance_type, "p4d.24xlarge") == 0 && strcmp(o->region, "us-east-1") == 0 &&
           o->commit_gpus == 16 && o->commit_usd_per_gpu_h == 2.5 && o->gpus == 8 &&
           o->ondemand_usd_per_h == 0 && isnan(o->spot_usd_per_h),
       "commitments: ri is 16 GPUs of p4d.24xlarge in us-east-1 at $2.50, no market price");
    o = &c.fleet.offers[5];
    ok(strcmp(o->instance_type, "a2-highgpu-1g") == 0 && o->commit_gpus == 3,
       "commitments: gpu A100 matches the cheapest A100 per GPU (%s)", o->instance_type);
    ok(!spw_offer_committed(&c.fleet.offers[0]), "commitments: the catalog offers are not");
    spw_config_free(&c);
    static const char *const bad_commit[][2] = {
        {"{name: x, provider: oracle, gpus: 8, usd_per_gpu_h: 1}", "matches no cloud offer"},
        {"{name: x, provider: aws, gpus: 12, usd_per_gpu_h: 1}", "positive multiple of 8"},
        {"{name: x, gpus: 1}", "needs name, gpus and usd_per_gpu_h"},
        {"{name: x, gpus: 1, usd_per_gpu_h: 1, term: 1y}", "'term'"},
    };
    for (size_t k = 0; k < 4; k++) {
        snprintf(yaml, sizeof(yaml), "cloud:\n  offers: %s\n  commitments:\n    - %s\n", path,
                 bad_commit[k][0]);
        is(load(&c, yaml, NULL, &err), -1, "commitments: %s refused", bad_commit[k][0]);
        ok(strstr(err.text, "c.yaml:4:") && strstr(err.text, bad_commit[k][1]),
           "commitments: %s", err.text);
    }
    snprintf(yaml, sizeof(yaml), "cloud:\n  offers: %s\n  commitments:\n"
             "    - {name: x, gpus: 1, usd_per_gpu_h: 1}\n"
             "    - {name: x, gpus: 1, usd_per_gpu_h: 1}\n", path);
    is(load(&c, yaml, NULL, &err), -1, "commitments: a name twice refused");
    ok(strstr(err.text, "c.yaml:5:") && strstr(err.text, "two commitments are named 'x'"),
       "commitments: %s", err.text);

    /* A filter that keeps nothing. */
    snprintf(yaml, sizeof(yaml), "cloud:\n  offers: %s\n  providers: [oracle]\n", path);
    is(load(&c, yaml, NULL, &err), -1, "offers: filter keeping nothing refused");
    ok(strstr(err.text, "c.yaml:2:") && strstr(err.text, "no offer"), "offers: %s", err.text);

    /* A config file next to the catalog, naming it relatively. */
    char ypath[64];
    snprintf(yaml, sizeof(yaml), "cloud:\n  offers: %s\n  providers: gcp\n", base);
    if (write_temp(ypath, yaml) == 0) {
        err.text[0] = '\0';
        is(spw_config_load(&c, ypath, &err), 0, "config file: loads (%s)", err.text);
        is(c.fleet.noffers, 1, "config file: one gcp offer (providers as a scalar)");
        is_str(c.offers_path, path, "config file: catalog found beside the config");
        spw_config_free(&c);
        unlink(ypath);
    }
    unlink(path);

    /* Catalog errors are wrapped with the config position. */
    char bad[64];
    write_temp(bad, "provider,region,zone,instance_type,gpu,gpus,ondemand_usd_per_h\n"
                    "aws,r,z,t,A100,8,10\n"
                    "aws,r,z,t,A100,eight,10\n");
    snprintf(yaml, sizeof(yaml), "onprem:\n  nodes: 1\n  gpus_per_node: 1\ncloud:\n  offers: %s\n", bad);
    is(load(&c, yaml, NULL, &err), -1, "bad catalog row refused");
    char want[96];
    snprintf(want, sizeof(want), "%s:3:", bad);
    ok(strstr(err.text, "c.yaml:5:") && strstr(err.text, want) && strstr(err.text, "'gpus'"),
       "bad catalog: config line 5 and catalog line 3: %s", err.text);
    is(c.fleet.noffers, 0, "bad catalog: nothing left");
    ok(c.fleet.pools == NULL && c.fleet.npools == 0, "bad catalog: pools freed too");
    unlink(bad);
    write_temp(bad, "provider,region,zone,instance_type,gpu,gpus\naws,r,z,t,A100,8\n");
    snprintf(yaml, sizeof(yaml), "cloud:\n  offers: %s\n", bad);
    is(load(&c, yaml, NULL, &err), -1, "catalog without prices refused");
    ok(strstr(err.text, "'ondemand_usd_per_h'") != NULL, "catalog: names the missing column: %s",
       err.text);
    unlink(bad);
    snprintf(yaml, sizeof(yaml), "cloud:\n  offers: /nonexistent/offers.csv\n");
    is(load(&c, yaml, NULL, &err), -1, "missing catalog refused");
    ok(strstr(err.text, "c.yaml:2:") && strstr(err.text, "/nonexistent/offers.csv"),
       "missing catalog: %s", err.text);
}

static void test_nodes_from(void)
{
    char path[64], yaml[512];
    spw_config_t c;
    spw_error_t err;
    if (write_temp(path, "sn,cpu_milli,memory_mib,gpu,model\n"
                         "n0,1,1,8,V100M16\n"
                         "n1,1,1,0,\n"
                         "n2,1,1,2,T4\n"
                         "n3,1,1,4,V100M16\n") < 0) {
        ok(0, "cannot write a temporary node list");
        return;
    }
    snprintf(yaml, sizeof(yaml), "onprem:\n  - name: ali\n    nodes_from: %s\n    cost_usd_per_gpu_h: 0.5\n",
             path);
    is(load(&c, yaml, NULL, &err), 0, "nodes_from: loads (%s)", err.text);
    is(c.fleet.npools, 2, "nodes_from: one pool per model");
    const spw_pool_spec_t *v = pool_named(&c.fleet, "ali-V100"), *t = pool_named(&c.fleet, "ali-T4");
    ok(v && v->nnodes == 2 && v->node_gpus[0] == 8 && v->node_gpus[1] == 4,
       "nodes_from: ali-V100 holds nodes of 8 and 4 GPUs (V100M16 read as V100)");
    ok(t && t->nnodes == 1 && t->node_gpus[0] == 2, "nodes_from: ali-T4 holds one node of 2");
    ok(v && v->cost_usd_per_gpu_h == 0.5 && t && t->cost_usd_per_gpu_h == 0.5,
       "nodes_from: cost applies to every pool");
    is(spw_fleet_gpus(&c.fleet), 14, "nodes_from: 14 GPUs (the 0-GPU node is left out)");
    spw_config_free(&c);
    snprintf(yaml, sizeof(yaml), "onprem:\n  - name: ali\n    nodes_from: %s\n    nodes: 3\n", path);
    is(load(&c, yaml, NULL, &err), -1, "nodes_from with nodes refused");
    ok(strstr(err.text, "c.yaml:2:") != NULL, "nodes_from with nodes: %s", err.text);
    unlink(path);
}

/* Loads yaml expecting an error containing every string in want[]. */
static void expect_error(const char *what, const char *yaml, const char *const *want)
{
    spw_config_t c;
    spw_error_t err;
    int rc = load(&c, yaml, NULL, &err);
    int all = rc == -1;
    for (const char *const *w = want; *w && all; w++)
        all = strstr(err.text, *w) != NULL;
    if (!ok(all, "error %s: \"%s\"", what, err.text))
        for (const char *const *w = want; *w; w++)
            diag("  wanted to contain: %s", *w);
    ok(c.fleet.pools == NULL && c.fleet.offers == NULL && c.fleet.models.n == 0,
       "error %s: nothing left allocated", what);
    if (rc == 0)
        spw_config_free(&c);
}

#define ERR(what, yaml, ...)                                                  \
    do {                                                                      \
        static const char *const w_[] = {__VA_ARGS__, NULL};                  \
        expect_error(what, yaml, w_);                                         \
    } while (0)

static void test_errors(void)
{
    ERR("unknown key",
        "onprem:\n  - name: dc1\n    nodes: 4\n    gpu_per_node: 8\n",
        "c.yaml:4:5:", "unknown key 'gpu_per_node'", "onprem pool");
    ERR("unknown top-level key", "onprem:\n  nodes: 1\n  gpus_per_node: 1\nclouds: {}\n",
        "c.yaml:4:", "'clouds'");
    ERR("unknown policy key", "onprem:\n  nodes: 1\n  gpus_per_node: 1\npolicy:\n  order: fifo\n",
        "c.yaml:5:", "'order'");
    ERR("nodes 0", "onprem:\n  - name: dc1\n    nodes: 0\n    gpus_per_node: 8\n", "c.yaml:3:",
        "nodes must be");
    ERR("gpus_per_node 2000", "onprem:\n  - name: dc1\n    nodes: 1\n    gpus_per_node: 2000\n",
        "c.yaml:4:", "gpus_per_node");
    ERR("missing gpus_per_node", "onprem:\n  - name: dc1\n    nodes: 4\n", "c.yaml:2:",
        "missing 'gpus_per_node'");
    ERR("missing nodes", "onprem:\n  - name: dc1\n    gpus_per_node: 4\n", "c.yaml:2:",
        "missing 'nodes'");
    ERR("both price and offers",
        "onprem:\n  nodes: 1\n  gpus_per_node: 1\ncloud:\n  price_usd_per_gpu_h: 2\n"
        "  offers: x.csv\n", "c.yaml:6:", "not both");
    ERR("bad wait policy",
        "onprem:\n  nodes: 1\n  gpus_per_node: 1\npolicy:\n  queue: fifo\n  wait: sometimes\n",
        "c.yaml:6:", "wait policy", "'sometimes'");
    ERR("wait without value", "onprem:\n  nodes: 1\n  gpus_per_node: 1\npolicy:\n  wait: constant\n",
        "c.yaml:5:", "constant");
    ERR("negative wait", "onprem:\n  nodes: 1\n  gpus_per_node: 1\npolicy:\n  wait: runtime:-1\n",
        "c.yaml:5:", "runtime:-1");
    ERR("bad queue", "onprem:\n  nodes: 1\n  gpus_per_node: 1\npolicy:\n  queue: lifo\n", "c.yaml:5:",
        "'lifo'", "fifo");
    ERR("non-number cost",
        "onprem:\n  - name: dc1\n    nodes: 1\n    gpus_per_node: 1\n    cost_usd_per_gpu_h: 1.10 USD\n",
        "c.yaml:5:", "cost_usd_per_gpu_h", "1.10 USD");
    ERR("negative cost",
        "onprem:\n  - name: dc1\n    nodes: 1\n    gpus_per_node: 1\n    cost_usd_per_gpu_h: -1\n",
        "c.yaml:5:", "cost_usd_per_gpu_h");
    ERR("non-integer nodes", "onprem:\n  - name: dc1\n    nodes: 2.5\n    gpus_per_node: 1\n",
        "c.yaml:3:", "nodes");
    ERR("duplicate pool name",
        "onprem:\n  - name: a\n    nodes: 1\n    gpus_per_node: 1\n"
        "  - name: a\n    nodes: 1\n    gpus_per_node: 1\n", "c.yaml:5:", "'a'");
    ERR("negative price", "cloud:\n  price_usd_per_gpu_h: -2\n", "c.yaml:2:", "price_usd_per_gpu_h");
    ERR("negative boot", "cloud:\n  price_usd_per_gpu_h: 2\n  boot_delay_s: -1\n", "c.yaml:3:",
        "boot_delay_s");
    ERR("providers without offers", "cloud:\n  price_usd_per_gpu_h: 2\n  providers: [aws]\n",
        "c.yaml:2:", "offers");
    ERR("no pool and no cloud", "policy:\n  queue: fifo\n", "c.yaml", "no on-prem pool");
    ERR("empty config", "", "c.yaml", "empty");
    ERR("onprem not a list", "onprem: 3\n", "c.yaml:1:", "onprem");
    ERR("YAML syntax", "onprem:\n  - name: [\n", "c.yaml:");
}


/* ---- governance ----------------------------------------------------------- */

/* A fleet of two pools and the four-offer catalog above, for the
 * governance sections; the catalog's path is in catpath. */
static char catpath[64];

static int gov_load(spw_config_t *c, const char *gov_yaml, spw_error_t *err)
{
    static char yaml[8192];
    snprintf(yaml, sizeof(yaml),
             "onprem:\n"                                   /* 1 */
             "  - {name: dc1, nodes: 2, gpus_per_node: 8, gpu: A100}\n"
             "  - {name: dc2, nodes: 1, gpus_per_node: 4, gpu: K80}\n"
             "cloud:\n"                                    /* 4 */
             "  offers: %s\n"                              /* 5 */
             "%s", catpath, gov_yaml);
    return load(c, yaml, NULL, err);
}

static const char gov_full[] =
    "teams:\n"                                                  /* 6 */
    "  - name: ml\n"                                            /* 7 */
    "    monthly_usd: 5000\n"
    "    on_exhausted: onprem_only\n"
    "    max_cloud_usd_per_h: 40\n"                             /* 10 */
    "    max_cloud_gpus: 32\n"
    "    max_egress_usd_per_month: \"$200\"\n"
    "  - name: cv\n"                                            /* 13 */
    "    weekly_usd: $1200.50\n"
    "  - {name: free}\n"                                        /* 15 */
    "caps:\n"
    "  max_cloud_usd_per_h: 100\n"
    "  max_cloud_gpus: 64\n"
    "  default_max_runtime_s: 12h\n"
    "rules:\n"                                                  /* 20 */
    "  - name: prod-onprem\n"                                   /* 21 */
    "    match: {team: ml, class: inference, labels: {env: prod}}\n"
    "    placement: onprem_only\n"
    "  - match: {team: [ml, cv], class: [experiment, batch], gpus: \"1-8\"}\n" /* 24 */
    "    placement: cloud_first\n"
    "    spot: required\n"
    "    allow_providers: [aws, gcp]\n"
    "    deny_regions: [eu-west-1]\n"
    "    deny_families: a2\n"
    "    allow_gpus: [A100]\n"
    "    max_usd_per_gpu_h: 4.5\n"
    "  - name: big\n"                                           /* 32 */
    "    match: {gpus: \">=16\"}\n"
    "    allow_regions: [\"aws:us-east-1\", us-central1]\n"
    "    allow_families: [p4d, a2]\n"
    "    deny_providers: [azure]\n"
    "  - name: small\n"                                         /* 37 */
    "    match: {gpus: \"<=2\", labels: {env: dev, tier: low}}\n"
    "    spot: never\n"
    "residency:\n"                                              /* 40 */
    "  eu: {regions: [eu-west-1]}\n"                            /* 41 */
    "  restricted: {onprem: true}\n"
    "data:\n"                                                   /* 43 */
    "  bandwidth_gbps: 25\n"
    "  cache_ttl_s: 2d\n"
    "  storage_usd_per_gb_month: 0.02\n"
    "  egress_usd_per_gb: {aws: 0.08, gcp: 0.11, azure: 0.05, onprem: 0.01}\n"
    "  datasets:\n"
    "    - {name: imagenet, size_gb: 150, home: dc1, replicas: [\"aws:us-east-1\"]}\n" /* 49 */
    "    - {name: crawl, size_gb: 800, home: us-central1}\n"
    "sim:\n"
    "  start: 2026-11-01T00:00:00Z\n";

static void test_governance(void)
{
    spw_config_t c;
    spw_error_t err;
    if (!ok(gov_load(&c, gov_full, &err) == 0, "governance: loads (%s)", err.text))
        return;
    const spw_gov_t *g = &c.fleet.gov;
    ok(spw_gov_active(g), "governance: active");
    is(g->nteams, 3, "governance: three teams");
    const spw_team_spec_t *t = &g->teams[0];
    is_str(t->name, "ml", "team ml");
    is(t->line, 7, "team ml: line 7");
    is_double(t->budget_usd, 5000, 0, "team ml: $5000");
    is(t->period, SPW_PERIOD_MONTH, "team ml: monthly");
    is(t->on_exhausted, SPW_EXHAUSTED_ONPREM_ONLY, "team ml: onprem_only when exhausted");
    is_double(t->max_cloud_usd_per_h, 40, 0, "team ml: $40/h");
    is_double(t->max_cloud_gpus, 32, 0, "team ml: 32 GPUs");
    is_double(t->max_egress_usd_per_month, 200, 0, "team ml: egress \"$200\"");
    t = &g->teams[1];
    is_double(t->budget_usd, 1200.5, 0, "team cv: $1200.50");
    is(t->period, SPW_PERIOD_WEEK, "team cv: weekly");
    is(t->on_exhausted, SPW_EXHAUSTED_HOLD, "team cv: hold by default");
    ok(isinf(t->max_cloud_usd_per_h) && isinf(t->max_cloud_gpus)
       && isinf(t->max_egress_usd_per_month), "team cv: no caps");
    t = &g->teams[2];
    ok(isinf(t->budget_usd), "team free: no budget");
    is(spw_gov_team(g, "cv"), 1, "spw_gov_team finds cv");
    is_double(g->max_cloud_usd_per_h, 100, 0, "caps: $100/h");
    is_double(g->max_cloud_gpus, 64, 0, "caps: 64 GPUs");
    is_double(g->default_max_runtime_s, 43200, 0, "caps: default max runtime 12h");

    is(g->nrules, 4, "rules: four");
    const spw_rule_t *r = &g->rules[0];
    is_str(r->name, "prod-onprem", "rule 1 name");
    is(r->line, 21, "rule 1 line");
    int ml = spw_gov_team(g, "ml"), cv = spw_gov_team(g, "cv");
    int inf = spw_gov_class(g, "inference"), exp = spw_gov_class(g, "experiment");
    int batch = spw_gov_class(g, "batch"), prod = spw_gov_label(g, "env=prod");
    ok(ml >= 0 && inf >= 0 && exp >= 0 && batch >= 0 && prod >= 0, "names interned");
    ok(r->teams == 1ull << ml && r->classes == 1ull << inf && r->labels == 1ull << prod,
       "rule 1 match masks");
    is(r->placement, SPW_PLACE_ONPREM_ONLY, "rule 1 onprem_only");
    is(r->spot, SPW_SPOT_UNSET, "rule 1 spot unset");
    ok(r->gpus_min == 1 && r->gpus_max == UINT32_MAX, "rule 1 any gpus");
    ok(r->allow_providers == NULL && isinf(r->max_usd_per_gpu_h), "rule 1 no lists, no price");
    r = &g->rules[1];
    is_str(r->name, "rule 2", "rule 2 gets a default name");
    is(r->line, 24, "rule 2 line");
    ok(r->teams == ((1ull << ml) | (1ull << cv)), "rule 2 two teams");
    ok(r->classes == ((1ull << exp) | (1ull << batch)), "rule 2 two classes");
    ok(r->gpus_min == 1 && r->gpus_max == 8, "rule 2 gpus 1-8");
    is(r->placement, SPW_PLACE_CLOUD_FIRST, "rule 2 cloud_first");
    is(r->spot, SPW_SPOT_REQUIRED, "rule 2 spot required");
    ok(r->n_allow_providers == 2 && strcmp(r->allow_providers[1], "gcp") == 0,
       "rule 2 allow_providers");
    ok(r->n_deny_regions == 1 && strcmp(r->deny_regions[0], "eu-west-1") == 0,
       "rule 2 deny_regions");
    ok(r->n_deny_families == 1 && strcmp(r->deny_families[0], "a2") == 0,
       "rule 2 deny_families as a scalar");
    ok(r->n_allow_gpus == 1 && strcmp(r->allow_gpus[0], "A100") == 0, "rule 2 allow_gpus");
    is_double(r->max_usd_per_gpu_h, 4.5, 0, "rule 2 max $/GPU-h");
    r = &g->rules[2];
    ok(r->gpus_min == 16 && r->gpus_max == UINT32_MAX, "rule 3 gpus >=16");
    ok(r->n_allow_regions == 2 && strcmp(r->allow_regions[0], "aws:us-east-1") == 0,
       "rule 3 allow_regions keep the provider prefix");
    ok(r->n_allow_families == 2 && r->n_deny_providers == 1, "rule 3 families and deny");
    r = &g->rules[3];
    ok(r->gpus_min == 1 && r->gpus_max == 2, "rule 4 gpus <=2");
    int dev = spw_gov_label(g, "env=dev"), low = spw_gov_label(g, "tier=low");
    ok(dev >= 0 && low >= 0 && r->labels == ((1ull << dev) | (1ull << low)),
       "rule 4 two labels, all required");
    is(r->spot, SPW_SPOT_NEVER, "rule 4 spot never");

    is(g->nresidencies, 2, "residency: two");
    const spw_residency_spec_t *res = &g->residencies[spw_gov_residency(g, "eu")];
    ok(res->onprem == 1 && res->nregions == 1 && strcmp(res->regions[0], "eu-west-1") == 0,
       "residency eu: on-prem by default and eu-west-1");
    is(res->line, 41, "residency eu: line 41");
    res = &g->residencies[spw_gov_residency(g, "restricted")];
    ok(res->onprem == 1 && res->nregions == 0, "residency restricted: on-prem only");
    ok(spw_gov_class(g, "restricted") >= 0, "residency names are classes");
    is(g->nclasses, 5, "classes: eu, restricted, inference, experiment, batch");

    is_double(g->bandwidth_gbps, 25, 0, "data: bandwidth");
    is_double(g->cache_ttl_s, 172800, 0, "data: cache 2d");
    is_double(g->storage_usd_per_gb_month, 0.02, 0, "data: storage price");
    ok(g->egress_aws_usd_per_gb == 0.08 && g->egress_gcp_usd_per_gb == 0.11
       && g->egress_azure_usd_per_gb == 0.05 && g->egress_onprem_usd_per_gb == 0.01,
       "data: egress prices");
    is(g->ndatasets, 2, "data: two datasets");
    const spw_dataset_spec_t *ds = &g->datasets[0];
    ok(ds->home.pool == 0 && ds->size_gb == 150 && ds->line == 49, "imagenet: home dc1, 150 GB");
    ok(ds->nreplicas == 1 && ds->replicas[0].pool == -1
       && strcmp(ds->replicas[0].provider, "aws") == 0
       && strcmp(ds->replicas[0].region, "us-east-1") == 0, "imagenet: replica aws:us-east-1");
    ds = &g->datasets[1];
    ok(ds->home.pool == -1 && ds->home.provider == NULL
       && strcmp(ds->home.region, "us-central1") == 0, "crawl: home region without provider");
    is(spw_gov_dataset(g, "crawl"), 1, "spw_gov_dataset finds crawl");
    is_double(g->origin_s, 1793491200, 0, "sim.start 2026-11-01");
    spw_config_free(&c);

    /* Nothing configured: the defaults, inactive. */
    ok(gov_load(&c, "", &err) == 0 && !spw_gov_active(&c.fleet.gov)
       && c.fleet.gov.origin_s == 0 && c.fleet.gov.default_max_runtime_s == 86400,
       "no governance sections: defaults (%s)", err.text);
    spw_config_free(&c);
    ok(gov_load(&c, "sim: {start: 2026-11-01}\ncaps: {default_max_runtime_s: 3600}\n", &err) == 0
       && c.fleet.gov.origin_s == 1793491200 && c.fleet.gov.default_max_runtime_s == 3600,
       "a bare date as sim.start; seconds as a duration (%s)", err.text);
    spw_config_free(&c);
}

/* Loads the governance fleet with gov_yaml, expecting an error containing
 * every string in want[]. */
static void gov_error(const char *what, const char *gov_yaml, const char *const *want)
{
    spw_config_t c;
    spw_error_t err;
    int rc = gov_load(&c, gov_yaml, &err);
    int all = rc == -1;
    for (const char *const *w = want; *w && all; w++)
        all = strstr(err.text, *w) != NULL;
    if (!ok(all, "governance error %s: \"%s\"", what, err.text))
        for (const char *const *w = want; *w; w++)
            diag("  wanted to contain: %s", *w);
    ok(c.fleet.gov.teams == NULL && c.fleet.gov.rules == NULL && c.fleet.gov.classes == NULL
       && c.fleet.pools == NULL, "governance error %s: nothing left allocated", what);
    if (rc == 0)
        spw_config_free(&c);
}

#define GERR(what, yaml, ...)                                                 \
    do {                                                                      \
        static const char *const w_[] = {__VA_ARGS__, NULL};                  \
        gov_error(what, yaml, w_);                                            \
    } while (0)

/* Fair share and quotas (docs/fairshare.md): the keys as read, and the
 * checks against the fleet's 20 on-prem GPUs. */
static void test_fairshare(void)
{
    spw_config_t c;
    spw_error_t err;
    int rc = gov_load(&c,
                      "policy: {queue: fair, half_life: 12h, reclaim_grace: 2m}\n"  /* 6 */
                      "cohorts:\n"
                      "  - {name: research, parent: org, weight: 2}\n"
                      "  - {name: org}\n"
                      "teams:\n"
                      "  - {name: nlp, quota: {gpus: 8, borrowing_limit: 4, lending_limit: 6}, "
                      "cohort: research, weight: 3}\n"
                      "  - {name: cv, quota: {gpus: 8}, cohort: org}\n"
                      "  - {name: ops}\n", &err);
    if (!ok(rc == 0, "fair share config loads"))
        diag("%s", err.text);
    if (rc == 0) {
        const spw_gov_t *g = &c.fleet.gov;
        ok(c.policy.queue == SPW_QUEUE_FAIR && c.policy.half_life_s == 43200 &&
           c.policy.reclaim_grace_s == 120, "policy: queue fair, half_life 12h, reclaim_grace 2m");
        ok(g->ncohorts == 2 && g->cohorts[0].parent == 1 && g->cohorts[0].weight == 2 &&
           g->cohorts[1].parent == -1, "cohorts: research under org (a parent named later)");
        ok(g->teams[0].has_quota && g->teams[0].quota_gpus == 8 &&
           g->teams[0].borrowing_limit_gpus == 4 && g->teams[0].lending_limit_gpus == 6 &&
           g->teams[0].cohort == 1 && g->teams[0].weight == 3,
           "team nlp: quota 8, borrowing 4, lending 6, cohort research, weight 3");
        ok(!g->teams[2].has_quota && g->teams[2].cohort == 0 && g->teams[2].weight == 1 &&
           isinf(g->teams[2].borrowing_limit_gpus), "team ops: no quota, no cohort, weight 1");
        spw_config_free(&c);
    }
    GERR("quota over capacity in a cohort",
         "cohorts:\n  - {name: lab}\nteams:\n  - {name: a, quota: {gpus: 12}, cohort: lab}\n"
         "  - {name: b, quota: {gpus: 12}, cohort: lab}\n",
         "c.yaml:10:", "team 'b'", "quotas of cohort 'lab' add up to 24 GPUs, above the 20");
    GERR("quotas over capacity in total",
         "teams:\n  - {name: a, quota: {gpus: 15}}\n  - {name: b, quota: {gpus: 6}}\n",
         "c.yaml:8:", "teams' quotas add up to 21 GPUs, above the 20");
    GERR("unknown cohort", "teams:\n  - {name: a, cohort: nope}\n",
         "c.yaml:7:", "cohort 'nope' is not in cohorts:");
    GERR("unknown parent", "cohorts:\n  - {name: lab, parent: nope}\n",
         "c.yaml:7:", "parent 'nope' is not in cohorts:");
    GERR("cycle", "cohorts:\n  - {name: x, parent: y}\n  - {name: y, parent: x}\n",
         "c.yaml:7:", "its parents form a cycle");
    GERR("lending above quota", "teams:\n  - {name: a, quota: {gpus: 4, lending_limit: 5}}\n",
         "c.yaml:7:", "lending_limit 5 is above the quota's 4 GPUs");
    GERR("quota without gpus", "teams:\n  - {name: a, quota: {borrowing_limit: 5}}\n",
         "c.yaml:7:", "quota: give the team's nominal GPUs");
    GERR("unknown quota key", "teams:\n  - {name: a, quota: {gpu: 5}}\n",
         "c.yaml:7:", "unknown key 'gpu'");
    GERR("fair without teams", "policy: {queue: fair}\n", "policy.queue: fair", "no teams:");
    /* Per-pool parts (quota.pools): read by pool index, then the checks. */
    rc = gov_load(&c, "teams:\n  - {name: a, quota: {gpus: 8, pools: {dc2: 4, dc1: 3}}}\n", &err);
    ok(rc == 0 && c.fleet.gov.teams[0].quota_pool_gpus &&
       c.fleet.gov.teams[0].quota_pool_gpus[0] == 3 && c.fleet.gov.teams[0].quota_pool_gpus[1] == 4,
       "quota.pools: the parts by pool (dc1 3, dc2 4)%s%s", rc ? ": " : "", rc ? err.text : "");
    if (rc == 0)
        spw_config_free(&c);
    GERR("quota.pools: unknown pool", "teams:\n  - {name: a, quota: {gpus: 8, pools: {dc3: 4}}}\n",
         "c.yaml:7:", "'dc3' is not an on-prem pool", "under pools:");
    GERR("quota.pools above quota.gpus", "teams:\n  - {name: a, quota: {gpus: 4, pools: {dc1: 3, dc2: 2}}}\n",
         "c.yaml:7:", "quota.pools add up to 5 GPUs, above the quota's 4", "raise quota.gpus");
    GERR("quota.pools above a pool's GPUs in a cohort",
         "cohorts:\n  - {name: lab}\nteams:\n  - {name: a, quota: {gpus: 4, pools: {dc2: 3}}, cohort: lab}\n"
         "  - {name: b, quota: {gpus: 4, pools: {dc2: 2}}, cohort: lab}\n",
         "c.yaml:10:", "team 'b'", "parts of cohort 'lab' in pool 'dc2' add up to 5 GPUs, above its 4");
    GERR("quota.pools above a pool's GPUs in all",
         "teams:\n  - {name: a, quota: {gpus: 4, pools: {dc2: 3}}}\n"
         "  - {name: b, quota: {gpus: 4, pools: {dc2: 3}}}\n",
         "c.yaml:8:", "team 'b'", "parts in pool 'dc2' add up to 6 GPUs, above its 4");
    GERR("bad half-life", "policy: {half_life: soon}\n", "c.yaml:6:", "half_life");
}

static void test_governance_errors(void)
{
    GERR("unknown team key", "teams:\n  - name: ml\n    monthly_budget: 5\n",
         "c.yaml:8:5:", "unknown key 'monthly_budget'", "a team");
    GERR("bad unit", "teams:\n  - name: ml\n    monthly_usd: 5k\n",
         "c.yaml:8:18:", "budget in the wrong unit: write dollars as a number, e.g. monthly_usd: 5000");
    GERR("euros", "teams:\n  - name: ml\n    weekly_usd: 5000 EUR\n",
         "c.yaml:8:17:", "budget in the wrong unit", "weekly_usd: 5000");
    GERR("both periods", "teams:\n  - name: ml\n    monthly_usd: 5000\n    weekly_usd: 1000\n",
         "c.yaml:9:17:", "give monthly_usd or weekly_usd, not both");
    GERR("negative budget", "teams:\n  - {name: ml, monthly_usd: -5}\n", "c.yaml:7:", "at least 0");
    GERR("zero cap", "teams:\n  - {name: ml, max_cloud_usd_per_h: 0}\n", "c.yaml:7:",
         "max_cloud_usd_per_h must be more than 0");
    GERR("fractional GPU cap", "caps:\n  max_cloud_gpus: 2.5\n", "c.yaml:7:", "max_cloud_gpus");
    GERR("bad on_exhausted", "teams:\n  - name: ml\n    on_exhausted: panic\n",
         "c.yaml:8:19:", "on_exhausted", "'panic'");
    GERR("team without name", "teams:\n  - monthly_usd: 5\n", "c.yaml:7:5:", "needs 'name: NAME'");
    GERR("duplicate team", "teams:\n  - {name: ml}\n  - {name: ml}\n", "c.yaml:8:",
         "two teams are named 'ml' (first at line 7)");
    GERR("teams not a list", "teams: {name: ml}\n", "c.yaml:6:", "teams: expected a list");
    GERR("unknown caps key", "caps:\n  max_gpus: 4\n", "c.yaml:7:3:", "unknown key 'max_gpus'");
    GERR("bad duration", "caps:\n  default_max_runtime_s: soon\n", "c.yaml:7:26:",
         "default_max_runtime_s", "24h");
    GERR("unknown team in a rule",
         "teams:\n  - {name: ml}\n  - {name: cv}\nrules:\n  - name: x\n"
         "    match: {team: mll}\n    placement: onprem_only\n",
         "c.yaml:11:19:", "rule 'x': team 'mll' is not in teams: (known: ml, cv)");
    GERR("a rule's team without teams",
         "rules:\n  - match: {team: ml}\n    placement: onprem_only\n",
         "c.yaml:7:19:", "rule 'rule 1': team 'ml' is not in teams:");
    GERR("bad gpus range", "rules:\n  - match: {gpus: \"8-1\"}\n    placement: onprem_only\n",
         "c.yaml:7:19:", "the range '8-1' is empty");
    GERR("gpus text", "rules:\n  - match: {gpus: many}\n    placement: onprem_only\n",
         "c.yaml:7:19:", "gpus: expected a count (8), a range (\"1-8\"), \">=N\" or \"<=N\"");
    GERR("gpus zero", "rules:\n  - match: {gpus: \">=0\"}\n    placement: onprem_only\n",
         "c.yaml:7:19:", "from 1 to");
    GERR("unknown rule key", "rules:\n  - match: {}\n    placment: onprem_only\n",
         "c.yaml:8:5:", "unknown key 'placment'", "a rule");
    GERR("unknown match key", "rules:\n  - match: {team: ml, gpu: 8}\n    spot: never\n",
         "c.yaml:7:", "unknown key", "the match of rule 'rule 1'");
    GERR("bad placement", "rules:\n  - placement: cloud_only\n", "c.yaml:7:16:",
         "rule 'rule 1': placement:", "'cloud_only'");
    GERR("bad spot", "rules:\n  - spot: sometimes\n", "c.yaml:7:11:", "spot", "'sometimes'");
    GERR("rule without effect", "rules:\n  - name: nop\n    match: {gpus: 8}\n", "c.yaml:7:5:",
         "rule 'nop' has no effect");
    GERR("empty allow list", "rules:\n  - allow_providers: []\n", "c.yaml:7:22:",
         "allow_providers: an empty list allows nothing");
    GERR("duplicate rule name",
         "rules:\n  - {name: a, spot: never}\n  - {name: a, spot: allowed}\n", "c.yaml:8:",
         "two rules are named 'a' (first at line 7)");
    GERR("bad label", "rules:\n  - match: {labels: {env: \"a=b\"}}\n    spot: never\n",
         "c.yaml:7:", "without '='");
    GERR("price unit", "rules:\n  - max_usd_per_gpu_h: 4 USD\n", "c.yaml:7:24:",
         "max_usd_per_gpu_h: write dollars as a number");
    GERR("class name", "rules:\n  - match: {class: \"a b\"}\n    spot: never\n", "c.yaml:7:20:",
         "class 'a b'");
    GERR("unknown residency key", "residency:\n  eu: {regions: [eu-west-1], pools: [dc1]}\n",
         "c.yaml:7:", "unknown key 'pools'", "residency 'eu'");
    GERR("residency not a map", "residency: [eu]\n", "c.yaml:6:", "residency: expected a map");
    GERR("unknown data key", "data:\n  bandwidth: 10\n", "c.yaml:7:3:", "unknown key 'bandwidth'");
    GERR("unknown egress provider", "data:\n  egress_usd_per_gb: {oracle: 0.1}\n", "c.yaml:7:",
         "unknown key 'oracle'");
    GERR("dataset home unknown",
         "data:\n  datasets:\n    - {name: x, size_gb: 1, home: dc3}\n", "c.yaml:8:",
         "home 'dc3' is neither an on-prem pool (dc1, dc2) nor a region");
    GERR("dataset without size", "data:\n  datasets:\n    - {name: x, home: dc1}\n", "c.yaml:8:",
         "missing 'size_gb'");
    GERR("dataset replica provider",
         "data:\n  datasets:\n    - {name: x, size_gb: 1, home: dc1, replicas: [\"gcp:us-east-1\"]}\n",
         "c.yaml:8:", "replica 'gcp:us-east-1' is neither");
    GERR("bad sim start", "sim:\n  start: yesterday\n", "c.yaml:7:10:", "RFC 3339", "'yesterday'");
    GERR("unknown sim key", "sim:\n  seed: 1\n", "c.yaml:7:3:", "unknown key 'seed'");
    /* Contradictions found by spw_gov_validate, with the rule's line. */
    GERR("unknown provider", "rules:\n  - {name: p, allow_providers: [oracle]}\n", "c.yaml:7:",
         "rule 'p'", "oracle");
    GERR("unknown region", "rules:\n  - {name: p, deny_regions: [mars-1]}\n", "c.yaml:7:",
         "mars-1");
    GERR("allow and deny the same", "rules:\n  - name: p\n    allow_providers: [aws]\n"
         "    deny_providers: [aws]\n", "c.yaml:7:", "rule 'p'", "contradicts itself");
    GERR("spot required on-prem only",
         "rules:\n  - {name: p, spot: required, placement: onprem_only}\n", "c.yaml:7:",
         "spot: required with placement: onprem_only");
    GERR("widening a residency",
         "residency:\n  eu: {regions: [eu-west-1]}\nrules:\n"
         "  - {name: w, match: {class: eu}, allow_regions: [us-east-1]}\n", "c.yaml:9:",
         "rule 'w'", "cannot widen residency 'eu'");
    GERR("residency with no place", "residency:\n  nowhere: {onprem: false}\n", "c.yaml:7:",
         "residency 'nowhere'", "allows no place");
}

/* ---- spot and failures ------------------------------------------------------ */

/* Temporary availability traces and a failure list, for the spot tests. */
static char trace_ok[64], trace_empty[64], trace_nogap[64], trace_zerogap[64],
    trace_negative[64], trace_nodata[64], fail_ok[64], fail_bad[64];

static int spot_files(void)
{
    return write_temp(trace_ok, "{\"metadata\": {\"gap_seconds\": 600}, \"data\": [1, 0, 2]}")
           | write_temp(trace_empty, "")
           | write_temp(trace_nogap, "{\"metadata\": {}, \"data\": [1]}")
           | write_temp(trace_zerogap, "{\"metadata\": {\"gap_seconds\": 0}, \"data\": [1]}")
           | write_temp(trace_negative, "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [1, -1]}")
           | write_temp(trace_nodata, "{\"metadata\": {\"gap_seconds\": 60}, \"data\": []}")
           | write_temp(fail_ok, "node,down_s,up_s\ndc1/1,3600,2h\ndc2/0,1d,\n")
           | write_temp(fail_bad, "node,down_s,up_s\ndc1/0,10,20\ndc3/0,10,20\n");
}

static void spot_files_remove(void)
{
    const char *all[] = {trace_ok, trace_empty, trace_nogap, trace_zerogap, trace_negative,
                         trace_nodata, fail_ok, fail_bad};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i][0])
            unlink(all[i]);
}

static void test_spot(void)
{
    spw_config_t c;
    spw_error_t err;
    char yaml[2048];

    /* No spot: section: the defaults. */
    is(gov_load(&c, "", &err), 0, "spot defaults: load (%s)", err.text);
    is(c.policy.spot_policy, SPW_SPOT_POLICY_ONDEMAND, "spot defaults: ondemand");
    is_double(c.policy.restart_overhead_s, 0, 0, "spot defaults: no restart overhead");
    is(c.policy.max_restarts, UINT32_MAX, "spot defaults: unlimited restarts");
    is(c.policy.recovery, SPW_RECOVERY_SAME_REGION_FIRST, "spot defaults: same_region_first");
    is(c.policy.failover, SPW_FAILOVER_REQUEUE, "spot defaults: requeue");
    is_double(c.spot.checkpoint_interval_s, 0, 0, "spot defaults: no checkpoints");
    is(c.spot.seed, 1, "spot defaults: seed 1");
    ok(c.spot.navail == 0 && c.spot.avail == NULL, "spot defaults: no availability");
    ok(c.failures.n == 0 && c.failures.list == NULL && c.failures.mtbf_s == NULL
       && c.failures.mttr_s == NULL, "spot defaults: no failures");
    spw_config_free(&c);

    /* Everything, a trace named relative to base_dir. */
    snprintf(yaml, sizeof(yaml),
             "spot:\n"                                                         /* 6 */
             "  policy: uniform-progress\n"
             "  restart_overhead_s: 12m\n"
             "  checkpoint_interval_s: 1h\n"
             "  max_restarts: 20\n"                                            /* 10 */
             "  recovery: next_region\n"
             "  failover: burst\n"
             "  seed: 7\n"
             "  availability:\n"
             "    - {zone: use1-az1, instance_type: p4d.24xlarge, trace: %s,\n" /* 15 */
             "       start_offset: 3d}\n"
             "    - {provider: aws, region: us-east-1, interruption: \"5-10%%\"}\n"
             "    - {provider: gcp, preempt_rate_per_h: 0.02}\n"
             "failures:\n"
             "  file: %s\n", strrchr(trace_ok, '/') + 1, fail_ok);
    spw_config_t *cp = &c;
    static char full[8192];
    snprintf(full, sizeof(full),
             "onprem:\n"
             "  - {name: dc1, nodes: 2, gpus_per_node: 8, gpu: A100, mtbf: 30d, mttr: 4h}\n"
             "  - {name: dc2, nodes: 1, gpus_per_node: 4, gpu: K80}\n"
             "cloud:\n"
             "  offers: %s\n"
             "%s", catpath, yaml);
    err.text[0] = '\0';
    is(spw_config_load_mem(cp, "c.yaml", full, strlen(full), "/tmp", &err), 0,
       "spot: loads (%s)", err.text);
    is(c.policy.spot_policy, SPW_SPOT_POLICY_UNIFORM_PROGRESS, "spot: policy");
    is_double(c.policy.restart_overhead_s, 720, 0, "spot: restart overhead 12m");
    is_double(c.spot.checkpoint_interval_s, 3600, 0, "spot: checkpoint every 1h");
    is(c.policy.max_restarts, 20, "spot: max_restarts 20");
    is(c.policy.recovery, SPW_RECOVERY_NEXT_REGION, "spot: next_region");
    is(c.policy.failover, SPW_FAILOVER_BURST, "spot: burst");
    is(c.spot.seed, 7, "spot: seed 7");
    is(c.spot.navail, 3, "spot: three availability entries");
    if (c.spot.navail == 3) {
        const spw_spot_avail_conf_t *a = &c.spot.avail[0], *b = &c.spot.avail[1],
                                    *g = &c.spot.avail[2];
        ok(a->zone && strcmp(a->zone, "use1-az1") == 0 && a->instance_type
           && strcmp(a->instance_type, "p4d.24xlarge") == 0 && !a->provider && !a->region,
           "spot: entry 1 selects zone and instance type");
        is_str(a->trace_path, trace_ok, "spot: trace resolved against the config's directory");
        ok(a->trace.n == 3 && a->trace.gap_s == 600 && a->trace.avail[2] == 2,
           "spot: trace loaded (3 ticks of 600 s)");
        is_double(a->start_offset_s, 3 * 86400, 0, "spot: start offset 3d");
        is(a->line, 15, "spot: entry 1 on line 15");
        is_double(b->preempt_rate_per_h, -log(1 - 0.075) / 730, 1e-15,
                  "spot: 5-10%% is 7.5%% a month");
        ok(b->trace_path == NULL && b->trace.avail == NULL, "spot: entry 2 has no trace");
        is_double(g->preempt_rate_per_h, 0.02, 0, "spot: entry 3 rate 0.02/h");
        ok(g->provider && strcmp(g->provider, "gcp") == 0 && !g->zone, "spot: entry 3 gcp");
    }
    is(c.failures.n, 2, "failures: two from the file");
    if (c.failures.n == 2) {
        const spw_sim_failure_t *f = c.failures.list;
        ok(f[0].pool == 0 && f[0].node == 1 && f[0].down_s == 3600 && f[0].up_s == 7200,
           "failures: dc1/1 from 1h to 2h");
        ok(f[1].pool == 1 && f[1].node == 0 && f[1].down_s == 86400 && isinf(f[1].up_s),
           "failures: dc2/0 from 1d, never back");
    }
    ok(c.failures.mtbf_s && c.failures.mtbf_s[0] == 30 * 86400 && c.failures.mttr_s[0] == 4 * 3600
       && c.failures.mtbf_s[1] == 0 && c.failures.mttr_s[1] == 0,
       "failures: dc1 mtbf 30d mttr 4h, dc2 none (array covers every pool)");
    spw_config_free(&c);
    spw_config_free(&c);   /* idempotent */

    /* continuous, 0, unlimited, and every Spot Advisor bucket. */
    is(gov_load(&c, "spot:\n  checkpoint_interval_s: continuous\n  max_restarts: unlimited\n",
                &err), 0, "spot continuous: loads (%s)", err.text);
    is_double(c.spot.checkpoint_interval_s, SPW_CKPT_CONTINUOUS, 0, "spot: continuous");
    is(c.policy.max_restarts, UINT32_MAX, "spot: unlimited");
    spw_config_free(&c);
    is(gov_load(&c, "spot:\n  checkpoint_interval_s: 0\n  max_restarts: 0\n  seed: 0\n", &err), 0,
       "spot zero: loads (%s)", err.text);
    is_double(c.spot.checkpoint_interval_s, 0, 0, "spot: 0 = restart from scratch");
    is(c.policy.max_restarts, 0, "spot: max_restarts 0");
    is(c.spot.seed, 0, "spot: seed 0");
    spw_config_free(&c);
    static const struct { const char *bucket; double p; } buckets[] = {
        {"<5%", 0.025}, {"5-10%", 0.075}, {"10-15%", 0.125}, {"15-20%", 0.175}, {">20%", 0.25},
    };
    for (size_t i = 0; i < 5; i++) {
        snprintf(yaml, sizeof(yaml), "spot:\n  availability:\n    - {interruption: \"%s\"}\n",
                 buckets[i].bucket);
        is(gov_load(&c, yaml, &err), 0, "bucket %s: loads (%s)", buckets[i].bucket, err.text);
        ok(c.spot.navail == 1
           && fabs(c.spot.avail[0].preempt_rate_per_h - -log(1 - buckets[i].p) / 730) < 1e-15,
           "bucket %s: rate -ln(1 - %.3f) / 730 per hour", buckets[i].bucket, buckets[i].p);
        spw_config_free(&c);
    }

    /* mtbf on a nodes_from entry applies to every pool it makes; later
     * pools without one get 0. */
    char nodes[64];
    if (write_temp(nodes, "sn,gpu,model\nn0,8,V100M16\nn1,2,T4\n") == 0) {
        snprintf(yaml, sizeof(yaml), "onprem:\n  - {name: ali, nodes_from: %s, mtbf: 100h}\n"
                                     "  - {name: dc, nodes: 1, gpus_per_node: 1}\n", nodes);
        is(load(&c, yaml, NULL, &err), 0, "nodes_from mtbf: loads (%s)", err.text);
        ok(c.fleet.npools == 3 && c.failures.mtbf_s && c.failures.mtbf_s[0] == 360000
           && c.failures.mtbf_s[1] == 360000 && c.failures.mtbf_s[2] == 0
           && c.failures.mttr_s[0] == 0, "nodes_from mtbf: both node-list pools, not dc");
        spw_config_free(&c);
        unlink(nodes);
    }
}

static void test_spot_errors(void)
{
    char yaml[512];
    GERR("unknown spot key", "spot:\n  policy: greedy\n  checkpoint: 1h\n", "c.yaml:8:3:",
         "unknown key 'checkpoint' in spot");
    GERR("bad spot policy", "spot:\n  policy: cheapest\n", "c.yaml:7:11:", "spot.policy",
         "'cheapest'", "uniform-progress");
    GERR("bad recovery", "spot:\n  recovery: anywhere\n", "c.yaml:7:13:", "spot.recovery",
         "'anywhere'");
    GERR("bad failover", "spot:\n  failover: panic\n", "c.yaml:7:13:", "spot.failover", "'panic'");
    GERR("negative overhead", "spot:\n  restart_overhead_s: -5\n", "c.yaml:7:23:",
         "restart_overhead_s is -5");
    GERR("overhead text", "spot:\n  restart_overhead_s: a while\n", "c.yaml:7:23:",
         "restart_overhead_s: expected seconds or a duration", "'a while'");
    GERR("bad checkpoint", "spot:\n  checkpoint_interval_s: always\n", "c.yaml:7:26:",
         "checkpoint_interval_s", "'always'");
    GERR("negative max_restarts", "spot:\n  max_restarts: -1\n", "c.yaml:7:17:",
         "max_restarts: expected a count of restarts from 0 or unlimited, got '-1'");
    GERR("max_restarts text", "spot:\n  max_restarts: many\n", "c.yaml:7:17:", "'many'");
    GERR("fractional seed", "spot:\n  seed: 1.5\n", "c.yaml:7:9:", "whole number");
    GERR("availability not a list", "spot:\n  availability: {zone: a}\n", "c.yaml:7:17:",
         "availability: expected a list");
    GERR("entry without a source", "spot:\n  availability:\n    - {provider: aws}\n",
         "c.yaml:8:7:", "needs one of trace: FILE.json, interruption:");
    GERR("entry with two sources",
         "spot:\n  availability:\n    - {interruption: \"<5%\", preempt_rate_per_h: 1}\n",
         "c.yaml:8:7:", "not several");
    GERR("start_offset without trace",
         "spot:\n  availability:\n    - {preempt_rate_per_h: 1, start_offset: 1h}\n",
         "c.yaml:8:45:", "start_offset", "goes with trace");
    GERR("unknown entry key",
         "spot:\n  availability:\n    - {zone: use1-az1, rate: 1}\n", "c.yaml:8:",
         "unknown key 'rate'", "spot.availability entry");
    GERR("entry matching no offer",
         "spot:\n  availability:\n    - {provider: aws, zone: us-east-1z, interruption: \"<5%\"}\n",
         "c.yaml:8:7:", "(provider aws, zone us-east-1z) matches no cloud offer");
    GERR("entry matching offers without spot prices",
         "spot:\n  availability:\n    - {provider: azure, preempt_rate_per_h: 0.1}\n",
         "c.yaml:8:7:", "matches 1 offers, none with a spot price");
    GERR("bad bucket", "spot:\n  availability:\n    - {provider: aws, interruption: 7%}\n",
         "c.yaml:8:37:", "Spot Advisor bucket", "'7%'");
    GERR("negative rate", "spot:\n  availability:\n    - {provider: aws, preempt_rate_per_h: -1}\n",
         "c.yaml:8:", "preempt_rate_per_h");
    GERR("missing trace", "spot:\n  availability:\n    - {provider: aws, trace: /nonexistent.json}\n",
         "c.yaml:8:30:", "/nonexistent.json");
    /* Bad trace files: the config's line and the trace's own message. */
    static const struct { const char *what, *path, *says; } bad[] = {
        {"empty trace file", trace_empty, ":1:"},
        {"trace without gap_seconds", trace_nogap, "gap_seconds is missing"},
        {"trace with gap_seconds 0", trace_zerogap, "gap_seconds is 0"},
        {"trace with a negative count", trace_negative, "data[1] is -1"},
        {"trace without ticks", trace_nodata, "\"data\" is empty"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(yaml, sizeof(yaml), "spot:\n  availability:\n    - {provider: gcp, trace: %s}\n",
                 bad[i].path);
        const char *want[] = {"c.yaml:8:30:", bad[i].path, bad[i].says, NULL};
        gov_error(bad[i].what, yaml, want);
    }
    /* Failures. */
    GERR("failures without file", "failures: {list: x.csv}\n", "c.yaml:6:", "unknown key 'list'");
    GERR("failures without a file key", "failures: {}\n", "c.yaml:6:", "needs file: FILE.csv");
    snprintf(yaml, sizeof(yaml), "failures:\n  file: %s\n", fail_bad);
    {
        char in_file[96];
        snprintf(in_file, sizeof(in_file), "%s:3:", fail_bad);
        const char *want[] = {"c.yaml:7:9:", in_file, "no on-prem pool is named 'dc3'",
                              "pools: dc1, dc2", NULL};
        gov_error("failure list naming an unknown pool", yaml, want);
    }
    GERR("missing failure list", "failures:\n  file: /nonexistent/f.csv\n", "c.yaml:7:9:",
         "/nonexistent/f.csv");
    ERR("mttr without mtbf",
        "onprem:\n  - {name: dc1, nodes: 1, gpus_per_node: 1, mttr: 4h}\n", "c.yaml:2:",
        "pool 'dc1': mttr needs mtbf");
    ERR("mtbf 0", "onprem:\n  - {name: dc1, nodes: 1, gpus_per_node: 1, mtbf: 0}\n", "c.yaml:2:",
        "mtbf must be more than 0");
    ERR("mtbf text", "onprem:\n  - {name: dc1, nodes: 1, gpus_per_node: 1, mtbf: rarely}\n",
        "c.yaml:2:", "mtbf: expected seconds or a duration", "'rarely'");
    ERR("negative mttr",
        "onprem:\n  - {name: dc1, nodes: 1, gpus_per_node: 1, mtbf: 1d, mttr: -1h}\n", "c.yaml:2:",
        "mttr");
    ERR("failures without pools", "cloud:\n  price_usd_per_gpu_h: 1\nfailures:\n  file: f.csv\n",
        "c.yaml:4:9:", "no on-prem pool");
    ERR("spot capacity without a cloud",
        "onprem:\n  nodes: 1\n  gpus_per_node: 1\nspot:\n  availability:\n"
        "    - {preempt_rate_per_h: 1}\n", "c.yaml:6:7:", "add a cloud: section");
}

/* A dataset home that is no region, in a config without on-prem pools: the
 * error says there are none (found by fuzz_config: the pool list was read
 * through a NULL array). */
static void test_home_without_pools(void)
{
    spw_config_t c;
    spw_error_t err;
    const char *yaml = "cloud: {price_usd_per_gpu_h: 2.5}\n"
                       "data:\n  datasets:\n    - {name: x, size_gb: 1, home: dc3}\n";
    is(load(&c, yaml, "/tmp", &err), -1, "no pools: an unknown dataset home is an error");
    ok(strstr(err.text, "c.yaml:4:") && strstr(err.text, "home 'dc3' is neither an on-prem pool "
                                                          "(there are none)"),
       "no pools: the error says there are none (%s)", err.text);
}

/* daemon.run_as, allow_root_jobs, job_env and a team's run_as. */
static void test_job_users(void)
{
    static const char base[] = "onprem:\n  nodes: 1\n  gpus_per_node: 1\n";
    char yaml[1024];
    spw_config_t c;
    spw_error_t err;

    snprintf(yaml, sizeof(yaml),
             "%steams:\n  - {name: ml, run_as: ml-jobs}\n  - {name: cv}\n"
             "daemon:\n  run_as: batch\n  allow_root_jobs: true\n"
             "  job_env: [HTTP_PROXY, NCCL_*]\n", base);
    if (!ok(load(&c, yaml, NULL, &err) == 0, "run_as, allow_root_jobs and job_env load"))
        diag("%s", err.text);
    is_str(c.daemon.run_as, "batch", "daemon.run_as");
    ok(c.daemon.allow_root_jobs == 1, "allow_root_jobs");
    ok(c.daemon.nteam_run_as == 1 && strcmp(c.daemon.team_run_as[0].team, "ml") == 0 &&
       strcmp(c.daemon.team_run_as[0].user, "ml-jobs") == 0, "a team's run_as");
    ok(c.daemon.njob_env == 2 && strcmp(c.daemon.job_env[1], "NCCL_*") == 0, "job_env");
    spw_config_free(&c);

    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  run_as: 'bad user'\n", base);
    ERR("run_as not a user name", yaml, "c.yaml:5:", "not a user name");
    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  job_env: [PATH, SPILLWAY_TOKEN]\n", base);
    ERR("job_env passing the token", yaml, "c.yaml:5:", "SPILLWAY_TOKEN", "tokens");
    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  job_env: [SPILL*]\n", base);
    ERR("job_env prefix covering the token", yaml, "SPILL*");
    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  job_env: ['A-B']\n", base);
    ERR("job_env not a name", yaml, "not a variable name");
}

/* daemon.image_max_bytes and image_max_files: defaults, values, bounds. */
static void test_image_bounds(void)
{
    static const char base[] = "onprem:\n  nodes: 1\n  gpus_per_node: 1\n";
    char yaml[1024];
    spw_config_t c;
    spw_error_t err;

    if (!ok(load(&c, base, NULL, &err) == 0, "a config without image bounds loads"))
        diag("%s", err.text);
    ok(c.daemon.image_max_bytes == 32ull << 30 && c.daemon.image_max_files == 1000000,
       "image_max_bytes defaults to 32 GiB, image_max_files to 1,000,000");
    spw_config_free(&c);
    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  image_max_bytes: 20000000\n"
             "  image_max_files: 400\n", base);
    if (!ok(load(&c, yaml, NULL, &err) == 0, "image bounds load"))
        diag("%s", err.text);
    ok(c.daemon.image_max_bytes == 20000000 && c.daemon.image_max_files == 400,
       "image_max_bytes and image_max_files as given");
    spw_config_free(&c);
    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  image_max_files: 0\n", base);
    ERR("image_max_files 0", yaml, "c.yaml:5:", "image_max_files");
}

/* daemon.emulated's boot_command, hosts_dir and ssh (instances as hosts). */
static void test_emulated_hosts(void)
{
    static const char base[] = "onprem:\n  nodes: 1\n  gpus_per_node: 1\n";
    char yaml[1024];
    spw_config_t c;
    spw_error_t err;

    snprintf(yaml, sizeof(yaml),
             "%sdaemon:\n  emulated:\n    capacity: 2\n    boot_command: bin/boot.sh\n"
             "    hosts_dir: inst\n    ssh: {user: ops, port: 2200, key: k, down_after_s: 4}\n",
             base);
    if (!ok(load(&c, yaml, "/etc/spw", &err) == 0, "boot_command, hosts_dir and ssh load"))
        diag("%s", err.text);
    is_str(c.daemon.emulated_boot_command, "/etc/spw/bin/boot.sh",
           "boot_command is relative to the config file");
    is_str(c.daemon.emulated_hosts_dir, "/etc/spw/inst", "hosts_dir too");
    is_str(c.daemon.emulated_ssh_user, "ops", "ssh user");
    is_str(c.daemon.emulated_ssh_key, "/etc/spw/k", "ssh key, resolved");
    ok(c.daemon.emulated_ssh_known_hosts == NULL, "known_hosts defaults (HOSTS_DIR's)");
    is(c.daemon.max_queued_per_team, 10000, "max_queued_per_team defaults to 10000");
    is_double(c.daemon.job_retention_s, 3600, 0, "job_retention_s defaults to 3600");
    ok(c.daemon.emulated_ssh_port == 2200 && c.daemon.emulated_ssh_down_after_s == 4,
       "ssh port and down_after_s");
    spw_config_free(&c);

    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  emulated:\n    capacity: 2\n", base);
    if (!ok(load(&c, yaml, "/etc/spw", &err) == 0, "without boot_command"))
        diag("%s", err.text);
    ok(c.daemon.emulated_boot_command == NULL, "instances are records only");
    spw_config_free(&c);

    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  job_retention_s: 0\n", base);
    if (!ok(load(&c, yaml, "/etc/spw", &err) == 0, "job_retention_s: 0 loads"))
        diag("%s", err.text);
    is_double(c.daemon.job_retention_s, 0, 0, "... ended jobs leave memory at once");
    spw_config_free(&c);
    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  job_retention_s: -1\n", base);
    ERR("a negative job_retention_s", yaml, "job_retention_s must be between 0 and");

    snprintf(yaml, sizeof(yaml), "%sdaemon:\n  emulated:\n    hosts_dir: x\n", base);
    ERR("hosts_dir without boot_command", yaml, "c.yaml:6:", "need boot_command");
    snprintf(yaml, sizeof(yaml),
             "%sdaemon:\n  emulated:\n    boot_command: b\n    ssh: {port: 0}\n", base);
    ERR("a bad ssh port", yaml, "port must be 1..65535");
    snprintf(yaml, sizeof(yaml),
             "%sdaemon:\n  emulated:\n    boot_command: b\n    ssh: {pot: 22}\n", base);
    ERR("an unknown ssh key", yaml, "pot");
}

/* daemon.oidc: defaults, the maps, and errors naming the key. */
static void test_oidc(void)
{
    spw_config_t c;
    spw_error_t err;
    const char *base = "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\ndaemon:\n  oidc:\n";
    char y[1024];
    snprintf(y, sizeof(y), "%s    issuer: https://idp.example/r\n    audience: spillway\n"
             "    teams: {ml-people: ml, vision: cv}\n    roles: {ops: admin, wall: viewer}\n",
             base);
    is(load(&c, y, "/tmp", &err), 0, "daemon.oidc loads: %s", err.text);
    const spw_oidc_conf_t *o = &c.daemon.oidc;
    ok(o->issuer && strcmp(o->issuer, "https://idp.example/r") == 0 && o->audience &&
           strcmp(o->audience, "spillway") == 0, "issuer and audience kept");
    ok(o->groups_claim && strcmp(o->groups_claim, "groups") == 0 && o->leeway_s == 60 &&
           o->timeout_s == 5 && !o->user_claim, "defaults: groups, leeway 60 s, timeout 5 s");
    ok(o->nteams == 2 && strcmp(o->teams[1].group, "vision") == 0 &&
           strcmp(o->teams[1].value, "cv") == 0 && o->nroles == 2 &&
           strcmp(o->roles[0].value, "admin") == 0, "teams and roles maps in order");
    ok(!o->client_id && !o->redirect_uri && o->scopes && strcmp(o->scopes, "openid") == 0,
       "no dashboard login by default; its scopes default to openid");
    spw_config_free(&c);
    snprintf(y, sizeof(y), "%s    issuer: https://i/\n    audience: a\n    client_id: dash\n"
             "    redirect_uri: https://gpu.example:8470/ui/\n    scopes: openid api\n", base);
    is(load(&c, y, "/tmp", &err), 0, "the dashboard's client_id, redirect_uri, scopes load: %s",
       err.text);
    ok(c.daemon.oidc.client_id && strcmp(c.daemon.oidc.client_id, "dash") == 0 &&
           strcmp(c.daemon.oidc.redirect_uri, "https://gpu.example:8470/ui/") == 0 &&
           strcmp(c.daemon.oidc.scopes, "openid api") == 0, "kept as written");
    spw_config_free(&c);
    snprintf(y, sizeof(y), "%s    issuer: https://i/\n    audience: a\n    client_id: dash\n"
             "    redirect_uri: /ui/\n", base);
    is(load(&c, y, "/tmp", &err), -1, "a redirect_uri that is not a URL is an error");
    ok(strstr(err.text, "oidc.redirect_uri") != NULL, "%s", err.text);
    snprintf(y, sizeof(y), "%s    issuer: https://idp.example/r\n", base);
    is(load(&c, y, "/tmp", &err), -1, "oidc without audience is an error");
    ok(strstr(err.text, "needs 'audience:'") != NULL, "naming it: %s", err.text);
    snprintf(y, sizeof(y), "%s    issuer: https://i/\n    audience: a\n    roles: {x: boss}\n",
             base);
    is(load(&c, y, "/tmp", &err), -1, "an unknown role is an error");
    ok(strstr(err.text, "oidc.roles.x") && strstr(err.text, "admin, member or viewer"), "%s",
       err.text);
    snprintf(y, sizeof(y), "%s    issuer: idp.example\n    audience: a\n", base);
    is(load(&c, y, "/tmp", &err), -1, "an issuer that is not a URL is an error");
    ok(strstr(err.text, "https://") != NULL, "%s", err.text);
    snprintf(y, sizeof(y), "%s    issuer: https://i/\n    audience: a\n    client: x\n", base);
    is(load(&c, y, "/tmp", &err), -1, "an unknown oidc key is an error");
    ok(strstr(err.text, "'client'") && strstr(err.text, "daemon.oidc"), "%s", err.text);
}

/* daemon.tokens, tokens_file, names, revocation, limits and the 0600 check. */
static void test_tokens(void)
{
    spw_config_t c;
    spw_error_t err = {{0}};
    char tokpath[64], cfgpath[64], yaml[1024];
    if (write_temp(tokpath, "tokens:\n"
                            "  - {name: ml-ci, team: ml, token: file-token-aaaaaaaa}\n"
                            "  - {team: ml, token: file-token-bbbbbbbb, revoked: true}\n") < 0) {
        ok(0, "cannot write a temporary tokens file");
        return;
    }
    snprintf(yaml, sizeof(yaml),
             "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
             "daemon:\n  max_gpus_per_job: 64\n  max_queued_per_team: 10\n"
             "  request_timeout_s: 5\n  max_connections_per_ip: 8\n"
             "  tokens:\n    - {team: ml, token: inline-token-cccccccc}\n"
             "    - {admin: true, token: inline-token-dddddddd}\n"
             "  tokens_file: %s\n", tokpath);
    if (write_temp(cfgpath, yaml) < 0) {
        ok(0, "cannot write a temporary config");
        unlink(tokpath);
        return;
    }
    chmod(tokpath, 0600);
    chmod(cfgpath, 0600);
    ok(spw_config_load(&c, cfgpath, &err) == 0, "tokens inline and from tokens_file: %s", err.text);
    const spw_daemon_conf_t *dc = &c.daemon;
    is((long)dc->ntokens, 4, "four tokens");
    is((long)dc->ntokens_inline, 2, "two of them inline");
    is_str(dc->tokens[0].name, "ml-1", "an unnamed team token: TEAM-N");
    is_str(dc->tokens[1].name, "admin-1", "an unnamed admin token: admin-1");
    is_str(dc->tokens[2].name, "ml-ci", "a named one keeps its name");
    is_str(dc->tokens[3].name, "ml-2", "N counts that team's tokens in order");
    ok(dc->tokens[3].revoked && !dc->tokens[2].revoked, "revoked: true is kept");
    ok(dc->max_gpus_per_job == 64 && dc->max_queued_per_team == 10 &&
           dc->request_timeout_s == 5 && dc->max_connections_per_ip == 8,
       "limit keys are read");
    ok(spw_config_check_secrets(&c, &err) == 0, "both files 0600: accepted");
    chmod(cfgpath, 0644);
    ok(spw_config_check_secrets(&c, &err) < 0 && strstr(err.text, "chmod 600") &&
           strstr(err.text, cfgpath) && strstr(err.text, "0644"),
       "a config with inline tokens readable by others: refused (%s)", err.text);
    chmod(cfgpath, 0600);
    chmod(tokpath, 0660);
    ok(spw_config_check_secrets(&c, &err) < 0 && strstr(err.text, tokpath),
       "a tokens file its group can read: refused (%s)", err.text);
    chmod(tokpath, 0600);
    spw_config_free(&c);
    if (geteuid() == 0) {
        /* owned by another user, who could change the tokens: refused
         * when read (start, SIGHUP) and by the secrets check */
        ok(chown(tokpath, 12345, (gid_t)-1) == 0, "the tokens file given to uid 12345");
        is(spw_config_load(&c, cfgpath, &err), -1, "a tokens file owned by another user: refused");
        ok(strstr(err.text, "uid 12345") && strstr(err.text, "chown"), "%s", err.text);
        ok(chown(tokpath, 0, (gid_t)-1) == 0, "given back to root");
    } else {
        ok(1, "# SKIP the owner check needs root");
        ok(1, "# SKIP");
        ok(1, "# SKIP");
        ok(1, "# SKIP");
    }

    is(load(&c, "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
                "daemon:\n  metrics_auth: true\n  metrics_per_job: true\n"
                "  allowed_hosts: [spillway.example.com, 'proxy.example.com:443']\n"
                "  tokens:\n    - {token: pppppppppppppppppp, metrics: true}\n", "/tmp", &err),
       0, "metrics_auth, metrics_per_job, allowed_hosts and a metrics token: %s", err.text);
    ok(c.daemon.metrics_auth && c.daemon.metrics_per_job && c.daemon.nallowed_hosts == 2 &&
           strcmp(c.daemon.allowed_hosts[1], "proxy.example.com:443") == 0 &&
           c.daemon.tokens[0].metrics && !c.daemon.tokens[0].team && !c.daemon.tokens[0].admin &&
           strcmp(c.daemon.tokens[0].name, "metrics-1") == 0,
       "they are read; an unnamed metrics token is metrics-1");
    spw_config_free(&c);
    is(load(&c, "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
                "daemon:\n  tokens:\n    - {token: pppppppppppppppppp, team: ml, metrics: true}\n",
            "/tmp", &err),
       -1, "a token with both team and metrics: error");
    ok(strstr(err.text, "exactly one of") != NULL, "%s", err.text);
    is(load(&c, "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
                "daemon:\n  allowed_hosts: ['evil host']\n", "/tmp", &err),
       -1, "an allowed_hosts entry that is no host name: error");
    ok(strstr(err.text, "allowed_hosts") != NULL, "%s", err.text);
    is(load(&c, "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
                "daemon:\n  tokens:\n    - {name: x, team: ml, token: aaaaaaaaaaaaaaaaaa}\n"
                "    - {name: x, team: cv, token: bbbbbbbbbbbbbbbbbb}\n", "/tmp", &err),
       -1, "the same token name twice is an error");
    ok(strstr(err.text, "c.yaml:5:") && strstr(err.text, "name 'x' is given twice"), "%s",
       err.text);
    is(load(&c, "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
                "daemon:\n  tokens:\n    - {name: 'a b', team: ml, token: aaaaaaaaaaaaaaaaaa}\n",
            "/tmp", &err),
       -1, "a token name with a space is an error");
    is(load(&c, "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
                "daemon:\n  tokens_file: /nonexistent/tokens.yaml\n", "/tmp", &err),
       -1, "a missing tokens file is an error");
    ok(strstr(err.text, "/nonexistent/tokens.yaml"), "naming it: %s", err.text);
    is(load(&c, "onprem: [{name: a, nodes: 1, gpus_per_node: 1}]\n"
                "daemon:\n  tokens:\n    - {team: ml, token: aaaaaaaaaaaaaaaaaa}\n", "/tmp", &err),
       0, "inline tokens from memory load");
    ok(spw_config_check_secrets(&c, &err) == 0, "a config from memory has no file to check");
    spw_config_free(&c);
    unlink(tokpath);
    unlink(cfgpath);
}

/* cloud.slurm_partition / slurm_conf: kept for the daemon (slurm_conf
 * resolved against the config's directory); slurm_conf alone is an error
 * that names the line. */
static void test_slurm_cloud(void)
{
    spw_config_t c;
    spw_error_t err;
    const char *yaml = "onprem:\n  - {name: a, nodes: 1, gpus_per_node: 4}\n"
                       "cloud:\n  price_usd_per_gpu_h: 3\n  slurm_partition: cloud\n"
                       "  slurm_conf: etc/slurm.conf\n";
    ok(load(&c, yaml, "/srv/spw", &err) == 0, "cloud.slurm_partition loads: %s", err.text);
    ok(c.cloud_slurm_partition && strcmp(c.cloud_slurm_partition, "cloud") == 0,
       "slurm_partition kept");
    ok(c.cloud_slurm_conf && strcmp(c.cloud_slurm_conf, "/srv/spw/etc/slurm.conf") == 0,
       "slurm_conf resolved against the config's directory: %s",
       c.cloud_slurm_conf ? c.cloud_slurm_conf : "(null)");
    ok(c.fleet.noffers == 1 && c.fleet.npools == 1, "the cloud is still the flat offer, no pool added");
    spw_config_free(&c);
    yaml = "onprem:\n  - {name: a, nodes: 1, gpus_per_node: 4}\n"
           "cloud:\n  price_usd_per_gpu_h: 3\n  slurm_conf: /etc/slurm.conf\n";
    ok(load(&c, yaml, NULL, &err) < 0 && strstr(err.text, "c.yaml:5:") &&
           strstr(err.text, "needs cloud.slurm_partition"),
       "slurm_conf without slurm_partition: %s", err.text);
    spw_config_free(&c);
}

/* A kubernetes pool's keys: kept for the daemon (kubeconfig resolved
 * against the config's directory, node_selector as KEY=VALUE, tolerations
 * as JSON with numbers kept numbers), defaults, and what is refused at its
 * line. */
static void test_kubernetes_pool(void)
{
    spw_config_t c;
    spw_error_t err;
    const char *yaml =
        "onprem:\n  - name: k\n    backend: kubernetes\n    kubeconfig: kube/config\n"
        "    context: kind-a\n    namespace: ml\n    node_selector: {pool: gpu, zone: a}\n"
        "    tolerations:\n      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule,"
        " tolerationSeconds: 30}\n    priority_class: low\n    local_queue: q\n"
        "    image: busybox:1\n    kill_grace_s: 7\n    ttl_after_finished_s: 60\n";
    ok(load(&c, yaml, "/srv/spw", &err) == 0, "a kubernetes pool loads: %s", err.text);
    const spw_pool_backend_conf_t *b = c.npool_backends ? &c.pool_backends[0] : NULL;
    ok(b && strcmp(b->backend, "kubernetes") == 0 && c.fleet.pools[0].nnodes == 1,
       "backend kubernetes; without nodes, one node until the daemon reads the cluster");
    ok(b && strcmp(b->kubeconfig, "/srv/spw/kube/config") == 0 &&
           strcmp(b->kube_context, "kind-a") == 0 && strcmp(b->kube_namespace, "ml") == 0,
       "kubeconfig resolved against the config's directory, context and namespace kept");
    ok(b && b->kube_node_selector && strcmp(b->kube_node_selector[0], "pool=gpu") == 0 &&
           strcmp(b->kube_node_selector[1], "zone=a") == 0 && !b->kube_node_selector[2],
       "node_selector as KEY=VALUE");
    ok(b && b->kube_tolerations &&
           strcmp(b->kube_tolerations,
                  "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
                  "\"NoSchedule\",\"tolerationSeconds\":30}]") == 0,
       "tolerations as a JSON array: %s", b && b->kube_tolerations ? b->kube_tolerations : "");
    ok(b && strcmp(b->kube_priority_class, "low") == 0 && strcmp(b->kube_local_queue, "q") == 0 &&
           strcmp(b->kube_image, "busybox:1") == 0 && b->kube_kill_grace_s == 7 &&
           b->kube_ttl_s == 60,
       "priority_class, local_queue, image, kill_grace_s, ttl_after_finished_s kept");
    spw_config_free(&c);
    ok(load(&c, "onprem:\n  - {name: k, backend: kubernetes}\n", NULL, &err) == 0 &&
           !c.pool_backends[0].kubeconfig && !c.pool_backends[0].kube_image &&
           c.pool_backends[0].kube_ttl_s == 0,
       "every key is optional (defaults: the backend's)");
    spw_config_free(&c);
    ERR("kubernetes keys on a slurm pool",
        "onprem:\n  - name: s\n    backend: slurm\n    partition: p\n    image: x\n",
        "c.yaml:5:", "need 'backend: kubernetes'");
    ERR("tolerations not a list",
        "onprem:\n  - name: k\n    backend: kubernetes\n    tolerations: {key: a}\n",
        "c.yaml:4:", "tolerations must be a list");
    ERR("an unknown toleration key",
        "onprem:\n  - name: k\n    backend: kubernetes\n    tolerations: [{key: a, efect: x}]\n",
        "c.yaml:4:", "unknown key 'efect' in tolerations");
    ERR("node_selector not a map",
        "onprem:\n  - name: k\n    backend: kubernetes\n    node_selector: [a]\n", "c.yaml:4:",
        "node_selector must be a mapping");
    ERR("kill_grace_s negative",
        "onprem:\n  - name: k\n    backend: kubernetes\n    kill_grace_s: -1\n", "c.yaml:4:",
        "kill_grace_s must be between 0 and 86400");
    ERR("an unknown backend names kubernetes",
        "onprem:\n  - name: k\n    backend: k8s\n", "c.yaml:3:",
        "(known: local, slurm, ssh, kubernetes)");
}

/* cloud.capacity_errors: entries matched to offers, defaults, and what is
 * refused (catpath: the catalog of test_offers). */
static void test_capacity_errors(void)
{
    char yaml[1024];
    spw_config_t c;
    spw_error_t err;
    snprintf(yaml, sizeof(yaml),
             "cloud:\n  offers: %s\n  capacity_errors:\n"
             "    - {zone: use1-az1, market: spot, rate: 0.3}\n"
             "    - {provider: gcp, rate: 1, block: family, block_s: 600, code: "
             "InsufficientInstanceCapacity}\n", catpath);
    is(load(&c, yaml, NULL, &err), 0, "capacity_errors: loads (%s)", err.text);
    is(c.ncapacity_errors, 2, "capacity_errors: two entries");
    const spw_capacity_error_conf_t *e = &c.capacity_errors[0];
    ok(e->market == 1 && e->rate == 0.3 && e->block == SPW_BLOCK_OFFER && e->block_s == 300 &&
           strcmp(e->code, "InsufficientInstanceCapacity") == 0,
       "capacity_errors: spot, 0.3, defaults block offer for 300 s");
    ok(spw_capacity_error_matches(e, &c.fleet.offers[0]) &&
           !spw_capacity_error_matches(e, &c.fleet.offers[1]),
       "capacity_errors: the zone selects the first offer only");
    e = &c.capacity_errors[1];
    ok(e->market == -1 && e->block == SPW_BLOCK_FAMILY && e->block_s == 600,
       "capacity_errors: both markets, family, 600 s");
    spw_config_free(&c);
    static const struct {
        const char *entry, *want;
    } bad[] = {
        {"{zone: nowhere, rate: 1}", "matches no cloud offer"},
        {"{zone: use1-az1}", "needs rate"},
        {"{rate: 2}", "rate"},
        {"{rate: 1, block: job}", "expected none, offer, family or account"},
        {"{rate: 1, market: cheap}", "expected spot, on_demand or any"},
        {"{rate: 1, colour: red}", "colour"},
        {"{rate: 1, block_s: 0}", "block_s"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        snprintf(yaml, sizeof(yaml), "cloud:\n  offers: %s\n  capacity_errors:\n    - %s\n",
                 catpath, bad[k].entry);
        ok(load(&c, yaml, NULL, &err) < 0 && strstr(err.text, "c.yaml:4") &&
               strstr(err.text, bad[k].want),
           "capacity_errors %s refused: %s", bad[k].entry, err.text);
    }
}

/* cloud.accounts: the common keys, a type's own keys as options, the
 * default (no accounts), and errors at FILE:LINE. */
static void test_accounts(void)
{
    spw_config_t c;
    spw_error_t err;
    is(load(&c, "cloud:\n  price_usd_per_gpu_h: 2\n", NULL, &err), 0, "no accounts: loads");
    is(c.naccounts, 0, "no accounts: none (the default emulated one)");
    ok(c.accounts == NULL, "no accounts: NULL");
    spw_config_free(&c);
    const char *yaml =
        "cloud:\n"
        "  price_usd_per_gpu_h: 2\n"
        "  accounts:\n"
        "    - name: prod\n"
        "      type: aws\n"
        "      regions: [us-east-1, us-west-2]\n"
        "      max_instances: 8\n"
        "      max_usd_per_h: 40.5\n"
        "      dry_run: true\n"
        "      endpoint_url: http://127.0.0.1:5000\n"
        "      image: {us-east-1: ami-1, us-west-2: ami-2}\n"
        "      subnets: {us-east-1a: subnet-a}\n"
        "      security_groups: [sg-1, sg-2]\n"
        "      key_name: ops\n"
        "      ssh_user: ubuntu\n"
        "    - name: lab\n"
        "      type: emulated\n"
        "      refuse: {zone-a: InsufficientInstanceCapacity}\n";
    is(load(&c, yaml, NULL, &err), 0, "accounts: loads");
    diag("%s", err.text);
    is(c.naccounts, 2, "accounts: two");
    if (c.naccounts == 2) {
        spw_account_conf_t *a = &c.accounts[0];
        is_str(a->name, "prod", "accounts: name");
        is_str(a->type, "aws", "accounts: type");
        ok(a->regions && a->regions[0] && a->regions[1] && !a->regions[2] &&
               strcmp(a->regions[1], "us-west-2") == 0, "accounts: regions, NULL-terminated");
        is(a->max_instances, 8, "accounts: max_instances");
        ok(a->max_usd_per_h == 40.5, "accounts: max_usd_per_h");
        is(a->dry_run, 1, "accounts: dry_run");
        is_str(a->endpoint_url, "http://127.0.0.1:5000", "accounts: endpoint_url");
        static const char *const want[] = {"image.us-east-1=ami-1", "image.us-west-2=ami-2",
                                           "subnet.us-east-1a=subnet-a",
                                           "security_groups=sg-1,sg-2", "key_name=ops",
                                           "user=ubuntu", NULL};
        size_t k = 0;
        while (a->options && a->options[k] && want[k] && strcmp(a->options[k], want[k]) == 0)
            k++;
        ok(want[k] == NULL && a->options[k] == NULL, "accounts: aws keys as options (%zu)", k);
        a = &c.accounts[1];
        is_str(a->type, "emulated", "accounts: emulated type");
        ok(a->regions == NULL && a->max_instances == 0 && a->max_usd_per_h == 0 && !a->dry_run,
           "accounts: defaults (any region, no limits)");
        ok(a->options && a->options[0] && !a->options[1] &&
               strcmp(a->options[0], "refuse.zone-a=InsufficientInstanceCapacity") == 0,
           "accounts: emulated refuse map as options");
    }
    spw_config_free(&c);
    is(load(&c, "cloud:\n  price_usd_per_gpu_h: 2\n  accounts:\n    - {name: ami, type: aws, "
            "image: \"ssm:/aws/service/x\"}\n", NULL, &err), 0, "accounts: image as a scalar");
    if (c.naccounts == 1)
        is_str(c.accounts[0].options[0], "image=ssm:/aws/service/x", "accounts: ssm image option");
    spw_config_free(&c);
}

static void test_accounts_errors(void)
{
#define ACC "cloud:\n  price_usd_per_gpu_h: 2\n  accounts:\n"
    ERR("gcp not yet", ACC "    - {name: g, type: gcp}\n", "c.yaml:4:", "gcp is not yet supported");
    ERR("azure not yet", ACC "    - {name: z, type: azure}\n", "c.yaml:4:", "not yet supported");
    ERR("unknown type", ACC "    - {name: o, type: oracle}\n", "c.yaml:4:", "unknown type 'oracle'",
        "aws, command, emulated");
    ERR("aws unknown key", ACC "    - name: p\n      type: aws\n      subnet: x\n",
        "c.yaml:6:", "unknown key 'subnet'", "did you mean 'subnets'?", "security_groups",
        "more)");
    ERR("emulated takes no aws key", ACC "    - {name: e, type: emulated, key_name: k}\n",
        "c.yaml:4:", "unknown key 'key_name'", "refuse");
    ERR("duplicate name", ACC "    - {name: a, type: emulated}\n    - {name: a, type: emulated}\n",
        "c.yaml:5:", "a second account named a", "line 4");
    ERR("no type", ACC "    - {name: a}\n", "c.yaml:4:", "needs a name and a type");
    ERR("bad name", ACC "    - {name: \"a b\", type: emulated}\n", "c.yaml:4:", "name 'a b'");
    ERR("not a list", ACC "    name: a\n", "c.yaml:4:", "expected a list");
    ERR("negative max_instances", ACC "    - {name: a, type: emulated, max_instances: -1}\n",
        "c.yaml:4:", "max_instances");
    ERR("fractional max_instances", ACC "    - {name: a, type: emulated, max_instances: 1.5}\n",
        "c.yaml:4:", "whole number");
    ERR("bad endpoint", ACC "    - {name: a, type: aws, endpoint_url: localhost}\n", "c.yaml:4:",
        "endpoint_url");
    ERR("subnets not a map", ACC "    - {name: a, type: aws, subnets: [x]}\n", "c.yaml:4:",
        "expected a map");
#undef ACC
}

/* daemon.cloud_ssh: how the daemon logs in to real cloud accounts'
 * instances. */
static void test_cloud_ssh(void)
{
    spw_config_t c;
    spw_error_t err;
    is(load(&c, "cloud:\n  price_usd_per_gpu_h: 2\ndaemon:\n  cloud_ssh: {user: ubuntu, key: "
                "k/id, port: 2200, down_after_s: 5}\n", "/etc/spw", &err), 0,
       "cloud_ssh: loads (%s)", err.text);
    ok(c.daemon.cloud_ssh_given && strcmp(c.daemon.cloud_ssh_user, "ubuntu") == 0 &&
           strcmp(c.daemon.cloud_ssh_key, "/etc/spw/k/id") == 0 && c.daemon.cloud_ssh_port == 2200 &&
           c.daemon.cloud_ssh_down_after_s == 5 && !c.daemon.cloud_ssh_known_hosts,
       "cloud_ssh: user, key resolved against the config's directory, port, down_after_s");
    spw_config_free(&c);
    is(load(&c, "cloud:\n  price_usd_per_gpu_h: 2\n", NULL, &err), 0, "no cloud_ssh: loads");
    ok(!c.daemon.cloud_ssh_given && !c.daemon.cloud_ssh_key, "no cloud_ssh: none given");
    spw_config_free(&c);
    ok(load(&c, "cloud:\n  price_usd_per_gpu_h: 2\ndaemon:\n  cloud_ssh: {port: 70000}\n",
            NULL, &err) < 0 && strstr(err.text, "c.yaml:4") && strstr(err.text, "port"),
       "cloud_ssh: a bad port is refused at its line: %s", err.text);
    ok(load(&c, "cloud:\n  price_usd_per_gpu_h: 2\ndaemon:\n  cloud_ssh: {keys: x}\n",
            NULL, &err) < 0 && strstr(err.text, "keys"),
       "cloud_ssh: an unknown key is refused: %s", err.text);
}

int main(void)
{
    test_cloud_ssh();
    test_accounts();
    test_accounts_errors();
    test_slurm_cloud();
    test_kubernetes_pool();
    test_job_users();
    test_image_bounds();
    test_home_without_pools();
    test_tokens();
    test_oidc();
    test_emulated_hosts();
    test_valid();
    test_offers();
    test_nodes_from();
    test_errors();
    if (write_temp(catpath, catalog) == 0) {
        test_governance();
        test_governance_errors();
        test_fairshare();
        test_capacity_errors();
        if (spot_files() == 0) {
            test_spot();
            test_spot_errors();
        } else {
            ok(0, "cannot write temporary spot traces");
        }
        spot_files_remove();
        unlink(catpath);
    } else {
        ok(0, "cannot write a temporary catalog");
    }
    return done_testing();
}
