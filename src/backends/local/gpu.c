/* gpu.c: counting this machine's NVIDIA GPUs with nvidia-smi, for the local
 * backend's on-prem slots. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/local/local.h"

extern char **environ;

static int fd_above_stdio(int fd)
{
    return fd >= 3 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* Returns a newly allocated dir[0..dlen) + "/" + name. */
static char *join_path(const char *dir, size_t dlen, const char *name)
{
    size_t nl = strlen(name);
    char *s = spw_xmalloc(dlen + nl + 2);
    memcpy(s, dir, dlen);
    s[dlen] = '/';
    memcpy(s + dlen + 1, name, nl + 1);
    return s;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Finds prog in the daemon's PATH; returns an allocated path or NULL. */
static char *path_search(const char *prog)
{
    const char *path = getenv("PATH"), *p;

    if (!path)
        path = "/usr/local/bin:/bin:/usr/bin";
    for (p = path;;) {
        const char *end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        char *cand = join_path(dlen ? p : ".", dlen ? dlen : 1, prog);
        struct stat sb;
        if (stat(cand, &sb) == 0 && S_ISREG(sb.st_mode) && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        if (!end)
            return NULL;
        p = end + 1;
    }
}

#define DETECT_TIMEOUT_S 10.0

int spw_local_detect_gpus(int *count, spw_error_t *err)
{
    char *exe = path_search("nvidia-smi");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int pipefd[2] = {-1, -1}, null_fd = -1, st = 0, timed_out = 0, n = 0, rc = -1;
    double deadline;
    pid_t pid;

    *count = 0;
    if (!exe)
        return spw_errorf(err, "nvidia-smi not found in PATH, so no GPUs were detected");
    if (pipe2(pipefd, O_CLOEXEC) < 0 || (null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        spw_errorf(err, "cannot run nvidia-smi: %s", strerror(errno));
        goto done;
    }
    pid = fork();
    if (pid < 0) {
        spw_errorf(err, "cannot run nvidia-smi: %s", strerror(errno));
        goto done;
    }
    if (pid == 0) {
        char *const argv[] = {"nvidia-smi", "--query-gpu=index", "--format=csv,noheader", NULL};
        int out = fd_above_stdio(pipefd[1]), in = fd_above_stdio(null_fd);
        if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
#ifdef CLOSE_RANGE_CLOEXEC
        close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
#endif
        execve(exe, argv, environ);
        _exit(127);
    }
    close(pipefd[1]);
    pipefd[1] = -1;
    deadline = mono_s() + DETECT_TIMEOUT_S;
    for (;;) {
        struct pollfd pfd = {pipefd[0], POLLIN, 0};
        double left = deadline - mono_s();
        ssize_t got;
        int pr;

        if (left <= 0) {
            timed_out = 1;
            break;
        }
        pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            continue;  /* the deadline check above ends the loop */
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            buf = spw_xrealloc(buf, cap);
        }
        got = read(pipefd[0], buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
        if (len > (1u << 20))
            break;  /* nobody has a megabyte of GPUs */
    }
    if (timed_out)
        kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!buf)
        buf = spw_xstrdup("");
    buf[len] = '\0';
    if (timed_out) {
        spw_errorf(err, "nvidia-smi did not answer within %.0f s", DETECT_TIMEOUT_S);
        goto done;
    }
    {
        /* First non-empty line, for messages. */
        char *first = buf + strspn(buf, " \t\r\n");
        int flen = (int)strcspn(first, "\r\n");
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            if (WIFEXITED(st))
                spw_errorf(err, "nvidia-smi failed (exit %d)%s%.*s", WEXITSTATUS(st),
                           flen ? ": " : "", flen, first);
            else
                spw_errorf(err, "nvidia-smi was killed by signal %d", WTERMSIG(st));
            goto done;
        }
    }
    for (char *line = buf; *line;) {
        size_t ll = strcspn(line, "\n");
        char *end = line + ll, *p = line;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p < end && *p != '\r') {
            char *q = p;
            while (q < end && *q >= '0' && *q <= '9')
                q++;
            if (q == p || (q < end && *q != '\r' && *q != ' ')) {
                spw_errorf(err, "nvidia-smi printed '%.*s' where a GPU index was expected",
                           (int)(end - p > 80 ? 80 : end - p), p);
                n = 0;
                goto done;
            }
            n++;
        }
        line = *end ? end + 1 : end;
    }
    *count = n;
    rc = 0;
done:
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    if (null_fd >= 0)
        close(null_fd);
    free(buf);
    free(exe);
    return rc;
}
