//! The network of sandboxed commands through the built binary: `--allow-host`, the settings
//! file's network rules and environment filter, the serve banner, and a host asked about
//! through an MCP client's elicitation. Everything stays on loopback: a local HTTP server, and
//! `localhost` allowed by name with 127.0.0.1 allowed by address.
#![cfg(target_os = "linux")]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{Fixture, TOOLS};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tools_std::tool_sandbox::Probe;

fn skip(reason: &str) {
    let thread = std::thread::current();
    let _ = writeln!(std::io::stderr(), "skipped {}: {reason}", thread.name().unwrap_or("a test"));
}

/// Whether the kernel can confine TCP to the proxy's port and `curl` is there; under CI the
/// kernel must.
fn ready() -> bool {
    let probe = Probe::get();
    if !(probe.landlock_abi.is_some_and(|abi| abi >= 4) && probe.seccomp) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must have Landlock ABI 4 and seccomp: {probe}"
        );
        skip(&format!("the kernel cannot confine TCP to a port ({probe})"));
        return false;
    }
    let curl = std::process::Command::new("curl").arg("--version").output().is_ok_and(|o| o.status.success());
    if !curl {
        skip("`curl` is not installed");
    }
    curl
}

/// A local HTTP server on 127.0.0.1 answering `hello`, counting its connections.
fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nhello\n");
            });
        }
    });
    (port, count)
}

fn output(run: &common::Run) -> String {
    run.json()["output"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn allow_host_lets_a_sandboxed_command_reach_the_host_and_nothing_else() {
    if !ready() {
        return;
    }
    let fx = Fixture::new();
    let (port, count) = server();
    let args = json!({"command": format!("curl -sS -f http://localhost:{port}/")}).to_string();
    let allowed =
        fx.run(&["call", "bash", &args, "--allow-host", "localhost", "--allow-host", "127.0.0.1"], None);
    assert_eq!(allowed.code, 0, "{}{}", allowed.stdout, allowed.stderr);
    assert_eq!(output(&allowed), "hello\n");
    assert_eq!(allowed.json()["metadata"]["sandbox"]["network"]["kind"], "proxy");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    // Without the flag nobody can answer for the host: refused, saying how to allow it.
    let refused = fx.run(&["call", "bash", &args], None);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    let text = output(&refused);
    assert!(
        text.contains(&format!(
            "[the network proxy refused localhost:{port} (plain HTTP): no rule allows `localhost`, and asking for \
             it was refused (connecting to localhost:{port} needs a person's approval, and nobody is here to answer)"
        )),
        "{text}"
    );
    assert!(text.contains("or pass `--allow-host localhost`"), "{text}");
    // Around the proxy, the kernel refuses.
    let direct = json!({"command": format!("curl -sS --noproxy '*' http://127.0.0.1:{port}/")}).to_string();
    let bypass =
        fx.run(&["call", "bash", &direct, "--allow-host", "localhost", "--allow-host", "127.0.0.1"], None);
    assert_eq!(bypass.code, 1, "{}", bypass.stdout);
    assert_eq!(count.load(Ordering::SeqCst), 1, "a connection got around the proxy: {}", bypass.stdout);
    // With the sandbox off, there is no proxy to allow hosts on.
    let off = fx.run(&["call", "bash", &args, "--sandbox", "off", "--allow-host", "localhost"], None);
    assert_eq!(off.code, 2, "{}", off.stderr);
    assert!(off.stderr.contains("--allow-host applies to sandboxed commands"), "{}", off.stderr);
    let bad = fx.run(&["call", "bash", &args, "--allow-host", "https://x.org"], None);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.starts_with("tools: --allow-host: `https://x.org` is not a host pattern"),
        "{}",
        bad.stderr
    );
}

#[test]
fn the_settings_network_rules_and_environment_apply_to_commands_and_mounted_servers() {
    if !ready() {
        return;
    }
    let fx = Fixture::new();
    let (port, _) = server();
    let settings = fx.dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({
            "permissions": {
                "allow": ["WebFetch(domain:localhost)", "mcp__inner__bash"],
                "deny": ["WebFetch(domain:denied.localhost)"]
            },
            "sandbox": {"enabled": true, "network": {"allowedAddresses": ["127.0.0.1"]}},
            "environment": {"inherit": ["EGRESS_KEEP"]}
        })
        .to_string(),
    )
    .unwrap();
    let settings = settings.to_str().unwrap();
    let command = format!(
        "curl -sS http://localhost:{port}/; curl -sS -f http://denied.localhost:{port}/; env | grep ^EGRESS_ | sort"
    );
    let args = json!({"command": command}).to_string();
    let mut call = fx.command(&["call", "bash", &args, "--settings", settings]);
    call.env("EGRESS_KEEP", "kept").env("EGRESS_SECRET", "sk-secret");
    let run = common::run(call, None);
    let text = output(&run);
    assert!(text.starts_with("hello\n"), "{text}");
    assert!(
        text.contains(&format!(
            "[the network proxy refused denied.localhost:{port} (plain HTTP): it is denied by `denied.localhost` in \
             `WebFetch(domain:denied.localhost)` of permissions.deny in {settings}"
        )),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "EGRESS_KEEP=kept"), "{text}");
    assert!(!text.contains("sk-secret"), "{text}");

    // A mounted stdio server inherits what the settings let through, and nothing else: it is
    // `tools serve` passing its whole environment on to its commands.
    let inner_settings = fx.dir.path().join("inner.json");
    std::fs::write(
        &inner_settings,
        json!({"environment": {"inheritAll": true}, "sandbox": {"enabled": true}}).to_string(),
    )
    .unwrap();
    let config = fx.dir.path().join("mcp.json");
    let ws = fx.ws();
    std::fs::write(
        &config,
        json!({"mcpServers": {"inner": {"command": TOOLS, "args": [
            "serve", "--root", ws.to_str().unwrap(), "--settings", inner_settings.to_str().unwrap()
        ]}}})
        .to_string(),
    )
    .unwrap();
    let args = json!({"command": "env | grep ^EGRESS_ | sort"}).to_string();
    let mut call = fx.command(&[
        "call",
        "inner__bash",
        &args,
        "--settings",
        settings,
        "--mcp-config",
        config.to_str().unwrap(),
    ]);
    call.env("EGRESS_KEEP", "kept").env("EGRESS_SECRET", "sk-secret");
    let run = common::run(call, None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(output(&run), "EGRESS_KEEP=kept\n");
}

