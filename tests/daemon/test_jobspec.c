/* test_jobspec.c: daemon/jobspec parsing of YAML and JSON job specs, the
 * validation messages (with positions), durations, RFC 3339 times, and the
 * canonical JSON round trip. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "core/spot.h"
#include "daemon/jobspec.h"
#include "tap.h"

static int parse(const char *name, const char *text, spw_jobspec_t *s,
                 spw_error_t *err)
{
    return spw_jobspec_parse(name, text, strlen(text), s, err);
}

/* Parses text expecting failure; returns the message (static). */
static const char *fail(const char *name, const char *text)
{
    static spw_error_t err;
    spw_jobspec_t s;

    strcpy(err.text, "(no error)");
    if (parse(name, text, &s, &err) == 0) {
        spw_jobspec_free(&s);
        return "(parsed)";
    }
    return err.text;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Checks that to_json(s) parses back to a spec equal to s. */
static void round_trip(const spw_jobspec_t *s, const char *what)
{
    spw_jobspec_t back;
    spw_error_t err;
    char *json = spw_jobspec_to_json(s);

    if (!ok(json != NULL, "%s: to_json", what))
        return;
    if (!ok(parse("canon", json, &back, &err) == 0, "%s: canonical JSON "
            "parses", what)) {
        diag("%s\n%s", json, err.text);
    } else {
        if (!ok(spw_jobspec_equal(s, &back), "%s: round trip is equal",
                what))
            diag("%s", json);
        spw_jobspec_free(&back);
    }
    free(json);
}

static const char full_yaml[] =
    "name: train resnet\n"
    "team: vision\n"
    "run: [python3, train.py, --epochs, \"10\"]\n"
    "gpus: A100|H100:2\n"
    "est_runtime: 1h30m\n"
    "max_runtime: 2h\n"
    "priority: -3\n"
    "deadline: 2026-11-21T18:00:00Z\n"
    "env:\n"
    "  ZED: last\n"
    "  BATCH: 64\n"
    "workdir: /data/runs\n"
    "retries: 2\n";

static const char full_json[] =
    "{\n"
    "  \"name\": \"train resnet\", \"team\": \"vision\",\n"
    "  \"run\": [\"python3\", \"train.py\", \"--epochs\", \"10\"],\n"
    "  \"gpus\": \"A100|H100:2\", \"est_runtime\": \"1h30m\",\n"
    "  \"max_runtime\": 7200, \"priority\": -3,\n"
    "  \"deadline\": 1795284000,\n"
    "  \"env\": {\"BATCH\": \"64\", \"ZED\": \"last\"},\n"
    "  \"workdir\": \"/data/runs\", \"retries\": 2\n"
    "}\n";

static void test_full(void)
{
    spw_jobspec_t y, j;
    spw_error_t err;
    char *json;

    if (!ok(parse("job.yaml", full_yaml, &y, &err) == 0, "full YAML spec")) {
        diag("%s", err.text);
        return;
    }
    is_str(y.name, "train resnet", "name");
    is_str(y.team, "vision", "team");
    is(y.run_kind, SPW_RUN_ARGV, "run is argv");
    is((long)y.argc, 4, "argc");
    is_str(y.argv[0], "python3", "argv[0]");
    is_str(y.argv[3], "10", "argv[3]");
    ok(y.argv[4] == NULL, "argv is NULL-terminated");
    ok(y.script == NULL, "no script");
    is(y.gpus, 2, "gpus");
    is((long)y.n_gpu_models, 2, "two models");
    is_str(y.gpu_models[0], "A100", "model 0");
    is_str(y.gpu_models[1], "H100", "model 1");
    is_double(y.est_runtime_s, 5400, 0, "est_runtime 1h30m");
    is_double(y.max_runtime_s, 7200, 0, "max_runtime 2h");
    is(y.priority, -3, "priority");
    is_double(y.deadline_s, 1795284000, 0, "deadline");
    is((long)y.nenv, 2, "two env vars");
    is_str(y.env[0].key, "BATCH", "env sorted by key");
    is_str(y.env[0].value, "64", "env value");
    is_str(y.env[1].key, "ZED", "env[1]");
    is_str(y.workdir, "/data/runs", "workdir");
    is(y.retries, 2, "retries");

    if (ok(parse("job.json", full_json, &j, &err) == 0, "full JSON spec")) {
        ok(spw_jobspec_equal(&y, &j), "JSON and YAML give the same spec");
        spw_jobspec_free(&j);
    } else {
        diag("%s", err.text);
    }

    json = spw_jobspec_to_json(&y);
    is_str(json, "{\"deadline\":1795284000,\"env\":{\"BATCH\":\"64\","
           "\"ZED\":\"last\"},\"est_runtime\":5400,\"gpus\":\"A100|H100:2\","
           "\"max_runtime\":7200,\"name\":\"train resnet\",\"priority\":-3,"
           "\"retries\":2,\"run\":[\"python3\",\"train.py\",\"--epochs\","
           "\"10\"],\"team\":\"vision\",\"workdir\":\"/data/runs\"}",
           "canonical JSON");
    free(json);
    round_trip(&y, "full spec");
    spw_jobspec_free(&y);
    spw_jobspec_free(&y);
    ok(y.name == NULL && y.argv == NULL, "free zeroes and is repeatable");
    spw_jobspec_free(NULL);
}

static void test_minimal_and_script(void)
{
    spw_jobspec_t s;
    spw_error_t err;
    char *json;

    if (ok(parse("m.yaml", "run: [./a.out]\ngpus: 1\n", &s, &err) == 0,
           "minimal spec")) {
        ok(s.name == NULL && s.team == NULL && s.workdir == NULL,
           "unset strings are NULL");
        ok(isnan(s.est_runtime_s) && isnan(s.max_runtime_s) &&
           isnan(s.deadline_s), "unset times are NAN");
        is(s.priority, 0, "priority defaults to 0");
        is(s.retries, 0, "retries default to 0");
        ok(s.gpu_models == NULL && s.n_gpu_models == 0, "any GPU model");
        json = spw_jobspec_to_json(&s);
        is_str(json, "{\"gpus\":1,\"run\":[\"./a.out\"]}",
               "minimal canonical JSON");
        free(json);
        round_trip(&s, "minimal");
        spw_jobspec_free(&s);
    } else {
        diag("%s", err.text);
    }

    if (ok(parse("s.yaml", "run: |\n  set -e\n  echo \"hi $X\" > out\n"
                 "gpus: \"H100:8\"\nest_runtime: 0.25\n"
                 "max_runtime: 1.5h\n"
                 "deadline: 2024-02-29T00:00:00.5+00:00\n", &s, &err) == 0,
           "script spec")) {
        is(s.run_kind, SPW_RUN_SCRIPT, "run is a script");
        is_str(s.script, "set -e\necho \"hi $X\" > out\n", "script text");
        ok(s.argv == NULL && s.argc == 0, "no argv");
        is(s.gpus, 8, "gpus 8");
        is_str(s.gpu_models[0], "H100", "model");
        is_double(s.est_runtime_s, 0.25, 0, "fractional est_runtime");
        is_double(s.max_runtime_s, 5400, 0, "1.5h");
        is_double(s.deadline_s, 1709164800.5, 0, "fractional deadline");
        round_trip(&s, "script");
        spw_jobspec_free(&s);
    } else {
        diag("%s", err.text);
    }

    /* JSON scalars are read by their text, like YAML's. */
    if (ok(parse("n.json", "  {\"run\": \"true\", \"gpus\": \"3\", "
                 "\"est_runtime\": 0.1, \"priority\": 7, \"name\": 12}",
                 &s, &err) == 0, "JSON with leading space and quoted "
           "count")) {
        is(s.gpus, 3, "gpus from a string");
        is_str(s.name, "12", "a number as a name");
        is_double(s.est_runtime_s, 0.1, 0, "0.1 exactly");
        is_str(s.script, "true", "script from JSON string");
        round_trip(&s, "JSON scalars");
        spw_jobspec_free(&s);
    } else {
        diag("%s", err.text);
    }

    if (ok(parse("u.json", "{\"run\": [\"echo\", \"caf\\u00e9 \\\"q\\\"\","
                 " \"\"], \"gpus\": 1, \"env\": {\"A\": \"\\n\"}}", &s,
                 &err) == 0, "JSON escapes")) {
        is_str(s.argv[1], "caf\xc3\xa9 \"q\"", "unicode and quote escapes");
        is_str(s.argv[2], "", "empty argument kept");
        is_str(s.env[0].value, "\n", "newline in env value");
        round_trip(&s, "escapes");
        spw_jobspec_free(&s);
    } else {
        diag("%s", err.text);
    }
}

static void test_errors(void)
{
    static const struct {
        const char *name;   /* document name */
        const char *text;   /* input */
        const char *want;   /* expected message, or its prefix with '*' */
    } cases[] = {
        {"t.yaml", "gpus: 0\nrun: [x]\n",
         "t.yaml:1:7: field 'gpus': must be at least 1"},
        {"t.json", "{\"run\": [\"x\"],\n \"gpus\": 0}",
         "t.json:2:10: field 'gpus': must be at least 1"},
        {"t.json", "{\"name\": \"\xc3\xa9\xc3\xa9\xc3\xa9\", \"gpus\": 0, "
         "\"run\": [\"x\"]}",
         "t.json:1:25: field 'gpus': must be at least 1"},
        {"t.json", "{\"name\": \"a\\\"b\", \"gpus\": -2, \"run\": [\"x\"]}",
         "t.json:1:26: field 'gpus': must be at least 1"},
        {"t.yaml", "run: [x]\ngpus: 1\npreemptible: true\n",
         "t.yaml:3:1: unknown field 'preemptible' (expected one of: name, "
         "team, class, labels, run, gpus, est_runtime, max_runtime, "
         "priority, deadline, data, residency, env, workdir, retries, spot, "
         "spot_policy, checkpoint_interval, gpus_per_node, image)"},
        {"t.yaml", "run: [x]\ngpus: 1\nspot: true\n",
         "t.yaml:3:7: field 'spot': expected auto, always or never, got "
         "'true'"},
        {"t.yaml", "run: [x]\ngpus: 1\nspot: [always]\n",
         "t.yaml:3:7: field 'spot': expected auto, always or never, got a "
         "list"},
        {"t.yaml", "run: [x]\ngpus: 1\nspot_policy: lazy\n",
         "t.yaml:3:14: field 'spot_policy': expected ondemand, greedy or "
         "uniform-progress, got 'lazy'"},
        {"t.yaml", "run: [x]\ngpus: 1\ncheckpoint_interval: -5\n",
         "t.yaml:3:22: field 'checkpoint_interval': must be 0 or more "
         "seconds"},
        {"t.yaml", "run: [x]\ngpus: 1\ncheckpoint_interval: often\n",
         "t.yaml:3:22: field 'checkpoint_interval': expected a duration "
         "like 10m or 1h, 0 (it never checkpoints) or continuous, got "
         "'often'"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1,\n \"checkpoint_interval\": "
         "\"20000d\"}",
         "t.json:2:25: field 'checkpoint_interval': must be at most ten "
         "years"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1,\n  \"gpu\": 2}",
         "t.json:2:3: unknown field 'gpu' (expected one of: *"},
        {"t.yaml", "gpus: 1\n", "t.yaml:1:1: field 'run' is required (a "
         "list of strings, or a shell script)"},
        {"t.yaml", "run: [x]\n", "t.yaml:1:1: field 'gpus' is required *"},
        {"t.yaml", "run: [x]\ngpus: 1\ngpus: 2\n",
         "t.yaml:3:1: field 'gpus' is given twice (first at line 2)"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1, \"gpus\": 2}",
         "t.json:1:32: invalid JSON: duplicate object key*"},
        {"t.json", "{\"run\": [\"x\"],\n \"gpus\": }",
         "t.json:2:10: invalid JSON: *"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1} trailing",
         "t.json:1:*: invalid JSON: end of file expected*"},
        {"t.yaml", "run: [x\ngpus: 1\n", "t.yaml:*"},
        {"t.yaml", "", "t.yaml: the job spec is empty"},
        {"t.yaml", "   \n# only a comment\n", "t.yaml: the job spec is empty"},
        {"t.yaml", "just a string\n", "t.yaml:1:1: a job spec must be a "
         "mapping of fields, got a scalar"},
        {"t.yaml", "- run\n", "t.yaml:1:1: a job spec must be a mapping of "
         "fields, got a list"},
        {"t.yaml", "run: []\ngpus: 1\n",
         "t.yaml:1:6: field 'run': argv must not be empty"},
        {"t.yaml", "run: \"  \"\ngpus: 1\n",
         "t.yaml:1:6: field 'run': the script must not be empty"},
        {"t.yaml", "run:\ngpus: 1\n",
         "t.yaml:1:5: field 'run': the script must not be empty"},
        {"t.yaml", "run: {a: b}\ngpus: 1\n", "t.yaml:1:6: field 'run': "
         "expected a list of strings (argv) or a string (a shell script), "
         "got a mapping"},
        {"t.yaml", "run: [x, [y]]\ngpus: 1\n",
         "t.yaml:1:10: field 'run': argv[1]: expected a string, got a list"},
        {"t.yaml", "run: ['', y]\ngpus: 1\n",
         "t.yaml:1:7: field 'run': argv[0] (the program) must not be empty"},
        {"t.yaml", "run: [x]\ngpus: A100:0\n",
         "t.yaml:2:7: field 'gpus': must be at least 1"},
        {"t.yaml", "run: [x]\ngpus: A100\n", "t.yaml:2:7: field 'gpus': "
         "expected a GPU count (2) or MODEL:COUNT (A100:2, A100|H100:2), got "
         "'A100'"},
        {"t.yaml", "run: [x]\ngpus: 2.5\n", "t.yaml:2:7: field 'gpus': "
         "expected a GPU count*"},
        {"t.yaml", "run: [x]\ngpus: 2000000\n",
         "t.yaml:2:7: field 'gpus': must be at most 1000000"},
        {"t.yaml", "run: [x]\ngpus: \"A100|:2\"\n", "t.yaml:2:7: field "
         "'gpus': GPU model 2 of 'A100|:2' must be 1 to 32 letters, digits, "
         "'_', '.' or '-'"},
        {"t.yaml", "run: [x]\ngpus: \":2\"\n",
         "t.yaml:2:7: field 'gpus': GPU model 1 of ':2' must be *"},
        {"t.yaml", "run: [x]\ngpus: [1]\n", "t.yaml:2:7: field 'gpus': "
         "expected a GPU count (2) or MODEL:COUNT (A100:2, A100|H100:2), got "
         "a list"},
        {"t.yaml", "run: [x]\ngpus: 1\nest_runtime: 0\n",
         "t.yaml:3:14: field 'est_runtime': must be more than 0 seconds"},
        {"t.yaml", "run: [x]\ngpus: 1\nmax_runtime: -5\n",
         "t.yaml:3:14: field 'max_runtime': must be more than 0 seconds"},
        {"t.yaml", "run: [x]\ngpus: 1\nest_runtime: 30m1h\n",
         "t.yaml:3:14: field 'est_runtime': expected seconds or a duration "
         "like 90s, 30m, 2h, 1h30m, got '30m1h'"},
        {"t.yaml", "run: [x]\ngpus: 1\nest_runtime: 20000d\n",
         "t.yaml:3:14: field 'est_runtime': must be at most ten years"},
        {"t.yaml", "run: [x]\ngpus: 1\nest_runtime: 2h\nmax_runtime: 1h\n",
         "t.yaml:3:14: field 'est_runtime': 7200 s is more than max_runtime "
         "(3600 s)"},
        {"t.yaml", "run: [x]\ngpus: 1\nretries: 101\n",
         "t.yaml:3:10: field 'retries': must be between 0 and 100"},
        {"t.yaml", "run: [x]\ngpus: 1\nretries: -1\n",
         "t.yaml:3:10: field 'retries': must be between 0 and 100"},
        {"t.yaml", "run: [x]\ngpus: 1\nretries: two\n",
         "t.yaml:3:10: field 'retries': expected an integer, got 'two'"},
        {"t.yaml", "run: [x]\ngpus: 2\ngpus_per_node: 0\n",
         "t.yaml:3:16: field 'gpus_per_node': must be between 1 and 1024"},
        {"t.yaml", "run: [x]\ngpus: 1\npriority: 2147483648\n",
         "t.yaml:3:11: field 'priority': must be between -2147483648 and "
         "2147483647"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv:\n  1BAD: x\n",
         "t.yaml:4:3: field 'env': '1BAD' is not a valid variable name "
         "(letters, digits and '_', not starting with a digit)"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1, \"env\": {\"A-B\": \"1\"}}",
         "t.json:1:35: field 'env': 'A-B' is not a valid variable name *"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv: {CUDA_VISIBLE_DEVICES: '0'}\n",
         "t.yaml:3:7: field 'env': CUDA_VISIBLE_DEVICES is reserved: set by "
         "spillway to the GPUs it assigns; remove it from env"},
        /* Names spillway, Slurm or the ssh launch script set themselves: a
         * job naming them steered the placement or the root part of the
         * launch (issue 20). */
        {"t.yaml", "run: [x]\ngpus: 1\nenv: {SPILLWAY_SLURM_NODES: n2}\n",
         "t.yaml:3:7: field 'env': SPILLWAY_SLURM_NODES is reserved: spillway "
         "sets its SPILLWAY_ variables itself, and they steer the placement; "
         "remove it from env"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv: {OK: 1, D: /root}\n",
         "t.yaml:3:14: field 'env': D is reserved: a variable of the ssh "
         "backend's launch script; remove it from env"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1, \"env\": {\"SLURM_JOB_ID\": \"1\"}}",
         "t.json:1:35: field 'env': SLURM_JOB_ID is reserved: set by Slurm *"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv: {MASTER_PORT: '1'}\n",
         "t.yaml:3:7: field 'env': MASTER_PORT is reserved: set by the "
         "backend for each rank of a job; remove it from env"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv: {SPW_JOB_UID: '0'}\n",
         "t.yaml:3:7: field 'env': SPW_JOB_UID is reserved: *"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv: {X: [1]}\n",
         "t.yaml:3:10: field 'env': X: expected a string, got a list"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv: {X: 1, X: 2}\n",
         "t.yaml:3:6: field 'env': variable 'X' is given twice"},
        {"t.yaml", "run: [x]\ngpus: 1\nenv: [A]\n",
         "t.yaml:3:6: field 'env': expected a mapping of names to strings, "
         "got a list"},
        {"t.yaml", "run: [x]\ngpus: 1\nimage: ''\n",
         "t.yaml:3:8: field 'image': is empty; give a root filesystem "
         "directory, an OCI archive or a registry reference, or leave the "
         "field out"},
        {"t.yaml", "run: [x]\ngpus: 1\nimage: ./rootfs\n",
         "t.yaml:3:8: field 'image': './rootfs' is neither an absolute "
         "path nor a registry reference (a relative path must be made "
         "absolute)"},
        {"t.yaml", "run: [x]\ngpus: 1\nimage: --privileged\n",
         "t.yaml:3:8: field 'image': '--privileged' is neither an absolute "
         "path nor a registry reference *"},
        {"t.yaml", "run: [x]\ngpus: 1\nimage: 'ubuntu latest'\n",
         "t.yaml:3:8: field 'image': 'ubuntu latest' is neither an absolute "
         "path nor a registry reference (letters, digits and ._-/:@+)"},
        {"t.yaml", "run: [x]\ngpus: 1\nimage: oci-archive:img.tar\n",
         "t.yaml:3:8: field 'image': oci-archive: takes an absolute path, got "
         "'img.tar'"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1, \"image\": [\"a\"]}",
         "t.json:1:36: field 'image': expected a string, got a list"},
        {"t.yaml", "run: [x]\ngpus: 1\nworkdir: data\n",
         "t.yaml:3:10: field 'workdir': must be an absolute path, got "
         "'data'"},
        {"t.yaml", "run: [x]\ngpus: 1\nteam: a b\n",
         "t.yaml:3:7: field 'team': must be 1 to 64 letters, digits, '_', "
         "'.' or '-', got 'a b'"},
        {"t.yaml", "run: [x]\ngpus: 1\nname: \"a\\tb\"\n",
         "t.yaml:3:7: field 'name': must not contain control characters"},
        {"t.yaml", "run: [x]\ngpus: 1\ndeadline: 2026-13-01T00:00:00Z\n",
         "t.yaml:3:11: field 'deadline': expected unix seconds or an RFC "
         "3339 time like 2026-11-21T18:00:00Z, got '2026-13-01T00:00:00Z'"},
        {"t.yaml", "run: [x]\ngpus: 1\ndeadline: -1\n",
         "t.yaml:3:11: field 'deadline': must be after 1970 and before the "
         "year 10000"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1, \"deadline\": null}",
         "t.json:1:39: field 'deadline': expected unix seconds or an RFC "
         "3339 time like 2026-11-21T18:00:00Z, got 'null'"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1, \"name\": \"\\u0000\"}",
         "t.json:1:*: invalid JSON: *"},
        {"t.json", "{\"run\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"x\"]]]]]]]"
         "]]]]]]]]]]]]]]]]]]]]]]]]]]]], \"gpus\": 1}",
         "t.json:1:41: JSON nested more than 32 deep"},
        {"t.yaml", "run: [x]\ngpus: 1\nclass: a/b\n",
         "t.yaml:3:8: field 'class': must be 1 to 64 letters, digits, '_', "
         "'.' or '-', got 'a/b'"},
        {"t.yaml", "run: [x]\ngpus: 1\nclass: [a]\n",
         "t.yaml:3:8: field 'class': expected a string, got a list"},
        {"t.yaml", "run: [x]\ngpus: 1\ndata: \"\"\n",
         "t.yaml:3:7: field 'data': must be 1 to 64 letters*"},
        {"t.yaml", "run: [x]\ngpus: 1\nresidency: e u\n",
         "t.yaml:3:12: field 'residency': must be 1 to 64 letters*"},
        {"t.yaml", "run: [x]\ngpus: 1\nlabels: [env=prod]\n",
         "t.yaml:3:9: field 'labels': expected a mapping of keys to values "
         "like {env: prod}, got a list"},
        {"t.yaml", "run: [x]\ngpus: 1\nlabels:\n  env: prod\n  a=b: c\n",
         "t.yaml:5:3: field 'labels': key 'a=b': must be 1 to 128 "
         "characters without '=' or control characters"},
        {"t.yaml", "run: [x]\ngpus: 1\nlabels: {env: \"\"}\n",
         "t.yaml:3:15: field 'labels': env: the value must be 1 to 128 "
         "characters without '=' or control characters, got ''"},
        {"t.yaml", "run: [x]\ngpus: 1\nlabels: {env: a=b}\n",
         "t.yaml:3:15: field 'labels': env: the value must be *"},
        {"t.yaml", "run: [x]\ngpus: 1\nlabels: {env: {a: b}}\n",
         "t.yaml:3:15: field 'labels': env: expected a string, got a "
         "mapping"},
        {"t.yaml", "run: [x]\ngpus: 1\nlabels: {a: 1, a: 2}\n",
         "t.yaml:3:9: field 'labels': label 'a' is given twice"},
        {"t.json", "{\"run\": [\"x\"], \"gpus\": 1,\n \"labels\": "
         "{\"\": \"x\"}}",
         "t.json:2:13: field 'labels': key '': must be 1 to 128 *"},
        {NULL, "gpus: 0\nrun: [x]\n",
         "job spec:1:7: field 'gpus': must be at least 1"},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = fail(cases[i].name, cases[i].text);
        const char *want = cases[i].want;
        const char *star = strchr(want, '*');
        int good;
        if (star) {
            /* "a*b*": the text up to each '*' must appear in order. */
            char part[256];
            const char *p = want, *at = got;
            good = 1;
            while (good && *p) {
                const char *q = strchr(p, '*');
                size_t l = q ? (size_t)(q - p) : strlen(p);
                memcpy(part, p, l);
                part[l] = '\0';
                if (p == want)
                    good = starts_with(at, part), at += l;
                else if (!(at = strstr(at, part)))
                    good = 0;
                else
                    at += l;
                p += l + (q ? 1 : 0);
            }
            if (!ok(good, "error %zu: %s", i, want))
                diag("got: %s", got);
        } else {
            is_str(got, want, "error %zu", i);
        }
    }
}

