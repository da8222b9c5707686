/* test_registry.c: backends by name (src/backends/registry.c): each kind is
 * made from its name with the options the daemon gives it, an unknown name
 * is refused with the known ones, and the version 4 members a backend has
 * are wired (what it can do is told by its table, not by its name).  No
 * Slurm, no ssh host: nothing here runs a cluster command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/local/local.h"
#include "backends/registry.h"
#include "backends/slurm/slurm.h"
#include "backends/ssh/ssh.h"
#include "tap.h"

static char tmp[256];            /* scratch directory, removed at the end */

/* Makes c->name and checks that the registry gave the table `want`. */
static int made(const spw_backend_conf_t *c, const struct spw_backend_ops *want,
                const struct spw_backend_ops **ops, void **be, const char *what)
{
    spw_error_t err = {""};
    int rc = spw_backend_create(c, ops, be, &err);
    if (!ok(rc == 0 && *ops == want, "%s by name", what)) {
        diag("%s", err.text);
        return 0;
    }
    return 1;
}

static void test_names(void)
{
    spw_backend_conf_t c = {.name = "pbs", .log_dir = tmp};
    const struct spw_backend_ops *ops = NULL;
    void *be = NULL;
    spw_error_t err = {""};

    ok(spw_backend_create(&c, &ops, &be, &err) < 0 && !ops && !be,
       "an unknown backend is refused, nothing made");
    is_str(err.text, "unknown backend 'pbs' (known: local, slurm, ssh, kubernetes)",
           "the message lists the known names");
    c.name = NULL;
    ok(spw_backend_create(&c, &ops, &be, &err) < 0 && strstr(err.text, "known: local"),
       "so is no name: %s", err.text);
    size_t n = 0;
    while (spw_backend_names[n])
        n++;
    is((long)n, 4, "four names known");
}

static void test_local(void)
{
    char run_dir[300], token[96];
    snprintf(run_dir, sizeof(run_dir), "%s/run", tmp);
    mkdir(run_dir, 0700);
    spw_backend_conf_t c = {.name = SPW_BACKEND_THIS_MACHINE, .log_dir = tmp, .run_dir = run_dir,
                            .grace_s = 1};
    const struct spw_backend_ops *ops = NULL;
    void *be = NULL;
    spw_error_t err = {""};

    if (!made(&c, &spw_local_ops, &ops, &be, "local"))
        return;
    is(ops->version, SPW_BACKEND_VERSION, "its table has version %d", SPW_BACKEND_VERSION);
    ok(SPW_BACKEND_HAS(ops, 4, detect_gpus) && SPW_BACKEND_HAS(ops, 4, read_exit),
       "it detects GPUs and reads exit records");
    ok(!SPW_BACKEND_HAS(ops, 4, nodes) && !SPW_BACKEND_HAS(ops, 4, host_info),
       "it has no node inventory and no hosts");
    /* run_dir reached the backend: find() fences a token there, and the
     * fence has no exit record yet. */
    snprintf(token, sizeof(token), "aaaaaaaaaaaa.reg-%ld.1", (long)getpid());
    spw_handle_t h;
    if (!ok(ops->find(be, token, &h, &err) == 0, "run_dir given: find() answers"))
        diag("%s", err.text);
    spw_exit_kind_t k;
    int st;
    errno = 0;
    ok(ops->read_exit(be, token, "reg", &k, &st) < 0 && errno == ENOENT,
       "read_exit by token: that fence holds no record");
    errno = 0;
    ok(ops->read_exit(be, NULL, "reg", &k, &st) < 0 && errno == ENOENT,
       "read_exit by job id: no record in log_dir");
    ops->destroy(be);

    c.run_dir = NULL;
    if (!made(&c, &spw_local_ops, &ops, &be, "local without run_dir"))
        return;
    ok(ops->find(be, token, &h, &err) < 0, "then find() cannot answer: %s", err.text);
    errno = 0;
    ok(ops->read_exit(be, token, "reg", &k, &st) < 0 && errno == EINVAL,
       "nor read_exit by token (EINVAL)");
    ops->destroy(be);

    c.grace_s = -1;
    ok(spw_backend_create(&c, &ops, &be, &err) < 0 && strstr(err.text, "grace"),
       "bad options are the backend's message: %s", err.text);
}

