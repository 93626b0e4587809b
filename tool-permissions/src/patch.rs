//! The `apply_patch` format, parsed (by the patch tool, and by the hooks that are shown a patch
//! file by file, so that both read it alike): `*** Begin Patch`, file operations (add, delete, update with hunks, move), `*** End Patch`.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: docs/new.md
//! +first line
//! *** Update File: src/lib.rs
//! *** Move to: src/core.rs
//! @@ fn main() {
//!      let x = 1;
//! -    let y = 2;
//! +    let y = 3;
//! *** End of File
//! *** Delete File: old.txt
//! *** End Patch
//! ```
//!
//! The parser is lenient where models are sloppy without being ambiguous: surrounding blank
//! lines and a `<<'EOF'` heredoc wrapper are ignored, `\r\n` line ends are accepted, an empty
//! line inside a hunk is an empty context line, the first hunk of a file may leave out its `@@`
//! line, a section header may be indented where a section is expected (as codex accepts), and
//! blank lines after `*** End of File` are spacing.

use std::fmt;

/// A parsed patch: the file operations in the order they are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// One entry per `*** Add File`, `*** Delete File` or `*** Update File` section.
    pub files: Vec<FileChange>,
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// `*** Add File: path`: create the file (or replace it) with `contents`.
    Add {
        /// The path as written in the patch.
        path: String,
        /// The new content: every `+` line with a line feed after it.
        contents: String,
    },
    /// `*** Delete File: path`.
    Delete {
        /// The path as written in the patch.
        path: String,
    },
    /// `*** Update File: path`, optionally `*** Move to: other`, then hunks.
    Update {
        /// The path as written in the patch.
        path: String,
        /// Where the updated file goes, if it moves.
        move_to: Option<String>,
        /// The changes, in file order.
        hunks: Vec<Hunk>,
    },
}

impl FileChange {
    /// The path the section names first.
    pub fn path(&self) -> &str {
        match self {
            FileChange::Add { path, .. } | FileChange::Delete { path } | FileChange::Update { path, .. } => {
                path
            }
        }
    }
}

/// One `@@` hunk of an update: the lines it expects (context and removed lines, in order) and
/// what replaces them (context and added lines, in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The text after `@@ `, a line to find before the hunk's lines (a function or class
    /// header, say); `None` for a bare `@@`.
    pub header: Option<String>,
    /// The lines the file must hold: context (` `) and removed (`-`) lines.
    pub old: Vec<String>,
    /// The lines that replace them: context (` `) and added (`+`) lines.
    pub new: Vec<String>,
    /// For each line of `new`, the index in `old` of the context line it repeats (`None` for
    /// an added line): where the file's lines matched only loosely, its own text is kept.
    pub kept: Vec<Option<usize>>,
    /// `*** End of File` followed: the lines are at the end of the file.
    pub end_of_file: bool,
    /// The line of the patch where the hunk starts (1-based), for messages.
    pub line: usize,
}

/// A patch that does not follow the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The line of the patch (1-based) where the problem is.
    pub line: usize,
    /// What is wrong and what was expected, for the model.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// How a message shows one line of the patch: quoted and cut, so a huge line stays short.
fn shown(line: &str) -> String {
    tool_core::words::quote(line)
}

/// Parses a patch. Never panics, whatever the input.
pub fn parse_patch(text: &str) -> Result<Patch, ParseError> {
    let all: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    // Skip surrounding blank lines, keeping the original line numbers for messages.
    let mut first = all.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
    let mut last = all.iter().rposition(|l| !l.trim().is_empty()).map_or(first, |i| i + 1);
    if first < last && is_heredoc_start(all[first]) && all[last - 1].trim() == "EOF" {
        first += 1;
        last -= 1;
    }
    let lines = Lines { all: &all, next: first, end: last };
    Parser { lines }.patch()
}

