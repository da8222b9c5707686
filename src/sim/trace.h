/* trace.h: job traces for the simulator.
 *
 * Formats: spillway's own CSV (header required, columns by name) and the
 * Alibaba GPU cluster trace 2023 pod list.  A trace owns its jobs, their ids
 * and team names; jobs come out sorted by (submit_s, id) with `order` set to
 * their position, ready for spw_sim_run. */
#ifndef SPW_SIM_TRACE_H
#define SPW_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "util/error.h"

typedef enum spw_trace_format {
    SPW_TRACE_AUTO,      /* detect from the header */
    SPW_TRACE_SPILLWAY,  /* id,submit_s,gpus,runtime_s[,gpu,team,priority,deadline_s,est_runtime_s] */
    SPW_TRACE_ALIBABA,   /* openb_pod_list_*.csv */
} spw_trace_format_t;

int spw_trace_format_parse(const char *s, spw_trace_format_t *out, spw_error_t *err);
const char *spw_trace_format_name(spw_trace_format_t f);

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
    char **teams;               /* owned team names; teams[0] = "" (no team) */
    size_t nteams;
    char *ids;                  /* owned storage of every job id */
} spw_trace_t;

/* Reads a trace.  Model names met in `gpu` / `gpu_spec` are interned into
 * `models` (the fleet's table).  On error nothing is left allocated and err
 * says FILE:LINE: what is wrong. */
int spw_trace_load(spw_trace_t *t, const char *path, spw_trace_format_t fmt,
                   spw_models_t *models, spw_error_t *err);
/* The same from memory (tests, fuzzing); `name` is used in messages. */
int spw_trace_load_mem(spw_trace_t *t, const char *name, const char *data, size_t len,
                       spw_trace_format_t fmt, spw_models_t *models, spw_error_t *err);
void spw_trace_free(spw_trace_t *t);

/* Alibaba model names as the cloud catalog spells them (V100M16 -> V100). */
const char *spw_alibaba_model(const char *name, size_t len, size_t *outlen);

#endif
