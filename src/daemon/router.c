/* router.c: maps each request of the HTTP API (docs/api.md) to one call of
 * the daemon API (daemon.h) and its result to a status, headers and body.
 * No sockets and no clock here; http.c does the transport. */
#include "daemon/router.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/ui.h"
#include "util/error.h"

#define CT_JSON "application/json"
#define CT_TEXT "text/plain"
#define CT_METRICS "text/plain; version=0.0.4"

/* Longest bearer token looked up; longer ones are unknown without a lookup. */
#define TOKEN_MAX 4096
/* Longest team name accepted in ?team=. */
#define TEAM_MAX 128

/* What a handler gets: the request, the caller and the path's id. */
typedef struct call {
    spw_daemon_t *d;                 /* the daemon */
    const spw_route_req_t *req;      /* the request (borrowed) */
    spw_caller_t who;                /* from the token; admin when open */
    char id[SPW_ROUTE_ID_MAX + 2];   /* the {id} segment, "" when none;
                                        one byte over the limit so a longer
                                        id is seen as too long */
    char id2[SPW_ROUTE_ID_MAX + 2];  /* a second {id} segment (a node's
                                        index after its pool), "" when none */
    int id_ok;                       /* 1: id (and id2) are well formed */
    char target[2 * SPW_ROUTE_ID_MAX + 8]; /* what the audit log names: the
                                        path's id(s), or the new job's id */
} call_t;

typedef void (*handler_f)(call_t *c, spw_route_resp_t *out);

/* Who may call a route. */
#define ROUTE_TOKEN 0    /* any team or admin token (none when open) */
#define ROUTE_OPEN 1     /* no token */
#define ROUTE_METRICS 2  /* /metrics: no token, or with daemon.metrics_auth
                            an admin or metrics token */

/* One route: a path pattern, a method and what answers it. */
typedef struct route {
    const char *pattern;             /* path; "*" stands for one id segment
                                        (at most two of them) */
    const char *method;              /* "GET" (HEAD too) or "POST" */
    const char *allow;               /* Allow header for this pattern */
    int open;                        /* ROUTE_TOKEN, ROUTE_OPEN (healthz, the
                                        dashboard's files) or ROUTE_METRICS */
    const char *action;              /* audit log action (mutating calls);
                                        NULL = not audited */
    const char *const *params;       /* accepted query keys, NULL-terminated;
                                        NULL = the query is ignored */
    handler_f fn;                    /* the handler */
} route_t;

/* ---- responses ---------------------------------------------------------- */

/* Takes ownership of body (malloc'd, len bytes plus a NUL). */
static void resp_set(spw_route_resp_t *out, int status, const char *ctype, char *body,
                     size_t len)
{
    free(out->body);
    out->status = status;
    out->content_type = ctype;
    out->body = body;
    out->body_len = len;
}

/* The message of an error the daemon gave no sentence for. */
static const char *reason(int status)
{
    switch (status) {
    case 400: return "bad request";
    case 401: return "a bearer token is required";
    case 403: return "forbidden";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 409: return "conflict";
    case 413: return "request body too large";
    case 415: return "unsupported media type";
    case 421: return "misdirected request";
    case 429: return "too many requests";
    case 503: return "service unavailable";
    default: return "internal error";
    }
}

/* A message safe to put in JSON: control bytes become spaces, and when the
 * text is not valid UTF-8 (jansson refuses it) every non-ASCII byte becomes
 * '?'.  Caller frees the json_t. */
