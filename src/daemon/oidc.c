/* oidc.c: OpenID Connect bearer tokens (see oidc.h). */
#include "daemon/oidc.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/netlibs.h"
#include "util/strbuf.h"

/* Largest discovery document or JWKS read, bytes. */
#define FETCH_MAX (1 << 20)
/* Longest JWT looked at, bytes. */
#define JWT_MAX 16384
/* Keys kept from one JWKS. */
#define KEYS_MAX 32
/* Seconds between two JWKS fetches an unknown key id may cause, and before
 * the same unknown id may cause another. */
#define REFETCH_MIN_S 1.0
#define REFETCH_SAME_KID_S 60.0
/* Seconds before the dashboard's (unauthenticated) login info may try a
 * discovery document that failed again. */
#define LOGIN_RETRY_S 5.0

/* One RSA signing key of the provider. */
typedef struct okey {
    char kid[128];              /* its key id, "" when the JWKS gave none */
    EVP_PKEY *pkey;             /* owned */
} okey_t;

struct spw_oidc {
    const spw_oidc_conf_t *conf; /* borrowed */
    pthread_mutex_t mu;         /* guards everything below */
    char *jwks_uri;             /* owned; from the discovery document; NULL
                                   until fetched */
    char *authorize_uri;        /* owned; its authorization_endpoint, NULL
                                   until fetched or when it has none */
    char *token_uri;            /* owned; its token_endpoint, likewise */
    double login_failed_at;     /* when the dashboard's login last failed to
                                   fetch the discovery document, s; 0 never */
    char login_why[256];        /* why, said again until LOGIN_RETRY_S */
    okey_t keys[KEYS_MAX];      /* the JWKS last fetched */
    size_t nkeys;
    double fetched_at;          /* when the JWKS was last fetched, s; 0 never */
    char missed_kid[128];       /* the last key id a successful fetch did
                                   not bring ("" for a token without one) */
    double missed_at;           /* when, s */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;   /* curl_global_init's answer, set once */

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_data(char *p, size_t sz, size_t nm, void *ud)
{
    spw_strbuf_t *b = ud;
    if (b->len + sz * nm > FETCH_MAX)
        return 0;
    spw_strbuf_addn(b, p, sz * nm);
    return sz * nm;
}

/* GETs url as JSON into *out.  0, or -1 with err. */
static int fetch_json(const spw_oidc_t *o, const char *url, json_t **out, spw_error_t *err)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return spw_errorf(err, "cannot fetch %s: %s", url,
                          spw_netlibs_error() ? spw_netlibs_error()
                                              : curl_easy_strerror(curl_init_rc));
    CURL *c = curl_easy_init();
    if (!c)
        return spw_errorf(err, "cannot fetch %s: libcurl cannot make a handle", url);
    spw_strbuf_t b = {0};
    char ebuf[CURL_ERROR_SIZE] = "";
    long ms = (long)(o->conf->timeout_s * 1000);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    CURLcode rc = curl_easy_perform(c);
    long http = 0;
    if (rc == CURLE_OK)  /* the status of an answer; none when nothing answered */
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
    curl_easy_cleanup(c);
    int ret = -1;
    json_error_t je;
    if (rc != CURLE_OK)
        spw_errorf(err, "cannot fetch %s: %s", url, ebuf[0] ? ebuf : curl_easy_strerror(rc));
    else if (http != 200)
        spw_errorf(err, "cannot fetch %s: HTTP %ld", url, http);
    else if (!(*out = json_loadb(b.s ? b.s : "", b.len, 0, &je)))
        spw_errorf(err, "%s is not JSON: %s", url, je.text);
    else
        ret = 0;
    free(b.s);
    return ret;
}

/* Decodes base64url (no padding) of n bytes into a new buffer of *len
 * bytes (NUL-terminated); NULL when s is not base64url. */
