/* kubernetes.c: the Kubernetes backend: one batch/v1 Job per attempt, API
 * calls on the backend's own thread (see kubernetes.h). */
#include "backends/kubernetes/kubernetes.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/kubernetes/api.h"
#include "backends/kubernetes/kubeconfig.h"
#include "util/strbuf.h"

#define L_DAEMON "spillway.dev/daemon"
#define L_JOB "spillway.dev/job"
#define L_JOBNAME "spillway.dev/job-name"
#define A_TOKEN "spillway.dev/token"
#define A_JOBID "spillway.dev/job-id"
#define GPU "nvidia.com/gpu"

/* One tracked attempt. */
typedef struct kjob {
    spw_handle_t h;             /* as launch()/adopt() gave it; ext = Job name
                                   once created */
    char name[64];              /* the Job's name */
    uint32_t nodes;             /* pods of the gang (1 = plain Job) */
    char log_dir[256];          /* its launch's log_dir ("" = the backend's) */
    int created;                /* 1: the Job exists (created or adopted) */
    uint64_t create_seq;        /* lists of the Jobs started before it existed */
    int reported;               /* 1: changed() reported it (running) */
    int cancel;                 /* 1: cancel() asked */
    int ending;                 /* 1: its logs are being copied; exit below */
    double lost_s;              /* daemon clock when it was first seen lost
                                   (no exit code); 0 = not lost */
    spw_exit_t exit;            /* its exit, while ending */
} kjob_t;

typedef enum op_kind { OP_CREATE, OP_DELETE, OP_LOGS, OP_SIGNAL } op_kind_t;

/* A request for the thread. */
typedef struct kop {
    op_kind_t kind;             /* what to do */
    char name[64];              /* the Job */
    char token[SPW_TOKEN_MAX];  /* its launch token */
    char job_id[SPW_JOB_ID_MAX]; /* OP_LOGS: names the log files */
    char log_dir[256];          /* OP_LOGS: where they are */
    char *body;                 /* OP_CREATE: the Job, JSON (owned) */
    char *svc;                  /* OP_CREATE: a gang's Service, JSON (owned); NULL */
    json_t *pods;               /* OP_LOGS, OP_SIGNAL: pod names, by rank (owned) */
    int grace_s;                /* OP_SIGNAL: the pods' gracePeriodSeconds */
} kop_t;

/* The collections the backend follows. */
typedef enum watch_kind { W_JOBS, W_PODS, W_NODES, W_COUNT } watch_kind_t;

struct spw_kube;

/* One collection followed by list-then-watch on a thread of its own: a
 * list, then a watch from the list's resourceVersion (bookmarks keep it
 * current), again from the last one seen when the stream ends, and a new
 * list only when the server answers 410 Gone. */
typedef struct kwatch {
    struct spw_kube *kb;        /* its backend */
    watch_kind_t kind;          /* which collection */
    char path[160];             /* its path (no query) */
    const char *selector;       /* label selector; NULL = all */
    pthread_t thread;           /* its thread */
    int running;                /* 1: thread was started */
    /* Under kb->lock: */
    json_t *objs;               /* key ("NS/NAME", or NAME) -> object */
    json_t *gone;               /* keys DELETED since the last list -> true */
    uint64_t ver;               /* bumped by each change of objs */
    uint64_t lists;             /* lists started */
    uint64_t gen;               /* `lists` when the one installed last
                                   started; 0 = none yet */
    uint64_t relists;           /* lists after a 410 Gone */
    uint64_t events;            /* ADDED/MODIFIED/DELETED events applied */
    char err[256];              /* why the last list or watch failed; "" = none */
} kwatch_t;

/* A running pod's log followed (pods/log?follow=true) into the job's log
 * file, so that `spillway logs -f` shows it as it is written. */
typedef struct kfollow {
    struct spw_kube *kb;        /* its backend */
    char pod[160];              /* the pod's name */
    char file[400];             /* LOG_DIR/JOBID/JOBID.out, or .rankN.out */
    char mark[400];             /* LOG_DIR/JOBID/.POD.logbytes: bytes of the
                                   pod's log already in file (a restarted
                                   daemon's follower skips them) */
    pthread_t thread;           /* its thread */
    int fd;                     /* file, appended to; -1 = not open */
    int mfd;                    /* mark; -1 = not open */
    uint64_t skip;              /* bytes of the stream already in file */
    uint64_t seen;              /* bytes of the stream received */
    uint64_t bytes;             /* bytes of the pod's log in file (read by
                                   OP_LOGS once the thread ended) */
    int stop;                   /* under kb->lock: 1 = end the stream */
} kfollow_t;

/* Pods followed at once, at most: beyond, a pod's log is copied only when
 * its Job ends (each follow holds a thread and a connection). */
#define FOLLOW_MAX 256

/* A finished request. */
typedef struct kres {
    op_kind_t kind;             /* what was done */
    char token[SPW_TOKEN_MAX];  /* of which attempt */
    int ok;                     /* 1: done */
    int created;                /* OP_CREATE: 1 created, 0 adopted after 409 */
    uint64_t seq;               /* OP_CREATE: lists of the Jobs started by then */
    char msg[256];              /* why not (spw_error_t text) */
} kres_t;

struct spw_kube {
    spw_kubeconfig_t *kc;       /* server and credentials */
    spw_kube_api_t *api;        /* the client */
    char ns[64];                /* namespace of the Jobs */
    char *log_dir;              /* LOG_DIR */
    json_t *template_extra;     /* pod spec members from the pool (nodeSelector,
                                   tolerations, priorityClassName) */
    char *local_queue;          /* Kueue LocalQueue; NULL = none */
    char *image;                /* default image; NULL = none */
    double kill_grace_s;        /* cancel's grace, seconds */
    double ttl_s;               /* ttlSecondsAfterFinished, seconds */
    double timeout_s;           /* one API request, seconds */
    unsigned watch_s;           /* a watch's timeoutSeconds */

    /* The caller's thread alone: */
    kjob_t *jobs;               /* tracked attempts */
    size_t njobs;               /* entries in jobs */
    spw_exit_t *exits;          /* queued for poll() */
    size_t nexits;              /* entries in exits */
    spw_handle_t *changes;      /* queued for changed() */
    size_t nchanges;            /* entries in changes */
    char **fenced;              /* tokens find() did not find */
    size_t nfenced;             /* entries in fenced */
    char **node_names;          /* set_nodes() */
    size_t nnodes;              /* entries in node_names */
    uint64_t applied_ver;       /* Jobs + pods versions applied last */
    uint64_t foreign_ver;       /* pods version foreign_async read last */
    uint64_t nodes_ver;         /* Nodes version nodes_async read last */
    double last_apply_s;        /* daemon clock when the watches were applied */
    int holding;                /* 1: a Job is held as lost (apply again
                                   each second, news or not) */
    int dirty;                  /* 1: a Job was created or adopted since the
                                   last apply (apply, news or not) */

    /* Shared with the thread, under lock: */
    pthread_mutex_t lock;       /* guards the members below */
    pthread_cond_t wake;        /* the op thread waits here */
    pthread_cond_t done;        /* cancel_wait() waits here; broadcast after
                                   each op */
    pthread_cond_t wwake;       /* the watch threads (to start, or after a
                                   failure) and first-list waiters wait here */
    pthread_t thread;           /* the backend's op thread */
    int stop;                   /* 1: the threads end */
    int watching;               /* 1: the watch threads may start (first
                                   tick, adopt, find or nodes_async) */
    kop_t *ops;                 /* requests, in order */
    size_t nops;                /* entries in ops */
    char busy[SPW_TOKEN_MAX];   /* token of the op in progress; "" = none */
    kres_t *res;                /* answers not applied yet */
    size_t nres;                /* entries in res */
    kwatch_t w[W_COUNT];        /* the daemon's Jobs (by name), every pod of
                                   the cluster ("NS/NAME"), the Nodes */
    json_t *signalled;          /* Job name -> true: signal() deleted its pods */
    json_t *pods_gone;          /* "NS/NAME" -> last state of a deleted pod of
                                   a signalled Job (its exit code), until its
                                   Job goes */
    kfollow_t **follows;        /* pods whose log is followed */
    size_t nfollows;            /* entries in follows */
    double now_s;               /* the caller's clock, for credentials */
    uint64_t creates;           /* Jobs created */
};

/* ---- names and the Job object ----------------------------------------- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void spw_kube_job_name(const char *job_id, const char *token, char out[64])
{
    char id[41];
    size_t k = 0;
    for (const char *p = job_id; *p && k < sizeof(id) - 1; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '-';
        id[k++] = c;
    }
    while (k > 0 && id[k - 1] == '-')
        k--;
    id[k] = '\0';
    snprintf(out, 64, "spw-%s%s%010llx", id, k ? "-" : "",
             (unsigned long long)(fnv1a(token) & 0xffffffffffull));
}

/* A label value of at most 63 bytes, [A-Za-z0-9._-], alphanumeric ends. */
static void label_value(const char *s, char out[64])
{
    size_t k = 0;
    for (; *s && k < 63; s++) {
        char c = *s;
        out[k++] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                           c == '.' || c == '_' || c == '-'
                       ? c
                       : '_';
    }
    while (k > 0 && (out[k - 1] == '.' || out[k - 1] == '_' || out[k - 1] == '-'))
        k--;
    out[k] = '\0';
}

