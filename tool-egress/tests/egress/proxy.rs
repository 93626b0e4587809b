//! The proxy against real clients (`curl`, Python's `urllib`) and hand-written ones, all on
//! loopback: fake names are mapped to 127.0.0.1 with the proxy's resolver override.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_egress::{AskAnswer, EgressPolicy, EgressProxy, Protocol, Reason, asker};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A local HTTP server answering `<method> <path> host=<Host header>` and counting connections.
struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

async fn server() -> Server {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let Some(head) = read_head(&mut stream).await else { return };
                let mut words = head.split_whitespace();
                let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                let host = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("host:").map(|h| h.trim().to_owned()))
                    .unwrap_or_default();
                let body = format!("{method} {path} host={host}");
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    Server { addr, connections }
}

/// Names mapped to loopback, loopback allowed by address, `allowed.test` allowed by name.
fn policy() -> EgressPolicy {
    EgressPolicy::new()
        .resolve("allowed.test", [LOOPBACK])
        .resolve("evil.test", [LOOPBACK])
        .resolve("asked.test", [LOOPBACK])
        .resolve("rebind.test", [LOOPBACK])
        .allow_host("allowed.test", "the test's allowedDomains")
        .unwrap()
        .allow_host("rebind.test", "the test's allowedDomains")
        .unwrap()
        .deny_host("evil.test", "sandbox.network.deniedDomains in test-settings.json")
        .unwrap()
}

fn with_loopback(policy: EgressPolicy) -> EgressPolicy {
    policy.allow_address("127.0.0.1", "the test").unwrap()
}

/// Sends `request` to the proxy and reads the whole answer (the connection must close within 20
/// seconds).
async fn raw(proxy: &EgressProxy, request: &str) -> String {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(20), stream.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the connection stayed open after: {}", String::from_utf8_lossy(&out));
    String::from_utf8_lossy(&out).into_owned()
}

/// A proxy with the test policy, its hosts resolved to loopback.
async fn loopback_proxy() -> EgressProxy {
    EgressProxy::start(with_loopback(policy()), None).await.unwrap()
}

/// `program` with only `PATH` and the proxy's variables in its environment, as a sandboxed
/// command is given them.
fn proxied(program: &str, proxy: &EgressProxy) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).envs(proxy.env());
    command
}

fn get(host: &str, port: u16) -> String {
    format!("GET http://{host}:{port}/page HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n")
}

