/* cgroup.c: a cgroup per job on this machine (see cgroup.h): v1 with a
 * hierarchy per controller, or v2 unified; made before a job starts, joined
 * by the job's process before exec, emptied with SIGKILL and removed when
 * the job ends or is stopped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "backends/cgroup.h"
#include "util/file.h"

#define PARENT "spillway"       /* the directory every job's cgroup is in */

/* v1 controllers, in the order their cgroups are made; pids first (it is
 * the one processes are read from). */
enum { CG_PIDS, CG_MEMORY, CG_DEVICES, CG_N };
static const char *const v1_ctl[CG_N] = {"pids", "memory", "devices"};

/* Writes text to file dir/leaf.  0, or -1 with errno. */
static int put(const char *dir, const char *leaf, const char *text)
{
    char path[640];
    snprintf(path, sizeof(path), "%s/%s", dir, leaf);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : (errno = n < 0 ? e : EIO, -1);
}

/* Whether v1 controller i is used by cg. */
static int v1_used(const spw_cgroups_t *cg, int i)
{
    return i == CG_PIDS || (i == CG_MEMORY && cg->memory) || (i == CG_DEVICES && cg->devices);
}

/* The directory of cgroup `name` (NULL = the parent) of v1 controller i (or
 * the v2 one) into buf. */
static void cg_dir(const spw_cgroups_t *cg, int i, const char *name, char *buf, size_t len)
{
    if (cg->kind == SPW_CGROUP_V1)
        snprintf(buf, len, "%s/%s/" PARENT "%s%s", cg->root, v1_ctl[i], name ? "/" : "",
                 name ? name : "");
    else
        snprintf(buf, len, "%s/" PARENT "%s%s", cg->root, name ? "/" : "", name ? name : "");
}

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Makes dir (a cgroup) unless it exists.  0, or -1 with errno. */
static int mk(const char *dir)
{
    return mkdir(dir, 0755) == 0 || (errno == EEXIST && is_dir(dir)) ? 0 : -1;
}

/* Whether the v2 file root/cgroup.controllers lists both pids and memory. */
static int v2_controllers(const char *root, int *memory)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
    size_t len;
    char *buf = spw_read_file(path, &len, NULL);
    if (!buf)
        return 0;
    int pids = 0;
    *memory = 0;
    for (char *save = NULL, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
        pids |= strcmp(w, "pids") == 0;
        *memory |= strcmp(w, "memory") == 0;
    }
    free(buf);
    return pids;
}

void spw_cgroups_init(spw_cgroups_t *cg, const char *root, uint32_t pids_max,
                      uint64_t memory_mib)
{
    char dir[512];
    memset(cg, 0, sizeof(*cg));
    snprintf(cg->root, sizeof(cg->root), "%s", root ? root : "/sys/fs/cgroup");
    cg->pids_max = pids_max;
    cg->memory_mib = memory_mib;
    if (geteuid() != 0) {
        snprintf(cg->why, sizeof(cg->why), "the daemon does not run as root");
        return;
    }
    int memory = 0;
    if (v2_controllers(cg->root, &memory)) {
        /* Unified: the controllers must be enabled for the parent's
         * children, at the root and in the parent. */
        cg->kind = SPW_CGROUP_V2;
        cg->memory = memory;
        cg_dir(cg, 0, NULL, dir, sizeof(dir));
        const char *on = memory ? "+pids +memory" : "+pids";
        if (put(cg->root, "cgroup.subtree_control", on) == 0 && mk(dir) == 0 &&
            put(dir, "cgroup.subtree_control", on) == 0)
            return;
        snprintf(cg->why, sizeof(cg->why), "cannot make %.100s with %s enabled: %s", dir, on,
                 strerror(errno));
        cg->kind = SPW_CGROUP_NONE;
        return;
    }
    cg->kind = SPW_CGROUP_V1;
    for (int i = 0; i < CG_N; i++) {
        char mnt[256];
        snprintf(mnt, sizeof(mnt), "%s/%s/cgroup.procs", cg->root, v1_ctl[i]);
        if (access(mnt, F_OK) < 0) {
            if (i == CG_PIDS) {
                snprintf(cg->why, sizeof(cg->why), "no pids controller at %.60s/pids (v1) nor a "
                         "cgroup v2 hierarchy with pids at %.60s", cg->root, cg->root);
                cg->kind = SPW_CGROUP_NONE;
                return;
            }
            continue;
        }
        if (i == CG_MEMORY)
            cg->memory = 1;
        if (i == CG_DEVICES)
            cg->devices = 1;
        cg_dir(cg, i, NULL, dir, sizeof(dir));
        if (mk(dir) < 0) {
            snprintf(cg->why, sizeof(cg->why), "cannot make %.120s: %s", dir, strerror(errno));
            cg->kind = SPW_CGROUP_NONE;
            return;
        }
    }
}

