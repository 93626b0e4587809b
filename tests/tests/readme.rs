//! The README's examples are real: its schema and error text are checked against the code.

use serde_json::Value;
use tool_runtime::{Registry, Tool, ToolContext, ToolError, tool};

/// Add two numbers.
///
/// Returns the sum as text.
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

fn readme_block(after: &str, fence: &str) -> String {
    let readme = include_str!("../../README.md");
    let start = readme.find(after).unwrap_or_else(|| panic!("README has {after:?}"));
    let open = format!("```{fence}\n");
    let from = start + readme[start..].find(&open).expect("code block") + open.len();
    let to = from + readme[from..].find("```").expect("closing fence");
    readme[from..to].to_owned()
}

#[test]
fn readme_schema_is_the_generated_schema() {
    let documented: Value = serde_json::from_str(&readme_block("`add`'s schema", "json")).unwrap();
    assert_eq!(AddTool.spec().input_schema, documented);
    assert_eq!(AddTool.spec().description, "Add two numbers.\n\nReturns the sum as text.");
}

#[tokio::test]
async fn readme_call_and_error_text_are_real() {
    let registry = Registry::builder().with_inventory().build().unwrap();
    let ctx = || ToolContext::builder("add").call_id("call_1").build();
    let out = registry.call("add", r#"{"a": 40, "b": "2"}"#, ctx()).await.unwrap();
    assert_eq!(out.text_content(), "42");
    let err = registry.call("add", r#"{"a": "forty", "c": 1}"#, ctx()).await.unwrap_err();
    assert_eq!(format!("{}\n", err.message()), readme_block("A wrong call", "text"));
}
