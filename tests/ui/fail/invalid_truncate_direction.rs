use tool_runtime::tool;

#[tool(undocumented, truncate(direction = "bottom"))]
async fn logs(path: String) -> String {
    path
}

fn main() {}
