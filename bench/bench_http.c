/* bench_http.c: durable submit throughput of `spillway serve` over HTTP, for
 * the daemon's targets (>= 2,000 jobs/s from one keep-alive client, >= 5,000
 * jobs/s from 8 concurrent clients).
 *
 *   build/bench/bench_http --url HOST:PORT [--token T] [--threads N]
 *                          [--jobs TOTAL] [--body JSON] [--ids FILE] [--cancel]
 *
 * N threads (default 1) each open one HTTP/1.1 keep-alive connection (raw
 * POSIX sockets, TCP_NODELAY, no HTTP library, so that the client costs a few
 * microseconds a request) and POST /v1/jobs with a small job spec, waiting for
 * each response before sending the next request, until TOTAL jobs (default
 * 10,000, split evenly) were sent.  The daemon answers 201 only once the job
 * is committed, so every 201 counted is a durable job.  With --cancel each
 * acknowledged job is cancelled at once on the same connection (POST
 * /v1/jobs/ID/cancel, 200 expected), which the latencies include.
 *
 * Prints one line of key=value pairs for run.sh:
 *   http threads=N jobs=TOTAL ok=... errors=... elapsed_s=... jobs_per_s=...
 *        p50_ms=... p99_ms=... max_ms=... reconnects=... cancelled=...
 * and, on stderr, the first unexpected response.  --ids FILE writes the id of
 * every acknowledged job, one a line, so a script can check them against the
 * database.  Exit status: 0 when every response was 201, 1 otherwise, 2 on
 * bad arguments or when the server cannot be reached. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ID_LEN 32          /* room for one job id and its NUL */
#define RBUF (64 * 1024)   /* response buffer per connection, bytes */

static const char default_body[] = "{\"run\":[\"true\"],\"gpus\":1,\"est_runtime\":3600}";

/* What every thread shares (read-only once the threads run). */
typedef struct shared {
    struct addrinfo *addr;   /* resolved server address */
    const char *hostport;    /* for the Host header */
    const char *token;       /* bearer token; NULL = no Authorization */
    const char *body;        /* request body */
    int cancel;              /* cancel each acknowledged job */
    char *req;               /* the whole request (headers + body), owned */
    size_t reqlen;           /* bytes in req */
    pthread_barrier_t start; /* every thread connected: start the clock */
    pthread_mutex_t lock;    /* guards first_error */
    char first_error[512];   /* the first unexpected response, for stderr */
} shared_t;

/* One client thread. */
typedef struct client {
    shared_t *sh;
    pthread_t tid;
    size_t jobs;             /* requests to send */
    size_t ok, errors;       /* 201s / anything else */
    size_t cancelled;        /* cancels answered 200 (--cancel) */
    size_t reconnects;       /* connections the server closed and we reopened */
    double *lat_s;           /* owned; latency of each request, seconds */
    size_t nlat;
    char (*ids)[ID_LEN];     /* owned; the id of each acknowledged job */
    int fd;                  /* the connection, -1 if none */
    char buf[RBUF];          /* received bytes not consumed yet */
    size_t blen;
    int failed;              /* could not connect */
} client_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note_error(shared_t *sh, const char *fmt, const char *detail, int code)
{
    pthread_mutex_lock(&sh->lock);
    if (!sh->first_error[0])
        snprintf(sh->first_error, sizeof(sh->first_error), fmt, code, detail);
    pthread_mutex_unlock(&sh->lock);
}

static int connect_to(const shared_t *sh)
{
    int fd = socket(sh->addr->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, sh->addr->ai_addr, sh->addr->ai_addrlen) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads more bytes into c->buf; -1 on EOF or error. */
static int fill(client_t *c)
{
    if (c->blen == RBUF)
        return -1; /* a response bigger than the buffer: not what we expect */
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->blen, RBUF - c->blen, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c->blen += (size_t)r;
        return 0;
    }
}

/* Case-insensitive search for header `name` in the header block [h, end);
 * returns a pointer to its value or NULL. */
static const char *header(const char *h, const char *end, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = h; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if ((size_t)(eol - p) > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            return v;
        }
        p = eol + 1;
    }
    return NULL;
}

