//! Asking the person at the host a question from inside a tool: who answers (the MCP client of
//! `McpServer`, by elicitation; an application's own [`UserAsker`]), and the refusal when
//! nobody can.
//!
//! A question is a message and a form: a flat JSON Schema object whose properties are strings,
//! numbers, booleans or enums (single or multiple choice), as MCP's `elicitation/create` has it.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::{Value, json};
//! use tool_runtime::user_question::{AskerDependency, UserAnswer, UserAsker, ask_user};
//! use tool_runtime::{BoxFuture, Dispatcher, Registry};
//!
//! /// Answers every question with its first option, as a scripted test would.
//! struct FirstOption;
//!
//! impl UserAsker for FirstOption {
//!     fn ask<'a>(&'a self, _message: &'a str, schema: &'a Value) -> BoxFuture<'a, Result<UserAnswer, String>> {
//!         let first = schema["properties"]["answer"]["enum"][0].clone();
//!         Box::pin(async move { Ok(UserAnswer::Accept(json!({"answer": first}).as_object().unwrap().clone())) })
//!     }
//! }
//!
//! let dispatcher = Dispatcher::builder(Registry::builder().build().unwrap())
//!     .dependency(AskerDependency(Arc::new(FirstOption)))
//!     .build();
//! # let _ = (dispatcher, ask_user);
//! ```

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::future::BoxFuture;

/// What the person did with a question.
#[derive(Debug, Clone, PartialEq)]
pub enum UserAnswer {
    /// They answered: the form's values by property name.
    Accept(Map<String, Value>),
    /// They said no.
    Decline,
    /// They dismissed the question without an answer.
    Cancel,
}

/// Whoever can put a question to the person at the host.
pub trait UserAsker: Send + Sync + 'static {
    /// Asks `message` with the form `schema` describes; the person's answer, or why the
    /// question could not be asked (a sentence naming what is missing).
    fn ask<'a>(&'a self, message: &'a str, schema: &'a Value) -> BoxFuture<'a, Result<UserAnswer, String>>;
}

/// The application's [`UserAsker`], registered as a dependency of the dispatcher
/// ([`DispatcherBuilder::dependency`](crate::DispatcherBuilder::dependency)). Who the call was
/// given ([`CallOptions::user`](crate::CallOptions): the client of `McpServer` serving the call)
/// comes first.
#[derive(Clone)]
pub struct AskerDependency(pub Arc<dyn UserAsker>);

impl std::fmt::Debug for AskerDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AskerDependency(..)")
    }
}

/// Who answers the questions of the call `ctx` belongs to, if anyone: the MCP client of the
/// call, else the application's [`AskerDependency`].
pub fn user_asker(ctx: &ToolContext) -> Option<Arc<dyn UserAsker>> {
    ctx.call_user().or_else(|| ctx.dependencies().get::<AskerDependency>().map(|asker| asker.0.clone()))
}

/// Asks the person at the host `message` with the form `schema`. Fails, with a message the
/// model can act on, when nobody can answer (a headless host: no MCP client that answers
/// questions, no application asker) or asking failed.
pub async fn ask_user(ctx: &ToolContext, message: &str, schema: &Value) -> Result<UserAnswer, ToolError> {
    let Some(asker) = user_asker(ctx) else {
        return Err(ToolError::execution(
            "Nobody can answer a question here: this host runs without a person to ask (no MCP client that \
             answers questions, no asker set up by the application). Decide with what you know and say what you \
             assumed, or stop and say what you need to know.",
        ));
    };
    asker.ask(message, schema).await.map_err(|why| {
        ToolError::execution(format!(
            "The question could not be put to the user: {why}. Decide with what you know and say what you \
             assumed, or stop and say what you need to know."
        ))
    })
}
