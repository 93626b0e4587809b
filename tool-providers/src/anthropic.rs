//! Anthropic Messages: `input_schema` tool definitions, `tool_use` blocks, and `tool_result` blocks.

use serde_json::{Map, Value, json};

use crate::lowering::{Target, anthropic_strict, check_root};
use crate::{
    Arguments, At, COMMON_IMAGE_TYPES, DefinitionOptions, LoweringError, ParseError, Piece, Provider,
    ToolCall, ToolResult, json_kind, pieces,
};
use tool_core::Content;
use tool_core::Registry;
use tool_core::ToolSpec;

const PROVIDER: Provider = Provider::Anthropic;

/// The `tools` entry of one tool: `{"name", "description", "input_schema"}`.
///
/// `input_schema` is the canonical schema, less `format` values JSON Schema does not define
/// (schemars' `uint64` and the like): the API takes JSON Schema draft 2020-12
/// ("JSON schema for this tool's input"), with `"type": "object"` at the top and no
/// `anyOf`/`oneOf`/`allOf` there, which is checked.
///
/// The tool's examples go in `input_examples`. In strict mode (`options.strict`) the definition
/// has `"strict": true` and the schema is lowered for strict tool use (see
/// `lowering::anthropic_strict`: closed objects, unsupported constraints in the descriptions,
/// no recursive types); a schema that cannot be made strict is a [`LoweringError`]. With
/// `options.anthropic_cache_control`, [`definitions`] marks the last tool as a cache
/// breakpoint.
pub fn definition(spec: &ToolSpec, options: &DefinitionOptions) -> Result<Value, LoweringError> {
    let target = Target { provider: PROVIDER, strict: options.strict, tool: &spec.name };
    check_root(&target, &spec.input_schema, false)?;
    let mut tool = Map::new();
    tool.insert("name".to_owned(), json!(spec.name));
    if !spec.description.is_empty() {
        tool.insert("description".to_owned(), json!(spec.description));
    }
    if options.strict {
        tool.insert("input_schema".to_owned(), anthropic_strict(&target, &spec.input_schema)?);
        tool.insert("strict".to_owned(), json!(true));
    } else {
        tool.insert("input_schema".to_owned(), crate::lowering::served(&spec.input_schema));
    }
    if !spec.examples.is_empty() {
        tool.insert("input_examples".to_owned(), Value::Array(spec.examples.clone()));
    }
    Ok(Value::Object(tool))
}

/// The `tools` array for every tool in `registry`.
pub fn definitions(registry: &Registry, options: &DefinitionOptions) -> Result<Vec<Value>, LoweringError> {
    PROVIDER.definitions(registry, options)
}

/// The `tool_use` blocks of an assistant message (or of a response, which has the same shape),
/// or of a bare array of content blocks. Text, thinking and server-side tool blocks are skipped.
/// `input` (an object) is kept as the parsed value ([`Arguments::Json`]), never written out as text.
pub fn parse_tool_calls(message: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = At::root(PROVIDER);
    let (blocks, base): (&[Value], &str) = match message {
        Value::Array(blocks) => (blocks, ""),
        Value::Object(object) => {
            root.expect_role(object, "assistant")?;
            match object.get("content") {
                Some(Value::String(_)) => return Ok(Vec::new()),
                _ => (root.array(object, "content")?, "content"),
            }
        }
        other => {
            return Err(
                root.error(format!("expected an assistant message object, found {}", json_kind(other)))
            );
        }
    };
    let mut calls = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let path = root.with(base).index_path(index);
        let at = root.with(&path);
        let block = at.object(block)?;
        match block.get("type") {
            Some(Value::String(kind)) if kind == "tool_use" => {}
            Some(Value::String(_)) => continue,
            Some(other) => {
                return Err(at.error(format!("`type` must be a string, found {}", json_kind(other))));
            }
            None => return Err(at.error("`type` is missing")),
        }
        let id = at.string(block, "id")?;
        let name = at.string(block, "name")?;
        let input = block.get("input").ok_or_else(|| at.error("`input` is missing"))?;
        calls.push(ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: Arguments::Json(input.clone()),
        });
    }
    Ok(calls)
}

/// The `tool_result` block answering one call.
///
/// `content` is a string for text-only results and a list of `text` and `image` (base64) blocks
/// when there are images; images of other types than JPEG, PNG, GIF and WebP (the types the API
/// accepts) become placeholder text. Errors carry `"is_error": true`. An empty result has no
/// `content` (the field is optional, and empty text blocks are rejected).
pub fn render_block(result: &ToolResult) -> Value {
    let output = &result.output;
    let mut block = Map::new();
    block.insert("type".to_owned(), json!("tool_result"));
    block.insert("tool_use_id".to_owned(), json!(result.call_id));
    let has_image = output.content.iter().any(
        |c| matches!(c, Content::Image { mime_type, .. } if COMMON_IMAGE_TYPES.contains(&mime_type.as_str())),
    );
    let parts = pieces(output, COMMON_IMAGE_TYPES);
    if has_image {
        let blocks: Vec<Value> = parts
            .into_iter()
            .filter_map(|piece| match piece {
                Piece::Text(text) if text.is_empty() => None,
                Piece::Text(text) => Some(json!({ "type": "text", "text": text })),
                Piece::Image { mime_type, data } => Some(json!({
                    "type": "image",
                    "source": { "type": "base64", "media_type": mime_type, "data": data },
                })),
            })
            .collect();
        block.insert("content".to_owned(), Value::Array(blocks));
    } else {
        let texts: Vec<String> = parts
            .into_iter()
            .filter_map(|piece| match piece {
                Piece::Text(text) => Some(text.into_owned()),
                Piece::Image { .. } => None,
            })
            .collect();
        let text = texts.join("\n");
        if !text.is_empty() {
            block.insert("content".to_owned(), Value::String(text));
        }
    }
    if output.is_error {
        block.insert("is_error".to_owned(), json!(true));
    }
    Value::Object(block)
}

/// One user message holding every result's `tool_result` block, in order (the API wants all
/// results of a turn in the next user message); empty when there are no results.
pub fn render_results(results: &[ToolResult]) -> Vec<Value> {
    if results.is_empty() {
        return Vec::new();
    }
    let blocks: Vec<Value> = results.iter().map(render_block).collect();
    vec![json!({ "role": "user", "content": blocks })]
}
