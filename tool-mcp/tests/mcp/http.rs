//! `McpServer::serve_http` with rmcp's Streamable HTTP client and plain HTTP requests: a state
//! per session, the `Origin` and token checks, calls cancelled with their session, and graceful
//! shutdown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tool_runtime::mcp_server::{HttpOptions, McpServer};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolContext, ToolError, ToolOutput, ToolSpec, spec::FnTool,
};

/// What the tools tell the test: each `hold` call that started, how each ended, how many calls
/// ran at all; and the switches that release a `hold` call.
#[derive(Default)]
struct Probe {
    started: Mutex<Option<mpsc::UnboundedSender<String>>>,
    ended: Mutex<HashMap<String, &'static str>>,
    releases: Mutex<HashMap<String, Arc<Notify>>>,
    calls: std::sync::atomic::AtomicUsize,
}

impl Probe {
    fn release(&self, key: &str) -> Arc<Notify> {
        self.releases.lock().unwrap().entry(key.to_owned()).or_default().clone()
    }

    fn ended(&self, key: &str) -> Option<&'static str> {
        self.ended.lock().unwrap().get(key).copied()
    }
}

fn key_schema(name: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]})
}

/// `note` keeps its texts in the session state and returns them all with the session id;
/// `hold` runs until it is released or cancelled.
fn registry(probe: &Arc<Probe>) -> Registry {
    let seen = probe.clone();
    let note = FnTool::new(
        ToolSpec::new("note", "Adds a note to this session's notes.", key_schema("text")).with_parallel(true),
        move |ctx: ToolContext, args: Value| {
            seen.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                let notes = ctx.session().get_or_insert_with(|| Mutex::new(Vec::<String>::new()));
                let mut notes = notes.lock().unwrap();
                notes.push(args["text"].as_str().unwrap_or_default().to_owned());
                Ok(ToolOutput::text(format!("{} {}", ctx.session_id(), notes.join(","))))
            }
        },
    );
    let probe = probe.clone();
    let hold = FnTool::new(
        ToolSpec::new("hold", "Runs until released.", key_schema("key")).with_parallel(true),
        move |ctx: ToolContext, args: Value| {
            let probe = probe.clone();
            async move {
                let key = args["key"].as_str().unwrap_or_default().to_owned();
                let release = probe.release(&key);
                if let Some(started) = probe.started.lock().unwrap().as_ref() {
                    let _ = started.send(key.clone());
                }
                let token = ctx.cancellation_token().clone();
                let ended = tokio::select! {
                    () = release.notified() => "released",
                    () = token.cancelled() => "cancelled",
                };
                probe.ended.lock().unwrap().insert(key.clone(), ended);
                if ended == "cancelled" {
                    return Err(ToolError::cancelled(format!("{key} was cancelled")));
                }
                Ok(ToolOutput::text(format!("{key} {ended}")))
            }
        },
    );
    Registry::builder().tool(note).tool(hold).build().unwrap()
}

struct Served {
    url: String,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    probe: Arc<Probe>,
    started: mpsc::UnboundedReceiver<String>,
}

impl Served {
    /// Stops the server and waits until it has returned.
    async fn shut_down(self) {
        self.stop.cancel();
        self.task.await.unwrap();
    }
}

async fn serve(options: HttpOptions) -> Served {
    serve_limited(options, None).await
}

/// Serves with `options`, reading messages of at most `max_message_bytes` when given.
async fn serve_limited(options: HttpOptions, max_message_bytes: Option<usize>) -> Served {
    crate::install_tls_provider();
    let probe = Arc::new(Probe::default());
    let (tx, started) = mpsc::unbounded_channel();
    *probe.started.lock().unwrap() = Some(tx);
    let mut server = McpServer::builder(Dispatcher::builder(registry(&probe)));
    if let Some(limit) = max_message_bytes {
        server = server.max_message_bytes(limit);
    }
    let server = server.build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let options = options.shutdown_on(stop.clone());
    let task = tokio::spawn(async move { server.serve_http(listener, options).await.expect("serve_http") });
    Served { url, stop, task, probe, started }
}

async fn client(url: &str, token: Option<&str>) -> RunningService<RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    ().serve(StreamableHttpClientTransport::from_config(config)).await.expect("initialize over HTTP")
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else { panic!("object") };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

fn text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_has_its_own_session_state() {
    let served = serve(HttpOptions::new()).await;
    let clients: Vec<_> = futures_join(8, |i| {
        let url = served.url.clone();
        async move {
            let client = client(&url, None).await;
            let mut last = String::new();
            for n in 0..3 {
                last = text(
                    &client.call_tool(call("note", json!({"text": format!("c{i}n{n}")}))).await.unwrap(),
                );
            }
            (i, last, client)
        }
    })
    .await;
    let mut sessions = std::collections::HashSet::new();
    for (i, last, client) in clients {
        let (session, notes) = last.split_once(' ').unwrap();
        assert_eq!(notes, format!("c{i}n0,c{i}n1,c{i}n2"), "client {i} saw another session's notes");
        assert!(session.starts_with("http-"), "{session}");
        sessions.insert(session.to_owned());
        client.cancel().await.unwrap();
    }
    assert_eq!(sessions.len(), 8);
    served.shut_down().await;
}

/// Runs `n` futures made by `make` at once and returns their outputs in order.
async fn futures_join<F, T>(n: usize, make: impl Fn(usize) -> F) -> Vec<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = (0..n).map(|i| tokio::spawn(make(i))).collect();
    let mut outputs = Vec::new();
    for handle in handles {
        outputs.push(handle.await.unwrap());
    }
    outputs
}

