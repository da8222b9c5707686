/* test_router.c: the HTTP API (docs/api.md) through daemon/router against a
 * real daemon over a temporary state dir (never started, so submits commit
 * inline and no job runs), then daemon/http over loopback sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "config/config.h"
#include "daemon/daemon.h"
#include "daemon/http.h"
#include "daemon/router.h"
#include "tap.h"

#define ML "Bearer ml-token-0123456789abcdef"
#define BIO "Bearer bio-token-0123456789abcdef"
#define ADMIN "Bearer admin-token-0123456789abcdef"
#define SECRET "ml-token-0123456789abcdef"

static char dir[64];             /* the test's temporary directory */
static spw_daemon_t *D;          /* the daemon requests go to */
static spw_route_resp_t R;       /* the last response */
static json_t *J;                /* its body parsed, or NULL */

/* ---- fixtures ----------------------------------------------------------- */

/* Loads a config (with state_dir set to dir/SUB, top_extra added at the top
 * level and daemon_extra in the daemon: section) and makes its daemon. */
static spw_daemon_t *make_daemon(spw_config_t *cfg, const char *sub, const char *top_extra,
                                 const char *daemon_extra)
{
    char yaml[2048], state[128];
    spw_error_t err;
    snprintf(state, sizeof(state), "%s/%s", dir, sub);
    int n = snprintf(yaml, sizeof(yaml),
                     "onprem:\n"
                     "  - {name: local, nodes: 1, gpus_per_node: 4, gpu: A100,"
                     " cost_usd_per_gpu_h: 1.0}\n"
                     "%s"
                     "daemon:\n"
                     "  state_dir: %s\n"
                     "  gpus: slots\n"
                     "  share_run_as: true\n"
                     "%s",
                     top_extra, state, daemon_extra);
    if (spw_config_load_mem(cfg, "test.yaml", yaml, (size_t)n, dir, &err) < 0) {
        diag("config: %s", err.text);
        return NULL;
    }
    spw_daemon_opts_t opts = {.state_dir = state, .quiet = 1};
    spw_daemon_t *d = spw_daemon_create(cfg, &opts, &err);
    if (!d)
        diag("daemon: %s", err.text);
    return d;
}

/* Headers of the requests req_full sends: what the CLI sends by default. */
static const char *req_client = "test";
static const char *req_ctype;
static const char *req_host_refused;

/* Sends one request to D: target is PATH[?k=v&k2=v2] (no decoding).
 * Fills R and J; returns the status. */
static int req_full(const char *method, const char *target, const char *auth,
                    const char *body, int too_large)
{
    char path[512];
    const char *kv[33] = {NULL};
    size_t n = 0;

    snprintf(path, sizeof(path), "%s", target);
    char *q = strchr(path, '?');
    if (q) {
        *q++ = '\0';
        for (char *part = q; part && n < 16;) {
            char *amp = strchr(part, '&');
            if (amp)
                *amp = '\0';
            char *eq = strchr(part, '=');
            if (eq)
                *eq = '\0';
            kv[2 * n] = part;
            kv[2 * n + 1] = eq ? eq + 1 : NULL;
            n++;
            part = amp ? amp + 1 : NULL;
        }
    }
    spw_route_req_t rq = {
        .method = method, .path = path, .query = kv, .authorization = auth,
        .body = body, .body_len = body ? strlen(body) : 0, .body_too_large = too_large,
        .client = req_client, .content_type = req_ctype, .host_refused = req_host_refused,
    };
    spw_route_resp_clear(&R);
    json_decref(J);
    spw_route(D, &rq, &R);
    J = json_loadb(R.body, R.body_len, 0, NULL);
    return R.status;
}

static int req(const char *method, const char *target, const char *auth, const char *body)
{
    return req_full(method, target, auth, body, 0);
}

/* The error message of the last response, or "". */
static const char *msg(void)
{
    const char *s = json_string_value(json_object_get(json_object_get(J, "error"), "message"));
    return s ? s : "";
}

static const char *str(const char *key)
{
    const char *s = json_string_value(json_object_get(J, key));
    return s ? s : "";
}

/* Submits body with auth; returns the new id (static) or "". */
static const char *submit(const char *auth, const char *body)
{
    static char id[4][SPW_STORE_ID_LEN];
    static int k;
    k = (k + 1) % 4;
    id[k][0] = '\0';
    if (req("POST", "/v1/jobs", auth, body) == 201)
        snprintf(id[k], sizeof(id[k]), "%s", str("id"));
    else
        diag("submit: %d %s", R.status, R.body);
    return id[k];
}

/* Number of jobs in the last list response. */
static size_t njobs(void)
{
    return json_array_size(json_object_get(J, "jobs"));
}

/* 1 when every job of the last list response has this team. */
static int all_team(const char *team)
{
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(J, "jobs"), i, j) {
        const char *t = json_string_value(json_object_get(j, "team"));
        if (!t || strcmp(t, team) != 0)
            return 0;
    }
    return 1;
}