static void test_spot_fields(void)
{
    static const char yaml[] =
        "run: [./train]\n"
        "gpus: 1\n"
        "spot: always\n"
        "spot_policy: uniform-progress\n"
        "checkpoint_interval: 10m\n";
    static const char json[] =
        "{\"run\": [\"./train\"], \"gpus\": 1, \"spot\": \"always\",\n"
        " \"spot_policy\": \"uniform-progress\", \"checkpoint_interval\": 600}";
    spw_jobspec_t y, j, s;
    spw_error_t err;
    char *text;

    if (!ok(parse("s.yaml", yaml, &y, &err) == 0, "spot fields in YAML")) {
        diag("%s", err.text);
        return;
    }
    is(y.spot_mode, SPW_SPOTMODE_ALWAYS, "spot: always");
    is(y.spot_policy, SPW_SPOT_POLICY_UNIFORM_PROGRESS + 1, "spot_policy, + 1");
    is_double(y.checkpoint_interval_s, 600, 0, "checkpoint_interval 10m");
    if (ok(parse("s.json", json, &j, &err) == 0, "the same in JSON")) {
        ok(spw_jobspec_equal(&y, &j), "JSON and YAML give the same spec");
        spw_jobspec_free(&j);
    }
    text = spw_jobspec_to_json(&y);
    is_str(text, "{\"checkpoint_interval\":600,\"gpus\":1,\"run\":[\"./train\"],"
           "\"spot\":\"always\",\"spot_policy\":\"uniform-progress\"}",
           "canonical JSON with the spot fields");
    free(text);
    round_trip(&y, "spot fields");
    spw_jobspec_free(&y);

    if (ok(parse("c.yaml", "run: [x]\ngpus: 1\ncheckpoint_interval: continuous\n"
                 "spot: never\nspot_policy: greedy\n", &s, &err) == 0, "continuous")) {
        is_double(s.checkpoint_interval_s, SPW_CKPT_CONTINUOUS, 0, "continuous is -1");
        is(s.spot_mode, SPW_SPOTMODE_NEVER, "spot: never");
        is(s.spot_policy, SPW_SPOT_POLICY_GREEDY + 1, "greedy");
        text = spw_jobspec_to_json(&s);
        ok(strstr(text, "\"checkpoint_interval\":\"continuous\"") != NULL,
           "continuous is written as a word");
        free(text);
        round_trip(&s, "continuous");
        spw_jobspec_free(&s);
    }
    if (ok(parse("z.yaml", "run: [x]\ngpus: 1\ncheckpoint_interval: 0\nspot: auto\n", &s,
                 &err) == 0, "interval 0, spot auto")) {
        is_double(s.checkpoint_interval_s, 0, 0, "0 = never checkpoints");
        is(s.spot_mode, SPW_SPOTMODE_AUTO, "auto");
        text = spw_jobspec_to_json(&s);
        is_str(text, "{\"checkpoint_interval\":0,\"gpus\":1,\"run\":[\"x\"]}",
               "0 is kept, auto (the default) is left out");
        free(text);
        round_trip(&s, "interval 0");
        spw_jobspec_free(&s);
    }
    if (ok(parse("n.yaml", "run: [x]\ngpus: 1\n", &s, &err) == 0, "no spot fields")) {
        ok(isnan(s.checkpoint_interval_s) && s.spot_mode == 0 && s.spot_policy == 0,
           "unset: NAN interval, auto, the config's policy");
        spw_jobspec_free(&s);
    }
}

