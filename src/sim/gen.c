/* gen.c: synthetic workload generator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/gen.h"
#include "util/csv.h"
#include "util/numparse.h"
#include "util/rng.h"

static int parse_num(const char *s, size_t n, const char *what, double *out, spw_error_t *err)
{
    if (spw_parse_double(s, n, out) < 0 || *out <= 0)
        return spw_errorf(err, "%s: '%.*s' is not a number > 0", what, (int)(n > 40 ? 40 : n), s);
    return 0;
}

static int load_samples(spw_gen_opts_t *o, const char *path, spw_error_t *err)
{
    spw_csv_t c;
    if (spw_csv_open(&c, path, err) < 0)
        return -1;
    size_t cap = 0;
    int r;
    while ((r = spw_csv_next(&c, err)) == 1) {
        double v;
        if (spw_parse_double(c.field[0], c.field_len[0], &v) < 0) {
            if (c.line == 1 || o->rt_nsamples == 0)
                continue;   /* a header */
            spw_errorf(err, "%s:%ld: expected a runtime in seconds, got '%.*s'", path, c.line,
                       (int)(c.field_len[0] > 40 ? 40 : c.field_len[0]), c.field[0]);
            goto error;
        }
        if (v < 0) {
            spw_errorf(err, "%s:%ld: runtime must be >= 0", path, c.line);
            goto error;
        }
        if (o->rt_nsamples == cap) {
            cap = cap ? cap * 2 : 4096;
            o->rt_samples = spw_xrealloc(o->rt_samples, cap * sizeof(double));
        }
        o->rt_samples[o->rt_nsamples++] = v;
    }
    if (r < 0)
        goto error;
    if (o->rt_nsamples == 0) {
        spw_errorf(err, "%s: no runtimes in the file", path);
        goto error;
    }
    spw_csv_close(&c);
    return 0;
error:
    free(o->rt_samples);
    o->rt_samples = NULL;
    o->rt_nsamples = 0;
    spw_csv_close(&c);
    return -1;
}

/* Parses into a copy and commits only on success: a failed parse leaves o
 * as it was. */
int spw_gen_parse_runtime(spw_gen_opts_t *o, const char *spec, spw_error_t *err)
{
    static const char usage[] = "(expected exp:MEAN_S, lognormal:MEDIAN_S:SIGMA or file:PATH)";
    spw_gen_opts_t n = *o;
    n.rt_samples = NULL;
    n.rt_nsamples = 0;
    if (strncmp(spec, "exp:", 4) == 0) {
        n.runtime = SPW_DIST_EXP;
        if (parse_num(spec + 4, strlen(spec + 4), "--runtime exp", &n.rt_a, err) < 0)
            return -1;
    } else if (strncmp(spec, "lognormal:", 10) == 0) {
        const char *a = spec + 10, *colon = strchr(a, ':');
        if (!colon)
            return spw_errorf(err, "--runtime '%s': missing ':SIGMA' %s", spec, usage);
        n.runtime = SPW_DIST_LOGNORMAL;
        if (parse_num(a, (size_t)(colon - a), "--runtime lognormal median", &n.rt_a, err) < 0
            || parse_num(colon + 1, strlen(colon + 1), "--runtime lognormal sigma", &n.rt_b, err) < 0)
            return -1;
    } else if (strncmp(spec, "file:", 5) == 0) {
        n.runtime = SPW_DIST_FILE;
        if (load_samples(&n, spec + 5, err) < 0)
            return -1;
    } else {
        return spw_errorf(err, "--runtime '%s' %s", spec, usage);
    }
    spw_gen_opts_free(o);
    *o = n;
    return 0;
}

int spw_gen_parse_gpus(spw_gen_opts_t *out, const char *spec, spw_error_t *err)
{
    /* Parse into a copy: a failed parse leaves *out as it was. */
    spw_gen_opts_t copy = *out, *o = &copy;
    o->ngpu = 0;
    const char *p = spec;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *colon = memchr(p, ':', n);
        int64_t g;
        double w = 1;
        size_t gl = colon ? (size_t)(colon - p) : n;
        if (spw_parse_i64(p, gl, &g) < 0 || g < 1 || g > 65536)
            return spw_errorf(err, "--gpus: '%.*s' is not a GPU count from 1 to 65536", (int)gl, p);
        if (colon && (spw_parse_double(colon + 1, n - gl - 1, &w) < 0 || w < 0))
            return spw_errorf(err, "--gpus: weight '%.*s' is not a number >= 0", (int)(n - gl - 1),
                              colon + 1);
        if (o->ngpu == sizeof(o->gpu_value) / sizeof(o->gpu_value[0]))
            return spw_errorf(err, "--gpus: at most 32 GPU counts");
        o->gpu_value[o->ngpu] = (uint32_t)g;
        o->gpu_weight[o->ngpu++] = w;
        p += n + (comma ? 1 : 0);
        if (comma && !*p)
            return spw_errorf(err, "--gpus: trailing ','");
    }
    double sum = 0;
    for (size_t i = 0; i < o->ngpu; i++)
        sum += o->gpu_weight[i];
    if (o->ngpu == 0 || sum <= 0)
        return spw_errorf(err, "--gpus '%s': give COUNT:WEIGHT pairs, e.g. 1:0.7,2:0.3", spec);
    *out = copy;
    return 0;
}

void spw_gen_opts_free(spw_gen_opts_t *o)
{
    free(o->rt_samples);
    o->rt_samples = NULL;
    o->rt_nsamples = 0;
}

void spw_gen(const spw_gen_opts_t *o, spw_gen_job_t *out)
{
    spw_rng_t rng;
    spw_rng_seed(&rng, o->seed);
    double mean_gap = 3600.0 / o->rate_per_h, t = 0, wsum = 0;
    for (size_t i = 0; i < o->ngpu; i++)
        wsum += o->gpu_weight[i];
    /* Gamma inter-arrivals with the wanted coefficient of variation. */
    double shape = o->cv > 0 ? 1.0 / (o->cv * o->cv) : 0;
    for (size_t i = 0; i < o->jobs; i++) {
        if (i > 0) {
            if (o->cv <= 0)
                t += mean_gap;
            else if (o->cv == 1)
                t += spw_rng_exp(&rng, mean_gap);
            else
                t += spw_rng_gamma(&rng, shape, mean_gap / shape);
        }
        double rt;
        switch (o->runtime) {
        case SPW_DIST_LOGNORMAL:
            rt = o->rt_a * exp(o->rt_b * spw_rng_normal(&rng));
            break;
        case SPW_DIST_FILE:
            rt = o->rt_samples[spw_rng_below(&rng, o->rt_nsamples)];
            break;
        default:
            rt = spw_rng_exp(&rng, o->rt_a);
            break;
        }
        double u = spw_rng_uniform(&rng) * wsum, acc = 0;
        uint32_t g = o->gpu_value[o->ngpu - 1];
        for (size_t k = 0; k < o->ngpu; k++) {
            acc += o->gpu_weight[k];
            if (u < acc) {
                g = o->gpu_value[k];
                break;
            }
        }
        out[i].submit_s = t;
        out[i].runtime_s = rt;
        out[i].gpus = g;
    }
}
