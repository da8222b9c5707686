/* backend.c: names of the backend interface's enums, and the queue helper
 * of poll() and changed(). */
#include <string.h>

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
