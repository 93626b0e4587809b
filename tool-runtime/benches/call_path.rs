//! The cost of one call of a trivial tool along each path, next to its comparators in the same
//! run: a hand-written serde loop, `Registry::call`, `Dispatcher::run_batch` with one call, rmcp's
//! own `#[tool_router]` server (in process and over an in-memory duplex with rmcp's client), this
//! crate's MCP server over the same duplex, and the validation of a rich schema next to serde.
//!
//! Every row serves `add(a: f64, b: f64)` with the argument text `{"a":1.5,"b":2.25}` and checks
//! once, before it is measured, that the result is the text `3.75`.
//!
//! Run with `cargo bench -p tool-runtime --features mcp --bench call_path`.
//!
//! With `CALL_PATH_ROW=NAME CALL_PATH_COUNT=N` in the environment the binary runs `N` calls of one
//! row outside criterion and exits, for `benches/instructions.sh` (instruction counts under
//! valgrind); `CALL_PATH_ROW=list` prints the row names. Criterion and that mode run the same
//! loop ([`Row::run`]).
//!
//! A new row is a type implementing [`Row`] and a line in [`ROWS`].

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject, NumberOrString};
use rmcp::service::{RequestContext, RunningService, serve_directly};
use rmcp::{RoleClient, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::runtime::Runtime;
use tool_runtime::mcp_server::McpServer;
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolCall, ToolContext, ToolError, ToolOutput,
    dispatch::RepeatGuard, tool,
};

/// The arguments every `add` row sends, as the model would write them.
const ADD_ARGS: &str = r#"{"a":1.5,"b":2.25}"#;
/// What `add` answers to [`ADD_ARGS`].
const ADD_RESULT: &str = "3.75";

