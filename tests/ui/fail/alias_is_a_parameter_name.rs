use tool_runtime::tool;

#[tool(undocumented)]
async fn copy(#[arg(alias = "to")] from: String, to: String) -> String {
    from + &to
}

fn main() {}
