//! `McpMount`: one connected server, its current tools, and its calls (restarting it when it
//! stopped).

use std::fmt;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    PaginatedRequestParams, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc, watch};

use super::child::{ANSWER_TOO_DEEP, ANSWER_TOO_LARGE, MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH};
use super::config::ServerConfig;
use super::connection::{self, Session};
use super::handler::MountHandler;
use super::routes::ProgressRoutes;
use super::tool::{Listed, Server, mounted_tools};
use tool_core::ToolContext;
use tool_core::ToolError;
use tool_core::ToolOutput;
use tool_core::{BoxFuture, Tool};

/// The most content items a mounted tool's result may hold: each item costs far more in memory
/// than its few bytes of JSON.
const MAX_CONTENT_ITEMS: usize = 10_000;

/// At most this many rounds of input (revision 2026-07-28) for one call, as the official SDKs
/// allow.
const MAX_INPUT_ROUNDS: usize = 10;

/// At most this many questions in one round: each may reach the person at the host.
const MAX_INPUT_REQUESTS: usize = 8;

/// The first wait before restarting a server that stopped; it doubles with each attempt.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// A server that could not be mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountError {
    /// The server's name.
    pub server: String,
    /// What went wrong and what to do.
    pub message: String,
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MCP server `{}`: {}", self.server, self.message)
    }
}

impl std::error::Error for MountError {}

/// One mounted MCP server: a live session and the tools it lists, as ordinary [`Tool`]s.
///
/// Add [`tools`](McpMount::tools) to a [`RegistryBuilder`](tool_core::RegistryBuilder). Each call of
/// one validates its arguments against the server's schema (as for every tool), sends
/// `tools/call`, turns the server's progress notifications into the call's progress, sends
/// `notifications/cancelled` when the call is cancelled or dropped, and gives up when the server
/// is silent for [`ServerConfig::timeout`] (progress resets it) or the call takes
/// [`ServerConfig::total_timeout`] in all. A server that stopped or does not answer makes the call
/// an error result naming it; the next call starts it again (up to
/// [`ServerConfig::restart_attempts`] tries, waiting 100 ms, 200 ms, ... between them).
///
/// When the server sends `notifications/tools/list_changed`, the mount lists its tools again:
/// [`tools`](McpMount::tools) returns the new set and [`changes`](McpMount::changes) wakes up, so
/// the application builds a new registry from it (a registry, once built, does not change). The
/// tools of an older registry keep working as long as the server still has them.
///
/// Dropping the last handle to the mount and its tools ends the session and stops the server's
/// process group.
#[derive(Clone)]
pub struct McpMount {
    state: Arc<MountState>,
}

impl fmt::Debug for McpMount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpMount").field("server", &self.state.inner.config.name).finish_non_exhaustive()
    }
}

/// The tool list. Kept apart from [`MountInner`], which every tool holds, so that the tools in
/// the list do not keep their own connection alive.
struct MountState {
    inner: Arc<MountInner>,
    tools: RwLock<Vec<Arc<dyn Tool>>>,
    /// The tools of the last listing that cannot be used, each with the reason.
    skipped: RwLock<Vec<String>>,
    generation: watch::Sender<u64>,
}

/// The connection, shared by the mount and its tools.
pub(crate) struct MountInner {
    pub(crate) config: ServerConfig,
    routes: Arc<ProgressRoutes>,
    session: Mutex<Option<Arc<Session>>>,
    list_changed: mpsc::UnboundedSender<()>,
    /// Its resources, templates and prompts.
    pub(crate) extras: Arc<super::extras::Extras>,
    /// The calls in flight, for the server's questions.
    askers: Arc<super::elicit::Askers>,
}

impl Drop for MountInner {
    fn drop(&mut self) {
        if let Some(session) = self.session.get_mut().take() {
            session.close();
        }
    }
}

