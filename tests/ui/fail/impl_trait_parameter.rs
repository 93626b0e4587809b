use tool_runtime::tool;

#[tool]
async fn show(value: impl ToString) -> String {
    value.to_string()
}

fn main() {}
