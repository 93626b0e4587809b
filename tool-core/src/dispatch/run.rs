//! One call's stages, in order: lookup and validation (with the repeat count), then, holding its
//! guard, the repeat guard, the permission and before-hooks, the tool itself (time limit,
//! cancellation, panic isolation), the after-hooks and truncation. A stage that ends the call
//! returns a [`Stop`]; [`Inner::run_call`] turns it into the call's one result.

use std::mem;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cancel::until_cancelled;
use super::gate::Slot;
use super::messages::{self, CatchUnwind, guarded};
use super::record::{Outcome, Pending, error_output, status_of};
use super::{Inner, RepeatAction, repeat};
use crate::call::Arguments;
use crate::context::{CallCancel, ContextSink, Ids, Inner as CallContext, ToolContext};
use crate::error::ToolError;
use crate::events::{CallStatus, ToolEvent};
use crate::hooks::{BeforeDecision, HookCall};
use crate::output::{Content, ToolOutput};
use crate::registry::ToolInput;
use crate::spec::ToolSpec;
use crate::tool::{DecodedCall, Tool};
use crate::truncate;
use crate::validate::Coercion;

/// A call that was found and validated, waiting for its guard.
pub(crate) struct Ready {
    pub(crate) pending: Arc<Pending>,
    tool: Arc<dyn Tool>,
    input: Input,
    coercions: Vec<Coercion>,
    repeat_count: u32,
    /// An exclusive tool's call that runs under the shared guard because it only reads: its
    /// arguments as they were when that was decided. Boxed, as it is rare and every future of
    /// the call's stages holds this record.
    read_only_call: Option<Box<Value>>,
}

/// What the tool runs with.
enum Input {
    /// Validated arguments, which hooks read and may rewrite.
    Value(Value),
    /// The model's text, decoded by the tool itself: taken only when no hook reads arguments.
    Decoded(DecodedCall),
}

impl Ready {
    pub(crate) fn turn(&self) -> super::gate::Turn {
        use super::gate::Turn;
        let spec = self.tool.spec();
        if spec.ungated {
            Turn::Ungated
        } else if spec.parallel || self.read_only_call.is_some() {
            Turn::Shared
        } else {
            Turn::Exclusive
        }
    }
}

/// How a call ended early, before its output went through the after-hooks.
enum Stop {
    /// Stopped before its tool started: nothing ran.
    NotStarted,
    /// Ended by this error (denied, a hook's error, a fatal error, a cancelled call that
    /// returned nothing); `Some` start time once the tool had started.
    Failed(ToolError, Option<Instant>),
    /// Cancelled while running, with the output the tool handed back.
    Cancelled { output: ToolOutput, error: ToolError, started_at: Instant },
}

/// How the tool part of a call ended, before after-hooks.
enum Ran {
    Output(ToolOutput),
    Error(ToolError),
    /// Stopped by its time limit; the output is what the tool handed back.
    TimedOut(ToolOutput, ToolError),
}

/// A call that went through every stage.
struct Done {
    output: ToolOutput,
    error: Option<ToolError>,
    started_at: Instant,
}

/// Stops a call whose future is dropped before the call ended (its caller stopped waiting), so
/// that work its tool started learns it at once. A call that ended keeps its token as it is.
struct StopOnDrop {
    call: ToolContext,
    ended: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !self.ended {
            self.call.stop();
        }
    }
}

/// Runs a call of a batch that holds its guard, then releases the guard after the finished
/// event. A `Fatal` result cancels the batch.
pub(crate) async fn execute(
    inner: Arc<Inner>,
    ready: Ready,
    slot: Slot,
    batch: CancellationToken,
) -> Outcome {
    // Boxed: the task's future is then a pointer, not the stages' whole state, which would
    // otherwise be copied as the task is made.
    let outcome = Box::pin(inner.run_call(ready, batch.clone())).await;
    if outcome.fatal.is_some() {
        batch.cancel();
    }
    drop(slot);
    outcome
}

