//! `--mcp-config`: `tools list`, `call`, `turn` and `serve` with another MCP server's tools
//! mounted. The mounted server is `tools serve` itself (another process, reached with rmcp's
//! client), so these tests need nothing but the built binary.

use crate::common;

use std::path::PathBuf;

use common::{Fixture, HttpServer, TOOLS};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const HELLO: &str = "     1\thello\n     2\tworld\n";

/// An `mcpServers` file mounting `tools serve` (confined to the fixture's workspace) as `inner`.
fn config(fx: &Fixture) -> PathBuf {
    let path = fx.dir.path().join("mcp.json");
    let ws = fx.ws();
    let text = json!({"mcpServers": {
        "inner": {"command": TOOLS, "args": ["serve", "--root", ws.to_str().unwrap()]},
        "off": {"command": "/nonexistent", "disabled": true}
    }});
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

/// `tools serve --http` on a free port of 127.0.0.1 behind the bearer token `t0ken`.
fn serve_http_with_token(fx: &Fixture) -> HttpServer {
    let token_file = fx.dir.path().join("token");
    std::fs::write(&token_file, "t0ken\n").unwrap();
    HttpServer::start(fx, &["--auth-token-file", token_file.to_str().unwrap()])
}

#[test]
fn list_shows_the_mounted_tools_after_the_built_in_ones() {
    let fx = Fixture::new();
    let config = config(&fx);
    let run = fx.run(&["list", "--mcp-config", config.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    let definitions = run.json();
    let names: Vec<&str> =
        definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    let read = names.iter().position(|n| *n == "read").unwrap();
    let inner_read = names.iter().position(|n| *n == "inner__read").expect("the mounted read");
    assert!(read < inner_read, "{names:?}");
    assert_eq!(names.iter().filter(|n| n.starts_with("inner__")).count() * 2, names.len(), "{names:?}");
    let mounted = &definitions[inner_read];
    assert_eq!(mounted["inputSchema"], definitions[read]["inputSchema"], "the schema passes through");
    assert_eq!(mounted["annotations"]["readOnlyHint"], true);

    for format in ["openai-chat", "anthropic", "gemini"] {
        let run = fx.run(&["list", "--format", format, "--mcp-config", config.to_str().unwrap()], None);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
    }
}

#[test]
fn call_runs_a_mounted_tool() {
    let fx = Fixture::new();
    let config = config(&fx);
    let run = fx.run(
        &["call", "inner__read", r#"{"path": "hello.txt"}"#, "--mcp-config", config.to_str().unwrap()],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let result = run.json();
    assert_eq!(result["tool"], "inner__read");
    assert_eq!(result["output"], HELLO);
    assert_eq!(result["metadata"]["mcp_server"], "inner");

    // Validation happens here first, with our usual text; the server's own errors come back as
    // error results.
    let invalid = fx.run(&["call", "inner__read", "{}", "--mcp-config", config.to_str().unwrap()], None);
    assert_eq!(invalid.code, 1, "{}", invalid.stderr);
    assert_eq!(
        invalid.json()["output"],
        "Invalid arguments for tool `inner__read`:\n- /path: missing required property\nArguments received: {}\nFix the arguments and call `inner__read` again."
    );
}

#[test]
fn turn_runs_mounted_and_built_in_tools_together() {
    let fx = Fixture::new();
    let config = config(&fx);
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "inner__read", "input": {"path": "hello.txt"}},
        {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "hello.txt"}},
    ]});
    let run = fx.run(
        &["turn", "--format", "anthropic", "--mcp-config", config.to_str().unwrap()],
        Some(message.to_string().as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.json(),
        json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": HELLO},
            {"type": "tool_result", "tool_use_id": "t2", "content": HELLO},
        ]}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_aggregates_the_mounted_servers_behind_one_endpoint() {
    let fx = Fixture::new();
    let config = config(&fx);
    let command =
        tokio::process::Command::from(fx.command(&["serve", "--mcp-config", config.to_str().unwrap()]));
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"read") && names.contains(&"inner__read"), "{names:?}");
    let Value::Object(arguments) = json!({"path": "hello.txt"}) else { unreachable!() };
    let result =
        client.call_tool(CallToolRequestParams::new("inner__read").with_arguments(arguments)).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(serde_json::to_value(&result.content).unwrap(), json!([{"type": "text", "text": HELLO}]));
}

