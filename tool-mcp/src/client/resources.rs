//! A mounted server's resources, resource templates and prompts: listed (and listed again when
//! the server says they changed), read, rendered, completed and subscribed to; served again by
//! [`served_resources_and_prompts`], and offered to the model by [`resource_tools`].

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompletionInfo, ErrorData, GetPromptRequestParams, GetPromptResult,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::ServiceError;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, watch};

use super::connection::Session;
use super::mount::McpMount;
use crate::server::ResourcesAndPrompts;
use tool_core::ToolContext;
use tool_core::ToolError;
use tool_core::ToolOutput;
use tool_core::{FnTool, Tool};
use tool_core::{ToolAnnotations, ToolSpec};

/// One request to a mounted server, within its time limit, its failure in words.
async fn ask<T>(
    mount: &McpMount,
    what: &str,
    request: impl AsyncFnOnce(Arc<Session>) -> Result<T, ServiceError>,
) -> Result<T, ErrorData> {
    let inner = mount.inner();
    let server = &inner.config.name;
    let session = inner.live().await.map_err(|e| ErrorData::internal_error(e.message().to_owned(), None))?;
    match tokio::time::timeout(inner.config.timeout, request(session)).await {
        Ok(Ok(answer)) => Ok(answer),
        // The server's own error goes back as it sent it (a -32002 stays one).
        Ok(Err(ServiceError::McpError(error))) => Err(error),
        Ok(Err(error)) => Err(ErrorData::internal_error(
            inner.config.redact(&format!("The MCP server `{server}` could not {what}: {error}.")),
            None,
        )),
        Err(_) => Err(ErrorData::internal_error(
            format!("The MCP server `{server}` did not {what} within {} s.", inner.config.timeout.as_secs()),
            None,
        )),
    }
}

impl McpMount {
    /// The server's resources as last listed (empty unless it declares `resources`).
    pub fn resources(&self) -> Vec<Resource> {
        self.extras().listed.read().unwrap_or_else(|p| p.into_inner()).resources.clone()
    }

    /// The server's resource templates as last listed.
    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        self.extras().listed.read().unwrap_or_else(|p| p.into_inner()).templates.clone()
    }

    /// The server's prompts as last listed (by the server's own names).
    pub fn prompts(&self) -> Vec<Prompt> {
        self.extras().listed.read().unwrap_or_else(|p| p.into_inner()).prompts.clone()
    }

    /// The capabilities the server declared when it started.
    pub fn capabilities(&self) -> ServerCapabilities {
        self.extras().capabilities.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A receiver whose value goes up each time the server's resources, templates or prompts
    /// changed (after `notifications/resources/list_changed` or `notifications/prompts/list_changed`).
    pub fn resource_and_prompt_changes(&self) -> watch::Receiver<u64> {
        self.extras().generation.subscribe()
    }

    /// The URIs of the server's `notifications/resources/updated`, from now on (subscribe to a
    /// resource first with [`McpMount::subscribe`]).
    pub fn resource_updates(&self) -> broadcast::Receiver<String> {
        self.extras().updates.subscribe()
    }

    /// Reads the resource `uri` (`resources/read`).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let params = ReadResourceRequestParams::new(uri);
        ask(self, &format!("read `{uri}`"), async |session| session.peer().read_resource(params).await).await
    }

    /// Renders the prompt `name` (the server's own name) with `arguments` (`prompts/get`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<GetPromptResult, ErrorData> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        ask(self, &format!("render the prompt `{name}`"), async |session| {
            session.peer().get_prompt(params).await
        })
        .await
    }

    /// Asks the server to complete a prompt argument or template variable
    /// (`completion/complete`).
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompletionInfo, ErrorData> {
        ask(self, "complete an argument", async |session| session.peer().complete(params).await)
            .await
            .map(|result| result.completion)
    }

    /// Subscribes to (or, with `subscribe` false, unsubscribes from) the resource `uri`; its
    /// updates then arrive through [`McpMount::resource_updates`].
    #[allow(deprecated)]
    pub async fn subscribe(&self, uri: &str, subscribe: bool) -> Result<(), ErrorData> {
        let uri = uri.to_owned();
        if subscribe {
            let params = SubscribeRequestParams::new(uri.clone());
            ask(self, &format!("subscribe to `{uri}`"), async |session| {
                session.peer().subscribe(params).await
            })
            .await
        } else {
            let params = UnsubscribeRequestParams::new(uri.clone());
            ask(self, &format!("unsubscribe from `{uri}`"), async |session| {
                session.peer().unsubscribe(params).await
            })
            .await
        }
    }

    /// One page of the server's resources, live.
    async fn list_resources_page(
        &self,
        cursor: Option<String>,
    ) -> Result<(Vec<Resource>, Option<String>), ErrorData> {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        ask(self, "list its resources", async |session| session.peer().list_resources(Some(params)).await)
            .await
            .map(|page| (page.resources, page.next_cursor))
    }

    /// One page of the server's resource templates, live.
    async fn list_templates_page(
        &self,
        cursor: Option<String>,
    ) -> Result<(Vec<ResourceTemplate>, Option<String>), ErrorData> {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        ask(self, "list its resource templates", async |session| {
            session.peer().list_resource_templates(Some(params)).await
        })
        .await
        .map(|page| (page.resource_templates, page.next_cursor))
    }

    fn declares_resources(&self) -> bool {
        self.extras().capabilities.read().unwrap_or_else(|p| p.into_inner()).resources.is_some()
    }
}

