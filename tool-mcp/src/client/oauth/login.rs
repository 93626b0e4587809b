//! A person's login to one server: discovery, registration, the browser's round trip through
//! a loopback redirect, and the code exchanged for tokens.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::auth::{AuthorizationManager, OAuthClientConfig};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::http::{OAuthHttp, check_endpoint};
use super::store::{EntryStore, TokenFile, key};
use crate::client::{MountError, ServerConfig, Transport};

/// How long a login waits for the browser to come back, unless told otherwise.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The path of the loopback redirect.
const CALLBACK_PATH: &str = "/callback";

/// The client name sent with a dynamic registration.
const CLIENT_NAME: &str = "tools (MCP client)";

/// What the browser's visit to the loopback redirect brought.
type Callback = Result<(String, Option<String>), String>;

/// Logs in to `server` (an HTTP server whose endpoint answers 401 with OAuth metadata) and
/// stores its tokens in its token file, which is returned.
///
/// The steps: the server's protected resource metadata (RFC 9728, from its 401's
/// `WWW-Authenticate: Bearer resource_metadata=...` or the well-known URI) names the
/// authorization server, whose metadata (RFC 8414 or OpenID Connect discovery) must name itself
/// as `issuer`; the client registers itself (RFC 7591) unless the entry's `oauth.clientId` is
/// set, or its `oauth.clientMetadataUrl` is and the authorization server takes client ID metadata
/// documents (then that URL is the client id); a listener on `127.0.0.1` (a free port, or `oauth.callbackPort`) waits for the redirect;
/// `open` is given the authorization URL (with a PKCE S256 challenge and a random `state`) to
/// show to the person or open in a browser; the redirect's `state` must match (another visit is
/// answered 400 and ignored); the code is exchanged with the PKCE verifier, under the token
/// file's lock. The scopes asked for are `oauth.scopes` (by default those of the server's challenge
/// or metadata) with those granted before and those a server's 403 `insufficient_scope` asked for
/// since (a step-up). With `oauth.grantType` `client_credentials` no person is involved: the
/// client's own credentials get the token. Plain `http://` is refused for every endpoint but those on this machine. Gives up
/// after `timeout` without a redirect.
pub async fn login(
    server: &ServerConfig,
    timeout: Duration,
    open: impl FnOnce(&str) + Send,
) -> Result<TokenFile, MountError> {
    let error =
        |message: String| MountError { server: server.name.clone(), message: server.redact(&message) };
    let Transport::Http { url, ca_cert, .. } = &server.transport else {
        return Err(error("it is a stdio server; OAuth logins are for HTTP servers (`url`)".to_owned()));
    };
    let file = TokenFile::for_config(&server.oauth).map_err(&error)?;
    check_endpoint("URL", url).map_err(&error)?;
    key(url).map_err(&error)?;

    // A step-up: the scopes granted before and those a server's 403 asked for beyond them.
    let earlier = match file.entry(url) {
        Ok(Some(entry)) => super::union(&entry.credentials.granted_scopes, &entry.wanted_scopes),
        _ => Vec::new(),
    };
    if server.oauth.client_credentials {
        let _lock = file.lock().await.map_err(&error)?;
        let scopes = super::union(&server.oauth.scopes, &earlier);
        super::machine::client_credentials(
            &server.name,
            url,
            ca_cert.as_deref(),
            &server.oauth,
            &file,
            &scopes,
        )
        .await
        .map_err(&error)?;
        return Ok(file);
    }

    let http = OAuthHttp::new(ca_cert.as_deref()).map_err(&error)?;
    // Discovery starts where a client meets it: the 401 of an MCP request, whose challenge may
    // name the metadata and the scopes the server wants.
    let challenge = http.challenge(url).await;
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url.as_str(), Arc::new(http))
        .await
        .map_err(|e| error(format!("cannot set up OAuth for `{url}` ({e})")))?;
    let registering = server.oauth.client_id.is_none();
    let metadata = super::discover(&manager, url, challenge.as_deref(), registering).await.map_err(&error)?;
    // A client ID metadata document stands in for a registration where the server takes one.
    let metadata_document = server.oauth.client_metadata_url.as_ref().filter(|_| {
        server.oauth.client_id.is_none()
            && metadata
                .additional_fields
                .get("client_id_metadata_document_supported")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false)
    });
    manager.set_metadata(metadata);

    let port = server.oauth.callback_port.unwrap_or(0);
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| error(format!("cannot listen on 127.0.0.1:{port} for the redirect ({e})")))?;
    let port =
        listener.local_addr().map_err(|e| error(format!("cannot read the listener's port ({e})")))?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    let scopes = if server.oauth.scopes.is_empty() {
        manager.select_initial_scopes(&[]).await
    } else {
        server.oauth.scopes.clone()
    };
    let scopes = super::union(&scopes, &earlier);
    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let client_id = server.oauth.client_id.as_ref().or(metadata_document);
    let client_secret = match client_id {
        Some(client_id) => {
            let mut client =
                OAuthClientConfig::new(client_id.clone(), redirect_uri.clone()).with_scopes(scopes.clone());
            if let Some(secret) = &server.oauth.client_secret {
                client = client.with_client_secret(secret.clone());
            }
            manager
                .configure_client(client)
                .map_err(|e| error(format!("cannot set up the OAuth client ({e})")))?;
            server.oauth.client_secret.clone()
        }
        None => {
            let registered = manager.register_client(CLIENT_NAME, &redirect_uri, &scope_refs).await.map_err(|e| {
                error(format!(
                    "the authorization server refused to register this client ({}); register one there and set `oauth.clientId` in the entry",
                    super::describe(&e)
                ))
            })?;
            registered.client_secret
        }
    };
    manager.set_credential_store(EntryStore {
        file: file.clone(),
        url: url.clone(),
        server: server.name.clone(),
        client_secret,
        redirect_uri: redirect_uri.clone(),
    });
    let authorization_url = manager
        .get_authorization_url(&scope_refs)
        .await
        .map_err(|e| error(format!("cannot make the authorization URL ({})", super::describe(&e))))?;
    let state = reqwest::Url::parse(&authorization_url)
        .ok()
        .and_then(|parsed| {
            parsed.query_pairs().find(|(name, _)| name == "state").map(|(_, value)| value.into_owned())
        })
        .ok_or_else(|| error("the authorization URL carries no `state`".to_owned()))?;

    let callback = serve_callback(listener, state.clone());
    open(&authorization_url);
    let (code, issuer) = callback.wait(timeout).await.map_err(&error)?;

    let _lock = file.lock().await.map_err(&error)?;
    manager.exchange_code_for_token_with_issuer(&code, &state, issuer.as_deref()).await.map_err(|e| {
        error(format!("the authorization server did not give tokens for the code ({})", super::describe(&e)))
    })?;
    Ok(file)
}

