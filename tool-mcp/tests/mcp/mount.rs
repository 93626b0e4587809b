//! Mounting an MCP server: rmcp's own server (`tests/fixture/mcp_fixture_server.rs`) started as
//! a child process, its tools called through our registry and dispatcher.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::mcp_client::{McpConfig, McpMount, ServerConfig, connect_all};
use tool_runtime::{
    CallOptions, CancellationToken, Content, Dispatcher, Registry, ToolCall, ToolResult,
    events::{EventFn, ToolEvent},
};

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

fn fixture(name: &str) -> ServerConfig {
    ServerConfig::stdio(name, FIXTURE)
}

type Events = Arc<Mutex<Vec<ToolEvent>>>;

async fn mounted(config: ServerConfig) -> (McpMount, Dispatcher, Events) {
    let mount = McpMount::connect(config).await.expect("mount the fixture");
    let registry = Registry::builder().tools(mount.tools()).build().expect("registry");
    let events: Events = Arc::default();
    let seen = events.clone();
    let dispatcher =
        Dispatcher::builder(registry).events(EventFn(move |event| seen.lock().unwrap().push(event))).build();
    (mount, dispatcher, events)
}

async fn call(dispatcher: &Dispatcher, name: &str, arguments: Value) -> ToolResult {
    dispatcher.run(ToolCall::new("c1", name, arguments.to_string()), CancellationToken::new()).await
}

