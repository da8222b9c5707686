/* guard.c: who may call the API: the token table (swapped whole on a
 * SIGHUP reload, old generations kept so borrowed names never dangle),
 * callers resolved from tokens, and the audit log of what they did. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/audit.h"
#include "daemon/daemon_private.h"
#include "daemon/oidc.h"

/* ---- auth --------------------------------------------------------------- */

/* Compares without an early exit, so timing does not reveal a prefix. */
static int same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < lb; i++)
        diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
    return diff == 0;
}

/* The current token table (NULL until guard_init). */
static dtokens_t *tokens_now(spw_daemon_t *d)
{
    return __atomic_load_n(&d->tokens, __ATOMIC_ACQUIRE);
}

static dtokens_t *tokens_copy(const spw_token_t *v, size_t n)
{
    dtokens_t *t = spw_xcalloc(1, sizeof(*t));
    t->v = spw_xcalloc(n ? n : 1, sizeof(*t->v));
    t->n = n;
    for (size_t i = 0; i < n; i++) {
        t->v[i].name = spw_xstrdup(v[i].name ? v[i].name : "token");
        t->v[i].token = spw_xstrdup(v[i].token);
        t->v[i].team = v[i].team ? spw_xstrdup(v[i].team) : NULL;
        t->v[i].admin = v[i].admin;
        t->v[i].metrics = v[i].metrics;
        t->v[i].viewer = v[i].viewer;
        t->v[i].revoked = v[i].revoked;
    }
    return t;
}

/* spw_daemon_auth for a JWT: out from its verified claims, or -1 with
 * out->why (and out->user when the token was valid but maps to nothing). */
static int oidc_auth(spw_daemon_t *d, const char *token, spw_caller_t *out)
{
    spw_oidc_who_t w;
    spw_error_t err;
    w.user[0] = '\0';
    int rc = spw_oidc_verify(d->oidc, token, spw_daemon_clock(), &w, &err);
    if (rc < 0) {
        snprintf(out->why, sizeof(out->why), "%s", err.text);
        snprintf(out->user, sizeof(out->user), "%s", w.user);
        return -1;
    }
    snprintf(out->user, sizeof(out->user), "%s", w.user);
    out->token_name = out->user;
    out->team = w.team;
    out->admin = w.role == SPW_OIDC_ADMIN || (w.role == SPW_OIDC_VIEWER && !w.team);
    out->viewer = w.role == SPW_OIDC_VIEWER;
    out->metrics = 0;
    return 0;
}

int spw_daemon_auth(spw_daemon_t *d, const char *token, spw_caller_t *out)
{
    out->token_name = NULL;
    out->user[0] = out->why[0] = '\0';
    if (!d->auth_required) {
        out->team = NULL;
        out->admin = 1;
        return 0;
    }
    const dtokens_t *t = tokens_now(d);
    int found = -1;
    for (size_t i = 0; t && i < t->n; i++)
        if (token && same_secret(token, t->v[i].token) && found < 0)
            found = (int)i;
    /* A static token that happens to look like a JWT stays a static token. */
    if (found < 0 && d->oidc && token && spw_oidc_looks_like_jwt(token))
        return oidc_auth(d, token, out);
    if (found < 0)
        return -1;
    out->token_name = t->v[found].name;
    out->team = t->v[found].team;
    out->viewer = t->v[found].viewer;
    /* A viewer without a team reads what an admin reads; router.c lets it
     * do nothing else. */
    out->admin = t->v[found].admin || (out->viewer && !out->team);
    out->metrics = t->v[found].metrics;
    return t->v[found].revoked ? -1 : 0;
}

int spw_daemon_auth_required(const spw_daemon_t *d)
{
    return d->auth_required;
}

size_t spw_daemon_reload_tokens(spw_daemon_t *d, const spw_daemon_conf_t *dc,
                                size_t *kept_revoked)
{
    dtokens_t *t = tokens_copy(dc->tokens, dc->ntokens);
    size_t kept = 0;
    LOCK(d);  /* one writer at a time; readers do not take it */
    for (size_t i = 0; i < t->n; i++)
        for (size_t k = 0; !t->v[i].revoked && d->tokens && k < d->tokens->n; k++)
            if (d->tokens->v[k].revoked && same_secret(t->v[i].token, d->tokens->v[k].token)) {
                t->v[i].revoked = 1;
                kept++;
            }
    t->older = d->tokens;
    __atomic_store_n(&d->tokens, t, __ATOMIC_RELEASE);
    UNLOCK(d);
    size_t live = 0;
    for (size_t i = 0; i < t->n; i++)
        live += !t->v[i].revoked;
    char what[96];
    snprintf(what, sizeof(what), "%zu live, %zu revoked (%zu kept revoked)", live, t->n - live,
             kept);
    if (kept_revoked)
        *kept_revoked = kept;
    spw_daemon_audit(d, NULL, "tokens.reload", what, 200);
    return live;
}

void spw_daemon_audit(spw_daemon_t *d, const spw_caller_t *who, const char *action,
                      const char *target, int status)
{
    spw_audit_add(d->audit, spw_daemon_clock(), who ? who->token_name : "daemon",
                  who ? who->team : NULL, action, target, status);
}

int spw_daemon_audit_list(spw_daemon_t *d, const spw_caller_t *who, double since_ts,
                          const char *team, long limit, json_t **out, spw_error_t *err)
{
    if (!who->admin) {
        spw_errorf(err, "the audit log needs an admin token");
        return 403;
    }
    LOCK(d);
    spw_error_t e2;
    if (spw_audit_flush(d->audit, &e2) < 0) {
        UNLOCK(d);
        *err = e2;
        return 503;
    }
    int rc = spw_audit_query(d->audit, since_ts, team, limit, out, err);
    UNLOCK(d);
    return rc < 0 ? 503 : 200;
}

int spw_daemon_login_info(spw_daemon_t *d, json_t **out, spw_error_t *err)
{
    if (!d->oidc) {
        *out = json_pack("{s:b}", "login", 0);
        return 200;
    }
    *out = spw_oidc_login(d->oidc, spw_daemon_clock(), err);
    return *out ? 200 : 503;
}

int spw_daemon_guard_init(spw_daemon_t *d, spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &d->cfg->daemon;
    d->auth_required = dc->ntokens > 0 || dc->oidc.issuer;
    if (dc->oidc.issuer)
        d->oidc = spw_oidc_new(&dc->oidc);
    d->tokens = tokens_copy(dc->tokens, dc->ntokens);
    if (!(d->audit = spw_audit_open(spw_store_db(d->store), err)))
        return -1;
    return 0;
}

void spw_daemon_guard_flush(spw_daemon_t *d)
{
    spw_error_t err;
    if (d->audit && spw_audit_flush(d->audit, &err) < 0 && !d->quiet)
        fprintf(stderr, "spillway: %s\n", err.text);
}

void spw_daemon_guard_free(spw_daemon_t *d)
{
    spw_audit_close(d->audit);
    d->audit = NULL;
    spw_oidc_free(d->oidc);
    d->oidc = NULL;
    for (dtokens_t *t = d->tokens, *older; t; t = older) {
        older = t->older;
        for (size_t i = 0; i < t->n; i++) {
            free(t->v[i].name);
            explicit_bzero(t->v[i].token, strlen(t->v[i].token));
            free(t->v[i].token);
            free(t->v[i].team);
        }
        free(t->v);
        free(t);
    }
    d->tokens = NULL;
}
