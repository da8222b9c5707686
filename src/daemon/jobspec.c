/* jobspec.c: parses a submitted job spec, YAML (through util/yaml) or JSON
 * (through jansson), into one validated spw_jobspec_t.  JSON is first turned
 * into the same node tree util/yaml builds, with each value's line and
 * column recovered from the text, so both formats share one validator and
 * report errors the same way. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/model.h"
#include "core/spot.h"
#include "daemon/jobspec.h"
#include "util/numparse.h"
#include "util/yaml.h"

#define MAX_NAME_BYTES 256     /* name */
#define MAX_TEAM_BYTES 64      /* team */
#define MAX_MODEL_BYTES 32     /* one GPU model name */
#define MAX_ENV_KEY_BYTES 256  /* one env key */
#define MAX_PATH_BYTES 4096    /* workdir */
#define MAX_LABEL_BYTES 128    /* one label key or value */
#define MAX_JSON_DEPTH 32      /* nesting accepted in a JSON spec */

/* ---- small helpers ------------------------------------------------------ */

/* What one parse needs to report errors. */
typedef struct pctx {
    const char *name;  /* document name for messages */
    spw_error_t *err;  /* where messages go (may be NULL) */
} pctx_t;

/* "NAME:LINE:COL: field 'F': MESSAGE", or "NAME: ..." when n has no
 * position.  Returns -1. */
static __attribute__((format(printf, 4, 5)))
int field_error(const pctx_t *c, const spw_ynode_t *n, const char *field,
                const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n && n->line > 0)
        return spw_errorf(c->err, "%s:%d:%d: field '%s': %s", c->name,
                          n->line, n->col, field, msg);
    return spw_errorf(c->err, "%s: field '%s': %s", c->name, field, msg);
}

static const char *kind_name(const spw_ynode_t *n)
{
    return n->kind == SPW_Y_MAP ? "a mapping" : n->kind == SPW_Y_SEQ
        ? "a list" : "a scalar";
}

/* "expected WHAT, got 'TEXT'" (at most 40 bytes of TEXT) or "got a list". */
static int type_error(const pctx_t *c, const spw_ynode_t *n,
                      const char *field, const char *what)
{
    if (n->kind != SPW_Y_SCALAR)
        return field_error(c, n, field, "expected %s, got %s", what,
                           kind_name(n));
    return field_error(c, n, field, "expected %s, got '%.40s%s'", what,
                       n->str, strlen(n->str) > 40 ? "..." : "");
}

static int scalar_text(const pctx_t *c, const spw_ynode_t *n,
                       const char *field, const char **out)
{
    if (n->kind != SPW_Y_SCALAR)
        return type_error(c, n, field, "a string");
    *out = n->str;
    return 0;
}

static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

/* Letters, digits, '_', '.', '-' only. */
static int is_word(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' &&
            s[i] != '-')
            return 0;
    return 1;
}

static int is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

static int int_text(const char *s, int64_t *out)
{
    return spw_parse_i64(s, strlen(s), out);
}

/* ---- JSON to node tree -------------------------------------------------- */

/* Allocations of one JSON conversion, freed together. */
typedef struct jtree {
    void **ptrs;      /* every block allocated */
    size_t n, cap;    /* used and allocated entries of ptrs */
    int *lines;       /* line of each token that starts a key or value */
    int *cols;        /* its column (characters, 1-based) */
    size_t npos;      /* tokens recorded */
    size_t next;      /* next token to hand out while converting */
} jtree_t;

static void *jalloc(jtree_t *t, size_t size)
{
    void *p = spw_xcalloc(1, size);
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->ptrs = spw_xrealloc(t->ptrs, t->cap * sizeof(*t->ptrs));
    }
    t->ptrs[t->n++] = p;
    return p;
}

static char *jstrdup(jtree_t *t, const char *s, size_t len)
{
    char *p = jalloc(t, len + 1);
    memcpy(p, s, len);
    return p;
}

static void jtree_free(jtree_t *t)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        free(t->ptrs[i]);
    free(t->ptrs);
    free(t->lines);
    free(t->cols);
}

/* Records where every key and value token starts, in text order, which is
 * the order a depth-first walk of jansson's tree visits them (jansson keeps
 * object keys in insertion order, and duplicates were rejected).  Runs only
 * on text jansson accepted, so it need not validate anything. */
static void jtree_scan(jtree_t *t, const char *s, size_t len)
{
    size_t i, cap = 0;
    int line = 1, col = 1;

    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        int token = ch == '{' || ch == '[' || ch == '"' || ch == '-' ||
            isdigit(ch) || ch == 't' || ch == 'f' || ch == 'n';
        if (token) {
            if (t->npos == cap) {
                cap = cap ? 2 * cap : 64;
                t->lines = spw_xrealloc(t->lines, cap * sizeof(int));
                t->cols = spw_xrealloc(t->cols, cap * sizeof(int));
            }
            t->lines[t->npos] = line;
            t->cols[t->npos] = col;
            t->npos++;
        }
        if (ch == '"') {
            /* Skip to the closing quote, counting characters. */
            for (i++, col++; i < len && s[i] != '"'; i++) {
                if (s[i] == '\\')
                    i++, col++;
                if (((unsigned char)s[i] & 0xc0) != 0x80)
                    col++;
            }
            col++;
        } else if (token && ch != '{' && ch != '[') {
            /* Number or literal: ASCII up to a delimiter. */
            while (i + 1 < len && !strchr(",:]} \t\r\n", s[i + 1]))
                i++, col++;
            col++;
        } else if (ch == '\n') {
            line++;
            col = 1;
        } else if ((ch & 0xc0) != 0x80) {
            col++;
        }
    }
}