static void test_governance(void)
{
    static const char yaml[] =
        "run: [python3, serve.py]\n"
        "gpus: A100:8\n"
        "team: ml\n"
        "class: inference\n"
        "labels:\n"
        "  tier: gold\n"
        "  env: prod\n"
        "data: imagenet\n"
        "residency: eu\n";
    static const char json[] =
        "{\"run\": [\"python3\", \"serve.py\"], \"gpus\": \"A100:8\",\n"
        " \"team\": \"ml\", \"class\": \"inference\", \"residency\": \"eu\",\n"
        " \"labels\": {\"env\": \"prod\", \"tier\": \"gold\"},"
        " \"data\": \"imagenet\"}";
    spw_jobspec_t y, j;
    spw_error_t err;
    char *text;

    if (!ok(parse("g.yaml", yaml, &y, &err) == 0, "governance fields")) {
        diag("%s", err.text);
        return;
    }
    is_str(y.jclass, "inference", "class");
    is((long)y.nlabels, 2, "two labels");
    is_str(y.labels[0].key, "env", "labels sorted by key");
    is_str(y.labels[0].value, "prod", "label value");
    is_str(y.labels[1].key, "tier", "labels[1]");
    is_str(y.data, "imagenet", "data");
    is_str(y.residency, "eu", "residency");
    text = spw_jobspec_to_json(&y);
    is_str(text, "{\"class\":\"inference\",\"data\":\"imagenet\","
           "\"gpus\":\"A100:8\",\"labels\":{\"env\":\"prod\","
           "\"tier\":\"gold\"},\"residency\":\"eu\",\"run\":[\"python3\","
           "\"serve.py\"],\"team\":\"ml\"}", "governance canonical JSON");
    free(text);
    round_trip(&y, "governance");
    if (ok(parse("g.json", json, &j, &err) == 0, "governance fields in "
           "JSON")) {
        ok(spw_jobspec_equal(&y, &j), "JSON and YAML give the same "
           "governance fields");
        free(j.residency);
        j.residency = NULL;
        ok(!spw_jobspec_equal(&y, &j), "a missing residency differs");
        spw_jobspec_free(&j);
    } else {
        diag("%s", err.text);
    }
    if (ok(parse("g2.yaml", "run: [x]\ngpus: 1\nlabels: {}\n", &j,
                 &err) == 0, "empty labels")) {
        ok(j.labels == NULL && j.nlabels == 0 && j.jclass == NULL &&
           j.data == NULL && j.residency == NULL,
           "no governance fields: all NULL");
        spw_jobspec_free(&j);
    }
    spw_jobspec_free(&y);
    ok(y.labels == NULL && y.jclass == NULL, "free clears the governance "
       "fields");
}

