/* test_local.c: the local backend with real processes: logs, CUDA_VISIBLE_DEVICES,
 * argv without a shell, launch failures that leave nothing behind, cancel of a
 * whole process group with SIGKILL escalation, max_runtime, env and workdir,
 * adopt() after a "restart", and GPU detection with a fake nvidia-smi. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "tap.h"
#include "backends/backend.h"
#include "backends/local/local.h"

static char tmp[1024];            /* scratch directory, removed at the end */
static const struct spw_backend_ops *ops = &spw_local_ops;

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Reads a whole small file into buf ("" if absent). */
static const char *slurp(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[PATH_MAX];
    FILE *f;
    size_t n = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    buf[0] = '\0';
    if ((f = fopen(path, "r"))) {
        n = fread(buf, 1, cap - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

static int exists(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Alive means it exists and is not a zombie waiting for some reaper. */
static int alive(pid_t pid)
{
    uint64_t t;
    char state;
    if (kill(pid, 0) < 0)
        return 0;
    return spw_local_proc_start(pid, &t, &state, NULL) == 0 && state != 'Z';
}

/* Ticks and polls every 10 ms until one exit comes back or limit_s passes. */
static int wait_exit(void *be, spw_exit_t *x, double limit_s)
{
    double end = wall_s() + limit_s;
    while (wall_s() < end) {
        ops->tick(be, wall_s());
        if (ops->poll(be, x, 1) == 1)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

static spw_launch_t base_req(const char *id)
{
    spw_launch_t r;
    memset(&r, 0, sizeof(r));
    r.job_id = id;
    r.log_dir = tmp;
    r.now_s = wall_s();
    return r;
}

/* Waits until the job's .out has at least one full line; returns it parsed as
 * a pid. */
static pid_t first_line_pid(const char *id, double limit_s)
{
    char name[128], buf[256];
    double end = wall_s() + limit_s;
    snprintf(name, sizeof(name), "%s.out", id);
    while (wall_s() < end) {
        slurp(tmp, name, buf, sizeof(buf));
        if (strchr(buf, '\n'))
            return (pid_t)atol(buf);
        sleep_ms(10);
    }
    return -1;
}

static int no_children(void)
{
    return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static void test_script_logs_and_gpus(void *be)
{
    static const uint32_t gpus[] = {2, 3};
    spw_launch_t r = base_req("job-1");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    char buf[256];

    r.script = "echo $CUDA_VISIBLE_DEVICES; echo $SPILLWAY_JOB_ID; echo err >&2; exit 3";
    r.gpus = gpus;
    r.ngpus = 2;
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "script launches"))
        diag("%s", err.text);
    is_str(h.job_id, "job-1", "handle carries the job id");
    ok(h.pid > 0 && h.pgid == h.pid, "the job leads its own process group");
    ok(h.start_ticks > 0, "start time recorded from /proc");
    is(spw_local_count(be), 1, "one job tracked");
    ok(wait_exit(be, &x, 3), "exit reported");
    is(x.kind, SPW_EXIT_EXITED, "kind: %s", spw_exit_kind_name(x.kind));
    is(x.status, 3, "exit code 3");
    is(x.cause, SPW_CAUSE_NONE, "not killed by the backend");
    ok(x.handle.pid == h.pid, "exit names the handle");
    is_str(slurp(tmp, "job-1.out", buf, sizeof(buf)), "2,3\njob-1\n",
           "stdout log: CUDA_VISIBLE_DEVICES=2,3 and SPILLWAY_JOB_ID");
    is_str(slurp(tmp, "job-1.err", buf, sizeof(buf)), "err\n", "stderr log");
    is(spw_local_count(be), 0, "nothing tracked after poll");
    ok(no_children(), "the child was reaped");

    /* A retry appends to the same logs; no GPUs means an empty list. */
    r.script = "echo \"[$CUDA_VISIBLE_DEVICES]\"";
    r.ngpus = 0;
    ok(ops->launch(be, &r, &h, &err) == 0 && wait_exit(be, &x, 3), "relaunch");
    is_str(slurp(tmp, "job-1.out", buf, sizeof(buf)), "2,3\njob-1\n[]\n",
           "logs are appended to; no GPUs gives an empty CUDA_VISIBLE_DEVICES");
    {
        struct stat sb;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/job-1.out", tmp);
        if (!ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == (0640 & ~(mode_t)022),
           "log created 0640 (less the umask)"))
            diag("mode %o", sb.st_mode & 0777);
    }
}

static void test_argv_no_shell(void *be)
{
    const char *argv[] = {"printf", "[%s]\\n", "a b", "c  d", "$HOME;", "*", NULL};
    spw_launch_t r = base_req("argv");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    char buf[256];

    r.argv = argv;
    r.workdir = "/";
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "argv launches"))
        diag("%s", err.text);
    ok(wait_exit(be, &x, 3) && x.kind == SPW_EXIT_EXITED && x.status == 0, "printf exits 0");
    is_str(slurp(tmp, "argv.out", buf, sizeof(buf)), "[a b]\n[c  d]\n[$HOME;]\n[*]\n",
           "arguments passed verbatim, no shell expansion or splitting");
}

static void test_launch_failures(void *be)
{
    const char *missing[] = {"spw-no-such-program-xyz", "arg", NULL};
    const char *slash[] = {"/nonexistent/prog", NULL};
    char noexec_path[1100], garbage_path[1100];
    const char *notexec[] = {noexec_path, NULL};
    const char *garbage[] = {garbage_path, NULL};
    char want[1200];
    FILE *f;
    const char *truep[] = {"true", NULL};
    const char *bad_env[] = {"NOEQUALS", NULL};
    spw_launch_t r = base_req("fail-1");
    spw_handle_t h;
    spw_error_t err = {""};

    r.argv = missing;
    ok(ops->launch(be, &r, &h, &err) < 0, "a missing program fails at launch");
    is_str(err.text, "cannot run 'spw-no-such-program-xyz': No such file or directory",
           "with the reason");
    ok(no_children(), "and no child (nor zombie) is left");
    is(spw_local_count(be), 0, "nothing tracked");
    ok(!exists(tmp, "fail-1.out") && !exists(tmp, "fail-1.err"), "log files it created are removed");

    r.argv = slash;
    ok(ops->launch(be, &r, &h, &err) < 0, "a missing path fails");
    is_str(err.text, "cannot run '/nonexistent/prog': No such file or directory", "message");
    snprintf(noexec_path, sizeof(noexec_path), "%s/noexec", tmp);
    snprintf(garbage_path, sizeof(garbage_path), "%s/garbage", tmp);
    if ((f = fopen(noexec_path, "w")))
        fclose(f);
    chmod(noexec_path, 0644);
    if ((f = fopen(garbage_path, "w"))) {
        fputs("\x7f\x01garbage\n", f);
        fclose(f);
    }
    chmod(garbage_path, 0755);
    r.argv = notexec;
    ok(ops->launch(be, &r, &h, &err) < 0, "a file without execute permission fails");
    snprintf(want, sizeof(want), "cannot run '%s': Permission denied", noexec_path);
    is_str(err.text, want, "message");
    r.argv = garbage;
    ok(ops->launch(be, &r, &h, &err) < 0, "an executable that is no program fails");
    snprintf(want, sizeof(want), "cannot run '%s': Exec format error", garbage_path);
    is_str(err.text, want, "message (no silent fallback to a shell)");

    r.argv = truep;
    r.workdir = "/nonexistent-dir";
    ok(ops->launch(be, &r, &h, &err) < 0, "a missing workdir fails at launch");
    is_str(err.text, "cannot change to directory '/nonexistent-dir': No such file or directory",
           "message");
    ok(no_children(), "no child left");
    r.workdir = NULL;

    r.log_dir = "/nonexistent-logs";
    ok(ops->launch(be, &r, &h, &err) < 0, "a missing log directory fails");
    is_str(err.text, "job fail-1: cannot open log file '/nonexistent-logs/fail-1.out': No such file or directory",
           "message");
    r.log_dir = tmp;

    r.job_id = "../escape";
    if (!ok(ops->launch(be, &r, &h, &err) < 0 && strstr(err.text, "invalid job id '../escape'"),
       "a job id that is not a plain file name is refused"))
        diag("%s", err.text);
    r.job_id = "fail-1";
    r.script = "true";
    if (!ok(ops->launch(be, &r, &h, &err) < 0 && strstr(err.text, "not both"),
       "argv and script together are refused"))
        diag("%s", err.text);
    r.script = NULL;
    r.env = bad_env;
    if (!ok(ops->launch(be, &r, &h, &err) < 0 && strstr(err.text, "'NOEQUALS' is not NAME=VALUE"),
       "a malformed env entry is refused"))
        diag("%s", err.text);
    ok(!exists(tmp, "fail-1.out") && no_children() && spw_local_count(be) == 0,
       "after all those failures: no file, no child, nothing tracked");
}

static void test_no_fd_leak(void *be)
{
    const char *argv[] = {"sleep", "100", NULL};
    spw_launch_t r = base_req("fds");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    char path[64], names[512];
    int leak, n = 0;
    DIR *d;
    struct dirent *de;

    /* An inheritable descriptor in the daemon must not reach the job. */
    leak = open("/dev/null", O_RDONLY);
    r.argv = argv;
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "sleep launches"))
        diag("%s", err.text);
    snprintf(path, sizeof(path), "/proc/%ld/fd", (long)h.pid);
    /* launch() returns once the report pipe closes during execve, which may
     * be before the kernel has closed the job's higher descriptors: look
     * again for a moment before calling it a leak. */
    for (int tries = 0; tries < 100; tries++) {
        n = 0;
        names[0] = '\0';
        if ((d = opendir(path))) {
            while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                    n++;
                    strncat(names, " ", sizeof(names) - strlen(names) - 1);
                    strncat(names, de->d_name, sizeof(names) - strlen(names) - 1);
                }
            closedir(d);
        }
        if (n == 3)
            break;
        sleep_ms(10);
    }
    if (!is(n, 3, "the job has only stdin, stdout and stderr open"))
        diag("open:%s", names);
    close(leak);
    ok(ops->cancel(be, &h, wall_s(), &err) == 0, "cancel");
    ok(wait_exit(be, &x, 3), "exit");
}