fn is_heredoc_start(line: &str) -> bool {
    let line = line.trim();
    let line = line.strip_prefix("apply_patch").map_or(line, str::trim_start);
    matches!(line, "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
}

struct Lines<'a> {
    all: &'a [&'a str],
    next: usize,
    end: usize,
}

impl<'a> Lines<'a> {
    fn peek(&self) -> Option<&'a str> {
        (self.next < self.end).then(|| self.all[self.next])
    }

    /// The 1-based number of the next line (or of the line after the last one).
    fn number(&self) -> usize {
        self.next + 1
    }

    fn advance(&mut self) {
        self.next += 1;
    }
}

struct Parser<'a> {
    lines: Lines<'a>,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError { line: self.lines.number(), message: message.into() }
    }

    fn patch(mut self) -> Result<Patch, ParseError> {
        match self.lines.peek() {
            Some(line) if line.trim() == BEGIN => self.lines.advance(),
            Some(line) => {
                return Err(self.error(format!("the patch must start with `{BEGIN}`, found {}", shown(line))));
            }
            None => return Err(self.error(format!("the patch is empty; it must start with `{BEGIN}`"))),
        }
        let mut files = Vec::new();
        loop {
            let Some(line) = self.lines.peek() else {
                return Err(self.error(format!("the patch must end with `{END}`")));
            };
            if line.trim() == END {
                self.lines.advance();
                break;
            }
            files.push(self.file_change(line)?);
        }
        if let Some(extra) = self.lines.peek() {
            return Err(self.error(format!("nothing may follow `{END}`, found {}", shown(extra))));
        }
        if files.is_empty() {
            return Err(ParseError {
                line: self.lines.number() - 1,
                message:
                    "the patch changes no file; add at least one `*** Add File:`, `*** Delete File:` or \
                          `*** Update File:` section"
                        .to_owned(),
            });
        }
        Ok(Patch { files })
    }

    fn path(&self, rest: &str, prefix: &str) -> Result<String, ParseError> {
        let path = rest.trim();
        if path.is_empty() {
            return Err(self.error(format!("`{}` needs a file path after it", prefix.trim_end())));
        }
        Ok(path.to_owned())
    }

    fn file_change(&mut self, line: &str) -> Result<FileChange, ParseError> {
        // A section is expected here: indentation before its header is the model's, not meaning.
        let line = line.trim_start();
        if let Some(rest) = strip(line, ADD) {
            let path = self.path(rest, ADD)?;
            self.lines.advance();
            let mut contents = String::new();
            while let Some(line) = self.lines.peek() {
                let Some(text) = line.strip_prefix('+') else { break };
                contents.push_str(text);
                contents.push('\n');
                self.lines.advance();
            }
            self.expect_section_end("an added file's lines must each start with `+`")?;
            return Ok(FileChange::Add { path, contents });
        }
        if let Some(rest) = strip(line, DELETE) {
            let path = self.path(rest, DELETE)?;
            self.lines.advance();
            self.expect_section_end("a deleted file has no lines after it")?;
            return Ok(FileChange::Delete { path });
        }
        if let Some(rest) = strip(line, UPDATE) {
            let path = self.path(rest, UPDATE)?;
            self.lines.advance();
            let mut move_to = None;
            if let Some(line) = self.lines.peek()
                && let Some(rest) = strip(line, MOVE)
            {
                move_to = Some(self.path(rest, MOVE)?);
                self.lines.advance();
            }
            let hunks = self.hunks()?;
            if hunks.is_empty() && move_to.is_none() {
                return Err(self.error(format!(
                    "`{UPDATE}{path}` has no hunk; add an `@@` line followed by context (` `), removed (`-`) and \
                     added (`+`) lines, or a `{MOVE}` line to rename the file"
                )));
            }
            return Ok(FileChange::Update { path, move_to, hunks });
        }
        Err(self.error(format!("expected `{ADD}`, `{DELETE}`, `{UPDATE}` or `{END}`, found {}", shown(line))))
    }

    /// After a section: the next line starts another section or ends the patch.
    fn expect_section_end(&self, hint: &str) -> Result<(), ParseError> {
        match self.lines.peek() {
            None => Ok(()),
            Some(line) if starts_section(line.trim_start()) => Ok(()),
            Some(line) => Err(self.error(format!(
                "{hint}; found {}, expected a `*** ` line starting the next file or `{END}`",
                shown(line)
            ))),
        }
    }

    fn hunks(&mut self) -> Result<Vec<Hunk>, ParseError> {
        let mut hunks = Vec::new();
        while let Some(line) = self.lines.peek() {
            // Before the first hunk, a line starting with a space is a context line (a file may
            // hold `*** ` lines); after one, only `@@` or a section can follow, so an indented
            // section header is one.
            if starts_section(line) || (!hunks.is_empty() && starts_section(line.trim_start())) {
                break;
            }
            let start = self.lines.number();
            let header = if line.trim_end() == "@@" {
                self.lines.advance();
                None
            } else if let Some(header) = line.strip_prefix("@@ ") {
                self.lines.advance();
                // A unified-diff header (`@@ -1,3 +1,4 @@`) carries no usable context.
                let header = header.trim();
                (!header.is_empty() && !is_unified_range(header)).then(|| header.to_owned())
            } else if hunks.is_empty() {
                // The first hunk may start without `@@`.
                None
            } else {
                return Err(self.error(format!(
                    "expected `@@` starting the next hunk, a `*** ` line or `{END}`, found {}; every line of a \
                     hunk starts with ` ` (context), `-` (removed) or `+` (added)",
                    shown(line)
                )));
            };
            let mut hunk = Hunk {
                header,
                old: Vec::new(),
                new: Vec::new(),
                kept: Vec::new(),
                end_of_file: false,
                line: start,
            };
            let mut changed = false;
            while let Some(line) = self.lines.peek() {
                if line.starts_with("@@") || starts_section(line) {
                    break;
                }
                if line.trim_end() == END_OF_FILE {
                    self.lines.advance();
                    hunk.end_of_file = true;
                    // Nothing of the file can follow: blank lines after the marker are spacing.
                    while self.lines.peek().is_some_and(|l| l.trim().is_empty()) {
                        self.lines.advance();
                    }
                    break;
                }
                match line.chars().next() {
                    None | Some(' ') => {
                        let text = line.get(1..).unwrap_or_default();
                        hunk.kept.push(Some(hunk.old.len()));
                        hunk.old.push(text.to_owned());
                        hunk.new.push(text.to_owned());
                    }
                    Some('-') => {
                        hunk.old.push(line[1..].to_owned());
                        changed = true;
                    }
                    Some('+') => {
                        hunk.kept.push(None);
                        hunk.new.push(line[1..].to_owned());
                        changed = true;
                    }
                    // Not a hunk line, so an indented section header (a tab, say) is one.
                    Some(_) if starts_section(line.trim_start()) => break,
                    Some(_) => {
                        return Err(self.error(format!(
                            "every line of a hunk starts with ` ` (context), `-` (removed) or `+` (added); found {}. \
                             To keep a line as context, put a space before it",
                            shown(line)
                        )));
                    }
                }
                self.lines.advance();
            }
            if hunk.old.is_empty() && hunk.new.is_empty() {
                return Err(ParseError {
                    line: start,
                    message: "this hunk has no lines; follow `@@` with context (` `), removed (`-`) and added (`+`) \
                              lines"
                        .to_owned(),
                });
            }
            if !changed {
                return Err(ParseError {
                    line: start,
                    message: "this hunk only has context lines; add the `-` and `+` lines that change the file, or \
                              leave the hunk out"
                        .to_owned(),
                });
            }
            hunks.push(hunk);
        }
        Ok(hunks)
    }
}