static json_t *message_json(const char *msg)
{
    char buf[sizeof(((spw_error_t *)0)->text) + 128];
    snprintf(buf, sizeof(buf), "%s", msg && *msg ? msg : "error");
    for (unsigned char *p = (unsigned char *)buf; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = ' ';
    json_t *s = json_string(buf);
    if (s)
        return s;
    for (unsigned char *p = (unsigned char *)buf; *p; p++)
        if (*p >= 0x80)
            *p = '?';
    return json_string(buf);
}

/* Dumps obj (consumed) as the body, with a final newline; 500 if it cannot
 * be written. */
static void resp_json(spw_route_resp_t *out, int status, json_t *obj)
{
    char *text = obj ? json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(obj);
    if (!text) {
        static const char fail[] =
            "{\"error\":{\"status\":500,\"message\":\"cannot write the response\"}}\n";
        resp_set(out, 500, CT_JSON, spw_xstrdup(fail), sizeof(fail) - 1);
        return;
    }
    size_t n = strlen(text);
    char *body = spw_xmalloc(n + 2);
    memcpy(body, text, n);
    body[n] = '\n';
    body[n + 1] = '\0';
    free(text);
    resp_set(out, status, CT_JSON, body, n + 1);
}

/* {"error":{"status":N,"message":MSG}}; MSG empty = the status's reason. */
static void resp_error_msg(spw_route_resp_t *out, int status, const char *msg)
{
    json_t *inner = json_object();
    json_object_set_new(inner, "status", json_integer(status));
    json_object_set_new(inner, "message", message_json(msg && *msg ? msg : reason(status)));
    json_t *obj = json_object();
    json_object_set_new(obj, "error", inner);
    resp_json(out, status, obj);
}

/* resp_error_msg with a printf-style message. */
static __attribute__((format(printf, 3, 4)))
void resp_error(spw_route_resp_t *out, int status, const char *fmt, ...)
{
    char msg[sizeof(((spw_error_t *)0)->text)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    resp_error_msg(out, status, msg);
}

/* The result of a daemon call that fills a JSON object: the object on
 * 200/201, the daemon's sentence otherwise. */
static void resp_daemon(spw_route_resp_t *out, int status, json_t *obj, const spw_error_t *err)
{
    if ((status == 200 || status == 201) && obj) {
        resp_json(out, status, obj);
        return;
    }
    json_decref(obj);
    if (status < 400 || status > 599)
        status = 500;
    resp_error_msg(out, status, err->text);
}

/* ---- request parts ------------------------------------------------------ */

/* 1 when s is an id the daemon may be asked about: 1..SPW_ROUTE_ID_MAX of
 * [A-Za-z0-9._-], not starting with '.' (ids name log files). */
static int id_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SPW_ROUTE_ID_MAX || s[0] == '.')
        return 0;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789._-") == n;
}

/* Matches path against pattern; a "*" segment matches one non-empty
 * segment, copied (truncated) into id.  Returns 1 on a match. */
static int path_match(const char *pattern, const char *path, char *id, char *id2, size_t idsz)
{
    const char *p = pattern, *s = path;
    int nid = 0;
    id[0] = id2[0] = '\0';
    while (*p) {
        if (*p == '*') {
            size_t n = strcspn(s, "/");
            if (n == 0)
                return 0;
            snprintf(nid++ ? id2 : id, idsz, "%.*s", (int)(n < idsz ? n : idsz - 1), s);
            s += n;
            p++;
        } else if (*p++ != *s++) {
            return 0;
        }
    }
    return *s == '\0';
}

/* The value of query parameter key: 1 and *value (never NULL; "" for a
 * bare key) when present, else 0. */
static int query_get(const spw_route_req_t *req, const char *key, const char **value)
{
    for (const char *const *q = req->query; q && q[0]; q += 2)
        if (strcmp(q[0], key) == 0) {
            *value = q[1] ? q[1] : "";
            return 1;
        }
    return 0;
}

/* Checks the query against the route's accepted keys: each at most once,
 * no others.  0, or -1 with a 400 in out. */
static int query_check(const route_t *r, const spw_route_req_t *req, spw_route_resp_t *out)
{
    if (!r->params)
        return 0;
    for (const char *const *q = req->query; q && q[0]; q += 2) {
        int known = 0;
        for (const char *const *k = r->params; *k; k++)
            known |= strcmp(*k, q[0]) == 0;
        if (!known) {
            resp_error(out, 400, "unknown query parameter '%.40s'", q[0]);
            return -1;
        }
        for (const char *const *p = req->query; p != q; p += 2)
            if (strcmp(p[0], q[0]) == 0) {
                resp_error(out, 400, "query parameter '%s' is given twice", q[0]);
                return -1;
            }
    }
    return 0;
}

