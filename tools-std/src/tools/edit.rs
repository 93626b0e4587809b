//! The `edit` tool: replace exact text in a file, keeping its line endings and BOM, with a tolerant fallback.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use serde_json::json;
use tool_runtime::truncate::count_lines;
use tool_runtime::{Dep, ToolContext, ToolError, ToolOutput, tool};

use crate::Workspace;
use crate::editing::file_versions::FileVersions;
use crate::editing::text_file::{
    BOM, Endings, MAX_DIFF_BYTES, WithDiff, io_error, line_endings, plain, plain_str, read_for_edit, to_crlf,
    unified_diff,
};
use crate::fs::ops::{Operations, Precondition, Target, content_hash};
use crate::text::{hard_links_note, plural};

pub use crate::editing::text_file::MAX_EDIT_BYTES;

/// Edit a file in the workspace by replacing `old_string` with `new_string`.
///
/// `old_string` must match the file's current text exactly, including indentation and line
/// breaks, and must occur exactly once unless `replace_all` is set; include a few surrounding
/// lines to make it unique. Only when there is no exact match, a tolerant match is tried that
/// ignores differences in trailing whitespace, indentation, typographic quotes and dashes, and
/// last, on whole lines matching one place only, runs of spaces and tabs inside lines; it
/// changes only the matched region. Line numbers copied from `read` are removed. `new_string` is
/// inserted literally. If `old_string` is not found, the error shows the closest lines of the
/// file and the first difference. An empty `old_string` creates a file that does not exist yet.
/// Line endings (CRLF or LF) and a byte-order mark are kept whatever line endings you send. A
/// file changed by something else since you last read or edited it is refused until you read it
/// again. The write is atomic. The result summarises the change; read the file again before a
/// second edit if you are unsure of its current text.
#[tool(destructive, permission = "path", timeout = "1m")]
pub async fn edit(
    ws: Dep<Workspace>,
    ctx: &ToolContext,
    /// The file to edit, relative to the workspace root.
    #[arg(alias = "file_path", alias = "filePath")]
    path: String,
    /// The exact text to replace (empty to create a new file).
    old_string: String,
    /// The text to put in its place.
    new_string: String,
    /// Replace every occurrence of `old_string` instead of exactly one.
    #[arg(default = false)]
    replace_all: bool,
) -> Result<ToolOutput, ToolError> {
    if old_string == new_string {
        return Err(ToolError::invalid_arguments(
            "No changes to make: old_string and new_string are identical. Pass the text you want in new_string.",
        ));
    }
    let resolved = ws.resolve_to_change(ctx, &path, "edit").await?;
    let checkpoint = crate::checkpoint::begin(&ws, ctx, "edit").await;
    let display = resolved.display.clone();
    let target = resolved.target.clone();
    let versions = FileVersions::of(ctx);
    let known = versions.clone();
    let output = ws
        .blocking(move |ops| {
            let budget = Budget::default();
            let request = Request { old: &old_string, new: &new_string, replace_all, budget: &budget };
            edit_blocking(ops, &versions, &target, &display, &request)
        })
        .await??;
    let output =
        crate::editing::verify::after_edit(&ws, &known, &[(resolved.target, resolved.display)], true, output)
            .await;
    Ok(checkpoint.finish_into(output).await)
}

pub(crate) struct Request<'a> {
    pub(crate) old: &'a str,
    pub(crate) new: &'a str,
    pub(crate) replace_all: bool,
    /// What the call may still spend on searches with whitespace differences (shared by the
    /// edits of a `multi_edit`).
    pub(crate) budget: &'a Budget,
}

/// What is left of a call's [`MAX_CALL_COMPARISONS`].
#[derive(Debug)]
pub(crate) struct Budget(Cell<u64>);

impl Default for Budget {
    fn default() -> Self {
        Budget(Cell::new(MAX_CALL_COMPARISONS))
    }
}

fn edit_blocking(
    ops: &dyn Operations,
    versions: &FileVersions,
    path: &Target,
    display: &str,
    request: &Request<'_>,
) -> Result<ToolOutput, ToolError> {
    let Some(bytes) = read_for_edit(ops, path, display, "edit")? else {
        if !request.old.is_empty() {
            return Err(ToolError::not_found(format!(
                "File not found: {display}. To create a new file, call edit with an empty old_string (or use write)."
            )));
        }
        if let Some(parent) = path.parent() {
            ops.create_dir_all(&parent).map_err(|e| io_error("write", display, e))?;
        }
        let written = ops
            .write_atomic(path, request.new.as_bytes(), Precondition::None)
            .map_err(|e| io_error("write", display, e))?;
        versions.saw(path, request.new.as_bytes());
        return Ok(ToolOutput::text(format!("Created {display} ({}).", plural(written.bytes, "byte")))
            .with_title(display.to_owned())
            .with_metadata("created", json!(true))
            .with_diff(unified_diff(display, "", request.new, MAX_DIFF_BYTES)));
    };
    versions.check(path, display, &bytes, "edit")?;
    if request.old.is_empty() {
        if !bytes.is_empty() {
            return Err(ToolError::invalid_arguments(format!(
                "old_string is empty, which creates a new file, but {display} already exists ({}). To change it, \
                 pass the exact text to replace as old_string; to replace all of it, use write.",
                plural(bytes.len() as u64, "byte")
            )));
        }
        let written = ops
            .write_atomic(path, request.new.as_bytes(), Precondition::Unchanged(content_hash(&bytes)))
            .map_err(|e| io_error("write", display, e))?;
        versions.saw(path, request.new.as_bytes());
        return Ok(ToolOutput::text(format!(
            "Wrote {} to the empty file {display}.{}",
            plural(written.bytes, "byte"),
            hard_links_note(written.other_links)
        ))
        .with_title(display.to_owned())
        .with_diff(unified_diff(display, "", request.new, MAX_DIFF_BYTES)));
    }

    let edited = apply(&bytes, request).map_err(|failure| failure.into_error(display))?;
    let written = ops
        .write_atomic(path, &edited.bytes, Precondition::Unchanged(content_hash(&bytes)))
        .map_err(|e| io_error("write", display, e))?;
    versions.saw(path, &edited.bytes);
    let before = String::from_utf8_lossy(&bytes);
    let after = String::from_utf8_lossy(&edited.bytes);
    Ok(ToolOutput::text(edited.summary(display) + &hard_links_note(written.other_links))
        .with_title(display.to_owned())
        .with_metadata("replacements", json!(edited.count))
        .with_metadata("match", json!(edited.tier.name()))
        .with_metadata("tolerances", json!(edited.tolerances()))
        .with_diff(unified_diff(display, &before, &after, MAX_DIFF_BYTES)))
}

