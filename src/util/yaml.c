/* yaml.c: builds a spw_ynode_t tree from libyaml's event stream.  Nodes and
 * strings live in a per-document arena, so destroying a document is a walk
 * over a few large blocks whatever the input looked like. */
#include <limits.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "util/numparse.h"
#include "util/file.h"
#include "util/names.h"
#include "util/yaml.h"
#include "util/names.h"

#define MAX_DEPTH 64        /* deepest nesting of maps and seqs accepted */
#define MAX_NODES 1000000   /* most nodes (keys included) in a document */
#define BLOCK_SIZE 65536    /* usual arena block, bytes */

/* One arena block; data follows the header. */
typedef struct arena_block {
    struct arena_block *next;  /* next block in the free list */
    size_t used;               /* bytes of data handed out */
    size_t cap;                /* bytes of data in the block */
    alignas(max_align_t) unsigned char data[];  /* the memory itself */
} arena_block_t;

struct spw_ydoc {
    const char *name;        /* name for messages, in the arena */
    spw_ynode_t *root;       /* root node, NULL for an empty document */
    arena_block_t *blocks;   /* every block; the first is being filled */
    size_t nodes;            /* nodes allocated so far */
};

/* An open map or seq while parsing. */
typedef struct open_node {
    spw_ynode_t *node;       /* the container */
    size_t first;            /* pending-stack index of its first child */
} open_node_t;

/* Parser state for one load. */
typedef struct builder {
    spw_ydoc_t *doc;                 /* document being built */
    spw_ynode_t **pending;           /* children of open containers */
    size_t npending;                 /* entries used in pending */
    size_t cap;                      /* entries allocated in pending */
    open_node_t open[MAX_DEPTH + 1]; /* open containers, outermost first */
    int depth;                       /* entries used in open */
    int docs;                        /* documents started so far */
} builder_t;

static void *arena_alloc(spw_ydoc_t *d, size_t n)
{
    const size_t align = alignof(max_align_t);
    arena_block_t *b = d->blocks;
    void *p;

    n = (n + align - 1) & ~(align - 1);
    if (n == 0)
        n = align;
    if (n > BLOCK_SIZE / 4) {
        /* A large array gets a block of its own, behind the current one so
         * the current one's free space is not wasted. */
        arena_block_t *big = spw_xmalloc(sizeof(*big) + n);
        big->used = big->cap = n;
        if (b) {
            big->next = b->next;
            b->next = big;
        } else {
            big->next = NULL;
            d->blocks = big;
        }
        return big->data;
    }
    if (!b || b->cap - b->used < n) {
        b = spw_xmalloc(sizeof(*b) + BLOCK_SIZE);
        b->used = 0;
        b->cap = BLOCK_SIZE;
        b->next = d->blocks;
        d->blocks = b;
    }
    p = b->data + b->used;
    b->used += n;
    return p;
}