/// The resources, templates and prompts of every mount, to serve again
/// ([`McpServerBuilder::resources_and_prompts`](crate::server::McpServerBuilder::resources_and_prompts)):
/// each read, rendering, completion and subscription is passed on to the server that listed it.
///
/// Resource URIs stay as the servers give them; a URI or URI template that two servers list is
/// served by the first. A prompt is named as the server's tools are (`<server>__<prompt>` by
/// default, the server's own name with `"toolPrefix": ""`); of two prompts with one name, the
/// first is served.
pub fn served_resources_and_prompts(mounts: &[McpMount]) -> ResourcesAndPrompts {
    let mut content = ResourcesAndPrompts::new();
    for mount in mounts {
        for resource in mount.resources() {
            if content.has_resource(&resource.uri) {
                continue;
            }
            let reader = mount.clone();
            let read = Arc::new(move |uri: String, _| {
                let mount = reader.clone();
                Box::pin(async move { mount.read_resource(&uri).await }) as tool_core::BoxFuture<'static, _>
            });
            content = content.raw_resource(resource, read, Some(subscriber(mount)));
        }
        for template in mount.resource_templates() {
            if content.has_resource_template(&template.uri_template) {
                continue;
            }
            let reader = mount.clone();
            let read = Arc::new(move |uri: String, _| {
                let mount = reader.clone();
                Box::pin(async move { mount.read_resource(&uri).await }) as tool_core::BoxFuture<'static, _>
            });
            content =
                content.raw_resource_template(template, read, completer(mount, None), subscriber(mount));
        }
        for prompt in mount.prompts() {
            let remote = prompt.name.clone();
            let name = mount.inner().config.naming.name(mount.name(), &remote);
            if content.has_prompt(&name) {
                continue;
            }
            let renderer = mount.clone();
            let remote_name = remote.clone();
            let get = Arc::new(move |arguments: HashMap<String, String>| {
                let mount = renderer.clone();
                let remote = remote_name.clone();
                let arguments: Map<String, Value> =
                    arguments.into_iter().map(|(key, value)| (key, Value::String(value))).collect();
                Box::pin(async move { mount.get_prompt(&remote, Some(arguments)).await })
                    as tool_core::BoxFuture<'static, _>
            });
            let mut served = prompt;
            served.name = name;
            content = content.raw_prompt(served, get, Some(completer(mount, Some(remote))));
        }
    }
    content
}

fn subscriber(mount: &McpMount) -> crate::server::resources::SubscribeFn {
    let mount = mount.clone();
    Arc::new(move |uri: String, subscribe: bool| {
        let mount = mount.clone();
        Box::pin(async move { mount.subscribe(&uri, subscribe).await })
    })
}

