/* csv.h: a fast CSV tokenizer over a whole file held in memory (RFC 4180
 * quoting, "\n" or "\r\n" line ends, UTF-8 BOM skipped). */
#ifndef SPW_UTIL_CSV_H
#define SPW_UTIL_CSV_H

#include <stddef.h>

#include "util/error.h"

/* A reader.  The caller owns the struct (usually on the stack); the reader
 * owns buf and the field arrays until spw_csv_close().  Field pointers are
 * borrowed and stay valid until spw_csv_close(), even across later rows;
 * fields are NOT NUL-terminated.  Quoted fields are unquoted in place, so
 * buf no longer holds the original text after they are read. */
typedef struct spw_csv {
    const char *path;    /* file name for messages (borrowed) */
    char *buf;           /* file contents, owned, NUL-terminated */
    size_t len;          /* bytes in buf, excluding the NUL */
    size_t pos;          /* offset of the next byte to read */
    long line;           /* 1-based line number of the row last returned */
    long next_line;      /* 1-based line number of the byte at pos */
    const char **field;  /* start of each field of the last row (into buf) */
    size_t *field_len;   /* length of each field, bytes */
    size_t nfields;      /* fields in the last row */
    size_t cap;          /* capacity of field and field_len, entries */
    size_t map_len;      /* bytes of the file mapped at buf (spw_csv_open of a
                            regular file); 0 = buf is malloc'd */
} spw_csv_t;

/* Reads the whole file at path (borrowed for messages until close) into
 * memory.  Returns 0, or -1 with "PATH: cannot open: REASON" (or "cannot
 * read") in err and *c zeroed, so spw_csv_close(c) is harmless either way. */
int spw_csv_open(spw_csv_t *c, const char *path, spw_error_t *err);

/* As spw_csv_open, but a regular file is mapped (private, copy on write)
 * rather than copied: for big one-shot reads (a trace).  A file truncated
 * by another process while it is read ends the process with SIGBUS, so the
 * daemon's files (offers, prices: re-read on SIGHUP) never use it. */
int spw_csv_open_mapped(spw_csv_t *c, const char *path, spw_error_t *err);

/* Same over a copy of len bytes at data; name (borrowed until close) is used
 * in messages.  Never fails today, but returns 0 / -1 like spw_csv_open. */
int spw_csv_open_mem(spw_csv_t *c, const char *name, const char *data,
                     size_t len, spw_error_t *err);

/* Reads the next row into c->field / c->field_len / c->nfields and sets
 * c->line.  Fully empty lines are skipped; a final line without a newline is
 * a row; a field starting with '"' (after optional spaces) is quoted, may
 * contain commas, newlines and "" for a quote, and may be followed only by
 * spaces before the separator.  Returns 1 for a row, 0 at end of file, or -1
 * with "PATH:LINE: unterminated quoted field" or "PATH:LINE: unexpected
 * character after closing quote in field N"; after an error the reader is at
 * end of file. */
int spw_csv_next(spw_csv_t *c, spw_error_t *err);

/* Frees what the reader owns and zeroes it.  NULL-safe and idempotent. */
void spw_csv_close(spw_csv_t *c);

/* Index of the first field of the last row equal to name once surrounding
 * spaces and tabs are trimmed (meant for the header row), or -1. */
int spw_csv_field_index(const spw_csv_t *c, const char *name);

#endif
