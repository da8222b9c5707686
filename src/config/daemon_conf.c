/* daemon_conf.c: the daemon section: listen, limits, tokens and tokens_file, who jobs run
 * as (run_as, job_env), the emulated cloud; and its defaults. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_private.h"
#include "util/yaml.h"

/* An ssh map (user, key, known_hosts, port, down_after_s: cfg_ssh_keys)
 * into the given fields, which it replaces (owned strings). */
static int ssh_section(ctx_t *x, const spw_ynode_t *n, const char *what, char **user, char **key,
                       char **known_hosts, int *port, double *down_after_s, spw_error_t *err)
{
    spw_pool_backend_conf_t sc;
    memset(&sc, 0, sizeof(sc));
    int rc = cfg_ssh_keys(x, n, what, &sc, err);
    free(*user);
    free(*key);
    free(*known_hosts);
    *user = sc.ssh_user;
    *key = sc.ssh_key;
    *known_hosts = sc.ssh_known_hosts;
    *port = sc.ssh_port;
    *down_after_s = sc.ssh_down_after_s;
    return rc;
}

/* daemon.emulated's boot_command, hosts_dir and ssh: emulated instances
 * that are real hosts (docs/hosts.md, "Cloud instances"). */
static int emulated_hosts(ctx_t *x, const spw_ynode_t *v, spw_daemon_conf_t *dc,
                          spw_error_t *err)
{
    const spw_ynode_t *b = spw_ymap_get(v, "boot_command"), *h = spw_ymap_get(v, "hosts_dir"),
                      *sn = spw_ymap_get(v, "ssh");
    const char *s;
    if (!b && (h || sn))
        return cfg_at(x, h ? h : sn, err, "daemon.emulated: hosts_dir and ssh need boot_command "
                                      "(the program that boots an instance, e.g. "
                                      "scripts/netns-hosts.sh)");
    if (!b)
        return 0;
    if (spw_ynode_str(x->d, b, "boot_command", &s, err) < 0)
        return -1;
    free(dc->emulated_boot_command);
    dc->emulated_boot_command = cfg_resolve(x->base_dir, s);
    if (h) {
        if (spw_ynode_str(x->d, h, "hosts_dir", &s, err) < 0)
            return -1;
        free(dc->emulated_hosts_dir);
        dc->emulated_hosts_dir = cfg_resolve(x->base_dir, s);
    }
    if (sn && ssh_section(x, sn, "(daemon.emulated)", &dc->emulated_ssh_user,
                          &dc->emulated_ssh_key, &dc->emulated_ssh_known_hosts,
                          &dc->emulated_ssh_port, &dc->emulated_ssh_down_after_s, err) < 0)
        return -1;
    return 0;
}

