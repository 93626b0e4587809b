#!/usr/bin/env python3
"""Grades one agent run from the scripted model's request log.

Reads the log that scripted_model.py wrote (every request the agent sent the model), takes the
conversation of the longest request that offered the scripted tools, pairs each scripted call
with the result the agent sent back, and checks each step:

  tools  how many of the server's tools the agent offered the model (with a schema; Claude Code
         also names deferred tools in its prompt, counted apart)
  a      read notes.txt                      -> the file's line reaches the model
  g      read big.txt (3000 lines)           -> "use offset=1991 to continue" reaches the model
  g2     read wide.txt (2000 lines of 80 characters, 160 KB) -> its continue notice reaches the model
  b      bash `echo hello; seq 1 3000`       -> "hello" and the truncation notice reach the model
  b2     bash printing 100000 wide lines (5 MB) -> the truncation notice reaches the model
  c      grep needle                         -> the matching line reaches the model
  d      bash `echo x > /etc/tools-probe`    -> the sandbox's refusal reaches the model
  e      write created.txt, read it back     -> the file is on disk and its text reaches the model
  h      bash `sleep 97` in the background   -> the model is told it runs on (whether it
                                                outlived the session is run.sh's to see)
  k      code: one script calling grep, read and a refused bash command
                                             -> the script's answer reaches the model
  f      final text                          -> the agent prints it and exits 0

Usage: check.py --log model.jsonl --ws WORKSPACE --out AGENT_STDOUT --rc N [--json FILE]
Prints one line of cells separated by '|': tools a g g2 b b2 c d e h k f notes.
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scripted_model as sm  # noqa: E402


def flatten(v):
    """Every string inside a result, joined: what the model reads of it."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return "\n".join(flatten(x) for x in v)
    if isinstance(v, dict):
        return "\n".join(flatten(x) for k, x in v.items() if k not in ("type", "tool_use_id", "call_id", "id"))
    return "" if v is None else str(v)


def args_of(v):
    return sm.parse_args_value(v) if not isinstance(v, dict) else v


