//! One call's way through the dispatcher: queue, prepare, execute, finish (with its events).

use std::mem;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::task::JoinError;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::messages::{self, guarded};
use super::{CallOptions, Inner, RepeatAction, Slot};
use crate::call::{ToolCall, ToolResult};
use crate::context::{ContextSink, Progress, ToolContext};
use crate::error::{ErrorKind, ToolError};
use crate::events::{CallStatus, EventSink, ToolEvent, millis, now_unix_ms};
use crate::hooks::{BeforeDecision, HookCall};
use crate::output::{Content, ToolOutput};
use crate::spec::ToolSpec;
use crate::tool::Tool;
use crate::truncate;
use crate::validate::Coercion;

/// A call the dispatcher has received. Also the call's [`ContextSink`], so progress from the
/// tool flows into the event stream until the call's finished event closes it.
pub(crate) struct Pending {
    index: usize,
    call_id: String,
    tool: String,
    arguments: String,
    options: CallOptions,
    queued_at: Instant,
    sink: Option<Arc<dyn EventSink>>,
    /// Set when the finished event was emitted; guards every later emission.
    closed: Mutex<bool>,
}

impl Pending {
    fn emit(&self, make: impl FnOnce(String, String, u64) -> ToolEvent) {
        if let Some(sink) = &self.sink {
            let closed = self.closed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if !*closed {
                sink.emit(make(self.call_id.clone(), self.tool.clone(), now_unix_ms()));
            }
        }
    }

    fn emit_finished(&self, make: impl FnOnce(String, String, u64) -> ToolEvent) {
        let Some(sink) = &self.sink else { return };
        let mut closed = self.closed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !*closed {
            *closed = true;
            sink.emit(make(self.call_id.clone(), self.tool.clone(), now_unix_ms()));
        }
    }
}

impl ContextSink for Pending {
    fn progress(&self, _call_id: &str, _tool: &str, update: Progress) {
        self.emit(|call_id, tool, timestamp_ms| ToolEvent::Progress { call_id, tool, timestamp_ms, update });
    }

    fn metadata(&self, _call_id: &str, _tool: &str, title: Option<String>, metadata: Value) {
        self.emit(|call_id, tool, timestamp_ms| ToolEvent::Metadata {
            call_id,
            tool,
            timestamp_ms,
            title,
            metadata,
        });
    }
}

/// A call that was found and validated, waiting for its guard.
pub(crate) struct Ready {
    pub(crate) pending: Arc<Pending>,
    tool: Arc<dyn Tool>,
    arguments: Value,
    coercions: Vec<Coercion>,
    repeat_count: u32,
}

impl Ready {
    pub(crate) fn parallel(&self) -> bool {
        self.tool.spec().parallel
    }
}

/// A call's final result, and the `Fatal` error that must stop the batch, if any.
pub(crate) struct Outcome {
    pub(crate) result: ToolResult,
    pub(crate) fatal: Option<ToolError>,
}

/// How the tool part of a call ended, before after-hooks.
enum Ran {
    Output(ToolOutput),
    Error(ToolError),
    /// Stopped by its time limit; the output is what the tool handed back.
    Stopped(ToolOutput, ToolError),
}

/// Runs a call that holds its guard, then releases the guard after the finished event. A
/// `Fatal` result cancels `stop_batch`.
pub(crate) async fn execute(
    inner: Arc<Inner>,
    ready: Ready,
    slot: Slot,
    cancel: CancellationToken,
    stop_batch: Option<CancellationToken>,
) -> Outcome {
    let outcome = inner.run_call(ready, cancel).await;
    if outcome.fatal.is_some()
        && let Some(batch) = stop_batch
    {
        batch.cancel();
    }
    drop(slot);
    outcome
}

/// `None` when `cancel` fires before `future` completes. The future is polled first, so one that
/// is ready at once never registers a waiter on the token; callers check the token themselves
/// where a cancellation that came earlier must win. A macro rather than an `async fn`, so the
/// future is not stored twice in the caller's state.
macro_rules! until_cancelled {
    ($cancel:expr, $future:expr) => {
        tokio::select! {
            biased;
            value = $future => Some(value),
            () = $cancel.cancelled() => None,
        }
    };
}
pub(crate) use until_cancelled;

