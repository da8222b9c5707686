/* test_aws_provider.c: the aws provider (providers/aws/aws.c) where no EC2
 * answers: its table (version 4, async), what create refuses, acquire's
 * checks and ids made from the token (the same after asking again), a
 * launch that gets no answer ending FAILED with the reason, release and
 * describe, reconcile's adoption, and health.  tests/providers/aws.sh drives
 * it against a fake EC2 endpoint. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "providers/aws/aws.h"
#include "providers/registry.h"

static char s_aws[] = "aws", s_gcp[] = "gcp", s_use1[] = "us-east-1", s_use1a[] = "us-east-1a";
static char s_g4[] = "g4dn.xlarge", s_c2[] = "c2-standard-4", s_usc1[] = "us-central1";
static char s_empty[] = "";
static spw_offer_t offers[3];

static void make_offers(void)
{
    offers[0] = (spw_offer_t){s_aws, s_use1, s_use1a, s_g4, -1, 1, 0.526, 0.2, 60, NULL, 0, 0};
    offers[1] = (spw_offer_t){s_gcp, s_usc1, s_empty, s_c2, -1, 1, 0.2, NAN, 30, NULL, 0, 0};
    offers[2] = (spw_offer_t){s_aws, s_use1, s_use1a, s_g4, -1, 1, 0.526, NAN, 60, NULL, 0, 0};
}

static void *make(const char *const *options, spw_error_t *err)
{
    spw_provider_conf_t c = {.type = "aws", .offers = offers, .noffers = 3, .name = "acct",
                             .daemon_id = "d-test", .endpoint_url = "http://127.0.0.1:1",
                             .options = options};
    const struct spw_provider_ops *ops = NULL;
    void *pv = NULL;
    if (spw_provider_create(&c, &ops, &pv, err) < 0)
        return NULL;
    return ops == &spw_aws_ops ? pv : NULL;
}

int main(void)
{
    make_offers();
    const struct spw_provider_ops *ops = &spw_aws_ops;
    ok(ops->version == 5 && ops->async == 1 && !ops->emulated && strcmp(ops->name, "aws") == 0 &&
           SPW_PROVIDER_HAS(ops, 4, list) && SPW_PROVIDER_HAS(ops, 4, health) &&
           SPW_PROVIDER_HAS(ops, 5, spot_prices) &&
           !SPW_PROVIDER_HAS(ops, 3, preempt),
       "the table: version 5, async, real, with list, health and spot_prices, no preempt");

    /* Ids from tokens. */
    char a0[SPW_INSTANCE_ID_MAX], a1[SPW_INSTANCE_ID_MAX], b0[SPW_INSTANCE_ID_MAX],
        again[SPW_INSTANCE_ID_MAX];
    const char *tok = "d-test.job-0000000001.a1.01234567890123456789";
    spw_aws_instance_id(tok, 0, a0);
    spw_aws_instance_id(tok, 1, a1);
    spw_aws_instance_id("other", 0, b0);
    spw_aws_instance_id(tok, 0, again);
    ok(strcmp(a0, again) == 0 && strcmp(a0, a1) && strcmp(a0, b0) && strlen(a0) == 22 &&
           strncmp(a0, "aws-", 4) == 0 && strcmp(a0 + 20, "-0") == 0,
       "ids: aws-HASH-k, the same for the same token, distinct otherwise (%s)", a0);

    /* What create refuses. */
    spw_error_t err = {{0}};
    const char *no_image[] = {"key_name=k", NULL};
    ok(!make(no_image, &err) && strstr(err.text, "no image for region us-east-1") &&
           strstr(err.text, "image.us-east-1="),
       "an aws offer without an image: refused, saying which option (%s)", err.text);
    const char *unknown[] = {"image=ami-1", "colour=blue", NULL};
    ok(!make(unknown, &err) && strstr(err.text, "unknown option 'colour'"),
       "an unknown option: refused (%s)", err.text);
    const char *bad_addr[] = {"image=ami-1", "address=ipv6", NULL};
    ok(!make(bad_addr, &err) && strstr(err.text, "public or private"), "address: checked");
    const char *bad_key[] = {"image=ami-1", "ssh_public_key=/nonexistent/id.pub", NULL};
    ok(!make(bad_key, &err) && strstr(err.text, "/nonexistent/id.pub"),
       "ssh_public_key: an unreadable file is refused");
    spw_provider_conf_t c = {.type = "aws", .offers = offers, .noffers = 3, .name = "acct"};
    const struct spw_provider_ops *pops;
    void *pv;
    ok(spw_provider_create(&c, &pops, &pv, &err) < 0 && strstr(err.text, "daemon id"),
       "no daemon id: refused");

    /* No EC2 answers at 127.0.0.1:1. */
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "test-secret", 1);
    const char *opts[] = {"image.us-east-1=ami-1", "threads=1", "timeout_s=1", "describe_s=0.2",
                          "subnet.us-east-1a=subnet-1", "security_groups=sg-1,sg-2",
                          "ssh_public_key=ssh-ed25519 AAAA test", NULL};
    void *a = make(opts, &err);
    if (!ok(a != NULL, "made by the registry with every option (%s)", err.text))
        return done_testing();
    char why[256] = "";
    is(ops->health(a, why, sizeof(why)), 0, "healthy before any call");

    spw_instance_t in[4], d;
    spw_acquire_t req = {.offer = 0, .count = 2, .spot = 1, .job_id = "job-1", .now_s = 1000,
                         .token = "bad token"};
    ok(ops->acquire(a, &req, in, &err) < 0 && errno == EINVAL && strstr(err.text, "ClientToken"),
       "a token with a space: EINVAL");
    req.token = NULL;
    ok(ops->acquire(a, &req, in, &err) < 0 && errno == EINVAL, "no token: EINVAL");
    req.token = tok;
    req.offer = 1;
    ok(ops->acquire(a, &req, in, &err) < 0 && errno == EINVAL && strstr(err.text, "offer 1"),
       "a gcp offer: not this account's");
    req.offer = 2;
    ok(ops->acquire(a, &req, in, &err) < 0 && errno == EINVAL && strstr(err.text, "spot price"),
       "spot on an offer without a spot price: EINVAL (%s)", err.text);
    req.offer = 0;
    ok(ops->acquire(a, &req, in, &err) == 0, "acquire 2 spot g4dn.xlarge: queued");
    ok(strcmp(in[0].id, a0) == 0 && strcmp(in[1].id, a1) == 0 && in[0].state == SPW_INSTANCE_BOOTING &&
           in[0].cloud_id[0] == '\0' && in[0].price_usd_per_h == 0.2 && in[0].launched_s == 1000 &&
           in[0].ready_s == 1060 && strcmp(in[1].job_id, "job-1") == 0 && isnan(in[0].ended_s),
       "both BOOTING under the token's ids, no cloud id yet, spot price, boot delay");
    spw_instance_t same[2];
    ok(ops->acquire(a, &req, same, &err) == 0 && strcmp(same[0].id, in[0].id) == 0 &&
           strcmp(same[1].id, in[1].id) == 0,
       "the same token again: the same instances, nothing new");
    req.count = 3;
    ok(ops->acquire(a, &req, same, &err) < 0 && errno == EINVAL,
       "the same token with another count: refused");

    /* The launch gets no answer: retried, then FAILED with the reason. */
    spw_inst_event_t ev[8];
    size_t n = 0;
    for (int i = 0; i < 1500 && n < 2; i++) {
        n += ops->poll(a, 1001, ev + n, 8 - n);
        if (n < 2)
            usleep(10000);  /* waits for the op thread's events */
    }
    ok(n == 2 && ev[0].kind == SPW_INST_EV_FAILED && ev[1].kind == SPW_INST_EV_FAILED &&
           ev[0].block == SPW_BLOCK_NONE && strcmp(ev[0].job_id, "job-1") == 0 &&
           strstr(ev[0].reason, "no answer from EC2"),
       "no answer after the retries: both FAILED, blocking nothing (%s)", n ? ev[0].reason : "");
    ok(n && strstr(ev[0].reason, "127.0.0.1:1") && !strstr(ev[0].reason, "test-secret"),
       "  the reason names the endpoint, never the secret");
    ok(ops->describe(a, in[0].id, &d, &err) == 0 && d.state == SPW_INSTANCE_RELEASED,
       "describe: it has ended");
    ok(ops->describe(a, "aws-nosuch", &d, &err) < 0 && errno == ENOENT, "describe: ENOENT");
    ok(ops->release(a, &in[0], 1002, &err) == 0 && ops->release(a, &in[0], 1003, &err) == 0,
       "release of an ended instance: 0, twice");
    spw_instance_t ghost = in[0];
    strcpy(ghost.id, "aws-ghost-0");
    ok(ops->release(a, &ghost, 1003, &err) < 0 && errno == ENOENT, "release of no such: ENOENT");

    /* Reconcile adopts the daemon's live instances, reports orphans via list. */
    spw_instance_t known = in[0];
    spw_aws_instance_id("d-test.job-2.a1", 0, known.id);
    known.state = SPW_INSTANCE_READY;
    strcpy(known.cloud_id, "i-0123456789abcdef0");
    size_t norph = 7;
    ok(ops->reconcile(a, &known, 1, 1004, NULL, 0, &norph, &err) == 0 && norph == 0,
       "reconcile: adopted, no orphans reported here (list() is the sweep)");
    ok(ops->describe(a, known.id, &d, &err) == 0 && strcmp(d.cloud_id, "i-0123456789abcdef0") == 0 &&
           d.state == SPW_INSTANCE_READY,
       "  describe finds it with its cloud id");
    size_t nl = 0;
    spw_instance_t list[4];
    ok(ops->list(a, list, 4, &nl, &err) < 0 && strstr(err.text, "127.0.0.1:1"),
       "list without EC2: an error naming the endpoint (%s)", err.text);
    is(ops->health(a, why, sizeof(why)), 0, "no answer is not an account block");
    ops->destroy(a);
    ops->destroy(NULL);
    return done_testing();
}
