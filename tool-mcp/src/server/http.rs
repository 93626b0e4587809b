//! Serving over MCP's Streamable HTTP transport (feature `mcp-http`): one session state per
//! client, the `Origin`, `Host` and bearer-token checks, the checks of each message (those of
//! stdio), and graceful shutdown. A POST's answer is [`super::http_post`]'s.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::calls::{Entered, Gauge, InFlight};
use super::host_check::HostCheck;
use super::http_post::{self, Poster};
use super::http_response::{GATHER_WINDOW, HttpResponse, json, no_session, plain};
use super::http_sessionless::Sessionless;
use super::http_sessions::{self, CappedSessions};
use super::inbound::{self, Framing, INVALID_PARAMS, Inbound};
use super::limits::{Admitted, Connections, Refused};
use super::served::{self, Served, SessionEnd};
use super::{McpServer, ServeError, ServeErrorKind, tasks};

/// The path of the MCP endpoint: `http://ADDR/mcp`.
pub const MCP_PATH: &str = "/mcp";

/// How long a shutdown lets calls in flight finish before it cancels them, unless configured.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long the connections may take to close once every call has answered: the responses are
/// written and the event streams end by then, unless a client stopped reading.
const CLOSE_CONNECTIONS: Duration = Duration::from_secs(5);

/// A pause after a failed `accept` (out of file descriptors, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The most connections open at once, unless configured.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The most connections one client (one IP address, or one IPv6 /64) may have open at once,
/// unless configured.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 128;

/// How long a client may take to send a request's headers (counted from the connection's start,
/// or from the end of its previous answer), unless configured.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send a request's body, unless configured.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The most sessions open at once, unless configured.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;

/// How long a session may stay idle before it ends, unless configured.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How [`McpServer::serve_http`] serves: who may connect, the token they need, and when and how
/// it stops.
///
/// The defaults fit a server on a loopback address: requests must name a loopback host
/// (`localhost`, `127.0.0.1`, `[::1]`) or the address the server listens on in `Host`, and a
/// request with an `Origin` header (a browser's) is refused with `403` unless it is a page of
/// this machine (`http://localhost:PORT`, `http://127.0.0.1:PORT`, `http://[::1]:PORT`, or
/// `https`) or the origin is allowed: that is the DNS-rebinding protection the MCP specification
/// asks for (a rebinding page's origin is its own name, such as `http://evil.example`). Clients
/// that are not browsers send no `Origin` and pass.
#[must_use]
#[derive(Clone)]
pub struct HttpOptions {
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    any_host: bool,
    token: Option<Arc<[u8]>>,
    shutdown: CancellationToken,
    grace: Duration,
    stateless: bool,
    max_connections: usize,
    max_connections_per_client: usize,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    max_sessions: usize,
    session_idle_timeout: Duration,
    other_users: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            any_host: false,
            token: None,
            shutdown: CancellationToken::new(),
            grace: DEFAULT_SHUTDOWN_GRACE,
            stateless: false,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            other_users: false,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("any_host", &self.any_host)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("grace", &self.grace)
            .field("stateless", &self.stateless)
            .field("max_connections", &self.max_connections)
            .field("max_connections_per_client", &self.max_connections_per_client)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("other_users", &self.other_users)
            .finish_non_exhaustive()
    }
}

impl HttpOptions {
    /// The defaults: loopback hosts only, no browser origin, no token, a shutdown grace of
    /// [`DEFAULT_SHUTDOWN_GRACE`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts requests from the browser origin `origin`: a scheme, host and port such as
    /// `http://localhost:5173` (`:*` for any port, `null` for `Origin: null`).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Accepts requests whose `Host` is `host` (a name, or `name:port`), besides the loopback
    /// names and the address the server listens on.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts requests whatever their `Host` (a server reached through names it cannot know).
    /// The `Origin` check and the token still apply.
    pub fn allow_any_host(mut self) -> Self {
        self.any_host = true;
        self
    }

    /// Requires `Authorization: Bearer TOKEN` on every request. A request without it, or with
    /// another token, is answered `401` and nothing runs. Tokens are compared in constant time.
    pub fn bearer_token(mut self, token: impl AsRef<[u8]>) -> Self {
        self.token = Some(Arc::from(token.as_ref()));
        self
    }