/// Add two numbers.
#[tool(parallel)]
async fn add(
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

/// The typed arguments of `add`, for the serde baseline and for rmcp's `Parameters`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// rmcp's own server for the same tool, written as rmcp's documentation shows.
mod rmcp_server {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::tool::ToolCallContext;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{CallToolRequestParams, CallToolResponse, ServerCapabilities, ServerConfig};
    use rmcp::service::RequestContext;
    use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};

    use super::AddArgs;

    /// The router is built once and kept: `#[tool_handler(router = self.tool_router)]`. rmcp's
    /// default, a bare `#[tool_handler]`, calls `Self::tool_router()` on every call (see
    /// [`DefaultRouter`]); the kept router is the faster of the two, so it is the comparator.
    #[derive(Clone)]
    pub(crate) struct AddServer {
        tool_router: ToolRouter<Self>,
    }

    impl AddServer {
        pub(crate) fn new() -> Self {
            AddServer { tool_router: Self::tool_router() }
        }
    }

    #[tool_router]
    impl AddServer {
        /// Add two numbers.
        #[tool(description = "Add two numbers.")]
        async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Result<String, ErrorData> {
            // The body of `super::add`.
            Ok((a + b).to_string())
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for AddServer {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }

    /// [`AddServer`] as a bare `#[tool_handler]` serves it: its `call_tool` is that macro's
    /// expansion in rmcp-macros 3.9 (a router built by `AddServer::tool_router()` per call).
    #[derive(Clone)]
    pub(crate) struct DefaultRouter(pub AddServer);

    impl ServerHandler for DefaultRouter {
        fn get_info(&self) -> ServerConfig {
            self.0.get_info()
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let tcc = ToolCallContext::new(&self.0, request, context);
            AddServer::tool_router().call(tcc).await
        }
    }
}

#[path = "common/search.rs"]
mod search;
use search::{SearchArgs, SearchTool};

/// A valid call of `search` that uses every argument.
const SEARCH_VALID: &str = r#"{"pattern": "fn main", "path": "src", "globs": ["*.rs", "*.toml"],
    "mode": "content", "limit": 50, "case_insensitive": null, "lines": {"start": 1, "end": 200}}"#;

/// One measured path: built once (runtime, registry, session), then `run` makes `iters` calls and
/// returns the time they took, without the setup.
trait Row {
    fn run(&mut self, iters: u64) -> Duration;
}

/// Builds a row: its setup and the check of its first result.
type MakeRow = fn() -> Box<dyn Row>;

/// Every row, in the order of the report: name and constructor.
const ROWS: &[(&str, MakeRow)] = &[
    ("serde_baseline", || Box::new(SerdeBaseline::new())),
    ("registry_call", || Box::new(RegistryCall::new())),
    ("dispatcher_run_batch_1", || Box::new(DispatcherBatch1::new())),
    ("rmcp_in_process", || Box::new(InProcess::new(rmcp_server::AddServer::new()))),
    ("rmcp_in_process_default_router", || {
        Box::new(InProcess::new(rmcp_server::DefaultRouter(rmcp_server::AddServer::new())))
    }),
    ("ours_mcp_in_process", || Box::new(InProcess::new(ours_mcp_server()))),
    ("rmcp_duplex", || Box::new(Duplex::new(|io| spawn_session(rmcp_server::AddServer::new(), io)))),
    ("ours_duplex", || Box::new(Duplex::new(|io| drop(tokio::spawn(ours_mcp_server().serve(io)))))),
    ("rich_validation/serde_from_str", || Box::new(RichSerde)),
    ("rich_validation/registry_validate", || Box::new(RichValidate::new())),
];

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

fn registry() -> Registry {
    Registry::builder().tool(AddTool).tool(SearchTool).build().expect("registry")
}

fn assert_add_output(output: &ToolOutput) {
    assert!(!output.is_error, "add failed: {}", output.text_content());
    assert_eq!(output.text_content(), ADD_RESULT);
}

fn assert_add_result(result: &CallToolResult) {
    let text = result.content.first().and_then(|block| block.as_text()).map(|text| text.text.as_str());
    assert_ne!(result.is_error, Some(true), "add failed: {text:?}");
    assert_eq!(text, Some(ADD_RESULT));
}

/// What a loop without the framework does: parse the text into a struct, call, wrap.
struct SerdeBaseline {
    rt: Runtime,
}

impl SerdeBaseline {
    fn new() -> Self {
        let row = SerdeBaseline { rt: current_thread() };
        assert_add_output(&row.rt.block_on(Self::call(ADD_ARGS)));
        row
    }

    async fn call(raw: &str) -> ToolOutput {
        match serde_json::from_str::<AddArgs>(raw) {
            Ok(args) => match add(args.a, args.b).await {
                Ok(text) => ToolOutput::text(text),
                Err(error) => ToolOutput::error(error.message()),
            },
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}

impl Row for SerdeBaseline {
    fn run(&mut self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(Self::call(black_box(ADD_ARGS)).await);
            }
            start.elapsed()
        })
    }
}

/// `Registry::call`: lookup, parse, validation, decoding, the call; the context it consumes is
/// built per call.
struct RegistryCall {
    rt: Runtime,
    registry: Registry,
}

impl RegistryCall {
    fn new() -> Self {
        let row = RegistryCall { rt: current_thread(), registry: registry() };
        let output = row.rt.block_on(row.registry.call("add", ADD_ARGS, ToolContext::builder("add").build()));
        assert_add_output(&output.expect("add runs"));
        row
    }
}

impl Row for RegistryCall {
    fn run(&mut self, iters: u64) -> Duration {
        let registry = &self.registry;
        self.rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                let ctx = ToolContext::builder("add").build();
                black_box(registry.call("add", black_box(ADD_ARGS), ctx).await.ok());
            }
            start.elapsed()
        })
    }
}

/// `Dispatcher::run_batch` with one call. The repeat guard is off: every iteration repeats the
/// same call, which the default guard would stop from the third on.
struct DispatcherBatch1 {
    rt: Runtime,
    dispatcher: Dispatcher,
    token: CancellationToken,
}

