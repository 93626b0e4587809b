//! Where a server's progress notifications go: the context of the call that carries the token;
//! and its log messages: the calls in flight on its connection.
//!
//! rmcp's client hands each notification to a task of its own, so progress or a log message
//! delivered from its handler could reach the call after the call's result (a log message then
//! found no call in flight and was lost), and in another order than it came. The connection's
//! transport ([`Routed`]) delivers each progress notification and log message itself, as it
//! reads it, before the messages after it: in the order the server sent them, and before its
//! result.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleClient;
use rmcp::model::{
    JsonRpcMessage, JsonRpcNotification, ProgressNotificationParam, ProgressToken, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use tool_core::{Progress, ToolContext};

/// Notifications kept for a token no call has claimed yet: a fast server may report progress
/// before the call that sent the request has registered its token.
const EARLY_LIMIT: usize = 64;

/// The calls in flight on one connection, by progress token.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    inner: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    calls: HashMap<ProgressToken, ToolContext>,
    early: VecDeque<ProgressNotificationParam>,
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

    /// Delivers one notification to its call.
    pub(crate) fn deliver(&self, params: ProgressNotificationParam) {
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
        self.routes.lock().calls.remove(&self.token);
    }
}

/// A connection's transport that delivers the server's progress notifications as it reads
/// them (the client handler leaves them alone).
pub(crate) struct Routed<T> {
    pub(crate) inner: T,
    pub(crate) routes: Arc<ProgressRoutes>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    #[allow(deprecated)] // Logging is deprecated in rmcp (SEP-2577); servers before 2026-07-28 log.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        match &message {
            JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ServerNotification::ProgressNotification(progress),
                ..
            }) => {
                // Passed on too: rmcp's own watch of the call's time limit counts progress.
                self.routes.deliver(progress.params.clone());
            }
            JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ServerNotification::LoggingMessageNotification(log),
                ..
            }) => self.routes.log(log.params.clone()),
            _ => {}
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
    struct Seen(Mutex<Vec<f64>>, Mutex<Vec<Value>>);

    impl tool_core::ContextSink for Seen {
        fn progress(&self, _: &str, _: &str, update: Progress) {
            self.0.lock().unwrap().extend(update.progress);
        }

        fn metadata(&self, _: &str, _: &str, _: Option<String>, _: Value) {}

        fn log(&self, _: &str, _: &str, _: tool_core::LogLevel, _: Option<&str>, data: &Value) {
            self.1.lock().unwrap().push(data.clone());
        }
    }

    /// A server connection that yields the messages it was given, then ends.
    struct Replay(VecDeque<RxJsonRpcMessage<RoleClient>>);

    impl Transport<RoleClient> for Replay {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            self.0.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    /// A log message the server sent while a call was in flight reaches the call as the
    /// transport reads it, before the call's result is read (rmcp's handler, on a task of its
    /// own, could run after the result and find no call).
    #[tokio::test]
    async fn a_log_message_reaches_the_call_in_flight_as_it_is_read() {
        let message = |value: Value| serde_json::from_value::<RxJsonRpcMessage<RoleClient>>(value).unwrap();
        let log = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "working"}});
        let result = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
        let routes = Arc::new(ProgressRoutes::default());
        let mut transport =
            Routed { inner: Replay([message(log), message(result)].into()), routes: routes.clone() };
        let seen = Arc::new(Seen::default());
        let ctx = ToolContext::builder("t").sink(seen.clone()).build();
        let route = routes.register(ProgressToken(rmcp::model::NumberOrString::Number(1)), ctx);
        transport.receive().await.expect("the log message");
        assert_eq!(*seen.1.lock().unwrap(), [Value::from("working")]);
        transport.receive().await.expect("the result");
        drop(route);
    }

    /// Progress that came before its call registered reaches the call first, then the rest,
    /// in the order delivered.
    #[test]
    fn early_progress_comes_first_then_the_rest_in_order() {
        let routes = Arc::new(ProgressRoutes::default());
        let seen = Arc::new(Seen::default());
        let token = ProgressToken(rmcp::model::NumberOrString::Number(7));
        routes.deliver(ProgressNotificationParam::new(token.clone(), 1.0));
        let ctx = ToolContext::builder("t").sink(seen.clone()).build();
        let route = routes.register(token.clone(), ctx);
        for step in [2.0, 3.0] {
            routes.deliver(ProgressNotificationParam::new(token.clone(), step));
        }
        drop(route);
        routes.deliver(ProgressNotificationParam::new(token, 4.0));
        assert_eq!(*seen.0.lock().unwrap(), [1.0, 2.0, 3.0]);
    }
}
