use tool_runtime::tool;

#[tool(undocumented, paralel)]
async fn read(path: String) -> String {
    path
}

fn main() {}
