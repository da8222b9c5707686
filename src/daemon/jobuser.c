/* jobuser.c: who the daemon's jobs run as, and which of the daemon's own
 * environment variables they see (docs/daemon.md, "Jobs cannot reach the
 * daemon").  Resolved once at start from the config and the password file. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/jobuser.h"
#include "util/error.h"

/* The daemon's variables every job inherits, besides daemon.job_env:
 * enough for programs to find themselves, their libraries and the locale,
 * and nothing that names the daemon, its tokens or its user. */
static const char *const default_pass[] = {
    "PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
};
/* Only when jobs run as the daemon's own user: it is their user too. */
static const char *const own_user_pass[] = {"HOME", "USER", "LOGNAME", "SHELL"};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void user_clear(spw_jobuser_t *u)
{
    free(u->name);
    free(u->home);
    memset(u, 0, sizeof(*u));
}

/* Fills u for user `name` (the daemon is root).  0, or -1 with a sentence
 * naming `key` and what to do. */
static int user_resolve(spw_jobuser_t *u, const char *name, const char *key, int allow_root,
                        spw_error_t *err)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    int rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
    if (!res) {
        if (rc)
            return spw_errorf(err, "%s: cannot look up user '%s': %s", key, name, strerror(rc));
        return spw_errorf(err,
                          "%s: user '%s' does not exist; create it (as root: useradd --system "
                          "--user-group --no-create-home --shell /usr/sbin/nologin %s; "
                          "scripts/deps.sh does this for spillway-job) or name an existing user",
                          key, name, name);
    }
    if (pw.pw_uid == 0 && !allow_root)
        return spw_errorf(err,
                          "%s: jobs would run as root (user '%s'), and a job running as root "
                          "can read every token and stop the daemon; name an unprivileged user, "
                          "or set daemon.allow_root_jobs: true if you really mean it", key, name);
    u->set = 1;
    u->uid = pw.pw_uid;
    u->gid = pw.pw_gid;
    u->name = spw_xstrdup(pw.pw_name);
    u->home = spw_xstrdup(pw.pw_dir && pw.pw_dir[0] ? pw.pw_dir : "/");
    return 0;
}

static void pass_list(spw_jobusers_t *us, const spw_daemon_conf_t *dc, int own_user)
{
    size_t n = N_OF(default_pass) + N_OF(own_user_pass) + dc->njob_env, k = 0;
    us->env_pass = spw_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < N_OF(default_pass); i++)
        us->env_pass[k++] = default_pass[i];
    if (own_user)
        for (size_t i = 0; i < N_OF(own_user_pass); i++)
            us->env_pass[k++] = own_user_pass[i];
    for (size_t i = 0; i < dc->njob_env; i++)
        us->env_pass[k++] = dc->job_env[i];
    us->env_pass[k] = NULL;
}

int spw_jobusers_init(spw_jobusers_t *us, const spw_daemon_conf_t *dc, spw_error_t *err)
{
    memset(us, 0, sizeof(*us));
    if (geteuid() != 0) {
        /* Switching users needs root: a named user other than our own would
         * be silently ignored, so refuse it. */
        struct passwd *me = getpwuid(geteuid());
        const char *mine = me ? me->pw_name : "";
        if (dc->run_as && strcmp(dc->run_as, mine) != 0)
            return spw_errorf(err,
                              "daemon.run_as: '%s' needs the daemon to run as root (it runs as "
                              "uid %ld); start it as root, or remove run_as (jobs then run as "
                              "the daemon's own user)", dc->run_as, (long)geteuid());
        for (size_t i = 0; i < dc->nteam_run_as; i++)
            if (strcmp(dc->team_run_as[i].user, mine) != 0)
                return spw_errorf(err,
                                  "team '%s': run_as '%s' needs the daemon to run as root (it "
                                  "runs as uid %ld)", dc->team_run_as[i].team,
                                  dc->team_run_as[i].user, (long)geteuid());
        pass_list(us, dc, 1);
        return 0;
    }
    const char *dflt = dc->run_as ? dc->run_as : SPW_JOB_USER_DEFAULT;
    if (user_resolve(&us->dflt, dflt, dc->run_as ? "daemon.run_as" : "daemon.run_as (default)",
                     dc->allow_root_jobs, err) < 0)
        goto error;
    us->teams = spw_xcalloc(dc->nteam_run_as + 1, sizeof(*us->teams));
    us->team_names = spw_xcalloc(dc->nteam_run_as + 1, sizeof(char *));
    for (size_t i = 0; i < dc->nteam_run_as; i++) {
        char key[128];
        snprintf(key, sizeof(key), "team '%s' run_as", dc->team_run_as[i].team);
        if (user_resolve(&us->teams[i], dc->team_run_as[i].user, key, dc->allow_root_jobs,
                         err) < 0)
            goto error;
        us->team_names[i] = dc->team_run_as[i].team;
        us->nteams = i + 1;
    }
    pass_list(us, dc, 0);
    return 0;
error:
    spw_jobusers_clear(us);
    return -1;
}

/* Adds team name t to the set names[0..*n) unless it is there. */
static void team_add(const char **names, size_t *n, const char *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(names[i], t) == 0)
            return;
    names[(*n)++] = t;
}

