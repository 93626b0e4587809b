//! The `bash_stop` tool: stop a background session and every process it started.

use std::time::Duration;

use tool_runtime::{SessionState, ToolError, ToolOutput, tool};

use crate::shell::session::Sessions;

/// How long a command has to exit after `SIGTERM`, by default.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Stop a background session: `SIGTERM` to its process group, then, after `grace_ms` (default
/// 2000), `SIGKILL` to every process it started that is still there, including ones it left
/// running after its shell exited.
///
/// Use it when a server, watcher or stuck command is no longer needed; to interrupt the program
/// in a REPL and keep the session, send `ctrl_c` with `bash_input` instead. Returns the output
/// printed since the last read, how the command ended and what had to be killed. The session is
/// removed afterwards.
#[tool(timeout = "1m")]
pub async fn bash_stop(
    session: SessionState,
    /// The session's id, from `bash`'s result or `bash_list`.
    session_id: u64,
    /// Milliseconds between `SIGTERM` and `SIGKILL` (default 2000, at most 30000).
    #[schemars(range(min = 0, max = 30000))]
    grace_ms: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let sessions = Sessions::of(&session);
    let target = sessions.get(session_id)?;
    let grace = grace_ms.map_or(DEFAULT_GRACE, Duration::from_millis).min(Duration::from_secs(30));
    target.stop(grace).await;
    let output = target.render(&sessions).await;
    sessions.remove(session_id);
    Ok(output)
}
