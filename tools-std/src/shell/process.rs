//! Shell commands as processes: what starting, waiting for and killing one means, and the local
//! implementation (`bash -c`, its whole process tree killed on stop).
//!
//! # What is killed, and what can escape
//!
//! A local command runs as `bash -c` in its own process group. On Linux, where this process may
//! create a cgroup (v2) beneath its own (root, a delegated systemd service, most containers), the
//! shell joins a new cgroup of its own before it runs anything: every process the command starts
//! is in it, whatever it does to its parent, group, session or environment, and only the kernel
//! could move it out. The shell is also made a *child subreaper* (`PR_SET_CHILD_SUBREAPER`, kept
//! across `exec`): a process the command orphans (a double fork, `setsid … &`, `nohup … &`, a
//! daemon) is re-parented to the shell instead of to init, so while the shell runs, every process
//! the command started is one of its descendants. Every process also inherits [`COMMAND_ID_VAR`],
//! unique to the command. Killing the command ([`ShellControl::kill_all`]) scans `/proc` for the
//! shell, its descendants, its process group, every process carrying the marker and every
//! process in its cgroup, freezes them all with `SIGSTOP` (so none can fork past the scan),
//! repeats until a scan finds nothing new, then sends `SIGKILL` and reports exactly what it
//! killed ([`KillReport`]).
//!
//! A background session may outlive its shell: what the shell left running is killed with the
//! session (`bash_stop`, the end of the session state, [`kill_running_commands`]). Without a
//! cgroup, those processes are found by their marker, or, if they cleared their environment
//! (`env -i`) and left the group, because they were seen beneath the shell while it ran (a
//! session's processes are looked at every 200 ms, [`ShellHandle::remember_processes`]), or,
//! in a sandbox that gives each command a mount namespace of its own which its processes cannot
//! leave, because they are in it ([`Tree::in_mount_namespace`](tool_runtime::process_tree::Tree::in_mount_namespace)),
//! which also tells when a finished command has no process left. Outside such a sandbox, one
//! that did all that within the last moments before its shell exited is not found. A foreground
//! `bash` command whose shell exited leaves its background jobs running, as a terminal would,
//! until the session ends (its session state's end, an MCP session's `DELETE` among them, or
//! the process's, where [`kill_running_commands`] kills them too). At most 256 such commands
//! are kept: past that, the oldest one's jobs are killed when another command leaves some.
//!
//! What still escapes: a process started through another service rather than forked (`ssh`,
//! `systemd-run`, `at`, a container runtime's daemon), and one that runs as another user
//! (`sudo`; it is found but cannot be killed, and the report says so). Off Linux only the process
//! group is killed. The command runs in the request's [sandbox](ShellRequest::sandbox), entered
//! between `fork` and `exec`.

#![cfg_attr(not(unix), allow(dead_code))]

use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite};
use tool_runtime::BoxFuture;
use tool_runtime::environment::EnvFilter;

pub use tool_runtime::process_tree::{KillReport, KillScope, NotKilled};

/// The environment variable set, to a value unique to the command, for every local command:
/// its descendants inherit it, which is how they are found when it is stopped.
pub const COMMAND_ID_VAR: &str = tool_runtime::process_tree::MARKER_VAR;
/// The size asked for a command's output pipe (Linux's default limit for an unprivileged
/// process): a command writes on while its reader is not running.
pub(crate) const PIPE_BYTES: usize = 1024 * 1024;

/// A shell command to start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellRequest {
    /// The command line, run with `bash -c`.
    pub command: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// Extra environment variables, set on top of the inherited ones that the operations let
    /// through (see `LocalOperations::environment`).
    pub env: Vec<(String, String)>,
    /// What the command reads and where it writes.
    pub input: ShellInput,
    /// The sandbox it runs in; `None` runs it with every right of this process. An
    /// [`Operations`](crate::Operations) implementation that cannot apply it must refuse.
    pub sandbox: Option<Arc<tool_sandbox::Sandbox>>,
    /// The shell, as an absolute path ([`resolve_shell`]); `None` looks `bash` up in `PATH` as
    /// it is when the command starts.
    pub shell: Option<PathBuf>,
}

/// The first `name` (an executable file) in the directories of `path` (a `PATH` value) that
/// lie outside every directory of `excluded` (the writable roots): see
/// [`tool_sandbox::resolve_program`].
pub use tool_sandbox::resolve_program as resolve_shell;

/// The command's standard input, and whether it runs in a terminal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ShellInput {
    /// Empty: a command that reads gets end-of-file at once instead of waiting.
    #[default]
    Null,
    /// A pipe written through [`ShellProcess::input`].
    Pipe,
    /// A new pseudo-terminal of this size for input and output alike. The shell leads a new
    /// session with it as its controlling terminal, so `tty` names it, programs colour their
    /// output and edit lines, and Ctrl-C written to it interrupts the foreground job.
    Terminal {
        /// Lines.
        rows: u16,
        /// Columns.
        cols: u16,
    },
}

/// How a shell command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellExit {
    /// The exit code, when the shell exited normally.
    pub code: Option<i32>,
    /// The signal that killed the shell, when one did.
    pub signal: Option<i32>,
}

/// Waits for and stops a started shell command.
pub trait ShellControl: Send {
    /// Waits until the shell itself exits (processes it started may live on). Cancel-safe.
    fn wait(&mut self) -> BoxFuture<'_, io::Result<ShellExit>>;
    /// Kills the shell, if it still runs, and every process it started that can be found, and
    /// says what was killed. Calling it again, or after the shell exited, kills nothing and
    /// reports nothing killed.
    fn kill_all(&mut self) -> io::Result<KillReport>;
    /// A handle that signals and kills the command from elsewhere (another task, a `Drop`) while
    /// this control waits for it; `None` when the implementation has none.
    fn handle(&self) -> Option<Arc<dyn ShellHandle>> {
        None
    }
}

