//! What the model reads about a cut: the notice after the kept text, the marker where `middle`
//! cut, and the read-back hint that whoever installs an output store configures.
//!
//! The notice (and the marker) come on top of the byte budget rather than out of it, so the kept
//! counts it reports are exactly what the limits allow. Their size is bounded by
//! [`NOTICE_OVERHEAD_MAX_BYTES`] (768, 1.5 % of the default budget) whatever the hint, the
//! numbers and the store's size limit; a typical notice with a store reference is about 300
//! bytes (0.6 %).

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use super::info::{LinePart, TruncationInfo};
use crate::spec::TruncationDirection;
use crate::words::plural;

/// Upper bound on what truncation adds beyond `max_bytes`: the notice with its separator, plus
/// the marker between the two ends for `middle`, for any [`ReadHint`] and any reference of at
/// most [`REFERENCE_MAX_BYTES`].
pub const NOTICE_OVERHEAD_MAX_BYTES: usize = 768;

/// The longest store reference [`NOTICE_OVERHEAD_MAX_BYTES`] allows for (the output store's
/// references have 28 bytes).
pub const REFERENCE_MAX_BYTES: usize = 32;

/// How the notice tells the model to read a saved output back, installed with the output store.
///
/// A template whose placeholders are filled in for each notice: `{ref}` (the reference),
/// `{offset}` (the 1-based line where what was not shown starts; 1 for tail) and `{read}`
/// (`read more`, or `read the earlier lines` for tail); `{{` and `}}` are literal braces. The
/// default names no tool: `Full output saved as {ref}.` An application whose model has tools to
/// read stored outputs names them, for example:
///
/// ```
/// use tool_runtime::truncate::ReadHint;
///
/// let hint = ReadHint::new("Full output saved as {ref}; {read} with show_output(id=\"{ref}\", line={offset}).")
///     .expect("a valid template");
/// assert_eq!(hint.template(), "Full output saved as {ref}; {read} with show_output(id=\"{ref}\", line={offset}).");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadHint {
    template: Cow<'static, str>,
    parts: Cow<'static, [HintPart]>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HintPart {
    Text(Cow<'static, str>),
    Ref,
    Offset,
    Read,
}

/// Why a [`ReadHint`] template was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadHintError(String);

impl fmt::Display for ReadHintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadHintError {}

static NEUTRAL: ReadHint = ReadHint {
    template: Cow::Borrowed("Full output saved as {ref}."),
    parts: Cow::Borrowed(&[
        HintPart::Text(Cow::Borrowed("Full output saved as ")),
        HintPart::Ref,
        HintPart::Text(Cow::Borrowed(".")),
    ]),
};
const READ_MORE: &str = "read more";
const READ_EARLIER: &str = "read the earlier lines";
const OFFSET_MAX_BYTES: usize = 20;

impl Default for ReadHint {
    /// `Full output saved as {ref}.`
    fn default() -> Self {
        NEUTRAL.clone()
    }
}

impl ReadHint {
    /// The longest a hint may be once filled in (with the longest reference, offset and `{read}`
    /// wording), so that the notice stays within [`NOTICE_OVERHEAD_MAX_BYTES`].
    pub const MAX_BYTES: usize = 320;

