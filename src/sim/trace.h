/* trace.h: job traces for the simulator.
 *
 * Formats: spillway's own CSV (header required, columns by name) and the
 * Alibaba GPU cluster trace 2023 pod list.  A trace owns its jobs, their ids
 * and the names in its governance columns (team, class, data, residency,
 * labels); jobs come out sorted by (submit_s, id) with `order` set to their
 * position.  spw_trace_bind then gives the jobs their governance indices
 * for a config, and they are ready for spw_sim_run. */
#ifndef SPW_SIM_TRACE_H
#define SPW_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "sim/sim.h"
#include "util/error.h"

typedef enum spw_trace_format {
    SPW_TRACE_AUTO,      /* detect from the header */
    SPW_TRACE_SPILLWAY,  /* id,submit_s,gpus,runtime_s[,gpu,team,priority,deadline_s,
                            est_runtime_s,class,data,residency,labels,max_runtime_s,
                            spot,spot_policy,checkpoint_interval_s,gpus_per_node] */
    SPW_TRACE_ALIBABA,   /* openb_pod_list_*.csv */
} spw_trace_format_t;

int spw_trace_format_parse(const char *s, spw_trace_format_t *out, spw_error_t *err);
const char *spw_trace_format_name(spw_trace_format_t f);

/* Names met in one text column, interned: name[0] = "" (none). */
typedef struct spw_trace_names {
    char **name;                /* owned */
    long *line;                 /* line of each name's first use (0 for "") */
    size_t n;
} spw_trace_names_t;

/* A job's governance names, as indices into the trace's tables; 0 = none. */
typedef struct spw_trace_attr {
    uint32_t team, jclass, data, residency;
    uint32_t labels;            /* index of its label set ("k=v;k2=v2") */
} spw_trace_attr_t;

typedef struct spw_trace {
    spw_trace_format_t format;  /* the format that was read */
    spw_job_t *jobs;            /* owned, sorted by (submit_s, id) */
    double *runtime_s;          /* owned: true runtime of each job, seconds */
    size_t njobs;
    size_t rows;                /* data rows read */
    size_t skipped_no_gpu;      /* rows that ask for no GPU (Alibaba) */
    size_t skipped_unscheduled; /* pods that never ran, so have no runtime (Alibaba) */
    size_t fractional_gpu;      /* pods that ask for part of a GPU, rounded up to one */
    long first_unsorted_line;   /* first line whose submit is earlier than the previous one; 0 = sorted */
    char *ids;                  /* owned storage of every job id */
    char *name;                 /* owned: the file name, for messages */
    spw_trace_names_t teams, classes, datasets, residencies;
    spw_trace_names_t labels;   /* label sets, as written (trimmed) */
    spw_trace_attr_t *attr;     /* owned, one per job; NULL when the trace has
                                   none of the columns team, class, data,
                                   residency, labels */
    uint8_t *own_ckpt;          /* owned, one per job: 1 = its own
                                   checkpoint_interval_s cell, which
                                   spw_trace_bind keeps; NULL when the trace
                                   has no such column */
} spw_trace_t;

/* Reads a trace.  Model names met in `gpu` / `gpu_spec` are interned into
 * `models` (the fleet's table).  On error nothing is left allocated and err
 * says FILE:LINE: what is wrong.
 *
 * Columns of the spillway CSV besides the four required: `deadline_s` is an
 * absolute time on the trace's clock (the clock of submit_s), not a span
 * after submission; `spot` is auto, always or never (job->spot_mode);
 * `spot_policy` is ondemand, greedy or uniform-progress (job->spot_policy,
 * value + 1; empty = the config's); `checkpoint_interval_s` is seconds or a
 * duration ("1h"), 0 (no checkpoints: an interruption restarts the job from
 * scratch) or "continuous" (nothing is lost).  Jobs without a checkpoint
 * cell get 0 here and the config's default from spw_trace_bind. */
int spw_trace_load(spw_trace_t *t, const char *path, spw_trace_format_t fmt,
                   spw_models_t *models, spw_error_t *err);
/* The same from memory (tests, fuzzing); `name` is used in messages. */
int spw_trace_load_mem(spw_trace_t *t, const char *name, const char *data, size_t len,
                       spw_trace_format_t fmt, spw_models_t *models, spw_error_t *err);
void spw_trace_free(spw_trace_t *t);

/* What spw_trace_bind could not match, for one warning line. */
typedef struct spw_trace_bind_info {
    size_t jobs_unknown_team;    /* jobs whose team the config does not name */
    size_t jobs_unknown_class;   /* jobs whose class no rule or residency names */
    char unknown_teams[160];     /* "ml2, cv3, ..." */
    char unknown_classes[160];
} spw_trace_bind_info_t;

/* Gives every job the governance indices of config spec g (borrowed):
 * team, jclass, labels, data and residency (index + 1; 0 = none), from the
 * names in the trace, and jobs without a checkpoint_interval_s cell of their
 * own the default checkpoint_s (seconds, 0 or SPW_CKPT_CONTINUOUS; the
 * config's spot.checkpoint_interval_s).  A team or class the config does not know is no
 * error (the job has no budget and matches no rule naming one); such jobs
 * are counted in *info (may be NULL) when the config names any team
 * (class).  Labels the config's rules do not name are dropped.  A dataset
 * or residency the config does not know is an error naming it and the line
 * of its first use; then no job is changed.  May be called again with
 * another spec. */
int spw_trace_bind(spw_trace_t *t, const spw_gov_t *g, double checkpoint_s,
                   spw_trace_bind_info_t *info, spw_error_t *err);

/* On-prem node failures for the simulator: a CSV with the header
 * node,down_s,up_s (up_s may be left out), one failure a row.  node is
 * POOL/INDEX: a pool of `fleet` (borrowed for the call) and a node index
 * from 0; down_s and up_s are trace seconds or durations ("36h", "1d2h"),
 * up_s empty = the node never comes back (INFINITY).  Errors name
 * FILE:LINE and what to write: an unknown pool, an index out of range,
 * negative times, up_s not after down_s, and two failures of one node that
 * overlap.  Returns 0 with *out (owned by the caller, free()) and *n in file
 * order, or -1 with err and *out, *n untouched. */
int spw_failures_load(const char *path, const spw_fleet_t *fleet, spw_sim_failure_t **out,
                      size_t *n, spw_error_t *err);
/* The same from memory; `name` is used in messages. */
int spw_failures_load_mem(const char *name, const char *data, size_t len,
                          const spw_fleet_t *fleet, spw_sim_failure_t **out, size_t *n,
                          spw_error_t *err);

/* Alibaba model names as the cloud catalog spells them (V100M16 -> V100). */
const char *spw_alibaba_model(const char *name, size_t len, size_t *outlen);

#endif
