/* bench_gov.c: what governance costs.  Prints figures; asserts nothing.
 *
 *   build/bench/bench_gov [--jobs N] [--reps R] [--catalog FILE] [--skip-sim]
 *
 * The fleet: the real offer catalog (../shared/data/catalog/gpu_offers.csv,
 * 765 offers) when present, else 500 synthetic offers over 3 providers and
 * 12 regions; 512 on-prem nodes x 8 A100.  The governance, built here with
 * a fixed seed: 10 teams with monthly or weekly budgets, spend-rate and GPU
 * caps, organisation caps, 8 classes (two of them residencies), 16 labels,
 * 2 datasets at home on-prem (one with a cloud replica) and 50 rules with varied matches (team sets, classes, labels,
 * GPU ranges) and effects (provider and region allow/deny lists, GPU
 * models, families, price caps, a few placements and spot rules).
 *
 * 1. rule evaluation: ns per spw_govrt_profile_of over 65,536 random jobs,
 *    misses (the first job of each distinct profile: the rules' offer sets
 *    are intersected) and hits (a hash lookup after the match loop) apart;
 * 2. a full burst decision: spw_engine_submit + spw_engine_schedule of one
 *    job that bursts (no on-prem pool, so it must), with every budget and
 *    cap checked and its worst case reserved, then the job finishes
 *    (untimed); with and without a dataset to weigh;
 * 3. the simulator: the 1M-job workload of bench_engine (rate 2048/h,
 *    exp:3600, GPUs 1:0.7,2:0.15,4:0.1,8:0.05, seed 1) on 512 x 8 with
 *    wait compute:0.25, governance on next to off (same fleet and offers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "core/engine.h"
#include "core/gov.h"
#include "core/model.h"
#include "sim/gen.h"
#include "sim/sim.h"
#include "util/rng.h"

#define CATALOG "../shared/data/catalog/gpu_offers.csv"
#define NTEAMS 10
#define NRULES 50
#define NLABELS 16

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char **strv_add(char **v, size_t *n, const char *s)
{
    v = spw_xrealloc(v, (*n + 1) * sizeof(char *));
    v[(*n)++] = spw_xstrdup(s);
    return v;
}

static size_t pick(spw_rng_t *r, size_t n)
{
    return (size_t)spw_rng_below(r, n);
}

static void add_pool(spw_fleet_t *f, const char *name, uint32_t nodes, const char *model)
{
    f->pools = spw_xrealloc(f->pools, (f->npools + 1) * sizeof(*f->pools));
    spw_pool_spec_t *p = &f->pools[f->npools++];
    memset(p, 0, sizeof(*p));
    p->name = spw_xstrdup(name);
    p->nnodes = nodes;
    p->node_gpus = spw_xmalloc(nodes * sizeof(uint16_t));
    for (uint32_t k = 0; k < nodes; k++)
        p->node_gpus[k] = 8;
    p->model = spw_models_intern(&f->models, model, strlen(model), NULL);
    p->cost_usd_per_gpu_h = 1.10;
}

/* 500 offers over 3 providers and 12 regions when there is no catalog. */
static void synthetic_offers(spw_fleet_t *f, spw_rng_t *r)
{
    static const char *const prov[] = {"aws", "gcp", "azure"};
    static const char *const reg[] = {"us-east-1", "us-west-2", "eu-west-1", "eu-central-1"};
    static const char *const fam[] = {"p4d", "g5", "a2", "n1"};
    static const char *const gpu[] = {"A100-80GB", "A100-40GB", "H100", "L4", "T4", "V100"};
    for (int i = 0; i < 500; i++) {
        f->offers = spw_xrealloc(f->offers, (f->noffers + 1) * sizeof(*f->offers));
        spw_offer_t *o = &f->offers[f->noffers++];
        memset(o, 0, sizeof(*o));
        int p = (int)pick(r, 3);
        char region[32], type[32];
        snprintf(region, sizeof(region), "%s-%d", reg[pick(r, 4)], (int)pick(r, 3));
        snprintf(type, sizeof(type), "%s.%dx", fam[pick(r, 4)], i);
        o->provider = spw_xstrdup(prov[p]);
        o->region = spw_xstrdup(region);
        o->zone = spw_xstrdup("");
        o->instance_type = spw_xstrdup(type);
        const char *m = gpu[pick(r, 6)];
        o->model = spw_models_intern(&f->models, m, strlen(m), NULL);
        o->gpus = 1u << pick(r, 4);
        o->ondemand_usd_per_h = o->gpus * (0.5 + 4 * spw_rng_uniform(r));
        o->spot_usd_per_h = pick(r, 3) ? o->ondemand_usd_per_h * 0.35 : NAN;
    }
}

