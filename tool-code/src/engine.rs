//! The interpreter: one QuickJS runtime per script, on a thread of its own, under its memory
//! limit and an interrupt handler that stops it at its deadline or when the host says so. Its
//! only ways out are its tool calls, which it starts and polls on its own thread (a call that
//! answers at once costs no thread hop), and the messages it sends the host: what it printed,
//! and its end.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Instant;

use futures_util::StreamExt;
use futures_util::future::{BoxFuture, LocalBoxFuture};
use futures_util::stream::FuturesUnordered;
use tool_core::truncate::{TruncationLimits, truncate_text};
use tool_core::{CancellationToken, TruncationDirection};

use rquickjs::context::{EvalOptions, intrinsic};
use rquickjs::{
    Array, Context, Ctx, Exception, Function, IntoJs, Object, Persistent, Promise, Runtime, Value,
    promise::PromiseState,
};
use serde_json::Value as Json;
use tokio::sync::mpsc::UnboundedSender;

use crate::limits::{Limits, Stop};

/// Why the script stops: set once, by the host or the interpreter, and read by the interrupt
/// handler; and whether the host went away (its runtime shutting down).
#[derive(Debug, Default)]
pub(crate) struct StopFlag {
    stop: AtomicU8,
    host_gone: AtomicBool,
    /// [`RUNNING`], [`ENDED`] once the interpreter's thread is done, or [`GIVEN_UP`] once the
    /// host stopped waiting for it ([`StopFlag::give_up`]).
    thread: AtomicU8,
    /// A promise nobody handles was rejected with `null` in the job that ran last.
    rejected_with_null: AtomicBool,
    /// The interpreter thread's id, once it runs.
    #[cfg(target_os = "linux")]
    thread_id: std::sync::OnceLock<rustix::thread::Pid>,
    /// What wakes the interpreter, once it runs: woken when the host goes away.
    interpreter: std::sync::OnceLock<Wakeup>,
}

/// What the host wakes to have a script's interpreter look at its stop flag: its thread, or
/// the task that speaks for an interpreter in a process of its own.
#[derive(Debug, Clone)]
pub(crate) enum Wakeup {
    Thread(Thread),
    Process(Arc<tokio::sync::Notify>),
}

impl Wakeup {
    pub(crate) fn wake(&self) {
        match self {
            Wakeup::Thread(thread) => thread.unpark(),
            Wakeup::Process(notify) => notify.notify_one(),
        }
    }
}

impl StopFlag {
    /// Stops the script for `stop`, unless it was already stopped for something else.
    pub(crate) fn stop(&self, stop: Stop) {
        let _ = self.stop.compare_exchange(0, stop.as_u8(), Ordering::SeqCst, Ordering::SeqCst);
    }

    pub(crate) fn get(&self) -> Option<Stop> {
        Stop::from_u8(self.stop.load(Ordering::SeqCst))
    }

    /// The host went away before the script ended (the runtime is shutting down): its calls are
    /// dropped, not polled to their end, since their timers and tasks may be gone.
    pub(crate) fn host_gone(&self) {
        self.host_gone.store(true, Ordering::SeqCst);
        self.stop(Stop::Cancelled);
        if let Some(interpreter) = self.interpreter.get() {
            interpreter.wake();
        }
    }

    /// The host stops waiting for an interpreter that did not stop when told (a built-in
    /// function that never looks at the interrupt handler): it is counted among [`stuck`] until
    /// its thread ends, if ever. `false` when the thread ended meanwhile.
    pub(crate) fn give_up(&self) -> bool {
        let given_up =
            self.thread.compare_exchange(RUNNING, GIVEN_UP, Ordering::SeqCst, Ordering::SeqCst).is_ok();
        if given_up {
            STUCK.fetch_add(1, Ordering::SeqCst);
            // It keeps a core busy: only while nothing else wants it.
            #[cfg(target_os = "linux")]
            if let Some(thread) = self.thread_id.get() {
                let _ = rustix::process::setpriority_process(Some(*thread), 19);
            }
        }
        given_up
    }

