//! A session's input: bytes and keys typed into the command, written by a task of its own.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tool_runtime::ToolError;

use super::{INPUT_BUFFER, Session};

impl Session {
    /// Queues `bytes` for the command's standard input, all of them or, when they do not all fit
    /// in [`INPUT_BUFFER`], the lines that do. Never waits for the command to read.
    pub(crate) fn send(&self, bytes: &[u8]) -> Result<Sent, ToolError> {
        let Some(feeder) = &self.input else { return Err(self.no_input()) };
        let id = self.id;
        let mut state = feeder.state();
        if let Some(error) = &state.failed {
            return Err(ToolError::execution(format!(
                "Could not write to session {id}: {error}. The command may have closed its input or ended; \
                 bash_output(session_id={id}) shows its state."
            )));
        }
        if state.closed {
            return Err(self.no_input());
        }
        let room = INPUT_BUFFER.saturating_sub(state.queued);
        let accepted = if bytes.len() <= room {
            bytes.len()
        } else {
            // Whole lines only: half a line typed now would run as another command once the
            // rest of it came.
            bytes[..room].iter().rposition(|&b| b == b'\n').map_or(0, |end| end + 1)
        };
        let line_after = line_after(&state.line, &bytes[..accepted], self.tty);
        if line_after.len() > INPUT_BUFFER {
            return Err(ToolError::invalid_arguments(format!(
                "This would make the line typed into session {id} longer than {INPUT_BUFFER} bytes, the most \
                 that can be typed before a line ends. Send shorter lines, or write long input to a file and \
                 have the command read it."
            )));
        }
        if accepted == 0 && !bytes.is_empty() {
            return Err(ToolError::execution(format!(
                "Nothing was sent: session {id} has not read the {} bytes of input already sent to it, and at \
                 most {INPUT_BUFFER} bytes may wait (its command may not be reading its input){}. Check what it \
                 does with bash_output(session_id={id}), or stop it with bash_stop(session_id={id}).",
                state.queued,
                if state.queued == 0 { "; a line longer than that cannot be typed at all" } else { "" }
            )));
        }
        state.line = line_after;
        state.queued += accepted;
        state.queue.push_back(bytes[..accepted].to_vec());
        let waiting = state.queued;
        drop(state);
        feeder.shared.wake.notify_one();
        Ok(Sent { accepted, waiting })
    }

    /// What was typed since the last line ended (newline, carriage return or end of input), as
    /// the command has not yet received it as a line.
    pub(crate) fn line_so_far(&self) -> String {
        self.input.as_ref().map(|feeder| feeder.state().line.clone()).unwrap_or_default()
    }

    /// Closes the command's standard input (end-of-file, as Ctrl-D at the start of a line) once
    /// what was typed before is written.
    pub(crate) fn close_input(&self) -> Result<(), ToolError> {
        let Some(feeder) = &self.input else { return Err(self.no_input()) };
        let mut state = feeder.state();
        if state.closed {
            return Err(self.no_input());
        }
        state.closed = true;
        state.line.clear();
        drop(state);
        feeder.shared.wake.notify_one();
        Ok(())
    }

    pub(crate) fn no_input(&self) -> ToolError {
        let id = self.id;
        if self.interactive {
            ToolError::execution(format!(
                "Session {id}'s input is closed already: it cannot be written to again."
            ))
        } else {
            ToolError::execution(format!(
                "Session {id} has no input: it was started without one, so it reads end-of-file. To answer \
                 prompts, start the command with bash(..., interactive=true), or tty=true for programs that \
                 need a terminal."
            ))
        }
    }

    pub(crate) fn is_interactive(&self) -> bool {
        self.interactive
    }
}

/// What [`Session::send`] queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent {
    /// Bytes accepted (the rest did not fit).
    pub(crate) accepted: usize,
    /// Bytes now waiting for the command to read them, these included.
    pub(crate) waiting: usize,
}

/// A session's input, written by a task of its own: a command that does not read its input
/// holds up that task, never a call.
pub(super) struct Feeder {
    shared: Arc<FeederShared>,
    pub(super) task: AbortHandle,
}

struct FeederShared {
    state: Mutex<FeedState>,
    wake: Notify,
}

