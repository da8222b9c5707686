/* sigv4.c: AWS Signature Version 4 (see sigv4.h): the canonical request,
 * the string to sign and the signature, with OpenSSL's EVP SHA-256 and
 * HMAC. */
#include "providers/aws/sigv4.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

void spw_aws_uri_encode(spw_strbuf_t *b, const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
            (keep_slash && c == '/')) {
            spw_strbuf_addn(b, (const char *)&c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            spw_strbuf_addn(b, e, 3);
        }
    }
}

static void to_hex(const unsigned char *p, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[p[i] >> 4];
        hex[2 * i + 1] = digits[p[i] & 15];
    }
    hex[2 * n] = '\0';
}

void spw_aws_sha256_hex(const void *p, size_t n, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
    to_hex(md, len, hex);
}

/* out = HMAC-SHA256(key, data); 32 bytes. */
static void hmac(const unsigned char *key, size_t keylen, const char *data, size_t n,
                 unsigned char out[32])
{
    unsigned int len = 32;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)data, n, out, &len);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Appends the n bytes of s, percent-decoded, then encoded again the SigV4
 * way, so that "%E1%88%B4" and the raw UTF-8 both sign the same. */
static void reencode(spw_strbuf_t *b, const char *s, size_t n)
{
    spw_strbuf_t raw = {0};
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            char c = (char)(hi * 16 + lo);
            spw_strbuf_addn(&raw, &c, 1);
            i += 2;
        } else {
            spw_strbuf_addn(&raw, s + i, 1);
        }
    }
    spw_aws_uri_encode(b, raw.s ? raw.s : "", raw.len, 0);
    free(raw.s);
}

/* The canonical URI: dot segments and empty segments removed, each byte
 * outside the unreserved set encoded; a trailing '/' kept. */
static void canonical_path(spw_strbuf_t *b, const char *path)
{
    if (!path || !*path)
        path = "/";
    size_t n = strlen(path);
    /* Start offsets and lengths of the kept segments. */
    size_t *off = spw_xcalloc(n + 1, sizeof(*off)), *len = spw_xcalloc(n + 1, sizeof(*len));
    size_t nseg = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && path[i] == '/')
            i++;
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        if (j - i == 1 && path[i] == '.') {
            /* "." stays where it is */
        } else if (j - i == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (nseg)
                nseg--;
        } else if (j > i) {
            off[nseg] = i;
            len[nseg++] = j - i;
        }
        i = j;
    }
    for (size_t k = 0; k < nseg; k++) {
        spw_strbuf_add(b, "/");
        spw_aws_uri_encode(b, path + off[k], len[k], 0);
    }
    if (!nseg || path[n - 1] == '/')
        spw_strbuf_add(b, "/");
    free(off);
    free(len);
}

/* One query parameter, encoded. */
typedef struct qparam {
    char *key;                  /* owned, encoded */
    char *value;                /* owned, encoded */
} qparam_t;

static int qparam_cmp(const void *a, const void *b)
{
    const qparam_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->value, y->value);
}

static char *strbuf_take(spw_strbuf_t *b)
{
    return b->s ? b->s : spw_xstrdup("");
}

/* The canonical query string: parameters decoded, encoded again, sorted by
 * key then value. */
static void canonical_query(spw_strbuf_t *b, const char *q)
{
    if (!q || !*q)
        return;
    size_t n = strlen(q), np = 0;
    qparam_t *p = spw_xcalloc(n + 1, sizeof(*p));
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && q[j] != '&')
            j++;
        if (j > i) {
            const char *eq = memchr(q + i, '=', j - i);
            size_t klen = eq ? (size_t)(eq - (q + i)) : j - i;
            spw_strbuf_t k = {0}, v = {0};
            reencode(&k, q + i, klen);
            if (eq)
                reencode(&v, eq + 1, (size_t)(q + j - eq - 1));
            p[np].key = strbuf_take(&k);
            p[np++].value = strbuf_take(&v);
        }
        i = j + 1;
    }
    qsort(p, np, sizeof(*p), qparam_cmp);
    for (size_t k = 0; k < np; k++) {
        spw_strbuf_printf(b, "%s%s=%s", k ? "&" : "", p[k].key, p[k].value);
        free(p[k].key);
        free(p[k].value);
    }
    free(p);
}

/* One header as signed. */
typedef struct cheader {
    char *name;                 /* owned, lower case */
    char *value;                /* owned, trimmed, blanks folded */
    size_t order;               /* position given, so that repeated names keep
                                   their values' order */
} cheader_t;

