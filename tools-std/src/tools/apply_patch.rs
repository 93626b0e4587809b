//! The `apply_patch` tool: add, delete, move and update several files in one call, all of them or none.
//!
//! Every path of the patch (move targets and deletes included) is resolved through the
//! [`Workspace`], like any other path argument. Then every new content is computed in memory,
//! with nothing written; only when every hunk of every file applies are the files written, each
//! atomically (temporary file and rename beneath the root), in patch order. If a write fails
//! midway, the files already written are put back from the copies held in memory and the
//! result says so (directories created for new files are removed again). A crash of the process during those
//! writes is not covered: some files may then hold the new content and others the old.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;

use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::editing::file_versions::FileVersions;
use crate::editing::text_file::{Diff, MAX_DIFF_BYTES, WithDiff, io_error, read_for_edit, unified_diff};
use crate::fs::ops::{Operations, Precondition, Target, content_hash};
pub use crate::patch::parse::{FileChange, Hunk, ParseError, Patch, parse_patch};
use crate::patch::seek::{Fallback, apply_hunks};
use crate::text::{display_path, plural};
use crate::{ResolvedPath, Workspace};

/// Applies the hunks of one `*** Update File` section to a file's bytes, in memory, as the tool
/// does: the new content, or the message the model would read (`display` names the file in it).
pub fn update_text(content: &[u8], hunks: &[Hunk], display: &str) -> Result<Vec<u8>, String> {
    apply_hunks(content, hunks, display).map(|updated| updated.bytes).map_err(|e| e.message)
}

/// The Lark grammar of the patch format, for OpenAI's freeform (`custom`) tools.
pub const GRAMMAR: &str = include_str!("../patch/apply_patch.lark");

/// Edit files with a patch: add, delete, move and update several files in one call.
///
/// The patch is plain text in this format (paths relative to the workspace root):
///
/// *** Begin Patch
/// *** Add File: path/new.txt
/// +every line of the new file, each starting with +
/// *** Delete File: path/old.txt
/// *** Update File: path/file.py
/// *** Move to: path/renamed.py      (optional: rename the file)
/// @@ def f():                        (optional text after @@: a line above the change, to find it)
///      context line (starts with a space)
/// -    removed line
/// +    added line
/// @@
/// ... more hunks, in file order ...
/// *** End of File                    (optional: the hunk ends at the end of the file)
/// *** End Patch
///
/// Give about three lines of context around each change and never repeat a line in two hunks.
/// Each hunk is found after the previous one (a hunk of only `+` lines with a bare `@@` is
/// appended at the end of the file); context is matched exactly first, then ignoring
/// trailing whitespace, then surrounding whitespace, then typographic quotes and dashes. The
/// patch applies as a whole: if any hunk does not apply, no file is changed and the error shows
/// the lines that were not found, the closest lines of the file and the first difference. Line
/// numbers copied from `read` onto every line of a hunk are removed. Line endings (CRLF or LF;
/// a replaced line keeps its own) and a byte-order mark are kept.
#[tool(
    destructive,
    permission = "path",
    timeout = "1m",
    freeform(grammar_file = "src/patch/apply_patch.lark")
)]
pub async fn apply_patch(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    patch: String,
) -> Result<ToolOutput, ToolError> {
    let _checkpoint = crate::checkpoint::begin(&ws, ctx, "apply_patch").await;
    let parsed = parse_patch(&patch).map_err(|e| {
        ToolError::invalid_arguments(format!(
            "The patch is not valid: {e}. Nothing was changed. Fix the patch and call apply_patch again; it starts \
             with `*** Begin Patch`, ends with `*** End Patch`, and each file section starts with `*** Add File: `, \
             `*** Delete File: ` or `*** Update File: `."
        ))
    })?;
    let mut resolved: HashMap<String, ResolvedPath> = HashMap::new();
    for change in &parsed.files {
        let (path, action) = match change {
            FileChange::Add { path, .. } => (path, "create"),
            FileChange::Delete { path } => (path, "delete"),
            FileChange::Update { path, .. } => (path, "edit"),
        };
        let mut wanted = vec![(path, action)];
        if let FileChange::Update { move_to: Some(to), .. } = change {
            wanted.push((to, "move a file to"));
        }
        for (path, action) in wanted {
            if !resolved.contains_key(path.as_str()) {
                let target = ws.resolve(ctx, path, action).await?;
                resolved.insert(path.clone(), target);
            }
        }
    }
    let versions = FileVersions::of(ctx);
    let known = versions.clone();
    let (output, changed) = ws
        .blocking(move |ops| -> Result<_, ToolError> {
            let staged = stage(ops, &versions, &parsed, &resolved)?;
            commit(ops, &staged)?;
            let mut changed = Vec::new();
            for file in staged.files.iter().filter(|f| f.new != f.original) {
                match &file.new {
                    Some(bytes) => {
                        versions.saw(&file.target, bytes);
                        changed.push((file.target.clone(), file.display.clone()));
                    }
                    None => versions.forget(&file.target),
                }
            }
            Ok((report(&staged), changed))
        })
        .await??;
    Ok(crate::editing::verify::after_edit(&ws, &known, &changed, false, output).await)
}

