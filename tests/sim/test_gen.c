/* test_gen.c: the synthetic workload generator: determinism, arrival rate
 * and burstiness (cv), GPU-count weights, runtime distributions, and the
 * --runtime / --gpus parse errors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "tap.h"
#include "sim/gen.h"

#define N 200000

static spw_gen_job_t out1[N], out2[N];

static void opts(spw_gen_opts_t *o, size_t jobs, double rate, double cv, const char *rt,
                 const char *gpus, uint64_t seed)
{
    spw_error_t err;
    memset(o, 0, sizeof(*o));
    o->jobs = jobs;
    o->rate_per_h = rate;
    o->cv = cv;
    o->seed = seed;
    if (spw_gen_parse_runtime(o, rt, &err) < 0)
        diag("runtime '%s': %s", rt, err.text);
    if (spw_gen_parse_gpus(o, gpus, &err) < 0)
        diag("gpus '%s': %s", gpus, err.text);
}

/* Mean and coefficient of variation of the inter-arrival gaps. */
static void gaps(const spw_gen_job_t *v, size_t n, double *mean, double *cv)
{
    double s = 0, s2 = 0;
    for (size_t i = 1; i < n; i++) {
        double g = v[i].submit_s - v[i - 1].submit_s;
        s += g;
        s2 += g * g;
    }
    double m = s / (double)(n - 1);
    *mean = m;
    *cv = sqrt(s2 / (double)(n - 1) - m * m) / m;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_determinism(void)
{
    spw_gen_opts_t o;
    opts(&o, 5000, 20, 2, "lognormal:600:1.2", "1:0.7,2:0.15,4:0.1,8:0.05", 42);
    spw_gen(&o, out1);
    spw_gen(&o, out2);
    ok(memcmp(out1, out2, 5000 * sizeof(spw_gen_job_t)) == 0, "same seed: identical jobs");
    o.seed = 43;
    spw_gen(&o, out2);
    ok(memcmp(out1, out2, 5000 * sizeof(spw_gen_job_t)) != 0, "another seed: different jobs");
    /* A shorter run is a prefix of a longer one. */
    o.seed = 42;
    o.jobs = 100;
    spw_gen(&o, out2);
    ok(memcmp(out1, out2, 100 * sizeof(spw_gen_job_t)) == 0, "100 jobs are the first 100 of 5000");
    spw_gen_opts_free(&o);

    int sane = out1[0].submit_s == 0;
    for (size_t i = 0; i < 5000; i++) {
        sane &= out1[i].runtime_s > 0;
        sane &= out1[i].gpus == 1 || out1[i].gpus == 2 || out1[i].gpus == 4 || out1[i].gpus == 8;
        if (i)
            sane &= out1[i].submit_s >= out1[i - 1].submit_s;
    }
    ok(sane, "first job at 0, submits non-decreasing, runtimes > 0, GPU counts from the list");
}

static void test_arrivals(void)
{
    spw_gen_opts_t o;
    double mean, cv;

    /* cv 1 (Poisson): mean gap 3600/36 = 100 s; the sample mean of 200,000
     * exponential gaps has a relative standard error of 0.22 %. */
    opts(&o, N, 36, 1, "exp:100", "1", 7);
    spw_gen(&o, out1);
    gaps(out1, N, &mean, &cv);
    is_double(mean, 100, 2, "cv 1: mean inter-arrival %.2f s ~ 3600/36", mean);
    is_double(cv, 1, 0.03, "cv 1: coefficient of variation %.3f ~ 1", cv);

    /* cv 2: gamma with shape 1/4.  The CV estimate's standard error here is
     * about 0.6 %; allow 5 %. */
    o.cv = 2;
    spw_gen(&o, out1);
    gaps(out1, N, &mean, &cv);
    is_double(mean, 100, 3, "cv 2: mean inter-arrival %.2f s ~ 100", mean);
    is_double(cv, 2, 0.1, "cv 2: coefficient of variation %.3f ~ 2", cv);

    /* cv 0.5: gamma with shape 4. */
    o.cv = 0.5;
    o.rate_per_h = 7.2;   /* 500 s */
    spw_gen(&o, out1);
    gaps(out1, N, &mean, &cv);
    is_double(mean, 500, 5, "cv 0.5: mean inter-arrival %.2f s ~ 500", mean);
    is_double(cv, 0.5, 0.02, "cv 0.5: coefficient of variation %.3f ~ 0.5", cv);

    /* cv 0: evenly spaced. */
    o.cv = 0;
    o.rate_per_h = 60;
    o.jobs = 1000;
    spw_gen(&o, out1);
    int even = 1;
    for (size_t i = 0; i < 1000; i++)
        even &= fabs(out1[i].submit_s - 60.0 * (double)i) < 1e-6;
    ok(even, "cv 0: one job every 60 s exactly");
    spw_gen_opts_free(&o);
}

static void test_gpus(void)
{
    spw_gen_opts_t o;
    size_t cnt[9] = {0};
    opts(&o, N, 100, 1, "exp:60", "1:0.7,2:0.2,8:0.1", 11);
    spw_gen(&o, out1);
    int only = 1;
    for (size_t i = 0; i < N; i++) {
        if (out1[i].gpus <= 8)
            cnt[out1[i].gpus]++;
        only &= out1[i].gpus == 1 || out1[i].gpus == 2 || out1[i].gpus == 8;
    }
    ok(only, "gpus: only 1, 2 and 8 are drawn");
    is_double((double)cnt[1] / N, 0.7, 0.01, "gpus: share of 1 ~ 0.7 (%.4f)", (double)cnt[1] / N);
    is_double((double)cnt[2] / N, 0.2, 0.01, "gpus: share of 2 ~ 0.2 (%.4f)", (double)cnt[2] / N);
    is_double((double)cnt[8] / N, 0.1, 0.01, "gpus: share of 8 ~ 0.1 (%.4f)", (double)cnt[8] / N);
    spw_gen_opts_free(&o);

    /* Weights need not sum to 1; a zero weight is never drawn. */
    memset(cnt, 0, sizeof(cnt));
    opts(&o, N, 100, 1, "exp:60", "1:3,4:1,8:0", 12);
    spw_gen(&o, out1);
    for (size_t i = 0; i < N; i++)
        if (out1[i].gpus <= 8)
            cnt[out1[i].gpus]++;
    is_double((double)cnt[1] / N, 0.75, 0.01, "gpus 1:3,4:1: share of 1 ~ 0.75 (%.4f)",
              (double)cnt[1] / N);
    is(cnt[8], 0, "gpus: weight 0 never drawn");
    spw_gen_opts_free(&o);
}

static void test_runtimes(void)
{
    spw_gen_opts_t o;
    static double rt[N];

    /* Exponential: mean 300 s (relative standard error 0.22 %). */
    opts(&o, N, 100, 1, "exp:300", "1", 21);
    is(o.runtime, SPW_DIST_EXP, "runtime exp parsed");
    is_double(o.rt_a, 300, 0, "runtime exp mean");
    spw_gen(&o, out1);
    double s = 0;
    for (size_t i = 0; i < N; i++)
        s += out1[i].runtime_s;
    is_double(s / N, 300, 6, "exp:300: mean runtime %.2f", s / N);
    spw_gen_opts_free(&o);

    /* Lognormal: median 600 s, sigma 1.5: the log has mean ln 600, sd 1.5. */
    opts(&o, N, 100, 1, "lognormal:600:1.5", "1", 22);
    is(o.runtime, SPW_DIST_LOGNORMAL, "runtime lognormal parsed");
    is_double(o.rt_a, 600, 0, "lognormal median");
    is_double(o.rt_b, 1.5, 0, "lognormal sigma");
    spw_gen(&o, out1);
    double ls = 0, ls2 = 0;
    for (size_t i = 0; i < N; i++) {
        rt[i] = out1[i].runtime_s;
        ls += log(rt[i]);
        ls2 += log(rt[i]) * log(rt[i]);
    }
    qsort(rt, N, sizeof(double), cmp_d);
    double med = rt[N / 2];
    is_double(med, 600, 18, "lognormal: median runtime %.1f ~ 600 (3 %%)", med);
    double lm = ls / N, lsd = sqrt(ls2 / N - lm * lm);
    is_double(lm, log(600), 0.02, "lognormal: mean of log %.4f ~ ln 600", lm);
    is_double(lsd, 1.5, 0.02, "lognormal: sd of log %.4f ~ 1.5", lsd);
    spw_gen_opts_free(&o);

    /* From a file: a header line, then seconds; resampled uniformly. */
    char path[] = "/tmp/spw_test_gen_XXXXXX";
    int fd = mkstemp(path);
    const char *text = "runtime\n10\n20\n30\n";
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        ok(0, "cannot write a temporary runtime file");
        return;
    }
    close(fd);
    char spec[64];
    snprintf(spec, sizeof(spec), "file:%s", path);
    opts(&o, 30000, 100, 1, spec, "1", 23);
    is(o.runtime, SPW_DIST_FILE, "runtime file parsed");
    is(o.rt_nsamples, 3, "runtime file: 3 samples (header skipped)");
    spw_gen(&o, out1);
    size_t c[3] = {0}, other = 0;
    for (size_t i = 0; i < 30000; i++) {
        double r = out1[i].runtime_s;
        if (r == 10)
            c[0]++;
        else if (r == 20)
            c[1]++;
        else if (r == 30)
            c[2]++;
        else
            other++;
    }
    is(other, 0, "runtime file: only values from the file");
    ok(fabs(c[0] / 30000.0 - 1 / 3.0) < 0.02 && fabs(c[1] / 30000.0 - 1 / 3.0) < 0.02
       && fabs(c[2] / 30000.0 - 1 / 3.0) < 0.02, "runtime file: each value about a third (%zu %zu %zu)",
       c[0], c[1], c[2]);
    spw_gen_opts_free(&o);
    is(o.rt_samples == NULL && o.rt_nsamples == 0, 1, "spw_gen_opts_free empties the samples");

    /* A bad value after the first runtime is an error with the line. */
    fd = open(path, O_WRONLY | O_TRUNC);
    text = "runtime\n10\nabc\n";
    if (fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text)) {
        spw_error_t err;
        memset(&o, 0, sizeof(o));
        is(spw_gen_parse_runtime(&o, spec, &err), -1, "runtime file with 'abc' refused");
        char want[64];
        snprintf(want, sizeof(want), "%s:3:", path);
        ok(strstr(err.text, want) && strstr(err.text, "abc"), "runtime file: %s", err.text);
        ok(o.rt_samples == NULL && o.rt_nsamples == 0, "runtime file: nothing kept on error");
    }
    if (fd >= 0)
        close(fd);
    unlink(path);
}

