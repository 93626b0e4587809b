use tool_runtime::tool;

#[tool(undocumented, name = "read", name = "open")]
async fn read(path: String) -> String {
    path
}

fn main() {}
