/* config.h: the fleet and policy configuration file (YAML).
 *
 *   onprem:                      # a list of pools (or one pool as a map)
 *     - name: dc1
 *       nodes: 4
 *       gpus_per_node: 8
 *       gpu: A100                # optional model name
 *       cost_usd_per_gpu_h: 1.10
 *     - name: openb               # or: nodes from an Alibaba node list,
 *       nodes_from: FILE          # one pool per GPU model (openb-G2, ...)
 *   cloud:
 *     price_usd_per_gpu_h: 2.5   # a flat price, or instead:
 *     offers: FILE               # a catalog CSV (provider,region,zone,instance_type,gpu,gpus,...)
 *     providers: [aws, gcp]      # optional filters on the catalog
 *     regions: [us-east-1]
 *     boot_delay_s: 0
 *     accounts:                  # docs/clouds.md; default: one emulated account
 *       - {name: lab, type: emulated, regions: [us-east-1], max_instances: 8}
 *   policy:
 *     queue: fifo | sjf | priority
 *     scan: hol | skip
 *     backfill: none | easy
 *     fit: first | best
 *     wait: never | none | constant:S | runtime:K | compute:K
 *   daemon:                      # spillway serve only; sim ignores it
 *     listen: 127.0.0.1:8470
 *     state_dir: spillway-state  # SQLite db, job logs, emulated cloud state
 *     gpus: auto | slots         # auto: nvidia-smi's count for a one-node
 *                                # pool when it finds GPUs, else the slots
 *     default_est_runtime_s: 3600
 *     kill_grace_s: 10
 *     idle_timeout_s: 300
 *     max_instance_lifetime_s: 0 # 0 = no bound on an instance's age
 *     max_body_bytes: 1048576
 *     tokens:
 *       - {name: ml-ci, token: SECRET, team: ml}
 *       - {token: SECRET2, admin: true}
 *     tokens_file: tokens.yaml   # more tokens, in a file of mode 0600
 *     emulated: {seed: 1, capacity: 0, preempt_rate_per_h: 0}
 *     sample_s: 5                # dashboard series and GPU telemetry
 *     idle_gpu: {threshold_pct: 5, window_s: 1800, action: flag}  # | stop
 *   spot:                        # docs/config.md#spot; all optional
 *     policy: uniform-progress   # ondemand (default) | greedy | uniform-progress
 *     restart_overhead_s: 12m    # paid time without progress per attempt; 0
 *     checkpoint_interval_s: 1h  # jobs' default; 0 (default) = from scratch,
 *                                # continuous = nothing lost
 *     max_restarts: 20           # or unlimited (default)
 *     recovery: same_region_first  # | next_region
 *     failover: requeue          # | burst
 *     seed: 1                    # rate preemptions and MTBF failures
 *     availability:              # per offer; the last matching entry wins
 *       - {zone: usw2-az1, instance_type: p3.2xlarge, trace: FILE.json, start_offset: 3d}
 *       - {provider: aws, region: us-east-1, interruption: "5-10%"}  # Spot Advisor
 *       - {provider: gcp, preempt_rate_per_h: 0.02}
 *   failures:
 *     file: failures.csv         # node,down_s,up_s; node = POOL/INDEX
 *
 * An onprem pool may also give mtbf: 30d and mttr: 4h (random failures of
 * each node in the simulator).  spot and failures are read after onprem and
 * cloud, whose offers and pools they name; an availability entry matching no
 * offer (or only offers without a spot price) is an error at its line, and a
 * trace that cannot be read is an error at its line with the trace's own
 * message.
 *
 * Governance (docs/governance.md); every section is optional and is read
 * after onprem and cloud, since it names their pools, regions and models:
 *
 *   teams:                       # budgets and caps per team (<= 64)
 *     - name: ml
 *       monthly_usd: 5000        # or weekly_usd; "$5000" too; neither = none
 *       on_exhausted: hold       # hold | onprem_only | reject
 *       max_cloud_usd_per_h: 40
 *       max_cloud_gpus: 32
 *       max_cloud_egress_usd_per_month: 200  # all egress, copies into pools too
 *   caps:                        # organisation-wide
 *     max_cloud_usd_per_h: 100
 *     max_cloud_gpus: 64
 *     default_max_runtime_s: 24h # a job's cloud worst case without max_runtime
 *   rules:                       # in order, every rule a job matches (<= 256)
 *     - name: prod-onprem        # default "rule N"
 *       match: {team: [ml, cv], class: inference, labels: {env: prod},
 *               gpus: 8 | "1-8" | ">=4" | "<=2"}   # teams must be declared
 *       placement: onprem_only   # onprem_first | cloud_first | onprem_only
 *       spot: never              # allowed | required | never
 *       allow_providers: [aws]   # also deny_providers, allow_regions /
 *                                # deny_regions ("us-east-1", "gcp:us-central1"),
 *                                # allow_families / deny_families, allow_gpus
 *       max_usd_per_gpu_h: 4.0
 *   residency:                   # a job with class or residency NAME
 *     eu: {onprem: true, regions: [eu-west-1, europe-west4]}
 *   data:
 *     bandwidth_gbps: 10
 *     cache_ttl_s: 7d
 *     storage_usd_per_gb_month: 0.023
 *     egress_usd_per_gb: {aws: 0.09, gcp: 0.12, azure: 0.087, onprem: 0}
 *     datasets:
 *       - {name: imagenet, size_gb: 150, home: dc1, replicas: [aws:us-east-1]}
 *   sim:
 *     start: 2026-11-01T00:00:00Z  # calendar date of trace time 0 (budget periods)
 *
 * All of it lands in fleet.gov and is checked with spw_gov_validate.
 * Relative file names are taken from the directory of the config file. */