/* The daemon id of a token ("DAEMONID.JOBID.ATTEMPT"). */
static void daemon_of(const char *token, char out[64])
{
    char d[64];
    size_t n = strcspn(token, ".");
    snprintf(d, sizeof(d), "%.*s", (int)(n < 63 ? n : 63), token);
    label_value(d, out);
}

static json_t *env_var(const char *name, const char *value)
{
    return json_pack("{s:s, s:s}", "name", name, "value", value);
}

/* The node named by SPILLWAY_PLACEMENT=POOL/INDEX in env, or NULL. */
static const char *placed_node(const spw_kube_t *kb, const char *const *env)
{
    for (size_t i = 0; env && env[i]; i++) {
        const char *slash = strrchr(env[i], '/');
        char *end;
        if (strncmp(env[i], "SPILLWAY_PLACEMENT=", 19) != 0 || !slash)
            continue;
        unsigned long k = strtoul(slash + 1, &end, 10);
        if (*end == '\0' && end > slash + 1 && k < kb->nnodes)
            return kb->node_names[k];
    }
    return NULL;
}

/* The Job (and a gang's Service, else NULL) for req, as JSON text (caller
 * frees both). */
static void job_body(spw_kube_t *kb, const spw_launch_t *req, const char *name, const char *image,
                    char **job, char **svc)
{
    uint32_t nodes = req->nodes > 1 ? req->nodes : 1;
    char dmn[64], jl[64];
    daemon_of(req->token, dmn);
    label_value(req->job_id, jl);
    json_t *env = json_array();
    for (size_t i = 0; req->env && req->env[i]; i++) {
        const char *eq = strchr(req->env[i], '=');
        if (!eq || eq == req->env[i])
            continue;
        json_t *e = json_pack("{s:s%, s:s}", "name", req->env[i], (size_t)(eq - req->env[i]),
                              "value", eq + 1);
        json_array_append_new(env, e);
    }
    json_array_append_new(env, env_var("SPILLWAY_JOB_ID", req->job_id));
    json_array_append_new(env, env_var("SPILLWAY_LAUNCH_TOKEN", req->token));
    json_t *cmd = json_array();
    json_array_append_new(cmd, json_string("/bin/sh"));
    json_array_append_new(cmd, json_string("-c"));
    spw_strbuf_t sh = {0};
    if (nodes > 1) {
        char n[16], addr[160];
        snprintf(n, sizeof(n), "%u", nodes);
        snprintf(addr, sizeof(addr), "%s-0.%s", name, name);
        json_array_append_new(env, env_var("WORLD_SIZE", n));
        json_array_append_new(env, env_var("MASTER_ADDR", addr));
        json_array_append_new(env, env_var("MASTER_PORT", "29500"));
        json_array_append_new(env, env_var("LOCAL_RANK", "0"));
        spw_strbuf_add(&sh, "RANK=$JOB_COMPLETION_INDEX; NODE_RANK=$JOB_COMPLETION_INDEX; "
                            "export RANK NODE_RANK; ");
    }
    if (req->script) {
        spw_strbuf_add(&sh, req->script);
        json_array_append_new(cmd, json_string(sh.s));
    } else {
        spw_strbuf_add(&sh, "exec \"$@\"");
        json_array_append_new(cmd, json_string(sh.s));
        json_array_append_new(cmd, json_string("spillway-job"));
        for (size_t i = 0; req->argv && req->argv[i]; i++)
            json_array_append_new(cmd, json_string(req->argv[i]));
    }
    free(sh.s);
    json_t *ctr = json_pack("{s:s, s:s, s:o, s:o}", "name", "job", "image", image, "command", cmd,
                            "env", env);
    if (req->workdir)
        json_object_set_new(ctr, "workingDir", json_string(req->workdir));
    /* A job gains no privileges it did not start with (setuid binaries in
     * its image included). */
    json_object_set_new(ctr, "securityContext",
                        json_pack("{s:b}", "allowPrivilegeEscalation", 0));
    if (req->ngpus > 0) {
        char g[24];
        snprintf(g, sizeof(g), "%zu", req->ngpus);
        json_object_set_new(ctr, "resources", json_pack("{s:{s:s}}", "limits", GPU, g));
    }
    json_t *pspec = json_deep_copy(kb->template_extra);
    const char *pin = nodes > 1 ? NULL : placed_node(kb, req->env);
    if (pin) {
        /* Where the engine placed it (SPILLWAY_PLACEMENT=POOL/INDEX), so that
         * the daemon's node accounting is the cluster's. */
        json_t *sel = json_object_get(pspec, "nodeSelector");
        if (!sel)
            json_object_set_new(pspec, "nodeSelector", sel = json_object());
        json_object_set_new(sel, "kubernetes.io/hostname", json_string(pin));
    }
    json_object_set_new(pspec, "restartPolicy", json_string("Never"));
    /* The namespace's service-account token stays out of the pod: a job
     * cannot speak to the cluster's API as anyone (RBAC in docs/kubernetes.md). */
    json_object_set_new(pspec, "automountServiceAccountToken", json_false());
    json_object_set_new(pspec, "containers", json_pack("[o]", ctr));
    json_object_set_new(pspec, "terminationGracePeriodSeconds",
                        json_integer((json_int_t)kb->kill_grace_s));
    if (nodes > 1)
        json_object_set_new(pspec, "subdomain", json_string(name));
    json_t *labels = json_pack("{s:s, s:s}", L_DAEMON, dmn, L_JOB, jl);
    json_t *ann = json_pack("{s:s, s:s}", A_TOKEN, req->token, A_JOBID, req->job_id);
    json_t *plabels = json_pack("{s:s, s:s}", L_DAEMON, dmn, L_JOBNAME, name);
    if (kb->local_queue)
        json_object_set_new(labels, "kueue.x-k8s.io/queue-name", json_string(kb->local_queue));
    json_t *spec = json_pack("{s:i, s:I, s:{s:{s:o, s:O}, s:o}}", "backoffLimit", 0,
                             "ttlSecondsAfterFinished", (json_int_t)kb->ttl_s, "template",
                             "metadata", "labels", plabels, "annotations", ann, "spec", pspec);
    if (req->max_runtime_s > 0)
        json_object_set_new(spec, "activeDeadlineSeconds",
                            json_integer((json_int_t)(req->max_runtime_s + 0.999)));
    if (nodes > 1) {
        json_object_set_new(spec, "completionMode", json_string("Indexed"));
        json_object_set_new(spec, "parallelism", json_integer(nodes));
        json_object_set_new(spec, "completions", json_integer(nodes));
    }
    if (kb->local_queue)
        json_object_set_new(spec, "suspend", json_true());
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:O}, s:o}", "apiVersion", "batch/v1",
                          "kind", "Job", "metadata", "name", name, "namespace", kb->ns, "labels",
                          labels, "annotations", ann, "spec", spec);
    /* ann: "O" in the template took one more reference, this "O" another. */
    json_decref(ann);
    *job = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    *svc = NULL;
    if (nodes > 1) {
        json_t *s = json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:s, s:{s:s}}}", "apiVersion", "v1",
                              "kind", "Service", "metadata", "name", name, "labels", labels,
                              "spec", "clusterIP", "None", "selector", L_JOBNAME, name);
        *svc = json_dumps(s, JSON_COMPACT);
        json_decref(s);
    } else {
        json_decref(labels);
    }
}

/* ---- the thread -------------------------------------------------------- */

static void res_push(spw_kube_t *kb, const kres_t *r)
{
    kb->res = spw_xrealloc(kb->res, (kb->nres + 1) * sizeof(*kb->res));
    kb->res[kb->nres++] = *r;
}

static const char *ann_token(const json_t *obj)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), A_TOKEN));
}

static void op_create(spw_kube_t *kb, kop_t *op, double now_s, kres_t *r)
{
    spw_error_t err = {{0}};
    char path[160];
    snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs", kb->ns);
    json_t *got = NULL;
    int http = spw_kube_request(kb->api, "POST", path, op->body, now_s, &got, &err);
    if (http == 409) {
        /* A create retried after its answer was lost, or of a daemon that
         * died: the Job is ours only if it carries our token. */
        json_decref(got);
        got = NULL;
        snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs/%s", kb->ns, op->name);
        int h2 = spw_kube_request(kb->api, "GET", path, NULL, now_s, &got, &err);
        const char *t = ann_token(got);
        if (h2 == 200 && t && strcmp(t, op->token) == 0) {
            r->ok = 1;
        } else if (h2 == 200) {
            spw_errorf(&err, "Job %s already exists and carries another launch token", op->name);
        }
    } else if (http == 201 || http == 200) {
        r->ok = r->created = 1;
    }
    json_decref(got);
    if (r->ok && op->svc) {
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services", kb->ns);
        int hs = spw_kube_request(kb->api, "POST", path, op->svc, now_s, NULL, &err);
        if (hs != 201 && hs != 200 && hs != 409)
            r->ok = 0;
    }
    if (!r->ok)
        snprintf(r->msg, sizeof(r->msg), "%s", err.text);
}

