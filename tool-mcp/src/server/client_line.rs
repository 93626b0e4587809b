//! How a call reaches its MCP client with requests of its own (a question for its user, a
//! completion from its model): as server-to-client requests in a session (the revisions with
//! `initialize`), or, on revision 2026-07-28, which has no sessions, as the input the call's
//! result asks for ([rounds](super::rounds)).

// Sampling is deprecated in rmcp (SEP-2577): clients of 2025-11-25 and before sample through
// server-to-client requests.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, InputRequest,
};
use rmcp::service::{ElicitationMode, Peer, ServiceError};

use super::rounds::RoundLine;

/// Where a call's requests to its client go.
#[derive(Clone)]
pub(crate) enum ClientLine {
    /// Requests of the session the call came in (no session, no requests: the client of a
    /// stateless request is told so).
    Session(Peer<RoleServer>),
    /// The call's result asks for the input, and the client calls again with the answers; the
    /// capabilities are those the client declared with the call.
    Rounds { line: RoundLine, capabilities: Option<ClientCapabilities> },
}

/// Why a request to the client got no answer.
#[derive(Debug)]
pub(crate) enum AskFailure {
    /// The client cannot be asked this (a sentence saying why).
    Unavailable(String),
    /// Nobody answered in time.
    Timeout(Duration),
    /// The client answered with an error.
    Refused(String),
    /// Asking failed otherwise.
    Failed(String),
}

impl ClientLine {
    /// Why the client cannot be asked a question for its user, if it cannot.
    pub(crate) fn elicitation_refusal(&self) -> Option<&'static str> {
        match self {
            ClientLine::Session(peer) if peer.peer_info().is_none() => {
                Some("this MCP session cannot ask the client's user (it has no server-to-client requests)")
            }
            ClientLine::Session(peer)
                if !peer.supported_elicitation_modes().contains(&ElicitationMode::Form) =>
            {
                Some("this MCP client cannot ask its user (it did not declare the elicitation capability)")
            }
            ClientLine::Rounds { capabilities, .. }
                if capabilities.as_ref().is_none_or(|capabilities| capabilities.elicitation.is_none()) =>
            {
                Some("this MCP client cannot ask its user (it did not declare the elicitation capability)")
            }
            _ => None,
        }
    }

    /// Why the client cannot be asked to sample, if it cannot.
    pub(crate) fn sampling_refusal(&self) -> Option<&'static str> {
        let declared = match self {
            ClientLine::Session(peer) => match peer.peer_info() {
                None => {
                    return Some(
                        "this MCP request cannot ask its client to sample: it has no session in which a server \
                         may send its client requests (a server without sessions)",
                    );
                }
                Some(info) => info.capabilities.sampling.is_some(),
            },
            ClientLine::Rounds { capabilities, .. } => {
                capabilities.as_ref().is_some_and(|capabilities| capabilities.sampling.is_some())
            }
        };
        (!declared).then_some(
            "the MCP client of this server does not sample (it did not declare the sampling capability)",
        )
    }

    /// Whether a sampler for this client is worth offering: one that samples, or one that says
    /// why it cannot where a client might expect it to (a request without a session), rather than
    /// none, which reads as a client that does not sample.
    pub(crate) fn offers_sampling(&self) -> bool {
        match self {
            ClientLine::Session(peer) => {
                peer.peer_info().is_none_or(|info| info.capabilities.sampling.is_some())
            }
            ClientLine::Rounds { .. } => true,
        }
    }

    /// Puts a question (an `elicitation/create` form) to the client's user.
    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
        timeout: Duration,
    ) -> Result<ElicitResult, AskFailure> {
        if let Some(why) = self.elicitation_refusal() {
            return Err(AskFailure::Unavailable(why.to_owned()));
        }
        match self {
            ClientLine::Session(peer) => {
                peer.create_elicitation_with_timeout(params, Some(timeout)).await.map_err(failure)
            }
            ClientLine::Rounds { line, .. } => {
                let answer = line.ask(InputRequest::Elicitation(ElicitRequest::new(params)), timeout).await?;
                serde_json::from_value(answer).map_err(|e| {
                    AskFailure::Failed(format!("the client's answer is not an elicitation result ({e})"))
                })
            }
        }
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub(crate) async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        timeout: Duration,
    ) -> Result<CreateMessageResult, AskFailure> {
        if let Some(why) = self.sampling_refusal() {
            return Err(AskFailure::Unavailable(why.to_owned()));
        }
        match self {
            ClientLine::Session(peer) => {
                match tokio::time::timeout(timeout, peer.create_message(params)).await {
                    Ok(answer) => answer.map_err(failure),
                    Err(_) => Err(AskFailure::Timeout(timeout)),
                }
            }
            ClientLine::Rounds { line, .. } => {
                let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
                let answer = line.ask(request, timeout).await?;
                serde_json::from_value(answer).map_err(|e| {
                    AskFailure::Failed(format!("the client's answer is not a sampling result ({e})"))
                })
            }
        }
    }
}

fn failure(error: ServiceError) -> AskFailure {
    match error {
        ServiceError::Timeout { timeout } => AskFailure::Timeout(timeout),
        ServiceError::McpError(error) => AskFailure::Refused(error.message.into_owned()),
        other => AskFailure::Failed(other.to_string()),
    }
}
