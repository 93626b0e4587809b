//! Passing a mounted server's `sampling/createMessage` on to the MCP client of this server, when
//! that client declared the `sampling` capability: it asks its own model.

// Sampling is deprecated in rmcp (SEP-2577: protocol 2026-07-28 has no server-to-client requests);
// it is how clients of 2025-11-25 and before sample.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::CreateMessageRequestParams;
use rmcp::service::{Peer, ServiceError};
use serde_json::{Map, Value};

use tool_core::BoxFuture;
use tool_core::sampling::Sampler;

/// Samples for one call by asking its client.
pub(crate) struct ClientSampler {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) timeout: Duration,
}

impl Sampler for ClientSampler {
    fn sample<'a>(
        &'a self,
        request: &'a Map<String, Value>,
    ) -> BoxFuture<'a, Result<Map<String, Value>, String>> {
        Box::pin(self.create_message(request))
    }
}

impl ClientSampler {
    /// Whether this session's client can be asked at all, or is to be told why it cannot: a
    /// request without a session (revision 2026-07-28, a server without sessions) gets a sampler
    /// that says so, rather than none, which would read as a client that does not sample.
    pub(crate) fn offered(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info().is_none() || Self::declared(peer)
    }

    /// Whether this session's client declared sampling.
    pub(crate) fn declared(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info().is_some_and(|info| info.capabilities.sampling.is_some())
    }

    async fn create_message(&self, request: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        if self.peer.peer_info().is_none() {
            return Err(
                "this MCP request cannot ask its client to sample: it has no session in which a server \
                        may send its client requests (protocol revision 2026-07-28 has none, nor a server \
                        without sessions)"
                    .into(),
            );
        }
        if !Self::declared(&self.peer) {
            return Err("the MCP client of this server does not sample (it did not declare the sampling \
                        capability)"
                .into());
        }
        let params: CreateMessageRequestParams = serde_json::from_value(Value::Object(request.clone()))
            .map_err(|error| format!("the request is not a sampling/createMessage request ({error})"))?;
        let answer = tokio::time::timeout(self.timeout, self.peer.create_message(params)).await;
        let result = match answer {
            Ok(Ok(result)) => result,
            Ok(Err(ServiceError::McpError(error))) => {
                return Err(format!("the MCP client refused to sample: {}", error.message));
            }
            Ok(Err(error)) => return Err(format!("asking the MCP client to sample failed ({error})")),
            Err(_) => {
                return Err(format!(
                    "the MCP client did not answer within {} seconds",
                    self.timeout.as_secs()
                ));
            }
        };
        match serde_json::to_value(result) {
            Ok(Value::Object(result)) => Ok(result),
            _ => Err("the MCP client's answer could not be read".into()),
        }
    }
}
