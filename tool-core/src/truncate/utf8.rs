//! UTF-8 that arrives in chunks, decoded as it comes.

/// Decodes UTF-8 that arrives in chunks: a character split between two chunks is decoded whole,
/// and each invalid sequence becomes U+FFFD (as `String::from_utf8_lossy` would have it).
#[derive(Debug, Clone, Default)]
pub struct Utf8Decoder {
    /// The start of a character whose remaining bytes have not arrived yet.
    pending: Vec<u8>,
}

impl Utf8Decoder {
    /// The text of `bytes`, with a character cut at the end kept back for the next chunk.
    pub fn decode(&mut self, bytes: &[u8]) -> String {
        let joined;
        let mut rest: &[u8] = if self.pending.is_empty() {
            bytes
        } else {
            self.pending.extend_from_slice(bytes);
            joined = std::mem::take(&mut self.pending);
            &joined
        };
        let mut text = String::with_capacity(rest.len());
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    return text;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        None => {
                            self.pending = after.to_vec();
                            return text;
                        }
                        Some(len) => {
                            text.push('\u{FFFD}');
                            rest = &after[len..];
                        }
                    }
                }
            }
        }
    }

    /// Whether it holds nothing: no character waits for the rest of its bytes.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Ends the input: an incomplete character left over becomes U+FFFD.
    pub fn flush(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        self.pending.clear();
        "\u{FFFD}".to_owned()
    }
}
