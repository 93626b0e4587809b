//! End-to-end tests of `tools serve`: a real MCP client (rmcp's) drives the built binary over
//! the child process's standard input and output.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Fixture, TOOLS, registry};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ErrorCode,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tool_runtime::providers::DefinitionOptions;
use tool_runtime::providers::Provider;

/// A client that keeps every progress notification it receives.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl Recorder {
    fn progress(&self) -> Vec<ProgressNotificationParam> {
        self.progress.lock().unwrap().clone()
    }
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

async fn connect(fx: &Fixture, extra: &[&str]) -> (RunningService<RoleClient, Recorder>, Recorder) {
    let ws = fx.ws();
    let data = fx.dir.path().join("data");
    let extra: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
    let command = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.arg("serve").args(&extra).current_dir(&ws).env("XDG_DATA_HOME", &data);
    });
    let transport = TokioChildProcess::new(command).expect("spawn tools serve");
    let recorder = Recorder::default();
    let client = recorder.clone().serve(transport).await.expect("initialize");
    (client, recorder)
}

fn args(value: Value) -> CallToolRequestParams {
    let Value::Object(map) = value else { panic!("arguments must be an object") };
    let (name, arguments) = {
        let mut map = map;
        let name = map.remove("name").and_then(|n| n.as_str().map(str::to_owned)).expect("name");
        let arguments = match map.remove("arguments") {
            Some(Value::Object(arguments)) => arguments,
            _ => serde_json::Map::new(),
        };
        (name, arguments)
    };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

fn text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_and_list_tools() {
    let fx = Fixture::new();
    let (client, _) = connect(&fx, &[]).await;
    let info = client.peer_info().expect("server info");
    let implementation = info.server_info.clone().expect("serverInfo");
    assert_eq!(implementation.name, "tools");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some());

    let tools = client.list_all_tools().await.expect("tools/list");
    let listed = serde_json::to_value(&tools).unwrap();
    let expected = Provider::Mcp.definitions(&registry(), &DefinitionOptions::default()).unwrap();
    assert_eq!(listed, Value::Array(expected), "tools/list is the MCP provider's definitions");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"read") && names.contains(&"bash"), "{names:?}");
    let read = tools.iter().find(|t| t.name == "read").unwrap();
    assert_eq!(read.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tools_and_read_error_results() {
    let fx = Fixture::new();
    let (client, _) = connect(&fx, &[]).await;

    let result =
        client.call_tool(args(json!({"name": "read", "arguments": {"path": "hello.txt"}}))).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"content": [{"type": "text", "text": "     1\thello\n     2\tworld\n"}], "isError": false})
    );

    // Invalid arguments: a result the model can read, not a protocol error.
    let result = client.call_tool(args(json!({"name": "read", "arguments": {"path": 3}}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "Invalid arguments for tool `read`:\n- /path: expected a string, received 3 (an integer)\nArguments received: {\"path\":3}\nFix the arguments and call `read` again."
    );

    // A tool error.
    let result =
        client.call_tool(args(json!({"name": "read", "arguments": {"path": "missing.txt"}}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("missing.txt"), "{}", text(&result));

    // Outside the root: refused by default.
    let outside = fx.dir.path().join("outside.txt");
    let result =
        client.call_tool(args(json!({"name": "read", "arguments": {"path": outside}}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).starts_with("Permission denied"), "{}", text(&result));

    // An unknown tool: a protocol error (invalid params), naming the tools that exist.
    match client.call_tool(args(json!({"name": "nope"}))).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(error.message, common::unknown_tool_message("nope"));
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_outside_root_and_root_flags_reach_the_tools() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let (client, _) = connect(&fx, &["--allow-outside-root", "--root", ws.to_str().unwrap()]).await;
    let outside = fx.dir.path().join("outside.txt");
    let result =
        client.call_tool(args(json!({"name": "read", "arguments": {"path": outside}}))).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(text(&result), "     1\tsecret\n");
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_carry_the_tools_progress() {
    let fx = Fixture::new();
    let (client, recorder) = connect(&fx, &[]).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(args(
        json!({"name": "bash", "arguments": {"command": "echo one; sleep 0.3; echo two"}}),
    )));
    let handle = client.send_request_with_option(request, PeerRequestOptions::no_options()).await.unwrap();
    let token = handle.progress_token.clone();
    let response = handle.await_response().await.expect("response");
    let result = serde_json::to_value(&response).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"][0]["text"], "one\ntwo\n");

    // The server sends every notification before its response; the client handles them in
    // tasks of their own, so give them a moment to land, and put them back in order.
    let sorted = || {
        let mut progress = recorder.progress();
        progress.sort_by(|a, b| a.progress.total_cmp(&b.progress));
        progress
    };
    let mut progress = sorted();
    for _ in 0..100 {
        if progress.iter().filter_map(|p| p.message.as_deref()).collect::<String>() == "one\ntwo\n" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        progress = sorted();
    }
    let streamed: String = progress.iter().filter_map(|p| p.message.as_deref()).collect();
    assert_eq!(streamed, "one\ntwo\n");
    assert!(progress.iter().all(|p| p.progress_token == token));
    let figures: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    let expected: Vec<f64> = (1..=figures.len()).map(|n| n as f64).collect();
    assert_eq!(figures, expected, "message-only updates count up");
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_the_running_tool() {
    let fx = Fixture::new();
    let (client, recorder) = connect(&fx, &[]).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(args(json!({
        "name": "bash",
        "arguments": {"command": "echo $$ > pid.txt; echo started; exec sleep 600", "timeout_secs": 600}
    }))));
    let handle = client.send_request_with_option(request, PeerRequestOptions::no_options()).await.unwrap();
    // Wait until the command runs (its first output arrives as progress).
    let mut started = false;
    for _ in 0..400 {
        if recorder.progress().iter().any(|p| p.message.as_deref() == Some("started\n")) {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(started, "the command never reported progress");
    let pid: u32 = std::fs::read_to_string(fx.ws().join("pid.txt")).unwrap().trim().parse().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists() || !cfg!(target_os = "linux"));

    handle.cancel(Some("no longer needed".into())).await.expect("notifications/cancelled");

    if cfg!(target_os = "linux") {
        // The command was killed and reaped. Without cancellation it would run for 10 minutes.
        let proc = format!("/proc/{pid}");
        for _ in 0..600 {
            if !std::path::Path::new(&proc).exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!std::path::Path::new(&proc).exists(), "the sleep (pid {pid}) is still running");
    }
    // `bash` is exclusive: this call can only start once the cancelled one has let go of the
    // gate, that is, once it has finished.
    let result = client
        .call_tool(args(json!({"name": "bash", "arguments": {"command": "echo after"}})))
        .await
        .expect("a call after the cancelled one");
    assert_eq!(text(&result), "after\n");
    client.cancel().await.expect("close");
}

#[test]
fn a_closed_stdin_ends_serve_cleanly() {
    let fx = Fixture::new();
    // No client at all.
    let run = fx.run(&["serve"], None);
    // Standard error holds the line that names the sandbox and the one that names what the
    // network allows, and nothing else.
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(lines.len() == 2 && lines[0].starts_with("tools: sandbox workspace-write"), "{}", run.stderr);
    assert!(
        lines[1].starts_with("tools: network: off, except through a proxy per command"),
        "{}",
        run.stderr
    );
    let run = fx.run(&["serve", "--sandbox", "off"], None);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "tools: sandbox off (commands run unconfined)\n")
    );

    // A client that initializes, calls and closes its input: that ends the session (MCP's stdio
    // shutdown), so the calls in flight are cancelled at once, their commands killed, and each
    // still answered, including one whose progress can no longer be sent.
    let progress_call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "echo a; sleep 0.5; echo b"}, "_meta": {"progressToken": "p"}}});
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sh", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "hello.txt"}}}),
        progress_call,
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect::<String>();
    let run = fx.run(&["serve"], Some(input.as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut responses: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m.get("id").is_some())
        .collect();
    responses.sort_by_key(|m| m["id"].as_u64());
    assert_eq!(responses.len(), 3, "{}", run.stdout);
    assert_eq!(responses[0]["id"], 1);
    assert_eq!(responses[0]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(responses[0]["result"]["serverInfo"]["name"], "tools");
    // The read may have finished before the input was seen closed, or been cancelled (before
    // it started, or with what it read kept and the cancellation said after it): a race with
    // the input's end that each run may decide either way.
    let read = &responses[1];
    let file = json!({"type": "text", "text": "     1\thello\n     2\tworld\n"});
    let content = read["result"]["content"].as_array().cloned().unwrap_or_default();
    let notice = content.last().and_then(|item| item["text"].as_str()).unwrap_or_default();
    let finished = read["result"]["isError"] == false && content == [file.clone()];
    let cancelled = read["result"]["isError"] == true
        && notice.contains("cancelled")
        && (content.len() == 1 || (content.len() == 2 && content[0] == file));
    assert!(finished || cancelled, "{read}");
    // The command, which sleeps, was not.
    let bash = &responses[2];
    let text = bash["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(bash["result"]["isError"], true, "{bash}");
    assert!(text.contains("cancelled") && !text.contains("b\n"), "{bash}");
}

#[test]
fn serve_usage_errors_exit_2() {
    let fx = Fixture::new();
    assert_eq!(
        fx.run(&["serve", "--format", "mcp"], None).usage_error(),
        "unexpected argument '--format' found (see `tools serve --help`)"
    );
    let missing = fx.dir.path().join("missing");
    assert_eq!(
        fx.run(&["serve", "--root", missing.to_str().unwrap()], None).usage_error(),
        format!("--root {}: no such directory", missing.display())
    );
}
