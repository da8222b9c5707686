#!/bin/sh
# install.sh: `make install DESTDIR=... PREFIX=/usr` puts the binary, the
# man page (made from the help texts), the systemd unit (naming the
# installed binary, hardened) and the shell completions in place, and the
# installed binary runs; serve without --config reads the service's config.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"
plan 5

make --no-print-directory -s install DESTDIR="$T/root" PREFIX=/usr >"$T/make.out" 2>&1
ok $? "make install DESTDIR=\$T/root PREFIX=/usr" || diag "$(tail -20 "$T/make.out")"
r=$T/root/usr
[ -x "$r/bin/spillway" ] && [ "$("$r/bin/spillway" --version)" = "$("$SPW" --version)" ] &&
    [ -f "$r/share/bash-completion/completions/spillway" ] && [ -f "$r/share/zsh/site-functions/_spillway" ]
ok $? "the binary runs from its new place; bash and zsh completion are installed"
u=$r/lib/systemd/system/spillway.service
grep -q "^ExecStart=/usr/bin/spillway serve --config /etc/spillway/spillway.yaml" "$u" &&
    grep -q "^ProtectSystem=strict" "$u" && grep -q "^StateDirectory=spillway" "$u"
ok $? "the unit starts the installed binary with the service's config, hardened"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$r/share/man/man1/spillway.1" 2>/dev/null >"$T/man.txt"
    grep -q "spillway - one queue" "$T/man.txt" && grep -q "usage: spillway submit" "$T/man.txt"
    ok $? "man spillway shows the program's and each command's help"
else
    grep -q '^\.SH "spillway submit"' "$r/share/man/man1/spillway.1"
    ok $? "the man page has each command's help (no man(1) here to render it)"
fi
printf 'daemon:\n  lisen: x\n' >"$T/etc.yaml"
SPILLWAY_SERVE_CONFIG=$T/etc.yaml "$SPW" serve --state-dir "$T/st" >"$T/serve.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && contains "$T/serve.out" "no --config: using $T/etc.yaml" &&
    contains "$T/serve.out" "did you mean 'listen'"
ok $? "serve without --config reads the service's config (\$SPILLWAY_SERVE_CONFIG here for /etc/spillway/spillway.yaml)"
done_testing
