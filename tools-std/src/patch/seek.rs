//! One file's update, applied to its text: each hunk's lines sought forward from the previous hunk with tolerant fallbacks, and errors that show the closest lines.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::editing::closest::{Window, first_difference};
use crate::editing::line_numbers::strip_patch_lines;
use crate::editing::text_file::{BOM, Endings, line_endings, plain};
use crate::patch::parse::Hunk;
use crate::text::{cut_line, plural};

/// How a hunk's lines were found, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fallback {
    /// Line for line, exactly.
    Exact,
    /// Ignoring trailing whitespace.
    TrailingWhitespace,
    /// Ignoring leading and trailing whitespace.
    Whitespace,
    /// Ignoring surrounding whitespace, with typographic quotes, dashes and spaces made plain.
    Punctuation,
}

impl Fallback {
    const ALL: [Fallback; 4] =
        [Fallback::Exact, Fallback::TrailingWhitespace, Fallback::Whitespace, Fallback::Punctuation];

    /// The name in the result's metadata.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Fallback::Exact => "exact",
            Fallback::TrailingWhitespace => "trailing_whitespace",
            Fallback::Whitespace => "whitespace",
            Fallback::Punctuation => "punctuation",
        }
    }

    /// How the result's text describes the match.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Fallback::Exact => "exactly",
            Fallback::TrailingWhitespace => "only when trailing whitespace was ignored",
            Fallback::Whitespace => "only when leading and trailing whitespace was ignored",
            Fallback::Punctuation => {
                "only when whitespace and typographic quotes, dashes and spaces were ignored"
            }
        }
    }

    /// What of a line this fallback compares: two lines match when theirs are equal.
    fn key(self, line: &str) -> Cow<'_, str> {
        match self {
            Fallback::Exact => Cow::Borrowed(line),
            Fallback::TrailingWhitespace => Cow::Borrowed(line.trim_end()),
            Fallback::Whitespace => Cow::Borrowed(line.trim()),
            Fallback::Punctuation => Cow::Owned(line.trim().chars().map(plain).collect()),
        }
    }
}

/// A file's text split into lines, each without its line end; `\r` before a `\n` belongs to the
/// line end.
struct FileLines<'a> {
    lines: Vec<&'a str>,
    /// Whether each line ended with `\r\n`.
    crlf: Vec<bool>,
    /// Whether the last line ended with a line break.
    final_newline: bool,
}

impl<'a> FileLines<'a> {
    fn new(body: &'a str) -> Self {
        let final_newline = body.ends_with('\n');
        let trimmed = body.strip_suffix('\n').unwrap_or(body);
        let mut lines = Vec::new();
        let mut crlf = Vec::new();
        if !body.is_empty() {
            let parts: Vec<&str> = trimmed.split('\n').collect();
            let count = parts.len();
            for (i, line) in parts.into_iter().enumerate() {
                // A `\r` ends the line only where a `\n` follows it.
                let has_cr = line.ends_with('\r') && (i + 1 < count || final_newline);
                crlf.push(has_cr);
                lines.push(if has_cr { &line[..line.len() - 1] } else { line });
            }
        }
        FileLines { lines, crlf, final_newline }
    }
}

/// Where one hunk applies: `old_len` lines from `start` are replaced by the hunk's new lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Placement {
    /// The hunk's index in the patch.
    hunk: usize,
    start: usize,
    old_len: usize,
    /// The hunk's lines, with a trailing blank line left out when only that made it fit.
    drop_trailing_blank: bool,
}

/// What applying an update's hunks produced.
#[derive(Debug)]
pub(crate) struct Updated {
    /// The new content, with the old BOM and line ends.
    pub(crate) bytes: Vec<u8>,
    /// How each hunk was found, in order.
    pub(crate) fallbacks: Vec<Fallback>,
    /// The hunks (1-based) found only once `read`'s line numbers were removed from their lines.
    pub(crate) line_numbers: Vec<usize>,
}

/// A hunk that does not apply: the message says which, what was not found, and the closest
/// lines there are, as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkError {
    pub(crate) message: String,
}

impl std::fmt::Display for HunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HunkError {}

/// How many lines of a hunk or of the file an error shows at most.
const SHOWN_LINES: usize = 12;
/// How many characters of one line an error shows at most.
const SHOWN_CHARS: usize = 200;

