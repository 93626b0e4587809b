//! `tools serve` and MCP tasks (the `io.modelcontextprotocol/tasks` extension): for a client
//! that declares it, a `bash` call that goes to the background is answered with a task, polled
//! with `tasks/get` to the command's whole output, and stopped with `tasks/cancel` (the command
//! and what it started are killed, checked in `/proc`). A client without the extension gets the
//! session result it always got. Driven by rmcp's client and by raw JSON-RPC lines on stdio.
#![cfg(target_os = "linux")]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use common::{Fixture, TOOLS};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, Implementation, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A client that declares the tasks extension, or not.
#[derive(Clone)]
struct Client {
    tasks: bool,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "1.0"))
    }
}

async fn connect(fx: &Fixture, tasks: bool) -> RunningService<RoleClient, Client> {
    let (ws, data) = (fx.ws(), fx.dir.path().join("data"));
    let command = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.arg("serve").current_dir(&ws).env("XDG_DATA_HOME", &data);
    });
    Client { tasks }.serve(TokioChildProcess::new(command).expect("spawn")).await.expect("initialize")
}

fn bash(arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("bash").with_arguments(arguments.as_object().unwrap().clone())
}

fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

fn read_pid(path: &std::path::Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

async fn until_ended(client: &RunningService<RoleClient, Client>, task_id: &str) -> GetTaskResult {
    let start = Instant::now();
    loop {
        let got = client.get_task(GetTaskParams::new(task_id)).await.expect("tasks/get");
        if got.task.status().is_terminal() {
            return got;
        }
        assert_eq!(got.task.status(), TaskStatus::Working);
        assert!(start.elapsed() < Duration::from_secs(20), "the task did not end: {got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_background_command_becomes_a_task_polled_to_its_whole_output() {
    let fx = Fixture::new();
    let client = connect(&fx, true).await;
    let extensions = client.peer_info().unwrap().capabilities.extensions.clone().unwrap_or_default();
    assert!(extensions.contains_key("io.modelcontextprotocol/tasks"), "{extensions:?}");

    // Goes to the background at once; prints before and after the call's answer.
    let command = "echo first; sleep 1; echo second; exit 3";
    let response =
        client.call_tool_once(bash(json!({"command": command, "background": true}))).await.unwrap();
    let CallToolResponse::Task(created) = response else { panic!("expected a task, got {response:?}") };
    let wire = serde_json::to_value(&created).unwrap();
    assert_eq!(wire["resultType"], "task", "{wire}");
    assert_eq!(wire["status"], "working", "{wire}");
    assert!(wire["statusMessage"].as_str().unwrap().contains(command), "{wire}");
    assert_eq!(wire["ttlMs"], Value::Null, "{wire}");
    let task_id = created.task.task_id.clone();

    let first = client.get_task(GetTaskParams::new(&task_id)).await.unwrap();
    assert_eq!(first.task.status(), TaskStatus::Working, "{first:?}");

    let ended = until_ended(&client, &task_id).await;
    let wire = serde_json::to_value(&ended).unwrap();
    assert_eq!(wire["status"], "completed", "{wire}");
    let result = &wire["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    // The whole output, as one read shows it, with the exit and the end of the session.
    assert!(text.starts_with("first\nsecond\n"), "{text}");
    assert!(text.contains("[exit code 3]"), "{text}");
    assert!(text.contains("ended after"), "{text}");
    assert_eq!(result["isError"], true, "{wire}");

    // Unknown tasks are invalid params, with the tasks there are.
    let error = client.get_task(GetTaskParams::new("task-999")).await.unwrap_err().to_string();
    assert!(error.contains("no task `task-999`") && error.contains(&task_id), "{error}");

    // A command that ends before its yield time is an ordinary result.
    let response = client.call_tool_once(bash(json!({"command": "echo quick"}))).await.unwrap();
    let CallToolResponse::Complete(result) = response else { panic!("expected a result, got {response:?}") };
    assert_eq!(serde_json::to_value(&result).unwrap()["content"][0]["text"], "quick\n");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_task_kills_the_command_and_what_it_started() {
    let fx = Fixture::new();
    let client = connect(&fx, true).await;
    let command = "echo $$ > shell.pid; sleep 300 & echo $! > child.pid; echo started; wait";
    let response =
        client.call_tool_once(bash(json!({"command": command, "background": true}))).await.unwrap();
    let CallToolResponse::Task(created) = response else { panic!("expected a task, got {response:?}") };
    let task_id = created.task.task_id;
    let (shell, child) = (read_pid(&fx.ws().join("shell.pid")), read_pid(&fx.ws().join("child.pid")));
    assert!(runs(shell) && runs(child), "the command runs");

    client.cancel_task(CancelTaskParams::new(&task_id)).await.expect("tasks/cancel");
    let ended = until_ended(&client, &task_id).await;
    assert_eq!(ended.task.status(), TaskStatus::Cancelled, "{ended:?}");
    // Cancelled means stopped: nothing of it runs any more.
    for pid in [shell, child] {
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            !runs(pid)
        });
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
        assert!(gone, "{pid} still runs after tasks/cancel");
    }
    // Cancelling again is acknowledged; an unknown task is not.
    client.cancel_task(CancelTaskParams::new(&task_id)).await.expect("cancel again");
    assert!(client.cancel_task(CancelTaskParams::new("task-77")).await.is_err());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_end_of_the_session_kills_a_task_still_running() {
    let fx = Fixture::new();
    let client = connect(&fx, true).await;
    let command = "sleep 300 & echo $! > child.pid; wait";
    let response =
        client.call_tool_once(bash(json!({"command": command, "background": true}))).await.unwrap();
    assert!(matches!(response, CallToolResponse::Task(_)), "{response:?}");
    let child = read_pid(&fx.ws().join("child.pid"));
    assert!(runs(child));
    client.cancel().await.unwrap();
    let gone = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !runs(child)
    });
    let _ =
        std::process::Command::new("kill").args(["-KILL", &child.to_string()]).stderr(Stdio::null()).status();
    assert!(gone, "{child} outlived the session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_task_is_polled_and_cancelled_in_its_session() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let fx = Fixture::new();
    let server = common::HttpServer::start(&fx, &[]);
    common::install_tls_provider();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.clone()),
    );
    let client = Client { tasks: true }.serve(transport).await.expect("initialize over HTTP");

    // Still running when it goes to the background (a command that ends first is answered
    // with its result, not a task).
    let command = "sleep 0.5; echo over http";
    let done = client.call_tool_once(bash(json!({"command": command, "background": true}))).await.unwrap();
    let CallToolResponse::Task(done) = done else { panic!("expected a task, got {done:?}") };
    let ended = serde_json::to_value(until_ended(&client, &done.task.task_id).await).unwrap();
    assert_eq!(ended["status"], "completed", "{ended}");
    assert!(ended["result"]["content"][0]["text"].as_str().unwrap().starts_with("over http\n"), "{ended}");

    let command = "sleep 300 & echo $! > http-child.pid; wait";
    let response =
        client.call_tool_once(bash(json!({"command": command, "background": true}))).await.unwrap();
    let CallToolResponse::Task(created) = response else { panic!("expected a task, got {response:?}") };
    let child = read_pid(&fx.ws().join("http-child.pid"));
    assert!(runs(child));
    // Another session does not see this session's tasks.
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.clone()),
    );
    let other = Client { tasks: true }.serve(transport).await.expect("a second session");
    let error = other.get_task(GetTaskParams::new(&created.task.task_id)).await.unwrap_err().to_string();
    assert!(error.contains("This session has no tasks"), "{error}");
    other.cancel().await.unwrap();

    client.cancel_task(CancelTaskParams::new(&created.task.task_id)).await.unwrap();
    let ended = until_ended(&client, &created.task.task_id).await;
    assert_eq!(ended.task.status(), TaskStatus::Cancelled, "{ended:?}");
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !runs(child)
    });
    let _ =
        std::process::Command::new("kill").args(["-KILL", &child.to_string()]).stderr(Stdio::null()).status();
    assert!(gone, "{child} still runs after tasks/cancel over HTTP");

    client.cancel().await.unwrap();
    server.stop("TERM");
}