/// How `old_string` was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tier {
    /// Byte for byte (after adapting line endings and the BOM).
    Exact,
    /// Equal once typographic quotes, dashes and non-breaking spaces are made plain.
    Typography,
    /// Equal line by line ignoring trailing whitespace, with one indentation difference for all lines.
    ShiftedLines,
    /// Equal line by line ignoring all leading and trailing whitespace.
    LooseLines,
    /// Equal line by line once every run of whitespace is one space (`const   x =  5;` for
    /// `const x = 5;`, tabs for spaces); only where it matches one place.
    InnerWhitespace,
}

impl Tier {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tier::Exact => "exact",
            Tier::Typography => "typography",
            Tier::ShiftedLines => "indentation",
            Tier::LooseLines => "whitespace",
            Tier::InnerWhitespace => "inner_whitespace",
        }
    }
}

#[derive(Debug)]
pub(crate) struct Edited {
    pub(crate) bytes: Vec<u8>,
    pub(crate) tier: Tier,
    /// How many places were replaced.
    pub(crate) count: usize,
    /// 1-based line of the replacements in the original file (each line once, the first
    /// [`SUMMARY_LINES`] lines), with their old and new line counts.
    pub(crate) lines: Vec<(usize, usize, usize)>,
    /// `old_string` carried `read`'s line numbers on every line, and they were removed.
    pub(crate) line_numbers: bool,
}

/// How many replacements a summary names by line.
const SUMMARY_LINES: usize = 10;

impl Edited {
    /// What was tolerated to find `old_string`, for the result's metadata: the match tier when
    /// not exact, and `line_numbers` when read's prefixes were removed.
    pub(crate) fn tolerances(&self) -> Vec<&'static str> {
        let mut applied = Vec::new();
        if self.line_numbers {
            applied.push("line_numbers");
        }
        if self.tier != Tier::Exact {
            applied.push(self.tier.name());
        }
        applied
    }

    pub(crate) fn summary(&self, display: &str) -> String {
        let n = self.count;
        let mut text = match self.lines.as_slice() {
            [(line, removed, added)] if n == 1 => format!(
                "Edited {display}: replaced 1 occurrence at line {line} ({} removed, {} added).",
                plural(*removed as u64, "line"),
                plural(*added as u64, "line")
            ),
            many => {
                let at: Vec<String> = many.iter().map(|(line, _, _)| line.to_string()).collect();
                let more = if n > many.len() && many.len() == SUMMARY_LINES { ", ..." } else { "" };
                format!("Edited {display}: replaced {n} occurrences (at lines {}{more}).", at.join(", "))
            }
        };
        if self.tier != Tier::Exact {
            text.push_str(
                " old_string did not match exactly; it matched once differences in whitespace, indentation, \
                 quotes or dashes were ignored, and only the matched text was replaced.",
            );
        }
        if self.line_numbers {
            text.push_str(
                " old_string carried the line numbers read shows on every line; they were removed (from \
                 new_string too where it had them) before matching. Leave them out next time.",
            );
        }
        text
    }
}

/// Why an edit could not be made.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Not found; `hint` shows the closest part of the file and what differs (empty while the
    /// search goes on).
    NotFound { hint: String },
    Ambiguous {
        count: usize,
        tier: Tier,
        /// The 1-based lines where the first matches start.
        lines: Vec<usize>,
    },
    /// The edited file would be larger than [`MAX_EDIT_BYTES`].
    TooLarge { count: usize, size: u64 },
    /// Not found exactly, and the search with whitespace differences went past
    /// [`MAX_LINE_COMPARISONS`] (a long `old` in a file that repeats its lines), or (`in_all`)
    /// past what is left of the call's [`MAX_CALL_COMPARISONS`].
    TooCostly { lines: usize, in_all: bool },
}

/// A search with whitespace differences compares at most this many lines: it compares the
/// lines of `old` at each line of the file until one differs, which a long `old` in a file that
/// repeats its lines makes quadratic (5,000 lines in a file of 200,000 identical ones: minutes).
/// A real search stops at the first or second line of most places, so a file of a million lines
/// stays well within it.
const MAX_LINE_COMPARISONS: u64 = 5_000_000;

/// The line comparisons all the searches with whitespace differences of one call may make: four
/// searches at [`MAX_LINE_COMPARISONS`]. The edits of a `multi_edit` share it, so its 100 edits
/// cost at most what four costly ones do, not 100 times that (100 edits that each matched after
/// nearly 5 million comparisons took 97 s of the host's CPU, debug build, before).
const MAX_CALL_COMPARISONS: u64 = 4 * MAX_LINE_COMPARISONS;

