/* slurm.c: the Slurm backend (see slurm.h): jobs as Slurm batch jobs,
 * submitted with sbatch, followed with one squeue --json per sync, cancelled
 * with scancel. */
#include "backends/slurm/slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/run.h"
#include "util/strbuf.h"

extern char **environ;

/* One job the backend tracks. */
typedef struct sjob {
    spw_handle_t h;             /* as launch() filled it or adopt() got it */
    long id;                    /* Slurm job id */
    int cancel_req;             /* cancel() was called */
    int cancel_sent;            /* scancel succeeded since */
    int cancel_busy;            /* a scancel of it is queued or running on
                                   the op threads */
    int pending;                /* its sbatch has not answered yet (id 0) */
    int code_busy;              /* it FAILED: its exit code is being read
                                   (scontrol) on the op threads */
    int missing;                /* syncs in a row that did not list it */
    char *gate;                 /* owned: its cancel gate, LOG_DIR/TOKEN.cancelled
                                   (batch_script); NULL for a job adopted
                                   from an earlier daemon process */
} sjob_t;

/* One command for the op threads: an sbatch (a launch) or an scancel.
 * Queued by the caller's thread, run by an op thread, its result applied
 * by the caller's next tick(); under wmu while queued or done. */
typedef struct sop {
    int kind;                   /* OP_SUBMIT, OP_SCANCEL or OP_EXITCODE */
    char token[SPW_TOKEN_MAX];  /* submit: the launch token; "" for the
                                   scancel of a fenced token's job */
    long id;                    /* scancel: the Slurm job; submit: its id
                                   once sbatch answered (0 before) */
    char **argv;                /* owned, NULL-terminated: sbatch's */
    char *script;               /* owned: the batch script on its stdin */
    int cancel;                 /* submit: cancel() came before sbatch
                                   answered: scancel right after it */
    int cancelled;              /* that scancel succeeded */
    int adopted;                /* submit: a job of an earlier daemon
                                   process carried the token: adopted, no
                                   sbatch */
    int rc;                     /* 0, or -1 (err) */
    int code, sig;              /* exit code: the batch script's ExitCode=
                                   CODE:SIGNAL (scontrol), when rc is 0 */
    char err[160];              /* why it failed */
    struct sop *next;           /* the queue or the done list */
} sop_t;

enum { OP_SUBMIT, OP_SCANCEL, OP_EXITCODE };

/* Op threads: sbatch and scancel run there, several at once. */
#define OP_THREADS 4

struct spw_slurm {
    char *partition;            /* owned */
    char *bin_dir;              /* owned; NULL = PATH */
    char **envp;                /* owned, NULL-terminated: environ with
                                   SLURM_CONF replaced when given */
    double cmd_timeout_s;       /* limit of one command */
    double sync_interval_s;     /* least time between syncs */
    double last_sync_s;         /* daemon clock of the last sync; -inf */
    sjob_t *jobs;               /* tracked jobs */
    size_t njobs, capjobs;
    spw_exit_t *ended;          /* ended, not yet polled (FIFO) */
    spw_handle_t *chg;          /* handles that got their Slurm job id, not
                                   yet reported by changed() (FIFO) */
    size_t nchg, capchg;
    size_t nended, capended;
    char **fenced;              /* owned tokens that must never run */
    size_t nfenced, capfenced;
    char **nodes;               /* owned node names (spw_slurm_set_nodes) */
    size_t nnodes;
    struct sq_list *before;     /* jobs in Slurm when the first launch
                                   came: a launch whose token a job of an
                                   earlier daemon process already carries
                                   adopts it; NULL = not read yet.  Read
                                   and used by the op threads, under wmu */
    int before_busy;            /* an op thread is reading it */
    struct sq_list *snap;       /* the last squeue listing, valid until the
                                   next tick(); NULL = none */
    struct falloc *falloc;      /* allocations of foreign running jobs
                                   (spw_slurm_foreign_async), by Slurm job id;
                                   only the worker touches them */
    size_t nfalloc, capfalloc;
    /* The worker thread: squeue, sinfo and the foreign-job reads of the
     * loop (tick(), spw_slurm_nodes_async, spw_slurm_foreign_async) run
     * there, so a slurmctld that is slow or hung does not hold the
     * caller's thread.  Only the slots below are shared (under wmu). */
    pthread_t worker;           /* once started */
    int worker_on;              /* the worker was started */
    pthread_mutex_t wmu;        /* guards slots and wstop */
    pthread_cond_t wcv;         /* the worker waits on it */
    int wstop;                  /* destroy asked the worker to end */
    struct aslot {
        int want;               /* asked, not yet started */
        int busy;               /* running on the worker */
        int done;               /* a result waits for the caller */
        int rc;                 /* 0, or -1 (err) */
        char *out;              /* owned: the command's output (jobs, nodes) */
        spw_backend_foreign_t *fv; /* owned: the foreign allocations */
        size_t fn;              /* entries in fv */
        char err[256];          /* why it failed */
    } slot[3];                  /* SLOT_JOBS, SLOT_NODES, SLOT_FOREIGN */
    char own_prefix[64];        /* the foreign read's own prefix (set by the
                                   caller before asking, read by the worker) */
    /* The op threads (sbatch, scancel): started with the first op, they
     * take ops from the queue, several at once, so that launches and
     * cancels neither wait on Slurm in the caller's thread nor one after
     * the other. */
    pthread_t opth[OP_THREADS]; /* the first nopth started */
    int nopth;
    pthread_cond_t ocv;         /* op threads wait on it (queue, before) */
    sop_t *oq_head, *oq_tail;   /* queued, not yet taken (FIFO) */
    sop_t *orun;                /* taken, running (linked by next) */
    sop_t *odone;               /* done, not yet applied by tick() */
    uint64_t nsyncs;            /* listings tick() has applied */
    int snap_failed;            /* listing failed since the last tick():
                                   adopt() and find() answer "cannot tell"
                                   at once instead of waiting out another
                                   cmd_timeout_s each */
    char snap_err[256];         /* why it failed */
};

/* The worker's reads (spw_slurm.slot). */
enum { SLOT_JOBS, SLOT_NODES, SLOT_FOREIGN, NSLOTS };

/* The allocation of one foreign running job: GPUs per node. */
typedef struct falloc {
    long id;                    /* Slurm job id */
    spw_backend_foreign_t *v;     /* owned: its nodes and GPUs on each */
    size_t n;
    int seen;                   /* listed by the last foreign read */
} falloc_t;

/* One job of a squeue listing. */
typedef struct sq_job {
    long id;                    /* Slurm job id */
    const char *state;          /* "RUNNING", "FAILED", ... (in buf) */
    const char *name;           /* job name (in buf) */
    const char *comment;        /* its comment; "" once adopted by launch */
} sq_job_t;

/* `squeue -h --states=all -o %i|%T|%j|%k` (with 0x1f between fields), by id. */
typedef struct sq_list {
    sq_job_t *v;                /* sorted by id */
    size_t n;
    char *buf;                  /* owned: the command's output, split */
} sq_list_t;

static int snapshot(spw_slurm_t *sb, spw_error_t *err);
static void sq_free(sq_list_t *l);
static sq_list_t *sq_parse(char *o);
static void op_free(sop_t *op);
static int op_queue(spw_slurm_t *sb, sop_t *op);
static void op_scancel(spw_slurm_t *sb, long id, const char *token);
static void apply_ops(spw_slurm_t *sb);
static int exit_code_of(spw_slurm_t *sb, long id, int *code, int *sig);
static sjob_t *job_by_token(spw_slurm_t *sb, const char *token, size_t *idx);

/* The listing of every job Slurm still knows: id, state, name, comment. */
static const char *const sq_argv[] = {"squeue", "--noheader", "--states=all",
                                      "--format=%i\x1f%T\x1f%j\x1f%k", NULL};

static const char *jstr(json_t *o, const char *k);

/* ---- running commands ------------------------------------------------- */

int spw_slurm_run(spw_slurm_t *sb, const char *const *argv, const char *in, char **out,
                  spw_error_t *err)
{
    char path[4096];
    if (sb->bin_dir)
        snprintf(path, sizeof(path), "%s/%s", sb->bin_dir, argv[0]);
    else
        snprintf(path, sizeof(path), "%s", argv[0]);
    spw_run_t r = {.path = path, .argv = argv, .envp = sb->envp, .search_path = !sb->bin_dir,
                   .in = in, .timeout_s = sb->cmd_timeout_s,
                   .timeout_hint = "is slurmctld up?",
                   .where = sb->bin_dir ? sb->bin_dir : "PATH"};
    return spw_run(&r, out, err);
}

/* ---- bookkeeping -------------------------------------------------------- */

