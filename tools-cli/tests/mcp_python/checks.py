"""What every script here uses: a check that says what it checked, a result's text, and a
`tools serve` driven over either transport in the SDK's default mode."""

import signal
import subprocess


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def drive_served(tools, args, workspace, transport, drive):
    """Runs `drive(connect)` against `tools ARGS` over `transport` ("stdio" or "http"), where
    `connect(**callbacks)` opens a client in the SDK's default mode (revision 2026-07-28); over
    HTTP the server is started here and must exit 0 on SIGTERM."""
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    if transport == "stdio":
        params = StdioServerParameters(command=tools, args=args, cwd=workspace)
        await drive(lambda **callbacks: Client(params, mode="auto", read_timeout_seconds=60, **callbacks))
        return
    server = subprocess.Popen([tools, *args, "--http", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().strip()
        url = line.removeprefix("tools serve: listening on ")
        check(url.startswith("http://"), f"server announced {line!r}")
        await drive(
            lambda **callbacks: Client(streamable_http_client(url), mode="auto", read_timeout_seconds=60, **callbacks)
        )
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
    check(code == 0, f"the server exited with {code} on SIGTERM")