/* Parses a whole number of decimal digits only, at most max.  0 or -1. */
static int parse_count(const char *s, long long max, long long *out)
{
    long long v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (max - (*s - '0')) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

/* Reads "Bearer TOKEN" (scheme in any case) and asks the daemon.  0 with
 * c->who filled, or -1 with a 401 in out.  The token goes into no message. */
static int authenticate(call_t *c, spw_route_resp_t *out)
{
    memset(&c->who, 0, sizeof(c->who));
    if (!spw_daemon_auth_required(c->d)) {
        c->who.admin = 1;
        return 0;
    }
    const char *h = c->req->authorization;
    if (!h || !*h) {
        resp_error(out, 401, "this request needs an 'Authorization: Bearer TOKEN' header");
        goto unauthorized;
    }
    h += strspn(h, " \t");
    if (strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t')) {
        resp_error(out, 401, "the Authorization header must be 'Bearer TOKEN'");
        goto unauthorized;
    }
    h += 6 + strspn(h + 6, " \t");
    size_t n = strcspn(h, " \t");
    if (n == 0 || n > TOKEN_MAX || h[n + strspn(h + n, " \t")] != '\0') {
        resp_error(out, 401, "the Authorization header must be 'Bearer TOKEN'");
        goto unauthorized;
    }
    char *tok = spw_xmalloc(n + 1);
    memcpy(tok, h, n);
    tok[n] = '\0';
    int rc = spw_daemon_auth(c->d, tok, &c->who);
    explicit_bzero(tok, n);
    free(tok);
    if (rc == 0)
        return 0;
    spw_caller_t was = c->who;  /* its name kept for the audit of a revoked one */
    memset(&c->who, 0, sizeof(c->who));
    snprintf(c->who.user, sizeof(c->who.user), "%s", was.user);
    c->who.token_name = was.user[0] ? c->who.user : was.token_name;
    if (was.why[0])
        resp_error(out, 401, "%s", was.why);
    else
        resp_error(out, 401, was.token_name ? "this token has been revoked" : "unknown token");
unauthorized:
    out->www_authenticate = "Bearer";
    return -1;
}

/* ---- handlers ----------------------------------------------------------- */

static void h_health(call_t *c, spw_route_resp_t *out)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_health(c->d, &obj, &err);
    if (obj)
        resp_json(out, st, obj);  /* 503 too: the body says why */
    else
        resp_daemon(out, st, obj, &err);
}

static void h_ready(call_t *c, spw_route_resp_t *out)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_ready(c->d, &obj, &err);
    if (obj)
        resp_json(out, st, obj);
    else
        resp_daemon(out, st, obj, &err);
}

static void h_metrics(call_t *c, spw_route_resp_t *out)
{
    int auth = 0, per_job = 0;
    spw_daemon_metrics_conf(c->d, &auth, &per_job);
    char *text = spw_daemon_metrics(c->d);
    if (!text) {
        resp_error(out, 503, "the metrics are unavailable");
        return;
    }
    spw_ui_t *ui = spw_daemon_ui(c->d);
    if (ui) {  /* the dashboard sampler's gauges: queue age, GPU telemetry */
        char *more = spw_ui_metrics(ui, per_job);
        size_t n1 = strlen(text), n2 = strlen(more);
        text = spw_xrealloc(text, n1 + n2 + 1);
        memcpy(text + n1, more, n2 + 1);
        free(more);
    }
    resp_set(out, 200, CT_METRICS, text, strlen(text));
}

/* ---- the dashboard (docs/dashboard.md) ----------------------------------- */

/* The page's own script and style only; inline style attributes are the
 * charts' colours; never framed (clickjacking).  %s: more origins the page
 * may fetch from (the OIDC token endpoint's). */
