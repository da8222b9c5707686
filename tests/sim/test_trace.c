/* test_trace.c: trace readers: spillway CSV (columns, fractions, sorting,
 * natural id order, every error with FILE:LINE and the column), the Alibaba
 * 2023 pod list (skips, fractional GPUs, model aliases), and the real shared
 * trace and node list when ../shared/data is present. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "fleet.h"
#include "config/config.h"
#include "core/model.h"
#include "sim/trace.h"

static int load(spw_trace_t *t, spw_models_t *m, const char *csv, spw_trace_format_t fmt,
                spw_error_t *err)
{
    err->text[0] = '\0';
    return spw_trace_load_mem(t, "t.csv", csv, strlen(csv), fmt, m, err);
}

static uint64_t bit(spw_models_t *m, const char *name)
{
    int i = spw_models_find(m, name);
    return i < 0 ? 0 : 1ULL << i;
}

/* ---- spillway CSV ---------------------------------------------------------------- */

static void test_spillway_basic(void)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    const char *csv = "id,submit_s,gpus,runtime_s\n"
                      "job-1,0,1,100\n"
                      "job-2,0.5,2,200.25\n";
    is(load(&t, &m, csv, SPW_TRACE_AUTO, &err), 0, "basic: loads");
    is(t.format, SPW_TRACE_SPILLWAY, "basic: spillway format detected");
    is(t.njobs, 2, "basic: 2 jobs");
    is(t.rows, 2, "basic: 2 rows");
    is(t.first_unsorted_line, 0, "basic: sorted");
    is_str(t.jobs[0].id, "job-1", "basic: first id");
    is_double(t.jobs[1].submit_s, 0.5, 0, "basic: fractional submit");
    is_double(t.runtime_s[1], 200.25, 0, "basic: fractional runtime");
    is_double(t.jobs[1].est_runtime_s, 200.25, 0, "basic: estimate defaults to the runtime");
    is(t.jobs[1].gpus, 2, "basic: gpus");
    is(t.jobs[1].gpu_mask, 0, "basic: no gpu column: any model");
    is(t.jobs[1].priority, 0, "basic: priority 0");
    ok(isnan(t.jobs[1].deadline_s), "basic: no deadline");
    is(t.jobs[0].order, 0, "basic: order 0");
    is(t.jobs[1].order, 1, "basic: order 1");
    is(t.jobs[1].team, 0, "basic: no team");
    is(t.teams.n, 1, "basic: only the empty team");
    is_str(t.teams.name[0], "", "basic: teams[0] is empty");
    ok(t.attr == NULL, "basic: no governance column, no attributes kept");
    spw_trace_free(&t);
    spw_trace_free(&t);   /* idempotent */
    spw_models_clear(&m);

    /* Header only: no jobs, no error. */
    is(load(&t, &m, "id,submit_s,gpus,runtime_s\n", SPW_TRACE_SPILLWAY, &err), 0, "header only: loads");
    is(t.njobs, 0, "header only: no jobs");
    spw_trace_free(&t);
}

static void test_spillway_optional(void)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    /* Columns in any order, with spaces around header names. */
    const char *csv = "gpus, id ,runtime_s,submit_s,gpu,team,priority,deadline_s,est_runtime_s\n"
                      "4,a,100,10,A100|h100,ml,5,1000,80\n"
                      "1,b,50,10,,,,,\n"
                      "2,c,60,11,A100,infra,-3,,\n"
                      "2,d,60,12,,ml,,,\n";
    is(load(&t, &m, csv, SPW_TRACE_AUTO, &err), 0, "optional: loads (%s)", err.text);
    is(t.njobs, 4, "optional: 4 jobs");
    const spw_job_t *a = &t.jobs[0], *b = &t.jobs[1], *c = &t.jobs[2], *d = &t.jobs[3];
    is_str(a->id, "a", "optional: a first");
    is(a->gpus, 4, "optional: a gpus");
    ok(bit(&m, "A100") && bit(&m, "H100"), "optional: models interned");
    is(a->gpu_mask, bit(&m, "A100") | bit(&m, "H100"), "optional: a accepts A100|H100");
    is(a->priority, 5, "optional: a priority");
    is_double(a->deadline_s, 1000, 0, "optional: a deadline");
    is_double(a->est_runtime_s, 80, 0, "optional: a estimate from est_runtime_s");
    is_double(t.runtime_s[0], 100, 0, "optional: a true runtime");
    is(a->team, 0, "optional: the job's team waits for spw_trace_bind");
    is_str(t.teams.name[t.attr[0].team], "ml", "optional: a team ml");
    is(b->gpu_mask, 0, "optional: empty gpu = any");
    is(t.attr[1].team, 0, "optional: empty team");
    is(b->priority, 0, "optional: empty priority = 0");
    ok(isnan(b->deadline_s), "optional: empty deadline = none");
    is_double(b->est_runtime_s, 50, 0, "optional: empty estimate = runtime");
    is(c->priority, -3, "optional: negative priority");
    is_str(t.teams.name[t.attr[2].team], "infra", "optional: c team infra");
    is(t.attr[3].team, t.attr[0].team, "optional: team names are shared");
    (void)c;
    (void)d;
    is(t.teams.n, 3, "optional: three teams ('', ml, infra)");
    spw_trace_free(&t);
    spw_models_clear(&m);
}

/* A NUL byte inside a name field ends the name: "ml\0x" and "ml" are one
 * team (found by fuzz_trace: the lookup used to read past the stored name). */
static void test_nul_in_name(void)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err = {{0}};
    static const char csv[] = "id,submit_s,gpus,runtime_s,team\n"
                              "a,0,1,10,ml\0x\n"
                              "b,1,1,10,ml\n"
                              "c,2,1,10,\0core\n";
    is(spw_trace_load_mem(&t, "t.csv", csv, sizeof(csv) - 1, SPW_TRACE_AUTO, &m, &err), 0,
       "nul: loads (%s)", err.text);
    is(t.njobs, 3, "nul: 3 jobs");
    is(t.teams.n, 2, "nul: two teams ('', ml)");
    is_str(t.teams.name[t.attr[0].team], "ml", "nul: a's team ends at the NUL");
    is(t.attr[1].team, t.attr[0].team, "nul: b shares a's team");
    is(t.attr[2].team, 0, "nul: a name starting with NUL is empty");
    spw_trace_free(&t);
    spw_models_clear(&m);
}

