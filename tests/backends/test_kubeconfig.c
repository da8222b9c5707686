/* test_kubeconfig.c: the Kubernetes backend's kubeconfig reader (contexts,
 * clusters, users: tokens, token files, client certificates, exec
 * credential plugins and their cache), the in-cluster service account, and
 * the sentences made from the API's Status objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/kubernetes/api.h"
#include "backends/kubernetes/kubeconfig.h"
#include "tap.h"

static char dir[64];

/* Writes dir/name with text (mode 0755 when exe). */
static const char *put(const char *name, const char *text, int exe)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
    chmod(path, exe ? 0755 : 0644);
    return path;
}

/* Makes dir/name a directory; returns its path (static). */
static const char *subdir(const char *name)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    mkdir(path, 0755);
    return path;
}

/* Writes dir/one: a kubeconfig of one context "a", cluster c ({CLUSTER}),
 * user u ({USER}); returns its path (static). */
static const char *one_context(const char *cluster, const char *user)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "current-context: a\nclusters:\n- name: c\n  cluster: {%s}\n"
             "contexts:\n- name: a\n  context: {cluster: c, user: u}\n"
             "users:\n- name: u\n  user: {%s}\n",
             cluster, user);
    return put("one", text, 0);
}

/* Loads dir/name with context, expecting failure; the message (static). */
static const char *load_fail(const char *name, const char *context)
{
    static spw_error_t err;
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    strcpy(err.text, "(loaded)");
    spw_kubeconfig_t *kc = spw_kubeconfig_load(path, context, &err);
    spw_kubeconfig_destroy(kc);
    return err.text;
}

/* A kubeconfig of two contexts: "a" (token, CA data, namespace team-a) and
 * "b" (client certificate and key files beside it, CA file). */
static const char two_contexts[] =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: a\n"
    "clusters:\n"
    "- name: ca\n"
    "  cluster:\n"
    "    server: https://127.0.0.1:6443/\n"
    "    certificate-authority-data: LS0tLS1CRUdJTiBDQS0tLS0tCg==\n" /* "-----BEGIN CA-----\n" */
    "- name: cb\n"
    "  cluster:\n"
    "    server: https://k.example:443\n"
    "    certificate-authority: ca.pem\n"
    "contexts:\n"
    "- name: a\n"
    "  context: {cluster: ca, user: ua, namespace: team-a}\n"
    "- name: b\n"
    "  context: {cluster: cb, user: ub}\n"
    "users:\n"
    "- name: ua\n"
    "  user: {token: sekrit}\n"
    "- name: ub\n"
    "  user:\n"
    "    client-certificate: sub/c.pem\n"
    "    client-key: sub/k.pem\n";

/* An exec plugin that prints an ExecCredential whose token names its first
 * argument, its env's FOO and the apiVersion asked in KUBERNETES_EXEC_INFO,
 * expiring at $EXPIRY, and counts its runs in dir/runs. */
static const char plugin[] =
    "#!/bin/sh\n"
    "echo run >> \"$(dirname \"$0\")/runs\"\n"
    "case $KUBERNETES_EXEC_INFO in *client.authentication.k8s.io/v1beta1*) v=b;; *) v=x;; esac\n"
    "[ \"$1\" = fail ] && { echo 'no login' >&2; exit 3; }\n"
    "[ \"$1\" = junk ] && { echo '{\"kind\":\"Nope\"}'; exit 0; }\n"
    "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
    "\"status\":{\"token\":\"%s-%s-%s\",\"expirationTimestamp\":\"%s\"}}\\n' \"$1\" \"$FOO\" \"$v\" "
    "\"$EXPIRY\"\n";

