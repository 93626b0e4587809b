//! Text files as the editing tools (`edit`, `multi_edit`, `apply_patch`) see them: reading with the size and binary checks, the BOM, line endings, typographic characters.

use std::io::{self, Read};

use tool_runtime::ToolError;

use crate::ops::{FileChanged, FileKind, Operations, Target};
use crate::text::{SNIFF_BYTES, looks_binary, plural};

/// Files larger than this are not edited.
pub const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// The UTF-8 byte-order mark.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads the text file `path` for editing: `None` when it does not exist; an error the model can
/// act on for a directory, a special file, a file over [`MAX_EDIT_BYTES`] or a binary file.
/// `tool` names the tool in those messages.
pub(crate) fn read_for_edit(
    ops: &dyn Operations,
    path: &Target,
    display: &str,
    tool: &str,
) -> Result<Option<Vec<u8>>, ToolError> {
    let info = match ops.metadata(path) {
        Ok(info) => info,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("read", display, e)),
    };
    match info.kind {
        FileKind::File => {}
        FileKind::Dir => {
            return Err(ToolError::invalid_arguments(format!(
                "{display} is a directory; give the path of a file inside it."
            )));
        }
        _ => {
            return Err(ToolError::invalid_arguments(format!(
                "{display} is not a regular file; {tool} only edits files."
            )));
        }
    }
    if info.len > MAX_EDIT_BYTES {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is {}, more than the 64 MiB {tool} handles; change it with bash (for example sed).",
            plural(info.len, "byte")
        )));
    }
    let mut bytes = Vec::new();
    ops.open(path)
        .and_then(|file| file.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| io_error("read", display, e))?;
    if looks_binary(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
        return Err(ToolError::invalid_arguments(format!(
            "{display} is a binary file; {tool} only changes text files."
        )));
    }
    Ok(Some(bytes))
}

/// A file-system error of an editing tool, as the model reads it. A [`FileChanged`] error says
/// that nothing was written and what to do.
pub(crate) fn io_error(verb: &str, display: &str, error: io::Error) -> ToolError {
    if FileChanged::is(&error) {
        return ToolError::execution(format!(
            "{display} changed while this edit was being made (another process wrote it after it was read); \
             nothing was written. Read the file again and redo the edit against its current text."
        ));
    }
    let message = format!("Cannot {verb} {display}: {error}");
    ToolError::from_io(error).with_message(message)
}

/// A unified diff of two texts, for the UI (`diff` metadata).
pub(crate) fn unified_diff(display: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{display}"), &format!("b/{display}"))
        .to_string()
}

/// The line endings a file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endings {
    /// Mostly `\r\n`.
    Crlf,
    /// Only `\n`.
    Lf,
    /// Both, with `\n` at least as common: text is inserted as given.
    Mixed,
}

pub(crate) fn line_endings(body: &[u8]) -> Endings {
    let crlf = memchr::memmem::find_iter(body, b"\r\n").count();
    let lf = memchr::memchr_iter(b'\n', body).count() - crlf;
    if crlf == 0 {
        Endings::Lf
    } else if crlf > lf {
        Endings::Crlf
    } else {
        Endings::Mixed
    }
}

/// Turns every `\n` not already preceded by `\r` into `\r\n`.
pub(crate) fn to_crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut previous = '\0';
    for c in text.chars() {
        if c == '\n' && previous != '\r' {
            out.push('\r');
        }
        out.push(c);
        previous = c;
    }
    out
}

/// The plain character a typographic quote, dash or space stands for.
pub(crate) fn plain(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2007}' | '\u{202F}' => ' ',
        c => c,
    }
}

pub(crate) fn plain_str(text: &str) -> String {
    text.chars().map(plain).collect()
}
