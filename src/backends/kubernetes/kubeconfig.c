/* kubeconfig.c: reads a kubeconfig's context, cluster and user, or the
 * in-cluster service account, and runs exec credential plugins (see
 * kubeconfig.h). */
#include "backends/kubernetes/kubeconfig.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/file.h"
#include "util/run.h"
#include "util/timeparse.h"
#include "util/yaml.h"

extern char **environ;

/* A user's exec credential plugin (users[].user.exec). */
typedef struct kube_exec {
    char *command;              /* program: a path, or a name in PATH */
    char **argv;                /* NULL-terminated, argv[0] = command */
    char **env;                 /* NULL-terminated "NAME=VALUE" added to
                                   ours, with KUBERNETES_EXEC_INFO */
    char *api_version;          /* client.authentication.k8s.io/v1 or v1beta1 */
} kube_exec_t;

struct spw_kubeconfig {
    pthread_mutex_t lock;       /* guards everything below that auth changes */
    char *context;              /* the context's name */
    char *ns;                   /* its namespace; NULL = none */
    spw_kube_auth_t base;       /* what the kubeconfig itself gives (every
                                   string owned, freed through a cast) */
    char *token_file;           /* read at each auth; NULL = none */
    int has_exec;               /* 1: exec below is set */
    kube_exec_t exec;           /* the exec plugin */
    char *x_token;              /* the plugin's token; NULL = none cached */
    char *x_cert;               /* its clientCertificateData; NULL = none */
    char *x_key;                /* its clientKeyData */
    int x_valid;                /* 1: x_* hold an answer */
    double x_expiry_s;          /* its expirationTimestamp, epoch seconds;
                                   0 = none (valid until invalidated) */
    char *file_token;           /* token_file's last content */
    unsigned exec_runs;         /* plugin runs so far */
};

/* ---- small helpers ---------------------------------------------------- */

static int b64_val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