static void op_delete(spw_kube_t *kb, kop_t *op, double now_s, kres_t *r)
{
    spw_error_t err;
    char path[200], body[160];
    snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs/%s", kb->ns, op->name);
    snprintf(body, sizeof(body),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
             "\"Background\",\"gracePeriodSeconds\":%lld}",
             (long long)kb->kill_grace_s);
    int http = spw_kube_request(kb->api, "DELETE", path, body, now_s, NULL, &err);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services/%s", kb->ns, op->name);
    spw_kube_request(kb->api, "DELETE", path, NULL, now_s, NULL, NULL);
    r->ok = http == 200 || http == 202 || http == 404;
    if (!r->ok)
        snprintf(r->msg, sizeof(r->msg), "%s", err.text);
}

/* Deletes each pod of the Job with gracePeriodSeconds op->grace_s: the
 * kubelet sends SIGTERM, then SIGKILL after the grace (0: at once). */
static void op_signal(spw_kube_t *kb, kop_t *op, double now_s, kres_t *r)
{
    size_t i;
    json_t *pod;
    char body[160];
    snprintf(body, sizeof(body),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":%d}",
             op->grace_s);
    r->ok = 1;
    json_array_foreach(op->pods, i, pod) {
        char path[400];
        spw_error_t err;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", kb->ns,
                 json_string_value(pod));
        int http = spw_kube_request(kb->api, "DELETE", path, body, now_s, NULL, &err);
        if (http != 200 && http != 202 && http != 404) {
            r->ok = 0;
            snprintf(r->msg, sizeof(r->msg), "%s", err.text);
        }
    }
}

static uint64_t follow_end(spw_kube_t *kb, const char *pod, const char *mark);

/* Copies each pod's log to LOG_DIR/JOBID.out (rank 0) or .rankN.out. */
static void op_logs(spw_kube_t *kb, kop_t *op, double now_s, kres_t *r)
{
    size_t i;
    json_t *pod;
    json_array_foreach(op->pods, i, pod) {
        char path[400], file[400];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/log", kb->ns,
                 json_string_value(pod));
        if (i == 0)
            snprintf(file, sizeof(file), "%s/%s.out", op->log_dir, op->job_id);
        else
            snprintf(file, sizeof(file), "%s/%s.rank%zu.out", op->log_dir, op->job_id, i);
        char mark[400];
        snprintf(mark, sizeof(mark), "%s/.%s.logbytes", op->log_dir, json_string_value(pod));
        /* What a follower (of this daemon, or of one before a restart)
         * already wrote is not written again. */
        uint64_t have = follow_end(kb, json_string_value(pod), mark);
        spw_error_t err;
        char *text = NULL;
        size_t len = 0;
        int http = spw_kube_get_text(kb->api, path, now_s, &text, &len, &err);
        if (http == 200 && text && len > have) {
            int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
            if (fd >= 0) {
                ssize_t w = write(fd, text + have, len - (size_t)have);
                (void)w;
                close(fd);
            }
        }
        unlink(mark);
        free(text);
    }
    r->ok = 1;
}

/* The key of obj in its watch: "NS/NAME" for pods, NAME otherwise (into
 * out, 160 bytes); 0, or -1 when it has no name. */
static int obj_key(const kwatch_t *w, const json_t *obj, char out[160])
{
    json_t *md = json_object_get(obj, "metadata");
    const char *n = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!n)
        return -1;
    if (w->kind == W_PODS)
        snprintf(out, 160, "%s/%s", ns ? ns : "", n);
    else
        snprintf(out, 160, "%s", n);
    return 0;
}

/* Bytes of a pod's log already in the job's log file, as its mark says
 * (0 without one). */
