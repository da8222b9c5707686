/* emulated.c: the emulated cloud provider: boot delays, per-second billing,
 * capacity limits, injected, rate-driven and trace-driven spot preemption,
 * and a small state file so that reconcile() works after a kill -9.  See
 * emulated.h for the contract. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "util/file.h"
#include "providers/emulated/emulated.h"
#include "providers/ec2_errors.h"
#include "util/spot_trace.h"
#include "util/rng.h"

#define ID_PREFIX "emu-i-"     /* ids of a provider made without id_prefix */
#define ID_PREFIX_MAX 24
#define MAX_ACQUIRE 65536       /* most instances one acquire() may ask for */
#define STATE_VERSION 1         /* "version" written in emulated.json */

/* One instance the provider remembers. */
typedef struct inst {
    spw_instance_t v;           /* what the daemon sees */
    uint64_t seq;               /* the number in v.id; instances are kept in
                                   increasing seq order */
    double preempt_at_s;        /* rate-driven preemption time, daemon clock;
                                   INFINITY if none */
    pid_t boot_pid;             /* `boot_command add` in flight; 0 = none */
    int boot_fd;                /* read end of its stdout; -1 = none */
    pid_t del_pid;              /* `boot_command del` in flight; 0 = none */
    int need_del;               /* 1: ended with a failed boot, whose leftovers
                                   `del` removes */
    char token[SPW_ACQUIRE_TOKEN_MAX]; /* the acquisition token that made it;
                                   "" = none given */
} inst_t;

/* One refusal of emulated.h's `refuse`: what an EC2 error code blocks. */
typedef struct refusal {
    char *zone;                 /* owned; the offers' zone, "*" = every zone */
    char *code;                 /* owned; the EC2 error code */
} refusal_t;

/* Emulation settings of one offer. */
typedef struct offer_emu {
    uint32_t capacity;          /* most live instances; 0 = unlimited */
    double rate_per_h;          /* spot preemptions per instance-hour */
    int rate_ondemand;          /* the rate hits on-demand instances too */
    int has_trace;              /* trace below is loaded */
    spw_spot_trace_t trace;     /* spot availability, owned */
    double trace_start_s;       /* daemon clock of tick 0, seconds */
    char *trace_path;           /* owned; for messages */
} offer_emu_t;

/* A queued event with its arrival rank (equal times keep arrival order). */
typedef struct qev {
    spw_inst_event_t ev;        /* what poll() returns */
    uint64_t order;             /* arrival rank */
} qev_t;

struct spw_emulated {
    const spw_offer_t *offers;  /* borrowed until destroy */
    size_t noffers;             /* entries in offers */
    offer_emu_t *emu;           /* owned; one per offer */
    inst_t *inst;               /* owned; remembered instances, seq order */
    size_t ninst;               /* entries used in inst */
    size_t instcap;             /* entries allocated in inst */
    qev_t *q;                   /* owned; events not yet polled */
    size_t nq;                  /* entries used in q */
    size_t qcap;                /* entries allocated in q */
    uint64_t qorder;            /* next arrival rank */
    uint64_t next_seq;          /* number of the next instance id, >= 1 */
    spw_rng_t rng;              /* preemption draws */
    double polled_s;            /* latest now_s the emulation was advanced to;
                                   -INFINITY before the first call */
    double retain_s;            /* how long ended instances are remembered, s */
    char *state_path;           /* owned; STATE_DIR/emulated.json, or NULL */
    char *tmp_path;             /* owned; the same with ".tmp" */
    char *state_dir;            /* owned; the state dir, or NULL */
    int lock_fd;                /* flock'ed STATE_DIR/emulated.lock, or -1 */
    int deferred;               /* 1: changes only mark the state dirty;
                                   spw_emulated_flush writes it (once per
                                   daemon turn) */
    int dirty;                  /* changed since the last write */
    uint64_t gen;               /* bumped by every acquire: new instances
                                   may bring boots and preemptions due */
    double quiet_s;             /* advance() ran to this time ... */
    uint64_t quiet_gen;         /* ... at this gen: calling it again at the
                                   same time finds nothing new (a turn that
                                   releases 8,000 instances scans them once,
                                   not 8,000 times); NAN = never */
    char *boot_cmd;             /* owned; instances are hosts (emulated.h);
                                   NULL = records only */
    char *hosts_dir;            /* owned; given to boot_cmd */
    char id_prefix[ID_PREFIX_MAX]; /* instance ids are this and a number */
    refusal_t *refuse;          /* owned; acquisitions refused, by zone */
    size_t nrefuse;             /* entries in refuse */
    char health[256];           /* why the account cannot launch (an
                                   account-wide refusal answered); "" = it can */
};

/* ---- small helpers ---------------------------------------------------- */

static char *path_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    char *p = spw_xmalloc(dl + nl + 2);
    memcpy(p, dir, dl);
    p[dl] = '/';
    memcpy(p + dl + 1, name, nl + 1);
    return p;
}

static void id_format(const spw_emulated_t *em, uint64_t seq, char *buf, size_t len)
{
    /* id_prefix leaves room for 6 digits (checked at create); a longer
     * number is cut, as an id never is in practice. */
    if (snprintf(buf, len, "%s%06" PRIu64, em->id_prefix, seq) >= (int)len)
        buf[len - 1] = '\0';
}

