//! The interpreter in a process of its own: a program that calls [`serve_worker`] runs one
//! script's interpreter, and the host speaks for it, as for an interpreter on a thread.
//!
//! A built-in function of QuickJS may loop in C for minutes without looking at the interrupt
//! handler (BigInt arithmetic on numbers of a million bits, a `Set` made from many long
//! strings): a thread in it cannot be stopped, but a process can be killed. The host sends the
//! script, then each call's result, and a stop; the worker sends what the script prints, each
//! call it makes, its searches, and its end. Each message is one line of JSON (a call's
//! arguments and a result's structured content in it as JSON text, so that they may be nested
//! as deep as anywhere else).
//!
//! The host starts each worker with an empty environment, in `/`, and kills it [`KILL_GRACE`]
//! after telling it to stop if it has not ended by then, or when the host goes away; a worker
//! whose standard input closes, or whose parent ends, exits. What the worker may reach besides
//! its pipes is the program's to shut (the `tools` binary's worker calls tool-sandbox's
//! `shut_in` first).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value as Json, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::unbounded_channel;
use tokio::sync::{Notify, oneshot};
use tool_core::ErrorKind;

use crate::engine::{self, Finished, Search, Settled, Setup, StartCall, StopFlag, ToHost, Wait, Wakeup};
use crate::limits::{Limits, Stop};

/// The program that runs each script's interpreter in a process of its own
/// ([`CodeTool::in_worker`](crate::CodeTool::in_worker)): it must call [`serve_worker`] and
/// exit with what it returns, doing nothing else first that reads standard input or writes
/// standard output.
///
/// ```no_run
/// // In the program's `main`, before anything else (and, on Linux, after shutting the process
/// // in, as the `tools` binary does with tool-sandbox's `shut_in`):
/// if std::env::args().nth(1).as_deref() == Some("code-worker") {
///     std::process::exit(match tool_code::serve_worker() {
///         code if code == std::process::ExitCode::SUCCESS => 0,
///         _ => 1,
///     });
/// }
/// // Where the tool is made:
/// let worker = tool_code::WorkerCommand::new(std::env::current_exe()?).arg("code-worker");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    program: PathBuf,
    args: Vec<OsString>,
}

impl WorkerCommand {
    /// The worker `program`, with no arguments yet.
    pub fn new(program: impl Into<PathBuf>) -> WorkerCommand {
        WorkerCommand { program: program.into(), args: Vec::new() }
    }

    /// This command with `arg` after its other arguments.
    pub fn arg(mut self, arg: impl Into<OsString>) -> WorkerCommand {
        self.args.push(arg.into());
        self
    }
}

/// How long a worker told to stop may take to end before it is killed: its interpreter sees
/// the stop at its next interrupt or when it next waits for its calls, and what it printed is
/// with the host by then. Shorter than a dispatcher's default cancel grace (200 ms), so that a
/// cancelled call hands back what its script printed.
const KILL_GRACE: Duration = Duration::from_millis(100);

/// The longest line the host reads from a worker: a call's arguments are bounded by the
/// script's memory limit, what it prints by its output limit, both written as JSON (which may
/// take six bytes for one).
fn longest_line(limits: &Limits) -> usize {
    limits.memory_bytes.saturating_add(limits.output_bytes).saturating_mul(6).saturating_add(1 << 16)
}

/// The workers of one command: one started ahead for the next script, so that a script's start
/// costs no process start (nor the prelude's compilation, which a worker does while it waits).
#[derive(Debug)]
pub(crate) struct Workers {
    command: WorkerCommand,
    spare: Mutex<Option<Process>>,
}

/// A worker process, killed and reaped when dropped.
#[derive(Debug)]
struct Process {
    child: std::process::Child,
    pipes: Option<(std::process::ChildStdin, std::process::ChildStdout)>,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Workers {
    pub(crate) fn new(command: WorkerCommand) -> Workers {
        Workers { command, spare: Mutex::new(None) }
    }

    pub(crate) fn command(&self) -> &WorkerCommand {
        &self.command
    }

    fn start(&self) -> std::io::Result<Process> {
        let mut child = std::process::Command::new(&self.command.program)
            .args(&self.command.args)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let pipes = child.stdin.take().zip(child.stdout.take());
        let process = Process { child, pipes };
        match process.pipes {
            Some(_) => Ok(process),
            None => Err(std::io::Error::other("the worker's pipes were not made")),
        }
    }

    /// A worker for a script: the one started ahead, if it still waits, else a new one.
    fn take(&self) -> std::io::Result<Process> {
        let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).take();
        match spare {
            Some(mut spare) => match spare.child.try_wait() {
                Ok(None) => Ok(spare),
                _ => self.start(),
            },
            None => self.start(),
        }
    }

