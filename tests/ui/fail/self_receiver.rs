use tool_runtime::tool;

struct Shell;

impl Shell {
    #[tool]
    async fn run(&self, command: String) -> String {
        command
    }
}

fn main() {}