/// One file the patch touches: what it held and what it will hold (`None`: absent).
struct Staged {
    target: Target,
    display: String,
    original: Option<Vec<u8>>,
    new: Option<Vec<u8>>,
}

/// What the result says about one section of the patch.
struct Line {
    /// `A`, `M`, `D` (as git and codex show them), or `R` for a move.
    status: char,
    text: String,
    hunks: usize,
    fallbacks: Vec<(usize, Fallback)>,
    /// The hunks found only once `read`'s line numbers were removed from their lines.
    line_numbers: Vec<usize>,
}

struct Plan {
    files: Vec<Staged>,
    lines: Vec<Line>,
}

/// Computes every new content, reading each file once, in memory: a later section of the patch
/// sees what an earlier one made of the same file.
fn stage(
    ops: &dyn Operations,
    versions: &FileVersions,
    patch: &Patch,
    resolved: &HashMap<String, ResolvedPath>,
) -> Result<Plan, ToolError> {
    let mut files: Vec<Staged> = Vec::new();
    let mut index: HashMap<Target, usize> = HashMap::new();
    let mut lines = Vec::new();
    // The staged entry of a path, read from disk the first time.
    let mut entry = |path: &str, files: &mut Vec<Staged>, binary_ok: bool| -> Result<usize, ToolError> {
        let path = &resolved[path];
        if let Some(&i) = index.get(&path.target) {
            return Ok(i);
        }
        let original = if binary_ok {
            read_any(ops, &path.target, &path.display)?
        } else {
            read_for_edit(ops, &path.target, &path.display, "apply_patch")?
        };
        if let Some(bytes) = &original {
            versions.check(&path.target, &path.display, bytes, "apply_patch")?;
        }
        files.push(Staged {
            target: path.target.clone(),
            display: path.display.clone(),
            new: original.clone(),
            original,
        });
        index.insert(path.target.clone(), files.len() - 1);
        Ok(files.len() - 1)
    };
    for (number, change) in patch.files.iter().enumerate() {
        let section = number + 1;
        match change {
            FileChange::Add { path, contents } => {
                let i = entry(path, &mut files, true)?;
                let existed = files[i].new.is_some();
                files[i].new = Some(contents.clone().into_bytes());
                let display = &files[i].display;
                let text =
                    if existed { format!("{display} (replaced the existing file)") } else { display.clone() };
                lines.push(Line {
                    status: 'A',
                    text,
                    hunks: 0,
                    fallbacks: Vec::new(),
                    line_numbers: Vec::new(),
                });
            }
            FileChange::Delete { path } => {
                let i = entry(path, &mut files, true)?;
                if files[i].new.is_none() {
                    return Err(missing(&files[i].display, section, "delete"));
                }
                files[i].new = None;
                lines.push(Line {
                    status: 'D',
                    text: files[i].display.clone(),
                    hunks: 0,
                    fallbacks: Vec::new(),
                    line_numbers: Vec::new(),
                });
            }
            FileChange::Update { path, move_to, hunks } => {
                let i = entry(path, &mut files, false)?;
                let Some(current) = &files[i].new else {
                    return Err(missing(&files[i].display, section, "update"));
                };
                let (bytes, fallbacks, line_numbers) = if hunks.is_empty() {
                    (current.clone(), Vec::new(), Vec::new())
                } else {
                    let updated = apply_hunks(current, hunks, &files[i].display)
                        .map_err(|e| ToolError::invalid_arguments(e.message))?;
                    (updated.bytes, updated.fallbacks, updated.line_numbers)
                };
                let fallbacks: Vec<(usize, Fallback)> = fallbacks
                    .into_iter()
                    .enumerate()
                    .filter(|(_, f)| *f != Fallback::Exact)
                    .map(|(n, f)| (n + 1, f))
                    .collect();
                match move_to {
                    Some(to) if resolved[to].target != files[i].target => {
                        let j = entry(to, &mut files, true)?;
                        let existed = files[j].new.is_some();
                        files[i].new = None;
                        files[j].new = Some(bytes);
                        let replaced = if existed { " (replaced the existing file)" } else { "" };
                        let text = format!("{} -> {}{replaced}", files[i].display, files[j].display);
                        lines.push(Line { status: 'R', text, hunks: hunks.len(), fallbacks, line_numbers });
                    }
                    _ => {
                        files[i].new = Some(bytes);
                        let text = files[i].display.clone();
                        lines.push(Line { status: 'M', text, hunks: hunks.len(), fallbacks, line_numbers });
                    }
                }
            }
        }
    }
    Ok(Plan { files, lines })
}

