//! A session's output: read and rendered for `bash_output` and `bash_list`, and pumped from the
//! command into its capture until it ends.

use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tool_runtime::truncate::{append_notice, mark_truncated};
use tool_runtime::words::duration;
use tool_runtime::{CancellationToken, ToolOutput};

use crate::shell::notes::{exit_note, kill_metadata, kill_note, signal_name};
use crate::shell::process::{ShellControl, ShellExit};

use super::{End, Ended, REMEMBER_EVERY, Session, Sessions, Snapshot, UNTIL_WINDOW};

impl Session {
    pub(crate) async fn snapshot(&self) -> Snapshot {
        let mut capture = self.capture.lock().await;
        let (unread_bytes, total_bytes) = (capture.window_bytes(), capture.total_bytes());
        let output_ref = capture.reference().await;
        drop(capture);
        let state = self.state();
        Snapshot {
            runtime: state.ended.as_ref().map_or_else(|| self.started.elapsed(), |e| e.after),
            ended: state.ended.clone(),
            output_closed: state.output_closed,
            unread_bytes,
            total_bytes,
            output_ref,
        }
    }

    /// Waits up to `wait` for the command to end, or for `until` to appear in its unread
    /// output, or for the call to be cancelled; then takes the output that arrived since the
    /// last read and renders it with the session's state.
    pub(crate) async fn read(
        &self,
        sessions: &Sessions,
        wait: Duration,
        until: Option<&str>,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let deadline = tokio::time::Instant::now() + wait;
        let mut changes = self.changes.subscribe();
        loop {
            if self.is_over() || until.is_some_and(|text| self.state().recent.contains(text)) {
                break;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep_until(deadline) => break,
                () = cancel.cancelled() => break,
            }
        }
        self.render(sessions).await
    }

    /// The output since the last read, and where the session stands.
    pub(crate) async fn render(&self, sessions: &Sessions) -> ToolOutput {
        let window = {
            let mut capture = self.capture.lock().await;
            self.state().recent.clear();
            capture.take_window().await
        };
        let (ended, output_closed) = {
            let state = self.state();
            (state.ended.clone(), state.output_closed)
        };
        let mut text = if window.text.is_empty() { "(no new output)".to_owned() } else { window.text };
        let mut notes = std::mem::take(&mut *self.notes.lock().unwrap_or_else(|p| p.into_inner()));
        let mut refusals = Vec::new();
        if let Some(proxy) = &self.proxy {
            let (note, seen) = crate::shell::network::refusals(proxy, self.can_escalate);
            notes.extend(note);
            refusals = seen;
        }
        // What the sandbox refused, as this window's output shows it (the proxy's own notes name
        // the refused hosts better than a guess from the output).
        let mut violations = match &self.confined {
            Some((policy, cwd)) => tool_sandbox::violation::detect(policy, cwd, &text),
            None => Vec::new(),
        };
        if !refusals.is_empty() {
            violations.retain(|v| *v != tool_sandbox::Violation::Network);
        }
        notes.extend(violations.iter().map(|v| v.explain()));
        for note in &notes {
            append_notice(&mut text, note);
        }
        let mut is_error = false;
        let id = self.id;
        let mut output_meta = serde_json::Map::new();
        match &ended {
            None => append_notice(
                &mut text,
                &format!(
                    "[session {id} is still running ({} so far). Read more with bash_output(session_id={id}), \
                     {}stop it with bash_stop(session_id={id}).]",
                    duration(self.started.elapsed()),
                    if self.interactive {
                        format!("answer it with bash_input(session_id={id}, text=\"...\"), ")
                    } else {
                        String::new()
                    }
                ),
            ),
            Some(ended) => {
                for note in end_notes(ended, &mut is_error) {
                    append_notice(&mut text, &note);
                }
                let status = if output_closed {
                    sessions.remove(id);
                    format!("[session {id} ended after {}; it is closed now.]", duration(ended.after))
                } else {
                    format!(
                        "[session {id} ended after {}, but processes it started still write to its output: \
                         read it with bash_output(session_id={id}), stop them with bash_stop(session_id={id}).]",
                        duration(ended.after)
                    )
                };
                append_notice(&mut text, &status);
                let exit = ended.exit.unwrap_or(ShellExit { code: None, signal: None });
                output_meta.insert("exit_code".into(), json!(exit.code));
                output_meta.insert("signal".into(), json!(exit.signal));
                output_meta.insert("timed_out".into(), json!(matches!(ended.how, End::TimedOut(_))));
                if let Some(Ok(report)) = &ended.killed {
                    output_meta.insert("killed".into(), kill_metadata(report));
                }
            }
        }
        let mut output = ToolOutput::text(text)
            .with_metadata("session_id", json!(id))
            .with_metadata("running", json!(ended.is_none()))
            .with_metadata("runtime_ms", json!(self.runtime().as_millis() as u64))
            .with_metadata("new_output_bytes", json!(window.bytes));
        for (key, value) in output_meta {
            output = output.with_metadata(key, value);
        }
        if !refusals.is_empty() {
            output =
                output.with_metadata("network_refusals", crate::shell::network::refusals_metadata(&refusals));
        }
        if !violations.is_empty() {
            output = output.with_metadata("sandbox_violations", json!(violations));
        }
        output.is_error = is_error;
        if let Some(info) = window.info {
            mark_truncated(&mut output, &info);
        }
        output
    }
}

