use tool_runtime::tool;

#[tool]
async fn copy(#[arg(alias = "to")] from: String, to: String) -> String {
    from + &to
}

fn main() {}
