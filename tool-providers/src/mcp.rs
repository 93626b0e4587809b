//! Model Context Protocol: `tools/list` entries, `tools/call` requests, and `CallToolResult`s.

use serde_json::{Map, Value, json};

use crate::extras;
use crate::lowering::{Target, check_root, served};
use crate::{
    Arguments, At, DefinitionOptions, LoweringError, ParseError, Provider, ToolCall, ToolResult, json_kind,
};
use tool_core::Registry;
use tool_core::ToolSpec;
use tool_core::{Content, ToolOutput};

const PROVIDER: Provider = Provider::Mcp;

/// The `tools/list` entry of one tool:
/// `{"name", "title"?, "description", "inputSchema", "outputSchema"?, "annotations"?}`.
///
/// `inputSchema` is the canonical schema (draft 2020-12 is MCP's default dialect), less `format`
/// values JSON Schema does not define (schemars' `uint64` and the like, which clients such as
/// Gemini CLI warn about); it must be `"type": "object"`. `outputSchema` is the schema of a `Json<T>` result and must be an object
/// schema too, because `structuredContent` is a JSON object.
///
/// `annotations` holds the title and the hints the tool declares: `readOnlyHint`,
/// `destructiveHint` (only for tools that are not read-only, where it is meaningful),
/// `idempotentHint` and `openWorldHint`. Undeclared hints are left out rather than written as
/// `false`, since MCP's defaults for absent hints are the cautious ones (destructive, open
/// world). Examples are appended to the description (the specification has no field for them).
/// `options.strict` does not apply.
pub fn definition(spec: &ToolSpec, _options: &DefinitionOptions) -> Result<Value, LoweringError> {
    let target = Target { provider: PROVIDER, strict: false, tool: &spec.name };
    check_root(&target, &spec.input_schema, true)?;
    let mut tool = Map::new();
    tool.insert("name".to_owned(), json!(spec.name));
    if let Some(title) = &spec.annotations.title {
        tool.insert("title".to_owned(), json!(title));
    }
    let description = extras::description_with_examples(spec, extras::compact);
    if !description.is_empty() {
        tool.insert("description".to_owned(), json!(description));
    }
    tool.insert("inputSchema".to_owned(), served(&spec.input_schema));
    if let Some(output_schema) = &spec.output_schema {
        if output_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(LoweringError {
                provider: PROVIDER,
                strict: false,
                tool: spec.name.clone(),
                location: String::new(),
                reason: "the output schema is not `\"type\": \"object\"`, but MCP's `structuredContent` must be a JSON object; return `Json` of a struct (or a map)".to_owned(),
            });
        }
        tool.insert("outputSchema".to_owned(), served(output_schema));
    }
    let annotations = &spec.annotations;
    let mut hints = Map::new();
    if let Some(title) = &annotations.title {
        hints.insert("title".to_owned(), json!(title));
    }
    if annotations.read_only {
        hints.insert("readOnlyHint".to_owned(), json!(true));
    } else if annotations.destructive {
        hints.insert("destructiveHint".to_owned(), json!(true));
    }
    if annotations.idempotent {
        hints.insert("idempotentHint".to_owned(), json!(true));
    }
    if annotations.open_world {
        hints.insert("openWorldHint".to_owned(), json!(true));
    }
    if !hints.is_empty() {
        tool.insert("annotations".to_owned(), Value::Object(hints));
    }
    Ok(Value::Object(tool))
}

/// The `tools/list` result's `tools` for every tool in `registry`.
pub fn definitions(registry: &Registry, options: &DefinitionOptions) -> Result<Vec<Value>, LoweringError> {
    PROVIDER.definitions(registry, options)
}

/// The calls of a JSON-RPC `tools/call` request, of a batch (array) of them, or of bare
/// `{"name", "arguments"}` params. The call id is the request id as text (`mcp-call-<index>` for
/// bare params); `arguments` (an object) is kept as the parsed value ([`Arguments::Json`]), `{}`
/// when absent.
pub fn parse_tool_calls(message: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = At::root(PROVIDER);
    match message {
        Value::Array(requests) => requests
            .iter()
            .enumerate()
            .map(|(index, request)| {
                let path = root.index_path(index);
                parse_request(root.with(&path), request, index)
            })
            .collect(),
        _ => parse_request(root, message, 0).map(|call| vec![call]),
    }
}

fn parse_request(at: At<'_>, request: &Value, index: usize) -> Result<ToolCall, ParseError> {
    let object = at.object(request)?;
    let (params, id, params_path) = if object.contains_key("method") {
        let method = at.string(object, "method")?;
        if method != "tools/call" {
            return Err(at.error(format!("expected a `tools/call` request, found method `{method}`")));
        }
        let id = match object.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(Value::Number(id)) => id.to_string(),
            None | Some(Value::Null) => {
                return Err(at.error("`id` is missing (a notification cannot call a tool)"));
            }
            Some(other) => {
                return Err(
                    at.error(format!("`id` must be a string or a number, found {}", json_kind(other)))
                );
            }
        };
        let params = object.get("params").ok_or_else(|| at.error("`params` is missing"))?;
        (params, id, at.child_path("params"))
    } else {
        (request, format!("mcp-call-{index}"), at.path.to_owned())
    };
    let at = at.with(&params_path);
    let params = at.object(params)?;
    let name = at.string(params, "name")?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Arguments::default(),
        Some(arguments) => Arguments::Json(arguments.clone()),
    };
    Ok(ToolCall { id, name: name.to_owned(), arguments })
}

/// The `CallToolResult` of one output: `{"content", "structuredContent"?, "isError"}`.
///
/// Text and images (`{"type": "image", "data", "mimeType"}`) keep their order. Structured
/// output goes in `structuredContent` when it is an object, and `content` keeps its text mirror
/// ("a tool that returns structured content SHOULD also return the serialized JSON in a
/// TextContent block").
pub fn render_output(output: &ToolOutput) -> Value {
    let content: Vec<Value> = output
        .content
        .iter()
        .map(|item| match item {
            Content::Text { text } => json!({ "type": "text", "text": text }),
            Content::Image { mime_type, data } => {
                json!({ "type": "image", "data": data, "mimeType": mime_type })
            }
        })
        .collect();
    let mut result = Map::new();
    result.insert("content".to_owned(), Value::Array(content));
    if let Some(structured @ Value::Object(_)) = &output.structured {
        result.insert("structuredContent".to_owned(), structured.clone());
    }
    result.insert("isError".to_owned(), json!(output.is_error));
    Value::Object(result)
}

/// The `CallToolResult` answering one call.
pub fn render_result(result: &ToolResult) -> Value {
    render_output(&result.output)
}

/// One `CallToolResult` per result, in order (each answers its own `tools/call` request).
pub fn render_results(results: &[ToolResult]) -> Vec<Value> {
    results.iter().map(render_result).collect()
}
