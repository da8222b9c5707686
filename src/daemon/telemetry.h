/* telemetry.h: GPU utilisation and memory of this machine's GPUs, sampled
 * with nvidia-smi (the first one in the daemon's PATH) by the dashboard's
 * sampler thread (ui.c), never by the scheduler loop; mapped to jobs
 * through the GPUs the local backend gave them (CUDA_VISIBLE_DEVICES);
 * and the idle-GPU rule (daemon.idle_gpu): a job whose GPUs average below
 * threshold_pct for window_s is flagged, and with action: stop cancelled.
 *
 * Ownership: the JSON and text returned are the caller's. */
#ifndef SPW_DAEMON_TELEMETRY_H
#define SPW_DAEMON_TELEMETRY_H

#include <jansson.h>
#include <stddef.h>

struct spw_daemon;
struct spw_caller;
struct spw_daemon_conf;

/* One GPU as nvidia-smi reports it. */
typedef struct spw_gpu_sample {
    int index;                   /* nvidia-smi's index (CUDA_VISIBLE_DEVICES) */
    char uuid[64];               /* "GPU-..."; "" when not given */
    double util_pct;             /* utilization.gpu, 0..100 */
    double mem_used_mib;         /* memory.used, MiB */
    double mem_total_mib;        /* memory.total, MiB */
} spw_gpu_sample_t;

/* Most GPUs one sample keeps. */
#define SPW_TELEMETRY_GPUS_MAX 64

/* Parses the output of `nvidia-smi --query-gpu=index,uuid,utilization.gpu,
 * memory.used,memory.total --format=csv,noheader,nounits` into out (at
 * most max).  Lines that do not parse ("[N/A]" values) are skipped; a
 * value of "[N/A]" or "[Not Supported]" reads as 0.  Returns how many GPUs
 * were read. */
size_t spw_telemetry_parse(const char *text, spw_gpu_sample_t *out, size_t max);

typedef struct spw_telemetry spw_telemetry_t;

/* d and dc are borrowed and must outlive it. */
spw_telemetry_t *spw_telemetry_create(struct spw_daemon *d, const struct spw_daemon_conf *dc);
void spw_telemetry_destroy(spw_telemetry_t *t);

/* Runs nvidia-smi (at most 10 s), maps GPUs to the running on-prem jobs,
 * updates the idle rule and applies its action.  Blocks the caller for as
 * long as nvidia-smi takes; call it from a thread of its own. */
void spw_telemetry_poll(spw_telemetry_t *t, double now_ts);

/* {"source": "nvidia-smi"|"none", "error": "..."|null, "ts": T|null,
 *  "gpus": [{index, uuid, util_pct, mem_used_mib, mem_total_mib, job}],
 *  "jobs": [{id, team, gpus, util_pct, mem_used_mib, idle_since_ts,
 *            idle, stopped}],
 *  "idle_gpu": {threshold_pct, window_s, action}}.
 * A team caller sees its own jobs and their GPUs, and the GPUs of no job. */
json_t *spw_telemetry_json(spw_telemetry_t *t, const struct spw_caller *who);

/* Prometheus text of the last sample (caller frees; "" before any): per
 * GPU and per team; with per_job also the series that name jobs (their ids
 * and teams, which other teams cannot see through the API). */
char *spw_telemetry_metrics(spw_telemetry_t *t, int per_job);

#endif
