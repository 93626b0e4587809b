use tool_runtime::tool;

#[tool(undocumented)]
async fn read(#[arg(defualt = 10)] limit: u32) -> String {
    limit.to_string()
}

fn main() {}