static void test_spillway_sorting(void)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;

    /* Out of order: line 3 is earlier than line 2. */
    const char *csv1 = "id,submit_s,gpus,runtime_s\n"
                       "a,5,1,10\n"
                       "b,3,2,20\n"
                       "c,7,3,30\n";
    is(load(&t, &m, csv1, SPW_TRACE_AUTO, &err), 0, "unsorted: loads");
    is(t.first_unsorted_line, 3, "unsorted: first unsorted line is 3");
    is_str(t.jobs[0].id, "b", "unsorted: b first");
    is_str(t.jobs[1].id, "a", "unsorted: then a");
    is_str(t.jobs[2].id, "c", "unsorted: then c");
    is(t.jobs[0].gpus, 2, "unsorted: fields move with the job");
    is_double(t.runtime_s[0], 20, 0, "unsorted: runtimes move with the job");
    is_double(t.runtime_s[1], 10, 0, "unsorted: runtime of a");
    is(t.jobs[0].order, 0, "unsorted: order follows the sorted position");
    is(t.jobs[2].order, 2, "unsorted: order 2");
    spw_trace_free(&t);

    /* Equal submit times: natural id order, job-9 before job-10 (and no
     * "unsorted" line, since no submit goes backwards). */
    const char *csv2 = "id,submit_s,gpus,runtime_s\n"
                       "job-10,0,1,10\n"
                       "job-9,0,1,9\n"
                       "job-100,0,1,100\n"
                       "job-09b,0,1,1\n";
    is(load(&t, &m, csv2, SPW_TRACE_AUTO, &err), 0, "ties: loads");
    is_str(t.jobs[0].id, "job-9", "ties: job-9 first");
    is_str(t.jobs[1].id, "job-09b", "ties: job-09b after job-9 (9 = 09, then 'b')");
    is_str(t.jobs[2].id, "job-10", "ties: then job-10");
    is_str(t.jobs[3].id, "job-100", "ties: then job-100");
    is_double(t.runtime_s[0], 9, 0, "ties: runtime follows job-9");
    is(t.first_unsorted_line, 0, "ties: submit never goes backwards: first_unsorted_line 0");
    spw_trace_free(&t);

    /* A tie out of id order before a submit that goes backwards: the
     * backwards line must still be reported (line 4). */
    const char *csv3 = "id,submit_s,gpus,runtime_s\n"
                       "job-10,5,1,1\n"
                       "job-9,5,1,1\n"
                       "job-2,1,1,1\n"
                       "job-1,7,1,1\n";
    is(load(&t, &m, csv3, SPW_TRACE_AUTO, &err), 0, "tie then backwards: loads");
    is_str(t.jobs[0].id, "job-2", "tie then backwards: job-2 first");
    is_str(t.jobs[1].id, "job-9", "tie then backwards: job-9");
    is_str(t.jobs[2].id, "job-10", "tie then backwards: job-10");
    is_str(t.jobs[3].id, "job-1", "tie then backwards: job-1 last");
    is(t.first_unsorted_line, 4, "tie then backwards: first_unsorted_line is 4 (job-2 at 1 after 5)");
    spw_trace_free(&t);
    spw_models_clear(&m);
}

/* A trace large enough for the loader's prefaulting thread (65,536 rows and
 * up): every row read right, and an error in the last rows (the thread
 * still running or joined) leaves nothing behind. */
static void test_large_trace(void)
{
    const unsigned n = 100000;
    size_t cap = 64 + (size_t)n * 40, len = 0;
    char *csv = malloc(cap);
    len += (size_t)snprintf(csv + len, cap - len, "id,submit_s,gpus,runtime_s\n");
    for (unsigned i = 0; i < n; i++)
        len += (size_t)snprintf(csv + len, cap - len, "j%u,%u.5,%u,%u\n", i, i, 1 + i % 8,
                                100 + i % 1000);
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    is(spw_trace_load_mem(&t, "big.csv", csv, len, SPW_TRACE_AUTO, &m, &err), 0,
       "large: 100,000 rows load");
    is(t.njobs, n, "large: 100,000 jobs");
    unsigned bad = 0;
    char id[16];
    for (unsigned i = 0; i < t.njobs && i < n; i++) {
        snprintf(id, sizeof(id), "j%u", i);
        if (strcmp(t.jobs[i].id, id) != 0 || t.jobs[i].submit_s != i + 0.5 ||
            t.jobs[i].gpus != 1 + i % 8 || t.runtime_s[i] != 100 + i % 1000 ||
            t.jobs[i].order != i || !isnan(t.jobs[i].deadline_s) || t.jobs[i].rare)
            bad++;
    }
    is(bad, 0, "large: every job's id, submit, GPUs, runtime and order as written");
    spw_trace_free(&t);

    /* The same rows with the last but one's GPUs malformed, then with the
     * last id repeated: each error names its line. */
    char *p = strstr(csv, "\nj99998,");
    p = strchr(p + 1, ',');
    p = strchr(p + 1, ',');
    p[1] = 'x';
    is(spw_trace_load_mem(&t, "big.csv", csv, len, SPW_TRACE_AUTO, &m, &err), -1,
       "large: a malformed row near the end fails");
    ok(strstr(err.text, "big.csv:100000:") && strstr(err.text, "gpus"), "large: \"%s\"", err.text);
    ok(t.jobs == NULL && t.njobs == 0, "large: nothing left after the error");
    p[1] = '1';
    memcpy(strstr(csv, "\nj99999,") + 1, "j99990", 6);
    is(spw_trace_load_mem(&t, "big.csv", csv, len, SPW_TRACE_AUTO, &m, &err), -1,
       "large: a duplicate id at the end fails");
    ok(strstr(err.text, "big.csv:100001: duplicate job id 'j99990' (first on line 99992)") != NULL,
       "large: \"%s\"", err.text);
    spw_models_clear(&m);
    free(csv);
}