fn have(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Runs `curl` with the proxy's environment; returns (exit code, stdout).
async fn curl(proxy: &EgressProxy, args: &[&str]) -> (i32, String) {
    let out = proxied("curl", proxy).args(["-sS", "--max-time", "20"]).args(args).output().await.unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn an_allowed_host_is_reached_by_curl_through_every_protocol() {
    if !have("curl") {
        eprintln!("curl is not installed; skipping");
        return;
    }
    let server = server().await;
    let proxy = loopback_proxy().await;
    let url = format!("http://allowed.test:{}/page", server.addr.port());
    // Plain HTTP through `http_proxy`.
    let (code, body) = curl(&proxy, &[&url]).await;
    assert_eq!(
        (code, body.as_str()),
        (0, format!("GET /page host=allowed.test:{}", server.addr.port()).as_str())
    );
    // CONNECT, as for HTTPS.
    let (code, body) = curl(&proxy, &["--proxytunnel", &url]).await;
    assert_eq!(code, 0, "{body}");
    assert!(body.starts_with("GET /page host=allowed.test"), "{body}");
    // SOCKS5 with the name resolved by the proxy.
    let socks = format!("socks5h://{}", proxy.addr());
    let (code, body) = curl(&proxy, &["--proxy", &socks, &url]).await;
    assert_eq!(code, 0, "{body}");
    assert!(body.starts_with("GET /page host=allowed.test"), "{body}");
    assert_eq!(proxy.drain_refusals(), []);
}

#[tokio::test]
async fn an_allowed_host_is_reached_by_python_urllib() {
    if !have("python3") {
        eprintln!("python3 is not installed; skipping");
        return;
    }
    let server = server().await;
    let proxy = loopback_proxy().await;
    let script = format!(
        "import urllib.request; print(urllib.request.urlopen('http://allowed.test:{}/py', timeout=20).read().decode())",
        server.addr.port()
    );
    let out = proxied("python3", &proxy).args(["-c", &script]).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("GET /py host=allowed.test:{}", server.addr.port())
    );
}

#[tokio::test]
async fn a_denied_host_is_refused_with_the_rule_in_the_answer_and_the_log() {
    let server = server().await;
    let proxy = loopback_proxy().await;
    let port = server.addr.port();
    // A trailing dot and upper case name the same host.
    for host in ["evil.test", "EVIL.test."] {
        let answer = raw(&proxy, &get(host, port)).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(
            answer.contains(&format!(
                "the network proxy refused evil.test:{port} (plain HTTP): it is denied by `evil.test` in \
                 sandbox.network.deniedDomains in test-settings.json"
            )),
            "{answer}"
        );
    }
    let answer =
        raw(&proxy, &format!("CONNECT evil.test:{port} HTTP/1.1\r\nHost: evil.test:{port}\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let refusals = proxy.drain_refusals();
    assert_eq!(refusals.len(), 3);
    assert_eq!(refusals[2].protocol, Protocol::Connect);
    assert!(matches!(&refusals[0].reason, Reason::Denied { pattern, .. } if pattern == "evil.test"));
    assert_eq!(proxy.drain_refusals(), [], "draining empties the log");
    assert_eq!(server.connections.load(Ordering::SeqCst), 0, "nothing reached the server");
    if have("curl") {
        // A client that retries shows "403" three times; the note says why, once.
        let url = format!("http://evil.test:{port}/");
        let (code, _) =
            curl(&proxy, &["--fail", "--retry", "2", "--retry-all-errors", "--retry-delay", "0", &url]).await;
        assert_ne!(code, 0);
        assert_eq!(
            proxy.refusal_note().unwrap(),
            format!(
                "[the network proxy refused evil.test:{port} (plain HTTP): it is denied by `evil.test` in \
                 sandbox.network.deniedDomains in test-settings.json; a denied host stays refused even when \
                 another rule allows it, so only removing that entry lets it through]"
            )
        );
        assert_eq!(proxy.refusal_note(), None);
    }
}

/// An asker that answers `answer` about `host` and denies every other (plain HTTP only), and
/// the count of its questions.
fn counting_asker(host: &'static str, answer: AskAnswer) -> (tool_egress::Asker, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let ask = asker(move |request| {
        let (count, answer) = (count.clone(), answer.clone());
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            assert_eq!(request.protocol, Protocol::Http);
            if request.host == host { answer } else { AskAnswer::Deny }
        }
    });
    (ask, asked)
}