/// A plain JSON-RPC POST; `session` and `token` add their headers.
async fn post(
    url: &str,
    body: &Value,
    session: Option<&str>,
    token: Option<&str>,
    origin: Option<&str>,
) -> reqwest::Response {
    post_text(url, body.to_string(), session, token, origin).await
}

/// A POST of any body to the MCP endpoint.
async fn post_text(
    url: &str,
    body: String,
    session: Option<&str>,
    token: Option<&str>,
    origin: Option<&str>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.expect("HTTP request")
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}})
}

/// The JSON-RPC messages of a response, whether it is JSON or an event stream.
async fn messages(response: reqwest::Response) -> Vec<Value> {
    let body = response.text().await.unwrap();
    if let Ok(value) = serde_json::from_str::<Value>(&body) {
        return vec![value];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_a_request_gets_401_and_nothing_runs() {
    let served = serve(HttpOptions::new().bearer_token("s3cret")).await;
    let url = &served.url;

    let refused = post(url, &initialize(), None, None, None).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["www-authenticate"], "Bearer realm=\"mcp\"");
    assert!(refused.text().await.unwrap().contains("Authorization: Bearer TOKEN"));
    assert_eq!(post(url, &initialize(), None, Some("wrong"), None).await.status(), 401);

    let opened = post(url, &initialize(), None, Some("s3cret"), None).await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let init = messages(opened).await;
    assert_eq!(init[0]["result"]["capabilities"], json!({"tools": {}, "logging": {}}), "{init:?}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, &initialized, Some(&session), Some("s3cret"), None).await.status(), 202);

    // A session id is no credential: the call is refused before it reaches the session.
    let note = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "note", "arguments": {"text": "x"}}});
    for token in [None, Some("s3cre"), Some("s3cret2"), Some("S3CRET")] {
        assert_eq!(post(url, &note, Some(&session), token, None).await.status(), 401, "{token:?}");
    }
    assert_eq!(served.probe.calls.load(std::sync::atomic::Ordering::SeqCst), 0);

    let ran = post(url, &note, Some(&session), Some("s3cret"), None).await;
    assert_eq!(ran.status(), 200);
    let ran = messages(ran).await;
    assert_eq!(ran.last().unwrap()["result"]["content"][0]["text"], "http-1 x", "{ran:?}");
    assert_eq!(served.probe.calls.load(std::sync::atomic::Ordering::SeqCst), 1);

    // rmcp's own client, with the token.
    let client = client(url, Some("s3cret")).await;
    let result = client.call_tool(call("note", json!({"text": "y"}))).await.unwrap();
    assert_eq!(text(&result), "http-2 y");
    client.cancel().await.unwrap();
    served.shut_down().await;
}

