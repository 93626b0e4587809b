//! The `multi_edit` tool: several `edit` replacements in one file, applied in order, all or none.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::editing::file_versions::FileVersions;
use crate::editing::text_file::{MAX_DIFF_BYTES, WithDiff, io_error, read_for_edit, unified_diff};
use crate::fs::ops::{Operations, Precondition, Target, content_hash};
use crate::text::{hard_links_note, plural};
use crate::tools::edit::{Budget, Request, Tier, apply};

/// One replacement of a `multi_edit` call, with the meaning it has in `edit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditOperation {
    /// The exact text to replace (empty, in the first edit only, to create a new file).
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence of `old_string` instead of exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// Make several edits to one file in one call: each replaces `old_string` with `new_string`
/// exactly as the `edit` tool does, in the order given, each on the result of the ones before.
///
/// The edits apply as a whole: if any of them fails (text not found, found more than once
/// without `replace_all`), the file is left unchanged and the error says which edit failed and
/// why. Plan the edits so that an earlier one does not change the text a later one looks for.
/// A first edit with an empty `old_string` creates a file that does not exist yet. Line endings
/// (CRLF or LF) and a byte-order mark are kept; the write is atomic.
#[tool(destructive, permission = "path", timeout = "1m")]
pub async fn multi_edit(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The file to edit, relative to the workspace root.
    #[arg(alias = "file_path", alias = "filePath")]
    path: String,
    /// The edits, applied in order (at most 100; more go in another call).
    #[schemars(length(min = 1, max = 100))]
    edits: Vec<EditOperation>,
) -> Result<ToolOutput, ToolError> {
    let checkpoint = crate::checkpoint::begin(&ws, ctx, "multi_edit").await;
    let total = edits.len();
    for (i, edit) in edits.iter().enumerate() {
        if edit.old_string == edit.new_string {
            return Err(ToolError::invalid_arguments(format!(
                "Edit {} of {total}: no changes to make: old_string and new_string are identical. Pass the text you \
                 want in new_string. No edit was applied.",
                i + 1
            )));
        }
        if i > 0 && edit.old_string.is_empty() {
            return Err(ToolError::invalid_arguments(format!(
                "Edit {} of {total} has an empty old_string; only the first edit may, to create a new file. Pass \
                 the exact text to replace. No edit was applied.",
                i + 1
            )));
        }
    }
    let resolved = ws.resolve_to_change(ctx, &path, "edit").await?;
    let display = resolved.display.clone();
    let target = resolved.target.clone();
    let versions = FileVersions::of(ctx);
    let known = versions.clone();
    let output =
        ws.blocking(move |ops| multi_edit_blocking(ops, &versions, &target, &display, &edits)).await??;
    let output =
        crate::editing::verify::after_edit(&ws, &known, &[(resolved.target, resolved.display)], true, output)
            .await;
    Ok(checkpoint.finish_into(output).await)
}