fn status_of(error: &ToolError) -> CallStatus {
    match error.kind() {
        ErrorKind::Timeout => CallStatus::TimedOut,
        ErrorKind::Cancelled => CallStatus::Cancelled,
        ErrorKind::PermissionDenied => CallStatus::Denied,
        _ => CallStatus::Failed,
    }
}

/// The model reads the message; kind and source go to UI-only metadata.
fn error_output(error: &ToolError) -> ToolOutput {
    let mut output = ToolOutput::error(error.message());
    output.metadata.insert("error_kind".to_owned(), Value::from(error.kind().as_str()));
    if let Some(detail) = error.source_chain() {
        output.metadata.insert("error_detail".to_owned(), Value::from(detail));
    }
    output
}

impl Inner {
    /// Records a received call and emits its queued event.
    pub(crate) fn queue(&self, index: usize, call: ToolCall, options: CallOptions) -> Arc<Pending> {
        let pending = Arc::new(Pending {
            index,
            call_id: call.id,
            tool: call.name,
            arguments: call.arguments,
            options,
            queued_at: Instant::now(),
            sink: self.events.clone(),
            closed: Mutex::new(false),
        });
        pending.emit(|call_id, tool, timestamp_ms| ToolEvent::Queued {
            call_id,
            tool,
            timestamp_ms,
            index: pending.index,
            arguments: pending.arguments.clone(),
        });
        pending
    }

    /// Looks the tool up and validates the arguments; failures end the call here.
    pub(crate) fn prepare(&self, pending: Arc<Pending>) -> Result<Ready, Box<Outcome>> {
        let found = self
            .registry
            .get(&pending.tool)
            .cloned()
            .ok_or_else(|| self.registry.unknown_tool(&pending.tool))
            .and_then(|tool| {
                self.registry.validate(&pending.tool, &pending.arguments).map(|args| (tool, args))
            });
        match found {
            Ok((tool, args)) => {
                let repeat_count = self.count_repeat(&pending.tool, Some(&args.value));
                Ok(Ready { pending, tool, arguments: args.value, coercions: args.coercions, repeat_count })
            }
            Err(error) => {
                self.count_repeat(&pending.tool, None);
                Err(Box::new(self.fail(&pending, error, None)))
            }
        }
    }

    pub(crate) fn cancelled_before_start(&self, pending: &Pending) -> Outcome {
        let error = messages::cancelled_before_start(&pending.tool, pending.queued_at.elapsed());
        self.fail(pending, error, None)
    }

    pub(crate) fn skipped(&self, pending: &Pending) -> Outcome {
        let error = messages::skipped(&pending.tool);
        let output = error_output(&error);
        self.finish(pending, CallStatus::Skipped, output, Some(error), None)
    }

    pub(crate) fn task_failed(&self, pending: &Pending, error: JoinError) -> Outcome {
        let error = match error.try_into_panic() {
            Ok(payload) => messages::crashed(&pending.tool, messages::panic_message(&*payload)),
            Err(_) => messages::task_failed(&pending.tool),
        };
        self.fail(pending, error, None)
    }

    fn fail(&self, pending: &Pending, error: ToolError, started_at: Option<Instant>) -> Outcome {
        let output = error_output(&error);
        self.finish(pending, status_of(&error), output, Some(error), started_at)
    }

    /// Emits the finished event (the last event of the call) and builds the result.
    fn finish(
        &self,
        pending: &Pending,
        status: CallStatus,
        output: ToolOutput,
        error: Option<ToolError>,
        started_at: Option<Instant>,
    ) -> Outcome {
        pending.emit_finished(|call_id, tool, timestamp_ms| {
            let now = Instant::now();
            let (duration, waited) = match started_at {
                Some(started) => (now - started, started - pending.queued_at),
                None => (std::time::Duration::ZERO, now - pending.queued_at),
            };
            ToolEvent::Finished {
                call_id,
                tool,
                timestamp_ms,
                status,
                duration_ms: millis(duration),
                waited_ms: millis(waited),
                error_kind: error.as_ref().map(ToolError::kind),
                message: error.as_ref().map(|e| e.message().to_owned()),
                detail: error.as_ref().and_then(ToolError::source_chain),
            }
        });
        let result = ToolResult { call_id: pending.call_id.clone(), tool: pending.tool.clone(), output };
        Outcome { result, fatal: error.filter(ToolError::is_fatal) }
    }

