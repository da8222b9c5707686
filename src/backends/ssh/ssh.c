/* ssh.c: the ssh backend: jobs run on remote hosts under a POSIX-sh shim,
 * started, watched, logged and stopped through the system `ssh`.  See ssh.h
 * for the contract and docs/hosts.md for the host side. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/cgroup.h"
#include "backends/container.h"
#include "backends/ssh/ssh.h"
#include "util/file.h"
#include "util/run.h"
#include "util/strbuf.h"

/* Log fetching: one status round of a host brings at most ROUND_MAX bytes
 * of its ranks' output, in records of at most CHUNK_MAX; a round that left
 * bytes behind is followed by the next at once, not after sync_interval_s.
 * So a job writing fast never falls behind for long, and one round costs
 * the scheduler thread a bounded amount of parsing and writing. */
#define CHUNK_MAX 1048576       /* bytes of one log record (1 MiB) */
#define ROUND_MAX 4194304       /* log bytes per host per status round (4 MiB) */
#define STR_(x) #x
#define STR(x) STR_(x)
#define MAX_SLOTS 64            /* GPU slots tracked per host */


int spw_ssh_quote(char *buf, size_t cap, const char *s)
{
    spw_strbuf_t b = {0};
    spw_strbuf_quote(&b, s);
    size_t have = strlen(buf);
    int rc = have + b.len + 1 <= cap ? 0 : -1;
    if (rc == 0)
        memcpy(buf + have, b.s, b.len + 1);
    free(b.s);
    return rc;
}

/* ---- state ------------------------------------------------------------ */

/* One ssh child whose output goes to an in-memory file. */
typedef struct cmd {
    pid_t pid;                  /* the ssh process; 0 = none */
    int out_fd;                 /* memfd with its stdout and stderr; -1 = none */
    double deadline_s;          /* daemon clock past which it is killed */
} cmd_t;

/* One host. */
typedef struct host {
    char *addr;                 /* as configured, owned */
    uint32_t gpus;              /* GPU slots */
    int detect;                 /* 1: gpus counted with nvidia-smi, and
                                   counted again when it answers after
                                   being down */
    uint64_t used;              /* slots held, one bit each */
    int up;                     /* 1 until silent for down_after_s */
    double last_ok_s;           /* daemon clock of its last answer; 0 = never */
    double silent_since_s;      /* daemon clock of the first failed status
                                   since the last answer; NAN = none */
    double next_sync_s;         /* daemon clock of the next status command */
    cmd_t st;                   /* the status command in flight */
    int gone;                   /* 1: removed (spw_ssh_host_remove); its slot
                                   keeps its index for the jobs that name it */
    unsigned gen;               /* which host of this slot and address it is
                                   (numbered per backend): part of its
                                   ControlPath, so a cloud instance that reuses
                                   the address of one just ended never meets
                                   that one's shared connection */
    char *imds_url;             /* owned: the metadata service its status
                                   rounds ask for an interruption notice
                                   (host_notice); NULL = not watched */
    char notice[256];           /* the notice a round saw, one line; "" =
                                   none yet */
} host_t;

/* One node of a tracked launch. */
typedef struct rank {
    uint32_t host;              /* index into hosts */
    uint64_t gpu_bits;          /* slots it holds on that host */
    long pid;                   /* its shim's pid on the host */
    int final;                  /* 1: ended (state below), 0: running */
    spw_exit_kind_t kind;       /* how it ended, once final */
    int status;                 /* exit code or signal, once final */
    uint64_t off[2];            /* bytes of out and err fetched so far */
    int drained;                /* 1: the last status fetched all its logs */
} rank_t;

/* One tracked launch. */
typedef struct job {
    spw_handle_t h;             /* as given to the daemon */
    uint32_t nranks;            /* nodes */
    rank_t *r;                  /* nranks of them, owned */
    spw_exit_cause_t cause;     /* why we are stopping it; NONE if we are not */
    double term_s;              /* daemon clock of the SIGTERM; NAN = not sent */
    int killed;                 /* SIGKILL sent */
    double lost_s;              /* daemon clock when a host of it went down;
                                   NAN = none did */
} job_t;

/* A rank directory on a host to SIGKILL once the host answers. */
typedef struct fence {
    uint32_t host;              /* index into hosts */
    char dir[SPW_TOKEN_MAX + 16]; /* TOKEN-rN */
} fence_t;

struct spw_ssh {
    host_t *hosts;              /* nhosts, owned */
    size_t nhosts;              /* hosts configured */
    char *user, *key, *known_hosts; /* ssh options, owned; NULL = default */
    int accept_new_keys;        /* StrictHostKeyChecking=accept-new */
    int port;                   /* ssh port */
    char *log_dir;              /* owned */
    uint64_t max_log_bytes;     /* cap of each local log file; 0 = none */
    uint64_t image_max_bytes;   /* bound of an OCI archive and its tree on
                                   a host, bytes */
    uint64_t image_max_files;   /* bound of the entries it unpacks to */
    char control_dir[128];      /* ControlPath directory; "" = no multiplexing */
    double grace_s, cmd_timeout_s, sync_interval_s, down_after_s; /* seconds */
    uint32_t job_pids_max;      /* processes per job (its cgroup); 0 = none */
    uint64_t job_memory_mib;    /* memory per job, MiB (its cgroup); 0 = none */
    job_t **jobs;               /* tracked, owned */
    size_t njobs, cap;          /* used, allocated */
    spw_exit_t *done;           /* exits waiting for poll(), owned */
    size_t ndone, done_cap;     /* used, allocated */
    fence_t *fences;            /* pending fences, owned */
    size_t nfences, fence_cap;  /* used, allocated */
    spw_backend_fence_t *fev;   /* fences added and let go, waiting for
                                   fence_events(), owned */
    size_t nfev, fev_cap;       /* used, allocated */
    cmd_t *bg;                  /* fire-and-forget signal commands, owned */
    size_t nbg, bg_cap;         /* used, allocated */
    double now_s;               /* clock of the last tick(); 0 before */
    unsigned next_gen;          /* gen of the next host added */
};

/* Prints the host's GPU count: nvidia-smi's, or 0 without it. */
#define DETECT_GPUS                                                           \
    "if command -v nvidia-smi >/dev/null 2>&1; then"                          \
    " nvidia-smi --query-gpu=index --format=csv,noheader | wc -l;"            \
    " else echo 0; fi"

/* The shell functions every host-side script starts with. */
static const char prelude[] =
    "R=${SPILLWAY_HOST_DIR:-$HOME/.spillway}; J=$R/jobs; B=" STR(ROUND_MAX) "\n"
    "alive() { p=$(cat \"$J/$1/pid\" 2>/dev/null) || return 1; [ -n \"$p\" ] &&"
    " kill -0 \"$p\" 2>/dev/null && grep -qF \"$1\" \"/proc/$p/cmdline\" 2>/dev/null; }\n"
    SPW_CGROUP_SHELL_KILL
    "sig() { alive \"$1\" && kill \"-$2\" \"-$(cat \"$J/$1/pid\")\" 2>/dev/null; cgk \"$J/$1\" \"$2\";"
    " return 0; }\n"
    /* chunk DIR FILE OFF: the bytes of FILE past OFF, in records of at
     * most CHUNK_MAX, while the round's budget B lasts; "M DIR FILE" when
     * some are left for the next round. */
    "chunk() { f=$J/$1/$2; [ -f \"$f\" ] || return 0; sz=$(wc -c <\"$f\"); o=$3;"
    " while [ \"$sz\" -gt \"$o\" ] && [ \"$B\" -gt 0 ]; do n=$((sz - o));"
    " [ \"$n\" -le " STR(CHUNK_MAX) " ] || n=" STR(CHUNK_MAX) "; [ \"$n\" -le \"$B\" ] || n=$B;"
    " echo \"L $1 $2 $o $n\"; tail -c \"+$((o + 1))\" \"$f\" | head -c \"$n\"; echo;"
    " o=$((o + n)); B=$((B - n)); done; [ \"$sz\" -le \"$o\" ] || echo \"M $1 $2\"; }\n"
    "st() { if alive \"$1\"; then s=running; elif [ -s \"$J/$1/exit\" ]; then s=$(cat \"$J/$1/exit\");"
    " elif [ -d \"$J/$1\" ]; then s=gone; else s=none; fi;"
    " echo \"S $1 $s $(cat \"$J/$1/pid\" 2>/dev/null)\"; chunk \"$1\" out \"$2\"; chunk \"$1\" err \"$3\"; }\n"
    "fence() { sig \"$1\" KILL; echo \"F $1\"; }\n";

/* launch_lock: a launch holds "$R/lock/$T" (flock, util-linux) from before it
 * claims its rank directory $D until its job has a pid, or it gave up.
 * find() writes its fence, then waits on the lock of each rank directory
 * of the token it finds before it reports one: a launch that had passed
 * its fence check when the fence was written is then running (adopted),
 * and one that had not sees the fence and starts nothing.  Without the
 * wait, a launch cut off from a daemon killed -9 could still start its job
 * after find() had answered "nothing runs it" (a job run after its cancel
 * was acknowledged, or beside its next attempt).  A host without flock
 * goes without (docs/hosts.md). */
#define LAUNCH_LOCK                                                           \
    "if command -v flock >/dev/null 2>&1; then mkdir -p \"$R/lock\" && exec 9>\"$R/lock/$T\" &&" \
    " flock 9 || { echo \"E cannot lock $R/lock/$T\"; exit 1; }; fi\n"
/* Let go once the pid is written: by flock -u rather than the script's
 * exit, since a process the launch started may have inherited the fd. */
#define LAUNCH_UNLOCK "{ flock -u 9; exec 9>&-; } 2>/dev/null\n"

/* The shim: $1 is the rank directory, the rest the job's command.  Its
 * pid file, which launch waits for and sig() needs, is written only once
 * the job is forked: a cancel that came between the two would reach only
 * the shim, which ignores it, and the job would run on. */
static const char shim[] =
    SPW_CGROUP_SHELL_KILL
    "D=$1; shift; trap : TERM INT HUP;"
    " " SPW_CGROUP_SHELL_JOIN " </dev/null >>\"$D/out\" 2>>\"$D/err\" & c=$!; st=;"
    " echo $$ >\"$D/pid.tmp\" && mv \"$D/pid.tmp\" \"$D/pid\";"
    " while kill -0 $c 2>/dev/null; do wait $c; st=$?; done;"
    " [ -n \"$st\" ] || { wait $c; st=$?; };"
    " if [ \"$st\" -gt 128 ]; then r=\"signaled $((st - 128))\"; else r=\"exited $st\"; fi;"
    " echo \"$r\" >\"$D/exit.tmp\" && mv \"$D/exit.tmp\" \"$D/exit\";"
    " trap '' TERM; cgk \"$D\" KILL; kill -KILL 0";

/* ---- running ssh ------------------------------------------------------ */

/* "ControlPath=DIR/GEN-%C" of host h into buf: one shared connection per
 * host, and a fresh one for a new host at an old address. */
static void control_path(const spw_ssh_t *sb, const host_t *h, char *buf, size_t cap)
{
    snprintf(buf, cap, "ControlPath=%s/%x-%%C", sb->control_dir, h->gen);
}

/* What ssh logs in to for host h: its address, after the backend's user
 * unless the address names its own ("ubuntu@10.0.0.5": a cloud account's
 * login user). */
static void ssh_target(const spw_ssh_t *sb, const host_t *h, char *buf, size_t len)
{
    int own = strchr(h->addr, '@') != NULL;
    snprintf(buf, len, "%s%s%s", sb->user && !own ? sb->user : "", sb->user && !own ? "@" : "",
             h->addr);
}

/* Starts `ssh -O exit` for host h's shared connection (its master closes
 * at once; nothing to wait for but the process).  Returns the pid, or -1. */
