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

/* The name of the list closest to word by edit distance (insertions,
 * deletions, substitutions and swaps of two neighbours), when it is at
 * most a third of word's length away (at least 1, at most 3); else NULL.
 * Borrowed from names. */
const char *spw_names_closest(const char *const *names, const char *word);

/* As spw_names_join, but never cuts a name: the lines are wrapped before
 * width columns, each line after the first starting with indent (a string
 * such as "\n    "; width (size_t)-1: one line); a list that does not
 * fit len (at least 32) ends ", and N more" after the last whole name.
 * Returns buf. */
const char *spw_names_wrap(const char *const *names, size_t width, const char *indent,
                           char *buf, size_t len);

#endif
