/* slurm.c: `spillway slurm`: what spillway reads from a Slurm partition
 * (nodes), and Slurm's power-saving programs for cloud nodes (resume,
 * suspend).  See docs/slurm.md. */
#include "cli/slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/registry.h"
#include "cli/client_private.h"

static const char usage[] =
    "usage: spillway slurm nodes PARTITION [-o json]\n"
    "       spillway slurm resume HOSTLIST\n"
    "       spillway slurm suspend HOSTLIST\n"
    "\n"
    "Helpers around the Slurm cluster of a `backend: slurm` pool (docs/slurm.md).\n"
    "They use the Slurm commands on PATH and $SLURM_CONF, as the daemon does.\n"
    "\n"
    "  nodes PARTITION   the nodes the daemon reads for a pool on PARTITION: name,\n"
    "                    GPUs (gres/gpu and type), features, state, and whether it\n"
    "                    counts as down (its jobs fail over)\n"
    "  resume HOSTLIST   Slurm's ResumeProgram for State=CLOUD nodes: brings each\n"
    "                    node up as an instance (today an emulated one: a slurmd on\n"
    "                    this host), sets its address with `scontrol update\n"
    "                    nodename=N nodeaddr=A`, and starts its slurmd.  A node that\n"
    "                    cannot come up is set DOWN with the reason, so Slurm\n"
    "                    requeues its job at once instead of waiting ResumeTimeout\n"
    "  suspend HOSTLIST  Slurm's SuspendProgram: stops each node's slurmd (by the\n"
    "                    pid in SlurmdPidFile) and so releases the instance\n"
    "\n"
    "In slurm.conf:\n"
    "  ResumeProgram=/usr/local/bin/spillway-slurm-resume   (runs: spillway slurm resume \"$1\")\n"
    "  SuspendProgram=/usr/local/bin/spillway-slurm-suspend\n"
    "\n"
    "With $SPILLWAY_URL set (and an admin token in $SPILLWAY_TOKEN or\n"
    "$SPILLWAY_TOKEN_FILE), resume and suspend go through the daemon, whose\n"
    "cloud.slurm_partition is the partition: a node comes up only as the cloud\n"
    "instance the daemon acquired for a job it burst there (its address is the\n"
    "instance's; a node that is none is set DOWN with the daemon's reason), and\n"
    "suspend releases that instance, which stops its billing.  Without it they\n"
    "only start and stop slurmd here (a test cluster with no daemon).\n"
    "\n"
    "Environment: SPILLWAY_SLURM_NODEADDR (the address given to resumed nodes\n"
    "whose instance has none; default 127.0.0.1), SPILLWAY_SLURMD (the slurmd to\n"
    "start, the emulated instance; default slurmd on PATH, else /usr/sbin/slurmd;\n"
    "'none': start nothing, the instance's image runs its own slurmd).\n"
    "\n"
    "Examples:\n"
    "  spillway slurm nodes gpu\n"
    "  spillway slurm resume 'c[1-2]'\n";

/* The host names of a Slurm hostlist ("c[1-3],d1"), NULL-terminated (caller
 * frees the array and its [0] buffer), or NULL with err. */
/* The backend whose cluster's own commands (scontrol) run. */
typedef struct spw_tool {
    const struct spw_backend_ops *ops;
    void *be;
} spw_tool_t;

