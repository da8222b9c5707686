/* client_context.c: the client's own config file, ~/.config/spillway/
 * config.yaml, with named contexts (a daemon's URL, token file and CA), as
 * kubeconfig has them: `spillway context use NAME` picks one,
 * $SPILLWAY_CONTEXT overrides it for one shell. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/client_private.h"
#include "util/error.h"
#include "util/file.h"
#include "util/yaml.h"

const char spw_cli_context_usage[] =
    "usage: spillway context [list]\n"
    "       spillway context use NAME\n"
    "       spillway context current\n"
    "\n"
    "The daemons this client talks to, by name, from its config file\n"
    "($SPILLWAY_CONFIG, else ~/.config/spillway/config.yaml):\n"
    "\n"
    "  current_context: prod\n"
    "  contexts:\n"
    "    prod: {url: http://spillway.example.internal:8470,\n"
    "           token_file: ~/.config/spillway/prod.token, ca: /etc/ssl/corp-ca.pem}\n"
    "    lab:  {url: http://127.0.0.1:8470}\n"
    "\n"
    "Every client command uses the current context's url and token_file\n"
    "unless --url/--token-file or $SPILLWAY_URL/$SPILLWAY_TOKEN(_FILE) say\n"
    "otherwise; $SPILLWAY_CONTEXT names another context for one shell.  A\n"
    "token_file starting with ~/ is in the home directory.\n"
    "\n"
    "  list                 the contexts, the current one marked *\n"
    "  use NAME             make NAME the current context (rewrites the file's\n"
    "                       current_context line)\n"
    "  current              the current context's name\n"
    "\n"
    "Examples:\n"
    "  spillway context use prod && spillway queue\n"
    "  SPILLWAY_CONTEXT=lab spillway submit --gpus 1 -- nvidia-smi\n"
    "\n"
    "Exit status: 0 done; 2 bad usage, no config file, or no such context.\n";

/* The client config file's path, into buf; NULL when there is no home. */
static const char *config_path(char *buf, size_t len)
{
    const char *p = getenv("SPILLWAY_CONFIG");
    if (p && *p)
        return p;
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, len, "%s/spillway/config.yaml", xdg);
    else if (home && *home)
        snprintf(buf, len, "%s/.config/spillway/config.yaml", home);
    else
        return NULL;
    return buf;
}

/* A copy of s with a leading ~/ made the home directory. */
static char *expand_home(const char *s)
{
    const char *home = getenv("HOME");
    if (strncmp(s, "~/", 2) != 0 || !home)
        return spw_xstrdup(s);
    size_t n = strlen(home) + strlen(s);
    char *p = spw_xmalloc(n);
    snprintf(p, n, "%s/%s", home, s + 2);
    return p;
}

/* Loads the file (NULL and *err empty when it does not exist). */
static spw_ydoc_t *load(const char *path, spw_error_t *err)
{
    err->text[0] = '\0';
    if (!path || access(path, F_OK) != 0)
        return NULL;
    return spw_ydoc_load_file(path, err);
}

/* The name of the context in use: $SPILLWAY_CONTEXT, else the file's. */
static const char *current_name(const spw_ynode_t *root)
{
    const char *env = getenv("SPILLWAY_CONTEXT");
    if (env && *env)
        return env;
    const spw_ynode_t *c = spw_ymap_get(root, "current_context");
    return c && c->kind == SPW_Y_SCALAR ? c->str : NULL;
}

