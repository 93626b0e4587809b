use tool_runtime::tool;

#[tool(undocumented, truncate(max_line = 100))]
async fn read(path: String) -> String {
    path
}

fn main() {}