    /// Starts a worker ahead for the next script, unless one waits already.
    fn refill(&self) {
        if self.spare.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
            return;
        }
        let Ok(process) = self.start() else { return };
        let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        if spare.is_none() {
            *spare = Some(process);
        }
    }
}

/// Starts the script of `setup` in a worker of `workers`; the host's side of it runs in a task
/// of this runtime, and ends with a [`ToHost::Done`] (unless the host went away).
pub(crate) fn spawn(setup: Setup, workers: &Arc<Workers>) -> std::io::Result<Wakeup> {
    let mut process = workers.take()?;
    let Some((stdin, stdout)) = process.pipes.take() else {
        return Err(std::io::Error::other("the worker's pipes were taken"));
    };
    let stdin = tokio::process::ChildStdin::from_std(stdin)?;
    let stdout = tokio::process::ChildStdout::from_std(stdout)?;
    let limits = setup.limits;
    let start = json!({
        "source": setup.source,
        "tools": setup.tools,
        "search": setup.search.is_some(),
        "wall_ms": limits.wall_time.as_millis() as u64,
        "memory": limits.memory_bytes,
        "nested_calls": limits.nested_calls,
        "output": limits.output_bytes,
        "concurrent": limits.concurrent_calls,
        "left_ms": setup.deadline.saturating_duration_since(Instant::now()).as_millis() as u64,
    });
    let wake = Arc::new(Notify::new());
    let pipes = Pipes { stdin, stdout, out: line(&start) };
    tokio::spawn(follow(setup, process, pipes, wake.clone(), workers.clone()));
    Ok(Wakeup::Process(wake))
}

/// The host's ends of a worker's pipes, and what is still to be written to it.
struct Pipes {
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    out: Vec<u8>,
}

/// `message` as a line.
fn line(message: &Json) -> Vec<u8> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// What a worker says.
enum FromWorker {
    Print(String),
    /// A call, and the length of its arguments' text.
    Call(u64, String, Json, usize),
    /// The script ended: its calls not ended yet are to be stopped.
    Cancel,
    Search(String, Option<f64>),
    Done(Finished, Option<Stop>),
}

impl FromWorker {
    fn parse(line: &[u8]) -> Option<FromWorker> {
        let Json::Object(mut message) = serde_json::from_slice(line).ok()? else { return None };
        if let Some(Json::String(text)) = message.remove("print") {
            return Some(FromWorker::Print(text));
        }
        if let Some(id) = message.get("call").and_then(Json::as_u64) {
            let Some(Json::String(tool)) = message.remove("tool") else { return None };
            // As text, parsed on its own: nested as deep as a parser allows, not one level less.
            let text = message.get("arguments")?.as_str()?;
            return Some(FromWorker::Call(id, tool, serde_json::from_str(text).ok()?, text.len()));
        }
        if message.contains_key("cancel") {
            return Some(FromWorker::Cancel);
        }
        if let Some(Json::String(query)) = message.remove("search") {
            return Some(FromWorker::Search(query, message.get("limit").and_then(Json::as_f64)));
        }
        let done = message.get_mut("done")?;
        let finished = Finished {
            output: text(done.get_mut("output"))?,
            error: text(done.get_mut("error")),
            calls: done.get("calls").and_then(Json::as_u64)?,
        };
        let stop = message.get("stop").and_then(Json::as_u64).and_then(|code| Stop::from_u8(code as u8));
        Some(FromWorker::Done(finished, stop))
    }
}

fn text(value: Option<&mut Json>) -> Option<String> {
    match value.map(Json::take) {
        Some(Json::String(text)) => Some(text),
        _ => None,
    }
}