/* The tracked job of a handle: by its token (unique per attempt, and all a
 * handle of a launch whose sbatch has not answered carries), else by
 * Slurm job id and job id. */
static sjob_t *find_job(spw_slurm_t *sb, const spw_handle_t *h)
{
    for (size_t i = 0; i < sb->njobs; i++)
        if (strcmp(sb->jobs[i].h.job_id, h->job_id) == 0 &&
            (h->token[0] ? strcmp(sb->jobs[i].h.token, h->token) == 0
                         : strcmp(sb->jobs[i].h.ext, h->ext) == 0))
            return &sb->jobs[i];
    return NULL;
}

static sjob_t *track(spw_slurm_t *sb, const spw_handle_t *h, long id)
{
    if (sb->njobs == sb->capjobs) {
        sb->capjobs = sb->capjobs ? sb->capjobs * 2 : 16;
        sb->jobs = spw_xrealloc(sb->jobs, sb->capjobs * sizeof(*sb->jobs));
    }
    sjob_t *j = &sb->jobs[sb->njobs++];
    memset(j, 0, sizeof(*j));
    j->h = *h;
    j->id = id;
    return j;
}

static void fence(spw_slurm_t *sb, const char *token)
{
    for (size_t i = 0; i < sb->nfenced; i++)
        if (strcmp(sb->fenced[i], token) == 0)
            return;
    if (sb->nfenced == sb->capfenced) {
        sb->capfenced = sb->capfenced ? sb->capfenced * 2 : 8;
        sb->fenced = spw_xrealloc(sb->fenced, sb->capfenced * sizeof(char *));
    }
    sb->fenced[sb->nfenced++] = spw_xstrdup(token);
}

static int is_fenced(const spw_slurm_t *sb, const char *token)
{
    for (size_t i = 0; i < sb->nfenced; i++)
        if (strcmp(sb->fenced[i], token) == 0)
            return 1;
    return 0;
}

/* Moves tracked job i to the ended queue. */
static void end_job(spw_slurm_t *sb, size_t i, spw_exit_kind_t kind, int status,
                    spw_exit_cause_t cause)
{
    if (sb->nended == sb->capended) {
        sb->capended = sb->capended ? sb->capended * 2 : 16;
        sb->ended = spw_xrealloc(sb->ended, sb->capended * sizeof(*sb->ended));
    }
    sb->ended[sb->nended++] = (spw_exit_t){
        .handle = sb->jobs[i].h, .kind = kind, .status = status, .cause = cause};
    /* An ended job's gate is done with; one whose sbatch failed keeps it
     * (Slurm may have taken the job after all: its token is fenced). */
    if (sb->jobs[i].gate && kind != SPW_EXIT_NOT_STARTED)
        unlink(sb->jobs[i].gate);
    free(sb->jobs[i].gate);
    sb->jobs[i] = sb->jobs[--sb->njobs];
}

static int parse_id(const char *s, long *id)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || v <= 0)
        return -1;
    *id = v;
    return 0;
}

/* ---- create / destroy --------------------------------------------------- */

spw_slurm_t *spw_slurm_create(const spw_slurm_opts_t *o, spw_error_t *err)
{
    if (!o || !o->partition || !o->partition[0]) {
        spw_errorf(err, "a slurm backend needs a partition");
        return NULL;
    }
    if (o->cmd_timeout_s < 0 || o->sync_interval_s < 0 || isnan(o->cmd_timeout_s) ||
        isnan(o->sync_interval_s)) {
        spw_errorf(err, "slurm timeouts must be >= 0 seconds");
        return NULL;
    }
    if (o->slurm_conf && access(o->slurm_conf, R_OK) < 0) {
        spw_errorf(err, "cannot read slurm_conf %s: %s", o->slurm_conf, strerror(errno));
        return NULL;
    }
    spw_slurm_t *sb = spw_xcalloc(1, sizeof(*sb));
    sb->partition = spw_xstrdup(o->partition);
    sb->bin_dir = o->bin_dir && o->bin_dir[0] ? spw_xstrdup(o->bin_dir) : NULL;
    sb->cmd_timeout_s = o->cmd_timeout_s > 0 ? o->cmd_timeout_s : 30;
    sb->sync_interval_s = o->sync_interval_s > 0 ? o->sync_interval_s : 1;
    sb->last_sync_s = -INFINITY;
    pthread_mutex_init(&sb->wmu, NULL);
    pthread_cond_init(&sb->wcv, NULL);
    pthread_cond_init(&sb->ocv, NULL);
    size_t n = 0;
    while (environ && environ[n])
        n++;
    sb->envp = spw_xcalloc(n + 2, sizeof(char *));
    size_t k = 0;
    /* Slurm's commands run with what they need of the daemon's variables
     * and nothing else: sbatch passes its environment to the job
     * (--export=ALL), so the daemon's tokens and secrets must not be in it.
     * (--export=NONE would make Slurm 22.05 load the user's login
     * environment on the node, su - USER, for up to 8 s per job.) */
    static const char *const cmd_pass[] = {"PATH", "TZ", "LANG", "LANGUAGE", "LC_*", "SLURM_*",
                                           "SBATCH_*", "SQUEUE_*", "SCANCEL_*", "SINFO_*",
                                           "SCONTROL_*", NULL};
    for (size_t i = 0; i < n; i++)
        if ((!o->slurm_conf || strncmp(environ[i], "SLURM_CONF=", 11) != 0) &&
            spw_env_passes(cmd_pass, environ[i]))
            sb->envp[k++] = spw_xstrdup(environ[i]);
    if (o->slurm_conf) {
        size_t len = strlen(o->slurm_conf) + 12;
        sb->envp[k] = spw_xmalloc(len);
        snprintf(sb->envp[k++], len, "SLURM_CONF=%s", o->slurm_conf);
    }
    return sb;
}

void spw_slurm_destroy(spw_slurm_t *sb)
{
    if (!sb)
        return;
    if (sb->worker_on) {
        /* waits for a command in flight (cmd_timeout_s at most) */
        pthread_mutex_lock(&sb->wmu);
        sb->wstop = 1;
        pthread_cond_signal(&sb->wcv);
        pthread_mutex_unlock(&sb->wmu);
        pthread_join(sb->worker, NULL);
    }
    if (sb->nopth) {
        /* Ops in flight finish (cmd_timeout_s at most); queued ones are
         * dropped: a launch never submitted is fenced by the next daemon's
         * find(). */
        pthread_mutex_lock(&sb->wmu);
        sb->wstop = 1;
        pthread_cond_broadcast(&sb->ocv);
        pthread_mutex_unlock(&sb->wmu);
        for (int t = 0; t < sb->nopth; t++)
            pthread_join(sb->opth[t], NULL);
    }
    sop_t *lists[] = {sb->oq_head, sb->orun, sb->odone};
    for (size_t l = 0; l < 3; l++)
        for (sop_t *op = lists[l]; op;) {
            sop_t *nx = op->next;
            op_free(op);
            op = nx;
        }
    pthread_cond_destroy(&sb->ocv);
    for (int k = 0; k < NSLOTS; k++) {
        free(sb->slot[k].out);
        free(sb->slot[k].fv);
    }
    pthread_mutex_destroy(&sb->wmu);
    pthread_cond_destroy(&sb->wcv);
    free(sb->partition);
    free(sb->bin_dir);
    for (size_t i = 0; sb->envp[i]; i++)
        free(sb->envp[i]);
    free(sb->envp);
    for (size_t i = 0; i < sb->njobs; i++)
        free(sb->jobs[i].gate);
    free(sb->jobs);
    free(sb->ended);
    free(sb->chg);
    for (size_t i = 0; i < sb->nfenced; i++)
        free(sb->fenced[i]);
    free(sb->fenced);
    sq_free(sb->snap);
    sq_free(sb->before);
    for (size_t i = 0; i < sb->nfalloc; i++)
        free(sb->falloc[i].v);
    free(sb->falloc);
    for (size_t i = 0; i < sb->nnodes; i++)
        free(sb->nodes[i]);
    free(sb->nodes);
    free(sb);
}

void spw_slurm_set_nodes(spw_slurm_t *sb, const spw_backend_node_t *nodes, size_t n)
{
    for (size_t i = 0; i < sb->nnodes; i++)
        free(sb->nodes[i]);
    free(sb->nodes);
    sb->nodes = spw_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        sb->nodes[i] = spw_xstrdup(nodes[i].name);
    sb->nnodes = n;
}

int spw_slurm_node_index(const spw_slurm_t *sb, const char *name)
{
    for (size_t i = 0; i < sb->nnodes; i++)
        if (strcmp(sb->nodes[i], name) == 0)
            return (int)i;
    return -1;
}

/* The node a one-node launch is pinned to (SPILLWAY_PLACEMENT=POOL/INDEX
 * in its env), or NULL. */
