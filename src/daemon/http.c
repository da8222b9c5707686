/* http.c: libmicrohttpd glue for the API: binds the listen socket itself
 * (for an exact error message), gathers each request's parts and upload,
 * hands them to spw_route and sends back what it answers. */
#include "daemon/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "daemon/router.h"
#include "util/file.h"
#include "util/netlibs.h"

/* Defaults of spw_http_opts_t. */
#define HTTP_MAX_CONNECTIONS 1024
#define HTTP_MAX_PER_IP 64
#define HTTP_REQUEST_TIMEOUT_S 30.0
#define HTTP_MAX_HEADER_BYTES ((size_t)16 << 10)
/* Stack of each connection's thread (the handlers need little). */
#define HTTP_THREAD_STACK ((size_t)1 << 20)
/* An oversized chunked upload is read and dropped up to this many times
 * max_body_bytes before the connection is cut. */
#define HTTP_DISCARD_FACTOR 64

/* Sockets MHD may hold beyond max_connections: those cut (evicted or
 * late) whose thread has not closed them yet. */
#define HTTP_CUT_SLACK(max) ((max) / 4 + 16)

/* Every response says nosniff and is never framed; JSON and text get a
 * policy that allows nothing (the dashboard's pages bring their own). */
#define HTTP_CSP_NONE "default-src 'none'; frame-ancestors 'none'"

/* One open connection, for the request deadline and the connection caps. */
typedef struct http_conn {
    int fd;                     /* its socket (MHD owns it) */
    struct in_addr ip;          /* the client's address */
    double deadline;            /* CLOCK_MONOTONIC seconds by which the
                                   request being read must be in; 0 = none
                                   (being answered, or already cut) */
    int cut;                    /* 1: shut down (late or evicted); MHD
                                   closes it soon, it no longer counts */
    struct http_conn *prev, *next;
} http_conn_t;

/* A server replaced by a TLS reload: it accepts nothing more, and a thread
 * of its own stops it once its open connections are done. */
typedef struct http_retired {
    struct MHD_Daemon *mhd;     /* quiesced */
    char *cert, *key;           /* the PEM it served with (owned) */
    pthread_t stopper;          /* runs MHD_stop_daemon */
    int threaded;               /* 1: stopper must be joined */
    struct http_retired *next;
} http_retired_t;