static void test_cancel_group(void *be)
{
    spw_launch_t r = base_req("grp");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    pid_t gc;

    r.script = "sleep 100 & echo $!; sleep 100";
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "group job launches"))
        diag("%s", err.text);
    gc = first_line_pid("grp", 3);
    ok(gc > 0 && alive(gc), "grandchild running (pid %ld)", (long)gc);
    ok(ops->cancel(be, &h, wall_s(), &err) == 0, "cancel");
    ok(ops->cancel(be, &h, wall_s(), &err) == 0, "cancel again is harmless");
    ok(wait_exit(be, &x, 3), "exit reported");
    is(x.kind, SPW_EXIT_SIGNALED, "killed by a signal");
    is(x.status, SIGTERM, "SIGTERM");
    is(x.cause, SPW_CAUSE_CANCELLED, "cause: %s", spw_exit_cause_name(x.cause));
    {
        double end = wall_s() + 2;
        while (alive(gc) && wall_s() < end)
            sleep_ms(10);
    }
    ok(!alive(h.pid) && !alive(gc), "leader and grandchild are gone");
    if (!ok(ops->cancel(be, &h, wall_s(), &err) < 0 && strstr(err.text, "not running"),
       "cancel after the exit was reported fails"))
        diag("%s", err.text);
}

