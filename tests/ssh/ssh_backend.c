/* ssh_backend.c: the ssh backend against a real cluster of network
 * namespaces with sshd (scripts/netns-hosts.sh, started by backend.sh):
 * jobs, logs, cancel, placement, a 4-node gang doing a TCP all-reduce, all
 * or nothing, adopt and find after a "restart", a host cut off and fenced. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/ssh/ssh.h"
#include "tap.h"
#include "util/file.h"

static char T[1024];            /* the test directory (cluster in T/cluster) */
static char hosts_buf[8][64];   /* host addresses */
static const char *hosts[8];
static size_t nhosts;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* host_gpus: each host's GPU slots, or NULL to count them (every host must
 * answer then). */
static spw_ssh_t *make(double down_after_s, const uint32_t *host_gpus, spw_error_t *err)
{
    char key[1100], kh[1100], logs[1100];
    snprintf(key, sizeof(key), "%s/cluster/id_ed25519", T);
    snprintf(kh, sizeof(kh), "%s/cluster/known_hosts", T);
    snprintf(logs, sizeof(logs), "%s/logs", T);
    spw_ssh_opts_t o = {
        .hosts = hosts, .nhosts = nhosts, .user = "root", .key = key, .known_hosts = kh,
        .port = 2222, .log_dir = logs, .grace_s = 2, .cmd_timeout_s = 10,
        .sync_interval_s = 0.2, .down_after_s = down_after_s, .host_gpus = host_gpus,
    };
    return spw_ssh_create(&o, err);
}

/* A new backend for the same hosts (a daemon "restarting"); one that cannot
 * be made is a failed check and the end of the file, not a NULL to crash on. */
static spw_ssh_t *remake(const char *what)
{
    spw_error_t err = {""};
    spw_ssh_t *sb = make(3, NULL, &err);
    if (!sb) {
        ok(0, "a new backend for %s: %s", what, err.text);
        exit(done_testing());
    }
    return sb;
}

/* Ticks and polls until job_id ends or timeout_s pass; 1 with *x, or 0. */
static int wait_exit(spw_ssh_t *sb, const char *job_id, spw_exit_t *x, double timeout_s)
{
    double end = now() + timeout_s;
    while (now() < end) {
        spw_ssh_ops.tick(sb, now());
        spw_exit_t xs[8];
        int n = spw_ssh_ops.poll(sb, xs, 8);
        for (int i = 0; i < n; i++)
            if (strcmp(xs[i].handle.job_id, job_id) == 0) {
                *x = xs[i];
                return 1;
            }
        nap();
    }
    return 0;
}

static char *slurp(const char *job_id, const char *suffix)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/logs/%s/%s.%s", T, job_id, job_id, suffix);
    size_t len;
    char *s = spw_read_file(path, &len, NULL);
    return s ? s : strdup("");
}

/* A launch caught between its claim of rank directory `name` on host
 * `host` and its job's start, as one cut off from a daemon killed -9 goes
 * on alone on its host: a child holds the directory's launch lock
 * (launch_lock in ssh.c), makes the directory, writes a byte to ready_fd,
 * starts the "job" hold_s later (a process whose command line names the
 * directory, as the shim's does), writes its pid and lets go.  Returns the
 * child's pid. */
static pid_t launch_in_flight(int host, const char *name, const char *token, const char *addr,
                              double hold_s, int ready_fd)
{
    pid_t c = fork();
    if (c != 0)
        return c;
    char dir[1200], path[1300];
    snprintf(path, sizeof(path), "%s/cluster/host-%d/spillway/lock", T, host);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/cluster/host-%d/spillway/lock/%s", T, host, name);
    snprintf(dir, sizeof(dir), "%s/cluster/host-%d/spillway/jobs/%s", T, host, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) < 0 || mkdir(dir, 0755) < 0)
        _exit(1);
    snprintf(path, sizeof(path), "%s/token", dir);
    FILE *f = fopen(path, "w");
    if (f)
        fprintf(f, "%s\n", token), fclose(f);
    snprintf(path, sizeof(path), "%s/hosts", dir);
    f = fopen(path, "w");
    if (f)
        fprintf(f, "%s\n", addr), fclose(f);
    if (write(ready_fd, "x", 1) != 1)
        _exit(1);
    struct timespec ts = {(time_t)hold_s, (long)((hold_s - (time_t)hold_s) * 1e9)};
    nanosleep(&ts, NULL);
    pid_t job = fork();
    if (job == 0) {
        setsid();
        execl("/bin/sh", "sh", "-c", "sleep 60; :", "spw-shim", dir, (char *)NULL);
        _exit(127);
    }
    snprintf(path, sizeof(path), "%s/pid.tmp", dir);
    char dst[1300];
    snprintf(dst, sizeof(dst), "%s/pid", dir);
    f = fopen(path, "w");
    if (!f || job < 0)
        _exit(1);
    fprintf(f, "%d\n", (int)job);
    fclose(f);
    if (rename(path, dst) < 0)
        _exit(1);
    flock(fd, LOCK_UN);
    _exit(0);
}

static int launch(spw_ssh_t *sb, const char *job_id, const char *token, const char *script,
                  const char *const *argv, const char *const *env, uint32_t nodes, size_t ngpus,
                  spw_handle_t *h, spw_error_t *err)
{
    static const uint32_t g[] = {0, 1};
    err->text[0] = '\0';
    char logs[1100];
    snprintf(logs, sizeof(logs), "%s/logs", T);
    spw_launch_t req = {
        .job_id = job_id, .script = script, .argv = argv, .env = env, .gpus = g,
        .ngpus = ngpus, .log_dir = logs, .now_s = now(), .token = token, .nodes = nodes,
    };
    return spw_ssh_ops.launch(sb, &req, h, err);
}

/* Whether host-side pid file of rank dir names a live process. */
static int remote_alive(int host, const char *dir)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/cluster/host-%d/spillway/jobs/%s/pid", T, host, dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (!f)
        return 0;
    int got = fscanf(f, "%ld", &pid);
    fclose(f);
    return got == 1 && pid > 0 && kill((pid_t)pid, 0) == 0;
}

static int wait_dead(int host, const char *dir, double timeout_s)
{
    double end = now() + timeout_s;
    while (now() < end) {
        if (!remote_alive(host, dir))
            return 1;
        nap();
    }
    return 0;
}

