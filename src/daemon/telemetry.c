/* telemetry.c: nvidia-smi sampling, GPU-to-job mapping and the idle-GPU
 * rule (telemetry.h).  Runs on the dashboard sampler's thread. */
#include "daemon/telemetry.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "util/error.h"

/* Longest nvidia-smi may take before it is killed, seconds. */
#define QUERY_TIMEOUT_S 10.0
/* Most output read from it, bytes. */
#define QUERY_MAX (64 * 1024)
/* Most running jobs tracked. */
#define JOBS_MAX 1024

/* A running on-prem job as the last sample saw it. */
typedef struct tjob {
    char id[64];                 /* job id */
    char team[72];               /* its team */
    int gpu[SPW_TELEMETRY_GPUS_MAX]; /* nvidia-smi indices it holds */
    int ngpu;
    int measured;                /* 1: at least one of its GPUs was sampled */
    double util_pct;             /* mean utilisation of its GPUs */
    double mem_used_mib;         /* memory used on its GPUs */
    double idle_since_ts;        /* first sample of the current idle run; 0 = busy */
    int idle;                    /* flagged: idle for window_s or more */
    int stopped;                 /* the stop action cancelled it */
} tjob_t;

struct spw_telemetry {
    spw_daemon_t *d;             /* borrowed */
    const spw_daemon_conf_t *dc; /* borrowed; idle_gpu settings */
    pthread_mutex_t mu;          /* guards what follows: read by HTTP threads */
    int have;                    /* a sample was taken */
    int ok;                      /* the last nvidia-smi run worked */
    char error[160];             /* why it did not */
    double ts;                   /* when the last sample was taken */
    spw_gpu_sample_t gpus[SPW_TELEMETRY_GPUS_MAX];
    size_t ngpus;
    tjob_t *jobs;                /* running on-prem jobs; owned */
    size_t njobs;
    unsigned long flagged_total; /* jobs flagged idle by this process */
    unsigned long stopped_total; /* jobs the stop action cancelled */
};

