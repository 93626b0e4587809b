//! The script tool: runs a model's script on the interpreter's thread and each of its tool
//! calls through the dispatcher running the script, as a model's call.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::unbounded_channel;
use tool_core::{
    BoxFuture, CancellationToken, Dispatcher, ErrorKind, Freeform, Registry, RegistryError, Tool,
    ToolAnnotations, ToolCall, ToolContext, ToolError, ToolOutput, ToolResult, ToolSpec, TruncationDirection,
    TruncationPolicy,
};
use tool_providers::catalog::{Catalog, UnknownTool};

use crate::engine::{self, Finished, Settled, Setup, StopFlag, ToHost, Wakeup};
use crate::held::{Held, OnCancel, Running, SessionScripts, Waited};
use crate::limits::{Limits, Stop};
use crate::worker::{WorkerCommand, Workers};
use crate::{companions, describe};

/// The script tool's name, unless [`CodeTool::with_name`] gives another.
pub const NAME: &str = "code";

/// The tool that runs a model's JavaScript with every tool of a registry on `tools`.
///
/// Each tool call of the script goes through the dispatcher that runs the script
/// ([`Dispatcher::nested`]): validation, permission rules and the asker, before- and after-hooks,
/// time limits, cancellation, events, truncation and the repeat guard apply as they do to a
/// model's calls, and `Promise.all` over `parallel` tools runs them at once while other tools
/// run one at a time, in the order the script made the calls (as a model turn's calls take the
/// gate in the model's order). A nested call's id is the script call's id, a dot and its number in the
/// script (`call_7.1`, `call_7.2`, ...), so the events of the host show which script made it.
///
/// The tool is exclusive (not `parallel`): its calls take turns with the model's other calls.
///
/// A script still running at its [yield time](Limits::yield_time) goes on in the background:
/// the call returns what it printed so far and the script's id, `code_output` (registered with
/// this tool, see [`CodeTool::beside_its_tools`]) returns what it prints next and its end, and
/// `code_stop` stops it (neither takes a turn at the gate, so neither waits behind the calls the
/// script keeps waiting). Each exclusive call it starts from then on takes turns with the
/// model's exclusive calls too ([`Dispatcher::detach`]): an edit of the script's waits for the
/// model's and the other way round; a call running when it went to the background goes on, as
/// a command does. Its wall time still bounds it. A session holds at most 4 such scripts, ended
/// ones whose end nobody read among them for 10 minutes (past that, a script call is refused
/// before it starts), and all sessions together 32 still running (past that, a call waits for
/// its script's end).
pub struct CodeTool {
    spec: ToolSpec,
    tools: Arc<Registry>,
    names: Arc<Vec<String>>,
    catalog: Option<Catalog>,
    limits: Limits,
    held: Arc<Held>,
    /// Where each script's interpreter runs: a process of this program's, or (`None`) a thread.
    worker: Option<Arc<Workers>>,
}

impl fmt::Debug for CodeTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeTool")
            .field("name", &self.spec.name)
            .field("tools", &self.names.len())
            .field("limits", &self.limits)
            .field("worker", &self.worker.as_ref().map(|workers| workers.command()))
            .finish_non_exhaustive()
    }
}

impl CodeTool {
    /// The script tool over the tools of `tools`, with the default [`Limits`].
    pub fn new(tools: impl Into<Arc<Registry>>) -> CodeTool {
        let tools = tools.into();
        let names = Arc::new(tools.names().map(str::to_owned).collect());
        let catalog = Catalog::new(tools.clone());
        let catalog = catalog.has_deferred().then_some(catalog);
        let mut tool = CodeTool {
            spec: ToolSpec::new(NAME, String::new(), Value::Null),
            tools,
            names,
            catalog,
            limits: Limits::default(),
            held: Arc::default(),
            worker: None,
        };
        tool.spec = tool.make_spec(NAME);
        tool
    }

    /// This tool with each script's interpreter in a process of its own, started from `worker`
    /// (a program that calls [`serve_worker`](crate::serve_worker)), which the host kills when
    /// the script is stopped and does not end at once: a script inside a built-in function that
    /// loops in C without looking at its limits (BigInt arithmetic on huge numbers, say) is
    /// stopped at its wall time as any other, and leaves nothing running. Without it, each
    /// interpreter runs on a thread of this process, which such a script keeps busy until the
    /// function returns (see [the chapter](crate#the-engine-and-its-limits)).
    pub fn in_worker(mut self, worker: WorkerCommand) -> CodeTool {
        self.worker = Some(Arc::new(Workers::new(worker)));
        self
    }