fn temp_marker(test: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-mount-{test}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// Waits (at most 10 s) until `path` exists: the fixture writes it when it sees a cancellation.
async fn appears(path: &std::path::Path) -> bool {
    for _ in 0..200 {
        if path.exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A server that speaks only revision 2026-07-28 refuses `initialize`; it is started again and
/// reached with `server/discover`, and its tools are listed (every page) and called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_initialize_handshake_is_mounted_by_discovery() {
    let (mount, dispatcher, _) = mounted(fixture("new").env("FIXTURE_ONLY_2026_07_28", "1")).await;
    assert_eq!(mount.tools().len(), 10, "every page, `ask_round` on the last");
    let result = call(&dispatcher, "new__echo", json!({"text": "hi"})).await;
    assert!(!result.output.is_error, "{}", result.output.text_content());
    assert_eq!(result.output.text_content(), "hi");
}

/// A server on 2026-07-28 asks in rounds (an `input_required` result): the mount answers the
/// question as it answers a server's request (the call's user) and sends the call again with
/// the answer and the server's state. Without anybody to ask, the call says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_in_rounds_is_answered_and_the_call_sent_again() {
    let config = fixture("new").env("FIXTURE_ONLY_2026_07_28", "1");
    let mount = McpMount::connect(config).await.expect("mount");
    let registry = Arc::new(Registry::builder().tools(mount.tools()).build().unwrap());
    let asked: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
    let asker =
        tool_runtime::context::AskerDependency(Arc::new(crate::mount_resources::Teal(Arc::clone(&asked))));
    let dispatcher = Dispatcher::builder(registry.clone()).dependency(asker).build();
    let result = call(&dispatcher, "new__ask_round", json!({})).await;
    assert_eq!(result.output.text_content(), "accept: \"teal\"", "{result:?}");
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once");
    // A server asking more at once than a mounted server may: nobody is asked.
    let result = call(&dispatcher, "new__ask_round", json!({"questions": 9})).await;
    assert!(result.output.is_error, "{result:?}");
    assert!(
        result.output.text_content().starts_with(
            "The MCP server `new` asked 9 questions at once to run `ask_round`, more than the 8"
        ),
        "{}",
        result.output.text_content()
    );
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1, "nobody was asked");
    let nobody = Dispatcher::new(registry);
    let result = call(&nobody, "new__ask_round", json!({})).await;
    assert!(result.output.is_error, "{result:?}");
    assert!(
        result.output.text_content().starts_with("The MCP server `new` asked for input to run `ask_round`, which could not be given: Nobody can answer"),
        "{}",
        result.output.text_content()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_tools_is_mounted_with_its_spec() {
    let (mount, dispatcher, _) = mounted(fixture("fx")).await;
    let names: Vec<String> = mount.tools().iter().map(|t| t.spec().name.clone()).collect();
    assert_eq!(
        names,
        [
            "fx__echo",
            "fx__every_content",
            "fx__fail",
            "fx__slow",
            "fx__hang",
            "fx__chatty",
            "fx__crash",
            "fx__pid",
            "fx__add_tool"
        ],
        "three pages of three"
    );
    let registry = dispatcher.registry();
    let echo = registry.get("fx__echo").unwrap().spec();
    assert_eq!(echo.description, "Echo the text.");
    assert!(echo.parallel && echo.annotations.read_only, "readOnlyHint makes a tool parallel-safe");
    assert_eq!(echo.input_schema["properties"]["count"], json!({"type": "integer", "minimum": 1}));
    assert_eq!(echo.tags, ["mcp", "mcp:fx"]);
    let fail = registry.get("fx__fail").unwrap().spec();
    assert!(!fail.parallel);
    let every = registry.get("fx__every_content").unwrap().spec();
    assert_eq!(every.annotations.title.as_deref(), Some("Every content"));
    assert_eq!(every.output_schema.as_ref().unwrap()["properties"]["n"]["type"], "integer");
    // Our MCP definitions of a mounted tool carry the server's schemas and hints.
    let definition = tool_runtime::providers::Provider::Mcp.definition(echo, &Default::default()).unwrap();
    assert_eq!(definition["annotations"], json!({"readOnlyHint": true}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_validated_locally_then_answered_by_the_server() {
    let (_mount, dispatcher, _) = mounted(fixture("fx")).await;
    let echo = call(&dispatcher, "fx__echo", json!({"text": "ab", "count": "2"})).await;
    assert!(!echo.output.is_error, "{:?}", echo.output);
    assert_eq!(echo.output.text_content(), "abab", "the string was coerced to the schema's integer");
    assert_eq!(echo.output.metadata["mcp_server"], "fx");

    let invalid = call(&dispatcher, "fx__echo", json!({"text": "ab", "count": 0})).await;
    assert!(invalid.output.is_error);
    let message = invalid.output.text_content();
    assert!(message.contains("count") && message.contains("1"), "our usual validation text: {message}");

    let failed = call(&dispatcher, "fx__fail", json!({})).await;
    assert!(failed.output.is_error);
    assert_eq!(failed.output.text_content(), "it went wrong");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_content_type_comes_back_without_losing_an_item() {
    let (_mount, dispatcher, _) = mounted(fixture("fx")).await;
    let result = call(&dispatcher, "fx__every_content", json!({})).await;
    let output = &result.output;
    assert!(!output.is_error);
    assert_eq!(
        output.content,
        vec![
            Content::text("plain text"),
            Content::image("image/png", "iVBORw0KGgo="),
            Content::text("[audio/wav audio of 12 bytes: audio cannot be shown here]"),
            Content::text("[resource: file:///notes.txt]\nembedded text"),
            Content::image("image/png", "iVBORw0KGgo="),
            Content::text("[resource: file:///data.bin, application/octet-stream data of 4 bytes]"),
            Content::text("[resource link: file:///big.log (big.log)]"),
        ]
    );
    assert_eq!(output.structured, Some(json!({"n": 7})));
    let original = output.metadata["mcp_content"].as_array().unwrap();
    assert_eq!(original.len(), 7);
    assert_eq!(original[2]["type"], "audio");
    assert_eq!(original[5]["resource"]["blob"], "AAECAw==");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_becomes_our_progress_events_and_keeps_a_slow_call_alive() {
    // 8 steps 250 ms apart take 2 s, twice the time limit; each notification resets it.
    let (_mount, dispatcher, events) = mounted(fixture("fx").timeout(Duration::from_secs(1))).await;
    let result = call(&dispatcher, "fx__slow", json!({"steps": 8, "delay_ms": 250})).await;
    assert!(!result.output.is_error, "{}", result.output.text_content());
    assert_eq!(result.output.text_content(), "done after 8 steps");
    let progress: Vec<(Option<String>, Option<f64>, Option<f64>)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            ToolEvent::Progress { update, tool, .. } if tool == "fx__slow" => {
                Some((update.message.clone(), update.progress, update.total))
            }
            _ => None,
        })
        .collect();
    let expected: Vec<_> =
        (1..=8).map(|i| (Some(format!("step {i}")), Some(f64::from(i)), Some(8.0))).collect();
    assert_eq!(progress, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out_and_is_told_to_cancel() {
    let (_mount, dispatcher, _) = mounted(fixture("fx").timeout(Duration::from_millis(300))).await;
    let marker = temp_marker("silent");
    let result = call(&dispatcher, "fx__hang", json!({"marker": marker})).await;
    assert!(result.output.is_error);
    assert_eq!(
        result.output.text_content(),
        "The MCP server `fx` did not answer the call of `hang` for 300ms (no result and no progress), so the call was cancelled. Try again with a smaller request, or use another tool."
    );
    assert!(appears(&marker).await, "the server received notifications/cancelled");
    let _ = std::fs::remove_file(marker);
}

/// A server that sends its last progress right before its result: rmcp's client handles each
/// notification in a task of its own, so that progress could reach the call after its result
/// and be lost; the call now waits for what arrived before its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_progress_sent_just_before_the_result_is_not_lost() {
    let (_mount, dispatcher, events) = mounted(fixture("fx")).await;
    for round in 0..40 {
        events.lock().unwrap().clear();
        // Two lengths in turn: the repeat guard stops a call made three times alike.
        let steps = 4 + round % 2;
        let result = call(&dispatcher, "fx__slow", json!({"steps": steps, "delay_ms": 0})).await;
        assert_eq!(result.output.text_content(), format!("done after {steps} steps"));
        let seen: Vec<Option<f64>> = events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                ToolEvent::Progress { update, .. } => Some(update.progress),
                _ => None,
            })
            .collect();
        let expected: Vec<Option<f64>> = (1..=steps).map(|step| Some(f64::from(step))).collect();
        assert_eq!(seen, expected, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_does_not_extend_a_call_past_its_total_limit() {
    let config = fixture("fx").timeout(Duration::from_secs(5)).total_timeout(Duration::from_millis(700));
    let (_mount, dispatcher, _) = mounted(config).await;
    let result = call(&dispatcher, "fx__chatty", json!({"delay_ms": 50})).await;
    assert!(result.output.is_error);
    assert_eq!(
        result.output.text_content(),
        "The MCP server `fx` did not finish `chatty` within its limit of 700ms, so the call was cancelled. Try again with a smaller request, or use another tool."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_sends_notifications_cancelled() {
    let (_mount, dispatcher, events) = mounted(fixture("fx")).await;
    let marker = temp_marker("cancel");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watched = events.clone();
    tokio::spawn(async move {
        // Cancel once the call is running on the server.
        loop {
            let started = watched.lock().unwrap().iter().any(|e| matches!(e, ToolEvent::Started { .. }));
            if started {
                tokio::time::sleep(Duration::from_millis(200)).await;
                trigger.cancel();
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let call = ToolCall::new("c1", "fx__hang", json!({"marker": marker}).to_string());
    let result = dispatcher.run_with(call, CallOptions::default(), cancel).await;
    assert!(result.output.is_error);
    assert!(appears(&marker).await, "the server received notifications/cancelled");
    let _ = std::fs::remove_file(marker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_an_error_naming_the_server_and_the_next_call_restarts_it() {
    let (_mount, dispatcher, events) = mounted(fixture("fx")).await;
    let before = call(&dispatcher, "fx__pid", json!({})).await.output.text_content();
    let crashed = call(&dispatcher, "fx__crash", json!({})).await;
    assert!(crashed.output.is_error);
    assert_eq!(
        crashed.output.text_content(),
        "The MCP server `fx` stopped while running `crash` (its process exited or the connection closed), so the call's effect is unknown. The server is started again on the next call: retry if repeating the call is safe."
    );
    let detail = events.lock().unwrap().iter().rev().find_map(|e| match e {
        ToolEvent::Finished { detail, .. } => detail.clone(),
        _ => None,
    });
    assert!(
        detail.as_deref().is_some_and(|d| d.contains("fixture: crashing on purpose")),
        "the operator sees the server's last words: {detail:?}"
    );
    let after = call(&dispatcher, "fx__pid", json!({})).await;
    assert!(!after.output.is_error, "{}", after.output.text_content());
    assert_ne!(after.output.text_content(), before, "a new process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_be_started_is_a_mount_error_then_a_call_error() {
    let error = McpMount::connect(ServerConfig::stdio("gone", "/nonexistent/mcp-server")).await.unwrap_err();
    assert!(
        error.to_string().starts_with("MCP server `gone`: cannot start `/nonexistent/mcp-server`: "),
        "{error}"
    );
    assert!(error.to_string().ends_with("; check `command` in the configuration"), "{error}");

    // Starts once; every restart after a crash fails.
    let marker = temp_marker("once");
    let script = format!(
        "if [ -e '{0}' ]; then echo 'no second start' >&2; exit 1; fi; : > '{0}'; exec '{FIXTURE}'",
        marker.display()
    );
    let (_mount, dispatcher, _) = mounted(ServerConfig::stdio("once", "/bin/sh").args(["-c", &script])).await;
    let crashed = call(&dispatcher, "once__crash", json!({})).await;
    assert!(crashed.output.text_content().starts_with("The MCP server `once` stopped while running `crash`"));
    let after = call(&dispatcher, "once__pid", json!({})).await;
    assert!(after.output.is_error);
    assert_eq!(
        after.output.text_content(),
        "The MCP server `once` is not running and could not be started again (3 attempts). Its tools cannot be used now; go on without them and tell the user the server is down."
    );
    let _ = std::fs::remove_file(marker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_mounted_tools() {
    let (mount, dispatcher, _) = mounted(fixture("fx")).await;
    let mut changes = mount.changes();
    assert_eq!(mount.tools().len(), 9);
    let added = call(&dispatcher, "fx__add_tool", json!({})).await;
    assert_eq!(added.output.text_content(), "added");
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("a refresh within 10 s")
        .unwrap();
    let tools = mount.tools();
    assert_eq!(tools.len(), 10);
    assert_eq!(tools[9].spec().name, "fx__extra");
    // An application rebuilds its registry from the new list.
    let registry = Registry::builder().tools(tools).build().unwrap();
    let extra =
        Dispatcher::new(registry).run(ToolCall::new("c2", "fx__extra", "{}"), CancellationToken::new()).await;
    assert_eq!(extra.output.text_content(), "extra");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_mount_side_by_side_and_a_clash_names_both() {
    let text = json!({"mcpServers": {
        "one": {"command": FIXTURE},
        "two": {"command": FIXTURE, "toolPrefix": "two_"}
    }})
    .to_string();
    let mounts = connect_all(&McpConfig::parse(&text).unwrap()).await.unwrap();
    let names: Vec<String> = mounts.iter().flat_map(|m| m.tools()).map(|t| t.spec().name.clone()).collect();
    assert!(names.contains(&"one__echo".to_owned()) && names.contains(&"two_echo".to_owned()), "{names:?}");

    let clash = json!({"mcpServers": {
        "one": {"command": FIXTURE, "toolPrefix": ""},
        "two": {"command": FIXTURE, "toolPrefix": ""}
    }})
    .to_string();
    let error = connect_all(&McpConfig::parse(&clash).unwrap()).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `two`: its tool `echo` has the name of a tool of the server `one`; give one of them a `toolPrefix`"
    );

    // A clash with a tool of the application is the registry's usual duplicate-name error.
    let bare = McpMount::connect(fixture("x").naming(tool_runtime::mcp_client::Naming::Bare)).await.unwrap();
    let own = tool_runtime::spec::FnTool::new(
        tool_runtime::ToolSpec::new("echo", "Ours.", tool_runtime::schema::empty_args_schema()),
        |_, _| async { Ok(tool_runtime::ToolOutput::text("ours")) },
    );
    let duplicate = Registry::builder().tool(own).tools(bare.tools()).build().unwrap_err();
    assert!(
        matches!(duplicate, tool_runtime::RegistryError::DuplicateName { ref name, .. } if name == "echo")
    );
}

/// A tool whose schema some provider cannot take is still mounted (and served over MCP as it
/// was given); which providers cannot take it is said where their definitions are made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_that_some_provider_cannot_take_is_still_mounted() {
    let mount = McpMount::connect(fixture("odd").env("FIXTURE_BAD_SCHEMA", "1")).await.unwrap();
    assert_eq!(mount.skipped(), Vec::<String>::new());
    let registry = Registry::builder().tools(mount.tools()).build().unwrap();
    let bad = registry.get("odd__bad").expect("mounted").spec();
    let mcp = tool_runtime::providers::Provider::Mcp.definition(bad, &Default::default()).unwrap();
    assert_eq!(mcp["inputSchema"]["properties"]["options"], json!({"allOf": [true]}));
    let refused = tool_runtime::providers::Provider::ALL
        .iter()
        .filter(|provider| provider.definition(bad, &Default::default()).is_err())
        .count();
    assert!(refused > 0, "some provider cannot take it");
    let dispatcher = Dispatcher::builder(registry).build();
    let echoed = call(&dispatcher, "odd__echo", json!({"text": "still here"})).await;
    assert!(!echoed.output.is_error, "{}", echoed.output.text_content());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_mount_and_its_tools_stops_the_server() {
    let (mount, dispatcher, _) = mounted(fixture("fx")).await;
    let pid = call(&dispatcher, "fx__pid", json!({})).await.output.text_content();
    let stat = PathBuf::from(format!("/proc/{pid}/stat"));
    assert!(stat.exists(), "the server runs as {pid}");
    drop(dispatcher);
    drop(mount);
    let mut stopped = false;
    for _ in 0..200 {
        // Gone, or a zombie nobody waits for any more.
        match std::fs::read_to_string(&stat) {
            Err(_) => stopped = true,
            Ok(text) => {
                stopped = text.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'))
            }
        }
        if stopped {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(stopped, "the server process {pid} still runs");
}

/// The cost of mounting: the same server's `echo` called directly with rmcp's client and as a
/// mounted tool (through `Registry::call`, and through the dispatcher), in the same run. Prints
/// the figures for BENCHMARKS.md:
/// `cargo test --release -p tool-mcp --test mcp -- --ignored --nocapture mount::mounted_call_overhead`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check; run it by name"]
async fn mounted_call_overhead() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use std::time::Instant;

    const CALLS: u32 = 2000;
    let Value::Object(arguments) = json!({"text": "hello"}) else { unreachable!() };
    let direct =
        ().serve(TokioChildProcess::new(tokio::process::Command::new(FIXTURE)).unwrap()).await.unwrap();
    let (mount, dispatcher, _) = mounted(fixture("fx")).await;
    let registry = dispatcher.registry().clone();
    // Identical calls in a row are the point here, not a loop to stop.
    let dispatcher = Dispatcher::builder(registry.clone())
        .repeat_guard(tool_runtime::dispatch::RepeatGuard::DISABLED)
        .build();
    let text = json!({"text": "hello"}).to_string();

    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("rmcp client, direct", vec![]),
        ("mounted, Registry::call", vec![]),
        ("mounted, Dispatcher::run", vec![]),
    ];
    // Interleaved rounds, so that a busy moment of the machine hits every row alike.
    for _round in 0..5 {
        let start = Instant::now();
        for _ in 0..CALLS / 5 {
            let params = CallToolRequestParams::new("echo").with_arguments(arguments.clone());
            let result = direct.call_tool(params).await.unwrap();
            assert_eq!(result.is_error, None);
        }
        rows[0].1.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(CALLS / 5));

        let start = Instant::now();
        for _ in 0..CALLS / 5 {
            let ctx = tool_runtime::ToolContext::builder("fx__echo").build();
            let output = registry.call("fx__echo", text.as_str(), ctx).await.unwrap();
            assert_eq!(output.text_content(), "hello");
        }
        rows[1].1.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(CALLS / 5));

        let start = Instant::now();
        for _ in 0..CALLS / 5 {
            let result = call(&dispatcher, "fx__echo", json!({"text": "hello"})).await;
            assert_eq!(result.output.text_content(), "hello");
        }
        rows[2].1.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(CALLS / 5));
    }
    println!("{CALLS} sequential calls of `echo` on the fixture server (stdio child process), per call:");
    println!("| path | median of 5 rounds | fastest round |");
    println!("| --- | ---: | ---: |");
    for (name, mut times) in rows {
        times.sort_by(f64::total_cmp);
        println!("| {name} | {:.1} µs | {:.1} µs |", times[2], times[0]);
    }
    drop(mount);
}

/// Served again (as `tools serve --mcp-config` does), a mounted server's result keeps every item
/// in its own type: audio, embedded resources and resource links included, not their text form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_result_is_served_again_item_by_item_in_its_own_type() {
    use rmcp::ServiceExt;
    let mount = McpMount::connect(fixture("fx")).await.expect("mount the fixture");
    let registry = Registry::builder().tools(mount.tools()).build().expect("registry");
    let server = tool_runtime::mcp_server::McpServer::new(Dispatcher::builder(registry)).unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_io).await });
    let client = ().serve(client_io).await.expect("initialize");
    let result =
        client.call_tool(rmcp::model::CallToolRequestParams::new("fx__every_content")).await.expect("call");
    let content = serde_json::to_value(&result.content).unwrap();
    assert_eq!(
        content,
        json!([
            {"type": "text", "text": "plain text"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "audio", "mimeType": "audio/wav", "data": "UklGRiQAAABXQVZF"},
            {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "embedded text"}},
            {"type": "resource", "resource": {"uri": "file:///logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}},
            {"type": "resource", "resource": {"uri": "file:///data.bin", "mimeType": "application/octet-stream", "blob": "AAECAw=="}},
            {"type": "resource_link", "uri": "file:///big.log", "name": "big.log", "mimeType": "text/plain"}
        ])
    );
    assert_eq!(result.structured_content, Some(json!({"n": 7})));
    client.cancel().await.unwrap();
}

/// An answer longer than a mounted server's answer may be is reported as too large at once, not
/// after the time limit; the server keeps answering the next calls. A result of very many tiny
/// items is refused too, by their number, and one nested too deep to be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_answer_is_reported_as_too_large_at_once() {
    let (_mount, dispatcher, _) = mounted(fixture("fx").timeout(Duration::from_secs(60))).await;
    let started = std::time::Instant::now();
    let huge = call(&dispatcher, "fx__echo", json!({"text": "x", "count": 17 * 1024 * 1024})).await;
    assert!(huge.output.is_error);
    let message = huge.output.text_content();
    assert!(message.contains("with more than 16 MiB"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());

    let many = call(&dispatcher, "fx__echo", json!({"text": "", "items": 20_000})).await;
    assert!(many.output.is_error);
    assert!(
        many.output.text_content().contains("with 20000 content items, more than the 10000"),
        "{:?}",
        many.output
    );

    // Nested deeper than a JSON parser reads: refused at once too (it was never answered).
    let deep = call(&dispatcher, "fx__echo", json!({"text": "x", "depth": 200})).await;
    assert!(deep.output.is_error);
    assert!(deep.output.text_content().contains("nested 128 deep or more"), "{:?}", deep.output);
    let deepest = call(&dispatcher, "fx__echo", json!({"text": "x", "depth": 120})).await;
    assert!(!deepest.output.is_error, "{:?}", deepest.output);
    assert!(started.elapsed() < Duration::from_secs(40), "took {:?}", started.elapsed());

    let next = call(&dispatcher, "fx__echo", json!({"text": "ok"})).await;
    assert_eq!(next.output.text_content(), "ok");
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_can_run_in_a_sandbox() {
    use tool_sandbox::{Probe, Sandbox, SandboxPolicy};
    let probe = Probe::get();
    if probe.landlock_abi.is_none() || !probe.seccomp {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must have Landlock and seccomp: {probe}");
        eprintln!("skipped: the kernel lacks Landlock or seccomp ({probe})");
        return;
    }
    // The server's start tries a write, which a read-only sandbox refuses; the server still runs.
    let marker = temp_marker("sandboxed");
    let script = format!("echo x > '{0}'; exec '{FIXTURE}'", marker.display());
    let sandbox = Arc::new(Sandbox::new(SandboxPolicy::read_only()).unwrap());
    let config = ServerConfig::stdio("sbx", "/bin/sh").args(["-c", &script]).sandbox(sandbox);
    let (_mount, dispatcher, _) = mounted(config).await;
    let echo = call(&dispatcher, "sbx__echo", json!({"text": "ab", "count": 1})).await;
    assert_eq!(echo.output.text_content(), "ab");
    assert!(!marker.exists(), "the sandboxed server wrote outside");
    // Unconfined, the same start writes.
    let (_mount, _, _) = mounted(ServerConfig::stdio("free", "/bin/sh").args(["-c", &script])).await;
    assert!(marker.exists());
    let _ = std::fs::remove_file(marker);
}

/// What a stdio server started through `sh` saw in its environment (written before `exec`).
async fn server_environment(test: &str, config: impl FnOnce(ServerConfig) -> ServerConfig) -> String {
    let marker = temp_marker(test);
    let script = format!("env > '{}'; exec '{FIXTURE}'", marker.display());
    let server =
        config(ServerConfig::stdio("envcheck", "/bin/sh").args(["-c", &script]).env("SET_FOR_SERVER", "yes"));
    let (mount, _, _) = mounted(server).await;
    let seen = std::fs::read_to_string(&marker).expect("the server wrote its environment");
    let _ = std::fs::remove_file(marker);
    drop(mount);
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_inherits_only_the_base_variables_and_its_own_env() {
    // Cargo sets CARGO_MANIFEST_DIR for its tests: a variable of ours that is not on the list.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let seen = server_environment("env-base", |c| c).await;
    let has = |prefix: &str| seen.lines().any(|line| line.starts_with(prefix));
    assert!(!has("CARGO_MANIFEST_DIR="), "{seen}");
    assert!(has("PATH="), "{seen}");
    assert!(seen.lines().any(|line| line == "SET_FOR_SERVER=yes"), "{seen}");

    let seen =
        server_environment("env-all", |c| c.environment(tool_runtime::environment::EnvFilter::inherit_all()))
            .await;
    assert!(seen.lines().any(|line| line.starts_with("CARGO_MANIFEST_DIR=")), "{seen}");
    let named = tool_runtime::environment::EnvFilter::base().with("CARGO_MANIFEST_*");
    let seen = server_environment("env-named", |c| c.environment(named)).await;
    assert!(seen.lines().any(|line| line.starts_with("CARGO_MANIFEST_DIR=")), "{seen}");
}