#[tokio::test]
async fn an_unknown_host_is_asked_about_once_per_session() {
    let server = server().await;
    let (ask, asked) = counting_asker("asked.test", AskAnswer::AllowForSession);
    let proxy = EgressProxy::start(with_loopback(policy().resolve("declined.test", [LOOPBACK])), Some(ask))
        .await
        .unwrap();
    let port = server.addr.port();
    for _ in 0..2 {
        let answer = raw(&proxy, &get("asked.test", port)).await;
        assert!(answer.ends_with(&format!("GET /page host=asked.test:{port}")), "{answer}");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1, "allowed for the session: asked once");
    let answer = raw(&proxy, &get("declined.test", port)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("no rule allows `declined.test` and the user declined it when asked"),
        "{answer}"
    );
    assert!(answer.contains("--allow-host declined.test"), "{answer}");
    // Denied hosts are never asked about; allowed ones neither.
    raw(&proxy, &get("evil.test", port)).await;
    raw(&proxy, &get("allowed.test", port)).await;
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

/// An ask rule asks about a host that an allow rule (or an allowed address) also names, never-ask
/// or not, and without an asker refuses it naming the rule.
#[tokio::test]
async fn an_ask_rule_asks_whatever_allows_the_host() {
    let server = server().await;
    let port = server.addr.port();
    let (ask, asked) = counting_asker("allowed.test", AskAnswer::AllowOnce);
    let rules = || {
        with_loopback(policy())
            .ask_host("allowed.test", "`WebFetch(domain:allowed.test)` of permissions.ask in s.json")
            .unwrap()
            .ask_host("127.0.0.1", "`WebFetch(domain:127.0.0.1)` of permissions.ask in s.json")
            .unwrap()
            .never_ask(true)
    };
    let proxy = EgressProxy::start(rules(), Some(ask)).await.unwrap();
    let answer = raw(&proxy, &get("allowed.test", port)).await;
    assert!(answer.ends_with(&format!("GET /page host=allowed.test:{port}")), "{answer}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let answer = raw(&proxy, &get("127.0.0.1", port)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains(
            "`127.0.0.1` in `WebFetch(domain:127.0.0.1)` of permissions.ask in s.json says to ask before reaching \
             `127.0.0.1`, and the user declined it"
        ),
        "{answer}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    // A denied host stays refused unasked.
    raw(&proxy, &get("evil.test", port)).await;
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let proxy = EgressProxy::start(rules(), None).await.unwrap();
    let answer = raw(&proxy, &get("allowed.test", port)).await;
    assert!(
        answer.contains("says to ask before reaching `allowed.test`, and nobody is here to answer"),
        "{answer}"
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 1, "only the answered ask reached the server");
}

#[tokio::test]
async fn without_an_asker_an_unknown_host_is_refused_naming_how_to_allow_it() {
    let proxy = EgressProxy::start(policy().resolve("other.test", [LOOPBACK]), None).await.unwrap();
    let answer = raw(&proxy, &get("other.test", 80)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains(
            "no rule allows `other.test`; to allow it, add it to `sandbox.network.allowedDomains` in the settings \
             (or a `WebFetch(domain:other.test)` allow rule), or pass `--allow-host other.test`"
        ),
        "{answer}"
    );
}

#[tokio::test]
async fn a_name_resolving_to_a_private_address_is_refused_after_resolution() {
    let server = server().await;
    // `rebind.test` is allowed by name, but resolves to 127.0.0.1, which no address rule allows.
    let proxy = EgressProxy::start(policy(), None).await.unwrap();
    let port = server.addr.port();
    let answer = raw(&proxy, &get("rebind.test", port)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("`rebind.test` resolves to 127.0.0.1, a loopback (127.0.0.0/8) address"),
        "{answer}"
    );
    let answer = raw(&proxy, &format!("CONNECT rebind.test:{port} HTTP/1.1\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert_eq!(server.connections.load(Ordering::SeqCst), 0, "nothing reached the server");
    // Metadata addresses given literally, even with every name allowed.
    let open = EgressProxy::start(EgressPolicy::new().allow_host("*", "test").unwrap(), None).await.unwrap();
    for target in [
        "169.254.169.254:80",
        "[fd00:ec2::254]:80",
        "100.100.100.200:80",
        "[::ffff:127.0.0.1]:80",
        "0.0.0.0:80",
    ] {
        let answer = raw(&open, &format!("CONNECT {target} HTTP/1.1\r\n\r\n")).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{target}: {answer}");
        assert!(answer.contains("which is reached only when allowed by address"), "{target}: {answer}");
    }
    // With the address allowed, the same name goes through.
    let allowed = loopback_proxy().await;
    let answer = raw(&allowed, &get("rebind.test", port)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn limited_mode_allows_only_reading_methods_and_no_tunnels() {
    let server = server().await;
    let proxy = EgressProxy::start(with_loopback(policy()).limited(true), None).await.unwrap();
    let port = server.addr.port();
    let post = format!(
        "POST http://allowed.test:{port}/form HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
    );
    let answer = raw(&proxy, &post).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("plain HTTP allows only GET, HEAD and OPTIONS, and this request was POST"),
        "{answer}"
    );
    for method in ["GET", "HEAD", "OPTIONS"] {
        let request =
            format!("{method} http://allowed.test:{port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let answer = raw(&proxy, &request).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{method}: {answer}");
    }
    let answer = raw(&proxy, &format!("CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("a tunnel (HTTPS through CONNECT, or SOCKS5) cannot be inspected"), "{answer}");
    assert!(answer.contains("only the user can lift limited mode (`sandbox.network.limited`"), "{answer}");
    assert_eq!(socks_connect(&proxy, Target::Name("allowed.test"), port).await.0, 2);
    // A WebSocket is a GET, but what follows it is a two-way channel: refused as a tunnel is.
    let answer = raw(&proxy, &websocket_request("allowed.test", port, "/ws", "none")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("a WebSocket upgrade opens a two-way channel that cannot be inspected"),
        "{answer}"
    );
}

enum Target<'a> {
    Name(&'a str),
    V4(Ipv4Addr),
}

/// A SOCKS5 CONNECT by hand: returns the reply code and the stream.
async fn socks_connect(proxy: &EgressProxy, target: Target<'_>, port: u16) -> (u8, TcpStream) {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(&[5, 1, 0]).await.unwrap();
    let mut choice = [0u8; 2];
    stream.read_exact(&mut choice).await.unwrap();
    assert_eq!(choice, [5, 0]);
    let mut request = vec![5, 1, 0];
    match target {
        Target::Name(name) => {
            request.push(3);
            request.push(name.len() as u8);
            request.extend_from_slice(name.as_bytes());
        }
        Target::V4(ip) => {
            request.push(1);
            request.extend_from_slice(&ip.octets());
        }
    }
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request).await.unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await.unwrap();
    (reply[1], stream)
}

#[tokio::test]
async fn socks5_connects_by_name_and_by_address_and_refuses_by_rule() {
    let server = server().await;
    let proxy = loopback_proxy().await;
    let port = server.addr.port();
    for target in [Target::Name("allowed.test"), Target::V4(Ipv4Addr::LOCALHOST)] {
        let (code, mut stream) = socks_connect(&proxy, target, port).await;
        assert_eq!(code, 0);
        stream.write_all(b"GET /socks HTTP/1.1\r\nHost: s\r\n\r\n").await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        assert!(out.ends_with("GET /socks host=s"), "{out}");
    }
    assert_eq!(socks_connect(&proxy, Target::Name("evil.test"), port).await.0, 2, "not allowed by ruleset");
    assert_eq!(socks_connect(&proxy, Target::Name("nowhere.test"), port).await.0, 2);
    let refusals = proxy.drain_refusals();
    assert_eq!(refusals.len(), 2);
    assert!(refusals.iter().all(|r| r.protocol == Protocol::Socks5));
    // Without the loopback address rule, the address itself is refused.
    let strict = EgressProxy::start(policy(), None).await.unwrap();
    assert_eq!(socks_connect(&strict, Target::V4(Ipv4Addr::LOCALHOST), port).await.0, 2);
    assert_eq!(socks_connect(&strict, Target::Name("rebind.test"), port).await.0, 2);
}

#[tokio::test]
async fn requests_the_proxy_does_not_serve_are_answered_not_dropped() {
    let proxy = loopback_proxy().await;
    let answer = raw(&proxy, "GET /page HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("this is a proxy"), "{answer}");
    let answer =
        raw(&proxy, "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
            .await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let answer = raw(&proxy, &get("unknown-name.test", 80)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "not allowed, so not even resolved: {answer}");
}

#[tokio::test]
async fn dropping_the_proxy_ends_its_tunnels() {
    // An upstream that accepts and never answers.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let proxy = loopback_proxy().await;
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    stream.write_all(format!("CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n").as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    drop(proxy);
    let mut rest = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the tunnel was not closed");
}

/// A server that reads until the client's half-close, then answers with every byte it got,
/// reversed in order of bytes, and closes.
async fn reverse_after_eof() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut got = Vec::new();
                stream.read_to_end(&mut got).await.unwrap();
                got.reverse();
                stream.write_all(&got).await.unwrap();
            });
        }
    });
    port
}

/// Bytes no two positions of which repeat in a short cycle, so a lost or doubled block shows.
fn pattern(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_u32;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        })
        .collect()
}

