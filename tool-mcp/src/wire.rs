//! Where rmcp's types and ours meet, both ways, in one place: a server's tool as our
//! [`ToolSpec`] ([`tool_spec`]), a server's result as our [`ToolOutput`] ([`tool_output`]), and
//! our output as MCP's result ([`call_tool_result`]), typed on both sides.
//!
//! Items of a server's result that our output can only hold as text (audio, embedded
//! resources, resource links) are kept whole under [`ORIGINAL_CONTENT_KEY`] in the output's
//! metadata, in MCP's JSON form, so a UI can show them and `tools serve` can pass them on
//! unchanged.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, ResultType, Tool};
use serde::Deserialize;
use serde_json::{Value, json};

use tool_core::{Content, ToolAnnotations, ToolOutput, ToolSpec};

/// The metadata key holding the server's original content items when some of them (audio,
/// resources, links) reach the model as text only: the UI can still show them whole.
pub const ORIGINAL_CONTENT_KEY: &str = "mcp_content";
/// The metadata key naming the server a result came from.
pub const SERVER_KEY: &str = "mcp_server";

/// A server's tool as our spec, named `name`: its description, input and output schemas,
/// title and annotations (the hints a server sets to `true`; any other value is no hint).
pub fn tool_spec(tool: &Tool, name: impl Into<String>) -> ToolSpec {
    let input_schema = Value::Object((*tool.input_schema).clone());
    let mut spec = ToolSpec::new(name, tool.description.as_deref().unwrap_or_default(), input_schema);
    spec.output_schema = tool.output_schema.as_ref().map(|schema| Value::Object((**schema).clone()));
    let hints = tool.annotations.as_ref();
    let hint = |get: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| hints.and_then(get) == Some(true);
    spec.annotations = ToolAnnotations {
        title: tool.title.clone().or_else(|| hints.and_then(|hints| hints.title.clone())),
        read_only: hint(|hints| hints.read_only_hint),
        destructive: hint(|hints| hints.destructive_hint),
        idempotent: hint(|hints| hints.idempotent_hint),
        open_world: hint(|hints| hints.open_world_hint),
    };
    spec
}

/// A server's `CallToolResult` as our output, from `server`.
///
/// Text and images stay what they are. Items the model can only read as text become text, in
/// place: an embedded text resource is its text under a `[resource: URI]` line, an embedded
/// image blob is an image, another blob, audio or a resource link is one line saying what it is
/// and where. `structuredContent` is kept as structured output (with a text mirror when the
/// server sent no content at all), `isError` as the error flag, and the original items go to
/// [`ORIGINAL_CONTENT_KEY`] whenever one of them was turned into text.
pub fn tool_output(server: &str, result: &CallToolResult) -> ToolOutput {
    let mut output = ToolOutput::default();
    let mut lossy = false;
    for item in &result.content {
        let (content, exact) = content(item);
        lossy |= !exact;
        output.content.push(content);
    }
    if let Some(structured) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        if output.content.is_empty() {
            output = ToolOutput { content: ToolOutput::structured(structured.clone()).content, ..output };
        }
        output.structured = Some(structured.clone());
    }
    output.is_error = result.is_error.unwrap_or(false);
    if lossy {
        // The one place our output holds MCP's own JSON: for a UI, and for `call_tool_result`.
        let originals = serde_json::to_value(&result.content).unwrap_or(Value::Null);
        output.metadata.insert(ORIGINAL_CONTENT_KEY.to_owned(), originals);
    }
    output.metadata.insert(SERVER_KEY.to_owned(), json!(server));
    output
}