static const char *pinned_node(const spw_slurm_t *sb, const spw_launch_t *req)
{
    if (req->nodes > 1)
        return NULL;
    for (size_t i = 0; req->env && req->env[i]; i++) {
        if (strncmp(req->env[i], "SPILLWAY_PLACEMENT=", 19) != 0)
            continue;
        const char *slash = strrchr(req->env[i], '/');
        char *end;
        if (!slash)
            return NULL;
        unsigned long k = strtoul(slash + 1, &end, 10);
        return *end == '\0' && end != slash + 1 && k < sb->nnodes ? sb->nodes[k] : NULL;
    }
    return NULL;
}

uint64_t spw_slurm_syncs(const spw_slurm_t *sb)
{
    return sb->nsyncs;
}

int spw_slurm_handle(spw_slurm_t *sb, const char *token, spw_handle_t *out)
{
    size_t i;
    apply_ops(sb);
    sjob_t *j = job_by_token(sb, token, &i);
    if (!j)
        return -1;
    *out = j->h;
    return 0;
}

size_t spw_slurm_count(const spw_slurm_t *sb)
{
    return sb->njobs;
}

/* ---- launch -------------------------------------------------------------- */

static int valid_id(const char *s)
{
    if (!s || !s[0] || s[0] == '.' || strlen(s) >= SPW_JOB_ID_MAX)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

static int valid_env_name(const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return 0;
    for (const char *p = kv; p < eq; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
              (p > kv && *p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

/* "export NAME='VALUE'" for entry "NAME=VALUE" (a valid name). */
static void export_kv(spw_strbuf_t *b, const char *entry)
{
    const char *eq = strchr(entry, '=');
    spw_strbuf_printf(b, "export %.*s=", (int)(eq - entry), entry);
    spw_strbuf_quote(b, eq + 1);
    spw_strbuf_add(b, "\n");
}

/* The cancel gate of a launch: LOG_DIR/TOKEN.cancelled (owned), one per
 * attempt (a failed-over job's next attempt must run).  cancel() makes it
 * before it returns, so before the cancel is acknowledged; the batch
 * script checks it first.  A job Slurm starts after its cancel was
 * acknowledged (its sbatch was still in flight, or Slurm had not started
 * it yet when the scancel was queued) then runs nothing of the user's. */
static char *gate_path(const spw_launch_t *req)
{
    size_t len = strlen(req->log_dir) + strlen(req->token) + 16;
    char *p = spw_xmalloc(len);
    snprintf(p, len, "%s/%s.cancelled", req->log_dir, req->token);
    return p;
}

/* The batch script of req (see slurm.h). */
static char *batch_script(const spw_launch_t *req)
{
    spw_strbuf_t b = {0};
    spw_strbuf_add(&b, "#!/bin/sh\n# spillway job ");
    spw_strbuf_add(&b, req->job_id);
    spw_strbuf_add(&b, "\n");
    /* The cancel gate (gate_path): a job cancelled before it started ends
     * here, cancelling itself in Slurm too when scancel is at hand. */
    char *gate = gate_path(req);
    spw_strbuf_add(&b, "if [ -e ");
    spw_strbuf_quote(&b, gate);
    spw_strbuf_add(&b, " ]; then\n    command -v scancel >/dev/null 2>&1 && "
                       "scancel \"$SLURM_JOB_ID\" 2>/dev/null\n    exit 0\nfi\n");
    free(gate);
    /* sbatch runs in a scrubbed environment (PATH, TZ, the locale, Slurm's
     * own settings): the job sees that, Slurm's SLURM_* and what is
     * written here, quoted: the daemon's variables env_pass lets through,
     * then the job's own (which win), then spillway's. */
    for (size_t i = 0; environ && environ[i]; i++)
        if (valid_env_name(environ[i]) && spw_env_passes(req->env_pass, environ[i]))
            export_kv(&b, environ[i]);
    for (size_t i = 0; req->env && req->env[i]; i++)
        export_kv(&b, req->env[i]);
    spw_strbuf_add(&b, "export SPILLWAY_JOB_ID=");
    spw_strbuf_quote(&b, req->job_id);
    spw_strbuf_add(&b, "\nexport SPILLWAY_LAUNCH_TOKEN=");
    spw_strbuf_quote(&b, req->token);
    spw_strbuf_add(&b, "\n");
    /* The command, as words for exec. */
    spw_strbuf_t cmd = {0};
    if (req->script) {
        spw_strbuf_add(&cmd, "/bin/sh -c ");
        spw_strbuf_quote(&cmd, req->script);
    } else {
        for (size_t i = 0; req->argv[i]; i++) {
            if (i)
                spw_strbuf_add(&cmd, " ");
            spw_strbuf_quote(&cmd, req->argv[i]);
        }
    }
    if (req->nodes > 1) {
        spw_strbuf_add(&b, "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
                    "export MASTER_ADDR\n"
                    "export MASTER_PORT=$((29500 + SLURM_JOB_ID % 1000))\n"
                    "exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 /bin/sh -c "
                    "'export RANK=$SLURM_PROCID NODE_RANK=$SLURM_NODEID LOCAL_RANK=0 "
                    "WORLD_SIZE=$SLURM_NTASKS; exec \"$@\"' spillway-rank ");
        spw_strbuf_add(&b, cmd.s);
        spw_strbuf_add(&b, "\n");
    } else {
        spw_strbuf_add(&b, "export RANK=0 NODE_RANK=0 LOCAL_RANK=0 WORLD_SIZE=1\nexec ");
        spw_strbuf_add(&b, cmd.s);
        spw_strbuf_add(&b, "\n");
    }
    free(cmd.s);
    return b.s;
}

/* Makes req's log files JOBID.out and .err in req->log_dir for the job's
 * user, who opens them on the node (slurmstepd writes them as the job's
 * user): made here by root if missing (never through a link), owned by the
 * user, mode 0600; the directory, and the daemon's logs directory above
 * it, let the user through (0711) but not list or create.  0, or -1 with
 * err. */
static int user_logs(const spw_launch_t *req, spw_error_t *err)
{
    char up[4096];
    snprintf(up, sizeof(up), "%s", req->log_dir);
    char *slash = strrchr(up, '/');
    struct stat st;
    if (slash && slash != up)
        *slash = '\0';
    if (slash && slash != up && stat(up, &st) == 0 && (st.st_mode & 0011) != 0011)
        chmod(up, (st.st_mode & 07777) | 0011);
    if (chmod(req->log_dir, 0711) < 0)
        return spw_errorf(err, "cannot let user %ld through the log directory %s: %s",
                          (long)req->uid, req->log_dir, strerror(errno));
    for (int k = 0; k < 2; k++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s.%s", req->log_dir, req->job_id, k ? "err" : "out");
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                      O_NOCTTY, 0600);
        if (fd < 0 || fchown(fd, req->uid, req->gid) < 0 || fchmod(fd, 0600) < 0) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            return spw_errorf(err, "cannot hand the log file %s to user %ld: %s", path,
                              (long)req->uid, strerror(e));
        }
        close(fd);
    }
    return 0;
}

static int sl_launch(void *be, const spw_launch_t *req, spw_handle_t *out, spw_error_t *err)
{
    spw_slurm_t *sb = be;
    if (!valid_id(req->job_id))
        return spw_errorf(err, "invalid job id for a Slurm job (letters, digits, . _ - only)");
    if (!req->token || !req->token[0] || strlen(req->token) >= SPW_TOKEN_MAX)
        return spw_errorf(err, "a Slurm launch needs a launch token");
    for (const char *p = req->token; *p; p++)
        if (*p == '\n' || *p == '"' || *p == '\'' || *p == '/')
            return spw_errorf(err, "invalid launch token for a Slurm comment");
    if ((!req->argv || !req->argv[0]) && !req->script)
        return spw_errorf(err, "nothing to run (no argv and no script)");
    if (req->image)
        return spw_errorf(err, "the Slurm backend does not run container images yet (image %s); "
                          "submit the job to a local or ssh pool", req->image);
    for (size_t i = 0; req->env && req->env[i]; i++)
        if (!valid_env_name(req->env[i]))
            return spw_errorf(err, "invalid environment entry '%.60s' (want NAME=VALUE)",
                              req->env[i]);
    if (!req->log_dir)
        return spw_errorf(err, "a Slurm launch needs a log directory");
    if (is_fenced(sb, req->token))
        return spw_errorf(err, "launch token %s was fenced after a lost launch; use a new attempt",
                          req->token);

    char name[SPW_JOB_ID_MAX + 20], comment[SPW_TOKEN_MAX + 16], gres[48], nodes[32],
        outp[4200], errp[4200], timev[48], part[300], wd[4200];
    snprintf(name, sizeof(name), "--job-name=spw-%s", req->job_id);
    snprintf(comment, sizeof(comment), "--comment=%s", req->token);
    snprintf(part, sizeof(part), "--partition=%s", sb->partition);
    snprintf(gres, sizeof(gres), "--gres=gpu:%zu", req->ngpus);
    snprintf(nodes, sizeof(nodes), "--nodes=%u", req->nodes > 1 ? req->nodes : 1);
    snprintf(outp, sizeof(outp), "--output=%s/%s.out", req->log_dir, req->job_id);
    snprintf(errp, sizeof(errp), "--error=%s/%s.err", req->log_dir, req->job_id);
    const char *argv[24];
    size_t na = 0;
    argv[na++] = "sbatch";
    argv[na++] = "--parsable";
    argv[na++] = part;
    argv[na++] = name;
    argv[na++] = comment;
    argv[na++] = nodes;
    argv[na++] = "--ntasks-per-node=1";
    if (req->ngpus > 0)
        argv[na++] = gres;
    argv[na++] = "--no-requeue";
    argv[na++] = "--open-mode=append";
    argv[na++] = "--export=ALL";  /* sbatch's scrubbed environment (create) */
    argv[na++] = outp;
    argv[na++] = errp;
    if (req->max_runtime_s > 0) {
        double s = ceil(req->max_runtime_s);
        if (s > 1e9)
            s = 1e9;
        unsigned long secs = (unsigned long)s;
        snprintf(timev, sizeof(timev), "--time=%lu:%02lu", secs / 60, secs % 60);
        argv[na++] = timev;
    }
    char pin[4200];
    const char *node = pinned_node(sb, req);
    /* A cloud job is pinned to the cloud nodes its instances are
     * (SPILLWAY_SLURM_NODES=c1,c2, the daemon's slurmcloud.c). */
    for (size_t i = 0; req->env && req->env[i]; i++)
        if (strncmp(req->env[i], "SPILLWAY_SLURM_NODES=", 21) == 0 && req->env[i][21])
            node = req->env[i] + 21;
    if (node) {
        snprintf(pin, sizeof(pin), "--nodelist=%s", node);
        argv[na++] = pin;
    }
    if (req->workdir) {
        snprintf(wd, sizeof(wd), "--chdir=%s", req->workdir);
        argv[na++] = wd;
    }
    char uid[40], gid[40];
    if (req->set_user) {
        /* Root submits as the job's user (sbatch --uid/--gid, Slurm 22.05):
         * the batch script runs as that user, never as root. */
        snprintf(uid, sizeof(uid), "--uid=%ld", (long)req->uid);
        snprintf(gid, sizeof(gid), "--gid=%ld", (long)req->gid);
        argv[na++] = uid;
        argv[na++] = gid;
        if (user_logs(req, err) < 0)
            return -1;
    }
    argv[na] = NULL;

    /* The sbatch runs on an op thread; the handle carries the token now and
     * the Slurm job id once sbatch answered (tick() applies it). */
    sop_t *op = spw_xcalloc(1, sizeof(*op));
    op->kind = OP_SUBMIT;
    snprintf(op->token, sizeof(op->token), "%s", req->token);
    op->argv = spw_xcalloc(na + 1, sizeof(char *));
    for (size_t i = 0; i < na; i++)
        op->argv[i] = spw_xstrdup(argv[i]);
    op->script = batch_script(req);
    if (op_queue(sb, op) < 0) {
        op_free(op);
        return spw_errorf(err, "cannot start a thread to run sbatch");
    }
    memset(out, 0, sizeof(*out));
    snprintf(out->job_id, sizeof(out->job_id), "%s", req->job_id);
    snprintf(out->token, sizeof(out->token), "%s", req->token);
    out->started_s = req->now_s;
    out->max_runtime_s = req->max_runtime_s;
    sjob_t *j = track(sb, out, 0);
    j->pending = 1;
    j->gate = gate_path(req);
    return 0;
}

/* ---- the op threads: sbatch and scancel --------------------------------- */

static void op_free(sop_t *op)
{
    if (!op)
        return;
    for (size_t i = 0; op->argv && op->argv[i]; i++)
        free(op->argv[i]);
    free(op->argv);
    free(op->script);
    free(op);
}

static void *op_main(void *arg);

/* Queues op (takes it on success), starting an op thread while fewer than
 * OP_THREADS run and more ops wait than threads idle.  0, or -1 when no
 * thread runs at all. */
static int op_queue(spw_slurm_t *sb, sop_t *op)
{
    pthread_mutex_lock(&sb->wmu);
    if (sb->nopth < OP_THREADS) {
        size_t busy = 0;
        for (sop_t *r = sb->orun; r; r = r->next)
            busy++;
        size_t queued = 1;
        for (sop_t *q = sb->oq_head; q; q = q->next)
            queued++;
        if (sb->nopth == 0 || busy + queued > (size_t)sb->nopth) {
            if (pthread_create(&sb->opth[sb->nopth], NULL, op_main, sb) == 0)
                sb->nopth++;
        }
    }
    if (!sb->nopth) {
        pthread_mutex_unlock(&sb->wmu);
        return -1;
    }
    op->next = NULL;
    if (sb->oq_tail)
        sb->oq_tail->next = op;
    else
        sb->oq_head = op;
    sb->oq_tail = op;
    pthread_cond_signal(&sb->ocv);
    pthread_mutex_unlock(&sb->wmu);
    return 0;
}

/* Queues an scancel of Slurm job id. */
static void op_scancel(spw_slurm_t *sb, long id, const char *token)
{
    sop_t *op = spw_xcalloc(1, sizeof(*op));
    op->kind = OP_SCANCEL;
    op->id = id;
    snprintf(op->token, sizeof(op->token), "%s", token ? token : "");
    if (op_queue(sb, op) < 0)
        op_free(op);
}

static int run_scancel(spw_slurm_t *sb, long id, spw_error_t *err)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%ld", id);
    const char *argv[] = {"scancel", ids, NULL};
    return spw_slurm_run(sb, argv, NULL, NULL, err) == 0 ? 0 : -1;
}

/* One submit (an op thread's, wmu not held): adopts a job of an earlier
 * daemon process that carries the token, else runs sbatch; then the
 * scancel of a cancel() that came meanwhile. */
static void op_submit(spw_slurm_t *sb, sop_t *op)
{
    spw_error_t e = {{0}};
    /* Never submit twice: a job of an earlier daemon process (killed after
     * its sbatch, before it recorded the id) may carry this token already;
     * then launching is adopting it.  Slurm's jobs are listed once, before
     * the first submit; the other op threads wait for that listing. */
    pthread_mutex_lock(&sb->wmu);
    while (!sb->before && sb->before_busy && !sb->wstop)
        pthread_cond_wait(&sb->ocv, &sb->wmu);
    if (!sb->before) {
        sb->before_busy = 1;
        pthread_mutex_unlock(&sb->wmu);
        char *o = NULL;
        int rc = spw_slurm_run(sb, sq_argv, NULL, &o, &e);
        sq_list_t *l = rc == 0 ? sq_parse(o) : NULL;
        if (rc != 0)
            free(o);
        pthread_mutex_lock(&sb->wmu);
        sb->before_busy = 0;
        sb->before = l;
        pthread_cond_broadcast(&sb->ocv);
        if (!l) {
            pthread_mutex_unlock(&sb->wmu);
            op->rc = -1;
            snprintf(op->err, sizeof(op->err), "cannot list Slurm's jobs before the first launch: %.100s",
                     e.text);
            return;
        }
    }
    for (size_t i = 0; i < sb->before->n; i++) {
        sq_job_t *o = &sb->before->v[i];
        if (strcmp(o->comment, op->token) == 0) {
            op->id = o->id;
            op->adopted = 1;
            o->comment = ""; /* adopted once */
            break;
        }
    }
    pthread_mutex_unlock(&sb->wmu);
    if (!op->adopted) {
        char *o = NULL;
        int rc = spw_slurm_run(sb, (const char *const *)op->argv, op->script, &o, &e);
        long id = 0;
        if (rc == 0 && parse_id(o, &id) == 0) {
            op->id = id;
        } else {
            op->rc = -1;
            if (rc == 0)
                snprintf(op->err, sizeof(op->err), "sbatch printed no job id ('%.60s')", o);
            else
                snprintf(op->err, sizeof(op->err), "sbatch: %.150s", e.text);
        }
        free(o);
    }
    if (op->rc == 0) {
        pthread_mutex_lock(&sb->wmu);
        int cancel = op->cancel;
        pthread_mutex_unlock(&sb->wmu);
        if (cancel && run_scancel(sb, op->id, &e) == 0)
            op->cancelled = 1;
    }
}

static void *op_main(void *arg)
{
    spw_slurm_t *sb = arg;
    pthread_mutex_lock(&sb->wmu);
    while (!sb->wstop) {
        sop_t *op = sb->oq_head;
        if (!op) {
            pthread_cond_wait(&sb->ocv, &sb->wmu);
            continue;
        }
        sb->oq_head = op->next;
        if (!sb->oq_head)
            sb->oq_tail = NULL;
        op->next = sb->orun;
        sb->orun = op;
        pthread_mutex_unlock(&sb->wmu);
        if (op->kind == OP_SUBMIT) {
            op_submit(sb, op);
        } else if (op->kind == OP_EXITCODE) {
            op->code = 1;
            op->rc = exit_code_of(sb, op->id, &op->code, &op->sig);
        } else {
            spw_error_t e = {{0}};
            if (run_scancel(sb, op->id, &e) < 0) {
                op->rc = -1;
                snprintf(op->err, sizeof(op->err), "scancel: %.150s", e.text);
            }
        }
        pthread_mutex_lock(&sb->wmu);
        for (sop_t **p = &sb->orun; *p; p = &(*p)->next)
            if (*p == op) {
                *p = op->next;
                break;
            }
        op->next = sb->odone;
        sb->odone = op;
    }
    pthread_mutex_unlock(&sb->wmu);
    return NULL;
}

static sjob_t *job_by_token(spw_slurm_t *sb, const char *token, size_t *idx)
{
    for (size_t i = 0; i < sb->njobs; i++)
        if (strcmp(sb->jobs[i].h.token, token) == 0) {
            *idx = i;
            return &sb->jobs[i];
        }
    return NULL;
}

/* Applies the ops the op threads finished (the caller's thread): a
 * submitted job gets its Slurm job id (or, when sbatch failed, is reported
 * by poll() as not started, its token fenced in case Slurm took it after
 * all); a cancel that came before sbatch answered and was not sent with it
 * is sent now. */
static void apply_ops(spw_slurm_t *sb)
{
    pthread_mutex_lock(&sb->wmu);
    sop_t *done = sb->odone;
    sb->odone = NULL;
    pthread_mutex_unlock(&sb->wmu);
    /* oldest first */
    sop_t *rev = NULL;
    while (done) {
        sop_t *nx = done->next;
        done->next = rev;
        rev = done;
        done = nx;
    }
    while (rev) {
        sop_t *op = rev;
        rev = op->next;
        size_t i = 0;
        sjob_t *j = op->token[0] ? job_by_token(sb, op->token, &i) : NULL;
        if (op->kind == OP_SUBMIT) {
            if (op->rc < 0) {
                /* sbatch may have failed after slurmctld took the job (a
                 * timeout): such a job is cancelled as soon as a sync sees
                 * it. */
                fence(sb, op->token);
                if (j) {
                    end_job(sb, i, SPW_EXIT_NOT_STARTED, -1,
                            j->cancel_req ? SPW_CAUSE_CANCELLED : SPW_CAUSE_NONE);
                    snprintf(sb->ended[sb->nended - 1].reason,
                             sizeof(sb->ended[0].reason), "%s", op->err);
                }
            } else if (!j) {
                /* no longer tracked (cannot happen: a pending job is only
                 * ended here); never leave it running untracked */
                op_scancel(sb, op->id, NULL);
            } else {
                j->id = op->id;
                j->pending = 0;
                snprintf(j->h.ext, sizeof(j->h.ext), "%ld", op->id);
                if (sb->nchg == sb->capchg) {
                    sb->capchg = sb->capchg ? sb->capchg * 2 : 16;
                    sb->chg = spw_xrealloc(sb->chg, sb->capchg * sizeof(*sb->chg));
                }
                sb->chg[sb->nchg++] = j->h;
                if (op->cancelled)
                    j->cancel_sent = 1;
                else if (j->cancel_req && !j->cancel_busy) {
                    j->cancel_busy = 1;
                    op_scancel(sb, j->id, j->h.token);
                }
            }
        } else if (op->kind == OP_EXITCODE) {
            if (j && j->id == op->id) {
                /* FAILED: the batch script's exit code, or its signal
                 * (exit code 1 when scontrol could not say) */
                int signaled = op->rc == 0 && op->sig > 0;
                end_job(sb, i, signaled ? SPW_EXIT_SIGNALED : SPW_EXIT_EXITED,
                        signaled ? op->sig : op->rc == 0 ? op->code : 1,
                        j->cancel_req ? SPW_CAUSE_CANCELLED : SPW_CAUSE_NONE);
            }
        } else if (j && j->id == op->id) {
            j->cancel_busy = 0;
            if (op->rc == 0)
                j->cancel_sent = 1; /* else the next sync sends it again */
        }
        op_free(op);
    }
}

/* ---- the worker thread ------------------------------------------------------ */

static int foreign_run(spw_slurm_t *sb, const char *own_prefix, spw_backend_foreign_t **out,
                       size_t *n, spw_error_t *err);

static void *worker_main(void *arg)
{
    spw_slurm_t *sb = arg;
    pthread_mutex_lock(&sb->wmu);
    while (!sb->wstop) {
        int k = 0;
        while (k < NSLOTS && !sb->slot[k].want)
            k++;
        if (k == NSLOTS) {
            pthread_cond_wait(&sb->wcv, &sb->wmu);
            continue;
        }
        struct aslot *a = &sb->slot[k];
        a->want = 0;
        a->busy = 1;
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "%s", sb->own_prefix);
        pthread_mutex_unlock(&sb->wmu);
        spw_error_t err = {{0}};
        char *o = NULL;
        spw_backend_foreign_t *fv = NULL;
        size_t fn = 0;
        int rc;
        if (k == SLOT_JOBS) {
            rc = spw_slurm_run(sb, sq_argv, NULL, &o, &err) == 0 ? 0 : -1;
        } else if (k == SLOT_NODES) {
            const char *argv[] = {"sinfo", "--json", NULL};
            rc = spw_slurm_run(sb, argv, NULL, &o, &err) == 0 ? 0 : -1;
        } else {
            rc = foreign_run(sb, prefix, &fv, &fn, &err);
        }
        pthread_mutex_lock(&sb->wmu);
        free(a->out);
        free(a->fv);
        a->out = o;
        a->fv = fv;
        a->fn = fn;
        a->rc = rc;
        snprintf(a->err, sizeof(a->err), "%s", err.text);
        a->busy = 0;
        a->done = 1;
    }
    pthread_mutex_unlock(&sb->wmu);
    return NULL;
}

