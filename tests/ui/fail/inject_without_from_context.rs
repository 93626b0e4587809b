use tool_runtime::tool;

struct Clock;

#[tool(undocumented)]
async fn now(#[inject] clock: Clock) -> String {
    let _ = clock;
    String::new()
}

fn main() {}
