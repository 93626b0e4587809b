//! A binary whose only mention of tools-std is the documented line gets every tool from the
//! inventory. Its control, `tools_std_unlinked.rs`, shows the line is what keeps them.

use std::collections::BTreeSet;

use tools_std as _;

/// Every tool tools-std defines. Listed by hand: asking `tools_std::all()` would name the crate
/// and link it by another route.
const TOOLS: [&str; 20] = [
    "apply_patch",
    "ask_user",
    "bash",
    "bash_input",
    "bash_list",
    "bash_output",
    "bash_stop",
    "checkpoints",
    "edit",
    "glob",
    "grep",
    "ls",
    "multi_edit",
    "read",
    "todo_read",
    "todo_write",
    "tool_output_grep",
    "tool_output_read",
    "undo",
    "write",
];

#[test]
fn use_tools_std_keeps_every_registration() {
    let registry = tool_runtime::Registry::from_inventory().expect("no duplicate tool names");
    let names: BTreeSet<&str> = registry.names().collect();
    let missing: Vec<&str> = TOOLS.iter().copied().filter(|t| !names.contains(t)).collect();
    assert!(missing.is_empty(), "missing from the inventory: {missing:?}; present: {names:?}");
}