/* Distinct values of one offer field (provider, region, family or model). */
static size_t distinct(const spw_fleet_t *f, int what, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < f->noffers; i++) {
        const spw_offer_t *o = &f->offers[i];
        char fam[32];
        const char *v;
        if (what == 0)
            v = o->provider;
        else if (what == 1)
            v = o->region;
        else if (what == 2) {
            size_t k = strcspn(o->instance_type, ".-_");
            snprintf(fam, sizeof(fam), "%.*s", (int)(k < 31 ? k : 31), o->instance_type);
            v = fam;
        } else {
            if (o->model < 0)
                continue;
            v = f->models.name[o->model];
        }
        size_t j = 0;
        while (j < n && strcmp(out[j], v) != 0)
            j++;
        if (j == n && n < max)
            out[n++] = what == 2 ? spw_xstrdup(v) : v;
    }
    return n;
}

/* The governance of this benchmark (see the top of the file). */
static void build_gov(spw_fleet_t *f, spw_rng_t *r)
{
    spw_gov_t *g = &f->gov;
    g->origin_s = 1788220800;   /* 2026-09-01T00:00:00Z */
    g->teams = spw_xcalloc(NTEAMS, sizeof(*g->teams));
    g->nteams = NTEAMS;
    for (int i = 0; i < NTEAMS; i++) {
        spw_team_spec_t *t = &g->teams[i];
        char name[16];
        snprintf(name, sizeof(name), "team%d", i);
        t->name = spw_xstrdup(name);
        t->period = i % 3 == 2 ? SPW_PERIOD_WEEK : SPW_PERIOD_MONTH;
        t->budget_usd = (i == 9 ? INFINITY : (2000.0 + 4000.0 * i) / (t->period ? 4 : 1));
        t->on_exhausted = (spw_exhausted_t)(i % 3);
        t->max_cloud_usd_per_h = i % 2 ? 40.0 + 20 * i : INFINITY;
        t->max_cloud_gpus = i % 4 == 1 ? 64 : INFINITY;
        t->max_egress_usd_per_month = i % 5 == 0 ? 500 : INFINITY;
    }
    g->max_cloud_usd_per_h = 1500;
    g->max_cloud_gpus = 1024;
    g->default_max_runtime_s = 6 * 3600;
    static const char *const classes[] = {"restricted", "eu", "train", "infer",
                                          "exp", "batch", "dev", "prod"};
    for (size_t i = 0; i < 8; i++)
        g->classes = strv_add(g->classes, &g->nclasses, classes[i]);
    for (int i = 0; i < NLABELS; i++) {
        char kv[32];
        snprintf(kv, sizeof(kv), "k%d=v%d", i % 4, i);
        g->labels = strv_add(g->labels, &g->nlabels, kv);
    }
    const char *prov[8], *reg[128], *fam[64], *gpu[64];
    size_t np = distinct(f, 0, prov, 8), nr = distinct(f, 1, reg, 128);
    size_t nf = distinct(f, 2, fam, 64), ng = distinct(f, 3, gpu, 64);
    g->residencies = spw_xcalloc(2, sizeof(*g->residencies));
    g->nresidencies = 2;
    g->residencies[0].name = spw_xstrdup("restricted");
    g->residencies[0].onprem = 1;
    g->residencies[1].name = spw_xstrdup("eu");
    g->residencies[1].onprem = 1;
    for (size_t i = 0; i < nr; i++)
        if (strncmp(reg[i], "eu", 2) == 0)
            g->residencies[1].regions = strv_add(g->residencies[1].regions,
                                                 &g->residencies[1].nregions, reg[i]);
    g->datasets = spw_xcalloc(2, sizeof(*g->datasets));
    g->ndatasets = 2;
    g->datasets[0].name = spw_xstrdup("imagenet");
    g->datasets[0].size_gb = 150;
    g->datasets[0].home.pool = 0;
    g->datasets[1].name = spw_xstrdup("laion");
    g->datasets[1].size_gb = 2000;
    g->datasets[1].home.pool = 0;
    g->datasets[1].replicas = spw_xcalloc(1, sizeof(spw_site_t));
    g->datasets[1].nreplicas = 1;
    g->datasets[1].replicas[0].pool = -1;
    g->datasets[1].replicas[0].provider = spw_xstrdup(prov[0]);
    g->datasets[1].replicas[0].region = spw_xstrdup(reg[0]);
    g->egress_onprem_usd_per_gb = 0.02;
    g->rules = spw_xcalloc(NRULES, sizeof(*g->rules));
    g->nrules = NRULES;
    for (int i = 0; i < NRULES; i++) {
        spw_rule_t *ru = &g->rules[i];
        char name[16];
        snprintf(name, sizeof(name), "rule%d", i);
        ru->name = spw_xstrdup(name);
        ru->gpus_min = 1;
        ru->gpus_max = UINT32_MAX;
        ru->max_usd_per_gpu_h = INFINITY;
        if (pick(r, 10) < 7)
            for (size_t k = 1 + pick(r, 3); k > 0; k--)
                ru->teams |= 1ULL << pick(r, NTEAMS);
        if (pick(r, 10) < 3)
            ru->classes = 1ULL << (2 + pick(r, 6));
        if (pick(r, 10) < 2)
            ru->labels = 1ULL << pick(r, NLABELS);
        if (pick(r, 10) < 3) {
            ru->gpus_min = pick(r, 2) ? 1 : 8;
            ru->gpus_max = ru->gpus_min == 1 ? 4 : 64;
        }
        switch (i % 7) {
        case 0:
            for (size_t k = 1 + pick(r, 2); k > 0; k--)
                ru->allow_providers = strv_add(ru->allow_providers, &ru->n_allow_providers,
                                               prov[pick(r, np)]);
            break;
        case 1:
            ru->deny_providers = strv_add(ru->deny_providers, &ru->n_deny_providers,
                                          prov[pick(r, np)]);
            break;
        case 2:
            for (size_t k = 2 + pick(r, 8); k > 0; k--)
                ru->allow_regions = strv_add(ru->allow_regions, &ru->n_allow_regions,
                                             reg[pick(r, nr)]);
            break;
        case 3:
            for (size_t k = 1 + pick(r, 2); k > 0; k--)
                ru->deny_regions = strv_add(ru->deny_regions, &ru->n_deny_regions,
                                            reg[pick(r, nr)]);
            break;
        case 4:
            for (size_t k = 2 + pick(r, 4); k > 0; k--)
                ru->allow_gpus = strv_add(ru->allow_gpus, &ru->n_allow_gpus, gpu[pick(r, ng)]);
            break;
        case 5:
            ru->deny_families = strv_add(ru->deny_families, &ru->n_deny_families,
                                         fam[pick(r, nf)]);
            break;
        default:
            ru->max_usd_per_gpu_h = 2 + 6 * spw_rng_uniform(r);
            break;
        }
        if (pick(r, 10) == 0)
            ru->placement = pick(r, 2) ? SPW_PLACE_CLOUD_FIRST : SPW_PLACE_ONPREM_ONLY;
        if (pick(r, 15) == 0)
            ru->spot = SPW_SPOT_REQUIRED;
    }
    for (size_t i = 0; i < nf; i++)
        free((char *)fam[i]);
}

