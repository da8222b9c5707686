/* http.h: the HTTP/1.1 server of `spillway serve`: libmicrohttpd in front
 * of the router (router.h), one thread per connection so that a submit
 * waiting for its commit stalls only its own client. */
#ifndef SPW_DAEMON_HTTP_H
#define SPW_DAEMON_HTTP_H

#include <stddef.h>

#include "daemon/daemon.h"
#include "util/error.h"

typedef struct spw_http spw_http_t;

/* Starts serving d (borrowed; it must outlive the server) on listen_addr,
 * "HOST:PORT" with an IPv4 address or "localhost" (port 0 = any free port;
 * listen_addr is borrowed for the call).  Bodies larger than max_body_bytes are answered 413 without being
 * kept.  When d has no tokens the API is open, so only a loopback address
 * (127.0.0.0/8) is accepted.  Each request's duration (CLOCK_MONOTONIC, from
 * its headers to the end of its response) goes to spw_daemon_note_request.
 * Returns the server, or NULL with a sentence in err ("cannot listen on
 * 127.0.0.1:8470: Address already in use"). */
spw_http_t *spw_http_start(spw_daemon_t *d, const char *listen_addr, size_t max_body_bytes,
                           spw_error_t *err);

/* Bounds that keep slow or greedy clients from starving the others
 * (docs/daemon.md, "Slow clients").  0 in any field = its default. */
typedef struct spw_http_opts {
    size_t max_body_bytes;      /* larger uploads: 413; default 1 MiB */
    double request_timeout_s;   /* a request's headers and body must arrive
                                   within this long of the connection opening
                                   or of the previous answer, else the
                                   connection is cut; also the idle limit of
                                   a kept-alive connection; default 30 */
    unsigned max_connections;   /* open connections in all; default 1024 */
    unsigned max_connections_per_ip; /* from one address; default 64.  At
                                   either cap the oldest connection still
                                   waiting for its request is cut for the
                                   new one; only when all are being
                                   answered is the new one refused */
    size_t max_header_bytes;    /* request line and headers; larger: 431
                                   (libmicrohttpd); default 16 KiB */
    const char *const *allowed_hosts; /* borrowed for the call (copied):
                                   Host names (NAME, or NAME:PORT to match
                                   the header whole) served besides IP
                                   addresses, localhost and the machine's
                                   name; others get 421 */
    size_t nallowed_hosts;
    const char *tls_cert_file;  /* borrowed for the call: PEM certificate
                                   chain; with tls_key_file the API is
                                   served over HTTPS only; NULL = plain HTTP */
    const char *tls_key_file;   /* borrowed for the call: its PEM key */
} spw_http_opts_t;

/* spw_http_start with every bound given. */
spw_http_t *spw_http_start_opts(spw_daemon_t *d, const char *listen_addr,
                                const spw_http_opts_t *opts, spw_error_t *err);

/* Serves new connections with the certificate and key in these files
 * (SIGHUP, after a renewal): the pair is read and checked first, and only
 * a good pair replaces the current one; connections already open finish
 * on the old one.  0, or -1 with err (the old pair stays). */
int spw_http_reload_tls(spw_http_t *h, const char *cert_file, const char *key_file,
                        spw_error_t *err);

/* 1 when h serves HTTPS. */
int spw_http_is_tls(const spw_http_t *h);

/* The port the server listens on (useful after port 0). */
int spw_http_port(const spw_http_t *h);

/* Stops accepting, waits for the connection threads to finish their
 * requests, and frees h.  NULL-safe. */
void spw_http_stop(spw_http_t *h);

#endif
