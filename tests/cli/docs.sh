#!/bin/sh
# docs.sh: the commands README.md and docs/*.md show with their output
# ("$ spillway ..." then what it printed, in a fenced block) are run, and
# what they print now is compared with what the doc shows.  Only offline
# commands (no daemon) whose files are in the repository or under
# tests/cli/docs/DOC/ (the docs' own bad.yaml and the like) are run.
# - The shell lines a block shows before its command ("$ cp ...", "$ printf
#   ...") run first, as the doc's reader would run them.  Everything runs in
#   a copy of the repository root made of links (examples/ a directory of
#   links, so what a doc writes there stays in the copy; ../shared beside
#   it), never in the tree itself.
# - A block whose command the doc does not show (README's `./dev.sh demo`
#   output) names it in a comment just above the fence:
#   <!-- docs.sh: spillway demo -->.
# - A doc may show an excerpt: its lines must come, in order, among what the
#   command prints; "..." alone skips, a line ending in "..." is a prefix.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"

/usr/bin/python3 - "$SPW" "$T" >"$T/docs.tap" 2>&1 <<'PY'
import glob, os, re, shlex, subprocess, sys
spw, tmp = sys.argv[1], sys.argv[2]
root = os.getcwd()
fixtures_root = "tests/cli/docs"
offline = {"sim", "plan", "gen", "policy", "demo", "--help", "help", "--version", "version"}
spw_cmd = re.compile(r"\$ spillway ")
shell_cmd = re.compile(r"\$ (cp|printf|echo|mkdir|sed) ")   # the preparations a doc shows
marker = re.compile(r"<!-- docs\.sh: (spillway .*) -->")

# The copy of the repository root the commands run in.
ws = os.path.join(tmp, "w")
os.mkdir(ws)
for e in os.listdir(root):
    if e == "examples":
        os.mkdir(os.path.join(ws, e))
        for f in os.listdir(os.path.join(root, e)):
            os.symlink(os.path.join(root, e, f), os.path.join(ws, e, f))
    else:
        os.symlink(os.path.join(root, e), os.path.join(ws, e))
if os.path.isdir(os.path.join(root, "..", "shared")):
    os.symlink(os.path.realpath(os.path.join(root, "..", "shared")), os.path.join(tmp, "shared"))

def blocks(lines):
    """Yields (line number, [(command, line number)], output lines, shell lines) per
    command shown with its output."""
    fence, cmdline, i = False, None, 0
    while i < len(lines):
        line = lines[i]
        m = marker.match(line)
        if not fence and m and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            cmdline = m.group(1)
            i += 1
            continue
        if line.startswith("```"):
            fence = not fence
            i += 1
            if fence and cmdline:
                start, out = i, []
                while i < len(lines) and not lines[i].startswith("```"):
                    out.append(lines[i])
                    i += 1
                yield start, cmdline, out, []
                cmdline = None
            continue
        if not fence:
            i += 1
            continue
        shells = []
        while i < len(lines) and shell_cmd.match(lines[i]):
            shells.append(lines[i][2:])
            i += 1
        if i >= len(lines) or not spw_cmd.match(lines[i]):
            i += 1
            continue
        start = i + 1
        cmd = lines[i][2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("```") and \
                not spw_cmd.match(lines[i]) and not shell_cmd.match(lines[i]):
            out.append(lines[i])
            i += 1
        yield start, cmd, out, shells

n = 0
for doc in ["README.md"] + sorted(glob.glob("docs/*.md")):
    lines = open(doc).read().split("\n")
    fixtures = os.path.join(fixtures_root, os.path.splitext(os.path.basename(doc))[0])
    for start, cmd, out, shells in blocks(lines):
        cmd = re.sub(r"\s+#.*$", "", cmd)
        if not out:
            continue                      # a command shown without its output
        argv = shlex.split(cmd)
        if argv[1] not in offline:
            continue
        for sh in shells:
            subprocess.run(["/bin/sh", "-c", sh], cwd=ws, capture_output=True)
        # Files named: from the repository (or what the doc's shell lines
        # made), else the doc's own under tests/cli/docs/.
        run = [spw]
        missing = None
        for a in argv[1:]:
            if re.search(r"\.(ya?ml|csv)$", a):
                if os.path.exists(os.path.join(ws, a)):
                    run.append(a)
                elif os.path.exists(os.path.join(fixtures, a)):
                    run.append(os.path.join(fixtures, a))
                else:
                    missing = a
                    break
            else:
                run.append(a)
        if missing:
            continue
        n += 1
        # One stream for both, as on a terminal (a warning before the table).
        p = subprocess.run(run, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ws)
        got = p.stdout.rstrip("\n").split("\n")
        # The doc names fixtures by their bare names.
        got = [g.replace(fixtures + "/", "") for g in got]
        want = [l.rstrip() for l in out if l.strip() and l.strip() != "..." and
                not re.match(r"\s*\(simulated in ", l)]
        have = [l.rstrip() for l in got]
        def same(w, h):
            return h.startswith(w[:-3]) if w.endswith("...") else h == w
        k = 0
        for l in have:
            if k < len(want) and same(want[k], l):
                k += 1
        ok = k == len(want)
        print("%s %d - %s:%d: %s" % ("ok" if ok else "not ok", n, doc, start, cmd))
        if not ok:
            print("# the doc shows: %s\n# not printed now; it prints:\n#   %s" %
                  (want[k], "\n#   ".join(have[:40])))
print("1..%d" % n)
PY
cat "$T/docs.tap"