static int token_entry(ctx_t *x, const spw_ynode_t *n, spw_token_t *t, spw_error_t *err)
{
    static const char *const keys[] = {"name", "token", "team", "admin", "metrics", "revoked",
                                       "role", NULL};
    if (spw_ymap_check_keys(x->d, n, "a token", keys, err) < 0)
        return -1;
    const char *tok, *team = NULL, *name = NULL;
    int admin = 0, metrics = 0, revoked = 0;
    if (spw_ynode_str(x->d, spw_ymap_get(n, "token"), "token", &tok, err) < 0)
        return -1;
    if (strlen(tok) < 16)
        return cfg_at(x, spw_ymap_get(n, "token"), err, "%s",
                  "token: use at least 16 characters (e.g. from `openssl rand -hex 16`)");
    for (const char *c = tok; *c; c++)
        if (*c <= ' ' || *c > '~')
            return cfg_at(x, spw_ymap_get(n, "token"), err, "%s",
                      "token: printable ASCII without spaces only");
    if (spw_ymap_get(n, "team") && spw_ynode_str(x->d, spw_ymap_get(n, "team"), "team", &team, err) < 0)
        return -1;
    if (spw_ymap_get(n, "admin") && spw_ynode_bool(x->d, spw_ymap_get(n, "admin"), "admin", &admin, err) < 0)
        return -1;
    if (spw_ymap_get(n, "metrics") &&
        spw_ynode_bool(x->d, spw_ymap_get(n, "metrics"), "metrics", &metrics, err) < 0)
        return -1;
    if (spw_ymap_get(n, "revoked") &&
        spw_ynode_bool(x->d, spw_ymap_get(n, "revoked"), "revoked", &revoked, err) < 0)
        return -1;
    int viewer = 0;
    const spw_ynode_t *rn = spw_ymap_get(n, "role");
    if (rn) {
        const char *role;
        if (spw_ynode_str(x->d, rn, "role", &role, err) < 0)
            return -1;
        if (strcmp(role, "viewer") == 0)
            viewer = 1;
        else if (strcmp(role, "admin") == 0)
            admin = 1;
        else if (strcmp(role, "member") == 0) {
            if (!team)
                return cfg_at(x, rn, err, "%s", "role: member needs 'team: NAME'");
        } else
            return cfg_at(x, rn, err, "role: expected admin, member or viewer (read-only), got "
                                      "'%.40s'", role);
    }
    if (viewer ? admin || metrics : (team != NULL) + admin + metrics != 1)
        return cfg_at(x, n, err, "%s", "a token needs exactly one of 'team: NAME', 'admin: true' "
                                       "(role: admin), 'metrics: true' (reads /metrics only) or "
                                       "'role: viewer' (reads only; with a team, that team's)");
    if (spw_ymap_get(n, "name")) {
        if (spw_ynode_str(x->d, spw_ymap_get(n, "name"), "name", &name, err) < 0)
            return -1;
        size_t len = strlen(name);
        if (len == 0 || len > 64 || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                 "0123456789._-") != len)
            return cfg_at(x, spw_ymap_get(n, "name"), err,
                      "name: 1 to 64 letters, digits, '.', '_' or '-', got '%s'", name);
    }
    t->name = name ? spw_xstrdup(name) : NULL;
    t->token = spw_xstrdup(tok);
    t->team = team ? spw_xstrdup(team) : NULL;
    t->admin = admin;
    t->metrics = metrics;
    t->viewer = viewer;
    t->revoked = revoked;
    return 0;
}

/* A user name (as useradd takes them: a letter or '_' first, then letters,
 * digits, '_', '-' or '.', at most 32) at n, borrowed into *out. */
int cfg_user_value(ctx_t *x, const spw_ynode_t *n, const char *key, const char **out,
               spw_error_t *err)
{
    const char *s;
    if (spw_ynode_str(x->d, n, key, &s, err) < 0)
        return -1;
    size_t len = strlen(s);
    int good = len > 0 && len <= 32 && (isalpha((unsigned char)s[0]) || s[0] == '_');
    for (size_t i = 1; good && i < len; i++)
        good = isalnum((unsigned char)s[i]) || strchr("_-.", s[i]);
    if (!good)
        return cfg_at(x, n, err, "%s: '%.40s' is not a user name (a letter first, then letters, "
                  "digits, '_', '-' or '.'; create it with useradd)", key, s);
    *out = s;
    return 0;
}

/* daemon.job_env: names of variables, or PREFIX*; never a token. */
static int job_env_key(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    spw_daemon_conf_t *dc = &x->cfg->daemon;
    if (cfg_owned_list(x, n, "job_env", "variable", &dc->job_env, &dc->njob_env, err) < 0)
        return -1;
    const spw_ynode_t *v = spw_ymap_get(n, "job_env");
    for (size_t i = 0; i < dc->njob_env; i++) {
        const char *e = dc->job_env[i];
        const spw_ynode_t *at_n = v && v->kind == SPW_Y_SEQ ? v->items[i] : v;
        size_t len = strlen(e);
        int good = len > 0 && (isalpha((unsigned char)e[0]) || e[0] == '_');
        for (size_t k = 1; good && k < len; k++)
            good = isalnum((unsigned char)e[k]) || e[k] == '_' || (e[k] == '*' && k == len - 1);
        if (!good)
            return cfg_at(x, at_n, err, "job_env: '%.40s' is not a variable name (letters, digits "
                      "and '_', optionally ending in '*' for a prefix)", e);
        int prefix = e[len - 1] == '*';
        if (prefix ? strncmp("SPILLWAY_TOKEN", e, len - 1) == 0 : strncmp(e, "SPILLWAY_", 9) == 0)
            return cfg_at(x, at_n, err, "job_env: '%.40s' would pass the daemon's SPILLWAY_* "
                      "variables (its tokens among them) to jobs; name the variables you need "
                      "instead", e);
    }
    return 0;
}

