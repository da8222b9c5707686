/* aws.c: the AWS EC2 provider (see aws.h).  The caller's thread only
 * records and queues; op threads sign and send the EC2 calls, and what EC2
 * answers becomes events that poll() hands back.  One mutex guards the
 * state; no thread holds it across a network call. */
#include "providers/aws/aws.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "providers/aws/creds.h"
#include "providers/aws/ec2.h"
#include "providers/aws/http.h"
#include "providers/ec2_errors.h"
#include "util/file.h"
#include "util/rng.h"

#define LOST_GRACE_S 60.0       /* an answered instance missing from describe
                                   this long is gone (EC2 is eventually
                                   consistent just after RunInstances) */
#define MAX_THREADS 32          /* op threads per account, at most */

/* ---- State ------------------------------------------------------------- */

/* One instance as the provider keeps it. */
typedef struct ainst {
    spw_instance_t in;          /* what the daemon sees */
    char token[SPW_ACQUIRE_TOKEN_MAX];  /* its acquisition's token; "" for one
                                   adopted by reconcile() until acquire() asks
                                   with the token again */
    unsigned k;                 /* its index in the acquisition */
    unsigned count;             /* instances in the acquisition */
    int ended;                  /* no more events: refused, lost, preempted,
                                   released */
    int released;               /* release() asked: terminate it */
    int terminating;            /* a TerminateInstances is queued or sent */
    int run_queued;             /* its acquisition's RunInstances is queued
                                   or in flight */
    int settled;                /* 1: nothing more to watch (ended, and EC2
                                   shows it gone or never made it) */
    double answered_s;          /* daemon clock when its cloud id was learned
                                   (or it was adopted), for LOST_GRACE_S */
} ainst_t;

typedef enum work_kind { WORK_RUN, WORK_TERMINATE } work_kind_t;

/* One queued call. */
typedef struct work {
    work_kind_t kind;           /* what to send */
    char token[SPW_ACQUIRE_TOKEN_MAX];  /* RUN: the acquisition */
    char id[SPW_INSTANCE_ID_MAX];  /* TERMINATE: the instance */
    int attempt;                /* retries so far */
    double not_before;          /* monotonic seconds: backoff */
} work_t;

typedef struct aws {
    char name[SPW_INSTANCE_ACCOUNT_MAX];  /* the account, for messages */
    const spw_offer_t *offers;  /* borrowed */
    size_t noffers;             /* entries in offers */
    char daemon_id[128];        /* the spillway:daemon tag */
    char **regions;             /* owned, NULL-terminated: regions served */
    char *endpoint_url;         /* owned, or NULL: the standard endpoints */
    int dry_run;                /* DryRun=true on RunInstances, TerminateInstances */
    char **opt_keys;            /* owned: option keys, NULL-terminated */
    char **opt_values;          /* owned: their values */
    char *ssh_key;              /* owned: the public key line, or NULL */
    char **groups;              /* owned, NULL-terminated: security groups, or NULL */
    int use_private;            /* address=private: reach instances at their
                                   private IP */
    long timeout_ms;            /* each EC2 call, ms */
    double describe_s;          /* seconds between describes of live instances */
    int describe_page;          /* MaxResults of a describe page, 5..1000 */
    int nthreads;               /* op threads */
    double spot_price_s;        /* seconds between refreshes of the live
                                   spot prices; 0 = none (catalog prices) */

    pthread_mutex_t mu;         /* guards everything below */
    pthread_cond_t cv;          /* work queued, or stop */
    pthread_t threads[MAX_THREADS];
    int stop;                   /* 1: threads end */
    ainst_t *inst;              /* owned */
    size_t ninst, cap_inst;
    work_t *work;               /* owned: the queue */
    size_t nwork, cap_work;
    spw_inst_event_t *ev;       /* owned: events for poll(), oldest first */
    size_t nev, cap_ev;
    double clock_s;             /* the latest daemon clock seen (events' time) */
    double next_describe;       /* monotonic seconds of the next describe */
    int describing;             /* a describe is in flight */
    double next_prices;         /* monotonic seconds of the next spot price
                                   refresh */
    int pricing;                /* a spot price refresh is in flight */
    double *spot_usd_per_h;     /* owned, noffers: each offer's live spot
                                   price, USD per hour; NAN = none known */
    int prices_changed;         /* 1: spot_usd_per_h changed since the last
                                   spot_prices() */
    char block_why[256];        /* account-wide block, "" = none */
    double block_until_s;       /* daemon clock it lasts to */
    spw_rng_t rng;              /* backoff jitter */

    pthread_mutex_t cmu;        /* guards creds (a refresh may block) */
    spw_aws_creds_cache_t creds;  /* the credential chain's answer */
    char *profile;              /* owned: the profile option, or NULL */
} aws_t;

/* Monotonic seconds: for backoff and the describe period only, never for
 * what the daemon sees. */
static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void spw_aws_instance_id(const char *token, unsigned k, char out[SPW_INSTANCE_ID_MAX])
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)token; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    snprintf(out, SPW_INSTANCE_ID_MAX, "aws-%016llx-%u", (unsigned long long)h, k % 1000000u);
}

static const char *opt(const aws_t *a, const char *key)
{
    for (size_t i = 0; a->opt_keys && a->opt_keys[i]; i++)
        if (strcmp(a->opt_keys[i], key) == 0)
            return a->opt_values[i];
    return NULL;
}

static int region_served(const aws_t *a, const char *region)
{
    for (size_t i = 0; a->regions[i]; i++)
        if (strcmp(a->regions[i], region) == 0)
            return 1;
    return 0;
}

static int offer_ours(const aws_t *a, size_t k)
{
    const spw_offer_t *o = &a->offers[k];
    return strcmp(o->provider, "aws") == 0 && region_served(a, o->region);
}

static const char *image_for(const aws_t *a, const char *region)
{
    char key[96];
    snprintf(key, sizeof(key), "image.%s", region);
    return opt(a, key) ? opt(a, key) : opt(a, "image");
}

/* The EC2 endpoint of region: the account's, the variables AWS's tools
 * honour, else the region's public one. */
static void endpoint_of(const aws_t *a, const char *region, char *url, size_t len)
{
    const char *e = a->endpoint_url;
    if (!e)
        e = getenv("AWS_ENDPOINT_URL_EC2");
    if (!e || !*e)
        e = getenv("AWS_ENDPOINT_URL");
    if (e && *e)
        snprintf(url, len, "%s", e);
    else
        snprintf(url, len, "https://ec2.%s.amazonaws.com", region);
}

static ainst_t *find_inst(aws_t *a, const char *id)
{
    for (size_t i = 0; i < a->ninst; i++)
        if (strcmp(a->inst[i].in.id, id) == 0)
            return &a->inst[i];
    return NULL;
}

static ainst_t *find_cloud(aws_t *a, const char *cloud_id)
{
    for (size_t i = 0; i < a->ninst; i++)
        if (strcmp(a->inst[i].in.cloud_id, cloud_id) == 0)
            return &a->inst[i];
    return NULL;
}

