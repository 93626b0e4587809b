//! A server's `CallToolResult` as a [`ToolOutput`], keeping every item.

use serde_json::{Map, Value, json};

use tool_core::{Content, ToolOutput};

/// The metadata key holding the server's original content items when some of them (audio,
/// resources, links) reach the model as text only: the UI can still show them whole.
pub const ORIGINAL_CONTENT_KEY: &str = "mcp_content";
/// The metadata key naming the server a result came from.
pub const SERVER_KEY: &str = "mcp_server";

/// Converts a `CallToolResult` (in its wire form) into our output.
///
/// Text and images stay what they are. Items the model can only read as text become text, in
/// place: an embedded text resource is its text under a `[resource: URI]` line, an embedded
/// image blob is an image, another blob, audio or a resource link is one line saying what it is
/// and where. `structuredContent` is kept as structured output (with a text mirror when the
/// server sent no content at all), `isError` as the error flag, and the original items go to
/// [`ORIGINAL_CONTENT_KEY`] whenever one of them was turned into text.
pub fn to_output(server: &str, result: &Value) -> ToolOutput {
    let items = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut output = ToolOutput::default();
    let mut lossy = false;
    for item in items {
        let (content, exact) = item_content(item);
        lossy |= !exact;
        output.content.push(content);
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        if output.content.is_empty() {
            output = ToolOutput { content: ToolOutput::structured(structured.clone()).content, ..output };
        }
        output.structured = Some(structured.clone());
    }
    output.is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    if lossy {
        output.metadata.insert(ORIGINAL_CONTENT_KEY.to_owned(), Value::Array(items.to_vec()));
    }
    output.metadata.insert(SERVER_KEY.to_owned(), json!(server));
    output
}

/// One content item as ours, and whether nothing was lost.
pub(crate) fn item_content(item: &Value) -> (Content, bool) {
    let field = |key: &str| item.get(key).and_then(Value::as_str);
    match field("type") {
        Some("text") => (Content::text(field("text").unwrap_or_default()), true),
        Some("image") => match (field("mimeType"), field("data")) {
            (Some(mime), Some(data)) => (Content::image(mime, data), true),
            _ => (Content::text("[an image the server sent without its data]"), false),
        },
        Some("audio") => {
            let mime = field("mimeType").unwrap_or("audio");
            let size = field("data").map_or(0, base64_len);
            (Content::text(format!("[{mime} audio of {size} bytes: audio cannot be shown here]")), false)
        }
        Some("resource") => resource(item.get("resource").and_then(Value::as_object)),
        Some("resource_link") => {
            let uri = field("uri").unwrap_or_default();
            let mut line = format!("[resource link: {uri}");
            if let Some(name) = field("name") {
                line.push_str(&format!(" ({name})"));
            }
            if let Some(description) = field("description") {
                line.push_str(&format!(": {description}"));
            }
            line.push(']');
            (Content::text(line), false)
        }
        _ => (Content::text(format!("[content the server sent in an unknown form: {item}]")), false),
    }
}

fn resource(resource: Option<&Map<String, Value>>) -> (Content, bool) {
    let Some(resource) = resource else {
        return (Content::text("[an embedded resource without its contents]"), false);
    };
    let field = |key: &str| resource.get(key).and_then(Value::as_str);
    let uri = field("uri").unwrap_or_default();
    let mime = field("mimeType");
    if let Some(text) = field("text") {
        return (Content::text(format!("[resource: {uri}]\n{text}")), false);
    }
    match (mime, field("blob")) {
        (Some(mime), Some(blob)) if mime.starts_with("image/") => (Content::image(mime, blob), false),
        (mime, blob) => {
            let size = blob.map_or(0, base64_len);
            let mime = mime.unwrap_or("binary");
            (Content::text(format!("[resource: {uri}, {mime} data of {size} bytes]")), false)
        }
    }
}

fn base64_len(data: &str) -> usize {
    data.trim_end_matches('=').bytes().filter(|b| !b.is_ascii_whitespace()).count() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_kept_in_order() {
        let result = json!({
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
        let output = to_output("srv", &result);
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
        assert_eq!(output.metadata[ORIGINAL_CONTENT_KEY], result["content"]);
        assert_eq!(output.metadata[SERVER_KEY], "srv");
    }

    #[test]
    fn structured_only_results_get_a_text_mirror() {
        let output = to_output("s", &json!({"content": [], "structuredContent": {"a": [1]}}));
        assert_eq!(output.text_content(), "{\n  \"a\": [\n    1\n  ]\n}");
        assert!(!output.is_error);
        assert!(!output.metadata.contains_key(ORIGINAL_CONTENT_KEY));
    }
}