static uint64_t mark_read(const char *mark)
{
    char buf[32] = "";
    int fd = open(mark, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strtoull(buf, NULL, 10);
}

/* The follower's stream (spw_kube_text_f): appends what the file lacks. */
static int on_log_text(void *arg, const char *data, size_t len)
{
    kfollow_t *f = arg;
    if (data && len) {
        uint64_t s0 = f->seen;
        f->seen += len;
        if (f->seen > f->skip) {
            size_t off = s0 < f->skip ? (size_t)(f->skip - s0) : 0;
            ssize_t w = write(f->fd, data + off, len - off);
            if (w > 0)
                f->bytes += (uint64_t)w;
            char num[24];
            int k = snprintf(num, sizeof(num), "%020llu\n", (unsigned long long)f->bytes);
            if (f->mfd >= 0 && pwrite(f->mfd, num, (size_t)k, 0) < 0)
                f->bytes += 0;   /* the mark is a hint: a restart may repeat a chunk */
        }
    }
    pthread_mutex_lock(&f->kb->lock);
    int stop = f->stop || f->kb->stop;
    pthread_mutex_unlock(&f->kb->lock);
    return stop;
}

static void *follower(void *arg)
{
    kfollow_t *f = arg;
    spw_kube_t *kb = f->kb;
    f->skip = f->bytes = mark_read(f->mark);
    f->fd = open(f->file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (f->fd < 0)
        return NULL;
    f->mfd = open(f->mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/log?follow=true", kb->ns, f->pod);
    pthread_mutex_lock(&kb->lock);
    double now_s = kb->now_s;
    pthread_mutex_unlock(&kb->lock);
    spw_error_t err;
    spw_kube_stream_text(kb->api, path, 0, now_s, on_log_text, f, &err);
    return NULL;
}

/* Starts following pod when it runs, belongs to one of the daemon's Jobs
 * and is not followed yet (lock held). */
static void maybe_follow(spw_kube_t *kb, const json_t *pod)
{
    json_t *md = json_object_get(pod, "metadata");
    json_t *labels = json_object_get(md, "labels");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *jn = json_string_value(json_object_get(labels, L_JOBNAME));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    json_t *job = jn ? json_object_get(kb->w[W_JOBS].objs, jn) : NULL;
    const char *jid = json_string_value(
        json_object_get(json_object_get(json_object_get(job, "metadata"), "annotations"), A_JOBID));
    if (!job || !jid || !name || !ns || strcmp(ns, kb->ns) != 0 || !phase ||
        strcmp(phase, "Running") != 0 || kb->nfollows >= FOLLOW_MAX)
        return;
    for (size_t i = 0; i < kb->nfollows; i++)
        if (strcmp(kb->follows[i]->pod, name) == 0)
            return;
    const char *idx = json_string_value(json_object_get(labels, "batch.kubernetes.io/job-completion-index"));
    unsigned long rank = idx ? strtoul(idx, NULL, 10) : 0;
    kfollow_t *f = spw_xcalloc(1, sizeof(*f));
    f->kb = kb;
    f->fd = f->mfd = -1;
    snprintf(f->pod, sizeof(f->pod), "%s", name);
    /* The daemon's layout: LOG_DIR/JOBID/ (launch.c). */
    if (rank == 0)
        snprintf(f->file, sizeof(f->file), "%s/%s/%s.out", kb->log_dir, jid, jid);
    else
        snprintf(f->file, sizeof(f->file), "%s/%s/%s.rank%lu.out", kb->log_dir, jid, jid, rank);
    snprintf(f->mark, sizeof(f->mark), "%s/%s/.%s.logbytes", kb->log_dir, jid, name);
    if (pthread_create(&f->thread, NULL, follower, f) != 0) {
        free(f);
        return;
    }
    kb->follows = spw_xrealloc(kb->follows, (kb->nfollows + 1) * sizeof(*kb->follows));
    kb->follows[kb->nfollows++] = f;
}

/* The running pods of Job `job` (a Job its watch has just added) that are
 * not followed yet: the pods' watch may have seen one run before the Jobs'
 * watch saw its Job, when maybe_follow() could not name its log file yet
 * (lock held). */
static void follow_pods_of(spw_kube_t *kb, const json_t *job)
{
    const char *name = json_string_value(json_object_get(json_object_get(job, "metadata"), "name"));
    const char *k;
    json_t *p;
    if (!name)
        return;
    json_object_foreach(kb->w[W_PODS].objs, k, p) {
        const char *jn = json_string_value(json_object_get(
            json_object_get(json_object_get(p, "metadata"), "labels"), L_JOBNAME));
        if (jn && strcmp(jn, name) == 0)
            maybe_follow(kb, p);
    }
}

/* Ends the follow of pod (lock not held): the bytes of its log in the file
 * (its mark's, when no follower of this daemon ran). */
static uint64_t follow_end(spw_kube_t *kb, const char *pod, const char *mark)
{
    kfollow_t *f = NULL;
    pthread_mutex_lock(&kb->lock);
    for (size_t i = 0; i < kb->nfollows; i++)
        if (strcmp(kb->follows[i]->pod, pod) == 0) {
            f = kb->follows[i];
            f->stop = 1;
            kb->follows[i] = kb->follows[--kb->nfollows];
            break;
        }
    pthread_mutex_unlock(&kb->lock);
    if (!f)
        return mark_read(mark);
    pthread_join(f->thread, NULL);
    uint64_t n = f->bytes;
    if (f->fd >= 0)
        close(f->fd);
    if (f->mfd >= 0)
        close(f->mfd);
    free(f);
    return n;
}

/* Lists w's collection and installs the list (a new generation); rv gets
 * its resourceVersion.  0, or -1 with err. */
static int watch_list(kwatch_t *w, double now_s, char *rv, size_t rvlen, spw_error_t *err)
{
    spw_kube_t *kb = w->kb;
    json_t *items = NULL;
    pthread_mutex_lock(&kb->lock);
    uint64_t gen = ++w->lists;
    pthread_mutex_unlock(&kb->lock);
    if (spw_kube_list(kb->api, w->path, w->selector, 500, now_s, &items, rv, rvlen, err) < 0)
        return -1;
    json_t *objs = json_object();
    size_t i;
    json_t *o;
    char key[160];
    json_array_foreach(items, i, o) {
        if (obj_key(w, o, key) == 0)
            json_object_set(objs, key, o);
    }
    json_decref(items);
    pthread_mutex_lock(&kb->lock);
    json_decref(w->objs);
    w->objs = objs;
    json_object_clear(w->gone);
    w->gen = gen;
    w->ver++;
    w->err[0] = '\0';
    /* The running pods not followed yet: those just listed, or, once the
     * Jobs are listed, those seen before their Job (one pass either way). */
    const char *k;
    if (w->kind == W_PODS || w->kind == W_JOBS)
        json_object_foreach(w->kind == W_JOBS ? kb->w[W_PODS].objs : objs, k, o)
            maybe_follow(kb, o);
    pthread_cond_broadcast(&kb->wwake);
    pthread_mutex_unlock(&kb->lock);
    return 0;
}

/* A deleted pod of a Job signal() signalled is kept (its last state says
 * its exit code; a pod deleted otherwise, e.g. evicted from a lost node,
 * is gone as before); a deleted Job takes its kept pods along (lock held). */
static void keep_gone_pod(spw_kube_t *kb, kwatch_t *w, const char *key, json_t *obj)
{
    json_t *md = json_object_get(obj, "metadata");
    if (w->kind == W_PODS) {
        const char *jn = json_string_value(json_object_get(json_object_get(md, "labels"), L_JOBNAME));
        if (jn && json_object_get(kb->signalled, jn))
            json_object_set(kb->pods_gone, key, obj);
    } else if (w->kind == W_JOBS && json_object_size(kb->signalled)) {
        const char *name = json_string_value(json_object_get(md, "name"));
        if (name)
            json_object_del(kb->signalled, name);
        const char *k;
        json_t *p;
        void *tmp;
        json_object_foreach_safe(kb->pods_gone, tmp, k, p) {
            const char *jn = json_string_value(json_object_get(
                json_object_get(json_object_get(p, "metadata"), "labels"), L_JOBNAME));
            if (name && jn && strcmp(jn, name) == 0)
                json_object_del(kb->pods_gone, k);
        }
    }
}

/* A watch event for w (spw_kube_event_f): the object replaces, or leaves,
 * the list; type NULL asks whether to go on. */
static int on_watch_event(void *arg, const char *type, json_t *obj)
{
    kwatch_t *w = arg;
    spw_kube_t *kb = w->kb;
    char key[160];
    pthread_mutex_lock(&kb->lock);
    int stop = kb->stop;
    if (type && obj && obj_key(w, obj, key) == 0) {
        if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
            json_object_set(w->objs, key, obj);
            json_object_del(w->gone, key);
            w->ver++;
            w->events++;
            if (w->kind == W_PODS)
                maybe_follow(kb, obj);
            else if (w->kind == W_JOBS && strcmp(type, "ADDED") == 0)
                follow_pods_of(kb, obj);
        } else if (strcmp(type, "DELETED") == 0) {
            json_object_del(w->objs, key);
            json_object_set_new(w->gone, key, json_true());
            w->ver++;
            w->events++;
            keep_gone_pod(kb, w, key, obj);
        }
    }
    pthread_mutex_unlock(&kb->lock);
    return stop;
}

/* A watch thread: list, then watch from the list's resourceVersion and
 * from the last one seen after each stream; list again on 410 Gone; after
 * a failure, wait a second. */
static void *watcher(void *arg)
{
    kwatch_t *w = arg;
    spw_kube_t *kb = w->kb;
    char rv[64] = "";
    pthread_mutex_lock(&kb->lock);
    while (!kb->stop) {
        if (!kb->watching) {
            pthread_cond_wait(&kb->wwake, &kb->lock);
            continue;
        }
        double now_s = kb->now_s;
        pthread_mutex_unlock(&kb->lock);
        spw_error_t err = {{0}};
        int rc;
        if (!rv[0]) {
            rc = watch_list(w, now_s, rv, sizeof(rv), &err);
        } else {
            rc = spw_kube_watch(kb->api, w->path, w->selector, rv, sizeof(rv), kb->watch_s, now_s,
                                on_watch_event, w, &err);
            if (rc == 1) {
                /* 410 Gone: the events since rv are lost; the next list
                 * says where everything stands. */
                rv[0] = '\0';
                pthread_mutex_lock(&kb->lock);
                w->relists++;
                pthread_mutex_unlock(&kb->lock);
            }
        }
        pthread_mutex_lock(&kb->lock);
        if (rc >= 0)
            w->err[0] = '\0';
        if (rc < 0 && !kb->stop) {
            snprintf(w->err, sizeof(w->err), "%s", err.text[0] ? err.text : "no answer");
            pthread_cond_broadcast(&kb->wwake);
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&kb->wwake, &kb->lock, &until);
        }
    }
    pthread_mutex_unlock(&kb->lock);
    return NULL;
}

/* Lets the watch threads start (lock held). */
static void watch_start_locked(spw_kube_t *kb)
{
    if (!kb->watching) {
        kb->watching = 1;
        pthread_cond_broadcast(&kb->wwake);
    }
}

/* Orders nodes by name, as the API lists them. */
static int node_cmp(const void *a, const void *b)
{
    return strcmp(((const spw_backend_node_t *)a)->name, ((const spw_backend_node_t *)b)->name);
}

/* The pool's nodes from the Node objects in items (an array or an object
 * of them), sorted by name: *out (caller frees) and *n. */
static void nodes_of(const json_t *items, spw_backend_node_t **out, size_t *n)
{
    size_t cnt = json_is_array(items) ? json_array_size(items) : json_object_size(items);
    spw_backend_node_t *v = spw_xcalloc(cnt ? cnt : 1, sizeof(*v));
    /* An object's values in an array first. */
    json_t *arr = json_is_array(items) ? json_incref((json_t *)items) : json_array();
    const char *key;
    json_t *nd;
    if (!json_is_array(items))
        json_object_foreach((json_t *)items, key, nd)
            json_array_append(arr, nd);
    size_t i;
    json_array_foreach(arr, i, nd) {
        json_t *md = json_object_get(nd, "metadata"), *st = json_object_get(nd, "status");
        spw_backend_node_t *o = &v[i];
        snprintf(o->name, sizeof(o->name), "%s", json_string_value(json_object_get(md, "name")));
        const char *g = json_string_value(json_object_get(json_object_get(st, "allocatable"), GPU));
        o->gpus = g ? (uint32_t)strtoul(g, NULL, 10) : 0;
        const char *prod =
            json_string_value(json_object_get(json_object_get(md, "labels"), GPU ".product"));
        snprintf(o->gpu_type, sizeof(o->gpu_type), "%s", prod ? prod : "");
        int ready = 0;
        size_t c_i;
        json_t *c;
        json_array_foreach(json_object_get(st, "conditions"), c_i, c) {
            const char *t = json_string_value(json_object_get(c, "type"));
            if (t && strcmp(t, "Ready") == 0) {
                ready = json_string_value(json_object_get(c, "status")) &&
                        strcmp(json_string_value(json_object_get(c, "status")), "True") == 0;
                const char *why = json_string_value(json_object_get(c, "reason"));
                if (!ready)
                    snprintf(o->reason, sizeof(o->reason), "%s", why ? why : "NotReady");
            }
        }
        int cordoned = json_is_true(json_object_get(json_object_get(nd, "spec"), "unschedulable"));
        o->down = !ready || cordoned;
        snprintf(o->state, sizeof(o->state), "%s%s", ready ? "Ready" : "NotReady",
                 cordoned ? "+SchedulingDisabled" : "");
        if (cordoned && ready)
            snprintf(o->reason, sizeof(o->reason), "cordoned");
    }
    json_decref(arr);
    qsort(v, cnt, sizeof(*v), node_cmp);
    *out = v;
    *n = cnt;
}

static int read_nodes(spw_kube_t *kb, double now_s, spw_backend_node_t **out, size_t *n,
                      spw_error_t *err)
{
    json_t *items;
    char rv[64];
    if (spw_kube_list(kb->api, "/api/v1/nodes", NULL, 500, now_s, &items, rv, sizeof(rv), err) < 0)
        return -1;
    nodes_of(items, out, n);
    json_decref(items);
    return 0;
}

static void *worker(void *arg)
{
    spw_kube_t *kb = arg;
    pthread_mutex_lock(&kb->lock);
    while (!kb->stop) {
        if (!kb->nops) {
            pthread_cond_wait(&kb->wake, &kb->lock);
            continue;
        }
        double now_s = kb->now_s;
        kop_t op = kb->ops[0];
        memmove(kb->ops, kb->ops + 1, (kb->nops - 1) * sizeof(*kb->ops));
        kb->nops--;
        snprintf(kb->busy, sizeof(kb->busy), "%s", op.token);
        pthread_mutex_unlock(&kb->lock);
        kres_t r = {.kind = op.kind};
        snprintf(r.token, sizeof(r.token), "%s", op.token);
        if (op.kind == OP_CREATE)
            op_create(kb, &op, now_s, &r);
        else if (op.kind == OP_DELETE)
            op_delete(kb, &op, now_s, &r);
        else if (op.kind == OP_SIGNAL)
            op_signal(kb, &op, now_s, &r);
        else
            op_logs(kb, &op, now_s, &r);
        free(op.body);
        free(op.svc);
        json_decref(op.pods);
        pthread_mutex_lock(&kb->lock);
        r.seq = kb->w[W_JOBS].lists;
        kb->creates += (uint64_t)r.created;
        res_push(kb, &r);
        kb->busy[0] = '\0';
        pthread_cond_broadcast(&kb->done);
    }
    pthread_mutex_unlock(&kb->lock);
    return NULL;
}

/* Queues op (taking its body, svc and pods) for the thread at place `at`
 * of the queue (kb->nops: last); lock held. */
static void op_insert_locked(spw_kube_t *kb, size_t at, const kop_t *op)
{
    kb->ops = spw_xrealloc(kb->ops, (kb->nops + 1) * sizeof(*kb->ops));
    memmove(kb->ops + at + 1, kb->ops + at, (kb->nops - at) * sizeof(*kb->ops));
    kb->ops[at] = *op;
    kb->nops++;
    pthread_cond_signal(&kb->wake);
}

static void op_push_locked(spw_kube_t *kb, const kop_t *op)
{
    op_insert_locked(kb, kb->nops, op);
}

static void op_push(spw_kube_t *kb, const kop_t *op)
{
    pthread_mutex_lock(&kb->lock);
    op_push_locked(kb, op);
    pthread_mutex_unlock(&kb->lock);
}

/* ---- the caller's side --------------------------------------------------- */

static kjob_t *job_by_token(spw_kube_t *kb, const char *token, size_t *at)
{
    for (size_t i = 0; i < kb->njobs; i++)
        if (strcmp(kb->jobs[i].h.token, token) == 0) {
            if (at)
                *at = i;
            return &kb->jobs[i];
        }
    return NULL;
}

static void job_remove(spw_kube_t *kb, size_t i)
{
    kb->jobs[i] = kb->jobs[--kb->njobs];
}

static void exit_push(spw_kube_t *kb, const spw_exit_t *e)
{
    kb->exits = spw_xrealloc(kb->exits, (kb->nexits + 1) * sizeof(*kb->exits));
    kb->exits[kb->nexits++] = *e;
}

static void change_push(spw_kube_t *kb, const spw_handle_t *h)
{
    kb->changes = spw_xrealloc(kb->changes, (kb->nchanges + 1) * sizeof(*kb->changes));
    kb->changes[kb->nchanges++] = *h;
}

static int kube_launch(void *be, const spw_launch_t *req, spw_handle_t *out, spw_error_t *err)
{
    spw_kube_t *kb = be;
    const char *image = req->image && req->image[0] ? req->image : kb->image;
    if (!req->token || !req->token[0])
        return spw_errorf(err, "a Kubernetes launch needs a launch token");
    if (!image)
        return spw_errorf(err, "job %s names no image, and the pool has no default 'image': a "
                               "Kubernetes Job needs a container image", req->job_id);
    if (image[0] == '/' || strncmp(image, "oci-archive:", 12) == 0)
        return spw_errorf(err, "job %s: image %s is a local file; a Kubernetes pool pulls images "
                               "from a registry (name one, e.g. ghcr.io/org/train:1)",
                          req->job_id, image);
    if (req->nodes > 1000)
        return spw_errorf(err, "job %s: a gang of %u nodes is more than 1000", req->job_id,
                          req->nodes);
    if (job_by_token(kb, req->token, NULL))
        return spw_errorf(err, "launch token %s is already tracked", req->token);
    kop_t op = {.kind = OP_CREATE};
    spw_kube_job_name(req->job_id, req->token, op.name);
    snprintf(op.token, sizeof(op.token), "%s", req->token);
    job_body(kb, req, op.name, image, &op.body, &op.svc);
    kb->jobs = spw_xrealloc(kb->jobs, (kb->njobs + 1) * sizeof(*kb->jobs));
    kjob_t *j = &kb->jobs[kb->njobs++];
    memset(j, 0, sizeof(*j));
    snprintf(j->h.job_id, sizeof(j->h.job_id), "%s", req->job_id);
    snprintf(j->h.token, sizeof(j->h.token), "%s", req->token);
    j->h.started_s = req->now_s;
    j->h.max_runtime_s = req->max_runtime_s;
    snprintf(j->name, sizeof(j->name), "%s", op.name);
    j->nodes = req->nodes > 1 ? req->nodes : 1;
    snprintf(j->log_dir, sizeof(j->log_dir), "%s", req->log_dir ? req->log_dir : "");
    *out = j->h;
    op_push(kb, &op);
    return 0;
}

static json_t *job_pods(spw_kube_t *kb, const char *name, int *found, spw_exit_kind_t *kind,
                        int *status);

/* What a cluster can do: SIGTERM (or SIGINT) deletes the Job's pods with
 * gracePeriodSeconds kill_grace_s, so the kubelet sends SIGTERM and SIGKILL
 * after the grace; SIGKILL deletes them with gracePeriodSeconds 0.  Other
 * signals would need pods/exec and a kill(1) in the image: refused.  The
 * Job has backoffLimit 0: its pods' end is the Job's. */
static int kube_signal(void *be, const spw_handle_t *h, int signum, spw_error_t *err)
{
    spw_kube_t *kb = be;
    kjob_t *j = job_by_token(kb, h->token, NULL);
    if (!j)
        return spw_errorf(err, "job %s is not tracked", h->job_id);
    if (signum != SIGTERM && signum != SIGINT && signum != SIGKILL)
        return spw_errorf(err, "a Kubernetes pool can send only SIGTERM (then SIGKILL after "
                               "kill_grace_s) or SIGKILL to a job's pods, not signal %d",
                          signum);
    if (!j->created)
        return spw_errorf(err, "job %s: its Job is not created yet", h->job_id);
    int found;
    spw_exit_kind_t kind;
    int status;
    pthread_mutex_lock(&kb->lock);
    json_t *pods = job_pods(kb, j->name, &found, &kind, &status);
    if (json_array_size(pods) == 0) {
        pthread_mutex_unlock(&kb->lock);
        json_decref(pods);
        return spw_errorf(err, "job %s: its Job has no pod yet", h->job_id);
    }
    json_object_set_new(kb->signalled, j->name, json_true());
    kop_t op = {.kind = OP_SIGNAL, .pods = pods,
                .grace_s = signum == SIGKILL ? 0 : (int)kb->kill_grace_s};
    snprintf(op.name, sizeof(op.name), "%s", j->name);
    snprintf(op.token, sizeof(op.token), "%s", j->h.token);
    op_push_locked(kb, &op);
    pthread_mutex_unlock(&kb->lock);
    return 0;
}

static int kube_cancel(void *be, const spw_handle_t *h, double now_s, spw_error_t *err)
{
    spw_kube_t *kb = be;
    kjob_t *j = job_by_token(kb, h->token, NULL);
    (void)now_s;
    if (!j)
        return spw_errorf(err, "job %s is not tracked", h->job_id);
    if (j->cancel)
        return 0;
    j->cancel = 1;
    /* A create still queued is dropped: no Job, no pod that starts after
     * the cancel was answered. */
    pthread_mutex_lock(&kb->lock);
    for (size_t i = 0; !j->created && i < kb->nops; i++)
        if (kb->ops[i].kind == OP_CREATE && strcmp(kb->ops[i].token, j->h.token) == 0) {
            free(kb->ops[i].body);
            free(kb->ops[i].svc);
            memmove(kb->ops + i, kb->ops + i + 1, (kb->nops - i - 1) * sizeof(*kb->ops));
            kb->nops--;
            pthread_mutex_unlock(&kb->lock);
            spw_exit_t e = {.handle = j->h, .kind = SPW_EXIT_SIGNALED, .status = 15,
                            .cause = SPW_CAUSE_CANCELLED};
            exit_push(kb, &e);
            job_remove(kb, (size_t)(j - kb->jobs));
            return 0;
        }
    kop_t op = {.kind = OP_DELETE};
    snprintf(op.name, sizeof(op.name), "%s", j->name);
    snprintf(op.token, sizeof(op.token), "%s", j->h.token);
    /* Ahead of other Jobs' work, so that the daemon's answer (cancel_wait)
     * waits for one request in progress at most; behind this Job's own
     * (its logs being copied), and after its create when that is in
     * progress: no cancel is lost. */
    size_t at = 0;
    for (size_t i = 0; i < kb->nops; i++)
        if (strcmp(kb->ops[i].token, j->h.token) == 0)
            at = i + 1;
    op_insert_locked(kb, at, &op);
    pthread_mutex_unlock(&kb->lock);
    return 0;
}

/* Waits while an op of `token` is queued or in progress: its Job's delete
 * (and its create, when the delete waits behind it) is then answered. */
static int kube_cancel_wait(void *be, const char *token, double deadline_s)
{
    spw_kube_t *kb = be;
    struct timespec until = {.tv_sec = (time_t)deadline_s};
    until.tv_nsec = (long)((deadline_s - (double)until.tv_sec) * 1e9);
    int rc = 0;
    pthread_mutex_lock(&kb->lock);
    for (;;) {
        int pending = strcmp(kb->busy, token) == 0;
        for (size_t i = 0; !pending && i < kb->nops; i++)
            pending = kb->ops[i].kind == OP_DELETE && strcmp(kb->ops[i].token, token) == 0;
        if (!pending || kb->stop)
            break;
        if (pthread_cond_timedwait(&kb->done, &kb->lock, &until) == ETIMEDOUT) {
            rc = 1;
            break;
        }
    }
    pthread_mutex_unlock(&kb->lock);
    return rc;
}

static const char *cond_true(const json_t *job, const char *type, const char **reason)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(job, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0) {
            if (reason)
                *reason = json_string_value(json_object_get(c, "reason"));
            return t;
        }
    }
    return NULL;
}

