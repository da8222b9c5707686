/* sbatch.c: reads the #SBATCH directives of a Slurm batch script (the
 * options sbatch(1) documents for gres, GPUs, nodes, time, job name and
 * output); see sbatch.h. */
#include "util/sbatch.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/timeparse.h"

/* The directives read, by long name, with their short letter. */
enum { D_GRES, D_GPUS, D_GPN, D_NODES, D_TIME, D_NAME, D_OUTPUT, D_ERROR };
static const struct { const char *name; char letter; } directives[] = {
    [D_GRES] = {"gres", 0},          [D_GPUS] = {"gpus", 'G'},
    [D_GPN] = {"gpus-per-node", 0},  [D_NODES] = {"nodes", 'N'},
    [D_TIME] = {"time", 't'},        [D_NAME] = {"job-name", 'J'},
    [D_OUTPUT] = {"output", 'o'},    [D_ERROR] = {"error", 'e'},
};
#define NDIRECTIVES (sizeof(directives) / sizeof(directives[0]))

static int count(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > 1000000)
        return -1;
    *out = v;
    return 0;
}

/* "gpu:N", "gpu:MODEL:N", "N" or "MODEL:N" (after dropping "gpu:" when
 * gres): the count and the model (owned copy, or NULL). */
static int gpu_spec(const char *v, int gres, long *n, char **model)
{
    if (gres) {
        if (strncmp(v, "gpu", 3) != 0 || (v[3] != ':' && v[3] != '\0'))
            return -1;
        v += v[3] == ':' ? 4 : 3;
        if (!*v) {
            *n = 1;     /* --gres=gpu: one GPU, as Slurm reads it */
            return 0;
        }
    }
    const char *colon = strrchr(v, ':');
    if (count(colon ? colon + 1 : v, n) < 0)
        return -1;
    if (colon) {
        size_t k = (size_t)(colon - v);
        if (k == 0 || memchr(v, ':', k))
            return -1;
        free(*model);
        *model = spw_xmalloc(k + 1);
        memcpy(*model, v, k);
        (*model)[k] = '\0';
    }
    return 0;
}

static void note_ignored(spw_sbatch_t *s, const char *opt, size_t len)
{
    size_t have = strlen(s->ignored);
    if (have + len + 3 < sizeof(s->ignored))
        snprintf(s->ignored + have, sizeof(s->ignored) - have, "%s%.*s", have ? ", " : "",
                 (int)len, opt);
}

/* Applies one directive: argument text "--name=value", "--name value",
 * "-X value" or "-Xvalue". */
static int apply(spw_sbatch_t *s, const char *file, int line, char *arg, spw_error_t *err)
{
    size_t d = NDIRECTIVES;
    char *value = NULL;
    if (arg[0] == '-' && arg[1] == '-') {
        char *name = arg + 2;
        size_t nlen = strcspn(name, "= \t");
        for (d = 0; d < NDIRECTIVES; d++)
            if (strlen(directives[d].name) == nlen && strncmp(name, directives[d].name, nlen) == 0)
                break;
        if (d == NDIRECTIVES) {
            note_ignored(s, arg, nlen + 2);
            return 0;
        }
        value = name + nlen;
    } else if (arg[0] == '-' && isalpha((unsigned char)arg[1])) {
        for (d = 0; d < NDIRECTIVES; d++)
            if (directives[d].letter == arg[1])
                break;
        if (d == NDIRECTIVES) {
            note_ignored(s, arg, 2);
            return 0;
        }
        value = arg + 2;
    } else {
        return spw_errorf(err, "%s:%d: '%.40s' is not an option: #SBATCH takes sbatch's options "
                          "(--gres=gpu:2, --time=01:00:00)", file, line, arg);
    }
    value += strspn(value, "= \t");
    size_t vlen = strlen(value);
    while (vlen && isspace((unsigned char)value[vlen - 1]))
        value[--vlen] = '\0';
    if (vlen >= 2 && (value[0] == '"' || value[0] == '\'') && value[vlen - 1] == value[0]) {
        value[vlen - 1] = '\0';
        value++;
    }
    if (!*value)
        return spw_errorf(err, "%s:%d: --%s needs a value", file, line, directives[d].name);
    int bad = 0;
    switch (d) {
    case D_GRES: bad = gpu_spec(value, 1, &s->gpus_per_node, &s->model); break;
    case D_GPUS: bad = gpu_spec(value, 0, &s->gpus, &s->model); break;
    case D_GPN: bad = gpu_spec(value, 0, &s->gpus_per_node, &s->model); break;
    case D_NODES: {
        /* "2" or a range "2-4": spillway takes the lower bound. */
        char lo[32];
        snprintf(lo, sizeof(lo), "%.*s", (int)strcspn(value, "-"), value);
        bad = count(lo, &s->nodes);
        break;
    }
    case D_TIME:
        bad = spw_parse_duration(value, &s->time_s) < 0 || !(s->time_s > 0);
        if (strcmp(value, "UNLIMITED") == 0 || strcmp(value, "INFINITE") == 0) {
            s->time_s = 0;
            bad = 0;
        }
        break;
    case D_NAME: free(s->name); s->name = spw_xstrdup(value); break;
    case D_OUTPUT: free(s->output); s->output = spw_xstrdup(value); break;
    case D_ERROR: free(s->error); s->error = spw_xstrdup(value); break;
    }
    if (bad)
        return spw_errorf(err, "%s:%d: --%s=%.40s is not understood (e.g. %s)", file, line,
                          directives[d].name, value,
                          d == D_GRES ? "--gres=gpu:2 or --gres=gpu:a100:2"
                          : d == D_TIME ? "--time=01:30:00, 2-00:00:00 or 90"
                          : d == D_NODES ? "--nodes=2" : "--gpus=4 or --gpus=a100:4");
    return 0;
}

int spw_sbatch_parse(const char *name, const char *text, size_t len, spw_sbatch_t *out,
                     spw_error_t *err)
{
    memset(out, 0, sizeof(*out));
    size_t i = 0;
    int line = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        line++;
        char buf[1024];
        snprintf(buf, sizeof(buf), "%.*s", (int)(e - i), text + i);
        i = e + 1;
        char *p = buf + strspn(buf, " \t\r");
        if (!*p || *p == '\r')
            continue;
        if (*p != '#')
            break;  /* the first command: sbatch reads no further */
        if (strncmp(p, "#SBATCH", 7) != 0 || !isspace((unsigned char)p[7]))
            continue;
        p += 7 + strspn(p + 7, " \t");
        /* A comment after the option, as sbatch allows: "--time=1:00 # one hour". */
        char *hash = strstr(p, " #");
        if (hash)
            *hash = '\0';
        if (apply(out, name, line, p, err) < 0) {
            spw_sbatch_free(out);
            return -1;
        }
    }
    if (out->model)
        for (char *m = out->model; *m; m++)
            *m = (char)toupper((unsigned char)*m);
    return 0;
}

long spw_sbatch_total_gpus(const spw_sbatch_t *s)
{
    if (s->gpus)
        return s->gpus;
    return s->gpus_per_node * (s->nodes ? s->nodes : 1);
}

void spw_sbatch_free(spw_sbatch_t *s)
{
    if (!s)
        return;
    free(s->model);
    free(s->name);
    free(s->output);
    free(s->error);
    memset(s, 0, sizeof(*s));
}
