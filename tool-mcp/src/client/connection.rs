//! Starting one session with a server: spawn (or reach) it and run `initialize`; a server that
//! refuses every revision with that handshake (one that speaks only 2026-07-28 and later) is
//! started again and reached with `server/discover` and per-request metadata instead.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::RoleClient;
use rmcp::model::{ErrorCode, ProtocolVersion};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RunningService};
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

use super::child::{ChildTransport, MAX_ANSWER_BYTES};
use super::config::{ServerConfig, Transport};
use super::handler::MountHandler;
use super::routes::Routed;

/// The last lines of a server's standard error kept for error messages.
const STDERR_LINES: usize = 8;

/// How long the last lines of a server that stopped may take to be read once its connection is
/// gone (its standard error closes when its process, and whatever it started, exit).
const STDERR_SETTLE: Duration = Duration::from_millis(500);

/// A running session: the rmcp client and what the server last wrote to its standard error.
pub(crate) struct Session {
    service: RunningService<RoleClient, MountHandler>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// True once the server's standard error is read to its end (always, over HTTP).
    stderr_read: watch::Receiver<bool>,
}

impl Session {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Whether the connection is gone (the process exited, the stream closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// The server's last lines on standard error, for the operator, once they are read (within
    /// [`STDERR_SETTLE`]): a server that crashed writes its last words just before the
    /// connection closes, and they would otherwise race the error that reports it.
    pub(crate) async fn last_stderr(&self) -> String {
        let mut read = self.stderr_read.clone();
        let _ = tokio::time::timeout(STDERR_SETTLE, read.wait_for(|done| *done)).await;
        tail(&self.stderr)
    }

    /// Ends the session: closes the server's input, and stops its process group if it does not
    /// exit by itself.
    pub(crate) fn close(&self) {
        self.service.cancellation_token().cancel();
    }
}

fn tail(lines: &Mutex<VecDeque<String>>) -> String {
    let lines = lines.lock().unwrap_or_else(|p| p.into_inner());
    lines.iter().cloned().collect::<Vec<_>>().join("\n")
}

/// Starts a session with `config`'s server. The error is a sentence for the model and the
/// operator alike, without the server's name (the caller adds it).
pub(crate) async fn start(config: &ServerConfig, handler: MountHandler) -> Result<Session, String> {
    // `initialize` first: a server that has both keeps what only sessions have (its requests to
    // us: sampling, elicitation).
    let legacy = Attempt { lifecycle: ClientLifecycleMode::Initialize, no_handshake: AtomicBool::new(false) };
    let error = match start_with(config, handler.clone(), &legacy).await {
        Ok(session) => return Ok(session),
        Err(error) if !legacy.no_handshake.load(Ordering::Relaxed) => return Err(error),
        Err(error) => error,
    };
    let discover = Attempt {
        lifecycle: ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
        no_handshake: AtomicBool::new(false),
    };
    start_with(config, handler, &discover)
        .await
        .map_err(|second| format!("{error}; reached again with `server/discover`, {second}"))
}

/// One way of starting a session.
struct Attempt {
    lifecycle: ClientLifecycleMode,
    /// Set when the server answered that it speaks no revision with an `initialize` handshake.
    no_handshake: AtomicBool,
}

impl Attempt {
    /// Notes what the handshake's error says of the server.
    fn saw(&self, error: &ClientInitializeError) {
        let refused_version = match error {
            ClientInitializeError::JsonRpcError(data) => data.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            ClientInitializeError::NoCompatibleProtocolVersion { .. } => true,
            _ => false,
        };
        if refused_version {
            self.no_handshake.store(true, Ordering::Relaxed);
        }
    }
}

async fn start_with(
    config: &ServerConfig,
    handler: MountHandler,
    attempt: &Attempt,
) -> Result<Session, String> {
    match &config.transport {
        Transport::Stdio { command, args, env, cwd } => {
            let mut cmd = tokio::process::Command::new(command);
            config.environment.apply(cmd.as_std_mut());
            cmd.args(args).envs(env);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let placeholders = match &config.sandbox {
                Some(sandbox) => {
                    let dir = match cwd {
                        Some(cwd) => std::path::PathBuf::from(cwd),
                        None => std::env::current_dir()
                            .map_err(|e| format!("cannot read the current directory: {e}"))?,
                    };
                    let held = sandbox
                        .apply_holding(cmd.as_std_mut(), &dir)
                        .map_err(|e| format!("cannot prepare the sandbox for `{command}`: {e}"))?;
                    Some(held)
                }
                None => None,
            };
            let mut wrapped = CommandWrap::from(cmd);
            // A group of its own: stopping the server stops whatever it started (npx starts node).
            wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
            wrapped.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            let cannot_start = |e: std::io::Error| {
                format!("cannot start `{command}`: {e}; check `command` in the configuration")
            };
            let mut child = wrapped.spawn().map_err(cannot_start)?;
            let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
                return Err(cannot_start(std::io::Error::other(
                    "its standard input or output is not a pipe",
                )));
            };
            let stderr = child.stderr().take();
            let process = ChildTransport::new(child, stdout, stdin, MAX_ANSWER_BYTES, placeholders);
            let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
            let (read_to_end, stderr_read) = watch::channel(stderr.is_none());
            if let Some(stderr) = stderr {
                let lines = lines.clone();
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = reader.next_line().await {
                        let mut lines = lines.lock().unwrap_or_else(|p| p.into_inner());
                        if lines.len() == STDERR_LINES {
                            lines.pop_front();
                        }
                        lines.push_back(line);
                    }
                    let _ = read_to_end.send(true);
                });
            }
            let process = Routed { inner: process, routes: handler.routes.clone() };
            let serving = async {
                let served = handler.serve_with_lifecycle(process, attempt.lifecycle.clone()).await;
                served.inspect_err(|e| attempt.saw(e))
            };
            let started = handshake(config, &format!("`{command}` started but"), serving).await;
            started.map(|service| Session { service, stderr: lines.clone(), stderr_read }).map_err(
                |message| {
                    let tail = tail(&lines);
                    if tail.is_empty() {
                        message
                    } else {
                        format!("{message}; its standard error ended with: {tail}")
                    }
                },
            )
        }
        Transport::Http { url, headers, ca_cert } => {
            start_http(config, url, headers, ca_cert.as_deref(), handler, attempt).await
        }
    }
}