/* daemon.allowed_hosts: names the Host header may carry (NAME or NAME:PORT,
 * as a browser writes them), for a DNS name or a reverse proxy in front. */
static int allowed_hosts_key(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    spw_daemon_conf_t *dc = &x->cfg->daemon;
    if (cfg_owned_list(x, n, "allowed_hosts", "host name", &dc->allowed_hosts,
                       &dc->nallowed_hosts, err) < 0)
        return -1;
    const spw_ynode_t *v = spw_ymap_get(n, "allowed_hosts");
    for (size_t i = 0; i < dc->nallowed_hosts; i++) {
        const char *h = dc->allowed_hosts[i];
        size_t len = strlen(h);
        if (len == 0 || len > 255 ||
            strspn(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-:[]") != len)
            return cfg_at(x, v && v->kind == SPW_Y_SEQ ? v->items[i] : v, err,
                          "allowed_hosts: '%.60s' is not a host name (like spillway.example.com "
                          "or spillway.example.com:443)", h);
    }
    return 0;
}

/* Appends the token entries of list v (a YAML sequence) to dc->tokens. */
static int token_list(ctx_t *x, const spw_ynode_t *v, spw_daemon_conf_t *dc, spw_error_t *err)
{
    if (v->kind != SPW_Y_SEQ)
        return cfg_at(x, v, err, "%s", "tokens: expected a list of {name: ..., token: ..., team: ...}");
    dc->tokens = spw_xrealloc(dc->tokens, (dc->ntokens + v->n + 1) * sizeof(spw_token_t));
    for (size_t i = 0; i < v->n; i++) {
        spw_token_t *t = &dc->tokens[dc->ntokens];
        memset(t, 0, sizeof(*t));
        if (token_entry(x, v->items[i], t, err) < 0)
            return -1;
        dc->ntokens++;
        for (size_t k = 0; k + 1 < dc->ntokens; k++) {
            if (strcmp(dc->tokens[k].token, t->token) == 0)
                return cfg_at(x, v->items[i], err, "%s", "the same token is given twice");
            if (t->name && dc->tokens[k].name && strcmp(dc->tokens[k].name, t->name) == 0)
                return cfg_at(x, v->items[i], err, "the token name '%s' is given twice", t->name);
        }
    }
    return 0;
}

/* Tokens without a name get TEAM-N (admin-N): N counts that team's tokens
 * in file order, skipping names already taken. */
static void token_default_names(spw_daemon_conf_t *dc)
{
    for (size_t i = 0; i < dc->ntokens; i++) {
        spw_token_t *t = &dc->tokens[i];
        if (t->name)
            continue;
        const char *base = t->admin     ? "admin"
                           : t->metrics ? "metrics"
                           : t->team    ? t->team
                                        : "viewer";
        char buf[160];
        for (unsigned k = 1;; k++) {
            snprintf(buf, sizeof(buf), "%.140s-%u", base, k);
            size_t j = 0;
            while (j < dc->ntokens && !(dc->tokens[j].name && strcmp(dc->tokens[j].name, buf) == 0))
                j++;
            if (j == dc->ntokens)
                break;
        }
        t->name = spw_xstrdup(buf);
    }
}

int cfg_private_stat(const char *path, const char *what, const struct stat *sb,
                     spw_error_t *err)
{
    if (!S_ISREG(sb->st_mode))
        return spw_errorf(err, "%s: the %s is not a regular file", path, what);
    if (sb->st_uid != 0 && sb->st_uid != geteuid()) {
        const struct passwd *pw = getpwuid(geteuid());
        return spw_errorf(err, "%s: the %s (a secret) is owned by uid %u, which could "
                               "change it; make it the daemon's: chown %s %s",
                          path, what, (unsigned)sb->st_uid, pw ? pw->pw_name : "root", path);
    }
    if (sb->st_mode & (S_IRWXG | S_IRWXO))
        return spw_errorf(err, "%s: mode %04o lets other users read or change the %s (a "
                               "secret); make it private to the daemon's user: chmod 600 %s",
                          path, (unsigned)(sb->st_mode & 07777), what, path);
    return 0;
}

/* The whole of the tokens file at path (malloc'd, *len bytes), read from one
 * open file whose owner and mode pass cfg_private_stat and that did not
 * change while it was read (a file being rewritten in place is refused, so
 * a reload never takes half of it); NULL with err. */
static char *read_tokens_file(const char *path, size_t *len, spw_error_t *err)
{
    struct stat a, b;
    char *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        spw_errorf(err, "%s: cannot read the tokens file: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &a) < 0) {
        spw_errorf(err, "%s: cannot check the tokens file: %s", path, strerror(errno));
        goto error;
    }
    if (cfg_private_stat(path, "tokens file", &a, err) < 0)
        goto error;
    size_t cap = (size_t)a.st_size + 1, n = 0;
    buf = spw_xmalloc(cap + 1);
    for (;;) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            spw_errorf(err, "%s: cannot read the tokens file: %s", path, strerror(errno));
            goto error;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n == cap) {
            cap *= 2;
            buf = spw_xrealloc(buf, cap + 1);
        }
    }
    if (fstat(fd, &b) < 0 || (off_t)n != b.st_size || a.st_size != b.st_size ||
        a.st_mtim.tv_sec != b.st_mtim.tv_sec || a.st_mtim.tv_nsec != b.st_mtim.tv_nsec) {
        spw_errorf(err, "%s: the tokens file changed while it was read; write the new tokens "
                        "to another file and rename it over this one", path);
        goto error;
    }
    close(fd);
    buf[n] = '\0';
    *len = n;
    return buf;
error:
    free(buf);
    close(fd);
    return NULL;
}