/* Loads csv expecting an error that contains every string in want[]. */
static void expect_error(const char *what, const char *csv, const char *const *want)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    int rc = load(&t, &m, csv, SPW_TRACE_AUTO, &err);
    int all = rc == -1;
    for (const char *const *w = want; *w && all; w++)
        all = strstr(err.text, *w) != NULL;
    if (!ok(all, "error %s: \"%s\"", what, err.text)) {
        for (const char *const *w = want; *w; w++)
            diag("  wanted to contain: %s", *w);
    }
    ok(t.jobs == NULL && t.njobs == 0 && t.teams.name == NULL && t.ids == NULL && t.attr == NULL,
       "error %s: nothing left in the trace", what);
    if (rc == 0)
        spw_trace_free(&t);
    spw_models_clear(&m);
}

#define ERR(what, csv, ...)                                                   \
    do {                                                                      \
        static const char *const w_[] = {__VA_ARGS__, NULL};                  \
        expect_error(what, csv, w_);                                          \
    } while (0)

static void test_spillway_errors(void)
{
    ERR("missing column", "id,submit_s,gpus\na,0,1\n", "t.csv:1:", "missing column", "'runtime_s'");
    ERR("missing id", "submit_s,gpus,runtime_s\n0,1,1\n", "t.csv:1:", "'id'");
    ERR("unknown column", "id,submit_s,gpus,runtime_s,color\na,0,1,1,red\n", "t.csv:1:",
        "unknown column", "'color'");
    ERR("duplicate column", "id,submit_s,gpus,runtime_s,gpus\na,0,1,1,1\n", "t.csv:1:", "'gpus'",
        "twice");
    ERR("non-numeric submit", "id,submit_s,gpus,runtime_s\na,0,1,1\nb,abc,1,10\n", "t.csv:3:",
        "'submit_s'", "'abc'");
    ERR("non-numeric runtime", "id,submit_s,gpus,runtime_s\na,0,1,1 h\n", "t.csv:2:", "'runtime_s'");
    ERR("negative runtime", "id,submit_s,gpus,runtime_s\na,0,1,1\nb,5,1,-10\n", "t.csv:3:",
        "'runtime_s'", "'-10'");
    ERR("negative submit", "id,submit_s,gpus,runtime_s\na,-1,1,1\n", "t.csv:2:", "'submit_s'");
    ERR("gpus 0", "id,submit_s,gpus,runtime_s\na,0,0,1\n", "t.csv:2:", "column 'gpus'", "got '0'");
    ERR("fractional gpus", "id,submit_s,gpus,runtime_s\na,0,1.5,1\n", "t.csv:2:", "'gpus'");
    ERR("negative gpus", "id,submit_s,gpus,runtime_s\na,0,-2,1\n", "t.csv:2:", "'gpus'");
    ERR("bad priority", "id,submit_s,gpus,runtime_s,priority\na,0,1,1,high\n", "t.csv:2:",
        "'priority'");
    ERR("negative deadline", "id,submit_s,gpus,runtime_s,deadline_s\na,0,1,1,-5\n", "t.csv:2:",
        "'deadline_s'");
    ERR("bad estimate", "id,submit_s,gpus,runtime_s,est_runtime_s\na,0,1,1,soon\n", "t.csv:2:",
        "'est_runtime_s'");
    ERR("duplicate id", "id,submit_s,gpus,runtime_s\na,5,1,1\nb,1,1,1\na,0,1,1\n", "t.csv:4:",
        "duplicate job id 'a'", "first on line 2");
    ERR("too few fields", "id,submit_s,gpus,runtime_s\na,0,1,1\nb,0,1\n", "t.csv:3:",
        "expected 4 fields", "got 3");
    ERR("too many fields", "id,submit_s,gpus,runtime_s\na,0,1,1,9\n", "t.csv:2:", "expected 4 fields",
        "got 5");
    ERR("empty id", "id,submit_s,gpus,runtime_s\n,0,1,1\n", "t.csv:2:", "'id'");
    ERR("empty file", "", "t.csv", "empty");
    ERR("blank lines only", "\n\n\n", "t.csv", "empty");
    ERR("unknown format", "foo,bar\n1,2\n", "t.csv:1:", "format");
    /* A failed load leaves the caller's model table as it was. */
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    const char *csv = "id,submit_s,gpus,runtime_s,gpu\na,0,1,1,H100\nb,0,x,1,\n";
    is(load(&t, &m, csv, SPW_TRACE_AUTO, &err), -1, "error after a model: refused");
    is(m.n, 0, "error after a model: no model name interned by the failed load");
    spw_models_clear(&m);
    ERR("unterminated quote", "id,submit_s,gpus,runtime_s\n\"a,0,1,1\n", "t.csv:2:");
    ERR("bad labels", "id,submit_s,gpus,runtime_s,labels\na,0,1,1,env=prod\nb,0,1,1,prod\n",
        "t.csv:3:", "'labels'", "key=value");
    ERR("label without key", "id,submit_s,gpus,runtime_s,labels\na,0,1,1,=x\n", "t.csv:2:",
        "'labels'");
    ERR("negative max runtime", "id,submit_s,gpus,runtime_s,max_runtime_s\na,0,1,1,-1\n",
        "t.csv:2:", "'max_runtime_s'");
}

/* ---- governance columns and binding ------------------------------------------------ */

static void gov_names(char ***v, size_t *n, int count, ...)
{
    va_list ap;
    va_start(ap, count);
    *v = spw_xmalloc((size_t)count * sizeof(char *));
    for (int i = 0; i < count; i++)
        (*v)[i] = spw_xstrdup(va_arg(ap, const char *));
    *n = (size_t)count;
    va_end(ap);
}

/* A governance spec with teams ml and cv, classes prod and restricted,
 * labels env=prod and tier=gold, residency eu and dataset imagenet. */
