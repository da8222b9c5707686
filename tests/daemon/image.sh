#!/bin/sh
# image.sh: container jobs on the local backend (a default single-host
# config).  A job naming `image:` (--image, or the spec field) runs under
# bubblewrap in a root filesystem the test builds (tests/ssh/mkrootfs: no
# registry): it sees the image's files, not the host's, with its workdir
# and checkpoint directory mounted read-write.  An OCI image archive the
# test writes (two layers, the second with a whiteout) is unpacked once
# into a cache and run the same way.  The image is kept with the job across
# a daemon restart.  A registry reference on a host without podman, and a
# missing image, fail at launch with the reason.
# shellcheck source=tests/daemon/daemon-lib
. "$(dirname "$0")/daemon-lib"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if ! command -v bwrap >/dev/null 2>&1; then
    echo "1..0 # skip bubblewrap (bwrap) is not installed (scripts/deps.sh test)"
    exit 0
fi
if command -v podman >/dev/null 2>&1; then
    echo "1..0 # skip podman is installed: images would run under it (tested on its command line in tests/backends/test_container)"
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
plan 21

mkconfig "$T/serve.yaml" 2 never
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

# ---- an OCI archive ---------------------------------------------------------
job_dir "$T/cachep"
d=$(submit ml --gpus 1 --env SPILLWAY_IMAGE_CACHE="$T/cachep/c" --image "$T/img/image.tar" -- /bin/sh -c 'cat /etc/layer2; cat /etc/spw-image 2>/dev/null || echo whiteout-applied')
wait_for "$d" succeeded 60
ok $? "a job with an OCI archive image succeeds"
[ "$(spw ml logs "$d" 2>&1 | tr '\n' ' ')" = "second layer whiteout-applied " ]
ok $? "both layers applied in order, the whiteout honoured: $(spw ml logs "$d" 2>&1 | tr '\n' ' ' | head -c 300)"
e=$(submit ml --gpus 1 --env SPILLWAY_IMAGE_CACHE="$T/cachep/c" --image "oci-archive:$T/img/image.tar" -- cat /etc/layer2)
wait_for "$e" succeeded 30
ok $? "oci-archive:PATH runs the same image"
[ "$(ls -d "$T"/cachep/c/*/rootfs 2>/dev/null | wc -l)" = 1 ]
ok $? "it was unpacked once, into the image cache (SPILLWAY_IMAGE_CACHE)"

# ---- what cannot run fails with the reason ----------------------------------
f=$(submit ml --gpus 1 --image docker.io/library/busybox:1.36 -- true)
wait_for "$f" failed 20
ok $? "a registry reference on a host without podman fails"
field "$f" 'd["reason"]' | grep -q "registry reference, which needs podman"
ok $? "with the reason: $(field "$f" 'd["reason"]')"
g=$(submit ml --gpus 1 --image "$T/img/nope" -- true)
wait_for "$g" failed 20
ok $? "a missing image fails"
field "$g" 'd["reason"]' | grep -q "nope: No such file or directory"
ok $? "with the reason: $(field "$g" 'd["reason"]')"

# ---- kept across a restart --------------------------------------------------
stop_daemon
start_daemon "$T/serve.yaml" "$T/state"
ok $? "the daemon restarts on the same state"
[ "$(field "$a" 'd["spec"]["image"]')" = "$rootfs" ]
ok $? "the job's image is still in its spec"
