/* command.c: the command cloud provider: a site's executables, run on the
 * account's op thread, behind struct spw_provider_ops (command.h has the
 * contract). */
#include "providers/command/command.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/run.h"
#include "util/strbuf.h"

/* One instance the provider tracks: live ones, and ended ones whose release
 * the site has not confirmed yet. */
typedef struct cinst {
    spw_instance_t v;           /* the daemon's view of it */
    char token[SPW_ACQUIRE_TOKEN_MAX]; /* its acquisition's token; "" when
                                   adopted by reconcile() */
    int answered;               /* the site answered its acquire (v.cloud_id
                                   set) */
    int release_owed;           /* the daemon released it, the site has not
                                   confirmed yet */
    int releasing;              /* a release of it is in flight */
} cinst_t;

/* The site's operations, in the order of their option names. */
enum { OP_ACQUIRE, OP_DESCRIBE, OP_RELEASE, OP_LIST, NOPS };
static const char *const op_names[NOPS] = {"acquire", "describe", "release", "list"};

/* One command to run on the op thread, and its answer. */
typedef struct op {
    int kind;                   /* OP_* */
    char *in;                   /* owned: the JSON written to its stdin */
    char token[SPW_ACQUIRE_TOKEN_MAX]; /* acquire: whose instances */
    json_t *ids;                /* owned: describe, release: the site ids asked */
    int status;                 /* exit status, or -1: could not run */
    char *out;                  /* owned: its stdout (NULL when -1) */
    char err[256];              /* why it failed */
    struct op *next;            /* the queue or the done list */
} op_t;

struct spw_command {
    char *name;                 /* owned: the account's name */
    char *daemon_id;            /* owned: the spillway:daemon tag */
    const spw_offer_t *offers;  /* borrowed */
    size_t noffers;
    char *cmd[NOPS];            /* owned command lines; cmd[OP_LIST] may be NULL */
    double timeout_s;           /* limit of one command, seconds */
    double describe_every_s;    /* least time between describes, seconds */
    double boot_timeout_s;      /* most time an instance may boot, seconds */
    int dry_run;                /* passed on to the site */
    cinst_t *inst;              /* tracked instances (scheduler thread only) */
    size_t ninst, capinst;
    spw_inst_event_t *ev;       /* queued events, oldest first */
    size_t nev, capev;
    double last_describe_s;     /* daemon clock of the last describe asked */
    int describe_busy;          /* a describe is queued or running */
    /* Shared with the op thread and health()'s callers, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int stop;                   /* destroy asked the thread to end */
    op_t *q_head, *q_tail;      /* queued (FIFO) */
    op_t *d_head, *d_tail;      /* done, not yet applied by poll() (FIFO) */
    char health[256];           /* why the account cannot launch; "" = it can */
};

/* ---- the op thread ------------------------------------------------------ */

static void op_free(op_t *op)
{
    if (!op)
        return;
    free(op->in);
    free(op->out);
    json_decref(op->ids);
    free(op);
}

static void op_run(spw_command_t *c, op_t *op)
{
    const char *argv[] = {"/bin/sh", "-c", c->cmd[op->kind], NULL};
    char name[64];
    snprintf(name, sizeof(name), "the %s command", op_names[op->kind]);
    spw_run_t r = {.path = "/bin/sh", .argv = argv, .in = op->in, .timeout_s = c->timeout_s,
                   .where = "/bin", .name = name};
    spw_error_t e;
    op->status = spw_run(&r, &op->out, &e);
    if (op->status != 0)
        snprintf(op->err, sizeof(op->err), "%.200s", e.text);
}

/* Appends op to the FIFO head..tail. */
static void fifo_push(op_t **head, op_t **tail, op_t *op)
{
    if (*tail)
        (*tail)->next = op;
    else
        *head = op;
    *tail = op;
}

/* Runs queued commands one at a time.  At destroy it still runs the queued
 * releases (so that nothing released keeps billing), and drops the rest. */
