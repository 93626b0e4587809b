use tool_runtime::tool;

/// Two arguments: which one receives the text?
#[tool(undocumented, freeform)]
async fn two(a: String, b: String) -> String {
    format!("{a}{b}")
}

/// The text is a `String`, never a number.
#[tool(undocumented, freeform)]
async fn number(n: u32) -> String {
    n.to_string()
}

fn main() {}
