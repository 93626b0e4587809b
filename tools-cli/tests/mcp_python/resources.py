"""Reads resources, renders prompts and completes their arguments with the official MCP Python SDK:
from the resources fixture server (served by `tool_runtime::mcp_server`) directly, and from
`tools serve` mounting it (served again), in the SDK's default mode and in legacy mode.

Usage: python resources.py TOOLS_BINARY WORKSPACE FIXTURE_BINARY
Prints one line per check and exits non-zero on the first failure.
"""

import base64
import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from checks import check


async def exercise(params, label, mode, prompt_prefix, subscribe):
    async with Client(params, mode=mode, read_timeout_seconds=60) as client:
        caps = client.server_capabilities
        check(caps.resources is not None and caps.prompts is not None, f"{label}: resources and prompts declared")
        check(caps.completions is not None, f"{label}: completions declared")

        listed = await client.list_resources()
        uris = [str(resource.uri) for resource in listed.resources]
        check("test://static-text" in uris and "test://static-binary" in uris, f"{label}: resources/list {uris}")
        templates = await client.list_resource_templates()
        check(
            [t.uri_template for t in templates.resource_templates] == ["test://template/{id}/data"],
            f"{label}: resources/templates/list",
        )

        text = await client.read_resource("test://static-text")
        check(text.contents[0].text.startswith("This is the content"), f"{label}: a text resource is read")
        check(text.contents[0].mime_type == "text/plain", f"{label}: with its MIME type")
        binary = await client.read_resource("test://static-binary")
        check(base64.b64decode(binary.contents[0].blob).startswith(b"\x89PNG"), f"{label}: a binary resource is read")
        templated = await client.read_resource("test://template/42/data")
        check(json.loads(templated.contents[0].text)["id"] == "42", f"{label}: a templated resource is read")
        try:
            await client.read_resource("test://missing")
            check(False, f"{label}: an unknown resource is an error")
        except MCPError as error:
            check("test://missing" in str(error), f"{label}: an unknown resource is an error naming it")

        prompts = await client.list_prompts()
        names = [prompt.name for prompt in prompts.prompts]
        check(f"{prompt_prefix}test_prompt_with_arguments" in names, f"{label}: prompts/list {names}")
        rendered = await client.get_prompt(
            f"{prompt_prefix}test_prompt_with_arguments", {"arg1": "one", "arg2": "two"}
        )
        text = rendered.messages[0].content.text
        check("arg1='one'" in text and "arg2='two'" in text, f"{label}: a prompt is rendered with its arguments")
        try:
            await client.get_prompt(f"{prompt_prefix}test_prompt_with_arguments", {"arg1": "one"})
            check(False, f"{label}: a missing argument is an error")
        except MCPError as error:
            check("arg2" in str(error), f"{label}: a missing required argument is an error naming it")
        image = await client.get_prompt(f"{prompt_prefix}test_prompt_with_image")
        check(image.messages[0].content.type == "image", f"{label}: a prompt with an image")

        completed = await client.complete(
            PromptReference(type="ref/prompt", name=f"{prompt_prefix}test_prompt_with_arguments"),
            {"name": "arg1", "value": "pa"},
        )
        check(completed.completion.values == ["paris", "park"], f"{label}: a prompt argument is completed")
        completed = await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"),
            {"name": "id", "value": "12"},
        )
        check(completed.completion.values == ["123", "124"], f"{label}: a template variable is completed")

        if subscribe:
            await client.subscribe_resource("test://watched-resource")
            await client.unsubscribe_resource("test://watched-resource")
            check(True, f"{label}: resources/subscribe and unsubscribe are answered")


async def main(tools, workspace, fixture):
    config = os.path.join(workspace, "..", "mounts.json")
    with open(config, "w") as out:
        json.dump({"mcpServers": {"fx": {"command": fixture}}}, out)
    direct = StdioServerParameters(command=fixture, args=[])
    mounted = StdioServerParameters(
        command=tools, args=["serve", "--root", workspace, "--mcp-config", config], cwd=workspace
    )
    for mode in ["auto", "legacy"]:
        # resources/subscribe exists only before protocol 2026-07-28.
        legacy = mode == "legacy"
        await exercise(direct, f"served ({mode})", mode, "", legacy)
        await exercise(mounted, f"mounted by tools serve ({mode})", mode, "fx__", legacy)
    print("passed: resources", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