/// The host's side of a worker: passes on what it prints, makes its calls through `setup`'s
/// dispatcher and answers its searches, tells it to stop when the stop flag is set (`wake`
/// says when to look) and kills it if it has not ended [`KILL_GRACE`] later, then ends the
/// script's calls and tells the host its end; then starts a worker ahead for the next script
/// (not before: its start would take a core from this one's). Nothing it writes to the worker
/// waits for the worker to read it.
async fn follow(setup: Setup, mut process: Process, pipes: Pipes, wake: Arc<Notify>, workers: Arc<Workers>) {
    let Setup { search, limits, stop, to_host, start_call, calls_cancel, .. } = setup;
    let Pipes { mut stdin, stdout, mut out } = pipes;
    let mut reader = tokio::io::BufReader::new(stdout);
    let longest = longest_line(&limits);
    let mut received = Vec::new();
    let mut calls = FuturesUnordered::new();
    let (mut printed, mut made, mut told, mut writing) = (String::new(), 0, false, true);
    // The text of the arguments of each call not ended yet: the script's memory limit bounds
    // them in the worker (once parsed, which takes more).
    let mut held: HashMap<u64, usize> = HashMap::new();
    let kill = tokio::time::sleep(Duration::MAX);
    tokio::pin!(kill);
    let ended = loop {
        tokio::select! {
            biased;
            () = wake.notified() => {
                if stop.is_host_gone() {
                    // Its calls are dropped with this task; the worker is killed now.
                    drop(process);
                    stop.thread_ended();
                    refill(&workers);
                    return;
                }
                if let (Some(stopped), false) = (stop.get(), told) {
                    told = true;
                    out.extend(line(&json!({"stop": stopped.as_u8()})));
                    calls_cancel.cancel();
                    kill.as_mut().reset((Instant::now() + KILL_GRACE).into());
                }
            }
            read = async {
                let room = longest.saturating_sub(received.len()) as u64;
                (&mut reader).take(room).read_until(b'\n', &mut received).await
            } => {
                // Its end, a line too long, or something that is no message: no more is read.
                let message = match read {
                    Ok(_) => received.strip_suffix(b"\n").and_then(FromWorker::parse),
                    Err(_) => None,
                };
                received.clear();
                match message {
                    // The worker keeps to the script's limits; one that does not (its interpreter
                    // subverted by the script) is stopped here as if it had ended on its own.
                    Some(FromWorker::Print(text)) if printed.len() + text.len() > limits.output_bytes => break None,
                    Some(FromWorker::Call(id, .., bytes))
                        if id != made + 1
                            || id > u64::from(limits.nested_calls)
                            || held.values().sum::<usize>() + bytes > limits.memory_bytes =>
                    {
                        break None;
                    }
                    Some(FromWorker::Done(finished, _)) if finished.output.len() > limits.output_bytes => break None,
                    Some(FromWorker::Print(text)) => {
                        printed.push_str(&text);
                        let _ = to_host.send(ToHost::Print(text));
                    }
                    Some(FromWorker::Call(id, tool, arguments, bytes)) => {
                        made = id;
                        held.insert(id, bytes);
                        let mut call = start_call(id, tool, arguments);
                        // Started now, as on the interpreter's thread: it takes its turn at the
                        // gate in the order the script made its calls.
                        match std::future::poll_fn(|cx| std::task::Poll::Ready(call.as_mut().poll(cx))).await {
                            std::task::Poll::Ready(settled) => {
                                held.remove(&id);
                                out.extend(settled_line(id, settled));
                            }
                            std::task::Poll::Pending => calls.push(async move { (id, call.await) }),
                        }
                    }
                    Some(FromWorker::Cancel) => calls_cancel.cancel(),
                    Some(FromWorker::Search(query, limit)) => {
                        let found = search.as_ref().map(|search| search(query, limit)).unwrap_or_default();
                        out.extend(line(&json!({"found": found})));
                    }
                    Some(FromWorker::Done(finished, stopped)) => break Some((finished, stopped)),
                    None => break None,
                }
            }
            Some((id, settled)) = calls.next(), if !calls.is_empty() => {
                held.remove(&id);
                out.extend(settled_line(id, settled));
            }
            written = stdin.write(&out), if writing && !out.is_empty() => match written {
                Ok(n) => drop(out.drain(..n)),
                // Gone: what it would have read no longer matters.
                Err(_) => (writing, out) = (false, Vec::new()),
            },
            () = &mut kill, if told => {
                let _ = process.child.kill();
                kill.as_mut().reset((Instant::now() + Duration::from_secs(3600)).into());
            }
        }
    };
    // Ended by itself, its calls ended before it did; killed, or gone on its own, its calls are
    // stopped now and hand back what they have within the dispatcher's cancel grace.
    let _ = process.child.kill();
    calls_cancel.cancel();
    while calls.next().await.is_some() {}
    let finished = match ended {
        Some((finished, stopped)) => {
            if let Some(stopped) = stopped {
                stop.stop(stopped);
            }
            finished
        }
        None => {
            let error = match stop.get() {
                Some(_) => None,
                None => Some("The script interpreter stopped unexpectedly.".to_owned()),
            };
            Finished { output: printed, error, calls: made }
        }
    };
    stop.thread_ended();
    let _ = to_host.send(ToHost::Done(finished));
    // Killed above, and reaped here (it ends at once); then a worker is started ahead.
    tokio::task::spawn_blocking(move || drop(process));
    refill(&workers);
}

