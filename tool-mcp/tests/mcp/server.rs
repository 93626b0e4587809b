//! `tool_runtime::mcp_server` on an in-memory transport: structured output, numeric progress, titles and
//! the application's own event sink, with rmcp's client on the other end.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tool_runtime::mcp_server::McpServer;
use tool_runtime::{
    Dispatcher, Json, Progress, Registry, ToolContext, ToolError,
    events::{EventFn, ToolEvent},
    tool,
};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    /// The sum.
    total: i64,
}

/// Add two numbers.
#[tool(parallel, read_only, idempotent, title = "Adder")]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Json<Sum> {
    Json(Sum { total: a + b })
}

/// Count to `n`, reporting each step as progress; the first from a thread of the tool's own,
/// outside the runtime, as a tool doing blocking work might.
#[tool(undocumented)]
async fn count(ctx: &ToolContext, n: u32) -> Result<String, ToolError> {
    for i in 1..=n {
        let step = Progress {
            message: Some(format!("step {i}")),
            progress: Some(f64::from(i)),
            total: Some(f64::from(n)),
        };
        if i == 1 {
            std::thread::scope(|scope| scope.spawn(|| ctx.progress(step)).join().expect("progress"));
        } else {
            ctx.progress(step);
        }
    }
    Ok(format!("counted to {n}"))
}

#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

type Events = Arc<Mutex<Vec<ToolEvent>>>;

async fn connect() -> (RunningService<RoleClient, Recorder>, Recorder, Events, Registry) {
    let registry = Registry::builder().with_inventory().allow(["add", "count"]).build().unwrap();
    let events: Events = Arc::default();
    let seen = events.clone();
    let server = McpServer::builder(Dispatcher::builder(registry))
        .name("demo")
        .version("1.2.3")
        .instructions("Add numbers.")
        .events(EventFn(move |event| seen.lock().unwrap().push(event)))
        .build()
        .unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_io).await });
    let recorder = Recorder::default();
    let client = recorder.clone().serve(client_io).await.expect("initialize");
    let registry = Registry::builder().with_inventory().allow(["add", "count"]).build().unwrap();
    (client, recorder, events, registry)
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else { panic!("object") };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_output_titles_and_instructions() {
    let (client, _, _, registry) = connect().await;
    let info = client.peer_info().unwrap();
    assert_eq!(
        info.server_info.as_ref().map(|i| (i.name.as_str(), i.version.as_str())),
        Some(("demo", "1.2.3"))
    );
    assert_eq!(info.instructions.as_deref(), Some("Add numbers."));

    let tools = serde_json::to_value(client.list_all_tools().await.unwrap()).unwrap();
    let expected = tool_runtime::providers::mcp::definitions(&registry, &Default::default()).unwrap();
    assert_eq!(tools, Value::Array(expected));
    let add = tools.as_array().unwrap().iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!(add["title"], "Adder");
    assert_eq!(add["annotations"], json!({"title": "Adder", "readOnlyHint": true, "idempotentHint": true}));
    assert_eq!(add["outputSchema"]["type"], "object");
    assert_eq!(add["outputSchema"]["properties"]["total"]["type"], "integer");

    let result = client.call_tool(call("add", json!({"a": 40, "b": 2}))).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({
            "content": [{"type": "text", "text": "{\n  \"total\": 42\n}"}],
            "structuredContent": {"total": 42},
            "isError": false
        })
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numeric_progress_and_the_applications_event_sink() {
    let (client, recorder, events, _) = connect().await;
    let result = client.call_tool(call("count", json!({"n": 3}))).await.unwrap();
    assert_eq!(result.is_error, Some(false));

    let mut progress = Vec::new();
    for _ in 0..100 {
        progress = recorder.progress.lock().unwrap().clone();
        if progress.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // rmcp's client handles each notification in a task of its own, so they may be seen out of
    // order here; the order on the wire is checked in `progress_precedes_the_response_on_the_wire`.
    let mut seen: Vec<(f64, Option<f64>, Option<String>)> =
        progress.iter().map(|p| (p.progress, p.total, p.message.clone())).collect();
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        seen,
        [
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );

    let kinds: Vec<&'static str> = events.lock().unwrap().iter().map(ToolEvent::kind).collect();
    assert_eq!(kinds, ["queued", "started", "progress", "progress", "progress", "finished"]);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_precedes_the_response_on_the_wire() {
    let registry = Registry::builder().with_inventory().allow(["add", "count"]).build().unwrap();
    let server = McpServer::new(Dispatcher::builder(registry)).unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(async move { server.serve(server_io).await });
    let (reader, mut writer) = tokio::io::split(client_io);
    let mut lines = BufReader::new(reader).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "count", "arguments": {"n": 3}, "_meta": {"progressToken": "p-1"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "count", "arguments": {"n": 2}}}),
    ];
    for request in requests {
        writer.write_all(format!("{request}\n").as_bytes()).await.unwrap();
    }
    let mut seen = Vec::new();
    while seen.iter().filter(|m: &&Value| m.get("id").is_some()).count() < 3 {
        let line = lines.next_line().await.unwrap().expect("a message");
        seen.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let for_call_2: Vec<&Value> =
        seen.iter().filter(|m| m["id"] == 2 || m["method"] == "notifications/progress").collect();
    assert_eq!(
        for_call_2,
        [
            &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p-1", "progress": 1.0, "total": 3.0, "message": "step 1"}}),
            &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p-1", "progress": 2.0, "total": 3.0, "message": "step 2"}}),
            &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p-1", "progress": 3.0, "total": 3.0, "message": "step 3"}}),
            &json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "counted to 3"}], "isError": false}}),
        ],
        "a request without a progress token gets no notifications: {seen:?}"
    );
    // Closing the client's side ends the session cleanly.
    drop(writer);
    drop(lines);
    serving.await.unwrap().unwrap();
}