    /// This tool with other limits.
    pub fn with_limits(mut self, limits: Limits) -> CodeTool {
        self.limits = limits;
        self.spec = self.make_spec(&self.spec.name.clone());
        self
    }

    /// Leaves the named tools out of the description too, as deferred ones are: a script finds
    /// them with `tools.tool_search({query})` (a provider catalog's `defer` for the tools a
    /// script calls); a name that is no tool of the registry is an error.
    pub fn defer<I, S>(self, names: I) -> Result<CodeTool, UnknownTool>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.with_catalog(|catalog| catalog.defer(names))
    }

    /// Leaves every tool out of the description: a script finds each with `tools.tool_search`.
    pub fn defer_all(self) -> CodeTool {
        let Ok(tool) = self.with_catalog(|catalog| Ok::<_, std::convert::Infallible>(catalog.defer_all()));
        tool
    }

    /// This tool with its catalog of deferred tools changed by `change`, and its description
    /// made again.
    fn with_catalog<E>(mut self, change: impl FnOnce(Catalog) -> Result<Catalog, E>) -> Result<CodeTool, E> {
        let catalog = self.catalog.take().unwrap_or_else(|| Catalog::new(self.tools.clone()));
        let catalog = change(catalog)?;
        self.catalog = catalog.has_deferred().then_some(catalog);
        self.spec = self.make_spec(&self.spec.name.clone());
        Ok(self)
    }

    /// This tool under another name.
    pub fn with_name(mut self, name: impl Into<String>) -> CodeTool {
        self.spec = self.make_spec(&name.into());
        self
    }

    /// The limits of each script.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The registry whose tools the scripts call.
    pub fn tools(&self) -> &Arc<Registry> {
        &self.tools
    }

    /// A registry of the tools the scripts call and this tool beside them, with `code_output`
    /// and `code_stop` for scripts that run on past their yield time (with the same validation
    /// options).
    pub fn beside_its_tools(self) -> Result<Registry, RegistryError> {
        let tools = self.tools.clone();
        let builder =
            Registry::builder().validation(tools.validation_options()).tools(tools.tools().cloned());
        self.with_companions(builder).build()
    }

    /// A registry of this tool alone (with `code_output` and `code_stop`): the model reaches
    /// the other tools only from a script.
    pub fn alone(self) -> Result<Registry, RegistryError> {
        let options = self.tools.validation_options();
        self.with_companions(Registry::builder().validation(options)).build()
    }

    /// `builder` with this tool, and with `code_output` and `code_stop` where scripts may yield.
    fn with_companions(self, builder: tool_core::RegistryBuilder) -> tool_core::RegistryBuilder {
        match self.limits.yield_time {
            Some(_) => {
                let (output, stop) = companions::pair(&self.spec.name, self.held.clone(), self.limits);
                builder.tool(self).tool(output).tool(stop)
            }
            None => builder.tool(self),
        }
    }

    fn make_spec(&self, name: &str) -> ToolSpec {
        let deferred = self.catalog.as_ref().map_or(0, |catalog| catalog.tools().filter(|(_, d)| *d).count());
        let listed = self
            .tools
            .specs()
            .filter(|spec| !self.catalog.as_ref().is_some_and(|c| c.is_deferred(&spec.name)));
        let mut description = describe::description(listed, deferred, &self.limits);
        if let Some(after) = self.limits.yield_time {
            description.push_str(&format!(
                "\nA script still running after {} s goes on in the background: the call returns what it \
                 printed so far and the script's id; {name}_output returns what it prints next and its end, \
                 {name}_stop stops it.\n",
                after.as_secs_f64()
            ));
        }
        let schema = json!({
            "type": "object",
            "properties": {
                "script": {
                    "type": "string",
                    "description": "The JavaScript program to run (top-level await works). What it prints with \
                                    console.log and its last expression's value are the result.",
                },
            },
            "required": ["script"],
            "additionalProperties": false,
        });
        ToolSpec::new(name, description, schema)
            .with_freeform(Freeform::new("script"))
            .with_truncation(BOTH_ENDS)
            .with_annotations(ToolAnnotations {
                title: Some("Run a script that calls tools".into()),
                open_world: true,
                ..ToolAnnotations::default()
            })
    }

    /// Runs `script` with this tool's limits, its calls through the dispatcher that runs this
    /// call (under its id and options), until it ends, a limit stops it, the call is cancelled,
    /// or its yield time passes (then it runs on, held for `code_output`).
    async fn run(&self, ctx: ToolContext, script: String) -> Result<ToolOutput, ToolError> {
        let Some(dispatcher) = ctx.dispatcher() else {
            return Err(ToolError::execution(
                "The script tool runs its tool calls through the dispatcher that runs it, and none runs this \
                 call; call it through a dispatcher.",
            ));
        };
        let limits = self.limits;
        if self.worker.is_none() && crate::engine::stuck() >= MAX_STUCK {
            return Err(ToolError::execution(format!(
                "No script runs now: {MAX_STUCK} earlier scripts are still running inside a built-in function \
                 that does not look at their limits, each keeping a core busy when it is idle, until they end or \
                 this program is restarted. Use the other tools."
            )));
        }
        // A script that could not be held once past its yield time would keep its call, and the
        // session's calls to read or stop the others would wait behind it: refused before it starts.
        if limits.yield_time.is_some() {
            self.held.room(ctx.session_id(), &self.spec.name).map_err(ToolError::execution)?;
        }
        let running = Arc::new(Running::new(limits.wall_time));
        let nested = dispatcher.nested(self.tools.clone());
        let driver = Driver {
            nested: nested.clone(),
            options: ctx.nested_call_options(),
            parent: ctx.call_id().to_owned(),
            limits,
            running: running.clone(),
            calls: Arc::default(),
        };
        let Channels { engine, from_script, stop } =
            driver.setup(script, self.names.as_ref().clone(), self.catalog.clone().map(searcher));
        let interpreter = match &self.worker {
            Some(worker) => crate::worker::spawn(engine, worker),
            None => engine::spawn(engine, tokio::runtime::Handle::current()),
        };
        let interpreter = interpreter.map_err(|e| {
            ToolError::execution("The script interpreter could not start; try again.").with_source(e)
        })?;
        stop.runs_on(interpreter.clone());
        // Stops the script when this call ends before the script is held, however it ends (its
        // future dropped too).
        let mut unheld = StopUnlessHeld { running: Some(running.clone()) };
        tokio::spawn(driver.drive(from_script, interpreter, stop));

        let cancel = ctx.cancellation_token();
        let yield_at =
            limits.yield_time.map(|after| running.started + after).filter(|at| *at < running.deadline);
        let waited = match running.wait(yield_at, cancel, OnCancel::StopScript).await {
            Waited::Running { unread } => match self.held.hold(ctx.session_id(), running.clone()) {
                Some(id) => {
                    // From now on its calls take turns with the model's, this call no longer
                    // keeping the model's other calls waiting.
                    nested.detach();
                    unheld.running = None;
                    ctx.session()
                        .get_or_insert_with(|| SessionScripts::new(ctx.session_id()))
                        .watch(&self.held);
                    return Ok(yielded(unread, &id, &running, &self.spec.name));
                }
                // As many scripts as may be were held since it started (another session's): this
                // one's call waits for its end.
                None => {
                    let rest = running.wait(None, cancel, OnCancel::StopScript).await;
                    prepend(unread, rest)
                }
            },
            ended => ended,
        };
        Ok(result(at_the_calls_time_limit(waited, &ctx), &limits, false))
    }
}

