use tool_runtime::tool;

#[tool(description = "")]
async fn read(path: String) -> String {
    path
}

fn main() {}
