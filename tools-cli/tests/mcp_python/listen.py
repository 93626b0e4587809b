"""Revision 2026-07-28's `subscriptions/listen`, with the official MCP Python SDK in its default
mode: a client opens a stream of the changes it asks for, and `tools serve` sends on it what
its mounted server reports (a resource updated, its resources and prompts changed, its tools
changed), over stdio and over HTTP.

Usage: python listen.py TOOLS_BINARY WORKSPACE RESOURCES_FIXTURE TOOLS_FIXTURE TRANSPORT
Prints one line per check and exits non-zero on the first failure.
"""

import json
import os
import sys

import anyio
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged

from checks import check, drive_served

WATCHED = "test://watched-resource"


async def main(tools, workspace, resources_fixture, tools_fixture, transport):
    mounts = os.path.join(workspace, "..", "listen-mounts.json")
    with open(mounts, "w") as out:
        json.dump({"mcpServers": {"res": {"command": resources_fixture}, "fx": {"command": tools_fixture}}}, out)
    args = ["serve", "--root", workspace, "--no-settings", "--mcp-config", mounts]
    await drive_served(tools, args, workspace, transport, drive)
    print(f"passed: listen over {transport}", flush=True)


async def next_event(subscription):
    with anyio.fail_after(30):
        return await subscription.__anext__()


async def events_until(subscription, wanted):
    """The kinds of the events read until every kind of `wanted` came."""
    seen = set()
    while not wanted <= seen:
        seen.add(type(await next_event(subscription)))
    return seen


async def drive(connect):
    async with connect() as client:
        check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
        async with client.listen(
            tools_list_changed=True,
            resources_list_changed=True,
            prompts_list_changed=True,
            resource_subscriptions=[WATCHED],
        ) as subscription:
            honored = subscription.honored
            check(honored.tools_list_changed and honored.resources_list_changed, f"acknowledged: {honored!r}")
            check(honored.resource_subscriptions == [WATCHED], f"with the resource: {honored!r}")

            # Right after the acknowledgment the named resource is said to be updated once (what
            # changed while the server subscribed to it at the mount is not lost), with no change
            # made; then each change is told.
            event = await next_event(subscription)
            check(isinstance(event, ResourceUpdated) and event.uri == WATCHED, f"said to be updated once: {event!r}")
            touched = await client.call_tool("res__touch_watched", {})
            check(not touched.is_error, "the mounted server changed the resource")
            event = await next_event(subscription)
            check(isinstance(event, ResourceUpdated) and event.uri == WATCHED, f"told of the update: {event!r}")

            added = await client.call_tool("res__add_note", {"name": "later"})
            check(not added.is_error, "the mounted server added a resource and a prompt")
            events = await events_until(subscription, {ResourcesListChanged, PromptsListChanged})
            check(events <= {ResourcesListChanged, PromptsListChanged, ResourceUpdated}, f"told of both lists: {events!r}")

            extra = await client.call_tool("fx__add_tool", {})
            check(not extra.is_error, "the other mounted server added a tool")
            events = await events_until(subscription, {ToolsListChanged})
            check(events <= {ToolsListChanged, ResourceUpdated}, f"told of the tool list: {events!r}")
            listed = [tool.name for tool in (await client.list_tools()).tools]
            check("fx__extra" in listed, "and the new tool is listed")

        # At most 64 resources by name per stream: the acknowledgment says which were taken.
        many = [f"test://notes/n{i}" for i in range(70)]
        async with client.listen(resource_subscriptions=many) as subscription:
            honored = subscription.honored.resource_subscriptions or []
            check(honored == many[:64], f"64 of 70 resources taken: {len(honored)}")

        # Only what was asked for: a stream for tools alone hears nothing of resources.
        async with client.listen(tools_list_changed=True) as subscription:
            check(not subscription.honored.resource_subscriptions, "a stream for tools only")
            await client.call_tool("res__touch_watched", {})
            with anyio.move_on_after(1) as waited:
                event = await subscription.__anext__()
                check(False, f"told of what it did not ask for: {event!r}")
            check(waited.cancelled_caught, "hears nothing of a resource it did not name")


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:6])