static void jtree_pos(jtree_t *t, int *line, int *col)
{
    if (t->next < t->npos) {
        *line = t->lines[t->next];
        *col = t->cols[t->next];
    } else {
        *line = *col = 0;  /* never expected; messages then lose position */
    }
    t->next++;
}

/* Converts v to a node tree like util/yaml's: scalars keep their JSON text
 * (strings unquoted), so the validator reads both formats alike. */
static spw_ynode_t *jtree_convert(jtree_t *t, json_t *v, int depth,
                                  const pctx_t *c)
{
    spw_ynode_t *n = jalloc(t, sizeof(*n));
    char buf[64];
    size_t i;

    jtree_pos(t, &n->line, &n->col);
    if (depth > MAX_JSON_DEPTH) {
        spw_errorf(c->err, "%s:%d:%d: JSON nested more than %d deep",
                   c->name, n->line, n->col, MAX_JSON_DEPTH);
        return NULL;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *item;
        n->kind = SPW_Y_MAP;
        n->n = json_object_size(v);
        n->keys = jalloc(t, (n->n + 1) * sizeof(*n->keys));
        n->key_lines = jalloc(t, (n->n + 1) * sizeof(int));
        n->key_cols = jalloc(t, (n->n + 1) * sizeof(int));
        n->items = jalloc(t, (n->n + 1) * sizeof(*n->items));
        i = 0;
        json_object_foreach(v, key, item) {
            n->keys[i] = jstrdup(t, key, strlen(key));
            jtree_pos(t, &n->key_lines[i], &n->key_cols[i]);
            n->items[i] = jtree_convert(t, item, depth + 1, c);
            if (!n->items[i])
                return NULL;
            i++;
        }
        return n;
    }
    case JSON_ARRAY:
        n->kind = SPW_Y_SEQ;
        n->n = json_array_size(v);
        n->items = jalloc(t, (n->n + 1) * sizeof(*n->items));
        for (i = 0; i < n->n; i++) {
            n->items[i] = jtree_convert(t, json_array_get(v, i), depth + 1,
                                        c);
            if (!n->items[i])
                return NULL;
        }
        return n;
    case JSON_STRING:
        n->kind = SPW_Y_SCALAR;
        n->str = jstrdup(t, json_string_value(v), json_string_length(v));
        return n;
    case JSON_INTEGER:
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
        break;
    case JSON_REAL: {
        /* The shortest text that reads back as the same double. */
        double x = json_real_value(v);
        int prec;
        for (prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof(buf), "%.*g", prec, x);
            if (strtod(buf, NULL) == x)
                break;
        }
        break;
    }
    case JSON_TRUE:
        strcpy(buf, "true");
        break;
    case JSON_FALSE:
        strcpy(buf, "false");
        break;
    default:
        strcpy(buf, "null");
        break;
    }
    n->kind = SPW_Y_SCALAR;
    n->str = jstrdup(t, buf, strlen(buf));
    return n;
}

/* ---- fields ------------------------------------------------------------- */

typedef int (*field_f)(const pctx_t *c, const spw_ynode_t *n,
                       const char *field, spw_jobspec_t *s);

static int f_name(const pctx_t *c, const spw_ynode_t *n, const char *field,
                  spw_jobspec_t *s)
{
    const char *v = NULL;

    if (scalar_text(c, n, field, &v) < 0)
        return -1;
    if (!*v)
        return field_error(c, n, field, "must not be empty");
    if (strlen(v) > MAX_NAME_BYTES)
        return field_error(c, n, field, "longer than %d bytes",
                           MAX_NAME_BYTES);
    if (has_control(v))
        return field_error(c, n, field, "must not contain control "
                           "characters");
    s->name = spw_xstrdup(v);
    return 0;
}

static int f_team(const pctx_t *c, const spw_ynode_t *n, const char *field,
                  spw_jobspec_t *s)
{
    const char *v = NULL;

    if (scalar_text(c, n, field, &v) < 0)
        return -1;
    if (!*v || strlen(v) > MAX_TEAM_BYTES || !is_word(v, strlen(v)))
        return field_error(c, n, field, "must be 1 to %d letters, digits, "
                           "'_', '.' or '-', got '%.40s'", MAX_TEAM_BYTES, v);
    s->team = spw_xstrdup(v);
    return 0;
}

/* A name resolved against the config later (class, data, residency):
 * letters, digits, '_', '.' and '-', like a team. */
static int word_field(const pctx_t *c, const spw_ynode_t *n,
                      const char *field, char **out)
{
    const char *v = NULL;

    if (scalar_text(c, n, field, &v) < 0)
        return -1;
    if (!*v || strlen(v) > MAX_TEAM_BYTES || !is_word(v, strlen(v)))
        return field_error(c, n, field, "must be 1 to %d letters, digits, "
                           "'_', '.' or '-', got '%.40s'", MAX_TEAM_BYTES, v);
    *out = spw_xstrdup(v);
    return 0;
}

