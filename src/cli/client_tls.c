/* client_tls.c: the client's https:// (OpenSSL over the connection's
 * non-blocking socket).  Nothing here runs for http:// URLs, so a plain
 * `spillway submit` pays no TLS set-up. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "cli/client_private.h"

/* The handshake may take this long in all (ms). */
#define TLS_HANDSHAKE_MS 10000

/* Maps OpenSSL's answer r to errno (EAGAIN with *want set, or EPIPE/EIO)
 * and returns -1; 0 for a clean or abrupt end of the stream. */
static ssize_t tls_result(SSL *ssl, int r, short *want)
{
    int e = SSL_get_error(ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        *want = POLLIN;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want = POLLOUT;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (errno == 0) {
            ERR_clear_error();
            return 0;
        }
        return -1;
    default:
        ERR_clear_error();
        errno = EIO;
        return -1;
    }
}

ssize_t spw_tls_read(spw_client_t *c, char *buf, size_t n, short *want)
{
    errno = 0;
    int r = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    return r > 0 ? r : tls_result(c->ssl, r, want);
}

ssize_t spw_tls_write(spw_client_t *c, const char *buf, size_t n, short *want)
{
    errno = 0;
    int r = SSL_write(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (r > 0)
        return r;
    ssize_t v = tls_result(c->ssl, r, want);
    if (v == 0) {  /* the peer ended the stream under a write */
        errno = EPIPE;
        return -1;
    }
    return v;
}

int spw_tls_pending(const spw_client_t *c)
{
    return c->ssl && SSL_pending(c->ssl) > 0;
}

/* The context, made once per process: TLS 1.2 or later, the peer verified
 * against c->ca_file or the system's store.  0, or -1 with errbuf. */
static int tls_context(spw_client_t *c)
{
    if (c->ssl_ctx)
        return 0;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(c->errbuf, sizeof(c->errbuf), "%s", "TLS: cannot set up OpenSSL");
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* A daemon that closes without close_notify ends the stream, not an error. */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    int ok = c->ca_file ? SSL_CTX_load_verify_locations(ctx, c->ca_file, NULL)
                        : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        snprintf(c->errbuf, sizeof(c->errbuf), "TLS: cannot read the CA certificates in %.150s "
                 "(--ca or SPILLWAY_CA: a PEM file)", c->ca_file ? c->ca_file : "the system store");
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return -1;
    }
    c->ssl_ctx = ctx;
    return 0;
}

int spw_tls_start(spw_client_t *c)
{
    if (tls_context(c) < 0)
        return -1;
    SSL *ssl = SSL_new(c->ssl_ctx);
    if (!ssl) {
        snprintf(c->errbuf, sizeof(c->errbuf), "%s", "TLS: cannot set up a connection");
        return -1;
    }
    /* The certificate must name what the URL names: an address as an IP
     * entry, a name as a DNS entry (and sent as SNI). */
    unsigned char ip[16];
    if (inet_pton(AF_INET, c->host, ip) == 1 || inet_pton(AF_INET6, c->host, ip) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), c->host);
    } else {
        SSL_set_tlsext_host_name(ssl, c->host);
        SSL_set1_host(ssl, c->host);
    }
    SSL_set_fd(ssl, c->fd);
    for (;;) {
        int r = SSL_connect(ssl);
        if (r == 1)
            break;
        short want = POLLIN;
        errno = 0;
        if (tls_result(ssl, r, &want) < 0 && errno == EAGAIN) {
            struct pollfd pfd = {.fd = c->fd, .events = want};
            int n = poll(&pfd, 1, TLS_HANDSHAKE_MS);
            if (n > 0 || (n < 0 && errno == EINTR))
                continue;
            snprintf(c->errbuf, sizeof(c->errbuf), "%s", "TLS: the handshake timed out");
            SSL_free(ssl);
            return -1;
        }
        long v = SSL_get_verify_result(ssl);
        if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
            snprintf(c->errbuf, sizeof(c->errbuf),
                     "TLS: the daemon's certificate is not trusted: it does not name %.100s (use "
                     "the name or address it was issued for in the URL)", c->host);
        else if (v != X509_V_OK)
            snprintf(c->errbuf, sizeof(c->errbuf),
                     "TLS: the daemon's certificate is not trusted: %.100s (give its CA with "
                     "--ca FILE or SPILLWAY_CA)", X509_verify_cert_error_string(v));
        else
            snprintf(c->errbuf, sizeof(c->errbuf), "TLS: the handshake failed (%.120s; is it "
                     "an https:// daemon?)", ERR_reason_error_string(ERR_peek_last_error())
                                                ? ERR_reason_error_string(ERR_peek_last_error())
                                                : "no reason given");
        ERR_clear_error();
        SSL_free(ssl);
        return -1;
    }
    c->ssl = ssl;
    return 0;
}

void spw_tls_end(spw_client_t *c)
{
    if (!c->ssl)
        return;
    SSL_free(c->ssl);  /* no close_notify: the socket closes next */
    c->ssl = NULL;
}

void spw_tls_free(spw_client_t *c)
{
    spw_tls_end(c);
    if (c->ssl_ctx)
        SSL_CTX_free(c->ssl_ctx);
    c->ssl_ctx = NULL;
}
