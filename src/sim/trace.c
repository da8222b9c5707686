/* trace.c: readers for spillway CSV traces and the Alibaba 2023 GPU trace. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "sim/trace.h"
#include "util/csv.h"
#include "util/numparse.h"
#include "util/timeparse.h"

int spw_trace_format_parse(const char *s, spw_trace_format_t *out, spw_error_t *err)
{
    if (strcmp(s, "auto") == 0)
        *out = SPW_TRACE_AUTO;
    else if (strcmp(s, "spillway") == 0 || strcmp(s, "csv") == 0)
        *out = SPW_TRACE_SPILLWAY;
    else if (strcmp(s, "alibaba") == 0 || strcmp(s, "alibaba-2023") == 0)
        *out = SPW_TRACE_ALIBABA;
    else
        return spw_errorf(err, "unknown trace format '%s' (expected auto, spillway or alibaba)", s);
    return 0;
}

const char *spw_trace_format_name(spw_trace_format_t f)
{
    switch (f) {
    case SPW_TRACE_SPILLWAY: return "spillway";
    case SPW_TRACE_ALIBABA: return "alibaba";
    default: return "auto";
    }
}

const char *spw_alibaba_model(const char *name, size_t len, size_t *outlen)
{
    static const struct { const char *from, *to; } alias[] = {
        {"V100M16", "V100"},
        {"V100M32", "V100-32GB"},
    };
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
        if (strlen(alias[i].from) == len && strncasecmp(name, alias[i].from, len) == 0) {
            *outlen = strlen(alias[i].to);
            return alias[i].to;
        }
    *outlen = len;
    return name;
}

/* ---- loader state -------------------------------------------------------- */

/* Interning for one names table: open addressing over name indices. */
typedef struct strtab {
    spw_trace_names_t *names;
    size_t cap;              /* capacity of names->name / names->line */
    uint32_t *slot;          /* index + 1, 0 = empty */
    size_t nslots;           /* power of two */
} strtab_t;

enum { T_TEAM, T_CLASS, T_DATA, T_RES, T_LABELS, T_NTABS };

/* Prefaulting.  The kernel zeroes each page of a fresh array on its first
 * write, which on a virtual machine costs about as much as parsing the rows
 * that fill it (half of a 1M-job load).  For a large trace a second thread
 * asks the kernel to populate the job, runtime and line arrays
 * (MADV_POPULATE_WRITE, a block of rows at a time across all three) from
 * their last row backwards while the parser fills them from the first: each
 * zeroes about half, on its own core, and they meet without waiting on each
 * other's pages (populating a page already there costs nothing).  The data are only
 * ever written by the parser: the thread touches no byte of them. */
#define PREFAULT_MIN_ROWS 65536  /* fewer rows: not worth a thread */
#define PREFAULT_ROWS 8192       /* rows per step of the thread */
typedef struct prefault {
    pthread_t th;
    int started;                 /* th runs (join it before the arrays move) */
    char *a[3];                  /* jobs, runtime_s, line */
    size_t width[3];             /* bytes per row of each */
    size_t rows;                 /* rows the arrays hold */
} prefault_t;

static void *prefault_run(void *arg)
{
#ifdef MADV_POPULATE_WRITE
    const prefault_t *pf = arg;
    const uintptr_t page = 4096;
    for (size_t upto = pf->rows; upto > 0;) {
        size_t r = upto > PREFAULT_ROWS ? upto - PREFAULT_ROWS : 0;
        for (int k = 0; k < 3; k++) {
            uintptr_t lo = (uintptr_t)(pf->a[k] + r * pf->width[k]) & ~(page - 1);
            uintptr_t hi = ((uintptr_t)(pf->a[k] + upto * pf->width[k]) + page - 1) & ~(page - 1);
            if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) < 0)
                return NULL;   /* a kernel without it: the parser faults them in */
        }
        upto = r;
    }
#else
    (void)arg;
#endif
    return NULL;
}

typedef struct loader {
    spw_trace_t *t;
    spw_csv_t csv;
    spw_models_t *models;
    size_t cap;              /* capacity of jobs/runtime/line/attr */
    size_t rows;             /* lines after the header: the first capacity */
    size_t text_left;        /* bytes after the header: the first room for ids */
    size_t idlen, idcap;     /* bytes used / allocated in t->ids */
    long *line;              /* line of each job (for duplicate-id messages) */
    int has_attr;            /* the trace has a governance column: keep t->attr */
    int has_ckpt;            /* the trace has checkpoint_interval_s: keep t->own_ckpt */
    size_t dropped;          /* bytes of a mapped file handed back (drop_read) */
    prefault_t pf;           /* the arrays' prefaulting thread, if any */
    strtab_t tab[T_NTABS];
} loader_t;

static int field_error(loader_t *L, const char *col, const char *want, size_t i,
                       spw_error_t *err)
{
    const char *f = L->csv.field[i];
    int n = (int)(L->csv.field_len[i] > 40 ? 40 : L->csv.field_len[i]);
    return spw_errorf(err, "%s:%ld: column '%s': expected %s, got '%.*s'",
                      L->csv.path, L->csv.line, col, want, n, f);
}

/* Times and durations above this (about 31,700 years) are rejected, so that
 * submit + runtime can never overflow or lose precision to absurdity. */
#define SPW_MAX_TIME_S 1e12

static int get_double(loader_t *L, int idx, const char *col, double lo, double *out,
                      spw_error_t *err)
{
    if (spw_parse_double(L->csv.field[idx], L->csv.field_len[idx], out) < 0 || *out < lo
        || *out > SPW_MAX_TIME_S)
        return field_error(L, col, "a number of seconds from 0 to 1e12", (size_t)idx, err);
    return 0;
}

static int get_int(loader_t *L, int idx, const char *col, int64_t lo, int64_t hi, int64_t *out,
                   spw_error_t *err)
{
    if (spw_parse_i64(L->csv.field[idx], L->csv.field_len[idx], out) == 0 && *out >= lo && *out <= hi)
        return 0;
    char want[64];   /* only on failure: this runs for every row */
    snprintf(want, sizeof(want), "a whole number from %lld to %lld", (long long)lo, (long long)hi);
    return field_error(L, col, want, (size_t)idx, err);
}

