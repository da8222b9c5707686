/* container.c: the shell fragment and the podman command line that run a
 * job in a container image, for the local and ssh backends (container.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/container.h"
#include "util/file.h"

static void argv_push(char ***v, size_t *n, const char *s)
{
    *v = spw_xrealloc(*v, (*n + 2) * sizeof(char *));
    (*v)[(*n)++] = spw_xstrdup(s);
    (*v)[*n] = NULL;
}

char **spw_container_podman_argv(const spw_container_t *c, int cdi)
{
    char **v = NULL, buf[4300];
    size_t n = 0;
    argv_push(&v, &n, "podman");
    argv_push(&v, &n, "run");
    argv_push(&v, &n, "--rm");
    argv_push(&v, &n, "--name");
    /* Container names: [a-zA-Z0-9][a-zA-Z0-9_.-]*, as tokens are. */
    snprintf(buf, sizeof(buf), "spw-%s", c->token ? c->token : "job");
    argv_push(&v, &n, buf);
    argv_push(&v, &n, "--pull=missing");
    argv_push(&v, &n, "--network=host");
    argv_push(&v, &n, "--security-opt=label=disable");
    for (size_t g = 0; c->gpus && g < c->ngpus; g++) {
        argv_push(&v, &n, "--device");
        snprintf(buf, sizeof(buf), cdi ? "nvidia.com/gpu=%u" : "/dev/nvidia%u", c->gpus[g]);
        argv_push(&v, &n, buf);
    }
    if (!cdi && c->ngpus) {
        argv_push(&v, &n, "--device");
        argv_push(&v, &n, "/dev/nvidiactl");
        argv_push(&v, &n, "--device");
        argv_push(&v, &n, "/dev/nvidia-uvm");
    }
    if (c->workdir && *c->workdir) {
        argv_push(&v, &n, "-v");
        snprintf(buf, sizeof(buf), "%s:%s", c->workdir, c->workdir);
        argv_push(&v, &n, buf);
        argv_push(&v, &n, "-w");
        argv_push(&v, &n, c->workdir);
    }
    if (c->ckpt && *c->ckpt) {
        argv_push(&v, &n, "-v");
        snprintf(buf, sizeof(buf), "%s:%s", c->ckpt, c->ckpt);
        argv_push(&v, &n, buf);
    }
    for (const char *const *e = c->env_names; e && *e; e++) {
        argv_push(&v, &n, "-e");
        argv_push(&v, &n, *e);
    }
    if (c->image[0] == '/') {
        /* podman runs directories under bubblewrap's path, never here: a
         * path that reaches podman is an archive file. */
        snprintf(buf, sizeof(buf), "oci-archive:%s", c->image);
        argv_push(&v, &n, buf);
    } else {
        argv_push(&v, &n, c->image);
    }
    return v;
}

void spw_container_argv_free(char **argv)
{
    for (char **a = argv; a && *a; a++)
        free(*a);
    free(argv);
}

/* Appends `set -- ARGV... "$@"`; for podman's command line (podman != 0)
 * the fragment's $PG (global options) follows "podman" and $PL (limits and
 * GPU devices) follows "run", unquoted: words of no space, made by the
 * fragment itself. */
static void add_set(spw_strbuf_t *s, char **argv, int podman)
{
    spw_strbuf_add(s, "set --");
    for (char **a = argv; *a; a++) {
        spw_strbuf_add(s, " ");
        spw_strbuf_quote(s, *a);
        if (podman && a - argv < 2)
            spw_strbuf_add(s, a == argv ? " $PG" : " $PL");
    }
    spw_strbuf_add(s, " \"$@\"");
}