fn multi_edit_blocking(
    ops: &dyn Operations,
    versions: &FileVersions,
    path: &Target,
    display: &str,
    edits: &[EditOperation],
) -> Result<ToolOutput, ToolError> {
    let total = edits.len();
    let original = read_for_edit(ops, path, display, "multi_edit")?;
    if let Some(bytes) = &original {
        versions.check(path, display, bytes, "multi_edit")?;
    }
    let failed = |i: usize, error: ToolError| {
        let message = format!(
            "Edit {} of {total} failed: {} No edit was applied: the file is unchanged.",
            i + 1,
            error.message()
        );
        error.with_message(message)
    };
    let (mut content, rest, created) = match (&original, edits) {
        (None, [first, rest @ ..]) if first.old_string.is_empty() => {
            (first.new_string.clone().into_bytes(), rest, true)
        }
        (None, _) => {
            return Err(ToolError::not_found(format!(
                "File not found: {display}. To create a new file, give the first edit an empty old_string (or use \
                 write)."
            )));
        }
        (Some(bytes), [first, ..]) if first.old_string.is_empty() => {
            if bytes.is_empty() {
                (first.new_string.clone().into_bytes(), &edits[1..], false)
            } else {
                return Err(failed(
                    0,
                    ToolError::invalid_arguments(format!(
                        "old_string is empty, which creates a new file, but {display} already exists ({}). To change \
                         it, pass the exact text to replace as old_string.",
                        plural(bytes.len() as u64, "byte")
                    )),
                ));
            }
        }
        (Some(bytes), _) => (bytes.clone(), edits, false),
    };
    let offset = total - rest.len();
    let mut summaries = Vec::new();
    let mut loose = false;
    let mut tolerances: Vec<&'static str> = Vec::new();
    // The edits share one budget for their searches with whitespace differences.
    let budget = Budget::default();
    for (k, edit) in rest.iter().enumerate() {
        let request = Request {
            old: &edit.old_string,
            new: &edit.new_string,
            replace_all: edit.replace_all,
            budget: &budget,
        };
        let edited = apply(&content, &request).map_err(|f| failed(offset + k, f.into_error(display)))?;
        loose |= edited.tier != Tier::Exact || edited.line_numbers;
        for tolerance in edited.tolerances() {
            if !tolerances.contains(&tolerance) {
                tolerances.push(tolerance);
            }
        }
        let summary = edited.summary(display);
        let summary = summary.strip_prefix(&format!("Edited {display}: ")).unwrap_or(&summary).to_owned();
        summaries.push(format!("{}. {summary}", offset + k + 1));
        content = edited.bytes;
    }
    if created {
        summaries.insert(0, "1. created the file.".to_owned());
    } else if offset == 1 {
        summaries.insert(0, "1. wrote the empty file.".to_owned());
    }
    if let Some(parent) = path.parent().filter(|_| created) {
        ops.create_dir_all(&parent).map_err(|e| io_error("write", display, e))?;
    }
    let check = match &original {
        Some(bytes) => Precondition::Unchanged(content_hash(bytes)),
        None => Precondition::None,
    };
    let written = ops.write_atomic(path, &content, check).map_err(|e| io_error("write", display, e))?;
    versions.saw(path, &content);
    let before = String::from_utf8_lossy(original.as_deref().unwrap_or_default());
    let after = String::from_utf8_lossy(&content);
    let mut text =
        format!("Applied {} to {display}:\n{}", plural(total as u64, "edit"), summaries.join("\n"));
    if total > 1 {
        text.push_str("\n(Line numbers are those of the text each edit saw.)");
    }
    text.push_str(&hard_links_note(written.other_links));
    Ok(ToolOutput::text(text)
        .with_title(display.to_owned())
        .with_metadata("edits", json!(total))
        .with_metadata("created", json!(created))
        .with_metadata("tolerant_match", json!(loose))
        .with_metadata("tolerances", json!(tolerances))
        .with_diff(unified_diff(display, &before, &after, MAX_DIFF_BYTES)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ErrorKind;

    use crate::testing::Fixture;

    #[tokio::test]
    async fn edits_apply_in_order_on_each_others_result() {
        let fx = Fixture::new();
        fx.write("a.rs", "fn a() {}\nfn b() {}\nlet x = 1;\nlet x = 1;\n");
        let text = fx
            .text(
                "multi_edit",
                json!({"path": "a.rs", "edits": [
                    {"old_string": "fn a() {}", "new_string": "fn a() { b() }"},
                    {"old_string": "fn a() { b() }\nfn b", "new_string": "fn a() { c() }\nfn c"},
                    {"old_string": "let x = 1;", "new_string": "let y = 2;", "replace_all": true},
                ]}),
            )
            .await;
        assert_eq!(
            text,
            "Applied 3 edits to a.rs:\n1. replaced 1 occurrence at line 1 (1 line removed, 1 line added).\n2. replaced 1 \
             occurrence at line 1 (2 lines removed, 2 lines added).\n3. replaced 2 occurrences (at lines 3, 4).\n(Line \
             numbers are those of the text each edit saw.)"
        );
        assert_eq!(fx.read("a.rs"), b"fn a() { c() }\nfn c() {}\nlet y = 2;\nlet y = 2;\n");
    }

    #[tokio::test]
    async fn one_failing_edit_leaves_the_file_unchanged_with_edits_error_text() {
        let fx = Fixture::new();
        fx.write("a.txt", "\u{feff}x = 1\r\nx = 1\r\ny\r\n");
        let err = fx
            .error(
                "multi_edit",
                json!({"path": "a.txt", "edits": [
                    {"old_string": "y", "new_string": "z"},
                    {"old_string": "x = 1", "new_string": "x = 2"},
                ]}),
            )
            .await;
        assert_eq!(
            err.message(),
            "Edit 2 of 2 failed: old_string occurs 2 times in a.txt (at lines 1 and 2), but it must identify exactly one place. Include \
             more surrounding lines to make it unique, or set replace_all to true to replace all 2. No edit was \
             applied: the file is unchanged."
        );
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert_eq!(fx.read("a.txt"), "\u{feff}x = 1\r\nx = 1\r\ny\r\n".as_bytes());
        let err = fx
            .error(
                "multi_edit",
                json!({"path": "a.txt", "edits": [{"old_string": "nope", "new_string": "z"}]}),
            )
            .await;
        assert_eq!(
            err.message(),
            "Edit 1 of 1 failed: old_string was not found in a.txt. It must match the file's current text exactly, \
             including whitespace and line breaks. No line of the file resembles it: check that this is the right file, \
             or read it again. No edit was applied: the file is unchanged."
        );
        // CRLF and the BOM survive LF edits.
        fx.text(
            "multi_edit",
            json!({"path": "a.txt", "edits": [{"old_string": "y\n", "new_string": "y\nw\n"}, {"old_string": "w", "new_string": "v"}]}),
        )
        .await;
        assert_eq!(fx.read("a.txt"), "\u{feff}x = 1\r\nx = 1\r\ny\r\nv\r\n".as_bytes());
    }

    #[tokio::test]
    async fn creates_a_file_and_refuses_bad_requests() {
        let fx = Fixture::new();
        let text = fx
            .text(
                "multi_edit",
                json!({"path": "d/new.txt", "edits": [
                    {"old_string": "", "new_string": "hello world\n"},
                    {"old_string": "world", "new_string": "there"},
                ]}),
            )
            .await;
        assert!(
            text.starts_with("Applied 2 edits to d/new.txt:\n1. created the file.\n2. replaced"),
            "{text}"
        );
        assert_eq!(fx.read("d/new.txt"), b"hello there\n");
        let err = fx
            .error(
                "multi_edit",
                json!({"path": "missing.txt", "edits": [{"old_string": "a", "new_string": "b"}]}),
            )
            .await;
        assert_eq!(err.kind(), ErrorKind::NotFound);
        let err = fx
            .error(
                "multi_edit",
                json!({"path": "d/new.txt", "edits": [{"old_string": "hello", "new_string": "hi"}, {"old_string": "", "new_string": "x"}]}),
            )
            .await;
        assert!(err.message().starts_with("Edit 2 of 2 has an empty old_string"), "{}", err.message());
        let err = fx.error("multi_edit", json!({"path": "d/new.txt", "edits": []})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        // Each edit is a pass over the file: at most 100 in one call.
        let many: Vec<_> =
            (0..101).map(|i| json!({"old_string": format!("a{i}"), "new_string": "b"})).collect();
        let err = fx.error("multi_edit", json!({"path": "d/new.txt", "edits": many})).await;
        assert!(err.message().contains("/edits: must have at most 100 items"), "{}", err.message());
        let err = fx
            .error(
                "multi_edit",
                json!({"path": "../out.txt", "edits": [{"old_string": "a", "new_string": "b"}]}),
            )
            .await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        assert_eq!(fx.read("d/new.txt"), b"hello there\n");
    }
}