static pid_t control_exit_start(const spw_ssh_t *sb, const host_t *h)
{
    char cpath[160], port[16], target[512];
    control_path(sb, h, cpath, sizeof(cpath));
    snprintf(port, sizeof(port), "%d", sb->port);
    ssh_target(sb, h, target, sizeof(target));
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        setpgid(0, 0);
        execlp("ssh", "ssh", "-p", port, "-o", cpath, "-O", "exit", target, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Starts ssh to host h running `sh -s` with script on stdin; output to a
 * memfd.  Returns 0 with *c filled, or -1 with err. */
static int cmd_start(spw_ssh_t *sb, const host_t *h, const char *script, double deadline_s,
                     cmd_t *c, spw_error_t *err)
{
    int out = memfd_create("spw-ssh-out", MFD_CLOEXEC);
    if (out >= 0 && out <= 2) {
        /* A process started with stdin, stdout or stderr closed would get
         * one of those numbers, which the child's dup2 calls overwrite. */
        int high = fcntl(out, F_DUPFD_CLOEXEC, 3);
        close(out);
        out = high;
    }
    if (out < 0)
        return spw_errorf(err, "ssh: memfd_create: %s", strerror(errno));
    /* The script travels as the remote command, not on stdin: a login
     * shell's startup files (bashrc) may read stdin before the command
     * runs.  sshd runs it with the user's shell: `exec /bin/sh -c SCRIPT`. */
    spw_strbuf_t rc = {0};
    spw_strbuf_add(&rc, "exec /bin/sh -c ");
    spw_strbuf_quote(&rc, script);

    char port[16], ctimeout[48], cpath[200], target[512];
    const char *argv[40];
    size_t a = 0;
    snprintf(port, sizeof(port), "%d", sb->port);
    snprintf(ctimeout, sizeof(ctimeout), "ConnectTimeout=%d",
             (int)fmax(1, fmin(sb->cmd_timeout_s, 10)));
    ssh_target(sb, h, target, sizeof(target));
    argv[a++] = "ssh";
    argv[a++] = "-T";
    argv[a++] = "-p";
    argv[a++] = port;
    if (sb->key) {
        argv[a++] = "-i";
        argv[a++] = sb->key;
        argv[a++] = "-o";
        argv[a++] = "IdentitiesOnly=yes";
    }
    argv[a++] = "-o";
    argv[a++] = "BatchMode=yes";
    argv[a++] = "-o";
    argv[a++] = sb->accept_new_keys ? "StrictHostKeyChecking=accept-new"
                                    : "StrictHostKeyChecking=yes";
    char kh[4200];
    if (sb->known_hosts) {
        snprintf(kh, sizeof(kh), "UserKnownHostsFile=%s", sb->known_hosts);
        argv[a++] = "-o";
        argv[a++] = kh;
    }
    argv[a++] = "-o";
    argv[a++] = ctimeout;
    argv[a++] = "-o";
    argv[a++] = "ServerAliveInterval=2";
    argv[a++] = "-o";
    argv[a++] = "ServerAliveCountMax=2";
    argv[a++] = "-o";
    argv[a++] = "LogLevel=ERROR";
    if (sb->control_dir[0]) {
        control_path(sb, h, cpath, sizeof(cpath));
        argv[a++] = "-o";
        argv[a++] = "ControlMaster=auto";
        argv[a++] = "-o";
        argv[a++] = cpath;
        argv[a++] = "-o";
        argv[a++] = "ControlPersist=60";
    }
    argv[a++] = "-n";
    argv[a++] = target;
    argv[a++] = rc.s;
    argv[a] = NULL;

    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(out);
        free(rc.s);
        return spw_errorf(err, "ssh: fork: %s", strerror(e));
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(out, 1);
        dup2(out, 2);
        /* Its own process group, so that a timeout kills ssh and nothing
         * of the daemon's, and a ^C at the daemon's terminal does not. */
        setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp("ssh", (char *const *)argv);
        _exit(127);
    }
    free(rc.s);
    c->pid = pid;
    c->out_fd = out;
    c->deadline_s = deadline_s;
    return 0;
}

/* Reads the whole output of a finished command (caller frees). */
static char *cmd_output(const cmd_t *c, size_t *len)
{
    off_t end = lseek(c->out_fd, 0, SEEK_END);
    if (end < 0)
        end = 0;
    char *s = spw_xmalloc((size_t)end + 1);
    size_t got = 0;
    while (got < (size_t)end) {
        ssize_t n = pread(c->out_fd, s + got, (size_t)end - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    s[got] = '\0';
    if (len)
        *len = got;
    return s;
}

static void cmd_close(cmd_t *c)
{
    if (c->out_fd >= 0)
        close(c->out_fd);
    c->out_fd = -1;
    c->pid = 0;
}

/* Checks a command without blocking.  Returns 1 with *status (the exit
 * status, or -1 if killed) once it ended, 0 if it still runs. */
static int cmd_done(cmd_t *c, int *status)
{
    int st;
    pid_t r;
    while ((r = waitpid(c->pid, &st, WNOHANG)) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return 0;
    if (r < 0)
        *status = -1;
    else
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return 1;
}

static void cmd_kill(cmd_t *c)
{
    int st;
    kill(-c->pid, SIGKILL);
    kill(c->pid, SIGKILL);
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
        ;
}

/* The last non-empty line of s, for messages, into buf. */
static const char *last_line(const char *s, char *buf, size_t cap)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    size_t b = n;
    while (b && s[b - 1] != '\n')
        b--;
    snprintf(buf, cap, "%.*s", (int)(n - b), s + b);
    return buf;
}

/* Waits for cmds[0..n) (each started), at most cmd_timeout_s, sleeping in
 * small steps (the backend never reads the clock).  Fills status[i] (-1 =
 * ssh failed or timed out) and out[i] (caller frees). */
static void cmd_wait_all(spw_ssh_t *sb, cmd_t *cmds, size_t n, int *status, char **out)
{
    size_t left = 0;
    int *fin = spw_xcalloc(n ? n : 1, sizeof(int));
    double waited_s = 0, step_s = 0.002;
    /* Entries never started (pid 0) are not waited for. */
    for (size_t i = 0; i < n; i++) {
        if (cmds[i].pid)
            left++;
        else
            status[i] = -1;
    }
    while (left) {
        for (size_t i = 0; i < n; i++) {
            if (fin[i] || !cmds[i].pid)
                continue;
            if (cmd_done(&cmds[i], &status[i])) {
                fin[i] = 1;
                left--;
            }
        }
        if (!left)
            break;
        if (waited_s > sb->cmd_timeout_s) {
            for (size_t i = 0; i < n; i++)
                if (!fin[i] && cmds[i].pid) {
                    cmd_kill(&cmds[i]);
                    status[i] = -2;
                    fin[i] = 1;
                }
            break;
        }
        struct timespec ts = {0, (long)(step_s * 1e9)};
        nanosleep(&ts, NULL);
        waited_s += step_s;
        if (step_s < 0.02)
            step_s *= 1.5;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = cmds[i].pid || cmds[i].out_fd >= 0 ? cmd_output(&cmds[i], NULL) : spw_xstrdup("");
        cmd_close(&cmds[i]);
    }
    free(fin);
}

int spw_ssh_run(spw_ssh_t *sb, size_t i, const char *script, char **out, spw_error_t *err)
{
    if (out)
        *out = NULL;
    if (i >= sb->nhosts)
        return spw_errorf(err, "ssh: no host %zu", i);
    cmd_t c = {0, -1, 0};
    if (cmd_start(sb, &sb->hosts[i], script, 0, &c, err) < 0)
        return -1;
    int st;
    char *o;
    cmd_wait_all(sb, &c, 1, &st, &o);
    if (st < 0 || st == 255) {
        char line[200];
        spw_errorf(err, "ssh %s: %s", sb->hosts[i].addr,
                   st == -2 ? "no answer within the command timeout" : last_line(o, line, sizeof(line)));
        free(o);
        return -1;
    }
    if (out)
        *out = o;
    else
        free(o);
    return st;
}

/* ---- create / destroy ------------------------------------------------- */

static char *dup_or_null(const char *s) { return s ? spw_xstrdup(s) : NULL; }

spw_ssh_t *spw_ssh_create(const spw_ssh_opts_t *o, spw_error_t *err)
{
    if (!o || (!o->hosts && o->nhosts) || (o->nhosts == 0 && !o->dynamic) ||
        o->nhosts > SPW_SSH_MAX_HOSTS) {
        spw_errorf(err, "ssh backend: give 1 to %d hosts", SPW_SSH_MAX_HOSTS);
        return NULL;
    }
    if (!o->log_dir) {
        spw_errorf(err, "ssh backend: no log directory");
        return NULL;
    }
    for (size_t i = 0; i < o->nhosts; i++) {
        const char *a = o->hosts[i];
        if (!a || !*a || a[0] == '-' || strpbrk(a, " \t\n,'\"\\;&|$`")) {
            spw_errorf(err, "ssh backend: host %zu ('%s') is not a host name or address", i,
                       a ? a : "");
            return NULL;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(a, o->hosts[k]) == 0) {
                spw_errorf(err, "ssh backend: host '%s' is listed twice", a);
                return NULL;
            }
        if (o->host_gpus && o->host_gpus[i] > MAX_SLOTS) {
            spw_errorf(err, "ssh backend: host %s has %u GPU slots; at most %d", a,
                       o->host_gpus[i], MAX_SLOTS);
            return NULL;
        }
    }
    spw_ssh_t *sb = spw_xcalloc(1, sizeof(*sb));
    sb->nhosts = o->nhosts;
    sb->hosts = spw_xcalloc(o->nhosts ? o->nhosts : 1, sizeof(host_t));
    for (size_t i = 0; i < o->nhosts; i++) {
        host_t *h = &sb->hosts[i];
        h->addr = spw_xstrdup(o->hosts[i]);
        h->gpus = o->host_gpus ? o->host_gpus[i] : 0;
        h->detect = h->gpus == 0;
        h->up = 1;
        h->silent_since_s = NAN;
        h->st.out_fd = -1;
        h->gen = sb->next_gen++;
    }
    sb->user = dup_or_null(o->user);
    sb->key = dup_or_null(o->key);
    sb->known_hosts = dup_or_null(o->known_hosts);
    sb->accept_new_keys = o->accept_new_keys;
    sb->port = o->port > 0 ? o->port : 22;
    sb->log_dir = spw_xstrdup(o->log_dir);
    sb->max_log_bytes = o->max_log_bytes;
    sb->image_max_bytes = o->image_max_bytes ? o->image_max_bytes : SPW_IMAGE_MAX_BYTES;
    sb->image_max_files = o->image_max_files ? o->image_max_files : SPW_IMAGE_MAX_FILES;
    sb->grace_s = o->grace_s >= 0 ? o->grace_s : 10;
    sb->job_pids_max = o->job_pids_max;
    sb->job_memory_mib = o->job_memory_mib;
    sb->cmd_timeout_s = o->cmd_timeout_s > 0 ? o->cmd_timeout_s : 20;
    sb->sync_interval_s = o->sync_interval_s > 0 ? o->sync_interval_s : 1;
    sb->down_after_s = o->down_after_s > 0 ? o->down_after_s : 10;
    if (!o->no_multiplex) {
        /* The shared connections' sockets: in the log directory (a daemon
         * killed with -9 leaves its directory there, not in /tmp), unless
         * that path is too long for a Unix socket (108 bytes with its NUL:
         * the directory's 16, "/GEN-" up to 10, a 40-character hash, and
         * the 17 of the temporary name ssh binds first); then under /tmp. */
        if (strlen(o->log_dir) + 16 + 10 + 40 + 17 < 108)
            snprintf(sb->control_dir, sizeof(sb->control_dir), "%s/.ssh-ctl.XXXXXX", o->log_dir);
        else
            snprintf(sb->control_dir, sizeof(sb->control_dir), "/tmp/spw-ssh.XXXXXX");
        if (!mkdtemp(sb->control_dir))
            sb->control_dir[0] = '\0';
    }

    /* GPU detection for hosts without a slot count, in parallel; a host
     * that failed is asked again (up to 3 times: a freshly started sshd
     * on a loaded machine may drop the first connection). */
    cmd_t *cmds = spw_xcalloc(sb->nhosts, sizeof(cmd_t));
    int *st = spw_xcalloc(sb->nhosts, sizeof(int));
    char **out = spw_xcalloc(sb->nhosts, sizeof(char *));
    int *done = spw_xcalloc(sb->nhosts, sizeof(int));
    /* "G N" then "END": the count is taken when the script ran to its end,
     * whatever ssh's own exit status says (a multiplexed session may end
     * with 255 after the remote command finished, when its shared
     * connection goes away under it). */
    const char *detect = "echo \"G $(" DETECT_GPUS ")\"; echo END\n";
    int failed = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        failed = 0;
        /* Every entry is marked "not started" first: cmd_wait_all reads
         * and closes out_fd of each entry, so one left at calloc's 0 after
         * a failed start would close the process's stdin. */
        for (size_t i = 0; i < sb->nhosts; i++) {
            cmds[i].out_fd = -1;
            cmds[i].pid = 0;
        }
        for (size_t i = 0; i < sb->nhosts; i++) {
            if (!sb->hosts[i].detect || done[i])
                continue;
            if (cmd_start(sb, &sb->hosts[i], detect, 0, &cmds[i], err) < 0) {
                failed = 2; /* cannot even start ssh: no use retrying */
                break;
            }
        }
        cmd_wait_all(sb, cmds, sb->nhosts, st, out);
        for (size_t i = 0; i < sb->nhosts && failed != 2; i++) {
            if (!sb->hosts[i].detect || done[i])
                continue;
            char line[200];
            long g = -1;
            const char *gl = out[i];
            while (gl && strncmp(gl, "G ", 2) != 0)
                gl = (gl = strchr(gl, '\n')) ? gl + 1 : NULL;
            int whole = gl && strstr(gl, "\nEND\n");
            char *end = NULL;
            if (whole)
                g = strtol(gl + 2, &end, 10);
            if (!whole || end == gl + 2 || *end != '\n' || g < 0 || g > MAX_SLOTS) {
                char why[240];
                if (st[i] == -2)
                    snprintf(why, sizeof(why), "no answer within the command timeout");
                else if (whole)
                    snprintf(why, sizeof(why), "nvidia-smi counted '%.*s'",
                             (int)fmin(strcspn(gl + 2, "\n"), 80), gl + 2);
                else
                    snprintf(why, sizeof(why), "%s, exit status %d",
                             last_line(out[i], line, sizeof(line)), st[i]);
                spw_errorf(err, "ssh backend: cannot detect the GPUs of host %s (%s); give its "
                           "gpus in the config", sb->hosts[i].addr, why);
                failed = 1;
            } else {
                sb->hosts[i].gpus = (uint32_t)g;
                done[i] = 1;
            }
        }
        for (size_t i = 0; i < sb->nhosts; i++) {
            free(out[i]);
            out[i] = NULL;
        }
        if (failed != 1)
            break;
    }
    free(done);
    free(out);
    free(st);
    free(cmds);
    if (failed) {
        spw_ssh_destroy(sb);
        return NULL;
    }
    return sb;
}

static void job_free(job_t *j)
{
    if (j) {
        free(j->r);
        free(j);
    }
}

void spw_ssh_destroy(spw_ssh_t *sb)
{
    if (!sb)
        return;
    for (size_t i = 0; i < sb->nhosts; i++) {
        host_t *h = &sb->hosts[i];
        if (h->st.pid)
            cmd_kill(&h->st);
        cmd_close(&h->st);
    }
    for (size_t i = 0; i < sb->nbg; i++) {
        cmd_kill(&sb->bg[i]);
        cmd_close(&sb->bg[i]);
    }
    if (sb->control_dir[0]) {
        /* Close the shared connections: `ssh -O exit` per host (a removed
         * host's was closed at its removal). */
        for (size_t i = 0; i < sb->nhosts; i++) {
            if (sb->hosts[i].gone)
                continue;
            pid_t pid = control_exit_start(sb, &sb->hosts[i]);
            if (pid > 0)
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                    ;
        }
        /* A master may still be removing its socket: remove what is left. */
        DIR *d = opendir(sb->control_dir);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL)
            if (de->d_name[0] != '.')
                unlinkat(dirfd(d), de->d_name, 0);
        if (d)
            closedir(d);
        rmdir(sb->control_dir);
    }
    for (size_t i = 0; i < sb->nhosts; i++) {
        free(sb->hosts[i].addr);
        free(sb->hosts[i].imds_url);
    }
    free(sb->hosts);
    for (size_t i = 0; i < sb->njobs; i++)
        job_free(sb->jobs[i]);
    free(sb->jobs);
    free(sb->done);
    free(sb->fences);
    free(sb->fev);
    free(sb->bg);
    free(sb->user);
    free(sb->key);
    free(sb->known_hosts);
    free(sb->log_dir);
    free(sb);
}

size_t spw_ssh_count(const spw_ssh_t *sb) { return sb->njobs; }

size_t spw_ssh_host_count(const spw_ssh_t *sb) { return sb->nhosts; }

const char *spw_ssh_control_dir(const spw_ssh_t *sb) { return sb->control_dir; }

void spw_ssh_host(const spw_ssh_t *sb, size_t i, spw_backend_host_t *out)
{
    const host_t *h = &sb->hosts[i];
    out->addr = h->addr;
    out->gpus = h->gpus;
    out->used = (uint32_t)__builtin_popcountll(h->used);
    out->up = h->up;
    out->last_ok_s = h->last_ok_s;
}

/* ---- bookkeeping ------------------------------------------------------ */

/* Whether a tracked job's rank or a fence names host hi. */
static int host_referenced(const spw_ssh_t *sb, uint32_t hi)
{
    for (size_t i = 0; i < sb->njobs; i++)
        for (uint32_t k = 0; k < sb->jobs[i]->nranks; k++)
            if (sb->jobs[i]->r[k].host == hi)
                return 1;
    for (size_t f = 0; f < sb->nfences; f++)
        if (sb->fences[f].host == hi)
            return 1;
    return 0;
}

static void host_down(spw_ssh_t *sb, uint32_t hi, double now_s);
static void bg_add(spw_ssh_t *sb, cmd_t c);

static int host_valid(const char *a)
{
    return a && *a && a[0] != '-' && !strpbrk(a, " \t\n,'\"\\;&|$`");
}

/* Queues a fence event for fence_events(). */
static void fence_event(spw_ssh_t *sb, uint32_t host, const char *dir, int done)
{
    if (sb->nfev == sb->fev_cap) {
        sb->fev_cap = sb->fev_cap ? sb->fev_cap * 2 : 8;
        sb->fev = spw_xrealloc(sb->fev, sb->fev_cap * sizeof(*sb->fev));
    }
    spw_backend_fence_t *e = &sb->fev[sb->nfev++];
    snprintf(e->host, sizeof(e->host), "%s", sb->hosts[host].addr);
    snprintf(e->what, sizeof(e->what), "%s", dir);
    e->done = done;
}

/* Lets fence f go (its host confirmed the kill, or it is moot), saying so
 * to fence_events(). */
static void fence_drop(spw_ssh_t *sb, size_t f)
{
    fence_event(sb, sb->fences[f].host, sb->fences[f].dir, 1);
    sb->fences[f] = sb->fences[--sb->nfences];
}

/* Lets every fence of host hi go. */
static void fences_drop_host(spw_ssh_t *sb, size_t hi)
{
    for (size_t f = 0; f < sb->nfences;) {
        if (sb->fences[f].host == hi)
            fence_drop(sb, f);
        else
            f++;
    }
}

int spw_ssh_host_add(spw_ssh_t *sb, const char *addr, uint32_t gpus, spw_error_t *err)
{
    if (!host_valid(addr) || strlen(addr) >= 256)
        return spw_errorf(err, "ssh backend: '%s' is not a host name or address",
                          addr ? addr : "");
    if (gpus == 0 || gpus > MAX_SLOTS)
        return spw_errorf(err, "ssh backend: host %s: give 1 to %d GPU slots", addr, MAX_SLOTS);
    size_t hi, spare = sb->nhosts;
    for (hi = 0; hi < sb->nhosts; hi++) {
        if (strcmp(sb->hosts[hi].addr, addr) == 0)
            break;
        if (sb->hosts[hi].gone && spare == sb->nhosts && !host_referenced(sb, (uint32_t)hi))
            spare = hi;
    }
    if (hi < sb->nhosts && !sb->hosts[hi].gone)
        return 0;
    if (hi == sb->nhosts) {
        if (sb->nhosts == SPW_SSH_MAX_HOSTS) {
            if (spare == sb->nhosts)
                return spw_errorf(err, "ssh backend: %d hosts already", SPW_SSH_MAX_HOSTS);
            hi = spare;
        } else {
            sb->hosts = spw_xrealloc(sb->hosts, (sb->nhosts + 1) * sizeof(host_t));
            memset(&sb->hosts[sb->nhosts], 0, sizeof(host_t));
            sb->hosts[sb->nhosts].st.out_fd = -1;
            sb->nhosts++;
        }
        free(sb->hosts[hi].addr);
        sb->hosts[hi].addr = spw_xstrdup(addr);
        sb->hosts[hi].used = 0;
    }
    host_t *h = &sb->hosts[hi];
    /* A former host of that address had its fences: nothing of its ranks
     * can run on the new one. */
    fences_drop_host(sb, hi);
    h->gone = 0;
    h->gen = sb->next_gen++;
    free(h->imds_url);
    h->imds_url = NULL;
    h->notice[0] = '\0';
    h->gpus = gpus;
    h->up = 1;
    h->last_ok_s = 0;
    h->silent_since_s = NAN;
    h->next_sync_s = 0;
    return 0;
}

/* A host learnt at first contact (accept_new_keys) that goes: its key
 * leaves known_hosts, so that a new host given its address later (a
 * cloud reuses addresses) is learnt afresh rather than refused as a
 * changed key.  ssh-keygen -R handles hashed entries too. */
static void forget_host_key(const spw_ssh_t *sb, const char *addr)
{
    if (!sb->accept_new_keys || !sb->known_hosts)
        return;
    const char *at = strrchr(addr, '@');
    char spec[300];
    if (sb->port == 22)
        snprintf(spec, sizeof(spec), "%s", at ? at + 1 : addr);
    else
        snprintf(spec, sizeof(spec), "[%s]:%d", at ? at + 1 : addr, sb->port);
    const char *argv[] = {"ssh-keygen", "-q", "-R", spec, "-f", sb->known_hosts, NULL};
    spw_run_t r = {.path = "ssh-keygen", .argv = argv, .search_path = 1, .timeout_s = 5};
    char *out = NULL;
    spw_error_t err;
    (void)spw_run(&r, &out, &err);
    free(out);
}

int spw_ssh_host_remove(spw_ssh_t *sb, const char *addr, double now_s)
{
    for (size_t hi = 0; hi < sb->nhosts; hi++) {
        host_t *h = &sb->hosts[hi];
        if (h->gone || strcmp(h->addr, addr) != 0)
            continue;
        if (h->st.pid)
            cmd_kill(&h->st);
        cmd_close(&h->st);
        host_down(sb, (uint32_t)hi, now_s);
        h->gone = 1;
        forget_host_key(sb, h->addr);
        /* Its machine is gone, and what ran there with it: no fence of it
         * can (or need) be applied. */
        fences_drop_host(sb, hi);
        /* Its shared connection goes now, not after ControlPersist: `ssh
         * -O exit` in the background, reaped by tick() like a signal. */
        if (sb->control_dir[0]) {
            pid_t pid = control_exit_start(sb, h);
            if (pid > 0)
                bg_add(sb, (cmd_t){pid, -1, now_s + sb->cmd_timeout_s});
        }
        return 0;
    }
    return -1;
}


/* Keeps a command started in the background until tick() reaps it (or
 * kills it at its deadline). */
static void bg_add(spw_ssh_t *sb, cmd_t c)
{
    if (sb->nbg == sb->bg_cap) {
        sb->bg_cap = sb->bg_cap ? sb->bg_cap * 2 : 8;
        sb->bg = spw_xrealloc(sb->bg, sb->bg_cap * sizeof(cmd_t));
    }
    sb->bg[sb->nbg++] = c;
}

static void track(spw_ssh_t *sb, job_t *j)
{
    if (sb->njobs == sb->cap) {
        sb->cap = sb->cap ? sb->cap * 2 : 8;
        sb->jobs = spw_xrealloc(sb->jobs, sb->cap * sizeof(job_t *));
    }
    sb->jobs[sb->njobs++] = j;
    for (uint32_t k = 0; k < j->nranks; k++)
        sb->hosts[j->r[k].host].used |= j->r[k].gpu_bits;
}

static job_t *find_tracked(spw_ssh_t *sb, const spw_handle_t *h)
{
    for (size_t i = 0; i < sb->njobs; i++)
        if (strcmp(sb->jobs[i]->h.token, h->token) == 0 &&
            strcmp(sb->jobs[i]->h.job_id, h->job_id) == 0)
            return sb->jobs[i];
    return NULL;
}

static void rank_dir(const job_t *j, uint32_t k, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s-r%u", j->h.token, k);
}

/* Fences rank directory dir on host `host` (once: a fence it holds is not
 * added again); `told` 0 reports it to fence_events(), 1 does not (the
 * daemon gave it back: it has it already). */
static void fence_hold(spw_ssh_t *sb, uint32_t host, const char *dir, int told)
{
    for (size_t f = 0; f < sb->nfences; f++)
        if (sb->fences[f].host == host && strcmp(sb->fences[f].dir, dir) == 0)
            return;
    if (!told)
        fence_event(sb, host, dir, 0);
    if (sb->nfences == sb->fence_cap) {
        sb->fence_cap = sb->fence_cap ? sb->fence_cap * 2 : 8;
        sb->fences = spw_xrealloc(sb->fences, sb->fence_cap * sizeof(fence_t));
    }
    fence_t *f = &sb->fences[sb->nfences++];
    f->host = host;
    snprintf(f->dir, sizeof(f->dir), "%s", dir);
}

static void add_fence(spw_ssh_t *sb, uint32_t host, const char *dir)
{
    fence_hold(sb, host, dir, 0);
}

/* Sends signal sig (a name: TERM, KILL) to every rank of j that may still
 * run, in the background. */
static void signal_ranks(spw_ssh_t *sb, job_t *j, const char *sig)
{
    for (uint32_t k = 0; k < j->nranks; k++) {
        if (j->r[k].final)
            continue;
        char dir[SPW_TOKEN_MAX + 16];
        rank_dir(j, k, dir, sizeof(dir));
        spw_strbuf_t s = {0};
        spw_strbuf_add(&s, prelude);
        spw_strbuf_printf(&s, "sig '%s' %s\n", dir, sig);
        cmd_t c = {0, -1, 0};
        if (cmd_start(sb, &sb->hosts[j->r[k].host], s.s, sb->now_s + sb->cmd_timeout_s, &c,
                      NULL) == 0)
            bg_add(sb, c);
        free(s.s);
    }
}

/* Moves j (index i) from tracking to the exits poll() returns. */
static void finish(spw_ssh_t *sb, size_t i, spw_exit_kind_t kind, int status)
{
    job_t *j = sb->jobs[i];
    if (sb->ndone == sb->done_cap) {
        sb->done_cap = sb->done_cap ? sb->done_cap * 2 : 8;
        sb->done = spw_xrealloc(sb->done, sb->done_cap * sizeof(spw_exit_t));
    }
    spw_exit_t *x = &sb->done[sb->ndone++];
    x->handle = j->h;
    x->kind = kind;
    x->status = status;
    x->cause = j->cause;
    for (uint32_t k = 0; k < j->nranks; k++)
        sb->hosts[j->r[k].host].used &= ~j->r[k].gpu_bits;
    job_free(j);
    sb->jobs[i] = sb->jobs[--sb->njobs];
}

/* ---- logs ------------------------------------------------------------- */

/* A job's files live in LOG_DIR/JOBID/, as the daemon lays out every
 * backend's logs (it makes that directory before a launch); made here too
 * when missing, so the backend also works on its own. */
static void job_dir(const spw_ssh_t *sb, const char *job_id, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", sb->log_dir, job_id);
    if (mkdir(buf, 0750) < 0 && errno != EEXIST) {
        /* the open of a file in it then fails and says so */
    }
}

static void log_path(const spw_ssh_t *sb, const char *job_id, uint32_t rank, int err_file,
                     char *buf, size_t cap)
{
    char dir[4096];
    job_dir(sb, job_id, dir, sizeof(dir));
    if (rank == 0)
        snprintf(buf, cap, "%s/%s.%s", dir, job_id, err_file ? "err" : "out");
    else
        snprintf(buf, cap, "%s/%s.node%u.%s", dir, job_id, rank, err_file ? "err" : "out");
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Appends data to the local log of rank k of j. */
static void log_append(spw_ssh_t *sb, job_t *j, uint32_t k, int err_file, const char *data,
                       size_t n)
{
    char path[4200];
    log_path(sb, j->h.job_id, k, err_file, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
                  0640);
    if (fd < 0)
        return;
    struct stat st;
    uint64_t size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    spw_log_write_capped(fd, data, n, &size, sb->max_log_bytes);
    close(fd);
}

/* Writes LOG_DIR/JOBID.ssh: "TOKEN OUTBASE ERRBASE". */
static int write_sidecar(spw_ssh_t *sb, const char *job_id, const char *token, long long ob,
                         long long eb)
{
    char path[4200], tmp[4300];
    char dir[4096];
    job_dir(sb, job_id, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.ssh", dir, job_id);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%s %lld %lld\n", token, ob, eb);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Reads LOG_DIR/JOBID.ssh: 0 with the bases if it names token, else -1. */
static int read_sidecar(spw_ssh_t *sb, const char *job_id, const char *token, long long *ob,
                        long long *eb)
{
    char path[4200], tok[SPW_TOKEN_MAX];
    char dir[4096];
    job_dir(sb, job_id, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.ssh", dir, job_id);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%95s %lld %lld", tok, ob, eb) == 3 && strcmp(tok, token) == 0;
    fclose(f);
    return ok ? 0 : -1;
}

/* ---- status ------------------------------------------------------------ */

/* LOG_DIR/JOBID/JOBID.hosts: "TOKEN HOST,HOST,..." for a launch whose
 * host list does not fit its handle (ext "@"). */
static int write_hosts_file(spw_ssh_t *sb, const char *job_id, const char *token,
                            const char *list)
{
    char dir[4096], path[4200], tmp[4210];
    job_dir(sb, job_id, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.hosts", dir, job_id);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fprintf(f, "%s %s\n", token, list) > 0;
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

/* The host list of handle h (caller frees): its ext, or for "@" the list
 * in LOG_DIR/JOBID/JOBID.hosts written for its token; NULL if none. */
static char *handle_hosts(spw_ssh_t *sb, const spw_handle_t *h)
{
    if (strcmp(h->ext, "@") != 0)
        return spw_xstrdup(h->ext);
    char dir[4096], path[4200];
    job_dir(sb, h->job_id, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.hosts", dir, h->job_id);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    spw_strbuf_t b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk) - 1, f)) > 0) {
        chunk[n] = '\0';
        spw_strbuf_add(&b, chunk);
    }
    fclose(f);
    char *sp = b.s ? strchr(b.s, ' ') : NULL;
    if (!sp || (size_t)(sp - b.s) != strlen(h->token) || strncmp(b.s, h->token, strlen(h->token))) {
        free(b.s);
        return NULL;
    }
    char *list = spw_xstrdup(sp + 1);
    list[strcspn(list, "\n")] = '\0';
    free(b.s);
    return list;
}

static int parse_state(const char *s, spw_exit_kind_t *kind, int *status, int *final)
{
    int n;
    if (strncmp(s, "running", 7) == 0) {
        *final = 0;
        return 0;
    }
    *final = 1;
    if (sscanf(s, "exited %d", &n) == 1) {
        *kind = SPW_EXIT_EXITED;
        *status = n;
    } else if (sscanf(s, "signaled %d", &n) == 1) {
        *kind = SPW_EXIT_SIGNALED;
        *status = n;
    } else {
        *kind = SPW_EXIT_LOST; /* gone (killed with its shim) or none */
        *status = -1;
    }
    return 0;
}

/* Finds the job and rank a rank directory name TOKEN-rN belongs to. */
static job_t *job_of_dir(spw_ssh_t *sb, const char *dir, uint32_t *rank)
{
    const char *r = strrchr(dir, '-');
    if (!r || r[1] != 'r')
        return NULL;
    size_t tl = (size_t)(r - dir);
    unsigned k = (unsigned)strtoul(r + 2, NULL, 10);
    for (size_t i = 0; i < sb->njobs; i++) {
        job_t *j = sb->jobs[i];
        if (strlen(j->h.token) == tl && strncmp(j->h.token, dir, tl) == 0 && k < j->nranks) {
            *rank = k;
            return j;
        }
    }
    return NULL;
}

/* Applies the output of host hi's status command.  Returns 1 when some
 * rank's logs were left for the next round ("M" records), else 0. */
static int apply_status(spw_ssh_t *sb, uint32_t hi, const char *out, size_t len)
{
    const char *p = out, *end = out + len;
    int more = 0;
    /* A rank's logs count as drained unless the host says bytes are left. */
    for (size_t i = 0; i < sb->njobs; i++)
        for (uint32_t k = 0; k < sb->jobs[i]->nranks; k++)
            if (sb->jobs[i]->r[k].host == hi)
                sb->jobs[i]->r[k].drained = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
        p = nl + 1;
        char dir[SPW_TOKEN_MAX + 16], what[8], state[64];
        unsigned long long off, n;
        uint32_t k;
        if (line[0] == 'L' && sscanf(line, "L %111s %7s %llu %llu", dir, what, &off, &n) == 4) {
            if ((size_t)(end - p) < n)
                break;
            job_t *j = job_of_dir(sb, dir, &k);
            int e = strcmp(what, "err") == 0;
            if (j && j->r[k].off[e] == off) {
                log_append(sb, j, k, e, p, (size_t)n);
                j->r[k].off[e] += n;
            }
            p += n;
            if (p < end && *p == '\n')
                p++;
        } else if (line[0] == 'S' && sscanf(line, "S %111s %63[^\n]", dir, state) == 2) {
            job_t *j = job_of_dir(sb, dir, &k);
            if (!j)
                continue;
            rank_t *r = &j->r[k];
            int fin;
            parse_state(state, &r->kind, &r->status, &fin);
            if (fin && !r->final && r->kind == SPW_EXIT_LOST && j->killed) {
                r->kind = SPW_EXIT_SIGNALED; /* our SIGKILL took the shim too */
                r->status = SIGKILL;
            }
            r->final = fin;
        } else if (line[0] == 'G' && sscanf(line, "G %llu", &n) == 1) {
            if (n <= MAX_SLOTS)
                sb->hosts[hi].gpus = (uint32_t)n;
        } else if (line[0] == 'M' && sscanf(line, "M %111s %7s", dir, what) == 2) {
            job_t *j = job_of_dir(sb, dir, &k);
            if (j)
                j->r[k].drained = 0;
            more = 1;
        } else if (line[0] == 'N' && line[1] == ' ' && line[2] && !sb->hosts[hi].notice[0]) {
            snprintf(sb->hosts[hi].notice, sizeof(sb->hosts[hi].notice), "%.255s", line + 2);
        } else if (line[0] == 'F' && sscanf(line, "F %111s", dir) == 1) {
            for (size_t f = 0; f < sb->nfences; f++)
                if (sb->fences[f].host == hi && strcmp(sb->fences[f].dir, dir) == 0) {
                    fence_drop(sb, f);
                    break;
                }
        }
    }
    return more;
}

/* After a status: ends the jobs whose ranks all ended and whose logs are
 * drained; stops the rest of a gang one of whose ranks failed. */
static void settle(spw_ssh_t *sb)
{
    for (size_t i = 0; i < sb->njobs;) {
        job_t *j = sb->jobs[i];
        uint32_t nfinal = 0, drained = 1, failed = 0;
        for (uint32_t k = 0; k < j->nranks; k++) {
            rank_t *r = &j->r[k];
            nfinal += (uint32_t)r->final;
            drained &= (uint32_t)r->drained;
            if (r->final && !(r->kind == SPW_EXIT_EXITED && r->status == 0))
                failed = 1;
        }
        if (nfinal == j->nranks && drained) {
            /* The job's outcome: the first rank that exited non-zero on its
             * own (the others may have been killed because of it), else
             * rank 0's unless it succeeded, else the first that did not. */
            const rank_t *w = NULL;
            for (uint32_t k = 0; k < j->nranks && !w; k++)
                if (j->r[k].kind == SPW_EXIT_EXITED && j->r[k].status != 0)
                    w = &j->r[k];
            if (!w)
                w = &j->r[0];
            for (uint32_t k = 0; k < j->nranks && w->kind == SPW_EXIT_EXITED && w->status == 0; k++)
                w = &j->r[k];
            finish(sb, i, w->kind, w->status);
            continue;
        }
        if (failed && nfinal < j->nranks && !j->killed) {
            j->killed = 1;
            signal_ranks(sb, j, "KILL");
        }
        i++;
    }
}

/* Marks host hi down: every job with a rank there is lost.  It stays
 * tracked until the daemon cancels it (its node-down path does) or
 * lost_grace_s passes; then each of its ranks is fenced (SIGKILLed once its
 * host answers) and poll() reports it LOST. */
static void host_down(spw_ssh_t *sb, uint32_t hi, double now_s)
{
    sb->hosts[hi].up = 0;
    for (size_t i = 0; i < sb->njobs; i++) {
        job_t *j = sb->jobs[i];
        for (uint32_t k = 0; k < j->nranks; k++)
            if (j->r[k].host == hi && !j->r[k].final && isnan(j->lost_s))
                j->lost_s = now_s;
    }
}

/* Ends the lost jobs that were cancelled or waited long enough. */
static void settle_lost(spw_ssh_t *sb, double now_s)
{
    double grace_s = fmax(sb->down_after_s, 5);
    for (size_t i = 0; i < sb->njobs;) {
        job_t *j = sb->jobs[i];
        if (isnan(j->lost_s) || (isnan(j->term_s) && now_s - j->lost_s < grace_s)) {
            i++;
            continue;
        }
        for (uint32_t k = 0; k < j->nranks; k++) {
            char dir[SPW_TOKEN_MAX + 16];
            rank_dir(j, k, dir, sizeof(dir));
            if (!j->r[k].final)
                add_fence(sb, j->r[k].host, dir);
        }
        finish(sb, i, SPW_EXIT_LOST, -1);
    }
}

/* Builds host hi's status script: fences first, then every rank there. */
static void status_script(spw_ssh_t *sb, uint32_t hi, spw_strbuf_t *s)
{
    spw_strbuf_add(s, prelude);
    /* A host that was down may come back with other GPUs (one fell off
     * the bus, a board was replaced): counted again in the round that
     * brings it back, before it gets work. */
    if (!sb->hosts[hi].up && sb->hosts[hi].detect)
        spw_strbuf_add(s, "echo \"G $(" DETECT_GPUS ")\"\n");
    for (size_t f = 0; f < sb->nfences; f++)
        if (sb->fences[f].host == hi)
            spw_strbuf_printf(s, "fence '%s'\n", sb->fences[f].dir);
    for (size_t i = 0; i < sb->njobs; i++) {
        job_t *j = sb->jobs[i];
        for (uint32_t k = 0; k < j->nranks; k++)
            if (j->r[k].host == hi && !(j->r[k].final && j->r[k].drained)) {
                char dir[SPW_TOKEN_MAX + 16];
                rank_dir(j, k, dir, sizeof(dir));
                spw_strbuf_printf(s, "st '%s' %llu %llu\n", dir, (unsigned long long)j->r[k].off[0],
                          (unsigned long long)j->r[k].off[1]);
            }
    }
    /* A cloud's interruption notice, on the host itself (IMDSv2: a token
     * first), with short limits: a silent metadata service delays the
     * round by at most 2 s, and a notice is printed as one "N" line. */
    if (sb->hosts[hi].imds_url) {
        char u[600] = "";
        if (spw_ssh_quote(u, sizeof(u), sb->hosts[hi].imds_url) == 0)
            spw_strbuf_printf(s,
                "u=%s; if command -v curl >/dev/null 2>&1 && t=$(curl -sf --connect-timeout 1 -m 1"
                " -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \"$u/latest/api/token\")"
                " && n=$(curl -sf --connect-timeout 1 -m 1 -H \"X-aws-ec2-metadata-token: $t\""
                " \"$u/latest/meta-data/spot/instance-action\"); then"
                " printf 'N %%s\\n' \"$(printf %%s \"$n\" | tr -d '\\n')\"; fi\n", u);
    }
    spw_strbuf_add(s, "echo END\n");
}

static void host_tick(spw_ssh_t *sb, uint32_t hi, double now_s)
{
    host_t *h = &sb->hosts[hi];
    if (h->gone)
        return;
    if (h->st.pid) {
        int st, more = 0;
        int fin = cmd_done(&h->st, &st);
        if (!fin && now_s < h->st.deadline_s)
            return;
        if (!fin) {
            cmd_kill(&h->st);
            st = -1;
        }
        size_t len;
        char *out = cmd_output(&h->st, &len);
        cmd_close(&h->st);
        int ok = st == 0 && len >= 4 && strcmp(out + len - 4, "END\n") == 0;
        if (ok) {
            h->last_ok_s = now_s;
            h->silent_since_s = NAN;
            more = apply_status(sb, hi, out, len);
            h->up = 1;
            settle(sb);
        } else {
            if (isnan(h->silent_since_s))
                h->silent_since_s = h->last_ok_s > 0 ? h->last_ok_s : now_s;
            if (h->up && now_s - h->silent_since_s >= sb->down_after_s)
                host_down(sb, hi, now_s);
        }
        free(out);
        /* Logs left behind: the next round at once. */
        h->next_sync_s = more ? now_s : now_s + sb->sync_interval_s;
    }
    if (now_s < h->next_sync_s)
        return;
    spw_strbuf_t s = {0};
    status_script(sb, hi, &s);
    /* A status round may take up to half of down_after_s (at least 2 s: a
     * loaded machine answers slowly), so one slow round does not make a
     * host look dead. */
    double limit = fmin(sb->cmd_timeout_s, fmax(sb->down_after_s / 2, 2));
    if (cmd_start(sb, h, s.s, now_s + limit, &h->st, NULL) < 0)
        h->next_sync_s = now_s + sb->sync_interval_s;
    free(s.s);
}

/* ---- the ops ---------------------------------------------------------- */

static int token_valid(const char *t)
{
    return t && spw_safe_name(t, SPW_TOKEN_MAX);
}

/* The hosts of a launch named by address, in rank order (env
 * SPILLWAY_SSH_HOSTS=A,B,..., the daemon's cloud instances): each must be
 * a host of the backend that is up, and there must be one per node; each
 * rank gets the GPU indices of the request.  0, or -1 with err. */
static int place_addrs(spw_ssh_t *sb, const spw_launch_t *req, const char *list, uint32_t nodes,
                       uint32_t *hosts, uint64_t *bits, spw_error_t *err)
{
    uint64_t want_bits = 0;
    for (size_t g = 0; req->gpus && g < req->ngpus; g++)
        if (req->gpus[g] < MAX_SLOTS)
            want_bits |= 1ull << req->gpus[g];
    uint32_t n = 0;
    for (const char *a = list; *a;) {
        size_t len = strcspn(a, ",");
        size_t hi;
        for (hi = 0; hi < sb->nhosts; hi++)
            if (!sb->hosts[hi].gone && strlen(sb->hosts[hi].addr) == len &&
                strncmp(sb->hosts[hi].addr, a, len) == 0)
                break;
        if (hi == sb->nhosts)
            return spw_errorf(err, "ssh backend: host %.*s of the placement is not one of its "
                              "hosts", (int)len, a);
        if (!sb->hosts[hi].up)
            return spw_errorf(err, "ssh backend: host %s of the placement does not answer",
                              sb->hosts[hi].addr);
        if (n == nodes)
            return spw_errorf(err, "ssh backend: the placement names more hosts than the "
                              "job's %u nodes", nodes);
        hosts[n] = (uint32_t)hi;
        bits[n] = want_bits;
        n++;
        a += len;
        if (*a == ',')
            a++;
    }
    if (n < nodes)
        return spw_errorf(err, "ssh backend: the placement names %u host%s for %u nodes", n,
                          n == 1 ? "" : "s", nodes);
    return 0;
}

/* Picks the hosts of a launch.  Returns 0 with hosts[0..nodes) and each
 * rank's slot bits, or -1 with err. */
static int place(spw_ssh_t *sb, const spw_launch_t *req, uint32_t nodes, uint32_t *hosts,
                 uint64_t *bits, spw_error_t *err)
{
    long pinned = -1;
    const char *by_addr = NULL;
    for (const char *const *e = req->env; e && *e; e++)
        if (strncmp(*e, "SPILLWAY_SSH_HOSTS=", 19) == 0)
            by_addr = *e + 19;
    if (by_addr)
        return place_addrs(sb, req, by_addr, nodes, hosts, bits, err);
    for (const char *const *e = req->env; e && *e; e++)
        if (strncmp(*e, "SPILLWAY_PLACEMENT=", 19) == 0) {
            const char *slash = strrchr(*e, '/');
            if (slash)
                pinned = strtol(slash + 1, NULL, 10);
        }
    uint64_t want_bits = 0;
    for (size_t g = 0; req->gpus && g < req->ngpus; g++)
        if (req->gpus[g] < MAX_SLOTS)
            want_bits |= 1ull << req->gpus[g];
    uint32_t n = 0;
    if (pinned >= 0) {
        if ((size_t)pinned >= sb->nhosts)
            return spw_errorf(err, "ssh backend: placement names node %ld, but the pool has %zu "
                              "hosts", pinned, sb->nhosts);
        hosts[0] = (uint32_t)pinned;
        bits[0] = want_bits;
        n = 1;
    }
    for (size_t step = 0; step < sb->nhosts && n < nodes; step++) {
        uint32_t hi = (uint32_t)(((pinned >= 0 ? (size_t)pinned + 1 : 0) + step) % sb->nhosts);
        host_t *h = &sb->hosts[hi];
        int taken = 0;
        for (uint32_t k = 0; k < n; k++)
            taken |= hosts[k] == hi;
        if (taken || !h->up)
            continue;
        uint64_t free_bits = 0;
        size_t nfree = 0;
        for (uint32_t g = 0; g < h->gpus && g < MAX_SLOTS && nfree < req->ngpus; g++)
            if (!(h->used >> g & 1)) {
                free_bits |= 1ull << g;
                nfree++;
            }
        if (nfree < req->ngpus)
            continue;
        hosts[n] = hi;
        bits[n] = pinned >= 0 ? want_bits : free_bits;
        n++;
    }
    if (n < nodes)
        return spw_errorf(err, "ssh backend: %u node%s with %zu free GPU%s wanted, %u up host%s "
                          "ha%s them", nodes, nodes == 1 ? "" : "s", req->ngpus,
                          req->ngpus == 1 ? "" : "s", n, n == 1 ? "" : "s", n == 1 ? "s" : "ve");
    return 0;
}

static void add_export(spw_strbuf_t *s, const char *name, const char *value)
{
    spw_strbuf_printf(s, "export %s=", name);
    spw_strbuf_quote(s, value);
    spw_strbuf_add(s, "\n");
}

/* ---- containers ------------------------------------------------------- */

char **spw_ssh_podman_argv(const char *image, const char *token, const char *workdir,
                           const char *ckpt, const uint32_t *gpus, size_t ngpus,
                           const char *const *env_names)
{
    spw_container_t c = {image, token, workdir, ckpt, gpus, ngpus, env_names, NULL};
    return spw_container_podman_argv(&c, 1);
}

void spw_ssh_argv_free(char **argv) { spw_container_argv_free(argv); }

/* The value of NAME in a NULL-terminated "NAME=VALUE" list, or NULL. */
static const char *env_value(const char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = env; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* Appends to a launch script the lines that look up req's user, whom the job
 * (not the shim, which stays the login user so that the job cannot forge its
 * exit record) runs as through user_switch(): `setpriv` to that user's uid,
 * its primary group alone,
 * as locally (jobuser.h).  The name is looked up on the host, where its
 * uid may differ from the daemon's.  Switching needs root as the login
 * user; root as the job's user is refused unless the daemon's own uid for
 * it is 0 too (daemon.allow_root_jobs). */
static void user_resolve(spw_strbuf_t *s, const spw_launch_t *req)
{
    char uid[32];
    if (!req->user) {
        /* Only a number: the same uid on the host. */
        snprintf(uid, sizeof(uid), "%ld", (long)req->uid);
        spw_strbuf_printf(s, "U=%s; UI=%s; UG=%ld\n", uid, uid, (long)req->gid);
    } else {
        spw_strbuf_add(s, "U=");
        spw_strbuf_quote(s, req->user);
        spw_strbuf_add(s, "\nUI=$(id -u \"$U\" 2>/dev/null) || { echo \"E user $U (the run_as of"
                          " this job's team) does not exist on this host; create it (useradd"
                          " --system $U)\"; exit 1; }; UG=$(id -g \"$U\")\n");
    }
    spw_strbuf_printf(s, "if [ \"$UI\" = 0 ] && [ %d != 0 ]; then echo \"E user $U is root on this"
                         " host; jobs as root need daemon.allow_root_jobs\"; exit 1; fi\n",
                      (int)req->uid);
    spw_strbuf_add(s,
        "if [ \"$(id -u)\" != \"$UI\" ]; then\n"
        "  [ \"$(id -u)\" = 0 ] || { echo \"E this job runs as $U, but the ssh login user"
        " $(id -un) is not root and cannot switch users; log in as root (ssh: {user: root})\";"
        " exit 1; }\n"
        "  command -v setpriv >/dev/null 2>&1 || { echo \"E this job runs as $U, but setpriv"
        " (util-linux) is missing on this host\"; exit 1; }\n"
        "fi\n"
        /* What container.c's image unpacking runs as (container.h). */
        "SPW_JOB_UID=$UI; SPW_JOB_GID=$UG\n");
}

/* Appends the line that makes the job's command ("$@") switch to the user
 * user_resolve() looked up, after the container lines wrapped it. */
static void user_switch(spw_strbuf_t *s)
{
    spw_strbuf_add(s, "[ \"$(id -u)\" = \"$UI\" ] ||"
                      " set -- setpriv --reuid=\"$UI\" --regid=\"$UG\" --clear-groups -- \"$@\"\n");
}

/* The definition of spw_image for a launch (container.h): the root part
 * of the launch unpacks an OCI archive into the job's team's cache on the
 * host, $SPILLWAY_IMAGE_DIR (the login's environment, never the job's)
 * else $R/images, then team-TEAM.  Caller frees. */
static char *image_fn(const spw_ssh_t *sb, const spw_launch_t *req)
{
    spw_strbuf_t cache = {0}, fn = {0};
    char team[SPW_IMAGE_TEAM_DIR_MAX];
    spw_container_team_dir(team, sizeof(team), req->team);
    spw_strbuf_add(&cache, "\"${SPILLWAY_IMAGE_DIR:-$R/images}\"/");
    spw_strbuf_quote(&cache, team);
    spw_container_image_fn(&fn, cache.s, sb->image_max_bytes, sb->image_max_files);
    free(cache.s);
    return fn.s;
}

/* Appends the line that applies the job's own variables to its command
 * ("$@") alone.  The launch script and its shim run as the login user
 * (root, to switch users): a job's PATH, LD_PRELOAD, IFS or a name like the
 * script's own D must not reach them.  So the launch exports them renamed
 * (SPW_E_NAME, which no program reads), and a shell that runs after the
 * switch to the job's user (user_switch wraps it) exports them by their
 * names and execs the job. */
static void job_env_apply(spw_strbuf_t *s, const spw_launch_t *req)
{
    spw_strbuf_t names = {0};
    for (const char *const *e = req->env; e && *e; e++) {
        int nl = (int)(strchr(*e, '=') - *e), later = 0;
        for (const char *const *f = e + 1; *f && !later; f++)  /* the last one is exported */
            later = strncmp(*f, *e, (size_t)nl + 1) == 0;
        if (!later)
            spw_strbuf_printf(&names, "%s%.*s", names.s ? " " : "", nl, *e);
    }
    if (!names.s)
        return;
    spw_strbuf_add(s, "set -- /bin/sh -c 'for v in $1; do eval \"export $v=\\\"\\$SPW_E_$v\\\";"
                      " unset SPW_E_$v\"; done; shift; exec \"$@\"' spw-env ");
    spw_strbuf_quote(s, names.s);
    spw_strbuf_add(s, " \"$@\"\n");
    free(names.s);
}

static int ssh_launch(void *be, const spw_launch_t *req, spw_handle_t *out, spw_error_t *err)
{
    spw_ssh_t *sb = be;
    if (!req->job_id || !spw_safe_name(req->job_id, SPW_JOB_ID_MAX))
        return spw_errorf(err, "invalid job id '%s'", req->job_id ? req->job_id : "");
    if (!token_valid(req->token))
        return spw_errorf(err, "ssh backend: invalid launch token '%s'",
                          req->token ? req->token : "");
    if (!req->argv == !req->script || (req->argv && !req->argv[0]))
        return spw_errorf(err, "ssh backend: give argv or a script");
    uint32_t nodes = req->nodes > 1 ? req->nodes : 1;
    if (nodes > sb->nhosts)
        return spw_errorf(err, "ssh backend: a gang of %u nodes, but the pool has %zu hosts",
                          nodes, sb->nhosts);
    for (const char *const *e = req->env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e)
            return spw_errorf(err, "ssh backend: env entry '%s' is not NAME=VALUE", *e);
        for (const char *c = *e; c < eq; c++)
            if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                  (c > *e && *c >= '0' && *c <= '9')))
                return spw_errorf(err, "ssh backend: env name in '%s' is not a shell name", *e);
    }

    uint32_t *hosts = spw_xcalloc(nodes, sizeof(uint32_t));
    uint64_t *bits = spw_xcalloc(nodes, sizeof(uint64_t));
    spw_strbuf_t ipb = {0};
    job_t *j = NULL;
    cmd_t *cmds = NULL;
    int *st = NULL;
    char **outs = NULL;
    if (place(sb, req, nodes, hosts, bits, err) < 0)
        goto error;

    char ext[SPW_HANDLE_EXT_MAX] = "";
    for (uint32_t k = 0; k < nodes; k++)
        spw_strbuf_printf(&ipb, "%s%s", k ? "," : "", sb->hosts[hosts[k]].addr);
    const char *ips = ipb.s;
    /* The handle names the hosts; a list too long for it is kept in
     * LOG_DIR/JOBID/JOBID.hosts (and on each host) and the handle says "@". */
    if (strlen(ips) < sizeof(ext)) {
        memcpy(ext, ips, strlen(ips) + 1);
    } else {
        if (write_hosts_file(sb, req->job_id, req->token, ips) < 0) {
            spw_errorf(err, "ssh backend: cannot write %s/%s/%s.hosts: %s", sb->log_dir,
                       req->job_id, req->job_id, strerror(errno));
            goto error;
        }
        snprintf(ext, sizeof(ext), "@");
    }

    /* Local logs: rank 0 appends to JOBID.out/.err (bases in JOBID.ssh),
     * other ranks start fresh files. */
    char path[4200];
    long long ob, eb;
    /* The same token launched again (a daemon that died before recording
     * it places the job again with the same attempt): the launch adopts
     * what runs, so the logs continue where they were. */
    int again = read_sidecar(sb, req->job_id, req->token, &ob, &eb) == 0;
    if (!again) {
        log_path(sb, req->job_id, 0, 0, path, sizeof(path));
        ob = file_size(path);
        log_path(sb, req->job_id, 0, 1, path, sizeof(path));
        eb = file_size(path);
        if (ob < 0)
            ob = 0;
        if (eb < 0)
            eb = 0;
        if (write_sidecar(sb, req->job_id, req->token, ob, eb) < 0) {
            spw_errorf(err, "ssh backend: cannot write %s/%s.ssh: %s", sb->log_dir, req->job_id,
                       strerror(errno));
            goto error;
        }
    }
    for (uint32_t k = 0; k < nodes; k++)
        for (int e = 0; e < 2; e++) {
            log_path(sb, req->job_id, k, e, path, sizeof(path));
            int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (k && !again ? O_TRUNC : 0), 0640);
            if (fd >= 0)
                close(fd);
        }

    unsigned hash = 2166136261u;
    for (const char *c = req->token; *c; c++)
        hash = (hash ^ (unsigned char)*c) * 16777619u;
    char master_port[16], world[16], rank_s[16], cvd[MAX_SLOTS * 4];
    snprintf(master_port, sizeof(master_port), "%u", 29500 + hash % 1000);
    snprintf(world, sizeof(world), "%u", nodes);

    j = spw_xcalloc(1, sizeof(*j));
    j->nranks = nodes;
    j->r = spw_xcalloc(nodes, sizeof(rank_t));
    j->term_s = NAN;
    j->lost_s = NAN;
    snprintf(j->h.job_id, sizeof(j->h.job_id), "%s", req->job_id);
    snprintf(j->h.token, sizeof(j->h.token), "%s", req->token);
    snprintf(j->h.ext, sizeof(j->h.ext), "%s", ext);
    j->h.started_s = req->now_s;
    j->h.max_runtime_s = req->max_runtime_s;

    cmds = spw_xcalloc(nodes, sizeof(cmd_t));
    st = spw_xcalloc(nodes, sizeof(int));
    outs = spw_xcalloc(nodes, sizeof(char *));
    for (uint32_t k = 0; k < nodes; k++)
        cmds[k].out_fd = -1;
    int failed = 0;
    for (uint32_t k = 0; k < nodes && !failed; k++) {
        char dir[SPW_TOKEN_MAX + 16];
        rank_dir(j, k, dir, sizeof(dir));
        j->r[k].host = hosts[k];
        j->r[k].gpu_bits = bits[k];
        spw_strbuf_t s = {0};
        spw_strbuf_add(&s, prelude);
        spw_strbuf_printf(&s, "T='%s'; D=$J/$T\n", dir);
        /* The launch holds $R/lock/$T from before its mkdir until its job has
         * a pid (or it gave up): find() waits on it, so what it reports of
         * this launch cannot change after (launch_lock). */
        spw_strbuf_add(&s, "mkdir -p \"$J\" \"$R/fence\" || { echo \"E cannot create $J\"; exit 1; }\n"
                   LAUNCH_LOCK
                   "if ! mkdir \"$D\" 2>/dev/null; then\n"
                   "  if alive \"$T\"; then echo \"A $(cat \"$D/pid\")\"; exit 0; fi\n"
                   "  echo \"E launch $T was started on this host before\"; exit 1\nfi\n");
        spw_strbuf_printf(&s, "if [ -e \"$R/fence/%s\" ]; then echo \"E launch token %s was fenced by a "
                  "restarted daemon\"; exit 1; fi\n", req->token, req->token);
        spw_strbuf_printf(&s, "echo '%s' >\"$D/token\"; echo '%s' >\"$D/hosts\"\n", req->token, ips);
        {
            /* Its cgroup on the host, before anything of the spec's. */
            uint32_t own[MAX_SLOTS];
            size_t nown = 0;
            for (uint32_t g = 0; g < MAX_SLOTS; g++)
                if (bits[k] >> g & 1)
                    own[nown++] = g;
            spw_cgroup_shell(&s, sb->job_pids_max, sb->job_memory_mib, own, nown);
        }
        if (req->workdir) {
            spw_strbuf_add(&s, "W=");
            spw_strbuf_quote(&s, req->workdir);
            spw_strbuf_add(&s, "; cd \"$W\" 2>/dev/null || { echo \"E cannot enter the workdir $W on"
                       " this host\"; exit 1; }\n");
        }
        /* The job's own variables travel renamed (job_env_apply). */
        for (const char *const *e = req->env; e && *e; e++) {
            const char *eq = strchr(*e, '=');
            char name[300];
            snprintf(name, sizeof(name), "SPW_E_%.*s", (int)(eq - *e), *e);
            add_export(&s, name, eq + 1);
        }
        cvd[0] = '\0';
        for (uint32_t g = 0; g < MAX_SLOTS; g++)
            if (bits[k] >> g & 1)
                snprintf(cvd + strlen(cvd), sizeof(cvd) - strlen(cvd), "%s%u", cvd[0] ? "," : "", g);
        add_export(&s, "CUDA_VISIBLE_DEVICES", cvd);
        add_export(&s, "SPILLWAY_JOB_ID", req->job_id);
        add_export(&s, "SPILLWAY_LAUNCH_TOKEN", req->token);
        snprintf(rank_s, sizeof(rank_s), "%u", k);
        if (nodes > 1) {
            add_export(&s, "RANK", rank_s);
            add_export(&s, "NODE_RANK", rank_s);
            add_export(&s, "LOCAL_RANK", "0");
            add_export(&s, "WORLD_SIZE", world);
            add_export(&s, "LOCAL_WORLD_SIZE", "1");
            add_export(&s, "MASTER_ADDR", sb->hosts[hosts[0]].addr);
            add_export(&s, "MASTER_PORT", master_port);
        }
        add_export(&s, "SPILLWAY_NODE_IPS", ips);
        add_export(&s, "SPILLWAY_NODE_RANK", rank_s);
        /* The spec's image; SPILLWAY_IMAGE in its env is the older way to
         * say the same (docs/hosts.md). */
        const char *image = req->image ? req->image : env_value(req->env, "SPILLWAY_IMAGE");
        spw_strbuf_add(&s, "set --");
        if (req->argv) {
            for (const char *const *a = req->argv; *a; a++) {
                spw_strbuf_add(&s, " ");
                spw_strbuf_quote(&s, *a);
            }
            /* Looked up in the login's PATH: a job's own PATH is applied
             * only as its user, so a job that sets one is not checked. */
            if (!image && !env_value(req->env, "PATH"))
                spw_strbuf_add(&s, "\ncommand -v \"$1\" >/dev/null 2>&1 || { echo \"E cannot run '$1': not"
                           " found on this host\"; exit 1; }");
            spw_strbuf_add(&s, "\n");
        } else {
            spw_strbuf_add(&s, " /bin/sh -c ");
            spw_strbuf_quote(&s, req->script);
            spw_strbuf_add(&s, "\n");
        }
        if (req->set_user)
            user_resolve(&s, req);
        if (image) {
            /* podman passes on the variables the launch exports. */
            const char **names = spw_xcalloc(24 + 1 + (req->env ? 0 : 0), sizeof(char *));
            size_t nn = 0, cap = 24;
            static const char *const own[] = {"CUDA_VISIBLE_DEVICES", "SPILLWAY_JOB_ID",
                                              "SPILLWAY_LAUNCH_TOKEN", "SPILLWAY_NODE_IPS",
                                              "SPILLWAY_NODE_RANK", "RANK", "NODE_RANK",
                                              "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                              "MASTER_ADDR", "MASTER_PORT"};
            char **heap = NULL;
            size_t nheap = 0;
            for (const char *const *e = req->env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                heap = spw_xrealloc(heap, (nheap + 1) * sizeof(char *));
                heap[nheap] = spw_xmalloc((size_t)(eq - *e) + 1);
                memcpy(heap[nheap], *e, (size_t)(eq - *e));
                heap[nheap][eq - *e] = '\0';
                nheap++;
            }
            for (size_t i = 0; i < nheap + sizeof(own) / sizeof(own[0]); i++) {
                if (nn + 1 >= cap) {
                    cap *= 2;
                    names = spw_xrealloc(names, cap * sizeof(char *));
                }
                names[nn++] = i < nheap ? heap[i] : own[i - nheap];
                names[nn] = NULL;
            }
            uint32_t gl[MAX_SLOTS];
            size_t ng = 0;
            for (uint32_t g = 0; g < MAX_SLOTS; g++)
                if (bits[k] >> g & 1)
                    gl[ng++] = g;
            const char *ckd = env_value(req->env, "SPILLWAY_CHECKPOINT_DIR");
            char *cache = image_fn(sb, req);
            spw_container_t ct = {image, req->token, req->workdir, ckd, gl, ng,
                                  (const char *const *)names, cache};
            spw_strbuf_add(&s, "die() { echo \"E $*\"; exit 1; }\n");
            if (!req->set_user)
                spw_strbuf_add(&s, "SPW_JOB_UID=; SPW_JOB_GID=\n");
            spw_container_wrap(&s, &ct);
            for (size_t i = 0; i < nheap; i++)
                free(heap[i]);
            free(heap);
            free(names);
            free(cache);
        }
        job_env_apply(&s, req);
        if (req->set_user)
            user_switch(&s);
        spw_strbuf_add(&s, "S=");
        spw_strbuf_quote(&s, shim);
        spw_strbuf_add(&s, "\nsetsid /bin/sh -c \"$S\" spw-shim \"$D\" \"$@\" </dev/null >/dev/null 2>&1 9>&- &\n"
                   "i=0; while [ ! -s \"$D/pid\" ]; do i=$((i + 1));"
                   " [ $i -le 1000 ] || { echo \"E the shim did not start\"; exit 1; }; sleep 0.01; done\n"
                   LAUNCH_UNLOCK
                   "echo \"P $(cat \"$D/pid\")\"\n");
        if (cmd_start(sb, &sb->hosts[hosts[k]], s.s, 0, &cmds[k], err) < 0)
            failed = 1;
        free(s.s);
    }
    cmd_wait_all(sb, cmds, nodes, st, outs);
    if (!failed) {
        for (uint32_t k = 0; k < nodes; k++) {
            const char *pl = strstr(outs[k], "P ");
            const char *al = strstr(outs[k], "A ");
            if (st[k] == 0 && pl && (pl == outs[k] || pl[-1] == '\n')) {
                j->r[k].pid = strtol(pl + 2, NULL, 10);
                continue;
            }
            if (st[k] == 0 && al && (al == outs[k] || al[-1] == '\n')) {
                /* Already running under this token: adopted, its logs
                 * fetched from where the local files stand. */
                j->r[k].pid = strtol(al + 2, NULL, 10);
                for (int e = 0; e < 2; e++) {
                    log_path(sb, req->job_id, k, e, path, sizeof(path));
                    long long sz = file_size(path), base = k ? 0 : (e ? eb : ob);
                    j->r[k].off[e] = sz > base ? (uint64_t)(sz - base) : 0;
                }
                continue;
            }
            if (!failed) {
                char line[200];
                const char *e = strstr(outs[k], "E ");
                if (e && (e == outs[k] || e[-1] == '\n'))
                    last_line(e + 2, line, sizeof(line));
                else if (st[k] == -2)
                    snprintf(line, sizeof(line), "no answer within %.0f s", sb->cmd_timeout_s);
                else
                    last_line(outs[k], line, sizeof(line));
                spw_errorf(err, "ssh %s%s: %s", sb->hosts[hosts[k]].addr,
                           nodes > 1 ? " (a rank of the gang)" : "", line[0] ? line : "ssh failed");
            }
            failed = 1;
        }
    }
    if (failed) {
        /* All or nothing: stop the ranks that did start (the ones that did
         * not may still start if their ssh was cut off mid-way: fence them
         * too, so tick() kills whatever appears). */
        cmd_t *kc = spw_xcalloc(nodes, sizeof(cmd_t));
        int *kst = spw_xcalloc(nodes, sizeof(int));
        char **kout = spw_xcalloc(nodes, sizeof(char *));
        for (uint32_t k = 0; k < nodes; k++) {
            kc[k].out_fd = -1;
            /* A host that did not answer the launch (timed out, or ssh
             * could not reach it) would not answer this either: it is
             * fenced below, for tick() to kill once it answers, rather
             * than holding the caller for a second command timeout. */
            if (st[k] == -2 || st[k] == 255)
                continue;
            char dir[SPW_TOKEN_MAX + 16];
            rank_dir(j, k, dir, sizeof(dir));
            spw_strbuf_t s = {0};
            spw_strbuf_add(&s, prelude);
            spw_strbuf_printf(&s, "mkdir -p \"$R/fence\"; : >\"$R/fence/%s\"; sig '%s' KILL\n", req->token,
                      dir);
            cmd_start(sb, &sb->hosts[hosts[k]], s.s, 0, &kc[k], NULL);
            free(s.s);
        }
        cmd_wait_all(sb, kc, nodes, kst, kout);
        for (uint32_t k = 0; k < nodes; k++) {
            /* not started or not done: fenced */
            if (kst[k] != 0) {
                char dir[SPW_TOKEN_MAX + 16];
                rank_dir(j, k, dir, sizeof(dir));
                add_fence(sb, hosts[k], dir);
            }
            free(kout[k]);
        }
        free(kc);
        free(kst);
        free(kout);
        goto error;
    }
    j->h.pid = (pid_t)j->r[0].pid;
    j->h.pgid = (pid_t)j->r[0].pid;
    j->h.start_ticks = 0;
    *out = j->h;
    track(sb, j);
    free(ipb.s);
    for (uint32_t k = 0; k < nodes; k++)
        free(outs[k]);
    free(outs);
    free(st);
    free(cmds);
    free(hosts);
    free(bits);
    return 0;

error:
    free(ipb.s);
    if (outs)
        for (uint32_t k = 0; k < nodes; k++)
            free(outs[k]);
    free(outs);
    free(st);
    free(cmds);
    job_free(j);
    free(hosts);
    free(bits);
    return -1;
}

static int not_tracked(const spw_handle_t *h, spw_error_t *err)
{
    errno = ESRCH;
    return spw_errorf(err, "job %s (%s) is not tracked by the ssh backend", h->job_id, h->token);
}

static int ssh_signal(void *be, const spw_handle_t *h, int signum, spw_error_t *err)
{
    spw_ssh_t *sb = be;
    job_t *j = find_tracked(sb, h);
    if (!j)
        return not_tracked(h, err);
    char name[16];
    snprintf(name, sizeof(name), "%d", signum);
    signal_ranks(sb, j, name);
    return 0;
}

static int ssh_cancel(void *be, const spw_handle_t *h, double now_s, spw_error_t *err)
{
    spw_ssh_t *sb = be;
    job_t *j = find_tracked(sb, h);
    if (!j)
        return not_tracked(h, err);
    if (j->cause == SPW_CAUSE_NONE)
        j->cause = SPW_CAUSE_CANCELLED;
    if (isnan(j->term_s)) {
        j->term_s = now_s;
        sb->now_s = now_s;
        signal_ranks(sb, j, "TERM");
    }
    return 0;
}

static void ssh_tick(void *be, double now_s)
{
    spw_ssh_t *sb = be;
    sb->now_s = now_s;
    for (size_t i = 0; i < sb->nbg;) {
        int st;
        /* Killed only while still ours: once cmd_done reaped it, its pid
         * may already belong to another thread's child. */
        int ended = cmd_done(&sb->bg[i], &st);
        if (ended || now_s >= sb->bg[i].deadline_s) {
            if (!ended)
                cmd_kill(&sb->bg[i]);
            cmd_close(&sb->bg[i]);
            sb->bg[i] = sb->bg[--sb->nbg];
            continue;
        }
        i++;
    }
    for (size_t i = 0; i < sb->njobs; i++) {
        job_t *j = sb->jobs[i];
        if (j->h.max_runtime_s > 0 && isnan(j->term_s) &&
            now_s - j->h.started_s >= j->h.max_runtime_s) {
            j->cause = SPW_CAUSE_MAX_RUNTIME;
            j->term_s = now_s;
            signal_ranks(sb, j, "TERM");
        }
        if (!isnan(j->term_s) && !j->killed && now_s - j->term_s >= sb->grace_s) {
            j->killed = 1;
            signal_ranks(sb, j, "KILL");
        }
    }
    for (uint32_t hi = 0; hi < sb->nhosts; hi++)
        host_tick(sb, hi, now_s);
    settle_lost(sb, now_s);
}

static int ssh_poll(void *be, spw_exit_t *exits, size_t max)
{
    spw_ssh_t *sb = be;
    return spw_queue_take(sb->done, &sb->ndone, sizeof(*exits), exits, max);
}

static int ext_hosts_in(spw_ssh_t *sb, char *buf, uint32_t *hosts, size_t cap, spw_error_t *err);

/* Hosts of a host list (a handle's ext, or what handle_hosts read), as
 * indices.  Returns the count, or -1 with err. */
static int ext_hosts(spw_ssh_t *sb, const char *ext, uint32_t *hosts, size_t cap, spw_error_t *err)
{
    if (!ext) {
        errno = ESRCH;
        return spw_errorf(err, "the handle's host list (LOG_DIR/JOBID/JOBID.hosts) is missing");
    }
    char *buf = spw_xstrdup(ext);
    int rc = ext_hosts_in(sb, buf, hosts, cap, err);
    free(buf);
    return rc;
}

/* ext_hosts on a writable copy. */
static int ext_hosts_in(spw_ssh_t *sb, char *buf, uint32_t *hosts, size_t cap, spw_error_t *err)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < sb->nhosts; i++)
            if (strcmp(sb->hosts[i].addr, t) == 0)
                break;
        if (i == sb->nhosts) {
            errno = ESRCH;
            return spw_errorf(err, "host %s of the handle is not in this pool any more", t);
        }
        if (n == cap)
            return spw_errorf(err, "too many hosts in the handle");
        hosts[n++] = (uint32_t)i;
    }
    if (n == 0) {
        errno = ESRCH;
        return spw_errorf(err, "the handle names no host");
    }
    return (int)n;
}