/// Log `n` messages at `info`, as fast as it can.
#[tool(undocumented)]
async fn flood(ctx: &ToolContext, n: u32) -> String {
    for i in 0..n {
        ctx.log(tool_runtime::context::LogLevel::Info, None, format!("line {i}"));
    }
    format!("logged {n}")
}

/// A call that logs faster than its client reads: at most a bounded number of messages wait,
/// the rest are dropped, and the client is told how many.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_log_messages_is_bounded_and_the_drop_is_told() {
    const N: usize = 20_000;
    let registry = Registry::builder().with_inventory().allow(["flood"]).build().unwrap();
    let server = McpServer::new(Dispatcher::builder(registry)).unwrap();
    // A small pipe, not read until the tool is done: the client is slower than the tool.
    let (server_io, client_io) = tokio::io::duplex(4 * 1024);
    let serving = tokio::spawn(async move { server.serve(server_io).await });
    let (reader, mut writer) = tokio::io::split(client_io);
    let mut lines = BufReader::new(reader).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    writer.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    lines.next_line().await.unwrap().expect("the initialize result");
    for request in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flood", "arguments": {"n": N}}}),
    ] {
        writer.write_all(format!("{request}\n").as_bytes()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mut delivered, mut told) = (0, Vec::new());
    loop {
        let line = lines.next_line().await.unwrap().expect("a message");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            assert_eq!(message["result"]["content"][0]["text"], format!("logged {N}"));
            break;
        }
        assert_eq!(message["method"], "notifications/message", "{message}");
        match message["params"]["level"].as_str() {
            Some("info") => delivered += 1,
            Some("warning") => told.push(message["params"]["data"].as_str().unwrap().to_owned()),
            other => panic!("{other:?}: {message}"),
        }
    }
    assert!(delivered < N / 4, "{delivered} of {N} messages were queued");
    let dropped: usize =
        told.iter().map(|text| text.split(' ').next().unwrap().parse::<usize>().unwrap()).sum();
    assert_eq!(delivered + dropped, N, "{told:?}");
    assert!(
        told[0].ends_with("messages of this call were dropped: they came faster than they could be sent")
    );
    drop(writer);
    drop(lines);
    serving.await.unwrap().unwrap();
}

/// A client that forwards each `notifications/tools/list_changed` it receives.
#[derive(Clone)]
struct ListWatcher(tokio::sync::mpsc::UnboundedSender<()>);

impl ClientHandler for ListWatcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_change_is_announced_to_the_client() {
    let registry = Registry::builder().with_inventory().allow(["add"]).build().unwrap();
    let server = McpServer::builder(Dispatcher::builder(registry)).tool_list_changes(true).build().unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.clone().serve(server_io));
    let (tx, mut announced) = tokio::sync::mpsc::unbounded_channel();
    let client = ListWatcher(tx).serve(client_io).await.expect("initialize");
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), Some(true));

    // The session counts once the server has read `notifications/initialized`, which the client
    // sends without waiting for an answer.
    while server.announce_tool_list_changed().await == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(announced.recv().await, Some(()));

    // Without it declared, the capability says the list does not change.
    let registry = Registry::builder().with_inventory().allow(["add"]).build().unwrap();
    let fixed = McpServer::new(Dispatcher::builder(registry)).unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(fixed.serve(server_io));
    let client = ().serve(client_io).await.expect("initialize");
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), None);
}

