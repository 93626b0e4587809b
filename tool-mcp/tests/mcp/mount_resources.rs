//! Mounting a server's resources and prompts: the fixture server of this repository
//! (`tests/fixture/mcp_resources_server.rs`, written with `mcp_server`) and the reference server
//! `@modelcontextprotocol/server-everything` (npm; skipped with a message when it is not
//! installed), read through the resource tools and served again by an `McpServer`.

use std::path::PathBuf;
use std::time::Duration;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams, Reference,
};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tool_runtime::mcp_client::{
    McpMount, Naming, ServerConfig, resource_tools, served_resources_and_prompts,
};
use tool_runtime::mcp_server::McpServer;
use tool_runtime::{CancellationToken, Content, Dispatcher, Registry, ToolCall, ToolResult};

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-resources-server");

async fn mounted(name: &str) -> (McpMount, Dispatcher) {
    let mount = McpMount::connect(ServerConfig::stdio(name, FIXTURE)).await.expect("mount the fixture");
    let registry = Registry::builder()
        .tools(mount.tools())
        .tools(resource_tools(std::slice::from_ref(&mount)))
        .build()
        .unwrap();
    (mount, Dispatcher::new(registry))
}

async fn call(dispatcher: &Dispatcher, name: &str, arguments: Value) -> ToolResult {
    dispatcher.run(ToolCall::new("c1", name, arguments.to_string()), CancellationToken::new()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mount_lists_its_servers_resources_templates_and_prompts() {
    let (mount, _) = mounted("fx").await;
    let uris: Vec<String> = mount.resources().into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["test://static-text", "test://static-binary", "test://watched-resource"]);
    assert_eq!(mount.resource_templates()[0].uri_template, "test://template/{id}/data");
    assert_eq!(mount.prompts().len(), 4);
    assert!(mount.capabilities().resources.is_some_and(|r| r.subscribe == Some(true)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resource_tools_list_and_read_in_codexs_shape() {
    let (_mount, dispatcher) = mounted("fx").await;
    let listed = call(&dispatcher, "list_mcp_resources", json!({})).await;
    assert!(!listed.output.is_error, "{}", listed.output.text_content());
    let listed: Value = serde_json::from_str(&listed.output.text_content()).unwrap();
    assert_eq!(listed["resources"][0]["server"], "fx");
    assert_eq!(listed["resources"][0]["uri"], "test://static-text");
    assert!(listed.get("server").is_none(), "no server named, none in the answer");
    let one: Value = serde_json::from_str(
        &call(&dispatcher, "list_mcp_resources", json!({"server": "fx"})).await.output.text_content(),
    )
    .unwrap();
    assert_eq!(one["server"], "fx");
    let templates: Value = serde_json::from_str(
        &call(&dispatcher, "list_mcp_resource_templates", json!({})).await.output.text_content(),
    )
    .unwrap();
    assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data");
    assert_eq!(templates["resourceTemplates"][0]["server"], "fx");

    let text =
        call(&dispatcher, "read_mcp_resource", json!({"server": "fx", "uri": "test://static-text"})).await;
    assert_eq!(
        text.output.content,
        [Content::text("[resource: test://static-text]\nThis is the content of the static text resource.")]
    );
    // A blob that is an image is an image the model sees.
    let image =
        call(&dispatcher, "read_mcp_resource", json!({"server": "fx", "uri": "test://static-binary"})).await;
    assert!(
        matches!(&image.output.content[..], [Content::Image { mime_type, .. }] if mime_type == "image/png")
    );
    let templated =
        call(&dispatcher, "read_mcp_resource", json!({"server": "fx", "uri": "test://template/77/data"}))
            .await;
    assert!(templated.output.text_content().contains(r#""id":"77""#), "{}", templated.output.text_content());

    let missing = call(&dispatcher, "read_mcp_resource", json!({"server": "fx", "uri": "test://nope"})).await;
    assert!(missing.output.is_error);
    assert!(
        missing
            .output
            .text_content()
            .starts_with("The MCP server `fx` has no such resource (Resource not found: `test://nope`."),
        "{}",
        missing.output.text_content()
    );
    let unknown =
        call(&dispatcher, "read_mcp_resource", json!({"server": "other", "uri": "test://static-text"})).await;
    assert!(unknown.output.is_error);
    assert!(
        unknown
            .output
            .text_content()
            .contains("No mounted MCP server `other` has resources. The servers with resources are `fx`."),
        "{}",
        unknown.output.text_content()
    );
    let paged = call(&dispatcher, "list_mcp_resources", json!({"cursor": "x"})).await;
    assert!(paged.output.text_content().contains("name its `server` too"), "{}", paged.output.text_content());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_and_resource_updates_are_followed() {
    let (mount, dispatcher) = mounted("fx").await;
    let mut changes = mount.resource_and_prompt_changes();
    let added = call(&dispatcher, "fx__add_note", json!({"name": "todo"})).await;
    assert!(!added.output.is_error, "{}", added.output.text_content());
    tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.expect("a change").unwrap();
    assert!(mount.resources().iter().any(|r| r.uri == "test://notes/todo"), "{:?}", mount.resources());
    let read =
        call(&dispatcher, "read_mcp_resource", json!({"server": "fx", "uri": "test://notes/todo"})).await;
    assert!(read.output.text_content().ends_with("note todo"), "{}", read.output.text_content());

    let mut updates = mount.resource_updates();
    mount.subscribe("test://watched-resource", true).await.unwrap();
    let touched = call(&dispatcher, "fx__touch_watched", json!({})).await;
    assert_eq!(touched.output.text_content(), "touched; 1 subscriber(s) told");
    let uri =
        tokio::time::timeout(Duration::from_secs(10), updates.recv()).await.expect("an update").unwrap();
    assert_eq!(uri, "test://watched-resource");
    mount.subscribe("test://watched-resource", false).await.unwrap();
    let touched = call(&dispatcher, "fx__touch_watched", json!({})).await;
    assert_eq!(touched.output.text_content(), "touched; 0 subscriber(s) told");
}

#[derive(Clone, Default)]
struct Client;
impl ClientHandler for Client {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_serves_its_mounts_resources_and_prompts_again() {
    let mount = McpMount::connect(ServerConfig::stdio("fx", FIXTURE)).await.unwrap();
    let other = McpMount::connect(ServerConfig::stdio("bare", FIXTURE).naming(Naming::Bare)).await.unwrap();
    let mounts = [mount.clone(), other];
    let server = McpServer::builder(Dispatcher::builder(Registry::builder().build().unwrap()))
        .resources_and_prompts(served_resources_and_prompts(&mounts))
        .build()
        .unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_io).await });
    let client = Client.serve(client_io).await.unwrap();

    // The same URIs from two servers: served once, by the first.
    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources.len(), 3);
    let prompts: Vec<String> = client.list_all_prompts().await.unwrap().into_iter().map(|p| p.name).collect();
    assert!(prompts.contains(&"fx__test_simple_prompt".to_owned()), "{prompts:?}");
    assert!(prompts.contains(&"test_simple_prompt".to_owned()), "bare names for `bare`: {prompts:?}");

    let read = client.read_resource(ReadResourceRequestParams::new("test://template/5/data")).await.unwrap();
    assert!(serde_json::to_string(&read.contents).unwrap().contains(r#"\"id\":\"5\""#));
    let mut request = GetPromptRequestParams::new("fx__test_prompt_with_arguments");
    request.arguments = Some(json!({"arg1": "a", "arg2": "b"}).as_object().unwrap().clone());
    let prompt = client.get_prompt(request).await.unwrap();
    assert!(serde_json::to_string(&prompt.messages).unwrap().contains("arg1='a', arg2='b'"));
    // A prompt's completion goes to its server under the server's name for it.
    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("fx__test_prompt_with_arguments"),
            ArgumentInfo::new("arg1", "pa"),
        ))
        .await
        .unwrap();
    assert_eq!(completion.completion.values, ["paris", "park"]);
    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("test://template/{id}/data"),
            ArgumentInfo::new("id", "12"),
        ))
        .await
        .unwrap();
    assert_eq!(completion.completion.values, ["123", "124"]);
}

/// The reference server's entry point, installed by `scripts/mcp-everything.sh` (npm) under the
/// target directory; `None` (the test skips) without it or without node.
fn server_everything() -> Option<PathBuf> {
    let target = PathBuf::from(FIXTURE).parent()?.parent()?.to_owned();
    let script =
        target.join("npm-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = std::process::Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    (node && script.exists()).then_some(script)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everythings_resources_and_prompts_are_mounted() {
    let Some(script) = server_everything() else {
        eprintln!(
            "skipped: node and @modelcontextprotocol/server-everything are needed (install them with \
             scripts/mcp-everything.sh)"
        );
        return;
    };
    let config = ServerConfig::stdio("everything", "node").args([script.to_str().unwrap(), "stdio"]);
    let mount = McpMount::connect(config).await.expect("mount server-everything");
    let dispatcher = Dispatcher::new(
        Registry::builder()
            .tools(mount.tools())
            .tools(resource_tools(std::slice::from_ref(&mount)))
            .build()
            .unwrap(),
    );
    let resources = mount.resources();
    assert!(!resources.is_empty(), "server-everything lists resources");
    let templates: Vec<String> = mount.resource_templates().into_iter().map(|t| t.uri_template).collect();
    assert!(templates.iter().any(|t| t == "demo://resource/dynamic/blob/{resourceId}"), "{templates:?}");

    let first = &resources[0];
    let read =
        call(&dispatcher, "read_mcp_resource", json!({"server": "everything", "uri": first.uri})).await;
    assert!(!read.output.is_error, "{}", read.output.text_content());
    assert!(read.output.text_content().starts_with(&format!("[resource: {}]", first.uri)));
    // A blob that is not an image: one line saying what it is, the original kept for a UI.
    let blob = call(
        &dispatcher,
        "read_mcp_resource",
        json!({"server": "everything", "uri": "demo://resource/dynamic/blob/3"}),
    )
    .await;
    assert!(
        blob.output
            .text_content()
            .starts_with("[resource: demo://resource/dynamic/blob/3, text/plain data of"),
        "{}",
        blob.output.text_content()
    );
    assert_eq!(blob.output.metadata["mcp_content"][0]["resource"]["uri"], "demo://resource/dynamic/blob/3");

    let names: Vec<String> = mount.prompts().into_iter().map(|p| p.name).collect();
    assert!(names.contains(&"simple-prompt".to_owned()), "{names:?}");
    let prompt = mount.get_prompt("simple-prompt", None).await.unwrap();
    assert!(!prompt.messages.is_empty());
    let mut context = rmcp::model::CompletionContext::new();
    context.arguments = Some([("department".to_owned(), "Sales".to_owned())].into());
    let completion = mount
        .complete(
            CompleteRequestParams::new(
                Reference::for_prompt("completable-prompt"),
                ArgumentInfo::new("name", ""),
            )
            .with_context(context),
        )
        .await
        .unwrap();
    assert_eq!(completion.values, ["David", "Eve", "Frank"]);
}

/// Answers every question with `colour: teal`, counting them.
pub(crate) struct Teal(pub(crate) std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl tool_runtime::context::UserAsker for Teal {
    fn ask<'a>(
        &'a self,
        message: &'a str,
        schema: &'a Value,
    ) -> tool_runtime::BoxFuture<
        'a,
        Result<tool_runtime::context::UserAnswer, tool_runtime::context::Unanswered>,
    > {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(message, "Which colour?");
        assert_eq!(schema["properties"]["colour"]["type"], "string");
        let content = json!({"colour": "teal"}).as_object().unwrap().clone();
        Box::pin(async move { Ok(tool_runtime::context::UserAnswer::Accept(content)) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_servers_question_reaches_our_user_under_the_permission_policy() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tool_runtime::PermissionKind;
    use tool_runtime::context::AskerDependency;
    use tool_runtime::hooks::{PermissionDecision, PermissionFn};
    use tool_runtime::mcp_client::ELICITATION_PERMISSION;

    let mount = McpMount::connect(ServerConfig::stdio("fx", FIXTURE)).await.unwrap();
    let registry = Arc::new(Registry::builder().tools(mount.tools()).build().unwrap());
    let asked = Arc::new(AtomicUsize::new(0));
    let answered = Dispatcher::builder(registry.clone())
        .dependency(AskerDependency(Arc::new(Teal(asked.clone()))))
        .build();
    let result = call(&answered, "fx__ask_colour", json!({})).await;
    assert_eq!(result.output.text_content(), "colour: \"teal\"");
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // A policy that refuses the server's questions: the user is never asked.
    let refusing = Dispatcher::builder(registry.clone())
        .dependency(AskerDependency(Arc::new(Teal(asked.clone()))))
        .permissions(PermissionFn(|request: tool_runtime::PermissionRequest| async move {
            match &request.kind {
                PermissionKind::Other { name } if name == ELICITATION_PERMISSION => {
                    assert!(
                        request.description.contains("`fx` ask the user: Which colour?"),
                        "{}",
                        request.description
                    );
                    PermissionDecision::Deny { reason: "no questions from servers".to_owned() }
                }
                _ => PermissionDecision::Allow,
            }
        }))
        .build();
    let result = call(&refusing, "fx__ask_colour", json!({})).await;
    assert!(result.output.is_error);
    assert!(
        result.output.text_content().contains("no questions from servers"),
        "{}",
        result.output.text_content()
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the refused question never reached the user");

    // Nobody to ask: the server hears why.
    let headless = Dispatcher::new(registry);
    let result = call(&headless, "fx__ask_colour", json!({})).await;
    assert!(result.output.is_error);
    assert!(result.output.text_content().contains("a headless host"), "{}", result.output.text_content());
}

/// Counts the `notifications/resources/updated` a client gets.
#[derive(Clone, Default)]
struct Updates(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.uri);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)]
async fn one_session_letting_go_of_a_mounted_resource_leaves_the_others_subscribed() {
    use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
    let mount = McpMount::connect(ServerConfig::stdio("fx", FIXTURE)).await.unwrap();
    let registry = Registry::builder().tools(mount.tools()).build().unwrap();
    let server = McpServer::builder(Dispatcher::builder(registry))
        .resources_and_prompts(served_resources_and_prompts(std::slice::from_ref(&mount)))
        .build()
        .unwrap();
    let connect = |updates: Updates| {
        let server = server.clone();
        async move {
            let (server_io, client_io) = tokio::io::duplex(64 * 1024);
            tokio::spawn(async move { server.serve(server_io).await });
            updates.serve(client_io).await.unwrap()
        }
    };
    let (first_seen, second_seen) = (Updates::default(), Updates::default());
    let first = connect(first_seen.clone()).await;
    let second = connect(second_seen.clone()).await;
    let uri = "test://watched-resource";
    first.subscribe(SubscribeRequestParams::new(uri)).await.unwrap();
    second.subscribe(SubscribeRequestParams::new(uri)).await.unwrap();
    first.unsubscribe(UnsubscribeRequestParams::new(uri)).await.unwrap();

    // The mounted server still tells us, and we tell the session still subscribed.
    let mut updates = mount.resource_updates();
    let forward = {
        let server = server.clone();
        tokio::spawn(async move {
            let uri = updates.recv().await.unwrap();
            server.announce_resource_updated(&uri).await
        })
    };
    let touched =
        first.call_tool(rmcp::model::CallToolRequestParams::new("fx__touch_watched")).await.unwrap();
    assert!(format!("{touched:?}").contains("1 subscriber(s) told"), "{touched:?}");
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), forward).await.unwrap().unwrap(), 1);
    for _ in 0..200 {
        if !second_seen.0.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*second_seen.0.lock().unwrap(), [uri]);
    assert!(first_seen.0.lock().unwrap().is_empty());
}
