/* test_local.c: the local backend with real processes: logs, CUDA_VISIBLE_DEVICES,
 * argv without a shell, launch failures that leave nothing behind, cancel of a
 * whole process group with SIGKILL escalation, max_runtime, env and workdir,
 * the shim and its exit records, adopt() after a "restart" (with the real
 * exit status), and GPU detection with a fake nvidia-smi.
 *
 * A handle's pid is the job's shim, not the command: the command is the
 * shim's only child, in the shim's process group (see local.h). */
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

/* The parent of pid from /proc/PID/stat, or -1. */
static pid_t parent_of(pid_t pid)
{
    char name[64], buf[1024];
    const char *p;
    char state;
    int ppid;

    snprintf(name, sizeof(name), "%ld/stat", (long)pid);
    slurp("/proc", name, buf, sizeof(buf));
    p = strrchr(buf, ')');
    return p && sscanf(p + 1, " %c %d", &state, &ppid) == 2 ? (pid_t)ppid : -1;
}

/* The command a shim runs: its child (waiting a moment for the fork). */
static pid_t job_of(pid_t shim)
{
    double end = wall_s() + 2;
    while (wall_s() < end) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        pid_t found = -1;
        while (d && found < 0 && (de = readdir(d))) {
            char *e;
            long p = strtol(de->d_name, &e, 10);
            if (!*e && p > 0 && parent_of((pid_t)p) == shim)
                found = (pid_t)p;
        }
        if (d)
            closedir(d);
        if (found > 0)
            return found;
        sleep_ms(10);
    }
    return -1;
}

/* The job's exit record, as the shim wrote it ("" if none). */
static const char *record(const char *id, char *buf, size_t cap)
{
    char name[128];
    snprintf(name, sizeof(name), "%s.exit", id);
    return slurp(tmp, name, buf, cap);
}

/* Writes text to tmp/name. */
static void put_file(const char *name, const char *text)
{
    char path[PATH_MAX];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    if ((f = fopen(path, "w"))) {
        fputs(text, f);
        fclose(f);
    }
}

/* Counts the open descriptors of pid, listing them into names.  Those at or
 * above our descriptor limit are not counted: valgrind keeps its own there,
 * and they show in a shim, which is a fork of this process running under it. */
