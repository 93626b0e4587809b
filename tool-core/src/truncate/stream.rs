//! The streaming form of the cut: a text fed in chunks (bytes or text), cut exactly as the whole
//! text would be, in memory bounded by the limits.
//!
//! The stream keeps the whole text only while it fits the limits; past them it keeps just what
//! the cut can reach: the beginning up to the head budget (and one byte more) or its last
//! counted line, and the end up to the tail budget (and one byte more) or one line more than
//! it counts. Producers that also save the full text (to an output store) write it out as
//! it comes.

use std::borrow::Cow;

use memchr::{memchr_iter, memrchr_iter};

use super::cut::{Source, cut};
use super::info::TruncationInfo;
use super::limits::TruncationLimits;
use super::utf8::Utf8Decoder;
use super::{Truncated, kept_text};

/// The tail is trimmed once it has grown this much past what it must keep, so each byte is
/// copied a bounded number of times, and the line feeds of what it keeps are looked for once
/// per this much text at most. (Tiny in unit tests, so that they trim all the time.)
const TAIL_SLACK: usize = if cfg!(test) { 16 } else { 256 * 1024 };

/// A text cut as it arrives: [`push_bytes`](Self::push_bytes) or [`push_str`](Self::push_str)
/// each chunk, then [`finish`](Self::finish) for the kept text and the same [`TruncationInfo`]
/// that [`truncate_text`](super::truncate_text) gives for the whole text.
///
/// ```
/// use tool_runtime::truncate::{TruncationLimits, TruncationStream, truncate_text};
/// use tool_runtime::spec::TruncationDirection;
///
/// let limits = TruncationLimits::new(4, 1000, TruncationDirection::Middle);
/// let mut stream = TruncationStream::new(limits);
/// let text: String = (1..=100).map(|n| format!("{n}\n")).collect();
/// for chunk in text.as_bytes().chunks(7) {
///     stream.push_bytes(chunk);
/// }
/// let cut = stream.finish();
/// assert_eq!(cut.text, "1\n2\n[... 96 lines (281 bytes) cut ...]\n99\n100\n");
/// assert_eq!(cut, truncate_text(&text, &limits));
/// ```
#[derive(Debug, Clone)]
pub struct TruncationStream {
    limits: TruncationLimits,
    /// Raw output, decoded as it comes.
    decoder: Utf8Decoder,
    total_bytes: usize,
    newlines: usize,
    ends_with_newline: bool,
    /// The whole text, while it fits the limits.
    whole: Option<String>,
    head: String,
    head_newlines: usize,
    head_done: bool,
    /// The end of the text (its last `tail.len()` bytes).
    tail: String,
    tail_trim_at: usize,
}

impl TruncationStream {
    /// A stream cutting to `limits`.
    pub fn new(limits: TruncationLimits) -> Self {
        TruncationStream {
            limits,
            decoder: Utf8Decoder::default(),
            total_bytes: 0,
            newlines: 0,
            ends_with_newline: true,
            whole: Some(String::new()),
            head: String::new(),
            head_newlines: 0,
            head_done: false,
            tail: String::new(),
            tail_trim_at: TAIL_SLACK,
        }
    }

    /// The limits this stream cuts to.
    pub fn limits(&self) -> &TruncationLimits {
        &self.limits
    }

    /// Bytes of text so far.
    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    /// Lines of text so far.
    pub fn total_lines(&self) -> usize {
        self.newlines + usize::from(!self.ends_with_newline)
    }

    /// Whether the text so far is already over the limits, so the result will be cut.
    pub fn is_truncated(&self) -> bool {
        self.whole.is_none()
    }

    /// Adds raw output, which should be UTF-8: a character split between two chunks is kept
    /// whole, invalid bytes become U+FFFD. Returns the text added (what a producer saves or
    /// shows as it streams).
    pub fn push_bytes(&mut self, bytes: &[u8]) -> String {
        let text = self.decoder.decode(bytes);
        self.push_str(&text);
        text
    }