#[test]
fn a_bad_file_is_a_usage_error_and_a_server_that_does_not_start_a_runtime_error() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("bad.json");
    std::fs::write(&path, r#"{"servers": {}}"#).unwrap();
    let run = fx.run(&["list", "--mcp-config", path.to_str().unwrap()], None);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        format!(
            "tools: --mcp-config: MCP configuration {}: no `mcpServers` object at the top level\n",
            path.display()
        )
    );

    std::fs::write(&path, r#"{"mcpServers": {"gone": {"command": "/nonexistent/server"}}}"#).unwrap();
    let run =
        fx.run(&["call", "read", r#"{"path": "hello.txt"}"#, "--mcp-config", path.to_str().unwrap()], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("tools: MCP server `gone`: cannot start `/nonexistent/server`: "),
        "{}",
        run.stderr
    );
}

/// A `url` entry with an `Authorization` header mounts `tools serve --http` (guarded by a token)
/// over Streamable HTTP.
#[test]
fn an_http_server_is_mounted_with_its_headers() {
    let fx = Fixture::new();
    let server = serve_http_with_token(&fx);
    let url = server.url.clone();

    let path = fx.dir.path().join("mcp-http.json");
    let write = |token: &str| {
        let text = json!({"mcpServers": {"remote": {"url": url, "headers": {"Authorization": format!("Bearer {token}")}}}});
        std::fs::write(&path, text.to_string()).unwrap();
    };
    write("t0ken");
    let run = fx.run(&["list", "--mcp-config", path.to_str().unwrap()], None);
    write("wrong");
    let refused = fx.run(&["list", "--mcp-config", path.to_str().unwrap()], None);
    drop(server);

    assert_eq!(run.code, 0, "{}", run.stderr);
    let definitions = run.json();
    let names: Vec<&str> =
        definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"read") && names.contains(&"remote__read"), "{names:?}");
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("MCP server `remote`"), "{}", refused.stderr);
}

/// A CA's PEM and a `localhost` certificate it signed (DER certificate, PKCS#8 key).
fn test_pki() -> (String, Vec<u8>, Vec<u8>) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "tools test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert =
        CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&key, &issuer).unwrap();
    (ca.pem(), cert.der().to_vec(), key.serialize_der())
}

/// Accepts TLS on a loopback port with `cert` and forwards each connection to `backend`; the port.
async fn tls_front(cert: Vec<u8>, key: Vec<u8>, backend: String) -> u16 {
    use std::sync::Arc;
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert)],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
            )
            .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, backend) = (acceptor.clone(), backend.clone());
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing to forward.
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else { return };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

/// An `https://` entry whose `caCert` (a path relative to the file) trusts the CA that signed
/// the certificate of a TLS front to `tools serve --http`; without it, the mount fails with the
/// certificate error naming the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_server_is_mounted_trusting_the_ca_of_its_entry() {
    let fx = Fixture::new();
    let server = serve_http_with_token(&fx);
    let url = server.url.clone();
    let plain = url.strip_prefix("http://").expect("a plain http address");
    let backend = plain.strip_suffix("/mcp").expect("the endpoint path").to_owned();

    let (ca_pem, cert, key) = test_pki();
    let port = tls_front(cert, key, backend).await;
    std::fs::create_dir_all(fx.dir.path().join("certs")).unwrap();
    std::fs::write(fx.dir.path().join("certs/ca.pem"), ca_pem).unwrap();
    let url = format!("https://localhost:{port}/mcp");
    let path = fx.dir.path().join("mcp-https.json");
    let write = |ca_cert: Option<&str>| {
        let mut entry = json!({"url": url, "headers": {"Authorization": "Bearer t0ken"}});
        if let Some(ca_cert) = ca_cert {
            entry["caCert"] = json!(ca_cert);
        }
        std::fs::write(&path, json!({"mcpServers": {"remote": entry}}).to_string()).unwrap();
    };

    write(Some("certs/ca.pem"));
    let config = path.to_str().unwrap();
    let call = fx.command(&["call", "remote__read", r#"{"path": "hello.txt"}"#, "--mcp-config", config]);
    let run = tokio::task::spawn_blocking(move || common::run(call, None)).await.unwrap();
    write(None);
    let list = fx.command(&["list", "--mcp-config", config]);
    let refused = tokio::task::spawn_blocking(move || common::run(list, None)).await.unwrap();
    drop(server);

    assert_eq!(run.code, 0, "{}", run.stderr);
    let result = run.json();
    assert_eq!(result["output"], HELLO);
    assert_eq!(result["metadata"]["mcp_server"], "remote");
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains(&format!(
            "MCP server `remote`: its TLS certificate is not signed by a trusted authority (unknown issuer) at `{url}`; if the server uses a private CA, set `caCert`"
        )),
        "{}",
        refused.stderr
    );
}