static void test_cancel_escalates(void *be)
{
    spw_launch_t r = base_req("stubborn");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    double t0;
    pid_t gc;

    /* Both the shell and its background child ignore TERM. */
    r.script = "trap '' TERM; sleep 100 & echo $!; while :; do sleep 1; done";
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "TERM-ignoring job launches"))
        diag("%s", err.text);
    gc = first_line_pid("stubborn", 3);
    ok(gc > 0, "its child started");
    t0 = wall_s();
    ok(ops->cancel(be, &h, t0, &err) == 0, "cancel");
    sleep_ms(100);
    ops->tick(be, wall_s());
    is(ops->poll(be, &x, 1), 0, "still running inside the grace period");
    ok(alive(h.pid) && alive(gc), "TERM was ignored");
    ok(wait_exit(be, &x, 3), "exit reported after escalation");
    ok(wall_s() - t0 >= 0.3, "not before the 0.3 s grace period");
    is(x.kind, SPW_EXIT_SIGNALED, "killed by a signal");
    is(x.status, SIGKILL, "SIGKILL");
    is(x.cause, SPW_CAUSE_CANCELLED, "cause: cancelled");
    {
        double end = wall_s() + 2;
        while (alive(gc) && wall_s() < end)
            sleep_ms(10);
    }
    ok(!alive(gc), "the TERM-ignoring grandchild is gone too");
}

