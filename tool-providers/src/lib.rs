//! Provider formats: tool definitions, tool-call parsing and result rendering for each LLM API,
//! and [`catalog`]s of deferred tools with a tool search.
//!
//! Every provider gets the same three operations, as free functions in its module and through
//! [`Provider`]:
//!
//! - `definitions(registry, options)`: the registry's tools in the provider's definition shape,
//!   with the canonical argument schema (draft 2020-12) lowered to what the provider accepts. A
//!   schema that cannot be lowered is a [`LoweringError`] naming the tool and the reason, never a
//!   silently different schema.
//! - `parse_tool_calls(message)`: the tool calls of one assistant message as [`ToolCall`]s, with
//!   the arguments kept in the form the provider sent them ([`Arguments`]: OpenAI's JSON text,
//!   so that validation reports the model's own mistakes; the object Anthropic, Gemini and MCP
//!   send, never written out and parsed again). A malformed message is a [`ParseError`] saying where and what.
//! - `render_results(results)`: the messages (or input items) to append to the conversation,
//!   in order, carrying every result in the provider's own form.
//!
//! ```
//! use serde_json::json;
//! use tool_runtime::providers::{Arguments, DefinitionOptions, Provider};
//! use tool_runtime::{Registry, ToolOutput, ToolResult};
//!
//! let provider: Provider = "anthropic".parse().unwrap();
//! let registry = Registry::builder().build().unwrap();
//! assert!(provider.definitions(&registry, &DefinitionOptions::default()).unwrap().is_empty());
//!
//! let message = json!({"role": "assistant", "content": [
//!     {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1}}
//! ]});
//! let calls = provider.parse_tool_calls(&message).unwrap();
//! assert_eq!(calls[0].arguments, Arguments::Json(json!({"a": 1})));
//!
//! let results = [ToolResult { call_id: calls[0].id.clone(), tool: "add".into(), output: ToolOutput::text("2"), freeform: false }];
//! assert_eq!(provider.render_results(&results), vec![json!({"role": "user", "content": [
//!     {"type": "tool_result", "tool_use_id": "toolu_1", "content": "2"}
//! ]})]);
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use tool_core::Registry;
use tool_core::ToolSpec;
pub use tool_core::{Arguments, ToolCall, ToolResult};
use tool_core::{Content, ToolOutput};

pub mod anthropic;
pub mod catalog;
mod extras;
pub mod gemini;
mod lowering;
pub mod mcp;
pub mod openai_chat;
pub mod openai_responses;

/// An LLM API whose tool format this crate speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions (`tools[].function`, `tool_calls`, `role: tool` messages).
    OpenAiChat,
    /// OpenAI Responses (`function` tools, `function_call` / `function_call_output` items).
    OpenAiResponses,
    /// Anthropic Messages (`input_schema`, `tool_use` / `tool_result` blocks).
    Anthropic,
    /// Google Gemini (`functionDeclarations`, `functionCall` / `functionResponse` parts).
    Gemini,
    /// Model Context Protocol (`tools/list` entries, `tools/call` requests, `CallToolResult`).
    Mcp,
}

