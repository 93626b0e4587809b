//! Resource subscriptions: the URIs each session subscribed to, and telling them of an update.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::service::Peer;

/// The URIs each session subscribed to, for `notifications/resources/updated`.
#[derive(Default)]
pub(crate) struct Subscribers {
    sessions: Mutex<Vec<(Peer<RoleServer>, SessionUris)>>,
}

/// The URIs one session subscribed to.
type SessionUris = Arc<Mutex<HashSet<String>>>;

impl Subscribers {
    /// Adds or removes `uri` in the subscriptions of `session`; whether any live session is
    /// still subscribed to it afterwards.
    pub(super) fn change(
        &self,
        peer: &Peer<RoleServer>,
        session: &Arc<Mutex<HashSet<String>>>,
        uri: &str,
        add: bool,
    ) -> bool {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|(peer, _)| !peer.is_transport_closed());
        if !sessions.iter().any(|(_, known)| Arc::ptr_eq(known, session)) {
            sessions.push((peer.clone(), session.clone()));
        }
        {
            let mut uris = session.lock().unwrap_or_else(|p| p.into_inner());
            if add {
                uris.insert(uri.to_owned());
            } else {
                uris.remove(uri);
            }
        }
        sessions.iter().any(|(_, uris)| uris.lock().unwrap_or_else(|p| p.into_inner()).contains(uri))
    }

    pub(super) async fn updated(&self, uri: &str) -> usize {
        let peers: Vec<Peer<RoleServer>> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            sessions.retain(|(peer, _)| !peer.is_transport_closed());
            sessions
                .iter()
                .filter(|(_, uris)| uris.lock().unwrap_or_else(|p| p.into_inner()).contains(uri))
                .map(|(peer, _)| peer.clone())
                .collect()
        };
        let mut reached = 0;
        for peer in peers {
            let notice = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
            if peer.notify_resource_updated(notice).await.is_ok() {
                reached += 1;
            }
        }
        reached
    }
}
