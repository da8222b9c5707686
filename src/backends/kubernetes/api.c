/* api.c: the Kubernetes API client over libcurl (see api.h). */
#include "backends/kubernetes/api.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

struct spw_kube_api {
    spw_kubeconfig_t *kc;       /* borrowed: server and credentials */
    double timeout_s;           /* limit of one request, seconds */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;   /* curl_global_init's answer, set once */

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

spw_kube_api_t *spw_kube_api_create(spw_kubeconfig_t *kc, double timeout_s, spw_error_t *err)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return spw_errorf(err, "libcurl cannot start: %s", curl_easy_strerror(curl_init_rc)), NULL;
    spw_kube_api_t *api = spw_xcalloc(1, sizeof(*api));
    api->kc = kc;
    api->timeout_s = timeout_s > 0 ? timeout_s : 30;
    return api;
}

void spw_kube_api_destroy(spw_kube_api_t *api)
{
    free(api);
}

const char *spw_kube_status_reason(const json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *r = json_string_value(json_object_get(obj, "reason"));
    return kind && strcmp(kind, "Status") == 0 && r ? r : "";
}

int spw_kube_status_text(const char *method, const char *path, long http, const char *body,
                         spw_error_t *err)
{
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    const char *reason = spw_kube_status_reason(j);
    const char *msg = reason[0] ? json_string_value(json_object_get(j, "message")) : NULL;
    char first[160] = "";
    if (!reason[0] && body) {
        size_t n = strcspn(body, "\r\n");
        snprintf(first, sizeof(first), "%.*s", (int)(n < 150 ? n : 150), body);
    }
    if (reason[0])
        spw_errorf(err, "%s %s: HTTP %ld %s: %s", method, path, http, reason,
                   msg && msg[0] ? msg : "(no message)");
    else
        spw_errorf(err, "%s %s: HTTP %ld%s%s", method, path, http, first[0] ? ": " : "", first);
    json_decref(j);
    return -1;
}

/* A response body, or a watch's partial line. */
typedef struct reply {
    spw_strbuf_t body;          /* bytes received (a watch: not yet a line) */
    spw_kube_event_f cb;        /* watch: per event; NULL = keep the body */
    void *arg;                  /* cb's argument */
    char *rv;                   /* watch: the resourceVersion to update */
    size_t rvlen;               /* its room, bytes */
    long http;                  /* watch: the status, known at the first byte */
    int gone;                   /* watch: an ERROR event with code 410 */
    int stop;                   /* watch, stream: cb asked to end */
    spw_kube_text_f text;       /* stream: per chunk of a 200 body; NULL = none */
} reply_t;

/* One line of a watch stream. */
static void watch_line(reply_t *r, const char *line, size_t n)
{
    json_t *ev = json_loadb(line, n, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        json_decref(ev);
        return;
    }
    if (strcmp(type, "ERROR") == 0) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        if (code == 410)
            r->gone = 1;
    } else {
        const char *v =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        if (v && strlen(v) < r->rvlen)
            strcpy(r->rv, v);
    }
    if (!r->stop && r->cb && r->cb(r->arg, type, obj) != 0)
        r->stop = 1;
    json_decref(ev);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    reply_t *r = ud;
    size_t n = size * nmemb;
    if (r->text && r->http < 300) {
        if (!r->stop && r->text(r->arg, p, n) != 0)
            r->stop = 1;
        return r->stop ? 0 : n;
    }
    spw_strbuf_addn(&r->body, p, n);
    if (!r->cb || r->http >= 300)
        return n;
    /* A watch: hand over each complete line, keep the rest. */
    char *s = r->body.s, *nl;
    size_t used = 0;
    while ((nl = memchr(s + used, '\n', r->body.len - used)) != NULL) {
        watch_line(r, s + used, (size_t)(nl - (s + used)));
        used = (size_t)(nl - s) + 1;
    }
    memmove(s, s + used, r->body.len - used);
    r->body.len -= used;
    s[r->body.len] = '\0';
    return r->stop ? 0 : n;
}