#define UI_CSP "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " \
               "img-src 'self' data:; connect-src 'self'%s; base-uri 'none'; "            \
               "form-action 'none'; frame-ancestors 'none'"

/* " scheme://host[:port]", the origin of url with a space before it, into
 * buf (n bytes), to follow another CSP source: "" when url is not http(s),
 * holds a byte a CSP cannot carry, or does not fit. */
static void url_origin(const char *url, char *buf, size_t n)
{
    buf[0] = '\0';
    const char *p = strstr(url, "://");
    if (!p || (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0))
        return;
    size_t len = (size_t)(p + 3 - url) + strcspn(p + 3, "/?#");
    for (size_t i = 0; i < len; i++)
        if (url[i] <= ' ' || url[i] == ';' || url[i] == ',' || url[i] == '\'' ||
            (unsigned char)url[i] >= 0x7f)
            return;
    if (len < n)
        snprintf(buf, n, " %.*s", (int)len, url);
}

/* GET /ui and /ui/{file}: the embedded page; no token (the page asks for
 * one, or logs in through daemon.oidc, and sends it with its API calls). */
static void h_ui_file(call_t *c, spw_route_resp_t *out)
{
    const spw_ui_asset_t *a = spw_ui_asset(c->id[0] ? c->id : "index.html");
    /* report.* are the what-if report's template (sim --report), not pages. */
    if (!a || !c->id_ok || strncmp(c->id, "report.", 7) == 0) {
        resp_error(out, 404, "no such file of the dashboard: %.60s", c->id);
        return;
    }
    char *body = spw_xmalloc((size_t)a->len + 1);
    memcpy(body, a->data, (size_t)a->len + 1);
    resp_set(out, 200, a->content_type, body, (size_t)a->len);
    /* The page exchanges a login's code at the provider's token endpoint. */
    char more[512] = "";
    json_t *login = NULL;
    spw_error_t err = {{0}};
    if (!c->id[0] && spw_daemon_login_info(c->d, &login, &err) == 200) {
        const char *tu = json_string_value(json_object_get(login, "token_endpoint"));
        if (tu)
            url_origin(tu, more, sizeof(more));
    }
    json_decref(login);
    snprintf(out->csp_buf, sizeof(out->csp_buf), UI_CSP, more);
    out->csp = out->csp_buf;
}

/* GET /v1/ui/login: no token; what the page needs to log in (nothing
 * secret: the issuer, the public client's id, the endpoints). */
