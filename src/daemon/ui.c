/* ui.c: the dashboard's side of the daemon: the embedded files of /ui and
 * a sampler thread keeping a time series (pool GPUs, queue, cloud GPUs,
 * spend per team and provider) in three tiers, in memory and written
 * through to the state store, read by GET /v1/ui/series.
 * GPU telemetry is in telemetry.c; this thread drives it too. */
#include "daemon/ui.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/daemon.h"
#include "daemon/telemetry.h"
#include "util/error.h"

/* One tier of the series in memory: a ring of samples, oldest first. */
typedef struct ring {
    json_t **s;                  /* samples, owned; s[(head + i) % max] */
    size_t head, n, max;         /* oldest slot, samples held, capacity */
} ring_t;

/* The tiers: what each keeps and how far apart its samples are (tier 0
 * takes every sample, daemon.sample_s apart).  Each is written through to
 * the state store (table series) and read back at start. */
static const struct {
    double step_s;               /* at most one sample per step_s, seconds */
    double keep_s;               /* span kept, seconds */
    size_t max;                  /* samples held at most */
} tiers[SPW_UI_TIERS] = {
    {0, 3600, SPW_UI_SERIES_MAX},         /* every sample, one hour */
    {60, 86400, 1440},                    /* one a minute, one day */
    {600, 8 * 86400, 8 * 144},            /* one every 10 min, eight days */
};

struct spw_ui {
    spw_daemon_t *d;             /* borrowed */
    double interval_s;           /* between two series samples */
    pthread_mutex_t mu;          /* guards everything below */
    pthread_cond_t wake;         /* destroy wakes the thread */
    pthread_t thread;            /* the sampler, when started */
    int started;                 /* 1: thread runs */
    int stopping;                /* destroy asked it to end */
    ring_t tier[SPW_UI_TIERS];   /* the series: every sample, then coarser */
    double oldest_wait_s;        /* age of the oldest queued job, last sample */
    long idle_instances;         /* ready cloud instances bound to no job */
    double idle_usd_per_h;       /* what they bill */
    spw_telemetry_t *tel;        /* GPU telemetry, owned */
};

const spw_ui_asset_t *spw_ui_asset(const char *name)
{
    for (const spw_ui_asset_t *a = spw_ui_assets; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

/* Admin: the sampler sees everything and filters per caller on reads. */
static const spw_caller_t admin = {.team = NULL, .admin = 1, .token_name = "daemon"};

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* The submit time of the oldest queued job (the API lists oldest first, so
 * one job is enough), or now_ts when none is queued. */
static double oldest_queued_ts(spw_daemon_t *d, double now_ts)
{
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    double t = now_ts;
    if (spw_daemon_jobs(d, &admin, "queued", NULL, 0, 1, &obj, &err) == 200) {
        double v = num(json_array_get(json_object_get(obj, "jobs"), 0), "submit_ts");
        if (v > 0 && v < now_ts)
            t = v;
    }
    json_decref(obj);
    return t;
}

/* The sum of the samples in Prometheus text whose line starts with
 * prefix: a metric's name followed by ' ' (an unlabelled one) or by '{' and
 * the first labels.  0 when there is none. */
static double metric_sum(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    double sum = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, prefix, n) != 0)
            continue;
        const char *v = p + n;
        if (prefix[n - 1] == '{' || prefix[n - 1] == ',') {
            v = strchr(v, '}');  /* past the other labels */
            if (!v)
                continue;
            v++;
        } else if (*v != ' ') {
            continue;  /* a longer name */
        }
        sum += strtod(v, NULL);
    }
    return sum;
}

/* One sample: {"t", "queued", "running", "preemptions", "restarts", "pools": [{name, busy, free,
 * down}], "cloud_gpus", "instances", "onprem_usd", "cloud_usd",
 * "teams": [{team, onprem_usd, cloud_usd, settled_usd, reserved_usd,
 * budget_usd}], "providers": [{provider, usd}]}. */