/// Awaits `initialize` within the configured startup time, naming `what` in the error.
async fn handshake<T, E: std::fmt::Display>(
    config: &ServerConfig,
    what: &str,
    serving: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(config.startup_timeout, serving).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(e)) => Err(format!("{what} did not complete the MCP handshake ({e})")),
        Err(_) => Err(format!(
            "{what} did not complete the MCP handshake within {} s",
            config.startup_timeout.as_secs()
        )),
    }
}

#[cfg(feature = "http")]
async fn start_http(
    config: &ServerConfig,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    ca_cert: Option<&std::path::Path>,
    handler: MountHandler,
    attempt: &Attempt,
) -> Result<Session, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let scheme = url.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
    let https = match scheme.as_deref() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(format!("`{url}` is not an `http://` or `https://` URL; correct `url`")),
    };
    #[cfg(not(feature = "https"))]
    if https {
        return Err(format!(
            "`{url}` is an `https://` URL, and this build has no TLS; build tool-runtime with its `mcp-https` feature (the `tools` binary has it), or use an `http://` endpoint"
        ));
    }
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let header = http::HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`{name}` in `headers` is not a valid HTTP header name; correct it"))?;
        let value = http::HeaderValue::try_from(value.as_str()).map_err(|_| {
            format!("the value of header `{name}` is not a valid HTTP header value; correct it in `headers`")
        })?;
        custom.insert(header, value);
    }
    let (client, refusal) = super::http_client::build(https, ca_cert)?;
    let transport_config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(custom);
    // A server with an `Authorization` header of its own is not ours to authorize.
    #[cfg(feature = "oauth")]
    if !headers.keys().any(|name| name.eq_ignore_ascii_case("authorization"))
        && let Ok(tokens) = super::oauth::Tokens::new(
            &config.name,
            url,
            &config.oauth,
            ca_cert.map(std::path::Path::to_owned),
        )
    {
        let client = super::oauth::BearerClient { inner: client, tokens: Arc::new(tokens) };
        let transport = StreamableHttpClientTransport::with_client(client, transport_config);
        let transport = Routed { inner: transport, routes: handler.routes.clone() };
        let serving = handler.serve_with_lifecycle(transport, attempt.lifecycle.clone());
        return finish_http(config, url, serving, &refusal, attempt).await;
    }
    let transport = StreamableHttpClientTransport::with_client(client, transport_config);
    let transport = Routed { inner: transport, routes: handler.routes.clone() };
    let serving = handler.serve_with_lifecycle(transport, attempt.lifecycle.clone());
    finish_http(config, url, serving, &refusal, attempt).await
}

/// Awaits the handshake of an HTTP server and makes it a session.
#[cfg(feature = "http")]
async fn finish_http(
    config: &ServerConfig,
    url: &str,
    serving: impl Future<
        Output = Result<RunningService<RoleClient, MountHandler>, rmcp::service::ClientInitializeError>,
    >,
    refusal: &super::http_client::CertificateRefusal,
    attempt: &Attempt,
) -> Result<Session, String> {
    let complete = std::sync::atomic::AtomicBool::new(false);
    let serving = async {
        serving.await.map_err(|error| {
            attempt.saw(&error);
            let failure = describe_http(&error, config);
            complete.store(failure.complete, std::sync::atomic::Ordering::Relaxed);
            failure
        })
    };
    let started = handshake(config, &format!("`{url}`"), serving).await;
    // A refused certificate is the whole story; an authorization failure says what to do; any
    // other failure may be the address or a token.
    let service = started.map_err(|e| {
        refusal.explain(url).unwrap_or_else(|| {
            if complete.load(std::sync::atomic::Ordering::Relaxed) {
                e
            } else {
                format!("{e}; check `url` and `headers` (a token, for instance) in the configuration")
            }
        })
    })?;
    Ok(Session { service, stderr: Arc::default(), stderr_read: watch::channel(true).1 })
}