/// Starts a worker ahead for the next script of `workers` in the background, unless the tool is
/// gone by then.
fn refill(workers: &Arc<Workers>) {
    let workers = Arc::downgrade(workers);
    tokio::task::spawn_blocking(move || {
        if let Some(workers) = workers.upgrade() {
            workers.refill();
        }
    });
}

/// The line that tells the worker how its call `id` ended.
fn settled_line(id: u64, settled: Settled) -> Vec<u8> {
    line(&match settled {
        Settled::Ok { text, structured } => {
            let structured = structured.map(|structured| structured.to_string());
            json!({"settled": id, "text": text, "structured": structured})
        }
        Settled::Err { tool, kind, message } => {
            json!({"settled": id, "tool": tool, "kind": kind, "message": message})
        }
    })
}

/// What the host says to a worker after the script.
enum FromHost {
    Settled(u64, Settled),
    Found(Vec<(String, String)>),
    Stop(Stop),
}

impl FromHost {
    fn parse(line: &[u8]) -> Option<FromHost> {
        let Json::Object(mut message) = serde_json::from_slice(line).ok()? else { return None };
        if let Some(id) = message.get("settled").and_then(Json::as_u64) {
            let settled = match message.remove("text") {
                Some(Json::String(text)) => {
                    let structured = match message.get("structured") {
                        // Nested deeper than the parser goes: the script gets the text alone.
                        Some(Json::String(structured)) => serde_json::from_str(structured).ok(),
                        _ => None,
                    };
                    Settled::Ok { text, structured }
                }
                _ => Settled::Err {
                    tool: text(message.get_mut("tool"))?,
                    kind: text(message.get_mut("kind"))?,
                    message: text(message.get_mut("message"))?,
                },
            };
            return Some(FromHost::Settled(id, settled));
        }
        if let Some(Json::Array(found)) = message.remove("found") {
            let found = found.into_iter().filter_map(|entry| {
                let [Json::String(name), Json::String(declaration)] =
                    <[Json; 2]>::try_from(entry.as_array().cloned().unwrap_or_default()).ok()?
                else {
                    return None;
                };
                Some((name, declaration))
            });
            return Some(FromHost::Found(found.collect()));
        }
        let stop = message.get("stop").and_then(Json::as_u64)?;
        Stop::from_u8(stop as u8).map(FromHost::Stop)
    }
}

/// The script a worker runs, with its limits.
struct Start {
    source: String,
    tools: Vec<String>,
    search: bool,
    limits: Limits,
    left: Duration,
}

impl Start {
    fn parse(line: &[u8]) -> Option<Start> {
        let Json::Object(mut start) = serde_json::from_slice(line).ok()? else { return None };
        let number = |name: &str| start.get(name).and_then(Json::as_u64);
        let limits = Limits {
            wall_time: Duration::from_millis(number("wall_ms")?),
            memory_bytes: usize::try_from(number("memory")?).ok()?,
            nested_calls: u32::try_from(number("nested_calls")?).ok()?,
            output_bytes: usize::try_from(number("output")?).ok()?,
            concurrent_calls: usize::try_from(number("concurrent")?).ok()?,
            yield_time: None,
        };
        let left = Duration::from_millis(number("left_ms")?);
        let search = start.get("search").and_then(Json::as_bool)?;
        let tools = match start.remove("tools")? {
            Json::Array(tools) => {
                tools.into_iter().map(|t| t.as_str().map(str::to_owned)).collect::<Option<_>>()?
            }
            _ => return None,
        };
        Some(Start { source: text(start.get_mut("source"))?, tools, search, limits, left })
    }
}