static json_t *take(spw_ui_t *u, double now_ts, double *oldest_wait_s, long *idle_inst,
                    double *idle_usd_h)
{
    json_t *s = json_object();
    json_object_set_new(s, "t", json_real(now_ts));
    /* Counts from the metrics text: listing a deep queue would hold the
     * daemon's lock for as long as it takes to write every job. */
    char *m = spw_daemon_metrics(u->d);
    const char *mt = m ? m : "";
    json_object_set_new(s, "queued", json_integer((json_int_t)metric_sum(mt, "spillway_queue_length")));
    json_object_set_new(s, "running",
                        json_integer((json_int_t)metric_sum(mt, "spillway_jobs{state=\"running\",")));
    json_object_set_new(s, "preemptions", json_real(metric_sum(mt, "spillway_preemptions_total")));
    json_object_set_new(s, "restarts", json_real(metric_sum(mt, "spillway_restarts_total")));
    json_object_set_new(s, "failures",
                        json_real(metric_sum(mt, "spillway_jobs_interrupted_by_failure_total")));
    free(m);
    *oldest_wait_s = now_ts - oldest_queued_ts(u->d, now_ts);

    json_t *pools = NULL;
    spw_error_t err = {{0}};
    json_t *sp = json_array();
    long cloud_gpus = 0, live = 0;
    *idle_inst = 0;
    if (spw_daemon_pools(u->d, &admin, &pools, &err) == 200) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(pools, "pools"), i, p) {
            json_array_append_new(sp, json_pack("{s:O, s:f, s:f, s:f}",
                "name", json_object_get(p, "name"), "busy", num(p, "gpus_busy"),
                "free", num(p, "gpus_free"), "down", num(p, "gpus_down")));
        }
        json_t *offers = json_object_get(pools, "offers");
        json_array_foreach(json_object_get(pools, "instances"), i, p) {
            const char *st = json_string_value(json_object_get(p, "state"));
            if (!st || (strcmp(st, "ready") != 0 && strcmp(st, "booting") != 0))
                continue;
            live++;
            if (strcmp(st, "ready") == 0 && json_is_null(json_object_get(p, "job_id")))
                (*idle_inst)++;
            const char *on = json_string_value(json_object_get(p, "offer"));
            size_t k;
            json_t *o;
            json_array_foreach(offers, k, o) {
                const char *name = json_string_value(json_object_get(o, "name"));
                if (on && name && strcmp(on, name) == 0) {
                    cloud_gpus += (long)num(o, "gpus");
                    break;
                }
            }
        }
    }
    json_decref(pools);
    json_object_set_new(s, "pools", sp);
    json_object_set_new(s, "cloud_gpus", json_integer(cloud_gpus));
    json_object_set_new(s, "instances", json_integer(live));

    json_t *costs = NULL;
    json_t *teams = json_array(), *provs = json_array();
    *idle_usd_h = 0;
    if (spw_daemon_costs(u->d, &admin, NULL, &costs, &err) == 200) {
        json_object_set_new(s, "onprem_usd", json_real(num(costs, "onprem_usd")));
        json_object_set_new(s, "cloud_usd", json_real(num(costs, "cloud_usd")));
        *idle_usd_h = num(json_object_get(costs, "org"), "idle_usd_per_h");
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(costs, "teams"), i, t) {
            json_t *b = json_object_get(t, "budget_usd");
            json_array_append_new(teams, json_pack("{s:O, s:f, s:f, s:f, s:f, s:O}",
                "team", json_object_get(t, "team"), "onprem_usd", num(t, "onprem_usd"),
                "cloud_usd", num(t, "cloud_usd"), "settled_usd", num(t, "settled_usd"),
                "reserved_usd", num(t, "reserved_usd"), "budget_usd", b ? b : json_null()));
        }
        json_array_foreach(json_object_get(costs, "providers"), i, t) {
            json_array_append_new(provs, json_pack("{s:O, s:f}", "provider",
                json_object_get(t, "provider"), "usd", num(t, "usd")));
        }
    } else {
        json_object_set_new(s, "onprem_usd", json_real(0));
        json_object_set_new(s, "cloud_usd", json_real(0));
    }
    json_decref(costs);
    json_object_set_new(s, "teams", teams);
    json_object_set_new(s, "providers", provs);
    return s;
}

static json_t *ring_at(const ring_t *r, size_t i)
{
    return r->s[(r->head + i) % r->max];
}

static double sample_t(const json_t *s)
{
    return num(s, "t");
}

/* Appends s (a reference taken) to tier k as of now_ts, dropping what is
 * older than the tier keeps or beyond its capacity. */
static void ring_push(ring_t *r, int k, json_t *s, double now_ts)
{
    while (r->n && (r->n == r->max || sample_t(ring_at(r, 0)) < now_ts - tiers[k].keep_s)) {
        json_decref(ring_at(r, 0));
        r->head = (r->head + 1) % r->max;
        r->n--;
    }
    r->s[(r->head + r->n++) % r->max] = json_incref(s);
}

/* 1 when tier k takes a sample at t: tier 0 always; a coarser one when t
 * falls in a later step than its newest sample. */
static int tier_takes(const ring_t *r, int k, double t)
{
    if (k == 0 || r->n == 0)
        return 1;
    return floor(t / tiers[k].step_s) > floor(sample_t(ring_at(r, r->n - 1)) / tiers[k].step_s);
}