static int f_class(const pctx_t *c, const spw_ynode_t *n, const char *field,
                   spw_jobspec_t *s)
{
    return word_field(c, n, field, &s->jclass);
}

static int f_data(const pctx_t *c, const spw_ynode_t *n, const char *field,
                  spw_jobspec_t *s)
{
    return word_field(c, n, field, &s->data);
}

static int f_residency(const pctx_t *c, const spw_ynode_t *n,
                       const char *field, spw_jobspec_t *s)
{
    return word_field(c, n, field, &s->residency);
}

/* A label key or value: what a rule can name as "key=value". */
static int label_text_ok(const char *v)
{
    return *v && strlen(v) <= MAX_LABEL_BYTES && !strchr(v, '=') &&
        !has_control(v);
}

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const spw_label_t *)a)->key,
                  ((const spw_label_t *)b)->key);
}

static int f_labels(const pctx_t *c, const spw_ynode_t *n, const char *field,
                    spw_jobspec_t *s)
{
    size_t i;

    if (n->kind != SPW_Y_MAP)
        return field_error(c, n, field, "expected a mapping of keys to "
                           "values like {env: prod}, got %s", kind_name(n));
    if (n->n > SPW_JOBSPEC_MAX_LABELS)
        return field_error(c, n, field, "%zu labels, more than the limit "
                           "of %d", n->n, SPW_JOBSPEC_MAX_LABELS);
    for (i = 0; i < n->n; i++) {
        spw_ynode_t pos = {.line = n->key_lines[i], .col = n->key_cols[i]};
        if (!label_text_ok(n->keys[i]))
            return field_error(c, &pos, field, "key '%.40s': must be 1 to "
                               "%d characters without '=' or control "
                               "characters", n->keys[i], MAX_LABEL_BYTES);
        if (n->items[i]->kind != SPW_Y_SCALAR)
            return field_error(c, n->items[i], field, "%s: expected a "
                               "string, got %s", n->keys[i],
                               kind_name(n->items[i]));
        if (!label_text_ok(n->items[i]->str))
            return field_error(c, n->items[i], field, "%s: the value must "
                               "be 1 to %d characters without '=' or "
                               "control characters, got '%.40s'", n->keys[i],
                               MAX_LABEL_BYTES, n->items[i]->str);
    }
    if (n->n == 0)
        return 0;
    s->labels = spw_xcalloc(n->n, sizeof(*s->labels));
    for (i = 0; i < n->n; i++) {
        s->labels[i].key = spw_xstrdup(n->keys[i]);
        s->labels[i].value = spw_xstrdup(n->items[i]->str);
    }
    s->nlabels = n->n;
    qsort(s->labels, s->nlabels, sizeof(*s->labels), label_cmp);
    for (i = 1; i < s->nlabels; i++)
        if (strcmp(s->labels[i - 1].key, s->labels[i].key) == 0)
            return field_error(c, n, field, "label '%.40s' is given twice",
                               s->labels[i].key);
    return 0;
}

static int f_run(const pctx_t *c, const spw_ynode_t *n, const char *field,
                 spw_jobspec_t *s)
{
    size_t i;

    if (n->kind == SPW_Y_SCALAR) {
        const char *p;
        for (p = n->str; isspace((unsigned char)*p); p++)
            ;
        if (!*p)
            return field_error(c, n, field, "the script must not be empty");
        s->run_kind = SPW_RUN_SCRIPT;
        s->script = spw_xstrdup(n->str);
        return 0;
    }
    if (n->kind != SPW_Y_SEQ)
        return field_error(c, n, field, "expected a list of strings (argv) "
                           "or a string (a shell script), got %s",
                           kind_name(n));
    if (n->n == 0)
        return field_error(c, n, field, "argv must not be empty");
    if (n->n > SPW_JOBSPEC_MAX_ARGS)
        return field_error(c, n, field, "argv has %zu entries, more than "
                           "the limit of %d", n->n, SPW_JOBSPEC_MAX_ARGS);
    for (i = 0; i < n->n; i++)
        if (n->items[i]->kind != SPW_Y_SCALAR)
            return field_error(c, n->items[i], field, "argv[%zu]: expected "
                               "a string, got %s", i,
                               kind_name(n->items[i]));
    if (!n->items[0]->str[0])
        return field_error(c, n->items[0], field, "argv[0] (the program) "
                           "must not be empty");
    s->run_kind = SPW_RUN_ARGV;
    s->argc = n->n;
    s->argv = spw_xcalloc(n->n + 1, sizeof(*s->argv));
    for (i = 0; i < n->n; i++)
        s->argv[i] = spw_xstrdup(n->items[i]->str);
    return 0;
}