impl McpMount {
    /// Starts the server, lists its tools (every page) and makes them ours. Fails when the
    /// server cannot be started, does not answer, or lists a tool we cannot offer (a schema
    /// that does not compile or cannot be given to a provider; two tools with one name).
    pub async fn connect(config: ServerConfig) -> Result<McpMount, MountError> {
        let name = config.name.clone();
        let redacting = config.clone();
        let error =
            |message: String| MountError { server: name.clone(), message: redacting.redact(&message) };
        let (list_changed, mut changes) = mpsc::unbounded_channel();
        let inner = Arc::new(MountInner {
            config,
            routes: Arc::default(),
            session: Mutex::new(None),
            list_changed,
            extras: Arc::default(),
            askers: Arc::default(),
        });
        let session = connection::start(&inner.config, inner.handler()).await.map_err(&error)?;
        let session = Arc::new(session);
        *inner.session.lock().await = Some(session.clone());
        let listed = inner.list(&session).await.map_err(&error)?;
        inner.extras.refresh(session.peer()).await;
        let state = Arc::new(MountState {
            inner,
            tools: RwLock::new(listed.tools),
            skipped: RwLock::new(listed.skipped),
            generation: watch::channel(0).0,
        });

        let weak: Weak<MountState> = Arc::downgrade(&state);
        tokio::spawn(async move {
            while changes.recv().await.is_some() {
                // Several notifications in a row need one listing.
                while changes.try_recv().is_ok() {}
                let Some(state) = weak.upgrade() else { return };
                state.refresh().await;
            }
        });
        Ok(McpMount { state })
    }

    pub(crate) fn inner(&self) -> &Arc<MountInner> {
        &self.state.inner
    }

    pub(crate) fn extras(&self) -> &super::extras::Extras {
        &self.state.inner.extras
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.state.inner.config.name
    }

    /// The server's tools as last listed.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.state.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The server's tools of the last listing that cannot be used (a schema that does not
    /// compile or cannot be described to a provider, a name taken twice), each with the reason;
    /// the other tools are mounted.
    pub fn skipped(&self) -> Vec<String> {
        self.state.skipped.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A receiver whose value goes up each time the tool list changed (after
    /// `notifications/tools/list_changed`, or a restart that listed other tools).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.state.generation.subscribe()
    }

    /// Lists the server's tools again now.
    pub async fn refresh(&self) -> Result<(), MountError> {
        let inner = &self.state.inner;
        let error = |message: String| MountError {
            server: inner.config.name.clone(),
            message: inner.config.redact(&message),
        };
        let session = inner.live().await.map_err(|e| error(e.message().to_owned()))?;
        let listed = inner.list(&session).await.map_err(error)?;
        self.state.replace_tools(listed);
        inner.extras.refresh(session.peer()).await;
        Ok(())
    }

    /// Ends the session now (the next call starts the server again).
    pub async fn close(&self) {
        if let Some(session) = self.state.inner.session.lock().await.take() {
            session.close();
        }
    }
}

impl MountState {
    fn replace_tools(&self, listed: Listed) {
        *self.tools.write().unwrap_or_else(|p| p.into_inner()) = listed.tools;
        *self.skipped.write().unwrap_or_else(|p| p.into_inner()) = listed.skipped;
        self.generation.send_modify(|generation| *generation += 1);
    }

    /// Lists the tools again after a change; on failure the old list stays.
    async fn refresh(&self) {
        let Ok(session) = self.inner.live().await else { return };
        if let Ok(listed) = self.inner.list(&session).await {
            let same = {
                let current = self.tools.read().unwrap_or_else(|p| p.into_inner());
                current.len() == listed.tools.len()
                    && current.iter().zip(&listed.tools).all(|(a, b)| a.spec() == b.spec())
            };
            if !same {
                self.replace_tools(listed);
            }
        }
        self.inner.extras.refresh(session.peer()).await;
    }
}

/// Connects to every server of `config` at once; the tools of all of them, or the first error.
/// Two servers whose tools would share a name are an error naming both.
pub async fn connect_all(config: &super::config::McpConfig) -> Result<Vec<McpMount>, MountError> {
    let connecting = config.servers.iter().cloned().map(|server| tokio::spawn(McpMount::connect(server)));
    let mut mounts = Vec::with_capacity(config.servers.len());
    for (task, server) in connecting.collect::<Vec<_>>().into_iter().zip(&config.servers) {
        let mount = task.await.map_err(|e| MountError {
            server: server.name.clone(),
            message: format!("connecting failed unexpectedly: {e}"),
        })??;
        mounts.push(mount);
    }
    let mut owners: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for mount in &mounts {
        for tool in mount.tools() {
            let name = tool.spec().name.clone();
            if let Some(first) = owners.insert(name.clone(), mount.name().to_owned()) {
                return Err(MountError {
                    server: mount.name().to_owned(),
                    message: format!(
                        "its tool `{name}` has the name of a tool of the server `{first}`; give one of them a `toolPrefix`"
                    ),
                });
            }
        }
    }
    Ok(mounts)
}

impl MountInner {
    fn handler(&self) -> MountHandler {
        MountHandler {
            routes: self.routes.clone(),
            list_changed: self.list_changed.clone(),
            extras: self.extras.clone(),
            askers: self.askers.clone(),
            server: self.config.name.clone(),
            sampling: self.config.sampling,
        }
    }

