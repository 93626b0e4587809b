//! Truncation of tool output: limits, UTF-8-safe head / tail / middle cuts, metadata and the notice the model reads.
//!
//! Text within both limits is returned byte-identical. Otherwise whole lines are kept from the
//! chosen end(s) until either limit is reached; only when not even one whole line fits is that
//! line cut (head keeps its beginning, tail its end), always on a character boundary.
//!
//! # The byte budget and the notice
//!
//! The limits apply to the kept content: `kept_bytes <= max_bytes` and `kept_lines <= max_lines`
//! always hold. The notice (and, for `middle`, a one-line marker where the cut is) is added on
//! top of that budget rather than carved out of it, so the kept counts the notice reports are
//! exactly what the limits allow and a cut by lines is never reported as a cut by bytes. The
//! addition is bounded: never more than [`NOTICE_OVERHEAD_MAX_BYTES`] (640) bytes, 1.25 % of
//! the default budget; a typical notice with a store reference is about 300 bytes (0.6 %).
//!
//! # Several text items
//!
//! The text items of one output share one budget: they are measured, cut and stored as one
//! document in which every item starts on a new line (a `\n` is put between two items only when
//! the first does not already end with one), so line numbers in the notice are line numbers in
//! the stored output. Items wholly inside the cut are dropped and counted in the notice; images
//! are never touched.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use memchr::{memchr_iter, memrchr_iter};
use serde::{Deserialize, Serialize};

use crate::output::{Content, ToolOutput};
use crate::output_store::OutputStore;
use crate::spec::{TruncationDirection, TruncationPolicy};

/// Default maximum number of lines kept: 2000.
pub const DEFAULT_MAX_LINES: usize = 2000;

/// Default maximum number of bytes kept: 50 KiB.
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;

/// The key of [`TruncationInfo`] in [`ToolOutput::metadata`].
pub const METADATA_KEY: &str = "truncation";

/// Upper bound on what truncation adds beyond `max_bytes`: the notice with its separator, plus
/// the marker between the two ends for `middle`.
pub const NOTICE_OVERHEAD_MAX_BYTES: usize = 640;

/// The limits one truncation applies: the dispatcher's defaults merged with a tool's overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TruncationLimits {
    /// Maximum number of lines kept.
    pub max_lines: usize,
    /// Maximum number of bytes kept.
    pub max_bytes: usize,
    /// Which end (or both ends) is kept.
    pub direction: TruncationDirection,
}

impl Default for TruncationLimits {
    /// 2000 lines, 51200 bytes, head.
    fn default() -> Self {
        TruncationLimits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
            direction: TruncationDirection::Head,
        }
    }
}

impl TruncationLimits {
    /// Limits with the given values.
    pub fn new(max_lines: usize, max_bytes: usize, direction: TruncationDirection) -> Self {
        TruncationLimits { max_lines, max_bytes, direction }
    }

    /// These limits with every value the tool's `policy` sets replacing the default.
    pub fn with_policy(self, policy: &TruncationPolicy) -> Self {
        TruncationLimits {
            max_lines: policy.max_lines.unwrap_or(self.max_lines),
            max_bytes: policy.max_bytes.unwrap_or(self.max_bytes),
            direction: policy.direction.unwrap_or(self.direction),
        }
    }

    /// These limits keeping a different end.
    pub fn with_direction(self, direction: TruncationDirection) -> Self {
        TruncationLimits { direction, ..self }
    }
}

/// Which limit made the cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruncatedBy {
    /// The line limit was reached first.
    Lines,
    /// The next line did not fit in the byte limit.
    Bytes,
}

/// Which part of a single over-long line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinePart {
    /// Its beginning (a head cut).
    Beginning,
    /// Its end (a tail cut).
    End,
}

/// A run of lines that was kept, numbered from 1 like the lines of the stored output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptRange {
    /// First line kept.
    pub first_line: usize,
    /// Last line kept (inclusive).
    pub last_line: usize,
    /// Bytes kept in this range.
    pub bytes: usize,
    /// Set when the range is one line longer than the byte budget, of which only a part is shown.
    pub partial: Option<LinePart>,
}

/// What a truncation did, for the UI (under [`METADATA_KEY`]) and for the notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncationInfo {
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit made the cut (`None` when nothing was cut).
    pub truncated_by: Option<TruncatedBy>,
    /// Which end was kept.
    pub direction: TruncationDirection,
    /// The line limit applied.
    pub max_lines: usize,
    /// The byte limit applied.
    pub max_bytes: usize,
    /// Lines in the whole text.
    pub total_lines: usize,
    /// Bytes in the whole text.
    pub total_bytes: usize,
    /// Lines shown, wholly or in part.
    pub kept_lines: usize,
    /// Bytes shown (the notice and the middle marker are not counted).
    pub kept_bytes: usize,
    /// The line ranges shown: one for head and tail, up to two for middle.
    pub kept_ranges: Vec<KeptRange>,
    /// Text items dropped whole because they lay entirely in the cut.
    pub omitted_items: usize,
    /// The reference of the full text in the output store, when it was saved.
    pub output_ref: Option<String>,
    /// Why the full text could not be saved, for the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_error: Option<String>,
}

/// The result of [`truncate_text`]: the kept text and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated<'a> {
    /// The kept text, without the notice. Borrowed unless `middle` had to join two ends.
    pub text: Cow<'a, str>,
    /// What was cut. Set `output_ref` after saving the original so the notice points at it.
    pub info: TruncationInfo,
}

impl Truncated<'_> {
    /// Whether anything was cut.
    pub fn is_truncated(&self) -> bool {
        self.info.truncated
    }

    /// The kept text followed by the notice (see [`TruncationInfo::notice`]); the text unchanged
    /// when nothing was cut.
    pub fn into_text_with_notice(self) -> String {
        let mut text = self.text.into_owned();
        if let Some(notice) = self.info.notice() {
            append_notice(&mut text, &notice);
        }
        text
    }
}

impl TruncationInfo {
    /// The notice for the model, or `None` when nothing was cut. For example:
    ///
    /// ```text
    /// [Output truncated: showing the first 2000 of 48213 lines (51200 of 2371642 bytes). Full output saved as out_20261121T163000_ab12cd34; read more with tool_output_read(ref="out_20261121T163000_ab12cd34", offset=2001) or search it with tool_output_grep(ref="out_20261121T163000_ab12cd34", pattern="...").]
    /// ```
    pub fn notice(&self) -> Option<String> {
        if !self.truncated {
            return None;
        }
        let mut notice = String::from("[Output truncated: ");
        self.write_shown(&mut notice);
        notice.push('.');
        match self.omitted_items {
            0 => {}
            1 => notice.push_str(" 1 text item was left out entirely."),
            n => {
                let _ = write!(notice, " {n} text items were left out entirely.");
            }
        }
        match &self.output_ref {
            Some(reference) => {
                let read = match self.direction {
                    TruncationDirection::Tail => "read the earlier lines",
                    TruncationDirection::Head | TruncationDirection::Middle => "read more",
                };
                let _ = write!(
                    notice,
                    " Full output saved as {reference}; {read} with tool_output_read(ref=\"{reference}\", \
                     offset={}) or search it with tool_output_grep(ref=\"{reference}\", pattern=\"...\").",
                    self.read_offset()
                );
            }
            None => notice.push_str(
                " The full output was not saved, so the rest is not available; narrow the request (for \
                 example a smaller range or a more specific pattern) to see it.",
            ),
        }
        notice.push(']');
        Some(notice)
    }