impl Failure {
    pub(crate) fn into_error(self, display: &str) -> ToolError {
        match self {
            Failure::NotFound { hint } => ToolError::invalid_arguments(format!(
                "old_string was not found in {display}. It must match the file's current text exactly, including \
                 whitespace and line breaks.{hint}"
            )),
            Failure::Ambiguous { count, tier: Tier::Exact, lines } => ToolError::invalid_arguments(format!(
                "old_string occurs {count} times in {display} ({}), but it must identify exactly one place. Include \
                 more surrounding lines to make it unique, or set replace_all to true to replace all {count}.",
                at_lines(&lines, count)
            )),
            Failure::Ambiguous { count, tier: Tier::InnerWhitespace, lines } => {
                ToolError::invalid_arguments(format!(
                    "old_string does not occur exactly in {display}; once runs of whitespace are ignored it matches \
                 {count} places ({}), and such a loose match is only made where it is unique. Read the file again \
                 and copy the exact text, with enough surrounding lines to make it unique.",
                    at_lines(&lines, count)
                ))
            }
            Failure::TooCostly { lines, in_all: false } => ToolError::invalid_arguments(format!(
                "old_string ({}) was not found in {display} as it is, and looking for it with \
                 whitespace differences compares too many lines (the file repeats them). Copy the text to \
                 replace from the file exactly (read it again), or use a shorter old_string that is unique.",
                plural(lines as u64, "line")
            )),
            Failure::TooCostly { lines, in_all: true } => ToolError::invalid_arguments(format!(
                "old_string ({}) was not found in {display} as it is, and this call's searches with whitespace \
                 differences have compared as many lines as one call may ({} million in all). Copy \
                 the text to replace from the file exactly (read it again), or split the edits over several \
                 calls.",
                plural(lines as u64, "line"),
                MAX_CALL_COMPARISONS / 1_000_000
            )),
            Failure::TooLarge { count, size } => ToolError::invalid_arguments(format!(
                "Replacing {} in {display} would make it {}, more than the 64 MiB edit writes; nothing was \
                 written. Replace fewer occurrences (a longer old_string, or replace_all set to false), or use bash.",
                plural(count as u64, "occurrence"),
                plural(size, "byte")
            )),
            Failure::Ambiguous { count, lines, .. } => ToolError::invalid_arguments(format!(
                "old_string does not occur exactly in {display}, and ignoring whitespace, quote and dash differences \
                 it matches {count} places ({}). Read the file again and copy the exact text, with enough surrounding \
                 lines to make it unique, or set replace_all to true to replace all {count}.",
                at_lines(&lines, count)
            )),
        }
    }
}

/// "at lines 3, 17 and 40", or the first ones and how many more.
fn at_lines(lines: &[usize], count: usize) -> String {
    let mut names: Vec<String> = lines.iter().map(usize::to_string).collect();
    if count > lines.len() {
        names.push(format!("{} more", count - lines.len()));
    }
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("at lines {} and {last}", rest.join(", ")),
        _ => format!("at line {}", names.join("")),
    }
}

/// The closest part of `body` to `old`, with line numbers, and the first difference: what a
/// not-found error adds, at most about 20 lines.
fn not_found_hint(body: &[u8], old: &str) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.strip_suffix('\n').unwrap_or(&text);
    let file: Vec<&str> = if text.is_empty() {
        Vec::new()
    } else {
        trimmed.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect()
    };
    let (wanted, _) = split_lines(old);
    let Some(window) = crate::editing::closest::closest(&file, &wanted) else {
        return " No line of the file resembles it: check that this is the right file, or read it again."
            .to_owned();
    };
    let end = window.start + window.len;
    let mut hint = format!(
        "\nThe closest part of the file is {} ({} of {} the same ignoring whitespace):\n",
        if window.len == 1 { format!("line {end}") } else { format!("lines {}-{end}", window.start + 1) },
        window.same,
        plural(wanted.len() as u64, "line")
    );
    crate::editing::closest::show_numbered(&mut hint, &file[window.start..end], window.start + 1);
    if let Some(difference) =
        crate::editing::closest::first_difference(&file, window.start, &wanted, "old_string", true)
    {
        hint.push_str(&difference);
        hint.push('\n');
    }
    hint.push_str(
        "Copy the text to replace from the file as it is (without the line numbers), or read it again.",
    );
    hint
}

/// Where `old` is found in a text, by one tier. A search can run twice (once to count the
/// matches and size the result, once to build it), so no state per match is ever kept: the
/// memory an edit needs is the file, the result and (for the tolerant tiers) one plain copy.
struct Search<'a> {
    tier: Tier,
    body: &'a [u8],
    old: &'a str,
    new: &'a str,
}

impl Search<'_> {
    /// Calls `visit` with each match, left to right, and the text that replaces it. Run again
    /// after [`Search::survey`], it makes the comparisons the survey made and charged.
    fn run(&self, visit: &mut dyn FnMut(Range<usize>, &str)) -> Result<(), Failure> {
        self.run_within(MAX_LINE_COMPARISONS, visit).map(drop)
    }

    /// [`Search::run`] making at most `limit` line comparisons; returns how many it made.
    fn run_within(&self, limit: u64, visit: &mut dyn FnMut(Range<usize>, &str)) -> Result<u64, Failure> {
        let text = || std::str::from_utf8(self.body).map_err(|_| Failure::NotFound { hint: String::new() });
        match self.tier {
            Tier::Exact => {
                let finder = memchr::memmem::Finder::new(self.old.as_bytes());
                let mut next_free = 0;
                for start in finder.find_iter(self.body) {
                    // Non-overlapping, left to right, like `str::match_indices`.
                    if start >= next_free {
                        next_free = start + self.old.len();
                        visit(start..next_free, self.new);
                    }
                }
                Ok(0)
            }
            Tier::Typography => {
                typography_matches(text()?, self.old, self.new, visit);
                Ok(0)
            }
            Tier::ShiftedLines | Tier::LooseLines | Tier::InnerWhitespace => {
                line_matches(text()?, self.old, self.new, self.tier, limit, visit)
            }
        }
    }

    /// How many matches, and the size of the content once they are replaced; the line
    /// comparisons it makes are charged to `budget`.
    fn survey(&self, content_len: usize, budget: &Budget) -> Result<(usize, u64), Failure> {
        let (mut count, mut size) = (0usize, content_len as u64);
        let compared = self.run_within(MAX_LINE_COMPARISONS.min(budget.0.get()), &mut |range, text| {
            count += 1;
            size = size + text.len() as u64 - range.len() as u64;
        })?;
        budget.0.set(budget.0.get().saturating_sub(compared));
        Ok((count, size))
    }
}

