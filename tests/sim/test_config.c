/* test_config.c: the fleet/policy YAML: pools, flat price, catalog offers
 * (with provider/region filters, from a temporary CSV), node lists, policy
 * fields and defaults, and errors that name FILE:LINE. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "core/model.h"
#include "sim/config.h"

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

int main(void)
{
    test_valid();
    test_offers();
    test_nodes_from();
    test_errors();
    return done_testing();
}