/* A watch's progress callback (about once a second while idle): asks cb
 * whether to go on, so that a quiet stream can be ended at once. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    reply_t *r = ud;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (!r->stop && (r->text ? r->text(r->arg, NULL, 0) : r->cb(r->arg, NULL, NULL)) != 0)
        r->stop = 1;
    return r->stop;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    reply_t *r = ud;
    size_t n = size * nmemb;
    int code;
    if (n > 9 && strncmp(p, "HTTP/", 5) == 0 && sscanf(p, "HTTP/%*s %d", &code) == 1)
        r->http = code;
    return n;
}

/* Runs one request into r.  Returns the HTTP status or -1 with err. */
static long perform(spw_kube_api_t *api, const char *method, const char *path, const char *body,
                    double now_s, long stream_s, reply_t *r, spw_error_t *err)
{
    spw_kube_auth_t a;
    if (spw_kubeconfig_auth(api->kc, now_s, api->timeout_s, &a, err) < 0)
        return -1;
    CURL *c = curl_easy_init();
    if (!c)
        return spw_errorf(err, "%s %s: libcurl cannot make a handle", method, path);
    spw_strbuf_t url = {0}, authz = {0};
    spw_strbuf_printf(&url, "%s%s", a.server, path);
    struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
    if (body)
        h = curl_slist_append(h, strcmp(method, "PATCH") == 0
                                     ? "Content-Type: application/merge-patch+json"
                                     : "Content-Type: application/json");
    if (a.token) {
        spw_strbuf_printf(&authz, "Authorization: Bearer %s", a.token);
        h = curl_slist_append(h, authz.s);
    }
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url.s);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(api->timeout_s * 1000));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)((stream_s > 0 ? stream_s + api->timeout_s
                                                                  : api->timeout_s) * 1000));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    if (r->cb || r->text) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, r);
    }
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (a.insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    struct curl_blob ca = {.data = (void *)a.ca_pem, .len = a.ca_len, .flags = CURL_BLOB_COPY};
    struct curl_blob cert = {.data = (void *)a.cert_pem, .len = a.cert_len,
                             .flags = CURL_BLOB_COPY};
    struct curl_blob key = {.data = (void *)a.key_pem, .len = a.key_len, .flags = CURL_BLOB_COPY};
    if (a.ca_pem)
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
    if (a.cert_pem) {
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    CURLcode rc = curl_easy_perform(c);
    long http = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    free(url.s);
    if (authz.s) {
        /* The token is a secret: do not leave it in freed memory. */
        memset(authz.s, 0, authz.len);
        free(authz.s);
    }
    if (rc != CURLE_OK &&
        !((rc == CURLE_WRITE_ERROR || rc == CURLE_ABORTED_BY_CALLBACK) && r->stop) &&
        !(rc == CURLE_OPERATION_TIMEDOUT && stream_s > 0 && http == 200))
        return spw_errorf(err, "%s %s%s: %s", method, a.server, path,
                          ebuf[0] ? ebuf : curl_easy_strerror(rc));
    if (http == 401)
        spw_kubeconfig_invalidate(api->kc);
    return http;
}

int spw_kube_request(spw_kube_api_t *api, const char *method, const char *path, const char *body,
                     double now_s, json_t **out, spw_error_t *err)
{
    reply_t r = {0};
    if (out)
        *out = NULL;
    long http = perform(api, method, path, body, now_s, 0, &r, err);
    if (http < 0) {
        free(r.body.s);
        return -1;
    }
    if (http >= 400)
        spw_kube_status_text(method, path, http, r.body.s, err);
    if (out && r.body.s)
        *out = json_loadb(r.body.s, r.body.len, 0, NULL);
    free(r.body.s);
    return (int)http;
}

int spw_kube_get_text(spw_kube_api_t *api, const char *path, double now_s, char **text,
                      size_t *len, spw_error_t *err)
{
    reply_t r = {0};
    *text = NULL;
    *len = 0;
    long http = perform(api, "GET", path, NULL, now_s, 0, &r, err);
    if (http >= 400)
        spw_kube_status_text("GET", path, http, r.body.s, err);
    if (http == 200) {
        *text = r.body.s ? r.body.s : spw_xstrdup("");
        *len = r.body.len;
    } else {
        free(r.body.s);
    }
    return (int)http;
}

int spw_kube_stream_text(spw_kube_api_t *api, const char *path, unsigned max_s, double now_s,
                         spw_kube_text_f cb, void *arg, spw_error_t *err)
{
    reply_t r = {.text = cb, .arg = arg};
    long http = perform(api, "GET", path, NULL, now_s, max_s ? max_s : 86400, &r, err);
    if (http >= 400)
        spw_kube_status_text("GET", path, http, r.body.s, err);
    free(r.body.s);
    return (int)http;
}

/* path?SELECTOR&... with the label selector escaped. */
static void add_query(spw_strbuf_t *u, const char *path, const char *selector)
{
    spw_strbuf_add(u, path);
    spw_strbuf_add(u, strchr(path, '?') ? "&" : "?");
    if (selector && selector[0]) {
        char *e = curl_easy_escape(NULL, selector, 0);
        spw_strbuf_printf(u, "labelSelector=%s&", e);
        curl_free(e);
    }
}

int spw_kube_list(spw_kube_api_t *api, const char *path, const char *selector, unsigned limit,
                  double now_s, json_t **items, char *rv, size_t rvlen, spw_error_t *err)
{
    json_t *all = json_array();
    char *cont = NULL;
    int restarted = 0;
    for (;;) {
        spw_strbuf_t u = {0};
        add_query(&u, path, selector);
        spw_strbuf_printf(&u, "limit=%u", limit ? limit : 500);
        if (cont) {
            char *e = curl_easy_escape(NULL, cont, 0);
            spw_strbuf_printf(&u, "&continue=%s", e);
            curl_free(e);
        }
        json_t *page = NULL;
        int http = spw_kube_request(api, "GET", u.s, NULL, now_s, &page, err);
        free(u.s);
        if (http == 410 && cont && !restarted) {
            /* The continue token expired: list again from the start. */
            json_decref(page);
            json_array_clear(all);
            free(cont);
            cont = NULL;
            restarted = 1;
            continue;
        }
        if (http != 200 || !json_is_array(json_object_get(page, "items"))) {
            if (http == 200)
                spw_errorf(err, "GET %s: the answer is not a list", path);
            json_decref(page);
            json_decref(all);
            free(cont);
            return -1;
        }
        json_array_extend(all, json_object_get(page, "items"));
        json_t *meta = json_object_get(page, "metadata");
        const char *v = json_string_value(json_object_get(meta, "resourceVersion"));
        const char *c = json_string_value(json_object_get(meta, "continue"));
        snprintf(rv, rvlen, "%s", v ? v : "");
        free(cont);
        cont = c && c[0] ? spw_xstrdup(c) : NULL;
        json_decref(page);
        if (!cont)
            break;
    }
    *items = all;
    return 0;
}

int spw_kube_watch(spw_kube_api_t *api, const char *path, const char *selector, char *rv,
                   size_t rvlen, unsigned timeout_s, double now_s, spw_kube_event_f cb, void *arg,
                   spw_error_t *err)
{
    spw_strbuf_t u = {0};
    add_query(&u, path, selector);
    char *e = curl_easy_escape(NULL, rv, 0);
    spw_strbuf_printf(&u, "watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u",
                      e, timeout_s ? timeout_s : 60);
    curl_free(e);
    reply_t r = {.cb = cb, .arg = arg, .rv = rv, .rvlen = rvlen};
    long http = perform(api, "GET", u.s, NULL, now_s, timeout_s ? timeout_s : 60, &r, err);
    int rc = 0;
    if (http == 410 || r.gone)
        rc = 1;
    else if (http >= 300)
        rc = spw_kube_status_text("GET", u.s, http, r.body.s, err);
    else if (http < 0)
        rc = -1;
    free(u.s);
    free(r.body.s);
    return rc;
}