/* Moves the first `used` bytes of p (malloc'd or NULL) to room for `bytes`,
 * in huge pages where the kernel has them: fewer page faults and TLB misses
 * over the loader's arrays of many MB (a fault costs more than zeroing
 * its page on a virtual machine).  Callers size them once from the file, so
 * they do not grow by copying; the result is free()d as usual. */
static void *huge_room(void *p, size_t used, size_t bytes)
{
    if (bytes < ((size_t)2 << 20))
        return spw_xrealloc(p, bytes);
    void *q = spw_xmalloc_huge(bytes);
    if (used)
        memcpy(q, p, used);
    free(p);
    return q;
}

/* Waits for the prefaulting thread, if one runs: before the arrays move or
 * are freed. */
static void prefault_join(loader_t *L)
{
    if (L->pf.started)
        pthread_join(L->pf.th, NULL);
    L->pf.started = 0;
}

/* Starts the prefaulting thread over the arrays as first sized, for a large
 * trace (huge_room's 2 MiB-aligned arrays).  Without a thread, nothing is
 * lost but the overlap. */
static void prefault_start(loader_t *L)
{
    spw_trace_t *t = L->t;
    if (L->rows < PREFAULT_MIN_ROWS || L->cap != L->rows)
        return;
    L->pf = (prefault_t){.a = {(char *)t->jobs, (char *)t->runtime_s, (char *)L->line},
                         .width = {sizeof(spw_job_t), sizeof(double), sizeof(long)},
                         .rows = L->cap};
    L->pf.started = pthread_create(&L->pf.th, NULL, prefault_run, &L->pf) == 0;
}

static spw_job_t *new_job(loader_t *L, const char *id, size_t idn)
{
    spw_trace_t *t = L->t;
    if (t->njobs == L->cap) {
        prefault_join(L);
        L->cap = L->cap ? L->cap * 2 : L->rows > 4096 ? L->rows : 4096;
        t->jobs = huge_room(t->jobs, t->njobs * sizeof(spw_job_t), L->cap * sizeof(spw_job_t));
        t->runtime_s = huge_room(t->runtime_s, t->njobs * sizeof(double), L->cap * sizeof(double));
        L->line = huge_room(L->line, t->njobs * sizeof(long), L->cap * sizeof(long));
        if (L->has_attr)
            t->attr = spw_xrealloc(t->attr, L->cap * sizeof(spw_trace_attr_t));
        if (L->has_ckpt)
            t->own_ckpt = spw_xrealloc(t->own_ckpt, L->cap);
        if (!t->njobs)
            prefault_start(L);
    }
    /* The first size is the text after the header, which holds every id
     * and a separator after each: it never grows for a file.  Should it
     * grow, the ids already given to jobs move with it. */
    if (L->idlen + idn + 1 > L->idcap) {
        uintptr_t old = (uintptr_t)t->ids;
        while (L->idlen + idn + 1 > L->idcap)
            L->idcap = L->idcap ? L->idcap * 2 : L->text_left > 65536 ? L->text_left : 65536;
        t->ids = huge_room(t->ids, L->idlen, L->idcap);
        for (size_t i = 0; old && i < t->njobs; i++)
            t->jobs[i].id = t->ids + ((uintptr_t)t->jobs[i].id - old);
    }
    char *jid = t->ids + L->idlen;
    memcpy(jid, id, idn);
    jid[idn] = '\0';
    L->idlen += idn + 1;
    L->line[t->njobs] = L->csv.line;
    if (L->has_attr)
        memset(&t->attr[t->njobs], 0, sizeof(spw_trace_attr_t));
    if (L->has_ckpt)
        t->own_ckpt[t->njobs] = 0;
    spw_job_t *j = &t->jobs[t->njobs++];
    memset(j, 0, sizeof(*j));
    j->id = jid;
    j->deadline_s = NAN;
    return j;
}

/* Hands back the pages of a mapped trace that are read and copied out
 * (every 8 MiB), so the text does not add to the peak beside the jobs. */
static void drop_read(loader_t *L)
{
    const size_t chunk = (size_t)8 << 20;
    spw_csv_t *c = &L->csv;
    if (!c->map_len || c->pos - L->dropped < chunk)
        return;
    size_t upto = c->pos & ~(chunk - 1);   /* the mapping is page-aligned */
    madvise(c->buf + L->dropped, upto - L->dropped, MADV_DONTNEED);
    L->dropped = upto;
}

/* Parses a '|'-separated list of model names into a mask. */
static int models_mask(loader_t *L, const char *s, size_t n, int alibaba, uint64_t *mask,
                       spw_error_t *err)
{
    *mask = 0;
    size_t i = 0;
    while (i < n) {
        size_t k = i;
        while (k < n && s[k] != '|')
            k++;
        size_t a = i, b = k;
        while (a < b && isspace((unsigned char)s[a]))
            a++;
        while (b > a && isspace((unsigned char)s[b - 1]))
            b--;
        if (b > a) {
            size_t len = b - a;
            const char *name = alibaba ? spw_alibaba_model(s + a, len, &len) : s + a;
            spw_error_t e2;
            int m = spw_models_intern(L->models, name, len, &e2);
            if (m < 0)
                return spw_errorf(err, "%s:%ld: %s", L->csv.path, L->csv.line, e2.text);
            *mask |= 1ULL << m;
        }
        i = k + 1;
    }
    return 0;
}