static char *arena_strdup(spw_ydoc_t *d, const char *s, size_t len)
{
    char *p = arena_alloc(d, len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void spw_ydoc_destroy(spw_ydoc_t *d)
{
    arena_block_t *b, *next;

    if (!d)
        return;
    for (b = d->blocks; b; b = next) {
        next = b->next;
        free(b);
    }
    free(d);
}

spw_ynode_t *spw_ydoc_root(spw_ydoc_t *d)
{
    return d ? d->root : NULL;
}

const char *spw_ydoc_name(spw_ydoc_t *d)
{
    return d ? d->name : NULL;
}

static int mark_error(builder_t *b, const yaml_mark_t *m, spw_error_t *err,
                      const char *what)
{
    return spw_errorf(err, "%s:%zu:%zu: %s", b->doc->name, m->line + 1,
                      m->column + 1, what);
}

static int parser_error(builder_t *b, const yaml_parser_t *p,
                        spw_error_t *err)
{
    const char *name = b->doc->name;
    const char *problem = p->problem ? p->problem : "syntax error";

    switch (p->error) {
    case YAML_MEMORY_ERROR:
        return spw_errorf(err, "%s: out of memory while parsing", name);
    case YAML_READER_ERROR:
        /* Reader errors (bad encoding) carry a byte offset, not a mark. */
        return spw_errorf(err, "%s: byte %zu: %s", name, p->problem_offset,
                          problem);
    default:
        if (p->context)
            return spw_errorf(err, "%s:%zu:%zu: %s (%s at line %zu)", name,
                              p->problem_mark.line + 1,
                              p->problem_mark.column + 1, problem,
                              p->context, p->context_mark.line + 1);
        return spw_errorf(err, "%s:%zu:%zu: %s", name,
                          p->problem_mark.line + 1,
                          p->problem_mark.column + 1, problem);
    }
}

static int clamp_int(size_t v)
{
    return v >= INT32_MAX ? INT32_MAX : (int)v;
}

/* Allocates a node at the event's start and adds it as the next child of
 * the innermost open container (or as the root). */
static spw_ynode_t *add_node(builder_t *b, const yaml_event_t *ev,
                             spw_ynode_kind_t kind, spw_error_t *err)
{
    spw_ynode_t *n;

    if (b->doc->nodes >= MAX_NODES) {
        mark_error(b, &ev->start_mark, err,
                   "too many nodes (the limit is 1000000)");
        return NULL;
    }
    if (kind != SPW_Y_SCALAR && b->depth > 0) {
        open_node_t *top = &b->open[b->depth - 1];
        if (top->node->kind == SPW_Y_MAP &&
            (b->npending - top->first) % 2 == 0) {
            mark_error(b, &ev->start_mark, err,
                       "mapping keys must be plain scalars");
            return NULL;
        }
    }
    if (b->depth == 0 && b->npending > 0) {
        /* Cannot happen with a well-formed event stream; be safe. */
        mark_error(b, &ev->start_mark, err, "more than one root node");
        return NULL;
    }
    n = arena_alloc(b->doc, sizeof(*n));
    memset(n, 0, sizeof(*n));
    n->kind = kind;
    n->line = clamp_int(ev->start_mark.line + 1);
    n->col = clamp_int(ev->start_mark.column + 1);
    b->doc->nodes++;
    if (b->npending == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->pending = spw_xrealloc(b->pending, b->cap * sizeof(*b->pending));
    }
    b->pending[b->npending++] = n;
    return n;
}

static int open_container(builder_t *b, const yaml_event_t *ev,
                          spw_ynode_kind_t kind, spw_error_t *err)
{
    spw_ynode_t *n;

    if (b->depth >= MAX_DEPTH)
        return mark_error(b, &ev->start_mark, err,
                          "nesting is deeper than 64 levels");
    n = add_node(b, ev, kind, err);
    if (!n)
        return -1;
    b->open[b->depth].node = n;
    b->open[b->depth].first = b->npending;
    b->depth++;
    return 0;
}

static int close_container(builder_t *b, const yaml_event_t *ev,
                           spw_error_t *err)
{
    open_node_t *top;
    spw_ynode_t *n;
    spw_ynode_t **kids;
    size_t count, i;

    if (b->depth == 0)
        return mark_error(b, &ev->start_mark, err, "unbalanced collection");
    top = &b->open[--b->depth];
    n = top->node;
    kids = b->pending + top->first;
    count = b->npending - top->first;
    if (n->kind == SPW_Y_MAP) {
        if (count % 2 != 0)
            return mark_error(b, &ev->start_mark, err,
                              "mapping key without a value");
        n->n = count / 2;
        if (n->n) {
            n->keys = arena_alloc(b->doc, n->n * sizeof(*n->keys));
            n->key_lines = arena_alloc(b->doc, n->n * sizeof(*n->key_lines));
            n->key_cols = arena_alloc(b->doc, n->n * sizeof(*n->key_cols));
            n->items = arena_alloc(b->doc, n->n * sizeof(*n->items));
            for (i = 0; i < n->n; i++) {
                n->keys[i] = kids[2 * i]->str;
                n->key_lines[i] = kids[2 * i]->line;
                n->key_cols[i] = kids[2 * i]->col;
                n->items[i] = kids[2 * i + 1];
            }
        }
    } else {
        n->n = count;
        if (n->n) {
            n->items = arena_alloc(b->doc, n->n * sizeof(*n->items));
            memcpy(n->items, kids, n->n * sizeof(*n->items));
        }
    }
    b->npending = top->first;
    return 0;
}

static int add_scalar(builder_t *b, const yaml_event_t *ev,
                      spw_error_t *err)
{
    const char *value = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    spw_ynode_t *n;

    if (memchr(value, '\0', len))
        return mark_error(b, &ev->start_mark, err,
                          "NUL characters are not allowed in scalars");
    /* "---" with nothing after it comes through as an empty plain scalar
     * at the root: treat it as an empty document. */
    if (b->depth == 0 && len == 0 && ev->data.scalar.style ==
        YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag)
        return 0;
    n = add_node(b, ev, SPW_Y_SCALAR, err);
    if (!n)
        return -1;
    n->str = arena_strdup(b->doc, value, len);
    return 0;
}

static int has_anchor(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return ev->data.scalar.anchor != NULL;
    case YAML_SEQUENCE_START_EVENT:
        return ev->data.sequence_start.anchor != NULL;
    case YAML_MAPPING_START_EVENT:
        return ev->data.mapping_start.anchor != NULL;
    default:
        return 0;
    }
}

/* Handles one event; sets *done at the end of the stream. */
static int handle_event(builder_t *b, const yaml_event_t *ev, int *done,
                        spw_error_t *err)
{
    if (has_anchor(ev))
        return mark_error(b, &ev->start_mark, err,
                          "anchors (&name) are not supported");
    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        *done = 1;
        return 0;
    case YAML_DOCUMENT_START_EVENT:
        if (++b->docs > 1)
            return mark_error(b, &ev->start_mark, err,
                              "only one YAML document is allowed per file");
        return 0;
    case YAML_DOCUMENT_END_EVENT:
        if (b->depth != 0)
            return mark_error(b, &ev->start_mark, err, "unbalanced document");
        b->doc->root = b->npending ? b->pending[0] : NULL;
        return 0;
    case YAML_ALIAS_EVENT:
        return mark_error(b, &ev->start_mark, err,
                          "aliases (*name) are not supported");
    case YAML_SCALAR_EVENT:
        return add_scalar(b, ev, err);
    case YAML_SEQUENCE_START_EVENT:
        return open_container(b, ev, SPW_Y_SEQ, err);
    case YAML_MAPPING_START_EVENT:
        return open_container(b, ev, SPW_Y_MAP, err);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return close_container(b, ev, err);
    default:
        return 0;
    }
}

