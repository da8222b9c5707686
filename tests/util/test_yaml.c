/* test_yaml.c: util/yaml tree building, positions, typed getters and the
 * error messages config loaders rely on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "util/names.h"
#include "util/yaml.h"

static spw_ydoc_t *load(const char *s, spw_error_t *err)
{
    return spw_ydoc_load_mem("c.yaml", s, strlen(s), err);
}

/* Loads s expecting failure; returns the message (static). */
static const char *load_fail(const char *s)
{
    static spw_error_t err;
    spw_ydoc_t *d;

    strcpy(err.text, "(no error)");
    d = load(s, &err);
    if (d) {
        spw_ydoc_destroy(d);
        return "(loaded)";
    }
    return err.text;
}

static const char *const cluster_keys[] = {"name", "gpus", "price", NULL};

/* util/names: the nearest name, and lists wrapped and never cut. */
static void test_names(void)
{
    static const char *const names[] = {"listen", "state_dir", "max_gpus_per_job",
                                         "max_instances_per_job", "run_as", NULL};
    is_str(spw_names_closest(names, (size_t)-1, "max_gpus_pe"), "max_gpus_per_job", "a prefix typed short");
    is_str(spw_names_closest(names, (size_t)-1, "lsiten"), "listen", "two letters swapped");
    is_str(spw_names_closest(names, (size_t)-1, "stat_dir"), "state_dir", "a letter left out");
    ok(spw_names_closest(names, (size_t)-1, "zzz") == NULL, "nothing near: no suggestion");
    /* Issue 24: GPU models: a close misspelling only, never another real
     * model that merely shares half its characters. */
    static const char *const models[] = {"A100-80GB", "L40S", "T4", NULL};
    is_str(spw_names_closest(models, (size_t)-1, "A1OO"), "A100", "A1OO: A100 (O for 0)");
    is_str(spw_names_closest(models, (size_t)-1, "a100"), "A100", "a100: A100 (case)");
    ok(spw_names_closest(models, (size_t)-1, "H200") == NULL, "H200: no A100 (2 of 4 differ)");
    ok(spw_names_closest(models, (size_t)-1, "L4") == NULL, "L4: no T4 (1 of 2 differs)");
    /* GPU models are dense: one character is another real model (A10,
     * H100, L40, L4), so a model is suggested only when spelled alike. */
    is_str(spw_names_lookalike(models, (size_t)-1, "A1OO"), "A100", "lookalike: A1OO is A100");
    is_str(spw_names_lookalike(models, (size_t)-1, "a100-80gb"), "A100-80GB",
           "lookalike: a100-80gb is A100-80GB");
    is_str(spw_names_lookalike(models, (size_t)-1, "l40s"), "L40S", "lookalike: l40s is L40S");
    ok(!spw_names_lookalike(models, (size_t)-1, "H100") &&
           !spw_names_lookalike(models, (size_t)-1, "A10") &&
           !spw_names_lookalike(models, (size_t)-1, "L40") &&
           !spw_names_lookalike(models, (size_t)-1, "L4"),
       "lookalike: H100, A10, L40 and L4 are other models, not typos");
    static const char *const keys[] = {"user", "key", "gpus", "subnets", NULL};
    is_str(spw_names_closest(keys, (size_t)-1, "usr"), "user", "usr: user");
    is_str(spw_names_closest(keys, (size_t)-1, "gpu"), "gpus", "gpu: gpus");
    is_str(spw_names_closest(keys, (size_t)-1, "kiy"), "key", "kiy: key (one edit)");
    ok(spw_names_closest(keys, (size_t)-1, "kxz") == NULL, "kxz: no key (2 of 3 differ)");
    char buf[64];
    is_str(spw_names_wrap(names, (size_t)-1, "", buf, 40), "listen, state_dir, and 3 more",
           "a list that does not fit ends with whole names and a count");
    char wide[128];
    is_str(spw_names_wrap(names, 30, "\n  ", wide, sizeof(wide)),
           "listen, state_dir,\n  max_gpus_per_job,\n  max_instances_per_job,\n  run_as",
           "wrapped before 30 columns, the next lines indented");
}