static void gov_spec(spw_gov_t *g)
{
    spw_gov_init(g);
    g->teams = spw_xcalloc(2, sizeof(*g->teams));
    g->nteams = 2;
    g->teams[0].name = spw_xstrdup("ml");
    g->teams[1].name = spw_xstrdup("cv");
    gov_names(&g->classes, &g->nclasses, 2, "prod", "restricted");
    gov_names(&g->labels, &g->nlabels, 2, "env=prod", "tier=gold");
    g->residencies = spw_xcalloc(1, sizeof(*g->residencies));
    g->nresidencies = 1;
    g->residencies[0].name = spw_xstrdup("eu");
    g->datasets = spw_xcalloc(2, sizeof(*g->datasets));
    g->ndatasets = 2;
    g->datasets[0].name = spw_xstrdup("imagenet");
    g->datasets[0].home.pool = 0;
    g->datasets[1].name = spw_xstrdup("laion");
    g->datasets[1].home.pool = 0;
}

static void test_governance_columns(void)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    const char *csv = "id,submit_s,gpus,runtime_s,team,class,data,residency,labels,max_runtime_s\n"
                      "a,0,1,100,ml,prod,imagenet,eu, env=prod ; tier = gold ,3600\n"
                      "b,1,1,100,ml2,experiment,,,,\n"
                      "c,2,1,100,cv,restricted,laion,,team=x;env=prod,0\n"
                      "d,3,1,100,ml2,,imagenet,eu,env=dev,\n"
                      "e,4,1,100,ml3,prod,,,,\n";
    is(load(&t, &m, csv, SPW_TRACE_AUTO, &err), 0, "gov columns: load (%s)", err.text);
    ok(t.attr != NULL, "gov columns: attributes kept");
    is(t.teams.n, 5, "gov columns: teams '', ml, ml2, cv, ml3");
    is(t.classes.n, 4, "gov columns: classes '', prod, experiment, restricted");
    is(t.datasets.n, 3, "gov columns: datasets '', imagenet, laion");
    is(t.residencies.n, 2, "gov columns: residencies '', eu");
    is(t.labels.n, 4, "gov columns: three label sets");
    is_str(t.labels.name[t.attr[0].labels], "env=prod ; tier = gold", "gov columns: label set trimmed");
    is(t.datasets.line[t.attr[2].data], 4, "gov columns: laion first on line 4");
    is_double(t.jobs[0].max_runtime_s, 3600, 0, "gov columns: max_runtime_s");
    is_double(t.jobs[1].max_runtime_s, 0, 0, "gov columns: empty max_runtime_s = none");

    spw_gov_t g;
    gov_spec(&g);
    spw_trace_bind_info_t bi;
    is(spw_trace_bind(&t, &g, 0, &bi, &err), 0, "bind: ok (%s)", err.text);
    const spw_job_t *a = &t.jobs[0], *b = &t.jobs[1], *c = &t.jobs[2], *d = &t.jobs[3];
    ok(a->team == 1 && a->jclass == 1 && a->data == 1 && a->residency == 1,
       "bind: a is ml, prod, imagenet, eu");
    is(a->labels, 3, "bind: a carries env=prod and tier=gold");
    ok(b->team == 0 && b->jclass == 0 && b->data == 0 && b->labels == 0,
       "bind: b's unknown team and class are none");
    ok(c->team == 2 && c->jclass == 2 && c->data == 2, "bind: c is cv, restricted, laion");
    is(c->labels, 1, "bind: c: team=x is no rule's label, env=prod is");
    is(d->labels, 0, "bind: d: env=dev is no rule's label");
    is(bi.jobs_unknown_team, 3, "bind: 3 jobs of unknown teams");
    is_str(bi.unknown_teams, "ml2, ml3", "bind: unknown teams listed once each");
    is(bi.jobs_unknown_class, 1, "bind: 1 job of an unknown class");
    is_str(bi.unknown_classes, "experiment", "bind: unknown class listed");

    /* Binding again against another spec starts from the trace's names. */
    spw_gov_t g2;
    spw_gov_init(&g2);
    g2.datasets = spw_xcalloc(2, sizeof(*g2.datasets));
    g2.ndatasets = 2;
    g2.datasets[0].name = spw_xstrdup("laion");
    g2.datasets[1].name = spw_xstrdup("imagenet");
    g2.residencies = spw_xcalloc(1, sizeof(*g2.residencies));
    g2.nresidencies = 1;
    g2.residencies[0].name = spw_xstrdup("eu");
    is(spw_trace_bind(&t, &g2, 0, &bi, &err), 0, "rebind: ok");
    ok(a->team == 0 && a->jclass == 0 && a->data == 2 && c->data == 1 && a->labels == 0,
       "rebind: indices follow the new spec");
    is(bi.jobs_unknown_team, 0, "rebind: a config without teams warns about none");

    /* Unknown dataset / residency: an error naming it, no job changed. */
    spw_gov_clear(&g2);
    is(spw_trace_bind(&t, &g2, 0, &bi, &err), -1, "bind: unknown dataset refused");
    ok(strstr(err.text, "t.csv: dataset 'imagenet' (first at line 2) is not in the config's "
                        "data: datasets (known: none)") != NULL, "bind: message: %s", err.text);
    is(a->data, 2, "bind: failed bind changed nothing");
    spw_gov_clear(&g2);
    g2.datasets = spw_xcalloc(2, sizeof(*g2.datasets));
    g2.ndatasets = 2;
    g2.datasets[0].name = spw_xstrdup("laion");
    g2.datasets[1].name = spw_xstrdup("imagenet");
    g2.residencies = spw_xcalloc(1, sizeof(*g2.residencies));
    g2.nresidencies = 1;
    g2.residencies[0].name = spw_xstrdup("us");
    is(spw_trace_bind(&t, &g2, 0, &bi, &err), -1, "bind: unknown residency refused");
    ok(strstr(err.text, "residency 'eu' (first at line 2)") && strstr(err.text, "known: us"),
       "bind: message: %s", err.text);
    spw_gov_clear(&g2);
    spw_gov_clear(&g);
    spw_trace_free(&t);

    /* An Alibaba-style trace without governance columns binds to nothing. */
    is(load(&t, &m, "id,submit_s,gpus,runtime_s\na,0,1,1\n", SPW_TRACE_AUTO, &err), 0,
       "no columns: loads");
    gov_spec(&g);
    is(spw_trace_bind(&t, &g, 0, &bi, &err), 0, "no columns: binds");
    ok(t.jobs[0].team == 0 && t.jobs[0].data == 0 && bi.jobs_unknown_team == 0,
       "no columns: nothing set, nothing to warn about");
    spw_gov_clear(&g);
    spw_trace_free(&t);

    /* Unsorted rows: attributes move with their jobs. */
    is(load(&t, &m, "id,submit_s,gpus,runtime_s,team\na,5,1,1,ml\nb,1,1,1,cv\n", SPW_TRACE_AUTO,
            &err), 0, "sorted attrs: loads");
    is_str(t.teams.name[t.attr[0].team], "cv", "sorted attrs: b (cv) first");
    spw_trace_free(&t);
    spw_models_clear(&m);
}

