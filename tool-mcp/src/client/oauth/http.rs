//! The HTTP client of OAuth's own requests (discovery, registration, token): our TLS set-up,
//! bounded answers, and the redirect policy each request asks for.

use std::net::IpAddr;
use std::time::Duration;

use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest,
};

/// How long one OAuth request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read (a metadata document or a token is a few kilobytes).
const MAX_BODY: usize = 1024 * 1024;
/// The most redirects a request that may follow them follows.
const MAX_REDIRECTS: usize = 10;

/// Two reqwest clients, one following redirects and one not.
pub(crate) struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl OAuthHttp {
    /// Clients trusting the public roots and the server's `caCert`.
    pub(crate) fn new(ca_cert: Option<&std::path::Path>) -> Result<OAuthHttp, String> {
        let builder = |policy| reqwest::Client::builder().timeout(REQUEST_TIMEOUT).redirect(policy);
        let follow = reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("more than 10 redirects")
            } else if !secure_enough(attempt.url()) {
                let refused = format!("a redirect to `{}` (plain http on another host)", attempt.url());
                attempt.error(refused)
            } else {
                attempt.follow()
            }
        });
        let (follow, _) = crate::client::http_client::build_with(builder(follow), true, ca_cert)?;
        let (stop, _) = crate::client::http_client::build_with(
            builder(reqwest::redirect::Policy::none()),
            true,
            ca_cert,
        )?;
        Ok(OAuthHttp { follow, stop })
    }
}

impl OAuthHttp {
    /// The `WWW-Authenticate` challenge of the MCP endpoint at `url`, from a 401 to an
    /// `initialize` request: where the server says its metadata is (`resource_metadata`) and
    /// which scopes it wants (`scope`). `None` when it does not answer 401 (a session it opened
    /// anyway is ended again).
    pub(crate) async fn challenge(&self, url: &str) -> Option<String> {
        let initialize = serde_json::json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "tools", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        let response = self
            .stop
            .post(url)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(initialize.to_string())
            .send()
            .await
            .ok()?;
        if response.status() != http::StatusCode::UNAUTHORIZED {
            if let Some(session) = response.headers().get("mcp-session-id").cloned() {
                let _ = self.stop.delete(url).header("mcp-session-id", session).send().await;
            }
            return None;
        }
        let challenge = response.headers().get(http::header::WWW_AUTHENTICATE)?;
        challenge.to_str().ok().map(str::to_owned)
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let request = reqwest::Request::try_from(request.request).map_err(boxed)?;
            if !secure_enough(request.url()) {
                return Err(format!(
                    "`{}` is plain `http://` on a host other than this machine; OAuth needs `https://` there",
                    request.url()
                )
                .into());
            }
            let mut response = client.execute(request).await.map_err(boxed)?;
            let mut builder = http::Response::builder().status(response.status()).version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(boxed)? {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(format!("an OAuth answer longer than {MAX_BODY} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            builder.body(body).map_err(boxed)
        })
    }
}

fn boxed(error: impl std::error::Error + Send + Sync + 'static) -> OAuthHttpClientError {
    Box::new(error)
}

/// Whether OAuth may talk to `url`: `https://`, or `http://` on this machine (a loopback address
/// or `localhost`), as OAuth 2.1 allows.
pub(crate) fn secure_enough(url: &reqwest::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether `url`'s host is this machine.
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(url::Host::Domain(domain)) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            domain == "localhost" || domain.ends_with(".localhost")
        }
        None => false,
    }
}

/// Refuses an endpoint OAuth may not use, naming what it is (`what`) and why.
pub(crate) fn check_endpoint(what: &str, url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("its {what} `{url}` is not a URL ({e})"))?;
    if secure_enough(&parsed) {
        Ok(())
    } else {
        Err(format!(
            "its {what} `{url}` is not `https://` (plain `http://` is allowed only on this machine), so codes and tokens would cross the network unencrypted; it is refused"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_allowed_only_on_this_machine() {
        for allowed in [
            "https://auth.example.com/token",
            "http://127.0.0.1:8080/token",
            "http://127.9.9.9/token",
            "http://[::1]:9/token",
            "http://localhost/token",
            "http://LOCALHOST./token",
            "http://app.localhost/token",
        ] {
            assert!(check_endpoint("token endpoint", allowed).is_ok(), "{allowed}");
        }
        for refused in [
            "http://auth.example.com/token",
            "http://192.168.1.2/token",
            "http://localhost.example.com/token",
            "http://127.0.0.1.nip.io/token",
            "http://[::ffff:127.0.0.1]/token",
            "ftp://127.0.0.1/token",
            "file:///etc/passwd",
        ] {
            let error = check_endpoint("token endpoint", refused)
                .err()
                .unwrap_or_else(|| panic!("{refused} allowed"));
            assert!(error.contains("refused") || error.contains("not a URL"), "{error}");
        }
    }
}
