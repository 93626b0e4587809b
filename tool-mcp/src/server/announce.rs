//! The clients a server can notify of changes: the sessions that completed `initialize`, and
//! on revision 2026-07-28, which has no sessions, the `subscriptions/listen` streams open.

use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{RequestId, ServerNotification};
use rmcp::service::{Peer, SubscriptionSink};

/// Every session that completed `initialize` and is still connected, and every open listen
/// stream.
#[derive(Default)]
pub(crate) struct Listeners {
    peers: Mutex<Vec<Peer<RoleServer>>>,
    streams: Arc<Mutex<Vec<SubscriptionSink>>>,
}

/// An open listen stream, taken out of the listeners when dropped.
pub(crate) struct Listening {
    streams: Arc<Mutex<Vec<SubscriptionSink>>>,
    id: RequestId,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).retain(|sink| *sink.id() != self.id);
    }
}

impl Listeners {
    pub(crate) fn add(&self, peer: Peer<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        // Sessions that ended are dropped here rather than tracked, so the list stays as long
        // as the number of live sessions.
        peers.retain(|peer| !peer.is_transport_closed());
        peers.push(peer);
    }

    /// Adds a listen stream until the guard is dropped.
    pub(crate) fn listen(&self, sink: SubscriptionSink) -> Listening {
        let id = sink.id().clone();
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).push(sink);
        Listening { streams: self.streams.clone(), id }
    }

    /// Sends `notification` on every listen stream whose filter takes it (the others refuse it
    /// unsent); how many it reached.
    pub(crate) async fn to_streams(&self, notification: impl Fn() -> ServerNotification) -> usize {
        let streams = self.streams.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut reached = 0;
        for sink in streams {
            if sink.send(notification()).await.is_ok() {
                reached += 1;
            }
        }
        reached
    }

    /// Every live session.
    pub(crate) fn live(&self) -> Vec<Peer<RoleServer>> {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.retain(|peer| !peer.is_transport_closed());
        peers.clone()
    }

    /// Sends `notifications/tools/list_changed` to every live session and every listen stream
    /// that asked for it; how many it reached.
    pub(crate) async fn tools_changed(&self) -> usize {
        let streams =
            self.to_streams(|| ServerNotification::ToolListChangedNotification(Default::default())).await;
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
            peers.retain(|peer| !peer.is_transport_closed());
            peers.clone()
        };
        let mut reached = streams;
        for peer in peers {
            if peer.notify_tool_list_changed().await.is_ok() {
                reached += 1;
            }
        }
        reached
    }
}
