"""Checks every result `tools serve` gives against the schema of each revision it negotiates,
with the official SDK's per-revision validators (`mcp_types.methods`), over raw JSON-RPC lines.

Usage: python revisions.py TOOLS_BINARY WORKSPACE
Prints one line per check and exits non-zero on the first failure.
"""

import json
import subprocess
import sys

from mcp_types.jsonrpc import JSONRPCError, JSONRPCResponse
from mcp_types.methods import validate_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from checks import check

CLIENT = {"name": "revisions-check", "version": "1.0"}


class Server:
    def __init__(self, tools, workspace):
        self.process = subprocess.Popen(
            [tools, "serve", "--root", workspace],
            cwd=workspace,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.next_id = 0

    def request(self, method, params=None, meta=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None or meta is not None:
            message["params"] = dict(params or {})
            if meta is not None:
                message["params"]["_meta"] = meta
        self.send(message)
        while True:
            reply = json.loads(self.process.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def send(self, message):
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def result_of(reply, method, version):
    check("result" in reply, f"{version} {method} answered with a result: {json.dumps(reply)[:200]}")
    JSONRPCResponse.model_validate(reply)
    validate_server_result(method, version, reply["result"])
    check(True, f"{version} {method} result matches the {version} schema")
    return reply["result"]


def calls(server, version, meta):
    """The results of one session: list, a successful call, an error result, a structured one."""
    result_of(server.request("tools/list", meta=meta), "tools/list", version)
    ok = result_of(server.request("tools/call", {"name": "ls", "arguments": {}}, meta), "tools/call", version)
    check(ok.get("isError") is not True, f"{version} ls succeeded")
    failed = result_of(server.request("tools/call", {"name": "read", "arguments": {"path": 5}}, meta),
                       "tools/call", version)
    check(failed.get("isError") is True, f"{version} invalid arguments are an error result")
    todo = {"todos": [{"content": "check revisions", "status": "in_progress"}]}
    structured = result_of(server.request("tools/call", {"name": "todo_write", "arguments": todo}, meta),
                           "tools/call", version)
    if version >= "2026-07-28":
        check(structured.get("resultType") == "complete", f"{version} call results carry resultType")
    else:
        check("resultType" not in structured, f"{version} call results carry no resultType")
    unknown = server.request("tools/call", {"name": "nope"}, meta)
    JSONRPCError.model_validate(unknown)
    check(unknown["error"]["code"] == -32602, f"{version} unknown tool is -32602")


def main(tools, workspace):
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        server = Server(tools, workspace)
        init = server.request("initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT})
        result = result_of(init, "initialize", version)
        check(result["protocolVersion"] == version, f"the server negotiates {version}")
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        result_of(server.request("ping"), "ping", version)
        calls(server, version, None)
        server.close()

    for version in MODERN_PROTOCOL_VERSIONS:
        server = Server(tools, workspace)
        meta = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": CLIENT,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        discovered = result_of(server.request("server/discover", {}, meta), "server/discover", version)
        check(version in discovered["supportedVersions"], f"the server supports {version}")
        calls(server, version, meta)
        server.close()
    print("passed: every revision", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
