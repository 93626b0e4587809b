#!/usr/bin/env bash
# Times `tools call grep`, `glob` and `bash` against rg, fd and cat, as whole processes,
# alternately in one session, and prints medians, ratios and peak RSS.
#
#   scripts/search-bench.sh [TOOLS_BINARY]
#
# TOOLS_BINARY defaults to $CARGO_TARGET_DIR/release/tools (build it with
# `cargo build --release -p tools-cli`). Environment:
#   TREE=/tmp/search-bench-tree  the test tree (built when missing: crates copied from the cargo
#                                registry until FILES files, then `git init`-ed)
#   FILES=10000  RUNS=10  CAPTURE=1G (bytes of output for the capture case; `head -c` syntax)
#   CASES="startup grep glob capture"  which cases to run (startup: an empty directory, so
#                                the time is the process's start and exit)
#   BASELINE=/path/to/tools      another build of the binary, run alternately with the others
#   DIRECT=1                     spawn each command directly, without /usr/bin/time (no peak RSS),
#                                as an agent's runtime spawns a tool
set -euo pipefail

TOOLS=${1:-${CARGO_TARGET_DIR:-target}/release/tools}
TREE=${TREE:-/tmp/search-bench-tree}
FILES=${FILES:-10000}
RUNS=${RUNS:-10}
CAPTURE=${CAPTURE:-1G}
CASES=${CASES:-startup grep glob capture}
REGISTRY=${REGISTRY:-$HOME/.cargo/registry/src}

[ -x "$TOOLS" ] || { echo "no tools binary at $TOOLS; build it with: cargo build --release -p tools-cli" >&2; exit 2; }
FD=$(command -v fd || command -v fdfind || true)
[ -n "$FD" ] || { echo "fd is missing: apt-get install fd-find" >&2; exit 2; }
command -v rg >/dev/null || { echo "rg is missing: apt-get install ripgrep" >&2; exit 2; }

if [ ! -d "$TREE/.git" ]; then
  rm -rf "$TREE" && mkdir -p "$TREE"
  count=0
  for crate in $(ls -d "$REGISTRY"/*/*/ | sort); do
    [ "$count" -ge "$FILES" ] && break
    name=$(basename "$crate")
    [ -e "$TREE/$name" ] && continue
    cp -r "$crate" "$TREE/$name"
    count=$((count + $(find "$TREE/$name" -type f | wc -l)))
  done
  git -C "$TREE" init -q
  echo "tree: $TREE, $count files" >&2
fi

export TOOLS TREE FD RUNS CAPTURE CASES BASELINE=${BASELINE:-} DIRECT=${DIRECT:-}
exec python3 - <<'PY'
import json, os, statistics, subprocess, sys, time

TOOLS, TREE, FD = os.environ["TOOLS"], os.environ["TREE"], os.environ["FD"]
RUNS, CAPTURE, CASES = int(os.environ["RUNS"]), os.environ["CAPTURE"], os.environ["CASES"].split()

DIRECT = os.environ.get("DIRECT") == "1"
RSS_FILE = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"search-bench-rss.{os.getpid()}")

def run(argv):
    """Runs argv with stdout to a pipe drained here; returns (seconds, peak RSS in MiB, stdout).
    GNU time reports the peak RSS: a child forked from this Python process would count
    Python's own memory until its exec."""
    start = time.perf_counter()
    timed = [] if DIRECT else ["/usr/bin/time", "-f", "%M", "-o", RSS_FILE]
    proc = subprocess.Popen(timed + argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=TREE)
    out = proc.stdout.read()
    proc.wait()
    elapsed = time.perf_counter() - start
    if DIRECT:
        return elapsed, 0.0, out
    with open(RSS_FILE) as f:
        peak = int(f.read().split()[-1]) / 1024
    return elapsed, peak, out

BASELINE = os.environ["BASELINE"]

def tools(name, args, sandbox="off", binary=TOOLS):
    return [binary, "call", name, json.dumps(args), "--root", TREE, "--sandbox", sandbox]

def baseline(label, name, args):
    """The same call to the BASELINE binary, when there is one."""
    return [(label, tools(name, args, binary=BASELINE))] if BASELINE else []

