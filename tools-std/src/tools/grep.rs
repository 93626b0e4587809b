//! The `grep` tool: regex search over file contents with ripgrep's own crates, grouped by file, newest first.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Bytes;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::fs::ops::{FileKind, Target, WalkOptions};
use crate::fs::screen::Screening;
use crate::text::{clip, cut_line, excerpt, place, plural};

/// Matching lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 500;
/// A file with a line longer than this many bytes is skipped (and named in the result), so a
/// search holds at most this much of one file in memory.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Whether a search stopped at a line longer than [`MAX_LINE_BYTES`] (grep-searcher's heap
/// limit, which it reports as a plain I/O error).
pub(crate) fn line_too_long(error: &std::io::Error) -> bool {
    error.to_string().contains("allocation limit")
}

/// Search file contents with a regular expression, like ripgrep.
///
/// `pattern` uses Rust regex syntax (as ripgrep does: `fn\s+main`, `\bfoo\b`, `(?i)` inline
/// flags; escape `{`, `(`, `.` and friends to match them literally); a match never spans lines.
/// Searches `path` (a directory or one file, default: the workspace root), optionally only files
/// matching `glob` (ripgrep `--glob` syntax, e.g. `*.rs` or `src/**/*.{ts,tsx}`). Like ripgrep,
/// it skips hidden files, binary files and files ignored by `.gitignore` (inside a git
/// repository or not), `.ignore` or `.rgignore`; a file that `glob` names explicitly is
/// searched even so. Output: each matching file (newest first) on
/// its own line, then its matching lines as `  <line number>: <text>`; lines longer than 500
/// characters are cut. At most `limit` lines (default 100) are shown, with a notice giving the
/// total; narrow `path`, `glob` or the pattern to see the rest, or `read` a file around a line.
/// To find files by name, use `glob`.
#[tool(
    parallel,
    read_only,
    permission = "path",
    timeout = "2m",
    example = r#"{"pattern": "fn\\s+main", "glob": "*.rs"}"#,
    example = r#"{"pattern": "todo", "path": "src", "ignore_case": true, "limit": 20}"#
)]
pub async fn grep(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The regular expression to search for.
    pattern: String,
    /// The directory or file to search, relative to the workspace root (default: the root).
    path: Option<String>,
    /// Only search files whose path matches this glob, e.g. `*.rs`.
    glob: Option<String>,
    /// Match without regard to case.
    #[arg(default = false)]
    ignore_case: bool,
    /// The maximum number of matching lines to show.
    #[arg(default = 100)]
    #[schemars(range(min = 1))]
    limit: u32,
) -> Result<ToolOutput, ToolError> {
    let target = ws.resolve(ctx, path.as_deref().unwrap_or("."), "search").await?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .multi_line(true)
        .octal(false)
        .line_terminator(Some(b'\n'))
        .build(&pattern)
        .map_err(|e| {
            ToolError::invalid_arguments(format!("Invalid regular expression: {}", clip(&e.to_string())))
        })?;
    let globs: Vec<String> = glob.iter().map(|g| g.trim().to_owned()).filter(|g| !g.is_empty()).collect();
    let cancel = ctx.cancellation_token().clone();
    let workspace = ws.0.clone();
    let root = target.target.clone();
    let display = target.display.clone();
    let limit = limit.max(1) as usize;
    let screening = Screening::new(ctx.path_screen(), ws.0.clone());
    let result = ws
        .blocking(move |ops| -> Result<(Found, Screening), ToolError> {
            let info = ops.metadata(&root).map_err(|e| {
                let message = format!("Cannot search {display}: {e}");
                ToolError::from_io(e).with_message(message)
            })?;
            if info.kind == FileKind::Other {
                return Err(ToolError::invalid_arguments(format!(
                    "{display} is {}, not a regular file; grep searches files and directories.",
                    FileKind::Other.describe()
                )));
            }
            let mut searcher = new_searcher();
            if info.kind != FileKind::Dir {
                // The file the model named: an error says why it cannot be searched.
                let mut found = Found::default();
                let cannot = |e: std::io::Error| {
                    let message = format!("Cannot search {display}: {e}.");
                    ToolError::from_io(e).with_message(message)
                };
                let reader = ops.open(&root).map_err(cannot)?;
                let searched = search_one(&mut searcher, &matcher, reader, limit, true).map_err(cannot)?;
                found.add(searched, limit, || workspace.display(&root));
                return Ok((found, screening));
            }
            // Each file is searched in the walk's thread that found it; the results are put in
            // the promised order (newest first, then by path) as they come.
            drop(searcher);
            let results = Mutex::new(Results::new(limit));
            let screen_open = screening.is_open();
            let screening = Mutex::new(screening);
            let options = WalkOptions { globs, ..WalkOptions::default() };
            ops.walk_parallel(&root, &options, &|entry, file| {
                if cancel.is_cancelled() {
                    return false;
                }
                if entry.kind != FileKind::File || !(screen_open || lock(&screening).passes(&entry.path)) {
                    return true;
                }
                // An unreadable file found by the walk is skipped, as ripgrep skips it.
                if let Ok((reader, info)) = file.open() {
                    // Each walk thread keeps one searcher (and its buffers) for all its files.
                    let searched = SEARCHER.with_borrow_mut(|searcher| {
                        let searcher = searcher.get_or_insert_with(new_searcher);
                        search_one(searcher, &matcher, reader, limit, false).unwrap_or(Searched::Skipped)
                    });
                    if !matches!(searched, Searched::NoMatch) {
                        lock(&results).add(info.modified, entry.path, searched);
                    }
                }
                true
            })
            .map_err(|e| ToolError::invalid_arguments(e.to_string()))?;
            if cancel.is_cancelled() {
                return Err(ToolError::cancelled("The search was cancelled."));
            }
            let screening = screening.into_inner().unwrap_or_else(PoisonError::into_inner);
            let results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
            let mut found = Found::default();
            for ((_, path), searched) in results.files {
                found.add(searched, limit, || workspace.display(&path));
            }
            Ok((found, screening))
        })
        .await??;
    let (result, screening) = result;

    let skipped = skipped_notice(&result.skipped) + &screening.notice("file", "searched");
    if result.total == 0 {
        return Ok(ToolOutput::text(format!(
            "No matches for `{}` in {}. Hidden files, binary files and files ignored by .gitignore, .ignore or .rgignore are not searched.{skipped}",
            excerpt(&pattern),
            place(&target.display)
        ))
        .with_metadata("matches", json!(0))
        .with_metadata("screened", json!(screening.count())));
    }
    // One string of the right size, each line appended without the formatting machinery.
    let size: usize = result
        .groups
        .iter()
        .map(|(file, lines)| file.len() + 2 + lines.iter().map(|(_, line)| line.len() + 24).sum::<usize>())
        .sum();
    let mut text = String::with_capacity(size);
    for (i, (file, lines)) in result.groups.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(file);
        text.push('\n');
        for (line_number, line) in lines {
            text.push_str("  ");
            text.push_str(itoa::Buffer::new().format(*line_number));
            text.push_str(": ");
            text.push_str(line);
            text.push('\n');
        }
    }
    if result.shown < result.total {
        let _ = write!(
            text,
            "\n[showing {} of {} in {}, newest files first; narrow the search with path, glob or a more specific pattern to see the rest]",
            result.shown,
            plural(result.total as u64, "matching line"),
            plural(result.files as u64, "file")
        );
    }
    text.push_str(&skipped);
    Ok(ToolOutput::text(text)
        .with_metadata("matches", json!(result.total))
        .with_metadata("files", json!(result.files))
        .with_metadata("truncated", json!(result.shown < result.total))
        .with_metadata("screened", json!(screening.count())))
}

