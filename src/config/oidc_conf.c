/* oidc_conf.c: daemon.oidc, the OpenID Connect provider whose signed tokens
 * the API accepts besides static tokens (docs/identity.md). */

#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"
#include "util/error.h"

/* Reads a map GROUP: VALUE (key `what`) into *out; role values must be
 * admin, member or viewer.  0, or -1 with err. */
static int group_map(ctx_t *x, const spw_ynode_t *m, const char *what, int roles,
                     spw_oidc_map_t **out, size_t *n, spw_error_t *err)
{
    if (m->kind != SPW_Y_MAP)
        return cfg_at(x, m, err, "oidc.%s: expected a map GROUP: %s", what,
                      roles ? "ROLE (admin, member or viewer)" : "TEAM");
    *out = spw_xcalloc(m->n ? m->n : 1, sizeof(**out));
    for (size_t i = 0; i < m->n; i++) {
        const char *s;
        if (spw_ynode_str(x->d, m->items[i], m->keys[i], &s, err) < 0)
            return -1;
        if (!*s || (roles && strcmp(s, "admin") != 0 && strcmp(s, "member") != 0 &&
                    strcmp(s, "viewer") != 0))
            return cfg_at(x, m->items[i], err, "oidc.%s.%s: expected %s, got '%.40s'", what,
                          m->keys[i], roles ? "admin, member or viewer (read-only)" : "a team name",
                          s);
        (*out)[i].group = spw_xstrdup(m->keys[i]);
        (*out)[i].value = spw_xstrdup(s);
        (*n)++;
    }
    return 0;
}

int cfg_oidc_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"issuer", "audience", "groups_claim", "user_claim",
                                       "teams", "roles", "leeway_s", "timeout_s", "client_id",
                                       "redirect_uri", "scopes", NULL};
    spw_oidc_conf_t *oc = &x->cfg->daemon.oidc;
    if (spw_ymap_check_keys(x->d, n, "daemon.oidc", keys, err) < 0)
        return -1;
    const char *names[] = {"issuer", "audience", "groups_claim", "user_claim", "client_id",
                           "redirect_uri", "scopes"};
    char **dst[] = {&oc->issuer, &oc->audience, &oc->groups_claim, &oc->user_claim,
                    &oc->client_id, &oc->redirect_uri, &oc->scopes};
    for (int i = 0; i < 7; i++) {
        const spw_ynode_t *v = spw_ymap_get(n, names[i]);
        const char *s;
        if (!v && i < 2)
            return cfg_at(x, n, err, "daemon.oidc needs '%s:' (%s)", names[i],
                          i ? "what the tokens' aud claim must hold, e.g. your client id"
                            : "the provider's URL, exactly as its tokens' iss claim");
        if (!v)
            continue;
        if (spw_ynode_str(x->d, v, names[i], &s, err) < 0)
            return -1;
        if (!*s)
            return cfg_at(x, v, err, "oidc.%s: expected a non-empty string", names[i]);
        if (i == 0 && strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0)
            return cfg_at(x, v, err, "oidc.issuer: expected an https:// URL, got '%.80s'", s);
        if (i == 5 && strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0)
            return cfg_at(x, v, err, "oidc.redirect_uri: expected the dashboard's https:// URL "
                                     "ending in /ui/, got '%.80s'", s);
        free(*dst[i]);
        *dst[i] = spw_xstrdup(s);
    }
    if (!oc->groups_claim)
        oc->groups_claim = spw_xstrdup("groups");
    if (!oc->scopes)
        oc->scopes = spw_xstrdup("openid");
    oc->leeway_s = 60;
    oc->timeout_s = 5;
    if (cfg_num_key(x, n, "leeway_s", 0, 3600, &oc->leeway_s, err) < 0 ||
        cfg_num_key(x, n, "timeout_s", 0.1, 300, &oc->timeout_s, err) < 0)
        return -1;
    const spw_ynode_t *v;
    if ((v = spw_ymap_get(n, "teams")) &&
        group_map(x, v, "teams", 0, &oc->teams, &oc->nteams, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "roles")) &&
        group_map(x, v, "roles", 1, &oc->roles, &oc->nroles, err) < 0)
        return -1;
    return 0;
}

static void map_free(spw_oidc_map_t *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].group);
        free(m[i].value);
    }
    free(m);
}

void cfg_oidc_free(spw_oidc_conf_t *oc)
{
    free(oc->issuer);
    free(oc->audience);
    free(oc->groups_claim);
    free(oc->user_claim);
    free(oc->client_id);
    free(oc->redirect_uri);
    free(oc->scopes);
    map_free(oc->teams, oc->nteams);
    map_free(oc->roles, oc->nroles);
    memset(oc, 0, sizeof(*oc));
}