/// Replaces `request.old` in `content` and returns the new content.
///
/// The matches are counted and the size of the result computed before a byte of it is built:
/// an ambiguous or oversized edit is refused having cost one pass over the file. When nothing
/// matches and every line of `old` carries `read`'s line number, they are removed (from `new`
/// too when every line of it has one) and the search runs again.
pub(crate) fn apply(content: &[u8], request: &Request<'_>) -> Result<Edited, Failure> {
    match apply_as_given(content, request) {
        Err(Failure::NotFound { .. }) => {}
        other => return other,
    }
    let numbered = crate::editing::line_numbers::strip_text(request.old, true);
    if let Some(old) = &numbered {
        let new = crate::editing::line_numbers::strip_text(request.new, false);
        let stripped = Request { old, new: new.as_deref().unwrap_or(request.new), ..*request };
        match apply_as_given(content, &stripped) {
            Ok(edited) => return Ok(Edited { line_numbers: true, ..edited }),
            Err(Failure::NotFound { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    let body = content.strip_prefix(BOM).unwrap_or(content);
    Err(Failure::NotFound { hint: not_found_hint(body, numbered.as_deref().unwrap_or(request.old)) })
}

fn apply_as_given(content: &[u8], request: &Request<'_>) -> Result<Edited, Failure> {
    let (bom, body) = match content.strip_prefix(BOM) {
        Some(body) => (true, body),
        None => (false, content),
    };
    let old = request.old.strip_prefix('\u{feff}').unwrap_or(request.old);
    let new = request.new.strip_prefix('\u{feff}').unwrap_or(request.new);
    let (old, new) = match line_endings(body) {
        Endings::Crlf => (to_crlf(old), to_crlf(new)),
        Endings::Lf => (old.replace("\r\n", "\n"), new.replace("\r\n", "\n")),
        Endings::Mixed => (old.to_owned(), new.to_owned()),
    };

    // The first tier that finds anything decides.
    let mut found = None;
    for tier in [Tier::Exact, Tier::Typography, Tier::ShiftedLines, Tier::LooseLines, Tier::InnerWhitespace] {
        if tier != Tier::Exact && old.trim().is_empty() {
            break;
        }
        let search = Search { tier, body, old: &old, new: &new };
        let (count, size) = match search.survey(content.len(), request.budget) {
            Err(Failure::NotFound { .. }) if tier != Tier::Exact => break,
            other => other?,
        };
        if count > 0 {
            found = Some((search, count, size));
            break;
        }
    }
    let (search, count, size) = found.ok_or(Failure::NotFound { hint: String::new() })?;
    // The loosest tier replaces only a unique match, even with replace_all.
    if count > 1 && (!request.replace_all || search.tier == Tier::InnerWhitespace) {
        let mut lines = Vec::with_capacity(SUMMARY_LINES);
        let mut line = 1;
        let mut counted = 0;
        search.run(&mut |range, _| {
            line += memchr::memchr_iter(b'\n', &body[counted..range.start]).count();
            counted = range.start;
            if lines.len() < SUMMARY_LINES {
                lines.push(line);
            }
        })?;
        return Err(Failure::Ambiguous { count, tier: search.tier, lines });
    }
    if size > MAX_EDIT_BYTES {
        return Err(Failure::TooLarge { count, size });
    }

    let mut out = Vec::with_capacity(size as usize);
    if bom {
        out.extend_from_slice(BOM);
    }
    let mut lines = Vec::with_capacity(count.min(SUMMARY_LINES));
    let mut copied = 0;
    let mut line = 1;
    search.run(&mut |range, text| {
        let before = &body[copied..range.start];
        line += memchr::memchr_iter(b'\n', before).count();
        let removed = &body[range.clone()];
        // Several replacements on one line name it once.
        if lines.len() < SUMMARY_LINES && lines.last().is_none_or(|&(at, _, _)| at != line) {
            lines.push((line, count_lines(removed), count_lines(text.as_bytes())));
        }
        line += memchr::memchr_iter(b'\n', removed).count();
        out.extend_from_slice(before);
        out.extend_from_slice(text.as_bytes());
        copied = range.end;
    })?;
    out.extend_from_slice(&body[copied..]);
    Ok(Edited { bytes: out, tier: search.tier, count, lines, line_numbers: false })
}

/// Matches after mapping typographic characters to plain ones, one character for one, so every
/// match maps back to an exact range of the original.
fn typography_matches(content: &str, old: &str, new: &str, visit: &mut dyn FnMut(Range<usize>, &str)) {
    let plain_old = plain_str(old);
    if plain_old == old && content.chars().all(|c| plain(c) == c) {
        return;
    }
    let plain_content = plain_str(content);
    // Walks the original alongside the plain text, to map the (increasing) offsets of the
    // matches back without a table of every offset.
    let mut chars = content.chars();
    let (mut plain_at, mut original_at) = (0, 0);
    let mut original = |offset: usize| {
        while plain_at < offset {
            let Some(c) = chars.next() else { break };
            plain_at += plain(c).len_utf8();
            original_at += c.len_utf8();
        }
        original_at
    };
    for (start, matched) in plain_content.match_indices(&plain_old) {
        let range = original(start)..original(start + matched.len());
        visit(range, new);
    }
}

/// Whole-line matches of `old` in `content`. For [`Tier::ShiftedLines`], lines must be equal but
/// for trailing whitespace and one indentation prefix missing (or extra) on every non-blank line
/// of `old`; `new` is re-indented the same way. For [`Tier::LooseLines`], leading whitespace is
/// ignored too, and for [`Tier::InnerWhitespace`] every run of whitespace; `new` is then
/// inserted as given.
///
/// The lines are compared in a window as long as `old`, so memory does not grow with the file.
/// Re-indented texts are built once per indentation, and their total is bounded: past
/// [`MAX_EDIT_BYTES`] the search stops with [`Failure::TooLarge`]. Past `limit` line
/// comparisons it stops with [`Failure::TooCostly`]; it returns how many it made.
fn line_matches(
    content: &str,
    old: &str,
    new: &str,
    tier: Tier,
    limit: u64,
    visit: &mut dyn FnMut(Range<usize>, &str),
) -> Result<u64, Failure> {
    let shift = tier == Tier::ShiftedLines;
    let (old_lines, through_newline) = split_lines(old);
    let old_plain: Vec<String> = old_lines.iter().map(|l| plain_str(l.trim_end())).collect();
    let k = old_plain.len();
    let mut texts: HashMap<Option<Indent>, Arc<str>> = HashMap::new();
    let mut built = 0u64;
    let mut found = 0usize;
    // The window: each line's range without its terminator, where the next line starts, and
    // its plain text without trailing whitespace.
    let mut spans: VecDeque<(Range<usize>, usize)> = VecDeque::with_capacity(k);
    let mut window: VecDeque<String> = VecDeque::with_capacity(k);
    let mut compared = 0u64;
    let mut start = 0;
    while k > 0 && start < content.len() {
        let end = content[start..].find('\n').map_or(content.len(), |i| start + i);
        let next = (end + 1).min(content.len());
        spans.push_back((start..end, next));
        window.push_back(plain_str(content[start..end].trim_end()));
        start = next;
        if window.len() < k {
            continue;
        }
        // Compared through the ring as it is: making it contiguous would move it at every line.
        let indent = if shift { shift_between(&window, &old_plain, &mut compared) } else { None };
        let pairs = window.iter().zip(&old_plain).inspect(|_| compared += 1);
        let equal = match tier {
            Tier::ShiftedLines => indent.is_some(),
            Tier::InnerWhitespace => {
                pairs.into_iter().all(|(a, b)| a.split_whitespace().eq(b.split_whitespace()))
            }
            _ => pairs.into_iter().all(|(a, b)| a.trim_start() == b.trim_start()),
        };
        if compared > limit {
            return Err(Failure::TooCostly { lines: k, in_all: limit < MAX_LINE_COMPARISONS });
        }
        if !equal {
            window.pop_front();
            spans.pop_front();
            continue;
        }
        let mut first = spans[0].0.start;
        if tier == Tier::InnerWhitespace && !old_lines[0].starts_with(char::is_whitespace) {
            // old_string starts at the text of the line: its indentation stays.
            let line = &content[spans[0].0.clone()];
            first += line.len() - line.trim_start().len();
        }
        let last = &spans[k - 1];
        let end = if through_newline { last.1 } else { last.0.end };
        let text = match texts.get(&indent) {
            Some(text) => text.clone(),
            None => {
                let text: Arc<str> = match &indent {
                    Some(Indent::Add(prefix)) => reindent(new, |line| format!("{prefix}{line}")).into(),
                    Some(Indent::Remove(prefix)) => {
                        reindent(new, |line| line.strip_prefix(prefix.as_str()).unwrap_or(line).to_owned())
                            .into()
                    }
                    None => Arc::from(new),
                };
                built += text.len() as u64;
                if built > MAX_EDIT_BYTES {
                    return Err(Failure::TooLarge { count: found + 1, size: built });
                }
                texts.insert(indent, text.clone());
                text
            }
        };
        // Never cut a CRLF in two: a match ending before `\r\n` keeps the `\r` outside.
        let end = if !through_newline && content[..end].ends_with('\r') { end - 1 } else { end };
        visit(first..end, &text);
        found += 1;
        window.clear();
        spans.clear();
    }
    Ok(compared)
}

/// `text` split into lines without terminators (and without `\r`), and whether it ended with a
/// line break.
fn split_lines(text: &str) -> (Vec<&str>, bool) {
    let through_newline = text.ends_with('\n');
    let body = text.strip_suffix('\n').unwrap_or(text);
    (body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect(), through_newline)
}

#[derive(PartialEq, Eq, Hash)]
enum Indent {
    /// The file's lines have this prefix that `old`'s lack.
    Add(String),
    /// `old`'s lines have this prefix that the file's lack.
    Remove(String),
}

/// The one indentation difference that makes every line of `file` equal to the line of `old`,
/// if there is one (blank lines must be blank in both); `compared` counts the lines compared.
fn shift_between(file: &VecDeque<String>, old: &[String], compared: &mut u64) -> Option<Indent> {
    let (first_file, first_old) = file.iter().zip(old).find(|(f, o)| !f.is_empty() || !o.is_empty())?;
    let indent_of = |s: &str| s.len() - s.trim_start().len();
    let (fi, oi) = (indent_of(first_file), indent_of(first_old));
    // `get` rather than slicing: whitespace of different widths may not line up on a character.
    let indent = if fi >= oi {
        Indent::Add(first_file.get(..fi - oi)?.to_owned())
    } else {
        Indent::Remove(first_old.get(..oi - fi)?.to_owned())
    };
    let all = file.iter().zip(old).inspect(|_| *compared += 1).all(|(f, o)| match &indent {
        _ if f.is_empty() || o.is_empty() => f.is_empty() && o.is_empty(),
        Indent::Add(prefix) => f.strip_prefix(prefix.as_str()) == Some(o.as_str()),
        Indent::Remove(prefix) => o.strip_prefix(prefix.as_str()) == Some(f.as_str()),
    });
    all.then_some(indent)
}

/// Applies `f` to every non-blank line of `text`, keeping its line breaks.
fn reindent(text: &str, f: impl Fn(&str) -> String) -> String {
    text.split_inclusive('\n')
        .map(|piece| {
            let (line, ending) = match piece.strip_suffix("\r\n") {
                Some(line) => (line, "\r\n"),
                None => match piece.strip_suffix('\n') {
                    Some(line) => (line, "\n"),
                    None => (piece, ""),
                },
            };
            if line.trim().is_empty() { piece.to_owned() } else { format!("{}{ending}", f(line)) }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::ErrorKind;

    use super::*;
    use crate::testing::Fixture;

    fn edit_text(content: &str, old: &str, new: &str) -> Result<String, Failure> {
        apply(content.as_bytes(), &Request { old, new, replace_all: false, budget: &Budget::default() })
            .map(|e| String::from_utf8(e.bytes).unwrap())
    }

    #[tokio::test]
    async fn replaces_one_exact_match_and_returns_summary_and_diff() {
        let fx = Fixture::new();
        fx.write("a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
        let out = fx
            .call(
                "edit",
                json!({"path": "a.rs", "old_string": "fn b() {}", "new_string": "fn b() {\n    1\n}"}),
            )
            .await
            .unwrap();
        assert_eq!(
            out.text_content(),
            "Edited a.rs: replaced 1 occurrence at line 2 (1 line removed, 3 lines added)."
        );
        assert_eq!(fx.read("a.rs"), b"fn a() {}\nfn b() {\n    1\n}\nfn c() {}\n");
        assert_eq!(
            out.metadata["diff"],
            json!(
                "--- a/a.rs\n+++ b/a.rs\n@@ -1,3 +1,5 @@\n fn a() {}\n-fn b() {}\n+fn b() {\n+    1\n+}\n fn c() {}\n"
            )
        );
        assert_eq!(out.metadata["match"], json!("exact"));
    }

    #[tokio::test]
    async fn three_distinct_errors() {
        let fx = Fixture::new();
        fx.write("a.txt", "x = 1\nx = 1\nx = 1\n");
        let err = fx.error("edit", json!({"path": "a.txt", "old_string": "y = 2", "new_string": "z"})).await;
        assert_eq!(
            err.message(),
            "old_string was not found in a.txt. It must match the file's current text exactly, including whitespace and line breaks. No line of the file resembles it: check that this is the right file, or read it again."
        );
        let err =
            fx.error("edit", json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"})).await;
        assert_eq!(
            err.message(),
            "old_string occurs 3 times in a.txt (at lines 1, 2 and 3), but it must identify exactly one place. Include more surrounding lines to make it unique, or set replace_all to true to replace all 3."
        );
        let err =
            fx.error("edit", json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 1"})).await;
        assert_eq!(
            err.message(),
            "No changes to make: old_string and new_string are identical. Pass the text you want in new_string."
        );
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        assert_eq!(fx.read("a.txt"), b"x = 1\nx = 1\nx = 1\n", "nothing was written");
        let text = fx
            .text(
                "edit",
                json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
            )
            .await;
        assert_eq!(text, "Edited a.txt: replaced 3 occurrences (at lines 1, 2, 3).");
        assert_eq!(fx.read("a.txt"), b"x = 2\nx = 2\nx = 2\n");
    }

    #[tokio::test]
    async fn empty_old_string_creates_a_missing_file_only() {
        let fx = Fixture::new();
        let text = fx
            .text("edit", json!({"path": "new/dir/f.txt", "old_string": "", "new_string": "hello\n"}))
            .await;
        assert_eq!(text, "Created new/dir/f.txt (6 bytes).");
        assert_eq!(fx.read("new/dir/f.txt"), b"hello\n");
        let err =
            fx.error("edit", json!({"path": "new/dir/f.txt", "old_string": "", "new_string": "x"})).await;
        assert_eq!(
            err.message(),
            "old_string is empty, which creates a new file, but new/dir/f.txt already exists (6 bytes). To change it, pass the exact text to replace as old_string; to replace all of it, use write."
        );
        fx.write("blank.txt", "");
        let text = fx.text("edit", json!({"path": "blank.txt", "old_string": "", "new_string": "x"})).await;
        assert_eq!(text, "Wrote 1 byte to the empty file blank.txt.");
        let err =
            fx.error("edit", json!({"path": "missing.txt", "old_string": "a", "new_string": "b"})).await;
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(
            err.message(),
            "File not found: missing.txt. To create a new file, call edit with an empty old_string (or use write)."
        );
    }

    #[test]
    fn crlf_and_bom_survive_lf_input() {
        let content = "\u{feff}line one\r\nline two\r\nline three\r\n";
        let out = edit_text(content, "line one\nline two\n", "first\nsecond\nextra\n").unwrap();
        assert_eq!(out, "\u{feff}first\r\nsecond\r\nextra\r\nline three\r\n");
        // LF files stay LF when the model sends CRLF.
        assert_eq!(edit_text("a\nb\n", "a\r\nb", "c\r\nd").unwrap(), "c\nd\n");
    }

    #[test]
    fn replacement_is_literal() {
        assert_eq!(
            edit_text("let re = x;", "x", "$1 ${name} $$ \\1").unwrap(),
            "let re = $1 ${name} $$ \\1;"
        );
    }

    #[test]
    fn tolerant_match_changes_only_the_matched_region() {
        // Trailing whitespace in the file, none in old_string.
        let content = "keep  \nfn main() {   \n    body();\t\n}\nkeep\t\n";
        let out = edit_text(content, "fn main() {\n    body();\n}", "fn main() {}").unwrap();
        assert_eq!(out, "keep  \nfn main() {}\nkeep\t\n");

        // Typographic quotes and dashes from the model, plain ones in the file; mid-line.
        let content = "say(\"it's\") - done  \n";
        let out = edit_text(content, "say(“it’s”) — done", "said()").unwrap();
        assert_eq!(out, "said()  \n");
        let out = edit_text("x = 'a' - 1;\n", "x = ‘a’ – 1", "y").unwrap();
        assert_eq!(out, "y;\n");
    }

    #[test]
    fn tolerant_match_reindents_the_replacement() {
        let content = "impl A {\n        fn f() {\n            g();\n        }\n}\n";
        let out =
            edit_text(content, "fn f() {\n    g();\n}\n", "fn f() {\n    h();\n\n    i();\n}\n").unwrap();
        assert_eq!(out, "impl A {\n        fn f() {\n            h();\n\n            i();\n        }\n}\n");
        // The model indented more than the file.
        let content = "a:\n  b: 1\n  c: 2\n";
        let out = edit_text(content, "      b: 1\n      c: 2", "      b: 3\n      c: 4").unwrap();
        assert_eq!(out, "a:\n  b: 3\n  c: 4\n");
        // Whitespace of other widths does not line up, and does not panic either.
        let out = edit_text("\u{3000}\u{3000}x = 1\n", " x = 1\n", "y\n").unwrap();
        assert_eq!(out, "y\n");
        // Irregular indentation: matched ignoring it, new_string inserted as given.
        let content = "\tif x {\n  y()\n\t}\n";
        let out = edit_text(content, "if x {\n    y()\n}", "if z {}").unwrap();
        assert_eq!(out, "if z {}\n");
    }

    #[test]
    fn tolerant_match_in_crlf_file_keeps_crlf() {
        let content = "a\r\n    b  \r\nc\r\n";
        let out = edit_text(content, "a\nb", "x\ny").unwrap();
        assert_eq!(out, "x\r\ny\r\nc\r\n");
    }

    /// A long old_string in a file that repeats its lines, differing only at its end: each line
    /// of the file starts a comparison of nearly every line of old_string. Bounded, and said.
    #[test]
    fn a_tolerant_search_that_compares_too_many_lines_stops_and_says_so() {
        let content = "x = 1;\n".repeat(6_000);
        let old = format!("{}y = 2;\n", "x = 1;\n".repeat(2_000));
        match apply(
            content.as_bytes(),
            &Request { old: &old, new: "z\n", replace_all: false, budget: &Budget::default() },
        ) {
            Err(failure @ Failure::TooCostly { lines: 2001, in_all: false }) => {
                let message = failure.into_error("f.txt").to_string();
                assert!(
                    message.contains("old_string (2001 lines) was not found in f.txt as it is"),
                    "{message}"
                );
            }
            Err(other) => panic!("{}", other.into_error("f.txt")),
            Ok(_) => panic!("found"),
        }
        // A long old_string that differs from the file's lines at once costs one comparison a line.
        let old = format!("w = 0;\n{}", "x = 1;\n".repeat(2_000));
        assert!(matches!(
            apply(
                content.as_bytes(),
                &Request { old: &old, new: "z\n", replace_all: false, budget: &Budget::default() }
            ),
            Err(Failure::NotFound { .. })
        ));
    }

    /// The searches of one call share its budget: each search here costs about half a million
    /// comparisons (a 100-line old_string that differs from 100 runs of 100 lines only at its
    /// end), so with 1.2 million left two edits are made and the third is refused as the call's.
    #[test]
    fn the_searches_of_one_call_share_its_budget() {
        let mut content: String = (0..100).map(|k| format!("{}y{k};\n", "x = 1;\n".repeat(100))).collect();
        let budget = Budget(Cell::new(1_200_000));
        for k in 0..3 {
            let old = format!("{}y{k};\n", "x = 1; \n".repeat(100));
            let new = format!("{}z{k};\n", "x = 1;\n".repeat(100));
            match apply(
                content.as_bytes(),
                &Request { old: &old, new: &new, replace_all: false, budget: &budget },
            ) {
                Ok(edited) if k < 2 => content = String::from_utf8(edited.bytes).unwrap(),
                Err(failure @ Failure::TooCostly { lines: 101, in_all: true }) if k == 2 => {
                    let message = failure.into_error("f.txt").to_string();
                    assert!(
                        message.contains("as many lines as one call may (20 million in all)"),
                        "{message}"
                    );
                    assert!(message.contains("split the edits over several calls"), "{message}");
                }
                Ok(_) => panic!("edit {k} was made"),
                Err(other) => panic!("edit {k}: {}", other.into_error("f.txt")),
            }
        }
        assert!(content.contains("z1;\n") && content.contains("y2;\n"));
        assert!(budget.0.get() < 500_000, "{}", budget.0.get());
    }

    #[test]
    fn tolerant_match_is_only_a_fallback_and_counts_ambiguity() {
        // An exact match wins even where a tolerant one would also match elsewhere.
        let content = "    value = 1\nvalue = 1  \n";
        assert_eq!(edit_text(content, "value = 1\n", "value = 2\n").unwrap(), "    value = 2\nvalue = 1  \n");
        let content = "  foo( )\n\tfoo( )\n";
        assert_eq!(
            edit_text(content, "foo( ) \n", "bar"),
            Err(Failure::Ambiguous { count: 2, tier: Tier::ShiftedLines, lines: vec![1, 2] })
        );
        let err = Failure::Ambiguous { count: 2, tier: Tier::LooseLines, lines: vec![4, 9] }.into_error("f");
        assert_eq!(
            err.message(),
            "old_string does not occur exactly in f, and ignoring whitespace, quote and dash differences it matches 2 places (at lines 4 and 9). Read the file again and copy the exact text, with enough surrounding lines to make it unique, or set replace_all to true to replace all 2."
        );
    }

    #[test]
    fn runs_of_whitespace_inside_lines_are_tolerated_on_whole_unique_lines() {
        let content = "fn f() {\n    const x = 5;\n\tif (a)  {\n}\n";
        let out = edit_text(content, "const   x    =     5;", "const x = 6;").unwrap();
        assert_eq!(out, "fn f() {\n    const x = 6;\n\tif (a)  {\n}\n");
        // Spaces for the file's tab, one space for its two.
        let out = edit_text(content, "    const x = 5;\n    if (a) {\n", "    go();\n").unwrap();
        assert_eq!(out, "fn f() {\n    go();\n}\n");
        let edited = apply(
            content.as_bytes(),
            &Request { old: "const x  = 5;", new: "y", replace_all: false, budget: &Budget::default() },
        );
        assert_eq!(edited.unwrap().tolerances(), ["inner_whitespace"]);
        // Only whole lines: part of a line with other spacing is not found.
        assert!(matches!(edit_text(content, "x  = 5", "y"), Err(Failure::NotFound { .. })));
        // Only a unique match, even with replace_all.
        let content = "x  = 1\ny\nx =  1\n";
        for replace_all in [false, true] {
            let result = apply(
                content.as_bytes(),
                &Request { old: "x = 1", new: "z", replace_all, budget: &Budget::default() },
            );
            assert_eq!(
                result.unwrap_err(),
                Failure::Ambiguous { count: 2, tier: Tier::InnerWhitespace, lines: vec![1, 3] }
            );
        }
        assert_eq!(
            Failure::Ambiguous { count: 2, tier: Tier::InnerWhitespace, lines: vec![1, 3] }
                .into_error("f")
                .message(),
            "old_string does not occur exactly in f; once runs of whitespace are ignored it matches 2 places (at \
             lines 1 and 3), and such a loose match is only made where it is unique. Read the file again and copy \
             the exact text, with enough surrounding lines to make it unique."
        );
    }

    #[tokio::test]
    async fn line_numbers_copied_from_read_are_removed() {
        let fx = Fixture::new();
        fx.write("a.rs", "fn a() {}\nfn b() {\n    1\n}\n");
        let shown = fx.text("read", json!({"path": "a.rs"})).await;
        let old: String = shown.lines().skip(1).take(3).map(|l| format!("{l}\n")).collect();
        assert_eq!(old, "     2\tfn b() {\n     3\t    1\n     4\t}\n", "read's own format");
        let new = "     2\tfn b() {\n     3\t    2\n     4\t}\n";
        let out =
            fx.call("edit", json!({"path": "a.rs", "old_string": old, "new_string": new})).await.unwrap();
        assert_eq!(fx.read("a.rs"), b"fn a() {}\nfn b() {\n    2\n}\n");
        assert_eq!(out.metadata["tolerances"], json!(["line_numbers"]));
        assert!(out.text_content().contains("they were removed"), "{}", out.text_content());
        // new_string without numbers is taken as it is.
        let out = fx
            .call("edit", json!({"path": "a.rs", "old_string": "     3\t    2\n", "new_string": "    3\n"}))
            .await
            .unwrap();
        assert_eq!(fx.read("a.rs"), b"fn a() {}\nfn b() {\n    3\n}\n");
        assert_eq!(out.metadata["tolerances"], json!(["line_numbers"]));
        // A file whose text really has such prefixes is matched as it is first.
        fx.write("listing.txt", "     1\tone\n     2\ttwo\n");
        let out = fx
            .call(
                "edit",
                json!({"path": "listing.txt", "old_string": "     2\ttwo", "new_string": "     2\tTWO"}),
            )
            .await
            .unwrap();
        assert_eq!(fx.read("listing.txt"), b"     1\tone\n     2\tTWO\n");
        assert_eq!(out.metadata["tolerances"], json!([]));
    }

    #[tokio::test]
    async fn not_found_shows_the_closest_lines_and_what_differs() {
        let fx = Fixture::new();
        let mut content: String = (1..=30).map(|i| format!("let v{i} = {i};\n")).collect();
        content.push_str("fn main() {\n    let x = 1;\n    let y = 2;\n}\n");
        fx.write("m.rs", &content);
        let err = fx
            .error(
                "edit",
                json!({"path": "m.rs", "old_string": "fn main() {\n    let x = 10;\n    let y = 2;", "new_string": "z"}),
            )
            .await;
        assert_eq!(
            err.message(),
            "old_string was not found in m.rs. It must match the file's current text exactly, including whitespace \
             and line breaks.\nThe closest part of the file is lines 31-33 (2 of 3 lines the same ignoring \
             whitespace):\n    31\tfn main() {\n    32\t    let x = 1;\n    33\t    let y = 2;\nLine 32 differs: the \
             file has \"    let x = 1;\" where old_string has \"    let x = 10;\".\nCopy the text to replace from the \
             file as it is (without the line numbers), or read it again."
        );
        // A long old_string: the error stays short.
        let old: String = (1..=40).map(|i| format!("let v{i} = {};\n", i + 1)).collect();
        let err = fx.error("edit", json!({"path": "m.rs", "old_string": old, "new_string": "z"})).await;
        assert!(err.message().lines().count() <= 20, "{}", err.message());
        assert!(err.message().contains("    ... (22 more lines)\nLine 1 differs"), "{}", err.message());
    }

    #[tokio::test]
    async fn argument_names_of_other_agents_are_accepted() {
        let fx = Fixture::new();
        fx.write("a.txt", "one two\n");
        // Claude Code's names, then opencode's.
        fx.text("edit", json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"})).await;
        fx.text(
            "edit",
            json!({"filePath": "a.txt", "oldString": "two", "newString": "2", "replaceAll": true}),
        )
        .await;
        assert_eq!(fx.read("a.txt"), b"1 2\n");
        fx.text(
            "multi_edit",
            json!({"filePath": "a.txt", "edits": [{"oldString": "1", "newString": "one"}]}),
        )
        .await;
        fx.text("write", json!({"file_path": "b.txt", "content": "b\n"})).await;
        assert_eq!(fx.text("read", json!({"filePath": "b.txt"})).await, "     1\tb\n");
        assert_eq!(fx.read("a.txt"), b"one 2\n");
    }

    #[tokio::test]
    async fn tolerant_summary_says_so() {
        let fx = Fixture::new();
        fx.write("a.py", "def f():\n    return 1   \n");
        let out = fx
            .call("edit", json!({"path": "a.py", "old_string": "return 1\n", "new_string": "return 2\n"}))
            .await;
        let out = out.unwrap();
        assert_eq!(
            out.text_content(),
            "Edited a.py: replaced 1 occurrence at line 2 (1 line removed, 1 line added). old_string did not match exactly; it matched once differences in whitespace, indentation, quotes or dashes were ignored, and only the matched text was replaced."
        );
        assert_eq!(fx.read("a.py"), b"def f():\n    return 2\n");
        assert_eq!(out.metadata["match"], json!("indentation"));
    }

    #[tokio::test]
    async fn non_utf8_files_are_edited_byte_exactly() {
        let fx = Fixture::new();
        fx.write("latin1.txt", b"caf\xe9 = 1\nname = old\n");
        fx.text("edit", json!({"path": "latin1.txt", "old_string": "old", "new_string": "new"})).await;
        assert_eq!(fx.read("latin1.txt"), b"caf\xe9 = 1\nname = new\n");
    }

    #[tokio::test]
    async fn binary_and_outside_files_are_refused() {
        let fx = Fixture::new();
        fx.write("x.bin", b"a\0b");
        let err = fx.error("edit", json!({"path": "x.bin", "old_string": "a", "new_string": "b"})).await;
        assert_eq!(err.message(), "x.bin is a binary file; edit only changes text files.");
        std::fs::write(fx.dir.path().join("out.txt"), "a").unwrap();
        let err = fx.error("edit", json!({"path": "../out.txt", "old_string": "a", "new_string": "b"})).await;
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read(fx.dir.path().join("out.txt")).unwrap(), b"a");
    }
}