#[derive(Default)]
struct FeedState {
    queue: VecDeque<Vec<u8>>,
    /// Bytes queued and not yet written.
    queued: usize,
    /// End-of-file was asked for: written after the queue, and nothing is accepted after it.
    closed: bool,
    /// Why writing failed (the command closed its input, or ended).
    failed: Option<String>,
    /// What was typed since the last line ended.
    line: String,
}

impl Feeder {
    pub(super) fn start(writer: Pin<Box<dyn AsyncWrite + Send>>) -> Feeder {
        let shared = Arc::new(FeederShared { state: Mutex::new(FeedState::default()), wake: Notify::new() });
        let task = tokio::spawn(feed(shared.clone(), writer)).abort_handle();
        Feeder { shared, task }
    }

    fn state(&self) -> MutexGuard<'_, FeedState> {
        self.shared.state()
    }
}

impl FeederShared {
    fn state(&self) -> MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Writes what is queued, as the command reads it, then closes the input when asked to.
async fn feed(shared: Arc<FeederShared>, mut writer: Pin<Box<dyn AsyncWrite + Send>>) {
    loop {
        let (chunk, close) = {
            let mut state = shared.state();
            (state.queue.pop_front(), state.closed)
        };
        match chunk {
            Some(chunk) => {
                let mut rest = chunk.as_slice();
                while !rest.is_empty() {
                    let written = match writer.write(rest).await {
                        Ok(0) => Err("the input accepts nothing more".to_owned()),
                        Ok(n) => Ok(n),
                        Err(e) => Err(e.to_string()),
                    };
                    let mut state = shared.state();
                    match written {
                        Ok(n) => {
                            rest = &rest[n..];
                            state.queued -= n;
                        }
                        Err(error) => {
                            state.failed = Some(error);
                            state.queue.clear();
                            state.queued = 0;
                            return;
                        }
                    }
                }
                let _ = writer.flush().await;
            }
            None if close => {
                let _ = writer.shutdown().await;
                return;
            }
            None => shared.wake.notified().await,
        }
    }
}

/// The line typed so far after `bytes` are typed on `line`: what follows the last line end
/// (newline, carriage return, end of input, or a Ctrl-C or Ctrl-U that discards the line), with
/// backspaces applied; into a pipe (not a `terminal`), only a newline ends it and nothing is
/// edited. A line ended after a backslash goes on (the backslash and the line end dropped), as
/// a shell joins it to the next: `r\` then `m -rf x` is read as `rm -rf x`.
pub(crate) fn line_after(line: &str, bytes: &[u8], terminal: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut line = line.to_owned();
    for c in text.chars() {
        match c {
            '\n' if !terminal && tool_runtime::permissions::shell::continues_line(&line) => {
                line.pop();
            }
            '\n' if !terminal => line.clear(),
            c if !terminal => line.push(c),
            '\n' | '\r' if tool_runtime::permissions::shell::continues_line(&line) => {
                line.pop();
            }
            // Ctrl-D ends the input only at a line's start; elsewhere it stays for the rules to
            // see (a key whose effect they cannot know).
            '\u{4}' if !line.is_empty() => line.push(c),
            '\n' | '\r' | '\u{4}' | '\u{3}' | '\u{15}' => line.clear(),
            '\u{7f}' | '\u{8}' => {
                line.pop();
            }
            c => line.push(c),
        }
    }
    line
}

/// The control characters and keys `bash_input` can send, as a terminal would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Key {
    /// Interrupt (`SIGINT` to the foreground job).
    CtrlC,
    /// End of input.
    CtrlD,
    /// Suspend (`SIGTSTP`).
    CtrlZ,
    /// Quit (`SIGQUIT`).
    CtrlBackslash,
    /// Enter / Return.
    Enter,
    /// Tab.
    Tab,
    /// Escape.
    Escape,
    /// Backspace.
    Backspace,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
}

impl Key {
    /// What a terminal sends for the key.
    pub(crate) fn terminal_bytes(self) -> &'static [u8] {
        match self {
            Key::CtrlC => b"\x03",
            Key::CtrlD => b"\x04",
            Key::CtrlZ => b"\x1a",
            Key::CtrlBackslash => b"\x1c",
            Key::Enter => b"\r",
            Key::Tab => b"\t",
            Key::Escape => b"\x1b",
            Key::Backspace => b"\x7f",
            Key::Up => b"\x1b[A",
            Key::Down => b"\x1b[B",
            Key::Right => b"\x1b[C",
            Key::Left => b"\x1b[D",
        }
    }
}
