use tool_runtime::tool;

#[tool(undocumented, permission = "file")]
async fn open(path: String) -> String {
    path
}

fn main() {}
