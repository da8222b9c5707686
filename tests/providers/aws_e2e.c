/* aws_e2e.c: the aws provider end to end against a fake EC2 endpoint
 * (tests/fake/ec2.py, which checks every request against botocore's EC2
 * model and SigV4 signer), driven by tests/providers/aws.sh with the fake's
 * URL in SPW_FAKE_EC2_URL.  TAP.  Launch with ClientToken, tags, user data
 * and subnet; READY with an address; the same token never buying twice,
 * after a "restart" too; spot and its interruption; a capacity error, a
 * throttle retried, an account-wide refusal (health); release; list() with
 * an orphan; dry_run; credentials from IMDSv2. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tap.h"
#include "providers/aws/aws.h"
#include "providers/aws/ec2.h"
#include "providers/aws/http.h"

static const char *url;         /* the fake's */
static const struct spw_provider_ops *ops = &spw_aws_ops;
static char s_aws[] = "aws", s_use1[] = "us-east-1", s_a[] = "us-east-1a", s_b[] = "us-east-1b";
static char s_g4[] = "g4dn.xlarge", s_p3[] = "p3.2xlarge";
static spw_offer_t offers[3];

static double now(void)
{
    return (double)time(NULL);
}

/* GET or POST a control endpoint of the fake; the JSON answer (caller
 * decrefs), NULL on failure. */
static json_t *fake(const char *method, const char *path, const char *body)
{
    char u[512];
    long status = 0;
    spw_strbuf_t r = {0};
    spw_error_t err;
    snprintf(u, sizeof(u), "%s%s", url, path);
    const char *const hdr[] = {"Content-Type: application/json", NULL};
    json_t *j = NULL;
    if (spw_aws_http(method, u, hdr, body, 5000, &status, &r, &err) == 0 && status == 200)
        j = json_loadb(r.s, r.len, 0, NULL);
    else
        diag("fake %s %s: HTTP %ld %s", method, path, status, r.s ? r.s : err.text);
    free(r.s);
    return j;
}

/* Instances the fake holds with client token tok (not terminated when
 * live_only). */
static int fake_count(const char *tok, int live_only)
{
    json_t *st = fake("GET", "/_fake/state", NULL), *i;
    size_t k;
    int n = 0;
    json_array_foreach(json_object_get(st, "instances"), k, i) {
        const char *t = json_string_value(json_object_get(i, "client_token"));
        const char *s = json_string_value(json_object_get(i, "state"));
        n += t && strcmp(t, tok) == 0 && (!live_only || (strcmp(s, "terminated") &&
                                                         strcmp(s, "shutting-down")));
    }
    json_decref(st);
    return n;
}

/* The fake's instance with cloud id id (a new reference), or NULL. */
static json_t *fake_inst(const char *id)
{
    json_t *st = fake("GET", "/_fake/state", NULL), *i, *found = NULL;
    size_t k;
    json_array_foreach(json_object_get(st, "instances"), k, i) {
        if (strcmp(json_string_value(json_object_get(i, "id")), id) == 0)
            found = json_incref(i);
    }
    json_decref(st);
    return found;
}

/* Calls of action with ClientToken tok. */
static int fake_calls(const char *action, const char *tok, const char *code)
{
    json_t *st = fake("GET", "/_fake/state", NULL), *c;
    size_t k;
    int n = 0;
    json_array_foreach(json_object_get(st, "calls"), k, c) {
        const char *a = json_string_value(json_object_get(c, "action"));
        const char *t = json_string_value(json_object_get(json_object_get(c, "params"),
                                                          "ClientToken"));
        const char *cc = json_string_value(json_object_get(c, "code"));
        n += a && strcmp(a, action) == 0 && (!tok || (t && strcmp(t, tok) == 0)) &&
             (!code || (cc && strcmp(cc, code) == 0));
    }
    json_decref(st);
    return n;
}

/* Polls pv until want events of kind arrived (others are kept too) or 15 s
 * passed; the events in ev, how many. */
static size_t wait_events(void *pv, spw_inst_event_kind_t kind, size_t want,
                          spw_inst_event_t *ev, size_t max)
{
    size_t n = 0, hits = 0;
    for (int i = 0; i < 1500 && hits < want && n < max; i++) {
        size_t got = ops->poll(pv, now(), ev + n, max - n);
        for (size_t j = n; j < n + got; j++)
            hits += ev[j].kind == kind;
        n += got;
        if (hits < want)
            usleep(10000);  /* waits for the op threads' events */
    }
    return n;
}

