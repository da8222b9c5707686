/* cgroup.h: a cgroup per job on this machine, so that every process a job
 * starts (one that called setsid among them) ends with it, with a pids and a
 * memory limit, and GPU devices other than the job's own denied where the
 * devices controller allows.  cgroup v1 (one hierarchy per controller under
 * ROOT/CONTROLLER, as on hybrid machines) and v2 (ROOT unified) are both
 * supported; each job's cgroup is ROOT[/CONTROLLER]/spillway/NAME, NAME its
 * launch token.  Where no controller can be used, kind is NONE and callers
 * fall back to process groups. */
#ifndef SPW_BACKENDS_CGROUP_H
#define SPW_BACKENDS_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/strbuf.h"

typedef enum spw_cgroup_kind {
    SPW_CGROUP_NONE = 0,        /* no usable controller: process groups only */
    SPW_CGROUP_V1,              /* v1: pids (required), memory, devices */
    SPW_CGROUP_V2,              /* v2 unified: pids, memory (no devices) */
} spw_cgroup_kind_t;

/* Descriptors a job writes its pid into (spw_cgroup_join), at most. */
#define SPW_CGROUP_MAX_FDS 3

/* This machine's cgroups, as detected once. */
typedef struct spw_cgroups {
    spw_cgroup_kind_t kind;     /* what is used */
    char root[128];             /* the cgroup mount, "/sys/fs/cgroup" */
    int memory;                 /* 1: the memory controller is used */
    int devices;                /* 1: the devices controller is used (v1) */
    uint32_t pids_max;          /* processes per job; 0 = no limit */
    uint64_t memory_mib;        /* memory per job, MiB; 0 = no limit */
    char why[200];              /* when kind is NONE: why, for the log */
} spw_cgroups_t;

/* Detects the cgroups under root (NULL = /sys/fs/cgroup) and whether this
 * process (root alone) may make cgroups there; fills *cg (kind NONE with why when none
 * is usable).  Never fails. */
void spw_cgroups_init(spw_cgroups_t *cg, const char *root, uint32_t pids_max,
                      uint64_t memory_mib);

/* One line for the daemon's log: what jobs get. */
void spw_cgroups_describe(const spw_cgroups_t *cg, char *buf, size_t len);

/* Whether name is usable as a cgroup name: 1 to 200 letters, digits, '.',
 * '_' or '-', not starting with '.' (spw_safe_name). */
int spw_cgroup_name_ok(const char *name);

/* Makes cgroup `name` with cg's limits, and in the devices controller denies
 * every /dev/nvidiaN whose N is not in gpus[0..ngpus).  fds
 * (SPW_CGROUP_MAX_FDS) get close-on-exec descriptors (>= 3) of its
 * cgroup.procs files, -1 for unused slots: the caller closes them.  0, or
 * -1 with err and nothing left behind. */
int spw_cgroup_create(const spw_cgroups_t *cg, const char *name, const uint32_t *gpus,
                      size_t ngpus, int *fds, spw_error_t *err);

/* Moves the calling process into the cgroup of fds.  Async-signal-safe
 * (for a child between fork and exec).  0, or -1 with errno. */
int spw_cgroup_join(const int *fds);

/* Sends sig to every process in cgroup `name`: the number signalled, or -1
 * when it does not exist (or cg is NONE). */
int spw_cgroup_signal(const spw_cgroups_t *cg, const char *name, int sig);

/* SIGKILLs every process in cgroup `name` until none is left (new ones
 * forked meanwhile included), then removes it.  0, or -1 when some
 * process was still there after a second. */
int spw_cgroup_kill(const spw_cgroups_t *cg, const char *name);

/* Appends to a host's launch script (sh, run as root) the lines that make
 * the job's cgroup named $T, the same layout and limits as above, and write
 * its directories (the pids one, or the v2 one, first; nothing when the
 * host has no usable controller) into "$D/cg", which SPW_CGROUP_SHELL_KILL
 * and the job's start read.  gpus are the job's GPUs on that host. */
void spw_cgroup_shell(spw_strbuf_t *s, uint32_t pids_max, uint64_t memory_mib,
                      const uint32_t *gpus, size_t ngpus);

/* sh function `cgk RANKDIR SIG`: sends SIG to every process of the cgroup
 * named in RANKDIR/cg; with KILL, until none is left, then removes it. */
#define SPW_CGROUP_SHELL_KILL                                                  \
    "cgk() { g=$(cut -d' ' -f1 \"$1/cg\" 2>/dev/null); [ -n \"$g\" ] || return 0; n=0;" \
    " while [ $n -lt 300 ]; do l=$(cat \"$g/cgroup.procs\" 2>/dev/null); [ -n \"$l\" ] ||" \
    " break; kill \"-$2\" $l 2>/dev/null; [ \"$2\" = KILL ] || return 0; sleep 0.01;" \
    " n=$((n + 1)); done; [ \"$2\" = KILL ] || return 0;" \
    " for x in $(cat \"$1/cg\"); do rmdir \"$x\" 2>/dev/null; done; return 0; }\n"

/* sh words that start "$@" as a job inside the cgroup named in "$D/cg". */
#define SPW_CGROUP_SHELL_JOIN                                                  \
    "( for g in $(cat \"$D/cg\" 2>/dev/null); do echo 0 >\"$g/cgroup.procs\" || exit 125;" \
    " done; exec \"$@\" )"

#endif
