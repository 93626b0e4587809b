//! A tool of your own that stays inside the workspace through the same confinement the
//! built-in tools use: `Workspace::resolve` resolves the model's path beneath the root by the
//! kernel (links and `..` included), asks the permission hook before anything outside, and the
//! workspace's `Operations` open what it resolved, never a path string.
//!
//! Run with `cargo run --example confined_tool`.

use std::io::Read;

use serde_json::json;
use tool_runtime::{CancellationToken, Dep, Dispatcher, Registry, ToolCall, ToolContext, ToolError, tool};
use tools_std::Workspace;

/// Count the lines, words and bytes of a file in the workspace (at most its first 1 MiB).
#[tool(parallel, read_only, permission = "path")]
async fn file_stats(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The file, relative to the workspace root.
    path: String,
) -> Result<String, ToolError> {
    // Refused, with a sentence the model can act on, when the path leads outside the root and
    // the permission hook does not allow it.
    let resolved = ws.resolve(ctx, &path, "read").await?;
    let ops = ws.operations().clone();
    let target = resolved.target.clone();
    let text = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        ops.open(&target)?.take(1 << 20).read_to_end(&mut bytes)?;
        Ok(bytes)
    })
    .await
    .map_err(|e| ToolError::execution(format!("the read stopped: {e}")))?
    .map_err(|e| ToolError::execution(format!("cannot read {}: {e}", resolved.display)))?;
    let text = String::from_utf8_lossy(&text);
    Ok(format!(
        "{}: {} lines, {} words, {} bytes",
        resolved.display,
        text.lines().count(),
        text.split_whitespace().count(),
        text.len()
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::temp_dir().join(format!("tool-confined-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    std::fs::write(root.join("notes.txt"), "one two\nthree\n")?;
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/hostname", root.join("escape"))?;

    let registry = Registry::builder().tool(FileStatsTool).build()?;
    let dispatcher = Dispatcher::builder(registry).dependencies(tools_std::dependencies(&root)?).build();
    for path in ["notes.txt", "../../etc/hostname", "/etc/hostname", "escape"] {
        let call = ToolCall::new(format!("call-{path}"), "file_stats", json!({ "path": path }));
        let result = dispatcher.run(call, CancellationToken::new()).await;
        println!("{path:>20} -> {}", result.output.text_content());
    }
    std::fs::remove_dir_all(&root)?;
    Ok(())
}
