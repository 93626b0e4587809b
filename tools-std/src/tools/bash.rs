//! The `bash` tool: run a command in the workspace, with a timeout, process-tree kill, streaming and bounded capture.

use std::time::{Duration, Instant};

use serde_json::json;
use tool_runtime::handoff::Remainder;
use tool_runtime::output_store::OutputStore;
use tool_runtime::truncate::{TruncationInfo, append_notice, mark_truncated};
use tool_runtime::words::duration;
use tool_runtime::{
    Dep, PermissionKind, PermissionRequest, Progress, ToolContext, ToolError, ToolOutput, tool,
};

use std::sync::Arc;

use tool_sandbox::{Sandbox, SandboxPolicy};

use crate::Workspace;
use crate::shell::capture::Capture;
pub use crate::shell::capture::SPILL_AT;
use crate::shell::network::{self, CommandNetwork, Prepared};
use crate::shell::notes::{exit_note, kill_metadata, kill_note};
use crate::shell::process::{
    KillReport, ShellControl, ShellExit, ShellInput, ShellOutput, ShellProcess, ShellRequest,
};
use crate::shell::reader::Reader;
use crate::shell::session::{Sessions, Start};
use crate::text::plural;

/// The timeout when the call gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a command runs before it goes on in the background, when the call gives no
/// `yield_ms` and no `timeout_secs`.
pub const DEFAULT_YIELD: Duration = Duration::from_secs(30);
/// The longest `yield_ms` a call may ask for.
pub const MAX_YIELD: Duration = MAX_TIMEOUT;
/// The size of the terminal of a `tty` command.
pub const TERMINAL_SIZE: (u16, u16) = (40, 120);
/// How long the output is still read after the shell exited, for processes it left behind.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);
/// Progress events carry at most this much output per window; the rest is summarised.
const PROGRESS_BYTES_PER_WINDOW: usize = 64 * 1024;
const PROGRESS_WINDOW: Duration = Duration::from_millis(100);

