/* aws.h: the AWS EC2 provider (struct spw_provider_ops "aws", version 4,
 * async): RunInstances, DescribeInstances and TerminateInstances on the
 * account's own op threads, never on the caller's; results through poll().
 * Options and what each EC2 error does: docs/clouds.md. */
#ifndef SPW_PROVIDERS_AWS_AWS_H
#define SPW_PROVIDERS_AWS_AWS_H

#include <stddef.h>

#include "core/model.h"
#include "providers/provider.h"
#include "util/error.h"

/* What the provider is made from.  offers are borrowed until it is
 * destroyed; everything else for the create call only. */
typedef struct spw_aws_opts {
    const char *name;           /* the account's name, for messages; NULL = "aws" */
    const spw_offer_t *offers;  /* the fleet's offers; those whose provider is
                                   "aws" (in regions, when given) are this
                                   account's */
    size_t noffers;             /* entries in offers */
    const char *daemon_id;      /* tagged spillway:daemon on what it buys; the
                                   filter of every describe; required */
    const char *const *regions; /* NULL-terminated regions the account may
                                   use; NULL = those of its offers */
    const char *endpoint_url;   /* the EC2 endpoint instead of
                                   $AWS_ENDPOINT_URL_EC2, $AWS_ENDPOINT_URL
                                   and https://ec2.REGION.amazonaws.com */
    int dry_run;                /* 1: DryRun=true on every mutating call */
    const char *const *options; /* NULL-terminated "key=value" (docs/clouds.md:
                                   image, image.REGION, subnet.ZONE,
                                   security_groups, key_name, ssh_public_key,
                                   user, address, profile, timeout_s,
                                   describe_s, describe_page, threads);
                                   NULL = none */
} spw_aws_opts_t;

/* Makes the provider and starts its op threads.  Reads no credentials yet
 * (the first call does, on an op thread).  NULL with a sentence in err for
 * bad options (an unknown key, an aws offer with no image for its region,
 * no daemon id). */
void *spw_aws_create(const spw_aws_opts_t *o, spw_error_t *err);

/* The table.  Its destroy waits for the calls in flight (timeout_s each at
 * most) and drops queued ones: a launch never sent is found by its token
 * (or not at all) by the next provider; instances keep running. */
extern const struct spw_provider_ops spw_aws_ops;

/* The id the provider gives instance k (from 0) of the acquisition with
 * this token: "aws-" and 16 hex digits of the token's FNV-1a hash, "-k"
 * (at most 25 bytes, within SPW_INSTANCE_ID_MAX), the same after a
 * restart. */
void spw_aws_instance_id(const char *token, unsigned k, char out[SPW_INSTANCE_ID_MAX]);

#endif
