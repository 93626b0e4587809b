//! Before- and after-call hooks: allow, deny or rewrite a call; inspect or replace its result.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ToolError;
use crate::future::BoxFuture;
use crate::output::ToolOutput;
use crate::permission::PermissionHook;

/// The call a hook is looking at.
#[derive(Clone)]
pub struct HookCall {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The session's id.
    pub session_id: String,
    /// The validated arguments (after any rewrite by an earlier hook).
    pub arguments: Value,
    /// Who answers for the person behind the call, when its caller has someone to ask (see
    /// [`CallOptions::asker`](crate::CallOptions)). Not compared.
    pub asker: Option<Arc<dyn PermissionHook>>,
}

impl fmt::Debug for HookCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookCall")
            .field("call_id", &self.call_id)
            .field("tool", &self.tool)
            .field("session_id", &self.session_id)
            .field("arguments", &self.arguments)
            .field("asker", &self.asker.is_some())
            .finish()
    }
}

impl PartialEq for HookCall {
    fn eq(&self, other: &Self) -> bool {
        self.call_id == other.call_id
            && self.tool == other.tool
            && self.session_id == other.session_id
            && self.arguments == other.arguments
    }
}

/// What a before-hook decides about a call.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeDecision {
    /// Run the call as it is.
    Allow,
    /// Do not run the call; the model reads the reason in a permission-denied result.
    Deny {
        /// Why, in words the model can act on.
        reason: String,
    },
    /// Run the call with these arguments instead; they are validated again.
    Rewrite(Value),
}

impl BeforeDecision {
    /// A denial with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        BeforeDecision::Deny { reason: reason.into() }
    }
}

/// Runs before a call's tool, after its arguments were validated and its guard taken.
///
/// Hooks run in the order they were added; each sees the arguments left by the one before. An
/// `Err` (or a panic) ends the call with an error result; a `Fatal` error stops the batch.
pub trait BeforeHook: Send + Sync + 'static {
    /// Decides about one call.
    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<BeforeDecision, ToolError>>;
}

/// Runs after a call's tool returned (successfully or not, including a timeout), before
/// truncation. Not run for calls that were denied, skipped or cancelled.
///
/// Returns the output to keep: the same one (inspection) or another (replacement). An `Err`
/// (or a panic) replaces the result with an error result; a `Fatal` error stops the batch.
pub trait AfterHook: Send + Sync + 'static {
    /// Inspects or replaces one call's output.
    fn after<'a>(
        &'a self,
        call: &'a HookCall,
        output: ToolOutput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// A before-hook from an async closure taking the call by value.
pub struct BeforeFn<F>(pub F);

impl<F, Fut> BeforeHook for BeforeFn<F>
where
    F: Fn(HookCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<BeforeDecision, ToolError>> + Send + 'static,
{
    fn before<'a>(&'a self, call: &'a HookCall) -> BoxFuture<'a, Result<BeforeDecision, ToolError>> {
        Box::pin((self.0)(call.clone()))
    }
}

impl<F> fmt::Debug for BeforeFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BeforeFn")
    }
}

/// An after-hook from an async closure taking the call and the output by value.
pub struct AfterFn<F>(pub F);

impl<F, Fut> AfterHook for AfterFn<F>
where
    F: Fn(HookCall, ToolOutput) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn after<'a>(
        &'a self,
        call: &'a HookCall,
        output: ToolOutput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin((self.0)(call.clone(), output))
    }
}

impl<F> fmt::Debug for AfterFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AfterFn")
    }
}