/// Set once `hold` runs; `hold` answers once `RELEASE` is notified.
static HELD: tokio::sync::Notify = tokio::sync::Notify::const_new();
static RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Wait until released.
#[tool(parallel)]
async fn hold() -> String {
    HELD.notify_one();
    RELEASE.notified().await;
    "released".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_registry_serves_new_calls_while_calls_in_flight_finish_on_the_old_one() {
    let old = Registry::builder().with_inventory().allow(["count", "hold"]).build().unwrap();
    let server = McpServer::builder(Dispatcher::builder(old)).tool_list_changes(true).build().unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.clone().serve(server_io));
    let (tx, mut announced) = tokio::sync::mpsc::unbounded_channel();
    let client = ListWatcher(tx).serve(client_io).await.expect("initialize");
    let names = |tools: Vec<rmcp::model::Tool>| {
        let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        names
    };
    assert_eq!(names(client.list_all_tools().await.unwrap()), ["count", "hold"]);

    let peer = client.peer().clone();
    let in_flight = tokio::spawn(async move { peer.call_tool(call("hold", json!({}))).await });
    HELD.notified().await;

    // `add` is parallel, as `hold` is: it runs beside the call in flight, which holds the gate
    // the new dispatcher shares.
    let new = Registry::builder().with_inventory().allow(["add"]).build().unwrap();
    server.replace_registry(new).await.unwrap();
    assert_eq!(announced.recv().await, Some(()), "the client hears of the change");
    assert_eq!(names(client.list_all_tools().await.unwrap()), ["add"]);
    assert_eq!(names(server.tools()), ["add"]);

    let sum = client.call_tool(call("add", json!({"a": 1, "b": 2}))).await.unwrap();
    assert_eq!(sum.is_error, Some(false));
    assert_eq!(sum.structured_content, Some(json!({"total": 3})));
    let removed = client.call_tool(call("count", json!({"n": 1}))).await.unwrap_err();
    let rmcp::ServiceError::McpError(removed) = removed else { panic!("{removed:?}") };
    assert_eq!(removed.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(removed.message.starts_with("Unknown tool `count`"), "{}", removed.message);
    assert!(removed.message.contains("add"), "names the tools there are now: {}", removed.message);

    // A registry MCP cannot describe changes nothing and announces nothing.
    let listing = tool_runtime::spec::FnTool::new(
        tool_runtime::ToolSpec::new("listing", "Lists.", json!({"type": "object"}))
            .with_output_schema(json!({"type": "array", "items": {"type": "string"}})),
        |_ctx: ToolContext, _args: Value| async { Ok(tool_runtime::ToolOutput::text("[]")) },
    );
    let unlowerable = Registry::builder().tool(listing).build().unwrap();
    let error = server.replace_registry(unlowerable).await.unwrap_err();
    assert!(error.to_string().starts_with("the tool `listing` cannot be described to MCP"), "{error}");
    assert_eq!(names(client.list_all_tools().await.unwrap()), ["add"]);
    assert_eq!(names(server.tools()), ["add"]);
    let sum = client.call_tool(call("add", json!({"a": 2, "b": 2}))).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"total": 4})));
    assert!(announced.try_recv().is_err(), "no announcement of a change that did not happen");

    // `hold` is gone from the registry, and its call still finishes on the one it started on.
    RELEASE.notify_one();
    let held = in_flight.await.unwrap().unwrap();
    assert_eq!(held.is_error, Some(false));
    assert_eq!(serde_json::to_value(&held.content).unwrap(), json!([{"type": "text", "text": "released"}]));
}

/// How many `park` calls have started; they answer once `UNPARK` has a permit for each.
static PARKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PARKED_CHANGED: tokio::sync::Notify = tokio::sync::Notify::const_new();
static UNPARK: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Wait until unparked.
#[tool(parallel)]
async fn park() -> String {
    PARKED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    PARKED_CHANGED.notify_one();
    UNPARK.acquire().await.expect("open").forget();
    "unparked".to_owned()
}

/// A client that starts calls faster than they end: past 256 running in its session, a call is
/// refused with a result the model can read, and calls start again once some have ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_runs_a_bounded_number_of_calls_at_once() {
    let registry = Registry::builder().with_inventory().allow(["add", "park"]).build().unwrap();
    let server = McpServer::builder(Dispatcher::builder(registry)).build().unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.serve(server_io));
    let client = ().serve(client_io).await.expect("initialize");
    let mut parked = tokio::task::JoinSet::new();
    for _ in 0..256 {
        let peer = client.peer().clone();
        parked.spawn(async move { peer.call_tool(call("park", json!({}))).await });
    }
    while PARKED.load(std::sync::atomic::Ordering::SeqCst) < 256 {
        PARKED_CHANGED.notified().await;
    }

    let refused = client.call_tool(call("add", json!({"a": 1, "b": 2}))).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    let text = serde_json::to_value(&refused.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("256 calls of this session are running already"), "{text}");
    assert_eq!(PARKED.load(std::sync::atomic::Ordering::SeqCst), 256, "nothing else started");

    UNPARK.add_permits(1);
    let first = parked.join_next().await.unwrap().unwrap().unwrap();
    assert_eq!(first.is_error, Some(false));
    let sum = client.call_tool(call("add", json!({"a": 1, "b": 2}))).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"total": 3})), "one ended: a call runs again");

    UNPARK.add_permits(255);
    while let Some(done) = parked.join_next().await {
        assert_eq!(done.unwrap().unwrap().is_error, Some(false));
    }
}