/// Our output as MCP's result: text and images in order, structured output (an object) in
/// `structuredContent` next to its text mirror, and `resultType` set (2026-07-28 requires it;
/// rmcp removes it for older revisions).
///
/// The items of a mounted server's result that our output holds as text (audio, embedded
/// resources, resource links) are served as the server sent them, in their own type, as long as
/// nothing changed them on the way (a hook, or truncation, makes the item ours).
pub fn call_tool_result(output: ToolOutput) -> CallToolResult {
    let originals: Option<Vec<ContentBlock>> = output
        .metadata
        .get(ORIGINAL_CONTENT_KEY)
        .and_then(|originals| Vec::<ContentBlock>::deserialize(originals).ok())
        .filter(|originals| originals.len() == output.content.len());
    let content = output
        .content
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            if let Some(original) = originals.as_ref().and_then(|originals| originals.get(index))
                && self::content(original).0 == item
            {
                return original.clone();
            }
            match item {
                Content::Text { text } => ContentBlock::text(text),
                Content::Image { mime_type, data } => ContentBlock::image(data, mime_type),
            }
        })
        .collect();
    let mut result =
        if output.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    if let Some(structured @ Value::Object(_)) = output.structured {
        result.structured_content = Some(structured);
    }
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// One content item as ours, and whether nothing was lost.
fn content(item: &ContentBlock) -> (Content, bool) {
    match item {
        ContentBlock::Text(text) => (Content::text(text.text.as_str()), true),
        ContentBlock::Image(image) => (Content::image(image.mime_type.as_str(), image.data.as_str()), true),
        ContentBlock::Audio(audio) => {
            let size = base64_len(&audio.data);
            let mime = if audio.mime_type.is_empty() { "audio" } else { &audio.mime_type };
            (Content::text(format!("[{mime} audio of {size} bytes: audio cannot be shown here]")), false)
        }
        ContentBlock::Resource(embedded) => (resource(&embedded.resource), false),
        ContentBlock::ResourceLink(link) => {
            let mut line = format!("[resource link: {}", link.uri);
            if !link.name.is_empty() {
                line.push_str(&format!(" ({})", link.name));
            }
            if let Some(description) = &link.description {
                line.push_str(&format!(": {description}"));
            }
            line.push(']');
            (Content::text(line), false)
        }
        other => {
            let wire = serde_json::to_string(other).unwrap_or_default();
            (Content::text(format!("[content the server sent in an unknown form: {wire}]")), false)
        }
    }
}

fn resource(resource: &ResourceContents) -> Content {
    match resource {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            Content::text(format!("[resource: {uri}]\n{text}"))
        }
        ResourceContents::BlobResourceContents { mime_type: Some(mime), blob, .. }
            if mime.starts_with("image/") =>
        {
            Content::image(mime.as_str(), blob.as_str())
        }
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
            let size = base64_len(blob);
            let mime = mime_type.as_deref().unwrap_or("binary");
            Content::text(format!("[resource: {uri}, {mime} data of {size} bytes]"))
        }
        _ => Content::text("[an embedded resource in a form this client does not know]"),
    }
}

fn base64_len(data: &str) -> usize {
    data.trim_end_matches('=').bytes().filter(|b| !b.is_ascii_whitespace()).count() * 3 / 4
}

/// MCP's logging level as ours.
#[allow(deprecated)] // Logging is deprecated in rmcp (SEP-2577); the revisions before 2026-07-28 have it.
pub fn log_level(level: &rmcp::model::LoggingLevel) -> tool_core::LogLevel {
    use rmcp::model::LoggingLevel as Mcp;
    use tool_core::LogLevel as Ours;
    match level {
        Mcp::Debug => Ours::Debug,
        Mcp::Info => Ours::Info,
        Mcp::Notice => Ours::Notice,
        Mcp::Warning => Ours::Warning,
        Mcp::Error => Ours::Error,
        Mcp::Critical => Ours::Critical,
        Mcp::Alert => Ours::Alert,
        Mcp::Emergency => Ours::Emergency,
    }
}

