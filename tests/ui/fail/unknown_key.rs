use tool_runtime::tool;

#[tool(paralel)]
async fn read(path: String) -> String {
    path
}

fn main() {}
