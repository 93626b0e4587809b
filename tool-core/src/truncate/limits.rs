//! The limits one truncation applies: lines, bytes (or tokens, estimated from bytes) and the end kept.

use serde::{Deserialize, Serialize};

use crate::spec::{TruncationDirection, TruncationPolicy};

/// Default maximum number of lines kept: 1990, so that the kept text and its notice fit in the
/// 2000 lines that clients such as opencode keep of a tool result (they cut the rest, notice
/// included).
pub const DEFAULT_MAX_LINES: usize = 1990;

/// What a tool result may take in all, its notice included: 48,000 bytes, less than the
/// 50,000 characters Claude Code keeps of an MCP tool result (it saves a longer one to a file
/// and shows its model a 2 KB preview, without the notice) and the 51,200 bytes opencode keeps.
pub const RESULT_BUDGET_BYTES: usize = 48_000;

/// Default maximum number of bytes kept: [`RESULT_BUDGET_BYTES`] less the most a notice adds
/// ([`NOTICE_OVERHEAD_MAX_BYTES`](super::NOTICE_OVERHEAD_MAX_BYTES)), so that the kept text and
/// its notice fit in the budget of those clients.
pub const DEFAULT_MAX_BYTES: usize = RESULT_BUDGET_BYTES - super::notice::NOTICE_OVERHEAD_MAX_BYTES;

/// Bytes per token in [`TruncationLimits::with_max_tokens`]: the estimate codex uses, which
/// holds well enough for English text and code.
pub const BYTES_PER_TOKEN: usize = 4;

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
    /// 1990 lines, 47232 bytes, head.
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

    /// These limits with every value the tool's `policy` sets replacing the default. Applying the
    /// same policy twice gives the same limits.
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

    /// These limits keeping at most about `tokens` tokens: the byte limit becomes the smaller of
    /// itself and `tokens` × [`BYTES_PER_TOKEN`].
    pub fn with_max_tokens(self, tokens: usize) -> Self {
        TruncationLimits { max_bytes: self.max_bytes.min(tokens.saturating_mul(BYTES_PER_TOKEN)), ..self }
    }

    /// Whether a text of `lines` lines and `bytes` bytes is kept whole.
    pub fn fits(&self, lines: usize, bytes: usize) -> bool {
        bytes <= self.max_bytes && lines <= self.max_lines
    }

    /// The budget of the kept beginning: all of it for head, the larger half for middle.
    pub(crate) fn head_budget(&self) -> (usize, usize) {
        match self.direction {
            TruncationDirection::Head => (self.max_lines, self.max_bytes),
            TruncationDirection::Tail => (0, 0),
            TruncationDirection::Middle => {
                (self.max_lines - self.max_lines / 2, self.max_bytes - self.max_bytes / 2)
            }
        }
    }

    /// The budget of the kept end: all of it for tail, the smaller half for middle.
    pub(crate) fn tail_budget(&self) -> (usize, usize) {
        match self.direction {
            TruncationDirection::Head => (0, 0),
            TruncationDirection::Tail => (self.max_lines, self.max_bytes),
            TruncationDirection::Middle => (self.max_lines / 2, self.max_bytes / 2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TruncationDirection::{Head, Middle, Tail};

    fn limits(max_lines: usize, max_bytes: usize, direction: TruncationDirection) -> TruncationLimits {
        TruncationLimits::new(max_lines, max_bytes, direction)
    }

    #[test]
    fn default_limits_and_policy_overrides() {
        let defaults = TruncationLimits::default();
        assert_eq!(defaults, limits(1990, 47232, Head));
        assert_eq!(defaults.with_policy(&TruncationPolicy::default()), defaults);
        let policy =
            TruncationPolicy { enabled: true, max_lines: Some(5), max_bytes: None, direction: Some(Tail) };
        assert_eq!(defaults.with_policy(&policy), limits(5, 47232, Tail));
        assert_eq!(defaults.with_policy(&policy).with_policy(&policy), limits(5, 47232, Tail));
        let policy =
            TruncationPolicy { enabled: true, max_lines: None, max_bytes: Some(10), direction: None };
        assert_eq!(limits(7, 100, Middle).with_policy(&policy), limits(7, 10, Middle));
    }

    #[test]
    fn tokens_are_four_bytes_each() {
        assert_eq!(TruncationLimits::default().with_max_tokens(1000), limits(1990, 4000, Head));
        // A token budget never raises the byte limit.
        assert_eq!(TruncationLimits::default().with_max_tokens(100_000), TruncationLimits::default());
        assert_eq!(limits(1, 10, Tail).with_max_tokens(usize::MAX), limits(1, 10, Tail));
    }

    #[test]
    fn budgets_split_for_middle() {
        assert_eq!(limits(5, 11, Middle).head_budget(), (3, 6));
        assert_eq!(limits(5, 11, Middle).tail_budget(), (2, 5));
        assert_eq!(limits(5, 11, Head).tail_budget(), (0, 0));
        assert_eq!(limits(5, 11, Tail).head_budget(), (0, 0));
    }
}
