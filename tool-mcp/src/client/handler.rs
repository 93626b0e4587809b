//! The client side of one connection: progress to its call, `tools/list_changed` to a refresh.

use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::mpsc;

use super::routes::ProgressRoutes;

#[derive(Clone)]
pub(crate) struct MountHandler {
    pub(crate) routes: Arc<ProgressRoutes>,
    pub(crate) list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for MountHandler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.routes.deliver(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tool-runtime", env!("CARGO_PKG_VERSION")),
        )
    }
}
