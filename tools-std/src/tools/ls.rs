//! The `ls` tool: a directory as an indented tree, breadth-first within a limit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::fs::ops::{FileKind, WalkOptions};
use crate::fs::screen::Screening;
use crate::text::{display_path, place, plural};

/// At most this many entries are read from one tree.
pub const MAX_ENTRIES_READ: usize = 200_000;

/// List a directory of the workspace as a tree.
///
/// Shows `path` (default: the workspace root) and everything below it, two spaces of
/// indentation per level, directories first and marked with a trailing `/`. Hidden entries are
/// shown, but `.git` and files ignored by `.gitignore` (inside a git repository or not),
/// `.ignore` or `.rgignore` are not; `ignore` adds glob patterns to leave out (`*.log`,
/// `fixtures/`). At most `limit` entries (default 500) are shown, the shallowest first, so a
/// large tree shows its top levels whole; a directory with entries not shown gets a
/// `… N more` line, and a notice says how to see them (list a subdirectory, or add ignore
/// patterns). To find files by name, `glob` is faster.
#[tool(parallel, read_only, permission = "path", timeout = "1m")]
pub async fn ls(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The directory to list, relative to the workspace root (default: the root).
    path: Option<String>,
    /// Glob patterns of entries to leave out, e.g. `["*.log", "dist/"]`.
    ignore: Option<Vec<String>>,
    /// The maximum number of entries to show.
    #[arg(default = 500)]
    #[schemars(range(min = 1))]
    limit: u32,
) -> Result<ToolOutput, ToolError> {
    let dir = ws.resolve(ctx, path.as_deref().unwrap_or("."), "list").await?;
    let globs: Vec<String> = ignore
        .unwrap_or_default()
        .iter()
        .map(|g| g.trim())
        .filter(|g| !g.is_empty())
        .map(|g| format!("!{}", g.strip_prefix('!').unwrap_or(g)))
        .collect();
    let cancel = ctx.cancellation_token().clone();
    let root = dir.target.clone();
    let display = dir.display.clone();
    let mut screening = Screening::new(ctx.path_screen(), ws.0.clone());
    let (entries, complete, hidden, screening) = ws
        .blocking(move |ops| -> Result<_, ToolError> {
            match ops.metadata(&root) {
                Ok(info) if info.kind == FileKind::Dir => {}
                Ok(_) => {
                    return Err(ToolError::invalid_arguments(format!(
                        "{display} is a file, not a directory; use `read` to see its content."
                    )));
                }
                Err(e) => {
                    let message = format!("Cannot list {display}: {e}");
                    return Err(ToolError::from_io(e).with_message(message));
                }
            }
            let options =
                WalkOptions { hidden: true, globs, report_excluded: true, ..WalkOptions::default() };
            let mut entries = Vec::new();
            let mut hidden = 0usize;
            ops.walk(&root, &options, &mut |entry| {
                if entry.excluded {
                    hidden += 1;
                } else if screening.passes(&entry.path) {
                    entries.push((entry.depth, entry.path.path().to_path_buf(), entry.kind == FileKind::Dir));
                }
                entries.len() < MAX_ENTRIES_READ && !cancel.is_cancelled()
            })
            .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
            if cancel.is_cancelled() {
                return Err(ToolError::cancelled("The listing was cancelled."));
            }
            let complete = entries.len() < MAX_ENTRIES_READ;
            Ok((entries, complete, hidden, screening))
        })
        .await??;

    let header = if dir.display == "." { "./".to_owned() } else { format!("{}/", dir.display) };
    let mut notes = String::new();
    if hidden > 0 {
        notes.push_str(&format!("\n[{} hidden by the ignore patterns]", plural(hidden as u64, "entry")));
    }
    notes.push_str(&screening.notice("entry", "listed"));
    if entries.is_empty() {
        let text = if notes.is_empty() {
            format!("{header}\n[{} is empty]", place(&dir.display))
        } else {
            format!("{header}\n[every entry of {} is hidden]{notes}", place(&dir.display))
        };
        return Ok(ToolOutput::text(text)
            .with_metadata("entries", json!(0))
            .with_metadata("hidden", json!(hidden))
            .with_metadata("screened", json!(screening.count())));
    }
    let total = entries.len();
    let tree = Tree::new(dir.target.path(), entries, limit as usize);
    let mut text = header;
    text.push('\n');
    tree.render(dir.target.path(), 1, &mut text);
    if tree.shown < total {
        let total = if complete { total.to_string() } else { format!("more than {total}") };
        text.push_str(&format!(
            "\n[showing {} of {total} entries, shallowest first; list a subdirectory or add ignore patterns to see more]",
            tree.shown
        ));
    }
    text.push_str(&notes);
    Ok(ToolOutput::text(text)
        .with_metadata("entries", json!(total))
        .with_metadata("shown", json!(tree.shown))
        .with_metadata("hidden", json!(hidden))
        .with_metadata("screened", json!(screening.count())))
}

/// The entries chosen for display, by parent directory.
struct Tree {
    /// Children of each directory: (is_dir, name, full path), sorted for display.
    children: BTreeMap<PathBuf, Vec<(bool, PathBuf)>>,
    /// How many children each directory has in all.
    counts: BTreeMap<PathBuf, usize>,
    shown: usize,
}