struct spw_http {
    struct MHD_Daemon *mhd;     /* the server and its threads */
    int fd;                     /* the listen socket (MHD_OPTION_LISTEN_SOCKET) */
    unsigned header_bytes;      /* MHD_OPTION_CONNECTION_MEMORY_LIMIT */
    unsigned idle_s;            /* MHD_OPTION_CONNECTION_TIMEOUT */
    char *cert, *key;           /* owned PEM text the server uses (TLS), or
                                   NULL for plain HTTP; kept while it runs */
    http_retired_t *retired;    /* servers replaced by reloads */
    spw_daemon_t *d;            /* borrowed */
    size_t max_body_bytes;      /* larger uploads are answered 413 */
    double request_timeout_s;   /* see spw_http_opts_t */
    unsigned max_conn;          /* open connections in all (not cut) */
    unsigned per_ip;            /* open connections from one address */
    char **hosts;               /* owned copies of opts->allowed_hosts */
    size_t nhosts;
    char hostname[256];         /* this machine's name (gethostname) */
    int port;                   /* bound port */
    pthread_mutex_t mu;         /* guards conns and stop */
    pthread_cond_t wake;        /* wakes the watchdog to stop */
    http_conn_t *conns;         /* open connections */
    int stop;                   /* 1: the watchdog ends */
    pthread_t watchdog;         /* cuts connections past their deadline */
    int watchdog_started;
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the request deadline ------------------------------------------------ */

/* MHD tells of each connection opened and closed (before it closes the
 * socket, so the fd cannot be another connection's while listed). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    spw_http_t *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        http_conn_t *c = spw_xcalloc(1, sizeof(*c));
        c->fd = ci ? (int)ci->connect_fd : -1;
        if (ai && ai->client_addr && ai->client_addr->sa_family == AF_INET)
            c->ip = ((const struct sockaddr_in *)(const void *)ai->client_addr)->sin_addr;
        c->deadline = mono_s() + h->request_timeout_s;
        pthread_mutex_lock(&h->mu);
        c->next = h->conns;
        if (h->conns)
            h->conns->prev = c;
        h->conns = c;
        pthread_mutex_unlock(&h->mu);
        *socket_context = c;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        http_conn_t *c = *socket_context;
        pthread_mutex_lock(&h->mu);
        if (c->prev)
            c->prev->next = c->next;
        else
            h->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        pthread_mutex_unlock(&h->mu);
        free(c);
        *socket_context = NULL;
    }
}

/* Shuts c down (the lock held): its thread sees the end of the stream and
 * MHD closes it. */
static void cut_locked(http_conn_t *c)
{
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    c->deadline = 0;
    c->cut = 1;
}

/* MHD asks before it takes a connection from addr.  At a cap (from addr,
 * or in all) the oldest connection still waiting for its request (slow,
 * or idle between requests) is cut to make room, so that slow clients of
 * an address cannot lock its other clients out; only when every counted
 * connection is busy answering is the new one refused. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    spw_http_t *h = cls;
    struct in_addr ip = {0};
    if (addr && len >= sizeof(struct sockaddr_in) && addr->sa_family == AF_INET)
        ip = ((const struct sockaddr_in *)(const void *)addr)->sin_addr;
    enum MHD_Result ok = MHD_YES;
    pthread_mutex_lock(&h->mu);
    unsigned all = 0, mine = 0;
    http_conn_t *old_all = NULL, *old_mine = NULL;
    for (http_conn_t *c = h->conns; c; c = c->next) {
        if (c->cut)
            continue;
        int same = c->ip.s_addr == ip.s_addr;
        all++;
        mine += (unsigned)same;
        if (c->deadline <= 0)
            continue;  /* being answered */
        if (!old_all || c->deadline < old_all->deadline)
            old_all = c;
        if (same && (!old_mine || c->deadline < old_mine->deadline))
            old_mine = c;
    }
    if (mine >= h->per_ip) {
        if (old_mine) {
            cut_locked(old_mine);
            all--;
            if (old_all == old_mine)
                old_all = NULL;
        } else {
            ok = MHD_NO;
        }
    }
    if (ok == MHD_YES && all >= h->max_conn) {
        if (!old_all) {  /* the oldest other one, cut_locked above excluded */
            for (http_conn_t *c = h->conns; c; c = c->next)
                if (!c->cut && c->deadline > 0 && (!old_all || c->deadline < old_all->deadline))
                    old_all = c;
        }
        if (old_all)
            cut_locked(old_all);
        else
            ok = MHD_NO;
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* Sets the deadline of conn's connection: 0 = none, else now + timeout. */
static void set_deadline(spw_http_t *h, struct MHD_Connection *conn, int on)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    http_conn_t *c = ci ? ci->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&h->mu);
    if (!c->cut)
        c->deadline = on ? mono_s() + h->request_timeout_s : 0;
    pthread_mutex_unlock(&h->mu);
}

/* Twice a second: connections whose request is not in by its deadline are
 * shut down; their thread sees the end of the stream and MHD closes them. */
static void *watchdog_main(void *arg)
{
    spw_http_t *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        double now = mono_s();
        for (http_conn_t *c = h->conns; c; c = c->next)
            if (c->deadline > 0 && now > c->deadline)
                cut_locked(c);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 500000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->wake, &h->mu, &ts);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* One request in flight (MHD's per-request pointer). */
typedef struct http_req {
    struct timespec start;      /* CLOCK_MONOTONIC when its headers arrived */
    char *body;                 /* upload so far (malloc), at most
                                   max_body_bytes */
    size_t len;                 /* bytes at body */
    size_t cap;                 /* bytes allocated at body */
    size_t dropped;             /* upload bytes past the limit, not kept */
    int too_large;              /* 1: the upload passed max_body_bytes */
    int status;                 /* status answered; 0 until then */
} http_req_t;

/* ---- the listen socket -------------------------------------------------- */

/* Parses "HOST:PORT" (IPv4 or "localhost") into sa.  0 or -1 with err. */
static int parse_listen(const char *where, struct sockaddr_in *sa, spw_error_t *err)
{
    const char *colon = where ? strrchr(where, ':') : NULL;
    char host[64];
    char *end;

    if (!colon || colon == where || (size_t)(colon - where) >= sizeof(host))
        goto bad;
    memcpy(host, where, (size_t)(colon - where));
    host[colon - where] = '\0';
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || *end || errno || port > 65535)
        goto bad;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        goto bad;
    return 0;
bad:
    return spw_errorf(err, "cannot listen on '%s': expected HOST:PORT with an IPv4 address "
                           "or localhost, like 127.0.0.1:8470", where ? where : "");
}