static uint64_t fnv_n(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static void strtab_init(strtab_t *tb, spw_trace_names_t *names)
{
    tb->names = names;
    tb->cap = 8;
    names->name = spw_xmalloc(tb->cap * sizeof(char *));
    names->line = spw_xmalloc(tb->cap * sizeof(long));
    names->name[0] = spw_xstrdup("");
    names->line[0] = 0;
    names->n = 1;
    tb->nslots = 16;
    tb->slot = spw_xcalloc(tb->nslots, sizeof(uint32_t));
}

/* Index of name s[0..n) in the table, added (first seen on `line`) if new;
 * *added says which.  The empty name is 0. */
static uint32_t intern(strtab_t *tb, const char *s, size_t n, long line, int *added)
{
    *added = 0;
    n = strnlen(s, n); /* a NUL byte in a field ends the name, as it does when printed */
    if (n == 0)
        return 0;
    spw_trace_names_t *nm = tb->names;
    size_t i = fnv_n(s, n) & (tb->nslots - 1);
    for (; tb->slot[i]; i = (i + 1) & (tb->nslots - 1)) {
        const char *o = nm->name[tb->slot[i]];
        if (strncmp(o, s, n) == 0 && o[n] == '\0')
            return tb->slot[i];
    }
    if (nm->n == tb->cap) {
        tb->cap *= 2;
        nm->name = spw_xrealloc(nm->name, tb->cap * sizeof(char *));
        nm->line = spw_xrealloc(nm->line, tb->cap * sizeof(long));
    }
    char *name = spw_xmalloc(n + 1);
    memcpy(name, s, n);
    name[n] = '\0';
    uint32_t idx = (uint32_t)nm->n++;
    nm->name[idx] = name;
    nm->line[idx] = line;
    tb->slot[i] = idx;
    *added = 1;
    if (nm->n * 2 > tb->nslots) {
        free(tb->slot);
        tb->nslots *= 2;
        tb->slot = spw_xcalloc(tb->nslots, sizeof(uint32_t));
        for (uint32_t k = 1; k < nm->n; k++) {
            size_t h = fnv_n(nm->name[k], strlen(nm->name[k])) & (tb->nslots - 1);
            while (tb->slot[h])
                h = (h + 1) & (tb->nslots - 1);
            tb->slot[h] = k;
        }
    }
    return idx;
}

/* A field with surrounding spaces trimmed. */
static void trimmed(const spw_csv_t *c, int idx, const char **s, size_t *n)
{
    const char *f = c->field[idx];
    size_t len = c->field_len[idx];
    while (len && isspace((unsigned char)f[len - 1]))
        len--;
    while (len && isspace((unsigned char)*f))
        f++, len--;
    *s = f;
    *n = len;
}

/* Checks a label set "k=v;k2=v2": every non-empty item has a key and '='. */
static int labels_valid(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = i;
        while (k < n && s[k] != ';')
            k++;
        size_t a = i, b = k;
        while (a < b && isspace((unsigned char)s[a]))
            a++;
        if (a < b) {
            const char *eq = memchr(s + a, '=', b - a);
            if (!eq || eq == s + a)
                return 0;
        }
        i = k + 1;
    }
    return 1;
}

/* ---- spillway CSV -------------------------------------------------------- */

enum { C_ID, C_SUBMIT, C_GPUS, C_RUNTIME, C_GPU, C_TEAM, C_PRIORITY, C_DEADLINE, C_EST,
       C_CLASS, C_DATA, C_RES, C_LABELS, C_MAXRT, C_SPOT, C_SPOT_POLICY, C_CKPT, C_PER_NODE,
       C_NCOLS };
static const char *const spw_cols[C_NCOLS] = {
    "id", "submit_s", "gpus", "runtime_s", "gpu", "team", "priority", "deadline_s", "est_runtime_s",
    "class", "data", "residency", "labels", "max_runtime_s", "spot", "spot_policy",
    "checkpoint_interval_s", "gpus_per_node",
};

/* The trimmed field idx of the current row as a C string in buf (cut at
 * len - 1 bytes: enough for every word these columns take). */
static const char *cell(loader_t *L, int idx, char *buf, size_t len)
{
    const char *f;
    size_t n;
    trimmed(&L->csv, idx, &f, &n);
    if (n >= len)
        n = len - 1;
    memcpy(buf, f, n);
    buf[n] = '\0';
    return buf;
}

/* The spot columns of one row: spot, spot_policy, checkpoint_interval_s;
 * empty cells leave the job's defaults. */
static int spot_cells(loader_t *L, const int *col, spw_job_t *j, spw_error_t *err)
{
    char buf[64];
    spw_error_t e2;
    if (col[C_SPOT] >= 0 && *cell(L, col[C_SPOT], buf, sizeof(buf))) {
        spw_spot_mode_t m;
        if (spw_spot_mode_parse(buf, &m, &e2) < 0)
            return field_error(L, "spot", "auto, always or never", (size_t)col[C_SPOT], err);
        j->spot_mode = (uint8_t)m;
    }
    if (col[C_SPOT_POLICY] >= 0 && *cell(L, col[C_SPOT_POLICY], buf, sizeof(buf))) {
        spw_spot_policy_t p;
        if (spw_spot_policy_parse(buf, &p, &e2) < 0)
            return field_error(L, "spot_policy", "ondemand, greedy or uniform-progress",
                               (size_t)col[C_SPOT_POLICY], err);
        j->spot_policy = (uint8_t)(p + 1);
    }
    if (col[C_CKPT] >= 0 && *cell(L, col[C_CKPT], buf, sizeof(buf))) {
        double v;
        if (strcmp(buf, "continuous") == 0)
            v = SPW_CKPT_CONTINUOUS;
        else if (spw_parse_duration(buf, &v) < 0 || !(v >= 0) || v > SPW_MAX_TIME_S)
            return field_error(L, "checkpoint_interval_s",
                               "seconds or a duration like 30m, 0 (no checkpoints: restart from "
                               "scratch) or continuous", (size_t)col[C_CKPT], err);
        j->checkpoint_interval_s = v;
        L->t->own_ckpt[L->t->njobs - 1] = 1;
    }
    return 0;
}

/* Governance columns and the tables their names go to. */
static const struct { int col, tab; } spw_gov_cols[] = {
    {C_TEAM, T_TEAM}, {C_CLASS, T_CLASS}, {C_DATA, T_DATA}, {C_RES, T_RES}, {C_LABELS, T_LABELS},
};
#define N_GOV_COLS (sizeof(spw_gov_cols) / sizeof(spw_gov_cols[0]))

