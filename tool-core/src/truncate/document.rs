//! Several text items of one output cut as one document, with images left alone.
//!
//! The text items of one output share one budget: they are measured, cut and stored as one
//! document in which every item starts on a new line (a `\n` is put between two items only when
//! the first does not already end with one), so line numbers in the notice are line numbers in
//! the stored output. Items wholly inside the cut are dropped and counted in the notice; images
//! are never touched.

use std::ops::Range;

use super::cut::{Cut, Source, count_lines, cut, join_ends, slice};
use super::info::{TruncationInfo, mark_truncated};
use super::limits::TruncationLimits;
use super::notice::{ReadHint, append_notice};
use crate::output::{Content, ToolOutput};
use crate::spec::TruncationPolicy;

/// An output whose text is over its limits, taken apart: the document to save, what was cut, and
/// what becomes of each item. Made by [`cut_output`]; [`OutputCut::apply`] puts the kept content
/// and the notice back.
#[derive(Debug)]
#[must_use = "the output's content was taken out; `apply` puts the kept part back"]
pub struct OutputCut {
    content: Vec<Content>,
    /// The items joined, when there are several; a single item is its own document.
    joined: Option<String>,
    single: Option<usize>,
    replacements: Vec<Replacement>,
    info: TruncationInfo,
}

/// What happens to one content item.
#[derive(Debug)]
enum Replacement {
    Keep,
    Drop,
    Text(String),
}

/// Cuts the text of `output` to the tool's `policy` over `defaults`, as the dispatcher does after
/// every call, without saving anything or adding the notice yet.
///
/// `None` (and `output` untouched) when the tool opted out (`policy.enabled == false`), when the
/// output was already truncated (`output.truncated`), or when its text is within the limits.
/// Otherwise the content is taken out of `output`: save [`OutputCut::document`] where the model
/// can read it back, record that in [`OutputCut::info_mut`], then [`OutputCut::apply`].
pub fn cut_output(
    output: &mut ToolOutput,
    policy: &TruncationPolicy,
    defaults: &TruncationLimits,
) -> Option<OutputCut> {
    if !policy.enabled || output.truncated {
        return None;
    }
    let limits = defaults.with_policy(policy);
    if within_limits(&output.content, &limits) {
        return None;
    }
    let content = std::mem::take(&mut output.content);
    let (joined, spans) = join(&content);
    let single = match (&joined, spans.as_slice()) {
        (None, [(index, _)]) => Some(*index),
        _ => None,
    };
    let doc = match (&joined, single) {
        (Some(joined), _) => joined.as_str(),
        (None, Some(index)) => content[index].as_text().unwrap_or_default(),
        (None, None) => "",
    };
    let total_lines = count_lines(doc.as_bytes());
    let cut = cut(&Source::whole(doc), &limits);
    let mut info = cut.info(&limits, total_lines, doc.len());
    let replacements = distribute(&cut, doc, &spans, content.len(), &mut info);
    Some(OutputCut { content, joined, single, replacements, info })
}

/// Truncates the text of `output` in place without saving the full text: [`cut_output`], then
/// [`OutputCut::apply`] with the default hint. Returns what was cut, or `None` as
/// [`cut_output`] does.
pub fn truncate_output(
    output: &mut ToolOutput,
    policy: &TruncationPolicy,
    defaults: &TruncationLimits,
) -> Option<TruncationInfo> {
    let cut = cut_output(output, policy, defaults)?;
    Some(cut.apply(output, ReadHint::neutral()))
}

impl OutputCut {
    /// The whole text as one document, the text that the notice's line numbers count: save
    /// this for the model to read back.
    pub fn document(&self) -> &str {
        match (&self.joined, self.single) {
            (Some(joined), _) => joined,
            (None, Some(index)) => self.content.get(index).and_then(Content::as_text).unwrap_or_default(),
            (None, None) => "",
        }
    }

    /// What was cut.
    pub fn info(&self) -> &TruncationInfo {
        &self.info
    }

    /// What was cut, to record where the document was saved.
    pub fn info_mut(&mut self) -> &mut TruncationInfo {
        &mut self.info
    }

    /// Puts the kept content back into `output`, the notice (with `hint` for a saved document)
    /// at the end of its last text, marks it truncated and records the info under
    /// [`METADATA_KEY`](super::METADATA_KEY). Returns the info.
    pub fn apply(self, output: &mut ToolOutput, hint: &ReadHint) -> TruncationInfo {
        let OutputCut { content, replacements, info, .. } = self;
        let mut kept = Vec::with_capacity(content.len() + 1);
        for (item, replacement) in content.into_iter().zip(replacements) {
            match replacement {
                Replacement::Keep => kept.push(item),
                Replacement::Drop => {}
                Replacement::Text(text) => kept.push(Content::Text { text }),
            }
        }
        let notice = info.notice_with(hint).unwrap_or_default();
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
        info
    }
}

/// Whether the text items, joined as by [`join`], fit `limits`, without joining them.
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

/// The non-empty text items joined into one text, each starting on a new line (`None` when there
/// is at most one), with each item's index and span in the document.
fn join(content: &[Content]) -> (Option<String>, Vec<(usize, Range<usize>)>) {
    let texts: Vec<(usize, &str)> = content
        .iter()
        .enumerate()
        .filter_map(|(i, item)| item.as_text().map(|text| (i, text)))
        .filter(|(_, text)| !text.is_empty())
        .collect();
    if let [(index, text)] = texts.as_slice() {
        return (None, vec![(*index, 0..text.len())]);
    }
    if texts.is_empty() {
        return (None, Vec::new());
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
    (Some(doc), spans)
}

/// What becomes of each content item, given each text item's span in the document.
fn distribute(
    cut: &Cut,
    doc: &str,
    spans: &[(usize, Range<usize>)],
    items: usize,
    info: &mut TruncationInfo,
) -> Vec<Replacement> {
    let mut replacements: Vec<Replacement> = (0..items).map(|_| Replacement::Keep).collect();
    let marker = cut.marker(info);
    let (head_end, tail_start) = (cut.head.range.end, cut.tail.range.start);
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
