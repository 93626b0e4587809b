use tool_runtime::tool;

#[tool(undocumented)]
async fn edit(
    #[arg(alias = "file_path")] path: String,
    #[arg(alias = "file_path")] old_string: String,
) -> String {
    path + &old_string
}

fn main() {}
