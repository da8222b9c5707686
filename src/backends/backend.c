/* backend.c: names of the backend interface's enums, the queue helper
 * of poll() and changed(), and the log writer with its size cap. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"

#define SPW_NAME_ENTRY(a, s) s,
static const char *const exit_kind_names[] = {SPW_EXIT_KINDS(SPW_NAME_ENTRY)};
static const char *const exit_cause_names[] = {SPW_EXIT_CAUSES(SPW_NAME_ENTRY)};

const char *spw_exit_kind_name(spw_exit_kind_t k)
{
    return (int)k >= 0 && k < SPW_EXIT_KIND_COUNT ? exit_kind_names[k] : "?";
}

const char *spw_exit_cause_name(spw_exit_cause_t c)
{
    return (int)c >= 0 && c < SPW_EXIT_CAUSE_COUNT ? exit_cause_names[c] : "?";
}

int spw_queue_take(void *queue, size_t *n, size_t elem, void *out, size_t max)
{
    size_t k = *n < max ? *n : max;
    if (k == 0)
        return 0;
    memcpy(out, queue, k * elem);
    memmove(queue, (char *)queue + k * elem, (*n - k) * elem);
    *n -= k;
    return (int)k;
}

int spw_env_passes(const char *const *pass, const char *entry)
{
    const char *eq = strchr(entry, '=');
    size_t nl = eq ? (size_t)(eq - entry) : strlen(entry);
    if (!pass)
        return 1;
    for (; *pass; pass++) {
        size_t pl = strlen(*pass);
        if (pl && (*pass)[pl - 1] == '*') {
            if (nl >= pl - 1 && strncmp(entry, *pass, pl - 1) == 0)
                return 1;
        } else if (pl == nl && strncmp(entry, *pass, nl) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Writes all of data[0..n) to fd, retrying short writes; stops at an error. */
static void write_all(int fd, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        data += w;
        n -= (size_t)w;
    }
}

void spw_log_write_capped(int fd, const char *data, size_t n, uint64_t *size, uint64_t cap)
{
    if (cap == 0) {
        write_all(fd, data, n);
        *size += n;
        return;
    }
    if (*size >= cap)
        return;
    uint64_t room = cap - *size;
    if (n <= room) {
        write_all(fd, data, n);
        *size += n;
        return;
    }
    write_all(fd, data, (size_t)room);
    *size = cap;
    /* The marker, its number formatted by hand (no stdio in a shim). */
    static const char head[] = "\n[spillway: log truncated at ";
    static const char tail[] = " bytes (daemon.max_log_bytes)]\n";
    char line[sizeof(head) + sizeof(tail) + 24], digits[24];
    size_t at = 0, nd = 0;
    memcpy(line, head, sizeof(head) - 1);
    at += sizeof(head) - 1;
    for (uint64_t v = cap; v || !nd; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        line[at++] = digits[--nd];
    memcpy(line + at, tail, sizeof(tail) - 1);
    at += sizeof(tail) - 1;
    write_all(fd, line, at);
}
