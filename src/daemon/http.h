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

/* The port the server listens on (useful after port 0). */
int spw_http_port(const spw_http_t *h);

/* Stops accepting, waits for the connection threads to finish their
 * requests, and frees h.  NULL-safe. */
void spw_http_stop(spw_http_t *h);

#endif
