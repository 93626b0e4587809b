//! The `apply_patch` tool: add, delete, move and update several files in one call, all of them or none.
//!
//! Every path of the patch (move targets and deletes included) is resolved through the
//! [`Workspace`], like any other path argument: first as a name, a symbolic link in its last
//! component not followed ([`Workspace::resolve_nofollow`]); then, where a section reads or
//! writes through such a link, as what it leads to ([`Workspace::resolve`]), which asks for the
//! external-directory permission when the link leads outside the root. A deletion, and the source
//! of a move, remove the name itself, by name in its parent directory: a link is removed, never
//! what it points to, and removing one looks at nothing it points to. Once a section removed a
//! link, later sections see its name as free (an `*** Add File` of it makes a regular file).
//!
//! Then every new content is computed in memory, with nothing written; only when every hunk of
//! every file applies are the files written, each atomically (temporary file and rename beneath
//! the root), in patch order, links removed last. If a write fails midway, the files already
//! written are put back from the copies held in memory and the result says so (directories
//! created for new files are removed again; a link already removed cannot be made again, and the
//! result names it). A crash of the process during those writes is not covered: some files may
//! then hold the new content and others the old.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;

use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::editing::file_versions::FileVersions;
use crate::editing::text_file::{Diff, MAX_DIFF_BYTES, WithDiff, io_error, read_for_edit, unified_diff};
use crate::fs::ops::{FileKind, Operations, Precondition, Target, content_hash};
pub use crate::patch::parse::{FileChange, Hunk, ParseError, Patch, parse_patch};
pub use crate::patch::seek::HunkError;
use crate::patch::seek::{Fallback, apply_hunks};
use crate::text::{display_path, plural};
use crate::{ResolvedPath, Workspace};

/// Applies the hunks of one `*** Update File` section to a file's bytes, in memory, as the tool
/// does: the new content, or the hunk that does not apply, whose text is the message the model
/// would read (`display` names the file in it).
pub fn update_text(content: &[u8], hunks: &[Hunk], display: &str) -> Result<Vec<u8>, HunkError> {
    apply_hunks(content, hunks, display).map(|updated| updated.bytes)
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
///
/// Symbolic links: `*** Delete File` removes the link itself, never what it points to (also a
/// link to a directory or to nothing), as `rm` does. `*** Add File` and `*** Update File` write
/// through a link to the file it points to. `*** Update File` of a link with `*** Move to` writes
/// the patched content of the file it points to at the new path and removes the link; the file
/// it pointed to stays as it was.
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
    let checkpoint = crate::checkpoint::begin(&ws, ctx, "apply_patch").await;
    let parsed = parse_patch(&patch).map_err(|e| {
        ToolError::invalid_arguments(format!(
            "The patch is not valid: {e}. Nothing was changed. Fix the patch and call apply_patch again; it starts \
             with `*** Begin Patch`, ends with `*** End Patch`, and each file section starts with `*** Add File: `, \
             `*** Delete File: ` or `*** Update File: `."
        ))
    })?;
    let paths = resolve_paths(&ws, ctx, &parsed).await?;
    let versions = FileVersions::of(ctx);
    let known = versions.clone();
    let (output, changed) = ws
        .blocking(move |ops| -> Result<_, ToolError> {
            let staged = stage(ops, &versions, &parsed, &paths)?;
            commit(ops, &staged)?;
            let mut changed = Vec::new();
            for file in staged.files.iter().filter(|f| f.new != f.original) {
                match &file.new {
                    Held::File(bytes) => {
                        versions.saw(&file.target, bytes);
                        changed.push((file.target.clone(), file.display.clone()));
                    }
                    Held::Nothing | Held::Link(_) => versions.forget(&file.target),
                }
            }
            Ok((report(&staged), changed))
        })
        .await??;
    let output = crate::editing::verify::after_edit(&ws, &known, &changed, false, output).await;
    Ok(checkpoint.finish_into(output).await)
}

