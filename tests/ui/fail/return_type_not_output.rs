use tool_runtime::tool;

#[tool]
async fn count(path: String) -> Vec<u8> {
    path.into_bytes()
}

fn main() {}