/* The trusted side's unpacker (container.h: spw_container_unpack_script).
 * It reads the archive as the job's user (so that it unpacks nothing that
 * user could not read), keys the cache by the sha256 of those bytes, and
 * takes a hit only from an entry that is its own and that no one else may
 * write (anything else there is removed).  On a miss it copies the archive
 * into a private directory, lists it (files and directories only, within
 * the bounds) and unpacks it; the image itself is read by real OCI tools,
 * never by this script:
 * - `umoci gc` walks every index, manifest and config that index.json
 *   leads to, each checked against its digest (skopeo checks no blob that
 *   index.json names directly);
 * - `skopeo copy` picks the image of this host's platform (linux and
 *   uname -m as a Go architecture) and copies it into an OCI layout of one
 *   image, checking the config and every layer against its digest (with
 *   --insecure-policy: a local archive carries no signatures, and the
 *   host's policy.json, if any, is about registries).  A
 *   multi-platform index.json (images listed in it directly) is first made
 *   a blob, named by its digest, that a new index.json names: skopeo
 *   chooses a platform only in an index it reaches from index.json, and
 *   takes the only image of an index.json of one whatever its platform.
 *   Where that index.json names an index already (`skopeo copy --all`),
 *   skopeo gets it as it was;
 * - `skopeo inspect` names the layers, which are listed against the bounds
 *   and the free space before any is applied;
 * - `umoci raw unpack --rootless`, as the job's user, applies them
 *   (whiteouts, and symlinks resolved inside the root filesystem).
 * The tree is then taken over (no file of another user's in it, owned by
 * the trusted side, readable, no write or set-id bit for anyone else) and
 * renamed into place.  A digest that does not match, or a blob that is
 * missing, is named (its first 12 hex digits) in the sentence; without
 * skopeo or umoci the script says so and unpacks nothing. */
