//! What permission rules need to know about the built-in tools beyond their specs: Claude Code's
//! names for them.

use tool_runtime::permissions::{Access, ToolCatalog};
use tool_runtime::spec::PermissionSubject;

/// Each built-in tool's name in Claude Code, for its rules (`Bash(npm test)`) and its hooks'
/// matchers alike.
const CLAUDE_CODE_NAMES: &[(&str, &str)] = &[
    ("bash", "Bash"),
    ("read", "Read"),
    ("edit", "Edit"),
    ("multi_edit", "MultiEdit"),
    ("write", "Write"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("ls", "LS"),
    ("todo_write", "TodoWrite"),
    ("todo_read", "TodoRead"),
    ("bash_output", "BashOutput"),
    ("bash_stop", "KillShell"),
];

/// The built-in tools for [`Rules`](tool_runtime::permissions::Rules): what each asks about,
/// taken from its spec (`#[tool(permission = "...")]`), and Claude Code's names for them: `Bash`
/// to `bash`, `Glob` to `glob`, `KillShell` to `bash_stop` and so on, for rules and hook matchers
/// alike. As Claude Code applies its read rules to every tool that reads and its edit rules to
/// every tool that edits, `Read` also names each tool whose spec asks about paths and is
/// read-only (`glob`, `grep`, `ls`), and `Edit` each one that asks about paths and changes them
/// (`multi_edit`, `write`, `apply_patch`, whose hooks `Edit` matches). `NotebookEdit` maps to
/// `edit`. A `bash` call whose command only reads runs under the shared guard, alongside other
/// parallel calls. `bash_input` asks about what it types (its `PreToolUse` hooks run then, with
/// the session's command; `Bash` matches them, and they find the line typed as `command`, as
/// typing into a shell runs commands): the `Bash` rules read it, and typing into a shell or interpreter is
/// asked about while any `Bash` rule is in force. For the permission modes, read-only tools (and
/// `todo_write` and `bash_stop`, for which Claude Code asks no permission either) change nothing,
/// and `undo` edits files as the file tools do.
pub fn permission_catalog() -> ToolCatalog {
    let builtin = crate::all();
    let mut catalog = ToolCatalog::new().tools(builtin.iter().map(|tool| tool.spec()));
    for &(tool, name) in CLAUDE_CODE_NAMES {
        catalog = catalog.rule_name(name, [tool]).hook_name(tool, name);
    }
    for spec in builtin.iter().map(|tool| tool.spec()) {
        if spec.permission != Some(PermissionSubject::Path) {
            continue;
        }
        let family = if spec.annotations.read_only { "Read" } else { "Edit" };
        match CLAUDE_CODE_NAMES.iter().find(|(tool, _)| *tool == spec.name) {
            Some((_, name)) if *name == family => {}
            Some(_) => catalog = catalog.rule_name(family, [spec.name.as_str()]),
            None => {
                catalog =
                    catalog.rule_name(family, [spec.name.as_str()]).hook_name(spec.name.as_str(), family)
            }
        }
    }
    catalog
        .rule_name("NotebookEdit", ["edit"])
        .hook_name("bash_input", "Bash")
        .access("todo_write", Access::ReadOnly)
        .access("bash_stop", Access::ReadOnly)
        .access("undo", Access::Edits)
}
