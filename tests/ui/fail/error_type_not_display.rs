use tool_runtime::tool;

#[derive(Debug)]
struct Opaque;

#[tool(undocumented)]
async fn count(path: String) -> Result<String, Opaque> {
    Ok(path)
}

fn main() {}
