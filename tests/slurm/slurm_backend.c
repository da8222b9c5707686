/* slurm_backend.c: the Slurm backend against a real Slurm cluster (started by
 * tests/slurm/backend.sh with scripts/slurm-cluster.sh: nodes n1..n3 with 4
 * fake a100 GPUs each in partition onprem).  Needs SLURM_CONF and
 * SPW_TEST_DIR (a scratch directory) in the environment. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/slurm/slurm.h"
#include "tap.h"

static double fake_now = 1e9; /* the daemon clock the backend is given */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Ticks and polls until one exit is reported or timeout_s (real) passes. */
static int wait_exit(spw_slurm_t *sb, spw_exit_t *ex, double timeout_s)
{
    double end = mono() + timeout_s;
    while (mono() < end) {
        fake_now += 1.0;
        spw_slurm_ops.tick(sb, fake_now);
        if (spw_slurm_ops.poll(sb, ex, 1) == 1)
            return 1;
        usleep(100 * 1000);
    }
    return 0;
}

/* The Slurm state of job id (squeue), into st. */
static void job_state(spw_slurm_t *sb, const char *id, char *st, size_t len)
{
    const char *argv[] = {"squeue", "-h", "-t", "all", "-o", "%T", "-j", id, NULL};
    char *o = NULL;
    st[0] = '\0';
    if (spw_slurm_run(sb, argv, NULL, &o, NULL) == 0 && o)
        snprintf(st, len, "%.*s", (int)strcspn(o, "\n"), o);
    free(o);
}

static int wait_state(spw_slurm_t *sb, const char *id, const char *want, double timeout_s)
{
    char st[64];
    double end = mono() + timeout_s;
    while (mono() < end) {
        job_state(sb, id, st, sizeof(st));
        if (strcmp(st, want) == 0)
            return 1;
        usleep(100 * 1000);
    }
    diag("Slurm job %s is '%s', not %s, after %.0f s", id, st, want, timeout_s);
    return 0;
}

/* Ticks until the launch of h's token has its Slurm job id (sbatch runs on
 * an op thread): 1 with h->ext filled, 0 if it ended or timeout_s passed. */
static int wait_submitted(spw_slurm_t *sb, spw_handle_t *h, double timeout_s)
{
    double end = mono() + timeout_s;
    while (mono() < end) {
        spw_handle_t cur;
        if (spw_slurm_handle(sb, h->token, &cur) < 0)
            return 0;
        if (cur.ext[0]) {
            *h = cur;
            return 1;
        }
        usleep(10 * 1000);
    }
    return 0;
}