/// Signals and kills a started command independently of its [`ShellControl`].
pub trait ShellHandle: Send + Sync {
    /// Sends `signal` (`SIGINT`, `SIGTERM`, ...) to the command's process group, while its shell
    /// runs; after that the group id may belong to someone else, and nothing is sent.
    fn signal_group(&self, signal: i32) -> io::Result<()>;
    /// Kills every process of the command that can be found, with the same search as
    /// [`ShellControl::kill_all`], and, unlike it, also after the shell exited: the processes
    /// it left running are then found through the command's marker (on Linux).
    fn kill_all(&self) -> io::Result<KillReport>;
    /// Remembers the command's processes as they are now, so that `kill_all` finds them after
    /// the shell exited even if they left every other trace. Called periodically while the
    /// shell runs; by default nothing is remembered.
    fn remember_processes(&self) {}
    /// Whether processes of the command may still run (`false` only when that is known, as with
    /// an empty cgroup); by default `true`.
    fn may_have_processes(&self) -> bool {
        true
    }
    /// Who else may read what is typed into the command now; by default nothing is known
    /// (nothing else, the usual keys).
    fn input_readers(&self) -> InputReaders {
        InputReaders::default()
    }
}

/// Who may read what is typed into a command besides its shell ([`ShellHandle::input_readers`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputReaders {
    /// The executables' base names of the command's other processes that may read its input:
    /// with a terminal, those of its foreground process group and those outside the terminal's
    /// session that hold it open; without, those that hold its input pipe open. `""` for one
    /// whose program could not be told.
    pub programs: Vec<String>,
    /// The terminal's line-editing keys or input flags are other than those it started with.
    pub keys_changed: bool,
    /// The command's shell is not waiting for input (it waits for a job, runs a builtin,
    /// sleeps): what reads what is typed, and when, cannot be told from what runs now.
    pub busy: bool,
}

/// A started shell command.
pub struct ShellProcess {
    /// Its standard output and standard error, interleaved in the order they were written (both
    /// are one pipe, or the terminal).
    pub output: ShellOutput,
    /// Its standard input, for [`ShellInput::Pipe`] and [`ShellInput::Terminal`].
    pub input: Option<Pin<Box<dyn AsyncWrite + Send>>>,
    /// Waiting and killing.
    pub control: Box<dyn ShellControl>,
}

/// A shell command's output, as it is read.
///
/// Most output is a stream ([`ShellOutput::new`]). The read end of a local pipe is known as one
/// ([`ShellOutput::pipe`]): `bash` reads it on a thread of its own with plain `read` and `poll`
/// calls, much as `cat` would, since waking an async task for each piece of a few KiB costs more
/// than the piece's own work. Read as an [`AsyncRead`], a pipe is a stream like any other.
pub struct ShellOutput(Source);

enum Source {
    /// A pipe not read yet.
    Pipe(OwnedFd),
    Stream(Pin<Box<dyn AsyncRead + Send>>),
}

impl ShellOutput {
    /// Output read from `reader`.
    pub fn new(reader: impl AsyncRead + Send + 'static) -> Self {
        ShellOutput(Source::Stream(Box::pin(reader)))
    }

    /// Output read from the read end of a pipe.
    pub fn pipe(read_end: OwnedFd) -> Self {
        ShellOutput(Source::Pipe(read_end))
    }

    /// The pipe's read end, if the output is a pipe not read as a stream yet.
    pub(crate) fn into_pipe(self) -> Result<OwnedFd, ShellOutput> {
        match self.0 {
            Source::Pipe(fd) => Ok(fd),
            source => Err(ShellOutput(source)),
        }
    }
}

impl AsyncRead for ShellOutput {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.0 {
                Source::Stream(stream) => return stream.as_mut().poll_read(cx, buf),
                Source::Pipe(fd) => {
                    // Read as a stream from now on: registered with the runtime's reactor, which
                    // the first read is within.
                    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(fd.try_clone()?)?;
                    this.0 = Source::Stream(Box::pin(pipe));
                }
            }
        }
    }
}

impl fmt::Debug for ShellOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.0 {
            Source::Pipe(_) => "pipe",
            Source::Stream(_) => "stream",
        };
        f.debug_tuple("ShellOutput").field(&kind).finish()
    }
}

impl fmt::Debug for ShellProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShellProcess").finish_non_exhaustive()
    }
}

/// Kills every local command still running in this process, each with its whole process tree,
/// and reports what each kill killed. For a signal handler that is about to exit the process;
/// commands of other [`Operations`](crate::Operations) implementations are not known here.
pub fn kill_running_commands() -> Vec<KillReport> {
    let mut running: Vec<Arc<Target>> =
        live().lock().map(|live| live.iter().map(|(_, t)| t.clone()).collect()).unwrap_or_default();
    // A background session is registered by its shell and by its handle.
    let mut seen: Vec<*const Target> = Vec::new();
    running.retain(|target| {
        let first = !seen.contains(&Arc::as_ptr(target));
        seen.push(Arc::as_ptr(target));
        first
    });
    let mut reports: Vec<KillReport> = running.iter().filter_map(|target| target.kill().ok()).collect();
    // What finished commands left running (`nohup … &`, `setsid … &`) ends with the session too.
    let left: Vec<Arc<Target>> =
        left_behind().lock().map(|mut left| left.drain(..).collect()).unwrap_or_default();
    reports.extend(
        left.iter()
            .filter_map(|target| target.kill().ok())
            .filter(|report| report.shell || report.started > 0),
    );
    reports
}

/// At most this many finished commands are remembered for what they left running.
const MAX_LEFT_BEHIND: usize = 256;

/// The finished commands whose processes may still run (their cgroup is not empty, or, without
/// one, not known to be): a job a command left in the background outlives the command, as in
/// a terminal, but not the session ([`kill_running_commands`]). Past [`MAX_LEFT_BEHIND`]
/// commands whose processes still run, the oldest one's are killed to make room.
fn left_behind() -> &'static Mutex<std::collections::VecDeque<Arc<Target>>> {
    static LEFT: Mutex<std::collections::VecDeque<Arc<Target>>> =
        Mutex::new(std::collections::VecDeque::new());
    &LEFT
}

