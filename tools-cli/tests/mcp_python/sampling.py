"""A mounted server's request for a completion (`sampling/createMessage`) reaching the model of an
MCP client made with the official Python SDK, through `tools serve`.

Usage: python sampling.py TOOLS_BINARY WORKSPACE FIXTURE_BINARY
Runs `tools serve --mcp-config` mounting the resources fixture, whose `ask_model` tool samples. A
client with a `sampling_callback` (legacy mode: protocol 2025-11-25, the last revision with
server-to-client requests) answers it; a client without one gets the refusal saying why. Prints one
line per check and exits non-zero on the first failure.
"""

import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters, types

from checks import check, text_of


async def main(tools, workspace, fixture):
    config = os.path.join(workspace, "..", "sampling-mounts.json")
    with open(config, "w") as out:
        json.dump({"mcpServers": {"fx": {"command": fixture}}}, out)
    params = StdioServerParameters(
        command=tools, args=["serve", "--root", workspace, "--mcp-config", config], cwd=workspace
    )

    asked = []

    async def sample(context, request):
        asked.append(request)
        question = request.messages[0].content.text
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"{len(question)} characters"),
            model="python-counter",
            stop_reason="endTurn",
        )

    async with Client(params, mode="legacy", read_timeout_seconds=60, sampling_callback=sample) as client:
        answered = await client.call_tool("fx__ask_model", {"question": "What is 6 x 7?"})
        check(not answered.is_error, f"the mounted server's request was answered: {text_of(answered)!r}")
        check(
            text_of(answered) == "the model (python-counter) said: 14 characters",
            f"by this client's model: {text_of(answered)!r}",
        )
        check(len(asked) == 1, "the client was asked once")
        check(asked[0].system_prompt == "Answer with a number.", f"with the system prompt: {asked[0]!r}")
        check(asked[0].max_tokens == 20, "and the token limit")

    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        refused = await client.call_tool("fx__ask_model", {})
        check(refused.is_error, "a client that does not sample: the request is refused")
        check("Nobody can sample" in text_of(refused), f"saying why: {text_of(refused)!r}")

    print("passed: sampling", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
