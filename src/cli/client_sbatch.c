/* client_sbatch.c: `spillway submit --sbatch script.sh`: a Slurm batch
 * script made into a job spec, its #SBATCH directives (util/sbatch.h) read
 * as sbatch would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client_private.h"
#include "util/error.h"
#include "util/file.h"
#include "util/sbatch.h"
#include "util/strbuf.h"

/* Appends Slurm's file name pattern pat as a double-quoted shell word:
 * %j is the job's id, %x its name, %% a '%'; the rest as written. */
static void pattern_word(spw_strbuf_t *b, const char *pat, const char *name)
{
    spw_strbuf_add(b, "\"");
    for (const char *p = pat; *p; p++) {
        if (p[0] == '%' && p[1] == 'j') {
            spw_strbuf_add(b, "${SPILLWAY_JOB_ID}");
            p++;
            continue;
        }
        if (p[0] == '%' && (p[1] == 'x' || p[1] == '%')) {
            const char *lit = p[1] == '%' ? "%" : name ? name : "job";
            for (; *lit; lit++) {
                if (strchr("\\\"$`", *lit))
                    spw_strbuf_add(b, "\\");
                spw_strbuf_addn(b, lit, 1);
            }
            p++;
            continue;
        }
        if (strchr("\\\"$`", *p))
            spw_strbuf_add(b, "\\");
        spw_strbuf_addn(b, p, 1);
    }
    spw_strbuf_add(b, "\"");
}

int spw_cli_sbatch_spec(json_t *spec, const char *file, char *const *args, int nargs)
{
    spw_error_t err;
    size_t len;
    char *text = spw_read_file(file, &len, &err);
    if (!text) {
        fprintf(stderr, "spillway submit: %s\n", err.text);
        return SPW_CLI_EREMOTE;
    }
    spw_sbatch_t sb;
    if (spw_sbatch_parse(file, text, len, &sb, &err) < 0) {
        fprintf(stderr, "spillway submit: %s\n", err.text);
        free(text);
        return SPW_CLI_EUNREACH;
    }
    if (sb.ignored[0])
        fprintf(stderr, "spillway submit: %s: #SBATCH %s ignored (spillway's queue and "
                        "pools decide that)\n", file, sb.ignored);
    /* Options on the command line win over the script's, as with sbatch. */
    long total = spw_sbatch_total_gpus(&sb);
    if (!json_object_get(spec, "gpus") && total) {
        char g[160];
        if (sb.model)
            snprintf(g, sizeof(g), "%s:%ld", sb.model, total);
        json_object_set_new(spec, "gpus", sb.model ? json_string(g) : json_integer(total));
    }
    if (!json_object_get(spec, "gpus_per_node") && sb.gpus_per_node && sb.nodes > 1)
        json_object_set_new(spec, "gpus_per_node", json_integer(sb.gpus_per_node));
    else if (!json_object_get(spec, "gpus_per_node") && sb.nodes > 1 && sb.gpus &&
             sb.gpus % sb.nodes == 0)
        json_object_set_new(spec, "gpus_per_node", json_integer(sb.gpus / sb.nodes));
    if (!json_object_get(spec, "name") && sb.name)
        json_object_set_new(spec, "name", json_string(sb.name));
    if (!json_object_get(spec, "max_runtime") && sb.time_s > 0)
        json_object_set_new(spec, "max_runtime", json_real(sb.time_s));

    /* The script runs by its #! interpreter (sh without one) on its text,
     * as sbatch runs its copy; --output/--error redirect it first. */
    json_t *run = json_array();
    const char *name = json_string_value(json_object_get(spec, "name"));
    if (sb.output || sb.error) {
        spw_strbuf_t w = {0};
        spw_strbuf_add(&w, "exec");
        if (sb.output) {
            spw_strbuf_add(&w, " >");
            pattern_word(&w, sb.output, name);
        }
        if (sb.error) {
            spw_strbuf_add(&w, " 2>");
            pattern_word(&w, sb.error, name);
        } else {
            spw_strbuf_add(&w, " 2>&1");
        }
        spw_strbuf_add(&w, "; exec \"$@\"");
        json_array_append_new(run, json_string("/bin/sh"));
        json_array_append_new(run, json_string("-c"));
        json_array_append_new(run, json_string(w.s));
        json_array_append_new(run, json_string("sbatch"));
        free(w.s);
    }
    if (len > 2 && text[0] == '#' && text[1] == '!') {
        size_t e = strcspn(text + 2, "\n");
        char *line = spw_xmalloc(e + 1);
        memcpy(line, text + 2, e);
        line[e] = '\0';
        for (char *tok = strtok(line, " \t\r"); tok; tok = strtok(NULL, " \t\r"))
            json_array_append_new(run, json_string(tok));
        free(line);
    } else {
        json_array_append_new(run, json_string("/bin/sh"));
    }
    json_array_append_new(run, json_string("-c"));
    json_t *body = json_stringn(text, len);
    free(text);
    spw_sbatch_free(&sb);
    if (!body) {
        json_decref(run);
        fprintf(stderr, "spillway submit: %s is not valid UTF-8 text\n", file);
        return SPW_CLI_EUNREACH;
    }
    json_array_append_new(run, body);
    json_array_append_new(run, json_string(file));  /* $0 of a shell script */
    for (int i = 0; i < nargs; i++)
        json_array_append_new(run, json_string(args[i]));
    json_object_set_new(spec, "run", run);
    if (!json_object_get(spec, "gpus")) {
        fprintf(stderr, "spillway submit: %s asks for no GPUs: add #SBATCH --gres=gpu:N (or "
                        "--gpus N)\n", file);
        return SPW_CLI_EUNREACH;
    }
    return SPW_CLI_OK;
}