/// Our log level as MCP's.
#[allow(deprecated)] // As for `log_level`.
pub fn logging_level(level: tool_core::LogLevel) -> rmcp::model::LoggingLevel {
    use rmcp::model::LoggingLevel as Mcp;
    use tool_core::LogLevel as Ours;
    match level {
        Ours::Debug => Mcp::Debug,
        Ours::Info => Mcp::Info,
        Ours::Notice => Mcp::Notice,
        Ours::Warning => Mcp::Warning,
        Ours::Error => Mcp::Error,
        Ours::Critical => Mcp::Critical,
        Ours::Alert => Mcp::Alert,
        Ours::Emergency => Mcp::Emergency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn every_item_is_kept_in_order() {
        let wire = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw=="},
                {"type": "audio", "mimeType": "audio/wav", "data": "AAAAAAAA"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/octet-stream", "blob": "AAAA"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"}
            ],
            "structuredContent": {"n": 1},
            "isError": true
        });
        let output = tool_output("srv", &result(wire.clone()));
        assert_eq!(
            output.content,
            vec![
                Content::text("hello"),
                Content::image("image/png", "iVBORw=="),
                Content::text("[audio/wav audio of 6 bytes: audio cannot be shown here]"),
                Content::text("[resource: file:///a.txt]\nA"),
                Content::text("[resource: file:///b.bin, application/octet-stream data of 3 bytes]"),
                Content::text("[resource link: file:///c (c)]"),
            ]
        );
        assert_eq!(output.structured, Some(json!({"n": 1})));
        assert!(output.is_error);
        assert_eq!(output.metadata[ORIGINAL_CONTENT_KEY], wire["content"]);
        assert_eq!(output.metadata[SERVER_KEY], "srv");
    }

    #[test]
    fn structured_only_results_get_a_text_mirror() {
        let output = tool_output("s", &result(json!({"content": [], "structuredContent": {"a": [1]}})));
        assert_eq!(output.text_content(), "{\n  \"a\": [\n    1\n  ]\n}");
        assert!(!output.is_error);
        assert!(!output.metadata.contains_key(ORIGINAL_CONTENT_KEY));
    }

    #[test]
    fn a_mounted_servers_items_are_served_as_it_sent_them_unless_changed() {
        let wire = json!({"content": [
            {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
            {"type": "text", "text": "t"}
        ]});
        let output = tool_output("srv", &result(wire.clone()));
        let served = serde_json::to_value(call_tool_result(output.clone())).unwrap();
        assert_eq!(served["content"], wire["content"]);
        let mut changed = output;
        changed.content[0] = Content::text("rewritten by a hook");
        let served = serde_json::to_value(call_tool_result(changed)).unwrap();
        assert_eq!(served["content"][0], json!({"type": "text", "text": "rewritten by a hook"}));
    }

    /// The rmcp-typed result served here and the JSON of the provider format `tool_providers::mcp`
    /// (for applications that speak MCP themselves) are two renderings of one output: they must
    /// not drift apart.
    #[test]
    fn the_served_result_is_the_provider_formats_json() {
        let outputs = [
            ToolOutput::text("plain"),
            ToolOutput::error("it failed"),
            ToolOutput::text("a")
                .with_content(Content::image("image/png", "iVBORw=="))
                .with_content(Content::text("b")),
            ToolOutput::structured(json!({"n": 1})),
            ToolOutput::structured(json!([1])),
            ToolOutput::default(),
        ];
        for output in outputs {
            let mut served = serde_json::to_value(call_tool_result(output.clone())).unwrap();
            assert_eq!(served.as_object_mut().unwrap().remove("resultType"), Some(json!("complete")));
            assert_eq!(served, tool_providers::mcp::render_output(&output), "{output:?}");
        }
    }

    #[test]
    fn a_tools_spec_takes_its_schemas_title_and_hints() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "remote", "description": "d",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"title": "T", "readOnlyHint": true, "destructiveHint": false}
        }))
        .unwrap();
        let spec = tool_spec(&tool, "srv__remote");
        assert_eq!(spec.name, "srv__remote");
        assert_eq!(spec.description, "d");
        assert_eq!(spec.input_schema["properties"]["a"]["type"], "string");
        assert_eq!(spec.output_schema, Some(json!({"type": "object"})));
        assert_eq!(spec.annotations.title.as_deref(), Some("T"));
        assert!(spec.annotations.read_only && !spec.annotations.destructive && !spec.annotations.idempotent);
    }
}
