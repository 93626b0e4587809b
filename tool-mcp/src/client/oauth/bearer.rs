//! A mount's bearer token: read from the token file, refreshed before it expires (under the
//! file's lock, once for every process), and sent with each request of the Streamable HTTP
//! client.
//!
//! rmcp's `AuthClient` would refresh under the store's guard too, but without reading again
//! whether another process refreshed meanwhile: the second would refresh once more. Here the
//! token is read again under the lock, and only a token still stale is refreshed, with rmcp's
//! `AuthorizationManager::refresh_token`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderName, HeaderValue};
use oauth2::TokenResponse;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthError, AuthorizationManager, OAuthClientConfig, WWWAuthenticateParams};
use rmcp::transport::streamable_http_client::{
    InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

use super::http::OAuthHttp;
use super::store::{Entry, EntryStore, TokenFile};
use crate::client::OAuthConfig;

/// A token is refreshed when it has less than this many seconds left (or half its lifetime, when
/// that is shorter), so that it does not expire on its way to the server.
const REFRESH_MARGIN_SECS: u64 = 60;

type HttpError = StreamableHttpError<reqwest::Error>;
type EventStream =
    std::pin::Pin<Box<dyn futures_core::Stream<Item = Result<sse_stream::Sse, SseError>> + Send + 'static>>;

/// What a mount knows of its token.
enum Cached {
    /// The file was not read yet.
    Unread,
    /// The file holds no token for the server: requests go without one.
    Nothing,
    /// The file cannot be used (others may read it, say): requests go without a token, and
    /// this is the error of one the server refuses.
    Unusable(String),
    /// The access token and when to refresh it (seconds since the epoch), if it expires.
    Token { access: String, refresh_at: Option<u64> },
}

/// One server's token, for one session with it.
pub(crate) struct Tokens {
    url: String,
    server: String,
    file: TokenFile,
    ca_cert: Option<PathBuf>,
    login: String,
    config: OAuthConfig,
    cached: std::sync::Mutex<Cached>,
    /// One refresh at a time in this process (the file's lock orders processes).
    refreshing: tokio::sync::Mutex<()>,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn fresh(refresh_at: Option<u64>) -> bool {
    refresh_at.is_none_or(|at| now() < at)
}

/// When to refresh a token received at `received` that lives `lifetime` seconds.
fn refresh_time(received: u64, lifetime: u64) -> u64 {
    received.saturating_add(lifetime - REFRESH_MARGIN_SECS.min(lifetime / 2))
}

/// The access token of an entry and when to refresh it.
fn token_of(entry: &Entry) -> Option<(String, Option<u64>)> {
    let response = entry.credentials.token_response.as_ref()?;
    let refresh_at = match (response.expires_in(), entry.credentials.token_received_at) {
        (Some(lifetime), Some(received)) => Some(refresh_time(received, lifetime.as_secs())),
        _ => None,
    };
    Some((response.access_token().secret().clone(), refresh_at))
}

/// The sentence that tells a person how to log in to `server`.
pub(crate) fn login_advice(config: &OAuthConfig) -> String {
    match &config.login_command {
        Some(command) => format!("log in with `{command}`"),
        None => "log in to it first (`mcp_client::oauth::login`)".to_owned(),
    }
}

impl Tokens {
    pub(crate) fn new(
        server: &str,
        url: &str,
        config: &OAuthConfig,
        ca_cert: Option<PathBuf>,
    ) -> Result<Tokens, String> {
        Ok(Tokens {
            url: url.to_owned(),
            server: server.to_owned(),
            file: TokenFile::for_config(config)?,
            ca_cert,
            login: login_advice(config),
            config: config.clone(),
            cached: std::sync::Mutex::new(Cached::Unread),
            refreshing: tokio::sync::Mutex::new(()),
        })
    }

    fn login_needed(&self, reason: &str) -> String {
        format!("{reason}; {}", self.login)
    }

    fn cache(&self, value: Cached) {
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = value;
    }

    /// The token to send now: none when none is stored, refreshed first when it is about to
    /// expire.
    pub(crate) async fn current(&self) -> Result<Option<String>, String> {
        match &*self.cached.lock().unwrap_or_else(|p| p.into_inner()) {
            Cached::Nothing => return Ok(None),
            Cached::Unusable(problem) => return Err(problem.clone()),
            Cached::Token { access, refresh_at } if fresh(*refresh_at) => return Ok(Some(access.clone())),
            _ => {}
        }
        let entry = match self.file.entry(&self.url) {
            Ok(entry) => entry,
            Err(problem) => {
                self.cache(Cached::Unusable(problem.clone()));
                return Err(problem);
            }
        };
        let Some((access, refresh_at)) = entry.as_ref().and_then(token_of) else {
            if self.config.client_credentials {
                return self.refresh(None).await.map(Some);
            }
            self.cache(Cached::Nothing);
            return Ok(None);
        };
        if fresh(refresh_at) {
            self.cache(Cached::Token { access: access.clone(), refresh_at });
            return Ok(Some(access));
        }
        self.refresh(Some(&access)).await.map(Some)
    }

    /// A token other than `stale` (one about to expire, or one the server refused): the one
    /// another task or process stored meanwhile, or a new one from the authorization server.
    pub(crate) async fn refresh(&self, stale: Option<&str>) -> Result<String, String> {
        let _one = self.refreshing.lock().await;
        if let Cached::Token { access, refresh_at } = &*self.cached.lock().unwrap_or_else(|p| p.into_inner())
            && Some(access.as_str()) != stale
            && fresh(*refresh_at)
        {
            return Ok(access.clone());
        }
        let _lock = self.file.lock().await?;
        if self.config.client_credentials {
            return self.client_credentials_locked(stale, &[]).await;
        }
        // Read again under the lock: another process may have refreshed it.
        let entry =
            self.file.entry(&self.url)?.ok_or_else(|| self.login_needed("its OAuth tokens were removed"))?;
        let (access, refresh_at) =
            token_of(&entry).ok_or_else(|| self.login_needed("no OAuth token is stored for it"))?;
        if Some(access.as_str()) != stale && fresh(refresh_at) {
            self.cache(Cached::Token { access: access.clone(), refresh_at });
            return Ok(access);
        }
        let has_refresh_token = entry
            .credentials
            .token_response
            .as_ref()
            .is_some_and(|response| response.refresh_token().is_some());
        if !has_refresh_token {
            return Err(self.login_needed(
                "its OAuth access token expired and the authorization server gave no refresh token",
            ));
        }
        let manager = self.manager(&entry).await?;
        match manager.refresh_token().await {
            Ok(response) => {
                let access = response.access_token().secret().clone();
                let refresh_at =
                    response.expires_in().map(|lifetime| refresh_time(now(), lifetime.as_secs()));
                self.cache(Cached::Token { access: access.clone(), refresh_at });
                Ok(access)
            }
            Err(AuthError::TokenRefreshRejected(_) | AuthError::AuthorizationRequired) => {
                let problem =
                    self.login_needed("the authorization server refused to refresh its OAuth token");
                // Not asked again for this session: only a new login helps.
                self.cache(Cached::Unusable(problem.clone()));
                Err(problem)
            }
            Err(error) => Err(format!("refreshing its OAuth token failed ({error}); try again")),
        }
    }

    /// With the client credentials grant, under the file's lock: the token another process
    /// stored meanwhile, if it is not `stale` and has every scope of `wanted`, or a new one
    /// for the scopes stored and `wanted`.
    async fn client_credentials_locked(
        &self,
        stale: Option<&str>,
        wanted: &[String],
    ) -> Result<String, String> {
        let entry = self.file.entry(&self.url)?;
        if let Some(entry) = &entry
            && let Some((access, refresh_at)) = token_of(entry)
            && Some(access.as_str()) != stale
            && fresh(refresh_at)
            && wanted.iter().all(|scope| entry.credentials.granted_scopes.contains(scope))
        {
            self.cache(Cached::Token { access: access.clone(), refresh_at });
            return Ok(access);
        }
        let earlier = entry
            .map(|entry| super::union(&entry.credentials.granted_scopes, &entry.wanted_scopes))
            .unwrap_or_default();
        let scopes = super::union(&super::union(&self.config.scopes, &earlier), wanted);
        let access = super::machine::client_credentials(
            &self.server,
            &self.url,
            self.ca_cert.as_deref(),
            &self.config,
            &self.file,
            &scopes,
        )
        .await?;
        let refresh_at = self.file.entry(&self.url)?.as_ref().and_then(token_of).and_then(|(_, at)| at);
        self.cache(Cached::Token { access: access.clone(), refresh_at });
        Ok(access)
    }

    /// The server refused a request for want of the scopes `needed` (a 403 with
    /// `insufficient_scope`). A refresh may not widen a grant (OAuth 2.1, section 4.3.1), so:
    /// with the client credentials grant, a new token for the scopes held and `needed`; else
    /// the scopes are remembered for the next login, and the error says to log in again.
    pub(crate) async fn step_up(&self, sent: Option<&str>, needed: &[String]) -> Result<String, String> {
        let _one = self.refreshing.lock().await;
        let _lock = self.file.lock().await?;
        if self.config.client_credentials {
            return self.client_credentials_locked(sent, needed).await;
        }
        let what = if needed.is_empty() {
            "more OAuth scopes than its token was granted (HTTP 403 `insufficient_scope`, naming none)"
                .to_owned()
        } else {
            format!(
                "the OAuth scope{} `{}` for this request (HTTP 403 `insufficient_scope`), which its token was not granted",
                if needed.len() == 1 { "" } else { "s" },
                needed.join(" ")
            )
        };
        let mut asked = needed.to_vec();
        if let Some(mut entry) = self.file.entry(&self.url)? {
            let wanted = super::union(&entry.wanted_scopes, needed);
            asked = super::union(&entry.credentials.granted_scopes, &wanted);
            if wanted != entry.wanted_scopes {
                entry.wanted_scopes = wanted;
                self.file.set_entry(&self.url, entry)?;
            }
        }
        let asked = super::union(&self.config.scopes, &asked);
        Err(format!(
            "it needs {what}; to grant them, {} (it will ask for `{}`), then try again",
            self.login,
            asked.join(" ")
        ))
    }

    /// rmcp's manager for a refresh: the authorization server found again (its issuer must be
    /// the one that issued the tokens), the stored client, and the entry as its store.
    async fn manager(&self, entry: &Entry) -> Result<AuthorizationManager, String> {
        let http = OAuthHttp::new(self.ca_cert.as_deref())?;
        let mut manager = AuthorizationManager::new_with_oauth_http_client(self.url.as_str(), Arc::new(http))
            .await
            .map_err(|e| format!("cannot set up OAuth for `{}` ({e})", self.url))?;
        let resolution = manager.resolve_metadata().await.map_err(|e| {
            format!(
                "cannot find its OAuth authorization server to refresh the token ({})",
                super::describe(&e)
            )
        })?;
        // The default endpoints of the 2025-03-26 revision serve only tokens they issued: those
        // of a login that found no metadata, and so no issuer.
        match (resolution.source.is_discovered(), &entry.credentials.issuer) {
            (false, Some(_)) => return Err(self.login_needed("it no longer publishes OAuth metadata")),
            (true, None) => {
                return Err(self.login_needed(
                    "it now names an authorization server, not the default endpoints at its origin that issued the stored tokens",
                ));
            }
            _ => {}
        }
        super::check_metadata(&resolution.metadata, false)?;
        if let Some(issuer) = &entry.credentials.issuer
            && resolution.metadata.issuer.as_ref() != Some(issuer)
        {
            return Err(self.login_needed(&format!(
                "its authorization server is now `{}`, not `{issuer}` that issued the stored tokens",
                resolution.metadata.issuer.as_deref().unwrap_or("(none)")
            )));
        }
        manager.set_metadata(resolution.metadata);
        let mut client =
            OAuthClientConfig::new(entry.credentials.client_id.clone(), entry.redirect_uri.clone());
        if let Some(secret) = &entry.client_secret {
            client = client.with_client_secret(secret.clone());
        }
        manager.configure_client(client).map_err(|e| format!("cannot set up the OAuth client ({e})"))?;
        manager.set_credential_store(EntryStore {
            file: self.file.clone(),
            url: self.url.clone(),
            server: self.server.clone(),
            client_secret: entry.client_secret.clone(),
            redirect_uri: entry.redirect_uri.clone(),
        });
        Ok(manager)
    }
}

/// The Streamable HTTP client of a server that may ask for OAuth: each request carries the
/// stored token (refreshed before it expires); a request the server answers 401 is sent once more
/// with a refreshed token.
#[derive(Clone)]
pub(crate) struct BearerClient {
    pub(crate) inner: reqwest::Client,
    pub(crate) tokens: Arc<Tokens>,
}

fn auth_error(message: String) -> HttpError {
    StreamableHttpError::Auth(AuthError::AuthorizationFailed(message))
}

/// The most scopes taken from one challenge, and the longest scope.
const MAX_SCOPES: usize = 32;
const MAX_SCOPE_LEN: usize = 128;

/// The scopes a 403 `insufficient_scope` challenge names: well-formed scope tokens only (RFC
/// 6749, section 3.3), so that the server's words reach the model and the token file only as
/// scopes, a bounded number of bounded length.
fn needed_scopes(refused: &InsufficientScopeError, url: &str) -> Vec<String> {
    let scope = refused.required_scope.clone().or_else(|| {
        let base = reqwest::Url::parse(url).ok()?;
        WWWAuthenticateParams::parse(&refused.www_authenticate_header, &base).scope
    });
    let mut scopes: Vec<String> = Vec::new();
    for token in scope.as_deref().unwrap_or("").split(' ') {
        let well_formed = !token.is_empty()
            && token.len() <= MAX_SCOPE_LEN
            && token.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if well_formed && !scopes.iter().any(|known| known == token) && scopes.len() < MAX_SCOPES {
            scopes.push(token.to_owned());
        }
    }
    scopes
}

impl BearerClient {
    async fn with_token<T, F, Fut>(&self, given: Option<String>, call: F) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        if given.is_some() {
            return call(given).await;
        }
        // A token that cannot be had (an unusable file, a refused refresh) matters only to a
        // server that asks for one: the request goes without it, and its 401 gets the reason.
        let (token, problem) = match self.tokens.current().await {
            Ok(token) => (token, None),
            Err(problem) => (None, Some(problem)),
        };
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                if let Some(problem) = problem {
                    return Err(auth_error(problem));
                }
                let Some(sent) = token else { return Err(StreamableHttpError::AuthRequired(challenge)) };
                let fresh = self.tokens.refresh(Some(&sent)).await.map_err(auth_error)?;
                call(Some(fresh)).await
            }
            Err(StreamableHttpError::InsufficientScope(refused)) => {
                let needed = needed_scopes(&refused, &self.tokens.url);
                let fresh = self.tokens.step_up(token.as_deref(), &needed).await.map_err(auth_error)?;
                match call(Some(fresh)).await {
                    // Still too few: the authorization server granted less than was asked.
                    Err(StreamableHttpError::InsufficientScope(refused)) => Err(auth_error(format!(
                        "it still needs the OAuth scopes `{}` (HTTP 403 `insufficient_scope`), which the authorization server did not grant to this client",
                        needed_scopes(&refused, &self.tokens.url).join(" ")
                    ))),
                    result => result,
                }
            }
            result => result,
        }
    }
}