/* Reads one response: its status, body (copied, NUL-terminated, into body
 * up to bodymax) and whether the server will close the connection.  Handles
 * Content-Length and chunked bodies.  -1 on a broken connection. */
static int read_response(client_t *c, int *status, char *body, size_t bodymax, int *close_after)
{
    char *hend;
    for (;;) {
        hend = c->blen ? memmem(c->buf, c->blen, "\r\n\r\n", 4) : NULL;
        if (hend)
            break;
        if (fill(c) < 0)
            return -1;
    }
    size_t hlen = (size_t)(hend - c->buf) + 4;
    if (c->blen < 12 || strncmp(c->buf, "HTTP/1.", 7) != 0)
        return -1;
    *status = atoi(c->buf + 9);
    const char *cl = header(c->buf, hend, "Content-Length");
    const char *te = header(c->buf, hend, "Transfer-Encoding");
    const char *conn = header(c->buf, hend, "Connection");
    *close_after = conn && strncasecmp(conn, "close", 5) == 0;
    size_t blen = 0;
    if (te && strncasecmp(te, "chunked", 7) == 0) {
        /* Decode chunks in place behind the headers. */
        size_t pos = hlen, out = 0;
        for (;;) {
            char *eol;
            while (!(eol = memmem(c->buf + pos, c->blen - pos, "\r\n", 2)))
                if (fill(c) < 0)
                    return -1;
            size_t n = strtoul(c->buf + pos, NULL, 16);
            size_t start = (size_t)(eol - c->buf) + 2;
            while (c->blen < start + n + 2)
                if (fill(c) < 0)
                    return -1;
            if (n == 0) {
                /* No trailers expected: the final CRLF follows. */
                pos = start + 2;
                break;
            }
            if (out < bodymax - 1) {
                size_t k = n < bodymax - 1 - out ? n : bodymax - 1 - out;
                memcpy(body + out, c->buf + start, k);
                out += k;
            }
            pos = start + n + 2;
        }
        body[out] = 0;
        memmove(c->buf, c->buf + pos, c->blen - pos);
        c->blen -= pos;
        return 0;
    }
    if (cl)
        blen = strtoul(cl, NULL, 10);
    else if (*status != 204 && *status != 304 && *status >= 200)
        *close_after = 1; /* body until close: not keep-alive; we read what is there */
    while (c->blen < hlen + blen)
        if (fill(c) < 0)
            return -1;
    size_t k = blen < bodymax - 1 ? blen : bodymax - 1;
    memcpy(body, c->buf + hlen, k);
    body[k] = 0;
    memmove(c->buf, c->buf + hlen + blen, c->blen - hlen - blen);
    c->blen -= hlen + blen;
    return 0;
}

/* Copies the value of "id" from a JSON body; 0 if found. */
static int body_id(const char *body, char out[ID_LEN])
{
    const char *p = strstr(body, "\"id\"");
    if (!p)
        return -1;
    p = strchr(p + 4, '"');
    if (!p)
        return -1;
    const char *q = strchr(++p, '"');
    if (!q || q - p >= ID_LEN)
        return -1;
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = 0;
    return 0;
}

/* Sends req (len bytes) and reads its answer into *status and body,
 * reconnecting once when the connection broke (the server closed an idle
 * keep-alive connection, or died; a request that reached the server may then
 * be sent twice, which the script's count check would show), and after an
 * answer that closes it.  0, or -1 when the server cannot be reached. */
static int exchange(client_t *c, const char *req, size_t len, int *status, char *body,
                    size_t bodymax)
{
    shared_t *sh = c->sh;
    int close_after = 0;
    for (int tries = 0;; tries++) {
        if (c->fd >= 0 && send_all(c->fd, req, len) == 0 &&
            read_response(c, status, body, bodymax, &close_after) == 0)
            break;
        if (c->fd >= 0)
            close(c->fd);
        c->blen = 0;
        c->fd = -1;
        if (tries >= 1 || (c->fd = connect_to(sh)) < 0) {
            note_error(sh, "connection failed (status %d) %s", strerror(errno), 0);
            return -1;
        }
        c->reconnects++;
    }
    if (close_after) {
        close(c->fd);
        c->blen = 0;
        if ((c->fd = connect_to(sh)) < 0)
            note_error(sh, "reconnect failed (status %d) %s", strerror(errno), 0);
        else
            c->reconnects++;
    }
    return 0;
}