/// A worker's exchanges with its host after the script, on its interpreter's thread: what it
/// reads (the results its calls wait for, a search's answer, a stop), and what the script
/// printed, which goes out before the next message of its own.
struct Inbox {
    input: std::io::BufReader<std::io::Stdin>,
    longest: usize,
    pending: HashMap<u64, oneshot::Sender<Settled>>,
    found: Option<Vec<(String, String)>>,
    stop: Arc<StopFlag>,
    from_script: tokio::sync::mpsc::UnboundedReceiver<ToHost>,
    calls_cancel: tool_core::CancellationToken,
    /// The host was told to stop the calls still running.
    told_cancel: bool,
}

impl Inbox {
    /// Reads one message and does what it says; exits the process when the host is gone (or
    /// says what no host says).
    fn next(&mut self) {
        let mut received = Vec::new();
        let read = std::io::Read::take(&mut self.input, self.longest as u64).read_until(b'\n', &mut received);
        let message = match read {
            Ok(_) => received.strip_suffix(b"\n").and_then(FromHost::parse),
            Err(_) => None,
        };
        match message {
            Some(FromHost::Settled(id, settled)) => {
                if let Some(waiting) = self.pending.remove(&id) {
                    let _ = waiting.send(settled);
                }
            }
            Some(FromHost::Found(found)) => self.found = Some(found),
            Some(FromHost::Stop(stopped)) => self.stop.stop(stopped),
            None => std::process::exit(1),
        }
    }

    /// Sends the host what the script printed since the last time.
    fn send_printed(&mut self) {
        while let Ok(message) = self.from_script.try_recv() {
            if let ToHost::Print(text) = message {
                send(&json!({"print": text}));
            }
        }
    }

    /// Whether a message (or the host's end) is there to be read without waiting.
    fn ready(&self) -> bool {
        if !self.input.buffer().is_empty() {
            return true;
        }
        #[cfg(target_os = "linux")]
        {
            use rustix::event::{PollFd, PollFlags, Timespec, poll};
            let stdin = std::io::stdin();
            let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
            poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })).is_ok_and(|ready| ready > 0)
        }
        // Elsewhere a stop is read when the script next waits for its calls, or the host kills
        // the worker.
        #[cfg(not(target_os = "linux"))]
        false
    }
}

fn lock(inbox: &Mutex<Inbox>) -> std::sync::MutexGuard<'_, Inbox> {
    inbox.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes `message` to the host, as one line; exits the process when the host is gone.
fn send(message: &Json) {
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(&line(message)).and_then(|()| stdout.flush()).is_err() {
        std::process::exit(1);
    }
}

/// Runs the script the host sends on standard input in this process, and ends it: the
/// worker's side of [`WorkerCommand`]. It returns once the script ended and its end was
/// written, and exits the process when its host is gone (standard input or output closed, or
/// its parent process ended). A failure means that what came in was not a script from a host.
pub fn serve_worker() -> ExitCode {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                if std::os::unix::process::parent_id() != parent {
                    std::process::exit(1);
                }
            }
        });
    }
    // On a thread with the stack a script's interpreter has on a thread of the host (whatever
    // the stack limit this process started with), which does all the worker's work: its
    // messages come in the order the script made them, and none waits for another thread.
    let script = std::thread::Builder::new()
        .name("code-script".into())
        .stack_size(engine::THREAD_STACK)
        .spawn(run_script);
    match script.ok().and_then(|script| script.join().ok()).flatten() {
        Some(()) => ExitCode::SUCCESS,
        None => ExitCode::FAILURE,
    }
}