impl Tree {
    fn new(root: &Path, mut entries: Vec<(usize, PathBuf, bool)>, limit: usize) -> Self {
        let mut counts: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for (_, path, _) in &entries {
            if let Some(parent) = path.parent() {
                *counts.entry(parent.to_path_buf()).or_default() += 1;
            }
        }
        // Breadth-first: every entry of one level before any of the next, so the parent of a
        // chosen entry is always chosen.
        entries.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        entries.truncate(limit);
        let shown = entries.len();
        let mut children: BTreeMap<PathBuf, Vec<(bool, PathBuf)>> = BTreeMap::new();
        for (_, path, is_dir) in entries {
            let parent = path.parent().unwrap_or(root).to_path_buf();
            children.entry(parent).or_default().push((is_dir, path));
        }
        for list in children.values_mut() {
            list.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        }
        Tree { children, counts, shown }
    }

    fn render(&self, dir: &Path, depth: usize, out: &mut String) {
        let indent = "  ".repeat(depth);
        let list = self.children.get(dir).map(Vec::as_slice).unwrap_or_default();
        for (is_dir, path) in list {
            let name = path.file_name().map(Path::new).unwrap_or(path);
            out.push_str(&indent);
            out.push_str(&display_path(name));
            if *is_dir {
                out.push('/');
            }
            out.push('\n');
            if *is_dir {
                self.render(path, depth + 1, out);
            }
        }
        let hidden = self.counts.get(dir).copied().unwrap_or(0).saturating_sub(list.len());
        if hidden > 0 {
            out.push_str(&format!("{indent}… {hidden} more\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ErrorKind;

    use crate::testing::Fixture;

    #[tokio::test]
    async fn tree_with_directories_marked_and_ignores() {
        let fx = Fixture::new();
        for name in
            ["src/main.rs", "src/tools/read.rs", "README.md", ".github/ci.yml", "debug.log", "target/x"]
        {
            fx.write(name, "x");
        }
        fx.write(".gitignore", "target/\n");
        std::fs::create_dir_all(fx.root().join(".git/objects")).unwrap();
        assert_eq!(
            fx.text("ls", json!({})).await,
            "./\n  .github/\n    ci.yml\n  src/\n    tools/\n      read.rs\n    main.rs\n  .gitignore\n  README.md\n  debug.log\n"
        );
        assert_eq!(
            fx.text("ls", json!({"path": "src", "ignore": ["*.log", "tools/"]})).await,
            "src/\n  main.rs\n\n[1 entry hidden by the ignore patterns]"
        );
        assert_eq!(
            fx.text("ls", json!({"ignore": ["*.log", ".github", "src"]})).await,
            "./\n  .gitignore\n  README.md\n\n[3 entries hidden by the ignore patterns]"
        );
    }

    #[tokio::test]
    async fn read_rules_stop_the_entries_a_listing_finds() {
        let fx = Fixture::new();
        fx.write(".env", "x");
        fx.write("secrets/key.txt", "x");
        fx.write("src/a.txt", "x");
        let policy = crate::tools::grep::tests::read_rules(&fx);
        let out = fx.call_with(fx.ctx_with("ls", policy.clone()), "ls", json!({})).await.unwrap();
        assert_eq!(
            out.text_content(),
            "./\n  src/\n    a.txt\n\n[1 entry not listed: refused by the rule `deny Read(./.env)` in the rules \
             given in code.]\n[2 entries not listed: the rule `ask Read(./secrets/**)` in the rules given in code \
             says to ask first, and nobody can be asked about each file a search or listing finds. Name one as path \
             to be asked about it.]"
        );
        assert_eq!(out.metadata["screened"], json!(3));
        let out = fx
            .call_with(fx.ctx_with("glob", policy), "glob", json!({"pattern": "**/*", "hidden": true}))
            .await
            .unwrap();
        assert_eq!(
            out.text_content(),
            "src/a.txt\n\n[1 file not listed: refused by the rule `deny Read(./.env)` in the rules given in code.]\
             \n[1 file not listed: the rule `ask Read(./secrets/**)` in the rules given in code says to ask first, \
             and nobody can be asked about each file a search or listing finds. Name one as path to be asked about \
             it.]"
        );
    }

    #[tokio::test]
    async fn limit_is_breadth_first_with_notice() {
        let fx = Fixture::new();
        for name in ["a/deep/1.txt", "a/deep/2.txt", "b.txt", "c.txt"] {
            fx.write(name, "x");
        }
        assert_eq!(
            fx.text("ls", json!({"limit": 4})).await,
            "./\n  a/\n    deep/\n      … 2 more\n  b.txt\n  c.txt\n\n[showing 4 of 6 entries, shallowest first; list a subdirectory or add ignore patterns to see more]"
        );
    }

    #[tokio::test]
    async fn odd_names_empty_dirs_and_errors() {
        let fx = Fixture::new();
        fx.write("dir/new\nline.txt", "x");
        fx.write("dir/with space.txt", "x");
        assert_eq!(
            fx.text("ls", json!({"path": "dir"})).await,
            "dir/\n  \"new\\nline.txt\"\n  with space.txt\n"
        );
        std::fs::create_dir_all(fx.root().join("empty")).unwrap();
        assert_eq!(fx.text("ls", json!({"path": "empty"})).await, "empty/\n[empty is empty]");
        // Every entry hidden by the ignore patterns: not an empty directory.
        let out = fx.call("ls", json!({"path": "dir", "ignore": ["*.txt"]})).await.unwrap();
        assert_eq!(
            out.text_content(),
            "dir/\n[every entry of dir is hidden]\n[2 entries hidden by the ignore patterns]"
        );
        assert_eq!(out.metadata["hidden"], json!(2));
        let err = fx.error("ls", json!({"path": "dir/with space.txt"})).await;
        assert_eq!(
            err.message(),
            "dir/with space.txt is a file, not a directory; use `read` to see its content."
        );
        let err = fx.error("ls", json!({"path": "nope"})).await;
        assert_eq!(err.kind(), ErrorKind::NotFound);
        let err = fx.error("ls", json!({"path": ".."})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    }
}
