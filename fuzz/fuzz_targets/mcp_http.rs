//! MCP's Streamable HTTP transport as served (`McpServer::serve_http`): the inbound checks in
//! front of the server (path, `Host` and `Origin` against DNS rebinding, the bearer token, the
//! body's length and read), the message checks (`inbound::check`: JSON-RPC shape, batches,
//! sizes), the session and protocol-version headers, and rmcp's handling behind them.
//!
//! Two servers run in process on loopback, one with sessions and one stateless, both with a
//! bearer token and one harmless tool (`echo`). Each input is a request assembled from pieces,
//! or raw bytes: the method (`POST` mostly), the path, header lines (`Host` and `Origin` of this
//! machine or another, `Authorization` right, wrong or malformed, `Content-Type`, `Accept`,
//! `Mcp-Session-Id`, `MCP-Protocol-Version`, `Content-Length` true or false,
//! `Transfer-Encoding: chunked`) and a body (JSON-RPC requests, notifications, responses and
//! batches with real method names and params, or raw text), sometimes cut. Checks:
//!
//! - no panic (a panic in a server task aborts the process: libFuzzer's panic hook);
//! - a request whose head is whole is answered with an HTTP status within 10 s, and a `2xx`
//!   only when the token was sent, the path is `/mcp` and `Host` is this machine's;
//! - the servers keep serving: every 64 inputs a well-formed `initialize` is answered `200` by
//!   the stateless server (the other may say `503` while its sessions are full).
#![no_main]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tool_runtime::mcp_server::{HttpOptions, McpServer};
use tool_runtime::spec::FnTool;
use tool_runtime::{Dispatcher, Registry, ToolOutput, ToolSpec};

const TOKEN: &str = "fuzz-token-5d1c";
/// How long a server may take to answer.
const BOUND: Duration = Duration::from_secs(10);

struct Setup {
    /// With sessions, and stateless.
    servers: [SocketAddr; 2],
    _runtime: tokio::runtime::Runtime,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let servers = [false, true].map(|stateless| {
            runtime.block_on(async {
                let spec = ToolSpec::new(
                    "echo",
                    "Echoes its arguments.",
                    json!({"type": "object", "properties": {"text": {"type": "string"}}}),
                );
                let echo =
                    FnTool::new(spec, |_ctx, args| async move { Ok(ToolOutput::text(args.to_string())) });
                let registry = Registry::builder().tool(echo).build().expect("registry");
                let server = McpServer::new(Dispatcher::builder(registry)).expect("server");
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
                let addr = listener.local_addr().expect("address");
                let mut options = HttpOptions::new()
                    .bearer_token(TOKEN)
                    .max_sessions(16)
                    .session_idle_timeout(Duration::from_secs(2))
                    .body_read_timeout(Duration::from_secs(2));
                if stateless {
                    options = options.stateless();
                }
                tokio::spawn(async move {
                    server.serve_http(listener, options).await.expect("serve_http");
                });
                addr
            })
        });
        Setup { servers, _runtime: runtime }
    })
}

const METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "notifications/cancelled",
    "tasks/get",
    "server/discover",
    "nope",
    "",
];

