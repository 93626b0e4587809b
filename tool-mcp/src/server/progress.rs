//! Progress and log messages of running calls, forwarded to the client as
//! `notifications/progress` and `notifications/message`.
// Logging is deprecated in rmcp (SEP-2577: protocol 2026-07-28 has none); clients of the
// revisions before it set a level and read the messages.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use tool_core::{ContextSink, LogLevel, Progress};

/// The lowest level of the log messages a session's client gets (`logging/setLevel`; `info`
/// until it sets one).
#[derive(Debug)]
pub(super) struct LogThreshold(AtomicU8);

impl Default for LogThreshold {
    fn default() -> Self {
        LogThreshold(AtomicU8::new(LogLevel::Info as u8))
    }
}

impl LogThreshold {
    pub(super) fn set(&self, level: &LoggingLevel) {
        self.0.store(crate::wire::log_level(level) as u8, Ordering::Relaxed);
    }

    fn passes(&self, level: LogLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

/// At most this many notices of one call wait for the client; past it, new ones are dropped
/// and counted (a tool, or a mounted server, writing faster than the client reads cannot grow
/// the queue without end).
const QUEUE: usize = 1024;

/// What goes to the client about a running call.
enum Notice {
    Progress(Progress),
    Log(LoggingMessageNotificationParam),
}

/// One call's progress (when the request carried a progress token) and log messages (those at
/// or above the session's [`LogThreshold`]), sent to the client in order. It is the call's
/// context sink, and starts its sending task only when the tool first reports something: a call
/// that reports nothing costs nothing more.
pub(super) struct ProgressForwarder {
    token: Option<ProgressToken>,
    threshold: Arc<LogThreshold>,
    peer: Peer<RoleServer>,
    /// The server's runtime: a tool may report progress from a thread of its own.
    runtime: Handle,
    state: Mutex<State>,
    /// Notices dropped because the queue was full, not yet told to the client.
    dropped: Arc<AtomicU64>,
}

enum State {
    /// Nothing reported yet.
    Idle,
    Sending(mpsc::Sender<Notice>, JoinHandle<()>),
    /// The call ended: later updates (from work the tool left behind) are dropped.
    Closed,
}

impl ProgressForwarder {
    pub(super) fn new(
        token: Option<ProgressToken>,
        threshold: Arc<LogThreshold>,
        peer: Peer<RoleServer>,
    ) -> Arc<Self> {
        let runtime = Handle::current();
        Arc::new(ProgressForwarder {
            token,
            threshold,
            peer,
            runtime,
            state: Mutex::new(State::Idle),
            dropped: Arc::default(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn start(&self) -> (mpsc::Sender<Notice>, JoinHandle<()>) {
        let (sender, mut receiver) = mpsc::channel::<Notice>(QUEUE);
        let (token, peer) = (self.token.clone(), self.peer.clone());
        let (dropped, threshold) = (self.dropped.clone(), self.threshold.clone());
        let task = self.runtime.spawn(async move {
            let mut figure = ProgressFigure::default();
            // Says how many were dropped since it last said so, if any.
            let tell_dropped = async || {
                let lost = dropped.swap(0, Ordering::Relaxed);
                if lost == 0 || !threshold.passes(LogLevel::Warning) {
                    return Ok(());
                }
                let text = format!(
                    "{lost} progress or log messages of this call were dropped: they came faster than they could \
                     be sent"
                );
                let param = LoggingMessageNotificationParam::new(LoggingLevel::Warning, Value::String(text))
                    .with_logger("tools");
                peer.notify_logging_message(param).await
            };
            while let Some(notice) = receiver.recv().await {
                if tell_dropped().await.is_err() {
                    return;
                }
                let sent = match notice {
                    Notice::Progress(update) => {
                        let Some(token) = token.clone() else { continue };
                        let mut param = ProgressNotificationParam::new(token, figure.next(&update));
                        if let Some(total) = update.total.filter(|t| t.is_finite()) {
                            param = param.with_total(total);
                        }
                        if let Some(message) = update.message {
                            param = param.with_message(message);
                        }
                        peer.notify_progress(param).await
                    }
                    Notice::Log(param) => peer.notify_logging_message(param).await,
                };
                if sent.is_err() {
                    return;
                }
            }
            let _ = tell_dropped().await;
        });
        (sender, task)
    }

    fn send(&self, notice: Notice) {
        let mut state = self.state();
        if let State::Idle = *state {
            let (sender, task) = self.start();
            *state = State::Sending(sender, task);
        }
        if let State::Sending(sender, _) = &*state
            && let Err(mpsc::error::TrySendError::Full(_)) = sender.try_send(notice)
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Closes the call's progress and waits until every update sent so far has gone out, so
    /// that the notifications precede the call's response. Dropping the future stops the
    /// sending.
    pub(super) async fn finish(&self) {
        let previous = std::mem::replace(&mut *self.state(), State::Closed);
        if let State::Sending(sender, task) = previous {
            drop(sender);
            let mut task = AbortOnDrop(task);
            let _ = (&mut task.0).await;
        }
    }
}

impl ContextSink for ProgressForwarder {
    fn progress(&self, _call_id: &str, _tool: &str, update: Progress) {
        if self.token.is_some() {
            self.send(Notice::Progress(update));
        }
    }

    fn metadata(&self, _call_id: &str, _tool: &str, _title: Option<String>, _metadata: Value) {}

    fn log(&self, _call_id: &str, tool: &str, level: LogLevel, logger: Option<&str>, data: &Value) {
        if !self.threshold.passes(level) {
            return;
        }
        // The tool's name when it names no logger of its own.
        let param = LoggingMessageNotificationParam::new(crate::wire::logging_level(level), data.clone())
            .with_logger(logger.unwrap_or(tool));
        self.send(Notice::Log(param));
    }
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The `progress` number of each notification.
#[derive(Default)]
struct ProgressFigure {
    updates: u64,
    last_figure: Option<f64>,
}

impl ProgressFigure {
    fn next(&mut self, update: &Progress) -> f64 {
        self.updates += 1;
        match update.progress.filter(|p| p.is_finite()) {
            Some(figure) => {
                self.last_figure = Some(figure);
                figure
            }
            None => self.last_figure.unwrap_or(self.updates as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_figures_count_messages_until_the_tool_gives_a_figure() {
        let mut figure = ProgressFigure::default();
        assert_eq!(figure.next(&Progress::message("a")), 1.0);
        assert_eq!(figure.next(&Progress::message("b")), 2.0);
        let half = Progress { progress: Some(5.0), total: Some(10.0), message: None };
        assert_eq!(figure.next(&half), 5.0);
        assert_eq!(figure.next(&Progress::message("c")), 5.0);
        let nan = Progress { progress: Some(f64::NAN), ..Progress::default() };
        assert_eq!(figure.next(&nan), 5.0);
    }
}
