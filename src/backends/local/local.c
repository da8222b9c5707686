/* local.c: the local backend: each job is a process group on this machine,
 * started by a forked shim that forks + execs the job and records its exit,
 * stopped with SIGTERM then SIGKILL, reaped without blocking.  See local.h
 * for the contract. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/file.h"
#include "util/strbuf.h"
#include "backends/cgroup.h"
#include "backends/container.h"
#include "backends/local/local.h"

extern char **environ;

/* One tracked job. */
typedef struct job {
    spw_handle_t h;             /* as given to the daemon */
    int own;                    /* 1: our child, reaped with waitid; 0: adopted
                                   after a restart, watched through /proc */
    spw_exit_cause_t cause;     /* why we are stopping it; NONE if we are not */
    double term_s;              /* daemon clock when SIGTERM was sent, seconds;
                                   NAN until then */
    int killed;                 /* SIGKILL has been sent */
} job_t;

struct spw_local {
    double grace_s;             /* SIGTERM to SIGKILL delay, seconds */
    char *log_dir;              /* where adopted jobs' exit records are read
                                   from when they have no token, owned;
                                   NULL = not read */
    char *run_dir;              /* launch fences and exit records by token,
                                   owned; NULL = no fences (and no find) */
    uint64_t max_log_bytes;     /* cap of each log file (the shim copies
                                   the job's output); 0 = none */
    job_t *jobs;                /* tracked jobs in launch/adopt order, owned */
    size_t njobs;               /* entries used in jobs */
    size_t cap;                 /* entries allocated in jobs */
    spw_cgroups_t cg;           /* a cgroup per job (named by its launch
                                   token), or kind NONE: process groups */
    char *image_dir;            /* the trusted OCI image cache (a directory
                                   per team under it), owned; NULL = none */
    uint64_t image_max_bytes;   /* bound of an archive and its tree, bytes */
    uint64_t image_max_files;   /* bound of the entries it unpacks to */
};

/* ---- small helpers ---------------------------------------------------- */

static const char *const reserved_env[] = {"CUDA_VISIBLE_DEVICES", "SPILLWAY_JOB_ID",
                                           "SPILLWAY_LAUNCH_TOKEN"};
#define NRESERVED (sizeof(reserved_env) / sizeof(reserved_env[0]))

static size_t env_name_len(const char *s)
{
    const char *eq = strchr(s, '=');
    return eq ? (size_t)(eq - s) : strlen(s);
}

static int env_name_is(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return env_name_len(entry) == n && strncmp(entry, name, n) == 0;
}

static int job_id_valid(const char *id)
{
    return spw_safe_name(id, SPW_JOB_ID_MAX);
}

/* Returns a newly allocated a[0..alen) + b + c + d. */
static char *join(const char *a, size_t alen, const char *b, const char *c, const char *d)
{
    size_t bl = strlen(b), cl = strlen(c), dl = strlen(d);
    char *s = spw_xmalloc(alen + bl + cl + dl + 1);
    memcpy(s, a, alen);
    memcpy(s + alen, b, bl);
    memcpy(s + alen + bl, c, cl);
    memcpy(s + alen + bl + cl, d, dl + 1);
    return s;
}

/* What /proc says about one process. */
typedef struct proc_info {
    char state;                 /* one-letter state; 'Z' = zombie */
    pid_t ppid;                 /* parent process id */
    uint64_t start_ticks;       /* start time after boot, clock ticks */
} proc_info_t;

/* Reads at most cap - 1 bytes of the small file at path into buf, NUL-
 * terminated, in one read (the kernel's /proc files and our exit records
 * come whole).  The length, or -1 with errno from open or read. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), e;
    if (fd < 0)
        return -1;
    do
        n = read(fd, buf, cap - 1);
    while (n < 0 && errno == EINTR);
    e = errno;
    close(fd);
    if (n < 0)
        return errno = e, -1;
    buf[n] = '\0';
    return n;
}

static int proc_read(pid_t pid, proc_info_t *pi)
{
    char path[64], buf[2048];
    const char *p;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (read_small(path, buf, sizeof(buf)) < 0)
        return errno == ENOENT ? (errno = ESRCH, -1) : -1;
    /* The command name (field 2) is in parentheses and may itself contain
     * spaces and parentheses: the fields resume after the last ')'. */
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s"
                            " %*s %*s %*s %*s %*s %*s %*s %" SCNu64,
                     &pi->state, &pi->ppid, &pi->start_ticks) != 3)
        return errno = EPROTO, -1;
    return 0;
}

int spw_local_proc_start(pid_t pid, uint64_t *start_ticks, char *state,
                         spw_error_t *err)
{
    proc_info_t pi;

    if (pid <= 0) {
        errno = ESRCH;
        return spw_errorf(err, "invalid process id %ld", (long)pid);
    }
    if (proc_read(pid, &pi) < 0) {
        int e = errno;
        spw_errorf(err, "cannot read /proc/%ld/stat: %s", (long)pid,
                   e == ESRCH ? "no such process" : strerror(e));
        errno = e;
        return -1;
    }
    *start_ticks = pi.start_ticks;
    if (state)
        *state = pi.state;
    return 0;
}

int spw_local_find_token(const char *token, pid_t *pid, uint64_t *start_ticks)
{
    char want[SPW_TOKEN_MAX + 32];
    int wn = snprintf(want, sizeof(want), "SPILLWAY_LAUNCH_TOKEN=%s", token ? token : "");
    DIR *dir = opendir("/proc");
    if (!dir || !token || !token[0] || wn <= 0 || (size_t)wn >= sizeof(want)) {
        if (dir)
            closedir(dir);
        return errno = ESRCH, -1;
    }
    struct dirent *de;
    int found = 0;
    while (!found && (de = readdir(dir))) {
        char *end;
        long p = strtol(de->d_name, &end, 10);
        if (*end || p <= 0)
            continue;
        /* The job is the shim's child, in the shim's group; the shim itself
         * never execs, so its environment is the daemon's, not the job's.
         * Checking the parent first spares reading most environments. */
        pid_t leader = getpgid((pid_t)p);
        proc_info_t pi;
        if (leader <= 0 || leader == (pid_t)p || proc_read((pid_t)p, &pi) < 0 ||
            pi.ppid != leader)
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%ld/environ", p);
        size_t len;
        char *env = spw_read_file(path, &len, NULL);
        if (!env)
            continue;
        for (size_t i = 0; i < len; i += strlen(env + i) + 1)
            if (strcmp(env + i, want) == 0) {
                found = 1;
                break;
            }
        free(env);
        uint64_t ticks;
        if (found && spw_local_proc_start(leader, &ticks, NULL, NULL) == 0) {
            *pid = leader;
            *start_ticks = ticks;
        } else {
            found = 0;
        }
    }
    closedir(dir);
    return found ? 0 : (errno = ESRCH, -1);
}