static void *client_main(void *arg)
{
    client_t *c = arg;
    shared_t *sh = c->sh;
    c->fd = connect_to(sh);
    if (c->fd < 0)
        c->failed = 1;
    pthread_barrier_wait(&sh->start);
    if (c->failed)
        return NULL;
    char body[1024], creq[1024];
    for (size_t i = 0; i < c->jobs; i++) {
        int status = 0;
        double t0 = now_s();
        if (exchange(c, sh->req, sh->reqlen, &status, body, sizeof(body)) < 0) {
            c->errors += c->jobs - i;
            return NULL;
        }
        if (status == 201 && body_id(body, c->ids[c->ok]) == 0) {
            c->ok++;
        } else {
            c->errors++;
            note_error(sh, "unexpected response: HTTP %d: %.400s", body, status);
        }
        if (sh->cancel && status == 201) {
            int n = snprintf(creq, sizeof(creq),
                             "POST /v1/jobs/%s/cancel HTTP/1.1\r\nHost: %s\r\n%s%s%s"
                             "X-Spillway-Client: bench\r\nContent-Length: 0\r\n\r\n",
                             c->ids[c->ok - 1], sh->hostport,
                             sh->token ? "Authorization: Bearer " : "",
                             sh->token ? sh->token : "", sh->token ? "\r\n" : "");
            if (exchange(c, creq, (size_t)n, &status, body, sizeof(body)) < 0) {
                c->errors += c->jobs - i;
                return NULL;
            }
            if (status == 200)
                c->cancelled++;
            else
                note_error(sh, "unexpected answer to a cancel: HTTP %d: %.400s", body, status);
        }
        c->lat_s[c->nlat++] = now_s() - t0;
    }
    if (c->fd >= 0)
        close(c->fd);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_http --url HOST:PORT [--token T] [--threads N] [--jobs TOTAL]\n"
                    "                  [--body JSON] [--ids FILE] [--cancel]\n");
}