static int count_fds(pid_t pid, char *names, size_t cap)
{
    char path[64];
    DIR *d;
    struct dirent *de;
    long limit = sysconf(_SC_OPEN_MAX);
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
    names[0] = '\0';
    if ((d = opendir(path))) {
        while ((de = readdir(d)))
            if (de->d_name[0] != '.' && (limit <= 0 || atol(de->d_name) < limit)) {
                n++;
                strncat(names, " ", cap - strlen(names) - 1);
                strncat(names, de->d_name, cap - strlen(names) - 1);
            }
        closedir(d);
    }
    return n;
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
    ok(no_children(), "the shim was reaped (and it had reaped the job)");
    is_str(record("job-1", buf, sizeof(buf)), "exited 3\n", "the shim recorded exit 3");
    {
        spw_exit_kind_t k = SPW_EXIT_LOST;
        int st = -1;
        int rc = spw_local_read_exit(tmp, "job-1", &k, &st);
        ok(rc == 0 && k == SPW_EXIT_EXITED && st == 3, "spw_local_read_exit reads it back (%s %d)",
           spw_exit_kind_name(k), st);
    }

    /* A retry appends to the same logs; no GPUs means an empty list. */
    r.script = "echo \"[$CUDA_VISIBLE_DEVICES]\"";
    r.ngpus = 0;
    ok(ops->launch(be, &r, &h, &err) == 0 && wait_exit(be, &x, 3), "relaunch");
    is_str(slurp(tmp, "job-1.out", buf, sizeof(buf)), "2,3\njob-1\n[]\n",
           "logs are appended to; no GPUs gives an empty CUDA_VISIBLE_DEVICES");
    is_str(record("job-1", buf, sizeof(buf)), "exited 0\n", "the record is replaced: exited 0");
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
    ok(!exists(tmp, "fail-1.exit") && !exists(tmp, "fail-1.exit.tmp"),
       "and so is the shim's record of the failed exec (exit 127)");

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
    is_str(err.text, "job fail-1: cannot open log directory '/nonexistent-logs': No such file or directory",
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
    ok(!exists(tmp, "fail-1.out") && !exists(tmp, "fail-1.exit") && no_children() &&
       spw_local_count(be) == 0, "after all those failures: no file, no child, nothing tracked");
}

static void test_no_fd_leak(void *be)
{
    const char *argv[] = {"sleep", "100", NULL};
    spw_launch_t r = base_req("fds");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    char names[512];
    int leak, cloexec, n = 0;
    pid_t job;

    /* An inheritable descriptor in the daemon must not reach the job; and
     * since the shim never execs, it must close even close-on-exec ones (a
     * restarted daemon could not bind a listen socket a shim still held). */
    leak = open("/dev/null", O_RDONLY);
    cloexec = open("/dev/null", O_RDONLY | O_CLOEXEC);
    r.argv = argv;
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "sleep launches"))
        diag("%s", err.text);
    job = job_of(h.pid);
    ok(job > 0 && job != h.pid, "the command (pid %ld) is the shim's child", (long)job);
    /* launch() returns once the report pipe closes during execve, which may
     * be before the kernel has closed the job's higher descriptors: look
     * again for a moment before calling it a leak. */
    for (int tries = 0; tries < 100; tries++) {
        if ((n = count_fds(job, names, sizeof(names))) == 3)
            break;
        sleep_ms(10);
    }
    if (!is(n, 3, "the job has only stdin, stdout and stderr open"))
        diag("open:%s", names);
    n = count_fds(h.pid, names, sizeof(names));
    if (!is(n, 3, "so has the shim"))
        diag("open:%s", names);
    close(leak);
    close(cloexec);
    ok(ops->cancel(be, &h, wall_s(), &err) == 0, "cancel");
    ok(wait_exit(be, &x, 3), "exit");
}

/* What the shim is: the group leader, parent of the command, untouched by
 * the signals it passes on, leaving a record of how the command ended. */
