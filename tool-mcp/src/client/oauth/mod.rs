//! OAuth 2.1 for mounted Streamable HTTP servers (feature `mcp-oauth`).
//!
//! A person logs in once with [`login`] (the `tools` binary: `tools mcp login NAME`); the tokens
//! go to a private [`TokenFile`], keyed by the server's URL. From then on, mounting the server
//! sends its access token with every request, refreshes it before it expires (storing the
//! refresh token the authorization server rotates in), and a refresh happens under the token
//! file's lock, so that of two processes only one refreshes and the other reads the new token.
//! A server that answers 401 when no token is stored, or whose refresh is refused, fails to
//! mount with a sentence naming the login command ([`OAuthConfig::login_command`]).
//!
//! A server that answers a request 403 with `WWW-Authenticate: Bearer error="insufficient_scope",
//! scope="..."` wants scopes the token was not granted, and a refresh may not widen a grant
//! (OAuth 2.1, section 4.3.1): the call fails with a sentence naming the scopes and the login
//! command, and the scopes are kept in the token file, so that the next login asks for the
//! scopes granted before and those (a step-up). A client of the client credentials grant
//! (`"grantType": "client_credentials"` in the entry's `oauth`, see [`OAuthConfig`]) needs no
//! person: the mount asks for a token with the client's own credentials when it has none, when
//! it expires, and, with the wider scopes, after such a 403, then sends the request once more.
//!
//! The protocol itself is rmcp's authorization manager: discovery (RFC 9728 protected resource
//! metadata, RFC 8414 / OpenID Connect authorization server metadata, with the `issuer` and
//! `resource` checks), dynamic client registration (RFC 7591), PKCE S256, the code exchange and
//! the refresh. Besides its checks, plain `http://` is refused for every endpoint not on this
//! machine.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use tool_runtime::mcp_client::{McpConfig, connect_all, oauth};
//!
//! // {"mcpServers": {"linear": {"url": "https://mcp.linear.app/mcp"}}}
//! let config = McpConfig::load("mcp.json")?.login_command("my-agent login");
//! let server = config.servers.iter().find(|server| server.name == "linear").ok_or("no `linear`")?;
//! let tokens = oauth::login(server, oauth::LOGIN_TIMEOUT, |url| println!("Open {url}")).await?;
//! println!("tokens stored in {}", tokens.path().display());
//! let mounts = connect_all(&config).await?; // sends, and refreshes, the stored token
//! # Ok(()) }
//! ```
//!
//! [`OAuthConfig::login_command`]: crate::client::OAuthConfig::login_command
//! [`OAuthConfig`]: crate::client::OAuthConfig

mod bearer;
mod http;
mod login;
mod machine;
mod store;

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};

pub(crate) use bearer::{BearerClient, Tokens, login_advice};
pub use login::{LOGIN_TIMEOUT, login};
pub use store::{TokenFile, TokenFileError};

use crate::client::{MountError, ServerConfig, Transport};

/// Removes the stored tokens of `server`; whether there were any.
pub fn logout(server: &ServerConfig) -> Result<bool, MountError> {
    let error =
        |message: String| MountError { server: server.name.clone(), message: server.redact(&message) };
    let Transport::Http { url, .. } = &server.transport else {
        return Err(error("it is a stdio server; OAuth logins are for HTTP servers (`url`)".to_owned()));
    };
    let file = TokenFile::for_config(&server.oauth).map_err(&error)?;
    file.remove(url).map_err(|e| error(e.to_string()))
}

/// The authorization server metadata of the MCP server at `url`, found from its 401's
/// `challenge` (if any) or the well-known URIs, and checked. When neither exists but the server
/// answered 401 with a `Bearer` challenge, the 2025-03-26 revision's default endpoints at its
/// origin (`/authorize`, `/token`, `/register`) are used.
async fn discover(
    manager: &AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
    registering: bool,
) -> Result<AuthorizationMetadata, String> {
    let resolution = manager.resolve_metadata_from_challenge(challenge).await.map_err(|e| {
        format!(
            "OAuth discovery failed, so no login was attempted: {}; check `url`, or have the server's operator correct its OAuth metadata",
            describe(&e)
        )
    })?;
    if !resolution.source.is_discovered() && !challenge.is_some_and(bearer_challenge) {
        return Err(format!(
            "`{url}` publishes no OAuth metadata (no `WWW-Authenticate: Bearer resource_metadata=...` on its 401, no protected resource or authorization server metadata at its well-known URIs), so there is nothing to log in to; if it needs a token, set it in `headers`"
        ));
    }
    check_metadata(&resolution.metadata, registering)?;
    Ok(resolution.metadata)
}

/// Whether a 401's `WWW-Authenticate` asks for a bearer token.
fn bearer_challenge(challenge: &str) -> bool {
    challenge.trim_start().get(..6).is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer"))
}

/// Refuses authorization server metadata whose endpoints are plain `http://` away from this
/// machine (the registration endpoint only when `registering`).
fn check_metadata(metadata: &AuthorizationMetadata, registering: bool) -> Result<(), String> {
    let what = "authorization server's";
    if let Some(issuer) = &metadata.issuer {
        http::check_endpoint(&format!("{what} issuer"), issuer)?;
    }
    http::check_endpoint(&format!("{what} authorization endpoint"), &metadata.authorization_endpoint)?;
    http::check_endpoint(&format!("{what} token endpoint"), &metadata.token_endpoint)?;
    if registering && let Some(registration) = &metadata.registration_endpoint {
        http::check_endpoint(&format!("{what} registration endpoint"), registration)?;
    }
    Ok(())
}

/// The scopes of `first` and then those of `more` not among them.
fn union(first: &[String], more: &[String]) -> Vec<String> {
    let mut all = first.to_vec();
    for scope in more {
        if !all.contains(scope) {
            all.push(scope.clone());
        }
    }
    all
}

/// rmcp's error as a sentence, with its cause.
fn describe(error: &AuthError) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        let more = inner.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = inner.source();
    }
    text
}