impl Inner {
    /// Stage 1, lookup and validation, with the call counted by the repeat guard; failures
    /// end the call here.
    pub(crate) fn prepare(&self, pending: Arc<Pending>, arguments: Arguments) -> Result<Ready, Box<Outcome>> {
        let found = match self.registry.lookup(&pending.tool) {
            Ok(found) => found,
            Err(error) => return Err(self.invalid(&pending, error)),
        };
        let tool = found.tool.clone();
        let polls = tool.spec().polls;
        // Hooks and the read-only check read arguments as a value; without them, arguments the
        // tool decodes by itself need no validator (and text, no value).
        let may_decode = self.config.before.is_empty()
            && self.config.after.is_empty()
            && self.config.read_only_calls.is_none();
        let args = match found.input(arguments, may_decode) {
            Ok(ToolInput::Decoded { call, arguments }) => {
                let repeat_count = self.count_repeat(polls, || match &arguments {
                    Arguments::Text(text) => repeat::fingerprint_text(&pending.tool, text),
                    Arguments::Json(value) => Some(repeat::fingerprint(&pending.tool, value)),
                    Arguments::Freeform { .. } => None,
                });
                return Ok(Ready {
                    pending,
                    tool,
                    input: Input::Decoded(call),
                    coercions: Vec::new(),
                    repeat_count,
                    read_only_call: None,
                });
            }
            Ok(ToolInput::Validated(args)) => args,
            Err(error) => return Err(self.invalid(&pending, error)),
        };
        let repeat_count = self.count_repeat(polls, || Some(repeat::fingerprint(&pending.tool, &args.value)));
        let read_only_call = match &self.config.read_only_calls {
            Some(policy) if !tool.spec().parallel && policy.runs_read_only(&pending.tool, &args.value) => {
                Some(Box::new(args.value.clone()))
            }
            _ => None,
        };
        Ok(Ready {
            pending,
            tool,
            input: Input::Value(args.value),
            coercions: args.coercions,
            repeat_count,
            read_only_call,
        })
    }

    /// A call that failed lookup or validation: it breaks a row of repeated calls.
    fn invalid(&self, pending: &Pending, error: ToolError) -> Box<Outcome> {
        self.count_repeat(false, || None);
        Box::new(self.fail(pending, error, None))
    }

    /// The stages after the guard was taken, and the call's result. `caller` stops the call
    /// from outside (the batch's token, or the caller's own for a lone call). Stages that
    /// rarely run (repeat guard, hooks, a stopped call) are boxed: their state would otherwise
    /// make every call's larger, and a call's future is copied whole each time it moves.
    pub(crate) async fn run_call(&self, ready: Ready, caller: CancellationToken) -> Outcome {
        let pending = ready.pending.clone();
        let spec = ready.tool.spec();
        let timeout = pending.options.timeout.or(spec.timeout).or(self.config.default_timeout);
        let ctx = self.context(&pending, spec, caller, timeout);
        let mut running = StopOnDrop { call: ctx.clone(), ended: false };
        let stages = self.stages(ready, ctx, &running.call, timeout).await;
        running.ended = true;
        match stages {
            Ok(Done { output, error, started_at }) => {
                let status = match &error {
                    _ if !output.is_error => CallStatus::Completed,
                    Some(error) => status_of(error),
                    None => CallStatus::Failed,
                };
                let error = error.filter(|_| output.is_error);
                self.finish(&pending, status, output, error, Some(started_at))
            }
            Err(Stop::NotStarted) => self.cancelled_before_start(&pending),
            Err(Stop::Failed(error, started_at)) => self.fail(&pending, error, started_at),
            Err(Stop::Cancelled { output, error, started_at }) => {
                self.finish(&pending, status_of(&error), output, Some(error), Some(started_at))
            }
        }
    }

