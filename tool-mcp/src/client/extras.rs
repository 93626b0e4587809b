//! What a mounted server offers besides its tools (resources, resource templates, prompts), as
//! last listed, and the news about it: list changes and resource updates.

use std::sync::RwLock;

use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Prompt, Resource, ResourceTemplate, ServerCapabilities};
use rmcp::service::Peer;
use tokio::sync::{broadcast, watch};

use super::pages::every;

/// How many `notifications/resources/updated` a receiver may fall behind before it misses some.
const UPDATES_BUFFER: usize = 256;

/// The most resources, templates or prompts kept from one server's lists.
const MAX_LISTED: usize = 10_000;

/// What a server offers besides its tools, as last listed, and the news about it.
pub(crate) struct Extras {
    pub(super) listed: RwLock<Listed>,
    pub(super) capabilities: RwLock<ServerCapabilities>,
    pub(super) generation: watch::Sender<u64>,
    pub(super) updates: broadcast::Sender<String>,
}

#[derive(Clone, Default, PartialEq)]
pub(super) struct Listed {
    pub(super) resources: Vec<Resource>,
    pub(super) templates: Vec<ResourceTemplate>,
    pub(super) prompts: Vec<Prompt>,
}

impl Default for Extras {
    fn default() -> Self {
        Extras {
            listed: RwLock::default(),
            capabilities: RwLock::default(),
            generation: watch::channel(0).0,
            updates: broadcast::channel(UPDATES_BUFFER).0,
        }
    }
}

impl Extras {
    /// Lists again what the server behind `peer` declares; keeps the old lists on failure.
    /// Bumps the generation when something changed.
    pub(crate) async fn refresh(&self, peer: &Peer<RoleClient>) {
        let capabilities = peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
        let old = self.listed.read().unwrap_or_else(|p| p.into_inner()).clone();
        let mut listed = old.clone();
        let params = |cursor| Some(PaginatedRequestParams::default().with_cursor(cursor));
        if capabilities.resources.is_some() {
            let resources = every("resources/list", |cursor| async move {
                peer.list_resources(params(cursor)).await.map(|page| (page.resources, page.next_cursor))
            });
            if let Ok(mut resources) = resources.await {
                resources.truncate(MAX_LISTED);
                listed.resources = resources;
            }
            let templates = every("resources/templates/list", |cursor| async move {
                let page = peer.list_resource_templates(params(cursor)).await?;
                Ok((page.resource_templates, page.next_cursor))
            });
            if let Ok(mut templates) = templates.await {
                templates.truncate(MAX_LISTED);
                listed.templates = templates;
            }
        }
        let prompts = every("prompts/list", |cursor| async move {
            peer.list_prompts(params(cursor)).await.map(|page| (page.prompts, page.next_cursor))
        });
        if capabilities.prompts.is_some()
            && let Ok(mut prompts) = prompts.await
        {
            prompts.truncate(MAX_LISTED);
            listed.prompts = prompts;
        }
        *self.capabilities.write().unwrap_or_else(|p| p.into_inner()) = capabilities;
        if listed != old {
            *self.listed.write().unwrap_or_else(|p| p.into_inner()) = listed;
            self.generation.send_modify(|generation| *generation += 1);
        }
    }

    /// The server said `uri` changed.
    pub(crate) fn updated(&self, uri: String) {
        let _ = self.updates.send(uri);
    }
}
