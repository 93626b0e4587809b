use tool_runtime::tool;

/// Search files.
#[tool(undocumented, example = r#"["TODO"]"#, example = r#"{"pattern": "TODO"}"#)]
async fn grep(pattern: String) -> String {
    pattern
}

fn main() {}