    /// Without a [token](HttpOptions::bearer_token), serves other users' processes of this
    /// machine too. By default a server that asks for no token answers a connection from this
    /// machine only when the client's socket is established and belongs to the server's own
    /// user (or root), as the kernel says when asked by the connection's addresses (Linux,
    /// `NETLINK_SOCK_DIAG`): any account of the machine can reach a loopback port, and the tools
    /// run as the server's user. Clients on other machines are not looked up.
    pub fn allow_other_users(mut self) -> Self {
        self.other_users = true;
        self
    }

    /// Shuts the server down once `token` is cancelled (see [`McpServer::serve_http`]).
    pub fn shutdown_on(mut self, token: CancellationToken) -> Self {
        self.shutdown = token;
        self
    }

    /// How long a shutdown lets calls in flight finish before it cancels them (default
    /// [`DEFAULT_SHUTDOWN_GRACE`]).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Serves every request on its own, with no session (no `Mcp-Session-Id`), even for
    /// clients of revisions before 2026-07-28 (which has no sessions at all). Each request then
    /// has a session state of its own.
    pub fn stateless(mut self) -> Self {
        self.stateless = true;
        self
    }

    /// The most connections open at once (default [`DEFAULT_MAX_CONNECTIONS`], at least 1). Past
    /// it, a new connection takes the place of the oldest one none of whose requests has passed
    /// the checks yet (`Host`, `Origin`, the token), which is closed; when every connection has
    /// had one, the new one is answered `503` with a sentence saying so, and closed.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// The most connections one client may have open at once (default
    /// [`DEFAULT_MAX_CONNECTIONS_PER_CLIENT`], at least 1): one IP address, or one IPv6 /64
    /// network. A connection past it is answered `429` with a sentence saying so, and closed. A
    /// client that holds many connections open without finishing its requests thus cannot take
    /// every connection from the others.
    pub fn max_connections_per_client(mut self, max: usize) -> Self {
        self.max_connections_per_client = max.max(1);
        self
    }

    /// How long a client may take to send a request's headers (default
    /// [`DEFAULT_HEADER_READ_TIMEOUT`]), counted from the start of the connection or the end of
    /// its previous answer: a connection that is idle or sends its headers slowly is closed then.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a client may take to send a request's body once its headers are in (default
    /// [`DEFAULT_BODY_READ_TIMEOUT`]). A body still incomplete then is answered `408` with a
    /// sentence saying so, and the connection is closed.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The most sessions open at once (default [`DEFAULT_MAX_SESSIONS`], at least 1). An
    /// `initialize` past it is answered `503` with a JSON-RPC error naming the limit; a session
    /// ends with `DELETE`, when it is idle for [`HttpOptions::session_idle_timeout`], or at
    /// shutdown.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// How long a session may go without a request before it ends
    /// (default [`DEFAULT_SESSION_IDLE_TIMEOUT`]).
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }
}

