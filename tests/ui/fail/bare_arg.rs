use tool_runtime::tool;

#[tool(undocumented)]
async fn read(#[arg] limit: u32) -> String {
    limit.to_string()
}

fn main() {}
