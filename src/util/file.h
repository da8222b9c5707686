/* file.h: reading a whole file into memory. */
#ifndef SPW_UTIL_FILE_H
#define SPW_UTIL_FILE_H

#include <stddef.h>

#include "util/error.h"

/* Reads the file at path into a new NUL-terminated buffer (caller frees)
 * and stores its length in *len.  Regular files take one read; pipes grow
 * the buffer as they go.  NULL with "PATH: cannot open: ..." or "PATH:
 * cannot read: ..." in err on failure. */
char *spw_read_file(const char *path, size_t *len, spw_error_t *err);

/* Whether s is a name that is safe inside a file name: non-empty, shorter
 * than max bytes, only [A-Za-z0-9._-], and not starting with '.'. */
int spw_safe_name(const char *s, size_t max);

#endif