    /// The interpreter's thread (or process) is done.
    pub(crate) fn thread_ended(&self) {
        if self.thread.swap(ENDED, Ordering::SeqCst) == GIVEN_UP {
            STUCK.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// What wakes the script's interpreter when the host goes away.
    pub(crate) fn runs_on(&self, interpreter: Wakeup) {
        let _ = self.interpreter.set(interpreter);
    }

    pub(crate) fn is_host_gone(&self) -> bool {
        self.host_gone.load(Ordering::SeqCst)
    }
}

const RUNNING: u8 = 0;
const ENDED: u8 = 1;
const GIVEN_UP: u8 = 2;

/// Interpreters of this process the host gave up on, still running.
static STUCK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many interpreters of this process run on past their script's end because they did not
/// stop when told (each keeps a core busy).
pub(crate) fn stuck() -> usize {
    STUCK.load(Ordering::SeqCst)
}

/// What the script tells the host.
#[derive(Debug)]
pub(crate) enum ToHost {
    /// The script printed this (a line, with its newline).
    Print(String),
    /// The script ended (by itself, by an uncaught error, or stopped), and so did its calls.
    Done(Finished),
}

/// Starts one tool call of the script: its number in the script (from 1), the tool and the
/// arguments; the future runs the call and says how it ended.
pub(crate) type StartCall = Arc<dyn Fn(u64, String, Json) -> BoxFuture<'static, Settled> + Send + Sync>;

/// Waits, on the interpreter's thread, until a call of the script may have ended or the script
/// is to stop (an interpreter in a worker reads what its host says); or looks without waiting.
pub(crate) type Wait = Arc<dyn Fn() + Send + Sync>;

/// Searches the deferred tools: the query and the most results wanted; each tool found with
/// its declaration.
pub(crate) type Search = Arc<dyn Fn(String, Option<f64>) -> Vec<(String, String)> + Send + Sync>;

/// How a tool call ended, as the script sees it.
#[derive(Debug)]
pub(crate) enum Settled {
    /// Its result: the text the model would read, and the structured content.
    Ok { text: String, structured: Option<Json> },
    /// An error result, thrown in the script as a `ToolError`.
    Err { tool: String, kind: String, message: String },
}

/// How a script ended.
#[derive(Debug, Default)]
pub(crate) struct Finished {
    /// What it printed, then its final value.
    pub(crate) output: String,
    /// The uncaught error (or why it could not end), if any.
    pub(crate) error: Option<String>,
    /// How many tool calls it made.
    pub(crate) calls: u64,
}

/// Everything a script's thread needs.
pub(crate) struct Setup {
    pub(crate) source: String,
    pub(crate) tools: Vec<String>,
    pub(crate) search: Option<Search>,
    pub(crate) limits: Limits,
    pub(crate) deadline: Instant,
    pub(crate) stop: Arc<StopFlag>,
    pub(crate) to_host: UnboundedSender<ToHost>,
    pub(crate) start_call: StartCall,
    /// Stops the calls the script has not waited for, once it ends.
    pub(crate) calls_cancel: CancellationToken,
    /// How the interpreter waits for its calls: parked until one wakes it (or its deadline), or
    /// this.
    pub(crate) wait: Option<Wait>,
    /// What the interrupt handler does first, without waiting (an interpreter in a worker takes
    /// what its host said meanwhile, a stop among it).
    pub(crate) look: Option<Wait>,
    /// What follows each print, once `to_host` has it (an interpreter in a worker sends it on).
    pub(crate) printed: Option<Wait>,
}

/// Why a script that waits for a promise nothing will settle fails.
const STALLED: &str = "The script is waiting for a promise that nothing will settle: no tool call is running. \
                       Await only tool calls and promises they settle.";

/// The stack QuickJS may use, below the thread's own.
const JS_STACK: usize = 1 << 20;
pub(crate) const THREAD_STACK: usize = 8 << 20;

/// Starts the script on a thread of its own, its calls run in `runtime` (that of the call that
/// started it), which the host unparks to have it look at the stop flag; it always ends with a
/// [`ToHost::Done`] (unless the host went away first).
pub(crate) fn spawn(setup: Setup, runtime: tokio::runtime::Handle) -> std::io::Result<Wakeup> {
    let thread =
        std::thread::Builder::new().name("code-script".into()).stack_size(THREAD_STACK).spawn(move || {
            let _entered = runtime.enter();
            let to_host = setup.to_host.clone();
            let stop = setup.stop.clone();
            #[cfg(target_os = "linux")]
            let _ = stop.thread_id.set(rustix::thread::gettid());
            let finished = run(setup);
            stop.thread_ended();
            let _ = to_host.send(ToHost::Done(finished));
        })?;
    Ok(Wakeup::Thread(thread.thread().clone()))
}

/// Wakes the script's thread when one of its calls can go on.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// The intrinsics a script gets: the language and its data structures, no clock (`Date`,
/// `performance`).
type Intrinsics = (
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::WeakRef,
);

/// Runs the script to its end.
pub(crate) fn run(setup: Setup) -> Finished {
    let Ok(runtime) = Runtime::new() else {
        return Finished {
            error: Some("The script interpreter could not start.".into()),
            ..Finished::default()
        };
    };
    runtime.set_memory_limit(setup.limits.memory_bytes);
    runtime.set_max_stack_size(JS_STACK);
    let stop = setup.stop.clone();
    let deadline = setup.deadline;
    let look = setup.look.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        if let Some(look) = &look {
            look();
        }
        if stop.get().is_some() {
            return true;
        }
        if Instant::now() >= deadline {
            stop.stop(Stop::WallTime);
            return true;
        }
        false
    })));
    // A job that runs out of memory (a promise chain that grows for ever, say) rejects a
    // promise nobody handles, and the queue empties: that is the memory limit, not a script
    // waiting for nothing.
    let out_of_memory = setup.stop.clone();
    runtime.set_host_promise_rejection_tracker(Some(Box::new(move |_ctx, _promise, reason, handled| {
        if !handled && is_out_of_memory(&reason) {
            out_of_memory.stop(Stop::Memory);
        }
        // What QuickJS rejects with when it runs out of memory while making its error, and what
        // a script may reject with too: told apart once the script waits for nothing.
        if !handled && reason.is_null() {
            out_of_memory.rejected_with_null.store(true, Ordering::SeqCst);
        }
    })));
    let Ok(context) = Context::custom::<Intrinsics>(&runtime) else {
        return Finished {
            error: Some("The script interpreter could not start.".into()),
            ..Finished::default()
        };
    };
    let state = Rc::new(RefCell::new(State::new()));
    let error = drive(&runtime, &context, &state, &setup).err();
    if state.borrow().out_of_memory {
        setup.stop.stop(Stop::Memory);
    }
    // Calls the script started and did not wait for end with it; each hands back what it has
    // within the dispatcher's cancel grace.
    setup.calls_cancel.cancel();
    while !setup.stop.is_host_gone() {
        let mut calls = state.borrow_mut();
        calls.take_ended();
        if calls.running.is_empty() {
            break;
        }
        drop(calls);
        match &setup.wait {
            Some(wait) => wait(),
            None => std::thread::park(),
        }
    }
    state.borrow_mut().running.clear();
    let state = state.borrow();
    Finished { output: state.output.clone(), error, calls: state.calls }
}

