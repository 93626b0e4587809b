//! The `grep` tool: regex search over file contents with ripgrep's own crates, grouped by file, newest first.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::types::TypesBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::fs::ops::{FileKind, Target, WalkOptions};
use crate::fs::screen::Screening;
use crate::text::{clip, cut_line, excerpt, place, plural, similar_names};

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
/// flags; escape `{`, `(`, `.` and friends to match them literally); a match never spans lines
/// unless `multiline` is on. Searches `path` (a directory or one file, default: the workspace
/// root), optionally only files matching `glob` (ripgrep `--glob` syntax, e.g. `*.rs` or
/// `src/**/*.{ts,tsx}`) or of the ripgrep file `type` (`rust`, `py`, `ts`, ...). Like ripgrep,
/// it skips hidden files, binary files and files ignored by `.gitignore` (inside a git
/// repository or not), `.ignore` or `.rgignore`; a file that `glob` names explicitly is
/// searched even so. `output_mode`: `content` (default) shows each matching file (newest
/// first) on its own line, then its matching lines as `  <line number>: <text>` (context lines
/// from `before`, `after` or `context` as `  <line number>- <text>`); lines longer than 500
/// characters are cut. `files_with_matches` lists the files only, `count` each file with its
/// number of matching lines. At most `limit` lines (or files; default 100) are shown after
/// skipping `offset`, with a notice giving the total and the next offset; narrow `path`, `glob`
/// or the pattern, or `read` a file around a line. To find files by name, use `glob`.
#[tool(
    parallel,
    read_only,
    permission = "path",
    timeout = "2m",
    example = r#"{"pattern": "fn\\s+main", "glob": "*.rs"}"#,
    example = r#"{"pattern": "todo", "path": "src", "ignore_case": true, "limit": 20}"#
)]
#[allow(clippy::too_many_arguments)]
pub async fn grep(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The regular expression to search for.
    pattern: String,
    /// The directory or file to search, relative to the workspace root (default: the root).
    path: Option<String>,
    /// Only search files whose path matches this glob, e.g. `*.rs`.
    glob: Option<String>,
    /// Only search files of this type, by ripgrep's type names (`rust`, `py`, `js`, `ts`, `go`,
    /// `java`, `c`, `cpp`, `md`, ...).
    #[arg(alias = "type")]
    file_type: Option<String>,
    /// What to show: `content` (matching lines, the default), `files_with_matches` (the files'
    /// paths) or `count` (each file's number of matching lines).
    output_mode: Option<OutputMode>,
    /// Match without regard to case.
    #[arg(default = false, alias = "-i", alias = "case_insensitive")]
    ignore_case: bool,
    /// Lines of context to show before each matching line (content mode).
    #[arg(alias = "-B")]
    before: Option<u32>,
    /// Lines of context to show after each matching line (content mode).
    #[arg(alias = "-A")]
    after: Option<u32>,
    /// Lines of context to show before and after each matching line (content mode).
    #[arg(alias = "-C")]
    context: Option<u32>,
    /// Show line numbers in content mode.
    #[arg(default = true, alias = "-n")]
    line_numbers: bool,
    /// Let a match span lines: `.` matches a line break too, and `\n` can be in the pattern.
    #[arg(default = false)]
    multiline: bool,
    /// Skip this many lines (or files, outside content mode) of the result before showing
    /// `limit` of them: the next page of a long result.
    #[arg(default = 0)]
    offset: u32,
    /// The maximum number of lines (or files, outside content mode) to show.
    #[arg(default = 100, alias = "head_limit")]
    #[schemars(range(min = 1))]
    limit: u32,
) -> Result<ToolOutput, ToolError> {
    let target = ws.resolve(ctx, path.as_deref().unwrap_or("."), "search").await?;
    let mode = output_mode.unwrap_or_default();
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .multi_line(true)
        .dot_matches_new_line(multiline)
        .octal(false)
        .line_terminator(if multiline { None } else { Some(b'\n') })
        .build(&pattern)
        .map_err(|e| {
            ToolError::invalid_arguments(format!("Invalid regular expression: {}", clip(&e.to_string())))
        })?;
    let types = file_type.as_deref().map(file_types).transpose()?;
    let globs: Vec<String> = glob.iter().map(|g| g.trim().to_owned()).filter(|g| !g.is_empty()).collect();
    let context = context.unwrap_or(0);
    let config = SearchConfig {
        before: if mode == OutputMode::Content { before.unwrap_or(context) as usize } else { 0 },
        after: if mode == OutputMode::Content { after.unwrap_or(context) as usize } else { 0 },
        multi_line: multiline,
    };
    let page = Page { mode, offset: offset as usize, limit: limit.max(1) as usize };
    let cancel = ctx.cancellation_token().clone();
    let workspace = ws.0.clone();
    let root = target.target.clone();
    let display = target.display.clone();
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
            if info.kind != FileKind::Dir {
                // The file the model named: an error says why it cannot be searched.
                let mut found = Found::new(page);
                let cannot = |e: std::io::Error| {
                    let message = format!("Cannot search {display}: {e}.");
                    ToolError::from_io(e).with_message(message)
                };
                let reader = ops.open(&root).map_err(cannot)?;
                let mut searcher = config.searcher();
                let searched = search_one(&mut searcher, &matcher, reader, page.mode, page.room(), true)
                    .map_err(cannot)?;
                found.add(searched, || workspace.display(&root));
                return Ok((found, screening));
            }
            // Each file is searched in the walk's thread that found it; the results are put in
            // the promised order (newest first, then by path) as they come.
            let results = Mutex::new(Results::new(page.room()));
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
                if let Some(types) = &types
                    && !types
                        .matched(Path::new(entry.path.file_name().unwrap_or_default()), false)
                        .is_whitelist()
                {
                    return true;
                }
                // An unreadable file found by the walk is skipped, as ripgrep skips it.
                if let Ok((reader, info)) = file.open() {
                    // Each walk thread keeps one searcher (and its buffers) for all its files.
                    let searched = SEARCHER.with_borrow_mut(|cached| {
                        let searcher = match cached {
                            Some((made_for, searcher)) if *made_for == config => searcher,
                            _ => &mut cached.insert((config, config.searcher())).1,
                        };
                        search_one(searcher, &matcher, reader, page.mode, page.room(), false)
                            .unwrap_or(Searched::Skipped)
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
            let mut found = Found::new(page);
            for ((_, path), searched) in results.files {
                found.add(searched, || workspace.display(&path));
            }
            Ok((found, screening))
        })
        .await??;
    let (result, screening) = result;

    let skipped = skipped_notice(&result.skipped) + &screening.notice("file", "searched");
    if result.files == 0 {
        return Ok(ToolOutput::text(format!(
            "No matches for `{}` in {}. Hidden files, binary files and files ignored by .gitignore, .ignore or .rgignore are not searched.{skipped}",
            excerpt(&pattern),
            place(&target.display)
        ))
        .with_metadata("matches", json!(0))
        .with_metadata("screened", json!(screening.count())));
    }
    let with_context = config.before > 0 || config.after > 0;
    let mut text = result.render(line_numbers, with_context);
    let notice = result.notice(with_context);
    if let Some(notice) = &notice {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(notice);
    }
    text.push_str(&skipped);
    Ok(ToolOutput::text(text)
        .with_metadata("matches", json!(result.matching))
        .with_metadata("files", json!(result.files))
        .with_metadata("truncated", json!(result.shown < result.entries))
        .with_metadata("screened", json!(screening.count())))
}

/// What `grep` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines, grouped by file.
    #[default]
    Content,
    /// The paths of the files with a match.
    FilesWithMatches,
    /// Each file with its number of matching lines.
    Count,
}