impl McpServer {
    /// Serves MCP's Streamable HTTP transport at [`MCP_PATH`] on `listener`, to any number of
    /// clients at once, until [`HttpOptions::shutdown_on`]'s token is cancelled.
    ///
    /// - Each session (a client of a revision before 2026-07-28, from `initialize` until it
    ///   sends `DELETE` or stays idle for 5 minutes) has a dispatcher of its own: its own session
    ///   state (a todo list, say), parallel gate and repeat guard, and session id `http-N`.
    ///   Registry, dependencies, hooks, output store and concurrency cap are shared. Revision
    ///   2026-07-28 has no sessions: its requests share one state of the server's (background
    ///   commands, tasks, the todo list), which ends with the server.
    /// - When a session ends, its calls in flight are cancelled once `rmcp` stops waiting for
    ///   their answers (5 seconds), which kills the processes they started; then its tasks are
    ///   cancelled and its session state is cleared, which kills its background commands and
    ///   every process they started.
    /// - A request with an `Origin` that is not a loopback one or allowed gets `403`, one whose `Host` is not
    ///   allowed `403`, one without the token (when one is set) `401`: none of them runs anything.
    ///
    /// Shutdown: the server stops accepting connections and requests, lets calls in flight
    /// finish for [`HttpOptions::shutdown_grace`], then cancels the rest (they answer within the
    /// dispatcher's cancel grace, and the processes they started are killed), ends every session
    /// and returns once the connections are closed.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use tool_runtime::mcp_server::{HttpOptions, McpServer};
    /// use tool_runtime::{CancellationToken, Dispatcher, Registry};
    ///
    /// let server = McpServer::new(Dispatcher::builder(Registry::from_inventory()?))?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// let stop = CancellationToken::new();
    /// server.serve_http(listener, HttpOptions::new().bearer_token("s3cret").shutdown_on(stop)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn serve_http(self, listener: TcpListener, options: HttpOptions) -> Result<(), ServeError> {
        let local = listener.local_addr().map_err(|e| ServeError(ServeErrorKind::Io(e)))?;
        let host_check =
            HostCheck::new(&options.allowed_hosts, options.any_host, &options.allowed_origins, local)
                .map_err(|reason| {
                    ServeError(ServeErrorKind::Io(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        reason,
                    )))
                })?;
        let in_flight = Arc::new(InFlight::default());
        let sessions = CancellationToken::new();
        let cancel_grace = self.dispatcher().cancel_grace();
        let max_body = self.inner.max_message_bytes;
        let template = McpServer { in_flight: in_flight.clone(), ..self };
        let next_session = AtomicU64::new(1);
        let revisions = rmcp::Service::<rmcp::RoleServer>::supported_protocol_versions(&template)
            .iter()
            .map(|version| version.as_str().to_owned())
            .collect();
        let server: Arc<dyn Fn() -> McpServer + Send + Sync> = Arc::new(move || {
            let id = format!("http-{}", next_session.fetch_add(1, Ordering::Relaxed));
            template.for_session(id)
        });
        let factory = {
            let server = server.clone();
            move || Ok(server())
        };
        let mut local_sessions = LocalSessionManager::default();
        local_sessions.session_config.keep_alive = Some(options.session_idle_timeout);
        let capped = Arc::new(CappedSessions::new(local_sessions, options.max_sessions));
        let config = rmcp_config(&options, sessions.clone()).with_max_request_body_bytes(max_body);
        let poster = Poster {
            sessions: if options.stateless { None } else { Some(capped.clone()) },
            server,
            revisions,
            keep_alive: config.sse_keep_alive,
            shutdown: sessions.clone(),
            sessionless: Sessionless::new(options.session_idle_timeout, sessions.clone()),
        };
        let service = StreamableHttpService::new(factory, capped.clone(), config);
        let responses = Gauge::default();
        let endpoint = Arc::new(Endpoint {
            service,
            poster,
            host_check,
            token: options.token.clone(),
            max_body,
            body_read_timeout: options.body_read_timeout,
            sessions: if options.stateless { None } else { Some(capped) },
            responses: responses.clone(),
        });
        let connections = Connections::new(options.max_connections, options.max_connections_per_client);
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1.timer(TokioTimer::new()).header_read_timeout(options.header_read_timeout);

        let graceful = GracefulShutdown::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let admitted = match connections.admit(peer.ip()) {
                            Ok(admitted) => Arc::new(admitted),
                            Err(refused) => {
                                connections.refuse(stream, &refused);
                                continue;
                            }
                        };
                        // Each answer goes out at once: small writes must not wait for the
                        // client's delayed acknowledgement of the previous one.
                        let _ = stream.set_nodelay(true);
                        let checks_user = options.token.is_none() && !options.other_users;
                        // The connection's own address (the listener's may be `0.0.0.0`).
                        let here = stream.local_addr().unwrap_or(local);
                        if checks_user && let Some(refused) = other_user(peer, here, local) {
                            connections.refuse(stream, &refused);
                            continue;
                        }
                        let endpoint = endpoint.clone();
                        let proof = admitted.clone();
                        let service = hyper::service::service_fn(move |request| {
                            let (endpoint, proof) = (endpoint.clone(), proof.clone());
                            async move { Ok::<_, Infallible>(endpoint.handle(request, &proof).await) }
                        });
                        let connection = http1.serve_connection(TokioIo::new(stream), service);
                        let connection = graceful.watch(connection);
                        tokio::spawn(async move {
                            // A connection's error (the client went away) concerns that client
                            // only; one closed to make room for another ends here.
                            tokio::select! {
                                _ = connection => {}
                                () = admitted.evicted() => {}
                            }
                            drop(admitted);
                        });
                    }
                    Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
                },
                () = options.shutdown.cancelled() => break,
            }
        }
        drop(listener);
        // Idle connections close now, busy ones after their request: no new request is read.
        let closed = tokio::spawn(graceful.shutdown());
        let _ = tokio::time::timeout(options.grace, in_flight.idle()).await;
        in_flight.stop();
        let _ = tokio::time::timeout(cancel_grace + Duration::from_secs(1), in_flight.idle()).await;
        // Every call has answered; once the answers are written, end the sessions, and with them
        // the event streams that would keep their connections open.
        let _ = tokio::time::timeout(CLOSE_CONNECTIONS, responses.idle()).await;
        sessions.cancel();
        let _ = tokio::time::timeout(CLOSE_CONNECTIONS, closed).await;
        Ok(())
    }

    /// This server for a new HTTP session: a dispatcher of its own, the rest shared.
    fn for_session(&self, session_id: String) -> McpServer {
        let served = self.inner.sessions.derive(&self.served, |served| Served {
            tools: served.tools.clone(),
            dispatcher: served.dispatcher.new_session(session_id),
        });
        let tasks = Arc::<tasks::SessionTasks>::default();
        // rmcp drops the session's server once the session ended and its calls answered.
        let end =
            SessionEnd { state: served::current(&served).dispatcher.session().clone(), tasks: tasks.clone() };
        McpServer {
            inner: self.inner.clone(),
            served,
            input_closed: CancellationToken::new(),
            in_flight: self.in_flight.clone(),
            calls: super::calls::Gauge::default(),
            subscriptions: Arc::default(),
            tasks,
            parked: Arc::default(),
            log_threshold: Arc::default(),
            _end: Some(Arc::new(end)),
        }
    }
}

