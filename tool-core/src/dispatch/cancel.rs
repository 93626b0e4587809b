//! Waiting on a future unless the call is cancelled first.

/// `None` when `cancel` fires before `future` completes. The future is polled first, so one that
/// is ready at once never registers a waiter on the token; callers check the token themselves
/// where a cancellation that came earlier must win. A macro rather than an `async fn`, so the
/// future is not stored twice in the caller's state.
macro_rules! until_cancelled {
    ($cancel:expr, $future:expr) => {
        tokio::select! {
            biased;
            value = $future => Some(value),
            () = $cancel.cancelled() => None,
        }
    };
}
pub(crate) use until_cancelled;