static void test_parse(void)
{
    spw_gen_opts_t o;
    spw_error_t err;
    memset(&o, 0, sizeof(o));
    is(spw_gen_parse_gpus(&o, "1:0.7,2:0.15,4:0.1,8:0.05", &err), 0, "gpus: parses");
    is(o.ngpu, 4, "gpus: four counts");
    ok(o.gpu_value[0] == 1 && o.gpu_value[3] == 8 && o.gpu_weight[1] == 0.15 && o.gpu_weight[3] == 0.05,
       "gpus: values and weights");
    is(spw_gen_parse_gpus(&o, "4", &err), 0, "gpus: a bare count");
    ok(o.ngpu == 1 && o.gpu_value[0] == 4 && o.gpu_weight[0] == 1, "gpus: a bare count weighs 1");
    is(spw_gen_parse_gpus(&o, "2,4", &err), 0, "gpus: bare counts");
    ok(o.ngpu == 2 && o.gpu_weight[1] == 1, "gpus: equal weights");

    static const struct {
        const char *spec, *want;
    } badg[] = {
        {"", "--gpus"},        {"0:1", "'0'"},        {"a:1", "'a'"},         {"1:-1", "'-1'"},
        {"1:x", "'x'"},        {"1:0.5,", "trailing"}, {"1:0", "--gpus"},     {"65537:1", "65537"},
        {"1.5:1", "1.5"},
    };
    for (size_t i = 0; i < sizeof(badg) / sizeof(badg[0]); i++) {
        err.text[0] = '\0';
        int rc = spw_gen_parse_gpus(&o, badg[i].spec, &err);
        ok(rc == -1 && strstr(err.text, badg[i].want), "gpus '%s' refused: %s", badg[i].spec, err.text);
    }
    /* No side effects on failure (STYLE.md): a refused spec leaves the
     * options as they were. */
    is(spw_gen_parse_gpus(&o, "2:1", &err), 0, "gpus: 2:1");
    is(spw_gen_parse_gpus(&o, "1:0.5,x:1", &err), -1, "gpus: 1:0.5,x:1 refused");
    ok(o.ngpu == 1 && o.gpu_value[0] == 2 && o.gpu_weight[0] == 1,
       "gpus: a refused spec leaves the previous counts (ngpu %zu, value %u)", o.ngpu, o.gpu_value[0]);
    memset(&o, 0, sizeof(o));
    is(spw_gen_parse_runtime(&o, "exp:300", &err), 0, "runtime: exp:300");
    is(spw_gen_parse_runtime(&o, "lognormal:100:0", &err), -1, "runtime: lognormal:100:0 refused");
    ok(o.runtime == SPW_DIST_EXP && o.rt_a == 300,
       "runtime: a refused spec leaves the previous distribution (kind %d, a %g)", (int)o.runtime, o.rt_a);
    char many[256] = "";
    for (int i = 1; i <= 33; i++) {
        char one[16];
        snprintf(one, sizeof(one), "%s%d", i > 1 ? "," : "", i);
        strcat(many, one);
    }
    ok(spw_gen_parse_gpus(&o, many, &err) == -1 && strstr(err.text, "32"), "gpus: 33 counts refused: %s",
       err.text);

    static const struct {
        const char *spec, *want;
    } badr[] = {
        {"exp:0", "'0'"},
        {"exp:-5", "'-5'"},
        {"exp:abc", "'abc'"},
        {"exp:", "exp"},
        {"lognormal:100", "SIGMA"},
        {"lognormal:x:1", "'x'"},
        {"lognormal:100:0", "sigma"},
        {"weibull:1", "weibull"},
        {"file:/nonexistent/rt.csv", "/nonexistent/rt.csv"},
    };
    for (size_t i = 0; i < sizeof(badr) / sizeof(badr[0]); i++) {
        memset(&o, 0, sizeof(o));
        err.text[0] = '\0';
        int rc = spw_gen_parse_runtime(&o, badr[i].spec, &err);
        ok(rc == -1 && strstr(err.text, badr[i].want), "runtime '%s' refused: %s", badr[i].spec,
           err.text);
        spw_gen_opts_free(&o);
    }
}

int main(void)
{
    test_determinism();
    test_arrivals();
    test_gpus();
    test_runtimes();
    test_parse();
    return done_testing();
}
