//! A mounted server's `elicitation/create`, put to our user for the call of its tools that is in
//! flight, under that call's permission policy; and its `sampling/createMessage`, passed to that
//! call's sampler the same way.

// Sampling is deprecated in rmcp (SEP-2577), and still what servers of 2025-11-25 and before send.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ErrorCode, ErrorData,
};
use serde_json::{Value, json};

use tool_core::sampling::Sampler;
use tool_core::user_question::{UserAnswer, UserAsker};
use tool_core::{CallAsker, ToolContext};
use tool_core::{PermissionKind, PermissionRequest};

/// The permission asked before a mounted server's question reaches the user
/// (`PermissionKind::Other`), so that a policy can refuse or ask about it.
pub const ELICITATION_PERMISSION: &str = "mcp_elicitation";

/// The permission asked before a mounted server's request for a completion reaches the sampler
/// (`PermissionKind::Other`), so that a policy can refuse or ask about it.
pub const SAMPLING_PERMISSION: &str = "mcp_sampling";

/// The calls of a server's tools in flight, each with who answers its questions.
#[derive(Default)]
pub(crate) struct Askers {
    calls: Mutex<Vec<(u64, Asking)>>,
    next: AtomicU64,
}

#[derive(Clone)]
struct Asking {
    permission: CallAsker,
    user: Option<Arc<dyn UserAsker>>,
    sampler: Option<Arc<dyn Sampler>>,
    tool: String,
    session: String,
}

/// One call in flight, until dropped.
pub(crate) struct Entered {
    askers: Arc<Askers>,
    id: u64,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let mut calls = self.askers.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.retain(|(id, _)| *id != self.id);
    }
}

impl Askers {
    /// Records the call of `ctx` (from its own task, where its askers are known) until the guard
    /// is dropped.
    pub(crate) fn enter(self: &Arc<Self>, ctx: &ToolContext) -> Entered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let asking = Asking {
            permission: ctx.asker(),
            user: ctx.user_asker(),
            sampler: ctx.sampler(),
            tool: ctx.tool_name().to_owned(),
            session: ctx.session_id().to_owned(),
        };
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).push((id, asking));
        Entered { askers: self.clone(), id }
    }

    /// The latest call in flight, when every call in flight is of one session; else why nobody
    /// can answer for them.
    fn latest(&self) -> Result<Asking, String> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, latest)) = calls.last() else {
            return Err(
                "Nobody can answer: this client asks its user only while one of your tools runs for it."
                    .to_owned(),
            );
        };
        if calls.iter().any(|(_, asking)| asking.session != latest.session) {
            return Err(
                "Nobody can answer now: calls of your tools from several sessions are running, and the \
                        request cannot be told apart as one session's. Ask again when one call runs."
                    .to_owned(),
            );
        }
        Ok(latest.clone())
    }

    /// Passes the server's request for a completion to the sampler of the latest call in flight,
    /// once the call's permission policy allows it.
    pub(crate) async fn sample(
        &self,
        server: &str,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let refused = |message: String| ErrorData::new(ErrorCode::INVALID_REQUEST, message, None);
        let asking = self.latest().map_err(refused)?;
        let Some(sampler) = asking.sampler else {
            return Err(refused(
                "Nobody can sample: this client's host has no model to ask for you (its MCP client does not \
                 sample, and the application set up no sampler). Go on without a completion."
                    .to_owned(),
            ));
        };
        let request = match serde_json::to_value(&request) {
            Ok(Value::Object(request)) => request,
            _ => return Err(refused("The request could not be read.".to_owned())),
        };
        let mut permission = PermissionRequest::new(
            PermissionKind::Other { name: SAMPLING_PERMISSION.to_owned() },
            format!("let the MCP server `{server}` ask the model for a completion"),
        )
        .with_details(json!({"server": server, "request": request}));
        permission.tool = asking.tool.clone();
        if let Err(error) = asking.permission.ask(permission).await {
            return Err(refused(format!("The completion was not asked for: {}", error.message())));
        }
        let result = sampler
            .sample(&request)
            .await
            .map_err(|why| refused(format!("The completion could not be made: {why}.")))?;
        serde_json::from_value(Value::Object(result))
            .map_err(|error| refused(format!("The sampler's answer is not a CreateMessageResult ({error}).")))
    }

    /// Puts the server's question to the user of the latest call in flight, once the call's
    /// permission policy allows it.
    pub(crate) async fn elicit(
        &self,
        server: &str,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let refused = |message: String| ErrorData::new(ErrorCode::INVALID_REQUEST, message, None);
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            return Err(refused(
                "This client passes on form questions only (elicitation mode `form`), not URLs to open."
                    .to_owned(),
            ));
        };
        // A question says nothing of the call it is for: with the calls of several sessions (the
        // users of several clients of `tools serve --http`) in flight, it could reach the wrong
        // person, so it reaches none.
        let asking = self.latest().map_err(refused)?;
        let mut permission = PermissionRequest::new(
            PermissionKind::Other { name: ELICITATION_PERMISSION.to_owned() },
            format!("let the MCP server `{server}` ask the user: {message}"),
        )
        .with_details(json!({"server": server, "message": message}));
        permission.tool = asking.tool.clone();
        if let Err(error) = asking.permission.ask(permission).await {
            return Err(refused(format!("The question was not put to the user: {}", error.message())));
        }
        let Some(user) = asking.user else {
            return Err(refused(
                "Nobody can answer: this client runs without a person to ask (a headless host).".to_owned(),
            ));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
        match user.ask(&message, &schema).await {
            Ok(UserAnswer::Accept(content)) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(Value::Object(content));
                Ok(result)
            }
            Ok(UserAnswer::Decline) => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Ok(UserAnswer::Cancel) => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Err(why) => Err(refused(format!("The question could not be put to the user: {why}."))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ElicitationSchema;
    use tool_core::BoxFuture;

    struct Yes;

    impl UserAsker for Yes {
        fn ask<'a>(
            &'a self,
            _: &'a str,
            _: &'a Value,
        ) -> BoxFuture<'a, Result<UserAnswer, tool_core::user_question::Unanswered>> {
            Box::pin(async { Ok(UserAnswer::Accept(serde_json::Map::new())) })
        }
    }

    fn question() -> ElicitRequestParams {
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "Which?".to_owned(),
            requested_schema: ElicitationSchema::builder().build_unchecked(),
        }
    }

    fn call(session: &str) -> ToolContext {
        ToolContext::builder("tool").session_id(session).user(Arc::new(Yes)).build()
    }

    #[tokio::test]
    async fn a_question_reaches_no_one_while_several_sessions_have_calls_in_flight() {
        let askers = Arc::new(Askers::default());
        let error = askers.elicit("fx", question()).await.unwrap_err();
        assert!(error.message.starts_with("Nobody can answer: this client asks its user only while"));

        let first = askers.enter(&call("alice"));
        assert_eq!(askers.elicit("fx", question()).await.unwrap().action, ElicitationAction::Accept);
        let same = askers.enter(&call("alice"));
        assert_eq!(askers.elicit("fx", question()).await.unwrap().action, ElicitationAction::Accept);
        let other = askers.enter(&call("bob"));
        let error = askers.elicit("fx", question()).await.unwrap_err();
        assert!(
            error.message.contains("calls of your tools from several sessions are running"),
            "{}",
            error.message
        );
        drop((first, same));
        assert_eq!(askers.elicit("fx", question()).await.unwrap().action, ElicitationAction::Accept);
        drop(other);
    }
}