/* ---- spot columns ------------------------------------------------------------------ */

static void test_spot_columns(void)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    /* Rows out of order, so the checkpoint flags must move with their jobs. */
    const char *csv = "id,submit_s,gpus,runtime_s,deadline_s,spot,spot_policy,checkpoint_interval_s\n"
                      "e,9,1,100,,,,\n"
                      "a,0,1,100,500,always,greedy,1h\n"
                      "b,1,1,100,,never,ondemand,0\n"
                      "c,2,1,100,, auto ,uniform-progress, continuous \n"
                      "d,3,1,100,,,,90\n";
    is(load(&t, &m, csv, SPW_TRACE_AUTO, &err), 0, "spot columns: load (%s)", err.text);
    const spw_job_t *a = &t.jobs[0], *b = &t.jobs[1], *c = &t.jobs[2], *d = &t.jobs[3];
    const spw_job_t *e = &t.jobs[4];
    is_str(e->id, "e", "spot columns: sorted by submit");
    is(a->spot_mode, SPW_SPOTMODE_ALWAYS, "spot columns: a always");
    is(b->spot_mode, SPW_SPOTMODE_NEVER, "spot columns: b never");
    is(c->spot_mode, SPW_SPOTMODE_AUTO, "spot columns: c auto (trimmed)");
    is(e->spot_mode, SPW_SPOTMODE_AUTO, "spot columns: empty = auto");
    is(a->spot_policy, SPW_SPOT_POLICY_GREEDY + 1, "spot columns: a greedy (value + 1)");
    is(b->spot_policy, SPW_SPOT_POLICY_ONDEMAND + 1, "spot columns: b ondemand");
    is(c->spot_policy, SPW_SPOT_POLICY_UNIFORM_PROGRESS + 1, "spot columns: c uniform-progress");
    is(e->spot_policy, 0, "spot columns: empty = the policy's");
    is_double(a->deadline_s, 500, 0, "spot columns: deadline_s is absolute, as written");
    is_double(a->checkpoint_interval_s, 3600, 0, "spot columns: a checkpoints every 1h");
    is_double(b->checkpoint_interval_s, 0, 0, "spot columns: b 0 = from scratch");
    is_double(c->checkpoint_interval_s, SPW_CKPT_CONTINUOUS, 0, "spot columns: c continuous");
    is_double(d->checkpoint_interval_s, 90, 0, "spot columns: d 90 seconds");
    is_double(e->checkpoint_interval_s, 0, 0, "spot columns: empty = 0 until bound");
    ok(t.own_ckpt && t.own_ckpt[0] && t.own_ckpt[1] && t.own_ckpt[2] && t.own_ckpt[3]
       && !t.own_ckpt[4], "spot columns: own checkpoint flags follow the sort");

    /* Binding gives the config's default to e only; again with another. */
    spw_gov_t g;
    spw_gov_init(&g);
    is(spw_trace_bind(&t, &g, 1800, NULL, &err), 0, "spot bind: ok");
    is_double(e->checkpoint_interval_s, 1800, 0, "spot bind: e takes the default");
    is_double(b->checkpoint_interval_s, 0, 0, "spot bind: b keeps its own 0");
    is_double(a->checkpoint_interval_s, 3600, 0, "spot bind: a keeps its own 1h");
    is(spw_trace_bind(&t, &g, SPW_CKPT_CONTINUOUS, NULL, &err), 0, "spot rebind: ok");
    is_double(e->checkpoint_interval_s, SPW_CKPT_CONTINUOUS, 0, "spot rebind: e continuous");
    is_double(d->checkpoint_interval_s, 90, 0, "spot rebind: d keeps 90");
    spw_trace_free(&t);

    /* Without the column every job takes the default. */
    is(load(&t, &m, "id,submit_s,gpus,runtime_s\na,0,1,1\nb,1,1,1\n", SPW_TRACE_AUTO, &err), 0,
       "no spot columns: loads");
    ok(t.own_ckpt == NULL, "no spot columns: no flags kept");
    is(spw_trace_bind(&t, &g, 600, NULL, &err), 0, "no spot columns: binds");
    ok(t.jobs[0].checkpoint_interval_s == 600 && t.jobs[1].checkpoint_interval_s == 600,
       "no spot columns: both jobs checkpoint every 600 s");
    ok(t.jobs[0].spot_mode == SPW_SPOTMODE_AUTO && t.jobs[0].spot_policy == 0,
       "no spot columns: auto, the policy's spot policy");
    spw_trace_free(&t);
    spw_gov_clear(&g);
    spw_models_clear(&m);

    ERR("bad spot", "id,submit_s,gpus,runtime_s,spot\na,0,1,1,auto\nb,0,1,1,sometimes\n",
        "t.csv:3:", "column 'spot'", "auto, always or never", "'sometimes'");
    ERR("bad spot policy", "id,submit_s,gpus,runtime_s,spot_policy\na,0,1,1,cheapest\n",
        "t.csv:2:", "column 'spot_policy'", "ondemand, greedy or uniform-progress", "'cheapest'");
    ERR("negative checkpoint", "id,submit_s,gpus,runtime_s,checkpoint_interval_s\na,0,1,1,-60\n",
        "t.csv:2:", "column 'checkpoint_interval_s'", "continuous", "'-60'");
    ERR("checkpoint text", "id,submit_s,gpus,runtime_s,checkpoint_interval_s\na,0,1,1,often\n",
        "t.csv:2:", "column 'checkpoint_interval_s'", "0 (no checkpoints: restart from scratch)",
        "'often'");
    ERR("checkpoint unit", "id,submit_s,gpus,runtime_s,checkpoint_interval_s\na,0,1,1,5 min\n",
        "t.csv:2:", "'5 min'");
}