static void *op_thread(void *arg)
{
    spw_command_t *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->stop && !c->q_head)
            pthread_cond_wait(&c->cv, &c->mu);
        op_t *op = c->q_head;
        if (!op)
            break;
        c->q_head = op->next;
        if (!c->q_head)
            c->q_tail = NULL;
        op->next = NULL;
        if (c->stop && op->kind != OP_RELEASE) {
            op_free(op);
            continue;
        }
        pthread_mutex_unlock(&c->mu);
        op_run(c, op);
        pthread_mutex_lock(&c->mu);
        fifo_push(&c->d_head, &c->d_tail, op);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void op_queue(spw_command_t *c, op_t *op, json_t *in)
{
    op->in = json_dumps(in, JSON_COMPACT);
    json_decref(in);
    pthread_mutex_lock(&c->mu);
    fifo_push(&c->q_head, &c->q_tail, op);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* ---- bookkeeping -------------------------------------------------------- */

static cinst_t *find(spw_command_t *c, const char *id)
{
    for (size_t i = 0; i < c->ninst; i++)
        if (strcmp(c->inst[i].v.id, id) == 0)
            return &c->inst[i];
    return NULL;
}

static cinst_t *find_cloud(spw_command_t *c, const char *cloud_id)
{
    for (size_t i = 0; i < c->ninst; i++)
        if (c->inst[i].answered && strcmp(c->inst[i].v.cloud_id, cloud_id) == 0)
            return &c->inst[i];
    return NULL;
}

static cinst_t *add(spw_command_t *c)
{
    if (c->ninst == c->capinst) {
        c->capinst = c->capinst ? 2 * c->capinst : 16;
        c->inst = spw_xrealloc(c->inst, c->capinst * sizeof(cinst_t));
    }
    cinst_t *x = &c->inst[c->ninst++];
    memset(x, 0, sizeof(*x));
    return x;
}

static void push_event(spw_command_t *c, spw_inst_event_kind_t kind, const cinst_t *x,
                       double t, spw_block_t block, double block_s, const char *reason)
{
    if (c->nev == c->capev) {
        c->capev = c->capev ? 2 * c->capev : 16;
        c->ev = spw_xrealloc(c->ev, c->capev * sizeof(spw_inst_event_t));
    }
    spw_inst_event_t *e = &c->ev[c->nev++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    snprintf(e->instance_id, sizeof(e->instance_id), "%s", x->v.id);
    snprintf(e->job_id, sizeof(e->job_id), "%s", x->v.job_id);
    e->time_s = t;
    e->block = block;
    e->block_s = block_s;
    snprintf(e->reason, sizeof(e->reason), "%s", reason ? reason : "");
}

/* Ends x at t in state st (RELEASED or PREEMPTED), billing stopped. */
static void end_inst(cinst_t *x, spw_instance_state_t st, double t)
{
    x->v.state = st;
    x->v.ended_s = t;
}

static void set_health(spw_command_t *c, const char *why)
{
    pthread_mutex_lock(&c->mu);
    snprintf(c->health, sizeof(c->health), "%s", why);
    pthread_mutex_unlock(&c->mu);
}

/* Queues one release of every instance whose release is owed and can be
 * asked (answered, not already in flight). */
static void queue_releases(spw_command_t *c)
{
    json_t *ids = json_array();
    for (size_t i = 0; i < c->ninst; i++) {
        cinst_t *x = &c->inst[i];
        if (x->release_owed && x->answered && !x->releasing) {
            json_array_append_new(ids, json_string(x->v.cloud_id));
            x->releasing = 1;
        }
    }
    if (json_array_size(ids) == 0) {
        json_decref(ids);
        return;
    }
    op_t *op = spw_xcalloc(1, sizeof(op_t));
    op->kind = OP_RELEASE;
    op->ids = json_incref(ids);
    op_queue(c, op, json_pack("{s:s, s:s, s:o}", "op", "release", "account", c->name, "ids", ids));
}

/* The site's instance state word: 1 live (booting/ready), 0 ended; *ready
 * and *preempted say which. */
static int site_state(const char *s, int *ready, int *preempted)
{
    *ready = s && strcmp(s, "ready") == 0;
    *preempted = s && strcmp(s, "preempted") == 0;
    return s && (strcmp(s, "booting") == 0 || *ready);
}

/* The answer's "error" object as a block, a TTL and a sentence. */
static spw_block_t answer_error(const op_t *op, const json_t *root, double *block_s,
                               char *why, size_t len)
{
    json_t *e = json_object_get(root, "error");
    *block_s = 0;
    if (!json_is_object(e)) {
        snprintf(why, len, "%.190s", op->status == 0 ? "the acquire command answered no "
                 "instances" : op->err);
        return SPW_BLOCK_NONE;
    }
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *bn = json_string_value(json_object_get(e, "block"));
    json_t *ra = json_object_get(e, "retry_after_s");
    if (json_is_number(ra) && json_number_value(ra) > 0)
        *block_s = json_number_value(ra);
    snprintf(why, len, "%s%s%s", code ? code : "error", msg ? ": " : "", msg ? msg : "");
    for (int b = 0; b < SPW_BLOCK_COUNT; b++)
        if (bn && strcmp(bn, spw_block_name((spw_block_t)b)) == 0)
            return (spw_block_t)b;
    return SPW_BLOCK_NONE;
}

static void apply_acquire(spw_command_t *c, op_t *op, double now)
{
    json_t *root = op->out ? json_loads(op->out, 0, NULL) : NULL;
    json_t *arr = json_object_get(root, "instances");
    size_t want = 0;
    for (size_t i = 0; i < c->ninst; i++)
        want += strcmp(c->inst[i].token, op->token) == 0;
    if (op->status == 0 && json_is_array(arr) && json_array_size(arr) == want && want > 0) {
        size_t k = 0;
        set_health(c, "");
        for (size_t i = 0; i < c->ninst; i++) {
            cinst_t *x = &c->inst[i];
            if (strcmp(x->token, op->token) != 0)
                continue;
            json_t *o = json_array_get(arr, k++);
            const char *id = json_string_value(json_object_get(o, "id"));
            const char *addr = json_string_value(json_object_get(o, "addr"));
            snprintf(x->v.cloud_id, sizeof(x->v.cloud_id), "%s", id ? id : "?");
            x->answered = id != NULL;
            if (addr)
                snprintf(x->v.addr, sizeof(x->v.addr), "%s", addr);
            int ready, pre;
            site_state(json_string_value(json_object_get(o, "state")), &ready, &pre);
            if (ready && spw_instance_state_live(x->v.state)) {
                x->v.state = SPW_INSTANCE_READY;
                x->v.ready_s = now;
                push_event(c, SPW_INST_EV_READY, x, now, SPW_BLOCK_NONE, 0, NULL);
            }
        }
        queue_releases(c);  /* released while the site was answering */
        json_decref(root);
        return;
    }
    double block_s;
    char why[200];
    spw_block_t b = answer_error(op, root, &block_s, why, sizeof(why));
    if (b == SPW_BLOCK_ACCOUNT)
        set_health(c, why);
    char reason[256];
    snprintf(reason, sizeof(reason), "account %s: %s: %s", c->name,
             json_is_object(json_object_get(root, "error")) ? "the site refused the acquisition"
                                                             : "the acquisition failed", why);
    for (size_t i = 0; i < c->ninst; i++) {
        cinst_t *x = &c->inst[i];
        if (strcmp(x->token, op->token) != 0)
            continue;
        if (spw_instance_state_live(x->v.state))
            push_event(c, SPW_INST_EV_FAILED, x, now, b, block_s, reason);
        end_inst(x, SPW_INSTANCE_RELEASED, x->v.launched_s);  /* never billed */
        x->release_owed = 0;
    }
    json_decref(root);
}

static void apply_describe(spw_command_t *c, op_t *op, double now)
{
    c->describe_busy = 0;
    json_t *root = op->status == 0 && op->out ? json_loads(op->out, 0, NULL) : NULL;
    json_t *arr = json_object_get(root, "instances");
    if (!json_is_array(arr)) {
        json_decref(root);
        return;  /* a failed describe: asked again at the next interval */
    }
    size_t i;
    json_t *idv;
    json_array_foreach(op->ids, i, idv) {
        cinst_t *x = find_cloud(c, json_string_value(idv));
        if (!x || !spw_instance_state_live(x->v.state))
            continue;
        json_t *o = NULL, *it;
        size_t k;
        json_array_foreach(arr, k, it) {
            const char *id = json_string_value(json_object_get(it, "id"));
            if (id && strcmp(id, x->v.cloud_id) == 0)
                o = it;
        }
        char reason[256];
        if (!o) {
            snprintf(reason, sizeof(reason), "account %s no longer knows instance %s", c->name,
                     x->v.cloud_id);
            end_inst(x, SPW_INSTANCE_RELEASED, now);
            push_event(c, SPW_INST_EV_LOST, x, now, SPW_BLOCK_NONE, 0, reason);
            continue;
        }
        const char *st = json_string_value(json_object_get(o, "state"));
        const char *addr = json_string_value(json_object_get(o, "addr"));
        const char *why = json_string_value(json_object_get(o, "reason"));
        int ready, pre;
        if (site_state(st, &ready, &pre)) {
            if (ready && x->v.state == SPW_INSTANCE_BOOTING) {
                if (addr)
                    snprintf(x->v.addr, sizeof(x->v.addr), "%s", addr);
                x->v.state = SPW_INSTANCE_READY;
                x->v.ready_s = now;
                push_event(c, SPW_INST_EV_READY, x, now, SPW_BLOCK_NONE, 0, NULL);
            }
            continue;
        }
        snprintf(reason, sizeof(reason), "account %s: instance %s %s%s%s", c->name,
                 x->v.cloud_id, st ? st : "in an unknown state", why ? ": " : "", why ? why : "");
        end_inst(x, pre ? SPW_INSTANCE_PREEMPTED : SPW_INSTANCE_RELEASED, now);
        push_event(c, pre ? SPW_INST_EV_PREEMPTED : SPW_INST_EV_LOST, x, now, SPW_BLOCK_NONE, 0,
                   reason);
        x->release_owed = 1;  /* make sure it is gone: releasing an ended one is harmless */
    }
    json_decref(root);
}

static void apply_release(spw_command_t *c, op_t *op)
{
    size_t i;
    json_t *idv;
    json_array_foreach(op->ids, i, idv) {
        cinst_t *x = find_cloud(c, json_string_value(idv));
        if (!x)
            continue;
        x->releasing = 0;
        if (op->status == 0)
            x->release_owed = 0;
    }
}

/* The answer to reconcile()'s list: adopted instances the site had not
 * answered for are found by their spillway id, or are gone. */
static void apply_list(spw_command_t *c, op_t *op, double now)
{
    json_t *root = op->status == 0 && op->out ? json_loads(op->out, 0, NULL) : NULL;
    json_t *arr = json_object_get(root, "instances");
    if (!json_is_array(arr)) {
        json_decref(root);
        return;  /* asked again by the next reconcile; until then they boot */
    }
    for (size_t i = 0; i < c->ninst; i++) {
        cinst_t *x = &c->inst[i];
        if (x->answered || !spw_instance_state_live(x->v.state))
            continue;
        size_t k;
        json_t *it;
        json_array_foreach(arr, k, it) {
            const char *sid = json_string_value(json_object_get(it, "spillway_id"));
            const char *id = json_string_value(json_object_get(it, "id"));
            if (sid && id && strcmp(sid, x->v.id) == 0) {
                snprintf(x->v.cloud_id, sizeof(x->v.cloud_id), "%s", id);
                x->answered = 1;
            }
        }
        if (!x->answered) {
            char reason[200];
            snprintf(reason, sizeof(reason), "account %s has no instance %s (its acquire never "
                     "reached the site)", c->name, x->v.id);
            end_inst(x, SPW_INSTANCE_RELEASED, x->v.launched_s);
            push_event(c, SPW_INST_EV_LOST, x, now, SPW_BLOCK_NONE, 0, reason);
        }
    }
    c->last_describe_s = -INFINITY;  /* describe the ones found at once */
    json_decref(root);
}

/* ---- the ops ------------------------------------------------------------ */

static int token_ok(const char *t)
{
    if (!t || !*t || strlen(t) >= SPW_ACQUIRE_TOKEN_MAX)
        return 0;
    for (const char *p = t; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* spillway's id of instance k of an acquisition: FNV-1a of the token, so
 * the same token always names the same instances. */
static void make_id(const char *token, uint32_t k, char *buf, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)token; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    snprintf(buf, len, "cmd-%016llx-%u", (unsigned long long)h, k);
}

static int cmd_acquire(void *pv, const spw_acquire_t *req, spw_instance_t *out, spw_error_t *err)
{
    spw_command_t *c = pv;
    if (req->offer >= c->noffers || req->count == 0 || req->count > 1000)
        return errno = EINVAL, spw_errorf(err, "account %s: bad request (offer %zu of %zu, "
                                          "%u instances)", c->name, req->offer, c->noffers,
                                          req->count);
    if (!token_ok(req->token))
        return errno = EINVAL, spw_errorf(err, "account %s: an acquisition needs a token of "
                                          "[A-Za-z0-9._-], shorter than %d", c->name,
                                          SPW_ACQUIRE_TOKEN_MAX);
    if (!req->job_id || strlen(req->job_id) >= SPW_INSTANCE_JOB_MAX)
        return errno = EINVAL, spw_errorf(err, "account %s: no job id, or one too long", c->name);
    const spw_offer_t *o = &c->offers[req->offer];
    double price = req->spot ? o->spot_usd_per_h : o->ondemand_usd_per_h;
    if (isnan(price))
        return errno = EINVAL, spw_errorf(err, "account %s: offer %s has no %s price", c->name,
                                          o->instance_type, req->spot ? "spot" : "on-demand");
    size_t have = 0;
    for (size_t i = 0; i < c->ninst; i++)
        have += strcmp(c->inst[i].token, req->token) == 0;
    if (have == req->count) {  /* asked again: what the token bought */
        for (size_t i = 0, k = 0; i < c->ninst; i++)
            if (strcmp(c->inst[i].token, req->token) == 0)
                out[k++] = c->inst[i].v;
        return 0;
    }
    if (have)
        return errno = EINVAL, spw_errorf(err, "account %s: token %s was asked for %zu "
                                          "instances, not %u", c->name, req->token, have,
                                          req->count);
    json_t *ids = json_array();
    for (uint32_t k = 0; k < req->count; k++) {
        cinst_t *x = add(c);
        spw_instance_t *v = &x->v;
        make_id(req->token, k, v->id, sizeof(v->id));
        snprintf(x->token, sizeof(x->token), "%s", req->token);
        snprintf(v->job_id, sizeof(v->job_id), "%s", req->job_id);
        v->offer = req->offer;
        snprintf(v->provider, sizeof(v->provider), "%s", o->provider);
        snprintf(v->region, sizeof(v->region), "%s", o->region);
        snprintf(v->zone, sizeof(v->zone), "%s", o->zone);
        snprintf(v->instance_type, sizeof(v->instance_type), "%s", o->instance_type);
        snprintf(v->account, sizeof(v->account), "%s", c->name);
        v->spot = req->spot;
        v->price_usd_per_h = price;
        v->state = SPW_INSTANCE_BOOTING;
        v->launched_s = req->now_s;
        v->ready_s = req->now_s + o->boot_delay_s;
        v->ended_s = NAN;
        out[k] = *v;
        json_array_append_new(ids, json_string(v->id));
    }
    op_t *op = spw_xcalloc(1, sizeof(op_t));
    op->kind = OP_ACQUIRE;
    snprintf(op->token, sizeof(op->token), "%s", req->token);
    json_t *in = json_pack(
        "{s:s, s:s, s:s, s:i, s:b, s:s, s:o, s:{s:s, s:s, s:s, s:s, s:i, s:f}, "
        "s:{s:s, s:s, s:s}, s:b}",
        "op", "acquire", "account", c->name, "token", req->token, "count", (int)req->count,
        "spot", req->spot, "job", req->job_id, "ids", ids, "offer", "provider", o->provider,
        "region", o->region, "zone", o->zone, "instance_type", o->instance_type, "gpus",
        (int)o->gpus, "price_usd_per_h", price, "tags", "spillway:daemon", c->daemon_id,
        "spillway:job", req->job_id, "spillway:token", req->token, "dry_run", c->dry_run);
    op_queue(c, op, in);
    return 0;
}

static int cmd_release(void *pv, const spw_instance_t *inst, double now_s, spw_error_t *err)
{
    spw_command_t *c = pv;
    cinst_t *x = find(c, inst->id);
    if (!x)
        return errno = ENOENT, spw_errorf(err, "account %s has no instance %s", c->name, inst->id);
    if (!spw_instance_state_live(x->v.state))
        return 0;
    end_inst(x, SPW_INSTANCE_RELEASED, now_s);
    x->release_owed = 1;
    queue_releases(c);  /* not answered yet: asked once the acquire answers */
    return 0;
}

static size_t cmd_poll(void *pv, double now_s, spw_inst_event_t *ev, size_t max)
{
    spw_command_t *c = pv;
    pthread_mutex_lock(&c->mu);
    op_t *done = c->d_head;
    c->d_head = c->d_tail = NULL;
    pthread_mutex_unlock(&c->mu);
    while (done) {
        op_t *op = done;
        done = op->next;
        if (op->kind == OP_ACQUIRE)
            apply_acquire(c, op, now_s);
        else if (op->kind == OP_DESCRIBE)
            apply_describe(c, op, now_s);
        else if (op->kind == OP_RELEASE)
            apply_release(c, op);
        else
            apply_list(c, op, now_s);
        op_free(op);
    }
    json_t *ids = json_array();
    for (size_t i = 0; i < c->ninst; i++) {
        cinst_t *x = &c->inst[i];
        if (!x->answered || !spw_instance_state_live(x->v.state))
            continue;
        if (x->v.state == SPW_INSTANCE_BOOTING && now_s - x->v.launched_s > c->boot_timeout_s) {
            char reason[200];
            snprintf(reason, sizeof(reason), "account %s: instance %s was not ready within %g s",
                     c->name, x->v.cloud_id, c->boot_timeout_s);
            end_inst(x, SPW_INSTANCE_RELEASED, now_s);
            x->release_owed = 1;
            push_event(c, SPW_INST_EV_FAILED, x, now_s, SPW_BLOCK_NONE, 0, reason);
            continue;
        }
        json_array_append_new(ids, json_string(x->v.cloud_id));
    }
    if (!c->describe_busy && json_array_size(ids) > 0 &&
        now_s - c->last_describe_s >= c->describe_every_s) {
        op_t *op = spw_xcalloc(1, sizeof(op_t));
        op->kind = OP_DESCRIBE;
        op->ids = json_incref(ids);
        c->describe_busy = 1;
        c->last_describe_s = now_s;
        op_queue(c, op, json_pack("{s:s, s:s, s:O}", "op", "describe", "account", c->name,
                                  "ids", ids));
    }
    json_decref(ids);
    queue_releases(c);  /* those whose release failed: asked again */
    /* Forget what has ended and owes nothing. */
    size_t w = 0;
    for (size_t i = 0; i < c->ninst; i++)
        if (spw_instance_state_live(c->inst[i].v.state) || c->inst[i].release_owed ||
            c->inst[i].releasing)
            c->inst[w++] = c->inst[i];
    c->ninst = w;
    size_t n = c->nev < max ? c->nev : max;
    if (n) {  /* ev may be NULL while nothing was ever queued */
        memcpy(ev, c->ev, n * sizeof(*ev));
        memmove(c->ev, c->ev + n, (c->nev - n) * sizeof(*ev));
        c->nev -= n;
    }
    return n;
}

static int cmd_reconcile(void *pv, const spw_instance_t *known, size_t n, double now_s,
                         spw_instance_t *orphans, size_t max, size_t *norphans, spw_error_t *err)
{
    (void)orphans, (void)max, (void)err;
    spw_command_t *c = pv;
    int lost = 0;
    for (size_t i = 0; i < n; i++) {
        if (!spw_instance_state_live(known[i].state) || find(c, known[i].id))
            continue;
        cinst_t *x = add(c);
        x->v = known[i];
        snprintf(x->v.account, sizeof(x->v.account), "%s", c->name);
        x->answered = known[i].cloud_id[0] != '\0';
        if (!x->answered && !c->cmd[OP_LIST]) {
            end_inst(x, SPW_INSTANCE_RELEASED, x->v.launched_s);
            push_event(c, SPW_INST_EV_LOST, x, now_s, SPW_BLOCK_NONE, 0,
                       "its acquire had not answered before the restart, and the account has "
                       "no list command to find it");
        }
        lost |= !x->answered && c->cmd[OP_LIST];
    }
    if (lost) {
        op_t *op = spw_xcalloc(1, sizeof(op_t));
        op->kind = OP_LIST;
        op_queue(c, op, json_pack("{s:s, s:s, s:{s:s}}", "op", "list", "account", c->name,
                                  "tags", "spillway:daemon", c->daemon_id));
    }
    c->last_describe_s = -INFINITY;
    /* Orphans come from list(), on the daemon's own thread: this call never
     * waits on the site. */
    *norphans = 0;
    return 0;
}

static int cmd_describe(void *pv, const char *id, spw_instance_t *out, spw_error_t *err)
{
    spw_command_t *c = pv;
    cinst_t *x = find(c, id);
    if (!x)
        return errno = ENOENT, spw_errorf(err, "account %s has no instance %s", c->name, id);
    *out = x->v;
    return 0;
}

/* Runs the list command on the caller's thread; touches no shared state
 * but the immutable options, so the daemon may call it beside the loop. */
static int cmd_list(void *pv, spw_instance_t *out, size_t max, size_t *n, spw_error_t *err)
{
    spw_command_t *c = pv;
    *n = 0;
    if (!c->cmd[OP_LIST])
        return spw_errorf(err, "account %s has no list command (option list or command)",
                          c->name);
    op_t op = {.kind = OP_LIST};
    json_t *in = json_pack("{s:s, s:s, s:{s:s}}", "op", "list", "account", c->name, "tags",
                           "spillway:daemon", c->daemon_id);
    op.in = json_dumps(in, JSON_COMPACT);
    json_decref(in);
    op_run(c, &op);
    json_t *root = op.status == 0 && op.out ? json_loads(op.out, 0, NULL) : NULL;
    json_t *arr = json_object_get(root, "instances");
    int rc = 0;
    if (!json_is_array(arr)) {
        rc = spw_errorf(err, "%s", op.status == 0 ? "the list command answered no "
                        "\"instances\" array" : op.err);
    } else {
        size_t k;
        json_t *it;
        json_array_foreach(arr, k, it) {
            if (*n < max) {
                spw_instance_t *v = &out[*n];
                memset(v, 0, sizeof(*v));
                const char *id = json_string_value(json_object_get(it, "id"));
                const char *sid = json_string_value(json_object_get(it, "spillway_id"));
                int ready, pre;
                int live = site_state(json_string_value(json_object_get(it, "state")), &ready,
                                      &pre);
                snprintf(v->cloud_id, sizeof(v->cloud_id), "%s", id ? id : "");
                snprintf(v->id, sizeof(v->id), "%s", sid ? sid : id ? id : "");
                snprintf(v->account, sizeof(v->account), "%s", c->name);
                snprintf(v->provider, sizeof(v->provider), "command");
                const char *s;
                if ((s = json_string_value(json_object_get(it, "job"))))
                    snprintf(v->job_id, sizeof(v->job_id), "%s", s);
                if ((s = json_string_value(json_object_get(it, "addr"))))
                    snprintf(v->addr, sizeof(v->addr), "%s", s);
                if ((s = json_string_value(json_object_get(it, "zone"))))
                    snprintf(v->zone, sizeof(v->zone), "%s", s);
                if ((s = json_string_value(json_object_get(it, "instance_type"))))
                    snprintf(v->instance_type, sizeof(v->instance_type), "%s", s);
                v->spot = json_is_true(json_object_get(it, "spot"));
                v->offer = SIZE_MAX;
                for (size_t o = 0; o < c->noffers; o++)
                    if (strcmp(c->offers[o].instance_type, v->instance_type) == 0 &&
                        strcmp(c->offers[o].zone, v->zone) == 0)
                        v->offer = o;
                v->state = live ? (ready ? SPW_INSTANCE_READY : SPW_INSTANCE_BOOTING)
                                : pre ? SPW_INSTANCE_PREEMPTED : SPW_INSTANCE_RELEASED;
                v->launched_s = v->ready_s = v->ended_s = NAN;
            }
            (*n)++;
        }
    }
    json_decref(root);
    free(op.in);
    free(op.out);
    return rc;
}

static int cmd_health(void *pv, char *why, size_t len)
{
    spw_command_t *c = pv;
    pthread_mutex_lock(&c->mu);
    int bad = c->health[0] != '\0';
    if (bad)
        snprintf(why, len, "account %s cannot launch: %s", c->name, c->health);
    pthread_mutex_unlock(&c->mu);
    return bad ? -1 : 0;
}

/* Frees c and what it owns, its thread ended or never started. */
static void free_parts(spw_command_t *c)
{
    for (int k = 0; k < NOPS; k++)
        free(c->cmd[k]);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->name);
    free(c->daemon_id);
    free(c->inst);
    free(c->ev);
    free(c);
}

static void cmd_destroy(void *pv)
{
    spw_command_t *c = pv;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->th, NULL);
    for (op_t *op = c->d_head, *nx; op; op = nx)
        nx = op->next, op_free(op);
    free_parts(c);
}

/* ---- making it ---------------------------------------------------------- */

static int seconds_opt(const char *key, const char *v, double *out, spw_error_t *err)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d > 0) || isinf(d))
        return spw_errorf(err, "command account option %s must be a number of seconds > 0, "
                          "not '%s'", key, v);
    *out = d;
    return 0;
}

