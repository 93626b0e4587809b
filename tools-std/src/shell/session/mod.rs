//! Background sessions: commands that outlive the `bash` call that started them. They live in
//! the dispatcher's session state ([`Sessions`]), are read, written to and stopped by the
//! `bash_output`, `bash_input` and `bash_stop` tools, and are killed, with every process they
//! started, when that state is dropped.

mod input;
mod output;
mod stop;

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tool_runtime::{SessionState, ToolError};

use crate::shell::capture::Capture;
use crate::shell::process::{InputReaders, KillReport, ShellControl, ShellExit, ShellHandle};

use input::Feeder;
pub use input::Key;
use output::pump;

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
            self.keep(handle);
        }
    }

    /// Keeps the handle of a command that ended leaving processes behind (`setsid … &`,
    /// `nohup … &` in a foreground command, or a removed session's jobs): they are killed when
    /// this session state ends (an MCP session's end, not only the process's).
    pub(crate) fn keep(&self, handle: Arc<dyn ShellHandle>) {
        let mut kept = self.removed.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|handle| handle.may_have_processes());
        if kept.len() >= MAX_REMOVED_KEPT {
            // Forgotten, not killed: what the oldest one left running goes on.
            kept.remove(0);
        }
        kept.push(handle);
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
    pub(crate) proxy: Option<crate::shell::network::Proxy>,
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
    proxy: Option<crate::shell::network::Proxy>,
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

    /// Who else may read what is typed into the command now (a look at its processes).
    pub(crate) async fn input_readers(&self) -> InputReaders {
        let Some(handle) = self.handle.clone() else { return InputReaders::default() };
        tokio::task::spawn_blocking(move || handle.input_readers()).await.unwrap_or_else(|_| InputReaders {
            programs: vec![String::new()],
            keys_changed: true,
            busy: true,
        })
    }

    /// Whether nothing more can happen: the command ended and its output is closed.
    fn is_over(&self) -> bool {
        let state = self.state();
        state.ended.is_some() && state.output_closed
    }

    pub(crate) fn runtime(&self) -> Duration {
        self.state().ended.as_ref().map_or_else(|| self.started.elapsed(), |e| e.after)
    }
}