    /// Every page of `tools/list`, as tools.
    async fn list(self: &Arc<Self>, session: &Session) -> Result<Listed, String> {
        let peer = session.peer();
        let listed = super::pages::every("tools/list", |cursor| async move {
            let page = peer.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))).await?;
            Ok((page.tools, page.next_cursor))
        })
        .await
        .map_err(|e| match e {
            super::pages::PageError::Service(e) => format!("it did not list its tools ({})", described(&e)),
            super::pages::PageError::Endless(why) => format!("it did not list its tools: {why}"),
        })?;
        let server: Arc<dyn Server> = Arc::new(Caller(self.clone()));
        let listed: Vec<_> = listed.into_iter().filter(|tool| self.config.mounts_tool(&tool.name)).collect();
        Ok(mounted_tools(&self.config.name, &self.config.naming, self.config.defer, &server, &listed))
    }

    /// The session, restarting the server when it stopped.
    pub(crate) async fn live(self: &Arc<Self>) -> Result<Arc<Session>, ToolError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref()
            && !session.is_closed()
        {
            return Ok(session.clone());
        }
        let stopped = slot.take();
        let attempts = self.config.restart_attempts.max(1);
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            match connection::start(&self.config, self.handler()).await {
                Ok(session) => {
                    let session = Arc::new(session);
                    *slot = Some(session.clone());
                    if stopped.is_some() {
                        // The restarted server may list other tools.
                        let _ = self.list_changed.send(());
                    }
                    return Ok(session);
                }
                Err(message) => last = message,
            }
        }
        Err(ToolError::execution(format!(
            "The MCP server `{}` is not running and could not be started again ({attempts} attempts). Its tools cannot be used now; go on without them and tell the user the server is down.",
            self.config.name
        ))
        .with_source(std::io::Error::other(self.config.redact(&last))))
    }

    /// One `tools/call` of the server's tool `remote`.
    pub(crate) async fn call(
        self: &Arc<Self>,
        remote: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let server = &self.config.name;
        let _asking = self.askers.enter(&ctx);
        let session = self.live().await?;
        let mut params = CallToolRequestParams::new(remote.to_owned());
        match args {
            Value::Object(arguments) => params = params.with_arguments(arguments),
            Value::Null => {}
            other => {
                return Err(ToolError::invalid_arguments(format!(
                    "the arguments of `{}` must be a JSON object, not {other}",
                    ctx.tool_name()
                )));
            }
        }
        let peer = session.peer().clone();
        // Revision 2026-07-28's rounds: a result that asks for input is answered (our user, our
        // model) and the call sent again with the answers, at most this many times.
        let mut rounds = 0;
        loop {
            let options = PeerRequestOptions::with_timeout(self.config.timeout)
                .reset_timeout_on_progress()
                .with_max_total_timeout(self.config.total_timeout);
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let handle = match peer.send_request_with_option(request, options).await {
                Ok(handle) => handle,
                Err(error) => return Err(self.stopped(remote, &session, error).await),
            };
            let _route = self.routes.register(handle.progress_token.clone(), ctx.clone());
            let mut cancel = CancelOnDrop { peer: Some(peer.clone()), id: handle.id.clone() };
            let response = tokio::select! {
                response = handle.await_response() => response,
                () = ctx.cancellation_token().cancelled() => {
                    cancel.peer = None;
                    let notice = CancelledNotificationParam::new(Some(cancel.id.clone()), Some("cancelled by the client".to_owned()));
                    let _ = peer.notify_cancelled(notice).await;
                    return Err(ToolError::cancelled(format!(
                        "The call of `{remote}` on the MCP server `{server}` was cancelled before it finished."
                    )));
                }
            };
            cancel.peer = None;
            match response {
                Ok(ServerResult::InputRequiredResult(input)) if rounds < MAX_INPUT_ROUNDS => {
                    rounds += 1;
                    let questions = input.input_requests.unwrap_or_default();
                    params.input_responses = Some(self.answer_inputs(remote, questions).await?);
                    params.request_state = input.request_state;
                }
                response => return self.outcome(remote, &session, response).await,
            }
        }
    }

    /// Answers the questions of an `input_required` result: a completion from the call's
    /// sampler, a question to its user, each as a server's request to us would be answered.
    async fn answer_inputs(
        &self,
        remote: &str,
        questions: rmcp::model::InputRequests,
    ) -> Result<rmcp::model::InputResponses, ToolError> {
        let server = &self.config.name;
        if questions.len() > MAX_INPUT_REQUESTS {
            return Err(ToolError::execution(format!(
                "The MCP server `{server}` asked {} questions at once to run `{remote}`, more than the {MAX_INPUT_REQUESTS} a mounted server may ask in one round, so none was put to the user. Use another tool.",
                questions.len()
            )));
        }
        let mut answers = rmcp::model::InputResponses::new();
        for (key, question) in questions {
            let answer = match question {
                rmcp::model::InputRequest::Elicitation(request) => {
                    self.askers.elicit(server, request.params).await.and_then(|answer| to_value(&answer))
                }
                #[allow(deprecated)] // Sampling is how servers ask for completions, in rounds too.
                rmcp::model::InputRequest::CreateMessage(request) if self.config.sampling => {
                    self.askers.sample(server, request.params).await.and_then(|answer| to_value(&answer))
                }
                rmcp::model::InputRequest::CreateMessage(_) => Err(rmcp::ErrorData::new(
                    rmcp::model::ErrorCode::INVALID_REQUEST,
                    "Nobody can sample: the host allows no sampling for this server.".to_owned(),
                    None,
                )),
                // No roots are offered to mounted servers.
                rmcp::model::InputRequest::ListRoots(_) => Ok(serde_json::json!({"roots": []})),
                _ => Err(rmcp::ErrorData::new(
                    rmcp::model::ErrorCode::INVALID_REQUEST,
                    "This client cannot answer that kind of input request.".to_owned(),
                    None,
                )),
            };
            match answer {
                Ok(answer) => {
                    answers.insert(key, answer);
                }
                Err(refused) => {
                    return Err(ToolError::execution(format!(
                        "The MCP server `{server}` asked for input to run `{remote}`, which could not be given: {}",
                        refused.message
                    )));
                }
            }
        }
        Ok(answers)
    }

    /// The tool output (or error) of a call's final answer.
    async fn outcome(
        &self,
        remote: &str,
        session: &Session,
        response: Result<ServerResult, ServiceError>,
    ) -> Result<ToolOutput, ToolError> {
        let server = &self.config.name;
        match response {
            Ok(ServerResult::CallToolResult(result)) => {
                if result.content.len() > MAX_CONTENT_ITEMS {
                    return Err(ToolError::execution(format!(
                        "The MCP server `{server}` answered the call of `{remote}` with {} content items, more than the {MAX_CONTENT_ITEMS} a mounted tool's result may hold, so the answer was dropped. Ask for less (a smaller range or a narrower query), or use another tool.",
                        result.content.len()
                    )));
                }
                Ok(crate::wire::tool_output(server, &result))
            }
            Ok(ServerResult::InputRequiredResult(_)) => Err(ToolError::execution(format!(
                "The MCP server `{server}` asked for input more than {MAX_INPUT_ROUNDS} times to run `{remote}`, so the call was given up. Use another tool."
            ))),
            Ok(ServerResult::CreateTaskResult(_)) => Err(ToolError::execution(format!(
                "The MCP server `{server}` started a background task to run `{remote}`, which mounted tools do not support. Use another tool."
            ))),
            Ok(_) => Err(ToolError::execution(format!(
                "The MCP server `{server}` answered the call of `{remote}` with something that is not a tool result. Try again once; if it happens again, use another tool."
            ))),
            Err(ServiceError::Timeout { timeout }) => {
                let what = if timeout == self.config.total_timeout && timeout != self.config.timeout {
                    format!(
                        "did not finish `{remote}` within its limit of {}",
                        tool_core::words::duration(timeout)
                    )
                } else {
                    format!(
                        "did not answer the call of `{remote}` for {} (no result and no progress)",
                        tool_core::words::duration(timeout)
                    )
                };
                Err(ToolError::timeout(format!(
                    "The MCP server `{server}` {what}, so the call was cancelled. Try again with a smaller request, or use another tool."
                )))
            }
            Err(ServiceError::McpError(error)) if error.code.0 == ANSWER_TOO_LARGE => {
                Err(ToolError::execution(format!(
                    "The MCP server `{server}` answered the call of `{remote}` with more than {} MiB, the most a mounted server's answer may be, so the answer was dropped. Ask for less (a smaller range or a narrower query), or use another tool.",
                    MAX_ANSWER_BYTES / (1024 * 1024)
                )))
            }
            Err(ServiceError::McpError(error)) if error.code.0 == ANSWER_TOO_DEEP => {
                Err(ToolError::execution(format!(
                    "The MCP server `{server}` answered the call of `{remote}` with arrays and objects nested {MAX_ANSWER_DEPTH} deep or more, which cannot be read, so the answer was dropped. Ask for the data in a flatter shape, or use another tool."
                )))
            }
            Err(ServiceError::McpError(error)) => Err(ToolError::execution(format!(
                "The MCP server `{server}` refused the call of `{remote}`: {} (error {}). Check the arguments against the tool's description and try again.",
                error.message, error.code.0
            ))),
            Err(error) => Err(self.stopped(remote, session, error).await),
        }
    }

    /// The error of a call whose connection broke.
    async fn stopped(&self, remote: &str, session: &Session, error: ServiceError) -> ToolError {
        // A refusal of the request (its token, its scopes) leaves the session as it was.
        if let Some(reason) = refused(&error) {
            return ToolError::permission_denied(self.config.redact(&format!(
                "The MCP server `{}` refused to run `{remote}`: {reason}.",
                self.config.name
            )));
        }
        session.close();
        let tail = session.last_stderr().await;
        let error = described(&error);
        let detail = if tail.is_empty() { error } else { format!("{error}; standard error: {tail}") };
        ToolError::execution(format!(
            "The MCP server `{}` stopped while running `{remote}` (its process exited or the connection closed), so the call's effect is unknown. The server is started again on the next call: retry if repeating the call is safe.",
            self.config.name
        ))
        .with_source(std::io::Error::other(self.config.redact(&detail)))
    }
}

