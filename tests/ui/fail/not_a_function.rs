use tool_runtime::tool;

#[tool]
struct Read {
    path: String,
}

fn main() {}
