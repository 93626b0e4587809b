//! Serving a registry over the Model Context Protocol with `rmcp` (feature `mcp`).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RxJsonRpcMessage, ServerInitializeError, TxJsonRpcMessage};
use rmcp::transport::{IntoTransport, Transport};
use rmcp::{Peer, RoleServer, ServerHandler};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::context::Progress;
use crate::dispatch::{Dispatcher, DispatcherBuilder};
use crate::events::{EventSink, ToolEvent};
use crate::providers::{self, DefinitionOptions, LoweringError};

/// The `rmcp` crate this module is built on, for transports and model types without a direct
/// dependency (and without a version skew).
pub use rmcp;

/// Configures an [`McpServer`].
#[must_use]
pub struct McpServerBuilder {
    dispatcher: DispatcherBuilder,
    name: String,
    version: String,
    title: Option<String>,
    instructions: Option<String>,
    events: Option<Arc<dyn EventSink>>,
}

impl fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("title", &self.title)
            .finish_non_exhaustive()
    }
}

impl McpServerBuilder {
    /// The server's name in the `initialize` result (default: `tool-runtime`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The server's version in the `initialize` result (default: this crate's version).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// A human-readable title for the server.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Instructions for the client's model, sent in the `initialize` result.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Also sends every lifecycle event of the dispatcher to `sink`.
    ///
    /// The server installs its own event sink on the dispatcher (that is how progress reaches
    /// the client), replacing one set on the [`DispatcherBuilder`]; give yours here instead.
    pub fn events(mut self, sink: impl EventSink) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// Builds the server. Fails when a tool cannot be described to MCP (its input or output
    /// schema is not an object schema).
    pub fn build(self) -> Result<McpServer, LoweringError> {
        let routes = Arc::new(ProgressRoutes::default());
        let router = EventRouter { routes: routes.clone(), tee: self.events };
        let dispatcher = self.dispatcher.events(router).build();
        let tools = tool_list(&dispatcher)?;
        let mut implementation = Implementation::new(self.name, self.version);
        if let Some(title) = self.title {
            implementation = implementation.with_title(title);
        }
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation);
        if let Some(instructions) = self.instructions {
            config = config.with_instructions(instructions);
        }
        Ok(McpServer {
            inner: Arc::new(ServerInner { dispatcher, tools, config, routes, next_call: AtomicU64::new(1) }),
            input_closed: CancellationToken::new(),
        })
    }
}

/// The `tools/list` entries, converted once from the MCP provider's definitions.
fn tool_list(dispatcher: &Dispatcher) -> Result<Vec<Tool>, LoweringError> {
    let definitions = providers::mcp::definitions(dispatcher.registry(), &DefinitionOptions::default())?;
    definitions
        .into_iter()
        .map(|definition| {
            let name = definition.get("name").and_then(|n| n.as_str()).unwrap_or_default().to_owned();
            serde_json::from_value::<Tool>(definition).map_err(|error| LoweringError {
                provider: providers::Provider::Mcp,
                strict: false,
                tool: name,
                location: String::new(),
                reason: format!("its definition is not a valid MCP tool: {error}"),
            })
        })
        .collect()
}

/// An MCP server for the tools of one dispatcher: `initialize`, `tools/list` and `tools/call`.
/// Cheap to clone; clones share the dispatcher (its parallel gate, session and repeat guard).
///
/// It implements `rmcp`'s [`ServerHandler`], so it runs on any `rmcp` transport:
/// [`McpServer::serve`] takes one, [`McpServer::serve_stdio`] uses standard input and output,
/// and [`serve_stdio`] does it all in one call.
///
/// - `tools/list` returns exactly [`providers::mcp::definitions`]: title, description, input
///   schema, output schema (for `Json<T>` tools) and annotations.
/// - `tools/call` runs the call through the [`Dispatcher`], so hooks, permissions, timeouts,
///   truncation and the parallel policy apply as for any other provider. Everything that goes
///   wrong with the call itself (invalid arguments, a tool error, a timeout, a refusal) is a
///   result with `isError: true` whose text the model can read and act on. The only protocol
///   error is a call to a tool that does not exist: JSON-RPC `-32602` (invalid params) with the
///   message `Unknown tool `NAME`. Available tools: ...`, as the MCP specification's example
///   shows.
/// - Progress updates a tool sends with `ToolContext::progress` become
///   `notifications/progress` when the request carried a `progressToken`. The notification's
///   `progress` is the tool's own figure when it gives one; message-only updates count up from 1
///   until the tool gives a figure, and repeat the last figure after that.
/// - `notifications/cancelled` cancels the call's token, which reaches the tool as
///   `ToolContext::cancellation_token`; the dispatcher stops the call and no response is sent.
/// - When the client closes its input, calls in flight still answer (for a few seconds, then
///   they are cancelled), and the session ends.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use tool_runtime::{Dispatcher, Registry};
///
/// let registry = Registry::from_inventory()?;
/// tool_runtime::mcp::serve_stdio(Dispatcher::builder(registry)).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<ServerInner>,
    /// Cancelled when the session's client stops sending (see [`WatchInput`]).
    input_closed: CancellationToken,
}