/// Each request body goes through the checks of stdio's lines: a body that is not a message the
/// server can serve gets its JSON-RPC error (with its `id` whenever it can be read) and nothing
/// runs, where `rmcp` alone answers `415` in plain text, or `404` "method not found" for a
/// `tools/call` whose params do not fit. The `Origin` check still comes first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_a_message_gets_its_json_rpc_error() {
    let served = serve_limited(HttpOptions::new(), Some(4096)).await;
    let url = &served.url;
    let opened = post(url, &initialize(), None, None, None).await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, &initialized, Some(&session), None, None).await.status(), 202);

    // (body, HTTP status, JSON-RPC code, id, the error's message begins with, then contains)
    let cases: [(&str, u16, i64, Value, &str, &str); 9] = [
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"note""#,
            400,
            -32700,
            json!(7),
            "Parse error: the message is not valid JSON",
            "per request",
        ),
        ("", 400, -32700, Value::Null, "Parse error: the message is empty.", "per request"),
        (" \r\n", 400, -32700, Value::Null, "Parse error: the message is empty.", "per request"),
        (
            "42",
            400,
            -32600,
            Value::Null,
            "Invalid request: a JSON-RPC message is a JSON object, not a number.",
            "per request",
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"text":"x"}}}"#,
            200,
            -32602,
            json!(3),
            "Invalid params for `tools/call`",
            "name",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"five","method":"tools/call","params":[1]}"#,
            200,
            -32602,
            json!("five"),
            "Invalid params: `params` of `tools/call` must be an object",
            "an array",
        ),
        (
            r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#,
            400,
            -32600,
            json!(4),
            "Invalid request: `jsonrpc` must be",
            "2.0",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4.5,"method":"ping"}"#,
            400,
            -32600,
            Value::Null,
            "Invalid request: `id` must be",
            "a number",
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#,
            400,
            -32602,
            Value::Null,
            "Invalid params: `params` of `notifications/cancelled`",
            "a string",
        ),
    ];
    for (body, status, code, id, begins, contains) in cases {
        let response = post_text(url, body.to_owned(), Some(&session), None, None).await;
        assert_eq!(response.status(), status, "{body}");
        assert_eq!(response.headers()["content-type"], "application/json", "{body}");
        let reply: Value = response.json().await.unwrap();
        assert_eq!(reply["jsonrpc"], "2.0", "{body}: {reply}");
        assert_eq!(reply["id"], id, "{body}: {reply}");
        assert_eq!(reply["error"]["code"], code, "{body}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(begins) && message.contains(contains), "{body}: {message}");
    }

    let batch =
        json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]);
    let response = post(url, &batch, Some(&session), None, None).await;
    assert_eq!(response.status(), 400);
    let replies: Value = response.json().await.unwrap();
    assert_eq!(replies.as_array().map(Vec::len), Some(2), "{replies}");
    for (reply, id) in replies.as_array().unwrap().iter().zip([1, 2]) {
        assert_eq!(reply["id"], id);
        assert_eq!(reply["error"]["code"], -32600);
        assert!(reply["error"]["message"].as_str().unwrap().contains("batches are not supported"), "{reply}");
    }

    // Longer than the server's limit: refused unread (a body without a declared length is read up
    // to the limit: the unit tests of `http.rs`).
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"note","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(5000)
    );
    let response = post_text(url, long.clone(), Some(&session), None, None).await;
    assert_eq!(response.status(), 413);
    let reply: Value = response.json().await.unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "is {} bytes long, more than this server reads in one message (4096 bytes)",
            long.len()
        )),
        "{message}"
    );
    // A page of another origin is refused by the DNS-rebinding check before its body is read.
    let response = post_text(url, "{".to_owned(), Some(&session), None, Some("http://evil.example")).await;
    assert_eq!(response.status(), 403);
    assert_eq!(served.probe.calls.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing ran");

    // The session still serves calls.
    let note = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "note", "arguments": {"text": "fine"}}});
    let ran = post(url, &note, Some(&session), None, None).await;
    assert_eq!(ran.status(), 200);
    let ran = messages(ran).await;
    assert_eq!(ran.last().unwrap()["result"]["content"][0]["text"], "http-1 fine", "{ran:?}");
    served.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_origin_is_refused_unless_allowed() {
    let served = serve(HttpOptions::new().allow_origin("http://app.example:5173")).await;
    let url = &served.url;
    // A rebinding attack's page has its own origin even when its name resolves to 127.0.0.1.
    let refused = post(url, &initialize(), None, None, Some("http://evil.example")).await;
    assert_eq!(refused.status(), 403);
    assert_eq!(post(url, &initialize(), None, None, Some("http://app.example:8000")).await.status(), 403);
    assert_eq!(post(url, &initialize(), None, None, Some("http://app.example:5173")).await.status(), 200);
    // Pages of this machine may call it, as with the MCP SDKs' servers.
    assert_eq!(post(url, &initialize(), None, None, Some("http://localhost:8000")).await.status(), 200);
    assert_eq!(post(url, &initialize(), None, None, Some("http://127.0.0.1:3000")).await.status(), 200);
    // Clients that are not browsers send no Origin.
    assert_eq!(post(url, &initialize(), None, None, None).await.status(), 200);

    let foreign_host = reqwest::Client::new()
        .post(url)
        .header("host", "attacker.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(foreign_host.status(), 403);

    let elsewhere = reqwest::get(url.replace("/mcp", "/other")).await.unwrap();
    assert_eq!(elsewhere.status(), 404);
    served.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_a_session_cancels_its_calls() {
    let mut served = serve(HttpOptions::new()).await;
    let client = Arc::new(client(&served.url, None).await);
    let calling = client.clone();
    let call_task = tokio::spawn(async move { calling.call_tool(call("hold", json!({"key": "a"}))).await });
    assert_eq!(served.started.recv().await.unwrap(), "a");
    // Another client's session is not touched.
    let other = client_for(&served.url).await;
    let other_call = {
        let other = other.clone();
        tokio::spawn(async move { other.call_tool(call("hold", json!({"key": "b"}))).await })
    };
    assert_eq!(served.started.recv().await.unwrap(), "b");

    call_task.abort();
    let _ = call_task.await;
    let client = Arc::into_inner(client).expect("the only reference");
    client.cancel().await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while served.probe.ended("a").is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the call of the ended session was cancelled");
    assert_eq!(served.probe.ended("a"), Some("cancelled"));
    assert_eq!(served.probe.ended("b"), None);

    served.probe.release("b").notify_one();
    assert_eq!(text(&other_call.await.unwrap().unwrap()), "b released");
    served.shut_down().await;
}

async fn client_for(url: &str) -> Arc<RunningService<RoleClient, ()>> {
    Arc::new(client(url, None).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_calls_finish_within_the_grace_then_cancels_the_rest() {
    let mut served = serve(HttpOptions::new().shutdown_grace(Duration::from_secs(2))).await;
    let client = client_for(&served.url).await;
    let mut calls = Vec::new();
    for key in ["finishes", "overstays"] {
        let client = client.clone();
        calls.push(tokio::spawn(async move { client.call_tool(call("hold", json!({"key": key}))).await }));
        assert_eq!(served.started.recv().await.unwrap(), key);
    }
    served.stop.cancel();
    served.probe.release("finishes").notify_one();
    let overstays = calls.pop().unwrap().await.unwrap().unwrap();
    let finishes = calls.pop().unwrap().await.unwrap().unwrap();
    assert_eq!((text(&finishes).as_str(), finishes.is_error), ("finishes released", Some(false)));
    assert_eq!(overstays.is_error, Some(true));
    assert!(text(&overstays).contains("overstays was cancelled"), "{}", text(&overstays));
    assert_eq!(served.probe.ended("overstays"), Some("cancelled"));
    tokio::time::timeout(Duration::from_secs(20), served.task).await.expect("serve_http returned").unwrap();
    // Nothing listens any more.
    assert!(reqwest::get(&served.url).await.is_err());
}

/// A client that forwards each `notifications/tools/list_changed` it receives.
#[derive(Clone)]
struct ListWatcher(mpsc::UnboundedSender<()>);

impl rmcp::ClientHandler for ListWatcher {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_change_is_announced_to_every_session() {
    crate::install_tls_provider();
    let probe = Arc::new(Probe::default());
    let server =
        McpServer::builder(Dispatcher::builder(registry(&probe))).tool_list_changes(true).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn(server.clone().serve_http(listener, HttpOptions::new().shutdown_on(stop.clone())));

    let (tx, mut announced) = mpsc::unbounded_channel();
    let mut clients = Vec::new();
    for _ in 0..2 {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.clone()),
        );
        clients.push(ListWatcher(tx.clone()).serve(transport).await.expect("initialize over HTTP"));
    }
    let capabilities = &clients[0].peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), Some(true));

    // Each session counts once the server has read its `notifications/initialized`.
    while server.announce_tool_list_changed().await < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(announced.recv().await, Some(()));
    assert_eq!(announced.recv().await, Some(()));
    stop.cancel();
}

/// A raw connection to the server at `url` from the loopback address `source`.
async fn connect_from(url: &str, source: &str) -> tokio::net::TcpStream {
    let address: std::net::SocketAddr =
        url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    socket.connect(address).await.unwrap()
}

/// Starts a request and sends its headers one byte at a time, every 50 ms, until dropped.
fn trickle(mut stream: tokio::net::TcpStream) -> tokio::task::JoinHandle<()> {
    use tokio::io::AsyncWriteExt;
    tokio::spawn(async move {
        let head = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-slow: ";
        for byte in head.iter().chain(std::iter::repeat(&b'a')) {
            if stream.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// Everything the server sends on `stream` until it closes it (at most 5 s).
async fn read_all(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut text = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut text)).await;
    String::from_utf8_lossy(&text).into_owned()
}

/// An rmcp client whose connections come from the loopback address `source`.
async fn client_from(url: &str, source: &str, token: &str) -> RunningService<RoleClient, ()> {
    let http = reqwest::Client::builder()
        .local_address(source.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    ().serve(StreamableHttpClientTransport::with_client(http, config)).await.expect("initialize over HTTP")
}

/// Slow clients hold connections up to their own limit: the next connection from one of them is
/// refused `429`, with a sentence. When they fill the server, a client with the token, from
/// elsewhere, is still served at once: its connections take the places of the oldest slow ones,
/// which are closed. A connection one of whose requests passed the checks is never closed for
/// another: once such connections fill the server, a new one is refused `503`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickling_clients_get_their_limit_and_a_real_client_is_still_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let options = HttpOptions::new()
        .bearer_token("s3cret")
        .max_connections(12)
        .max_connections_per_client(4)
        .header_read_timeout(Duration::from_secs(30));
    let served = serve(options).await;
    let mut trickles = Vec::new();
    for source in ["127.0.0.1", "127.0.0.3", "127.0.0.4"] {
        for _ in 0..4 {
            trickles.push(trickle(connect_from(&served.url, source).await));
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut refused = connect_from(&served.url, "127.0.0.1").await;
    let answer = read_all(&mut refused).await;
    assert!(answer.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{answer}");
    assert!(answer.contains("127.0.0.1 already has 4 connections open"), "{answer}");

    let started = std::time::Instant::now();
    let real = client_from(&served.url, "127.0.0.2", "s3cret").await;
    let result = real.call_tool(call("note", json!({"text": "served"}))).await.unwrap();
    assert!(text(&result).ends_with(" served"), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let closed = trickles.iter().take_while(|task| task.is_finished()).count();
    assert!((1..=4).contains(&closed), "{closed} slow connections were closed");
    assert!(trickles[closed..].iter().all(|task| !task.is_finished()), "not the oldest were closed");
    real.cancel().await.unwrap();
    for task in trickles {
        task.abort();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Connections whose requests passed the checks (the answer does not matter) stay.
    let mut held = Vec::new();
    for source in ["127.0.0.5", "127.0.0.6", "127.0.0.7"] {
        for _ in 0..4 {
            let mut stream = connect_from(&served.url, source).await;
            stream
                .write_all(b"DELETE /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer s3cret\r\n\r\n")
                .await
                .unwrap();
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).await.unwrap();
            assert!(head.starts_with(b"HTTP/1.1 "), "{}", String::from_utf8_lossy(&head));
            held.push(stream);
        }
    }
    let mut full = connect_from(&served.url, "127.0.0.8").await;
    let answer = read_all(&mut full).await;
    assert!(answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{answer}");
    assert!(answer.contains("already has 12 connections open"), "{answer}");
    drop(held);
    served.shut_down().await;
}

/// A connection whose headers do not arrive in time is closed; a body that does not arrive in
/// time is answered `408` with a sentence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_and_slow_bodies_time_out() {
    use tokio::io::AsyncWriteExt;
    let options = HttpOptions::new()
        .header_read_timeout(Duration::from_millis(400))
        .body_read_timeout(Duration::from_millis(400));
    let served = serve(options).await;

    let slow = connect_from(&served.url, "127.0.0.1").await;
    let started = std::time::Instant::now();
    let (mut read, write) = slow.into_split();
    let writer = tokio::spawn(async move {
        let mut write = write;
        for byte in b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if write.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut sink = Vec::new();
    let closed = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::io::AsyncReadExt::read_to_end(&mut read, &mut sink),
    )
    .await;
    assert!(closed.is_ok(), "a connection sending its headers slowly stayed open");
    assert!(started.elapsed() < Duration::from_secs(2), "closed after {:?}", started.elapsed());
    writer.abort();

    let mut slow_body = connect_from(&served.url, "127.0.0.1").await;
    slow_body
        .write_all(
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\":",
        )
        .await
        .unwrap();
    let answer = read_all(&mut slow_body).await;
    assert!(answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{answer}");
    assert!(answer.contains("did not arrive whole within 400ms"), "{answer}");
    served.shut_down().await;
}

/// Sessions past the limit are refused with a JSON-RPC error naming it; a session that ends
/// (`DELETE`, answered `200`, or idle too long) makes room for another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_and_an_ended_session_makes_room() {
    let options = HttpOptions::new().max_sessions(2).session_idle_timeout(Duration::from_millis(1500));
    let served = serve(options).await;
    let session_of = |response: &reqwest::Response| {
        response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned())
    };
    let first = post(&served.url, &initialize(), None, None, None).await;
    assert_eq!(first.status(), 200);
    let first = session_of(&first).unwrap();
    let second = post(&served.url, &initialize(), None, None, None).await;
    assert_eq!(second.status(), 200);

    let refused = post(&served.url, &initialize(), None, None, None).await;
    assert_eq!(refused.status(), 503);
    assert!(session_of(&refused).is_none());
    let error = &messages(refused).await[0];
    assert_eq!(error["id"], json!(1));
    assert_eq!(error["error"]["code"], json!(-32000));
    assert!(error["error"]["message"].as_str().unwrap().contains("already has 2 sessions open"), "{error}");

    // DELETE ends a session with `200` (the MCP SDKs accept 200 or 204).
    let deleted = reqwest::Client::new()
        .delete(&served.url)
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let third = post(&served.url, &initialize(), None, None, None).await;
    assert_eq!(third.status(), 200, "a deleted session still counts");
    assert_eq!(post(&served.url, &initialize(), None, None, None).await.status(), 503);

    // Idle sessions end by themselves, and leave room.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for _ in 0..2 {
        assert_eq!(
            post(&served.url, &initialize(), None, None, None).await.status(),
            200,
            "idle sessions still count"
        );
    }
    served.shut_down().await;
}

/// A quick call's answer is written whole, with its length, not as a chunked stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_answer_is_written_in_one_piece() {
    let served = serve(HttpOptions::new()).await;
    let init = post(&served.url, &initialize(), None, None, None).await;
    let session = init.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "note", "arguments": {"text": "x"}}});
    let response = post(&served.url, &call, Some(&session), None, None).await;
    assert_eq!(response.headers().get("content-type").unwrap(), "text/event-stream");
    assert!(response.headers().get("transfer-encoding").is_none(), "{:?}", response.headers());
    assert!(response.headers().get("content-length").is_some(), "{:?}", response.headers());
    let messages = messages(response).await;
    assert_eq!(messages.last().unwrap()["id"], json!(2), "{messages:?}");
    served.shut_down().await;
}

/// Each body is parsed once, by the checks, and the message they read is the one served: a body
/// that starts with a byte-order mark (which the checks skip, as RFC 8259 allows a reader to)
/// would not parse a second time from its bytes. In a session and without one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_body_is_parsed_once() {
    let with_bom = |message: &Value| format!("\u{FEFF}{message}");
    let served = serve(HttpOptions::new()).await;
    let init = post_text(&served.url, with_bom(&initialize()), None, None, None).await;
    assert_eq!(init.status(), 200);
    let session = init.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
    assert_eq!(messages(init).await[0]["result"]["protocolVersion"], json!("2025-11-25"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = post_text(&served.url, with_bom(&initialized), Some(&session), None, None).await;
    assert_eq!(accepted.status(), 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "note", "arguments": {"text": "once"}}});
    let answer = post_text(&served.url, with_bom(&call), Some(&session), None, None).await;
    assert_eq!(answer.status(), 200);
    let answer = messages(answer).await;
    let text = answer.last().unwrap()["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("http-") && text.ends_with(" once"), "{answer:?}");
    served.shut_down().await;

    let served = serve(HttpOptions::new().stateless()).await;
    let answer = post_text(&served.url, with_bom(&call), None, None, None).await;
    assert_eq!(answer.status(), 200);
    let answer = messages(answer).await;
    assert!(
        answer.last().unwrap()["result"]["content"][0]["text"].as_str().unwrap().ends_with(" once"),
        "{answer:?}"
    );
    served.shut_down().await;
}

/// A stateless server serves each request with a server of its own: no `Mcp-Session-Id`, a
/// session state per request, an `initialize` answered all the same, notifications `202`, and
/// responses refused (it sends no requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_server_serves_each_request_alone() {
    let served = serve(HttpOptions::new().stateless()).await;
    let note = |text: &str| json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "note", "arguments": {"text": text}}});
    let mut sessions = Vec::new();
    for text in ["a", "b"] {
        let response = post(&served.url, &note(text), None, None, None).await;
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("mcp-session-id").is_none());
        let answer = messages(response).await;
        let said = answer.last().unwrap()["result"]["content"][0]["text"].as_str().unwrap().to_owned();
        let (session, notes) = said.split_once(' ').unwrap();
        assert_eq!(notes, text, "a state was shared: {said}");
        sessions.push(session.to_owned());
    }
    assert_ne!(sessions[0], sessions[1]);
    let init = post(&served.url, &initialize(), None, None, None).await;
    assert_eq!(init.status(), 200);
    assert!(init.headers().get("mcp-session-id").is_none());
    assert_eq!(messages(init).await[0]["result"]["protocolVersion"], json!("2025-11-25"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&served.url, &initialized, None, None, None).await.status(), 202);
    let response =
        post(&served.url, &json!({"jsonrpc": "2.0", "id": 7, "result": {}}), None, None, None).await;
    assert_eq!(response.status(), 400);
    assert_eq!(messages(response).await[0]["error"]["code"], json!(-32600));
    served.shut_down().await;
}