impl StreamableHttpClient for BearerClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.with_token(auth_header, |token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.with_token(auth_header, |token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.with_token(auth_header, |token| {
            self.inner.delete_session(uri.clone(), session_id.clone(), token, custom_headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<EventStream, HttpError> {
        self.with_token(auth_header, |token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<EventStream, HttpError> {
        self.with_token(auth_header, |token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_scopes_of_a_challenge_are_taken() {
        let refused = |header: &str| InsufficientScopeError::new(header.to_owned(), None);
        let url = "https://mcp.example/mcp";
        assert_eq!(
            needed_scopes(
                &refused(r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write mcp:basic""#),
                url
            ),
            ["mcp:basic", "mcp:write"]
        );
        let hostile = format!(
            "Bearer error=\"insufficient_scope\", scope=\"ok \\\"quoted\\\" back\\\\slash tab\tx {} {}\"",
            "a".repeat(MAX_SCOPE_LEN + 1),
            (0..100).map(|i| format!("s{i}")).collect::<Vec<_>>().join(" ")
        );
        let scopes = needed_scopes(&refused(&hostile), url);
        assert_eq!(scopes.len(), MAX_SCOPES, "{scopes:?}");
        assert_eq!(scopes[0], "ok");
        assert!(
            scopes.iter().all(|s| !s.contains(['"', '\\', '\t']) && s.len() <= MAX_SCOPE_LEN),
            "{scopes:?}"
        );
        assert_eq!(
            needed_scopes(&refused(r#"Bearer error="insufficient_scope""#), url),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_token_is_refreshed_a_minute_or_half_its_lifetime_before_it_expires() {
        assert_eq!(refresh_time(1000, 3600), 1000 + 3540);
        assert_eq!(refresh_time(1000, 120), 1000 + 60);
        assert_eq!(refresh_time(1000, 30), 1000 + 15);
        assert_eq!(refresh_time(1000, 1), 1001);
        assert_eq!(refresh_time(1000, 0), 1000);
        assert_eq!(refresh_time(u64::MAX, 3600), u64::MAX);
        assert!(fresh(None), "a token that does not say when it expires is used until refused");
        assert!(fresh(Some(now() + 5)));
        assert!(!fresh(Some(now())));
    }
}