/* How many Slurm jobs carry comment (squeue --states=all). */
static int count_comment(spw_slurm_t *sb, const char *comment)
{
    const char *argv[] = {"squeue", "-h", "-t", "all", "-o", "%k", NULL};
    char *o = NULL;
    int n = 0;
    if (spw_slurm_run(sb, argv, NULL, &o, NULL) == 0 && o)
        for (char *l = strtok(o, "\n"); l; l = strtok(NULL, "\n"))
            n += strcmp(l, comment) == 0;
    free(o);
    return n;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

int main(void)
{
    const char *dir = getenv("SPW_TEST_DIR");
    if (!getenv("SLURM_CONF") || !dir) {
        printf("1..0 # SKIP needs SLURM_CONF and SPW_TEST_DIR (run tests/slurm/backend.sh)\n");
        return 0;
    }
    spw_error_t err;
    char logs[4096];
    snprintf(logs, sizeof(logs), "%s/logs", dir);

    /* ---- options ---- */
    spw_slurm_opts_t bad = {0};
    ok(!spw_slurm_create(&bad, &err) && strstr(err.text, "partition"),
       "a backend without a partition is refused: %s", err.text);
    spw_slurm_opts_t o = {.partition = "onprem", .cmd_timeout_s = 20, .sync_interval_s = 0.5};
    spw_slurm_t *sb = spw_slurm_create(&o, &err);
    ok(sb != NULL, "spw_slurm_create(partition onprem)");
    if (!sb)
        return done_testing();

    /* ---- nodes ---- */
    spw_backend_node_t *nodes = NULL;
    size_t nn = 0;
    int rc = spw_slurm_nodes(sb, &nodes, &nn, &err);
    ok(rc == 0 && nn == 3, "sinfo: 3 nodes in onprem (%zu) %s", nn, rc ? err.text : "");
    int good = nn == 3;
    for (size_t i = 0; i < nn; i++)
        good = good && nodes[i].gpus == 4 && strcmp(nodes[i].gpu_type, "a100") == 0 &&
               strstr(nodes[i].features, "onprem") && !nodes[i].down;
    ok(good, "each has 4 GPUs of type a100, feature onprem, and is up (n1: %u %s '%s' %s)",
       nn ? nodes[0].gpus : 0, nn ? nodes[0].gpu_type : "", nn ? nodes[0].features : "",
       nn ? nodes[0].state : "");
    {
        /* The same through the table (version 4), as the daemon reads it. */
        const struct spw_backend_ops *ops = &spw_slurm_ops;
        spw_backend_node_t *v = NULL;
        size_t n2 = 0;
        rc = SPW_BACKEND_HAS(ops, 4, nodes) ? ops->nodes(sb, &v, &n2, &err) : -1;
        ok(rc == 0 && n2 == nn && nn && strcmp(v[0].name, nodes[0].name) == 0,
           "the table's nodes() reads the same %zu nodes", n2);
        if (rc == 0 && n2) {
            ops->set_nodes(sb, v, n2);
            ok(ops->node_index(sb, v[n2 - 1].name) == (int)n2 - 1,
               "set_nodes() then node_index() of %s: %zu", v[n2 - 1].name, n2 - 1);
        }
        free(v);
    }
    free(nodes);

    /* ---- submit -> run -> exit code -> logs ---- */
    const char *argv1[] = {"sh", "-c",
                           "echo out-$GREETING gpus=$CUDA_VISIBLE_DEVICES token=$SPILLWAY_LAUNCH_TOKEN "
                           "rank=$RANK/$WORLD_SIZE; echo oops >&2; exit 7",
                           NULL};
    const char *env1[] = {"GREETING=hello world", NULL};
    spw_launch_t req = {.job_id = "j-000001", .argv = argv1, .env = env1, .ngpus = 2,
                        .log_dir = logs, .max_runtime_s = 600, .now_s = fake_now,
                        .token = "d1.j-000001.1", .nodes = 1};
    spw_handle_t h;
    rc = spw_slurm_ops.launch(sb, &req, &h, &err);
    ok(rc == 0 && h.ext[0] == '\0', "launch returns at once, before sbatch answered (ext '%s') %s",
       h.ext, rc ? err.text : "");
    ok(wait_submitted(sb, &h, 30) && atol(h.ext) > 0, "sbatch on the op thread gave Slurm job %s",
       h.ext);
    ok(strcmp(h.token, "d1.j-000001.1") == 0 && strcmp(h.job_id, "j-000001") == 0,
       "the handle carries job id and token");
    is((long)spw_slurm_count(sb), 1, "one job tracked");
    spw_exit_t ex;
    int got = wait_exit(sb, &ex, 60);
    ok(got && ex.kind == SPW_EXIT_EXITED && ex.status == 7 && ex.cause == SPW_CAUSE_NONE,
       "poll reports it exited with code 7 (kind %s status %d)", got ? spw_exit_kind_name(ex.kind) : "-",
       got ? ex.status : 0);
    ok(got && strcmp(ex.handle.ext, h.ext) == 0, "the exit carries the handle");
    char path[4200];
    snprintf(path, sizeof(path), "%s/j-000001.out", logs);
    char *out = slurp(path);
    ok(strstr(out, "out-hello world gpus=0,1 token=d1.j-000001.1 rank=0/1") != NULL,
       "stdout in LOG_DIR/JOBID.out: env, 2 GPUs, token, rank ('%.*s')", (int)strcspn(out, "\n"), out);
    free(out);
    snprintf(path, sizeof(path), "%s/j-000001.err", logs);
    out = slurp(path);
    ok(strcmp(out, "oops\n") == 0, "stderr in LOG_DIR/JOBID.err");
    free(out);

    /* ---- a job that cannot fit is refused at submit ---- */
    spw_launch_t big = req;
    big.job_id = "j-000002";
    big.token = "d1.j-000002.1";
    big.ngpus = 9;
    rc = spw_slurm_ops.launch(sb, &big, &h, &err);
    got = rc == 0 && wait_exit(sb, &ex, 30);
    ok(got && ex.kind == SPW_EXIT_NOT_STARTED && strstr(ex.reason, "sbatch") &&
           strcmp(ex.handle.token, "d1.j-000002.1") == 0,
       "9 GPUs on 4-GPU nodes: poll reports it not started, with sbatch's reason: %s",
       got ? ex.reason : err.text);

    /* ---- gang of 2 nodes with the rank environment ---- */
    spw_launch_t gang = {.job_id = "j-000003",
                         .script = "echo rank=$RANK node_rank=$NODE_RANK world=$WORLD_SIZE "
                                   "master=$MASTER_ADDR:$MASTER_PORT gpus=$CUDA_VISIBLE_DEVICES",
                         .ngpus = 4, .log_dir = logs, .now_s = fake_now,
                         .token = "d1.j-000003.1", .nodes = 2};
    rc = spw_slurm_ops.launch(sb, &gang, &h, &err);
    ok(rc == 0 && wait_submitted(sb, &h, 30), "gang launch on 2 nodes %s", rc ? err.text : "");
    got = wait_exit(sb, &ex, 60);
    ok(got && ex.kind == SPW_EXIT_EXITED && ex.status == 0, "the gang exits 0");
    snprintf(path, sizeof(path), "%s/j-000003.out", logs);
    out = slurp(path);
    long port = 29500 + atol(h.ext) % 1000;
    char w0[160], w1[160];
    snprintf(w0, sizeof(w0), "rank=0 node_rank=0 world=2 master=n1:%ld gpus=0,1,2,3", port);
    snprintf(w1, sizeof(w1), "rank=1 node_rank=1 world=2 master=n1:%ld gpus=0,1,2,3", port);
    ok(strstr(out, w0) && strstr(out, w1), "both ranks ran with RANK, NODE_RANK, WORLD_SIZE, MASTER_ADDR:PORT:\n%s", out);
    free(out);

    /* ---- cancel ---- */
    const char *argv2[] = {"sleep", "300", NULL};
    spw_launch_t sl = {.job_id = "j-000004", .argv = argv2, .ngpus = 1, .log_dir = logs,
                       .now_s = fake_now, .token = "d1.j-000004.1"};
    rc = spw_slurm_ops.launch(sb, &sl, &h, &err);
    ok(rc == 0 && wait_submitted(sb, &h, 30) && wait_state(sb, h.ext, "RUNNING", 30),
       "a sleep runs in Slurm (job %s)", h.ext);
    ok(spw_slurm_ops.cancel(sb, &h, fake_now, &err) == 0, "cancel");
    ok(spw_slurm_ops.cancel(sb, &h, fake_now, &err) == 0, "cancel again is fine (idempotent)");
    got = wait_exit(sb, &ex, 60);
    ok(got && ex.kind == SPW_EXIT_SIGNALED && ex.cause == SPW_CAUSE_CANCELLED,
       "it is reported killed, cause cancelled (%s, %s)", got ? spw_exit_kind_name(ex.kind) : "-",
       got ? spw_exit_cause_name(ex.cause) : "-");
    ok(spw_slurm_ops.cancel(sb, &h, fake_now, &err) < 0, "cancel of a job no longer tracked fails");

    /* ---- several sbatch at once; a cancel before sbatch answered ---- */
    spw_handle_t hv[6];
    char ids[6][32], toks[6][48];
    int all = 1;
    for (int k = 0; k < 6; k++) {
        snprintf(ids[k], sizeof(ids[k]), "j-00010%d", k);
        snprintf(toks[k], sizeof(toks[k]), "d1.j-00010%d.1", k);
        spw_launch_t m = sl;
        m.job_id = ids[k];
        m.token = toks[k];
        all = all && spw_slurm_ops.launch(sb, &m, &hv[k], &err) == 0;
    }
    /* cancelled at once: its sbatch has (most likely) not answered yet */
    spw_handle_t cur;
    int early = spw_slurm_handle(sb, toks[5], &cur) == 0 && !cur.ext[0];
    all = all && spw_slurm_ops.cancel(sb, &hv[5], fake_now, &err) == 0;
    for (int k = 0; k < 5; k++)
        all = all && wait_submitted(sb, &hv[k], 30);
    ok(all, "six launches in a row, five submitted (%s .. %s)", hv[0].ext, hv[4].ext);
    diag("the cancel came %s sbatch answered", early ? "before" : "after");
    got = wait_exit(sb, &ex, 60);
    ok(got && strcmp(ex.handle.token, toks[5]) == 0 && ex.cause == SPW_CAUSE_CANCELLED &&
           (ex.kind == SPW_EXIT_SIGNALED || ex.kind == SPW_EXIT_LOST),
       "the one cancelled at once ends cancelled (%s, %s)", got ? spw_exit_kind_name(ex.kind) : "-",
       got ? spw_exit_cause_name(ex.cause) : "-");
    is(count_comment(sb, toks[5]), 1, "exactly one Slurm job carries its token");
    for (int k = 0; k < 5; k++)
        spw_slurm_ops.cancel(sb, &hv[k], fake_now, &err);
    int ended = 0;
    for (double end5 = mono() + 60; ended < 5 && mono() < end5;)
        ended += wait_exit(sb, &ex, 1) && ex.cause == SPW_CAUSE_CANCELLED;
    is(ended, 5, "the other five are cancelled too");
    int once = 1;
    for (int k = 0; k < 5; k++)
        once = once && count_comment(sb, toks[k]) == 1;
    ok(once, "each token was submitted exactly once");

    /* ---- adopt after a restart; find by token ---- */
    sl.job_id = "j-000005";
    sl.token = "d1.j-000005.1";
    spw_handle_t h5;
    rc = spw_slurm_ops.launch(sb, &sl, &h5, &err);
    ok(rc == 0 && wait_submitted(sb, &h5, 30) && wait_state(sb, h5.ext, "RUNNING", 30),
       "another sleep runs (job %s)", h5.ext);
    sl.job_id = "j-000006";
    sl.token = "d1.j-000006.1";
    spw_handle_t h6;
    rc = spw_slurm_ops.launch(sb, &sl, &h6, &err);
    ok(rc == 0 && wait_submitted(sb, &h6, 30), "and a third (job %s)", h6.ext);
    spw_slurm_ops.destroy(sb); /* the daemon dies; its jobs keep running */
    sb = spw_slurm_create(&o, &err);
    ok(sb && wait_state(sb, h5.ext, "RUNNING", 5), "a new backend: the job still runs in Slurm");
    ok(spw_slurm_ops.adopt(sb, &h5, &err) == 0, "adopt by Slurm job id + token %s", err.text);
    spw_handle_t fake = h5;
    snprintf(fake.token, sizeof(fake.token), "d1.j-000005.2");
    errno = 0;
    ok(spw_slurm_ops.adopt(sb, &(spw_handle_t){0}, &err) < 0 && errno == ESRCH,
       "adopt of a handle without Slurm id fails with ESRCH");
    spw_slurm_ops.tick(sb, fake_now += 1);
    errno = 0;
    ok(spw_slurm_ops.adopt(sb, &fake, &err) < 0 && errno == ESRCH,
       "adopt of a handle whose token is not the job's comment fails: %s", err.text);
    spw_handle_t f6;
    rc = spw_slurm_ops.find(sb, "d1.j-000006.1", &f6, &err);
    ok(rc == 1 && strcmp(f6.ext, h6.ext) == 0 && strcmp(f6.job_id, "j-000006") == 0,
       "find by token: the launch whose handle was never recorded (Slurm job %s, job %s)",
       rc == 1 ? f6.ext : "-", rc == 1 ? f6.job_id : "-");
    is((long)spw_slurm_count(sb), 2, "both are tracked again");

    /* find of a token nothing carries: 0, and the token is fenced: an sbatch
     * of it landing later is cancelled at once, and launch refuses it. */
    rc = spw_slurm_ops.find(sb, "d1.j-000007.1", &f6, &err);
    is(rc, 0, "find of a token nothing carries: 0");
    const char *late[] = {"sbatch", "--parsable", "-p", "onprem", "--comment=d1.j-000007.1",
                          "-o", "/dev/null", "--wrap", "sleep 300", NULL};
    char *lid = NULL;
    rc = spw_slurm_run(sb, late, NULL, &lid, &err);
    if (lid)
        lid[strcspn(lid, "\n;")] = '\0';
    ok(rc == 0, "a late sbatch with the fenced token lands (job %s)", lid ? lid : "-");
    double end = mono() + 30;
    char st[64] = "";
    while (mono() < end) {
        spw_slurm_ops.tick(sb, fake_now += 1);
        job_state(sb, lid ? lid : "0", st, sizeof(st));
        if (strcmp(st, "CANCELLED") == 0)
            break;
        usleep(100 * 1000);
    }
    is_str(st, "CANCELLED", "the next sync cancels it");
    free(lid);
    spw_launch_t again = sl;
    again.job_id = "j-000007";
    again.token = "d1.j-000007.1";
    ok(spw_slurm_ops.launch(sb, &again, &h, &err) < 0 && strstr(err.text, "fenced"),
       "launch with a fenced token is refused: %s", err.text);

    /* ---- a drained node is seen ---- */
    const char *drain[] = {"scontrol", "update", "nodename=n3", "state=drain", "reason=spw-test", NULL};
    const char *resume[] = {"scontrol", "update", "nodename=n3", "state=resume", NULL};
    rc = spw_slurm_run(sb, drain, NULL, NULL, &err);
    nodes = NULL;
    spw_slurm_nodes(sb, &nodes, &nn, &err);
    ok(rc == 0 && nn == 3 && nodes[2].down && strcmp(nodes[2].reason, "spw-test") == 0 &&
           !nodes[0].down,
       "after scontrol drain, n3 is down with its reason (%s '%s')", nn == 3 ? nodes[2].state : "",
       nn == 3 ? nodes[2].reason : "");
    free(nodes);
    spw_slurm_run(sb, resume, NULL, NULL, &err);

    /* ---- Slurm job killed behind our back ---- */
    const char *sc[] = {"scancel", h5.ext, NULL};
    spw_slurm_run(sb, sc, NULL, NULL, &err);
    got = wait_exit(sb, &ex, 60);
    ok(got && strcmp(ex.handle.ext, h5.ext) == 0 && ex.kind == SPW_EXIT_SIGNALED &&
           ex.cause == SPW_CAUSE_NONE,
       "a job scancelled by someone else ends SIGNALED, cause none (%s)",
       got ? spw_exit_cause_name(ex.cause) : "-");
    spw_slurm_ops.cancel(sb, &h6, fake_now, &err);
    got = wait_exit(sb, &ex, 60);
    ok(got && strcmp(ex.handle.ext, h6.ext) == 0 && ex.cause == SPW_CAUSE_CANCELLED,
       "the found job is cancelled through the new backend");
    is((long)spw_slurm_count(sb), 0, "nothing tracked at the end");

    /* ---- commands time out instead of blocking ---- */
    spw_slurm_opts_t slow = {.partition = "onprem", .cmd_timeout_s = 0.5};
    spw_slurm_t *sb2 = spw_slurm_create(&slow, &err);
    const char *sleepy[] = {"sleep", "5", NULL};
    double t0 = mono();
    rc = spw_slurm_run(sb2, sleepy, NULL, NULL, &err);
    ok(rc < 0 && mono() - t0 < 3 && strstr(err.text, "did not answer"),
       "a command past cmd_timeout_s is killed: %s", err.text);
    spw_slurm_destroy(sb2);

    spw_slurm_ops.destroy(sb);
    return done_testing();
}