/// Applies `hunks` to `content` (a UTF-8 text file's bytes). `display` and the hunk numbers
/// name the place in errors.
pub(crate) fn apply_hunks(content: &[u8], hunks: &[Hunk], display: &str) -> Result<Updated, HunkError> {
    let (bom, body) = match content.strip_prefix(BOM) {
        Some(body) => (true, body),
        None => (false, content),
    };
    let Ok(body) = std::str::from_utf8(body) else {
        return Err(HunkError {
            message: format!(
                "{display} is not UTF-8 text, which apply_patch needs to match lines; change it with edit (which \
                 works on any text encoding) or bash."
            ),
        });
    };
    let file = FileLines::new(body);
    let mut placements = Vec::with_capacity(hunks.len());
    let mut fallbacks = Vec::with_capacity(hunks.len());
    // The hunks as applied: some without the line numbers copied from `read`.
    let mut stripped: Vec<Option<Hunk>> = vec![None; hunks.len()];
    let mut line_numbers = Vec::new();
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let number = index + 1;
        if let Some(header) = &hunk.header {
            match seek(&file.lines, std::slice::from_ref(header), cursor, false) {
                Some((at, _)) => cursor = at + 1,
                None => {
                    return Err(header_error(&file, hunk, header, number, hunks.len(), display, cursor));
                }
            }
        }
        if hunk.old.is_empty() {
            // Only added lines: after the header line if there was one (which moved the cursor
            // there), else appended at the end of the file without moving the cursor, so a
            // later hunk may still apply above (as codex does).
            let start = if hunk.header.is_some() { cursor } else { file.lines.len() };
            placements.push(Placement { hunk: index, start, old_len: 0, drop_trailing_blank: false });
            fallbacks.push(Fallback::Exact);
            continue;
        }
        let mut found = locate(&file, hunk, cursor);
        if found.is_none()
            && let Some(plain) = without_line_numbers(hunk)
        {
            found = locate(&file, &plain, cursor);
            if found.is_some() {
                stripped[index] = Some(plain);
                line_numbers.push(number);
            }
        }
        let Some((start, fallback, drop_trailing_blank)) = found else {
            return Err(not_found_error(&file, hunk, number, hunks.len(), display, cursor));
        };
        let old_len = hunk.old.len() - usize::from(drop_trailing_blank);
        placements.push(Placement { hunk: index, start, old_len, drop_trailing_blank });
        fallbacks.push(fallback);
        cursor = start + old_len;
    }
    // In file order; hunks at the same place (an append at the end) keep the patch's order.
    placements.sort_by_key(|p| p.start);
    let applied: Vec<&Hunk> =
        hunks.iter().zip(&stripped).map(|(hunk, plain)| plain.as_ref().unwrap_or(hunk)).collect();
    Ok(Updated { bytes: render(&file, &applied, &placements, bom, body), fallbacks, line_numbers })
}

/// Where a hunk's lines are, from `cursor` on: the start, how they matched, and whether a
/// trailing blank line of the hunk had to be left out.
fn locate(file: &FileLines<'_>, hunk: &Hunk, cursor: usize) -> Option<(usize, Fallback, bool)> {
    let found = seek(&file.lines, &hunk.old, cursor, hunk.end_of_file)
        .map(|(start, fallback)| (start, fallback, false));
    if found.is_none() && hunk.old.len() > 1 && hunk.old.last().is_some_and(|l| l.trim().is_empty()) {
        // A blank line at the end of a hunk is often the model's, not the file's.
        let shorter = &hunk.old[..hunk.old.len() - 1];
        return seek(&file.lines, shorter, cursor, hunk.end_of_file)
            .map(|(start, fallback)| (start, fallback, true));
    }
    found
}

/// The hunk without `read`'s line numbers, when every line it expects in the file (context and
/// removed lines, numbered consecutively) carries one; its added lines lose theirs too when every
/// one of them has one.
fn without_line_numbers(hunk: &Hunk) -> Option<Hunk> {
    let old: Vec<&str> = hunk.old.iter().map(String::as_str).collect();
    let old = strip_patch_lines(&old, true)?;
    let added: Vec<&str> = hunk
        .new
        .iter()
        .zip(&hunk.kept)
        .filter(|(_, kept)| kept.is_none())
        .map(|(line, _)| line.as_str())
        .collect();
    let plain_added = strip_patch_lines(&added, false).unwrap_or(added);
    let mut plain_added = plain_added.into_iter();
    let new = hunk
        .kept
        .iter()
        .map(|kept| match kept {
            Some(o) => old[*o].to_owned(),
            None => plain_added.next().unwrap_or_default().to_owned(),
        })
        .collect();
    Some(Hunk { old: old.into_iter().map(str::to_owned).collect(), new, ..hunk.clone() })
}

