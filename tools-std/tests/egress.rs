//! `bash` with an egress: sandboxed commands reach the hosts the rules allow through a proxy of
//! their own, and nothing else. Real `curl` and `python3` against a local HTTP server; made-up
//! names are mapped to 127.0.0.1 with the proxy's resolver override, so nothing leaves loopback.
#![cfg(all(target_os = "linux", feature = "egress"))]

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tool_runtime::{
    PermissionKind, PermissionRequest, Registry, SessionState, ToolContext, ToolOutput,
    context::Dependencies,
    hooks::{PermissionDecision, PermissionFn, PermissionHook},
    output_store::OutputStore,
};
use tools_std::Workspace;
use tools_std::tool_egress::{Egress, EgressPolicy};
use tools_std::tool_sandbox::{Probe, SandboxPolicy};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn skip(reason: &str) {
    let thread = std::thread::current();
    let _ = writeln!(std::io::stderr(), "skipped {}: {reason}", thread.name().unwrap_or("a test"));
}

/// Whether the kernel can confine TCP to one port (Landlock ABI 4) and has seccomp; under CI it
/// must.
fn kernel() -> bool {
    let probe = Probe::get();
    if probe.landlock_abi.is_some_and(|abi| abi >= 4) && probe.seccomp {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must have Landlock ABI 4 and seccomp: {probe}");
    skip(&format!("the kernel cannot confine TCP to a port ({probe})"));
    false
}

fn have(program: &str) -> bool {
    let found = std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        skip(&format!("`{program}` is not installed"));
    }
    found
}

/// A local HTTP server answering `host=<Host header>` and counting its connections.
struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
}

async fn server() -> Server {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let Some(head) = read_head(&mut stream).await else { return };
                let host = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("host:").map(|h| h.trim().to_owned()))
                    .unwrap_or_default();
                let body = format!("hello host={host}\n");
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    Server { port: addr.port(), connections }
}

