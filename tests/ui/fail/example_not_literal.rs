use tool_runtime::tool;

const EXAMPLE: &str = r#"{"pattern": "TODO"}"#;

/// Search files.
#[tool(undocumented, example = EXAMPLE)]
async fn grep(pattern: String) -> String {
    pattern
}

fn main() {}