#[derive(Debug, Default)]
struct Found {
    /// Files with matches, newest first, each with the lines shown from it.
    groups: Vec<(String, Vec<(u64, String)>)>,
    shown: usize,
    total: usize,
    files: usize,
    /// Files that could not be searched to the end.
    skipped: Vec<String>,
}

impl Found {
    /// Adds the next file's result, in the order the files are shown.
    fn add(&mut self, searched: Searched, limit: usize, display: impl FnOnce() -> String) {
        match searched {
            Searched::NoMatch => {}
            Searched::Skipped => self.skipped.push(display()),
            Searched::Matches { count, mut shown } => {
                self.total += count;
                self.files += 1;
                shown.truncate(limit.saturating_sub(self.shown));
                self.shown += shown.len();
                if !shown.is_empty() {
                    self.groups.push((display(), shown));
                }
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The searcher of a walk's thread: its line buffer is reused from file to file.
    static SEARCHER: std::cell::RefCell<Option<grep_searcher::Searcher>> = const { std::cell::RefCell::new(None) };
}

fn new_searcher() -> grep_searcher::Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .heap_limit(Some(MAX_LINE_BYTES))
        .build()
}

/// What the search of one file found.
enum Searched {
    /// `count` matching lines, the first of them (as many as there was room for) shown.
    Matches {
        count: usize,
        shown: Vec<(u64, String)>,
    },
    NoMatch,
    /// Not searched to the end: a line too long, or a read error.
    Skipped,
}

/// The order files are shown in: newest first, then by path (unknown times last).
type Rank = (Reverse<Option<SystemTime>>, Target);

/// Files with matches (or skipped), in the order they are shown. The lines of files that come
/// after `limit` shown lines are dropped as the results come, so memory stays near `limit`
/// lines whatever the tree holds.
struct Results {
    files: BTreeMap<Rank, Searched>,
    limit: usize,
    /// Lines held in `files`, and the count at which they are trimmed next.
    held: usize,
    trim_at: usize,
}

impl Results {
    fn new(limit: usize) -> Self {
        Results { files: BTreeMap::new(), limit, held: 0, trim_at: limit.saturating_mul(2) }
    }

    fn add(&mut self, modified: Option<SystemTime>, path: Target, searched: Searched) {
        if let Searched::Matches { shown, .. } = &searched {
            self.held += shown.len();
        } else if matches!(searched, Searched::NoMatch) {
            return;
        }
        self.files.insert((Reverse(modified), path), searched);
        if self.held > self.trim_at {
            self.trim();
        }
    }

    /// Drops the lines that can no longer be shown: those after the first `limit`.
    fn trim(&mut self) {
        let mut before = 0usize;
        for searched in self.files.values_mut() {
            if let Searched::Matches { shown, .. } = searched {
                shown.truncate(self.limit.saturating_sub(before));
                before += shown.len();
            }
        }
        self.held = before;
        self.trim_at = self.held.max(self.limit).saturating_mul(2);
    }
}

/// Searches one file, keeping at most `room` of its matching lines. A read error in the file
/// the model named (`explicit`) is an error. A line too long to hold in memory, or a read error
/// in a file the walk found, is [`Searched::Skipped`], so that the result says so rather than
/// pretend the file had no match.
fn search_one(
    searcher: &mut grep_searcher::Searcher,
    matcher: &grep_regex::RegexMatcher,
    reader: Box<dyn std::io::Read + Send>,
    room: usize,
    explicit: bool,
) -> std::io::Result<Searched> {
    let mut shown = Vec::new();
    let mut count = 0usize;
    let searched = searcher.search_reader(
        matcher,
        reader,
        Bytes(|line_number, bytes| {
            count += 1;
            if shown.len() < room {
                let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let text = String::from_utf8_lossy(line);
                // A line of at most MAX_LINE_CHARS bytes has at most as many characters.
                let text = if text.len() <= MAX_LINE_CHARS {
                    text
                } else {
                    cut_line(&text, MAX_LINE_CHARS, 0).into_owned().into()
                };
                shown.push((line_number, text.into_owned()));
            }
            Ok(true)
        }),
    );
    match searched {
        Err(e) if explicit && !line_too_long(&e) => Err(e),
        Err(_) => Ok(Searched::Skipped),
        Ok(()) if count == 0 => Ok(Searched::NoMatch),
        Ok(()) => Ok(Searched::Matches { count, shown }),
    }
}

fn skipped_notice(skipped: &[String]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = skipped.iter().take(10).map(String::as_str).collect();
    let more = if skipped.len() > 10 { format!(" and {} more", skipped.len() - 10) } else { String::new() };
    format!(
        "\n[{} not searched to the end (a line longer than 16 MiB, or a read error): {}{more}]",
        plural(skipped.len() as u64, "file"),
        names.join(", ")
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, SystemTime};

    use serde_json::json;
    use tool_runtime::ErrorKind;

    use crate::fs::ops::{Target, WalkOptions};
    use crate::testing::Fixture;

    fn age(path: &std::path::Path, seconds: u64) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(seconds)).unwrap();
    }

