/* names.c: NULL-terminated lists of names (see names.h). */
#include "util/names.h"

#include <stdio.h>
#include <string.h>

int spw_names_find(const char *const *names, const char *name)
{
    for (int i = 0; name && names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *spw_names_join(const char *const *names, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; names[i] && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

/* A character as a typo sees it: case folded, and the digits that look
 * like letters (0/O, 1/I/l) made one. */
static int fold(char c)
{
    c = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    return c == 'O' ? '0' : c == 'I' || c == 'L' ? '1' : c;
}

/* Levenshtein distance between a and b (each at most 63 bytes counted),
 * folded characters equal at no cost. */
static size_t distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 63 || nb > 63)
        return (size_t)-1;
    size_t row[64];
    for (size_t k = 0; k <= nb; k++)
        row[k] = k;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t k = 1; k <= nb; k++) {
            size_t up = row[k];
            size_t sub = diag + (fold(a[i - 1]) != fold(b[k - 1]));
            size_t best = up + 1 < row[k - 1] + 1 ? up + 1 : row[k - 1] + 1;
            row[k] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[nb];
}

const char *spw_names_closest(const char *const *names, size_t n, const char *want)
{
    static _Thread_local char fam[64];
    const char *best = NULL;
    size_t bd = (size_t)-1, limit = strlen(want) / 3 + 1;
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        size_t d = distance(want, names[i]);
        if (d < bd) {
            bd = d;
            best = names[i];
        }
        /* Its family too ("A100" of "A100-80GB"), which a job may name. */
        size_t f = strcspn(names[i], "-");
        if (names[i][f] && f < sizeof(fam)) {
            char head[64];
            memcpy(head, names[i], f);
            head[f] = '\0';
            if ((d = distance(want, head)) < bd) {
                bd = d;
                memcpy(fam, head, f + 1);
                best = fam;
            }
        }
    }
    return bd <= limit ? best : NULL;
}
