use tool_runtime::tool;

#[tool(undocumented, permission = "command", command_argument = "cmd")]
async fn run(command: String) -> String {
    command
}

fn main() {}
