use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::tool;

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

#[tool(undocumented)]
async fn read(
    /// The file to read.
    #[args]
    args: ReadArgs,
) -> String {
    args.path
}

fn main() {}
