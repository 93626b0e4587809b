//! Fingerprints of calls for the repeat guard: equal for identical calls, whatever the key order
//! or whitespace, and computed without allocating.

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
    /// of the tool name and the validated arguments (key order and whitespace do not matter).
    pub(super) fn count_repeat(&self, tool: &str, arguments: Option<&Value>) -> u32 {
        if self.repeat.threshold == 0 {
            return 0;
        }
        let fingerprint = arguments.map(|arguments| fingerprint(tool, arguments));
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
        Value::Null => mix.word(1),
        Value::Bool(b) => mix.word(2).word(u64::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                mix.word(3).word(i as u64)
            } else if let Some(u) = n.as_u64() {
                mix.word(4).word(u)
            } else {
                mix.word(5).word(n.as_f64().map_or(0, f64::to_bits))
            }
        }
        Value::String(s) => mix.word(6).bytes(s.as_bytes()),
        Value::Array(items) => items.iter().fold(mix.word(7).word(items.len() as u64), value),
        Value::Object(map) => {
            // Objects compare without regard to key order, so their entries combine commutatively.
            let entries = map
                .iter()
                .map(|(k, v)| value(Mix(0).bytes(k.as_bytes()), v).finish())
                .fold(0u64, u64::wrapping_add);
            mix.word(8).word(map.len() as u64).word(entries)
        }
    }
}

/// The fingerprint of a call to `tool` with validated `arguments`.
pub(crate) fn fingerprint(tool: &str, arguments: &Value) -> u64 {
    value(Mix(0).bytes(tool.as_bytes()), arguments).finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fingerprint;

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
}
