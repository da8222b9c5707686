/* ec2_errors.c: EC2's error codes as spillway's blocks (see ec2_errors.h).  The
 * codes are those of the EC2 API reference's "Error codes for the Amazon
 * EC2 API" (client and server errors) that a launch, describe or terminate
 * can meet; the TTLs are spillway's choice (Karpenter keeps an
 * insufficient-capacity offer out for 3 minutes; a quota takes a support
 * case, so an hour). */
#include "providers/ec2_errors.h"

#include <math.h>
#include <string.h>

#define CAPACITY_S 180.0        /* a zone out of a type: minutes */
#define ADDRESS_S 900.0         /* a subnet out of addresses: an admin's fix */
#define QUOTA_S 3600.0          /* an account quota: a support case */
#define ACCOUNT_S 900.0         /* credentials or permissions: re-checked */
#define CONFIG_S 3600.0         /* an image, key or group missing in a region */
#define NEVER_S 86400.0         /* what a zone does not offer at all */

static const spw_ec2_error_class_t table[] = {
    /* Passing: the same call again, with backoff and jitter. */
    {"RequestLimitExceeded", SPW_BLOCK_NONE, 0, 1, 0, "the account's API rate limit"},
    {"Throttling", SPW_BLOCK_NONE, 0, 1, 0, "the API rate limit (STS)"},
    {"InternalError", SPW_BLOCK_NONE, 0, 1, 0, "an internal error of EC2"},
    {"InternalFailure", SPW_BLOCK_NONE, 0, 1, 0, "an internal failure of EC2"},
    {"Unavailable", SPW_BLOCK_NONE, 0, 1, 0, "EC2 is overloaded"},
    {"ServiceUnavailable", SPW_BLOCK_NONE, 0, 1, 0, "EC2 is unavailable"},
    {"RequestExpired", SPW_BLOCK_NONE, 0, 1, 0, "the request's date is too old (clock skew)"},
    {"ExpiredToken", SPW_BLOCK_NONE, 0, 1, 0, "the session token expired: refreshed"},
    {"RequestTimeout", SPW_BLOCK_NONE, 0, 1, 0, "the request timed out"},
    {"ConcurrentTagAccess", SPW_BLOCK_NONE, 0, 1, 0, "a concurrent tag change"},
    {"IncorrectInstanceState", SPW_BLOCK_NONE, 0, 1, 0, "the instance is between states"},
    {"InvalidInstanceID.NotFound", SPW_BLOCK_NONE, 0, 1, 0,
     "not yet visible (EC2 is eventually consistent)"},
    /* The offer in its zone and market. */
    {"InsufficientInstanceCapacity", SPW_BLOCK_OFFER, CAPACITY_S, 0, 0,
     "the zone has no capacity of the type now"},
    {"InsufficientCapacity", SPW_BLOCK_OFFER, CAPACITY_S, 0, 0, "not enough capacity"},
    {"InsufficientHostCapacity", SPW_BLOCK_OFFER, CAPACITY_S, 0, 0,
     "no dedicated host capacity"},
    {"InsufficientReservedInstanceCapacity", SPW_BLOCK_OFFER, CAPACITY_S, 0, 0,
     "not enough reserved capacity"},
    {"InsufficientAddressCapacity", SPW_BLOCK_OFFER, CAPACITY_S, 0, 0,
     "no public addresses in the zone"},
    {"InsufficientCapacityOnOutpost", SPW_BLOCK_OFFER, CAPACITY_S, 0, 0,
     "the Outpost has no capacity"},
    {"SpotMaxPriceTooLow", SPW_BLOCK_OFFER, 600, 0, 0, "the spot price is above the maximum"},
    {"MaxSpotInstanceCountExceeded", SPW_BLOCK_OFFER, QUOTA_S, 0, 0,
     "the account's spot instance quota is used up"},
    {"InsufficientFreeAddressesInSubnet", SPW_BLOCK_OFFER, ADDRESS_S, 0, 0,
     "the zone's subnet has no free addresses"},
    {"Unsupported", SPW_BLOCK_OFFER, NEVER_S, 0, 0, "the zone does not offer this"},
    {"UnsupportedOperation", SPW_BLOCK_OFFER, NEVER_S, 0, 0, "the zone does not offer this"},
    {"InvalidZone.NotFound", SPW_BLOCK_OFFER, NEVER_S, 0, 0, "no such zone in the account"},
    {"InvalidSubnetID.NotFound", SPW_BLOCK_OFFER, CONFIG_S, 0, 0, "the zone's subnet is gone"},
    {"InvalidAMIID.*", SPW_BLOCK_OFFER, CONFIG_S, 0, 0,
     "the image is missing or unusable in the region"},
    {"InvalidKeyPair.NotFound", SPW_BLOCK_OFFER, CONFIG_S, 0, 0,
     "the key pair is missing in the region"},
    {"InvalidGroup.NotFound", SPW_BLOCK_OFFER, CONFIG_S, 0, 0,
     "the security group is missing in the region"},
    {"InvalidSecurityGroupID.NotFound", SPW_BLOCK_OFFER, CONFIG_S, 0, 0,
     "the security group is missing in the region"},
    /* The family in the region: quotas. */
    {"VcpuLimitExceeded", SPW_BLOCK_FAMILY, QUOTA_S, 0, 0,
     "the region's vCPU quota for the family is used up"},
    {"InstanceLimitExceeded", SPW_BLOCK_FAMILY, QUOTA_S, 0, 0,
     "the region's instance quota is used up"},
    {"VolumeLimitExceeded", SPW_BLOCK_FAMILY, QUOTA_S, 0, 0,
     "the region's volume quota is used up"},
    /* The account: no launches, /healthz names it. */
    {"AuthFailure", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0, "the credentials are refused"},
    {"UnauthorizedOperation", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0,
     "the credentials lack a permission"},
    {"OptInRequired", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0,
     "the account is not subscribed to EC2 (or the region is not enabled)"},
    {"Blocked", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0, "the account is blocked"},
    {"PendingVerification", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0,
     "the account is being verified"},
    {"SignatureDoesNotMatch", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0,
     "the secret key does not match"},
    {"InvalidClientTokenId", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0,
     "the access key does not exist"},
    {"MissingAuthenticationToken", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0,
     "the request was not signed"},
    {"AccessDenied", SPW_BLOCK_ACCOUNT, ACCOUNT_S, 0, 0, "access denied (STS AssumeRole)"},
    /* The job: its shape cannot be launched as asked. */
    {"InvalidParameterValue", SPW_BLOCK_JOB, 0, 0, 0, "a parameter's value is invalid"},
    {"InvalidParameterCombination", SPW_BLOCK_JOB, 0, 0, 0,
     "parameters that cannot go together"},
    {"InvalidParameter", SPW_BLOCK_JOB, 0, 0, 0, "an invalid parameter"},
    {"MissingParameter", SPW_BLOCK_JOB, 0, 0, 0, "a required parameter is missing"},
    {"InvalidUserData.Malformed", SPW_BLOCK_JOB, 0, 0, 0, "the user data is malformed"},
    {"IdempotentParameterMismatch", SPW_BLOCK_JOB, 0, 0, 0,
     "the ClientToken was used for a different request"},
    {"InvalidInstanceType", SPW_BLOCK_JOB, 0, 0, 0, "no such instance type"},
    /* Not an error: the permission check of a dry run passed. */
    {"DryRunOperation", SPW_BLOCK_NONE, 0, 0, 1,
     "the dry run's permission check passed: nothing was bought"},
};

