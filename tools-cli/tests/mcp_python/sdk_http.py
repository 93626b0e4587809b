"""Drives `tools serve --http` with the official MCP Python SDK's Streamable HTTP client.

Usage: python sdk_http.py TOOLS_BINARY WORKSPACE MODE
MODE is "auto" (the SDK's default: `server/discover`, protocol 2026-07-28, no sessions) or
"legacy" (the `initialize` handshake and a session per client). Starts the server on a free
port with a token file, prints one line per check and exits non-zero on the first failure.
"""

import logging
import os
import re
import signal
import subprocess
import sys

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from checks import check, text_of

EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}
TOKEN = "py-t0ken"


def connect(url, mode, token=TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode, read_timeout_seconds=60)


async def main(tools, workspace, mode):
    token_file = os.path.join(workspace, "..", "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    server = subprocess.Popen(
        [tools, "serve", "--root", workspace, "--http", "127.0.0.1:0", "--auth-token-file", token_file],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline().strip()
        prefix = "tools serve: listening on "
        check(line.startswith(prefix), f"server announced {line!r}")
        url = line[len(prefix):]
        # The SDK's client ends its session with DELETE when it closes, and warns unless the
        # server answers 200 or 204.
        warnings = Warnings()
        logging.getLogger("mcp.client.streamable_http").addHandler(warnings)
        await drive(url, mode, workspace)
        failed = [message for message in warnings.messages if "Session termination failed" in message]
        check(not failed, f"the sessions ended cleanly: {failed}")
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
    check(code == 0, f"the server exited with {code} on SIGTERM")
    print(f"passed: http {mode}", flush=True)


async def drive(url, mode, workspace):
    async with connect(url, mode) as client, connect(url, mode) as other:
        check(client.protocol_version == EXPECTED_VERSION[mode], f"negotiated {client.protocol_version}")
        capabilities = client.server_capabilities.model_dump(exclude_none=True)
        extensions = capabilities.pop("extensions", {})
        check("tools" in capabilities and set(capabilities) <= {"tools", "logging"}, f"declares tools (and logging): {capabilities}")
        check(set(extensions) == {"io.modelcontextprotocol/tasks"}, f"and the tasks extension: {extensions}")
        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        for name in ["read", "write", "bash", "todo_write", "todo_read"]:
            check(name in names, f"tools/list has {name}")

        wrote = await client.call_tool("write", {"path": "http/a.txt", "content": "over http\n"})
        check(not wrote.is_error, f"write succeeded: {text_of(wrote)!r}")
        read = await other.call_tool("read", {"path": "http/a.txt"})
        check("over http" in text_of(read), "another client reads the file (one workspace)")

        todos = {"todos": [{"content": "Serve over HTTP", "status": "in_progress"}]}
        wrote = await client.call_tool("todo_write", todos)
        check(not wrote.is_error, f"todo_write succeeded: {text_of(wrote)!r}")
        others = await other.call_tool("todo_read", {})
        own = await client.call_tool("todo_read", {})
        check("Serve over HTTP" in text_of(own), "the todo list is kept across calls")
        if mode == "legacy":
            check(text_of(others) == "The todo list is empty.", f"another session has its own todo list: {text_of(others)!r}")
        else:
            # 2026-07-28 has no sessions: the server's state is one, shared by its clients.
            check("Serve over HTTP" in text_of(others), f"sessionless clients share the state: {text_of(others)!r}")

        # A background command outlives the request that started it, and a later one reads it.
        started = await client.call_tool(
            "bash", {"command": "echo first-line; sleep 0.5; echo from-the-background", "background": True})
        found = re.search(r"session_id=(\d+)", text_of(started))
        check(not started.is_error and found is not None, f"the command went to the background: {text_of(started)!r}")
        seen = text_of(started)
        for _ in range(100):
            out = await client.call_tool("bash_output", {"session_id": int(found.group(1))})
            seen += text_of(out)
            if "from-the-background" in seen:
                break
            await anyio.sleep(0.05)
        check("from-the-background" in seen, f"bash_output reads it in a later request: {seen!r}"[:300])

        # Cancellation over HTTP: the SDK sends notifications/cancelled; the command is killed.
        pid_file = os.path.join(workspace, f"sleeper-{mode}.pid")
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                async def long_call():
                    await client.call_tool("bash", {"command": f"echo $$ > {os.path.basename(pid_file)}; exec sleep 60"})
                    check(False, "the cancelled call returned")

                group.start_soon(long_call)
                while not (os.path.exists(pid_file) and open(pid_file).read().strip()):
                    await anyio.sleep(0.02)
                scope.cancel()
        pid = int(open(pid_file).read())
        for _ in range(500):
            if not alive(pid):
                break
            await anyio.sleep(0.02)
        check(not alive(pid), "the cancelled command was killed")
        after = await client.call_tool("bash", {"command": "echo still-serving"})
        check(text_of(after).strip() == "still-serving", "the server serves after a cancellation")

    refused = None
    try:
        async with connect(url, mode, token="wrong") as client:
            await client.list_tools()
    except Exception as error:  # the SDK wraps the HTTP error in its own exception groups
        refused = error
    check(refused is not None, f"the SDK's client with the wrong token is refused: {refused!r}"[:160])
    async with create_mcp_http_client(headers={"Authorization": "Bearer wrong"}) as http:
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                   headers={"Accept": "application/json, text/event-stream"})
    check(response.status_code == 401, f"the wrong token gets HTTP {response.status_code}")


class Warnings(logging.Handler):
    """The warnings a logger wrote."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] not in "ZX"
    except OSError:
        return False


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