#[tokio::test]
async fn tunnels_carry_many_megabytes_both_ways_and_pass_each_half_close_on() {
    let port = reverse_after_eof().await;
    let proxy = loopback_proxy().await;
    // More than the pipes and socket buffers of a tunnel hold, so the relay goes round many times.
    let sent = pattern(5 * 1024 * 1024 + 123);
    let mut expected = sent.clone();
    expected.reverse();
    let connect = TcpStream::connect(proxy.addr()).await.unwrap();
    let (code, socks) = socks_connect(&proxy, Target::Name("allowed.test"), port).await;
    assert_eq!(code, 0);
    let mut tunnels = vec![("socks5", socks)];
    let mut stream = connect;
    // The request and the first bytes for the host in one write: the proxy must pass on what it
    // read past the request's head.
    let mut first = format!("CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n").into_bytes();
    first.extend_from_slice(&sent[..1000]);
    stream.write_all(&first).await.unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    let mut rest = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut rest).await.unwrap();
        head = [&head[1..], &rest[..]].concat().try_into().unwrap();
    }
    tunnels.push(("connect", stream));
    for (route, stream) in tunnels {
        let (mut read, mut write) = stream.into_split();
        let body = if route == "connect" { sent[1000..].to_vec() } else { sent.clone() };
        let writer = tokio::spawn(async move {
            write.write_all(&body).await.unwrap();
            // Only the write half: the answer comes after the host sees the end.
            write.shutdown().await.unwrap();
            write
        });
        let mut got = Vec::new();
        tokio::time::timeout(std::time::Duration::from_secs(30), read.read_to_end(&mut got))
            .await
            .unwrap_or_else(|_| panic!("{route}: the host's answer did not end"))
            .unwrap();
        let _ = writer.await.unwrap();
        assert_eq!(got.len(), expected.len(), "{route}");
        assert!(got == expected, "{route}: the bytes came back changed");
    }
}

