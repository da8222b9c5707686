/* spot_trace.c: parsing spot availability traces (see spot_trace.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/file.h"
#include "util/spot_trace.h"

int spw_spot_trace_parse(const char *text, size_t len, const char *name,
                         spw_spot_trace_t *out, spw_error_t *err)
{
    json_error_t jerr;
    json_t *root, *meta, *gap, *data;
    uint32_t *avail = NULL;
    size_t n;
    double gap_s;

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return spw_errorf(err, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
    if (!json_is_object(root)) {
        spw_errorf(err, "%s: expected a JSON object with \"metadata\" and \"data\"", name);
        goto error;
    }
    meta = json_object_get(root, "metadata");
    gap = json_is_object(meta) ? json_object_get(meta, "gap_seconds") : NULL;
    if (!gap) {
        spw_errorf(err, "%s: metadata.gap_seconds is missing: say how many seconds "
                   "one tick of data lasts", name);
        goto error;
    }
    if (!json_is_number(gap)) {
        spw_errorf(err, "%s: metadata.gap_seconds must be a number of seconds", name);
        goto error;
    }
    gap_s = json_number_value(gap);
    if (!(gap_s > 0) || !isfinite(gap_s)) {
        spw_errorf(err, "%s: metadata.gap_seconds is %g: a tick must last more than "
                   "0 seconds", name, gap_s);
        goto error;
    }
    data = json_object_get(root, "data");
    if (!json_is_array(data)) {
        spw_errorf(err, "%s: \"data\" is missing or not an array of instance counts", name);
        goto error;
    }
    n = json_array_size(data);
    if (n == 0) {
        spw_errorf(err, "%s: \"data\" is empty: a trace needs at least one tick", name);
        goto error;
    }
    avail = spw_xmalloc(n * sizeof(*avail));
    for (size_t k = 0; k < n; k++) {
        json_t *v = json_array_get(data, k);
        json_int_t c;
        if (!json_is_integer(v)) {
            spw_errorf(err, "%s: data[%zu] is not an integer: counts are whole "
                       "numbers of instances", name, k);
            goto error;
        }
        c = json_integer_value(v);
        if (c < 0) {
            spw_errorf(err, "%s: data[%zu] is %lld: instance counts cannot be negative",
                       name, k, (long long)c);
            goto error;
        }
        if (c > (json_int_t)UINT32_MAX) {
            spw_errorf(err, "%s: data[%zu] is %lld: more than %lu instances",
                       name, k, (long long)c, (unsigned long)UINT32_MAX);
            goto error;
        }
        avail[k] = (uint32_t)c;
    }
    json_decref(root);
    out->gap_s = gap_s;
    out->avail = avail;
    out->n = n;
    return 0;
error:
    free(avail);
    json_decref(root);
    return -1;
}

int spw_spot_trace_load(const char *path, spw_spot_trace_t *out, spw_error_t *err)
{
    size_t len;
    char *buf = spw_read_file(path, &len, err);
    if (!buf)
        return -1;
    int rc = spw_spot_trace_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

int spw_spot_trace_coarsen(const spw_spot_trace_t *t, size_t k, spw_spot_trace_t *out,
                           spw_error_t *err)
{
    if (k == 0 || t->n < k)
        return spw_errorf(err, "a step of %zu ticks does not fit a trace of %zu ticks", k, t->n);
    size_t n = t->n / k;
    uint32_t *a = spw_xcalloc(n, sizeof(*a));
    for (size_t i = 0; i < n; i++) {
        uint32_t lo = UINT32_MAX;
        for (size_t q = 0; q < k; q++)
            if (t->avail[i * k + q] < lo)
                lo = t->avail[i * k + q];
        a[i] = lo;
    }
    out->avail = a;
    out->n = n;
    out->gap_s = t->gap_s * (double)k;
    return 0;
}

void spw_spot_trace_clear(spw_spot_trace_t *t)
{
    if (!t)
        return;
    free(t->avail);
    t->avail = NULL;
    t->n = 0;
    t->gap_s = 0;
}

int64_t spw_spot_trace_tick(const spw_spot_trace_t *t, double start_s, double t_s)
{
    double k = floor((t_s - start_s) / t->gap_s);
    /* Clamped far from the int64 limits so that callers may add 1. */
    if (isnan(k))
        return 0;
    if (k > 9e18)
        k = 9e18;
    if (k < -9e18)
        k = -9e18;
    return (int64_t)k;
}

uint32_t spw_spot_trace_at(const spw_spot_trace_t *t, int64_t k)
{
    int64_t n = (int64_t)t->n, r = k % n;
    return t->avail[r < 0 ? r + n : r];
}
