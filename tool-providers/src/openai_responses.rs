//! OpenAI Responses: `function` and `custom` (freeform) tool definitions, their call items and their output items.

use serde_json::{Map, Value, json};

use crate::extras;
use crate::lowering::openai_parameters;
use crate::{
    Arguments, At, COMMON_IMAGE_TYPES, DefinitionOptions, LoweringError, ParseError, Piece, Provider,
    ToolCall, ToolResult, flagged_text, json_kind, pieces, text_with_placeholders,
};
use tool_core::Content;
use tool_core::Registry;
use tool_core::{Freeform, ToolSpec};

const PROVIDER: Provider = Provider::OpenAiResponses;

/// The `tools` entry of one tool:
/// `{"type": "function", "name", "description", "parameters", "strict"}`.
///
/// `strict` is always present: the API defaults it to `true`, so leaving it out would ask for
/// strict mode with a schema that was not lowered for it.
///
/// A [freeform](tool_core::Freeform) tool is a `custom` tool instead:
/// `{"type": "custom", "name", "description", "format"}`, where `format` is
/// `{"type": "grammar", "syntax": "lark" | "regex", "definition"}` when the tool has a grammar
/// and `{"type": "text"}` otherwise.
pub fn definition(spec: &ToolSpec, options: &DefinitionOptions) -> Result<Value, LoweringError> {
    if let Some(freeform) = &spec.freeform {
        return Ok(custom_definition(spec, freeform));
    }
    let mut tool = Map::new();
    tool.insert("type".to_owned(), json!("function"));
    tool.insert("name".to_owned(), json!(spec.name));
    let description = extras::description_with_examples(spec, extras::compact);
    if !description.is_empty() {
        tool.insert("description".to_owned(), json!(description));
    }
    tool.insert("parameters".to_owned(), openai_parameters(spec, options, PROVIDER)?);
    tool.insert("strict".to_owned(), json!(options.strict));
    Ok(Value::Object(tool))
}

fn custom_definition(spec: &ToolSpec, freeform: &Freeform) -> Value {
    let mut tool = Map::new();
    tool.insert("type".to_owned(), json!("custom"));
    tool.insert("name".to_owned(), json!(spec.name));
    // The model writes a custom tool's input as raw text, so that is what its examples show.
    let description = extras::description_with_examples(spec, |example| {
        match example.get(&freeform.parameter).and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => extras::compact(example),
        }
    });
    if !description.is_empty() {
        tool.insert("description".to_owned(), json!(description));
    }
    let format = match &freeform.grammar {
        Some(grammar) => json!({
            "type": "grammar",
            "syntax": grammar.syntax.as_str(),
            "definition": grammar.definition,
        }),
        None => json!({ "type": "text" }),
    };
    tool.insert("format".to_owned(), format);
    Value::Object(tool)
}

/// The `tools` array for every tool in `registry`.
pub fn definitions(registry: &Registry, options: &DefinitionOptions) -> Result<Vec<Value>, LoweringError> {
    PROVIDER.definitions(registry, options)
}

/// The `function_call` and `custom_tool_call` items of a response (`{"output": [...]}`), of an
/// array of output items, or of a single item. Other items (messages, reasoning, built-in tool
/// calls the API ran itself) are skipped. The call id is the item's `call_id`; a function's
/// `arguments` are kept as sent, a custom call's `input` becomes [`Arguments::Freeform`].
pub fn parse_tool_calls(message: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = At::root(PROVIDER);
    let (items, base): (Vec<&Value>, &str) = match message {
        Value::Array(items) => (items.iter().collect(), ""),
        Value::Object(object) if object.contains_key("output") => {
            let output = root.array(object, "output")?;
            (output.iter().collect(), "output")
        }
        Value::Object(object) if object.contains_key("type") => {
            let calls = parse_item(root, object)?;
            return Ok(calls.into_iter().collect());
        }
        Value::Object(_) => {
            return Err(root.error(
                "expected a response with `output`, an array of output items, or one `function_call` item",
            ));
        }
        other => {
            return Err(root.error(format!(
                "expected a response object or an array of output items, found {}",
                json_kind(other)
            )));
        }
    };
    let mut calls = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let path = root.with(base).index_path(index);
        let at = root.with(&path);
        calls.extend(parse_item(at, at.object(item)?)?);
    }
    Ok(calls)
}

