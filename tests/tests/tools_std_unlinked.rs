//! The control for `tools_std_linkage.rs`: this binary never names tools-std, so the crate is
//! not linked and none of its `#[tool]` registrations exist here.

#[test]
fn without_the_line_the_registrations_are_absent() {
    let registry = tool_runtime::Registry::from_inventory().expect("no duplicate tool names");
    for tool in ["read", "write", "edit", "bash", "grep"] {
        assert!(
            !registry.contains(tool),
            "`{tool}` is registered in a binary that never names tools-std: something else links the crate \
             (a shared helper in tests/src?), so this control no longer shows that `use tools_std as _;` is needed"
        );
    }
}
