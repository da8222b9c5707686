/* client.c: the HTTP side of the command-line client: one kept-alive
 * HTTP/1.1 connection per process, the common options, and how the
 * daemon's errors and an unreachable daemon are reported. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/client_private.h"
#include "util/error.h"

void spw_cli_common_init(spw_cli_common_t *co)
{
    const char *url = getenv("SPILLWAY_URL");
    co->url = url && *url ? url : SPW_CLI_DEFAULT_URL;
    co->token = getenv("SPILLWAY_TOKEN");
    const char *tf = getenv("SPILLWAY_TOKEN_FILE");
    co->token_file = (!co->token || !*co->token) && tf && *tf ? tf : NULL;
    co->json = 0;
    const char *ca = getenv("SPILLWAY_CA");
    co->ca_file = ca && *ca ? ca : NULL;
    spw_cli_context_apply(co);
}

_Noreturn void spw_cli_die_usage(const char *cmd, const char *msg)
{
    fprintf(stderr, "spillway %s: %s\n(see 'spillway %s --help')\n", cmd, msg, cmd);
    exit(SPW_CLI_EUNREACH);
}

int spw_cli_common_opt(spw_cli_common_t *co, const char *cmd, int c, const char *arg)
{
    switch (c) {
    case SPW_CLI_O_URL:
        if (!*arg)
            spw_cli_die_usage(cmd, "--url takes a URL such as http://127.0.0.1:8470");
        co->url = arg;
        return 1;
    case SPW_CLI_O_TOKEN:
        fprintf(stderr, "spillway %s: warning: --token shows the token to every local user "
                        "in `ps`; use SPILLWAY_TOKEN or --token-file FILE instead\n", cmd);
        co->token = arg;
        co->token_file = NULL;
        return 1;
    case SPW_CLI_O_CA:
        if (!*arg)
            spw_cli_die_usage(cmd, "--ca takes a PEM file of CA certificates");
        co->ca_file = arg;
        return 1;
    case SPW_CLI_O_TOKEN_FILE:
        if (!*arg)
            spw_cli_die_usage(cmd, "--token-file takes a file that holds the token");
        co->token_file = arg;
        co->token = NULL;
        return 1;
    case 'o':
        if (strcmp(arg, "table") == 0)
            co->json = 0;
        else if (strcmp(arg, "json") == 0)
            co->json = 1;
        else
            spw_cli_die_usage(cmd, "-o takes 'table' or 'json'");
        return 1;
    default: return 0;
    }
}

/* The token in file path: its first line, without surrounding blanks
 * (malloc'd).  Exits 2 when it cannot be read or is empty; warns when the
 * file is readable by others. */
static char *read_token_file(const char *path, const char *cmd)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "spillway: %s: cannot read the token file %s: %s\n", cmd, path,
                strerror(errno));
        exit(SPW_CLI_EUNREACH);
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & (S_IRWXG | S_IRWXO)))
        fprintf(stderr, "spillway: %s: warning: the token file %s is readable by other users; "
                        "chmod 600 %s\n", cmd, path, path);
    char buf[4200];
    size_t n = fgets(buf, sizeof(buf), f) ? strlen(buf) : 0;
    fclose(f);
    char *p = buf;
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    while (n && isspace((unsigned char)*p)) {
        p++;
        n--;
    }
    if (!n) {
        fprintf(stderr, "spillway: %s: the token file %s is empty: put the token on its first "
                        "line\n", cmd, path);
        exit(SPW_CLI_EUNREACH);
    }
    char *tok = spw_xmalloc(n + 1);
    memcpy(tok, p, n);
    tok[n] = '\0';
    explicit_bzero(buf, sizeof(buf));
    return tok;
}

/* ---- the connection ------------------------------------------------------
 * A small HTTP/1.1 client of its own over one TCP connection, kept alive
 * between the requests of a process (logs -f polls on it).  libcurl was
 * used before; loading it (and the TLS, LDAP and Kerberos libraries it
 * pulls in) and its global init were most of the start-up time of a
 * one-shot `spillway submit` (bench/cli_submit.sh).  https:// runs the same
 * over OpenSSL (client_tls.c), set up only when the URL asks for it. */

