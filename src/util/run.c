/* run.c: running a program to its end with a bounded runtime (run.h). */
#include "util/run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/strbuf.h"

extern char **environ;

/* Monotonic seconds: only to bound a child's runtime (the daemon's clock
 * stays the only time of jobs and syncs). */
static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int spw_run(const spw_run_t *r, char **out, spw_error_t *err)
{
    if (out)
        *out = NULL;
    const char *const *argv = r->argv;
    const char *in = r->in;
    const char *name = r->name ? r->name : argv[0];
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
    if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (pin[i] >= 0)
                close(pin[i]);
            if (pout[i] >= 0)
                close(pout[i]);
            if (perr[i] >= 0)
                close(perr[i]);
        }
        return spw_errorf(err, "cannot run %s: pipe: %s", name, strerror(e));
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pin[0]), close(pin[1]), close(pout[0]), close(pout[1]);
        close(perr[0]), close(perr[1]);
        return spw_errorf(err, "cannot run %s: fork: %s", name, strerror(e));
    }
    if (pid == 0) {
        /* Only async-signal-safe calls from here to exec. */
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        dup2(perr[1], 2);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
        char *const *envp = r->envp ? r->envp : environ;
        if (r->search_path)
            execvpe(r->path, (char *const *)argv, envp);
        else
            execve(r->path, (char *const *)argv, envp);
        static const char msg[] = "exec failed\n";
        ssize_t w = write(2, msg, sizeof(msg) - 1);
        (void)w;
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    spw_strbuf_t ob = {0}, eb = {0};
    size_t inlen = in ? strlen(in) : 0, inoff = 0;
    if (!in) {
        close(pin[1]);
        pin[1] = -1;
    } else {
        fcntl(pin[1], F_SETFL, O_NONBLOCK);
    }
    double deadline = mono_s() + r->timeout_s;
    int timed_out = 0, open_out = 1, open_err = 1;
    while (open_out || open_err || pin[1] >= 0) {
        struct pollfd fds[3];
        int nf = 0, iout = -1, ierr = -1, iin = -1;
        if (open_out)
            fds[iout = nf++] = (struct pollfd){.fd = pout[0], .events = POLLIN};
        if (open_err)
            fds[ierr = nf++] = (struct pollfd){.fd = perr[0], .events = POLLIN};
        if (pin[1] >= 0)
            fds[iin = nf++] = (struct pollfd){.fd = pin[1], .events = POLLOUT};
        double left = deadline - mono_s();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        int r = poll(fds, (nfds_t)nf, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        char tmp[65536];
        if (iout >= 0 && fds[iout].revents) {
            ssize_t n = read(pout[0], tmp, sizeof(tmp));
            if (n > 0)
                spw_strbuf_addn(&ob, tmp, (size_t)n);
            else if (n == 0 || errno != EINTR)
                open_out = 0;
        }
        if (ierr >= 0 && fds[ierr].revents) {
            ssize_t n = read(perr[0], tmp, sizeof(tmp));
            if (n > 0 && eb.len < 65536)
                spw_strbuf_addn(&eb, tmp, (size_t)n);
            else if (n == 0 || (n < 0 && errno != EINTR))
                open_err = 0;
        }
        if (iin >= 0 && fds[iin].revents) {
            ssize_t n = write(pin[1], in + inoff, inlen - inoff);
            if (n > 0)
                inoff += (size_t)n;
            if ((n < 0 && errno != EINTR && errno != EAGAIN) || inoff == inlen) {
                close(pin[1]);
                pin[1] = -1;
            }
        }
    }
    if (pin[1] >= 0)
        close(pin[1]);
    close(pout[0]);
    close(perr[0]);
    if (timed_out)
        kill(-pid, SIGKILL), kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    /* The first line of stderr, for messages. */
    char first[160] = "";
    if (eb.s) {
        size_t k = strcspn(eb.s, "\n");
        snprintf(first, sizeof(first), "%.*s", (int)(k < 159 ? k : 159), eb.s);
    }
    free(eb.s);
    if (timed_out) {
        free(ob.s);
        return spw_errorf(err, "%s did not answer within %g s%s%s%s", name, r->timeout_s,
                          r->timeout_hint ? " (" : "", r->timeout_hint ? r->timeout_hint : "",
                          r->timeout_hint ? ")" : "");
    }
    if (WIFSIGNALED(st)) {
        free(ob.s);
        return spw_errorf(err, "%s was killed by signal %d", name, WTERMSIG(st));
    }
    int code = WEXITSTATUS(st);
    if (code == 127 && strcmp(first, "exec failed") == 0) {
        free(ob.s);
        return spw_errorf(err, "cannot run %s: not found in %s", name,
                          r->where ? r->where : "PATH");
    }
    if (code != 0 && err)
        spw_errorf(err, "%s failed (exit %d): %s", name, code, first[0] ? first : "no message");
    if (out)
        *out = ob.s ? ob.s : spw_xstrdup("");
    else
        free(ob.s);
    return code;
}