static const char *pod_label(const json_t *pod, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"), key));
}

/* The pods of Job name (rank order), and the first non-zero exit among
 * their containers (*kind, *status; *found 0 if none). */
static json_t *job_pods(spw_kube_t *kb, const char *name, int *found, spw_exit_kind_t *kind,
                        int *status)
{
    json_t *names = json_array();
    json_t *p;
    const char *key;
    *found = 0;
    for (int pass = 0; pass < 2; pass++)
    json_object_foreach(pass ? kb->pods_gone : kb->w[W_PODS].objs, key, p) {
        const char *jn = pod_label(p, L_JOBNAME);
        if (!jn || strcmp(jn, name) != 0)
            continue;
        const char *idx = pod_label(p, "batch.kubernetes.io/job-completion-index");
        size_t at = idx ? strtoul(idx, NULL, 10) : 0;
        const char *pn = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        while (json_array_size(names) <= at)
            json_array_append_new(names, json_null());
        if (json_is_null(json_array_get(names, at)))
            json_array_set_new(names, at, json_string(pn));
        size_t k;
        json_t *cs;
        json_array_foreach(json_object_get(json_object_get(p, "status"), "containerStatuses"), k,
                           cs) {
            json_t *t = json_object_get(json_object_get(cs, "state"), "terminated");
            if (!t || *found == 1)
                continue;
            json_int_t code = json_integer_value(json_object_get(t, "exitCode"));
            json_int_t sig = json_integer_value(json_object_get(t, "signal"));
            if (sig > 0) {
                *kind = SPW_EXIT_SIGNALED;
                *status = (int)sig;
                *found = 1;
            } else if (code != 0 || !*found) {
                *kind = SPW_EXIT_EXITED;
                *status = (int)code;
                *found = code != 0 ? 1 : 2;
            }
        }
    }
    /* Drop ranks with no pod (gone). */
    for (size_t k = json_array_size(names); k-- > 0;)
        if (json_is_null(json_array_get(names, k)))
            json_array_remove(names, k);
    return names;
}

