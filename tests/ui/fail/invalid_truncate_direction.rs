use tool_runtime::tool;

#[tool(truncate(direction = "bottom"))]
async fn logs(path: String) -> String {
    path
}

fn main() {}
