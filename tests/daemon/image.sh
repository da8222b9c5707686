#!/bin/sh
# image.sh: container jobs on the local backend (a default single-host
# config).  A job naming `image:` (--image, or the spec field) runs under
# bubblewrap in a root filesystem the test builds (tests/ssh/mkrootfs: no
# registry): it sees the image's files, not the host's, with its workdir
# and checkpoint directory mounted read-write.  An OCI image archive the
# test writes (two layers, the second with a whiteout) is unpacked once, by
# the daemon's user, into its team's cache (STATE/images/team-ml/sha256-HEX,
# HEX the archive's sha256), read-only to jobs, and run the same way.
# Started as root, with team cv on a user of its own and team nlp on ml's:
# hostile cv and nlp jobs plant a rootfs wherever they can where ml's job
# will look (and the test leaves a job-writable entry there), and ml's job
# still runs the good image.  An archive bomb (100 MB of zeros in a 100 KB archive, and one of
# 1,000 files) is refused with the bound and its config key in the job's
# reason, as is a layer or a manifest whose bytes do not match its digest
# (skopeo and umoci read the archive).  Of a multi-platform archive, the
# image of this host's platform runs; one with none is refused.  The image is
# kept with the job across a daemon restart.  Where podman is installed, a
# registry reference (imported from the test's rootfs as localhost/...: no
# registry) runs under it, rootless as the job's user (whose home is not
# writable: podman's storage goes under the job's TMPDIR), with its GPUs'
# variable and its workdir; without podman it fails at launch with the
# reason, as does a missing image.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if ! command -v bwrap >/dev/null 2>&1; then
    echo "1..0 # skip bubblewrap (bwrap) is not installed (scripts/deps.sh test)"
    exit 0
fi
if ! command -v skopeo >/dev/null 2>&1 || ! command -v umoci >/dev/null 2>&1; then
    echo "1..0 # skip skopeo and umoci (which unpack OCI archives) are not installed (scripts/deps.sh test)"
    exit 0
fi
mkdir -p "$T/img" && chmod 755 "$T/img"
if ! rootfs=$("$ROOT/tests/ssh/mkrootfs" "$T/img/rootfs") || ! bwrap --ro-bind "$rootfs" / --proc /proc \
        --dev /dev /bin/cat /etc/spw-image >/dev/null 2>&1; then
    echo "1..0 # skip bubblewrap cannot start a container on this machine"
    exit 0
fi
chmod -R a+rX "$T/img"
# Started as root, the daemon runs jobs as spillway-job: bubblewrap then
# needs unprivileged user namespaces.
if [ "$(id -u)" = 0 ] && id spillway-job >/dev/null 2>&1 &&
    ! setpriv --reuid="$(id -u spillway-job)" --regid="$(id -g spillway-job)" --clear-groups \
        bwrap --ro-bind "$rootfs" / --proc /proc --dev /dev /bin/cat /etc/spw-image >/dev/null 2>&1; then
    echo "1..0 # skip bubblewrap cannot start a container as an unprivileged user here (user namespaces)"
    exit 0
fi

# An OCI image archive: layer 1 the rootfs, layer 2 adds /etc/layer2 and
# deletes /etc/spw-image with a whiteout.
"$ROOT/tests/ssh/mkociarchive" "$rootfs" "$T/img/image.tar" || { echo "1..0 # skip cannot write an OCI archive (tar, sha256sum)"; exit 0; }
plan 43

# The jobs' TMPDIR (the daemon passes its own on): rootless podman keeps
# the images of a job user without a home under it.
mkdir -p "$T/tmp" && chmod 1777 "$T/tmp"
export TMPDIR="$T/tmp"
mkconfig "$T/serve.yaml" 2 never
# Team nlp shares ml's user (mkconfig's share_run_as: true).
NLP_TOKEN=nlp-secret-token-41b7e0
printf '    - {token: %s, team: nlp}\n' "$NLP_TOKEN" >>"$T/serve.yaml"
# Bounds small enough for the test's bombs, large enough for its image.
printf '  image_max_bytes: 20000000\n  image_max_files: 400\n' >>"$T/serve.yaml"
asroot=
if [ "$(id -u)" = 0 ] && id spillway-job >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
    asroot=1
    printf 'teams:\n  - name: cv\n    run_as: nobody\n' >>"$T/serve.yaml"
