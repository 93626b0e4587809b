use tool_runtime::tool;

#[tool(undocumented)]
async fn count(path: String) -> Vec<u8> {
    path.into_bytes()
}

fn main() {}
