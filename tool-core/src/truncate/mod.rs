//! Truncation of tool output: a pure engine (limits, cut, notice), whole-text and streaming.
//!
//! Text within both limits is returned byte-identical. Otherwise whole lines are kept from the
//! chosen end(s) until either limit is reached (see [`cut`](self) for the rules), the kept
//! counts are exact, and a notice says what was shown. The engine does no I/O and knows nothing
//! of its users: whoever saves the full text (the dispatcher, a tool streaming its output)
//! records the reference in the [`TruncationInfo`], and the [`ReadHint`] installed with the
//! output store tells the model how to read it back.
//!
//! - [`truncate_text`]: one text, borrowed where possible.
//! - [`TruncationStream`]: the same cut over a text that arrives in chunks.
//! - [`cut_output`] / [`truncate_output`]: the text items of a [`ToolOutput`](crate::ToolOutput)
//!   as one document.

use std::borrow::Cow;

mod cut;
mod document;
mod info;
mod limits;
mod notice;
mod stream;
mod utf8;

pub use cut::count_lines;
pub use document::{OutputCut, cut_output, truncate_output};
pub use info::{KeptRange, LinePart, METADATA_KEY, TruncatedBy, TruncationInfo, mark_truncated};
pub use limits::{
    BYTES_PER_TOKEN, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, RESULT_BUDGET_BYTES, TruncationLimits,
};
pub use notice::{NOTICE_OVERHEAD_MAX_BYTES, REFERENCE_MAX_BYTES, ReadHint, ReadHintError, append_notice};
pub use stream::TruncationStream;
pub use utf8::Utf8Decoder;

use cut::{Cut, Source, join_ends};

/// The result of a cut: the kept text and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated<'a> {
    /// The kept text, without the notice. Borrowed unless `middle` had to join two ends (or the
    /// text came from a [`TruncationStream`]).
    pub text: Cow<'a, str>,
    /// What was cut. Record where the original was saved
    /// ([`TruncationInfo::record_saved`]) so the notice points at it.
    pub info: TruncationInfo,
}

impl Truncated<'_> {
    /// Whether anything was cut.
    pub fn is_truncated(&self) -> bool {
        self.info.truncated
    }

    /// The kept text followed by the notice with the default [`ReadHint`]; the text unchanged
    /// when nothing was cut.
    pub fn into_text_with_notice(self) -> String {
        self.into_text_with_hint(ReadHint::neutral())
    }

    /// The kept text followed by the notice with `hint` (see [`TruncationInfo::notice_with`]);
    /// the text unchanged when nothing was cut.
    pub fn into_text_with_hint(self, hint: &ReadHint) -> String {
        let mut text = self.text.into_owned();
        if let Some(notice) = self.info.notice_with(hint) {
            notice::append_notice(&mut text, &notice);
        }
        text
    }
}

/// Truncates `text` to `limits`, with no store and no notice (see
/// [`Truncated::into_text_with_notice`]).
///
/// Within the limits the text is returned borrowed and unchanged. Costs: one count of the newlines
/// in the whole text (for `total_lines`, at memory-scan speed), plus a scan proportional to what is
/// kept, from the kept end.
pub fn truncate_text<'a>(text: &'a str, limits: &TruncationLimits) -> Truncated<'a> {
    let total_bytes = text.len();
    let total_lines = count_lines(text.as_bytes());
    if limits.fits(total_lines, total_bytes) {
        return Truncated {
            text: Cow::Borrowed(text),
            info: TruncationInfo::untouched(limits, total_lines, total_bytes),
        };
    }
    let source = Source::whole(text);
    let cut = cut::cut(&source, limits);
    let info = cut.info(limits, total_lines, total_bytes);
    let text = kept_text(&source, &cut, &info);
    Truncated { text, info }
}

/// The kept ends, with the marker between them when both show something.
fn kept_text<'a>(source: &Source<'a>, cut: &Cut, info: &TruncationInfo) -> Cow<'a, str> {
    let head = source.head_text(cut);
    let tail = source.tail_text(cut);
    match cut.marker(info) {
        Some(marker) => Cow::Owned(join_ends(head, &marker, tail)),
        None if tail.is_empty() => Cow::Borrowed(head),
        None if head.is_empty() => Cow::Borrowed(tail),
        None => Cow::Owned(format!("{head}{tail}")),
    }
}

#[cfg(test)]
mod tests;
