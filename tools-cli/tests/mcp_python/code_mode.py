"""Drives `tools serve --code-mode` with the official MCP Python SDK: the script tool is listed
(alone with `only`, beside `code_output` and `code_stop`), a script calls the other tools and
returns only what it prints, a nested call's error is caught by the script, cancelling the
script's call kills its command, and a script past its yield time runs on and is read with
`code_output`.

Usage: python code_mode.py TOOLS_BINARY WORKSPACE MODE
MODE is "beside" (the script tool next to the other tools) or "only" (the script tool alone).
Prints one line per check and exits non-zero on the first failure.
"""

import os
import sys
import time

import anyio
from mcp import Client, StdioServerParameters

from checks import check, text_of


def process_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


async def main(tools, workspace, mode):
    os.makedirs(os.path.join(workspace, "src"), exist_ok=True)
    with open(os.path.join(workspace, "src", "a.txt"), "w") as f:
        f.write("alpha TODO\nbeta\nTODO gamma\n")
    with open(os.path.join(workspace, "src", "b.txt"), "w") as f:
        f.write("TODO delta\n")
    params = StdioServerParameters(
        command=tools,
        args=["serve", "--root", workspace, f"--code-mode={mode}", "--code-yield-ms", "8000"],
        cwd=workspace,
    )
    async with Client(params, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        check("code" in names, f"tools/list has the script tool: {names}")
        if mode == "only":
            check(names == ["code", "code_output", "code_stop"], "only the script tool (and its readers) are listed")
        else:
            check("grep" in names and "read" in names, "the other tools are listed beside it")
        code = next(tool for tool in listed.tools if tool.name == "code")
        check(code.input_schema["required"] == ["script"], "its input is the script")
        check("grep(args: {" in code.description, "its description declares grep")

        script = """
            const found = await tools.grep({ pattern: "TODO", output_mode: "count" });
            const counts = {};
            for (const line of found.text.split("\\n")) {
                const match = line.match(/^(\\S+): (\\d+)/);
                if (match) counts[match[1]] = Number(match[2]);
            }
            let refused;
            try { await tools.read({ path: "/etc/passwd" }); } catch (e) { refused = e.kind; }
            console.log(refused);
            counts
        """
        result = await client.call_tool("code", {"script": script})
        text = text_of(result)
        check(not result.is_error, f"the script ran: {text!r}")
        check(text.startswith("permission_denied\n"), f"the refused read was caught: {text!r}")
        check('"src/a.txt": 2' in text and '"src/b.txt": 1' in text, f"the counts came back: {text!r}")

        pid_file = os.path.join(workspace, "sleeper.pid")
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                async def long_call():
                    await client.call_tool(
                        "code", {"script": 'await tools.bash({ command: "echo $$ > sleeper.pid; exec sleep 60" })'}
                    )
                    check(False, "the cancelled call returned")

                group.start_soon(long_call)
                while not (os.path.exists(pid_file) and open(pid_file).read().strip()):
                    await anyio.sleep(0.02)
                scope.cancel()
        pid = int(open(pid_file).read())
        deadline = time.monotonic() + 10
        while process_alive(pid) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        check(not process_alive(pid), "cancelling the script killed its command")
        after = await client.call_tool("code", {"script": "(await tools.bash({ command: 'echo still-serving' })).text"})
        check(text_of(after).strip() == "still-serving", f"the server serves after a cancellation: {text_of(after)!r}")

        # Past its yield time (8 s here, well past the cancellation above taking effect even on a
        # loaded machine) a script runs on: its call returns what it printed so far
        # and its id; code_output returns the rest and its end, once.
        slow = 'console.log("started"); await tools.bash({ command: "sleep 9" }); console.log("slept"); "done"'
        first = await client.call_tool("code", {"script": slow})
        text = text_of(first)
        check(not first.is_error and text.startswith("started\n[The script is still running as `script-"), f"it yielded: {text!r}")
        script_id = text.split("`")[1]
        rest = await client.call_tool("code_output", {"id": script_id, "yield_ms": 30000})
        check(text_of(rest) == "slept\ndone", f"code_output returned the rest: {text_of(rest)!r}")
        again = await client.call_tool("code_output", {"id": script_id})
        check(again.is_error and "No script" in text_of(again), f"its end is returned once: {text_of(again)!r}")
    print(f"passed: {mode}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
