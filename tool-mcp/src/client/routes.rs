//! Where a server's progress notifications go: the context of the call that carries the token;
//! and its log messages: the calls in flight on its connection.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{ProgressNotificationParam, ProgressToken};

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