impl DispatcherBatch1 {
    fn new() -> Self {
        let dispatcher = Dispatcher::builder(registry()).repeat_guard(RepeatGuard::DISABLED).build();
        let row = DispatcherBatch1 { rt: current_thread(), dispatcher, token: CancellationToken::new() };
        let results = row.rt.block_on(row.dispatcher.run_batch(vec![add_call()], row.token.clone()));
        assert_add_output(&results.expect("no fatal error")[0].output);
        row
    }
}

fn add_call() -> ToolCall {
    ToolCall::new("call_1", "add", ADD_ARGS)
}

impl Row for DispatcherBatch1 {
    fn run(&mut self, iters: u64) -> Duration {
        let (dispatcher, token) = (&self.dispatcher, &self.token);
        self.rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(dispatcher.run_batch(vec![black_box(add_call())], token.clone()).await.ok());
            }
            start.elapsed()
        })
    }
}

/// This crate's MCP server for `add`, as `tools serve` builds it.
fn ours_mcp_server() -> McpServer {
    let registry = Registry::builder().tool(AddTool).build().expect("registry");
    McpServer::new(Dispatcher::builder(registry)).expect("server")
}

/// A server's `ServerHandler::call_tool`, called directly: no transport, no JSON-RPC framing, no
/// service loop. Per call: the argument text parsed into rmcp's `JsonObject` (what the service
/// loop's message parsing produces), the request parameters, and a fresh `RequestContext` (as the
/// service loop makes one per request).
///
/// rmcp cannot make a `Peer` outside a running service (`Peer::new` is crate-private), so the
/// context's peer is that of a service started with `serve_directly` (no initialize handshake) on
/// one end of a duplex nobody writes to; it stays idle while the calls run.
struct InProcess<S: ServerHandler> {
    rt: Runtime,
    server: S,
    peer: rmcp::Peer<RoleServer>,
    _service: RunningService<RoleServer, S>,
    _other_end: tokio::io::DuplexStream,
}

impl<S: ServerHandler + Clone> InProcess<S> {
    fn new(server: S) -> Self {
        let rt = current_thread();
        let (io, other_end) = tokio::io::duplex(4096);
        let service =
            rt.block_on(async { serve_directly::<RoleServer, _, _, _, _>(server.clone(), io, None) });
        let peer = service.peer().clone();
        let row = InProcess { rt, server, peer, _service: service, _other_end: other_end };
        let response = row.rt.block_on(row.call(1));
        match response {
            Ok(CallToolResponse::Complete(result)) => assert_add_result(&result),
            other => panic!("add did not complete: {other:?}"),
        }
        row
    }

    async fn call(&self, id: i64) -> Result<CallToolResponse, rmcp::ErrorData> {
        let arguments: JsonObject = serde_json::from_str(black_box(ADD_ARGS)).expect("an object");
        let request = CallToolRequestParams::new("add").with_arguments(arguments);
        let context = RequestContext::new(NumberOrString::Number(id), self.peer.clone());
        self.server.call_tool(request, context).await
    }
}

impl<S: ServerHandler + Clone> Row for InProcess<S> {
    fn run(&mut self, iters: u64) -> Duration {
        let this = &*self;
        this.rt.block_on(async {
            let start = Instant::now();
            for i in 0..iters {
                black_box(this.call(i as i64).await.ok());
            }
            start.elapsed()
        })
    }
}

/// One `tools/call` per iteration from rmcp's client to a server over `tokio::io::duplex`, on an
/// initialized session, both ends on a multi-thread runtime with 2 workers. The client loop runs
/// as a task (as the server's tasks do), so no work happens on the bench's own thread.
struct Duplex {
    rt: Runtime,
    client: Arc<RunningService<RoleClient, ()>>,
    arguments: JsonObject,
}