    /// Ends the input: an incomplete character left at the very end of the bytes becomes U+FFFD.
    /// Returns the text this adds (empty when there was none).
    pub fn flush(&mut self) -> String {
        let text = self.decoder.flush();
        self.push_str(&text);
        text
    }

    /// Adds text.
    pub fn push_str(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total_bytes = self.total_bytes.saturating_add(text.len());
        self.newlines += memchr_iter(b'\n', text.as_bytes()).count();
        self.ends_with_newline = text.ends_with('\n');
        if let Some(whole) = &mut self.whole {
            if self.limits.fits(self.newlines + usize::from(!self.ends_with_newline), self.total_bytes) {
                whole.push_str(text);
                return;
            }
            // Over the limits from now on: keep only what the cut can reach.
            let whole = self.whole.take().unwrap_or_default();
            self.keep(&whole);
        }
        self.keep(text);
    }

    /// The kept text (without the notice) and what was cut, exactly as for the whole text.
    pub fn finish(mut self) -> Truncated<'static> {
        self.flush();
        let total_lines = self.total_lines();
        if let Some(whole) = self.whole.take() {
            let info = TruncationInfo::untouched(&self.limits, total_lines, whole.len());
            return Truncated { text: Cow::Owned(whole), info };
        }
        let source = Source {
            prefix: &self.head,
            suffix: &self.tail,
            suffix_start: self.total_bytes - self.tail.len(),
            len: self.total_bytes,
        };
        let cut = cut(&source, &self.limits);
        let info = cut.info(&self.limits, total_lines, self.total_bytes);
        let text = Cow::Owned(kept_text(&source, &cut, &info).into_owned());
        Truncated { text, info }
    }

    fn keep(&mut self, text: &str) {
        self.keep_head(text);
        self.keep_tail(text);
    }

    /// Grows the kept beginning until it holds the head budget and one byte more, or the last
    /// line the head budget counts.
    fn keep_head(&mut self, text: &str) {
        if self.head_done {
            return;
        }
        let (lines, bytes) = self.limits.head_budget();
        if lines == 0 {
            self.head_done = true;
            return;
        }
        let room = bytes.saturating_add(1).saturating_sub(self.head.len());
        let piece = &text[..text.ceil_char_boundary(room.min(text.len()))];
        let missing = lines - self.head_newlines;
        if let Some(pos) = memchr_iter(b'\n', piece.as_bytes()).nth(missing - 1) {
            self.head.push_str(&piece[..=pos]);
            self.head_newlines = lines;
            self.head_done = true;
            return;
        }
        self.head_newlines += memchr_iter(b'\n', piece.as_bytes()).count();
        self.head.push_str(piece);
        self.head_done = self.head.len() > bytes;
    }

    /// Keeps the end: at least the tail budget and one byte more, or one line more than the tail
    /// budget counts, whichever is shorter.
    fn keep_tail(&mut self, text: &str) {
        let (lines, bytes) = self.limits.tail_budget();
        if lines == 0 {
            return;
        }
        let need = bytes.saturating_add(1);
        if text.len() >= need {
            // This chunk alone holds all the end that is needed.
            self.tail.clear();
            self.tail.push_str(&text[text.floor_char_boundary(text.len() - need)..]);
        } else {
            self.tail.push_str(text);
        }
        if self.tail.len() < self.tail_trim_at {
            return;
        }
        let by_bytes = self.tail.floor_char_boundary(self.tail.len().saturating_sub(need));
        // Only a line start after `by_bytes` can keep less: the search stops there.
        let by_lines =
            memrchr_iter(b'\n', &self.tail.as_bytes()[by_bytes..]).nth(lines).map_or(0, |at| by_bytes + at);
        self.tail.drain(..by_bytes.max(by_lines));
        self.tail_trim_at = self.tail.len().saturating_mul(2).saturating_add(TAIL_SLACK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TruncationDirection::{self, Head, Middle, Tail};

    fn retained(stream: &TruncationStream) -> usize {
        stream.head.len() + stream.tail.len() + stream.whole.as_ref().map_or(0, String::len)
    }

    fn lines(n: usize) -> String {
        (1..=n).map(|i| format!("{i:>8} some log text\n")).collect()
    }

    #[test]
    fn memory_stays_within_the_limits_whatever_the_length() {
        let text = lines(200_000); // 4.8 MB
        for direction in [Head, Tail, Middle] {
            let limits = TruncationLimits::default().with_direction(direction);
            let mut stream = TruncationStream::new(limits);
            let mut peak = 0;
            for chunk in text.as_bytes().chunks(64 * 1024 + 7) {
                stream.push_bytes(chunk);
                peak = peak.max(retained(&stream));
            }
            // The whole text while it fits (one budget, plus the chunk that went over), then
            // about one budget (one byte more) at each kept end.
            let budget = limits.max_bytes;
            assert!(peak <= budget + 64 * 1024 + 7, "{direction:?}: {peak}");
            assert!(
                retained(&stream) <= 2 * (budget + 1) + TAIL_SLACK,
                "{direction:?}: {}",
                retained(&stream)
            );
            let cut = stream.finish();
            assert_eq!(cut, crate::truncate::truncate_text(&text, &limits), "{direction:?}");
        }
    }

    #[test]
    fn a_line_limit_bounds_memory_when_the_byte_limit_does_not() {
        let text = lines(100_000);
        for direction in [Head, Tail, Middle] {
            let limits = TruncationLimits::new(10, usize::MAX, direction);
            let mut stream = TruncationStream::new(limits);
            for chunk in text.as_bytes().chunks(1000) {
                stream.push_bytes(chunk);
                assert!(retained(&stream) < 4 * 1000 + 16 * 24, "{direction:?}: {}", retained(&stream));
            }
            assert_eq!(stream.finish(), crate::truncate::truncate_text(&text, &limits), "{direction:?}");
        }
    }

    #[test]
    fn pushing_text_or_bytes_is_the_same() {
        let text = "caf\u{e9}\r\nna\u{ef}ve \u{1F600}\n".repeat(40);
        let limits = TruncationLimits::new(7, 100, TruncationDirection::Middle);
        let mut by_text = TruncationStream::new(limits);
        let mut by_bytes = TruncationStream::new(limits);
        for piece in text.split_inclusive(' ') {
            by_text.push_str(piece);
        }
        for byte in text.as_bytes() {
            by_bytes.push_bytes(std::slice::from_ref(byte));
        }
        assert_eq!((by_text.total_bytes(), by_text.total_lines()), (text.len(), 80));
        assert!(by_text.is_truncated() && by_bytes.is_truncated());
        assert_eq!(by_text.finish(), by_bytes.finish());
    }

    #[test]
    fn invalid_and_unfinished_bytes_become_replacement_characters() {
        let mut stream = TruncationStream::new(TruncationLimits::default());
        assert_eq!(stream.push_bytes(b"a\xe2\x82"), "a");
        assert_eq!(stream.push_bytes(b"\xacb\xff\xfec"), "\u{20ac}b\u{FFFD}\u{FFFD}c");
        assert_eq!(stream.push_bytes(b"\xf0\x9f"), "");
        assert_eq!(stream.flush(), "\u{FFFD}");
        assert_eq!(stream.flush(), "");
        let cut = stream.finish();
        assert_eq!(cut.text, "a\u{20ac}b\u{FFFD}\u{FFFD}c\u{FFFD}");
        assert_eq!(cut.text, String::from_utf8_lossy(b"a\xe2\x82\xacb\xff\xfec\xf0\x9f"));
        assert!(!cut.is_truncated());
    }
}