static void test_max_runtime(void *be)
{
    const char *argv[] = {"sleep", "100", NULL};
    spw_launch_t r = base_req("slow");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};

    r.argv = argv;
    r.max_runtime_s = 0.2;
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "job with max_runtime 0.2 s"))
        diag("%s", err.text);
    ops->tick(be, r.now_s + 0.1);
    sleep_ms(20);
    is(ops->poll(be, &x, 1), 0, "running before the limit");
    ok(wait_exit(be, &x, 3), "exit reported");
    is(x.kind, SPW_EXIT_SIGNALED, "killed");
    is(x.status, SIGTERM, "by SIGTERM");
    is(x.cause, SPW_CAUSE_MAX_RUNTIME, "cause: %s", spw_exit_cause_name(x.cause));
}

static void test_env_and_workdir(void *be)
{
    const char *env[] = {"FOO=bar  baz", "CUDA_VISIBLE_DEVICES=9", "SPW_TEST_INHERIT=job",
                         "FOO=last wins", NULL};
    static const uint32_t gpu[] = {1};
    spw_launch_t r = base_req("envjob");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    char buf[8192], want[8192], wd[2048];

    snprintf(wd, sizeof(wd), "%s/wd", tmp);
    mkdir(wd, 0755);
    setenv("SPW_TEST_INHERIT", "daemon", 1);
    setenv("SPW_TEST_DAEMON", "from-daemon", 1);
    r.script = "echo \"$FOO\"; echo \"$CUDA_VISIBLE_DEVICES\"; echo \"$SPW_TEST_INHERIT\";"
               " echo \"$SPW_TEST_DAEMON\"; pwd; echo \"$PWD\"";
    r.env = env;
    r.workdir = wd;
    r.gpus = gpu;
    r.ngpus = 1;
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "env job launches"))
        diag("%s", err.text);
    ok(wait_exit(be, &x, 3) && x.kind == SPW_EXIT_EXITED && x.status == 0, "exits 0");
    snprintf(want, sizeof(want), "last wins\n1\njob\nfrom-daemon\n%s\n%s\n", wd, wd);
    is_str(slurp(tmp, "envjob.out", buf, sizeof(buf)), want,
           "job env over daemon env, assigned GPUs over the job's, workdir applied");
    unsetenv("SPW_TEST_INHERIT");
    unsetenv("SPW_TEST_DAEMON");
}

/* Starts `sleep SECS` as a grandchild in its own session, as a job of a
 * previous daemon would be: sh forks it in the background and exits, so its
 * parent is no longer us.  (Through sh rather than a C double fork so that no
 * forked copy of this test exits without exec, which valgrind would report as
 * leaking.)  Returns its pid. */
static pid_t start_orphan(const char *secs)
{
    char cmd[128], line[64] = "";
    FILE *p;

    snprintf(cmd, sizeof(cmd), "setsid sleep %s </dev/null >/dev/null 2>&1 & echo $!", secs);
    if (!(p = popen(cmd, "r")))
        return -1;
    if (!fgets(line, sizeof(line), p))
        line[0] = '\0';
    pclose(p);
    return line[0] ? (pid_t)atol(line) : -1;
}