fn missing(display: &str, section: usize, verb: &str) -> ToolError {
    ToolError::not_found(format!(
        "File {section} of the patch cannot {verb} {display}: it does not exist. Nothing was changed. Check the path \
         (paths are relative to the workspace root), or use `*** Add File: ` to create it."
    ))
}

/// A file's bytes whatever they hold (for deletes and overwrites, which must be undoable);
/// `None` when it does not exist.
fn read_any(ops: &dyn Operations, target: &Target, display: &str) -> Result<Option<Vec<u8>>, ToolError> {
    use std::io::Read;
    let info = match ops.metadata(target) {
        Ok(info) => info,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("read", display, e)),
    };
    if info.kind != crate::fs::ops::FileKind::File {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is {}; apply_patch only adds, deletes and changes files.",
            info.kind.describe()
        )));
    }
    if info.len > crate::editing::text_file::MAX_EDIT_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is {}, more than the 64 MiB apply_patch handles; change it with bash.",
            plural(info.len, "byte")
        )));
    }
    let mut bytes = Vec::new();
    ops.open(target).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(|e| io_error("read", display, e))?;
    Ok(Some(bytes))
}

/// Writes every changed file; on a failure, restores those already written.
fn commit(ops: &dyn Operations, plan: &Plan) -> Result<(), ToolError> {
    let changed: Vec<&Staged> = plan.files.iter().filter(|f| f.new != f.original).collect();
    // The directories made for new files, outermost first: removed again on a rollback.
    let mut made: Vec<Target> = Vec::new();
    for (done, file) in changed.iter().enumerate() {
        if let Err(error) = write_one(ops, file, &mut made) {
            let verb = if file.new.is_some() { "write" } else { "delete" };
            let mut message = format!("Cannot {verb} {}: {error}.", file.display);
            let mut failed = Vec::new();
            for earlier in changed[..done].iter().rev() {
                let undo = Staged {
                    target: earlier.target.clone(),
                    display: earlier.display.clone(),
                    original: earlier.new.clone(),
                    new: earlier.original.clone(),
                };
                if let Err(e) = write_one(ops, &undo, &mut Vec::new()) {
                    failed.push(format!("{} ({e})", earlier.display));
                }
            }
            // Innermost first; one that is not empty (something else was put there) stays.
            let mut kept = Vec::new();
            for dir in made.iter().rev() {
                if let Err(e) = ops.remove_dir(dir) {
                    kept.push(format!("{} ({e})", display_path(dir.path())));
                }
            }
            if failed.is_empty() {
                let restored = if done == 0 {
                    String::new()
                } else {
                    format!(
                        " ({} already written {} restored)",
                        plural(done as u64, "file"),
                        if done == 1 { "was" } else { "were" }
                    )
                };
                let _ = write!(
                    message,
                    " Nothing was changed{restored}. Fix the cause and call apply_patch again."
                );
            } else {
                let _ = write!(
                    message,
                    " The patch was only partly applied: restoring the files already written failed for {}. Read \
                     those files before going on.",
                    failed.join(", ")
                );
            }
            if !kept.is_empty() {
                let _ = write!(message, " Directories it created remain: {}.", kept.join(", "));
            }
            let kind_source = ToolError::from_io(io::Error::new(error.kind(), error.to_string()));
            return Err(kind_source.with_message(message));
        }
    }
    Ok(())
}