static void test_label_limit(void)
{
    char buf[4096];
    size_t len, i;

    len = (size_t)sprintf(buf, "run: [x]\ngpus: 1\nlabels:\n");
    for (i = 0; i < 65; i++)
        len += (size_t)sprintf(buf + len, "  k%zu: v\n", i);
    is_str(fail("l.yaml", buf), "l.yaml:4:3: field 'labels': 65 labels, "
           "more than the limit of 64", "labels cap");
}

static void test_limits(void)
{
    size_t n = 4097, i, len;
    char *big;
    spw_jobspec_t s;
    spw_error_t err;

    /* argv of 4097 entries: "run: [a,a,...]". */
    big = malloc(32 + 2 * n);
    len = (size_t)sprintf(big, "gpus: 1\nrun: [");
    for (i = 0; i < n; i++)
        len += (size_t)sprintf(big + len, "%sa", i ? "," : "");
    strcpy(big + len, "]\n");
    is_str(fail("big.yaml", big), "big.yaml:2:6: field 'run': argv has "
           "4097 entries, more than the limit of 4096", "argv cap");
    free(big);

    big = malloc(SPW_JOBSPEC_MAX_BYTES + 2);
    memset(big, ' ', SPW_JOBSPEC_MAX_BYTES + 1);
    memcpy(big, "{}", 2);
    is(spw_jobspec_parse("huge", big, SPW_JOBSPEC_MAX_BYTES + 1, &s, &err),
       -1, "a body over the size cap fails");
    is_str(err.text, "huge: the job spec is 1048577 bytes, more than the "
           "limit of 1048576", "size cap message");
    ok(s.name == NULL && s.argv == NULL, "output zeroed on failure");
    free(big);

    /* Not NUL-terminated: only len bytes are read. */
    is(spw_jobspec_parse("n", "run: [x]\ngpus: 1\nXXXX", 17, &s, &err), 0,
       "data need not be NUL-terminated");
    spw_jobspec_free(&s);
}