static int f_gpus(const pctx_t *c, const spw_ynode_t *n, const char *field,
                  spw_jobspec_t *s)
{
    static const char expect[] = "a GPU count (2) or MODEL:COUNT "
                                 "(A100:2, A100|H100:2)";
    const char *v, *colon, *p;
    int64_t count;
    size_t nmodels = 0, i;

    if (n->kind != SPW_Y_SCALAR)
        return type_error(c, n, field, expect);
    v = n->str;
    colon = strrchr(v, ':');
    if (int_text(colon ? colon + 1 : v, &count) < 0)
        return type_error(c, n, field, expect);
    if (count < 1)
        return field_error(c, n, field, "must be at least 1");
    if (count > SPW_JOBSPEC_MAX_GPUS)
        return field_error(c, n, field, "must be at most %d",
                           SPW_JOBSPEC_MAX_GPUS);
    if (colon) {
        /* Check every model before allocating, so a failure leaves s as it
         * was. */
        for (p = v; ; p++) {
            const char *end = p;
            while (end < colon && *end != '|')
                end++;
            if (end == p || end - p > MAX_MODEL_BYTES ||
                !is_word(p, (size_t)(end - p)))
                return field_error(c, n, field, "GPU model %zu of '%.40s' "
                                   "must be 1 to %d letters, digits, '_', "
                                   "'.' or '-'", nmodels + 1, v,
                                   MAX_MODEL_BYTES);
            if (++nmodels > SPW_JOBSPEC_MAX_MODELS)
                return field_error(c, n, field, "more than %d GPU models",
                                   SPW_JOBSPEC_MAX_MODELS);
            p = end;
            if (p == colon)
                break;
        }
        s->gpu_models = spw_xcalloc(nmodels, sizeof(*s->gpu_models));
        for (p = v, i = 0; i < nmodels; i++) {
            const char *end = p;
            while (end < colon && *end != '|')
                end++;
            s->gpu_models[i] = spw_xmalloc((size_t)(end - p) + 1);
            memcpy(s->gpu_models[i], p, (size_t)(end - p));
            s->gpu_models[i][end - p] = '\0';
            p = end + 1;
        }
        s->n_gpu_models = nmodels;
    }
    s->gpus = (uint32_t)count;
    return 0;
}

static int runtime(const pctx_t *c, const spw_ynode_t *n, const char *field,
                   double *out)
{
    double v;

    if (n->kind != SPW_Y_SCALAR || spw_parse_duration(n->str, &v) < 0)
        return type_error(c, n, field, "seconds or a duration like 90s, "
                          "30m, 2h, 1h30m");
    if (!(v > 0))
        return field_error(c, n, field, "must be more than 0 seconds");
    if (v > SPW_JOBSPEC_MAX_RUNTIME_S)
        return field_error(c, n, field, "must be at most ten years");
    *out = v;
    return 0;
}

static int f_est_runtime(const pctx_t *c, const spw_ynode_t *n,
                         const char *field, spw_jobspec_t *s)
{
    return runtime(c, n, field, &s->est_runtime_s);
}

static int f_max_runtime(const pctx_t *c, const spw_ynode_t *n,
                         const char *field, spw_jobspec_t *s)
{
    return runtime(c, n, field, &s->max_runtime_s);
}

static int f_priority(const pctx_t *c, const spw_ynode_t *n,
                      const char *field, spw_jobspec_t *s)
{
    int64_t v;

    if (n->kind != SPW_Y_SCALAR || int_text(n->str, &v) < 0)
        return type_error(c, n, field, "an integer");
    if (v < INT32_MIN || v > INT32_MAX)
        return field_error(c, n, field, "must be between %ld and %ld",
                           (long)INT32_MIN, (long)INT32_MAX);
    s->priority = (int32_t)v;
    return 0;
}

static int f_deadline(const pctx_t *c, const spw_ynode_t *n,
                      const char *field, spw_jobspec_t *s)
{
    /* 9999-12-31T23:59:59Z, the last time RFC 3339 can write. */
    const double max_s = 253402300799.0;
    double v;

    if (n->kind != SPW_Y_SCALAR ||
        (spw_parse_double(n->str, strlen(n->str), &v) < 0 &&
         spw_parse_rfc3339(n->str, &v) < 0))
        return type_error(c, n, field, "unix seconds or an RFC 3339 time "
                          "like 2026-11-21T18:00:00Z");
    if (!(v > 0) || v > max_s)
        return field_error(c, n, field, "must be after 1970 and before "
                           "the year 10000");
    s->deadline_s = v;
    return 0;
}

static int env_cmp(const void *a, const void *b)
{
    return strcmp(((const spw_env_var_t *)a)->key,
                  ((const spw_env_var_t *)b)->key);
}

/* Names a job's env may not set, and why (docs/daemon.md, "What a job can
 * reach").  Exact names, or a prefix when the entry ends in '*'. */
static const struct {
    const char *name;
    const char *why;
} reserved_env[] = {
    {"SPILLWAY_IMAGE_CACHE", NULL},  /* the one SPILLWAY_ name a job sets */
    {"SPILLWAY_*", "spillway sets its SPILLWAY_ variables itself, and they steer the "
                   "placement"},
    {"CUDA_VISIBLE_DEVICES", "set by spillway to the GPUs it assigns"},
    {"RANK", "set by the backend for each rank of a job"},
    {"NODE_RANK", "set by the backend for each rank of a job"},
    {"LOCAL_RANK", "set by the backend for each rank of a job"},
    {"WORLD_SIZE", "set by the backend for each rank of a job"},
    {"LOCAL_WORLD_SIZE", "set by the backend for each rank of a job"},
    {"MASTER_ADDR", "set by the backend for each rank of a job"},
    {"MASTER_PORT", "set by the backend for each rank of a job"},
    {"SLURM_*", "set by Slurm on a Slurm pool"},
    {"SPW_*", "a variable of the ssh backend's launch script"},
};

