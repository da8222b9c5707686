/* router.h: the HTTP API of `spillway serve` (docs/api.md) as a pure
 * function from a parsed request to a response, with no sockets and no
 * clock, so unit tests and the fuzzer drive it directly; http.c feeds it
 * from libmicrohttpd.
 *
 * Ownership: everything in a spw_route_req_t is borrowed for the call.  A
 * spw_route_resp_t owns its body; spw_route_resp_clear frees it.  Header
 * values in the response are static strings or live inside the response. */
#ifndef SPW_DAEMON_ROUTER_H
#define SPW_DAEMON_ROUTER_H

#include <stddef.h>

#include "daemon/daemon.h"

/* Longest id accepted in a path (/v1/jobs/{id}, .../instances/{id}),
 * bytes without the NUL; ids also use only [A-Za-z0-9._-], not starting
 * with '.'.  Anything else is answered 404 without asking the daemon. */
#define SPW_ROUTE_ID_MAX 63

/* Most bytes one GET /v1/jobs/{id}/logs returns (docs/api.md: 1 MiB). */
#define SPW_ROUTE_LOG_MAX ((size_t)1 << 20)

/* Page size of GET /v1/jobs: the default and the largest accepted. */
#define SPW_ROUTE_LIMIT_DEFAULT 1000
#define SPW_ROUTE_LIMIT_MAX 10000

/* One request as the router sees it. */
typedef struct spw_route_req {
    const char *method;          /* "GET", "POST", ...; HEAD is served as GET */
    const char *path;            /* decoded path without the query string,
                                    "/v1/jobs/j-000001" */
    const char *const *query;    /* decoded query parameters as key, value,
                                    key, value, ..., NULL; a value may be
                                    NULL for "?key" without '='; the whole
                                    array may be NULL when there is none */
    const char *authorization;   /* the Authorization header's value, or NULL */
    const char *content_type;    /* the Content-Type header's value, or NULL */
    const char *client;          /* the X-Spillway-Client header's value, or
                                    NULL (the CLI sends it) */
    const char *host_refused;    /* the Host header's value when it names no
                                    host the daemon serves (http.c decides),
                                    else NULL */
    const char *body;            /* the upload, not NUL-terminated; may be
                                    NULL when body_len is 0 */
    size_t body_len;             /* bytes at body */
    int body_too_large;          /* 1: the upload passed max_body_bytes and
                                    body holds only part of it (answer 413) */
} spw_route_req_t;

/* The answer.  Error bodies are {"error":{"status":N,"message":"..."}}. */
typedef struct spw_route_resp {
    int status;                  /* HTTP status code */
    const char *content_type;    /* static: "application/json", "text/plain",
                                    or the Prometheus text type */
    char *body;                  /* owned (malloc), body_len bytes, also
                                    NUL-terminated; never NULL after
                                    spw_route */
    size_t body_len;             /* bytes at body, without the NUL */
    const char *www_authenticate; /* static WWW-Authenticate value, or NULL */
    const char *allow;           /* static Allow value (on 405), or NULL */
    char offset[24];             /* X-Spillway-Offset value (logs), or "" */
    const char *job_state;       /* static X-Spillway-Job-State (logs), or NULL */
    const char *csp;             /* Content-Security-Policy of a dashboard
                                    page: static, or csp_buf; NULL (http.c
                                    then sends one that allows nothing) */
    char csp_buf[768];           /* a policy made for this answer (the
                                    page's, naming the OIDC token endpoint) */
} spw_route_resp_t;

/* Answers one request against d, filling *out (which need not be
 * initialised; clear it with spw_route_resp_clear).  Never fails: every
 * problem becomes an HTTP error response.  Thread-safe as the daemon API
 * is; blocks while a submit commits.
 *
 * Order of checks: a Host the daemon does not serve 421, a mutating call
 * (not GET or HEAD) without an application/json or application/yaml
 * Content-Type or an X-Spillway-Client header 415, unknown path 404, wrong
 * method 405, then (except for /healthz, the dashboard's files, and
 * /metrics unless daemon.metrics_auth) the bearer token 401, a metrics
 * token anywhere but /metrics or a team token on /metrics 403, then an
 * oversized body 413,
 * then unknown or malformed query parameters 400, then the daemon.  The
 * token is never copied into the response.  Every answer to a mutating
 * call (submit, cancel, preempt, node down/up), refusals included, is
 * recorded in the audit log (spw_daemon_audit) with the token's name. */
void spw_route(spw_daemon_t *d, const spw_route_req_t *req, spw_route_resp_t *out);

/* Frees the body and zeroes r.  NULL-safe. */
void spw_route_resp_clear(spw_route_resp_t *r);

#endif
