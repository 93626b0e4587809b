//! The `glob` tool: files whose path matches a pattern, newest first, ignore files honoured.

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::fs::ops::{FileKind, Target, WalkOptions};
use crate::fs::screen::Screening;
use crate::text::{excerpt, place};

/// Find files by path pattern, newest first.
///
/// Patterns use ripgrep's glob syntax, matched against paths relative to `path` (default: the
/// workspace root): `*` matches within one path component, `**` matches any number of
/// directories (`src/**/*.ts`), `?` one character, `[abc]` and `{rs,toml}` alternatives. A
/// pattern without `/` matches the file name at any depth (`*.rs` finds every Rust file); a
/// pattern with `/` is anchored at `path`. Files ignored by `.gitignore` (inside a git
/// repository or not), `.ignore` or `.rgignore` are skipped, and so are hidden files unless
/// `hidden` is true. Results are sorted by modification time, newest first, across all matches,
/// and cut at `limit` (default 100) with a notice; narrow the pattern or `path` to see others.
/// To search file contents, use `grep`.
#[tool(parallel, read_only, permission = "path", timeout = "2m", example = r#"{"pattern": "src/**/*.ts"}"#)]
pub async fn glob(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The glob pattern, e.g. `**/*.rs` or `src/**/test_*.py`.
    pattern: String,
    /// The directory to search, relative to the workspace root (default: the root).
    path: Option<String>,
    /// Include hidden files and directories (names starting with `.`).
    #[arg(default = false)]
    hidden: bool,
    /// The maximum number of paths to return.
    #[arg(default = 100)]
    #[schemars(range(min = 1))]
    limit: u32,
) -> Result<ToolOutput, ToolError> {
    let dir = ws.resolve(ctx, path.as_deref().unwrap_or("."), "search").await?;
    let pattern = pattern.trim();
    if pattern.is_empty() {
        return Err(ToolError::invalid_arguments("The pattern is empty; pass a glob such as `**/*.rs`."));
    }
    let pattern = anchor_relative(pattern, &ws.absolute(&dir.target));
    let cancel = ctx.cancellation_token().clone();
    let root = dir.target.clone();
    let display = dir.display.clone();
    let options = WalkOptions { hidden, ..WalkOptions::default() };
    // The pattern filters what the walk finds; it is not a ripgrep override, which would bring
    // back files that ignore rules or `hidden` leave out.
    let matcher = crate::fs::ops::overrides(root.path(), std::slice::from_ref(&pattern))
        .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
    let screening = Screening::new(ctx.path_screen(), ws.0.clone());
    let (mut found, screening): (Vec<(Option<SystemTime>, Target)>, Screening) = ws
        .blocking(move |ops| -> Result<_, ToolError> {
            match ops.metadata(&root) {
                Ok(info) if info.kind == FileKind::Dir => {}
                Ok(_) => {
                    return Err(ToolError::invalid_arguments(format!(
                        "{display} is a file, not a directory; pass the directory to search as path."
                    )));
                }
                Err(e) => {
                    let message = format!("Cannot search {display}: {e}");
                    return Err(ToolError::from_io(e).with_message(message));
                }
            }
            // The walk's threads read each file's time for the newest-first sort as they find it.
            // The walk's threads send what they find without taking a lock (a lock taken per
            // file makes a thread sleep whenever the other holds it); it is gathered once, after.
            let (found, gathered) = std::sync::mpsc::channel();
            let screen_open = screening.is_open();
            let screening = Mutex::new(screening);
            ops.walk_parallel(&root, &options, &|entry, file| {
                if entry.kind == FileKind::File
                    && matcher.matched(entry.path.path(), false).is_whitelist()
                    && (screen_open || lock(&screening).passes(&entry.path))
                {
                    let modified = file.symlink_metadata().ok().and_then(|info| info.modified);
                    // The receiver lives until the walk is over: the send cannot fail.
                    let _ = found.send((modified, entry.path));
                }
                !cancel.is_cancelled()
            })
            .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
            if cancel.is_cancelled() {
                return Err(ToolError::cancelled("The search was cancelled."));
            }
            drop(found);
            Ok((
                gathered.into_iter().collect(),
                screening.into_inner().unwrap_or_else(PoisonError::into_inner),
            ))
        })
        .await??;
    let screened = screening.notice("file", "listed");
    // Newest first over the whole result set; ties (and unknown times, last) by path.
    // (Paths are unique, so an unstable sort gives the one order.)
    found.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| path_order(&a.1, &b.1)));
    let total = found.len();
    if total == 0 {
        let skipped = if hidden { "Files" } else { "Hidden files and files" };
        return Ok(ToolOutput::text(format!(
            "No files match `{}` in {}. {skipped} ignored by .gitignore, .ignore or .rgignore are skipped.{screened}",
            excerpt(&pattern),
            place(&dir.display)
        ))
        .with_metadata("count", json!(0))
        .with_metadata("screened", json!(screening.count())));
    }
    let shown = total.min(limit as usize);
    let mut text =
        String::with_capacity(found[..shown].iter().map(|(_, p)| p.path().as_os_str().len() + 1).sum());
    for (_, path) in &found[..shown] {
        ws.push_display(&mut text, path);
        text.push('\n');
    }
    if shown < total {
        text.push_str(&format!(
            "\n[showing {shown} of {total} matching files, newest first; use a more specific pattern or path to see the others]"
        ));
    }
    text.push_str(&screened);
    Ok(ToolOutput::text(text)
        .with_metadata("count", json!(total))
        .with_metadata("truncated", json!(shown < total))
        .with_metadata("screened", json!(screening.count())))
}

