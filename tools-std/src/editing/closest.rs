//! Where a text that was not found comes closest in a file, and where the two first differ: for errors that show the model the way.
//!
//! Linear in the file: each file line is compared with the wanted lines through a hash of its
//! normalised text (votes for the window that would align them) and through the words it shares
//! with them (a sliding sum), so a 64 MiB file costs one pass.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use tool_runtime::words::quote;

use crate::editing::text_file::plain;
use crate::text::{cut_line, plural};

/// How many lines of the file an error shows at most.
pub(crate) const SHOWN_LINES: usize = 12;
/// How many characters of one shown line an error shows at most.
const SHOWN_CHARS: usize = 200;
/// How many characters around the place where two lines part are quoted.
const AROUND_CHARS: usize = 60;

/// A window of the file: `len` lines from `start` (0-based), `same` of them equal to the wanted
/// lines ignoring whitespace and typography.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) same: usize,
}

/// A line with typographic characters made plain and every run of whitespace one space.
fn normal(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for word in line.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().map(plain));
    }
    out
}

/// The words of a line: runs of letters, digits and `_`.
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

/// A line the wanted text holds more often than this does not align it with the file.
const MAX_REPEATS: usize = 8;

/// The window of `file` as long as `wanted` (or the file) that is closest to it: most lines
/// equal ignoring whitespace, then most words in common. `None` when nothing is close: no line
/// equal and fewer than half of the wanted words.
pub(crate) fn closest(file: &[&str], wanted: &[&str]) -> Option<Window> {
    let len = wanted.len().min(file.len());
    if len == 0 {
        return None;
    }
    let mut by_line: HashMap<String, Vec<usize>> = HashMap::new();
    for (j, line) in wanted.iter().enumerate() {
        let line = normal(line);
        // Lines of punctuation only (`}`) would align anything with anything.
        if line.chars().any(char::is_alphanumeric) {
            by_line.entry(line).or_default().push(j);
        }
    }
    // So would a line the wanted text repeats many times, at a cost of its repeats for each
    // such line of the file (a file of one line repeated, and a long text of it: minutes).
    by_line.retain(|_, js| js.len() <= MAX_REPEATS);
    let vocabulary: HashSet<&str> = wanted.iter().flat_map(|l| words(l)).collect();
    let mut votes = vec![0u32; file.len()];
    let mut shared = vec![0u32; file.len()];
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, line) in file.iter().enumerate() {
        if !by_line.is_empty()
            && let Some(js) = by_line.get(&normal(line))
        {
            for &j in js {
                if let Some(start) = i.checked_sub(j) {
                    votes[start] += 1;
                }
            }
        }
        seen.clear();
        seen.extend(words(line).filter(|w| vocabulary.contains(w)));
        shared[i] = seen.len() as u32;
    }
    let mut best: Option<(u32, u32, usize)> = None;
    let mut sum: u32 = shared[..len].iter().sum();
    for start in 0..=file.len() - len {
        if start > 0 {
            sum = sum - shared[start - 1] + shared[start + len - 1];
        }
        if best.is_none_or(|(v, s, _)| (votes[start], sum) > (v, s)) {
            best = Some((votes[start], sum, start));
        }
    }
    let (votes, sum, start) = best?;
    if votes == 0 && (vocabulary.is_empty() || (sum as usize) * 2 < vocabulary.len()) {
        return None;
    }
    let same = (0..len).filter(|&j| normal(file[start + j]) == normal(wanted[j])).count();
    Some(Window { start, len, same })
}

/// `lines` numbered from `first` as `read` shows them, each cut, at most [`SHOWN_LINES`].
pub(crate) fn show_numbered(out: &mut String, lines: &[&str], first: usize) {
    for (i, line) in lines.iter().take(SHOWN_LINES).enumerate() {
        let number = crate::editing::line_numbers::prefix((first + i) as u64);
        let _ = writeln!(out, "{number}{}", cut_line(line, SHOWN_CHARS, 0));
    }
    if lines.len() > SHOWN_LINES {
        let _ = writeln!(out, "    ... ({})", plural((lines.len() - SHOWN_LINES) as u64, "more line"));
    }
}

/// The first wanted line, aligned at `start`, that the file does not hold as it is, said in one
/// sentence (`what` names the wanted text: "old_string", "the hunk"). With `partial`, the first
/// wanted line may start inside the file's line and the last may end inside it, as a text cut
/// from a file does; without, the wanted lines are whole lines.
pub(crate) fn first_difference(
    file: &[&str],
    start: usize,
    wanted: &[&str],
    what: &str,
    partial: bool,
) -> Option<String> {
    let last = wanted.len().checked_sub(1)?;
    for (j, want) in wanted.iter().enumerate() {
        let Some(have) = file.get(start + j) else {
            return Some(format!("{what} goes on past the end of the file (line {}).", file.len()));
        };
        let fits = match (partial && j == 0, partial && j == last) {
            (true, true) => have.contains(want),
            (true, false) => have.ends_with(want),
            (false, true) => have.starts_with(want),
            (false, false) => have == want,
        };
        if fits {
            continue;
        }
        let (at_have, at_want) = parting(have, want, partial && j == 0);
        let only = if normal(have) == normal(want) { " only in whitespace or typography" } else { "" };
        return Some(format!(
            "Line {} differs{only}: the file has {} where {what} has {}.",
            start + j + 1,
            quote(&around(have, at_have)),
            quote(&around(want, at_want))
        ));
    }
    None
}