/* ---- failure lists ---------------------------------------------------------------- */

static int fail_load(const spw_fleet_t *f, const char *csv, spw_sim_failure_t **out, size_t *n,
                     spw_error_t *err)
{
    err->text[0] = '\0';
    return spw_failures_load_mem("f.csv", csv, strlen(csv), f, out, n, err);
}

static void fail_error(const spw_fleet_t *f, const char *what, const char *csv,
                       const char *const *want)
{
    spw_sim_failure_t *list = (spw_sim_failure_t *)&list;   /* must stay untouched */
    size_t n = 77;
    spw_error_t err;
    int rc = fail_load(f, csv, &list, &n, &err);
    int all = rc == -1;
    for (const char *const *w = want; *w && all; w++)
        all = strstr(err.text, *w) != NULL;
    if (!ok(all, "failures error %s: \"%s\"", what, err.text))
        for (const char *const *w = want; *w; w++)
            diag("  wanted to contain: %s", *w);
    ok(list == (spw_sim_failure_t *)&list && n == 77, "failures error %s: outputs untouched",
       what);
    if (rc == 0)
        free(list);
}

#define FERR(f, what, csv, ...)                                               \
    do {                                                                      \
        static const char *const w_[] = {__VA_ARGS__, NULL};                  \
        fail_error(f, what, csv, w_);                                         \
    } while (0)

static void test_failures(void)
{
    spw_fleet_t f;
    spw_fleet_init(&f);
    add_pool(&f, "dc1", 4, 8, NULL, 0);
    add_pool(&f, "gpu/a", 2, 8, NULL, 0);   /* a '/' in the name: the last one splits */
    spw_sim_failure_t *list = NULL;
    size_t n = 0;
    spw_error_t err;
    const char *csv = "node,down_s,up_s\n"
                      "dc1/0,3600,7200\n"
                      "dc1/3, 1d ,1d4h\n"
                      "gpu/a/1,100,\n"
                      "dc1/0,7200,8000\n";   /* right after the first: no overlap */
    is(fail_load(&f, csv, &list, &n, &err), 0, "failures: load (%s)", err.text);
    is(n, 4, "failures: 4 rows");
    ok(n == 4 && list[0].pool == 0 && list[0].node == 0 && list[0].down_s == 3600
       && list[0].up_s == 7200, "failures: dc1/0 from 3600 to 7200");
    ok(n == 4 && list[1].node == 3 && list[1].down_s == 86400 && list[1].up_s == 100800,
       "failures: durations 1d and 1d4h");
    ok(n == 4 && list[2].pool == 1 && list[2].node == 1 && isinf(list[2].up_s),
       "failures: gpu/a/1 never comes back (empty up_s)");
    ok(n == 4 && list[3].down_s == 7200, "failures: file order kept");
    free(list);

    is(fail_load(&f, "node,down_s\ndc1/2,50\n", &list, &n, &err), 0,
       "failures without up_s: load (%s)", err.text);
    ok(n == 1 && isinf(list[0].up_s), "failures without up_s: never back");
    free(list);
    is(fail_load(&f, "node,down_s,up_s\n", &list, &n, &err), 0, "header only: loads");
    is(n, 0, "header only: no failures");
    free(list);

    FERR(&f, "empty file", "", "f.csv: empty file", "node,down_s,up_s");
    FERR(&f, "missing column", "node,up_s\ndc1/0,5\n", "f.csv:1:", "missing 'down_s'");
    FERR(&f, "unknown pool", "node,down_s,up_s\ndc1/0,0,1\ndc9/0,0,10\n", "f.csv:3:",
         "no on-prem pool is named 'dc9'", "pools: dc1, gpu/a");
    FERR(&f, "index out of range", "node,down_s,up_s\ndc1/4,0,10\n", "f.csv:2:",
         "pool 'dc1' has nodes dc1/0 to dc1/3", "'dc1/4'");
    FERR(&f, "negative index", "node,down_s,up_s\ndc1/-1,0,10\n", "f.csv:2:", "'dc1/-1'");
    FERR(&f, "no index", "node,down_s,up_s\ndc1,0,10\n", "f.csv:2:", "POOL/INDEX", "'dc1'");
    FERR(&f, "up before down", "node,down_s,up_s\ndc1/1,100,50\n", "f.csv:2:",
         "up_s 50 is not after down_s 100", "leave up_s empty");
    FERR(&f, "negative down", "node,down_s,up_s\ndc1/1,-5,50\n", "f.csv:2:", "'down_s' is -5");
    FERR(&f, "negative up", "node,down_s,up_s\ndc1/1,5,-50\n", "f.csv:2:", "'up_s' is -50");
    FERR(&f, "bad time", "node,down_s,up_s\ndc1/1,noon,\n", "f.csv:2:", "'down_s'", "'noon'");
    FERR(&f, "fields", "node,down_s,up_s\ndc1/1,5\n", "f.csv:2:", "expected 3 fields");
    FERR(&f, "overlap", "node,down_s,up_s\ndc1/1,100,500\ndc1/2,0,\ndc1/1,400,600\n",
         "f.csv:4:", "node dc1/1 is down twice at once (lines 2 and 4");
    FERR(&f, "overlap forever", "node,down_s,up_s\ndc1/1,1000,\ndc1/1,5000,6000\n",
         "f.csv:3:", "lines 2 and 3");
    spw_fleet_clear(&f);
    spw_fleet_init(&f);
    FERR(&f, "no pools", "node,down_s,up_s\ndc1/0,0,1\n", "f.csv:2:", "(pools: none)");
    spw_fleet_clear(&f);
}