/* Reads daemon.tokens_file: a YAML list of tokens, or a map whose
 * `tokens:` is that list. */
static int tokens_file(ctx_t *x, spw_daemon_conf_t *dc, spw_error_t *err)
{
    size_t len = 0;
    char *text = read_tokens_file(dc->tokens_file, &len, err);
    if (!text)
        return -1;
    spw_ydoc_t *doc = spw_ydoc_load_mem(dc->tokens_file, text, len, err);
    free(text);
    if (!doc)
        return -1;
    ctx_t fx = *x;
    fx.d = doc;
    const spw_ynode_t *root = spw_ydoc_root(doc);
    int rc = 0;
    if (!root) {
        rc = spw_errorf(err, "%s: empty tokens file: expected a list of {name: ..., token: ..., "
                             "team: ...}", dc->tokens_file);
    } else if (root->kind == SPW_Y_MAP) {
        static const char *const keys[] = {"tokens", NULL};
        const spw_ynode_t *v = spw_ymap_get(root, "tokens");
        if (spw_ymap_check_keys(doc, root, "the tokens file", keys, err) < 0)
            rc = -1;
        else if (!v)
            rc = cfg_at(&fx, root, err, "%s", "expected 'tokens:' with a list of tokens");
        else
            rc = token_list(&fx, v, dc, err);
    } else {
        rc = token_list(&fx, root, dc, err);
    }
    spw_ydoc_destroy(doc);
    return rc;
}