static int is_error_body(int status)
{
    json_t *e = json_object_get(J, "error");
    return e && json_integer_value(json_object_get(e, "status")) == status
           && json_is_string(json_object_get(e, "message"))
           && strcmp(R.content_type, "application/json") == 0;
}

/* ---- router tests ------------------------------------------------------- */

static void test_open_endpoints(void)
{
    is(req("GET", "/healthz", NULL, NULL), 200, "healthz needs no token");
    is_str(str("status"), "ok", "healthz says ok");
    is(req("HEAD", "/healthz", NULL, NULL), 200, "HEAD healthz is served as GET");
    is(req("GET", "/metrics", NULL, NULL), 200, "metrics needs no token");
    is_str(R.content_type, "text/plain; version=0.0.4", "metrics in Prometheus text format");
    ok(strstr(R.body, "spillway_queue_length") != NULL, "metrics has spillway_queue_length");
}

static void test_auth(void)
{
    is(req("GET", "/v1/jobs", NULL, NULL), 401, "no token: 401");
    is_str(R.www_authenticate, "Bearer", "401 has WWW-Authenticate: Bearer");
    ok(is_error_body(401), "401 body is an error object");
    is(req("GET", "/v1/jobs", "Bearer nope-nope-nope-nope-nope", NULL), 401, "unknown token: 401");
    is_str(R.www_authenticate, "Bearer", "unknown token has WWW-Authenticate");
    is(req("GET", "/v1/jobs", "Basic " SECRET, NULL), 401, "Basic scheme: 401");
    is(req("GET", "/v1/jobs", "Bearer", NULL), 401, "Bearer without a token: 401");
    is(req("GET", "/v1/jobs", "Bearer " SECRET "x", NULL), 401, "token with a suffix: 401");
    ok(!strstr(R.body, SECRET), "the token is not echoed");
    is(req("GET", "/v1/jobs", "bearer  " SECRET "  ", NULL), 200,
       "scheme in any case, spaces around the token");
    is(req("GET", "/v1/pools", "Bearer " SECRET " extra", NULL), 401, "two words after Bearer: 401");
    ok(!strstr(R.body, SECRET), "the token is not echoed in the 401");
}

/* Checks that d was made (what) and makes it the daemon requests go to;
 * returns the one it replaces (NULL when d is NULL). */
static spw_daemon_t *swap_daemon(spw_daemon_t *d, const char *what)
{
    ok(d != NULL, "%s", what);
    if (!d)
        return NULL;
    spw_daemon_t *keep = D;
    D = d;
    return keep;
}

static void test_forgery(void)
{
    static const char body[] = "{\"run\": [\"true\"], \"gpus\": 1}";
    req_client = NULL;
    is(req("POST", "/v1/jobs", ML, body), 415, "a submit with no Content-Type: 415");
    ok(strstr(msg(), "application/json") && strstr(msg(), "X-Spillway-Client"),
       "the 415 says what to send: %s", msg());
    req_ctype = "text/plain";
    is(req("POST", "/v1/jobs", ML, body), 415, "a text/plain submit (what a form can send): 415");
    req_ctype = "application/x-www-form-urlencoded";
    is(req("POST", "/v1/jobs/j-000001/cancel", ML, NULL), 415, "a form-encoded cancel: 415");
    req_ctype = "Application/JSON; charset=utf-8";
    ok(strncmp(submit(ML, body), "j-", 2) == 0, "application/json (any case, parameters): 201");
    req_ctype = "application/yaml";
    ok(strncmp(submit(ML, "run: [true]\ngpus: 1\n"), "j-", 2) == 0, "application/yaml: 201");
    req_ctype = NULL;
    is(req("GET", "/v1/jobs", ML, NULL), 200, "a GET needs neither");
    req_client = "test";
    ok(strncmp(submit(ML, body), "j-", 2) == 0, "X-Spillway-Client alone (the CLI): 201");
    req_host_refused = "rebound.example:8470";
    is(req("GET", "/v1/jobs", ML, NULL), 421, "a Host http.c refused: 421");
    ok(strstr(msg(), "rebound.example:8470") != NULL, "the 421 names the Host: %s", msg());
    is(req("GET", "/healthz", NULL, NULL), 421, "... on the open paths too");
    req_host_refused = NULL;
}

