/* fuzz_router.c: libFuzzer driver for the HTTP API router over one real
 * daemon (never started, so submits commit inline), turned every few inputs
 * and made afresh every RECYCLE_EVERY inputs.
 *
 * Input framing (text lines, '\n'):
 *   line 1: METHOD TARGET, TARGET = PATH[?QUERY]; a leading '!' marks the
 *           body as over max_body_bytes
 *   line 2: the Authorization header; empty = none; "@team" and "@admin"
 *           stand for "Bearer " and the fuzz team or admin token
 *   rest:   the body
 * QUERY is split on '&' and then on the first '=' (a key without '=' has a
 * NULL value), without percent-decoding: the router sees decoded text.
 *
 * Every response must have a known status, a NUL-terminated body, valid
 * JSON when it says so, and an error must not quote a token unless the
 * input has one outside the Authorization line. */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "daemon/daemon.h"
#include "daemon/router.h"

#define TEAM_TOKEN "fuzz-team-token-0123456789"
#define ADMIN_TOKEN "fuzz-admin-token-0123456789"
#define MAX_QUERY 16         /* query pairs kept; the rest are dropped */
#define TURN_EVERY 8         /* inputs between two daemon turns */
#define RECYCLE_EVERY 20000  /* inputs before the daemon is made afresh, so
                                that lists stay short and memory bounded */

/* Jobs must never really run under a fuzzer (a mutated "run:" could be any
 * command), so exec always fails here: the local backend then reports a
 * failed launch, which is a path worth fuzzing too.  Symbols defined in the
 * executable win over libc's for every object linked into it. */
int execve(const char *path, char *const argv[], char *const envp[])
{
    (void)path;
    (void)argv;
    (void)envp;
    errno = EACCES;
    return -1;
}