/// The file types ripgrep knows (`rust`, `py`, ...), with `name` selected.
fn file_types(name: &str) -> Result<ignore::types::Types, ToolError> {
    let mut builder = TypesBuilder::new();
    builder.add_defaults();
    let name = name.trim();
    if !builder.definitions().iter().any(|def| def.name() == name) {
        let known: Vec<String> = builder.definitions().iter().map(|def| def.name().to_owned()).collect();
        let similar = similar_names(name, known.iter().map(String::as_str));
        let hint = if similar.is_empty() {
            "for example rust, py, js, ts, go, java, c, cpp, md, json, yaml, toml or sh".to_owned()
        } else {
            format!("did you mean {}?", similar.join(", "))
        };
        return Err(ToolError::invalid_arguments(format!(
            "Unknown file type `{}` ({hint}); `type` takes ripgrep's type names, or use `glob` with a pattern such as `*.ext`.",
            excerpt(name)
        )));
    }
    builder.select(name);
    builder
        .build()
        .map_err(|e| ToolError::invalid_arguments(format!("Unknown file type `{}`: {e}", excerpt(name))))
}

/// Which part of the result is shown.
#[derive(Debug, Clone, Copy)]
struct Page {
    mode: OutputMode,
    offset: usize,
    limit: usize,
}

