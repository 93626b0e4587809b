//! The network of one sandboxed command without the `egress` feature: no proxy, so a sandboxed
//! command's network stays off, and a command granted the network (the settings'
//! `networkCommands`, a `sandbox: "network"` the user allowed) is told why it has none.

use serde_json::Value;
use tool_runtime::ToolContext;
use tool_sandbox::{Network, Sandbox};

use crate::Workspace;

/// A command's proxy: none can exist in this build.
pub(crate) enum Proxy {}

impl Proxy {
    /// The variables that point a command at its proxy.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        match *self {}
    }
}

/// A host the proxy refused: none in this build.
pub(crate) enum Refusal {}

/// A command's proxy, and the sandbox that lets it reach only that proxy.
pub(crate) struct CommandNetwork {
    pub(crate) proxy: Proxy,
    pub(crate) sandbox: std::sync::Arc<Sandbox>,
}

/// What the command gets.
pub(crate) enum Prepared {
    /// Nothing changes: the command runs as its sandbox says.
    Unchanged,
    /// Never made in this build.
    #[allow(dead_code)]
    Proxy(CommandNetwork),
    /// The network stays off, for this reason.
    Off(String),
}

/// A command `granted` the network in the sandbox with its network off: it keeps it off here,
/// and its result says why.
pub(crate) async fn prepare(
    _ws: &Workspace,
    _ctx: &ToolContext,
    _command: &str,
    sandbox: &Sandbox,
    granted: bool,
) -> Prepared {
    let policy = sandbox.policy();
    if granted && policy.is_enforced() && policy.network == Network::Off {
        return Prepared::Off(
            "this program was built without tools-std's `egress` feature, whose proxy carries a sandboxed \
             command's network"
                .to_owned(),
        );
    }
    Prepared::Unchanged
}

/// The refusals since the last call: none in this build.
pub(crate) fn refusals(proxy: &Proxy, _can_escalate: bool) -> (Option<String>, Vec<Refusal>) {
    match *proxy {}
}

/// The refusals as a result's metadata.
pub(crate) fn refusals_metadata(refusals: &[Refusal]) -> Value {
    Value::Array(refusals.iter().map(|refusal| match *refusal {}).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fixture;

    /// Run with `cargo test -p tools-std --no-default-features`.
    #[tokio::test]
    async fn a_command_granted_the_network_is_told_why_it_has_none() {
        let fx = Fixture::new();
        let sandbox = fx.ws.sandbox().expect("the default sandbox");
        if !sandbox.policy().is_enforced() {
            eprintln!("skipped: this kernel cannot enforce the sandbox");
            return;
        }
        let ctx = fx.ctx("bash");
        match prepare(&fx.ws, &ctx, "cargo fetch", &sandbox, true).await {
            Prepared::Off(reason) => {
                assert!(reason.contains("without tools-std's `egress` feature"), "{reason}")
            }
            _ => panic!("a granted command keeps its network off, with the reason"),
        }
        assert!(matches!(prepare(&fx.ws, &ctx, "ls", &sandbox, false).await, Prepared::Unchanged));
    }
}