/// What runs a script's calls and follows its end, in a task of its own: it outlives the call
/// that started the script when that call yields.
struct Driver {
    nested: Dispatcher,
    options: tool_core::CallOptions,
    parent: String,
    limits: Limits,
    running: Arc<Running>,
    calls: Arc<Calls>,
}

/// A script's tool calls, polled by its interpreter's thread, each also held here so that the
/// host can drop it when it gives up on an interpreter that no longer polls them (stuck inside a
/// built-in function): a call dropped is cancelled, its command killed, its turn at the gate
/// given back.
#[derive(Default)]
struct Calls {
    held: std::sync::Mutex<Vec<std::sync::Weak<CallSlot>>>,
    dropped: std::sync::atomic::AtomicBool,
}

/// One call of a script: its future until it ends, or the host drops it.
type CallSlot = std::sync::Mutex<Option<futures_util::future::BoxFuture<'static, Settled>>>;

impl Calls {
    /// `call`, held here, as the future the interpreter polls.
    fn hold(
        self: &Arc<Self>,
        call: futures_util::future::BoxFuture<'static, Settled>,
    ) -> futures_util::future::BoxFuture<'static, Settled> {
        let slot: Arc<CallSlot> = Arc::new(std::sync::Mutex::new(Some(call)));
        {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            held.retain(|call| call.strong_count() > 0);
            held.push(Arc::downgrade(&slot));
        }
        if self.dropped.load(std::sync::atomic::Ordering::SeqCst) {
            let call = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            drop(call);
        }
        Box::pin(std::future::poll_fn(move |cx| {
            let mut call = slot.lock().unwrap_or_else(|p| p.into_inner());
            let Some(running) = call.as_mut() else {
                return std::task::Poll::Ready(Settled::Err {
                    tool: String::new(),
                    kind: ErrorKind::Cancelled.as_str().to_owned(),
                    message: "The call was stopped: the host gave up on the script.".to_owned(),
                });
            };
            let polled = running.as_mut().poll(cx);
            if polled.is_ready() {
                *call = None;
            }
            polled
        }))
    }

    /// Drops every call still running, and any the interpreter starts from now on.
    fn drop_all(&self) {
        self.dropped.store(true, std::sync::atomic::Ordering::SeqCst);
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(|p| p.into_inner()));
        for slot in held.iter().filter_map(std::sync::Weak::upgrade) {
            let call = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            drop(call);
        }
    }
}

