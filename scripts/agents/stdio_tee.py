#!/usr/bin/env python3
"""Runs an MCP stdio server and logs every line each way, for reproductions.

Usage: stdio_tee.py LOG -- COMMAND [ARGS...]

Relays standard input to COMMAND and COMMAND's standard output back unchanged, and appends
each line to LOG as JSON: {"t": seconds, "dir": "in" (client to server) or "out", "line": ...}.
Exits with COMMAND's status once COMMAND exits; closes COMMAND's standard input when its own
closes. Signals it receives (SIGTERM, SIGINT, SIGHUP) are passed on to COMMAND.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write(__doc__)
        return 2
    log = open(sys.argv[1], "a", encoding="utf-8")
    lock = threading.Lock()
    start = time.time()

    def note(direction, raw):
        with lock:
            log.write(json.dumps({"t": round(time.time() - start, 3), "dir": direction,
                                  "line": raw.decode("utf-8", "replace").rstrip("\n")}) + "\n")
            log.flush()

    child = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, lambda n, _f: child.send_signal(n))

    def pump_in():
        try:
            for raw in iter(sys.stdin.buffer.readline, b""):
                note("in", raw)
                child.stdin.write(raw)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        note("in", b"<standard input closed>")
        try:
            child.stdin.close()
        except OSError:
            pass

    threading.Thread(target=pump_in, daemon=True).start()
    out = sys.stdout.buffer
    for raw in iter(child.stdout.readline, b""):
        note("out", raw)
        try:
            out.write(raw)
            out.flush()
        except (BrokenPipeError, OSError):
            break
    code = child.wait()
    note("out", ("<server exited with %d>" % code).encode())
    return code


if __name__ == "__main__":
    sys.exit(main())
