//! The egress proxy's readers of what a command sends it: the SOCKS5 greeting and request, and
//! the HTTP request head (`CONNECT` and absolute-form requests), through a proxy started in
//! process on loopback (`Egress::start`) and reached over TCP, as a command reaches it.
//!
//! The policy allows nothing and never asks, and no name is resolved. Half of the inputs start
//! with SOCKS5's version byte and a greeting and request built from the bytes (methods, command,
//! address type, IPv4 / IPv6 / name targets, lengths that lie, cut anywhere, trailing bytes); the
//! other half are HTTP-looking heads assembled from pieces (methods, targets in every form,
//! versions, header lines such as `Host`, `Upgrade: websocket`, `Content-Length`,
//! `Transfer-Encoding: chunked`, bare LF and CR, obs-fold, NULs, pipelined requests) or raw
//! bytes. Each input is written, the client's side is half-closed, and the answer read. Checks:
//!
//! - the proxy answers or closes within 5 s, and never panics;
//! - everything is refused: no HTTP answer is a success (`2xx`) or a protocol switch (`101`),
//!   and no SOCKS5 reply says "succeeded";
//! - no connection is ever made: a loopback listener whose address the inputs often name
//!   (`CONNECT 127.0.0.1:PORT`, a SOCKS5 request to it) never sees one;
//! - it keeps serving: every 64 inputs a well-formed HTTP request and a well-formed SOCKS5
//!   request are each answered with a refusal.
#![no_main]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use tools_std::tool_egress::{Egress, EgressPolicy, EgressProxy};

/// How long the proxy may take to answer or close.
const BOUND: Duration = Duration::from_secs(5);

struct Setup {
    proxy: EgressProxy,
    /// Never to be connected to.
    canary: TcpListener,
    canary_port: u16,
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
        let policy = EgressPolicy::new().never_ask(true).system_resolver(false);
        let proxy = runtime.block_on(Egress::new(policy, None).start()).expect("proxy");
        let canary = TcpListener::bind("127.0.0.1:0").expect("canary");
        canary.set_nonblocking(true).expect("nonblocking");
        let canary_port = canary.local_addr().expect("canary address").port();
        Setup { proxy, canary, canary_port, _runtime: runtime }
    })
}

fn socks(u: &mut Unstructured<'_>, canary: u16) -> Result<Vec<u8>> {
    let mut out = vec![5u8];
    let methods: Vec<u8> = if u.ratio(3, 4)? { vec![0] } else { u.arbitrary::<&[u8]>()?.to_vec() };
    let count = if u.ratio(7, 8)? { methods.len().min(255) as u8 } else { u.arbitrary()? };
    out.push(count);
    out.extend_from_slice(&methods[..methods.len().min(255)]);
    // The request.
    out.push(if u.ratio(7, 8)? { 5 } else { u.arbitrary()? });
    out.push(if u.ratio(3, 4)? { 1 } else { u.arbitrary()? });
    out.push(if u.ratio(7, 8)? { 0 } else { u.arbitrary()? });
    let port = match u.int_in_range(0..=3)? {
        0 | 1 => canary,
        2 => 443,
        _ => u.arbitrary()?,
    };
    match u.int_in_range(0..=4)? {
        0 => out.extend_from_slice(&[1, 127, 0, 0, 1]),
        1 => {
            out.push(4);
            out.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        }
        2 => {
            let name: &str =
                u.choose(&["localhost", "example.com", "127.0.0.1", "[::1]", "", "a.b.c.d.e"])?;
            let len = if u.ratio(7, 8)? { name.len() as u8 } else { u.arbitrary()? };
            out.push(3);
            out.push(len);
            out.extend_from_slice(name.as_bytes());
        }
        3 => {
            out.push(3);
            let name: &[u8] = u.arbitrary()?;
            out.push(name.len().min(255) as u8);
            out.extend_from_slice(&name[..name.len().min(255)]);
        }
        _ => out.push(u.arbitrary()?),
    }
    out.extend_from_slice(&port.to_be_bytes());
    if u.ratio(1, 4)? {
        let cut = u.int_in_range(1..=out.len())?;
        out.truncate(cut);
    }
    if u.ratio(1, 4)? {
        out.extend_from_slice(u.arbitrary::<&[u8]>()?);
    }
    Ok(out)
}

fn http(u: &mut Unstructured<'_>, canary: u16) -> Result<Vec<u8>> {
    if u.ratio(1, 5)? {
        return Ok(u.arbitrary::<&[u8]>()?.to_vec());
    }
    let loopback = format!("127.0.0.1:{canary}");
    let loopback6 = format!("[::1]:{canary}");
    let absolute = format!("http://127.0.0.1:{canary}/x");
    let named = format!("http://localhost:{canary}/");
    let mut out = String::new();
    for _ in 0..u.int_in_range(1..=2)? {
        let method =
            *u.choose(&["GET", "CONNECT", "HEAD", "OPTIONS", "POST", "PUT", "DELETE", "get", "G\0T", ""])?;
        let target: &str = match u.int_in_range(0..=13)? {
            0 => &loopback,
            1 => &loopback6,
            2 => &absolute,
            3 => &named,
            4 => "example.com:443",
            5 => "http://example.com/",
            6 => "https://example.com/",
            7 => "*",
            8 => "/",
            9 => "example.com",
            10 => "http://[::ffff:127.0.0.1]:80/",
            11 => "http://user:pw@example.com/",
            12 => "",
            _ => "http://0x7f000001/",
        };
        let version = *u.choose(&["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/0.9", "HTTP/1.1 x", ""])?;
        let end = *u.choose(&["\r\n", "\r\n", "\n", "\r"])?;
        out.push_str(&format!("{method} {target} {version}{end}"));
        for _ in 0..u.int_in_range(0..=6)? {
            let header = match u.int_in_range(0..=13)? {
                0 => format!("Host: {loopback}"),
                1 => "Host: example.com".to_owned(),
                2 => "Upgrade: websocket".to_owned(),
                3 => "Connection: Upgrade".to_owned(),
                4 => "Connection: close".to_owned(),
                5 => format!("Content-Length: {}", u.int_in_range(0..=64u32)?),
                6 => "Content-Length: 1, 2".to_owned(),
                7 => "Transfer-Encoding: chunked".to_owned(),
                8 => "Proxy-Authorization: Basic dXNlcjpwdw==".to_owned(),
                9 => "Expect: 100-continue".to_owned(),
                10 => " folded".to_owned(),
                11 => "X: \0\u{7f}é".to_owned(),
                12 => ":".to_owned(),
                _ => u.arbitrary::<String>()?,
            };
            out.push_str(&header);
            out.push_str(end);
        }
        out.push_str(end);
        if u.ratio(1, 3)? {
            out.push_str(u.choose(&[
                "0\r\n\r\n",
                "5\r\nhello\r\n0\r\n\r\n",
                "ffffffffffffffff\r\n",
                "body",
            ])?);
        }
    }
    let mut bytes = out.into_bytes();
    if u.ratio(1, 6)? {
        let cut = u.int_in_range(0..=bytes.len())?;
        bytes.truncate(cut);
    }
    Ok(bytes)
}