#ifndef SPW_CONFIG_CONFIG_H
#define SPW_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "sim/sim.h"
#include "util/error.h"
#include "util/spot_trace.h"

/* One API token of the daemon: bound to a team, or admin. */
typedef struct spw_token {
    char *name;             /* owned; what the audit log records (never the
                               secret); default TEAM-N or admin-N */
    char *token;            /* owned; the bearer secret, >= 16 characters */
    char *team;             /* owned; NULL for admin */
    int admin;              /* 1: sees and cancels every job, may preempt */
    int metrics;            /* 1: `metrics: true`: may read /metrics only
                               (neither team nor admin) */
    int viewer;             /* 1: `role: viewer`: reads (GET) only, its
                               team's view, or everything without a team */
    int revoked;            /* 1: `revoked: true`: answered 401, audited */
} spw_token_t;

/* One entry of daemon.oidc's teams: or roles: map: an IdP group (a value
 * of the groups claim) and the team or role it gives. */
typedef struct spw_oidc_map {
    char *group;            /* owned; the claim's value, e.g. "ml" */
    char *value;            /* owned; a team name, or "admin", "member",
                               "viewer" */
} spw_oidc_map_t;

/* daemon.oidc: bearer tokens that are JWTs signed by an OpenID Connect
 * provider (docs/identity.md).  issuer NULL = off. */
typedef struct spw_oidc_conf {
    char *issuer;           /* owned; the provider's issuer URL, exactly as
                               its tokens' `iss`; its discovery document is
                               ISSUER/.well-known/openid-configuration */
    char *audience;         /* owned; what `aud` must hold (a string or one
                               of an array) */
    char *groups_claim;     /* owned; the claim listing the user's groups;
                               default "groups" */
    char *user_claim;       /* owned; the claim the audit log names the user
                               by; NULL = preferred_username, email, sub */
    spw_oidc_map_t *teams;  /* owned; group -> team, the first match wins */
    size_t nteams;
    spw_oidc_map_t *roles;  /* owned; group -> role, the highest wins */
    size_t nroles;
    double leeway_s;        /* seconds of clock skew allowed on exp, nbf
                               and iat; 60 */
    double timeout_s;       /* seconds a fetch of the discovery document or
                               the JWKS may take; 5 */
    char *client_id;        /* owned; the dashboard's public client
                               (authorization code + PKCE); NULL = the
                               dashboard offers no login */
    char *redirect_uri;     /* owned; where the provider sends the browser
                               back; NULL = the page's own /ui/ */
    char *scopes;           /* owned; the scopes the dashboard asks for,
                               space-separated; "openid" */
} spw_oidc_conf_t;

/* A team's own job user (teams: entries' run_as). */
typedef struct spw_team_user {
    char *team;             /* owned team name */
    char *user;             /* owned user name its jobs run as */
} spw_team_user_t;

/* The daemon: section, read by `spillway serve` and ignored by `sim`, so one
 * file describes the fleet for both. */