static int load_spillway(loader_t *L, spw_error_t *err)
{
    spw_csv_t *c = &L->csv;
    int col[C_NCOLS];
    for (int k = 0; k < C_NCOLS; k++)
        col[k] = -1;
    size_t ncol = c->nfields;
    for (size_t i = 0; i < ncol; i++) {
        const char *f = c->field[i];
        size_t n = c->field_len[i];
        while (n && isspace((unsigned char)f[n - 1]))
            n--;
        while (n && isspace((unsigned char)*f))
            f++, n--;
        int found = -1;
        for (int k = 0; k < C_NCOLS; k++)
            if (strlen(spw_cols[k]) == n && memcmp(spw_cols[k], f, n) == 0)
                found = k;
        if (found < 0)
            return spw_errorf(err,
                              "%s:%ld: unknown column '%.*s' (known: id, submit_s, gpus, "
                              "runtime_s, gpu, team, priority, deadline_s, est_runtime_s, "
                              "class, data, residency, labels, max_runtime_s, spot, "
                              "spot_policy, checkpoint_interval_s)",
                              c->path, c->line, (int)(n > 40 ? 40 : n), f);
        if (col[found] >= 0)
            return spw_errorf(err, "%s:%ld: column '%s' appears twice", c->path, c->line,
                              spw_cols[found]);
        col[found] = (int)i;
    }
    for (int k = 0; k <= C_RUNTIME; k++)
        if (col[k] < 0)
            return spw_errorf(err,
                              "%s:%ld: missing column '%s' (required: id, submit_s, gpus, runtime_s)",
                              c->path, c->line, spw_cols[k]);
    for (size_t k = 0; k < N_GOV_COLS; k++)
        if (col[spw_gov_cols[k].col] >= 0)
            L->has_attr = 1;
    L->has_ckpt = col[C_CKPT] >= 0;
    int r;
    while ((r = spw_csv_next(c, err)) == 1) {
        if (c->nfields != ncol)
            return spw_errorf(err, "%s:%ld: expected %zu fields like the header, got %zu",
                              c->path, c->line, ncol, c->nfields);
        if (c->field_len[col[C_ID]] == 0)
            return spw_errorf(err, "%s:%ld: column 'id' is empty", c->path, c->line);
        L->t->rows++;
        spw_job_t *j = new_job(L, c->field[col[C_ID]], c->field_len[col[C_ID]]);
        double rt, v;
        int64_t iv;
        if (get_double(L, col[C_SUBMIT], "submit_s", 0, &j->submit_s, err) < 0
            || get_int(L, col[C_GPUS], "gpus", 1, 65536, &iv, err) < 0
            || get_double(L, col[C_RUNTIME], "runtime_s", 0, &rt, err) < 0)
            return -1;
        j->gpus = (uint32_t)iv;
        j->est_runtime_s = rt;
        L->t->runtime_s[L->t->njobs - 1] = rt;
        if (col[C_GPU] >= 0
            && models_mask(L, c->field[col[C_GPU]], c->field_len[col[C_GPU]], 0, &j->gpu_mask, err) < 0)
            return -1;
        if (L->has_attr) {
            spw_trace_attr_t *a = &L->t->attr[L->t->njobs - 1];
            uint32_t *dst[T_NTABS] = {&a->team, &a->jclass, &a->data, &a->residency, &a->labels};
            for (size_t k = 0; k < N_GOV_COLS; k++) {
                int ci = col[spw_gov_cols[k].col], tab = spw_gov_cols[k].tab;
                if (ci < 0)
                    continue;
                const char *f;
                size_t n;
                int added;
                trimmed(c, ci, &f, &n);
                *dst[tab] = intern(&L->tab[tab], f, n, c->line, &added);
                if (added && tab == T_LABELS && !labels_valid(f, n))
                    return field_error(L, "labels", "key=value pairs separated by ';'",
                                       (size_t)ci, err);
            }
        }
        if (col[C_PER_NODE] >= 0 && c->field_len[col[C_PER_NODE]]) {
            if (get_int(L, col[C_PER_NODE], "gpus_per_node", 1, 65536, &iv, err) < 0)
                return -1;
            j->gpus_per_node = (uint32_t)iv;
        }
        if (col[C_MAXRT] >= 0 && c->field_len[col[C_MAXRT]]) {
            if (get_double(L, col[C_MAXRT], "max_runtime_s", 0, &v, err) < 0)
                return -1;
            j->max_runtime_s = v;
        }
        if (col[C_PRIORITY] >= 0 && c->field_len[col[C_PRIORITY]]) {
            if (get_int(L, col[C_PRIORITY], "priority", -1000000, 1000000, &iv, err) < 0)
                return -1;
            j->priority = (int32_t)iv;
        }
        if (col[C_DEADLINE] >= 0 && c->field_len[col[C_DEADLINE]]) {
            if (get_double(L, col[C_DEADLINE], "deadline_s", 0, &v, err) < 0)
                return -1;
            j->deadline_s = v;
        }
        if (col[C_EST] >= 0 && c->field_len[col[C_EST]]) {
            if (get_double(L, col[C_EST], "est_runtime_s", 0, &v, err) < 0)
                return -1;
            j->est_runtime_s = v;
        }
        if (spot_cells(L, col, j, err) < 0)
            return -1;
        drop_read(L);
    }
    return r;
}

/* ---- Alibaba 2023 -------------------------------------------------------- */

