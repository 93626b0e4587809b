//! Background sessions: commands that outlive the `bash` call that started them. They live in
//! the dispatcher's session state ([`Sessions`]), are read, written to and stopped by the
//! `bash_output`, `bash_input` and `bash_stop` tools, and are killed, with every process they
//! started, when that state is dropped.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, watch};
use tokio::task::AbortHandle;
use tool_runtime::truncate::{append_notice, mark_truncated};
use tool_runtime::words::duration;
use tool_runtime::{CancellationToken, SessionState, ToolError, ToolOutput};

use crate::shell::capture::Capture;
use crate::shell::notes::{exit_note, kill_metadata, kill_note, signal_name};
use crate::shell::process::{KillReport, ShellControl, ShellExit, ShellHandle};

/// How many sessions may run at once in one session state, unless [`Sessions::with_limit`]
/// says otherwise.
pub const DEFAULT_MAX_RUNNING: usize = 32;
/// How much of the newest unread output is searched for a read's `until` text.
const UNTIL_WINDOW: usize = 64 * 1024;
/// How many removed sessions that may have left processes running are remembered, to kill
/// those with the session state.
const MAX_REMOVED_KEPT: usize = 1024;
/// How often the processes of a running session are looked at, so that those its shell leaves
/// behind are found again when it is stopped (where a cgroup does not hold them anyway).
const REMEMBER_EVERY: Duration = Duration::from_millis(200);
/// How long [`Session::finish`] still reads after the command ended, for processes it left.
const FINISH_DRAIN: Duration = Duration::from_secs(1);
/// How long a cancelled [`Session::finish`] waits after `SIGTERM` before `SIGKILL`.
const FINISH_STOP_GRACE: Duration = Duration::from_secs(2);

fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86_400 * 365)
}

/// How many bytes typed into a session may wait for its command to read them; more is refused
/// until it has read some. This is also the longest line that can be typed.
pub const INPUT_BUFFER: usize = 256 * 1024;

/// The background sessions of one session state.
///
/// `bash` puts a command here when it is still running at its yield time. Dropping this (with
/// the [`SessionState`] that holds it, when the dispatcher or the MCP connection goes away)
/// kills every process of every session, synchronously.
///
/// An application that wants another limit on sessions running at once puts its own in the
/// session state before the first call:
/// `state.get_or_insert_with(|| tools_std::session::Sessions::with_limit(8));`
pub struct Sessions {
    registry: Mutex<Registry>,
    max_running: usize,
    /// Whether a command may go on after its call (see [`Sessions::foreground_only`]).
    keep_running: bool,
    /// The handles of removed sessions (their end was read): processes they left running are
    /// killed with the rest when this is dropped.
    removed: Mutex<Vec<Arc<dyn ShellHandle>>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("registry", &self.registry)
            .field("max_running", &self.max_running)
            .field("keep_running", &self.keep_running)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    sessions: BTreeMap<u64, Arc<Session>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::with_limit(DEFAULT_MAX_RUNNING)
    }
}

impl Sessions {
    /// No sessions, and at most `max_running` running at once.
    pub fn with_limit(max_running: usize) -> Self {
        Sessions {
            registry: Mutex::new(Registry { next_id: 1, ..Registry::default() }),
            max_running,
            keep_running: true,
            removed: Mutex::default(),
        }
    }

    /// For a host that exits once its calls are answered (a one-shot command line such as
    /// `tools call`): no command goes on after its call. `bash` then refuses `yield_ms` and
    /// `background`, and runs every command until it ends or reaches its time limit. Put it in
    /// the session state before the first call:
    /// `dispatcher.session().get_or_insert_with(Sessions::foreground_only)`.
    pub fn foreground_only() -> Self {
        Sessions {
            registry: Mutex::new(Registry { next_id: 1, ..Registry::default() }),
            max_running: 0,
            keep_running: false,
            removed: Mutex::default(),
        }
    }

    /// Whether a command may go on in the background after its call.
    pub(crate) fn keeps_running(&self) -> bool {
        self.keep_running
    }

