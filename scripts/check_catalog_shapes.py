"""Checks the deferred definitions and tool-search answers that tool-runtime/tests/catalog.rs
wrote (one JSON file each) against the request types of the providers' official Python SDKs.

A TypedDict validated by pydantic keeps only the keys it declares, so a value that comes back
unchanged has every key right, nested ones included; google-genai's models forbid unknown keys.
"""

import json
import sys
from pathlib import Path

from anthropic.types import MessageParam, ToolUnionParam
from google.genai import types as genai
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import ResponseInputItemParam, ToolParam
from pydantic import TypeAdapter

CHECKS = {
    "openai_responses_tools": ToolParam,
    "openai_responses_tools_hosted": ToolParam,
    "openai_responses_search_answer": ResponseInputItemParam,
    "openai_chat_tools": ChatCompletionToolParam,
    "anthropic_tools": ToolUnionParam,
    "anthropic_tools_hosted": ToolUnionParam,
    "anthropic_search_answer": MessageParam,
}


def same(expected, actual, path="$"):
    """Where `actual` (the validated value) lost or changed something of `expected`."""
    if not isinstance(actual, (dict, list, tuple, str, int, float, bool, type(None))) and hasattr(actual, "__iter__"):
        # An `Iterable[...]` field validates lazily: reading it runs the validation.
        actual = list(actual)
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            if key not in actual:
                return f"{path}.{key}: not a field of the SDK type"
            problem = same(expected[key], actual[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list) and isinstance(actual, (list, tuple)):
        for i, (e, a) in enumerate(zip(expected, actual)):
            problem = same(e, a, f"{path}[{i}]")
            if problem:
                return problem
        return None if len(expected) == len(actual) else f"{path}: length changed"
    return None if expected == actual else f"{path}: {expected!r} became {actual!r}"


def main(directory):
    directory = Path(directory)
    failures = 0
    checked = 0
    for name, kind in CHECKS.items():
        items = json.loads((directory / f"{name}.json").read_text())
        adapter = TypeAdapter(kind)
        for i, item in enumerate(items):
            checked += 1
            try:
                problem = same(item, adapter.validate_python(item))
            except Exception as error:  # noqa: BLE001 - any validation failure is reported
                problem = " ".join(str(error).split())[:300]
            if problem:
                failures += 1
                print(f"{name}[{i}]: {problem}")
    for i, item in enumerate(json.loads((directory / "gemini_function_declarations.json").read_text())):
        checked += 1
        try:
            genai.FunctionDeclaration.model_validate(item)
        except Exception as error:  # noqa: BLE001
            failures += 1
            print(f"gemini_function_declarations[{i}]: {str(error).splitlines()[0]}")
    for i, item in enumerate(json.loads((directory / "gemini_search_answer.json").read_text())):
        checked += 1
        try:
            genai.Content.model_validate(item)
        except Exception as error:  # noqa: BLE001
            failures += 1
            print(f"gemini_search_answer[{i}]: {str(error).splitlines()[0]}")
    print(f"check-catalog-shapes: {checked} values checked, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