/// What the interpreter's thread and the driver share.
struct Channels {
    engine: Setup,
    from_script: tokio::sync::mpsc::UnboundedReceiver<ToHost>,
    stop: Arc<StopFlag>,
}

impl Driver {
    /// The interpreter's setup: each call of the script goes through the dispatcher that runs
    /// the script, as a model's call, under this call's id and options, at most
    /// `concurrent_calls` at a time, and is stopped by `calls_cancel` (when the script ends, or
    /// is stopped).
    fn setup(&self, source: String, tools: Vec<String>, search: Option<engine::Search>) -> Channels {
        let stop = self.running.flag.clone();
        let (to_host, from_script) = unbounded_channel();
        let calls_cancel = self.running.stop.child_token();
        let permits = Arc::new(Semaphore::new(self.limits.concurrent_calls.max(1)));
        let (nested, options, parent, cancel) =
            (self.nested.clone(), self.options.clone(), self.parent.clone(), calls_cancel.clone());
        let (running, calls) = (self.running.clone(), self.calls.clone());
        let start_call: engine::StartCall = Arc::new(move |id, tool, arguments| {
            let call = ToolCall::new(format!("{parent}.{id}"), tool, arguments);
            let task = nested_call(nested.clone(), call, options.clone(), cancel.clone(), permits.clone());
            let running = running.clone();
            calls.hold(Box::pin(async move { settled(task.await, &running) }))
        });
        let engine = Setup {
            source,
            tools,
            search,
            limits: self.limits,
            deadline: self.running.deadline,
            stop: stop.clone(),
            to_host,
            start_call,
            calls_cancel,
            wait: None,
            look: None,
            printed: None,
        };
        Channels { engine, from_script, stop }
    }

    /// How long an interpreter told to stop may take to end: its calls' cancel grace, and more.
    fn stop_grace(&self) -> Duration {
        STOP_GRACE + self.nested.cancel_grace()
    }