/// Passes a completion on; for a prompt, under the server's own name for it.
fn completer(mount: &McpMount, remote_prompt: Option<String>) -> crate::server::resources::ForwardCompleteFn {
    let mount = mount.clone();
    Arc::new(move |mut params: CompleteRequestParams| {
        let mount = mount.clone();
        if let (Some(remote), rmcp::model::Reference::Prompt(reference)) = (&remote_prompt, &mut params.r#ref)
        {
            reference.name = remote.clone();
        }
        Box::pin(async move { mount.complete(params).await })
    })
}

/// The tools that let a model use the resources of the mounted servers, in the shape codex
/// gives them: `list_mcp_resources` and `list_mcp_resource_templates` (`server` and `cursor`
/// optional; every server with resources when no `server` is named) answer with JSON whose
/// entries carry their `server`, and `read_mcp_resource` (`server` and `uri`) answers with the
/// contents: text as text, an image blob as an image, another blob as a line saying what it is
/// (the original items in the output's `mcp_content` metadata, so `tools serve` passes them on
/// whole). None when no mount declares the `resources` capability.
///
/// The tools read the servers live, so they stay right when a server's resources change.
/// Calls go through the dispatcher like any other: a permission rule for `read_mcp_resource`
/// applies to them.
pub fn resource_tools(mounts: &[McpMount]) -> Vec<Arc<dyn Tool>> {
    let mounts: Arc<[McpMount]> = mounts.iter().filter(|m| m.declares_resources()).cloned().collect();
    if mounts.is_empty() {
        return Vec::new();
    }
    let listing = |name: &str, what: &str| {
        let mut spec = ToolSpec::new(
            name,
            format!(
                "Lists the {what} of the MCP servers mounted here (their `server`, `uri`{}, name, description and \
                 MIME type). Name a `server` to list one server, page by page with `cursor`; without it, every \
                 server's {what} are listed.",
                if what == "resources" { "" } else { " template" }
            ),
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The mounted server to list (default: all of them)."},
                    "cursor": {"type": "string", "description": "The `nextCursor` of the previous page of this server's list."}
                },
                "additionalProperties": false
            }),
        );
        spec.annotations =
            ToolAnnotations { read_only: true, idempotent: true, ..ToolAnnotations::default() };
        spec.parallel = true;
        spec.tags = vec!["mcp".to_owned()];
        spec
    };
    let resources_mounts = mounts.clone();
    let list_resources = FnTool::new(listing("list_mcp_resources", "resources"), move |_ctx, args| {
        let mounts = resources_mounts.clone();
        async move {
            let (server, cursor) = listing_args(&args)?;
            let mut listed = Vec::new();
            let mut next = None;
            for mount in pick(&mounts, server.as_deref(), cursor.as_deref())? {
                let (resources, cursor) =
                    mount.list_resources_page(cursor.clone()).await.map_err(|e| failed(mount, e))?;
                next = cursor;
                listed.extend(resources.into_iter().map(|resource| with_server(mount.name(), &resource)));
            }
            listing_output(server, "resources", listed, next)
        }
    });
    let template_mounts = mounts.clone();
    let list_templates =
        FnTool::new(listing("list_mcp_resource_templates", "resource templates"), move |_ctx, args| {
            let mounts = template_mounts.clone();
            async move {
                let (server, cursor) = listing_args(&args)?;
                let mut listed = Vec::new();
                let mut next = None;
                for mount in pick(&mounts, server.as_deref(), cursor.as_deref())? {
                    let (templates, cursor) =
                        mount.list_templates_page(cursor.clone()).await.map_err(|e| failed(mount, e))?;
                    next = cursor;
                    listed.extend(templates.into_iter().map(|template| with_server(mount.name(), &template)));
                }
                listing_output(server, "resourceTemplates", listed, next)
            }
        });
    let mut read_spec = ToolSpec::new(
        "read_mcp_resource",
        "Reads one resource of a mounted MCP server by its `server` and `uri` (from list_mcp_resources, or a URI \
         that a template of list_mcp_resource_templates describes), and returns its contents.",
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The mounted server the resource belongs to."},
                "uri": {"type": "string", "description": "The resource's URI."}
            },
            "required": ["server", "uri"],
            "additionalProperties": false
        }),
    );
    read_spec.annotations = ToolAnnotations { read_only: true, ..ToolAnnotations::default() };
    read_spec.parallel = true;
    read_spec.tags = vec!["mcp".to_owned()];
    let read_mounts = mounts;
    let read = FnTool::new(read_spec, move |_ctx: ToolContext, args| {
        let mounts = read_mounts.clone();
        async move {
            let server = args.get("server").and_then(Value::as_str).unwrap_or_default();
            let uri = args.get("uri").and_then(Value::as_str).unwrap_or_default();
            let mount = pick(&mounts, Some(server), None)?[0];
            let read = mount.read_resource(uri).await.map_err(|e| failed(mount, e))?;
            Ok(read_output(mount.name(), uri, &read))
        }
    });
    vec![Arc::new(list_resources), Arc::new(list_templates), Arc::new(read)]
}

