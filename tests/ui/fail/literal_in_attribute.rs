use tool_runtime::tool;

#[tool("read")]
async fn read(path: String) -> String {
    path
}

fn main() {}
