/* gen.h: synthetic workloads (arrivals, runtimes, GPU counts) from one seed. */
#ifndef SPW_SIM_GEN_H
#define SPW_SIM_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef enum spw_dist_kind { SPW_DIST_EXP, SPW_DIST_LOGNORMAL, SPW_DIST_FILE } spw_dist_kind_t;

typedef struct spw_gen_opts {
    size_t jobs;                 /* jobs to make */
    double rate_per_h;           /* mean arrivals per hour */
    double cv;                   /* coefficient of variation of inter-arrival times (1 = Poisson) */
    spw_dist_kind_t runtime;     /* runtime distribution */
    double rt_a, rt_b;           /* exp: mean s; lognormal: median s, sigma */
    double *rt_samples;          /* file: runtimes to resample from (owned by opts) */
    size_t rt_nsamples;
    uint32_t gpu_value[32];      /* GPU counts ... */
    double gpu_weight[32];       /* ... and their weights */
    size_t ngpu;
    uint64_t seed;               /* everything follows from it */
} spw_gen_opts_t;

typedef struct spw_gen_job {
    double submit_s;             /* arrival, seconds from 0 */
    double runtime_s;            /* seconds, > 0 */
    uint32_t gpus;               /* GPUs wanted */
} spw_gen_job_t;

/* Parses "exp:MEAN_S", "lognormal:MEDIAN_S:SIGMA" or "file:PATH" into opts. */
int spw_gen_parse_runtime(spw_gen_opts_t *o, const char *spec, spw_error_t *err);
/* Parses "1:0.7,2:0.15,4:0.1,8:0.05" into opts (weights need not sum to 1). */
int spw_gen_parse_gpus(spw_gen_opts_t *o, const char *spec, spw_error_t *err);
void spw_gen_opts_free(spw_gen_opts_t *o);

/* Fills out[0..o->jobs) deterministically from o->seed. */
void spw_gen(const spw_gen_opts_t *o, spw_gen_job_t *out);

#endif