fn rmcp_config(options: &HttpOptions, sessions: CancellationToken) -> StreamableHttpServerConfig {
    // `Host` and `Origin` are checked in front of rmcp ([`HostCheck`]), once, with this server's
    // own rules and answers.
    // The standing GET stream is primed by the sessions, for the revisions that have priming
    // events ([`CappedSessions`]); rmcp would prime it for every revision.
    StreamableHttpServerConfig::default()
        .with_cancellation_token(sessions)
        .with_legacy_session_mode(!options.stateless)
        .with_sse_retry(None)
        .disable_allowed_hosts()
        .disable_allowed_origins()
}

/// The HTTP endpoint: the path, token and message checks, then the POST's answer from the checked
/// message ([`Poster`]); GET and DELETE go to `rmcp`'s service, over the same sessions.
struct Endpoint {
    service: StreamableHttpService<McpServer, CappedSessions>,
    /// Answers POSTs from the message the checks read.
    poster: Poster,
    /// The DNS-rebinding check, ahead of everything else.
    host_check: HostCheck,
    token: Option<Arc<[u8]>>,
    /// [`HttpOptions::body_read_timeout`].
    body_read_timeout: Duration,
    /// The sessions, to refuse an `initialize` past their limit (none when stateless).
    sessions: Option<Arc<CappedSessions>>,
    /// The longest request body read ([`McpServerBuilder::max_message_bytes`]).
    ///
    /// [`McpServerBuilder::max_message_bytes`]: super::McpServerBuilder::max_message_bytes
    max_body: usize,
    /// The answers to POSTs still being written (a call's answer is an event stream that ends
    /// after the result).
    responses: Gauge,
}

