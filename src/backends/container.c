/* container.c: the shell fragment and the podman command line that run a
 * job in a container image, for the local and ssh backends (container.h). */
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

static void add_set(spw_strbuf_t *s, char **argv)
{
    spw_strbuf_add(s, "set --");
    for (char **a = argv; *a; a++) {
        spw_strbuf_add(s, " ");
        spw_strbuf_quote(s, *a);
    }
    spw_strbuf_add(s, " \"$@\"");
}

/* spw_unpack ARCHIVE CACHE: unpacks an OCI image archive once into
 * CACHE/KEY/rootfs (KEY from its path, size, mtime and inode) and prints
 * that path; or prints why not and fails.  CACHE must be the unpacking
 * user's own (the job's: see spw_container_wrap); it is made 0711.  Layers are applied in the
 * manifest's order; a whiteout (.wh.NAME) removes NAME of the layers below
 * and an opaque one (.wh..wh..opq) empties its directory first, never
 * outside the root filesystem.  A multi-platform index takes its first
 * manifest.  The archive is trusted like the job's own code, and unpacked
 * with its rights only. */
static const char unpack_fn[] =
    "spw_unpack() {\n"
    "  uf=$1; uc=$2\n"
    "  uk=$(printf '%s %s' \"$uf\" \"$(stat -L -c '%s.%Y.%i' \"$uf\")\" | cksum | cut -d' ' -f1)\n"
    "  [ -d \"$uc/$uk/rootfs\" ] && { echo \"$uc/$uk/rootfs\"; return 0; }\n"
    "  mkdir -p \"$uc\" 2>/dev/null; chmod 711 \"$uc\" 2>/dev/null\n"
    "  [ -d \"$uc\" ] && [ -O \"$uc\" ] && [ ! -L \"$uc\" ] ||"
    " { echo \"cache directory $uc is missing or not this user's own\"; return 1; }\n"
    "  ut=$uc/.tmp.$$; rm -rf \"$ut\"; mkdir \"$ut\" \"$ut/oci\" \"$ut/rootfs\" ||"
    " { echo \"cannot write $uc\"; return 1; }\n"
    "  uerr() { echo \"$*\"; rm -rf \"$ut\"; return 1; }\n"
    "  tar -xf \"$uf\" -C \"$ut/oci\" 2>\"$ut/log\" || { uerr \"tar: $(head -c 200 \"$ut/log\")\"; return 1; }\n"
    "  ub=$ut/oci/blobs/sha256\n"
    "  udig() { tr -d ' \\t\\r\\n' | grep -o '\"digest\":\"sha256:[0-9a-f]*\"' | sed 's/.*sha256://; s/\"$//'; }\n"
    "  [ -f \"$ut/oci/index.json\" ] || { uerr \"no index.json: not an OCI image archive\"; return 1; }\n"
    "  um=$(udig <\"$ut/oci/index.json\" | head -n 1)\n"
    "  [ -n \"$um\" ] && [ -f \"$ub/$um\" ] || { uerr \"index.json names no manifest in the archive\"; return 1; }\n"
    "  if tr -d ' \\t\\r\\n' <\"$ub/$um\" | grep -q '\"manifests\":'; then um=$(udig <\"$ub/$um\" | head -n 1);"
    " [ -n \"$um\" ] && [ -f \"$ub/$um\" ] || { uerr \"the image index names no manifest in the archive\"; return 1; }; fi\n"
    "  ul=$(tr -d ' \\t\\r\\n' <\"$ub/$um\" | sed -n 's/.*\"layers\":\\[\\([^]]*\\)\\].*/\\1/p' | udig)\n"
    "  ur=$ut/rootfs\n"
    "  for l in $ul; do\n"
    "    [ -f \"$ub/$l\" ] || { uerr \"layer $l is not in the archive\"; return 1; }\n"
    "    tar -tf \"$ub/$l\" >\"$ut/list\" 2>\"$ut/log\" || { uerr \"tar: $(head -c 200 \"$ut/log\")\"; return 1; }\n"
    "    while IFS= read -r p; do p=${p#./}; n=${p##*/}; pd=${p%\"$n\"}\n"
    "      case $n in .wh.*) ;; *) continue;; esac\n"
    "      x=$(realpath -m \"$ur/$pd\"); case $x in \"$ur\"|\"$ur\"/*) ;; *) continue;; esac\n"
    "      if [ \"$n\" = .wh..wh..opq ]; then find \"$x\" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null;"
    " else rm -rf \"$x/${n#.wh.}\"; fi\n"
    "    done <\"$ut/list\"\n"
    "    tar -xf \"$ub/$l\" -C \"$ur\" --exclude='.wh.*' 2>\"$ut/log\" ||"
    " { uerr \"tar: $(head -c 200 \"$ut/log\")\"; return 1; }\n"
    "  done\n"
    "  mkdir -p \"$ur/proc\" \"$ur/dev\" \"$ur/tmp\"; rm -rf \"$ut/oci\" \"$ut/list\" \"$ut/log\"\n"
    "  mv -T \"$ut\" \"$uc/$uk\" 2>/dev/null || rm -rf \"$ut\"\n"
    "  [ -d \"$uc/$uk/rootfs\" ] || { echo \"cannot move it into $uc\"; return 1; }\n"
    "  echo \"$uc/$uk/rootfs\"\n"
    "}\n";