static void test_shim(void *be)
{
    spw_launch_t r = base_req("shim");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    spw_exit_kind_t k = SPW_EXIT_LOST;
    int st = -1;
    char buf[256];
    long job = 0, ppid = 0;

    put_file("shim.exit", "exited 99\n");  /* from an "earlier attempt" */
    r.script = "echo $$ $PPID; exec sleep 100";
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "job launches"))
        diag("%s", err.text);
    ok(!exists(tmp, "shim.exit"), "the record of an earlier attempt is removed at launch");
    errno = 0;
    ok(spw_local_read_exit(tmp, "shim", &k, &st) < 0 && errno == ENOENT,
       "no record while the job runs");
    first_line_pid("shim", 3);
    sscanf(slurp(tmp, "shim.out", buf, sizeof(buf)), "%ld %ld", &job, &ppid);
    ok(job > 0 && job != h.pid && ppid == h.pid, "the command (pid %ld) is the child of the shim (pid %ld)",
       job, (long)h.pid);
    ok(getpgid((pid_t)job) == h.pgid && getsid((pid_t)job) == h.pid,
       "in the shim's session and process group");

    /* SIGUSR1 to the group kills the command (its default action) but not the
     * shim, which reports the command's death as its own. */
    ok(ops->signal(be, &h, SIGUSR1, &err) == 0, "SIGUSR1 to the group");
    ok(wait_exit(be, &x, 3), "exit reported");
    ok(x.kind == SPW_EXIT_SIGNALED && x.status == SIGUSR1 && x.cause == SPW_CAUSE_NONE,
       "killed by SIGUSR1, not by the backend (%s %d, %s)", spw_exit_kind_name(x.kind),
       x.status, spw_exit_cause_name(x.cause));
    snprintf(buf + 128, 64, "signaled %d\n", SIGUSR1);
    is_str(record("shim", buf, 128), buf + 128, "the shim recorded it");
    ok(no_children(), "shim and command reaped");

    /* spw_local_read_exit accepts only what the shim writes. */
    {
        static const char *const bad[] = {"", "exited\n", "exited 3", "exited 256\n",
                                          "exited -1\n", "exited 3\nmore", "signaled 0\n",
                                          "signaled 65\n", "killed 9\n", "exited 0003\n"};
        int all = 1;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            put_file("rec.exit", bad[i]);
            errno = 0;
            if (spw_local_read_exit(tmp, "rec", &k, &st) == 0 || errno != EPROTO) {
                diag("accepted or wrong errno for '%s'", bad[i]);
                all = 0;
            }
        }
        ok(all, "malformed records are refused with EPROTO");
        put_file("rec.exit", "signaled 9\n");
        ok(spw_local_read_exit(tmp, "rec", &k, &st) == 0 && k == SPW_EXIT_SIGNALED && st == 9,
           "signaled 9 reads back");
        errno = 0;
        ok(spw_local_read_exit(tmp, "../rec", &k, &st) < 0 && errno == EINVAL,
           "an invalid job id is refused");
        ok(spw_local_read_exit(NULL, "rec", &k, &st) < 0, "so is no log directory");
    }
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
        char buf[64];
        is_str(record("grp", buf, sizeof(buf)), "signaled 15\n",
               "the shim survived SIGTERM and recorded it");
    }
    {
        double end = wall_s() + 2;
        while (alive(gc) && wall_s() < end)
            sleep_ms(10);
    }
    ok(!alive(h.pid) && !alive(gc), "shim and the job's background child are gone");
    if (!ok(ops->cancel(be, &h, wall_s(), &err) < 0 && strstr(err.text, "not running"),
       "cancel after the exit was reported fails"))
        diag("%s", err.text);
}

/* The job's first process is the shim, which ends right after the command:
 * what the command left behind in its group is then killed. */
static void test_leftovers_killed(void *be)
{
    spw_launch_t r = base_req("left");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    pid_t gc;

    r.script = "sleep 100 & echo $!; exit 0";
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "job that leaves a process behind"))
        diag("%s", err.text);
    gc = first_line_pid("left", 3);
    ok(wait_exit(be, &x, 3) && x.kind == SPW_EXIT_EXITED && x.status == 0,
       "its exit 0 is reported");
    {
        double end = wall_s() + 2;
        while (alive(gc) && wall_s() < end)
            sleep_ms(10);
    }
    ok(gc > 0 && !alive(gc), "the background sleep (pid %ld) was killed", (long)gc);
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
    ok(alive(h.pid) && alive(job_of(h.pid)) && alive(gc), "TERM was ignored");
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
    ok(!exists(tmp, "stubborn.exit"), "no record: SIGKILL to the group killed the shim as well");
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
    {
        char buf[64];
        is_str(record("slow", buf, sizeof(buf)), "signaled 15\n", "recorded");
    }
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

/* env_pass: only the daemon's variables it names (or a PREFIX* matches)
 * reach the job; the job's own env and the reserved variables still do. */
