/* test_numparse.c: util/numparse against fixed cases and against strtod /
 * strtoll on many random strings. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util/numparse.h"
#include "util/rng.h"

static int pd(const char *s, double *out)
{
    return spw_parse_double(s, strlen(s), out);
}

static int pi(const char *s, int64_t *out)
{
    return spw_parse_i64(s, strlen(s), out);
}

/* Builds a random string that is usually a valid number. */
static void random_number(spw_rng_t *r, char *buf, size_t cap)
{
    size_t n = 0;
    int i, k;

    if (spw_rng_below(r, 4) == 0)
        buf[n++] = spw_rng_below(r, 2) ? '-' : '+';
    k = (int)spw_rng_below(r, spw_rng_below(r, 5) == 0 ? 30 : 10);
    for (i = 0; i < k && n < cap - 40; i++)
        buf[n++] = (char)('0' + spw_rng_below(r, 10));
    if (spw_rng_below(r, 2)) {
        buf[n++] = '.';
        k = (int)spw_rng_below(r, spw_rng_below(r, 5) == 0 ? 30 : 10);
        for (i = 0; i < k && n < cap - 20; i++)
            buf[n++] = (char)('0' + spw_rng_below(r, 10));
    }
    if (spw_rng_below(r, 3) == 0) {
        buf[n++] = spw_rng_below(r, 2) ? 'e' : 'E';
        if (spw_rng_below(r, 2))
            buf[n++] = spw_rng_below(r, 2) ? '-' : '+';
        k = (int)spw_rng_below(r, 4);
        for (i = 0; i < k; i++)
            buf[n++] = (char)('0' + spw_rng_below(r, 10));
    }
    buf[n] = '\0';
}

/* What the grammar says about s, judged with strtod plus the extra rules
 * (no hex, inf, nan, no leading/trailing junk other than spaces). */
static int reference_double(const char *s, double *out)
{
    char *end;
    const char *p = s;
    int digits = 0;

    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '+' || *p == '-')
        p++;
    for (; *p; p++)
        if (*p >= '0' && *p <= '9')
            digits = 1;
        else if (!strchr(".eE+- \t", *p))
            return -1;
    if (!digits)
        return -1;
    errno = 0;
    *out = strtod(s, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end || !isfinite(*out))
        return -1;
    return 0;
}

