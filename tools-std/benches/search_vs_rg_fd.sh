#!/usr/bin/env bash
# `grep` and `glob` (through the `tools` binary) against `rg` and `fd` on a generated tree of
# ~50,000 files / ~500 MiB: median wall time of each command and the ratio of medians.
#
# Every command is a whole process run on a warm page cache, output written to a file (rg and
# fd stop early when their output is /dev/null). rg and fd run with their default thread count
# and with one thread (`-j1`), since `grep` and `glob` walk and search on one thread. `grep`
# shows 100 lines and counts the rest; rg prints every match. The match and file counts of each
# pair are compared.
#
# Usage: tools-std/benches/search_vs_rg_fd.sh   (FILES=50000 MIB=500 RUNS=7; needs rg, fd or
# fdfind, python3). The tree is generated once under target/search-bench and reused.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
FILES=${FILES:-50000}
MIB=${MIB:-500}
RUNS=${RUNS:-7}
OUT=$ROOT/target/search-bench
TREE=$OUT/tree
FD=$(command -v fd || command -v fdfind || true)
command -v rg >/dev/null || { echo "rg is not installed (apt-get install ripgrep)" >&2; exit 1; }
[ -n "$FD" ] || { echo "fd is not installed (apt-get install fd-find)" >&2; exit 1; }

cargo build -q --release -p tools-cli
TOOLS=$ROOT/target/release/tools
mkdir -p "$OUT"
export XDG_DATA_HOME=$OUT/data  # the output store of `tools`, not the user's

STAMP="$FILES files, $MIB MiB, v1"
if [ "$(cat "$OUT/tree.stamp" 2>/dev/null)" != "$STAMP" ]; then
    echo "generating $STAMP in $TREE"
    rm -rf "$TREE"
    python3 - "$TREE" "$FILES" "$MIB" <<'PY'
import os, random, sys
root, files, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
words = ["let", "fn", "self", "value", "return", "match", "struct", "impl", "config", "error", "result",
         "buffer", "index", "count", "name", "path", "item", "data", "state", "handle", "parse", "write"]
def line():
    r = rng.random()
    if r < 0.02:
        return f"    fn {rng.choice(words)}_{rng.randrange(1000)}(&self) -> Result<(), Error> {{"
    n = rng.randrange(2, 12)
    return "    " * rng.randrange(4) + " ".join(rng.choice(words) for _ in range(n)) + ";"
pool = [line() for _ in range(50000)]
exts = ["rs", "rs", "py", "ts", "md", "json", "txt", "toml"]
avg = mib * 1024 * 1024 // files
dirs, subdirs = 50, 10
per_dir = max(1, files // (dirs * subdirs))
needles = 0
n = 0
for d in range(dirs):
    for s in range(subdirs):
        path = os.path.join(root, f"d{d:03}", f"s{s:02}")
        os.makedirs(path, exist_ok=True)
        for f in range(per_dir):
            if n >= files:
                break
            size = rng.randrange(avg // 8, avg * 15 // 8)
            start = rng.randrange(len(pool))
            out, total, i = [], 0, start
            while total < size:
                text = pool[i % len(pool)]
                if rng.random() < 0.00002:
                    text = f"    // needle_rare_{needles}"
                    needles += 1
                out.append(text)
                total += len(text) + 1
                i += 1
            with open(os.path.join(path, f"f{f:03}.{rng.choice(exts)}"), "w") as fh:
                fh.write("\n".join(out) + "\n")
            n += 1
print(f"{n} files, {needles} needles")
PY
    echo "$STAMP" >"$OUT/tree.stamp"
fi
echo "tree: $(find "$TREE" -type f | wc -l) files, $(du -sm --apparent-size "$TREE" | cut -f1) MiB"
echo "$(rg --version | awk 'NR == 1'), $("$FD" --version), $(rustc --version)"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
find "$TREE" -type f -exec cat {} + >/dev/null  # warm the page cache

now() { date +%s%N; }
# median_ms NAME CMD... : RUNS timed runs after one warm-up; stdout to $OUT/NAME.out
median_ms() {
    local name=$1 t0 i
    shift
    "$@" >"$OUT/$name.out"
    local times=()
    for ((i = 0; i < RUNS; i++)); do
        t0=$(now)
        "$@" >"$OUT/$name.out"
        times+=($((($(now) - t0) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'
}
peak_mib() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.0f", $1 / 1024 }'; }
json_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metadata'][sys.argv[2]])" "$1" "$2"; }

row() { # label, ours ms, theirs ms, theirs -j1 ms
    awk -v l="$1" -v a="$2" -v b="$3" -v c="$4" 'BEGIN {
        printf "%-34s %9.1f ms %9.1f ms %9.1f ms %7.2fx %7.2fx\n", l, a, b, c, a / b, a / c }'
}

printf '\n%-34s %12s %12s %12s %8s %8s\n' case ours "rg/fd" "rg/fd -j1" "ratio" "ratio j1"
grep_case() { # label, pattern
    local label=$1 pattern=$2 ours theirs single
    ours=$(median_ms tools-grep "$TOOLS" call grep "{\"pattern\": \"$pattern\"}" --root "$TREE")
    theirs=$(median_ms rg rg -n "$pattern" "$TREE")
    single=$(median_ms rg-j1 rg -j1 -n "$pattern" "$TREE")
    row "$label" "$ours" "$theirs" "$single"
    local a b
    a=$(json_field "$OUT/tools-grep.out" matches)
    b=$(wc -l <"$OUT/rg.out")
    echo "    matching lines: grep $a, rg $b; peak RSS: tools $(peak_mib "$TOOLS" call grep "{\"pattern\": \"$pattern\"}" --root "$TREE") MiB, rg $(peak_mib rg -n "$pattern" "$TREE") MiB"
    [ "$a" = "$b" ] || echo "    MISMATCH" >&2
}
glob_case() { # label, glob pattern, fd arguments before the path...
    local label=$1 pattern=$2 ours theirs single
    shift 2
    ours=$(median_ms tools-glob "$TOOLS" call glob "{\"pattern\": \"$pattern\"}" --root "$TREE")
    theirs=$(median_ms fd "$FD" "$@" "$TREE")
    single=$(median_ms fd-j1 "$FD" -j1 "$@" "$TREE")
    row "$label" "$ours" "$theirs" "$single"
    local a b
    a=$(json_field "$OUT/tools-glob.out" count)
    b=$(wc -l <"$OUT/fd.out")
    echo "    files: glob $a, fd $b; peak RSS: tools $(peak_mib "$TOOLS" call glob "{\"pattern\": \"$pattern\"}" --root "$TREE") MiB, fd $(peak_mib "$FD" "$@" "$TREE") MiB"
    [ "$a" = "$b" ] || echo "    MISMATCH" >&2
}

mkdir -p "$OUT/empty"
row "process start (an empty directory)" "$(median_ms tools-empty "$TOOLS" call glob '{"pattern": "*.rs"}' --root "$OUT/empty")" \
    "$(median_ms fd-empty "$FD" -t f -g '*.rs' "$OUT/empty")" "$(median_ms fd-j1-empty "$FD" -j1 -t f -g '*.rs' "$OUT/empty")"
grep_case "grep rare literal (needle_rare_)" 'needle_rare_[0-9]+'
grep_case "grep regex, ~2% of lines" 'fn [a-z]+_[0-9]+[(]'
glob_case "glob *.rs" '*.rs' -t f -g '*.rs'
glob_case "glob d01*/**/*.md (anchored)" 'd01*/**/*.md' -t f -p -g "$TREE/d01*/**/*.md"
rm -rf "$OUT/data"
