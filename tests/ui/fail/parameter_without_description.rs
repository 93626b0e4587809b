use tool_runtime::tool;

/// Read a file.
#[tool]
async fn read(
    /// The file to read.
    path: String,
    offset: Option<usize>,
    #[arg(undocumented)] limit: Option<usize>,
) -> String {
    format!("{path} {offset:?} {limit:?}")
}

fn main() {}
