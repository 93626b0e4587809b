"""The permission mode's ask reaching the user of an MCP client made with the official Python SDK.

Usage: python modes.py TOOLS_BINARY WORKSPACE
Runs `tools serve --settings FILE` with `"defaultMode": "default"` and no rule about edits. A read
runs without a question; an edit no rule allows is asked about through the client's elicitation
(legacy mode: `initialize`, protocol 2025-11-25): accepted, it runs; declined, it is refused
naming the mode. A client without elicitation gets the refusal. Prints one line per check and
exits non-zero on the first failure.
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

    print("passed: permission modes", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
