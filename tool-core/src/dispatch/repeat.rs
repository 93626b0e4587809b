//! Fingerprints of calls for the repeat guard: equal for identical calls, whatever the key order
//! or whitespace, and computed without allocating.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::Inner;

/// The last call the dispatcher saw, and how many times in a row it came.
pub(super) struct LastCall {
    fingerprint: u64,
    count: u32,
}

impl Inner {
    /// Counts identical calls in a row (in the order the dispatcher sees them); returns the
    /// count including this call, or 0 when the guard is off. Calls are compared by a fingerprint
    /// of the tool name and the arguments (key order and whitespace do not matter), made only
    /// when the guard is on; `None` (a call that failed validation) breaks the row. The call of
    /// a tool that `polls` (waits for work in progress, `#[tool(polls)]`) is neither counted nor
    /// breaks the row: made again with the same arguments, it is waiting longer, not looping.
    pub(super) fn count_repeat(&self, polls: bool, fingerprint: impl FnOnce() -> Option<u64>) -> u32 {
        if self.repeat.threshold == 0 || polls {
            return 0;
        }
        let fingerprint = fingerprint();
        let mut last = self.last_call.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(fingerprint) = fingerprint else {
            *last = None;
            return 0;
        };
        match last.as_mut() {
            Some(prev) if prev.fingerprint == fingerprint => {
                prev.count = prev.count.saturating_add(1);
                prev.count
            }
            _ => {
                *last = Some(LastCall { fingerprint, count: 1 });
                1
            }
        }
    }
}

const K: u64 = 0x517c_c1b7_2722_0a95;

/// A 64-bit word mixer: each step is a bijection of the state for a given input word.
#[derive(Clone, Copy)]
struct Mix(u64);

impl Mix {
    fn word(self, word: u64) -> Self {
        Mix((self.0.rotate_left(5) ^ word).wrapping_mul(K))
    }

    fn bytes(mut self, bytes: &[u8]) -> Self {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self = self.word(u64::from_le_bytes(word));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.word(u64::from_le_bytes(tail)).word(bytes.len() as u64)
    }

