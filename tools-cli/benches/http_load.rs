//! Load test of `tools serve --http`: N concurrent clients (rmcp's Streamable HTTP client, one
//! session each) x M `read` calls, for R rounds. Prints throughput, p50 and p99 latency per
//! round and the server's resident memory after each, and fails unless every call got exactly
//! its own answer.
//!
//! `cargo bench -p tools-cli --bench http_load -- [--clients N] [--calls M] [--rounds R]`
//! (defaults 32 x 200 x 5). Each call reads one line of its client's file (`offset` = the
//! call's number), so an answer that belonged to another request would show.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

const TOOLS: &str = env!("CARGO_BIN_EXE_tools");
const CALL_LIMIT: Duration = Duration::from_secs(60);

struct Settings {
    clients: usize,
    calls: usize,
    rounds: usize,
}

fn settings() -> Settings {
    let mut settings = Settings { clients: 32, calls: 200, rounds: 5 };
    let args: Vec<String> = std::env::args().collect();
    for pair in args.windows(2) {
        let value = || pair[1].parse::<usize>().unwrap_or_else(|_| panic!("{} needs a number", pair[0]));
        match pair[0].as_str() {
            "--clients" => settings.clients = value().max(1),
            "--calls" => settings.calls = value().max(1),
            "--rounds" => settings.rounds = value().max(1),
            _ => {}
        }
    }
    settings
}

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(workspace: &std::path::Path) -> Server {
    let mut child = Command::new(TOOLS)
        .args(["serve", "--http", "127.0.0.1:0", "--root"])
        .arg(workspace)
        .env("XDG_DATA_HOME", workspace.join(".data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn tools serve --http");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("the address line");
    let url = line.trim().strip_prefix("tools serve: listening on ").expect("the address line").to_owned();
    Server { child, url }
}

/// Resident memory of `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

/// One client's round: its latencies, or what went wrong.
async fn client_round(url: String, client: usize, calls: usize) -> Result<Vec<Duration>, String> {
    let service: rmcp::service::RunningService<RoleClient, ()> = ()
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .map_err(|e| format!("client {client}: initialize: {e}"))?;
    let mut latencies = Vec::with_capacity(calls);
    for call in 0..calls {
        let arguments = json!({"path": format!("c{client}.txt"), "offset": call + 1, "limit": 1});
        let serde_json::Value::Object(arguments) = arguments else { unreachable!() };
        let request = CallToolRequestParams::new("read").with_arguments(arguments);
        let started = Instant::now();
        let result = tokio::time::timeout(CALL_LIMIT, service.call_tool(request))
            .await
            .map_err(|_| format!("client {client} call {call}: no answer within {CALL_LIMIT:?}"))?
            .map_err(|e| format!("client {client} call {call}: {e}"))?;
        latencies.push(started.elapsed());
        let text =
            serde_json::to_value(&result).unwrap()["content"][0]["text"].as_str().unwrap_or("").to_owned();
        let expected = format!("<c{client}-l{call}>");
        if result.is_error == Some(true) || !text.contains(&expected) {
            return Err(format!("client {client} call {call}: expected {expected}, got {text:?}"));
        }
    }
    service.cancel().await.map_err(|e| format!("client {client}: close: {e}"))?;
    Ok(latencies)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    // reqwest is built with TLS (for `tools`' `https://` mounts) but no crypto provider of its
    // own: rmcp's default client needs a process-wide one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Settings { clients, calls, rounds } = settings();
    let workspace = std::env::temp_dir().join(format!("tools-http-load-{}", std::process::id()));
    std::fs::create_dir_all(&workspace).unwrap();
    for client in 0..clients {
        let lines: String = (0..calls).map(|call| format!("<c{client}-l{call}>\n")).collect();
        std::fs::write(workspace.join(format!("c{client}.txt")), lines).unwrap();
    }
    let server = start(&workspace);
    let pid = server.child.id();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    println!(
        "tools serve --http: {clients} clients x {calls} calls x {rounds} rounds (one session per client and round)"
    );
    println!("round  calls  seconds  calls/s  p50 ms  p99 ms  server RSS KiB");
    println!("-      -      -        -        -       -       {} (before)", rss_kib(pid));
    let mut failures = Vec::new();
    for round in 1..=rounds {
        let started = Instant::now();
        let outcomes = runtime.block_on(async {
            let tasks: Vec<_> = (0..clients)
                .map(|client| tokio::spawn(client_round(server.url.clone(), client, calls)))
                .collect();
            let mut outcomes = Vec::new();
            for task in tasks {
                outcomes.push(task.await.unwrap_or_else(|e| Err(format!("client task: {e}"))));
            }
            outcomes
        });
        let elapsed = started.elapsed();
        let mut latencies: Vec<Duration> = Vec::new();
        for outcome in outcomes {
            match outcome {
                Ok(mut client) => latencies.append(&mut client),
                Err(error) => failures.push(format!("round {round}: {error}")),
            }
        }
        latencies.sort_unstable();
        let answered = latencies.len();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{round:<6} {answered:<6} {:<8.2} {:<8.0} {:<7.2} {:<7.2} {}",
            elapsed.as_secs_f64(),
            answered as f64 / elapsed.as_secs_f64(),
            ms(percentile(&latencies, 0.50)),
            ms(percentile(&latencies, 0.99)),
            rss_kib(pid),
        );
        if answered != clients * calls {
            failures.push(format!("round {round}: {answered} of {} calls answered", clients * calls));
        }
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&workspace);
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("{failure}");
        }
        std::process::exit(1);
    }
    println!("every call got exactly its own answer");
}
