use tool_runtime::tool;

#[tool]
async unsafe fn read(path: String) -> String {
    path
}

fn main() {}
