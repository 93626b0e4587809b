//! Progress of running calls, forwarded to the client as `notifications/progress`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;

use crate::context::Progress;
use crate::events::{EventSink, ToolEvent};

/// The progress channel of each running call whose request asked for progress, by call id.
#[derive(Default)]
pub(super) struct ProgressRoutes {
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<Progress>>>,
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Progress>>> {
        self.routes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The dispatcher's event sink: routes progress events to their call's forwarder, and passes
/// every event on to the application's sink.
pub(super) struct EventRouter {
    pub(super) routes: Arc<ProgressRoutes>,
    pub(super) tee: Option<Arc<dyn EventSink>>,
}

impl EventSink for EventRouter {
    fn emit(&self, event: ToolEvent) {
        if let ToolEvent::Progress { call_id, update, .. } = &event
            && let Some(route) = self.routes.lock().get(call_id.as_str())
        {
            let _ = route.send(update.clone());
        }
        if let Some(tee) = &self.tee {
            tee.emit(event);
        }
    }
}

/// Sends one call's progress updates to the client, in order, as `notifications/progress`.
pub(super) struct ProgressForwarder {
    route: RouteGuard,
    task: tokio::task::JoinHandle<()>,
}

/// Removes a call's route when the call ends, even if its future is dropped.
struct RouteGuard {
    routes: Arc<ProgressRoutes>,
    call_id: String,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.call_id);
    }
}

impl ProgressForwarder {
    pub(super) fn start(
        routes: &Arc<ProgressRoutes>,
        call_id: &str,
        token: ProgressToken,
        peer: Peer<RoleServer>,
    ) -> Self {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Progress>();
        routes.lock().insert(call_id.to_owned(), sender);
        let task = tokio::spawn(async move {
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
        ProgressForwarder { route: RouteGuard { routes: routes.clone(), call_id: call_id.to_owned() }, task }
    }

    /// Closes the route and waits until every update sent so far has gone out, so that the
    /// notifications precede the call's response. Dropping the future stops the forwarding.
    pub(super) async fn finish(self) {
        drop(self.route);
        let mut task = AbortOnDrop(self.task);
        let _ = (&mut task.0).await;
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

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
