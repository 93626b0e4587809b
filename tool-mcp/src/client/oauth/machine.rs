//! The client credentials grant: a token for the client itself, asked for without a person.

use std::path::Path;
use std::sync::Arc;

use oauth2::TokenResponse;
use rmcp::transport::auth::{AuthorizationManager, ClientCredentialsConfig};

use super::http::OAuthHttp;
use super::store::{EntryStore, TokenFile};
use crate::client::OAuthConfig;

/// Asks the authorization server of the MCP server at `url` for a token with the client's own
/// credentials (`config`'s `clientId` and `clientSecret`) and `scopes` (none: what the server's
/// challenge or metadata name), stores it in `file` and returns the access token. The caller
/// holds the file's lock.
pub(crate) async fn client_credentials(
    server: &str,
    url: &str,
    ca_cert: Option<&Path>,
    config: &OAuthConfig,
    file: &TokenFile,
    scopes: &[String],
) -> Result<String, String> {
    let (Some(client_id), Some(client_secret)) = (&config.client_id, &config.client_secret) else {
        return Err("`oauth.grantType` `client_credentials` needs `oauth.clientId` and `oauth.clientSecret`"
            .to_owned());
    };
    let http = OAuthHttp::new(ca_cert)?;
    let challenge = http.challenge(url).await;
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
        .await
        .map_err(|e| format!("cannot set up OAuth for `{url}` ({e})"))?;
    let metadata = super::discover(&manager, url, challenge.as_deref(), false).await?;
    manager.set_metadata(metadata);
    let scopes = if !scopes.is_empty() {
        scopes.to_vec()
    } else if !config.scopes.is_empty() {
        config.scopes.clone()
    } else {
        manager.select_initial_scopes(&[]).await
    };
    let grant = ClientCredentialsConfig::ClientSecret {
        client_id: client_id.clone(),
        client_secret: client_secret.clone(),
        scopes,
        resource: Some(url.to_owned()),
    };
    manager
        .validate_client_credentials_metadata(&grant)
        .and_then(|()| manager.configure_client_credentials(&grant))
        .map_err(|e| format!("cannot use the client credentials grant there ({})", super::describe(&e)))?;
    manager.set_credential_store(EntryStore {
        file: file.clone(),
        url: url.to_owned(),
        server: server.to_owned(),
        client_secret: None,
        redirect_uri: String::new(),
    });
    let response = manager.exchange_client_credentials(&grant).await.map_err(|e| {
        format!(
            "the authorization server gave no token for the client's credentials ({}); check `oauth.clientId` and `oauth.clientSecret`",
            super::describe(&e)
        )
    })?;
    Ok(response.access_token().secret().clone())
}
