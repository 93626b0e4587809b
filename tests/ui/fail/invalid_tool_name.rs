use tool_runtime::tool;

#[tool(name = "read file")]
async fn read(path: String) -> String {
    path
}

fn main() {}