    /// Follows the script: passes on what it prints, stops it when [`Running::stop`] fires or
    /// its wall time runs out, and records its end (which comes once its calls ended too).
    async fn drive(
        self,
        mut from_script: tokio::sync::mpsc::UnboundedReceiver<ToHost>,
        interpreter: Wakeup,
        stop: Arc<StopFlag>,
    ) {
        // Stops the interpreter when the driver is dropped before the script ended.
        let mut stopper = StopOnDrop { stop: stop.clone(), interpreter, ended: false };
        let cancel = self.running.stop.clone();
        let limit_reached = tokio::time::sleep_until(self.running.deadline.into());
        tokio::pin!(limit_reached);
        // Told to stop, an interpreter ends within its calls' cancel grace, unless a built-in
        // function it is in never looks at the interrupt handler: then the host stops waiting.
        let given_up = tokio::time::sleep(Duration::MAX);
        tokio::pin!(given_up);
        let mut stopping = false;
        let finished = loop {
            tokio::select! {
                biased;
                message = from_script.recv() => match message {
                    Some(ToHost::Print(text)) => self.running.print(&text),
                    Some(ToHost::Done(finished)) => break finished,
                    None => break Finished {
                        error: Some("The script interpreter stopped unexpectedly.".into()),
                        ..Finished::default()
                    },
                },
                () = cancel.cancelled(), if !stopping => {
                    stopping = true;
                    stopper.stop(Stop::Cancelled);
                    given_up.as_mut().reset((Instant::now() + self.stop_grace()).into());
                }
                () = &mut limit_reached, if !stopping => {
                    stopping = true;
                    stopper.stop(Stop::WallTime);
                    given_up.as_mut().reset((Instant::now() + self.stop_grace()).into());
                }
                () = &mut given_up, if stopping => {
                    if !stop.give_up() {
                        // Its thread ended just now: its end is on its way.
                        given_up.as_mut().reset((Instant::now() + Duration::from_secs(3600)).into());
                        continue;
                    }
                    // Nothing polls its calls any more: they are dropped here, which ends them.
                    self.calls.drop_all();
                    let mut output = self.running.printed();
                    if !output.is_empty() && !output.ends_with('\n') {
                        output.push('\n');
                    }
                    let stuck = match crate::engine::stuck() {
                        1 => "1 interpreter of this process is".to_owned(),
                        n => format!("{n} interpreters of this process are"),
                    };
                    output.push_str(&format!(
                        "[The script's interpreter did not stop: it is inside a built-in function that does not \
                         look at its limits (a generic array method over a huge length, say), and runs on; its \
                         tool calls were stopped. Avoid that call. ({stuck} in that state; at {MAX_STUCK}, no \
                         script starts.)]"
                    ));
                    break Finished { output, error: None, calls: 0 };
                }
            }
        };
        stopper.ended = true;
        self.running.end(finished, stop.get());
    }
}

/// `waited` with its stop named for the call's time limit when that is what stopped it: the
/// call's token fired at or after its deadline (before it, the caller cancelled).
fn at_the_calls_time_limit(waited: Waited, ctx: &ToolContext) -> Waited {
    match waited {
        Waited::Ended { unread, error, calls, stop: Some(Stop::Cancelled) }
            if ctx.deadline().is_some_and(|deadline| Instant::now() >= deadline) =>
        {
            Waited::Ended { unread, error, calls, stop: Some(Stop::CallTimeLimit) }
        }
        other => other,
    }
}

/// How much longer than its calls' cancel grace an interpreter told to stop may take to end.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How many interpreters the host gave up on may run on (each at the lowest priority) before
/// no script starts.
const MAX_STUCK: usize = 4;

/// Stops a script whose call ends before the script is held, however it ends: the script
/// ended, or the call's future was dropped ([`Running::abandon`]).
struct StopUnlessHeld {
    running: Option<Arc<Running>>,
}

impl Drop for StopUnlessHeld {
    fn drop(&mut self) {
        if let Some(running) = &self.running {
            running.abandon();
        }
    }
}

/// How a script's result is cut when it is too long: its middle goes, so that both what it
/// printed first and its end (its final value, or why it failed) reach the model.
pub(crate) const BOTH_ENDS: TruncationPolicy =
    TruncationPolicy { direction: Some(TruncationDirection::Middle), ..TruncationPolicy::DEFAULT };

/// A script's result, once it ended: what it printed that the model has not read, its final
/// value, then why it failed; or, `Waited::Running`, what it printed since the last read.
/// `resumed`: an earlier call returned the start of its output.
pub(crate) fn result(waited: Waited, limits: &Limits, resumed: bool) -> ToolOutput {
    let Waited::Ended { unread: mut output, error, calls, stop } = waited else {
        let Waited::Running { unread } = waited else { unreachable!("matched above") };
        return ToolOutput::text(unread);
    };
    let failure = match (stop, error) {
        (Some(stop), _) => Some((stop.message(limits).to_string(), kind_of(stop))),
        (None, Some(error)) => Some((format!("The script failed: {error}"), ErrorKind::Execution)),
        (None, None) => None,
    };
    let is_error = failure.is_some();
    let error_kind = failure.as_ref().map(|(_, kind)| *kind);
    if let Some((message, _)) = failure {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&message);
    } else if output.is_empty() {
        output.push_str(match resumed {
            false => "(The script printed nothing and its last expression had no value.)",
            true => "(The script ended; it printed nothing more and its last expression had no value.)",
        });
    }
    let mut result = ToolOutput::text(output).with_metadata("nested_calls", Value::from(calls));
    result.is_error = is_error;
    if let Some(kind) = error_kind {
        result = result.with_metadata("error_kind", Value::from(kind.as_str()));
    }
    result
}