static const char allreduce_py[] =
    "import os, socket, sys\n"
    "rank = int(os.environ['RANK']); world = int(os.environ['WORLD_SIZE'])\n"
    "addr = os.environ['MASTER_ADDR']; port = int(os.environ['MASTER_PORT'])\n"
    "ips = os.environ['SPILLWAY_NODE_IPS'].split(',')\n"
    "assert len(ips) == world and ips[0] == addr, ips\n"
    "value = rank + 1\n"
    "if rank == 0:\n"
    "    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "    srv.bind((addr, port)); srv.listen(world)\n"
    "    peers = []; total = value\n"
    "    while len(peers) < world - 1:\n"
    "        c, _ = srv.accept(); total += int(c.recv(64).decode()); peers.append(c)\n"
    "    for c in peers: c.sendall(str(total).encode()); c.close()\n"
    "else:\n"
    "    import time\n"
    "    for i in range(300):\n"
    "        try:\n"
    "            c = socket.create_connection((addr, port), timeout=5); break\n"
    "        except OSError: time.sleep(0.05)\n"
    "    c.sendall(str(value).encode()); total = int(c.recv(64).decode())\n"
    "print('rank %d of %d on host %s: sum=%d' % (rank, world, os.environ.get('SPILLWAY_TEST_HOST'), total))\n"
    "sys.exit(0 if total == world * (world + 1) // 2 else 1)\n";

static char cmd_kill[1200];   /* a scratch path */

