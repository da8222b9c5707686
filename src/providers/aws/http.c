/* http.c: the aws provider's HTTP over libcurl (see http.h). */
#include "providers/aws/http.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <libxml/parser.h>

#include "util/netlibs.h"

/* libcurl's and libxml2's global set-up, once per process, before any
 * thread uses them. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_libs(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    xmlInitParser();
}

void spw_aws_http_init(void)
{
    pthread_once(&init_once, init_libs);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    spw_strbuf_addn(ud, p, size * n);
    return size * n;
}

int spw_aws_url_split(const char *url, char *host, size_t hlen, char *path, size_t plen,
                      spw_error_t *err)
{
    const char *p = NULL;
    if (url && strncmp(url, "https://", 8) == 0)
        p = url + 8;
    else if (url && strncmp(url, "http://", 7) == 0)
        p = url + 7;
    size_t n = p ? strcspn(p, "/?#") : 0;
    if (!p || n == 0 || n >= hlen)
        return spw_errorf(err, "endpoint '%s' is not an http:// or https:// URL with a host",
                          url ? url : "");
    memcpy(host, p, n);
    host[n] = '\0';
    const char *rest = p + n;
    snprintf(path, plen, "%s", *rest == '/' ? rest : "/");
    return 0;
}

/* One exchange; hdr is the list to send (taken over and freed). */
static int exchange(const char *method, const char *url, struct curl_slist *hdr,
                    const char *body, long timeout_ms, long *status, spw_strbuf_t *resp,
                    spw_error_t *err)
{
    spw_aws_http_init();
    *status = 0;
    CURL *c = curl_easy_init();
    if (!c) {
        curl_slist_free_all(hdr);
        return spw_errorf(err, "cannot start an HTTP call: %s",
                          spw_netlibs_error() ? spw_netlibs_error() : "libcurl gave no handle");
    }
    char why[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 30000L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms > 0 && timeout_ms < 10000
                                                      ? timeout_ms : 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, why);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    if (rc != CURLE_OK)
        return spw_errorf(err, "%s %s: %s", method, url, why[0] ? why : curl_easy_strerror(rc));
    return 0;
}

int spw_aws_http(const char *method, const char *url, const char *const *headers,
                 const char *body, long timeout_ms, long *status, spw_strbuf_t *resp,
                 spw_error_t *err)
{
    struct curl_slist *hdr = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        hdr = curl_slist_append(hdr, headers[i]);
    /* No "Expect: 100-continue" round trip. */
    hdr = curl_slist_append(hdr, "Expect:");
    return exchange(method, url, hdr, body, timeout_ms, status, resp, err);
}

int spw_aws_post(const spw_aws_endpoint_t *ep, const spw_aws_creds_t *creds, time_t now,
                 const char *body, long *status, spw_strbuf_t *resp, spw_error_t *err)
{
    char host[256], path[512];
    *status = 0;
    if (spw_aws_url_split(ep->url, host, sizeof(host), path, sizeof(path), err) < 0)
        return -1;
    static const char ctype[] = "application/x-www-form-urlencoded; charset=utf-8";
    spw_sigv4_header_t h[] = {{"Content-Type", ctype}};
    spw_sigv4_req_t r = {.method = "POST", .host = host, .path = path, .headers = h,
                         .nheaders = 1, .payload = body, .payload_len = strlen(body),
                         .region = ep->region, .service = ep->service};
    spw_sigv4_t s;
    if (spw_sigv4_sign(&r, creds, now, &s, err) < 0)
        return -1;
    spw_strbuf_t line = {0};
    struct curl_slist *hdr = NULL;
    spw_strbuf_printf(&line, "Content-Type: %s", ctype);
    hdr = curl_slist_append(hdr, line.s);
    line.len = 0;
    spw_strbuf_printf(&line, "X-Amz-Date: %s", s.amz_date);
    hdr = curl_slist_append(hdr, line.s);
    line.len = 0;
    spw_strbuf_printf(&line, "Authorization: %s", s.authorization);
    hdr = curl_slist_append(hdr, line.s);
    if (creds->session_token[0]) {
        line.len = 0;
        spw_strbuf_printf(&line, "X-Amz-Security-Token: %s", creds->session_token);
        hdr = curl_slist_append(hdr, line.s);
    }
    hdr = curl_slist_append(hdr, "Expect:");
    free(line.s);
    spw_sigv4_clear(&s);
    /* curl sends Host from the URL, as it was signed. */
    return exchange("POST", ep->url, hdr, body, ep->timeout_ms, status, resp, err);
}
