#!/bin/sh
# dev.sh: the two commands a newcomer needs on a fresh Debian 12 machine.
#
#   ./dev.sh demo    install what is missing, build, run the demo on the embedded defaults
#   ./dev.sh check   install what is missing, build, run every test (prove)
#
# Missing Debian packages are installed when run as root; otherwise the exact
# apt-get line is printed.  Any other make target works too (./dev.sh bench).
set -e
cd "$(dirname "$0")"
target=${1:-demo}
shift 2>/dev/null || true
case $target in
check|san|valgrind) level=test ;;
fuzz) level=fuzz ;;
*) level=build ;;
esac
sh scripts/deps.sh "$level"
exec make --no-print-directory "$target" "$@"
