//! What a truncation did: precise metadata for the UI (under [`METADATA_KEY`]) and for the notice.

use serde::{Deserialize, Serialize};

use super::limits::TruncationLimits;
use crate::output::ToolOutput;
use crate::spec::TruncationDirection;

/// The key of [`TruncationInfo`] in [`ToolOutput::metadata`].
pub const METADATA_KEY: &str = "truncation";

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
    /// How many bytes of the full text the stored copy holds, when the store's size limit cut it
    /// (it then holds the beginning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_bytes: Option<usize>,
    /// The store's size limit for one output, when it cut the stored copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_limit: Option<usize>,
    /// Why the full text could not be saved, for the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_error: Option<String>,
}

impl TruncationInfo {
    /// Nothing cut: everything of a text of `total_lines` lines and `total_bytes` bytes is kept.
    pub(crate) fn new(limits: &TruncationLimits, total_lines: usize, total_bytes: usize) -> Self {
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
            kept_ranges: Vec::new(),
            omitted_items: 0,
            output_ref: None,
            stored_bytes: None,
            store_limit: None,
            save_error: None,
        }
    }

    /// Nothing cut, with the one range that shows it all.
    pub(crate) fn untouched(limits: &TruncationLimits, total_lines: usize, total_bytes: usize) -> Self {
        let mut info = TruncationInfo::new(limits, total_lines, total_bytes);
        if total_lines > 0 {
            info.kept_ranges.push(KeptRange {
                first_line: 1,
                last_line: total_lines,
                bytes: total_bytes,
                partial: None,
            });
        }
        info
    }

    /// Records that the full text was saved as `reference`, of which the stored copy holds the
    /// first `stored_bytes` bytes under a size limit of `store_limit` bytes per output.
    pub fn record_saved(&mut self, reference: impl Into<String>, stored_bytes: usize, store_limit: usize) {
        self.output_ref = Some(reference.into());
        self.save_error = None;
        let cut = stored_bytes < self.total_bytes;
        self.stored_bytes = cut.then_some(stored_bytes);
        self.store_limit = cut.then_some(store_limit);
    }

    /// Records why the full text could not be saved.
    pub fn record_save_error(&mut self, error: impl std::fmt::Display) {
        self.output_ref = None;
        self.stored_bytes = None;
        self.store_limit = None;
        self.save_error = Some(error.to_string());
    }

    /// The 1-based line from which a reader of the stored output sees what was not (wholly) shown.
    pub fn read_offset(&self) -> usize {
        if self.direction == TruncationDirection::Tail {
            return 1;
        }
        match self.kept_ranges.first() {
            Some(range) if range.first_line == 1 && range.partial.is_none() => range.last_line + 1,
            _ => 1,
        }
    }
}

/// Marks `output` as truncated and records `info` under [`METADATA_KEY`], for a tool that
/// truncates its own output so the framework does not truncate it again.
pub fn mark_truncated(output: &mut ToolOutput, info: &TruncationInfo) {
    output.truncated = true;
    output.metadata.insert(METADATA_KEY.to_owned(), serde_json::to_value(info).unwrap_or_default());
}
