//! Lifecycle events of dispatched calls (queued, started, progress, finished) and their sinks.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::call::Arguments;
use crate::context::Progress;
use crate::error::ErrorKind;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool ran and returned a successful result.
    Completed,
    /// The call produced an error result (unknown tool, invalid arguments, tool error, crash).
    Failed,
    /// The batch was cancelled before the call finished.
    Cancelled,
    /// The call ran past its time limit and was stopped.
    TimedOut,
    /// The call was not run because the skip check stopped the batch.
    Skipped,
    /// A hook, the repeat guard or a permission decision refused the call.
    Denied,
}

impl CallStatus {
    /// A stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Completed => "completed",
            CallStatus::Failed => "failed",
            CallStatus::Cancelled => "cancelled",
            CallStatus::TimedOut => "timed_out",
            CallStatus::Skipped => "skipped",
            CallStatus::Denied => "denied",
        }
    }
}

impl fmt::Display for CallStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event in the life of a dispatched call.
///
/// Per call the order is: `queued`, then `started` (only if the tool runs), any number of
/// `progress` / `metadata`, then exactly one `finished`; nothing follows `finished`. A call's
/// `started` is emitted after it holds its parallel/exclusive guard and its `finished` before it
/// releases it, so the stream alone shows which calls overlapped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolEvent {
    /// The dispatcher received the call.
    Queued {
        /// The call's id.
        call_id: String,
        /// The tool's name, as the model sent it.
        tool: String,
        /// Unix time in milliseconds.
        timestamp_ms: u64,
        /// Position of the call in its batch (0 for a single call).
        index: usize,
        /// The arguments as the provider delivered them.
        arguments: Arguments,
        /// The id of the call that made this one, for a nested call (a script's, in code mode).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
    },
    /// The tool began running.
    Started {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Unix time in milliseconds.
        timestamp_ms: u64,
    },
    /// A progress update sent by the tool.
    Progress {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Unix time in milliseconds.
        timestamp_ms: u64,
        /// The update.
        update: Progress,
    },
    /// A title and UI metadata update sent by the tool.
    Metadata {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Unix time in milliseconds.
        timestamp_ms: u64,
        /// A short title for the UI.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// UI metadata.
        metadata: Value,
    },
    /// The call ended; its result is final.
    Finished {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Unix time in milliseconds.
        timestamp_ms: u64,
        /// How the call ended.
        status: CallStatus,
        /// Time from `started` to `finished` in milliseconds (0 when the tool never started).
        duration_ms: f64,
        /// Time from `queued` to `started` (or to `finished`, when it never started) in
        /// milliseconds.
        waited_ms: f64,
        /// The error's kind, for error results.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_kind: Option<ErrorKind>,
        /// The model-facing error message, for error results.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Operator-only detail: the error's source chain, a panic message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

impl ToolEvent {
    /// The id of the call the event belongs to.
    pub fn call_id(&self) -> &str {
        match self {
            ToolEvent::Queued { call_id, .. }
            | ToolEvent::Started { call_id, .. }
            | ToolEvent::Progress { call_id, .. }
            | ToolEvent::Metadata { call_id, .. }
            | ToolEvent::Finished { call_id, .. } => call_id,
        }
    }

    /// The name of the tool the event belongs to.
    pub fn tool(&self) -> &str {
        match self {
            ToolEvent::Queued { tool, .. }
            | ToolEvent::Started { tool, .. }
            | ToolEvent::Progress { tool, .. }
            | ToolEvent::Metadata { tool, .. }
            | ToolEvent::Finished { tool, .. } => tool,
        }
    }

    /// When the event happened, in Unix milliseconds.
    pub fn timestamp_ms(&self) -> u64 {
        match self {
            ToolEvent::Queued { timestamp_ms, .. }
            | ToolEvent::Started { timestamp_ms, .. }
            | ToolEvent::Progress { timestamp_ms, .. }
            | ToolEvent::Metadata { timestamp_ms, .. }
            | ToolEvent::Finished { timestamp_ms, .. } => *timestamp_ms,
        }
    }

    /// The status, for a `finished` event.
    pub fn status(&self) -> Option<CallStatus> {
        match self {
            ToolEvent::Finished { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The event's type name, as in its JSON `type` field.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolEvent::Queued { .. } => "queued",
            ToolEvent::Started { .. } => "started",
            ToolEvent::Progress { .. } => "progress",
            ToolEvent::Metadata { .. } => "metadata",
            ToolEvent::Finished { .. } => "finished",
        }
    }
}

/// Where a dispatcher sends its events. Must not block: it is called from running calls.
pub trait EventSink: Send + Sync + 'static {
    /// Delivers one event.
    fn emit(&self, event: ToolEvent);
}

impl EventSink for mpsc::UnboundedSender<ToolEvent> {
    fn emit(&self, event: ToolEvent) {
        // A UI that stopped listening is not the call's problem.
        let _ = self.send(event);
    }
}

impl<S: EventSink + ?Sized> EventSink for Arc<S> {
    fn emit(&self, event: ToolEvent) {
        (**self).emit(event);
    }
}

/// An event sink from a closure.
pub struct EventFn<F>(pub F);

impl<F: Fn(ToolEvent) + Send + Sync + 'static> EventSink for EventFn<F> {
    fn emit(&self, event: ToolEvent) {
        (self.0)(event);
    }
}

impl<F> fmt::Debug for EventFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventFn")
    }
}

/// An unbounded event channel: give the sender to the dispatcher's builder, read the receiver
/// in the UI (wrap it in `tokio_stream::wrappers::UnboundedReceiverStream` for a `Stream`).
pub fn channel() -> (mpsc::UnboundedSender<ToolEvent>, mpsc::UnboundedReceiver<ToolEvent>) {
    mpsc::unbounded_channel()
}

/// The current Unix time in milliseconds (0 if the clock is before 1970).
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

pub(crate) fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_with_a_type_tag() {
        let event = ToolEvent::Finished {
            call_id: "c1".into(),
            tool: "read".into(),
            timestamp_ms: 5,
            status: CallStatus::TimedOut,
            duration_ms: 1.5,
            waited_ms: 0.0,
            error_kind: Some(ErrorKind::Timeout),
            message: None,
            detail: None,
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "type": "finished", "call_id": "c1", "tool": "read", "timestamp_ms": 5,
                "status": "timed_out", "duration_ms": 1.5, "waited_ms": 0.0, "error_kind": "timeout"
            })
        );
        let back: ToolEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);

        let progress = ToolEvent::Progress {
            call_id: "c1".into(),
            tool: "read".into(),
            timestamp_ms: 6,
            update: Progress::message("half way"),
        };
        assert_eq!(
            serde_json::to_value(&progress).unwrap(),
            serde_json::json!({
                "type": "progress", "call_id": "c1", "tool": "read", "timestamp_ms": 6,
                "update": {"message": "half way"}
            })
        );
    }
}
