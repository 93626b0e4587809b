use tool_runtime::tool;

#[tool(permission = "file")]
async fn open(path: String) -> String {
    path
}

fn main() {}