impl Page {
    /// How many lines of the result, from its start, must be kept to show this page.
    fn room(&self) -> usize {
        self.offset.saturating_add(self.limit)
    }
}

/// How each file is searched: what the searcher of a walk's thread is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SearchConfig {
    before: usize,
    after: usize,
    multi_line: bool,
}

impl SearchConfig {
    fn searcher(&self) -> grep_searcher::Searcher {
        SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .heap_limit(Some(MAX_LINE_BYTES))
            .before_context(self.before)
            .after_context(self.after)
            .multi_line(self.multi_line)
            .build()
    }
}

/// One line shown from a file: its number, its text (cut), and whether it matched (or is
/// context).
#[derive(Debug)]
struct Line {
    number: u64,
    text: String,
    matched: bool,
}

#[derive(Debug)]
struct Found {
    page: Page,
    /// Files shown, newest first, each with its lines shown (content mode) and its number of
    /// matching lines.
    groups: Vec<(String, Vec<Line>, usize)>,
    /// Entries of the result (lines in content mode, files otherwise): in all, and shown.
    entries: usize,
    shown: usize,
    /// Matching lines and files with a match, in all.
    matching: usize,
    files: usize,
    /// Files that could not be searched to the end.
    skipped: Vec<String>,
}

impl Found {
    fn new(page: Page) -> Self {
        Found { page, groups: Vec::new(), entries: 0, shown: 0, matching: 0, files: 0, skipped: Vec::new() }
    }

    /// Adds the next file's result, in the order the files are shown.
    fn add(&mut self, searched: Searched, display: impl FnOnce() -> String) {
        let Page { mode, offset, limit } = self.page;
        let end = offset.saturating_add(limit);
        match searched {
            Searched::NoMatch => {}
            Searched::Skipped => self.skipped.push(display()),
            Searched::Matches { count, entries, mut shown } => {
                self.matching += count;
                self.files += 1;
                let first = self.entries;
                if mode == OutputMode::Content {
                    self.entries += entries;
                    // This file's lines are entries first.. of the result; keep those in the page.
                    let from = offset.saturating_sub(first).min(shown.len());
                    let to = end.saturating_sub(first).min(shown.len());
                    shown.truncate(to);
                    shown.drain(..from);
                    if !shown.is_empty() {
                        self.shown += shown.len();
                        self.groups.push((display(), shown, count));
                    }
                } else {
                    self.entries += 1;
                    if first >= offset && first < end {
                        self.shown += 1;
                        self.groups.push((display(), Vec::new(), count));
                    }
                }
            }
        }
    }

    /// The page as the model reads it.
    fn render(&self, line_numbers: bool, with_context: bool) -> String {
        // One string of the right size, each line appended without the formatting machinery.
        let size: usize = self
            .groups
            .iter()
            .map(|(file, lines, _)| file.len() + 24 + lines.iter().map(|l| l.text.len() + 24).sum::<usize>())
            .sum();
        let mut text = String::with_capacity(size);
        for (i, (file, lines, count)) in self.groups.iter().enumerate() {
            match self.page.mode {
                OutputMode::FilesWithMatches => {
                    text.push_str(file);
                    text.push('\n');
                }
                OutputMode::Count => {
                    text.push_str(file);
                    text.push_str(": ");
                    text.push_str(itoa::Buffer::new().format(*count));
                    text.push('\n');
                }
                OutputMode::Content => {
                    if i > 0 {
                        text.push('\n');
                    }
                    text.push_str(file);
                    text.push('\n');
                    let mut previous = None;
                    for line in lines {
                        if with_context && previous.is_some_and(|p: u64| p + 1 != line.number) {
                            text.push_str("  --\n");
                        }
                        previous = Some(line.number);
                        text.push_str("  ");
                        if line_numbers {
                            text.push_str(itoa::Buffer::new().format(line.number));
                            text.push_str(if line.matched { ": " } else { "- " });
                        }
                        text.push_str(&line.text);
                        text.push('\n');
                    }
                }
            }
        }
        text
    }

