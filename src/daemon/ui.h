/* ui.h: what the web dashboard (/ui, docs/dashboard.md) needs beyond the
 * /v1 API: its embedded files, and a sampler thread that keeps, in memory,
 * a time series of pool GPUs, the queue, cloud GPUs and spend (one sample
 * every few seconds for an hour, coarser for a day and a week, kept in the
 * state store so a restart keeps it), plus GPU telemetry from
 * nvidia-smi (telemetry.c).
 *
 * The sampler only calls the daemon's public, thread-safe API (daemon.h),
 * each call holding the daemon's lock briefly, so it never blocks the
 * scheduler loop for longer than an HTTP request would.
 *
 * Ownership: spw_ui_series and spw_ui_telemetry return new references
 * (caller decrefs).  Assets are static. */
#ifndef SPW_DAEMON_UI_H
#define SPW_DAEMON_UI_H

#include <jansson.h>
#include <stddef.h>

#include "daemon/store.h"
#include "util/error.h"

struct spw_daemon;
struct spw_caller;
struct spw_daemon_conf;

/* One file of web/, embedded at build time by web/embed.c. */
typedef struct spw_ui_asset {
    const char *name;            /* base name, "app.js"; NULL ends the table */
    const char *content_type;    /* MIME type with charset */
    const unsigned char *data;   /* the bytes (NUL-terminated as well) */
    long len;                    /* bytes at data, without the NUL */
} spw_ui_asset_t;

/* The generated table (build/gen/ui_assets.c), ended by a NULL name. */
extern const spw_ui_asset_t spw_ui_assets[];

/* The asset called name ("index.html"), or NULL. */
const spw_ui_asset_t *spw_ui_asset(const char *name);

typedef struct spw_ui spw_ui_t;

/* Samples kept in tier 0 (every sample): at the default 5 s interval, one
 * hour.  Tiers 1 and 2 keep one sample a minute for a day and one every
 * ten minutes for eight days (ui.c, docs/dashboard.md). */
#define SPW_UI_SERIES_MAX 720
#define SPW_UI_TIERS 3
/* The span GET /v1/ui/series answers by default and at most, seconds. */
#define SPW_UI_RANGE_DEFAULT_S 3600
#define SPW_UI_RANGE_MAX_S (8 * 86400)

/* The sampler of a started daemon (daemon.c), NULL before spw_daemon_start. */
spw_ui_t *spw_daemon_ui(struct spw_daemon *d);

/* Makes the sampler for d (borrowed; must outlive it) with the daemon
 * config's sampling settings.  thread = 1 starts its thread; 0 leaves the
 * sampling to spw_ui_sample (tests).  Never fails (allocation aborts); if
 * the thread cannot start, the series stays empty. */
spw_ui_t *spw_ui_create(struct spw_daemon *d, const struct spw_daemon_conf *dc, int thread);

/* Stops the thread (waiting for a sample in progress) and frees.  NULL-safe. */
void spw_ui_destroy(spw_ui_t *u);

/* Takes one sample now (unix seconds): series and telemetry. */
void spw_ui_sample(spw_ui_t *u, double now_ts);

/* The series' part of spw_ui_sample alone (no nvidia-smi). */
void spw_ui_record(spw_ui_t *u, double now_ts);

/* {"interval_s": S, "range_s": R, "tiers": [...], "samples": [{...}, ...],
 * "caller": {role, team, may_cancel}}: the samples of the last range_s
 * seconds before the newest, oldest first, each span from the finest tier
 * that holds it; a team caller sees only its own team's spend and no
 * providers (as GET /v1/costs). */
json_t *spw_ui_series(spw_ui_t *u, const struct spw_caller *who, double range_s);

/* The state store's copy of the series (store.h, table series), under the
 * daemon's lock: spw_store_series_put and spw_store_series_list.  0, or
 * -1 with err. */
int spw_daemon_series_put(struct spw_daemon *d, int tier, double ts, const char *json,
                          double keep_from_ts, spw_error_t *err);
int spw_daemon_series_list(struct spw_daemon *d, int tier, spw_store_series_f cb, void *arg,
                           spw_error_t *err);

/* Telemetry as JSON (telemetry.c, docs/dashboard.md); a team caller sees
 * the GPUs of its own jobs and the free ones. */
json_t *spw_ui_telemetry(spw_ui_t *u, const struct spw_caller *who);

/* Prometheus text for the sampler's own metrics (queue age, GPU
 * utilisation and memory, idle jobs), appended to /metrics; per_job as
 * spw_telemetry_metrics.  Caller frees; "" when there is nothing. */
char *spw_ui_metrics(spw_ui_t *u, int per_job);

#endif