static void test_metrics_auth(void)
{
    spw_config_t cfg;
    spw_daemon_t *d = make_daemon(&cfg, "metrics", "",
                                  "  metrics_auth: true\n"
                                  "  tokens:\n"
                                  "    - {token: ml-token-0123456789abcdef, team: ml}\n"
                                  "    - {token: prom-token-0123456789abcdef, metrics: true}\n"
                                  "    - {token: admin-token-0123456789abcdef, admin: true}\n");
    spw_daemon_t *keep = swap_daemon(d, "a daemon with metrics_auth and a metrics token");
    if (!d)
        return;
    is(req("GET", "/metrics", NULL, NULL), 401, "metrics_auth: /metrics without a token: 401");
    is(req("GET", "/metrics", ML, NULL), 403, "... with a team token: 403");
    is(req("GET", "/metrics", "Bearer prom-token-0123456789abcdef", NULL), 200,
       "... with the metrics token: 200");
    is(req("GET", "/metrics", ADMIN, NULL), 200, "... with an admin token: 200");
    is(req("GET", "/v1/jobs", "Bearer prom-token-0123456789abcdef", NULL), 403,
       "the metrics token reads nothing else (403)");
    is(req("POST", "/v1/jobs", "Bearer prom-token-0123456789abcdef", "{}"), 403,
       "... and submits nothing");
    is(req("GET", "/healthz", NULL, NULL), 200, "/healthz stays open");
    D = keep;
    spw_daemon_destroy(d);
    spw_config_free(&cfg);
}

static void test_paths(void)
{
    is(req("GET", "/v1/nothing", ML, NULL), 404, "unknown path: 404");
    ok(is_error_body(404), "404 body is an error object");
    is(req("GET", "/v1/jobs/", ML, NULL), 404, "empty id: 404");
    is(req("GET", "/", NULL, NULL), 404, "root: 404");
    is(req("DELETE", "/v1/jobs", ML, NULL), 405, "DELETE /v1/jobs: 405");
    is_str(R.allow, "GET, HEAD, POST", "Allow lists GET, HEAD, POST");
    ok(is_error_body(405), "405 body is an error object");
    is(req("GET", "/v1/jobs/j-000001/cancel", ML, NULL), 405, "GET cancel: 405");
    is_str(R.allow, "POST", "Allow: POST");
    is(req("POST", "/healthz", NULL, NULL), 405, "POST healthz: 405");
    is(req("PUT", "/v1/admin/instances/x/preempt", NULL, NULL), 405,
       "wrong method is 405 before auth");
    is(req("GET", "/v1/jobs/j-999999", ML, NULL), 404, "unknown job: 404");
    ok(is_error_body(404), "unknown job body is an error object");
    is(req("GET", "/v1/jobs/..", ML, NULL), 404, "id '..': 404");
    is(req("GET", "/v1/jobs/a%2Fb", ML, NULL), 404, "id with '%%': 404");
    char longid[200];
    snprintf(longid, sizeof(longid), "/v1/jobs/%0100d", 7);
    is(req("GET", longid, ML, NULL), 404, "100-character id: 404");
    is(req("GET", "/v1/jobs/j-999999/explain", ML, NULL), 404, "explain of unknown job: 404");
    is(req("GET", "/v1/jobs/j-999999/logs", ML, NULL), 404, "logs of unknown job: 404");
    is(req("POST", "/v1/jobs/j-999999/cancel", ML, NULL), 404, "cancel of unknown job: 404");
}

static void test_submit_errors(void)
{
    is(req("POST", "/v1/jobs", ML, "{\"run\": [\"true\"],\n \"gpus\": }"), 400,
       "malformed JSON: 400");
    ok(strncmp(msg(), "request:2:", 10) == 0, "message has request:LINE:COL (%s)", msg());
    ok(is_error_body(400), "400 body is an error object");
    is(req("POST", "/v1/jobs", ML, "{\"run\": [\"true\"], \"gpus\": 1, \"colour\": 2}"), 400,
       "unknown field: 400");
    ok(strstr(msg(), "colour") != NULL, "message names the field (%s)", msg());
    is(req("POST", "/v1/jobs", ML, "{\"run\": [\"true\"], \"gpus\": 0}"), 400, "0 GPUs: 400");
    ok(strstr(msg(), "gpus") != NULL, "message names gpus (%s)", msg());
    is(req("POST", "/v1/jobs", ML, "{\"run\": [\"true\"], \"gpus\": 5}"), 400,
       "5 GPUs on a fleet of 4-GPU nodes and no cloud: 400");
    is(req("POST", "/v1/jobs", ML, "{\"run\": [\"true\"], \"gpus\": 2000000}"), 400,
       "2000000 GPUs: 400");
    is(req("POST", "/v1/jobs", ML, "{\"run\": [\"true\"], \"gpus\": \"H100:1\"}"), 400,
       "a GPU model the fleet lacks: 400");
    is(req("POST", "/v1/jobs", ML, "run: [true]\ngpus: 1\nteam: bio\n"), 403,
       "a team token submitting for another team: 403");
    is(req("POST", "/v1/jobs", ML, ""), 400, "empty body: 400");
    is(req("POST", "/v1/jobs", ML, "{\"run\": [\"\xff\xfe\"], \"gpus\": 1, \"\xff\": 1}"), 400,
       "invalid UTF-8 in a spec: 400");
    ok(is_error_body(400), "and the error body is still JSON");
    is(req_full("POST", "/v1/jobs", ML, "{\"run\": [\"tr", 1), 413, "oversized body: 413");
    ok(is_error_body(413), "413 body is an error object");
    is(req_full("POST", "/v1/jobs", NULL, "{", 1), 401, "oversized body without a token: 401");
}

