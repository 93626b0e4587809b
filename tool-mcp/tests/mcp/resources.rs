//! Resources, resource templates, prompts and completions served by `tool_runtime::mcp_server`,
//! with rmcp's client on the other end of an in-memory transport.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, ErrorCode, GetPromptRequestParams, PromptArgument, PromptMessage,
    ReadResourceRequestParams, Reference, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParam, Role, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use tool_runtime::mcp_server::{McpServer, McpServerBuilder, Prompt};
use tool_runtime::{Dispatcher, Registry};

#[derive(Clone, Default)]
struct Recorder {
    updated: Arc<Mutex<Vec<String>>>,
    resources_changed: Arc<Mutex<usize>>,
    prompts_changed: Arc<Mutex<usize>>,
}

impl ClientHandler for Recorder {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.resources_changed.lock().unwrap() += 1;
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.prompts_changed.lock().unwrap() += 1;
    }
}

fn builder() -> McpServerBuilder {
    McpServer::builder(Dispatcher::builder(Registry::builder().build().unwrap()))
}

fn served() -> McpServerBuilder {
    builder()
        .resource(Resource::new("notes://today", "today").with_mime_type("text/plain"), |uri| async move {
            Ok(vec![ResourceContents::text("Ship it.", uri)])
        })
        .resource_template(ResourceTemplate::new("notes://day/{date}", "day"), |uri, vars| async move {
            Ok(vec![ResourceContents::text(format!("notes of {}", vars["date"]), uri)])
        })
        .prompt(
            Prompt::new(
                "review",
                Some("Review a file"),
                Some(vec![PromptArgument::new("path").with_required(true), PromptArgument::new("focus")]),
            ),
            |args| async move {
                let focus = args.get("focus").map_or("everything", String::as_str);
                Ok(vec![PromptMessage::new_text(Role::User, format!("Review {} for {focus}", args["path"]))])
            },
        )
        .complete_prompt_argument("review", "path", |typed, _| async move {
            Ok(["src/lib.rs", "src/main.rs", "README.md"]
                .into_iter()
                .filter(|path| path.starts_with(&typed))
                .map(str::to_owned)
                .collect())
        })
        .complete_template_variable("notes://day/{date}", "date", |typed, _| async move {
            Ok(vec![format!("{typed}-01"), format!("{typed}-02")])
        })
}

async fn connect(server: McpServer) -> (RunningService<RoleClient, Recorder>, Recorder) {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_io).await });
    let recorder = Recorder::default();
    let client = recorder.clone().serve(client_io).await.expect("client connects");
    (client, recorder)
}

fn mcp_error(error: ServiceError) -> rmcp::model::ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => panic!("expected an MCP error, got {other}"),
    }
}

#[tokio::test]
async fn capabilities_are_declared_only_for_what_is_registered() {
    let (client, _) = connect(builder().build().unwrap()).await;
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert!(capabilities.tools.is_some());
    assert!(
        capabilities.resources.is_none()
            && capabilities.prompts.is_none()
            && capabilities.completions.is_none()
    );
    let error = mcp_error(client.list_resources(None).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
    assert!(error.message.contains("declares only the tools capability"), "{}", error.message);

    let (client, _) = connect(served().build().unwrap()).await;
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    let resources = capabilities.resources.expect("resources declared");
    assert_eq!(resources.subscribe, Some(true));
    assert_eq!(resources.list_changed, None, "no list changes unless asked for");
    assert!(capabilities.prompts.is_some() && capabilities.completions.is_some());

    let only_prompts =
        builder().prompt(Prompt::new("p", Some("P"), None), |_| async { Ok(Vec::new()) }).build().unwrap();
    assert!(only_prompts.info().capabilities.resources.is_none());
    let (client, _) = connect(only_prompts).await;
    let error =
        mcp_error(client.read_resource(ReadResourceRequestParams::new("notes://today")).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn resources_and_templates_are_listed_and_read() {
    let (client, _) = connect(served().build().unwrap()).await;
    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), ["notes://today"]);
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "notes://day/{date}");

    let read = client.read_resource(ReadResourceRequestParams::new("notes://today")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents).unwrap(),
        json!([{"uri": "notes://today", "mimeType": "text/plain", "text": "Ship it."}])
    );
    let read = client.read_resource(ReadResourceRequestParams::new("notes://day/2026%2D11")).await.unwrap();
    assert_eq!(serde_json::to_value(&read.contents).unwrap()[0]["text"], "notes of 2026-11");

    for missing in ["notes://tomorrow", "notes://day/a/b", "notes://day/"] {
        let error =
            mcp_error(client.read_resource(ReadResourceRequestParams::new(missing)).await.unwrap_err());
        assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND, "{missing}");
        assert!(error.message.starts_with(&format!("Resource not found: `{missing}`.")), "{}", error.message);
    }
}