/// How the paths of a patch are reached.
struct Paths {
    /// Each path as a name: a symbolic link in its last component is not followed.
    names: HashMap<String, ResolvedPath>,
    /// Where a path whose name is a symbolic link leads, for the sections that read or write
    /// through it.
    through: HashMap<String, ResolvedPath>,
}

/// Resolves every path of the patch, asking the permission hook for each, in patch order: first
/// as a name (a link in the last component not followed), then, for a name that is a symbolic
/// link that a section reads or writes through, as what it leads to. A link that an earlier
/// section removes is no longer followed: the name is free from then on.
async fn resolve_paths(ws: &Workspace, ctx: &ToolContext, patch: &Patch) -> Result<Paths, ToolError> {
    let mut names: HashMap<String, ResolvedPath> = HashMap::new();
    for change in &patch.files {
        for (path, action) in wanted(change) {
            if !names.contains_key(path) {
                names.insert(path.to_owned(), ws.resolve_nofollow(ctx, path, action).await?);
            }
        }
    }
    let links: HashSet<Target> = {
        let targets: Vec<Target> = names.values().map(|name| name.target.clone()).collect();
        ws.blocking(move |ops| {
            targets
                .into_iter()
                .filter(|target| {
                    ops.symlink_metadata(target).is_ok_and(|info| info.kind == FileKind::Symlink)
                })
                .collect()
        })
        .await?
    };
    let mut removed: HashSet<Target> = HashSet::new();
    let mut through: HashMap<String, ResolvedPath> = HashMap::new();
    for change in &patch.files {
        let is_link =
            |path: &str| links.contains(&names[path].target) && !removed.contains(&names[path].target);
        let mut follow: Vec<(&str, &str)> = Vec::new();
        let mut removes: Option<&str> = None;
        match change {
            FileChange::Add { path, .. } => follow.push((path, "create")),
            FileChange::Delete { path } => removes = Some(path),
            FileChange::Update { path, move_to: None, .. } => follow.push((path, "edit")),
            FileChange::Update { path, move_to: Some(to), .. } => {
                if names[to].target == names[path].target {
                    follow.push((path, "edit"));
                } else {
                    follow.push((path, "read"));
                    follow.push((to, "move a file to"));
                    removes = Some(path);
                }
            }
        }
        for (path, action) in follow {
            if is_link(path) && !through.contains_key(path) {
                through.insert(path.to_owned(), ws.resolve_to_change(ctx, path, action).await?);
            }
        }
        if let Some(path) = removes.filter(|path| is_link(path)) {
            removed.insert(names[path].target.clone());
        }
    }
    Ok(Paths { names, through })
}

/// The paths a section names, with what it does to each, for the permission hook.
fn wanted(change: &FileChange) -> Vec<(&str, &'static str)> {
    match change {
        FileChange::Add { path, .. } => vec![(path, "create")],
        FileChange::Delete { path } => vec![(path, "delete")],
        FileChange::Update { path, move_to: None, .. } => vec![(path, "edit")],
        FileChange::Update { path, move_to: Some(to), .. } => vec![(path, "edit"), (to, "move a file to")],
    }
}

/// What a name holds, or will hold once the patch is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    /// Nothing: the name does not exist.
    Nothing,
    /// A file with these bytes.
    File(Vec<u8>),
    /// A symbolic link holding this path. The patch only removes it (or puts a file in its
    /// place); what it points to is read or written through another entry.
    Link(PathBuf),
}

impl Held {
    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Held::File(bytes) => Some(bytes),
            Held::Nothing | Held::Link(_) => None,
        }
    }
}

/// One name the patch touches: what it held and what it will hold.
struct Staged {
    target: Target,
    display: String,
    original: Held,
    new: Held,
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

/// The staged entries, one per name, read from disk the first time each is needed.
struct Entries<'a> {
    ops: &'a dyn Operations,
    versions: &'a FileVersions,
    paths: &'a Paths,
    files: Vec<Staged>,
    index: HashMap<Target, usize>,
}

