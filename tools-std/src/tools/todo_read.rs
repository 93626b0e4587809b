//! The `todo_read` tool: show the session's task list.

use serde_json::json;
use tool_runtime::{SessionState, ToolOutput, tool};

use crate::tools::todo_write::{TodoList, render};

/// Show the task list of this session, as last set with `todo_write`.
///
/// Each item is one line with its status: `[x]` completed, `[>]` in progress, `[ ]` pending,
/// `[-]` cancelled. Check it before reporting that the work is done.
#[tool(parallel, read_only, timeout = "10s")]
pub async fn todo_read(session: SessionState) -> ToolOutput {
    let items = session.get::<TodoList>().map(|list| list.items()).unwrap_or_default();
    ToolOutput::text(render(&items)).with_metadata("todos", json!(items))
}
