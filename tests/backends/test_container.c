/* test_container.c: the container fragment the local and ssh backends run
 * (src/backends/container.c).  Its podman path runs the real fragment with
 * /bin/sh against a stand-in `podman` first in PATH that prints the command
 * line it was given (what it gives podman on any host, GPUs included, which
 * no test host has); podman itself and the bubblewrap path run for real in
 * tests/daemon/image.sh and tests/ssh/backend.sh, as does the OCI unpacker
 * (skopeo and umoci), whose refusal without those tools is checked here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/container.h"
#include "tap.h"

static char dir[64];

static char *joined(char **v)
{
    static char buf[4096];
    buf[0] = '\0';
    for (char **a = v; *a; a++) {
        if (a != v)
            strcat(buf, " ");
        strcat(buf, *a);
    }
    return buf;
}

static void write_exec(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, 0755);
}

/* Runs the fragment for c with "$@" = the job's command `cmd` (a shell
 * word list), then `exec "$@"`; returns what it printed, one line per
 * word of the final command (the stand-ins print their arguments so). */
static char *run(const spw_container_t *c, const char *cmd, int *status)
{
    spw_strbuf_t s = {0};
    spw_strbuf_add(&s, "die() { echo \"E $*\"; exit 1; }\n");
    spw_container_wrap(&s, c);
    spw_strbuf_add(&s, "exec \"$@\"\n");
    char path[128], line[8192];
    snprintf(path, sizeof(path), "%s/wrap.sh", dir);
    FILE *f = fopen(path, "w");
    fputs(s.s, f);
    fclose(f);
    free(s.s);
    snprintf(line, sizeof(line), "PATH=%s:/usr/bin:/bin sh %s %s 2>&1", dir, path, cmd);
    FILE *p = popen(line, "r");
    spw_strbuf_t o = {0};
    char buf[512];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
        spw_strbuf_addn(&o, buf, n);
    *status = pclose(p);
    return o.s ? o.s : strdup("");
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/spw-ctr.XXXXXX");
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    const uint32_t gpus[] = {0, 3};
    const char *names[] = {"CUDA_VISIBLE_DEVICES", "RANK", NULL};
    spw_container_t c = {"docker.io/library/ubuntu:22.04", "spw1.j-1.2", "/work/run",
                         "/ckpt/j-1", gpus, 2, names, NULL};

    char **v = spw_container_podman_argv(&c, 1);
    is_str(joined(v),
           "podman run --rm --name spw-spw1.j-1.2 --pull=missing --network=host "
           "--security-opt=label=disable --device nvidia.com/gpu=0 --device nvidia.com/gpu=3 "
           "-v /work/run:/work/run -w /work/run -v /ckpt/j-1:/ckpt/j-1 -e CUDA_VISIBLE_DEVICES "
           "-e RANK docker.io/library/ubuntu:22.04",
           "with CDI: GPUs as CDI devices");
    spw_container_argv_free(v);
    v = spw_container_podman_argv(&c, 0);
    is_str(joined(v),
           "podman run --rm --name spw-spw1.j-1.2 --pull=missing --network=host "
           "--security-opt=label=disable --device /dev/nvidia0 --device /dev/nvidia3 "
           "--device /dev/nvidiactl --device /dev/nvidia-uvm "
           "-v /work/run:/work/run -w /work/run -v /ckpt/j-1:/ckpt/j-1 -e CUDA_VISIBLE_DEVICES "
           "-e RANK docker.io/library/ubuntu:22.04",
           "without CDI: the GPUs' device nodes and the control devices");
    spw_container_argv_free(v);
    spw_container_t a = {"/images/train.tar", "t.j.1", NULL, NULL, NULL, 0, NULL, NULL};
    v = spw_container_podman_argv(&a, 0);
    is_str(joined(v),
           "podman run --rm --name spw-t.j.1 --pull=missing --network=host "
           "--security-opt=label=disable oci-archive:/images/train.tar",
           "an archive path becomes oci-archive:PATH; no GPU, no mounts");
    spw_container_argv_free(v);

    /* The fragment with a stand-in podman (and runc). */
    write_exec("podman", "#!/bin/sh\nfor a in podman \"$@\"; do printf '%s\\n' \"$a\"; done\n");
    write_exec("runc", "#!/bin/sh\nexit 0\n");
    int st;
    char *o = run(&c, "python3 'train.py' '--lr=0.1 x'", &st);
    int cdi = system("grep -qs nvidia.com/gpu /etc/cdi/* /var/run/cdi/*") == 0;
    int sysd = access("/run/systemd/system", F_OK) == 0;
    /* The limits are the launching shell's: taken out, counted. */
    int nlim = 0;
    for (char *l = o, *e; l && *l; l = e) {
        e = strchr(l, '\n');
        e = e ? e + 1 : l + strlen(l);
        if (strncmp(l, "--ulimit=", 9) == 0) {
            nlim++;
            memmove(l, e, strlen(e) + 1);
            e = l;
        }
    }
    char devs[256] = "";
    const char *const nodes[] = {"/dev/nvidia0", "/dev/nvidia3", "/dev/nvidiactl",
                                 "/dev/nvidia-uvm"};
    for (size_t k = 0; !cdi && k < 4; k++)
        if (access(nodes[k], F_OK) == 0)
            snprintf(devs + strlen(devs), sizeof(devs) - strlen(devs), "--device=%s\n",
                     nodes[k]);
    char want[2048];
    snprintf(want, sizeof(want),
             "podman\n--runtime=runc\n%srun\n%s--rm\n--name\nspw-spw1.j-1.2\n--pull=missing\n"
             "--network=host\n--security-opt=label=disable\n%s"
             "-v\n/work/run:/work/run\n-w\n/work/run\n-v\n/ckpt/j-1:/ckpt/j-1\n"
             "-e\nCUDA_VISIBLE_DEVICES\n-e\nRANK\ndocker.io/library/ubuntu:22.04\n"
             "python3\ntrain.py\n--lr=0.1 x\n",
             sysd ? "" : "--cgroup-manager=cgroupfs\n--events-backend=file\n", devs,
             cdi ? "--device\nnvidia.com/gpu=0\n--device\nnvidia.com/gpu=3\n" : "");
    ok(st == 0, "a registry reference with podman on the host runs podman (status %d)", st);
    if (!is_str(o, want, "podman gets runc and, without systemd, cgroupfs, the GPUs' device "
                "nodes that exist, the command line, then the job's words intact"))
        diag("%s", o);
    ok(nlim == 2, "and the shell's own limits of open files and processes (%d --ulimit)", nlim);
    free(o);

    char tarpath[128];
    snprintf(tarpath, sizeof(tarpath), "%s/img.tar", dir);
    write_exec("img.tar", "not really a tar\n");
    a.image = tarpath;
    o = run(&a, "true", &st);
    char *last = strstr(o, "oci-archive:");
    ok(st == 0 && last && strncmp(last + 12, tarpath, strlen(tarpath)) == 0,
       "an archive file where podman is and no image cache goes to podman as oci-archive:PATH");
    free(o);

    /* A directory runs under bubblewrap even where podman is installed. */
    write_exec("bwrap", "#!/bin/sh\nfor a in bwrap \"$@\"; do printf '%s\\n' \"$a\"; done\n");
    char root[128];
    snprintf(root, sizeof(root), "%s/rootfs", dir);
    mkdir(root, 0755);
    char sub[160];
    snprintf(sub, sizeof(sub), "%s/usr", root);
    mkdir(sub, 0755);
    snprintf(sub, sizeof(sub), "%s/bin", root);
    if (symlink("usr/bin", sub) < 0)
        diag("symlink failed");
    spw_container_t d = {root, "t.j.2", "/work/run", NULL, NULL, 0, NULL, NULL};
    o = run(&d, "cat /etc/os-release", &st);
    char wantb[1024];
    snprintf(wantb, sizeof(wantb),
             "bwrap\n--tmpfs\n/\n--proc\n/proc\n--dev\n/dev\n--tmpfs\n/tmp\n--unshare-pid\n"
             "--die-with-parent\n--symlink\nusr/bin\n/bin\n--ro-bind\n%s/usr\n/usr\n",
             root);
    ok(st == 0 && strncmp(o, wantb, strlen(wantb)) == 0,
       "a directory image runs under bubblewrap: its entries bound read-only, links kept");
    ok(strstr(o, "--bind\n/work/run\n/work/run\n--chdir\n/work/run\n--\ncat\n/etc/os-release\n") != NULL,
       "the workdir mounted and entered, then the job's command after --");
    if (st != 0 || !strstr(o, "--chdir"))
        diag("%s", o);
    free(o);

    /* Missing images name themselves. */
    spw_container_t m = {"/nonexistent/image", "t.j.3", NULL, NULL, NULL, 0, NULL, NULL};
    o = run(&m, "true", &st);
    ok(st != 0 && strstr(o, "E image /nonexistent/image is neither a directory"),
       "a missing image: %s", o);
    free(o);

    /* Without skopeo and umoci (a stand-in skopeo, no umoci, nothing else
     * in PATH) the unpacker says what to install, before it makes or reads
     * anything. */
    write_exec("skopeo", "#!/bin/sh\necho ran >>\"$0.log\"\n");
    write_exec("unpack.sh", spw_container_unpack_script());
    char line[512];
    snprintf(line, sizeof(line), "PATH=%s /bin/sh %s/unpack.sh %s %s/cache 1000 10 '' '' %s/why",
             dir, dir, tarpath, dir, dir);
    FILE *p = popen(line, "r");
    char got[400] = "";
    if (!fgets(got, sizeof(got), p))
        got[0] = '\0';
    st = pclose(p);
    char wantu[400], path[160];
    snprintf(wantu, sizeof(wantu), "unpacking an OCI archive for bubblewrap needs skopeo and umoci on "
             "this host (apt-get install skopeo umoci), or podman to run it (%s)\n", tarpath);
    ok(st != 0 && strcmp(got, wantu) == 0, "without umoci the unpacker fails, saying what to install: %s",
       got);
    snprintf(path, sizeof(path), "%s/cache", dir);
    int made = access(path, F_OK) == 0;
    snprintf(path, sizeof(path), "%s/skopeo.log", dir);
    ok(!made && access(path, F_OK) != 0, "and makes no cache, runs no tool");

    /* A team's cache directory is named from the config, never a path. */
    char td[SPW_IMAGE_TEAM_DIR_MAX];
    spw_container_team_dir(td, sizeof(td), "ml");
    is_str(td, "team-ml", "team ml's image cache is team-ml");
    spw_container_team_dir(td, sizeof(td), "a/../b c");
    is_str(td, "team-a_.._b_c", "a team name with a slash or a space stays one name");
    spw_container_team_dir(td, sizeof(td), NULL);
    is_str(td, "no-team", "jobs of no team share no-team");

    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        diag("cannot remove %s", dir);
    return done_testing();
}
