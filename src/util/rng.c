/* rng.c: xoshiro256** (Blackman and Vigna) with splitmix64 seeding, plus the
 * few distributions the simulator draws from. */
#include <math.h>

#include "util/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void spw_rng_seed(spw_rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    int i;

    for (i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    /* splitmix64 is a bijection of its counter, so four consecutive outputs
     * cannot all be zero; keep the guard anyway since all-zero is a fixed
     * point of xoshiro. */
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1;
}

uint64_t spw_rng_next(spw_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double spw_rng_uniform(spw_rng_t *r)
{
    return (double)(spw_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in (0, 1]: safe to take the logarithm of. */
static double uniform_pos(spw_rng_t *r)
{
    return (double)((spw_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

double spw_rng_exp(spw_rng_t *r, double mean)
{
    if (!(mean > 0))
        return 0;
    return -mean * log(uniform_pos(r));
}

double spw_rng_normal(spw_rng_t *r)
{
    double u, v, s;

    do {
        u = 2.0 * spw_rng_uniform(r) - 1.0;
        v = 2.0 * spw_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    return u * sqrt(-2.0 * log(s) / s);
}

double spw_rng_gamma(spw_rng_t *r, double shape, double scale)
{
    double boost = 1.0, d, c, x, v, u;

    if (!(shape > 0) || !(scale > 0))
        return 0;
    if (shape < 1.0) {
        /* Gamma(k) = Gamma(k + 1) * U^(1/k) (Marsaglia-Tsang, section 6). */
        boost = pow(uniform_pos(r), 1.0 / shape);
        shape += 1.0;
    }
    d = shape - 1.0 / 3.0;
    c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        do {
            x = spw_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0);
        v = v * v * v;
        u = uniform_pos(r);
        if (u < 1.0 - 0.0331 * (x * x) * (x * x))
            break;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            break;
    }
    return d * v * boost * scale;
}

uint64_t spw_rng_below(spw_rng_t *r, uint64_t n)
{
    uint64_t x, limit;

    if (n == 0)
        return 0;
    /* Reject the top partial bucket: 2^64 mod n values would otherwise be
     * over-represented.  (-n) % n == 2^64 mod n in unsigned arithmetic. */
    limit = -n % n;
    do {
        x = spw_rng_next(r);
    } while (x < limit);
    return x % n;
}
