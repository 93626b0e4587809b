//! Bytes of a command's output as text for a model: UTF-8 decoded across chunk boundaries, and
//! for a terminal, escape sequences and carriage returns before line feeds removed.

pub(crate) use tool_runtime::truncate::Utf8Decoder;

/// Where [`TerminalFilter`] is within the byte stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// Inside `ESC [ ...` up to its final byte.
    Csi,
    /// Inside a string (`ESC ]` OSC, `ESC P` DCS, ...) up to BEL or `ESC \`.
    String,
    /// ESC inside a string: `\` ends it.
    StringEscape,
    /// After an ESC that takes one more byte (`ESC ( B`, `ESC # 8`).
    OneMore,
    /// After a carriage return.
    Return,
}

/// Removes what a terminal interprets rather than shows: ANSI/VT escape sequences (colours,
/// cursor moves, titles, mode switches) and the carriage return of each CR LF, which a terminal
/// writes for every line feed. Works on bytes (every sequence is ASCII, and no byte of a
/// multi-byte UTF-8 character is ASCII), keeping its state across chunks.
#[derive(Debug, Default)]
pub(crate) struct TerminalFilter {
    state: State,
}

impl TerminalFilter {
    /// The bytes of `input` a reader should see.
    pub(crate) fn filter(&mut self, input: &[u8]) -> Vec<u8> {
        const ESC: u8 = 0x1b;
        let mut out = Vec::with_capacity(input.len());
        for &b in input {
            self.state = match self.state {
                State::Text | State::Return => {
                    if self.state == State::Return && b != b'\n' {
                        // A lone carriage return (a progress bar redrawing its line) stays.
                        out.push(b'\r');
                    }
                    match b {
                        ESC => State::Escape,
                        b'\r' => State::Return,
                        // 0x9b is the one-byte CSI only outside UTF-8, where it is a continuation byte.
                        _ => {
                            out.push(b);
                            State::Text
                        }
                    }
                }
                State::Escape => match b {
                    b'[' => State::Csi,
                    b']' | b'P' | b'X' | b'^' | b'_' => State::String,
                    b'(' | b')' | b'*' | b'+' | b'#' | b'%' | b' ' => State::OneMore,
                    ESC => State::Escape,
                    _ => State::Text,
                },
                // Parameter and intermediate bytes continue a CSI; a final byte (0x40..=0x7e) ends it.
                State::Csi => match b {
                    0x20..=0x3f => State::Csi,
                    ESC => State::Escape,
                    _ => State::Text,
                },
                State::String => match b {
                    0x07 => State::Text,
                    ESC => State::StringEscape,
                    _ => State::String,
                },
                State::StringEscape => match b {
                    b'\\' => State::Text,
                    ESC => State::StringEscape,
                    _ => State::String,
                },
                State::OneMore => State::Text,
            };
        }
        out
    }

    /// Ends the input: a carriage return held back is given out.
    pub(crate) fn flush(&mut self) -> Vec<u8> {
        let state = std::mem::take(&mut self.state);
        if state == State::Return { vec![b'\r'] } else { Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filtered(chunks: &[&[u8]]) -> String {
        let mut filter = TerminalFilter::default();
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(filter.filter(chunk));
        }
        out.extend(filter.flush());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escape_sequences_and_crlf_are_removed_across_chunks() {
        let text = "\x1b[1;31mred\x1b[0m line\r\n\x1b]0;title\x07next\x1b(B\x1b[?25h\r\nprogress 10%\rprogress 20%\r\n\x1bP1$r\x1b\\done";
        let expected = "red line\nnext\nprogress 10%\rprogress 20%\ndone";
        assert_eq!(filtered(&[text.as_bytes()]), expected);
        // Every split point, byte by byte.
        let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        assert_eq!(filtered(&bytes), expected);
        assert_eq!(filtered(&[b"ends with\r"]), "ends with\r");
    }

    #[test]
    fn utf8_split_between_chunks_is_decoded_whole() {
        let text = "héllo wörld ✓ 🦀";
        let mut decoder = Utf8Decoder::default();
        let mut out = String::new();
        for chunk in text.as_bytes().chunks(1) {
            out.push_str(&decoder.decode(chunk));
        }
        out.push_str(&decoder.flush());
        assert_eq!(out, text);
        let mut decoder = Utf8Decoder::default();
        assert_eq!(decoder.decode(b"a\xffb\xe2\x9c"), "a\u{FFFD}b");
        assert_eq!(decoder.flush(), "\u{FFFD}");
    }
}
