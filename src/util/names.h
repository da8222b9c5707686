/* names.h: NULL-terminated lists of names, as registries and config keys
 * keep them: look one up, and list them all for a message. */
#ifndef SPW_UTIL_NAMES_H
#define SPW_UTIL_NAMES_H

#include <stddef.h>

/* The index of `name` in the NULL-terminated list `names`, or -1 (also
 * for a NULL name). */
int spw_names_find(const char *const *names, const char *name);

/* "a, b, c": the names of a NULL-terminated list, into buf (len bytes,
 * truncated to fit, always terminated); returns buf. */
const char *spw_names_join(const char *const *names, char *buf, size_t len);

/* The name of names[0..n) (NULL entries skipped; n (size_t)-1: up to the
 * NULL that ends the list) closest to `want` as a typo: fewest edits
 * (insertions, deletions, substitutions, swaps of two neighbours), case and
 * the look-alikes 0/O and 1/I/l not counted, a prefix of 4 or more
 * characters typed short counted as one; NULL when even the closest needs
 * more than one edit and more than a quarter of the longer one's length (a
 * close misspelling only: "A1OO" and "a100" find "A100", "kiy" finds "key",
 * "H200" finds nothing; for GPU models see spw_names_lookalike); a name's family (the
 * part before a '-': "A100" of "A100-80GB") counts as a name too (then the
 * answer lives in thread-local storage until the next call).  For "did you
 * mean". */
const char *spw_names_closest(const char *const *names, size_t n, const char *want);

/* As spw_names_closest, but only a name (or family) that `want` spells
 * with other case or look-alikes ("a100", "A1OO" for "A100"): for names
 * such as GPU models, where one character more or less is another real
 * name ("H100", "A10" and "L4" are no typos of "A100" and "T4"). */
const char *spw_names_lookalike(const char *const *names, size_t n, const char *want);

/* As spw_names_join, but never cuts a name: the lines are wrapped before
 * width columns, each line after the first starting with indent (a string
 * such as "\n    "; width (size_t)-1: one line); a list that does not
 * fit len (at least 32) ends ", and N more" after the last whole name.
 * Returns buf. */
const char *spw_names_wrap(const char *const *names, size_t width, const char *indent,
                           char *buf, size_t len);

#endif