/// Over HTTP, the end of a session (rmcp's client sends `DELETE` when it stops) kills what its
/// tasks still run, the command and its child, and the server goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_the_end_of_the_session_kills_its_tasks() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let fx = Fixture::new();
    let server = common::HttpServer::start(&fx, &[]);
    common::install_tls_provider();
    let connect = || {
        StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(
            server.url.clone(),
        ))
    };
    let client = Client { tasks: true }.serve(connect()).await.expect("initialize over HTTP");
    let command = "sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait";
    let response =
        client.call_tool_once(bash(json!({"command": command, "background": true}))).await.unwrap();
    assert!(matches!(response, CallToolResponse::Task(_)), "{response:?}");
    let pids = [read_pid(&fx.ws().join("shell.pid")), read_pid(&fx.ws().join("child.pid"))];
    assert!(pids.iter().all(|&pid| runs(pid)), "{pids:?}");

    client.cancel().await.unwrap();
    let start = Instant::now();
    while pids.iter().any(|&pid| runs(pid)) && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let survivors: Vec<i32> = pids.into_iter().filter(|&pid| runs(pid)).collect();
    for pid in &survivors {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    assert!(survivors.is_empty(), "{survivors:?} outlived their HTTP session by 5 seconds");

    let other = Client { tasks: true }.serve(connect()).await.expect("a session after the end of another");
    other.cancel().await.unwrap();
    assert_eq!(server.stop("TERM"), Some(0));
}

