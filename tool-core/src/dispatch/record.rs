//! One call's record from the moment the dispatcher receives it to its result: its events
//! (queued, progress, finished) and how it ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinError;
use tokio::time::Instant;

use super::messages;
use super::{CallOptions, Inner};
use crate::call::{Arguments, ToolCall, ToolResult};
use crate::context::{CallIds, ContextSink, Progress};
use crate::error::{ErrorKind, ToolError};
use crate::events::{CallStatus, EventSink, ToolEvent, millis, now_unix_ms};
use crate::output::ToolOutput;

/// A call the dispatcher has received. Also the call's [`ContextSink`], so progress from the
/// tool flows into the event stream until the call's finished event closes it.
pub(crate) struct Pending {
    pub(crate) index: usize,
    pub(crate) call_id: String,
    pub(crate) tool: String,
    /// The call came as free-form text; its result is rendered as a freeform result.
    pub(crate) freeform: bool,
    pub(crate) options: CallOptions,
    pub(crate) queued_at: Instant,
    /// When the tool started, once it has: nanoseconds after `queued_at`, plus one (0: not
    /// yet). An atomic, since it is set on every call and read only for a dropped one.
    started: AtomicU64,
    pub(crate) sink: Option<Arc<dyn EventSink>>,
    /// Set when the finished event was emitted; guards every later emission.
    closed: Mutex<bool>,
}

/// A call's final result, and the `Fatal` error that must stop the batch, if any.
pub(crate) struct Outcome {
    pub(crate) result: ToolResult,
    pub(crate) fatal: Option<ToolError>,
}

impl Pending {
    pub(crate) fn emit(&self, make: impl FnOnce(String, String, u64) -> ToolEvent) {
        if let Some(sink) = &self.sink {
            let closed = self.closed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if !*closed {
                sink.emit(make(self.call_id.clone(), self.tool.clone(), now_unix_ms()));
            }
        }
    }

    pub(crate) fn set_started(&self, at: Instant) {
        let nanos =
            u64::try_from(at.saturating_duration_since(self.queued_at).as_nanos()).unwrap_or(u64::MAX - 1);
        self.started.store(nanos + 1, Ordering::Release);
    }

    fn started_at(&self) -> Option<Instant> {
        match self.started.load(Ordering::Acquire) {
            0 => None,
            nanos => Some(self.queued_at + Duration::from_nanos(nanos - 1)),
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

impl CallIds for Pending {
    fn call_id(&self) -> &str {
        &self.call_id
    }

    fn tool_name(&self) -> &str {
        &self.tool
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

/// The status a call ended by `error` has.
pub(crate) fn status_of(error: &ToolError) -> CallStatus {
    match error.kind() {
        ErrorKind::Timeout => CallStatus::TimedOut,
        ErrorKind::Cancelled => CallStatus::Cancelled,
        ErrorKind::PermissionDenied => CallStatus::Denied,
        _ => CallStatus::Failed,
    }
}

/// The model reads the message; kind and source go to UI-only metadata.
pub(crate) fn error_output(error: &ToolError) -> ToolOutput {
    let mut output = ToolOutput::error(error.message());
    output.metadata.insert("error_kind".to_owned(), Value::from(error.kind().as_str()));
    if let Some(detail) = error.source_chain() {
        output.metadata.insert("error_detail".to_owned(), Value::from(detail));
    }
    output
}

impl Inner {
    /// Records a received call and emits its queued event; the arguments go on to validation.
    pub(crate) fn queue(
        &self,
        index: usize,
        call: ToolCall,
        options: CallOptions,
    ) -> (Arc<Pending>, Arguments) {
        let pending = Arc::new(Pending {
            index,
            freeform: call.arguments.is_freeform(),
            call_id: call.id,
            tool: call.name,
            options,
            queued_at: Instant::now(),
            started: AtomicU64::new(0),
            sink: self.config.events.clone(),
            closed: Mutex::new(false),
        });
        if pending.sink.is_some() {
            pending.emit(|call_id, tool, timestamp_ms| ToolEvent::Queued {
                call_id,
                tool,
                timestamp_ms,
                index: pending.index,
                arguments: call.arguments.clone(),
                parent: pending.options.parent.as_deref().map(str::to_owned),
            });
        }
        (pending, call.arguments)
    }

    pub(crate) fn cancelled_before_start(&self, pending: &Pending) -> Outcome {
        let error = messages::cancelled_before_start(&pending.tool, pending.queued_at.elapsed());
        self.fail(pending, error, None)
    }

    /// The result of a call whose caller stopped waiting for it.
    pub(crate) fn dropped(&self, pending: &Pending) -> Outcome {
        match pending.started_at() {
            Some(started_at) => {
                let error = messages::cancelled_after(&pending.tool, started_at.elapsed());
                self.fail(pending, error, Some(started_at))
            }
            None => self.cancelled_before_start(pending),
        }
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

    pub(crate) fn fail(&self, pending: &Pending, error: ToolError, started_at: Option<Instant>) -> Outcome {
        let output = error_output(&error);
        self.finish(pending, status_of(&error), output, Some(error), started_at)
    }

    /// Emits the finished event (the last event of the call) and builds the result.
    pub(crate) fn finish(
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
                None => (Duration::ZERO, now - pending.queued_at),
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
        let result = ToolResult {
            call_id: pending.call_id.clone(),
            tool: pending.tool.clone(),
            output,
            freeform: pending.freeform,
        };
        Outcome { result, fatal: error.filter(ToolError::is_fatal) }
    }
}
