use tool_runtime::tool;

#[tool(undocumented)]
async unsafe fn read(path: String) -> String {
    path
}

fn main() {}
