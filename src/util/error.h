/* error.h: the one error type every fallible spillway call fills.
 *
 * Functions return 0 / -1 (or a pointer / NULL) and, when err is not NULL,
 * write a sentence a user can act on into err->text.  Parse errors start with
 * "FILE:LINE:" (and ":COL:" when known).  On failure a function leaves no
 * side effects behind. */
#ifndef SPW_UTIL_ERROR_H
#define SPW_UTIL_ERROR_H

#include <stdarg.h>

typedef struct spw_error {
    char text[256];  /* NUL-terminated message, possibly truncated; room for a
                        config position wrapping a catalog file's position */
} spw_error_t;

/* Formats into err (NULL-safe) and returns -1, so callers can write
 * `return spw_errorf(err, "...")`. */
int spw_errorf(spw_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int spw_verrorf(spw_error_t *err, const char *fmt, va_list ap);

/* Allocation that aborts with a message on failure: spillway does not pretend
 * to recover from out-of-memory. */
void *spw_xmalloc(size_t n);
void *spw_xcalloc(size_t n, size_t size);
void *spw_xrealloc(void *p, size_t n);
char *spw_xstrdup(const char *s);
/* spw_xmalloc for arrays of many MB that are filled at once: in huge pages
 * where the kernel has them (THP in madvise mode), so filling them takes a
 * few page faults, not one per 4 KiB (each costs more than zeroing its page
 * on a virtual machine).  Freed with free(). */
void *spw_xmalloc_huge(size_t n);

#endif
