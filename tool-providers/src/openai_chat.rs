//! OpenAI Chat Completions: `tools[].function` definitions, `tool_calls`, and `role: tool` messages.

use serde_json::{Map, Value, json};

use crate::extras;
use crate::lowering::openai_parameters;
use crate::{
    Arguments, At, DefinitionOptions, LoweringError, ParseError, Provider, ToolCall, ToolResult,
    flagged_text, json_kind, text_with_placeholders,
};
use tool_core::Registry;
use tool_core::ToolSpec;

const PROVIDER: Provider = Provider::OpenAiChat;

/// The `tools` entry of one tool:
/// `{"type": "function", "function": {"name", "description", "parameters", "strict"?}}`.
///
/// `strict: true` is present only in strict mode (the API's default is `false`).
pub fn definition(spec: &ToolSpec, options: &DefinitionOptions) -> Result<Value, LoweringError> {
    let mut function = Map::new();
    function.insert("name".to_owned(), json!(spec.name));
    let description = extras::description_with_examples(spec, extras::compact);
    if !description.is_empty() {
        function.insert("description".to_owned(), json!(description));
    }
    function.insert("parameters".to_owned(), openai_parameters(spec, options, PROVIDER)?);
    if options.strict {
        function.insert("strict".to_owned(), json!(true));
    }
    Ok(json!({ "type": "function", "function": function }))
}

/// The `tools` array for every tool in `registry`.
pub fn definitions(registry: &Registry, options: &DefinitionOptions) -> Result<Vec<Value>, LoweringError> {
    PROVIDER.definitions(registry, options)
}

/// The tool calls of an assistant message (`{"role": "assistant", "tool_calls": [...]}`), or of
/// the first choice of a whole chat completion (`{"choices": [{"message": ...}]}`).
///
/// `function.arguments` is kept exactly as sent. OpenAI sends a string, kept as
/// [`Arguments::Text`]; an object (as some compatible servers send) is kept as the parsed value,
/// [`Arguments::Json`].
pub fn parse_tool_calls(message: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let root = At::root(PROVIDER);
    let top = root.object(message)?;
    let (message, path) = match top.get("choices") {
        Some(choices) => {
            let choices = choices.as_array().ok_or_else(|| {
                root.error(format!("`choices` must be an array, found {}", json_kind(choices)))
            })?;
            let first = choices.first().ok_or_else(|| root.error("`choices` is empty"))?;
            let at = root.with("choices[0]");
            let message = at.object(first)?.get("message").ok_or_else(|| at.error("`message` is missing"))?;
            (message, "choices[0].message")
        }
        None => (message, ""),
    };
    let at = root.with(path);
    let message = at.object(message)?;
    at.expect_role(message, "assistant")?;
    let list_path = at.child_path("tool_calls");
    let list = at.array(message, "tool_calls")?;
    let mut calls = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let entry_path = root.with(&list_path).index_path(index);
        let at = root.with(&entry_path);
        let entry = at.object(entry)?;
        let id = at.string(entry, "id")?;
        match entry.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::String(kind)) if kind == "function" => {}
            Some(other) => {
                return Err(at.error(format!(
                    "unsupported tool call type {other}; only `function` calls can be answered"
                )));
            }
        }
        let function_path = at.child_path("function");
        let function = entry.get("function").ok_or_else(|| at.error("`function` is missing"))?;
        let at = root.with(&function_path);
        let function = at.object(function)?;
        let name = at.string(function, "name")?;
        let arguments = match function.get("arguments") {
            Some(Value::String(text)) => Arguments::Text(text.clone()),
            Some(value @ Value::Object(_)) => Arguments::Json(value.clone()),
            None | Some(Value::Null) => return Err(at.error("`arguments` is missing")),
            Some(other) => {
                return Err(
                    at.error(format!("`arguments` must be a string of JSON, found {}", json_kind(other)))
                );
            }
        };
        calls.push(ToolCall { id: id.to_owned(), name: name.to_owned(), arguments });
    }
    Ok(calls)
}

/// The `role: tool` message answering one call.
///
/// A tool message holds text only, so images become a placeholder line saying what was left
/// out; there is no error flag, so an error's text starts with `Error: `.
pub fn render_result(result: &ToolResult) -> Value {
    let text = flagged_text(&result.output, text_with_placeholders(&result.output));
    json!({ "role": "tool", "tool_call_id": result.call_id, "content": text })
}

/// One `role: tool` message per result, in order.
pub fn render_results(results: &[ToolResult]) -> Vec<Value> {
    results.iter().map(render_result).collect()
}
