use tool_runtime::tool;

struct Shell;

impl Shell {
    #[tool(undocumented)]
    async fn run(&self, command: String) -> String {
        command
    }
}

fn main() {}