/* Ends j with e: its logs are copied first (OP_LOGS), then poll() has it.
 * Lock held. */
static void job_end(spw_kube_t *kb, kjob_t *j, spw_exit_kind_t kind, int status,
                    spw_exit_cause_t cause, json_t *pods)
{
    j->ending = 1;
    memset(&j->exit, 0, sizeof(j->exit));
    j->exit.handle = j->h;
    j->exit.kind = kind;
    j->exit.status = status;
    j->exit.cause = cause;
    kop_t op = {.kind = OP_LOGS, .pods = pods};
    snprintf(op.name, sizeof(op.name), "%s", j->name);
    snprintf(op.token, sizeof(op.token), "%s", j->h.token);
    snprintf(op.job_id, sizeof(op.job_id), "%s", j->h.job_id);
    snprintf(op.log_dir, sizeof(op.log_dir), "%s", j->log_dir[0] ? j->log_dir : kb->log_dir);
    op_push_locked(kb, &op);
}

/* How long a Job that ended without an exit code (its node lost, or the
 * Job deleted behind spillway's back) is held before it is reported LOST,
 * seconds: long enough for the daemon to see its node down first (it reads
 * the nodes every 2 s) and fail the job over with a cancel. */
#define LOST_HOLD_S 10.0

/* Ends j as lost (or cancelled, when the daemon cancelled it meanwhile)
 * once it has been lost LOST_HOLD_S; takes pods.  Lock held. */
static void end_lost(spw_kube_t *kb, kjob_t *j, json_t *pods)
{
    if (j->cancel) {
        job_end(kb, j, SPW_EXIT_SIGNALED, 15, SPW_CAUSE_CANCELLED, pods);
        return;
    }
    if (j->lost_s == 0)
        j->lost_s = kb->now_s;
    if (kb->now_s - j->lost_s >= LOST_HOLD_S) {
        job_end(kb, j, SPW_EXIT_LOST, -1, SPW_CAUSE_NONE, pods);
    } else {
        kb->holding = 1;
        json_decref(pods);
    }
}

/* Applies what the watches say to every tracked Job (lock held). */
static void apply_listing(spw_kube_t *kb)
{
    kwatch_t *w = &kb->w[W_JOBS];
    kb->holding = 0;
    for (size_t i = 0; i < kb->njobs; i++) {
        kjob_t *j = &kb->jobs[i];
        if (!j->created || j->ending)
            continue;
        json_t *job = json_object_get(w->objs, j->name);
        if (!job) {
            /* Gone when a watch saw it deleted, or a list made after its
             * create lacks it (not yet seen is not gone). */
            if (w->gen > j->create_seq || json_object_get(w->gone, j->name))
                end_lost(kb, j, json_array());
            continue;
        }
        int suspended = json_is_true(json_object_get(json_object_get(job, "spec"), "suspend"));
        if (!j->reported && !suspended) {
            j->reported = 1;
            change_push(kb, &j->h);
        }
        const char *why = NULL;
        int found;
        spw_exit_kind_t kind = SPW_EXIT_LOST;
        int status = -1;
        if (cond_true(job, "Complete", NULL)) {
            job_end(kb, j, SPW_EXIT_EXITED, 0, SPW_CAUSE_NONE,
                    job_pods(kb, j->name, &found, &kind, &status));
        } else if (cond_true(job, "Failed", &why)) {
            json_t *pods = job_pods(kb, j->name, &found, &kind, &status);
            if (why && strcmp(why, "DeadlineExceeded") == 0)
                job_end(kb, j, SPW_EXIT_SIGNALED, 9, SPW_CAUSE_MAX_RUNTIME, pods);
            else if (j->cancel)
                job_end(kb, j, SPW_EXIT_SIGNALED, 15, SPW_CAUSE_CANCELLED, pods);
            else if (found == 1)
                job_end(kb, j, kind, status, SPW_CAUSE_NONE, pods);
            else
                end_lost(kb, j, pods);
        }
    }
    /* A fenced token's Job (a create of a dead daemon, late): delete it. */
    const char *name;
    json_t *job;
    if (!kb->nfenced)
        return;
    json_object_foreach(w->objs, name, job) {
        const char *t = ann_token(job);
        if (json_object_get(json_object_get(job, "metadata"), "deletionTimestamp"))
            continue;   /* asked already */
        for (size_t f = 0; t && f < kb->nfenced; f++)
            if (strcmp(kb->fenced[f], t) == 0 && !job_by_token(kb, t, NULL)) {
                kop_t op = {.kind = OP_DELETE};
                snprintf(op.name, sizeof(op.name), "%s", name);
                snprintf(op.token, sizeof(op.token), "%s", t);
                op_push_locked(kb, &op);
            }
    }
}

