/* client.c: the HTTP side of the command-line client: one libcurl easy
 * handle per process, the common options, and how the daemon's errors and
 * an unreachable daemon are reported. */
#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/client_private.h"
#include "util/error.h"

void spw_cli_common_init(spw_cli_common_t *co)
{
    const char *url = getenv("SPILLWAY_URL");
    co->url = url && *url ? url : SPW_CLI_DEFAULT_URL;
    co->token = getenv("SPILLWAY_TOKEN");
    const char *tf = getenv("SPILLWAY_TOKEN_FILE");
    co->token_file = (!co->token || !*co->token) && tf && *tf ? tf : NULL;
    co->json = 0;
}

_Noreturn void spw_cli_die_usage(const char *cmd, const char *msg)
{
    fprintf(stderr, "spillway %s: %s\n(see 'spillway %s --help')\n", cmd, msg, cmd);
    exit(SPW_CLI_EUNREACH);
}

int spw_cli_common_opt(spw_cli_common_t *co, const char *cmd, int c, const char *arg)
{
    switch (c) {
    case SPW_CLI_O_URL:
        if (!*arg)
            spw_cli_die_usage(cmd, "--url takes a URL such as http://127.0.0.1:8470");
        co->url = arg;
        return 1;
    case SPW_CLI_O_TOKEN:
        fprintf(stderr, "spillway %s: warning: --token shows the token to every local user "
                        "in `ps`; use SPILLWAY_TOKEN or --token-file FILE instead\n", cmd);
        co->token = arg;
        co->token_file = NULL;
        return 1;
    case SPW_CLI_O_TOKEN_FILE:
        if (!*arg)
            spw_cli_die_usage(cmd, "--token-file takes a file that holds the token");
        co->token_file = arg;
        co->token = NULL;
        return 1;
    case 'o':
        if (strcmp(arg, "table") == 0)
            co->json = 0;
        else if (strcmp(arg, "json") == 0)
            co->json = 1;
        else
            spw_cli_die_usage(cmd, "-o takes 'table' or 'json'");
        return 1;
    default: return 0;
    }
}

/* ---- the connection ------------------------------------------------------ */

static size_t on_body(char *data, size_t size, size_t n, void *p)
{
    spw_resp_t *r = p;
    size_t add = size * n;
    if (r->len + add + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + add + 1)
            cap *= 2;
        r->body = spw_xrealloc(r->body, cap);
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, add);
    r->len += add;
    r->body[r->len] = '\0';
    return add;
}

/* Copies header value of line "Name: value\r\n" into out when the name
 * matches; returns 1 if it did. */
static int header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return 0;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    size_t len = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
    return 1;
}

static size_t on_header(char *line, size_t size, size_t n, void *p)
{
    spw_resp_t *r = p;
    size_t len = size * n;
    char num[32];
    /* A new status line (a redirect or 100-continue) starts a new answer. */
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        r->offset = -1;
        r->job_state[0] = r->content_type[0] = '\0';
    } else if (header_value(line, len, "X-Spillway-Offset", num, sizeof(num))) {
        char *end;
        long long v = strtoll(num, &end, 10);
        r->offset = (*end || end == num || v < 0) ? -1 : v;
    } else if (!header_value(line, len, "X-Spillway-Job-State", r->job_state,
                             sizeof(r->job_state))) {
        header_value(line, len, "Content-Type", r->content_type, sizeof(r->content_type));
    }
    return len;
}

/* The token in file path: its first line, without surrounding blanks
 * (malloc'd).  Exits 2 when it cannot be read or is empty; warns when the
 * file is readable by others. */
static char *read_token_file(const char *path, const char *cmd)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "spillway: %s: cannot read the token file %s: %s\n", cmd, path,
                strerror(errno));
        exit(SPW_CLI_EUNREACH);
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & (S_IRWXG | S_IRWXO)))
        fprintf(stderr, "spillway: %s: warning: the token file %s is readable by other users; "
                        "chmod 600 %s\n", cmd, path, path);
    char buf[4200];
    size_t n = fgets(buf, sizeof(buf), f) ? strlen(buf) : 0;
    fclose(f);
    char *p = buf;
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    while (n && isspace((unsigned char)*p)) {
        p++;
        n--;
    }
    if (!n) {
        fprintf(stderr, "spillway: %s: the token file %s is empty: put the token on its first "
                        "line\n", cmd, path);
        exit(SPW_CLI_EUNREACH);
    }
    char *tok = spw_xmalloc(n + 1);
    memcpy(tok, p, n);
    tok[n] = '\0';
    explicit_bzero(buf, sizeof(buf));
    return tok;
}

void spw_client_open(spw_client_t *c, const spw_cli_common_t *co, const char *cmd)
{
    memset(c, 0, sizeof(*c));
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(c->curl = curl_easy_init())) {
        fprintf(stderr, "spillway: %s: libcurl failed to start\n", cmd);
        exit(SPW_CLI_EUNREACH);
    }
    c->cmd = cmd;
    c->url = co->url;
    c->base = spw_xstrdup(co->url);
    for (size_t n = strlen(c->base); n > 0 && c->base[n - 1] == '/'; n--)
        c->base[n - 1] = '\0';
    char *from_file = co->token_file ? read_token_file(co->token_file, cmd) : NULL;
    const char *token = from_file ? from_file : co->token;
    if (token && *token) {
        /* The token goes only into this header; nothing prints it. */
        size_t n = strlen(token) + 32;
        char *h = spw_xmalloc(n);
        snprintf(h, n, "Authorization: Bearer %s", token);
        c->auth = curl_slist_append(NULL, h);
        memset(h, 0, n);
        free(h);
        c->have_token = 1;
    }
    if (from_file) {
        explicit_bzero(from_file, strlen(from_file));
        free(from_file);
    }
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
    /* A daemon that stops answering mid-request is given up on after a
     * minute of silence rather than waited for forever. */
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "spillway-cli");
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
}