/* Returns 1 when the catalog was read, 0 for synthetic offers. */
static int build_fleet(spw_fleet_t *f, const char *catalog, int pools, spw_rng_t *r)
{
    spw_fleet_init(f);
    if (pools)
        add_pool(f, "dc", 512, "A100");
    spw_error_t err;
    FILE *fp = fopen(catalog, "r");
    if (fp) {
        fclose(fp);
        if (spw_offers_load(f, catalog, NULL, NULL, 0, &err) < 0) {
            fprintf(stderr, "bench_gov: %s\n", err.text);
            exit(1);
        }
        return 1;
    }
    synthetic_offers(f, r);
    return 0;
}

/* A random job's governance attributes (team, class, labels, data). */
static void random_attrs(spw_job_t *j, spw_rng_t *r, int with_data)
{
    j->team = (uint32_t)pick(r, NTEAMS + 1);
    j->jclass = pick(r, 4) == 0 ? (uint32_t)(1 + pick(r, 8)) : 0;
    j->labels = pick(r, 3) == 0 ? 1ULL << pick(r, NLABELS) : 0;
    j->data = with_data && pick(r, 5) == 0 ? (uint32_t)(1 + pick(r, 2)) : 0;
}

/* ---- 1. rule evaluation ---------------------------------------------------- */

