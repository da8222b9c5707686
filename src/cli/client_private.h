/* client_private.h: what the client's files share inside src/cli: the HTTP
 * connection to the daemon (client.c), the common options, and the output
 * helpers (client_fmt.c).  Not used outside src/cli/client*.c. */
#ifndef SPW_CLI_CLIENT_PRIVATE_H
#define SPW_CLI_CLIENT_PRIVATE_H

#include <getopt.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define SPW_CLI_DEFAULT_URL "http://127.0.0.1:8470"

/* Exit statuses (see client.h). */
enum {
    SPW_CLI_OK = 0,
    SPW_CLI_EREMOTE = 1,    /* the daemon said no, or its answer was unreadable */
    SPW_CLI_EUNREACH = 2,   /* no answer at all; also bad usage */
};

/* Long-option codes shared by every client command; a command's own codes
 * start at SPW_CLI_O_FIRST. */
enum { SPW_CLI_O_URL = 1000, SPW_CLI_O_TOKEN, SPW_CLI_O_TOKEN_FILE, SPW_CLI_O_CA,
       SPW_CLI_O_FIRST };

/* The options every client command takes, as struct option entries. */
#define SPW_CLI_COMMON_OPTIONS                                  \
    {"url", required_argument, NULL, SPW_CLI_O_URL},            \
    {"token", required_argument, NULL, SPW_CLI_O_TOKEN},        \
    {"token-file", required_argument, NULL, SPW_CLI_O_TOKEN_FILE}, \
    {"ca", required_argument, NULL, SPW_CLI_O_CA},              \
    {"output", required_argument, NULL, 'o'},                   \
    {"help", no_argument, NULL, 'h'}

/* The help lines for SPW_CLI_COMMON_OPTIONS. */
#define SPW_CLI_COMMON_HELP                                                             \
    "  --url URL            the daemon (default: $SPILLWAY_URL, else\n"                  \
    "                       " SPW_CLI_DEFAULT_URL ")\n"                                  \
    "  --token-file FILE    read the bearer token from FILE (mode 600); default:\n"      \
    "                       $SPILLWAY_TOKEN, else the file $SPILLWAY_TOKEN_FILE\n"       \
    "  --ca FILE            PEM CA certificate(s) an https:// daemon's certificate\n"    \
    "                       must chain to (default: $SPILLWAY_CA, else the system's)\n" \
    "  -o, --output FMT     table (default) or json: the daemon's answer, pretty\n"

/* The last lines of every client command's --help. */
#define SPW_CLI_EXIT_HELP                                                               \
    "\n"                                                                                \
    "Exit status: 0 done; 1 the daemon refused (its message is on stderr);\n"           \
    "2 bad usage, or the daemon cannot be reached.\n"

/* The common options' values. */
typedef struct spw_cli_common {
    const char *url;    /* base URL of the daemon, borrowed from argv or environ */
    const char *token;  /* bearer token, borrowed; NULL or "" = send none */
    const char *token_file; /* --token-file, else $SPILLWAY_TOKEN_FILE when
                           there is no $SPILLWAY_TOKEN; read at open */
    int json;           /* 1: -o json */
    const char *ca_file; /* --ca, else $SPILLWAY_CA, else the context's
                           `ca`: PEM CA file for https://; NULL = the
                           system's CA store */
} spw_cli_common_t;

/* Fills co from the current context of the client config, then overrides it
 * with $SPILLWAY_URL and $SPILLWAY_TOKEN(_FILE) (client_context.c); exits 2
 * for a config file it cannot read or a context it does not have. */
void spw_cli_context_apply(spw_cli_common_t *co);

/* Fills co with the defaults (the context, $SPILLWAY_URL, $SPILLWAY_TOKEN,
 * $SPILLWAY_TOKEN_FILE).  --token on the command line is still accepted
 * but warns: every local user sees it in `ps`. */
void spw_cli_common_init(spw_cli_common_t *co);

/* Handles getopt_long's result c when it is a common option (not -h) and
 * returns 1; returns 0 for anything else.  Exits 2 on a bad -o value. */
int spw_cli_common_opt(spw_cli_common_t *co, const char *cmd, int c, const char *arg);