static int load_alibaba(loader_t *L, spw_error_t *err)
{
    static const char *const need[] = {"name", "num_gpu", "gpu_milli", "gpu_spec",
                                       "creation_time", "deletion_time", "scheduled_time"};
    enum { A_NAME, A_NUM, A_MILLI, A_SPEC, A_CREATE, A_DELETE, A_SCHED, A_N };
    spw_csv_t *c = &L->csv;
    int col[A_N];
    for (int k = 0; k < A_N; k++) {
        col[k] = spw_csv_field_index(c, need[k]);
        if (col[k] < 0)
            return spw_errorf(err, "%s:%ld: missing column '%s' of the Alibaba pod list", c->path,
                              c->line, need[k]);
    }
    size_t ncol = c->nfields;
    int r;
    while ((r = spw_csv_next(c, err)) == 1) {
        if (c->nfields != ncol)
            return spw_errorf(err, "%s:%ld: expected %zu fields like the header, got %zu",
                              c->path, c->line, ncol, c->nfields);
        L->t->rows++;
        int64_t ngpu, milli = 1000;
        if (get_int(L, col[A_NUM], "num_gpu", 0, 65536, &ngpu, err) < 0)
            return -1;
        if (c->field_len[col[A_MILLI]]
            && get_int(L, col[A_MILLI], "gpu_milli", 0, 1000000, &milli, err) < 0)
            return -1;
        if (ngpu == 0) {
            L->t->skipped_no_gpu++;
            continue;
        }
        if (c->field_len[col[A_SCHED]] == 0) {
            L->t->skipped_unscheduled++;
            continue;
        }
        double created, deleted, sched;
        if (get_double(L, col[A_CREATE], "creation_time", 0, &created, err) < 0
            || get_double(L, col[A_DELETE], "deletion_time", 0, &deleted, err) < 0
            || get_double(L, col[A_SCHED], "scheduled_time", 0, &sched, err) < 0)
            return -1;
        if (deleted < sched)
            return spw_errorf(err, "%s:%ld: deletion_time %.0f is before scheduled_time %.0f",
                              c->path, c->line, deleted, sched);
        if (c->field_len[col[A_NAME]] == 0)
            return spw_errorf(err, "%s:%ld: column 'name' is empty", c->path, c->line);
        spw_job_t *j = new_job(L, c->field[col[A_NAME]], c->field_len[col[A_NAME]]);
        if (milli < 1000)
            L->t->fractional_gpu++;
        j->submit_s = created;
        j->gpus = (uint32_t)ngpu;
        j->est_runtime_s = deleted - sched;
        L->t->runtime_s[L->t->njobs - 1] = deleted - sched;
        if (models_mask(L, c->field[col[A_SPEC]], c->field_len[col[A_SPEC]], 1, &j->gpu_mask, err) < 0)
            return -1;
    }
    return r;
}

/* ---- ordering ---------------------------------------------------------- */

/* Natural order of ids: runs of digits compare as numbers ("job-9" < "job-10"). */
static int id_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            size_t na = 0, nb = 0;
            while (isdigit((unsigned char)a[na]))
                na++;
            while (isdigit((unsigned char)b[nb]))
                nb++;
            if (na != nb)
                return na < nb ? -1 : 1;
            int c = memcmp(a, b, na);
            if (c)
                return c;
            a += na;
            b += nb;
        } else {
            if (*a != *b)
                return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return *a ? 1 : *b ? -1 : 0;
}

typedef struct sortrec {
    double submit;
    const char *id;
    size_t row;
} sortrec_t;

static int sortrec_cmp(const void *pa, const void *pb)
{
    const sortrec_t *a = pa, *b = pb;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    int c = id_cmp(a->id, b->id);
    if (c)
        return c;
    return a->row < b->row ? -1 : a->row > b->row;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* Sorts by (submit, id), sets order, and rejects duplicate ids. */
static int finish(loader_t *L, spw_error_t *err)
{
    spw_trace_t *t = L->t;
    size_t n = t->njobs;
    /* Ties out of id order only need sorting; a submit time that goes
     * backwards is also worth a warning, so keep looking for the first. */
    int sorted = 1;
    for (size_t i = 1; i < n && !t->first_unsorted_line; i++) {
        const spw_job_t *a = &t->jobs[i - 1], *b = &t->jobs[i];
        if (b->submit_s < a->submit_s) {
            t->first_unsorted_line = L->line[i];
            sorted = 0;
        } else if (sorted && b->submit_s == a->submit_s && id_cmp(a->id, b->id) > 0) {
            sorted = 0;
        }
    }
    if (!sorted) {
        sortrec_t *r = spw_xmalloc(n * sizeof(*r));
        for (size_t i = 0; i < n; i++)
            r[i] = (sortrec_t){.submit = t->jobs[i].submit_s, .id = t->jobs[i].id, .row = i};
        qsort(r, n, sizeof(*r), sortrec_cmp);
        spw_job_t *jobs = spw_xmalloc(n * sizeof(spw_job_t));
        double *rt = spw_xmalloc(n * sizeof(double));
        long *line = spw_xmalloc(n * sizeof(long));
        spw_trace_attr_t *attr = t->attr ? spw_xmalloc(n * sizeof(*attr)) : NULL;
        uint8_t *own = t->own_ckpt ? spw_xmalloc(n) : NULL;
        for (size_t i = 0; i < n; i++) {
            jobs[i] = t->jobs[r[i].row];
            rt[i] = t->runtime_s[r[i].row];
            line[i] = L->line[r[i].row];
            if (attr)
                attr[i] = t->attr[r[i].row];
            if (own)
                own[i] = t->own_ckpt[r[i].row];
        }
        free(r);
        free(t->attr);
        t->attr = attr;
        free(t->own_ckpt);
        t->own_ckpt = own;
        free(t->jobs);
        free(t->runtime_s);
        free(L->line);
        t->jobs = jobs;
        t->runtime_s = rt;
        L->line = line;
    }
    for (size_t i = 0; i < n; i++)
        t->jobs[i].order = (uint32_t)i;

    /* Duplicate ids: open addressing; each slot holds the id's hash beside
     * its job's index (high and low 32 bits), so a probe reads one slot
     * and compares ids only when the hashes match. */
    size_t cap = 16;
    while (cap < n * 2)
        cap *= 2;
    uint64_t *slot = huge_room(NULL, 0, cap * sizeof(uint64_t));
    memset(slot, 0, cap * sizeof(uint64_t));
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        uint64_t h = fnv(t->jobs[i].id), tag = h >> 32 << 32;
        size_t s = h & (cap - 1);
        for (; slot[s]; s = (s + 1) & (cap - 1)) {
            if ((slot[s] & ~(uint64_t)UINT32_MAX) != tag)
                continue;
            size_t k = (size_t)(slot[s] & UINT32_MAX) - 1;
            if (strcmp(t->jobs[k].id, t->jobs[i].id) == 0) {
                long l1 = L->line[k], l2 = L->line[i];
                rc = spw_errorf(err, "%s:%ld: duplicate job id '%.60s' (first on line %ld)",
                                t->name, l1 > l2 ? l1 : l2, t->jobs[i].id, l1 < l2 ? l1 : l2);
                break;
            }
        }
        slot[s] = tag | (uint64_t)(i + 1);
    }
    free(slot);
    return rc;
}

