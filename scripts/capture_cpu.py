#!/usr/bin/env python3
"""The CPU time the capturing process itself spends, against `cat` reading the same pipe.

    scripts/capture_cpu.py TOOLS_BINARY [OTHER_TOOLS_BINARY ...]

Runs `tools call bash` of a pipeline printing SIZE (default 1G) of 100-byte lines, and the same
pipeline into `cat > /dev/null`, alternately, RUNS times (default 5). For each, the reader's own
user and system time (not its children's), read from /proc while it is a zombie, and the wall
time. Wall time on a shared two-core machine moves with the pipeline's own processes; the
reader's CPU time is what a change to the capture changes.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

SIZE = os.environ.get("SIZE", "1G")
RUNS = int(os.environ.get("RUNS", "5"))
COMMAND = f"head -c {SIZE} /dev/zero | tr '\\0' a | fold -w 100"
TICK = os.sysconf("SC_CLK_TCK")
# The output store of these runs, not the user's: each 1 GiB capture leaves 64 MiB in it.
DATA = tempfile.mkdtemp(prefix="capture-cpu.")


def own_cpu(process):
    """User and system seconds of `process` alone, once it exited."""
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    fields = open(f"/proc/{process.pid}/stat").read().rsplit(")", 1)[1].split()
    times = int(fields[11]) / TICK, int(fields[12]) / TICK
    process.wait()
    return times


def tools(binary):
    args = [binary, "call", "bash", json.dumps({"command": COMMAND, "timeout_secs": 600}), "--sandbox", "off"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, env=dict(os.environ, XDG_DATA_HOME=DATA)), None


def cat(_):
    source = subprocess.Popen(["bash", "-c", COMMAND], stdout=subprocess.PIPE)
    reader = subprocess.Popen(["cat"], stdin=source.stdout, stdout=subprocess.DEVNULL)
    source.stdout.close()
    return reader, source


readers = [(f"tools bash ({b})", tools, b) for b in sys.argv[1:]] + [("cat", cat, None)]
if len(readers) < 2:
    sys.exit(__doc__)
results = {name: [] for name, _, _ in readers}
for _ in range(RUNS):
    for name, start, arg in readers:
        began = time.monotonic()
        reader, source = start(arg)
        user, system = own_cpu(reader)
        if source:
            source.wait()
        results[name].append((time.monotonic() - began, user, system))
    shutil.rmtree(os.path.join(DATA, "tool-runtime"), ignore_errors=True)
shutil.rmtree(DATA)
print(f"reading `{COMMAND}`, {RUNS} runs each, medians")
for name, runs in results.items():
    wall, user, system = (statistics.median(r[i] for r in runs) for i in range(3))
    print(f"  {name:50} wall {wall:5.2f} s  own user {user:4.2f} s  system {system:4.2f} s  user+system {user + system:4.2f} s")