/* The number in an id this provider made; 0 if it is not one. */
static uint64_t id_parse(const spw_emulated_t *em, const char *id)
{
    uint64_t v = 0;
    const char *p;
    size_t pl = strlen(em->id_prefix);

    if (!id || strncmp(id, em->id_prefix, pl) != 0 || !id[pl])
        return 0;
    for (p = id + pl; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    /* Only the canonical spelling names an instance ("emu-i-1" does not). */
    char canon[SPW_INSTANCE_ID_MAX];
    id_format(em, v, canon, sizeof(canon));
    return strcmp(canon, id) == 0 ? v : 0;
}

/* Index of the instance with id, or -1. */
static ptrdiff_t find(const spw_emulated_t *em, const char *id)
{
    uint64_t seq = id_parse(em, id);
    size_t lo = 0, hi = em->ninst;

    if (!seq)
        return -1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (em->inst[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < em->ninst && em->inst[lo].seq == seq ? (ptrdiff_t)lo : -1;
}

static int live(const inst_t *i)
{
    return spw_instance_state_live(i->v.state);
}

/* Live instances of offer o (spot ones only if spot_only). */
static uint32_t count_live(const spw_emulated_t *em, size_t o, int spot_only)
{
    uint32_t n = 0;
    for (size_t k = 0; k < em->ninst; k++) {
        const inst_t *i = &em->inst[k];
        if (live(i) && i->v.offer == o && (!spot_only || i->v.spot))
            n++;
    }
    return n;
}

static void offer_label(const spw_emulated_t *em, size_t o, char *buf, size_t len)
{
    const spw_offer_t *of = &em->offers[o];
    snprintf(buf, len, "offer %zu (%s %s%s%s %s)", o, of->provider ? of->provider : "",
             of->region ? of->region : "", of->zone && *of->zone ? "/" : "",
             of->zone ? of->zone : "", of->instance_type ? of->instance_type : "");
}

static int job_id_valid(const char *id)
{
    return spw_safe_name(id, SPW_INSTANCE_JOB_MAX);
}

/* Whether the caller's instance has NUL-terminated strings where we read them. */
static int inst_terminated(const spw_instance_t *i)
{
    return memchr(i->id, '\0', sizeof(i->id)) && memchr(i->job_id, '\0', sizeof(i->job_id));
}

/* Whether s can go into the JSON state file (jansson wants UTF-8). */
static int utf8_ok(const char *s)
{
    json_t *j = json_string(s ? s : "");
    json_decref(j);
    return j != NULL;
}

static void copy_str(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

static int fits(const char *s, size_t len)
{
    return !s || strlen(s) < len;
}

/* ---- the event queue ---------------------------------------------------- */

static void queue_push(spw_emulated_t *em, spw_inst_event_kind_t kind, const char *id,
                       const char *job_id, double time_s)
{
    qev_t *e;

    if (em->nq == em->qcap) {
        em->qcap = em->qcap ? em->qcap * 2 : 16;
        em->q = spw_xrealloc(em->q, em->qcap * sizeof(*em->q));
    }
    e = &em->q[em->nq++];
    memset(e, 0, sizeof(*e));
    e->ev.kind = kind;
    copy_str(e->ev.instance_id, sizeof(e->ev.instance_id), id);
    copy_str(e->ev.job_id, sizeof(e->ev.job_id), job_id);
    e->ev.time_s = time_s;
    e->order = em->qorder++;
}

static int queued(const spw_emulated_t *em, spw_inst_event_kind_t kind, const char *id)
{
    for (size_t k = 0; k < em->nq; k++)
        if (em->q[k].ev.kind == kind && strcmp(em->q[k].ev.instance_id, id) == 0)
            return 1;
    return 0;
}

/* Drops queued events of one kind about instance id. */
static void queue_drop(spw_emulated_t *em, spw_inst_event_kind_t kind, const char *id)
{
    size_t w = 0;
    for (size_t k = 0; k < em->nq; k++)
        if (!(em->q[k].ev.kind == kind && strcmp(em->q[k].ev.instance_id, id) == 0))
            em->q[w++] = em->q[k];
    em->nq = w;
}

static int qev_cmp(const void *a, const void *b)
{
    const qev_t *x = a, *y = b;
    if (x->ev.time_s != y->ev.time_s)
        return x->ev.time_s < y->ev.time_s ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* ---- the state file ----------------------------------------------------- */

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

static int save_now(spw_emulated_t *em, spw_error_t *err);

/* After a change: writes the state now, or in deferred mode marks it for
 * the next spw_emulated_flush (a daemon turn that releases 8,000
 * instances then writes the file once, not 8,000 times). */
static int save(spw_emulated_t *em, spw_error_t *err)
{
    if (em->deferred) {
        em->dirty = 1;
        return 0;
    }
    return save_now(em, err);
}

int spw_emulated_flush(spw_emulated_t *em, spw_error_t *err)
{
    if (!em || !em->dirty)
        return 0;
    if (save_now(em, err) < 0)
        return -1;
    em->dirty = 0;
    return 0;
}

void spw_emulated_defer_saves(spw_emulated_t *em, int on)
{
    em->deferred = on != 0;
}

/* Writes the whole state to emulated.json (write, fsync, rename, fsync of the
 * dir).  Returns 0, or -1 with errno and err, and the old file in place. */
static int save_now(spw_emulated_t *em, spw_error_t *err)
{
    json_t *root, *arr, *rng;
    char *text = NULL, hex[24];
    int fd = -1, e;

    if (!em->state_path)
        return 0;
    root = json_object();
    arr = json_array();
    rng = json_array();
    for (int k = 0; k < 4; k++) {
        snprintf(hex, sizeof(hex), "%016" PRIx64, em->rng.s[k]);
        json_array_append_new(rng, json_string(hex));
    }
    json_object_set_new(root, "version", json_integer(STATE_VERSION));
    json_object_set_new(root, "next_seq", json_integer((json_int_t)em->next_seq));
    json_object_set_new(root, "rng", rng);
    for (size_t k = 0; k < em->ninst; k++) {
        const inst_t *i = &em->inst[k];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(i->v.id));
        json_object_set_new(o, "job_id", json_string(i->v.job_id));
        json_object_set_new(o, "offer", json_integer((json_int_t)i->v.offer));
        json_object_set_new(o, "provider", json_string(i->v.provider));
        json_object_set_new(o, "region", json_string(i->v.region));
        json_object_set_new(o, "zone", json_string(i->v.zone));
        json_object_set_new(o, "instance_type", json_string(i->v.instance_type));
        json_object_set_new(o, "spot", json_boolean(i->v.spot));
        json_object_set_new(o, "price_usd_per_h", json_real(i->v.price_usd_per_h));
        json_object_set_new(o, "state", json_string(spw_instance_state_name(i->v.state)));
        json_object_set_new(o, "launched_s", json_real(i->v.launched_s));
        json_object_set_new(o, "ready_s", json_real(i->v.ready_s));
        json_object_set_new(o, "ended_s", num_or_null(i->v.ended_s));
        json_object_set_new(o, "preempt_at_s", num_or_null(i->preempt_at_s));
        if (i->v.addr[0])
            json_object_set_new(o, "addr", json_string(i->v.addr));
        if (i->token[0])
            json_object_set_new(o, "token", json_string(i->token));
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "instances", arr);
    text = json_dumps(root, JSON_INDENT(1));
    json_decref(root);
    if (!text) {
        errno = ENOMEM;
        return spw_errorf(err, "%s: cannot encode the emulated provider's state",
                          em->state_path);
    }

    fd = open(em->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        goto error;
    if (write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0 ||
        fsync(fd) < 0)
        goto error;
    if (close(fd) < 0) {
        fd = -1;
        goto error;
    }
    fd = -1;
    if (rename(em->tmp_path, em->state_path) < 0)
        goto error;
    free(text);
    /* The rename is durable only once the directory is synced; a failure here
     * leaves the new file in place, which is what the caller asked for. */
    if ((fd = open(em->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    return 0;
error:
    e = errno;
    if (fd >= 0)
        close(fd);
    unlink(em->tmp_path);
    free(text);
    errno = e;
    return spw_errorf(err, "cannot save the emulated provider's state to %s: %s",
                      em->state_path, strerror(e));
}

/* Field readers for load(): each returns 0, or -1 with err naming the field. */
static int get_str(json_t *o, const char *key, char *dst, size_t len, const char *where,
                   spw_error_t *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return spw_errorf(err, "%s: \"%s\" is missing or not a string", where, key);
    if (strlen(json_string_value(v)) >= len)
        return spw_errorf(err, "%s: \"%s\" is longer than %zu bytes", where, key, len - 1);
    copy_str(dst, len, json_string_value(v));
    return 0;
}

static int get_num(json_t *o, const char *key, int nullable, double null_value,
                   double *out, const char *where, spw_error_t *err)
{
    json_t *v = json_object_get(o, key);
    if (nullable && json_is_null(v)) {
        *out = null_value;
        return 0;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return spw_errorf(err, "%s: \"%s\" is missing or not a number%s", where, key,
                          nullable ? " or null" : "");
    *out = json_number_value(v);
    return 0;
}

/* Reads one saved instance into *i. */
static int load_inst(const spw_emulated_t *em, json_t *o, inst_t *i, const char *where,
                     spw_error_t *err)
{
    json_t *v;
    char state[16];

    memset(i, 0, sizeof(*i));
    if (!json_is_object(o))
        return spw_errorf(err, "%s: not an object", where);
    if (get_str(o, "id", i->v.id, sizeof(i->v.id), where, err) < 0 ||
        get_str(o, "job_id", i->v.job_id, sizeof(i->v.job_id), where, err) < 0 ||
        get_str(o, "provider", i->v.provider, sizeof(i->v.provider), where, err) < 0 ||
        get_str(o, "region", i->v.region, sizeof(i->v.region), where, err) < 0 ||
        get_str(o, "zone", i->v.zone, sizeof(i->v.zone), where, err) < 0 ||
        get_str(o, "instance_type", i->v.instance_type, sizeof(i->v.instance_type),
                where, err) < 0 ||
        get_str(o, "state", state, sizeof(state), where, err) < 0)
        return -1;
    if (!(i->seq = id_parse(em, i->v.id)))
        return spw_errorf(err, "%s: \"id\" '%s' is not an emulated instance id", where,
                          i->v.id);
    if (spw_instance_state_parse(state, &i->v.state, err) < 0)
        return spw_errorf(err, "%s: \"state\" '%s' is not booting, ready, released "
                          "or preempted", where, state);
    v = json_object_get(o, "offer");
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return spw_errorf(err, "%s: \"offer\" is missing or not an index >= 0", where);
    i->v.offer = (size_t)json_integer_value(v);
    v = json_object_get(o, "spot");
    if (!json_is_boolean(v))
        return spw_errorf(err, "%s: \"spot\" is missing or not true/false", where);
    i->v.spot = json_is_true(v);
    if (get_num(o, "price_usd_per_h", 0, 0, &i->v.price_usd_per_h, where, err) < 0 ||
        get_num(o, "launched_s", 0, 0, &i->v.launched_s, where, err) < 0 ||
        get_num(o, "ready_s", 0, 0, &i->v.ready_s, where, err) < 0 ||
        get_num(o, "ended_s", 1, NAN, &i->v.ended_s, where, err) < 0 ||
        get_num(o, "preempt_at_s", 1, INFINITY, &i->preempt_at_s, where, err) < 0)
        return -1;
    if (!live(i) && isnan(i->v.ended_s))
        return spw_errorf(err, "%s: a %s instance needs \"ended_s\"", where, state);
    i->boot_fd = -1;
    v = json_object_get(o, "addr");   /* since instances may be hosts */
    if (v && (!json_is_string(v) || strlen(json_string_value(v)) >= sizeof(i->v.addr)))
        return spw_errorf(err, "%s: \"addr\" is not a string of at most %zu bytes", where,
                          sizeof(i->v.addr) - 1);
    if (v)
        copy_str(i->v.addr, sizeof(i->v.addr), json_string_value(v));
    v = json_object_get(o, "token");   /* since acquisitions carry tokens */
    if (v && (!json_is_string(v) || strlen(json_string_value(v)) >= sizeof(i->token)))
        return spw_errorf(err, "%s: \"token\" is not a string of at most %zu bytes", where,
                          sizeof(i->token) - 1);
    if (v)
        copy_str(i->token, sizeof(i->token), json_string_value(v));
    if (live(i))
        i->v.ended_s = NAN;
    return 0;
}

/* Loads emulated.json if there is one; a missing file is an empty state. */
static int load(spw_emulated_t *em, spw_error_t *err)
{
    json_error_t jerr;
    json_t *root, *v, *arr;
    char where[64];
    uint64_t rs[4];

    if (access(em->state_path, F_OK) < 0 && errno == ENOENT)
        return 0;
    root = json_load_file(em->state_path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return spw_errorf(err, "%s:%d:%d: %s (fix or remove the file; it lists the "
                          "emulated instances still billing)", em->state_path,
                          jerr.line, jerr.column, jerr.text);
    v = json_object_get(root, "version");
    if (!json_is_integer(v) || json_integer_value(v) != STATE_VERSION) {
        spw_errorf(err, "%s: \"version\" must be %d", em->state_path, STATE_VERSION);
        goto error;
    }
    v = json_object_get(root, "next_seq");
    if (!json_is_integer(v) || json_integer_value(v) < 1) {
        spw_errorf(err, "%s: \"next_seq\" must be an integer >= 1", em->state_path);
        goto error;
    }
    em->next_seq = (uint64_t)json_integer_value(v);
    v = json_object_get(root, "rng");
    if (!json_is_array(v) || json_array_size(v) != 4) {
        spw_errorf(err, "%s: \"rng\" must be an array of 4 hex strings", em->state_path);
        goto error;
    }
    for (size_t k = 0; k < 4; k++) {
        const char *s = json_string_value(json_array_get(v, k));
        char *end;
        if (!s || !*s || strlen(s) > 16) {
            spw_errorf(err, "%s: \"rng\" must be an array of 4 hex strings", em->state_path);
            goto error;
        }
        rs[k] = strtoull(s, &end, 16);
        if (*end) {
            spw_errorf(err, "%s: \"rng\" must be an array of 4 hex strings", em->state_path);
            goto error;
        }
    }
    if (!(rs[0] | rs[1] | rs[2] | rs[3])) {
        spw_errorf(err, "%s: \"rng\" state cannot be all zero", em->state_path);
        goto error;
    }
    memcpy(em->rng.s, rs, sizeof(rs));
    arr = json_object_get(root, "instances");
    if (!json_is_array(arr)) {
        spw_errorf(err, "%s: \"instances\" is missing or not an array", em->state_path);
        goto error;
    }
    em->instcap = json_array_size(arr) ? json_array_size(arr) : 16;
    em->inst = spw_xmalloc(em->instcap * sizeof(*em->inst));
    for (size_t k = 0; k < json_array_size(arr); k++) {
        inst_t *i = &em->inst[k];
        char msg[sizeof(err->text)];
        spw_error_t e2;
        snprintf(where, sizeof(where), "instances[%zu]", k);
        if (load_inst(em, json_array_get(arr, k), i, where, &e2) < 0) {
            snprintf(msg, sizeof(msg), "%s", e2.text);
            spw_errorf(err, "%s: %s", em->state_path, msg);
            goto error;
        }
        if (i->seq >= em->next_seq || (k > 0 && i->seq <= em->inst[k - 1].seq)) {
            spw_errorf(err, "%s: %s: id '%s' is out of order or not below next_seq",
                       em->state_path, where, i->v.id);
            goto error;
        }
        em->ninst = k + 1;
    }
    json_decref(root);
    return 0;
error:
    json_decref(root);
    return -1;
}

/* ---- advancing the emulation ------------------------------------------ */

/* A timed change of one instance found by advance(). */
typedef struct cand {
    double t;                   /* when, daemon clock */
    int kind;                   /* 0: boot finished; 1: rate preemption */
    size_t idx;                 /* instance index */
} cand_t;

static int cand_cmp(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void end_instance(spw_emulated_t *em, inst_t *i, spw_instance_state_t state,
                         double t)
{
    i->v.state = state;
    i->v.ended_s = t;
    if (state == SPW_INSTANCE_PREEMPTED)
        queue_push(em, SPW_INST_EV_PREEMPTED, i->v.id, i->v.job_id, t);
}

/* Applies the trace of offer o at tick k (boundary time b): preempts the
 * newest spot instances held since b or earlier while they outnumber what the
 * trace allows.  Returns how many spot instances of o remain live. */
static uint32_t trace_tick(spw_emulated_t *em, size_t o, int64_t k, double b, int *changed)
{
    uint32_t avail = spw_spot_trace_at(&em->emu[o].trace, k), held = 0, left = 0;
    size_t x, from = em->ninst;

    for (x = 0; x < em->ninst; x++) {
        inst_t *i = &em->inst[x];
        if (live(i) && i->v.spot && i->v.offer == o && i->v.launched_s <= b)
            held++;
    }
    /* The newest holders go: find the oldest of them, then end them in
     * instance order so that events at the same time keep that order. */
    for (x = em->ninst; x-- > 0 && held > avail;) {
        inst_t *i = &em->inst[x];
        if (live(i) && i->v.spot && i->v.offer == o && i->v.launched_s <= b) {
            held--;
            from = x;
        }
    }
    for (x = from; x < em->ninst; x++) {
        inst_t *i = &em->inst[x];
        if (live(i) && i->v.spot && i->v.offer == o && i->v.launched_s <= b) {
            end_instance(em, i, SPW_INSTANCE_PREEMPTED, b);
            *changed = 1;
        }
    }
    for (size_t x = 0; x < em->ninst; x++) {
        inst_t *i = &em->inst[x];
        if (live(i) && i->v.spot && i->v.offer == o)
            left++;
    }
    return left;
}

/* Forgets ended instances older than the retention. */
static int prune(spw_emulated_t *em, double now_s)
{
    size_t w = 0;
    for (size_t k = 0; k < em->ninst; k++) {
        inst_t *i = &em->inst[k];
        if (!live(i) && i->v.ended_s + em->retain_s < now_s && !i->boot_pid &&
            !i->del_pid && !i->v.addr[0] && !i->need_del)
            continue;
        em->inst[w++] = *i;
    }
    if (w == em->ninst)
        return 0;
    em->ninst = w;
    return 1;
}

/* ---- instances as hosts (boot_command) ------------------------------ */

/* Whether instance i may turn READY: always, unless instances are hosts and
 * its boot has not yet given an address. */
static int booted(const spw_emulated_t *em, const inst_t *i)
{
    return !em->boot_cmd || (i->v.addr[0] && !i->boot_pid);
}

/* Starts `boot_cmd VERB hosts_dir ID` with stdin /dev/null, stderr the
 * daemon's, stdout a non-blocking pipe (*out_fd) or, without out_fd, the
 * daemon's stderr.  Returns the pid, or -1. */
static pid_t spawn(const spw_emulated_t *em, const char *verb, const char *id, int *out_fd)
{
    int p[2] = {-1, -1};
    if (out_fd && pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(out_fd ? p[1] : 2, 1);
        /* Nothing of the daemon's (its database, its listening socket) may
         * live on in what the command starts (an sshd). */
        long maxfd = sysconf(_SC_OPEN_MAX);
        for (long fd = 3; fd < (maxfd > 0 && maxfd < 65536 ? maxfd : 4096); fd++)
            close((int)fd);
        /* Its own process group (a ^C at the daemon's terminal does not
         * reach it) and no signal blocked or ignored that the daemon's
         * threads block (what it starts, an sshd, inherits them). */
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execl(em->boot_cmd, em->boot_cmd, verb, em->hosts_dir, id, (char *)NULL);
        _exit(127);
    }
    if (out_fd) {
        close(p[1]);
        if (pid < 0) {
            close(p[0]);
            return -1;
        }
        fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
        *out_fd = p[0];
    }
    return pid;
}

/* Reads what is in fd now (non-blocking) into buf (NUL-terminated). */
static void drain(int fd, char *buf, size_t cap)
{
    size_t n = strlen(buf);
    for (;;) {
        char tmp[256];
        ssize_t r = read(fd, tmp, sizeof(tmp));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        for (ssize_t k = 0; k < r && n + 1 < cap; k++)
            buf[n++] = tmp[k];
        buf[n] = '\0';
    }
}

/* The address in a boot command's output: its last non-empty line, made of
 * [0-9A-Za-z.:-] only and shorter than SPW_INSTANCE_ADDR_MAX; 0 or -1. */
static int parse_addr(const char *out, char *addr)
{
    const char *end = out + strlen(out), *b;
    while (end > out && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    b = end;
    while (b > out && b[-1] != '\n')
        b--;
    if (end == b || (size_t)(end - b) >= SPW_INSTANCE_ADDR_MAX)
        return -1;
    for (const char *c = b; c < end; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              *c == '.' || *c == ':' || *c == '-'))
            return -1;
    memcpy(addr, b, (size_t)(end - b));
    addr[end - b] = '\0';
    return 0;
}

/* Whether child pid has exited (reaped; *st its status). */
static int reaped(pid_t pid, int *st)
{
    pid_t r;
    while ((r = waitpid(pid, st, WNOHANG)) < 0 && errno == EINTR)
        ;
    return r == pid || (r < 0 && errno == ECHILD);
}

/* Moves the hosts of instances along, without blocking: collects finished
 * boots (an address, or a failed boot: LOST), starts boots that are due
 * (instances loaded BOOTING without an address) and the teardown of ended
 * instances, and collects finished teardowns. */
static void hosts_step(spw_emulated_t *em, double now_s)
{
    int changed = 0;
    if (!em->boot_cmd)
        return;
    for (size_t k = 0; k < em->ninst; k++) {
        inst_t *i = &em->inst[k];
        int st = 0;
        if (i->boot_pid && reaped(i->boot_pid, &st)) {
            char out[512] = "", addr[SPW_INSTANCE_ADDR_MAX];
            drain(i->boot_fd, out, sizeof(out));
            close(i->boot_fd);
            i->boot_fd = -1;
            i->boot_pid = 0;
            int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && parse_addr(out, addr) == 0;
            if (ok)
                copy_str(i->v.addr, sizeof(i->v.addr), addr);
            if (ok && live(i)) {
                if (i->v.ready_s < now_s)
                    i->v.ready_s = now_s;   /* ready when it answers */
            } else if (live(i)) {
                i->v.state = SPW_INSTANCE_RELEASED;
                i->v.ended_s = now_s < i->v.launched_s ? i->v.launched_s : now_s;
                queue_push(em, SPW_INST_EV_LOST, i->v.id, i->v.job_id, i->v.ended_s);
                i->need_del = 1;   /* whatever the boot left: torn down below */
            } else if (!ok) {
                i->need_del = 1;
            }
            em->gen++;
            changed = 1;
        }
        if (i->del_pid && reaped(i->del_pid, &st)) {
            i->del_pid = 0;
            i->need_del = 0;
            i->v.addr[0] = '\0';   /* gone (a failed del is not retried) */
            changed = 1;
        }
        if (live(i) && i->v.state == SPW_INSTANCE_BOOTING && !i->v.addr[0] && !i->boot_pid) {
            i->boot_pid = spawn(em, "add", i->v.id, &i->boot_fd);
            if (i->boot_pid < 0) {
                i->boot_pid = 0;
                i->boot_fd = -1;
            }
        }
        if (!live(i) && (i->v.addr[0] || i->need_del) && !i->boot_pid && !i->del_pid) {
            i->del_pid = spawn(em, "del", i->v.id, NULL);
            if (i->del_pid < 0) {
                i->del_pid = 0;
                i->need_del = 0;
                i->v.addr[0] = '\0';
                changed = 1;
            }
        }
    }
    if (changed)
        (void)save(em, NULL);
}

/* Brings the emulation up to now_s: every boot that finished and every
 * preemption that happened since the last call, applied in time order and
 * queued as events.  Saves the state when something changed; a failed save is
 * not an error here, since the same changes follow again from the saved
 * state after a restart. */
static void advance(spw_emulated_t *em, double now_s)
{
    cand_t *c = NULL;
    size_t nc = 0, ci = 0;
    int64_t *cur = NULL, *kmax = NULL;
    int changed = 0;

    if (!isfinite(now_s))
        return;
    if (now_s == em->quiet_s && em->gen == em->quiet_gen)
        return;
    for (size_t k = 0; k < em->ninst; k++) {
        const inst_t *i = &em->inst[k];
        if (!live(i))
            continue;
        if (i->v.state == SPW_INSTANCE_BOOTING && i->v.ready_s <= now_s && booted(em, i))
            nc++;
        if (i->preempt_at_s <= now_s)
            nc++;
    }
    if (nc) {
        c = spw_xmalloc(nc * sizeof(*c));
        nc = 0;
        for (size_t k = 0; k < em->ninst; k++) {
            const inst_t *i = &em->inst[k];
            if (!live(i))
                continue;
            if (i->v.state == SPW_INSTANCE_BOOTING && i->v.ready_s <= now_s && booted(em, i))
                c[nc++] = (cand_t){i->v.ready_s, 0, k};
            if (i->preempt_at_s <= now_s)
                c[nc++] = (cand_t){i->preempt_at_s, 1, k};
        }
        qsort(c, nc, sizeof(*c), cand_cmp);
    }

    /* Trace cursors: the tick boundaries in (lo, now_s], where lo is the later
     * of the last advance and the earliest launch of a live spot instance
     * (earlier boundaries were applied already or precede every holder). */
    cur = spw_xcalloc(em->noffers, sizeof(*cur));
    kmax = spw_xcalloc(em->noffers, sizeof(*kmax));
    for (size_t o = 0; o < em->noffers; o++) {
        double lo = INFINITY;
        offer_emu_t *e = &em->emu[o];
        cur[o] = 1;
        kmax[o] = 0;
        if (!e->has_trace)
            continue;
        for (size_t k = 0; k < em->ninst; k++) {
            const inst_t *i = &em->inst[k];
            if (live(i) && i->v.spot && i->v.offer == o && i->v.launched_s < lo)
                lo = i->v.launched_s;
        }
        if (lo == INFINITY)
            continue;
        if (em->polled_s > lo)
            lo = em->polled_s;
        cur[o] = spw_spot_trace_tick(&e->trace, e->trace_start_s, lo) + 1;
        kmax[o] = spw_spot_trace_tick(&e->trace, e->trace_start_s, now_s);
    }

    for (;;) {
        double best = INFINITY;
        int src = -1;
        size_t bo = 0;
        if (ci < nc) {
            best = c[ci].t;
            src = 0;
        }
        for (size_t o = 0; o < em->noffers; o++) {
            offer_emu_t *e = &em->emu[o];
            double b;
            if (cur[o] > kmax[o])
                continue;
            b = e->trace_start_s + (double)cur[o] * e->trace.gap_s;
            /* At equal times boots and rate preemptions go first. */
            if (b < best) {
                best = b;
                src = 1;
                bo = o;
            }
        }
        if (src < 0)
            break;
        if (src == 0) {
            inst_t *i = &em->inst[c[ci].idx];
            if (c[ci].kind == 0 && i->v.state == SPW_INSTANCE_BOOTING) {
                i->v.state = SPW_INSTANCE_READY;
                queue_push(em, SPW_INST_EV_READY, i->v.id, i->v.job_id, i->v.ready_s);
                changed = 1;
            } else if (c[ci].kind == 1 && live(i)) {
                end_instance(em, i, SPW_INSTANCE_PREEMPTED, i->preempt_at_s);
                changed = 1;
            }
            ci++;
        } else {
            if (trace_tick(em, bo, cur[bo], best, &changed) == 0)
                cur[bo] = kmax[bo] + 1;  /* nobody left to preempt */
            else
                cur[bo]++;
        }
    }
    free(c);
    free(cur);
    free(kmax);
    if (now_s > em->polled_s)
        em->polled_s = now_s;
    changed |= prune(em, now_s);
    if (changed)
        (void)save(em, NULL);
    em->quiet_s = now_s;
    em->quiet_gen = em->gen;
}

/* ---- refusals (emulated.h, `refuse`) --------------------------------- */

/* Whether code is one of EC2's documented codes (ec2_errors.h), so that
 * a refusal blocks what the AWS provider would block. */
static int code_known(const char *code)
{
    size_t n;
    const spw_ec2_error_class_t *t = spw_ec2_error_table(&n);
    for (size_t k = 0; k < n; k++) {
        size_t l = strlen(t[k].code);
        if (strcmp(t[k].code, code) == 0 ||
            (l > 2 && strcmp(t[k].code + l - 2, ".*") == 0 && strncmp(t[k].code, code, l - 1) == 0))
            return 1;
    }
    return 0;
}

/* The refusal that applies to offer o, or NULL. */
static const refusal_t *refusal_of(const spw_emulated_t *em, size_t o)
{
    const char *zone = em->offers[o].zone ? em->offers[o].zone : "";
    for (size_t k = 0; k < em->nrefuse; k++)
        if (strcmp(em->refuse[k].zone, "*") == 0 || strcmp(em->refuse[k].zone, zone) == 0)
            return &em->refuse[k];
    return NULL;
}

/* An acquisition the emulated cloud refuses, answered as an asynchronous
 * cloud answers (provider.h, version 4): the instances were asked for and
 * never made, so they end at once without billing (ended_s = launched_s)
 * and poll() returns FAILED for each, with what the code blocks. */
static void refuse_acquired(spw_emulated_t *em, size_t first, size_t n, const refusal_t *r)
{
    const spw_ec2_error_class_t *c = spw_ec2_error_classify(r->code, 400);
    for (size_t k = first; k < first + n; k++) {
        inst_t *i = &em->inst[k];
        i->v.state = SPW_INSTANCE_RELEASED;
        i->v.ended_s = i->v.launched_s;
        i->preempt_at_s = INFINITY;
        queue_push(em, SPW_INST_EV_FAILED, i->v.id, i->v.job_id, i->v.launched_s);
        spw_inst_event_t *ev = &em->q[em->nq - 1].ev;
        ev->block = c->block;
        ev->block_s = c->ttl_s;
        snprintf(ev->reason, sizeof(ev->reason), "%s in %s (emulated refusal)", r->code,
                 i->v.zone[0] ? i->v.zone : i->v.region);
        if (c->block == SPW_BLOCK_ACCOUNT)
            snprintf(em->health, sizeof(em->health), "%s: the emulated account refuses every "
                     "launch", r->code);
    }
}

/* ---- the operations ----------------------------------------------------- */

static int em_acquire(void *pv, const spw_acquire_t *req, spw_instance_t *out,
                      spw_error_t *err)
{
    spw_emulated_t *em = pv;
    const spw_offer_t *of;
    offer_emu_t *e;
    size_t old_n;
    uint64_t old_seq;
    spw_rng_t old_rng;
    char label[256];

    if (!req || !out) {
        errno = EINVAL;
        return spw_errorf(err, "acquire: no request");
    }
    if (!isfinite(req->now_s)) {
        errno = EINVAL;
        return spw_errorf(err, "acquire: the time is not a finite number");
    }
    if (req->offer >= em->noffers) {
        errno = EINVAL;
        return spw_errorf(err, "acquire: offer %zu does not exist (the emulated provider "
                          "has %zu)", req->offer, em->noffers);
    }
    if (req->count == 0 || req->count > MAX_ACQUIRE) {
        errno = req->count ? E2BIG : EINVAL;
        return spw_errorf(err, "acquire: asked for %" PRIu32 " instances; ask for 1 to %d",
                          req->count, MAX_ACQUIRE);
    }
    if (!job_id_valid(req->job_id)) {
        errno = EINVAL;
        return spw_errorf(err, "acquire: job id '%s' must be 1 to %d characters of "
                          "[A-Za-z0-9._-], not starting with '.'",
                          req->job_id ? req->job_id : "(null)", SPW_INSTANCE_JOB_MAX - 1);
    }
    if (req->token && (!*req->token || !fits(req->token, SPW_ACQUIRE_TOKEN_MAX))) {
        errno = EINVAL;
        return spw_errorf(err, "acquire: the token must be 1 to %d characters",
                          SPW_ACQUIRE_TOKEN_MAX - 1);
    }
    /* A token asked before (a restart asking again) buys nothing: it
     * answers with what the token bought, as EC2's ClientToken does. */
    if (req->token) {
        uint32_t had = 0;
        for (size_t k = 0; k < em->ninst; k++)
            if (strcmp(em->inst[k].token, req->token) == 0) {
                if (had < req->count)
                    out[had] = em->inst[k].v;
                had++;
            }
        if (had == req->count)
            return 0;
        if (had) {
            errno = EINVAL;
            return spw_errorf(err, "acquire: token %s bought %" PRIu32 " instances; asked "
                              "again for %" PRIu32, req->token, had, req->count);
        }
    }
    of = &em->offers[req->offer];
    e = &em->emu[req->offer];
    offer_label(em, req->offer, label, sizeof(label));
    if (req->spot && isnan(of->spot_usd_per_h)) {
        errno = EINVAL;
        return spw_errorf(err, "acquire: %s has no spot price", label);
    }

    advance(em, req->now_s);
    if (e->capacity && req->count > e->capacity) {
        errno = E2BIG;  /* never, however long the daemon waits */
        return spw_errorf(err, "%s holds at most %" PRIu32 " instances; %" PRIu32 " asked",
                          label, e->capacity, req->count);
    }
    if (e->capacity) {
        uint32_t used = count_live(em, req->offer, 0);
        if ((uint64_t)used + req->count > e->capacity) {
            errno = EAGAIN;
            return spw_errorf(err, "no capacity: %s has %" PRIu32 " of %" PRIu32
                              " instances in use, %" PRIu32 " more asked", label, used,
                              e->capacity, req->count);
        }
    }
    if (req->spot && e->has_trace) {
        int64_t k = spw_spot_trace_tick(&e->trace, e->trace_start_s, req->now_s);
        uint32_t avail = spw_spot_trace_at(&e->trace, k);
        uint32_t held = count_live(em, req->offer, 1);
        if ((uint64_t)held + req->count > avail) {
            errno = EAGAIN;
            return spw_errorf(err, "no spot capacity: %s has %" PRIu32 " spot instances "
                              "available now (tick %" PRId64 " of %s), %" PRIu32
                              " held, %" PRIu32 " more asked", label, avail, k,
                              e->trace_path, held, req->count);
        }
    }

    old_n = em->ninst;
    old_seq = em->next_seq;
    old_rng = em->rng;
    if (em->ninst + req->count > em->instcap) {
        while (em->ninst + req->count > em->instcap)
            em->instcap = em->instcap ? em->instcap * 2 : 16;
        em->inst = spw_xrealloc(em->inst, em->instcap * sizeof(*em->inst));
    }
    for (uint32_t k = 0; k < req->count; k++) {
        inst_t *i = &em->inst[em->ninst++];
        memset(i, 0, sizeof(*i));
        i->seq = em->next_seq++;
        id_format(em, i->seq, i->v.id, sizeof(i->v.id));
        copy_str(i->token, sizeof(i->token), req->token ? req->token : "");
        copy_str(i->v.job_id, sizeof(i->v.job_id), req->job_id);
        i->v.offer = req->offer;
        copy_str(i->v.provider, sizeof(i->v.provider), of->provider);
        copy_str(i->v.region, sizeof(i->v.region), of->region);
        copy_str(i->v.zone, sizeof(i->v.zone), of->zone);
        copy_str(i->v.instance_type, sizeof(i->v.instance_type), of->instance_type);
        i->v.spot = req->spot ? 1 : 0;
        i->v.price_usd_per_h = req->spot ? of->spot_usd_per_h : of->ondemand_usd_per_h;
        i->v.state = SPW_INSTANCE_BOOTING;
        i->v.launched_s = req->now_s;
        i->v.ready_s = req->now_s + of->boot_delay_s;
        i->v.ended_s = NAN;
        i->preempt_at_s = INFINITY;
        i->boot_fd = -1;
        if ((req->spot || e->rate_ondemand) && e->rate_per_h > 0)
            i->preempt_at_s = req->now_s + spw_rng_exp(&em->rng, 3600.0 / e->rate_per_h);
    }
    const refusal_t *r = refusal_of(em, req->offer);
    size_t old_nq = em->nq;
    if (r)
        refuse_acquired(em, old_n, req->count, r);
    if (save(em, err) < 0) {
        em->ninst = old_n;
        em->next_seq = old_seq;
        em->rng = old_rng;
        em->nq = old_nq;
        return -1;
    }
    em->gen++;
    for (uint32_t k = 0; k < req->count; k++) {
        out[k] = em->inst[old_n + k].v;
        /* The refused ones, as the caller sees them: asked for and booting,
         * until poll() says FAILED. */
        out[k].state = SPW_INSTANCE_BOOTING;
        out[k].ended_s = NAN;
    }
    return 0;
}

static int em_release(void *pv, const spw_instance_t *inst, double now_s, spw_error_t *err)
{
    spw_emulated_t *em = pv;
    ptrdiff_t x;
    inst_t *i, old;

    if (!inst || !inst_terminated(inst) || !isfinite(now_s)) {
        errno = EINVAL;
        return spw_errorf(err, "release: no instance, an id without its NUL, or a "
                          "time that is not finite");
    }
    advance(em, now_s);
    if ((x = find(em, inst->id)) < 0) {
        errno = ENOENT;
        return spw_errorf(err, "release: no emulated instance '%s'", inst->id);
    }
    i = &em->inst[x];
    if (!live(i))
        return 0;
    old = *i;
    i->v.state = SPW_INSTANCE_RELEASED;
    i->v.ended_s = now_s < i->v.launched_s ? i->v.launched_s : now_s;
    if (save(em, err) < 0) {
        *i = old;
        return -1;
    }
    /* A boot the daemon has not polled yet is no news once it has let go. */
    queue_drop(em, SPW_INST_EV_READY, i->v.id);
    return 0;
}

static size_t em_poll(void *pv, double now_s, spw_inst_event_t *ev, size_t max)
{
    spw_emulated_t *em = pv;
    size_t n;

    hosts_step(em, now_s);
    advance(em, now_s);
    if (em->nq > 1)
        qsort(em->q, em->nq, sizeof(*em->q), qev_cmp);
    n = em->nq < max ? em->nq : max;
    for (size_t k = 0; k < n; k++)
        ev[k] = em->q[k].ev;
    if (n) {
        memmove(em->q, em->q + n, (em->nq - n) * sizeof(*em->q));
        em->nq -= n;
    }
    return n;
}

static int seq_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int em_reconcile(void *pv, const spw_instance_t *known, size_t n, double now_s,
                        spw_instance_t *orphans, size_t max, size_t *norphans,
                        spw_error_t *err)
{
    spw_emulated_t *em = pv;
    uint64_t *seqs = NULL;
    size_t nseq = 0, found = 0;

    if ((n && !known) || (max && !orphans) || !isfinite(now_s)) {
        errno = EINVAL;
        return spw_errorf(err, "reconcile: invalid arguments");
    }
    for (size_t k = 0; k < n; k++)
        if (!inst_terminated(&known[k])) {
            errno = EINVAL;
            return spw_errorf(err, "reconcile: known[%zu] has an id or job id without "
                              "its NUL", k);
        }
    advance(em, now_s);
    seqs = spw_xmalloc((n ? n : 1) * sizeof(*seqs));
    for (size_t k = 0; k < n; k++) {
        const spw_instance_t *kn = &known[k];
        ptrdiff_t x;
        const inst_t *p;

        if (!spw_instance_state_live(kn->state))
            continue;
        if ((x = find(em, kn->id)) < 0) {
            if (!queued(em, SPW_INST_EV_LOST, kn->id))
                queue_push(em, SPW_INST_EV_LOST, kn->id, kn->job_id, now_s);
            continue;
        }
        seqs[nseq++] = em->inst[x].seq;
        p = &em->inst[x];
        if (p->v.state == SPW_INSTANCE_READY && kn->state == SPW_INSTANCE_BOOTING &&
            !queued(em, SPW_INST_EV_READY, p->v.id))
            queue_push(em, SPW_INST_EV_READY, p->v.id, p->v.job_id, p->v.ready_s);
        else if (p->v.state == SPW_INSTANCE_PREEMPTED &&
                 !queued(em, SPW_INST_EV_PREEMPTED, p->v.id))
            queue_push(em, SPW_INST_EV_PREEMPTED, p->v.id, p->v.job_id, p->v.ended_s);
        else if (p->v.state == SPW_INSTANCE_RELEASED &&
                 !queued(em, SPW_INST_EV_RELEASED, p->v.id))
            queue_push(em, SPW_INST_EV_RELEASED, p->v.id, p->v.job_id, p->v.ended_s);
    }
    qsort(seqs, nseq, sizeof(*seqs), seq_cmp);
    for (size_t k = 0; k < em->ninst; k++) {
        const inst_t *i = &em->inst[k];
        if (!live(i) || bsearch(&i->seq, seqs, nseq, sizeof(*seqs), seq_cmp))
            continue;
        if (found < max)
            orphans[found] = i->v;
        found++;
    }
    free(seqs);
    if (norphans)
        *norphans = found;
    return 0;
}

int spw_emulated_preempt(spw_emulated_t *em, const char *instance_id, double now_s,
                         spw_error_t *err)
{
    ptrdiff_t x;
    inst_t *i, old;

    if (!isfinite(now_s)) {
        errno = EINVAL;
        return spw_errorf(err, "preempt: the time is not a finite number");
    }
    advance(em, now_s);
    if ((x = find(em, instance_id)) < 0) {
        errno = ENOENT;
        return spw_errorf(err, "preempt: no emulated instance '%s'",
                          instance_id ? instance_id : "(null)");
    }
    i = &em->inst[x];
    if (!live(i)) {
        errno = ESRCH;
        return spw_errorf(err, "preempt: emulated instance '%s' has already %s",
                          i->v.id, i->v.state == SPW_INSTANCE_RELEASED
                          ? "been released" : "been preempted");
    }
    old = *i;
    i->v.state = SPW_INSTANCE_PREEMPTED;
    i->v.ended_s = now_s < i->v.launched_s ? i->v.launched_s : now_s;
    if (save(em, err) < 0) {
        *i = old;
        return -1;
    }
    queue_drop(em, SPW_INST_EV_READY, i->v.id);
    queue_push(em, SPW_INST_EV_PREEMPTED, i->v.id, i->v.job_id, i->v.ended_s);
    return 0;
}

size_t spw_emulated_list(const spw_emulated_t *em, spw_instance_t *out, size_t max)
{
    for (size_t k = 0; k < em->ninst && k < max; k++)
        out[k] = em->inst[k].v;
    return em->ninst;
}

/* ---- create / destroy --------------------------------------------------- */

void spw_emulated_destroy(spw_emulated_t *em)
{
    if (!em)
        return;
    (void)spw_emulated_flush(em, NULL);
    for (size_t o = 0; o < em->noffers && em->emu; o++) {
        spw_spot_trace_clear(&em->emu[o].trace);
        free(em->emu[o].trace_path);
    }
    free(em->emu);
    for (size_t k = 0; k < em->ninst; k++)
        if (em->inst[k].boot_fd >= 0)
            close(em->inst[k].boot_fd);   /* its command runs on, unread */
    free(em->inst);
    free(em->q);
    free(em->boot_cmd);
    free(em->hosts_dir);
    for (size_t k = 0; k < em->nrefuse; k++) {
        free(em->refuse[k].zone);
        free(em->refuse[k].code);
    }
    free(em->refuse);
    free(em->state_path);
    free(em->tmp_path);
    free(em->state_dir);
    if (em->lock_fd >= 0)
        close(em->lock_fd);  /* releases the flock */
    free(em);
}

static void em_destroy(void *pv)
{
    spw_emulated_destroy(pv);
}

static int check_offer(const spw_offer_t *of, size_t o, spw_error_t *err)
{
    if (!fits(of->provider, SPW_INSTANCE_PROVIDER_MAX) ||
        !fits(of->region, SPW_INSTANCE_REGION_MAX) ||
        !fits(of->zone, SPW_INSTANCE_ZONE_MAX) ||
        !fits(of->instance_type, SPW_INSTANCE_TYPE_MAX))
        return spw_errorf(err, "emulated provider: offer %zu has a provider, region, "
                          "zone or instance type name longer than the %d, %d, %d, %d "
                          "bytes an instance records", o, SPW_INSTANCE_PROVIDER_MAX - 1,
                          SPW_INSTANCE_REGION_MAX - 1, SPW_INSTANCE_ZONE_MAX - 1,
                          SPW_INSTANCE_TYPE_MAX - 1);
    if (!utf8_ok(of->provider) || !utf8_ok(of->region) || !utf8_ok(of->zone) ||
        !utf8_ok(of->instance_type))
        return spw_errorf(err, "emulated provider: offer %zu has a name that is not "
                          "valid UTF-8", o);
    if (!(of->ondemand_usd_per_h >= 0) || !isfinite(of->ondemand_usd_per_h))
        return spw_errorf(err, "emulated provider: offer %zu has an on-demand price "
                          "that is not a number >= 0", o);
    if (!isnan(of->spot_usd_per_h) &&
        (!(of->spot_usd_per_h >= 0) || !isfinite(of->spot_usd_per_h)))
        return spw_errorf(err, "emulated provider: offer %zu has a spot price that is "
                          "neither a number >= 0 nor NAN (none)", o);
    if (!(of->boot_delay_s >= 0) || !isfinite(of->boot_delay_s))
        return spw_errorf(err, "emulated provider: offer %zu has a boot delay that is "
                          "not a number of seconds >= 0", o);
    return 0;
}

spw_emulated_t *spw_emulated_create(const spw_emulated_opts_t *opts, spw_error_t *err)
{
    spw_emulated_t *em;
    struct stat st;

    if (!opts || (opts->noffers && !opts->offers) ||
        (opts->noffer_opts && !opts->offer_opts)) {
        errno = EINVAL;
        spw_errorf(err, "emulated provider: no options, or an array given as NULL");
        return NULL;
    }
    if (!(opts->retain_ended_s >= 0) || !isfinite(opts->retain_ended_s)) {
        errno = EINVAL;
        spw_errorf(err, "emulated provider: retain_ended_s must be a number of "
                   "seconds >= 0");
        return NULL;
    }
    for (size_t o = 0; o < opts->noffers; o++)
        if (check_offer(&opts->offers[o], o, err) < 0) {
            errno = EINVAL;
            return NULL;
        }

    em = spw_xcalloc(1, sizeof(*em));
    em->lock_fd = -1;
    em->offers = opts->offers;
    em->noffers = opts->noffers;
    em->emu = spw_xcalloc(opts->noffers ? opts->noffers : 1, sizeof(*em->emu));
    em->next_seq = 1;
    em->polled_s = -INFINITY;
    em->quiet_s = NAN;
    em->retain_s = opts->retain_ended_s > 0 ? opts->retain_ended_s : SPW_EMULATED_RETAIN_S;
    if (opts->id_prefix && (!*opts->id_prefix || strlen(opts->id_prefix) >= ID_PREFIX_MAX ||
                            strlen(opts->id_prefix) + 7 >= SPW_INSTANCE_ID_MAX)) {
        spw_errorf(err, "emulated provider: id_prefix must be 1 to %d characters",
                   ID_PREFIX_MAX - 1);
        goto einval;
    }
    snprintf(em->id_prefix, sizeof(em->id_prefix), "%s", opts->id_prefix ? opts->id_prefix
                                                                           : ID_PREFIX);
    for (size_t k = 0; opts->refuse && opts->refuse[k]; k++) {
        const char *eq = strchr(opts->refuse[k], '=');
        if (!eq || eq == opts->refuse[k] || !code_known(eq + 1)) {
            spw_errorf(err, "emulated provider: refuse '%.60s': expected ZONE=CODE with an "
                       "EC2 error code such as InsufficientInstanceCapacity, "
                       "VcpuLimitExceeded, AuthFailure or InvalidParameterValue",
                       opts->refuse[k]);
            goto einval;
        }
        em->refuse = spw_xrealloc(em->refuse, (em->nrefuse + 1) * sizeof(*em->refuse));
        em->refuse[em->nrefuse].zone = spw_xstrdup(opts->refuse[k]);
        em->refuse[em->nrefuse].zone[eq - opts->refuse[k]] = '\0';
        em->refuse[em->nrefuse++].code = spw_xstrdup(eq + 1);
    }
    spw_rng_seed(&em->rng, opts->seed);
    if (opts->boot_command) {
        if (!opts->hosts_dir || !*opts->hosts_dir || access(opts->boot_command, X_OK) < 0) {
            spw_errorf(err, "emulated provider: boot_command %s %s", opts->boot_command,
                       !opts->hosts_dir || !*opts->hosts_dir ? "needs a hosts_dir"
                       : "is not an executable file");
            goto einval;
        }
        em->boot_cmd = spw_xstrdup(opts->boot_command);
        em->hosts_dir = spw_xstrdup(opts->hosts_dir);
    }

    for (size_t k = 0; k < opts->noffer_opts; k++) {
        const spw_offer_emulation_t *oo = &opts->offer_opts[k];
        offer_emu_t *e;
        if (oo->offer >= opts->noffers) {
            spw_errorf(err, "emulated provider: settings for offer %zu, but there are "
                       "only %zu offers", oo->offer, opts->noffers);
            goto einval;
        }
        e = &em->emu[oo->offer];
        if (e->capacity || e->rate_per_h > 0 || e->trace_path) {
            spw_errorf(err, "emulated provider: offer %zu has settings twice", oo->offer);
            goto einval;
        }
        if (!(oo->preempt_rate_per_h >= 0) || !isfinite(oo->preempt_rate_per_h)) {
            spw_errorf(err, "emulated provider: offer %zu: preempt_rate_per_h must be "
                       "a number >= 0", oo->offer);
            goto einval;
        }
        e->capacity = oo->capacity;
        e->rate_per_h = oo->preempt_rate_per_h;
        e->rate_ondemand = oo->rate_ondemand;
        if (oo->trace_path) {
            if (isnan(opts->offers[oo->offer].spot_usd_per_h)) {
                spw_errorf(err, "emulated provider: offer %zu has a spot trace (%s) but "
                           "no spot price", oo->offer, oo->trace_path);
                goto einval;
            }
            if (!isfinite(oo->trace_start_s)) {
                spw_errorf(err, "emulated provider: offer %zu: trace_start_s must be "
                           "a finite time", oo->offer);
                goto einval;
            }
            e->trace_path = spw_xstrdup(oo->trace_path);
            if (spw_spot_trace_load(oo->trace_path, &e->trace, err) < 0) {
                errno = EINVAL;
                goto error;
            }
            e->has_trace = 1;
            e->trace_start_s = oo->trace_start_s;
        }
    }

    if (opts->state_dir) {
        char *lock_path;
        if (stat(opts->state_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
            int e = errno;
            if (stat(opts->state_dir, &st) == 0)
                e = ENOTDIR;
            spw_errorf(err, "emulated provider: state dir %s: %s", opts->state_dir,
                       strerror(e));
            errno = e;
            goto error;
        }
        em->state_dir = spw_xstrdup(opts->state_dir);
        em->state_path = path_join(opts->state_dir, SPW_EMULATED_STATE_FILE);
        em->tmp_path = path_join(opts->state_dir, SPW_EMULATED_STATE_FILE ".tmp");
        lock_path = path_join(opts->state_dir, SPW_EMULATED_LOCK_FILE);
        em->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (em->lock_fd < 0) {
            int e = errno;
            spw_errorf(err, "emulated provider: cannot open %s: %s", lock_path, strerror(e));
            free(lock_path);
            errno = e;
            goto error;
        }
        if (flock(em->lock_fd, LOCK_EX | LOCK_NB) < 0) {
            int e = errno;
            if (e == EWOULDBLOCK)
                spw_errorf(err, "emulated provider: state dir %s is in use by another "
                           "emulated provider (%s is locked)", opts->state_dir, lock_path);
            else
                spw_errorf(err, "emulated provider: cannot lock %s: %s", lock_path,
                           strerror(e));
            free(lock_path);
            errno = e == EWOULDBLOCK ? EBUSY : e;
            goto error;
        }
        free(lock_path);
        if (load(em, err) < 0) {
            errno = EINVAL;
            goto error;
        }
    }
    return em;
einval:
    errno = EINVAL;
error: {
        int e = errno;
        spw_emulated_destroy(em);
        errno = e;
    }
    return NULL;
}

static int em_describe(void *pv, const char *id, spw_instance_t *out, spw_error_t *err)
{
    spw_emulated_t *em = pv;
    ptrdiff_t x = id ? find(em, id) : -1;
    if (x < 0) {
        errno = ENOENT;
        return spw_errorf(err, "describe: no emulated instance '%s'", id ? id : "(null)");
    }
    *out = em->inst[x].v;
    return 0;
}

/* The version 3 members: the functions of emulated.h. */
static int em_preempt(void *pv, const char *instance_id, double now_s, spw_error_t *err)
{
    return spw_emulated_preempt(pv, instance_id, now_s, err);
}

static void em_defer_saves(void *pv, int on) { spw_emulated_defer_saves(pv, on); }

/* Version 4 list: the live instances (the emulated cloud holds nothing
 * else that bills).  The daemon calls it under its lock for a provider
 * that is not async, so it never runs beside the loop's calls. */
static int em_list(void *pv, spw_instance_t *out, size_t max, size_t *n, spw_error_t *err)
{
    const spw_emulated_t *em = pv;
    (void)err;
    size_t c = 0;
    for (size_t k = 0; k < em->ninst; k++)
        if (live(&em->inst[k])) {
            if (c < max)
                out[c] = em->inst[k].v;
            c++;
        }
    *n = c;
    return 0;
}

static int em_health(void *pv, char *why, size_t len)
{
    const spw_emulated_t *em = pv;
    if (!em->health[0])
        return 0;
    snprintf(why, len, "%s", em->health);
    return -1;
}

static int em_flush(void *pv, spw_error_t *err) { return spw_emulated_flush(pv, err); }

const struct spw_provider_ops spw_emulated_ops = {
    .version = SPW_PROVIDER_VERSION,
    .name = "emulated",
    .emulated = 1,
    .acquire = em_acquire,
    .release = em_release,
    .poll = em_poll,
    .reconcile = em_reconcile,
    .destroy = em_destroy,
    .describe = em_describe,
    .preempt = em_preempt,
    .defer_saves = em_defer_saves,
    .flush = em_flush,
    .list = em_list,
    .health = em_health,
};