/// Whether what QuickJS threw is its own out-of-memory error: an `InternalError` that says
/// exactly that (a script's error, or a tool's, that mentions memory is not one).
fn is_out_of_memory(thrown: &Value<'_>) -> bool {
    thrown.as_exception().is_some_and(|e| {
        e.get::<_, String>("name").is_ok_and(|name| name == "InternalError")
            && e.message().is_some_and(|message| message == "out of memory")
    })
}

/// Runs the jobs the script queued (its `await`s, its promises' reactions) until none is left or
/// it is stopped. They run outside the context, so that a job's own error is seen: a job that
/// runs out of memory may fail without rejecting any promise (where the allocation fails
/// decides), and the queue then empties as if the script were waiting for nothing.
fn run_jobs(runtime: &Runtime, setup: &Setup) {
    while setup.stop.get().is_none() {
        match runtime.execute_pending_job() {
            // Right after the job, what it allocated is still there: most of the memory limit
            // in use, the `null` was the interpreter's, out of memory.
            Ok(true) if setup.stop.rejected_with_null.swap(false, Ordering::SeqCst) => {
                let usage = runtime.memory_usage();
                if usage.malloc_size >= usage.malloc_limit / 2 {
                    setup.stop.stop(Stop::Memory);
                }
            }
            Ok(true) => {}
            Ok(false) => return,
            // A job's own error is not the script's (a promise reaction that throws rejects its
            // promise): it is the interpreter's, out of memory, which throws `null` when it
            // runs out while making its error.
            Err(job) => job.0.with(|ctx| {
                let thrown = ctx.catch();
                if is_out_of_memory(&thrown) || thrown.is_null() {
                    setup.stop.stop(Stop::Memory);
                }
            }),
        }
        // Checked between jobs too: a script that keeps queueing short jobs may never run long
        // enough in one of them for the interrupt handler to see its deadline.
        if Instant::now() >= setup.deadline {
            setup.stop.stop(Stop::WallTime);
        }
    }
}