void spw_container_wrap(spw_strbuf_t *s, const spw_container_t *c)
{
    spw_strbuf_add(s, "IMG=");
    spw_strbuf_quote(s, c->image);
    spw_strbuf_add(s, "; W=");
    spw_strbuf_quote(s, c->workdir ? c->workdir : "");
    spw_strbuf_add(s, "; CK=");
    spw_strbuf_quote(s, c->ckpt ? c->ckpt : "");
    spw_strbuf_printf(s, "; IC=%s\n", c->cache_dir ? c->cache_dir
                      : "\"${SPILLWAY_IMAGE_CACHE:-${TMPDIR:-/tmp}/spillway-images-"
                        "${SPW_JOB_UID:-$(id -u)}}\"");
    spw_strbuf_add(s,
        "case $IMG in\n"
        "oci-archive:*) IK=archive; IF=${IMG#oci-archive:};;\n"
        "/*) if [ -d \"$IMG\" ]; then IK=dir; elif [ -f \"$IMG\" ]; then IK=archive; IF=$IMG;"
        " else die \"image $IMG is neither a directory (an unpacked root filesystem) nor a file"
        " (an OCI archive) on this host\"; fi;;\n"
        "*) IK=ref;;\n"
        "esac\n"
        "[ \"$IK\" != archive ] || [ -f \"$IF\" ] || die \"image archive $IF is not a file on this host\"\n"
        "if [ \"$IK\" != dir ] && command -v podman >/dev/null 2>&1; then\n"
        "if grep -qs nvidia.com/gpu /etc/cdi/* /var/run/cdi/*; then ");
    char **cdi = spw_container_podman_argv(c, 1), **dev = spw_container_podman_argv(c, 0);
    add_set(s, cdi);
    spw_strbuf_add(s, "; else ");
    add_set(s, dev);
    spw_strbuf_add(s, "; fi\nelse\n");
    spw_container_argv_free(cdi);
    spw_container_argv_free(dev);
    /* The unpacking function, defined here and, for a job of another
     * user, run as that user in a shell of its own. */
    spw_strbuf_add(s, "UF=");
    spw_strbuf_quote(s, unpack_fn);
    spw_strbuf_add(s, "\neval \"$UF\"\n"
        "if [ -n \"${SPW_JOB_UID:-}\" ] && [ \"$(id -u)\" != \"$SPW_JOB_UID\" ]; then\n"
        "  spw_unpack_as() { setpriv --reuid=\"$SPW_JOB_UID\" --regid=\"$SPW_JOB_GID\""
        " --clear-groups -- /bin/sh -c \"$UF\"'\nspw_unpack \"$1\" \"$2\"' spw-unpack \"$@\"; }\n"
        "else spw_unpack_as() { spw_unpack \"$@\"; }; fi\n");
    spw_strbuf_add(s,
        "[ \"$IK\" != ref ] || die \"image $IMG is a registry reference, which needs podman on this"
        " host (not installed); give an unpacked root filesystem or an OCI archive to run it under"
        " bubblewrap\"\n"
        "BW=$(command -v bwrap 2>/dev/null) || BW=/usr/bin/bwrap\n"
        "[ -x \"$BW\" ] || die \"the job names image $IMG, but this host has neither podman nor"
        " bubblewrap (bwrap) to run it\"\n"
        "if [ \"$IK\" = archive ]; then UR=$(spw_unpack_as \"$IF\" \"$IC\") || die \"cannot unpack the"
        " OCI archive $IF: $UR\"; IMG=$UR; fi\n"
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