/* Asks each host of hosts[0..n) about rank k's directory of token.  Fills
 * state[k] ("running", "exited 0", "gone", "none") and pid[k].  Returns 0,
 * or -1 with err if a host did not answer. */
static int query_ranks(spw_ssh_t *sb, const char *token, const uint32_t *hosts, size_t n,
                       char (*state)[64], long *pid, spw_error_t *err)
{
    cmd_t *c = spw_xcalloc(n, sizeof(cmd_t));
    int *st = spw_xcalloc(n, sizeof(int)), rc = 0;
    char **out = spw_xcalloc(n, sizeof(char *));
    for (size_t k = 0; k < n; k++) {
        c[k].out_fd = -1;
        spw_strbuf_t s = {0};
        spw_strbuf_add(&s, prelude);
        spw_strbuf_printf(&s, "st '%s-r%zu' 999999999999 999999999999\necho END\n", token, k);
        if (cmd_start(sb, &sb->hosts[hosts[k]], s.s, 0, &c[k], err) < 0)
            rc = -1;
        free(s.s);
    }
    cmd_wait_all(sb, c, n, st, out);
    for (size_t k = 0; k < n && rc == 0; k++) {
        char dir[SPW_TOKEN_MAX + 16], line[200], w1[32] = "";
        long a = 0, b = 0;
        pid[k] = 0;
        /* "S DIR running PID", "S DIR exited N PID", "S DIR none " */
        int got = sscanf(out[k], "S %111s %31s %ld %ld", dir, w1, &a, &b);
        if (st[k] != 0 || !strstr(out[k], "END\n") || got < 2) {
            rc = spw_errorf(err, "ssh %s: %s", sb->hosts[hosts[k]].addr,
                            st[k] == -2 ? "no answer" : last_line(out[k], line, sizeof(line)));
            break;
        }
        if (strcmp(w1, "exited") == 0 || strcmp(w1, "signaled") == 0) {
            snprintf(state[k], 64, "%s %ld", w1, a);
            pid[k] = got >= 4 ? b : 0;
        } else {
            snprintf(state[k], 64, "%s", w1);
            pid[k] = got >= 3 ? a : 0;
        }
    }
    for (size_t k = 0; k < n; k++)
        free(out[k]);
    free(out);
    free(st);
    free(c);
    return rc;
}

