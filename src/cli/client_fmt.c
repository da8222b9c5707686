/* client_fmt.c: how the client shows the daemon's answers: pretty JSON that
 * keeps every value, durations, money, times, and column-aligned tables. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/client_private.h"
#include "util/error.h"

/* ---- JSON ------------------------------------------------------------------ */

char *spw_cli_real(double v, char *buf, size_t len)
{
    /* jansson prints reals with 17 digits (0.1 -> 0.10000000000000001);
     * the shortest text that reads back as the same double is the
     * daemon's number as it wrote it. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

static void write_jstring(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (ch < 0x20 || ch == 0x7f)
                fprintf(f, "\\u%04x", ch);
            else
                fputc(ch, f);
        }
    }
    fputc('"', f);
}

/* indent < 0: compact. */
static void json_write(FILE *f, const json_t *v, int indent, int depth)
{
    char buf[40];
    const char *nl = indent < 0 ? "" : "\n";
    int pad = indent < 0 ? 0 : indent * (depth + 1);
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (json_object_size(v) == 0) {
            fputs("{}", f);
            break;
        }
        const char *key;
        json_t *val;
        size_t i = 0;
        fprintf(f, "{%s", nl);
        json_object_foreach((json_t *)v, key, val) {
            fprintf(f, "%*s", pad, "");
            write_jstring(f, key, strlen(key));
            fputs(": ", f);
            json_write(f, val, indent, depth + 1);
            fprintf(f, "%s%s", ++i < json_object_size(v) ? "," : "", nl);
            if (indent < 0 && i < json_object_size(v))
                fputc(' ', f);
        }
        fprintf(f, "%*s}", indent < 0 ? 0 : indent * depth, "");
        break;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (n == 0) {
            fputs("[]", f);
            break;
        }
        fprintf(f, "[%s", nl);
        for (size_t i = 0; i < n; i++) {
            fprintf(f, "%*s", pad, "");
            json_write(f, json_array_get(v, i), indent, depth + 1);
            fprintf(f, "%s%s", i + 1 < n ? "," : "", nl);
            if (indent < 0 && i + 1 < n)
                fputc(' ', f);
        }
        fprintf(f, "%*s]", indent < 0 ? 0 : indent * depth, "");
        break;
    }
    case JSON_STRING: write_jstring(f, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL:
        spw_cli_real(json_real_value(v), buf, sizeof(buf));
        /* Keep it a real for whoever parses it next: 0.0 stays 0.0. */
        if (!strpbrk(buf, ".eEni"))
            strcat(buf, ".0");
        fputs(buf, f);
        break;
    case JSON_TRUE: fputs("true", f); break;
    case JSON_FALSE: fputs("false", f); break;
    case JSON_NULL: fputs("null", f); break;
    }
}

void spw_cli_json_print(FILE *f, const json_t *v)
{
    json_write(f, v, 2, 0);
    fputc('\n', f);
}

void spw_cli_json_compact(FILE *f, const json_t *v)
{
    json_write(f, v, -1, 0);
}

const char *spw_cli_jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

int spw_cli_jnum(const json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 0;
}

int spw_cli_jbool(const json_t *o, const char *key)
{
    return json_is_true(json_object_get(o, key));
}

/* ---- durations, money, times ----------------------------------------------- */

char *spw_cli_dur(double s, char *buf, size_t len)
{
    if (!isfinite(s)) {
        snprintf(buf, len, "-");
        return buf;
    }
    if (s < 0)
        s = 0;
    long long t = (long long)(s + 0.5);
    if (t < 60)
        snprintf(buf, len, "%llds", t);
    else if (t < 3600)
        snprintf(buf, len, "%lldm%02llds", t / 60, t % 60);
    else if (t < 86400)
        snprintf(buf, len, "%lldh%02lldm", t / 3600, t % 3600 / 60);
    else
        snprintf(buf, len, "%lldd%02lldh", t / 86400, t % 86400 / 3600);
    return buf;
}

char *spw_cli_usd(double usd, char *buf, size_t len)
{
    if (usd > 0 && usd < 0.005)
        snprintf(buf, len, "<$0.01");
    else
        snprintf(buf, len, "$%.2f", usd);
    return buf;
}