/// The script's values kept between visits of its context: the promise its evaluation (then its
/// last value) resolves to, and the prelude's functions.
struct Kept {
    promise: Persistent<Promise<'static>>,
    settle: Persistent<Function<'static>>,
    show: Persistent<Function<'static>>,
    /// The script's final value, once its promise resolved to it.
    result: Option<Persistent<Value<'static>>>,
}

/// What the script's promise says.
enum Step {
    /// It ended (its final value written, or stopped).
    Ended,
    /// Its value was a promise, now the one to wait for.
    Again,
    /// It is pending.
    Pending,
}

/// Installs the globals, runs the script and waits for its tool calls until it ends.
fn drive(
    runtime: &Runtime,
    context: &Context,
    state: &Rc<RefCell<State>>,
    setup: &Setup,
) -> Result<(), String> {
    let mut kept = context.with(|ctx| Script::new(ctx, state).start(setup))?;
    // Evaluated with top-level await, the script resolves to `{ value }`, its completion value;
    // a completion value that is itself a promise (`tools.read({...})` as the last line, an
    // async function called last) is then waited for, and its value is the final one.
    let mut completion = true;
    loop {
        run_jobs(runtime, setup);
        if setup.stop.get().is_some() {
            return Ok(());
        }
        match context.with(|ctx| Script::new(ctx, state).step(&mut kept, &mut completion, setup))? {
            Step::Ended => return Ok(()),
            Step::Again => continue,
            Step::Pending => {}
        }
        if state.borrow().running.is_empty() && state.borrow().ended.is_empty() {
            return Err(STALLED.into());
        }
        let Some(ended) = wait_for_calls(state, setup) else { return Ok(()) };
        context.with(|ctx| {
            let mut script = Script::new(ctx.clone(), state);
            let settle = kept.settle.clone().restore(&ctx).map_err(|e| script.exception(e))?;
            for (id, result) in ended {
                script.receive(&settle, id, result)?;
            }
            Ok::<_, String>(())
        })?;
    }
}

/// Polls the script's calls until some have ended (every call that ended by then, so that they
/// are settled before the script runs again), parking the thread between polls; `None` when the
/// script is stopped meanwhile (its wall time included).
fn wait_for_calls(state: &Rc<RefCell<State>>, setup: &Setup) -> Option<Vec<(u64, Settled)>> {
    loop {
        // Stopped, the script looks no further (and a host that went away may have taken the
        // calls' timers with it).
        if setup.stop.get().is_some() {
            return None;
        }
        let ended = state.borrow_mut().take_ended();
        if !ended.is_empty() {
            return Some(ended);
        }
        let now = Instant::now();
        if now >= setup.deadline {
            setup.stop.stop(Stop::WallTime);
            return None;
        }
        match &setup.wait {
            Some(wait) => wait(),
            None => std::thread::park_timeout(setup.deadline - now),
        }
    }
}

/// One tool call of the script, with its number.
type Call = LocalBoxFuture<'static, (u64, Settled)>;

/// The script's state on its thread, shared with the functions the script calls.
struct State {
    output: String,
    /// Tool calls made.
    calls: u64,
    /// Tool calls still running.
    running: FuturesUnordered<Call>,
    /// Tool calls that ended and are not settled yet.
    ended: Vec<(u64, Settled)>,
    /// Wakes this thread when one of its calls can go on.
    waker: Waker,
    /// The interpreter ran out of memory (what it threw says so, or an allocation failed).
    out_of_memory: bool,
    /// The bytes of the arguments of each call not ended yet, and their sum: they are held
    /// outside the interpreter's memory (its limit does not count them) until the call ends.
    arguments: std::collections::HashMap<u64, usize>,
    argument_bytes: usize,
}

impl State {
    /// The state of a script on this thread.
    fn new() -> State {
        State {
            output: String::new(),
            calls: 0,
            running: FuturesUnordered::new(),
            ended: Vec::new(),
            waker: Waker::from(Arc::new(Unpark(std::thread::current()))),
            out_of_memory: false,
            arguments: std::collections::HashMap::new(),
            argument_bytes: 0,
        }
    }

    /// Starts `call` now, as a model's call starts when sent: the tool begins its work (takes
    /// its turn at the gate, in the order the script makes its calls; starts its command) while
    /// the script goes on.
    fn start(&mut self, mut call: Call) {
        match call.as_mut().poll(&mut std::task::Context::from_waker(&self.waker)) {
            Poll::Ready(ended) => self.ended.push(ended),
            Poll::Pending => self.running.push(call),
        }
    }

