use tool_runtime::tool;

#[tool(undocumented, name = "read file")]
async fn read(path: String) -> String {
    path
}

fn main() {}
