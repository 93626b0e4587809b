use tool_runtime::tool;

#[tool]
fn read(path: String) -> String {
    path
}

fn main() {}
