//! Google Gemini: `functionDeclarations`, `functionCall` parts, and `functionResponse` parts.

use serde_json::{Map, Value, json};

use crate::extras;
use crate::lowering::{Target, check_root, gemini as lower, without_dialect};
use crate::{
    Arguments, At, DefinitionOptions, LoweringError, ParseError, Piece, Provider, ToolCall, ToolResult,
    json_kind, pieces,
};
use tool_core::Registry;
use tool_core::ToolSpec;
use tool_core::stable_hash::Fnv1a;

const PROVIDER: Provider = Provider::Gemini;

/// The prefix of call ids made up for `functionCall`s that carry no `id`.
pub const SYNTHETIC_ID_PREFIX: &str = "gemini-call-";

/// Image types accepted inline in a `functionResponse` (multimodal function responses).
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp"];

/// The function declaration of one tool: `{"name", "description", "parameters"?}`.
///
/// `parameters` is the argument schema lowered to Gemini's OpenAPI subset (every type inlined,
/// `nullable` instead of null types, only the `Schema` fields Gemini has); a tool without
/// arguments has no `parameters`, since Gemini rejects an OBJECT with empty `properties`. A
/// recursive argument type cannot be inlined and is a [`LoweringError`].
///
/// With `options.gemini_json_schema`, the declaration carries `parametersJsonSchema` instead:
/// the canonical schema as it is (without `$schema`), `$ref`s and all. `parameters` stays the
/// default because every Gemini API version accepts it. Examples are appended to the description
/// (Gemini has no field for them). `options.strict` does not apply.
pub fn definition(spec: &ToolSpec, options: &DefinitionOptions) -> Result<Value, LoweringError> {
    let target = Target { provider: PROVIDER, strict: false, tool: &spec.name };
    let mut declaration = Map::new();
    declaration.insert("name".to_owned(), json!(spec.name));
    let description = extras::description_with_examples(spec, extras::compact);
    if !description.is_empty() {
        declaration.insert("description".to_owned(), json!(description));
    }
    if options.gemini_json_schema {
        check_root(&target, &spec.input_schema, false)?;
        declaration.insert("parametersJsonSchema".to_owned(), without_dialect(&spec.input_schema));
    } else if let Some(parameters) = lower(&target, &spec.input_schema)? {
        declaration.insert("parameters".to_owned(), parameters);
    }
    Ok(Value::Object(declaration))
}

/// The function declarations of every tool in `registry` (what goes in
/// `tools[].functionDeclarations`).
pub fn definitions(registry: &Registry, options: &DefinitionOptions) -> Result<Vec<Value>, LoweringError> {
    PROVIDER.definitions(registry, options)
}

/// The request's `tools` entry: `{"functionDeclarations": [...]}`.
pub fn tool(registry: &Registry, options: &DefinitionOptions) -> Result<Value, LoweringError> {
    Ok(json!({ "functionDeclarations": definitions(registry, options)? }))
}

