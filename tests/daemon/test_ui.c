/* test_ui.c: the dashboard's routes (daemon/router) and its sampler
 * (daemon/ui) against a real daemon over a temporary state dir, never
 * started, so the sampler is driven by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <unistd.h>

#include <jansson.h>

#include "config/config.h"
#include "daemon/daemon.h"
#include "daemon/router.h"
#include "daemon/ui.h"
#include "tap.h"

#define ADMIN "Bearer admin-token-0123456789abcdef"

static spw_daemon_t *D;
static spw_route_resp_t R;

static int get(const char *path, const char *auth)
{
    spw_route_req_t rq = {.method = "GET", .path = path, .authorization = auth};
    spw_route_resp_clear(&R);
    spw_route(D, &rq, &R);
    return R.status;
}

/* t of each sample of a series answer, into t[] (at most max); the count. */
static size_t times(json_t *s, double *t, size_t max)
{
    size_t i, n = 0;
    json_t *x;
    json_array_foreach(json_object_get(s, "samples"), i, x)
        if (n < max)
            t[n++] = json_number_value(json_object_get(x, "t"));
    return n;
}

/* The series' tiers and their copy in the state store: two days of
 * samples an hour apart, then 10 minutes of samples 20 s apart, ending
 * now; then a sampler made again over the same store. */
static void history(void)
{
    static double t[200];
    spw_caller_t admin = {.admin = 1}, wall = {.admin = 1, .viewer = 1};
    double n0 = floor((double)time(NULL) / 600) * 600 - 600, base = n0 - 2 * 86400;
    spw_ui_t *u = spw_ui_create(D, NULL, 0);
    for (int i = 0; i <= 48; i++)
        spw_ui_record(u, base + 3600.0 * i);
    for (int i = 1; i <= 30; i++)
        spw_ui_record(u, n0 + 20.0 * i);
    double newest = n0 + 600;
    json_t *s = spw_ui_series(u, &admin, 3600);
    size_t n = times(s, t, 200);
    ok(n == 31 && t[0] == n0 && t[n - 1] == newest,
       "range 1 h: the last hour's 31 samples, from tier 0 (%zu)", n);
    json_t *tl = json_object_get(s, "tiers");
    json_int_t h[3];
    for (int k = 0; k < 3; k++)
        h[k] = json_integer_value(json_object_get(json_array_get(tl, k), "held"));
    ok(h[0] == 31 && h[1] == 24 + 10 && h[2] == 49 + 1,
       "tier 0 holds the last hour, tier 1 the last day one a minute, tier 2 all one each "
       "10 min (%lld %lld %lld)", (long long)h[0], (long long)h[1], (long long)h[2]);
    ok(strcmp(json_string_value(json_object_get(json_object_get(s, "caller"), "role")), "admin") == 0 &&
       json_is_true(json_object_get(json_object_get(s, "caller"), "may_cancel")),
       "the caller is an admin, who may cancel");
    ok(json_is_null(json_object_get(json_object_get(s, "caller"), "user")),
       "a static token's caller names no OIDC user");
    json_decref(s);
    s = spw_ui_series(u, &wall, 8 * 86400);
    n = times(s, t, 200);
    int sorted = 1;
    for (size_t i = 1; i < n; i++)
        sorted &= t[i] > t[i - 1];
    ok(n == 25 + 23 + 31 && t[0] == base && t[n - 1] == newest && sorted,
       "range 8 d: two days oldest first, each span from the finest tier holding it (%zu)", n);
    ok(strcmp(json_string_value(json_object_get(json_object_get(s, "caller"), "role")), "viewer") == 0 &&
       json_is_false(json_object_get(json_object_get(s, "caller"), "may_cancel")),
       "a viewer may not cancel");
    spw_ui_destroy(u);
    u = spw_ui_create(D, NULL, 0);
    json_t *s2 = spw_ui_series(u, &wall, 8 * 86400);
    ok(json_equal(json_object_get(s, "samples"), json_object_get(s2, "samples")),
       "a sampler made again reads the same history from the state store");
    json_decref(s);
    json_decref(s2);
    spw_ui_destroy(u);
}