/// `rest` after `prefix`, tolerating a missing space after the colon.
fn strip<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix).or_else(|| line.strip_prefix(prefix.trim_end()))
}

fn starts_section(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed == END || [ADD, DELETE, UPDATE].iter().any(|prefix| line.starts_with(prefix.trim_end()))
}

/// `-1,3 +1,4 @@ ...`: the range part of a unified-diff hunk header.
fn is_unified_range(header: &str) -> bool {
    let mut words = header.split_whitespace();
    let range = |w: Option<&str>, sign: char| {
        w.and_then(|w| w.strip_prefix(sign))
            .is_some_and(|r| !r.is_empty() && r.split(',').all(|n| n.parse::<u64>().is_ok()))
    };
    range(words.next(), '-') && range(words.next(), '+')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(path: &str, hunks: Vec<Hunk>) -> FileChange {
        FileChange::Update { path: path.into(), move_to: None, hunks }
    }

    fn hunk(
        header: Option<&str>,
        old: &[&str],
        new: &[&str],
        kept: &[Option<usize>],
        eof: bool,
        line: usize,
    ) -> Hunk {
        Hunk {
            header: header.map(str::to_owned),
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
            kept: kept.to_vec(),
            end_of_file: eof,
            line,
        }
    }

    #[test]
    fn every_section_kind() {
        let patch = "*** Begin Patch\n*** Add File: a/new.txt\n+one\n+\n+two\n*** Delete File: gone.txt\n\
                     *** Update File: src/x.rs\n*** Move to: src/y.rs\n@@ fn main() {\n     a();\n-    b();\n+    c();\n\
                     \n@@\n-last\n+final\n*** End of File\n*** End Patch\n";
        let parsed = parse_patch(patch).unwrap();
        assert_eq!(
            parsed.files,
            vec![
                FileChange::Add { path: "a/new.txt".into(), contents: "one\n\ntwo\n".into() },
                FileChange::Delete { path: "gone.txt".into() },
                FileChange::Update {
                    path: "src/x.rs".into(),
                    move_to: Some("src/y.rs".into()),
                    hunks: vec![
                        hunk(
                            Some("fn main() {"),
                            &["    a();", "    b();", ""],
                            &["    a();", "    c();", ""],
                            &[Some(0), None, Some(2)],
                            false,
                            9,
                        ),
                        hunk(None, &["last"], &["final"], &[None], true, 14),
                    ],
                },
            ]
        );
    }

    #[test]
    fn lenient_where_unambiguous() {
        // CRLF, surrounding blank lines, a heredoc wrapper, a first hunk without `@@`, a
        // unified-diff range header.
        let patch = "\n\napply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Update File: f\r\n-a\r\n+b\r\n@@ -5,2 +5,2 @@\r\n-c\r\n+d\r\n*** End Patch\r\nEOF\n\n";
        let parsed = parse_patch(patch).unwrap();
        assert_eq!(
            parsed.files,
            vec![update(
                "f",
                vec![
                    hunk(None, &["a"], &["b"], &[None], false, 6),
                    hunk(None, &["c"], &["d"], &[None], false, 8)
                ]
            )]
        );
    }

    #[test]
    fn indented_section_headers_where_a_section_is_expected() {
        let patch = "*** Begin Patch\n  *** Add File: a\n+x\n  *** Update File: f\n@@\n-a\n+b\n\t*** Delete File: g\n\
                     \x20  *** Delete File: i\n\t*** Update File: h\n@@\n-c\n+d\n *** End Patch\n";
        let parsed = parse_patch(patch).unwrap();
        let paths: Vec<&str> = parsed.files.iter().map(FileChange::path).collect();
        assert_eq!(paths, ["a", "f", "g", "i", "h"]);
        // Before the first hunk, a line starting with a space is context: the file may hold it.
        let parsed =
            parse_patch("*** Begin Patch\n*** Update File: f\n *** Update File: g\n-a\n+b\n*** End Patch")
                .unwrap();
        assert_eq!(
            parsed.files,
            vec![update(
                "f",
                vec![hunk(
                    None,
                    &["*** Update File: g", "a"],
                    &["*** Update File: g", "b"],
                    &[Some(0), None],
                    false,
                    3
                )]
            )]
        );
    }

    #[test]
    fn blank_lines_after_end_of_file_are_spacing() {
        let patch = "*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** End of File\n\n*** Update File: g\n@@\n-c\n\
                     +d\n*** End of File\n  \n\n*** End Patch\n";
        let parsed = parse_patch(patch).unwrap();
        assert_eq!(
            parsed.files,
            vec![
                update("f", vec![hunk(None, &["a"], &["b"], &[None], true, 3)]),
                update("g", vec![hunk(None, &["c"], &["d"], &[None], true, 9)]),
            ]
        );
        // What follows the blank lines must still be a hunk or a section.
        let err = parse_patch(
            "*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** End of File\n\n x\n*** End Patch",
        )
        .unwrap_err();
        assert_eq!(err.line, 8, "{err}");
    }

    #[test]
    fn errors_name_the_line_and_the_fix() {
        let cases = [
            ("", "line 1: the patch is empty; it must start with `*** Begin Patch`"),
            (
                "diff --git a b\n",
                "line 1: the patch must start with `*** Begin Patch`, found \"diff --git a b\"",
            ),
            (
                "*** Begin Patch\n*** Update File: f\n-a\n+b\n",
                "line 5: the patch must end with `*** End Patch`",
            ),
            (
                "*** Begin Patch\n*** End Patch",
                "line 2: the patch changes no file; add at least one `*** Add File:`, `*** Delete File:` or `*** Update File:` section",
            ),
            (
                "*** Begin Patch\n*** Update File: f\n-a\n+b\nx\n*** End Patch",
                "line 5: every line of a hunk starts with ` ` (context), `-` (removed) or `+` (added); found \"x\". To keep a line as context, put a space before it",
            ),
            (
                "*** Begin Patch\n*** Update File: f\n*** End Patch",
                "line 3: `*** Update File: f` has no hunk; add an `@@` line followed by context (` `), removed (`-`) and added (`+`) lines, or a `*** Move to: ` line to rename the file",
            ),
            (
                "*** Begin Patch\n*** Add File: f\nhello\n*** End Patch",
                "line 3: an added file's lines must each start with `+`; found \"hello\", expected a `*** ` line starting the next file or `*** End Patch`",
            ),
            (
                "*** Begin Patch\n*** Delete File:   \n*** End Patch",
                "line 2: `*** Delete File:` needs a file path after it",
            ),
            (
                "*** Begin Patch\n*** Update File: f\n@@\n a\n*** End Patch",
                "line 3: this hunk only has context lines; add the `-` and `+` lines that change the file, or leave the hunk out",
            ),
            (
                "*** Begin Patch\n*** Update File: f\n-a\n+b\n*** End Patch\nmore",
                "line 6: nothing may follow `*** End Patch`, found \"more\"",
            ),
            (
                "*** Begin Patch\n*** Frobnicate: f\n*** End Patch",
                "line 2: expected `*** Add File: `, `*** Delete File: `, `*** Update File: ` or `*** End Patch`, found \"*** Frobnicate: f\"",
            ),
        ];
        for (patch, expected) in cases {
            assert_eq!(parse_patch(patch).unwrap_err().to_string(), expected, "{patch:?}");
        }
    }

    #[test]
    fn multi_byte_text_never_splits_a_character() {
        for patch in [
            "*** Begin Patch\n*** Update File: é\n-é\n+ü\n*** End Patch",
            "é",
            "*** Begin Patch\n*** Add File:é\n+\u{feff}\n*** End Patch",
        ] {
            let _ = parse_patch(patch);
        }
        let parsed = parse_patch("*** Begin Patch\n*** Add File:é\n+ü\n*** End Patch").unwrap();
        assert_eq!(parsed.files, vec![FileChange::Add { path: "é".into(), contents: "ü\n".into() }]);
    }
}