impl Endpoint {
    /// Answers `request`, which came on the connection `admitted`: one that passes the checks
    /// proves it.
    async fn handle(&self, request: Request<Incoming>, admitted: &Admitted) -> HttpResponse {
        if request.uri().path() != MCP_PATH {
            return plain(
                StatusCode::NOT_FOUND,
                format!("Not found: the MCP endpoint of this server is {MCP_PATH}."),
            );
        }
        if let Err((status, message)) = self.host_check.check(request.uri(), request.headers()) {
            return plain(status, message);
        }
        if let Some(token) = &self.token
            && !authorized(request.headers().get(header::AUTHORIZATION), token)
        {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send this server's token as `Authorization: Bearer TOKEN`.".to_owned(),
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer realm=\"mcp\""));
            return response;
        }
        admitted.prove();
        if request.method() == http::Method::DELETE {
            // A session that ended (deleted already, idle too long) or never was: `404`, as for
            // any other request naming it.
            if let (Some(sessions), Some(named)) =
                (&self.sessions, request.headers().get(http_post::SESSION_ID))
                && let Ok(named) = named.to_str()
                && !rmcp::transport::streamable_http_server::SessionManager::has_session(
                    sessions.as_ref(),
                    &rmcp::transport::streamable_http_server::session::SessionId::from(named),
                )
                .await
                .unwrap_or(false)
            {
                return no_session();
            }
            // rmcp answers a session's end `202 Accepted`; the MCP SDKs expect `200` (or `204`).
            let mut response = self.service.handle(request).await;
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::OK;
            }
            return response;
        }
        if request.method() != http::Method::POST {
            return self.service.handle(request).await;
        }
        let entered = self.responses.enter();
        let (parts, body) = request.into_parts();
        let reading = read_body(body, self.max_body, declared_length(&parts.headers));
        let Ok(read) = tokio::time::timeout(self.body_read_timeout, reading).await else {
            let mut response = plain(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "Request timeout: the request body did not arrive whole within {}, the time this server \
                     waits for one. Send the whole body at once.",
                    tool_core::words::duration(self.body_read_timeout)
                ),
            );
            response.headers_mut().insert(header::CONNECTION, http::HeaderValue::from_static("close"));
            return response;
        };
        let checked = match read {
            Ok(body) => match inbound::check(&body, Framing::Bodies) {
                Inbound::Message(message) => match self.refusal(&parts, &message).await {
                    None => Ok(message),
                    Some(refused) => Err(refused),
                },
                Inbound::Reply(reply) | Inbound::Unanswered(reply) => Err((status_of(&reply), reply)),
            },
            Err(Unread::TooLong { prefix, length }) => {
                Err((StatusCode::PAYLOAD_TOO_LARGE, inbound::too_long(&prefix, self.max_body, length)))
            }
            Err(Unread::Failed(error)) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    format!("The request body could not be read: {error}."),
                );
            }
        };
        match checked {
            Ok(message) => {
                let revision = revision_of(&parts, &message);
                let response = self.poster.answer(&parts.headers, *message, revision).await;
                gathered(response).await.map(|body| Counted { body, _entered: entered }.boxed())
            }
            Err((status, reply)) => json(status, &reply),
        }
    }

    /// The error answer to a message that passed the checks but is not served: an `initialize`
    /// past the sessions' limit, or one sent on a revision without it (2026-07-28 on).
    async fn refusal(
        &self,
        parts: &http::request::Parts,
        message: &ClientJsonRpcMessage,
    ) -> Option<(StatusCode, Value)> {
        let JsonRpcMessage::Request(request) = message else { return None };
        if !matches!(request.request, ClientRequest::InitializeRequest(_)) {
            return None;
        }
        let id = serde_json::to_value(&request.id).ok();
        if let Some(revision) = revision_of(parts, message) {
            return Some((
                StatusCode::NOT_FOUND,
                inbound::error_response(
                    id,
                    inbound::METHOD_NOT_FOUND,
                    format!(
                        "Method not found: `initialize` does not exist in protocol revision {revision}, which \
                         has no handshake. Send `server/discover` to learn what this server supports, or leave \
                         out the {revision} protocol version to use `initialize` on an earlier revision."
                    ),
                ),
            ));
        }
        let sessions = self.sessions.as_ref()?;
        if parts.headers.contains_key(http_post::SESSION_ID) || sessions.open() < sessions.max() {
            return None;
        }
        Some((
            StatusCode::SERVICE_UNAVAILABLE,
            inbound::error_response(id, inbound::SERVER_BUSY, http_sessions::full_message(sessions.max())),
        ))
    }
}

/// The first protocol revision without the `initialize` handshake.
const FIRST_STATELESS_REVISION: &str = "2026-07-28";