void spw_cgroups_describe(const spw_cgroups_t *cg, char *buf, size_t len)
{
    char pids[32] = "no limit", mem[32] = "no limit";
    if (cg->kind == SPW_CGROUP_NONE) {
        snprintf(buf, len, "no usable cgroup controller (%s): a job's processes are stopped "
                 "by process group, and one that calls setsid can outlive its job", cg->why);
        return;
    }
    if (cg->pids_max)
        snprintf(pids, sizeof(pids), "%u", cg->pids_max);
    if (cg->memory_mib)
        snprintf(mem, sizeof(mem), "%llu MiB", (unsigned long long)cg->memory_mib);
    snprintf(buf, len, "jobs run in a cgroup each (cgroup %s under %s/%s%s): processes %s, "
             "memory %s; other jobs' GPUs %s", cg->kind == SPW_CGROUP_V1 ? "v1" : "v2",
             cg->root, cg->kind == SPW_CGROUP_V1 ? "CONTROLLER/" : "", PARENT, pids,
             cg->memory ? mem : "not limited (no memory controller)",
             cg->devices ? "denied (devices controller)"
                         : "not denied (no devices controller; cgroup v2 needs BPF for it)");
}

int spw_cgroup_name_ok(const char *name)
{
    return spw_safe_name(name, 201);
}

/* Denies, in the v1 devices cgroup dir, each /dev/nvidiaN not in gpus. */
static int deny_gpus(const char *dir, const uint32_t *gpus, size_t ngpus)
{
    DIR *dv = opendir("/dev");
    if (!dv)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(dv)) != NULL) {
        char *end;
        if (strncmp(e->d_name, "nvidia", 6) != 0 || e->d_name[6] < '0' || e->d_name[6] > '9')
            continue;
        unsigned long idx = strtoul(e->d_name + 6, &end, 10);
        if (*end)
            continue;
        int own = 0;
        for (size_t i = 0; i < ngpus; i++)
            own |= gpus[i] == idx;
        char path[300], rule[64];
        struct stat sb;
        snprintf(path, sizeof(path), "/dev/%s", e->d_name);
        if (own || stat(path, &sb) < 0 || !S_ISCHR(sb.st_mode))
            continue;
        snprintf(rule, sizeof(rule), "c %u:%u rwm", major(sb.st_rdev), minor(sb.st_rdev));
        rc = put(dir, "devices.deny", rule);
    }
    closedir(dv);
    return rc;
}

/* Removes cgroup `name` everywhere (empty ones only: the kernel refuses
 * others). */
static void cg_remove(const spw_cgroups_t *cg, const char *name)
{
    char dir[512];
    for (int i = CG_N - 1; i >= 0; i--) {
        if (cg->kind == SPW_CGROUP_V1 && !v1_used(cg, i))
            continue;
        cg_dir(cg, i, name, dir, sizeof(dir));
        rmdir(dir);
        if (cg->kind == SPW_CGROUP_V2)
            break;
    }
}

/* A close-on-exec descriptor, above 0-2, of dir/cgroup.procs.  -1 with
 * errno on failure. */
static int open_procs(const char *dir)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0 && fd < 3) {
        int up = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        fd = up;
    }
    return fd;
}

int spw_cgroup_create(const spw_cgroups_t *cg, const char *name, const uint32_t *gpus,
                      size_t ngpus, int *fds, spw_error_t *err)
{
    char dir[512], num[32];
    int nfd = 0;
    for (int i = 0; i < SPW_CGROUP_MAX_FDS; i++)
        fds[i] = -1;
    if (cg->kind == SPW_CGROUP_NONE)
        return 0;
    if (!spw_cgroup_name_ok(name))
        return spw_errorf(err, "cannot make a cgroup named '%.60s'", name);
    for (int i = 0; i < CG_N; i++) {
        if (cg->kind == SPW_CGROUP_V1 && !v1_used(cg, i))
            continue;
        cg_dir(cg, i, name, dir, sizeof(dir));
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            goto error;
        int v2 = cg->kind == SPW_CGROUP_V2;
        if ((v2 || i == CG_PIDS) && cg->pids_max) {
            snprintf(num, sizeof(num), "%u", cg->pids_max);
            if (put(dir, "pids.max", num) < 0)
                goto error;
        }
        if ((v2 ? cg->memory : i == CG_MEMORY) && cg->memory_mib) {
            snprintf(num, sizeof(num), "%llu", (unsigned long long)cg->memory_mib << 20);
            if (put(dir, v2 ? "memory.max" : "memory.limit_in_bytes", num) < 0)
                goto error;
        }
        if (!v2 && i == CG_DEVICES && deny_gpus(dir, gpus, ngpus) < 0)
            goto error;
        if ((fds[nfd] = open_procs(dir)) < 0)
            goto error;
        nfd++;
        if (v2)
            break;
    }
    return 0;
error:
    spw_errorf(err, "cannot set up the job's cgroup %s: %s", dir, strerror(errno));
    for (int i = 0; i < SPW_CGROUP_MAX_FDS; i++)
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
    cg_remove(cg, name);
    return -1;
}