/* Parses an exit record: exactly what the shim writes. */
static int parse_exit(const char *buf, spw_exit_kind_t *kind, int *status)
{
    const char *p;
    long v = 0;
    int digits = 0;
    spw_exit_kind_t k;

    /* Exactly what the shim writes: "exited N\n" or "signaled N\n". */
    if (strncmp(buf, "exited ", 7) == 0) {
        k = SPW_EXIT_EXITED;
        p = buf + 7;
    } else if (strncmp(buf, "signaled ", 9) == 0) {
        k = SPW_EXIT_SIGNALED;
        p = buf + 9;
    } else {
        return errno = EPROTO, -1;
    }
    for (; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
        v = v * 10 + (*p - '0');
    if (!digits || strcmp(p, "\n") != 0 ||
        (k == SPW_EXIT_EXITED ? v > 255 : v < 1 || v >= NSIG))
        return errno = EPROTO, -1;
    *kind = k;
    *status = (int)v;
    return 0;
}

int spw_local_read_exit(const char *log_dir, const char *job_id, spw_exit_kind_t *kind,
                        int *status)
{
    char buf[32], *path;
    ssize_t n;
    int e;

    if (!log_dir || !log_dir[0] || !job_id || !job_id_valid(job_id))
        return errno = EINVAL, -1;
    path = join(log_dir, strlen(log_dir), "/", job_id, ".exit");
    n = read_small(path, buf, sizeof(buf));
    e = errno;
    free(path);
    if (n < 0)
        return errno = e, -1;
    return parse_exit(buf, kind, status);
}

int spw_local_read_exit_token(const char *run_dir, const char *token, spw_exit_kind_t *kind,
                              int *status)
{
    char buf[32], *path;
    ssize_t n;
    int fd, e;

    if (!run_dir || !run_dir[0] || !token || !spw_safe_name(token, SPW_TOKEN_MAX))
        return errno = EINVAL, -1;
    path = join(run_dir, strlen(run_dir), "/", token, "");
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    e = errno;
    free(path);
    if (fd < 0)
        return errno = e, -1;
    do
        n = pread(fd, buf, sizeof(buf) - 1, SPW_LOCAL_FENCE_EXIT_OFF);
    while (n < 0 && errno == EINTR);
    e = errno;
    close(fd);
    if (n < 0)
        return errno = e, -1;
    buf[n] = '\0';
    if (n == 0 || buf[0] == '\0')
        return errno = ENOENT, -1;   /* the shim has recorded nothing */
    return parse_exit(buf, kind, status);
}

/* The exit record of the launch with token, else (no token) of job_id's
 * last launch: what poll() reads for a job that is not our child. */
static int read_record(const spw_local_t *lb, const char *token, const char *job_id,
                       spw_exit_kind_t *kind, int *status)
{
    if (token && token[0])
        return spw_local_read_exit_token(lb->run_dir, token, kind, status);
    return spw_local_read_exit(lb->log_dir, job_id, kind, status);
}

/* The table's read_exit (version 4). */
static int local_read_exit(void *be, const char *token, const char *job_id,
                           spw_exit_kind_t *kind, int *status)
{
    return read_record(be, token, job_id, kind, status);
}

/* Whether an adopted job's process is still the one that was started. */
typedef enum ident { IDENT_ALIVE, IDENT_ZOMBIE, IDENT_GONE, IDENT_REUSED } ident_t;

static ident_t identify(const spw_handle_t *h)
{
    proc_info_t pi;

    if (proc_read(h->pid, &pi) < 0)
        /* Unreadable for another reason than absence: fall back to kill(). */
        return errno == ESRCH || (kill(h->pid, 0) < 0 && errno == ESRCH)
               ? IDENT_GONE : IDENT_ALIVE;
    if (pi.start_ticks != h->start_ticks)
        return IDENT_REUSED;
    return pi.state == 'Z' || pi.state == 'X' ? IDENT_ZOMBIE : IDENT_ALIVE;
}

/* Sends sig to the job's cgroup (every process it started, one that left
 * the session among them) and to its process group.  For our own children
 * the group id is safe to use: the leader is not reaped until poll(), so its
 * pid, which is the group id, cannot be reused.  For an adopted job we first
 * check the leader's identity; if it is gone altogether we still signal the
 * group, to reach processes it left behind, accepting the small chance that
 * the id was reused meanwhile by a new group leader.  The cgroup, named by
 * the launch token, is this job's alone whatever happened to the pids. */
static int signal_group(const spw_local_t *lb, const job_t *j, int sig)
{
    int n = j->h.token[0] ? spw_cgroup_signal(&lb->cg, j->h.token, sig) : -1;
    if (!j->own && identify(&j->h) == IDENT_REUSED)
        return n > 0 ? 0 : (errno = ESRCH, -1);
    int rc = kill(-j->h.pgid, sig);
    return rc == 0 || n > 0 ? 0 : -1;
}

/* Ends every process of job j: its cgroup (emptied and removed) and its
 * process group (unless the group id may be someone else's now). */
static void kill_all(const spw_local_t *lb, const job_t *j, int group)
{
    if (j->h.token[0])
        spw_cgroup_kill(&lb->cg, j->h.token);
    if (group)
        kill(-j->h.pgid, SIGKILL);
}

static job_t *find_job(spw_local_t *lb, const spw_handle_t *h)
{
    for (size_t i = 0; i < lb->njobs; i++)
        if (lb->jobs[i].h.pid == h->pid &&
            lb->jobs[i].h.start_ticks == h->start_ticks)
            return &lb->jobs[i];
    return NULL;
}

static void track(spw_local_t *lb, const spw_handle_t *h, int own)
{
    job_t *j;

    if (lb->njobs == lb->cap) {
        lb->cap = lb->cap ? 2 * lb->cap : 16;
        lb->jobs = spw_xrealloc(lb->jobs, lb->cap * sizeof(*lb->jobs));
    }
    j = &lb->jobs[lb->njobs++];
    memset(j, 0, sizeof(*j));
    j->h = *h;
    j->own = own;
    j->cause = SPW_CAUSE_NONE;
    j->term_s = NAN;
}

static int not_tracked(const spw_handle_t *h, spw_error_t *err)
{
    errno = ESRCH;
    return spw_errorf(err, "job %.*s (pid %ld) is not running under the local backend",
                      SPW_JOB_ID_MAX, h->job_id, (long)h->pid);
}

/* ---- the child, between fork and exec --------------------------------- */

/* Only async-signal-safe calls from fork to execve, and in the shim for its
 * whole life: the daemon may have threads, and one of them may hold the
 * malloc lock at fork time.  (close_range and prctl are plain system calls
 * too, though POSIX does not list them.) */

enum { STAGE_SETUP = 1, STAGE_USER, STAGE_CHDIR, STAGE_EXEC };

typedef struct child_report {
    int stage;                  /* STAGE_*: what failed */
    int err;                    /* its errno */
} child_report_t;

/* Everything the shim and the job need, prepared by the parent. */
typedef struct child_plan {
    const char *file;           /* program: a path, or a name to search */
    char *const *argv;          /* its arguments */
    char *const *envp;          /* its environment */
    const char *path;           /* PATH to search when file has no '/' */
    const char *workdir;        /* NULL = stay */
    int set_user;               /* 1: switch to uid/gid before exec */
    uid_t uid;                  /* the job's user, when set_user */
    gid_t gid;                  /* the job's only group, when set_user */
    const char *exit_path;      /* LOG_DIR/JOBID.exit, the shim's record
                                   when there is no fence; NULL with one */
    const char *exit_tmp;       /* LOG_DIR/JOBID.exit.tmp, renamed to exit_path */
    int max_fd;                 /* descriptors below this are closed in the
                                   shim where close_range is missing */
    int in_fd, out_fd, err_fd;  /* become 0, 1, 2 */
    int report_fd;              /* close-on-exec pipe to the parent */
    int fence_fd;               /* RUN_DIR/TOKEN, exclusively flocked: the
                                   shim keeps it open (and so the lock held)
                                   until it ends; -1 = no fence */
    int cg_fds[SPW_CGROUP_MAX_FDS]; /* the job's cgroup.procs files, which
                                   the job (not the shim) joins; -1 = none */
    uint64_t max_log_bytes;     /* > 0: the job writes to pipes and the
                                   shim copies at most this many bytes to
                                   each of out_fd and err_fd; 0 = the job
                                   writes to them itself */
    char *const *unpack_argv;   /* the OCI unpacker (/bin/sh and
                                   spw_container_unpack_script's words):
                                   the shim runs it as its own user beside
                                   the job, which reads its answer on
                                   descriptor 3; NULL = none */
} child_plan_t;

static void __attribute__((noreturn)) child_fail(int fd, int stage, int e)
{
    child_report_t r = {stage, e};
    if (write(fd, &r, sizeof(r)) < 0) {
        /* Nothing left to tell anyone; the parent sees exit 127. */
    }
    _exit(127);
}

static int fd_above_stdio(int fd)
{
    return fd >= 3 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* execvp with an explicit PATH and environment, async-signal-safe.  Returns
 * the errno to report. */
static int child_exec(const child_plan_t *c)
{
    char buf[PATH_MAX];
    size_t flen = strlen(c->file);
    const char *p = c->path;
    int eacces = 0;

    if (strchr(c->file, '/')) {
        execve(c->file, c->argv, c->envp);
        return errno;
    }
    for (;;) {
        const char *end = p;
        size_t dlen;
        while (*end && *end != ':')
            end++;
        dlen = (size_t)(end - p);
        if (dlen == 0) {  /* an empty PATH entry is the current directory */
            buf[0] = '.';
            dlen = 1;
        } else if (dlen < sizeof(buf)) {
            memcpy(buf, p, dlen);
        }
        if (dlen + 1 + flen < sizeof(buf)) {
            buf[dlen] = '/';
            memcpy(buf + dlen + 1, c->file, flen + 1);
            execve(buf, c->argv, c->envp);
            switch (errno) {
            case EACCES:
                eacces = 1;
                break;
            case ENOENT: case ENOTDIR: case ESTALE: case ENODEV: case ETIMEDOUT:
                break;
            default:
                return errno;  /* found, but cannot run: say why */
            }
        }
        if (!*end)
            break;
        p = end + 1;
    }
    return eacces ? EACCES : ENOENT;
}

/* Every disposition back to default (the shim ignores most signals, and
 * ignoring survives exec), then unblock all.  Async-signal-safe. */
static void signals_default(void)
{
    struct sigaction dfl;
    sigset_t none;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        sigaction(s, &dfl, NULL);  /* fails harmlessly for KILL, STOP, ... */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The job itself, forked by the shim: it inherits the shim's session, process
 * group and descriptors 0-2, and every signal blocked. */
static void __attribute__((noreturn)) job_run(const child_plan_t *c, int rep, int img_fd)
{
    /* A job starts with a clean slate.  A signal sent to the group
     * meanwhile stays pending, since a blocked signal is not discarded even
     * while ignored. */
    signals_default();

    /* The shim stays the daemon's user (it writes the exit record where the
     * job cannot); the job drops to its own user, keeping no supplementary
     * group of the daemon's, before it touches its workdir. */
    if (spw_cgroup_join(c->cg_fds) < 0)
        child_fail(rep, STAGE_SETUP, errno);
    if (c->set_user) {
        if (setgroups(1, &c->gid) < 0 || setgid(c->gid) < 0 || setuid(c->uid) < 0)
            child_fail(rep, STAGE_USER, errno);
        if (getuid() != c->uid || geteuid() != c->uid || getegid() != c->gid)
            child_fail(rep, STAGE_USER, EPERM);
    }
    if (c->workdir && chdir(c->workdir) < 0)
        child_fail(rep, STAGE_CHDIR, errno);
    /* The unpacker's answer becomes descriptor 3 across the exec (the
     * report pipe moved out of its way first). */
    if (img_fd >= 0) {
        if (rep == 3 && img_fd != 3 && (rep = fcntl(rep, F_DUPFD_CLOEXEC, 4)) < 0)
            _exit(127);
        if (img_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(img_fd, 3) < 0)
            child_fail(rep, STAGE_SETUP, errno);
    }
    child_fail(rep, STAGE_EXEC, child_exec(c));
}

/* Writes n in decimal at buf; returns the length (at most 10). */
static size_t put_uint(char *buf, unsigned n)
{
    char tmp[10];
    size_t len = 0, i = 0;
    do
        tmp[len++] = (char)('0' + n % 10);
    while ((n /= 10) && len < sizeof(tmp));
    while (len)
        buf[i++] = tmp[--len];
    return i;
}

/* Reads the shim's own start time (field 22 of /proc/self/stat), async-
 * signal-safe; 0 when it cannot. */
static uint64_t self_start_ticks(void)
{
    char buf[1024];
    ssize_t n;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC | O_NOCTTY), field = 2;
    uint64_t v = 0;
    const char *p = NULL;

    if (fd < 0)
        return 0;
    do
        n = read(fd, buf, sizeof(buf) - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return 0;
    for (ssize_t i = 0; i < n; i++)  /* the fields resume after the last ')' */
        if (buf[i] == ')')
            p = buf + i + 1;
    if (!p)
        return 0;
    for (; p < buf + n && field < 22; p++)
        if (*p == ' ')
            field++;
    for (; p < buf + n && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    return field == 22 ? v : 0;
}

/* Writes "PID TICKS\n" (the shim's handle) into its fence file, so that a
 * daemon that died before recording the handle finds it there.  0 or -1. */
static int shim_fence(int fd)
{
    char buf[48];
    size_t n = put_uint(buf, (unsigned)getpid());
    uint64_t t = self_start_ticks();
    char tmp[24];
    size_t tl = 0;

    if (!t)
        return -1;
    buf[n++] = ' ';
    do
        tmp[tl++] = (char)('0' + t % 10);
    while ((t /= 10) && tl < sizeof(tmp));
    while (tl)
        buf[n++] = tmp[--tl];
    buf[n++] = '\n';
    return pwrite(fd, buf, n, 0) == (ssize_t)n ? 0 : -1;
}

/* Records how the job ended ("exited N\n" or "signaled N\n"): in the fence
 * at SPW_LOCAL_FENCE_EXIT_OFF, one pwrite read only once the shim (holding
 * the lock) is gone; without a fence in LOG_DIR/JOBID.exit, written whole
 * under a temporary name and renamed, so a reader sees either nothing or the
 * complete line. */
static void shim_record(const child_plan_t *c, int fence, int st)
{
    static const char exited[] = "exited ", signaled[] = "signaled ";
    char buf[32];
    size_t n;
    int fd, good;

    if (WIFEXITED(st)) {
        memcpy(buf, exited, sizeof(exited) - 1);
        n = sizeof(exited) - 1;
        n += put_uint(buf + n, (unsigned)WEXITSTATUS(st));
    } else {
        memcpy(buf, signaled, sizeof(signaled) - 1);
        n = sizeof(signaled) - 1;
        n += put_uint(buf + n, (unsigned)WTERMSIG(st));
    }
    buf[n++] = '\n';
    if (fence >= 0) {
        if (pwrite(fence, buf, n, SPW_LOCAL_FENCE_EXIT_OFF) != (ssize_t)n) {
            /* no record: a restarted daemon reports the job lost */
        }
        return;
    }
    fd = open(c->exit_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
              O_NOCTTY, 0640);
    if (fd < 0)
        return;  /* no record: a restarted daemon reports the job lost */
    good = write(fd, buf, n) == (ssize_t)n;
    if (close(fd) < 0)
        good = 0;
    if (!good || rename(c->exit_tmp, c->exit_path) < 0)
        unlink(c->exit_tmp);
}

/* Signals the shim leaves at their default: SIGCHLD (waitpid needs it not
 * ignored), those that cannot be caught, and those a fault raises (ignoring
 * them would make a fault loop).  Every other one it ignores, so that
 * whatever is sent to the group (SIGTERM on cancel, SIGUSR1 through
 * signal(), SIGHUP, SIGTSTP) acts on the job alone and the shim lives to
 * record the outcome.  SIGKILL still ends it. */
static int shim_keeps_default(int s)
{
    switch (s) {
    case SIGCHLD: case SIGKILL: case SIGSTOP:
    case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE: case SIGTRAP: case SIGSYS:
        return 1;
    default:
        return 0;
    }
}

/* Closes every descriptor from 3 up but keep[0..nkeep) (ascending; -1
 * entries ignored), below max_fd where close_range is missing. */
static void shim_close_rest(const int *keep, int nkeep, int max_fd)
{
    int lo = 3, ok = 1;
#ifdef CLOSE_RANGE_CLOEXEC
    for (int i = 0; i < nkeep && ok; i++) {
        if (keep[i] < lo)
            continue;
        ok = keep[i] == lo || close_range((unsigned)lo, (unsigned)keep[i] - 1, 0) == 0;
        lo = keep[i] + 1;
    }
    ok = ok && close_range((unsigned)lo, ~0U, 0) == 0;
#else
    ok = 0;
#endif
    if (!ok)
        for (int fd = 3; fd < max_fd; fd++) {
            int kept = 0;
            for (int i = 0; i < nkeep; i++)
                kept |= fd == keep[i];
            if (!kept)
                close(fd);
        }
}

/* The shim's copy of the job's output (max_log_bytes set): the job's
 * stdout and stderr pipes, read at in[0] and in[1], go to the logs at 1
 * and 2 up to the cap each, until the job has exited and its pipes are
 * drained (a process it left behind that still writes is cut off a second
 * later).  Returns the job's wait status. */
static int shim_copy(pid_t job, const int in[2], uint64_t cap)
{
    struct pollfd pf[2] = {{.fd = in[0], .events = POLLIN}, {.fd = in[1], .events = POLLIN}};
    uint64_t size[2] = {0, 0};
    struct stat st;
    char buf[65536];
    int status = 0, exited = 0, after = 0;
    for (int k = 0; k < 2; k++)
        if (fstat(k + 1, &st) == 0)
            size[k] = (uint64_t)st.st_size;   /* earlier attempts' output counts */
    while (pf[0].fd >= 0 || pf[1].fd >= 0) {
        int r = poll(pf, 2, 50);
        if (r < 0 && errno != EINTR)
            break;
        for (int k = 0; k < 2 && r > 0; k++) {
            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(pf[k].fd, buf, sizeof(buf));
            if (n > 0) {
                spw_log_write_capped(k + 1, buf, (size_t)n, &size[k], cap);
            } else if (n == 0 || errno != EINTR) {
                close(pf[k].fd);
                pf[k].fd = -1;
            }
        }
        if (!exited && waitpid(job, &status, WNOHANG) == job)
            exited = 1;
        /* After the job's exit: what is buffered is read; a writer it left
         * behind gets 20 rounds (a second), then its pipes close. */
        if (exited && (r == 0 || ++after > 20))
            break;
    }
    for (int k = 0; k < 2; k++)
        if (pf[k].fd >= 0)
            close(pf[k].fd);
    while (!exited && waitpid(job, &status, 0) < 0)
        if (errno != EINTR)
            _exit(127);  /* cannot happen: the job is our only child */
    return status;
}

/* Starts the OCI unpacker of c (the trusted side: the shim's user, a
 * clean environment, the shim's process group) with its output on a pipe;
 * returns the pipe's read end (close-on-exec), which the job reads.  Async-
 * signal-safe. */
static int shim_unpack(const child_plan_t *c, int rep)
{
    static char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                "LC_ALL=C", NULL};
    int up[2];
    if (pipe2(up, O_CLOEXEC) < 0 || (up[0] = fd_above_stdio(up[0])) < 0 ||
        (up[1] = fd_above_stdio(up[1])) < 0)
        child_fail(rep, STAGE_SETUP, errno);
    pid_t u = fork();
    if (u < 0)
        child_fail(rep, STAGE_SETUP, errno);
    if (u == 0) {
        signals_default();
        if (dup2(up[1], 1) < 0)
            _exit(127);
        execve("/bin/sh", c->unpack_argv, env);
        _exit(127);
    }
    close(up[1]);
    return up[0];
}

/* The shim, the first child: it makes the session and the log descriptors,
 * forks the job, waits for it, records its outcome and ends the same way.
 * It never execs, so it must shed every descriptor the daemon had open. */
static void __attribute__((noreturn)) shim_run(const child_plan_t *c)
{
    struct sigaction act;
    sigset_t set;
    int rep = c->report_fd, in = c->in_fd, out = c->out_fd, errfd = c->err_fd;
    int fence = c->fence_fd;
    int st;
    int pipes[2][2] = {{-1, -1}, {-1, -1}};   /* the job's stdout, stderr */
    pid_t job;

    /* Block everything while setting dispositions (a daemon handler must run
     * in neither process), and fork the job still blocked: it resets them. */
    sigfillset(&set);
    sigprocmask(SIG_SETMASK, &set, NULL);
    memset(&act, 0, sizeof(act));
    for (int s = 1; s < NSIG; s++) {
        act.sa_handler = shim_keeps_default(s) ? SIG_DFL : SIG_IGN;
        sigaction(s, &act, NULL);  /* fails harmlessly for KILL, STOP, ... */
    }

    if (setsid() < 0)
        child_fail(rep, STAGE_SETUP, errno);
    /* If the daemon runs with 0, 1 or 2 closed, our descriptors may sit
     * there: move them up before dup2 shuffles the low numbers. */
    if ((rep = fd_above_stdio(rep)) < 0)
        _exit(127);
    if ((in = fd_above_stdio(in)) < 0 || (out = fd_above_stdio(out)) < 0 ||
        (errfd = fd_above_stdio(errfd)) < 0 || (fence >= 0 && (fence = fd_above_stdio(fence)) < 0))
        child_fail(rep, STAGE_SETUP, errno);
    /* The handle goes into the fence before the job exists. */
    if (fence >= 0 && shim_fence(fence) < 0)
        child_fail(rep, STAGE_SETUP, errno ? errno : EIO);
    if (c->max_log_bytes)
        for (int k = 0; k < 2; k++)
            if (pipe2(pipes[k], O_CLOEXEC) < 0 || (pipes[k][0] = fd_above_stdio(pipes[k][0])) < 0 ||
                (pipes[k][1] = fd_above_stdio(pipes[k][1])) < 0)
                child_fail(rep, STAGE_SETUP, errno);
    if (dup2(in, 0) < 0 || dup2(c->max_log_bytes ? pipes[0][1] : out, 1) < 0 ||
        dup2(c->max_log_bytes ? pipes[1][1] : errfd, 2) < 0)
        child_fail(rep, STAGE_SETUP, errno);
#ifdef CLOSE_RANGE_CLOEXEC
    /* Whatever the daemon left inheritable (sockets, the database) must not
     * leak into jobs.  Older kernels lack this; the daemon opens with
     * O_CLOEXEC anyway. */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
#endif

    int img_fd = c->unpack_argv ? shim_unpack(c, rep) : -1;
    job = fork();
    if (job < 0)
        child_fail(rep, STAGE_SETUP, errno);
    if (job == 0)
        job_run(c, rep, img_fd);

    /* The shim keeps only 0-2 and its fence (whose lock says, for as long
     * as the shim lives, that this launch is alive), and with a log cap the
     * read ends of the job's pipes, its 1 and 2 becoming the logs.
     * Dropping the report pipe lets the parent see EOF once the job's exec
     * closes its copy; dropping the rest keeps a restarted daemon from
     * finding its listen socket still held open. */
    if (c->max_log_bytes && (dup2(out, 1) < 0 || dup2(errfd, 2) < 0))
        _exit(127);
    {
        int keep[3] = {fence, pipes[0][0], pipes[1][0]};
        for (int a = 0; a < 3; a++)   /* ascending, for shim_close_rest */
            for (int b = a + 1; b < 3; b++)
                if (keep[b] < keep[a]) {
                    int t = keep[a];
                    keep[a] = keep[b];
                    keep[b] = t;
                }
        shim_close_rest(keep, 3, c->max_fd);
    }
    sigemptyset(&set);
    sigprocmask(SIG_SETMASK, &set, NULL);

    if (c->max_log_bytes) {
        int in2[2] = {pipes[0][0], pipes[1][0]};
        st = shim_copy(job, in2, c->max_log_bytes);
    } else {
        while (waitpid(job, &st, 0) < 0)
            if (errno != EINTR)
                _exit(127);  /* cannot happen: the job is our only child */
    }
    shim_record(c, fence, st);
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        /* Die of the same signal, so the daemon's waitid sees what the job
         * saw; but without a core dump of the shim, which would look like a
         * crash of spillway itself. */
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        memset(&act, 0, sizeof(act));
        act.sa_handler = SIG_DFL;
        sigaction(sig, &act, NULL);
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), sig);
        _exit(128 + sig);  /* a signal whose default is not to terminate */
    }
    _exit(WEXITSTATUS(st));
}