/// Run a shell command with `bash -c` in the workspace root. Each call starts a new shell: `cd`
/// and variables do not carry over to the next call. Prefer `read`, `glob`, `grep` and `ls` over
/// `cat`, `find`, `grep` and `ls` commands.
///
/// Sandbox: commands may read everywhere but write only inside the workspace and `$TMPDIR` (not
/// `/tmp`; `.git` unless the user allows git writes, `.claude/`, `CLAUDE.md`, `AGENTS.md` and
/// `.mcp.json` stay read-only), and the network is off, or open only to the hosts the user allows
/// (a refused host is named at the end of the result). When a command needs more (a download, a
/// write outside the workspace), call again with `sandbox: "network"` or `sandbox: "escalated"`
/// (no sandbox) and a `justification`: the user is asked, and may refuse.
///
/// Output: standard output and standard error interleaved, then `[exit code N]` when it is not
/// 0; `(no output)` when there is none. A long output is cut in the middle; the notice says how
/// to read all of it with `tool_output_read`.
///
/// Long-running commands: one still running after `yield_ms` (default 30000, at most 600000)
/// goes on in the background as a *session*; the result shows its output so far and its id.
/// Then `bash_output` reads what it prints next (or waits for its end), `bash_input` types into
/// it, `bash_stop` stops it, `bash_list` lists the sessions. `background: true` starts a server
/// or watcher in the background at once. With `timeout_secs` (at most 600) and no `yield_ms`,
/// the command and every process it started are killed at that time; with both, the session is.
/// A cancelled call kills its command, unless it already went to the background.
///
/// Input: standard input is empty, so a command that asks a question fails instead of waiting
/// (use flags such as `-y`), unless `interactive: true` keeps it open for `bash_input`. A program
/// that needs a terminal (a REPL, `psql`, a full-screen program) runs with `tty: true`; escape
/// sequences are removed from what you read.
#[tool(
    open_world,
    destructive,
    permission = "command",
    command_argument = "command",
    timeout = "11m",
    truncate(direction = "middle")
)]
#[allow(clippy::too_many_arguments)]
pub async fn bash(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The command line to run.
    command: String,
    /// The directory to run it in, relative to the workspace root (default: the root); it must
    /// be the root or beneath it.
    workdir: Option<String>,
    /// Seconds after which the command is killed (default: none once it went to the background;
    /// at most 600).
    #[schemars(range(min = 1, max = 600))]
    timeout_secs: Option<u64>,
    /// Milliseconds to wait for the command before it goes on in the background as a session
    /// (default 30000, at most 600000).
    #[schemars(range(min = 0, max = 600000))]
    yield_ms: Option<u64>,
    /// Start the command in the background at once (a server, a watcher): the same as
    /// `yield_ms: 0`.
    #[arg(alias = "run_in_background")]
    background: Option<bool>,
    /// Keep standard input open, so the command can be answered with `bash_input`.
    interactive: Option<bool>,
    /// Run the command in a terminal (implies `interactive`).
    tty: Option<bool>,
    /// A few words saying what the command does, shown to the user.
    description: Option<String>,
    /// Ask to run with more rights than the sandbox gives: `network` (the network on) or
    /// `escalated` (no sandbox at all). The user is asked; give a `justification`.
    sandbox: Option<Escalation>,
    /// Why the command needs the rights `sandbox` asks for, shown to the user.
    justification: Option<String>,
) -> Result<ToolOutput, ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::invalid_arguments("The command is empty."));
    }
    if command.contains('\0') {
        return Err(ToolError::invalid_arguments(
            "The command contains a NUL character, which bash cannot run.",
        ));
    }
    let cwd = working_directory(&ws, workdir.as_deref()).await?;
    let tty = tty.unwrap_or(false);
    let interactive = tty || interactive.unwrap_or(false);
    // With only `timeout_secs`, a command is killed at it, as before there were sessions.
    let sessions = Sessions::of(ctx.session());
    let yield_after = match (yield_ms, background.unwrap_or(false), timeout_secs) {
        _ if !sessions.keeps_running() && (yield_ms.is_some() || background == Some(true)) => {
            return Err(ToolError::invalid_arguments(
                "This host ends every command with its call (it exits once the call is answered), so \
                 `yield_ms` and `background` cannot be used here. Run the command without them: it then \
                 runs until it ends or reaches `timeout_secs`.",
            ));
        }
        _ if !sessions.keeps_running() => None,
        (Some(ms), _, _) => Some(Duration::from_millis(ms).min(MAX_YIELD)),
        (None, true, _) => Some(Duration::ZERO),
        (None, false, None) => Some(DEFAULT_YIELD),
        (None, false, Some(_)) => None,
    };
    if yield_after.is_some() {
        sessions.check_room()?;
    }
    let workdir = (cwd != ws.root()).then(|| cwd.clone());
    let asked = match &workdir {
        Some(dir) => format!(
            "run `{command}` in {}",
            crate::text::display_path(dir.strip_prefix(ws.root()).unwrap_or(dir))
        ),
        None => format!("run `{command}`"),
    };
    ctx.ask(PermissionRequest::new(PermissionKind::Command { command: command.clone(), workdir }, asked))
        .await?;
    let (sandbox, granted) = sandbox_for(&ws, ctx, &command, sandbox, justification).await?;
    // A command that can write the workspace gets a checkpoint, kept when the call ends.
    let checkpoint = if !sandbox.policy().is_enforced() || sandbox.policy().allows_write(ws.root()) {
        crate::checkpoint::begin(&ws, ctx, "bash").await
    } else {
        crate::checkpoint::Recording::none()
    };
    // With an egress, a command whose network is off reaches the hosts it allows through a proxy
    // of its own, kept until the command ends.
    let (sandbox, proxy, off_note) = match network::prepare(&ws, ctx, &command, &sandbox, granted).await {
        Prepared::Unchanged => (sandbox, None, None),
        Prepared::Proxy(CommandNetwork { proxy, sandbox }) => (sandbox, Some(proxy), None),
        Prepared::Off(reason) => (sandbox, None, Some(crate::shell::notes::off_note(&reason))),
    };
    let timeout =
        timeout_secs.map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.clamp(1, MAX_TIMEOUT.as_secs())));
    // Both limits are kept as given: the command's own, and the call's (at its deadline the
    // dispatcher waits a short grace for the output so far). The note names the one that stops it.
    let left = ctx.deadline().map(|d| d.saturating_duration_since(tokio::time::Instant::now().into_std()));
    // Whose limit stops the command: the command's own `timeout_secs`, or the call's (a
    // dispatcher's or the caller's), which `timeout_secs` cannot raise.
    let (stop_after, limit, hint) = match left {
        Some(left) if left < timeout => (left, ctx.time_limit().unwrap_or(left), Hint::CallLimit),
        _ if timeout_secs.is_some() => (timeout, timeout, Hint::LargerTimeout),
        _ => (timeout, timeout, Hint::Timeout),
    };
    // In the background, only the command's own `timeout_secs` still applies.
    let session_timeout = timeout_secs.map(|_| timeout);
    let input = match (tty, interactive) {
        (true, _) => ShellInput::Terminal { rows: TERMINAL_SIZE.0, cols: TERMINAL_SIZE.1 },
        (false, true) => ShellInput::Pipe,
        (false, false) => ShellInput::Null,
    };
    let request = ShellRequest {
        command: command.clone(),
        cwd,
        env: [("PAGER", "cat"), ("GIT_PAGER", "cat"), ("GIT_TERMINAL_PROMPT", "0")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .chain(proxy.iter().flat_map(network::Proxy::env))
            .collect(),
        input,
        sandbox: sandbox.policy().is_enforced().then(|| sandbox.clone()),
        shell: Some(ws.shell()),
    };
    let started = Instant::now();
    let process = ws.operations().spawn_shell(&request).map_err(|e| {
        let what = if tty { "bash in a terminal" } else { "bash" };
        ToolError::execution(format!("Cannot start {what}: {e}")).with_source(e)
    })?;
    let store = ctx.dependencies().get::<OutputStore>();
    let capture = Capture::new(store, ctx.truncation(), tty);
    let ShellProcess { output, control, input } = process;
    // What a command that ends leaves running ends with this session state.
    let handle = control.handle();
    // Until the command goes to the background, the call owns its input; a command still
    // running when the call is dropped is killed with it (the control's `Drop`).
    let (ran, mut capture) = run(output, control, ctx, stop_after, yield_after, capture).await?;
    match ran {
        Ran::Ended(ended) => {
            if let Some(handle) = handle.filter(|handle| handle.may_have_processes()) {
                sessions.keep(handle);
            }
            let (text, info) = capture.finish().await;
            let (refused, refusals) =
                proxy.as_ref().map(|p| network::refusals(p, ws.escalation_allowed())).unwrap_or_default();
            let network = NetworkNotes { refused, off: off_note };
            let mut out =
                ended.into_output(text, info, hint, limit, description, &sandbox, ws.root(), network);
            if !refusals.is_empty() {
                out = out.with_metadata("network_refusals", network::refusals_metadata(&refusals));
            }
            Ok(checkpoint.finish_into(out).await)
        }
        Ran::Yielded { output, control } => {
            capture.start_writing();
            let session = sessions.adopt(Start {
                command,
                description: description.clone(),
                tty,
                output: Box::pin(output),
                control,
                input,
                capture,
                deadline: session_timeout.map(|t| (tokio::time::Instant::from_std(started) + t, t)),
                started,
                proxy,
                notes: off_note.into_iter().collect(),
                can_escalate: ws.escalation_allowed(),
                confined: Some((sandbox.policy().clone(), ws.root().to_path_buf())),
            });
            let description = description.filter(|d| !d.trim().is_empty());
            let sandbox = sandbox_metadata(&sandbox);
            let finish = |mut out: ToolOutput, description: Option<String>, sandbox| {
                if let Some(description) = description {
                    out = out.with_title(description);
                }
                out.with_metadata("sandbox", sandbox)
            };
            // A caller that tracks tasks (an MCP client with the tasks extension) takes the rest:
            // the command's whole output, once it ended, is the call's final result.
            if ctx.takes_tasks() {
                let id = session.id;
                let rest = {
                    let (session, sessions) = (session.clone(), sessions.clone());
                    let (description, sandbox) = (description.clone(), sandbox.clone());
                    move |cancel: tool_runtime::CancellationToken| -> tool_runtime::BoxFuture<'static, ToolOutput> {
                        Box::pin(async move { finish(session.finish(&sessions, &cancel).await, description, sandbox) })
                    }
                };
                let status = format!("session {id} is running `{}`", one_line(&session.command));
                if ctx.hand_off(Remainder { status, work: Box::new(rest) }).is_ok() {
                    let out = ToolOutput::text(format!(
                        "[session {id}: the command goes on as a task; its output is the task's result.]"
                    ))
                    .with_metadata("session_id", json!(id))
                    .with_metadata("task", json!(true));
                    return Ok(checkpoint.finish_into(out).await);
                }
            }
            let out = finish(session.render(&sessions).await, description, sandbox);
            Ok(checkpoint.finish_into(out).await)
        }
    }
}