    /// The default hint, which names no tool: `Full output saved as {ref}.`
    pub fn neutral() -> &'static ReadHint {
        &NEUTRAL
    }

    /// Parses `template`; refuses unknown placeholders, unmatched braces, and templates that
    /// could be longer than [`ReadHint::MAX_BYTES`] once filled in.
    pub fn new(template: &str) -> Result<Self, ReadHintError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut rest = template;
        while let Some(at) = rest.find(['{', '}']) {
            text.push_str(&rest[..at]);
            let after = &rest[at..];
            if let Some(tail) = after.strip_prefix("{{") {
                text.push('{');
                rest = tail;
            } else if let Some(tail) = after.strip_prefix("}}") {
                text.push('}');
                rest = tail;
            } else if after.starts_with('}') {
                return Err(ReadHintError(format!(
                    "the read hint {template:?} has a `}}` without its `{{`; write `}}}}` for a literal brace"
                )));
            } else {
                let Some(end) = after.find('}') else {
                    return Err(ReadHintError(format!(
                        "the read hint {template:?} has a `{{` without its `}}`; write `{{{{` for a literal brace"
                    )));
                };
                let part = match &after[1..end] {
                    "ref" => HintPart::Ref,
                    "offset" => HintPart::Offset,
                    "read" => HintPart::Read,
                    other => {
                        return Err(ReadHintError(format!(
                            "the read hint {template:?} has an unknown placeholder `{{{other}}}`; expected \
                             `{{ref}}`, `{{offset}}` or `{{read}}`"
                        )));
                    }
                };
                if !text.is_empty() {
                    parts.push(HintPart::Text(Cow::Owned(std::mem::take(&mut text))));
                }
                parts.push(part);
                rest = &after[end + 1..];
            }
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(HintPart::Text(Cow::Owned(text)));
        }
        let hint = ReadHint { template: Cow::Owned(template.to_owned()), parts: Cow::Owned(parts) };
        let longest = hint.longest();
        if longest > Self::MAX_BYTES {
            return Err(ReadHintError(format!(
                "the read hint {template:?} can be {longest} bytes long once filled in; at most {} are allowed",
                Self::MAX_BYTES
            )));
        }
        Ok(hint)
    }

    /// The template as given.
    pub fn template(&self) -> &str {
        &self.template
    }

    fn longest(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                HintPart::Text(text) => text.len(),
                HintPart::Ref => REFERENCE_MAX_BYTES,
                HintPart::Offset => OFFSET_MAX_BYTES,
                HintPart::Read => READ_EARLIER.len().max(READ_MORE.len()),
            })
            .sum()
    }

    fn render(&self, out: &mut String, reference: &str, offset: usize, direction: TruncationDirection) {
        for part in self.parts.iter() {
            match part {
                HintPart::Text(text) => out.push_str(text.as_ref()),
                HintPart::Ref => out.push_str(reference),
                HintPart::Offset => {
                    let _ = write!(out, "{offset}");
                }
                HintPart::Read => out.push_str(match direction {
                    TruncationDirection::Tail => READ_EARLIER,
                    TruncationDirection::Head | TruncationDirection::Middle => READ_MORE,
                }),
            }
        }
    }
}

impl TruncationInfo {
    /// The notice for the model with the default [`ReadHint`], or `None` when nothing was cut.
    pub fn notice(&self) -> Option<String> {
        self.notice_with(ReadHint::neutral())
    }

    /// The notice for the model, or `None` when nothing was cut. For example, with the hint
    /// `Full output saved as {ref}; {read} with read_output(ref="{ref}", offset={offset}).`:
    ///
    /// ```text
    /// [Output truncated: showing the first 2000 of 48213 lines (51200 of 2371642 bytes). Full output saved as out_20261121T163000_ab12cd34; read more with read_output(ref="out_20261121T163000_ab12cd34", offset=2001).]
    /// ```
    pub fn notice_with(&self, hint: &ReadHint) -> Option<String> {
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
                notice.push(' ');
                hint.render(&mut notice, reference, self.read_offset(), self.direction);
                if let Some(limit) = self.store_limit {
                    let _ = write!(notice, " The saved copy stops at the store's limit of {limit} bytes.");
                }
            }
            None => notice.push_str(
                " The full output was not saved, so the rest is not available; narrow the request (for \
                 example a smaller range or a more specific pattern) to see it.",
            ),
        }
        notice.push(']');
        Some(notice)
    }

    fn write_shown(&self, out: &mut String) {
        let total = self.total_lines;
        let bytes = format!("({} of {})", self.kept_bytes, plural(self.total_bytes as u64, "byte"));
        let lines = plural(total as u64, "line");
        let _ = match (self.direction, self.kept_ranges.as_slice()) {
            (TruncationDirection::Head, []) => write!(out, "showing the first 0 of {lines} {bytes}"),
            (TruncationDirection::Head, [range]) if range.first_line == 1 && range.partial.is_none() => {
                write!(out, "showing the first {} of {lines} {bytes}", range.last_line)
            }
            (TruncationDirection::Tail, []) => write!(out, "showing the last 0 of {lines} {bytes}"),
            (TruncationDirection::Tail, [range]) if range.last_line == total && range.partial.is_none() => {
                write!(out, "showing the last {} of {lines} {bytes}", range.last_line + 1 - range.first_line)
            }
            (_, []) => write!(out, "showing none of the {lines} {bytes}"),
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
}

/// The line standing where `middle` cut `lines` lines (`bytes` bytes) out.
pub(crate) fn marker(lines: usize, bytes: usize) -> String {
    if lines == 0 {
        format!("[... {} cut ...]", plural(bytes as u64, "byte"))
    } else {
        format!("[... {} ({}) cut ...]", plural(lines as u64, "line"), plural(bytes as u64, "byte"))
    }
}

/// Appends `notice` after one blank line (or as the whole text when `text` is empty), where the
/// truncation notice goes; a tool that adds notes of its own below its output uses it too, so
/// every note stands apart the same way.
pub fn append_notice(text: &mut String, notice: &str) {
    if !text.is_empty() {
        text.push_str(if text.ends_with('\n') { "\n" } else { "\n\n" });
    }
    text.push_str(notice);
}