/* ---- launch ----------------------------------------------------------- */

/* Builds the job's environment (see local.h).  The array is owned by the
 * caller; the strings are borrowed from environ and req except *owned, a
 * NULL-terminated list of what the caller frees. */
static char **build_env(const spw_launch_t *req, char **owned)
{
    size_t nenv = 0, njob = 0, n = 0, no = 0;
    char **envp, *s;
    size_t len;

    for (char **e = environ; e && *e; e++)
        nenv++;
    for (const char *const *e = req->env; e && *e; e++)
        njob++;
    envp = spw_xcalloc(nenv + njob + 5, sizeof(*envp));

    for (char **e = environ; e && *e; e++) {
        int skip = !spw_env_passes(req->env_pass, *e);
        for (size_t r = 0; r < NRESERVED && !skip; r++)
            skip = env_name_is(*e, reserved_env[r]);
        if (req->workdir && env_name_is(*e, "PWD"))
            skip = 1;
        for (size_t k = 0; k < njob && !skip; k++) {
            size_t nl = env_name_len(req->env[k]);
            skip = env_name_len(*e) == nl && strncmp(*e, req->env[k], nl) == 0;
        }
        if (!skip)
            envp[n++] = *e;
    }
    for (size_t k = 0; k < njob; k++) {
        const char *e = req->env[k];
        size_t nl = env_name_len(e);
        int skip = 0;
        for (size_t r = 0; r < NRESERVED && !skip; r++)
            skip = env_name_is(e, reserved_env[r]);
        for (size_t l = k + 1; l < njob && !skip; l++)  /* the last one wins */
            skip = env_name_len(req->env[l]) == nl && strncmp(req->env[l], e, nl) == 0;
        if (!skip)
            envp[n++] = (char *)e;
    }

    len = sizeof("CUDA_VISIBLE_DEVICES=") + req->ngpus * 11;
    s = spw_xmalloc(len);
    {
        size_t at = (size_t)snprintf(s, len, "CUDA_VISIBLE_DEVICES=");
        for (size_t g = 0; g < req->ngpus; g++)
            at += (size_t)snprintf(s + at, len - at, "%s%" PRIu32, g ? "," : "",
                                   req->gpus[g]);
    }
    envp[n++] = owned[no++] = s;
    envp[n++] = owned[no++] = join("", 0, "SPILLWAY_JOB_ID=", req->job_id, "");
    if (req->token)
        envp[n++] = owned[no++] = join("", 0, "SPILLWAY_LAUNCH_TOKEN=", req->token, "");
    if (req->workdir && req->workdir[0] == '/')
        envp[n++] = owned[no++] = join("", 0, "PWD=", req->workdir, "");
    owned[no] = NULL;
    envp[n] = NULL;
    return envp;
}

