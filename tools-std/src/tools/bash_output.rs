//! The `bash_output` tool: read what a background session printed since the last read.

use std::time::Duration;

use tool_runtime::{SessionState, ToolContext, ToolError, ToolOutput, tool};

use crate::shell::session::Sessions;

/// The longest `wait_ms` a call may ask for.
pub const MAX_WAIT: Duration = Duration::from_secs(300);

/// Read the output of a background session (a command `bash` left running) since the last read.
///
/// Each read returns only what is new, so nothing is shown twice and nothing is lost; long
/// output is cut in the middle and saved whole, with a reference for `tool_output_read`. The
/// result ends with the session's state: still running, or how it ended (`[exit code N]`, a
/// signal) and after how long. To wait for a build or test run instead of polling, pass
/// `wait_ms`: the read returns when the command ends, when `until` appears in its output (a
/// prompt, "listening on"), or when the time is up, whichever comes first. A session whose end
/// has been read is removed; `bash_list` shows the sessions there are.
#[tool(parallel, read_only, polls, timeout = "6m")]
pub async fn bash_output(
    session: SessionState,
    ctx: &ToolContext,
    /// The session's id, from `bash`'s result or `bash_list`.
    session_id: u64,
    /// Milliseconds to wait for the command to end (or for `until`) before returning what it
    /// printed so far (default 0: return at once, at most 300000).
    #[schemars(range(min = 0, max = 300000))]
    wait_ms: Option<u64>,
    /// Return as soon as the new output contains this text.
    until: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let sessions = Sessions::of(&session);
    let target = sessions.get(session_id)?;
    let wait = Duration::from_millis(wait_ms.unwrap_or(0)).min(MAX_WAIT);
    let until = until.filter(|u| !u.is_empty());
    Ok(target.read(&sessions, wait, until.as_deref(), ctx.cancellation_token()).await)
}