/* A bound, listening, non-blocking, close-on-exec socket, or -1 with err. */
static int open_listener(const char *where, const struct sockaddr_in *sa, spw_error_t *err)
{
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return spw_errorf(err, "cannot listen on %s: %s", where, strerror(errno));
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0
        || bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(fd, 128) < 0) {
        int e = errno;
        close(fd);
        return spw_errorf(err, "cannot listen on %s: %s", where, strerror(e));
    }
    return fd;
}

/* ---- one request -------------------------------------------------------- */

/* Keeps up to max_body_bytes of the upload; the rest is only counted. */
static void take_body(spw_http_t *h, http_req_t *r, const char *data, size_t n)
{
    if (r->too_large || n > h->max_body_bytes - r->len) {
        r->too_large = 1;
        r->dropped += n;
        return;
    }
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n)
            cap *= 2;
        if (cap > h->max_body_bytes)
            cap = h->max_body_bytes;
        r->body = spw_xrealloc(r->body, cap);
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
}

/* The query as the router wants it: key, value, ..., NULL. */
typedef struct query_vec {
    const char **kv;            /* 2 * n + 1 entries */
    size_t n;                   /* pairs filled */
    size_t max;                 /* pairs room was made for */
} query_vec_t;

static enum MHD_Result query_add(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    query_vec_t *q = cls;
    (void)kind;
    if (q->n == q->max)
        return MHD_NO;
    q->kv[2 * q->n] = key;
    q->kv[2 * q->n + 1] = value;
    q->n++;
    return MHD_YES;
}

/* Adds header name: value to resp unless value is NULL or "". */
static void add_header(struct MHD_Response *resp, const char *name, const char *value)
{
    if (value && *value)
        MHD_add_response_header(resp, name, value);
}

/* 1 when host (a Host header's value) names this daemon: an IP address
 * (a browser sends one only when the user typed it), localhost, this
 * machine's name, or a name of daemon.allowed_hosts.  A name a page's own
 * DNS points here (DNS rebinding) is none of these. */
static int host_served(const spw_http_t *h, const char *host)
{
    if (!host || !*host || host[0] == '[')
        return 1;  /* HTTP/1.0 without Host, or an IPv6 literal */
    char name[256];
    size_t n = strcspn(host, ":");
    if (n >= sizeof(name))
        return 0;
    memcpy(name, host, n);
    name[n] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, name, &a) == 1 || strcasecmp(name, "localhost") == 0 ||
        (n > 10 && strcasecmp(name + n - 10, ".localhost") == 0) ||
        (h->hostname[0] && strcasecmp(name, h->hostname) == 0))
        return 1;
    for (size_t i = 0; i < h->nhosts; i++)
        if (strcasecmp(h->hosts[i], strchr(h->hosts[i], ':') ? host : name) == 0)
            return 1;
    return 0;
}

/* Routes the gathered request and queues the answer. */
static enum MHD_Result answer(spw_http_t *h, struct MHD_Connection *conn, http_req_t *r,
                              const char *url, const char *method)
{
    query_vec_t q = {NULL, 0, 0};
    int nq = MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    q.max = nq > 0 ? (size_t)nq : 0;
    q.kv = spw_xcalloc(2 * q.max + 1, sizeof(*q.kv));
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, query_add, &q);

    spw_route_req_t req = {
        .method = method,
        .path = url,
        .query = q.kv,
        .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION),
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_CONTENT_TYPE),
        .client = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Spillway-Client"),
        .body = r->body,
        .body_len = r->len,
        .body_too_large = r->too_large,
    };
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host_served(h, host))
        req.host_refused = host;
    spw_route_resp_t out;
    spw_route(h->d, &req, &out);
    free(q.kv);