static const char *env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; *envp; envp++)
        if (env_name_is(*envp, name))
            return *envp + n + 1;
    return NULL;
}

/* Opens log file `name` in directory dirfd for appending; *created says
 * whether this call made it, so that a failed launch can remove it again.
 * Never blocks and never follows a link: a FIFO, a symbolic link or a
 * device found at the name (put there by a job, say) is removed and a new
 * regular file made in its place, so nothing a job leaves there can hang
 * the launch or send another job's output elsewhere.  A directory there is
 * an error. */
static int open_log(int dirfd, const char *name, int *created)
{
    const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    for (int tries = 0; tries < 3; tries++) {
        struct stat sb;
        int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL, 0640);
        if (fd >= 0) {
            *created = 1;
            return fd;
        }
        if (errno != EEXIST)
            return -1;
        fd = openat(dirfd, name, flags);
        if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
            *created = 0;
            return fd;
        }
        if (fd >= 0)
            close(fd);
        else if (errno == ENOENT)
            continue;  /* removed meanwhile: create it */
        else if (errno != ELOOP && errno != ENXIO && errno != ENODEV && errno != EWOULDBLOCK &&
                 errno != EOPNOTSUPP)
            return -1;
        /* Not a regular file: a link, a FIFO, a socket, a device. */
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
            return -1;
    }
    return errno = EEXIST, -1;
}