char *spw_kube_b64_decode(const char *s, size_t *len)
{
    size_t n = strlen(s), o = 0;
    char *out = spw_xmalloc(n / 4 * 3 + 4);
    unsigned acc = 0;
    int bits = 0, pad = 0;
    for (const char *p = s; *p; p++) {
        if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            continue;
        if (*p == '=') {
            pad++;
            continue;
        }
        int v = b64_val((unsigned char)*p);
        if (v < 0 || pad)
            goto error;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (pad > 2 || bits >= 6)
        goto error;
    out[o] = '\0';
    *len = o;
    return out;
error:
    free(out);
    return NULL;
}

/* base_dir/name unless name is absolute (caller frees). */
static char *resolve(const char *base_dir, const char *name)
{
    if (name[0] == '/' || !base_dir)
        return spw_xstrdup(name);
    size_t n = strlen(base_dir) + strlen(name) + 2;
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s/%s", base_dir, name);
    return p;
}

/* A string member `key` of map m into *out (NULL when absent). */
static int ystr(spw_ydoc_t *d, const spw_ynode_t *m, const char *key, const char **out,
                spw_error_t *err)
{
    const spw_ynode_t *v = spw_ymap_get(m, key);
    *out = NULL;
    return v ? spw_ynode_str(d, v, key, out, err) : 0;
}

/* The entry of list `section` (clusters, users, contexts) named name: its
 * inner map (the value of key `inner`), or NULL with err. */
static const spw_ynode_t *named(spw_ydoc_t *d, const spw_ynode_t *root, const char *section,
                                const char *inner, const char *name, spw_error_t *err)
{
    const spw_ynode_t *list = spw_ymap_get(root, section);
    for (size_t i = 0; list && list->kind == SPW_Y_SEQ && i < list->n; i++) {
        const spw_ynode_t *e = list->items[i];
        const spw_ynode_t *nn = spw_ymap_get(e, "name");
        if (nn && nn->kind == SPW_Y_SCALAR && strcmp(nn->str, name) == 0) {
            const spw_ynode_t *m = spw_ymap_get(e, inner);
            if (!m || m->kind != SPW_Y_MAP) {
                spw_errorf(err, "%s:%d:%d: %s '%s' has no '%s' mapping", spw_ydoc_name(d), e->line,
                           e->col, section, name, inner);
                return NULL;
            }
            return m;
        }
    }
    spw_errorf(err, "%s: no %s entry named '%s'", spw_ydoc_name(d), section, name);
    return NULL;
}

/* File data (key) or a file (key_file, resolved against dir) into *out. */
static int pem_of(spw_ydoc_t *d, const spw_ynode_t *m, const char *data_key, const char *file_key,
                  const char *dir, char **out, size_t *len, spw_error_t *err)
{
    const char *data, *file;
    if (ystr(d, m, data_key, &data, err) < 0 || ystr(d, m, file_key, &file, err) < 0)
        return -1;
    if (data) {
        *out = spw_kube_b64_decode(data, len);
        if (!*out) {
            const spw_ynode_t *v = spw_ymap_get(m, data_key);
            return spw_errorf(err, "%s:%d:%d: %s is not base64", spw_ydoc_name(d), v->line, v->col,
                              data_key);
        }
    } else if (file) {
        char *p = resolve(dir, file);
        *out = spw_read_file(p, len, err);
        free(p);
        if (!*out)
            return -1;
    }
    return 0;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static int exec_of(spw_ydoc_t *d, const spw_ynode_t *x, const char *dir, kube_exec_t *e,
                   spw_error_t *err)
{
    const char *cmd, *ver;
    if (ystr(d, x, "command", &cmd, err) < 0 || ystr(d, x, "apiVersion", &ver, err) < 0)
        return -1;
    if (!cmd || !cmd[0])
        return spw_errorf(err, "%s:%d:%d: users[].user.exec needs 'command'", spw_ydoc_name(d),
                          x->line, x->col);
    const spw_ynode_t *args = spw_ymap_get(x, "args"), *env = spw_ymap_get(x, "env");
    if ((args && args->kind != SPW_Y_SEQ) || (env && env->kind != SPW_Y_SEQ))
        return spw_errorf(err, "%s:%d:%d: exec args and env must be lists", spw_ydoc_name(d),
                          x->line, x->col);
    size_t na = args ? args->n : 0, ne = env ? env->n : 0;
    e->command = strchr(cmd, '/') ? resolve(dir, cmd) : spw_xstrdup(cmd);
    e->api_version = spw_xstrdup(ver ? ver : "client.authentication.k8s.io/v1");
    e->argv = spw_xcalloc(na + 2, sizeof(char *));
    e->env = spw_xcalloc(ne + 1, sizeof(char *));
    e->argv[0] = spw_xstrdup(e->command);
    for (size_t i = 0; i < na; i++) {
        const char *a;
        if (spw_ynode_str(d, args->items[i], "exec args", &a, err) < 0)
            return -1;
        e->argv[i + 1] = spw_xstrdup(a);
    }
    for (size_t i = 0; i < ne; i++) {
        const char *name, *value;
        if (ystr(d, env->items[i], "name", &name, err) < 0 ||
            ystr(d, env->items[i], "value", &value, err) < 0)
            return -1;
        if (!name || !name[0] || strchr(name, '='))
            return spw_errorf(err, "%s:%d:%d: exec env entries need a 'name'", spw_ydoc_name(d),
                              env->items[i]->line, env->items[i]->col);
        size_t n = strlen(name) + strlen(value ? value : "") + 2;
        e->env[i] = spw_xmalloc(n);
        snprintf(e->env[i], n, "%s=%s", name, value ? value : "");
    }
    return 0;
}

static spw_kubeconfig_t *kc_new(void)
{
    spw_kubeconfig_t *kc = spw_xcalloc(1, sizeof(*kc));
    pthread_mutex_init(&kc->lock, NULL);
    return kc;
}

/* The kubeconfig file to read when none is named, or NULL when neither
 * $KUBECONFIG's first file nor ~/.kube/config exists (caller frees). */
static char *default_path(void)
{
    const char *env = getenv("KUBECONFIG");
    struct stat st;
    if (env && env[0]) {
        size_t n = strcspn(env, ":");
        char *p = spw_xmalloc(n + 1);
        memcpy(p, env, n);
        p[n] = '\0';
        return p;
    }
    const char *home = getenv("HOME");
    if (!home)
        return NULL;
    char *p = resolve(home, ".kube/config");
    if (stat(p, &st) == 0)
        return p;
    free(p);
    return NULL;
}

static int load_doc(spw_kubeconfig_t *kc, spw_ydoc_t *d, const char *dir, const char *context,
                    spw_error_t *err)
{
    const spw_ynode_t *root = spw_ydoc_root(d);
    const char *cur, *cname, *uname, *ns, *server, *tok, *tokf;
    if (!root || root->kind != SPW_Y_MAP)
        return spw_errorf(err, "%s: not a kubeconfig (expected a mapping)", spw_ydoc_name(d));
    if (ystr(d, root, "current-context", &cur, err) < 0)
        return -1;
    if (!context || !context[0])
        context = cur;
    if (!context || !context[0])
        return spw_errorf(err, "%s: no current-context; name one with the pool's 'context'",
                          spw_ydoc_name(d));
    const spw_ynode_t *ctx = named(d, root, "contexts", "context", context, err);
    if (!ctx || ystr(d, ctx, "cluster", &cname, err) < 0 || ystr(d, ctx, "user", &uname, err) < 0 ||
        ystr(d, ctx, "namespace", &ns, err) < 0)
        return -1;
    if (!cname)
        return spw_errorf(err, "%s:%d:%d: context '%s' names no cluster", spw_ydoc_name(d),
                          ctx->line, ctx->col, context);
    const spw_ynode_t *cl = named(d, root, "clusters", "cluster", cname, err);
    if (!cl || ystr(d, cl, "server", &server, err) < 0)
        return -1;
    if (!server || (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0))
        return spw_errorf(err, "%s:%d:%d: cluster '%s' needs a server https://HOST:PORT",
                          spw_ydoc_name(d), cl->line, cl->col, cname);
    const spw_ynode_t *ins = spw_ymap_get(cl, "insecure-skip-tls-verify");
    char *ca = NULL, *cert = NULL, *key = NULL;
    if (ins && spw_ynode_bool(d, ins, "insecure-skip-tls-verify", &kc->base.insecure, err) < 0)
        return -1;
    if (pem_of(d, cl, "certificate-authority-data", "certificate-authority", dir, &ca,
               &kc->base.ca_len, err) < 0)
        return -1;
    kc->base.ca_pem = ca;
    kc->context = spw_xstrdup(context);
    kc->ns = ns && ns[0] ? spw_xstrdup(ns) : NULL;
    char *srv = spw_xstrdup(server);
    size_t sl = strlen(srv);
    while (sl > 0 && srv[sl - 1] == '/')
        srv[--sl] = '\0';
    kc->base.server = srv;
    if (!uname)
        return 0;
    const spw_ynode_t *u = named(d, root, "users", "user", uname, err);
    if (!u || ystr(d, u, "token", &tok, err) < 0 || ystr(d, u, "tokenFile", &tokf, err) < 0)
        return -1;
    kc->base.token = tok ? spw_xstrdup(tok) : NULL;
    kc->token_file = tokf ? resolve(dir, tokf) : NULL;
    int rc = pem_of(d, u, "client-certificate-data", "client-certificate", dir, &cert,
                    &kc->base.cert_len, err);
    kc->base.cert_pem = cert;
    if (rc < 0 ||
        pem_of(d, u, "client-key-data", "client-key", dir, &key, &kc->base.key_len, err) < 0)
        return -1;
    kc->base.key_pem = key;
    if (!cert != !key)
        return spw_errorf(err, "%s:%d:%d: user '%s' needs both a client certificate and its key",
                          spw_ydoc_name(d), u->line, u->col, uname);
    const spw_ynode_t *x = spw_ymap_get(u, "exec");
    if (x) {
        kc->has_exec = 1;
        if (exec_of(d, x, dir, &kc->exec, err) < 0)
            return -1;
    }
    if (spw_ymap_get(u, "auth-provider"))
        return spw_errorf(err, "%s: user '%s' uses an auth-provider, which Kubernetes removed; "
                          "use an exec plugin (e.g. gke-gcloud-auth-plugin)", spw_ydoc_name(d),
                          uname);
    return 0;
}

spw_kubeconfig_t *spw_kubeconfig_load(const char *path, const char *context, spw_error_t *err)
{
    char *p = path ? spw_xstrdup(path) : default_path();
    if (!p) {
        if (getenv("KUBERNETES_SERVICE_HOST"))
            return spw_kubeconfig_in_cluster(SPW_KUBE_SA_DIR, NULL, NULL, err);
        spw_errorf(err, "no kubeconfig: set the pool's 'kubeconfig', $KUBECONFIG or write "
                        "~/.kube/config (or run spillway in a pod with a service account)");
        return NULL;
    }
    spw_ydoc_t *d = spw_ydoc_load_file(p, err);
    if (!d) {
        free(p);
        return NULL;
    }
    char *slash = strrchr(p, '/');
    if (slash)
        *slash = '\0';
    spw_kubeconfig_t *kc = kc_new();
    int rc = load_doc(kc, d, slash ? (p[0] ? p : "/") : ".", context, err);
    spw_ydoc_destroy(d);
    free(p);
    if (rc < 0) {
        spw_kubeconfig_destroy(kc);
        return NULL;
    }
    return kc;
}

spw_kubeconfig_t *spw_kubeconfig_in_cluster(const char *sa_dir, const char *host,
                                            const char *port, spw_error_t *err)
{
    if (!host)
        host = getenv("KUBERNETES_SERVICE_HOST");
    if (!port)
        port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !host[0])
        return spw_errorf(err, "not in a cluster: KUBERNETES_SERVICE_HOST is not set"), NULL;
    spw_kubeconfig_t *kc = kc_new();
    char *f = resolve(sa_dir, "ca.crt");
    kc->base.ca_pem = spw_read_file(f, &kc->base.ca_len, err);
    free(f);
    if (!kc->base.ca_pem) {
        spw_kubeconfig_destroy(kc);
        return NULL;
    }
    size_t n = strlen(host) + strlen(port ? port : "443") + 16;
    char *srv = spw_xmalloc(n);
    kc->base.server = srv;
    /* An IPv6 service address needs brackets in a URL. */
    snprintf(srv, n, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
             port && port[0] ? port : "443");
    kc->token_file = resolve(sa_dir, "token");
    kc->context = spw_xstrdup("in-cluster");
    f = resolve(sa_dir, "namespace");
    size_t len;
    char *ns = spw_read_file(f, &len, NULL);
    free(f);
    if (ns) {
        ns[strcspn(ns, " \r\n")] = '\0';
        if (ns[0])
            kc->ns = ns;
        else
            free(ns);
    }
    return kc;
}

/* ---- credentials ------------------------------------------------------- */

static void exec_forget(spw_kubeconfig_t *kc)
{
    free(kc->x_token);
    free(kc->x_cert);
    free(kc->x_key);
    kc->x_token = kc->x_cert = kc->x_key = NULL;
    kc->x_valid = 0;
    kc->x_expiry_s = 0;
}

/* Runs the exec plugin and keeps its ExecCredential's status. */
static int exec_run(spw_kubeconfig_t *kc, double timeout_s, spw_error_t *err)
{
    kube_exec_t *e = &kc->exec;
    size_t ne = 0, nx = 0;
    while (environ[ne])
        ne++;
    while (e->env[nx])
        nx++;
    char **envp = spw_xcalloc(ne + nx + 2, sizeof(char *));
    size_t k = 0;
    char info[256];
    snprintf(info, sizeof(info),
             "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
             "\"spec\":{\"interactive\":false}}",
             e->api_version);
    for (size_t i = 0; i < nx; i++)
        envp[k++] = e->env[i];
    envp[k++] = info;
    for (size_t i = 0; i < ne; i++) {
        size_t nl = strcspn(environ[i], "=");
        int dup = strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21) == 0;
        for (size_t j = 0; j < nx && !dup; j++)
            dup = strncmp(e->env[j], environ[i], nl + 1) == 0;
        if (!dup)
            envp[k++] = environ[i];
    }
    spw_run_t r = {.path = e->command,
                   .argv = (const char *const *)e->argv,
                   .envp = envp,
                   .search_path = strchr(e->command, '/') == NULL,
                   .timeout_s = timeout_s > 0 ? timeout_s : 30};
    char *out = NULL;
    spw_error_t e2 = {{0}};
    int st = spw_run(&r, &out, &e2);
    free(envp);
    kc->exec_runs++;
    if (st != 0) {
        free(out);
        return spw_errorf(err, "the kubeconfig's exec credential plugin: %s",
                          e2.text[0] ? e2.text : "failed");
    }
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    free(out);
    json_t *s = json_object_get(j, "status");
    const char *tok = json_string_value(json_object_get(s, "token"));
    const char *cert = json_string_value(json_object_get(s, "clientCertificateData"));
    const char *key = json_string_value(json_object_get(s, "clientKeyData"));
    const char *exp = json_string_value(json_object_get(s, "expirationTimestamp"));
    const char *kind = json_string_value(json_object_get(j, "kind"));
    double exp_s = 0;
    if (!j || !kind || strcmp(kind, "ExecCredential") != 0 || !json_is_object(s) ||
        (!tok && !cert) || (!cert != !key) || (exp && spw_parse_rfc3339(exp, &exp_s) < 0)) {
        json_decref(j);
        return spw_errorf(err, "exec credential plugin %s: its output is not an ExecCredential "
                          "with status.token or status.clientCertificateData and "
                          "clientKeyData (and an RFC 3339 expirationTimestamp)", e->command);
    }
    exec_forget(kc);
    kc->x_token = tok ? spw_xstrdup(tok) : NULL;
    kc->x_cert = cert ? spw_xstrdup(cert) : NULL;
    kc->x_key = key ? spw_xstrdup(key) : NULL;
    kc->x_expiry_s = exp_s;
    kc->x_valid = 1;
    json_decref(j);
    return 0;
}