static void test_submit_and_get(void)
{
    const char *id = submit(ML, "{\"name\": \"train\", \"run\": [\"true\"], \"gpus\": \"A100:2\"}");
    ok(strncmp(id, "j-", 2) == 0, "submit: 201 with an id (%s)", id);
    is_str(str("state"), "queued", "submit says queued");
    char path[96];
    snprintf(path, sizeof(path), "/v1/jobs/%s", id);
    is(req("GET", path, ML, NULL), 200, "GET the job");
    is_str(str("id"), id, "it has its id");
    is_str(str("team"), "ml", "filed under the token's team");
    is_str(str("name"), "train", "and its name");
    ok(json_is_object(json_object_get(J, "spec")), "GET has the spec");
    is(req("GET", path, BIO, NULL), 404, "another team's job: 404");
    is(req("GET", path, ADMIN, NULL), 200, "admin sees it");
    snprintf(path, sizeof(path), "/v1/jobs/%s/explain", id);
    is(req("GET", path, ML, NULL), 200, "explain: 200");
    ok(json_is_array(json_object_get(J, "candidates")), "explain has candidates");
    is(req("GET", path, BIO, NULL), 404, "explain of another team's job: 404");
    snprintf(path, sizeof(path), "/v1/jobs/%s/logs", id);
    is(req("GET", path, ML, NULL), 200, "logs of a queued job: 200");
    is_str(R.content_type, "text/plain", "logs are text/plain");
    is(R.body_len, 0, "logs are empty");
    is_str(R.offset, "0", "X-Spillway-Offset: 0");
    is_str(R.job_state, "queued", "X-Spillway-Job-State: queued");
    snprintf(path, sizeof(path), "/v1/jobs/%s/logs?stream=err&offset=0", id);
    is(req("GET", path, ML, NULL), 200, "stderr from 0: 200");
    snprintf(path, sizeof(path), "/v1/jobs/%s/logs?stream=both", id);
    is(req("GET", path, ML, NULL), 400, "stream=both: 400");
    snprintf(path, sizeof(path), "/v1/jobs/%s/logs?offset=-1", id);
    is(req("GET", path, ML, NULL), 400, "offset=-1: 400");
    snprintf(path, sizeof(path), "/v1/jobs/%s/logs", id);
    is(req("GET", path, BIO, NULL), 404, "another team's logs: 404");
}

/* A team name one byte over the router's limit. */
#define TEAM_129 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static void test_list(void)
{
    submit(ML, "run: [true]\ngpus: 1\n");
    submit(BIO, "run: [true]\ngpus: 1\n");
    submit(ADMIN, "run: [true]\ngpus: 1\nteam: bio\n");
    is(req("GET", "/v1/jobs", ADMIN, NULL), 200, "admin lists");
    size_t all = njobs();
    ok(all >= 4, "admin sees every job (%zu)", all);
    ok(json_is_null(json_object_get(J, "next_after")), "one page: next_after is null");
    is(req("GET", "/v1/jobs", ML, NULL), 200, "ml lists");
    ok(njobs() >= 2 && njobs() < all && all_team("ml"), "ml sees only ml jobs (%zu)", njobs());
    is(req("GET", "/v1/jobs?team=bio", BIO, NULL), 200, "bio lists its own team");
    ok(njobs() == 2 && all_team("bio"), "bio sees its 2 jobs (%zu)", njobs());
    is(req("GET", "/v1/jobs?team=ml", BIO, NULL), 403, "bio listing ml: 403");
    is(req("GET", "/v1/jobs?team=bio", ADMIN, NULL), 200, "admin filters by team");
    ok(njobs() == 2 && all_team("bio"), "admin sees bio's 2 jobs");
    is(req("GET", "/v1/jobs?state=queued", ADMIN, NULL), 200, "state=queued");
    is(njobs(), all, "every job is queued");
    is(req("GET", "/v1/jobs?state=running", ADMIN, NULL), 200, "state=running");
    is(njobs(), 0, "none is running");
    is(req("GET", "/v1/jobs?state=&team=&after=&limit=", ADMIN, NULL), 200,
       "empty parameters are not given");
    is(njobs(), all, "and list everything");
    is(req("GET", "/v1/jobs?limit=2", ADMIN, NULL), 200, "limit=2");
    is(njobs(), 2, "gives 2");
    json_int_t next = json_integer_value(json_object_get(J, "next_after"));
    ok(next > 0, "next_after is a seq (%lld)", (long long)next);
    char path[256];
    snprintf(path, sizeof(path), "/v1/jobs?limit=10000&after=%lld", (long long)next);
    is(req("GET", path, ADMIN, NULL), 200, "the next page");
    is(njobs(), all - 2, "has the rest");

    static const char *const bad[] = {
        "state=bogus", "limit=0", "limit=10001", "limit=abc", "limit=-1", "limit=1.5",
        "after=-1", "after=x", "after=99999999999999999999", "colour=red", "limit=1&limit=2",
        "team=" TEAM_129, NULL,
    };
    for (const char *const *b = bad; *b; b++) {
        snprintf(path, sizeof(path), "/v1/jobs?%s", *b);
        int st = req("GET", path, ADMIN, NULL);
        is(st, 400, "?%.20s: 400 (%s)", *b, msg());
    }
    is(req("GET", "/v1/jobs?limit", ADMIN, NULL), 200, "?limit with no value is not given");
    is(req("GET", "/v1/pools?x=1", ADMIN, NULL), 400, "a parameter on /v1/pools: 400");
    is(req("GET", "/healthz?x=1", NULL, NULL), 200, "healthz ignores its query");
}

