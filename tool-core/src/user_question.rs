//! Asking the person at the host a question from inside a tool ([`ToolContext::ask_user`]):
//! who answers (the MCP client of `McpServer`, by elicitation; an application's own
//! [`UserAsker`]).
//!
//! [`ToolContext::ask_user`]: crate::ToolContext::ask_user
//!
//! A question is a message and a form: a flat JSON Schema object whose properties are strings,
//! numbers, booleans or enums (single or multiple choice), as MCP's `elicitation/create` has it.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::{Value, json};
//! use tool_runtime::context::{AskerDependency, Unanswered, UserAnswer, UserAsker};
//! use tool_runtime::{BoxFuture, Dispatcher, Registry};
//!
//! /// Answers every question with its first option, as a scripted test would.
//! struct FirstOption;
//!
//! impl UserAsker for FirstOption {
//!     fn ask<'a>(&'a self, _message: &'a str, schema: &'a Value) -> BoxFuture<'a, Result<UserAnswer, Unanswered>> {
//!         let first = schema["properties"]["answer"]["enum"][0].clone();
//!         Box::pin(async move { Ok(UserAnswer::Accept(json!({"answer": first}).as_object().unwrap().clone())) })
//!     }
//! }
//!
//! let dispatcher = Dispatcher::builder(Registry::builder().build().unwrap())
//!     .dependency(AskerDependency(Arc::new(FirstOption)))
//!     .build();
//! # let _ = dispatcher;
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::future::BoxFuture;

/// Why the host did not answer a tool's request: a question for its person ([`UserAsker`]),
/// a completion from its model ([`Sampler`](crate::sampling::Sampler)). Its text is a sentence
/// for the model, without a final stop.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unanswered {
    /// Nobody there can be asked this; the sentence says what is missing (a client that did
    /// not declare the capability, a request with no way back to its client).
    Unavailable(String),
    /// Nobody answered within this time.
    TimedOut(Duration),
    /// The other side refused, or asking failed; the sentence says how.
    Failed(String),
}

impl fmt::Display for Unanswered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unanswered::Unavailable(why) | Unanswered::Failed(why) => f.write_str(why),
            Unanswered::TimedOut(limit) => {
                write!(f, "no answer came within {}", crate::words::duration(*limit))
            }
        }
    }
}

impl std::error::Error for Unanswered {}

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
    /// Asks `message` with the form `schema` describes; the person's answer, or why it did not
    /// come.
    fn ask<'a>(
        &'a self,
        message: &'a str,
        schema: &'a Value,
    ) -> BoxFuture<'a, Result<UserAnswer, Unanswered>>;
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
