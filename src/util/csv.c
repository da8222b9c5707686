/* csv.c: CSV tokenizer.  Unquoted fields are found with memchr and never
 * copied; quoted fields are unquoted in place, which only ever shrinks them,
 * so every field pointer stays inside buf. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/csv.h"
#include "util/file.h"

static void push_field(spw_csv_t *c, const char *start, size_t len)
{
    if (c->nfields == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->field = spw_xrealloc(c->field, c->cap * sizeof(*c->field));
        c->field_len = spw_xrealloc(c->field_len,
                                    c->cap * sizeof(*c->field_len));
    }
    c->field[c->nfields] = start;
    c->field_len[c->nfields] = len;
    c->nfields++;
}

static void init_reader(spw_csv_t *c, const char *name, char *buf,
                        size_t len)
{
    memset(c, 0, sizeof(*c));
    c->path = name;
    c->buf = buf;
    c->len = len;
    c->next_line = 1;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        c->pos = 3;
}

/* Maps a regular file privately (the tokenizer unquotes in place: those
 * pages are copied on write), so a large trace is neither copied nor zeroed
 * before it is read.  Only when its size is not a multiple of the page size:
 * the rest of the last page reads as zeros, which is the NUL after the text.
 * Returns NULL to read the file instead. */
static char *map_file(const char *path, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && page > 0
        && st.st_size % page != 0) {
        p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
                 fd, 0);
        if (p == MAP_FAILED)
            p = NULL;
        else {
            *len = (size_t)st.st_size;
            /* Read ahead; no MAP_POPULATE: it would write-fault (copy) every
             * page of a writable mapping, where reading maps the page cache. */
            madvise(p, *len, MADV_SEQUENTIAL | MADV_WILLNEED);
        }
    }
    close(fd);
    return p;
}

int spw_csv_open_mapped(spw_csv_t *c, const char *path, spw_error_t *err)
{
    size_t len;
    memset(c, 0, sizeof(*c));
    char *buf = map_file(path, &len);
    if (buf) {
        init_reader(c, path, buf, len);
        c->map_len = len;
        return 0;
    }
    return spw_csv_open(c, path, err);
}

int spw_csv_open(spw_csv_t *c, const char *path, spw_error_t *err)
{
    size_t len;
    memset(c, 0, sizeof(*c));
    char *buf = spw_read_file(path, &len, err);
    if (!buf)
        return -1;
    init_reader(c, path, buf, len);
    return 0;
}

int spw_csv_open_mem(spw_csv_t *c, const char *name, const char *data,
                     size_t len, spw_error_t *err)
{
    char *buf = spw_xmalloc(len + 1);

    (void)err;
    if (len)
        memcpy(buf, data, len);
    buf[len] = '\0';
    init_reader(c, name, buf, len);
    return 0;
}

void spw_csv_close(spw_csv_t *c)
{
    if (!c)
        return;
    if (c->map_len)
        munmap(c->buf, c->map_len);
    else
        free(c->buf);
    free(c->field);
    free(c->field_len);
    memset(c, 0, sizeof(*c));
}

/* Counts newlines in [p, e) for line numbers inside quoted fields. */
static long count_newlines(const char *p, const char *e)
{
    long n = 0;
    while (p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

/* Reads the quoted field whose opening quote is at q, unquoting it in place
 * starting at q.  Returns the position just past the closing quote, or NULL
 * if the file ends first. */
static char *read_quoted(spw_csv_t *c, char *q, size_t *out_len)
{
    char *end = c->buf + c->len;
    char *r = q + 1;  /* next byte to read */
    char *w = q;      /* next byte to write */

    for (;;) {
        char *close = memchr(r, '"', (size_t)(end - r));
        size_t chunk;
        if (!close)
            return NULL;
        chunk = (size_t)(close - r);
        c->next_line += count_newlines(r, close);
        memmove(w, r, chunk);
        w += chunk;
        if (close + 1 < end && close[1] == '"') {
            *w++ = '"';
            r = close + 2;
        } else {
            *out_len = (size_t)(w - q);
            return close + 1;
        }
    }
}

int spw_csv_next(spw_csv_t *c, spw_error_t *err)
{
    char *end, *p, *eol = NULL;
    long start_line;

    c->nfields = 0;
    if (!c->buf)
        return 0;
    end = c->buf + c->len;
    p = c->buf + c->pos;

    /* Skip fully empty lines, counting them. */
    for (;;) {
        if (p < end && *p == '\n') {
            p++;
        } else if (p + 1 < end && p[0] == '\r' && p[1] == '\n') {
            p += 2;
        } else {
            break;
        }
        c->next_line++;
    }
    if (p >= end) {
        c->pos = c->len;
        return 0;
    }
    start_line = c->next_line;

    for (;;) {
        char *q = p;

        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (q < end && *q == '"') {
            size_t flen;
            char *after = read_quoted(c, q, &flen);
            if (!after) {
                c->pos = c->len;
                c->nfields = 0;
                return spw_errorf(err, "%s:%ld: unterminated quoted field",
                                  c->path, start_line);
            }
            push_field(c, q, flen);
            while (after < end && (*after == ' ' || *after == '\t'))
                after++;
            eol = NULL;  /* the quoted field may have spanned lines */
            if (after < end && *after == ',') {
                p = after + 1;
                continue;
            }
            if (after + 1 < end && after[0] == '\r' && after[1] == '\n')
                after++;
            if (after >= end || *after == '\n') {
                p = after < end ? after + 1 : end;
                break;
            }
            spw_errorf(err, "%s:%ld: unexpected character after closing "
                       "quote in field %zu", c->path, c->next_line,
                       c->nfields);
            c->pos = c->len;
            c->nfields = 0;
            return -1;
        } else {
            char *comma;
            if (!eol) {
                eol = memchr(p, '\n', (size_t)(end - p));
                if (!eol)
                    eol = end;
            }
            comma = memchr(p, ',', (size_t)(eol - p));
            if (comma) {
                push_field(c, p, (size_t)(comma - p));
                p = comma + 1;
                continue;
            }
            push_field(c, p, (size_t)(eol - p) -
                       (eol > p && eol[-1] == '\r' && eol < end));
            p = eol < end ? eol + 1 : end;
            break;
        }
    }
    c->line = start_line;
    c->next_line++;
    c->pos = (size_t)(p - c->buf);
    return 1;
}

int spw_csv_field_index(const spw_csv_t *c, const char *name)
{
    size_t i, nlen = strlen(name);

    for (i = 0; i < c->nfields; i++) {
        const char *b = c->field[i];
        const char *e = b + c->field_len[i];
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if ((size_t)(e - b) == nlen && memcmp(b, name, nlen) == 0)
            return i > (size_t)0x7fffffff ? -1 : (int)i;
    }
    return -1;
}