    /// The 1-based line from which `tool_output_read` shows what was not (wholly) shown.
    pub fn read_offset(&self) -> usize {
        if self.direction == TruncationDirection::Tail {
            return 1;
        }
        match self.kept_ranges.first() {
            Some(range) if range.first_line == 1 && range.partial.is_none() => range.last_line + 1,
            _ => 1,
        }
    }

    fn write_shown(&self, out: &mut String) {
        let total = self.total_lines;
        let bytes =
            format!("({} of {} {})", self.kept_bytes, self.total_bytes, plural(self.total_bytes, "byte"));
        let lines = plural(total, "line");
        let _ = match (self.direction, self.kept_ranges.as_slice()) {
            (TruncationDirection::Head, []) => write!(out, "showing the first 0 of {total} {lines} {bytes}"),
            (TruncationDirection::Head, [range]) if range.first_line == 1 && range.partial.is_none() => {
                write!(out, "showing the first {} of {total} {lines} {bytes}", range.last_line)
            }
            (TruncationDirection::Tail, []) => write!(out, "showing the last 0 of {total} {lines} {bytes}"),
            (TruncationDirection::Tail, [range]) if range.last_line == total && range.partial.is_none() => {
                write!(
                    out,
                    "showing the last {} of {total} {lines} {bytes}",
                    range.last_line + 1 - range.first_line
                )
            }
            (_, []) => write!(out, "showing none of the {total} {lines} {bytes}"),
            (_, [first, second])
                if first.first_line == second.first_line
                    && first.partial.is_some()
                    && second.partial.is_some() =>
            {
                write!(
                    out,
                    "showing the beginning and the end of line {} of {total} {bytes}",
                    first.first_line
                )
            }
            (_, ranges) => {
                out.push_str("showing ");
                for (i, range) in ranges.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" and ");
                    }
                    let _ = match range.partial {
                        Some(LinePart::Beginning) => {
                            write!(out, "the beginning of line {}", range.first_line)
                        }
                        Some(LinePart::End) => write!(out, "the end of line {}", range.first_line),
                        None if range.first_line == range.last_line => {
                            write!(out, "line {}", range.first_line)
                        }
                        None => write!(out, "lines {}-{}", range.first_line, range.last_line),
                    };
                }
                write!(out, " of {total} {bytes}")
            }
        };
    }

    fn untouched(limits: &TruncationLimits, total_lines: usize, total_bytes: usize) -> Self {
        TruncationInfo {
            truncated: false,
            truncated_by: None,
            direction: limits.direction,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
            total_lines,
            total_bytes,
            kept_lines: total_lines,
            kept_bytes: total_bytes,
            kept_ranges: if total_lines > 0 {
                vec![KeptRange { first_line: 1, last_line: total_lines, bytes: total_bytes, partial: None }]
            } else {
                Vec::new()
            },
            omitted_items: 0,
            output_ref: None,
            save_error: None,
        }
    }
}

/// Truncates `text` to `limits`: the pure core, with no store and no notice (see
/// [`Truncated::into_text_with_notice`]).
///
/// Within the limits the text is returned borrowed and unchanged. Costs: one count of the newlines
/// in the whole text (for `total_lines`, at memory-scan speed), plus a scan proportional to what is
/// kept, from the kept end.
pub fn truncate_text<'a>(text: &'a str, limits: &TruncationLimits) -> Truncated<'a> {
    let total_bytes = text.len();
    let total_lines = count_lines(text.as_bytes());
    if total_bytes <= limits.max_bytes && total_lines <= limits.max_lines {
        return Truncated {
            text: Cow::Borrowed(text),
            info: TruncationInfo::untouched(limits, total_lines, total_bytes),
        };
    }
    let cut = cut(text, limits);
    let info = cut.info(limits, total_lines, total_bytes);
    let head = slice(text, cut.head.range.clone());
    let tail = slice(text, cut.tail.range.clone());
    let text = match cut.marker(&info) {
        Some(marker) => Cow::Owned(join_ends(head, &marker, tail)),
        None if tail.is_empty() => Cow::Borrowed(head),
        None if head.is_empty() => Cow::Borrowed(tail),
        None => Cow::Owned(format!("{head}{tail}")),
    };
    Truncated { text, info }
}

/// Truncates the text of `output` in place, as the dispatcher does after every call.
///
/// Does nothing and returns `None` when the tool opted out (`policy.enabled == false`), when the
/// output was already truncated (`output.truncated`), or when its text is within the limits (the
/// output stays byte-identical and nothing is written). Otherwise the tool's limits override
/// `defaults`, the full text is saved to `store` (when given), the kept text gets the notice,
/// `output.truncated` is set and the info is recorded under `output.metadata["truncation"]`.
pub fn truncate_output(
    output: &mut ToolOutput,
    policy: &TruncationPolicy,
    defaults: &TruncationLimits,
    store: Option<&OutputStore>,
) -> Option<TruncationInfo> {
    if !policy.enabled || output.truncated {
        return None;
    }
    let limits = defaults.with_policy(policy);
    if within_limits(&output.content, &limits) {
        return None;
    }

    let content = std::mem::take(&mut output.content);
    let (replacements, info) = {
        let (doc, spans) = document(&content);
        let total_lines = count_lines(doc.as_bytes());
        let cut = cut(&doc, &limits);
        let mut info = cut.info(&limits, total_lines, doc.len());
        let replacements = cut.distribute(&doc, &spans, content.len(), &mut info);
        if let Some(store) = store {
            match store.save(&doc) {
                Ok(reference) => info.output_ref = Some(reference.to_string()),
                Err(error) => info.save_error = Some(error.to_string()),
            }
        }
        (replacements, info)
    };

    let mut kept = Vec::with_capacity(content.len() + 1);
    for (item, replacement) in content.into_iter().zip(replacements) {
        match replacement {
            Replacement::Keep => kept.push(item),
            Replacement::Drop => {}
            Replacement::Text(text) => kept.push(Content::Text { text }),
        }
    }
    let notice = info.notice().unwrap_or_default();
    // The notice ends the last non-empty text item, so it is the last text the model reads.
    match kept.iter_mut().rev().find_map(|item| match item {
        Content::Text { text } if !text.is_empty() => Some(text),
        _ => None,
    }) {
        Some(text) => append_notice(text, &notice),
        None => kept.push(Content::text(notice)),
    }
    output.content = kept;
    mark_truncated(output, &info);
    Some(info)
}

