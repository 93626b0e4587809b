use tool_runtime::tool;

#[tool]
async fn read(#[arg(default = "ten")] limit: u32) -> String {
    limit.to_string()
}

fn main() {}
