//! TLS termination for a secret's hosts (the `tls` feature), against `curl` and a local HTTPS
//! server whose certificate a CA made in the test signs; every name is mapped to loopback.
#![cfg(feature = "tls")]

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tool_egress::{Egress, EgressPolicy, EgressProxy};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const SECRET: &str = "real-secret-value-1234";

/// The test's CA (its PEM text and file) and an HTTPS server on loopback whose certificate it
/// signed, for `secret.test` and `other.test`, answering with the request's `Authorization`.
struct Upstream {
    ca_pem: String,
    ca_file: PathBuf,
    port: u16,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.ca_file);
    }
}

async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

async fn upstream(label: &str) -> Upstream {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "tool-egress test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["secret.test".to_owned(), "other.test".to_owned()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut stream) = acceptor.accept(stream).await else { return };
                let head = read_head(&mut stream).await;
                let field = |name: &str| {
                    head.lines()
                        .find_map(|l| {
                            let (key, value) = l.split_once(':')?;
                            key.eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
                        })
                        .unwrap_or_default()
                };
                let auth = field("authorization");
                let path = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
                let upgrade = field("upgrade");
                if !upgrade.is_empty() {
                    // Switches to whatever was asked, says which secret it got, then echoes.
                    let answer = format!(
                        "HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: {upgrade}\r\n\r\nauth={auth}\n"
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                    let mut buf = [0u8; 1024];
                    while let Ok(n @ 1..) = stream.read(&mut buf).await {
                        if stream.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = stream.shutdown().await;
                    return;
                }
                let response = if path == "/repo.git/info/refs?service=git-upload-pack" {
                    // Git's smart protocol: the refs, to the holder of the secret only.
                    if auth == format!("Bearer {SECRET}") {
                        let body = git_advertisement();
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/x-git-upload-pack-advertisement\r\ncache-control: no-cache\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    } else {
                        "HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned()
                    }
                } else {
                    let body = format!("auth={auth} host={}", field("host"));
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    let ca_file =
        std::env::temp_dir().join(format!("tool-egress-test-ca-{label}-{}.pem", std::process::id()));
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();
    Upstream { ca_pem: ca_cert.pem(), ca_file, port }
}

/// A commit id the test repository's `main` points at.
const MAIN: &str = "0123456789abcdef0123456789abcdef01234567";

/// The answer to `GET /repo.git/info/refs?service=git-upload-pack` (protocol v0): one branch.
fn git_advertisement() -> String {
    fn pkt(line: &str) -> String {
        format!("{:04x}{line}", line.len() + 4)
    }
    [
        pkt("# service=git-upload-pack\n"),
        "0000".to_owned(),
        pkt(&format!("{MAIN} HEAD\0symref=HEAD:refs/heads/main agent=tool-egress-test\n")),
        pkt(&format!("{MAIN} refs/heads/main\n")),
        "0000".to_owned(),
    ]
    .concat()
}

fn policy() -> EgressPolicy {
    EgressPolicy::new()
        .resolve("secret.test", [LOOPBACK])
        .resolve("other.test", [LOOPBACK])
        .allow_host("secret.test", "the test")
        .and_then(|p| p.allow_host("other.test", "the test"))
        .and_then(|p| p.allow_address("127.0.0.1", "the test"))
        .and_then(|p| p.secret_var("API_TOKEN", SECRET, &["secret.test"]))
        .unwrap()
}

fn var(proxy: &EgressProxy, name: &str) -> String {
    proxy.env().into_iter().find(|(k, _)| k == name).map(|(_, v)| v).unwrap_or_default()
}

/// Runs `curl` with the proxy's environment, the placeholder in an `Authorization` header;
/// returns (exit code, stdout, stderr).
async fn curl(proxy: &EgressProxy, url: &str, extra: &[&str]) -> (i32, String, String) {
    let authorization = format!("Authorization: Bearer {}", var(proxy, "API_TOKEN"));
    let args: Vec<&str> = ["-sS", "--max-time", "20", "-H", &authorization]
        .into_iter()
        .chain(extra.iter().copied())
        .chain([url])
        .collect();
    run("curl", &args, &proxy.env()).await
}

fn have_curl() -> bool {
    std::process::Command::new("curl").arg("--version").output().is_ok()
}

#[tokio::test]
async fn a_secret_reaches_its_https_host_and_other_hosts_get_a_blind_tunnel() {
    if !have_curl() {
        eprintln!("skipped: no curl");
        return;
    }
    let upstream = upstream("swap").await;
    let egress = Egress::new(policy(), None).with_upstream_roots(&upstream.ca_pem).unwrap();
    let proxy = egress.start().await.unwrap();
    let bundle = egress.ca_bundle().expect("a bundle once a proxy with a secret started");
    for name in
        ["SSL_CERT_FILE", "CURL_CA_BUNDLE", "CARGO_HTTP_CAINFO", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE"]
    {
        assert_eq!(var(&proxy, name), bundle.display().to_string(), "{name}");
    }
    let placeholder = var(&proxy, "API_TOKEN");
    assert!(!placeholder.contains(SECRET));

    // The host the secret is for: the proxy terminates TLS, and the server sees the value.
    let (code, out, err) = curl(&proxy, &format!("https://secret.test:{}/api", upstream.port), &[]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("auth=Bearer {SECRET} host=secret.test:{}", upstream.port));
    // What the client saw was the session's CA, not the server's own certificate: trusting only
    // the server's CA, the client refuses it.
    let ca = upstream.ca_file.display().to_string();
    let (code, _, err) =
        curl(&proxy, &format!("https://secret.test:{}/api", upstream.port), &["--cacert", &ca]).await;
    assert_ne!(code, 0, "the client trusted the proxy's certificate with the server's CA only: {err}");

    // Another host: a blind tunnel. The client verifies the server's own certificate, and the
    // server gets the placeholder, worth nothing.
    let (code, out, err) =
        curl(&proxy, &format!("https://other.test:{}/api", upstream.port), &["--cacert", &ca]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("auth=Bearer {placeholder} host=other.test:{}", upstream.port));
    assert_eq!(proxy.refusal_note(), None);

    // The bundle holds the session's CA (no key) and goes when the session does.
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(text.contains("-----BEGIN CERTIFICATE-----") && !text.contains("PRIVATE KEY"));
    drop(proxy);
    drop(egress);
    // The proxy's tasks end as the runtime next polls them, and the last one removes the file.
    for _ in 0..100 {
        if !bundle.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!bundle.exists(), "the bundle outlived its session");
}

#[tokio::test]
async fn a_secret_host_whose_certificate_fails_verification_is_refused_and_gets_nothing() {
    if !have_curl() {
        eprintln!("skipped: no curl");
        return;
    }
    let upstream = upstream("untrusted").await;
    // Mozilla's roots: the test CA's certificate is not among them.
    let proxy = Egress::new(policy(), None).start().await.unwrap();
    let (code, out, _) = curl(&proxy, &format!("https://secret.test:{}/api", upstream.port), &[]).await;
    assert_ne!(code, 0, "{out}");
    assert!(!out.contains(SECRET));
    let note = proxy.refusal_note().expect("a refusal for the command's result");
    assert!(
        note.contains("secret.test") && note.contains("certificate") && note.contains("nothing was sent"),
        "{note}"
    );
}

/// Whether `program` runs; says why the test is skipped when not.
fn have(program: &str, test: &str) -> bool {
    let found = std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped {test}: `{program}` is not installed");
    }
    found
}

/// Runs `program` with `PATH`, `HOME` and `env` only; returns (exit code, stdout, stderr).
async fn run(program: &str, args: &[&str], env: &[(String, String)]) -> (i32, String, String) {
    let home = std::env::temp_dir().join(format!("tool-egress-test-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let out = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .envs(env.iter().cloned())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The proxy's environment without the variables that name the session's bundle.
fn without_bundle(env: &[(String, String)]) -> Vec<(String, String)> {
    env.iter().filter(|(k, _)| !tool_egress::CA_BUNDLE_VARIABLES.contains(&k.as_str())).cloned().collect()
}

async fn started(label: &str) -> (Upstream, Egress, EgressProxy) {
    let upstream = upstream(label).await;
    let egress = Egress::new(policy(), None).with_upstream_roots(&upstream.ca_pem).unwrap();
    let proxy = egress.start().await.unwrap();
    (upstream, egress, proxy)
}

const PYTHON: &str = r#"
import os, sys
url, token = os.environ["URL"], os.environ["API_TOKEN"]
headers = {"Authorization": "Bearer " + token}
if sys.argv[1] == "urllib":
    import urllib.request
    print(urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=20).read().decode(), end="")
else:
    import requests
    print(requests.get(url, headers=headers, timeout=20).text, end="")
"#;

#[tokio::test]
async fn python_urllib_and_requests_trust_the_session_ca_and_the_host_gets_the_secret() {
    let test = "python_urllib_and_requests";
    if !have("python3", test) {
        return;
    }
    let (upstream, _egress, proxy) = started("python").await;
    let url = format!("https://secret.test:{}/api", upstream.port);
    let mut env = proxy.env();
    env.push(("URL".to_owned(), url));
    let expected = format!("auth=Bearer {SECRET} host=secret.test:{}", upstream.port);
    let (code, out, err) = run("python3", &["-c", PYTHON, "urllib"], &env).await;
    assert_eq!((code, out.as_str()), (0, expected.as_str()), "{err}");
    // The bundle is what made the proxy's certificate trusted.
    let (code, out, err) = run("python3", &["-c", PYTHON, "urllib"], &without_bundle(&env)).await;
    assert!(code != 0 && err.contains("CERTIFICATE_VERIFY_FAILED"), "{code} {out} {err}");

    let (has_requests, _, _) = run("python3", &["-c", "import requests"], &[]).await;
    if has_requests != 0 {
        eprintln!("skipped the half of {test} with `requests`: the module is not installed");
        return;
    }
    let (code, out, err) = run("python3", &["-c", PYTHON, "requests"], &env).await;
    assert_eq!((code, out.as_str()), (0, expected.as_str()), "{err}");
    let (code, out, err) = run("python3", &["-c", PYTHON, "requests"], &without_bundle(&env)).await;
    assert!(code != 0 && err.contains("CERTIFICATE_VERIFY_FAILED"), "{code} {out} {err}");
}

/// Node has no proxy support of its own (before 24): the script opens the `CONNECT` tunnel and
/// speaks HTTPS inside it with Node's client, offering `h2` and `http/1.1`. `MODE=websocket`
/// asks for a WebSocket upgrade, sends `ping` and waits for its echo.
const NODE: &str = r#"
const http = require('http'), https = require('https'), tls = require('tls');
const proxy = new URL(process.env.https_proxy);
const host = process.env.TARGET_HOST, port = Number(process.env.TARGET_PORT);
const fail = (why) => { console.error(why); process.exit(1); };
const tunnel = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: `${host}:${port}` });
tunnel.on('error', (e) => fail(e.message));
tunnel.on('connect', (res, socket) => {
  if (res.statusCode !== 200) fail(`CONNECT answered ${res.statusCode}`);
  const headers = { authorization: `Bearer ${process.env.API_TOKEN}` };
  if (process.env.MODE === 'websocket') Object.assign(headers, {
    connection: 'Upgrade', upgrade: 'websocket',
    'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  });
  const req = https.request({ host, port, path: '/api', headers,
    createConnection: () => tls.connect({ socket, servername: host, ALPNProtocols: ['h2', 'http/1.1'] }) });
  req.on('error', (e) => fail(e.message));
  req.on('response', (r) => {
    let body = '';
    r.on('data', (d) => { body += d; });
    r.on('end', () => { process.stdout.write(`${r.socket.alpnProtocol} ${r.statusCode} ${body}`); process.exit(0); });
  });
  req.on('upgrade', (r, sock, head) => {
    let got = head.toString();
    sock.on('data', (d) => {
      got += d;
      if (got.endsWith('ping\n')) { process.stdout.write(`${sock.alpnProtocol} ${r.statusCode} ${got}`); process.exit(0); }
    });
    sock.write('ping\n');
  });
  req.end();
});
tunnel.end();
"#;

#[tokio::test]
async fn node_trusts_the_session_ca_through_node_extra_ca_certs_and_falls_back_to_http_1_1() {
    if !have("node", "node_trusts_the_session_ca") {
        return;
    }
    let (upstream, _egress, proxy) = started("node").await;
    let mut env = proxy.env();
    env.push(("TARGET_HOST".to_owned(), "secret.test".to_owned()));
    env.push(("TARGET_PORT".to_owned(), upstream.port.to_string()));
    // Only Node's own variable: it adds to Node's roots rather than replacing them.
    let node_env: Vec<_> = without_bundle(&env)
        .into_iter()
        .chain(env.iter().filter(|(k, _)| k == "NODE_EXTRA_CA_CERTS").cloned())
        .collect();
    let (code, out, err) = run("node", &["-e", NODE], &node_env).await;
    assert_eq!(out, format!("http/1.1 200 auth=Bearer {SECRET} host=secret.test:{}", upstream.port), "{err}");
    assert_eq!(code, 0);
    let (code, out, err) = run("node", &["-e", NODE], &without_bundle(&env)).await;
    assert!(code != 0 && err.contains("certificate"), "{code} {out} {err}");

    // A WebSocket upgrade inside the terminated connection: relayed, the secret put in.
    env.push(("MODE".to_owned(), "websocket".to_owned()));
    let (code, out, err) = run("node", &["-e", NODE], &env).await;
    assert_eq!(
        (code, out.as_str()),
        (0, format!("http/1.1 101 auth=Bearer {SECRET}\nping\n").as_str()),
        "{err}"
    );
}

#[tokio::test]
async fn git_ls_remote_trusts_the_session_ca_through_git_ssl_cainfo() {
    if !have("git", "git_ls_remote") {
        return;
    }
    let (upstream, _egress, proxy) = started("git").await;
    let header = format!("http.extraHeader=Authorization: Bearer {}", var(&proxy, "API_TOKEN"));
    let url = format!("https://secret.test:{}/repo.git", upstream.port);
    let args = ["-c", &header, "ls-remote", &url];
    let mut env = vec![
        ("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned()),
        ("GIT_CONFIG_GLOBAL".to_owned(), "/dev/null".to_owned()),
        ("GIT_TERMINAL_PROMPT".to_owned(), "0".to_owned()),
    ];
    // Git's own variable alone, then none: the handshake succeeds with the bundle only.
    env.extend(without_bundle(&proxy.env()));
    let (code, out, err) = run("git", &args, &env).await;
    assert!(code != 0 && err.contains("certificate"), "{code} {out} {err}");
    env.push(("GIT_SSL_CAINFO".to_owned(), var(&proxy, "GIT_SSL_CAINFO")));
    let (code, out, err) = run("git", &args, &env).await;
    // The server lists its refs to the holder of the secret only.
    assert_eq!(
        (code, out.as_str()),
        (0, format!("{MAIN}\tHEAD\n{MAIN}\trefs/heads/main\n").as_str()),
        "{err}"
    );
}

#[tokio::test]
async fn curl_asking_for_http2_falls_back_to_http_1_1() {
    if !have_curl() {
        eprintln!("skipped: no curl");
        return;
    }
    let (upstream, _egress, proxy) = started("h2").await;
    let url = format!("https://secret.test:{}/api", upstream.port);
    let (code, out, err) = curl(&proxy, &url, &["--http2", "-w", " %{http_version}"]).await;
    assert_eq!(
        (code, out),
        (0, format!("auth=Bearer {SECRET} host=secret.test:{} 1.1", upstream.port)),
        "{err}"
    );
}

/// Opens a `CONNECT` tunnel to `secret.test` through the proxy and TLS inside it, trusting the
/// session's bundle and offering `alpn`.
async fn tls_through(
    proxy: &EgressProxy,
    bundle: &std::path::Path,
    port: u16,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let mut tcp = tokio::net::TcpStream::connect(proxy.addr()).await?;
    let connect = format!("CONNECT secret.test:{port} HTTP/1.1\r\nhost: secret.test:{port}\r\n\r\n");
    tcp.write_all(connect.as_bytes()).await?;
    let answer = read_head(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut roots = rustls::RootCertStore::empty();
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(bundle).unwrap().map(Result::unwrap);
    roots.add_parsable_certificates(certs);
    let mut config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let name = rustls::pki_types::ServerName::try_from("secret.test").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await
}

#[tokio::test]
async fn the_terminated_connection_offers_http_1_1_only() {
    let (upstream, egress, proxy) = started("alpn").await;
    let bundle = egress.ca_bundle().unwrap();
    let tls = tls_through(&proxy, &bundle, upstream.port, &[b"h2", b"http/1.1"]).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    // A client that speaks HTTP/2 only is refused in the handshake, not sent bytes it cannot read.
    let error = tls_through(&proxy, &bundle, upstream.port, &[b"h2"]).await.unwrap_err();
    assert!(error.to_string().contains("NoApplicationProtocol"), "{error}");
}

#[tokio::test]
async fn a_websocket_upgrade_is_relayed_with_the_secret_and_other_upgrades_are_dropped() {
    let (upstream, egress, proxy) = started("websocket").await;
    let bundle = egress.ca_bundle().unwrap();
    let placeholder = var(&proxy, "API_TOKEN");
    let port = upstream.port;

    let mut tls = tls_through(&proxy, &bundle, port, &[b"http/1.1"]).await.unwrap();
    let request = format!(
        "GET /ws HTTP/1.1\r\nhost: secret.test:{port}\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nauthorization: Bearer {placeholder}\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let head = read_head(&mut tls).await.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: websocket") && head.contains("connection: upgrade"), "{head}");
    // From here the proxy joins the two connections: both directions, unread.
    tls.write_all(b"ping\n").await.unwrap();
    let mut got = Vec::new();
    let expected = format!("auth=Bearer {SECRET}\nping\n");
    while got.len() < expected.len() {
        let mut buf = [0u8; 256];
        let n = tls.read(&mut buf).await.unwrap();
        assert_ne!(n, 0, "ended after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(String::from_utf8_lossy(&got), expected);

    // An upgrade to anything else goes no further than the proxy: the host answers the request.
    let mut tls = tls_through(&proxy, &bundle, port, &[b"http/1.1"]).await.unwrap();
    let request = format!(
        "GET /api HTTP/1.1\r\nhost: secret.test:{port}\r\nconnection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nauthorization: Bearer {placeholder}\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let head = read_head(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let expected = format!("auth=Bearer {SECRET} host=secret.test:{port}");
    let mut body = vec![0u8; expected.len()];
    tls.read_exact(&mut body).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&body), expected);
}

/// Inside a tunnel whose TLS the proxy terminates (the secret's host), a request goes to that
/// host in origin form: an absolute URI naming another host (which a front end shared by both
/// would route there, the secret with it) and a CONNECT are refused; one naming the tunnel's own
/// host is sent as `/path`.
#[tokio::test]
async fn a_request_in_a_secret_hosts_tunnel_goes_to_that_host_only() {
    let (upstream, egress, proxy) = started("origin-form").await;
    let bundle = egress.ca_bundle().unwrap();
    let port = upstream.port;
    let placeholder = var(&proxy, "API_TOKEN");
    let mut tls = tls_through(&proxy, &bundle, port, &[b"http/1.1"]).await.unwrap();
    let ask = |target: &str, method: &str| {
        format!(
            "{method} {target} HTTP/1.1\r\nhost: secret.test:{port}\r\nauthorization: Bearer {placeholder}\r\n\r\n"
        )
    };
    for (target, method, refused) in [
        (format!("https://other.test:{port}/api"), "GET", "a request for other.test"),
        (format!("https://secret.test:{}/api", port + 1), "GET", "a request for secret.test"),
        (format!("other.test:{port}"), "CONNECT", "a CONNECT inside the tunnel"),
    ] {
        tls.write_all(ask(&target, method).as_bytes()).await.unwrap();
        let head = read_head(&mut tls).await;
        assert!(head.starts_with("HTTP/1.1 421"), "{method} {target}: {head}");
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())
            })
            .unwrap();
        let mut body = vec![0u8; length];
        tls.read_exact(&mut body).await.unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains(refused), "{method} {target}: {body}");
    }
    // Its own host in absolute form reaches it as `/path`, with the secret.
    let own = format!("https://secret.test:{port}/repo.git/info/refs?service=git-upload-pack");
    tls.write_all(ask(&own, "GET").as_bytes()).await.unwrap();
    let head = read_head(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}