/// Marks `output` as truncated and records `info` under [`METADATA_KEY`], for a tool that
/// truncates its own output (with [`truncate_text`]) so the framework does not truncate it again.
pub fn mark_truncated(output: &mut ToolOutput, info: &TruncationInfo) {
    output.truncated = true;
    output.metadata.insert(METADATA_KEY.to_owned(), serde_json::to_value(info).unwrap_or_default());
}

/// Appends `notice` after one blank line (or as the whole text when `text` is empty).
fn append_notice(text: &mut String, notice: &str) {
    if !text.is_empty() {
        text.push_str(if text.ends_with('\n') { "\n" } else { "\n\n" });
    }
    text.push_str(notice);
}

/// Number of lines: a `\n` ends a line; text after the last `\n` is one more line.
pub(crate) fn count_lines(bytes: &[u8]) -> usize {
    memchr_iter(b'\n', bytes).count() + usize::from(bytes.last().is_some_and(|&b| b != b'\n'))
}

/// Whether the text items, joined as by [`document`], fit `limits`, without joining them.
fn within_limits(content: &[Content], limits: &TruncationLimits) -> bool {
    let mut bytes = 0usize;
    let mut ends_with_newline = true;
    for text in content.iter().filter_map(Content::as_text).filter(|t| !t.is_empty()) {
        bytes = bytes.saturating_add(text.len() + usize::from(!ends_with_newline));
        ends_with_newline = text.ends_with('\n');
    }
    if bytes > limits.max_bytes {
        return false;
    }
    let mut lines = 0usize;
    for text in content.iter().filter_map(Content::as_text) {
        lines += count_lines(text.as_bytes());
        if lines > limits.max_lines {
            return false;
        }
    }
    true
}

/// The non-empty text items as one text, each starting on a new line, with each item's span.
fn document(content: &[Content]) -> (Cow<'_, str>, Vec<(usize, Range<usize>)>) {
    let texts: Vec<(usize, &str)> = content
        .iter()
        .enumerate()
        .filter_map(|(i, item)| item.as_text().map(|text| (i, text)))
        .filter(|(_, text)| !text.is_empty())
        .collect();
    if let [(index, text)] = texts.as_slice() {
        return (Cow::Borrowed(*text), vec![(*index, 0..text.len())]);
    }
    let mut doc = String::with_capacity(texts.iter().map(|(_, t)| t.len() + 1).sum());
    let mut spans = Vec::with_capacity(texts.len());
    for (index, text) in texts {
        if !doc.is_empty() && !doc.ends_with('\n') {
            doc.push('\n');
        }
        spans.push((index, doc.len()..doc.len() + text.len()));
        doc.push_str(text);
    }
    (Cow::Owned(doc), spans)
}

/// What happens to one content item.
enum Replacement {
    Keep,
    Drop,
    Text(String),
}

/// A kept run of the text: a byte range and how many lines it shows.
#[derive(Debug, Clone)]
struct Piece {
    range: Range<usize>,
    lines: usize,
    partial: bool,
}

impl Piece {
    fn empty(at: usize) -> Self {
        Piece { range: at..at, lines: 0, partial: false }
    }

    fn len(&self) -> usize {
        self.range.len()
    }
}

/// The kept beginning (`head`, from byte 0) and end (`tail`, to the last byte); the gap between
/// them is what was cut.
#[derive(Debug)]
struct Cut {
    head: Piece,
    tail: Piece,
    by: Option<TruncatedBy>,
}

