//! A command that goes on in the background: a small web server started with `bash`
//! (`background: true`), polled with `bash_output` until it listens, asked for a page while it
//! runs, listed with `bash_list`, and stopped with `bash_stop`. Then a question answered through
//! `bash_input`. Everything goes through the dispatcher, as a model's calls would. No network
//! beyond the loopback, no API key.
//!
//! Run with `cargo run --example background_command` (needs `python3` for the server).

use serde_json::{Value, json};
use tool_runtime::{CancellationToken, Dispatcher, Registry, ToolCall};

/// Runs one call as a model would make it, prints its result, and returns its text and metadata.
async fn call(dispatcher: &Dispatcher, name: &str, arguments: Value) -> (String, Value) {
    let call = ToolCall {
        id: format!("call_{name}"),
        name: name.to_owned(),
        arguments: arguments.to_string().into(),
    };
    println!("\n>> {name} {arguments}");
    let result = dispatcher.run(call, CancellationToken::new()).await;
    let text = result.output.text_content();
    println!("{text}");
    (text, Value::Object(result.output.metadata.into_iter().collect()))
}

use tools_std::tool_sandbox::{Network, SandboxPolicy};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = std::env::temp_dir().join(format!("tool-background-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    std::fs::write(workspace.join("index.html"), "<h1>served from the workspace</h1>\n")?;
    let registry = Registry::builder().tools(tools_std::all()).build()?;
    let mut deps = tools_std::dependencies(&workspace)?;
    // The server listens on a port and `curl` connects to it: the sandbox's network must be on.
    let ws = tools_std::Workspace::new(&workspace)?;
    let policy = SandboxPolicy::workspace_write(ws.root()).with_network(Network::On);
    deps.insert(ws.with_sandbox(policy));
    let dispatcher = Dispatcher::builder(registry).dependencies(deps).build();

    // A server never finishes: start it in the background and keep its session id.
    let (_, started) = call(
        &dispatcher,
        "bash",
        json!({"command": "python3 -u -m http.server 0 --bind 127.0.0.1", "background": true, "description": "Serve the workspace"}),
    )
    .await;
    let id = started["session_id"].as_u64().ok_or("the server did not start in the background")?;
    // Wait until it says where it listens, without polling in a loop.
    let (text, ready) =
        call(&dispatcher, "bash_output", json!({"session_id": id, "until": ") ...", "wait_ms": 10000})).await;
    // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
    let url =
        text.split_once("(http://").and_then(|(_, rest)| rest.split_once(')')).map(|(url, _)| url.to_owned());
    let (Some(url), true) = (url, ready["running"] == json!(true)) else {
        return Err("the server did not start (is python3 installed?)".into());
    };
    // The session survives other calls: fetch a page from it with a second command.
    call(
        &dispatcher,
        "bash",
        json!({"command": format!("curl -s http://{url}index.html || wget -qO- http://{url}index.html")}),
    )
    .await;
    call(&dispatcher, "bash_list", json!({})).await;
    // The request shows up in the server's log, read since the last poll.
    call(&dispatcher, "bash_output", json!({"session_id": id, "wait_ms": 500})).await;
    call(&dispatcher, "bash_stop", json!({"session_id": id})).await;

    // A question on standard input, answered by the model.
    let (_, asked) = call(
        &dispatcher,
        "bash",
        json!({"command": "read -r -p 'Overwrite? [y/N] ' answer; echo \"answered: $answer\"", "interactive": true, "yield_ms": 500}),
    )
    .await;
    if let Some(id) = asked["session_id"].as_u64() {
        call(&dispatcher, "bash_input", json!({"session_id": id, "text": "y\n", "wait_ms": 5000})).await;
    }
    std::fs::remove_dir_all(&workspace)?;
    Ok(())
}
