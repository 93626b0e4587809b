use tool_runtime::{tool, ToolContext};

#[tool(undocumented)]
async fn whoami(#[arg(rename = "context")] ctx: &ToolContext) -> String {
    ctx.call_id().to_owned()
}

fn main() {}
