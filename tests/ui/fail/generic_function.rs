use tool_runtime::tool;

#[tool(undocumented)]
async fn echo<T: ToString>(value: String) -> String {
    value
}

fn main() {}
