use tool_runtime::tool;

#[tool]
async fn read(
    /// The file to read.
    path: String,
) -> String {
    path
}

fn main() {}
