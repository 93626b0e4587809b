use tool_runtime::tool;

#[tool(undocumented)]
fn read(path: String) -> String {
    path
}

fn main() {}
