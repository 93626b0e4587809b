"""Revision 2026-07-28's rounds: what a call asks its client (the `ask_user` tool's question, a
settings rule's permission question, a mounted server's request for a completion, a mounted
server's question) reaching a client made with the official MCP Python SDK in its default mode,
which negotiates 2026-07-28 and has no session for a server to send requests in. The call's
result asks for the input, the SDK answers through its callbacks and calls again, and the call
goes on.

Usage: python rounds.py TOOLS_BINARY WORKSPACE FIXTURE_BINARY TRANSPORT
TRANSPORT is "stdio" or "http". Prints one line per check and exits non-zero on the first failure.
"""

import json
import os
import sys

import anyio
from mcp import types

from checks import check, drive_served, text_of


async def main(tools, workspace, fixture, transport):
    here = os.path.join(workspace, "..")
    settings = os.path.join(here, "rounds-settings.json")
    with open(settings, "w") as out:
        json.dump({"permissions": {"ask": ["Bash(echo:*)"], "allow": ["mcp__fx"]}}, out)
    mounts = os.path.join(here, "rounds-mounts.json")
    with open(mounts, "w") as out:
        inner = ["serve", "--root", workspace, "--no-settings"]
        json.dump({"mcpServers": {"fx": {"command": fixture}, "inner": {"command": tools, "args": inner}}}, out)
    args = ["serve", "--root", workspace, "--settings", settings, "--mcp-config", mounts]

    await drive_served(tools, args, workspace, transport, drive)
    print(f"passed: rounds over {transport}", flush=True)


async def drive(connect):
    questions = []

    async def answer(context, asked):
        questions.append(asked.message)
        if "decline" in asked.message:
            return types.ElicitResult(action="decline")
        if "Allow" in asked.message:
            return types.ElicitResult(action="accept", content={"allow": True})
        return types.ElicitResult(action="accept", content={"answer": "forty-two"})

    sampled = []

    async def sample(context, request):
        sampled.append(request)
        question = request.messages[0].content.text
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"{len(question)} characters"),
            model="python-counter",
        )

    async with connect(elicitation_callback=answer, sampling_callback=sample) as client:
        check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")

        answered = await client.call_tool("ask_user", {"question": "What is the answer?"})
        check(text_of(answered) == "The user answered: forty-two", f"ask_user is answered: {text_of(answered)!r}")
        check(questions[-1] == "What is the answer?", f"the question was the message: {questions!r}")
        declined = await client.call_tool("ask_user", {"question": "Please decline this"})
        check(text_of(declined).startswith("The user declined to answer."), f"declined: {text_of(declined)!r}")

        ran = await client.call_tool("bash", {"command": "echo asked-then-ran"})
        check(text_of(ran).strip() == "asked-then-ran", f"a rule's ask is answered, the command runs: {text_of(ran)!r}")
        check(questions[-1].startswith("Allow the tool `bash` to run `echo asked-then-ran`?"), f"{questions[-1]!r}")

        # Two rounds in one call: the permission mode asks about the mounted tool, then the
        # mounted server asks its question.
        through = await client.call_tool("inner__ask_user", {"question": "Through the mount?"})
        check(text_of(through) == "The user answered: forty-two", f"a mounted server's question: {text_of(through)!r}")
        check(questions[-2].startswith("Allow a call of the tool `inner__ask_user`"), f"{questions[-2]!r}")
        check(questions[-1] == "Through the mount?", "then asked as the mounted server put it")

        modelled = await client.call_tool("fx__ask_model", {"question": "What is 6 x 7?"})
        check(
            text_of(modelled) == "the model (python-counter) said: 14 characters",
            f"a mounted server's sampling reaches this client's model: {text_of(modelled)!r}",
        )
        check(len(sampled) == 1 and sampled[0].max_tokens == 20, "asked once, with the token limit")

        after = await client.call_tool("bash", {"command": "printf done"})
        check(text_of(after) == "done", f"a call no rule asks about runs at once: {text_of(after)!r}")
        check(len(questions) == 5, f"five questions in all: {questions!r}")

    async with connect() as client:
        refused = await client.call_tool("ask_user", {"question": "Anyone there?"})
        check(refused.is_error, "a client without elicitation gets an error")
        check("did not declare the elicitation capability" in text_of(refused), f"saying why: {text_of(refused)!r}")
        unsampled = await client.call_tool("fx__ask_model", {})
        check(
            unsampled.is_error and "did not declare the sampling capability" in text_of(unsampled),
            f"a client without sampling: refused, saying why: {text_of(unsampled)!r}",
        )


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
