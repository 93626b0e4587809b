use tool_runtime::tool;

#[tool(undocumented, description = "")]
async fn read(path: String) -> String {
    path
}

fn main() {}