static void test_cancel(void)
{
    const char *id = submit(ML, "run: [sleep, '100']\ngpus: 1\n");
    char path[96];
    snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
    is(req("POST", path, BIO, NULL), 404, "bio cannot cancel ml's job: 404");
    is(req("POST", path, ML, NULL), 200, "cancel a queued job: 200");
    is_str(str("state"), "cancelled", "it is cancelled at once");
    is(req("POST", path, ML, NULL), 409, "cancel again: 409");
    ok(is_error_body(409), "409 body is an error object");
    snprintf(path, sizeof(path), "/v1/jobs?state=cancelled");
    is(req("GET", path, ML, NULL), 200, "list cancelled");
    is(njobs(), 1, "one cancelled job");
}

/* The audit log through the router: mutating calls, refusals included,
 * by token name; GET /v1/audit is admin only and validates its query. */
static void test_audit(void)
{
    const char *id = submit(ML, "run: [sleep, '100']\ngpus: 1\n");
    char path[96], target[64];
    snprintf(target, sizeof(target), "%s", id ? id : "");
    snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", target);
    is(req("POST", path, BIO, NULL), 404, "bio cancels ml's job: 404");
    is(req("POST", path, "Bearer unknown-unknown-unknown", NULL), 401, "unknown token: 401");
    is(req("POST", path, ML, NULL), 200, "ml cancels it");
    is(req("GET", "/v1/audit", ML, NULL), 403, "a team token cannot read the audit log");
    is(req("GET", "/v1/audit?since=abc", ADMIN, NULL), 400, "since must be a number");
    is(req("GET", "/v1/audit?limit=0", ADMIN, NULL), 400, "limit 0: 400");
    is(req("GET", "/v1/audit?limit=4", ADMIN, NULL), 200, "admin reads the newest 4");
    json_t *e = json_object_get(J, "entries");
    is((long)json_array_size(e), 4, "four entries");
    static const struct {
        const char *action, *token;
        int status;
    } want[] = {{"cancel", "ml-1", 200}, {"cancel", NULL, 401}, {"cancel", "bio-1", 404},
                {"submit", "ml-1", 201}};
    for (size_t k = 0; k < 4; k++) {
        json_t *x = json_array_get(e, k);
        const char *tok = json_string_value(json_object_get(x, "token"));
        ok(x && strcmp(json_string_value(json_object_get(x, "action")), want[k].action) == 0 &&
               (want[k].token ? tok && strcmp(tok, want[k].token) == 0 : tok == NULL) &&
               json_integer_value(json_object_get(x, "status")) == want[k].status &&
               strcmp(json_string_value(json_object_get(x, "target")), target) == 0,
           "entry %zu: %s by %s on %s answered %d", k, want[k].action,
           want[k].token ? want[k].token : "(no name)", target, want[k].status);
    }
    ok(!strstr(R.body, SECRET), "no secret in the log");
    is(req("GET", "/v1/audit?team=bio", ADMIN, NULL), 200, "?team=bio");
    e = json_object_get(J, "entries");
    ok(json_array_size(e) >= 1 &&
           strcmp(json_string_value(json_object_get(json_array_get(e, 0), "team")), "bio") == 0,
       "bio's refused cancel only");
    is(req("GET", "/v1/audit?since=999999999999", ADMIN, NULL), 400, "since past 1e11: 400");
}

