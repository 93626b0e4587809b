use tool_runtime::{Registry, Tool, tool};

/// Read a file.
#[tool(undocumented, paralel)]
pub async fn read(path: String) -> String {
    path
}

fn main() {
    // The macro error above is the only error: the function and `ReadTool` still exist.
    let _ = ReadTool.spec();
    let _ = Registry::builder().tool(ReadTool);
    let _ = read(String::new());
}