typedef struct spw_daemon_conf {
    char *listen;               /* owned "HOST:PORT"; default 127.0.0.1:8470 */
    char *state_dir;            /* owned, resolved against the config's
                                   directory; NULL = ./spillway-state */
    char *log_dir;              /* owned, resolved likewise: jobs' logs;
                                   NULL = STATE_DIR/logs */
    uint64_t max_log_bytes;     /* bytes each log file of a job may reach;
                                   64 MiB; 0 = no cap */
    uint64_t image_max_bytes;   /* bytes an OCI image archive, and the tree
                                   it unpacks to, may reach; 32 GiB */
    uint64_t image_max_files;   /* entries (files, directories, links) an
                                   OCI image may unpack to; 1,000,000 */
    double job_retention_s;     /* seconds an ended job stays in memory
                                   after its end is committed; then it is
                                   served from the database; 3600 */
    double min_free_mib;        /* below this many MiB free on the state
                                   dir's (or log dir's) filesystem the
                                   daemon is unhealthy and refuses submits;
                                   256; 0 = not watched */
    int gpus_auto;              /* 1: the local pool takes the nvidia-smi
                                   count when nvidia-smi finds GPUs */
    double default_est_runtime_s; /* for specs without est_runtime; 3600 */
    double kill_grace_s;        /* SIGTERM to SIGKILL on cancel; 10 */
    double idle_timeout_s;      /* idle cloud instances released after; 300 */
    double max_instance_lifetime_s; /* any instance released at this age (a job on
                                   it is requeued as if preempted); 0 = none */
    double tick_s;              /* longest sleep of the loop; 0.1 */
    size_t max_body_bytes;      /* bigger requests get 413; 1 MiB */
    size_t max_header_bytes;    /* request line + headers; 431; 16 KiB */
    double request_timeout_s;   /* a request must be in within this long of
                                   its connection opening (or the previous
                                   answer), else it is cut; 30 */
    uint32_t max_connections;   /* open HTTP connections in all; 1024 */
    uint32_t max_connections_per_ip; /* from one address; 64 */
    char **allowed_hosts;       /* owned; Host header names (or NAME:PORT)
                                   served besides IP literals, localhost and
                                   the machine's host name */
    size_t nallowed_hosts;
    int metrics_auth;           /* 1: /metrics needs an admin or metrics
                                   token; 0 (default) = open */
    int metrics_per_job;        /* 1: /metrics has per-job series (job ids
                                   and teams); 0 (default) = per GPU and
                                   per team only */
    spw_token_t *tokens;        /* owned; none = no auth (loopback only);
                                   the inline ones first, then tokens_file's */
    size_t ntokens;
    /* Who jobs run as (docs/daemon.md, "Jobs cannot reach the daemon"): */
    char *run_as;               /* owned; user name for jobs of teams without
                                   their own; NULL = "spillway-job" when the
                                   daemon runs as root, else the daemon's */
    spw_team_user_t *team_run_as; /* owned; teams: entries' run_as */
    size_t nteam_run_as;
    int allow_root_jobs;        /* 1: a job may run as root (uid 0) */
    int share_run_as;           /* 1: teams may share a job user (the
                                   default one included); 0: a root daemon
                                   refuses to start when two known teams
                                   would run as one user */
    uint32_t job_pids_max;      /* processes (tasks) one job may have at
                                   once, through its cgroup; 4096; 0 = no
                                   limit */
    uint64_t job_memory_mib;    /* memory one job may use, MiB, through its
                                   cgroup; 0 = no limit */
    char **job_env;             /* owned; names (or PREFIX*) of the daemon's
                                   variables jobs inherit, besides the
                                   defaults (PATH, LANG, LC_*, TZ, ...) */
    size_t njob_env;
    size_t ntokens_inline;      /* of them, written in the config itself */
    spw_oidc_conf_t oidc;       /* daemon.oidc; issuer NULL = off */
    char *tokens_file;          /* owned, resolved; NULL = none */
    char *tls_cert;             /* owned, resolved: PEM certificate chain the
                                   API serves HTTPS with; NULL = plain HTTP */
    char *tls_key;              /* owned, resolved: its PEM private key, a
                                   file of mode 0600 (checked like tokens) */
    char *config_path;          /* owned; the file loaded (NULL from memory),
                                   for the mode check and SIGHUP reloads */
    uint32_t max_gpus_per_job;  /* larger jobs get 400; 0 = the largest gang
                                   the fleet or catalog can serve */
    uint32_t max_instances_per_job; /* cloud instances one job may take;
                                   0 = no limit beyond max_gpus_per_job */
    uint32_t max_queued_per_team; /* queued jobs one team may have; a submit
                                   past it gets 429; 10000 unless given;
                                   0 = no limit */
    uint64_t emulated_seed;     /* seeds emulated preemptions; 1 */
    uint32_t emulated_capacity; /* live instances per offer; 0 = unlimited */
    double emulated_preempt_rate_per_h; /* emulated preemptions per instance-hour; 0 */
    char *emulated_boot_command; /* owned, resolved; daemon.emulated.boot_command:
                                   instances are real hosts booted by it
                                   (`CMD add DIR ID` / `CMD del DIR ID`,
                                   docs/hosts.md); NULL = records only */
    char *emulated_hosts_dir;   /* owned, resolved; the DIR given to it;
                                   NULL = STATE_DIR/instances */
    char *emulated_ssh_user;    /* owned; login user on instances; NULL = root */
    char *emulated_ssh_key;     /* owned, resolved; NULL = HOSTS_DIR/id_ed25519 */
    char *emulated_ssh_known_hosts; /* owned, resolved; NULL =
                                   HOSTS_DIR/known_hosts */
    int emulated_ssh_port;      /* ssh port of instances; 0 = 2222 */
    double emulated_ssh_down_after_s; /* an instance silent this long is down,
                                   seconds; 0 = 10 */
    int cloud_ssh_given;        /* daemon.cloud_ssh was given: how the daemon
                                   logs in to the instances of real cloud
                                   accounts (aws, command), which run jobs
                                   over ssh (docs/clouds.md) */
    char *cloud_ssh_user;       /* owned; NULL = root (an account's ssh_user
                                   wins for its instances) */
    char *cloud_ssh_key;        /* owned, resolved; the private key; required
                                   for real accounts */
    char *cloud_ssh_known_hosts; /* owned, resolved; NULL = STATE_DIR/
                                   cloud_known_hosts, where keys are learnt
                                   at first contact */
    int cloud_ssh_port;         /* 0 = 22 */
    double cloud_ssh_down_after_s; /* 0 = 10 */
    double sample_s;            /* dashboard series and GPU telemetry are
                                   sampled this often, seconds; 5 */
    double idle_threshold_pct;  /* idle_gpu: a job whose GPUs average below
                                   this utilisation, percent, is idle; 5 */
    double idle_window_s;       /* idle_gpu: ... for this long is flagged,
                                   seconds; 1800 */
    int idle_stop;              /* idle_gpu.action: 1 = stop (cancel) a
                                   flagged job, 0 = only flag it */
} spw_daemon_conf_t;

