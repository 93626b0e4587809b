"""Checks the deferred definitions and tool-search answers that tool-runtime/tests/runtime/catalog.rs
wrote (one JSON file each) against the request types of the providers' official Python SDKs,
with the validators of check_provider_shapes.py (TypedDicts made to refuse unknown keys,
google-genai's models). Each validator must first refuse a value with a made-up key, or it
proves nothing.

Usage: check_catalog_shapes.py DIRECTORY
"""

import json
import sys
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from check_provider_shapes import typed_dict


def checks() -> dict[str, Callable[[Any], None]]:
    from anthropic.types import MessageParam, ToolUnionParam
    from google.genai import types as genai
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.responses import ResponseInputItemParam, ToolParam

    def model(kind) -> Callable[[Any], None]:
        return kind.model_validate

    # The TypedDicts are shared between validators: make each adapter once.
    responses_tool = typed_dict(ToolParam)
    anthropic_tool = typed_dict(ToolUnionParam)
    return {
        "openai_responses_tools": responses_tool,
        "openai_responses_tools_hosted": responses_tool,
        "openai_responses_search_answer": typed_dict(ResponseInputItemParam),
        "openai_chat_tools": typed_dict(ChatCompletionToolParam),
        "anthropic_tools": anthropic_tool,
        "anthropic_tools_hosted": anthropic_tool,
        "anthropic_search_answer": typed_dict(MessageParam),
        "gemini_function_declarations": model(genai.FunctionDeclaration),
        "gemini_search_answer": model(genai.Content),
    }


def refuses_made_up_key(validate: Callable[[Any], None], item: dict) -> bool:
    try:
        validate({**item, "not_a_field_of_any_sdk": 1})
    except ValidationError:
        return True
    return False


def main(directory: str) -> int:
    failures = 0
    checked = 0
    for name, validate in checks().items():
        items = json.loads((Path(directory) / f"{name}.json").read_text())
        if not items:
            failures += 1
            print(f"{name}: no values were written")
            continue
        if not refuses_made_up_key(validate, items[0]):
            failures += 1
            print(f"{name}: the validator accepts a made-up key, so it cannot check these values")
            continue
        for i, item in enumerate(items):
            checked += 1
            try:
                validate(item)
            except ValidationError as error:
                failures += 1
                print(f"{name}[{i}]: {' '.join(str(error).split())[:300]}")
    print(f"check-catalog-shapes: {checked} values checked, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
