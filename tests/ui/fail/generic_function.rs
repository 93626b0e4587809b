use tool_runtime::tool;

#[tool]
async fn echo<T: ToString>(value: String) -> String {
    value
}

fn main() {}
