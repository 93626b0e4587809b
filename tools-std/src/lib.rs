#![doc = include_str!("../docs/tools.md")]
#![doc = include_str!("../docs/security.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Doctests are examples users copy: a warning in one fails it (as in tokio, an example may leave
// a function or variable unused).
#![doc(test(attr(deny(warnings, rust_2018_idioms), allow(dead_code, unused_variables))))]

use std::path::Path;
use std::sync::Arc;

use tool_runtime::truncate::ReadHint;
use tool_runtime::{Tool, context::Dependencies, output_store::OutputStore};

// One concept per folder: the tools a model calls, one file each; the file system they reach;
// what the editing tools share; the `apply_patch` format; shell commands and their sessions.
mod editing;
mod fs;
mod patch;
mod permission_catalog;
mod shell;
mod text;
mod tools;

pub mod checkpoint;
pub mod surface;

pub use editing::{file_versions, verify};
pub use fs::{ops, workspace};
pub use shell::{process, session};
pub use tools::{
    apply_patch, ask_user, bash, bash_input, bash_list, bash_output, bash_stop, checkpoints, edit, glob,
    grep, ls, multi_edit, read, todo_read, todo_write, tool_output_grep, tool_output_read, undo, write,
};

#[cfg(test)]
mod testing;

pub use fs::local::LocalOperations;
pub use ops::{Operations, Target};
pub use permission_catalog::permission_catalog;
/// The egress proxy that commands reach the network through ([`Workspace::with_egress`]).
#[cfg(feature = "egress")]
pub use tool_egress;
/// The kernel sandbox commands run in ([`Workspace::with_sandbox`]).
pub use tool_sandbox;
pub use workspace::{ResolvedPath, Workspace};

/// Every built-in tool, for registries built without `inventory`:
/// `Registry::builder().tools(tools_std::all())`.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadTool),
        Arc::new(write::WriteTool),
        Arc::new(edit::EditTool),
        Arc::new(tools::Adapted::new(bash::BashTool, bash::adapt_arguments)),
        Arc::new(bash_output::BashOutputTool),
        Arc::new(bash_input::BashInputTool),
        Arc::new(bash_stop::BashStopTool),
        Arc::new(bash_list::BashListTool),
        Arc::new(glob::GlobTool),
        Arc::new(grep::GrepTool),
        Arc::new(ls::LsTool),
        Arc::new(tool_output_read::ToolOutputReadTool),
        Arc::new(tool_output_grep::ToolOutputGrepTool),
        Arc::new(todo_write::TodoWriteTool),
        Arc::new(todo_read::TodoReadTool),
        Arc::new(multi_edit::MultiEditTool),
        Arc::new(apply_patch::ApplyPatchTool),
        Arc::new(undo::UndoTool),
        Arc::new(checkpoints::CheckpointsTool),
        Arc::new(tools::Adapted::new(ask_user::AskUserTool, ask_user::adapt_arguments)),
    ]
}

/// The dependencies the tools need, for a local workspace rooted at `root`: the [`Workspace`]
/// and the [`OutputStore`] in its default directory, with the [`read_hint`] of these tools.
///
/// To share the dispatcher's store instead, build the [`Dependencies`] yourself:
/// `deps.insert(Workspace::new(root)?); deps.insert_arc(store.clone());`.
pub fn dependencies(root: impl AsRef<Path>) -> std::io::Result<Dependencies> {
    let mut deps = Dependencies::new();
    deps.insert(Workspace::new(root)?);
    deps.insert(OutputStore::builder().read_hint(read_hint()).open()?);
    Ok(deps)
}

/// The template of [`read_hint`].
pub const READ_HINT: &str = "Full output saved as {ref}; {read} with tool_output_read(ref=\"{ref}\", \
                             offset={offset}) or search it with tool_output_grep(ref=\"{ref}\", pattern=\"...\").";