/* Tracks a launch found on its hosts, with log offsets from the local files. */
static void adopt_found(spw_ssh_t *sb, const spw_handle_t *h, const uint32_t *hosts, size_t n,
                        char (*state)[64], const long *pid)
{
    job_t *j = spw_xcalloc(1, sizeof(*j));
    j->h = *h;
    j->nranks = (uint32_t)n;
    j->r = spw_xcalloc(n, sizeof(rank_t));
    j->term_s = NAN;
    j->lost_s = NAN;
    long long ob = 0, eb = 0;
    char path[4200], tok[SPW_TOKEN_MAX];
    char dir[4096];
    job_dir(sb, h->job_id, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.ssh", dir, h->job_id);
    FILE *f = fopen(path, "r");
    int have = 0;
    if (f) {
        have = fscanf(f, "%95s %lld %lld", tok, &ob, &eb) == 3 && strcmp(tok, h->token) == 0;
        fclose(f);
    }
    for (size_t k = 0; k < n; k++) {
        rank_t *r = &j->r[k];
        r->host = hosts[k];
        r->pid = pid[k];
        int fin;
        parse_state(state[k], &r->kind, &r->status, &fin);
        r->final = 0; /* the next status reads its logs, then its end */
        for (int e = 0; e < 2; e++) {
            log_path(sb, h->job_id, (uint32_t)k, e, path, sizeof(path));
            long long sz = file_size(path);
            long long base = k == 0 && have ? (e ? eb : ob) : 0;
            if (k == 0 && !have)
                base = sz < 0 ? 0 : sz; /* unknown: fetch what comes from now */
            r->off[e] = sz > base ? (uint64_t)(sz - base) : 0;
        }
    }
    if (!have && n) {
        /* Without the sidecar the fetched amount is unknown: start from the
         * remote file's current end rather than duplicate. */
        for (int e = 0; e < 2; e++)
            j->r[0].off[e] = 0;
    }
    track(sb, j);
}

static int ssh_adopt(void *be, const spw_handle_t *h, spw_error_t *err)
{
    spw_ssh_t *sb = be;
    if (find_tracked(sb, h))
        return 0;
    if (!token_valid(h->token)) {
        errno = ESRCH;
        return spw_errorf(err, "the handle of job %s has no launch token", h->job_id);
    }
    uint32_t hosts[SPW_SSH_MAX_HOSTS];
    char *list = handle_hosts(sb, h);
    int n = ext_hosts(sb, list, hosts, SPW_SSH_MAX_HOSTS, err);
    free(list);
    if (n < 0)
        return -1;
    char(*state)[64] = spw_xcalloc((size_t)n, 64);
    long *pid = spw_xcalloc((size_t)n, sizeof(long));
    int rc = query_ranks(sb, h->token, hosts, (size_t)n, state, pid, err);
    if (rc == 0 && (strcmp(state[0], "none") == 0 || strcmp(state[0], "gone") == 0)) {
        errno = ESRCH;
        rc = spw_errorf(err, "job %s is gone from host %s", h->job_id, sb->hosts[hosts[0]].addr);
    }
    if (rc == 0)
        adopt_found(sb, h, hosts, (size_t)n, state, pid);
    free(state);
    free(pid);
    return rc;
}

static int ssh_find(void *be, const char *token, spw_handle_t *out, spw_error_t *err)
{
    spw_ssh_t *sb = be;
    if (!token_valid(token))
        return spw_errorf(err, "ssh backend: invalid launch token '%s'", token ? token : "");
    for (size_t i = 0; i < sb->njobs; i++)
        if (strcmp(sb->jobs[i]->h.token, token) == 0) {
            *out = sb->jobs[i]->h;
            return 1;
        }
    /* A host that does not answer its status rounds (down, or its last
     * round failed, or it never answered one and one is in flight) is not
     * asked: the answer is "cannot tell" until it answers again, said now
     * rather than after a connect timeout that would hold the caller (the
     * daemon's loop asks every few seconds while a host stays cut off). */
    for (size_t i = 0; i < sb->nhosts; i++) {
        const host_t *h = &sb->hosts[i];
        if (!h->gone && (!h->up || !isnan(h->silent_since_s) || (h->last_ok_s == 0 && h->st.pid)))
            return spw_errorf(err, "ssh %s: cannot look for launch %s now: the host %s", h->addr,
                              token, h->up ? "has not answered its status round yet"
                                           : "is down");
    }
    /* Fence first, then look: a launcher checks the fence after its mkdir,
     * so either we see its directory or it sees our fence. */
    size_t n = sb->nhosts;
    cmd_t *c = spw_xcalloc(n, sizeof(cmd_t));
    int *st = spw_xcalloc(n, sizeof(int)), rc = 0;
    char **o = spw_xcalloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        c[i].out_fd = -1;
        if (sb->hosts[i].gone)
            continue;
        spw_strbuf_t s = {0};
        spw_strbuf_add(&s, prelude);
        /* A rank directory whose launch still holds its lock is reported
         * once the launch is done (launch_lock); one still starting after
         * half the command timeout makes the answer "cannot tell now". */
        spw_strbuf_printf(&s, "mkdir -p \"$R/fence\" && : >\"$R/fence/%s\" || exit 1\n"
                      "for d in \"$J/%s\"-r*; do [ -d \"$d\" ] || continue; b=${d##*/};"
                      " if [ -e \"$R/lock/$b\" ] && command -v flock >/dev/null 2>&1; then"
                      " flock -w %.0f \"$R/lock/$b\" true || { echo \"E launch $b is still starting\";"
                      " exit 1; }; fi;"
                      " echo \"D $b $(cat \"$d/hosts\" 2>/dev/null)\"; done\necho END\n",
                  token, token, fmax(1, floor(sb->cmd_timeout_s / 2)));
        if (cmd_start(sb, &sb->hosts[i], s.s, 0, &c[i], err) < 0)
            rc = -1;
        free(s.s);
    }
    cmd_wait_all(sb, c, n, st, o);
    char *hostsline = NULL;   /* rank 0's `hosts` file: the whole list */
    int found = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (sb->hosts[i].gone)
            continue;
        if (st[i] != 0 || !strstr(o[i], "END\n")) {
            char line[200];
            rc = spw_errorf(err, "ssh %s: cannot look for launch %s now: %s", sb->hosts[i].addr,
                            token, st[i] == -2 ? "no answer" : last_line(o[i], line, sizeof(line)));
            break;
        }
        for (char *p = o[i]; (p = strstr(p, "D ")) != NULL; p += 2) {
            if (p != o[i] && p[-1] != '\n')
                continue;
            char dir[SPW_TOKEN_MAX + 16];
            if (sscanf(p, "D %111s", dir) >= 1) {
                found++;
                if (strcmp(dir + strlen(token), "-r0") == 0) {
                    /* "D DIR HOST,HOST,...": the rest of the line */
                    const char *hl = p + 2 + strlen(dir);
                    hl += strspn(hl, " ");
                    free(hostsline);
                    hostsline = spw_xstrdup(hl);
                    hostsline[strcspn(hostsline, " \n")] = '\0';
                }
                add_fence(sb, (uint32_t)i, dir);
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        free(o[i]);
    free(o);
    free(st);
    free(c);
    if (rc < 0 || !found) {
        free(hostsline);
        return rc < 0 ? -1 : 0;
    }
    /* Something carries the token.  A complete launch whose ranks all run
     * is adopted; anything else stays fenced (killed by tick()). */
    spw_handle_t h;
    memset(&h, 0, sizeof(h));
    snprintf(h.token, sizeof(h.token), "%s", token);
    const char *dot1 = strchr(token, '.'), *dot2 = strrchr(token, '.');
    if (dot1 && dot2 > dot1)
        snprintf(h.job_id, sizeof(h.job_id), "%.*s", (int)(dot2 - dot1 - 1), dot1 + 1);
    if (hostsline && strlen(hostsline) < sizeof(h.ext))
        snprintf(h.ext, sizeof(h.ext), "%s", hostsline);
    else if (hostsline && (!h.job_id[0] ||
                           write_hosts_file(sb, h.job_id, token, hostsline) < 0))
        hostsline[0] = '\0';   /* cannot be handed over: stays fenced */
    else if (hostsline)
        snprintf(h.ext, sizeof(h.ext), "@");
    uint32_t hosts[SPW_SSH_MAX_HOSTS];
    spw_error_t e2;
    int nh = hostsline && hostsline[0] ? ext_hosts(sb, hostsline, hosts, SPW_SSH_MAX_HOSTS, &e2)
                                       : -1;
    free(hostsline);
    if (nh > 0 && nh == found) {
        char(*state)[64] = spw_xcalloc((size_t)nh, 64);
        long *pid = spw_xcalloc((size_t)nh, sizeof(long));
        int ok = query_ranks(sb, token, hosts, (size_t)nh, state, pid, err) == 0;
        for (int k = 0; k < nh && ok; k++)
            ok = strcmp(state[k], "none") != 0 && strcmp(state[k], "gone") != 0;
        if (ok) {
            /* Not to be killed after all. */
            for (size_t f = 0; f < sb->nfences;) {
                if (strncmp(sb->fences[f].dir, token, strlen(token)) == 0 &&
                    sb->fences[f].dir[strlen(token)] == '-')
                    fence_drop(sb, f);
                else
                    f++;
            }
            h.pid = h.pgid = (pid_t)pid[0];
            adopt_found(sb, &h, hosts, (size_t)nh, state, pid);
            *out = h;
        }
        free(state);
        free(pid);
        if (ok)
            return 1;
    }
    return 0;
}

static void ssh_destroy(void *be) { spw_ssh_destroy(be); }

/* Hosts (version 4): the functions of ssh.h. */
static size_t ssh_host_count(void *be) { return spw_ssh_host_count(be); }

static void ssh_host_info(void *be, size_t i, spw_backend_host_t *out) { spw_ssh_host(be, i, out); }

static int ssh_host_add(void *be, const char *addr, uint32_t gpus, spw_error_t *err)
{
    return spw_ssh_host_add(be, addr, gpus, err);
}

static int ssh_host_remove(void *be, const char *addr, double now_s)
{
    return spw_ssh_host_remove(be, addr, now_s);
}

/* Fences (version 5). */
static int ssh_fence_events(void *be, spw_backend_fence_t *out, size_t max)
{
    spw_ssh_t *sb = be;
    return spw_queue_take(sb->fev, &sb->nfev, sizeof(*sb->fev), out, max);
}

static int ssh_fence_add(void *be, const char *host, const char *what, spw_error_t *err)
{
    spw_ssh_t *sb = be;
    const char *r = what ? strrchr(what, '-') : NULL;
    size_t tl = r ? (size_t)(r - what) : 0;
    char token[SPW_TOKEN_MAX];
    if (!r || r[1] != 'r' || !r[2] || strspn(r + 2, "0123456789") != strlen(r + 2) ||
        tl == 0 || tl >= sizeof(token))
        return spw_errorf(err, "ssh backend: '%s' names no rank of a launch (TOKEN-rN)",
                          what ? what : "");
    snprintf(token, sizeof(token), "%.*s", (int)tl, what);
    if (!token_valid(token))
        return spw_errorf(err, "ssh backend: invalid launch token in fence '%s'", what);
    for (size_t hi = 0; hi < sb->nhosts; hi++)
        if (!sb->hosts[hi].gone && strcmp(sb->hosts[hi].addr, host) == 0) {
            fence_hold(sb, (uint32_t)hi, what, 1);
            return 0;
        }
    return spw_errorf(err, "ssh backend: no host %s to fence %s on", host, what);
}

int spw_ssh_host_notice(spw_ssh_t *sb, const char *host, const char *imds_url, char *buf,
                        size_t cap)
{
    for (size_t hi = 0; hi < sb->nhosts; hi++) {
        host_t *h = &sb->hosts[hi];
        if (h->gone || strcmp(h->addr, host) != 0)
            continue;
        if (!imds_url || !h->imds_url || strcmp(imds_url, h->imds_url) != 0) {
            free(h->imds_url);
            h->imds_url = imds_url ? spw_xstrdup(imds_url) : NULL;
        }
        if (!h->notice[0])
            return 0;
        if (cap)
            snprintf(buf, cap, "%s", h->notice);
        return 1;
    }
    return -1;
}

static int ssh_host_notice(void *be, const char *host, const char *imds_url, char *buf,
                           size_t cap)
{
    return spw_ssh_host_notice(be, host, imds_url, buf, cap);
}

const struct spw_backend_ops spw_ssh_ops = {
    .version = SPW_BACKEND_VERSION,
    .name = "ssh",
    .launch = ssh_launch,
    .signal = ssh_signal,
    .cancel = ssh_cancel,
    .tick = ssh_tick,
    .poll = ssh_poll,
    .adopt = ssh_adopt,
    .destroy = ssh_destroy,
    .find = ssh_find,
    .host_count = ssh_host_count,
    .host_info = ssh_host_info,
    .host_add = ssh_host_add,
    .host_remove = ssh_host_remove,
    .fence_events = ssh_fence_events,
    .fence_add = ssh_fence_add,
    .host_notice = ssh_host_notice,
};
