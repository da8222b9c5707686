/* tap.h: a tiny header-only TAP producer for spillway's C unit tests, run by
 * `prove`.  Test-only: it keeps its counters in static variables. */
#ifndef SPW_TESTS_TAP_H
#define SPW_TESTS_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_planned = -1;  /* count given to plan(), -1 if none */
static int tap_run;           /* tests run so far */
static int tap_failed;        /* tests failed so far */

#define TAP_UNUSED __attribute__((unused))

static TAP_UNUSED void plan(int n)
{
    tap_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

static TAP_UNUSED void tap_vdiag(const char *fmt, va_list ap)
{
    char buf[4096];
    const char *p, *nl;

    vsnprintf(buf, sizeof(buf), fmt, ap);
    /* Like Test::More, diagnostics go to stderr so prove shows them without
     * -v; every line gets "# " so it is never mistaken for a result. */
    fflush(stdout);
    for (p = buf; ; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl) {
            fprintf(stderr, "# %s\n", p);
            break;
        }
        fprintf(stderr, "# %.*s\n", (int)(nl - p), p);
    }
    fflush(stderr);
}

static TAP_UNUSED __attribute__((format(printf, 1, 2)))
void diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vdiag(fmt, ap);
    va_end(ap);
}

/* Prints one result line; returns cond so callers can add diagnostics. */
static TAP_UNUSED int tap_vok(int cond, const char *file, int line,
                              const char *fmt, va_list ap)
{
    char name[1024];

    vsnprintf(name, sizeof(name), fmt, ap);
    tap_run++;
    if (!cond)
        tap_failed++;
    printf("%sok %d - %s\n", cond ? "" : "not ", tap_run, name);
    fflush(stdout);
    if (!cond)
        diag("  Failed test '%s'\n  at %s line %d.", name, file, line);
    return cond;
}

static TAP_UNUSED __attribute__((format(printf, 4, 5)))
int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vok(cond, file, line, fmt, ap);
    va_end(ap);
    return cond;
}

static TAP_UNUSED __attribute__((format(printf, 5, 6)))
int tap_is(long got, long want, const char *file, int line,
           const char *fmt, ...)
{
    va_list ap;
    int cond = got == want;
    va_start(ap, fmt);
    tap_vok(cond, file, line, fmt, ap);
    va_end(ap);
    if (!cond)
        diag("         got: %ld\n    expected: %ld", got, want);
    return cond;
}

static TAP_UNUSED __attribute__((format(printf, 6, 7)))
int tap_is_double(double got, double want, double tol, const char *file,
                  int line, const char *fmt, ...)
{
    va_list ap;
    int cond = got == want || fabs(got - want) <= tol || (isnan(got) && isnan(want));
    va_start(ap, fmt);
    tap_vok(cond, file, line, fmt, ap);
    va_end(ap);
    if (!cond)
        diag("         got: %.17g\n    expected: %.17g (tolerance %g)",
             got, want, tol);
    return cond;
}

static TAP_UNUSED __attribute__((format(printf, 5, 6)))
int tap_is_str(const char *got, const char *want, const char *file, int line,
               const char *fmt, ...)
{
    va_list ap;
    int cond = (got && want) ? strcmp(got, want) == 0 : got == want;
    va_start(ap, fmt);
    tap_vok(cond, file, line, fmt, ap);
    va_end(ap);
    if (!cond)
        diag("         got: %s%s%s\n    expected: %s%s%s",
             got ? "'" : "", got ? got : "NULL", got ? "'" : "",
             want ? "'" : "", want ? want : "NULL", want ? "'" : "");
    return cond;
}

/* Ends the test: prints the trailing plan if none was given and returns the
 * process exit status (0 if every test passed and the plan was met). */
static TAP_UNUSED int done_testing(void)
{
    if (tap_planned < 0) {
        printf("1..%d\n", tap_run);
    } else if (tap_planned != tap_run) {
        diag("Looks like you planned %d tests but ran %d.", tap_planned,
             tap_run);
        return 1;
    }
    if (tap_failed)
        diag("Looks like you failed %d test%s of %d.", tap_failed,
             tap_failed == 1 ? "" : "s", tap_run);
    fflush(stdout);
    return tap_failed ? 1 : 0;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is(got, want, ...) \
    tap_is((long)(got), (long)(want), __FILE__, __LINE__, __VA_ARGS__)
#define is_double(got, want, tol, ...) \
    tap_is_double((got), (want), (tol), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) \
    tap_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)

#endif
