use tool_runtime::tool;

const EXAMPLE: &str = r#"{"pattern": "TODO"}"#;

/// Search files.
#[tool(example = EXAMPLE)]
async fn grep(pattern: String) -> String {
    pattern
}

fn main() {}
