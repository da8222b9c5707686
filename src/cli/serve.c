/* serve.c: `spillway serve`: loads the config, makes the daemon (which
 * recovers what an earlier one left), starts its loop and its HTTP API, and
 * runs until SIGINT or SIGTERM. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/serve.h"
#include "config/config.h"
#include "daemon/daemon.h"
#include "daemon/http.h"

/* The config of an installed service, used without --config. */
#define SPW_SERVE_ETC_CONFIG "/etc/spillway/spillway.yaml"

/* Without --config: four GPU slots on this machine (or its real GPUs when
 * nvidia-smi finds some) and a flat-price emulated cloud. */
static const char serve_default_config[] =
    "onprem:\n"
    "  - name: local\n"
    "    nodes: 1\n"
    "    gpus_per_node: 4\n"
    "    cost_usd_per_gpu_h: 1.10\n"
    "cloud:\n"
    "  price_usd_per_gpu_h: 2.5\n"
    "  boot_delay_s: 5\n"
    "policy:\n"
    "  wait: constant:30\n"
    "daemon:\n"
    "  idle_timeout_s: 60\n";

static const char serve_usage[] =
    "usage: spillway serve [--config FILE] [--state-dir DIR] [--listen HOST:PORT] [OPTIONS]\n"
    "\n"
    "Runs the orchestrator: a durable job queue (SQLite in the state dir), the\n"
    "same engine as `spillway sim`, jobs run as local processes on this\n"
    "machine's GPUs, bursts to the emulated cloud, and an HTTP API (docs/api.md)\n"
    "that the client commands (submit, queue, show, ...) talk to.\n"
    "\n"
    "options:\n"
    "  --config FILE      fleet, policy and the daemon: section (docs/config.md);\n"
    "                     default: /etc/spillway/spillway.yaml when it exists\n"
    "                     ($SPILLWAY_SERVE_CONFIG names another), else 4 GPU\n"
    "                     slots and a flat-price emulated cloud\n"
    "  --state-dir DIR    database, job logs, emulated cloud state\n"
    "                     (default: daemon.state_dir, else ./spillway-state)\n"
    "  --listen HOST:PORT address of the API (default: daemon.listen, else\n"
    "                     127.0.0.1:8470); port 0 picks a free one\n"
    "  --sync full        wait for fsync on every commit (survives power loss)\n"
    "  -q, --quiet        no progress lines on stderr\n"
    "  --release-all-on-stop  on SIGTERM/SIGINT, release every cloud instance\n"
    "                     the accounts hold for this daemon (nothing left billing)\n"
    "  -h, --help         this text\n"
    "\n"
    "The daemon prints 'listening on http://HOST:PORT' once it accepts\n"
    "requests.  Stop it with Ctrl-C or SIGTERM: running jobs keep running and\n"
    "the next `spillway serve` over the same state dir re-adopts them; kill -9\n"
    "loses no acknowledged job either.  SIGHUP reloads the tokens\n"
    "(daemon.tokens and daemon.tokens_file) and the TLS certificate\n"
    "(daemon.tls_cert, daemon.tls_key: the API is then HTTPS only) without a\n"
    "restart.  A config or tokens file holding tokens, and the TLS key, must\n"
    "be private (chmod 600).\n"
    "\n"
    "A web dashboard is at http://HOST:PORT/ui (paste a token; docs/dashboard.md):\n"
    "the queue and why, pools, cloud instances, budgets, spend, GPU telemetry\n"
    "(nvidia-smi every daemon.sample_s) and idle GPUs (daemon.idle_gpu).\n"
    "\n"
    "examples:\n"
    "  spillway serve --config examples/serve.yaml\n"
    "  SPILLWAY_TOKEN_FILE=~/.spillway-token spillway submit --gpus 1 -- python3 train.py\n"
    "  spillway queue; spillway costs\n";

/* A config or tokens file changed less than this long ago may be in the
 * middle of a rewrite in place: a reload waits until both have been still
 * this long, but no longer than TOKENS_WAIT_S in all. */
#define TOKENS_SETTLE_S 1.0
#define TOKENS_WAIT_S 10.0
#define TOKENS_POLL_US 200000

/* Seconds since path was last changed (a large number when it cannot be
 * asked). */