/// Writes (or deletes) one file; the directories it had to create are added to `made`.
fn write_one(ops: &dyn Operations, file: &Staged, made: &mut Vec<Target>) -> io::Result<()> {
    match &file.new {
        Some(bytes) => {
            if let Some(parent) = file.target.parent() {
                let mut missing = Vec::new();
                let mut dir = Some(parent.clone());
                while let Some(at) = dir {
                    match ops.metadata(&at) {
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            dir = at.parent();
                            missing.push(at);
                        }
                        _ => break,
                    }
                }
                let created = ops.create_dir_all(&parent);
                // Outermost first; a failure midway may have made some of them.
                made.extend(
                    missing.into_iter().rev().filter(|dir| created.is_ok() || ops.metadata(dir).is_ok()),
                );
                created?;
            }
            let check = match &file.original {
                Some(original) => Precondition::Unchanged(content_hash(original)),
                None => Precondition::None,
            };
            ops.write_atomic(&file.target, bytes, check).map(|_| ())
        }
        None => match ops.remove_file(&file.target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    }
}

fn report(plan: &Plan) -> ToolOutput {
    let mut text = String::from("Success. Updated the following files:\n");
    let mut fallback_notes = Vec::new();
    let mut files_meta = Vec::new();
    for line in &plan.lines {
        let _ = write!(text, "{} {}", line.status, line.text);
        if line.hunks > 0 {
            let _ = write!(text, " ({})", plural(line.hunks as u64, "hunk"));
        }
        text.push('\n');
        for (hunk, fallback) in &line.fallbacks {
            fallback_notes.push(format!("hunk {hunk} of {} matched {}", line.text, fallback.describe()));
        }
        for hunk in &line.line_numbers {
            fallback_notes.push(format!(
                "hunk {hunk} of {} carried the line numbers read shows, which were removed",
                line.text
            ));
        }
        files_meta.push(json!({
            "status": line.status.to_string(),
            "path": line.text,
            "hunks": line.hunks,
            "fallbacks": line.fallbacks.iter().map(|(h, f)| json!({"hunk": h, "match": f.name()})).collect::<Vec<_>>(),
            "line_numbers_removed": line.line_numbers,
        }));
    }
    if !fallback_notes.is_empty() {
        let _ = writeln!(
            text,
            "Note: {}. Only the matched lines were changed; check the result if unsure.",
            fallback_notes.join("; ")
        );
    }
    // One budget for the diffs of every file.
    let mut diff = Diff::default();
    for file in &plan.files {
        if file.new != file.original {
            let before = String::from_utf8_lossy(file.original.as_deref().unwrap_or_default());
            let after = String::from_utf8_lossy(file.new.as_deref().unwrap_or_default());
            let room = MAX_DIFF_BYTES.saturating_sub(diff.text.len());
            let one = unified_diff(&file.display, &before, &after, room);
            diff.text.push_str(&one.text);
            if one.cut {
                diff.cut = true;
                break;
            }
        }
    }
    ToolOutput::text(text.trim_end().to_owned())
        .with_title(format!("apply_patch: {}", plural(plan.lines.len() as u64, "file")))
        .with_metadata("files", json!(files_meta))
        .with_diff(diff)
}
