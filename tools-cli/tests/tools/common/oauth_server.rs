//! A small OAuth 2.1 authorization server and the MCP server it protects, on one loopback port,
//! for the login and mount tests: protected resource metadata (RFC 9728), authorization server
//! metadata (RFC 8414), dynamic client registration (RFC 7591), an authorization endpoint that
//! approves at once and redirects, a token endpoint that checks the code's PKCE verifier and
//! rotates refresh tokens (a used one is refused, as real servers do), and `/mcp` that requires
//! a valid bearer token (401 with `WWW-Authenticate: Bearer resource_metadata=...` otherwise).
//! `/stats` counts what happened.

#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use sha2::Digest;

/// How the server misbehaves, for the attack tests.
#[derive(Clone, Default)]
pub(crate) struct Options {
    /// Seconds an access token from a code lives (default 3600).
    pub token_ttl: Option<u64>,
    /// Seconds an access token from a refresh lives (default 3600).
    pub refreshed_ttl: Option<u64>,
    /// The `issuer` its authorization server metadata claims (default: its own URL).
    pub issuer: Option<String>,
    /// The `resource` its protected resource metadata names (default: its `/mcp`).
    pub resource: Option<String>,
    /// The token endpoint its metadata names (default: its own `/token`).
    pub token_endpoint: Option<String>,
    /// How long the token endpoint takes to answer a refresh, to widen a race.
    pub refresh_delay: Duration,
    /// A client registered beforehand: its id and redirect URI.
    pub preregistered: Option<(String, String)>,
    /// Publishes the protected resource metadata only where the 401's challenge says (not at
    /// the well-known URIs), asks for the scopes `mcp extra` there, and serves `/mcp` to `POST`
    /// only, as servers that never answer a `GET` do.
    pub challenge_only: bool,
    /// `tools/call` needs the scopes `mcp write` (a token without `write` gets a 403 with
    /// `WWW-Authenticate: Bearer error="insufficient_scope", scope="mcp write"`).
    pub step_up: bool,
    /// A client of the client credentials grant (its id and secret, sent as HTTP Basic as the
    /// metadata's only `token_endpoint_auth_methods_supported` says); scopes are granted as asked.
    pub machine_client: Option<(String, String)>,
    /// Publishes no metadata at all (a server of the 2025-03-26 revision relying on the default
    /// endpoints `/authorize`, `/token`, `/register` at its origin): its 401 says only
    /// `Bearer realm="mcp"`, and its redirect carries no `iss`.
    pub no_metadata: bool,
    /// Takes client ID metadata documents (`client_id_metadata_document_supported`): an
    /// `https://` client id is accepted without registration (the document is not fetched).
    pub metadata_documents: bool,
}

#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stats {
    pub registrations: u32,
    pub authorizations: u32,
    pub code_exchanges: u32,
    pub refused_verifiers: u32,
    pub refreshes: u32,
    pub refused_refreshes: u32,
    pub mcp_unauthorized: u32,
    pub insufficient_scope: u32,
    pub client_credentials: u32,
}

struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: Option<String>,
    scope: String,
}

#[derive(Default)]
struct State {
    clients: HashMap<String, Vec<String>>,
    codes: HashMap<String, Grant>,
    access: HashMap<String, Instant>,
    /// The scopes of each access token.
    scopes: HashMap<String, String>,
    refresh: HashMap<String, (String, bool)>,
    /// The scopes each client credentials token request asked for.
    machine_scopes: Vec<String>,
    stats: Stats,
    /// Every query the authorization endpoint received, for the tests to inspect.
    authorize_queries: Vec<HashMap<String, String>>,
    /// The authorization server its resource metadata names from now on (default: itself).
    authorization_server: Option<String>,
}

/// The running server, stopped when dropped.
pub(crate) struct OAuthServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl OAuthServer {
    pub(crate) fn start(options: Options) -> OAuthServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mut initial = State::default();
        if let Some((client_id, redirect_uri)) = &options.preregistered {
            initial.clients.insert(client_id.clone(), vec![redirect_uri.clone()]);
        }
        let state = Arc::new(Mutex::new(initial));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = Arc::new(App { base: base.clone(), options, state: state.clone(), mcp: mcp_service() });
        let thread = std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let mut stopped = stopped;
                loop {
                    tokio::select! {
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let app = app.clone();
                            tokio::spawn(async move {
                                let service = hyper::service::service_fn(move |request| {
                                    let app = app.clone();
                                    async move { Ok::<_, Infallible>(app.handle(request).await) }
                                });
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            });
                        }
                        _ = &mut stopped => break,
                    }
                }
            });
            runtime.shutdown_timeout(Duration::from_millis(100));
        });
        OAuthServer { base, state, stop: Some(stop), thread: Some(thread) }
    }

    /// The protected MCP endpoint.
    pub(crate) fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub(crate) fn stats(&self) -> Stats {
        self.state.lock().unwrap().stats
    }

    /// The queries the authorization endpoint received.
    pub(crate) fn authorize_queries(&self) -> Vec<HashMap<String, String>> {
        self.state.lock().unwrap().authorize_queries.clone()
    }

    /// The `scope` of each client credentials token request.
    pub(crate) fn machine_scopes(&self) -> Vec<String> {
        self.state.lock().unwrap().machine_scopes.clone()
    }

    /// Names another authorization server in the resource metadata from now on.
    pub(crate) fn move_to_authorization_server(&self, base: &str) {
        self.state.lock().unwrap().authorization_server = Some(base.to_owned());
    }

    /// Makes every access token issued so far expire now.
    pub(crate) fn expire_access_tokens(&self) {
        let now = Instant::now();
        for expiry in self.state.lock().unwrap().access.values_mut() {
            *expiry = now;
        }
    }
}