int spw_kubeconfig_auth(spw_kubeconfig_t *kc, double now_s, double timeout_s, spw_kube_auth_t *out,
                        spw_error_t *err)
{
    int rc = 0;
    pthread_mutex_lock(&kc->lock);
    *out = kc->base;
    if (kc->token_file) {
        size_t len;
        char *t = spw_read_file(kc->token_file, &len, err);
        if (!t) {
            rc = -1;
            goto done;
        }
        t[strcspn(t, "\r\n")] = '\0';
        free(kc->file_token);
        kc->file_token = t;
        out->token = t;
    }
    if (kc->has_exec) {
        if (!kc->x_valid || (kc->x_expiry_s > 0 && kc->x_expiry_s - 10 <= now_s)) {
            if (exec_run(kc, timeout_s, err) < 0) {
                rc = -1;
                goto done;
            }
        }
        if (kc->x_token)
            out->token = kc->x_token;
        if (kc->x_cert) {
            out->cert_pem = kc->x_cert;
            out->cert_len = strlen(kc->x_cert);
            out->key_pem = kc->x_key;
            out->key_len = strlen(kc->x_key);
        }
    }
done:
    pthread_mutex_unlock(&kc->lock);
    return rc;
}

void spw_kubeconfig_invalidate(spw_kubeconfig_t *kc)
{
    pthread_mutex_lock(&kc->lock);
    exec_forget(kc);
    pthread_mutex_unlock(&kc->lock);
}

const char *spw_kubeconfig_namespace(const spw_kubeconfig_t *kc)
{
    return kc->ns;
}

const char *spw_kubeconfig_context(const spw_kubeconfig_t *kc)
{
    return kc->context;
}

unsigned spw_kubeconfig_exec_runs(const spw_kubeconfig_t *kc)
{
    return kc->exec_runs;
}

void spw_kubeconfig_destroy(spw_kubeconfig_t *kc)
{
    if (!kc)
        return;
    exec_forget(kc);
    free(kc->context);
    free(kc->ns);
    free((char *)kc->base.server);
    free((char *)kc->base.ca_pem);
    free((char *)kc->base.token);
    free(kc->token_file);
    free(kc->file_token);
    free((char *)kc->base.cert_pem);
    free((char *)kc->base.key_pem);
    free(kc->exec.command);
    free(kc->exec.api_version);
    strv_free(kc->exec.argv);
    strv_free(kc->exec.env);
    pthread_mutex_destroy(&kc->lock);
    free(kc);
}