int main(void)
{
    const char *t = getenv("SPW_TEST_DIR");
    const char *script = getenv("SPW_NETNS_SCRIPT");
    if (!t || !script) {
        printf("1..0 # SKIP run through tests/ssh/backend.sh\n");
        return 0;
    }
    snprintf(T, sizeof(T), "%s", t);
    char path[1200];
    snprintf(path, sizeof(path), "%s/cluster/hosts", T);
    FILE *f = fopen(path, "r");
    while (f && nhosts < 8 && fscanf(f, "%63s", hosts_buf[nhosts]) == 1) {
        hosts[nhosts] = hosts_buf[nhosts];
        nhosts++;
    }
    if (f)
        fclose(f);
    if (nhosts != 4) {
        printf("1..1\nnot ok 1 - 4 hosts in %s (got %zu)\n", path, nhosts);
        return 1;
    }

    spw_error_t err = {""};
    spw_exit_t x;
    int got;
    memset(&x, 0, sizeof(x));
    spw_handle_t h;

    /* Creation: GPUs detected through each host's nvidia-smi. */
    spw_ssh_t *sb = make(3, NULL, &err);
    ok(sb != NULL, "create with 4 hosts: %s", err.text);
    if (!sb)
        return done_testing();
    spw_backend_host_t hi;
    spw_ssh_host(sb, 3, &hi);
    is(hi.gpus, 2, "GPUs of host 3 detected through nvidia-smi on the host");
    const char *bad_hosts[] = {"10.0.0.1; rm -rf /"};
    spw_ssh_opts_t bad = {.hosts = bad_hosts, .nhosts = 1, .log_dir = "/tmp"};
    ok(spw_ssh_create(&bad, &err) == NULL && strstr(err.text, "not a host name"),
       "a host with shell characters is refused: %s", err.text);

    /* One job: exit code, both logs, env, workdir. */
    char wd[1100];
    snprintf(wd, sizeof(wd), "%s/wd", T);
    mkdir(wd, 0755);
    const char *env1[] = {"GREETING=it's me", NULL};
    char logs[1100];
    snprintf(logs, sizeof(logs), "%s/logs", T);
    spw_launch_t req = {
        .job_id = "j1",
        .script = "echo \"hello $GREETING $SPILLWAY_JOB_ID host=$SPILLWAY_TEST_HOST "
                  "gpus=$CUDA_VISIBLE_DEVICES pwd=$(pwd)\"; echo oops >&2; exit 3",
        .env = env1, .workdir = wd, .gpus = NULL, .ngpus = 1, .log_dir = logs,
        .now_s = now(), .token = "d1.j1.1",
    };
    int rc = spw_ssh_ops.launch(sb, &req, &h, &err);
    ok(rc == 0, "launch j1: %s", err.text);
    ok(h.pid > 0 && strcmp(h.ext, hosts[0]) == 0, "handle: pid %d on %s", (int)h.pid, h.ext);
    ok(wait_exit(sb, "j1", &x, 20), "j1 ends");
    ok(x.kind == SPW_EXIT_EXITED && x.status == 3 && x.cause == SPW_CAUSE_NONE,
       "j1 exited 3 (%s %d)", spw_exit_kind_name(x.kind), x.status);
    char *o = slurp("j1", "out"), *e = slurp("j1", "err");
    char want[1300];
    snprintf(want, sizeof(want), "hello it's me j1 host=0 gpus=0 pwd=%s\n", wd);
    is_str(o, want, "j1's stdout came back from host 0, with env and workdir");
    is_str(e, "oops\n", "j1's stderr came back");
    free(o);
    free(e);

    /* An argv whose program the host lacks. */
    const char *nope[] = {"no-such-program-spw", NULL};
    rc = launch(sb, "j2", "d1.j2.1", NULL, nope, NULL, 1, 0, &h, &err);
    ok(rc < 0 && strstr(err.text, "not found"), "a missing program fails the launch: %s", err.text);

    /* Placement pinned by the daemon: node 2 = host 2. */
    const char *env3[] = {"SPILLWAY_PLACEMENT=hosts/2", NULL};
    const char *argv3[] = {"sh", "-c", "echo host=$SPILLWAY_TEST_HOST gpus=$CUDA_VISIBLE_DEVICES",
                           NULL};
    rc = launch(sb, "j3", "d1.j3.1", NULL, argv3, env3, 1, 2, &h, &err);
    ok(rc == 0 && wait_exit(sb, "j3", &x, 20) && x.kind == SPW_EXIT_EXITED && x.status == 0,
       "a pinned argv job runs: %s", err.text);
    o = slurp("j3", "out");
    is_str(o, "host=2 gpus=0,1\n", "it ran on host 2 with the GPUs the daemon chose");
    free(o);

    /* Cancel: SIGTERM reaches the job; the shim records it. */
    const char *argv4[] = {"sleep", "60", NULL};
    rc = launch(sb, "j4", "d1.j4.1", NULL, argv4, NULL, 1, 0, &h, &err);
    ok(rc == 0, "launch sleep 60: %s", err.text);
    spw_ssh_host(sb, 0, &hi);
    double t0 = now();
    ok(spw_ssh_ops.cancel(sb, &h, now(), &err) == 0, "cancel");
    got = wait_exit(sb, "j4", &x, 20);
    ok(got && x.kind == SPW_EXIT_SIGNALED && x.status == SIGTERM &&
           x.cause == SPW_CAUSE_CANCELLED,
       "cancelled job: %s %d (%s) after %.2f s", spw_exit_kind_name(x.kind), x.status,
       spw_exit_cause_name(x.cause), now() - t0);

    /* Cancels sent the moment launch returns, a few times over: each must
     * reach the job (the shim's pid file, which a cancel needs, is written
     * only once the job is forked). */
    int reached = 0;
    for (int i = 0; i < 6; i++) {
        char id[16], tok[32];
        snprintf(id, sizeof(id), "jc%d", i);
        snprintf(tok, sizeof(tok), "d1.jc%d.1", i);
        if (launch(sb, id, tok, NULL, argv4, NULL, 1, 0, &h, &err) != 0 ||
            spw_ssh_ops.cancel(sb, &h, now(), &err) != 0)
            break;
        if (!wait_exit(sb, id, &x, 20) || x.kind != SPW_EXIT_SIGNALED || x.status != SIGTERM)
            break;
        reached++;
    }
    ok(reached == 6, "6 cancels sent right after their launches all reached their jobs (%d did)",
       reached);

    /* Cancel of a job that ignores SIGTERM: SIGKILL after the grace. */
    rc = launch(sb, "j5", "d1.j5.1", "trap '' TERM; while :; do sleep 0.1; done", NULL, NULL, 1,
                0, &h, &err);
    ok(rc == 0, "launch a job ignoring SIGTERM: %s", err.text);
    spw_ssh_ops.cancel(sb, &h, now(), &err);
    got = wait_exit(sb, "j5", &x, 30);
    ok(got && x.kind == SPW_EXIT_SIGNALED && x.status == SIGKILL &&
           x.cause == SPW_CAUSE_CANCELLED,
       "killed after the grace: %s %d", spw_exit_kind_name(x.kind), x.status);

    /* A big log comes back whole, in chunks, before the exit. */
    rc = launch(sb, "j6", "d1.j6.1", "head -c 300000 /dev/zero | tr '\\0' x", NULL, NULL, 1, 0,
                &h, &err);
    ok(rc == 0 && wait_exit(sb, "j6", &x, 30), "big-log job ends: %s", err.text);
    o = slurp("j6", "out");
    is((long)strlen(o), 300000, "its 300000 bytes of stdout arrived");
    free(o);

    /* A job writing 40 MiB at once: fetched whole while it still runs, and
     * no tick() holds the caller (the daemon's scheduler thread) for long,
     * since a round brings at most 4 MiB. */
    rc = launch(sb, "j7", "d1.j7.1",
                "head -c 41943040 /dev/zero | tr '\\0' y; echo done >&2; sleep 60", NULL, NULL,
                1, 0, &h, &err);
    ok(rc == 0, "a job writing 40 MiB starts: %s", err.text);
    {
        char path[1200];
        snprintf(path, sizeof(path), "%s/logs/j7/j7.out", T);
        double t0 = now(), worst_s = 0, end = t0 + 60;
        struct stat stb;
        while (now() < end && !(stat(path, &stb) == 0 && stb.st_size == 41943040)) {
            double a = now();
            spw_ssh_ops.tick(sb, a);
            if (now() - a > worst_s)
                worst_s = now() - a;
            nap();
        }
        double took_s = now() - t0;
        ok(stat(path, &stb) == 0 && stb.st_size == 41943040,
           "its 40 MiB reached the daemon while it runs, in %.1f s (%.0f MiB/s)", took_s,
           40 / took_s);
        ok(worst_s < 1.0, "the longest tick() took %.0f ms", worst_s * 1000);
        spw_ssh_ops.cancel(sb, &h, now(), &err);
        got = wait_exit(sb, "j7", &x, 30);
        ok(got && x.cause == SPW_CAUSE_CANCELLED, "then it is cancelled");
        o = slurp("j7", "out");
        size_t ys = 0;
        while (o[ys] == 'y')
            ys++;
        ok(ys == 41943040 && o[ys] == '\0', "every byte is the job's, in order");
        free(o);
    }

    /* A container job: an unpacked root filesystem under bubblewrap, with
     * the workdir and checkpoint directory mounted. */
    const char *rootfs = getenv("SPW_TEST_ROOTFS");
    if (rootfs) {
        char ck[1200];
        snprintf(ck, sizeof(ck), "%s/ckpt", T);
        mkdir(ck, 0755);
        char ckenv[1300];
        snprintf(ckenv, sizeof(ckenv), "SPILLWAY_CHECKPOINT_DIR=%s", ck);
        const char *envc[] = {ckenv, NULL};
        req.image = rootfs; /* the job spec's image: */
        req.job_id = "c1";
        req.token = "d1.c1.1";
        req.env = envc;
        req.workdir = wd;
        req.script = "cat /etc/spw-image; [ -e /usr/bin/python3 ] && echo host-root || echo "
                     "own-root; echo \"pwd=$(pwd)\"; echo saved >\"$SPILLWAY_CHECKPOINT_DIR/step\"; "
                     "echo pid=$$";
        req.now_s = now();
        rc = spw_ssh_ops.launch(sb, &req, &h, &err);
        ok(rc == 0, "launch a job in an image: %s", err.text);
        got = wait_exit(sb, "c1", &x, 20);
        ok(got && x.kind == SPW_EXIT_EXITED && x.status == 0, "the container job succeeds (%s %d)",
           spw_exit_kind_name(x.kind), x.status);
        o = slurp("c1", "out");
        snprintf(want, sizeof(want), "spillway test image\nown-root\npwd=%s\npid=", wd);
        if (!ok(strncmp(o, want, strlen(want)) == 0, "it saw the image's root, not the host's, "
                "and ran in its workdir"))
            diag("got: %s", o);
        ok(strstr(o, "pid=1\n") || strstr(o, "pid=2\n"), "in its own pid namespace");
        free(o);
        e = slurp("c1", "err");
        if (*e)
            diag("container stderr: %s", e);
        free(e);
        char step[1300];
        snprintf(step, sizeof(step), "%s/step", ck);
        size_t sl;
        char *sv = spw_read_file(step, &sl, NULL);
        ok(sv && strcmp(sv, "saved\n") == 0, "it wrote its checkpoint directory (mounted)");
        free(sv);
        /* An OCI archive, unpacked on the host into its team's cache,
         * $R/images/team-ml. */
        const char *oci = getenv("SPW_TEST_OCI");
        if (oci) {
            char cache[1300];
            const char *envo[] = {ckenv, NULL};
            req.env = envo;
            req.image = oci;
            req.team = "ml";
            req.job_id = "c3";
            req.token = "d1.c3.1";
            req.script = "cat /etc/layer2; cat /etc/spw-image 2>/dev/null || echo whiteout";
            req.now_s = now();
            rc = spw_ssh_ops.launch(sb, &req, &h, &err);
            ok(rc == 0, "launch a job in an OCI archive: %s", err.text);
            got = wait_exit(sb, "c3", &x, 30);
            ok(got && x.kind == SPW_EXIT_EXITED && x.status == 0, "it succeeds (%s %d)",
               spw_exit_kind_name(x.kind), x.status);
            o = slurp("c3", "out");
            if (!ok(strcmp(o, "second layer\nwhiteout\n") == 0, "both layers applied, the "
                    "whiteout honoured"))
                diag("got: %s", o);
            free(o);
            int entries = 0;
            for (int hi = 0; hi < 8; hi++) {
                snprintf(cache, sizeof(cache), "%s/cluster/host-%d/spillway/images/team-ml", T, hi);
                DIR *cd = opendir(cache);
                for (struct dirent *de; cd && (de = readdir(cd)) != NULL;)
                    entries += strncmp(de->d_name, "sha256-", 7) == 0;
                if (cd)
                    closedir(cd);
            }
            ok(entries == 1, "unpacked once, into the team's cache on its host (%d entries)",
               entries);
            req.env = envc;
            req.team = NULL;
        }
        req.image = NULL;
        /* SPILLWAY_IMAGE in the env: the older way, still honoured. */
        const char *envd[] = {"SPILLWAY_IMAGE=/nonexistent-image", NULL};
        rc = launch(sb, "c2", "d1.c2.1", "true", NULL, envd, 1, 0, &h, &err);
        ok(rc < 0 && strstr(err.text, "image /nonexistent-image is neither a directory"),
           "a missing image (SPILLWAY_IMAGE) fails the launch: %s", err.text);
        /* A registry reference: run by podman as the login (root) where the
         * hosts have it (they share this machine's files), from an image
         * imported from the test's root filesystem (no registry here);
         * else refused. */
        char podcmd[1500];
        snprintf(podcmd, sizeof(podcmd), "command -v podman >/dev/null && tar -C '%s' -c . | "
                 "podman import --change 'CMD [\"/bin/sh\"]' - localhost/spw-ssh-test:1 "
                 ">/dev/null 2>&1", rootfs);
        int pod = system("command -v podman >/dev/null") == 0;
        if (pod && system(podcmd) != 0)
            diag("podman import failed: the podman check below will fail");
        const char *envp[] = {ckenv, NULL};
        req.env = envp;
        req.image = pod ? "localhost/spw-ssh-test:1" : "docker.io/library/busybox:1.36";
        req.job_id = "c4";
        req.token = "d1.c4.1";
        req.script = "cat /etc/spw-image; echo \"pwd=$(pwd)\"; echo pod >\"$SPILLWAY_CHECKPOINT_DIR/pod\"";
        req.now_s = now();
        err.text[0] = '\0';
        rc = spw_ssh_ops.launch(sb, &req, &h, &err);
        if (pod) {
            got = wait_exit(sb, "c4", &x, 30);
            o = slurp("c4", "out");
            e = slurp("c4", "err");
            snprintf(want, sizeof(want), "spillway test image\npwd=%s\n", wd);
            if (!ok(rc == 0 && got && x.kind == SPW_EXIT_EXITED && x.status == 0 &&
                    strcmp(o, want) == 0, "a registry reference runs under podman (runc, the "
                    "shell's limits), in its workdir: %s %s %d", err.text,
                    spw_exit_kind_name(x.kind), x.status))
                diag("got: %s; stderr: %s", o, e);
            free(o);
            free(e);
            char pv[1300];
            snprintf(pv, sizeof(pv), "%s/pod", ck);
            sv = spw_read_file(pv, &sl, NULL);
            ok(sv && strcmp(sv, "pod\n") == 0, "and wrote its checkpoint directory (mounted)");
            free(sv);
            system("podman rmi -f localhost/spw-ssh-test:1 >/dev/null 2>&1");
        } else {
            ok(rc < 0 && strstr(err.text, "registry reference, which needs podman"),
               "a registry reference on a host without podman fails the launch: %s", err.text);
        }
        req.image = NULL;
    } else {
        diag("no bubblewrap: container checks skipped");
    }

    /* run_as: the job (not the shim) switches to the named user on the
     * host with setpriv; a name missing there, or one that is root there
     * while the daemon did not allow root, fails the launch. */
    {
        spw_launch_t ru = {
            .job_id = "u1", .token = "d1.u1.1", .script = "id -un; id -Gn",
            .log_dir = req.log_dir, .now_s = now(), .set_user = 1, .uid = 65534,
            .gid = 65534, .user = "nobody",
        };
        err.text[0] = '\0';
        rc = spw_ssh_ops.launch(sb, &ru, &h, &err);
        ok(rc == 0, "launch as user nobody: %s", err.text);
        got = wait_exit(sb, "u1", &x, 20);
        ok(got && x.kind == SPW_EXIT_EXITED && x.status == 0, "it succeeds (%s %d)",
           spw_exit_kind_name(x.kind), x.status);
        o = slurp("u1", "out");
        if (!ok(strncmp(o, "nobody\n", 7) == 0 && !strstr(o, "root"),
                "it ran as nobody, with none of root's groups"))
            diag("got: %s", o);
        free(o);
        ru.job_id = "u2";
        ru.token = "d1.u2.1";
        ru.user = "no-such-user-spw";
        ru.now_s = now();
        rc = spw_ssh_ops.launch(sb, &ru, &h, &err);
        ok(rc < 0 && strstr(err.text, "user no-such-user-spw (the run_as of this job's team) does "
                            "not exist on this host"), "a user missing on the host: %s", err.text);
        ru.job_id = "u3";
        ru.token = "d1.u3.1";
        ru.user = "root";
        ru.now_s = now();
        rc = spw_ssh_ops.launch(sb, &ru, &h, &err);
        ok(rc < 0 && strstr(err.text, "user root is root on this host; jobs as root need "
                            "daemon.allow_root_jobs"), "root on the host, not allowed: %s",
           err.text);
    }

    /* A 4-node gang doing a TCP all-reduce. */
    char py[1200];
    snprintf(py, sizeof(py), "%s/allreduce.py", T);
    f = fopen(py, "w");
    fputs(allreduce_py, f);
    fclose(f);
    const char *argv7[] = {"python3", py, NULL};
    rc = launch(sb, "g1", "d1.g1.1", NULL, argv7, NULL, 4, 1, &h, &err);
    ok(rc == 0, "launch a 4-node gang: %s", err.text);
    got = wait_exit(sb, "g1", &x, 60);
    ok(got && x.kind == SPW_EXIT_EXITED && x.status == 0,
       "the gang's all-reduce succeeds (%s %d)", spw_exit_kind_name(x.kind), x.status);
    o = slurp("g1", "out");
    ok(strstr(o, "rank 0 of 4 on host 0: sum=10") != NULL, "rank 0 saw sum 10: %s", o);
    free(o);
    o = slurp("g1", "node3.out");
    ok(strstr(o, "rank 3 of 4 on host 3: sum=10") != NULL, "rank 3's log: %s", o);
    free(o);
    e = slurp("g1", "node2.err");
    if (*e)
        diag("rank 2 stderr: %s", e);
    free(e);

    /* A rank that fails stops the gang, which ends with its status. */
    rc = launch(sb, "g4", "d1.g4.1", "[ \"$RANK\" = 1 ] && exit 5; sleep 60", NULL, NULL, 2, 0,
                &h, &err);
    ok(rc == 0, "launch a gang whose rank 1 fails: %s", err.text);
    t0 = now();
    got = wait_exit(sb, "g4", &x, 30);
    ok(got && x.kind == SPW_EXIT_EXITED && x.status == 5 && now() - t0 < 20,
       "it ends with rank 1's exit 5 after %.1f s, rank 0 killed (%s %d)", now() - t0,
       spw_exit_kind_name(x.kind), x.status);
    ok(wait_dead(0, "d1.g4.1-r0", 10), "rank 0's sleep is gone");

    /* All or nothing: rank 2 cannot start, the other three are stopped. */
    snprintf(path, sizeof(path), "%s/cluster/host-2/spillway/jobs/d1.g2.1-r2", T);
    mkdir(path, 0755);
    rc = launch(sb, "g2", "d1.g2.1", NULL, argv4, NULL, 4, 0, &h, &err);
    ok(rc < 0 && strstr(err.text, "rank of the gang"), "a gang with a rank that cannot start "
       "fails: %s", err.text);
    ok(wait_dead(0, "d1.g2.1-r0", 10) && wait_dead(1, "d1.g2.1-r1", 10) &&
           wait_dead(3, "d1.g2.1-r3", 10),
       "the ranks that had started are killed");
    is((long)spw_ssh_count(sb), 0, "nothing tracked");

    /* A gang of more nodes than hosts. */
    rc = launch(sb, "g3", "d1.g3.1", NULL, argv4, NULL, 5, 0, &h, &err);
    ok(rc < 0 && strstr(err.text, "5 nodes"), "5 nodes on 4 hosts: %s", err.text);

    /* Adopt after a restart: the job outlives the backend, its logs written
     * meanwhile arrive once, its exit code is read back. */
    rc = launch(sb, "j8", "d1.j8.1", "echo before; sleep 1.5; echo after; exit 7", NULL, NULL, 1,
                0, &h, &err);
    ok(rc == 0, "launch j8: %s", err.text);
    spw_exit_t dummy;
    wait_exit(sb, "none", &dummy, 0.6); /* fetch "before" */
    spw_handle_t saved = h;
    spw_ssh_destroy(sb);
    sleep(2);
    sb = remake("adopt");
    ok(spw_ssh_ops.adopt(sb, &saved, &err) == 0, "adopt j8 in a new backend: %s", err.text);
    got = wait_exit(sb, "j8", &x, 20);
    ok(got && x.kind == SPW_EXIT_EXITED && x.status == 7,
       "adopted j8's exit code 7 read back (%s %d)", spw_exit_kind_name(x.kind), x.status);
    o = slurp("j8", "out");
    is_str(o, "before\nafter\n", "its output arrived once, across the restart");
    free(o);
    spw_handle_t gone = saved;
    snprintf(gone.token, sizeof(gone.token), "d1.j8.9");
    errno = 0;
    ok(spw_ssh_ops.adopt(sb, &gone, &err) < 0 && errno == ESRCH, "adopting a launch that never "
       "ran fails with ESRCH: %s", err.text);

    /* find() by token: a running launch is found and adopted; an unknown
     * token is fenced, so its launch can never start later. */
    rc = launch(sb, "j9", "d1.j9.1", NULL, argv4, NULL, 1, 0, &h, &err);
    ok(rc == 0, "launch j9: %s", err.text);
    spw_ssh_destroy(sb);
    sb = remake("find");
    spw_handle_t found;
    rc = spw_ssh_ops.find(sb, "d1.j9.1", &found, &err);
    ok(rc == 1 && strcmp(found.job_id, "j9") == 0 && found.pid == h.pid,
       "find(d1.j9.1) adopts the running j9 (rc %d, %s): %s", rc, found.job_id, err.text);
    spw_ssh_ops.cancel(sb, &found, now(), &err);
    got = wait_exit(sb, "j9", &x, 20);
    ok(got && x.cause == SPW_CAUSE_CANCELLED, "found j9 cancelled");
    /* "Cannot tell now" (-1) while a host's status round is late, as on a
     * loaded machine: the daemon asks again, and so does this test. */
    double until = now() + 30;
    while ((rc = spw_ssh_ops.find(sb, "d1.j10.1", &found, &err)) < 0 &&
           strstr(err.text, "cannot look for launch") && now() < until) {
        spw_ssh_ops.tick(sb, now());
        nap();
    }
    is(rc, 0, "find of a token nothing carries: 0 (%s)", err.text);
    rc = launch(sb, "j10", "d1.j10.1", NULL, argv4, NULL, 1, 0, &h, &err);
    ok(rc < 0 && strstr(err.text, "fenced"), "that token cannot launch any more: %s", err.text);

    /* find() while a launch of the token is between its claim and its
     * job's start (a launch cut off from a daemon killed -9 goes on alone):
     * it waits for the launch and adopts the job it started.  Answering
     * "nothing runs it" there let the job start after the daemon had
     * requeued it, or acknowledged its cancel. */
    {
        int pfd[2];
        char ready;
        if (pipe(pfd) < 0) {
            ok(0, "pipe: %s", strerror(errno));
            return done_testing();
        }
        pid_t lc = launch_in_flight(0, "d1.j14.1-r0", "d1.j14.1", hosts[0], 1.5, pfd[1]);
        close(pfd[1]);
        ok(lc > 0 && read(pfd[0], &ready, 1) == 1, "a launch of d1.j14.1 is in flight on %s "
           "(its rank directory made, its job not started)", hosts[0]);
        close(pfd[0]);
        double t0 = now();
        err.text[0] = '\0';
        until = now() + 30;
        while ((rc = spw_ssh_ops.find(sb, "d1.j14.1", &found, &err)) < 0 &&
               strstr(err.text, "cannot look for launch") && !strstr(err.text, "still starting") &&
               now() < until) {
            spw_ssh_ops.tick(sb, now());
            nap();
        }
        double waited = now() - t0;
        int st = -1;
        waitpid(lc, &st, 0);
        snprintf(path, sizeof(path), "%s/cluster/host-0/spillway/jobs/d1.j14.1-r0/pid", T);
        size_t plen;
        char *ps = spw_read_file(path, &plen, NULL);
        long jpid = ps ? strtol(ps, NULL, 10) : 0;
        free(ps);
        ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && jpid > 0, "that launch then started its job "
           "(pid %ld)", jpid);
        ok(rc == 1 && found.pid == (pid_t)jpid, "find(d1.j14.1) waited for the launch (%.1f s) and "
           "adopted its job (rc %d, pid %d): %s", waited, rc, (int)found.pid, err.text);
        if (rc == 1) {
            spw_ssh_ops.cancel(sb, &found, now(), &err);
            got = wait_exit(sb, "j14", &x, 20);
            ok(got && x.cause == SPW_CAUSE_CANCELLED, "and cancels it");
        }
        if (jpid > 0)
            kill(-(pid_t)jpid, SIGKILL);
    }

    /* The same token launched again (a daemon that died before recording
     * the launch places the job again): the running process is adopted,
     * not started twice, and its output is not fetched twice. */
    rc = launch(sb, "j12", "d1.j12.1", "echo once; sleep 60", NULL, NULL, 1, 0, &h, &err);
    ok(rc == 0, "launch j12: %s", err.text);
    wait_exit(sb, "none", &dummy, 0.8); /* fetch "once" */
    spw_handle_t first = h;
    spw_ssh_destroy(sb);
    sb = remake("the same token again");
    rc = launch(sb, "j12", "d1.j12.1", "echo once; sleep 60", NULL, NULL, 1, 0, &h, &err);
    ok(rc == 0 && h.pid == first.pid, "launching d1.j12.1 again adopts pid %d (got %d): %s",
       (int)first.pid, (int)h.pid, err.text);
    spw_ssh_ops.cancel(sb, &h, now(), &err);
    got = wait_exit(sb, "j12", &x, 20);
    ok(got && x.cause == SPW_CAUSE_CANCELLED, "j12 cancelled");
    o = slurp("j12", "out");
    is_str(o, "once\n", "its output once");
    free(o);

    /* A gang whose host list does not fit the handle is adopted from
     * LOG_DIR/JOBID/JOBID.hosts: here a handle saying "@" and that file
     * (what a launch writes for a list over 127 bytes). */
    rc = launch(sb, "g5", "d1.g5.1", NULL, argv4, NULL, 2, 0, &h, &err);
    ok(rc == 0, "launch a 2-node gang g5: %s", err.text);
    spw_handle_t at = h;
    spw_ssh_destroy(sb);
    snprintf(path, sizeof(path), "%s/logs/g5/g5.hosts", T);
    f = fopen(path, "w");
    fprintf(f, "d1.g5.1 %s\n", h.ext);
    fclose(f);
    snprintf(at.ext, sizeof(at.ext), "@");
    sb = remake("a '@' handle");
    ok(spw_ssh_ops.adopt(sb, &at, &err) == 0, "a handle '@' is adopted from g5.hosts (%s): %s",
       h.ext, err.text);
    spw_ssh_ops.cancel(sb, &at, now(), &err);
    got = wait_exit(sb, "g5", &x, 20);
    ok(got && x.cause == SPW_CAUSE_CANCELLED, "both ranks of g5 cancelled");
    at.ext[0] = '@';
    snprintf(at.token, sizeof(at.token), "d1.g5.2");
    ok(spw_ssh_ops.adopt(sb, &at, &err) < 0 && strstr(err.text, "missing"),
       "a '@' handle whose file names another token is refused: %s", err.text);

    /* Dynamic hosts (a daemon's cloud instances): none at first, added by
     * address, a launch pinned to them by SPILLWAY_SSH_HOSTS, then one
     * removed: its job is lost at once. */
    {
        char key[1100], kh[1100], logs[1100];
        snprintf(key, sizeof(key), "%s/cluster/id_ed25519", T);
        snprintf(kh, sizeof(kh), "%s/cluster/known_hosts", T);
        snprintf(logs, sizeof(logs), "%s/logs", T);
        spw_ssh_opts_t dopt = {.dynamic = 1, .user = "root", .key = key, .known_hosts = kh,
                            .port = 2222, .log_dir = logs, .grace_s = 2, .cmd_timeout_s = 10,
                            .sync_interval_s = 0.2, .down_after_s = 3};
        spw_ssh_t *db = spw_ssh_create(&dopt, &err);
        ok(db && spw_ssh_host_count(db) == 0, "a dynamic backend starts with no host: %s", err.text);
        ok(db && spw_ssh_host_add(db, hosts[2], 1, &err) == 0 &&
           spw_ssh_host_add(db, hosts[1], 1, &err) == 0 &&
           spw_ssh_host_add(db, hosts[1], 1, &err) == 0 && spw_ssh_host_count(db) == 2,
           "two hosts added by address (twice is a no-op): %s", err.text);
        ok(db && spw_ssh_host_add(db, "bad host", 1, &err) < 0, "a bad address is refused: %s",
           err.text);
        char pin[200];
        snprintf(pin, sizeof(pin), "SPILLWAY_SSH_HOSTS=%s,%s", hosts[1], hosts[2]);
        const char *envd[] = {pin, "SPILLWAY_PLACEMENT=emu/x/y/1", NULL};
        rc = db ? launch(db, "d2", "d1.d2.1", "echo \"rank $RANK on host $SPILLWAY_TEST_HOST\"; sleep 60",
                         NULL, envd, 2, 1, &h, &err) : -1;
        ok(rc == 0, "a 2-node launch pinned to hosts 1,2 by address: %s", err.text);
        o = NULL;
        for (double end2 = now() + 10; db && now() < end2; nap()) {
            spw_ssh_ops.tick(db, now());
            free(o);
            o = slurp("d2", "out");
            if (strstr(o, "rank 0"))
                break;
        }
        ok(o && strcmp(o, "rank 0 on host 1\n") == 0, "rank 0 ran on host 1: %s", o ? o : "");
        free(o);
        ok(db && spw_ssh_host_remove(db, hosts[2], now()) == 0, "host 2 removed");
        ok(db && spw_ssh_host_remove(db, "10.255.255.1", now()) < 0, "removing an unknown host fails");
        if (db)
            spw_ssh_ops.cancel(db, &h, now(), &err);
        got = db && wait_exit(db, "d2", &x, 20);
        ok(got && x.kind == SPW_EXIT_LOST, "its job is lost with the host (%s)",
           spw_exit_kind_name(x.kind));
        ok(db && spw_ssh_host_add(db, hosts[2], 1, &err) == 0, "the address comes back as a host: %s",
           err.text);
        spw_backend_host_t hi2;
        if (db)
            spw_ssh_host(db, 1, &hi2);
        ok(db && hi2.up, "and is up");
        /* whatever the removed host still ran is this test's: stop it */
        snprintf(cmd_kill, sizeof(cmd_kill), "%s/cluster/host-2/spillway/jobs/d1.d2.1-r1/pid", T);
        FILE *pf = fopen(cmd_kill, "r");
        long rp = 0;
        if (pf && fscanf(pf, "%ld", &rp) == 1 && rp > 0)
            kill(-(pid_t)rp, SIGKILL);
        if (pf)
            fclose(pf);
        spw_ssh_destroy(db);
    }

    /* An instance ends and a new one boots at the same address (a cloud
     * reuses addresses; netns-hosts.sh add takes the first free one): the
     * new host answers at once, through a connection of its own, not the
     * ended one's shared ssh connection. */
    {
        char idir[1100], key[1200], kh[1200], logs[1100], cmd2[2600], a1[64] = "", a2[64] = "";
        snprintf(idir, sizeof(idir), "%s/inst", T);
        snprintf(key, sizeof(key), "%s/id_ed25519", idir);
        snprintf(kh, sizeof(kh), "%s/known_hosts", idir);
        snprintf(logs, sizeof(logs), "%s/logs", T);
        snprintf(cmd2, sizeof(cmd2), "%s add %s a 2>&1", script, idir);
        FILE *pa = popen(cmd2, "r");
        if (pa) {
            if (!fgets(a1, sizeof(a1), pa))
                a1[0] = '\0';
            pclose(pa);
        }
        a1[strcspn(a1, "\n")] = '\0';
        ok(a1[0] >= '0' && a1[0] <= '9', "instance a boots at %s", a1);
        spw_ssh_opts_t iopt = {.dynamic = 1, .user = "root", .key = key, .known_hosts = kh,
                               .port = 2222, .log_dir = logs, .grace_s = 2, .cmd_timeout_s = 10,
                               .sync_interval_s = 0.2, .down_after_s = 3};
        spw_ssh_t *ib = spw_ssh_create(&iopt, &err);
        char *io = NULL;
        rc = ib && spw_ssh_host_add(ib, a1, 1, &err) == 0 ?
             spw_ssh_run(ib, 0, "echo \"on $SPILLWAY_TEST_HOST\"", &io, &err) : -1;
        ok(rc == 0 && io && strcmp(io, "on a\n") == 0, "a command on instance a: %s",
           io ? io : err.text);
        free(io);
        io = NULL;
        /* It ends abruptly, as a VM that is switched off: its link goes
         * first, so its shared connection never hears the end. */
        snprintf(cmd2, sizeof(cmd2), "ip link set \"$(sed -n 's/^veth //p' %s/inst-a/state)\" down"
                 " && %s del %s a", idir, script, idir);
        ok(system(cmd2) == 0 && ib && spw_ssh_host_remove(ib, a1, now()) == 0,
           "instance a ends and leaves the backend");
        /* Its shared connection closed at the removal, not seconds later
         * when ssh's keepalives give up on it. */
        int sockets = -1;
        for (double end2 = now() + 2; ib && now() < end2; nap()) {
            spw_ssh_ops.tick(ib, now());
            DIR *cd = opendir(spw_ssh_control_dir(ib));
            sockets = 0;
            for (struct dirent *de; cd && (de = readdir(cd)) != NULL;)
                sockets += de->d_name[0] != '.';
            if (cd)
                closedir(cd);
            if (sockets == 0)
                break;
        }
        ok(ib && spw_ssh_control_dir(ib)[0] && sockets == 0,
           "its shared connection is closed with it (%d sockets left)", sockets);
        snprintf(cmd2, sizeof(cmd2), "%s add %s b 2>&1", script, idir);
        pa = popen(cmd2, "r");
        if (pa) {
            if (!fgets(a2, sizeof(a2), pa))
                a2[0] = '\0';
            pclose(pa);
        }
        a2[strcspn(a2, "\n")] = '\0';
        ok(strcmp(a1, a2) == 0, "instance b boots at the same address (%s)", a2);
        t0 = now();
        rc = ib && spw_ssh_host_add(ib, a2, 1, &err) == 0 ?
             spw_ssh_run(ib, 0, "echo \"on $SPILLWAY_TEST_HOST\"", &io, &err) : -1;
        double took_s = now() - t0;
        ok(rc == 0 && io && strcmp(io, "on b\n") == 0 && took_s < 3,
           "a command on instance b reaches b at once (%.1f s): %s", took_s, io ? io : err.text);
        free(io);
        spw_ssh_destroy(ib);
        snprintf(cmd2, sizeof(cmd2), "%s del %s b", script, idir);
        ok(system(cmd2) == 0, "instance b ends");
    }

    /* A host cut off: down after down_after_s, its job LOST, fenced (killed)
     * when the link comes back, then up again. */
    const char *env11[] = {"SPILLWAY_PLACEMENT=hosts/3", NULL};
    rc = launch(sb, "j11", "d1.j11.1", NULL, argv4, env11, 1, 0, &h, &err);
    ok(rc == 0, "launch j11 on host 3: %s", err.text);
    char cmd[2600];
    snprintf(cmd, sizeof(cmd), "%s cut %s/cluster 3", script, T);
    ok(system(cmd) == 0, "cut host 3's link");
    /* A launch to the cut host before it is marked down: it fails, and it
     * holds the caller (the daemon's scheduler thread) for a bounded time,
     * what its shared connection's keepalives or the command timeout
     * allow (docs/hosts.md). */
    const char *argv13[] = {"true", NULL};
    t0 = now();
    rc = launch(sb, "j13", "d1.j13.1", NULL, argv13, env11, 1, 0, &h, &err);
    double held_s = now() - t0;
    /* 10 s of command timeout, plus the time a loaded machine takes to
     * start and reap ssh (seen: 1.8 s at load 17). */
    ok(rc < 0 && held_s <= 10 + 5, "a launch to the unreachable host fails after %.1f s "
       "(command timeout 10 s): %s", held_s, err.text);
    t0 = now();
    got = wait_exit(sb, "j11", &x, 30);
    ok(got && x.kind == SPW_EXIT_LOST, "j11 lost after %.1f s (%s)",
       now() - t0, spw_exit_kind_name(x.kind));
    spw_ssh_host(sb, 3, &hi);
    ok(!hi.up, "host 3 is down");
    ok(remote_alive(3, "d1.j11.1-r0"), "the partitioned copy still runs on host 3");
    /* The fence is reported (version 5), for the daemon to keep; a new
     * backend (a daemon restarted while the host is still cut: its GPUs
     * given, they cannot be counted) takes it back with fence_add. */
    spw_backend_fence_t fv[8];
    int nf = spw_ssh_ops.fence_events(sb, fv, 8), j11f = 0;
    char fl[8 * sizeof(spw_backend_fence_t)] = "";
    for (int i = 0; i < nf; i++) {
        j11f += strcmp(fv[i].host, hosts[3]) == 0 && strcmp(fv[i].what, "d1.j11.1-r0") == 0 &&
                !fv[i].done;
        size_t used = strlen(fl);
        snprintf(fl + used, sizeof(fl) - used, " %.64s:%.111s:%d", fv[i].host, fv[i].what,
                 fv[i].done);
    }
    ok(j11f == 1, "fence_events reports the fence of d1.j11.1-r0 on host 3, once (with the "
       "failed launch's:%s)", fl);
    ok(spw_ssh_ops.fence_events(sb, fv, 8) == 0, "once");
    spw_ssh_destroy(sb);
    static const uint32_t two[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    sb = make(3, two, &err);
    ok(sb != NULL, "a new backend while host 3 is cut (GPUs given): %s", sb ? "" : err.text);
    if (!sb)
        return done_testing();
    err.text[0] = '\0';
    ok(spw_ssh_ops.fence_add(sb, hosts[3], "d1.j11.1-r0", &err) == 0 &&
       spw_ssh_ops.fence_add(sb, hosts[3], "d1.j11.1-r0", &err) == 0,
       "fence_add gives it back (twice is a no-op): %s", err.text);
    ok(spw_ssh_ops.fence_add(sb, "10.255.255.254", "d1.j11.1-r0", &err) < 0,
       "fence_add on no host of the backend fails: %s", err.text);
    ok(spw_ssh_ops.fence_add(sb, hosts[3], "d1.j11.1'; reboot; '-r0", &err) < 0 &&
       spw_ssh_ops.fence_add(sb, hosts[3], "d1.j11.1", &err) < 0,
       "fence_add of something that is no rank directory fails: %s", err.text);
    ok(spw_ssh_ops.fence_events(sb, fv, 8) == 0, "a fence given back is not reported as new");
    snprintf(cmd, sizeof(cmd), "%s mend %s/cluster 3", script, T);
    ok(system(cmd) == 0, "mend host 3's link");
    double end = now() + 60;   /* a deadline only: it ends once all three hold */
    int up = 0;
    nf = 0;
    while (now() < end && !(up && !remote_alive(3, "d1.j11.1-r0") && nf)) {
        spw_ssh_ops.tick(sb, now());
        spw_ssh_host(sb, 3, &hi);
        up = hi.up;
        nf += spw_ssh_ops.fence_events(sb, fv + nf, 8 - (size_t)nf);
        nap();
    }
    ok(up, "host 3 is up again");
    ok(!remote_alive(3, "d1.j11.1-r0"), "the old copy was fenced (killed) before reuse, by the "
       "new backend");
    ok(nf == 1 && fv[0].done && strcmp(fv[0].what, "d1.j11.1-r0") == 0,
       "and the fence is reported done once the host confirmed the kill (%d)", nf);

    spw_ssh_destroy(sb);
    return done_testing();
}