    /// The calls that ended since the last look.
    fn take_ended(&mut self) -> Vec<(u64, Settled)> {
        let mut cx = std::task::Context::from_waker(&self.waker);
        while let Poll::Ready(Some(call)) = self.running.poll_next_unpin(&mut cx) {
            self.ended.push(call);
        }
        // Their arguments are gone with them.
        for (id, _) in &self.ended {
            if let Some(bytes) = self.arguments.remove(id) {
                self.argument_bytes -= bytes;
            }
        }
        std::mem::take(&mut self.ended)
    }

    /// Appends `text` within the output limit; past it, what fits, and `false`.
    fn write(&mut self, text: &str, limit: usize) -> bool {
        let room = limit.saturating_sub(self.output.len());
        if text.len() <= room {
            self.output.push_str(text);
            return true;
        }
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.output.push_str(&text[..end]);
        false
    }
}

struct Script<'js> {
    ctx: Ctx<'js>,
    state: Rc<RefCell<State>>,
}

impl<'js> Script<'js> {
    fn new(ctx: Ctx<'js>, state: &Rc<RefCell<State>>) -> Self {
        Script { ctx, state: state.clone() }
    }

    /// Installs the globals and evaluates the script (its first jobs are queued).
    fn start(&mut self, setup: &Setup) -> Result<Kept, String> {
        let ctx = self.ctx.clone();
        let (settle, show) = self.install(setup).map_err(|e| self.exception(e))?;
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.promise = true;
        options.filename = Some(SCRIPT_FILE.into());
        let promise: Promise<'js> =
            ctx.eval_with_options(setup.source.as_bytes(), options).map_err(|e| self.exception(e))?;
        Ok(Kept {
            promise: Persistent::save(&ctx, promise),
            settle: Persistent::save(&ctx, settle),
            show: Persistent::save(&ctx, show),
            result: None,
        })
    }

