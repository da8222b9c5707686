#!/bin/sh
# gen-man.sh SPILLWAY OUT: writes the man page spillway(1) to OUT from the
# help texts of SPILLWAY (spillway --help, and each command's --help), so
# that the page says what the program says.
set -e
spw=$1 out=$2
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
{
    echo ".TH SPILLWAY 1 \"\" \"spillway $("$spw" --version | sed 's/^spillway //')\" \"User Commands\""
    echo ".SH NAME"
    printf '%s\n' 'spillway \- one queue over on-prem GPU clusters and the clouds'
    echo ".SH SYNOPSIS"
    echo ".B spillway"
    printf '%s\n' '\fICOMMAND\fR [\fIOPTIONS\fR]'
    echo ".SH DESCRIPTION"
    echo ".nf"
    "$spw" --help | esc
    echo ".fi"
    for c in sim plan gen demo serve policy submit queue show cancel explain logs context pools costs audit instances admin slurm; do
        echo ".SH \"spillway $c\""
        echo ".nf"
        "$spw" "$c" --help 2>&1 | esc
        echo ".fi"
    done
    echo ".SH FILES"
    echo ".TP"
    echo "/etc/spillway/spillway.yaml"
    echo "the daemon's config when serve is given no --config"
    echo ".TP"
    echo "~/.config/spillway/config.yaml"
    echo "the client's contexts (spillway context)"
    echo ".SH SEE ALSO"
    echo "docs/install.md, docs/daemon.md, docs/config.md"
} >"$out"