/// Where `have` and `want` part, as byte offsets into each. With `inside`, `want` may start
/// anywhere in `have`: its longest start that `have` contains is found first.
fn parting(have: &str, want: &str, inside: bool) -> (usize, usize) {
    if inside {
        // The starts of `want` that `have` contains are all shorter than the first that it
        // does not: search the char boundaries by halves.
        let bounds: Vec<usize> = want.char_indices().map(|(i, _)| i).skip(1).chain([want.len()]).collect();
        let (mut lo, mut hi) = (0, bounds.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if have.contains(&want[..bounds[mid]]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo > 0 {
            let matched = bounds[lo - 1];
            if let Some(at) = have.find(&want[..matched]) {
                return (at + matched, matched);
            }
        }
    }
    let common = have.char_indices().zip(want.chars()).find(|((_, a), b)| a != b).map(|((i, _), _)| i);
    let at = common.unwrap_or(have.len().min(want.len()));
    let at = if want.is_char_boundary(at) { at } else { 0 };
    (at, at)
}

/// Up to [`AROUND_CHARS`] characters of `line` around byte `at`, a third of them before it.
fn around(line: &str, at: usize) -> String {
    let before: Vec<usize> = line[..at].char_indices().map(|(i, _)| i).collect();
    let from = before.len().saturating_sub(AROUND_CHARS / 3);
    let from = before.get(from).copied().unwrap_or(at);
    let rest = &line[from..];
    let to = rest.char_indices().nth(AROUND_CHARS).map_or(rest.len(), |(i, _)| i);
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.push_str(&rest[..to]);
    if to < rest.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_window_has_the_most_equal_lines_then_words() {
        let file = ["fn a() {", "    let x = 1;", "}", "fn b() {", "    let x = 1;", "    let y = 2;", "}"];
        // Both windows hold `let x = 1;`; the second shares more words.
        let window = closest(&file, &["    let x = 1;", "    let y = 3;"]).unwrap();
        assert_eq!(window, Window { start: 4, len: 2, same: 1 });
        let window = closest(&file, &["fn b() {", "    let x = 10;", "    let y = 2;"]).unwrap();
        assert_eq!(window, Window { start: 3, len: 3, same: 2 });
        // No equal line: shared words decide; too few words: nothing is close.
        assert_eq!(closest(&file, &["let  y =  2 ;"]).unwrap().start, 5);
        assert_eq!(closest(&file, &["completely different"]), None);
        assert_eq!(closest(&[], &["x"]), None);
        // Longer than the file.
        assert_eq!(closest(&["a b"], &["a b", "c"]).unwrap(), Window { start: 0, len: 1, same: 1 });
    }

    #[test]
    fn the_first_difference_is_quoted_where_the_lines_part() {
        let file = ["fn main() {", "    let x = 1;", "}"];
        assert_eq!(
            first_difference(&file, 0, &["fn main() {", "    let x = 10;"], "old_string", true).unwrap(),
            r#"Line 2 differs: the file has "    let x = 1;" where old_string has "    let x = 10;"."#
        );
        assert_eq!(
            first_difference(&file, 1, &["let x = 1;", "}"], "old_string", true),
            None,
            "a first line may start inside the file's line"
        );
        assert_eq!(
            first_difference(&file, 1, &["\tlet x = 1;"], "the hunk", false).unwrap(),
            r#"Line 2 differs only in whitespace or typography: the file has "    let x = 1;" where the hunk has "\tlet x = 1;"."#
        );
        // Part of a line: where the longest start of it stops matching.
        assert_eq!(
            first_difference(&file, 1, &["x = 2"], "old_string", true).unwrap(),
            r#"Line 2 differs: the file has "    let x = 1;" where old_string has "x = 2"."#
        );
        assert_eq!(
            first_difference(&file, 2, &["}", "more"], "old_string", true).unwrap(),
            "old_string goes on past the end of the file (line 3)."
        );
        let long = format!("{}X{}", "a".repeat(100), "b".repeat(100));
        let want = format!("{}Y{}", "a".repeat(100), "b".repeat(100));
        let text = first_difference(&[long.as_str()], 0, &[want.as_str()], "old_string", true).unwrap();
        assert_eq!(
            text,
            format!(
                "Line 1 differs: the file has \"…{a}X{b}…\" where old_string has \"…{a}Y{b}…\".",
                a = "a".repeat(20),
                b = "b".repeat(39)
            )
        );
    }
}
