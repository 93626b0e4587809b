//! Handing the rest of a call's work to whoever made the call: a call that would go on in the
//! background (a `bash` command still running at its yield time) finishes instead as a task its
//! caller tracks to the end (an MCP task, when the client of `McpServer` supports them).
//!
//! The caller gives a [`TaskTaker`] in [`CallOptions::tasks`](crate::CallOptions); the tool asks
//! [`ToolContext::hand_off`](crate::ToolContext::hand_off) whether it was taken. When it was, the
//! call's own result is only an acknowledgement: the caller reports the output of the rest
//! ([`Remainder::work`]) as the call's final result, and cancels [`Remainder::work`]'s token to
//! stop it.

use tokio_util::sync::CancellationToken;

use crate::future::BoxFuture;
use crate::output::ToolOutput;

/// The rest of a call's work: given the token that stops it, a future that ends with the call's
/// final output (a cancelled remainder ends promptly, with what it has).
pub type RemainderWork = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ToolOutput> + Send>;

/// The rest of a call's work, and a line saying what it is (shown while it runs).
pub struct Remainder {
    /// What the work is, for the caller's status of the task ("`make test` is running").
    pub status: String,
    /// The work itself.
    pub work: RemainderWork,
}

impl std::fmt::Debug for Remainder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remainder").field("status", &self.status).finish_non_exhaustive()
    }
}

/// Takes the rest of a call's work and runs it as a task of its own (an MCP server whose client
/// supports tasks). At most one remainder per call: the first is taken, a second is refused.
pub trait TaskTaker: Send + Sync + 'static {
    /// Takes `rest` and starts it; `Err(rest)` gives it back when it cannot be taken.
    fn take(&self, rest: Remainder) -> Result<(), Remainder>;
}