fn message(u: &mut Unstructured<'_>) -> Result<serde_json::Value> {
    let method = *u.choose(METHODS)?;
    let params = match method {
        "initialize" => {
            json!({"protocolVersion": *u.choose(&["2025-06-18", "2025-03-26", "2024-11-05", "1999"])?,
                               "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}})
        }
        "tools/call" => {
            json!({"name": *u.choose(&["echo", "nope", ""])?, "arguments": {"text": u.arbitrary::<String>()?}})
        }
        "notifications/cancelled" => json!({"requestId": u.int_in_range(0..=3u8)?}),
        "resources/read" => json!({"uri": u.arbitrary::<String>()?}),
        _ if u.arbitrary()? => json!({"_meta": {"progressToken": 1}}),
        _ => json!(u.arbitrary::<String>()?),
    };
    let mut message =
        json!({"jsonrpc": *u.choose(&["2.0", "2.0", "2.0", "1.0"])?, "method": method, "params": params});
    match u.int_in_range(0..=5)? {
        0 => {}
        1 => message["id"] = json!(u.arbitrary::<String>()?),
        2 => message["id"] = json!(null),
        _ => message["id"] = json!(u.int_in_range(0..=1000u32)?),
    }
    if u.ratio(1, 10)? {
        message = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    }
    Ok(message)
}

/// The request, whether it must be refused, and whether its head is surely whole and well-formed.
fn request(u: &mut Unstructured<'_>, addr: SocketAddr) -> Result<(Vec<u8>, bool, bool)> {
    if u.ratio(1, 8)? {
        // Raw bytes: no claim about the answer beyond its being one.
        return Ok((u.arbitrary::<&[u8]>()?.to_vec(), false, false));
    }
    let body: Vec<u8> = match u.int_in_range(0..=5)? {
        0 => u.arbitrary::<&[u8]>()?.to_vec(),
        1 => {
            let mut batch = Vec::new();
            for _ in 0..u.int_in_range(0..=3)? {
                batch.push(message(u)?);
            }
            serde_json::to_vec(&batch).expect("json")
        }
        _ => serde_json::to_vec(&message(u)?).expect("json"),
    };
    let method = *u.choose(&["POST", "POST", "POST", "POST", "GET", "DELETE", "OPTIONS", "PUT"])?;
    let path =
        *u.choose(&["/mcp", "/mcp", "/mcp", "/mcp?x=1", "/", "/mcp/", "//mcp", "*", "http://127.0.0.1/mcp"])?;
    let end = *u.choose(&["\r\n", "\r\n", "\r\n", "\n"])?;
    let port = addr.port();
    let mut head = format!("{method} {path} HTTP/1.1{end}");
    let path_ok = matches!(path, "/mcp" | "/mcp?x=1" | "http://127.0.0.1/mcp");
    let mut foreign = false;
    let mut arbitrary_lines = false;
    let host = match u.int_in_range(0..=7)? {
        0..=2 => format!("127.0.0.1:{port}"),
        3 => format!("localhost:{port}"),
        4 => format!("[::1]:{port}"),
        5 => "evil.example".to_owned(),
        6 => String::new(),
        _ => {
            arbitrary_lines = true;
            u.arbitrary::<String>()?
        }
    };
    if !host.is_empty() || u.arbitrary()? {
        head.push_str(&format!("Host: {host}{end}"));
    }
    foreign |= host == "evil.example";
    let mut length_written = false;
    for _ in 0..u.int_in_range(0..=7)? {
        let line = match u.int_in_range(0..=17)? {
            0..=3 => format!("Authorization: Bearer {TOKEN}"),
            4 => "Authorization: Bearer wrong".to_owned(),
            5 => "Authorization: bearer  ".to_owned(),
            6 => format!("Origin: http://localhost:{port}"),
            7 => {
                foreign = true;
                "Origin: http://evil.example".to_owned()
            }
            8 => "Content-Type: application/json".to_owned(),
            9 => "Content-Type: text/plain; charset=utf-8".to_owned(),
            10 => "Accept: application/json, text/event-stream".to_owned(),
            11 => "Accept: text/html".to_owned(),
            12 => format!("Mcp-Session-Id: {}", u.arbitrary::<&str>()?),
            13 => format!("MCP-Protocol-Version: {}", u.choose(&["2025-06-18", "2026-07-28", "x"])?),
            14 => {
                // Usually not the body's length: the server waits for the rest, or reads a second request.
                length_written = true;
                arbitrary_lines = true;
                format!("Content-Length: {}", u.int_in_range(0..=4096u32)?)
            }
            15 => {
                // The body is not chunked: hyper may close on the framing error.
                arbitrary_lines = true;
                "Transfer-Encoding: chunked".to_owned()
            }
            16 => "Expect: 100-continue".to_owned(),
            _ => {
                arbitrary_lines = true;
                u.arbitrary::<String>()?
            }
        };
        head.push_str(&line);
        head.push_str(end);
    }
    if !length_written {
        head.push_str(&format!("Content-Length: {}{end}", body.len()));
    }
    head.push_str(end);
    let mut bytes = head.into_bytes();
    let whole = bytes.len();
    bytes.extend_from_slice(&body);
    let mut cut = false;
    if u.ratio(1, 10)? {
        bytes.truncate(u.int_in_range(0..=bytes.len())?);
        cut = bytes.len() < whole;
    }
    let token = bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes());
    // Only what surely stops a request: no token, another path, a foreign `Host` or `Origin`
    // (unless a fuzzed header line could have said something else too).
    let refused = !token || !path_ok || foreign && !arbitrary_lines;
    Ok((bytes, refused, !cut && !arbitrary_lines))
}

/// Sends `input`; returns the answer's head (up to the end of its headers, or what came before
/// the server closed). Panics past the bound. A request that is not `whole` is followed by a
/// half-close, so that the server sees its end; a whole one is not, since hyper drops the answer
/// to a request whose client half-closed right after it.
fn exchange(addr: SocketAddr, input: &[u8], whole: bool) -> Vec<u8> {
    let mut stream = TcpStream::connect_timeout(&addr, BOUND).expect("the server accepts");
    let _ = stream.set_nodelay(true);
    let start = Instant::now();
    stream.set_write_timeout(Some(BOUND)).expect("timeout");
    let _ = stream.write_all(input);
    if !whole {
        let _ = stream.shutdown(Shutdown::Write);
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if answer.windows(4).any(|w| w == b"\r\n\r\n") {
            return answer;
        }
        let left = BOUND.checked_sub(start.elapsed()).unwrap_or_default();
        assert!(!left.is_zero(), "no answer within {BOUND:?} for {:?}", String::from_utf8_lossy(input));
        stream.set_read_timeout(Some(left)).expect("timeout");
        match stream.read(&mut buf) {
            Ok(0) => return answer,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("no answer within {BOUND:?} for {:?}", String::from_utf8_lossy(input))
            }
            Err(_) => return answer,
        }
    }
}

fn status(answer: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(answer.get(..12)?).ok()?;
    text.strip_prefix("HTTP/1.1 ")?.parse().ok()
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    static INPUTS: AtomicU64 = AtomicU64::new(0);
    let s = setup();
    let addr = s.servers[usize::from(u.arbitrary::<bool>()?)];
    let (input, refused, whole) = request(u, addr)?;
    let answer = exchange(addr, &input, whole);
    let show = || format!("{:?} to {:?}", String::from_utf8_lossy(&answer), String::from_utf8_lossy(&input));
    match status(&answer) {
        Some(code) => assert!(!(refused && (200..300).contains(&code)), "{code}: {}", show()),
        None => assert!(!whole || answer.is_empty() && input.is_empty(), "no status: {}", show()),
    }
    if INPUTS.fetch_add(1, Ordering::Relaxed) % 64 == 0 {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}})
        .to_string();
        for (i, addr) in s.servers.iter().enumerate() {
            let request = format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                addr.port(),
                body.len()
            );
            let answer = exchange(*addr, request.as_bytes(), true);
            let code = status(&answer);
            let expected: &[u16] = if i == 1 { &[200] } else { &[200, 503] };
            assert!(
                code.is_some_and(|c| expected.contains(&c)),
                "initialize: {:?}",
                String::from_utf8_lossy(&answer)
            );
        }
    }
    Ok(())
}
