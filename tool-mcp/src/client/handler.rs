//! The client side of one connection: `tools/list_changed` to a refresh, resource updates,
//! questions and sampling passed on. (Progress and log messages are delivered to their calls by
//! the connection's transport, [`Routed`](super::routes::Routed), in the order they are read;
//! rmcp's default handlers for them do nothing.)

use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::mpsc;

use super::routes::ProgressRoutes;

#[derive(Clone)]
pub(crate) struct MountHandler {
    pub(crate) routes: Arc<ProgressRoutes>,
    pub(crate) list_changed: mpsc::UnboundedSender<()>,
    pub(crate) extras: Arc<super::extras::Extras>,
    pub(crate) askers: Arc<super::elicit::Askers>,
    pub(crate) server: String,
    /// Whether to declare `sampling` and pass requests on ([`ServerConfig::sampling`](super::ServerConfig)).
    pub(crate) sampling: bool,
}

impl ClientHandler for MountHandler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.extras.updated(params.uri);
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.askers.elicit(&self.server, request).await
    }

    // Sampling is deprecated in rmcp (SEP-2577), and still what servers before 2026-07-28 send.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        request: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        if !self.sampling {
            return Err(rmcp::ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "This client does not sample: it did not declare the sampling capability (its host allows no \
                 sampling for this server)."
                    .to_owned(),
                None,
            ));
        }
        self.askers.sample(&self.server, request).await
    }

    fn get_info(&self) -> ClientConfig {
        // Form questions are passed on to our user (see `elicit.rs`).
        let mut capabilities = ClientCapabilities::default();
        let mut elicitation = rmcp::model::ElicitationCapability::default();
        elicitation.form = Some(rmcp::model::FormElicitationCapability::new());
        capabilities.elicitation = Some(elicitation);
        // Completions are asked of the call's sampler (see `elicit.rs`), when the host allows it.
        if self.sampling {
            capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        ClientConfig::new(capabilities, Implementation::new("tool-runtime", env!("CARGO_PKG_VERSION")))
    }
}