static void bench_rules(const spw_fleet_t *f)
{
    enum { N = 1 << 16 };
    spw_rng_t r;
    spw_rng_seed(&r, 7);
    spw_job_t *jobs = spw_xcalloc(N, sizeof(*jobs));
    static const uint32_t gpus[] = {1, 1, 1, 2, 4, 8, 16, 32};
    for (size_t i = 0; i < N; i++) {
        jobs[i].gpus = gpus[pick(&r, 8)];
        random_attrs(&jobs[i], &r, 0);
        jobs[i].residency = pick(&r, 50) == 0 ? 2 : 0;
    }
    /* The timer's own cost, to take off the per-call figures. */
    double t0 = now_s(), tick = 0;
    for (int i = 0; i < 100000; i++)
        tick -= now_s() - now_s();
    tick = -tick / 100000;
    (void)t0;
    spw_govrt_t *rt = spw_govrt_create(f);
    uint32_t nprof = 0;
    double miss_s = 0, hit_s = 0;
    size_t misses = 0, hits = 0;
    uint64_t sink = 0;
    for (size_t i = 0; i < N; i++) {
        double a = now_s();
        uint32_t p = spw_govrt_profile_of(rt, &jobs[i]);
        double d = now_s() - a - tick;
        sink += p;
        if (p >= nprof) {
            nprof = p + 1;
            miss_s += d;
            misses++;
        } else {
            hit_s += d;
            hits++;
        }
    }
    /* Hits in bulk, without the timer around each call. */
    int rounds = 20;
    double b = now_s();
    for (int k = 0; k < rounds; k++)
        for (size_t i = 0; i < N; i++)
            sink += spw_govrt_profile_of(rt, &jobs[i]);
    double bulk = (now_s() - b) / ((double)rounds * N);
    printf("rules: %zu rules, %zu teams, %zu offers, %zu pools; %u distinct profiles over %d "
           "random jobs\n", f->gov.nrules, f->gov.nteams, f->noffers, f->npools, nprof, N);
    printf("  profile_of miss (new profile: offer sets intersected): %8.0f ns (%zu calls)\n",
           misses ? miss_s * 1e9 / (double)misses : 0, misses);
    printf("  profile_of hit, timed per call:                        %8.0f ns (%zu calls)\n",
           hits ? hit_s * 1e9 / (double)hits : 0, hits);
    printf("  profile_of hit, in bulk:                               %8.1f ns (%d calls)\n",
           bulk * 1e9, rounds * N);
    spw_govrt_destroy(rt);
    free(jobs);
    if (sink == 42)
        printf(" \n");
}

/* ---- 2. a full burst decision ---------------------------------------------- */