static void push_work(aws_t *a, const work_t *w)
{
    if (a->nwork == a->cap_work) {
        a->cap_work = a->cap_work ? 2 * a->cap_work : 16;
        a->work = spw_xrealloc(a->work, a->cap_work * sizeof(*a->work));
    }
    a->work[a->nwork++] = *w;
    pthread_cond_broadcast(&a->cv);
}

static void queue_terminate(aws_t *a, ainst_t *x)
{
    if (x->terminating || !x->in.cloud_id[0])
        return;
    work_t w = {.kind = WORK_TERMINATE};
    snprintf(w.id, sizeof(w.id), "%s", x->in.id);
    x->terminating = 1;
    push_work(a, &w);
}

/* Queues an event about x (its job and the time filled in). */
static void push_event(aws_t *a, ainst_t *x, spw_inst_event_kind_t kind, spw_block_t block,
                       double block_s, const char *reason)
{
    if (a->nev == a->cap_ev) {
        a->cap_ev = a->cap_ev ? 2 * a->cap_ev : 16;
        a->ev = spw_xrealloc(a->ev, a->cap_ev * sizeof(*a->ev));
    }
    spw_inst_event_t *e = &a->ev[a->nev++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    snprintf(e->instance_id, sizeof(e->instance_id), "%s", x->in.id);
    snprintf(e->job_id, sizeof(e->job_id), "%s", x->in.job_id);
    e->time_s = a->clock_s;
    e->block = block;
    e->block_s = block_s;
    snprintf(e->reason, sizeof(e->reason), "%s", reason ? reason : "");
}

/* Ends x with an event (FAILED, LOST, PREEMPTED) unless it has ended. */
static void end_inst(aws_t *a, ainst_t *x, spw_inst_event_kind_t kind, spw_block_t block,
                     double block_s, const char *reason)
{
    if (x->ended)
        return;
    x->ended = 1;
    if (kind == SPW_INST_EV_PREEMPTED)
        x->in.state = SPW_INSTANCE_PREEMPTED;
    else
        x->in.state = SPW_INSTANCE_RELEASED;
    x->in.ended_s = a->clock_s;
    push_event(a, x, kind, block, block_s, reason);
}

/* ---- Credentials ----------------------------------------------------- */

/* A copy of the account's credentials (the chain runs on this op thread
 * when they are missing or near expiry). */
static int get_creds(aws_t *a, spw_aws_creds_t *out, spw_error_t *err)
{
    spw_aws_creds_opts_t o = {.profile = a->profile, .region = a->regions[0],
                              .timeout_ms = a->timeout_ms};
    const spw_aws_creds_t *c;
    pthread_mutex_lock(&a->cmu);
    int rc = spw_aws_creds_get(&a->creds, &o, (double)time(NULL), &c, err);
    if (rc == 0)
        *out = *c;
    pthread_mutex_unlock(&a->cmu);
    return rc;
}

/* One EC2 call to region: signed with the account's credentials at the
 * wall clock's time (SigV4 needs the time the request is sent, which a
 * queued call does not know in advance). */
static int ec2_call(aws_t *a, const char *region, const char *body, spw_ec2_result_t *r,
                    long *status, spw_error_t *err)
{
    char url[512];
    spw_aws_creds_t c;
    *status = 0;
    endpoint_of(a, region, url, sizeof(url));
    if (get_creds(a, &c, err) < 0) {
        /* Credentials are the account's: nothing launches without them. */
        snprintf(r->error_code, sizeof(r->error_code), "AuthFailure");
        snprintf(r->error_message, sizeof(r->error_message), "%s", err->text);
        return 0;
    }
    spw_aws_endpoint_t ep = {.url = url, .region = region, .service = "ec2",
                             .timeout_ms = a->timeout_ms};
    int rc = spw_ec2_call(&ep, &c, time(NULL), body, r, status, err);
    memset(&c, 0, sizeof(c));
    return rc;
}

/* Sends body (then frees it) to region and takes the lock back, for the
 * caller to apply the answer under it.  Returns as ec2_call. */
static int send_then_lock(aws_t *a, const char *region, spw_strbuf_t *body,
                          spw_ec2_result_t *r, long *status, spw_error_t *err)
{
    int rc = ec2_call(a, region, body->s, r, status, err);
    free(body->s);
    pthread_mutex_lock(&a->mu);
    return rc;
}

/* Queues w again after a backoff with jitter, if it has retries left;
 * returns whether it did.  Under the lock. */
static int retry_later(aws_t *a, const work_t *w)
{
    if (w->attempt >= SPW_AWS_MAX_RETRIES)
        return 0;
    work_t again = *w;
    again.attempt++;
    again.not_before = mono_s() + spw_aws_backoff_s(w->attempt, 0.5, 8.0, &a->rng);
    push_work(a, &again);
    return 1;
}

/* ---- RunInstances ---------------------------------------------------- */

static int cmp_cloud(const void *x, const void *y)
{
    return strcmp(((const spw_ec2_instance_t *)x)->instance_id,
                  ((const spw_ec2_instance_t *)y)->instance_id);
}

/* The instances of token in the table, by k; how many. */
static size_t acq_insts(aws_t *a, const char *token, ainst_t **out, size_t max)
{
    char id0[SPW_INSTANCE_ID_MAX];
    spw_aws_instance_id(token, 0, id0);
    size_t plen = strlen(id0) - 1, n = 0;  /* "aws-HASH-" */
    for (size_t i = 0; i < a->ninst && n < max; i++) {
        if (strncmp(a->inst[i].in.id, id0, plen) != 0)
            continue;
        /* Kept in k order (reconcile() adopts in the daemon's order). */
        size_t j = n++;
        while (j > 0 && out[j - 1]->k > a->inst[i].k) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = &a->inst[i];
    }
    return n;
}

/* Applies a RunInstances answer (or its failure) to the acquisition. */
static void run_done(aws_t *a, work_t *w, spw_ec2_result_t *r, long status, int rc,
                     const char *why)
{
    ainst_t *x[256];
    size_t n = acq_insts(a, w->token, x, 256);
    if (!n)
        return;
    const spw_offer_t *o = &a->offers[x[0]->in.offer];
    char reason[256];
    if (rc == 0 && !r->error_code[0]) {
        qsort(r->inst, r->ninst, sizeof(*r->inst), cmp_cloud);
        for (size_t i = 0; i < n; i++) {
            x[i]->run_queued = 0;
            if (x[i]->k >= r->ninst) {
                end_inst(a, x[i], SPW_INST_EV_FAILED, SPW_BLOCK_NONE, 0,
                         "RunInstances answered fewer instances than MinCount");
                continue;
            }
            snprintf(x[i]->in.cloud_id, sizeof(x[i]->in.cloud_id), "%s",
                     r->inst[x[i]->k].instance_id);
            x[i]->answered_s = a->clock_s;
            /* Released or refused before EC2 answered: end it now. */
            if (x[i]->released || x[i]->ended)
                queue_terminate(a, x[i]);
        }
        a->next_describe = mono_s();
        return;
    }
    const spw_ec2_error_class_t *cls =
        spw_ec2_error_classify(rc == 0 ? r->error_code : "", rc == 0 ? status : 599);
    if (rc < 0) {
        snprintf(reason, sizeof(reason), "no answer from EC2 to RunInstances (%.200s)", why);
    } else {
        snprintf(reason, sizeof(reason), "%.64s in %.32s (%.32s, %s): %.100s", r->error_code,
                 o->zone[0] ? o->zone : o->region, o->instance_type,
                 x[0]->in.spot ? "spot" : "on-demand", r->error_message);
    }
    if (cls->success && a->dry_run) {
        for (size_t i = 0; i < n; i++) {
            x[i]->run_queued = 0;
            end_inst(a, x[i], SPW_INST_EV_FAILED, SPW_BLOCK_NONE, 0,
                     "dry run: RunInstances' permission check passed (DryRunOperation); "
                     "nothing was bought, so the instance never becomes ready");
        }
        return;
    }
    /* The same ClientToken again: EC2 never buys twice for it. */
    if (cls->retry && retry_later(a, w))
        return;
    if (cls->block == SPW_BLOCK_ACCOUNT) {
        snprintf(a->block_why, sizeof(a->block_why), "%s", reason);
        a->block_until_s = a->clock_s + cls->ttl_s;
    }
    for (size_t i = 0; i < n; i++) {
        x[i]->run_queued = 0;
        end_inst(a, x[i], SPW_INST_EV_FAILED, cls->block, cls->ttl_s, reason);
    }
}

static void do_run(aws_t *a, work_t *w)
{
    /* The request, built under the lock from the acquisition's record. */
    ainst_t *x[1];
    pthread_mutex_lock(&a->mu);
    size_t n = acq_insts(a, w->token, x, 1);
    if (!n) {
        pthread_mutex_unlock(&a->mu);
        return;
    }
    const spw_offer_t *o = &a->offers[x[0]->in.offer];
    char subnet_key[96], region[SPW_INSTANCE_REGION_MAX], job[SPW_INSTANCE_JOB_MAX];
    snprintf(subnet_key, sizeof(subnet_key), "subnet.%s", o->zone);
    snprintf(region, sizeof(region), "%s", o->region);
    snprintf(job, sizeof(job), "%s", x[0]->in.job_id);
    spw_ec2_run_t req = {.image_id = image_for(a, o->region),
                         .instance_type = o->instance_type,
                         .zone = o->zone,
                         .subnet_id = opt(a, subnet_key),
                         .security_groups = (const char *const *)a->groups,
                         .key_name = opt(a, "key_name"),
                         .ssh_public_key = a->ssh_key,
                         .count = x[0]->count,
                         .spot = x[0]->in.spot,
                         .client_token = w->token,
                         .daemon_id = a->daemon_id,
                         .job_id = job,
                         .dry_run = a->dry_run};
    spw_strbuf_t body = {0};
    spw_ec2_run_form(&req, &body);
    pthread_mutex_unlock(&a->mu);

    spw_ec2_result_t r = {0};
    spw_error_t err = {{0}};
    long status = 0;
    int rc = send_then_lock(a, region, &body, &r, &status, &err);
    run_done(a, w, &r, status, rc, err.text);
    pthread_mutex_unlock(&a->mu);
    spw_ec2_result_clear(&r);
}

/* ---- TerminateInstances ------------------------------------------------ */

static void do_terminate(aws_t *a, work_t *w)
{
    pthread_mutex_lock(&a->mu);
    ainst_t *x = find_inst(a, w->id);
    if (!x || !x->in.cloud_id[0]) {
        pthread_mutex_unlock(&a->mu);
        return;
    }
    char cloud[SPW_INSTANCE_CLOUD_ID_MAX], region[SPW_INSTANCE_REGION_MAX];
    snprintf(cloud, sizeof(cloud), "%s", x->in.cloud_id);
    snprintf(region, sizeof(region), "%s", x->in.region[0] || x->in.offer >= a->noffers
                                               ? x->in.region : a->offers[x->in.offer].region);
    pthread_mutex_unlock(&a->mu);

    const char *ids[] = {cloud};
    spw_strbuf_t body = {0};
    spw_ec2_terminate_form(ids, 1, a->dry_run, &body);
    spw_ec2_result_t r = {0};
    spw_error_t err = {{0}};
    long status = 0;
    int rc = send_then_lock(a, region, &body, &r, &status, &err);
    x = find_inst(a, w->id);
    const spw_ec2_error_class_t *cls =
        spw_ec2_error_classify(rc == 0 ? r.error_code : "", rc == 0 ? status : 599);
    int failed = rc < 0 || (r.error_code[0] && !cls->success);
    if (x && !(failed && cls->retry && retry_later(a, w))) {
        /* Done, or given up: the next describe asks again while EC2 still
         * shows it running. */
        x->terminating = 0;
        if (failed && cls->block == SPW_BLOCK_ACCOUNT) {
            snprintf(a->block_why, sizeof(a->block_why), "TerminateInstances of %.32s: %.64s: %.120s",
                     cloud, r.error_code, r.error_message);
            a->block_until_s = a->clock_s + cls->ttl_s;
        }
    }
    pthread_mutex_unlock(&a->mu);
    spw_ec2_result_clear(&r);
}

/* ---- DescribeInstances ------------------------------------------------- */

/* Every instance of region carrying this daemon's tag, all pages, into r
 * (its inst array grows page by page).  0, or -1 with err. */
static int describe_region(aws_t *a, const char *region, spw_ec2_result_t *all,
                           spw_error_t *err)
{
    char next[1024] = "";
    spw_ec2_result_clear(all);
    for (int page = 0; page < 1000; page++) {
        spw_strbuf_t body = {0};
        spw_ec2_describe_form(a->daemon_id, NULL, 0, next, a->describe_page, &body);
        spw_ec2_result_t r = {0};
        long status = 0;
        int rc = ec2_call(a, region, body.s, &r, &status, err);
        free(body.s);
        if (rc == 0 && r.error_code[0])
            rc = spw_errorf(err, "DescribeInstances in %s: %s: %s", region, r.error_code,
                            r.error_message);
        if (rc < 0) {
            spw_ec2_result_clear(&r);
            return -1;
        }
        all->inst = spw_xrealloc(all->inst, (all->ninst + r.ninst + 1) * sizeof(*all->inst));
        if (r.ninst)  /* r.inst is NULL on an empty page */
            memcpy(all->inst + all->ninst, r.inst, r.ninst * sizeof(*r.inst));
        all->ninst += r.ninst;
        snprintf(next, sizeof(next), "%s", r.next_token);
        spw_ec2_result_clear(&r);
        if (!next[0])
            return 0;
    }
    return spw_errorf(err, "DescribeInstances in %s: more than 1000 pages", region);
}

static int cmp_token_id(const void *x, const void *y)
{
    const spw_ec2_instance_t *p = x, *q = y;
    const char *a = spw_ec2_tag(p, SPW_EC2_TAG_TOKEN), *b = spw_ec2_tag(q, SPW_EC2_TAG_TOKEN);
    int c = strcmp(a ? a : "", b ? b : "");
    return c ? c : strcmp(p->instance_id, q->instance_id);
}

/* The provider's id of a described instance: from its token tag and its
 * rank among the token's instances (all is sorted by cmp_token_id); else
 * "aws-" + the cloud id. */
static void described_id(const spw_ec2_result_t *all, size_t i, char *id)
{
    const char *tok = spw_ec2_tag(&all->inst[i], SPW_EC2_TAG_TOKEN);
    if (!tok || !*tok) {
        snprintf(id, SPW_INSTANCE_ID_MAX, "aws-%.26s", all->inst[i].instance_id);
        return;
    }
    unsigned k = 0;
    for (size_t j = i; j > 0; j--) {
        const char *t = spw_ec2_tag(&all->inst[j - 1], SPW_EC2_TAG_TOKEN);
        if (!t || strcmp(t, tok) != 0)
            break;
        k++;
    }
    spw_aws_instance_id(tok, k, id);
}

/* Records an instance EC2 shows with the token of sib's acquisition that
 * the acquisition did not get (a second purchase an endpoint without
 * ClientToken idempotency made, or one tagged by hand) as released, and
 * terminates it: nothing billing that no one uses. */
static void add_surplus(aws_t *a, size_t sib, const spw_ec2_instance_t *e)
{
    if (a->ninst == a->cap_inst) {
        a->cap_inst = 2 * a->cap_inst + 16;
        a->inst = spw_xrealloc(a->inst, a->cap_inst * sizeof(*a->inst));
    }
    ainst_t *x = &a->inst[a->ninst++];
    *x = a->inst[sib];
    snprintf(x->in.id, sizeof(x->in.id), "aws-%.26s", e->instance_id);
    snprintf(x->in.cloud_id, sizeof(x->in.cloud_id), "%s", e->instance_id);
    x->in.state = SPW_INSTANCE_RELEASED;
    x->in.ended_s = a->clock_s;
    x->ended = x->released = 1;
    x->terminating = x->run_queued = x->settled = 0;
    x->answered_s = a->clock_s;
    queue_terminate(a, x);
}

static int state_gone(const char *s)
{
    return strcmp(s, "shutting-down") == 0 || strcmp(s, "terminated") == 0 ||
           strcmp(s, "stopping") == 0 || strcmp(s, "stopped") == 0;
}

/* Applies one region's describe to the instances of that region. */
static void describe_done(aws_t *a, const char *region, spw_ec2_result_t *all)
{
    qsort(all->inst, all->ninst, sizeof(*all->inst), cmp_token_id);
    /* Instances EC2 shows (surplus ones may be added to the table). */
    unsigned char *matched = spw_xcalloc(a->ninst + all->ninst + 1, 1);
    for (size_t i = 0; i < all->ninst; i++) {
        spw_ec2_instance_t *e = &all->inst[i];
        char id[SPW_INSTANCE_ID_MAX];
        described_id(all, i, id);
        ainst_t *x = find_cloud(a, e->instance_id);
        if (!x) {
            const char *tok = spw_ec2_tag(e, SPW_EC2_TAG_TOKEN);
            char id0[SPW_INSTANCE_ID_MAX];
            spw_aws_instance_id(tok ? tok : "", 0, id0);
            ainst_t *sib = tok ? find_inst(a, id0) : NULL;
            x = find_inst(a, id);
            /* While its RunInstances is in flight, the answer says which
             * instances the token bought. */
            if (sib && sib->run_queued)
                continue;
            if (sib && sib->token[0] && (!x || x->in.cloud_id[0]) && !state_gone(e->state)) {
                size_t at = a->ninst;
                add_surplus(a, (size_t)(sib - a->inst), e);
                matched[at] = 1;
                continue;
            }
            if (!x || x->in.cloud_id[0])
                continue;   /* not ours to decide: list() shows it */
            /* Its RunInstances answer was lost (or a restart came between):
             * the token finds it. */
            snprintf(x->in.cloud_id, sizeof(x->in.cloud_id), "%s", e->instance_id);
            x->answered_s = a->clock_s;
        }
        matched[x - a->inst] = 1;
        int gone = state_gone(e->state);
        if ((x->released || x->ended) && !gone) {
            queue_terminate(a, x);
            continue;
        }
        if (x->ended) {
            x->settled = strcmp(e->state, "shutting-down") != 0;
            continue;
        }
        if (strcmp(e->state, "running") == 0 && x->in.state == SPW_INSTANCE_BOOTING) {
            const char *addr = a->use_private || !e->public_ip[0] ? e->private_ip : e->public_ip;
            snprintf(x->in.addr, sizeof(x->in.addr), "%s", addr);
            x->in.state = SPW_INSTANCE_READY;
            x->in.ready_s = a->clock_s;
            push_event(a, x, SPW_INST_EV_READY, SPW_BLOCK_NONE, 0, "");
        } else if (gone) {
            char reason[256];
            if (strcmp(e->state_reason, "Server.SpotInstanceTermination") == 0)
                snprintf(reason, sizeof(reason), "spot interruption: %.64s (%.150s)", e->state_reason,
                         e->state_message);
            else
                snprintf(reason, sizeof(reason), "%s outside spillway: %.64s (%.120s)", e->state,
                         e->state_reason[0] ? e->state_reason : "no state reason",
                         e->state_message);
            end_inst(a, x, SPW_INST_EV_PREEMPTED, SPW_BLOCK_NONE, 0, reason);
            if (strcmp(e->state, "stopped") == 0 || strcmp(e->state, "stopping") == 0)
                queue_terminate(a, x);
            else
                x->settled = strcmp(e->state, "terminated") == 0;
        }
    }
    /* Instances EC2 does not show (any more, or yet). */
    for (size_t i = 0; i < a->ninst; i++) {
        ainst_t *x = &a->inst[i];
        if (matched[i] || x->settled || x->run_queued ||
            strcmp(a->offers[x->in.offer].region, region) != 0)
            continue;
        if (x->ended) {
            /* Ended without EC2's answer (refused, released early): watched a
             * while in case its launch went through after all. */
            double since = x->in.cloud_id[0] ? x->answered_s : x->in.ended_s;
            x->settled = a->clock_s - since >= LOST_GRACE_S;
            continue;
        }
        if (x->answered_s == 0 || a->clock_s - x->answered_s < LOST_GRACE_S)
            continue;
        end_inst(a, x, SPW_INST_EV_LOST, SPW_BLOCK_NONE, 0,
                 x->in.cloud_id[0] ? "EC2 no longer shows the instance"
                                   : "EC2 shows no instance for the launch token");
        x->settled = 1;
    }
    free(matched);
}

/* Describes every region that has live instances. */
static void do_describe(aws_t *a)
{
    pthread_mutex_lock(&a->mu);
    char regions[16][SPW_INSTANCE_REGION_MAX];
    size_t nr = 0;
    for (size_t i = 0; i < a->ninst; i++) {
        const ainst_t *x = &a->inst[i];
        if (x->settled)
            continue;
        const char *r = a->offers[x->in.offer].region;
        size_t j = 0;
        while (j < nr && strcmp(regions[j], r) != 0)
            j++;
        if (j == nr && nr < 16)
            snprintf(regions[nr++], sizeof(regions[0]), "%s", r);
    }
    pthread_mutex_unlock(&a->mu);
    for (size_t j = 0; j < nr; j++) {
        spw_ec2_result_t all = {0};
        spw_error_t err = {{0}};
        if (describe_region(a, regions[j], &all, &err) == 0) {
            pthread_mutex_lock(&a->mu);
            describe_done(a, regions[j], &all);
            pthread_mutex_unlock(&a->mu);
        }
        spw_ec2_result_clear(&all);
    }
}

/* ---- DescribeSpotPriceHistory ------------------------------------------ */

/* Asks EC2 the spot price of every instance type of the account's spot
 * offers, one call per (region, type), every zone at once; each offer
 * takes the newest price of its zone.  A call that fails leaves the
 * prices as they were (the catalog's, or the last ones). */
static void do_prices(aws_t *a)
{
    time_t start = time(NULL) - 3600;
    for (size_t k = 0; k < a->noffers; k++) {
        const spw_offer_t *o = &a->offers[k];
        if (!offer_ours(a, k) || isnan(o->spot_usd_per_h))
            continue;
        /* One call per (region, type): the first offer of the pair asks. */
        size_t first = 0;
        while (first < k && !(offer_ours(a, first) && !isnan(a->offers[first].spot_usd_per_h) &&
                              strcmp(a->offers[first].region, o->region) == 0 &&
                              strcmp(a->offers[first].instance_type, o->instance_type) == 0))
            first++;
        if (first < k)
            continue;
        spw_strbuf_t body = {0};
        spw_ec2_spot_price_form(o->instance_type, NULL, start, &body);
        spw_ec2_result_t r = {0};
        long status;
        spw_error_t err = {{0}};
        int rc = ec2_call(a, o->region, body.s, &r, &status, &err);
        free(body.s);
        if (rc == 0 && !r.error_code[0]) {
            pthread_mutex_lock(&a->mu);
            for (size_t m = k; m < a->noffers; m++) {
                const spw_offer_t *om = &a->offers[m];
                if (!offer_ours(a, m) || isnan(om->spot_usd_per_h) ||
                    strcmp(om->region, o->region) || strcmp(om->instance_type, o->instance_type))
                    continue;
                double best_t = -1, price = NAN;
                for (size_t i = 0; i < r.nprices; i++)
                    if (strcmp(r.prices[i].zone, om->zone) == 0 &&
                        strcmp(r.prices[i].instance_type, om->instance_type) == 0 &&
                        r.prices[i].time_s > best_t && r.prices[i].price_usd_per_h > 0) {
                        best_t = r.prices[i].time_s;
                        price = r.prices[i].price_usd_per_h;
                    }
                if (!isnan(price) && !(price == a->spot_usd_per_h[m])) {
                    a->spot_usd_per_h[m] = price;
                    a->prices_changed = 1;
                }
            }
            pthread_mutex_unlock(&a->mu);
        }
        spw_ec2_result_clear(&r);
    }
}

/* ---- Op threads ------------------------------------------------------ */

static int live_work(const aws_t *a)
{
    for (size_t i = 0; i < a->ninst; i++) {
        if (!a->inst[i].settled)
            return 1;
    }
    return 0;
}

/* A periodic call (describe, prices) of an op thread, under the lock: when
 * none is in flight (*busy) and it is due (*next, monotonic seconds), runs
 * fn without the lock, the next one period later, and returns 1; else
 * brings *wake forward to when it is due and returns 0. */
static int periodic(aws_t *a, int *busy, double *next, double period, void (*fn)(aws_t *),
                    double now, double *wake)
{
    if (*busy)
        return 0;
    if (*next > now) {
        if (*next < *wake)
            *wake = *next;
        return 0;
    }
    *busy = 1;
    *next = now + period;
    pthread_mutex_unlock(&a->mu);
    fn(a);
    pthread_mutex_lock(&a->mu);
    *busy = 0;
    return 1;
}

static void *op_thread(void *arg)
{
    aws_t *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        double now = mono_s(), wake = now + 3600;
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < a->nwork; i++) {
            if (a->work[i].not_before <= now) {
                best = i;
                break;
            }
            if (a->work[i].not_before < wake)
                wake = a->work[i].not_before;
        }
        if (best != SIZE_MAX) {
            work_t w = a->work[best];
            memmove(a->work + best, a->work + best + 1, (a->nwork - best - 1) * sizeof(w));
            a->nwork--;
            pthread_mutex_unlock(&a->mu);
            if (w.kind == WORK_RUN)
                do_run(a, &w);
            else
                do_terminate(a, &w);
            pthread_mutex_lock(&a->mu);
            continue;
        }
        if (a->spot_price_s > 0 &&
            periodic(a, &a->pricing, &a->next_prices, a->spot_price_s, do_prices, now, &wake))
            continue;
        if (live_work(a) &&
            periodic(a, &a->describing, &a->next_describe, a->describe_s, do_describe, now, &wake))
            continue;
        /* Sleep until the earliest due item, new work, or stop; at most a
         * second, as a describe may become due through poll()'s clock. */
        double until = wake < now + 1.0 ? wake : now + 1.0;
        struct timespec ts = {.tv_sec = (time_t)until,
                              .tv_nsec = (long)((until - floor(until)) * 1e9)};
        pthread_cond_timedwait(&a->cv, &a->mu, &ts);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ---- The function table ------------------------------------------------ */

static void set_clock(aws_t *a, double now_s)
{
    if (now_s > a->clock_s)
        a->clock_s = now_s;
}

static int aws_acquire(void *pv, const spw_acquire_t *req, spw_instance_t *out,
                       spw_error_t *err)
{
    aws_t *a = pv;
    if (req->offer >= a->noffers || !offer_ours(a, req->offer)) {
        errno = EINVAL;
        return spw_errorf(err, "account %s does not serve offer %zu", a->name, req->offer);
    }
    if (req->count == 0 || req->count > 256) {
        errno = EINVAL;
        return spw_errorf(err, "account %s: %u instances in one acquisition (1 to 256)",
                          a->name, req->count);
    }
    if (!req->token || !*req->token || strlen(req->token) >= SPW_ACQUIRE_TOKEN_MAX ||
        strspn(req->token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            strlen(req->token)) {
        errno = EINVAL;
        return spw_errorf(err, "account %s: an acquisition needs a launch token of "
                               "[A-Za-z0-9._-] shorter than %d bytes (EC2's ClientToken)",
                          a->name, SPW_ACQUIRE_TOKEN_MAX);
    }
    const spw_offer_t *o = &a->offers[req->offer];
    if (req->spot && !(o->spot_usd_per_h >= 0)) {
        errno = EINVAL;
        return spw_errorf(err, "account %s: offer %s in %s has no spot price", a->name,
                          o->instance_type, o->zone);
    }
    pthread_mutex_lock(&a->mu);
    set_clock(a, req->now_s);
    if (a->block_why[0] && a->clock_s < a->block_until_s) {
        int n = spw_errorf(err, "account %s cannot launch: %s", a->name, a->block_why);
        pthread_mutex_unlock(&a->mu);
        errno = EAGAIN;
        return n;
    }
    /* Asked again with a token it has seen (after a restart): the same
     * instances, and the same ClientToken sent again where EC2's answer is
     * not known. */
    ainst_t *have[256];
    size_t n = acq_insts(a, req->token, have, 256);
    if (n && n != req->count) {
        pthread_mutex_unlock(&a->mu);
        errno = EINVAL;
        return spw_errorf(err, "account %s: token %s bought %zu instances, not %u", a->name,
                          req->token, n, req->count);
    }
    if (n) {
        int resend = 0;
        for (size_t i = 0; i < n; i++) {
            out[i] = have[i]->in;
            snprintf(have[i]->token, sizeof(have[i]->token), "%s", req->token);
            have[i]->count = (unsigned)n;
            resend |= !have[i]->ended && !have[i]->in.cloud_id[0] && !have[i]->run_queued;
        }
        if (resend) {
            work_t w = {.kind = WORK_RUN};
            snprintf(w.token, sizeof(w.token), "%s", req->token);
            for (size_t i = 0; i < n; i++)
                have[i]->run_queued = 1;
            push_work(a, &w);
        }
        pthread_mutex_unlock(&a->mu);
        return 0;
    }
    if (a->ninst + req->count > a->cap_inst) {
        a->cap_inst = (a->ninst + req->count) * 2;
        a->inst = spw_xrealloc(a->inst, a->cap_inst * sizeof(*a->inst));
    }
    for (unsigned k = 0; k < req->count; k++) {
        ainst_t *x = &a->inst[a->ninst++];
        memset(x, 0, sizeof(*x));
        spw_aws_instance_id(req->token, k, x->in.id);
        snprintf(x->in.job_id, sizeof(x->in.job_id), "%s", req->job_id ? req->job_id : "");
        x->in.offer = req->offer;
        snprintf(x->in.provider, sizeof(x->in.provider), "%s", o->provider);
        snprintf(x->in.region, sizeof(x->in.region), "%s", o->region);
        snprintf(x->in.zone, sizeof(x->in.zone), "%s", o->zone);
        snprintf(x->in.instance_type, sizeof(x->in.instance_type), "%s", o->instance_type);
        x->in.spot = req->spot;
        x->in.price_usd_per_h = req->spot ? o->spot_usd_per_h : o->ondemand_usd_per_h;
        x->in.state = SPW_INSTANCE_BOOTING;
        x->in.launched_s = req->now_s;
        x->in.ready_s = req->now_s + o->boot_delay_s;
        x->in.ended_s = NAN;
        snprintf(x->token, sizeof(x->token), "%s", req->token);
        x->k = k;
        x->count = req->count;
        x->run_queued = 1;
        out[k] = x->in;
    }
    work_t w = {.kind = WORK_RUN};
    snprintf(w.token, sizeof(w.token), "%s", req->token);
    push_work(a, &w);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

/* Takes instance in into the table (the caller holds mu). */
static ainst_t *adopt(aws_t *a, const spw_instance_t *in, double now_s)
{
    if (a->ninst == a->cap_inst) {
        a->cap_inst = a->cap_inst ? 2 * a->cap_inst : 16;
        a->inst = spw_xrealloc(a->inst, a->cap_inst * sizeof(*a->inst));
    }
    ainst_t *x = &a->inst[a->ninst++];
    memset(x, 0, sizeof(*x));
    x->in = *in;
    const char *dash = strrchr(x->in.id, '-');
    x->k = dash ? (unsigned)atoi(dash + 1) : 0;
    x->count = x->k + 1;
    x->answered_s = now_s;
    return x;
}

static int aws_release(void *pv, const spw_instance_t *inst, double now_s, spw_error_t *err)
{
    aws_t *a = pv;
    pthread_mutex_lock(&a->mu);
    set_clock(a, now_s);
    ainst_t *x = find_inst(a, inst->id);
    /* One this provider never tracked (an orphan list() found, with its
     * cloud id and region): taken in only to be terminated. */
    if (!x && inst->cloud_id[0] && (inst->region[0] || inst->offer < a->noffers))
        x = adopt(a, inst, now_s);
    if (!x) {
        pthread_mutex_unlock(&a->mu);
        errno = ENOENT;
        return spw_errorf(err, "account %s has no instance %s", a->name, inst->id);
    }
    if (!x->released) {
        x->released = 1;
        if (!x->ended) {
            x->ended = 1;
            x->in.state = SPW_INSTANCE_RELEASED;
            x->in.ended_s = now_s;
        }
        /* Without a cloud id yet, the RunInstances answer terminates it. */
        queue_terminate(a, x);
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

static size_t aws_poll(void *pv, double now_s, spw_inst_event_t *ev, size_t max)
{
    aws_t *a = pv;
    pthread_mutex_lock(&a->mu);
    set_clock(a, now_s);
    size_t n = a->nev < max ? a->nev : max;
    if (n) {  /* ev may be NULL while nothing was ever queued */
        memcpy(ev, a->ev, n * sizeof(*ev));
        memmove(a->ev, a->ev + n, (a->nev - n) * sizeof(*ev));
        a->nev -= n;
    }
    pthread_mutex_unlock(&a->mu);
    return n;
}

/* Adopts the daemon's live instances; EC2's view of them comes from the
 * op threads' describe (events through poll()), and the account's orphans
 * from list(), which may block: none are reported here. */
static int aws_reconcile(void *pv, const spw_instance_t *known, size_t n, double now_s,
                         spw_instance_t *orphans, size_t max, size_t *norphans,
                         spw_error_t *err)
{
    aws_t *a = pv;
    (void)orphans;
    (void)max;
    (void)err;
    pthread_mutex_lock(&a->mu);
    set_clock(a, now_s);
    for (size_t i = 0; i < n; i++) {
        if (!spw_instance_state_live(known[i].state) || find_inst(a, known[i].id) ||
            known[i].offer >= a->noffers)
            continue;
        adopt(a, &known[i], now_s);
    }
    *norphans = 0;
    a->next_describe = mono_s();
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

static int aws_describe(void *pv, const char *id, spw_instance_t *out, spw_error_t *err)
{
    aws_t *a = pv;
    pthread_mutex_lock(&a->mu);
    ainst_t *x = find_inst(a, id);
    if (x)
        *out = x->in;
    pthread_mutex_unlock(&a->mu);
    if (!x) {
        errno = ENOENT;
        return spw_errorf(err, "account %s has no instance %s", a->name, id);
    }
    return 0;
}

/* The offer an instance EC2 shows belongs to: its region, zone, type and
 * market; noffers if none. */
static size_t offer_of(const aws_t *a, const spw_ec2_instance_t *e, const char *region)
{
    for (size_t k = 0; k < a->noffers; k++) {
        const spw_offer_t *o = &a->offers[k];
        if (offer_ours(a, k) && strcmp(o->region, region) == 0 &&
            strcmp(o->instance_type, e->instance_type) == 0 &&
            (!o->zone[0] || strcmp(o->zone, e->zone) == 0) &&
            (!e->spot || o->spot_usd_per_h >= 0))
            return k;
    }
    return a->noffers;
}

static int aws_list(void *pv, spw_instance_t *out, size_t max, size_t *n, spw_error_t *err)
{
    aws_t *a = pv;
    size_t count = 0;
    for (size_t r = 0; a->regions[r]; r++) {
        spw_ec2_result_t all = {0};
        if (describe_region(a, a->regions[r], &all, err) < 0) {
            spw_ec2_result_clear(&all);
            return -1;
        }
        qsort(all.inst, all.ninst, sizeof(*all.inst), cmp_token_id);
        for (size_t i = 0; i < all.ninst; i++) {
            const spw_ec2_instance_t *e = &all.inst[i];
            if (strcmp(e->state, "terminated") == 0)
                continue;
            if (count < max) {
                spw_instance_t *x = &out[count];
                memset(x, 0, sizeof(*x));
                described_id(&all, i, x->id);
                const char *job = spw_ec2_tag(e, SPW_EC2_TAG_JOB);
                snprintf(x->job_id, sizeof(x->job_id), "%s", job ? job : "");
                x->offer = offer_of(a, e, a->regions[r]);
                snprintf(x->provider, sizeof(x->provider), "aws");
                snprintf(x->region, sizeof(x->region), "%s", a->regions[r]);
                snprintf(x->zone, sizeof(x->zone), "%s", e->zone);
                snprintf(x->instance_type, sizeof(x->instance_type), "%s", e->instance_type);
                x->spot = e->spot;
                if (x->offer < a->noffers)
                    x->price_usd_per_h = e->spot ? a->offers[x->offer].spot_usd_per_h
                                                 : a->offers[x->offer].ondemand_usd_per_h;
                x->state = strcmp(e->state, "running") == 0 ? SPW_INSTANCE_READY
                           : state_gone(e->state)           ? SPW_INSTANCE_RELEASED
                                                            : SPW_INSTANCE_BOOTING;
                x->launched_s = e->launch_s;
                x->ready_s = e->launch_s;
                x->ended_s = NAN;
                const char *addr =
                    a->use_private || !e->public_ip[0] ? e->private_ip : e->public_ip;
                snprintf(x->addr, sizeof(x->addr), "%s", addr);
                snprintf(x->cloud_id, sizeof(x->cloud_id), "%s", e->instance_id);
                snprintf(x->account, sizeof(x->account), "%s", a->name);
            }
            count++;
        }
        spw_ec2_result_clear(&all);
    }
    *n = count;
    return 0;
}

static int aws_spot_prices(void *pv, double *usd_per_h, size_t n)
{
    aws_t *a = pv;
    pthread_mutex_lock(&a->mu);
    int changed = a->prices_changed;
    if (changed) {
        for (size_t k = 0; k < n; k++)
            usd_per_h[k] = k < a->noffers ? a->spot_usd_per_h[k] : NAN;
        a->prices_changed = 0;
    }
    pthread_mutex_unlock(&a->mu);
    return changed;
}

static int aws_health(void *pv, char *why, size_t len)
{
    aws_t *a = pv;
    pthread_mutex_lock(&a->mu);
    int blocked = a->block_why[0] && a->clock_s < a->block_until_s;
    if (blocked)
        snprintf(why, len, "account %s: %s", a->name, a->block_why);
    pthread_mutex_unlock(&a->mu);
    return blocked;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void aws_destroy(void *pv)
{
    aws_t *a = pv;
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < a->nthreads; i++)
        pthread_join(a->threads[i], NULL);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->cmu);
    pthread_cond_destroy(&a->cv);
    memset(&a->creds, 0, sizeof(a->creds));
    char **lists[] = {a->regions, a->opt_keys, a->opt_values, a->groups};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        free_strv(lists[i]);
    void *owned[] = {a->endpoint_url, a->ssh_key, a->profile, a->inst, a->work, a->ev,
                     a->spot_usd_per_h, a};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        free(owned[i]);
}

/* ---- Making it ------------------------------------------------------- */

static const char *const known_keys[] = {"image", "security_groups", "key_name",
                                         "ssh_public_key", "user", "address", "profile",
                                         "timeout_s", "describe_s", "describe_page",
                                         "threads", "imds_url", "spot_price_s", NULL};

static int parse_options(aws_t *a, const char *const *opts, spw_error_t *err)
{
    size_t n = 0;
    while (opts && opts[n])
        n++;
    a->opt_keys = spw_xcalloc(n + 1, sizeof(char *));
    a->opt_values = spw_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(opts[i], '=');
        if (!eq)
            return spw_errorf(err, "account %s: option '%s' is not key=value", a->name, opts[i]);
        char *key = spw_xstrdup(opts[i]);
        key[eq - opts[i]] = '\0';
        a->opt_keys[i] = key;
        a->opt_values[i] = spw_xstrdup(eq + 1);
        int ok = strncmp(key, "image.", 6) == 0 || strncmp(key, "subnet.", 7) == 0;
        for (size_t k = 0; !ok && known_keys[k]; k++)
            ok = strcmp(key, known_keys[k]) == 0;
        if (!ok)
            return spw_errorf(err, "account %s: unknown option '%s' (known: image, image.REGION, "
                                   "subnet.ZONE, security_groups, key_name, ssh_public_key, user, "
                                   "address, profile, timeout_s, describe_s, describe_page, threads, "
                                   "imds_url, spot_price_s)",
                              a->name, key);
    }
    const char *v;
    if ((v = opt(a, "address")) && strcmp(v, "public") && strcmp(v, "private"))
        return spw_errorf(err, "account %s: address must be public or private, not '%s'",
                          a->name, v);
    a->use_private = v && strcmp(v, "private") == 0;
    /* Read by the daemon (its hosts ask it for spot notices); checked here,
     * where the account's options are. */
    if ((v = opt(a, "imds_url")) && strcmp(v, "none") != 0 && strncmp(v, "http://", 7) != 0 &&
        strncmp(v, "https://", 8) != 0)
        return spw_errorf(err, "account %s: imds_url must be an http:// or https:// URL, or "
                               "none, not '%s'", a->name, v);
    a->timeout_ms = 20000;
    if ((v = opt(a, "timeout_s"))) {
        double t = strtod(v, NULL);
        if (!(t > 0 && t <= 600))
            return spw_errorf(err, "account %s: timeout_s must be in (0, 600], not '%s'",
                              a->name, v);
        a->timeout_ms = (long)(t * 1000);
    }
    a->describe_s = 2.0;
    if ((v = opt(a, "describe_s"))) {
        a->describe_s = strtod(v, NULL);
        if (!(a->describe_s >= 0.1 && a->describe_s <= 3600))
            return spw_errorf(err, "account %s: describe_s must be in [0.1, 3600], not '%s'",
                              a->name, v);
    }
    a->describe_page = 500;
    if ((v = opt(a, "describe_page"))) {
        a->describe_page = atoi(v);
        if (a->describe_page < 5 || a->describe_page > 1000)
            return spw_errorf(err, "account %s: describe_page must be 5 to 1000 (EC2's "
                                   "MaxResults), not '%s'",
                              a->name, v);
    }
    a->nthreads = 4;
    if ((v = opt(a, "threads"))) {
        a->nthreads = atoi(v);
        if (a->nthreads < 1 || a->nthreads > MAX_THREADS)
            return spw_errorf(err, "account %s: threads must be 1 to %d, not '%s'", a->name,
                              MAX_THREADS, v);
    }
    if ((v = opt(a, "security_groups")) && *v) {
        size_t ng = 1;
        for (const char *p = v; *p; p++)
            ng += *p == ',';
        a->groups = spw_xcalloc(ng + 1, sizeof(char *));
        size_t g = 0;
        for (const char *p = v; *p;) {
            size_t l = strcspn(p, ",");
            if (l)
                a->groups[g++] = strndup(p, l);
            p += l + (p[l] == ',');
        }
    }
    a->spot_price_s = 300;
    if ((v = opt(a, "spot_price_s"))) {
        a->spot_price_s = strtod(v, NULL);
        if (!(a->spot_price_s == 0 || (a->spot_price_s >= 1 && a->spot_price_s <= 86400)))
            return spw_errorf(err, "account %s: spot_price_s must be 0 (catalog prices) or in "
                                   "[1, 86400], not '%s'",
                              a->name, v);
    }
    if ((v = opt(a, "profile")))
        a->profile = spw_xstrdup(v);
    if ((v = opt(a, "ssh_public_key")) && *v) {
        /* A key line as it is, or the path of a .pub file. */
        if (strncmp(v, "ssh-", 4) == 0 || strncmp(v, "ecdsa-", 6) == 0 ||
            strncmp(v, "sk-", 3) == 0) {
            a->ssh_key = spw_xstrdup(v);
        } else {
            size_t len;
            a->ssh_key = spw_read_file(v, &len, err);
            if (!a->ssh_key)
                return -1;
            a->ssh_key[strcspn(a->ssh_key, "\r\n")] = '\0';
        }
    }
    return 0;
}

void *spw_aws_create(const spw_aws_opts_t *o, spw_error_t *err)
{
    aws_t *a = spw_xcalloc(1, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", o->name ? o->name : "aws");
    a->offers = o->offers;
    a->noffers = o->noffers;
    a->dry_run = o->dry_run;
    a->spot_usd_per_h = spw_xcalloc(o->noffers + 1, sizeof(double));
    for (size_t k = 0; k < o->noffers; k++)
        a->spot_usd_per_h[k] = NAN;
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->cmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    spw_rng_seed(&a->rng, (uint64_t)(uintptr_t)a ^ (uint64_t)mono_s());
    if (o->endpoint_url && *o->endpoint_url)
        a->endpoint_url = spw_xstrdup(o->endpoint_url);
    if (!o->daemon_id || !*o->daemon_id || strlen(o->daemon_id) >= sizeof(a->daemon_id)) {
        spw_errorf(err, "account %s: the daemon id (the spillway:daemon tag) is required",
                   a->name);
        goto error;
    }
    snprintf(a->daemon_id, sizeof(a->daemon_id), "%s", o->daemon_id);
    if (parse_options(a, o->options, err) < 0)
        goto error;
    /* Regions: the account's list, else its offers'. */
    size_t nr = 0;
    a->regions = spw_xcalloc(o->noffers + 64 + 1, sizeof(char *));
    if (o->regions) {
        for (; o->regions[nr] && nr < 64; nr++)
            a->regions[nr] = spw_xstrdup(o->regions[nr]);
    } else {
        for (size_t k = 0; k < o->noffers; k++) {
            if (strcmp(o->offers[k].provider, "aws") || !o->offers[k].region[0])
                continue;
            size_t j = 0;
            while (j < nr && strcmp(a->regions[j], o->offers[k].region))
                j++;
            if (j == nr)
                a->regions[nr++] = spw_xstrdup(o->offers[k].region);
        }
    }
    if (!nr) {
        spw_errorf(err, "account %s serves no region (no aws offer in the catalog and no "
                        "regions: list)",
                   a->name);
        goto error;
    }
    for (size_t k = 0; k < o->noffers; k++) {
        if (!offer_ours(a, k))
            continue;
        if (!image_for(a, o->offers[k].region)) {
            spw_errorf(err, "account %s: no image for region %s (offer %s): set option "
                            "image=ami-... or image.%s=ami-...",
                       a->name, o->offers[k].region, o->offers[k].instance_type,
                       o->offers[k].region);
            goto error;
        }
        if (strlen(o->offers[k].instance_type) >= SPW_INSTANCE_TYPE_MAX ||
            strlen(o->offers[k].zone) >= SPW_INSTANCE_ZONE_MAX ||
            strlen(o->offers[k].region) >= SPW_INSTANCE_REGION_MAX) {
            spw_errorf(err, "account %s: offer %s's names are too long", a->name,
                       o->offers[k].instance_type);
            goto error;
        }
    }
    spw_aws_http_init();
    for (int i = 0; i < a->nthreads; i++) {
        if (pthread_create(&a->threads[i], NULL, op_thread, a) != 0) {
            a->nthreads = i;
            spw_errorf(err, "account %s: cannot start its op threads", a->name);
            goto error;
        }
    }
    return a;
error:
    aws_destroy(a);
    return NULL;
}

const struct spw_provider_ops spw_aws_ops = {
    .version = SPW_PROVIDER_VERSION,
    .name = "aws",
    .emulated = 0,
    .async = 1,
    .acquire = aws_acquire,
    .release = aws_release,
    .poll = aws_poll,
    .reconcile = aws_reconcile,
    .destroy = aws_destroy,
    .describe = aws_describe,
    .list = aws_list,
    .health = aws_health,
    .spot_prices = aws_spot_prices,
};