fn dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let path = outside_temp_base().join(format!("egress-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    path.canonicalize().unwrap()
}

/// `allowed.test` allowed by name, `evil.test` denied, `asked.test` named by no rule; all three
/// map to 127.0.0.1, which is allowed by address (the local server lives there).
fn policy() -> EgressPolicy {
    EgressPolicy::new()
        .resolve("allowed.test", [LOOPBACK])
        .resolve("evil.test", [LOOPBACK])
        .resolve("asked.test", [LOOPBACK])
        .resolve("rebind.test", ["127.0.0.2".parse().unwrap()])
        .allow_host("allowed.test", "the test's rules")
        .and_then(|p| p.allow_host("rebind.test", "the test's rules"))
        .and_then(|p| p.deny_host("evil.test", "the test's rules"))
        .and_then(|p| p.allow_address("127.0.0.1", "the test's rules"))
        .unwrap()
}

struct Fx {
    state: SessionState,
    registry: Registry,
    deps: Arc<Dependencies>,
}

impl Fx {
    fn new(tag: &str) -> Fx {
        let root = dir(tag);
        let ws = Workspace::new(&root)
            .unwrap()
            .with_sandbox(SandboxPolicy::workspace_write(&root))
            .with_egress(Egress::new(policy(), None));
        let mut deps = Dependencies::new();
        deps.insert(ws);
        deps.insert(OutputStore::builder().dir(dir(&format!("{tag}-store"))).open().unwrap());
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Fx { state: SessionState::new(), registry, deps: Arc::new(deps) }
    }

    fn ctx(&self) -> tool_runtime::context::ContextBuilder {
        ToolContext::builder("bash").dependencies(self.deps.clone()).session(self.state.clone())
    }

    async fn bash(&self, args: Value) -> ToolOutput {
        self.call(self.ctx().build(), "bash", args).await
    }

    async fn call(&self, ctx: ToolContext, tool: &str, args: Value) -> ToolOutput {
        match self.registry.call(tool, &args.to_string(), ctx).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {}", e.message()),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn curl_and_python_reach_an_allowed_host_through_the_proxy() {
    if !kernel() || !have("curl") || !have("python3") {
        return;
    }
    let server = server().await;
    let fx = Fx::new("allowed");
    let port = server.port;
    // Plain HTTP, a CONNECT tunnel (`-p`), and SOCKS5 with the name resolved by the proxy.
    let out = fx
        .bash(json!({"command": format!(
            "curl -sS http://allowed.test:{port}/ && curl -sS -p http://allowed.test:{port}/ && curl -sS -x \"$ALL_PROXY\" http://allowed.test:{port}/"
        )}))
        .await;
    assert_eq!(out.text_content(), format!("hello host=allowed.test:{port}\n").repeat(3), "{out:?}");
    assert_eq!(out.metadata["sandbox"]["network"]["kind"], json!("proxy"), "{:?}", out.metadata);
    namespace_used(&out.metadata["sandbox"]);
    assert!(out.metadata.get("network_refusals").is_none());
    let python = format!(
        "import urllib.request; print(urllib.request.urlopen('http://allowed.test:{port}/', timeout=20).read().decode(), end='')"
    );
    let out = fx.bash(json!({"command": format!("python3 -c \"{python}\"")})).await;
    assert_eq!(out.text_content(), format!("hello host=allowed.test:{port}\n"), "{out:?}");
    // Every variable clients read is set, and no host skips the proxy.
    let out = fx.bash(json!({"command": "env | grep -i _proxy= | sort"})).await;
    let vars = out.text_content();
    for name in
        ["HTTP_PROXY=http://127.0.0.1:", "https_proxy=http://127.0.0.1:", "ALL_PROXY=socks5h://127.0.0.1:"]
    {
        assert!(vars.contains(name), "{name}: {vars}");
    }
    assert!(vars.lines().any(|l| l == "NO_PROXY=") && vars.lines().any(|l| l == "no_proxy="), "{vars}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_host_is_refused_with_the_rule_in_the_result() {
    if !kernel() || !have("curl") {
        return;
    }
    let server = server().await;
    let fx = Fx::new("denied");
    let port = server.port;
    let before = server.connections.load(Ordering::SeqCst);
    let out = fx.bash(json!({"command": format!("curl -sS -f http://evil.test:{port}/; curl -sS -p http://evil.test:{port}/")})).await;
    let text = out.text_content();
    assert!(
        text.contains(&format!(
            "[the network proxy refused evil.test:{port} (plain HTTP): it is denied by `evil.test` in the test's rules"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "[the network proxy refused evil.test:{port} (HTTP CONNECT): it is denied by `evil.test`"
        )),
        "{text}"
    );
    // Denied by a rule: asking for the network would not help, so it is not suggested.
    assert!(!text.contains("sandbox: \"network\""), "{text}");
    assert_eq!(out.metadata["network_refusals"][0]["host"], json!("evil.test"));
    assert_eq!(server.connections.load(Ordering::SeqCst), before, "the denied host was reached");
}

/// A hook that answers network-host questions with `allow` and records them; other requests pass.
fn host_hook(allow: bool, asked: Arc<Mutex<Vec<(String, String, u16)>>>) -> Arc<dyn PermissionHook> {
    Arc::new(PermissionFn(move |request: PermissionRequest| {
        let asked = asked.clone();
        async move {
            if let PermissionKind::NetworkHost { command, host, port } = &request.kind {
                asked.lock().unwrap().push((command.clone(), host.clone(), *port));
                if !allow {
                    return PermissionDecision::Deny { reason: "the user said no".into() };
                }
            }
            PermissionDecision::Allow
        }
    }))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_host_is_asked_through_the_calls_permission_hook() {
    if !kernel() || !have("curl") {
        return;
    }
    let server = server().await;
    let fx = Fx::new("asked");
    let port = server.port;
    let command = format!("curl -sS http://asked.test:{port}/ && curl -sS -p http://asked.test:{port}/");
    // Allowed: asked once for the command, though it connects twice.
    let asked = Arc::new(Mutex::new(Vec::new()));
    let ctx = fx.ctx().permissions(host_hook(true, asked.clone())).build();
    let out = fx.call(ctx, "bash", json!({"command": command})).await;
    assert_eq!(out.text_content(), format!("hello host=asked.test:{port}\n").repeat(2), "{out:?}");
    assert_eq!(*asked.lock().unwrap(), vec![(command.clone(), "asked.test".to_owned(), port)]);
    // The answer was for that command only: the next one asks again, and is refused this time;
    // a retry is not asked again, and after three refused hosts no more are asked about.
    let refused = Arc::new(Mutex::new(Vec::new()));
    let ctx = fx.ctx().permissions(host_hook(false, refused.clone())).build();
    let command = format!(
        "curl -sS -f http://asked.test:{port}/; curl -sS -f -p http://asked.test:{port}/; \
         for h in one two three; do curl -sS -f http://$h.test:{port}/; done"
    );
    let out = fx.call(ctx, "bash", json!({"command": command})).await;
    let text = out.text_content();
    let hosts: Vec<String> = refused.lock().unwrap().iter().map(|(_, host, _)| host.clone()).collect();
    assert_eq!(hosts, ["asked.test", "one.test", "two.test"]);
    assert!(
        text.contains(&format!(
            "[the network proxy refused three.test:{port} (plain HTTP): no rule allows `three.test`, and asking for \
             it was refused (3 hosts were already refused for this command, so no more are asked about)"
        )),
        "{text}"
    );
    assert!(out.is_error, "{text}");
    assert!(
        text.contains(&format!(
            "[the network proxy refused asked.test:{port} (plain HTTP): no rule allows `asked.test`, and asking \
             for it was refused (the user said no); to allow it, add it to `sandbox.network.allowedDomains`"
        )),
        "{text}"
    );
    assert!(text.ends_with("call bash again with `sandbox: \"network\"` and a `justification`: the user is asked to let this command use the network]"), "{text}");
    // The default permissions: nobody is here to answer.
    let out = fx.bash(json!({"command": format!("curl -sS -f http://asked.test:{port}/")})).await;
    assert!(
        out.text_content().contains(&format!(
            "asking for it was refused (connecting to asked.test:{port} needs a person's approval, and nobody is here to answer)"
        )),
        "{}",
        out.text_content()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_around_the_proxy_are_refused_by_the_kernel() {
    if !kernel() || !have("curl") || !have("python3") {
        return;
    }
    let server = server().await;
    let fx = Fx::new("bypass");
    let port = server.port;
    let before = server.connections.load(Ordering::SeqCst);
    // curl told to skip the proxy, a plain TCP socket, IPv6, MPTCP (which Landlock's TCP rules
    // do not see), SCTP, UDP (DNS), and a raw socket.
    let script = format!(
        r#"
import socket
def attempt(name, family, kind, proto, addr):
    try:
        s = socket.socket(family, kind, proto)
        s.settimeout(5)
        s.connect(addr) if kind == socket.SOCK_STREAM else s.sendto(b"x", addr)
        print(name, "connected")
    except OSError as e:
        print(name, "refused", e.errno)
attempt("tcp", socket.AF_INET, socket.SOCK_STREAM, 0, ("127.0.0.1", {port}))
attempt("tcp6", socket.AF_INET6, socket.SOCK_STREAM, 0, ("::1", {port}))
attempt("mptcp", socket.AF_INET, socket.SOCK_STREAM, 262, ("127.0.0.1", {port}))
attempt("sctp", socket.AF_INET, socket.SOCK_STREAM, 132, ("127.0.0.1", {port}))
attempt("udp", socket.AF_INET, socket.SOCK_DGRAM, 0, ("127.0.0.1", 53))
attempt("raw", socket.AF_INET, socket.SOCK_RAW, 1, ("127.0.0.1", 0))
attempt("netlink", socket.AF_NETLINK, socket.SOCK_RAW, 0, (0, 0))
"#
    );
    std::fs::write(fx.deps.get::<Workspace>().unwrap().root().join("attempt.py"), script).unwrap();
    let out = fx
        .bash(json!({"command": format!("curl -sS --noproxy '*' http://127.0.0.1:{port}/; echo curl $?; python3 attempt.py")}))
        .await;
    let text = out.text_content();
    assert!(text.contains("curl 7"), "curl could not connect: {text}");
    for line in [
        "tcp refused 13",
        "tcp6 refused 13",
        "mptcp refused 1",
        "sctp refused 1",
        "udp refused 1",
        "raw refused 1",
        "netlink refused 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}: {text}");
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), before, "a connection got around the proxy");
    // Through the proxy, an address no rule allows is refused (the proxy's own port, here), and
    // so is an allowed name that resolves to a loopback address no rule allows.
    let out =
        fx.bash(json!({"command": "curl -sS -f -p \"http://127.0.0.2:${HTTP_PROXY##*:}/\"; echo $?"})).await;
    assert!(out.text_content().contains("[the network proxy refused 127.0.0.2:"), "{}", out.text_content());
    let out = fx.bash(json!({"command": format!("curl -sS -f http://rebind.test:{port}/")})).await;
    assert!(
        out.text_content().contains("`rebind.test` resolves to 127.0.0.2, a loopback (127.0.0.0/8) address"),
        "{}",
        out.text_content()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_host_a_request_names_is_the_one_checked_and_reached() {
    if !kernel() || !have("curl") {
        return;
    }
    let server = server().await;
    let fx = Fx::new("smuggle");
    let port = server.port;
    // A Host header naming another host is replaced with the one the rules checked.
    let out = fx
        .bash(json!({"command": format!("curl -sS -H 'Host: evil.test' http://allowed.test:{port}/")}))
        .await;
    assert_eq!(out.text_content(), format!("hello host=allowed.test:{port}\n"));
    // A denied host behind an allowed one's credentials, or spelled another way, is still denied.
    for url in [format!("http://allowed.test@evil.test:{port}/"), format!("http://EVIL.test.:{port}/")] {
        let out = fx.bash(json!({"command": format!("curl -sS -f '{url}'; curl -sS -f -p '{url}'")})).await;
        let text = out.text_content();
        assert!(!text.contains("hello"), "{url}: {text}");
        assert!(text.contains("it is denied by `evil.test`"), "{url}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn background_sessions_and_terminals_keep_their_proxy() {
    if !kernel() || !have("curl") {
        return;
    }
    let server = server().await;
    let fx = Fx::new("session");
    let port = server.port;
    // The proxy outlives the call that started the session, and its refusals reach bash_output;
    // plain HTTP, a CONNECT tunnel and SOCKS5 all go through it.
    let every_protocol = format!(
        "curl -sS http://allowed.test:{port}/ && curl -sS -p http://allowed.test:{port}/ && \
         curl -sS -x \"$ALL_PROXY\" http://allowed.test:{port}/"
    );
    let out = fx
        .bash(json!({"command": format!(
            "sleep 1; {every_protocol}; curl -sS -f http://evil.test:{port}/; echo done"
        ), "background": true}))
        .await;
    namespace_used(&out.metadata["sandbox"]);
    let id = out.metadata["session_id"].as_u64().expect("a session id");
    let out = fx.call(fx.ctx().build(), "bash_output", json!({"session_id": id, "wait_ms": 60000})).await;
    let text = out.text_content();
    assert!(text.starts_with(&format!("hello host=allowed.test:{port}\n").repeat(3)), "{text}");
    assert!(text.contains("it is denied by `evil.test`"), "{text}");
    assert_eq!(out.metadata["network_refusals"][0]["host"], json!("evil.test"));
    let out = fx.bash(json!({"command": every_protocol, "tty": true})).await;
    namespace_used(&out.metadata["sandbox"]);
    assert_eq!(
        out.text_content().matches(&format!("hello host=allowed.test:{port}")).count(),
        3,
        "{}",
        out.text_content()
    );
}

/// Whether commands get a network namespace of their own; asserted wherever the probe says one
/// can be made, and otherwise the namespace tests skip (the port-only confinement remains).
fn namespace_used(sandbox: &Value) -> bool {
    let used = sandbox["layers"].as_array().is_some_and(|l| l.contains(&json!("network-namespace")));
    let probe = Probe::get();
    if probe.network_namespace {
        assert!(
            used,
            "the probe says a network namespace can be made, but the command ran without one: {sandbox}"
        );
    } else {
        assert!(!used, "{sandbox}");
        let summary = sandbox["summary"].as_str().unwrap_or_default();
        assert!(summary.contains("NOT ENFORCED: the proxy alone"), "{summary}");
        skip(&format!("this process can make no network namespace ({probe})"));
    }
    used
}

/// A local address of this machine that is not loopback, if it has one.
fn other_local_address() -> Option<IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("198.51.100.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test(flavor = "multi_thread")]
async fn in_its_network_namespace_a_command_reaches_the_proxy_and_nothing_else_on_its_port() {
    if !kernel() || !have("curl") || !have("python3") {
        return;
    }
    let server = server().await;
    let fx = Fx::new("netns");
    let root = fx.deps.get::<Workspace>().unwrap().root().to_path_buf();
    // The command says its proxy's port and waits until listeners on that port are ready
    // outside its namespace: on another loopback address, on IPv6 loopback, on this machine's
    // other address. Landlock's rule (that port, any address) lets each of them through.
    let script = r#"
import os, socket
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
for name, host in [("loopback2", "127.0.0.2"), ("ipv6", "::1"), ("machine", os.environ.get("MACHINE", "192.0.2.1"))]:
    try:
        socket.create_connection((host, port), timeout=5)
        print(name, "connected")
    except OSError as e:
        print(name, "refused", e.errno)
"#;
    std::fs::write(root.join("attempt.py"), script).unwrap();
    let machine = other_local_address();
    let command = format!(
        "echo \"port=${{HTTP_PROXY##*:}}\"; while [ ! -e ready ]; do sleep 0.05; done; MACHINE={} python3 attempt.py; \
         curl -sS http://allowed.test:{}/",
        machine.map(|ip| ip.to_string()).unwrap_or_else(|| "192.0.2.1".into()),
        server.port
    );
    let out = fx.bash(json!({"command": command, "background": true})).await;
    if !namespace_used(&out.metadata["sandbox"]) {
        let id = out.metadata["session_id"].as_u64().unwrap();
        std::fs::write(root.join("ready"), "").unwrap();
        fx.call(fx.ctx().build(), "bash_output", json!({"session_id": id, "wait_ms": 60000})).await;
        return;
    }
    let id = out.metadata["session_id"].as_u64().expect("a session id");
    let mut text = out.text_content();
    if !text.contains("port=") {
        let more = fx
            .call(
                fx.ctx().build(),
                "bash_output",
                json!({"session_id": id, "wait_ms": 30000, "until": "port="}),
            )
            .await;
        text.push_str(&more.text_content());
    }
    let port: u16 = text
        .split("port=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {text}"));
    // A port the namespace picked may be taken here (by a listener on every address, say):
    // that address is then left out, but one of them must be there.
    let mut outside = Vec::new();
    for (name, ip) in [
        ("loopback2", Some("127.0.0.2".parse().unwrap())),
        ("ipv6", Some(IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]))),
        ("machine", machine),
    ] {
        let Some(ip) = ip else { continue };
        match std::net::TcpListener::bind((ip, port)) {
            Ok(listener) => outside.push((name, listener)),
            Err(e) => eprintln!("{name}: {ip}:{port} cannot be listened on here ({e}); left out"),
        }
    }
    assert!(!outside.is_empty(), "no listener could be made on port {port}");
    std::fs::write(root.join("ready"), "").unwrap();
    let out = fx.call(fx.ctx().build(), "bash_output", json!({"session_id": id, "wait_ms": 60000})).await;
    let text = out.text_content();
    for (name, listener) in &outside {
        assert!(
            text.lines().any(|l| l == format!("{name} refused 111") || l == format!("{name} refused 101")),
            "{name}: {text}"
        );
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "{name} was reached on port {port}: {text}");
    }
    // The proxy itself still serves the command.
    assert!(text.contains(&format!("hello host=allowed.test:{}\n", server.port)), "{text}");
}

/// An HTTPS server on loopback for `secret.test` and `other.test`, its certificate signed by a CA
/// made here; it answers with the request's `Authorization` header. Returns (port, CA as PEM).
#[cfg(feature = "tls")]
async fn https_server() -> (u16, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    use tokio::io::AsyncReadExt;
    use tokio_rustls::rustls;
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // A subject of its own: with the same (empty) name as the server's, OpenSSL takes the
    // server's certificate for a self-signed one.
    ca_params.distinguished_name.push(DnType::CommonName, "tools-std test CA");
    let ca_pem = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["secret.test".to_owned(), "other.test".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut stream) = acceptor.accept(stream).await else { return };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
                let auth = head.lines().find_map(|l| l.strip_prefix("authorization:")).unwrap_or("").trim();
                let body = format!("auth={auth}\n");
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (port, ca_pem)
}

#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_reaches_its_https_host_from_a_sandboxed_curl_and_no_other_host() {
    if !kernel() || !have("curl") {
        return;
    }
    let (port, ca_pem) = https_server().await;
    let policy = EgressPolicy::new()
        .resolve("secret.test", [LOOPBACK])
        .resolve("other.test", [LOOPBACK])
        .allow_host("secret.test", "the test's rules")
        .and_then(|p| p.allow_host("other.test", "the test's rules"))
        .and_then(|p| p.allow_address("127.0.0.1", "the test's rules"))
        .and_then(|p| p.secret_var("API_TOKEN", "value-of-the-secret-42", &["secret.test"]))
        .unwrap();
    let egress = Egress::new(policy, None).with_upstream_roots(&ca_pem).unwrap();
    let root = dir("tls");
    let ws = Workspace::new(&root)
        .unwrap()
        .with_sandbox(SandboxPolicy::workspace_write(&root))
        .with_egress(egress);
    std::fs::write(root.join("server-ca.pem"), &ca_pem).unwrap();
    let mut deps = Dependencies::new();
    deps.insert(ws);
    deps.insert(OutputStore::builder().dir(dir("tls-store")).open().unwrap());
    let fx = Fx {
        state: SessionState::new(),
        registry: Registry::builder().tools(tools_std::all()).build().unwrap(),
        deps: Arc::new(deps),
    };
    // curl trusts the session's CA through the proxy's variables (CURL_CA_BUNDLE), read inside
    // the sandbox; the server sees the value, the command only the placeholder.
    let command = format!(
        "curl -sS -H \"Authorization: Bearer $API_TOKEN\" https://secret.test:{port}/ && echo \"$API_TOKEN\" | cut -c1-19"
    );
    let out = fx.bash(json!({"command": command})).await;
    assert_eq!(out.text_content(), "auth=bearer value-of-the-secret-42\negress-placeholder-\n", "{out:?}");
    // Python's urllib reads the proxy and the bundle (`SSL_CERT_FILE`) from the same variables.
    if have("python3") {
        let command = format!(
            "python3 -c 'import os, urllib.request as u; print(u.urlopen(u.Request(\"https://secret.test:{port}/\", headers={{\"Authorization\": \"Bearer \" + os.environ[\"API_TOKEN\"]}}), timeout=20).read().decode(), end=\"\")'"
        );
        let out = fx.bash(json!({"command": command})).await;
        assert_eq!(out.text_content(), "auth=bearer value-of-the-secret-42\n", "{out:?}");
    }
    // Another host: a blind tunnel, verified with the server's own CA; the placeholder stays.
    let command = format!(
        "curl -sS --cacert server-ca.pem -H \"Authorization: Bearer $API_TOKEN\" https://other.test:{port}/"
    );
    let out = fx.bash(json!({"command": command})).await;
    let text = out.text_content();
    assert!(text.starts_with("auth=bearer egress-placeholder-api_token-"), "{out:?}");
    assert!(!text.contains("value-of-the-secret"), "{out:?}");
}

include!("../../tool-sandbox/tests/support/outside_temp.rs");

include!("../../tool-egress/tests/support/read_head.rs");
