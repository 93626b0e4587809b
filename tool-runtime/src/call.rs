//! `ToolCall` and `ToolResult`: one call the model made, and the one result it gets back.

use serde::{Deserialize, Serialize};

use crate::output::ToolOutput;

/// One tool call from the model, as parsed by a provider adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; the result carries it back.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The arguments as raw JSON text, exactly as the model sent them.
    pub arguments: String,
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
}