void spw_ui_record(spw_ui_t *u, double now_ts)
{
    double wait_s;
    long idle;
    double idle_usd;
    json_t *s = take(u, now_ts, &wait_s, &idle, &idle_usd);
    int to[SPW_UI_TIERS];
    /* Only this thread adds samples: what the tiers take cannot change
     * between the two locks. */
    pthread_mutex_lock(&u->mu);
    for (int k = 0; k < SPW_UI_TIERS; k++)
        to[k] = tier_takes(&u->tier[k], k, now_ts);
    pthread_mutex_unlock(&u->mu);
    /* Written to the store first, outside our lock (the store's is the
     * daemon's), so a sample served was committed; a write that fails
     * loses history only: the health check watches the store. */
    char *text = json_dumps(s, JSON_COMPACT);
    for (int k = 0; k < SPW_UI_TIERS && text; k++) {
        spw_error_t err = {{0}};
        if (to[k])
            spw_daemon_series_put(u->d, k, now_ts, text, now_ts - tiers[k].keep_s, &err);
    }
    free(text);
    pthread_mutex_lock(&u->mu);
    for (int k = 0; k < SPW_UI_TIERS; k++)
        if (to[k])
            ring_push(&u->tier[k], k, s, now_ts);
    u->oldest_wait_s = wait_s;
    u->idle_instances = idle;
    u->idle_usd_per_h = idle_usd;
    pthread_mutex_unlock(&u->mu);
    json_decref(s);
}