static void test_durations(void)
{
    spw_jobspec_t js;
    spw_error_t jerr;
    if (ok(spw_jobspec_parse("t.yaml", "run: [x]\ngpus: 1\nmax_runtime: \"1-02:00:00\"\n"
                             "est_runtime: 01:30:00\n", 65, &js, &jerr) == 0,
           "a spec's max_runtime and est_runtime in Slurm's forms")) {
        is_double(js.max_runtime_s, 93600, 0, "max_runtime 1-02:00:00 = 26 h");
        is_double(js.est_runtime_s, 5400, 0, "est_runtime 01:30:00 = 1.5 h");
        spw_jobspec_free(&js);
    }

    static const struct { const char *s; double want; } good[] = {
        {"90", 90}, {"1.5", 1.5}, {"90s", 90}, {"30m", 1800}, {"2h", 7200},
        {"1h30m", 5400}, {"1d", 86400}, {"1d2h3m4s", 93784}, {"1.5h", 5400},
        {".5m", 30}, {"1e3", 1000}, {" 60 ", 60},
        {"01:30:00", 5400}, {"90:00", 5400}, {"36:00:00", 129600}, {"2-12", 216000},
        {"1-02:03", 93780}, {"1-02:03:04", 93784}, {"0:05", 5},
    };
    static const char *const bad[] = {
        "", "s", "1x", "30m1h", "1h1h", "1h 30m", "h1", "1.2.3s", "-1h",
        "nan", "inf", "1h30", ".s", "1:2:3:4", "1:60", "1-24:00:00", "-1:00",
        "1-", ":30", "1:30:", "1::30", "1-2-3", "1.5:00", "1-02:03:04:05", "99999999999999999999999999999999999999999"
        "99999999999999999999999999999999999999999999999999999999999999999999"
        "99999999999999999999999999999999999999999999999999999999999999999999"
        "99999999999999999999999999999999999999999999999999999999999999999999"
        "99999999999999999999999999999999999999999999999999999999999999999999"
        "9d",
    };
    size_t i;
    double v;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        v = -1;
        ok(spw_parse_duration(good[i].s, &v) == 0 && v == good[i].want,
           "duration '%s' = %g", good[i].s, good[i].want);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        is(spw_parse_duration(bad[i], &v), -1, "duration '%.20s' rejected",
           bad[i]);
}

