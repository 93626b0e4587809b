use tool_runtime::tool;

#[tool(undocumented)]
async fn read(path: String, #[arg(rename = "path")] file: String) -> String {
    path + &file
}

fn main() {}
