use tool_runtime::{Dep, SessionState, Tool, ToolContext, ToolError, tool};

struct Workspace;

/// Uses every tool attribute at once.
#[tool(undocumented, 
    name = "everything",
    description = "Overrides the doc comment.",
    parallel,
    timeout = "1m30s",
    truncate(max_lines = 10, max_bytes = 2048, direction = "middle"),
    destructive,
    idempotent,
    open_world,
    title = "Everything",
    tags("a", "b"),
    example = r#"{"v": 3}"#,
    example = "{}",
    permission = "command",
    command_argument = "v",
    polls
)]
async fn every(
    _ctx: &ToolContext,
    _ws: Dep<Workspace>,
    _session: SessionState,
    _cancel: tool_runtime::CancellationToken,
    /// A value.
    #[schemars(range(min = 1, max = 9))]
    #[arg(rename = "v", default = 5)]
    value: u8,
) -> Result<String, ToolError> {
    Ok(value.to_string())
}

#[tool(undocumented, read_only, parallel, truncate = false)]
async fn plain() -> String {
    String::new()
}

fn main() {
    let spec = EveryTool.spec();
    assert_eq!(spec.name, "everything");
    assert_eq!(spec.description, "Overrides the doc comment.");
    assert_eq!(spec.timeout, Some(std::time::Duration::from_secs(90)));
    assert_eq!(spec.permission, Some(tool_runtime::spec::PermissionSubject::Command));
    assert_eq!(spec.command_argument.as_deref(), Some("v"));
    assert!(spec.polls && !PlainTool.spec().polls);
    assert!(!PlainTool.spec().truncation.enabled);
}
