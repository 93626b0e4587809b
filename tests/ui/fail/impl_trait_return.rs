use tool_runtime::tool;

#[tool]
async fn show(value: String) -> impl ToString {
    value
}

fn main() {}
