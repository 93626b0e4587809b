//! `ToolCall` and `ToolResult`: one call the model made, and the one result it gets back.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::ToolOutput;

/// One tool call from the model, as parsed by a provider adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; the result carries it back.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The arguments, in the form the provider delivered them.
    pub arguments: Arguments,
}

impl ToolCall {
    /// A call of `name` with the id `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<Arguments>) -> Self {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }
}

/// A call's arguments as they arrived, kept in that form up to validation: nothing is
/// serialized only to be parsed again.
///
/// OpenAI sends the model's JSON text (which may be malformed: validation reports where); the
/// Anthropic, Gemini and MCP wire formats carry a parsed object, and a hook's rewrite is a value.
///
/// Serialized as the text (a JSON string) or as the value itself; a JSON string deserializes as
/// [`Arguments::Text`], anything else as [`Arguments::Json`]. [`Arguments::Freeform`] is
/// serialized as `{"freeform": text}` and read back as such.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Arguments {
    /// JSON text exactly as the model wrote it. Empty text stands for no arguments (`{}`).
    Text(String),
    /// The raw text input of a freeform tool (an OpenAI `custom_tool_call`), not JSON: it
    /// becomes the tool's one string argument ([`Freeform::parameter`](crate::Freeform)).
    Freeform {
        /// The text as the model wrote it.
        freeform: String,
    },
    /// Arguments already parsed.
    Json(Value),
}

impl Arguments {
    /// The arguments as JSON text: the model's own text, or the value written compactly.
    ///
    /// A freeform input is written as a JSON string.
    pub fn to_text(&self) -> Cow<'_, str> {
        match self {
            Arguments::Text(text) => Cow::Borrowed(text),
            Arguments::Freeform { freeform } => Cow::Owned(Value::String(freeform.clone()).to_string()),
            Arguments::Json(value) => Cow::Owned(value.to_string()),
        }
    }

    /// The raw text input of a freeform tool call.
    pub fn freeform(text: impl Into<String>) -> Self {
        Arguments::Freeform { freeform: text.into() }
    }

    /// Whether this is the raw text input of a freeform tool call.
    pub fn is_freeform(&self) -> bool {
        matches!(self, Arguments::Freeform { .. })
    }
}

impl std::fmt::Display for Arguments {
    /// The JSON text: the model's own, or the value written compactly.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arguments::Text(text) => f.write_str(text),
            Arguments::Freeform { freeform } => write!(f, "{}", Value::String(freeform.clone())),
            Arguments::Json(value) => write!(f, "{value}"),
        }
    }
}

impl Default for Arguments {
    /// No arguments: `{}`.
    fn default() -> Self {
        Arguments::Json(Value::Object(serde_json::Map::new()))
    }
}

impl From<String> for Arguments {
    fn from(text: String) -> Self {
        Arguments::Text(text)
    }
}

impl From<&str> for Arguments {
    fn from(text: &str) -> Self {
        Arguments::Text(text.to_owned())
    }
}

impl From<&String> for Arguments {
    fn from(text: &String) -> Self {
        Arguments::Text(text.clone())
    }
}

impl From<Value> for Arguments {
    fn from(value: Value) -> Self {
        Arguments::Json(value)
    }
}

/// The result of one tool call, ready for a provider adapter to render.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The name of the tool that was called.
    pub tool: String,
    /// What the model reads (and UI-only metadata).
    pub output: ToolOutput,
    /// The call was a freeform one ([`Arguments::Freeform`]): providers that tell the two apart
    /// (OpenAI Responses) answer it with their freeform result item.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub freeform: bool,
}