static void test_env_pass(void *be)
{
    const char *pass[] = {"PATH", "SPW_PASS_*", NULL};
    const char *env[] = {"SPW_JOBVAR=mine", NULL};
    spw_launch_t r = base_req("passjob");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    char buf[4096];

    setenv("SPW_PASS_A", "a", 1);
    setenv("SPW_PASSB", "b", 1);
    setenv("SPW_SECRET_TOKEN", "s", 1);
    r.script = "echo \"${SPW_PASS_A-unset} ${SPW_PASSB-unset} ${SPW_SECRET_TOKEN-unset}"
               " ${SPW_JOBVAR-unset} ${SPILLWAY_JOB_ID-unset} ${HOME-unset}\"";
    r.env = env;
    r.env_pass = pass;
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "env_pass job launches"))
        diag("%s", err.text);
    ok(wait_exit(be, &x, 3) && x.kind == SPW_EXIT_EXITED && x.status == 0, "exits 0");
    is_str(slurp(tmp, "passjob.out", buf, sizeof(buf)), "a unset unset mine passjob unset\n",
           "only named and prefixed daemon variables pass; job env and SPILLWAY_JOB_ID do");
    unsetenv("SPW_PASS_A");
    unsetenv("SPW_PASSB");
    unsetenv("SPW_SECRET_TOKEN");
}

/* set_user: the job runs as that user with that group alone; the shim
 * (which writes the exit record into the daemon's directory) does not. */
static void test_set_user(void *be)
{
    spw_launch_t r = base_req("userjob");
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    char buf[4096];

    if (geteuid() != 0) {
        for (int i = 0; i < 3; i++)
            ok(1, "# skip switching users needs root");
        return;
    }
    r.script = "echo \"$(id -u) $(id -g) $(id -G)\"";
    r.workdir = "/";
    r.set_user = 1;
    r.uid = 65534;
    r.gid = 65534;
    if (!ok(ops->launch(be, &r, &h, &err) == 0, "a job as uid 65534 launches"))
        diag("%s", err.text);
    ok(wait_exit(be, &x, 3) && x.kind == SPW_EXIT_EXITED && x.status == 0,
       "exits 0, its exit recorded by the shim");
    is_str(slurp(tmp, "userjob.out", buf, sizeof(buf)), "65534 65534 65534\n",
           "it runs as uid and gid 65534 with no other group");
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

/* Launches a job from a forked copy of this process, which then exits as a
 * killed daemon would: the job's shim is then no child of ours.  Returns 0
 * with the handle that "daemon" got. */
static int launch_orphan(const char *id, const char *script, spw_handle_t *h)
{
    int fds[2], st;
    ssize_t n;
    pid_t pid;

    if (pipe(fds) < 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        spw_local_t *lb = spw_local_create(NULL, NULL);
        spw_launch_t r = base_req(id);
        spw_handle_t hh;
        spw_error_t err = {""};

        close(fds[0]);
        r.script = script;
        memset(&hh, 0, sizeof(hh));
        if (ops->launch(lb, &r, &hh, &err) < 0)
            hh.pid = 0;
        if (write(fds[1], &hh, sizeof(hh)) != (ssize_t)sizeof(hh))
            _exit(1);
        spw_local_destroy(lb);
        _exit(0);
    }
    close(fds[1]);
    n = read(fds[0], h, sizeof(*h));
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, &st, 0);
    return pid > 0 && n == (ssize_t)sizeof(*h) && h->pid > 0 ? 0 : -1;
}