static char **hostnames(const spw_tool_t *sb, const char *list, spw_error_t *err)
{
    const char *argv[] = {"scontrol", "show", "hostnames", list, NULL};
    char *o = NULL;
    if (sb->ops->run(sb->be, argv, NULL, &o, err) != 0) {
        free(o);
        return NULL;
    }
    size_t n = 0, cap = 8;
    char **v = spw_xcalloc(cap, sizeof(char *));
    char *save = NULL;
    for (char *t = strtok_r(o, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
        if (n + 2 > cap) {
            cap *= 2;
            v = spw_xrealloc(v, cap * sizeof(char *));
        }
        v[n++] = t;
    }
    v[n] = NULL;
    if (n == 0) {
        free(o);
        free(v);
        spw_errorf(err, "the hostlist '%s' names no node", list);
        return NULL;
    }
    return v; /* v[0] is o */
}

/* Runs slurmd -b -N NAME with stdio on /dev/null (slurmd never registers
 * otherwise); 0, or -1 with err. */
static int start_slurmd(const char *name, spw_error_t *err)
{
    const char *bin = getenv("SPILLWAY_SLURMD");
    if (!bin || !*bin)
        bin = access("/usr/sbin/slurmd", X_OK) == 0 ? "/usr/sbin/slurmd" : "slurmd";
    const char *conf = getenv("SLURM_CONF");
    const char *argv[8];
    size_t na = 0;
    argv[na++] = bin;
    argv[na++] = "-b";
    argv[na++] = "-N";
    argv[na++] = name;
    if (conf && *conf) {
        argv[na++] = "-f";
        argv[na++] = conf;
    }
    argv[na] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return spw_errorf(err, "cannot fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(bin, (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return spw_errorf(err, "cannot run %s", bin);
    return spw_errorf(err, "%s -N %s failed (%s %d)", bin, name,
                      WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* With a daemon ($SPILLWAY_URL set): POST /v1/slurm/nodes/NODE/WHAT.
 * Returns 0 with its answer in *out (caller json_decref's), or -1 with the
 * daemon's refusal (or why it did not answer) in err. */
static int ask_daemon(const char *node, const char *what, json_t **out, spw_error_t *err)
{
    spw_cli_common_t co;
    spw_cli_common_init(&co);
    spw_client_t cl;
    spw_client_open(&cl, &co, what[0] == 'r' ? "slurm resume" : "slurm suspend");
    char suffix[32];
    snprintf(suffix, sizeof(suffix), "/%s", what);
    char *path = spw_client_path(&cl, "/v1/slurm/nodes/", node, suffix);
    spw_resp_t r;
    int rc = spw_client_request(&cl, "POST", path, NULL, 0, NULL, &r);
    free(path);
    *out = NULL;
    if (rc == SPW_CLI_OK) {
        *out = json_loads(r.body, 0, NULL);
    } else if (r.status > 0) {
        json_t *e = json_loads(r.body, 0, NULL);
        const char *msg = e ? spw_cli_jstr(json_object_get(e, "error"), "message") : NULL;
        spw_errorf(err, "the daemon refuses: %s", msg ? msg : r.body);
        json_decref(e);
    } else {
        spw_errorf(err, "the daemon at %s does not answer: %s", co.url, cl.errbuf);
    }
    spw_resp_free(&r);
    spw_client_close(&cl);
    return rc == SPW_CLI_OK && *out ? 0 : -1;
}

static int use_daemon(void)
{
    const char *url = getenv("SPILLWAY_URL");
    return url && *url;
}

static int cmd_resume(const spw_tool_t *sb, const char *list)
{
    spw_error_t err;
    char **hosts = hostnames(sb, list, &err);
    if (!hosts) {
        fprintf(stderr, "spillway slurm resume: %s\n", err.text);
        return 1;
    }
    const char *addr = getenv("SPILLWAY_SLURM_NODEADDR");
    if (!addr || !*addr)
        addr = "127.0.0.1";
    int rc = 0;
    const char *bin = getenv("SPILLWAY_SLURMD");
    int own_slurmd = !bin || strcmp(bin, "none") != 0;
    for (size_t i = 0; hosts[i]; i++) {
        char nn[160], na[160], inst[200] = "";
        const char *at = addr;
        json_t *x = NULL;
        int ok = 1;
        /* With a daemon, the node must be an instance it acquired for a
         * job it burst there; its address is the instance's. */
        if (use_daemon()) {
            ok = ask_daemon(hosts[i], "resume", &x, &err) == 0;
            const char *ia = ok ? spw_cli_jstr(x, "addr") : NULL, *id = ok ? spw_cli_jstr(x, "instance") : NULL;
            if (ia && *ia)
                at = ia;
            if (id)
                snprintf(inst, sizeof(inst), " as instance %s", id);
        }
        snprintf(nn, sizeof(nn), "nodename=%s", hosts[i]);
        snprintf(na, sizeof(na), "nodeaddr=%s", at);
        const char *upd[] = {"scontrol", "update", nn, na, "nodehostname=localhost", NULL};
        ok = ok && sb->ops->run(sb->be, upd, NULL, NULL, &err) == 0 &&
             (!own_slurmd || start_slurmd(hosts[i], &err) == 0);
        json_decref(x);
        if (ok) {
            fprintf(stderr, "spillway slurm resume: %s is up at %s%s\n", hosts[i], at, inst);
            continue;
        }
        rc = 1;
        char reason[300];
        snprintf(reason, sizeof(reason), "reason=spillway: %.200s", err.text);
        const char *down[] = {"scontrol", "update", nn, "state=down", reason, NULL};
        spw_error_t e2;
        sb->ops->run(sb->be, down, NULL, NULL, &e2);
        fprintf(stderr, "spillway slurm resume: %s did not come up (%s); set DOWN\n", hosts[i],
                err.text);
    }
    free(hosts[0]);
    free(hosts);
    return rc;
}

/* Whether process pid has exited (gone, or a zombie nobody reaped yet). */
static int exited(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    return !rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X';
}

/* SlurmdPidFile of the cluster, with %n still in it, into buf. */
static int pid_file_pattern(const spw_tool_t *sb, char *buf, size_t len, spw_error_t *err)
{
    const char *argv[] = {"scontrol", "show", "config", NULL};
    char *o = NULL;
    if (sb->ops->run(sb->be, argv, NULL, &o, err) != 0) {
        free(o);
        return -1;
    }
    char *p = strstr(o, "\nSlurmdPidFile");
    char *eq = p ? strchr(p, '=') : NULL;
    if (!eq) {
        free(o);
        return spw_errorf(err, "scontrol show config has no SlurmdPidFile");
    }
    eq++;
    while (*eq == ' ')
        eq++;
    snprintf(buf, len, "%.*s", (int)strcspn(eq, "\n"), eq);
    free(o);
    return 0;
}

static int cmd_suspend(const spw_tool_t *sb, const char *list)
{
    spw_error_t err;
    char pattern[4096];
    char **hosts = hostnames(sb, list, &err);
    if (!hosts || pid_file_pattern(sb, pattern, sizeof(pattern), &err) < 0) {
        fprintf(stderr, "spillway slurm suspend: %s\n", err.text);
        if (hosts) {
            free(hosts[0]);
            free(hosts);
        }
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; hosts[i]; i++) {
        char path[4400] = "";
        const char *pn = strstr(pattern, "%n");
        if (pn)
            snprintf(path, sizeof(path), "%.*s%s%s", (int)(pn - pattern), pattern, hosts[i], pn + 2);
        else
            snprintf(path, sizeof(path), "%s", pattern);
        FILE *f = fopen(path, "r");
        long pid = 0;
        if (f) {
            if (fscanf(f, "%ld", &pid) != 1)
                pid = 0;
            fclose(f);
        }
        char comm[64] = "", cp[64];
        snprintf(cp, sizeof(cp), "/proc/%ld/comm", pid);
        f = pid > 0 ? fopen(cp, "r") : NULL;
        if (f) {
            if (!fgets(comm, sizeof(comm), f))
                comm[0] = '\0';
            fclose(f);
        }
        /* With a daemon: the node's instance is released (its billing
         * stops), whatever became of its slurmd. */
        char rel[240] = "";
        if (use_daemon()) {
            json_t *x = NULL;
            if (ask_daemon(hosts[i], "suspend", &x, &err) < 0) {
                fprintf(stderr, "spillway slurm suspend: %s: %s\n", hosts[i], err.text);
                rc = 1;
            } else {
                const char *id = spw_cli_jstr(x, "instance"), *st = spw_cli_jstr(x, "state");
                snprintf(rel, sizeof(rel), "; instance %s %s", id ? id : "-", st ? st : "?");
            }
            json_decref(x);
        }
        if (pid <= 0 || strncmp(comm, "slurmd", 6) != 0 || exited(pid)) {
            fprintf(stderr, "spillway slurm suspend: %s has no slurmd running (%s); nothing to stop%s\n",
                    hosts[i], path, rel);
            continue;
        }
        kill((pid_t)pid, SIGTERM);
        int gone = 0;
        for (int k = 0; k < 50 && !gone; k++) {
            if (exited(pid))
                gone = 1;
            else
                nanosleep(&(struct timespec){0, 100000000}, NULL);
        }
        if (!gone)
            kill((pid_t)pid, SIGKILL);
        fprintf(stderr, "spillway slurm suspend: %s released (slurmd %ld stopped%s)\n", hosts[i], pid,
                rel);
    }
    free(hosts[0]);
    free(hosts);
    return rc;
}

static int cmd_nodes(const struct spw_backend_ops *ops, void *be, int json)
{
    spw_backend_node_t *v;
    size_t n;
    spw_error_t err;
    if (ops->nodes(be, &v, &n, &err) < 0) {
        fprintf(stderr, "spillway slurm nodes: %s\n", err.text);
        return 1;
    }
    if (json) {
        printf("[");
        for (size_t i = 0; i < n; i++)
            printf("%s\n  {\"name\": \"%s\", \"gpus\": %u, \"gpu_type\": \"%s\", \"features\": \"%s\", "
                   "\"state\": \"%s\", \"down\": %s}",
                   i ? "," : "", v[i].name, v[i].gpus, v[i].gpu_type, v[i].features, v[i].state,
                   v[i].down ? "true" : "false");
        printf("\n]\n");
    } else {
        printf("%-16s %5s %-10s %-24s %-22s %s\n", "NODE", "GPUS", "TYPE", "FEATURES", "STATE", "IN POOL");
        for (size_t i = 0; i < n; i++)
            printf("%-16s %5u %-10s %-24s %-22s %s\n", v[i].name, v[i].gpus,
                   v[i].gpu_type[0] ? v[i].gpu_type : "-", v[i].features[0] ? v[i].features : "-",
                   v[i].state, v[i].gpus == 0 ? "no (no GPU)" : v[i].down ? "no (down)" : "yes");
    }
    free(v);
    return 0;
}

int spw_cli_slurm(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    int json = argc >= 5 && strcmp(argv[3], "-o") == 0 && strcmp(argv[4], "json") == 0;
    if (argc != 3 && !(json && strcmp(sub, "nodes") == 0)) {
        fprintf(stderr, "spillway slurm %s: expected one argument\n\n%s", sub, usage);
        return 2;
    }
    /* The backend a `backend: slurm` pool on that partition has (resume
     * and suspend give a hostlist instead: they run no job, only scontrol,
     * which is Slurm's own and so through the backend's run()). */
    spw_backend_conf_t bc = {.name = SPW_BACKEND_CLOUD_NODES, .partition = argv[2], .cmd_timeout_s = 20};
    const struct spw_backend_ops *ops;
    void *be;
    spw_error_t err;
    if (spw_backend_create(&bc, &ops, &be, &err) < 0) {
        fprintf(stderr, "spillway slurm: %s\n", err.text);
        return 2;
    }
    spw_tool_t tool = {.ops = ops, .be = be};
    int rc;
    if (!SPW_BACKEND_HAS(ops, 4, run)) {
        fprintf(stderr, "spillway slurm: backend %s runs no cluster command\n", ops->name);
        rc = 2;
    } else if (strcmp(sub, "resume") == 0)
        rc = cmd_resume(&tool, argv[2]);
    else if (strcmp(sub, "suspend") == 0)
        rc = cmd_suspend(&tool, argv[2]);
    else if (strcmp(sub, "nodes") == 0)
        rc = cmd_nodes(ops, be, json);
    else {
        fprintf(stderr, "spillway slurm: unknown command '%s' (nodes, resume, suspend)\n\n%s", sub, usage);
        rc = 2;
    }
    ops->destroy(be);
    return rc;
}
