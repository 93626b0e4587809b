//! `tools serve --http`: the built binary on a free port, driven by rmcp's Streamable HTTP client
//! and plain HTTP requests; the address checks, the token file, and shutdown on SIGTERM.
#![cfg(target_os = "linux")]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{Fixture, HttpServer, install_tls_provider, registry};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tool_runtime::providers::DefinitionOptions;
use tool_runtime::providers::Provider;

async fn client(url: &str, token: Option<&str>) -> RunningService<RoleClient, ()> {
    install_tls_provider();
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
async fn serves_the_tools_with_a_todo_list_per_session() {
    let fx = Fixture::new();
    let server = HttpServer::start(&fx, &[]);
    let first = client(&server.url, None).await;
    let second = client(&server.url, None).await;

    let tools = serde_json::to_value(first.list_all_tools().await.unwrap()).unwrap();
    let expected = Provider::Mcp.definitions(&registry(), &DefinitionOptions::default()).unwrap();
    assert_eq!(tools, Value::Array(expected));

    let read = first.call_tool(call("read", json!({"path": "hello.txt"}))).await.unwrap();
    assert!(text(&read).contains("hello"), "{}", text(&read));

    let todos = json!({"todos": [{"content": "Write the HTTP server", "status": "in_progress"}]});
    let wrote = first.call_tool(call("todo_write", todos)).await.unwrap();
    assert_eq!(wrote.is_error, Some(false), "{}", text(&wrote));
    let own = first.call_tool(call("todo_read", json!({}))).await.unwrap();
    assert!(text(&own).contains("[>] Write the HTTP server (in progress)"), "{}", text(&own));
    let others = second.call_tool(call("todo_read", json!({}))).await.unwrap();
    assert_eq!(text(&others), "The todo list is empty.");

    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
    assert_eq!(server.stop("TERM"), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_file_guards_every_request() {
    let fx = Fixture::new();
    let token_file = fx.dir.path().join("token");
    std::fs::write(&token_file, "  t0ken-from-file\n").unwrap();
    let server = HttpServer::start(&fx, &["--auth-token-file", token_file.to_str().unwrap()]);

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}});
    install_tls_provider();
    for authorization in [None, Some("Bearer wrong"), Some("Bearer   t0ken-from-file")] {
        let mut request = reqwest::Client::new()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string());
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{authorization:?}");
    }

    let client = client(&server.url, Some("t0ken-from-file")).await;
    let ls = client.call_tool(call("ls", json!({}))).await.unwrap();
    assert!(text(&ls).contains("hello.txt"), "{}", text(&ls));
    client.cancel().await.unwrap();
    assert_eq!(server.stop("INT"), Some(0));
}

#[test]
fn http_flags_are_checked_before_anything_listens() {
    let fx = Fixture::new();
    let remote = fx.run(&["serve", "--http", "0.0.0.0:0"], None);
    assert_eq!(remote.code, 2);
    assert_eq!(
        remote.stderr.trim(),
        "tools: --http 0.0.0.0:0: 0.0.0.0 is not a loopback address, so other hosts could reach the tools; \
         pass --allow-remote to serve there (with --auth-token-file), or listen on 127.0.0.1"
    );

    let without_http = fx.run(&["serve", "--allow-remote"], None);
    assert_eq!(without_http.code, 2);
    assert!(without_http.stderr.contains("--http <ADDR>"), "{}", without_http.stderr);

    let empty = fx.dir.path().join("empty-token");
    std::fs::write(&empty, "\n").unwrap();
    let empty = fx.run(&["serve", "--http", "0", "--auth-token-file", empty.to_str().unwrap()], None);
    assert_eq!(empty.code, 2);
    assert!(empty.stderr.contains("the file is empty; write the token in it"), "{}", empty.stderr);
}