    /// Repeat guard, before-hooks, the tool (timeout, cancellation, panics), after-hooks,
    /// truncation, finished event.
    async fn run_call(&self, ready: Ready, cancel: CancellationToken) -> Outcome {
        let Ready { pending, tool, arguments, coercions, repeat_count } = ready;
        let spec = tool.spec();
        let timeout = pending.options.timeout.or(spec.timeout).or(self.default_timeout);
        // A call with a time limit gets its own token, so stopping it also tells any work the
        // tool left running; otherwise the batch's token is enough.
        let token = if timeout.is_some() { cancel.child_token() } else { cancel };
        let deadline = timeout.and_then(|limit| Instant::now().checked_add(limit)).map(Instant::into_std);
        let mut ctx = ToolContext::builder(pending.tool.as_str())
            .call_id(pending.call_id.as_str())
            .session_id(self.session_id.as_str())
            .cancellation_token(token)
            .deadline(deadline)
            .time_limit(timeout)
            .dependencies(self.deps.clone())
            .session(self.session.clone())
            .permissions(self.permissions.clone());
        if pending.sink.is_some() {
            ctx = ctx.sink(pending.clone());
        }
        ctx = ctx.truncation(self.truncation.with_policy(&spec.truncation));
        let ctx = ctx.build();
        // The call's token, watched below and cancelled when the call times out.
        let call_ctx = ctx.clone();
        let cancel = call_ctx.cancellation_token();

        if self.repeat.threshold > 0 && repeat_count >= self.repeat.threshold {
            let verdict = match self.repeat.action {
                RepeatAction::Refuse => Some(Err(messages::repeat_refused(&pending.tool, repeat_count))),
                RepeatAction::Ask => {
                    if cancel.is_cancelled() {
                        return self.cancelled_before_start(&pending);
                    }
                    let request = messages::repeat_request(&pending.tool, repeat_count);
                    let ask = guarded(|| Box::pin(ctx.ask(request)));
                    match until_cancelled!(cancel, ask) {
                        None => return self.cancelled_before_start(&pending),
                        Some(Ok(verdict)) => Some(verdict),
                        Some(Err(panic)) => {
                            Some(Err(messages::hook_crashed(&pending.tool, "the permission hook", panic)))
                        }
                    }
                }
            };
            if let Some(Err(error)) = verdict {
                return self.fail(&pending, error, None);
            }
        }

        let mut hook_call =
            HookCall { call_id: String::new(), tool: String::new(), session_id: String::new(), arguments };
        if !self.before.is_empty() || !self.after.is_empty() {
            hook_call.call_id = pending.call_id.clone();
            hook_call.tool = pending.tool.clone();
            hook_call.session_id = self.session_id.clone();
        }
        for hook in &self.before {
            if cancel.is_cancelled() {
                return self.cancelled_before_start(&pending);
            }
            let decision = match until_cancelled!(cancel, guarded(|| hook.before(&hook_call))) {
                None => return self.cancelled_before_start(&pending),
                Some(Ok(Ok(decision))) => decision,
                Some(Ok(Err(error))) => return self.fail(&pending, error, None),
                Some(Err(panic)) => {
                    return self.fail(
                        &pending,
                        messages::hook_crashed(&pending.tool, "a before-call hook", panic),
                        None,
                    );
                }
            };
            match decision {
                BeforeDecision::Allow => {}
                BeforeDecision::Deny { reason } => {
                    return self.fail(&pending, messages::denied_by_hook(&pending.tool, &reason), None);
                }
                BeforeDecision::Rewrite(value) => match self.revalidate(&pending.tool, &value) {
                    Ok(value) => hook_call.arguments = value,
                    Err(error) => return self.fail(&pending, error, None),
                },
            }
        }
        let arguments = if self.after.is_empty() {
            mem::take(&mut hook_call.arguments)
        } else {
            hook_call.arguments.clone()
        };

        if cancel.is_cancelled() {
            return self.cancelled_before_start(&pending);
        }
        pending.emit(|call_id, tool, timestamp_ms| ToolEvent::Started { call_id, tool, timestamp_ms });
        let started_at = Instant::now();
        let run = guarded(|| tool.call(ctx, arguments));
        tokio::pin!(run);
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
        // A tool that returns once its token fired was stopped, even when it answers in the
        // same poll: its output is what it had so far.
        let first = match first {
            Ok(Ok(Ok(output))) if cancel.is_cancelled() => Err((None, Some(output))),
            Ok(value) => Ok(value),
            Err(stop) => Err((stop, None)),
        };
        let ran = match first {
            Ok(Err(panic)) => Ran::Error(messages::crashed(&pending.tool, panic)),
            Ok(Ok(Err(error))) if error.is_fatal() => {
                return self.fail(&pending, error, Some(started_at));
            }
            Ok(Ok(Err(error))) => Ran::Error(error),
            Ok(Ok(Ok(output))) => Ran::Output(output),
            Err((stop, answered)) => {
                let stop_error = match stop {
                    Some(limit) => messages::timed_out(&pending.tool, limit),
                    None => messages::cancelled_after(&pending.tool, started_at.elapsed()),
                };
                // Tell the tool, then give it a moment to hand back what it has so far.
                cancel.cancel();
                let partial = match answered {
                    Some(output) => Some(output),
                    None => match tokio::time::timeout(self.cancel_grace, &mut run).await {
                        Ok(Ok(Ok(output))) => Some(output),
                        Ok(Ok(Err(error))) if !error.is_fatal() => Some(error_output(&error)),
                        _ => None,
                    },
                };
                match partial {
                    None if stop.is_none() => return self.fail(&pending, stop_error, Some(started_at)),
                    None => Ran::Error(stop_error),
                    Some(mut output) => {
                        output
                            .metadata
                            .insert("error_kind".to_owned(), Value::from(stop_error.kind().as_str()));
                        if !output.is_error {
                            // The tool did not say it was stopped: say it for the model.
                            output.content.push(Content::text(format!("[{}]", stop_error.message())));
                            output.is_error = true;
                        }
                        if stop.is_none() {
                            self.truncate(&mut output, spec);
                            return self.finish(
                                &pending,
                                status_of(&stop_error),
                                output,
                                Some(stop_error),
                                Some(started_at),
                            );
                        }
                        Ran::Stopped(output, stop_error)
                    }
                }
            }
        };

        let (mut output, mut error) = match ran {
            Ran::Output(output) => (output, None),
            Ran::Error(error) => (error_output(&error), Some(error)),
            Ran::Stopped(output, error) => (output, Some(error)),
        };
        for hook in &self.after {
            let replaced = guarded(|| hook.after(&hook_call, mem::take(&mut output)));
            match until_cancelled!(cancel, replaced) {
                None => {
                    let elapsed = started_at.elapsed();
                    return self.fail(
                        &pending,
                        messages::cancelled_after(&pending.tool, elapsed),
                        Some(started_at),
                    );
                }
                Some(Ok(Ok(replacement))) => output = replacement,
                Some(Ok(Err(failure))) => {
                    if failure.is_fatal() {
                        return self.fail(&pending, failure, Some(started_at));
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

        self.truncate(&mut output, spec);
        if !coercions.is_empty()
            && let Ok(value) = serde_json::to_value(&coercions)
        {
            output.metadata.insert("coercions".to_owned(), value);
        }

        let status = match &error {
            _ if !output.is_error => CallStatus::Completed,
            Some(error) => status_of(error),
            None => CallStatus::Failed,
        };
        if !output.is_error {
            error = None;
        }
        self.finish(&pending, status, output, error, Some(started_at))
    }

    /// Validates arguments a hook rewrote, as if the model had sent them.
    fn revalidate(&self, tool: &str, value: &Value) -> Result<Value, ToolError> {
        let text = value.to_string();
        self.registry
            .validate(tool, &text)
            .map(|args| args.value)
            .map_err(|error| messages::rewritten_arguments_invalid(tool, &error))
    }

    /// Framework truncation of a tool's output (unless the tool opted out or truncated it
    /// already), with the full text saved to the output store: the one place the dispatcher
    /// applies it.
    fn truncate(&self, output: &mut ToolOutput, spec: &ToolSpec) {
        let Some(cut) = truncate::cut_output(output, &spec.truncation, &self.truncation) else { return };
        match self.store.as_deref() {
            Some(store) => store.save_cut(cut, output),
            None => cut.apply(output, truncate::ReadHint::neutral()),
        };
    }
}