spw_command_t *spw_command_create(const spw_command_opts_t *o, spw_error_t *err)
{
    static const char *const known = "command, acquire, describe, release, list, timeout_s, "
                                     "describe_interval_s, boot_timeout_s, user";
    spw_command_t *c = spw_xcalloc(1, sizeof(*c));
    c->name = spw_xstrdup(o->name ? o->name : "command");
    c->daemon_id = spw_xstrdup(o->daemon_id ? o->daemon_id : "");
    c->offers = o->offers;
    c->noffers = o->noffers;
    c->dry_run = o->dry_run;
    c->timeout_s = 60;
    c->describe_every_s = 2;
    c->boot_timeout_s = 600;
    c->last_describe_s = -INFINITY;
    const char *command = NULL;
    int bad = 0;
    for (const char *const *p = o->options; p && *p && !bad; p++) {
        const char *eq = strchr(*p, '=');
        size_t kl = eq ? (size_t)(eq - *p) : strlen(*p);
        const char *v = eq ? eq + 1 : "";
        int k;
        for (k = 0; k < NOPS; k++)
            if (strlen(op_names[k]) == kl && strncmp(*p, op_names[k], kl) == 0)
                break;
        if (k < NOPS) {
            free(c->cmd[k]);
            c->cmd[k] = spw_xstrdup(v);
        } else if (kl == 7 && strncmp(*p, "command", 7) == 0) {
            command = v;
        } else if (kl == 4 && strncmp(*p, "user", 4) == 0) {
            /* the login user of its instances: the daemon's, not ours */
        } else if (kl == 9 && strncmp(*p, "timeout_s", 9) == 0) {
            bad = seconds_opt("timeout_s", v, &c->timeout_s, err) < 0;
        } else if (kl == 19 && strncmp(*p, "describe_interval_s", 19) == 0) {
            bad = seconds_opt("describe_interval_s", v, &c->describe_every_s, err) < 0;
        } else if (kl == 14 && strncmp(*p, "boot_timeout_s", 14) == 0) {
            bad = seconds_opt("boot_timeout_s", v, &c->boot_timeout_s, err) < 0;
        } else {
            spw_errorf(err, "command account %s: unknown option '%.*s' (known: %s)", c->name,
                       (int)kl, *p, known);
            bad = 1;
        }
    }
    for (int k = 0; k < NOPS && !bad && command; k++)
        if (!c->cmd[k]) {
            spw_strbuf_t b = {0};
            spw_strbuf_printf(&b, "%s %s", command, op_names[k]);
            c->cmd[k] = b.s;
        }
    for (int k = 0; k < OP_LIST && !bad; k++)
        if (!c->cmd[k] || !*c->cmd[k]) {
            spw_errorf(err, "command account %s has no %s command: give 'command' (one "
                       "executable taking the operation as its argument) or '%s'", c->name,
                       op_names[k], op_names[k]);
            bad = 1;
        }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (!bad && pthread_create(&c->th, NULL, op_thread, c) != 0) {
        spw_errorf(err, "command account %s: cannot start its op thread", c->name);
        bad = 1;
    }
    if (bad) {
        free_parts(c);
        return NULL;
    }
    return c;
}

const struct spw_provider_ops spw_command_ops = {
    .version = SPW_PROVIDER_VERSION,
    .name = "command",
    .emulated = 0,
    .async = 1,
    .acquire = cmd_acquire,
    .release = cmd_release,
    .poll = cmd_poll,
    .reconcile = cmd_reconcile,
    .destroy = cmd_destroy,
    .describe = cmd_describe,
    .list = cmd_list,
    .health = cmd_health,
};