/* One entry of spot.availability: the spot capacity of every offer it
 * matches (provider, region, zone, instance_type; NULL = any). */
typedef struct spw_spot_avail_conf {
    char *provider, *region, *zone, *instance_type; /* owned or NULL */
    char *trace_path;           /* owned, resolved; NULL = none */
    spw_spot_trace_t trace;     /* loaded when trace_path is set */
    double start_offset_s;      /* where in the trace sim time 0 (or the
                                   daemon's start) falls */
    double preempt_rate_per_h;  /* without a trace; from `interruption:` (a
                                   Spot Advisor bucket) or preempt_rate_per_h */
    int line;                   /* in the config file, for messages */
} spw_spot_avail_conf_t;

/* The entry of cfg's spot.availability that applies to offer o: the last
 * one whose provider, region, zone and instance_type (NULL = any) match;
 * -1 when none does. */
struct spw_config;
int spw_spot_avail_of(const struct spw_config *cfg, const spw_offer_t *o);

/* One entry of cloud.capacity_errors (docs/clouds.md): the simulator's
 * (and the emulated cloud's) refusals to sell capacity, as a real cloud
 * answers InsufficientInstanceCapacity: a share `rate` of the acquisitions
 * of every offer it matches (provider, region, zone, instance_type; NULL =
 * any), in a market, is refused, ruling out `block` for block_s. */
