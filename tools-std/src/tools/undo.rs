//! The `undo` tool: put back the files one or more earlier calls changed.

use std::io::Read as _;

use serde_json::json;
use tool_runtime::{Dep, PermissionKind, PermissionRequest, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::checkpoint::{Checkpoints, UndoError, UndoReport, UndoTarget};
use crate::editing::file_versions::FileVersions;
use crate::fs::ops::{FileKind, Target};
use crate::text::{display_path, plural};

/// Undo earlier calls that changed files: `write`, `edit`, `multi_edit`, `apply_patch`, and
/// `bash` commands (including `sed -i`, `rm`, `mv` and files they created).
///
/// Give `call_id` to undo one call (the `checkpoints` tool lists them), `turn` to undo every
/// call of one turn (the calls of one assistant message, newest first, as one undo), or `last`
/// to undo the last N calls that changed files (1 by default; calls already undone, and undos,
/// are skipped, so calling it again goes further back). The files those calls changed are put back
/// exactly as they were before them, and the files and directories they created are removed.
/// When a file changed again after those calls, nothing is written and the result names the
/// conflicting files: undo the later calls first. Files that `.gitignore` ignores and files
/// over the size limit are not recorded: one that was over it before the calls is left as it
/// is; one the calls made larger is put back, and the result says that undoing the undo cannot
/// bring its large content back. An undo can itself be undone (by its own call id) to bring
/// the change back.
#[tool(destructive, timeout = "1m")]
pub async fn undo(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The id of the call to undo, as listed by `checkpoints`.
    call_id: Option<String>,
    /// Undo the last N calls that changed files (default 1), newest first.
    last: Option<u32>,
    /// The id of a turn whose calls to undo, as listed by `checkpoints` (`turn=`).
    turn: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let target = match (call_id, last, turn) {
        (Some(id), None, None) => UndoTarget::Call(id),
        (None, None, Some(turn)) => UndoTarget::Turn(turn),
        (None, last, None) => UndoTarget::Last(last.unwrap_or(1) as usize),
        _ => {
            return Err(ToolError::invalid_arguments(
                "Give one of `call_id`, `turn` and `last`: `call_id` undoes one call, `turn` every call of one \
                 turn, `last` the last N calls.",
            ));
        }
    };
    if !ws.is_local() {
        return Err(ToolError::execution(UndoError::Off.to_string()));
    }
    let checkpoints = Checkpoints::of_call(ctx);
    let root = ws.root().to_path_buf();
    // Each path is offered to the permission hook, as the file tools offer the paths they write.
    let paths = checkpoints.paths(&target).map_err(undo_error)?;
    for path in &paths {
        let path = root.join(path);
        let description = format!("undo the changes to {}", path.display());
        ctx.ask(PermissionRequest::new(PermissionKind::Path { path, named: None }, description)).await?;
    }
    let (call, tool) = (ctx.call_id().to_owned(), ctx.tool_name().to_owned());
    let turn = ctx.turn_id().map(str::to_owned);
    // Under the call's stop switch: a stopped undo puts back nothing more once it was stopped.
    let result =
        ws.blocking(move |_| checkpoints.undo_in_turn(&root, &target, &call, turn.as_deref(), &tool)).await?;
    let report = result.map_err(undo_error)?;
    known_to_the_guard(&ws, ctx, &report).await;
    Ok(render(&report))
}

/// Tells the session's stale-write guard what the undo wrote, as `write` does after writing:
/// the files put back can be edited at once, and a later change to them by another program is
/// still caught; the files removed are forgotten.
async fn known_to_the_guard(ws: &Workspace, ctx: &ToolContext, report: &UndoReport) {
    let versions = FileVersions::of(ctx);
    if !versions.is_enabled() {
        return;
    }
    let restored: Vec<Target> = report.restored.iter().map(|p| Target::root().join(p)).collect();
    let removed: Vec<Target> = report.removed.iter().map(|p| Target::root().join(p)).collect();
    let limit = Checkpoints::of_call(ctx).config().max_file_bytes;
    let _ = ws
        .blocking(move |ops| {
            for target in &removed {
                versions.forget(target);
            }
            for target in &restored {
                let is_file = ops.symlink_metadata(target).is_ok_and(|info| info.kind == FileKind::File);
                let mut bytes = Vec::new();
                // No further than what a checkpoint keeps: a file larger now is forgotten.
                let read = is_file
                    && ops
                        .open(target)
                        .and_then(|file| {
                            std::io::Read::read_to_end(&mut file.take(limit.saturating_add(1)), &mut bytes)
                        })
                        .is_ok()
                    && bytes.len() as u64 <= limit;
                if read {
                    versions.saw(target, &bytes);
                } else {
                    versions.forget(target);
                }
            }
        })
        .await;
}

fn undo_error(error: UndoError) -> ToolError {
    match error {
        UndoError::NotFound(message) => ToolError::invalid_arguments(message),
        e => ToolError::execution(e.to_string()),
    }
}

fn render(report: &UndoReport) -> ToolOutput {
    let ids: Vec<String> = report.undone.iter().map(|id| format!("#{id}")).collect();
    let mut text = format!("Undid checkpoint{} {}.", if ids.len() == 1 { "" } else { "s" }, ids.join(", "));
    let list = |text: &mut String, what: &str, paths: &[std::path::PathBuf]| {
        if !paths.is_empty() {
            let names = shown(paths);
            text.push_str(&format!("\n{what} ({}): {}", paths.len(), names.join(", ")));
        }
    };
    list(&mut text, "Restored", &report.restored);
    list(&mut text, "Removed (created by the calls)", &report.removed);
    list(&mut text, "Made again (removed by the calls)", &report.recreated);
    list(
        &mut text,
        "Put back, though what the calls left was not kept (over the size limit, or not read yet): undoing \
         this undo cannot bring it back",
        &report.discarded,
    );
    list(
        &mut text,
        "Left as they are, over the size limit before the calls (their content then was not kept)",
        &report.too_large,
    );
    list(
        &mut text,
        "Left as they are, not read yet when the call began (the first checkpoint of a large workspace reads \
         for a limited time)",
        &report.not_read,
    );
    list(&mut text, "Kept, not empty (they hold files not recorded)", &report.kept_dirs);
    if report.restored.is_empty() && report.removed.is_empty() && report.recreated.is_empty() {
        if report.too_large.is_empty() && report.not_read.is_empty() {
            text.push_str("\nNo file needed to change: they already held their earlier content.");
        } else {
            text.push_str("\nNothing was written.");
        }
    }
    text.push_str("\nFiles that .gitignore ignores are not recorded and were left as they are.");
    let total = report.restored.len() + report.removed.len() + report.recreated.len();
    ToolOutput::text(text)
        .with_title(format!("undo: {}", plural(total as u64, "path")))
        .with_metadata("undone", json!(report.undone))
        .with_metadata("restored", json!(shown(&report.restored)))
        .with_metadata("removed", json!(shown(&report.removed)))
        .with_metadata("too_large", json!(shown(&report.too_large)))
        .with_metadata("not_read", json!(shown(&report.not_read)))
        .with_metadata("discarded", json!(shown(&report.discarded)))
}

/// The paths as the model reads them (any name a command made: a line break, bytes that are not
/// UTF-8, which JSON cannot hold as they are).
fn shown(paths: &[std::path::PathBuf]) -> Vec<String> {
    paths.iter().map(|path| display_path(path)).collect()
}