static size_t count_kind(const spw_inst_event_t *ev, size_t n, spw_inst_event_kind_t kind)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ev[i].kind == kind;
    return c;
}

static void *make(const char *daemon, int dry_run, spw_error_t *err)
{
    const char *opts[] = {"image.us-east-1=ami-0abc1234", "describe_s=0.2", "timeout_s=10",
                          "ssh_public_key=ssh-ed25519 AAAAC3NzaE2E spillway-e2e",
                          "subnet.us-east-1a=subnet-us-east-1a", "key_name=spillway", NULL};
    /* moto has no such subnet or key pair, and its own AMI ids. */
    if (getenv("SPW_MOTO_EC2_URL")) {
        opts[0] = "image=ami-12c6146b";
        opts[2] = "timeout_s=60";  /* moto's first call loads its EC2 data */
        opts[4] = NULL;
    }
    spw_aws_opts_t o = {.name = "e2e", .offers = offers, .noffers = 3, .daemon_id = daemon,
                        .endpoint_url = url, .dry_run = dry_run, .options = opts};
    return spw_aws_create(&o, err);
}

static int acquire(void *pv, size_t offer, unsigned count, int spot, const char *tok,
                   spw_instance_t *out, spw_error_t *err)
{
    spw_acquire_t r = {.offer = offer, .count = count, .spot = spot, .job_id = "job-e2e",
                       .now_s = now(), .token = tok};
    return ops->acquire(pv, &r, out, err);
}

/* Against moto's EC2 emulator (SPW_MOTO_EC2_URL): what moto implements
 * (no ClientToken idempotency, no signature checks, no control endpoints):
 * launch, READY with addresses, tags, release, list().  moto's XML answers
 * come from templates nobody here wrote. */
static int moto(void)
{
    spw_error_t err = {{0}};
    spw_inst_event_t ev[32];
    spw_instance_t in[4], d, ls[32];
    size_t nl = 0;
    void *a = make("d-moto", 0, &err);
    ok(a != NULL, "provider made against moto at %s (%s)", url, err.text);
    ok(a && acquire(a, 0, 2, 0, "d-moto.job-1.a1", in, &err) == 0, "acquire 2 on-demand");
    size_t n = a ? wait_events(a, SPW_INST_EV_READY, 2, ev, 32) : 0;
    if (!ok(count_kind(ev, n, SPW_INST_EV_READY) == 2, "both READY (%zu events)", n) && n)
        diag("%s: %s", spw_inst_event_name(ev[0].kind), ev[0].reason);
    ok(a && ops->describe(a, in[1].id, &d, &err) == 0 && strncmp(d.cloud_id, "i-", 2) == 0 &&
           d.addr[0],
       "describe: cloud id %s, address %s", d.cloud_id, d.addr);
    ok(a && acquire(a, 1, 1, 1, "d-moto.job-2.a1", in + 2, &err) == 0 &&
           count_kind(ev, wait_events(a, SPW_INST_EV_READY, 1, ev, 32), SPW_INST_EV_READY) == 1,
       "a spot instance READY");
    int listed = a && ops->list(a, ls, 32, &nl, &err) == 0;
    ok(listed && nl == 3, "list: the 3 by tag (%zu; %s)", nl, err.text);
    int tagged = 0;
    for (size_t i = 0; i < nl; i++)
        tagged += strcmp(ls[i].job_id, "job-e2e") == 0 && strcmp(ls[i].account, "e2e") == 0 &&
                  (strcmp(ls[i].id, in[0].id) == 0 || strcmp(ls[i].id, in[1].id) == 0 ||
                   strcmp(ls[i].id, in[2].id) == 0);
    is(tagged, 3, "  each under its token's id with its job tag");
    ok(a && ops->release(a, &in[0], now(), &err) == 0, "release one");
    int gone = 0;
    for (int i = 0; a && i < 500 && !gone; i++) {
        gone = 1;
        if (ops->list(a, ls, 32, &nl, &err) == 0)
            for (size_t j = 0; j < nl; j++)
                gone &= !(strcmp(ls[j].id, in[0].id) == 0 && ls[j].state != SPW_INSTANCE_RELEASED);
        if (!gone)
            usleep(20000);  /* waits for moto's answer to the terminate */
    }
    ok(gone, "  moto shows it shutting down or terminated");
    if (a)
        ops->destroy(a);
    return done_testing();
}

