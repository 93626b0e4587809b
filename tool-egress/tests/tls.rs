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
                let body = format!("auth={} host={}", field("authorization"), field("host"));
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
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
    let placeholder = var(proxy, "API_TOKEN");
    let out = tokio::process::Command::new("curl")
        .args(["-sS", "--max-time", "20", "-H", &format!("Authorization: Bearer {placeholder}")])
        .args(extra)
        .arg(url)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(proxy.env())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
