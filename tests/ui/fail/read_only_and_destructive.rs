use tool_runtime::tool;

#[tool(undocumented, read_only, destructive)]
async fn wipe(path: String) -> String {
    path
}

fn main() {}