/* Asks the worker for slot k's read unless one is asked, running or
 * waiting to be taken: 1 if asked now, 0 otherwise. */
static int ask(spw_slurm_t *sb, int k)
{
    struct aslot *a = &sb->slot[k];
    int asked = 0;
    pthread_mutex_lock(&sb->wmu);
    if (!a->want && !a->busy && !a->done) {
        if (!sb->worker_on && pthread_create(&sb->worker, NULL, worker_main, sb) == 0)
            sb->worker_on = 1;
        if (sb->worker_on) {
            a->want = 1;
            asked = 1;
            pthread_cond_signal(&sb->wcv);
        }
    }
    pthread_mutex_unlock(&sb->wmu);
    return asked;
}

/* ---- sync with Slurm --------------------------------------------------- */

static void sq_free(sq_list_t *l)
{
    if (!l)
        return;
    free(l->v);
    free(l->buf);
    free(l);
}

static int sq_cmp(const void *a, const void *b)
{
    long x = ((const sq_job_t *)a)->id, y = ((const sq_job_t *)b)->id;
    return (x > y) - (x < y);
}

/* Refreshes sb->snap: one `squeue` listing every job Slurm still knows
 * (text, not --json: squeue --json of 22.05 ignores filters and costs
 * about ten times more to produce and parse), indexed by id.  0, or -1
 * with err. */