static void test_capacity_and_admin(void)
{
    is(req("GET", "/v1/pools", ML, NULL), 200, "pools: 200");
    json_t *pools = json_object_get(J, "pools");
    ok(json_array_size(pools) == 1, "one pool");
    is(json_integer_value(json_object_get(json_array_get(pools, 0), "gpus")), 4, "of 4 GPUs");
    is(req("GET", "/v1/costs", ML, NULL), 200, "costs: 200");
    ok(json_is_array(json_object_get(J, "teams")), "costs has teams");
    ok(json_is_string(json_object_get(J, "period")) && json_is_true(json_object_get(J, "current")),
       "costs default to the current period");
    is(req("GET", "/v1/costs?period=2020-02", ML, NULL), 200, "costs of a past month: 200");
    is_str(json_string_value(json_object_get(J, "period")), "2020-02", "its label");
    is_double(json_number_value(json_object_get(J, "period_start_ts")), 1580515200, 0,
              "it starts on 2020-02-01 UTC");
    ok(json_is_false(json_object_get(J, "current")), "and is not current");
    is(req("GET", "/v1/costs?period=2020-W09", ML, NULL), 200, "costs of an ISO week: 200");
    is_str(json_string_value(json_object_get(J, "period_kind")), "week", "a week");
    is(req("GET", "/v1/costs?period=last-month", ML, NULL), 400, "a period that does not parse: 400");
    ok(is_error_body(400), "400 body is an error object");
    is(req("GET", "/v1/costs?month=2020-02", ML, NULL), 400, "an unknown query key: 400");
    is(req("POST", "/v1/admin/instances/emu-i-000001/preempt", ML, NULL), 403,
       "preempt with a team token: 403");
    is(req("POST", "/v1/admin/instances/emu-i-999999/preempt", ADMIN, NULL), 404,
       "preempt an unknown instance: 404");
    is(req("POST", "/v1/admin/instances/bad$id/preempt", ADMIN, NULL), 404,
       "preempt a malformed id: 404");

    /* on-prem nodes out of service and back */
    is(req("POST", "/v1/admin/nodes/local/0/down", ML, NULL), 403, "node down with a team token: 403");
    is(req("POST", "/v1/admin/nodes/dc9/0/down", ADMIN, NULL), 404, "an unknown pool: 404");
    ok(strstr(msg(), "no on-prem pool 'dc9'") != NULL, "its message names the pool");
    is(req("POST", "/v1/admin/nodes/local/1/down", ADMIN, NULL), 404, "an index past the pool: 404");
    ok(strstr(msg(), "its nodes are 0 to 0") != NULL, "its message gives the range");
    is(req("POST", "/v1/admin/nodes/local/x/down", ADMIN, NULL), 404, "an index that is no number: 404");
    is(req("POST", "/v1/admin/nodes/local/b$d/down", ADMIN, NULL), 404, "a malformed index: 404");
    is(req("GET", "/v1/admin/nodes/local/0/down", ADMIN, NULL), 405, "GET a node action: 405");
    is(req("POST", "/v1/admin/nodes/local/0/down", ADMIN, NULL), 200, "node local/0 down: 200");
    ok(!strcmp(str("pool"), "local") && json_integer_value(json_object_get(J, "node")) == 0 &&
       !strcmp(str("state"), "down") && json_is_array(json_object_get(J, "jobs_interrupted")),
       "the answer is the node, down, with the jobs it stopped");
    is(req("POST", "/v1/admin/nodes/local/0/down", ADMIN, NULL), 409, "down again: 409");
    req("GET", "/v1/pools", ADMIN, NULL);
    json_t *down = json_object_get(json_array_get(json_object_get(J, "pools"), 0), "nodes_down");
    ok(json_array_size(down) == 1 && json_integer_value(json_array_get(down, 0)) == 0,
       "pools lists the node as down");
    is(req("POST", "/v1/admin/nodes/local/0/up", ADMIN, NULL), 200, "node local/0 up: 200");
    is_str(str("state"), "up", "it is up");
    is(req("POST", "/v1/admin/nodes/local/0/up", ADMIN, NULL), 409, "up again: 409");
    req("GET", "/v1/pools", ADMIN, NULL);
    down = json_object_get(json_array_get(json_object_get(J, "pools"), 0), "nodes_down");
    ok(json_is_array(down) && json_array_size(down) == 0, "no node is down any more");
}

static void test_open_daemon(void)
{
    spw_config_t cfg;
    spw_daemon_t *d = make_daemon(&cfg, "open", "cloud:\n  price_usd_per_gpu_h: 2.5\n", "");
    spw_daemon_t *keep = swap_daemon(d, "a daemon with no tokens and a cloud");
    if (!d)
        return;
    is(req("GET", "/v1/jobs", NULL, NULL), 200, "no tokens: no header needed");
    is(req("GET", "/v1/jobs", "Bearer whatever-whatever", NULL), 200, "and any header is fine");
    is(req("POST", "/v1/admin/instances/emu-i-000009/preempt", NULL, NULL), 404,
       "the caller is admin (404, not 403)");
    ok(strncmp(submit(NULL, "{\"run\": [\"true\"], \"gpus\": 8}"), "j-", 2) == 0,
       "an 8-GPU job goes to the cloud");
    spw_daemon_turn(d);  /* places it: emulated instances start booting */
    is(req("POST", "/v1/admin/instances/emu-i-000001/preempt", NULL, NULL), 200,
       "preempt one of its instances: 200");
    is_str(str("id"), "emu-i-000001", "the answer is the instance");
    D = keep;
    spw_error_t err;
    ok(spw_http_start(d, "0.0.0.0:0", 4096, &err) == NULL
       && strstr(err.text, "refusing") != NULL,
       "an open API will not listen on 0.0.0.0 (%s)", err.text);
    spw_daemon_destroy(d);
    spw_config_free(&cfg);
}

