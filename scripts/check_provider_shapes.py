"""Checks what `tools list --format F [FLAGS]` prints against the official SDKs' own types.

Each case runs the binary once and validates every definition it prints with the SDK type a
request's `tools` entry has: pydantic `TypeAdapter`s over the TypedDict params of `openai` and
`anthropic` (made to refuse unknown keys, so a misspelt field fails), `google.genai` and `mcp`
models (which refuse or type-check fields themselves). Before trusting a validator, each case
checks that it rejects a definition with a made-up key, so a check that cannot fail is caught.

Usage: check_provider_shapes.py TOOLS_BINARY [--flags="FLAG ..."]... [--only FORMAT]...

To check more `tools list` flags, add a line to CASES, or pass `--flags=--strict` to run
every format once more with that flag appended (`--flags="--strict --defer-all"` for several).
Prints one line per case and `passed: N
cases` at the end; exits 1 on the first mismatch (after the remaining cases have run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any, Callable

import typing_extensions
from pydantic import ConfigDict, TypeAdapter, ValidationError

# (format, extra `tools list` flags). Every format with its default options, then each option
# the format understands.
CASES: list[tuple[str, list[str]]] = [
    ("openai-chat", []),
    ("openai-chat", ["--strict"]),
    ("openai-responses", []),
    ("openai-responses", ["--strict"]),
    ("anthropic", []),
    ("anthropic", ["--strict"]),
    ("anthropic", ["--anthropic-cache-control"]),
    ("anthropic", ["--strict", "--anthropic-cache-control"]),
    ("gemini", []),
    ("gemini", ["--gemini-json-schema"]),
    ("mcp", []),
    # Deferred tools: each provider's deferred form and its tool search.
    ("openai-chat", ["--defer-all"]),
    ("openai-responses", ["--defer-all"]),
    ("openai-responses", ["--defer-all", "--hosted-search"]),
    ("anthropic", ["--defer-all"]),
    ("anthropic", ["--defer-all", "--hosted-search", "--anthropic-cache-control"]),
    ("gemini", ["--defer-all"]),
]

# Arbitrary types: some request types (Anthropic's document blocks) hold a file object, which
# pydantic cannot build a schema for otherwise.
FORBID = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def forbid_extra_keys(tp: Any, seen: set | None = None) -> None:
    """Makes every TypedDict reachable from `tp` refuse unknown keys (pydantic reads a
    TypedDict's `__pydantic_config__`; the SDKs' own ones set none, so they accept any key)."""
    seen = set() if seen is None else seen
    if id(tp) in seen:
        return
    seen.add(id(tp))
    if typing_extensions.is_typeddict(tp):
        tp.__pydantic_config__ = FORBID
        for hint in typing_extensions.get_type_hints(tp, include_extras=True).values():
            forbid_extra_keys(hint, seen)
        return
    for arg in typing_extensions.get_args(tp):
        forbid_extra_keys(arg, seen)


def typed_dict(tp: Any) -> Callable[[dict], None]:
    """A validator of a TypedDict (or a union of them) that refuses unknown keys."""
    forbid_extra_keys(tp)
    adapter = TypeAdapter(tp)

    def validate(definition: dict) -> None:
        # Strict: no coercion of "yes" into a boolean. Iterables (`input_examples`) are checked
        # lazily by pydantic, item by item as they are read: read them all.
        exhaust(adapter.validate_python(definition, strict=True))

    return validate


def exhaust(value: Any) -> None:
    if isinstance(value, dict):
        for item in value.values():
            exhaust(item)
    elif isinstance(value, (str, bytes)):
        return
    elif isinstance(value, (list, tuple)):
        for item in value:
            exhaust(item)
    elif hasattr(value, "__next__"):
        for item in value:
            exhaust(item)


def validators() -> dict[str, Callable[[dict], None]]:
    import anthropic.types
    import mcp.types
    import openai.types.chat
    import openai.types.responses
    from google.genai import types as genai

    anthropic_tool = getattr(anthropic.types, "ToolUnionParam", anthropic.types.ToolParam)

    def gemini(definition: dict) -> None:
        genai.FunctionDeclaration.model_validate(definition)
        # ... and as part of the request's `tools` entry.
        genai.Tool.model_validate({"functionDeclarations": [definition]})

    def mcp_tool(definition: dict) -> None:
        mcp.types.Tool.model_validate(definition)

    return {
        "openai-chat": typed_dict(openai.types.chat.ChatCompletionToolParam),
        "openai-responses": typed_dict(openai.types.responses.ToolParam),
        "anthropic": typed_dict(anthropic_tool),
        "gemini": gemini,
        "mcp": mcp_tool,
    }


def list_definitions(tools: str, fmt: str, flags: list[str]) -> list[dict]:
    run = subprocess.run(
        [tools, "list", "--format", fmt, *flags], capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise RuntimeError(f"`tools list --format {fmt} {' '.join(flags)}` exited {run.returncode}: {run.stderr.strip()}")
    definitions = json.loads(run.stdout)
    if not isinstance(definitions, list) or not definitions:
        raise RuntimeError(f"expected a non-empty JSON array of definitions, got {run.stdout[:200]!r}")
    return definitions


def check_case(tools: str, fmt: str, flags: list[str], validate: Callable[[dict], None]) -> list[str]:
    """The problems of one case; empty when every definition matches."""
    definitions = list_definitions(tools, fmt, flags)
    # The controls: a made-up key (except for MCP, whose `Tool` takes extension keys by design)
    # and a misspelt required key must be refused, or this validator proves nothing.
    made_up = dict(definitions[0])
    made_up["not_a_field_of_any_sdk"] = 1
    misspelt = {("nmae" if key == "name" else key): value for key, value in definitions[0].items()}
    if "function" in misspelt:
        misspelt["function"] = {("nmae" if k == "name" else k): v for k, v in misspelt["function"].items()}
    controls = [("a made-up key", made_up)] if fmt != "mcp" else []
    controls.append(("a misspelt `name`", misspelt))
    for what, control in controls:
        try:
            validate(control)
        except ValidationError:
            continue
        return [f"the {fmt} validator accepts {what}, so it cannot check these definitions"]
    problems = []
    for definition in definitions:
        try:
            validate(definition)
        except ValidationError as error:
            name = definition.get("name") or definition.get("function", {}).get("name")
            problems.append(f"`{name}`: {error}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tools", help="the `tools` binary")
    parser.add_argument(
        "--flags",
        action="append",
        default=[],
        help="extra `tools list` flags (one string, split on spaces): every format is checked once more with them",
    )
    parser.add_argument("--only", action="append", default=[], help="check only this format (repeatable)")
    args = parser.parse_args()

    checks = validators()
    cases = list(CASES)
    for extra in args.flags:
        cases += [(fmt, extra.split()) for fmt in checks]
    if args.only:
        cases = [case for case in cases if case[0] in args.only]

    failed = 0
    for fmt, flags in cases:
        label = " ".join([fmt, *flags])
        try:
            problems = check_case(args.tools, fmt, flags, checks[fmt])
        except (RuntimeError, json.JSONDecodeError) as error:
            problems = [str(error)]
        if problems:
            failed += 1
            print(f"FAILED: {label}")
            for problem in problems:
                print("  " + problem.replace("\n", "\n  "))
        else:
            print(f"ok: {label}")
    if failed:
        print(f"failed: {failed} of {len(cases)} cases")
        return 1
    print(f"passed: {len(cases)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