static const spw_ec2_error_class_t unknown_retry = {
    "", SPW_BLOCK_NONE, 0, 1, 0, "an unknown server error"};
static const spw_ec2_error_class_t unknown_offer = {
    "", SPW_BLOCK_OFFER, 300, 0, 0, "an error code spillway does not know"};

const spw_ec2_error_class_t *spw_ec2_error_table(size_t *n)
{
    *n = sizeof(table) / sizeof(table[0]);
    return table;
}

const spw_ec2_error_class_t *spw_ec2_error_classify(const char *code, long http_status)
{
    const spw_ec2_error_class_t *best = NULL;
    size_t best_len = 0;
    if (!code)
        code = "";
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        const char *c = table[i].code;
        size_t n = strlen(c);
        if (strcmp(c, code) == 0)
            return &table[i];
        if (n > 2 && strcmp(c + n - 2, ".*") == 0 && strncmp(code, c, n - 1) == 0 &&
            n > best_len) {
            best = &table[i];
            best_len = n;
        }
    }
    if (best)
        return best;
    if (http_status >= 500 || strncmp(code, "Server.", 7) == 0)
        return &unknown_retry;
    return &unknown_offer;
}

double spw_aws_backoff_s(int attempt, double base_s, double cap_s, spw_rng_t *rng)
{
    double ceiling = base_s * ldexp(1.0, attempt < 0 ? 0 : attempt > 30 ? 30 : attempt);
    if (ceiling > cap_s)
        ceiling = cap_s;
    return ceiling * spw_rng_uniform(rng);
}