    /// The notice after the page: what it shows of the whole and where the next page starts;
    /// `None` when everything is shown (in count mode, the totals).
    fn notice(&self, with_context: bool) -> Option<String> {
        let Page { mode, offset, .. } = self.page;
        let unit = match mode {
            OutputMode::Content if with_context => "line",
            OutputMode::Content => "matching line",
            _ => "file",
        };
        let totals = match mode {
            OutputMode::Content if with_context => format!(
                " ({} in {})",
                plural(self.matching as u64, "matching line"),
                plural(self.files as u64, "file")
            ),
            OutputMode::Content => format!(" in {}", plural(self.files as u64, "file")),
            OutputMode::FilesWithMatches => String::new(),
            OutputMode::Count => format!(" ({} in all)", plural(self.matching as u64, "matching line")),
        };
        if self.shown == 0 {
            return Some(format!(
                "[nothing to show from offset={offset}: the search found {}{totals}; use a smaller offset]",
                plural(self.entries as u64, unit)
            ));
        }
        let next = offset + self.shown;
        if offset == 0 && next >= self.entries {
            return (mode == OutputMode::Count).then(|| {
                format!(
                    "[{} in {}]",
                    plural(self.matching as u64, "matching line"),
                    plural(self.files as u64, "file")
                )
            });
        }
        let range = if offset == 0 { self.shown.to_string() } else { format!("{}-{next}", offset + 1) };
        let mut notice =
            format!("[showing {range} of {}{totals}, newest files first", plural(self.entries as u64, unit));
        if next < self.entries {
            notice.push_str(&format!(
                "; use offset={next} for the next ones, or narrow the search with path, glob or a more specific pattern"
            ));
        }
        notice.push(']');
        Some(notice)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The searcher of a walk's thread, with what it was built for: its line buffer is reused
    /// from file to file.
    static SEARCHER: std::cell::RefCell<Option<(SearchConfig, grep_searcher::Searcher)>> =
        const { std::cell::RefCell::new(None) };
}

/// What the search of one file found.
#[derive(Debug)]
enum Searched {
    /// `count` matching lines and `entries` lines of the result (matching and context lines),
    /// the first of them (as many as there was room for) shown.
    Matches {
        count: usize,
        entries: usize,
        shown: Vec<Line>,
    },
    NoMatch,
    /// Not searched to the end: a line too long, or a read error.
    Skipped,
}

/// The order files are shown in: newest first, then by path (unknown times last).
type Rank = (Reverse<Option<SystemTime>>, Target);

/// Files with matches (or skipped), in the order they are shown. The lines of files that come
/// after the first `room` lines are dropped as the results come, so memory stays near `room`
/// lines whatever the tree holds.
struct Results {
    files: BTreeMap<Rank, Searched>,
    room: usize,
    /// Lines held in `files`, and the count at which they are trimmed next.
    held: usize,
    trim_at: usize,
}

impl Results {
    fn new(room: usize) -> Self {
        Results { files: BTreeMap::new(), room, held: 0, trim_at: room.saturating_mul(2) }
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

    /// Drops the lines that can no longer be shown: those after the first `room`.
    fn trim(&mut self) {
        let mut before = 0usize;
        for searched in self.files.values_mut() {
            if let Searched::Matches { shown, .. } = searched {
                shown.truncate(self.room.saturating_sub(before));
                before += shown.len();
            }
        }
        self.held = before;
        self.trim_at = self.held.max(self.room).saturating_mul(2);
    }
}

/// Collects one file's result: its lines (as many as there is room for) in content mode, its
/// count otherwise; in `files_with_matches` mode the search stops at the first match. A file
/// found to be binary (a NUL byte) is searched no further, as ripgrep does.
struct Collect {
    mode: OutputMode,
    room: usize,
    shown: Vec<Line>,
    count: usize,
    entries: usize,
    /// The search stopped at binary data (a NUL byte).
    binary: bool,
}

impl Collect {
    fn push(&mut self, number: u64, bytes: &[u8], matched: bool) {
        self.entries += 1;
        if self.mode != OutputMode::Content || self.shown.len() >= self.room {
            return;
        }
        let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from_utf8_lossy(line);
        // A line of at most MAX_LINE_CHARS bytes has at most as many characters.
        let text = if text.len() <= MAX_LINE_CHARS {
            text.into_owned()
        } else {
            cut_line(&text, MAX_LINE_CHARS, 0).into_owned()
        };
        self.shown.push(Line { number, text, matched });
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &grep_searcher::Searcher,
        found: &SinkMatch<'_>,
    ) -> std::io::Result<bool> {
        let first = found.line_number().unwrap_or(0);
        let mut lines = 0u64;
        for line in found.lines() {
            self.push(first + lines, line, true);
            lines += 1;
        }
        self.count += lines as usize;
        Ok(self.mode != OutputMode::FilesWithMatches)
    }