static const char unpack_script[] =
    "exec 2>/dev/null\n"
    "f=$1 c=$2 mb=$3 mf=$4 ju=$5 jg=$6 why=$7 t=\n"
    "umask 022\n"
    "fail() { [ -n \"$t\" ] && rm -rf \"$t\"; [ -n \"$why\" ] && printf '%s\\n' \"$*\""
    " >\"$why\"; echo \"$*\"; exit 1; }\n"
    "command -v skopeo >/dev/null && command -v umoci >/dev/null || fail \"unpacking an OCI"
    " archive for bubblewrap needs skopeo and umoci on this host (apt-get install skopeo umoci),"
    " or podman to run it ($f)\"\n"
    "if [ -n \"$ju\" ] && [ \"$ju\" != \"$(id -u)\" ]; then\n"
    "  asu() { setpriv --reuid=\"$ju\" --regid=\"$jg\" --clear-groups -- \"$@\"; }\n"
    "else ju=; asu() { \"$@\"; }; fi\n"
    "mine() { [ -d \"$1\" ] && [ ! -L \"$1\" ] && [ -O \"$1\" ] && [ -z \"$(find \"$1\""
    " -maxdepth 0 -perm /022)\" ]; }\n"
    "p=${c%/*}\n"
    "mkdir -p \"$p\"; mine \"$p\" || fail \"the image cache $p must be a directory of this"
    " user's own that no one else may write\"\n"
    "if [ -e \"$c\" ] || [ -L \"$c\" ]; then mine \"$c\" || rm -rf \"$c\"; fi\n"
    "mkdir -p \"$c\"; chmod 711 \"$p\" \"$c\"; mine \"$c\" || fail \"cannot make the image cache"
    " $c\"\n"
    "asu test -d \"$c\" || fail \"the job's user cannot reach the image cache: let it through"
    " the directories above ($c)\"\n"
    "asu test -r \"$f\" || fail \"the job's user cannot read the OCI archive ($f)\"\n"
    "find \"$c\" -mindepth 1 -maxdepth 1 -name '.tmp.*' -mmin +1440 -exec rm -rf {} +\n"
    "good() { mine \"$1\" && mine \"$1/rootfs\" && [ -f \"$1/ok\" ] && [ ! -L \"$1/ok\" ] && ["
    " -O \"$1/ok\" ]; }\n"
    "k=$(asu cat -- \"$f\" | sha256sum) && k=${k%% *}\n"
    "e=$c/sha256-$k\n"
    "if good \"$e\"; then echo \"$e/rootfs\"; exit 0; fi\n"
    "if [ -e \"$e\" ] || [ -L \"$e\" ]; then rm -rf \"$e\"; fi\n"
    "t=$(mktemp -d \"$c/.tmp.XXXXXX\") || fail \"cannot write the image cache $c\"\n"
    "asu cat -- \"$f\" | head -c \"$((mb + 1))\" >\"$t/a.tar\"\n"
    "[ \"$(wc -c <\"$t/a.tar\")\" -le \"$mb\" ] ||\n"
    "  fail \"the OCI archive is larger than $mb bytes (daemon.image_max_bytes): raise that"
    " bound to run it ($f)\"\n"
    "h=$(sha256sum <\"$t/a.tar\") && [ \"${h%% *}\" = \"$k\" ] || fail \"the OCI archive changed"
    " while it was read ($f)\"\n"
    "big() { fail \"the OCI archive unpacks to more than $mb bytes (daemon.image_max_bytes):"
    " raise that bound to run it ($f)\"; }\n"
    "many() { fail \"the OCI archive unpacks to more than $mf files (daemon.image_max_files):"
    " raise that bound to run it ($f)\"; }\n"
    "tot() {\n"
    "  { tar --numeric-owner -tvf \"$1\" || echo \"spw-tar-failed\"; } | awk -v b=\"$2\" -v"
    " n=\"$3\" -v mb=\"$mb\" -v mf=\"$mf\" -v plain=\"$4\" '\n"
    "    $0 == \"spw-tar-failed\" { r = 5; exit }\n"
    "    { n++; y = substr($1, 1, 1); if (y == \"-\") b += $3\n"
    "      if (plain && y != \"-\" && y != \"d\") { r = 2; exit }\n"
    "      if (b > mb) { r = 3; exit } if (n > mf) { r = 4; exit } }\n"
    "    END { if (r) exit r; printf \"%.0f %.0f\\n\", b, n }'\n"
    "}\n"
    "x=$(tot \"$t/a.tar\" 0 0 1)\n"
    "case $? in\n"
    "0) ;; 2) fail \"the OCI archive holds a link or a special file, where an OCI layout has"
    " files and directories only ($f)\";;\n"
    "3) big;; 4) many;; *) fail \"the image is not a tar file, as an OCI archive is ($f)\";;\n"
    "esac\n"
    "mkdir \"$t/oci\" && tar --no-same-owner --no-same-permissions -xf \"$t/a.tar\" -C"
    " \"$t/oci\" ||\n"
    "  fail \"tar cannot unpack the OCI archive ($f)\"\n"
    "rm -f \"$t/a.tar\"\n"
    "[ -f \"$t/oci/index.json\" ] && [ -f \"$t/oci/oci-layout\" ] || fail \"the image has no"
    " index.json or oci-layout: not an OCI archive ($f)\"\n"
    "bad() {\n"
    "  d=$(sed -n 's/.*expected \\(sha256:[0-9a-f]\\{12\\}\\).*/\\1/p' \"$t/log\" | head -n 1)\n"
    "  if [ -n \"$d\" ]; then\n"
    "    case $(sed -n 's/expected sha256:.*//p' \"$t/log\" | head -n 1) in\n"
    "    *image.index*|*manifest.list*) k=index;; *config*) k=config;; *manifest*) k=manifest;;"
    " *) k=layer;; esac\n"
    "    fail \"the $k $d of the OCI archive does not match its digest: the archive is damaged"
    " or was altered ($f)\"\n"
    "  fi\n"
    "  d=$(sed -n 's,.*sha256/\\([0-9a-f]\\{12\\}\\)[0-9a-f]*: no such file.*,\\1,p' \"$t/log\""
    " | head -n 1)\n"
    "  [ -z \"$d\" ] || fail \"the blob sha256:$d is not in the OCI archive ($f)\"\n"
    "  grep -q 'no image found in image index' \"$t/log\" && fail \"the OCI archive has no image"
    " for this host's platform, linux/$ar ($f)\"\n"
    "  fail \"$1: $(sed -n '/: /{s/.*msg=\"\\(.*\\)\"$/\\1/p; t; s/^[^a-z]*//p; }' \"$t/log\" |"
    " head -n 1 | cut -c 1-90) ($f)\"\n"
    "}\n"
    "umoci gc --layout \"$t/oci\" >\"$t/log\" 2>&1 || bad \"umoci cannot read the OCI archive\"\n"
    "case $(uname -m) in x86_64) ar=amd64;; aarch64) ar=arm64;; armv[67]*) ar=arm;; i?86)"
    " ar=386;; *) ar=$(uname -m);; esac\n"
    "sk() { rm -rf \"$t/img\"; TMPDIR=$t skopeo --insecure-policy copy -q"
    " --dest-oci-accept-uncompressed-layers --override-os linux --override-arch \"$ar\""
    " \"oci:$t/oci\" \"oci:$t/img:spw\" >\"$t/log\" 2>&1; }\n"
    "x=$(sha256sum <\"$t/oci/index.json\") && x=${x%% *} && s=$(wc -c <\"$t/oci/index.json\")"
    " &&\n"
    "  cp \"$t/oci/index.json\" \"$t/ix\" && cp \"$t/ix\" \"$t/oci/blobs/sha256/$x\" &&\n"
    "  printf '{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\","
    "\"digest\":\"sha256:%s\",\"size\":%s}]}' \\\n"
    "    application/vnd.oci.image.index.v1+json \"$x\" \"$s\" >\"$t/oci/index.json\" || fail"
    " \"cannot write the image cache $c\"\n"
    "if ! sk; then\n"
    "  grep -q 'manifest list instead of a manifest' \"$t/log\" || bad \"skopeo cannot copy the"
    " image of the OCI archive\"\n"
    "  cp \"$t/ix\" \"$t/oci/index.json\" && sk || bad \"skopeo cannot copy the image of the OCI"
    " archive\"\n"
    "fi\n"
    "rm -rf \"$t/oci\"\n"
    "ls=$(skopeo inspect --format '{{range .Layers}}{{.}} {{end}}' \"oci:$t/img:spw\""
    " 2>\"$t/log\") || bad \"skopeo cannot read the image it copied\"\n"
    "[ -n \"$ls\" ] || fail \"the manifest of the OCI archive names no layer ($f)\"\n"
    "b=0 n=0\n"
    "for l in $ls; do\n"
    "  h=${l#sha256:}\n"
    "  case $h in \"$l\"|*[!0-9a-f]*|'') fail \"the OCI archive names a layer by a digest that"
    " is not sha256 ($f)\";; esac\n"
    "  x=$(tot \"$t/img/blobs/sha256/$h\" \"$b\" \"$n\" \"\")\n"
    "  case $? in 0) ;; 3) big;; 4) many;; *) fail \"a layer of the OCI archive is not a tar"
    " file ($f)\";; esac\n"
    "  b=${x% *} n=${x#* }\n"
    "done\n"
    "av=$(df -Pk \"$c\" | awk 'NR == 2 { printf \"%.0f\", $4 * 1024 }')\n"
    "[ -z \"$av\" ] || [ \"$b\" -le \"$av\" ] ||\n"
    "  fail \"the OCI archive unpacks to $b bytes, more than the $av bytes free in the image"
    " cache ($c)\"\n"
    "mkdir \"$t/u\" || fail \"cannot write the image cache $c\"\n"
    "if [ -n \"$ju\" ]; then chown \"$ju:$jg\" \"$t/u\" || fail \"cannot hand $t/u to the job's"
    " user\"; fi\n"
    "chmod 700 \"$t/u\"; chmod 711 \"$t\"\n"
    "L='umoci raw unpack --rootless --image \"$1:spw\" \"$2\" && mkdir -p \"$2/proc\" \"$2/dev\""
    " \"$2/tmp\"'\n"
    "asu /bin/sh -c \"$L\" spw-layers \"$t/img\" \"$t/u/rootfs\" >\"$t/log\" 2>&1 ||\n"
    "  bad \"umoci cannot unpack the layers of the OCI archive\"\n"
    "chmod 700 \"$t\"\n"
    "mv \"$t/u/rootfs\" \"$t/rootfs\" || fail \"cannot write the image cache $c\"\n"
    "if [ -n \"$ju\" ]; then\n"
    "  [ -z \"$(find \"$t/rootfs\" ! -user \"$ju\" -print -quit)\" ] ||\n"
    "    fail \"the layers of the OCI archive link a file of another user's into the image"
    " ($f)\"\n"
    "  chown -R -h \"$(id -u):$(id -g)\" \"$t/rootfs\" || fail \"cannot take over the unpacked"
    " image in $t\"\n"
    "fi\n"
    "chmod -R a+rX,go-w,ug-s \"$t/rootfs\" || fail \"cannot make the unpacked image read-only in"
    " $t\"\n"
    "printf '%s\\n' \"$f\" >\"$t/ok\"; rm -rf \"$t/img\" \"$t/u\" \"$t/log\" \"$t/ix\"; chmod"
    " 711 \"$t\"\n"
    "if ! mv -T \"$t\" \"$e\"; then rm -rf \"$t\"; t=; good \"$e\" || fail \"cannot move the"
    " unpacked image into $c\"; fi\n"
    "echo \"$e/rootfs\"\n";

