/* creds.h: AWS credentials from the standard chain, as AWS's own tools find
 * them: the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN); a profile (AWS_PROFILE, default "default") of
 * ~/.aws/credentials and ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE,
 * AWS_CONFIG_FILE), static keys or role_arn + source_profile through STS
 * AssumeRole; then the instance's role from IMDSv2.  Temporary credentials
 * are refreshed before they expire.  Secrets are never logged or put in an
 * error's text. */
#ifndef SPW_PROVIDERS_AWS_CREDS_H
#define SPW_PROVIDERS_AWS_CREDS_H

#include <stddef.h>

#include "providers/aws/sigv4.h"
#include "util/error.h"

/* Temporary credentials are fetched again this long before they expire, s. */
#define SPW_AWS_CREDS_REFRESH_S 300.0

/* How to look.  Borrowed for the call. */
typedef struct spw_aws_creds_opts {
    const char *profile;        /* the profile; NULL = $AWS_PROFILE, else
                                   "default" (a named profile that does not
                                   exist is an error; a missing default is
                                   not: the chain goes on to IMDS) */
    const char *region;         /* STS's region when the profile names none;
                                   NULL = us-east-1 */
    long timeout_ms;            /* each STS call, ms (IMDS: at most 1 s a
                                   call, as AWS's SDKs); 0 = 10 s */
} spw_aws_creds_opts_t;

/* Finds credentials at now_s (Unix seconds, for nothing but the expiry
 * check of what is read) and writes them to out, and where they came from
 * to source ("environment", "profile dev", "role arn:... via profile dev",
 * "instance role NAME"; size slen).  Returns 0, or -1 with a sentence in
 * err naming what was tried (never a secret). */
int spw_aws_creds_resolve(const spw_aws_creds_opts_t *o, double now_s, spw_aws_creds_t *out,
                          char *source, size_t slen, spw_error_t *err);

/* Credentials kept between calls.  Zero it before use. */
typedef struct spw_aws_creds_cache {
    spw_aws_creds_t creds;      /* the last ones found */
    char source[192];           /* where they came from */
    int have;                   /* 1: creds holds something */
} spw_aws_creds_cache_t;

/* The cached credentials, found again (spw_aws_creds_resolve) when there
 * are none or they expire within SPW_AWS_CREDS_REFRESH_S of now_s.  Returns
 * 0 with *out pointing into c, or -1 with a sentence in err (c unchanged:
 * credentials still valid keep serving). */
int spw_aws_creds_get(spw_aws_creds_cache_t *c, const spw_aws_creds_opts_t *o, double now_s,
                      const spw_aws_creds_t **out, spw_error_t *err);

#endif
