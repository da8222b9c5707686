/* strbuf.h: a NUL-terminated string that grows as it is appended to, for
 * building command lines and scripts (the Slurm and ssh backends). */
#ifndef SPW_UTIL_STRBUF_H
#define SPW_UTIL_STRBUF_H

#include <stddef.h>

/* Zero-initialise ({0}) before use; the caller frees s. */
typedef struct spw_strbuf {
    char *s;                    /* owned text, NUL-terminated; NULL while empty */
    size_t len;                 /* bytes before the NUL */
    size_t cap;                 /* bytes allocated */
} spw_strbuf_t;

/* Appends n bytes of s. */
void spw_strbuf_addn(spw_strbuf_t *b, const char *s, size_t n);
/* Appends the string s. */
void spw_strbuf_add(spw_strbuf_t *b, const char *s);
/* Appends printf-formatted text. */
void spw_strbuf_printf(spw_strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s single-quoted for a POSIX shell ('it'\''s'). */
void spw_strbuf_quote(spw_strbuf_t *b, const char *s);

#endif