static void test_times(void)
{
    static const struct { const char *s; double want; } good[] = {
        {"2026-11-21T18:00:00Z", 1795284000},
        {"2026-11-21t18:00:00z", 1795284000},
        {"2026-11-21T18:00:00+01:30", 1795278600},
        {"2026-11-21T16:30:00-00:00", 1795278600},
        {"2024-02-29T00:00:00Z", 1709164800},
        {"1970-01-01T00:00:00.25Z", 0.25},
        {"2000-03-01T00:00:00Z", 951868800},
    };
    static const char *const bad[] = {
        "2023-02-29T00:00:00Z", "2026-11-21 18:00:00Z", "2026-11-21T18:00:00",
        "2026-11-21T24:00:00Z", "2026-00-10T00:00:00Z", "1969-12-31T23:59:59Z",
        "2026-11-21T18:00:00+1:00", "2026-11-21T18:00:00Zx", "26-11-21T18:00:00Z",
        "2026-11-21T18:00:00.Z", "1970-01-01T00:00:00+01:00",
    };
    size_t i;
    double v;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        v = -1;
        ok(spw_parse_rfc3339(good[i].s, &v) == 0 && v == good[i].want,
           "time '%s' = %.2f", good[i].s, good[i].want);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        is(spw_parse_rfc3339(bad[i], &v), -1, "time '%s' rejected", bad[i]);
}