void spw_container_team_dir(char *buf, size_t cap, const char *team)
{
    snprintf(buf, cap, "%s%s", team ? "team-" : "no-team", team ? team : "");
    for (char *p = buf; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
            *p = '_';
}

const char *spw_container_unpack_script(void)
{
    return unpack_script;
}

void spw_container_image_fn(spw_strbuf_t *s, const char *cache, uint64_t max_bytes,
                            uint64_t max_files)
{
    spw_strbuf_add(s, "UF=");
    spw_strbuf_quote(s, unpack_script);
    spw_strbuf_add(s, "\nspw_image() { /bin/sh -c \"$UF\" spw-unpack \"$1\" ");
    spw_strbuf_add(s, cache);
    spw_strbuf_printf(s, " %llu %llu \"${SPW_JOB_UID:-}\" \"${SPW_JOB_GID:-}\" ''; }\n",
                      (unsigned long long)max_bytes, (unsigned long long)max_files);
}

void spw_container_wrap(spw_strbuf_t *s, const spw_container_t *c)
{
    spw_strbuf_add(s, "IMG=");
    spw_strbuf_quote(s, c->image);
    spw_strbuf_add(s, "; W=");
    spw_strbuf_quote(s, c->workdir ? c->workdir : "");
    spw_strbuf_add(s, "; CK=");
    spw_strbuf_quote(s, c->ckpt ? c->ckpt : "");
    spw_strbuf_add(s, "\n");
    spw_strbuf_add(s,
        "case $IMG in\n"
        "oci-archive:*) IK=archive; IF=${IMG#oci-archive:};;\n"
        "/*) if [ -d \"$IMG\" ]; then IK=dir; elif [ -f \"$IMG\" ]; then IK=archive; IF=$IMG;"
        " else die \"image $IMG is neither a directory (an unpacked root filesystem) nor a file"
        " (an OCI archive) on this host\"; fi;;\n"
        "*) IK=ref;;\n"
        "esac\n"
        "[ \"$IK\" != archive ] || [ -f \"$IF\" ] || die \"image archive $IF is not a file on this host\"\n"
        "BW=$(command -v bwrap 2>/dev/null) || BW=/usr/bin/bwrap\n"
        "[ -x \"$BW\" ] || BW=\n");
    /* HC: archives can be unpacked here for bubblewrap (a cache, and the
     * tools the unpacker runs). */
    spw_strbuf_add(s, c->image_fn ? "HC=1\n" : "HC=\n");
    spw_strbuf_add(s, "command -v skopeo >/dev/null 2>&1 && command -v umoci >/dev/null 2>&1 || HC=\n");
    spw_strbuf_add(s,
        /* podman runs registry references, and archives only where they
         * cannot be unpacked into a cache (by skopeo and umoci) and run
         * under bubblewrap. */
        "if command -v podman >/dev/null 2>&1 && { [ \"$IK\" = ref ] || { [ \"$IK\" = archive ] &&"
        " { [ -z \"$BW\" ] || [ -z \"$HC\" ]; }; }; }; then\n"
        /* The settings that work, not the host's defaults: runc (crun
         * cannot start containers on hybrid cgroups), cgroupfs and a file
         * for events where systemd is not running, the limits the job
         * would have without a container (podman raises them as root,
         * which a root without CAP_SYS_RESOURCE may not; processes no more
         * than there can be pids), and a home for a rootless user's images
         * where its own is not writable. */
        "PG=; command -v runc >/dev/null 2>&1 && PG=--runtime=runc\n"
        "[ -d /run/systemd/system ] || PG=\"$PG --cgroup-manager=cgroupfs --events-backend=file\"\n"
        "PL=$(awk -v m=\"$(cat /proc/sys/kernel/pid_max 2>/dev/null)\" 'function v(x, c) {"
        " if (x == \"unlimited\") x = -1; if (c && m > 0 && (x < 0 || x + 0 > m + 0)) x = m;"
        " return x } /^Max open files/ { o = o \" --ulimit=nofile=\" v($4, 0) \":\" v($5, 0) }"
        " /^Max processes/ { o = o \" --ulimit=nproc=\" v($3, 1) \":\" v($4, 1) }"
        " END { print o }' /proc/self/limits 2>/dev/null)\n"
        "if [ \"$(id -u)\" != 0 ] && ! { [ -d \"$HOME\" ] && [ -w \"$HOME\" ]; }; then\n"
        "  PH=${TMPDIR:-/tmp}/spillway-podman-$(id -u); mkdir -p -m 700 \"$PH\" 2>/dev/null\n"
        "  [ -d \"$PH\" ] && [ ! -L \"$PH\" ] && [ -O \"$PH\" ] || die \"podman keeps a user's images"
        " in its home, and $HOME is not writable: give the job's user a home, or let it make"
        " $PH (a directory of its own)\"\n"
        "  export HOME=\"$PH\"\n"
        "fi\n"
        "if grep -qs nvidia.com/gpu /etc/cdi/* /var/run/cdi/*; then ");
    spw_container_t nodev = *c;
    nodev.ngpus = 0;
    char **cdi = spw_container_podman_argv(c, 1), **dev = spw_container_podman_argv(&nodev, 0);
    add_set(s, cdi, 1);
    spw_strbuf_add(s, "; else\n");
    /* Device nodes: the job's GPUs and the control nodes, those that exist. */
    spw_strbuf_add(s, "for d in");
    for (size_t g = 0; c->gpus && g < c->ngpus; g++)
        spw_strbuf_printf(s, " /dev/nvidia%u", c->gpus[g]);
    spw_strbuf_add(s, c->ngpus ? " /dev/nvidiactl /dev/nvidia-uvm" : "");
    spw_strbuf_add(s, "; do [ -e \"$d\" ] && PL=\"$PL --device=$d\"; done\n");
    add_set(s, dev, 1);
    spw_strbuf_add(s, "; fi\nelse\n");
    spw_container_argv_free(cdi);
    spw_container_argv_free(dev);
    if (c->image_fn)
        spw_strbuf_add(s, c->image_fn);
    else
        spw_strbuf_add(s, "spw_image() { echo \"this backend keeps no image cache here\"; return 1; }\n");
    spw_strbuf_add(s,
        "[ \"$IK\" != ref ] || die \"image $IMG is a registry reference, which needs podman on this"
        " host (not installed); give an unpacked root filesystem or an OCI archive to run it under"
        " bubblewrap\"\n"
        "[ -n \"$BW\" ] || die \"the job names image $IMG, but this host has neither podman nor"
        " bubblewrap (bwrap) to run it\"\n"
        "if [ \"$IK\" = archive ]; then UR=$(spw_image \"$IF\") || die \"$UR\"; IMG=$UR; fi\n"
        "q() { printf \"'\"; printf %s \"$1\" | sed \"s/'/'\\\\\\\\''/g\"; printf \"' \"; }\n"
        "A=\"$(q \"$BW\")--tmpfs / --proc /proc --dev /dev --tmpfs /tmp --unshare-pid --die-with-parent\"\n"
        "for e in \"$IMG\"/*; do b=${e##*/}; case $b in proc|dev|tmp) continue;; esac;"
        " if [ -L \"$e\" ]; then A=\"$A --symlink $(q \"$(readlink \"$e\")\")$(q \"/$b\")\";"
        " else A=\"$A --ro-bind $(q \"$e\")$(q \"/$b\")\"; fi; done\n"
        "for d in /dev/nvidia*; do [ -e \"$d\" ] && A=\"$A --dev-bind $(q \"$d\")$(q \"$d\")\"; done\n"
        "[ -n \"$W\" ] && A=\"$A --bind $(q \"$W\")$(q \"$W\") --chdir $(q \"$W\")\"\n"
        "[ -n \"$CK\" ] && A=\"$A --bind $(q \"$CK\")$(q \"$CK\")\"\n"
        "eval \"set -- $A -- \\\"\\$@\\\"\"\n"
        "fi\n");
}