    /// The sessions of `state`.
    pub(crate) fn of(state: &SessionState) -> Arc<Sessions> {
        state.get_or_insert_with(Sessions::default)
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many sessions are running now.
    pub fn running(&self) -> usize {
        self.registry().sessions.values().filter(|s| s.is_running()).count()
    }

    /// An error when no further session may start.
    pub(crate) fn check_room(&self) -> Result<(), ToolError> {
        let registry = self.registry();
        let running: Vec<u64> = registry.sessions.values().filter(|s| s.is_running()).map(|s| s.id).collect();
        if running.len() < self.max_running {
            return Ok(());
        }
        Err(ToolError::execution(format!(
            "{} commands are already running in the background (sessions {}), the most allowed at once. Stop one \
             with bash_stop, or wait for one to finish with bash_output, then run this command again.",
            running.len(),
            running.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        )))
    }

    /// Takes over a started command: a task reads its output and waits for it from now on.
    pub(crate) fn adopt(&self, start: Start) -> Arc<Session> {
        let Start {
            command,
            description,
            tty,
            output,
            control,
            input,
            capture,
            deadline,
            started,
            proxy,
            notes,
            can_escalate,
            confined,
        } = start;
        let handle = control.handle();
        let interactive = input.is_some();
        let feeder = input.map(Feeder::start);
        let mut registry = self.registry();
        let id = registry.next_id;
        registry.next_id += 1;
        let session = Arc::new(Session {
            id,
            command,
            description,
            tty,
            started,
            capture: tokio::sync::Mutex::new(capture),
            state: Mutex::new(State::default()),
            changes: watch::Sender::new(0),
            input: feeder,
            interactive,
            handle,
            pump: Mutex::new(None),
            proxy,
            notes: Mutex::new(notes),
            can_escalate,
            confined,
        });
        let task = tokio::spawn(pump(session.clone(), output, control, deadline));
        *session.pump.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
        registry.sessions.insert(id, session.clone());
        session
    }

    /// The session with this id, or an error listing the ones there are.
    pub(crate) fn get(&self, id: u64) -> Result<Arc<Session>, ToolError> {
        let registry = self.registry();
        if let Some(session) = registry.sessions.get(&id) {
            return Ok(session.clone());
        }
        let known: Vec<String> = registry.sessions.keys().map(u64::to_string).collect();
        Err(ToolError::not_found(if known.is_empty() {
            format!(
                "There is no session {id}: no command is running in the background (a finished session is \
                 removed once its end was read). Start one with bash."
            )
        } else {
            format!(
                "There is no session {id}. The sessions are {}; bash_list shows what each one runs.",
                known.join(", ")
            )
        }))
    }

    /// Every session, oldest first.
    pub(crate) fn list(&self) -> Vec<Arc<Session>> {
        self.registry().sessions.values().cloned().collect()
    }

    pub(crate) fn remove(&self, id: u64) {
        let removed = self.registry().sessions.remove(&id);
        if let Some(handle) = removed.and_then(|session| session.handle.clone()) {
            let mut kept = self.removed.lock().unwrap_or_else(|p| p.into_inner());
            kept.retain(|handle| handle.may_have_processes());
            if kept.len() >= MAX_REMOVED_KEPT {
                // Forgotten, not killed: what the oldest one left running goes on.
                kept.remove(0);
            }
            kept.push(handle);
        }
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        let sessions = std::mem::take(&mut self.registry().sessions);
        for session in sessions.values() {
            session.shut_down();
        }
        for handle in std::mem::take(&mut *self.removed.lock().unwrap_or_else(|p| p.into_inner())) {
            let _ = handle.kill_all();
        }
    }
}

/// A started command, handed over to [`Sessions::adopt`].
pub(crate) struct Start {
    pub(crate) command: String,
    pub(crate) description: Option<String>,
    pub(crate) tty: bool,
    pub(crate) output: Pin<Box<dyn AsyncRead + Send>>,
    pub(crate) control: Box<dyn ShellControl>,
    pub(crate) input: Option<Pin<Box<dyn AsyncWrite + Send>>>,
    /// The output so far; its current window is what the next read shows.
    pub(crate) capture: Capture,
    /// When the command is killed, if it still runs (`timeout_secs`).
    pub(crate) deadline: Option<(tokio::time::Instant, Duration)>,
    pub(crate) started: Instant,
    /// The command's network proxy, kept as long as the session; its refusals are shown with
    /// the output they came with.
    pub(crate) proxy: Option<tool_egress::EgressProxy>,
    /// Notes for the next read (why the network stayed off, say).
    pub(crate) notes: Vec<String>,
    /// Whether a refusal may suggest asking for the network (`sandbox: "network"`).
    pub(crate) can_escalate: bool,
    /// The sandbox the command runs in and its working directory: refusals the sandbox caused
    /// are explained with the output that shows them.
    pub(crate) confined: Option<(tool_sandbox::SandboxPolicy, std::path::PathBuf)>,
}

/// One command running (or ended) in the background.
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) command: String,
    pub(crate) description: Option<String>,
    pub(crate) tty: bool,
    started: Instant,
    capture: tokio::sync::Mutex<Capture>,
    state: Mutex<State>,
    /// Bumped whenever output arrives or the state changes.
    changes: watch::Sender<u64>,
    /// Its standard input (or terminal), written in the background.
    input: Option<Feeder>,
    interactive: bool,
    handle: Option<Arc<dyn ShellHandle>>,
    pump: Mutex<Option<AbortHandle>>,
    /// The command's network proxy: it serves until the session is dropped.
    proxy: Option<tool_egress::EgressProxy>,
    /// Notes the next read shows.
    notes: Mutex<Vec<String>>,
    /// Whether a refusal may suggest asking for the network (`sandbox: "network"`).
    can_escalate: bool,
    /// See [`Start::confined`].
    confined: Option<(tool_sandbox::SandboxPolicy, std::path::PathBuf)>,
}