int main(void)
{
    char dir[64] = "/tmp/spw-test-ui-XXXXXX", state[128], yaml[1024];
    spw_error_t err;
    spw_config_t cfg;
    if (!mkdtemp(dir))
        return 1;
    snprintf(state, sizeof(state), "%s/state", dir);
    int n = snprintf(yaml, sizeof(yaml),
                     "onprem:\n"
                     "  - {name: local, nodes: 1, gpus_per_node: 4, gpu: A100, cost_usd_per_gpu_h: 1.0}\n"
                     "teams:\n  - {name: ml, monthly_usd: 100}\n  - {name: bio, monthly_usd: 10}\n"
                     "daemon:\n  state_dir: %s\n  gpus: slots\n  sample_s: 2\n  share_run_as: true\n"
                     "  idle_gpu: {threshold_pct: 10, window_s: 60, action: stop}\n"
                     "  tokens:\n"
                     "    - {token: ml-token-0123456789abcdef, team: ml}\n"
                     "    - {token: admin-token-0123456789abcdef, admin: true}\n", state);
    if (spw_config_load_mem(&cfg, "test.yaml", yaml, (size_t)n, dir, &err) < 0) {
        diag("config: %s", err.text);
        return 1;
    }
    ok(cfg.daemon.sample_s == 2 && cfg.daemon.idle_threshold_pct == 10 &&
       cfg.daemon.idle_window_s == 60 && cfg.daemon.idle_stop == 1,
       "daemon.sample_s and daemon.idle_gpu are read");
    spw_daemon_opts_t opts = {.state_dir = state, .quiet = 1};
    D = spw_daemon_create(&cfg, &opts, &err);
    ok(D != NULL, "a real daemon over a temporary state dir");
    if (!D)
        return done_testing();

    is(get("/ui", NULL), 200, "GET /ui needs no token");
    ok(strncmp(R.content_type, "text/html", 9) == 0 && strstr(R.body, "/ui/app.js"),
       "it is the dashboard's HTML, which loads /ui/app.js");
    is(get("/ui/", NULL), 200, "GET /ui/ too");
    ok(strstr(R.csp ? R.csp : "", "connect-src 'self';") != NULL,
       "the page's policy lets it fetch from the daemon only (no daemon.oidc)");
    is(get("/ui/app.js", NULL), 200, "GET /ui/app.js");
    ok(strncmp(R.content_type, "text/javascript", 15) == 0 && strstr(R.body, "Bearer"),
       "the script, which sends the token as Bearer");
    const spw_ui_asset_t *a = spw_ui_asset("app.js");
    ok(a && (size_t)a->len == R.body_len && memcmp(a->data, R.body, R.body_len) == 0,
       "the body is the embedded file, byte for byte");
    is(get("/ui/style.css", NULL), 200, "GET /ui/style.css");
    is(get("/ui/nope.js", NULL), 404, "an unknown file is 404");
    is(get("/ui/.hidden", NULL), 404, "a name starting with '.' is 404");
    is(get("/ui/report.html", NULL), 404, "the report template is not served");
    ok(spw_ui_asset("report.html") && spw_ui_asset("report.js"), "... though it is embedded");
    is(get("/ui/a/b", NULL), 404, "a deeper path is 404");
    spw_route_req_t post = {.method = "POST", .path = "/ui"};
    spw_route_resp_clear(&R);
    spw_route(D, &post, &R);
    is(R.status, 405, "POST /ui is 405");

    is(get("/v1/ui/login", NULL), 200, "GET /v1/ui/login needs no token");
    ok(strcmp(R.body, "{\"login\":false}\n") == 0, "... and says there is no login: %s", R.body);

    is(get("/v1/ui/series", NULL), 401, "the series needs a token");
    is(get("/v1/ui/series", ADMIN), 503, "... and a running sampler (this daemon is not started)");
    is(get("/v1/ui/telemetry", ADMIN), 503, "the telemetry too");

    /* The sampler, by hand. */
    spw_ui_t *u = spw_ui_create(D, &cfg.daemon, 0);
    spw_ui_sample(u, 1000.0);
    spw_ui_sample(u, 1002.0);
    spw_caller_t admin = {.admin = 1}, ml = {.team = "ml"};
    json_t *s = spw_ui_series(u, &admin, 3600);
    json_t *samples = json_object_get(s, "samples");
    is(json_array_size(samples), 2, "two samples kept");
    json_t *s0 = json_array_get(samples, 0);
    json_t *p0 = json_array_get(json_object_get(s0, "pools"), 0);
    ok(json_real_value(json_object_get(s0, "t")) == 1000.0 &&
       strcmp(json_string_value(json_object_get(p0, "name")), "local") == 0 &&
       json_number_value(json_object_get(p0, "free")) == 4 &&
       json_number_value(json_object_get(p0, "busy")) == 0,
       "a sample has the time and pool local's 4 free GPUs");
    is(json_array_size(json_object_get(s0, "teams")), 2, "the admin sees both teams' spend");
    ok(json_number_value(json_object_get(s, "interval_s")) == 2, "interval_s is daemon.sample_s");
    json_decref(s);
    s = spw_ui_series(u, &ml, 3600);
    json_t *t = json_object_get(json_array_get(json_object_get(s, "samples"), 0), "teams");
    ok(json_array_size(t) == 1 &&
       strcmp(json_string_value(json_object_get(json_array_get(t, 0), "team")), "ml") == 0,
       "a team sees its own team's row only");
    json_decref(s);
    char *m = spw_ui_metrics(u, 1);
    ok(strstr(m, "spillway_queue_oldest_wait_seconds 0.000\n") &&
       strstr(m, "spillway_cloud_instances_idle 0\n"), "the sampler's metrics");
    free(m);
    json_t *tel = spw_ui_telemetry(u, &admin);
    ok(json_is_object(json_object_get(tel, "idle_gpu")) &&
       strcmp(json_string_value(json_object_get(json_object_get(tel, "idle_gpu"), "action")),
              "stop") == 0, "the telemetry carries the idle_gpu settings");
    json_decref(tel);
    spw_ui_destroy(u);
    spw_ui_destroy(NULL);
    history();

    spw_route_resp_clear(&R);
    spw_daemon_destroy(D);
    spw_config_free(&cfg);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
