use serde::Deserialize;
use tool_runtime::tool;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
}

#[tool(undocumented)]
async fn read(#[args] args: ReadArgs) -> String {
    args.path
}

fn main() {}
