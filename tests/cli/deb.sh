#!/bin/sh
# deb.sh: `make deb` builds a Debian package of the tree; dpkg installs it
# into a scratch root (dpkg --root, the maintainer scripts run against it),
# the files, the spillway-job user and the installed binary and man page
# are checked, and dpkg --purge removes it all again.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
for tool in dpkg dpkg-deb useradd; do
    command -v $tool >/dev/null 2>&1 || { echo "1..0 # skip no $tool"; exit 0; }
done
plan 5

make --no-print-directory -s deb >"$T/make.out" 2>&1
deb=$(ls build/spillway_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] && dpkg-deb --info "$deb" | grep -q "Package: spillway"
ok $? "make deb builds $deb" || diag "$(tail -20 "$T/make.out")"

# A root of its own: dpkg's database and the account files useradd edits.
R=$T/root
mkdir -p "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/info" "$R/etc"
: >"$R/var/lib/dpkg/status"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
printf 'root:*:19000:0:99999:7:::\n' >"$R/etc/shadow"
printf 'root:*::\n' >"$R/etc/gshadow"
dpk() { dpkg --root="$R" --force-script-chrootless --force-depends --force-not-root "$@"; }
dpk -i "$deb" >"$T/dpkg.out" 2>&1
ok $? "dpkg -i installs it (its postinst run against the root)" || diag "$(cat "$T/dpkg.out")"
[ -x "$R/usr/bin/spillway" ] && [ -f "$R/lib/systemd/system/spillway.service" ] &&
    [ -f "$R/usr/share/man/man1/spillway.1" ] && grep -q '^spillway-job:x:[0-9]*:' "$R/etc/passwd" &&
    [ -d "$R/etc/spillway" ] && [ -d "$R/var/lib/spillway" ]
ok $? "binary, unit, man page, /etc/spillway, /var/lib/spillway and the spillway-job user are there"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$R/usr/share/man/man1/spillway.1" 2>/dev/null >"$T/man.txt"
else
    cp "$R/usr/share/man/man1/spillway.1" "$T/man.txt"   # no man(1) to render it
fi
"$R/usr/bin/spillway" --version | grep -q "^spillway " && grep -q "usage: spillway submit" "$T/man.txt"
ok $? "the installed spillway --version runs and its man page reads"
dpk --purge spillway >"$T/purge.out" 2>&1
[ ! -e "$R/usr/bin/spillway" ] && [ ! -e "$R/etc/spillway" ] && ! grep -q '^spillway-job:' "$R/etc/passwd"
ok $? "dpkg --purge removes the files, the config directory and the user" || diag "$(cat "$T/purge.out")"
done_testing
