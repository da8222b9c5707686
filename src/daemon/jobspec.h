/* jobspec.h: the job spec a user submits (YAML or JSON, the same fields
 * either way), parsed and validated into a plain struct, and written back as
 * canonical JSON for the store.
 *
 * Ownership: a spw_jobspec_t owns every string and array it points to;
 * spw_jobspec_free releases them.  spw_jobspec_parse copies what it keeps
 * from data, which the caller still owns. */
#ifndef SPW_DAEMON_JOBSPEC_H
#define SPW_DAEMON_JOBSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/timeparse.h"  /* spw_parse_duration, spw_parse_rfc3339 */

/* Limits on what one spec may hold, so a request body cannot make the daemon
 * allocate without bound.  Exceeding one is a validation error. */
#define SPW_JOBSPEC_MAX_BYTES (1u << 20)  /* whole document, bytes */
#define SPW_JOBSPEC_MAX_ARGS 4096         /* argv entries */
#define SPW_JOBSPEC_MAX_ENV 1024          /* env entries */
#define SPW_JOBSPEC_MAX_MODELS 16         /* alternatives in "A100|H100:2" */
#define SPW_JOBSPEC_MAX_GPUS 1000000      /* GPUs one job may ask for */
#define SPW_JOBSPEC_MAX_RETRIES 100       /* retries after a failure */
#define SPW_JOBSPEC_MAX_RUNTIME_S 3.1536e8 /* ten years, seconds */
#define SPW_JOBSPEC_MAX_LABELS 64         /* labels entries */

/* How the job's command is given. */
typedef enum spw_run_kind {
    SPW_RUN_ARGV,    /* run: [prog, arg, ...]: execve'd directly, no shell */
    SPW_RUN_SCRIPT,  /* run: "text": run as /bin/sh -c text */
} spw_run_kind_t;

/* One label, "key: value" in the spec; rules match "key=value". */
typedef struct spw_label {
    char *key;    /* owned; non-empty, no '=' and no control characters */
    char *value;  /* owned; the same rules */
} spw_label_t;

/* One environment variable. */
typedef struct spw_env_var {
    char *key;    /* owned; a C identifier ([A-Za-z_][A-Za-z0-9_]*) */
    char *value;  /* owned; any text without NUL */
} spw_env_var_t;

typedef struct spw_jobspec {
    char *name;                /* owned; NULL when not given */
    char *team;                /* owned; NULL when not given (the daemon
                                  fills it from the submitter's token) */
    spw_run_kind_t run_kind;   /* argv or script */
    char **argv;               /* owned, argc entries then NULL; NULL for
                                  a script */
    size_t argc;               /* entries in argv (>= 1), 0 for a script */
    char *script;              /* owned; the shell text, NULL for argv */
    uint32_t gpus;             /* GPUs wanted, >= 1 */
    char **gpu_models;         /* owned, n_gpu_models acceptable GPU models
                                  as written ("A100"); NULL = any model */
    size_t n_gpu_models;       /* entries in gpu_models */
    double est_runtime_s;      /* runtime estimate, seconds, > 0; NAN when
                                  not given (the daemon's default applies) */
    double max_runtime_s;      /* killed past this many seconds of running,
                                  > 0; NAN = no limit */
    int32_t priority;          /* larger runs first; 0 when not given */
    uint32_t gpus_per_node;    /* gpus_per_node: N > 0 lets it span nodes
                                  of >= N GPUs (in the cloud, several
                                  instances, one rank each); 0 = one node */
    double deadline_s;         /* should end by this unix time, seconds;
                                  NAN = no deadline */
    spw_env_var_t *env;        /* owned, nenv entries sorted by key with no
                                  duplicates; NULL when empty */
    size_t nenv;               /* entries in env */
    char *workdir;             /* owned absolute path; NULL = the daemon's
                                  default */
    uint32_t retries;          /* re-runs after a failure, 0..100 */
    /* ---- governance (docs/governance.md); names are resolved against the
     * config by whoever places the job, not here ---- */
    char *jclass;              /* owned; the "class" field ("restricted",
                                  "experiment"); NULL when not given */
    spw_label_t *labels;       /* owned, nlabels entries sorted by key with
                                  no duplicates; NULL when empty */
    size_t nlabels;            /* entries in labels, <= 64 */
    char *data;                /* owned; the dataset the job reads; NULL =
                                  none */
    char *residency;           /* owned; residency class; NULL = none (its
                                  class may still name one) */
    /* ---- spot and restarts (docs/spot.md) ---- */
    uint8_t spot_mode;         /* spw_spot_mode_t: auto (0, also when not
                                  given), always or never */
    uint8_t spot_policy;       /* spw_spot_policy_t + 1; 0 = not given (the
                                  config's spot.policy) */
    double checkpoint_interval_s; /* seconds of running between two of its
                                  checkpoints, > 0; 0 = it never checkpoints
                                  (an interrupted attempt restarts from
                                  scratch); SPW_CKPT_CONTINUOUS = nothing is
                                  lost; NAN = not given (the config's
                                  spot.checkpoint_interval_s) */
    /* ---- containers (docs/hosts.md) ---- */
    char *image;               /* owned; what the job runs in: an absolute
                                  path (an unpacked root filesystem, or an
                                  OCI image archive file), "oci-archive:PATH",
                                  or a registry reference
                                  ("docker.io/library/ubuntu:22.04"); NULL =
                                  no container */
} spw_jobspec_t;