spw_ydoc_t *spw_ydoc_load_mem(const char *name, const char *data, size_t len,
                              spw_error_t *err)
{
    builder_t b;
    yaml_parser_t parser;
    yaml_event_t ev;
    int done = 0;

    memset(&b, 0, sizeof(b));
    b.doc = spw_xcalloc(1, sizeof(*b.doc));
    if (!name)
        name = "<yaml>";
    b.doc->name = arena_strdup(b.doc, name, strlen(name));
    if (!yaml_parser_initialize(&parser)) {
        spw_errorf(err, "%s: cannot initialize the YAML parser", name);
        goto error_doc;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    while (!done) {
        int rc;
        if (!yaml_parser_parse(&parser, &ev)) {
            parser_error(&b, &parser, err);
            goto error;
        }
        rc = handle_event(&b, &ev, &done, err);
        yaml_event_delete(&ev);
        if (rc < 0)
            goto error;
    }
    yaml_parser_delete(&parser);
    free(b.pending);
    return b.doc;
error:
    yaml_parser_delete(&parser);
error_doc:
    free(b.pending);
    spw_ydoc_destroy(b.doc);
    return NULL;
}

spw_ydoc_t *spw_ydoc_load_file(const char *path, spw_error_t *err)
{
    spw_ydoc_t *d;
    size_t len;
    char *buf = spw_read_file(path, &len, err);

    if (!buf)
        return NULL;
    d = spw_ydoc_load_mem(path, buf, len, err);
    free(buf);
    return d;
}

spw_ynode_t *spw_ymap_get(const spw_ynode_t *map, const char *key)
{
    size_t i;

    if (!map || map->kind != SPW_Y_MAP || !key)
        return NULL;
    for (i = 0; i < map->n; i++)
        if (strcmp(map->keys[i], key) == 0)
            return map->items[i];
    return NULL;
}

static const char *kind_name(spw_ynode_kind_t kind)
{
    switch (kind) {
    case SPW_Y_MAP:
        return "a mapping";
    case SPW_Y_SEQ:
        return "a sequence";
    default:
        return "a scalar";
    }
}

/* Reports that n is not what was expected, quoting at most 40 bytes of a
 * scalar so the message fits in spw_error_t. */
static int type_error(const spw_ydoc_t *d, const spw_ynode_t *n,
                      const char *what, const char *expected,
                      spw_error_t *err)
{
    const char *sep = what ? ": " : "";

    if (!what)
        what = "";
    if (!n)
        return spw_errorf(err, "%s: %s%smissing value", d->name, what, sep);
    if (n->kind != SPW_Y_SCALAR)
        return spw_errorf(err, "%s:%d:%d: %s%sexpected %s, got %s", d->name,
                          n->line, n->col, what, sep, expected,
                          kind_name(n->kind));
    return spw_errorf(err, "%s:%d:%d: %s%sexpected %s, got '%.40s%s'",
                      d->name, n->line, n->col, what, sep, expected, n->str,
                      strlen(n->str) > 40 ? "..." : "");
}

int spw_ynode_double(const spw_ydoc_t *d, const spw_ynode_t *n,
                     const char *what, double *out, spw_error_t *err)
{
    double v;

    if (!n || n->kind != SPW_Y_SCALAR ||
        spw_parse_double(n->str, strlen(n->str), &v) < 0)
        return type_error(d, n, what, "a number", err);
    *out = v;
    return 0;
}

int spw_ynode_int(const spw_ydoc_t *d, const spw_ynode_t *n,
                  const char *what, long *out, spw_error_t *err)
{
    int64_t v;

    if (!n || n->kind != SPW_Y_SCALAR ||
        spw_parse_i64(n->str, strlen(n->str), &v) < 0)
        return type_error(d, n, what, "an integer", err);
#if LONG_MAX < INT64_MAX
    if (v < LONG_MIN || v > LONG_MAX)
        return type_error(d, n, what, "an integer in range", err);
#endif
    *out = (long)v;
    return 0;
}

int spw_ynode_str(const spw_ydoc_t *d, const spw_ynode_t *n,
                  const char *what, const char **out, spw_error_t *err)
{
    if (!n || n->kind != SPW_Y_SCALAR)
        return type_error(d, n, what, "a string", err);
    *out = n->str;
    return 0;
}

int spw_ynode_bool(const spw_ydoc_t *d, const spw_ynode_t *n,
                   const char *what, int *out, spw_error_t *err)
{
    if (n && n->kind == SPW_Y_SCALAR) {
        if (!strcasecmp(n->str, "true") || !strcasecmp(n->str, "yes")) {
            *out = 1;
            return 0;
        }
        if (!strcasecmp(n->str, "false") || !strcasecmp(n->str, "no")) {
            *out = 0;
            return 0;
        }
    }
    return type_error(d, n, what, "true or false", err);
}

int spw_ymap_check_keys(const spw_ydoc_t *d, const spw_ynode_t *map,
                        const char *section, const char *const *allowed,
                        spw_error_t *err)
{
    size_t i, j;

    if (!map)
        return 0;
    if (map->kind != SPW_Y_MAP)
        return type_error(d, map, section, "a mapping", err);
    for (i = 0; i < map->n; i++) {
        const char *key = map->keys[i];
        const char *const *a;
        for (a = allowed; *a; a++)
            if (strcmp(*a, key) == 0)
                break;
        if (!*a) {
            /* The closest key first, then as many whole keys as the
             * message holds (never one cut mid-word). */
            char head[200], list[256];
            const char *near = spw_names_closest(allowed, (size_t)-1, key);
            int hl = snprintf(head, sizeof(head), "%s:%d:%d: unknown key '%.40s%s' in %s%s%s%s "
                              "(expected one of: ", d->name, map->key_lines[i],
                              map->key_cols[i], key, strlen(key) > 40 ? "..." : "",
                              section ? section : "mapping", near ? ": did you mean '" : "",
                              near ? near : "", near ? "'?" : "");
            size_t room = sizeof(err->text) - 2 - (hl > 0 ? (size_t)hl : 0);
            if (hl < 0 || room < 32 || room > sizeof(list))
                room = room < 32 ? 32 : sizeof(list);
            spw_names_wrap(allowed, (size_t)-1, "", list, room);
            return spw_errorf(err, "%s%s)", head, list);
        }
        /* Only allowed keys reach here, so a duplicate shows up within the
         * first len(allowed) + 1 keys: this loop stays short. */
        for (j = 0; j < i; j++)
            if (strcmp(map->keys[j], key) == 0)
                return spw_errorf(err, "%s:%d:%d: duplicate key '%s' in %s "
                                  "(first at line %d)", d->name,
                                  map->key_lines[i], map->key_cols[i], key,
                                  section ? section : "mapping",
                                  map->key_lines[j]);
    }
    return 0;
}