/// Forgets the finished commands whose processes are all gone (their cgroup is empty), letting
/// go of the placeholders they held: a job that ended by itself holds none after.
pub(crate) fn forget_ended_jobs() {
    #[cfg(target_os = "linux")]
    let ended: Vec<Arc<Target>> = {
        let Ok(mut left) = left_behind().lock() else { return };
        let (ended, running): (Vec<_>, Vec<_>) =
            left.drain(..).partition(|target| !target.tree.may_have_processes());
        left.extend(running);
        ended
    };
    // Released outside the lock, whoever else holds the command (its handle): its placeholders
    // are removed.
    #[cfg(target_os = "linux")]
    for target in ended {
        target.release();
    }
}

fn leave_behind(target: Arc<Target>) {
    #[cfg(target_os = "linux")]
    if !target.tree.may_have_processes() {
        return;
    }
    let oldest = {
        let Ok(mut left) = left_behind().lock() else { return };
        let mut oldest = None;
        if left.len() >= MAX_LEFT_BEHIND {
            // Those whose processes all ended make room first.
            #[cfg(target_os = "linux")]
            left.retain(|kept| kept.tree.may_have_processes());
            if left.len() >= MAX_LEFT_BEHIND {
                oldest = left.pop_front();
            }
        }
        left.push_back(target);
        oldest
    };
    // Then the oldest one's processes are ended, not forgotten: forgotten, they would outlive
    // the session and lose the placeholders that keep them from creating a protected name.
    if let Some(oldest) = oldest {
        let _ = oldest.kill();
    }
}

/// The local commands whose shell has not been seen to exit, and those a [`ShellHandle`] can
/// still stop (background sessions, whose processes may outlive their shell), by registration
/// number.
fn live() -> &'static Mutex<Vec<(u64, Arc<Target>)>> {
    static LIVE: Mutex<Vec<(u64, Arc<Target>)>> = Mutex::new(Vec::new());
    &LIVE
}

fn register(target: Arc<Target>) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut live) = live().lock() {
        live.push((id, target));
    }
    id
}

fn unregister(id: u64) {
    if let Ok(mut live) = live().lock() {
        live.retain(|(n, _)| *n != id);
    }
}

/// What identifies one command's processes.
#[derive(Debug)]
struct Target {
    /// The shell's pid, which is also its process group's id (it leads a session of its own).
    shell: i32,
    #[cfg(target_os = "linux")]
    tree: tool_runtime::process_tree::Tree,
    /// The sandbox and the placeholders of the absent protected names, held for as long as
    /// the command's processes may run: the jobs it leaves in the background stay in its mount
    /// namespace, where a placeholder removed by the host would no longer be bound, and the
    /// name could be created. Kept with the command while it is remembered
    /// ([`left_behind`]), which is until the session ends, its cgroup is seen empty, or its
    /// processes are killed to make room, and let go as soon as its processes are killed and
    /// gone (so that the host can write the name then).
    #[cfg(unix)]
    held: Mutex<Option<(Arc<tool_sandbox::Sandbox>, tool_sandbox::Placeholders)>>,
    /// The command's terminal, while the session holds it.
    #[cfg(target_os = "linux")]
    terminal: Option<terminal::WeakMaster>,
    /// What the command reads typed input from, to find its other processes that hold it.
    #[cfg(target_os = "linux")]
    input: Option<InputFile>,
}

/// The file a command's typed input comes through.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy)]
enum InputFile {
    /// A terminal, by its device number.
    Terminal(u64),
    /// A pipe, by its inode number.
    Pipe(u64),
}

#[cfg(target_os = "linux")]
impl InputFile {
    fn of(fd: std::os::fd::BorrowedFd<'_>, terminal: bool) -> Option<InputFile> {
        let stat = nix::sys::stat::fstat(fd).ok()?;
        Some(if terminal { InputFile::Terminal(stat.st_rdev) } else { InputFile::Pipe(stat.st_ino) })
    }

    /// Whether process `pid` has it open (looked at through `/proc/PID/fd`, never opened); `true`
    /// when that cannot be told.
    fn held_by(self, pid: i32) -> bool {
        use nix::sys::stat::SFlag;
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return true };
        for (n, fd) in fds.enumerate() {
            let Ok(fd) = fd else { return true };
            if n >= 65_536 {
                return true;
            }
            // `stat` of the descriptor's link is the open file's: nothing is opened or read.
            let Ok(stat) = nix::sys::stat::stat(&fd.path()) else { continue };
            let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
            let held = match self {
                InputFile::Terminal(device) => kind == SFlag::S_IFCHR && stat.st_rdev == device,
                InputFile::Pipe(inode) => kind == SFlag::S_IFIFO && stat.st_ino == inode,
            };
            if held {
                return true;
            }
        }
        false
    }
}

impl Target {
    #[cfg(target_os = "linux")]
    fn kill(&self) -> io::Result<KillReport> {
        let killed = match self.tree.kill() {
            Ok(report) => Ok(report),
            // Without a readable /proc the tree cannot be walked: the group is all there is.
            Err(_) => self.kill_group(),
        };
        if !self.tree.may_have_processes() {
            self.release();
        }
        killed
    }

    /// Lets go of the sandbox and the placeholders, once no process of the command runs.
    #[cfg(target_os = "linux")]
    fn release(&self) {
        let released = self.held.lock().map(|mut held| held.take());
        drop(released);
    }

    #[cfg(all(unix, not(target_os = "linux")))]
    fn kill(&self) -> io::Result<KillReport> {
        self.kill_group()
    }

    #[cfg(not(unix))]
    fn kill(&self) -> io::Result<KillReport> {
        Ok(KillReport::default())
    }

    #[cfg(unix)]
    fn kill_group(&self) -> io::Result<KillReport> {
        use nix::errno::Errno;
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        match killpg(Pid::from_raw(self.shell), Signal::SIGKILL) {
            Ok(()) | Err(Errno::ESRCH) => {
                Ok(KillReport { scope: KillScope::ProcessGroup, ..KillReport::default() })
            }
            Err(e) => Err(io::Error::from(e)),
        }
    }
}