static double changed_ago_s(const char *path)
{
    struct stat sb;
    struct timespec now;
    if (!path || stat(path, &sb) < 0)
        return 1e9;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)(now.tv_sec - sb.st_mtim.tv_sec) +
           (double)(now.tv_nsec - sb.st_mtim.tv_nsec) * 1e-9;
}

/* spw_config_load of config once it and its tokens_file have stayed
 * unchanged for TOKENS_SETTLE_S (or TOKENS_WAIT_S passed). */
static int load_settled(spw_config_t *fresh, const char *config, spw_error_t *err)
{
    for (double waited = 0;; waited += TOKENS_POLL_US * 1e-6) {
        int rc = spw_config_load(fresh, config, err);
        double ago = changed_ago_s(config);
        if (rc == 0 && fresh->daemon.tokens_file) {
            double t = changed_ago_s(fresh->daemon.tokens_file);
            ago = t < ago ? t : ago;
        }
        if (ago >= TOKENS_SETTLE_S || waited >= TOKENS_WAIT_S)
            return rc;
        if (rc == 0)
            spw_config_free(fresh);
        usleep(TOKENS_POLL_US);
    }
}

/* SIGHUP, TLS part: serves new connections with the certificate and key
 * the fresh config names (a renewal replaced the files). */
static void reload_tls(spw_daemon_t *d, spw_http_t *h, const spw_config_t *fresh)
{
    spw_error_t err;
    if (!spw_http_is_tls(h))
        return;
    const spw_daemon_conf_t *dc = &fresh->daemon;
    if (!dc->tls_cert) {
        fprintf(stderr, "spillway: SIGHUP: the config no longer names daemon.tls_cert; still "
                        "serving HTTPS with the old certificate (restart for plain HTTP)\n");
        return;
    }
    if (spw_http_reload_tls(h, dc->tls_cert, dc->tls_key, &err) < 0) {
        fprintf(stderr, "spillway: SIGHUP: keeping the current certificate: %s\n", err.text);
        spw_daemon_audit(d, NULL, "tls.reload", err.text, 500);
        return;
    }
    fprintf(stderr, "spillway: SIGHUP: new connections get the certificate in %s\n", dc->tls_cert);
    spw_daemon_audit(d, NULL, "tls.reload", dc->tls_cert, 200);
}

/* SIGHUP: reads the config (and its tokens_file) again and swaps in its
 * tokens and its TLS certificate; anything else in the file needs a
 * restart.  A file that does not load, is not private, or changes while it
 * is read keeps the old table and certificate. */
static void reload(spw_daemon_t *d, spw_http_t *h, const char *config)
{
    spw_config_t fresh;
    spw_error_t err;
    if (!config) {
        fprintf(stderr, "spillway: SIGHUP: no --config file to reload tokens from\n");
        return;
    }
    if (load_settled(&fresh, config, &err) < 0) {
        fprintf(stderr, "spillway: SIGHUP: keeping the current tokens: %s\n", err.text);
        spw_daemon_audit(d, NULL, "tokens.reload", "config does not load", 500);
        return;
    }
    if (!spw_daemon_auth_required(d)) {
        fprintf(stderr, "spillway: SIGHUP: this daemon started without tokens (an open API on "
                        "loopback); restart it to require tokens\n");
        spw_daemon_audit(d, NULL, "tokens.reload", "started without tokens", 409);
    } else if (spw_config_check_secrets(&fresh, &err) < 0) {
        fprintf(stderr, "spillway: SIGHUP: keeping the current tokens and certificate: %s\n",
                err.text);
        spw_daemon_audit(d, NULL, "tokens.reload", "tokens not private", 500);
        spw_config_free(&fresh);
        return;
    } else {
        size_t kept = 0;
        size_t live = spw_daemon_reload_tokens(d, &fresh.daemon, &kept);
        fprintf(stderr, "spillway: SIGHUP: tokens reloaded from %s: %zu live, %zu revoked\n",
                config, live, fresh.daemon.ntokens - live);
        if (kept)
            fprintf(stderr, "spillway: SIGHUP: %zu token(s) revoked before stay revoked although "
                            "the file no longer says so; a revoked token comes back only with a "
                            "restart\n", kept);
    }
    reload_tls(d, h, &fresh);
    fflush(stderr);
    spw_config_free(&fresh);
}

