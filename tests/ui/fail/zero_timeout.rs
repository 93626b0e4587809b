use tool_runtime::tool;

#[tool(undocumented, timeout = "0s")]
async fn slow(path: String) -> String {
    path
}

fn main() {}