char *spw_cli_money(const json_t *o, const char *key, char *buf, size_t len)
{
    double usd;
    if (spw_cli_jnum(o, key, &usd) < 0)
        snprintf(buf, len, "-");
    else
        spw_cli_usd(usd, buf, len);
    return buf;
}

char *spw_cli_time(double ts, char *buf, size_t len)
{
    time_t t = (time_t)ts;
    struct tm tm;
    if (!isfinite(ts) || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "-");
    return buf;
}

char *spw_cli_rel(double ts, double now, char *buf, size_t len)
{
    char d[32];
    double delta = ts - now;
    if (fabs(delta) < 1)
        snprintf(buf, len, "now");
    else if (delta > 0)
        snprintf(buf, len, "in %s", spw_cli_dur(delta, d, sizeof(d)));
    else
        snprintf(buf, len, "%s ago", spw_cli_dur(-delta, d, sizeof(d)));
    return buf;
}

double spw_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- tables ------------------------------------------------------------------ */

struct spw_table {
    size_t ncols;    /* columns */
    char **head;     /* ncols header texts, owned */
    char *right;     /* ncols flags: 1 = right aligned */
    char **cells;    /* nrows * ncols cell texts, owned, row-major */
    size_t nrows;    /* rows added */
    size_t cap;      /* rows allocated */
};

spw_table_t *spw_table_create(const char *cols)
{
    spw_table_t *t = spw_xcalloc(1, sizeof(*t));
    t->ncols = 1;
    for (const char *p = cols; *p; p++)
        t->ncols += *p == '|';
    t->head = spw_xcalloc(t->ncols, sizeof(char *));
    t->right = spw_xcalloc(t->ncols, 1);
    const char *p = cols;
    for (size_t i = 0; i < t->ncols; i++) {
        size_t n = strcspn(p, "|");
        if (*p == '>') {
            t->right[i] = 1;
            p++;
            n--;
        }
        t->head[i] = spw_xmalloc(n + 1);
        memcpy(t->head[i], p, n);
        t->head[i][n] = '\0';
        p += n + (p[n] == '|');
    }
    return t;
}

void spw_table_row(spw_table_t *t, ...)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->cells = spw_xrealloc(t->cells, t->cap * t->ncols * sizeof(char *));
    }
    va_list ap;
    va_start(ap, t);
    for (size_t i = 0; i < t->ncols; i++) {
        const char *s = va_arg(ap, const char *);
        t->cells[t->nrows * t->ncols + i] = spw_xstrdup(s && *s ? s : "-");
    }
    va_end(ap);
    t->nrows++;
}

size_t spw_table_rows(const spw_table_t *t)
{
    return t->nrows;
}

/* Display width of UTF-8 text: code points, not bytes. */
static int text_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void print_line(const spw_table_t *t, FILE *f, int indent, char **cells, const int *w)
{
    fprintf(f, "%*s", indent, "");
    for (size_t i = 0; i < t->ncols; i++) {
        int pad = w[i] - text_width(cells[i]);
        int last = i + 1 == t->ncols;
        if (t->right[i])
            fprintf(f, "%*s%s", pad, "", cells[i]);
        else
            fprintf(f, "%s%*s", cells[i], last ? 0 : pad, "");
        fputs(last ? "\n" : "  ", f);
    }
}

void spw_table_print(const spw_table_t *t, FILE *f, int indent)
{
    int *w = spw_xcalloc(t->ncols, sizeof(int));
    for (size_t i = 0; i < t->ncols; i++) {
        w[i] = text_width(t->head[i]);
        for (size_t r = 0; r < t->nrows; r++) {
            int n = text_width(t->cells[r * t->ncols + i]);
            if (n > w[i])
                w[i] = n;
        }
    }
    print_line(t, f, indent, t->head, w);
    for (size_t r = 0; r < t->nrows; r++)
        print_line(t, f, indent, t->cells + r * t->ncols, w);
    free(w);
}

void spw_table_destroy(spw_table_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ncols; i++)
        free(t->head[i]);
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->head);
    free(t->right);
    free(t->cells);
    free(t);
}
