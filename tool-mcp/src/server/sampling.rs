//! Passing a mounted server's `sampling/createMessage` on to the MCP client of this server, when
//! that client declared the `sampling` capability: it asks its own model.

// Sampling is deprecated in rmcp (SEP-2577): clients ask their models for servers through it up
// to 2025-11-25, and through rounds' input requests on 2026-07-28.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::model::CreateMessageRequestParams;
use serde_json::{Map, Value};

use tool_core::BoxFuture;
use tool_core::sampling::{Sampler, Unanswered};

use super::client_line::{AskFailure, ClientLine};

/// Samples for one call by asking its client.
pub(crate) struct ClientSampler {
    pub(crate) line: ClientLine,
    pub(crate) timeout: Duration,
}

impl Sampler for ClientSampler {
    fn sample<'a>(
        &'a self,
        request: &'a Map<String, Value>,
    ) -> BoxFuture<'a, Result<Map<String, Value>, Unanswered>> {
        Box::pin(self.create_message(request))
    }
}

impl ClientSampler {
    async fn create_message(&self, request: &Map<String, Value>) -> Result<Map<String, Value>, Unanswered> {
        if let Some(why) = self.line.sampling_refusal() {
            return Err(Unanswered::Unavailable(why.to_owned()));
        }
        let params: CreateMessageRequestParams = serde_json::from_value(Value::Object(request.clone()))
            .map_err(|error| {
                Unanswered::Failed(format!("the request is not a sampling/createMessage request ({error})"))
            })?;
        let result = match self.line.create_message(params, self.timeout).await {
            Ok(result) => result,
            Err(AskFailure::Unavailable(why)) => return Err(Unanswered::Unavailable(why)),
            Err(AskFailure::Refused(why)) => {
                return Err(Unanswered::Failed(format!("the MCP client refused to sample: {why}")));
            }
            Err(AskFailure::Failed(why)) => {
                return Err(Unanswered::Failed(format!("asking the MCP client to sample failed ({why})")));
            }
            Err(AskFailure::Timeout(timeout)) => return Err(Unanswered::TimedOut(timeout)),
        };
        match serde_json::to_value(result) {
            Ok(Value::Object(result)) => Ok(result),
            _ => Err(Unanswered::Failed("the MCP client's answer could not be read".to_owned())),
        }
    }
}