/* Prints "spillway CMD: MSG" and the --help hint to stderr; exits 2. */
_Noreturn void spw_cli_die_usage(const char *cmd, const char *msg);

/* One connection to the daemon.  The easy handle is reused for every
 * request of the process, so HTTP keep-alive carries them all. */
typedef struct spw_client {
    int fd;                        /* the connection, -1 = none yet */
    int tls;                       /* 1: https:// (TLS over fd) */
    const char *ca_file;           /* borrowed: CA file for TLS, or NULL */
    void *ssl_ctx, *ssl;           /* OpenSSL's SSL_CTX and SSL, or NULL */
    char host[256];                /* from the URL: name or address */
    char port[8];                  /* its port, "8470" */
    char hosthdr[272];             /* the Host header's value */
    char *prefix;                  /* the URL's path, "" or "/api"; owned */
    char *rbuf;                    /* bytes read and not yet used; owned */
    size_t rlen, rcap;             /* bytes at rbuf, allocated */
    char *base;                    /* URL without a trailing '/', owned */
    const char *url;               /* the URL as the user gave it, for messages */
    const char *cmd;               /* "submit", "admin preempt": for messages */
    const char *body_name;         /* the file a request body came from, or NULL:
                                      error positions "request:3:7" name it */
    int have_token;                /* a token is sent */
    char *auth;                    /* "Authorization: Bearer T\r\n", owned
                                      (wiped when freed) */
    char errbuf[256];              /* why the last request got no answer */
    int quiet_unreach;             /* 1: a request with no answer prints
                                      nothing (the caller retries) */
} spw_client_t;

/* TLS over c->fd (client_tls.c), used when c->tls.  spw_tls_start runs the
 * handshake (certificate checked against c->ca_file or the system's CAs,
 * and against c->host): 0, or -1 with c->errbuf.  spw_tls_read and
 * spw_tls_write move bytes like recv and send (-1 with errno; EAGAIN when
 * the socket must be waited on for events *want, POLLIN or POLLOUT). */
int spw_tls_start(spw_client_t *c);
ssize_t spw_tls_read(spw_client_t *c, char *buf, size_t n, short *want);
ssize_t spw_tls_write(spw_client_t *c, const char *buf, size_t n, short *want);
int spw_tls_pending(const spw_client_t *c);
void spw_tls_end(spw_client_t *c);
void spw_tls_free(spw_client_t *c);

/* One answer from the daemon. */
typedef struct spw_resp {
    long status;            /* HTTP status, e.g. 200 */
    char *body;             /* the body, NUL-terminated, owned; never NULL after a request */
    size_t len;             /* bytes in body */
    size_t cap;             /* bytes allocated for body */
    long long offset;       /* X-Spillway-Offset, or -1 when absent */
    char job_state[32];     /* X-Spillway-Job-State, or "" when absent */
    char content_type[64];  /* Content-Type, or "" */
} spw_resp_t;

/* Prepares the connection (no I/O yet).  Exits 2 for a URL that is not
 * http://HOST[:PORT][/PATH] or a token file it cannot read. */
void spw_client_open(spw_client_t *c, const spw_cli_common_t *co, const char *cmd);
/* Closes it.  NULL-safe. */
void spw_client_close(spw_client_t *c);

/* Frees what r owns and zeroes it.  NULL-safe. */
void spw_resp_free(spw_resp_t *r);

/* Sends METHOD BASE+path (path starts with '/', already escaped) with an
 * optional body (content_type then names it) and fills *r (free it with
 * spw_resp_free, whatever the result).  Returns 0 on a 2xx answer; else
 * prints why on stderr ("spillway: CMD: 404: no job 'j-1'", or the
 * cannot-reach message) and returns the exit status, 1 or 2. */
int spw_client_request(spw_client_t *c, const char *method, const char *path,
                       const char *body, size_t body_len, const char *content_type,
                       spw_resp_t *r);

/* GET path and parse the JSON answer into *out (caller json_decref's).
 * Returns 0, or the exit status after printing why. */
int spw_client_get_json(spw_client_t *c, const char *path, json_t **out);

