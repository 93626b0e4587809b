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

#[test]
fn every_tool_has_a_schema_the_meta_schema_accepts_and_examples_it_accepts() {
    // The `tools` binary compiles a validator only for a call that needs one and leaves the
    // examples of these tools to this test (`examples_checked_by_tests`): here every schema is
    // checked against the meta-schema and every example against its schema, once.
    let registry = tool_runtime::Registry::from_inventory().expect("no duplicate tool names");
    assert!(registry.len() >= TOOLS.len());
    registry.check_schemas().expect("every schema and example is valid");
}