def compare(title, commands, check=None):
    """Runs the commands alternately RUNS times (after one warm-up each) and prints medians and
    ratios to the first command."""
    times = {label: [] for label, _ in commands}
    rss = {label: 0.0 for label, _ in commands}
    outs = {}
    for label, argv in commands:
        outs[label] = run(argv)[2]
    print(f"\n{title}")
    if check:
        check(outs)
    for _ in range(RUNS):
        for label, argv in commands:
            seconds, peak, _ = run(argv)
            times[label].append(seconds)
            rss[label] = max(rss[label], peak)
    first = statistics.median(times[commands[0][0]])
    for label, _ in commands:
        median = statistics.median(times[label])
        print(f"  {label:<34} median {median * 1000:8.1f} ms  (min {min(times[label]) * 1000:7.1f})  "
              f"peak RSS {rss[label]:7.1f} MiB  ours/this {first / median:5.2f}x")
    sys.stdout.flush()

def rg_lines(out):
    return sum(1 for l in out.decode(errors="replace").splitlines() if l[:1].isdigit())

def grep_lines(outs):
    ours = json.loads(outs["tools grep"])["metadata"]["matches"]
    print(f"  matching lines: tools {ours}, rg {rg_lines(outs['rg'])}, rg -j1 {rg_lines(outs['rg -j1'])}")
    assert ours == rg_lines(outs["rg"]) == rg_lines(outs["rg -j1"]), "the match counts differ"

if "startup" in CASES:
    import tempfile
    empty = tempfile.mkdtemp(prefix="search-bench-empty.")
    compare("start-up: glob `**/*.rs` in an empty directory", [
        ("tools glob", [TOOLS, "call", "glob", json.dumps({"pattern": "**/*.rs"}), "--root", empty, "--sandbox", "off"]),
        ("rg --files", ["rg", "--files", empty]),
        ("fd", [FD, "--glob", "*.rs", empty]),
    ] + ([("baseline glob", [BASELINE, "call", "glob", json.dumps({"pattern": "**/*.rs"}), "--root", empty, "--sandbox", "off"])]
         if BASELINE else []))
    # `ls` decodes its arguments itself (no schema validator compiled); `glob`'s are validated.
    compare("start-up: ls in an empty directory", [
        ("tools ls", [TOOLS, "call", "ls", "{}", "--root", empty, "--sandbox", "off"]),
        ("rg --files", ["rg", "--files", empty]),
        ("fd", [FD, "--glob", "*.rs", empty]),
    ] + ([("baseline ls", [BASELINE, "call", "ls", "{}", "--root", empty, "--sandbox", "off"])]
         if BASELINE else []))
    os.rmdir(empty)

if "grep" in CASES:
    for pattern in [r"fn\s+new\b", "unreachable_unchecked", r"[A-Z][a-z]+Error\b"]:
        compare(f"grep `{pattern}` (all matches shown)", [
            ("tools grep", tools("grep", {"pattern": pattern, "limit": 10**6})),
            ("rg", ["rg", "--heading", "-n", pattern]),
            ("rg -j1", ["rg", "-j1", "--heading", "-n", pattern]),
        ] + baseline("baseline grep", "grep", {"pattern": pattern, "limit": 10**6}), grep_lines)

def glob_files(outs):
    ours = json.loads(outs["tools glob"])["metadata"]["count"]
    print(f"  files: tools {ours}, fd {len(outs['fd'].splitlines())}")
    assert ours == len(outs["fd"].splitlines()), "the file counts differ"

if "glob" in CASES:
    compare("glob `**/*.rs` (all files listed)", [
        ("tools glob", tools("glob", {"pattern": "**/*.rs", "limit": 10**6})),
        ("fd", [FD, "--glob", "*.rs"]),
        ("fd -j1", [FD, "-j1", "--glob", "*.rs"]),
    ] + baseline("baseline glob", "glob", {"pattern": "**/*.rs", "limit": 10**6}), glob_files)

if "capture" in CASES:
    command = f"head -c {CAPTURE} /dev/zero | tr '\\0' a | fold -w 100"
    compare(f"bash capture of `{command}`", [
        ("tools bash (sandbox off)", tools("bash", {"command": command, "timeout_secs": 600})),
        ("tools bash (default sandbox)", [TOOLS, "call", "bash", json.dumps({"command": command, "timeout_secs": 600}), "--root", TREE]),
        ("bash | cat > /dev/null", ["bash", "-c", command + " | cat > /dev/null"]),
    ] + baseline("baseline bash (sandbox off)", "bash", {"command": command, "timeout_secs": 600}))
PY
