"""Drives `tools serve` with the official MCP Python SDK, as a new user would.

Usage: python sdk_client.py TOOLS_BINARY WORKSPACE MODE
MODE is "auto" (the SDK's default: `server/discover`, protocol 2026-07-28) or "legacy" (the
`initialize` handshake). Prints one line per check and exits non-zero on the first failure.
The SDK itself checks every result against the negotiated revision's schema.
"""

import os
import sys
import time

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from checks import check, text_of

EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose: read its state.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


async def main(tools, workspace, mode):
    params = StdioServerParameters(command=tools, args=["serve", "--root", workspace], cwd=workspace)
    async with Client(params, mode=mode, read_timeout_seconds=60) as client:
        check(client.protocol_version == EXPECTED_VERSION[mode], f"negotiated {client.protocol_version}")
        capabilities = client.server_capabilities.model_dump(exclude_none=True)
        extensions = capabilities.pop("extensions", {})
        check("tools" in capabilities and set(capabilities) <= {"tools", "logging"}, f"declares tools (and logging): {capabilities}")
        check(set(extensions) == {"io.modelcontextprotocol/tasks"}, f"and the tasks extension: {extensions}")

        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        for name in ["read", "write", "edit", "bash", "glob", "grep", "ls"]:
            check(name in names, f"tools/list has {name}")
        bash = next(tool for tool in listed.tools if tool.name == "bash")
        check(bash.input_schema["required"] == ["command"], "bash's input schema requires command")

        wrote = await client.call_tool("write", {"path": "notes/a.txt", "content": "alpha\nbeta\n"})
        check(not wrote.is_error, f"write succeeded: {text_of(wrote)!r}")
        read = await client.call_tool("read", {"path": "notes/a.txt"})
        check(not read.is_error and "alpha" in text_of(read) and "beta" in text_of(read), "read returns the file")
        grep = await client.call_tool("grep", {"pattern": "bet"})
        check(not grep.is_error and "notes/a.txt" in text_of(grep), "grep finds the line")
        ls = await client.call_tool("ls", {})
        check(not ls.is_error and "notes" in text_of(ls), "ls lists the directory")

        # Identical calls in a row are normal for a server's clients: every one runs.
        outputs = []
        for _ in range(4):
            result = await client.call_tool("bash", {"command": "date +%s%N"})
            check(not result.is_error, f"repeated bash call ran: {text_of(result).strip()}")
            outputs.append(text_of(result))
        check(len(set(outputs)) == len(outputs), "each repeated call ran again")

        bad = await client.call_tool("read", {"path": 5})
        check(bad.is_error and "path" in text_of(bad), f"invalid arguments are an error result: {text_of(bad)!r}")
        try:
            await client.call_tool("no_such_tool", {})
            check(False, "an unknown tool is a protocol error")
        except MCPError as error:
            check(error.code == -32602 and "Unknown tool `no_such_tool`" in str(error), f"unknown tool: {error}")

        # Cancellation: the SDK sends notifications/cancelled when the caller gives up; the
        # server kills the command and keeps serving.
        pid_file = os.path.join(workspace, "sleeper.pid")
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                async def long_call():
                    await client.call_tool("bash", {"command": "echo $$ > sleeper.pid; exec sleep 60"})
                    check(False, "the cancelled call returned")

                group.start_soon(long_call)
                while not (os.path.exists(pid_file) and open(pid_file).read().strip()):
                    await anyio.sleep(0.02)
                scope.cancel()
        pid = int(open(pid_file).read())
        deadline = time.monotonic() + 10
        while process_alive(pid) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        check(not process_alive(pid), "the cancelled command was killed")
        after = await client.call_tool("bash", {"command": "echo still-serving"})
        check(text_of(after).strip() == "still-serving", "the server serves after a cancellation")

        limited = await client.call_tool("bash", {"command": "echo before-limit; sleep 30", "timeout_secs": 1})
        check(limited.is_error and text_of(limited).startswith("before-limit\n\n[timed out after 1s"),
              f"a timed-out command keeps its output: {text_of(limited)[:60]!r}")
    print(f"passed: {mode}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