int spw_cgroup_join(const int *fds)
{
    for (int i = 0; i < SPW_CGROUP_MAX_FDS; i++)
        if (fds[i] >= 0 && write(fds[i], "0", 1) != 1)
            return -1;
    return 0;
}

int spw_cgroup_signal(const spw_cgroups_t *cg, const char *name, int sig)
{
    char dir[512], path[600];
    if (cg->kind == SPW_CGROUP_NONE || !spw_cgroup_name_ok(name))
        return -1;
    cg_dir(cg, CG_PIDS, name, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && kill((pid_t)pid, sig) == 0)
            n++;
    fclose(f);
    return n;
}

int spw_cgroup_kill(const spw_cgroups_t *cg, const char *name)
{
    char dir[512];
    if (cg->kind == SPW_CGROUP_NONE || !spw_cgroup_name_ok(name))
        return 0;
    cg_dir(cg, CG_PIDS, name, dir, sizeof(dir));
    if (!is_dir(dir))
        return 0;
    /* v2 on Linux 5.14+ kills the whole cgroup at once, forks racing it
     * included; elsewhere SIGKILL whatever is listed until nothing is (the
     * pids limit bounds what a fork bomb can add per round). */
    if (cg->kind == SPW_CGROUP_V2)
        put(dir, "cgroup.kill", "1");
    struct timespec pause = {0, 2 * 1000 * 1000};
    for (int round = 0; round < 500; round++) {
        if (spw_cgroup_signal(cg, name, SIGKILL) <= 0) {
            /* Killed processes leave the list as they exit: it is empty
             * when rmdir succeeds. */
            cg_dir(cg, CG_PIDS, name, dir, sizeof(dir));
            cg_remove(cg, name);
            if (!is_dir(dir))
                return 0;
        }
        nanosleep(&pause, NULL);
    }
    return -1;
}

void spw_cgroup_shell(spw_strbuf_t *s, uint32_t pids_max, uint64_t memory_mib,
                      const uint32_t *gpus, size_t ngpus)
{
    char own[16 * 12 + 2] = " ";
    for (size_t i = 0; i < ngpus && strlen(own) + 12 < sizeof(own); i++)
        snprintf(own + strlen(own), sizeof(own) - strlen(own), "%u ", gpus[i]);
    unsigned long long mem = (unsigned long long)memory_mib << 20;
    spw_strbuf_printf(s,
        "G=; C=/sys/fs/cgroup; P=%u; M=%llu\n"
        "if [ -f $C/cgroup.controllers ] && grep -qw pids $C/cgroup.controllers; then\n"
        "  for x in $C $C/" PARENT "; do mkdir -p $x && { echo '+pids +memory' >$x/cgroup.subtree_control"
        " || echo +pids >$x/cgroup.subtree_control; } 2>/dev/null; done\n"
        "  mkdir $C/" PARENT "/$T 2>/dev/null && G=$C/" PARENT "/$T &&"
        " { [ $P = 0 ] || echo $P >$G/pids.max; [ $M = 0 ] || echo $M >$G/memory.max; }\n"
        "elif [ -f $C/pids/cgroup.procs ] && mkdir -p $C/pids/" PARENT " &&"
        " mkdir $C/pids/" PARENT "/$T 2>/dev/null; then\n"
        "  G=$C/pids/" PARENT "/$T; [ $P = 0 ] || echo $P >$G/pids.max\n"
        "  x=$C/memory/" PARENT "/$T; if [ -f $C/memory/cgroup.procs ] && mkdir -p $x; then"
        " G=\"$G $x\"; [ $M = 0 ] || echo $M >$x/memory.limit_in_bytes; fi\n"
        "  x=$C/devices/" PARENT "/$T; if [ -f $C/devices/cgroup.procs ] && mkdir -p $x; then"
        " G=\"$G $x\"; for f in /dev/nvidia[0-9]*; do [ -c \"$f\" ] || continue;"
        " case '%s' in *\" ${f#/dev/nvidia} \"*) continue;; esac;"
        " echo \"c $((0x$(stat -c %%t \"$f\"))):$((0x$(stat -c %%T \"$f\"))) rwm\" >$x/devices.deny;"
        " done; fi\n"
        "fi\n"
        "echo \"$G\" >\"$D/cg\"\n", pids_max, mem, own);
}
