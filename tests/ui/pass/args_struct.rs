use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::{Json, ToolContext, tool};

/// Arguments of `write`.
#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    /// Where to write.
    path: String,
    /// What to write.
    content: String,
}

#[derive(serde::Serialize, JsonSchema)]
struct Written {
    bytes: usize,
}

/// Write a file.
#[tool(undocumented, destructive)]
async fn write(ctx: &ToolContext, #[args] args: WriteArgs) -> Result<Json<Written>, std::io::Error> {
    let _ = (ctx, args.path);
    Ok(Json(Written { bytes: args.content.len() }))
}

fn main() {}