    /// `ctx` goes to the tool; `call` is the dispatcher's handle on the same context.
    async fn stages(
        &self,
        ready: Ready,
        ctx: ToolContext,
        call: &ToolContext,
        timeout: Option<Duration>,
    ) -> Result<Done, Stop> {
        let Ready { pending, tool, input, coercions, repeat_count, read_only_call } = ready;
        // What stops the call from outside; the call's own token is made only if its tool
        // asks for it, and is stopped through `call`.
        let cancel = call.caller_token();
        if self.repeat.threshold != 0 && repeat_count >= self.repeat.threshold {
            Box::pin(self.repeat_guard(&pending, repeat_count, &ctx, cancel)).await?;
        }
        let (input, hook_call) = match input {
            Input::Value(arguments) if !self.config.before.is_empty() || !self.config.after.is_empty() => {
                let hooks = self.before_hooks(&pending, arguments, read_only_call, cancel);
                let (arguments, hook_call) = Box::pin(hooks).await?;
                (Input::Value(arguments), Some(hook_call))
            }
            input => (input, None),
        };
        let (ran, started_at) = self.run_tool(&pending, &tool, ctx, call, input, timeout).await?;
        let (output, error) = match ran {
            Ran::Output(output) => (output, None),
            Ran::Error(error) => (error_output(&error), Some(error)),
            Ran::TimedOut(output, error) => (output, Some(error)),
        };
        let (mut output, error) = match hook_call {
            Some(hook_call) if !self.config.after.is_empty() => {
                let hooks = self.after_hooks(&pending, hook_call, output, error, started_at, cancel);
                Box::pin(hooks).await?
            }
            _ => (output, error),
        };
        self.truncate(&mut output, tool.spec());
        if !coercions.is_empty()
            && let Ok(value) = serde_json::to_value(&coercions)
        {
            output.metadata.insert("coercions".to_owned(), value);
        }
        Ok(Done { output, error, started_at })
    }

    /// The call's context: its own ids, cancellation under `caller`, deadline and limits, and
    /// the dispatcher's shared parts.
    fn context(
        &self,
        pending: &Arc<Pending>,
        spec: &ToolSpec,
        caller: CancellationToken,
        timeout: Option<Duration>,
    ) -> ToolContext {
        let deadline = timeout.and_then(|limit| Instant::now().checked_add(limit)).map(Instant::into_std);
        let mut sinks: Vec<Arc<dyn ContextSink>> = Vec::new();
        if pending.sink.is_some() {
            sinks.push(pending.clone());
        }
        if let Some(sink) = &pending.options.sink {
            sinks.push(sink.clone());
        }
        ToolContext::for_call(CallContext {
            ids: Ids::Shared(pending.clone()),
            cancel: CallCancel::under(caller),
            deadline,
            time_limit: timeout,
            sinks,
            caller_sink: pending.options.sink.clone(),
            truncation: self.config.truncation.with_policy(&spec.truncation),
            shared: self.shared.clone(),
            asker: pending.options.asker.clone(),
            user: pending.options.user.clone(),
            turn: pending.options.turn.clone(),
            tasks: pending.options.tasks.clone(),
            sampler: pending.options.sampler.clone(),
            dispatcher: Some(self.me.clone()),
        })
    }

    /// Stage 2: the repeat guard, for a call that came often enough in a row.
    async fn repeat_guard(
        &self,
        pending: &Pending,
        repeat_count: u32,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        let verdict = match self.repeat.action {
            RepeatAction::Refuse => Err(messages::repeat_refused(&pending.tool, repeat_count)),
            RepeatAction::Ask => {
                if cancel.is_cancelled() {
                    return Err(Stop::NotStarted);
                }
                let request = messages::repeat_request(&pending.tool, repeat_count);
                let ask = guarded(|| Box::pin(ctx.ask(request)));
                match until_cancelled!(cancel, ask) {
                    None => return Err(Stop::NotStarted),
                    Some(Ok(verdict)) => verdict,
                    Some(Err(panic)) => {
                        Err(messages::hook_crashed(&pending.tool, "the permission hook", panic))
                    }
                }
            }
        };
        verdict.map_err(|error| Stop::Failed(error, None))
    }

