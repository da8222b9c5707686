/* rng.h: the seeded, deterministic random number generator (xoshiro256**
 * seeded through splitmix64) that every random draw in spillway comes from. */
#ifndef SPW_UTIL_RNG_H
#define SPW_UTIL_RNG_H

#include <stdint.h>

/* Generator state.  Plain value: copy it to fork a stream, no allocation, no
 * hidden state anywhere else, so the same seed always gives the same draws. */
typedef struct spw_rng {
    uint64_t s[4];  /* xoshiro256** state words; never all zero */
} spw_rng_t;

/* Seeds r from one 64-bit value (any value, including 0, is fine). */
void spw_rng_seed(spw_rng_t *r, uint64_t seed);

/* Next raw 64-bit output. */
uint64_t spw_rng_next(spw_rng_t *r);

/* Uniform double in [0, 1) with 53 random bits. */
double spw_rng_uniform(spw_rng_t *r);

/* Exponential variate with the given mean (> 0); returns 0 if mean <= 0. */
double spw_rng_exp(spw_rng_t *r, double mean);

/* Standard normal variate (mean 0, variance 1), Marsaglia's polar method
 * without caching the second value. */
double spw_rng_normal(spw_rng_t *r);

/* Gamma variate with shape k > 0 and scale theta > 0 (mean k*theta),
 * Marsaglia-Tsang; shape < 1 uses the U^(1/k) boost.  Returns 0 if shape or
 * scale is not positive. */
double spw_rng_gamma(spw_rng_t *r, double shape, double scale);

/* Unbiased integer in [0, n); returns 0 when n is 0. */
uint64_t spw_rng_below(spw_rng_t *r, uint64_t n);

#endif