#[tokio::test]
async fn a_client_without_the_extension_gets_the_session_result() {
    let fx = Fixture::new();
    let client = connect(&fx, false).await;
    let response = client
        .call_tool_once(bash(json!({"command": "echo hi; sleep 0.3", "background": true})))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = response else { panic!("expected a result, got {response:?}") };
    let value = serde_json::to_value(&result).unwrap();
    let text = value["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("[session 1 is still running"), "{text}");
    // The tasks methods are refused to it, naming the capability it lacks.
    let error = client.get_task(GetTaskParams::new("task-1")).await.unwrap_err().to_string();
    assert!(error.contains("-32021") || error.to_lowercase().contains("capability"), "{error}");
    client.cancel().await.unwrap();
}

/// `tools serve` on stdio, spoken to one JSON-RPC line at a time.
struct Raw {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Raw {
    fn start(fx: &Fixture) -> Raw {
        let mut child = fx
            .command(&["serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn tools serve");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Raw { child, input, output }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// The response to request `id` (notifications before it are skipped).
    fn response(&mut self, id: i64) -> Value {
        loop {
            let mut line = String::new();
            assert!(self.output.read_line(&mut line).unwrap() > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_wire_shape_of_tasks_on_raw_json_rpc() {
    let fx = Fixture::new();
    let mut raw = Raw::start(&fx);
    let init = raw.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "raw", "version": "1"},
               "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}),
    );
    assert_eq!(
        init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{init}"
    );
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let created = raw.request(
        2,
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "sleep 0.5; echo done", "yield_ms": 100}}),
    );
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working", "{created}");
    let task_id = task["taskId"].as_str().unwrap().to_owned();
    for key in ["createdAt", "lastUpdatedAt"] {
        let stamp = task[key].as_str().unwrap();
        assert!(stamp.len() == 24 && stamp.ends_with('Z') && &stamp[10..11] == "T", "{key}: {stamp}");
    }
    assert_eq!(task["pollIntervalMs"], 1000, "{created}");

    let start = Instant::now();
    let got = loop {
        let got = raw.request(3, "tasks/get", json!({"taskId": task_id}));
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{got}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let result = &got["result"];
    assert_eq!(result["status"], "completed", "{got}");
    assert_eq!(result["taskId"], json!(task_id), "{got}");
    assert_eq!(result["result"]["isError"], false, "{got}");
    assert!(result["result"]["content"][0]["text"].as_str().unwrap().starts_with("done\n"), "{got}");

    let update = raw.request(4, "tasks/update", json!({"taskId": task_id, "inputResponses": {}}));
    assert!(update.get("result").is_some(), "{update}");
    let missing = raw.request(5, "tasks/get", json!({"taskId": "nope"}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
}

#[test]
fn a_raw_client_without_the_extension_never_gets_a_task() {
    let fx = Fixture::new();
    let mut raw = Raw::start(&fx);
    raw.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "raw", "version": "1"}, "capabilities": {}}),
    );
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let answer = raw.request(
        2,
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "sleep 0.5; echo done", "yield_ms": 100}}),
    );
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("[session 1 is still running"), "{answer}");
    assert_eq!(answer["result"].get("resultType"), None, "{answer}");
    let refused = raw.request(3, "tasks/get", json!({"taskId": "task-1"}));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[test]
fn on_protocol_2026_07_28_the_extension_is_declared_per_request() {
    let fx = Fixture::new();
    let mut raw = Raw::start(&fx);
    let meta = |tasks: bool| {
        let extensions = if tasks { json!({"io.modelcontextprotocol/tasks": {}}) } else { json!({}) };
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
               "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}})
    };
    let call = |tasks: bool| json!({"name": "bash", "arguments": {"command": "sleep 0.3; echo late", "yield_ms": 50}, "_meta": meta(tasks)});
    let plain = raw.request(1, "tools/call", call(false));
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert!(plain["result"]["content"][0]["text"].as_str().unwrap().contains("is still running"), "{plain}");

    let created = raw.request(2, "tools/call", call(true));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].clone();
    let start = Instant::now();
    let got = loop {
        let got = raw.request(3, "tasks/get", json!({"taskId": task_id, "_meta": meta(true)}));
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{got}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["resultType"], "complete", "{got}");
    assert!(got["result"]["result"]["content"][0]["text"].as_str().unwrap().starts_with("late\n"), "{got}");
    // Without the extension on the request itself, tasks/get is refused.
    let refused = raw.request(4, "tasks/get", json!({"taskId": task_id, "_meta": meta(false)}));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

/// Posts one JSON-RPC request of revision 2026-07-28 (its `_meta` and headers as the revision
/// asks, the tasks extension declared) and returns its answer.
/// A 2026-07-28 request's `_meta`, with the client's `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}})
}