#[derive(Debug, Default)]
struct State {
    ended: Option<Ended>,
    /// No process holds the output open any more: nothing more will arrive.
    output_closed: bool,
    /// `bash_stop` asked for the end.
    stop_requested: bool,
    /// Who stopped it, when not `bash_stop`: the note says so.
    stopped_by: Option<&'static str>,
    /// The newest unread text, for `until`.
    recent: String,
}

/// How a session ended.
#[derive(Debug, Clone)]
pub(crate) struct Ended {
    pub(crate) how: End,
    /// Who stopped it ([`End::Stopped`]), when not `bash_stop`.
    pub(crate) stopped_by: Option<&'static str>,
    pub(crate) after: Duration,
    pub(crate) exit: Option<ShellExit>,
    pub(crate) killed: Option<Result<KillReport, String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    Exited,
    /// Killed at its `timeout_secs`.
    TimedOut(Duration),
    /// Stopped with `bash_stop`.
    Stopped,
    /// Waiting for the shell failed.
    Lost(String),
}

/// What a session looks like now, for `bash_list`.
pub(crate) struct Snapshot {
    pub(crate) runtime: Duration,
    pub(crate) ended: Option<Ended>,
    pub(crate) output_closed: bool,
    pub(crate) unread_bytes: usize,
    pub(crate) total_bytes: usize,
    pub(crate) output_ref: Option<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl Session {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn is_running(&self) -> bool {
        self.state().ended.is_none()
    }

    /// Whether nothing more can happen: the command ended and its output is closed.
    fn is_over(&self) -> bool {
        let state = self.state();
        state.ended.is_some() && state.output_closed
    }

    pub(crate) fn runtime(&self) -> Duration {
        self.state().ended.as_ref().map_or_else(|| self.started.elapsed(), |e| e.after)
    }

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
        let line_after = line_after(&state.line, &bytes[..accepted]);
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

    /// Sends `signal` to the command's process group.
    pub(crate) fn signal(&self, signal: i32) -> Result<(), ToolError> {
        let Some(handle) = &self.handle else {
            return Err(ToolError::execution("Signals cannot be sent to commands run by these operations."));
        };
        handle
            .signal_group(signal)
            .map_err(|e| ToolError::execution(format!("Could not signal session {}: {e}", self.id)))
    }

    /// Stops the command: `SIGTERM` to its process group, then, after `grace` (or at once if it
    /// is gone by then), `SIGKILL` to every process it started that is still there.
    pub(crate) async fn stop(&self, grace: Duration) -> Option<Result<KillReport, String>> {
        let mut changes = self.changes.subscribe();
        let already_ended = {
            let mut state = self.state();
            state.stop_requested = true;
            state.ended.is_some()
        };
        if !already_ended {
            if let Some(handle) = &self.handle {
                let _ = handle.signal_group(nix_signal::SIGTERM);
            }
            let deadline = tokio::time::Instant::now() + grace;
            while self.is_running() {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { break },
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
        let killed = self.handle.as_ref().map(|h| h.kill_all().map_err(|e| e.to_string()));
        {
            let mut state = self.state();
            let after = self.started.elapsed();
            match &mut state.ended {
                Some(ended) => {
                    if ended.killed.is_none() {
                        ended.killed = killed.clone();
                    }
                }
                None => {
                    state.ended = Some(Ended {
                        how: End::Stopped,
                        stopped_by: state.stopped_by,
                        after,
                        exit: None,
                        killed: killed.clone(),
                    })
                }
            }
        }
        // What the killed processes wrote last, and their exit, arrive shortly.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while !self.is_over() {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        self.changed();
        killed
    }

    /// Waits for the command to end and renders everything no read took, as the final result of
    /// a call whose rest its caller took over ([`tool_runtime::handoff`]). Processes the command
    /// left behind get [`FINISH_DRAIN`] more to close its output (the result then says they still
    /// run). When `cancel` fires first, the command is stopped as `bash_stop` stops it, with every
    /// process it started.
    pub(crate) async fn finish(&self, sessions: &Sessions, cancel: &CancellationToken) -> ToolOutput {
        let mut changes = self.changes.subscribe();
        let mut drain_until = None;
        while !self.is_over() {
            if drain_until.is_none() && !self.is_running() {
                drain_until = Some(tokio::time::Instant::now() + FINISH_DRAIN);
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep_until(drain_until.unwrap_or_else(far_future)), if drain_until.is_some() => break,
                () = cancel.cancelled() => {
                    self.state().stopped_by = Some("because the task was cancelled");
                    self.stop(FINISH_STOP_GRACE).await;
                    break;
                }
            }
        }
        self.render(sessions).await
    }

    /// Kills everything at once, for a dropped session state.
    fn shut_down(&self) {
        if let Some(handle) = &self.handle {
            let _ = handle.kill_all();
        }
        if let Some(feeder) = &self.input {
            feeder.task.abort();
        }
        if let Some(pump) = self.pump.lock().unwrap_or_else(|p| p.into_inner()).take() {
            pump.abort();
        }
    }

    fn record_exit(&self, exit: Result<ShellExit, String>) {
        let mut state = self.state();
        let after = self.started.elapsed();
        let (exit, lost) = match exit {
            Ok(exit) => (Some(exit), None),
            Err(error) => (None, Some(error)),
        };
        match &mut state.ended {
            Some(ended) => {
                if ended.exit.is_none() {
                    ended.exit = exit;
                }
            }
            None => {
                let how = match lost {
                    Some(error) => End::Lost(error),
                    None if state.stop_requested => End::Stopped,
                    None => End::Exited,
                };
                state.ended = Some(Ended { how, stopped_by: state.stopped_by, after, exit, killed: None });
            }
        }
        drop(state);
        self.changed();
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
struct Feeder {
    shared: Arc<FeederShared>,
    task: AbortHandle,
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
    fn start(writer: Pin<Box<dyn AsyncWrite + Send>>) -> Feeder {
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
/// backspaces applied.
pub(crate) fn line_after(line: &str, bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut line = line.to_owned();
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\u{4}' | '\u{3}' | '\u{15}' => line.clear(),
            '\u{7f}' | '\u{8}' => {
                line.pop();
            }
            c => line.push(c),
        }
    }
    line
}

mod nix_signal {
    //! Signal numbers, without naming `nix` outside Unix.
    pub(super) const SIGTERM: i32 = 15;
}

/// The bracketed notes of an ended session, as `bash` writes them.
fn end_notes(ended: &Ended, is_error: &mut bool) -> Vec<String> {
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
async fn pump(
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