void spw_client_close(spw_client_t *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->auth);
    free(c->base);
    memset(c, 0, sizeof(*c));
    curl_global_cleanup();
}

void spw_resp_free(spw_resp_t *r)
{
    if (!r)
        return;
    free(r->body);
    memset(r, 0, sizeof(*r));
}

char *spw_client_path(spw_client_t *c, const char *prefix, const char *id, const char *suffix)
{
    char *esc = curl_easy_escape(c->curl, id, 0);
    if (!esc) {
        fprintf(stderr, "spillway: %s: out of memory\n", c->cmd);
        abort();
    }
    size_t n = strlen(prefix) + strlen(esc) + strlen(suffix) + 1;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s%s%s", prefix, esc, suffix);
    curl_free(esc);
    return p;
}

/* Prints the daemon's error: its JSON {"error": {"message"}} when it sent
 * one, else the first line of whatever it sent. */
static void print_http_error(spw_client_t *c, const spw_resp_t *r)
{
    const char *msg = NULL;
    json_t *doc = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    json_t *e = doc ? json_object_get(doc, "error") : NULL;
    if (e)
        msg = spw_cli_jstr(e, "message");
    if (msg && c->body_name && strncmp(msg, "request:", 8) == 0) {
        /* The line and column are the submitted file's: name it. */
        fprintf(stderr, "spillway: %s: %ld: %s:%s", c->cmd, r->status, c->body_name, msg + 8);
    } else if (msg) {
        fprintf(stderr, "spillway: %s: %ld: %s", c->cmd, r->status, msg);
    } else if (r->len) {
        size_t n = strcspn(r->body, "\r\n");
        fprintf(stderr, "spillway: %s: %ld: %.*s", c->cmd, r->status, (int)(n > 200 ? 200 : n),
                r->body);
    } else {
        fprintf(stderr, "spillway: %s: %ld: the daemon gave no reason", c->cmd, r->status);
    }
    if (r->status == 401)
        fprintf(stderr, c->have_token ? " (the token given was not accepted)"
                                      : " (set SPILLWAY_TOKEN, or give --token-file FILE)");
    fputc('\n', stderr);
    json_decref(doc);
}

int spw_client_request(spw_client_t *c, const char *method, const char *path,
                       const char *body, size_t body_len, const char *content_type,
                       spw_resp_t *r)
{
    memset(r, 0, sizeof(*r));
    r->offset = -1;
    r->body = spw_xmalloc(1);
    r->body[0] = '\0';
    r->cap = 1;

    size_t n = strlen(c->base) + strlen(path) + 1;
    char *url = spw_xmalloc(n);
    snprintf(url, n, "%s%s", c->base, path);

    struct curl_slist *hdrs = NULL;
    for (const struct curl_slist *h = c->auth; h; h = h->next)
        hdrs = curl_slist_append(hdrs, h->data);
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    char ct[96];
    if (body) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        hdrs = curl_slist_append(hdrs, ct);
        /* Without this libcurl waits for "100 Continue" on bodies > 1 KiB. */
        hdrs = curl_slist_append(hdrs, "Expect:");
    } else if (strcmp(method, "GET") != 0) {
        /* An empty POST is not a form. */
        hdrs = curl_slist_append(hdrs, "Content-Type:");
    }

    CURL *h = c->curl;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
    }
    c->errbuf[0] = '\0';
    CURLcode cc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    free(url);
    if (cc != CURLE_OK) {
        const char *why = c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc);
        /* A partial answer (the daemon died mid-way) is no answer either. */
        fprintf(stderr,
                "spillway: cannot reach the daemon at %s: %s (is `spillway serve` running? "
                "set --url or SPILLWAY_URL)\n",
                c->url, why);
        return SPW_CLI_EUNREACH;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status >= 200 && r->status < 300)
        return SPW_CLI_OK;
    print_http_error(c, r);
    return SPW_CLI_EREMOTE;
}

int spw_client_parse(spw_client_t *c, const spw_resp_t *r, json_t **out)
{
    json_error_t je;
    *out = json_loadb(r->body, r->len, 0, &je);
    if (*out)
        return SPW_CLI_OK;
    fprintf(stderr, "spillway: %s: the daemon's answer is not JSON (line %d: %s)\n", c->cmd,
            je.line, je.text);
    return SPW_CLI_EREMOTE;
}

static int request_json(spw_client_t *c, const char *method, const char *path, json_t **out)
{
    spw_resp_t r;
    *out = NULL;
    int rc = spw_client_request(c, method, path, NULL, 0, NULL, &r);
    if (rc == SPW_CLI_OK)
        rc = spw_client_parse(c, &r, out);
    spw_resp_free(&r);
    return rc;
}

int spw_client_get_json(spw_client_t *c, const char *path, json_t **out)
{
    return request_json(c, "GET", path, out);
}

int spw_client_call(const spw_cli_common_t *co, const char *cmd, const char *method,
                    const char *prefix, const char *id, const char *suffix, json_t **out)
{
    spw_client_t cl;
    spw_client_open(&cl, co, cmd);
    char *path = spw_client_path(&cl, prefix, id, suffix);
    int rc = request_json(&cl, method, path, out);
    free(path);
    spw_client_close(&cl);
    return rc;
}

int spw_cli_flush(const char *cmd)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "spillway: %s: cannot write output\n", cmd);
        return SPW_CLI_EREMOTE;
    }
    return SPW_CLI_OK;
}