#if MHD_VERSION >= 0x00097701
    struct MHD_Response *resp = MHD_create_response_from_buffer_copy(out.body_len, out.body);
#else
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(out.body_len, out.body, MHD_RESPMEM_MUST_COPY);
#endif
    if (!resp) {
        spw_route_resp_clear(&out);
        return MHD_NO;
    }
    add_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out.content_type);
    add_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    add_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, out.www_authenticate);
    add_header(resp, MHD_HTTP_HEADER_ALLOW, out.allow);
    add_header(resp, "X-Spillway-Offset", out.offset);
    add_header(resp, "X-Spillway-Job-State", out.job_state);
    add_header(resp, "X-Content-Type-Options", "nosniff");
    add_header(resp, "X-Frame-Options", "DENY");
    add_header(resp, "Content-Security-Policy", out.csp ? out.csp : HTTP_CSP_NONE);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)out.status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES)
        r->status = out.status;
    spw_route_resp_clear(&out);
    return ret;
}

/* 1 when the request announces a Content-Length above the limit. */
static int announced_too_large(spw_http_t *h, struct MHD_Connection *conn)
{
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl)
        return 0;
    errno = 0;
    unsigned long long n = strtoull(cl, NULL, 10);
    return errno == ERANGE || n > h->max_body_bytes;
}

/* MHD calls this once when the headers are in, once per piece of upload,
 * and once more at the end of the upload. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    spw_http_t *h = cls;
    http_req_t *r = *con_cls;
    (void)version;

    if (!r) {
        r = spw_xcalloc(1, sizeof(*r));
        clock_gettime(CLOCK_MONOTONIC, &r->start);
        *con_cls = r;
        /* Answering now, before the upload is read, makes MHD drop the body
         * and close the connection afterwards: nothing is buffered. */
        if (announced_too_large(h, conn)) {
            r->too_large = 1;
            return answer(h, conn, r, url, method);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        take_body(h, r, upload, *upload_size);
        *upload_size = 0;
        if (r->dropped / HTTP_DISCARD_FACTOR > h->max_body_bytes)
            return MHD_NO;  /* an endless chunked upload: cut it */
        return MHD_YES;
    }
    if (r->status)
        return MHD_YES;  /* answered early; MHD is draining */
    set_deadline(h, conn, 0);  /* the request is in: the rest is ours */
    return answer(h, conn, r, url, method);
}

/* MHD calls this when a request is over (answered, or the client left). */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    spw_http_t *h = cls;
    http_req_t *r = *con_cls;
    (void)toe;
    set_deadline(h, conn, 1);  /* the next request on it, or idle */
    if (!r)
        return;
    if (r->status) {
        struct timespec end;
        clock_gettime(CLOCK_MONOTONIC, &end);
        double s = (double)(end.tv_sec - r->start.tv_sec)
                   + (double)(end.tv_nsec - r->start.tv_nsec) * 1e-9;
        spw_daemon_note_request(h->d, r->status, s);
    }
    free(r->body);
    free(r);
    *con_cls = NULL;
}

/* ---- the server --------------------------------------------------------- */

/* Starts MHD on h->fd, over TLS with cert and key when they are given. */
static struct MHD_Daemon *start_mhd(spw_http_t *h, const char *cert, const char *key)
{
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION;
    if (cert)
        flags |= MHD_USE_TLS | MHD_USE_ITC;  /* ITC: quiesce, for reloads */
    return MHD_start_daemon(
        flags, 0, accept_policy, h, on_request, h, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)h->fd,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_CONNECTION_LIMIT, h->max_conn + HTTP_CUT_SLACK(h->max_conn),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)h->header_bytes,
        MHD_OPTION_THREAD_STACK_SIZE, HTTP_THREAD_STACK,
        MHD_OPTION_CONNECTION_TIMEOUT, h->idle_s,
        cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert,
        MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
}

