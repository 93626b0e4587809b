//! The cut: which bytes of a text are kept, UTF-8 safe, from a view of its two ends.
//!
//! Whole lines are kept from the chosen end(s) until either limit is reached; only when not even
//! one whole line fits is that line cut (head keeps its beginning, tail its end), always on a
//! character boundary and never between a `\r` and its `\n`. The cut only ever looks at a
//! [`Source`]: the text's beginning and end, as far as the limits can reach into them, plus its
//! totals. The whole-text form passes the whole text as both; the streaming form passes what it
//! kept of each end.

use std::ops::Range;

use memchr::{memchr_iter, memrchr_iter};

use super::info::{KeptRange, LinePart, TruncatedBy, TruncationInfo};
use super::limits::TruncationLimits;
use super::notice;
use crate::spec::TruncationDirection;

/// Number of lines: a `\n` ends a line; text after the last `\n` is one more line.
///
/// The count the notice and [`TruncationInfo`] report; a tool that reports line counts of its
/// own uses it so the two agree.
pub fn count_lines(bytes: &[u8]) -> usize {
    memchr_iter(b'\n', bytes).count() + usize::from(bytes.last().is_some_and(|&b| b != b'\n'))
}

/// What the cut may look at of a text of `len` bytes: `prefix` is its first bytes, `suffix` its
/// last bytes from offset `suffix_start`.
///
/// The prefix holds at least the first `head_bytes + 1` bytes (or the whole text), or else every
/// byte up to the `head_lines`-th `\n`; the suffix at least the last `tail_bytes + 1` bytes (or the
/// whole text), where the budgets are those of [`TruncationLimits::head_budget`] and
/// [`TruncationLimits::tail_budget`]. Within that, every decision is the one the whole text gives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) suffix: &'a str,
    pub(crate) suffix_start: usize,
    pub(crate) len: usize,
}

impl<'a> Source<'a> {
    pub(crate) fn whole(text: &'a str) -> Self {
        Source { prefix: text, suffix: text, suffix_start: 0, len: text.len() }
    }

    /// The kept beginning, borrowed from the prefix.
    pub(crate) fn head_text(&self, cut: &Cut) -> &'a str {
        slice(self.prefix, cut.head.range.clone())
    }

    /// The kept end, borrowed from the suffix.
    pub(crate) fn tail_text(&self, cut: &Cut) -> &'a str {
        let range = cut.tail.range.clone();
        slice(
            self.suffix,
            range.start.saturating_sub(self.suffix_start)..range.end.saturating_sub(self.suffix_start),
        )
    }
}

/// A kept run of the text: a byte range and how many lines it shows.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub(crate) range: Range<usize>,
    pub(crate) lines: usize,
    pub(crate) partial: bool,
}

impl Piece {
    fn empty(at: usize) -> Self {
        Piece { range: at..at, lines: 0, partial: false }
    }

    pub(crate) fn len(&self) -> usize {
        self.range.len()
    }
}

/// The kept beginning (`head`, from byte 0) and end (`tail`, to the last byte); the gap between
/// them is what was cut.
#[derive(Debug)]
pub(crate) struct Cut {
    pub(crate) head: Piece,
    pub(crate) tail: Piece,
    pub(crate) by: Option<TruncatedBy>,
}

/// Cuts a text that is over `limits` (for one within them it keeps everything).
pub(crate) fn cut(source: &Source<'_>, limits: &TruncationLimits) -> Cut {
    let (head_lines, head_bytes) = limits.head_budget();
    let (tail_lines, tail_bytes) = limits.tail_budget();
    match limits.direction {
        TruncationDirection::Head => {
            let (head, by) = head_piece(source, head_lines, head_bytes);
            Cut { head, tail: Piece::empty(source.len), by }
        }
        TruncationDirection::Tail => {
            let (tail, by) = tail_piece(source, 0, tail_lines, tail_bytes);
            Cut { head: Piece::empty(0), tail, by }
        }
        TruncationDirection::Middle => {
            let (head, head_by) = head_piece(source, head_lines, head_bytes);
            let (tail, tail_by) = tail_piece(source, head.range.end, tail_lines, tail_bytes);
            let by = match (head_by, tail_by) {
                (None, None) => None,
                (Some(TruncatedBy::Bytes), _) | (_, Some(TruncatedBy::Bytes)) => Some(TruncatedBy::Bytes),
                _ => Some(TruncatedBy::Lines),
            };
            Cut { head, tail, by }
        }
    }
}