/// Serves one session of an rmcp `ServerHandler` with rmcp's own transport.
fn spawn_session<S: ServerHandler>(server: S, io: tokio::io::DuplexStream) {
    drop(tokio::spawn(async move {
        if let Ok(running) = server.serve(io).await {
            let _ = running.waiting().await;
        }
    }));
}

impl Duplex {
    fn new(start_server: fn(tokio::io::DuplexStream)) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let client = rt.block_on(async {
            let (client_io, server_io) = tokio::io::duplex(64 * 1024);
            start_server(server_io);
            ().serve(client_io).await.expect("the session initializes")
        });
        let arguments: JsonObject = serde_json::from_str(ADD_ARGS).expect("an object");
        let row = Duplex { rt, client: Arc::new(client), arguments };
        let client = row.client.clone();
        let request = CallToolRequestParams::new("add").with_arguments(row.arguments.clone());
        let result = row.rt.block_on(async move { client.call_tool(request).await });
        assert_add_result(&result.expect("tools/call answers"));
        row
    }
}

impl Row for Duplex {
    fn run(&mut self, iters: u64) -> Duration {
        let client = self.client.clone();
        let arguments = self.arguments.clone();
        self.rt
            .block_on(self.rt.spawn(async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let request = CallToolRequestParams::new("add").with_arguments(arguments.clone());
                    black_box(client.call_tool(request).await.ok());
                }
                start.elapsed()
            }))
            .expect("the client task")
    }
}

/// `serde_json::from_str` into the typed arguments of `search`.
struct RichSerde;

impl Row for RichSerde {
    fn run(&mut self, iters: u64) -> Duration {
        assert!(serde_json::from_str::<SearchArgs>(SEARCH_VALID).is_ok());
        let start = Instant::now();
        for _ in 0..iters {
            black_box(serde_json::from_str::<SearchArgs>(black_box(SEARCH_VALID)).is_ok());
        }
        start.elapsed()
    }
}

/// `Registry::validate` of the same valid `search` arguments (lookup, parse, leniency pass, JSON
/// Schema validation; the validator is compiled before the measurement).
struct RichValidate {
    registry: Registry,
}

impl RichValidate {
    fn new() -> Self {
        let registry = registry();
        assert!(registry.validate("search", SEARCH_VALID).is_ok(), "search accepts its arguments");
        RichValidate { registry }
    }
}

impl Row for RichValidate {
    fn run(&mut self, iters: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(self.registry.validate("search", black_box(SEARCH_VALID)).is_ok());
        }
        start.elapsed()
    }
}

fn call_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("call_path");
    for (name, make) in ROWS {
        let mut row = make();
        group.bench_function(*name, |b| b.iter_custom(|iters| row.run(iters)));
    }
    group.finish();
}

/// `CALL_PATH_ROW=NAME CALL_PATH_COUNT=N`: run `N` calls of one row and exit (see the module doc).
fn count_mode(row: &str, count: &str) -> Result<(), String> {
    if row == "list" {
        for (name, _) in ROWS {
            println!("{name}");
        }
        return Ok(());
    }
    let count: u64 =
        count.parse().map_err(|_| format!("CALL_PATH_COUNT={count:?} is not a number of calls"))?;
    let names = ROWS.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ");
    let (_, make) = ROWS
        .iter()
        .find(|(name, _)| *name == row)
        .ok_or_else(|| format!("CALL_PATH_ROW={row:?} is not a row; the rows are: {names}"))?;
    let mut row = make();
    row.run(count);
    Ok(())
}

fn main() {
    if let Ok(row) = std::env::var("CALL_PATH_ROW") {
        let count = std::env::var("CALL_PATH_COUNT").unwrap_or_else(|_| "0".to_owned());
        if let Err(message) = count_mode(&row, &count) {
            eprintln!("{message}");
            std::process::exit(2);
        }
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    call_path(&mut criterion);
    criterion.final_summary();
}