fn cut(text: &str, limits: &TruncationLimits) -> Cut {
    let (max_lines, max_bytes) = (limits.max_lines, limits.max_bytes);
    match limits.direction {
        TruncationDirection::Head => {
            let (head, by) = head_piece(text, max_lines, max_bytes);
            Cut { head, tail: Piece::empty(text.len()), by }
        }
        TruncationDirection::Tail => {
            let (tail, by) = tail_piece(text, 0, max_lines, max_bytes);
            Cut { head: Piece::empty(0), tail, by }
        }
        TruncationDirection::Middle => {
            let (head, head_by) = head_piece(text, max_lines - max_lines / 2, max_bytes - max_bytes / 2);
            let (tail, tail_by) = tail_piece(text, head.range.end, max_lines / 2, max_bytes / 2);
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
fn head_piece(text: &str, max_lines: usize, max_bytes: usize) -> (Piece, Option<TruncatedBy>) {
    let bytes = text.as_bytes();
    let len = bytes.len();
    if max_lines == 0 {
        return (Piece::empty(0), (len > 0).then_some(TruncatedBy::Lines));
    }
    // Only line ends inside the byte budget can be kept, so nothing past it is ever scanned.
    let window = &bytes[..len.min(max_bytes)];
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
    let mut cut = floor_char_boundary(text, max_bytes);
    if cut > 0 && bytes[cut - 1] == b'\r' && bytes.get(cut) == Some(&b'\n') {
        cut -= 1;
    }
    (Piece { range: 0..cut, lines: usize::from(cut > 0), partial: cut > 0 }, Some(TruncatedBy::Bytes))
}

/// Keeps whole lines from the end of `text[from..]` while both limits allow; when not one line
/// fits, the end of the last line.
fn tail_piece(text: &str, from: usize, max_lines: usize, max_bytes: usize) -> (Piece, Option<TruncatedBy>) {
    let bytes = text.as_bytes();
    let len = bytes.len();
    if from >= len {
        return (Piece::empty(len), None);
    }
    if max_lines == 0 {
        return (Piece::empty(len), Some(TruncatedBy::Lines));
    }
    // The final `\n` ends the last line; it does not start another one.
    let body_end = if bytes[len - 1] == b'\n' { len - 1 } else { len };
    let min_start = len.saturating_sub(max_bytes).max(from);
    // A line starting after a `\n` at `pos` keeps `len - pos - 1` bytes.
    let lo = min_start.saturating_sub(1).max(from);
    let (mut start, mut lines) = (len, 0);
    for pos in memrchr_iter(b'\n', bytes.get(lo..body_end).unwrap_or_default()) {
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
    let cut = ceil_char_boundary(text, min_start);
    (Piece { range: cut..len, lines: usize::from(cut < len), partial: cut < len }, Some(TruncatedBy::Bytes))
}

impl Cut {
    fn info(&self, limits: &TruncationLimits, total_lines: usize, total_bytes: usize) -> TruncationInfo {
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
            direction: limits.direction,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
            total_lines,
            total_bytes,
            // Both ends may show parts of the same single line.
            kept_lines: (self.head.lines + self.tail.lines).min(total_lines),
            kept_bytes: self.head.len() + self.tail.len(),
            kept_ranges,
            omitted_items: 0,
            output_ref: None,
            save_error: None,
        }
    }

    /// The line marking the cut between two kept ends.
    fn marker(&self, info: &TruncationInfo) -> Option<String> {
        if self.head.len() == 0 || self.tail.len() == 0 {
            return None;
        }
        let bytes = self.tail.range.start.saturating_sub(self.head.range.end);
        let lines = info.total_lines.saturating_sub(info.kept_lines);
        Some(if lines == 0 {
            format!("[... {bytes} {} cut ...]", plural(bytes, "byte"))
        } else {
            format!("[... {lines} {} ({bytes} {}) cut ...]", plural(lines, "line"), plural(bytes, "byte"))
        })
    }

    /// What becomes of each content item, given each text item's span in the document.
    fn distribute(
        &self,
        doc: &str,
        spans: &[(usize, Range<usize>)],
        items: usize,
        info: &mut TruncationInfo,
    ) -> Vec<Replacement> {
        let mut replacements: Vec<Replacement> = (0..items).map(|_| Replacement::Keep).collect();
        let marker = self.marker(info);
        let (head_end, tail_start) = (self.head.range.end, self.tail.range.start);
        let mut last_head_item = None;
        for (index, span) in spans {
            let head = (span.start < head_end).then(|| span.start..span.end.min(head_end));
            let tail = (span.end > tail_start).then(|| span.start.max(tail_start)..span.end);
            let replacement = match (head, tail) {
                (None, None) => {
                    // A lone item cut to nothing is described by the notice that replaces it.
                    if spans.len() > 1 {
                        info.omitted_items += 1;
                    }
                    Replacement::Drop
                }
                (Some(head), None) => {
                    last_head_item = Some(*index);
                    Replacement::Text(slice(doc, head).to_owned())
                }
                (None, Some(tail)) => Replacement::Text(slice(doc, tail).to_owned()),
                (Some(head), Some(tail)) if head.end == tail.start => {
                    Replacement::Text(slice(doc, head.start..tail.end).to_owned())
                }
                (Some(head), Some(tail)) => Replacement::Text(match &marker {
                    Some(marker) => join_ends(slice(doc, head), marker, slice(doc, tail)),
                    None => format!("{}{}", slice(doc, head), slice(doc, tail)),
                }),
            };
            if let Some(slot) = replacements.get_mut(*index) {
                *slot = replacement;
            }
        }
        // When the cut falls between items, the marker ends the last item before it.
        if let (Some(marker), Some(index)) = (marker, last_head_item)
            && let Some(Replacement::Text(text)) = replacements.get_mut(index)
        {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&marker);
        }
        replacements
    }
}

/// `head`, the marker on a line of its own, then `tail`.
fn join_ends(head: &str, marker: &str, tail: &str) -> String {
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
fn slice(text: &str, range: Range<usize>) -> &str {
    debug_assert!(text.get(range.clone()).is_some(), "cut off a character boundary: {range:?}");
    text.get(range).unwrap_or_default()
}

fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { word.to_owned() } else { format!("{word}s") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output_store::tests::TempDir;
    use serde_json::json;

    const REF: &str = "out_20261121T163000_ab12cd34";
    const NOT_SAVED: &str = "The full output was not saved, so the rest is not available; narrow the request (for \
                             example a smaller range or a more specific pattern) to see it.";

    fn limits(max_lines: usize, max_bytes: usize, direction: TruncationDirection) -> TruncationLimits {
        TruncationLimits::new(max_lines, max_bytes, direction)
    }

    use TruncationDirection::{Head, Middle, Tail};

    /// 10 lines, 71 bytes.
    const TEN_LINES: &str =
        "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n";

    fn ten_lines() -> String {
        TEN_LINES.to_owned()
    }

    fn saved(reference: &str, read: &str, offset: usize) -> String {
        format!(
            "Full output saved as {reference}; {read} with tool_output_read(ref=\"{reference}\", offset={offset}) \
             or search it with tool_output_grep(ref=\"{reference}\", pattern=\"...\")."
        )
    }

    fn files_in(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).map(|entries| entries.count()).unwrap_or(0)
    }

    #[test]
    fn default_limits_and_policy_overrides() {
        let defaults = TruncationLimits::default();
        assert_eq!(defaults, limits(2000, 51200, Head));
        assert_eq!(defaults.with_policy(&TruncationPolicy::default()), defaults);
        let policy =
            TruncationPolicy { enabled: true, max_lines: Some(5), max_bytes: None, direction: Some(Tail) };
        assert_eq!(defaults.with_policy(&policy), limits(5, 51200, Tail));
        let policy =
            TruncationPolicy { enabled: true, max_lines: None, max_bytes: Some(10), direction: None };
        assert_eq!(limits(7, 100, Middle).with_policy(&policy), limits(7, 10, Middle));
    }

    #[test]
    fn the_notice_reads_as_specified() {
        // 2000 lines of exactly 51200 bytes, then 46213 more lines: 48213 lines, 2371642 bytes.
        let mut text = String::new();
        text.push_str(&format!("{}\n", "a".repeat(25)).repeat(1600));
        text.push_str(&format!("{}\n", "b".repeat(23)).repeat(400));
        text.push_str(&format!("{}\n", "c".repeat(49)).repeat(46212));
        text.push_str(&format!("{}\n", "d".repeat(9841)));
        let mut truncated = truncate_text(&text, &TruncationLimits::default());
        assert_eq!(truncated.info.truncated_by, Some(TruncatedBy::Lines));
        truncated.info.output_ref = Some(REF.into());
        assert_eq!(
            truncated.info.notice().expect("truncated"),
            "[Output truncated: showing the first 2000 of 48213 lines (51200 of 2371642 bytes). Full output \
             saved as out_20261121T163000_ab12cd34; read more with \
             tool_output_read(ref=\"out_20261121T163000_ab12cd34\", offset=2001) or search it with \
             tool_output_grep(ref=\"out_20261121T163000_ab12cd34\", pattern=\"...\").]"
        );
        assert_eq!(truncated.text.len(), 51200);
        assert!(matches!(truncated.text, Cow::Borrowed(_)));
    }

    #[test]
    fn within_limits_is_untouched_and_writes_nothing() {
        let tmp = TempDir::new("identity");
        let store = OutputStore::open(tmp.path()).expect("store");
        let text = ten_lines();
        let truncated = truncate_text(&text, &limits(10, 71, Head));
        assert!(matches!(truncated.text, Cow::Borrowed(t) if std::ptr::eq(t, text.as_str())));
        assert_eq!(
            truncated.info,
            TruncationInfo {
                truncated: false,
                truncated_by: None,
                direction: Head,
                max_lines: 10,
                max_bytes: 71,
                total_lines: 10,
                total_bytes: 71,
                kept_lines: 10,
                kept_bytes: 71,
                kept_ranges: vec![KeptRange { first_line: 1, last_line: 10, bytes: 71, partial: None }],
                omitted_items: 0,
                output_ref: None,
                save_error: None,
            }
        );
        assert_eq!(truncated.info.notice(), None);
        assert_eq!(truncated.clone().into_text_with_notice(), text);

        for direction in [Head, Tail, Middle] {
            let original = ToolOutput::text(text.clone())
                .with_content(Content::image("image/png", "AAAA".repeat(100_000)))
                .with_content(Content::text("x"));
            let mut output = original.clone();
            let policy = TruncationPolicy { direction: Some(direction), ..TruncationPolicy::default() };
            // 71 + 1 separator + 1 bytes, 11 lines.
            assert_eq!(truncate_output(&mut output, &policy, &limits(11, 73, Head), Some(&store)), None);
            assert_eq!(output, original);
        }
        assert_eq!(files_in(tmp.path()), 0);
    }

    #[test]
    fn one_over_either_limit_truncates() {
        let text = ten_lines();
        assert!(!truncate_text(&text, &limits(10, 71, Head)).is_truncated());
        let by_bytes = truncate_text(&text, &limits(10, 70, Head));
        assert_eq!(by_bytes.info.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(by_bytes.text, (1..=9).map(|i| format!("line {i}\n")).collect::<String>());
        let by_lines = truncate_text(&text, &limits(9, 71, Head));
        assert_eq!(by_lines.info.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(by_lines.text, by_bytes.text);
    }

    #[test]
    fn head_by_lines() {
        let text = ten_lines();
        let truncated = truncate_text(&text, &limits(3, 1000, Head));
        assert_eq!(truncated.text, "line 1\nline 2\nline 3\n");
        assert_eq!(
            truncated.info,
            TruncationInfo {
                truncated: true,
                truncated_by: Some(TruncatedBy::Lines),
                direction: Head,
                max_lines: 3,
                max_bytes: 1000,
                total_lines: 10,
                total_bytes: 71,
                kept_lines: 3,
                kept_bytes: 21,
                kept_ranges: vec![KeptRange { first_line: 1, last_line: 3, bytes: 21, partial: None }],
                omitted_items: 0,
                output_ref: None,
                save_error: None,
            }
        );
        assert_eq!(
            truncated.into_text_with_notice(),
            format!(
                "line 1\nline 2\nline 3\n\n[Output truncated: showing the first 3 of 10 lines (21 of 71 bytes). \
                 {NOT_SAVED}]"
            )
        );
    }

    #[test]
    fn head_by_bytes_keeps_whole_lines() {
        let truncated = truncate_text(TEN_LINES, &limits(100, 20, Head));
        assert_eq!(truncated.text, "line 1\nline 2\n");
        assert_eq!(truncated.info.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!((truncated.info.kept_lines, truncated.info.kept_bytes), (2, 14));
        assert_eq!(
            truncated.info.notice().expect("notice"),
            format!("[Output truncated: showing the first 2 of 10 lines (14 of 71 bytes). {NOT_SAVED}]")
        );
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let text = ten_lines();
        let mut truncated = truncate_text(&text, &limits(3, 1000, Tail));
        assert_eq!(truncated.text, "line 8\nline 9\nline 10\n");
        assert_eq!(
            truncated.info.kept_ranges,
            vec![KeptRange { first_line: 8, last_line: 10, bytes: 22, partial: None }]
        );
        assert_eq!(truncated.info.truncated_by, Some(TruncatedBy::Lines));
        truncated.info.output_ref = Some(REF.into());
        assert_eq!(
            truncated.info.notice().expect("notice"),
            format!(
                "[Output truncated: showing the last 3 of 10 lines (22 of 71 bytes). {}]",
                saved(REF, "read the earlier lines", 1)
            )
        );

        let by_bytes = truncate_text(&text, &limits(100, 20, Tail));
        assert_eq!(by_bytes.text, "line 9\nline 10\n");
        assert_eq!(by_bytes.info.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn middle_keeps_both_ends_and_marks_the_cut() {
        let mut truncated = truncate_text(TEN_LINES, &limits(4, 1000, Middle));
        assert_eq!(truncated.text, "line 1\nline 2\n[... 6 lines (42 bytes) cut ...]\nline 9\nline 10\n");
        assert_eq!(
            truncated.info.kept_ranges,
            vec![
                KeptRange { first_line: 1, last_line: 2, bytes: 14, partial: None },
                KeptRange { first_line: 9, last_line: 10, bytes: 15, partial: None },
            ]
        );
        assert_eq!((truncated.info.kept_lines, truncated.info.kept_bytes), (4, 29));
        truncated.info.output_ref = Some(REF.into());
        assert_eq!(
            truncated.info.notice().expect("notice"),
            format!(
                "[Output truncated: showing lines 1-2 and lines 9-10 of 10 (29 of 71 bytes). {}]",
                saved(REF, "read more", 3)
            )
        );

        // An odd line budget gives the extra line to the head; a single kept line is named alone.
        let odd = truncate_text(TEN_LINES, &limits(3, 1000, Middle));
        assert_eq!(odd.text, "line 1\nline 2\n[... 7 lines (49 bytes) cut ...]\nline 10\n");
        assert_eq!(
            odd.info.notice().expect("notice"),
            format!("[Output truncated: showing lines 1-2 and line 10 of 10 (22 of 71 bytes). {NOT_SAVED}]")
        );

        // Byte budgets are halved too: 10 bytes a side.
        let by_bytes = truncate_text(TEN_LINES, &limits(100, 20, Middle));
        assert_eq!(by_bytes.text, "line 1\n[... 8 lines (56 bytes) cut ...]\nline 10\n");
        assert_eq!(by_bytes.info.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn a_single_line_over_the_budget_is_cut_deliberately() {
        let text = format!("{}\nshort\n", "x".repeat(100));
        let head = truncate_text(&text, &limits(10, 40, Head));
        assert_eq!(head.text, "x".repeat(40));
        assert_eq!(
            head.info.kept_ranges,
            vec![KeptRange { first_line: 1, last_line: 1, bytes: 40, partial: Some(LinePart::Beginning) }]
        );
        assert_eq!(head.info.truncated_by, Some(TruncatedBy::Bytes));
        let mut info = head.info.clone();
        info.output_ref = Some(REF.into());
        assert_eq!(
            info.notice().expect("notice"),
            format!(
                "[Output truncated: showing the beginning of line 1 of 2 (40 of 107 bytes). {}]",
                saved(REF, "read more", 1)
            )
        );
        assert_eq!(
            head.into_text_with_notice(),
            format!(
                "{}\n\n[Output truncated: showing the beginning of line 1 of 2 (40 of 107 bytes). {NOT_SAVED}]",
                "x".repeat(40)
            )
        );

        let text = format!("short\n{}\n", "y".repeat(100));
        let tail = truncate_text(&text, &limits(10, 40, Tail));
        assert_eq!(tail.text, format!("{}\n", "y".repeat(39)));
        assert_eq!(
            tail.info.kept_ranges,
            vec![KeptRange { first_line: 2, last_line: 2, bytes: 40, partial: Some(LinePart::End) }]
        );
        assert_eq!(
            tail.info.notice().expect("notice"),
            format!("[Output truncated: showing the end of line 2 of 2 (40 of 107 bytes). {NOT_SAVED}]")
        );
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let text = "\u{e9}".repeat(50); // 100 bytes, one line, no newline
        let head = truncate_text(&text, &limits(10, 41, Head));
        assert_eq!(head.text, "\u{e9}".repeat(20));
        let tail = truncate_text(&text, &limits(10, 41, Tail));
        assert_eq!(tail.text, "\u{e9}".repeat(20));
        let middle = truncate_text(&text, &limits(10, 41, Middle));
        assert_eq!(middle.text, format!("{0}\n[... 60 bytes cut ...]\n{0}", "\u{e9}".repeat(10)));
        assert_eq!(middle.info.kept_lines, 1);
        assert_eq!(
            middle.info.notice().expect("notice"),
            format!(
                "[Output truncated: showing the beginning and the end of line 1 of 1 (40 of 100 bytes). {NOT_SAVED}]"
            )
        );

        let emoji = "\u{1F600}".repeat(10); // 4 bytes each
        for max_bytes in 0..=40 {
            for direction in [Head, Tail, Middle] {
                let truncated = truncate_text(&emoji, &limits(5, max_bytes, direction));
                assert!(truncated.info.kept_bytes <= max_bytes);
                assert_eq!(truncated.info.kept_bytes % 4, 0, "{direction:?} {max_bytes}");
                assert!(!truncated.text.contains('\u{FFFD}'));
            }
        }
        // Not even one character fits.
        let none = truncate_text(&emoji, &limits(5, 3, Head));
        assert_eq!(none.text, "");
        assert_eq!(none.info.kept_ranges, vec![]);
        assert_eq!(
            none.info.notice().expect("notice"),
            format!("[Output truncated: showing the first 0 of 1 line (0 of 40 bytes). {NOT_SAVED}]")
        );
    }

    #[test]
    fn crlf_lines_stay_whole() {
        let text = "a\r\nb\r\nc\r\n";
        assert_eq!(truncate_text(text, &limits(2, 100, Head)).text, "a\r\nb\r\n");
        assert_eq!(truncate_text(text, &limits(2, 100, Tail)).text, "b\r\nc\r\n");
        assert_eq!(truncate_text(text, &limits(100, 7, Head)).text, "a\r\nb\r\n");
        assert_eq!(truncate_text(text, &limits(100, 7, Tail)).text, "b\r\nc\r\n");
        assert_eq!(truncate_text(text, &limits(3, 9, Head)).info.total_lines, 3);
        // A cut inside an over-long line never leaves a lone `\r` before its `\n`.
        assert_eq!(truncate_text("abcdefgh\r\nx", &limits(5, 9, Head)).text, "abcdefgh");
    }

    #[test]
    fn text_without_a_trailing_newline() {
        let text = "a\nb\nc";
        assert!(!truncate_text(text, &limits(3, 5, Head)).is_truncated());
        let head = truncate_text(text, &limits(2, 100, Head));
        assert_eq!((head.text.as_ref(), head.info.total_lines, head.info.total_bytes), ("a\nb\n", 3, 5));
        assert_eq!(
            head.into_text_with_notice(),
            format!("a\nb\n\n[Output truncated: showing the first 2 of 3 lines (4 of 5 bytes). {NOT_SAVED}]")
        );
        let tail = truncate_text(text, &limits(2, 100, Tail));
        assert_eq!(
            tail.into_text_with_notice(),
            format!("b\nc\n\n[Output truncated: showing the last 2 of 3 lines (3 of 5 bytes). {NOT_SAVED}]")
        );
    }

    #[test]
    fn empty_text_and_zero_limits() {
        let empty = truncate_text("", &limits(0, 0, Head));
        assert_eq!(empty.text, "");
        assert!(!empty.is_truncated());
        assert_eq!((empty.info.total_lines, empty.info.kept_ranges.len()), (0, 0));

        let mut output = ToolOutput::text("a\nb\nc");
        let policy = TruncationPolicy { max_lines: Some(0), ..TruncationPolicy::default() };
        let info =
            truncate_output(&mut output, &policy, &TruncationLimits::default(), None).expect("truncated");
        assert_eq!(info.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(
            output.content,
            vec![Content::text(format!(
                "[Output truncated: showing the first 0 of 3 lines (0 of 5 bytes). {NOT_SAVED}]"
            ))]
        );
        for direction in [Tail, Middle] {
            let truncated = truncate_text("a\nb\nc", &limits(0, 100, direction));
            assert_eq!(truncated.text, "");
        }
        assert_eq!(
            truncate_text("a\nb\nc", &limits(0, 100, Middle)).info.notice().expect("notice"),
            format!("[Output truncated: showing none of the 3 lines (0 of 5 bytes). {NOT_SAVED}]")
        );
    }

    #[test]
    fn output_is_saved_noticed_and_recorded() {
        let tmp = TempDir::new("output");
        let store = OutputStore::open(tmp.path()).expect("store");
        let text = ten_lines();
        let mut output = ToolOutput::text(text.clone());
        let policy = TruncationPolicy { max_lines: Some(3), ..TruncationPolicy::default() };
        let info =
            truncate_output(&mut output, &policy, &TruncationLimits::default(), Some(&store)).expect("cut");
        let reference = info.output_ref.clone().expect("saved");
        assert_eq!(store.read_to_string(&reference).expect("stored"), text);
        assert_eq!(files_in(tmp.path()), 1);
        assert!(output.truncated);
        assert_eq!(
            output.text_content(),
            format!(
                "line 1\nline 2\nline 3\n\n[Output truncated: showing the first 3 of 10 lines (21 of 71 bytes). {}]",
                saved(&reference, "read more", 4)
            )
        );
        assert_eq!(
            output.metadata[METADATA_KEY],
            json!({
                "truncated": true,
                "truncated_by": "lines",
                "direction": "head",
                "max_lines": 3,
                "max_bytes": 51200,
                "total_lines": 10,
                "total_bytes": 71,
                "kept_lines": 3,
                "kept_bytes": 21,
                "kept_ranges": [{"first_line": 1, "last_line": 3, "bytes": 21, "partial": null}],
                "omitted_items": 0,
                "output_ref": reference,
            })
        );
        // Reading on from the notice's offset gives exactly the first line not shown.
        let next = store.read_lines(&reference, info.read_offset(), 1).expect("read");
        assert_eq!(next.text, "line 4\n");
    }

    #[test]
    fn never_truncated_twice() {
        let tmp = TempDir::new("twice");
        let store = OutputStore::open(tmp.path()).expect("store");
        let small = limits(2, 1000, Head);
        let mut output = ToolOutput::text(ten_lines());
        assert!(truncate_output(&mut output, &TruncationPolicy::default(), &small, Some(&store)).is_some());
        let once = output.clone();
        let tighter = limits(1, 5, Tail);
        assert_eq!(truncate_output(&mut output, &TruncationPolicy::default(), &tighter, Some(&store)), None);
        assert_eq!(output, once);
        assert_eq!(output.text_content().matches("[Output truncated:").count(), 1);
        assert_eq!(files_in(tmp.path()), 1);

        // A tool that truncated its own output is left alone too.
        let mut own = ToolOutput::text(ten_lines());
        let truncated = truncate_text(TEN_LINES, &small);
        let info = truncated.info.clone();
        own.content = vec![Content::text(truncated.into_text_with_notice())];
        mark_truncated(&mut own, &info);
        let before = own.clone();
        assert_eq!(truncate_output(&mut own, &TruncationPolicy::default(), &tighter, Some(&store)), None);
        assert_eq!(own, before);
        assert_eq!(own.metadata[METADATA_KEY]["kept_lines"], json!(2));

        // And so is a tool that opted out.
        let mut opted_out = ToolOutput::text(ten_lines());
        assert_eq!(
            truncate_output(&mut opted_out, &TruncationPolicy::DISABLED, &tighter, Some(&store)),
            None
        );
        assert_eq!(opted_out, ToolOutput::text(ten_lines()));
        assert_eq!(files_in(tmp.path()), 1);
    }

    fn items() -> ToolOutput {
        ToolOutput {
            content: vec![
                Content::text("a\nb\n"),
                Content::image("image/png", "AAAA"),
                Content::text("c\nd"),
                Content::text(""),
                Content::text("e\nf\ng"),
                Content::image("image/jpeg", "BBBB"),
            ],
            ..ToolOutput::default()
        }
    }

    #[test]
    fn text_items_share_the_budget_and_images_stay() {
        let tmp = TempDir::new("items");
        let store = OutputStore::open(tmp.path()).expect("store");
        let policy = TruncationPolicy::default();

        let mut head = items();
        let info = truncate_output(&mut head, &policy, &limits(3, 1000, Head), None).expect("cut");
        assert_eq!((info.total_lines, info.total_bytes, info.omitted_items), (7, 13, 1));
        assert_eq!(
            head.content,
            vec![
                Content::text("a\nb\n"),
                Content::image("image/png", "AAAA"),
                Content::text(format!(
                    "c\n\n[Output truncated: showing the first 3 of 7 lines (6 of 13 bytes). 1 text item was left \
                     out entirely. {NOT_SAVED}]"
                )),
                Content::text(""),
                Content::image("image/jpeg", "BBBB"),
            ]
        );

        let mut tail = items();
        let info = truncate_output(&mut tail, &policy, &limits(3, 1000, Tail), Some(&store)).expect("cut");
        let reference = info.output_ref.clone().expect("saved");
        // The stored document joins the items so that line numbers match the notice.
        assert_eq!(store.read_to_string(&reference).expect("stored"), "a\nb\nc\nd\ne\nf\ng");
        assert_eq!(
            tail.content,
            vec![
                Content::image("image/png", "AAAA"),
                Content::text(""),
                Content::text(format!(
                    "e\nf\ng\n\n[Output truncated: showing the last 3 of 7 lines (5 of 13 bytes). 2 text items were \
                     left out entirely. {}]",
                    saved(&reference, "read the earlier lines", 1)
                )),
                Content::image("image/jpeg", "BBBB"),
            ]
        );

        let mut middle = items();
        truncate_output(&mut middle, &policy, &limits(4, 1000, Middle), None).expect("cut");
        assert_eq!(
            middle.content,
            vec![
                Content::text("a\nb\n[... 3 lines (6 bytes) cut ...]"),
                Content::image("image/png", "AAAA"),
                Content::text(""),
                Content::text(format!(
                    "f\ng\n\n[Output truncated: showing lines 1-2 and lines 6-7 of 7 (7 of 13 bytes). 1 text item \
                     was left out entirely. {NOT_SAVED}]"
                )),
                Content::image("image/jpeg", "BBBB"),
            ]
        );
    }

    #[test]
    fn images_alone_are_never_truncated() {
        let mut output = ToolOutput::default()
            .with_content(Content::image("image/png", "A".repeat(200_000)))
            .with_content(Content::image("image/png", "B".repeat(200_000)));
        let before = output.clone();
        assert_eq!(
            truncate_output(&mut output, &TruncationPolicy::default(), &limits(1, 10, Head), None),
            None
        );
        assert_eq!(output, before);
    }

    #[test]
    fn a_failed_save_is_reported_not_hidden() {
        let tmp = TempDir::new("savefail");
        let dir = tmp.path().join("store");
        let store = OutputStore::open(&dir).expect("store");
        // The store's directory replaced by a regular file: nothing can be saved.
        std::fs::remove_dir_all(&dir).expect("remove store dir");
        std::fs::write(&dir, "not a directory").expect("write");
        let mut output = ToolOutput::text(ten_lines());
        let info =
            truncate_output(&mut output, &TruncationPolicy::default(), &limits(3, 1000, Head), Some(&store))
                .expect("cut");
        assert_eq!(info.output_ref, None);
        assert!(info.save_error.is_some());
        assert!(output.metadata[METADATA_KEY]["save_error"].is_string());
        assert!(output.text_content().ends_with(&format!("(21 of 71 bytes). {NOT_SAVED}]")));
    }

    #[test]
    fn the_notice_overhead_is_bounded() {
        let big = usize::MAX;
        let range = KeptRange { first_line: big, last_line: big, bytes: big, partial: None };
        let mut worst = 0;
        for direction in [Head, Tail, Middle] {
            let info = TruncationInfo {
                truncated: true,
                truncated_by: Some(TruncatedBy::Bytes),
                direction,
                max_lines: big,
                max_bytes: big,
                total_lines: big,
                total_bytes: big,
                kept_lines: big,
                kept_bytes: big,
                kept_ranges: vec![range, KeptRange { first_line: big - 1, ..range }],
                omitted_items: big,
                output_ref: Some(REF.into()),
                save_error: None,
            };
            worst = worst.max(info.notice().expect("notice").len());
        }
        let marker = format!("[... {big} lines ({big} bytes) cut ...]");
        // Separator before the notice, the marker and its line ends.
        assert!(2 + worst + 2 + marker.len() <= NOTICE_OVERHEAD_MAX_BYTES, "{worst} + {}", marker.len());
    }

    // ---- property-style checks against a straightforward reference ----

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn random_text(rng: &mut Rng) -> String {
        const PIECES: [&str; 10] =
            ["a", "bc", "\n", "\n", "\r\n", "\u{e9}", "\u{20ac}", "\u{1F600}", "line\n", "  "];
        let len = rng.below(60);
        (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect()
    }

    fn reference_head(text: &str, max_lines: usize, max_bytes: usize) -> usize {
        let (mut end, mut lines) = (0, 0);
        for line in text.split_inclusive('\n') {
            if lines == max_lines || end + line.len() > max_bytes {
                break;
            }
            end += line.len();
            lines += 1;
        }
        if lines == 0 && max_lines > 0 && !text.is_empty() {
            end = max_bytes.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            if text[..end].ends_with('\r') && text[end..].starts_with('\n') {
                end -= 1;
            }
        }
        end
    }

    fn reference_tail(text: &str, from: usize, max_lines: usize, max_bytes: usize) -> usize {
        let rest = &text[from..];
        let (mut start, mut lines) = (rest.len(), 0);
        for line in rest.split_inclusive('\n').rev() {
            if lines == max_lines || rest.len() - start + line.len() > max_bytes {
                break;
            }
            start -= line.len();
            lines += 1;
        }
        if lines == 0 && max_lines > 0 && !rest.is_empty() {
            start = rest.len() - max_bytes.min(rest.len());
            while !rest.is_char_boundary(start) {
                start += 1;
            }
        }
        from + start
    }

    #[test]
    fn random_texts_match_the_reference_and_keep_every_rule() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for case in 0..20_000 {
            let text = random_text(&mut rng);
            let direction = [Head, Tail, Middle][rng.below(3)];
            let limits = limits(rng.below(12), rng.below(90), direction);
            let truncated = truncate_text(&text, &limits);
            let info = &truncated.info;
            let context = format!("case {case}: {text:?} {limits:?}");

            assert_eq!(info.total_lines, text.lines().count(), "{context}");
            assert_eq!(info.total_bytes, text.len(), "{context}");
            let within = text.len() <= limits.max_bytes && info.total_lines <= limits.max_lines;
            assert_eq!(info.truncated, !within, "{context}");
            if within {
                assert_eq!(truncated.text, text, "{context}");
                continue;
            }
            assert!(info.kept_bytes <= limits.max_bytes, "{context}");
            assert!(info.kept_lines <= limits.max_lines, "{context}");
            assert!(info.kept_lines <= info.total_lines, "{context}");
            assert!(!truncated.text.contains('\u{FFFD}'), "{context}");

            let cut = cut(&text, &limits);
            let (head_end, tail_start) = match direction {
                Head => (reference_head(&text, limits.max_lines, limits.max_bytes), text.len()),
                Tail => (0, reference_tail(&text, 0, limits.max_lines, limits.max_bytes)),
                Middle => {
                    let (lines, bytes) = (limits.max_lines, limits.max_bytes);
                    let head_end = reference_head(&text, lines - lines / 2, bytes - bytes / 2);
                    (head_end, reference_tail(&text, head_end, lines / 2, bytes / 2))
                }
            };
            assert_eq!((cut.head.range.end, cut.tail.range.start), (head_end, tail_start), "{context}");
            assert!(head_end < tail_start, "nothing was cut: {context}");
            assert_eq!(info.kept_bytes, head_end + text.len() - tail_start, "{context}");
            let (head, tail) = (&text[..head_end], &text[tail_start..]);
            assert!(truncated.text.starts_with(head) && truncated.text.ends_with(tail), "{context}");
            assert_eq!(info.kept_ranges.iter().map(|r| r.bytes).sum::<usize>(), info.kept_bytes, "{context}");

            // The framework path gives the same text, plus exactly one notice within the overhead bound.
            let mut output = ToolOutput::text(text.clone());
            let policy = TruncationPolicy::default();
            let via_output = truncate_output(&mut output, &policy, &limits, None).expect("truncated");
            assert_eq!(&via_output, info, "{context}");
            assert_eq!(output.text_content(), truncated.clone().into_text_with_notice(), "{context}");
            assert_eq!(output.text_content().matches("[Output truncated:").count(), 1, "{context}");
            assert!(output.text_content().len() <= limits.max_bytes + NOTICE_OVERHEAD_MAX_BYTES, "{context}");
        }
    }

    #[test]
    fn random_item_splits_keep_images_and_account_for_every_item() {
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        for case in 0..5_000 {
            let mut content = Vec::new();
            for i in 0..1 + rng.below(5) {
                if rng.below(4) == 0 {
                    content.push(Content::image("image/png", format!("IMG{i}")));
                } else {
                    content.push(Content::text(random_text(&mut rng)));
                }
            }
            let direction = [Head, Tail, Middle][rng.below(3)];
            let limits = limits(1 + rng.below(12), rng.below(90), direction);
            let original = ToolOutput { content, ..ToolOutput::default() };
            let mut output = original.clone();
            let context = format!("case {case}: {original:?} {limits:?}");
            let Some(info) = truncate_output(&mut output, &TruncationPolicy::default(), &limits, None) else {
                assert_eq!(output, original, "{context}");
                continue;
            };
            let images = |o: &ToolOutput| -> Vec<Content> {
                o.content.iter().filter(|c| c.as_text().is_none()).cloned().collect()
            };
            assert_eq!(images(&output), images(&original), "{context}");
            let text = output.text_content();
            assert_eq!(text.matches("[Output truncated:").count(), 1, "{context}");
            assert!(text.len() <= limits.max_bytes + NOTICE_OVERHEAD_MAX_BYTES, "{context}");
            assert!(info.kept_bytes <= limits.max_bytes && info.kept_lines <= limits.max_lines, "{context}");
            let texts_before =
                original.content.iter().filter_map(Content::as_text).filter(|t| !t.is_empty()).count();
            let texts_after =
                output.content.iter().filter_map(Content::as_text).filter(|t| !t.is_empty()).count();
            if texts_before > 1 {
                // Every non-empty item is kept (in part) or counted as left out; the notice may add one.
                assert!(
                    texts_after == texts_before - info.omitted_items
                        || texts_after == texts_before - info.omitted_items + 1,
                    "{context}: {texts_after} after, {} omitted",
                    info.omitted_items
                );
            }
            // What is kept of an item comes from that item, in head and tail directions.
            if direction != Middle {
                let originals: Vec<&str> = original.content.iter().filter_map(Content::as_text).collect();
                for kept in output.content.iter().filter_map(Content::as_text) {
                    let body =
                        kept.split("[Output truncated:").next().unwrap_or_default().trim_end_matches('\n');
                    assert!(originals.iter().any(|o| o.contains(body)), "{context}: {kept:?}");
                }
            }
        }
    }
}
