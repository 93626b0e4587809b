#!/usr/bin/env python3
"""The server's CPU time per `tools/call` of `tools serve --http`, over one keep-alive connection.

Starts TOOLS serve --http on a loopback port with a workspace of one file, opens a session
(`initialize`, `notifications/initialized`), makes 50 warm-up calls of `ls`, then N more, and
prints the server process's user+system CPU time (from /proc) and the wall time per call.
Standard library only.

Usage: scripts/mcp_http_cpu_per_call.py TOOLS_BINARY [N]
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


def main():
    tools, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    workspace = tempfile.mkdtemp()
    with open(os.path.join(workspace, "a.txt"), "w") as file:
        file.write("x\n")
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    server = subprocess.Popen(
        [tools, "serve", "--root", workspace, "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.1)
        connection = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

        def post(body):
            connection.request("POST", "/mcp", json.dumps(body), headers)
            response = connection.getresponse()
            return response, response.read()

        response, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cpu", "version": "1"}}})
        headers["mcp-session-id"] = response.getheader("mcp-session-id")
        headers["mcp-protocol-version"] = "2025-11-25"
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})

        def cpu_seconds():
            with open(f"/proc/{server.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ls", "arguments": {"path": "."}}}
        for _ in range(50):
            post(call)
        cpu, wall = cpu_seconds(), time.time()
        for _ in range(count):
            response, body = post(call)
            if response.status != 200 or b'"result"' not in body:
                sys.exit(f"unexpected answer: {response.status} {body[:200]!r}")
        cpu, wall = cpu_seconds() - cpu, time.time() - wall
        print(f"{tools}: {count} calls, server CPU {1e6 * cpu / count:.0f} us/call, wall {1e6 * wall / count:.0f} us/call")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
