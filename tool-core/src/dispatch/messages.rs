//! The texts of framework-made results, and panic isolation for tool and hook futures.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::error::ToolError;
use crate::future::BoxFuture;
use crate::permission::{PermissionKind, PermissionRequest};
use crate::words::duration;

pub(crate) fn timed_out(tool: &str, limit: Duration) -> ToolError {
    ToolError::timeout(format!(
        "The call to `{tool}` timed out after {} and was stopped. Try a smaller task or narrower arguments.",
        duration(limit)
    ))
}

pub(crate) fn cancelled_after(tool: &str, elapsed: Duration) -> ToolError {
    ToolError::cancelled(format!("The call to `{tool}` was cancelled after {}.", duration(elapsed)))
}

pub(crate) fn cancelled_before_start(tool: &str, waited: Duration) -> ToolError {
    ToolError::cancelled(format!(
        "The call to `{tool}` was cancelled after {}, before it started.",
        duration(waited)
    ))
}

pub(crate) fn skipped(tool: &str) -> ToolError {
    ToolError::cancelled(format!(
        "The call to `{tool}` was skipped: the turn was interrupted before it ran, so it had no effect."
    ))
}

pub(crate) fn crashed(tool: &str, panic: String) -> ToolError {
    ToolError::execution(format!(
        "The tool `{tool}` crashed while handling this call (an internal error, reported to the operator). \
         The same call will likely crash again; try different arguments or another approach."
    ))
    .with_source(Panicked(panic))
}

/// `hook` names the hook: "a before-call hook", "an after-call hook", "the permission hook".
pub(crate) fn hook_crashed(tool: &str, hook: &str, panic: String) -> ToolError {
    ToolError::execution(format!(
        "The call to `{tool}` failed: {hook} crashed (an internal error, reported to the operator)."
    ))
    .with_source(Panicked(panic))
}

pub(crate) fn task_failed(tool: &str) -> ToolError {
    ToolError::execution(format!(
        "The call to `{tool}` was lost: its task stopped unexpectedly (an internal error, reported to the operator)."
    ))
}

pub(crate) fn denied_by_hook(tool: &str, reason: &str) -> ToolError {
    ToolError::permission_denied(format!("The call to `{tool}` was denied: {reason}"))
}

pub(crate) fn repeat_refused(tool: &str, count: u32) -> ToolError {
    ToolError::permission_denied(format!(
        "The call to `{tool}` was not run: this exact call (same tool, same arguments) was made {count} times in a row, \
         which looks like a loop. If you expect a different result this time, say why and change the arguments; \
         otherwise try a different approach."
    ))
}

pub(crate) fn repeat_request(tool: &str, count: u32) -> PermissionRequest {
    PermissionRequest::new(
        PermissionKind::RepeatedCall { count },
        format!("`{tool}` called {count} times in a row with the same arguments"),
    )
}

pub(crate) fn rewritten_arguments_invalid(tool: &str, error: &ToolError) -> ToolError {
    ToolError::execution(format!(
        "The call to `{tool}` was not run: a hook rewrote its arguments and the result is invalid. {}",
        error.message()
    ))
}

pub(crate) fn rewritten_read_only_call(tool: &str) -> ToolError {
    ToolError::permission_denied(format!(
        "The call to `{tool}` was not run: it ran alongside other calls because its command only reads, and a \
         hook rewrote it into a command that may change things. Make that call again on its own turn."
    ))
}

/// A panic's message, as the operator-only source of a crash error.
#[derive(Debug)]
pub(crate) struct Panicked(pub(crate) String);

impl fmt::Display for Panicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "panicked: {}", self.0)
    }
}

impl std::error::Error for Panicked {}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// A future whose panics (while being made or polled) become `Err(panic message)`.
pub(crate) enum CatchUnwind<'a, T> {
    Running(BoxFuture<'a, T>),
    Panicked(Option<String>),
}

/// Makes a future with `make` and runs it with panics caught.
pub(crate) fn guarded<'a, T>(make: impl FnOnce() -> BoxFuture<'a, T>) -> CatchUnwind<'a, T> {
    match catch_unwind(AssertUnwindSafe(make)) {
        Ok(future) => CatchUnwind::Running(future),
        Err(payload) => CatchUnwind::Panicked(Some(panic_message(&*payload))),
    }
}

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match this {
            CatchUnwind::Running(future) => {
                match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                    Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
                    Ok(Poll::Pending) => Poll::Pending,
                    Err(payload) => {
                        let message = panic_message(&*payload);
                        // The panicked future is never polled again; dropping it may panic too.
                        let broken = std::mem::replace(this, CatchUnwind::Panicked(None));
                        let _ = catch_unwind(AssertUnwindSafe(move || drop(broken)));
                        Poll::Ready(Err(message))
                    }
                }
            }
            CatchUnwind::Panicked(message) => {
                Poll::Ready(Err(message.take().unwrap_or_else(|| "polled after a panic".to_owned())))
            }
        }
    }
}