/* One whole call about one object: opens a client for cmd, sends METHOD
 * prefix+ID+suffix without a body (ID escaped), parses the JSON answer into
 * *out (caller json_decref's) and closes.  0, or the exit status after
 * printing why (*out is then NULL). */
int spw_client_call(const spw_cli_common_t *co, const char *cmd, const char *method,
                    const char *prefix, const char *id, const char *suffix, json_t **out);

/* Parses r's body as JSON into *out; 0, or 1 after printing why. */
int spw_client_parse(spw_client_t *c, const spw_resp_t *r, json_t **out);

/* s percent-escaped for a URL (all but letters, digits and -._~); caller
 * frees. */
char *spw_client_escape(const char *s);

/* "/v1/jobs/ID" + suffix, with ID percent-escaped; caller frees. */
char *spw_client_path(spw_client_t *c, const char *prefix, const char *id, const char *suffix);

/* ---- output helpers (client_fmt.c) ------------------------------------- */

/* Writes v as indented JSON (2 spaces) and a newline.  Numbers keep their
 * value: reals in the shortest text that reads back the same double. */
void spw_cli_json_print(FILE *f, const json_t *v);
/* Writes v as compact JSON (no newline). */
void spw_cli_json_compact(FILE *f, const json_t *v);

/* Accessors that tolerate missing keys and wrong types. */
const char *spw_cli_jstr(const json_t *o, const char *key);         /* NULL if not a string */
int spw_cli_jnum(const json_t *o, const char *key, double *out);     /* 0 if a number */
int spw_cli_jbool(const json_t *o, const char *key);                 /* 1 if true */

/* Text of seconds, compact: "45s", "4m12s", "1h05m", "2d03h". */
char *spw_cli_dur(double s, char *buf, size_t len);
/* "$12.24", or "<$0.01" for a fraction of a cent. */
char *spw_cli_usd(double usd, char *buf, size_t len);
/* spw_cli_usd of o's number key, or "-" when it is not a number. */
char *spw_cli_money(const json_t *o, const char *key, char *buf, size_t len);
/* Local time "2025-11-21 18:00:00". */
char *spw_cli_time(double ts, char *buf, size_t len);
/* The time at ts relative to now: "5m ago", "in 15m", "now". */
char *spw_cli_rel(double ts, double now, char *buf, size_t len);
/* A real in its shortest round-trip text ("0.1", "1763748000.123"). */
char *spw_cli_real(double v, char *buf, size_t len);
/* The current unix time, seconds. */
double spw_cli_now(void);

/* A table printed with columns as wide as their widest cell. */
typedef struct spw_table spw_table_t;
/* cols: the headers separated by '|'; a header starting with '>' is right
 * aligned (the '>' is not printed). */
spw_table_t *spw_table_create(const char *cols);
/* Adds a row of as many cells as there are columns; NULL prints as "-". */
void spw_table_row(spw_table_t *t, ...);
size_t spw_table_rows(const spw_table_t *t);
/* Prints the header and rows, each line starting with indent spaces. */
void spw_table_print(const spw_table_t *t, FILE *f, int indent);
void spw_table_destroy(spw_table_t *t);

/* ---- submit --sbatch (client_sbatch.c) ------------------------------------ */

/* Fills spec (a job spec being built) from the Slurm batch script file and
 * its #SBATCH directives, the job running it with args[0..nargs); keys
 * spec already has (command-line options) are kept.  0, or the exit
 * status after printing why. */
int spw_cli_sbatch_spec(json_t *spec, const char *file, char *const *args, int nargs);

/* Fair share (docs/fairshare.md): prints a GET /v1/teams answer as one
 * table, each team's then each cohort's nominal, used, borrowed and lent
 * on-prem GPUs now; nothing when the daemon has neither quotas nor queue
 * fair.  queue and costs print it under their own tables. */
void spw_cli_fair_table(const json_t *doc);
/* GET /v1/teams for cmd and print it with spw_cli_fair_table: 0, or the
 * exit status after printing why. */
int spw_cli_fair_show(const spw_cli_common_t *co, const char *cmd);

/* Writes stdout out; 0, or 1 after "spillway: CMD: cannot write output". */
int spw_cli_flush(const char *cmd);

#endif