    /// Stage 3: the before-hooks, in order; each sees the arguments the one before left. A
    /// rewrite is validated as the model's arguments are, from the value itself. Gives the
    /// arguments the tool runs with and the hook call the after-hooks read.
    async fn before_hooks(
        &self,
        pending: &Pending,
        arguments: Value,
        read_only_call: Option<Box<Value>>,
        cancel: &CancellationToken,
    ) -> Result<(Value, HookCall), Stop> {
        let mut hook_call = HookCall {
            call_id: pending.call_id.clone(),
            tool: pending.tool.clone(),
            session_id: self.shared.session_id.clone(),
            arguments,
            asker: pending.options.asker.clone(),
        };
        for hook in &self.config.before {
            if cancel.is_cancelled() {
                return Err(Stop::NotStarted);
            }
            let decision = match until_cancelled!(cancel, guarded(|| hook.before(&hook_call))) {
                None => return Err(Stop::NotStarted),
                Some(Ok(Ok(decision))) => decision,
                Some(Ok(Err(error))) => return Err(Stop::Failed(error, None)),
                Some(Err(panic)) => {
                    let error = messages::hook_crashed(&pending.tool, "a before-call hook", panic);
                    return Err(Stop::Failed(error, None));
                }
            };
            match decision {
                BeforeDecision::Allow => {}
                BeforeDecision::Deny { reason } => {
                    return Err(Stop::Failed(messages::denied_by_hook(&pending.tool, &reason), None));
                }
                BeforeDecision::Rewrite(value) => match self.registry.validate(&pending.tool, value) {
                    Ok(args) => hook_call.arguments = args.value,
                    Err(error) => {
                        let error = messages::rewritten_arguments_invalid(&pending.tool, &error);
                        return Err(Stop::Failed(error, None));
                    }
                },
            }
        }
        // A call running alongside others because it only reads must still only read after the
        // hooks rewrote it.
        if let (Some(decided), Some(policy)) = (&read_only_call, &self.config.read_only_calls)
            && **decided != hook_call.arguments
            && !policy.runs_read_only(&pending.tool, &hook_call.arguments)
        {
            return Err(Stop::Failed(messages::rewritten_read_only_call(&pending.tool), None));
        }
        // After-hooks read the arguments too; otherwise the tool takes them.
        let arguments = if self.config.after.is_empty() {
            mem::take(&mut hook_call.arguments)
        } else {
            hook_call.arguments.clone()
        };
        Ok((arguments, hook_call))
    }