int main(int argc, char **argv)
{
    const char *url = NULL, *token = NULL, *body = default_body, *ids_path = NULL;
    long threads = 1, jobs = 10000;
    int cancel = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--token") == 0 && i + 1 < argc)
            token = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
            jobs = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--body") == 0 && i + 1 < argc)
            body = argv[++i];
        else if (strcmp(argv[i], "--ids") == 0 && i + 1 < argc)
            ids_path = argv[++i];
        else if (strcmp(argv[i], "--cancel") == 0)
            cancel = 1;
        else {
            usage();
            return 2;
        }
    }
    if (!url || threads < 1 || threads > 1024 || jobs < 1 || jobs > 100000000) {
        usage();
        fprintf(stderr, "bench_http: --url is required; --threads takes 1 to 1024, --jobs 1 to 1e8\n");
        return 2;
    }
    if (strncmp(url, "http://", 7) == 0)
        url += 7;
    char host[256], port[16];
    const char *colon = strrchr(url, ':');
    size_t hl = colon ? (size_t)(colon - url) : 0;
    if (!colon || hl == 0 || hl >= sizeof(host) || strlen(colon + 1) >= sizeof(port)) {
        fprintf(stderr, "bench_http: --url takes HOST:PORT, not '%s'\n", url);
        return 2;
    }
    memcpy(host, url, hl);
    host[hl] = 0;
    snprintf(port, sizeof(port), "%s", colon + 1);
    char *slash = strchr(port, '/');
    if (slash)
        *slash = 0;

    shared_t sh = {0};
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(host, port, &hints, &sh.addr);
    if (rc != 0) {
        fprintf(stderr, "bench_http: %s:%s: %s\n", host, port, gai_strerror(rc));
        return 2;
    }
    sh.hostport = url;
    sh.token = token;
    sh.body = body;
    sh.cancel = cancel;
    size_t cap = strlen(body) + (token ? strlen(token) : 0) + 512;
    sh.req = malloc(cap);
    if (!sh.req)
        return 2;
    int n = snprintf(sh.req, cap,
                     "POST /v1/jobs HTTP/1.1\r\nHost: %s:%s\r\n%s%s%s"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     host, port, token ? "Authorization: Bearer " : "", token ? token : "",
                     token ? "\r\n" : "", strlen(body), body);
    sh.reqlen = (size_t)n;
    pthread_mutex_init(&sh.lock, NULL);
    pthread_barrier_init(&sh.start, NULL, (unsigned)threads + 1);

    client_t *cl = calloc((size_t)threads, sizeof(client_t));
    if (!cl)
        return 2;
    for (long t = 0; t < threads; t++) {
        client_t *c = &cl[t];
        c->sh = &sh;
        c->jobs = (size_t)(jobs / threads + (t < jobs % threads ? 1 : 0));
        c->lat_s = malloc((c->jobs ? c->jobs : 1) * sizeof(double));
        c->ids = malloc((c->jobs ? c->jobs : 1) * sizeof(*c->ids));
        c->fd = -1;
        if (!c->lat_s || !c->ids || pthread_create(&c->tid, NULL, client_main, c) != 0) {
            fprintf(stderr, "bench_http: cannot start thread %ld\n", t);
            return 2;
        }
    }
    pthread_barrier_wait(&sh.start);
    double t0 = now_s();
    for (long t = 0; t < threads; t++)
        pthread_join(cl[t].tid, NULL);
    double elapsed = now_s() - t0;

    size_t ok = 0, errors = 0, reconnects = 0, nlat = 0, failed = 0, cancelled = 0;
    for (long t = 0; t < threads; t++) {
        ok += cl[t].ok;
        cancelled += cl[t].cancelled;
        errors += cl[t].errors;
        reconnects += cl[t].reconnects;
        nlat += cl[t].nlat;
        failed += (size_t)cl[t].failed;
    }
    if (failed) {
        fprintf(stderr, "bench_http: %zu of %ld threads could not connect to %s:%s\n", failed,
                threads, host, port);
        return 2;
    }
    double *lat = malloc((nlat ? nlat : 1) * sizeof(double));
    size_t k = 0;
    for (long t = 0; t < threads; t++)
        for (size_t i = 0; i < cl[t].nlat; i++)
            lat[k++] = cl[t].lat_s[i];
    qsort(lat, nlat, sizeof(double), cmp_d);
    double p50 = nlat ? lat[nlat / 2] : 0;
    size_t i99 = nlat ? (size_t)((double)nlat * 0.99) : 0;
    if (i99 >= nlat && nlat)
        i99 = nlat - 1;
    double p99 = nlat ? lat[i99] : 0, pmax = nlat ? lat[nlat - 1] : 0;

    if (ids_path) {
        FILE *f = fopen(ids_path, "w");
        if (!f) {
            fprintf(stderr, "bench_http: %s: %s\n", ids_path, strerror(errno));
            return 2;
        }
        for (long t = 0; t < threads; t++)
            for (size_t i = 0; i < cl[t].ok; i++)
                fprintf(f, "%s\n", cl[t].ids[i]);
        if (fclose(f) != 0) {
            fprintf(stderr, "bench_http: %s: %s\n", ids_path, strerror(errno));
            return 2;
        }
    }
    printf("http threads=%ld jobs=%ld ok=%zu errors=%zu elapsed_s=%.3f jobs_per_s=%.0f "
           "p50_ms=%.3f p99_ms=%.3f max_ms=%.3f reconnects=%zu cancelled=%zu\n",
           threads, jobs, ok, errors, elapsed, (double)ok / elapsed, p50 * 1e3, p99 * 1e3,
           pmax * 1e3, reconnects, cancelled);
    if (sh.first_error[0])
        fprintf(stderr, "bench_http: first error: %s\n", sh.first_error);

    for (long t = 0; t < threads; t++) {
        free(cl[t].lat_s);
        free(cl[t].ids);
    }
    free(cl);
    free(lat);
    free(sh.req);
    freeaddrinfo(sh.addr);
    pthread_barrier_destroy(&sh.start);
    pthread_mutex_destroy(&sh.lock);
    return errors || ok != (size_t)jobs || (cancel && cancelled != ok) ? 1 : 0;
}
