/* report_html.c: the self-contained HTML what-if report (report_html.h).
 * The page is web/report.html with web/report.js inlined and the data as
 * one JSON object; the charts are drawn by that script as SVG. */
#include "cli/report_html.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/ui.h"
#include "util/version.h"

/* Most time-series points per run in the file; longer series are thinned. */
#define MAX_POINTS 1500

void spw_html_run_add_sample(spw_html_run_t *r, const spw_sim_sample_t *s)
{
    if (r->nsamples == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->samples = spw_xrealloc(r->samples, r->cap * sizeof(*r->samples));
    }
    r->samples[r->nsamples++] = *s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentiles 0..100 of v[0..n) (sorted in place), nearest rank. */
static void percentiles(double *v, size_t n, double *out)
{
    qsort(v, n, sizeof(double), cmp_double);
    for (int p = 0; p < SPW_HTML_PCT; p++)
        out[p] = n ? v[(size_t)fmin((double)(n - 1), floor(p / 100.0 * (double)(n - 1) + 0.5))] : 0;
}

void spw_html_run_finish(spw_html_run_t *r, const spw_trace_t *t)
{
    double *w = spw_xmalloc((t->njobs + 1) * sizeof(double));
    double *c = spw_xmalloc((t->njobs + 1) * sizeof(double));
    size_t n = 0;
    for (size_t i = 0; i < t->njobs; i++) {
        const spw_job_t *j = &t->jobs[i];
        if (j->state != SPW_JOB_DONE)
            continue;
        w[n] = j->start_s - j->submit_s;
        c[n] = j->end_s - j->submit_s;
        n++;
    }
    r->ndone = n;
    percentiles(w, n, r->wait_pct);
    percentiles(c, n, r->jct_pct);
    free(w);
    free(c);
}

void spw_html_run_clear(spw_html_run_t *r)
{
    if (!r)
        return;
    free(r->samples);
    memset(r, 0, sizeof(*r));
}

/* The summary of one row as spw_report_json writes it, parsed back. */
static json_t *summary_json(const spw_trace_t *t, const spw_report_row_t *row)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return json_object();
    spw_report_json(f, t, row);
    fclose(f);
    json_t *j = json_loadb(buf, len, 0, NULL);
    free(buf);
    return j ? j : json_object();
}

static json_t *pct_array(const double *v)
{
    json_t *a = json_array();
    for (int p = 0; p < SPW_HTML_PCT; p++)
        json_array_append_new(a, json_real(isfinite(v[p]) ? v[p] : 0));
    return a;
}

static json_t *run_json(const spw_trace_t *t, const spw_report_row_t *row, const spw_html_run_t *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "label", json_string(row->label));
    json_object_set_new(o, "wait_policy", json_string(row->wait));
    json_object_set_new(o, "summary", summary_json(t, row));
    json_t *ts = json_array();
    size_t stride = r->nsamples > MAX_POINTS ? (r->nsamples + MAX_POINTS - 1) / MAX_POINTS : 1;
    for (size_t i = 0; i < r->nsamples; i += stride) {
        const spw_sim_sample_t *s = &r->samples[i];
        json_array_append_new(ts, json_pack("[f, I, I, I, f]", s->t_s, (json_int_t)s->queued,
                                            (json_int_t)s->onprem_busy_gpus,
                                            (json_int_t)s->cloud_gpus,
                                            isfinite(s->cloud_usd_per_h) ? s->cloud_usd_per_h : 0));
    }
    json_object_set_new(o, "timeseries", ts);
    json_object_set_new(o, "jobs_done", json_integer((json_int_t)r->ndone));
    json_object_set_new(o, "wait_pct_s", pct_array(r->wait_pct));
    json_object_set_new(o, "jct_pct_s", pct_array(r->jct_pct));
    json_t *teams = json_array();
    const spw_sim_summary_t *s = &row->sum;
    for (size_t k = 0; k <= s->nteams && k <= SPW_GOV_MAX_TEAMS; k++) {
        const spw_sim_team_t *tm = &s->team[k];
        if (!tm->jobs && k == 0)
            continue;
        const char *name = k ? row->gov->teams[k - 1].name : "(no team)";
        json_array_append_new(teams, json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:f}",
                                               "team", name, "jobs", (json_int_t)tm->jobs,
                                               "onprem_usd", tm->onprem_usd,
                                               "cloud_usd", tm->cloud_usd,
                                               "egress_usd", tm->egress_usd,
                                               "wait_mean_s", tm->wait_mean_s,
                                               "wait_p90_s", tm->wait_p90_s, "rho", tm->rho));
    }
    json_object_set_new(o, "teams", teams);
    return o;
}