/// Why a handshake over HTTP failed, in words.
#[cfg(feature = "http")]
struct HttpFailure {
    message: String,
    /// The message says all there is to do (log in, say).
    complete: bool,
}

#[cfg(feature = "http")]
impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What went wrong with an HTTP server's handshake, for a person: the HTTP client's own words
/// (a refused connection, a status), not rmcp's wrappers, which name the transport's Rust type.
#[cfg(feature = "http")]
fn describe_http(error: &rmcp::service::ClientInitializeError, config: &ServerConfig) -> HttpFailure {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    use rmcp::transport::worker::WorkerQuitReason;

    let failure = |message: String| HttpFailure { message, complete: false };
    let ClientInitializeError::TransportError { error, .. } = error else {
        return failure(match error {
            ClientInitializeError::JsonRpcError(error) => {
                format!("it answered `initialize` with an error: {} (error {})", error.message, error.code.0)
            }
            ClientInitializeError::ConnectionClosed(_) => {
                "the connection closed during `initialize`".to_owned()
            }
            _ => "it did not answer `initialize` as an MCP server does".to_owned(),
        });
    };
    let quit = error.error.downcast_ref::<WorkerQuitReason<StreamableHttpError<reqwest::Error>>>();
    let http = match quit {
        Some(WorkerQuitReason::Fatal { error, .. }) => Some(error),
        _ => error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
    };
    let Some(error) = http else {
        return failure(innermost(&*error.error));
    };
    match error {
        StreamableHttpError::AuthRequired(challenge) => {
            HttpFailure { message: unauthorized(&challenge.www_authenticate_header, config), complete: true }
        }
        #[cfg(feature = "oauth")]
        StreamableHttpError::Auth(rmcp::transport::auth::AuthError::AuthorizationFailed(message)) => {
            HttpFailure { message: message.clone(), complete: true }
        }
        StreamableHttpError::Client(error) if error.is_connect() => {
            failure(format!("could not connect to it ({})", innermost(error)))
        }
        StreamableHttpError::Client(error) if error.is_timeout() => {
            failure("the connection to it timed out".to_owned())
        }
        StreamableHttpError::Client(error) => failure(innermost(error)),
        other => failure(other.to_string()),
    }
}

/// What to do about a 401: fix the entry's own `Authorization` header, or log in when the server
/// speaks OAuth (its challenge names its resource metadata), or give it a token.
#[cfg(feature = "http")]
fn unauthorized(challenge: &str, config: &ServerConfig) -> String {
    let Transport::Http { headers, .. } = &config.transport else { return String::new() };
    if headers.keys().any(|name| name.eq_ignore_ascii_case("authorization")) {
        return "it refused the `Authorization` header of its entry (HTTP 401); check the token in `headers`"
            .to_owned();
    }
    #[cfg(feature = "oauth")]
    let login = super::oauth::login_advice(&config.oauth);
    #[cfg(not(feature = "oauth"))]
    let login = "this build has no OAuth (feature `mcp-oauth` of tool-runtime)".to_owned();
    if challenge.to_ascii_lowercase().contains("resource_metadata=") {
        format!("it requires OAuth authorization (HTTP 401) and no valid token for it is stored; {login}")
    } else {
        // The server's words, but not a page of them.
        let challenge: String = challenge.chars().filter(|c| !c.is_control()).take(200).collect();
        format!(
            "it requires authorization (HTTP 401, `WWW-Authenticate: {challenge}`); set its token in `headers` (`\"Authorization\": \"Bearer ${{TOKEN}}\"`), or, if it supports OAuth, {login}"
        )
    }
}

/// The innermost cause of `error`: the operating system's words for a refused connection, say.
#[cfg(feature = "http")]
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

#[cfg(not(feature = "http"))]
async fn start_http(
    _config: &ServerConfig,
    url: &str,
    _headers: &std::collections::BTreeMap<String, String>,
    _ca_cert: Option<&std::path::Path>,
    _handler: MountHandler,
    _attempt: &Attempt,
) -> Result<Session, String> {
    Err(format!(
        "it is an HTTP server ({url}), and this build mounts stdio servers only; build with the `mcp-http` feature of tool-runtime to mount it"
    ))
}
