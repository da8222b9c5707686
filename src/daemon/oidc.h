/* oidc.h: bearer tokens that are JWTs signed by an OpenID Connect provider
 * (daemon.oidc, docs/identity.md).  The provider's signing keys come from
 * its discovery document's jwks_uri, fetched over libcurl on the first
 * token and again when a token names a key id not in the cache (at most
 * once a second, and once per unknown id a minute).  Verification is
 * OpenSSL's.  Safe to call from several threads; a fetch holds only this
 * module's own lock, never the daemon's. */
#ifndef SPW_DAEMON_OIDC_H
#define SPW_DAEMON_OIDC_H

#include <jansson.h>

#include "config/config.h"
#include "util/error.h"

typedef struct spw_oidc spw_oidc_t;

/* Roles, lowest first. */
#define SPW_OIDC_NONE 0
#define SPW_OIDC_VIEWER 1
#define SPW_OIDC_MEMBER 2
#define SPW_OIDC_ADMIN 3

/* Longest user name kept for the audit log, with its "oidc:" prefix. */
#define SPW_OIDC_USER_MAX 160

/* Who a verified token names. */
typedef struct spw_oidc_who {
    char user[SPW_OIDC_USER_MAX]; /* "oidc:NAME": the user_claim, else
                                     preferred_username, email or sub */
    const char *team;             /* borrowed from the conf; NULL = none */
    int role;                     /* SPW_OIDC_VIEWER, _MEMBER or _ADMIN */
} spw_oidc_who_t;

/* A verifier for conf (borrowed: it must outlive the verifier). */
spw_oidc_t *spw_oidc_new(const spw_oidc_conf_t *conf);
void spw_oidc_free(spw_oidc_t *o);
/* What the dashboard needs to log in with authorization code + PKCE
 * (daemon.oidc.client_id): {"login": true, "issuer", "client_id", "scopes",
 * "authorization_endpoint", "token_endpoint" (from the discovery document,
 * fetched once), "redirect_uri" (null: the page's own /ui/)}, or
 * {"login": false} without a client_id.  Nothing in it is secret.  A new
 * object, or NULL with err when the discovery document cannot be had (a
 * failed fetch is tried again LOGIN_RETRY_S later at the earliest, now
 * being seconds since the epoch). */
json_t *spw_oidc_login(spw_oidc_t *o, double now, spw_error_t *err);
/* Whether tok has the shape of a JWT (three base64url parts). */
int spw_oidc_looks_like_jwt(const char *tok);
/* Verifies tok at time now (seconds since the epoch): signature (RS256,
 * RS384 or RS512) against the provider's keys, iss, aud, exp, nbf and iat
 * (with conf's leeway), then maps the groups claim to a team and role.
 * 0 with *who, or -1 with a sentence in err (never the token itself). */
int spw_oidc_verify(spw_oidc_t *o, const char *tok, double now, spw_oidc_who_t *who,
                    spw_error_t *err);

#endif