static void kube_tick(void *be, double now_s)
{
    spw_kube_t *kb = be;
    pthread_mutex_lock(&kb->lock);
    kb->now_s = now_s;
    kres_t *res = kb->res;
    size_t nres = kb->nres;
    kb->res = NULL;
    kb->nres = 0;
    pthread_mutex_unlock(&kb->lock);
    for (size_t r = 0; r < nres; r++) {
        size_t i;
        kjob_t *j = job_by_token(kb, res[r].token, &i);
        if (!j)
            continue;
        if (res[r].kind == OP_CREATE && res[r].ok) {
            j->created = 1;
            kb->dirty = 1;   /* its Job's events may all have come already */
            j->create_seq = res[r].seq;
            snprintf(j->h.ext, sizeof(j->h.ext), "%s", j->name);
        } else if (res[r].kind == OP_CREATE) {
            spw_exit_t e = {.handle = j->h, .kind = SPW_EXIT_NOT_STARTED, .status = -1};
            snprintf(e.reason, sizeof(e.reason), "%s", res[r].msg);
            exit_push(kb, &e);
            job_remove(kb, i);
        } else if (res[r].kind == OP_LOGS) {
            exit_push(kb, &j->exit);
            job_remove(kb, i);
        }
    }
    free(res);
    pthread_mutex_lock(&kb->lock);
    watch_start_locked(kb);
    /* On news, and once a second for the Jobs held as lost (LOST_HOLD_S). */
    uint64_t ver = kb->w[W_JOBS].ver + kb->w[W_PODS].ver;
    int listed = kb->w[W_JOBS].gen && kb->w[W_PODS].gen;
    if (listed && (ver != kb->applied_ver || kb->dirty ||
                   (kb->holding && now_s - kb->last_apply_s >= 1))) {
        kb->applied_ver = ver;
        kb->last_apply_s = now_s;
        kb->dirty = 0;
        apply_listing(kb);
    }
    pthread_mutex_unlock(&kb->lock);
}

static int kube_poll(void *be, spw_exit_t *exits, size_t max)
{
    spw_kube_t *kb = be;
    return spw_queue_take(kb->exits, &kb->nexits, sizeof(*kb->exits), exits, max);
}

static int kube_changed(void *be, spw_handle_t *out, size_t max)
{
    spw_kube_t *kb = be;
    return spw_queue_take(kb->changes, &kb->nchanges, sizeof(*kb->changes), out, max);
}

/* The Jobs' list for adopt()/find(): waits (at most twice the request
 * timeout) for the Jobs' watch to have listed once.  0, or -1 with err. */
static int have_listing(spw_kube_t *kb, spw_error_t *err)
{
    kwatch_t *w = &kb->w[W_JOBS];
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(2 * kb->timeout_s) + 1;
    pthread_mutex_lock(&kb->lock);
    watch_start_locked(kb);
    while (!w->gen && !w->err[0] &&
           pthread_cond_timedwait(&kb->wwake, &kb->lock, &until) != ETIMEDOUT)
        ;
    int rc = w->gen ? 0
                    : spw_errorf(err, "cannot list the cluster's Jobs: %s",
                                 w->err[0] ? w->err : "no answer");
    pthread_mutex_unlock(&kb->lock);
    return rc;
}

/* Tracks the listed Job carrying token as h (lock not held). */
static int track_listed(spw_kube_t *kb, const char *token, const spw_handle_t *h,
                        spw_handle_t *out)
{
    pthread_mutex_lock(&kb->lock);
    const char *name;
    json_t *job, *hit = NULL;
    /* The name is the token's ("DAEMON.JOBID.ATTEMPT"): one look-up; a
     * scan only for a Job named otherwise. */
    char jid_of[SPW_JOB_ID_MAX], byname[64];
    const char *d1 = strchr(token, '.'), *d2 = d1 ? strrchr(token, '.') : NULL;
    if (d1 && d2 > d1 + 1 && (size_t)(d2 - d1 - 1) < sizeof(jid_of)) {
        snprintf(jid_of, sizeof(jid_of), "%.*s", (int)(d2 - d1 - 1), d1 + 1);
        spw_kube_job_name(jid_of, token, byname);
        json_t *cand = json_object_get(kb->w[W_JOBS].objs, byname);
        const char *t = ann_token(cand);
        if (t && strcmp(t, token) == 0)
            hit = cand;
    }
    if (!hit)
        json_object_foreach(kb->w[W_JOBS].objs, name, job) {
            const char *t = ann_token(job);
            if (t && strcmp(t, token) == 0) {
                hit = job;
                break;
            }
        }
    if (!hit) {
        pthread_mutex_unlock(&kb->lock);
        return 0;
    }
    json_t *md = json_object_get(hit, "metadata");
    name = json_string_value(json_object_get(md, "name"));
    const char *jid = json_string_value(json_object_get(json_object_get(md, "annotations"), A_JOBID));
    json_t *comp = json_object_get(json_object_get(hit, "spec"), "completions");
    int suspended = json_is_true(json_object_get(json_object_get(hit, "spec"), "suspend"));
    uint64_t seq = kb->w[W_JOBS].lists;
    kb->dirty = 1;
    pthread_mutex_unlock(&kb->lock);
    kb->jobs = spw_xrealloc(kb->jobs, (kb->njobs + 1) * sizeof(*kb->jobs));
    kjob_t *j = &kb->jobs[kb->njobs++];
    memset(j, 0, sizeof(*j));
    if (h)
        j->h = *h;
    snprintf(j->h.token, sizeof(j->h.token), "%s", token);
    if (!h)
        snprintf(j->h.job_id, sizeof(j->h.job_id), "%s", jid ? jid : "");
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->h.ext, sizeof(j->h.ext), "%s", name);
    /* The daemon's layout: LOG_DIR/JOBID/ (launch.c). */
    snprintf(j->log_dir, sizeof(j->log_dir), "%s/%s", kb->log_dir, j->h.job_id);
    j->nodes = comp ? (uint32_t)json_integer_value(comp) : 1;
    j->created = 1;
    j->create_seq = seq;
    j->reported = !suspended;
    if (out)
        *out = j->h;
    return 1;
}

static int kube_adopt(void *be, const spw_handle_t *h, spw_error_t *err)
{
    spw_kube_t *kb = be;
    if (job_by_token(kb, h->token, NULL))
        return 0;
    if (have_listing(kb, err) < 0)
        return -1;
    if (track_listed(kb, h->token, h, NULL))
        return 0;
    errno = ESRCH;
    return spw_errorf(err, "no Kubernetes Job carries launch token %s (its Job is gone)",
                      h->token);
}

static int kube_find(void *be, const char *token, spw_handle_t *out, spw_error_t *err)
{
    spw_kube_t *kb = be;
    kjob_t *j = job_by_token(kb, token, NULL);
    if (j) {
        *out = j->h;
        return 1;
    }
    if (have_listing(kb, err) < 0)
        return -1;
    if (track_listed(kb, token, NULL, out))
        return 1;
    kb->fenced = spw_xrealloc(kb->fenced, (kb->nfenced + 1) * sizeof(char *));
    kb->fenced[kb->nfenced++] = spw_xstrdup(token);
    return 0;
}

static int kube_nodes(void *be, spw_backend_node_t **out, size_t *n, spw_error_t *err)
{
    spw_kube_t *kb = be;
    pthread_mutex_lock(&kb->lock);
    double now_s = kb->now_s;
    pthread_mutex_unlock(&kb->lock);
    return read_nodes(kb, now_s, out, n, err);
}

static int kube_nodes_async(void *be, spw_backend_node_t **out, size_t *n, spw_error_t *err)
{
    spw_kube_t *kb = be;
    kwatch_t *w = &kb->w[W_NODES];
    int rc = 0;
    pthread_mutex_lock(&kb->lock);
    watch_start_locked(kb);
    if (w->gen && w->ver != kb->nodes_ver) {
        kb->nodes_ver = w->ver;
        nodes_of(w->objs, out, n);
        rc = 1;
    } else if (w->err[0]) {
        rc = spw_errorf(err, "cannot read the cluster's nodes: %s", w->err);
        w->err[0] = '\0';
    }
    pthread_mutex_unlock(&kb->lock);
    return rc;
}

static void kube_set_nodes(void *be, const spw_backend_node_t *nodes, size_t n)
{
    spw_kube_t *kb = be;
    for (size_t i = 0; i < kb->nnodes; i++)
        free(kb->node_names[i]);
    free(kb->node_names);
    kb->node_names = spw_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        kb->node_names[i] = spw_xstrdup(nodes[i].name);
    kb->nnodes = n;
}

static int kube_node_index(void *be, const char *name)
{
    spw_kube_t *kb = be;
    for (size_t i = 0; i < kb->nnodes; i++)
        if (strcmp(kb->node_names[i], name) == 0)
            return (int)i;
    return -1;
}

static uint32_t pod_gpus(const json_t *pod)
{
    uint32_t g = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c) {
        json_t *r = json_object_get(c, "resources");
        const char *v = json_string_value(json_object_get(json_object_get(r, "limits"), GPU));
        if (!v)
            v = json_string_value(json_object_get(json_object_get(r, "requests"), GPU));
        g += v ? (uint32_t)strtoul(v, NULL, 10) : 0;
    }
    return g;
}

