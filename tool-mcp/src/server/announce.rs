//! The client sessions a server can notify, and `notifications/tools/list_changed` to each.

use std::sync::Mutex;

use rmcp::RoleServer;
use rmcp::service::Peer;

/// Every session that completed `initialize` and is still connected (revision 2026-07-28 has
/// no sessions, and so nothing to notify).
#[derive(Default)]
pub(crate) struct Listeners {
    peers: Mutex<Vec<Peer<RoleServer>>>,
}

impl Listeners {
    pub(crate) fn add(&self, peer: Peer<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        // Sessions that ended are dropped here rather than tracked, so the list stays as long
        // as the number of live sessions.
        peers.retain(|peer| !peer.is_transport_closed());
        peers.push(peer);
    }

    /// Sends `notifications/tools/list_changed` to every live session; how many it reached.
    pub(crate) async fn tools_changed(&self) -> usize {
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
            peers.retain(|peer| !peer.is_transport_closed());
            peers.clone()
        };
        let mut reached = 0;
        for peer in peers {
            if peer.notify_tool_list_changed().await.is_ok() {
                reached += 1;
            }
        }
        reached
    }
}