static void test_adopt(void)
{
    void *be = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3}, NULL);
    spw_handle_t h, bad;
    spw_exit_t x;
    spw_error_t err = {""};
    double t0;
    pid_t pid = start_orphan("1");

    ok(pid > 0, "orphan sleep started (pid %ld)", (long)pid);
    sleep_ms(20);
    memset(&h, 0, sizeof(h));
    snprintf(h.job_id, sizeof(h.job_id), "adopted");
    h.pid = h.pgid = pid;
    if (!ok(spw_local_proc_start(pid, &h.start_ticks, NULL, &err) == 0, "read its start time"))
        diag("%s", err.text);
    h.started_s = wall_s();

    bad = h;
    bad.start_ticks = h.start_ticks + 1;
    errno = 0;
    ok(ops->adopt(be, &bad, &err) < 0 && errno == ESRCH, "adopt refuses a start time that does not match");
    ok(strstr(err.text, "is no longer job adopted") != NULL, "saying so: %s", err.text);
    bad.start_ticks = 0;
    if (!ok(ops->adopt(be, &bad, &err) < 0 && strstr(err.text, "cannot be verified"),
       "adopt refuses an unknown start time"))
        diag("%s", err.text);
    is(spw_local_count(be), 0, "nothing tracked after refusals");
    ok(alive(pid), "and the process was not touched");

    if (!ok(ops->adopt(be, &h, &err) == 0, "adopt by pid and start time"))
        diag("%s", err.text);
    ok(ops->adopt(be, &h, &err) == 0 && spw_local_count(be) == 1, "adopting again is a no-op");
    ops->tick(be, wall_s());
    is(ops->poll(be, &x, 1), 0, "running");
    t0 = wall_s();
    ok(wait_exit(be, &x, 4), "its end is noticed");
    diag("noticed %.2f s after adoption", wall_s() - t0);
    is(x.kind, SPW_EXIT_LOST, "as lost: %s", spw_exit_kind_name(x.kind));
    is(x.status, -1, "exit code unknown");
    is_str(x.handle.job_id, "adopted", "for the adopted job");

    ok(ops->adopt(be, &h, &err) < 0 && errno == ESRCH &&
       (strstr(err.text, "gone") || strstr(err.text, "has exited")),
       "adopting a finished process fails: %s", err.text);

    /* An adopted job can be cancelled like any other. */
    pid = start_orphan("100");
    memset(&h, 0, sizeof(h));
    snprintf(h.job_id, sizeof(h.job_id), "adopted-2");
    h.pid = h.pgid = pid;
    spw_local_proc_start(pid, &h.start_ticks, NULL, NULL);
    if (!ok(ops->adopt(be, &h, &err) == 0, "adopt a long sleep"))
        diag("%s", err.text);
    ok(ops->cancel(be, &h, wall_s(), &err) == 0, "cancel it");
    ok(wait_exit(be, &x, 3) && x.kind == SPW_EXIT_LOST && x.cause == SPW_CAUSE_CANCELLED,
       "reported lost with cause cancelled");
    ok(!alive(pid), "and it is gone");
    ops->destroy(be);
}

static void test_adopt_own_child(void)
{
    void *be = spw_local_create(NULL, NULL);
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    pid_t pid = fork();

    if (pid == 0) {
        setsid();
        execl("/bin/sh", "sh", "-c", "sleep 0.1; exit 7", (char *)NULL);
        _exit(127);
    }
    memset(&h, 0, sizeof(h));
    snprintf(h.job_id, sizeof(h.job_id), "mine");
    h.pid = h.pgid = pid;
    spw_local_proc_start(pid, &h.start_ticks, NULL, NULL);
    if (!ok(ops->adopt(be, &h, &err) == 0, "adopt a process that is our own child"))
        diag("%s", err.text);
    ok(wait_exit(be, &x, 3), "exit reported");
    ok(x.kind == SPW_EXIT_EXITED && x.status == 7, "with its real exit code (%s %d)",
       spw_exit_kind_name(x.kind), x.status);
    ok(no_children(), "and it was reaped");
    ops->destroy(be);
}

