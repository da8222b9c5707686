/* file.c: whole-file reads for the CSV and YAML readers. */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"

int spw_safe_name(const char *s, size_t max)
{
    size_t n = 0;
    if (!s || !*s || s[0] == '.')
        return 0;
    for (const char *p = s; *p; p++, n++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return n < max;
}

char *spw_read_file(const char *path, size_t *out_len, spw_error_t *err)
{
    struct stat st;
    size_t len = 0, cap;
    int saved;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        spw_errorf(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0)
        saved = errno;
    else if (S_ISDIR(st.st_mode))
        saved = EISDIR;
    else
        saved = 0;
    if (saved) {
        close(fd);
        spw_errorf(err, "%s: cannot open: %s", path, strerror(saved));
        return NULL;
    }
    /* One spare byte for the NUL. */
    cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
    char *buf = spw_xmalloc(cap);
    for (;;) {
        if (len + 1 == cap) {
            cap *= 2;
            buf = spw_xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            saved = errno;
            free(buf);
            close(fd);
            spw_errorf(err, "%s: cannot read: %s", path, strerror(saved));
            return NULL;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    *out_len = len;
    return buf;
}