#[test]
fn allow_local_binding_in_the_settings_lets_commands_listen() {
    if !ready() {
        return;
    }
    let fx = Fixture::new();
    // Listens on a port of 127.0.0.1 and connects to it.
    let command = "python3 -c \"
import socket
try:
    s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('listening')
    socket.create_connection(s.getsockname(), timeout=5); print('served')
except OSError as e:
    print('refused', e.errno)
\"";
    let args = json!({"command": command}).to_string();
    let mut outcomes = Vec::new();
    for allow in [false, true] {
        let settings = fx.dir.path().join(format!("binding-{allow}.json"));
        let file = json!({"sandbox": {"enabled": true, "network": {"allowLocalBinding": allow}}});
        std::fs::write(&settings, file.to_string()).unwrap();
        let run =
            common::run(fx.command(&["call", "bash", &args, "--settings", settings.to_str().unwrap()]), None);
        let layers = run.json()["metadata"]["sandbox"]["layers"].clone();
        outcomes.push((output(&run), layers));
    }
    assert_eq!(outcomes[0].0, "refused 13\n", "Landlock refuses the bind");
    // Allowed: in a network namespace of its own, the command may also reach its own server;
    // without one, only the proxy's port.
    let namespaced = outcomes[1].1.as_array().is_some_and(|l| l.contains(&json!("network-namespace")));
    assert_eq!(namespaced, Probe::get().network_namespace, "{:?}", outcomes[1].1);
    let expected = if namespaced { "listening\nserved\n" } else { "listening\nrefused 13\n" };
    assert_eq!(outcomes[1].0, expected);
}

/// A local HTTP server on 127.0.0.1 that keeps each request's `Host` and `Authorization`
/// headers and answers `seen`.
/// Each request's `Host` and `Authorization`, in order.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

fn header_server() -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let record = record.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let header = |name: &str| {
                    head.lines()
                        .find_map(|l| {
                            let (key, value) = l.split_once(':')?;
                            key.eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
                        })
                        .unwrap_or_default()
                };
                record.lock().unwrap().push((header("host"), header("authorization")));
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nseen\n");
            });
        }
    });
    (port, seen)
}

