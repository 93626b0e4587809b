"""The `ask_user` tool of `tools serve` reaching the user of a client made with the official MCP
Python SDK by elicitation, directly and through a mounted `tools serve` (whose question the outer
one passes on to its own client).

Usage: python ask_user.py TOOLS_BINARY WORKSPACE
Prints one line per check and exits non-zero on the first failure.
"""

import json
import os
import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters, types

from checks import check, text_of


async def main(tools, workspace):
    direct = StdioServerParameters(command=tools, args=["serve", "--root", workspace], cwd=workspace)
    config = os.path.join(tempfile.mkdtemp(), "mcp.json")
    with open(config, "w") as out:
        json.dump({"mcpServers": {"inner": {"command": tools, "args": ["serve", "--root", workspace]}}}, out)
    mounted = StdioServerParameters(
        command=tools, args=["serve", "--root", workspace, "--mcp-config", config], cwd=workspace
    )

    questions = []

    async def answer(context, asked):
        questions.append(asked)
        props = asked.requested_schema["properties"]
        if "decline" in asked.message:
            return types.ElicitResult(action="decline")
        if props["answer"].get("type") == "array":
            return types.ElicitResult(action="accept", content={"answer": ["red", "blue"]})
        if "oneOf" in props["answer"]:
            return types.ElicitResult(action="accept", content={"answer": props["answer"]["oneOf"][1]["const"]})
        return types.ElicitResult(action="accept", content={"answer": "forty-two"})

    for label, params, tool in [("served", direct, "ask_user"), ("mounted", mounted, "inner__ask_user")]:
        questions.clear()
        async with Client(params, mode="legacy", read_timeout_seconds=60, elicitation_callback=answer) as client:
            chosen = await client.call_tool(
                tool,
                {
                    "question": "Which runtime?",
                    "options": [{"label": "tokio", "description": "async"}, {"label": "std"}],
                    "allow_other": False,
                },
            )
            check(text_of(chosen) == 'The user chose "std".', f"{label}: one choice: {text_of(chosen)!r}")
            asked = questions[0]
            check(asked.message == "Which runtime?", f"{label}: the question is the message")
            check(
                asked.requested_schema["properties"]["answer"]["oneOf"][0]
                == {"const": "tokio", "title": "tokio: async"},
                f"{label}: the options are titled choices: {asked.requested_schema!r}",
            )
            several = await client.call_tool(
                tool,
                {"question": "Which colours?", "options": [{"label": "red"}, {"label": "blue"}], "multi_select": True},
            )
            check(text_of(several) == 'The user chose "red", "blue".', f"{label}: several: {text_of(several)!r}")
            written = await client.call_tool(tool, {"question": "What is the answer?"})
            check(text_of(written) == "The user answered: forty-two", f"{label}: free text: {text_of(written)!r}")
            declined = await client.call_tool(tool, {"question": "Please decline this"})
            check(text_of(declined).startswith("The user declined to answer."), f"{label}: declined")

        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            refused = await client.call_tool(tool, {"question": "Anyone there?"})
            check(refused.is_error, f"{label}: a client without elicitation gets an error")
            check(
                "did not declare the elicitation capability" in text_of(refused),
                f"{label}: saying why: {text_of(refused)!r}",
            )
    print("passed: ask_user", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