impl Entries<'_> {
    /// The entry of `path` as a name: a symbolic link there is the link itself, never read
    /// through.
    fn name(&mut self, path: &str, binary_ok: bool) -> Result<usize, ToolError> {
        let name = &self.paths.names[path];
        if let Some(&i) = self.index.get(&name.target) {
            return Ok(i);
        }
        let link = match self.ops.symlink_metadata(&name.target) {
            Ok(info) if info.kind == FileKind::Symlink => Some(
                self.ops.read_link(&name.target).map_err(|e| io_error("read the link", &name.display, e))?,
            ),
            _ => None,
        };
        match link {
            Some(link) => Ok(self.push(name, Held::Link(link))),
            None => self.read(name, binary_ok),
        }
    }

    /// The entry whose content a section reads or writes at `path`: the name's own, unless the
    /// name is a symbolic link still in place, then the entry of the file it leads to.
    fn content(&mut self, path: &str, binary_ok: bool) -> Result<usize, ToolError> {
        let i = self.name(path, binary_ok)?;
        if !matches!(self.files[i].new, Held::Link(_)) {
            return Ok(i);
        }
        let Some(leads) = self.paths.through.get(path) else {
            return Err(replaced(&self.files[i].display));
        };
        let j = match self.index.get(&leads.target) {
            Some(&j) => j,
            None => self.read(leads, binary_ok)?,
        };
        if matches!(self.files[j].new, Held::Link(_)) {
            return Err(replaced(&leads.display));
        }
        Ok(j)
    }

    /// A new entry for `path`, with the content read through it (a link is followed).
    fn read(&mut self, path: &ResolvedPath, binary_ok: bool) -> Result<usize, ToolError> {
        let original = if binary_ok {
            read_any(self.ops, &path.target, &path.display)?
        } else {
            read_for_edit(self.ops, &path.target, &path.display, "apply_patch")?
        };
        if let Some(bytes) = &original {
            self.versions.check(&path.target, &path.display, bytes, "apply_patch")?;
        }
        Ok(self.push(path, original.map_or(Held::Nothing, Held::File)))
    }

    fn push(&mut self, path: &ResolvedPath, held: Held) -> usize {
        self.files.push(Staged {
            target: path.target.clone(),
            display: path.display.clone(),
            new: held.clone(),
            original: held,
        });
        self.index.insert(path.target.clone(), self.files.len() - 1);
        self.files.len() - 1
    }
}

/// A name that became a symbolic link after the patch's paths were resolved.
fn replaced(display: &str) -> ToolError {
    ToolError::execution(format!(
        "{display} was replaced by a symbolic link while the patch was being applied. Nothing was changed. \
         Call apply_patch again."
    ))
}