impl Provider {
    /// Every provider, in a stable order.
    pub const ALL: [Provider; 5] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The command-line name: `openai-chat`, `openai-responses`, `anthropic`, `gemini` or `mcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai-chat",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    /// The API's name, for messages.
    pub fn display_name(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "OpenAI Chat Completions",
            Provider::OpenAiResponses => "OpenAI Responses",
            Provider::Anthropic => "Anthropic Messages",
            Provider::Gemini => "Gemini",
            Provider::Mcp => "MCP",
        }
    }

    /// The tool definitions of every tool in `registry`, in registration order.
    pub fn definitions(
        self,
        registry: &Registry,
        options: &DefinitionOptions,
    ) -> Result<Vec<Value>, LoweringError> {
        let mut definitions: Vec<Value> =
            registry.specs().map(|spec| self.definition(spec, options)).collect::<Result<_, _>>()?;
        if self == Provider::Anthropic && options.anthropic_cache_control {
            extras::anthropic_cache_breakpoint(&mut definitions);
        }
        Ok(definitions)
    }

    /// The definition of one tool.
    ///
    /// A name the provider does not accept (each API has its own rule: OpenAI 1 to 64 characters
    /// of `[A-Za-z0-9_-]`, Anthropic up to 128 of the same, Gemini a letter or `_` first and
    /// `.` and `:` allowed, MCP 1 to 128 of `[A-Za-z0-9_.-]`) is a [`LoweringError`] naming the
    /// tool and the rule.
    pub fn definition(self, spec: &ToolSpec, options: &DefinitionOptions) -> Result<Value, LoweringError> {
        extras::check_name(self, spec)?;
        match self {
            Provider::OpenAiChat => openai_chat::definition(spec, options),
            Provider::OpenAiResponses => openai_responses::definition(spec, options),
            Provider::Anthropic => anthropic::definition(spec, options),
            Provider::Gemini => gemini::definition(spec, options),
            Provider::Mcp => mcp::definition(spec, options),
        }
    }

    /// The tool calls of one assistant message (for MCP: one `tools/call` request or a batch).
    pub fn parse_tool_calls(self, message: &Value) -> Result<Vec<ToolCall>, ParseError> {
        match self {
            Provider::OpenAiChat => openai_chat::parse_tool_calls(message),
            Provider::OpenAiResponses => openai_responses::parse_tool_calls(message),
            Provider::Anthropic => anthropic::parse_tool_calls(message),
            Provider::Gemini => gemini::parse_tool_calls(message),
            Provider::Mcp => mcp::parse_tool_calls(message),
        }
    }

    /// The messages (or input items) that carry `results` back, to append to the conversation
    /// in order. Empty when `results` is empty.
    pub fn render_results(self, results: &[ToolResult]) -> Vec<Value> {
        match self {
            Provider::OpenAiChat => openai_chat::render_results(results),
            Provider::OpenAiResponses => openai_responses::render_results(results),
            Provider::Anthropic => anthropic::render_results(results),
            Provider::Gemini => gemini::render_results(results),
            Provider::Mcp => mcp::render_results(results),
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| UnknownProvider { name: name.to_owned() })
    }
}

/// A provider name that is not one of [`Provider::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProvider {
    /// The name that was given.
    pub name: String,
}

impl fmt::Display for UnknownProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Provider::ALL.iter().map(|p| p.as_str()).collect();
        write!(f, "unknown provider format `{}`; expected one of {}", self.name, names.join(", "))
    }
}

impl std::error::Error for UnknownProvider {}

/// How tool definitions are produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefinitionOptions {
    /// Strict mode: the provider constrains the model's arguments to the schema.
    ///
    /// OpenAI (structured outputs for function arguments): every property required, optional
    /// ones nullable, every object closed, `"strict": true`. Anthropic (strict tool use):
    /// every object closed, constraints the API does not take moved into descriptions,
    /// `"strict": true`. Ignored by Gemini and MCP.
    pub strict: bool,
    /// Anthropic: `"cache_control": {"type": "ephemeral"}` on the last definition, so the
    /// definitions are cached as a prompt prefix. Ignored by the other providers, which cache
    /// prefixes without being asked.
    pub anthropic_cache_control: bool,
    /// Gemini: the canonical JSON Schema as `parametersJsonSchema` instead of `parameters`
    /// lowered to Gemini's OpenAPI subset. Off by default: every Gemini API version and model
    /// accepts `parameters`, while `parametersJsonSchema` is the newer field; turn it on to keep
    /// what the subset cannot say (`$ref`s, so recursive types, and `anyOf` as written).
    /// Ignored by the other providers.
    pub gemini_json_schema: bool,
}

impl DefinitionOptions {
    /// Options with strict mode on.
    pub fn strict() -> Self {
        DefinitionOptions { strict: true, ..DefinitionOptions::default() }
    }

    /// Sets strict mode (OpenAI and Anthropic).
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Sets Anthropic's cache breakpoint on the last definition.
    pub fn with_anthropic_cache_control(mut self, cache_control: bool) -> Self {
        self.anthropic_cache_control = cache_control;
        self
    }

    /// Sets Gemini's `parametersJsonSchema` form.
    pub fn with_gemini_json_schema(mut self, json_schema: bool) -> Self {
        self.gemini_json_schema = json_schema;
        self
    }
}

/// A tool that cannot be described to a provider: its schema cannot be expressed in the
/// provider's dialect, or its name breaks the provider's rule for names.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoweringError {
    /// The provider the definition was for.
    pub provider: Provider,
    /// Whether strict mode was on.
    pub strict: bool,
    /// The tool's name.
    pub tool: String,
    /// Where in the arguments the problem is (`edits[].old`, `env`); empty for the whole object.
    pub location: String,
    /// What cannot be expressed and what to do instead, as a sentence naming the argument.
    pub reason: String,
}