/// The result of a call whose script runs on as `id`: what it printed so far, and how to go on.
pub(crate) fn yielded(unread: String, id: &str, running: &Running, tool: &str) -> ToolOutput {
    let mut text = unread;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let ran = running.started.elapsed().as_secs();
    let left = running.deadline.saturating_duration_since(Instant::now()).as_secs();
    text.push_str(&format!(
        "[The script is still running as `{id}` after {ran} s ({left} s left of its time limit). Call \
         {tool}_output with {{\"id\": \"{id}\"}} to read what it prints next and its end, or {tool}_stop to stop \
         it.]"
    ));
    ToolOutput::text(text).with_metadata("script_id", Value::from(id))
}

/// `rest` with `unread` before its own unread output.
pub(crate) fn prepend(unread: String, rest: Waited) -> Waited {
    match rest {
        Waited::Ended { unread: more, error, calls, stop } => {
            Waited::Ended { unread: unread + &more, error, calls, stop }
        }
        Waited::Running { unread: more } => Waited::Running { unread: unread + &more },
    }
}

fn kind_of(stop: Stop) -> ErrorKind {
    match stop {
        Stop::WallTime => ErrorKind::Timeout,
        Stop::Cancelled => ErrorKind::Cancelled,
        Stop::CallTimeLimit => ErrorKind::Timeout,
        Stop::Memory | Stop::NestedCalls | Stop::Output => ErrorKind::Execution,
    }
}

/// One tool call of the script, run as a model's call once a permit is free.
async fn nested_call(
    dispatcher: Dispatcher,
    call: ToolCall,
    options: tool_core::CallOptions,
    cancel: CancellationToken,
    permits: Arc<Semaphore>,
) -> ToolResult {
    let permit = tokio::select! {
        biased;
        permit = permits.acquire_owned() => permit.ok(),
        () = cancel.cancelled() => None,
    };
    // Stopped while it waited for its turn: the script ended, and nobody reads what the call
    // would answer (its arguments are not even validated).
    if permit.is_none() {
        let output = ToolOutput::error("The call was not made: the script stopped first.")
            .with_metadata("error_kind", Value::from(ErrorKind::Cancelled.as_str()));
        return ToolResult { call_id: call.id, tool: call.name, output, freeform: false };
    }
    let result = dispatcher.run_with(call, options, cancel).await;
    drop(permit);
    result
}

/// The search of `catalog`'s deferred tools a script's `tools.tool_search` makes.
fn searcher(catalog: Catalog) -> engine::Search {
    Arc::new(move |query, limit| {
        let mut request = tool_providers::catalog::SearchRequest::new(query);
        if let Some(limit) = limit {
            request.limit = (limit.max(1.0) as usize).min(tool_providers::catalog::MAX_LIMIT);
        }
        let found = catalog.search(&request).into_iter();
        found.map(|spec| (spec.name.clone(), describe::declaration(spec))).collect()
    })
}

/// How a call ended, as the script sees it: its result, or an error it throws. What hooks and
/// checks said to the model about it goes to the model too.
fn settled(result: ToolResult, running: &Running) -> Settled {
    let ToolResult { call_id, tool, output, .. } = result;
    for notice in output.notices() {
        running.notice(&tool, &call_id, notice);
    }
    if output.is_error {
        let kind =
            output.metadata.get("error_kind").and_then(Value::as_str).unwrap_or("execution").to_owned();
        return Settled::Err { tool, kind, message: output.text_content() };
    }
    let text = output.text_content();
    Settled::Ok { text, structured: output.structured }
}

/// Stops the interpreter (and so its calls), and wakes it if it waits for them. Dropped before
/// the script ended (the driver's task dropped with its runtime), it tells the interpreter the
/// host is gone.
struct StopOnDrop {
    stop: Arc<StopFlag>,
    interpreter: Wakeup,
    ended: bool,
}

impl StopOnDrop {
    fn stop(&self, stop: Stop) {
        self.stop.stop(stop);
        self.interpreter.wake();
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !self.ended {
            self.stop.host_gone();
        }
    }
}

impl Tool for CodeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, ctx: ToolContext, args: Value) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let script = match args {
                Value::Object(mut map) => match map.remove("script") {
                    Some(Value::String(script)) => script,
                    _ => return Err(ToolError::invalid_arguments("`script` must be the program's text")),
                },
                _ => {
                    return Err(ToolError::invalid_arguments(
                        "the arguments must be an object with `script`",
                    ));
                }
            };
            self.run(ctx, script).await
        })
    }
}
