//! `ToolOutput`: what a call produced, and the conversions from a tool's return value.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ToolError;

/// One piece of model-facing content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// Base64 (standard alphabet, padded) image bytes.
        data: String,
    },
}

impl Content {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// Image content from a MIME type and base64 data.
    pub fn image(mime_type: impl Into<String>, base64_data: impl Into<String>) -> Self {
        Content::Image { mime_type: mime_type.into(), data: base64_data.into() }
    }

    /// The text, if this is text content.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            Content::Image { .. } => None,
        }
    }
}

/// The result of a tool call.
///
/// `content` is what the model reads. `structured` is machine-readable JSON for clients that
/// understand it (MCP `structuredContent`); a text mirror of it is kept in `content` for those
/// that do not. `metadata` is for the UI and operator only and is never sent to the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Model-facing content, in order.
    pub content: Vec<Content>,
    /// Optional structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// UI-only metadata (never sent to the model).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// A short title for the UI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whether this output reports a failure to the model.
    #[serde(default)]
    pub is_error: bool,
    /// Set once the text has been truncated, so the framework never truncates it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl ToolOutput {
    /// Output holding one text item.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { content: vec![Content::text(text)], ..Default::default() }
    }

    /// An error result holding one text item.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput { is_error: true, ..ToolOutput::text(text) }
    }

    /// Structured output, with its pretty-printed JSON as the text mirror.
    pub fn structured(value: Value) -> Self {
        let mirror = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
        ToolOutput { content: vec![Content::text(mirror)], structured: Some(value), ..Default::default() }
    }

    /// Adds a content item.
    pub fn with_content(mut self, content: Content) -> Self {
        self.content.push(content);
        self
    }

    /// Sets the UI title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds one UI-only metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Adds `text` as a content item that something other than the tool says to the model about
    /// this call (a hook's feedback, a failed check after an edit), and lists it under the
    /// metadata key [`ToolOutput::NOTICES`], where truncation does not reach it: a host that
    /// passes on only part of a result (a script tool, which returns what its script prints)
    /// passes these on whole.
    pub fn with_notice(mut self, text: impl Into<String>) -> Self {
        self.add_notice(text);
        self
    }

    /// [`ToolOutput::with_notice`] in place.
    pub fn add_notice(&mut self, text: impl Into<String>) {
        let text = text.into();
        let listed = self.metadata.entry(Self::NOTICES).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = listed {
            list.push(Value::String(text.clone()));
        }
        self.content.push(Content::text(text));
    }

    /// The metadata key of the notices ([`ToolOutput::with_notice`]): an array of strings.
    pub const NOTICES: &'static str = "notices";

    /// The notices of this result ([`ToolOutput::with_notice`]), in order.
    pub fn notices(&self) -> impl Iterator<Item = &str> {
        let listed = self.metadata.get(Self::NOTICES).and_then(Value::as_array);
        listed.into_iter().flatten().filter_map(Value::as_str)
    }

    /// All text items joined with newlines: what a text-only client shows.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for text in self.content.iter().filter_map(Content::as_text) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
        out
    }
}

/// Values a tool can return as its successful output.
///
/// Implemented for `String`, `&'static str`, `()`, [`ToolOutput`], [`Content`] and [`Json<T>`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned as a tool's output",
    label = "not a tool output",
    note = "a tool returns `String`, `&'static str`, `()`, `ToolOutput`, `Json<T>` (T: Serialize + JsonSchema), or a type implementing `IntoToolOutput`"
)]
pub trait IntoToolOutput {
    /// Converts the value into a [`ToolOutput`].
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;

    /// The JSON Schema of the structured output, for tools that have one (MCP `outputSchema`).
    fn output_schema(generator: &mut schemars::SchemaGenerator) -> Option<Value> {
        let _ = generator;
        None
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self)
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for () {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::default())
    }
}

impl IntoToolOutput for Content {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput { content: vec![self], ..Default::default() })
    }
}

/// Structured output: serialized as the result's structured JSON, with a text mirror, and its
/// schema published as the tool's output schema.
///
/// Clients such as MCP require structured content to be a JSON object, so `T` should serialize
/// to one (a struct or a map).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize + schemars::JsonSchema> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            ToolError::execution("the tool produced a result that could not be serialized").with_source(e)
        })?;
        Ok(ToolOutput::structured(value))
    }

    fn output_schema(generator: &mut schemars::SchemaGenerator) -> Option<Value> {
        Some(crate::schema::root_schema_with::<T>(generator))
    }
}

/// A tool function's return type: `Result<T, E>` or a bare `T`, where `T: IntoToolOutput`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a valid tool return type",
    label = "a tool must return `Result<T, E>` or `T`",
    note = "`T` must be `String`, `&'static str`, `()`, `ToolOutput`, `Json<T>` or implement `IntoToolOutput`; `E` must implement `Display` (`ToolError`, `std::io::Error`, `anyhow::Error`, ...)"
)]
pub trait IntoToolResult {
    /// The successful output type.
    type Output: IntoToolOutput;
    /// The error type (`Infallible` for a bare `T`).
    type Error;
    /// Splits the value into success or failure.
    fn into_tool_result(self) -> Result<Self::Output, Self::Error>;
}

impl<T: IntoToolOutput, E> IntoToolResult for Result<T, E> {
    type Output = T;
    type Error = E;
    fn into_tool_result(self) -> Result<T, E> {
        self
    }
}

impl<T: IntoToolOutput> IntoToolResult for T {
    type Output = T;
    type Error = std::convert::Infallible;
    fn into_tool_result(self) -> Result<T, std::convert::Infallible> {
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_content_joins_text_items_and_skips_images() {
        let out = ToolOutput::text("a")
            .with_content(Content::image("image/png", "AAAA"))
            .with_content(Content::text("b"));
        assert_eq!(out.text_content(), "a\nb");
    }

    #[test]
    fn json_output_has_structured_value_and_text_mirror() {
        #[derive(Serialize, schemars::JsonSchema)]
        struct Count {
            n: u32,
        }
        let out = Json(Count { n: 3 }).into_tool_output().unwrap();
        assert_eq!(out.structured, Some(serde_json::json!({"n": 3})));
        assert_eq!(out.text_content(), "{\n  \"n\": 3\n}");
    }
}