static json_t *inputs_json(const spw_trace_t *t, const spw_html_inputs_t *in)
{
    const spw_fleet_t *fl = &in->cfg->fleet;
    json_t *pools = json_array();
    for (size_t p = 0; p < fl->npools; p++) {
        const spw_pool_spec_t *ps = &fl->pools[p];
        long gpus = 0;
        for (uint32_t k = 0; k < ps->nnodes; k++)
            gpus += ps->node_gpus[k];
        json_array_append_new(pools, json_pack("{s:s, s:i, s:I, s:s, s:f}", "name", ps->name,
            "nodes", (int)ps->nnodes, "gpus", (json_int_t)gpus,
            "gpu", ps->model >= 0 ? fl->models.name[ps->model] : "any",
            "cost_usd_per_gpu_h", ps->cost_usd_per_gpu_h));
    }
    json_t *providers = json_object();
    for (size_t o = 0; o < fl->noffers; o++) {
        json_t *c = json_object_get(providers, fl->offers[o].provider);
        json_object_set_new(providers, fl->offers[o].provider,
                            json_integer(c ? json_integer_value(c) + 1 : 1));
    }
    char wait[64];
    spw_wait_format(&in->cfg->policy.wait, wait, sizeof(wait));
    return json_pack("{s:s, s:s?, s:I, s:I, s:o, s:o, s:s, s:s?, s:s, s:f, s:s}",
        "trace", in->trace_path, "config", in->config_path,
        "jobs", (json_int_t)t->njobs,
        "jobs_skipped", (json_int_t)(t->skipped_no_gpu + t->skipped_unscheduled),
        "pools", pools, "offers_by_provider", providers,
        "wait_policy", wait, "compare", in->compare_what,
        "command", in->command ? in->command : "", "step_s", in->step_s,
        "version", SPW_VERSION);
}

/* Writes text, replacing "</" with "<\/" so that it cannot close the
 * script element it sits in. */
static void put_script_safe(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (s[0] == '<' && s[1] == '/') {
            fputs("<\\/", f);
            s++;
        } else {
            fputc(*s, f);
        }
    }
}

int spw_report_html(const char *path, const spw_trace_t *t, const spw_html_inputs_t *in,
                    const spw_report_row_t *rows, const spw_html_run_t *runs, size_t n,
                    spw_error_t *err)
{
    const spw_ui_asset_t *page = spw_ui_asset("report.html");
    const spw_ui_asset_t *js = spw_ui_asset("report.js");
    if (!page || !js)
        return spw_errorf(err, "this spillway was built without web/report.html and report.js");
    json_t *data = json_object();
    json_object_set_new(data, "inputs", inputs_json(t, in));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, run_json(t, &rows[i], &runs[i]));
    json_object_set_new(data, "runs", arr);
    char *text = json_dumps(data, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(data);
    if (!text)
        return spw_errorf(err, "%s: cannot encode the report's data", path);

    FILE *f = fopen(path, "w");
    if (!f) {
        free(text);
        return spw_errorf(err, "%s: cannot write: %s", path, strerror(errno));
    }
    /* The page has two markers: the data, then the script. */
    const char *p = (const char *)page->data;
    const char *m1 = strstr(p, "/*SPW_DATA*/");
    const char *m2 = m1 ? strstr(m1, "/*SPW_SCRIPT*/") : NULL;
    if (!m1 || !m2) {
        fclose(f);
        free(text);
        remove(path);
        return spw_errorf(err, "web/report.html lacks its /*SPW_DATA*/ or /*SPW_SCRIPT*/ marker");
    }
    fwrite(p, 1, (size_t)(m1 - p), f);
    put_script_safe(f, text);
    m1 += strlen("/*SPW_DATA*/");
    fwrite(m1, 1, (size_t)(m2 - m1), f);
    put_script_safe(f, (const char *)js->data);
    m2 += strlen("/*SPW_SCRIPT*/");
    fputs(m2, f);
    free(text);
    if (fclose(f) != 0)
        return spw_errorf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}
