//! The `checkpoints` tool: list the calls that changed files, which `undo` can undo.

use serde_json::json;
use tool_runtime::{ToolContext, ToolOutput, tool};

use crate::checkpoint::{Checkpoints, clock, shown_id};
use crate::text::display_path;

/// How many paths a line names before it counts the rest.
const SHOWN_PATHS: usize = 20;

/// List the calls of this session that changed files and can be undone with `undo`, oldest
/// first: the checkpoint number, the call id, the turn (when the host gave calls one; `undo`
/// with `turn` undoes all of a turn's calls), the tool, the time the call started, and the
/// files it changed (`+` created, `-` removed, `~` changed).
///
/// A call that changed no file has no checkpoint. Only the latest checkpoints are kept (the
/// oldest are dropped past the session's limits). Files that `.gitignore` ignores and files
/// over the size limit are not recorded.
#[tool(parallel, read_only, timeout = "10s")]
pub async fn checkpoints(ctx: &ToolContext) -> ToolOutput {
    let checkpoints = Checkpoints::of_call(ctx);
    if !checkpoints.is_enabled() {
        return ToolOutput::text("Checkpoints are off in this session: no call can be undone.");
    }
    let list = checkpoints.list();
    let mut text = String::new();
    if list.is_empty() {
        text.push_str("No checkpoints: no call has changed a file in this session yet.");
    }
    for checkpoint in &list {
        let paths: Vec<String> = checkpoint
            .changes
            .iter()
            .map(|c| {
                let mark = match (&c.before, &c.after) {
                    (None, _) => '+',
                    (_, None) => '-',
                    _ => '~',
                };
                format!("{mark}{}", display_path(&c.path))
            })
            .collect();
        let mut shown = paths.iter().take(SHOWN_PATHS).cloned().collect::<Vec<_>>().join(" ");
        if paths.len() > SHOWN_PATHS {
            shown.push_str(&format!(" and {} more", paths.len() - SHOWN_PATHS));
        }
        if paths.is_empty() {
            // An undo that found its files already put back.
            shown.push_str("no file changed");
        }
        let turn =
            checkpoint.turn.as_deref().map_or(String::new(), |turn| format!(" turn={}", shown_id(turn)));
        text.push_str(&format!(
            "#{} call_id={}{turn} {} at {}: {shown}",
            checkpoint.id,
            shown_id(&checkpoint.call_id),
            checkpoint.tool,
            clock(checkpoint.time)
        ));
        if let Some(by) = checkpoint.undone_by {
            text.push_str(&format!(" (undone by #{by})"));
        }
        text.push('\n');
    }
    if let Some(error) = checkpoints.last_error() {
        text.push_str(&format!("Last error: {error}\n"));
    }
    let listing: Vec<_> = list
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "call_id": c.call_id,
                "turn": c.turn,
                "tool": c.tool,
                "time": c.time.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
                "files": c.changes.iter().map(|ch| display_path(&ch.path)).collect::<Vec<_>>(),
                "undone_by": c.undone_by,
            })
        })
        .collect();
    ToolOutput::text(text.trim_end().to_owned()).with_metadata("checkpoints", json!(listing))
}
