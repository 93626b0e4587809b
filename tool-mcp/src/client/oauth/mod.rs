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

mod bearer;
mod http;
mod login;
mod store;

use rmcp::transport::auth::{AuthError, AuthorizationMetadata};

pub(crate) use bearer::{BearerClient, Tokens, login_advice};
pub use login::{LOGIN_TIMEOUT, login};
pub use store::TokenFile;

use crate::client::{MountError, ServerConfig, Transport};

/// Removes the stored tokens of `server`; whether there were any.
pub fn logout(server: &ServerConfig) -> Result<bool, MountError> {
    let error =
        |message: String| MountError { server: server.name.clone(), message: server.redact(&message) };
    let Transport::Http { url, .. } = &server.transport else {
        return Err(error("it is a stdio server; OAuth logins are for HTTP servers (`url`)".to_owned()));
    };
    let file = TokenFile::for_config(&server.oauth).map_err(&error)?;
    file.remove(url).map_err(error)
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
