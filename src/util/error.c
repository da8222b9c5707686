/* error.c: error formatting and aborting allocators. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "error.h"

int spw_verrorf(spw_error_t *err, const char *fmt, va_list ap)
{
    if (err)
        vsnprintf(err->text, sizeof(err->text), fmt, ap);
    return -1;
}

int spw_errorf(spw_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    spw_verrorf(err, fmt, ap);
    va_end(ap);
    return -1;
}

static void oom(size_t n)
{
    fprintf(stderr, "spillway: out of memory allocating %zu bytes\n", n);
    abort();
}

void *spw_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *spw_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *spw_xmalloc_huge(size_t n)
{
    const size_t huge = (size_t)2 << 20;
    if (n < huge)
        return spw_xmalloc(n);
    void *p = aligned_alloc(huge, (n + huge - 1) & ~(huge - 1));
    if (!p)
        return spw_xmalloc(n);
#ifdef MADV_HUGEPAGE
    madvise(p, (n + huge - 1) & ~(huge - 1), MADV_HUGEPAGE);   /* advice only */
#endif
    return p;
}

void *spw_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *spw_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = spw_xmalloc(n);
    memcpy(p, s, n);
    return p;
}