static void loader_free(loader_t *L)
{
    free(L->line);
    for (int k = 0; k < T_NTABS; k++)
        free(L->tab[k].slot);
    spw_csv_close(&L->csv);
}

static int load(spw_trace_t *t, loader_t *L, spw_trace_format_t fmt, spw_error_t *err)
{
    spw_csv_t *c = &L->csv;
    int models_before = L->models->n;   /* a failed load leaves the table as it was */
    int r = spw_csv_next(c, err);
    if (r < 0)
        goto error;
    if (r == 0) {
        spw_errorf(err, "%s: empty file: expected a header line", c->path);
        goto error;
    }
    if (fmt == SPW_TRACE_AUTO) {
        if (spw_csv_field_index(c, "num_gpu") >= 0 && spw_csv_field_index(c, "creation_time") >= 0)
            fmt = SPW_TRACE_ALIBABA;
        else if (spw_csv_field_index(c, "submit_s") >= 0)
            fmt = SPW_TRACE_SPILLWAY;
        else {
            spw_errorf(err,
                       "%s:%ld: cannot tell the trace format from the header (a spillway trace "
                       "has id,submit_s,gpus,runtime_s; use --format)",
                       c->path, c->line);
            goto error;
        }
    }
    t->format = fmt;
    t->name = spw_xstrdup(c->path);
    /* One quick pass for the rows (memchr): the arrays are sized once, so
     * they are not copied as they grow; pages never written cost nothing. */
    L->rows = 1;
    L->text_left = c->len - c->pos + 1;
    for (const char *p = c->buf + c->pos, *end = c->buf + c->len;
         (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        L->rows++;
    strtab_init(&L->tab[T_TEAM], &t->teams);
    strtab_init(&L->tab[T_CLASS], &t->classes);
    strtab_init(&L->tab[T_DATA], &t->datasets);
    strtab_init(&L->tab[T_RES], &t->residencies);
    strtab_init(&L->tab[T_LABELS], &t->labels);
    r = fmt == SPW_TRACE_ALIBABA ? load_alibaba(L, err) : load_spillway(L, err);
    prefault_join(L);
    if (r < 0)
        goto error;
    spw_csv_close(c);     /* the text is copied out: its memory goes before sorting */
    if (finish(L, err) < 0)
        goto error;
    loader_free(L);
    return 0;
error:
    loader_free(L);
    spw_trace_free(t);
    spw_models_truncate(L->models, models_before);
    return -1;
}

int spw_trace_load(spw_trace_t *t, const char *path, spw_trace_format_t fmt,
                   spw_models_t *models, spw_error_t *err)
{
    memset(t, 0, sizeof(*t));
    loader_t L = {.t = t, .models = models};
    if (spw_csv_open_mapped(&L.csv, path, err) < 0)
        return -1;
    return load(t, &L, fmt, err);
}

int spw_trace_load_mem(spw_trace_t *t, const char *name, const char *data, size_t len,
                       spw_trace_format_t fmt, spw_models_t *models, spw_error_t *err)
{
    memset(t, 0, sizeof(*t));
    loader_t L = {.t = t, .models = models};
    if (spw_csv_open_mem(&L.csv, name, data, len, err) < 0)
        return -1;
    return load(t, &L, fmt, err);
}

void spw_trace_free(spw_trace_t *t)
{
    if (!t)
        return;
    spw_jobs_clear(t->jobs, t->njobs);
    free(t->jobs);
    free(t->runtime_s);
    free(t->ids);
    free(t->name);
    free(t->attr);
    free(t->own_ckpt);
    spw_trace_names_t *tabs[] = {&t->teams, &t->classes, &t->datasets, &t->residencies, &t->labels};
    for (size_t k = 0; k < sizeof(tabs) / sizeof(tabs[0]); k++) {
        for (size_t i = 0; i < tabs[k]->n; i++)
            free(tabs[k]->name[i]);
        free(tabs[k]->name);
        free(tabs[k]->line);
    }
    memset(t, 0, sizeof(*t));
}

/* ---- binding to a config's governance ------------------------------------ */

/* Appends name to a ", "-separated list, ending it with ", ..." when full. */
static void list_add(char *buf, size_t len, const char *name)
{
    size_t used = strlen(buf);
    if (used >= 5 && strcmp(buf + used - 5, ", ...") == 0)
        return;
    const char *sep = used ? ", " : "";
    if (used + strlen(sep) + strlen(name) + 6 < len)
        snprintf(buf + used, len - used, "%s%s", sep, name);
    else if (used + 6 < len)
        snprintf(buf + used, len - used, "%s...", sep);
}

/* Maps every name of table nm through lookup(g, name) + 1 (0 = unknown). */
static uint32_t *map_names(const spw_trace_names_t *nm, const spw_gov_t *g,
                           int (*lookup)(const spw_gov_t *, const char *))
{
    uint32_t *map = spw_xcalloc(nm->n ? nm->n : 1, sizeof(uint32_t));
    for (size_t i = 1; i < nm->n; i++)
        map[i] = (uint32_t)(lookup(g, nm->name[i]) + 1);
    return map;
}

/* The first name of nm that map leaves unknown, or 0. */
static size_t first_unknown(const spw_trace_names_t *nm, const uint32_t *map)
{
    size_t best = 0;
    for (size_t i = 1; i < nm->n; i++)
        if (!map[i] && (!best || nm->line[i] < nm->line[best]))
            best = i;
    return best;
}

/* Label bits of the config's labels named in set "k=v; k2 = v2". */
static uint64_t label_bits(const spw_gov_t *g, const char *s)
{
    uint64_t bits = 0;
    char item[256];
    while (*s) {
        size_t k = strcspn(s, ";");
        const char *a = s, *b = s + k;
        s = *b ? b + 1 : b;
        const char *eq = memchr(a, '=', (size_t)(b - a));
        if (!eq)
            continue;
        /* Trim the key and the value: "env = prod" is env=prod. */
        const char *ka = a, *kb = eq, *va = eq + 1, *vb = b;
        while (ka < kb && isspace((unsigned char)*ka))
            ka++;
        while (kb > ka && isspace((unsigned char)kb[-1]))
            kb--;
        while (va < vb && isspace((unsigned char)*va))
            va++;
        while (vb > va && isspace((unsigned char)vb[-1]))
            vb--;
        int n = snprintf(item, sizeof(item), "%.*s=%.*s", (int)(kb - ka), ka, (int)(vb - va), va);
        if (n < 0 || (size_t)n >= sizeof(item))
            continue;
        int idx = spw_gov_label(g, item);
        if (idx >= 0 && idx < 64)
            bits |= 1ULL << idx;
    }
    return bits;
}

int spw_trace_bind(spw_trace_t *t, const spw_gov_t *g, double checkpoint_s,
                   spw_trace_bind_info_t *info, spw_error_t *err)
{
    spw_trace_bind_info_t dummy;
    if (!info)
        info = &dummy;
    memset(info, 0, sizeof(*info));
    uint32_t *team = map_names(&t->teams, g, spw_gov_team);
    uint32_t *cls = map_names(&t->classes, g, spw_gov_class);
    uint32_t *data = map_names(&t->datasets, g, spw_gov_dataset);
    uint32_t *res = map_names(&t->residencies, g, spw_gov_residency);
    uint64_t *lab = spw_xcalloc(t->labels.n ? t->labels.n : 1, sizeof(uint64_t));
    size_t nseen_teams = t->teams.n ? t->teams.n : 1;
    uint8_t *seen = spw_xcalloc(nseen_teams + (t->classes.n ? t->classes.n : 1), 1);
    int rc = 0;
    size_t bad;
    char known[120] = "";
    if ((bad = first_unknown(&t->datasets, data))) {
        for (size_t i = 0; i < g->ndatasets; i++)
            list_add(known, sizeof(known), g->datasets[i].name);
        rc = spw_errorf(err,
                        "%s: dataset '%.60s' (first at line %ld) is not in the config's data: "
                        "datasets (known: %s)",
                        t->name ? t->name : "trace", t->datasets.name[bad], t->datasets.line[bad],
                        known[0] ? known : "none");
        goto out;
    }
    if ((bad = first_unknown(&t->residencies, res))) {
        for (size_t i = 0; i < g->nresidencies; i++)
            list_add(known, sizeof(known), g->residencies[i].name);
        rc = spw_errorf(err,
                        "%s: residency '%.60s' (first at line %ld) is not in the config's "
                        "residency: section (known: %s)",
                        t->name ? t->name : "trace", t->residencies.name[bad],
                        t->residencies.line[bad], known[0] ? known : "none");
        goto out;
    }
    for (size_t i = 1; i < t->labels.n; i++)
        lab[i] = label_bits(g, t->labels.name[i]);
    uint8_t *team_seen = seen, *class_seen = seen + nseen_teams;
    for (size_t i = 0; i < t->njobs; i++) {
        spw_job_t *j = &t->jobs[i];
        if (!t->own_ckpt || !t->own_ckpt[i])
            j->checkpoint_interval_s = checkpoint_s;
        if (!t->attr) {
            j->team = j->jclass = j->data = j->residency = 0;
            j->labels = 0;
            continue;
        }
        const spw_trace_attr_t *a = &t->attr[i];
        j->team = team[a->team];
        j->jclass = cls[a->jclass];
        j->data = data[a->data];
        j->residency = res[a->residency];
        j->labels = lab[a->labels];
        if (a->team && !j->team && g->nteams) {
            info->jobs_unknown_team++;
            if (!team_seen[a->team] && (team_seen[a->team] = 1))
                list_add(info->unknown_teams, sizeof(info->unknown_teams),
                         t->teams.name[a->team]);
        }
        if (a->jclass && !j->jclass && g->nclasses) {
            info->jobs_unknown_class++;
            if (!class_seen[a->jclass] && (class_seen[a->jclass] = 1))
                list_add(info->unknown_classes, sizeof(info->unknown_classes),
                         t->classes.name[a->jclass]);
        }
    }
out:
    free(team);
    free(cls);
    free(data);
    free(res);
    free(lab);
    free(seen);
    return rc;
}

/* ---- on-prem failure lists ------------------------------------------------ */

/* A time cell of a failure list: seconds or a duration, 0 .. 1e12. */
static int failure_time(spw_csv_t *c, int idx, const char *col, double *out, spw_error_t *err)
{
    char buf[64];
    const char *f;
    size_t n;
    trimmed(c, idx, &f, &n);
    int len = (int)(n > 40 ? 40 : n);
    if (n >= sizeof(buf) || (memcpy(buf, f, n), buf[n] = '\0', spw_parse_duration(buf, out) < 0))
        return spw_errorf(err, "%s:%ld: column '%s': expected trace seconds or a duration "
                               "like 36h, got '%.*s'", c->path, c->line, col, len, f);
    if (*out < 0)
        return spw_errorf(err, "%s:%ld: column '%s' is %.*s: times are trace seconds from 0",
                          c->path, c->line, col, len, f);
    if (*out > SPW_MAX_TIME_S)
        return spw_errorf(err, "%s:%ld: column '%s' is %.*s: more than 1e12 seconds", c->path,
                          c->line, col, len, f);
    return 0;
}

/* Failure k of a list and its line, for the overlap check. */
typedef struct failrec {
    const spw_sim_failure_t *f;
    long line;
} failrec_t;

static int failrec_cmp(const void *pa, const void *pb)
{
    const spw_sim_failure_t *a = ((const failrec_t *)pa)->f, *b = ((const failrec_t *)pb)->f;
    if (a->pool != b->pool)
        return a->pool < b->pool ? -1 : 1;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->down_s != b->down_s)
        return a->down_s < b->down_s ? -1 : 1;
    return ((const failrec_t *)pa)->line < ((const failrec_t *)pb)->line ? -1 : 1;
}

static int failures_read(spw_csv_t *c, const spw_fleet_t *fleet, spw_sim_failure_t **out,
                         size_t *nout, spw_error_t *err)
{
    spw_sim_failure_t *list = NULL;
    long *lines = NULL;
    size_t n = 0, cap = 0;
    int r = spw_csv_next(c, err), cn, cd, cu;
    if (r <= 0) {
        if (r == 0)
            spw_errorf(err, "%s: empty file: expected a header line node,down_s,up_s", c->path);
        return -1;
    }
    cn = spw_csv_field_index(c, "node");
    cd = spw_csv_field_index(c, "down_s");
    cu = spw_csv_field_index(c, "up_s");
    if (cn < 0 || cd < 0)
        return spw_errorf(err, "%s:%ld: a failure list needs the header node,down_s,up_s "
                               "(missing '%s')", c->path, c->line, cn < 0 ? "node" : "down_s");
    size_t ncol = c->nfields;
    while ((r = spw_csv_next(c, err)) == 1) {
        if (c->nfields != ncol) {
            spw_errorf(err, "%s:%ld: expected %zu fields like the header, got %zu", c->path,
                       c->line, ncol, c->nfields);
            goto error;
        }
        const char *f;
        size_t len;
        trimmed(c, cn, &f, &len);
        int shown = (int)(len > 40 ? 40 : len);
        const char *slash = len ? memrchr(f, '/', len) : NULL;
        int64_t idx;
        if (!slash || slash == f
            || spw_parse_i64(slash + 1, len - (size_t)(slash + 1 - f), &idx) < 0) {
            spw_errorf(err, "%s:%ld: column 'node': expected POOL/INDEX such as dc1/0 (nodes "
                            "count from 0), got '%.*s'", c->path, c->line, shown, f);
            goto error;
        }
        size_t plen = (size_t)(slash - f), p = 0;
        while (p < fleet->npools
               && !(strlen(fleet->pools[p].name) == plen
                    && memcmp(fleet->pools[p].name, f, plen) == 0))
            p++;
        if (p == fleet->npools) {
            char known[120] = "";
            for (size_t k = 0; k < fleet->npools; k++)
                list_add(known, sizeof(known), fleet->pools[k].name);
            spw_errorf(err, "%s:%ld: column 'node': no on-prem pool is named '%.*s' (pools: %s)",
                       c->path, c->line, (int)(plen > 40 ? 40 : plen), f,
                       fleet->npools ? known : "none");
            goto error;
        }
        const spw_pool_spec_t *pool = &fleet->pools[p];
        if (idx < 0 || idx >= (int64_t)pool->nnodes) {
            spw_errorf(err, "%s:%ld: column 'node': pool '%s' has nodes %s/0 to %s/%u; got "
                            "'%.*s'", c->path, c->line, pool->name, pool->name, pool->name,
                       pool->nnodes ? pool->nnodes - 1 : 0, shown, f);
            goto error;
        }
        double down, up = INFINITY;
        if (failure_time(c, cd, "down_s", &down, err) < 0)
            goto error;
        if (cu >= 0 && (trimmed(c, cu, &f, &len), len)) {
            if (failure_time(c, cu, "up_s", &up, err) < 0)
                goto error;
            if (!(up > down)) {
                spw_errorf(err, "%s:%ld: up_s %g is not after down_s %g: write when the node "
                                "came back, or leave up_s empty if it never did",
                           c->path, c->line, up, down);
                goto error;
            }
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            list = spw_xrealloc(list, cap * sizeof(*list));
            lines = spw_xrealloc(lines, cap * sizeof(*lines));
        }
        list[n] = (spw_sim_failure_t){.pool = p, .node = (uint32_t)idx, .down_s = down,
                                      .up_s = up};
        lines[n++] = c->line;
    }
    if (r < 0)
        goto error;
    /* Two failures of one node that overlap would leave it unclear when it
     * is up again; the list must say it once. */
    failrec_t *rec = spw_xmalloc((n ? n : 1) * sizeof(*rec));
    for (size_t i = 0; i < n; i++)
        rec[i] = (failrec_t){.f = &list[i], .line = lines[i]};
    qsort(rec, n, sizeof(*rec), failrec_cmp);
    for (size_t i = 1; i < n; i++) {
        const spw_sim_failure_t *a = rec[i - 1].f, *b = rec[i].f;
        if (a->pool == b->pool && a->node == b->node && b->down_s < a->up_s) {
            long l1 = rec[i - 1].line, l2 = rec[i].line;
            spw_errorf(err, "%s:%ld: node %s/%u is down twice at once (lines %ld and %ld "
                            "overlap); merge the two rows", c->path, l1 > l2 ? l1 : l2,
                       fleet->pools[a->pool].name, a->node, l1 < l2 ? l1 : l2,
                       l1 > l2 ? l1 : l2);
            free(rec);
            goto error;
        }
    }
    free(rec);
    free(lines);
    *out = list;
    *nout = n;
    return 0;
error:
    free(list);
    free(lines);
    return -1;
}

int spw_failures_load(const char *path, const spw_fleet_t *fleet, spw_sim_failure_t **out,
                      size_t *n, spw_error_t *err)
{
    spw_csv_t c;
    if (spw_csv_open(&c, path, err) < 0)
        return -1;
    int rc = failures_read(&c, fleet, out, n, err);
    spw_csv_close(&c);
    return rc;
}

int spw_failures_load_mem(const char *name, const char *data, size_t len,
                          const spw_fleet_t *fleet, spw_sim_failure_t **out, size_t *n,
                          spw_error_t *err)
{
    spw_csv_t c;
    if (spw_csv_open_mem(&c, name, data, len, err) < 0)
        return -1;
    int rc = failures_read(&c, fleet, out, n, err);
    spw_csv_close(&c);
    return rc;
}