/// Computes every new content, reading each file once, in memory: a later section of the patch
/// sees what an earlier one made of the same file.
fn stage(
    ops: &dyn Operations,
    versions: &FileVersions,
    patch: &Patch,
    paths: &Paths,
) -> Result<Plan, ToolError> {
    let mut entries = Entries { ops, versions, paths, files: Vec::new(), index: HashMap::new() };
    let mut lines = Vec::new();
    for (number, change) in patch.files.iter().enumerate() {
        let section = number + 1;
        match change {
            FileChange::Add { path, contents } => {
                let i = entries.content(path, true)?;
                let file = &mut entries.files[i];
                let existed = file.new != Held::Nothing;
                file.new = Held::File(contents.clone().into_bytes());
                let display = &file.display;
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
                let i = entries.name(path, true)?;
                let file = &mut entries.files[i];
                let text = match &file.new {
                    Held::Nothing => return Err(missing(&file.display, section, "delete")),
                    Held::File(_) => file.display.clone(),
                    Held::Link(link) => format!(
                        "{} (a symbolic link to {}: the link was removed, not what it points to)",
                        file.display,
                        display_path(link)
                    ),
                };
                file.new = Held::Nothing;
                lines.push(Line {
                    status: 'D',
                    text,
                    hunks: 0,
                    fallbacks: Vec::new(),
                    line_numbers: Vec::new(),
                });
            }
            FileChange::Update { path, move_to, hunks } => {
                let i = entries.content(path, false)?;
                let Some(current) = entries.files[i].new.bytes() else {
                    return Err(missing(&entries.files[i].display, section, "update"));
                };
                let (bytes, fallbacks, line_numbers) = if hunks.is_empty() {
                    (current.to_vec(), Vec::new(), Vec::new())
                } else {
                    let updated = apply_hunks(current, hunks, &entries.files[i].display)
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
                    Some(to) if paths.names[to].target != paths.names[path].target => {
                        // The source's name goes: the link itself when it is one (what it points
                        // to stays), as `mv` and codex do.
                        let source = entries.name(path, false)?;
                        let j = entries.content(to, true)?;
                        let existed = entries.files[j].new != Held::Nothing;
                        let link = (source != i).then(|| entries.files[i].display.clone());
                        entries.files[source].new = Held::Nothing;
                        entries.files[j].new = Held::File(bytes);
                        let replaced = if existed { " (replaced the existing file)" } else { "" };
                        let mut text = format!(
                            "{} -> {}{replaced}",
                            entries.files[source].display, entries.files[j].display
                        );
                        if let Some(pointed) = link {
                            let _ = write!(
                                text,
                                " ({} was a symbolic link to {pointed}: the link was removed, not {pointed})",
                                entries.files[source].display
                            );
                        }
                        lines.push(Line { status: 'R', text, hunks: hunks.len(), fallbacks, line_numbers });
                    }
                    _ => {
                        entries.files[i].new = Held::File(bytes);
                        let text = entries.files[i].display.clone();
                        lines.push(Line { status: 'M', text, hunks: hunks.len(), fallbacks, line_numbers });
                    }
                }
            }
        }
    }
    Ok(Plan { files: entries.files, lines })
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
    if info.kind != FileKind::File {
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

/// Writes every changed file; on a failure, restores those already written. Symbolic links are
/// removed (or replaced) last: they are the only changes that cannot be put back.
fn commit(ops: &dyn Operations, plan: &Plan) -> Result<(), ToolError> {
    let mut changed: Vec<&Staged> = plan.files.iter().filter(|f| f.new != f.original).collect();
    changed.sort_by_key(|f| matches!(f.original, Held::Link(_)));
    // The directories made for new files, outermost first: removed again on a rollback.
    let mut made: Vec<Target> = Vec::new();
    for (done, file) in changed.iter().enumerate() {
        if let Err(error) = write_one(ops, file, &mut made) {
            let verb = if file.new == Held::Nothing { "delete" } else { "write" };
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

/// Writes (or deletes) one file; the directories it had to create are added to `made`. A
/// deletion removes the name itself (a symbolic link, not what it points to), by name in its
/// parent directory.
fn write_one(ops: &dyn Operations, file: &Staged, made: &mut Vec<Target>) -> io::Result<()> {
    match &file.new {
        Held::File(bytes) => {
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
            // A link being replaced by a file has no content to check.
            let check = match &file.original {
                Held::File(original) => Precondition::Unchanged(content_hash(original)),
                Held::Nothing | Held::Link(_) => Precondition::None,
            };
            ops.write_atomic(&file.target, bytes, check).map(|_| ())
        }
        Held::Nothing => match ops.remove_file(&file.target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
        Held::Link(link) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "it was a symbolic link to {}, which apply_patch cannot make again; recreate it with `ln -s`",
                display_path(link)
            ),
        )),
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
            let before = String::from_utf8_lossy(file.original.bytes().unwrap_or_default());
            let after = String::from_utf8_lossy(file.new.bytes().unwrap_or_default());
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

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};
    use tool_runtime::hooks::{PermissionDecision, PermissionHook};
    use tool_runtime::{BoxFuture, ErrorKind, PermissionKind, PermissionRequest};

    use super::*;
    use crate::testing::Fixture;

    fn patch(body: &str) -> Value {
        json!({ "patch": format!("*** Begin Patch\n{body}*** End Patch\n") })
    }

    fn is_link(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }

    fn is_gone(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
    }

    /// Records every permission request; allows those inside the workspace and refuses the
    /// others, as the default policy does.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<PermissionKind>>);

    impl Recorder {
        fn asked(&self) -> Vec<PermissionKind> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    impl PermissionHook for Recorder {
        fn decide<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionDecision> {
            self.0.lock().unwrap().push(request.kind.clone());
            let decision = match request.kind {
                PermissionKind::ExternalDirectory { .. } => {
                    PermissionDecision::Deny { reason: "outside the workspace".into() }
                }
                _ => PermissionDecision::Allow,
            };
            Box::pin(std::future::ready(decision))
        }
    }

    async fn apply(fx: &Fixture, recorder: &Arc<Recorder>, body: &str) -> Result<ToolOutput, ToolError> {
        fx.call_with(fx.ctx_with("apply_patch", recorder.clone()), "apply_patch", patch(body)).await
    }

    fn path_request(path: PathBuf) -> PermissionKind {
        PermissionKind::Path { path, named: None }
    }

    #[tokio::test]
    async fn deleting_a_link_removes_the_link_and_keeps_the_file_it_points_to() {
        let fx = Fixture::new();
        fx.write("src/a.txt", "keep\n");
        symlink("src/a.txt", fx.root().join("link")).unwrap();
        let recorder = Arc::new(Recorder::default());
        let out = apply(&fx, &recorder, "*** Delete File: link\n").await.unwrap();
        assert!(is_gone(&fx.root().join("link")), "the link is removed");
        assert_eq!(fx.read("src/a.txt"), b"keep\n", "the file it points to is kept");
        assert_eq!(
            out.text_content(),
            "Success. Updated the following files:\n\
             D link (a symbolic link to src/a.txt: the link was removed, not what it points to)"
        );
        // The permission request names the link itself; nothing it points to is asked about.
        assert_eq!(recorder.asked(), [path_request(fx.root().join("link"))]);
    }

    #[tokio::test]
    async fn a_dangling_link_and_a_link_to_a_directory_are_removed_as_links() {
        let fx = Fixture::new();
        fx.write("src/a.txt", "keep\n");
        symlink("missing.txt", fx.root().join("dangling")).unwrap();
        symlink("src", fx.root().join("dirlink")).unwrap();
        let recorder = Arc::new(Recorder::default());
        let out =
            apply(&fx, &recorder, "*** Delete File: dangling\n*** Delete File: dirlink\n").await.unwrap();
        assert!(is_gone(&fx.root().join("dangling")) && is_gone(&fx.root().join("dirlink")));
        assert_eq!(fx.read("src/a.txt"), b"keep\n");
        assert!(is_gone(&fx.root().join("missing.txt")), "nothing was made where the dangling link pointed");
        assert!(out.text_content().contains("D dirlink (a symbolic link to src:"), "{}", out.text_content());
        // A real directory is still refused.
        let err = apply(&fx, &recorder, "*** Delete File: src\n").await.unwrap_err();
        assert_eq!(err.message(), "src is a directory; apply_patch only adds, deletes and changes files.");
    }

    #[tokio::test]
    async fn a_link_out_of_the_workspace_is_removed_without_asking_but_never_read_through() {
        let fx = Fixture::new();
        let outside = fx.dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        fx.write("in.txt", "in\n");
        let recorder = Arc::new(Recorder::default());
        for (link, to) in
            [("abs", outside.join("secret.txt")), ("rel", PathBuf::from("../outside/secret.txt"))]
        {
            let at = fx.root().join(link);
            // Reading or writing through it needs the external-directory permission, refused here.
            symlink(&to, &at).unwrap();
            for body in [
                format!("*** Update File: {link}\n@@\n-secret\n+stolen\n"),
                format!("*** Update File: {link}\n*** Move to: stolen.txt\n"),
                format!("*** Add File: {link}\n+stolen\n"),
                format!("*** Update File: in.txt\n*** Move to: {link}\n"),
            ] {
                let err = apply(&fx, &recorder, &body).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{body}: {}", err.message());
                assert!(
                    recorder.asked().contains(&PermissionKind::ExternalDirectory {
                        path: outside.join("secret.txt"),
                        named: Some(fx.root().join(link)),
                    }),
                    "{body}"
                );
                assert!(is_link(&at), "{body}");
                assert!(is_gone(&fx.root().join("stolen.txt")), "{body}");
                assert_eq!(fx.read("in.txt"), b"in\n", "{body}");
            }
            // Deleting it touches only the link, so nothing outside is asked about.
            apply(&fx, &recorder, &format!("*** Delete File: {link}\n")).await.unwrap();
            assert!(is_gone(&at));
            assert_eq!(recorder.asked(), [path_request(at)]);
            assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "secret\n");
        }
        // A path whose directory is a link out of the workspace still asks, and is refused.
        symlink("../outside", fx.root().join("outdir")).unwrap();
        let err = apply(&fx, &recorder, "*** Delete File: outdir/secret.txt\n").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{}", err.message());
        assert_eq!(
            recorder.asked(),
            [PermissionKind::ExternalDirectory {
                path: outside.join("secret.txt"),
                named: Some(fx.root().join("outdir/secret.txt"))
            }]
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "secret\n");
    }

    #[tokio::test]
    async fn a_link_is_written_through_and_moving_it_moves_the_link_not_its_file() {
        let fx = Fixture::new();
        fx.write("src/a.txt", "one\ntwo\n");
        symlink("src/a.txt", fx.root().join("link")).unwrap();
        let recorder = Arc::new(Recorder::default());
        // An update writes the file the link points to; the link stays.
        apply(&fx, &recorder, "*** Update File: link\n@@\n-two\n+2\n").await.unwrap();
        assert!(is_link(&fx.root().join("link")));
        assert_eq!(fx.read("src/a.txt"), b"one\n2\n");
        // The name is asked about, then the file written through it, with the name it was given.
        let through_link =
            PermissionKind::Path { path: fx.root().join("src/a.txt"), named: Some(fx.root().join("link")) };
        assert_eq!(recorder.asked(), [path_request(fx.root().join("link")), through_link]);
        // A move: the patched content goes to the new path, the link goes, its file stays.
        let out = apply(&fx, &recorder, "*** Update File: link\n*** Move to: b.txt\n@@\n-one\n+uno\n")
            .await
            .unwrap();
        assert_eq!(
            out.text_content(),
            "Success. Updated the following files:\n\
             R link -> b.txt (link was a symbolic link to src/a.txt: the link was removed, not src/a.txt) (1 hunk)"
        );
        assert!(is_gone(&fx.root().join("link")));
        assert_eq!(fx.read("src/a.txt"), b"one\n2\n");
        assert!(!is_link(&fx.root().join("b.txt")));
        assert_eq!(fx.read("b.txt"), b"uno\n2\n");
        // Moved onto the file it points to: that file gets the patched content.
        symlink("src/a.txt", fx.root().join("link")).unwrap();
        apply(&fx, &recorder, "*** Update File: link\n*** Move to: src/a.txt\n@@\n-one\n+eins\n")
            .await
            .unwrap();
        assert!(is_gone(&fx.root().join("link")));
        assert_eq!(fx.read("src/a.txt"), b"eins\n2\n");
    }

    #[tokio::test]
    async fn after_a_section_removes_a_link_its_name_is_free() {
        let fx = Fixture::new();
        fx.write("a.txt", "a\n");
        symlink("a.txt", fx.root().join("link")).unwrap();
        let recorder = Arc::new(Recorder::default());
        // Updating it after deleting it: it no longer exists, and nothing is changed.
        let err = apply(&fx, &recorder, "*** Delete File: link\n*** Update File: link\n@@\n-a\n+b\n")
            .await
            .unwrap_err();
        assert!(
            err.message().starts_with("File 2 of the patch cannot update link: it does not exist."),
            "{}",
            err.message()
        );
        assert!(is_link(&fx.root().join("link")));
        assert_eq!(recorder.asked(), [path_request(fx.root().join("link"))]);
        // Replacing the link by a file: a regular file in its place, the file it pointed to kept.
        apply(&fx, &recorder, "*** Delete File: link\n*** Add File: link\n+own\n").await.unwrap();
        assert!(!is_link(&fx.root().join("link")));
        assert_eq!(fx.read("link"), b"own\n");
        assert_eq!(fx.read("a.txt"), b"a\n");
        // Only the name was asked about: nothing was written through the link.
        assert_eq!(recorder.asked(), [path_request(fx.root().join("link"))]);
    }

    #[tokio::test]
    async fn the_stale_write_guard_covers_what_a_link_is_read_through_not_its_removal() {
        let fx = Fixture::new();
        fx.write("a.txt", "a\n");
        symlink("a.txt", fx.root().join("link")).unwrap();
        fx.text("read", json!({"path": "a.txt"})).await;
        fx.write("a.txt", "changed outside\n");
        let recorder = Arc::new(Recorder::default());
        let err = apply(&fx, &recorder, "*** Update File: link\n*** Move to: b.txt\n").await.unwrap_err();
        assert!(err.message().contains("has changed since it was last read"), "{}", err.message());
        assert!(is_link(&fx.root().join("link")) && is_gone(&fx.root().join("b.txt")));
        let err = apply(&fx, &recorder, "*** Delete File: a.txt\n").await.unwrap_err();
        assert!(err.message().contains("has changed since it was last read"), "{}", err.message());
        // Removing the link does not touch the file: accepted.
        apply(&fx, &recorder, "*** Delete File: link\n").await.unwrap();
        assert_eq!(fx.read("a.txt"), b"changed outside\n");
    }

    /// The link is pointed out of the workspace, or its directory replaced by a link out of it,
    /// between the moment the patch was staged and the removal: the removal is by name in the
    /// parent directory, opened beneath the root, so nothing outside is touched.
    #[tokio::test]
    async fn a_link_swapped_before_its_removal_touches_nothing_outside() {
        let fx = Fixture::new();
        let outside = fx.dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("link"), "outside\n").unwrap();
        fx.write("a.txt", "a\n");
        fx.write("d/keep.txt", "keep\n");
        symlink("a.txt", fx.root().join("link")).unwrap();
        symlink("../a.txt", fx.root().join("d/link")).unwrap();
        let ctx = fx.ctx("apply_patch");
        let versions = FileVersions::default();
        let (ws, ctx, versions) = (&fx.ws, &ctx, &versions);
        let staged = |body: &str| {
            let parsed = parse_patch(&format!("*** Begin Patch\n{body}*** End Patch\n")).unwrap();
            async move {
                let paths = resolve_paths(ws, ctx, &parsed).await.unwrap();
                stage(ws.operations().as_ref(), versions, &parsed, &paths).unwrap()
            }
        };

        let plan = staged("*** Delete File: link\n").await;
        std::fs::remove_file(fx.root().join("link")).unwrap();
        symlink(outside.join("link"), fx.root().join("link")).unwrap();
        commit(fx.ws.operations().as_ref(), &plan).unwrap();
        assert!(is_gone(&fx.root().join("link")));
        assert_eq!(std::fs::read_to_string(outside.join("link")).unwrap(), "outside\n");
        assert_eq!(fx.read("a.txt"), b"a\n");

        let plan = staged("*** Delete File: d/link\n").await;
        std::fs::rename(fx.root().join("d"), fx.root().join("moved")).unwrap();
        symlink(&outside, fx.root().join("d")).unwrap();
        let err = commit(fx.ws.operations().as_ref(), &plan).unwrap_err();
        assert!(err.message().starts_with("Cannot delete d/link:"), "{}", err.message());
        assert_eq!(std::fs::read_to_string(outside.join("link")).unwrap(), "outside\n");
        assert!(is_link(&fx.root().join("moved/link")));
    }
}
