//! `tools serve --mcp-config` passes a mounted server's `notifications/tools/list_changed` on to
//! its own clients. The mounted server is tool-runtime's fixture server (rmcp's server), whose
//! `add_tool` adds the tool `extra` and announces it.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Fixture, HttpServer, install_tls_provider};
use rmcp::model::CallToolRequestParams;
use rmcp::service::NotificationContext;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;

/// A client that forwards each `notifications/tools/list_changed` it receives.
#[derive(Clone)]
struct ListWatcher(tokio::sync::mpsc::UnboundedSender<()>);

impl ClientHandler for ListWatcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

/// An `mcpServers` file in the fixture mounting the fixture server as `fx`.
fn mount_fixture(fx: &Fixture) -> PathBuf {
    let config = fx.dir.path().join("mcp.json");
    let server = common::tools_fixture();
    let text = json!({"mcpServers": {"fx": {"command": server.to_str().unwrap()}}});
    std::fs::write(&config, text.to_string()).unwrap();
    config
}

/// The next announcement a watcher forwards, failing the test if none comes within a minute.
async fn announced(watcher: &mut tokio::sync::mpsc::UnboundedReceiver<()>) {
    let heard = tokio::time::timeout(Duration::from_secs(60), watcher.recv()).await;
    assert_eq!(heard, Ok(Some(())), "tools serve announces the mounted server's change");
}

fn names(tools: &[rmcp::model::Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_ref()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_passes_a_mounted_servers_tool_list_change_on() {
    let fx = Fixture::new();
    let config = mount_fixture(&fx);
    let command =
        tokio::process::Command::from(fx.command(&["serve", "--mcp-config", config.to_str().unwrap()]));
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let client = ListWatcher(tx).serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), Some(true));

    let before = client.list_all_tools().await.unwrap();
    assert!(names(&before).contains(&"fx__add_tool"), "{:?}", names(&before));
    assert!(!names(&before).contains(&"fx__extra"), "{:?}", names(&before));

    let added = client.call_tool(CallToolRequestParams::new("fx__add_tool")).await.unwrap();
    assert_eq!(added.is_error, Some(false), "{added:?}");
    announced(&mut heard).await;

    let after = client.list_all_tools().await.unwrap();
    assert!(names(&after).contains(&"fx__extra"), "{:?}", names(&after));
    assert!(names(&after).contains(&"read"), "the built-in tools stay: {:?}", names(&after));
    assert_eq!(after.len(), before.len() + 1, "{:?}", names(&after));
    let extra = client.call_tool(CallToolRequestParams::new("fx__extra")).await.unwrap();
    assert_eq!(extra.is_error, Some(false), "{extra:?}");
    assert_eq!(serde_json::to_value(&extra.content).unwrap(), json!([{"type": "text", "text": "extra"}]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_mounts_declares_a_fixed_tool_list() {
    let fx = Fixture::new();
    let command = tokio::process::Command::from(fx.command(&["serve"]));
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), None);
}

/// Over HTTP every session hears of the change, including one that did not cause it, and then
/// lists and calls the new tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_http_passes_the_change_on_to_every_session() {
    let fx = Fixture::new();
    let config = mount_fixture(&fx);
    let server = HttpServer::start(&fx, &["--mcp-config", config.to_str().unwrap()]);
    install_tls_provider();
    let (tx, mut heard_first) = tokio::sync::mpsc::unbounded_channel();
    let first = ListWatcher(tx)
        .serve(StreamableHttpClientTransport::from_uri(server.url.clone()))
        .await
        .expect("initialize over HTTP");
    let (tx, mut heard_second) = tokio::sync::mpsc::unbounded_channel();
    let second = ListWatcher(tx)
        .serve(StreamableHttpClientTransport::from_uri(server.url.clone()))
        .await
        .expect("initialize over HTTP");
    let capabilities = &second.peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), Some(true));
    let before = second.list_all_tools().await.unwrap();
    assert!(!names(&before).contains(&"fx__extra"), "{:?}", names(&before));

    let added = first.call_tool(CallToolRequestParams::new("fx__add_tool")).await.unwrap();
    assert_eq!(added.is_error, Some(false), "{added:?}");
    announced(&mut heard_first).await;
    announced(&mut heard_second).await;

    let after = second.list_all_tools().await.unwrap();
    assert!(names(&after).contains(&"fx__extra"), "{:?}", names(&after));
    assert_eq!(after.len(), before.len() + 1, "{:?}", names(&after));
    let extra = second.call_tool(CallToolRequestParams::new("fx__extra")).await.unwrap();
    assert_eq!(serde_json::to_value(&extra.content).unwrap(), json!([{"type": "text", "text": "extra"}]));
    assert_eq!(first.list_all_tools().await.unwrap().len(), after.len());
}
