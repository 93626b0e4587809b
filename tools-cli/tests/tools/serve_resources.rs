//! `tools serve --mcp-config` serves a mounted server's resources and prompts and passes its
//! news on: `notifications/resources/updated` to the clients that subscribed, and
//! `notifications/resources/list_changed` and `prompts/list_changed` when its lists change. The
//! mounted server is tool-runtime's resources fixture (`mcp_resources_server.rs`).

use crate::common;

use std::time::Duration;

use common::{Fixture, resources_fixture};
use rmcp::model::{
    CallToolRequestParams, ReadResourceRequestParams, ResourceUpdatedNotificationParam,
    SubscribeRequestParams,
};
use rmcp::service::NotificationContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;

#[derive(Debug, PartialEq)]
enum Heard {
    Updated(String),
    ResourcesChanged,
    PromptsChanged,
    Logged(String, String),
}

#[derive(Clone)]
struct Watcher(tokio::sync::mpsc::UnboundedSender<Heard>);

impl ClientHandler for Watcher {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Heard::Updated(params.uri));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(Heard::ResourcesChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(Heard::PromptsChanged);
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap().as_str().unwrap_or_default().to_owned();
        let _ = self.0.send(Heard::Logged(level, params.data.as_str().unwrap_or_default().to_owned()));
    }
}

/// A mounted server's log messages during a call reach `tools serve`'s client as the call's own,
/// at the level the client set and above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)]
async fn serve_passes_a_mounted_servers_log_messages_on_at_the_clients_level() {
    let fx = Fixture::new();
    let config = fx.dir.path().join("mcp.json");
    let server = resources_fixture();
    std::fs::write(
        &config,
        json!({"mcpServers": {"fx": {"command": server.to_str().unwrap(), "toolPrefix": ""}}}).to_string(),
    )
    .unwrap();
    let command =
        tokio::process::Command::from(fx.command(&["serve", "--mcp-config", config.to_str().unwrap()]));
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let client = Watcher(tx).serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    assert!(client.peer_info().unwrap().capabilities.logging.is_some(), "logging is declared");
    let call = || CallToolRequestParams::new("test_tool_with_logging");
    client.set_level(rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Info)).await.unwrap();
    client.call_tool(call()).await.unwrap();
    for expected in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
        assert_eq!(next(&mut heard).await, Heard::Logged("info".to_owned(), expected.to_owned()));
    }
    // Above the messages' level, none comes.
    client
        .set_level(rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Error))
        .await
        .unwrap();
    client.call_tool(call()).await.unwrap();
    client.cancel().await.unwrap();
    let mut rest = Vec::new();
    while let Ok(item) = heard.try_recv() {
        rest.push(item);
    }
    assert!(rest.iter().all(|h| !matches!(h, Heard::Logged(..))), "{rest:?}");
}

async fn next(heard: &mut tokio::sync::mpsc::UnboundedReceiver<Heard>) -> Heard {
    tokio::time::timeout(Duration::from_secs(60), heard.recv())
        .await
        .expect("tools serve passes the mounted server's news on")
        .expect("the client is still there")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)]
async fn serve_passes_a_mounted_servers_resources_and_their_news_on() {
    let fx = Fixture::new();
    let config = fx.dir.path().join("mcp.json");
    let server = resources_fixture();
    std::fs::write(&config, json!({"mcpServers": {"fx": {"command": server.to_str().unwrap()}}}).to_string())
        .unwrap();
    let command =
        tokio::process::Command::from(fx.command(&["serve", "--mcp-config", config.to_str().unwrap()]));
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let client = Watcher(tx).serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    let resources = capabilities.resources.expect("the mount's resources capability is declared");
    assert_eq!((resources.subscribe, resources.list_changed), (Some(true), Some(true)));
    assert_eq!(capabilities.prompts.and_then(|p| p.list_changed), Some(true));

    let tools = client.list_all_tools().await.unwrap();
    for name in ["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"] {
        assert!(tools.iter().any(|tool| tool.name == name), "tools serve offers {name}");
    }
    let read = client.read_resource(ReadResourceRequestParams::new("test://watched-resource")).await.unwrap();
    assert!(serde_json::to_string(&read.contents).unwrap().contains("watched, version 0"));

    client.subscribe(SubscribeRequestParams::new("test://watched-resource")).await.unwrap();
    let touched = client.call_tool(CallToolRequestParams::new("fx__touch_watched")).await.unwrap();
    assert_eq!(touched.is_error, Some(false), "{touched:?}");
    assert_eq!(next(&mut heard).await, Heard::Updated("test://watched-resource".to_owned()));
    let read = client.read_resource(ReadResourceRequestParams::new("test://watched-resource")).await.unwrap();
    assert!(serde_json::to_string(&read.contents).unwrap().contains("watched, version 1"));

    let mut add = CallToolRequestParams::new("fx__add_note");
    add.arguments = Some(json!({"name": "later"}).as_object().unwrap().clone());
    let added = client.call_tool(add).await.unwrap();
    assert_eq!(added.is_error, Some(false), "{added:?}");
    let mut news = vec![next(&mut heard).await, next(&mut heard).await];
    news.sort_by_key(|heard| format!("{heard:?}"));
    assert_eq!(news, [Heard::PromptsChanged, Heard::ResourcesChanged]);
    let listed = client.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri == "test://notes/later"), "{listed:?}");
    let read = client.read_resource(ReadResourceRequestParams::new("test://notes/later")).await.unwrap();
    assert!(serde_json::to_string(&read.contents).unwrap().contains("note later"));
}