static void h_ui_login(call_t *c, spw_route_resp_t *out)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_login_info(c->d, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

/* The dashboard's sampler, or NULL with a 503 in out. */
static spw_ui_t *ui_of(call_t *c, spw_route_resp_t *out)
{
    spw_ui_t *ui = spw_daemon_ui(c->d);
    if (!ui)
        resp_error(out, 503, "the dashboard sampler is not running");
    return ui;
}

static void h_ui_series(call_t *c, spw_route_resp_t *out)
{
    const char *v;
    long long range = SPW_UI_RANGE_DEFAULT_S;
    if (query_get(c->req, "range", &v) && *v &&
        (parse_count(v, SPW_UI_RANGE_MAX_S, &range) < 0 || range < 1)) {
        resp_error(out, 400, "query parameter 'range' must be seconds from 1 to %d (8 days)",
                   SPW_UI_RANGE_MAX_S);
        return;
    }
    spw_ui_t *ui = ui_of(c, out);
    if (ui)
        resp_json(out, 200, spw_ui_series(ui, &c->who, (double)range));
}

static void h_ui_telemetry(call_t *c, spw_route_resp_t *out)
{
    spw_ui_t *ui = ui_of(c, out);
    if (ui)
        resp_json(out, 200, spw_ui_telemetry(ui, &c->who));
}

static void h_submit(call_t *c, spw_route_resp_t *out)
{
    spw_jobspec_t spec;
    spw_error_t err = {{0}};
    const char *body = c->req->body ? c->req->body : "";
    if (spw_jobspec_parse("request", body, c->req->body_len, &spec, &err) < 0) {
        resp_error_msg(out, 400, err.text);
        return;
    }
    char id[SPW_STORE_ID_LEN] = "";
    int st = spw_daemon_submit(c->d, &c->who, &spec, id, &err);
    spw_jobspec_free(&spec);  /* zeroed by the daemon when it took it */
    if (st != 201) {
        resp_daemon(out, st, NULL, &err);
        return;
    }
    snprintf(c->target, sizeof(c->target), "%s", id);
    resp_json(out, 201, json_pack("{s:s, s:s}", "id", id, "state", "queued"));
}

static void h_list(call_t *c, spw_route_resp_t *out)
{
    const char *state = NULL, *team = NULL, *v;
    long long after = 0, limit = SPW_ROUTE_LIMIT_DEFAULT;
    spw_djob_state_t st_parsed;

    if (query_get(c->req, "state", &v) && *v) {
        if (spw_djob_state_parse(v, &st_parsed) < 0) {
            resp_error(out, 400, "query parameter 'state' must be one of queued, placed, "
                                 "running, succeeded, failed, cancelled, rejected");
            return;
        }
        state = v;
    }
    if (query_get(c->req, "team", &v) && *v) {
        if (strlen(v) > TEAM_MAX) {
            resp_error(out, 400, "query parameter 'team' is longer than %d bytes", TEAM_MAX);
            return;
        }
        team = v;
    }
    if (query_get(c->req, "after", &v) && *v && parse_count(v, INT64_MAX, &after) < 0) {
        resp_error(out, 400, "query parameter 'after' must be a whole number >= 0");
        return;
    }
    if (query_get(c->req, "limit", &v) && *v
        && (parse_count(v, SPW_ROUTE_LIMIT_MAX, &limit) < 0 || limit < 1)) {
        resp_error(out, 400, "query parameter 'limit' must be a whole number from 1 to %d",
                   SPW_ROUTE_LIMIT_MAX);
        return;
    }
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_jobs(c->d, &c->who, state, team, after, (long)limit, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

/* 0 when the path's id is well formed, else -1 with a 404 in out. */
static int need_id(call_t *c, const char *what, spw_route_resp_t *out)
{
    if (c->id_ok)
        return 0;
    resp_error(out, 404, "no such %s", what);
    return -1;
}

/* The daemon calls of the form f(d, who, id, &obj, &err). */
typedef int (*id_call_f)(spw_daemon_t *, const spw_caller_t *, const char *, json_t **,
                         spw_error_t *);

static void by_id(call_t *c, const char *what, id_call_f f, spw_route_resp_t *out)
{
    if (need_id(c, what, out) < 0)
        return;
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = f(c->d, &c->who, c->id, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

static void h_job(call_t *c, spw_route_resp_t *out)
{
    by_id(c, "job", spw_daemon_job, out);
}

static void h_cancel(call_t *c, spw_route_resp_t *out)
{
    by_id(c, "job", spw_daemon_cancel, out);
}

static void h_explain(call_t *c, spw_route_resp_t *out)
{
    by_id(c, "job", spw_daemon_explain, out);
}

static void h_preempt(call_t *c, spw_route_resp_t *out)
{
    if (!c->who.admin) {
        resp_error(out, 403, "preempting an instance needs an admin token");
        return;
    }
    by_id(c, "instance", spw_daemon_preempt, out);
}

static void node_state(call_t *c, int down, spw_route_resp_t *out)
{
    if (!c->who.admin) {
        resp_error(out, 403, "taking a node down or up needs an admin token");
        return;
    }
    if (need_id(c, "node", out) < 0)
        return;
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_node(c->d, &c->who, c->id, c->id2, down, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

static void h_node_down(call_t *c, spw_route_resp_t *out)
{
    node_state(c, 1, out);
}

static void h_node_up(call_t *c, spw_route_resp_t *out)
{
    node_state(c, 0, out);
}

static void slurm_node(call_t *c, int resume, spw_route_resp_t *out)
{
    if (need_id(c, "node", out) < 0)
        return;
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_slurm_node(c->d, &c->who, c->id, resume, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

static void h_slurm_resume(call_t *c, spw_route_resp_t *out)
{
    slurm_node(c, 1, out);
}

static void h_slurm_suspend(call_t *c, spw_route_resp_t *out)
{
    slurm_node(c, 0, out);
}

static void h_pools(call_t *c, spw_route_resp_t *out)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_pools(c->d, &c->who, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

static void instances(call_t *c, int release, spw_route_resp_t *out)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_instances(c->d, &c->who, release, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

static void h_instances(call_t *c, spw_route_resp_t *out) { instances(c, 0, out); }

static void h_release_orphans(call_t *c, spw_route_resp_t *out) { instances(c, 1, out); }

static void h_teams(call_t *c, spw_route_resp_t *out)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_teams(c->d, &c->who, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

static void h_costs(call_t *c, spw_route_resp_t *out)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    const char *period = NULL;
    query_get(c->req, "period", &period);
    int st = spw_daemon_costs(c->d, &c->who, period, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

static void h_logs(call_t *c, spw_route_resp_t *out)
{
    const char *v;
    int err_stream = 0;
    long long offset = 0;

    if (query_get(c->req, "stream", &v) && *v) {
        if (strcmp(v, "out") != 0 && strcmp(v, "err") != 0) {
            resp_error(out, 400, "query parameter 'stream' must be 'out' or 'err'");
            return;
        }
        err_stream = strcmp(v, "err") == 0;
    }
    if (query_get(c->req, "offset", &v) && *v && parse_count(v, INT64_MAX, &offset) < 0) {
        resp_error(out, 400, "query parameter 'offset' must be a whole number >= 0");
        return;
    }
    long long rank = 0;
    if (query_get(c->req, "rank", &v) && *v && parse_count(v, SPW_DAEMON_MAX_RANKS, &rank) < 0) {
        resp_error(out, 400, "query parameter 'rank' must be a whole number from 0 to 1024");
        return;
    }
    if (need_id(c, "job", out) < 0)
        return;
    char *buf = NULL;
    size_t len = 0;
    long long next = offset;
    const char *state = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_logs(c->d, &c->who, c->id, err_stream, (unsigned)rank, offset, SPW_ROUTE_LOG_MAX, &buf,
                             &len, &next, &state, &err);
    if (st != 200) {
        free(buf);
        resp_daemon(out, st, NULL, &err);
        return;
    }
    buf = spw_xrealloc(buf, len + 1);  /* room for the NUL the header promises */
    buf[len] = '\0';
    resp_set(out, 200, CT_TEXT, buf, len);
    snprintf(out->offset, sizeof(out->offset), "%lld", next);
    out->job_state = state;
}

static void h_audit(call_t *c, spw_route_resp_t *out)
{
    const char *team = NULL, *v;
    double since = 0;
    long long limit = SPW_ROUTE_LIMIT_DEFAULT;
    if (query_get(c->req, "since", &v) && *v) {
        char *end;
        since = strtod(v, &end);
        if (*end || !(since >= 0 && since < 1e11)) {
            resp_error(out, 400, "query parameter 'since' must be unix seconds, like 1764000000");
            return;
        }
    }
    if (query_get(c->req, "team", &v) && *v) {
        if (strlen(v) > TEAM_MAX) {
            resp_error(out, 400, "query parameter 'team' is longer than %d bytes", TEAM_MAX);
            return;
        }
        team = v;
    }
    if (query_get(c->req, "limit", &v) && *v
        && (parse_count(v, SPW_ROUTE_LIMIT_MAX, &limit) < 0 || limit < 1)) {
        resp_error(out, 400, "query parameter 'limit' must be a whole number from 1 to %d",
                   SPW_ROUTE_LIMIT_MAX);
        return;
    }
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    int st = spw_daemon_audit_list(c->d, &c->who, since, team, (long)limit, &obj, &err);
    resp_daemon(out, st, obj, &err);
}

/* ---- the table ---------------------------------------------------------- */

static const char *const no_params[] = {NULL};
static const char *const list_params[] = {"state", "team", "after", "limit", NULL};
static const char *const log_params[] = {"stream", "offset", "rank", NULL};
static const char *const costs_params[] = {"period", NULL};
static const char *const audit_params[] = {"since", "team", "limit", NULL};
static const char *const series_params[] = {"range", NULL};

#define ALLOW_GET "GET, HEAD"
#define ALLOW_POST "POST"

static const route_t routes[] = {
    {"/healthz", "GET", ALLOW_GET, ROUTE_OPEN, NULL, NULL, h_health},
    {"/readyz", "GET", ALLOW_GET, ROUTE_OPEN, NULL, NULL, h_ready},
    {"/metrics", "GET", ALLOW_GET, ROUTE_METRICS, NULL, NULL, h_metrics},
    {"/v1/jobs", "GET", "GET, HEAD, POST", 0, NULL, list_params, h_list},
    {"/v1/jobs", "POST", "GET, HEAD, POST", 0, "submit", no_params, h_submit},
    {"/v1/jobs/*", "GET", ALLOW_GET, 0, NULL, no_params, h_job},
    {"/v1/jobs/*/cancel", "POST", ALLOW_POST, 0, "cancel", no_params, h_cancel},
    {"/v1/jobs/*/explain", "GET", ALLOW_GET, 0, NULL, no_params, h_explain},
    {"/v1/jobs/*/logs", "GET", ALLOW_GET, 0, NULL, log_params, h_logs},
    {"/v1/pools", "GET", ALLOW_GET, 0, NULL, no_params, h_pools},
    {"/v1/costs", "GET", ALLOW_GET, 0, NULL, costs_params, h_costs},
    {"/v1/teams", "GET", ALLOW_GET, 0, NULL, no_params, h_teams},
    {"/v1/instances", "GET", ALLOW_GET, 0, NULL, no_params, h_instances},
    {"/v1/instances/release-orphans", "POST", ALLOW_POST, 0, "instances.release_orphans",
     no_params, h_release_orphans},
    {"/v1/audit", "GET", ALLOW_GET, 0, NULL, audit_params, h_audit},
    {"/v1/admin/instances/*/preempt", "POST", ALLOW_POST, 0, "preempt", no_params, h_preempt},
    {"/v1/admin/nodes/*/*/down", "POST", ALLOW_POST, 0, "node.down", no_params, h_node_down},
    {"/v1/admin/nodes/*/*/up", "POST", ALLOW_POST, 0, "node.up", no_params, h_node_up},
    {"/v1/slurm/nodes/*/resume", "POST", ALLOW_POST, 0, "slurm.resume", no_params, h_slurm_resume},
    {"/v1/slurm/nodes/*/suspend", "POST", ALLOW_POST, 0, "slurm.suspend", no_params,
     h_slurm_suspend},
    {"/ui", "GET", ALLOW_GET, ROUTE_OPEN, NULL, NULL, h_ui_file},
    {"/ui/", "GET", ALLOW_GET, ROUTE_OPEN, NULL, NULL, h_ui_file},
    {"/ui/*", "GET", ALLOW_GET, ROUTE_OPEN, NULL, NULL, h_ui_file},
    {"/v1/ui/login", "GET", ALLOW_GET, ROUTE_OPEN, NULL, no_params, h_ui_login},
    {"/v1/ui/series", "GET", ALLOW_GET, 0, NULL, series_params, h_ui_series},
    {"/v1/ui/telemetry", "GET", ALLOW_GET, 0, NULL, no_params, h_ui_telemetry},
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* The route for (method, path): NULL with a 404 or 405 in out. */
static const route_t *find_route(call_t *c, spw_route_resp_t *out)
{
    const char *path = c->req->path ? c->req->path : "";
    const char *method = c->req->method ? c->req->method : "";
    const route_t *known = NULL;

    if (strcmp(method, "HEAD") == 0)
        method = "GET";
    for (size_t i = 0; i < NROUTES; i++) {
        if (!path_match(routes[i].pattern, path, c->id, c->id2, sizeof(c->id)))
            continue;
        if (strcmp(routes[i].method, method) == 0) {
            c->id_ok = (!c->id[0] || id_valid(c->id)) && (!c->id2[0] || id_valid(c->id2));
            return &routes[i];
        }
        known = &routes[i];
    }
    if (known) {
        resp_error(out, 405, "method not allowed: this path takes %s", known->allow);
        out->allow = known->allow;
    } else {
        resp_error(out, 404, "no such path: %.100s", path);
    }
    return NULL;
}

/* 1 when a media type (a Content-Type value) is application/json or
 * application/yaml, parameters aside: types a page on another origin cannot
 * send without the browser asking first (CORS preflight). */
static int api_media_type(const char *ct)
{
    if (!ct)
        return 0;
    ct += strspn(ct, " \t");
    size_t n = strcspn(ct, " \t;");
    return (n == 16 && strncasecmp(ct, "application/json", n) == 0) ||
           (n == 16 && strncasecmp(ct, "application/yaml", n) == 0);
}

/* 421 for a Host the daemon does not serve (DNS rebinding): 0, or -1 with
 * out filled. */
static int host_ok(const spw_route_req_t *req, spw_route_resp_t *out)
{
    if (!req->host_refused)
        return 0;
    resp_error(out, 421, "the Host header '%.100s' is not a name this daemon serves; use its "
                         "address, or add the name to daemon.allowed_hosts", req->host_refused);
    return -1;
}

/* 415 for a mutating call a browser could send from another origin without
 * asking first: 0, or -1 with out filled. */
static int forgery_ok(const spw_route_req_t *req, spw_route_resp_t *out)
{
    const char *m = req->method ? req->method : "";
    if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || api_media_type(req->content_type) ||
        (req->client && *req->client))
        return 0;
    resp_error(out, 415, "a %.10s needs 'Content-Type: application/json' (or application/yaml) "
                         "or an 'X-Spillway-Client' header; a page on another site cannot send "
                         "these, so forged requests are refused", m);
    return -1;
}

void spw_route(spw_daemon_t *d, const spw_route_req_t *req, spw_route_resp_t *out)
{
    call_t c;
    memset(&c, 0, sizeof(c));
    memset(out, 0, sizeof(*out));
    c.d = d;
    c.req = req;
    if (host_ok(req, out) < 0)
        return;
    const route_t *r = find_route(&c, out);
    if (!r)
        return;
    if (forgery_ok(req, out) < 0)
        goto audit;
    if (c.id_ok && c.id[0])
        snprintf(c.target, sizeof(c.target), "%s%s%s", c.id, c.id2[0] ? "/" : "", c.id2);
    int auth = 0, per_job = 0;
    if (r->open == ROUTE_METRICS)
        spw_daemon_metrics_conf(d, &auth, &per_job);
    if ((r->open == ROUTE_TOKEN || auth) && authenticate(&c, out) < 0)
        goto audit;
    if (r->open == ROUTE_TOKEN && c.who.metrics) {
        resp_error(out, 403, "a metrics token may read /metrics only");
        goto audit;
    }
    if (c.who.viewer && strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        resp_error(out, 403, "this token is read-only (role: viewer): it may look, not change");
        goto audit;
    }
    if (auth && !c.who.admin && !c.who.metrics) {
        resp_error(out, 403, "/metrics needs an admin token or a metrics token "
                             "(daemon.metrics_auth is on)");
        goto audit;
    }
    if (req->body_too_large) {
        resp_error(out, 413, "the request body is larger than daemon.max_body_bytes");
        goto audit;
    }
    if (query_check(r, req, out) < 0)
        goto audit;
    r->fn(&c, out);
audit:
    if (r->action)
        spw_daemon_audit(d, &c.who, r->action, c.target, out->status);
}

void spw_route_resp_clear(spw_route_resp_t *r)
{
    if (!r)
        return;
    free(r->body);
    memset(r, 0, sizeof(*r));
}