/// `command` on one line, at most 80 characters, for a status line.
fn one_line(command: &str) -> String {
    let line: String = command.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// More rights than the sandbox gives, asked for one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Escalation {
    /// No sandbox at all.
    Escalated,
    /// The sandbox, with the network on.
    Network,
}

/// The sandbox the command runs in: the workspace's, or, when the call asks for more and the
/// user grants it, a wider one; and whether the command is granted the network (through the
/// proxy, [`Workspace::granted_egress`]).
async fn sandbox_for(
    ws: &Workspace,
    ctx: &ToolContext,
    command: &str,
    escalation: Option<Escalation>,
    justification: Option<String>,
) -> Result<(Arc<Sandbox>, bool), ToolError> {
    let refused = |e: tool_sandbox::SandboxError| ToolError::permission_denied(e.to_string()).with_source(e);
    if ws.runs_unsandboxed(command) {
        return Sandbox::new(SandboxPolicy::off()).map(|s| (Arc::new(s), false)).map_err(refused);
    }
    let Some(escalation) = escalation else {
        return ws.sandbox().map(|s| (s, ws.runs_networked(command))).map_err(refused);
    };
    if !ws.escalation_allowed() {
        return Err(ToolError::permission_denied(
            "Running commands with more rights than the sandbox gives is turned off here \
             (allowUnsandboxedCommands: false): run the command inside the sandbox, or ask the user to run it.",
        ));
    }
    let justification = justification.filter(|j| !j.trim().is_empty()).ok_or_else(|| {
        ToolError::invalid_arguments(
            "`sandbox` asks the user for more rights: give a `justification` saying why.",
        )
    })?;
    let current = ws.sandbox_policy();
    let rights = match escalation {
        Escalation::Escalated => "no sandbox (every right of the user)",
        Escalation::Network => "the network (every host the settings do not deny, through the proxy)",
    };
    if !current.is_enforced() {
        return ws.sandbox().map(|s| (s, false)).map_err(refused);
    }
    ctx.ask(
        PermissionRequest::new(
            PermissionKind::SandboxEscalation {
                command: command.to_owned(),
                rights: rights.to_owned(),
                justification: justification.clone(),
            },
            format!("run `{command}` with {rights}, because: {justification}"),
        )
        .with_details(json!({"command": command, "rights": rights, "justification": justification})),
    )
    .await?;
    match escalation {
        Escalation::Escalated => {
            Sandbox::new(SandboxPolicy::off()).map(|s| (Arc::new(s), false)).map_err(refused)
        }
        Escalation::Network => ws.sandbox().map(|s| (s, true)).map_err(refused),
    }
}

/// The `sandbox` metadata of a result: what confined the command.
fn sandbox_metadata(sandbox: &Sandbox) -> serde_json::Value {
    let mut value = serde_json::to_value(sandbox.report()).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("summary".to_owned(), json!(sandbox.report().to_string()));
    }
    value
}

/// What the command's network has to say in its result.
#[derive(Debug, Default)]
struct NetworkNotes {
    /// The proxy's refusals, one line each.
    refused: Option<String>,
    /// Why the network stayed off although the workspace has an egress.
    off: Option<String>,
}

/// What a result stopped at its time limit suggests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hint {
    /// No `timeout_secs` was given: pass one.
    Timeout,
    /// `timeout_secs` was given: pass a larger one.
    LargerTimeout,
    /// The call's own limit came first; `timeout_secs` cannot help.
    CallLimit,
}

/// Why the command stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Exited(ShellExit),
    TimedOut,
    Cancelled,
}

#[derive(Debug)]
struct Ended {
    stop: Stop,
    /// Processes the shell left behind still held the output open when reading stopped.
    left_open: bool,
    /// What stopping the command killed, or why killing it failed.
    killed: Option<Result<KillReport, String>>,
}

/// How the call's part of the command ended.
enum Ran {
    Ended(Ended),
    /// Still running at the yield time: the command goes on in the background.
    Yielded {
        output: ShellOutput,
        control: Box<dyn ShellControl>,
    },
}

