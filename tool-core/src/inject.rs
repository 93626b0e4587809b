//! Injected parameters: `FromContext` (axum-extractor style) and the `Dep<T>` dependency handle.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::context::{SessionState, ToolContext};
use crate::error::ToolError;

/// A parameter the runtime provides from the call's context instead of the model.
///
/// Built in: `&ToolContext`, `ToolContext`, `CancellationToken`, `SessionState` and `Dep<T>`.
/// `#[tool]` recognises those by name; for your own type, implement this trait and mark the
/// parameter `#[inject]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected into a tool",
    label = "not injectable",
    note = "injected parameters implement `FromContext`: `&ToolContext`, `CancellationToken`, `SessionState`, `Dep<T>`, or your own type with `impl FromContext`",
    note = "a parameter the model should fill in must not be marked `#[inject]`"
)]
pub trait FromContext<'a>: Sized {
    /// Extracts the value from the call's context.
    fn from_context(ctx: &'a ToolContext) -> Result<Self, ToolError>;
}

impl<'a> FromContext<'a> for &'a ToolContext {
    fn from_context(ctx: &'a ToolContext) -> Result<Self, ToolError> {
        Ok(ctx)
    }
}

impl FromContext<'_> for ToolContext {
    fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.clone())
    }
}

impl FromContext<'_> for CancellationToken {
    fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.cancellation_token().clone())
    }
}

impl FromContext<'_> for SessionState {
    fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        Ok(ctx.session().clone())
    }
}

/// A typed dependency registered on the dispatcher, injected into a tool parameter.
///
/// ```ignore
/// #[tool]
/// async fn now(clock: Dep<Clock>) -> String { clock.now().to_string() }
/// ```
pub struct Dep<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Dep<T> {
    /// The shared value.
    pub fn into_inner(self) -> Arc<T> {
        self.0
    }
}

impl<T: ?Sized> Clone for Dep<T> {
    fn clone(&self) -> Self {
        Dep(self.0.clone())
    }
}

impl<T: ?Sized> Deref for Dep<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Dep<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: Send + Sync + 'static> FromContext<'_> for Dep<T> {
    fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.dep::<T>().map(Dep)
    }
}
