//! The builder's and the server's methods about resources and prompts, and the handlers of
//! their requests.

use std::future::Future;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PromptMessage,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ServerCapabilities, ServerNotification,
};
use rmcp::service::Peer;

use super::{Declared, Prompt, PromptArguments, ResourcesAndPrompts, UriVariables, not_declared};
use crate::server::{McpServer, McpServerBuilder};

impl McpServerBuilder {
    /// Serves `resource` beside the tools ([`ResourcesAndPrompts::resource`]). Registering
    /// a resource, template or prompt declares the `resources` (with `subscribe`), `prompts` and
    /// `completions` capabilities; a server without any declares none of them.
    ///
    /// ```
    /// use tool_runtime::mcp_server::McpServer;
    /// use tool_runtime::mcp_server::rmcp::model::{Resource, ResourceContents};
    /// use tool_runtime::{Dispatcher, Registry};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let server = McpServer::builder(Dispatcher::builder(registry))
    ///     .resource(Resource::new("notes://today", "today"), |uri| async move {
    ///         Ok(vec![ResourceContents::text("Ship it.", uri)])
    ///     })
    ///     .build()
    ///     .unwrap();
    /// assert!(server.info().capabilities.resources.is_some());
    /// assert!(server.info().capabilities.prompts.is_none());
    /// ```
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::resource`].
    pub fn resource<F, Fut>(mut self, resource: Resource, read: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).resource(resource, read);
        self
    }

    /// Serves the resources `template` describes ([`ResourcesAndPrompts::resource_template`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::resource_template`].
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, read: F) -> Self
    where
        F: Fn(String, UriVariables) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).resource_template(template, read);
        self
    }

    /// Serves `prompt` ([`ResourcesAndPrompts::prompt`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::prompt`].
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, get: F) -> Self
    where
        F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).prompt(prompt, get);
        self
    }

    /// Completes a prompt's argument ([`ResourcesAndPrompts::complete_prompt_argument`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::complete_prompt_argument`].
    pub fn complete_prompt_argument<F, Fut>(mut self, prompt: &str, argument: &str, complete: F) -> Self
    where
        F: Fn(String, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorData>> + Send + 'static,
    {
        self.content = std::mem::take(&mut self.content).complete_prompt_argument(prompt, argument, complete);
        self
    }

    /// Completes a template's variable ([`ResourcesAndPrompts::complete_template_variable`]).
    ///
    /// # Panics
    ///
    /// As [`ResourcesAndPrompts::complete_template_variable`].
    pub fn complete_template_variable<F, Fut>(
        mut self,
        uri_template: &str,
        variable: &str,
        complete: F,
    ) -> Self
    where
        F: Fn(String, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorData>> + Send + 'static,
    {
        self.content =
            std::mem::take(&mut self.content).complete_template_variable(uri_template, variable, complete);
        self
    }

    /// Serves `content` (replacing what the methods above registered).
    pub fn resources_and_prompts(mut self, content: ResourcesAndPrompts) -> Self {
        self.content = content;
        self
    }

    /// Declares the `resources` and `prompts` capabilities (with `listChanged` when `announced`)
    /// even while none are registered, for content that comes later through
    /// [`McpServer::replace_resources_and_prompts`]: clients read a server's capabilities once.
    pub fn resources_and_prompts_later(mut self, resources: bool, prompts: bool, announced: bool) -> Self {
        self.declared = Declared { resources, prompts, list_changes: announced };
        self
    }
}

impl McpServer {
    /// What the server sends in its `initialize` result: its name, capabilities, instructions.
    pub fn info(&self) -> &rmcp::model::ServerConfig {
        &self.inner.config
    }

    /// The resources, templates and prompts served now.
    pub fn resources_and_prompts(&self) -> Arc<ResourcesAndPrompts> {
        self.inner.content.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Serves `content` from now on in every session, and announces it with
    /// `notifications/resources/list_changed` and `notifications/prompts/list_changed` when the
    /// server declared list changes ([`McpServerBuilder::resources_and_prompts_later`]). A
    /// capability the server did not declare at the start stays undeclared: its methods keep
    /// answering `-32601`.
    pub async fn replace_resources_and_prompts(&self, content: ResourcesAndPrompts) {
        *self.inner.content.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(content);
        let capabilities = &self.inner.config.capabilities;
        let announced = |listed: Option<bool>| listed == Some(true);
        if announced(capabilities.resources.as_ref().and_then(|r| r.list_changed)) {
            for peer in self.inner.listeners.live() {
                let _ = peer.notify_resource_list_changed().await;
            }
            let changed = || ServerNotification::ResourceListChangedNotification(Default::default());
            self.inner.listeners.to_streams(changed).await;
        }
        if announced(capabilities.prompts.as_ref().and_then(|p| p.list_changed)) {
            for peer in self.inner.listeners.live() {
                let _ = peer.notify_prompt_list_changed().await;
            }
            let changed = || ServerNotification::PromptListChangedNotification(Default::default());
            self.inner.listeners.to_streams(changed).await;
        }
    }

    /// Sends `notifications/resources/updated` for `uri` to every session that subscribed to it
    /// (`resources/subscribe`) and is still connected, and on every listen stream that names it
    /// (revision 2026-07-28); returns how many it reached.
    pub async fn announce_resource_updated(&self, uri: &str) -> usize {
        let updated = || {
            let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
            ServerNotification::ResourceUpdatedNotification(rmcp::model::Notification::new(param))
        };
        let streams = self.inner.listeners.to_streams(updated).await;
        self.inner.subscribers.updated(uri).await + streams
    }

    /// Serves one `subscriptions/listen` stream until its client ends it: the changes it asked
    /// for (and the server declared) go on it, and the resources it names are subscribed to
    /// where they come from (a mounted server's).
    pub(crate) async fn listen_now(
        &self,
        context: rmcp::service::SubscriptionContext,
    ) -> Result<(), ErrorData> {
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        // Registered first: what the mounted servers report while they are subscribed to below
        // reaches the stream.
        let _listening = self.inner.listeners.listen(context.sink().clone());
        for uri in &uris {
            // One that cannot be subscribed to where it comes from is still told of by
            // `announce_resource_updated`.
            let _ = self.resources_and_prompts().subscribe(uri, true).await;
        }
        // The stream was acknowledged before those subscriptions were made: a change in between
        // reached no one. Each named resource is said to be updated once (read it again).
        for uri in uris {
            let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
            let updated =
                ServerNotification::ResourceUpdatedNotification(rmcp::model::Notification::new(param));
            if context.sink().send(updated).await.is_err() {
                break;
            }
        }
        context.cancelled().await;
        Ok(())
    }

    pub(crate) async fn list_resources_now(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.declared("resources/list", |c| c.resources.is_some())?;
        let (items, next) =
            self.page_at(&self.resources_and_prompts().resources(), cursor, "resources/list")?;
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) async fn list_templates_now(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.declared("resources/templates/list", |c| c.resources.is_some())?;
        let templates = self.resources_and_prompts().resource_templates();
        let (items, next) = self.page_at(&templates, cursor, "resources/templates/list")?;
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) async fn read_now(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, ErrorData> {
        self.declared("resources/read", |c| c.resources.is_some())?;
        let mut result = self.resources_and_prompts().read(request.uri).await?;
        result.result_type = Some(rmcp::model::ResultType::COMPLETE);
        Ok(result)
    }

    pub(crate) async fn list_prompts_now(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.declared("prompts/list", |c| c.prompts.is_some())?;
        let (items, next) = self.page_at(&self.resources_and_prompts().prompts(), cursor, "prompts/list")?;
        let mut result = ListPromptsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) async fn get_prompt_now(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, ErrorData> {
        self.declared("prompts/get", |c| c.prompts.is_some())?;
        let mut result = self.resources_and_prompts().get_prompt(request).await?;
        result.result_type = Some(rmcp::model::ResultType::COMPLETE);
        Ok(result)
    }

    pub(crate) async fn complete_now(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        self.declared("completion/complete", |c| c.completions.is_some())?;
        let info = self.resources_and_prompts().complete(request).await?;
        Ok(CompleteResult::new(info))
    }

    pub(crate) async fn subscribe_now(
        &self,
        uri: &str,
        subscribe: bool,
        peer: &Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let method = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
        self.declared(method, |c| c.resources.as_ref().and_then(|r| r.subscribe) == Some(true))?;
        if subscribe {
            self.resources_and_prompts().subscribe(uri, true).await?;
            self.inner.subscribers.change(peer, &self.subscriptions, uri, true);
        } else if !self.inner.subscribers.change(peer, &self.subscriptions, uri, false) {
            // The last session let go of it (a mounted server's subscription serves every
            // session). Unsubscribing from what is no longer there is no error; telling its
            // server may fail.
            let _ = self.resources_and_prompts().subscribe(uri, false).await;
        }
        Ok(())
    }

    fn declared(
        &self,
        method: &str,
        declared: impl Fn(&ServerCapabilities) -> bool,
    ) -> Result<(), ErrorData> {
        let capabilities = &self.inner.config.capabilities;
        if declared(capabilities) { Ok(()) } else { Err(not_declared(method, capabilities)) }
    }
}
