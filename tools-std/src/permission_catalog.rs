//! What permission rules need to know about the built-in tools: which ask about commands or
//! paths, and Claude Code's names for them.

use tool_runtime::permissions::{Subject, ToolCatalog};

/// The built-in tools for [`Rules`](tool_runtime::permissions::Rules): `bash` asks about its
/// commands; `read`, `write`, `edit`, `glob`, `grep` and `ls` about their paths. Claude Code's
/// names map onto them: `Bash` to `bash`; `Read` to `read`, `glob`, `grep` and `ls` (as Claude
/// Code applies its read rules to every tool that reads); `Edit` to `edit` and `write` (every
/// tool that edits); `Write` to `write`; `Glob`, `Grep`, `LS`, `TodoWrite`, `TodoRead`,
/// `BashOutput` and `KillShell` to their counterparts. `MultiEdit` and `NotebookEdit` map to
/// `edit`. A `bash` call whose command only reads runs under the shared guard, alongside other
/// parallel calls.
pub fn permission_catalog() -> ToolCatalog {
    let mut catalog =
        ToolCatalog::new().subject("bash", Subject::Command).command_argument("bash", "command");
    for tool in ["read", "write", "edit", "glob", "grep", "ls"] {
        catalog = catalog.subject(tool, Subject::Path);
    }
    let names: &[(&str, &[&str])] = &[
        ("Bash", &["bash"]),
        ("Read", &["read", "glob", "grep", "ls"]),
        ("Edit", &["edit", "write"]),
        ("Write", &["write"]),
        ("MultiEdit", &["edit"]),
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