static unsigned char *b64url(const char *s, size_t n, size_t *len)
{
    unsigned char *out = spw_xmalloc(n * 3 / 4 + 4);
    size_t o = 0;
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int d = ch >= 'A' && ch <= 'Z'   ? ch - 'A'
                : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26
                : ch >= '0' && ch <= '9' ? ch - '0' + 52
                : ch == '-'              ? 62
                : ch == '_'              ? 63
                                         : -1;
        if (d < 0) {
            free(out);
            return NULL;
        }
        v = (v << 6) | (unsigned)d;
        if ((bits += 6) >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

/* An RSA public key from a JWK's base64url n and e; NULL when malformed. */
static EVP_PKEY *rsa_key(const char *n64, const char *e64)
{
    size_t nl, el;
    unsigned char *n = b64url(n64, strlen(n64), &nl), *e = b64url(e64, strlen(e64), &el);
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn = n ? BN_bin2bn(n, (int)nl, NULL) : NULL, *be = e ? BN_bin2bn(e, (int)el, NULL) : NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (bn && be && bld && ctx && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) &&
        (params = OSSL_PARAM_BLD_to_param(bld)) && EVP_PKEY_fromdata_init(ctx) > 0 &&
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    free(n);
    free(e);
    return pkey;
}

static void keys_clear(spw_oidc_t *o)
{
    for (size_t i = 0; i < o->nkeys; i++)
        EVP_PKEY_free(o->keys[i].pkey);
    o->nkeys = 0;
}

/* Fetches the discovery document once: jwks_uri, and the endpoints the
 * dashboard's login uses; o->mu held.  0, or -1 with err. */
static int discover(spw_oidc_t *o, spw_error_t *err)
{
    if (o->jwks_uri)
        return 0;
    json_t *doc = NULL;
    spw_strbuf_t url = {0};
    const char *iss = o->conf->issuer;
    size_t il = strlen(iss);
    spw_strbuf_printf(&url, "%.*s/.well-known/openid-configuration",
                      (int)(il && iss[il - 1] == '/' ? il - 1 : il), iss);
    int rc = fetch_json(o, url.s, &doc, err);
    free(url.s);
    if (rc < 0)
        return -1;
    const char *ju = json_string_value(json_object_get(doc, "jwks_uri"));
    const char *di = json_string_value(json_object_get(doc, "issuer"));
    if (!ju || !di || strcmp(di, iss) != 0) {
        spw_errorf(err, "the discovery document of %s %s", iss,
                   !ju ? "has no jwks_uri" : "names another issuer (daemon.oidc.issuer must "
                                             "match its 'issuer' exactly)");
        json_decref(doc);
        return -1;
    }
    const char *au = json_string_value(json_object_get(doc, "authorization_endpoint"));
    const char *tu = json_string_value(json_object_get(doc, "token_endpoint"));
    o->jwks_uri = spw_xstrdup(ju);
    o->authorize_uri = au ? spw_xstrdup(au) : NULL;
    o->token_uri = tu ? spw_xstrdup(tu) : NULL;
    json_decref(doc);
    return 0;
}

/* Fetches the discovery document (once) and the JWKS; o->mu held.  0, or
 * -1 with err (the old keys stay). */
static int refresh(spw_oidc_t *o, double now, spw_error_t *err)
{
    json_t *doc = NULL;
    if (discover(o, err) < 0)
        return -1;
    o->fetched_at = now;
    if (fetch_json(o, o->jwks_uri, &doc, err) < 0)
        return -1;
    json_t *keys = json_object_get(doc, "keys"), *k;
    size_t i;
    if (!json_is_array(keys)) {
        json_decref(doc);
        return spw_errorf(err, "the JWKS at %s has no 'keys' list", o->jwks_uri);
    }
    keys_clear(o);
    json_array_foreach(keys, i, k) {
        const char *kty = json_string_value(json_object_get(k, "kty"));
        const char *use = json_string_value(json_object_get(k, "use"));
        const char *n = json_string_value(json_object_get(k, "n"));
        const char *e = json_string_value(json_object_get(k, "e"));
        const char *kid = json_string_value(json_object_get(k, "kid"));
        if (o->nkeys == KEYS_MAX || !kty || strcmp(kty, "RSA") != 0 || !n || !e ||
            (use && strcmp(use, "sig") != 0))
            continue;
        EVP_PKEY *pk = rsa_key(n, e);
        if (!pk)
            continue;
        snprintf(o->keys[o->nkeys].kid, sizeof(o->keys[0].kid), "%s", kid ? kid : "");
        o->keys[o->nkeys++].pkey = pk;
    }
    json_decref(doc);
    return 0;
}

/* The key for kid (NULL = the only key), fetching the JWKS when it is not
 * known and the limits allow; o->mu held.  A kid that a successful fetch
 * did not bring is remembered, so that the same forged kid cannot make every
 * request fetch; a failed fetch is tried again a second later.  A new
 * reference, or NULL with err. */
static EVP_PKEY *key_for(spw_oidc_t *o, const char *kid, double now, spw_error_t *err)
{
    for (int pass = 0;; pass++) {
        for (size_t i = 0; i < o->nkeys; i++)
            if (kid ? strcmp(o->keys[i].kid, kid) == 0 : o->nkeys == 1) {
                EVP_PKEY_up_ref(o->keys[i].pkey);
                return o->keys[i].pkey;
            }
        if (pass == 1) {
            snprintf(o->missed_kid, sizeof(o->missed_kid), "%s", kid ? kid : "");
            o->missed_at = now;
            break;
        }
        int same = strcmp(kid ? kid : "", o->missed_kid) == 0 &&
                   now - o->missed_at < REFETCH_SAME_KID_S;
        if (o->fetched_at > 0 && (same || now - o->fetched_at < REFETCH_MIN_S))
            break;
        if (refresh(o, now, err) < 0)
            return NULL;
    }
    spw_errorf(err, "the token is signed with key '%.60s', which the provider's JWKS (%s) does "
                    "not have", kid ? kid : "(no kid)", o->jwks_uri ? o->jwks_uri : "?");
    return NULL;
}

spw_oidc_t *spw_oidc_new(const spw_oidc_conf_t *conf)
{
    spw_oidc_t *o = spw_xmalloc(sizeof(*o));
    *o = (spw_oidc_t){.conf = conf, .mu = PTHREAD_MUTEX_INITIALIZER};
    return o;
}

void spw_oidc_free(spw_oidc_t *o)
{
    if (!o)
        return;
    keys_clear(o);
    free(o->jwks_uri);
    free(o->authorize_uri);
    free(o->token_uri);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

json_t *spw_oidc_login(spw_oidc_t *o, double now, spw_error_t *err)
{
    const spw_oidc_conf_t *c = o->conf;
    if (!c->client_id)
        return json_pack("{s:b}", "login", 0);
    pthread_mutex_lock(&o->mu);
    json_t *out = NULL;
    if (!o->jwks_uri && o->login_failed_at > 0 && now - o->login_failed_at < LOGIN_RETRY_S) {
        spw_errorf(err, "%s", o->login_why);  /* anyone may ask: no fetch per request */
        pthread_mutex_unlock(&o->mu);
        return NULL;
    }
    if (discover(o, err) < 0) {
        o->login_failed_at = now;
        snprintf(o->login_why, sizeof(o->login_why), "%s", err->text);
    } else if (!o->authorize_uri || !o->token_uri)
        spw_errorf(err, "the discovery document of %s names no %s: the provider does not offer "
                        "the authorization code flow the dashboard's login needs", c->issuer,
                   o->authorize_uri ? "token_endpoint" : "authorization_endpoint");
    else
        out = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:o}", "login", 1, "issuer", c->issuer,
                        "client_id", c->client_id, "scopes", c->scopes, "authorization_endpoint",
                        o->authorize_uri, "token_endpoint", o->token_uri, "redirect_uri",
                        c->redirect_uri ? json_string(c->redirect_uri) : json_null());
    pthread_mutex_unlock(&o->mu);
    return out;
}

int spw_oidc_looks_like_jwt(const char *tok)
{
    size_t n = strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.");
    const char *d1 = strchr(tok, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    return tok[n] == '\0' && d1 && d2 && !strchr(d2 + 1, '.') && d1 > tok;
}

/* Checks the signature of "HEADER.PAYLOAD" (n bytes) with alg and kid. */
static int check_sig(spw_oidc_t *o, const char *alg, const char *kid, const char *signed_part,
                     size_t n, const char *sig64, double now, spw_error_t *err)
{
    const EVP_MD *md = strcmp(alg, "RS256") == 0   ? EVP_sha256()
                       : strcmp(alg, "RS384") == 0 ? EVP_sha384()
                       : strcmp(alg, "RS512") == 0 ? EVP_sha512()
                                                   : NULL;
    if (!md)
        return spw_errorf(err, "the token's algorithm '%.20s' is not accepted (RS256, RS384 or "
                               "RS512 only; 'none' never)", alg);
    pthread_mutex_lock(&o->mu);
    EVP_PKEY *pk = key_for(o, kid, now, err);
    pthread_mutex_unlock(&o->mu);
    if (!pk)
        return -1;
    size_t sl;
    unsigned char *sig = b64url(sig64, strlen(sig64), &sl);
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    int ok = sig && mc && EVP_DigestVerifyInit(mc, NULL, md, NULL, pk) == 1 &&
             EVP_DigestVerify(mc, sig, sl, (const unsigned char *)signed_part, n) == 1;
    EVP_MD_CTX_free(mc);
    EVP_PKEY_free(pk);
    free(sig);
    return ok ? 0 : spw_errorf(err, "%s", "the token's signature does not verify with the "
                                          "provider's key: it was altered or not signed by it");
}

/* Checks iss, aud, exp, nbf and iat of claims. */
static int check_claims(const spw_oidc_conf_t *c, json_t *cl, double now, spw_error_t *err)
{
    const char *iss = json_string_value(json_object_get(cl, "iss"));
    if (!iss || strcmp(iss, c->issuer) != 0)
        return spw_errorf(err, "the token was issued by '%.80s', not by daemon.oidc.issuer '%s'",
                          iss ? iss : "(no iss)", c->issuer);
    json_t *aud = json_object_get(cl, "aud"), *a;
    int found = json_is_string(aud) && strcmp(json_string_value(aud), c->audience) == 0;
    size_t i;
    if (json_is_array(aud))
        json_array_foreach(aud, i, a) found |= json_is_string(a) &&
                                               strcmp(json_string_value(a), c->audience) == 0;
    if (!found)
        return spw_errorf(err, "the token is for another audience: its aud does not hold "
                               "daemon.oidc.audience '%s'", c->audience);
    json_t *exp = json_object_get(cl, "exp"), *nbf = json_object_get(cl, "nbf"),
           *iat = json_object_get(cl, "iat");
    if (!json_is_number(exp))
        return spw_errorf(err, "%s", "the token has no exp (expiry) claim");
    if (json_number_value(exp) + c->leeway_s <= now)
        return spw_errorf(err, "the token expired %.0f s ago: get a new one from the provider",
                          now - json_number_value(exp));
    if (json_is_number(nbf) && json_number_value(nbf) - c->leeway_s > now)
        return spw_errorf(err, "%s", "the token is not valid yet (nbf in the future: is this "
                                     "machine's clock right?)");
    if (json_is_number(iat) && json_number_value(iat) - c->leeway_s > now)
        return spw_errorf(err, "%s", "the token was issued in the future (iat): is this "
                                     "machine's clock right?");
    return 0;
}

/* Maps the groups claim to who->team and who->role. */
static int map_groups(const spw_oidc_conf_t *c, json_t *cl, spw_oidc_who_t *who,
                      spw_error_t *err)
{
    json_t *g = json_object_get(cl, c->groups_claim), *x;
    size_t i;
    who->team = NULL;
    who->role = SPW_OIDC_NONE;
    for (size_t t = 0; t < c->nteams && !who->team; t++) {
        int has = json_is_string(g) && strcmp(json_string_value(g), c->teams[t].group) == 0;
        json_array_foreach(g, i, x) has |= json_is_string(x) &&
                                           strcmp(json_string_value(x), c->teams[t].group) == 0;
        if (has)
            who->team = c->teams[t].value;
    }
    for (size_t r = 0; r < c->nroles; r++) {
        int has = json_is_string(g) && strcmp(json_string_value(g), c->roles[r].group) == 0;
        json_array_foreach(g, i, x) has |= json_is_string(x) &&
                                           strcmp(json_string_value(x), c->roles[r].group) == 0;
        const char *v = c->roles[r].value;
        int role = strcmp(v, "admin") == 0    ? SPW_OIDC_ADMIN
                   : strcmp(v, "member") == 0 ? SPW_OIDC_MEMBER
                                              : SPW_OIDC_VIEWER;
        if (has && role > who->role)
            who->role = role;
    }
    if (who->role == SPW_OIDC_NONE && who->team)
        who->role = SPW_OIDC_MEMBER;
    if (who->role == SPW_OIDC_NONE)
        return spw_errorf(err, "%s is valid but none of its '%s' is in daemon.oidc.teams or "
                               "roles: ask an administrator to map one of your groups",
                          who->user, c->groups_claim);
    if (who->role == SPW_OIDC_MEMBER && !who->team)
        return spw_errorf(err, "%s has role member but none of its '%s' maps to a team in "
                               "daemon.oidc.teams", who->user, c->groups_claim);
    return 0;
}

int spw_oidc_verify(spw_oidc_t *o, const char *tok, double now, spw_oidc_who_t *who,
                    spw_error_t *err)
{
    size_t n = strlen(tok);
    if (n > JWT_MAX || !spw_oidc_looks_like_jwt(tok))
        return spw_errorf(err, "%s", "the token is not a JWT (HEADER.PAYLOAD.SIGNATURE)");
    const char *d1 = strchr(tok, '.'), *d2 = strchr(d1 + 1, '.');
    size_t hl, pl;
    unsigned char *h = b64url(tok, (size_t)(d1 - tok), &hl);
    unsigned char *p = b64url(d1 + 1, (size_t)(d2 - d1 - 1), &pl);
    json_t *hdr = h ? json_loadb((char *)h, hl, 0, NULL) : NULL;
    json_t *cl = p ? json_loadb((char *)p, pl, 0, NULL) : NULL;
    free(h);
    free(p);
    int rc = -1;
    const char *alg = json_string_value(json_object_get(hdr, "alg"));
    const char *kid = json_string_value(json_object_get(hdr, "kid"));
    if (!json_is_object(hdr) || !json_is_object(cl) || !alg)
        spw_errorf(err, "%s", "the token's header or claims are not JSON objects");
    else if (check_sig(o, alg, kid, tok, (size_t)(d2 - tok), d2 + 1, now, err) == 0 &&
             check_claims(o->conf, cl, now, err) == 0) {
        const char *names[] = {o->conf->user_claim, "preferred_username", "email", "sub",
                               "client_id"};
        const char *u = NULL;
        for (size_t i = 0; i < 5 && !u; i++)
            u = names[i] ? json_string_value(json_object_get(cl, names[i])) : NULL;
        snprintf(who->user, sizeof(who->user), "oidc:%s", u ? u : "?");
        for (char *q = who->user; *q; q++)  /* the audit log and terminals show it */
            if ((unsigned char)*q < 0x20 || *q == 0x7f)
                *q = '?';
        rc = map_groups(o->conf, cl, who, err);
    }
    json_decref(hdr);
    json_decref(cl);
    return rc;
}