/* The launch script's own one- and two-letter variables on ssh hosts. */
static const char *const script_vars[] = {"B", "D", "J", "R", "S", "T", "U", "W",
                                          "UI", "UG", "IC", "IF", "IK", "UF", "UR", "BW",
                                          "CK", "IMG"};

const char *spw_jobspec_env_reserved(const char *name)
{
    for (size_t i = 0; i < sizeof(reserved_env) / sizeof(reserved_env[0]); i++) {
        const char *r = reserved_env[i].name;
        size_t n = strlen(r);
        if (r[n - 1] == '*' ? strncmp(name, r, n - 1) == 0 : strcmp(name, r) == 0)
            return reserved_env[i].why;
    }
    for (size_t i = 0; i < sizeof(script_vars) / sizeof(script_vars[0]); i++)
        if (strcmp(name, script_vars[i]) == 0)
            return "a variable of the ssh backend's launch script";
    return NULL;
}

static int f_env(const pctx_t *c, const spw_ynode_t *n, const char *field,
                 spw_jobspec_t *s)
{
    size_t i;

    if (n->kind != SPW_Y_MAP)
        return field_error(c, n, field, "expected a mapping of names to "
                           "strings, got %s", kind_name(n));
    if (n->n > SPW_JOBSPEC_MAX_ENV)
        return field_error(c, n, field, "%zu variables, more than the "
                           "limit of %d", n->n, SPW_JOBSPEC_MAX_ENV);
    for (i = 0; i < n->n; i++) {
        spw_ynode_t pos = {.line = n->key_lines[i], .col = n->key_cols[i]};
        const char *k = n->keys[i];
        if (strlen(k) > MAX_ENV_KEY_BYTES || !is_identifier(k))
            return field_error(c, &pos, field, "'%.40s' is not a valid "
                               "variable name (letters, digits and '_', "
                               "not starting with a digit)", k);
        const char *why = spw_jobspec_env_reserved(k);
        if (why)
            return field_error(c, &pos, field, "%s is reserved: %s; remove "
                               "it from env", k, why);
        if (n->items[i]->kind != SPW_Y_SCALAR)
            return field_error(c, n->items[i], field, "%s: expected a "
                               "string, got %s", k, kind_name(n->items[i]));
    }
    if (n->n == 0)
        return 0;
    s->env = spw_xcalloc(n->n, sizeof(*s->env));
    for (i = 0; i < n->n; i++) {
        s->env[i].key = spw_xstrdup(n->keys[i]);
        s->env[i].value = spw_xstrdup(n->items[i]->str);
    }
    s->nenv = n->n;
    qsort(s->env, s->nenv, sizeof(*s->env), env_cmp);
    for (i = 1; i < s->nenv; i++)
        if (strcmp(s->env[i - 1].key, s->env[i].key) == 0)
            return field_error(c, n, field, "variable '%.40s' is given "
                               "twice", s->env[i].key);
    return 0;
}

static int f_workdir(const pctx_t *c, const spw_ynode_t *n,
                     const char *field, spw_jobspec_t *s)
{
    const char *v = NULL;

    if (scalar_text(c, n, field, &v) < 0)
        return -1;
    if (v[0] != '/')
        return field_error(c, n, field, "must be an absolute path, got "
                           "'%.40s'", v);
    if (strlen(v) > MAX_PATH_BYTES)
        return field_error(c, n, field, "longer than %d bytes",
                           MAX_PATH_BYTES);
    s->workdir = spw_xstrdup(v);
    return 0;
}

/* Characters of a registry reference: name[:tag][@digest]. */
static int image_ref_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || strchr("._-/:@+", ch) != NULL;
}

static int f_image(const pctx_t *c, const spw_ynode_t *n,
                   const char *field, spw_jobspec_t *s)
{
    const char *v = NULL, *path;

    if (scalar_text(c, n, field, &v) < 0)
        return -1;
    if (!v[0])
        return field_error(c, n, field, "is empty; give a root filesystem "
                           "directory, an OCI archive or a registry "
                           "reference, or leave the field out");
    if (strlen(v) > MAX_PATH_BYTES)
        return field_error(c, n, field, "longer than %d bytes",
                           MAX_PATH_BYTES);
    for (path = v; *path; path++)
        if ((unsigned char)*path < 0x20 || *path == 0x7f)
            return field_error(c, n, field, "holds a control character");
    path = strncmp(v, "oci-archive:", 12) == 0 ? v + 12 : v;
    if (path != v && path[0] != '/')
        return field_error(c, n, field, "oci-archive: takes an absolute "
                           "path, got '%.40s'", path);
    if (path[0] != '/') {
        /* A registry reference: no option-like or relative-path text. */
        for (const char *p = v; *p; p++)
            if (!image_ref_char(*p))
                return field_error(c, n, field, "'%.40s' is neither an "
                                   "absolute path nor a registry reference "
                                   "(letters, digits and ._-/:@+)", v);
        if (!((v[0] >= 'a' && v[0] <= 'z') || (v[0] >= 'A' && v[0] <= 'Z') ||
              (v[0] >= '0' && v[0] <= '9')) || strstr(v, ".."))
            return field_error(c, n, field, "'%.40s' is neither an absolute "
                               "path nor a registry reference (a relative "
                               "path must be made absolute)", v);
    }
    s->image = spw_xstrdup(v);
    return 0;
}

