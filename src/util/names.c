/* names.c: NULL-terminated lists of names (see names.h). */
#include "util/names.h"

#include <stdio.h>
#include <stdlib.h>
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

/* The optimal string alignment distance between a and b (insertions,
 * deletions, substitutions, swaps of two neighbours; folded characters
 * equal at no cost); both at most 63 bytes, longer ones count as far. */
static size_t distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return (size_t)-1;
    size_t d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t cost = fold(a[i - 1]) != fold(b[j - 1]);
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
                fold(a[i - 2]) == fold(b[j - 1]) && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* The edits between want and name when name is close enough to be what
 * was meant (one edit in a name of 3 or more characters, else at most a
 * quarter of the longer one's characters changed, so "H200" is no typo of
 * "A100" while "A1OO", "kiy" of "key" and "usr" of "user" are), else
 * (size_t)-1. */
static size_t typo_distance(const char *want, const char *name)
{
    size_t d = distance(want, name), wl = strlen(want), nl = strlen(name);
    /* A prefix typed short ("max_gpus_pe") is close whatever its length. */
    if (wl >= 4 && strncmp(name, want, wl) == 0 && d > 1)
        d = 1;
    size_t longer = wl > nl ? wl : nl;
    return d * 4 <= longer || (d == 1 && longer >= 3) ? d : (size_t)-1;
}

/* spw_names_closest, or with lookalike != 0 spw_names_lookalike. */
static const char *closest(const char *const *names, size_t n, const char *want, int lookalike)
{
    static _Thread_local char fam[64];
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (size_t i = 0; i < n && (n != (size_t)-1 || names[i]); i++) {
        if (!names[i])
            continue;
        size_t d = lookalike ? (distance(want, names[i]) ? (size_t)-1 : 0)
                             : typo_distance(want, names[i]);
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
            d = lookalike ? (distance(want, head) ? (size_t)-1 : 0) : typo_distance(want, head);
            if (d < bd) {
                bd = d;
                memcpy(fam, head, f + 1);
                best = fam;
            }
        }
    }
    return best;
}

const char *spw_names_closest(const char *const *names, size_t n, const char *want)
{
    return closest(names, n, want, 0);
}

const char *spw_names_lookalike(const char *const *names, size_t n, const char *want)
{
    return closest(names, n, want, 1);
}

const char *spw_names_wrap(const char *const *names, size_t width, const char *indent,
                           char *buf, size_t len)
{
    if (len == 0)
        return buf;
    buf[0] = '\0';
    size_t used = 0, col = 0, ilen = strlen(indent);
    size_t icol = ilen - (strrchr(indent, '\n') ? (size_t)(strrchr(indent, '\n') - indent) + 1 : 0);
    for (size_t i = 0; names[i]; i++) {
        size_t nl = strlen(names[i]);
        int wrap = i && col + 2 + nl > width;
        size_t need = (i ? 2 : 0) + (wrap ? ilen : 0) + nl;
        /* Room for this name and, should more follow, ", and N more". */
        if (used + need + (names[i + 1] ? 18 : 0) + 1 > len) {
            size_t more = 0;
            while (names[i + more])
                more++;
            snprintf(buf + used, len - used, ", and %zu more", more);
            return buf;
        }
        if (i) {
            memcpy(buf + used, wrap ? "," : ", ", wrap ? 1 : 2);
            used += wrap ? 1 : 2;
            col += 2;
        }
        if (wrap) {
            memcpy(buf + used, indent, ilen);
            used += ilen;
            col = icol;
        }
        memcpy(buf + used, names[i], nl);
        used += nl;
        col += nl;
        buf[used] = '\0';
    }
    return buf;
}