/// The bracketed notes of an ended session, as `bash` writes them.
pub(super) fn end_notes(ended: &Ended, is_error: &mut bool) -> Vec<String> {
    let mut notes = Vec::new();
    match &ended.how {
        End::Exited => {
            if let Some(note) = ended.exit.and_then(exit_note) {
                *is_error = true;
                notes.push(note);
            }
        }
        End::TimedOut(limit) => {
            *is_error = true;
            notes.push(format!(
                "[timed out after {}: the session was killed at its timeout_secs; the output above is what it \
                 printed since the last read.]",
                duration(*limit)
            ));
        }
        End::Stopped => {
            let mut note = format!("[stopped {}", ended.stopped_by.unwrap_or("with bash_stop"));
            if let Some(exit) = ended.exit {
                match (exit.code, exit.signal) {
                    (Some(code), _) => {
                        let _ = write!(note, "; the command exited with code {code}");
                    }
                    (None, Some(signal)) => {
                        let _ = write!(note, "; the command ended by signal {signal}{}", signal_name(signal));
                    }
                    (None, None) => {}
                }
            }
            note.push(']');
            notes.push(note);
        }
        End::Lost(error) => {
            *is_error = true;
            notes.push(format!("[lost track of the command: {error}]"));
        }
    }
    match &ended.killed {
        Some(Ok(report)) if report.shell || report.started > 0 || !report.not_killed.is_empty() => {
            notes.push(kill_note(report))
        }
        Some(Err(error)) => notes.push(format!(
            "[the command could not be killed ({error}); processes it started may still be running: check with `ps`]"
        )),
        _ => {}
    }
    notes
}

/// Reads the command's output into its capture, records its exit, and kills it at its deadline.
pub(super) async fn pump(
    session: Arc<Session>,
    mut output: Pin<Box<dyn AsyncRead + Send>>,
    mut control: Box<dyn ShellControl>,
    deadline: Option<(tokio::time::Instant, Duration)>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let (mut eof, mut exited, mut timed_out) = (false, false, false);
    let mut look = tokio::time::interval(REMEMBER_EVERY);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !(eof && exited) {
        tokio::select! {
            _ = look.tick(), if !exited => {
                if let Some(handle) = &session.handle {
                    handle.remember_processes();
                }
            },
            read = output.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => {
                    eof = true;
                    session.capture.lock().await.flush_input().await;
                    session.state().output_closed = true;
                    session.changed();
                }
                Ok(n) => {
                    // The state is locked after the capture is released, never inside it.
                    let mut text = String::new();
                    session.capture.lock().await.push(&buf[..n], |seen| text.push_str(seen)).await;
                    let mut state = session.state();
                    state.recent.push_str(&text);
                    if state.recent.len() > UNTIL_WINDOW {
                        let cut = state.recent.ceil_char_boundary(state.recent.len() - UNTIL_WINDOW / 2);
                        state.recent.drain(..cut);
                    }
                    drop(state);
                    session.changed();
                }
            },
            status = control.wait(), if !exited => {
                exited = true;
                session.record_exit(status.map_err(|e| e.to_string()));
            },
            () = tokio::time::sleep_until(deadline.map_or_else(tokio::time::Instant::now, |d| d.0)),
                if deadline.is_some() && !exited && !timed_out => {
                timed_out = true;
                let killed = control.kill_all().map_err(|e| e.to_string());
                let limit = deadline.map_or(Duration::ZERO, |d| d.1);
                let mut state = session.state();
                if state.ended.is_none() {
                    let after = session.started.elapsed();
                    state.ended = Some(Ended {
                        how: End::TimedOut(limit),
                        stopped_by: None,
                        after,
                        exit: None,
                        killed: Some(killed),
                    });
                }
                drop(state);
                session.changed();
            },
        }
    }
    let _ = session.capture.lock().await.close().await;
    session.changed();
}