void spw_ui_sample(spw_ui_t *u, double now_ts)
{
    spw_ui_record(u, now_ts);
    /* Outside the lock: nvidia-smi may take a while. */
    spw_telemetry_poll(u->tel, now_ts);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *ui_main(void *arg)
{
    spw_ui_t *u = arg;
    pthread_mutex_lock(&u->mu);
    while (!u->stopping) {
        pthread_mutex_unlock(&u->mu);
        spw_ui_sample(u, wall_now());
        pthread_mutex_lock(&u->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double t = until.tv_sec + until.tv_nsec / 1e9 + u->interval_s;
        until.tv_sec = (time_t)t;
        until.tv_nsec = (long)((t - floor(t)) * 1e9);
        while (!u->stopping && pthread_cond_timedwait(&u->wake, &u->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

/* What loading a tier from the store needs. */
typedef struct load {
    ring_t *r;                   /* the tier's ring */
    int k;                       /* its number */
    double now_ts;               /* samples older than the tier keeps are left */
} load_t;

static int load_row(double ts, const char *json, void *arg)
{
    load_t *l = arg;
    json_t *s = json_loads(json, 0, NULL);
    if (json_is_object(s) && ts >= l->now_ts - tiers[l->k].keep_s && ts <= l->now_ts)
        ring_push(l->r, l->k, s, l->now_ts);
    json_decref(s);
    return 0;
}

spw_ui_t *spw_ui_create(spw_daemon_t *d, const spw_daemon_conf_t *dc, int thread)
{
    spw_ui_t *u = spw_xcalloc(1, sizeof(*u));
    u->d = d;
    u->interval_s = dc && dc->sample_s > 0 ? dc->sample_s : 5.0;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->wake, NULL);
    /* The history of the daemons before this one (a restart keeps it). */
    double now = wall_now();
    for (int k = 0; k < SPW_UI_TIERS; k++) {
        u->tier[k].max = tiers[k].max;
        u->tier[k].s = spw_xcalloc(tiers[k].max, sizeof(json_t *));
        load_t l = {&u->tier[k], k, now};
        spw_error_t err = {{0}};
        spw_daemon_series_list(d, k, load_row, &l, &err);
    }
    u->tel = spw_telemetry_create(d, dc);
    if (thread && pthread_create(&u->thread, NULL, ui_main, u) == 0)
        u->started = 1;
    return u;
}

void spw_ui_destroy(spw_ui_t *u)
{
    if (!u)
        return;
    if (u->started) {
        pthread_mutex_lock(&u->mu);
        u->stopping = 1;
        pthread_cond_signal(&u->wake);
        pthread_mutex_unlock(&u->mu);
        pthread_join(u->thread, NULL);
    }
    for (int k = 0; k < SPW_UI_TIERS; k++) {
        for (size_t i = 0; i < u->tier[k].n; i++)
            json_decref(ring_at(&u->tier[k], i));
        free(u->tier[k].s);
    }
    spw_telemetry_destroy(u->tel);
    pthread_cond_destroy(&u->wake);
    pthread_mutex_destroy(&u->mu);
    free(u);
}

/* A copy of sample s as a team caller may see it. */
static json_t *for_team(const json_t *s, const char *team)
{
    json_t *c = json_copy((json_t *)s);
    json_t *teams = json_array();
    size_t i;
    json_t *t;
    double onprem = 0, cloud = 0;
    json_array_foreach(json_object_get(s, "teams"), i, t) {
        const char *name = json_string_value(json_object_get(t, "team"));
        if (name && strcmp(name, team) == 0) {
            json_array_append(teams, t);
            onprem += num(t, "onprem_usd");
            cloud += num(t, "cloud_usd");
        }
    }
    json_object_set_new(c, "teams", teams);
    json_object_set_new(c, "providers", json_array());
    json_object_set_new(c, "onprem_usd", json_real(onprem));
    json_object_set_new(c, "cloud_usd", json_real(cloud));
    return c;
}

json_t *spw_ui_series(spw_ui_t *u, const spw_caller_t *who, double range_s)
{
    json_t *arr = json_array(), *tl = json_array();
    pthread_mutex_lock(&u->mu);
    /* From the newest sample back range_s: each span from the finest tier
     * that still holds it (coarser tiers fill in before a finer one's
     * oldest sample). */
    double newest = 0;
    for (int k = 0; k < SPW_UI_TIERS; k++)
        if (u->tier[k].n)
            newest = fmax(newest, sample_t(ring_at(&u->tier[k], u->tier[k].n - 1)));
    double from = newest - range_s, until = INFINITY;
    for (int k = 0; k < SPW_UI_TIERS; k++) {
        const ring_t *r = &u->tier[k];
        size_t first = 0;  /* before the finer tiers' samples */
        for (size_t i = 0; i < r->n; i++) {
            const json_t *s = ring_at(r, i);
            double t = sample_t(s);
            if (t < from || t >= until)
                continue;
            json_array_insert_new(arr, first++, who->admin || !who->team ? json_incref((json_t *)s)
                                                                       : for_team(s, who->team));
        }
        if (r->n)
            until = fmin(until, sample_t(ring_at(r, 0)));
        json_array_append_new(tl, json_pack("{s:f, s:f, s:i}", "step_s",
            k ? tiers[k].step_s : u->interval_s, "keep_s", tiers[k].keep_s, "held", (int)r->n));
    }
    pthread_mutex_unlock(&u->mu);
    const char *role = who->viewer ? "viewer" : who->admin ? "admin" : "member";
    return json_pack("{s:f, s:f, s:o, s:o, s:{s:s, s:o, s:b, s:o}}", "interval_s", u->interval_s,
        "range_s", range_s, "tiers", tl, "samples", arr, "caller", "role", role,
        "team", who->team ? json_string(who->team) : json_null(),
        "may_cancel", !who->viewer && !who->metrics,
        "user", who->user[0] ? json_string(who->user) : json_null());
}

json_t *spw_ui_telemetry(spw_ui_t *u, const spw_caller_t *who)
{
    return spw_telemetry_json(u->tel, who);
}

char *spw_ui_metrics(spw_ui_t *u, int per_job)
{
    pthread_mutex_lock(&u->mu);
    double wait_s = u->oldest_wait_s, idle_usd = u->idle_usd_per_h;
    long idle = u->idle_instances;
    int have = u->tier[0].n > 0;
    pthread_mutex_unlock(&u->mu);
    char head[1024] = "";
    if (have)
        snprintf(head, sizeof(head),
                 "# HELP spillway_queue_oldest_wait_seconds Age of the oldest queued job at the last sample.\n"
                 "# TYPE spillway_queue_oldest_wait_seconds gauge\n"
                 "spillway_queue_oldest_wait_seconds %.3f\n"
                 "# HELP spillway_cloud_instances_idle Ready cloud instances bound to no job.\n"
                 "# TYPE spillway_cloud_instances_idle gauge\n"
                 "spillway_cloud_instances_idle %ld\n"
                 "# HELP spillway_cloud_idle_usd_per_hour What idle cloud instances bill per hour.\n"
                 "# TYPE spillway_cloud_idle_usd_per_hour gauge\n"
                 "spillway_cloud_idle_usd_per_hour %.6f\n",
                 wait_s, idle, idle_usd);
    char *tel = spw_telemetry_metrics(u->tel, per_job);
    size_t n1 = strlen(head), n2 = strlen(tel);
    char *out = spw_xmalloc(n1 + n2 + 1);
    memcpy(out, head, n1);
    memcpy(out + n1, tel, n2 + 1);
    free(tel);
    return out;
}