/* ---- Alibaba --------------------------------------------------------------------- */

static const char alibaba_sample[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p-0,1000,1024,1,1000,,LS,Running,10,110,10\n"              /* 2: 1 GPU, 100 s */
    "p-1,1000,1024,0,0,,BE,Running,20,120,20\n"                 /* 3: no GPU: skipped */
    "p-2,1000,1024,1,500,V100M16,LS,Succeeded,30,330,40\n"      /* 4: half a GPU of V100M16 */
    "p-3,1000,1024,2,1000,V100M16|T4,LS,Failed,40,100,50\n"     /* 5: 2 GPUs, V100 or T4 */
    "p-4,1000,1024,1,1000,,LS,Pending,50,,\n"                   /* 6: never scheduled */
    "p-5,1000,1024,1,250,,LS,Pending,60,200,\n"                 /* 7: never scheduled, fractional */
    "p-6,1000,1024,8,1000,V100M32,LS,Running,5,1005,5\n";       /* 8: earliest submit */

static void test_alibaba_sample(void)
{
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    is(spw_trace_load_mem(&t, "pods.csv", alibaba_sample, strlen(alibaba_sample), SPW_TRACE_AUTO,
                          &m, &err), 0, "alibaba: loads");
    is(t.format, SPW_TRACE_ALIBABA, "alibaba: detected from the header");
    is(t.rows, 7, "alibaba: 7 rows");
    is(t.njobs, 4, "alibaba: 4 jobs (p-0, p-2, p-3, p-6)");
    is(t.skipped_no_gpu, 1, "alibaba: one pod without GPU");
    is(t.skipped_unscheduled, 2, "alibaba: two never-scheduled pods");
    is(t.fractional_gpu, 1, "alibaba: one fractional pod among the jobs (p-5 was skipped)");
    is(t.first_unsorted_line, 8, "alibaba: p-6 (line 8) is earlier than p-3");
    is_str(t.jobs[0].id, "p-6", "alibaba: sorted: p-6 first");
    is_str(t.jobs[1].id, "p-0", "alibaba: then p-0");
    is_str(t.jobs[2].id, "p-2", "alibaba: then p-2");
    is_str(t.jobs[3].id, "p-3", "alibaba: then p-3");
    const spw_job_t *p2 = &t.jobs[2], *p3 = &t.jobs[3], *p6 = &t.jobs[0];
    is(p2->gpus, 1, "alibaba: half a GPU takes one");
    is_double(p2->submit_s, 30, 0, "alibaba: submit = creation_time");
    is_double(t.runtime_s[2], 290, 0, "alibaba: runtime = deletion - scheduled (330 - 40)");
    is_double(p2->est_runtime_s, 290, 0, "alibaba: estimate = runtime");
    ok(spw_models_find(&m, "V100") >= 0, "alibaba: V100M16 interned as V100");
    ok(spw_models_find(&m, "V100M16") < 0, "alibaba: no model named V100M16");
    is(p2->gpu_mask, bit(&m, "V100"), "alibaba: p-2 accepts V100");
    is(p3->gpu_mask, bit(&m, "V100") | bit(&m, "T4"), "alibaba: p-3 accepts V100 or T4");
    is(p3->gpus, 2, "alibaba: p-3 2 GPUs");
    is(p6->gpu_mask, bit(&m, "V100-32GB"), "alibaba: V100M32 read as V100-32GB");
    is(t.jobs[1].gpu_mask, 0, "alibaba: empty gpu_spec = any");
    is_double(t.runtime_s[0], 1000, 0, "alibaba: p-6 runtime 1000");
    spw_trace_free(&t);
    spw_models_clear(&m);

    size_t len;
    const char *s = spw_alibaba_model("V100M16", 7, &len);
    ok(len == 4 && strncmp(s, "V100", 4) == 0, "alias: V100M16 -> V100");
    s = spw_alibaba_model("v100m32", 7, &len);
    ok(len == 9 && strncmp(s, "V100-32GB", 9) == 0, "alias: v100m32 -> V100-32GB");
    s = spw_alibaba_model("T4xx", 2, &len);
    ok(len == 2 && strncmp(s, "T4", 2) == 0, "alias: other names unchanged");

    /* Errors. */
    const char *hdr = "name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n";
    char buf[512];
    snprintf(buf, sizeof(buf), "%sp,1,1000,0,10,0\n", hdr);
    is(spw_trace_load_mem(&t, "pods.csv", buf, strlen(buf), SPW_TRACE_ALIBABA, &m, &err), -1,
       "alibaba: missing gpu_spec refused");
    ok(strstr(err.text, "pods.csv:1:") && strstr(err.text, "'gpu_spec'"),
       "alibaba: names the column: %s", err.text);
    const char *bad = "name,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time,scheduled_time\n"
                      "p,1,1000,,0,10,0\n"
                      "q,1,1000,,0,5,9\n";
    is(spw_trace_load_mem(&t, "pods.csv", bad, strlen(bad), SPW_TRACE_ALIBABA, &m, &err), -1,
       "alibaba: deletion before scheduling refused");
    ok(strstr(err.text, "pods.csv:3:") != NULL, "alibaba: line 3: %s", err.text);
    bad = "name,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time,scheduled_time\n"
          "p,one,1000,,0,10,0\n";
    is(spw_trace_load_mem(&t, "pods.csv", bad, strlen(bad), SPW_TRACE_ALIBABA, &m, &err), -1,
       "alibaba: non-numeric num_gpu refused");
    ok(strstr(err.text, "pods.csv:2:") && strstr(err.text, "'num_gpu'"), "alibaba: %s", err.text);
    spw_models_clear(&m);

    spw_trace_format_t f;
    ok(spw_trace_format_parse("alibaba", &f, NULL) == 0 && f == SPW_TRACE_ALIBABA, "format: alibaba");
    ok(spw_trace_format_parse("spillway", &f, NULL) == 0 && f == SPW_TRACE_SPILLWAY,
       "format: spillway");
    ok(spw_trace_format_parse("auto", &f, NULL) == 0 && f == SPW_TRACE_AUTO, "format: auto");
    is(spw_trace_format_parse("parquet", &f, &err), -1, "format: unknown refused");
    is_str(spw_trace_format_name(SPW_TRACE_ALIBABA), "alibaba", "format name");
}

/* ---- the real shared data ----------------------------------------------------------- */

#define POD_LIST "../shared/data/alibaba-gpu-2023/openb_pod_list_default.csv"
#define NODE_LIST "../shared/data/alibaba-gpu-2023/openb_node_list_gpu_node.csv"

static void test_real_trace(void)
{
    if (access(POD_LIST, R_OK) != 0) {
        printf("ok %d # skip %s not found (run from the repository root with ../shared/data)\n",
               ++tap_run, POD_LIST);
        return;
    }
    spw_trace_t t;
    spw_models_t m = {0};
    spw_error_t err;
    is(spw_trace_load(&t, POD_LIST, SPW_TRACE_AUTO, &m, &err), 0, "real trace: loads");
    is(t.format, SPW_TRACE_ALIBABA, "real trace: Alibaba format");
    is(t.rows, 8152, "real trace: 8,152 rows");
    is(t.skipped_no_gpu, 1088, "real trace: 1,088 pods without GPU");
    is(t.njobs + t.skipped_unscheduled, 7064, "real trace: 7,064 GPU pods = jobs + unscheduled");
    is(t.skipped_unscheduled, 861, "real trace: 861 never scheduled");
    is(t.njobs, 6203, "real trace: 6,203 jobs");
    /* Counted with
     *   awk -F, 'NR>1 && $4>0 && $11!="" && $5<1000' openb_pod_list_default.csv | wc -l
     * (GPU pods that were scheduled and ask for gpu_milli < 1000): 2,573.
     * Over all GPU pods, scheduled or not, it is 3,078. */
    is(t.fractional_gpu, 2573, "real trace: 2,573 fractional-GPU jobs");
    is(t.first_unsorted_line, 0, "real trace: already sorted by creation_time");
    uint64_t gpus = 0;
    double rt = 0, last = 0;
    for (size_t i = 0; i < t.njobs; i++) {
        gpus += t.jobs[i].gpus;
        rt += t.runtime_s[i];
        if (t.jobs[i].submit_s > last)
            last = t.jobs[i].submit_s;
    }
    /* awk: sum of $4 = 6,571; sum of $10-$11 = 191,369,677; max $9 = 12,901,761. */
    is(gpus, 6571, "real trace: 6,571 GPUs asked in total");
    is_double(rt, 191369677, 0, "real trace: runtimes sum to 191,369,677 s");
    is_double(last, 12901761, 0, "real trace: last submit 12,901,761 s (149.3 days)");
    spw_trace_free(&t);
    spw_models_clear(&m);
}

static void test_real_nodes(void)
{
    if (access(NODE_LIST, R_OK) != 0) {
        printf("ok %d # skip %s not found (run from the repository root with ../shared/data)\n",
               ++tap_run, NODE_LIST);
        return;
    }
    spw_fleet_t f;
    spw_fleet_init(&f);
    spw_error_t err;
    is(spw_nodes_load(&f, NODE_LIST, "openb", 1.25, &err), 0, "real nodes: loads");
    uint32_t nodes = 0;
    for (size_t i = 0; i < f.npools; i++)
        nodes += f.pools[i].nnodes;
    is(nodes, 1213, "real nodes: 1,213 GPU nodes");
    is(spw_fleet_gpus(&f), 6212, "real nodes: 6,212 GPUs");
    is(f.npools, 7, "real nodes: one pool per model (7)");
    /* awk -F, 'NR>1 && $4>0 {n[$5]++; g[$5]+=$4}': nodes and GPUs per model. */
    static const struct {
        const char *pool, *model;
        uint32_t nodes;
        uint64_t gpus;
    } want[] = {
        {"openb-G2", "G2", 549, 4392},          {"openb-T4", "T4", 404, 842},
        {"openb-P100", "P100", 134, 265},       {"openb-V100", "V100", 55, 195},
        {"openb-G3", "G3", 39, 312},            {"openb-V100-32GB", "V100-32GB", 30, 204},
        {"openb-A10", "A10", 2, 2},
    };
    int good = 1;
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        const spw_pool_spec_t *p = NULL;
        for (size_t i = 0; i < f.npools; i++)
            if (strcmp(f.pools[i].name, want[k].pool) == 0)
                p = &f.pools[i];
        uint64_t g = 0;
        for (uint32_t i = 0; p && i < p->nnodes; i++)
            g += p->node_gpus[i];
        if (!p || p->nnodes != want[k].nodes || g != want[k].gpus || p->model < 0
            || strcmp(f.models.name[p->model], want[k].model) != 0 || p->cost_usd_per_gpu_h != 1.25) {
            diag("pool %s: %s", want[k].pool, p ? "wrong nodes, GPUs, model or cost" : "missing");
            good = 0;
        }
    }
    ok(good, "real nodes: pools G2 549/4392, T4 404/842, P100 134/265, V100 55/195, G3 39/312, "
             "V100-32GB 30/204, A10 2/2");
    /* First pool is the model of the first GPU node in the file (P100). */
    is_str(f.pools[0].name, "openb-P100", "real nodes: pools in order of first appearance");
    spw_fleet_clear(&f);
}

int main(void)
{
    test_spillway_basic();
    test_spillway_optional();
    test_nul_in_name();
    test_spillway_sorting();
    test_large_trace();
    test_spillway_errors();
    test_governance_columns();
    test_spot_columns();
    test_failures();
    test_alibaba_sample();
    test_real_trace();
    test_real_nodes();
    return done_testing();
}