/// Warms up, reads the script from standard input, runs it to its end and tells the host;
/// `None` when what came in was not a script.
fn run_script() -> Option<()> {
    // The prelude is compiled and the memory a script takes mapped while the worker waits for
    // its script (one of its own, run first), so that the script starts at once.
    warm_up();

    let mut input = std::io::BufReader::new(std::io::stdin());
    let mut first = Vec::new();
    // The script and its tools' names: bounded as what the host would send.
    let read = std::io::Read::take(&mut input, 1 << 30).read_until(b'\n', &mut first);
    let start = read.ok().and_then(|_| Start::parse(first.strip_suffix(b"\n")?))?;
    drop(first);
    let stop = Arc::new(StopFlag::default());
    let (to_host, from_script) = unbounded_channel();
    let calls_cancel = tool_core::CancellationToken::new();
    let inbox = Arc::new(Mutex::new(Inbox {
        input,
        longest: longest_line(&start.limits),
        pending: HashMap::new(),
        found: None,
        stop: stop.clone(),
        from_script,
        calls_cancel: calls_cancel.clone(),
        told_cancel: false,
    }));
    let start_call: StartCall = {
        let inbox = inbox.clone();
        Arc::new(move |id, tool, arguments| {
            let (settle, settled) = oneshot::channel();
            let mut inbox = lock(&inbox);
            inbox.pending.insert(id, settle);
            inbox.send_printed();
            send(&json!({"call": id, "tool": tool, "arguments": arguments.to_string()}));
            Box::pin(async move {
                settled.await.unwrap_or_else(|_| Settled::Err {
                    tool: String::new(),
                    kind: ErrorKind::Cancelled.as_str().to_owned(),
                    message: "The call was stopped: the host went away.".to_owned(),
                })
            })
        })
    };
    let search: Option<Search> = start.search.then(|| {
        let inbox = inbox.clone();
        Arc::new(move |query: String, limit: Option<f64>| {
            // As the host would take it (at least 1; `NaN` as 1), in what JSON can write.
            let limit = limit.map(|limit| if limit.is_nan() { 1.0 } else { limit.clamp(1.0, 1e9) });
            let mut inbox = lock(&inbox);
            inbox.send_printed();
            send(&json!({"search": query, "limit": limit}));
            loop {
                if let Some(found) = inbox.found.take() {
                    return found;
                }
                inbox.next();
            }
        }) as Search
    });
    let wait: Wait = {
        let inbox = inbox.clone();
        Arc::new(move || {
            let mut inbox = lock(&inbox);
            inbox.send_printed();
            // The script ended with calls still running: the host stops them.
            if inbox.calls_cancel.is_cancelled() && !inbox.told_cancel {
                inbox.told_cancel = true;
                send(&json!({"cancel": true}));
            }
            inbox.next();
        })
    };
    // From the interrupt handler, which runs between steps of the script's code (never while
    // the interpreter's thread reads its inbox): a stop is seen while the script computes.
    let look: Wait = {
        let inbox = inbox.clone();
        Arc::new(move || {
            if let Ok(mut inbox) = inbox.try_lock() {
                while inbox.ready() {
                    inbox.next();
                }
            }
        })
    };
    // What the script prints goes out as it prints it (a script stuck in a built-in function
    // afterwards is killed, and what it printed is with the host).
    let printed: Wait = {
        let inbox = inbox.clone();
        Arc::new(move || {
            if let Ok(mut inbox) = inbox.try_lock() {
                inbox.send_printed();
            }
        })
    };
    let setup = Setup {
        source: start.source,
        tools: start.tools,
        search,
        limits: start.limits,
        deadline: Instant::now() + start.left,
        stop: stop.clone(),
        to_host,
        start_call,
        calls_cancel,
        wait: Some(wait),
        look: Some(look),
        printed: Some(printed),
    };
    let Finished { output, error, calls } = engine::run(setup);
    // After what it printed.
    lock(&inbox).send_printed();
    let done = json!({"output": output, "error": error, "calls": calls});
    send(&json!({"done": done, "stop": stop.get().map(Stop::as_u8)}));
    Some(())
}

/// Runs a script that makes no call, to its end.
fn warm_up() {
    let (to_host, _from_script) = unbounded_channel();
    let _ = engine::run(Setup {
        source: "[1].map((n) => `${n}`).join()".to_owned(),
        tools: Vec::new(),
        search: None,
        limits: Limits::default(),
        deadline: Instant::now() + Duration::from_secs(5),
        stop: Arc::default(),
        to_host,
        start_call: Arc::new(|_, _, _| Box::pin(std::future::pending())),
        calls_cancel: tool_core::CancellationToken::new(),
        wait: None,
        look: None,
        printed: None,
    });
}