static void bench_burst(const spw_fleet_t *f, int with_data)
{
    enum { N = 200000, WARM = 20000 };
    spw_policy_t pol;
    spw_policy_default(&pol);
    spw_error_t err;
    spw_engine_t *e = spw_engine_create(f, &pol, &err);
    if (!e) {
        fprintf(stderr, "bench_gov: %s\n", err.text);
        exit(1);
    }
    spw_rng_t r;
    spw_rng_seed(&r, 11);
    spw_job_t *jobs = spw_xcalloc(N, sizeof(*jobs));
    static const uint32_t gpus[] = {1, 1, 1, 2, 4, 8};
    double tick = 0;
    for (int i = 0; i < 100000; i++)
        tick -= now_s() - now_s();
    tick = -tick / 100000;
    double spent = 0, now = 0;
    size_t placed = 0, measured = 0, held = 0, rejected = 0, unsched = 0;
    for (size_t i = 0; i < N; i++) {
        spw_job_t *j = &jobs[i];
        j->id = "b";
        j->gpus = gpus[pick(&r, 6)];
        j->est_runtime_s = 600 + spw_rng_exp(&r, 3600);
        j->deadline_s = NAN;
        j->order = (uint32_t)i;
        j->submit_s = now;
        random_attrs(j, &r, with_data);
        spw_job_t **pl, **rej;
        double a = now_s();
        spw_engine_submit(e, j, now);
        size_t np = spw_engine_schedule(e, now, &pl);
        double d = now_s() - a - tick;
        rejected += spw_engine_rejected(e, &rej);
        if (j->state == SPW_JOB_UNSCHEDULABLE)
            unsched++;
        else if (j->state == SPW_JOB_QUEUED)
            held++;
        if (i >= WARM && j->state == SPW_JOB_CLOUD) {
            spent += d;
            measured++;
        }
        /* Placed jobs end a second later (untimed): the ledger settles. */
        now += 1;
        for (size_t k = 0; k < np; k++) {
            spw_engine_finish(e, pl[k], now);
            placed++;
        }
    }
    spw_engine_stats_t st;
    spw_engine_stats(e, &st);
    printf("burst decision%s: submit + schedule of a job that bursts, budgets and caps "
           "checked, worst case reserved\n", with_data ? " (1 in 5 jobs reads a dataset)" : "");
    printf("  %8.0f ns per decision (%zu bursts after %d warm-up jobs; %zu placed in all, %zu "
           "held, %zu rejected, %zu unschedulable; %zu engine classes)\n",
           measured ? spent * 1e9 / (double)measured : 0, measured, WARM, placed, held,
           rejected, unsched, st.classes);
    spw_engine_destroy(e);
    free(jobs);
}

/* ---- 3. the simulator, 1M jobs --------------------------------------------- */

static double ms_round(double x)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%.3f", x);
    return strtod(buf, NULL);
}