static void snap_parse(spw_slurm_t *sb, char *o);

static int snapshot(spw_slurm_t *sb, spw_error_t *err)
{
    char *o = NULL;
    if (sb->snap_failed)
        return spw_errorf(err, "%s", sb->snap_err);
    spw_error_t e2;
    int rc = spw_slurm_run(sb, sq_argv, NULL, &o, &e2);
    if (rc != 0) {
        free(o);
        sb->snap_failed = 1;
        snprintf(sb->snap_err, sizeof(sb->snap_err), "%s", e2.text);
        return spw_errorf(err, "%s", e2.text);
    }
    snap_parse(sb, o);
    return 0;
}

/* Makes sb->snap of a listing's output (takes it). */
static void snap_parse(spw_slurm_t *sb, char *o)
{
    sq_list_t *l = sq_parse(o);
    sq_free(sb->snap);
    sb->snap = l;
}

/* A listing of a listing's output (takes it). */
static sq_list_t *sq_parse(char *o)
{
    sq_list_t *l = spw_xcalloc(1, sizeof(*l));
    l->buf = o;
    size_t cap = 64;
    l->v = spw_xmalloc(cap * sizeof(sq_job_t));
    for (char *line = o; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *f[4] = {0};
        char *p = line;
        for (int k = 0; k < 4 && p; k++) {
            f[k] = p;
            p = k < 3 ? strchr(p, '\x1f') : NULL;
            if (p)
                *p++ = '\0';
        }
        char *end;
        long id = f[0] ? strtol(f[0], &end, 10) : 0;
        if (f[3] && id > 0 && *end == '\0') {
            if (l->n == cap) {
                cap *= 2;
                l->v = spw_xrealloc(l->v, cap * sizeof(sq_job_t));
            }
            l->v[l->n++] = (sq_job_t){.id = id, .state = f[1], .name = f[2],
                                      .comment = strcmp(f[3], "(null)") == 0 ? "" : f[3]};
        }
        line = nl ? nl + 1 : NULL;
    }
    qsort(l->v, l->n, sizeof(sq_job_t), sq_cmp);
    return l;
}

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

