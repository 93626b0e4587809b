use tool_runtime::tool;

#[tool(undocumented, truncate = false, truncate(max_lines = 100))]
async fn read(path: String) -> String {
    path
}

fn main() {}
