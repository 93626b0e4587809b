//! Progress of running calls, forwarded to the client as `notifications/progress`.

use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use tool_core::{ContextSink, Progress};

/// One call's progress, sent to the client in order as `notifications/progress`. It is the
/// call's context sink, and starts its sending task only when the tool first reports progress:
/// a call that reports none costs nothing more than the request's token.
pub(super) struct ProgressForwarder {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    /// The server's runtime: a tool may report progress from a thread of its own.
    runtime: Handle,
    state: Mutex<State>,
}

enum State {
    /// No progress reported yet.
    Idle,
    Sending(mpsc::UnboundedSender<Progress>, JoinHandle<()>),
    /// The call ended: later updates (from work the tool left behind) are dropped.
    Closed,
}

impl ProgressForwarder {
    pub(super) fn new(token: ProgressToken, peer: Peer<RoleServer>) -> Arc<Self> {
        let runtime = Handle::current();
        Arc::new(ProgressForwarder { token, peer, runtime, state: Mutex::new(State::Idle) })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn start(&self) -> (mpsc::UnboundedSender<Progress>, JoinHandle<()>) {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Progress>();
        let (token, peer) = (self.token.clone(), self.peer.clone());
        let task = self.runtime.spawn(async move {
            let mut figure = ProgressFigure::default();
            while let Some(update) = receiver.recv().await {
                let mut param = ProgressNotificationParam::new(token.clone(), figure.next(&update));
                if let Some(total) = update.total.filter(|t| t.is_finite()) {
                    param = param.with_total(total);
                }
                if let Some(message) = update.message {
                    param = param.with_message(message);
                }
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        (sender, task)
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
        let mut state = self.state();
        if let State::Idle = *state {
            let (sender, task) = self.start();
            *state = State::Sending(sender, task);
        }
        if let State::Sending(sender, _) = &*state {
            let _ = sender.send(update);
        }
    }

    fn metadata(&self, _call_id: &str, _tool: &str, _title: Option<String>, _metadata: Value) {}
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
