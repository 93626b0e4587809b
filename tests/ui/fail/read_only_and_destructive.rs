use tool_runtime::tool;

#[tool(read_only, destructive)]
async fn wipe(path: String) -> String {
    path
}

fn main() {}
