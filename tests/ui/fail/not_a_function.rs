use tool_runtime::tool;

#[tool(undocumented)]
struct Read {
    path: String,
}

fn main() {}
