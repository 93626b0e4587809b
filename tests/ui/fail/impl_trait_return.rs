use tool_runtime::tool;

#[tool(undocumented)]
async fn show(value: String) -> impl ToString {
    value
}

fn main() {}
