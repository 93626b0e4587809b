//! Text files as the editing tools (`edit`, `multi_edit`, `apply_patch`) see them: reading with the size and binary checks, the BOM, line endings, typographic characters.

use std::io::{self, Read};

use tool_runtime::ToolError;

use crate::fs::ops::{FileChanged, FileKind, Operations, Target};
use crate::text::{SNIFF_BYTES, looks_binary, plural};

/// Files larger than this are not edited.
pub const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// The UTF-8 byte-order mark.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads the text file `path` for editing: `None` when it does not exist; an error the model can
/// act on for a directory, a special file, a file over [`MAX_EDIT_BYTES`] or a binary file.
/// `tool` names the tool in those messages.
pub(crate) fn read_for_edit(
    ops: &dyn Operations,
    path: &Target,
    display: &str,
    tool: &str,
) -> Result<Option<Vec<u8>>, ToolError> {
    let info = match ops.metadata(path) {
        Ok(info) => info,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("read", display, e)),
    };
    match info.kind {
        FileKind::File => {}
        FileKind::Dir => {
            return Err(ToolError::invalid_arguments(format!(
                "{display} is a directory; give the path of a file inside it."
            )));
        }
        _ => {
            return Err(ToolError::invalid_arguments(format!(
                "{display} is not a regular file; {tool} only edits files."
            )));
        }
    }
    if info.len > MAX_EDIT_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is {}, more than the 64 MiB {tool} handles; change it with bash (for example sed).",
            plural(info.len, "byte")
        )));
    }
    let mut bytes = Vec::new();
    ops.open(path)
        .and_then(|file| file.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| io_error("read", display, e))?;
    if looks_binary(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is a binary file; {tool} only changes text files."
        )));
    }
    Ok(Some(bytes))
}

/// A file-system error of an editing tool, as the model reads it. A [`FileChanged`] error says
/// that nothing was written and what to do.
pub(crate) fn io_error(verb: &str, display: &str, error: io::Error) -> ToolError {
    if FileChanged::is(&error) {
        return ToolError::execution(format!(
            "{display} changed while this edit was being made (another process wrote it after it was read); \
             nothing was written. Read the file again and redo the edit against its current text."
        ));
    }
    let message = format!("Cannot {verb} {display}: {error}");
    ToolError::from_io(error).with_message(message)
}

/// Puts a [`Diff`] in a result's metadata: `diff`, and `diff_truncated: true` when it was cut.
pub(crate) trait WithDiff {
    fn with_diff(self, diff: Diff) -> Self;
}

impl WithDiff for tool_runtime::ToolOutput {
    fn with_diff(self, diff: Diff) -> Self {
        let out = self.with_metadata("diff", serde_json::Value::String(diff.text));
        if diff.cut { out.with_metadata("diff_truncated", serde_json::Value::Bool(true)) } else { out }
    }
}

/// The most a diff in a result's metadata holds, in bytes.
pub(crate) const MAX_DIFF_BYTES: usize = 256 * 1024;
/// The most lines of the changed region (of each text) that a diff compares: a change spanning
/// more is shown from its start, and cut.
const MAX_DIFF_LINES: usize = 200_000;
/// How long the line comparison may take before it settles for a coarser diff.
const DIFF_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// A unified diff for the UI (`diff` metadata), and whether it was cut.
#[derive(Debug, Default)]
pub(crate) struct Diff {
    pub(crate) text: String,
    /// Only the start of the change is shown: the diff would have been longer than the bytes it
    /// was given, or the change spans more than [`MAX_DIFF_LINES`] lines.
    pub(crate) cut: bool,
}

