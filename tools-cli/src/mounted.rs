//! What `tools serve` passes on from the servers it mounts besides their tools: their resources,
//! templates and prompts (served again, and served anew when a server announces a change), and
//! their resource updates (to our clients that subscribed).

use tool_runtime::mcp_client::{McpMount, served_resources_and_prompts};
use tool_runtime::mcp_server::{McpServer, McpServerBuilder};

/// Serves the mounts' resources and prompts, declaring each capability that a mounted server
/// declares (ours follow theirs, and clients read capabilities once) and announcing list changes
/// when anything is mounted.
pub(crate) fn serve_their_content(builder: McpServerBuilder, mounts: &[McpMount]) -> McpServerBuilder {
    let resources = mounts.iter().any(|mount| mount.capabilities().resources.is_some());
    let prompts = mounts.iter().any(|mount| mount.capabilities().prompts.is_some());
    builder.resources_and_prompts(served_resources_and_prompts(mounts)).resources_and_prompts_later(
        resources,
        prompts,
        !mounts.is_empty(),
    )
}

/// Serves the mounts' resources and prompts anew each time one of them announces a change, and
/// tells our subscribers of each resource a mounted server says was updated. Runs as long as the
/// server.
pub(crate) async fn pass_on_their_changes(mounts: Vec<McpMount>, server: McpServer) {
    for mount in &mounts {
        let mut updates = mount.resource_updates();
        let server = server.clone();
        tokio::spawn(async move {
            loop {
                match updates.recv().await {
                    Ok(uri) => {
                        server.announce_resource_updated(&uri).await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
    let mut changes = any_changed(mounts.iter().map(McpMount::resource_and_prompt_changes));
    while changes.recv().await.is_some() {
        server.replace_resources_and_prompts(served_resources_and_prompts(&mounts)).await;
    }
}

/// A receiver that gets a message whenever one of `generations` moves on, until all of them
/// end. At most one message waits: a rebuild it starts sees every change made before it.
pub(crate) fn any_changed(
    generations: impl Iterator<Item = tokio::sync::watch::Receiver<u64>>,
) -> tokio::sync::mpsc::Receiver<()> {
    let (changed, changes) = tokio::sync::mpsc::channel::<()>(1);
    for mut generation in generations {
        let changed = changed.clone();
        tokio::spawn(async move {
            while generation.changed().await.is_ok() {
                // A full channel already holds a change the rebuild will see.
                let _ = changed.try_send(());
            }
        });
    }
    changes
}