struct ServerInner {
    dispatcher: Dispatcher,
    tools: Vec<Tool>,
    config: ServerConfig,
    routes: Arc<ProgressRoutes>,
    next_call: AtomicU64,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("dispatcher", &self.inner.dispatcher)
            .field("server_info", &self.inner.config.server_info)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts configuring a server for the dispatcher `dispatcher` will build.
    ///
    /// The server takes a builder rather than a dispatcher because it adds its own event sink
    /// (see [`McpServerBuilder::events`]).
    pub fn builder(dispatcher: DispatcherBuilder) -> McpServerBuilder {
        McpServerBuilder {
            dispatcher,
            name: "tool-runtime".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
            instructions: None,
            events: None,
        }
    }

    /// A server with default settings.
    pub fn new(dispatcher: DispatcherBuilder) -> Result<McpServer, LoweringError> {
        Self::builder(dispatcher).build()
    }

    /// The dispatcher that runs the calls.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.inner.dispatcher
    }

    /// The `tools/list` entries.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    /// Serves one client on `transport` (a `(reader, writer)` pair of async streams, such as a
    /// `tokio::io::duplex` half split in two, or any other `rmcp` transport) until it closes.
    ///
    /// A client that goes away before `initialize` ends the session without an error.
    pub async fn serve<T, E, A>(self, transport: T) -> Result<(), ServeError>
    where
        T: IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let input_closed = CancellationToken::new();
        let transport = WatchInput { inner: transport.into_transport(), closed: input_closed.clone() };
        let session = McpServer { inner: self.inner, input_closed };
        let running = match rmcp::serve_server(session, transport).await {
            Ok(running) => running,
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(error) => return Err(ServeError(ServeErrorKind::Initialize(Box::new(error)))),
        };
        match running.waiting().await {
            Ok(rmcp::service::QuitReason::JoinError(error)) | Err(error) => {
                Err(ServeError(ServeErrorKind::Join(error)))
            }
            Ok(_) => Ok(()),
        }
    }

    /// Serves one client on standard input and output until standard input closes.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve(rmcp::transport::stdio_pipes()).await
    }

    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let inner = &self.inner;
        let registry = inner.dispatcher.registry();
        if !registry.contains(&request.name) {
            return Err(ErrorData::invalid_params(
                registry.unknown_tool(&request.name).message().to_owned(),
                None,
            ));
        }
        let arguments = match &request.arguments {
            Some(arguments) => serde_json::to_string(arguments)
                .map_err(|e| ErrorData::invalid_params(format!("the arguments cannot be read: {e}"), None))?,
            None => "{}".to_owned(),
        };
        let call_id = format!("mcp-{}", inner.next_call.fetch_add(1, Ordering::Relaxed));
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| ProgressForwarder::start(&inner.routes, &call_id, token, context.peer.clone()));
        let call = ToolCall { id: call_id, name: request.name.into_owned(), arguments };
        let result = inner.dispatcher.run(call, context.ct.clone()).await;
        if let Some(progress) = progress {
            // Once the client stops sending, rmcp still delivers responses but no notifications:
            // stop waiting for them then.
            tokio::select! {
                () = progress.finish() => {}
                () = self.input_closed.cancelled() => {}
                () = context.ct.cancelled() => {}
            }
        }
        let rendered = providers::mcp::render_output(&result.output);
        serde_json::from_value(rendered)
            .map_err(|e| ErrorData::internal_error(format!("the tool's result cannot be sent: {e}"), None))
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        self.inner.config.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run_call(request, context).await.map(CallToolResponse::from)
    }
}

/// Serves every tool of the dispatcher `dispatcher` builds over MCP on standard input and
/// output, until standard input closes. See [`McpServer`] for what is served and how.
pub async fn serve_stdio(dispatcher: DispatcherBuilder) -> Result<(), ServeError> {
    McpServer::new(dispatcher).map_err(|e| ServeError(ServeErrorKind::Lowering(e)))?.serve_stdio().await
}

/// Why an MCP session ended with an error.
#[derive(Debug)]
pub struct ServeError(ServeErrorKind);

#[derive(Debug)]
enum ServeErrorKind {
    Lowering(LoweringError),
    Initialize(Box<ServerInitializeError>),
    Join(tokio::task::JoinError),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ServeErrorKind::Lowering(error) => error.fmt(f),
            ServeErrorKind::Initialize(error) => write!(f, "the MCP session could not start: {error}"),
            ServeErrorKind::Join(error) => write!(f, "the MCP session stopped unexpectedly: {error}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            ServeErrorKind::Lowering(error) => Some(error),
            ServeErrorKind::Initialize(error) => Some(&**error),
            ServeErrorKind::Join(error) => Some(error),
        }
    }
}

/// A transport that cancels `closed` when the peer's input ends.
struct WatchInput<T> {
    inner: T,
    closed: CancellationToken,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for WatchInput<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        let closed = &self.closed;
        let receive = self.inner.receive();
        async move {
            let message = receive.await;
            if message.is_none() {
                closed.cancel();
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The progress channel of each running call whose request asked for progress, by call id.
#[derive(Default)]
struct ProgressRoutes {
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<Progress>>>,
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Progress>>> {
        self.routes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The dispatcher's event sink: routes progress events to their call's forwarder, and passes
/// every event on to the application's sink.
struct EventRouter {
    routes: Arc<ProgressRoutes>,
    tee: Option<Arc<dyn EventSink>>,
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
struct ProgressForwarder {
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
    fn start(
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
    async fn finish(self) {
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