int cfg_daemon_section(ctx_t *x, const spw_ynode_t *n, spw_error_t *err)
{
    static const char *const keys[] = {"listen", "state_dir", "gpus", "default_est_runtime_s",
                                       "kill_grace_s", "idle_timeout_s", "max_instance_lifetime_s", "tick_s",
                                       "max_body_bytes", "tokens", "tokens_file",
                                       "max_gpus_per_job", "max_instances_per_job",
                                       "max_queued_per_team", "max_header_bytes",
                                       "request_timeout_s", "max_connections",
                                       "max_connections_per_ip", "emulated", "run_as",
                                       "allow_root_jobs", "job_env", "sample_s",
                                       "idle_gpu", "allowed_hosts", "metrics_auth",
                                       "metrics_per_job", "share_run_as", "job_pids_max",
                                       "job_memory_mib", "log_dir", "max_log_bytes",
                                       "min_free_mib", "image_max_bytes", "image_max_files",
                                       "cloud_ssh", "job_retention_s", "tls_cert",
                                       "tls_key", "oidc", NULL};
    static const char *const ekeys[] = {"seed", "capacity", "preempt_rate_per_h",
                                        "boot_command", "hosts_dir", "ssh", NULL};
    static const char *const ikeys[] = {"threshold_pct", "window_s", "action", NULL};
    spw_daemon_conf_t *dc = &x->cfg->daemon;
    if (spw_ymap_check_keys(x->d, n, "daemon", keys, err) < 0)
        return -1;
    const spw_ynode_t *v;
    const char *s;
    if ((v = spw_ymap_get(n, "listen"))) {
        if (spw_ynode_str(x->d, v, "listen", &s, err) < 0)
            return -1;
        const char *colon = strrchr(s, ':');
        char *end;
        long port = colon ? strtol(colon + 1, &end, 10) : -1;
        if (!colon || colon == s || !colon[1] || *end || port < 1 || port > 65535)
            return cfg_at(x, v, err, "listen: expected HOST:PORT like 127.0.0.1:8470, got '%s'", s);
        free(dc->listen);
        dc->listen = spw_xstrdup(s);
    }
    if ((v = spw_ymap_get(n, "state_dir"))) {
        if (spw_ynode_str(x->d, v, "state_dir", &s, err) < 0)
            return -1;
        dc->state_dir = cfg_resolve(x->base_dir, s);
    }
    const char *tls_keys[] = {"tls_cert", "tls_key"};
    char **tls_dst[] = {&dc->tls_cert, &dc->tls_key};
    for (int i = 0; i < 2; i++) {
        if (!(v = spw_ymap_get(n, tls_keys[i])))
            continue;
        if (spw_ynode_str(x->d, v, tls_keys[i], &s, err) < 0)
            return -1;
        if (!*s)
            return cfg_at(x, v, err, "%s: expected a PEM file name", tls_keys[i]);
        free(*tls_dst[i]);
        *tls_dst[i] = cfg_resolve(x->base_dir, s);
    }
    if (!dc->tls_cert != !dc->tls_key)
        return cfg_at(x, n, err, "%s", "daemon: tls_cert and tls_key go together: give both "
                                        "(HTTPS) or neither (plain HTTP)");
    if ((v = spw_ymap_get(n, "log_dir"))) {
        if (spw_ynode_str(x->d, v, "log_dir", &s, err) < 0)
            return -1;
        free(dc->log_dir);
        dc->log_dir = cfg_resolve(x->base_dir, s);
    }
    double logb = (double)dc->max_log_bytes;
    if (cfg_num_key(x, n, "max_log_bytes", 0, 1e15, &logb, err) < 0 ||
        cfg_num_key(x, n, "min_free_mib", 0, 1e9, &dc->min_free_mib, err) < 0 ||
        cfg_num_key(x, n, "job_retention_s", 0, 3.1536e9, &dc->job_retention_s, err) < 0)
        return -1;
    dc->max_log_bytes = (uint64_t)logb;
    double img[2] = {(double)dc->image_max_bytes, (double)dc->image_max_files};
    if (cfg_num_key(x, n, "image_max_bytes", 1, 1e15, &img[0], err) < 0 ||
        cfg_num_key(x, n, "image_max_files", 1, 1e12, &img[1], err) < 0)
        return -1;
    dc->image_max_bytes = (uint64_t)img[0];
    dc->image_max_files = (uint64_t)img[1];
    if ((v = spw_ymap_get(n, "gpus"))) {
        if (spw_ynode_str(x->d, v, "gpus", &s, err) < 0)
            return -1;
        if (strcmp(s, "auto") == 0)
            dc->gpus_auto = 1;
        else if (strcmp(s, "slots") == 0)
            dc->gpus_auto = 0;
        else
            return cfg_at(x, v, err, "gpus: expected 'auto' (nvidia-smi) or 'slots' (gpus_per_node), got '%s'", s);
    }
    double body = (double)dc->max_body_bytes;
    if (cfg_num_key(x, n, "default_est_runtime_s", 1, 3.1536e8, &dc->default_est_runtime_s, err) < 0 ||
        cfg_num_key(x, n, "kill_grace_s", 0, 3600, &dc->kill_grace_s, err) < 0 ||
        cfg_num_key(x, n, "idle_timeout_s", 0, 3.1536e8, &dc->idle_timeout_s, err) < 0 ||
        cfg_num_key(x, n, "max_instance_lifetime_s", 0, 3.1536e8, &dc->max_instance_lifetime_s, err) < 0 ||
        cfg_num_key(x, n, "tick_s", 0.001, 10, &dc->tick_s, err) < 0 ||
        cfg_num_key(x, n, "max_body_bytes", 1024, 64 << 20, &body, err) < 0 ||
        cfg_num_key(x, n, "sample_s", 0.1, 3600, &dc->sample_s, err) < 0)
        return -1;
    dc->max_body_bytes = (size_t)body;
    if ((v = spw_ymap_get(n, "idle_gpu"))) {
        const spw_ynode_t *a;
        if (spw_ymap_check_keys(x->d, v, "daemon.idle_gpu", ikeys, err) < 0 ||
            cfg_num_key(x, v, "threshold_pct", 0, 100, &dc->idle_threshold_pct, err) < 0 ||
            cfg_num_key(x, v, "window_s", 1, 3.1536e8, &dc->idle_window_s, err) < 0)
            return -1;
        if ((a = spw_ymap_get(v, "action"))) {
            if (spw_ynode_str(x->d, a, "action", &s, err) < 0)
                return -1;
            if (strcmp(s, "flag") == 0)
                dc->idle_stop = 0;
            else if (strcmp(s, "stop") == 0)
                dc->idle_stop = 1;
            else
                return cfg_at(x, a, err, "idle_gpu.action: expected 'flag' (show it) or 'stop' "
                                     "(cancel the job), got '%s'", s);
        }
    }
    double hdr = dc->max_header_bytes ? (double)dc->max_header_bytes : 16384;
    double conns = dc->max_connections ? dc->max_connections : 1024;
    double per_ip = dc->max_connections_per_ip ? dc->max_connections_per_ip : 64;
    if (cfg_num_key(x, n, "max_header_bytes", 1024, 1 << 20, &hdr, err) < 0 ||
        cfg_num_key(x, n, "request_timeout_s", 0.5, 3600, &dc->request_timeout_s, err) < 0 ||
        cfg_num_key(x, n, "max_connections", 4, 65536, &conns, err) < 0 ||
        cfg_num_key(x, n, "max_connections_per_ip", 1, 65536, &per_ip, err) < 0)
        return -1;
    dc->max_header_bytes = (size_t)hdr;
    dc->max_connections = (uint32_t)conns;
    dc->max_connections_per_ip = (uint32_t)per_ip;
    double lim[3] = {dc->max_gpus_per_job, dc->max_instances_per_job, dc->max_queued_per_team};
    if (cfg_num_key(x, n, "max_gpus_per_job", 0, 1e6, &lim[0], err) < 0 ||
        cfg_num_key(x, n, "max_instances_per_job", 0, 1e6, &lim[1], err) < 0 ||
        cfg_num_key(x, n, "max_queued_per_team", 0, 1e9, &lim[2], err) < 0)
        return -1;
    dc->max_gpus_per_job = (uint32_t)lim[0];
    dc->max_instances_per_job = (uint32_t)lim[1];
    dc->max_queued_per_team = (uint32_t)lim[2];
    if ((v = spw_ymap_get(n, "tokens")) && token_list(x, v, dc, err) < 0)
        return -1;
    dc->ntokens_inline = dc->ntokens;
    if ((v = spw_ymap_get(n, "tokens_file"))) {
        if (spw_ynode_str(x->d, v, "tokens_file", &s, err) < 0)
            return -1;
        if (!*s)
            return cfg_at(x, v, err, "%s", "tokens_file: expected a file name");
        dc->tokens_file = cfg_resolve(x->base_dir, s);
        if (tokens_file(x, dc, err) < 0)
            return -1;
    }
    token_default_names(dc);
    if ((v = spw_ymap_get(n, "oidc")) && cfg_oidc_section(x, v, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "run_as"))) {
        if (cfg_user_value(x, v, "run_as", &s, err) < 0)
            return -1;
        free(dc->run_as);
        dc->run_as = spw_xstrdup(s);
    }
    if ((v = spw_ymap_get(n, "allow_root_jobs")) &&
        spw_ynode_bool(x->d, v, "allow_root_jobs", &dc->allow_root_jobs, err) < 0)
        return -1;
    if (job_env_key(x, n, err) < 0 || allowed_hosts_key(x, n, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "metrics_auth")) &&
        spw_ynode_bool(x->d, v, "metrics_auth", &dc->metrics_auth, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "metrics_per_job")) &&
        spw_ynode_bool(x->d, v, "metrics_per_job", &dc->metrics_per_job, err) < 0)
        return -1;
    if ((v = spw_ymap_get(n, "share_run_as")) &&
        spw_ynode_bool(x->d, v, "share_run_as", &dc->share_run_as, err) < 0)
        return -1;
    double jl[2] = {dc->job_pids_max, dc->job_memory_mib};
    if (cfg_num_key(x, n, "job_pids_max", 0, 4194304, &jl[0], err) < 0 ||
        cfg_num_key(x, n, "job_memory_mib", 0, 1 << 30, &jl[1], err) < 0)
        return -1;
    dc->job_pids_max = (uint32_t)jl[0];
    dc->job_memory_mib = (uint64_t)jl[1];
    if ((v = spw_ymap_get(n, "cloud_ssh"))) {
        dc->cloud_ssh_given = 1;
        if (ssh_section(x, v, "(daemon.cloud_ssh)", &dc->cloud_ssh_user, &dc->cloud_ssh_key,
                        &dc->cloud_ssh_known_hosts, &dc->cloud_ssh_port,
                        &dc->cloud_ssh_down_after_s, err) < 0)
            return -1;
    }
    if ((v = spw_ymap_get(n, "emulated"))) {
        if (spw_ymap_check_keys(x->d, v, "daemon.emulated", ekeys, err) < 0)
            return -1;
        double seed = (double)dc->emulated_seed, cap = 0;
        if (cfg_num_key(x, v, "seed", 0, 9007199254740992.0, &seed, err) < 0 ||
            cfg_num_key(x, v, "capacity", 0, 1e6, &cap, err) < 0 ||
            cfg_num_key(x, v, "preempt_rate_per_h", 0, 3600, &dc->emulated_preempt_rate_per_h, err) < 0)
            return -1;
        dc->emulated_seed = (uint64_t)seed;
        dc->emulated_capacity = (uint32_t)cap;
        if (emulated_hosts(x, v, dc, err) < 0)
            return -1;
    }
    return 0;
}

void cfg_daemon_defaults(spw_daemon_conf_t *dc)
{
    dc->listen = spw_xstrdup("127.0.0.1:8470");
    dc->gpus_auto = 1;
    dc->default_est_runtime_s = 3600;
    dc->kill_grace_s = 10;
    dc->idle_timeout_s = 300;
    dc->tick_s = 0.1;
    dc->max_body_bytes = 1 << 20;
    dc->sample_s = 5;
    dc->idle_threshold_pct = 5;
    dc->idle_window_s = 1800;
    dc->emulated_seed = 1;
    dc->job_pids_max = 4096;
    /* One team's queue is bounded unless the config says 0: every queued
     * job holds memory and a row until it ends. */
    dc->max_queued_per_team = 10000;
    dc->max_log_bytes = 64ull << 20;
    dc->image_max_bytes = 32ull << 30;
    dc->image_max_files = 1000000;
    dc->min_free_mib = 256;
    /* Ended jobs leave memory an hour after their end (the database keeps
     * them), so the daemon's memory follows its live jobs, not its history. */
    dc->job_retention_s = 3600;
}