static void test_slurm(void)
{
    spw_backend_conf_t c = {.name = "slurm", .partition = "gpu", .cmd_timeout_s = 5};
    const struct spw_backend_ops *ops = NULL;
    void *be = NULL;
    spw_error_t err = {""};

    if (!made(&c, &spw_slurm_ops, &ops, &be, "slurm (no cluster needed)"))
        return;
    ok(SPW_BACKEND_HAS(ops, 4, nodes) && SPW_BACKEND_HAS(ops, 4, nodes_async) &&
       SPW_BACKEND_HAS(ops, 4, set_nodes) && SPW_BACKEND_HAS(ops, 4, node_index) &&
       SPW_BACKEND_HAS(ops, 4, foreign_async), "it has the node inventory");
    ok(!SPW_BACKEND_HAS(ops, 4, host_info) && !SPW_BACKEND_HAS(ops, 4, host_add) &&
       !SPW_BACKEND_HAS(ops, 4, detect_gpus) && !SPW_BACKEND_HAS(ops, 4, read_exit),
       "and no hosts, GPU detection or exit records");
    spw_backend_node_t nodes[2] = {{.name = "n1", .gpus = 4}, {.name = "n2", .gpus = 8}};
    ops->set_nodes(be, nodes, 2);
    ok(ops->node_index(be, "n2") == 1 && ops->node_index(be, "n1") == 0 &&
       ops->node_index(be, "n3") == -1, "set_nodes numbers the nodes, node_index finds them");
    is(ops->node_index(be, "n2"), spw_slurm_node_index(be, "n2"),
       "as spw_slurm_node_index does");
    ops->destroy(be);

    c.partition = NULL;
    ok(spw_backend_create(&c, &ops, &be, &err) < 0 && strstr(err.text, "partition"),
       "a slurm backend needs its partition: %s", err.text);
}

static void test_ssh(void)
{
    spw_backend_conf_t c = {.name = SPW_BACKEND_HOSTS, .log_dir = tmp, .dynamic = 1, .grace_s = 1};
    const struct spw_backend_ops *ops = NULL;
    void *be = NULL;
    spw_error_t err = {""};
    spw_backend_host_t hi;

    if (!made(&c, &spw_ssh_ops, &ops, &be, "ssh with dynamic hosts, none yet"))
        return;
    ok(SPW_BACKEND_HAS(ops, 4, host_count) && SPW_BACKEND_HAS(ops, 4, host_info) &&
       SPW_BACKEND_HAS(ops, 4, host_add) && SPW_BACKEND_HAS(ops, 4, host_remove),
       "it has hosts");
    ok(!SPW_BACKEND_HAS(ops, 4, nodes) && !SPW_BACKEND_HAS(ops, 4, detect_gpus),
       "and no node inventory or GPU detection");
    is((long)ops->host_count(be), 0, "no host at first");
    if (!ok(ops->host_add(be, "192.0.2.7", 2, &err) == 0, "host_add"))
        diag("%s", err.text);
    ok(ops->host_add(be, "192.0.2.7", 2, &err) == 0 && ops->host_count(be) == 1,
       "adding it again is a no-op");
    ok(ops->host_add(be, "bad host", 1, &err) < 0 && strstr(err.text, "not a host"),
       "a bad address is refused: %s", err.text);
    ops->host_info(be, 0, &hi);
    ok(strcmp(hi.addr, "192.0.2.7") == 0 && hi.gpus == 2 && hi.used == 0 && hi.up,
       "host_info: %s, %u GPUs, up", hi.addr, hi.gpus);
    ok(ops->host_remove(be, "192.0.2.7", 100) == 0, "host_remove");
    ops->host_info(be, 0, &hi);
    ok(!hi.up && ops->host_count(be) == 1, "the removed host keeps its slot, down");
    ok(ops->host_remove(be, "192.0.2.8", 100) < 0, "removing no host fails");
    ops->destroy(be);

    c.dynamic = 0;
    ok(spw_backend_create(&c, &ops, &be, &err) < 0, "fixed hosts need hosts: %s", err.text);
}

int main(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmp, sizeof(tmp), "%s/spw-registry-XXXXXX", base);
    if (!mkdtemp(tmp)) {
        printf("Bail out! cannot make a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    test_names();
    test_local();
    test_slurm();
    test_ssh();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp);
    return done_testing();
}
