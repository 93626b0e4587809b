use tool_runtime::tool;

#[tool(undocumented)]
async fn show(value: impl ToString) -> String {
    value.to_string()
}

fn main() {}
