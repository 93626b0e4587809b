#!/usr/bin/env python3
"""A scripted stand-in for an LLM provider, served on loopback for coding agents under test.

One server speaks four provider APIs, chosen by the request path:

  POST /v1/responses                                   OpenAI Responses API (codex)
  POST /v1/chat/completions                            OpenAI Chat Completions (opencode)
  POST /v1/messages, /v1/messages/count_tokens         Anthropic Messages API (Claude Code)
  POST /v1beta/models/M:generateContent,
       /v1beta/models/M:streamGenerateContent,
       /v1beta/models/M:countTokens                    Gemini API (Gemini CLI)

Every request that offers the scripted tools is answered with the next step of SCRIPT: the step
is worked out from the conversation the agent sends back (the calls already made and answered),
so the server keeps no state and side requests (titles, summaries, quota probes) do not shift it.
A step whose tool the agent did not offer is skipped. Requests that offer none of the scripted
tools get a short plain text (or, when a JSON answer is asked for, an object that fits the asked
schema).

Every request body is logged as one JSON line to --log, with the answer given.

Usage: scripted_model.py --log FILE [--port N] [--port-file FILE] [--server-name tools]
SCRIPTED_MODEL_SCRIPT=FILE replaces SCRIPT with FILE's ([[id, tool, {args}], ...]).
Standard library only.
"""

import argparse
import json
import os
import re
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FINAL_TEXT = "SCRIPTED-RUN-COMPLETE: every scripted step was sent."

CODE_SCRIPT = """const found = await tools.grep({ pattern: "needle", output_mode: "files_with_matches" });
const files = found.text.split("\\n").filter(Boolean);
const heads = await Promise.all(files.map((path) => tools.read({ path, limit: 1 })));
const lines = (await tools.read({ path: "big.txt" })).text.split("\\n").length;
let write;
try { await tools.bash({ command: "echo x > /etc/tools-probe-code" }); write = "ran"; }
catch (e) { write = `${e.kind}: ${/sandbox: [^:]*/.exec(e.message)}`; }
`code mode: ${files.join(",")}: ${heads.map((h) => h.text.split("\\t")[1].trim()).join(",")}; big.txt read in one call: ${lines} lines; bash ${write}`"""

# (step id, tool base name, arguments). The first argument value names the step in a history.
SCRIPT = [
    ("a", "read", {"path": "notes.txt"}),
    ("g", "read", {"path": "big.txt"}),
    # 2000 lines of 80 characters: the 50 KiB cap of a read ends it before its line limit.
    ("g2", "read", {"path": "wide.txt"}),
    ("b", "bash", {"command": "echo hello; seq 1 3000"}),
    # Past 50 KB: the output is cut by bytes, not lines.
    ("b2", "bash", {"command": "seq 1 100000 | sed 's/^/wide-line-padding-padding-padding-padding-/'"}),
    ("c", "grep", {"pattern": "needle"}),
    ("d", "bash", {"command": "echo x > /etc/tools-probe"}),
    ("e1", "write", {"path": "created.txt", "content": "created by the scripted model\n"}),
    ("e2", "read", {"path": "created.txt"}),
    # A command left running in the background: it must not outlive the session.
    ("h", "bash", {"command": "sleep 97", "background": True}),
    # Code mode (`tools serve --code-mode`): one script calls grep, read (two at once) and a bash
    # command the sandbox refuses, which the script catches; only its last value comes back.
    ("k", "code", {"script": CODE_SCRIPT}),
]

# SCRIPTED_MODEL_SCRIPT names a JSON file with another script: [[id, tool, {args}], ...].
if os.environ.get("SCRIPTED_MODEL_SCRIPT"):
    with open(os.environ["SCRIPTED_MODEL_SCRIPT"], encoding="utf-8") as _f:
        SCRIPT = [tuple(step) for step in json.load(_f)]

SERVER_NAME = "tools"
LOG_LOCK = threading.Lock()
LOG_PATH = None


