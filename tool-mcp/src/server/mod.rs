//! Serving a registry over the Model Context Protocol with `rmcp` (feature `mcp`).

mod announce;
mod calls;
mod client_line;
mod elicit;
#[cfg(feature = "http")]
mod host_check;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod http_post;
#[cfg(feature = "http")]
mod http_response;
#[cfg(feature = "http")]
mod http_sessionless;
#[cfg(feature = "http")]
mod http_sessions;
mod inbound;
#[cfg(feature = "http")]
mod limits;
mod lines;
mod pages;
#[cfg(all(feature = "http", target_os = "linux"))]
mod peer;
mod progress;
mod question;
pub(crate) mod resources;
mod rounds;
mod sampling;
mod served;
mod tasks;

#[cfg(feature = "http")]
pub use http::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_CLIENT, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SHUTDOWN_GRACE, HttpOptions, MCP_PATH,
};

pub use elicit::DEFAULT_ELICITATION_TIMEOUT;
pub use pages::DEFAULT_PAGE_SIZE;
pub use resources::{Prompt, PromptArguments, ResourcesAndPrompts, UriVariables};

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams, CompleteResult,
    CreateTaskResult, CustomRequest, CustomResult, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, ServerInitializeError};
use rmcp::{RoleServer, ServerHandler};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use serde_json::Value;

use tool_core::ContextSink;
use tool_core::Registry;
use tool_core::events::EventSink;
use tool_core::{Arguments, ToolCall, ToolResult};
use tool_core::{CallOptions, Dispatcher, DispatcherBuilder, RepeatGuard};
use tool_providers::{DefinitionOptions, LoweringError};

use announce::Listeners;
use calls::InFlight;
use client_line::ClientLine;
use elicit::ClientAsker;
use lines::LineTransport;
use progress::ProgressForwarder;
use served::{Served, Sessions, Slot};

/// The `rmcp` crate this module is built on, for transports and model types without a direct
/// dependency (and without a version skew).
pub use rmcp;

/// The longest message (one line of input) a server reads unless configured: 16 MiB, as
/// `rmcp`'s own stdio transport. A longer one is answered with `-32600` and skipped.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Configures an [`McpServer`].
#[must_use]
pub struct McpServerBuilder {
    dispatcher: DispatcherBuilder,
    name: String,
    version: String,
    title: Option<String>,
    instructions: Option<String>,
    events: Option<Arc<dyn EventSink>>,
    max_message_bytes: usize,
    elicitation_timeout: Duration,
    tool_list_changes: bool,
    tasks: bool,
    page_size: usize,
    content: ResourcesAndPrompts,
    declared: resources::Declared,
}