#[test]
fn a_remote_address_is_served_when_asked_for() {
    let fx = Fixture::new();
    let mut command = fx.command(&["serve", "--http", "0.0.0.0:0", "--allow-remote"]);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert!(line.starts_with("tools serve: listening on http://0.0.0.0:"), "{line}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("without --auth-token-file: anyone who can reach it can run the tools"),
        "{stderr}"
    );
}

fn wait_for_file(path: &Path) -> String {
    for _ in 0..2000 {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.trim().is_empty()
        {
            return text.trim().to_owned();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_calls_finish_within_the_grace_and_kills_the_rest() {
    let fx = Fixture::new();
    let server = HttpServer::start(&fx, &["--shutdown-grace-secs", "3"]);
    let finishing = client(&server.url, None).await;
    let overstaying = client(&server.url, None).await;
    let finishes = tokio::spawn(async move {
        let command = "echo waiting > waiting; while [ ! -e go ]; do sleep 0.02; done; echo finished";
        finishing.call_tool(call("bash", json!({"command": command}))).await
    });
    let overstays = tokio::spawn(async move {
        overstaying.call_tool(call("bash", json!({"command": "echo $$ > sleeper.pid; exec sleep 600"}))).await
    });
    wait_for_file(&fx.ws().join("waiting"));
    let sleeper: i32 = wait_for_file(&fx.ws().join("sleeper.pid")).parse().unwrap();

    let pid = server.child.id();
    let status = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    // Within the grace, the first call finishes with its output.
    std::fs::write(fx.ws().join("go"), "").unwrap();
    let finished = finishes.await.unwrap().expect("the call in flight is answered");
    assert_eq!((text(&finished).trim(), finished.is_error), ("finished", Some(false)));
    // After the grace, the other is cancelled and its command killed.
    let cancelled = overstays.await.unwrap().expect("the cancelled call is answered");
    assert_eq!(cancelled.is_error, Some(true), "{}", text(&cancelled));
    // Killed before the answer went out; being reaped takes a moment.
    for _ in 0..500 {
        if !tool_tests::runs(sleeper) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!tool_tests::runs(sleeper), "the command of the cancelled call still runs");
    let mut server = server;
    assert_eq!(server.child.wait().unwrap().code(), Some(0));
}

/// The limits' flags reach the server: a second session past `--max-sessions 1` is refused with
/// the limit named, a second connection past `--max-connections-per-client 1` gets `429`, and a
/// limit of 0 is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_flags_reach_the_server() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fx = Fixture::new();
    let server = HttpServer::start(
        &fx,
        &["--max-sessions", "1", "--max-connections-per-client", "1", "--header-timeout-secs", "5"],
    );
    let address = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\naccept: application/json, \
         text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{initialize}",
        initialize.len()
    );
    // One connection at a time: each is closed before the next.
    let mut answers = Vec::new();
    for _ in 0..2 {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer))
            .await
            .unwrap()
            .unwrap();
        answers.push(answer);
        // The server counts the connection until it has seen it close.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answers[0].starts_with("HTTP/1.1 200 OK\r\n"), "{}", answers[0]);
    assert!(answers[1].starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{}", answers[1]);
    assert!(answers[1].contains("already has 1 sessions open"), "{}", answers[1]);

    let _held = tokio::net::TcpStream::connect(&address).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut second = tokio::net::TcpStream::connect(&address).await.unwrap();
    let mut refusal = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), second.read_to_string(&mut refusal)).await;
    assert!(refusal.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{refusal}");
    drop(_held);
    assert_eq!(server.stop("TERM"), Some(0));

    let zero = fx.run(&["serve", "--http", "127.0.0.1:0", "--max-connections", "0"], None);
    assert_eq!(zero.code, 2, "{}", zero.stderr);
}