/// The loopback listener, answering the browser until a visit with the right `state` arrives.
struct CallbackServer {
    answers: mpsc::Receiver<Callback>,
    task: tokio::task::JoinHandle<()>,
}

impl CallbackServer {
    async fn wait(mut self, timeout: Duration) -> Result<(String, Option<String>), String> {
        let answer = tokio::time::timeout(timeout, self.answers.recv()).await;
        self.task.abort();
        match answer {
            Ok(Some(answer)) => answer,
            Ok(None) => Err("the redirect listener stopped".to_owned()),
            Err(_) => Err(format!(
                "no authorization came back within {} s; run the login again and open the URL it prints",
                timeout.as_secs()
            )),
        }
    }
}

fn serve_callback(listener: TcpListener, state: String) -> CallbackServer {
    let (sender, answers) = mpsc::channel::<Callback>(1);
    let state: Arc<str> = state.into();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let sender = sender.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let answer = answer(&request, &state, &sender);
                    async move { Ok::<_, Infallible>(answer) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    CallbackServer { answers, task }
}

fn page(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// The answer to one visit of the redirect listener; a visit that completes the login is sent
/// on `sender`.
fn answer(
    request: &Request<Incoming>,
    state: &str,
    sender: &mpsc::Sender<Callback>,
) -> Response<Full<Bytes>> {
    if request.uri().path() != CALLBACK_PATH {
        return page(StatusCode::NOT_FOUND, "Not found.");
    }
    if request.method() != http::Method::GET {
        return page(StatusCode::METHOD_NOT_ALLOWED, "Only GET is answered here.");
    }
    let params: HashMap<String, String> =
        url::form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes()).into_owned().collect();
    let matches =
        params.get("state").is_some_and(|given| bool::from(given.as_bytes().ct_eq(state.as_bytes())));
    if !matches {
        return page(
            StatusCode::BAD_REQUEST,
            "This authorization answer does not belong to the login in progress (its `state` does not match); it is ignored.",
        );
    }
    if let Some(code) = params.get("error") {
        let description = params.get("error_description").map(|d| format!(": {d}")).unwrap_or_default();
        let message = format!("the authorization server refused the authorization (`{code}`{description})");
        let _ = sender.try_send(Err(message.clone()));
        return page(StatusCode::BAD_REQUEST, &format!("Login failed: {message}."));
    }
    let Some(code) = params.get("code").filter(|code| !code.is_empty()) else {
        return page(StatusCode::BAD_REQUEST, "This redirect carries no `code`.");
    };
    match sender.try_send(Ok((code.clone(), params.get("iss").cloned()))) {
        Ok(()) => page(StatusCode::OK, "Logged in. You may close this window."),
        Err(_) => page(StatusCode::CONFLICT, "This login is already complete."),
    }
}