/* A number field; "[N/A]"-style values read as 0.  0 or -1. */
static int field_num(const char *s, double *out)
{
    while (*s == ' ')
        s++;
    if (*s == '[') {
        *out = 0;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end == ' ' || *end == '\r')
        end++;
    if (end == s || *end || errno || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

size_t spw_telemetry_parse(const char *text, spw_gpu_sample_t *out, size_t max)
{
    size_t n = 0;
    const char *line = text;
    while (*line && n < max) {
        size_t ll = strcspn(line, "\n");
        char buf[512];
        if (ll < sizeof(buf)) {
            memcpy(buf, line, ll);
            buf[ll] = '\0';
            char *f[5];
            int nf = 0, commas = 0;
            char *p = buf;
            for (const char *q = buf; *q; q++)
                commas += *q == ',';
            while (nf < 5) {
                f[nf++] = p;
                char *c = strchr(p, ',');
                if (!c)
                    break;
                *c = '\0';
                p = c + 1;
            }
            double idx, util, used, total;
            if (nf == 5 && commas == 4 && field_num(f[0], &idx) == 0 &&
                idx < 4096 && idx == floor(idx) && field_num(f[2], &util) == 0 &&
                field_num(f[3], &used) == 0 && field_num(f[4], &total) == 0) {
                spw_gpu_sample_t *g = &out[n++];
                memset(g, 0, sizeof(*g));
                g->index = (int)idx;
                const char *u = f[1] + strspn(f[1], " ");
                snprintf(g->uuid, sizeof(g->uuid), "%.*s", (int)strcspn(u, " \r"), u);
                g->util_pct = util > 100 ? 100 : util;
                g->mem_used_mib = used;
                g->mem_total_mib = total;
            }
        }
        line += ll;
        if (*line)
            line++;
    }
    return n;
}

/* Runs nvidia-smi's query with a deadline.  The output (caller frees) or
 * NULL with a sentence in why. */
static char *run_query(char *why, size_t whysz)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(why, whysz, "cannot run nvidia-smi: %s", strerror(errno));
        return NULL;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whysz, "cannot run nvidia-smi: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return NULL;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(pfd[1], 1) < 0 || dup2(nul, 2) < 0)
            _exit(127);
        execlp("nvidia-smi", "nvidia-smi",
               "--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total",
               "--format=csv,noheader,nounits", (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char *buf = spw_xmalloc(QUERY_MAX + 1);
    size_t len = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int timed_out = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double left = QUERY_TIMEOUT_S - ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr <= 0)
            continue;
        ssize_t got = read(pfd[0], buf + len, QUERY_MAX - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
        if (len == QUERY_MAX)
            break;
    }
    close(pfd[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    buf[len] = '\0';
    if (timed_out) {
        snprintf(why, whysz, "nvidia-smi did not answer within %.0f s", QUERY_TIMEOUT_S);
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
        snprintf(why, whysz, "nvidia-smi not found in PATH: no GPU telemetry");
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(why, whysz, "nvidia-smi failed (status %d)", st);
    } else {
        return buf;
    }
    free(buf);
    return NULL;
}

spw_telemetry_t *spw_telemetry_create(spw_daemon_t *d, const spw_daemon_conf_t *dc)
{
    spw_telemetry_t *t = spw_xcalloc(1, sizeof(*t));
    t->d = d;
    t->dc = dc;
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

void spw_telemetry_destroy(spw_telemetry_t *t)
{
    if (!t)
        return;
    free(t->jobs);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static double threshold(const spw_telemetry_t *t)
{
    return t->dc ? t->dc->idle_threshold_pct : 5;
}

static double window(const spw_telemetry_t *t)
{
    return t->dc ? t->dc->idle_window_s : 1800;
}

/* The running on-prem jobs and their GPUs, carrying the idle state over
 * from the previous sample. */
static size_t running_jobs(spw_telemetry_t *t, tjob_t *out)
{
    static const spw_caller_t admin = {.team = NULL, .admin = 1, .token_name = "daemon"};
    json_t *obj = NULL;
    spw_error_t err = {{0}};
    size_t n = 0;
    if (spw_daemon_jobs(t->d, &admin, "running", NULL, 0, JOBS_MAX, &obj, &err) != 200) {
        json_decref(obj);
        return 0;
    }
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(obj, "jobs"), i, j) {
        const char *where = json_string_value(json_object_get(j, "where"));
        const char *gl = json_string_value(json_object_get(j, "gpus_assigned"));
        const char *id = json_string_value(json_object_get(j, "id"));
        const char *team = json_string_value(json_object_get(j, "team"));
        if (!where || strcmp(where, "onprem") != 0 || !gl || !id || n >= JOBS_MAX)
            continue;
        tjob_t *tj = &out[n++];
        memset(tj, 0, sizeof(*tj));
        snprintf(tj->id, sizeof(tj->id), "%s", id);
        snprintf(tj->team, sizeof(tj->team), "%s", team ? team : "");
        for (const char *p = gl; *p && tj->ngpu < SPW_TELEMETRY_GPUS_MAX;) {
            char *end;
            long g = strtol(p, &end, 10);
            if (end == p)
                break;
            tj->gpu[tj->ngpu++] = (int)g;
            p = end + strspn(end, ", ");
        }
    }
    json_decref(obj);
    return n;
}

void spw_telemetry_poll(spw_telemetry_t *t, double now_ts)
{
    char why[160] = "";
    char *text = run_query(why, sizeof(why));
    spw_gpu_sample_t gpus[SPW_TELEMETRY_GPUS_MAX];
    size_t ng = text ? spw_telemetry_parse(text, gpus, SPW_TELEMETRY_GPUS_MAX) : 0;
    if (text && ng == 0)
        snprintf(why, sizeof(why), "nvidia-smi printed no GPU this daemon could read");
    free(text);

    tjob_t *jobs = spw_xcalloc(JOBS_MAX, sizeof(tjob_t));
    size_t nj = ng ? running_jobs(t, jobs) : 0;
    char stop_ids[16][64];
    size_t nstop = 0;

    pthread_mutex_lock(&t->mu);
    for (size_t k = 0; k < nj; k++) {
        tjob_t *j = &jobs[k];
        double sum = 0, mem = 0;
        int seen = 0;
        for (int g = 0; g < j->ngpu; g++)
            for (size_t x = 0; x < ng; x++)
                if (gpus[x].index == j->gpu[g]) {
                    sum += gpus[x].util_pct;
                    mem += gpus[x].mem_used_mib;
                    seen++;
                }
        j->measured = seen > 0;
        j->util_pct = seen ? sum / seen : 0;
        j->mem_used_mib = mem;
        const tjob_t *prev = NULL;
        for (size_t p = 0; p < t->njobs; p++)
            if (strcmp(t->jobs[p].id, j->id) == 0)
                prev = &t->jobs[p];
        if (!j->measured || j->util_pct >= threshold(t)) {
            j->idle_since_ts = 0;
            continue;
        }
        j->idle_since_ts = prev && prev->idle_since_ts > 0 ? prev->idle_since_ts : now_ts;
        j->stopped = prev && prev->stopped;
        j->idle = now_ts - j->idle_since_ts >= window(t);
        if (j->idle && !(prev && prev->idle))
            t->flagged_total++;
        if (j->idle && !j->stopped && t->dc && t->dc->idle_stop && nstop < 16) {
            j->stopped = 1;
            t->stopped_total++;
            snprintf(stop_ids[nstop++], sizeof(stop_ids[0]), "%s", j->id);
        }
    }
    free(t->jobs);
    t->jobs = jobs;
    t->njobs = nj;
    memcpy(t->gpus, gpus, ng * sizeof(gpus[0]));
    t->ngpus = ng;
    t->have = 1;
    t->ok = ng > 0;
    snprintf(t->error, sizeof(t->error), "%s", why);
    t->ts = now_ts;
    pthread_mutex_unlock(&t->mu);

    /* The action, outside our lock: a cancel takes the daemon's. */
    for (size_t k = 0; k < nstop; k++) {
        static const spw_caller_t admin = {.team = NULL, .admin = 1, .token_name = "daemon"};
        json_t *obj = NULL;
        spw_error_t err = {{0}};
        spw_daemon_cancel(t->d, &admin, stop_ids[k], &obj, &err);
        json_decref(obj);
    }
}

/* The job holding GPU index g, or NULL. */
static const tjob_t *job_of(const spw_telemetry_t *t, int g)
{
    for (size_t k = 0; k < t->njobs; k++)
        for (int x = 0; x < t->jobs[k].ngpu; x++)
            if (t->jobs[k].gpu[x] == g)
                return &t->jobs[k];
    return NULL;
}

json_t *spw_telemetry_json(spw_telemetry_t *t, const spw_caller_t *who)
{
    const char *team = who->admin ? NULL : who->team;
    pthread_mutex_lock(&t->mu);
    json_t *gpus = json_array(), *jobs = json_array();
    for (size_t i = 0; i < t->ngpus; i++) {
        const spw_gpu_sample_t *g = &t->gpus[i];
        const tjob_t *j = job_of(t, g->index);
        if (team && j && strcmp(j->team, team) != 0)
            continue;
        json_array_append_new(gpus, json_pack("{s:i, s:s, s:f, s:f, s:f, s:o}",
            "index", g->index, "uuid", g->uuid, "util_pct", g->util_pct,
            "mem_used_mib", g->mem_used_mib, "mem_total_mib", g->mem_total_mib,
            "job", j ? json_string(j->id) : json_null()));
    }
    for (size_t k = 0; k < t->njobs; k++) {
        const tjob_t *j = &t->jobs[k];
        if (team && strcmp(j->team, team) != 0)
            continue;
        json_t *gl = json_array();
        for (int x = 0; x < j->ngpu; x++)
            json_array_append_new(gl, json_integer(j->gpu[x]));
        json_array_append_new(jobs, json_pack("{s:s, s:s, s:o, s:o, s:f, s:o, s:b, s:b}",
            "id", j->id, "team", j->team, "gpus", gl,
            "util_pct", j->measured ? json_real(j->util_pct) : json_null(),
            "mem_used_mib", j->mem_used_mib,
            "idle_since_ts", j->idle_since_ts > 0 ? json_real(j->idle_since_ts) : json_null(),
            "idle", j->idle, "stopped", j->stopped));
    }
    json_t *out = json_pack("{s:s, s:o, s:o, s:o, s:o, s:{s:f, s:f, s:s}}",
        "source", t->ok ? "nvidia-smi" : "none",
        "error", t->error[0] ? json_string(t->error) : json_null(),
        "ts", t->have ? json_real(t->ts) : json_null(),
        "gpus", gpus, "jobs", jobs,
        "idle_gpu", "threshold_pct", threshold(t), "window_s", window(t),
        "action", t->dc && t->dc->idle_stop ? "stop" : "flag");
    pthread_mutex_unlock(&t->mu);
    return out;
}

/* Appends printf text to *buf (length *len). */
static __attribute__((format(printf, 3, 4))) void put(char **buf, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *buf = spw_xrealloc(*buf, *len + (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(*buf + *len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
}

char *spw_telemetry_metrics(spw_telemetry_t *t, int per_job)
{
    char *b = spw_xstrdup("");
    size_t n = 0;
    pthread_mutex_lock(&t->mu);
    if (t->ngpus) {
        put(&b, &n, "# HELP spillway_gpu_utilization_percent GPU utilisation from nvidia-smi, by GPU%s.\n"
                    "# TYPE spillway_gpu_utilization_percent gauge\n",
            per_job ? " and the job holding it" : "");
        for (size_t i = 0; i < t->ngpus; i++) {
            const tjob_t *j = job_of(t, t->gpus[i].index);
            if (per_job)
                put(&b, &n, "spillway_gpu_utilization_percent{gpu=\"%d\",job=\"%s\"} %.1f\n",
                    t->gpus[i].index, j ? j->id : "", t->gpus[i].util_pct);
            else
                put(&b, &n, "spillway_gpu_utilization_percent{gpu=\"%d\"} %.1f\n",
                    t->gpus[i].index, t->gpus[i].util_pct);
        }
        put(&b, &n, "# HELP spillway_gpu_memory_used_bytes GPU memory in use, by GPU%s.\n"
                    "# TYPE spillway_gpu_memory_used_bytes gauge\n",
            per_job ? " and the job holding it" : "");
        for (size_t i = 0; i < t->ngpus; i++) {
            const tjob_t *j = job_of(t, t->gpus[i].index);
            if (per_job)
                put(&b, &n, "spillway_gpu_memory_used_bytes{gpu=\"%d\",job=\"%s\"} %.0f\n",
                    t->gpus[i].index, j ? j->id : "", t->gpus[i].mem_used_mib * 1048576.0);
            else
                put(&b, &n, "spillway_gpu_memory_used_bytes{gpu=\"%d\"} %.0f\n",
                    t->gpus[i].index, t->gpus[i].mem_used_mib * 1048576.0);
        }
        put(&b, &n, "# HELP spillway_gpu_memory_total_bytes GPU memory, by GPU.\n"
                    "# TYPE spillway_gpu_memory_total_bytes gauge\n");
        for (size_t i = 0; i < t->ngpus; i++)
            put(&b, &n, "spillway_gpu_memory_total_bytes{gpu=\"%d\"} %.0f\n", t->gpus[i].index,
                t->gpus[i].mem_total_mib * 1048576.0);
        put(&b, &n, "# HELP spillway_jobs_gpu_idle Running jobs of a team flagged for idle GPUs (daemon.idle_gpu).\n"
                    "# TYPE spillway_jobs_gpu_idle gauge\n");
        for (size_t k = 0; k < t->njobs; k++) {
            size_t first = 0, idle = 0;
            while (strcmp(t->jobs[first].team, t->jobs[k].team) != 0)
                first++;
            if (first < k || !t->jobs[k].measured)
                continue;  /* each team once, at its first measured job */
            for (size_t m = k; m < t->njobs; m++)
                idle += t->jobs[m].measured && t->jobs[m].idle &&
                        strcmp(t->jobs[m].team, t->jobs[k].team) == 0;
            put(&b, &n, "spillway_jobs_gpu_idle{team=\"%s\"} %zu\n", t->jobs[k].team, idle);
        }
        if (per_job) {
            put(&b, &n, "# HELP spillway_job_gpu_idle 1 for a running job whose GPUs stayed under daemon.idle_gpu.threshold_pct for window_s.\n"
                        "# TYPE spillway_job_gpu_idle gauge\n");
            for (size_t k = 0; k < t->njobs; k++)
                if (t->jobs[k].measured)
                    put(&b, &n, "spillway_job_gpu_idle{job=\"%s\",team=\"%s\"} %d\n",
                        t->jobs[k].id, t->jobs[k].team, t->jobs[k].idle);
        }
    }
    if (t->have)
        put(&b, &n, "# HELP spillway_idle_gpu_jobs_flagged_total Jobs flagged for idle GPUs by this daemon process.\n"
                    "# TYPE spillway_idle_gpu_jobs_flagged_total counter\n"
                    "spillway_idle_gpu_jobs_flagged_total %lu\n"
                    "# HELP spillway_idle_gpu_jobs_stopped_total Jobs stopped for idle GPUs (idle_gpu.action: stop).\n"
                    "# TYPE spillway_idle_gpu_jobs_stopped_total counter\n"
                    "spillway_idle_gpu_jobs_stopped_total %lu\n",
            t->flagged_total, t->stopped_total);
    pthread_mutex_unlock(&t->mu);
    return b;
}