fn random() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    let a = hasher.finish();
    let b = std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!("{a:016x}{b:016x}")
}

type Answer = Response<BoxBody<Bytes, Infallible>>;

/// Where the protected resource metadata is with [`Options::challenge_only`].
const CHALLENGE_ONLY_METADATA: &str = "/custom/metadata/location.json";

fn reply(status: StatusCode, body: Value) -> Answer {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response.headers_mut().insert(header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}

fn oauth_error(error: &str, description: &str) -> Answer {
    reply(StatusCode::BAD_REQUEST, json!({"error": error, "error_description": description}))
}

fn form(bytes: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

struct App {
    base: String,
    options: Options,
    state: Arc<Mutex<State>>,
    mcp: StreamableHttpService<Protected, LocalSessionManager>,
}

impl App {
    async fn handle(&self, request: Request<Incoming>) -> Answer {
        let path = request.uri().path().to_owned();
        let method = request.method().clone();
        match (method.as_str(), path.as_str()) {
            (
                "GET",
                "/.well-known/oauth-protected-resource/mcp" | "/.well-known/oauth-protected-resource",
            ) if !self.options.challenge_only && !self.options.no_metadata => self.resource_metadata(),
            ("GET", CHALLENGE_ONLY_METADATA) if self.options.challenge_only => self.resource_metadata(),
            ("GET", "/mcp") if self.options.challenge_only => {
                reply(StatusCode::METHOD_NOT_ALLOWED, json!({"error": "POST only"}))
            }
            ("GET", "/.well-known/oauth-authorization-server") if !self.options.no_metadata => {
                let issuer = self.options.issuer.clone().unwrap_or_else(|| self.base.clone());
                let token =
                    self.options.token_endpoint.clone().unwrap_or_else(|| format!("{}/token", self.base));
                let (grants, methods) = if self.options.machine_client.is_some() {
                    (json!(["client_credentials"]), json!(["client_secret_basic"]))
                } else {
                    (json!(["authorization_code", "refresh_token"]), json!(["none"]))
                };
                reply(
                    StatusCode::OK,
                    json!({
                        "issuer": issuer,
                        "authorization_endpoint": format!("{}/authorize", self.base),
                        "token_endpoint": token,
                        "registration_endpoint": format!("{}/register", self.base),
                        "response_types_supported": ["code"],
                        "grant_types_supported": grants,
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": methods,
                        "scopes_supported": ["mcp"],
                        "client_id_metadata_document_supported": self.options.metadata_documents,
                    }),
                )
            }
            ("POST", "/register") => {
                let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let Ok(registration) = serde_json::from_slice::<Value>(&body) else {
                    return oauth_error("invalid_client_metadata", "not JSON");
                };
                let redirects: Vec<String> = registration["redirect_uris"]
                    .as_array()
                    .map(|uris| uris.iter().filter_map(|u| u.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                if redirects.is_empty() {
                    return oauth_error("invalid_redirect_uri", "no redirect_uris");
                }
                let client_id = format!("client-{}", random());
                let mut state = self.state.lock().unwrap();
                state.clients.insert(client_id.clone(), redirects.clone());
                state.stats.registrations += 1;
                reply(
                    StatusCode::CREATED,
                    json!({"client_id": client_id, "redirect_uris": redirects, "token_endpoint_auth_method": "none"}),
                )
            }
            ("GET", "/authorize") => self.authorize(request.uri().query().unwrap_or("")),
            ("POST", "/token") => {
                let basic = request
                    .headers()
                    .get(header::AUTHORIZATION)
                    .and_then(|h| h.to_str().ok())
                    .and_then(|h| h.strip_prefix("Basic "))
                    .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                    .and_then(|b| String::from_utf8(b).ok());
                let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let mut params = form(&body);
                if let Some((id, secret)) = basic.as_deref().and_then(|b| b.split_once(':')) {
                    params.insert("basic_id".into(), id.into());
                    params.insert("basic_secret".into(), secret.into());
                }
                self.token(params).await
            }
            ("GET", "/stats") => {
                let stats = self.stats_json();
                reply(StatusCode::OK, stats)
            }
            (_, "/mcp") => {
                if !self.authorized(request.headers().get(header::AUTHORIZATION)) {
                    self.state.lock().unwrap().stats.mcp_unauthorized += 1;
                    let mut response = reply(StatusCode::UNAUTHORIZED, json!({"error": "invalid_token"}));
                    let challenge = if self.options.no_metadata {
                        "Bearer realm=\"mcp\"".to_owned()
                    } else if self.options.challenge_only {
                        format!(
                            "Bearer error=\"invalid_token\", resource_metadata=\"{}{CHALLENGE_ONLY_METADATA}\", scope=\"mcp extra\"",
                            self.base
                        )
                    } else {
                        format!(
                            "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\"",
                            self.base
                        )
                    };
                    response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge.parse().unwrap());
                    return response;
                }
                if self.options.step_up {
                    let (parts, body) = request.into_parts();
                    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    let method = serde_json::from_slice::<Value>(&body).ok().map(|m| m["method"].clone());
                    let token = parts
                        .headers
                        .get(header::AUTHORIZATION)
                        .and_then(|h| h.to_str().ok())
                        .and_then(|h| h.strip_prefix("Bearer "))
                        .unwrap_or_default()
                        .to_owned();
                    let scopes = self.state.lock().unwrap().scopes.get(&token).cloned().unwrap_or_default();
                    if method.as_ref().and_then(Value::as_str) == Some("tools/call")
                        && !scopes.split(' ').any(|scope| scope == "write")
                    {
                        self.state.lock().unwrap().stats.insufficient_scope += 1;
                        let mut response =
                            reply(StatusCode::FORBIDDEN, json!({"error": "insufficient_scope"}));
                        let challenge = format!(
                            "Bearer error=\"insufficient_scope\", scope=\"mcp write\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                            self.base
                        );
                        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge.parse().unwrap());
                        return response;
                    }
                    return self.mcp.handle(Request::from_parts(parts, Full::new(body))).await;
                }
                self.mcp.handle(request).await
            }
            _ => reply(StatusCode::NOT_FOUND, json!({"error": "not found"})),
        }
    }

    fn resource_metadata(&self) -> Answer {
        let resource = self.options.resource.clone().unwrap_or_else(|| format!("{}/mcp", self.base));
        let server =
            self.state.lock().unwrap().authorization_server.clone().unwrap_or_else(|| self.base.clone());
        reply(
            StatusCode::OK,
            json!({"resource": resource, "authorization_servers": [server], "scopes_supported": ["mcp"]}),
        )
    }

    fn stats_json(&self) -> Value {
        let stats = self.state.lock().unwrap().stats;
        json!({"refreshes": stats.refreshes, "refused_refreshes": stats.refused_refreshes})
    }

    fn authorized(&self, header: Option<&http::HeaderValue>) -> bool {
        let Some(token) = header.and_then(|h| h.to_str().ok()).and_then(|h| h.strip_prefix("Bearer ")) else {
            return false;
        };
        self.state.lock().unwrap().access.get(token).is_some_and(|expiry| *expiry > Instant::now())
    }

    fn authorize(&self, query: &str) -> Answer {
        let params = form(query.as_bytes());
        let mut state = self.state.lock().unwrap();
        state.authorize_queries.push(params.clone());
        let get = |key: &str| params.get(key).cloned().unwrap_or_default();
        let (client_id, redirect_uri) = (get("client_id"), get("redirect_uri"));
        let documented = self.options.metadata_documents && client_id.starts_with("https://");
        if !documented && !state.clients.get(&client_id).is_some_and(|uris| uris.contains(&redirect_uri)) {
            return oauth_error("invalid_request", "unknown client or redirect_uri");
        }
        if get("response_type") != "code"
            || get("code_challenge_method") != "S256"
            || get("code_challenge").is_empty()
        {
            return oauth_error(
                "invalid_request",
                "response_type=code with an S256 code_challenge is required",
            );
        }
        let code = format!("code-{}", random());
        state.codes.insert(
            code.clone(),
            Grant {
                client_id,
                redirect_uri: redirect_uri.clone(),
                challenge: get("code_challenge"),
                resource: params.get("resource").cloned(),
                scope: get("scope"),
            },
        );
        state.stats.authorizations += 1;
        let mut location = url::Url::parse(&redirect_uri).unwrap();
        location.query_pairs_mut().append_pair("code", &code).append_pair("state", &get("state"));
        if !self.options.no_metadata {
            let issuer = self.options.issuer.clone().unwrap_or_else(|| self.base.clone());
            location.query_pairs_mut().append_pair("iss", &issuer);
        }
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::FOUND;
        response.headers_mut().insert(header::LOCATION, location.as_str().parse().unwrap());
        response
    }

    fn issue(&self, state: &mut State, client_id: &str, ttl: Option<u64>, scope: &str) -> Value {
        let access = format!("access-{}", random());
        let refresh = format!("refresh-{}", random());
        let ttl = ttl.unwrap_or(3600);
        state.access.insert(access.clone(), Instant::now() + Duration::from_secs(ttl));
        state.scopes.insert(access.clone(), scope.to_owned());
        state.refresh.insert(refresh.clone(), (client_id.to_owned(), false));
        json!({"access_token": access, "token_type": "Bearer", "expires_in": ttl, "refresh_token": refresh, "scope": scope})
    }

    async fn token(&self, params: HashMap<String, String>) -> Answer {
        let get = |key: &str| params.get(key).cloned().unwrap_or_default();
        match get("grant_type").as_str() {
            "authorization_code" => {
                let mut state = self.state.lock().unwrap();
                let Some(grant) = state.codes.get(&get("code")) else {
                    return oauth_error("invalid_grant", "unknown or used code");
                };
                let digest = sha2::Sha256::digest(get("code_verifier").as_bytes());
                let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
                if challenge != grant.challenge {
                    state.stats.refused_verifiers += 1;
                    return oauth_error(
                        "invalid_grant",
                        "the code_verifier does not match the code_challenge",
                    );
                }
                if grant.client_id != get("client_id") || grant.redirect_uri != get("redirect_uri") {
                    return oauth_error(
                        "invalid_grant",
                        "client_id or redirect_uri differ from the authorization",
                    );
                }
                if grant.resource != params.get("resource").cloned() {
                    return oauth_error("invalid_target", "resource differs from the authorization");
                }
                let grant = state.codes.remove(&get("code")).unwrap();
                state.stats.code_exchanges += 1;
                let scope = if grant.scope.is_empty() { "mcp".to_owned() } else { grant.scope.clone() };
                reply(
                    StatusCode::OK,
                    self.issue(&mut state, &grant.client_id, self.options.token_ttl, &scope),
                )
            }
            "refresh_token" => {
                tokio::time::sleep(self.options.refresh_delay).await;
                let mut state = self.state.lock().unwrap();
                let token = get("refresh_token");
                match state.refresh.get_mut(&token) {
                    Some((client_id, used)) if !*used && *client_id == get("client_id") => {
                        *used = true;
                        let client_id = client_id.clone();
                        state.stats.refreshes += 1;
                        reply(
                            StatusCode::OK,
                            self.issue(&mut state, &client_id, self.options.refreshed_ttl, "mcp"),
                        )
                    }
                    _ => {
                        state.stats.refused_refreshes += 1;
                        oauth_error("invalid_grant", "the refresh token is unknown or was already used")
                    }
                }
            }
            "client_credentials" => {
                let Some((id, secret)) = &self.options.machine_client else {
                    return oauth_error("unsupported_grant_type", "no client credentials here");
                };
                if params.get("basic_id") != Some(id) || params.get("basic_secret") != Some(secret) {
                    return reply(
                        StatusCode::UNAUTHORIZED,
                        json!({"error": "invalid_client", "error_description": "client_secret_basic expected"}),
                    );
                }
                if params.get("resource") != Some(&format!("{}/mcp", self.base)) {
                    return oauth_error("invalid_target", "resource must be the MCP endpoint");
                }
                let mut state = self.state.lock().unwrap();
                state.stats.client_credentials += 1;
                let scope = get("scope");
                state.machine_scopes.push(scope.clone());
                let mut answer = self.issue(&mut state, id, self.options.token_ttl, &scope);
                answer.as_object_mut().unwrap().remove("refresh_token");
                reply(StatusCode::OK, answer)
            }
            _ => oauth_error("unsupported_grant_type", "authorization_code or refresh_token"),
        }
    }
}

/// The MCP server behind the token: one tool.
#[derive(Clone)]
struct Protected;

impl ServerHandler for Protected {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(json!({"tools": [{
            "name": "secret",
            "description": "Tell the secret.",
            "inputSchema": {"type": "object", "properties": {}},
        }]}))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        serde_json::from_value::<CallToolResult>(
            json!({"content": [{"type": "text", "text": "the protected secret"}]}),
        )
        .map(CallToolResponse::from)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

fn mcp_service() -> StreamableHttpService<Protected, LocalSessionManager> {
    StreamableHttpService::new(|| Ok(Protected), Arc::default(), StreamableHttpServerConfig::default())
}