    /// Looks at the script's promise: its final value written when it resolved and the calls
    /// it started ended (a call the script did not wait for still finishes, with what its
    /// reactions do, as a JavaScript runtime finishes its pending work before it exits), its
    /// error when it was rejected.
    fn step(&mut self, kept: &mut Kept, completion: &mut bool, setup: &Setup) -> Result<Step, String> {
        let ctx = self.ctx.clone();
        let promise = kept.promise.clone().restore(&ctx).map_err(|e| self.exception(e))?;
        match promise.state() {
            PromiseState::Resolved => {
                if kept.result.is_none() {
                    let mut value = promise
                        .result::<Value<'js>>()
                        .and_then(Result::ok)
                        .unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                    if std::mem::take(completion) {
                        if let Some(object) = value.as_object() {
                            value = object.get("value").unwrap_or_else(|_| Value::new_undefined(ctx.clone()));
                        }
                        if let Some(last) = value.as_promise() {
                            kept.promise = Persistent::save(&ctx, last.clone());
                            return Ok(Step::Again);
                        }
                    }
                    kept.result = Some(Persistent::save(&ctx, value));
                }
                let calls_running = {
                    let state = self.state.borrow();
                    !state.running.is_empty() || !state.ended.is_empty()
                };
                if calls_running {
                    return Ok(Step::Pending);
                }
                let value = kept.result.clone().map(|value| value.restore(&ctx)).transpose();
                let value = value
                    .map_err(|e| self.exception(e))?
                    .unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                let show = kept.show.clone().restore(&ctx).map_err(|e| self.exception(e))?;
                self.final_value(value, &show, setup)?;
                Ok(Step::Ended)
            }
            PromiseState::Rejected => {
                let error = match promise.result::<Value<'js>>() {
                    Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
                    _ => Value::new_undefined(ctx.clone()),
                };
                Err(self.describe_thrown(error))
            }
            PromiseState::Pending => Ok(Step::Pending),
        }
    }

    fn receive(&mut self, settle: &Function<'js>, id: u64, result: Settled) -> Result<(), String> {
        let ctx = &self.ctx;
        let outcome = match result {
            // The result object is made in the prelude, where its shape is a literal's.
            Settled::Ok { text, structured } => (|| {
                let structured = match structured {
                    Some(structured) => {
                        ctx.json_parse(serde_json::to_string(&structured).unwrap_or_default())?
                    }
                    None => Value::new_null(ctx.clone()),
                };
                settle.call::<_, ()>((id as f64, true, text, structured))
            })(),
            Settled::Err { tool, kind, message } => {
                settle.call::<_, ()>((id as f64, false, tool, kind, message))
            }
        };
        outcome.map_err(|e| self.exception(e))
    }

    /// Defines `tools`, `console`, `print` and `ToolError`; gives the function that settles a
    /// call, and the one that writes a value as `console.log` does (well-formed: a lone
    /// surrogate becomes U+FFFD).
    fn install(&mut self, setup: &Setup) -> rquickjs::Result<(Function<'js>, Function<'js>)> {
        let ctx = self.ctx.clone();
        let prelude = crate::prelude::load(&ctx)?;

        let state = self.state.clone();
        let start_call = setup.start_call.clone();
        let stop = setup.stop.clone();
        let limits = setup.limits;
        let host_call = Function::new(ctx.clone(), move |ctx: Ctx<'js>, tool: String, arguments: String| {
            // A script a limit stopped, that caught the error saying so, makes no more calls.
            if let Some(stopped) = stop.get() {
                return Err(Exception::throw_internal(&ctx, &stopped.message(&limits).to_string()));
            }
            let mut state = state.borrow_mut();
            if state.calls >= u64::from(limits.nested_calls) {
                stop.stop(Stop::NestedCalls);
                return Err(Exception::throw_internal(&ctx, &Stop::NestedCalls.message(&limits).to_string()));
            }
            // What calls not ended yet hold counts against the memory limit: what their
            // arguments take once parsed, checked before they are.
            let bytes = parsed_size(&arguments);
            if state.argument_bytes + bytes > limits.memory_bytes {
                return Err(Exception::throw_range(
                    &ctx,
                    &format!(
                        "tools.{tool}: the calls started and not ended yet hold {} of arguments, and this one {} \
                         more, past the script's memory limit ({}): await some of them before starting more, \
                         or pass less",
                        crate::limits::bytes(state.argument_bytes),
                        crate::limits::bytes(bytes),
                        crate::limits::bytes(limits.memory_bytes)
                    ),
                ));
            }
            let arguments: Json = serde_json::from_str(&arguments).map_err(|e| {
                Exception::throw_type(&ctx, &match half_character(&arguments) {
                    true => format!(
                        "the arguments of tools.{tool} hold half of a character (a lone UTF-16 surrogate, as \
                         slicing a string in the middle of an emoji leaves); cut strings with \
                         Array.from(text).slice(...), or call .toWellFormed() on them"
                    ),
                    false => format!("the arguments of tools.{tool}: {e}"),
                })
            })?;
            state.calls += 1;
            let id = state.calls;
            state.arguments.insert(id, bytes);
            state.argument_bytes += bytes;
            let call = start_call(id, tool, arguments);
            state.start(Box::pin(async move { (id, call.await) }));
            Ok(id as f64)
        })?;

        let state = self.state.clone();
        let stop = setup.stop.clone();
        let to_host = setup.to_host.clone();
        let printed = setup.printed.clone();
        let host_print = Function::new(ctx.clone(), move |ctx: Ctx<'js>, text: String| {
            if let Some(stopped) = stop.get() {
                return Err(Exception::throw_internal(&ctx, &stopped.message(&limits).to_string()));
            }
            let mut state = state.borrow_mut();
            let before = state.output.len();
            let fits = state.write(&text, limits.output_bytes) && state.write("\n", limits.output_bytes);
            // The host reads it as it comes: a call that yields returns what was printed so far.
            let _ = to_host.send(ToHost::Print(state.output[before..].to_owned()));
            drop(state);
            if let Some(printed) = &printed {
                printed();
            }
            if !fits {
                stop.stop(Stop::Output);
                return Err(Exception::throw_internal(&ctx, &Stop::Output.message(&limits).to_string()));
            }
            Ok(())
        })?;

        // Looked at by the prelude's loops between pieces of work done in built-in functions,
        // which the interrupt handler, consulted every so many instructions, would see too late.
        let stop = setup.stop.clone();
        let deadline = setup.deadline;
        let host_check = Function::new(ctx.clone(), move |ctx: Ctx<'js>| {
            if stop.get().is_none() && Instant::now() >= deadline {
                stop.stop(Stop::WallTime);
            }
            match stop.get() {
                Some(_) => Err(Exception::throw_internal(&ctx, "interrupted")),
                None => Ok(()),
            }
        })?;

        let search = setup.search.clone();
        let has_search = search.is_some();
        let host_search =
            Function::new(ctx.clone(), move |ctx: Ctx<'js>, query: String, limit: Option<f64>| {
                let found = Array::new(ctx.clone())?;
                let Some(search) = &search else { return Ok::<_, rquickjs::Error>(found) };
                for (i, (name, declaration)) in search(query, limit).into_iter().enumerate() {
                    let entry = Object::new(ctx.clone())?;
                    entry.set("name", name)?;
                    entry.set("declaration", declaration)?;
                    found.set(i, entry)?;
                }
                Ok(found)
            })?;

        let names = setup.tools.clone().into_js(&ctx)?;
        // No dense array of the script's memory is longer than this (an element takes 8 bytes or
        // more), and a loop in C over this many holes takes about a second: longer lengths are
        // refused by the array methods.
        let longest = (setup.limits.memory_bytes / 8).max(1 << 24) as f64;
        let functions: Array<'js> =
            prelude.call((host_call, host_print, host_search, names, has_search, longest, host_check))?;
        Ok((functions.get(0)?, functions.get(1)?))
    }

    /// The script's final value, printed after its output (nothing for `undefined`) as
    /// `console.log` prints a value (`show`: JSON, or what the value is when JSON cannot write
    /// it), well-formed.
    fn final_value(&mut self, value: Value<'js>, show: &Function<'js>, setup: &Setup) -> Result<(), String> {
        if value.is_undefined() {
            return Ok(());
        }
        let text = match value.as_string().map(|text| text.to_string()) {
            Some(Ok(text)) => text,
            _ => show.call::<_, String>((value,)).map_err(|e| self.exception(e))?,
        };
        if !self.state.borrow_mut().write(&text, setup.limits.output_bytes) {
            setup.stop.stop(Stop::Output);
        }
        Ok(())
    }

    /// An error of the interpreter, with the exception it raised.
    fn exception(&self, error: rquickjs::Error) -> String {
        match error {
            rquickjs::Error::Exception => {
                let thrown = self.ctx.catch();
                self.describe_thrown(thrown)
            }
            rquickjs::Error::Allocation => {
                self.state.borrow_mut().out_of_memory = true;
                "out of memory".into()
            }
            other => other.to_string(),
        }
    }

    /// What the script threw, as the model reads it: `Name: message` and the frames of the
    /// script's stack (the prelude's own frames, where a tool's error is made, say nothing the
    /// model can act on).
    fn describe_thrown(&self, thrown: Value<'js>) -> String {
        bounded(self.describe_whole(thrown))
    }

    fn describe_whole(&self, thrown: Value<'js>) -> String {
        if is_out_of_memory(&thrown) {
            self.state.borrow_mut().out_of_memory = true;
        }
        // QuickJS throws `null` when it runs out of memory while making its error; a script
        // may throw it too, and which it was cannot be told.
        if thrown.is_null() {
            return "null was thrown: the script threw it, or it ran out of memory (its memory limit) while \
                    an error was made; if it keeps more than it needs, keep less"
                .into();
        }
        if let Some(exception) = thrown.as_exception() {
            let name: String = exception.get("name").unwrap_or_else(|_| "Error".into());
            let message = exception.message().unwrap_or_default();
            let mut text = format!("{name}: {message}");
            // A tool's error names the tool and its kind: the script's frames cannot say which
            // call it was.
            if name == "ToolError"
                && let (Ok(tool), Ok(kind)) =
                    (exception.get::<_, String>("tool"), exception.get::<_, String>("kind"))
            {
                text = format!("{name} from `{tool}` ({kind}): {message}");
            }
            let stack = exception.stack().unwrap_or_default();
            for frame in stack.lines().filter(|frame| frame.contains(SCRIPT_FILE)) {
                text.push('\n');
                text.push_str(frame);
            }
            return text;
        }
        if let Some(text) = thrown.as_string().and_then(|s| s.to_string().ok()) {
            return text;
        }
        match self.ctx.json_stringify(thrown) {
            Ok(Some(text)) => text.to_string().unwrap_or_default(),
            _ => "a value that is not an error".into(),
        }
    }
}