static void test_adopt_shim(void)
{
    spw_local_t *lb = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3, .log_dir = tmp}, NULL);
    spw_local_t *blind = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3}, NULL);
    spw_handle_t h, h2;
    spw_exit_t x;
    spw_error_t err = {""};
    spw_exit_kind_t k = SPW_EXIT_LOST;
    int st = -1, rc;
    pid_t pid = 0;
    uint64_t ticks = 0;
    char id5[64];

    snprintf(id5, sizeof(id5), "orph-5-%ld", (long)getpid());
    if (!ok(launch_orphan(id5, "sleep 0.3; exit 5", &h) == 0,
            "a job launched by another (now gone) backend"))
        return;
    ok(parent_of(h.pid) != getpid(), "its shim is not our child");
    /* Without a token nothing can find it by name: a job id alone is not
     * enough (another daemon may have the same one). */
    rc = spw_local_find_token(id5, &pid, &ticks);
    ok(rc < 0 && errno == ESRCH, "no process carries its job id as a launch token");
    if (!ok(ops->adopt(lb, &h, &err) == 0, "adopted by a backend that knows the log directory"))
        diag("%s", err.text);
    ok(wait_exit(lb, &x, 3), "its end is noticed");
    ok(x.kind == SPW_EXIT_EXITED && x.status == 5 && x.cause == SPW_CAUSE_NONE,
       "with the real exit code instead of LOST (%s %d)", spw_exit_kind_name(x.kind), x.status);

    ok(launch_orphan("orph-term", "sleep 100", &h) == 0, "another orphan job");
    ok(ops->adopt(lb, &h, &err) == 0 && ops->cancel(lb, &h, wall_s(), &err) == 0,
       "adopted and cancelled");
    ok(wait_exit(lb, &x, 3), "its end is noticed");
    ok(x.kind == SPW_EXIT_SIGNALED && x.status == SIGTERM && x.cause == SPW_CAUSE_CANCELLED,
       "SIGNALED 15, cause cancelled (%s %d, %s)", spw_exit_kind_name(x.kind), x.status,
       spw_exit_cause_name(x.cause));

    ok(launch_orphan("orph-blind", "sleep 0.2; exit 0", &h) == 0, "a third orphan job");
    ok(ops->adopt(blind, &h, &err) == 0 && wait_exit(blind, &x, 3), "adopted where no log_dir was given");
    ok(x.kind == SPW_EXIT_LOST && x.status == -1, "reported LOST, as before (%s)",
       spw_exit_kind_name(x.kind));

    /* It ended while no daemon ran: adopt() fails, the record remains. */
    ok(launch_orphan("orph-done", "exit 4", &h2) == 0, "a job that ends at once");
    {
        double end = wall_s() + 3;
        while (alive(h2.pid) && wall_s() < end)
            sleep_ms(10);
    }
    errno = 0;
    ok(ops->adopt(lb, &h2, &err) < 0 && errno == ESRCH, "adopting it fails: %s", err.text);
    rc = spw_local_read_exit(tmp, "orph-done", &k, &st);
    ok(rc == 0 && k == SPW_EXIT_EXITED && st == 4,
       "but spw_local_read_exit still tells exit 4 (%s %d)", spw_exit_kind_name(k), st);
    /* The same through the table (version 4): no token, by job id. */
    k = SPW_EXIT_LOST;
    st = -1;
    rc = ops->version >= 4 && ops->read_exit ? ops->read_exit(lb, NULL, "orph-done", &k, &st) : -1;
    ok(rc == 0 && k == SPW_EXIT_EXITED && st == 4, "and so does the table's read_exit (%s %d)",
       spw_exit_kind_name(k), st);
    ok(ops->read_exit(lb, "", "orph-done", &k, &st) == 0 && st == 4, "an empty token is none");
    errno = 0;
    ok(ops->read_exit(blind, NULL, "orph-done", &k, &st) < 0 && errno == EINVAL,
       "a backend without log_dir cannot read it (EINVAL)");
    ok(no_children(), "none of them was ever our child");
    spw_local_destroy(blind);
    spw_local_destroy(lb);
}

/* ---- launch tokens, fences, find (version 2) ---------------------------- */

/* Like launch_orphan, with a token and a run_dir: the launching "daemon"
 * exits right after launch(). */
static int launch_orphan_token(const char *rundir, const char *id, const char *token,
                               const char *script, spw_handle_t *h)
{
    int fds[2], st;
    ssize_t n;
    pid_t pid;

    if (pipe(fds) < 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        spw_local_t *lb = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3, .run_dir = rundir},
                                           NULL);
        spw_launch_t r = base_req(id);
        spw_handle_t hh;
        spw_error_t err = {""};

        close(fds[0]);
        r.script = script;
        r.token = token;
        memset(&hh, 0, sizeof(hh));
        if (ops->launch(lb, &r, &hh, &err) < 0)
            hh.pid = 0;
        if (write(fds[1], &hh, sizeof(hh)) != (ssize_t)sizeof(hh))
            _exit(1);
        spw_local_destroy(lb);  /* forgets the job; it keeps running */
        _exit(0);
    }
    close(fds[1]);
    n = read(fds[0], h, sizeof(*h));
    close(fds[0]);
    if (pid > 0)
        waitpid(pid, &st, 0);
    return pid > 0 && n == (ssize_t)sizeof(*h) && h->pid > 0 ? 0 : -1;
}