/// GET opens a session's event stream (primed with a retry delay), DELETE ends the session; a
/// stateless server answers neither, and every other method gets `405` with the methods it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_delete_serve_sessions() {
    let served = serve(HttpOptions::new()).await;
    let http = reqwest::Client::new();
    let init = post(&served.url, &initialize(), None, None, None).await;
    let session = init.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
    let get = |session: Option<&str>, accept: &str| {
        let mut request = http.get(&served.url).header("accept", accept.to_owned());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session.to_owned());
        }
        request.send()
    };
    assert_eq!(get(Some(&session), "application/json").await.unwrap().status(), 406);
    assert_eq!(get(None, "text/event-stream").await.unwrap().status(), 400);
    assert_eq!(get(Some("no-such-session"), "text/event-stream").await.unwrap().status(), 404);
    let mut stream = get(Some(&session), "text/event-stream").await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let first = stream.chunk().await.unwrap().unwrap();
    assert_eq!(std::str::from_utf8(&first).unwrap(), "data: \nid: 0\nretry: 3000\n\n");
    drop(stream);

    let deleted = http.delete(&served.url).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    assert_eq!(get(Some(&session), "text/event-stream").await.unwrap().status(), 404);
    // Ended, or never opened: `404` for DELETE too.
    for named in [session.as_str(), "no-such-session"] {
        let again = http.delete(&served.url).header("mcp-session-id", named).send().await.unwrap();
        assert_eq!(again.status(), 404, "{named}");
    }
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(post(&served.url, &list, Some(&session), None, None).await.status(), 404);
    let put = http.put(&served.url).send().await.unwrap();
    assert_eq!((put.status().as_u16(), put.headers()["allow"].to_str().unwrap()), (405, "GET, POST, DELETE"));
    served.shut_down().await;

    let served = serve(HttpOptions::new().stateless()).await;
    let get = http.get(&served.url).send().await.unwrap();
    assert_eq!((get.status().as_u16(), get.headers()["allow"].to_str().unwrap()), (405, "POST"));
    let delete = http.delete(&served.url).header("mcp-session-id", "x").send().await.unwrap();
    assert_eq!((delete.status().as_u16(), delete.headers()["allow"].to_str().unwrap()), (405, "POST"));
    served.shut_down().await;
}

