use tool_runtime::tool;

#[tool(undocumented)]
async fn read(#[arg(default = Some(10))] limit: Option<u32>) -> String {
    format!("{limit:?}")
}

fn main() {}