static void test_tokens(void)
{
    char rundir[PATH_MAX], tokA[96], tokB[96], tokOther[96], idA[64], buf[256], name[160];
    spw_handle_t h, f;
    spw_exit_t x;
    spw_error_t err = {""};
    spw_exit_kind_t k = SPW_EXIT_LOST;
    int st = -1, rc;
    pid_t pid = 0;
    uint64_t ticks = 0;

    snprintf(rundir, sizeof(rundir), "%s/run", tmp);
    mkdir(rundir, 0700);
    /* find and spw_local_find_token search the machine: ids ours alone. */
    snprintf(idA, sizeof(idA), "tok-%ld", (long)getpid());
    snprintf(tokA, sizeof(tokA), "aaaaaaaaaaaa.%s.1", idA);
    snprintf(tokB, sizeof(tokB), "aaaaaaaaaaaa.%s.2", idA);
    snprintf(tokOther, sizeof(tokOther), "bbbbbbbbbbbb.%s.1", idA);
    ok(ops->version >= 2, "the local backend implements version 2 (it has %d)", ops->version);
    ok(ops->find != NULL, "with find()");

    spw_local_t *lb = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3, .run_dir = rundir},
                                       NULL);
    spw_local_t *nodir = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3}, NULL);
    spw_launch_t r = base_req(idA);
    r.script = "echo token=$SPILLWAY_LAUNCH_TOKEN; sleep 0.4; exit 6";
    r.token = tokA;
    ok(ops->launch(nodir, &r, &h, &err) < 0 && strstr(err.text, "run_dir"),
       "a token without a run_dir is refused: %s", err.text);
    /* A daemon that dies before launching: find() fences the token first. */
    if (!ok(ops->find(lb, tokB, &f, &err) == 0, "a token never launched: find says 0"))
        diag("%s", err.text);
    r.token = tokB;
    ok(ops->launch(lb, &r, &h, &err) < 0 && strstr(err.text, "used before"),
       "and a late launch of that token fails: %s", err.text);
    r.token = tokA;
    if (!ok(ops->launch(lb, &r, &h, &err) == 0, "launch with a token"))
        diag("%s", err.text);
    is_str(h.token, tokA, "the handle carries it");
    slurp(rundir, tokA, buf, sizeof(buf));
    {
        long long p = 0;
        unsigned long long t = 0;
        ok(sscanf(buf, "%lld %llu", &p, &t) == 2 && p == h.pid && t == h.start_ticks,
           "the fence holds the shim's pid and start ticks (%s)", buf);
    }
    rc = spw_local_find_token(tokA, &pid, &ticks);
    ok(rc == 0 && pid == h.pid, "spw_local_find_token finds it by its whole token");
    rc = spw_local_find_token(tokOther, &pid, &ticks);
    ok(rc < 0 && errno == ESRCH, "but not by another daemon's token for the same job id");
    /* A second backend, as a restarted daemon: find() adopts it. */
    spw_local_t *lb2 = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3, .run_dir = rundir},
                                        NULL);
    memset(&f, 0, sizeof(f));
    rc = ops->find(lb2, tokA, &f, &err);
    ok(rc == 1 && f.pid == h.pid && f.start_ticks == h.start_ticks && strcmp(f.job_id, idA) == 0,
       "find() by token in another backend: 1, the same process (%d, pid %ld)", rc, (long)f.pid);
    ok(spw_local_count(lb2) == 1, "and it is tracked there");
    ok(ops->find(lb2, tokOther, &f, &err) == 0, "another daemon's token: 0, nothing touched");
    ok(alive(h.pid), "the job still runs");
    memset(&x, 0, sizeof(x));
    ok(wait_exit(lb, &x, 10) && x.kind == SPW_EXIT_EXITED && x.status == 6,
       "its own backend reaps exit 6");
    /* (lb2 lives in this process, to which the shim is a child that lb
     * reaped: start it afresh; the orphan below is adopted across
     * processes.) */
    spw_local_destroy(lb2);
    lb2 = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3, .run_dir = rundir}, NULL);
    ok(spw_local_read_exit_token(rundir, tokA, &k, &st) == 0 && k == SPW_EXIT_EXITED && st == 6,
       "the fence holds the exit record (%s %d)", spw_exit_kind_name(k), st);
    ok(spw_local_read_exit_token(rundir, tokB, &k, &st) < 0 &&
           errno == ENOENT, "a fence find() made has none");
    k = SPW_EXIT_LOST;
    st = -1;
    rc = ops->read_exit(lb2, tokA, idA, &k, &st);
    ok(rc == 0 && k == SPW_EXIT_EXITED && st == 6,
       "the table's read_exit reads it by token (%s %d)", spw_exit_kind_name(k), st);
    errno = 0;
    ok(ops->read_exit(lb2, tokB, idA, &k, &st) < 0 && errno == ENOENT,
       "and finds none in find()'s fence, whatever the job id's record");
    snprintf(name, sizeof(name), "%s.out", idA);
    ok(strstr(slurp(tmp, name, buf, sizeof(buf)), tokA) != NULL,
       "SPILLWAY_LAUNCH_TOKEN is in the job's environment");
    ok(ops->find(lb2, tokA, &f, &err) == 0, "after its end, find() says 0");
    ok(ops->find(lb2, "nodots", &f, &err) < 0 && errno == EINVAL, "a malformed token is refused");

    spw_local_destroy(lb2);
    spw_local_destroy(nodir);
    spw_local_destroy(lb);
}