    fn context(
        &mut self,
        _searcher: &grep_searcher::Searcher,
        context: &SinkContext<'_>,
    ) -> std::io::Result<bool> {
        self.push(context.line_number().unwrap_or(0), context.bytes(), false);
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &grep_searcher::Searcher, _offset: u64) -> std::io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

/// Searches one file, keeping at most `room` of its lines. A read error in the file the model
/// named (`explicit`) is an error. A line too long to hold in memory, or a read error in a file
/// the walk found, is [`Searched::Skipped`], so that the result says so rather than pretend the
/// file had no match.
fn search_one(
    searcher: &mut grep_searcher::Searcher,
    matcher: &grep_regex::RegexMatcher,
    reader: Box<dyn std::io::Read + Send>,
    mode: OutputMode,
    room: usize,
    explicit: bool,
) -> std::io::Result<Searched> {
    let mut collect = Collect { mode, room, shown: Vec::new(), count: 0, entries: 0, binary: false };
    let searched = searcher.search_reader(matcher, reader, &mut collect);
    let Collect { shown, count, entries, binary, .. } = collect;
    match searched {
        Err(e) if explicit && !line_too_long(&e) => Err(e),
        Err(_) => Ok(Searched::Skipped),
        Ok(()) if count == 0 => Ok(Searched::NoMatch),
        // As ripgrep counts it: a file that turned out to be binary has no count.
        Ok(()) if binary && mode == OutputMode::Count => Ok(Searched::NoMatch),
        Ok(()) => Ok(Searched::Matches { count, entries, shown }),
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
        use super::{Found, Line, OutputMode, Page, Results, Searched};
        let at = |seconds: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds));
        let lines = |n: u64| Searched::Matches {
            count: n as usize,
            entries: n as usize,
            shown: (1..=n).map(|i| Line { number: i, text: format!("{i}"), matched: true }).collect(),
        };
        let page = Page { mode: OutputMode::Content, offset: 0, limit: 5 };
        let mut results = Results::new(page.room());
        // Older files first, as a walk may find them; enough of them to be trimmed many times.
        for i in 0..200u64 {
            results.add(at(i), Target::root().join(format!("f{i:03}")), lines(2));
        }
        results.add(None, Target::root().join("unknown"), lines(2));
        results.add(at(150), Target::root().join("a-tie"), lines(3));
        results.add(at(500), Target::root().join("skipped"), Searched::Skipped);
        results.add(at(600), Target::root().join("nothing"), Searched::NoMatch);
        assert!(results.held <= 4 * 5, "{} lines held", results.held);
        let mut found = Found::new(page);
        for ((_, path), searched) in results.files {
            found.add(searched, || path.path().display().to_string());
        }
        let groups: Vec<(&str, usize)> = found.groups.iter().map(|(f, l, _)| (f.as_str(), l.len())).collect();
        assert_eq!(groups, [("f199", 2), ("f198", 2), ("f197", 1)]);
        assert_eq!((found.shown, found.matching, found.files), (5, 2 * 201 + 3, 202));
        assert_eq!(found.skipped, ["skipped"]);
        // A later page: the lines from its offset on, across files.
        let page = Page { mode: OutputMode::Content, offset: 3, limit: 4 };
        let mut results = Results::new(page.room());
        for i in 0..50u64 {
            results.add(at(i), Target::root().join(format!("f{i:03}")), lines(2));
        }
        let mut found = Found::new(page);
        for ((_, path), searched) in results.files {
            found.add(searched, || path.path().display().to_string());
        }
        let shown: Vec<(&str, u64)> =
            found.groups.iter().flat_map(|(f, l, _)| l.iter().map(move |l| (f.as_str(), l.number))).collect();
        assert_eq!(shown, [("f048", 2), ("f047", 1), ("f047", 2), ("f046", 1)]);
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
            "a.txt\n  1: hit\n  2: hit\n  3: hit\n\nb.txt\n  1: hit\n\n[showing 4 of 5 matching lines in 2 files, newest files first; use offset=4 for the next ones, or narrow the search with path, glob or a more specific pattern]"
        );
    }