/// The revision a message says it speaks, when that revision has no `initialize` (2026-07-28 and
/// later): from its `MCP-Protocol-Version` header, which a client sends only once it speaks a
/// revision, or from a request's `_meta`. The version an `initialize` proposes in its params is
/// only a proposal, answered with a revision this server speaks, and does not count.
fn revision_of(parts: &http::request::Parts, message: &ClientJsonRpcMessage) -> Option<String> {
    let header =
        parts.headers.get(http_post::PROTOCOL_VERSION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let meta = match message {
        JsonRpcMessage::Request(request) => {
            request.request.get_meta().protocol_version().map(|version| version.to_string())
        }
        _ => None,
    };
    // Revisions are dates: their text sorts as they do. Text that is no date names no revision
    // (and is refused as one this server does not speak).
    [header, meta].into_iter().flatten().find(|revision| {
        revision.starts_with(|c: char| c.is_ascii_digit()) && revision.as_str() >= FIRST_STATELESS_REVISION
    })
}

/// `response`, written in one go when it can be: an event stream that ends within
/// [`GATHER_WINDOW`] is sent whole, as one body of known length; one that has sent a message and
/// goes on (progress, a call still running) is sent as it comes, after what was gathered.
async fn gathered(response: HttpResponse) -> HttpResponse {
    let streams = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if !streams {
        return response;
    }
    let (parts, mut body) = response.into_parts();
    let mut gathered: Vec<u8> = Vec::new();
    let window = tokio::time::sleep(GATHER_WINDOW);
    let mut window = std::pin::pin!(window);
    let mut has_message = false;
    loop {
        let next = if has_message {
            // Only what is ready now: a message already waits for this write.
            match tokio::time::timeout(Duration::ZERO, body.frame()).await {
                Ok(next) => next,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                biased;
                next = body.frame() => next,
                () = &mut window => break,
            }
        };
        match next {
            None => {
                return Response::from_parts(parts, Full::new(Bytes::from(gathered)).boxed());
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    has_message |= carries_message(&data);
                    gathered.extend_from_slice(&data);
                }
            }
            Some(Err(never)) => match never {},
        }
    }
    let rest = Prefixed { prefix: Some(Bytes::from(gathered)).filter(|p| !p.is_empty()), body };
    Response::from_parts(parts, rest.boxed())
}

/// Whether a piece of an event stream holds a message (a priming event's `data` is empty).
fn carries_message(data: &[u8]) -> bool {
    data.split(|&byte| byte == b'\n').any(|line| {
        line.strip_prefix(b"data:").is_some_and(|rest| rest.iter().any(|byte| !byte.is_ascii_whitespace()))
    })
}

/// A body whose first bytes were already read.
struct Prefixed {
    prefix: Option<Bytes>,
    body: BoxBody<Bytes, Infallible>,
}

impl http_body::Body for Prefixed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        if let Some(prefix) = self.prefix.take() {
            return std::task::Poll::Ready(Some(Ok(http_body::Frame::data(prefix))));
        }
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_none() && self.body.is_end_stream()
    }
}

/// Why a request body was not read whole.
#[derive(Debug)]
enum Unread {
    /// It is longer than the limit: its first bytes, and its length when declared.
    TooLong { prefix: Bytes, length: Option<u64> },
    /// The connection failed while reading it.
    Failed(String),
}

/// The `Content-Length` of a request, when it has a readable one.
fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

/// Reads a request body of at most `limit` bytes; a body declared longer is not read at all,
/// one that turns out longer is read up to the limit.
async fn read_body<B>(body: B, limit: usize, declared: Option<u64>) -> Result<Bytes, Unread>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: fmt::Display,
{
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(Unread::TooLong { prefix: Bytes::new(), length: declared });
    }
    let mut body = std::pin::pin!(body);
    // Most bodies come in one frame, kept as it is; more are joined.
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| Unread::Failed(error.to_string()))?;
        let Ok(data) = frame.into_data() else { continue };
        let read = first.as_ref().map_or(joined.len(), Bytes::len);
        if data.len() > limit - read {
            let mut prefix = first.map_or(joined, |first| first.to_vec());
            prefix.extend_from_slice(&data[..limit - read]);
            return Err(Unread::TooLong { prefix: prefix.into(), length: declared });
        }
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            earlier => {
                joined.extend_from_slice(earlier.as_deref().unwrap_or_default());
                joined.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| joined.into()))
}

/// The status of an HTTP response carrying `reply`, an error for a message that failed the
/// checks: `200` for a request whose params do not fit (the client's request gets its error like
/// any other), `400` for everything that is not a request the server can read.
fn status_of(reply: &Value) -> StatusCode {
    let request_error = reply.get("id").is_some_and(|id| !id.is_null())
        && reply.pointer("/error/code").and_then(Value::as_i64) == Some(INVALID_PARAMS);
    if request_error { StatusCode::OK } else { StatusCode::BAD_REQUEST }
}