    #[tokio::test]
    async fn grouped_by_file_newest_first_with_line_numbers() {
        let fx = Fixture::new();
        age(&fx.write("old.rs", "fn main() {}\nlet x = 1;\nfn helper() {}\n"), 500);
        age(&fx.write("src/new.rs", "// nothing\nfn new() {}\r\n"), 10);
        fx.write("notes.txt", "no match here\n");
        assert_eq!(
            fx.text("grep", json!({"pattern": "fn \\w+"})).await,
            "src/new.rs\n  2: fn new() {}\n\nold.rs\n  1: fn main() {}\n  3: fn helper() {}\n"
        );
        assert_eq!(
            fx.text("grep", json!({"pattern": "fn", "glob": "src/*.rs"})).await,
            "src/new.rs\n  2: fn new() {}\n"
        );
        assert_eq!(
            fx.text("grep", json!({"pattern": "LET", "ignore_case": true})).await,
            "old.rs\n  2: let x = 1;\n"
        );
        assert_eq!(
            fx.text("grep", json!({"pattern": "helper", "path": "old.rs"})).await,
            "old.rs\n  3: fn helper() {}\n"
        );
    }

    #[test]
    fn results_keep_the_first_lines_in_the_promised_order_whatever_order_they_come_in() {
        use super::{Found, Results, Searched};
        let at = |seconds: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds));
        let lines = |n: u64| Searched::Matches {
            count: n as usize,
            shown: (1..=n).map(|i| (i, format!("{i}"))).collect(),
        };
        let mut results = Results::new(5);
        // Older files first, as a walk may find them; enough of them to be trimmed many times.
        for i in 0..200u64 {
            results.add(at(i), Target::root().join(format!("f{i:03}")), lines(2));
        }
        results.add(None, Target::root().join("unknown"), lines(2));
        results.add(at(150), Target::root().join("a-tie"), lines(3));
        results.add(at(500), Target::root().join("skipped"), Searched::Skipped);
        results.add(at(600), Target::root().join("nothing"), Searched::NoMatch);
        assert!(results.held <= 4 * 5, "{} lines held", results.held);
        let mut found = Found::default();
        for ((_, path), searched) in results.files {
            found.add(searched, 5, || path.path().display().to_string());
        }
        let groups: Vec<(&str, usize)> = found.groups.iter().map(|(f, l)| (f.as_str(), l.len())).collect();
        assert_eq!(groups, [("f199", 2), ("f198", 2), ("f197", 1)]);
        assert_eq!((found.shown, found.total, found.files), (5, 2 * 201 + 3, 202));
        assert_eq!(found.skipped, ["skipped"]);
        // Two files of the same time come by path.
        let mut results = Results::new(10);
        results.add(at(1), Target::root().join("b"), lines(1));
        results.add(at(1), Target::root().join("a"), lines(1));
        let order: Vec<_> = results.files.keys().map(|(_, p)| p.path().to_path_buf()).collect();
        assert_eq!(order, [std::path::PathBuf::from("a"), "b".into()]);
    }

    #[tokio::test]
    async fn limit_notice_counts_everything() {
        let fx = Fixture::new();
        age(&fx.write("a.txt", "hit\nhit\nhit\n"), 100);
        age(&fx.write("b.txt", "hit\nhit\n"), 200);
        assert_eq!(
            fx.text("grep", json!({"pattern": "hit", "limit": 4})).await,
            "a.txt\n  1: hit\n  2: hit\n  3: hit\n\nb.txt\n  1: hit\n\n[showing 4 of 5 matching lines in 2 files, newest files first; narrow the search with path, glob or a more specific pattern to see the rest]"
        );
    }

    #[tokio::test]
    async fn long_lines_cut_binary_skipped_ignores_honoured() {
        let fx = Fixture::new();
        fx.write("wide.txt", format!("needle{}\n", "x".repeat(1000)));
        fx.write("bin.dat", b"needle\0binary");
        fx.write(".gitignore", "ignored/\n");
        fx.write("ignored/a.txt", "needle\n");
        fx.write(".hidden.txt", "needle\n");
        let text = fx.text("grep", json!({"pattern": "needle"})).await;
        assert_eq!(
            text,
            format!(
                "wide.txt\n  1: needle{}… [line truncated: showing 500 of 1006 characters]\n",
                "x".repeat(494)
            )
        );
    }

    /// A policy of `Read(./.env)` denied and `Read(./secrets/**)` asked, in code.
    pub(crate) fn read_rules(fx: &Fixture) -> std::sync::Arc<dyn tool_runtime::hooks::PermissionHook> {
        let rules = tool_runtime::permissions::Rules::builder(fx.root())
            .catalog(crate::permission_catalog())
            .deny("Read(./.env)")
            .ask("Read(./secrets/**)")
            .build()
            .unwrap();
        std::sync::Arc::new(tool_runtime::permissions::Policy::new(rules))
    }

    #[tokio::test]
    async fn read_rules_stop_the_files_a_search_finds() {
        let fx = Fixture::new();
        fx.write(".env", "TOKEN=env\n");
        fx.write("secrets/key.txt", "TOKEN=key\n");
        fx.write("secrets/deep/more.txt", "TOKEN=more\n");
        fx.write("src/a.txt", "TOKEN=fine\n");
        let policy = read_rules(&fx);
        let fx = &fx;
        let grep = |args: serde_json::Value| {
            let ctx = fx.ctx_with("grep", policy.clone());
            async move { fx.call_with(ctx, "grep", args).await }
        };
        let out = grep(json!({"pattern": "TOKEN", "glob": ".env"})).await.unwrap();
        assert_eq!(
            out.text_content(),
            "No matches for `TOKEN` in the workspace root. Hidden files, binary files and files ignored by \
             .gitignore, .ignore or .rgignore are not searched.\n[1 file not searched: refused by the rule \
             `deny Read(./.env)` in the rules given in code.]"
        );
        assert_eq!(out.metadata["screened"], json!(1));
        let text = grep(json!({"pattern": "TOKEN"})).await.unwrap().text_content();
        assert_eq!(
            text,
            "src/a.txt\n  1: TOKEN=fine\n\n[2 files not searched: the rule `ask Read(./secrets/**)` in the rules \
             given in code says to ask first, and nobody can be asked about each file a search or listing finds. \
             Name one as path to be asked about it.]"
        );
        // Named as the path, the file is asked about (and refused, with nobody to ask).
        let err = grep(json!({"pattern": "TOKEN", "path": "secrets/key.txt"})).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        let err = grep(json!({"pattern": "TOKEN", "path": "./secrets/../.env"})).await.unwrap_err();
        assert!(err.message().contains("`deny Read(./.env)`"), "{}", err.message());
        // Without rules, everything is searched.
        let all = fx.text("grep", json!({"pattern": "TOKEN", "glob": "{.env,**/*.txt}"})).await;
        assert_eq!(all.matches("TOKEN=").count(), 4, "{all}");
    }

    /// Local operations, except that opening a file named `name` fails as an unreadable file
    /// does (root reads files whatever their mode, so the mode cannot stand for it here).
    struct Unreadable(crate::LocalOperations, &'static str);

    impl crate::Operations for Unreadable {
        fn metadata(&self, path: &Target) -> std::io::Result<crate::fs::ops::FileInfo> {
            self.0.metadata(path)
        }
        fn symlink_metadata(&self, path: &Target) -> std::io::Result<crate::fs::ops::FileInfo> {
            self.0.symlink_metadata(path)
        }
        fn read_link(&self, path: &Target) -> std::io::Result<std::path::PathBuf> {
            self.0.read_link(path)
        }
        fn open(&self, path: &Target) -> std::io::Result<Box<dyn std::io::Read + Send>> {
            if path.file_name().is_some_and(|name| name == self.1) {
                return Err(std::io::Error::from_raw_os_error(13));
            }
            self.0.open(path)
        }
        fn read_dir(&self, path: &Target) -> std::io::Result<Vec<crate::fs::ops::DirEntry>> {
            self.0.read_dir(path)
        }
        fn create_dir_all(&self, path: &Target) -> std::io::Result<()> {
            self.0.create_dir_all(path)
        }
        fn write_atomic(
            &self,
            path: &Target,
            contents: &[u8],
            check: crate::fs::ops::Precondition,
        ) -> std::io::Result<crate::fs::ops::Written> {
            self.0.write_atomic(path, contents, check)
        }
        fn walk(
            &self,
            root: &Target,
            options: &WalkOptions,
            visit: &mut dyn FnMut(crate::fs::ops::WalkEntry) -> bool,
        ) -> std::io::Result<()> {
            self.0.walk(root, options, visit)
        }
        fn spawn_shell(
            &self,
            request: &crate::fs::ops::ShellRequest,
        ) -> std::io::Result<crate::fs::ops::ShellProcess> {
            self.0.spawn_shell(request)
        }
    }

    #[tokio::test]
    async fn a_named_file_that_cannot_be_read_is_an_error() {
        let fx = Fixture::new();
        fx.write("locked.txt", "needle\n");
        let ops = Unreadable(crate::LocalOperations::open(fx.root()).unwrap(), "locked.txt");
        let ws = crate::Workspace::with_operations(fx.root(), std::sync::Arc::new(ops)).unwrap();
        let mut deps = tool_runtime::context::Dependencies::new();
        deps.insert(ws);
        let deps = std::sync::Arc::new(deps);
        let ctx = || tool_runtime::ToolContext::builder("grep").dependencies(deps.clone()).build();
        let err = fx
            .call_with(ctx(), "grep", json!({"pattern": "needle", "path": "locked.txt"}))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        assert_eq!(err.message(), "Cannot search locked.txt: Permission denied (os error 13).");
        // Found by a walk, it is skipped as ripgrep skips it.
        let out = fx.call_with(ctx(), "grep", json!({"pattern": "needle"})).await.unwrap();
        assert!(out.text_content().starts_with("No matches"), "{}", out.text_content());
    }

    #[tokio::test]
    async fn errors_and_no_matches() {
        let fx = Fixture::new();
        fx.write("a.txt", "x\n");
        let err = fx.error("grep", json!({"pattern": "("})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert!(err.message().starts_with("Invalid regular expression: "), "{}", err.message());
        assert_eq!(
            fx.text("grep", json!({"pattern": "zzz"})).await,
            "No matches for `zzz` in the workspace root. Hidden files, binary files and files ignored by .gitignore, .ignore or .rgignore are not searched."
        );
        let err = fx.error("grep", json!({"pattern": "x", "path": "missing"})).await;
        assert_eq!(err.kind(), ErrorKind::NotFound);
        let err = fx.error("grep", json!({"pattern": "x", "path": "/"})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    }
}