/* A job whose launcher died right after the fork (forked before any
 * backend of ours exists, so the launcher has nothing of ours to leak). */
static void test_token_orphan(void)
{
    char rundir[PATH_MAX], idA[64], tokC[96];
    spw_handle_t h, f;
    spw_exit_t x;
    spw_error_t err = {""};
    spw_exit_kind_t k = SPW_EXIT_LOST;
    int st = -1, rc;

    snprintf(rundir, sizeof(rundir), "%s/run", tmp);
    snprintf(idA, sizeof(idA), "tok-%ld", (long)getpid());
    snprintf(tokC, sizeof(tokC), "aaaaaaaaaaaa.%s.3", idA);
    if (!ok(launch_orphan_token(rundir, idA, tokC, "sleep 0.3; exit 7", &h) == 0,
            "a job whose launcher is gone"))
        return;
    spw_local_t *lb2 = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3, .run_dir = rundir},
                                        NULL);
    memset(&x, 0, sizeof(x));
    rc = ops->find(lb2, tokC, &f, &err);
    ok(rc == 1 && f.pid == h.pid, "find() adopts it (%d)", rc);
    ok(wait_exit(lb2, &x, 10) && x.kind == SPW_EXIT_EXITED && x.status == 7,
       "and reads its exit 7 (%s %d)", spw_exit_kind_name(x.kind), x.status);
    ok(spw_local_read_exit_token(rundir, tokC, &k, &st) == 0 && st == 7, "its record by token");
    spw_local_destroy(lb2);
}

/* A FIFO or a link at a job's log name neither blocks the launch nor sends
 * the output elsewhere. */