/// The first place at or after `from` where `pattern` matches, trying each fallback over the
/// whole range before the next one. With `at_end`, the end of the file is tried first.
fn seek(lines: &[&str], pattern: &[String], from: usize, at_end: bool) -> Option<(usize, Fallback)> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    if at_end && last_start >= from {
        for fallback in Fallback::ALL {
            let at = lines[last_start..].iter().zip(pattern);
            if at.into_iter().all(|(f, p)| fallback.key(f) == fallback.key(p)) {
                return Some((last_start, fallback));
            }
        }
    }
    Fallback::ALL.into_iter().find_map(|fallback| Some((find(lines, pattern, from, fallback)?, fallback)))
}

/// The first start at or after `from` where every line of `pattern` matches the file's by
/// `fallback`: Knuth-Morris-Pratt over lines, whose keys are compared, so that a hunk in a file
/// that repeats its lines costs a pass over the file and not a pass per line.
fn find(lines: &[&str], pattern: &[String], from: usize, fallback: Fallback) -> Option<usize> {
    if pattern.is_empty() {
        return (from <= lines.len()).then_some(from);
    }
    let wanted: Vec<Cow<'_, str>> = pattern.iter().map(|line| fallback.key(line)).collect();
    // For each prefix of `wanted`, the longest proper prefix that is also its suffix.
    let mut border = vec![0usize; wanted.len()];
    let mut k = 0;
    for i in 1..wanted.len() {
        while k > 0 && wanted[i] != wanted[k] {
            k = border[k - 1];
        }
        if wanted[i] == wanted[k] {
            k += 1;
        }
        border[i] = k;
    }
    let mut matched = 0;
    for (i, line) in lines.iter().enumerate().skip(from) {
        let line = fallback.key(line);
        while matched > 0 && line != wanted[matched] {
            matched = border[matched - 1];
        }
        if line == wanted[matched] {
            matched += 1;
        }
        if matched == wanted.len() {
            return Some(i + 1 - wanted.len());
        }
    }
    None
}

/// The new content: untouched lines byte for byte; a context line keeps the file's text and
/// line end; a line that replaces another keeps that line's end (a file with mixed line ends
/// stays mixed where it was not changed); any other added line takes the end of the line before
/// it.
fn render(file: &FileLines<'_>, hunks: &[&Hunk], placements: &[Placement], bom: bool, body: &str) -> Vec<u8> {
    let common_crlf = line_endings(body.as_bytes()) == Endings::Crlf;
    let mut out = Vec::with_capacity(body.len() + 64 * hunks.len() + 3);
    if bom {
        out.extend_from_slice(BOM);
    }
    let count = file.lines.len();
    // Whether file line `i` ends with `\r\n` (`None`: the last line, without a line end).
    let end = |i: usize| (i + 1 < count || file.final_newline).then_some(file.crlf[i]);
    // The end a patch line takes from file line `i`: a patch line always ends its line.
    let end_taken = |i: usize| end(i).unwrap_or(common_crlf);
    let push = |out: &mut Vec<u8>, line: &str, end: Option<bool>| {
        out.extend_from_slice(line.as_bytes());
        match end {
            Some(true) => out.extend_from_slice(b"\r\n"),
            Some(false) => out.push(b'\n'),
            None => {}
        }
    };
    let mut next = 0;
    // Whether the output ends in the file's last line, left without a line end.
    let mut open = false;
    for placement in placements {
        let hunk = hunks[placement.hunk];
        for i in next..placement.start {
            push(&mut out, file.lines[i], end(i));
            open = end(i).is_none();
        }
        let mut new_lines: &[String] = &hunk.new;
        if placement.drop_trailing_blank && new_lines.last().is_some_and(|l| l.trim().is_empty()) {
            new_lines = &new_lines[..new_lines.len() - 1];
        }
        if !new_lines.is_empty() && open {
            // Lines added after a last line that had no line end: it gets one first.
            out.extend_from_slice(if common_crlf { b"\r\n" } else { b"\n" });
            open = false;
        }
        // The context line each patch line repeats, if it does (and matched within the place).
        let context = |k: usize| hunk.kept.get(k).copied().flatten().filter(|&o| o < placement.old_len);
        // For each patch line, the index in `old` of the next context line (or `old_len`).
        let mut next_context = vec![placement.old_len; new_lines.len()];
        let mut following = placement.old_len;
        for k in (0..new_lines.len()).rev() {
            next_context[k] = following;
            if let Some(o) = context(k) {
                following = o;
            }
        }
        // The first removed line of the current run of changes, and the added lines since.
        let mut removed_from = 0;
        let mut rank = 0;
        let mut previous = placement.start.checked_sub(1).map_or(common_crlf, end_taken);
        for (k, line) in new_lines.iter().enumerate() {
            let crlf = match context(k) {
                Some(o) => {
                    removed_from = o + 1;
                    rank = 0;
                    // It keeps the file's own text too: it may have matched only loosely.
                    let i = placement.start + o;
                    push(&mut out, file.lines[i], Some(end_taken(i)));
                    previous = end_taken(i);
                    continue;
                }
                None => {
                    let removed = next_context[k].saturating_sub(removed_from);
                    let crlf = if removed > 0 {
                        end_taken(placement.start + removed_from + rank.min(removed - 1))
                    } else {
                        previous
                    };
                    rank += 1;
                    crlf
                }
            };
            push(&mut out, line, Some(crlf));
            previous = crlf;
        }
        next = placement.start + placement.old_len;
    }
    for i in next..count {
        push(&mut out, file.lines[i], end(i));
    }
    out
}

