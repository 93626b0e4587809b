//! The script tool: runs a model's script on the interpreter's thread and each of its tool
//! calls through the dispatcher running the script, as a model's call.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::unbounded_channel;
use tool_core::{
    BoxFuture, CancellationToken, Dispatcher, ErrorKind, Freeform, Registry, RegistryError, Tool,
    ToolAnnotations, ToolCall, ToolContext, ToolError, ToolOutput, ToolResult, ToolSpec,
};
use tool_providers::catalog::Catalog;

use crate::describe;
use crate::engine::{self, Finished, Settled, Setup, StopFlag, ToHost, ToScript};
use crate::limits::{Limits, Stop};

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
/// A script runs to its end, or until a limit stops it: this first version does not hand back
/// a handle for a script that is still running. A script's tool calls are already
/// asynchronous, and a long job (a build, a test run) belongs in a `bash` background session,
/// which the script can start and a later call can read; a yielded script would hold an
/// interpreter and its pending calls between the model's turns, which no limit would bound.
pub struct CodeTool {
    spec: ToolSpec,
    tools: Arc<Registry>,
    names: Arc<Vec<String>>,
    catalog: Option<Catalog>,
    limits: Limits,
}

impl fmt::Debug for CodeTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeTool")
            .field("name", &self.spec.name)
            .field("tools", &self.names.len())
            .field("limits", &self.limits)
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
        };
        tool.spec = tool.make_spec(NAME);
        tool
    }

    /// This tool with other limits.
    pub fn with_limits(mut self, limits: Limits) -> CodeTool {
        self.limits = limits;
        self.spec = self.make_spec(&self.spec.name.clone());
        self
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

    /// A registry of the tools the scripts call and this tool beside them (with the same
    /// validation options).
    pub fn beside_its_tools(self) -> Result<Registry, RegistryError> {
        let tools = self.tools.clone();
        Registry::builder()
            .validation(tools.validation_options())
            .tools(tools.tools().cloned())
            .tool(self)
            .build()
    }

    /// A registry of this tool alone: the model reaches the other tools only from a script.
    pub fn alone(self) -> Result<Registry, RegistryError> {
        let options = self.tools.validation_options();
        Registry::builder().validation(options).tool(self).build()
    }

    fn make_spec(&self, name: &str) -> ToolSpec {
        let deferred = self.catalog.as_ref().map_or(0, |catalog| catalog.tools().filter(|(_, d)| *d).count());
        let listed = self
            .tools
            .specs()
            .filter(|spec| !self.catalog.as_ref().is_some_and(|c| c.is_deferred(&spec.name)));
        let description = describe::description(listed, deferred, &self.limits);
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
        ToolSpec::new(name, description, schema).with_freeform(Freeform::new("script")).with_annotations(
            ToolAnnotations {
                title: Some("Run a script that calls tools".into()),
                open_world: true,
                ..ToolAnnotations::default()
            },
        )
    }

    /// Runs `script` with this tool's limits, its calls through `dispatcher` (under
    /// `parent`'s id and options), until it ends, is stopped by a limit, or `cancel` fires.
    async fn run(&self, ctx: ToolContext, script: String) -> Result<ToolOutput, ToolError> {
        let Some(dispatcher) = ctx.dispatcher() else {
            return Err(ToolError::execution(
                "The script tool runs its tool calls through the dispatcher that runs it, and none runs this \
                 call; call it through a dispatcher.",
            ));
        };
        let nested = dispatcher.nested(self.tools.clone());
        let limits = self.limits;
        let stop = Arc::new(StopFlag::default());
        let (to_host, mut from_script) = unbounded_channel();
        let (to_script, from_host) = std::sync::mpsc::channel();
        let started = Instant::now();
        let deadline = started + limits.wall_time;
        let setup = Setup {
            source: script,
            tools: self.names.as_ref().clone(),
            search: self.catalog.clone(),
            limits,
            deadline,
            stop: stop.clone(),
            to_host,
            from_host,
        };
        engine::spawn(setup).map_err(|e| {
            ToolError::execution("The script interpreter could not start; try again.").with_source(e)
        })?;
        // Stops the interpreter when this call ends, however it ends (its future dropped too).
        let _stop = StopOnDrop { stop: stop.clone(), to_script: to_script.clone() };

        let cancel = ctx.cancellation_token().clone();
        // Stops the script's calls: when the script ends, or the call is stopped.
        let calls_cancel = cancel.child_token();
        let _calls_cancel = calls_cancel.clone().drop_guard();
        let permits = Arc::new(Semaphore::new(limits.concurrent_calls.max(1)));
        let options = ctx.nested_call_options();
        let parent = ctx.call_id().to_owned();
        // Polled here, first in the order the script made them: so they take their turns at the
        // parallel gate in that order, as the calls of a model's turn do.
        let mut running = FuturesUnordered::new();
        let limit_reached = tokio::time::sleep_until(deadline.into());
        tokio::pin!(limit_reached);
        let mut stopping = false;

        let finished = loop {
            tokio::select! {
                biased;
                message = from_script.recv() => match message {
                    Some(ToHost::Call { id, tool, arguments }) => {
                        let call = ToolCall::new(format!("{parent}.{id}"), tool, arguments);
                        let task = nested_call(
                            nested.clone(),
                            call,
                            options.clone(),
                            calls_cancel.clone(),
                            permits.clone(),
                        );
                        running.push(async move { (id, task.await) });
                    }
                    Some(ToHost::Done(finished)) => break finished,
                    None => break Finished {
                        error: Some("The script interpreter stopped unexpectedly.".into()),
                        ..Finished::default()
                    },
                },
                Some((id, result)) = running.next() => {
                    let _ = to_script.send(ToScript::Settled { id, result: settled(result) });
                }
                () = cancel.cancelled(), if !stopping => {
                    stopping = true;
                    stop.stop(Stop::Cancelled);
                    calls_cancel.cancel();
                    let _ = to_script.send(ToScript::Wake);
                }
                () = &mut limit_reached, if !stopping => {
                    stopping = true;
                    stop.stop(Stop::WallTime);
                    calls_cancel.cancel();
                    let _ = to_script.send(ToScript::Wake);
                }
            }
        };
        // Calls the script started and did not wait for end with it; each hands back what it has
        // within the dispatcher's cancel grace.
        calls_cancel.cancel();
        while running.next().await.is_some() {}
        Ok(self.output(finished, stop.get()))
    }

    /// The script tool's result: what the script printed and returned, then why it failed.
    fn output(&self, finished: Finished, stop: Option<Stop>) -> ToolOutput {
        let Finished { mut output, error, calls } = finished;
        let out_of_memory = error.as_deref().is_some_and(|e| e.contains("out of memory"));
        let stop = stop.or(out_of_memory.then_some(Stop::Memory));
        let failure = match (stop, error) {
            (Some(stop), _) => Some((stop.message(&self.limits).to_string(), kind_of(stop))),
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
            output.push_str("(The script printed nothing and its last expression had no value.)");
        }
        let mut result = ToolOutput::text(output).with_metadata("nested_calls", Value::from(calls));
        result.is_error = is_error;
        if let Some(kind) = error_kind {
            result = result.with_metadata("error_kind", Value::from(kind.as_str()));
        }
        result
    }
}

fn kind_of(stop: Stop) -> ErrorKind {
    match stop {
        Stop::WallTime => ErrorKind::Timeout,
        Stop::Cancelled => ErrorKind::Cancelled,
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
    let result = dispatcher.run_with(call, options, cancel).await;
    drop(permit);
    result
}

/// How a call ended, as the script sees it: its result, or an error it throws.
fn settled(result: ToolResult) -> Settled {
    let ToolResult { tool, output, .. } = result;
    if output.is_error {
        let kind =
            output.metadata.get("error_kind").and_then(Value::as_str).unwrap_or("execution").to_owned();
        return Settled::Err { tool, kind, message: output.text_content() };
    }
    let text = output.text_content();
    Settled::Ok { text, structured: output.structured }
}

/// Stops the interpreter, and wakes it if it waits for a call.
struct StopOnDrop {
    stop: Arc<StopFlag>,
    to_script: std::sync::mpsc::Sender<ToScript>,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.stop.stop(Stop::Cancelled);
        let _ = self.to_script.send(ToScript::Wake);
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