/// The `functionCall` parts of a model turn (`{"role": "model", "parts": [...]}`), of the first
/// candidate of a whole response (`{"candidates": [{"content": ...}]}`), or of a candidate.
///
/// `args` (an object) is kept as the parsed value ([`Arguments::Json`]), `{}` when absent. A call
/// without an `id` gets a stable made-up one,
/// `gemini-call-<index>-<hash of name and arguments>`; such ids are not sent back in the
/// `functionResponse`, which is matched by name and order instead.
pub fn parse_tool_calls(message: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = At::root(PROVIDER);
    let top = root.object(message)?;
    let (content, path) = if let Some(candidates) = top.get("candidates") {
        let candidates = candidates.as_array().ok_or_else(|| {
            root.error(format!("`candidates` must be an array, found {}", json_kind(candidates)))
        })?;
        let first = candidates.first().ok_or_else(|| root.error("`candidates` is empty"))?;
        let at = root.with("candidates[0]");
        let content = at.object(first)?.get("content").ok_or_else(|| at.error("`content` is missing"))?;
        (content, "candidates[0].content")
    } else if let Some(content) = top.get("content").filter(|c| c.is_object()) {
        (content, "content")
    } else {
        (message, "")
    };
    let at = root.with(path);
    let content = at.object(content)?;
    at.expect_role(content, "model")?;
    let parts_path = at.child_path("parts");
    let parts = at.array(content, "parts")?;
    let mut calls = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        let part_path = root.with(&parts_path).index_path(index);
        let at = root.with(&part_path);
        let part = at.object(part)?;
        let (key, call) = match (part.get("functionCall"), part.get("function_call")) {
            (Some(call), _) => ("functionCall", call),
            (None, Some(call)) => ("function_call", call),
            (None, None) => continue,
        };
        let call_path = at.child_path(key);
        let at = root.with(&call_path);
        let call = at.object(call)?;
        let name = at.string(call, "name")?;
        let arguments = match call.get("args") {
            None | Some(Value::Null) => Arguments::default(),
            Some(args) => Arguments::Json(args.clone()),
        };
        let id = match call.get("id") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            None | Some(Value::Null) | Some(Value::String(_)) => synthetic_id(calls.len(), name, &arguments),
            Some(other) => return Err(at.error(format!("`id` must be a string, found {}", json_kind(other)))),
        };
        calls.push(ToolCall { id, name: name.to_owned(), arguments });
    }
    Ok(calls)
}

/// `gemini-call-<index>-<FNV-1a of name and arguments>`: the same message always yields the
/// same ids, and the same position in different turns rarely does.
fn synthetic_id(index: usize, name: &str, arguments: &Arguments) -> String {
    let mut hash = Fnv1a::new();
    hash.add(name.as_bytes());
    hash.add(&[0]);
    match arguments {
        Arguments::Text(text) | Arguments::Freeform { freeform: text } => hash.add(text.as_bytes()),
        // The compact JSON text of the arguments, hashed as it is written.
        Arguments::Json(value) => {
            let _ = serde_json::to_writer(&mut hash, value);
        }
    }
    format!("{SYNTHETIC_ID_PREFIX}{index}-{:08x}", hash.finish())
}

/// The `functionResponse` part answering one call.
///
/// `response` is an object, as the API requires: `{"error": text}` for errors, the structured
/// result itself when it is an object, `{"output": ...}` otherwise. PNG, JPEG and WebP images
/// go in the response's `parts` as `inlineData` (multimodal function responses); other images
/// become placeholder text. `name` is the tool's; `id` is echoed only when the call had one.
pub fn render_part(result: &ToolResult) -> Value {
    let output = &result.output;
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for piece in pieces(output, IMAGE_TYPES) {
        match piece {
            Piece::Text(text) => texts.push(text.into_owned()),
            Piece::Image { mime_type, data } => {
                images.push(json!({ "inlineData": { "mimeType": mime_type, "data": data } }));
            }
        }
    }
    let text = texts.join("\n");
    let response = if output.is_error {
        json!({ "error": text })
    } else {
        match &output.structured {
            Some(structured @ Value::Object(_)) => structured.clone(),
            Some(structured) => json!({ "output": structured }),
            None => json!({ "output": text }),
        }
    };
    let mut function_response = Map::new();
    if !result.call_id.starts_with(SYNTHETIC_ID_PREFIX) {
        function_response.insert("id".to_owned(), json!(result.call_id));
    }
    function_response.insert("name".to_owned(), json!(result.tool));
    function_response.insert("response".to_owned(), response);
    if !images.is_empty() {
        function_response.insert("parts".to_owned(), Value::Array(images));
    }
    json!({ "functionResponse": function_response })
}

/// One `user` turn holding every result's `functionResponse` part, in call order; empty when
/// there are no results.
pub fn render_results(results: &[ToolResult]) -> Vec<Value> {
    if results.is_empty() {
        return Vec::new();
    }
    let parts: Vec<Value> = results.iter().map(render_part).collect();
    vec![json!({ "role": "user", "parts": parts })]
}