async fn post_2026(
    http: &reqwest::Client,
    url: &str,
    id: i64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_string());
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let response = request.send().await.expect("POST");
    let body = response.text().await.unwrap();
    common::json_rpc_messages(&body)
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}: {body}"))
}

/// Over HTTP on 2026-07-28, which has no sessions, a task created by one request is found by
/// `tasks/get` in later ones: the server's state for such requests outlives each of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_on_2026_07_28_a_task_outlives_the_request_that_made_it() {
    let fx = Fixture::new();
    let server = common::HttpServer::start(&fx, &[]);
    common::install_tls_provider();
    let http = reqwest::Client::new();
    let arguments = json!({"command": "sleep 0.3; echo from the task", "background": true});
    let params = json!({"name": "bash", "arguments": arguments});
    let created = post_2026(&http, &server.url, 1, "tools/call", Some("bash"), params).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let start = Instant::now();
    let got = loop {
        let got = post_2026(&http, &server.url, 2, "tasks/get", None, json!({"taskId": task_id})).await;
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert!(
        got["result"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("from the task\n"),
        "{got}"
    );
    server.stop("TERM");
}

/// On 2026-07-28, which has no requests from a server to its client, a mounted server's request
/// for a completion comes to the client in rounds: the call's result asks for it
/// (`input_required`), and the call goes on once the client calls again with the completion. A
/// client that does not sample is told so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_on_2026_07_28_a_mounted_servers_sampling_comes_to_the_client_in_rounds() {
    let fx = Fixture::new();
    let config = fx.dir.path().join("mcp.json");
    let fixture = common::resources_fixture();
    std::fs::write(
        &config,
        json!({"mcpServers": {"fx": {"command": fixture.to_str().unwrap()}}}).to_string(),
    )
    .unwrap();
    let server = common::HttpServer::start(&fx, &["--mcp-config", config.to_str().unwrap()]);
    common::install_tls_provider();
    let http = reqwest::Client::new();
    let sampling = json!({"sampling": {}});
    let mut params = json!({"name": "fx__ask_model", "arguments": {"question": "6 x 7?"}});
    params["_meta"] = meta(sampling.clone());
    let asked = post_2026(&http, &server.url, 1, "tools/call", Some("fx__ask_model"), params).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let request = &asked["result"]["inputRequests"]["q1"];
    assert_eq!(request["method"], "sampling/createMessage", "{asked}");
    assert_eq!(request["params"]["messages"][0]["content"]["text"], "6 x 7?", "{asked}");
    let state = asked["result"]["requestState"].clone();
    let completion = json!({"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "raw"});
    let mut retry = json!({"name": "fx__ask_model", "arguments": {"question": "6 x 7?"},
        "requestState": state, "inputResponses": {"q1": completion}});
    retry["_meta"] = meta(sampling);
    let answered = post_2026(&http, &server.url, 2, "tools/call", Some("fx__ask_model"), retry).await;
    assert_eq!(answered["result"]["content"][0]["text"], "the model (raw) said: 42", "{answered}");

    let mut params = json!({"name": "fx__ask_model", "arguments": {"question": "6 x 7?"}});
    params["_meta"] = meta(json!({}));
    let refused = post_2026(&http, &server.url, 3, "tools/call", Some("fx__ask_model"), params).await;
    let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.contains("does not sample (it did not declare the sampling capability)"), "{refused}");
    server.stop("TERM");
}

/// Over HTTP on 2026-07-28 a background command belongs to the state that such requests share,
/// which ends as an idle session does: the command is killed once no request came for the
/// session idle time limit, rather than running until the server stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_on_2026_07_28_a_background_command_ends_with_the_idle_state() {
    let fx = Fixture::new();
    let server = common::HttpServer::start(&fx, &["--session-idle-secs", "1"]);
    common::install_tls_provider();
    let http = reqwest::Client::new();
    let mut params = json!({"name": "bash", "arguments": {"command": "echo $$ > bg.pid; exec sleep 301", "background": true}});
    params["_meta"] = meta(json!({}));
    let started = post_2026(&http, &server.url, 1, "tools/call", Some("bash"), params).await;
    assert!(
        started["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("session_id"),
        "{started}"
    );
    let pid_file = fx.ws().join("bg.pid");
    let mut pid = None;
    for _ in 0..200 {
        pid = std::fs::read_to_string(&pid_file).ok().and_then(|text| text.trim().parse::<u32>().ok());
        if pid.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let pid = pid.expect("the background command wrote its pid");
    let runs = || std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(runs(), "the background command runs");
    let start = Instant::now();
    while runs() && start.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!runs(), "the background command still runs {:?} after the state went idle", start.elapsed());
    server.stop("TERM");
}