async fn run(
    output: ShellOutput,
    mut control: Box<dyn ShellControl>,
    ctx: &ToolContext,
    stop_after: Duration,
    yield_after: Option<Duration>,
    capture: Capture,
) -> Result<(Ran, Capture), ToolError> {
    let now = tokio::time::Instant::now();
    let deadline = now + stop_after;
    // The call's own limit wins over a later yield: the command is killed then, as it would be
    // without sessions.
    let yield_at = yield_after.map(|y| now + y).filter(|&y| y < deadline);
    let cancel = ctx.cancellation_token().clone();
    let mut progress = ProgressStream::new(ctx.clone());
    let mut reader = Reader::start(output, capture, move |text| progress.send(text))
        .map_err(|e| ToolError::execution(format!(
            "Cannot read the command's output ({e}); the command was stopped. Run it again once the system has free threads and file descriptors."
        )).with_source(e))?;
    let at_deadline = tokio::time::sleep_until(deadline);
    let yielding = tokio::time::sleep_until(yield_at.unwrap_or(deadline));
    let drained = tokio::time::sleep_until(deadline);
    let cancelled = cancel.cancelled();
    tokio::pin!(at_deadline, yielding, drained, cancelled);
    let mut exited = control.wait();
    let mut exit: Option<ShellExit> = None;
    let mut eof = false;
    let mut draining = false;
    let mut stop = None;
    while !(eof && exit.is_some()) {
        tokio::select! {
            () = reader.ended(), if !eof => eof = true,
            status = &mut exited, if exit.is_none() => {
                let status = status.map_err(|e| ToolError::execution(format!("Lost track of the command: {e}")).with_source(e))?;
                exit = Some(status);
                drained.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                draining = true;
            },
            () = &mut drained, if draining => break,
            () = &mut at_deadline, if exit.is_none() => {
                stop = Some(Stop::TimedOut);
                break;
            },
            () = &mut yielding, if exit.is_none() && yield_at.is_some() => {
                drop(exited);
                let read = reader.stop().await.map_err(lost_output)?;
                return Ok((Ran::Yielded { output: read.output, control }, read.capture));
            },
            () = &mut cancelled, if exit.is_none() => {
                // The dispatcher cancels at the call's deadline, possibly just before this loop's timer.
                let timed_out = ctx.deadline().is_some_and(|d| tokio::time::Instant::now().into_std() >= d);
                stop = Some(if timed_out { Stop::TimedOut } else { Stop::Cancelled });
                break;
            },
        }
    }
    drop(exited);
    if let Some(stop) = stop {
        let killed = control.kill_all().map_err(|e| e.to_string());
        // Whatever was written before the kill is still in the pipe: read it, briefly.
        let _ = tokio::time::timeout(Duration::from_millis(500), reader.ended()).await;
        let read = reader.stop().await.map_err(lost_output)?;
        let _ = tokio::time::timeout(Duration::from_secs(2), control.wait()).await;
        return Ok((Ran::Ended(Ended { stop, left_open: false, killed: Some(killed) }), read.capture));
    }
    let read = reader.stop().await.map_err(lost_output)?;
    let exit = exit.unwrap_or(ShellExit { code: None, signal: None });
    Ok((Ran::Ended(Ended { stop: Stop::Exited(exit), left_open: !read.ended, killed: None }), read.capture))
}

fn lost_output(error: std::io::Error) -> ToolError {
    ToolError::execution(format!(
        "Lost the command's output: its reader failed ({error}); the command was stopped. Run it again, or write its output to a file and read that."
    )).with_source(error)
}

impl Ended {
    #[allow(clippy::too_many_arguments)]
    fn into_output(
        self,
        mut text: String,
        info: Option<TruncationInfo>,
        hint: Hint,
        stop_after: Duration,
        description: Option<String>,
        sandbox: &Sandbox,
        cwd: &std::path::Path,
        network: NetworkNotes,
    ) -> ToolOutput {
        if text.is_empty() {
            text.push_str("(no output)");
        }
        let mut notes = Vec::new();
        let mut violations = match self.stop {
            Stop::Exited(exit) if exit.code != Some(0) => {
                tool_sandbox::violation::detect(sandbox.policy(), cwd, &text)
            }
            _ => Vec::new(),
        };
        // The proxy's own notes say which host was refused and why: more than a guess from the output.
        if network.refused.is_some() {
            violations.retain(|v| *v != tool_sandbox::Violation::Network);
        }
        let mut is_error = false;
        let (mut code, mut signal) = (None, None);
        match self.stop {
            Stop::Exited(exit) => {
                (code, signal) = (exit.code, exit.signal);
                if let Some(note) = exit_note(exit) {
                    is_error = true;
                    notes.push(note);
                }
            }
            Stop::TimedOut => {
                is_error = true;
                let hint = match hint {
                    Hint::LargerTimeout => "pass a larger timeout_secs (at most 600)",
                    Hint::Timeout => "pass timeout_secs (at most 600)",
                    Hint::CallLimit => {
                        "split the work: this limit is the call's, and timeout_secs cannot raise it"
                    }
                };
                notes.push(format!(
                    "[timed out after {}: the output above is what the command printed until then. Run long jobs with \
                     `background: true` (then read their output with bash_output), or {hint}.]",
                    duration(stop_after)
                ));
            }
            Stop::Cancelled => {
                is_error = true;
                notes
                    .push("[cancelled: the output above is what the command printed until then.]".to_owned());
            }
        }
        match &self.killed {
            Some(Ok(report)) => notes.push(kill_note(report)),
            Some(Err(error)) => notes.push(format!(
                "[the command could not be killed ({error}); processes it started may still be running: check with `ps`]"
            )),
            None => {}
        }
        if self.left_open {
            notes.push(
                "[processes started by the command still hold its output open; what they print from now on is not \
                 captured]"
                    .to_owned(),
            );
        }
        notes.extend(violations.iter().map(|v| v.explain()));
        notes.extend(network.refused);
        // Said only when the command failed: a command that needed no network need not hear of it.
        if is_error {
            notes.extend(network.off);
        }
        for note in &notes {
            append_notice(&mut text, note);
        }
        let mut output = ToolOutput::text(text)
            .with_metadata("exit_code", json!(code))
            .with_metadata("signal", json!(signal))
            .with_metadata("timed_out", json!(self.stop == Stop::TimedOut))
            .with_metadata("cancelled", json!(self.stop == Stop::Cancelled))
            .with_metadata("sandbox", sandbox_metadata(sandbox));
        if !violations.is_empty() {
            output = output.with_metadata("sandbox_violations", json!(violations));
        }
        if let Some(Ok(report)) = &self.killed {
            output = output.with_metadata("killed", kill_metadata(report));
        }
        output.is_error = is_error;
        if let Some(description) = description.filter(|d| !d.trim().is_empty()) {
            output = output.with_title(description);
        }
        if let Some(info) = info {
            mark_truncated(&mut output, &info);
        }
        output
    }
}