static int f_retries(const pctx_t *c, const spw_ynode_t *n,
                     const char *field, spw_jobspec_t *s)
{
    int64_t v;

    if (n->kind != SPW_Y_SCALAR || int_text(n->str, &v) < 0)
        return type_error(c, n, field, "an integer");
    if (v < 0 || v > SPW_JOBSPEC_MAX_RETRIES)
        return field_error(c, n, field, "must be between 0 and %d",
                           SPW_JOBSPEC_MAX_RETRIES);
    s->retries = (uint32_t)v;
    return 0;
}

static int f_gpus_per_node(const pctx_t *c, const spw_ynode_t *n, const char *field,
                           spw_jobspec_t *s)
{
    int64_t v;

    if (n->kind != SPW_Y_SCALAR || int_text(n->str, &v) < 0)
        return type_error(c, n, field, "an integer");
    if (v < 1 || v > 1024)
        return field_error(c, n, field, "must be between 1 and 1024");
    s->gpus_per_node = (uint32_t)v;
    return 0;
}

static int f_spot(const pctx_t *c, const spw_ynode_t *n, const char *field,
                  spw_jobspec_t *s)
{
    spw_spot_mode_t m;

    if (n->kind != SPW_Y_SCALAR || spw_spot_mode_parse(n->str, &m, NULL) < 0)
        return type_error(c, n, field, "auto, always or never");
    s->spot_mode = (uint8_t)m;
    return 0;
}

static int f_spot_policy(const pctx_t *c, const spw_ynode_t *n,
                         const char *field, spw_jobspec_t *s)
{
    spw_spot_policy_t p;

    if (n->kind != SPW_Y_SCALAR || spw_spot_policy_parse(n->str, &p, NULL) < 0)
        return type_error(c, n, field, "ondemand, greedy or uniform-progress");
    s->spot_policy = (uint8_t)(p + 1);
    return 0;
}

static int f_checkpoint_interval(const pctx_t *c, const spw_ynode_t *n,
                                 const char *field, spw_jobspec_t *s)
{
    double v;

    if (n->kind == SPW_Y_SCALAR && strcmp(n->str, "continuous") == 0) {
        s->checkpoint_interval_s = SPW_CKPT_CONTINUOUS;
        return 0;
    }
    if (n->kind != SPW_Y_SCALAR || spw_parse_duration(n->str, &v) < 0)
        return type_error(c, n, field, "a duration like 10m or 1h, 0 (it "
                          "never checkpoints) or continuous");
    if (!(v >= 0))
        return field_error(c, n, field, "must be 0 or more seconds");
    if (v > SPW_JOBSPEC_MAX_RUNTIME_S)
        return field_error(c, n, field, "must be at most ten years");
    s->checkpoint_interval_s = v;
    return 0;
}

/* Every field, in the order messages list them. */
enum {
    F_NAME, F_TEAM, F_CLASS, F_LABELS, F_RUN, F_GPUS, F_EST_RUNTIME,
    F_MAX_RUNTIME, F_PRIORITY, F_DEADLINE, F_DATA, F_RESIDENCY, F_ENV,
    F_WORKDIR, F_RETRIES, F_SPOT, F_SPOT_POLICY, F_CHECKPOINT_INTERVAL,
    F_GPUS_PER_NODE, F_IMAGE, NFIELDS
};
static const struct field {
    const char *name;   /* key in the document */
    field_f parse;      /* reads and validates it into the spec */
} fields[NFIELDS] = {
    [F_NAME] = {"name", f_name},
    [F_TEAM] = {"team", f_team},
    [F_CLASS] = {"class", f_class},
    [F_LABELS] = {"labels", f_labels},
    [F_RUN] = {"run", f_run},
    [F_GPUS] = {"gpus", f_gpus},
    [F_EST_RUNTIME] = {"est_runtime", f_est_runtime},
    [F_MAX_RUNTIME] = {"max_runtime", f_max_runtime},
    [F_PRIORITY] = {"priority", f_priority},
    [F_DEADLINE] = {"deadline", f_deadline},
    [F_DATA] = {"data", f_data},
    [F_RESIDENCY] = {"residency", f_residency},
    [F_ENV] = {"env", f_env},
    [F_WORKDIR] = {"workdir", f_workdir},
    [F_RETRIES] = {"retries", f_retries},
    [F_SPOT] = {"spot", f_spot},
    [F_SPOT_POLICY] = {"spot_policy", f_spot_policy},
    [F_CHECKPOINT_INTERVAL] = {"checkpoint_interval", f_checkpoint_interval},
    [F_GPUS_PER_NODE] = {"gpus_per_node", f_gpus_per_node},
    [F_IMAGE] = {"image", f_image},
};

