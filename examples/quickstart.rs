//! The main job: two `#[tool]` tools plus the built-in `tools-std`, their OpenAI definitions,
//! and one scripted model turn run through the dispatcher, with live lifecycle events and the
//! provider-format results. No network, no API key.
//!
//! Run with `cargo run --example quickstart`.

use serde_json::{Value, json};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolContext, ToolError,
    events::{EventFn, ToolEvent},
    providers::{DefinitionOptions, Provider},
    tool,
};
use tools_std as _; // links the built-in tools (read, write, edit, bash, glob, grep, ls, ...)

/// Count the words in a text.
///
/// Returns the number of whitespace-separated words.
#[tool(parallel, read_only)]
async fn word_count(
    /// The text to count.
    text: String,
) -> String {
    text.split_whitespace().count().to_string()
}

/// Append a line to the session's notes and return them all.
#[tool]
async fn note(
    ctx: &ToolContext,
    /// The line to add.
    #[schemars(length(min = 1, max = 200))]
    line: String,
) -> Result<String, ToolError> {
    let notes = ctx.session().get_or_insert_with(|| std::sync::Mutex::new(Vec::<String>::new()));
    let mut notes = notes.lock().map_err(|_| ToolError::execution("notes are unavailable"))?;
    notes.push(line);
    Ok(notes.join("\n"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = std::env::temp_dir().join(format!("tool-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&workspace)?;
    std::fs::write(workspace.join("hello.txt"), "hello from the workspace\nsecond line\n")?;

    let registry = Registry::from_inventory()?;
    let definitions = Provider::OpenAiChat.definitions(&registry, &DefinitionOptions::strict())?;
    println!("== {} tools, OpenAI Chat definitions (strict) ==", definitions.len());
    for definition in definitions
        .iter()
        .filter(|d| ["word_count", "note"].contains(&d["function"]["name"].as_str().unwrap_or("")))
    {
        println!("{}", serde_json::to_string_pretty(definition)?);
    }

    let dispatcher = Dispatcher::builder(registry)
        .dependencies(tools_std::dependencies(&workspace)?)
        .events(EventFn(|event: ToolEvent| {
            let extra = match &event {
                ToolEvent::Finished { status, duration_ms, .. } => {
                    format!(" {} in {duration_ms:.2} ms", status.as_str())
                }
                _ => String::new(),
            };
            println!("  event: {:<8} {:<8} {}{extra}", event.kind(), event.call_id(), event.tool());
        }))
        .build();

    // One assistant message with five calls, as OpenAI Chat Completions sends it.
    let call = |id: &str, name: &str, args: Value| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}});
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            call("call_1", "word_count", json!({"text": "the quick brown fox"})),
            call("call_2", "read", json!({"path": "hello.txt"})),
            call("call_3", "note", json!({"line": "hello.txt has 2 lines"})),
            call("call_4", "grep", json!({"pattern": "second", "limit": "5"})),
            call("call_5", "word_count", json!({"txt": 42})),
        ]
    });
    let calls = Provider::OpenAiChat.parse_tool_calls(&message)?;
    println!("\n== running {} calls (parallel tools overlap, `note` runs alone) ==", calls.len());
    let results = dispatcher.run_batch(calls, CancellationToken::new()).await?;

    println!("\n== tool result messages for OpenAI Chat ==");
    for rendered in Provider::OpenAiChat.render_results(&results) {
        println!("{}", serde_json::to_string_pretty(&rendered)?);
    }
    std::fs::remove_dir_all(&workspace)?;
    Ok(())
}
