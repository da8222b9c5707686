/* http.h: the aws provider's HTTP over libcurl: a SigV4-signed Query POST
 * (EC2, STS) and a plain exchange (IMDS).  Every call has a timeout; none
 * logs a secret. */
#ifndef SPW_PROVIDERS_AWS_HTTP_H
#define SPW_PROVIDERS_AWS_HTTP_H

#include <time.h>

#include "providers/aws/sigv4.h"
#include "util/error.h"
#include "util/strbuf.h"

/* Sets up libcurl and libxml2 for use from several threads; once per
 * process (later calls do nothing).  Call it before starting threads that
 * use them (spw_aws_create does); the calls below also call it. */
void spw_aws_http_init(void);

/* Where and how to call. */
typedef struct spw_aws_endpoint {
    const char *url;            /* "https://ec2.us-east-1.amazonaws.com" or
                                   "http://127.0.0.1:PORT" (a fake); a path
                                   after the host is kept */
    const char *region;         /* signing region */
    const char *service;        /* signing service: "ec2", "sts" */
    long timeout_ms;            /* the whole call, connect included, ms */
} spw_aws_endpoint_t;

/* POSTs the form body (application/x-www-form-urlencoded) to ep, signed
 * with creds at time now.  Returns 0 with *status and the answer's body in
 * resp (zeroed by the caller; caller frees resp->s), whatever the status;
 * or -1 with a sentence in err when no answer came (connection refused,
 * timeout, bad URL). */
int spw_aws_post(const spw_aws_endpoint_t *ep, const spw_aws_creds_t *creds, time_t now,
                 const char *body, long *status, spw_strbuf_t *resp, spw_error_t *err);

/* One unsigned exchange (IMDS): method to url with extra headers
 * (NULL-terminated "Name: value" strings, or NULL) and body (NULL = none).
 * Returns as spw_aws_post. */
int spw_aws_http(const char *method, const char *url, const char *const *headers,
                 const char *body, long timeout_ms, long *status, spw_strbuf_t *resp,
                 spw_error_t *err);

/* Splits url into its host ("h" or "h:port", at most hlen bytes) and path
 * ("/" when none, at most plen).  Returns 0, or -1 with a sentence in err
 * when it is not http:// or https:// with a host. */
int spw_aws_url_split(const char *url, char *host, size_t hlen, char *path, size_t plen,
                      spw_error_t *err);

#endif
