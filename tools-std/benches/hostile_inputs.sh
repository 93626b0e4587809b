#!/usr/bin/env bash
# What inputs built to be costly cost the `tools` process: ignore files a command planted in the
# workspace (compiled by every grep, glob, ls and checkpoint scan), a model's long
# `old_string` or hunk in a file that repeats its lines, and a multi_edit of such edits. Each case is one `tools call`, its wall
# time and peak memory measured with /usr/bin/time, stopped at 120 s.
#
# Usage: tools-std/benches/hostile_inputs.sh TOOLS [BASELINE_TOOLS]
# With a second binary (an older build, say), each case runs with both, side by side.
set -euo pipefail

tools="$(realpath "${1:?usage: $0 TOOLS [BASELINE_TOOLS]}")"
baseline="${2:+$(realpath "$2")}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'EOF'
import json, os, random, sys
work = sys.argv[1]
random.seed(7)

def tree(name):
    root = os.path.join(work, name)
    os.makedirs(root)
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello\n")
    return root

def costly(seed, size):
    lines, n, i = [], 0, 0
    while n < size:
        line = "p%d_%d*q\n" % (seed, i)
        lines.append(line)
        n += len(line)
        i += 1
    return "".join(lines)

# 128 directories, each with 4 KiB of distinct wildcard rules: 512 KiB, within the bound.
root = tree("ignore-within")
for d in range(128):
    os.makedirs(os.path.join(root, "d%d" % d))
    with open(os.path.join(root, "d%d" % d, ".ignore"), "w") as f:
        f.write(costly(d, 4000))
# One 4 MiB file of wildcard rules.
root = tree("ignore-past")
with open(os.path.join(root, ".ignore"), "w") as f:
    f.write(costly(0, 4 * 1024 * 1024 - 64))

# A file of one line repeated, and a long text of it that differs at its end.
root = tree("repeated")
with open(os.path.join(root, "same.txt"), "w") as f:
    f.write("x = 1;\n" * 200_000)
with open(os.path.join(work, "edit-repeated.json"), "w") as f:
    json.dump({"path": "same.txt", "old_string": "x = 1;\n" * 5000 + "XYZ", "new_string": "b"}, f)
hunk = " x = 1;\n" * 3000 + "-XYZ\n+b\n"
with open(os.path.join(work, "patch-repeated.json"), "w") as f:
    json.dump({"patch": "*** Begin Patch\n*** Update File: same.txt\n@@\n" + hunk + "*** End Patch\n"}, f)

# 100 runs of 300 repeated lines, each ended by a line of its own, and 100 edits that each match
# one run only once trailing whitespace is ignored, after about 4.5 million line comparisons.
# A successful edit changes the file, so every binary starts from a copy (see `measure`).
root = os.path.join(work, "pristine", "runs")
os.makedirs(root)
with open(os.path.join(root, "runs.txt"), "w") as f:
    f.write("".join("x = 1;\n" * 300 + "y%d;\n" % k for k in range(100)))
edits = [{"old_string": "x = 1; \n" * 300 + "y%d;\n" % k, "new_string": "x = 1;\n" * 300 + "z%d;\n" % k}
         for k in range(100)]
with open(os.path.join(work, "multi-edit-runs.json"), "w") as f:
    json.dump({"path": "runs.txt", "edits": edits}, f)

# A file of varied lines, and a 20,000-line text of them that is not in it.
root = tree("varied")
with open(os.path.join(root, "big.txt"), "w") as f:
    for i in range(400_000):
        f.write("    let value_%d = compute(%d);\n" % (i % 1000, i % 7))
old = "".join("let value_%d = compute(%d);\n" % (i % 1000, i % 7) for i in range(20_000))
with open(os.path.join(work, "edit-varied.json"), "w") as f:
    json.dump({"path": "big.txt", "old_string": old + "XYZ", "new_string": "b"}, f)
EOF

# One case: prints "seconds s, peak MB, outcome".
measure() {
    local bin="$1" root="$2" tool="$3" args="$4" out
    if [ -d "$work/pristine/$root" ]; then
        rm -rf "${work:?}/$root"
        cp -a "$work/pristine/$root" "$work/$root"
    fi
    out="$(cd "$work/$root" && { /usr/bin/time -f '%e %M' timeout 120 "$bin" call "$tool" - --no-settings \
        < "$args" > "$work/out.json"; } 2>&1 | tail -1)" || true
    local seconds="${out% *}" kb="${out#* }"
    local outcome
    outcome="$(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("no result (killed at 120 s)"); sys.exit()
text = d["output"].split("\n")[0]
print(("error: " if d["is_error"] else "ok: ") + text[:70])' "$work/out.json")"
    printf '%s s, %s MB, %s' "$seconds" "$((kb / 1024))" "$outcome"
}

echo '{"pattern": "hello"}' > "$work/grep.json"
cases=(
    "grep, 128 planted .ignore files of 4 KiB wildcard rules|ignore-within|grep|$work/grep.json"
    "grep, one planted 4 MiB .ignore of wildcard rules|ignore-past|grep|$work/grep.json"
    "edit, 5,000-line old_string in 200,000 repeated lines|repeated|edit|$work/edit-repeated.json"
    "apply_patch, 3,000-line hunk in 200,000 repeated lines|repeated|apply_patch|$work/patch-repeated.json"
    "edit, 20,000-line old_string not in 400,000 lines|varied|edit|$work/edit-varied.json"
    "multi_edit, 100 edits that each match after 4.5 million line comparisons|runs|multi_edit|$work/multi-edit-runs.json"
)
if [ -n "$baseline" ]; then
    echo "| case | $baseline | $tools |"
    echo "| --- | --- | --- |"
else
    echo "| case | $tools |"
    echo "| --- | --- |"
fi
for case in "${cases[@]}"; do
    IFS='|' read -r name root tool args <<< "$case"
    row="| $name |"
    if [ -n "$baseline" ]; then
        row="$row $(measure "$baseline" "$root" "$tool" "$args") |"
    fi
    row="$row $(measure "$tools" "$root" "$tool" "$args") |"
    echo "$row"
done