fi
start_daemon "$T/serve.yaml" "$T/state"
ok $? "spillway serve starts" || exit 1

# ---- a root filesystem directory, from --image ----------------------------
[ ! -e /etc/spw-image ]
ok $? "the host has no /etc/spw-image (only the image has)"
a=$(submit ml --gpus 1 --name img --image "$rootfs" -- cat /etc/spw-image)
wait_for "$a" succeeded 20
ok $? "a job with --image ROOTFS succeeds"
spw ml logs "$a" >"$T/a.out" 2>&1
[ "$(cat "$T/a.out")" = "spillway test image" ]
ok $? "it read /etc/spw-image from the image: '$(head -c 200 "$T/a.out")'"
[ "$(field "$a" 'd["spec"]["image"]')" = "$rootfs" ]
ok $? "the image is part of its spec"

# ---- a spec file with image:, a workdir and the checkpoint dir ------------
job_dir "$T/work"
cat >"$T/job.yaml" <<EOF
name: spec-img
gpus: 1
image: $rootfs
workdir: $T/work
run: |
  echo "in \$(cat /etc/spw-image)" >result.txt
  echo saved >"\$SPILLWAY_CHECKPOINT_DIR/state"
  cat /etc/hostname 2>&1 || echo no-hostname
EOF
b=$(submit ml "$T/job.yaml")
wait_for "$b" succeeded 20
ok $? "a spec file with image: and a script succeeds"
[ "$(cat "$T/work/result.txt" 2>/dev/null)" = "in spillway test image" ]
ok $? "it wrote into its workdir, mounted read-write: '$(cat "$T/work/result.txt" 2>/dev/null)'"
[ "$(cat "$T/state/checkpoints/team-ml/$b/state" 2>/dev/null)" = saved ]
ok $? "and into its checkpoint directory"
spw ml logs "$b" 2>&1 | grep -q "No such file"
ok $? "the host's /etc/hostname is not visible inside"

# ---- the image is read-only, the rest of the host invisible ---------------
c=$(submit ml --gpus 1 --image "$rootfs" -- /bin/sh -c '(echo x >/etc/x) 2>/dev/null && echo wrote || echo read-only; [ -e /usr/bin/python3 ] && echo host-visible || echo host-hidden')
wait_for "$c" succeeded 20
ok $? "a probe job succeeds"
[ "$(spw ml logs "$c" 2>&1 | tr '\n' ' ')" = "read-only host-hidden " ]
ok $? "the image is read-only and the host's files are hidden: $(spw ml logs "$c" 2>&1 | tr '\n' ' ')"