/* Seconds allowed to connect, and of silence while waiting for an answer. */
#define CONNECT_TIMEOUT_MS 10000
#define SILENCE_TIMEOUT_MS 60000
/* Largest response head accepted. */
#define HEAD_MAX 65536
/* Largest response body accepted: far above any answer of the daemon (a
 * log page is 1 MiB), and it keeps a broken or hostile server's sizes from
 * overflowing the arithmetic below or eating the machine's memory. */
#define BODY_MAX ((size_t)1 << 30)

/* Appends n bytes to r's body, keeping it NUL-terminated. */
static void body_add(spw_resp_t *r, const char *data, size_t n)
{
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap > 4096 ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        r->body = spw_xrealloc(r->body, cap);
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
}

/* Copies the value of header line "Name: value" (len bytes, no CRLF) into
 * out when the name matches; returns 1 if it did. */
static int header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return 0;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    size_t len = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
    return 1;
}

/* Parses "http[s]://HOST[:PORT][/PREFIX]" into c.  0, or -1 with errbuf. */
static int parse_url(spw_client_t *c, const char *url)
{
    const char *p = url;
    if (strncasecmp(p, "https://", 8) == 0) {
        c->tls = 1;
        p += 8;
    } else if (strncasecmp(p, "http://", 7) == 0) {
        p += 7;
    } else {
        snprintf(c->errbuf, sizeof(c->errbuf), "%s",
                 "the URL must start with http:// or https://");
        return -1;
    }
    size_t hl;
    const char *after;
    if (*p == '[') {  /* [IPv6] */
        const char *close = strchr(p, ']');
        if (!close)
            goto bad;
        hl = (size_t)(close - p - 1);
        if (hl == 0 || hl >= sizeof(c->host))
            goto bad;
        memcpy(c->host, p + 1, hl);
        after = close + 1;
    } else {
        hl = strcspn(p, ":/?#");
        if (hl == 0 || hl >= sizeof(c->host))
            goto bad;
        memcpy(c->host, p, hl);
        after = p + hl;
    }
    c->host[hl] = '\0';
    snprintf(c->port, sizeof(c->port), "%s", c->tls ? "443" : "80");
    if (*after == ':') {
        size_t pl = strspn(after + 1, "0123456789");
        if (pl == 0 || pl > 5 || atoi(after + 1) > 65535)
            goto bad;
        memcpy(c->port, after + 1, pl);
        c->port[pl] = '\0';
        after += 1 + pl;
    }
    if (*after && *after != '/')
        goto bad;
    snprintf(c->hosthdr, sizeof(c->hosthdr), "%s%s%s:%s", strchr(c->host, ':') ? "[" : "",
             c->host, strchr(c->host, ':') ? "]" : "", c->port);
    c->prefix = spw_xstrdup(after);
    for (size_t n = strlen(c->prefix); n > 0 && c->prefix[n - 1] == '/'; n--)
        c->prefix[n - 1] = '\0';
    return 0;
bad:
    snprintf(c->errbuf, sizeof(c->errbuf), "%s",
             "expected a URL like http://127.0.0.1:8470 or https://HOST:8470");
    return -1;
}

/* Waits until fd is ready for events, at most ms.  1 ready, 0 timeout, -1. */
static int wait_fd(int fd, short events, int ms)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    for (;;) {
        int n = poll(&pfd, 1, ms);
        if (n >= 0 || errno != EINTR)
            return n > 0 ? 1 : n;
    }
}