/* A FAILED job's "ExitCode=CODE:SIGNAL" from scontrol: 0 with both, or -1. */
static int exit_code_of(spw_slurm_t *sb, long id, int *code, int *sig)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%ld", id);
    const char *argv[] = {"scontrol", "--oneliner", "show", "job", ids, NULL};
    char *o = NULL;
    spw_error_t e;
    int rc = spw_slurm_run(sb, argv, NULL, &o, &e);
    const char *p = rc == 0 && o ? strstr(o, " ExitCode=") : NULL;
    int ok = p && sscanf(p + 10, "%d:%d", code, sig) == 2;
    free(o);
    return ok ? 0 : -1;
}

/* Whether a job in this Slurm state has ended. */
static int state_ended(const char *st)
{
    static const char *const live[] = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING",
                                       "SUSPENDED", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                                       "RESIZING", "SIGNALING", "STAGE_OUT", "SPECIAL_EXIT",
                                       "RESV_DEL_HOLD", "REVOKED", "STOPPED"};
    for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
        if (strcmp(st, live[i]) == 0)
            return 0;
    return 1;
}

/* How a job in an ended state ended. */
static void exit_of(const sjob_t *j, const sq_job_t *o, spw_exit_kind_t *kind,
                    int *status, spw_exit_cause_t *cause)
{
    const char *st = o->state;
    *cause = SPW_CAUSE_NONE;
    if (strcmp(st, "COMPLETED") == 0) {
        *kind = SPW_EXIT_EXITED;
        *status = 0;
        if (j->cancel_req)
            *cause = SPW_CAUSE_CANCELLED;
    } else if (strcmp(st, "CANCELLED") == 0) {
        *kind = SPW_EXIT_SIGNALED;
        *status = SIGTERM;
        *cause = j->cancel_req ? SPW_CAUSE_CANCELLED : SPW_CAUSE_NONE;
    } else if (strcmp(st, "TIMEOUT") == 0 || strcmp(st, "DEADLINE") == 0) {
        *kind = SPW_EXIT_SIGNALED;
        *status = SIGKILL;
        *cause = SPW_CAUSE_MAX_RUNTIME;
    } else if (strcmp(st, "OUT_OF_MEMORY") == 0) {
        *kind = SPW_EXIT_SIGNALED;
        *status = SIGKILL;
    } else { /* NODE_FAIL, BOOT_FAIL, PREEMPTED, anything else */
        *kind = SPW_EXIT_LOST;
        *status = -1;
        if (j->cancel_req)
            *cause = SPW_CAUSE_CANCELLED;
    }
}

static const sq_job_t *snap_find_id(const spw_slurm_t *sb, long id)
{
    sq_job_t key = {.id = id};
    return bsearch(&key, sb->snap->v, sb->snap->n, sizeof(sq_job_t), sq_cmp);
}

/* One sync: reports the jobs that ended, cancels fenced tokens' jobs. */
static void sync_jobs(spw_slurm_t *sb)
{
    /* Jobs of fenced tokens that appeared after all (scancel on the op
     * threads, again at every sync while they are listed alive). */
    for (size_t i = 0; sb->nfenced && i < sb->snap->n; i++) {
        const sq_job_t *o = &sb->snap->v[i];
        if (is_fenced(sb, o->comment) && !state_ended(o->state))
            op_scancel(sb, o->id, NULL);
    }
    for (size_t i = 0; i < sb->njobs;) {
        sjob_t *j = &sb->jobs[i];
        if (j->pending) {   /* its sbatch has not answered: nothing to match */
            i++;
            continue;
        }
        if (j->cancel_req && !j->cancel_sent && !j->cancel_busy) {
            j->cancel_busy = 1;
            op_scancel(sb, j->id, j->h.token);
        }
        const sq_job_t *o = snap_find_id(sb, j->id);
        if (!o) {
            /* Purged after MinJobAge, or lost by slurmctld: twice in a row
             * to be sure it is not a listing race. */
            if (++j->missing >= 2) {
                end_job(sb, i, SPW_EXIT_LOST, -1,
                        j->cancel_req ? SPW_CAUSE_CANCELLED : SPW_CAUSE_NONE);
                continue;
            }
            i++;
            continue;
        }
        j->missing = 0;
        if (strcmp(o->state, "FAILED") == 0) {
            /* its exit code comes from scontrol, on the op threads; the
             * job ends when it is there (apply_ops) */
            if (!j->code_busy) {
                j->code_busy = 1;
                sop_t *op = spw_xcalloc(1, sizeof(*op));
                op->kind = OP_EXITCODE;
                op->id = j->id;
                snprintf(op->token, sizeof(op->token), "%s", j->h.token);
                if (op_queue(sb, op) < 0) {
                    op_free(op);
                    end_job(sb, i, SPW_EXIT_EXITED, 1,
                            j->cancel_req ? SPW_CAUSE_CANCELLED : SPW_CAUSE_NONE);
                    continue;
                }
            }
            i++;
            continue;
        }
        if (state_ended(o->state)) {
            spw_exit_kind_t kind;
            int status;
            spw_exit_cause_t cause;
            exit_of(j, o, &kind, &status, &cause);
            end_job(sb, i, kind, status, cause);
            continue;
        }
        i++;
    }
}

static void sl_tick(void *be, double now_s)
{
    spw_slurm_t *sb = be;
    apply_ops(sb);
    /* A listing the worker finished: the new snapshot (kept for adopt()
     * and find() until the next one), then the sync. */
    struct aslot *a = &sb->slot[SLOT_JOBS];
    pthread_mutex_lock(&sb->wmu);
    int done = a->done, rc = a->rc;
    char *o = a->out;
    char e[256];
    snprintf(e, sizeof(e), "%s", a->err);
    a->out = NULL;
    a->done = 0;
    pthread_mutex_unlock(&sb->wmu);
    if (done && rc == 0) {
        sb->snap_failed = 0;
        snap_parse(sb, o);
        sync_jobs(sb);
        sb->nsyncs++;
    } else if (done) {
        free(o);
        sb->snap_failed = 1;   /* adopt() and find(): "cannot tell" at once */
        snprintf(sb->snap_err, sizeof(sb->snap_err), "%s", e);
    }
    if (!sb->njobs && !sb->nfenced && !sb->snap_failed)
        return;
    if (now_s - sb->last_sync_s < sb->sync_interval_s)
        return;
    if (ask(sb, SLOT_JOBS))
        sb->last_sync_s = now_s;
}

static int sl_poll(void *be, spw_exit_t *exits, size_t max)
{
    spw_slurm_t *sb = be;
    return spw_queue_take(sb->ended, &sb->nended, sizeof(*exits), exits, max);
}

static int sl_signal(void *be, const spw_handle_t *h, int signum, spw_error_t *err)
{
    spw_slurm_t *sb = be;
    sjob_t *j = find_job(sb, h);
    if (!j)
        return spw_errorf(err, "job %s (Slurm job %s) is not tracked", h->job_id, h->ext);
    if (j->pending)
        return spw_errorf(err, "job %s is not submitted to Slurm yet", h->job_id);
    char ids[32], sg[32];
    snprintf(ids, sizeof(ids), "%ld", j->id);
    snprintf(sg, sizeof(sg), "--signal=%d", signum);
    const char *argv[] = {"scancel", sg, "--full", ids, NULL};
    return spw_slurm_run(sb, argv, NULL, NULL, err) == 0 ? 0 : -1;
}

