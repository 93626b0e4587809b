//! The `bash_list` tool: the background sessions, with their state.

use serde_json::json;
use tool_runtime::words::duration;
use tool_runtime::{SessionState, ToolOutput, tool};

use crate::shell::session::{End, Sessions};

/// List the background sessions: each one's id, state (running, or how it ended), run time,
/// exit code, unread output and command.
///
/// Use it to find a session's id, or to check what is still running before starting another
/// server. Read a session's output with `bash_output`, stop it with `bash_stop`.
#[tool(parallel, read_only, timeout = "10s")]
pub async fn bash_list(session: SessionState) -> ToolOutput {
    let sessions = Sessions::of(&session);
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    for s in sessions.list() {
        let snap = s.snapshot().await;
        let exit = snap.ended.as_ref().and_then(|e| e.exit);
        let status = match &snap.ended {
            None => "running".to_owned(),
            Some(ended) => {
                let mut status = match (&ended.how, exit) {
                    (End::TimedOut(_), _) => "timed out".to_owned(),
                    (End::Stopped, _) => "stopped".to_owned(),
                    (End::Lost(_), _) => "lost".to_owned(),
                    (End::Exited, Some(e)) => match (e.code, e.signal) {
                        (Some(code), _) => format!("exited with code {code}"),
                        (None, Some(signal)) => format!("killed by signal {signal}"),
                        (None, None) => "exited".to_owned(),
                    },
                    (End::Exited, None) => "exited".to_owned(),
                };
                if !snap.output_closed {
                    status.push_str(", processes it started still write to its output");
                }
                status
            }
        };
        let mut line = format!(
            "session {}: {status}, {}{}, {} unread of {} bytes: {}",
            s.id,
            duration(snap.runtime),
            if s.tty {
                ", terminal"
            } else if s.is_interactive() {
                ", interactive"
            } else {
                ""
            },
            snap.unread_bytes,
            snap.total_bytes,
            s.command
        );
        if let Some(description) = &s.description {
            line.push_str(&format!(" ({description})"));
        }
        lines.push(line);
        rows.push(json!({
            "session_id": s.id,
            "command": s.command,
            "description": s.description,
            "status": status,
            "running": snap.ended.is_none(),
            "runtime_ms": snap.runtime.as_millis() as u64,
            "exit_code": exit.and_then(|e| e.code),
            "signal": exit.and_then(|e| e.signal),
            "tty": s.tty,
            "interactive": s.is_interactive(),
            "unread_bytes": snap.unread_bytes,
            "total_bytes": snap.total_bytes,
            "output_ref": snap.output_ref,
        }));
    }
    let text = if lines.is_empty() {
        "No background sessions. bash starts one when a command runs past its yield time (or with background: true).".to_owned()
    } else {
        lines.join("\n")
    };
    ToolOutput::text(text).with_metadata("sessions", json!(rows))
}