/// One JSON-RPC message posted to a session (`None` before `initialize`); the answer's headers
/// and its JSON-RPC messages (from a JSON body or the `data:` lines of an event stream).
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: Value,
) -> (reqwest::header::HeaderMap, Vec<Value>) {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(message.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.expect("POST /mcp");
    assert!(response.status().is_success(), "{message}: {}", response.status());
    let headers = response.headers().clone();
    let body = response.text().await.unwrap();
    (headers, common::json_rpc_messages(&body))
}

/// Opens a session and starts a background `bash` command in it that leaves a child; the
/// session id and the pids of the shell and of its child, both running.
async fn session_with_a_background_command(
    http: &reqwest::Client,
    url: &str,
    dir: &Path,
) -> (String, [i32; 2]) {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}});
    let (headers, _) = post(http, url, None, initialize).await;
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(http, url, Some(&session), initialized).await;
    let (shell, child) = (dir.join("shell.pid"), dir.join("child.pid"));
    let command = format!(
        "sleep 300 & echo $! > {child}; echo $$ > {shell}; wait",
        child = child.display(),
        shell = shell.display()
    );
    let arguments = json!({"command": command, "background": true});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "bash", "arguments": arguments}});
    let (_, answers) = post(http, url, Some(&session), call).await;
    let answer = answers.iter().find(|m| m["id"] == 2).unwrap_or_else(|| panic!("{answers:?}"));
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    let pids = [wait_for_file(&shell), wait_for_file(&child)].map(|pid| pid.trim().parse::<i32>().unwrap());
    for pid in pids {
        assert!(runs(pid), "the background command's process {pid} is not running");
    }
    (session, pids)
}

fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// Whether every process of `pids` is gone within `limit`, checked every 50 ms.
async fn all_gone_within(pids: &[i32], limit: Duration) -> bool {
    let start = std::time::Instant::now();
    while pids.iter().any(|&pid| runs(pid)) {
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// A session's end over HTTP (`DELETE`) kills its background commands and what they started,
/// as the end of a stdio connection does; the server goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_kills_its_background_commands() {
    install_tls_provider();
    let fx = Fixture::new();
    let server = HttpServer::start(&fx, &[]);
    let http = reqwest::Client::new();
    let (session, pids) = session_with_a_background_command(&http, &server.url, &fx.ws()).await;

    let deleted = http.delete(&server.url).header("mcp-session-id", &session).send().await.unwrap();
    assert!(deleted.status().is_success(), "DELETE: {}", deleted.status());
    assert!(
        all_gone_within(&pids, Duration::from_secs(5)).await,
        "the background command {pids:?} outlived its session's DELETE by 5 seconds"
    );
    let other = client(&server.url, None).await;
    let read = other.call_tool(call("read", json!({"path": "hello.txt"}))).await.unwrap();
    assert!(text(&read).contains("hello"), "{}", text(&read));
    drop(other);
    assert_eq!(server.stop("TERM"), Some(0));
}

/// What a foreground command leaves running (`setsid nohup … &`) ends with its session's end
/// (`DELETE`), not only with the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_kills_what_its_foreground_commands_left_running() {
    install_tls_provider();
    let fx = Fixture::new();
    let server = HttpServer::start(&fx, &[]);
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}});
    let (headers, _) = post(&http, &server.url, None, initialize).await;
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    post(
        &http,
        &server.url,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let pid_file = fx.ws().join("left.pid");
    let command = format!("setsid nohup sleep 300 > /dev/null 2>&1 & echo $! > {}", pid_file.display());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}}});
    let (_, answers) = post(&http, &server.url, Some(&session), call).await;
    let answer = answers.iter().find(|m| m["id"] == 2).unwrap_or_else(|| panic!("{answers:?}"));
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    let pid: i32 = wait_for_file(&pid_file).trim().parse().unwrap();
    assert!(runs(pid), "the job left behind is not running");
    let deleted = http.delete(&server.url).header("mcp-session-id", &session).send().await.unwrap();
    assert!(deleted.status().is_success(), "DELETE: {}", deleted.status());
    assert!(
        all_gone_within(&[pid], Duration::from_secs(5)).await,
        "the job {pid} a foreground command left outlived its session's DELETE by 5 seconds"
    );
    assert_eq!(server.stop("TERM"), Some(0));
}