fn header_error(
    file: &FileLines<'_>,
    hunk: &Hunk,
    header: &str,
    number: usize,
    total: usize,
    display: &str,
    cursor: usize,
) -> HunkError {
    let mut message = format!(
        "Hunk {number} of {total} for {display} (patch line {}) does not apply: its `@@ {}` line was not found {}.",
        hunk.line,
        cut_line(header, SHOWN_CHARS, 0),
        searched_from(cursor)
    );
    if let Some(at) = seek(&file.lines, std::slice::from_ref(&header.to_owned()), 0, false) {
        let _ = write!(
            message,
            " It occurs at line {}, before the place the previous hunk ended; hunks must be in file order.",
            at.0 + 1
        );
    } else if let Some(window) = crate::editing::closest::closest(&file.lines, &[header]) {
        // The line the header most likely meant, and where the two part.
        let _ = writeln!(message, " The closest line in the file is line {}:", window.start + 1);
        crate::editing::closest::show_numbered(
            &mut message,
            &file.lines[window.start..=window.start],
            window.start + 1,
        );
        if let Some(difference) =
            first_difference(&file.lines, window.start, &[header], "the `@@` line", false)
        {
            message.push_str(&difference);
        }
        message.push_str(
            " The text after `@@ ` must be one whole line of the file (a function's first line, say).",
        );
    } else {
        message.push_str(" No line of the file comes close to it.");
    }
    message.push_str(NEXT_STEP);
    HunkError { message }
}

fn not_found_error(
    file: &FileLines<'_>,
    hunk: &Hunk,
    number: usize,
    total: usize,
    display: &str,
    cursor: usize,
) -> HunkError {
    let mut message = format!(
        "Hunk {number} of {total} for {display} (patch line {}) does not apply: {} not found {}, not even ignoring \
         whitespace and typographic quotes and dashes:\n",
        hunk.line,
        if hunk.old.len() == 1 {
            "this line was".to_owned()
        } else {
            format!("these {} lines were", hunk.old.len())
        },
        searched_from(cursor)
    );
    show_lines(&mut message, hunk.old.iter().map(String::as_str), None);
    let wanted: Vec<&str> = hunk.old.iter().map(String::as_str).collect();
    match crate::editing::closest::closest(&file.lines, &wanted) {
        Some(Window { start, same, .. }) => {
            let end = (start + hunk.old.len()).min(file.lines.len());
            let _ = writeln!(
                message,
                "The closest lines in the file are lines {}-{end} ({} of {} the same ignoring whitespace):",
                start + 1,
                same,
                plural(hunk.old.len() as u64, "line")
            );
            show_lines(&mut message, file.lines[start..end].iter().copied(), Some(start + 1));
            if let Some(difference) = first_difference(&file.lines, start, &wanted, "the hunk", false) {
                message.push_str(&difference);
                message.push('\n');
            }
        }
        None => message.push_str("No line of the hunk occurs in the file, even ignoring whitespace.\n"),
    }
    if cursor > 0
        && let Some((at, _)) = seek(&file.lines, &hunk.old, 0, false)
    {
        let _ = writeln!(
            message,
            "The lines do occur at line {}, before the place the previous hunk ended (line {cursor}); hunks must be in \
             file order.",
            at + 1
        );
    }
    message.push_str(NEXT_STEP.trim_start());
    HunkError { message }
}

