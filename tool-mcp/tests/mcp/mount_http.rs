//! Mounting an MCP server over Streamable HTTP: our own `McpServer::serve_http` behind a bearer
//! token, its tools called through a second registry and dispatcher.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tool_runtime::mcp_client::{McpMount, MountError, ServerConfig};
use tool_runtime::mcp_server::{HttpOptions, McpServer};
use tool_runtime::{
    CancellationToken, Dispatcher, Progress, Registry, ToolCall, ToolContext, ToolError, ToolOutput,
    ToolResult, ToolSpec,
    events::{EventFn, ToolEvent},
    spec::FnTool,
};

const TOKEN: &str = "s3cret-token";

/// What the served tools saw: how many calls reached them, and how each `hold` call ended.
#[derive(Default)]
struct Probe {
    calls: AtomicUsize,
    held: Mutex<Option<mpsc::UnboundedSender<&'static str>>>,
    started: Notify,
    /// Wakes when the mounting side's events show a progress update: the served tool waits for it
    /// before its next update, since rmcp hands a notification and the call's response to the
    /// client in separate tasks, and an update still in flight at the response would be lost.
    progress_seen: Notify,
}

fn served_registry(probe: &Arc<Probe>) -> Registry {
    let seen = probe.clone();
    let greet = FnTool::new(
        ToolSpec::new(
            "greet",
            "Greets someone, reporting progress on the way.",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "times": {"type": "integer", "minimum": 1}},
                "required": ["name", "times"]
            }),
        ),
        move |ctx: ToolContext, args: Value| {
            seen.calls.fetch_add(1, Ordering::SeqCst);
            let seen = seen.clone();
            async move {
                let times = args["times"].as_u64().unwrap_or(1);
                for i in 1..=times {
                    ctx.progress(Progress {
                        message: Some(format!("greeting {i}")),
                        progress: Some(i as f64),
                        total: Some(times as f64),
                    });
                    let delivered = seen.progress_seen.notified();
                    if tokio::time::timeout(std::time::Duration::from_secs(10), delivered).await.is_err() {
                        return Err(ToolError::execution(format!(
                            "progress {i} never reached the mounting side"
                        )));
                    }
                }
                let name = args["name"].as_str().unwrap_or_default();
                Ok(ToolOutput::text(vec![format!("hello {name}"); times as usize].join(", ")))
            }
        },
    );
    let probe = probe.clone();
    let hold = FnTool::new(
        ToolSpec::new("hold", "Runs until cancelled.", json!({"type": "object"})),
        move |ctx: ToolContext, _args: Value| {
            let probe = probe.clone();
            async move {
                probe.started.notify_one();
                ctx.cancellation_token().cancelled().await;
                if let Some(held) = probe.held.lock().unwrap().as_ref() {
                    let _ = held.send("cancelled");
                }
                Err::<ToolOutput, _>(ToolError::cancelled("hold was cancelled"))
            }
        },
    );
    Registry::builder().tool(greet).tool(hold).build().unwrap()
}

struct Served {
    url: String,
    probe: Arc<Probe>,
    held: mpsc::UnboundedReceiver<&'static str>,
    stop: StopOnDrop,
    task: tokio::task::JoinHandle<()>,
}

/// Stops the server when the test ends.
struct StopOnDrop(CancellationToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

async fn serve() -> Served {
    serve_on(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), Arc::default())
}

/// Serves on `listener`, reporting to `probe` (which may be another server's before it).
fn serve_on(listener: tokio::net::TcpListener, probe: Arc<Probe>) -> Served {
    let (tx, held) = mpsc::unbounded_channel();
    *probe.held.lock().unwrap() = Some(tx);
    let server = McpServer::new(Dispatcher::builder(served_registry(&probe))).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let options = HttpOptions::new().bearer_token(TOKEN).shutdown_on(stop.clone());
    let task = tokio::spawn(async move { server.serve_http(listener, options).await.expect("serve_http") });
    Served { url, probe, held, stop: StopOnDrop(stop), task }
}

type Events = Arc<Mutex<Vec<ToolEvent>>>;

