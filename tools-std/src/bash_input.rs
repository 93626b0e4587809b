//! The `bash_input` tool: type into a background session's standard input or terminal.

use std::time::Duration;

use tool_runtime::{SessionState, ToolContext, ToolError, ToolOutput, tool};

use crate::bash_output::MAX_WAIT;
use crate::session::{Key, Sessions};

/// How long `bash_input` collects output after writing, by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(1);

/// Send text and keys to a background session's input, then read what it prints in answer.
///
/// For commands started by `bash` with `interactive: true` or `tty: true`: answer a prompt
/// (`text: "y\n"`), drive a REPL (`text: "print(1 + 1)\n"`), or send keys such as `ctrl_c`
/// (interrupt the running program), `ctrl_d` (end of input) or arrows. End a line with `\n`.
/// `text` is sent first, then `keys` in order. Without a terminal, `ctrl_c`, `ctrl_z` and
/// `ctrl_backslash` are sent as the signals a terminal would send (to the command's process
/// group), and `ctrl_d` closes the input. Afterwards it waits `wait_ms` (default 1000) for the
/// answer, or until `until` appears, or the command ends, and returns the new output as
/// `bash_output` does.
#[tool(timeout = "6m")]
pub async fn bash_input(
    session: SessionState,
    ctx: &ToolContext,
    /// The session's id, from `bash`'s result or `bash_list`.
    session_id: u64,
    /// Text to type, sent as is (end a line with `\n`).
    text: Option<String>,
    /// Keys to press after the text, in order.
    keys: Option<Vec<Key>>,
    /// Milliseconds to wait for the answer before returning what was printed (default 1000, at
    /// most 300000).
    #[schemars(range(min = 0, max = 300000))]
    wait_ms: Option<u64>,
    /// Return as soon as the new output contains this text (the next prompt, say).
    until: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let keys = keys.unwrap_or_default();
    let text = text.unwrap_or_default();
    if text.is_empty() && keys.is_empty() {
        return Err(ToolError::invalid_arguments(
            "Nothing to send: pass `text`, `keys` or both. To only read new output, use bash_output.",
        ));
    }
    let sessions = Sessions::of(&session);
    let target = sessions.get(session_id)?;
    if !target.is_interactive() {
        // The error names how to start the command so that it can be answered.
        target.write(b"").await?;
    }
    if !target.is_running() {
        return Err(ToolError::execution(format!(
            "Session {session_id} has ended; nothing can be sent to it. bash_output(session_id={session_id}) shows \
             how it ended."
        )));
    }
    if !text.is_empty() {
        target.write(text.as_bytes()).await?;
    }
    for key in keys {
        if target.tty {
            target.write(key.terminal_bytes()).await?;
            continue;
        }
        match key {
            Key::CtrlC => target.signal(2)?,
            Key::CtrlZ => target.signal(20)?,
            Key::CtrlBackslash => target.signal(3)?,
            Key::CtrlD => target.close_input().await?,
            Key::Enter => target.write(b"\n").await?,
            other => target.write(other.terminal_bytes()).await?,
        }
    }
    let wait = wait_ms.map_or(DEFAULT_WAIT, Duration::from_millis).min(MAX_WAIT);
    let until = until.filter(|u| !u.is_empty());
    Ok(target.read(&sessions, wait, until.as_deref(), ctx.cancellation_token()).await)
}