/// A unified diff of two texts (3 lines of context) of at most `max_bytes`, for the UI.
///
/// Only the lines between the texts' common start and common end are compared, at most
/// [`MAX_DIFF_LINES`] of them, so a small change to a large file costs little and a large
/// change (a `replace_all` over every line) costs memory in proportion to what is shown. A diff
/// that would be longer is cut after its last whole line that fits, with the hunk header
/// counting what is shown, so what is kept is still a valid diff.
pub(crate) fn unified_diff(display: &str, before: &str, after: &str, max_bytes: usize) -> Diff {
    let (old, new) = (before.as_bytes(), after.as_bytes());
    let common = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    // The shared start, back to a line start, then 3 more lines back as context.
    let mut head = memchr::memrchr(b'\n', &old[..common]).map_or(0, |i| i + 1);
    for _ in 0..3 {
        if head == 0 {
            break;
        }
        head = memchr::memrchr(b'\n', &old[..head - 1]).map_or(0, |i| i + 1);
    }
    let skipped = memchr::memchr_iter(b'\n', &old[..head]).count();
    // The shared end, within what follows the shared start, forward to a line start, then 3
    // more lines as context.
    let room = (old.len() - head).min(new.len() - head);
    let shared_end = old.iter().rev().zip(new.iter().rev()).take(room).take_while(|(a, b)| a == b).count();
    let (mut old_end, mut new_end) = (old.len() - shared_end, new.len() - shared_end);
    if old_end > head && old[old_end - 1] != b'\n' {
        match memchr::memchr(b'\n', &old[old_end..]) {
            Some(i) => (old_end, new_end) = (old_end + i + 1, new_end + i + 1),
            None => (old_end, new_end) = (old.len(), new.len()),
        }
    }
    for _ in 0..3 {
        match memchr::memchr(b'\n', &old[old_end..]) {
            Some(i) => (old_end, new_end) = (old_end + i + 1, new_end + i + 1),
            None => (old_end, new_end) = (old.len(), new.len()),
        }
    }
    let (old_mid, old_window) = first_lines(&before[head..old_end], MAX_DIFF_LINES);
    let (new_mid, new_window) = first_lines(&after[head..new_end], MAX_DIFF_LINES);
    let windowed = old_window || new_window;
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIME)
        .newline_terminated(true)
        .diff_lines(old_mid, new_mid);
    let mut groups = diff.grouped_ops(3);
    let (old_lines, new_lines) = (diff.old_len(), diff.new_len());
    if windowed
        && groups.len() > 1
        && let Some(last) = groups.last().and_then(|group| group.last())
        && (last.old_range().end >= old_lines || last.new_range().end >= new_lines)
    {
        // The windows may end at different places of the file: what the comparison says
        // about their last lines is not to be trusted. (A single group is kept: the bytes
        // shown run out long before its end.)
        groups.pop();
    }
    let mut out = Diff { text: format!("--- a/{display}\n+++ b/{display}\n"), cut: windowed };
    let mut any = false;
    'groups: for group in &groups {
        let (old_start, new_start) = (group[0].old_range().start, group[0].new_range().start);
        let (mut old_count, mut new_count) = (0, 0);
        let mut body = String::new();
        let mut full = false;
        for op in group {
            for change in diff.iter_changes(op) {
                let mut line = format!("{}{}", change.tag(), change.value());
                if change.missing_newline() {
                    line.push_str("\n\\ No newline at end of file\n");
                }
                // 40 bytes: room for the hunk header.
                if out.text.len() + body.len() + line.len() + 40 > max_bytes {
                    full = true;
                    break;
                }
                body.push_str(&line);
                match change.tag() {
                    similar::ChangeTag::Delete => old_count += 1,
                    similar::ChangeTag::Insert => new_count += 1,
                    similar::ChangeTag::Equal => (old_count, new_count) = (old_count + 1, new_count + 1),
                }
            }
            if full {
                break;
            }
        }
        if old_count + new_count > 0 {
            let old_range = hunk_range(skipped + old_start, old_count);
            let new_range = hunk_range(skipped + new_start, new_count);
            out.text.push_str(&format!("@@ -{old_range} +{new_range} @@\n"));
            out.text.push_str(&body);
            any = true;
        }
        if full {
            out.cut = true;
            break 'groups;
        }
    }
    if !any && !out.cut {
        out.text.clear();
    }
    out
}

