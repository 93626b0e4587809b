use tool_runtime::tool;

#[derive(Debug)]
struct Opaque;

#[tool]
async fn count(path: String) -> Result<String, Opaque> {
    Ok(path)
}

fn main() {}