static void test_hostile_logs(void)
{
    char path[PATH_MAX], target[PATH_MAX], buf[256];
    void *be = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3}, NULL);
    spw_handle_t h;
    spw_exit_t x;
    spw_error_t err = {""};
    struct stat sb;

    snprintf(path, sizeof(path), "%s/fifo-job.out", tmp);
    ok(mkfifo(path, 0600) == 0, "a FIFO at fifo-job.out");
    snprintf(path, sizeof(path), "%s/fifo-job.err", tmp);
    snprintf(target, sizeof(target), "%s/elsewhere", tmp);
    ok(symlink(target, path) == 0, "a symbolic link at fifo-job.err");
    spw_launch_t r = base_req("fifo-job");
    r.script = "echo out; echo err >&2";
    double t0 = wall_s();
    alarm(20);  /* a blocked open would hang the test: fail it instead */
    int rc = ops->launch(be, &r, &h, &err);
    alarm(0);
    if (!ok(rc == 0, "the launch does not block (%.2f s)", wall_s() - t0))
        diag("%s", err.text);
    ok(wall_s() - t0 < 5, "and returns at once");
    memset(&x, 0, sizeof(x));
    ok(rc == 0 && wait_exit(be, &x, 10) && x.kind == SPW_EXIT_EXITED && x.status == 0, "it runs");
    snprintf(path, sizeof(path), "%s/fifo-job.out", tmp);
    ok(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode), "its .out is now a regular file");
    is_str(slurp(tmp, "fifo-job.out", buf, sizeof(buf)), "out\n", "holding its output");
    snprintf(path, sizeof(path), "%s/fifo-job.err", tmp);
    ok(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode), "its .err too, no longer a link");
    ok(!exists(tmp, "elsewhere"), "the link's target was never written");
    spw_local_destroy(be);
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
    uint32_t m = 0;
    spw_local_t *lb = spw_local_create(NULL, NULL);

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
    n = ops->version >= 4 && ops->detect_gpus ? ops->detect_gpus(lb, &m, &err) : -1;
    ok(n == 0 && m == 4, "the table's detect_gpus counts the same (%u)", m);

    write_script(dir, "nvidia-smi",
                 "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"; exit 9");
    ok(spw_local_detect_gpus(&n, &err) < 0 && n == 0, "failing nvidia-smi: -1 and 0 GPUs");
    is_str(err.text, "nvidia-smi failed (exit 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
           "its message is passed on");
    m = 7;
    ok(ops->detect_gpus(lb, &m, &err) < 0 && m == 0 && strstr(err.text, "(exit 9)"),
       "the table's detect_gpus fails the same: %s", err.text);

    write_script(dir, "nvidia-smi", "echo 'No devices were found'");
    if (!ok(spw_local_detect_gpus(&n, &err) < 0 && strstr(err.text, "'No devices were found'"),
       "unexpected output is reported"))
        diag("%s", err.text);

    if (old)
        setenv("PATH", old, 1);
    free(old);
    spw_local_destroy(lb);
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
    ok(ops->version >= 1 && ops->version <= SPW_BACKEND_VERSION, "ops table version %d",
       ops->version);
    is_str(ops->name, "local", "ops table name");

    be = spw_local_create(&(spw_local_opts_t){.grace_s = 0.3}, &err);
    if (!ok(be != NULL, "backend created"))
        diag("%s", err.text);

    test_launch_failures(be);  /* first: it checks that no child exists at all */
    test_script_logs_and_gpus(be);
    test_argv_no_shell(be);
    test_no_fd_leak(be);
    test_shim(be);
    test_cancel_group(be);
    test_leftovers_killed(be);
    test_cancel_escalates(be);
    test_max_runtime(be);
    test_env_and_workdir(be);
    test_env_pass(be);
    test_set_user(be);
    ops->destroy(be);

    test_adopt();
    test_adopt_shim();
    test_adopt_own_child();
    test_tokens();
    test_token_orphan();
    test_hostile_logs();
    test_poll_max_and_destroy();
    test_detect_gpus();

    diag("took %.2f s", wall_s() - t0);
    rm_rf(tmp);
    return done_testing();
}