/// Why the server refused a request for want of authorization (a token, or its scopes), when
/// that is why it failed.
fn refused(error: &ServiceError) -> Option<String> {
    let ServiceError::TransportSend(error) = error else { return None };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&*error.error);
    while let Some(current) = cause {
        #[cfg(feature = "oauth")]
        if let Some(rmcp::transport::auth::AuthError::AuthorizationFailed(message)) = current.downcast_ref() {
            return Some(message.clone());
        }
        #[cfg(feature = "http")]
        if let Some(refused) =
            current.downcast_ref::<rmcp::transport::streamable_http_client::InsufficientScopeError>()
        {
            let scope = refused.required_scope.as_deref().unwrap_or("(not named)");
            let scope: String = scope.chars().filter(|c| !c.is_control()).take(200).collect();
            return Some(format!(
                "it needs OAuth scopes its token lacks (HTTP 403 `insufficient_scope`; it asks for `{scope}`); give its entry a token with them"
            ));
        }
        cause = current.source();
    }
    None
}

/// A request's failure in words: a transport's failure by its innermost cause, without the
/// transport's Rust type, which rmcp's own message names.
fn described(error: &ServiceError) -> String {
    match error {
        ServiceError::TransportSend(error) => {
            let mut cause: &(dyn std::error::Error + 'static) = &*error.error;
            while let Some(source) = cause.source() {
                cause = source;
            }
            format!("the connection failed: {cause}")
        }
        ServiceError::McpError(error) => format!("error {}: {}", error.code.0, error.message),
        other => other.to_string(),
    }
}

/// Sends `notifications/cancelled` for a call whose future is dropped before its answer (a
/// dispatcher's time limit, an abandoned turn).
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let notice =
            CancelledNotificationParam::new(Some(self.id.clone()), Some("the call was abandoned".to_owned()));
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(notice).await;
        });
    }
}

/// A mounted tool's way to its server.
struct Caller(Arc<MountInner>);

impl Server for Caller {
    fn call_tool<'a>(
        &'a self,
        remote: &'a str,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.0.call(remote, args, ctx))
    }
}

/// A result as JSON, for an `input_required` answer.
fn to_value(result: &impl serde::Serialize) -> Result<Value, rmcp::ErrorData> {
    serde_json::to_value(result).map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
}