static int parse_root(const pctx_t *c, const spw_ynode_t *root,
                      spw_jobspec_t *s)
{
    int seen[NFIELDS] = {0};
    size_t i, f;

    if (!root)
        return spw_errorf(c->err, "%s: the job spec is empty", c->name);
    if (root->kind != SPW_Y_MAP)
        return spw_errorf(c->err, "%s:%d:%d: a job spec must be a mapping "
                          "of fields, got %s", c->name, root->line,
                          root->col, kind_name(root));
    for (i = 0; i < root->n; i++) {
        const char *key = root->keys[i];
        for (f = 0; f < NFIELDS; f++)
            if (strcmp(fields[f].name, key) == 0)
                break;
        if (f == NFIELDS) {
            char known[320];
            size_t used = 0, k;
            for (k = 0; k < NFIELDS; k++)
                used += (size_t)snprintf(known + used, sizeof(known) - used,
                                         "%s%s", k ? ", " : "",
                                         fields[k].name);
            return spw_errorf(c->err, "%s:%d:%d: unknown field '%.40s%s' "
                              "(expected one of: %s)", c->name,
                              root->key_lines[i], root->key_cols[i], key,
                              strlen(key) > 40 ? "..." : "", known);
        }
        if (seen[f])
            return spw_errorf(c->err, "%s:%d:%d: field '%s' is given twice "
                              "(first at line %d)", c->name,
                              root->key_lines[i], root->key_cols[i], key,
                              root->key_lines[seen[f] - 1]);
        seen[f] = (int)i + 1;
        if (fields[f].parse(c, root->items[i], key, s) < 0)
            return -1;
    }
    if (!seen[F_RUN])
        return spw_errorf(c->err, "%s:%d:%d: field 'run' is required (a "
                          "list of strings, or a shell script)", c->name,
                          root->line, root->col);
    if (!seen[F_GPUS])
        return spw_errorf(c->err, "%s:%d:%d: field 'gpus' is required "
                          "(a count like 2, or A100:2)", c->name,
                          root->line, root->col);
    if (s->est_runtime_s > s->max_runtime_s)
        return field_error(c, root->items[seen[F_EST_RUNTIME] - 1],
                           "est_runtime", "%g s is more than max_runtime "
                           "(%g s)", s->est_runtime_s, s->max_runtime_s);
    return 0;
}

static void spec_init(spw_jobspec_t *s)
{
    memset(s, 0, sizeof(*s));
    s->est_runtime_s = NAN;
    s->max_runtime_s = NAN;
    s->deadline_s = NAN;
    s->checkpoint_interval_s = NAN;
}

int spw_jobspec_parse(const char *name, const char *data, size_t len,
                      spw_jobspec_t *out, spw_error_t *err)
{
    pctx_t c = {name ? name : "job spec", err};
    spw_jobspec_t s;
    size_t i;
    int rc;

    memset(out, 0, sizeof(*out));
    if (len > SPW_JOBSPEC_MAX_BYTES)
        return spw_errorf(err, "%s: the job spec is %zu bytes, more than "
                          "the limit of %u", c.name, len,
                          SPW_JOBSPEC_MAX_BYTES);
    spec_init(&s);
    for (i = 0; i < len && strchr(" \t\r\n", data[i]) && data[i]; i++)
        ;
    if (i < len && data[i] == '{') {
        jtree_t t = {0};
        json_error_t je;
        json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
        spw_ynode_t *root;
        if (!j)
            return spw_errorf(err, "%s:%d:%d: invalid JSON: %s", c.name,
                              je.line, je.column, je.text);
        jtree_scan(&t, data, len);
        root = jtree_convert(&t, j, 0, &c);
        json_decref(j);
        rc = root ? parse_root(&c, root, &s) : -1;
        jtree_free(&t);
    } else {
        spw_ydoc_t *d = spw_ydoc_load_mem(c.name, data, len, err);
        if (!d)
            return -1;
        rc = parse_root(&c, spw_ydoc_root(d), &s);
        spw_ydoc_destroy(d);
    }
    if (rc < 0) {
        spw_jobspec_free(&s);
        return -1;
    }
    *out = s;
    return 0;
}

void spw_jobspec_free(spw_jobspec_t *s)
{
    size_t i;

    if (!s)
        return;
    free(s->name);
    free(s->team);
    for (i = 0; s->argv && i < s->argc; i++)
        free(s->argv[i]);
    free(s->argv);
    free(s->script);
    for (i = 0; i < s->n_gpu_models; i++)
        free(s->gpu_models[i]);
    free(s->gpu_models);
    for (i = 0; i < s->nenv; i++) {
        free(s->env[i].key);
        free(s->env[i].value);
    }
    free(s->env);
    free(s->workdir);
    free(s->jclass);
    for (i = 0; i < s->nlabels; i++) {
        free(s->labels[i].key);
        free(s->labels[i].value);
    }
    free(s->labels);
    free(s->data);
    free(s->residency);
    free(s->image);
    memset(s, 0, sizeof(*s));
}

/* ---- canonical JSON ----------------------------------------------------- */

/* Whole seconds as a JSON integer (the common case reads best), anything
 * else as a real printed with enough digits to read back exactly. */