/* Connects to one address within the connect timeout; fd or -1 (errno). */
static int connect_one(const struct sockaddr *sa, socklen_t len, int family)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, sa, len) < 0) {
        if (errno != EINPROGRESS)
            goto fail;
        int w = wait_fd(fd, POLLOUT, CONNECT_TIMEOUT_MS), soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (w == 0) {
            errno = ETIMEDOUT;
            goto fail;
        }
        if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            goto fail;
        if (soerr) {
            errno = soerr;
            goto fail;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int open_tcp(spw_client_t *c);

/* Opens c->fd, and TLS over it for https://. */
static int open_conn(spw_client_t *c)
{
    if (open_tcp(c) < 0)
        return -1;
    if (c->tls && spw_tls_start(c) < 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

/* Opens the TCP connection.  "localhost" and numeric addresses need no
 * resolver (no /etc/nsswitch.conf, no DNS): the common case costs one
 * connect(). */
static int open_tcp(spw_client_t *c)
{
    struct sockaddr_in v4;
    memset(&v4, 0, sizeof(v4));
    v4.sin_family = AF_INET;
    v4.sin_port = htons((uint16_t)atoi(c->port));
    if (strcmp(c->host, "localhost") == 0 || inet_pton(AF_INET, c->host, &v4.sin_addr) == 1) {
        if (strcmp(c->host, "localhost") == 0)
            v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        c->fd = connect_one((struct sockaddr *)&v4, sizeof(v4), AF_INET);
        if (c->fd < 0)
            snprintf(c->errbuf, sizeof(c->errbuf), "%s", strerror(errno));
        return c->fd < 0 ? -1 : 0;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int gr = getaddrinfo(c->host, c->port, &hints, &res);
    if (gr != 0) {
        snprintf(c->errbuf, sizeof(c->errbuf), "cannot resolve %.120s: %s", c->host, gai_strerror(gr));
        return -1;
    }
    int e = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai && c->fd < 0; ai = ai->ai_next) {
        c->fd = connect_one(ai->ai_addr, ai->ai_addrlen, ai->ai_family);
        if (c->fd < 0)
            e = errno;
    }
    freeaddrinfo(res);
    if (c->fd < 0)
        snprintf(c->errbuf, sizeof(c->errbuf), "%s", strerror(e));
    return c->fd < 0 ? -1 : 0;
}

static void close_conn(spw_client_t *c)
{
    spw_tls_end(c);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->rlen = 0;
}

/* Writes all of buf.  0, or -1 with errno. */
static int send_all(spw_client_t *c, const char *buf, size_t n)
{
    while (n) {
        short want = POLLOUT;
        ssize_t w = c->ssl ? spw_tls_write(c, buf, n, &want)
                           : send(c->fd, buf, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (wait_fd(c->fd, want, SILENCE_TIMEOUT_MS) <= 0) {
                    errno = ETIMEDOUT;
                    return -1;
                }
                continue;
            }
            return -1;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads more into c->rbuf.  Bytes read (> 0), 0 at the end of the stream,
 * -1 with errno (ETIMEDOUT after a minute of silence). */
static ssize_t fill(spw_client_t *c)
{
    if (c->rcap - c->rlen < 16384) {
        c->rcap = c->rcap ? c->rcap * 2 : 32768;
        c->rbuf = spw_xrealloc(c->rbuf, c->rcap);
    }
    short want = POLLIN;
    for (;;) {
        /* TLS may hold decrypted bytes already: no wait for those. */
        int w = spw_tls_pending(c) ? 1 : wait_fd(c->fd, want, SILENCE_TIMEOUT_MS);
        if (w == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (w < 0)
            return -1;
        want = POLLIN;
        ssize_t n = c->ssl ? spw_tls_read(c, c->rbuf + c->rlen, c->rcap - c->rlen, &want)
                           : recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n > 0)
            c->rlen += (size_t)n;
        return n;
    }
}

/* Drops the first n bytes of c->rbuf. */
static void consume(spw_client_t *c, size_t n)
{
    memmove(c->rbuf, c->rbuf + n, c->rlen - n);
    c->rlen -= n;
}

/* Reads one response into r.  0; 1 when the connection ended before any
 * byte (a kept-alive connection the server had closed: retry); -1 with
 * errbuf. */
static int read_response(spw_client_t *c, spw_resp_t *r, int head_only)
{
    for (;;) {  /* 1xx answers are skipped */
        char *end;
        while (!(end = c->rlen ? memmem(c->rbuf, c->rlen, "\r\n\r\n", 4) : NULL)) {
            if (c->rlen > HEAD_MAX) {
                snprintf(c->errbuf, sizeof(c->errbuf), "the answer's head is over %d bytes",
                         HEAD_MAX);
                return -1;
            }
            size_t before = c->rlen;
            ssize_t n = fill(c);
            if (n == 0 && before == 0)
                return 1;
            if (n <= 0) {
                snprintf(c->errbuf, sizeof(c->errbuf), "%s",
                         n == 0 ? "the connection closed in the middle of an answer"
                                : strerror(errno));
                return -1;
            }
        }
        size_t head_len = (size_t)(end - c->rbuf) + 4;
        int major = 0, minor = 0, status = 0;
        if (sscanf(c->rbuf, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 ||
            status > 999) {
            snprintf(c->errbuf, sizeof(c->errbuf), "%s", "not an HTTP answer");
            return -1;
        }
        long long clen = -1;
        int chunked = 0, conn_close = major == 1 && minor == 0;
        char val[128];
        r->offset = -1;
        r->job_state[0] = r->content_type[0] = '\0';
        for (const char *l = memchr(c->rbuf, '\n', head_len) + 1; l < c->rbuf + head_len - 2;) {
            const char *nl = memchr(l, '\n', (size_t)(c->rbuf + head_len - l));
            size_t ll = (size_t)(nl - l);
            if (ll && l[ll - 1] == '\r')
                ll--;
            if (header_value(l, ll, "Content-Length", val, sizeof(val))) {
                char *e;
                errno = 0;
                clen = strtoll(val, &e, 10);
                if (*e || e == val || clen < 0 || errno) {
                    snprintf(c->errbuf, sizeof(c->errbuf), "%s", "a bad Content-Length");
                    return -1;
                }
                if ((unsigned long long)clen > BODY_MAX) {
                    snprintf(c->errbuf, sizeof(c->errbuf), "an answer of %lld bytes (at most "
                             "%zu are read)", clen, BODY_MAX);
                    return -1;
                }
            } else if (header_value(l, ll, "Transfer-Encoding", val, sizeof(val))) {
                chunked = strcasestr(val, "chunked") != NULL;
            } else if (header_value(l, ll, "Connection", val, sizeof(val))) {
                if (strcasestr(val, "close"))
                    conn_close = 1;
            } else if (header_value(l, ll, "X-Spillway-Offset", val, sizeof(val))) {
                char *e;
                long long v = strtoll(val, &e, 10);
                r->offset = (*e || e == val || v < 0) ? -1 : v;
            } else if (!header_value(l, ll, "X-Spillway-Job-State", r->job_state,
                                     sizeof(r->job_state))) {
                header_value(l, ll, "Content-Type", r->content_type, sizeof(r->content_type));
            }
            l = nl + 1;
        }
        consume(c, head_len);
        if (status < 200) {
            continue;
        }
        r->status = status;
        if (head_only || status == 204 || status == 304)
            clen = 0;
        if (chunked) {
            for (;;) {
                char *crlf;
                while (!(crlf = c->rlen ? memmem(c->rbuf, c->rlen, "\r\n", 2) : NULL))
                    if (fill(c) <= 0)
                        goto cut;
                char *e;
                errno = 0;
                unsigned long long sz = strtoull(c->rbuf, &e, 16);
                if (e == c->rbuf || errno || sz > BODY_MAX - r->len) {
                    snprintf(c->errbuf, sizeof(c->errbuf), "%s",
                             e == c->rbuf ? "a bad chunk size"
                                          : "a chunked answer over 1 GiB (not read)");
                    return -1;
                }
                consume(c, (size_t)(crlf - c->rbuf) + 2);
                if (sz == 0) {  /* trailers end with an empty line */
                    while (!(crlf = c->rlen ? memmem(c->rbuf, c->rlen, "\r\n", 2) : NULL))
                        if (fill(c) <= 0)
                            goto cut;
                    size_t tl = (size_t)(crlf - c->rbuf);
                    consume(c, tl + 2);
                    if (tl == 0)
                        break;
                    continue;
                }
                while (c->rlen < sz + 2)
                    if (fill(c) <= 0)
                        goto cut;
                body_add(r, c->rbuf, (size_t)sz);
                consume(c, (size_t)sz + 2);
            }
        } else if (clen >= 0) {
            while ((long long)c->rlen < clen)
                if (fill(c) <= 0)
                    goto cut;
            body_add(r, c->rbuf, (size_t)clen);
            consume(c, (size_t)clen);
        } else {  /* to the end of the stream */
            ssize_t n;
            do {
                if (c->rlen > BODY_MAX - r->len) {
                    snprintf(c->errbuf, sizeof(c->errbuf), "%s", "an answer over 1 GiB (not read)");
                    return -1;
                }
                body_add(r, c->rbuf, c->rlen);
                c->rlen = 0;
            } while ((n = fill(c)) > 0);
            if (n < 0)
                goto cut;
            conn_close = 1;
        }
        if (conn_close)
            close_conn(c);
        return 0;
    }
cut:
    snprintf(c->errbuf, sizeof(c->errbuf), "%s", "the connection ended in the middle of an answer");
    return -1;
}

char *spw_client_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = spw_xmalloc(3 * strlen(s) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

void spw_client_open(spw_client_t *c, const spw_cli_common_t *co, const char *cmd)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->cmd = cmd;
    c->url = co->url;
    c->ca_file = co->ca_file;
    c->base = spw_xstrdup(co->url);
    for (size_t n = strlen(c->base); n > 0 && c->base[n - 1] == '/'; n--)
        c->base[n - 1] = '\0';
    char *from_file = co->token_file ? read_token_file(co->token_file, cmd) : NULL;
    const char *token = from_file ? from_file : co->token;
    if (token && *token) {
        /* The token goes only into this header; nothing prints it. */
        size_t n = strlen(token) + 32;
        char *h = spw_xmalloc(n);
        snprintf(h, n, "Authorization: Bearer %s\r\n", token);
        c->auth = h;
        c->have_token = 1;
    }
    if (from_file) {
        explicit_bzero(from_file, strlen(from_file));
        free(from_file);
    }
    if (parse_url(c, co->url) < 0) {
        fprintf(stderr, "spillway: cannot reach the daemon at %s: %s (is `spillway serve` "
                        "running? set --url or SPILLWAY_URL)\n", c->url, c->errbuf);
        exit(SPW_CLI_EUNREACH);
    }
}

void spw_client_close(spw_client_t *c)
{
    if (!c)
        return;
    close_conn(c);
    spw_tls_free(c);
    if (c->auth) {
        explicit_bzero(c->auth, strlen(c->auth));
        free(c->auth);
    }
    free(c->rbuf);
    free(c->prefix);
    free(c->base);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

void spw_resp_free(spw_resp_t *r)
{
    if (!r)
        return;
    free(r->body);
    memset(r, 0, sizeof(*r));
}

char *spw_client_path(spw_client_t *c, const char *prefix, const char *id, const char *suffix)
{
    (void)c;
    char *esc = spw_client_escape(id);
    size_t n = strlen(prefix) + strlen(esc) + strlen(suffix) + 1;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s%s%s", prefix, esc, suffix);
    free(esc);
    return p;
}

/* Prints the daemon's error: its JSON {"error": {"message"}} when it sent
 * one, else the first line of whatever it sent. */
static void print_http_error(spw_client_t *c, const spw_resp_t *r)
{
    const char *msg = NULL;
    json_t *doc = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    json_t *e = doc ? json_object_get(doc, "error") : NULL;
    if (e)
        msg = spw_cli_jstr(e, "message");
    if (msg && c->body_name && strncmp(msg, "request:", 8) == 0) {
        /* The line and column are the submitted file's: name it. */
        fprintf(stderr, "spillway: %s: %ld: %s:%s", c->cmd, r->status, c->body_name, msg + 8);
    } else if (msg) {
        fprintf(stderr, "spillway: %s: %ld: %s", c->cmd, r->status, msg);
    } else if (r->len) {
        size_t n = strcspn(r->body, "\r\n");
        fprintf(stderr, "spillway: %s: %ld: %.*s", c->cmd, r->status, (int)(n > 200 ? 200 : n),
                r->body);
    } else {
        fprintf(stderr, "spillway: %s: %ld: the daemon gave no reason", c->cmd, r->status);
    }
    if (r->status == 401)
        fprintf(stderr, c->have_token ? " (the token given was not accepted)"
                                      : " (set SPILLWAY_TOKEN, or give --token-file FILE)");
    fputc('\n', stderr);
    json_decref(doc);
}

int spw_client_request(spw_client_t *c, const char *method, const char *path,
                       const char *body, size_t body_len, const char *content_type,
                       spw_resp_t *r)
{
    memset(r, 0, sizeof(*r));
    r->offset = -1;
    r->body = spw_xmalloc(1);
    r->body[0] = '\0';
    r->cap = 1;

    char ct[96] = "";
    if (body)
        snprintf(ct, sizeof(ct), "Content-Type: %s\r\n", content_type);
    size_t hn = strlen(method) + strlen(c->prefix) + strlen(path) + strlen(c->hosthdr) +
                (c->auth ? strlen(c->auth) : 0) + strlen(ct) + 200;
    char *head = spw_xmalloc(hn);
    int hl = snprintf(head, hn,
                      "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: spillway-cli\r\nX-Spillway-Client: cli\r\n"
                      "Accept: application/json\r\n%s%sContent-Length: %zu\r\n\r\n",
                      method, c->prefix, path, c->hosthdr, c->auth ? c->auth : "", ct,
                      body ? body_len : 0);
    int rc = -1;
    /* A kept-alive connection the daemon has closed meanwhile fails on
     * first use: one new connection is tried then. */
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = c->fd >= 0;
        c->errbuf[0] = '\0';
        if (!reused && open_conn(c) < 0)
            break;
        if (send_all(c, head, (size_t)hl) < 0 ||
            (body && body_len && send_all(c, body, body_len) < 0)) {
            snprintf(c->errbuf, sizeof(c->errbuf), "%s", strerror(errno));
            close_conn(c);
            if (reused)
                continue;
            break;
        }
        rc = read_response(c, r, strcmp(method, "HEAD") == 0);
        if (rc == 0)
            break;
        close_conn(c);
        if (rc == 1 && reused)
            continue;
        if (rc == 1)
            snprintf(c->errbuf, sizeof(c->errbuf), "%s", "the connection closed with no answer");
        rc = -1;
        break;
    }
    explicit_bzero(head, hn);
    free(head);
    if (rc != 0) {
        /* A partial answer (the daemon died mid-way) is no answer either. */
        if (c->quiet_unreach)
            return SPW_CLI_EUNREACH;
        fprintf(stderr, "spillway: cannot reach the daemon at %s: %s%s\n", c->url,
                c->errbuf[0] ? c->errbuf : "no answer",
                strncmp(c->errbuf, "TLS:", 4) == 0
                    ? ""
                    : " (is `spillway serve` running? set --url or SPILLWAY_URL)");
        return SPW_CLI_EUNREACH;
    }
    if (r->status >= 200 && r->status < 300)
        return SPW_CLI_OK;
    print_http_error(c, r);
    return SPW_CLI_EREMOTE;
}

int spw_client_parse(spw_client_t *c, const spw_resp_t *r, json_t **out)
{
    json_error_t je;
    *out = json_loadb(r->body, r->len, 0, &je);
    if (*out)
        return SPW_CLI_OK;
    fprintf(stderr, "spillway: %s: the daemon's answer is not JSON (line %d: %s)\n", c->cmd,
            je.line, je.text);
    return SPW_CLI_EREMOTE;
}

static int request_json(spw_client_t *c, const char *method, const char *path, json_t **out)
{
    spw_resp_t r;
    *out = NULL;
    int rc = spw_client_request(c, method, path, NULL, 0, NULL, &r);
    if (rc == SPW_CLI_OK)
        rc = spw_client_parse(c, &r, out);
    spw_resp_free(&r);
    return rc;
}

int spw_client_get_json(spw_client_t *c, const char *path, json_t **out)
{
    return request_json(c, "GET", path, out);
}

int spw_client_call(const spw_cli_common_t *co, const char *cmd, const char *method,
                    const char *prefix, const char *id, const char *suffix, json_t **out)
{
    spw_client_t cl;
    spw_client_open(&cl, co, cmd);
    char *path = spw_client_path(&cl, prefix, id, suffix);
    int rc = request_json(&cl, method, path, out);
    free(path);
    spw_client_close(&cl);
    return rc;
}

int spw_cli_flush(const char *cmd)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "spillway: %s: cannot write output\n", cmd);
        return SPW_CLI_EREMOTE;
    }
    return SPW_CLI_OK;
}