/// About how many bytes the host holds for `json` once parsed: its text, and for each object,
/// array and value in it what a parsed one takes beside its text (a map's table and entries, a
/// value's slot). `{"":0}` is 7 bytes of text and a few hundred parsed; a script that repeats
/// one small object a million times in its arguments (an array of the same array, which costs
/// it nothing) must not have the host build each. A single pass that skips strings; the
/// figures are above the parsed sizes of `serde_json`'s values on 64-bit targets with
/// `preserve_order` (a value is 72 bytes, an entry 104, a map of one entry about 470).
fn parsed_size(json: &str) -> usize {
    /// An object: its map (the entries' vector, of four at first, and its index table).
    const OBJECT: usize = 512;
    /// Any value: its slot in its array or map entry, with a map entry's key and hash.
    const VALUE: usize = 128;
    let mut size = json.len();
    let mut in_string = false;
    let mut escaped = false;
    for byte in json.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        size += match byte {
            b'"' => {
                in_string = true;
                0
            }
            b'{' => OBJECT + VALUE,
            b'[' | b',' => VALUE,
            _ => 0,
        };
    }
    size
}

/// How much of what a script threw is kept: its start and its end, as the result's truncation
/// would keep them, without the host copying and storing all of a string of megabytes.
const THROWN_KEPT: usize = 16 * 1024;