static json_t *seconds(double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* Sets key to v, which may be NULL only when a string was not valid UTF-8:
 * that marks the whole conversion failed. */
static int put(json_t *o, const char *key, json_t *v)
{
    if (!v)
        return -1;
    return json_object_set_new(o, key, v);
}

char *spw_jobspec_to_json(const spw_jobspec_t *s)
{
    json_t *o = json_object();
    char *text = NULL;
    int bad = 0;
    size_t i;

    if (!o)
        return NULL;
    if (s->name)
        bad |= put(o, "name", json_string(s->name));
    if (s->team)
        bad |= put(o, "team", json_string(s->team));
    if (s->run_kind == SPW_RUN_SCRIPT) {
        bad |= put(o, "run", json_string(s->script ? s->script : ""));
    } else {
        json_t *a = json_array();
        for (i = 0; a && i < s->argc; i++)
            bad |= json_array_append_new(a, json_string(s->argv[i]));
        bad |= put(o, "run", a);
    }
    if (s->n_gpu_models) {
        size_t cap = 16, used = 0;
        char *g = spw_xmalloc(cap);
        for (i = 0; i < s->n_gpu_models; i++) {
            size_t l = strlen(s->gpu_models[i]);
            if (used + l + 16 > cap) {
                cap = 2 * (used + l + 16);
                g = spw_xrealloc(g, cap);
            }
            if (i)
                g[used++] = '|';
            memcpy(g + used, s->gpu_models[i], l);
            used += l;
        }
        snprintf(g + used, cap - used, ":%lu", (unsigned long)s->gpus);
        bad |= put(o, "gpus", json_string(g));
        free(g);
    } else {
        bad |= put(o, "gpus", json_integer(s->gpus));
    }
    if (!isnan(s->est_runtime_s))
        bad |= put(o, "est_runtime", seconds(s->est_runtime_s));
    if (!isnan(s->max_runtime_s))
        bad |= put(o, "max_runtime", seconds(s->max_runtime_s));
    if (s->priority)
        bad |= put(o, "priority", json_integer(s->priority));
    if (!isnan(s->deadline_s))
        bad |= put(o, "deadline", seconds(s->deadline_s));
    if (s->nenv) {
        json_t *e = json_object();
        for (i = 0; e && i < s->nenv; i++)
            bad |= put(e, s->env[i].key, json_string(s->env[i].value));
        bad |= put(o, "env", e);
    }
    if (s->workdir)
        bad |= put(o, "workdir", json_string(s->workdir));
    if (s->retries)
        bad |= put(o, "retries", json_integer(s->retries));
    if (s->gpus_per_node)
        bad |= put(o, "gpus_per_node", json_integer(s->gpus_per_node));
    if (s->jclass)
        bad |= put(o, "class", json_string(s->jclass));
    if (s->nlabels) {
        json_t *l = json_object();
        for (i = 0; l && i < s->nlabels; i++)
            bad |= put(l, s->labels[i].key, json_string(s->labels[i].value));
        bad |= put(o, "labels", l);
    }
    if (s->data)
        bad |= put(o, "data", json_string(s->data));
    if (s->residency)
        bad |= put(o, "residency", json_string(s->residency));
    if (s->spot_mode)
        bad |= put(o, "spot", json_string(
                       spw_spot_mode_name((spw_spot_mode_t)s->spot_mode)));
    if (s->spot_policy)
        bad |= put(o, "spot_policy", json_string(spw_spot_policy_name(
                       (spw_spot_policy_t)(s->spot_policy - 1))));
    if (s->checkpoint_interval_s == SPW_CKPT_CONTINUOUS)
        bad |= put(o, "checkpoint_interval", json_string("continuous"));
    else if (!isnan(s->checkpoint_interval_s))
        bad |= put(o, "checkpoint_interval",
                   seconds(s->checkpoint_interval_s));
    if (s->image)
        bad |= put(o, "image", json_string(s->image));
    if (!bad)
        text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS |
                          JSON_REAL_PRECISION(17));
    json_decref(o);
    return text;
}

/* ---- equality ----------------------------------------------------------- */

static int str_eq(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static int num_eq(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

int spw_jobspec_equal(const spw_jobspec_t *a, const spw_jobspec_t *b)
{
    size_t i;

    if (!str_eq(a->name, b->name) || !str_eq(a->team, b->team) ||
        a->run_kind != b->run_kind || a->argc != b->argc ||
        !str_eq(a->script, b->script) || a->gpus != b->gpus ||
        a->n_gpu_models != b->n_gpu_models ||
        !num_eq(a->est_runtime_s, b->est_runtime_s) ||
        !num_eq(a->max_runtime_s, b->max_runtime_s) ||
        a->priority != b->priority ||
        !num_eq(a->deadline_s, b->deadline_s) || a->nenv != b->nenv ||
        !str_eq(a->workdir, b->workdir) || a->retries != b->retries ||
        a->gpus_per_node != b->gpus_per_node ||
        !str_eq(a->jclass, b->jclass) || a->nlabels != b->nlabels ||
        !str_eq(a->data, b->data) || !str_eq(a->residency, b->residency) ||
        a->spot_mode != b->spot_mode || a->spot_policy != b->spot_policy ||
        !num_eq(a->checkpoint_interval_s, b->checkpoint_interval_s) ||
        !str_eq(a->image, b->image))
        return 0;
    for (i = 0; i < a->argc; i++)
        if (!str_eq(a->argv[i], b->argv[i]))
            return 0;
    for (i = 0; i < a->n_gpu_models; i++)
        if (!str_eq(a->gpu_models[i], b->gpu_models[i]))
            return 0;
    for (i = 0; i < a->nenv; i++)
        if (!str_eq(a->env[i].key, b->env[i].key) ||
            !str_eq(a->env[i].value, b->env[i].value))
            return 0;
    for (i = 0; i < a->nlabels; i++)
        if (!str_eq(a->labels[i].key, b->labels[i].key) ||
            !str_eq(a->labels[i].value, b->labels[i].value))
            return 0;
    return 1;
}
