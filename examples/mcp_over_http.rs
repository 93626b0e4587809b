//! MCP both ways over the network: a registry served over Streamable HTTP behind a bearer token
//! (as a sandbox machine would serve its tools), and an agent mounting those tools next to its
//! own, calling them through its dispatcher as if they were local.
//!
//! `cargo run -q --example mcp_over_http --features mcp-http`
//!
//! Both sides run in this one process for the example; across machines, the serving side is
//! `tools serve --http 0.0.0.0:8080 --allow-remote --auth-token-file token` (or this code with
//! another listener), and the agent's side is the same `McpMount::connect` with that URL, or a
//! `--mcp-config` file naming it.

use tool_runtime::mcp_client::{McpMount, ServerConfig};
use tool_runtime::mcp_server::{HttpOptions, McpServer};
use tool_runtime::{CancellationToken, Dispatcher, Registry, ToolCall, tool};

/// Count the words of a text (served by the "sandbox").
#[tool(parallel, read_only)]
async fn word_count(
    /// The text to count.
    text: String,
) -> String {
    text.split_whitespace().count().to_string()
}

/// Say a text loudly (the agent's own tool).
#[tool(parallel, read_only)]
async fn shout(
    /// What to say.
    text: String,
) -> String {
    text.to_uppercase()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The serving side: only `word_count`, on a loopback port, every request needing the token.
    let token = "example-token";
    let served = Registry::builder().tool(WordCountTool).build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let stop = CancellationToken::new();
    let options = HttpOptions::new().bearer_token(token).shutdown_on(stop.clone());
    let server = tokio::spawn(McpServer::new(Dispatcher::builder(served))?.serve_http(listener, options));

    // The agent's side: the served tools mounted as `sandbox__<tool>`, next to its own.
    let config = ServerConfig::http("sandbox", url).header("Authorization", format!("Bearer {token}"));
    let mount = McpMount::connect(config).await?;
    let registry = Registry::builder().tool(ShoutTool).tools(mount.tools()).build()?;
    println!("tools: {}", registry.names().collect::<Vec<_>>().join(", "));

    let dispatcher = Dispatcher::builder(registry).build();
    let calls = vec![
        ToolCall::new("1", "sandbox__word_count", r#"{"text": "tools served over HTTP"}"#),
        ToolCall::new("2", "shout", r#"{"text": "and mounted"}"#),
        // Validated here against the served schema: the server never sees it.
        ToolCall::new("3", "sandbox__word_count", r#"{"text": 42}"#),
    ];
    for result in dispatcher.run_batch(calls, CancellationToken::new()).await? {
        let status = if result.output.is_error { "error" } else { "ok" };
        println!("{} {} ({status}): {}", result.call_id, result.tool, result.output.text_content());
    }

    mount.close().await;
    stop.cancel();
    server.await??;
    Ok(())
}