/* Why a job's env may not set variable `name` (a static sentence), or NULL
 * when it may: spillway's own SPILLWAY_* (but SPILLWAY_IMAGE_CACHE),
 * CUDA_VISIBLE_DEVICES, the rank variables and SLURM_* the backends set,
 * and the ssh launch script's own variables.  The parser refuses them; the
 * daemon drops them from specs stored before they were refused. */
const char *spw_jobspec_env_reserved(const char *name);

/* Parses and validates one job spec.  data is JSON when its first
 * non-whitespace byte is '{', YAML otherwise; len bytes are read (data need
 * not be NUL-terminated).  name labels messages (a file name, "request").
 *
 * Fields: name, team, run (a list of strings = argv, or a string = a
 * /bin/sh -c script), gpus (2, "A100:2", "A100|H100:2"), est_runtime and
 * max_runtime (seconds, or "90s", "30m", "2h", "1h30m", "1d"), priority,
 * deadline (unix seconds, or RFC 3339 like "2026-11-21T18:00:00Z"), env
 * (a map of strings), workdir, retries, and for governance class, labels
 * (a map of up to 64 strings, keys and values without '='), data (a dataset
 * name) and residency (a residency class), and for spot capacity spot (auto,
 * always, never), spot_policy (ondemand, greedy, uniform-progress) and
 * checkpoint_interval (a duration, 0 = none, or "continuous"), and
 * gpus_per_node (1..1024: the job may span nodes of that many GPUs; in the
 * cloud several instances), image (a container image: see spw_jobspec_t.image).
 * run and gpus are required; unknown
 * or repeated fields are errors.  Scalars are read by their text in both
 * formats, so JSON "2" and 2 are the same gpus, as in YAML.
 *
 * Returns 0 and fills *out (free it with spw_jobspec_free), or -1 with
 * "NAME:LINE:COL: field 'gpus': must be at least 1" in err and *out left
 * zeroed (safe to free). */
int spw_jobspec_parse(const char *name, const char *data, size_t len,
                      spw_jobspec_t *out, spw_error_t *err);

/* Frees what s owns and zeroes it.  NULL-safe; safe on a zeroed struct. */
void spw_jobspec_free(spw_jobspec_t *s);

/* The canonical JSON text of s: compact, keys sorted, unset fields left out,
 * runtimes and deadline as numbers of seconds.  spw_jobspec_parse of it
 * gives back a spec equal to s.  Returns a NUL-terminated string the caller
 * frees with free(). */
char *spw_jobspec_to_json(const spw_jobspec_t *s);

/* 1 when a and b hold the same values (NAN equals NAN), else 0. */
int spw_jobspec_equal(const spw_jobspec_t *a, const spw_jobspec_t *b);

#endif