static int cheader_cmp(const void *a, const void *b)
{
    const cheader_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

static void cheader_set(cheader_t *h, const char *name, const char *value, size_t order)
{
    spw_strbuf_t nb = {0}, vb = {0};
    for (const char *s = name; *s; s++) {
        char c = (char)tolower((unsigned char)*s);
        spw_strbuf_addn(&nb, &c, 1);
    }
    /* Trimmed, and every run of blanks (line folds included) one space. */
    int blank = 0;
    for (const char *s = value; *s; s++) {
        if (isspace((unsigned char)*s)) {
            blank = 1;
            continue;
        }
        if (blank && vb.len)
            spw_strbuf_add(&vb, " ");
        blank = 0;
        spw_strbuf_addn(&vb, s, 1);
    }
    h->name = strbuf_take(&nb);
    h->value = strbuf_take(&vb);
    h->order = order;
}

/* Appends the canonical headers (each "name:value\n") to b and the signed
 * header list ("a;b;c") to names. */
static void canonical_headers(spw_strbuf_t *b, spw_strbuf_t *names, const spw_sigv4_req_t *r,
                              const char *amz_date, const char *token)
{
    size_t n = r->nheaders + 3, nh = 0;
    cheader_t *h = spw_xcalloc(n, sizeof(*h));
    cheader_set(&h[nh], "host", r->host, nh);
    nh++;
    cheader_set(&h[nh], "x-amz-date", amz_date, nh);
    nh++;
    if (token) {
        cheader_set(&h[nh], "x-amz-security-token", token, nh);
        nh++;
    }
    for (size_t i = 0; i < r->nheaders; i++, nh++)
        cheader_set(&h[nh], r->headers[i].name, r->headers[i].value, nh);
    qsort(h, nh, sizeof(*h), cheader_cmp);
    for (size_t i = 0; i < nh; i++) {
        int same = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
        if (same) {
            spw_strbuf_printf(b, ",%s", h[i].value);
        } else {
            spw_strbuf_printf(b, "%s%s:%s", i ? "\n" : "", h[i].name, h[i].value);
            spw_strbuf_printf(names, "%s%s", i ? ";" : "", h[i].name);
        }
    }
    spw_strbuf_add(b, "\n");
    for (size_t i = 0; i < nh; i++) {
        free(h[i].name);
        free(h[i].value);
    }
    free(h);
}

void spw_sigv4_clear(spw_sigv4_t *out)
{
    if (!out)
        return;
    free(out->canonical_request);
    free(out->string_to_sign);
    memset(out, 0, sizeof(*out));
}

int spw_sigv4_sign(const spw_sigv4_req_t *r, const spw_aws_creds_t *creds, time_t when,
                   spw_sigv4_t *out, spw_error_t *err)
{
    memset(out, 0, sizeof(*out));
    if (!creds || !creds->access_key_id[0] || !creds->secret_access_key[0])
        return spw_errorf(err, "no AWS credentials to sign with (set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY, a profile, or run on EC2 with a role)");
    if (!r->method || !r->host || !r->region || !r->service)
        return spw_errorf(err, "SigV4: a request needs a method, host, region and service");
    struct tm tm;
    if (!gmtime_r(&when, &tm))
        return spw_errorf(err, "SigV4: the time %lld cannot be written as a date",
                          (long long)when);
    char date[9];
    strftime(out->amz_date, sizeof(out->amz_date), "%Y%m%dT%H%M%SZ", &tm);
    memcpy(date, out->amz_date, 8);
    date[8] = '\0';

    /* Task 1: the canonical request. */
    const char *token = creds->session_token[0] && !r->token_unsigned ? creds->session_token
                                                                        : NULL;
    spw_strbuf_t creq = {0}, names = {0};
    char payload_hash[65];
    spw_aws_sha256_hex(r->payload ? r->payload : "", r->payload ? r->payload_len : 0,
                       payload_hash);
    spw_strbuf_printf(&creq, "%s\n", r->method);
    canonical_path(&creq, r->path);
    spw_strbuf_add(&creq, "\n");
    canonical_query(&creq, r->query);
    spw_strbuf_add(&creq, "\n");
    canonical_headers(&creq, &names, r, out->amz_date, token);
    spw_strbuf_printf(&creq, "\n%s\n%s", names.s, payload_hash);

    /* Task 2: the string to sign. */
    char creq_hash[65];
    spw_strbuf_t sts = {0};
    spw_aws_sha256_hex(creq.s, creq.len, creq_hash);
    spw_strbuf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", out->amz_date,
                      date, r->region, r->service, creq_hash);

    /* Task 3: the signing key, then the signature. */
    unsigned char k[32], k2[32];
    spw_strbuf_t secret = {0};
    spw_strbuf_printf(&secret, "AWS4%s", creds->secret_access_key);
    hmac((const unsigned char *)secret.s, secret.len, date, strlen(date), k);
    OPENSSL_cleanse(secret.s, secret.len);
    free(secret.s);
    hmac(k, 32, r->region, strlen(r->region), k2);
    hmac(k2, 32, r->service, strlen(r->service), k);
    hmac(k, 32, "aws4_request", 12, k2);
    unsigned char sig[32];
    char sig_hex[65];
    hmac(k2, 32, sts.s, sts.len, sig);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(k2, sizeof(k2));
    to_hex(sig, 32, sig_hex);

    int w = snprintf(out->authorization, sizeof(out->authorization),
                     "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                     "Signature=%s",
                     creds->access_key_id, date, r->region, r->service, names.s, sig_hex);
    free(names.s);
    if (w < 0 || (size_t)w >= sizeof(out->authorization)) {
        free(creq.s);
        free(sts.s);
        memset(out, 0, sizeof(*out));
        return spw_errorf(err, "SigV4: the Authorization header would exceed %zu bytes "
                               "(too many signed headers)",
                          sizeof(out->authorization));
    }
    out->canonical_request = creq.s;
    out->string_to_sign = sts.s;
    return 0;
}
