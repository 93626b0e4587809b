//! What the binary writes to the user's terminal: lines on standard error, never a control
//! sequence that came from elsewhere.

use std::borrow::Cow;
use std::io::{self, Write};

/// Writes `line` to standard error as [`shown`] makes it.
pub(crate) fn say(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{}", shown(line));
}

/// `line` with its control characters (but tabs and line breaks) and the marks that reorder text
/// written as escapes (`\u{1b}`): names and messages in a line may come from a mounted server or
/// a project's files, and must not drive the user's terminal (move the cursor, rewrite what was
/// printed, set the clipboard, or show text in another order than it is).
fn shown(line: &str) -> Cow<'_, str> {
    let drives = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !line.chars().any(drives) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if drives(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminals_control_sequences_are_shown_not_sent() {
        assert!(matches!(shown("tools: MCP server `a`: ok\tdone"), Cow::Borrowed(_)));
        assert_eq!(
            shown("tool `x\u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{7}` skipped"),
            "tool `x\\u{1b}[2J\\u{1b}]52;c;ZXZpbA==\\u{7}` skipped"
        );
        assert_eq!(shown("a\u{9b}31mb\u{7f}"), "a\\u{9b}31mb\\u{7f}");
        assert_eq!(shown("\u{202e}gnp.exe"), "\\u{202e}gnp.exe");
        assert_eq!(shown("two\nlines"), "two\nlines");
    }
}