async fn mounted(served: &Served) -> (McpMount, Dispatcher, Events) {
    let config =
        ServerConfig::http("web", served.url.clone()).header("Authorization", format!("Bearer {TOKEN}"));
    let mount = McpMount::connect(config).await.expect("mount over HTTP");
    let registry = Registry::builder().tools(mount.tools()).build().expect("registry");
    let events: Events = Arc::default();
    let seen = events.clone();
    let probe = served.probe.clone();
    let dispatcher = Dispatcher::builder(registry)
        .events(EventFn(move |event| {
            if matches!(event, ToolEvent::Progress { .. }) {
                probe.progress_seen.notify_one();
            }
            seen.lock().unwrap().push(event);
        }))
        .build();
    (mount, dispatcher, events)
}

async fn call(
    dispatcher: &Dispatcher,
    name: &str,
    arguments: Value,
    cancel: CancellationToken,
) -> ToolResult {
    dispatcher.run(ToolCall::new("c1", name, arguments.to_string()), cancel).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_mounted_called_and_validated_locally() {
    let served = serve().await;
    let (mount, dispatcher, events) = mounted(&served).await;
    let names: Vec<String> = mount.tools().iter().map(|t| t.spec().name.clone()).collect();
    assert_eq!(names, ["web__greet", "web__hold"]);
    assert_eq!(
        dispatcher.registry().get("web__greet").unwrap().spec().description,
        "Greets someone, reporting progress on the way."
    );

    // Every request carries the token (the server refuses any without it), not only `initialize`.
    let greeted =
        call(&dispatcher, "web__greet", json!({"name": "ada", "times": 2}), CancellationToken::new()).await;
    assert!(!greeted.output.is_error, "{}", greeted.output.text_content());
    assert_eq!(greeted.output.text_content(), "hello ada, hello ada");
    assert_eq!(greeted.output.metadata["mcp_server"], "web");
    assert_eq!(served.probe.calls.load(Ordering::SeqCst), 1);
    let progress: Vec<(Option<String>, Option<f64>)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            ToolEvent::Progress { update, tool, .. } if tool == "web__greet" => {
                Some((update.message.clone(), update.progress))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        progress,
        [(Some("greeting 1".to_owned()), Some(1.0)), (Some("greeting 2".to_owned()), Some(2.0))]
    );

    let invalid =
        call(&dispatcher, "web__greet", json!({"name": "ada", "times": 0}), CancellationToken::new()).await;
    assert!(invalid.output.is_error);
    let message = invalid.output.text_content();
    assert!(message.contains("times") && message.contains('1'), "our usual validation text: {message}");
    assert_eq!(served.probe.calls.load(Ordering::SeqCst), 1, "an invalid call never reaches the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_cancels_it_on_the_server() {
    let mut served = serve().await;
    let (_mount, dispatcher, _) = mounted(&served).await;
    let cancel = CancellationToken::new();
    let started = served.probe.clone();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        started.started.notified().await;
        canceller.cancel();
    });
    let result = call(&dispatcher, "web__hold", json!({}), cancel).await;
    assert!(result.output.is_error);
    assert_eq!(served.held.recv().await, Some("cancelled"), "the server's call saw the cancellation");
}