int main(void)
{
    test_names();
    spw_error_t err;
    spw_ydoc_t *d;
    spw_ynode_t *root, *n, *seq;
    const char *s;
    double x;
    long l;
    int b, i;
    char buf[4096];

    d = load("# comment\n"
             "cluster:\n"
             "  name: alpha\n"
             "  gpus: 8\n"
             "  price: 2.5\n"
             "pools:\n"
             "  - id: p1\n"
             "    spot: yes\n"
             "  - [1, 2, {k: v}]\n"
             "quoted: \"a: b\"\n"
             "empty:\n", &err);
    ok(d != NULL, "nested document loads");
    if (!d) {
        diag("%s", err.text);
        return done_testing();
    }
    is_str(spw_ydoc_name(d), "c.yaml", "name");
    root = spw_ydoc_root(d);
    ok(root && root->kind == SPW_Y_MAP, "root is a map");
    is((long)root->n, 4, "four top-level keys");
    is_str(root->keys[0], "cluster", "first key");
    is(root->key_lines[0], 2, "first key line");
    is(root->key_cols[0], 1, "first key column");
    is(root->key_lines[1], 6, "second key line");
    n = spw_ymap_get(root, "cluster");
    ok(n && n->kind == SPW_Y_MAP, "cluster is a map");
    is(n->line, 3, "cluster map starts on line 3");
    is(n->col, 3, "at column 3");
    ok(spw_ymap_get(n, "missing") == NULL, "missing key is NULL");
    ok(spw_ymap_get(NULL, "x") == NULL, "get on NULL is NULL");
    ok(spw_ymap_get(spw_ymap_get(n, "name"), "x") == NULL,
       "get on a scalar is NULL");
    is(spw_ynode_str(d, spw_ymap_get(n, "name"), "name", &s, &err), 0,
       "str getter");
    is_str(s, "alpha", "name value");
    is(spw_ynode_int(d, spw_ymap_get(n, "gpus"), "gpus", &l, &err), 0,
       "int getter");
    is(l, 8, "gpus value");
    is(spw_ynode_double(d, spw_ymap_get(n, "price"), "price", &x, &err), 0,
       "double getter");
    is_double(x, 2.5, 0, "price value");
    is(spw_ynode_double(d, spw_ymap_get(n, "gpus"), "gpus", &x, &err), 0,
       "an integer is a number");
    is(spw_ymap_check_keys(d, n, "cluster", cluster_keys, &err), 0,
       "check_keys passes");
    is(spw_ymap_check_keys(d, NULL, "cluster", cluster_keys, &err), 0,
       "check_keys on an absent section passes");

    seq = spw_ymap_get(root, "pools");
    ok(seq && seq->kind == SPW_Y_SEQ, "pools is a seq");
    is((long)seq->n, 2, "two pools");
    ok(seq->keys == NULL, "a seq has no keys");
    is(seq->items[0]->line, 7, "first item line");
    is(seq->items[0]->col, 5, "first item column");
    is(spw_ynode_bool(d, spw_ymap_get(seq->items[0], "spot"), "spot", &b,
                      &err), 0, "bool getter");
    is(b, 1, "yes is true");
    n = seq->items[1];
    ok(n->kind == SPW_Y_SEQ && n->n == 3, "flow sequence");
    is(n->col, 5, "flow sequence column");
    ok(n->items[2]->kind == SPW_Y_MAP, "flow map inside it");
    is_str(spw_ymap_get(n->items[2], "k")->str, "v", "flow map value");
    is(n->items[2]->col, 12, "flow map column");
    is_str(spw_ymap_get(root, "quoted")->str, "a: b", "quoted scalar");
    n = spw_ymap_get(root, "empty");
    ok(n && n->kind == SPW_Y_SCALAR && n->str[0] == '\0',
       "an empty value is an empty scalar");

    /* Type errors. */
    n = spw_ymap_get(root, "cluster");
    is(spw_ynode_int(d, spw_ymap_get(n, "name"), "gpus", &l, &err), -1,
       "int from a word fails");
    is_str(err.text, "c.yaml:3:9: gpus: expected an integer, got 'alpha'",
           "int error text");
    is(spw_ynode_int(d, spw_ymap_get(n, "price"), "gpus", &l, &err), -1,
       "int from a decimal fails");
    is(spw_ynode_double(d, spw_ymap_get(n, "name"), "price", &x, &err), -1,
       "double from a word fails");
    is_str(err.text, "c.yaml:3:9: price: expected a number, got 'alpha'",
           "double error text");
    is(spw_ynode_double(d, seq, "price", &x, &err), -1,
       "double from a seq fails");
    is_str(err.text, "c.yaml:7:3: price: expected a number, got a sequence",
           "non-scalar error text");
    is(spw_ynode_str(d, n, "name", &s, &err), -1, "str from a map fails");
    is_str(err.text, "c.yaml:3:3: name: expected a string, got a mapping",
           "str error text");
    is(spw_ynode_bool(d, spw_ymap_get(n, "gpus"), "spot", &b, &err), -1,
       "bool from a number fails");
    is_str(err.text, "c.yaml:4:9: spot: expected true or false, got '8'",
           "bool error text");
    is(spw_ynode_int(d, NULL, "gpus", &l, &err), -1, "NULL node fails");
    is_str(err.text, "c.yaml: gpus: missing value", "missing value text");
    is(spw_ymap_check_keys(d, seq, "pools", cluster_keys, &err), -1,
       "check_keys on a seq fails");
    is_str(err.text, "c.yaml:7:3: pools: expected a mapping, got a sequence",
           "check_keys type text");
    spw_ydoc_destroy(d);
    spw_ydoc_destroy(NULL);

    /* Unknown and duplicate keys. */
    d = load("cluster:\n  name: a\n  gpu: 4\n", &err);
    n = spw_ymap_get(spw_ydoc_root(d), "cluster");
    is(spw_ymap_check_keys(d, n, "cluster", cluster_keys, &err), -1,
       "unknown key fails");
    is_str(err.text, "c.yaml:3:3: unknown key 'gpu' in cluster: did you mean 'gpus'? "
           "(expected one of: name, gpus, price)", "unknown key text has line and column");
    spw_ydoc_destroy(d);
    d = load("name: a\ngpus: 1\nname: b\n", &err);
    is(spw_ymap_check_keys(d, spw_ydoc_root(d), "top", cluster_keys, &err),
       -1, "duplicate key fails");
    is_str(err.text, "c.yaml:3:1: duplicate key 'name' in top (first at line "
           "1)", "duplicate key text");
    spw_ydoc_destroy(d);

    /* Scalars the getters accept or refuse. */
    d = load("[true, FALSE, No, 'yes', 1e3, -0.5, ' 7 ', 0x1F, .inf, "
             "99999999999999999999]", &err);
    root = spw_ydoc_root(d);
    ok(spw_ynode_bool(d, root->items[0], "b", &b, &err) == 0 && b == 1,
       "true");
    ok(spw_ynode_bool(d, root->items[1], "b", &b, &err) == 0 && b == 0,
       "FALSE");
    ok(spw_ynode_bool(d, root->items[2], "b", &b, &err) == 0 && b == 0,
       "No");
    ok(spw_ynode_bool(d, root->items[3], "b", &b, &err) == 0 && b == 1,
       "quoted 'yes'");
    ok(spw_ynode_double(d, root->items[4], "x", &x, &err) == 0 && x == 1000,
       "1e3");
    ok(spw_ynode_double(d, root->items[5], "x", &x, &err) == 0 && x == -0.5,
       "-0.5");
    ok(spw_ynode_int(d, root->items[6], "x", &l, &err) == 0 && l == 7,
       "' 7 ' with spaces");
    ok(spw_ynode_int(d, root->items[7], "x", &l, &err) == -1, "hex refused");
    ok(spw_ynode_double(d, root->items[8], "x", &x, &err) == -1,
       ".inf refused");
    ok(spw_ynode_int(d, root->items[9], "x", &l, &err) == -1,
       "overflow refused");
    spw_ydoc_destroy(d);

    /* Empty documents. */
    d = load("", &err);
    ok(d && spw_ydoc_root(d) == NULL, "empty input: NULL root");
    spw_ydoc_destroy(d);
    d = load("# only a comment\n", &err);
    ok(d && spw_ydoc_root(d) == NULL, "only a comment: NULL root");
    spw_ydoc_destroy(d);
    d = load("---\n...\n", &err);
    ok(d && spw_ydoc_root(d) == NULL, "explicit empty document: NULL root");
    spw_ydoc_destroy(d);
    d = load("''", &err);
    ok(d && spw_ydoc_root(d) && spw_ydoc_root(d)->str[0] == '\0',
       "a quoted empty string is not empty");
    spw_ydoc_destroy(d);

    /* Syntax and structure errors. */
    s = load_fail("a: b\nc: [1, 2\n");
    ok(strncmp(s, "c.yaml:3:1: did not find expected ',' or ']'", 44) == 0,
       "unclosed flow seq: %s", s);
    s = load_fail("a:\n  b: 1\n c: 2\n");
    ok(strncmp(s, "c.yaml:3:", 9) == 0, "bad indentation has line: %s", s);
    s = load_fail("a: b: c\n");
    is_str(s, "c.yaml:1:5: mapping values are not allowed in this context",
           "mapping value error text");
    s = load_fail("a: \"unterminated\n");
    ok(strstr(s, "c.yaml:2:1: found unexpected end of stream (while "
              "scanning a quoted scalar at line 1)") != NULL,
       "context is mentioned: %s", s);
    s = load_fail("base: &b {x: 1}\nother: *b\n");
    is_str(s, "c.yaml:1:7: anchors (&name) are not supported",
           "anchor rejected");
    s = load_fail("other: *b\n");
    is_str(s, "c.yaml:1:8: aliases (*name) are not supported",
           "alias rejected");
    s = load_fail("a: 1\n---\nb: 2\n");
    is_str(s, "c.yaml:2:1: only one YAML document is allowed per file",
           "second document rejected");
    s = load_fail("? [a, b]\n: c\n");
    is_str(s, "c.yaml:1:3: mapping keys must be plain scalars",
           "complex key rejected");
    s = load_fail("{? {a: 1} : 2}");
    is_str(s, "c.yaml:1:4: mapping keys must be plain scalars",
           "complex flow key rejected");
    s = load_fail("a: \"x\\0y\"\n");
    is_str(s, "c.yaml:1:4: NUL characters are not allowed in scalars",
           "NUL in a scalar rejected");
    s = load_fail("a: \xff\n");
    ok(strncmp(s, "c.yaml: byte 3: ", 16) == 0, "bad UTF-8: %s", s);

    /* Depth cap: 64 levels load, 65 do not. */
    for (i = 0; i < 64; i++)
        buf[i] = '[';
    for (i = 0; i < 64; i++)
        buf[64 + i] = ']';
    buf[128] = '\0';
    d = load(buf, &err);
    ok(d != NULL, "64 levels of nesting load");
    spw_ydoc_destroy(d);
    for (i = 0; i < 1000; i++)
        buf[i] = '[';
    buf[1000] = '\0';
    s = load_fail(buf);
    is_str(s, "c.yaml:1:65: nesting is deeper than 64 levels",
           "depth cap message");

    /* Node cap: a flow seq of 1,000,000 items loads, one more does not. */
    {
        size_t cap = 2 * 1000001 + 3, len = 0;
        char *big = malloc(cap);
        big[len++] = '[';
        for (i = 0; i < 999999; i++) {
            big[len++] = '1';
            big[len++] = ',';
        }
        big[len++] = ']';
        d = spw_ydoc_load_mem("big.yaml", big, len, &err);
        ok(d && spw_ydoc_root(d)->n == 999999, "1,000,000 nodes load");
        spw_ydoc_destroy(d);
        memcpy(big + len - 1, "1,1]", 4);
        len += 3;
        d = spw_ydoc_load_mem("big.yaml", big, len, &err);
        ok(d == NULL && strstr(err.text, "too many nodes") != NULL,
           "1,000,002 nodes refused: %s", d ? "(loaded)" : err.text);
        spw_ydoc_destroy(d);
        free(big);
    }

    /* Files. */
    {
        char path[] = "/tmp/test_yaml_XXXXXX";
        int fd = mkstemp(path);
        const char *text = "a: 1\nb: [x]\n";
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
            diag("cannot write %s", path);
        close(fd);
        d = spw_ydoc_load_file(path, &err);
        ok(d && spw_ymap_get(spw_ydoc_root(d), "b")->n == 1, "load a file");
        is_str(spw_ydoc_name(d), path, "file name is the path");
        spw_ydoc_destroy(d);
        unlink(path);
        d = spw_ydoc_load_file(path, &err);
        ok(d == NULL && strstr(err.text, "cannot open: No such file") &&
           strncmp(err.text, path, strlen(path)) == 0,
           "missing file: %s", err.text);
    }
    return done_testing();
}
