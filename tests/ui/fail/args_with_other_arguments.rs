use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::tool;

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[tool(undocumented)]
async fn read(#[args] args: ReadArgs, limit: u32) -> String {
    format!("{}{limit}", args.path)
}

fn main() {}