/// The message of a mount that had to fail (`McpMount` is not `Debug`, so no `expect_err`).
fn refused(mounted: Result<McpMount, MountError>, why: &str) -> MountError {
    match mounted {
        Ok(mount) => panic!("{why}, yet `{}` was mounted", mount.name()),
        Err(error) => error,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_a_mount_error_naming_the_server() {
    let served = serve().await;
    let config = ServerConfig::http("web", served.url.clone()).header("Authorization", "Bearer wrong");
    let error = refused(McpMount::connect(config).await, "the server refuses the token");
    let message = error.to_string();
    assert!(message.starts_with("MCP server `web`: "), "{message}");
    assert!(message.contains(&served.url) && message.contains("headers"), "{message}");
    assert_eq!(served.probe.calls.load(Ordering::SeqCst), 0);

    #[cfg(not(feature = "https"))]
    {
        let tls = ServerConfig::http("web", "https://127.0.0.1:1/mcp");
        let message = refused(McpMount::connect(tls).await, "no TLS in this build").to_string();
        assert!(
            message.starts_with(
                "MCP server `web`: `https://127.0.0.1:1/mcp` is an `https://` URL, and this build has no TLS; build tool-runtime with its `mcp-https` feature"
            ),
            "{message}"
        );
    }
    let other = ServerConfig::http("web", "ftp://127.0.0.1:1/mcp");
    let message = refused(McpMount::connect(other).await, "not an HTTP URL").to_string();
    assert_eq!(
        message,
        "MCP server `web`: `ftp://127.0.0.1:1/mcp` is not an `http://` or `https://` URL; correct `url`"
    );

    let missing = ServerConfig::http("web", served.url.clone());
    let message = refused(McpMount::connect(missing).await, "no token").to_string();
    assert!(message.starts_with("MCP server `web`: "), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_went_away_is_reached_again_at_its_address() {
    let first = serve().await;
    let (_mount, dispatcher, _) = mounted(&first).await;
    let greet = json!({"name": "ada", "times": 1});
    assert_eq!(
        call(&dispatcher, "web__greet", greet.clone(), CancellationToken::new()).await.output.text_content(),
        "hello ada"
    );
    let address = first.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    first.stop.0.cancel();
    first.task.await.unwrap();

    // The same address, a new server that knows nothing of the old session.
    let second = serve_on(tokio::net::TcpListener::bind(&address).await.unwrap(), first.probe.clone());
    let mut answers = Vec::new();
    for _ in 0..2 {
        let result = call(&dispatcher, "web__greet", greet.clone(), CancellationToken::new()).await;
        let text = result.output.text_content();
        answers.push(text.clone());
        if !result.output.is_error {
            break;
        }
        assert!(text.contains("MCP server `web`") && text.contains("retry"), "{text}");
    }
    assert_eq!(answers.last().map(String::as_str), Some("hello ada"), "{answers:?}");
    assert_eq!(second.probe.calls.load(Ordering::SeqCst), 2, "one call to each server");
}

/// A tool counting its calls in the session state: what tells one session from another.
fn counting_registry() -> Registry {
    let count = FnTool::new(
        ToolSpec::new("count", "Counts its calls in this session.", json!({"type": "object"})),
        |ctx: ToolContext, _args: Value| async move {
            let calls = ctx.session().get_or_insert_with(AtomicUsize::default);
            Ok(ToolOutput::text((calls.fetch_add(1, Ordering::SeqCst) + 1).to_string()))
        },
    );
    Registry::builder().tool(count).build().unwrap()
}

/// Serves `registry` over HTTP on a free port with `options`: the endpoint, and what stops it.
async fn serve_registry(registry: Registry, options: HttpOptions) -> (String, StopOnDrop) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let server = McpServer::new(Dispatcher::builder(registry)).unwrap();
    tokio::spawn(server.serve_http(listener, options.shutdown_on(stop.clone())));
    (url, StopOnDrop(stop))
}

/// The answers of three `count` calls through a mount of a server with `options`, and whether
/// the server named a session in its answer to `initialize`.
async fn three_counts(options: HttpOptions) -> (Vec<String>, bool) {
    crate::install_tls_provider();
    let (url, _stop) = serve_registry(counting_registry(), options).await;

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    });
    let response = reqwest::Client::new()
        .post(&url)
        .header("Accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .expect("initialize");
    assert!(response.status().is_success(), "initialize: {}", response.status());
    let names_a_session = response.headers().contains_key("mcp-session-id");

    let mount = McpMount::connect(ServerConfig::http("counter", url)).await.expect("mount");
    let dispatcher = Dispatcher::builder(Registry::builder().tools(mount.tools()).build().unwrap()).build();
    let mut counts = Vec::new();
    // Arguments that differ, for the repeat guards on both sides.
    for i in 0..3 {
        let result =
            call(&dispatcher, "counter__count", json!({ "call": i }), CancellationToken::new()).await;
        assert!(!result.output.is_error, "{}", result.output.text_content());
        counts.push(result.output.text_content());
    }
    (counts, names_a_session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_server_keeps_no_session_between_requests() {
    let (counts, names_a_session) = three_counts(HttpOptions::new()).await;
    assert_eq!(counts, ["1", "2", "3"], "one session: its state lasts from call to call");
    assert!(names_a_session, "a stateful server names the session");

    let (counts, names_a_session) = three_counts(HttpOptions::new().stateless()).await;
    assert_eq!(counts, ["1", "1", "1"], "stateless: every request has a state of its own");
    assert!(!names_a_session, "a stateless server names no session");
}

/// What mounting costs over HTTP: a call of one `echo` tool served by `McpServer::serve_http`,
/// made with rmcp's client directly and through a mount (`Registry::call`, and the dispatcher),
/// in the same run. Prints the figures for BENCHMARKS.md:
/// `cargo test --release -p tool-mcp --features http --test mcp -- --ignored --nocapture mount_http::mounted_call_overhead`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check; run it by name"]
async fn mounted_call_overhead_over_http() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::time::Instant;

    const CALLS: u32 = 2000;
    const ROUNDS: u32 = 5;
    crate::install_tls_provider();
    let echo = FnTool::new(
        ToolSpec::new(
            "echo",
            "Says the text back.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        |_ctx: ToolContext, args: Value| async move {
            Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default()))
        },
    );
    let served = Registry::builder().tool(echo).build().unwrap();
    let options = HttpOptions::new().bearer_token(TOKEN);
    let (url, _stop) = serve_registry(served, options).await;

    let config = StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(TOKEN.to_owned());
    let direct = ().serve(StreamableHttpClientTransport::from_config(config)).await.expect("initialize");
    let mount =
        McpMount::connect(ServerConfig::http("web", url).header("Authorization", format!("Bearer {TOKEN}")))
            .await
            .expect("mount over HTTP");
    let registry = Arc::new(Registry::builder().tools(mount.tools()).build().unwrap());
    // Identical calls in a row are the point here, not a loop to stop.
    let dispatcher = Dispatcher::builder(registry.clone())
        .repeat_guard(tool_runtime::dispatch::RepeatGuard::DISABLED)
        .build();
    let Value::Object(arguments) = json!({"text": "hello"}) else { unreachable!() };
    let text = json!({"text": "hello"}).to_string();

    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("rmcp client, direct", vec![]),
        ("mounted, Registry::call", vec![]),
        ("mounted, Dispatcher::run", vec![]),
    ];
    let per_call = |start: Instant| start.elapsed().as_secs_f64() * 1e6 / f64::from(CALLS / ROUNDS);
    // Interleaved rounds, so that a busy moment of the machine hits every row alike.
    for _round in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..CALLS / ROUNDS {
            let params = CallToolRequestParams::new("echo").with_arguments(arguments.clone());
            let result = direct.call_tool(params).await.unwrap();
            assert_eq!(result.is_error, Some(false));
        }
        rows[0].1.push(per_call(start));

        let start = Instant::now();
        for _ in 0..CALLS / ROUNDS {
            let ctx = ToolContext::builder("web__echo").build();
            let output = registry.call("web__echo", text.as_str(), ctx).await.unwrap();
            assert_eq!(output.text_content(), "hello");
        }
        rows[1].1.push(per_call(start));

        let start = Instant::now();
        for _ in 0..CALLS / ROUNDS {
            let result =
                call(&dispatcher, "web__echo", json!({"text": "hello"}), CancellationToken::new()).await;
            assert_eq!(result.output.text_content(), "hello");
        }
        rows[2].1.push(per_call(start));
    }
    println!("{CALLS} sequential calls of `echo` served by McpServer::serve_http on 127.0.0.1, per call:");
    println!("| path | median of {ROUNDS} rounds | fastest round |");
    println!("| --- | ---: | ---: |");
    for (name, mut times) in rows {
        times.sort_by(f64::total_cmp);
        println!("| {name} | {:.1} µs | {:.1} µs |", times[times.len() / 2], times[0]);
    }
    drop(mount);
}