    /// Stage 4: the tool, under its time limit and the caller's token, with panics caught. A
    /// stopped tool gets the cancel grace to hand back what it has so far.
    async fn run_tool(
        &self,
        pending: &Pending,
        tool: &Arc<dyn Tool>,
        ctx: ToolContext,
        call: &ToolContext,
        input: Input,
        timeout: Option<Duration>,
    ) -> Result<(Ran, Instant), Stop> {
        let cancel = call.caller_token();
        if cancel.is_cancelled() {
            return Err(Stop::NotStarted);
        }
        pending.emit(|call_id, tool, timestamp_ms| ToolEvent::Started { call_id, tool, timestamp_ms });
        let started_at = Instant::now();
        pending.set_started(started_at);
        let run = guarded(|| match input {
            Input::Value(arguments) => tool.call(ctx, arguments),
            Input::Decoded(call) => call(ctx),
        });
        tokio::pin!(run);
        // In a block, so that what only the first wait needs is not kept while a stopped call
        // hands back what it has.
        let stopped = {
            let limit_reached = async {
                match timeout {
                    Some(limit) => tokio::time::sleep(limit).await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(limit_reached);
            let first = tokio::select! {
                biased;
                value = &mut run => Ok(value),
                () = cancel.cancelled() => Err(None),
                () = &mut limit_reached => Err(timeout),
            };
            match first {
                Ok(Err(panic)) => {
                    return Ok((Ran::Error(messages::crashed(&pending.tool, panic)), started_at));
                }
                // A tool that returns once its token fired was stopped, even when it answers in
                // the same poll: its output is what it had so far.
                Ok(Ok(Ok(output))) if call.is_cancelled() => (None, Some(output)),
                Ok(Ok(Err(error))) if error.is_fatal() => return Err(Stop::Failed(error, Some(started_at))),
                Ok(Ok(Err(error))) => return Ok((Ran::Error(error), started_at)),
                Ok(Ok(Ok(output))) => return Ok((Ran::Output(output), started_at)),
                Err(stop) => (stop, None),
            }
        };
        // Boxed: what a stopped call needs would otherwise make every call's state larger.
        let ran = Box::pin(self.stopped(pending, tool, call, run, stopped, started_at)).await?;
        Ok((ran, started_at))
    }

    /// A call stopped by its time limit (`stop` is the limit) or by its caller (`None`), with
    /// the output it answered with in the same poll, if any.
    async fn stopped(
        &self,
        pending: &Pending,
        tool: &Arc<dyn Tool>,
        call: &ToolContext,
        mut run: Pin<&mut CatchUnwind<'_, Result<ToolOutput, ToolError>>>,
        (stop, answered): (Option<Duration>, Option<ToolOutput>),
        started_at: Instant,
    ) -> Result<Ran, Stop> {
        let stop_error = match stop {
            Some(limit) => messages::timed_out(&pending.tool, limit),
            None => messages::cancelled_after(&pending.tool, started_at.elapsed()),
        };
        // Tell the tool, then give it a moment to hand back what it has so far.
        call.stop();
        let partial = match answered {
            Some(output) => Some(output),
            None => match tokio::time::timeout(self.config.cancel_grace, &mut run).await {
                Ok(Ok(Ok(output))) => Some(output),
                Ok(Ok(Err(error))) if !error.is_fatal() => Some(error_output(&error)),
                _ => None,
            },
        };
        let Some(mut output) = partial else {
            return match stop {
                None => Err(Stop::Failed(stop_error, Some(started_at))),
                Some(_) => Ok(Ran::Error(stop_error)),
            };
        };
        output.metadata.insert("error_kind".to_owned(), Value::from(stop_error.kind().as_str()));
        if !output.is_error {
            // The tool did not say it was stopped: say it for the model.
            output.content.push(Content::text(format!("[{}]", stop_error.message())));
            output.is_error = true;
        }
        match stop {
            // Cancelled: no after-hook runs, but the output is still cut to size.
            None => {
                self.truncate(&mut output, tool.spec());
                Err(Stop::Cancelled { output, error: stop_error, started_at })
            }
            Some(_) => Ok(Ran::TimedOut(output, stop_error)),
        }
    }

    /// Stage 5: the after-hooks, in order; each may replace the output. A hook's error becomes
    /// the result (a fatal one ends the call).
    async fn after_hooks(
        &self,
        pending: &Pending,
        hook_call: HookCall,
        mut output: ToolOutput,
        mut error: Option<ToolError>,
        started_at: Instant,
        cancel: &CancellationToken,
    ) -> Result<(ToolOutput, Option<ToolError>), Stop> {
        for hook in &self.config.after {
            let replaced = guarded(|| hook.after(&hook_call, mem::take(&mut output)));
            match until_cancelled!(cancel, replaced) {
                None => {
                    let error = messages::cancelled_after(&pending.tool, started_at.elapsed());
                    return Err(Stop::Failed(error, Some(started_at)));
                }
                Some(Ok(Ok(replacement))) => output = replacement,
                Some(Ok(Err(failure))) => {
                    if failure.is_fatal() {
                        return Err(Stop::Failed(failure, Some(started_at)));
                    }
                    output = error_output(&failure);
                    error = Some(failure);
                }
                Some(Err(panic)) => {
                    let failure = messages::hook_crashed(&pending.tool, "an after-call hook", panic);
                    output = error_output(&failure);
                    error = Some(failure);
                }
            }
        }
        Ok((output, error))
    }

    /// Stage 6: framework truncation of a tool's output (unless the tool opted out or cut it
    /// already), with the full text saved to the output store.
    fn truncate(&self, output: &mut ToolOutput, spec: &ToolSpec) {
        let Some(cut) = truncate::cut_output(output, &spec.truncation, &self.config.truncation) else {
            return;
        };
        match self.config.store.as_deref() {
            Some(store) => store.save_cut(cut, output),
            None => cut.apply(output, truncate::ReadHint::neutral()),
        };
    }
}
