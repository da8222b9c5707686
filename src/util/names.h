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

#endif