static void bench_sim(spw_fleet_t *f, size_t n, int reps)
{
    spw_gen_opts_t o = {.jobs = n, .rate_per_h = 2048, .cv = 1, .seed = 1};
    spw_error_t err;
    spw_gen_parse_runtime(&o, "exp:3600", &err);
    spw_gen_parse_gpus(&o, "1:0.7,2:0.15,4:0.1,8:0.05", &err);
    spw_gen_job_t *g = spw_xmalloc(n * sizeof(*g));
    spw_gen(&o, g);
    spw_gen_opts_free(&o);
    spw_job_t *jobs = spw_xcalloc(n, sizeof(*jobs));
    double *rt = spw_xmalloc(n * sizeof(double));
    spw_job_t *attrs = spw_xcalloc(n, sizeof(*attrs));
    spw_rng_t r;
    spw_rng_seed(&r, 3);
    for (size_t i = 0; i < n; i++) {
        jobs[i].id = "j";
        jobs[i].submit_s = ms_round(g[i].submit_s);
        rt[i] = ms_round(g[i].runtime_s);
        jobs[i].est_runtime_s = rt[i];
        jobs[i].gpus = g[i].gpus;
        jobs[i].deadline_s = NAN;
        jobs[i].order = (uint32_t)i;
        random_attrs(&attrs[i], &r, 1);
    }
    free(g);
    spw_policy_t pol;
    spw_policy_default(&pol);   /* fifo, hol, no backfill, first fit, compute:0.25 */
    /* Three runs on the same fleet and offers: no governance; the rules,
     * residencies and datasets with budgets and caps too large to bind; and
     * the governance as built. */
    static const char *const mode_name[3] = {"off", "rules only", "on"};
    spw_gov_t full = f->gov, loose;
    spw_gov_copy(&loose, &full);
    for (size_t i = 0; i < loose.nteams; i++) {
        loose.teams[i].budget_usd *= 1e6;
        loose.teams[i].max_cloud_usd_per_h = loose.teams[i].max_cloud_gpus = INFINITY;
        loose.teams[i].max_egress_usd_per_month = INFINITY;
    }
    loose.max_cloud_usd_per_h = loose.max_cloud_gpus = INFINITY;
    double best[3] = {INFINITY, INFINITY, INFINITY};
    spw_sim_summary_t *sum = spw_xcalloc(3, sizeof(*sum));
    for (int m = 0; m < 3; m++) {
        if (m == 0)
            spw_gov_init(&f->gov);
        else
            f->gov = m == 1 ? loose : full;
        for (size_t i = 0; i < n; i++) {
            jobs[i].team = m ? attrs[i].team : 0;
            jobs[i].jclass = m ? attrs[i].jclass : 0;
            jobs[i].labels = m ? attrs[i].labels : 0;
            jobs[i].data = m ? attrs[i].data : 0;
        }
        for (int k = 0; k < reps; k++) {
            double a = now_s();
            if (spw_sim_run(f, &pol, jobs, rt, n, NULL, &sum[m], &err) < 0) {
                fprintf(stderr, "bench_gov: %s\n", err.text);
                exit(1);
            }
            double d = now_s() - a;
            if (d < best[m])
                best[m] = d;
        }
    }
    f->gov = full;
    spw_gov_clear(&loose);
    printf("simulator: %zu jobs, 512 x 8 A100 + %zu offers, compute:0.25 (best of %d)\n", n,
           f->noffers, reps);
    for (int m = 0; m < 3; m++) {
        const spw_sim_summary_t *s = &sum[m];
        printf("  governance %-10s %8.3f s %9.0f jobs/s  cloud %zu jobs $%.0f, egress $%.0f, "
               "held %zu, rejected %zu, never ran %zu, stopped %zu, events %llu\n",
               mode_name[m], best[m], (double)n / best[m], s->jobs_cloud, s->cloud_cost_usd,
               s->egress_usd, s->jobs_held, s->jobs_rejected, s->jobs_never_ran,
               s->jobs_stopped_max_runtime, (unsigned long long)s->events);
    }
    printf("  ratio rules only / off: %.2f; on / off: %.2f\n", best[1] / best[0],
           best[2] / best[0]);
    free(sum);
    free(jobs);
    free(rt);
    free(attrs);
}

int main(int argc, char **argv)
{
    size_t n = 1000000;
    int reps = 1, skip_sim = 0;
    const char *catalog = CATALOG;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--catalog") == 0 && i + 1 < argc)
            catalog = argv[++i];
        else if (strcmp(argv[i], "--skip-sim") == 0)
            skip_sim = 1;
        else {
            fprintf(stderr, "usage: bench_gov [--jobs N] [--reps R] [--catalog FILE] [--skip-sim]\n");
            return 2;
        }
    }
    if (n == 0 || reps < 1) {
        fprintf(stderr, "bench_gov: --jobs and --reps take numbers >= 1\n");
        return 2;
    }
    spw_rng_t r;
    spw_rng_seed(&r, 1);
    spw_fleet_t f, cloud_only;
    int real = build_fleet(&f, catalog, 1, &r);
    build_gov(&f, &r);
    spw_rng_seed(&r, 1);
    build_fleet(&cloud_only, catalog, 0, &r);
    build_gov(&cloud_only, &r);
    /* Budgets big enough that the burst benchmark measures decisions, not
     * refusals (its jobs end after a second). */
    for (size_t i = 0; i < cloud_only.gov.nteams; i++)
        if (isfinite(cloud_only.gov.teams[i].budget_usd))
            cloud_only.gov.teams[i].budget_usd *= 1000;
    printf("offers: %s\n", real ? catalog : "500 synthetic (no catalog)");
    bench_rules(&f);
    bench_burst(&cloud_only, 0);
    bench_burst(&cloud_only, 1);
    if (!skip_sim)
        bench_sim(&f, n, reps);
    spw_fleet_clear(&f);
    spw_fleet_clear(&cloud_only);
    return 0;
}
