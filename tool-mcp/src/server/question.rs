//! Putting a tool's question to the person at the MCP client with `elicitation/create` (the
//! `ask_user` tool's, a mounted server's), when the client declared the `elicitation` capability.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use serde_json::Value;

use tool_core::BoxFuture;
use tool_core::user_question::{Unanswered, UserAnswer, UserAsker};

use super::client_line::{AskFailure, ClientLine};

/// Answers the questions of one call by asking its client's user.
pub(crate) struct ClientUser {
    pub(crate) line: ClientLine,
    pub(crate) timeout: Duration,
}

impl UserAsker for ClientUser {
    fn ask<'a>(
        &'a self,
        message: &'a str,
        schema: &'a Value,
    ) -> BoxFuture<'a, Result<UserAnswer, Unanswered>> {
        Box::pin(self.elicit(message, schema))
    }
}

impl ClientUser {
    async fn elicit(&self, message: &str, schema: &Value) -> Result<UserAnswer, Unanswered> {
        if let Some(why) = self.line.elicitation_refusal() {
            return Err(Unanswered::Unavailable(why.to_owned()));
        }
        let requested_schema: ElicitationSchema =
            serde_json::from_value(schema.clone()).map_err(|error| {
                Unanswered::Failed(format!("the question's form is not one MCP clients can show ({error})"))
            })?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.to_owned(),
            requested_schema,
        };
        match self.line.elicit(params, self.timeout).await {
            Ok(answer) => Ok(match answer.action {
                ElicitationAction::Accept => UserAnswer::Accept(match answer.content {
                    Some(Value::Object(content)) => content,
                    _ => serde_json::Map::new(),
                }),
                ElicitationAction::Decline => UserAnswer::Decline,
                _ => UserAnswer::Cancel,
            }),
            Err(AskFailure::Unavailable(why)) => Err(Unanswered::Unavailable(why)),
            Err(AskFailure::Timeout(timeout)) => Err(Unanswered::TimedOut(timeout)),
            Err(AskFailure::Refused(why) | AskFailure::Failed(why)) => {
                Err(Unanswered::Failed(format!("asking the MCP client's user failed ({why})")))
            }
        }
    }
}