/// `text` up to the end of its `n`th line, and whether anything was left out.
fn first_lines(text: &str, n: usize) -> (&str, bool) {
    match memchr::memchr_iter(b'\n', text.as_bytes()).nth(n.saturating_sub(1)) {
        Some(end) if end + 1 < text.len() => (&text[..end + 1], true),
        _ => (text, false),
    }
}

/// A hunk header's range as `diff -u` writes it: `start,count`, or `start` alone for one line.
fn hunk_range(start: usize, count: usize) -> String {
    match count {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{count}", start + 1),
    }
}

/// The line endings a file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endings {
    /// Mostly `\r\n`.
    Crlf,
    /// Only `\n`.
    Lf,
    /// Both, with `\n` at least as common: text is inserted as given.
    Mixed,
}

pub(crate) fn line_endings(body: &[u8]) -> Endings {
    let crlf = memchr::memmem::find_iter(body, b"\r\n").count();
    let lf = memchr::memchr_iter(b'\n', body).count() - crlf;
    if crlf == 0 {
        Endings::Lf
    } else if crlf > lf {
        Endings::Crlf
    } else {
        Endings::Mixed
    }
}

/// Turns every `\n` not already preceded by `\r` into `\r\n`.
pub(crate) fn to_crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut previous = '\0';
    for c in text.chars() {
        if c == '\n' && previous != '\r' {
            out.push('\r');
        }
        out.push(c);
        previous = c;
    }
    out
}

/// The plain character a typographic quote, dash or space stands for.
pub(crate) fn plain(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2007}' | '\u{202F}' => ' ',
        c => c,
    }
}

pub(crate) fn plain_str(text: &str) -> String {
    text.chars().map(plain).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `similar` writes for the whole texts, as the diff was made before it was bounded.
    fn whole(before: &str, after: &str) -> String {
        similar::TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(3)
            .header("a/f", "b/f")
            .to_string()
    }

    #[test]
    fn the_diff_of_the_changed_region_is_the_diff_of_the_whole() {
        let lines: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let cases = [
            ("", "new\n"),
            ("old\n", ""),
            ("a\nb\nc\n", "a\nb\nc\n"),
            ("a\nb", "a\nc"),
            ("a\nb\n", "a\nb"),
            ("x\n", "x\nx\n"),
            ("x\nx\n", "x\n"),
            ("same\nsame\nsame\n", "same\nother\nsame\nsame\n"),
        ];
        for (before, after) in cases {
            assert_eq!(
                unified_diff("f", before, after, MAX_DIFF_BYTES).text,
                whole(before, after),
                "{before:?}"
            );
        }
        let edits = [
            lines.replace("line 20\n", "line twenty\n"),
            lines.replace("line 1\n", ""),
            lines.replace("line 40\n", "line 40\nline 41"),
            lines.replace("line 3\n", "x\n").replace("line 30\n", "y\ny\n"),
            lines.replace("line 5\n", "x\n").replace("line 9\n", "y\n"),
            format!("{lines}{lines}").replacen("line 7\n", "seven\n", 2),
        ];
        for after in &edits {
            let diff = unified_diff("f", &lines, after, MAX_DIFF_BYTES);
            assert_eq!(diff.text, whole(&lines, after));
            assert!(!diff.cut);
        }
    }

    #[test]
    fn a_long_diff_is_cut_after_a_whole_line_and_stays_a_valid_diff() {
        let before: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line", "LINE");
        let diff = unified_diff("f", &before, &after, 2000);
        assert!(diff.cut);
        assert!(diff.text.len() <= 2000, "{}", diff.text.len());
        // The hunk header counts the lines kept: every kept line is a removal here.
        let removed = diff.text.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).count();
        assert!(
            diff.text.starts_with(&format!("--- a/f\n+++ b/f\n@@ -1,{removed} +0,0 @@\n-line 1\n")),
            "{}",
            diff.text
        );
        assert!(diff.text.ends_with('\n'));
        // Room for nothing but the file header: still cut, still said.
        let diff = unified_diff("f", &before, &after, 10);
        assert!(diff.cut);
        assert_eq!(diff.text, "--- a/f\n+++ b/f\n");
    }
}
