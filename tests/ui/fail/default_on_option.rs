use tool_runtime::tool;

#[tool]
async fn read(#[arg(default = Some(10))] limit: Option<u32>) -> String {
    format!("{limit:?}")
}

fn main() {}