typedef struct spw_capacity_error_conf {
    char *provider, *region, *zone, *instance_type; /* owned or NULL */
    int market;                 /* 1 spot, 0 on demand, -1 both */
    double rate;                /* share of acquisitions refused, 0..1 */
    spw_block_t block;          /* what a refusal rules out (not JOB) */
    double block_s;             /* for how long, seconds; 300 */
    char *code;                 /* the cloud's error code it stands for,
                                   owned; "InsufficientInstanceCapacity" */
    int line;                   /* in the config file, for messages */
} spw_capacity_error_conf_t;

/* Whether entry c applies to offer o. */
int spw_capacity_error_matches(const spw_capacity_error_conf_t *c, const spw_offer_t *o);

/* The spot: section (docs/spot.md); the policy part lands in
 * spw_config.policy (spot_policy, restart_overhead_s, max_restarts,
 * recovery, failover). */
typedef struct spw_spot_conf {
    double checkpoint_interval_s; /* default for jobs without one; 0 = none
                                     (restart from scratch); SPW_CKPT_CONTINUOUS */
    spw_spot_avail_conf_t *avail; /* owned */
    size_t navail;
    uint64_t seed;              /* seeds rate preemptions and MTBF failures; 1 */
    double default_rate_per_h;  /* preemptions per instance-hour the simulator
                                   gives an offer with a spot price that no
                                   availability entry matches
                                   (spot.default_interruption; default the
                                   ">20%" bucket: -ln(0.75) / 730) */
    char default_label[8];      /* that bucket's label, for the warning */
} spw_spot_conf_t;

/* On-prem failures for the simulator: failures.file (CSV node,down_s,up_s;
 * node is POOL/INDEX) and per-pool mtbf / mttr. */
typedef struct spw_failure_conf {
    spw_sim_failure_t *list;    /* owned */
    size_t n;
    double *mtbf_s, *mttr_s;    /* owned, fleet.npools entries each (0 = none),
                                   or NULL when no pool sets them */
} spw_failure_conf_t;

/* How the daemon runs the jobs of one on-prem pool: the pool keys backend
 * (local, the default, or slurm), partition, cluster and slurm_conf (see
 * docs/slurm.md).  `sim` ignores them. */
typedef struct spw_pool_backend_conf {
    char *backend;          /* owned; "local", "slurm", "ssh" or "kubernetes";
                               NULL = local */
    char *partition;        /* owned; slurm: the partition jobs go to */
    char *cluster;          /* owned; slurm: the cluster's name, for
                               messages; NULL */
    char *slurm_conf;       /* owned, resolved against the config's
                               directory; slurm: SLURM_CONF for its
                               commands; NULL = the daemon's environment */
    char **hosts;           /* owned, nhosts of them; ssh: the pool's hosts
                               (`hosts:` or `hosts_file:`), node i = hosts[i] */
    size_t nhosts;          /* entries in hosts */
    int gpus_given;         /* ssh: gpus_per_node was given (else each host's
                               GPUs are detected with nvidia-smi) */
    char *ssh_user;         /* owned; ssh: login user; NULL = ssh's default */
    char *ssh_key;          /* owned, resolved; ssh: private key; NULL = default */
    char *ssh_known_hosts;  /* owned, resolved; ssh: known_hosts; NULL = default */
    int ssh_port;           /* ssh: port; 0 = 22 */
    double ssh_down_after_s; /* ssh: a host silent this long is down, seconds;
                               0 = 10 */
    /* kubernetes (docs/kubernetes.md): */
    char *kubeconfig;       /* owned, resolved; NULL = $KUBECONFIG,
                               ~/.kube/config, else in-cluster */
    char *kube_context;     /* owned; NULL = current-context */
    char *kube_namespace;   /* owned; NULL = the context's */
    char **kube_node_selector; /* owned, NULL-terminated "KEY=VALUE"; NULL */
    char *kube_tolerations; /* owned; a JSON array of Tolerations; NULL */
    char *kube_priority_class; /* owned; priorityClassName; NULL */
    char *kube_local_queue; /* owned; Kueue LocalQueue; NULL = no Kueue */
    char *kube_image;       /* owned; default image; NULL = jobs name one */
    double kube_kill_grace_s; /* cancel's grace, seconds; 0 = daemon.kill_grace_s */
    double kube_ttl_s;      /* ttlSecondsAfterFinished, seconds; 0 = 3600 */
    int line;               /* in the config file, for messages */
} spw_pool_backend_conf_t;

/* Most entries in cloud.accounts, and the longest account name (it goes
 * into instance ids and spw_instance_t.account). */