static int sl_cancel(void *be, const spw_handle_t *h, double now_s, spw_error_t *err)
{
    (void)now_s;
    spw_slurm_t *sb = be;
    sjob_t *j = find_job(sb, h);
    if (!j)
        return spw_errorf(err, "job %s (Slurm job %s) is not tracked", h->job_id, h->ext);
    if (j->cancel_req)
        return 0;
    j->cancel_req = 1;
    if (j->gate) {
        /* The gate first, before this cancel is acknowledged; the scancel
         * below stops the job if it started before. */
        int fd = open(j->gate, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd >= 0)
            close(fd);
    }
    if (j->pending) {
        /* sbatch has not answered: its op thread scancels right after it
         * (or tick() does, once the op is done). */
        pthread_mutex_lock(&sb->wmu);
        sop_t *lists[] = {sb->oq_head, sb->orun, sb->odone};
        for (size_t l = 0; l < 3; l++)
            for (sop_t *op = lists[l]; op; op = op->next)
                if (op->kind == OP_SUBMIT && strcmp(op->token, j->h.token) == 0)
                    op->cancel = 1;
        pthread_mutex_unlock(&sb->wmu);
        return 0;
    }
    /* scancel on an op thread; a failed one is sent again by the next
     * sync */
    j->cancel_busy = 1;
    op_scancel(sb, j->id, j->h.token);
    return 0;
}

static int sl_adopt(void *be, const spw_handle_t *h, spw_error_t *err)
{
    spw_slurm_t *sb = be;
    if (find_job(sb, h))
        return 0;
    long id;
    if (parse_id(h->ext, &id) < 0) {
        errno = ESRCH;
        return spw_errorf(err, "job %s has no Slurm job id", h->job_id);
    }
    if (!sb->snap && snapshot(sb, err) < 0) {
        errno = EAGAIN;
        return -1;
    }
    const sq_job_t *o = snap_find_id(sb, id);
    if (!o || (h->token[0] && strcmp(o->comment, h->token) != 0)) {
        errno = ESRCH;
        return spw_errorf(err, "Slurm job %ld of job %s is gone%s", id, h->job_id,
                          o ? " (its id now names another job)" : "");
    }
    track(sb, h, id);
    return 0;
}

static int sl_find(void *be, const char *token, spw_handle_t *out, spw_error_t *err)
{
    spw_slurm_t *sb = be;
    for (size_t i = 0; i < sb->njobs; i++)
        if (strcmp(sb->jobs[i].h.token, token) == 0) {
            *out = sb->jobs[i].h;
            return 1;
        }
    if (!sb->snap && snapshot(sb, err) < 0)
        return -1;
    for (size_t i = 0; i < sb->snap->n; i++) {
        const sq_job_t *o = &sb->snap->v[i];
        if (strcmp(o->comment, token) != 0)
            continue;
        memset(out, 0, sizeof(*out));
        snprintf(out->job_id, sizeof(out->job_id), "%s",
                 strncmp(o->name, "spw-", 4) == 0 ? o->name + 4 : o->name);
        snprintf(out->token, sizeof(out->token), "%s", token);
        snprintf(out->ext, sizeof(out->ext), "%ld", o->id);
        track(sb, out, o->id);
        return 1;
    }
    fence(sb, token);
    return 0;
}

static int sl_changed(void *be, spw_handle_t *out, size_t max)
{
    spw_slurm_t *sb = be;
    return spw_queue_take(sb->chg, &sb->nchg, sizeof(*out), out, max);
}

static void sl_destroy(void *be)
{
    spw_slurm_destroy(be);
}

/* The node inventory (version 4): the functions of slurm.h. */
static int sl_nodes(void *be, spw_backend_node_t **out, size_t *n, spw_error_t *err)
{
    return spw_slurm_nodes(be, out, n, err);
}

static int sl_nodes_async(void *be, spw_backend_node_t **out, size_t *n, spw_error_t *err)
{
    return spw_slurm_nodes_async(be, out, n, err);
}

static void sl_set_nodes(void *be, const spw_backend_node_t *nodes, size_t n)
{
    spw_slurm_set_nodes(be, nodes, n);
}

static int sl_node_index(void *be, const char *name)
{
    return spw_slurm_node_index(be, name);
}

static int sl_foreign_async(void *be, const char *own_prefix, spw_backend_foreign_t **out,
                            size_t *n, spw_error_t *err)
{
    return spw_slurm_foreign_async(be, own_prefix, out, n, err);
}

static int sl_run(void *be, const char *const *argv, const char *in, char **out,
                  spw_error_t *err)
{
    return spw_slurm_run(be, argv, in, out, err);
}

const struct spw_backend_ops spw_slurm_ops = {
    .version = SPW_BACKEND_VERSION,
    .name = "slurm",
    .launch = sl_launch,
    .signal = sl_signal,
    .cancel = sl_cancel,
    .tick = sl_tick,
    .poll = sl_poll,
    .adopt = sl_adopt,
    .destroy = sl_destroy,
    .find = sl_find,
    .changed = sl_changed,
    .nodes = sl_nodes,
    .nodes_async = sl_nodes_async,
    .set_nodes = sl_set_nodes,
    .node_index = sl_node_index,
    .foreign_async = sl_foreign_async,
    .run = sl_run,
};

/* ---- nodes ----------------------------------------------------------------- */

static int nodes_parse(spw_slurm_t *sb, char *o, spw_backend_node_t **out, size_t *n,
                       spw_error_t *err);

int spw_slurm_nodes(spw_slurm_t *sb, spw_backend_node_t **out, size_t *n, spw_error_t *err)
{
    *out = NULL;
    *n = 0;
    const char *argv[] = {"sinfo", "--json", NULL};
    char *o = NULL;
    if (spw_slurm_run(sb, argv, NULL, &o, err) != 0) {
        free(o);
        return -1;
    }
    return nodes_parse(sb, o, out, n, err);
}

/* Takes slot k's result if one is there (1, or -1 with err when the read
 * failed) and asks for the next; 0 when none is there yet. */
static int take(spw_slurm_t *sb, int k, char **o, spw_backend_foreign_t **fv, size_t *fn,
                spw_error_t *err)
{
    struct aslot *a = &sb->slot[k];
    pthread_mutex_lock(&sb->wmu);
    int done = a->done, rc = a->rc;
    if (done) {
        *o = a->out;
        if (fv) {
            *fv = a->fv;
            *fn = a->fn;
            a->fv = NULL;
        }
        a->out = NULL;
        a->done = 0;
        if (rc < 0)
            spw_errorf(err, "%s", a->err);
    }
    pthread_mutex_unlock(&sb->wmu);
    ask(sb, k);
    return done ? (rc < 0 ? -1 : 1) : 0;
}

int spw_slurm_nodes_async(spw_slurm_t *sb, spw_backend_node_t **out, size_t *n, spw_error_t *err)
{
    *out = NULL;
    *n = 0;
    char *o = NULL;
    int rc = take(sb, SLOT_NODES, &o, NULL, NULL, err);
    if (rc <= 0) {
        free(o);
        return rc;
    }
    return nodes_parse(sb, o, out, n, err) == 0 ? 1 : -1;
}

int spw_slurm_foreign_async(spw_slurm_t *sb, const char *own_prefix, spw_backend_foreign_t **out,
                            size_t *n, spw_error_t *err)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&sb->wmu);
    snprintf(sb->own_prefix, sizeof(sb->own_prefix), "%s", own_prefix ? own_prefix : "");
    pthread_mutex_unlock(&sb->wmu);
    char *o = NULL;
    int rc = take(sb, SLOT_FOREIGN, &o, out, n, err);
    free(o);
    return rc;
}