/// The order of [`Target`]'s `Ord` (scope, then path component by component), from the bytes
/// of the paths: a target's path holds only plain names, so comparing component by component is
/// comparing the bytes with `/` below every other byte.
#[cfg(unix)]
fn path_order(a: &Target, b: &Target) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let key = |byte: &u8| if *byte == b'/' { 0 } else { u16::from(*byte) + 1 };
    a.scope().cmp(&b.scope()).then_with(|| {
        let (a, b) = (a.path().as_os_str().as_bytes(), b.path().as_os_str().as_bytes());
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        a.get(common).map(key).cmp(&b.get(common).map(key))
    })
}

#[cfg(not(unix))]
fn path_order(a: &Target, b: &Target) -> std::cmp::Ordering {
    a.cmp(b)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Makes a pattern relative to the searched directory: drops a leading `./`, and the directory
/// itself when the pattern starts with its absolute path.
fn anchor_relative(pattern: &str, dir: &Path) -> String {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    if let Some(dir) = dir.to_str()
        && let Some(rest) = pattern.strip_prefix(dir)
        && let Some(rest) = rest.strip_prefix('/')
    {
        return rest.to_owned();
    }
    pattern.to_owned()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use serde_json::json;
    use tool_runtime::ErrorKind;

    use super::*;
    use crate::testing::Fixture;

    fn touch(path: &Path, seconds_ago: u64) {
        let time = SystemTime::now() - Duration::from_secs(seconds_ago);
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(time).unwrap();
    }

    #[tokio::test]
    async fn newest_first_across_the_whole_result_set_with_limit_notice() {
        let fx = Fixture::new();
        // Written in name order, aged so that the last-walked file is the newest.
        for (i, name) in ["a/old.rs", "b/mid.rs", "c/new.rs", "d/z.txt"].iter().enumerate() {
            let path = fx.write(name, "x");
            touch(&path, 1000 - i as u64 * 100);
        }
        assert_eq!(fx.text("glob", json!({"pattern": "**/*.rs"})).await, "c/new.rs\nb/mid.rs\na/old.rs\n");
        assert_eq!(
            fx.text("glob", json!({"pattern": "*.rs", "limit": 1})).await,
            "c/new.rs\n\n[showing 1 of 3 matching files, newest first; use a more specific pattern or path to see the others]"
        );
        assert_eq!(fx.text("glob", json!({"pattern": "b/*.rs"})).await, "b/mid.rs\n");
        assert_eq!(fx.text("glob", json!({"pattern": "*.rs", "path": "a"})).await, "a/old.rs\n");
        assert_eq!(fx.text("glob", json!({"pattern": "./*/{mid,new}.rs"})).await, "c/new.rs\nb/mid.rs\n");
    }

    #[tokio::test]
    async fn gitignore_without_git_and_hidden_files() {
        let fx = Fixture::new();
        fx.write(".gitignore", "build/\n*.log\n");
        fx.write("build/out.rs", "x");
        fx.write("debug.log", "x");
        fx.write("src/lib.rs", "x");
        fx.write(".hidden/secret.rs", "x");
        fx.write(".env", "x");
        assert_eq!(fx.text("glob", json!({"pattern": "**/*"})).await, "src/lib.rs\n");
        let mut all: Vec<String> = fx
            .text("glob", json!({"pattern": "**/*", "hidden": true}))
            .await
            .lines()
            .map(str::to_owned)
            .collect();
        all.sort();
        assert_eq!(all, [".env", ".gitignore", ".hidden/secret.rs", "src/lib.rs"]);
    }

    #[tokio::test]
    async fn no_match_and_bad_pattern_messages() {
        let fx = Fixture::new();
        fx.write("a.txt", "x");
        assert_eq!(
            fx.text("glob", json!({"pattern": "*.rs"})).await,
            "No files match `*.rs` in the workspace root. Hidden files and files ignored by .gitignore, .ignore or .rgignore are skipped."
        );
        let err = fx.error("glob", json!({"pattern": "src/[a"})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert!(err.message().starts_with("invalid glob `src/[a`: "), "{}", err.message());
        let err = fx.error("glob", json!({"pattern": "*", "path": "a.txt"})).await;
        assert_eq!(err.message(), "a.txt is a file, not a directory; pass the directory to search as path.");
        let err = fx.error("glob", json!({"pattern": "*", "path": ".."})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn names_that_are_not_utf8_are_listed_quoted() {
        use std::os::unix::ffi::OsStrExt;
        let fx = Fixture::new();
        let name = std::ffi::OsStr::from_bytes(b"bad\xffname.rs");
        std::fs::write(fx.root().join(name), "needle\n").unwrap();
        fx.write("new\nline.rs", "needle\n");
        let mut lines: Vec<String> =
            fx.text("glob", json!({"pattern": "*.rs"})).await.lines().map(str::to_owned).collect();
        lines.sort();
        assert_eq!(lines, ["\"bad\\xFFname.rs\"", "\"new\\nline.rs\""]);
        let mut found: Vec<String> =
            fx.text("grep", json!({"pattern": "needle"})).await.lines().map(str::to_owned).collect();
        found.sort();
        assert_eq!(found, ["", "  1: needle", "  1: needle", "\"bad\\xFFname.rs\"", "\"new\\nline.rs\""]);
        assert_eq!(fx.text("ls", json!({})).await, "./\n  \"bad\\xFFname.rs\"\n  \"new\\nline.rs\"\n");
    }

    #[cfg(unix)]
    #[test]
    fn the_fast_path_order_is_the_order_of_targets() {
        use std::os::unix::ffi::OsStrExt;
        let names: Vec<&[u8]> = vec![
            b"a", b"a/b", b"a.b", b"a-b/c", b"ab", b"a/b/c", b"a/b.c", b"a0", b"A", b"a\xff", b"a/\xff",
            b"b", b"a/a",
        ];
        let mut targets: Vec<Target> =
            names.iter().map(|n| Target::root().join(std::ffi::OsStr::from_bytes(n))).collect();
        targets.push(Target::outside("/a/b".into()));
        targets.push(Target::outside("/a.b".into()));
        let mut by_ord = targets.clone();
        by_ord.sort();
        let mut fast = targets;
        fast.sort_by(path_order);
        assert_eq!(fast, by_ord);
    }

    #[test]
    fn absolute_patterns_are_made_relative() {
        assert_eq!(anchor_relative("/ws/src/*.rs", Path::new("/ws")), "src/*.rs");
        assert_eq!(anchor_relative("./src/*.rs", Path::new("/ws")), "src/*.rs");
        assert_eq!(anchor_relative("/wsx/*.rs", Path::new("/ws")), "/wsx/*.rs");
    }
}