    #[tokio::test]
    async fn output_modes_context_paging_types_and_multiline() {
        let fx = Fixture::new();
        age(&fx.write("a.rs", "one\nhit 1\ntwo\nthree\nfour\nhit 2\nfive\n"), 100);
        age(&fx.write("b.txt", "hit\nHIT\n"), 200);
        let grep = |args: serde_json::Value| fx.text("grep", args);
        assert_eq!(
            grep(json!({"pattern": "hit", "output_mode": "files_with_matches"})).await,
            "a.rs\nb.txt\n"
        );
        assert_eq!(
            grep(json!({"pattern": "hit", "output_mode": "count"})).await,
            "a.rs: 2\nb.txt: 1\n\n[3 matching lines in 2 files]"
        );
        assert_eq!(
            grep(json!({"pattern": "hit", "output_mode": "count", "limit": 1, "offset": 1})).await,
            "b.txt: 1\n\n[showing 2-2 of 2 files (3 matching lines in all), newest files first]"
        );
        assert_eq!(
            grep(json!({"pattern": "hit", "path": "a.rs", "context": 1})).await,
            "a.rs\n  1- one\n  2: hit 1\n  3- two\n  --\n  5- four\n  6: hit 2\n  7- five\n"
        );
        assert_eq!(
            grep(json!({"pattern": "hit 2", "before": 2, "line_numbers": false})).await,
            "a.rs\n  three\n  four\n  hit 2\n"
        );
        assert_eq!(
            grep(json!({"pattern": "hit", "ignore_case": true, "offset": 2, "limit": 1})).await,
            "b.txt\n  1: hit\n\n[showing 3-3 of 4 matching lines in 2 files, newest files first; use offset=3 for the next ones, or narrow the search with path, glob or a more specific pattern]"
        );
        assert_eq!(
            grep(json!({"pattern": "hit", "offset": 10})).await,
            "[nothing to show from offset=10: the search found 3 matching lines in 2 files; use a smaller offset]"
        );
        assert_eq!(
            grep(json!({"pattern": "hit", "file_type": "rust"})).await,
            "a.rs\n  2: hit 1\n  6: hit 2\n"
        );
        let err = fx.error("grep", json!({"pattern": "hit", "file_type": "rusty"})).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert!(err.message().starts_with("Unknown file type `rusty` (did you mean "), "{}", err.message());
        assert!(err.message().contains(" rust,"), "{}", err.message());
        assert_eq!(
            grep(json!({"pattern": "three\\nfour", "multiline": true})).await,
            "a.rs\n  4: three\n  5: four\n"
        );
        assert_eq!(
            grep(json!({"pattern": "two.three", "multiline": true})).await,
            "a.rs\n  3: two\n  4: three\n"
        );
        assert!(grep(json!({"pattern": "two.three"})).await.starts_with("No matches"));
    }

    #[tokio::test]
    async fn claude_codes_grep_arguments_are_accepted_and_recorded() {
        let fx = Fixture::new();
        fx.write("a.rs", "one\nHit\ntwo\n");
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        let out = fx
            .dispatch(
                "grep",
                r#"{"pattern": "hit", "-i": true, "-n": true, "-C": 1, "type": "rust", "head_limit": 10, "output_mode": "content", "offset": 0}"#,
            )
            .await;
        assert_eq!(out.text_content(), "a.rs\n  1- one\n  2: Hit\n  3- two\n");
        let mut coercions = crate::testing::Fixture::coercions(&out);
        coercions.sort();
        assert_eq!(
            coercions,
            [
                pair("/-C", "/context"),
                pair("/-i", "/ignore_case"),
                pair("/-n", "/line_numbers"),
                pair("/head_limit", "/limit"),
                pair("/type", "/file_type"),
            ]
        );
        let out =
            fx.dispatch("grep", r#"{"pattern": "hit", "case_insensitive": true, "-A": 1, "-B": 1}"#).await;
        assert_eq!(out.text_content(), "a.rs\n  1- one\n  2: Hit\n  3- two\n");
        let mut coercions = crate::testing::Fixture::coercions(&out);
        coercions.sort();
        assert_eq!(
            coercions,
            [pair("/-A", "/after"), pair("/-B", "/before"), pair("/case_insensitive", "/ignore_case")]
        );
        let out =
            fx.dispatch("grep", r#"{"pattern": "o$", "multiline": true, "output_mode": "count"}"#).await;
        assert_eq!(out.text_content(), "a.rs: 1\n\n[1 matching line in 1 file]");
        assert_eq!(crate::testing::Fixture::coercions(&out), Vec::<(String, String)>::new());
        // The schema keeps grep's own names.
        let spec = tool_runtime::Tool::spec(&super::GrepTool);
        let properties = spec.input_schema["properties"].as_object().unwrap();
        for other in ["-i", "-n", "-A", "-B", "-C", "type", "head_limit", "case_insensitive"] {
            assert!(!properties.contains_key(other), "{other}");
        }
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
