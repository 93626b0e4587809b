//! Mounting an MCP server over `https://`: `McpServer::serve_http` behind a real TLS acceptor
//! whose certificate a CA made in the test signs, trusted (or not) through `caCert`.

use std::path::PathBuf;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::{Value, json};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tool_runtime::mcp_client::{McpConfig, McpMount, MountError, ServerConfig, connect_all};
use tool_runtime::mcp_server::{HttpOptions, McpServer};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolCall, ToolContext, ToolOutput, ToolSpec, spec::FnTool,
};

const TOKEN: &str = "tls-token";

/// A CA, its PEM file on disk, and a server certificate it signed.
struct Pki {
    ca_file: PathBuf,
    dir: PathBuf,
    cert: CertificateDer<'static>,
    key: Vec<u8>,
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh CA and a certificate for `localhost` signed by it, valid until `not_after` (a date
/// in the past makes it expired).
fn pki(label: &str, not_after: Option<(i32, u8, u8)>) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "tool-runtime test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, "localhost");
    if let Some((year, month, day)) = not_after {
        params.not_before = rcgen::date_time_ymd(year - 1, month, day);
        params.not_after = rcgen::date_time_ymd(year, month, day);
    }
    let cert = params.signed_by(&key, &issuer).unwrap();

    let dir = std::env::temp_dir().join(format!("mcp-https-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();
    Pki { ca_file, dir, cert: cert.der().clone(), key: key.serialize_der() }
}

/// Stops the server and the TLS acceptor when the test ends.
struct StopOnDrop(CancellationToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

fn served_registry() -> Registry {
    let echo = FnTool::new(
        ToolSpec::new(
            "echo",
            "Echoes a message.",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        |_ctx: ToolContext, args: Value| async move {
            Ok(ToolOutput::text(format!("echo: {}", args["message"].as_str().unwrap_or_default())))
        },
    );
    Registry::builder().tool(echo).build().unwrap()
}

/// `McpServer::serve_http` behind a bearer token on a loopback port, and a TLS acceptor with
/// `pki`'s certificate in front of it; the TLS port.
async fn serve_tls(pki: &Pki) -> (u16, StopOnDrop) {
    let stop = CancellationToken::new();
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend = plain.local_addr().unwrap();
    let server = McpServer::new(Dispatcher::builder(served_registry())).unwrap();
    let options = HttpOptions::new().bearer_token(TOKEN).shutdown_on(stop.clone());
    tokio::spawn(async move { server.serve_http(plain, options).await.expect("serve_http") });

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![pki.cert.clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.key.clone())),
        )
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let tls = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tls.local_addr().unwrap().port();
    let stopped = stop.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                accepted = tls.accept() => accepted.unwrap(),
                () = stopped.cancelled() => return,
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing to serve.
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut plain = tokio::net::TcpStream::connect(backend).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (port, StopOnDrop(stop))
}

/// The message of a mount that had to fail (`McpMount` is not `Debug`, so no `expect_err`).
fn refused(mounted: Result<McpMount, MountError>, why: &str) -> String {
    match mounted {
        Ok(mount) => panic!("{why}, yet `{}` was mounted", mount.name()),
        Err(error) => error.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_server_with_a_private_ca_is_mounted_and_called_with_its_token() {
    let pki = pki("trusted", None);
    let (port, _stop) = serve_tls(&pki).await;
    // The user's path: an `mcpServers` entry with `caCert`.
    let entry = json!({"mcpServers": {"secure": {
        "url": format!("https://localhost:{port}/mcp"),
        "headers": {"Authorization": format!("Bearer {TOKEN}")},
        "caCert": pki.ca_file,
    }}});
    let config = McpConfig::parse(&entry.to_string()).unwrap();
    let mounts = connect_all(&config).await.expect("mount over https");
    let names: Vec<String> = mounts[0].tools().iter().map(|t| t.spec().name.clone()).collect();
    assert_eq!(names, ["secure__echo"]);

    let dispatcher =
        Dispatcher::builder(Registry::builder().tools(mounts[0].tools()).build().unwrap()).build();
    let result = dispatcher
        .run(
            ToolCall::new("c1", "secure__echo", json!({"message": "over TLS"}).to_string()),
            CancellationToken::new(),
        )
        .await;
    assert!(!result.output.is_error, "{}", result.output.text_content());
    assert_eq!(result.output.text_content(), "echo: over TLS");

    // The token still counts over TLS: without it the handshake reaches the server and is refused
    // there, which is not a certificate problem.
    let tokenless =
        ServerConfig::http("secure", format!("https://localhost:{port}/mcp")).ca_cert(&pki.ca_file);
    let message = refused(McpMount::connect(tokenless).await, "no token");
    assert!(message.starts_with("MCP server `secure`: "), "{message}");
    assert!(message.contains("headers") && !message.contains("certificate"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_ca_is_an_unknown_issuer_error_naming_the_server() {
    let pki = pki("untrusted", None);
    let (port, _stop) = serve_tls(&pki).await;
    let url = format!("https://localhost:{port}/mcp");
    let config =
        ServerConfig::http("private", url.clone()).header("Authorization", format!("Bearer {TOKEN}"));
    let message = refused(McpMount::connect(config).await, "the test CA is not trusted");
    assert_eq!(
        message,
        format!(
            "MCP server `private`: its TLS certificate is not signed by a trusted authority (unknown issuer) at `{url}`; if the server uses a private CA, set `caCert` in its entry to that CA's PEM file"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_name_or_expired_says_so() {
    let pki_ok = pki("mismatch", None);
    let (port, _stop) = serve_tls(&pki_ok).await;
    // The certificate names `localhost`, not the address.
    let by_address =
        ServerConfig::http("box", format!("https://127.0.0.1:{port}/mcp")).ca_cert(&pki_ok.ca_file);
    let message = refused(McpMount::connect(by_address).await, "the certificate is for localhost");
    assert!(
        message.starts_with("MCP server `box`: its TLS certificate does not name the host of"),
        "{message}"
    );
    assert!(message.contains("name mismatch") && message.contains("127.0.0.1"), "{message}");

    let old = pki("expired", Some((2020, 1, 1)));
    let (port, _stop) = serve_tls(&old).await;
    let expired = ServerConfig::http("box", format!("https://localhost:{port}/mcp")).ca_cert(&old.ca_file);
    let message = refused(McpMount::connect(expired).await, "the certificate expired in 2020");
    assert!(message.starts_with("MCP server `box`: its TLS certificate has expired ("), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_file_that_cannot_be_used_is_an_error_naming_the_key() {
    let pki = pki("badfile", None);
    let (port, _stop) = serve_tls(&pki).await;
    let url = format!("https://localhost:{port}/mcp");
    let missing = pki.dir.join("missing.pem");
    let message = refused(
        McpMount::connect(ServerConfig::http("box", url.clone()).ca_cert(&missing)).await,
        "no such file",
    );
    assert!(
        message.starts_with(&format!("MCP server `box`: cannot read `caCert` {}", missing.display())),
        "{message}"
    );

    let not_pem = pki.dir.join("not.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let message =
        refused(McpMount::connect(ServerConfig::http("box", url).ca_cert(&not_pem)).await, "no PEM block");
    assert!(message.contains("holds no `BEGIN CERTIFICATE` block"), "{message}");
}