int spw_cli_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'}, {"state-dir", required_argument, 0, 's'},
        {"listen", required_argument, 0, 'l'}, {"sync", required_argument, 0, 'y'},
        {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
        {"release-all-on-stop", no_argument, 0, 'R'},
        {0, 0, 0, 0},
    };
    const char *config = NULL, *listen_addr = NULL;
    spw_daemon_opts_t dopts = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:s:l:y:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 's': dopts.state_dir = optarg; break;
        case 'l': listen_addr = optarg; break;
        case 'y':
            if (strcmp(optarg, "full") != 0 && strcmp(optarg, "normal") != 0) {
                fprintf(stderr, "spillway serve: --sync takes 'normal' or 'full'\n");
                return 2;
            }
            dopts.sync_full = strcmp(optarg, "full") == 0;
            break;
        case 'q': dopts.quiet = 1; break;
        case 'R': dopts.release_all_on_stop = 1; break;
        case 'h': fputs(serve_usage, stdout); return 0;
        default:
            fprintf(stderr, "(see 'spillway serve --help')\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "spillway serve: unexpected argument '%s'\n(see 'spillway serve --help')\n",
                argv[optind]);
        return 2;
    }
    /* Installed as a service, the config is /etc/spillway/spillway.yaml. */
    const char *etc = getenv("SPILLWAY_SERVE_CONFIG");
    if (!etc || !*etc)
        etc = SPW_SERVE_ETC_CONFIG;
    if (!config && access(etc, F_OK) == 0) {
        config = etc;
        fprintf(stderr, "spillway: no --config: using %s\n", etc);
    }
    spw_config_t cfg;
    spw_error_t err;
    int rc = config ? spw_config_load(&cfg, config, &err)
                    : spw_config_load_mem(&cfg, "embedded serve config", serve_default_config,
                                          sizeof(serve_default_config) - 1, ".", &err);
    if (rc < 0) {
        fprintf(stderr, "spillway serve: %s\n", err.text);
        return 1;
    }
    if (spw_config_check_secrets(&cfg, &err) < 0) {
        fprintf(stderr, "spillway serve: refusing to start: %s\n", err.text);
        spw_config_free(&cfg);
        return 1;
    }
    if (!listen_addr)
        listen_addr = cfg.daemon.listen;
    /* The loop and HTTP threads inherit this mask; the main thread waits for
     * the signals with sigwait. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    spw_daemon_t *d = spw_daemon_create(&cfg, &dopts, &err);
    if (!d) {
        fprintf(stderr, "spillway serve: %s\n", err.text);
        spw_config_free(&cfg);
        return 1;
    }
    spw_http_t *h = NULL;
    spw_http_opts_t hopts = {
        .max_body_bytes = cfg.daemon.max_body_bytes,
        .request_timeout_s = cfg.daemon.request_timeout_s,
        .max_connections = cfg.daemon.max_connections,
        .max_connections_per_ip = cfg.daemon.max_connections_per_ip,
        .max_header_bytes = cfg.daemon.max_header_bytes,
        .allowed_hosts = (const char *const *)cfg.daemon.allowed_hosts,
        .nallowed_hosts = cfg.daemon.nallowed_hosts,
        .tls_cert_file = cfg.daemon.tls_cert,
        .tls_key_file = cfg.daemon.tls_key,
    };
    if (spw_daemon_start(d, &err) < 0 ||
        !(h = spw_http_start_opts(d, listen_addr, &hopts, &err))) {
        fprintf(stderr, "spillway serve: %s\n", err.text);
        spw_daemon_destroy(d);
        spw_config_free(&cfg);
        return 1;
    }
    char host[256];
    const char *colon = strrchr(listen_addr, ':');
    snprintf(host, sizeof(host), "%.*s", (int)(colon ? colon - listen_addr : 0), listen_addr);
    const char *scheme = spw_http_is_tls(h) ? "https" : "http";
    fprintf(stderr, "spillway: listening on %s://%s:%d (%s)\n", scheme, host, spw_http_port(h),
            cfg.daemon.ntokens ? "bearer tokens required" : "no tokens: loopback only, open API");
    fprintf(stderr, "spillway: dashboard at %s://%s:%d/ui\n", scheme, host, spw_http_port(h));
    fflush(stderr);
    int sig = 0;
    while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
        reload(d, h, config);
    fprintf(stderr, "spillway: %s: stopping; running jobs keep running\n", strsignal(sig));
    spw_http_stop(h);
    spw_daemon_destroy(d);
    spw_config_free(&cfg);
    return 0;
}