#define SPW_MAX_ACCOUNTS 16
#define SPW_ACCOUNT_NAME_MAX 20

/* One entry of cloud.accounts (docs/clouds.md): a cloud account the daemon
 * buys from, made by the provider registry from its type. */
typedef struct spw_account_conf {
    char *name;             /* owned; unique, [A-Za-z0-9_-], at most
                               SPW_ACCOUNT_NAME_MAX bytes */
    char *type;             /* owned; "aws", "command" or "emulated" */
    char **regions;         /* owned, NULL-terminated; regions it may buy
                               in; NULL = every region of its offers */
    uint32_t max_instances; /* live instances at once; 0 = no limit */
    double max_usd_per_h;   /* what its live instances may cost together,
                               USD per hour; 0 = no limit */
    int dry_run;            /* 1: mutating calls are permission checks only */
    char *endpoint_url;     /* owned; the API endpoint; NULL = the cloud's */
    char **options;         /* owned, NULL-terminated "key=value": the
                               type's own keys (registry.h); NULL = none */
    int line;               /* in the config file, for messages */
} spw_account_conf_t;

typedef struct spw_config {
    spw_fleet_t fleet;      /* pools, offers and GPU model names (owned) */
    spw_policy_t policy;    /* scheduling policy */
    char *offers_path;      /* catalog file read, or NULL (owned) */
    char *cloud_slurm_partition; /* owned; cloud.slurm_partition: the daemon's
                               cloud instances are the State=CLOUD nodes of
                               this Slurm partition and its cloud jobs run
                               there (docs/slurm.md); NULL = none.  `sim`
                               ignores it */
    char *cloud_slurm_conf; /* owned, resolved; cloud.slurm_conf: SLURM_CONF
                               for that partition's commands; NULL = the
                               daemon's environment */
    spw_daemon_conf_t daemon; /* the daemon: section (defaults when absent) */
    spw_spot_conf_t spot;   /* the spot: section */
    spw_capacity_error_conf_t *capacity_errors; /* owned: cloud.capacity_errors */
    size_t ncapacity_errors;
    spw_failure_conf_t failures; /* failures: and pools' mtbf/mttr */
    spw_pool_backend_conf_t *pool_backends; /* owned; npool_backends entries
                               (pools past them, or entries with backend
                               NULL, are local); NULL = every pool local */
    size_t npool_backends;
    spw_account_conf_t *accounts; /* owned; cloud.accounts, naccounts
                               entries; NULL = the one default emulated
                               account (daemon.emulated) */
    size_t naccounts;
} spw_config_t;

/* Loads a config file.  On error nothing is left allocated and err names
 * FILE:LINE:COL and what to change. */
int spw_config_load(spw_config_t *cfg, const char *path, spw_error_t *err);
/* The same from memory; relative file names are taken from `base_dir`. */
int spw_config_load_mem(spw_config_t *cfg, const char *name, const char *data, size_t len,
                        const char *base_dir, spw_error_t *err);
void spw_config_free(spw_config_t *cfg);

/* The engine policy `spillway serve` runs: cfg->policy with
 * reserve_extra_s set to what the daemon may bill past a cloud job's
 * max_runtime (the kill grace, a turn each to notice the limit and to reap
 * the exit, and a second for rounding).  `policy test` previews with it. */
spw_policy_t spw_config_daemon_policy(const spw_config_t *cfg);

/* The daemon's secrets are readable by the daemon's user only: when the
 * config names a tokens_file it must not be readable or writable by group
 * or others, and a config file that holds tokens itself must not be
 * either.  0, or -1 with "FILE: mode 0644 ...; run: chmod 600 FILE". */
int spw_config_check_secrets(const spw_config_t *cfg, spw_error_t *err);

/* Reads a cloud offer catalog CSV into fleet->offers (appending), keeping
 * rows whose provider and region pass the filters (NULL = all). */
int spw_offers_load(spw_fleet_t *fleet, const char *path, const char *const *providers,
                    const char *const *regions, double boot_delay_s, spw_error_t *err);

/* Adds pools from an Alibaba node list (columns `gpu` and `model`): one pool
 * per GPU model, named PREFIX-MODEL, nodes in file order. */
int spw_nodes_load(spw_fleet_t *fleet, const char *path, const char *prefix,
                   double cost_usd_per_gpu_h, spw_error_t *err);

#endif
