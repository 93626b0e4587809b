//! Text helpers shared by the tools: path display, binary and image sniffing, line cutting, name suggestions.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

/// How many bytes at the start of a file are inspected to tell text from binary.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// 64 random bits, for names that must not collide (temporary files, command markers).
pub(crate) fn random_u64() -> u64 {
    // The OS's randomness; the time stands in should it ever fail.
    getrandom::u64().unwrap_or_else(|_| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    })
}

/// `n` and `word`, plural unless `n` is 1: the runtime's one way of counting.
pub(crate) use tool_runtime::words::plural;

/// How a message names a displayed directory: the root is "the workspace root".
pub(crate) fn place(display: &str) -> String {
    if display == "." { "the workspace root".to_owned() } else { display.to_owned() }
}

/// A path as the model reads it: as-is when it is plain text, otherwise in double quotes with
/// escapes (`\n`, `\t`, `\u{..}` for control characters and for the invisible ones that turn
/// text around or hide in it, `\xNN` for bytes that are not UTF-8), so every name stays on one
/// line and no two names look alike (`invoice\u{202e}fdp.exe` does not read as `invoiceexe.pdf`).
pub(crate) fn display_path(path: &Path) -> String {
    let mut out = String::new();
    push_display_path(&mut out, path);
    out
}

/// Appends [`display_path`]`(path)` to `out`, without a string of its own.
pub(crate) fn push_display_path(out: &mut String, path: &Path) {
    let bytes = path_bytes(path);
    // Most paths are printable ASCII: told by one pass over the bytes, without decoding.
    if bytes.first() != Some(&b'"') && bytes.iter().all(|&b| (b' '..=b'~').contains(&b)) {
        // Printable ASCII is UTF-8 (the check cannot fail).
        out.push_str(std::str::from_utf8(&bytes).unwrap_or_default());
        return;
    }
    let plain = std::str::from_utf8(&bytes)
        .ok()
        .filter(|s| !s.chars().any(|c| escaped(c) || c == '"' && s.starts_with('"')));
    if let Some(text) = plain {
        out.push_str(text);
        return;
    }
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if escaped(c) => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    out.push('"');
}

/// Whether `c` is written as an escape in a displayed path: what shows nothing or shows as
/// something else (see [`tool_runtime::words::invisible`]), the ordinary space aside.
fn escaped(c: char) -> bool {
    c != ' ' && tool_runtime::words::invisible(c)
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(path.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    Cow::Owned(path.to_string_lossy().into_owned().into_bytes())
}

/// Whether a file starting with `sample` is binary: it has a NUL byte, or more than 30 % of it
/// is control characters or bytes that are not UTF-8.
pub(crate) fn looks_binary(sample: &[u8]) -> bool {
    if sample.is_empty() {
        return false;
    }
    if memchr::memchr(0, sample).is_some() {
        return true;
    }
    let mut suspicious = 0usize;
    let mut chunks = sample.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        suspicious += chunk
            .valid()
            .chars()
            .filter(|&c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x0c' | '\x1b' | '\x08'))
            .count();
        // A character cut in two by the end of the sample is not evidence of binary content.
        let cut_at_end = chunks.peek().is_none() && chunk.invalid().len() < 4;
        if !cut_at_end {
            suspicious += chunk.invalid().len();
        }
    }
    suspicious * 10 > sample.len() * 3
}

/// The MIME type of an image recognised by its first bytes: PNG, JPEG, GIF or WebP.
pub(crate) fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// What a result says when a replaced file had other hard links, which keep the old content.
pub(crate) fn hard_links_note(other_links: u64) -> String {
    match other_links {
        0 => String::new(),
        n => format!(
            " The old file had {} elsewhere; {} the old content (a write replaces the file, it never writes through a hard link).",
            plural(n, "other hard link"),
            if n == 1 { "it keeps" } else { "they keep" }
        ),
    }
}

/// A model's argument as an error message repeats it: the runtime's one way of quoting, cut
/// after 200 characters.
pub(crate) use tool_runtime::words::{excerpt, quote as echo};

/// A message built from a model's argument (a parser's error quoting it, say), cut after 2000
/// characters.
pub(crate) fn clip(message: &str) -> Cow<'_, str> {
    tool_runtime::words::excerpt_of(message, 2000)
}

/// `line` cut to at most `max_chars` characters, with a marker saying how long it was.
/// `more_chars` counts characters of the line that were never read into `line`.
pub(crate) fn cut_line(line: &str, max_chars: usize, more_chars: usize) -> Cow<'_, str> {
    match line.char_indices().nth(max_chars) {
        None if more_chars == 0 => Cow::Borrowed(line),
        found => {
            let end = found.map_or(line.len(), |(end, _)| end);
            let total = line.chars().count() + more_chars;
            Cow::Owned(format!(
                "{}… [line truncated: showing {max_chars} of {total} characters]",
                &line[..end]
            ))
        }
    }
}