const NEXT_STEP: &str = " Nothing was changed: no file of the patch was written. Read the file again and rewrite this \
                         hunk against its current text (context lines start with a space and must match the file).";

fn searched_from(cursor: usize) -> String {
    if cursor == 0 {
        "in the file".to_owned()
    } else {
        format!("after line {cursor} (where the previous hunk ended)")
    }
}

/// Up to [`SHOWN_LINES`] lines, each indented and cut, numbered when `first` is given.
fn show_lines<'a>(out: &mut String, lines: impl ExactSizeIterator<Item = &'a str>, first: Option<usize>) {
    let total = lines.len();
    for (i, line) in lines.take(SHOWN_LINES).enumerate() {
        match first {
            Some(first) => {
                let _ = writeln!(out, "{:>6}\t{}", first + i, cut_line(line, SHOWN_CHARS, 0));
            }
            None => {
                let _ = writeln!(out, "    {}", cut_line(line, SHOWN_CHARS, 0));
            }
        }
    }
    if total > SHOWN_LINES {
        let _ = writeln!(out, "    ... ({} more)", plural((total - SHOWN_LINES) as u64, "line"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse::{FileChange, parse_patch};

    fn hunks(patch_body: &str) -> Vec<Hunk> {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{patch_body}*** End Patch\n");
        match parse_patch(&patch).unwrap().files.remove(0) {
            FileChange::Update { hunks, .. } => hunks,
            other => panic!("{other:?}"),
        }
    }

    fn apply(content: &str, body: &str) -> Result<(String, Vec<Fallback>), String> {
        apply_hunks(content.as_bytes(), &hunks(body), "f")
            .map(|u| (String::from_utf8(u.bytes).unwrap(), u.fallbacks))
            .map_err(|e| e.message)
    }

    #[test]
    fn hunks_apply_in_order_from_the_previous_one() {
        let content = "a\nx\nb\nx\nc\n";
        // The second `x` is meant: the header moves the search past the first.
        let (out, _) = apply(content, "@@ b\n-x\n+y\n").unwrap();
        assert_eq!(out, "a\nx\nb\ny\nc\n");
        let (out, _) = apply(content, "@@\n-x\n+1\n@@\n-x\n+2\n").unwrap();
        assert_eq!(out, "a\n1\nb\n2\nc\n");
    }

    #[test]
    fn fallbacks_in_order_and_recorded() {
        let content = "fn f() {   \n    let s = \"it's\";\n}\n";
        let (out, fb) = apply(content, "@@\n-fn f() {\n+fn g() {\n").unwrap();
        assert_eq!(
            (out.as_str(), fb),
            ("fn g() {\n    let s = \"it's\";\n}\n", vec![Fallback::TrailingWhitespace])
        );
        let (_, fb) = apply(content, "@@\n-let s = \"it's\";\n+x\n").unwrap();
        assert_eq!(fb, vec![Fallback::Whitespace]);
        let (out, fb) = apply(content, "@@\n-    let s = “it’s”;\n+    let s = 1;\n").unwrap();
        assert_eq!((out.as_str(), fb), ("fn f() {   \n    let s = 1;\n}\n", vec![Fallback::Punctuation]));
    }

    #[test]
    fn end_of_file_prefers_the_last_place() {
        let content = "x\nend\nx\nend\n";
        let (out, _) = apply(content, "@@\n x\n-end\n+END\n*** End of File\n").unwrap();
        assert_eq!(out, "x\nend\nx\nEND\n");
    }

    #[test]
    fn pure_additions_go_after_the_header_or_at_the_end() {
        let (out, _) = apply("a\nb\n", "@@ a\n+inserted\n").unwrap();
        assert_eq!(out, "a\ninserted\nb\n");
        let (out, _) = apply("a\nb", "@@\n+c\n").unwrap();
        assert_eq!(out, "a\nb\nc\n");
        let (out, _) = apply("", "@@\n+first\n").unwrap();
        assert_eq!(out, "first\n");
    }

    #[test]
    fn an_append_without_context_keeps_the_place_for_later_hunks() {
        // codex appends such a hunk at the end and goes on searching from where it was.
        let (out, _) = apply("a\nb\nc\n", "@@\n+end\n@@\n-a\n+A\n@@\n+end2\n").unwrap();
        assert_eq!(out, "A\nb\nc\nend\nend2\n");
        // After a hunk that ends the file without a final line end, an append adds one line end.
        let (out, _) = apply("a\nb", "@@\n-b\n+B\n*** End of File\n@@\n+c\n").unwrap();
        assert_eq!(out, "a\nB\nc\n");
        let (out, _) = apply("a\nb", "@@\n+c\n@@\n-a\n+A\n").unwrap();
        assert_eq!(out, "A\nb\nc\n");
    }

    #[test]
    fn line_numbers_copied_from_read_are_removed_when_every_line_has_one() {
        let content = "fn a() {}\nfn b() {\n    1\n}\n";
        // Context copied as read shows it (its first space taken as the marker), removed lines
        // after `-`, added lines with numbers too.
        let body = "@@\n     2\tfn b() {\n-     3\t    1\n+     3\t    2\n      4\t}\n";
        let updated = apply_hunks(content.as_bytes(), &hunks(body), "f").unwrap();
        assert_eq!(String::from_utf8(updated.bytes).unwrap(), "fn a() {}\nfn b() {\n    2\n}\n");
        assert_eq!(updated.line_numbers, [1]);
        // Added lines without numbers are kept as they are.
        let updated = apply_hunks(content.as_bytes(), &hunks("@@\n-     3\t    1\n+    3\n"), "f").unwrap();
        assert_eq!(String::from_utf8(updated.bytes).unwrap(), "fn a() {}\nfn b() {\n    3\n}\n");
        // Not every line numbered, or not consecutively: not a copy of read's output.
        assert!(apply(content, "@@\n     2\tfn b() {\n-    1\n+    2\n").is_err());
        assert!(apply(content, "@@\n     2\tfn b() {\n-     4\t    1\n+    2\n").is_err());
        // A file that holds such text is matched as it is.
        let listing = "     1\tone\n     2\ttwo\n";
        let updated =
            apply_hunks(listing.as_bytes(), &hunks("@@\n-     2\ttwo\n+     2\tTWO\n"), "f").unwrap();
        assert_eq!(String::from_utf8(updated.bytes).unwrap(), "     1\tone\n     2\tTWO\n");
        assert!(updated.line_numbers.is_empty());
    }

    #[test]
    fn a_replaced_line_keeps_the_line_end_it_had() {
        // Mostly CRLF, one LF line: the LF line stays LF when replaced.
        let (out, _) = apply("a\r\nb\nc\r\nd\r\n", "@@\n-b\n+B\n").unwrap();
        assert_eq!(out, "a\r\nB\nc\r\nd\r\n");
        // Two lines replaced by three: each keeps its own end, the extra one the last one's.
        let (out, _) = apply("a\r\nb\nc\r\nd\n", "@@\n a\n-b\n-c\n+B\n+C\n+C2\n d\n").unwrap();
        assert_eq!(out, "a\r\nB\nC\r\nC2\r\nd\n");
        // A line inserted without a counterpart takes the end of the line before it.
        let (out, _) = apply("a\nb\r\nc\r\n", "@@\n a\n+x\n b\n").unwrap();
        assert_eq!(out, "a\nx\nb\r\nc\r\n");
    }

    #[test]
    fn line_ends_bom_and_a_missing_final_newline_are_kept() {
        let (out, _) = apply("\u{feff}a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2\n").unwrap();
        assert_eq!(out, "\u{feff}a\r\nB\r\nB2\r\nc\r\n");
        let (out, _) = apply("a\nb", "@@\n-a\n+A\n").unwrap();
        assert_eq!(out, "A\nb");
        // A lone `\r` at the very end is content, not a line end.
        let (out, _) = apply("a\nb\r", "@@\n-a\n+A\n").unwrap();
        assert_eq!(out, "A\nb\r");
    }

    #[test]
    fn a_trailing_blank_line_of_the_model_is_forgiven() {
        let (out, _) = apply("a\nb\n", "@@\n-a\n+A\n \n").unwrap();
        assert_eq!(out, "A\nb\n");
    }

    /// The line search finds what comparing the hunk at every start finds, by every fallback,
    /// over small files and hunks made of few distinct lines (where borders matter most).
    #[test]
    fn the_line_search_finds_the_first_match_as_a_naive_search_does() {
        let alphabet = ["a", " a", "a ", "b", "\u{201c}b\u{201d}", "\"b\"", ""];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let file: Vec<&str> = (0..next(12)).map(|_| alphabet[next(alphabet.len())]).collect();
            let pattern: Vec<String> =
                (0..next(5)).map(|_| alphabet[next(alphabet.len())].to_owned()).collect();
            let from = next(file.len() + 2);
            for fallback in Fallback::ALL {
                let naive = (from..=file.len().saturating_sub(pattern.len()))
                    .filter(|_| pattern.len() <= file.len())
                    .find(|&start| {
                        file[start..start + pattern.len()]
                            .iter()
                            .zip(&pattern)
                            .all(|(f, p)| fallback.key(f) == fallback.key(p))
                    });
                assert_eq!(
                    find(&file, &pattern, from, fallback),
                    naive,
                    "{file:?} {pattern:?} {from} {fallback:?}"
                );
            }
        }
        // A long hunk in a file that repeats its lines, differing at its end: one pass.
        let file = vec!["x = 1;"; 200_000];
        let mut pattern = vec!["x = 1;".to_owned(); 5_000];
        pattern.push("y = 2;".to_owned());
        assert_eq!(seek(&file, &pattern, 0, false), None);
    }

    #[test]
    fn a_hunk_that_does_not_apply_shows_the_closest_lines() {
        let content = "fn main() {\n    let x = 1;\n    let y = 2;\n    println!(\"{x}\");\n}\n";
        let err = apply(content, "@@\n fn main() {\n-    let x = 10;\n+    let x = 11;\n     let y = 2;\n")
            .unwrap_err();
        assert_eq!(
            err,
            "Hunk 1 of 1 for f (patch line 3) does not apply: these 3 lines were not found in the file, not even \
             ignoring whitespace and typographic quotes and dashes:\n    fn main() {\n        let x = 10;\n        \
             let y = 2;\nThe closest lines in the file are lines 1-3 (2 of 3 lines the same ignoring \
             whitespace):\n     1\tfn main() {\n     2\t    let x = 1;\n     3\t    let y = 2;\nLine 2 differs: the \
             file has \"    let x = 1;\" where the hunk has \"    let x = 10;\".\nNothing was \
             changed: no file of the patch was written. Read the file again and rewrite this hunk against its \
             current text (context lines start with a space and must match the file)."
        );
        let err = apply(content, "@@ fn other() {\n-x\n+y\n").unwrap_err();
        assert_eq!(
            err,
            "Hunk 1 of 1 for f (patch line 3) does not apply: its `@@ fn other() {` line was not found in the file. \
             The closest line in the file is line 1:\n     1\tfn main() {\nLine 1 differs: the file has \"fn main() \
             {\" where the `@@` line has \"fn other() {\". The text after `@@ ` must be one whole line of the file (a \
             function's first line, say). Nothing was changed: no file of the patch was written. Read the file \
             again and rewrite this hunk against its current text (context lines start with a space and must match \
             the file)."
        );
        let err = apply(content, "@@     let  y =   2;\n-    println!(\"{x}\");\n+    println!(\"{y}\");\n")
            .unwrap_err();
        assert!(err.contains("The closest line in the file is line 3:\n     3\t    let y = 2;\n"), "{err}");
        let err = apply(content, "@@ zzz\n-x\n+y\n").unwrap_err();
        assert!(
            err.contains("line was not found in the file. No line of the file comes close to it. Nothing"),
            "{err}"
        );
        let err = apply("a\nb\n", "@@\n-b\n+B\n@@\n-a\n+A\n").unwrap_err();
        assert!(err.contains("The lines do occur at line 1, before the place the previous hunk ended (line 2); hunks must be in file order."), "{err}");
        let err = apply("a\n", "@@\n-zzz\n+y\n").unwrap_err();
        assert!(
            err.contains("this line was not found in the file")
                && err.contains("No line of the hunk occurs in the file"),
            "{err}"
        );
    }

    #[test]
    fn non_utf8_is_refused() {
        let err = apply_hunks(b"caf\xe9\n", &hunks("@@\n-a\n+b\n"), "f").unwrap_err();
        assert!(err.message.starts_with("f is not UTF-8 text"), "{}", err.message);
    }
}
