//! The `tools` command (list, call, turn, serve). Only `list` exists so far.

use tools_std as _;

fn main() {
    let registry = match tool_runtime::Registry::from_inventory() {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("tools: {e}");
            std::process::exit(2);
        }
    };
    let specs: Vec<_> = registry.specs().collect();
    match serde_json::to_string_pretty(&specs) {
        Ok(json) => println!("{json}"),
        Err(e) => {
            eprintln!("tools: {e}");
            std::process::exit(2);
        }
    }
}