/// How a truncation notice tells the model to read a stored output back with
/// `tool_output_read` and `tool_output_grep`: install it with the [`OutputStore`] those tools
/// read, `OutputStore::builder().read_hint(tools_std::read_hint())`.
pub fn read_hint() -> ReadHint {
    // The template is checked by a test; the neutral hint is only a fallback.
    ReadHint::new(READ_HINT).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn all_lists_every_registered_tool_once() {
        let listed: Vec<String> = all().iter().map(|t| t.spec().name.clone()).collect();
        let unique: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
        assert_eq!(unique.len(), listed.len());
        let registered: BTreeSet<String> =
            tool_runtime::spec::registered_tools().map(|t| t.spec().name.clone()).collect();
        assert_eq!(registered, listed.iter().cloned().collect::<BTreeSet<_>>());
    }

    /// Their annotations are checked against what they do in
    /// `tests/tests/integration/tools_std_operations.rs`.
    #[test]
    fn every_tool_is_described_and_has_a_time_limit() {
        for tool in all() {
            let spec = tool.spec();
            assert!(spec.description.len() > 100, "{} needs a real description", spec.name);
            assert!(spec.timeout.is_some(), "{} needs a default time limit", spec.name);
        }
    }

    /// Clients keep the first 2000 lines and 48,000 bytes of a result (opencode; Claude Code keeps
    /// 50,000 characters): with the default limits, a truncated output's notice (with this
    /// crate's read hint) is within both, whichever end is kept.
    #[test]
    fn the_truncation_notice_is_within_2000_lines_and_the_result_budget() {
        use tool_runtime::spec::TruncationDirection::{Head, Middle, Tail};
        use tool_runtime::truncate::{TruncationLimits, truncate_text};
        for (lines, width) in [(1999, 1), (2000, 1), (2001, 1), (5000, 1), (5000, 80), (100, 4000)] {
            let text = format!("{}\n", "y".repeat(width)).repeat(lines);
            for direction in [Head, Tail, Middle] {
                let limits = TruncationLimits::default().with_direction(direction);
                let mut truncated = truncate_text(&text, &limits);
                let cut = truncated.info.truncated_by.is_some();
                truncated.info.record_saved("out_20261121T163000_ab12cd34", text.len(), usize::MAX);
                let shown = truncated.into_text_with_hint(&read_hint());
                let what = format!("{lines} lines of {width}, {direction:?}");
                assert!(shown.lines().count() <= 2000, "{what}: {} lines", shown.lines().count());
                let budget = tool_runtime::truncate::RESULT_BUDGET_BYTES;
                assert!(shown.len() <= budget, "{what}: {} bytes", shown.len());
                assert_eq!(shown.contains("tool_output_read(ref="), cut, "{what}");
                assert_eq!(cut, lines > 1990 || (width + 1) * lines > budget - 768, "{what}");
            }
        }
    }

    #[test]
    fn the_read_hint_names_the_tools_that_read_stored_outputs() {
        let hint = ReadHint::new(READ_HINT).expect("a valid template");
        assert_eq!(read_hint(), hint);
        let limits = tool_runtime::truncate::TruncationLimits::new(
            2000,
            51200,
            tool_runtime::spec::TruncationDirection::Head,
        );
        // 2000 lines of exactly 51200 bytes, then 46213 more lines: 48213 lines, 2371642 bytes.
        let mut text = String::new();
        text.push_str(&format!("{}\n", "a".repeat(25)).repeat(1600));
        text.push_str(&format!("{}\n", "b".repeat(23)).repeat(400));
        text.push_str(&format!("{}\n", "c".repeat(49)).repeat(46212));
        text.push_str(&format!("{}\n", "d".repeat(9841)));
        let mut info = tool_runtime::truncate::truncate_text(&text, &limits).info;
        info.record_saved("out_20261121T163000_ab12cd34", text.len(), usize::MAX);
        assert_eq!(
            info.notice_with(&hint).expect("truncated"),
            "[Output truncated: showing the first 2000 of 48213 lines (51200 of 2371642 bytes). Full output \
             saved as out_20261121T163000_ab12cd34; read more with \
             tool_output_read(ref=\"out_20261121T163000_ab12cd34\", offset=2001) or search it with \
             tool_output_grep(ref=\"out_20261121T163000_ab12cd34\", pattern=\"...\").]"
        );
        info.direction = tool_runtime::spec::TruncationDirection::Tail;
        assert!(info.notice_with(&hint).expect("truncated").contains(
            "; read the earlier lines with tool_output_read(ref=\"out_20261121T163000_ab12cd34\", offset=1) or"
        ));
    }

    #[test]
    fn dependencies_hold_a_canonical_workspace() {
        let dir = testing::TempDir::new();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let ws = Workspace::new(dir.path().join("a/b/..")).unwrap();
        assert_eq!(ws.root(), dir.path().join("a"));
        assert!(Workspace::new(dir.path().join("missing")).is_err());
    }
}