    /// Murmur3's finalizer, so that sums of entry hashes stay well spread.
    fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

fn value(mix: Mix, v: &Value) -> Mix {
    match v {
        Value::Null => mix.null(),
        Value::Bool(b) => mix.bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                mix.i64(i)
            } else if let Some(u) = n.as_u64() {
                mix.u64(u)
            } else {
                mix.f64(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => mix.str(s),
        Value::Array(items) => items.iter().fold(mix.array_start(), value).array_end(items.len()),
        Value::Object(map) => mix.object(
            map.len(),
            map.iter().map(|(k, v)| value(Mix::key(k), v).finish()).fold(0, u64::wrapping_add),
        ),
    }
}

// One encoding of each kind of JSON value, shared by the value and the text fingerprints. An
// array's length comes after its items, where a reader of text knows it.
impl Mix {
    fn null(self) -> Self {
        self.word(1)
    }

    fn bool(self, b: bool) -> Self {
        self.word(2).word(u64::from(b))
    }

    fn i64(self, i: i64) -> Self {
        self.word(3).word(i as u64)
    }

    fn u64(self, u: u64) -> Self {
        match i64::try_from(u) {
            Ok(i) => self.i64(i),
            Err(_) => self.word(4).word(u),
        }
    }

    fn f64(self, f: f64) -> Self {
        self.word(5).word(f.to_bits())
    }

    fn str(self, s: &str) -> Self {
        self.word(6).bytes(s.as_bytes())
    }

    fn array_start(self) -> Self {
        self.word(7)
    }

    fn array_end(self, len: usize) -> Self {
        self.word(9).word(len as u64)
    }

    /// The state an object's member starts from.
    fn key(key: &str) -> Self {
        Mix(0).bytes(key.as_bytes())
    }

    /// Objects compare without regard to key order, so their members' hashes are summed.
    fn object(self, len: usize, members: u64) -> Self {
        self.word(8).word(len as u64).word(members)
    }
}

/// The fingerprint of a call to `tool` with validated `arguments`.
pub(crate) fn fingerprint(tool: &str, arguments: &Value) -> u64 {
    value(Mix(0).bytes(tool.as_bytes()), arguments).finish()
}

/// The fingerprint of a call to `tool` with arguments given as JSON text: the same as that of
/// the value the text parses to, made without building it. `None` for text that is not JSON.
pub(crate) fn fingerprint_text(tool: &str, text: &str) -> Option<u64> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let mix = Text(Mix(0).bytes(tool.as_bytes())).deserialize(&mut reader).ok()?;
    reader.end().ok()?;
    Some(mix.finish())
}

/// Reads one JSON value into the mixer, as [`value`] would mix it.
struct Text(Mix);

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Mix;

    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<Mix, D::Error> {
        reader.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Mix;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Mix, E> {
        Ok(self.0.null())
    }

    fn visit_bool<E>(self, b: bool) -> Result<Mix, E> {
        Ok(self.0.bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Mix, E> {
        Ok(self.0.i64(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Mix, E> {
        Ok(self.0.u64(u))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Mix, E> {
        Ok(self.0.f64(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<Mix, E> {
        Ok(self.0.str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Mix, A::Error> {
        let (mut mix, mut len) = (self.0.array_start(), 0);
        while let Some(next) = items.next_element_seed(Text(mix))? {
            mix = next;
            len += 1;
        }
        Ok(mix.array_end(len))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Mix, A::Error> {
        let (mut members, mut len) = (0u64, 0);
        while let Some(key) = map.next_key_seed(Key)? {
            members = members.wrapping_add(map.next_value_seed(Text(key))?.finish());
            len += 1;
        }
        Ok(self.0.object(len, members))
    }
}

/// Reads an object's key into the state its member starts from.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Mix;

    fn deserialize<D: Deserializer<'de>>(self, reader: D) -> Result<Mix, D::Error> {
        reader.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Mix;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Mix, E> {
        Ok(Mix::key(key))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{fingerprint, fingerprint_text};

    #[test]
    fn identical_calls_match_and_different_ones_do_not() {
        let a: serde_json::Value = serde_json::from_str(r#"{"path": "a.rs", "limit": 10}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{ "limit":10,"path":"a.rs" }"#).unwrap();
        assert_eq!(fingerprint("read", &a), fingerprint("read", &b));
        let different = [
            ("write", json!({"path": "a.rs", "limit": 10})),
            ("read", json!({"path": "a.rs", "limit": 11})),
            ("read", json!({"path": "b.rs", "limit": 10})),
            ("read", json!({"path": "a.rs", "limit": 10.0})),
            ("read", json!({"path": "a.rs", "limit": "10"})),
            ("read", json!({"path": "a.rs"})),
            ("read", json!({"path": "a.rs", "limit": 10, "x": null})),
            ("read", json!({"limit": "a.rs", "path": 10})),
            ("read", json!([["a.rs"], 10])),
            ("read", json!([["a.rs", 10]])),
            ("read", json!({"path": "a.rs\0", "limit": 10})),
        ];
        let mut seen = vec![fingerprint("read", &a)];
        for (tool, args) in &different {
            let f = fingerprint(tool, args);
            assert!(!seen.contains(&f), "{tool} {args}");
            seen.push(f);
        }
    }

    #[test]
    fn text_fingerprints_are_those_of_the_values_the_texts_parse_to() {
        let texts = [
            r#"{"path": "a.rs", "limit": 10}"#,
            r#"{ "limit":10,"path":"a.rs" }"#,
            r#"{"a": null, "b": true, "c": false, "d": -7, "e": 18446744073709551615, "f": 9223372036854775807}"#,
            r#"{"x": 1.5, "y": -0.0, "z": 1e300, "w": 10.0}"#,
            r#"{"s": "tab\there \u00e9\ud83d\ude00", "k\"ey": "v"}"#,
            r#"{"nested": {"list": [1, [2, [3, {}]], {"a": []}], "empty": {}}}"#,
            r#"[["a.rs"], 10]"#,
            r#"[["a.rs", 10]]"#,
            r#""just a string""#,
            "42",
            "null",
        ];
        for text in texts {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(fingerprint_text("read", text), Some(fingerprint("read", &value)), "{text}");
        }
        for text in ["", "{", r#"{"a": 1} x"#, "[1,]", "nul"] {
            assert_eq!(fingerprint_text("read", text), None, "{text:?}");
        }
    }
}