/// Gemini CLI adds `wait_for_previous` to every tool's schema and sends it with each call: it is
/// dropped for a tool that has no such parameter (which would otherwise refuse it as unknown),
/// and passed on to one that has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_wait_for_previous_is_dropped_unless_the_tool_declares_it() {
    crate::install_tls_provider();
    let closed = |properties: Value| json!({"type": "object", "properties": properties, "additionalProperties": false});
    let echo = |name: &str, schema: Value| {
        FnTool::new(
            ToolSpec::new(name, "Echoes its arguments.", schema),
            |_ctx: ToolContext, args: Value| async move { Ok(ToolOutput::text(args.to_string())) },
        )
    };
    let registry = Registry::builder()
        .tool(echo("plain", closed(json!({"text": {"type": "string"}}))))
        .tool(echo(
            "waits",
            closed(json!({"text": {"type": "string"}, "wait_for_previous": {"type": "boolean"}})),
        ))
        .build()
        .unwrap();
    let server = McpServer::builder(Dispatcher::builder(registry)).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let options = HttpOptions::new().shutdown_on(stop.clone());
    let task = tokio::spawn(async move { server.serve_http(listener, options).await.expect("serve_http") });
    let client = client(&url, None).await;
    let plain =
        client.call_tool(call("plain", json!({"text": "a", "wait_for_previous": true}))).await.unwrap();
    assert_eq!((plain.is_error, text(&plain)), (Some(false), r#"{"text":"a"}"#.to_owned()));
    let waits =
        client.call_tool(call("waits", json!({"text": "b", "wait_for_previous": true}))).await.unwrap();
    assert_eq!(text(&waits), r#"{"text":"b","wait_for_previous":true}"#);
    // Any other unknown property is still refused, with its name.
    let other = client.call_tool(call("plain", json!({"text": "c", "wait_for_it": true}))).await.unwrap();
    assert_eq!(other.is_error, Some(true));
    assert!(text(&other).contains("wait_for_it"), "{}", text(&other));
    client.cancel().await.unwrap();
    stop.cancel();
    task.await.unwrap();
}

/// Priming events (an event id and a retry delay with an empty `data`) exist from revision
/// 2025-11-25 on: a session of 2025-06-18 gets every `data` line as a JSON-RPC message, on its
/// answers and on its standing GET stream (Gemini CLI's client parses each one and drops the
/// server on an empty one), while a session of 2025-11-25 still gets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priming_events_only_from_2025_11_25() {
    let served = serve(HttpOptions::new()).await;
    let http = reqwest::Client::new();
    for (revision, primed) in [("2025-06-18", false), ("2025-03-26", false), ("2025-11-25", true)] {
        let mut init = initialize();
        init["params"]["protocolVersion"] = json!(revision);
        let answer = post(&served.url, &init, None, None, None).await;
        let session = answer.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
        assert_eq!(messages(answer).await[0]["result"]["protocolVersion"], json!(revision));
        // A message of the session, with the revision's header.
        let send = |message: Value| {
            http.post(&served.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", &session)
                .header("mcp-protocol-version", revision)
                .body(message.to_string())
                .send()
        };
        let sent = send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.unwrap();
        assert_eq!(sent.status(), 202);
        let list = send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await.unwrap();
        let body = list.text().await.unwrap();
        let data: Vec<&str> = body.lines().filter_map(|line| line.strip_prefix("data:")).collect();
        let empty = data.iter().filter(|data| data.trim().is_empty()).count();
        assert_eq!(empty > 0, primed, "{revision}: {body}");
        let answers: Vec<Value> =
            data.iter().filter_map(|data| serde_json::from_str(data.trim()).ok()).collect();
        assert_eq!(answers.len(), data.len() - empty, "{revision}: every other data line is JSON: {body}");
        assert!(answers[0]["result"]["tools"].is_array(), "{revision}: {body}");

        let mut stream = http
            .get(&served.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", revision)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        // A priming event comes at once; without one, the stream stays quiet.
        let wait = std::time::Duration::from_millis(if primed { 30_000 } else { 500 });
        let first = tokio::time::timeout(wait, stream.chunk()).await;
        match (primed, first) {
            (true, Ok(chunk)) => {
                let chunk = chunk.unwrap().unwrap();
                assert!(std::str::from_utf8(&chunk).unwrap().starts_with("data: \n"), "{chunk:?}");
            }
            (false, Err(_)) => {}
            (primed, first) => panic!("{revision}: primed {primed}, first event {first:?}"),
        }
    }
    served.shut_down().await;
}

/// Revision 2026-07-28 has no `initialize` (nor `ping`): `404` and `-32601` with a sentence, as
/// for every method the server does not serve. An `initialize` that only proposes that
/// revision, as a client of an earlier one may, still gets a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_on_revision_2026_07_28_is_method_not_found() {
    let served = serve(HttpOptions::new()).await;
    let http = reqwest::Client::new();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let mut init = initialize();
    init["params"]["protocolVersion"] = json!("2026-07-28");
    let send = |body: Value, method: &str, header: bool| {
        let mut request = http
            .post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-method", method)
            .body(body.to_string());
        if header {
            request = request.header("mcp-protocol-version", "2026-07-28");
        }
        request.send()
    };
    let mut with_meta = init.clone();
    with_meta["params"]["_meta"] = meta.clone();
    for (body, header) in [
        (init.clone(), true),
        (with_meta, true),
        (
            {
                let mut only_meta = init.clone();
                only_meta["params"]["_meta"] = meta.clone();
                only_meta
            },
            false,
        ),
    ] {
        let response = send(body, "initialize", header).await.unwrap();
        assert_eq!(response.status(), 404);
        let error = &messages(response).await[0];
        assert_eq!(
            (error["id"].clone(), error["error"]["code"].clone()),
            (json!(1), json!(-32601)),
            "{error}"
        );
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("`initialize` does not exist in protocol revision 2026-07-28"), "{message}");
    }
    // `ping` on that revision: the same status and code, and a sentence, not the method's name.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": meta}});
    let response = send(ping, "ping", true).await.unwrap();
    assert_eq!(response.status(), 404);
    let error = &messages(response).await[0];
    assert_eq!(error["error"]["code"], json!(-32601));
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Method not found: this server does not serve `ping`"),
        "{error}"
    );

    // A legacy `initialize` proposing the newer revision negotiates an older one.
    let response = post(&served.url, &init, None, None, None).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("mcp-session-id"));
    let result = &messages(response).await[0]["result"];
    assert_eq!(result["protocolVersion"], json!("2025-11-25"), "{result}");
    served.shut_down().await;
}

