//! Serving your own tools over MCP on standard input and output.
//!
//! Point an MCP client at `cargo run -q --example mcp_server --features mcp`, or talk to it by hand:
//!
//! ```text
//! printf '%s\n' \
//!   '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
//!   '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
//!   '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"word_count","arguments":{"text":"one two\nthree"}}}' \
//!   | cargo run -q --example mcp_server --features mcp
//! ```

use std::time::Duration;

use tool_runtime::mcp_server::McpServer;
use tool_runtime::{Dispatcher, Json, Progress, Registry, ToolContext, ToolError, tool};

/// What `word_count` returns: sent as `structuredContent`, with a JSON text mirror.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Counts {
    /// Number of whitespace-separated words.
    words: usize,
    /// Number of lines.
    lines: usize,
}

/// Count the words and lines of a text.
#[tool(parallel, read_only, idempotent, title = "Word count")]
async fn word_count(
    /// The text to count.
    text: String,
) -> Json<Counts> {
    Json(Counts { words: text.split_whitespace().count(), lines: text.lines().count() })
}

/// Wait for a number of seconds, reporting progress every second.
#[tool(parallel, read_only)]
async fn wait(
    ctx: &ToolContext,
    /// How long to wait.
    #[schemars(range(min = 1, max = 60))]
    seconds: u32,
) -> Result<String, ToolError> {
    for second in 1..=seconds {
        // `notifications/cancelled` from the client cancels this token.
        tokio::select! {
            () = ctx.cancellation_token().cancelled() => return Err(ToolError::cancelled("stopped early")),
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        // Becomes `notifications/progress` when the request carried a progress token.
        ctx.progress(Progress {
            message: Some(format!("{second} of {seconds} seconds")),
            progress: Some(f64::from(second)),
            total: Some(f64::from(seconds)),
        });
    }
    Ok(format!("waited {seconds} seconds"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder().with_inventory().allow(["word_count", "wait"]).build()?;
    // The dispatcher runs every call: validation, hooks, timeouts and the parallel policy apply.
    let dispatcher = Dispatcher::builder(registry).default_timeout(Duration::from_secs(120));
    McpServer::builder(dispatcher)
        .name("mcp-server-example")
        .instructions("Count words with `word_count`; `wait` shows progress and cancellation.")
        .build()?
        .serve_stdio()
        .await?;
    Ok(())
}
