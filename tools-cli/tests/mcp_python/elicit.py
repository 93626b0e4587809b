"""A settings file's `ask` rule reaching the user of an MCP client made with the official Python SDK.

Usage: python elicit.py TOOLS_BINARY WORKSPACE
Runs `tools serve --settings FILE` (stdio, then `--http`) with an `ask` rule on `touch`. A client with an
`elicitation_callback` (legacy mode: `initialize`, protocol 2025-11-25, the last revision with
server-to-client requests) accepts one command and declines another; a client without one, and
one on protocol 2026-07-28, get the refusal naming the rule. Prints one line per check and exits
non-zero on the first failure.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client

from checks import check, text_of

RULE = "the rule `ask Bash(touch:*)`"


async def main(tools, workspace):
    settings = os.path.join(tempfile.mkdtemp(), "settings.json")
    with open(settings, "w") as out:
        json.dump({"permissions": {"ask": ["Bash(touch:*)"]}}, out)
    params = StdioServerParameters(
        command=tools, args=["serve", "--root", workspace, "--settings", settings], cwd=workspace
    )

    questions = []

    async def answer(context, asked):
        questions.append(asked)
        if "approved.txt" in asked.message:
            return types.ElicitResult(action="accept", content={"allow": True})
        return types.ElicitResult(action="decline")

    async with Client(params, mode="legacy", read_timeout_seconds=60, elicitation_callback=answer) as client:
        approved = await client.call_tool("bash", {"command": "touch approved.txt"})
        check(not approved.is_error, f"an accepted command runs: {text_of(approved)!r}")
        check(os.path.exists(os.path.join(workspace, "approved.txt")), "the accepted command had its effect")
        check(len(questions) == 1, "the user was asked once")
        asked = questions[0]
        check(isinstance(asked, types.ElicitRequestFormParams), f"a form elicitation: {asked!r}")
        check(
            "`bash`" in asked.message and "touch approved.txt" in asked.message and RULE in asked.message,
            f"the question names the tool, the command and the rule: {asked.message!r}",
        )
        check(asked.requested_schema["properties"]["allow"]["type"] == "boolean", "the form is one boolean")

        declined = await client.call_tool("bash", {"command": "touch declined.txt"})
        check(declined.is_error, "a declined command is refused")
        check(
            "the user declined it" in text_of(declined) and RULE in text_of(declined),
            f"the refusal names the rule: {text_of(declined)!r}",
        )
        check(not os.path.exists(os.path.join(workspace, "declined.txt")), "the declined command did not run")

        unasked = await client.call_tool("bash", {"command": "echo no rule asks"})
        check(not unasked.is_error and len(questions) == 2, "a command no rule asks about is not asked about")

    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        refused = await client.call_tool("bash", {"command": "touch unasked.txt"})
        check(refused.is_error, "a client without elicitation is refused")
        check(
            f"{RULE}" in text_of(refused) and "did not declare the elicitation capability" in text_of(refused),
            f"the refusal names the rule and says why: {text_of(refused)!r}",
        )

    questions.clear()
    async with Client(params, read_timeout_seconds=60, elicitation_callback=answer) as client:
        check(client.protocol_version == "2026-07-28", f"default mode negotiated {client.protocol_version}")
        # 2026-07-28 has no server-to-client requests: the question comes in rounds (the call's
        # result asks for the answer, and the SDK calls again with it).
        approved = await client.call_tool("bash", {"command": "touch approved.txt rounds.txt"})
        check(not approved.is_error, f"on 2026-07-28 the ask is answered in rounds: {text_of(approved)!r}")
        check(os.path.exists(os.path.join(workspace, "rounds.txt")), "and the command ran")
        check(len(questions) == 1 and RULE in questions[0].message, "the user was asked once, naming the rule")

    # Over Streamable HTTP the question travels on the call's event stream.
    server = subprocess.Popen(
        [tools, "serve", "--root", workspace, "--settings", settings, "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline().strip()
        url = line.removeprefix("tools serve: listening on ")
        check(url.startswith("http://"), f"the HTTP server announced {line!r}")
        questions.clear()
        transport = streamable_http_client(url)
        http_client = Client(transport, mode="legacy", read_timeout_seconds=60, elicitation_callback=answer)
        async with http_client as client:
            approved = await client.call_tool("bash", {"command": "touch approved.txt http.txt"})
            check(not approved.is_error, f"over HTTP an accepted command runs: {text_of(approved)!r}")
            check(os.path.exists(os.path.join(workspace, "http.txt")), "and had its effect")
            check(len(questions) == 1 and RULE in questions[0].message, "the HTTP client's user was asked")
            declined = await client.call_tool("bash", {"command": "touch declined-http.txt"})
            check(declined.is_error and "the user declined it" in text_of(declined), "over HTTP a decline refuses")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

    print("passed: elicitation", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