/// Streams output as progress events, at most [`PROGRESS_BYTES_PER_WINDOW`] per window.
struct ProgressStream {
    ctx: ToolContext,
    window_start: Instant,
    window_bytes: usize,
    skipped: usize,
}

impl ProgressStream {
    fn new(ctx: ToolContext) -> Self {
        ProgressStream { ctx, window_start: Instant::now(), window_bytes: 0, skipped: 0 }
    }

    fn send(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.window_start.elapsed() >= PROGRESS_WINDOW {
            self.window_start = Instant::now();
            self.window_bytes = 0;
        }
        if self.window_bytes + text.len() > PROGRESS_BYTES_PER_WINDOW {
            self.skipped += text.len();
            return;
        }
        self.window_bytes += text.len();
        let message = if self.skipped > 0 {
            let skipped = std::mem::take(&mut self.skipped);
            format!("[... {} not streamed ...]\n{text}", plural(skipped as u64, "byte"))
        } else {
            text.to_owned()
        };
        self.ctx.progress(Progress::message(message));
    }
}

/// The arguments other agents' shell tools take, as `bash`'s own (see
/// [`Tool::adapt_arguments`](tool_runtime::Tool::adapt_arguments)): Claude Code's `timeout` and
/// codex's `timeout_ms` (milliseconds, rounded up to `timeout_secs`), and codex's `command` as an
/// array (`["bash", "-lc", "ls -la"]` is `ls -la`; any other list of strings is joined, each
/// quoted for the shell). `run_in_background` is a plain alias of `background`.
pub(crate) fn adapt_arguments(
    arguments: &mut serde_json::Map<String, serde_json::Value>,
    coercions: &mut Vec<tool_runtime::validate::Coercion>,
) {
    use serde_json::Value;
    use tool_runtime::validate::Coercion;
    for alias in ["timeout", "timeout_ms"] {
        if arguments.contains_key("timeout_secs") {
            break;
        }
        let millis = match arguments.get(alias) {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        let Some(millis) = millis.filter(|ms| ms.is_finite() && *ms >= 0.0) else { continue };
        arguments.remove(alias);
        let seconds = (millis / 1000.0).ceil().max(1.0) as u64;
        arguments.insert("timeout_secs".to_owned(), Value::from(seconds));
        coercions.push(Coercion { path: format!("/{alias}"), to: "/timeout_secs".to_owned() });
    }
    if let Some(Value::Array(items)) = arguments.get("command")
        && let Some(words) = items.iter().map(Value::as_str).collect::<Option<Vec<&str>>>()
        && !words.is_empty()
    {
        let line = command_line(&words);
        arguments.insert("command".to_owned(), Value::String(line));
        coercions.push(Coercion { path: "/command".to_owned(), to: "string".to_owned() });
    }
}

/// The directory `workdir` names, as an absolute path: the root, or a directory beneath it. A
/// path that leads out of the workspace (`..` past the root, an absolute path elsewhere, a link
/// out) is refused, never asked about.
async fn working_directory(ws: &Workspace, workdir: Option<&str>) -> Result<std::path::PathBuf, ToolError> {
    use std::path::{Component, Path, PathBuf};
    let Some(workdir) = workdir.map(str::trim).filter(|w| !w.is_empty()) else {
        return Ok(ws.root().to_path_buf());
    };
    let outside = || {
        ToolError::invalid_arguments(format!(
            "workdir `{}` is outside the workspace; it must be the workspace root or a directory beneath it \
             (relative to the root, e.g. `src`).",
            tool_runtime::words::excerpt(workdir)
        ))
    };
    let path = Path::new(workdir);
    let relative =
        if path.is_absolute() { path.strip_prefix(ws.root()).map_err(|_| outside())? } else { path };
    let mut beneath = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => beneath.push(name),
            Component::CurDir => {}
            Component::ParentDir if beneath.pop() => {}
            _ => return Err(outside()),
        }
    }
    let target = crate::Target::root().join(&beneath);
    let info = ws.blocking(move |ops| ops.metadata(&target)).await?.map_err(|e| {
        let message = format!("Cannot run in workdir `{}`: {e}", tool_runtime::words::excerpt(workdir));
        ToolError::from_io(e).with_message(message)
    })?;
    if info.kind != crate::fs::ops::FileKind::Dir {
        return Err(ToolError::invalid_arguments(format!(
            "workdir `{}` is not a directory.",
            tool_runtime::words::excerpt(workdir)
        )));
    }
    Ok(ws.root().join(beneath))
}

