/* ec2_errors.h: what each EC2 error code means for spillway (the AWS
 * provider, and the emulated cloud that answers with EC2's codes): what it blocks
 * (provider.h's spw_block_t: nothing, the offer in its zone and market, the
 * family in its region, the account, the job) and for how long, and whether
 * the call is retried with backoff and jitter.  Pure data and arithmetic. */
#ifndef SPW_PROVIDERS_EC2_ERRORS_H
#define SPW_PROVIDERS_EC2_ERRORS_H

#include <stddef.h>

#include "providers/provider.h"
#include "util/rng.h"

/* What one code means. */
typedef struct spw_ec2_error_class {
    const char *code;           /* EC2's code ("InsufficientInstanceCapacity");
                                   a name ending in ".*" covers its family
                                   ("InvalidAMIID.*") */
    spw_block_t block;          /* what a refusal rules out; NONE for the
                                   retried and the successful */
    double ttl_s;               /* how long the block holds, seconds; 0 =
                                   none (retried codes, the job's) */
    int retry;                  /* 1: a passing error: the same call again
                                   after spw_aws_backoff_s */
    int success;                /* 1: the call would have succeeded
                                   (DryRunOperation) */
    const char *why;            /* a short sentence for reasons and docs */
} spw_ec2_error_class_t;

/* The table, in docs/clouds.md's order; n set to its length. */
const spw_ec2_error_class_t *spw_ec2_error_table(size_t *n);

/* The class of code (exact match first, then the longest "X.*" family).
 * Unknown codes: retried when http_status >= 500 or the code starts
 * "Server.", else the offer for 300 s (a code EC2 added since: try
 * elsewhere, not forever).  Never NULL. */
const spw_ec2_error_class_t *spw_ec2_error_classify(const char *code, long http_status);

/* How long to wait before retry number attempt (0 = the first retry), s:
 * "full jitter", uniform in [0, min(cap_s, base_s * 2^attempt)), drawn from
 * rng. */
double spw_aws_backoff_s(int attempt, double base_s, double cap_s, spw_rng_t *rng);

/* Retries of a retried code before the call fails as its block says (for a
 * retried code: NONE, the daemon's own backoff). */
#define SPW_AWS_MAX_RETRIES 4

#endif