/* ---- http tests --------------------------------------------------------- */

static int connect_to(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads one response (headers and a Content-Length body) from fd into buf
 * (NUL-terminated).  Returns the status, or -1. */
static int read_response(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    char *body = NULL;
    long want = -1;
    buf[0] = '\0';
    for (;;) {
        if (!body && (body = strstr(buf, "\r\n\r\n"))) {
            body += 4;
            const char *cl = strcasestr(buf, "\r\nContent-Length:");
            want = cl ? strtol(cl + 17, NULL, 10) : 0;
        }
        if (body && (long)(len - (size_t)(body - buf)) >= want)
            break;
        if (len + 1 >= cap)
            return -1;
        ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        buf[len] = '\0';
    }
    return (int)strtol(buf + 9, NULL, 10);
}

/* One request on a fresh connection; the response into buf. */
static int http_once(int port, const char *request, char *buf, size_t cap)
{
    int fd = connect_to(port);
    buf[0] = '\0';
    if (fd < 0)
        return -1;
    int st = send_all(fd, request, strlen(request)) < 0 ? -1 : read_response(fd, buf, cap);
    close(fd);
    return st;
}

/* One client of the concurrency test: N submits on one keep-alive
 * connection. */
typedef struct client {
    int port;                   /* server port */
    int created;                /* 201 answers received */
} client_t;

#define CLIENT_SUBMITS 5

static void *client_main(void *arg)
{
    client_t *c = arg;
    static const char body[] = "{\"run\": [\"true\"], \"gpus\": 1}";
    char req[512], buf[4096];
    snprintf(req, sizeof(req),
             "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\nAuthorization: %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             ML, strlen(body), body);
    int fd = connect_to(c->port);
    for (int i = 0; fd >= 0 && i < CLIENT_SUBMITS; i++) {
        memset(buf, 0, sizeof(buf));
        if (send_all(fd, req, strlen(req)) < 0 || read_response(fd, buf, sizeof(buf)) != 201)
            break;
        c->created++;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void test_http(void)
{
    spw_error_t err;
    char buf[65536];
    spw_http_t *h = spw_http_start(D, "127.0.0.1:0", 4096, &err);
    ok(h != NULL, "http server on 127.0.0.1:0 (%s)", h ? "" : err.text);
    if (!h)
        return;
    int port = spw_http_port(h);
    ok(port > 0, "bound port %d", port);

    is(http_once(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\nConnection: close\r\n\r\n", buf,
                 sizeof(buf)), 200, "GET /healthz over HTTP");
    ok(strcasestr(buf, "Content-Type: application/json") != NULL, "JSON content type");
    is(http_once(port, "GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\n\r\n", buf, sizeof(buf)), 401,
       "no token over HTTP: 401");
    ok(strcasestr(buf, "WWW-Authenticate: Bearer") != NULL, "with WWW-Authenticate");
    is(http_once(port, "DELETE /v1/pools HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\n\r\n", buf, sizeof(buf)), 405,
       "wrong method over HTTP: 405");
    ok(strcasestr(buf, "Allow: GET, HEAD") != NULL, "with Allow");
    is(http_once(port, "GET /v1/jobs?state=queued&limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\n"
                       "Authorization: " ADMIN "\r\n\r\n", buf, sizeof(buf)), 200,
       "query parameters reach the router");
    is(http_once(port, "GET /v1/jobs?limit=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\n"
                       "Authorization: " ADMIN "\r\n\r\n", buf, sizeof(buf)), 400,
       "and are validated");
    is(http_once(port, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\nAuthorization: " ML "\r\n"
                       "Content-Length: 1000000\r\n\r\n{", buf, sizeof(buf)), 413,
       "Content-Length over the limit: 413 before the body is sent");

    /* A chunked upload over the limit is read, dropped and answered 413. */
    char big[8192];
    memset(big, 'x', sizeof(big));
    int fd = connect_to(port);
    char head[512];
    snprintf(head, sizeof(head), "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\nAuthorization: %s\r\n"
             "Transfer-Encoding: chunked\r\n\r\n%zx\r\n", ML, sizeof(big));
    int sent = fd >= 0 && send_all(fd, head, strlen(head)) == 0
               && send_all(fd, big, sizeof(big)) == 0 && send_all(fd, "\r\n0\r\n\r\n", 7) == 0;
    is(sent ? read_response(fd, buf, sizeof(buf)) : -1, 413, "chunked upload over the limit: 413");
    if (fd >= 0)
        close(fd);

    /* Logs headers. */
    const char *id = submit(ML, "run: [true]\ngpus: 1\n");
    char rq[512];
    snprintf(rq, sizeof(rq), "GET /v1/jobs/%s/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Spillway-Client: test\r\nAuthorization: %s\r\n\r\n",
             id, ML);
    is(http_once(port, rq, buf, sizeof(buf)), 200, "logs over HTTP");
    ok(strcasestr(buf, "X-Spillway-Offset: 0") && strcasestr(buf, "X-Spillway-Job-State: queued"),
       "with X-Spillway-Offset and X-Spillway-Job-State");

    /* Eight keep-alive clients submitting at once. */
    pthread_t th[8];
    client_t cl[8];
    for (int i = 0; i < 8; i++) {
        cl[i] = (client_t){.port = port};
        pthread_create(&th[i], NULL, client_main, &cl[i]);
    }
    int created = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        created += cl[i].created;
    }
    is(created, 8 * CLIENT_SUBMITS, "8 keep-alive clients: every submit got 201");

    is(http_once(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", buf, sizeof(buf)),
       200, "metrics over HTTP");
    ok(strstr(buf, "spillway_http_requests_total{code=\"4") != NULL,
       "requests are counted by status");
    ok(strcasestr(buf, "\r\nX-Content-Type-Options: nosniff\r\n") &&
       strcasestr(buf, "\r\nX-Frame-Options: DENY\r\n") &&
       strcasestr(buf, "\r\nContent-Security-Policy: default-src 'none'"),
       "every answer says nosniff, X-Frame-Options: DENY and a CSP allowing nothing");
    is(http_once(port, "GET /ui/ HTTP/1.1\r\nHost: localhost\r\n\r\n", buf, sizeof(buf)), 200,
       "the dashboard with Host: localhost");
    ok(strcasestr(buf, "\r\nContent-Security-Policy: default-src 'none'; script-src 'self'") &&
       strcasestr(buf, "frame-ancestors 'none'") && strcasestr(buf, "X-Frame-Options: DENY"),
       "the dashboard's page has its own CSP (its scripts only, never framed)");
    is(http_once(port, "GET /healthz HTTP/1.1\r\nHost: evil.example:8470\r\n\r\n", buf,
                 sizeof(buf)), 421, "a Host the daemon does not serve (DNS rebinding): 421");
    ok(strstr(buf, "daemon.allowed_hosts") != NULL, "... naming daemon.allowed_hosts");
    is(http_once(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", buf, sizeof(buf)),
       200, "an IP address as Host is served");
    is(http_once(port, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " ML "\r\n"
                       "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}", buf,
                 sizeof(buf)), 415, "a text/plain submit (a form on another site) over HTTP: 415");

    char where[64];
    snprintf(where, sizeof(where), "127.0.0.1:%d", port);
    spw_http_t *h2 = spw_http_start(D, where, 4096, &err);
    ok(!h2 && strstr(err.text, "Address already in use") && strstr(err.text, where),
       "a taken port: '%s'", err.text);
    spw_http_stop(h2);
    ok(spw_http_start(D, "nohost", 4096, &err) == NULL && strstr(err.text, "HOST:PORT"),
       "a malformed address: '%s'", err.text);
    ok(spw_http_start(D, "example.com:80", 4096, &err) == NULL, "a host name other than localhost");
    spw_http_stop(h);
    spw_http_stop(NULL);
    ok(1, "stop, and stop(NULL)");
}

static void rm_rf(const char *d)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    if (system(cmd) != 0)
        diag("could not remove %s", d);
}

int main(void)
{
    spw_config_t cfg;
    snprintf(dir, sizeof(dir), "/tmp/spw-test-router-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    D = make_daemon(&cfg, "state", "",
                    "  tokens:\n"
                    "    - {token: ml-token-0123456789abcdef, team: ml}\n"
                    "    - {token: bio-token-0123456789abcdef, team: bio}\n"
                    "    - {token: admin-token-0123456789abcdef, admin: true}\n");
    ok(D != NULL, "a real daemon over a temporary state dir");
    if (D) {
        test_open_endpoints();
        test_auth();
        test_forgery();
        test_metrics_auth();
        test_paths();
        test_submit_errors();
        test_submit_and_get();
        test_list();
        test_cancel();
        test_audit();
        test_capacity_and_admin();
        test_open_daemon();
        test_http();
        spw_daemon_destroy(D);
        spw_config_free(&cfg);
    }
    spw_route_resp_clear(&R);
    json_decref(J);
    rm_rf(dir);
    return done_testing();
}