static void test_image(void)
{
    static const char *const good[] = {
        "/srv/images/pytorch", "/srv/images/pytorch.tar", "oci-archive:/srv/img.tar",
        "docker.io/library/ubuntu:22.04", "ubuntu", "nvcr.io/nvidia/pytorch:24.01-py3",
        "ghcr.io/o/i@sha256:0123abcd",
    };
    spw_jobspec_t s, back;
    spw_error_t err;
    char doc[256], *text;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        snprintf(doc, sizeof(doc), "run: [python3, t.py]\ngpus: 1\nimage: '%s'\n", good[i]);
        if (!ok(parse("i.yaml", doc, &s, &err) == 0, "image '%s' accepted", good[i])) {
            diag("%s", err.text);
            continue;
        }
        is_str(s.image, good[i], "image kept as written");
        text = spw_jobspec_to_json(&s);
        ok(text && strstr(text, "\"image\":") != NULL, "image in the canonical JSON: %s", text);
        if (ok(parse("i.json", text, &back, &err) == 0, "canonical JSON parses back")) {
            ok(spw_jobspec_equal(&s, &back), "with the same image");
            free(back.image);
            back.image = NULL;
            ok(!spw_jobspec_equal(&s, &back), "a missing image differs");
            spw_jobspec_free(&back);
        }
        free(text);
        spw_jobspec_free(&s);
    }
    if (ok(parse("n.yaml", "run: [x]\ngpus: 1\n", &s, &err) == 0, "no image")) {
        ok(s.image == NULL, "image NULL when not given");
        text = spw_jobspec_to_json(&s);
        ok(text && !strstr(text, "image"), "and left out of the JSON");
        free(text);
        spw_jobspec_free(&s);
    }
}

/* PATH, LD_* and friends are the job's own business (they reach only the
 * process that runs as the job's user); names spillway sets are not. */
static void test_env_reserved(void)
{
    static const char *const mine[] = {"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV",
                                       "PYTHONPATH", "HOME", "SPILLWAY_IMAGE_CACHE", "DD",
                                       "SPILLWAY"};
    static const char *const theirs[] = {"SPILLWAY_PLACEMENT", "SPILLWAY_SSH_HOSTS",
                                         "SPILLWAY_CHECKPOINT_DIR", "SPILLWAY_JOB_ID", "T",
                                         "J", "R", "B", "UI", "SLURM_NODELIST", "RANK"};
    for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
        ok(spw_jobspec_env_reserved(mine[i]) == NULL, "env %s is the job's own", mine[i]);
    for (size_t i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++)
        ok(spw_jobspec_env_reserved(theirs[i]) != NULL, "env %s is reserved", theirs[i]);
}

int main(void)
{
    test_full();
    test_minimal_and_script();
    test_errors();
    test_governance();
    test_spot_fields();
    test_label_limit();
    test_limits();
    test_durations();
    test_times();
    test_image();
    test_env_reserved();
    return done_testing();
}