/// A server that answers with the request's `Authorization` header.
async fn echo_authorization() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let head = read_head(&mut stream).await.unwrap_or_default();
            let auth = head
                .lines()
                .find_map(|l| l.strip_prefix("authorization: ").or_else(|| l.strip_prefix("Authorization: ")))
                .unwrap_or("")
                .to_owned();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{auth}",
                auth.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    addr
}

#[tokio::test]
async fn a_secret_placeholder_is_swapped_only_for_its_hosts() {
    let server = echo_authorization().await;
    let port = server.port();
    let token = tool_egress::placeholder("GITHUB_TOKEN");
    assert!(token.starts_with("egress-placeholder-GITHUB_TOKEN-"));
    assert_ne!(token, tool_egress::placeholder("GITHUB_TOKEN"), "a fresh one each time");
    let request = |host: &str| {
        format!(
            "GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        )
    };
    // A host named without a scheme gets the secret only inside TLS: not in plain HTTP.
    let tls_only = EgressProxy::start(
        with_loopback(policy()).secret(&token, "real-secret", &["allowed.test"]).unwrap(),
        None,
    )
    .await
    .unwrap();
    let answer = raw(&tls_only, &request("allowed.test")).await;
    assert!(answer.ends_with(&format!("Bearer {token}")), "{answer}");
    // Written `http://`, it gets it in plain HTTP too.
    let proxy = EgressProxy::start(
        with_loopback(policy()).secret(&token, "real-secret", &["http://allowed.test"]).unwrap(),
        None,
    )
    .await
    .unwrap();
    let answer = raw(&proxy, &request("allowed.test")).await;
    assert!(answer.ends_with("Bearer real-secret"), "{answer}");
    // `rebind.test` is allowed too, but not for this secret: it gets the placeholder.
    let answer = raw(&proxy, &request("rebind.test")).await;
    assert!(answer.ends_with(&format!("Bearer {token}")), "{answer}");
    assert!(!answer.contains("real-secret"), "{answer}");
    assert!(!format!("{:?}", proxy.egress()).contains("real-secret"), "the value stays out of debug output");
}

/// A host that takes a WebSocket upgrade (`/ws`): it answers `101`, writes `auth=` and the
/// request's `Authorization` on a line, then echoes what it reads. Any other request gets `200`
/// with `upgrade=` and the `Upgrade` header it received, so a test sees what reached it.
async fn websocket_host() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(head) = read_head(&mut stream).await else { return };
                let header = |name: &str| header_value(&head, name);
                if !head.starts_with("GET /ws ") {
                    let body = format!("upgrade={}", header("upgrade"));
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    return;
                }
                let accepted = "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
                                sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
                let greeting = format!("{accepted}auth={}\n", header("authorization"));
                if stream.write_all(greeting.as_bytes()).await.is_err() {
                    return;
                }
                let (mut reader, mut writer) = stream.split();
                let _ = tokio::io::copy(&mut reader, &mut writer).await;
            });
        }
    });
    addr
}

/// A WebSocket handshake sent to the proxy as a plain-HTTP request.
fn websocket_request(host: &str, port: u16, path: &str, authorization: &str) -> String {
    format!(
        "GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: Upgrade\r\n\
         Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Authorization: {authorization}\r\n\r\n"
    )
}

