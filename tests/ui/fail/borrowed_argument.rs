use tool_runtime::{ToolContext, tool};

/// Read a file.
#[tool]
async fn read(
    ctx: &ToolContext,
    /// The file to read.
    path: &str,
    /// The lines to read.
    lines: &[usize],
) -> String {
    let _ = ctx;
    format!("{path} {lines:?}")
}

fn main() {}