/// Keeps whole lines from the start while both limits allow; when not one line fits, the
/// beginning of the first line.
fn head_piece(source: &Source<'_>, max_lines: usize, max_bytes: usize) -> (Piece, Option<TruncatedBy>) {
    let bytes = source.prefix.as_bytes();
    let len = source.len;
    if max_lines == 0 {
        return (Piece::empty(0), (len > 0).then_some(TruncatedBy::Lines));
    }
    // Only line ends inside the byte budget can be kept, so nothing past it is ever scanned.
    let window = &bytes[..bytes.len().min(max_bytes)];
    let (mut end, mut lines) = (0, 0);
    for pos in memchr_iter(b'\n', window) {
        end = pos + 1;
        lines += 1;
        if lines == max_lines {
            break;
        }
    }
    if lines < max_lines && len <= max_bytes && end < len {
        // The rest is a last line without `\n`, and it fits.
        end = len;
        lines += 1;
    }
    if end == len {
        return (Piece { range: 0..len, lines, partial: false }, None);
    }
    if lines > 0 {
        let by = if lines == max_lines { TruncatedBy::Lines } else { TruncatedBy::Bytes };
        return (Piece { range: 0..end, lines, partial: false }, Some(by));
    }
    let mut cut = source.prefix.floor_char_boundary(max_bytes);
    if cut > 0 && bytes[cut - 1] == b'\r' && bytes.get(cut) == Some(&b'\n') {
        cut -= 1;
    }
    (Piece { range: 0..cut, lines: usize::from(cut > 0), partial: cut > 0 }, Some(TruncatedBy::Bytes))
}

/// Keeps whole lines from the end of the text after `from` while both limits allow; when not
/// one line fits, the end of the last line.
fn tail_piece(
    source: &Source<'_>,
    from: usize,
    max_lines: usize,
    max_bytes: usize,
) -> (Piece, Option<TruncatedBy>) {
    let len = source.len;
    if from >= len {
        return (Piece::empty(len), None);
    }
    if max_lines == 0 {
        return (Piece::empty(len), Some(TruncatedBy::Lines));
    }
    let bytes = source.suffix.as_bytes();
    let base = source.suffix_start;
    // The final `\n` ends the last line; it does not start another one.
    let body_end = if bytes.last() == Some(&b'\n') { len - 1 } else { len };
    let min_start = len.saturating_sub(max_bytes).max(from);
    // A line starting after a `\n` at `pos` keeps `len - pos - 1` bytes.
    let lo = min_start.saturating_sub(1).max(from).max(base);
    let (mut start, mut lines) = (len, 0);
    let window = bytes.get(lo - base..body_end.max(lo) - base).unwrap_or_default();
    for pos in memrchr_iter(b'\n', window) {
        start = lo + pos + 1;
        lines += 1;
        if lines == max_lines {
            break;
        }
    }
    if lines < max_lines && min_start == from {
        // Every line end in the window was taken and the first line fits too.
        start = from;
        lines += 1;
    }
    if start == from {
        return (Piece { range: from..len, lines, partial: false }, None);
    }
    if lines > 0 {
        let by = if lines == max_lines { TruncatedBy::Lines } else { TruncatedBy::Bytes };
        return (Piece { range: start..len, lines, partial: false }, Some(by));
    }
    let cut = base + source.suffix.ceil_char_boundary(min_start.saturating_sub(base));
    (Piece { range: cut..len, lines: usize::from(cut < len), partial: cut < len }, Some(TruncatedBy::Bytes))
}

impl Cut {
    pub(crate) fn info(
        &self,
        limits: &TruncationLimits,
        total_lines: usize,
        total_bytes: usize,
    ) -> TruncationInfo {
        let mut kept_ranges = Vec::with_capacity(2);
        if self.head.lines > 0 {
            kept_ranges.push(KeptRange {
                first_line: 1,
                last_line: self.head.lines,
                bytes: self.head.len(),
                partial: self.head.partial.then_some(LinePart::Beginning),
            });
        }
        if self.tail.lines > 0 {
            kept_ranges.push(KeptRange {
                first_line: (total_lines + 1).saturating_sub(self.tail.lines),
                last_line: total_lines,
                bytes: self.tail.len(),
                partial: self.tail.partial.then_some(LinePart::End),
            });
        }
        TruncationInfo {
            truncated: true,
            truncated_by: Some(self.by.unwrap_or(TruncatedBy::Bytes)),
            // Both ends may show parts of the same single line.
            kept_lines: (self.head.lines + self.tail.lines).min(total_lines),
            kept_bytes: self.head.len() + self.tail.len(),
            kept_ranges,
            ..TruncationInfo::new(limits, total_lines, total_bytes)
        }
    }

    /// The line marking the cut between two kept ends, when both ends show something.
    pub(crate) fn marker(&self, info: &TruncationInfo) -> Option<String> {
        if self.head.len() == 0 || self.tail.len() == 0 {
            return None;
        }
        let bytes = self.tail.range.start.saturating_sub(self.head.range.end);
        Some(notice::marker(info.total_lines.saturating_sub(info.kept_lines), bytes))
    }
}

/// `head`, the marker on a line of its own, then `tail`.
pub(crate) fn join_ends(head: &str, marker: &str, tail: &str) -> String {
    let mut text = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    text.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(marker);
    text.push('\n');
    text.push_str(tail);
    text
}

/// `text[range]`; ranges here always fall on character boundaries, and an impossible one yields
/// an empty string rather than a panic.
pub(crate) fn slice(text: &str, range: Range<usize>) -> &str {
    debug_assert!(text.get(range.clone()).is_some(), "cut off a character boundary: {range:?}");
    text.get(range).unwrap_or_default()
}