static void test_contexts(void)
{
    spw_error_t err = {{0}};
    spw_kube_auth_t a;
    subdir("sub");
    put("sub/c.pem", "CERT\n", 0);
    put("sub/k.pem", "KEY\n", 0);
    put("ca.pem", "CAFILE\n", 0);
    const char *path = put("config", two_contexts, 0);

    spw_kubeconfig_t *kc = spw_kubeconfig_load(path, NULL, &err);
    ok(kc != NULL, "a kubeconfig loads with its current-context (%s)", err.text);
    is_str(spw_kubeconfig_context(kc), "a", "current-context a is used");
    is_str(spw_kubeconfig_namespace(kc), "team-a", "the context's namespace");
    ok(spw_kubeconfig_auth(kc, 1000, 5, &a, &err) == 0, "auth with a static token");
    is_str(a.server, "https://127.0.0.1:6443", "server without its trailing slash");
    is_str(a.token, "sekrit", "the user's token");
    ok(a.ca_pem && a.ca_len == 19 && memcmp(a.ca_pem, "-----BEGIN CA-----\n", 19) == 0,
       "certificate-authority-data is decoded from base64");
    ok(!a.cert_pem && !a.insecure, "no client certificate, TLS checked");
    spw_kubeconfig_destroy(kc);

    kc = spw_kubeconfig_load(path, "b", &err);
    ok(kc != NULL, "context b by name (%s)", err.text);
    ok(kc && spw_kubeconfig_namespace(kc) == NULL, "context b names no namespace");
    ok(kc && spw_kubeconfig_auth(kc, 1000, 5, &a, &err) == 0, "auth with a client certificate");
    ok(kc && a.cert_pem && strcmp(a.cert_pem, "CERT\n") == 0 && a.key_pem &&
           strcmp(a.key_pem, "KEY\n") == 0,
       "client-certificate and client-key are read relative to the kubeconfig's directory");
    ok(kc && a.ca_pem && strcmp(a.ca_pem, "CAFILE\n") == 0 && a.token == NULL,
       "certificate-authority file read, no token");
    spw_kubeconfig_destroy(kc);

    ok(strstr(load_fail("config", "c"), "no contexts entry named 'c'") != NULL,
       "an unknown context is named: %s", load_fail("config", "c"));
    put("nocur", "clusters: []\ncontexts: []\n", 0);
    ok(strstr(load_fail("nocur", NULL), "no current-context; name one with the pool's 'context'"),
       "no current-context: %s", load_fail("nocur", NULL));
    /* Kubeconfigs of one context "a" (cluster c, user u) refused, and why. */
    static const struct {
        const char *cluster, *user, *want, *what;
    } bad[] = {
        {"server: ftp://x", "token: t", "one:4:12: cluster 'c' needs a server https://",
         "a server that is no https URL is refused at its line"},
        {"server: https://x, certificate-authority-data: '@@@'", "token: t",
         "certificate-authority-data is not base64", "CA data that is not base64"},
        {"server: https://x", "client-certificate-data: Q0VSVA==",
         "needs both a client certificate and its key", "a certificate without its key"},
        {"server: https://x", "auth-provider: {name: gcp}", "auth-provider, which Kubernetes removed",
         "a removed auth-provider says to use an exec plugin"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        one_context(bad[i].cluster, bad[i].user);
        ok(strstr(load_fail("one", NULL), bad[i].want), "%s: %s", bad[i].what,
           load_fail("one", NULL));
    }
}

static void test_token_file(void)
{
    spw_error_t err = {{0}};
    spw_kube_auth_t a;
    put("tok", "first\n", 0);
    const char *path = one_context("server: https://x, insecure-skip-tls-verify: true",
                                   "tokenFile: tok");
    spw_kubeconfig_t *kc = spw_kubeconfig_load(path, NULL, &err);
    ok(kc && spw_kubeconfig_auth(kc, 1, 5, &a, &err) == 0 && a.token &&
           strcmp(a.token, "first") == 0 && a.insecure,
       "tokenFile is read (newline dropped), insecure-skip-tls-verify kept (%s)", err.text);
    put("tok", "second", 0);
    ok(kc && spw_kubeconfig_auth(kc, 2, 5, &a, &err) == 0 && strcmp(a.token, "second") == 0,
       "tokenFile is read again at each auth (a rotated token is used)");
    spw_kubeconfig_destroy(kc);
}

/* A kubeconfig whose user runs dir/plugin.sh with arg. */
static spw_kubeconfig_t *exec_config(const char *arg, const char *api, spw_error_t *err)
{
    char user[512];
    snprintf(user, sizeof(user),
             "exec: {apiVersion: %s, command: ./plugin.sh, args: [%s], "
             "env: [{name: FOO, value: bar}]}",
             api, arg);
    return spw_kubeconfig_load(one_context("server: https://x", user), NULL, err);
}

static void test_exec(void)
{
    spw_error_t err = {{0}};
    spw_kube_auth_t a;
    put("plugin.sh", plugin, 1);
    /* 2026-01-01T00:00:00Z */
    const double expiry = 1767225600;
    setenv("EXPIRY", "2026-01-01T00:00:00Z", 1);
    spw_kubeconfig_t *kc = exec_config("tk", "client.authentication.k8s.io/v1beta1", &err);
    ok(kc != NULL, "a kubeconfig with an exec plugin loads (%s)", err.text);
    if (!kc)
        return;
    is(spw_kubeconfig_exec_runs(kc), 0, "nothing runs at load");
    ok(spw_kubeconfig_auth(kc, expiry - 3600, 5, &a, &err) == 0, "auth runs the plugin (%s)",
       err.text);
    is_str(a.token, "tk-bar-b",
           "the token is the ExecCredential's status.token; args, env and "
           "KUBERNETES_EXEC_INFO's apiVersion reached the plugin");
    ok(spw_kubeconfig_auth(kc, expiry - 60, 5, &a, &err) == 0 && spw_kubeconfig_exec_runs(kc) == 1,
       "an answer that expires later is cached (one run)");
    ok(spw_kubeconfig_auth(kc, expiry - 5, 5, &a, &err) == 0 && spw_kubeconfig_exec_runs(kc) == 2,
       "within 10 s of its expirationTimestamp the plugin runs again");
    spw_kubeconfig_invalidate(kc);
    ok(spw_kubeconfig_auth(kc, expiry - 3000, 5, &a, &err) == 0 &&
           spw_kubeconfig_exec_runs(kc) == 3,
       "after invalidate (a 401) the plugin runs again");
    spw_kubeconfig_destroy(kc);

    kc = exec_config("fail", "client.authentication.k8s.io/v1", &err);
    ok(kc && spw_kubeconfig_auth(kc, 0, 5, &a, &err) < 0 &&
           strstr(err.text, "plugin.sh failed (exit 3): no login"),
       "a failing plugin's stderr is in the error: %s", err.text);
    spw_kubeconfig_destroy(kc);
    kc = exec_config("junk", "client.authentication.k8s.io/v1", &err);
    ok(kc && spw_kubeconfig_auth(kc, 0, 5, &a, &err) < 0 &&
           strstr(err.text, "is not an ExecCredential"),
       "output that is no ExecCredential is refused: %s", err.text);
    spw_kubeconfig_destroy(kc);
}

static void test_in_cluster(void)
{
    spw_error_t err = {{0}};
    spw_kube_auth_t a;
    const char *sa = subdir("sa");
    put("sa/token", "satoken\n", 0);
    put("sa/ca.crt", "SACA\n", 0);
    put("sa/namespace", "ml\n", 0);
    spw_kubeconfig_t *kc = spw_kubeconfig_in_cluster(sa, "10.96.0.1", "443", &err);
    ok(kc && spw_kubeconfig_auth(kc, 0, 5, &a, &err) == 0, "in-cluster config (%s)", err.text);
    ok(kc && strcmp(a.server, "https://10.96.0.1:443") == 0 && strcmp(a.token, "satoken") == 0 &&
           strcmp(a.ca_pem, "SACA\n") == 0,
       "server from the service host and port, the account's token and CA");
    ok(kc && strcmp(spw_kubeconfig_namespace(kc), "ml") == 0 &&
           strcmp(spw_kubeconfig_context(kc), "in-cluster") == 0,
       "its namespace; context 'in-cluster'");
    spw_kubeconfig_destroy(kc);
    kc = spw_kubeconfig_in_cluster(sa, "fd00::1", "6443", &err);
    ok(kc && spw_kubeconfig_auth(kc, 0, 5, &a, &err) == 0 &&
           strcmp(a.server, "https://[fd00::1]:6443") == 0,
       "an IPv6 service host is bracketed");
    spw_kubeconfig_destroy(kc);

    /* No kubeconfig anywhere, no service host: a sentence on what to set. */
    setenv("HOME", subdir("home"), 1);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    kc = spw_kubeconfig_load(NULL, NULL, &err);
    ok(!kc && strstr(err.text, "no kubeconfig: set the pool's 'kubeconfig', $KUBECONFIG"),
       "without any kubeconfig: %s", err.text);
    setenv("KUBECONFIG", put("config", two_contexts, 0), 1);
    kc = spw_kubeconfig_load(NULL, "b", &err);
    ok(kc && strcmp(spw_kubeconfig_context(kc), "b") == 0, "$KUBECONFIG is the default path");
    spw_kubeconfig_destroy(kc);
}

static void test_status(void)
{
    spw_error_t err;
    const char *st = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                     "\"status\":\"Failure\",\"message\":\"jobs.batch \\\"spw-x\\\" already "
                     "exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"spw-x\","
                     "\"group\":\"batch\",\"kind\":\"jobs\"},\"code\":409}";
    spw_kube_status_text("POST", "/apis/batch/v1/namespaces/ml/jobs", 409, st, &err);
    is_str(err.text,
           "POST /apis/batch/v1/namespaces/ml/jobs: HTTP 409 AlreadyExists: jobs.batch \"spw-x\" "
           "already exists",
           "a Status object becomes a sentence with its reason and message");
    spw_kube_status_text("GET", "/api/v1/nodes", 502, "<html>bad gateway</html>\nmore", &err);
    is_str(err.text, "GET /api/v1/nodes: HTTP 502: <html>bad gateway</html>",
           "a body that is no Status: its first line");
    json_t *j = json_loads(st, 0, NULL);
    is_str(spw_kube_status_reason(j), "AlreadyExists", "the reason of a Status");
    json_decref(j);
    j = json_loads("{\"kind\":\"Job\",\"reason\":\"x\"}", 0, NULL);
    is_str(spw_kube_status_reason(j), "", "no reason for an object that is no Status");
    json_decref(j);

    size_t n;
    char *d = spw_kube_b64_decode("aGVs\nbG8=", &n);
    ok(d && n == 5 && strcmp(d, "hello") == 0, "base64 with a newline and padding");
    free(d);
    ok(spw_kube_b64_decode("aGVsbG8=x", &n) == NULL, "text after padding is refused");
    ok(spw_kube_b64_decode("a*b", &n) == NULL, "a character outside base64 is refused");
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/spw-kubeconfig-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    test_contexts();
    test_token_file();
    test_exec();
    test_in_cluster();
    test_status();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    return done_testing();
}