/// Reads from `stream` until `expected` has come, and returns what came.
async fn read_exactly(stream: &mut TcpStream, expected: usize) -> String {
    let mut got = vec![0u8; expected];
    stream.read_exact(&mut got).await.unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn a_plain_http_websocket_upgrade_is_relayed_with_the_secret_put_in() {
    let host = websocket_host().await;
    let port = host.port();
    let token = tool_egress::placeholder("WS_TOKEN");
    let proxy = EgressProxy::start(
        with_loopback(policy()).secret(&token, "real-secret", &["http://allowed.test"]).unwrap(),
        None,
    )
    .await
    .unwrap();
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let request = websocket_request("allowed.test", port, "/ws", &format!("Bearer {token}"));
    stream.write_all(request.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await.unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: websocket") && head.contains("connection: upgrade"), "{head}");
    assert!(head.contains("sec-websocket-accept: "), "the host's own headers come back: {head}");
    // The two connections are joined: both directions, unread, for as long as they last.
    let greeting = "auth=Bearer real-secret\n";
    assert_eq!(read_exactly(&mut stream, greeting.len()).await, greeting);
    for round in ["ping\n", "a second frame, longer than the first\n"] {
        stream.write_all(round.as_bytes()).await.unwrap();
        assert_eq!(read_exactly(&mut stream, round.len()).await, round);
    }

    // An upgrade to anything else is dropped as a hop-by-hop header: the host answers the request.
    let h2c = format!(
        "GET http://allowed.test:{port}/api HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade, HTTP2-Settings, close\r\n\
         Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n"
    );
    let answer = raw(&proxy, &h2c).await;
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("upgrade="), "{answer}");
}

#[tokio::test]
async fn node_opens_a_websocket_through_the_proxy_as_plain_http() {
    if !have("node") {
        eprintln!("skipped: node is not installed, so its HTTP client cannot be tested against the proxy");
        return;
    }
    let host = websocket_host().await;
    let proxy = loopback_proxy().await;
    // Node's own HTTP client, sending the handshake to the proxy in absolute form, the way a
    // client configured with an `http://` proxy does; its `upgrade` event hands over the socket.
    let script = r#"
const http = require('http');
const [proxyPort, port] = process.argv.slice(1);
const req = http.request({
  host: '127.0.0.1', port: Number(proxyPort), path: `http://allowed.test:${port}/ws`,
  headers: { host: `allowed.test:${port}`, connection: 'Upgrade', upgrade: 'websocket',
             'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
});
req.on('response', (res) => { console.log(`no upgrade: ${res.statusCode}`); process.exit(1); });
req.on('upgrade', (res, socket, head) => {
  let got = head.toString();
  socket.on('data', (d) => {
    got += d.toString();
    if (got.endsWith('hello\n')) { console.log(`${res.statusCode} ${JSON.stringify(got)}`); socket.destroy(); }
  });
  socket.write('hello\n');
});
req.on('error', (e) => { console.log(`error: ${e.message}`); process.exit(1); });
req.end();
"#;
    let out = tokio::process::Command::new("node")
        .args(["-e", script, &proxy.addr().port().to_string(), &host.port().to_string()])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), r#"101 "auth=\nhello\n""#);
}

/// A Node that reads the proxy variables when `NODE_USE_ENV_PROXY=1` (22.21 and later 22s,
/// 24.5 on): `EGRESS_TEST_NODE` if set, else `node` on the `PATH`; `None` when it is older.
fn node_reading_proxy_variables() -> Option<String> {
    let node = std::env::var("EGRESS_TEST_NODE").unwrap_or_else(|_| "node".to_owned());
    let out = std::process::Command::new(&node).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout);
    let mut parts = version.trim().trim_start_matches('v').split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next()?, parts.next()?);
    let reads = major >= 25 || (major == 24 && minor >= 5) || (major == 22 && minor >= 21);
    if !reads {
        eprintln!(
            "skipped: {node} is {} and ignores proxy variables; set EGRESS_TEST_NODE to a Node 22.21+ or 24.5+",
            version.trim()
        );
    }
    reads.then_some(node)
}