static int kube_foreign_async(void *be, const char *own_prefix, spw_backend_foreign_t **out,
                              size_t *n, spw_error_t *err)
{
    spw_kube_t *kb = be;
    kwatch_t *w = &kb->w[W_PODS];
    pthread_mutex_lock(&kb->lock);
    watch_start_locked(kb);
    if (!w->gen || w->ver == kb->foreign_ver) {
        int rc = w->err[0] && !w->gen
                     ? spw_errorf(err, "cannot list the cluster's pods: %s", w->err)
                     : 0;
        pthread_mutex_unlock(&kb->lock);
        return rc;
    }
    kb->foreign_ver = w->ver;
    spw_backend_foreign_t *v = spw_xcalloc(json_object_size(w->objs) + 1, sizeof(*v));
    size_t k = 0;
    const char *key;
    json_t *p;
    json_object_foreach(w->objs, key, p) {
        const char *t = ann_token(p);
        const char *phase =
            json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        uint32_t g = pod_gpus(p);
        if ((t && own_prefix && strncmp(t, own_prefix, strlen(own_prefix)) == 0) || !node || !g ||
            !phase || (strcmp(phase, "Running") != 0 && strcmp(phase, "Pending") != 0))
            continue;
        size_t f = 0;
        while (f < k && strcmp(v[f].name, node) != 0)
            f++;
        if (f == k)
            snprintf(v[k++].name, sizeof(v[0].name), "%s", node);
        v[f].gpus += g;
    }
    pthread_mutex_unlock(&kb->lock);
    *out = v;
    *n = k;
    return 1;
}

uint64_t spw_kube_creates(const spw_kube_t *kb)
{
    pthread_mutex_lock((pthread_mutex_t *)&kb->lock);
    uint64_t c = kb->creates;
    pthread_mutex_unlock((pthread_mutex_t *)&kb->lock);
    return c;
}

void spw_kube_watch_stats(spw_kube_t *kb, spw_kube_watch_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&kb->lock);
    for (int k = 0; k < W_COUNT; k++) {
        out->lists += kb->w[k].lists;
        out->relists += kb->w[k].relists;
        out->events += kb->w[k].events;
    }
    out->job_events = kb->w[W_JOBS].events;
    pthread_mutex_unlock(&kb->lock);
}

/* ---- lifecycle --------------------------------------------------------- */

/* The pool's pod spec members (nodeSelector, tolerations, priorityClassName). */
static json_t *template_extra(const spw_kube_opts_t *o, spw_error_t *err)
{
    json_t *x = json_object();
    if (o->node_selector && o->node_selector[0]) {
        json_t *sel = json_object();
        for (size_t i = 0; o->node_selector[i]; i++) {
            const char *eq = strchr(o->node_selector[i], '=');
            if (!eq || eq == o->node_selector[i]) {
                json_decref(sel);
                json_decref(x);
                return spw_errorf(err, "node_selector entry '%s' is not KEY=VALUE",
                                  o->node_selector[i]),
                       NULL;
            }
            char key[256];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - o->node_selector[i]),
                     o->node_selector[i]);
            json_object_set_new(sel, key, json_string(eq + 1));
        }
        json_object_set_new(x, "nodeSelector", sel);
    }
    if (o->tolerations_json) {
        json_t *t = json_loads(o->tolerations_json, 0, NULL);
        if (!json_is_array(t)) {
            json_decref(t);
            json_decref(x);
            return spw_errorf(err, "%s", "tolerations must be a list of Toleration objects"), NULL;
        }
        json_object_set_new(x, "tolerations", t);
    }
    if (o->priority_class && o->priority_class[0])
        json_object_set_new(x, "priorityClassName", json_string(o->priority_class));
    return x;
}

spw_kube_t *spw_kube_create(const spw_kube_opts_t *o, spw_error_t *err)
{
    if (!o->log_dir)
        return spw_errorf(err, "%s", "a Kubernetes backend needs the daemon's log directory"),
               NULL;
    json_t *extra = template_extra(o, err);
    if (!extra)
        return NULL;
    spw_kubeconfig_t *kc = spw_kubeconfig_load(o->kubeconfig, o->context, err);
    if (!kc) {
        json_decref(extra);
        return NULL;
    }
    spw_kube_api_t *api = spw_kube_api_create(kc, o->timeout_s, err);
    if (!api) {
        spw_kubeconfig_destroy(kc);
        json_decref(extra);
        return NULL;
    }
    spw_kube_t *kb = spw_xcalloc(1, sizeof(*kb));
    kb->kc = kc;
    kb->api = api;
    const char *ns = o->ns && o->ns[0] ? o->ns : spw_kubeconfig_namespace(kc);
    snprintf(kb->ns, sizeof(kb->ns), "%s", ns ? ns : "default");
    kb->log_dir = spw_xstrdup(o->log_dir);
    kb->template_extra = extra;
    kb->local_queue = o->local_queue && o->local_queue[0] ? spw_xstrdup(o->local_queue) : NULL;
    kb->image = o->image && o->image[0] ? spw_xstrdup(o->image) : NULL;
    kb->kill_grace_s = o->kill_grace_s > 0 ? o->kill_grace_s : 10;
    kb->ttl_s = o->ttl_after_finished_s > 0 ? o->ttl_after_finished_s : 3600;
    kb->timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
    kb->watch_s = o->watch_timeout_s > 0 ? (unsigned)o->watch_timeout_s : 300;
    kb->last_apply_s = -1e18;
    pthread_mutex_init(&kb->lock, NULL);
    pthread_cond_init(&kb->wake, NULL);
    pthread_cond_init(&kb->done, NULL);
    pthread_cond_init(&kb->wwake, NULL);
    static const char *const paths[W_COUNT] = {"/apis/batch/v1/namespaces/%s/jobs", "/api/v1/pods",
                                               "/api/v1/nodes"};
    for (int k = 0; k < W_COUNT; k++) {
        kwatch_t *w = &kb->w[k];
        w->kb = kb;
        w->kind = (watch_kind_t)k;
        snprintf(w->path, sizeof(w->path), paths[k], kb->ns);
        w->selector = k == W_JOBS ? L_DAEMON : NULL;
        w->objs = json_object();
        w->gone = json_object();
    }
    kb->pods_gone = json_object();
    kb->signalled = json_object();
    int started = pthread_create(&kb->thread, NULL, worker, kb) == 0;
    for (int k = 0; started && k < W_COUNT; k++)
        started = kb->w[k].running =
            pthread_create(&kb->w[k].thread, NULL, watcher, &kb->w[k]) == 0;
    if (!started) {
        spw_kube_destroy(kb);
        return spw_errorf(err, "%s", "cannot start the Kubernetes backend's threads"), NULL;
    }
    return kb;
}

void spw_kube_destroy(spw_kube_t *kb)
{
    if (!kb)
        return;
    pthread_mutex_lock(&kb->lock);
    kb->stop = 1;
    pthread_cond_broadcast(&kb->wake);
    pthread_cond_broadcast(&kb->wwake);
    pthread_cond_broadcast(&kb->done);
    pthread_mutex_unlock(&kb->lock);
    if (kb->thread)
        pthread_join(kb->thread, NULL);
    while (kb->nfollows)
        follow_end(kb, kb->follows[0]->pod, "");
    free(kb->follows);
    json_decref(kb->pods_gone);
    json_decref(kb->signalled);
    for (int k = 0; k < W_COUNT; k++) {
        if (kb->w[k].running)
            pthread_join(kb->w[k].thread, NULL);
        json_decref(kb->w[k].objs);
        json_decref(kb->w[k].gone);
    }
    for (size_t i = 0; i < kb->nops; i++) {
        free(kb->ops[i].body);
        free(kb->ops[i].svc);
        json_decref(kb->ops[i].pods);
    }
    free(kb->ops);
    free(kb->res);
    for (size_t i = 0; i < kb->nfenced; i++)
        free(kb->fenced[i]);
    free(kb->fenced);
    for (size_t i = 0; i < kb->nnodes; i++)
        free(kb->node_names[i]);
    free(kb->node_names);
    free(kb->jobs);
    free(kb->exits);
    free(kb->changes);
    json_decref(kb->template_extra);
    free(kb->log_dir);
    free(kb->local_queue);
    free(kb->image);
    spw_kube_api_destroy(kb->api);
    spw_kubeconfig_destroy(kb->kc);
    pthread_mutex_destroy(&kb->lock);
    pthread_cond_destroy(&kb->wake);
    pthread_cond_destroy(&kb->done);
    pthread_cond_destroy(&kb->wwake);
    free(kb);
}

static void kube_destroy(void *be)
{
    spw_kube_destroy(be);
}

const struct spw_backend_ops spw_kube_ops = {
    .version = SPW_BACKEND_VERSION,
    .name = "kubernetes",
    .launch = kube_launch,
    .signal = kube_signal,
    .cancel = kube_cancel,
    .cancel_wait = kube_cancel_wait,
    .tick = kube_tick,
    .poll = kube_poll,
    .adopt = kube_adopt,
    .destroy = kube_destroy,
    .find = kube_find,
    .changed = kube_changed,
    .nodes = kube_nodes,
    .nodes_async = kube_nodes_async,
    .set_nodes = kube_set_nodes,
    .node_index = kube_node_index,
    .foreign_async = kube_foreign_async,
};