static spw_config_t cfg;          /* borrowed by the daemon until exit */
static spw_daemon_t *daemon_;     /* made on the first input */
static char state_dir[64];        /* mkdtemp'd; removed at exit */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Destroys the daemon and removes its state dir (at exit, and to recycle). */
static void cleanup(void)
{
    if (!daemon_)
        return;
    spw_daemon_destroy(daemon_);
    daemon_ = NULL;
    spw_config_free(&cfg);
    nftw(state_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static spw_daemon_t *get_daemon(void)
{
    static int registered;
    if (daemon_)
        return daemon_;
    snprintf(state_dir, sizeof(state_dir), "/tmp/spw-fuzz-router-XXXXXX");
    if (!mkdtemp(state_dir))
        abort();
    char yaml[1024];
    int n = snprintf(yaml, sizeof(yaml),
                     "onprem:\n"
                     "  - {name: local, nodes: 1, gpus_per_node: 4, gpu: A100,"
                     " cost_usd_per_gpu_h: 1.0}\n"
                     "cloud:\n"
                     "  price_usd_per_gpu_h: 2.5\n"
                     "daemon:\n"
                     "  state_dir: %s\n"
                     "  gpus: slots\n"
                     "  kill_grace_s: 0\n"
                     "  tokens:\n"
                     "    - {token: " TEAM_TOKEN ", team: ml}\n"
                     "    - {token: " ADMIN_TOKEN ", admin: true}\n",
                     state_dir);
    spw_error_t err;
    if (spw_config_load_mem(&cfg, "fuzz.yaml", yaml, (size_t)n, "/", &err) < 0) {
        fprintf(stderr, "fuzz_router: config: %s\n", err.text);
        abort();
    }
    spw_daemon_opts_t opts = {.state_dir = state_dir, .quiet = 1};
    daemon_ = spw_daemon_create(&cfg, &opts, &err);
    if (!daemon_) {
        fprintf(stderr, "fuzz_router: daemon: %s\n", err.text);
        abort();
    }
    if (!registered++)
        atexit(cleanup);
    return daemon_;
}

/* Splits q (modified) into key/value pairs in kv (2 * MAX_QUERY + 1). */
static void split_query(char *q, const char **kv)
{
    size_t n = 0;
    for (char *part = q; part && n < MAX_QUERY;) {
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
    kv[2 * n] = NULL;
}

/* 1 when the n bytes at s may spell a fuzz token: literally, or through
 * an escape ('\\') that the spec parser decodes. */
static int has_token(const char *s, size_t n)
{
    return memmem(s, n, TEAM_TOKEN, strlen(TEAM_TOKEN))
           || memmem(s, n, ADMIN_TOKEN, strlen(ADMIN_TOKEN)) || memchr(s, '\\', n);
}

/* Aborts when the response breaks the router's promises.  echo_ok: a
 * token was written outside the Authorization line (in the path, query or
 * body), where an error message may quote it back.  Successful answers are
 * not checked for tokens: they show jobs that earlier inputs may have named
 * after one. */
static void check(const spw_route_resp_t *out, int echo_ok)
{
    static const int known[] = {200, 201, 400, 401, 403, 404, 405, 409, 413, 500, 503};
    int ok = 0;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        ok |= out->status == known[i];
    if (!ok || !out->body || out->body[out->body_len] != '\0' || !out->content_type)
        abort();
    if (strcmp(out->content_type, "application/json") == 0) {
        json_t *j = json_loadb(out->body, out->body_len, 0, NULL);
        if (!j)
            abort();
        json_decref(j);
    }
    if (out->status >= 400 && !echo_ok
        && (memmem(out->body, out->body_len, TEAM_TOKEN, strlen(TEAM_TOKEN))
            || memmem(out->body, out->body_len, ADMIN_TOKEN, strlen(ADMIN_TOKEN))))
        abort();
    if (out->status == 401 && !out->www_authenticate)
        abort();
    if (out->status == 405 && !out->allow)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned inputs;
    spw_daemon_t *d = get_daemon();

    /* Line 1 and line 2 as NUL-terminated copies; the body stays binary. */
    const char *p = (const char *)data, *end = p + size;
    const char *nl1 = memchr(p, '\n', size);
    const char *l2 = nl1 ? nl1 + 1 : end;
    const char *nl2 = memchr(l2, '\n', (size_t)(end - l2));
    const char *body = nl2 ? nl2 + 1 : end;
    char *line1 = strndup(p, (size_t)((nl1 ? nl1 : end) - p));
    char *line2 = strndup(l2, (size_t)((nl2 ? nl2 : end) - l2));

    int echo_ok = has_token(line1, strlen(line1)) || has_token(body, (size_t)(end - body));
    int too_large = line1[0] == '!';
    char *method = line1 + too_large;
    char *target = strchr(method, ' ');
    if (target)
        *target++ = '\0';
    else
        target = "";
    char *qmark = strchr(target, '?');
    const char *kv[2 * MAX_QUERY + 1] = {NULL};
    if (qmark) {
        *qmark = '\0';
        split_query(qmark + 1, kv);
    }
    const char *auth = line2[0] ? line2 : NULL;
    if (strcmp(line2, "@team") == 0)
        auth = "Bearer " TEAM_TOKEN;
    else if (strcmp(line2, "@admin") == 0)
        auth = "Bearer " ADMIN_TOKEN;

    spw_route_req_t req = {
        .method = method, .path = target, .query = kv, .authorization = auth,
        .body = body, .body_len = (size_t)(end - body), .body_too_large = too_large,
        /* as the CLI sends it, so mutating calls reach their handlers; a
         * method in lower case tries the refusal of forged calls */
        .client = method[0] >= 'A' && method[0] <= 'Z' ? "fuzz" : NULL,
    };
    spw_route_resp_t out;
    spw_route(d, &req, &out);
    check(&out, echo_ok);
    spw_route_resp_clear(&out);
    free(line1);
    free(line2);
    if (++inputs % TURN_EVERY == 0)
        spw_daemon_turn(d);
    if (inputs % RECYCLE_EVERY == 0)
        cleanup();
    return 0;
}
