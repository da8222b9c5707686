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