#[tokio::test]
async fn prompts_are_rendered_with_their_arguments_checked() {
    let (client, _) = connect(served().build().unwrap()).await;
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "review");
    let mut request = GetPromptRequestParams::new("review");
    request.arguments = Some(json!({"path": "src/lib.rs"}).as_object().unwrap().clone());
    let result = client.get_prompt(request).await.unwrap();
    assert_eq!(result.description.as_deref(), Some("Review a file"));
    assert_eq!(
        serde_json::to_value(&result.messages).unwrap(),
        json!([{"role": "user", "content": {"type": "text", "text": "Review src/lib.rs for everything"}}])
    );
    let error = mcp_error(client.get_prompt(GetPromptRequestParams::new("review")).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.message, "The prompt `review` needs the argument `path`: give it in `arguments`.");
    let error = mcp_error(client.get_prompt(GetPromptRequestParams::new("nope")).await.unwrap_err());
    assert_eq!(error.message, "Unknown prompt `nope`. Available prompts: `review`.");
}

#[tokio::test]
async fn prompt_arguments_and_template_variables_are_completed() {
    let (client, _) = connect(served().build().unwrap()).await;
    let complete = |reference: Reference, argument: &str, value: &str| {
        CompleteRequestParams::new(reference, ArgumentInfo::new(argument, value))
    };
    let result = client.complete(complete(Reference::for_prompt("review"), "path", "src/")).await.unwrap();
    assert_eq!(result.completion.values, ["src/lib.rs", "src/main.rs"]);
    assert_eq!(result.completion.has_more, Some(false));
    let result = client.complete(complete(Reference::for_prompt("review"), "focus", "")).await.unwrap();
    assert!(result.completion.values.is_empty());
    let result = client
        .complete(complete(Reference::for_resource("notes://day/{date}"), "date", "2026"))
        .await
        .unwrap();
    assert_eq!(result.completion.values, ["2026-01", "2026-02"]);
    let error =
        mcp_error(client.complete(complete(Reference::for_prompt("review"), "nope", "")).await.unwrap_err());
    assert_eq!(
        error.message,
        "The prompt `review` has no argument `nope`; its arguments are `path`, `focus`."
    );
    let error = mcp_error(
        client.complete(complete(Reference::for_resource("notes://x/{y}"), "y", "")).await.unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
#[allow(deprecated)]
async fn subscribers_alone_hear_of_updates() {
    let server = served().build().unwrap();
    let (first, first_seen) = connect(server.clone()).await;
    let (_second, second_seen) = connect(server.clone()).await;
    first.subscribe(SubscribeRequestParams::new("notes://today")).await.unwrap();
    first.subscribe(SubscribeRequestParams::new("notes://day/2026-11-27")).await.unwrap();
    let error = mcp_error(first.subscribe(SubscribeRequestParams::new("notes://nope")).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND);

    assert_eq!(server.announce_resource_updated("notes://today").await, 1);
    assert_eq!(server.announce_resource_updated("notes://day/2026-11-27").await, 1);
    assert_eq!(server.announce_resource_updated("notes://day/2026-11-28").await, 0);
    wait_for(|| first_seen.updated.lock().unwrap().len() == 2).await;
    assert_eq!(*first_seen.updated.lock().unwrap(), ["notes://today", "notes://day/2026-11-27"]);

    first.unsubscribe(rmcp::model::UnsubscribeRequestParams::new("notes://today")).await.unwrap();
    assert_eq!(server.announce_resource_updated("notes://today").await, 0);
    assert!(second_seen.updated.lock().unwrap().is_empty());
}

#[tokio::test]
async fn replaced_content_is_served_and_announced() {
    let server = builder().resources_and_prompts_later(true, true, true).build().unwrap();
    let capabilities = &server.info().capabilities;
    assert_eq!(capabilities.resources.as_ref().unwrap().list_changed, Some(true));
    assert_eq!(capabilities.prompts.as_ref().unwrap().list_changed, Some(true));
    let (client, seen) = connect(server.clone()).await;
    assert!(client.list_all_resources().await.unwrap().is_empty());
    let content =
        tool_runtime::mcp_server::ResourcesAndPrompts::new()
            .resource(Resource::new("a://b", "b"), |uri| async move {
                Ok(vec![ResourceContents::text("b", uri)])
            });
    server.replace_resources_and_prompts(content).await;
    wait_for(|| *seen.resources_changed.lock().unwrap() == 1 && *seen.prompts_changed.lock().unwrap() == 1)
        .await;
    assert_eq!(client.list_all_resources().await.unwrap()[0].uri, "a://b");
}

async fn wait_for(condition: impl Fn() -> bool) {
    for _ in 0..200 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the condition never held");
}
