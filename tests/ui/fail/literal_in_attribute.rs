use tool_runtime::tool;

#[tool(undocumented, "read")]
async fn read(path: String) -> String {
    path
}

fn main() {}
