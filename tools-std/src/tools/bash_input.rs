//! The `bash_input` tool: type into a background session's standard input or terminal.

use std::time::Duration;

use serde_json::json;
use tool_runtime::truncate::append_notice;
use tool_runtime::{
    Content, PermissionKind, PermissionRequest, SessionState, ToolContext, ToolError, ToolOutput, tool,
};

use crate::shell::session::{INPUT_BUFFER, Key, Sessions};
use crate::tools::bash_output::MAX_WAIT;

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
///
/// What is typed is checked like a command: typing into a shell or an interpreter may be asked
/// about or refused by the permission rules. Input is written in the background; at most
/// 256 KiB may wait for the command to read it, and longer text is sent in whole lines up to
/// that (the result says how much).
#[tool(permission = "input", timeout = "6m")]
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
        return Err(target.no_input());
    }
    if !target.is_running() {
        return Err(ToolError::execution(format!(
            "Session {session_id} has ended; nothing can be sent to it. bash_output(session_id={session_id}) shows \
             how it ended."
        )));
    }
    let steps = steps(&text, &keys, target.tty);
    let line_so_far = target.line_so_far();
    let readers = target.input_readers().await;
    let typed = typed_text(&steps);
    let description = format!(
        "type {} into session {session_id}, which runs `{}`",
        quote(&format!("{line_so_far}{typed}")),
        shorten(&target.command, 200)
    );
    ctx.ask(
        PermissionRequest::new(
            PermissionKind::Input {
                session_id,
                command: target.command.clone(),
                text: typed,
                line_so_far,
                readers: readers.programs,
                keys_changed: readers.keys_changed,
                terminal: target.tty,
                busy: readers.busy,
            },
            description,
        )
        .with_details(json!({"session": ctx.session_id()})),
    )
    .await?;
    let mut cut = None;
    for step in steps {
        match step {
            Step::Write(bytes) => {
                let sent = target.send(&bytes)?;
                if sent.accepted < bytes.len() {
                    cut = Some((sent, bytes.len()));
                    break;
                }
            }
            Step::Signal(signal) => target.signal(signal)?,
            Step::Close => target.close_input()?,
        }
    }
    let wait = wait_ms.map_or(DEFAULT_WAIT, Duration::from_millis).min(MAX_WAIT);
    let until = until.filter(|u| !u.is_empty());
    let mut out = target.read(&sessions, wait, until.as_deref(), ctx.cancellation_token()).await;
    if let Some((sent, total)) = cut {
        let note = format!(
            "[only {} of the {total} bytes were sent (the lines that fit); the rest, from byte {} of what \
                 was to be typed, was not. Session {session_id} has {} bytes of input it has not read yet, and \
                 at most {INPUT_BUFFER} may wait: send the rest once the command has read more, or stop it if it \
                 does not read its input.]",
            sent.accepted, sent.accepted, sent.waiting
        );
        match out.content.first_mut() {
            Some(Content::Text { text }) => append_notice(text, &note),
            _ => out.content.push(Content::text(note)),
        }
        out = out.with_metadata("input_sent_bytes", json!(sent.accepted));
    }
    Ok(out)
}

/// What one call does to the session, in order.
enum Step {
    Write(Vec<u8>),
    Signal(i32),
    Close,
}

/// The text and keys as writes, signals and the end of input: without a terminal, the control
/// keys a terminal turns into signals are sent as those signals, and Ctrl-D closes the input.
fn steps(text: &str, keys: &[Key], tty: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    let write = |steps: &mut Vec<Step>, bytes: &[u8]| match steps.last_mut() {
        Some(Step::Write(pending)) => pending.extend_from_slice(bytes),
        _ => steps.push(Step::Write(bytes.to_vec())),
    };
    if !text.is_empty() {
        write(&mut steps, text.as_bytes());
    }
    for &key in keys {
        match key {
            _ if tty => write(&mut steps, key.terminal_bytes()),
            Key::CtrlC => steps.push(Step::Signal(2)),
            Key::CtrlZ => steps.push(Step::Signal(20)),
            Key::CtrlBackslash => steps.push(Step::Signal(3)),
            Key::CtrlD => steps.push(Step::Close),
            Key::Enter => write(&mut steps, b"\n"),
            other => write(&mut steps, other.terminal_bytes()),
        }
    }
    steps
}

/// What the command will read, as text for the permission rules: the writes, and a line end
/// where the input is closed (a program reads a last line without one at end of input).
fn typed_text(steps: &[Step]) -> String {
    let mut typed = String::new();
    for step in steps {
        match step {
            Step::Write(bytes) => typed.push_str(&String::from_utf8_lossy(bytes)),
            Step::Close => typed.push('\n'),
            Step::Signal(_) => {}
        }
    }
    typed
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// `text` in backticks, control characters escaped, at most 500 characters.
fn quote(text: &str) -> String {
    let escaped: String = text.chars().flat_map(char::escape_debug).collect();
    format!("`{}`", shorten(&escaped, 500))
}