/* Reads a certificate chain and its key and checks that they are PEM and
 * belong together (OpenSSL), so that a bad pair is refused with a reason
 * before it is used.  0 with *cert and *key malloc'd, or -1 with err. */
static int read_tls_pair(const char *cert_file, const char *key_file, char **cert, char **key,
                         spw_error_t *err)
{
    size_t cl = 0, kl = 0;
    *cert = *key = NULL;
    if (!(*cert = spw_read_file(cert_file, &cl, err)))
        return -1;
    if (!(*key = spw_read_file(key_file, &kl, err))) {
        free(*cert);
        *cert = NULL;
        return -1;
    }
    BIO *cb = BIO_new_mem_buf(*cert, (int)cl), *kb = BIO_new_mem_buf(*key, (int)kl);
    X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    int rc = 0;
    if (!x)
        rc = spw_errorf(err, "%s: not a PEM certificate (expected -----BEGIN CERTIFICATE-----)",
                        cert_file);
    else if (!k)
        rc = spw_errorf(err, "%s: not an unencrypted PEM private key", key_file);
    else if (X509_check_private_key(x, k) != 1)
        rc = spw_errorf(err, "%s does not belong to the certificate in %s (another key?)",
                        key_file, cert_file);
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
    if (rc < 0) {
        explicit_bzero(*key, kl);
        free(*cert);
        free(*key);
        *cert = *key = NULL;
    }
    return rc;
}

static void free_pem(char *cert, char *key)
{
    if (key)
        explicit_bzero(key, strlen(key));
    free(key);
    free(cert);
}

static void *stop_retired(void *arg)
{
    http_retired_t *r = arg;
    MHD_stop_daemon(r->mhd);  /* waits for its connections */
    return NULL;
}

int spw_http_reload_tls(spw_http_t *h, const char *cert_file, const char *key_file,
                        spw_error_t *err)
{
    if (!h->cert)
        return spw_errorf(err, "%s", "the API was started without TLS (daemon.tls_cert); "
                                     "restart the daemon to serve HTTPS");
    char *cert, *key;
    if (read_tls_pair(cert_file, key_file, &cert, &key, err) < 0)
        return -1;
    /* The old server stops accepting; the new one takes the same socket. */
    if (MHD_quiesce_daemon(h->mhd) == MHD_INVALID_SOCKET) {
        free_pem(cert, key);
        return spw_errorf(err, "%s", "cannot hand the listen socket over to a new server");
    }
    struct MHD_Daemon *fresh = start_mhd(h, cert, key);
    int rc = 0;
    if (!fresh) {
        /* The old pair served until now: take it up again. */
        free_pem(cert, key);
        rc = spw_errorf(err, "%s", "cannot start the HTTPS server with the new certificate; "
                                   "the old one is served again");
        cert = spw_xstrdup(h->cert);
        key = spw_xstrdup(h->key);
        if (!(fresh = start_mhd(h, cert, key))) {
            free_pem(cert, key);
            return spw_errorf(err, "%s", "cannot start the HTTPS server again after a failed "
                                         "certificate reload: no new connection is accepted; "
                                         "restart the daemon");
        }
    }
    http_retired_t *r = spw_xcalloc(1, sizeof(*r));
    r->mhd = h->mhd;
    r->cert = h->cert;
    r->key = h->key;
    pthread_mutex_lock(&h->mu);
    h->mhd = fresh;
    h->cert = cert;
    h->key = key;
    r->next = h->retired;
    h->retired = r;
    pthread_mutex_unlock(&h->mu);
    if (pthread_create(&r->stopper, NULL, stop_retired, r) == 0)
        r->threaded = 1;
    else
        stop_retired(r);  /* no thread: wait here */
    return rc;
}

int spw_http_is_tls(const spw_http_t *h)
{
    return h && h->cert;
}

static void free_hosts(spw_http_t *h)
{
    for (size_t i = 0; i < h->nhosts; i++)
        free(h->hosts[i]);
    free(h->hosts);
}

spw_http_t *spw_http_start(spw_daemon_t *d, const char *listen_addr, size_t max_body_bytes,
                           spw_error_t *err)
{
    spw_http_opts_t o = {.max_body_bytes = max_body_bytes};
    return spw_http_start_opts(d, listen_addr, &o, err);
}