#[tokio::test]
async fn node_follows_the_proxy_variables_it_is_given() {
    let Some(node) = node_reading_proxy_variables() else { return };
    let server = server().await;
    let proxy = loopback_proxy().await;
    // `allowed.test` exists only in the proxy's resolver: reaching it proves Node went through it.
    let script = r#"
require('http').get(process.argv[1], (res) => {
  let body = '';
  res.on('data', (d) => body += d);
  res.on('end', () => console.log(`${res.statusCode} ${body}`));
}).on('error', (e) => { console.log(`error: ${e.code || e.message}`); process.exit(1); });
"#;
    let url = format!("http://allowed.test:{}/by-node", server.addr.port());
    let out = proxied(&node, &proxy).args(["-e", script, &url]).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        format!("200 GET /by-node host=allowed.test:{}", server.addr.port()),
        "{stdout}"
    );
}

#[tokio::test]
async fn each_command_may_have_its_own_asker_and_session_answers_are_shared() {
    let server = server().await;
    let port = server.addr.port();
    let egress = tool_egress::Egress::new(with_loopback(policy()), None);
    let first_asked = Arc::new(AtomicUsize::new(0));
    let count = first_asked.clone();
    let first = egress
        .start_asking(asker(move |_| {
            count.fetch_add(1, Ordering::SeqCst);
            async { AskAnswer::AllowForSession }
        }))
        .await
        .unwrap();
    let answer = raw(&first, &get("asked.test", port)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(first_asked.load(Ordering::SeqCst), 1);
    // Another command of the session: allowed without asking; a proxy without an asker of its
    // own and a session without one refuses what nobody allowed.
    let second = egress.start_asking(asker(|_| async { panic!("asked again") })).await.unwrap();
    let answer = raw(&second, &get("asked.test", port)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let third = egress.start().await.unwrap();
    let answer = raw(&third, &get("other.test", port)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
}

#[tokio::test]
async fn a_listener_made_elsewhere_is_served_and_closed_with_the_proxy() {
    let server = server().await;
    let port = server.addr.port();
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let proxy = tool_egress::Egress::new(with_loopback(policy()), None).serve(listener, None).unwrap();
    assert_eq!(proxy.addr(), addr);
    assert!(proxy.env().contains(&("HTTP_PROXY".to_owned(), format!("http://{addr}"))));
    let answer = raw(&proxy, &get("allowed.test", port)).await;
    assert!(answer.ends_with(&format!("GET /page host=allowed.test:{port}")), "{answer}");
    let answer = raw(&proxy, &get("evil.test", port)).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    drop(proxy);
    // The listener is closed once its accept loop sees the proxy dropped.
    let mut refused = false;
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(refused, "the listener outlived the proxy");
}

include!("../support/read_head.rs");

/// How many connections wait in the kernel's queue of the listening socket at `addr`, not yet
/// accepted (the listening socket's receive queue in `/proc/net/tcp`).
fn waiting_to_be_accepted(addr: SocketAddr) -> Option<usize> {
    let SocketAddr::V4(v4) = addr else { return None };
    let entry = format!("{:08X}:{:04X}", u32::from_ne_bytes(v4.ip().octets()), v4.port());
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // State 0A: listening; its receive queue is the number of connections not yet accepted.
        (fields.get(1) == Some(&entry.as_str()) && fields.get(3) == Some(&"0A"))
            .then(|| usize::from_str_radix(fields.get(4)?.split(':').nth(1)?, 16).ok())
            .flatten()
    })
}

/// Connections a command opens and leaves open cost the proxy (and the process it runs in) at
/// most 256 descriptors: past that, the rest wait in the kernel's queue, and are served as the
/// first ones go.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_left_open_take_a_bounded_number_of_descriptors() {
    let server = server().await;
    let proxy = loopback_proxy().await;
    let mut held = Vec::new();
    for _ in 0..300 {
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        stream.write_all(b"G").await.unwrap();
        held.push(stream);
    }
    // The proxy accepts 256 of them and leaves the other 44 in the kernel's queue.
    let mut waiting = None;
    for _ in 0..250 {
        waiting = waiting_to_be_accepted(proxy.addr());
        if waiting == Some(44) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(waiting, Some(44), "connections the proxy left to the kernel's queue");
    // As the held connections go, the waiting ones and new ones are served.
    held.truncate(0);
    let answer = raw(&proxy, &get("allowed.test", server.addr.port())).await;
    assert!(answer.ends_with(&format!("host=allowed.test:{}", server.addr.port())), "{answer}");
}