void spw_cli_context_apply(spw_cli_common_t *co)
{
    char buf[4096];
    spw_error_t err;
    const char *path = config_path(buf, sizeof(buf));
    spw_ydoc_t *d = load(path, &err);
    if (!d) {
        if (err.text[0]) {
            fprintf(stderr, "spillway: %s\n", err.text);
            exit(SPW_CLI_EUNREACH);
        }
        if (getenv("SPILLWAY_CONTEXT") && *getenv("SPILLWAY_CONTEXT")) {
            fprintf(stderr, "spillway: $SPILLWAY_CONTEXT is %s, but there is no client config "
                            "file (%s)\n", getenv("SPILLWAY_CONTEXT"), path ? path : "no $HOME");
            exit(SPW_CLI_EUNREACH);
        }
        return;
    }
    const spw_ynode_t *root = spw_ydoc_root(d);
    static const char *const top[] = {"current_context", "contexts", NULL};
    static const char *const keys[] = {"url", "token_file", "ca", NULL};
    if (spw_ymap_check_keys(d, root, "the client config", top, &err) < 0) {
        fprintf(stderr, "spillway: %s\n", err.text);
        exit(SPW_CLI_EUNREACH);
    }
    const char *name = current_name(root);
    if (name) {
        const spw_ynode_t *ctx = spw_ymap_get(spw_ymap_get(root, "contexts"), name);
        if (!ctx) {
            fprintf(stderr, "spillway: no context '%s' in %s (spillway context list)\n", name,
                    path);
            exit(SPW_CLI_EUNREACH);
        }
        const char *url = NULL, *tf = NULL, *ca = NULL;
        if (spw_ymap_check_keys(d, ctx, "a context", keys, &err) < 0 ||
            (spw_ymap_get(ctx, "url") &&
             spw_ynode_str(d, spw_ymap_get(ctx, "url"), "url", &url, &err) < 0) ||
            (spw_ymap_get(ctx, "token_file") &&
             spw_ynode_str(d, spw_ymap_get(ctx, "token_file"), "token_file", &tf, &err) < 0) ||
            (spw_ymap_get(ctx, "ca") &&
             spw_ynode_str(d, spw_ymap_get(ctx, "ca"), "ca", &ca, &err) < 0)) {
            fprintf(stderr, "spillway: %s\n", err.text);
            exit(SPW_CLI_EUNREACH);
        }
        /* The environment wins over the file; options win over both. */
        const char *env_url = getenv("SPILLWAY_URL");
        if (url && !(env_url && *env_url))
            co->url = spw_xstrdup(url);   /* lives as long as the process */
        if (tf && !co->token_file && !(co->token && *co->token))
            co->token_file = expand_home(tf);
        if (ca && !co->ca_file)
            co->ca_file = expand_home(ca);
    }
    spw_ydoc_destroy(d);
}

/* Rewrites the file's current_context line to name (or adds one). */
static int set_current(const char *path, const char *name)
{
    spw_error_t err;
    size_t len;
    char *text = spw_read_file(path, &len, &err);
    if (!text) {
        fprintf(stderr, "spillway context: %s\n", err.text);
        return SPW_CLI_EUNREACH;
    }
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "spillway context: cannot write %s: %s\n", tmp, strerror(errno));
        free(text);
        return SPW_CLI_EUNREACH;
    }
    int done = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (!done && strncmp(line, "current_context:", 16) == 0) {
            fprintf(f, "current_context: %s\n", name);
            done = 1;
        } else {
            fwrite(line, 1, n, f);
        }
        line += n;
    }
    if (!done)
        fprintf(f, "%scurrent_context: %s\n", len && text[len - 1] != '\n' ? "\n" : "", name);
    free(text);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "spillway context: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
        return SPW_CLI_EUNREACH;
    }
    return SPW_CLI_OK;
}

int spw_cli_context(int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : "list";
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
        fputs(spw_cli_context_usage, stdout);
        return 0;
    }
    char buf[4096];
    spw_error_t err;
    const char *path = config_path(buf, sizeof(buf));
    spw_ydoc_t *d = load(path, &err);
    if (!d) {
        fprintf(stderr, "spillway context: %s\n",
                err.text[0] ? err.text : "no client config file: write one (spillway context --help)");
        return SPW_CLI_EUNREACH;
    }
    const spw_ynode_t *root = spw_ydoc_root(d);
    const spw_ynode_t *ctxs = spw_ymap_get(root, "contexts");
    const char *cur = current_name(root);
    int rc = SPW_CLI_OK;
    if (strcmp(sub, "list") == 0 && argc <= 2) {
        for (size_t i = 0; ctxs && ctxs->kind == SPW_Y_MAP && i < ctxs->n; i++) {
            const spw_ynode_t *u = spw_ymap_get(ctxs->items[i], "url");
            printf("%s %-16s %s\n", cur && strcmp(cur, ctxs->keys[i]) == 0 ? "*" : " ",
                   ctxs->keys[i], u && u->str ? u->str : SPW_CLI_DEFAULT_URL);
        }
    } else if (strcmp(sub, "current") == 0 && argc <= 2) {
        if (cur)
            printf("%s\n", cur);
        else
            rc = SPW_CLI_EREMOTE;
    } else if (strcmp(sub, "use") == 0 && argc == 3) {
        if (!spw_ymap_get(ctxs, argv[2])) {
            fprintf(stderr, "spillway context: no context '%s' in %s\n", argv[2], path);
            rc = SPW_CLI_EUNREACH;
        } else if ((rc = set_current(path, argv[2])) == SPW_CLI_OK) {
            printf("current context: %s\n", argv[2]);
        }
    } else {
        spw_ydoc_destroy(d);
        spw_cli_die_usage("context", "takes list, current, or use NAME");
    }
    spw_ydoc_destroy(d);
    return rc ? rc : spw_cli_flush("context");
}