static int check_launch(const spw_local_t *lb, const spw_launch_t *req, spw_error_t *err)
{
    if (!req->job_id || !job_id_valid(req->job_id))
        return spw_errorf(err, "invalid job id '%s': use up to %d of A-Z a-z 0-9 . _ -, not starting with '.'",
                          req->job_id ? req->job_id : "", SPW_JOB_ID_MAX - 1);
    if ((req->argv != NULL) == (req->script != NULL))
        return spw_errorf(err, "job %s: give either a command (argv) or a script, not %s",
                          req->job_id, req->argv ? "both" : "neither");
    if (req->argv && (!req->argv[0] || !req->argv[0][0]))
        return spw_errorf(err, "job %s: the command is empty", req->job_id);
    if (!req->log_dir || !req->log_dir[0])
        return spw_errorf(err, "job %s: no log directory", req->job_id);
    if (req->workdir && !req->workdir[0])
        return spw_errorf(err, "job %s: the working directory is empty", req->job_id);
    for (const char *const *e = req->env; e && *e; e++)
        if (!strchr(*e, '=') || (*e)[0] == '=')
            return spw_errorf(err, "job %s: environment entry '%s' is not NAME=VALUE",
                              req->job_id, *e);
    if (req->ngpus && !req->gpus)
        return spw_errorf(err, "job %s: %zu GPUs assigned but no indices given",
                          req->job_id, req->ngpus);
    if (!(req->max_runtime_s >= 0) || isinf(req->max_runtime_s))
        return spw_errorf(err, "job %s: max_runtime must be a finite number of seconds >= 0",
                          req->job_id);
    if (!isfinite(req->now_s))
        return spw_errorf(err, "job %s: the launch time is not a finite number", req->job_id);
    if (req->token && !spw_safe_name(req->token, SPW_TOKEN_MAX))
        return spw_errorf(err, "job %s: invalid launch token '%.*s'", req->job_id,
                          SPW_TOKEN_MAX, req->token);
    if (req->token && !lb->run_dir)
        return spw_errorf(err, "job %s: a launch token needs the backend's run_dir", req->job_id);
    return 0;
}

/* Whether program name (no '/') is an executable in the daemon's PATH, or at
 * /usr/bin/NAME. */
static int have_program(const char *name)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    if (!path)
        path = "/usr/local/bin:/bin:/usr/bin";
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && n + strlen(name) + 2 < sizeof(buf)) {
            snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, name);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        if (!end)
            break;
        p = end;
    }
    snprintf(buf, sizeof(buf), "/usr/bin/%s", name);
    return access(buf, X_OK) == 0;
}

/* Checks that this machine can run req->image (container.h says how each
 * form runs), so that a launch it cannot run fails with the reason rather
 * than starting a job that dies at once.  *archive becomes the path of an
 * OCI archive that the trusted side must unpack (bubblewrap and a cache
 * here), else NULL. */