/// A response body counted in flight until it is written or dropped.
struct Counted {
    body: BoxBody<Bytes, Infallible>,
    _entered: Entered,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Why a connection from `peer` to `here` (on the listener at `listening`) is refused for want
/// of a token: its socket is another user's of this machine (not this process's, nor root's),
/// or it comes from this machine (a loopback listener, or an address of this machine's) and no
/// socket is established at `peer` (it closed); `None` to serve it. A client on another machine
/// (a listener on another address, `--allow-remote`) is served, as warned at start.
#[cfg(target_os = "linux")]
fn other_user(
    peer: std::net::SocketAddr,
    here: std::net::SocketAddr,
    listening: std::net::SocketAddr,
) -> Option<Refused> {
    let own = nix::unistd::geteuid().as_raw();
    match super::peer::owner(peer, here) {
        Some(uid) if uid == own || uid == 0 => None,
        Some(uid) => Some(Refused::OtherUser { uid: Some(uid), own }),
        None if listening.ip().to_canonical().is_loopback() || super::peer::of_this_machine(peer.ip()) => {
            Some(Refused::OtherUser { uid: None, own })
        }
        None => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn other_user(
    _peer: std::net::SocketAddr,
    _here: std::net::SocketAddr,
    _listening: std::net::SocketAddr,
) -> Option<Refused> {
    None
}

/// Whether `value` is `Bearer TOKEN` with the right token. The scheme is case-insensitive (RFC
/// 9110); the token is compared in constant time, so its bytes cannot be guessed one by one from
/// response times.
fn authorized(value: Option<&http::HeaderValue>, token: &[u8]) -> bool {
    let Some(value) = value else { return false };
    let value = value.as_bytes();
    let Some((scheme, credentials)) = value.split_at_checked(7) else { return false };
    scheme.eq_ignore_ascii_case(b"bearer ") && bool::from(credentials.ct_eq(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_authorized() {
        let header = |text: &str| http::HeaderValue::from_str(text).unwrap();
        assert!(authorized(Some(&header("Bearer s3cret")), b"s3cret"));
        assert!(authorized(Some(&header("bearer s3cret")), b"s3cret"));
        for wrong in
            ["Bearer s3cre", "Bearer s3crett", "Bearer S3CRET", "Basic s3cret", "s3cret", "Bearer", ""]
        {
            assert!(!authorized(Some(&header(wrong)), b"s3cret"), "{wrong:?}");
        }
        assert!(!authorized(None, b"s3cret"));
    }

    /// A body sent in the given frames (and then the given error, if any).
    struct Frames(std::collections::VecDeque<Result<&'static str, &'static str>>);

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = &'static str;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, &'static str>>> {
            let next =
                self.0.pop_front().map(|frame| frame.map(|text| http_body::Frame::data(Bytes::from(text))));
            std::task::Poll::Ready(next)
        }
    }

    async fn read(
        frames: &[Result<&'static str, &'static str>],
        limit: usize,
        declared: Option<u64>,
    ) -> Result<Bytes, Unread> {
        read_body(Frames(frames.iter().copied().collect()), limit, declared).await
    }

    #[tokio::test]
    async fn a_body_is_read_whole_up_to_the_limit() {
        assert_eq!(read(&[Ok("{\"id\":1}")], 8, None).await.unwrap(), "{\"id\":1}");
        assert_eq!(read(&[Ok("ab"), Ok(""), Ok("cd"), Ok("ef")], 6, None).await.unwrap(), "abcdef");
        assert_eq!(read(&[], 6, None).await.unwrap(), "");
        assert_eq!(read(&[Ok(""), Ok("ab")], 6, None).await.unwrap(), "ab");

        for frames in [&[Ok("abcdefg")][..], &[Ok("abc"), Ok("defg")], &[Ok("abcdef"), Ok("g")]] {
            match read(frames, 6, None).await {
                Err(Unread::TooLong { prefix, length: None }) => assert_eq!(prefix, "abcdef", "{frames:?}"),
                other => panic!("{frames:?}: {other:?}"),
            }
        }
        match read(&[Ok("ab")], 6, Some(7)).await {
            Err(Unread::TooLong { prefix, length: Some(7) }) => assert!(prefix.is_empty()),
            other => panic!("declared too long: {other:?}"),
        }
        match read(&[Ok("ab"), Err("connection reset")], 6, None).await {
            Err(Unread::Failed(error)) => assert_eq!(error, "connection reset"),
            other => panic!("a failed read: {other:?}"),
        }
    }
}
