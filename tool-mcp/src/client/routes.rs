//! Where a server's progress notifications go: the context of the call that carries the token;
//! and its log messages: the calls in flight on its connection.
//!
//! rmcp's client hands each notification to a task of its own, so the last progress a server
//! sends before its result can reach us after the result. The connection's transport
//! ([`Counted`]) counts the progress notifications of each token as they arrive, in order, and a
//! call waits, once its result is in, until as many were delivered ([`ProgressRoutes::settled`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    JsonRpcMessage, JsonRpcNotification, ProgressNotificationParam, ProgressToken, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

use tool_core::{Progress, ToolContext};

/// At most this many tokens are counted; past it, those no call waits for are forgotten.
const COUNTED_LIMIT: usize = 256;

/// How long a call whose result is in waits for its last progress notifications.
const SETTLE_LIMIT: Duration = Duration::from_secs(1);

/// Notifications kept for a token no call has claimed yet: a fast server may report progress
/// before the call that sent the request has registered its token.
const EARLY_LIMIT: usize = 64;

/// The calls in flight on one connection, by progress token.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    inner: Mutex<Routes>,
    /// Woken by each delivery.
    delivered: Notify,
}

#[derive(Default)]
struct Routes {
    calls: HashMap<ProgressToken, ToolContext>,
    early: VecDeque<ProgressNotificationParam>,
    /// Per token: notifications arrived on the connection, and delivered.
    counts: HashMap<ProgressToken, (u64, u64)>,
}

impl Routes {
    fn count(&mut self, token: &ProgressToken) -> &mut (u64, u64) {
        if self.counts.len() >= COUNTED_LIMIT && !self.counts.contains_key(token) {
            let calls = &self.calls;
            self.counts.retain(|token, _| calls.contains_key(token));
        }
        self.counts.entry(token.clone()).or_default()
    }
}

impl ProgressRoutes {
    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends the progress of `token` to `ctx` until the guard is dropped, starting with what
    /// arrived before.
    pub(crate) fn register(self: &Arc<Self>, token: ProgressToken, ctx: ToolContext) -> RouteGuard {
        let early: Vec<ProgressNotificationParam> = {
            let mut routes = self.lock();
            routes.calls.insert(token.clone(), ctx.clone());
            let (mine, others): (Vec<_>, Vec<_>) =
                routes.early.drain(..).partition(|p| p.progress_token == token);
            routes.early = others.into();
            mine
        };
        for params in early {
            ctx.progress(progress(params));
        }
        RouteGuard { routes: self.clone(), token }
    }

    /// Notes that a progress notification of `token` arrived on the connection (called in the
    /// order they arrive, before any is delivered).
    pub(crate) fn arrived(&self, token: &ProgressToken) {
        self.lock().count(token).0 += 1;
    }

    /// Waits (at most a second) until every progress notification of `token` that arrived has
    /// been delivered.
    pub(crate) async fn settled(&self, token: &ProgressToken) {
        let _ = tokio::time::timeout(SETTLE_LIMIT, async {
            loop {
                let delivered = self.delivered.notified();
                let (arrived, done) = self.lock().counts.get(token).copied().unwrap_or_default();
                if done >= arrived {
                    return;
                }
                delivered.await;
            }
        })
        .await;
    }

    /// Delivers one notification to its call.
    pub(crate) fn deliver(&self, params: ProgressNotificationParam) {
        let _counted = DeliveredOnDrop { routes: self, token: params.progress_token.clone() };
        let ctx = {
            let mut routes = self.lock();
            match routes.calls.get(&params.progress_token) {
                Some(ctx) => ctx.clone(),
                None => {
                    if routes.early.len() == EARLY_LIMIT {
                        routes.early.pop_front();
                    }
                    routes.early.push_back(params);
                    return;
                }
            }
        };
        ctx.progress(progress(params));
    }
}

impl ProgressRoutes {
    /// Passes a log message of the server (`notifications/message`, which names no call) to
    /// every call in flight on its connection, as the call's own log: what a server logs while
    /// it serves a call is about that call. With none in flight, it is dropped.
    #[allow(deprecated)] // Logging is deprecated in rmcp (SEP-2577); servers before 2026-07-28 log.
    pub(crate) fn log(&self, params: rmcp::model::LoggingMessageNotificationParam) {
        let calls: Vec<ToolContext> = self.lock().calls.values().cloned().collect();
        let level = crate::wire::log_level(&params.level);
        for ctx in calls {
            ctx.log(level, params.logger.as_deref(), params.data.clone());
        }
    }
}

fn progress(params: ProgressNotificationParam) -> Progress {
    Progress { message: params.message, progress: Some(params.progress), total: params.total }
}

/// Stops a call's route when the call ends.
pub(crate) struct RouteGuard {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        let mut routes = self.routes.lock();
        routes.calls.remove(&self.token);
        routes.counts.remove(&self.token);
    }
}

/// Counts a delivery once it is done (the call's context has it).
struct DeliveredOnDrop<'a> {
    routes: &'a ProgressRoutes,
    token: ProgressToken,
}

impl Drop for DeliveredOnDrop<'_> {
    fn drop(&mut self) {
        self.routes.lock().count(&self.token).1 += 1;
        self.routes.delivered.notify_waiters();
    }
}

/// A connection's transport that counts the progress notifications as they arrive.
pub(crate) struct Counted<T> {
    pub(crate) inner: T,
    pub(crate) routes: Arc<ProgressRoutes>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Counted<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ProgressNotification(progress),
            ..
        }) = &message
        {
            self.routes.arrived(&progress.params.progress_token);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[derive(Default)]
    struct Seen(Mutex<Vec<f64>>);

    impl tool_core::ContextSink for Seen {
        fn progress(&self, _: &str, _: &str, update: Progress) {
            self.0.lock().unwrap().extend(update.progress);
        }

        fn metadata(&self, _: &str, _: &str, _: Option<String>, _: Value) {}
    }

    /// Two notifications arrived; the second is delivered late (as rmcp's task for it may run
    /// after the result): the call waits for it before it ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_waits_for_the_progress_that_arrived_before_its_result() {
        let routes = Arc::new(ProgressRoutes::default());
        let seen = Arc::new(Seen::default());
        let ctx = ToolContext::builder("t").sink(seen.clone()).build();
        let token = ProgressToken(rmcp::model::NumberOrString::Number(7));
        let _route = routes.register(token.clone(), ctx);
        routes.arrived(&token);
        routes.arrived(&token);
        routes.deliver(ProgressNotificationParam::new(token.clone(), 1.0));
        let late = routes.clone();
        let second = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            late.deliver(ProgressNotificationParam::new(second, 2.0));
        });
        routes.settled(&token).await;
        assert_eq!(*seen.0.lock().unwrap(), [1.0, 2.0]);
        // Nothing outstanding: settled on the first poll.
        let settled = std::pin::pin!(routes.settled(&token));
        let waker = std::task::Waker::noop();
        assert!(settled.poll(&mut std::task::Context::from_waker(waker)).is_ready());
    }
}