static int check_image(const spw_local_t *lb, const spw_launch_t *req, const char **archive,
                       spw_error_t *err)
{
    const char *img = req->image, *path = img;
    int podman = have_program("podman"), bwrap = have_program("bwrap");
    struct stat st;
    if (strncmp(img, "oci-archive:", 12) == 0)
        path = img + 12;
    if (path[0] != '/') {
        if (!podman)
            return spw_errorf(err, "job %s: image %s is a registry reference, which needs "
                              "podman on this host (not installed); give an unpacked root "
                              "filesystem or an OCI archive to run it under bubblewrap",
                              req->job_id, img);
        return 0;
    }
    if (stat(path, &st) < 0)
        return spw_errorf(err, "job %s: image %s: %s on this host", req->job_id, path,
                          strerror(errno));
    if (S_ISDIR(st.st_mode) && path == img) {
        if (!bwrap)
            return spw_errorf(err, "job %s: image %s is a root filesystem directory, which "
                              "needs bubblewrap (bwrap) on this host (not installed)",
                              req->job_id, img);
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return spw_errorf(err, "job %s: image %s is neither a directory (an unpacked root "
                          "filesystem) nor a file (an OCI archive)", req->job_id, path);
    if (!podman && !bwrap)
        return spw_errorf(err, "job %s: image %s needs podman or bubblewrap (bwrap) on this "
                          "host; neither is installed", req->job_id, img);
    if (!podman && !lb->image_dir)
        return spw_errorf(err, "job %s: image %s is an OCI archive, which needs podman or an "
                          "image cache (the daemon's state dir) on this host", req->job_id, img);
    int tools = have_program("skopeo") && have_program("umoci");
    if (!podman && !tools)
        return spw_errorf(err, "job %s: image %s is an OCI archive: unpacking it for bubblewrap "
                          "needs skopeo and umoci on this host (apt-get install skopeo umoci), "
                          "or podman to run it", req->job_id, img);
    /* Unpacked into the cache and run under bubblewrap where it can be
     * (container.h), else by podman. */
    *archive = bwrap && lb->image_dir && tools ? path : NULL;
    return 0;
}

/* The words of req's OCI unpacker (container.h) for the archive at path:
 * the team's cache under lb->image_dir, the bounds, the job's user, and
 * RUN_DIR/TOKEN.image for the reason of a refusal (read by local_poll).
 * Free with spw_container_argv_free. */
static char **unpack_argv(const spw_local_t *lb, const spw_launch_t *req, const char *path)
{
    char **v = spw_xcalloc(12, sizeof(char *)), buf[32], team[SPW_IMAGE_TEAM_DIR_MAX];
    size_t k = 0;
    spw_container_team_dir(team, sizeof(team), req->team);
    v[k++] = spw_xstrdup("sh");
    v[k++] = spw_xstrdup("-c");
    v[k++] = spw_xstrdup(spw_container_unpack_script());
    v[k++] = spw_xstrdup("spw-unpack");
    v[k++] = spw_xstrdup(path);
    v[k++] = join(lb->image_dir, strlen(lb->image_dir), "/", team, "");
    snprintf(buf, sizeof(buf), "%" PRIu64, lb->image_max_bytes);
    v[k++] = spw_xstrdup(buf);
    snprintf(buf, sizeof(buf), "%" PRIu64, lb->image_max_files);
    v[k++] = spw_xstrdup(buf);
    snprintf(buf, sizeof(buf), "%ld", (long)req->uid);
    v[k++] = spw_xstrdup(req->set_user ? buf : "");
    snprintf(buf, sizeof(buf), "%ld", (long)req->gid);
    v[k++] = spw_xstrdup(req->set_user ? buf : "");
    v[k++] = lb->run_dir && req->token ? join(lb->run_dir, strlen(lb->run_dir), "/", req->token,
                                              ".image")
                                       : spw_xstrdup("");
    return v;
}

/* The command that runs the job in req->image: /bin/sh with the script of
 * container.h, then the job's own command.  Returns a NULL-terminated argv
 * whose strings [0..3] are owned (free with free_image_argv); the rest are
 * borrowed from req. */
static char **image_argv(const spw_launch_t *req)
{
    size_t n = 0, ne = 0;
    while (req->argv && req->argv[n])
        n++;
    while (req->env && req->env[ne])
        ne++;
    /* podman passes on the job's variables by name, and the ones set here. */
    const char **names = spw_xcalloc(ne + 4, sizeof(char *));
    char **heap = spw_xcalloc(ne + 1, sizeof(char *));
    size_t nn = 0;
    for (size_t i = 0; i < ne; i++) {
        size_t l = env_name_len(req->env[i]);
        heap[i] = spw_xmalloc(l + 1);
        memcpy(heap[i], req->env[i], l);
        heap[i][l] = '\0';
        names[nn++] = heap[i];
    }
    names[nn++] = "CUDA_VISIBLE_DEVICES";
    names[nn++] = "SPILLWAY_JOB_ID";
    if (req->token)
        names[nn++] = "SPILLWAY_LAUNCH_TOKEN";
    const char *ckpt = NULL;
    for (size_t i = 0; i < ne; i++)
        if (env_name_is(req->env[i], "SPILLWAY_CHECKPOINT_DIR"))
            ckpt = req->env[i] + sizeof("SPILLWAY_CHECKPOINT_DIR");
    /* The shim's unpacker answers on descriptor 3 (shim_unpack). */
    spw_container_t c = {req->image, req->token, req->workdir, ckpt, req->gpus, req->ngpus,
                         names,
                         "spw_image() { IFS= read -r l <&3 || l=\"the image unpacker gave no answer ($1)\";"
                         " echo \"$l\"; case $l in /*) ;; *) return 1;; esac; }\n"};
    spw_strbuf_t sb = {0};
    spw_strbuf_add(&sb, "die() { echo \"spillway: $*\" >&2; exit 126; }\n");
    spw_container_wrap(&sb, &c);
    spw_strbuf_add(&sb, "exec 3<&-; exec \"$@\"\n");
    for (size_t i = 0; i < ne; i++)
        free(heap[i]);
    free(heap);
    free(names);

    char **v = spw_xcalloc(n + 8, sizeof(char *));
    size_t k = 0;
    v[k++] = spw_xstrdup("sh");
    v[k++] = spw_xstrdup("-c");
    v[k++] = sb.s;
    v[k++] = spw_xstrdup("spw-container");
    if (req->argv) {
        for (size_t i = 0; i < n; i++)
            v[k++] = (char *)req->argv[i];
    } else {
        v[k++] = (char *)"/bin/sh";
        v[k++] = (char *)"-c";
        v[k++] = (char *)req->script;
    }
    v[k] = NULL;
    return v;
}

static void free_image_argv(char **v)
{
    if (v)
        for (int i = 0; i < 4; i++)
            free(v[i]);
    free(v);
}

static int local_launch(void *be, const spw_launch_t *req, spw_handle_t *out,
                        spw_error_t *err)
{
    static const char *const std_path = "/usr/local/bin:/bin:/usr/bin";
    spw_local_t *lb = be;
    char *owned[5] = {NULL};
    char **envp = NULL, **img_argv = NULL, **unpack = NULL;
    const char *archive = NULL;
    char *out_name = NULL, *err_name = NULL, *exit_path = NULL, *exit_tmp = NULL;
    char *fence_path = NULL;
    const char *sh_argv[4] = {"sh", "-c", NULL, NULL};
    int in_fd = -1, out_fd = -1, err_fd = -1, pipefd[2] = {-1, -1}, dir_fd = -1, fence_fd = -1;
    int out_created = 0, err_created = 0, cg_made = 0;
    int cg_fds[SPW_CGROUP_MAX_FDS] = {-1, -1, -1};
    child_plan_t plan;
    child_report_t rep;
    spw_handle_t h;
    ssize_t n;
    long max_fd;
    pid_t pid;

    if (check_launch(lb, req, err) < 0)
        return -1;
    if (req->image && check_image(lb, req, &archive, err) < 0)
        return -1;

    out_name = join(req->job_id, strlen(req->job_id), ".out", "", "");
    err_name = join(req->job_id, strlen(req->job_id), ".err", "", "");
    if (req->token) {
        /* The exit record is this attempt's alone: in its fence. */
        fence_path = join(lb->run_dir, strlen(lb->run_dir), "/", req->token, "");
    } else {
        exit_path = join(req->log_dir, strlen(req->log_dir), "/", req->job_id, ".exit");
        exit_tmp = join(req->log_dir, strlen(req->log_dir), "/", req->job_id, ".exit.tmp");
    }
    if ((dir_fd = open(req->log_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        spw_errorf(err, "job %s: cannot open log directory '%s': %s", req->job_id,
                   req->log_dir, strerror(errno));
        goto error;
    }
    if ((out_fd = open_log(dir_fd, out_name, &out_created)) < 0) {
        spw_errorf(err, "job %s: cannot open log file '%s/%s': %s", req->job_id,
                   req->log_dir, out_name, strerror(errno));
        goto error;
    }
    if ((err_fd = open_log(dir_fd, err_name, &err_created)) < 0) {
        spw_errorf(err, "job %s: cannot open log file '%s/%s': %s", req->job_id,
                   req->log_dir, err_name, strerror(errno));
        goto error;
    }
    if (fence_path) {
        /* The fence: made new (a token is launched at most once) and locked
         * before the fork; the shim inherits the lock and holds it for its
         * whole life, so find() can tell "alive" from "gone or never
         * started" without a race (see local.h). */
        fence_fd = open(fence_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
                        O_CLOEXEC | O_NOCTTY, 0600);
        if (fence_fd < 0) {
            spw_errorf(err, "job %s: cannot create the launch fence '%s': %s%s", req->job_id,
                       fence_path, strerror(errno),
                       errno == EEXIST ? " (this launch token was used before)" : "");
            free(fence_path);
            fence_path = NULL;  /* not ours: keep it */
            goto error;
        }
        if (flock(fence_fd, LOCK_EX | LOCK_NB) < 0) {
            spw_errorf(err, "job %s: cannot lock the launch fence '%s': %s", req->job_id,
                       fence_path, strerror(errno));
            goto error;
        }
    }
    if ((in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        spw_errorf(err, "job %s: cannot open /dev/null: %s", req->job_id, strerror(errno));
        goto error;
    }
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        spw_errorf(err, "job %s: cannot make a pipe: %s", req->job_id, strerror(errno));
        goto error;
    }
    /* Its cgroup, named by the launch token, which a restarted daemon
     * knows too. */
    if (req->token && lb->cg.kind != SPW_CGROUP_NONE) {
        if (spw_cgroup_create(&lb->cg, req->token, req->gpus, req->ngpus, cg_fds, err) < 0)
            goto error;
        cg_made = 1;
    }

    envp = build_env(req, owned);
    memset(&plan, 0, sizeof(plan));
    if (req->image) {
        img_argv = image_argv(req);
        plan.file = "/bin/sh";
        plan.argv = img_argv;
        if (archive)
            plan.unpack_argv = unpack = unpack_argv(lb, req, archive);
    } else if (req->script) {
        sh_argv[2] = req->script;
        plan.file = "/bin/sh";
        plan.argv = (char *const *)sh_argv;
    } else {
        plan.file = req->argv[0];
        plan.argv = (char *const *)req->argv;
    }
    plan.envp = envp;
    plan.path = env_get(envp, "PATH");
    if (!plan.path)
        plan.path = std_path;
    plan.workdir = req->workdir;
    plan.set_user = req->set_user;
    plan.uid = req->uid;
    plan.gid = req->gid;
    plan.in_fd = in_fd;
    plan.out_fd = out_fd;
    plan.err_fd = err_fd;
    plan.report_fd = pipefd[1];
    plan.fence_fd = fence_fd;
    plan.max_log_bytes = lb->max_log_bytes;
    plan.exit_path = exit_path;
    plan.exit_tmp = exit_tmp;
    memcpy(plan.cg_fds, cg_fds, sizeof(cg_fds));
    max_fd = sysconf(_SC_OPEN_MAX);
    plan.max_fd = max_fd < 1024 ? 1024 : max_fd > 65536 ? 65536 : (int)max_fd;

    /* The record of an earlier attempt of this job must not be mistaken for
     * this one's (logs are appended to, but the record is replaced). */
    if (exit_path && unlink(exit_path) < 0 && errno != ENOENT) {
        spw_errorf(err, "job %s: cannot remove the old exit record '%s': %s", req->job_id,
                   exit_path, strerror(errno));
        goto error;
    }

    pid = fork();
    if (pid < 0) {
        spw_errorf(err, "job %s: cannot start a process: %s", req->job_id, strerror(errno));
        goto error;
    }
    if (pid == 0)
        shim_run(&plan);

    close(pipefd[1]);
    pipefd[1] = -1;
    for (int i = 0; i < SPW_CGROUP_MAX_FDS; i++)
        if (cg_fds[i] >= 0) {
            close(cg_fds[i]);
            cg_fds[i] = -1;
        }
    if (fence_fd >= 0) {
        close(fence_fd);  /* the shim holds the lock now */
        fence_fd = -1;
    }
    /* EOF means execve succeeded: the job's copy of the pipe closed on exec
     * and the shim closed its own right after forking the job.  A report
     * means the shim or the job failed and is about to _exit (the shim after
     * the job, having recorded exit 127, which is removed below). */
    do
        n = read(pipefd[0], &rep, sizeof(rep));
    while (n < 0 && errno == EINTR);
    if (n != 0) {
        int st;
        if (n < 0) {  /* cannot tell whether it started: make sure it did not */
            kill(pid, SIGKILL);   /* first the shim, so it forks nothing more, */
            kill(-pid, SIGKILL);  /* then the job, if it made one */
        }
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (exit_path) {
            unlink(exit_path);
            unlink(exit_tmp);
        }
        if (fence_path)
            unlink(fence_path);  /* nothing runs: the token is free of it */
        if (n != (ssize_t)sizeof(rep))
            spw_errorf(err, "job %s: the process failed before it started", req->job_id);
        else if (rep.stage == STAGE_EXEC)
            spw_errorf(err, "cannot run '%s': %s", plan.file, strerror(rep.err));
        else if (rep.stage == STAGE_USER)
            spw_errorf(err, "job %s: cannot switch to user id %ld (group %ld): %s", req->job_id,
                       (long)req->uid, (long)req->gid, strerror(rep.err));
        else if (rep.stage == STAGE_CHDIR)
            spw_errorf(err, "cannot change to directory '%s': %s", req->workdir,
                       strerror(rep.err));
        else
            spw_errorf(err, "job %s: cannot set up the process: %s", req->job_id,
                       strerror(rep.err));
        goto error;
    }

    memset(&h, 0, sizeof(h));
    snprintf(h.job_id, sizeof(h.job_id), "%s", req->job_id);
    h.pid = pid;   /* the shim: the job's exit status outlives it as its own */
    h.pgid = pid;  /* setsid() made the shim a group leader */
    {
        proc_info_t pi;
        /* The start time is fixed at fork, so reading it now is exact.
         * Without /proc it stays 0: the job runs but cannot be adopted. */
        h.start_ticks = proc_read(pid, &pi) == 0 ? pi.start_ticks : 0;
    }
    h.started_s = req->now_s;
    h.max_runtime_s = req->max_runtime_s;
    if (req->token)
        snprintf(h.token, sizeof(h.token), "%s", req->token);
    track(lb, &h, 1);
    *out = h;

    close(pipefd[0]);
    close(in_fd);
    close(out_fd);
    close(err_fd);
    close(dir_fd);
    free(out_name);
    free(err_name);
    free(exit_path);
    free(exit_tmp);
    free(fence_path);
    for (char **o = owned; *o; o++)
        free(*o);
    free(envp);
    free_image_argv(img_argv);
    spw_container_argv_free(unpack);
    return 0;

error:
    for (int i = 0; i < SPW_CGROUP_MAX_FDS; i++)
        if (cg_fds[i] >= 0)
            close(cg_fds[i]);
    if (cg_made)
        spw_cgroup_kill(&lb->cg, req->token);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    if (in_fd >= 0)
        close(in_fd);
    if (out_fd >= 0)
        close(out_fd);
    if (err_fd >= 0)
        close(err_fd);
    if (out_created)
        unlinkat(dir_fd, out_name, 0);
    if (err_created)
        unlinkat(dir_fd, err_name, 0);
    if (dir_fd >= 0)
        close(dir_fd);
    if (fence_fd >= 0) {
        unlink(fence_path);
        close(fence_fd);
    }
    free(out_name);
    free(err_name);
    free(exit_path);
    free(exit_tmp);
    free(fence_path);
    for (char **o = owned; *o; o++)
        free(*o);
    free(envp);
    free_image_argv(img_argv);
    spw_container_argv_free(unpack);
    return -1;
}

/* ---- signals, cancel, tick -------------------------------------------- */

/* Whether our own child has already exited (a zombie not yet polled). */
static int own_exited(const job_t *j)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    return waitid(P_PID, j->h.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid != 0;
}

static int local_signal(void *be, const spw_handle_t *h, int signum, spw_error_t *err)
{
    job_t *j = find_job(be, h);

    if (!j)
        return not_tracked(h, err);
    if (signal_group(be, j, signum) < 0) {
        int e = errno;
        spw_errorf(err, "cannot signal job %s (process group %ld): %s", j->h.job_id,
                   (long)j->h.pgid, strerror(e));
        errno = e;
        return -1;
    }
    return 0;
}

static void start_stop(const spw_local_t *lb, job_t *j, spw_exit_cause_t cause,
                       double now_s)
{
    j->cause = cause;
    j->term_s = now_s;
    if (lb->grace_s <= 0) {
        signal_group(lb, j, SIGKILL);
        j->killed = 1;
        return;
    }
    signal_group(lb, j, SIGTERM);
    signal_group(lb, j, SIGCONT);  /* a stopped job could not act on TERM */
}

static int local_cancel(void *be, const spw_handle_t *h, double now_s, spw_error_t *err)
{
    spw_local_t *lb = be;
    job_t *j = find_job(lb, h);

    if (!j)
        return not_tracked(h, err);
    if (j->cause != SPW_CAUSE_NONE)
        return 0;  /* already stopping; keep the first reason */
    /* A job that already ended on its own is not recorded as cancelled. */
    if (j->own ? own_exited(j) : identify(&j->h) != IDENT_ALIVE)
        return 0;
    start_stop(lb, j, SPW_CAUSE_CANCELLED, now_s);
    return 0;
}

static void local_tick(void *be, double now_s)
{
    spw_local_t *lb = be;

    for (size_t i = 0; i < lb->njobs; i++) {
        job_t *j = &lb->jobs[i];
        if (j->cause == SPW_CAUSE_NONE) {
            if (j->h.max_runtime_s > 0 && now_s >= j->h.started_s + j->h.max_runtime_s)
                start_stop(lb, j, SPW_CAUSE_MAX_RUNTIME, now_s);
        } else if (!j->killed && now_s >= j->term_s + lb->grace_s) {
            signal_group(lb, j, SIGKILL);
            j->killed = 1;
        }
    }
}

/* ---- poll and adopt --------------------------------------------------- */

/* Checks one job; returns 1 and fills *x if it has ended. */
static int job_ended(const spw_local_t *lb, job_t *j, spw_exit_t *x)
{
    memset(x, 0, sizeof(*x));
    x->handle = j->h;
    x->cause = j->cause;
    if (j->own) {
        siginfo_t si;
        int st;

        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, j->h.pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
            if (errno == EINTR)
                return 0;
            /* ECHILD: someone else reaped it (or SIGCHLD is ignored). */
            x->kind = SPW_EXIT_LOST;
            x->status = -1;
            return 1;
        }
        if (si.si_pid == 0)
            return 0;
        /* The leader is a zombie, so its pid (the group id) is still ours:
         * clear out whatever it left running, then reap it. */
        kill_all(lb, j, 1);
        while (waitpid(j->h.pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (si.si_code == CLD_EXITED) {
            x->kind = SPW_EXIT_EXITED;
            x->status = si.si_status;
        } else {
            x->kind = SPW_EXIT_SIGNALED;
            x->status = si.si_status;
        }
        return 1;
    }
    switch (identify(&j->h)) {
    case IDENT_ALIVE:
        return 0;
    case IDENT_ZOMBIE:
    case IDENT_GONE:
        kill_all(lb, j, 1);
        break;
    case IDENT_REUSED:
        kill_all(lb, j, 0);  /* the group id may now be someone else's */
        break;
    }
    /* Not our child, so its status went to whoever reaped it; but the shim
     * recorded the job's outcome before it ended (unless SIGKILL ended it
     * too).  The record is this launch's: launch() removed any older one. */
    if (read_record(lb, j->h.token, j->h.job_id, &x->kind, &x->status) == 0)
        return 1;
    x->kind = SPW_EXIT_LOST;
    x->status = -1;
    return 1;
}

/* A job whose OCI archive the trusted side refused (its image script
 * exits 126) did not start: the unpacker wrote why in RUN_DIR/TOKEN.image
 * (unpack_argv), which is removed here either way. */
static void image_refusal(const spw_local_t *lb, spw_exit_t *x)
{
    char path[PATH_MAX], buf[sizeof(x->reason)];
    if (!lb->run_dir || !x->handle.token[0])
        return;
    snprintf(path, sizeof(path), "%s/%s.image", lb->run_dir, x->handle.token);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    unlink(path);
    if (n <= 0 || x->kind != SPW_EXIT_EXITED || x->status != 126)
        return;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    x->kind = SPW_EXIT_NOT_STARTED;
    snprintf(x->reason, sizeof(x->reason), "%s", buf);
}

static int local_poll(void *be, spw_exit_t *exits, size_t max)
{
    spw_local_t *lb = be;
    size_t n = 0, i = 0;

    while (i < lb->njobs && n < max) {
        if (job_ended(lb, &lb->jobs[i], &exits[n])) {
            image_refusal(lb, &exits[n]);
            n++;
            lb->njobs--;
            memmove(&lb->jobs[i], &lb->jobs[i + 1], (lb->njobs - i) * sizeof(*lb->jobs));
        } else {
            i++;
        }
    }
    return (int)n;
}

static int local_adopt(void *be, const spw_handle_t *h, spw_error_t *err)
{
    spw_local_t *lb = be;
    proc_info_t pi;
    spw_handle_t copy;
    int own;

    if (!memchr(h->job_id, '\0', sizeof(h->job_id)) || !job_id_valid(h->job_id))
        return errno = EINVAL, spw_errorf(err, "cannot adopt: invalid job id in the handle");
    if (h->pid <= 0 || h->pgid <= 0)
        return errno = EINVAL, spw_errorf(err, "cannot adopt job %s: invalid pid %ld / process group %ld",
                                          h->job_id, (long)h->pid, (long)h->pgid);
    if (h->start_ticks == 0)
        return errno = EINVAL, spw_errorf(err, "cannot adopt job %s: its start time was never recorded, so pid %ld cannot be verified",
                                          h->job_id, (long)h->pid);
    job_t *known = find_job(lb, h);
    if (known) {
        /* Already tracked (found by find()): take the daemon's view of
         * when it started and how long it may run. */
        known->h.started_s = h->started_s;
        known->h.max_runtime_s = h->max_runtime_s;
        return 0;
    }
    for (size_t i = 0; i < lb->njobs; i++)
        if (lb->jobs[i].h.pid == h->pid)
            return errno = EEXIST, spw_errorf(err, "cannot adopt job %s: pid %ld already belongs to job %s",
                                              h->job_id, (long)h->pid, lb->jobs[i].h.job_id);
    if (proc_read(h->pid, &pi) < 0) {
        if (errno == ESRCH)
            return spw_errorf(err, "process %ld of job %s is gone", (long)h->pid, h->job_id);
        {
            int e = errno;
            spw_errorf(err, "cannot adopt job %s: cannot read /proc/%ld/stat: %s",
                       h->job_id, (long)h->pid, strerror(e));
            errno = e;
            return -1;
        }
    }
    if (pi.start_ticks != h->start_ticks)
        return errno = ESRCH, spw_errorf(err, "process %ld is no longer job %s: it started at tick %" PRIu64 ", not %" PRIu64,
                                         (long)h->pid, h->job_id, pi.start_ticks, h->start_ticks);
    own = pi.ppid == getpid();
    if (pi.state == 'Z' && !own)
        return errno = ESRCH, spw_errorf(err, "process %ld of job %s has exited", (long)h->pid, h->job_id);
    copy = *h;
    copy.job_id[SPW_JOB_ID_MAX - 1] = '\0';
    copy.token[SPW_TOKEN_MAX - 1] = '\0';
    copy.ext[SPW_HANDLE_EXT_MAX - 1] = '\0';
    track(lb, &copy, own);
    return 0;
}

/* Parses "PID TICKS\n" from a fence file; 0 or -1. */
static int parse_fence(const char *buf, pid_t *pid, uint64_t *ticks)
{
    long long p;
    unsigned long long t;
    char nl;
    if (sscanf(buf, "%lld %llu%c", &p, &t, &nl) != 3 || nl != '\n' || p <= 0 || p > INT_MAX ||
        t == 0)
        return -1;
    *pid = (pid_t)p;
    *ticks = (uint64_t)t;
    return 0;
}

static int local_find(void *be, const char *token, spw_handle_t *out, spw_error_t *err)
{
    spw_local_t *lb = be;
    const char *dot1, *dot2;
    char *path, buf[96];
    spw_handle_t h;
    ssize_t n;
    int fd;

    if (!token || !spw_safe_name(token, SPW_TOKEN_MAX) || !(dot1 = strchr(token, '.')) ||
        (dot2 = strrchr(token, '.')) == dot1 || (size_t)(dot2 - dot1 - 1) >= SPW_JOB_ID_MAX) {
        errno = EINVAL;
        return spw_errorf(err, "invalid launch token '%.*s': expected DAEMONID.JOBID.ATTEMPT",
                          SPW_TOKEN_MAX, token ? token : "");
    }
    if (!lb->run_dir) {
        errno = ENOTSUP;
        return spw_errorf(err, "cannot look for launch %s: the local backend has no run_dir",
                          token);
    }
    memset(&h, 0, sizeof(h));
    memcpy(h.job_id, dot1 + 1, (size_t)(dot2 - dot1 - 1));
    snprintf(h.token, sizeof(h.token), "%s", token);
    path = join(lb->run_dir, strlen(lb->run_dir), "/", token, "");
    /* O_CREAT: a launch that never made its fence (the daemon died before)
     * finds one now, so it can never start later (its O_EXCL fails). */
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        int e = errno;
        spw_errorf(err, "cannot open the launch fence '%s': %s", path, strerror(e));
        free(path);
        errno = e;
        return -1;
    }
    free(path);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        /* Nothing of that launch holds it: the shim is gone (its exit, if
         * it recorded one, is in TOKEN.exit) or was never forked. */
        close(fd);
        return 0;
    }
    if (errno != EWOULDBLOCK) {
        int e = errno;
        close(fd);
        errno = e;
        return spw_errorf(err, "cannot lock the launch fence of %s: %s", token, strerror(e));
    }
    do
        n = pread(fd, buf, sizeof(buf) - 1, 0);
    while (n < 0 && errno == EINTR);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    if (n <= 0 || parse_fence(buf, &h.pid, &h.start_ticks) < 0) {
        /* The shim lives but has not written its handle yet. */
        errno = EAGAIN;
        return spw_errorf(err, "launch %s is starting; its process is not known yet", token);
    }
    h.pgid = h.pid;
    {
        spw_error_t e2;
        if (local_adopt(lb, &h, &e2) < 0) {
            /* The lock is held, so the shim lives: an odd state (a reused
             * file?); say so and let the daemon ask again later. */
            errno = EAGAIN;
            return spw_errorf(err, "launch %s holds its fence but cannot be adopted: %s", token,
                              e2.text);
        }
    }
    *out = h;
    return 1;
}

/* ---- lifecycle -------------------------------------------------------- */

spw_local_t *spw_local_create(const spw_local_opts_t *opts, spw_error_t *err)
{
    spw_local_t *lb;
    double grace_s = opts ? opts->grace_s : SPW_LOCAL_GRACE_S;

    if (!(grace_s >= 0) || isinf(grace_s)) {
        spw_errorf(err, "local backend: the grace period must be a finite number of seconds >= 0");
        return NULL;
    }
    lb = spw_xcalloc(1, sizeof(*lb));
    lb->grace_s = grace_s;
    lb->log_dir = opts && opts->log_dir ? spw_xstrdup(opts->log_dir) : NULL;
    lb->run_dir = opts && opts->run_dir ? spw_xstrdup(opts->run_dir) : NULL;
    if (opts && opts->cgroups)
        spw_cgroups_init(&lb->cg, NULL, opts->pids_max, opts->memory_mib);
    lb->max_log_bytes = opts ? opts->max_log_bytes : 0;
    lb->image_dir = opts && opts->image_dir ? spw_xstrdup(opts->image_dir) : NULL;
    lb->image_max_bytes = opts && opts->image_max_bytes ? opts->image_max_bytes
                          : SPW_IMAGE_MAX_BYTES;
    lb->image_max_files = opts && opts->image_max_files ? opts->image_max_files
                          : SPW_IMAGE_MAX_FILES;
    return lb;
}

void spw_local_destroy(spw_local_t *lb)
{
    if (!lb)
        return;
    free(lb->jobs);
    free(lb->log_dir);
    free(lb->run_dir);
    free(lb->image_dir);
    free(lb);
}

size_t spw_local_count(const spw_local_t *lb)
{
    return lb ? lb->njobs : 0;
}

static void local_destroy(void *be)
{
    spw_local_destroy(be);
}

/* The table's detect_gpus (version 4): this machine's GPUs, whatever the
 * backend. */
static int local_detect_gpus(void *be, uint32_t *count, spw_error_t *err)
{
    int n = 0, rc = spw_local_detect_gpus(&n, err);
    (void)be;
    *count = n > 0 ? (uint32_t)n : 0;
    return rc;
}

const struct spw_backend_ops spw_local_ops = {
    .version = SPW_BACKEND_VERSION,
    .name = "local",
    .launch = local_launch,
    .signal = local_signal,
    .cancel = local_cancel,
    .tick = local_tick,
    .poll = local_poll,
    .adopt = local_adopt,
    .destroy = local_destroy,
    .find = local_find,
    .changed = NULL,            /* handles never change after launch() */
    .detect_gpus = local_detect_gpus,
    .read_exit = local_read_exit,
};
