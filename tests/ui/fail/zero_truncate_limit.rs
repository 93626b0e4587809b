use tool_runtime::tool;

#[tool(undocumented, truncate(max_bytes = 0))]
async fn logs(path: String) -> String {
    path
}

fn main() {}
