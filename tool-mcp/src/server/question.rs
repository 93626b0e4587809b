//! Putting a tool's question to the person at the MCP client with `elicitation/create` (the
//! `ask_user` tool's, a mounted server's), when the client declared the `elicitation` capability.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer, ServiceError};
use serde_json::Value;

use tool_core::BoxFuture;
use tool_core::user_question::{UserAnswer, UserAsker};

/// Answers the questions of one call by asking its client's user.
pub(crate) struct ClientUser {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) timeout: Duration,
}

impl UserAsker for ClientUser {
    fn ask<'a>(&'a self, message: &'a str, schema: &'a Value) -> BoxFuture<'a, Result<UserAnswer, String>> {
        Box::pin(self.elicit(message, schema))
    }
}

impl ClientUser {
    async fn elicit(&self, message: &str, schema: &Value) -> Result<UserAnswer, String> {
        if self.peer.peer_info().is_none() {
            return Err(
                "this MCP session cannot ask the client's user (it has no server-to-client requests)".into(),
            );
        }
        if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            return Err(
                "this MCP client cannot ask its user (it did not declare the elicitation capability)".into(),
            );
        }
        let requested_schema: ElicitationSchema = serde_json::from_value(schema.clone())
            .map_err(|error| format!("the question's form is not one MCP clients can show ({error})"))?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.to_owned(),
            requested_schema,
        };
        match self.peer.create_elicitation_with_timeout(params, Some(self.timeout)).await {
            Ok(answer) => Ok(match answer.action {
                ElicitationAction::Accept => UserAnswer::Accept(match answer.content {
                    Some(Value::Object(content)) => content,
                    _ => serde_json::Map::new(),
                }),
                ElicitationAction::Decline => UserAnswer::Decline,
                _ => UserAnswer::Cancel,
            }),
            Err(ServiceError::Timeout { timeout }) => Err(format!(
                "the MCP client's user did not answer within {}",
                tool_core::words::duration(timeout)
            )),
            Err(error) => Err(format!("asking the MCP client's user failed ({error})")),
        }
    }
}