fn parse_item(at: At<'_>, item: &Map<String, Value>) -> Result<Option<ToolCall>, ParseError> {
    match item.get("type") {
        Some(Value::String(kind)) if kind == "function_call" => {}
        Some(Value::String(kind)) if kind == "custom_tool_call" => {
            let id = at.string(item, "call_id")?;
            let name = at.string(item, "name")?;
            let input = match item.get("input") {
                Some(Value::String(text)) => text.clone(),
                None | Some(Value::Null) => return Err(at.error("`input` is missing")),
                Some(other) => {
                    return Err(at.error(format!("`input` must be a string, found {}", json_kind(other))));
                }
            };
            return Ok(Some(ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: Arguments::freeform(input),
            }));
        }
        Some(Value::String(_)) => return Ok(None),
        Some(other) => return Err(at.error(format!("`type` must be a string, found {}", json_kind(other)))),
        None => return Err(at.error("`type` is missing")),
    }
    let id = at.string(item, "call_id")?;
    let name = at.string(item, "name")?;
    let arguments = match item.get("arguments") {
        Some(Value::String(text)) => Arguments::Text(text.clone()),
        Some(value @ Value::Object(_)) => Arguments::Json(value.clone()),
        None | Some(Value::Null) => return Err(at.error("`arguments` is missing")),
        Some(other) => {
            return Err(at.error(format!("`arguments` must be a string of JSON, found {}", json_kind(other))));
        }
    };
    Ok(Some(ToolCall { id: id.to_owned(), name: name.to_owned(), arguments }))
}

/// The `function_call_output` item answering one call, or the `custom_tool_call_output` item
/// answering a freeform call ([`ToolResult::freeform`]), with the same `output`.
///
/// `output` is a string when the result is text only. A result with images becomes a list of
/// `input_text` and `input_image` (data URL) parts, which `function_call_output` accepts; images
/// of other types than JPEG, PNG, GIF and WebP become placeholder text. There is no error flag,
/// so an error's text starts with `Error: `.
pub fn render_result(result: &ToolResult) -> Value {
    let output = &result.output;
    let has_image = output.content.iter().any(
        |c| matches!(c, Content::Image { mime_type, .. } if COMMON_IMAGE_TYPES.contains(&mime_type.as_str())),
    );
    let rendered = if has_image {
        let mut parts = Vec::new();
        for piece in pieces(output, COMMON_IMAGE_TYPES) {
            match piece {
                Piece::Text(text) if text.is_empty() => {}
                Piece::Text(text) => parts.push(json!({ "type": "input_text", "text": text })),
                Piece::Image { mime_type, data } => parts.push(json!({
                    "type": "input_image",
                    "image_url": format!("data:{mime_type};base64,{data}"),
                })),
            }
        }
        if output.is_error {
            match parts.first_mut() {
                Some(first) if first["type"] == "input_text" => {
                    let text = first["text"].as_str().unwrap_or_default().to_owned();
                    first["text"] = json!(flagged_text(output, text));
                }
                _ => parts.insert(0, json!({ "type": "input_text", "text": "Error:" })),
            }
        }
        Value::Array(parts)
    } else {
        Value::String(flagged_text(output, text_with_placeholders(output)))
    };
    let kind = if result.freeform { "custom_tool_call_output" } else { "function_call_output" };
    json!({ "type": kind, "call_id": result.call_id, "output": rendered })
}

/// One `function_call_output` (or `custom_tool_call_output`) input item per result, in order.
pub fn render_results(results: &[ToolResult]) -> Vec<Value> {
    results.iter().map(render_result).collect()
}