impl LoweringError {
    /// A definition of `tool` for `provider` that cannot be made, for `reason` (a sentence
    /// naming the argument), at `location` in the arguments (empty for the whole object).
    pub fn new(
        provider: Provider,
        strict: bool,
        tool: impl Into<String>,
        location: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        LoweringError {
            provider,
            strict,
            tool: tool.into(),
            location: location.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for LoweringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.strict { " strict mode" } else { "" };
        write!(
            f,
            "the tool `{}` cannot be described to {}{mode}: {}",
            self.tool,
            self.provider.display_name(),
            self.reason
        )
    }
}

impl std::error::Error for LoweringError {}

/// An assistant message whose tool calls cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseError {
    /// The format the message was read as.
    pub provider: Provider,
    /// Where in the message the problem is (`tool_calls[1].function`); empty for the message.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} message", self.provider.display_name())?;
        if !self.location.is_empty() {
            write!(f, " at `{}`", self.location)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ParseError {}

/// A position in a message being parsed, for precise errors.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    provider: Provider,
    path: &'a str,
}

impl<'a> At<'a> {
    pub(crate) fn root(provider: Provider) -> At<'static> {
        At { provider, path: "" }
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError { provider: self.provider, location: self.path.to_owned(), message: message.into() }
    }

    pub(crate) fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) }
    }

    pub(crate) fn index_path(&self, index: usize) -> String {
        format!("{}[{index}]", self.path)
    }

    pub(crate) fn with<'b>(&self, path: &'b str) -> At<'b> {
        At { provider: self.provider, path }
    }

    /// The object at this position.
    pub(crate) fn object<'v>(
        &self,
        value: &'v Value,
    ) -> Result<&'v serde_json::Map<String, Value>, ParseError> {
        value.as_object().ok_or_else(|| self.error(format!("expected an object, found {}", json_kind(value))))
    }

    /// A required, non-empty string field of `object`.
    pub(crate) fn string<'v>(
        &self,
        object: &'v serde_json::Map<String, Value>,
        key: &str,
    ) -> Result<&'v str, ParseError> {
        match object.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s),
            Some(Value::String(_)) => Err(self.error(format!("`{key}` is empty"))),
            None | Some(Value::Null) => Err(self.error(format!("`{key}` is missing"))),
            Some(other) => Err(self.error(format!("`{key}` must be a string, found {}", json_kind(other)))),
        }
    }

    /// An optional array field of `object`; absent and `null` are empty.
    pub(crate) fn array<'v>(
        &self,
        object: &'v serde_json::Map<String, Value>,
        key: &str,
    ) -> Result<&'v [Value], ParseError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.error(format!("`{key}` must be an array, found {}", json_kind(other)))),
        }
    }

    /// Checks the optional `role` field of a message.
    pub(crate) fn expect_role(
        &self,
        object: &serde_json::Map<String, Value>,
        expected: &str,
    ) -> Result<(), ParseError> {
        match object.get("role") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::String(role)) if role == expected => Ok(()),
            Some(Value::String(role)) => Err(self.error(format!(
                "expected a message with role `{expected}` (the model's turn), found role `{role}`"
            ))),
            Some(other) => Err(self.error(format!("`role` must be a string, found {}", json_kind(other)))),
        }
    }
}

pub(crate) use tool_core::words::json_kind;

/// The text a provider without image support in tool results shows in place of an image.
pub(crate) fn image_placeholder(mime_type: &str, base64: &str) -> String {
    format!(
        "[{mime_type} image of {} omitted: images cannot be returned in this tool result]",
        human_size(base64_decoded_len(base64))
    )
}

fn base64_decoded_len(base64: &str) -> usize {
    let body = base64.trim_end_matches('=');
    let len = body.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    len * 3 / 4
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// One piece of a result as a provider sees it: text, an image it accepts, or an image it does
/// not (already turned into placeholder text).
pub(crate) enum Piece<'a> {
    Text(std::borrow::Cow<'a, str>),
    Image { mime_type: &'a str, data: &'a str },
}

/// The content of `output` with images outside `accepted` replaced by placeholder text.
pub(crate) fn pieces<'a>(output: &'a ToolOutput, accepted: &[&str]) -> Vec<Piece<'a>> {
    output
        .content
        .iter()
        .map(|content| match content {
            Content::Text { text } => Piece::Text(text.as_str().into()),
            Content::Image { mime_type, data } if accepted.contains(&mime_type.as_str()) => {
                Piece::Image { mime_type, data }
            }
            Content::Image { mime_type, data } => Piece::Text(image_placeholder(mime_type, data).into()),
        })
        .collect()
}

/// All of `output` as one text, images replaced by placeholders, items joined by newlines.
pub(crate) fn text_with_placeholders(output: &ToolOutput) -> String {
    let mut text = String::new();
    for piece in pieces(output, &[]) {
        if let Piece::Text(part) = piece {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&part);
        }
    }
    text
}

/// The text of a result for providers without an error flag: errors are marked in the text.
pub(crate) fn flagged_text(output: &ToolOutput, text: String) -> String {
    if output.is_error { format!("Error: {text}") } else { text }
}

/// Image MIME types accepted in Anthropic `tool_result` and OpenAI `input_image` content.
pub(crate) const COMMON_IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];
