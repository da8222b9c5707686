/* numparse.c: number parsing with an exact fast path (Clinger's: a mantissa
 * below 2^53 times an exactly representable power of ten) and strtod for the
 * rest. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/numparse.h"

/* Powers of ten that are exact in a double. */
static const double pow10_exact[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Narrows [*b, *e) to exclude surrounding spaces and tabs. */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

/* strtod on a NUL-terminated copy of [b, e), which the caller has already
 * checked against the grammar, so strtod must consume all of it. */
static int parse_slow(const char *b, const char *e, double *out)
{
    char local[128];
    size_t len = (size_t)(e - b);
    char *buf = len < sizeof(local) ? local : spw_xmalloc(len + 1);
    char *end;
    double v;
    int rc = -1;

    memcpy(buf, b, len);
    buf[len] = '\0';
    errno = 0;
    v = strtod(buf, &end);
    if (end == buf + len && isfinite(v) && !(errno == ERANGE && isinf(v))) {
        *out = v;
        rc = 0;
    }
    if (buf != local)
        free(buf);
    return rc;
}

int spw_parse_double(const char *s, size_t n, double *out)
{
    const char *b = s, *e = s + n, *p, *start;
    uint64_t mant = 0;       /* significant digits seen, if they fit */
    int ndigits = 0;         /* significant digits in mant */
    int overflow = 0;        /* more than 19 significant digits */
    int nint = 0, nfrac = 0; /* digits before / after the point */
    int frac_in_mant = 0;    /* fraction digits that went into mant */
    int neg = 0;
    long exp10 = 0;
    double v;

    if (!s)
        return -1;
    trim(&b, &e);
    p = start = b;
    if (p < e && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    for (; p < e && is_digit(*p); p++, nint++) {
        if (ndigits == 0 && *p == '0')
            continue;  /* leading zeros are not significant */
        if (ndigits < 19)
            mant = mant * 10 + (uint64_t)(*p - '0');
        else
            overflow = 1;
        ndigits++;
    }
    if (p < e && *p == '.') {
        for (p++; p < e && is_digit(*p); p++, nfrac++) {
            if (ndigits == 0 && *p == '0') {
                frac_in_mant++;
                continue;
            }
            if (ndigits < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                frac_in_mant++;
            } else {
                overflow = 1;
            }
            ndigits++;
        }
    }
    if (nint + nfrac == 0)
        return -1;
    if (p < e && (*p == 'e' || *p == 'E')) {
        int eneg = 0, nexp = 0;
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        for (; p < e && is_digit(*p); p++, nexp++)
            if (exp10 < 100000)
                exp10 = exp10 * 10 + (*p - '0');
        if (nexp == 0)
            return -1;
        if (eneg)
            exp10 = -exp10;
    }
    if (p != e)
        return -1;

    /* Digits dropped past the 19th were integer digits (each one scales
     * the value by ten) or fraction digits (ignored); either way the fast
     * path is out, so overflow only routes to strtod. */
    exp10 -= frac_in_mant;
    if (!overflow && mant <= (UINT64_C(1) << 53) && exp10 >= -22 &&
        exp10 <= 22) {
        v = (double)mant;
        if (exp10 < 0)
            v /= pow10_exact[-exp10];
        else
            v *= pow10_exact[exp10];
        *out = neg ? -v : v;
        return 0;
    }
    if (mant == 0 && !overflow) {
        *out = neg ? -0.0 : 0.0;
        return 0;
    }
    return parse_slow(start, e, out);
}

int spw_parse_i64(const char *s, size_t n, int64_t *out)
{
    const char *b = s, *e = s + n, *p;
    uint64_t v = 0, limit;
    int neg = 0;

    if (!s)
        return -1;
    trim(&b, &e);
    p = b;
    if (p < e && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    if (p == e)
        return -1;
    limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; p < e; p++) {
        unsigned d;
        if (!is_digit(*p))
            return -1;
        d = (unsigned)(*p - '0');
        if (v > (limit - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (neg)
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        *out = (int64_t)v;
    return 0;
}