int main(void)
{
    url = getenv("SPW_MOTO_EC2_URL");
    if (url) {
        offers[0] = (spw_offer_t){s_aws, s_use1, s_a, s_g4, -1, 1, 0.526, 0.21, 60, NULL, 0, 0};
        offers[1] = (spw_offer_t){s_aws, s_use1, s_b, s_g4, -1, 1, 0.526, 0.22, 60, NULL, 0, 0};
        offers[2] = offers[0];
        return moto();
    }
    url = getenv("SPW_FAKE_EC2_URL");
    if (!url) {
        printf("1..0 # SKIP SPW_FAKE_EC2_URL is not set (run tests/providers/aws.sh)\n");
        return 0;
    }
    offers[0] = (spw_offer_t){s_aws, s_use1, s_a, s_g4, -1, 1, 0.526, 0.21, 60, NULL, 0, 0};
    offers[1] = (spw_offer_t){s_aws, s_use1, s_b, s_g4, -1, 1, 0.526, 0.22, 60, NULL, 0, 0};
    offers[2] = (spw_offer_t){s_aws, s_use1, s_a, s_p3, -1, 1, 3.06, 0.92, 60, NULL, 0, 0};
    spw_error_t err = {{0}};
    spw_inst_event_t ev[32];
    spw_instance_t in[8], d;
    json_t *st;
    void *a = make("d-e2e", 0, &err);
    if (!ok(a != NULL, "provider made against %s (%s)", url, err.text))
        return done_testing();

    /* 1. Launch: 2 on-demand, READY with addresses. */
    const char *t1 = "d-e2e.job-1.a1";
    ok(acquire(a, 0, 2, 0, t1, in, &err) == 0 && in[0].state == SPW_INSTANCE_BOOTING,
       "acquire 2 on-demand g4dn.xlarge in us-east-1a: queued, BOOTING");
    size_t n = wait_events(a, SPW_INST_EV_READY, 2, ev, 32);
    ok(count_kind(ev, n, SPW_INST_EV_READY) == 2, "both READY once EC2 says running (%zu events)",
       n);
    spw_instance_t d1;
    ok(ops->describe(a, in[0].id, &d, &err) == 0 && strncmp(d.cloud_id, "i-", 2) == 0 &&
           strncmp(d.addr, "203.0.113.", 10) == 0 && d.state == SPW_INSTANCE_READY,
       "describe: cloud id %s, public address %s", d.cloud_id, d.addr);
    ops->describe(a, in[1].id, &d1, &err);
    ok(strcmp(d.cloud_id, d1.cloud_id) != 0, "two distinct cloud instances");
    json_t *fi = fake_inst(d.cloud_id);
    json_t *tags = json_object_get(fi, "tags");
    ok(fi && strcmp(json_string_value(json_object_get(tags, "spillway:daemon")), "d-e2e") == 0 &&
           strcmp(json_string_value(json_object_get(tags, "spillway:job")), "job-e2e") == 0 &&
           strcmp(json_string_value(json_object_get(tags, "spillway:token")), t1) == 0,
       "EC2 holds it with the daemon, job and token tags");
    const char *ud = json_string_value(json_object_get(fi, "user_data"));
    ok(ud && strncmp(ud, "#cloud-config\n", 14) == 0 &&
           strstr(ud, "ssh_authorized_keys:\n  - ssh-ed25519 AAAAC3NzaE2E spillway-e2e"),
       "its user data: #cloud-config with the ssh key");
    ok(strcmp(json_string_value(json_object_get(fi, "client_token")), t1) == 0 &&
           strcmp(json_string_value(json_object_get(fi, "market")), "on-demand") == 0 &&
           strcmp(json_string_value(json_object_get(fi, "subnet")), "subnet-us-east-1a") == 0 &&
           strcmp(json_string_value(json_object_get(fi, "key_name")), "spillway") == 0,
       "ClientToken, market, subnet and key name as asked");
    json_decref(fi);
    is(fake_calls("RunInstances", t1, NULL), 1, "one RunInstances for the token");

    /* 1b. An instance carrying the token that the launch did not get (as an
     * endpoint without ClientToken idempotency would make): terminated. */
    spw_strbuf_t b = {0};
    spw_ec2_form_init(&b, "RunInstances");
    const char *kv[] = {"ImageId", "ami-0abc1234", "InstanceType", "g4dn.xlarge", "MinCount", "1",
                        "MaxCount", "1", "TagSpecification.1.ResourceType", "instance",
                        "TagSpecification.1.Tag.1.Key", "spillway:daemon",
                        "TagSpecification.1.Tag.1.Value", "d-e2e",
                        "TagSpecification.1.Tag.2.Key", "spillway:token",
                        "TagSpecification.1.Tag.2.Value", t1, NULL};
    for (size_t i = 0; kv[i]; i += 2)
        spw_ec2_form_add(&b, kv[i], kv[i + 1]);
    spw_aws_creds_t cr = {.access_key_id = "AKIDFAKEEC2TEST",
                          .secret_access_key = "fake-secret-key"};
    spw_aws_endpoint_t ep = {.url = url, .region = "us-east-1", .service = "ec2",
                             .timeout_ms = 5000};
    spw_ec2_result_t rr = {0};
    long hs = 0;
    ok(spw_ec2_call(&ep, &cr, time(NULL), b.s, &rr, &hs, &err) == 0 && rr.ninst == 1 &&
           !rr.error_code[0],
       "a surplus instance with the launch's token, bought behind the provider's back");
    free(b.s);
    char surplus[32] = "";
    if (rr.ninst)
        snprintf(surplus, sizeof(surplus), "%s", rr.inst[0].instance_id);
    spw_ec2_result_clear(&rr);
    int ended = 0;
    for (int i = 0; i < 1500 && !ended && surplus[0]; i++) {
        ops->poll(a, now(), ev, 32);
        json_t *x = fake_inst(surplus);
        const char *s = json_string_value(json_object_get(x, "state"));
        ended = s && (strcmp(s, "shutting-down") == 0 || strcmp(s, "terminated") == 0);
        json_decref(x);
        if (!ended)
            usleep(10000);  /* waits for the provider's describe and terminate */
    }
    ok(ended && fake_count(t1, 1) == 2, "  the provider terminates it; the launch's 2 stay");

    /* 2. The same token again, and after a restart: never bought twice. */
    spw_instance_t again[2];
    ok(acquire(a, 0, 2, 0, t1, again, &err) == 0 && strcmp(again[0].id, in[0].id) == 0,
       "the same token again: the same instances");
    ops->destroy(a);
    a = make("d-e2e", 0, &err);
    spw_instance_t known[2] = {in[1], in[0]};  /* in the daemon's order, not k's */
    known[0].cloud_id[0] = known[1].cloud_id[0] = '\0';  /* kill -9 before the answer */
    size_t norph = 0;
    ok(a && ops->reconcile(a, known, 2, now(), NULL, 0, &norph, &err) == 0,
       "a new provider (a restart) adopts them without their cloud ids");
    ok(acquire(a, 0, 2, 0, t1, again, &err) == 0 && strcmp(again[0].id, in[0].id) == 0 &&
           strcmp(again[1].id, in[1].id) == 0,
       "  acquire with the committed token: the same ids, in order");
    n = wait_events(a, SPW_INST_EV_READY, 2, ev, 32);
    ops->describe(a, in[0].id, &d, &err);
    ok(count_kind(ev, n, SPW_INST_EV_READY) == 2 && strncmp(d.cloud_id, "i-", 2) == 0,
       "  READY again, the cloud id found by the token (%s)", d.cloud_id);
    ok(fake_count(t1, 1) == 2 && fake_calls("RunInstances", t1, NULL) == 2,
       "  EC2 holds exactly 2 live instances for the token after 2 RunInstances (ClientToken)");

    /* 3. Release: TerminateInstances. */
    ok(ops->release(a, &in[0], now(), &err) == 0, "release one");
    int gone = 0;
    for (int i = 0; i < 1500 && !gone; i++) {
        json_t *x = fake_inst(d.cloud_id);
        const char *s = json_string_value(json_object_get(x, "state"));
        gone = s && (strcmp(s, "shutting-down") == 0 || strcmp(s, "terminated") == 0);
        json_decref(x);
        if (!gone)
            usleep(10000);
    }
    ok(gone, "EC2 terminates it");

    /* 4. Spot, and its interruption. */
    const char *t2 = "d-e2e.job-2.a1";
    ok(acquire(a, 1, 1, 1, t2, in + 2, &err) == 0, "acquire 1 spot in us-east-1b");
    n = wait_events(a, SPW_INST_EV_READY, 1, ev, 32);
    ops->describe(a, in[2].id, &d, &err);
    fi = fake_inst(d.cloud_id);
    ok(count_kind(ev, n, SPW_INST_EV_READY) == 1 &&
           strcmp(json_string_value(json_object_get(fi, "market")), "spot") == 0 &&
           strcmp(json_string_value(json_object_get(fi, "zone")), "us-east-1b") == 0,
       "READY, bought on the spot market in us-east-1b");
    json_decref(fi);
    char body[256];
    snprintf(body, sizeof(body), "{\"instance\": \"%s\", \"notice_s\": 0.2}", d.cloud_id);
    json_decref(fake("POST", "/_fake/interrupt", body));
    n = wait_events(a, SPW_INST_EV_PREEMPTED, 1, ev, 32);
    ok(n && ev[n - 1].kind == SPW_INST_EV_PREEMPTED &&
           strcmp(ev[n - 1].instance_id, in[2].id) == 0 &&
           strstr(ev[n - 1].reason, "Server.SpotInstanceTermination"),
       "the interruption: PREEMPTED (%s)", n ? ev[n - 1].reason : "");

    /* 5. A capacity error: the offer in its zone and market, with a TTL. */
    json_decref(fake("POST", "/_fake/inject",
                     "{\"action\": \"RunInstances\", \"code\": \"InsufficientInstanceCapacity\", "
                     "\"zone\": \"us-east-1a\", \"instance_type\": \"p3.2xlarge\"}"));
    ok(acquire(a, 2, 1, 0, "d-e2e.job-3.a1", in + 3, &err) == 0, "acquire p3.2xlarge in us-east-1a");
    n = wait_events(a, SPW_INST_EV_FAILED, 1, ev, 32);
    ok(n && ev[n - 1].kind == SPW_INST_EV_FAILED && ev[n - 1].block == SPW_BLOCK_OFFER &&
           ev[n - 1].block_s == 180 && strstr(ev[n - 1].reason, "InsufficientInstanceCapacity") &&
           strstr(ev[n - 1].reason, "us-east-1a"),
       "InsufficientInstanceCapacity: FAILED, the offer blocked 180 s (%s)",
       n ? ev[n - 1].reason : "");
    ok(ops->acquire(a, &(spw_acquire_t){.offer = 1, .count = 1, .job_id = "job-e2e",
                                        .now_s = now(), .token = "d-e2e.job-3.a2"},
                    in + 4, &err) == 0 &&
           count_kind(ev, wait_events(a, SPW_INST_EV_READY, 1, ev, 32), SPW_INST_EV_READY) == 1,
       "the next offer (us-east-1b) launches");

    /* 6. A throttle: retried with the same ClientToken. */
    json_decref(fake("POST", "/_fake/inject",
                     "{\"action\": \"RunInstances\", \"code\": \"RequestLimitExceeded\", "
                     "\"count\": 2}"));
    const char *t4 = "d-e2e.job-4.a1";
    ok(acquire(a, 0, 1, 0, t4, in + 5, &err) == 0, "acquire under a throttle");
    n = wait_events(a, SPW_INST_EV_READY, 1, ev, 32);
    ok(count_kind(ev, n, SPW_INST_EV_READY) == 1 && count_kind(ev, n, SPW_INST_EV_FAILED) == 0,
       "RequestLimitExceeded twice, then READY: retried, not failed");
    ok(fake_calls("RunInstances", t4, "RequestLimitExceeded") == 2 &&
           fake_calls("RunInstances", t4, NULL) == 3 && fake_count(t4, 0) == 1,
       "  3 calls with the same ClientToken, one instance");

    /* 7. list(): this daemon's instances, an orphan of another provider
     * object included; not another daemon's. */
    void *other = make("d-e2e", 0, &err);
    void *stranger = make("d-other", 0, &err);
    ok(other && stranger && acquire(other, 0, 1, 0, "d-e2e.orphan.a1", in + 6, &err) == 0 &&
           acquire(stranger, 0, 1, 0, "d-other.job.a1", in + 7, &err) == 0,
       "an orphan (its provider destroyed unreleased) and another daemon's instance");
    wait_events(other, SPW_INST_EV_READY, 1, ev, 32);
    wait_events(stranger, SPW_INST_EV_READY, 1, ev, 32);
    ops->destroy(other);
    ops->destroy(stranger);
    spw_instance_t ls[32];
    size_t nl = 0;
    ok(ops->list(a, ls, 32, &nl, &err) == 0, "list (%s)", err.text);
    int orphan = 0, foreign = 0, released = 0;
    for (size_t i = 0; i < nl; i++) {
        orphan += strcmp(ls[i].id, in[6].id) == 0 && strncmp(ls[i].cloud_id, "i-", 2) == 0 &&
                  strcmp(ls[i].account, "e2e") == 0 && ls[i].offer == 0;
        foreign += strcmp(ls[i].id, in[7].id) == 0;
        released += strcmp(ls[i].id, in[0].id) == 0 && ls[i].state != SPW_INSTANCE_RELEASED;
    }
    ok(orphan == 1 && foreign == 0 && released == 0,
       "list: the orphan under its token's id, not the other daemon's, the released one not live "
       "(%zu listed)",
       nl);

    /* 7b. Pages: 12 instances, 5 a page. */
    const char *popts[] = {"image=ami-0abc1234", "describe_s=0.2", "describe_page=5", NULL};
    spw_aws_opts_t po = {.name = "pages", .offers = offers, .noffers = 3, .daemon_id = "d-pages",
                         .endpoint_url = url, .options = popts};
    void *pg = spw_aws_create(&po, &err);
    spw_instance_t many[12];
    ok(pg && acquire(pg, 1, 12, 0, "d-pages.job.a1", many, &err) == 0,
       "describe_page=5: acquire 12 at once");
    n = wait_events(pg, SPW_INST_EV_READY, 12, ev, 32);
    ok(count_kind(ev, n, SPW_INST_EV_READY) == 12, "  all 12 READY, seen across 3 pages");
    int listed = ops->list(pg, ls, 32, &nl, &err) == 0;
    ok(listed && nl == 12, "  list() follows NextToken: 12 (%zu)", nl);
    json_t *calls = json_object_get(st = fake("GET", "/_fake/state", NULL), "calls"), *c;
    size_t k, paged = 0;
    json_array_foreach(calls, k, c) {
        json_t *p = json_object_get(c, "params");
        paged += json_object_get(p, "NextToken") != NULL &&
                 strcmp(json_string_value(json_object_get(p, "MaxResults")), "5") == 0;
    }
    json_decref(st);
    ok(paged >= 4, "  DescribeInstances asked with NextToken and MaxResults 5 (%zu calls)", paged);
    ops->destroy(pg);

    /* 7c. A slow EC2 (0.5 to 1 s a call): acquire and poll never wait on
     * it; the account's op threads work in parallel. */
    json_decref(fake("POST", "/_fake/config", "{\"delay_s\": \"0.5:1\"}"));
    const char *sopts[] = {"image=ami-0abc1234", "describe_s=0.2", "threads=8", NULL};
    spw_aws_opts_t so = {.name = "slow", .offers = offers, .noffers = 3, .daemon_id = "d-slow",
                         .endpoint_url = url, .options = sopts};
    void *sl = spw_aws_create(&so, &err);
    double worst = 0;
    int queued = 0;
    for (int j = 0; sl && j < 16; j++) {
        char tk[32];
        snprintf(tk, sizeof(tk), "d-slow.job-%d.a1", j);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        queued += acquire(sl, 1, 1, 0, tk, in, &err) == 0;
        ops->poll(sl, now(), ev, 32);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        worst = dt > worst ? dt : worst;
    }
    ok(queued == 16 && worst < 0.05,
       "16 acquisitions against a slow EC2: acquire + poll at most %.1f ms each", worst * 1e3);
    n = sl ? wait_events(sl, SPW_INST_EV_READY, 16, ev, 32) : 0;
    st = fake("GET", "/_fake/state", NULL);
    json_int_t inflight = json_integer_value(json_object_get(st, "max_in_flight"));
    json_decref(st);
    ok(count_kind(ev, n, SPW_INST_EV_READY) == 16 && inflight >= 6,
       "  all 16 READY; up to %lld calls in flight at once (8 op threads)", (long long)inflight);
    if (sl)
        ops->destroy(sl);
    json_decref(fake("POST", "/_fake/config", "{\"delay_s\": null}"));

    /* 7d. The endpoint from AWS_ENDPOINT_URL_EC2, else AWS_ENDPOINT_URL. */
    const char *vars[] = {"AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL"};
    for (int v = 0; v < 2; v++) {
        setenv(vars[v], url, 1);
        const char *eopts[] = {"image=ami-0abc1234", "describe_s=0.2", NULL};
        spw_aws_opts_t eo = {.name = "env", .offers = offers, .noffers = 3,
                             .daemon_id = "d-env", .options = eopts};
        void *en = spw_aws_create(&eo, &err);
        char tk[32];
        snprintf(tk, sizeof(tk), "d-env.job.a%d", v);
        ok(en && acquire(en, 0, 1, 0, tk, in, &err) == 0 &&
               count_kind(ev, wait_events(en, SPW_INST_EV_READY, 1, ev, 32),
                          SPW_INST_EV_READY) == 1,
           "no endpoint_url: %s is the endpoint", vars[v]);
        if (en)
            ops->destroy(en);
        unsetenv(vars[v]);
    }

    /* 8. An account-wide refusal: health names it, acquire refuses. */
    json_decref(fake("POST", "/_fake/inject",
                     "{\"action\": \"RunInstances\", \"code\": \"UnauthorizedOperation\", "
                     "\"message\": \"You are not authorized to perform this operation.\"}"));
    ok(acquire(a, 0, 1, 0, "d-e2e.job-5.a1", in + 6, &err) == 0, "acquire");
    n = wait_events(a, SPW_INST_EV_FAILED, 1, ev, 32);
    ok(n && ev[n - 1].block == SPW_BLOCK_ACCOUNT && ev[n - 1].block_s == 900,
       "UnauthorizedOperation: FAILED, the account blocked 900 s");
    char why[256] = "";
    ok(ops->health(a, why, sizeof(why)) && strstr(why, "UnauthorizedOperation") &&
           strstr(why, "e2e"),
       "health names it (%s)", why);
    ok(acquire(a, 0, 1, 0, "d-e2e.job-5.a2", in + 6, &err) < 0 && errno == EAGAIN &&
           strstr(err.text, "cannot launch"),
       "acquire refuses at once: EAGAIN");
    ops->destroy(a);

    /* 9. dry_run: DryRun=true, nothing bought. */
    void *dry = make("d-dry", 1, &err);
    ok(dry && acquire(dry, 0, 1, 0, "d-dry.job-6.a1", in, &err) == 0, "dry_run: acquire");
    n = wait_events(dry, SPW_INST_EV_FAILED, 1, ev, 32);
    ok(n && ev[n - 1].block == SPW_BLOCK_NONE && strstr(ev[n - 1].reason, "dry run") &&
           strstr(ev[n - 1].reason, "nothing was bought"),
       "dry_run: DryRunOperation is a FAILED that bought nothing (%s)", n ? ev[n - 1].reason : "");
    ok(fake_count("d-dry.job-6.a1", 0) == 0 &&
           fake_calls("RunInstances", "d-dry.job-6.a1", "DryRunOperation") == 1,
       "  EC2 saw one RunInstances with DryRun=true and holds nothing");
    ok(!ops->health(dry, why, sizeof(why)), "  and the account stays healthy");
    ops->destroy(dry);

    /* 10. Credentials from IMDSv2 (the fake serves its own under a role). */
    if (getenv("SPW_FAKE_IMDS")) {
        unsetenv("AWS_ACCESS_KEY_ID");
        unsetenv("AWS_SECRET_ACCESS_KEY");
        setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
        void *im = make("d-e2e", 0, &err);
        ok(im && acquire(im, 0, 1, 0, "d-e2e.job-7.a1", in, &err) == 0 &&
               count_kind(ev, wait_events(im, SPW_INST_EV_READY, 1, ev, 32),
                          SPW_INST_EV_READY) == 1,
           "no keys in the environment: IMDSv2's role credentials launch");
        ops->destroy(im);
    }

    /* The fake found nothing to object to. */
    st = fake("GET", "/_fake/state", NULL);
    size_t nv = json_array_size(json_object_get(st, "violations"));
    size_t na = json_array_size(json_object_get(st, "auth_failures"));
    if (nv)
        diag("violations: %s", json_dumps(json_object_get(st, "violations"), 0));
    ok(st && nv == 0 && na == 0,
       "botocore's model and signer accepted every request (%zu violations, %zu auth failures)",
       nv, na);
    json_decref(st);
    return done_testing();
}