int spw_jobusers_check_shared(const spw_jobusers_t *us, const spw_config_t *cfg,
                              spw_error_t *err)
{
    const spw_daemon_conf_t *dc = &cfg->daemon;
    const spw_gov_t *g = &cfg->fleet.gov;
    if (!spw_jobusers_switch(us) || dc->share_run_as)
        return 0;
    /* The teams the daemon knows: its teams: entries and its tokens'. */
    const char **names = spw_xcalloc(g->nteams + dc->ntokens + us->nteams + 1, sizeof(char *));
    size_t n = 0;
    for (size_t i = 0; i < g->nteams; i++)
        team_add(names, &n, g->teams[i].name);
    for (size_t i = 0; i < dc->ntokens; i++)
        team_add(names, &n, dc->tokens[i].team);
    for (size_t i = 0; i < us->nteams; i++)
        team_add(names, &n, us->team_names[i]);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        for (size_t k = i + 1; k < n && rc == 0; k++) {
            const spw_jobuser_t *a = spw_jobusers_for(us, names[i]);
            const spw_jobuser_t *b = spw_jobusers_for(us, names[k]);
            if (a->uid != b->uid)
                continue;
            int dflt = a == &us->dflt || b == &us->dflt;
            rc = spw_errorf(err,
                            "teams '%s' and '%s' would both run their jobs as user %s%s, "
                            "reaching each other's processes and checkpoints; give '%s' a "
                            "user of its own (teams: run_as: USER) or set "
                            "daemon.share_run_as: true", names[i], names[k], a->name,
                            dflt ? " (the default run_as)" : "", names[k]);
        }
    free(names);
    return rc;
}

const spw_jobuser_t *spw_jobusers_for(const spw_jobusers_t *us, const char *team)
{
    for (size_t i = 0; team && i < us->nteams; i++)
        if (strcmp(us->team_names[i], team) == 0)
            return &us->teams[i];
    return &us->dflt;
}

int spw_jobusers_switch(const spw_jobusers_t *us)
{
    return us->dflt.set;
}

void spw_jobusers_clear(spw_jobusers_t *us)
{
    if (!us)
        return;
    user_clear(&us->dflt);
    for (size_t i = 0; i < us->nteams; i++)
        user_clear(&us->teams[i]);
    free(us->teams);
    free(us->team_names);
    free(us->env_pass);
    memset(us, 0, sizeof(*us));
}

int spw_jobuser_reaches(const spw_jobuser_t *u, const char *path, char *blocker, size_t cap)
{
    char *real = u->set ? realpath(path, NULL) : NULL;
    if (!real)
        return 1;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", real);
    free(real);
    /* Each ancestor, from the root down: "/", "/a", "/a/b" ... (not path). */
    for (char *slash = dir; (slash = strchr(slash + 1, '/')) != NULL;) {
        *slash = '\0';
        struct stat st;
        const char *at = dir[0] ? dir : "/";
        if (stat(at, &st) == 0) {
            mode_t need = st.st_uid == u->uid ? S_IXUSR : st.st_gid == u->gid ? S_IXGRP : S_IXOTH;
            if (!(st.st_mode & need)) {
                snprintf(blocker, cap, "%s", at);
                return 0;
            }
        }
        *slash = '/';
    }
    return 1;
}

int spw_jobuser_enters(const spw_jobuser_t *u, const char *path, char *blocker, size_t cap)
{
    if (!spw_jobuser_reaches(u, path, blocker, cap))
        return 0;
    struct stat st;
    if (!u->set || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return 1;
    mode_t need = st.st_uid == u->uid ? S_IXUSR : st.st_gid == u->gid ? S_IXGRP : S_IXOTH;
    if (st.st_mode & need)
        return 1;
    snprintf(blocker, cap, "%s", path);
    return 0;
}

/* "NAME=VALUE", newly allocated. */
static char *env_kv(const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *s = spw_xmalloc(len);
    snprintf(s, len, "%s=%s", name, value);
    return s;
}

char **spw_jobenv_build(const spw_jobuser_t *u, const spw_env_var_t *env, size_t nenv,
                        const char *const *own, const char *const *extra)
{
    size_t nown = 0, nextra = 0, n = 0;
    while (own && own[nown])
        nown++;
    while (extra && extra[nextra])
        nextra++;
    char **out = spw_xcalloc(nenv + nown + nextra + 4, sizeof(char *));
    if (u->set) {  /* its user's, not the daemon's; the spec may override */
        out[n++] = env_kv("HOME", u->home);
        out[n++] = env_kv("USER", u->name);
        out[n++] = env_kv("LOGNAME", u->name);
    }
    for (size_t i = 0; i < nenv; i++)
        if (!spw_jobspec_env_reserved(env[i].key))
            out[n++] = env_kv(env[i].key, env[i].value);
    for (size_t i = 0; i < nown; i++)
        out[n++] = spw_xstrdup(own[i]);
    for (size_t i = 0; i < nextra; i++)
        out[n++] = spw_xstrdup(extra[i]);
    out[n] = NULL;
    return out;
}

void spw_jobenv_free(char **env)
{
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}