/// Sends `input` and returns what came back before the proxy closed, or, with `enough`, as soon
/// as that says so (the client then keeps its side open); panics past the bound.
fn exchange(addr: SocketAddr, input: &[u8], enough: Option<fn(&[u8]) -> bool>) -> Vec<u8> {
    let mut stream = TcpStream::connect_timeout(&addr, BOUND).expect("the proxy accepts");
    let _ = stream.set_nodelay(true);
    let start = Instant::now();
    stream.set_write_timeout(Some(BOUND)).expect("timeout");
    // The proxy may close before reading everything: a failed write is an answer too.
    let _ = stream.write_all(input);
    if enough.is_none() {
        let _ = stream.shutdown(Shutdown::Write);
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if enough.is_some_and(|enough| enough(&answer)) {
            return answer;
        }
        let left = BOUND.checked_sub(start.elapsed()).unwrap_or_default();
        assert!(!left.is_zero(), "no answer or close within {BOUND:?} for {input:?}; so far {answer:?}");
        stream.set_read_timeout(Some(left)).expect("timeout");
        match stream.read(&mut buf) {
            Ok(0) => return answer,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("no answer or close within {BOUND:?} for {input:?}; so far {answer:?}")
            }
            // Reset: closed.
            Err(_) => return answer,
        }
    }
}

fn check_socks(input: &[u8], answer: &[u8]) {
    // The method selection ([5, 0] or [5, 0xff]), then at most one reply of 10 or 22 bytes.
    assert!(answer.len() <= 2 + 22, "a long SOCKS5 answer {answer:?} to {input:?}");
    if answer.len() >= 4 && answer[..2] == [5, 0] {
        assert_eq!(answer[2], 5, "reply version in {answer:?} to {input:?}");
        assert_ne!(answer[3], 0, "SOCKS5 request succeeded: {answer:?} to {input:?}");
    }
}

fn check_http(input: &[u8], answer: &[u8]) {
    let mut rest = answer;
    while !rest.is_empty() {
        let text = String::from_utf8_lossy(rest);
        assert!(text.starts_with("HTTP/1."), "not an HTTP answer: {text:?} to {input:?}");
        let status: u16 = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            panic!("no status in {text:?} to {input:?}");
        });
        assert!(!(200..300).contains(&status) && status != 101, "{status} to {input:?}: {text:?}");
        // The next pipelined answer, when the length says where it is.
        let Some(head_end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else { break };
        let head = String::from_utf8_lossy(&rest[..head_end]).to_ascii_lowercase();
        let Some(length) = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
        else {
            break;
        };
        let next = head_end + 4 + length;
        if next > rest.len() {
            break;
        }
        rest = &rest[next..];
    }
}

fn check_canary(s: &Setup, input: &[u8]) {
    match s.canary.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the proxy connected to loopback ({other:?}) for {input:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    static INPUTS: AtomicU64 = AtomicU64::new(0);
    let s = setup();
    let addr = s.proxy.addr();
    let is_socks: bool = u.arbitrary()?;
    let input = if is_socks { socks(u, s.canary_port)? } else { http(u, s.canary_port)? };
    let answer = exchange(addr, &input, None);
    if input.first() == Some(&5) {
        check_socks(&input, &answer);
    } else if input.first() != Some(&4) {
        check_http(&input, &answer);
    }
    check_canary(s, &input);
    let _ = s.proxy.drain_refusals();
    if INPUTS.fetch_add(1, Ordering::Relaxed) % 64 == 0 {
        let request = b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n";
        // Not half-closed: hyper drops a request whose client half-closed before the answer.
        let answer = exchange(addr, request, Some(|a| a.windows(4).any(|w| w == b"\r\n\r\n")));
        assert!(!answer.is_empty(), "no answer to a well-formed request");
        check_http(request, &answer);
        let request = [
            5, 1, 0, 5, 1, 0, 3, 11, b'e', b'x', b'a', b'm', b'p', b'l', b'e', b'.', b'c', b'o', b'm', 0, 80,
        ];
        let answer = exchange(addr, &request, Some(|a| a.len() >= 12));
        assert!(answer.len() >= 4, "no reply to a well-formed SOCKS5 request: {answer:?}");
        check_socks(&request, &answer);
        let _ = s.proxy.drain_refusals();
    }
    Ok(())
}
