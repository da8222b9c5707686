/* strbuf.c: a growable NUL-terminated string (see strbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/strbuf.h"

void spw_strbuf_addn(spw_strbuf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2 + 64;
        b->s = spw_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void spw_strbuf_add(spw_strbuf_t *b, const char *s)
{
    spw_strbuf_addn(b, s, strlen(s));
}

void spw_strbuf_printf(spw_strbuf_t *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(tmp)) {
        spw_strbuf_addn(b, tmp, (size_t)n);
        return;
    }
    char *big = spw_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    spw_strbuf_addn(b, big, (size_t)n);
    free(big);
}

void spw_strbuf_quote(spw_strbuf_t *b, const char *s)
{
    spw_strbuf_add(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            spw_strbuf_add(b, "'\\''");
        else
            spw_strbuf_addn(b, p, 1);
    }
    spw_strbuf_add(b, "'");
}