/* Reads sinfo --json's output o (takes it). */
static int nodes_parse(spw_slurm_t *sb, char *o, spw_backend_node_t **out, size_t *n,
                       spw_error_t *err)
{
    *out = NULL;
    *n = 0;
    json_error_t je;
    json_t *root = json_loads(o, 0, &je);
    free(o);
    json_t *nodes = root ? json_object_get(root, "nodes") : NULL;
    /* With slurmctld unreachable, sinfo --json of 22.05 exits 0 with an
     * empty list and an "errors" entry: that is no answer, not no nodes. */
    json_t *errs = root ? json_object_get(root, "errors") : NULL;
    if (json_is_array(errs) && json_array_size(errs) > 0) {
        json_t *e0 = json_array_get(errs, 0);
        spw_errorf(err, "sinfo --json: %s (errno %lld; is slurmctld up?)", jstr(e0, "error"),
                   (long long)json_integer_value(json_object_get(e0, "errno")));
        json_decref(root);
        return -1;
    }
    if (!json_is_array(nodes)) {
        json_decref(root);
        return spw_errorf(err, "sinfo --json gave no node list");
    }
    spw_backend_node_t *v = spw_xcalloc(json_array_size(nodes) + 1, sizeof(*v));
    size_t k = 0, i;
    json_t *nd;
    json_array_foreach(nodes, i, nd)
    {
        json_t *parts = json_object_get(nd, "partitions"), *p;
        size_t pi;
        int in = 0;
        json_array_foreach(parts, pi, p) if (json_is_string(p) &&
                                             strcmp(json_string_value(p), sb->partition) == 0) in = 1;
        if (!in)
            continue;
        spw_backend_node_t *x = &v[k++];
        snprintf(x->name, sizeof(x->name), "%s", jstr(nd, "name"));
        snprintf(x->features, sizeof(x->features), "%s", jstr(nd, "features"));
        snprintf(x->state, sizeof(x->state), "%s", jstr(nd, "state"));
        snprintf(x->reason, sizeof(x->reason), "%s", jstr(nd, "reason"));
        /* gres: "gpu:a100:4", "gpu:4", possibly "gpu:a100:4(S:0),other:1". */
        const char *g = jstr(nd, "gres");
        while (g && *g) {
            if (strncmp(g, "gpu:", 4) == 0) {
                const char *a = g + 4, *c = strchr(a, ':'), *end = a + strcspn(a, ",(");
                if (c && c < end) {
                    snprintf(x->gpu_type, sizeof(x->gpu_type), "%.*s", (int)(c - a), a);
                    a = c + 1;
                }
                x->gpus += (uint32_t)strtoul(a, NULL, 10);
            }
            g = strchr(g, ',');
            if (g)
                g++;
        }
        /* Powered down (a cloud node Slurm powers up on demand) is not down. */
        x->down = strcmp(x->state, "down") == 0 || strcmp(x->state, "error") == 0 ||
                  strcmp(x->state, "future") == 0 || strcmp(x->state, "unknown") == 0;
        json_t *flags = json_object_get(nd, "state_flags"), *f;
        size_t fi;
        json_array_foreach(flags, fi, f)
        {
            const char *s = json_is_string(f) ? json_string_value(f) : "";
            if (strncmp(s, "POWER", 5) == 0) { /* shown, not down */
                size_t l = strlen(x->state);
                snprintf(x->state + l, sizeof(x->state) - l, "+%s", s);
            }
            if (strcmp(s, "DRAIN") == 0 || strcmp(s, "DRAINING") == 0 ||
                strcmp(s, "DRAINED") == 0 || strcmp(s, "FAIL") == 0 ||
                strcmp(s, "NOT_RESPONDING") == 0) {
                x->down = 1;
                size_t l = strlen(x->state);
                snprintf(x->state + l, sizeof(x->state) - l, "+%s", s);
            }
        }
    }
    json_decref(root);
    *out = v;
    *n = k;
    return 0;
}

/* ---- foreign jobs ---------------------------------------------------------- */

/* GPUs of a gres list "gpu:a100:2(IDX:0-1),other:1": the sum of its gpu
 * entries. */
static uint32_t gres_gpus(const char *g)
{
    uint32_t n = 0;
    while (g && *g) {
        /* this entry ends at the first ',' outside parentheses */
        const char *end = g;
        int depth = 0;
        while (*end && (depth > 0 || *end != ',')) {
            depth += *end == '(' ? 1 : *end == ')' ? -1 : 0;
            end++;
        }
        if (strncmp(g, "gpu:", 4) == 0) {
            const char *a = g + 4, *stop = a + strcspn(a, ",(");
            const char *c = memchr(a, ':', (size_t)(stop - a));
            if (c)
                a = c + 1;
            n += (uint32_t)strtoul(a, NULL, 10);
        }
        g = *end ? end + 1 : NULL;
    }
    return n;
}

/* Adds GPUs to node `name` of a list. */
static void add_alloc(spw_backend_foreign_t **v, size_t *n, const char *name, uint32_t gpus)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i].name, name) == 0) {
            (*v)[i].gpus += gpus;
            return;
        }
    *v = spw_xrealloc(*v, (*n + 1) * sizeof(**v));
    snprintf((*v)[*n].name, sizeof((*v)[*n].name), "%s", name);
    (*v)[*n].gpus = gpus;
    (*n)++;
}

/* The allocation of running job `id` from `scontrol -d -o show job`: its
 * "Nodes=LIST ... GRES=gpu:TYPE:N(IDX:...)" groups.  0, or -1 with err. */
static int job_alloc(spw_slurm_t *sb, long id, falloc_t *fa, spw_error_t *err)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%ld", id);
    const char *argv[] = {"scontrol", "-d", "-o", "show", "job", ids, NULL};
    char *o = NULL;
    if (spw_slurm_run(sb, argv, NULL, &o, err) != 0) {
        free(o);
        return -1;
    }
    fa->id = id;
    fa->v = NULL;
    fa->n = 0;
    /* Asked for an array's base id (or a het job's first component),
     * scontrol shows every task (component), one line each: only the line
     * of this id counts, the others are counted under their own ids. */
    char want[48];
    int wl = snprintf(want, sizeof(want), "JobId=%ld", id);
    char *lsave = NULL;
    char *line = strtok_r(o, "\n", &lsave);
    while (line && (strncmp(line, want, (size_t)wl) != 0 || (line[wl] != ' ' && line[wl] != '\0')))
        line = strtok_r(NULL, "\n", &lsave);
    char *save = NULL, *group = NULL;
    for (char *t = line ? strtok_r(line, " ", &save) : NULL; t; t = strtok_r(NULL, " ", &save)) {
        if (strncmp(t, "Nodes=", 6) == 0) {
            group = t + 6;
            continue;
        }
        if (strncmp(t, "GRES=", 5) != 0 || !group)
            continue;
        uint32_t g = gres_gpus(t + 5);
        if (g && !strpbrk(group, "[,")) {
            add_alloc(&fa->v, &fa->n, group, g);
        } else if (g) {
            const char *hv[] = {"scontrol", "show", "hostnames", group, NULL};
            char *hn = NULL;
            spw_error_t e2;
            if (spw_slurm_run(sb, hv, NULL, &hn, &e2) == 0) {
                char *s2 = NULL;
                for (char *h = strtok_r(hn, "\n", &s2); h; h = strtok_r(NULL, "\n", &s2))
                    add_alloc(&fa->v, &fa->n, h, g);
            }
            free(hn);
        }
        group = NULL;
    }
    free(o);
    return 0;
}

/* One foreign read (the worker's; only it touches sb->falloc). */
static int foreign_run(spw_slurm_t *sb, const char *own_prefix, spw_backend_foreign_t **out,
                       size_t *n, spw_error_t *err)
{
    *out = NULL;
    *n = 0;
    char part[300];
    snprintf(part, sizeof(part), "--partition=%s", sb->partition);
    /* %A: a job's own id, also for each task of an array (whose %i is
     * "BASE_TASK") and each component of a het job ("LEADER+N"). */
    const char *argv[] = {"squeue", "--noheader", part, "--states=RUNNING,COMPLETING,CONFIGURING",
                          "--format=%A\x1f%k", NULL};
    char *o = NULL;
    if (spw_slurm_run(sb, argv, NULL, &o, err) != 0) {
        free(o);
        return -1;
    }
    for (size_t i = 0; i < sb->nfalloc; i++)
        sb->falloc[i].seen = 0;
    size_t plen = own_prefix ? strlen(own_prefix) : 0;
    char *save = NULL;
    for (char *line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *sep = strchr(line, '\x1f');
        if (!sep)
            continue;
        *sep = '\0';
        const char *comment = sep + 1;
        if (plen && strncmp(comment, own_prefix, plen) == 0)
            continue; /* ours */
        char *end;
        long id = strtol(line, &end, 10);
        if (id <= 0 || *end != '\0')
            continue;
        size_t k = 0;
        while (k < sb->nfalloc && sb->falloc[k].id != id)
            k++;
        if (k == sb->nfalloc) {
            falloc_t fa;
            spw_error_t e2;
            if (job_alloc(sb, id, &fa, &e2) < 0)
                continue; /* ended meanwhile, or no answer: next time */
            if (sb->nfalloc == sb->capfalloc) {
                sb->capfalloc = sb->capfalloc ? 2 * sb->capfalloc : 16;
                sb->falloc = spw_xrealloc(sb->falloc, sb->capfalloc * sizeof(falloc_t));
            }
            sb->falloc[sb->nfalloc++] = fa;
        }
        sb->falloc[k].seen = 1;
    }
    free(o);
    /* Forget the jobs that ended; sum the others by node. */
    spw_backend_foreign_t *v = NULL;
    size_t nv = 0;
    for (size_t i = 0; i < sb->nfalloc;) {
        falloc_t *fa = &sb->falloc[i];
        if (!fa->seen) {
            free(fa->v);
            sb->falloc[i] = sb->falloc[--sb->nfalloc];
            continue;
        }
        for (size_t k = 0; k < fa->n; k++)
            add_alloc(&v, &nv, fa->v[k].name, fa->v[k].gpus);
        i++;
    }
    *out = v;
    *n = nv;
    return 0;
}