#[test]
fn a_secret_named_in_the_settings_reaches_only_its_host_and_commands_see_a_placeholder() {
    if !ready() {
        return;
    }
    let fx = Fixture::new();
    let (port, seen) = header_server();
    let settings = fx.dir.path().join("secrets.json");
    std::fs::write(
        &settings,
        json!({
            "permissions": {"allow": ["WebFetch(domain:localhost)"]},
            "sandbox": {"enabled": true, "network": {"allowedAddresses": ["127.0.0.1"], "secrets": {"EGRESS_TOKEN": ["http://localhost"]}}},
            "environment": {"inheritAll": true}
        })
        .to_string(),
    )
    .unwrap();
    // The same request to the secret's host, and to another host (the same server by address).
    let command = format!(
        "env | grep ^EGRESS_TOKEN=; for host in localhost 127.0.0.1; do \
         curl -sS -H \"Authorization: Bearer $EGRESS_TOKEN\" http://$host:{port}/; done"
    );
    let args = json!({"command": command}).to_string();
    let mut call = fx.command(&["call", "bash", &args, "--settings", settings.to_str().unwrap()]);
    call.env("EGRESS_TOKEN", "sk-real-secret");
    let run = common::run(call, None);
    let text = output(&run);
    assert!(!text.contains("sk-real-secret"), "the command saw the secret: {text}");
    let placeholder = text
        .lines()
        .find_map(|l| l.strip_prefix("EGRESS_TOKEN="))
        .unwrap_or_else(|| panic!("no placeholder in the command's environment: {text}"))
        .to_owned();
    assert!(placeholder.starts_with("egress-placeholder-EGRESS_TOKEN-"), "{placeholder}");
    assert!(text.ends_with("seen\nseen\n"), "{text}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (format!("localhost:{port}"), "Bearer sk-real-secret".to_owned()),
            (format!("127.0.0.1:{port}"), format!("Bearer {placeholder}")),
        ]
    );
}

#[test]
fn serve_says_what_the_network_allows_once_at_start() {
    let fx = Fixture::new();
    let mut command = fx.command(&["serve", "--allow-host", "crates.io", "--allow-host", "*.crates.io"]);
    command.stdin(std::process::Stdio::null());
    let run = common::run(command, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(lines[0].starts_with("tools: sandbox workspace-write"), "{}", run.stderr);
    assert_eq!(
        lines[1],
        "tools: network: off, except through a proxy per command, which allows crates.io, *.crates.io; other \
         hosts are asked about"
    );
}

/// A client whose user answers every question with `action`, recording the questions.
#[derive(Clone)]
struct User {
    action: ElicitationAction,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        let capabilities =
            ClientCapabilities::builder().enable_elicitation_with(ElicitationCapability::default()).build();
        // The last revision with server-to-client requests.
        let mut config = ClientConfig::new(capabilities, Implementation::new("asked-user", "1.0"));
        config.protocol_version = ProtocolVersion::V_2025_11_25;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        let mut result = ElicitResult::new(self.action.clone());
        if self.action == ElicitationAction::Accept {
            result.content = Some(json!({"allow": true}));
        }
        Ok(result)
    }
}

async fn serve(fx: &Fixture, user: &User) -> RunningService<RoleClient, User> {
    let (ws, data) = (fx.ws(), fx.dir.path().join("data"));
    // 127.0.0.1 is allowed by address (the local server's), `localhost` by no rule.
    let command = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.args(["serve", "--allow-host", "127.0.0.1"]).current_dir(&ws).env("XDG_DATA_HOME", &data);
    });
    user.clone().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize")
}

async fn bash(client: &RunningService<RoleClient, User>, command: &str) -> (bool, String) {
    let Value::Object(arguments) = json!({"command": command}) else { unreachable!() };
    let result = client
        .call_tool(CallToolRequestParams::new("bash").with_arguments(arguments))
        .await
        .expect("a result");
    let text = result.content.iter().filter_map(|block| block.as_text()).map(|t| t.text.as_str()).collect();
    (result.is_error == Some(true), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_host_is_asked_through_the_mcp_clients_elicitation() {
    if !ready() {
        return;
    }
    let fx = Fixture::new();
    let (port, count) = server();
    let command = format!("curl -sS -f http://localhost:{port}/");

    let user = User { action: ElicitationAction::Accept, asked: Arc::default() };
    let client = serve(&fx, &user).await;
    let (failed, text) = bash(&client, &command).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "hello\n");
    let asked = user.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0],
        format!(
            "Allow the tool `bash` to let the command `{command}` connect to `localhost` on port {port} (plain HTTP) \
             for the rest of its run; no network rule allows that host?\n\nAsked because no network rule allows \
             `localhost`; declining refuses only this host."
        )
    );
    client.cancel().await.unwrap();

    let user = User { action: ElicitationAction::Decline, asked: Arc::default() };
    let client = serve(&fx, &user).await;
    let (failed, text) = bash(&client, &command).await;
    assert!(failed, "{text}");
    assert!(
        text.contains("asking for it was refused (the user declined it (the network proxy asked them)"),
        "{text}"
    );
    assert_eq!(user.asked.lock().unwrap().len(), 1);
    assert_eq!(count.load(Ordering::SeqCst), 1, "the declined host was reached");
    client.cancel().await.unwrap();
}