/// The command line an argument vector stands for: the script of `bash -c SCRIPT` (or `sh`,
/// `zsh`, with `-lc`), otherwise the words joined, each quoted for the shell where it needs it.
fn command_line(words: &[&str]) -> String {
    let shell = words[0].rsplit('/').next().unwrap_or(words[0]);
    if let [_, flag, script] = words
        && matches!(shell, "bash" | "sh" | "zsh" | "dash")
        && matches!(*flag, "-c" | "-lc" | "-cl")
    {
        return (*script).to_owned();
    }
    let quoted: Vec<String> = words
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
            if plain { (*word).to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
        })
        .collect();
    quoted.join(" ")
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tool_runtime::truncate::TruncationLimits;

    use serde_json::{Value, json};
    use tool_runtime::{CancellationToken, ErrorKind, Tool, context::ContextSink};

    use super::*;
    use crate::testing::Fixture;

    #[test]
    fn the_call_limit_leaves_time_to_stop_the_longest_command() {
        let spec = BashTool.spec();
        let longest = spec.input_schema["properties"]["timeout_secs"]["maximum"].as_u64().unwrap();
        assert_eq!(Duration::from_secs(longest), MAX_TIMEOUT);
        // Past its own limit a command is killed and its last output drained, which takes seconds:
        // the call's limit must not cut that short, or the result would not say what was killed.
        assert!(spec.timeout.unwrap() >= MAX_TIMEOUT + Duration::from_secs(10), "{:?}", spec.timeout);
    }

    async fn run_bash(fx: &Fixture, args: Value) -> ToolOutput {
        fx.call("bash", args).await.expect("bash returns a result")
    }

    #[tokio::test]
    async fn interleaved_output_in_the_workspace_root() {
        let fx = Fixture::new();
        let out = run_bash(&fx, json!({"command": "echo one; echo two >&2; echo three; pwd"})).await;
        assert_eq!(out.text_content(), format!("one\ntwo\nthree\n{}\n", fx.root().display()));
        assert!(!out.is_error);
        assert_eq!(out.metadata["exit_code"], json!(0));
    }

    #[tokio::test]
    async fn a_command_inherits_only_the_base_variables() {
        // Cargo sets CARGO_MANIFEST_DIR for its tests: a variable of ours that is not on the list.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let fx = Fixture::new();
        let out = run_bash(&fx, json!({"command": "env"})).await;
        let seen = out.text_content();
        assert!(!seen.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR=")), "{seen}");
        assert!(seen.lines().any(|l| l.starts_with("PATH=")), "{seen}");
        assert!(seen.lines().any(|l| l == "PAGER=cat"), "the command's own variables are set: {seen}");
    }

    #[tokio::test]
    async fn non_zero_exit_is_an_error_result_with_the_output() {
        let fx = Fixture::new();
        let out = run_bash(&fx, json!({"command": "echo partial; exit 3"})).await;
        assert!(out.is_error);
        assert_eq!(out.text_content(), "partial\n\n[exit code 3]");
        assert_eq!(out.metadata["exit_code"], json!(3));
        let out = run_bash(&fx, json!({"command": "kill -SEGV $$"})).await;
        assert_eq!(out.text_content(), "(no output)\n\n[killed by signal 11 (SIGSEGV)]");
    }

    #[tokio::test]
    async fn no_output() {
        let fx = Fixture::new();
        let out = run_bash(&fx, json!({"command": "true", "description": "Do nothing"})).await;
        assert_eq!(out.text_content(), "(no output)");
        assert_eq!(out.title.as_deref(), Some("Do nothing"));
    }

    #[tokio::test]
    async fn stdin_is_empty_and_a_prompt_does_not_hang() {
        let fx = Fixture::new();
        let out = run_bash(&fx, json!({"command": "read -r line; echo \"got [$line] $?\""})).await;
        assert_eq!(out.text_content(), "got [] 1\n");
    }

    #[cfg(target_os = "linux")]
    fn alive(pid: u32) -> bool {
        // A zombie is dead for this purpose: it runs nothing and holds nothing.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    #[cfg(target_os = "linux")]
    async fn wait_dead(pid: u32) -> bool {
        for _ in 0..100 {
            if !alive(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn timeout_kills_the_whole_group_and_keeps_the_output() {
        let fx = Fixture::new();
        let started = Instant::now();
        let out = run_bash(
            &fx,
            json!({"command": "echo started; (sleep 300; echo never) & echo $! > grandchild.pid; wait", "timeout_secs": 1}),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(60));
        assert!(out.is_error);
        let text = out.text_content();
        assert!(text.starts_with("started\n\n[timed out after 1s"), "{text}");
        // The subshell and its `sleep`.
        assert!(text.ends_with("]\n\n[killed the command and 2 processes it started]"), "{text}");
        assert_eq!(out.metadata["timed_out"], json!(true));
        assert_eq!(
            out.metadata["killed"],
            json!({"scope": "process_tree", "command": true, "started": 2, "outside_group": 0, "not_killed": []})
        );
        let pid: u32 = String::from_utf8(fx.read("grandchild.pid")).unwrap().trim().parse().unwrap();
        assert!(wait_dead(pid).await, "the grandchild {pid} survived the timeout");
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn cancellation_kills_the_group_and_says_so() {
        let fx = Fixture::new();
        let token = CancellationToken::new();
        let ctx = ToolContext::builder("bash")
            .dependencies(fx.deps.clone())
            .cancellation_token(token.clone())
            .build();
        let pid_file = fx.root().join("bg.pid");
        let canceller = tokio::spawn(async move {
            while std::fs::metadata(&pid_file).map_or(true, |m| m.len() == 0) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            token.cancel();
        });
        let out = fx
            .call_with(ctx, "bash", json!({"command": "echo hi; sleep 300 & echo $! > bg.pid; wait"}))
            .await
            .unwrap();
        canceller.await.unwrap();
        assert!(out.is_error);
        assert_eq!(
            out.text_content(),
            "hi\n\n[cancelled: the output above is what the command printed until then.]\n\n[killed the command and 1 process it started]"
        );
        let pid: u32 = String::from_utf8(fx.read("bg.pid")).unwrap().trim().parse().unwrap();
        assert!(wait_dead(pid).await, "the background process {pid} survived the cancellation");
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn dropping_the_call_kills_the_group() {
        let fx = Fixture::new();
        let call = fx.call("bash", json!({"command": "sleep 300 & echo $! > bg.pid; wait"}));
        assert!(tokio::time::timeout(Duration::from_secs(1), call).await.is_err());
        let pid: u32 = String::from_utf8(fx.read("bg.pid")).unwrap().trim().parse().unwrap();
        assert!(wait_dead(pid).await, "the background process {pid} outlived its abandoned call");
    }

    #[tokio::test]
    async fn a_child_holding_the_pipe_does_not_hang_the_tool() {
        let fx = Fixture::new();
        let started = Instant::now();
        let out = run_bash(&fx, json!({"command": "sleep 30 & echo done"})).await;
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(
            out.text_content(),
            "done\n\n[processes started by the command still hold its output open; what they print from now on is not captured]"
        );
        assert!(!out.is_error);
        let out = run_bash(&fx, json!({"command": "nohup sleep 30 > /dev/null 2>&1 & echo detached"})).await;
        assert_eq!(out.text_content(), "detached\n");
    }

    #[derive(Default)]
    struct Collect(Mutex<Vec<String>>);
    impl ContextSink for Collect {
        fn progress(&self, _call_id: &str, _tool: &str, update: Progress) {
            self.0.lock().unwrap().push(update.message.unwrap_or_default());
        }
        fn metadata(&self, _call_id: &str, _tool: &str, _title: Option<String>, _metadata: Value) {}
    }

    #[tokio::test]
    async fn output_is_streamed_as_progress() {
        let fx = Fixture::new();
        let sink = Arc::new(Collect::default());
        let ctx = ToolContext::builder("bash").dependencies(fx.deps.clone()).sink(sink.clone()).build();
        let out = fx
            .call_with(ctx, "bash", json!({"command": "echo first; sleep 0.3; echo second >&2"}))
            .await
            .unwrap();
        assert_eq!(out.text_content(), "first\nsecond\n");
        let messages = sink.0.lock().unwrap().clone();
        assert!(messages.len() >= 2, "{messages:?}");
        assert_eq!(messages.concat(), "first\nsecond\n");
    }

    #[tokio::test]
    async fn long_output_keeps_both_ends_and_stores_the_rest() {
        let fx = Fixture::new();
        let out = run_bash(&fx, json!({"command": "seq 1 5000"})).await;
        let text = out.text_content();
        assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..50]);
        assert!(text.contains("\n[... 3010 lines (") && text.contains(" cut ...]\n4006\n"), "{text}");
        let notice = text.rsplit_once("\n\n").unwrap().1;
        let reference = out.metadata["truncation"]["output_ref"].as_str().unwrap().to_owned();
        assert_eq!(
            notice,
            format!(
                "[Output truncated: showing lines 1-995 and lines 4006-5000 of 5000 (8847 of 23893 bytes). Full output saved as {reference}; read more with tool_output_read(ref=\"{reference}\", offset=996) or search it with tool_output_grep(ref=\"{reference}\", pattern=\"...\").]"
            )
        );
        let store = fx.deps.get::<OutputStore>().unwrap();
        let expected: String = (1..=5000).map(|n| format!("{n}\n")).collect();
        assert_eq!(store.read_to_string(&reference).unwrap(), expected);
        assert!(out.truncated);
    }

    #[tokio::test]
    async fn output_past_the_spill_size_goes_to_the_store() {
        let fx = Fixture::new();
        // About 2.6 MB: past SPILL_AT, so only both ends stay in memory.
        let out = run_bash(&fx, json!({"command": "seq 1 400000; echo err >&2; exit 1"})).await;
        let text = out.text_content();
        assert!(out.is_error && out.truncated);
        assert!(text.starts_with("1\n2\n"));
        assert!(text.contains("\n400000\nerr\n\n[Output truncated: showing lines 1-995 and lines 399007-400001 of 400001 (10834 of 2688899 bytes). Full output saved as "), "{}", &text[text.len() - 1200..]);
        assert!(text.ends_with("\n\n[exit code 1]"));
        let info = &out.metadata["truncation"];
        let reference = info["output_ref"].as_str().unwrap();
        let store = fx.deps.get::<OutputStore>().unwrap();
        let mut expected: String = (1..=400000).map(|n| format!("{n}\n")).collect();
        expected.push_str("err\n");
        assert_eq!(info["total_bytes"], json!(expected.len()));
        assert_eq!(store.read_to_string(reference).unwrap(), expected);
    }

    #[tokio::test]
    async fn the_call_limits_and_the_store_size_limit_apply() {
        let fx = Fixture::new();
        let mut deps = (*fx.deps).clone();
        let store = OutputStore::builder()
            .dir(fx.dir.path().join("small-store"))
            .max_output_bytes(1000)
            .read_hint(crate::read_hint())
            .open()
            .unwrap();
        deps.insert(store);
        let deps = Arc::new(deps);
        // The caller's limits, with bash's own `direction = "middle"` over them.
        let limits = TruncationLimits::new(4, 1000, tool_runtime::spec::TruncationDirection::Tail);
        let ctx = ToolContext::builder("bash").dependencies(deps.clone()).truncation(limits).build();
        // About 2 MB: past SPILL_AT, so the output is written to the store as it comes.
        let out = fx.call_with(ctx, "bash", json!({"command": "seq 1 300000"})).await.unwrap();
        let reference = out.metadata["truncation"]["output_ref"].as_str().unwrap().to_owned();
        assert_eq!(
            out.text_content(),
            format!(
                "1\n2\n[... 299996 lines (1988877 bytes) cut ...]\n299999\n300000\n\n[Output truncated: showing lines \
                 1-2 and lines 299999-300000 of 300000 (18 of 1988895 bytes). Full output saved as {reference}; read \
                 more with tool_output_read(ref=\"{reference}\", offset=3) or search it with \
                 tool_output_grep(ref=\"{reference}\", pattern=\"...\"). The saved copy stops at the store's limit of \
                 1000 bytes.]"
            )
        );
        assert_eq!(out.metadata["truncation"]["stored_bytes"], json!(1000));
        let expected: String = (1..=300000).map(|n| format!("{n}\n")).collect();
        let stored = deps.get::<OutputStore>().unwrap().read_to_string(&reference).unwrap();
        assert_eq!(stored, expected[..1000]);
    }

    #[tokio::test]
    async fn one_huge_line_shows_both_of_its_ends() {
        let fx = Fixture::new();
        let out = run_bash(
            &fx,
            json!({"command": "printf 'begin'; head -c 3000000 /dev/zero | tr '\\0' x; printf 'end'"}),
        )
        .await;
        let text = out.text_content();
        let (view, notice) = text.split_once("\n\n").unwrap();
        let (head, rest) = view.split_once("\n[... ").unwrap();
        let (cut, tail) = rest.split_once(" bytes cut ...]\n").unwrap();
        assert!(head.starts_with("beginxxx") && tail.ends_with("xxxend"));
        // Half of the default byte budget each (the result budget less the notice's bound).
        let half = tool_runtime::truncate::DEFAULT_MAX_BYTES / 2;
        assert!(head.len() <= half && head.len() > half - 10 && tail.len() <= half && tail.len() > half - 10);
        assert_eq!(cut.parse::<usize>().unwrap(), 3000008 - head.len() - tail.len());
        let kept = head.len() + tail.len();
        assert_eq!(
            notice,
            format!(
                "[Output truncated: showing the beginning and the end of line 1 of 1 ({kept} of 3000008 bytes). Full output saved as {r}; read more with tool_output_read(ref=\"{r}\", offset=1) or search it with tool_output_grep(ref=\"{r}\", pattern=\"...\").]",
                r = out.metadata["truncation"]["output_ref"].as_str().unwrap()
            )
        );
    }

    #[tokio::test]
    async fn permission_hook_sees_the_command() {
        let fx = Fixture::new();
        let hook = tool_runtime::hooks::PermissionFn(|request: PermissionRequest| async move {
            match request.kind {
                PermissionKind::Command { command, .. } if command.contains("rm") => {
                    tool_runtime::hooks::PermissionDecision::Deny { reason: "no deleting".into() }
                }
                _ => tool_runtime::hooks::PermissionDecision::Allow,
            }
        });
        let err =
            fx.call_with(fx.ctx_with("bash", Arc::new(hook)), "bash", json!({"command": "rm -rf x"})).await;
        let err = err.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        assert!(err.message().contains("no deleting"), "{}", err.message());
    }

    #[test]
    fn other_agents_shell_arguments_become_bash_arguments() {
        let adapted = |value: Value| {
            let mut map = value.as_object().unwrap().clone();
            let mut coercions = Vec::new();
            adapt_arguments(&mut map, &mut coercions);
            let moved: Vec<(String, String)> = coercions.into_iter().map(|c| (c.path, c.to)).collect();
            (Value::Object(map), moved)
        };
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            adapted(json!({"command": "x", "timeout": 1500})),
            (json!({"command": "x", "timeout_secs": 2}), vec![pair("/timeout", "/timeout_secs")])
        );
        assert_eq!(adapted(json!({"command": "x", "timeout_ms": "120000"})).0["timeout_secs"], json!(120));
        assert_eq!(adapted(json!({"command": "x", "timeout": 1})).0["timeout_secs"], json!(1));
        // Our own name wins: the other is left for validation to refuse.
        assert_eq!(
            adapted(json!({"command": "x", "timeout_secs": 5, "timeout": 1000})).0,
            json!({"command": "x", "timeout_secs": 5, "timeout": 1000})
        );
        let line = |words: Value| adapted(json!({"command": words})).0["command"].clone();
        assert_eq!(line(json!(["bash", "-lc", "ls -la | head"])), json!("ls -la | head"));
        assert_eq!(line(json!(["/bin/sh", "-c", "echo $HOME"])), json!("echo $HOME"));
        assert_eq!(line(json!(["ls", "-la", "src dir", "it's"])), json!(r#"ls -la 'src dir' 'it'\''s'"#));
        assert_eq!(line(json!(["bash", "-lc", "echo", "extra"])), json!("bash -lc echo extra"));
        assert_eq!(line(json!(["echo", ""])), json!("echo ''"));
        // Not a list of strings: left for validation to refuse.
        assert_eq!(line(json!([])), json!([]));
        assert_eq!(line(json!(["echo", 1])), json!(["echo", 1]));
    }

    #[tokio::test]
    async fn claude_code_and_codex_shell_arguments_are_accepted_and_recorded() {
        let fx = Fixture::new();
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        let out = fx.dispatch("bash", r#"{"command": "echo hi", "timeout": 1500}"#).await;
        assert_eq!(out.text_content(), "hi\n");
        assert_eq!(Fixture::coercions(&out), [pair("/timeout", "/timeout_secs")]);
        let out = fx.dispatch("bash", r#"{"command": "sleep 5", "timeout_ms": 900}"#).await;
        assert!(out.is_error && out.text_content().contains("1s"), "{}", out.text_content());
        assert_eq!(Fixture::coercions(&out), [pair("/timeout_ms", "/timeout_secs")]);
        let out = fx.dispatch("bash", r#"{"command": ["bash", "-lc", "echo a  b"]}"#).await;
        assert_eq!(out.text_content(), "a b\n");
        assert_eq!(Fixture::coercions(&out), [pair("/command", "string")]);
        let out = fx.dispatch("bash", r#"{"command": ["printf", "%s|", "it's", "a b"]}"#).await;
        assert_eq!(out.text_content(), "it's|a b|");
        let out = fx.dispatch("bash", r#"{"command": "sleep 3", "run_in_background": true}"#).await;
        assert!(out.metadata.contains_key("session_id"), "{out:?}");
        assert_eq!(Fixture::coercions(&out), [pair("/run_in_background", "/background")]);
        // Codex's whole shape: an argument vector, a working directory, milliseconds.
        fx.write("sub/dir/file.txt", "x");
        let raw = r#"{"command": ["bash", "-lc", "pwd; ls"], "workdir": "sub/dir", "timeout_ms": 5000}"#;
        let out = fx.dispatch("bash", raw).await;
        assert_eq!(out.text_content(), format!("{}\nfile.txt\n", fx.root().join("sub/dir").display()));
        assert_eq!(
            Fixture::coercions(&out),
            [pair("/timeout_ms", "/timeout_secs"), pair("/command", "string")]
        );
        let outside = format!("{}", fx.dir.path().display());
        for workdir in ["..", "sub/../..", outside.as_str(), "/etc"] {
            let err = fx.error("bash", json!({"command": "pwd", "workdir": workdir})).await;
            assert!(err.message().contains("is outside the workspace"), "{workdir}: {}", err.message());
        }
        let err = fx.error("bash", json!({"command": "pwd", "workdir": "sub/dir/file.txt"})).await;
        assert_eq!(err.message(), "workdir `sub/dir/file.txt` is not a directory.");
        let root = fx.root().display().to_string();
        for workdir in [".", "sub/..", root.as_str()] {
            let out = run_bash(&fx, json!({"command": "pwd", "workdir": workdir})).await;
            assert_eq!(out.text_content(), format!("{root}\n"), "{workdir}");
        }
        // The schema keeps bash's own names.
        let properties = BashTool.spec().input_schema["properties"].as_object().unwrap().clone();
        for other in ["timeout", "timeout_ms", "run_in_background"] {
            assert!(!properties.contains_key(other), "{other}");
        }
    }
}
