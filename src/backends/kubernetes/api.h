/* api.h: a small client of the Kubernetes API over libcurl: one request
 * (GET, POST, PATCH, DELETE with a JSON body), lists in chunks (limit and
 * continue), and watch streams (one JSON event a line, from a
 * resourceVersion, with bookmarks; 410 Gone says "list again").  Blocking:
 * the backend calls it from its own worker and op threads, never from the
 * scheduler's.  Thread-safe: each call uses its own curl handle. */
#ifndef SPW_BACKENDS_KUBERNETES_API_H
#define SPW_BACKENDS_KUBERNETES_API_H

#include <jansson.h>
#include <stddef.h>

#include "backends/kubernetes/kubeconfig.h"
#include "util/error.h"

typedef struct spw_kube_api spw_kube_api_t;

/* Makes a client of kc's server (kc is borrowed and must outlive it);
 * timeout_s bounds one request (a watch: its connection, not its stream),
 * and an exec plugin's run; 0 = 30.  Returns NULL with err only when
 * libcurl cannot start. */
spw_kube_api_t *spw_kube_api_create(spw_kubeconfig_t *kc, double timeout_s, spw_error_t *err);

/* Frees the client.  NULL-safe. */
void spw_kube_api_destroy(spw_kube_api_t *api);

/* One request: method ("GET", "POST", "PATCH", "DELETE") on path (from
 * "/api" or "/apis", query included) with body (JSON text; NULL = none;
 * PATCH sends it as a merge patch).  now_s: the caller's wall clock (for an
 * exec plugin's expiry).  Returns the HTTP status (200..599) with *out
 * (caller decrefs; NULL when the body is not JSON; out may be NULL) and, for
 * a status >= 400, a sentence in err made from the Status object the server
 * sent (spw_kube_status_text); -1 with err when no answer came (cannot
 * connect, TLS, timeout, credentials).  A 401 makes kc forget an exec
 * plugin's answer. */
int spw_kube_request(spw_kube_api_t *api, const char *method, const char *path, const char *body,
                     double now_s, json_t **out, spw_error_t *err);

/* A GET of text (pods/log): the status as spw_kube_request gives it, with
 * *text (caller frees, NUL-terminated) and *len for a 200, NULL otherwise. */
int spw_kube_get_text(spw_kube_api_t *api, const char *path, double now_s, char **text,
                      size_t *len, spw_error_t *err);

/* What a text stream callback gets: the next len bytes of the body (data
 * borrowed for the call); and, about once a second while the stream is
 * quiet, data NULL and len 0.  Return 0 to go on, non-zero to end it. */
typedef int (*spw_kube_text_f)(void *arg, const char *data, size_t len);

/* A GET of a text stream (pods/log?follow=true) for at most max_s seconds
 * (0 = a day), each chunk of a 200 body handed to cb as it comes.  Returns
 * the status as spw_kube_request gives it (200 also when cb or max_s ended
 * the stream). */
int spw_kube_stream_text(spw_kube_api_t *api, const char *path, unsigned max_s, double now_s,
                         spw_kube_text_f cb, void *arg, spw_error_t *err);

/* Lists the collection at path (no query) with an optional label selector
 * (NULL = all), `limit` objects a request (0 = 500), following continue
 * tokens.  Returns 0 with *items (a JSON array, caller decrefs) and the
 * list's resourceVersion in rv (rvlen bytes), or -1 with err (a 410 Gone
 * mid-way, when a continue token expired, is retried from the start once). */
int spw_kube_list(spw_kube_api_t *api, const char *path, const char *selector, unsigned limit,
                  double now_s, json_t **items, char *rv, size_t rvlen, spw_error_t *err);

/* What a watch event callback gets: type is ADDED, MODIFIED, DELETED,
 * BOOKMARK or ERROR, obj the object (borrowed for the call; take a
 * reference to keep it); and, about once a second while the stream is
 * quiet, type and obj NULL (no event: a chance to end the watch).  Return 0
 * to go on, non-zero to end the watch. */
typedef int (*spw_kube_event_f)(void *arg, const char *type, json_t *obj);

/* Watches the collection at path from resourceVersion rv (with
 * allowWatchBookmarks, the label selector when not NULL), for at most
 * timeout_s seconds (the server's timeoutSeconds), calling cb for each
 * event; rv is updated (rvlen bytes) to each event's resourceVersion.
 * Returns 0 when the stream ended (time out, or cb asked), 1 when the
 * server said 410 Gone (rv too old: list again), or -1 with err. */
int spw_kube_watch(spw_kube_api_t *api, const char *path, const char *selector, char *rv,
                   size_t rvlen, unsigned timeout_s, double now_s, spw_kube_event_f cb, void *arg,
                   spw_error_t *err);

/* The sentence for a failed request: "METHOD PATH: HTTP 409 AlreadyExists:
 * MESSAGE" from a Status object in body (its reason and message), or
 * "METHOD PATH: HTTP 503: FIRST LINE OF BODY" when body is not one.  Into
 * err; returns -1. */
int spw_kube_status_text(const char *method, const char *path, long http, const char *body,
                         spw_error_t *err);

/* The reason of a Status object (AlreadyExists, NotFound, Gone...), or ""
 * for anything else; borrowed from obj. */
const char *spw_kube_status_reason(const json_t *obj);

#endif