/// A request of revision 2026-07-28 is served only when its headers repeat its body (revision,
/// method, and the name of the tool it calls, plain or in Base64): otherwise `400` with `-32020`
/// and a sentence saying which header differs, and nothing runs. A revision the server does not
/// speak gets `-32022` with the ones it does; a response (that revision has no server requests)
/// `400`; a notification `202`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_revision_2026_07_28_repeat_their_body_in_their_headers() {
    let served = serve(HttpOptions::new()).await;
    let http = reqwest::Client::new();
    let meta = |revision: &str| {
        json!({"io.modelcontextprotocol/protocolVersion": revision, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "plain", "version": "1"}})
    };
    let call = |revision: &str| {
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
            "params": {"name": "note", "arguments": {"text": "modern"}, "_meta": meta(revision)}})
    };
    let send = |body: Value, headers: Vec<(&'static str, &'static str)>| {
        let mut request = http
            .post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.send()
    };
    let modern =
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "note")];
    for name in ["note", "=?base64?bm90ZQ==?="] {
        let mut headers = modern.clone();
        headers[2].1 = name;
        let response = send(call("2026-07-28"), headers).await.unwrap();
        assert_eq!(response.status(), 200, "{name}");
        let answer = messages(response).await;
        let text = answer.last().unwrap()["result"]["content"][0]["text"].as_str().unwrap().to_owned();
        assert!(text.ends_with("modern"), "{name}: {answer:?}");
    }

    // What a call leaves behind outlives its request: the next request sees the notes.
    let text = |answer: Vec<Value>| {
        answer.last().unwrap()["result"]["content"][0]["text"].as_str().unwrap().to_owned()
    };
    let mut second = call("2026-07-28");
    second["params"]["arguments"]["text"] = json!("again");
    let answer = messages(send(second, modern.clone()).await.unwrap()).await;
    assert!(text(answer).ends_with(" modern,modern,again"), "the state of the earlier requests is kept");

    type Headers = Vec<(&'static str, &'static str)>;
    let mismatches: [(Value, Headers, &str); 8] = [
        (
            call("2026-07-28"),
            vec![modern[0], modern[1], ("mcp-name", "other")],
            "the Mcp-Name header says `other`",
        ),
        (call("2026-07-28"), vec![modern[0], modern[1], ("mcp-name", "=?base64?!!?=")], "is not Base64"),
        (call("2026-07-28"), vec![modern[0], modern[1]], "the Mcp-Name header is missing"),
        (call("2026-07-28"), vec![modern[0], modern[2]], "the Mcp-Method header is missing"),
        (
            call("2026-07-28"),
            vec![modern[0], ("mcp-method", "Tools/Call"), modern[2]],
            "the Mcp-Method header says",
        ),
        (call("2026-07-28"), vec![modern[1], modern[2]], "the MCP-Protocol-Version header is missing"),
        (
            call("2026-07-28"),
            vec![("mcp-protocol-version", "2025-11-25"), modern[1], modern[2]],
            "the MCP-Protocol-Version header says `2025-11-25`",
        ),
        (
            call("2026-07-28"),
            vec![modern[0], modern[1], modern[2], ("mcp-name", "evil")],
            "the Mcp-Name header is sent 2 times",
        ),
    ];
    for (body, headers, says) in mismatches {
        let shown = format!("{headers:?}");
        let response = send(body, headers).await.unwrap();
        assert_eq!(response.status(), 400, "{shown}");
        let error = &messages(response).await[0];
        assert_eq!(
            (error["id"].clone(), error["error"]["code"].clone()),
            (json!(8), json!(-32020)),
            "{error}"
        );
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("Header mismatch: ") && message.contains(says), "{shown}: {message}");
    }
    assert_eq!(served.probe.calls.load(std::sync::atomic::Ordering::SeqCst), 3, "a refused call ran");

    let response =
        send(call("2027-01-01"), vec![("mcp-protocol-version", "2027-01-01"), modern[1], modern[2]])
            .await
            .unwrap();
    assert_eq!(response.status(), 400);
    let error = &messages(response).await[0];
    assert_eq!(error["error"]["code"], json!(-32022), "{error}");
    assert_eq!(error["error"]["data"]["requested"], json!("2027-01-01"), "{error}");
    assert!(
        error["error"]["data"]["supported"].as_array().unwrap().contains(&json!("2026-07-28")),
        "{error}"
    );

    let response = send(json!({"jsonrpc": "2.0", "id": 3, "result": {}}), vec![modern[0]]).await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(messages(response).await[0]["error"]["code"], json!(-32600));
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}});
    let response = send(cancelled, vec![modern[0], ("mcp-method", "notifications/cancelled")]).await.unwrap();
    assert_eq!(response.status(), 202);
    served.shut_down().await;
}