# ---- an OCI archive: the team's cache, keyed by the archive's sha256 -------
K=$(sha256sum <"$T/img/image.tar" | cut -d' ' -f1)
E=$T/state/images/team-ml/sha256-$K
if [ -n "$asroot" ]; then
    # Team cv (user nobody) knows the archive, so the key: it plants a root
    # filesystem wherever it can where ml's job would look.
    job_dir "$T/cvw"
    h=$(submit cv --gpus 1 --name plant --workdir "$T/cvw" -- sh -c '
        for d in "$1/team-ml/sha256-$2" "$1/team-ml" "$1/team-cv/sha256-$2" "$1/sha256-$2"; do
            mkdir -p "$d/rootfs/etc" 2>/dev/null &&
                echo TROJANED-BY-TEAM-CV >"$d/rootfs/etc/layer2" 2>/dev/null && echo "planted $d"
        done; echo done' plant "$T/state/images" "$K")
    wait_for "$h" succeeded 20 cv
    ok $? "team cv's planting job ran (as nobody)"
    [ "$(spw cv logs "$h" 2>&1)" = done ]
    ok $? "it could plant nothing in the image caches: $(spw cv logs "$h" 2>&1 | tr '\n' ' ')"
    # Team nlp, on ml's own user, plants there too, and where the cache of
    # old was: per uid, under a key computed from the archive's path, size,
    # mtime and inode.
    h2=$(submit "$NLP_TOKEN" --gpus 1 --name plant2 -- sh -c '
        k=$(printf "%s %s" "$1" "$(stat -L -c "%s.%Y.%i" "$1")" | cksum | cut -d" " -f1)
        for d in "${TMPDIR:-/tmp}/spillway-images-$(id -u)/$k" "$2/team-ml/sha256-$3" "$2/team-ml" "$2/sha256-$3"; do
            mkdir -p "$d" 2>/dev/null && cp -R "$4" "$d/rootfs" 2>/dev/null &&
                echo TROJANED-BY-TEAM-NLP >"$d/rootfs/etc/layer2" && echo "planted $d"
        done; echo done' plant "$T/img/image.tar" "$T/state/images" "$K" "$rootfs")
    wait_for "$h2" succeeded 20 "$NLP_TOKEN"
    ok $? "team nlp's planting job ran (as ml's user)"
    ! spw "$NLP_TOKEN" logs "$h2" 2>&1 | grep -q "^planted $T/state"
    ok $? "it could plant nothing in the image caches either: $(spw "$NLP_TOKEN" logs "$h2" 2>&1 | tr '\n' ' ')"
    # And an entry the job's user could write (an older layout or a copy by
    # hand might leave one): never trusted.
    mkdir -p "$E/rootfs/etc" && echo TROJANED-BY-TEAM-CV >"$E/rootfs/etc/layer2" && : >"$E/ok" &&
        chown -R spillway-job "$E"
else
    ok 0 "# SKIP team cv's hostile job needs root (a user per team)"
    ok 0 "# SKIP team cv's hostile job needs root (a user per team)"
    ok 0 "# SKIP team nlp's hostile job needs root"
    ok 0 "# SKIP team nlp's hostile job needs root"
fi
d=$(submit ml --gpus 1 --image "$T/img/image.tar" -- /bin/sh -c 'cat /etc/layer2; cat /etc/spw-image 2>/dev/null || echo whiteout-applied')
wait_for "$d" succeeded 60
ok $? "a job with an OCI archive image succeeds"
[ "$(spw ml logs "$d" 2>&1 | tr '\n' ' ')" = "second layer whiteout-applied " ]
ok $? "both layers applied in order, the whiteout honoured, nothing planted ran: $(spw ml logs "$d" 2>&1 | tr '\n' ' ' | head -c 300)"
# What nlp planted where the cache of old was: its own key, nobody else's.
[ -n "$asroot" ] && spw "$NLP_TOKEN" logs "$h2" 2>&1 | sed -n 's,^planted \(.*/spillway-images-[0-9]*/[0-9]*\)$,\1,p' |
    while read -r old; do rm -rf "$old"; done
[ -f "$E/rootfs/etc/layer2" ] && [ "$(stat -c %u "$E" "$E/ok" "$E/rootfs" "$E/rootfs/etc/layer2" | sort -u)" = "$(id -u)" ] &&
    [ -z "$(find "$E" ! -type l -perm /022)" ]
ok $? "it was unpacked into team ml's cache under the archive's sha256, the daemon's user's, writable by no one else" ||
    diag "$(ls -lna "$E" "$E/rootfs" 2>&1)"
e=$(submit ml --gpus 1 --image "oci-archive:$T/img/image.tar" -- cat /etc/layer2)
wait_for "$e" succeeded 30
ok $? "oci-archive:PATH runs the same image"
[ "$(ls -A "$T/state/images/team-ml")" = "sha256-$K" ]
ok $? "it was unpacked once, and nothing else is left in the cache: $(ls -A "$T/state/images/team-ml" | tr '\n' ' ')"
if [ -n "$asroot" ]; then
    w=$(submit ml --gpus 1 -- sh -c 'echo x >"$1/rootfs/etc/layer2" 2>/dev/null && echo wrote-entry
        mkdir "$1/../sha256-x" 2>/dev/null && echo wrote-cache; echo checked' w "$E")
    wait_for "$w" succeeded 20
    [ "$(spw ml logs --stdout "$w" 2>&1)" = checked ] && [ "$(cat "$E/rootfs/etc/layer2")" = "second layer" ]
    ok $? "a job of ml cannot write its own team's cache: $(spw ml logs "$w" 2>&1 | tr '\n' ' ')"
    c2=$(submit cv --gpus 1 --image "$T/img/image.tar" -- cat /etc/layer2)
    wait_for "$c2" succeeded 30 cv
    [ "$(spw cv logs "$c2" 2>&1)" = "second layer" ] && [ -d "$T/state/images/team-cv/sha256-$K/rootfs" ]
    ok $? "team cv's job on the same archive runs from cv's own cache"
else
    ok 0 "# SKIP jobs run as the daemon's user (not root): they could write its files"
    ok 0 "# SKIP no team user"
fi

# ---- archive bombs, altered blobs, platforms --------------------------------
# Multi-platform archives (skopeo picks linux/ARCH, ARCH this host's as Go
# names it): index.json lists another platform's image first, then this
# host's; nested, index.json names an index that lists them (skopeo copy
# --all); and one with no image for this host.
case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
other=arm64
[ "$arch" != arm64 ] || other=amd64
"$ROOT/tests/ssh/mkbadoci" bytes "$T/img/big.tar" 100 && "$ROOT/tests/ssh/mkbadoci" files "$T/img/many.tar" 1000 &&
    "$ROOT/tests/ssh/mkbadoci" altered "$T/img/altered.tar" "$T/img/image.tar" &&
    "$ROOT/tests/ssh/mkbadoci" manifest "$T/img/manifest.tar" "$T/img/image.tar" &&
    SPW_OCI_PLATFORMS="$other $arch" "$ROOT/tests/ssh/mkociarchive" "$rootfs" "$T/img/multi.tar" &&
    "$ROOT/tests/ssh/mkbadoci" nested "$T/img/nested.tar" "$T/img/multi.tar" &&
    "$ROOT/tests/ssh/mkbadoci" first "$T/img/foreign.tar" "$T/img/multi.tar"
[ "$(wc -c <"$T/img/big.tar")" -lt 1000000 ]
ok $? "a 100 MB archive bomb weighs $(wc -c <"$T/img/big.tar") bytes"
# All at once (the node runs two at a time).
rb=$(submit ml --gpus 1 --image "$T/img/big.tar" -- true)
rn=$(submit ml --gpus 1 --image "$T/img/many.tar" -- true)
ra=$(submit ml --gpus 1 --image "$T/img/altered.tar" -- true)
rmn=$(submit ml --gpus 1 --image "$T/img/manifest.tar" -- true)
rf=$(submit ml --gpus 1 --image "$T/img/foreign.tar" -- true)
mp=$(submit ml --gpus 1 --image "$T/img/multi.tar" -- cat /etc/platform /etc/layer2)
np=$(submit ml --gpus 1 --image "oci-archive:$T/img/nested.tar" -- cat /etc/platform)
# refused JOB WHAT PATTERN: JOB fails (check "WHAT fails"), with a reason
# that matches PATTERN (check "with the reason").
refused() {
    wait_for "$1" failed 60
    ok $? "$2 fails"
    field "$1" 'd["reason"]' | grep -q "$3"
    ok $? "with the reason: $(field "$1" 'd["reason"]')"
}
# refused_now IMAGE WHAT PATTERN: the same for a job of ml on IMAGE.
refused_now() {
    refused "$(submit ml --gpus 1 --image "$1" -- true)" "$2" "$3"
}
refused "$rb" "a job on it" "unpacks to more than 20000000 bytes (daemon.image_max_bytes): raise"
refused "$rn" "a job on an archive of 1,000 files" \
    "unpacks to more than 400 files (daemon.image_max_files): raise"
# The image's second layer rewritten, under its old digest.
refused "$ra" "a job on an archive whose layer does not match its digest" \
    "the layer sha256:[0-9a-f]\{12\} of the OCI archive does not match its digest"
# Its manifest rewritten (one layer dropped), under its old digest.
refused "$rmn" "a job on an archive whose manifest does not match its digest" \
    "the manifest sha256:[0-9a-f]\{12\} of the OCI archive does not match its digest"
refused "$rf" "a job on an archive with only a linux/$other image" \
    "the OCI archive has no image for this host's platform, linux/$arch"
wait_for "$mp" succeeded 60 && [ "$(spw ml logs "$mp" 2>&1 | tr '\n' ' ')" = "$arch second layer " ]
ok $? "a multi-platform archive ($other first) runs its linux/$arch image: $(spw ml logs "$mp" 2>&1 | tr '\n' ' ' | head -c 200) $(field "$mp" 'd["reason"]')"
wait_for "$np" succeeded 60 && [ "$(spw ml logs "$np" 2>&1)" = "$arch" ]
ok $? "and one whose index.json names a nested index: $(spw ml logs "$np" 2>&1 | head -c 200) $(field "$np" 'd["reason"]')"
KM=$(sha256sum <"$T/img/multi.tar" | cut -d' ' -f1) KN=$(sha256sum <"$T/img/nested.tar" | cut -d' ' -f1)
[ "$(ls -A "$T/state/images/team-ml" | sort)" = "$(printf 'sha256-%s\n' "$K" "$KM" "$KN" | sort)" ]
ok $? "the refused ones left nothing in the cache, beside the three that ran: $(ls -A "$T/state/images/team-ml" | tr '\n' ' ')"

# ---- what cannot run fails with the reason ----------------------------------
if command -v podman >/dev/null 2>&1; then
    # The image goes where the job's podman will look: rootless as the
    # job's user, its storage in $TMPDIR/spillway-podman-UID (the job's
    # user has no home), or root's own.
    ju=$(id -u) jg=$(id -g) asj=
    [ -n "$asroot" ] && ju=$(id -u spillway-job) jg=$(id -g spillway-job) &&
        asj="setpriv --reuid=$ju --regid=$jg --clear-groups"
    ph=$TMPDIR/spillway-podman-$ju
    if [ "$ju" != 0 ] && ! { [ -d "${HOME:-/nonexistent}" ] && [ -w "$HOME" ] && [ -z "$asj" ]; }; then
        $asj mkdir -m 700 "$ph" && pe="HOME=$ph"
    else
        pe="HOME=${HOME:-/root}"
    fi
    tar -C "$rootfs" -c . | $asj env "$pe" podman import --change 'CMD ["/bin/sh"]' - localhost/spw-test:1 >"$T/import.log" 2>&1 ||
        diag "podman import: $(tail -n 3 "$T/import.log")"
    job_dir "$T/pw"
    p=$(submit ml --gpus 1 --image localhost/spw-test:1 --workdir "$T/pw" -- /bin/sh -c \
        'cat /etc/spw-image; echo "pwd=$(pwd) gpus=$CUDA_VISIBLE_DEVICES"; echo made >made.txt')
    wait_for "$p" succeeded 60
    ok $? "a registry reference runs under podman (runc, cgroupfs, the daemon's limits)" ||
        diag "$(field "$p" 'd["reason"]') $(spw ml logs "$p" 2>&1 | tail -n 5)"
    spw ml logs --stdout "$p" >"$T/p.out" 2>&1
    # One of the node's 2 GPU slots.
    [ "$(sed -n 1p "$T/p.out")" = "spillway test image" ] && sed -n 2p "$T/p.out" | grep -qx "pwd=$T/pw gpus=[01]" &&
        [ "$(wc -l <"$T/p.out")" = 2 ]
    ok $? "it saw the image's files, in its workdir, with its GPU's variable: $(tr '\n' ' ' <"$T/p.out" | head -c 300)"
    [ "$(stat -c %u "$T/pw/made.txt" 2>/dev/null)" = "$ju" ]
    ok $? "what it wrote in its workdir is the job's user's ($ju): $(stat -c '%U %u' "$T/pw/made.txt" 2>&1)"
    $asj env "$pe" podman rmi -f localhost/spw-test:1 >/dev/null 2>&1
    # Rootless podman leaves a pause process holding the user's namespace.
    pp=$(cat "$TMPDIR/podman-run-$ju/libpod/tmp/pause.pid" 2>/dev/null) && kill "$pp" 2>/dev/null
else
    refused_now docker.io/library/busybox:1.36 "a registry reference on a host without podman" \
        "registry reference, which needs podman"
    ok 0 "# SKIP podman is not installed (scripts/deps.sh test)"
fi
refused_now "$T/img/nope" "a missing image" "nope: No such file or directory"

# ---- kept across a restart --------------------------------------------------
stop_daemon
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon restarts on the same state"
[ "$(field "$a" 'd["spec"]["image"]')" = "$rootfs" ]
ok $? "the job's image is still in its spec"