def log(entry):
    entry["time"] = time.time()
    with LOG_LOCK:
        with open(LOG_PATH, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def base_name(name):
    """The tool's own name behind an agent's prefix, or None when it is not one of the server's."""
    for prefix in (
        "mcp__%s__" % SERVER_NAME,
        "mcp_%s_" % SERVER_NAME,
        "%s__" % SERVER_NAME,
        "%s_" % SERVER_NAME,
        "%s-" % SERVER_NAME,
        "%s." % SERVER_NAME,
    ):
        if name.startswith(prefix):
            return name[len(prefix):]
    return None


def step_of(name, args):
    """The index of the script step a call in the history is, or None."""
    base = base_name(name) or name
    if not isinstance(args, dict):
        return None
    for i, (_, tool, sargs) in enumerate(SCRIPT):
        key, value = next(iter(sargs.items()))
        if tool == base and args.get(key) == value:
            return i
    return None


def parse_args_value(v):
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return v


def next_action(offered, called):
    """offered: {name: schema}; called: list of (name, args) already in the conversation.

    Returns ("call", step_id, name, args) or ("text", None, None, FINAL_TEXT)."""
    by_base = {}
    for name in offered:
        b = base_name(name)
        if b is not None and b not in by_base:
            by_base[b] = name
    done = -1
    for name, args in called:
        s = step_of(name, parse_args_value(args))
        if s is not None:
            done = max(done, s)
    for i in range(done + 1, len(SCRIPT)):
        sid, tool, sargs = SCRIPT[i]
        if tool in by_base:
            name = by_base[tool]
            args = dict(sargs)
            schema = offered.get(name) or {}
            props = schema.get("properties") if isinstance(schema, dict) else None
            # A model sees what the agent added to the schema and may fill it in.
            if isinstance(props, dict) and "wait_for_previous" in props:
                args["wait_for_previous"] = True
            return ("call", sid, name, args)
    return ("text", None, None, FINAL_TEXT)


def responses_tools(req):
    """Responses API tools: {name: schema}, and {joined name: (namespace, name)} for the tools
    offered inside a `namespace` tool (codex offers each MCP server's tools so, as `mcp__tools`)."""
    offered, namespaced = {}, {}
    for t in req.get("tools") or []:
        if t.get("type") == "namespace":
            for inner in t.get("tools") or []:
                if "name" in inner:
                    joined = "%s__%s" % (t.get("name"), inner["name"])
                    offered[joined] = inner.get("parameters") or {}
                    namespaced[joined] = (t.get("name"), inner["name"])
        elif "name" in t:
            offered[t["name"]] = t.get("parameters") or t.get("format") or {}
    return offered, namespaced


def responses_call_name(item):
    if item.get("namespace"):
        return "%s__%s" % (item["namespace"], item.get("name"))
    return item.get("name")


def scripted(offered):
    return any(base_name(n) is not None for n in offered)


def fill_schema(schema):
    """A value that fits a JSON schema, for side requests that ask for JSON."""
    if not isinstance(schema, dict):
        return "ok"
    t = schema.get("type")
    if isinstance(t, list):
        t = t[0]
    if isinstance(t, str):
        t = t.lower()
    if "enum" in schema:
        enum = schema["enum"]
        for preferred in ("user", "flash", "low"):
            if preferred in enum:
                return preferred
        return enum[0]
    if t == "object" or "properties" in schema:
        return {k: fill_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        return []
    if t in ("integer", "number"):
        return 0
    if t == "boolean":
        return False
    return "scripted"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # --- plumbing -------------------------------------------------------------------------
    def body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        chunk = ""
        if event:
            chunk += "event: %s\n" % event
        chunk += "data: %s\n\n" % (data if isinstance(data, str) else json.dumps(data))
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    def do_GET(self):
        log({"method": "GET", "path": self.path})
        if self.path.rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": "scripted", "object": "model"}], "models": []})
        else:
            self.send_json({"error": {"message": "not found"}}, 404)

    def do_POST(self):
        path = self.path.split("?")[0]
        req = self.body()
        try:
            if path.endswith("/responses"):
                answer = self.openai_responses(req)
            elif path.endswith("/chat/completions"):
                answer = self.chat(req)
            elif path.endswith("/messages/count_tokens"):
                answer = {"input_tokens": 1000}
                self.send_json(answer)
            elif path.endswith("/messages"):
                answer = self.anthropic(req)
            elif ":countTokens" in path:
                answer = {"totalTokens": 1000}
                self.send_json(answer)
            elif ":generateContent" in path or ":streamGenerateContent" in path:
                answer = self.gemini(req, stream=":streamGenerateContent" in path)
            else:
                answer = {"error": "unknown path"}
                self.send_json({"error": {"message": "unknown path " + path}}, 404)
        except (BrokenPipeError, ConnectionResetError) as e:
            answer = {"error": "client went away: %r" % e}
        except Exception:  # noqa: BLE001 - logged, and the agent sees a 500
            answer = {"error": traceback.format_exc()}
            try:
                self.send_json({"error": {"message": "scripted model failed"}}, 500)
            except OSError:
                pass
        log({"method": "POST", "path": self.path, "request": req, "answer": answer})

    # --- OpenAI Responses (codex) --------------------------------------------------------
    def openai_responses(self, req):
        offered, namespaced = responses_tools(req)
        called = [
            (responses_call_name(it), it.get("arguments"))
            for it in req.get("input") or []
            if isinstance(it, dict) and it.get("type") == "function_call"
        ]
        action = next_action(offered, called) if scripted(offered) else ("text", None, None, "ok")
        rid = "resp_" + uuid.uuid4().hex[:12]
        if action[0] == "call":
            item = {
                "type": "function_call",
                "id": "fc_" + uuid.uuid4().hex[:12],
                "call_id": "call_%s_%s" % (action[1], uuid.uuid4().hex[:8]),
                "name": action[2],
                "arguments": json.dumps(action[3]),
                "status": "completed",
            }
            if action[2] in namespaced:
                # A tool offered inside a namespace is called by its own name plus the namespace.
                item["namespace"], item["name"] = namespaced[action[2]]
        else:
            item = {
                "type": "message",
                "id": "msg_" + uuid.uuid4().hex[:12],
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": action[3], "annotations": []}],
            }
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
        resp = {"id": rid, "object": "response", "created_at": int(time.time()), "model": req.get("model"),
                "status": "completed", "output": [item], "usage": usage}
        if not req.get("stream"):
            self.send_json(resp)
            return {"step": action[1], "item": item}
        self.start_sse()
        seq = 0

        def ev(kind, payload):
            nonlocal seq
            payload = dict(payload, type=kind, sequence_number=seq)
            seq += 1
            self.sse(payload, event=kind)

        ev("response.created", {"response": dict(resp, status="in_progress", output=[])})
        ev("response.output_item.added", {"output_index": 0, "item": dict(item, status="in_progress")})
        if item["type"] == "message":
            ev("response.output_text.delta", {"item_id": item["id"], "output_index": 0, "content_index": 0,
                                              "delta": action[3]})
        else:
            ev("response.function_call_arguments.delta", {"item_id": item["id"], "output_index": 0,
                                                          "delta": item["arguments"]})
        ev("response.output_item.done", {"output_index": 0, "item": item})
        ev("response.completed", {"response": resp})
        return {"step": action[1], "item": item}

    # --- OpenAI Chat Completions (opencode) ----------------------------------------------
    def chat(self, req):
        offered = {}
        for t in req.get("tools") or []:
            fn = t.get("function") or {}
            if "name" in fn:
                offered[fn["name"]] = fn.get("parameters") or {}
        called = []
        for m in req.get("messages") or []:
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                called.append((fn.get("name"), fn.get("arguments")))
        action = next_action(offered, called) if scripted(offered) else ("text", None, None, "Scripted title")
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        created = int(time.time())
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        if action[0] == "call":
            tc = {"id": "call_%s_%s" % (action[1], uuid.uuid4().hex[:8]), "type": "function",
                  "function": {"name": action[2], "arguments": json.dumps(action[3])}}
            message = {"role": "assistant", "content": None, "tool_calls": [tc]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": action[3]}
            finish = "stop"
        if not req.get("stream"):
            self.send_json({"id": cid, "object": "chat.completion", "created": created, "model": req.get("model"),
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
            return {"step": action[1], "message": message}
        self.start_sse()

        def chunk(delta, finish_reason=None, **extra):
            self.sse(dict({"id": cid, "object": "chat.completion.chunk", "created": created,
                           "model": req.get("model"),
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}, **extra))

        if action[0] == "call":
            chunk({"role": "assistant", "content": None,
                   "tool_calls": [dict(message["tool_calls"][0], index=0)]})
        else:
            chunk({"role": "assistant", "content": action[3]})
        chunk({}, finish, usage=usage)
        self.sse("[DONE]")
        return {"step": action[1], "message": message}

    # --- Anthropic Messages (Claude Code) ------------------------------------------------
    def anthropic(self, req):
        offered = {t["name"]: t.get("input_schema") or {} for t in req.get("tools") or [] if "name" in t}
        called = []
        for m in req.get("messages") or []:
            if m.get("role") == "assistant" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        called.append((b.get("name"), b.get("input")))
        if scripted(offered):
            action = next_action(offered, called)
        elif "ToolSearch" in offered and not any(n == "ToolSearch" for n, _ in called):
            # Claude Code defers MCP tools: only their names are in the prompt, and a model
            # loads their schemas with ToolSearch before it can call them.
            text = json.dumps(req.get("messages")) + json.dumps(req.get("system"))
            names = sorted(set(re.findall(r"mcp__%s__[A-Za-z0-9_]+" % re.escape(SERVER_NAME), text)))
            if names:
                action = ("call", "ts", "ToolSearch", {"query": "select:" + ",".join(names),
                                                        "max_results": len(names)})
            else:
                action = ("text", None, None, "Scripted title")
        else:
            action = ("text", None, None, "Scripted title")
        mid = "msg_" + uuid.uuid4().hex[:12]
        if action[0] == "call":
            block = {"type": "tool_use", "id": "toolu_%s_%s" % (action[1], uuid.uuid4().hex[:8]),
                     "name": action[2], "input": action[3]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": action[3]}
            stop = "end_turn"
        usage = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        msg = {"id": mid, "type": "message", "role": "assistant", "model": req.get("model"),
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not req.get("stream"):
            self.send_json(msg)
            return {"step": action[1], "block": block}
        self.start_sse()
        self.sse({"type": "message_start", "message": dict(msg, content=[], stop_reason=None)}, "message_start")
        if block["type"] == "text":
            self.sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                     "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": block["text"]}},
                     "content_block_delta")
        else:
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": dict(block, input={})}, "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                     "content_block_delta")
        self.sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": 10}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")
        return {"step": action[1], "block": block}

    # --- Gemini (Gemini CLI) -------------------------------------------------------------
    def gemini(self, req, stream):
        offered = {}
        for t in req.get("tools") or []:
            for fd in t.get("functionDeclarations") or t.get("function_declarations") or []:
                offered[fd.get("name")] = fd.get("parametersJsonSchema") or fd.get("parameters") or {}
        called = []
        for c in req.get("contents") or []:
            for p in c.get("parts") or []:
                fc = p.get("functionCall")
                if fc:
                    called.append((fc.get("name"), fc.get("args")))
        gc = req.get("generationConfig") or req.get("generation_config") or {}
        if scripted(offered):
            action = next_action(offered, called)
        elif gc.get("responseMimeType") == "application/json" or gc.get("responseJsonSchema") or gc.get("responseSchema"):
            schema = gc.get("responseJsonSchema") or gc.get("responseSchema") or {}
            action = ("text", None, None, json.dumps(fill_schema(schema)))
        else:
            action = ("text", None, None, "Scripted answer.")
        if action[0] == "call":
            part = {"functionCall": {"name": action[2], "args": action[3]}}
        else:
            part = {"text": action[3]}
        resp = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
                "modelVersion": "scripted"}
        if not stream:
            self.send_json(resp)
        else:
            self.start_sse()
            self.sse(resp)
        return {"step": action[1], "part": part}


def main():
    global LOG_PATH, SERVER_NAME
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--server-name", default="tools")
    a = ap.parse_args()
    LOG_PATH = a.log
    SERVER_NAME = a.server_name
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(a.port_file + ".tmp", a.port_file)
    print("scripted model listening on http://127.0.0.1:%d" % port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
