//! `pattern` and `patternProperties`: ECMA-262 regular expressions, compiled for the `regex`
//! crate (linear time). `\d`, `\w` and their negations are ASCII, as in JavaScript; a pattern
//! the crate cannot compile (look-around, back-references) is `None`: not enforced.

use regex::Regex;

/// Bytes a compiled pattern may take; a larger one is not enforced.
pub(super) const MAX_COMPILED_BYTES: usize = 256 << 10;

/// `pattern` compiled, or `None` when the `regex` crate cannot run it.
pub(super) fn compile(pattern: &str) -> Option<Regex> {
    regex::RegexBuilder::new(&translate(pattern)).size_limit(MAX_COMPILED_BYTES).build().ok()
}

/// ECMA-262's ASCII classes spelled out; everything else as written.
fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_classes_are_spelled_out_and_escapes_kept() {
        assert_eq!(translate(r"^\d+\.\w$"), r"^[0-9]+\.[0-9A-Za-z_]$");
        assert_eq!(translate(r"[\d-]"), r"[[0-9]-]");
        assert_eq!(translate(r"\\d"), r"\\d");
        assert!(compile(r"[\D]").is_some_and(|r| r.is_match("x") && !r.is_match("1")));
    }
}
