/* yaml.h: a small read-only YAML document tree with source positions, built
 * over libyaml, for configuration files. */
#ifndef SPW_UTIL_YAML_H
#define SPW_UTIL_YAML_H

#include <stddef.h>

#include "util/error.h"

typedef enum spw_ynode_kind {
    SPW_Y_SCALAR,
    SPW_Y_MAP,
    SPW_Y_SEQ,
} spw_ynode_kind_t;

/* One node.  Every node and string belongs to its spw_ydoc_t and is valid
 * until spw_ydoc_destroy(). */
typedef struct spw_ynode spw_ynode_t;
struct spw_ynode {
    spw_ynode_kind_t kind;   /* scalar, mapping or sequence */
    int line;                /* 1-based line of the node's start */
    int col;                 /* 1-based column of the node's start */
    const char *str;         /* scalar text, NUL-terminated; NULL otherwise */
    size_t n;                /* children: map pairs or seq items */
    const char **keys;       /* map keys, n of them; NULL for seqs/scalars */
    int *key_lines;          /* 1-based line of each key; NULL if no keys */
    int *key_cols;           /* 1-based column of each key; NULL if no keys */
    spw_ynode_t **items;     /* map values or seq items, n of them */
};

/* A loaded document: owns every node and string, and a copy of its name. */
typedef struct spw_ydoc spw_ydoc_t;

/* Loads a single-document YAML stream.  Anchors and aliases, non-scalar map
 * keys, scalars containing NUL, a second document, nesting deeper than 64
 * and more than 1,000,000 nodes are rejected.  Returns the document (free it
 * with spw_ydoc_destroy) or NULL with "NAME:LINE:COL: PROBLEM" in err.  The
 * name is copied; data is not kept. */
spw_ydoc_t *spw_ydoc_load_file(const char *path, spw_error_t *err);
spw_ydoc_t *spw_ydoc_load_mem(const char *name, const char *data, size_t len,
                              spw_error_t *err);

/* The root node, or NULL for an empty document (no content at all). */
spw_ynode_t *spw_ydoc_root(spw_ydoc_t *d);

/* The path or name given at load time, for messages. */
const char *spw_ydoc_name(spw_ydoc_t *d);

/* Frees the document and all its nodes.  NULL-safe. */
void spw_ydoc_destroy(spw_ydoc_t *d);

/* The value of the first pair of map whose key is key, or NULL if there is
 * none or map is NULL or not a mapping. */
spw_ynode_t *spw_ymap_get(const spw_ynode_t *map, const char *key);

/* Typed getters: fill *out and return 0, or return -1 with a message like
 * "NAME:LINE:COL: WHAT: expected a number, got 'abc'".  what names the
 * value in messages (usually its key; may be NULL).  A NULL n gives
 * "NAME: WHAT: missing value".  Numbers are finite decimals; integers must
 * fit a long; booleans are true/false/yes/no in any case; strings must be
 * scalars, and the string returned is owned by d. */
int spw_ynode_double(const spw_ydoc_t *d, const spw_ynode_t *n,
                     const char *what, double *out, spw_error_t *err);
int spw_ynode_int(const spw_ydoc_t *d, const spw_ynode_t *n,
                  const char *what, long *out, spw_error_t *err);
int spw_ynode_str(const spw_ydoc_t *d, const spw_ynode_t *n,
                  const char *what, const char **out, spw_error_t *err);
int spw_ynode_bool(const spw_ydoc_t *d, const spw_ynode_t *n,
                   const char *what, int *out, spw_error_t *err);

/* Checks that map is a mapping whose keys all appear in the NULL-terminated
 * list allowed, each at most once.  Otherwise -1 with "NAME:LINE:COL: unknown
 * key 'foo' in SECTION (expected one of: a, b, c)", "NAME:LINE:COL: duplicate
 * key 'a' in SECTION (first at line N)" or "NAME:LINE:COL: SECTION: expected
 * a mapping, got ...".  A NULL map (absent section) passes. */
int spw_ymap_check_keys(const spw_ydoc_t *d, const spw_ynode_t *map,
                        const char *section, const char *const *allowed,
                        spw_error_t *err);

#endif