fn listing_args(args: &Value) -> Result<(Option<String>, Option<String>), ToolError> {
    let field = |key: &str| args.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    Ok((field("server").map(str::to_owned), field("cursor").map(str::to_owned)))
}

/// The mounts a call is about: the one named, or all of them.
fn pick<'a>(
    mounts: &'a [McpMount],
    server: Option<&str>,
    cursor: Option<&str>,
) -> Result<Vec<&'a McpMount>, ToolError> {
    let Some(server) = server else {
        if cursor.is_some() {
            return Err(ToolError::invalid_arguments(
                "`cursor` pages through one server's list: name its `server` too.",
            ));
        }
        return Ok(mounts.iter().collect());
    };
    match mounts.iter().find(|mount| mount.name() == server) {
        Some(mount) => Ok(vec![mount]),
        None => {
            let names: Vec<String> = mounts.iter().map(|mount| format!("`{}`", mount.name())).collect();
            Err(ToolError::invalid_arguments(format!(
                "No mounted MCP server `{server}` has resources. The servers with resources are {}.",
                names.join(", ")
            )))
        }
    }
}

fn failed(mount: &McpMount, error: ErrorData) -> ToolError {
    let message = if error.code == rmcp::model::ErrorCode::RESOURCE_NOT_FOUND {
        format!(
            "The MCP server `{}` has no such resource ({}). List its resources with list_mcp_resources.",
            mount.name(),
            error.message
        )
    } else if error.message.starts_with("The MCP server") {
        error.message.into_owned()
    } else {
        format!(
            "The MCP server `{}` answered with an error: {} (error {}).",
            mount.name(),
            error.message,
            error.code.0
        )
    };
    ToolError::execution(message)
}

fn with_server(server: &str, item: &impl serde::Serialize) -> Value {
    let mut value = serde_json::to_value(item).unwrap_or(Value::Null);
    if let Value::Object(object) = &mut value {
        object.insert("server".to_owned(), json!(server));
    }
    value
}

fn listing_output(
    server: Option<String>,
    key: &str,
    listed: Vec<Value>,
    next: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let mut payload = Map::new();
    if let Some(server) = server {
        payload.insert("server".to_owned(), json!(server));
    }
    payload.insert(key.to_owned(), Value::Array(listed));
    if let Some(next) = next {
        payload.insert("nextCursor".to_owned(), json!(next));
    }
    let text = serde_json::to_string_pretty(&payload).map_err(ToolError::from_std)?;
    Ok(ToolOutput::text(text))
}

/// The contents of a read: each one an item, as a tool result's embedded resources are.
fn read_output(server: &str, uri: &str, read: &ReadResourceResult) -> ToolOutput {
    let items: Vec<rmcp::model::ContentBlock> =
        read.contents.iter().cloned().map(rmcp::model::ContentBlock::resource).collect();
    let mut output = crate::wire::tool_output(server, &rmcp::model::CallToolResult::success(items));
    if output.content.is_empty() {
        output = ToolOutput::text(format!("The resource `{uri}` of the MCP server `{server}` is empty."));
    }
    output
}
