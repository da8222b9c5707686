/* kubeconfig.h: where a Kubernetes API server is and how to prove who we are
 * to it, read from a kubeconfig file (a context's cluster and user) or from
 * the in-cluster service account, with exec credential plugins run and their
 * answer cached until it expires (the way kubectl does it: EKS's `aws eks
 * get-token`, GKE's gke-gcloud-auth-plugin). */
#ifndef SPW_BACKENDS_KUBERNETES_KUBECONFIG_H
#define SPW_BACKENDS_KUBERNETES_KUBECONFIG_H

#include <stddef.h>

#include "util/error.h"

/* Where a service account's files are inside a pod. */
#define SPW_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

typedef struct spw_kubeconfig spw_kubeconfig_t;

/* What a request presents, as spw_kubeconfig_auth resolved it.  Every
 * pointer is owned by the kubeconfig and valid until its next
 * spw_kubeconfig_auth, spw_kubeconfig_invalidate or destroy. */
typedef struct spw_kube_auth {
    const char *server;         /* "https://HOST:PORT" (a trailing '/' removed) */
    const char *ca_pem;         /* the cluster's CA certificates, PEM; NULL =
                                   the system's */
    size_t ca_len;              /* bytes of ca_pem */
    int insecure;               /* 1: insecure-skip-tls-verify (no check of
                                   the server's certificate) */
    const char *token;          /* bearer token; NULL = none */
    const char *cert_pem;       /* client certificate, PEM; NULL = none */
    size_t cert_len;            /* bytes of cert_pem */
    const char *key_pem;        /* its private key, PEM; NULL with cert_pem */
    size_t key_len;             /* bytes of key_pem */
} spw_kube_auth_t;

/* Loads the kubeconfig at path (NULL: the first file of $KUBECONFIG, else
 * ~/.kube/config) and picks context (NULL or "": its current-context).
 * When path is NULL and neither file exists, uses the in-cluster service
 * account (SPW_KUBE_SA_DIR and KUBERNETES_SERVICE_HOST/PORT).  Relative
 * file names inside the kubeconfig (certificate-authority, client-*,
 * tokenFile, an exec command with a '/') are taken from its directory.
 * Nothing is run yet: an exec plugin runs at the first spw_kubeconfig_auth.
 * Returns the kubeconfig (free with spw_kubeconfig_destroy) or NULL with
 * "PATH:LINE:COL: ..." or a sentence in err. */
spw_kubeconfig_t *spw_kubeconfig_load(const char *path, const char *context, spw_error_t *err);

/* The in-cluster service account from directory sa_dir (token, ca.crt,
 * namespace; SPW_KUBE_SA_DIR in a pod) and server host:port (NULL: from
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT).  The token file is
 * read again at each auth, as the kubelet rotates it. */
spw_kubeconfig_t *spw_kubeconfig_in_cluster(const char *sa_dir, const char *host,
                                            const char *port, spw_error_t *err);

/* The credentials to present now (now_s: the caller's wall clock, seconds
 * since the epoch): runs the user's exec plugin (at most timeout_s
 * seconds) when it has no answer cached or the cached one expires within
 * 10 s, reads a tokenFile again.  Thread-safe (one lock inside).  Returns 0
 * with *out, or -1 with a sentence in err (the plugin failed, its answer
 * is not an ExecCredential, a file cannot be read). */
int spw_kubeconfig_auth(spw_kubeconfig_t *kc, double now_s, double timeout_s, spw_kube_auth_t *out,
                        spw_error_t *err);

/* Forgets an exec plugin's cached answer (the server said 401: the token
 * was revoked before its expiry), so that the next auth runs it again. */
void spw_kubeconfig_invalidate(spw_kubeconfig_t *kc);

/* The context's namespace (or the service account's), or NULL when it
 * names none; owned by kc. */
const char *spw_kubeconfig_namespace(const spw_kubeconfig_t *kc);

/* The context's name ("in-cluster" for a service account); owned by kc. */
const char *spw_kubeconfig_context(const spw_kubeconfig_t *kc);

/* How many times the exec plugin has run (for tests: a cached answer is
 * not asked again). */
unsigned spw_kubeconfig_exec_runs(const spw_kubeconfig_t *kc);

/* Frees kc.  NULL-safe. */
void spw_kubeconfig_destroy(spw_kubeconfig_t *kc);

/* Decodes base64 text s (standard alphabet, '=' padding, whitespace
 * skipped) into a new buffer (caller frees, NUL-terminated) of *len bytes;
 * NULL for anything else. */
char *spw_kube_b64_decode(const char *s, size_t *len);

#endif
