/* test_csv.c: util/csv tokenizer: quoting, line ends, BOM, empty lines,
 * line numbers, errors and header lookup. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "util/csv.h"

/* Field i of the last row as a NUL-terminated string (static buffer). */
static const char *f(const spw_csv_t *c, size_t i)
{
    static char buf[256];
    size_t n;

    if (i >= c->nfields)
        return NULL;
    n = c->field_len[i] < sizeof(buf) - 1 ? c->field_len[i]
                                          : sizeof(buf) - 1;
    memcpy(buf, c->field[i], n);
    buf[n] = '\0';
    return buf;
}

/* The last row joined with '|', for compact comparisons. */
static const char *row(const spw_csv_t *c)
{
    static char buf[1024];
    size_t i, used = 0;

    buf[0] = '\0';
    for (i = 0; i < c->nfields; i++)
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%.*s",
                                 i ? "|" : "", (int)c->field_len[i],
                                 c->field[i]);
    return buf;
}

static spw_csv_t open_str(const char *s)
{
    spw_csv_t c;
    spw_error_t err;
    if (spw_csv_open_mem(&c, "t.csv", s, strlen(s), &err) < 0)
        diag("open_mem failed: %s", err.text);
    return c;
}

int main(void)
{
    spw_csv_t c;
    spw_error_t err;
    char path[] = "/tmp/test_csv_XXXXXX";
    int fd, i;

    c = open_str("a,b,c\n1,2,3\n");
    is(spw_csv_next(&c, &err), 1, "first row");
    is((long)c.nfields, 3, "three fields");
    is_str(row(&c), "a|b|c", "header fields");
    is(c.line, 1, "line 1");
    is(spw_csv_field_index(&c, "b"), 1, "index of b");
    is(spw_csv_field_index(&c, "z"), -1, "index of a missing name");
    is(spw_csv_next(&c, &err), 1, "second row");
    is_str(row(&c), "1|2|3", "second row fields");
    is(c.line, 2, "line 2");
    is(spw_csv_next(&c, &err), 0, "end of file");
    is(spw_csv_next(&c, &err), 0, "end of file again");
    spw_csv_close(&c);
    spw_csv_close(&c);
    spw_csv_close(NULL);
    ok(1, "close is idempotent and NULL-safe");

    c = open_str("\xEF\xBB\xBF" "id , name\r\n\r\n\n1,\"x, \"\"y\"\"\"\r\n"
                 "2,last");
    is(spw_csv_next(&c, &err), 1, "BOM row");
    is_str(f(&c, 0), "id ", "BOM skipped, spaces kept in the field");
    is(spw_csv_field_index(&c, "id"), 0, "header lookup trims spaces");
    is(spw_csv_field_index(&c, "name"), 1, "header lookup trims spaces (2)");
    is(spw_csv_next(&c, &err), 1, "row after empty lines");
    is(c.line, 4, "empty lines still count");
    is_str(f(&c, 1), "x, \"y\"", "quoted field with comma and escapes");
    is((long)c.field_len[1], 6, "unquoted length");
    is(spw_csv_next(&c, &err), 1, "last line without newline");
    is_str(row(&c), "2|last", "last row fields");
    is(c.line, 5, "last line number");
    is(spw_csv_next(&c, &err), 0, "then end of file");
    spw_csv_close(&c);

    c = open_str("a,,c,\n,\n\"\"\n\"\",\"\"\n");
    spw_csv_next(&c, &err);
    is((long)c.nfields, 4, "empty fields count");
    is_str(row(&c), "a||c|", "empty middle and trailing fields");
    spw_csv_next(&c, &err);
    is_str(row(&c), "|", "a lone comma is two empty fields");
    spw_csv_next(&c, &err);
    is((long)c.nfields, 1, "empty quoted field is one field");
    is((long)c.field_len[0], 0, "of length 0");
    spw_csv_next(&c, &err);
    is_str(row(&c), "|", "two empty quoted fields");
    is((long)c.nfields, 2, "two of them");
    spw_csv_close(&c);

    c = open_str("x\r\n  \"q\"  ,\"multi\nline\",z\r\nnext\n");
    spw_csv_next(&c, &err);
    spw_csv_next(&c, &err);
    is_str(row(&c), "q|multi\nline|z", "spaces around quotes, newline in "
           "quotes");
    is(c.line, 2, "row line is where it starts");
    is(spw_csv_next(&c, &err), 1, "row after a multi-line field");
    is_str(row(&c), "next", "its field");
    is(c.line, 4, "line numbers account for the embedded newline");
    spw_csv_close(&c);

    c = open_str("a\r\nb\rc\r\n\"d\"\r\n");
    spw_csv_next(&c, &err);
    is_str(row(&c), "a", "CRLF stripped");
    spw_csv_next(&c, &err);
    is_str(row(&c), "b\rc", "a bare CR is data");
    spw_csv_next(&c, &err);
    is_str(row(&c), "d", "CRLF after a quoted field");
    is(spw_csv_next(&c, &err), 0, "end");
    spw_csv_close(&c);

    c = open_str("ok\n\nx,\"never closed\ny\n");
    spw_csv_next(&c, &err);
    is(spw_csv_next(&c, &err), -1, "unterminated quote is an error");
    is_str(err.text, "t.csv:3: unterminated quoted field",
           "unterminated quote message");
    is(spw_csv_next(&c, &err), 0, "after an error: end of file");
    spw_csv_close(&c);

    c = open_str("a\n\"b\"x,c\n");
    spw_csv_next(&c, &err);
    is(spw_csv_next(&c, &err), -1, "junk after a closing quote");
    is_str(err.text, "t.csv:2: unexpected character after closing quote in "
           "field 1", "junk message");
    spw_csv_close(&c);

    c = open_str("a\"b,c\"\n");
    spw_csv_next(&c, &err);
    is_str(row(&c), "a\"b|c\"", "quotes inside unquoted fields are data");
    spw_csv_close(&c);

    c = open_str("");
    is(spw_csv_next(&c, &err), 0, "empty input");
    spw_csv_close(&c);
    c = open_str("\xEF\xBB\xBF\n\r\n");
    is(spw_csv_next(&c, &err), 0, "only a BOM and empty lines");
    spw_csv_close(&c);

    /* Many columns: the field arrays grow. */
    {
        char big[4096];
        size_t used = 0;
        for (i = 0; i < 500; i++)
            used += (size_t)snprintf(big + used, sizeof(big) - used, "%s%d",
                                     i ? "," : "", i);
        c = open_str(big);
        spw_csv_next(&c, &err);
        is((long)c.nfields, 500, "500 fields");
        is_str(f(&c, 499), "499", "last of 500 fields");
        is(spw_csv_field_index(&c, "321"), 321, "lookup among 500");
        spw_csv_close(&c);
    }

    /* Files. */
    fd = mkstemp(path);
    ok(fd >= 0, "temporary file");
    if (write(fd, "h1,h2\n10,20\n", 12) != 12)
        diag("short write");
    close(fd);
    is(spw_csv_open(&c, path, &err), 0, "open a file");
    spw_csv_next(&c, &err);
    spw_csv_next(&c, &err);
    is_str(row(&c), "10|20", "row read from the file");
    ok(c.path == path, "path is borrowed");
    ok(c.map_len == 0, "spw_csv_open reads the file (the daemon's files may be rewritten)");
    spw_csv_close(&c);
    is(spw_csv_open_mapped(&c, path, &err), 0, "open a file mapped");
    spw_csv_next(&c, &err);
    spw_csv_next(&c, &err);
    is_str(row(&c), "10|20", "row read from the mapped file");
    ok(c.map_len == 12, "spw_csv_open_mapped maps a regular file, not read");
    spw_csv_close(&c);

    /* A mapped file: quoted fields are unquoted in the mapping, never in
     * the file; the text ends where the file does. */
    static const char quoted[] = "a,b\n\"x\"\"y\",\"tail\"";
    fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0 || write(fd, quoted, sizeof(quoted) - 1) != (ssize_t)(sizeof(quoted) - 1))
        diag("short write");
    close(fd);
    is(spw_csv_open_mapped(&c, path, &err), 0, "open a file with quoted fields");
    spw_csv_next(&c, &err);
    is(spw_csv_next(&c, &err), 1, "its row");
    is_str(row(&c), "x\"y|tail", "unquoted from a mapped file, last field ends at EOF");
    is(spw_csv_next(&c, &err), 0, "then the end");
    spw_csv_close(&c);
    char back[64] = "";
    fd = open(path, O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, back, sizeof(back) - 1) : -1;
    close(fd);
    ok(got == (ssize_t)(sizeof(quoted) - 1) && memcmp(back, quoted, sizeof(quoted) - 1) == 0,
       "the file itself is unchanged");

    /* A file of exactly one page has no byte after it to end the text:
     * it is read into memory instead. */
    long page = sysconf(_SC_PAGESIZE);
    char *big = malloc((size_t)page);
    memset(big, 'z', (size_t)page);
    memcpy(big, "k\n", 2);
    fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0 || write(fd, big, (size_t)page) != (ssize_t)page)
        diag("short write");
    close(fd);
    is(spw_csv_open_mapped(&c, path, &err), 0, "open a file of one page");
    ok(c.map_len == 0 && c.len == (size_t)page && c.buf[page] == '\0',
       "a page-sized file is read, NUL-terminated");
    spw_csv_next(&c, &err);
    is(spw_csv_next(&c, &err), 1, "its last row");
    ok(c.field_len[0] == (size_t)page - 2, "the last row runs to the end of the file");
    spw_csv_close(&c);
    free(big);
    unlink(path);
    is(spw_csv_open(&c, path, &err), -1, "open a missing file");
    ok(strstr(err.text, ": cannot open: No such file or directory") != NULL &&
       strncmp(err.text, path, strlen(path)) == 0,
       "missing file message: %s", err.text);
    is(spw_csv_next(&c, &err), 0, "a failed open reads as empty");
    spw_csv_close(&c);
    is(spw_csv_open(&c, "/tmp", &err), -1, "open a directory");
    is_str(err.text, "/tmp: cannot open: Is a directory", "directory message");
    return done_testing();
}
