/* sigv4.h: AWS Signature Version 4 (the Authorization header of every EC2,
 * STS and IMDS-less AWS call), computed with OpenSSL's SHA-256 and HMAC: no
 * hand-written crypto.  Pure: no clock, no I/O; the caller passes the time. */
#ifndef SPW_PROVIDERS_AWS_SIGV4_H
#define SPW_PROVIDERS_AWS_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "util/error.h"
#include "util/strbuf.h"

/* One set of AWS credentials.  A plain value; it holds secrets: never log
 * it, never put it in a job's environment. */
typedef struct spw_aws_creds {
    char access_key_id[128];      /* AKIA... / ASIA... */
    char secret_access_key[128];  /* the secret that keys the HMAC */
    char session_token[4096];     /* temporary credentials' token; "" = none */
    double expires_s;             /* when they stop working, Unix seconds;
                                     0 = never (long-term keys) */
} spw_aws_creds_t;

/* One request header to sign (besides the ones spw_sigv4_sign adds). */
typedef struct spw_sigv4_header {
    const char *name;           /* any case; signed lower-cased */
    const char *value;          /* trimmed, inner runs of blanks folded */
} spw_sigv4_header_t;

/* What to sign.  Everything borrowed for the call. */
typedef struct spw_sigv4_req {
    const char *method;         /* "GET", "POST", ... */
    const char *host;           /* the Host header: "ec2.us-east-1.amazonaws.com"
                                   or "127.0.0.1:8080" */
    const char *path;           /* the request path, not yet percent-encoded;
                                   normalised (".", "..", "//") as every
                                   service but S3 expects; NULL = "/" */
    const char *query;          /* "a=b&c=d" as on the wire (encoded or not:
                                   it is decoded and encoded again); NULL or
                                   "" = none */
    const spw_sigv4_header_t *headers;  /* other headers to sign (Content-Type);
                                   not Host, X-Amz-Date or X-Amz-Security-Token,
                                   which spw_sigv4_sign adds */
    size_t nheaders;            /* entries in headers */
    const void *payload;        /* the body, hashed into the signature */
    size_t payload_len;         /* bytes of payload */
    const char *region;         /* "us-east-1" */
    const char *service;        /* "ec2", "sts" */
    int token_unsigned;         /* 1: X-Amz-Security-Token is sent but not
                                   signed (some services); 0: signed, as EC2
                                   and STS take it */
} spw_sigv4_req_t;

/* The result: the headers to send.  canonical_request and string_to_sign
 * are owned (spw_sigv4_clear frees them), for tests and debugging; they hold
 * no secret. */
typedef struct spw_sigv4 {
    char authorization[1024];   /* the Authorization header's value */
    char amz_date[17];          /* X-Amz-Date's value: 20150830T123600Z */
    char *canonical_request;    /* SigV4 task 1's text */
    char *string_to_sign;       /* SigV4 task 2's text */
} spw_sigv4_t;

/* Signs r with creds at time when (UTC seconds).  The caller sends Host,
 * X-Amz-Date (out->amz_date), X-Amz-Security-Token (creds->session_token,
 * when not "") and Authorization (out->authorization) with the request.
 * Returns 0, or -1 with a sentence in err (missing credentials or fields)
 * and *out left empty. */
int spw_sigv4_sign(const spw_sigv4_req_t *r, const spw_aws_creds_t *creds, time_t when,
                   spw_sigv4_t *out, spw_error_t *err);

/* Frees what out owns; NULL-safe, and safe on a zeroed or cleared value. */
void spw_sigv4_clear(spw_sigv4_t *out);

/* Appends the n bytes of s percent-encoded as SigV4 and the EC2 Query form
 * want (RFC 3986: everything but A-Z a-z 0-9 - . _ ~ as %XX, upper-case
 * hex); keep_slash = 1 leaves '/' as it is (paths). */
void spw_aws_uri_encode(spw_strbuf_t *b, const char *s, size_t n, int keep_slash);

/* Writes the lower-case hex SHA-256 of n bytes of p to hex (65 bytes). */
void spw_aws_sha256_hex(const void *p, size_t n, char hex[65]);

#endif
