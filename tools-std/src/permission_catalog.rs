//! What permission rules need to know about the built-in tools beyond their specs: Claude Code's
//! names for them.

use tool_runtime::permissions::ToolCatalog;

/// The built-in tools for [`Rules`](tool_runtime::permissions::Rules): what each asks about,
/// taken from its spec (`#[tool(permission = "...")]`), and Claude Code's names for them: `Bash` to `bash`; `Read` to `read`, `glob`, `grep` and `ls` (as Claude Code
/// applies its read rules to every tool that reads); `Edit` to `edit`, `multi_edit`,
/// `apply_patch` and `write` (every tool that edits); `Write` to `write`; `MultiEdit` to
/// `multi_edit`; `Glob`, `Grep`, `LS`, `TodoWrite`, `TodoRead`, `BashOutput` and `KillShell` to
/// their counterparts. `NotebookEdit` maps to `edit`. A `bash` call whose command only reads runs
/// under the shared guard, alongside other parallel calls. `bash_input` asks about what it types
/// (its `PreToolUse` hooks run then, with the session's command): the `Bash` rules read it, and
/// typing into a shell or interpreter is asked about while any `Bash` rule is in force.
pub fn permission_catalog() -> ToolCatalog {
    let builtin = crate::all();
    let mut catalog = ToolCatalog::new().tools(builtin.iter().map(|tool| tool.spec()));
    let names: &[(&str, &[&str])] = &[
        ("Bash", &["bash"]),
        ("Read", &["read", "glob", "grep", "ls"]),
        ("Edit", &["edit", "multi_edit", "apply_patch", "write"]),
        ("Write", &["write"]),
        ("MultiEdit", &["multi_edit"]),
        ("NotebookEdit", &["edit"]),
        ("Glob", &["glob"]),
        ("Grep", &["grep"]),
        ("LS", &["ls"]),
        ("TodoWrite", &["todo_write"]),
        ("TodoRead", &["todo_read"]),
        ("BashOutput", &["bash_output"]),
        ("KillShell", &["bash_stop"]),
    ];
    for (name, tools) in names {
        catalog = catalog.rule_name(*name, tools.iter().copied());
    }
    let hook_names = [
        ("bash", "Bash"),
        ("read", "Read"),
        ("edit", "Edit"),
        ("multi_edit", "MultiEdit"),
        ("apply_patch", "Edit"),
        ("write", "Write"),
        ("glob", "Glob"),
        ("grep", "Grep"),
        ("ls", "LS"),
        ("todo_write", "TodoWrite"),
        ("todo_read", "TodoRead"),
        ("bash_output", "BashOutput"),
        ("bash_stop", "KillShell"),
    ];
    for (tool, name) in hook_names {
        catalog = catalog.hook_name(tool, name);
    }
    catalog
}
