use serde::Deserialize;
use tool_runtime::tool;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
}

#[tool]
async fn read(#[args] args: ReadArgs) -> String {
    args.path
}

fn main() {}