spw_http_t *spw_http_start_opts(spw_daemon_t *d, const char *listen_addr,
                                const spw_http_opts_t *opts, spw_error_t *err)
{
    struct sockaddr_in sa;
    if (parse_listen(listen_addr, &sa, err) < 0)
        return NULL;
    if (!spw_daemon_auth_required(d) && (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
        spw_errorf(err, "refusing to listen on %s with no daemon.tokens in the config: the "
                        "API would be open to the network; add tokens or listen on 127.0.0.1",
                   listen_addr);
        return NULL;
    }
    int fd = open_listener(listen_addr, &sa, err);
    if (fd < 0)
        return NULL;

    spw_http_t *h = spw_xcalloc(1, sizeof(*h));
    h->d = d;
    h->max_body_bytes = opts->max_body_bytes ? opts->max_body_bytes : (size_t)1 << 20;
    h->request_timeout_s = opts->request_timeout_s > 0 ? opts->request_timeout_s
                                                       : HTTP_REQUEST_TIMEOUT_S;
    h->max_conn = opts->max_connections ? opts->max_connections : HTTP_MAX_CONNECTIONS;
    h->per_ip = opts->max_connections_per_ip ? opts->max_connections_per_ip : HTTP_MAX_PER_IP;
    h->hosts = spw_xcalloc(opts->nallowed_hosts + 1, sizeof(char *));
    for (size_t i = 0; i < opts->nallowed_hosts; i++)
        h->hosts[h->nhosts++] = spw_xstrdup(opts->allowed_hosts[i]);
    if (gethostname(h->hostname, sizeof(h->hostname) - 1) < 0)
        h->hostname[0] = '\0';
    size_t header_bytes = opts->max_header_bytes ? opts->max_header_bytes : HTTP_MAX_HEADER_BYTES;
    /* MHD's idle limit, whole seconds: it also bounds a client that stops
     * reading its answer. */
    unsigned idle_s = (unsigned)(h->request_timeout_s + 0.999);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->wake, NULL);
    h->fd = fd;
    h->header_bytes = (unsigned)header_bytes;
    h->idle_s = idle_s;
    if (opts->tls_cert_file &&
        (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES
             ? spw_errorf(err, "%s", "this libmicrohttpd has no TLS (GnuTLS) support: "
                                     "install Debian's libmicrohttpd12 or drop daemon.tls_cert")
             : read_tls_pair(opts->tls_cert_file, opts->tls_key_file, &h->cert, &h->key,
                             err)) < 0) {
        close(fd);
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->mu);
        free_hosts(h);
        free(h);
        return NULL;
    }
    h->mhd = start_mhd(h, h->cert, h->key);
    if (!h->mhd) {
        close(fd);
        free_pem(h->cert, h->key);
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->mu);
        free_hosts(h);
        free(h);
        const char *why = spw_netlibs_error();
        spw_errorf(err, "cannot start the HTTP server on %s%s%s", listen_addr, why ? ": " : "",
                   why ? why : "");
        return NULL;
    }
    if (pthread_create(&h->watchdog, NULL, watchdog_main, h) == 0)
        h->watchdog_started = 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    if (h->port == 0) {  /* older MHD: ask the socket */
        struct sockaddr_in got;
        socklen_t n = sizeof(got);
        if (getsockname(fd, (struct sockaddr *)&got, &n) == 0)
            h->port = ntohs(got.sin_port);
    }
    return h;
}

int spw_http_port(const spw_http_t *h)
{
    return h ? h->port : 0;
}

void spw_http_stop(spw_http_t *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->mhd);  /* closes the listen socket too */
    for (http_retired_t *r = h->retired, *nx; r; r = nx) {
        nx = r->next;
        if (r->threaded)
            pthread_join(r->stopper, NULL);
        free_pem(r->cert, r->key);
        free(r);
    }
    free_pem(h->cert, h->key);
    if (h->watchdog_started) {
        pthread_mutex_lock(&h->mu);
        h->stop = 1;
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->watchdog, NULL);
    }
    for (http_conn_t *c = h->conns, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->mu);
    free_hosts(h);
    free(h);
}