/// `-32601` errors that rmcp gives with only the method's name (`tasks/get` in a session, say)
/// are sentences.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn method_not_found_errors_are_sentences() {
    let served = serve(HttpOptions::new()).await;
    let init = post(&served.url, &initialize(), None, None, None).await;
    let session = init.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
    for method in ["tasks/get", "tasks/list", "prompts/get"] {
        let request =
            json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"taskId": "t", "name": "p"}});
        let response = post(&served.url, &request, Some(&session), None, None).await;
        let error = messages(response).await.into_iter().find(|m| m["id"] == json!(5)).unwrap();
        assert_eq!(error["error"]["code"], json!(-32601), "{method}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Method not found: ") && message.contains(&format!("`{method}`")),
            "{method}: {message}"
        );
    }
    served.shut_down().await;
}

/// The state that revision 2026-07-28's requests share ends as an idle session does: once no
/// request has used it for the session idle time limit. A request still answering keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_of_sessionless_requests_ends_when_idle() {
    let mut served = serve(HttpOptions::new().session_idle_timeout(Duration::from_millis(300))).await;
    let http = reqwest::Client::new();
    let request = |name: &'static str, arguments: Value| {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "plain", "version": "1"}});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta}});
        http.post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .body(body.to_string())
            .send()
    };
    let notes = |answer: Vec<Value>| {
        let text = answer.last().unwrap()["result"]["content"][0]["text"].as_str().unwrap().to_owned();
        text.split_once(' ').unwrap().1.to_owned()
    };
    assert_eq!(notes(messages(request("note", json!({"text": "a"})).await.unwrap()).await), "a");
    // A call that outlasts the idle limit keeps the state in use.
    let holding = tokio::spawn(request("hold", json!({"key": "long"})));
    assert_eq!(served.started.recv().await.as_deref(), Some("long"));
    tokio::time::sleep(Duration::from_millis(900)).await;
    served.probe.release("long").notify_one();
    let held = messages(holding.await.unwrap().unwrap()).await;
    assert!(format!("{held:?}").contains("long released"), "{held:?}");
    assert_eq!(notes(messages(request("note", json!({"text": "b"})).await.unwrap()).await), "a,b");
    // Idle past the limit: ended, and the next request starts afresh.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(notes(messages(request("note", json!({"text": "c"})).await.unwrap()).await), "c");
    served.shut_down().await;
}