/// How a local command is contained; everything is on by default.
#[derive(Debug, Clone)]
pub(crate) struct Containment {
    /// Make the shell a child subreaper, so orphaned processes stay in its tree (Linux).
    pub(crate) subreaper: bool,
    /// Run the command in a cgroup of its own, where this process may create one (Linux).
    pub(crate) cgroup: bool,
    /// Which of this process's environment variables the command inherits.
    pub(crate) environment: EnvFilter,
}

impl Default for Containment {
    fn default() -> Self {
        Containment { subreaper: true, cgroup: true, environment: EnvFilter::base() }
    }
}

#[cfg(all(unix, test))]
pub(crate) fn spawn_local(request: &ShellRequest) -> io::Result<ShellProcess> {
    spawn_contained(request, Containment::default())
}

#[cfg(unix)]
pub(crate) fn spawn_contained(request: &ShellRequest, containment: Containment) -> io::Result<ShellProcess> {
    #[cfg(target_os = "linux")]
    use std::os::fd::AsFd;
    use std::os::fd::OwnedFd;
    use std::process::Stdio;

    let marker = tool_runtime::process_tree::new_marker();
    let mut command = tokio::process::Command::new(request.shell.as_deref().unwrap_or("bash".as_ref()));
    // Named `bash` whatever its path, as a lookup would start it: its messages begin `bash:`.
    command.arg0("bash");
    command.arg("-c").arg(&request.command).current_dir(&request.cwd);
    containment.environment.apply(command.as_std_mut());
    let terminal = match request.input {
        ShellInput::Terminal { rows, cols } => Some(terminal::open(rows, cols)?),
        ShellInput::Null | ShellInput::Pipe => None,
    };
    if terminal.is_some() {
        // Before the request's own variables, so that a caller can still choose another.
        command.env("TERM", "xterm-256color");
    }
    command
        .envs(request.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(COMMAND_ID_VAR, &marker)
        .kill_on_drop(false);
    let output: ShellOutput;
    let mut input: Option<Pin<Box<dyn AsyncWrite + Send>>> = None;
    #[cfg(target_os = "linux")]
    let terminal_side = terminal.as_ref().map(|(master, _)| master.downgrade());
    #[cfg(target_os = "linux")]
    let mut input_file = terminal.as_ref().and_then(|(_, slave)| InputFile::of(slave.as_fd(), true));
    match &terminal {
        Some((master, slave)) => {
            command
                .stdin(Stdio::from(slave.try_clone()?))
                .stdout(Stdio::from(slave.try_clone()?))
                .stderr(Stdio::from(slave.try_clone()?));
            output = ShellOutput::new(master.clone());
            input = Some(Box::pin(master.clone()));
        }
        None => {
            // One pipe for both streams keeps them interleaved exactly as the command wrote them.
            let (reader, writer) = io::pipe()?;
            // A larger pipe than the default 64 KiB lets the command write, and the capture
            // read, in larger blocks: fewer wake-ups on both sides. Where the system refuses
            // (a lower `pipe-max-size`), the default pipe serves.
            #[cfg(target_os = "linux")]
            let _ = nix::fcntl::fcntl(&reader, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_BYTES as i32));
            let stdin = if request.input == ShellInput::Pipe { Stdio::piped() } else { Stdio::null() };
            command.stdin(stdin).stdout(writer.try_clone()?).stderr(writer);
            output = ShellOutput::pipe(OwnedFd::from(reader));
        }
    }
    #[cfg(target_os = "linux")]
    let mut cgroup = containment.cgroup.then(tool_runtime::process_tree::Cgroup::create).flatten();
    // The sandbox's bounds on the command's processes and memory, where a controller is there.
    #[cfg(target_os = "linux")]
    if let (Some(cgroup), Some(sandbox)) = (cgroup.as_mut(), &request.sandbox)
        && sandbox.policy().is_enforced()
    {
        let limits = sandbox.policy().limits;
        cgroup.limit(limits.processes, limits.memory);
    }
    #[cfg(target_os = "linux")]
    let join = cgroup.as_ref().and_then(|cgroup| cgroup.procs_for_joining().ok());
    // The shell leads a session of its own (`setsid` in `pre_exec` on Linux), which also makes it
    // the leader of a new process group with its own pid, as `process_group(0)` would: the
    // session has no controlling terminal but the command's own, never the host's. `setsid`
    // fails in a process that already leads a group, so that is not asked for there.
    #[cfg(target_os = "linux")]
    tool_runtime::process_tree::lead_session(
        command.as_std_mut(),
        containment.subreaper,
        terminal.is_some(),
        join.as_deref().unwrap_or_default(),
    );
    #[cfg(not(target_os = "linux"))]
    {
        command.process_group(0);
        let _ = containment;
    }
    // After the subreaper and the terminal (its `pre_exec` runs after theirs): seccomp comes last.
    let held = match &request.sandbox {
        Some(sandbox) => Some((sandbox.clone(), sandbox.apply_holding(command.as_std_mut(), &request.cwd)?)),
        None => None,
    };
    let mut child = match command.spawn() {
        Ok(child) => child,
        #[cfg(target_os = "linux")]
        Err(error) if join.is_some() => {
            // Joining the cgroup may be what failed (a hierarchy this process may create
            // cgroups in but not move processes into): without it, the command runs as before.
            drop((command, terminal, cgroup, join));
            let retried = spawn_contained(request, Containment { cgroup: false, ..containment });
            if retried.is_ok() {
                tool_runtime::process_tree::Cgroup::unavailable();
            }
            return retried.map_err(|_| error);
        }
        Err(error) => return Err(error),
    };
    #[cfg(target_os = "linux")]
    drop(join);
    // The command holds the parent's copies of the write end (or of the terminal's slave side):
    // drop them so that reading reaches end-of-file once every process that inherited it is gone.
    drop(command);
    drop(terminal);
    if let Some(stdin) = child.stdin.take() {
        #[cfg(target_os = "linux")]
        {
            input_file = InputFile::of(stdin.as_fd(), false);
        }
        input = Some(Box::pin(stdin));
    }
    let shell = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| io::Error::other("the shell exited before its pid could be read"))?;
    let target = Arc::new(Target {
        shell,
        #[cfg(target_os = "linux")]
        tree: {
            let tree = tool_runtime::process_tree::Tree::new(shell, COMMAND_ID_VAR, &marker, cgroup);
            match held.as_ref().and_then(|(_, placeholders)| placeholders.mount_namespace()) {
                Some(namespace) => tree.in_mount_namespace(namespace),
                None => tree,
            }
        },
        held: Mutex::new(held),
        #[cfg(target_os = "linux")]
        terminal: terminal_side,
        #[cfg(target_os = "linux")]
        input: input_file,
    });
    let registration = register(target.clone());
    Ok(ShellProcess {
        output,
        input,
        control: Box::new(unix::LocalControl {
            child,
            target,
            registration,
            exited: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }),
    })
}