/// A session that ends by staying idle past `--session-idle-secs` kills its background commands
/// too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_ending_kills_its_background_commands() {
    install_tls_provider();
    let fx = Fixture::new();
    let server = HttpServer::start(&fx, &["--session-idle-secs", "1"]);
    let http = reqwest::Client::new();
    let (_session, pids) = session_with_a_background_command(&http, &server.url, &fx.ws()).await;
    assert!(
        all_gone_within(&pids, Duration::from_secs(1 + 5)).await,
        "the background command {pids:?} outlived its idle session's end by 5 seconds"
    );
    assert_eq!(server.stop("TERM"), Some(0));
}

/// Without a token the server answers only its own user's processes (and root's): any account
/// of the machine can reach a loopback port, and the tools run as the server's user. With a
/// token, whoever holds it is served.
#[test]
fn without_a_token_another_users_process_is_refused() {
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    let have = |program: &str| std::process::Command::new(program).arg("--version").output().is_ok();
    if !root || !have("setpriv") || !have("curl") {
        return tool_tests::skip("needs root, setpriv and curl to connect as another user");
    }
    let fx = Fixture::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plain", "version": "1"}}});
    let post_from = |url: &str, uid: Option<u32>, token: Option<&str>, source: Option<&str>| {
        let mut command = match uid {
            Some(uid) => {
                let mut command = std::process::Command::new("setpriv");
                command.args([
                    format!("--reuid={uid}"),
                    format!("--regid={uid}"),
                    "--clear-groups".into(),
                    "curl".into(),
                ]);
                command
            }
            None => std::process::Command::new("curl"),
        };
        command.args(["-sS", "-m", "10", "-w", "\n%{http_code}", "-X", "POST", url]);
        if let Some(source) = source {
            command.args(["--interface", source]);
        }
        command.args([
            "-H",
            "content-type: application/json",
            "-H",
            "accept: application/json, text/event-stream",
        ]);
        if let Some(token) = token {
            command.args(["-H", &format!("authorization: Bearer {token}")]);
        }
        let out = command.args(["-d", &initialize.to_string()]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let post = |url: &str, uid: Option<u32>, token: Option<&str>| post_from(url, uid, token, None);
    let server = HttpServer::start(&fx, &[]);
    // From another address of this machine (routed over loopback all the same), too.
    let addresses =
        std::process::Command::new("hostname").arg("-I").output().map(|out| out.stdout).unwrap_or_default();
    let other =
        String::from_utf8_lossy(&addresses).split_whitespace().find(|a| !a.contains(':')).map(str::to_owned);
    if let Some(other) = other {
        let refused = post_from(&server.url, Some(65534), None, Some(&other));
        assert!(refused.ends_with("\n403"), "from {other}: {refused}");
    }
    let refused = post(&server.url, Some(65534), None);
    assert!(refused.ends_with("\n403"), "{refused}");
    assert!(
        refused.contains("serves only the processes of its own user (0) on this machine, and this connection is user 65534's"),
        "{refused}"
    );
    let served = post(&server.url, None, None);
    assert!(served.ends_with("\n200"), "{served}");
    assert_eq!(server.stop("TERM"), Some(0));

    let token_file = fx.dir.path().join("token");
    std::fs::write(&token_file, "shared-t0ken\n").unwrap();
    let server = HttpServer::start(&fx, &["--auth-token-file", token_file.to_str().unwrap()]);
    let served = post(&server.url, Some(65534), Some("shared-t0ken"));
    assert!(served.ends_with("\n200"), "{served}");
    assert!(post(&server.url, Some(65534), None).ends_with("\n401"));
    assert_eq!(server.stop("TERM"), Some(0));
}
