//! The line-number prefixes `read` puts before each line, recognised where a model copied them into the text of an edit, and removed.
//!
//! `read` shows line `n` as `format!("{n:>6}\t{text}")`. A model that copies such lines into
//! `old_string` or into a patch's context would match nothing; when every line of the text
//! carries a prefix of exactly that form, the edit tools remove the prefixes and try again.

/// The prefix `read` shows before line `n`.
pub(crate) fn prefix(n: u64) -> String {
    format!("{n:>6}\t")
}

/// `line` without `read`'s prefix and the number it named, if it carries one. With `tabless`, a
/// numbered empty line may have lost its tab (trailing whitespace is often dropped); only lines
/// numbered consecutively are read so, where a lone number cannot be meant. With `in_patch`, the
/// prefix may be one space narrower: a patch's context line copied from `read` as it is lends
/// the first space of the prefix to the context marker.
fn split(line: &str, tabless: bool, in_patch: bool) -> Option<(usize, &str)> {
    let (head, text) = match line.split_once('\t') {
        Some(parts) => parts,
        None if tabless => (line, ""),
        None => return None,
    };
    let digits = head.trim_start_matches(' ');
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = digits.parse().ok()?;
    // Exactly read's width: `{n:>6}` pads to six columns, never more.
    let width_ok = head.len() == digits.len().max(6) || (in_patch && head.len() == digits.len().max(5));
    (n > 0 && width_ok).then_some((n, text))
}

/// The lines of `lines` without their prefixes, when every one carries one; with `consecutive`,
/// only when the numbers also follow each other (as they do for lines copied from a file).
pub(crate) fn strip_lines<'a>(lines: &[&'a str], consecutive: bool) -> Option<Vec<&'a str>> {
    strip(lines, consecutive, false)
}

/// [`strip_lines`] for the lines of a patch's hunk, where a prefix may be one space narrower.
pub(crate) fn strip_patch_lines<'a>(lines: &[&'a str], consecutive: bool) -> Option<Vec<&'a str>> {
    strip(lines, consecutive, true)
}

fn strip<'a>(lines: &[&'a str], consecutive: bool, in_patch: bool) -> Option<Vec<&'a str>> {
    let mut out = Vec::with_capacity(lines.len());
    let mut expected = None;
    for line in lines {
        let (n, text) = split(line, consecutive, in_patch)?;
        if consecutive && expected.is_some_and(|e| e != n) {
            return None;
        }
        expected = Some(n + 1);
        out.push(text);
    }
    (!out.is_empty()).then_some(out)
}

/// `text` without the prefixes, keeping its line breaks (`\n` or `\r\n`), when every line carries
/// one (a final line break ends the last line; it does not start an empty one).
pub(crate) fn strip_text(text: &str, consecutive: bool) -> Option<String> {
    let mut lines = Vec::new();
    let mut ends = Vec::new();
    for piece in text.split_inclusive('\n') {
        let (line, end) = match piece.strip_suffix("\r\n") {
            Some(line) => (line, "\r\n"),
            None => piece.strip_suffix('\n').map_or((piece, ""), |line| (line, "\n")),
        };
        lines.push(line);
        ends.push(end);
    }
    let stripped = strip_lines(&lines, consecutive)?;
    Some(stripped.iter().zip(ends).flat_map(|(line, end)| [*line, end]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_exact_prefix_on_every_line() {
        let copied =
            format!("{}fn main() {{\n{}    x();\n{}\n", prefix(9), prefix(10), prefix(11).trim_end());
        assert_eq!(strip_text(&copied, true).as_deref(), Some("fn main() {\n    x();\n\n"));
        assert_eq!(strip_text("     1\ta\r\n     2\tb", true).as_deref(), Some("a\r\nb"));
        assert_eq!(strip_text(&format!("{}big", prefix(1_234_567)), true).as_deref(), Some("big"));
        for not_numbered in [
            "     1\ta\nb\n",       // one line without
            "     1\ta\n     3\tb", // not consecutive
            "1\ta\n2\tb",           // not read's width
            "       1\ta",          // wider than read's
            "     0\ta",
            "    1a\tb",
            "",
            "plain",
        ] {
            assert_eq!(strip_text(not_numbered, true), None, "{not_numbered:?}");
        }
        assert_eq!(strip_text("     1\ta\n     3\tb", false).as_deref(), Some("a\nb"));
        assert_eq!(strip_lines(&["    1\ta"], true), None);
        assert_eq!(strip_lines(&["     1"], true), Some(vec![""]));
        assert_eq!(strip_lines(&["     1"], false), None, "a lone number is text");
        assert_eq!(strip_patch_lines(&["    1\ta", "     2\tb"], true), Some(vec!["a", "b"]));
    }
}
