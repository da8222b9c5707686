/* test_aws_errors.c: EC2's error codes as blocks (providers/aws/errors.c):
 * every code issue 21 names lands in the class it names, families match,
 * unknown codes are retried (5xx) or move elsewhere, the table is
 * consistent, and the backoff's jitter stays in its bounds. */
#include <string.h>

#include "tap.h"
#include "providers/ec2_errors.h"

static void expect(const char *code, spw_block_t block, int retry)
{
    const spw_ec2_error_class_t *c = spw_ec2_error_classify(code, 400);
    ok(c->block == block && c->retry == retry && !c->success,
       "%s: blocks %s%s (got %s%s)", code, spw_block_name(block), retry ? ", retried" : "",
       spw_block_name(c->block), c->retry ? ", retried" : "");
}

int main(void)
{
    /* Issue 21's classes, code by code. */
    const char *retried[] = {"RequestLimitExceeded", "InternalError", "Unavailable",
                             "ServiceUnavailable", NULL};
    for (int i = 0; retried[i]; i++)
        expect(retried[i], SPW_BLOCK_NONE, 1);
    const char *offer[] = {"InsufficientInstanceCapacity", "InsufficientHostCapacity",
                           "SpotMaxPriceTooLow", "MaxSpotInstanceCountExceeded",
                           "InsufficientFreeAddressesInSubnet", "Unsupported",
                           "InsufficientCapacity", "InsufficientReservedInstanceCapacity",
                           NULL};
    for (int i = 0; offer[i]; i++)
        expect(offer[i], SPW_BLOCK_OFFER, 0);
    expect("VcpuLimitExceeded", SPW_BLOCK_FAMILY, 0);
    expect("InstanceLimitExceeded", SPW_BLOCK_FAMILY, 0);
    const char *account[] = {"AuthFailure", "UnauthorizedOperation", "OptInRequired", "Blocked",
                             NULL};
    for (int i = 0; account[i]; i++)
        expect(account[i], SPW_BLOCK_ACCOUNT, 0);
    expect("InvalidParameterValue", SPW_BLOCK_JOB, 0);
    expect("InvalidParameterCombination", SPW_BLOCK_JOB, 0);

    /* Families, and the exact code before its family. */
    expect("InvalidAMIID.NotFound", SPW_BLOCK_OFFER, 0);
    expect("InvalidAMIID.Malformed", SPW_BLOCK_OFFER, 0);
    expect("InvalidAMIID.Unavailable", SPW_BLOCK_OFFER, 0);
    ok(spw_ec2_error_classify("InvalidAMIID", 400)->ttl_s == 300,
       "InvalidAMIID without a suffix is not in the InvalidAMIID.* family");
    const spw_ec2_error_class_t *dry = spw_ec2_error_classify("DryRunOperation", 412);
    ok(dry->success && dry->block == SPW_BLOCK_NONE && !dry->retry,
       "DryRunOperation: success, nothing blocked, not retried");

    /* Unknown codes. */
    const spw_ec2_error_class_t *u = spw_ec2_error_classify("SomethingNew", 400);
    ok(u->block == SPW_BLOCK_OFFER && u->ttl_s == 300 && !u->retry,
       "an unknown client code: the offer for 300 s");
    ok(spw_ec2_error_classify("SomethingNew", 503)->retry, "an unknown code with HTTP 503: retried");
    ok(spw_ec2_error_classify("Server.InternalError", 400)->retry, "Server.*: retried");
    ok(spw_ec2_error_classify(NULL, 500)->retry, "no code at all, HTTP 500: retried");

    /* The table: no duplicates; blocks that last have a TTL, others none. */
    size_t n, dup = 0, bad_ttl = 0;
    int seen[SPW_BLOCK_COUNT] = {0};
    const spw_ec2_error_class_t *t = spw_ec2_error_table(&n);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++)
            dup += strcmp(t[i].code, t[j].code) == 0;
        int lasting = t[i].block == SPW_BLOCK_OFFER || t[i].block == SPW_BLOCK_FAMILY ||
                      t[i].block == SPW_BLOCK_ACCOUNT;
        bad_ttl += lasting ? !(t[i].ttl_s > 0) : t[i].ttl_s != 0;
        bad_ttl += t[i].retry && t[i].block != SPW_BLOCK_NONE;
        bad_ttl += !t[i].why || !t[i].why[0];
        seen[t[i].block]++;
    }
    ok(n >= 40 && !dup, "%zu codes, none twice", n);
    is(bad_ttl, 0, "lasting blocks have a TTL, retried and job codes none, each a sentence");
    ok(seen[SPW_BLOCK_NONE] && seen[SPW_BLOCK_OFFER] && seen[SPW_BLOCK_FAMILY] &&
           seen[SPW_BLOCK_ACCOUNT] && seen[SPW_BLOCK_JOB],
       "every class has codes");

    /* Backoff: full jitter, in [0, min(cap, base 2^k)), deterministic. */
    spw_rng_t a, b;
    spw_rng_seed(&a, 7);
    spw_rng_seed(&b, 7);
    int in_bounds = 1, same = 1;
    double max_seen[6] = {0};
    for (int round = 0; round < 200; round++) {
        for (int k = 0; k < 6; k++) {
            double d = spw_aws_backoff_s(k, 0.5, 8.0, &a);
            double ceil = 0.5 * (1 << k) > 8.0 ? 8.0 : 0.5 * (1 << k);
            in_bounds &= d >= 0 && d < ceil;
            same &= d == spw_aws_backoff_s(k, 0.5, 8.0, &b);
            if (d > max_seen[k])
                max_seen[k] = d;
        }
    }
    ok(in_bounds, "every delay in [0, min(8, 0.5 * 2^k))");
    ok(same, "the same seed draws the same delays");
    ok(max_seen[0] > 0.4 && max_seen[3] > 3.5 && max_seen[5] > 7.0 && max_seen[5] < 8.0,
       "the ceiling doubles up to the cap (max drawn %.2f, %.2f, %.2f)", max_seen[0],
       max_seen[3], max_seen[5]);
    return done_testing();
}
