use tool_runtime::tool;

/// Count the bytes of a file.
#[tool]
async fn count(
    /// The file.
    path: String,
) -> Result<Vec<u8>, std::io::Error> {
    Ok(path.into_bytes())
}

fn main() {}