def conversation(path, req):
    """(offered {name: schema}, calls [(name, args, result text or None)]) of one request."""
    offered, calls = {}, []
    if path.startswith("/v1/messages"):
        offered = {t["name"]: t.get("input_schema") for t in req.get("tools") or [] if "name" in t}
        results = {}
        for m in req.get("messages") or []:
            if isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_result":
                        results[b.get("tool_use_id")] = (flatten(b.get("content")), bool(b.get("is_error")))
        for m in req.get("messages") or []:
            if m.get("role") == "assistant" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        calls.append((b["name"], b.get("input"), results.get(b.get("id"))))
    elif path.startswith("/v1/responses"):
        offered = sm.responses_tools(req)[0]
        items = req.get("input") or []
        results = {}
        for it in items:
            if isinstance(it, dict) and it.get("type") in ("function_call_output", "custom_tool_call_output"):
                out = it.get("output")
                results[it.get("call_id")] = (flatten(out), None)
        for it in items:
            if isinstance(it, dict) and it.get("type") == "function_call":
                calls.append((sm.responses_call_name(it), args_of(it.get("arguments")),
                              results.get(it.get("call_id"))))
    elif path.startswith("/v1/chat/completions"):
        for t in req.get("tools") or []:
            fn = t.get("function") or {}
            if "name" in fn:
                offered[fn["name"]] = fn.get("parameters")
        results = {}
        for m in req.get("messages") or []:
            if m.get("role") == "tool":
                results[m.get("tool_call_id")] = (flatten(m.get("content")), None)
        for m in req.get("messages") or []:
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                calls.append((fn.get("name"), args_of(fn.get("arguments")), results.get(tc.get("id"))))
    elif path.startswith("/v1beta/"):
        for t in req.get("tools") or []:
            for fd in t.get("functionDeclarations") or []:
                offered[fd.get("name")] = fd.get("parametersJsonSchema") or fd.get("parameters")
        contents = req.get("contents") or []
        for i, c in enumerate(contents):
            fcs = [p["functionCall"] for p in c.get("parts") or [] if "functionCall" in p]
            if not fcs:
                continue
            frs = []
            if i + 1 < len(contents):
                frs = [p["functionResponse"] for p in contents[i + 1].get("parts") or [] if "functionResponse" in p]
            for k, fc in enumerate(fcs):
                fr = frs[k] if k < len(frs) else None
                text = None
                if fr is not None:
                    text = (flatten(fr.get("response")) + "\n" + flatten(fr.get("parts") or []), None)
                calls.append((fc.get("name"), fc.get("args"), text))
    return offered, calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--ws", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rc", type=int, required=True)
    ap.add_argument("--json")
    a = ap.parse_args()

    entries = []
    if os.path.exists(a.log):
        with open(a.log, encoding="utf-8") as f:
            entries = [json.loads(line) for line in f if line.strip()]
    best = None
    max_offered, deferred, requests = {}, set(), 0
    final_sent = False
    for e in entries:
        if e.get("method") != "POST" or "request" not in e:
            continue
        requests += 1
        offered, calls = conversation(e["path"].split("?")[0], e["request"])
        ours = {n: s for n, s in offered.items() if sm.base_name(n) is not None}
        if len(ours) > len(max_offered):
            max_offered = ours
        text = json.dumps(e["request"])
        deferred |= set(re.findall(r"mcp__%s__[A-Za-z0-9_]+" % re.escape(sm.SERVER_NAME), text))
        if ours and (best is None or len(calls) >= len(best[1])):
            best = (e, calls)
        ans = e.get("answer") or {}
        if ans.get("step") is None and sm.FINAL_TEXT in json.dumps(ans):
            final_sent = True

    cells = {}
    deferred_only = deferred - set(max_offered)
    cells["tools"] = "%d" % len(max_offered) + (" (+%d deferred by name)" % len(deferred_only) if deferred_only else "")
    by_step = {}
    if best:
        for name, args, res in best[1]:
            s = sm.step_of(name or "", args if isinstance(args, dict) else {})
            if s is not None:
                by_step[sm.SCRIPT[s][0]] = (name, args, res)

    def verdict(sid, must, what):
        if sid not in by_step:
            return "not run (the model never got to call it: %s)" % ("tool not offered" if sm.SCRIPT[[x[0] for x in sm.SCRIPT].index(sid)][1] not in {sm.base_name(n) for n in max_offered} else "run stopped before")
        name, args, res = by_step[sid]
        if res is None:
            return "FAIL: %s was called, no result came back to the model" % name
        text = res[0]
        missing = [m for m in must if m not in text]
        if missing:
            return "FAIL: %s result lacks %s; got: %s" % (name, ", ".join(repr(m) for m in missing),
                                                           json.dumps(text[:300]))
        return "pass (%s)" % what

    cells["a"] = verdict("a", ["alpha needle here"], "file line seen")
    g = verdict("g", ["offset=1991"], "continue notice seen")
    if g.startswith("pass"):
        text = by_step["g"][2][0]
        ln = text[: text.index("offset=1991")].count("\n") + 1
        g = "pass (notice at line %d of %d)" % (ln, text.count("\n") + 1)
    cells["g"] = g
    g2 = verdict("g2", ["wide-file-line-0001", "use offset="], "continue notice seen")
    if g2.startswith("pass"):
        text = by_step["g2"][2][0]
        i = text.index("use offset=")
        ln = text[:i].count("\n") + 1
        g2 = "pass (notice at line %d of %d, %d bytes: %s)" % (ln, text.count("\n") + 1, len(text.encode()),
                                                             text[i:].split("]")[0])
    cells["g2"] = g2
    b = verdict("b", ["hello", "Output truncated", "tool_output_read("], "notice seen")
    if b.startswith("pass"):
        text = by_step["b"][2][0]
        ln = text[: text.index("Output truncated")].count("\n") + 1
        b = "pass (notice at line %d of %d)" % (ln, text.count("\n") + 1)
    cells["b"] = b
    b2 = verdict("b2", ["wide-line-padding", "Output truncated", "tool_output_read("], "notice seen")
    if b2.startswith("pass"):
        text = by_step["b2"][2][0]
        ln = text[: text.index("Output truncated")].count("\n") + 1
        b2 = "pass (notice at line %d of %d, %d bytes)" % (ln, text.count("\n") + 1, len(text.encode()))
    cells["b2"] = b2
    cells["c"] = verdict("c", ["notes.txt", "alpha needle here"], "match seen")
    cells["d"] = verdict("d", ["/etc/tools-probe", "was refused"], "sandbox refusal seen")
    e1 = verdict("e1", ["created.txt"], "written")
    e2 = verdict("e2", ["created by the scripted model"], "read back")
    try:
        with open(os.path.join(a.ws, "created.txt"), encoding="utf-8") as f:
            on_disk = f.read() == "created by the scripted model\n"
    except OSError:
        on_disk = False
    if e1.startswith("pass") and e2.startswith("pass") and on_disk:
        cells["e"] = "pass (on disk, read back)"
    else:
        cells["e"] = "write: %s; read: %s; on disk: %s" % (e1, e2, "yes" if on_disk else "no")
    cells["h"] = verdict("h", ["still running", "bash_stop("], "told it runs on")
    cells["k"] = verdict("k", ["code mode: notes.txt: alpha needle here; big.txt read in one call: 1992 lines; "
                               "bash execution: sandbox: writing to /etc/tools-probe-code was refused"],
                         "the script's answer seen")
    try:
        with open(a.out, encoding="utf-8", errors="replace") as f:
            out = f.read()
    except OSError:
        out = ""
    if sm.FINAL_TEXT in out and a.rc == 0:
        cells["f"] = "pass"
    elif a.rc == 124:
        cells["f"] = "FAIL: timed out (180 s)%s" % (" after the model sent it" if final_sent else "")
    elif not final_sent:
        cells["f"] = "not run (the model never got to it; agent exit %d)" % a.rc
    else:
        cells["f"] = "FAIL: sent, agent exit %d, %s" % (a.rc, "printed" if sm.FINAL_TEXT in out else "not printed")
    wfp = [sid for sid, (n, args, r) in by_step.items() if isinstance(args, dict) and "wait_for_previous" in args]
    cells["notes"] = "%d model requests" % requests + (
        "; wait_for_previous sent on %d calls" % len(wfp) if wfp else "")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cells": cells, "offered": sorted(max_offered), "calls": {
                k: {"name": v[0], "args": v[1], "result": v[2][0] if v[2] else None} for k, v in by_step.items()}},
                f, indent=1)
    print("|".join(cells[k] for k in ("tools", "a", "g", "g2", "b", "b2", "c", "d", "e", "h", "k", "f", "notes")))


if __name__ == "__main__":
    main()