static void test_poll_max_and_destroy(void)
{
    const char *argv[] = {"true", NULL};
    const char *sleeper[] = {"sleep", "100", NULL};
    void *be = spw_local_create(&(spw_local_opts_t){.grace_s = 1}, NULL);
    spw_launch_t r;
    spw_handle_t h[3];
    spw_exit_t x[3];
    spw_error_t err = {""};
    int got = 0, first = -1;
    double end;

    r = base_req("m1");
    r.argv = argv;
    ops->launch(be, &r, &h[0], &err);
    r.job_id = "m2";
    ops->launch(be, &r, &h[1], &err);
    sleep_ms(200);  /* both done before the first poll, so the order is fixed */
    end = wall_s() + 3;
    while (got < 2 && wall_s() < end) {
        int n = ops->poll(be, &x[got], 1);
        if (n && first < 0)
            first = got;
        got += n;
        sleep_ms(10);
    }
    is(got, 2, "poll with max 1 hands out two exits one at a time");
    ok(got == 2 && strcmp(x[0].handle.job_id, "m1") == 0 && strcmp(x[1].handle.job_id, "m2") == 0,
       "in launch order when both are ready");
    is(ops->poll(be, x, 0), 0, "max 0 reports nothing");

    r.job_id = "keep";
    r.argv = sleeper;
    ok(ops->launch(be, &r, &h[2], &err) == 0, "a job left running");
    ops->destroy(be);
    ok(alive(h[2].pid), "survives destroy (a new daemon adopts it)");
    kill(-h[2].pgid, SIGKILL);
    waitpid(h[2].pid, NULL, 0);

    {
        spw_error_t e2 = {""};
        ok(spw_local_create(&(spw_local_opts_t){.grace_s = -1}, &e2) == NULL &&
           strstr(e2.text, "grace period"), "a negative grace period is refused");
    }
    spw_local_destroy(NULL);
    ops->destroy(NULL);
    ok(1, "destroy is NULL-safe");
}

static void write_script(const char *dir, const char *name, const char *body)
{
    char path[PATH_MAX];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(path, 0755);
}

static void test_detect_gpus(void)
{
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char dir[2048], path[4096];
    spw_error_t err = {""};
    int n = -1;

    if (spw_local_detect_gpus(&n, &err) == 0)
        diag("this machine: nvidia-smi reports %d GPU(s)", n);
    else
        diag("this machine: %s", err.text);

    snprintf(dir, sizeof(dir), "%s/bin", tmp);
    mkdir(dir, 0755);
    setenv("PATH", dir, 1);
    n = -1;
    ok(spw_local_detect_gpus(&n, &err) < 0 && n == 0, "no nvidia-smi: -1 and 0 GPUs");
    is_str(err.text, "nvidia-smi not found in PATH, so no GPUs were detected", "clear status");

    snprintf(path, sizeof(path), "%s:/bin:/usr/bin", dir);
    setenv("PATH", path, 1);
    write_script(dir, "nvidia-smi",
                 "[ \"$1 $2\" = '--query-gpu=index --format=csv,noheader' ] || exit 2\n"
                 "printf '0\\n1\\n2\\n3\\n'");
    if (!ok(spw_local_detect_gpus(&n, &err) == 0, "fake nvidia-smi with 4 GPUs"))
        diag("%s", err.text);
    is(n, 4, "4 GPUs counted");

    write_script(dir, "nvidia-smi",
                 "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"; exit 9");
    ok(spw_local_detect_gpus(&n, &err) < 0 && n == 0, "failing nvidia-smi: -1 and 0 GPUs");
    is_str(err.text, "nvidia-smi failed (exit 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
           "its message is passed on");

    write_script(dir, "nvidia-smi", "echo 'No devices were found'");
    if (!ok(spw_local_detect_gpus(&n, &err) < 0 && strstr(err.text, "'No devices were found'"),
       "unexpected output is reported"))
        diag("%s", err.text);

    if (old)
        setenv("PATH", old, 1);
    free(old);
}

static void rm_rf(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
}

int main(void)
{
    spw_error_t err = {""};
    void *be;
    double t0 = wall_s();
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

    snprintf(tmp, sizeof(tmp), "%s/spw-local-XXXXXX", base);
    if (!mkdtemp(tmp)) {
        printf("Bail out! cannot make a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    umask(022);
    is(ops->version, SPW_BACKEND_VERSION, "ops table version");
    is_str(ops->name, "local", "ops table name");

    be = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3}, &err);
    if (!ok(be != NULL, "backend created"))
        diag("%s", err.text);

    test_launch_failures(be);  /* first: it checks that no child exists at all */
    test_script_logs_and_gpus(be);
    test_argv_no_shell(be);
    test_no_fd_leak(be);
    test_cancel_group(be);
    test_cancel_escalates(be);
    test_max_runtime(be);
    test_env_and_workdir(be);
    ops->destroy(be);

    test_adopt();
    test_adopt_own_child();
    test_poll_max_and_destroy();
    test_detect_gpus();

    diag("took %.2f s", wall_s() - t0);
    rm_rf(tmp);
    return done_testing();
}