/// A server that cannot be reached: the message is a sentence without Rust type names, and the
/// secret that `${VAR}` put in its URL is shown as `${VAR}`, also where the URL encodes it.
#[test]
fn an_unreachable_http_mount_is_reported_without_its_secrets_or_type_names() {
    let fx = Fixture::new();
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let path = fx.dir.path().join("mcp.json");
    let text = json!({"mcpServers": {"remote": {
        "url": format!("http://127.0.0.1:{port}/mcp?key=${{MOUNT_KEY}}&user=${{MOUNT_USER}}"),
        "headers": {"Authorization": "Bearer ${MOUNT_KEY}"}
    }}});
    std::fs::write(&path, text.to_string()).unwrap();
    let mut command = fx.command(&["list", "--mcp-config", path.to_str().unwrap()]);
    command.env("MOUNT_KEY", "sk-live-4f9a2b").env("MOUNT_USER", "ann smith");
    let run = common::run(command, None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("tools: MCP server `remote`: "), "{}", run.stderr);
    for secret in ["sk-live-4f9a2b", "ann smith", "ann%20smith", "ann+smith"] {
        assert!(!run.stderr.contains(secret), "{secret} shown: {}", run.stderr);
    }
    assert!(run.stderr.contains("key=${MOUNT_KEY}&user=${MOUNT_USER}"), "{}", run.stderr);
    for rust in ["::", "Error<", "Error(", "reqwest", "hyper", "Some(", "kind:"] {
        assert!(!run.stderr.contains(rust), "`{rust}` in: {}", run.stderr);
    }
    assert!(run.stderr.contains("could not connect") || run.stderr.contains("refused"), "{}", run.stderr);
}

/// A stdio MCP server in a few lines of Python (no SDK): it lists a tool every provider takes,
/// one whose schema some providers cannot take (`allOf` inside a property), and one whose
/// schema does not compile.
const ODD_SERVER: &str = r#"
import json, sys
tools = [
    {"name": "fine", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}},
    {"name": "odd", "inputSchema": {"type": "object", "properties": {"options": {"allOf": [True]}}}},
    {"name": "broken", "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}}},
]
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "odd", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": tools}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"#;

/// One mounted tool that cannot be used costs that tool alone (named on stderr), and one that
/// some provider cannot take is left out of that provider's definitions only.
#[test]
fn one_odd_mounted_tool_costs_that_tool_alone() {
    if !std::process::Command::new("python3").arg("-c").arg("pass").status().is_ok_and(|s| s.success()) {
        return tool_tests::skip("python3 is not installed");
    }
    let fx = Fixture::new();
    let script = fx.dir.path().join("odd_server.py");
    std::fs::write(&script, ODD_SERVER).unwrap();
    let config = fx.dir.path().join("odd.json");
    let servers = json!({"mcpServers": {"odd": {"command": "python3", "args": [script.to_str().unwrap()]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let names = |run: &common::Run| -> Vec<String> {
        run.json().as_array().unwrap().iter().filter_map(|d| d["name"].as_str().map(str::to_owned)).collect()
    };
    let run = fx.run(&["list", "--mcp-config", config.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let served = names(&run);
    assert!(
        served.contains(&"odd__fine".to_owned()) && served.contains(&"odd__odd".to_owned()),
        "{served:?}"
    );
    assert!(!served.contains(&"odd__broken".to_owned()), "{served:?}");
    assert!(
        run.stderr
            .contains("tools: MCP server `odd`: the input schema of its tool `broken` cannot be used: "),
        "{}",
        run.stderr
    );
    let mut left_out = 0;
    for format in ["openai-chat", "openai-responses", "anthropic", "gemini"] {
        let run = fx.run(&["list", "--format", format, "--mcp-config", config.to_str().unwrap()], None);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        let listed = |name: &str| run.stdout.contains(&format!("\"{name}\""));
        assert!(listed("odd__fine"), "{format}: {}", run.stdout);
        let refused =
            run.stderr.contains("tools: the mounted tool `odd__odd` is left out of the definitions: ");
        assert_eq!(listed("odd__odd"), !refused, "{format}: {}", run.stderr);
        left_out += usize::from(refused);
    }
    assert!(left_out > 0, "some provider cannot take `allOf` there");
}

/// An `mcpServers` file (a project's `.mcp.json` comes with the project) is read as a settings
/// file is: a FIFO or a device at its name is an error naming it, never a wait or an endless
/// read.
#[test]
fn an_mcp_config_that_is_no_regular_file_is_an_error() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("mcp.json");
    assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
    let file = path.display().to_string();
    let fifo = fx.run(&["list", "--mcp-config", &file], None);
    assert!(fifo.usage_error().ends_with("mcp.json: not a regular file"), "{}", fifo.stderr);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let device = fx.run(&["list", "--mcp-config", &file], None);
    assert!(device.usage_error().ends_with("mcp.json: not a regular file"), "{}", device.stderr);
}
