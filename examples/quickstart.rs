//! Define tools with `#[tool]`, list their schemas, and run a model's calls through the registry.

use tool_runtime::{Registry, ToolContext, ToolError, tool};

/// Add two numbers.
#[tool(parallel, read_only)]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    #[arg(default = 1)]
    b: i64,
) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

/// Remember a note for later in this session.
#[tool]
async fn remember(
    /// The note to keep.
    #[schemars(length(min = 1, max = 200))]
    note: String,
) -> String {
    format!("noted: {note}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::from_inventory()?;
    for spec in registry.specs() {
        println!(
            "{}: {}\n{}\n",
            spec.name,
            spec.description,
            serde_json::to_string_pretty(&spec.input_schema)?
        );
    }
    // A model turn: tool name and raw argument text, as an LLM sends them.
    let calls = [
        ("call_1", "add", r#"{"a": 40, "b": "2"}"#),
        ("call_2", "remember", r#"{"note": "the build uses 2 cores"}"#),
        ("call_3", "add", r#"{"a": "forty"}"#),
        ("call_4", "delete_everything", "{}"),
    ];
    for (id, name, args) in calls {
        let ctx = ToolContext::builder(name).call_id(id).build();
        match registry.call(name, args, ctx).await {
            Ok(output) => println!("[{id}] {name} -> {}", output.text_content()),
            Err(error) => println!("[{id}] {name} failed ({}):\n{}", error.kind(), error.message()),
        }
    }
    Ok(())
}
