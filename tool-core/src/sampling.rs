//! Asking the host's model for a completion on behalf of a tool: a mounted MCP server's
//! `sampling/createMessage`, answered by whoever samples for the call in flight (the MCP client
//! of `McpServer`, when it declared `sampling`; an application's own [`Sampler`]).
//!
//! Requests and results keep MCP's shapes (`CreateMessageRequestParams` in, `CreateMessageResult`
//! out, as JSON objects), so a sampler passes them on to a model API or another MCP client as
//! they are.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::{Map, Value, json};
//! use tool_runtime::context::{Sampler, SamplerDependency, Unanswered};
//! use tool_runtime::{BoxFuture, Dispatcher, Registry};
//!
//! /// Answers every request with the same text, as a scripted test would.
//! struct Canned;
//!
//! impl Sampler for Canned {
//!     fn sample<'a>(&'a self, _request: &'a Map<String, Value>) -> BoxFuture<'a, Result<Map<String, Value>, Unanswered>> {
//!         let result = json!({"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "canned"});
//!         Box::pin(async move { Ok(result.as_object().unwrap().clone()) })
//!     }
//! }
//!
//! let dispatcher = Dispatcher::builder(Registry::builder().build().unwrap())
//!     .dependency(SamplerDependency(Arc::new(Canned)))
//!     .build();
//! # let _ = dispatcher;
//! ```

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::future::BoxFuture;
pub use crate::user_question::Unanswered;

/// Whoever can ask a model for a completion for the person at the host.
pub trait Sampler: Send + Sync + 'static {
    /// Answers `request` (the params of MCP's `sampling/createMessage`: `messages`, `maxTokens`,
    /// optional `systemPrompt`, `modelPreferences`, ...) with a `CreateMessageResult` object
    /// (`role`, `content`, `model`, optional `stopReason`), or says why it did not.
    fn sample<'a>(
        &'a self,
        request: &'a Map<String, Value>,
    ) -> BoxFuture<'a, Result<Map<String, Value>, Unanswered>>;
}

/// The application's [`Sampler`], registered as a dependency of the dispatcher
/// ([`DispatcherBuilder::dependency`](crate::DispatcherBuilder::dependency)). The sampler the call
/// was given ([`CallOptions::sampler`](crate::CallOptions): the client of `McpServer` serving the
/// call) comes first.
#[derive(Clone)]
pub struct SamplerDependency(pub Arc<dyn Sampler>);

impl std::fmt::Debug for SamplerDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SamplerDependency(..)")
    }
}