/// Up to three of `candidates` that look like `wanted` (a file name), best first.
pub(crate) fn similar_names<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let wanted_lower = wanted.to_lowercase();
    let wanted_stem = stem(&wanted_lower);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|name| {
            let lower = name.to_lowercase();
            let score = if lower == wanted_lower {
                0
            } else if stem(&lower) == wanted_stem && !wanted_stem.is_empty() {
                1
            } else if wanted_lower.len() >= 3
                && (lower.contains(&wanted_lower) || wanted_lower.contains(&lower))
            {
                2
            } else {
                let distance = levenshtein(&lower, &wanted_lower);
                let allowed = (wanted_lower.chars().count() / 3).max(2);
                if distance > allowed {
                    return None;
                }
                2 + distance
            };
            Some((score, name))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, name)| name).collect()
}

fn stem(name: &str) -> &str {
    match name.rfind('.') {
        Some(dot) if dot > 0 => &name[..dot],
        _ => name,
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_names_stay_on_one_line() {
        assert_eq!(display_path(Path::new("src/main.rs")), "src/main.rs");
        assert_eq!(display_path(Path::new("with space/é.txt")), "with space/é.txt");
        assert_eq!(display_path(Path::new("a\nb")), "\"a\\nb\"");
        // Printable ASCII as it is, a quote inside a name too; DEL, a tab, a leading quote and
        // C1 controls are escaped.
        assert_eq!(display_path(Path::new("a \"b\" ~{}.rs")), "a \"b\" ~{}.rs");
        assert_eq!(display_path(Path::new("del\x7f")), "\"del\\u{7f}\"");
        assert_eq!(display_path(Path::new("a\tb")), "\"a\\tb\"");
        assert_eq!(display_path(Path::new("\"quoted\"")), "\"\\\"quoted\\\"\"");
        assert_eq!(display_path(Path::new("next\u{85}line")), "\"next\\u{85}line\"");
        // Text that turns around or hides: a name must not read as another.
        assert_eq!(display_path(Path::new("invoice\u{202e}fdp.exe")), "\"invoice\\u{202e}fdp.exe\"");
        assert_eq!(display_path(Path::new("a\u{2028}b\u{ad}c")), "\"a\\u{2028}b\\u{ad}c\"");
        assert_eq!(display_path(Path::new("a\u{3000}b c")), "\"a\\u{3000}b c\"");
        assert_eq!(display_path(Path::new("ma\u{200b}in.rs")), "\"ma\\u{200b}in.rs\"");
        assert_eq!(display_path(Path::new("\u{2067}a\u{2069}")), "\"\\u{2067}a\\u{2069}\"");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let name = std::ffi::OsStr::from_bytes(b"bad\xffname");
            assert_eq!(display_path(Path::new(name)), "\"bad\\xFFname\"");
        }
    }

    #[test]
    fn binary_sniffing() {
        assert!(!looks_binary(b""));
        assert!(!looks_binary("fn main() {}\n\tlet x = \"é\";\r\n".as_bytes()));
        assert!(looks_binary(b"text\0more"));
        assert!(looks_binary(&[0x01, 0x02, 0x03, b'a', 0x04, 0x05]));
        // A multi-byte character cut at the end of the sample is still text.
        assert!(!looks_binary(&"ééé".as_bytes()[..5]));
    }

    #[test]
    fn images_by_content() {
        assert_eq!(image_mime(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_mime(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(image_mime(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_mime(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_mime(b"RIFF\x10\0\0\0WAVEfmt "), None);
        assert_eq!(image_mime(b"PNG"), None);
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        assert_eq!(cut_line("short", 10, 0), "short");
        assert_eq!(cut_line("ééééé", 3, 0), "ééé… [line truncated: showing 3 of 5 characters]");
        assert_eq!(cut_line("abc", 3, 7), "abc… [line truncated: showing 3 of 10 characters]");
    }

    #[test]
    fn suggestions() {
        let names = ["main.rs", "lib.rs", "mine.rs", "README.md", "Main.py", "other.txt"];
        assert_eq!(similar_names("mian.rs", names), ["main.rs", "mine.rs"]);
        assert_eq!(similar_names("main.ts", names), ["Main.py", "main.rs"]);
        assert_eq!(similar_names("readme.md", names), ["README.md"]);
        assert_eq!(similar_names("zzzzzzzz", names), Vec::<&str>::new());
    }
}
