use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::tool;

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[tool(undocumented)]
async fn read(#[args] first: ReadArgs, #[args] second: ReadArgs) -> String {
    first.path + &second.path
}

fn main() {}
