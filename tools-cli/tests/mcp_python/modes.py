"""The permission mode's ask reaching the user of an MCP client made with the official Python SDK.

Usage: python modes.py TOOLS_BINARY WORKSPACE
Runs `tools serve --settings FILE` with `"defaultMode": "default"` and no rule about edits. A read
runs without a question; an edit no rule allows is asked about through the client's elicitation
(legacy mode: `initialize`, protocol 2025-11-25): accepted, it runs; declined, it is refused
naming the mode. A client without elicitation gets the refusal. Under `--code-mode` the script
itself is not asked about, but each edit its script makes is, in legacy mode and in the SDK's
default mode (revision 2026-07-28, where the question comes back in the call's result): the
accepted one runs, the declined one is a `ToolError` the script catches. Prints one line per
check and exits non-zero on the first failure.
"""

import json
import os
import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters, types

from checks import check, text_of

MODE = "the permission mode `default`"


async def main(tools, workspace):
    settings = os.path.join(tempfile.mkdtemp(), "settings.json")
    with open(settings, "w") as out:
        json.dump({"permissions": {"defaultMode": "default"}}, out)
    params = StdioServerParameters(
        command=tools,
        args=["serve", "--root", workspace, "--settings", settings, "--sandbox", "off"],
        cwd=workspace,
    )
    questions = []

    async def answer(context, asked):
        questions.append(asked)
        if "approved.txt" in asked.message:
            return types.ElicitResult(action="accept", content={"allow": True})
        return types.ElicitResult(action="decline")

    async with Client(params, mode="legacy", read_timeout_seconds=60, elicitation_callback=answer) as client:
        read = await client.call_tool("read", {"path": "hello.txt"})
        check(not read.is_error and not questions, f"a read runs without a question: {text_of(read)!r}")

        approved = await client.call_tool("write", {"path": "approved.txt", "content": "yes\n"})
        check(not approved.is_error, f"an accepted edit runs: {text_of(approved)!r}")
        check(os.path.exists(os.path.join(workspace, "approved.txt")), "the accepted edit had its effect")
        check(len(questions) == 1 and MODE in questions[0].message, f"the question names the mode: {questions!r}")
        check("`allow Write(./approved.txt)`" in questions[0].message, "and the rule that would allow it")

        declined = await client.call_tool("write", {"path": "declined.txt", "content": "no\n"})
        check(declined.is_error, "a declined edit is refused")
        check(
            "the user declined it" in text_of(declined) and MODE in text_of(declined),
            f"the refusal names the mode: {text_of(declined)!r}",
        )
        check(not os.path.exists(os.path.join(workspace, "declined.txt")), "the declined edit did not run")

    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        refused = await client.call_tool("write", {"path": "unasked.txt", "content": "x\n"})
        check(refused.is_error, "a client without elicitation is refused")
        check(
            MODE in text_of(refused) and "did not declare the elicitation capability" in text_of(refused),
            f"the refusal names the mode and says why: {text_of(refused)!r}",
        )

    script = """
        const done = [];
        for (const path of ["script-approved.txt", "script-declined.txt"]) {
            try { await tools.write({ path, content: "x\\n" }); done.push(`${path}: written`); }
            catch (e) { done.push(`${path}: ${e.kind}`); }
        }
        done.join("; ")
    """
    for mode in ("legacy", "auto"):
        for name in ("script-approved.txt", "script-declined.txt"):
            if os.path.exists(os.path.join(workspace, name)):
                os.remove(os.path.join(workspace, name))
        questions.clear()
        coded = StdioServerParameters(command=tools, args=params.args + ["--code-mode"], cwd=workspace)

        async def answer_script(context, asked):
            questions.append(asked)
            if "script-approved.txt" in asked.message:
                return types.ElicitResult(action="accept", content={"allow": True})
            return types.ElicitResult(action="decline")

        async with Client(coded, mode=mode, read_timeout_seconds=60, elicitation_callback=answer_script) as client:
            ran = await client.call_tool("code", {"script": script})
            check(
                not ran.is_error
                and text_of(ran) == "script-approved.txt: written; script-declined.txt: permission_denied",
                f"{mode}: the script ran without a question, its accepted edit ran and its declined one was "
                f"caught: {text_of(ran)!r}",
            )
            asked = [q.message for q in questions]
            check(
                len(asked) == 2 and all(MODE in m for m in asked) and "`allow Write(./script-approved.txt)`" in asked[0],
                f"{mode}: each of the script's edits was asked about, naming the mode, and nothing else: {asked!r}",
            )
            check(
                os.path.exists(os.path.join(workspace, "script-approved.txt"))
                and not os.path.exists(os.path.join(workspace, "script-declined.txt")),
                f"{mode}: only the accepted edit had its effect",
            )

    print("passed: permission modes", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