int main(void)
{
    static const char *bad[] = {
        "", " ", "+", "-", ".", "-.", "e5", "1e", "1e+", "1.2.3", "nan",
        "NaN", "inf", "-inf", "infinity", "0x10", "0x1p3", "1 2", "12a",
        "a12", "1,5", "--1", "+-1", "1e5.5", "1e400", "-1e400", "1e99999999",
        NULL,
    };
    char buf[128];
    spw_rng_t r;
    double d;
    int64_t v;
    int i, mismatches = 0, valid = 0;

    ok(pd("123", &d) == 0 && d == 123, "plain integer");
    ok(pd("123.456", &d) == 0 && d == 123.456, "plain decimal");
    ok(pd("  -0.5\t", &d) == 0 && d == -0.5, "spaces and sign");
    ok(pd("-0", &d) == 0 && d == 0 && signbit(d), "negative zero");
    ok(pd("+.5", &d) == 0 && d == 0.5, "leading point");
    ok(pd("7.", &d) == 0 && d == 7, "trailing point");
    ok(pd("1e3", &d) == 0 && d == 1000, "exponent");
    ok(pd("2.5E-3", &d) == 0 && d == 2.5e-3, "capital exponent");
    ok(pd("1e-400", &d) == 0 && d == 0, "underflow is accepted");
    ok(pd("4.9e-324", &d) == 0 && d > 0, "smallest subnormal");
    ok(pd("1.7976931348623157e308", &d) == 0 && d == 1.7976931348623157e308,
       "largest double");
    ok(pd("0.1", &d) == 0 && d == 0.1, "0.1 is correctly rounded");
    ok(pd("9007199254740993", &d) == 0 && d == 9007199254740992.0,
       "2^53+1 rounds to even");
    ok(pd("123456789012345678901234567890", &d) == 0 &&
       d == 123456789012345678901234567890.0, "30 digits");
    ok(pd("0.000000000000000000000000000001", &d) == 0 && d == 1e-30,
       "many leading fraction zeros");
    ok(spw_parse_double("12345", 3, &d) == 0 && d == 123,
       "length bounds the field");
    for (i = 0; bad[i]; i++) {
        d = 42;
        ok(pd(bad[i], &d) == -1 && d == 42, "rejects '%s'", bad[i]);
    }
    ok(spw_parse_double(NULL, 0, &d) == -1, "NULL is rejected");
    memset(buf, '1', 100);
    buf[100] = '\0';
    ok(pd(buf, &d) == 0 && d == strtod(buf, NULL), "100-digit number");

    spw_rng_seed(&r, 2024);
    for (i = 0; i < 300000; i++) {
        double want = 0, got = 0;
        int rw, rg;
        random_number(&r, buf, sizeof(buf));
        rw = reference_double(buf, &want);
        rg = pd(buf, &got);
        if (rw == 0)
            valid++;
        if (rw != rg || (rw == 0 && memcmp(&want, &got, sizeof(got)) != 0)) {
            if (mismatches++ < 5)
                diag("'%s': want %d %.17g, got %d %.17g", buf, rw, want, rg,
                     got);
        }
    }
    is(mismatches, 0, "300000 random strings agree bit for bit with strtod");
    ok(valid > 150000, "most random strings were valid (%d)", valid);

    /* Random doubles printed with %.17g must round-trip exactly. */
    mismatches = 0;
    for (i = 0; i < 200000; i++) {
        uint64_t bits = spw_rng_next(&r);
        double x, y;
        memcpy(&x, &bits, sizeof(x));
        if (!isfinite(x))
            continue;
        snprintf(buf, sizeof(buf), i % 2 ? "%.17g" : "%.6f", x);
        if (pd(buf, &y) != 0 || y != strtod(buf, NULL))
            mismatches++;
    }
    is(mismatches, 0, "random doubles round-trip");

    ok(pi("0", &v) == 0 && v == 0, "i64 zero");
    ok(pi(" -42 ", &v) == 0 && v == -42, "i64 negative with spaces");
    ok(pi("+7", &v) == 0 && v == 7, "i64 plus sign");
    ok(pi("9223372036854775807", &v) == 0 && v == INT64_MAX, "i64 max");
    ok(pi("-9223372036854775808", &v) == 0 && v == INT64_MIN, "i64 min");
    ok(pi("9223372036854775808", &v) == -1, "i64 max + 1 overflows");
    ok(pi("-9223372036854775809", &v) == -1, "i64 min - 1 overflows");
    ok(pi("99999999999999999999", &v) == -1, "i64 20 digits overflow");
    ok(pi("1.0", &v) == -1, "i64 rejects a fraction");
    ok(pi("1e3", &v) == -1, "i64 rejects an exponent");
    ok(pi("", &v) == -1 && pi("-", &v) == -1 && pi(" ", &v) == -1,
       "i64 rejects empty");
    ok(pi("0x10", &v) == -1 && pi("12a", &v) == -1, "i64 rejects junk");
    ok(spw_parse_i64("123", 2, &v) == 0 && v == 12, "i64 length bounds");

    mismatches = 0;
    for (i = 0; i < 200000; i++) {
        long long want;
        char *end;
        int rg;
        int64_t got = 0;
        long long x = (long long)(spw_rng_next(&r) >>
                                  (1 + spw_rng_below(&r, 63)));
        snprintf(buf, sizeof(buf), "%lld", spw_rng_below(&r, 2) ? -x : x);
        if (i % 3 == 0)
            strcat(buf, "9");  /* sometimes push it past the range */
        errno = 0;
        want = strtoll(buf, &end, 10);
        rg = pi(buf, &got);
        if ((errno == ERANGE) != (rg == -1) || (rg == 0 && got != want))
            mismatches++;
    }
    is(mismatches, 0, "random integers agree with strtoll");
    return done_testing();
}