/// `text` cut in its middle to [`THROWN_KEPT`] bytes by the framework's truncation, which says
/// how much went.
fn bounded(text: String) -> String {
    let limits = TruncationLimits::new(usize::MAX, THROWN_KEPT, TruncationDirection::Middle);
    let cut = truncate_text(&text, &limits);
    if !cut.is_truncated() {
        return text;
    }
    cut.text.into_owned()
}

/// Whether `json`, as `JSON.stringify` writes it, holds half of a character: the escape of a
/// lone surrogate (`\ud800` with no `\udc00`-`\udfff` after it, or such a low one alone),
/// which JSON can spell but UTF-8 cannot hold.
fn half_character(json: &str) -> bool {
    let escape = |at: usize| -> Option<u16> {
        let hex = json.get(at + 2..at + 6)?;
        (json.get(at..at + 2)? == "\\u").then(|| u16::from_str_radix(hex, 16).ok()).flatten()
    };
    let bytes = json.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        match escape(at) {
            Some(0xd800..=0xdbff) => {
                if !escape(at + 6).is_some_and(|low| (0xdc00..=0xdfff).contains(&low)) {
                    return true;
                }
                at += 12;
            }
            Some(0xdc00..=0xdfff) => return true,
            Some(_) => at += 6,
            // Another escape (`\\`, `\"`, `\n`): two characters.
            None => at += 2,
        }
    }
    false
}

/// The file name the script's frames carry in its errors' stacks.
const SCRIPT_FILE: &str = "script.js";

#[cfg(test)]
mod tests {
    use super::{bounded, half_character, parsed_size};

    /// What a parsed argument takes is counted from its text: a repeated small object costs what
    /// each copy costs the host, however little text it is.
    #[test]
    fn the_parsed_size_of_arguments_counts_each_object_and_value() {
        assert_eq!(parsed_size(r#""a, {[b]} \" , ""#), 16);
        let small = r#"{"path":"a.txt","content":"x"}"#;
        assert!(parsed_size(small) < 1024, "{}", parsed_size(small));
        // A big string costs its bytes.
        let text = format!(r#"{{"content":"{}"}}"#, "x".repeat(1 << 20));
        assert!(parsed_size(&text) < (1 << 20) + 1024);
        // A million `{"":0}` in 7 MB of text cost hundreds of MB parsed.
        let many = format!("[{}]", vec![r#"{"":0}"#; 1_000_000].join(","));
        assert!(parsed_size(&many) > 500 << 20, "{}", parsed_size(&many));
    }

    #[test]
    fn a_long_error_keeps_its_start_and_end() {
        let text = format!("Error: {}é{}", "a".repeat(20_000), "z".repeat(20_000));
        let cut = bounded(text.clone());
        assert!(cut.len() < 17_000 && cut.starts_with("Error: aaa") && cut.ends_with("zzz"), "{}", cut.len());
        assert!(cut.contains(" bytes cut ...]"), "{}", cut.len());
        assert_eq!(bounded("short".into()), "short");
    }

    #[test]
    fn a_parsed_value_is_as_big_as_counted() {
        assert_eq!(std::mem::size_of::<serde_json::Value>(), 72, "the figures of parsed_size assume it");
    }

    #[test]
    fn half_characters_are_found_in_json_text() {
        for json in [r#"{"a":"\ud800"}"#, r#"{"a":"x\uDC00"}"#, r#"{"\udbff":1}"#, r#"["\ud800\u0041"]"#] {
            assert!(half_character(json), "{json}");
        }
        for json in [r#"{"a":"\ud83d\ude00"}"#, r#"{"a":"\\ud800"}"#, r#"{"a":"\u00e9\n"}"#, "{}"] {
            assert!(!half_character(json), "{json}");
        }
    }
}
