use tool_runtime::tool;

#[tool(undocumented, timeout = "30 seconds")]
async fn slow(path: String) -> String {
    path
}

fn main() {}