#[cfg(not(unix))]
pub(crate) fn spawn_contained(
    _request: &ShellRequest,
    _containment: Containment,
) -> io::Result<ShellProcess> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "running commands is only supported on Unix"))
}

#[cfg(unix)]
mod terminal {
    //! A pseudo-terminal's controller side as an async reader and writer.

    use std::fs::File;
    use std::io::{self, Read, Write};
    use std::os::fd::{AsFd, OwnedFd};
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, ready};

    use tokio::io::unix::AsyncFd;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    /// The controller side of a terminal; clones share it (one reads, one writes).
    #[derive(Clone)]
    pub(super) struct Master(Arc<AsyncFd<File>>);

    /// A [`Master`] that does not keep the terminal open.
    #[derive(Debug)]
    pub(super) struct WeakMaster(std::sync::Weak<AsyncFd<File>>);

    impl Master {
        pub(super) fn downgrade(&self) -> WeakMaster {
            WeakMaster(Arc::downgrade(&self.0))
        }
    }

    /// What the terminal says about who reads it: its foreground process group, and whether
    /// its line-editing keys are other than a new terminal's.
    #[cfg(target_os = "linux")]
    pub(super) struct Reading {
        pub(super) foreground: Option<i32>,
        pub(super) keys_changed: bool,
    }

    #[cfg(target_os = "linux")]
    impl WeakMaster {
        /// `None` once the session let the terminal go.
        pub(super) fn reading(&self) -> Option<Reading> {
            use nix::sys::termios::{InputFlags, LocalFlags, SpecialCharacterIndices as Key, tcgetattr};
            let master = self.0.upgrade()?;
            let fd = master.get_ref().as_fd();
            let foreground = nix::unistd::tcgetpgrp(fd).ok().map(nix::unistd::Pid::as_raw);
            let Ok(termios) = tcgetattr(fd) else { return Some(Reading { foreground, keys_changed: true }) };
            // What the rules assume of the keys typed (`Typing`): Ctrl-C interrupts, Ctrl-U
            // kills the line, backspace and delete erase one character, no other key edits the
            // line but control characters (each of which makes a line unknowable), and no
            // printable character is a key at all.
            let keys = &termios.control_chars;
            let slots = [
                Key::VINTR,
                Key::VQUIT,
                Key::VERASE,
                Key::VKILL,
                Key::VEOF,
                Key::VEOL,
                Key::VEOL2,
                Key::VSTART,
                Key::VSTOP,
                Key::VSUSP,
                Key::VREPRINT,
                Key::VDISCARD,
                Key::VWERASE,
                Key::VLNEXT,
            ];
            let misread = slots.iter().any(|&slot| {
                let key = keys[slot as usize];
                let printable = key >= 0x20 && key != 0x7f;
                let taken = match key {
                    0x03 => slot != Key::VINTR,
                    0x15 => slot != Key::VKILL,
                    0x08 | 0x7f => slot != Key::VERASE,
                    _ => false,
                };
                printable || taken
            });
            // Input flags that change the characters typed before anything reads them (`iuclc`
            // makes `RM` `rm`, `igncr` drops a carriage return); a line editor clears `inlcr`
            // and `istrip` itself while it reads.
            let translated = termios
                .input_flags
                .intersects(InputFlags::IUCLC | InputFlags::IGNCR | InputFlags::INLCR | InputFlags::ISTRIP);
            let keys_changed = misread
                || translated
                || keys[Key::VINTR as usize] != 0x03
                || keys[Key::VKILL as usize] != 0x15
                || !termios.local_flags.contains(LocalFlags::ISIG);
            Some(Reading { foreground, keys_changed })
        }
    }

    /// Opens a terminal of `rows` x `cols`: its controller side, and the side the command gets.
    #[cfg(target_os = "linux")]
    pub(super) fn open(rows: u16, cols: u16) -> io::Result<(Master, OwnedFd)> {
        use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
        let size = nix::pty::Winsize { ws_row: rows.max(1), ws_col: cols.max(1), ws_xpixel: 0, ws_ypixel: 0 };
        let pty = nix::pty::openpty(&size, None).map_err(io::Error::from)?;
        // Neither side may leak into another command spawned meanwhile or later: a stray copy of
        // the controller would keep the terminal open after this command is gone. (`openpty`
        // cannot set the flag atomically; a fork in the instant between is the one window.)
        for fd in [&pty.master, &pty.slave] {
            fcntl(fd.as_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io::Error::from)?;
        }
        let flags =
            OFlag::from_bits_truncate(fcntl(pty.master.as_fd(), FcntlArg::F_GETFL).map_err(io::Error::from)?);
        fcntl(pty.master.as_fd(), FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).map_err(io::Error::from)?;
        Ok((Master(Arc::new(watch(File::from(pty.master))?)), pty.slave))
    }

    /// Registers the controller side with tokio's reactor.
    #[allow(unsafe_code)]
    fn watch(file: File) -> io::Result<AsyncFd<File>> {
        // SAFETY: the `File` owns its descriptor and moves into the `AsyncFd`, so the descriptor
        // stays open, and names the same file description, for as long as it is registered.
        unsafe { AsyncFd::register(file) }.map_err(|e| e.into_parts().1)
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn open(_rows: u16, _cols: u16) -> io::Result<(Master, OwnedFd)> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "terminals for commands are only supported on Linux"))
    }

    impl AsyncRead for Master {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            loop {
                let mut guard = ready!(self.0.poll_read_ready(cx))?;
                // A terminal gives a few KiB at a time: only that much of the buffer is cleared.
                let room = buf.remaining().min(64 * 1024);
                match guard.try_io(|fd| fd.get_ref().read(buf.initialize_unfilled_to(room))) {
                    Ok(Ok(n)) => {
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    // Linux answers EIO once no process holds the command's side any more: the
                    // terminal's end-of-file.
                    Ok(Err(e)) if e.raw_os_error() == Some(nix::libc::EIO) => return Poll::Ready(Ok(())),
                    Ok(Err(e)) => return Poll::Ready(Err(e)),
                    Err(_would_block) => {}
                }
            }
        }
    }

    impl AsyncWrite for Master {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
            loop {
                let mut guard = ready!(self.0.poll_write_ready(cx))?;
                match guard.try_io(|fd| fd.get_ref().write(data)) {
                    Ok(result) => return Poll::Ready(result),
                    Err(_would_block) => {}
                }
            }
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::os::unix::process::ExitStatusExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use tool_runtime::BoxFuture;

    use super::{KillReport, ShellControl, ShellExit, ShellHandle, Target};

    pub(super) struct LocalControl {
        pub(super) child: tokio::process::Child,
        pub(super) target: Arc<Target>,
        /// Its number in the registry of running commands.
        pub(super) registration: u64,
        /// Set once the shell was reaped; from then on its pid may be reused, so nothing is
        /// killed through it any more (processes the command left running in the background
        /// are the user's, unless a [`ShellHandle`] kills them).
        pub(super) exited: Arc<AtomicBool>,
    }

    /// The [`ShellHandle`] of a local command. While it lives, the command is registered:
    /// [`kill_running_commands`](super::kill_running_commands) also kills what it left running
    /// after its shell exited.
    struct LocalHandle {
        target: Arc<Target>,
        exited: Arc<AtomicBool>,
        registration: u64,
    }

    impl Drop for LocalHandle {
        fn drop(&mut self) {
            super::unregister(self.registration);
        }
    }

    /// Whether process `pid` is blocked waiting for input: a line editor's `pselect` (or
    /// `select`, `poll`), or a `read` of its standard input (`/proc/PID/syscall`; `false` when
    /// that cannot be read, or it runs).
    #[cfg(target_os = "linux")]
    fn waits_for_input(pid: i32) -> bool {
        use std::io::Read;
        let Ok(file) = std::fs::File::open(format!("/proc/{pid}/syscall")) else { return false };
        let mut text = String::new();
        if file.take(512).read_to_string(&mut text).is_err() {
            return false;
        }
        let mut fields = text.split_ascii_whitespace();
        let (Some(Ok(call)), first) = (fields.next().map(str::parse::<nix::libc::c_long>), fields.next())
        else {
            return false;
        };
        use nix::libc::{SYS_ppoll, SYS_pselect6, SYS_read};
        #[cfg(target_arch = "x86_64")]
        let waits = [SYS_pselect6, SYS_ppoll, nix::libc::SYS_select, nix::libc::SYS_poll];
        #[cfg(not(target_arch = "x86_64"))]
        let waits = [SYS_pselect6, SYS_ppoll];
        waits.contains(&call) || call == SYS_read && first == Some("0x0")
    }

    impl ShellHandle for LocalHandle {
        fn signal_group(&self, signal: i32) -> io::Result<()> {
            use nix::errno::Errno;
            use nix::sys::signal::{Signal, killpg};
            if self.exited.load(Ordering::SeqCst) {
                return Ok(());
            }
            let signal = Signal::try_from(signal).map_err(io::Error::from)?;
            match killpg(nix::unistd::Pid::from_raw(self.target.shell), signal) {
                Ok(()) | Err(Errno::ESRCH) => Ok(()),
                Err(e) => Err(io::Error::from(e)),
            }
        }

        fn remember_processes(&self) {
            #[cfg(target_os = "linux")]
            self.target.tree.track();
        }

        fn may_have_processes(&self) -> bool {
            #[cfg(target_os = "linux")]
            return self.target.tree.may_have_processes();
            #[cfg(not(target_os = "linux"))]
            true
        }

        #[cfg(target_os = "linux")]
        fn input_readers(&self) -> super::InputReaders {
            let target = &self.target;
            let reading = target.terminal.as_ref().and_then(super::terminal::WeakMaster::reading);
            let Ok(processes) = target.tree.processes() else {
                // `/proc` could not be read: who reads cannot be told.
                return super::InputReaders { programs: vec![String::new()], keys_changed: true, busy: true };
            };
            let holds = |pid: i32| target.input.is_none_or(|input| input.held_by(pid));
            let programs = processes
                .iter()
                .filter(|process| process.pid != target.shell)
                .filter(|process| match &reading {
                    // A background job cannot read the terminal (it is stopped, or its read
                    // fails) unless it takes the foreground; one outside the terminal's session
                    // reads it if it holds it open.
                    Some(reading) => {
                        Some(process.group) == reading.foreground
                            || process.session != target.shell && holds(process.pid)
                    }
                    // Without a terminal, whatever holds the input pipe (a job started with `&`
                    // reads `/dev/null` instead).
                    None => holds(process.pid),
                })
                .filter_map(|process| match std::fs::read_link(format!("/proc/{}/exe", process.pid)) {
                    Ok(exe) => {
                        Some(exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
                    }
                    // Ended meanwhile.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                    Err(_) => Some(String::new()),
                })
                .collect();
            super::InputReaders {
                programs,
                keys_changed: reading.is_some_and(|r| r.keys_changed),
                busy: !waits_for_input(target.shell),
            }
        }

        fn kill_all(&self) -> io::Result<KillReport> {
            // The tree search knows the shell by its start time and the rest by the marker, so
            // it is safe after the shell's pid was freed; signalling the bare group is not.
            if self.exited.load(Ordering::SeqCst) && !cfg!(target_os = "linux") {
                return Ok(KillReport::default());
            }
            self.target.kill()
        }
    }

    impl ShellControl for LocalControl {
        fn wait(&mut self) -> BoxFuture<'_, io::Result<ShellExit>> {
            Box::pin(async move {
                let status = self.child.wait().await?;
                self.exited.store(true, Ordering::SeqCst);
                super::unregister(self.registration);
                super::leave_behind(self.target.clone());
                Ok(ShellExit { code: status.code(), signal: status.signal() })
            })
        }

        fn handle(&self) -> Option<Arc<dyn ShellHandle>> {
            let registration = super::register(self.target.clone());
            Some(Arc::new(LocalHandle {
                target: self.target.clone(),
                exited: self.exited.clone(),
                registration,
            }))
        }

        fn kill_all(&mut self) -> io::Result<KillReport> {
            if self.exited.load(Ordering::SeqCst) {
                return Ok(KillReport::default());
            }
            let report = self.target.kill();
            // The shell is this process's child: if the scan could not see it, signal it anyway.
            match self.child.start_kill() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => {}
                Err(e) if report.is_ok() => drop(e),
                Err(e) => return Err(e),
            }
            report
        }
    }

    impl Drop for LocalControl {
        fn drop(&mut self) {
            // A call abandoned midway (its future dropped by a timeout or cancellation) must not
            // leave the command running.
            let _ = self.kill_all();
            super::unregister(self.registration);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::testing::TempDir;

    fn request(dir: &Path, command: &str) -> ShellRequest {
        ShellRequest { command: command.to_owned(), cwd: dir.to_path_buf(), ..ShellRequest::default() }
    }

    /// The pid the command wrote to `name`, once it is there.
    async fn pid_in(dir: &Path, name: &str) -> i32 {
        loop {
            if let Some(pid) =
                std::fs::read_to_string(dir.join(name)).ok().and_then(|t| t.trim().parse().ok())
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Whether `pid` runs (a zombie does not).
    fn runs(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().as_bytes().first() != Some(&b'Z'))
            })
            .unwrap_or(false)
    }

    async fn gone(pid: i32) -> bool {
        for _ in 0..200 {
            if !runs(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// Leaves the group (`setsid`), clears the environment (`env -i`), closes the output and
    /// double-forks, so that neither the group, nor the marker, nor the parent chain leads to it.
    const ESCAPE: &str = "env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 & echo $! > escaped.pid' > /dev/null 2>&1 < /dev/null & \
                          while [ ! -s escaped.pid ]; do sleep 0.01; done; sleep 300 & echo ready; wait";

    #[tokio::test]
    async fn an_orphan_that_cleared_its_environment_and_left_the_group_is_adopted_by_the_shell_and_killed() {
        let dir = TempDir::new();
        let mut process = spawn_local(&request(dir.path(), ESCAPE)).unwrap();
        let mut ready = [0u8; 6];
        process.output.read_exact(&mut ready).await.unwrap();
        let escaped = pid_in(dir.path(), "escaped.pid").await;
        let shell = process.control.kill_all();
        let report = shell.unwrap();
        assert!(gone(escaped).await, "the orphan {escaped} survived");
        // The shell, the `sleep 300` it runs in the foreground and the orphan, which had left.
        assert_eq!(
            report,
            KillReport {
                scope: KillScope::ProcessTree,
                shell: true,
                started: 2,
                outside_group: 1,
                not_killed: vec![]
            }
        );
    }

    #[tokio::test]
    async fn without_the_subreaper_such_an_orphan_escapes_and_is_not_counted() {
        let dir = TempDir::new();
        let mut process = spawn_contained(
            &request(dir.path(), ESCAPE),
            Containment { subreaper: false, cgroup: false, ..Containment::default() },
        )
        .unwrap();
        let mut ready = [0u8; 6];
        process.output.read_exact(&mut ready).await.unwrap();
        let escaped = pid_in(dir.path(), "escaped.pid").await;
        let report = process.control.kill_all().unwrap();
        let survived = runs(escaped);
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(escaped), nix::sys::signal::Signal::SIGKILL);
        assert!(survived, "the orphan {escaped} was found without the subreaper");
        // The report claims only what it killed: the shell and its foreground `sleep`.
        assert_eq!((report.shell, report.started, report.outside_group), (true, 1, 0));
    }

    #[tokio::test]
    async fn without_a_cgroup_an_escaped_orphan_seen_while_the_shell_ran_is_killed_after_it_exited() {
        let dir = TempDir::new();
        let command = "env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 & echo $! > escaped.pid' > /dev/null 2>&1 \
                       < /dev/null & while [ ! -s escaped.pid ]; do sleep 0.01; done; sleep 0.3";
        let containment = Containment { subreaper: true, cgroup: false, ..Containment::default() };
        let mut process = spawn_contained(&request(dir.path(), command), containment).unwrap();
        let handle = process.control.handle().unwrap();
        let escaped = pid_in(dir.path(), "escaped.pid").await;
        handle.remember_processes();
        process.control.wait().await.unwrap();
        assert!(runs(escaped), "the orphan {escaped} runs after the shell exited");
        let report = handle.kill_all().unwrap();
        let killed = gone(escaped).await;
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(escaped), nix::sys::signal::Signal::SIGKILL);
        assert!(killed, "the orphan {escaped} survived");
        assert_eq!((report.shell, report.started, report.outside_group), (false, 1, 1));
    }

    /// The sandbox of a workspace at `dir`, when it gives each command a mount namespace of its
    /// own that none of its processes can leave; `None` (the test skipped) elsewhere but CI.
    fn own_mount_namespaces(dir: &TempDir) -> Option<Arc<tool_sandbox::Sandbox>> {
        let probe = tool_sandbox::Probe::get();
        match tool_sandbox::Sandbox::new(tool_sandbox::SandboxPolicy::workspace_write(dir.path())) {
            Ok(sandbox) if probe.can_protect_paths() && probe.seccomp => Some(Arc::new(sandbox)),
            _ => {
                assert!(std::env::var("CI").as_deref() != Ok("true"), "CI can make mount namespaces");
                eprintln!("skipped: commands get no mount namespace of their own here");
                None
            }
        }
    }

    /// Without a cgroup, a command sandboxed in a mount namespace of its own is known to be over
    /// once nothing is in that namespace, and then lets go of the placeholders of the absent
    /// protected names (which the host's own `write` may then create); an orphan that left the
    /// group and cleared its environment, never seen beneath the shell, is found there, keeps
    /// them held, and is killed.
    #[tokio::test]
    async fn without_a_cgroup_the_mount_namespace_tells_what_a_sandboxed_command_left_running() {
        let dir = TempDir::new();
        let Some(sandbox) = own_mount_namespaces(&dir) else { return };
        let containment = Containment { subreaper: true, cgroup: false, ..Containment::default() };
        let sandboxed =
            |command: &str| ShellRequest { sandbox: Some(sandbox.clone()), ..request(dir.path(), command) };
        let claude = dir.path().join("CLAUDE.md");

        let mut process = spawn_contained(&sandboxed("true"), containment.clone()).unwrap();
        assert!(tool_sandbox::is_held_placeholder(&claude), "no placeholder while the command runs");
        process.control.wait().await.unwrap();
        drop(process);
        assert!(!tool_sandbox::is_held_placeholder(&claude), "held after a command that left nothing");
        assert!(!claude.exists());

        let command = "env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 & echo $! > escaped.pid' > /dev/null 2>&1 \
                       < /dev/null";
        let mut process = spawn_contained(&sandboxed(command), containment).unwrap();
        let handle = process.control.handle().unwrap();
        process.control.wait().await.unwrap();
        drop(process);
        let escaped = pid_in(dir.path(), "escaped.pid").await;
        assert!(runs(escaped), "the orphan {escaped} runs after the shell exited");
        let held = tool_sandbox::is_held_placeholder(&claude);
        let may = handle.may_have_processes();
        let report = handle.kill_all().unwrap();
        let killed = gone(escaped).await;
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(escaped), nix::sys::signal::Signal::SIGKILL);
        assert!(held && may, "the orphan's command let go of its placeholders ({held}, {may})");
        assert!(killed, "the orphan {escaped} survived");
        assert_eq!((report.shell, report.started, report.outside_group), (false, 1, 1));
        assert!(!handle.may_have_processes());
        // The kill may have looked while the orphan was still dying; the next look lets go, even
        // with the command's handle still held (a session's, say).
        forget_ended_jobs();
        assert!(!tool_sandbox::is_held_placeholder(&claude), "held after its processes were killed");
        drop(handle);
    }

    /// A namespace freed when its last process ends has its number given to the next one made:
    /// a command's tree holds its namespace open, so that a kill of a command that has ended never
    /// takes the next command's processes for its own.
    #[tokio::test]
    async fn the_kill_of_an_ended_command_leaves_the_next_commands_processes_alone() {
        let dir = TempDir::new();
        let Some(sandbox) = own_mount_namespaces(&dir) else { return };
        let containment = Containment { subreaper: true, cgroup: false, ..Containment::default() };
        let sandboxed =
            |command: &str| ShellRequest { sandbox: Some(sandbox.clone()), ..request(dir.path(), command) };
        let mut ended = spawn_contained(&sandboxed("true"), containment.clone()).unwrap();
        let handle = ended.control.handle().unwrap();
        ended.control.wait().await.unwrap();
        drop(ended);
        let mut next =
            spawn_contained(&sandboxed("echo $$ > next.pid; exec sleep 300"), containment).unwrap();
        let pid = pid_in(dir.path(), "next.pid").await;
        let report = handle.kill_all().unwrap();
        let survived = runs(pid);
        next.control.kill_all().unwrap();
        assert!(survived, "the next command's process {pid} was killed with the ended one ({report:?})");
        assert_eq!((report.shell, report.started), (false, 0));
    }

    #[tokio::test]
    async fn in_a_cgroup_an_escaped_orphan_is_killed_after_the_shell_exited_without_being_looked_for() {
        let dir = TempDir::new();
        let command = "env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 & echo $! > escaped.pid' > /dev/null 2>&1 \
                       < /dev/null & while [ ! -s escaped.pid ]; do sleep 0.01; done";
        let Some(probe) = tool_runtime::process_tree::Cgroup::create() else {
            eprintln!("skipped: this process cannot create cgroups here");
            return;
        };
        drop(probe);
        let mut process = spawn_local(&request(dir.path(), command)).unwrap();
        let handle = process.control.handle().unwrap();
        let escaped = pid_in(dir.path(), "escaped.pid").await;
        process.control.wait().await.unwrap();
        let report = handle.kill_all().unwrap();
        let killed = gone(escaped).await;
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(escaped), nix::sys::signal::Signal::SIGKILL);
        assert!(killed, "the orphan {escaped} survived");
        assert_eq!((report.shell, report.started, report.outside_group), (false, 1, 1));
    }

    #[test]
    fn the_shell_is_found_outside_the_writable_roots() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new();
        let planted = dir.path().join("venv/bin");
        std::fs::create_dir_all(&planted).unwrap();
        std::fs::write(planted.join("bash"), "#!/bin/sh\necho planted\n").unwrap();
        std::fs::set_permissions(planted.join("bash"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let system = std::env::var_os("PATH").unwrap();
        let path = std::env::join_paths(
            [planted.clone(), PathBuf::from("relative")].into_iter().chain(std::env::split_paths(&system)),
        )
        .unwrap();
        let found = resolve_shell("bash", &path, &[dir.path().to_path_buf()]).unwrap();
        assert!(found.is_absolute() && !found.starts_with(dir.path()), "{}", found.display());
        assert_eq!(resolve_shell("bash", &path, &[]).unwrap(), planted.join("bash").canonicalize().unwrap());
    }

    #[tokio::test]
    async fn background_jobs_of_a_command_that_exited_are_left_alone() {
        let dir = TempDir::new();
        let mut process =
            spawn_local(&request(dir.path(), "setsid sleep 300 > /dev/null 2>&1 & echo $! > bg.pid"))
                .unwrap();
        process.control.wait().await.unwrap();
        let pid = pid_in(dir.path(), "bg.pid").await;
        let report = process.control.kill_all().unwrap();
        drop(process);
        let survived = runs(pid);
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        assert!(survived, "a job the user started in the background died with its finished command");
        assert_eq!(report, KillReport::default());
    }
}