impl fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("title", &self.title)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("elicitation_timeout", &self.elicitation_timeout)
            .field("tool_list_changes", &self.tool_list_changes)
            .field("tasks", &self.tasks)
            .field("page_size", &self.page_size)
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

    /// The longest message, in bytes, the server reads from its input (default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]). A longer line is skipped and answered with `-32600`; over
    /// HTTP, a longer request body gets that error with status `413`, unread.
    pub fn max_message_bytes(mut self, limit: usize) -> Self {
        self.max_message_bytes = limit.max(1);
        self
    }

    /// How long the server waits for the client's user to answer a permission question (default
    /// [`DEFAULT_ELICITATION_TIMEOUT`]); without an answer by then the call is refused.
    pub fn elicitation_timeout(mut self, timeout: Duration) -> Self {
        self.elicitation_timeout = timeout;
        self
    }

    /// Declares `tools.listChanged` in the server's capabilities: the server will send
    /// `notifications/tools/list_changed` ([`McpServer::announce_tool_list_changed`]) when its
    /// tools change, so clients know to list them again (default: false).
    pub fn tool_list_changes(mut self, announced: bool) -> Self {
        self.tool_list_changes = announced;
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`) in the server's
    /// capabilities (default: false). Then, for a client that declares it too (at `initialize`, or
    /// in the request's `_meta`), a call whose tool hands the rest of its work over
    /// ([`ToolContext::hand_off`](tool_core::ToolContext::hand_off): a `bash` command still
    /// running at its yield time) is answered with a task (`resultType: "task"`) instead of a
    /// result: `tasks/get` reports it (`working`, then `completed` with the call's final result,
    /// the command's whole output; or `cancelled`), `tasks/cancel` stops it (the command and
    /// every process it started), and `tasks/update` is acknowledged (these tasks never wait for
    /// input). A session's tasks are cancelled when the session ends. Clients that do not
    /// declare the extension get results as without it.
    pub fn tasks(mut self, enabled: bool) -> Self {
        self.tasks = enabled;
        self
    }

    /// How many items one page of `tools/list`, `resources/list`, `resources/templates/list` and
    /// `prompts/list` holds (default [`DEFAULT_PAGE_SIZE`], at least 1). A longer list ends its
    /// page with `nextCursor`, an opaque cursor that gets the next page; a cursor this server did
    /// not give for that list, or one past the end of a list that shrank since, gets `-32602`.
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Builds the server. Fails when a tool cannot be described to MCP (its input or output
    /// schema is not an object schema).
    pub fn build(self) -> Result<McpServer, LoweringError> {
        // Repeated identical calls are normal for a server's clients (polling, load tests): the
        // repeat guard is an agent loop's policy, kept only when the application set it.
        let mut dispatcher = self.dispatcher.repeat_guard_unless_set(RepeatGuard::DISABLED);
        if let Some(events) = self.events {
            dispatcher = dispatcher.events(events);
        }
        let dispatcher = dispatcher.build();
        let tools = tool_list(dispatcher.registry())?;
        let mut implementation = Implementation::new(self.name, self.version);
        if let Some(title) = self.title {
            implementation = implementation.with_title(title);
        }
        let capabilities = ServerCapabilities::builder().enable_tools();
        let capabilities =
            if self.tool_list_changes { capabilities.enable_tool_list_changed() } else { capabilities };
        let mut capabilities =
            if self.tasks { capabilities.enable_tasks().build() } else { capabilities.build() };
        // Tools log with `ToolContext::log`; a client sets the level it wants.
        #[allow(deprecated)]
        {
            capabilities.logging = Some(Default::default());
        }
        self.content.declare(&mut capabilities, self.declared);
        let mut config = ServerConfig::new(capabilities).with_server_info(implementation);
        if let Some(instructions) = self.instructions {
            config = config.with_instructions(instructions);
        }
        let sessions = Sessions::default();
        let served = sessions.register(Served { tools: Arc::new(tools), dispatcher });
        Ok(McpServer {
            inner: Arc::new(ServerInner {
                sessions,
                config,
                next_call: AtomicU64::new(1),
                max_message_bytes: self.max_message_bytes,
                elicitation_timeout: self.elicitation_timeout,
                page_size: self.page_size,
                listeners: Listeners::default(),
                content: std::sync::RwLock::new(Arc::new(self.content)),
                subscribers: resources::Subscribers::default(),
            }),
            served,
            input_closed: CancellationToken::new(),
            in_flight: Arc::new(InFlight::default()),
            calls: calls::Gauge::default(),
            subscriptions: Arc::default(),
            tasks: Arc::default(),
            parked: Arc::default(),
            log_threshold: Arc::default(),
            _end: None,
        })
    }
}

/// The `tools/list` entries, converted once from the MCP provider's definitions.
fn tool_list(registry: &Registry) -> Result<Vec<Tool>, LoweringError> {
    let definitions = tool_providers::mcp::definitions(registry, &DefinitionOptions::default())?;
    definitions
        .into_iter()
        .map(|definition| {
            let name = definition.get("name").and_then(|n| n.as_str()).unwrap_or_default().to_owned();
            serde_json::from_value::<Tool>(definition).map_err(|error| {
                LoweringError::new(
                    tool_providers::Provider::Mcp,
                    false,
                    name,
                    "",
                    format!("its definition is not a valid MCP tool: {error}"),
                )
            })
        })
        .collect()
}

/// An MCP server for the tools of one dispatcher: `initialize` (or `server/discover` for
/// protocol 2026-07-28), `ping`, `tools/list` and `tools/call`; and, when the application
/// registers them ([`ResourcesAndPrompts`], [`McpServerBuilder::resource`], ...), resources,
/// resource templates, prompts, completions and resource subscriptions. Cheap to clone; clones share the
/// dispatcher (its parallel gate and session).
///
/// [`McpServer::serve`] serves one client on a pair of byte streams, [`McpServer::serve_stdio`]
/// on standard input and output, and [`serve_stdio`] does it all in one call; with feature
/// `mcp-http`, `McpServer::serve_http` serves many clients over Streamable HTTP, each session
/// with a dispatcher of its own. It also implements
/// `rmcp`'s [`ServerHandler`], for `rmcp`'s other transports (which then do their own framing).
///
/// - `tools/list` returns exactly [`tool_providers::mcp::definitions`]: title, description, input
///   schema, output schema (for `Json<T>` tools) and annotations.
/// - `tools/call` runs the call through the [`Dispatcher`], so hooks, permissions, timeouts,
///   truncation and the parallel policy apply as for any other provider. Everything that goes
///   wrong with the call itself (invalid arguments, a tool error, a timeout, a refusal) is a
///   result with `isError: true` whose text the model can read and act on. The only protocol
///   error is a call to a tool that does not exist: JSON-RPC `-32602` (invalid params) with the
///   message `Unknown tool `NAME`. Available tools: ...`, as the MCP specification's example
///   shows. Every result has the shape of the negotiated revision (`resultType` from
///   2026-07-28 on, none before).
/// - The repeat guard is off unless the [`DispatcherBuilder`] sets one: repeated identical
///   calls are normal for a server's clients.
/// - The server declares the `tools` and `logging` capabilities, and `resources` (with
///   `subscribe`), `prompts` and `completions` only when something of theirs is registered (see
///   [`ResourcesAndPrompts`] for what it answers); a method of a capability it does not declare
///   (`prompts/list` without prompts, say) gets `-32601` (method not found) naming the
///   capabilities it does.
/// - What a tool logs with [`ToolContext::log`](tool_core::ToolContext::log) during a call, and
///   what a mounted server logs while it serves one, goes to the client as
///   `notifications/message`, at the level it set with `logging/setLevel` and above (`info`
///   until it sets one), in order with the call's progress and before its response.
/// - A tool's question ([`ToolContext::ask_user`](tool_core::ToolContext::ask_user), the `ask_user` tool) becomes an
///   `elicitation/create` request to the client, under the same conditions as a permission
///   question below; without them the tool gets an error saying why.
/// - Progress updates a tool sends with `ToolContext::progress` become
///   `notifications/progress` when the request carried a `progressToken`. The notification's
///   `progress` is the tool's own figure when it gives one; message-only updates count up from 1
///   until the tool gives a figure, and repeat the last figure after that.
/// - A call that a [`Policy`](tool_permissions::Policy) rule (or a `PreToolUse` hook) says to
///   `ask` about, when the policy has no asker of its own, is asked about with an
///   `elicitation/create` request to the client (its message names the tool, what it wants to do
///   and the rule; its form is one boolean, `allow`). An accept allows it (unless the form says
///   `allow: false`); a decline or cancel refuses it. A client that did not declare the
///   `elicitation` capability, a request that fails (protocol 2026-07-28 has no server-to-client
///   requests) or no answer within [`McpServerBuilder::elicitation_timeout`] refuses it too, with
///   a message naming the rule.
/// - A client that declared `sampling` is the call's sampler
///   ([`ToolContext::sampler`](tool_core::ToolContext::sampler)): a request for a completion
///   (a mounted server's `sampling/createMessage`) becomes a `sampling/createMessage` to it.
/// - With [`McpServerBuilder::tasks`], a call whose tool hands its remaining work over (a
///   `bash` command that goes to the background) becomes a task for a client that declares the
///   tasks extension: `tasks/get`, `tasks/cancel` and `tasks/update` answer for it (see there).
/// - `notifications/cancelled` cancels the call's token, which reaches the tool as
///   `ToolContext::cancellation_token`; the dispatcher stops the call and no response is sent.
/// - When the client closes its input, calls in flight still answer (for a few seconds, then
///   they are cancelled), and the session ends.
///
/// Input that is not a request the server can handle gets a JSON-RPC error response, never
/// silence, with the request's `id` whenever it can be read (`null` otherwise): `-32700` for a
/// line that is not JSON (including invalid UTF-8, lone surrogate escapes, and nesting deeper
/// than 128 levels), `-32600` for a line longer than [`McpServerBuilder::max_message_bytes`], a
/// batch (an array; MCP has no batches since 2025-06-18, and each request in it gets its own
/// error), or an object that is not a JSON-RPC request, and `-32602` for params that are not an
/// object or do not fit the method (`tools/call` without a `name`, `initialize` without a
/// `protocolVersion`). Notifications are never answered, as JSON-RPC requires.
///
/// Over HTTP (`McpServer::serve_http`, feature `mcp-http`) each request body is one message
/// and gets the same checks, after the `Host`, `Origin` and token checks: the error comes back
/// as an `application/json` response with status `200` for a request whose params do not fit
/// (its answer, like any other), `413` for a body longer than the limit, and `400` for the rest,
/// a notification or response that cannot be handled included (HTTP answers every request; that
/// error has no `id`).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use tool_runtime::{Dispatcher, Registry};
///
/// let registry = Registry::from_inventory()?;
/// tool_runtime::mcp_server::serve_stdio(Dispatcher::builder(registry)).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<ServerInner>,
    /// The tools this session lists and the dispatcher that runs its calls (over HTTP, each
    /// session has its own dispatcher).
    served: Slot,
    /// Cancelled when the session's client stops sending.
    input_closed: CancellationToken,
    in_flight: Arc<InFlight>,
    /// This session's calls running now (at most [`MAX_SESSION_CALLS`]).
    calls: calls::Gauge,
    /// The URIs this session subscribed to.
    subscriptions: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// This session's tasks, cancelled when the session ends.
    tasks: Arc<tasks::SessionTasks>,
    /// The calls of this session that wait for their client's answers (revision 2026-07-28's
    /// rounds), stopped when the session ends.
    parked: Arc<rounds::ParkedCalls>,
    /// The lowest level of the log messages this session's client gets.
    log_threshold: Arc<progress::LogThreshold>,
    /// Over HTTP, ends the session (its tasks, its session state) when its last handle goes.
    _end: Option<Arc<served::SessionEnd>>,
}

struct ServerInner {
    /// Every session's tools and dispatcher, for [`McpServer::replace_registry`].
    sessions: Sessions,
    config: ServerConfig,
    next_call: AtomicU64,
    max_message_bytes: usize,
    elicitation_timeout: Duration,
    /// How many items a page of a list holds.
    page_size: usize,
    /// The sessions of this server and of its clones (every HTTP session).
    listeners: Listeners,
    /// The resources, templates and prompts every session serves.
    content: std::sync::RwLock<Arc<ResourcesAndPrompts>>,
    subscribers: resources::Subscribers,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("dispatcher", &served::current(&self.served).dispatcher)
            .field("server_info", &self.inner.config.server_info)
            .finish_non_exhaustive()
    }
}

/// Byte streams a server can serve one client on: a `(reader, writer)` pair, or one stream that
/// reads and writes (such as one end of `tokio::io::duplex`). `Kind` only tells the two apart.
pub trait ServerStreams<Kind>: Send + 'static {
    /// Where messages come from.
    type Reader: AsyncRead + Unpin + Send + 'static;
    /// Where messages go.
    type Writer: AsyncWrite + Unpin + Send + 'static;
    /// The two ends.
    fn into_streams(self) -> (Self::Reader, Self::Writer);
}

/// The [`ServerStreams`] kind of a `(reader, writer)` pair.
#[derive(Debug)]
pub enum StreamPair {}

/// The [`ServerStreams`] kind of one stream that reads and writes.
#[derive(Debug)]
pub enum OneStream {}

impl<R, W> ServerStreams<StreamPair> for (R, W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Reader = R;
    type Writer = W;

    fn into_streams(self) -> (R, W) {
        self
    }
}

impl<S> ServerStreams<OneStream> for S
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    type Reader = tokio::io::ReadHalf<S>;
    type Writer = tokio::io::WriteHalf<S>;

    fn into_streams(self) -> (Self::Reader, Self::Writer) {
        tokio::io::split(self)
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
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            elicitation_timeout: DEFAULT_ELICITATION_TIMEOUT,
            tool_list_changes: false,
            tasks: false,
            page_size: DEFAULT_PAGE_SIZE,
            content: ResourcesAndPrompts::default(),
            declared: resources::Declared::default(),
        }
    }

    /// A server with default settings.
    pub fn new(dispatcher: DispatcherBuilder) -> Result<McpServer, LoweringError> {
        Self::builder(dispatcher).build()
    }

    /// The dispatcher that runs this session's new calls (after
    /// [`McpServer::replace_registry`], the one over the new registry).
    pub fn dispatcher(&self) -> Dispatcher {
        served::current(&self.served).dispatcher.clone()
    }

    /// The `tools/list` entries.
    pub fn tools(&self) -> Vec<Tool> {
        served::current(&self.served).tools.to_vec()
    }

    /// Serves the tools of `registry` from now on, in every session of this server and of its
    /// clones (on stdio, the one client; over HTTP, every session, and those that start later),
    /// then announces it with `notifications/tools/list_changed`
    /// ([`McpServer::announce_tool_list_changed`], declared with
    /// [`McpServerBuilder::tool_list_changes`]).
    ///
    /// The next `tools/list` lists the new tools and new calls run on the new registry; calls in
    /// flight finish on the old one. Each session keeps everything else of its dispatcher: its
    /// session state (a todo list, say), permission policy, hooks, event sink, parallel gate and
    /// output store. Its repeat guard starts afresh. A call to a tool that is no longer there
    /// gets the unknown-tool error.
    ///
    /// Fails, changing nothing and announcing nothing, when a tool of `registry` cannot be
    /// described to MCP.
    pub async fn replace_registry(&self, registry: impl Into<Arc<Registry>>) -> Result<(), LoweringError> {
        let registry = registry.into();
        let tools = tool_list(&registry)?;
        self.inner.sessions.replace(tools, &registry);
        self.announce_tool_list_changed().await;
        Ok(())
    }

    /// Serves one client on `streams` (a `(reader, writer)` pair, or one stream such as a
    /// `tokio::io::duplex` end), one JSON-RPC message per line as MCP's stdio transport, until
    /// the input closes.
    ///
    /// A client that goes away before `initialize` ends the session without an error.
    pub async fn serve<Kind>(self, streams: impl ServerStreams<Kind>) -> Result<(), ServeError> {
        let (reader, writer) = streams.into_streams();
        let input_closed = CancellationToken::new();
        let transport =
            LineTransport::new(reader, writer, self.inner.max_message_bytes, input_closed.clone());
        // The client closing its input is the end of the session (MCP's stdio shutdown): the
        // calls in flight are cancelled at once, their commands killed, and their answers
        // written while the output is still open.
        let in_flight = Arc::new(InFlight::default());
        let stop = in_flight.clone();
        let closed = input_closed.clone();
        tokio::spawn(async move {
            closed.cancelled().await;
            stop.stop();
        });
        let session = McpServer {
            input_closed,
            in_flight,
            calls: calls::Gauge::default(),
            subscriptions: Arc::default(),
            tasks: Arc::default(),
            parked: Arc::default(),
            log_threshold: Arc::default(),
            ..self
        };
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

    /// Sends `notifications/tools/list_changed` to every client session of this server and of
    /// its clones that completed `initialize` and is still connected (on stdio, the one client;
    /// over HTTP, every session); returns how many it reached. Declare it with
    /// [`McpServerBuilder::tool_list_changes`].
    ///
    /// The announcement only: [`McpServer::replace_registry`] changes the tools and announces.
    pub async fn announce_tool_list_changed(&self) -> usize {
        self.inner.listeners.tools_changed().await
    }

    /// Serves one client on standard input and output until standard input closes.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve(rmcp::transport::stdio_pipes()).await
    }

    /// The page of `items` the request's cursor names, and the next page's cursor.
    fn page<T: Clone>(
        &self,
        items: &[T],
        request: Option<PaginatedRequestParams>,
        method: &str,
    ) -> Result<(Vec<T>, Option<String>), ErrorData> {
        pages::page(items, request.and_then(|r| r.cursor).as_deref(), self.inner.page_size, method)
    }

    /// Like [`McpServer::page`], for a cursor already taken from its request.
    pub(crate) fn page_at<T: Clone>(
        &self,
        items: &[T],
        cursor: Option<String>,
        method: &str,
    ) -> Result<(Vec<T>, Option<String>), ErrorData> {
        pages::page(items, cursor.as_deref(), self.inner.page_size, method)
    }

    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let inner = &self.inner;
        // Each call holds its arguments and its output until it is answered: a client that sends
        // calls faster than they end (or than it reads their answers) gets a refusal past this.
        let Some(_running) = self.calls.enter_below(MAX_SESSION_CALLS) else {
            let refusal = tool_core::ToolOutput::error(format!(
                "{MAX_SESSION_CALLS} calls of this session are running already, so this one was not \
                 started: wait for some of their results, then call it again"
            ));
            return Ok(crate::wire::call_tool_result(refusal).into());
        };
        // The request's state names a call that waits for this client's answers: it goes on.
        if let Some(state) = request.request_state.as_deref() {
            let Some(call) = self.parked.resume(state, request.input_responses) else {
                return Err(ErrorData::invalid_params(
                    "no call waits under this requestState (it ended, or its client took too long to come back \
                     with the answers): call the tool again",
                    None,
                ));
            };
            return Ok(self.next_round(call, &context).await);
        }
        // Read once: the whole call runs on the registry it was looked up in.
        let dispatcher = served::current(&self.served).dispatcher.clone();
        let registry = dispatcher.registry();
        if !registry.contains(&request.name) {
            return Err(ErrorData::invalid_params(
                registry.unknown_tool(&request.name).message().to_owned(),
                None,
            ));
        }
        // The arguments object goes to validation as it is: never written out and parsed again.
        let arguments = match request.arguments {
            Some(mut arguments) => {
                drop_client_hints(
                    &mut arguments,
                    registry.get(&request.name).map(|tool| &tool.spec().input_schema),
                );
                Arguments::Json(Value::Object(arguments))
            }
            None => Arguments::default(),
        };
        let call_id =
            ["mcp-", itoa::Buffer::new().format(inner.next_call.fetch_add(1, Ordering::Relaxed))].concat();
        let call = ToolCall { id: call_id, name: request.name.into_owned(), arguments };
        // Only a client that declares the tasks extension (on this request, or at `initialize`)
        // may be answered with a task, and only by a server that declares it.
        let taker = (inner.config.capabilities.supports_tasks()
            && context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks()))
        .then(|| Arc::new(tasks::CallTaker::new(self.tasks.clone())));
        let timeout = inner.elicitation_timeout;
        // Without a session, revision 2026-07-28 and later ask the client in rounds: the call
        // runs on while its request is answered with the questions.
        let in_rounds = context.peer.peer_info().is_none()
            && context.protocol_version().is_some_and(|version| !version.has_initialize());
        if in_rounds {
            let capabilities = context.client_capabilities();
            let stop = CancellationToken::new();
            let call = rounds::RoundCall::start(stop.clone(), move |line, sink| {
                let line = ClientLine::Rounds { line, capabilities };
                let options = call_options(&line, timeout, sink, taker.clone());
                async move {
                    let result = dispatcher.run_with(call, options, stop).await;
                    answer(result, taker)
                }
            });
            return Ok(self.next_round(call, &context).await);
        }
        // The call's progress (with a progress token) and log messages go to this client.
        let progress = ProgressForwarder::new(
            context.meta.get_progress_token(),
            self.log_threshold.clone(),
            context.peer.clone(),
        );
        let line = ClientLine::Session(context.peer.clone());
        let options = call_options(&line, timeout, progress.clone(), taker.clone());
        // rmcp gives each request a token of its own, a child of the one it cancels for
        // `notifications/cancelled`: cancelling it at a shutdown stops this call alone, and its
        // response still goes out.
        let cancel = context.ct.clone();
        // The dispatcher's future holds the call's state on the heap: rmcp moves this future
        // several times on its way into the request's task, and each move is a copy.
        let run = Box::pin(dispatcher.run_with(call, options, cancel.clone()));
        let result = self.in_flight.run(&cancel, run).await;
        // Once the client stops sending, rmcp still delivers responses but no notifications:
        // stop waiting for them then.
        tokio::select! {
            () = progress.finish() => {}
            () = self.input_closed.cancelled() => {}
            () = cancel.cancelled() => {}
        }
        Ok(answer(result, taker))
    }

    /// Runs a call in rounds until it ends, or asks its client something (the answer to this
    /// request says what; the call waits, parked).
    async fn next_round(
        &self,
        call: rounds::RoundCall,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let progress = ProgressForwarder::new(
            context.meta.get_progress_token(),
            self.log_threshold.clone(),
            context.peer.clone(),
        );
        let cancel = context.ct.clone();
        let round = self.parked.round(call, progress, &cancel, self.inner.elicitation_timeout);
        match self.in_flight.run(&cancel, Box::pin(round)).await {
            rounds::Round::Done(answer) => answer,
            rounds::Round::Input(input) => CallToolResponse::InputRequired(input),
        }
    }
}

/// The options of a call whose requests to its client go on `line`, whose progress goes to
/// `sink`, and whose left work a task may take over.
fn call_options(
    line: &ClientLine,
    timeout: Duration,
    sink: Arc<dyn ContextSink>,
    taker: Option<Arc<tasks::CallTaker>>,
) -> CallOptions {
    let asker = ClientAsker { line: line.clone(), timeout };
    let user = question::ClientUser { line: line.clone(), timeout };
    let mut options = CallOptions::default().asker(Arc::new(asker)).user(Arc::new(user));
    options.sink = Some(sink);
    options.tasks = taker.map(|taker| taker as Arc<dyn tool_core::handoff::TaskTaker>);
    // A mounted server's `sampling/createMessage` reaches this client when it samples (and a
    // request without a session gets a sampler that says why it cannot).
    if line.offers_sampling() {
        options.sampler = Some(Arc::new(sampling::ClientSampler { line: line.clone(), timeout }));
    }
    options
}

/// What a call's request is answered with: the task that took the call's work over, or its
/// result.
fn answer(result: ToolResult, taker: Option<Arc<tasks::CallTaker>>) -> CallToolResponse {
    match taker.and_then(|taker| taker.created()) {
        Some(task) => CallToolResponse::Task(CreateTaskResult::new(task)),
        None => crate::wire::call_tool_result(result.output).into(),
    }
}

/// At most this many calls of one session run at once.
const MAX_SESSION_CALLS: usize = 256;

/// At most this many resources named by one `subscriptions/listen` stream.
const MAX_LISTENED_RESOURCES: usize = 64;

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        self.inner.config.clone()
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Only a server that declared an announcement keeps its sessions' peers.
        let capabilities = &self.inner.config.capabilities;
        let announces = [
            capabilities.tools.as_ref().and_then(|tools| tools.list_changed),
            capabilities.resources.as_ref().and_then(|resources| resources.list_changed),
            capabilities.prompts.as_ref().and_then(|prompts| prompts.list_changed),
        ];
        if announces.contains(&Some(true)) {
            self.inner.listeners.add(context.peer);
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let served = served::current(&self.served);
        let (tools, next) = self.page(&served.tools, request, "tools/list")?;
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        served::current(&self.served).tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run_call(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&request.task_id)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&request.task_id)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.list_prompts_now(request.and_then(|r| r.cursor)).await
    }

    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.get_prompt_now(_request).await.map(GetPromptResponse::from)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.list_resources_now(request.and_then(|r| r.cursor)).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.list_templates_now(request.and_then(|r| r.cursor)).await
    }

    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read_now(_request).await.map(ReadResourceResponse::from)
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.complete_now(_request).await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_now(&request.uri, true, &context.peer).await
    }

    /// Revision 2026-07-28's streams of changes: a client gets what it asks for of what this
    /// server declared, and at most 64 resources by name (each is subscribed to where it comes
    /// from); the acknowledgment says which it got.
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let mut accepted = requested.clone();
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.truncate(MAX_LISTENED_RESOURCES);
        }
        Some(accepted)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_now(context).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_now(&request.uri, false, &context.peer).await
    }

    // Logging is deprecated in rmcp (SEP-2577: protocol 2026-07-28 has none); the revisions
    // before it have it.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_threshold.set(&request.level);
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(resources::not_declared(&request.method, &self.inner.config.capabilities))
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
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Io(std::io::Error),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ServeErrorKind::Lowering(error) => error.fmt(f),
            ServeErrorKind::Initialize(error) => write!(f, "the MCP session could not start: {error}"),
            ServeErrorKind::Join(error) => write!(f, "the MCP session stopped unexpectedly: {error}"),
            ServeErrorKind::Io(error) => write!(f, "the MCP server cannot serve: {error}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            ServeErrorKind::Lowering(error) => Some(error),
            ServeErrorKind::Initialize(error) => Some(&**error),
            ServeErrorKind::Join(error) => Some(error),
            ServeErrorKind::Io(error) => Some(error),
        }
    }
}

/// Properties that MCP clients add to every tool's schema for themselves and send with each
/// call: Gemini CLI's `wait_for_previous` (whether it waits for the call before, which it decides
/// on its side). Dropped from the arguments unless the tool has a parameter of that name, so that
/// validation does not refuse every call of such a client as having an unknown property.
const CLIENT_HINTS: &[&str] = &["wait_for_previous"];

fn drop_client_hints(arguments: &mut serde_json::Map<String, Value>, schema: Option<&Value>) {
    for hint in CLIENT_HINTS {
        let declared =
            schema.and_then(|schema| schema.get("properties")).and_then(|p| p.get(*hint)).is_some();
        if !declared && arguments.get(*hint).is_some_and(|value| value.is_boolean() || value.is_null()) {
            arguments.remove(*hint);
        }
    }
}
