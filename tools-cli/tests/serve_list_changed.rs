//! `tools serve --mcp-config` passes a mounted server's `notifications/tools/list_changed` on to
//! its own clients. The mounted server is tool-runtime's fixture server (rmcp's server), whose
//! `add_tool` adds the tool `extra` and announces it.

mod common;

use std::path::{Path, PathBuf};

use common::{Fixture, TOOLS};
use rmcp::model::CallToolRequestParams;
use rmcp::service::NotificationContext;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;

/// The fixture server, built next to `tools` (a binary of another package is not built for
/// this one's tests, so it is built here when missing).
fn fixture_server() -> PathBuf {
    let path = Path::new(TOOLS).with_file_name("mcp-fixture-server");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "tool-runtime", "--features", "mcp", "--bin", "mcp-fixture-server"])
            .status()
            .expect("run cargo to build the fixture server");
        assert!(status.success(), "cannot build tool-runtime's mcp-fixture-server");
    }
    assert!(path.exists(), "no fixture server at {}", path.display());
    path
}

/// A client that forwards each `notifications/tools/list_changed` it receives.
#[derive(Clone)]
struct ListWatcher(tokio::sync::mpsc::UnboundedSender<()>);

impl ClientHandler for ListWatcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

fn names(tools: &[rmcp::model::Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_ref()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_passes_a_mounted_servers_tool_list_change_on() {
    let fx = Fixture::new();
    let config = fx.dir.path().join("mcp.json");
    let server = fixture_server();
    let text = json!({"mcpServers": {"fx": {"command": server.to_str().unwrap()}}});
    std::fs::write(&config, text.to_string()).unwrap();
    let ws = fx.ws();
    let data = fx.dir.path().join("data");
    let command = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.args(["serve", "--mcp-config", config.to_str().unwrap()])
            .current_dir(&ws)
            .env("XDG_DATA_HOME", &data);
    });
    let (tx, mut announced) = tokio::sync::mpsc::unbounded_channel();
    let client = ListWatcher(tx).serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), Some(true));

    let before = client.list_all_tools().await.unwrap();
    assert!(names(&before).contains(&"fx__add_tool"), "{:?}", names(&before));
    assert!(!names(&before).contains(&"fx__extra"), "{:?}", names(&before));

    let added = client.call_tool(CallToolRequestParams::new("fx__add_tool")).await.unwrap();
    assert_eq!(added.is_error, Some(false), "{added:?}");
    assert_eq!(announced.recv().await, Some(()), "tools serve announces the mounted server's change");

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
    let ws = fx.ws();
    let data = fx.dir.path().join("data");
    let command = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.args(["serve"]).current_dir(&ws).env("XDG_DATA_HOME", &data);
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert_eq!(capabilities.tools.as_ref().and_then(|tools| tools.list_changed), None);
}
