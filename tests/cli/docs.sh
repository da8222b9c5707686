#!/bin/sh
# docs.sh: the commands README.md and docs/*.md show with their output
# ("$ spillway ..." then what it printed, in a fenced block) are run, and
# what they print now is compared with what the doc shows.  Only offline
# commands (no daemon) whose files are in the repository or under
# tests/cli/docs/ (the docs' own bad.yaml and the like) are run.
# shellcheck source=tests/cli/tap-lib
. "$(dirname "$0")/tap-lib"

/usr/bin/python3 - "$SPW" "$T" >"$T/docs.tap" 2>&1 <<'PY'
import glob, os, re, shlex, subprocess, sys
spw, tmp = sys.argv[1], sys.argv[2]
fixtures_root = "tests/cli/docs"
offline = {"sim", "plan", "gen", "policy", "--help", "help", "--version", "version"}
n = 0
for doc in ["README.md"] + sorted(glob.glob("docs/*.md")):
    lines = open(doc).read().split("\n")
    fixtures = os.path.join(fixtures_root, os.path.splitext(os.path.basename(doc))[0])
    fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fence = not fence
            i += 1
            continue
        if not (fence and line.startswith("$ spillway ")):
            i += 1
            continue
        start = i + 1
        cmd = line[2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("```") and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        cmd = re.sub(r"\s+#.*$", "", cmd)
        if not out:
            continue                      # a command shown without its output
        argv = shlex.split(cmd)
        if argv[1] not in offline:
            continue
        # Files named: from the repository, else the doc's own under tests/cli/docs/.
        run = [spw]
        missing = None
        for a in argv[1:]:
            if re.search(r"\.(ya?ml|csv)$", a):
                if os.path.exists(a):
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
        p = subprocess.run(run, capture_output=True, text=True, cwd=".")
        got = (p.stdout + p.stderr).rstrip("\n").split("\n")
        # The doc names fixtures by their bare names.
        got = [g.replace(fixtures + "/", "") for g in got]
        # A doc may show an excerpt: its lines must come, in order, among
        # what the command prints (trailing blanks aside; "..." skips).
        want = [l.rstrip() for l in out if l.strip() and l.strip() != "..." and
                not re.match(r"\s*\(simulated in ", l)]
        have = [l.rstrip() for l in got]
        k = 0
        for l in have:
            if k < len(want) and l == want[k]:
                k += 1
        ok = k == len(want)
        print("%s %d - %s:%d: %s" % ("ok" if ok else "not ok", n, doc, start, cmd))
        if not ok:
            print("# the doc shows: %s\n# not printed now; it prints:\n#   %s" %
                  (want[k], "\n#   ".join(have[:40])))
print("1..%d" % n)
PY
cat "$T/docs.tap"
