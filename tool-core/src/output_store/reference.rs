//! References to stored outputs: their one exact shape and how new ones are made.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::OutputStoreError;

const REF_PREFIX: &str = "out_";
/// `out_` + `YYYYMMDD` + `T` + `HHMMSS` + `_` + 8 hex digits.
const REF_LEN: usize = 4 + 8 + 1 + 6 + 1 + 8;

/// The reference of one stored output, e.g. `out_20261121T163000_ab12cd34`.
///
/// A reference is an opaque id, never a path: [`OutputRef::parse`] accepts exactly that shape,
/// so a reference coming from a model cannot name a file outside the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutputRef(String);

impl OutputRef {
    /// Validates `text` as a reference.
    pub fn parse(text: &str) -> Result<Self, OutputStoreError> {
        if Self::is_valid(text) {
            Ok(OutputRef(text.to_owned()))
        } else {
            Err(OutputStoreError::InvalidReference(text.to_owned()))
        }
    }

    /// Whether `text` has the shape of a reference: `out_` + `YYYYMMDD` + `T` + `HHMMSS` + `_` +
    /// 8 lowercase hexadecimal digits.
    pub fn is_valid(text: &str) -> bool {
        let bytes = text.as_bytes();
        if bytes.len() != REF_LEN || !text.starts_with(REF_PREFIX) {
            return false;
        }
        let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
        digits(4..12)
            && bytes[12] == b'T'
            && digits(13..19)
            && bytes[19] == b'_'
            && bytes[20..].iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    }

    /// The reference as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A fresh reference: the UTC time and 32 random bits.
    pub(crate) fn new_random() -> OutputRef {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        // The OS's randomness separates ids across processes; should it ever fail, the counter
        // still separates the ids of this process.
        let random = getrandom::u32().unwrap_or(0) ^ COUNTER.fetch_add(1, Ordering::Relaxed) as u32;
        OutputRef(format!("{REF_PREFIX}{}_{random:08x}", utc_timestamp(now.as_secs())))
    }
}

impl fmt::Display for OutputRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for OutputRef {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// `YYYYMMDDTHHMMSS` in UTC for seconds since the Unix epoch.
fn utc_timestamp(secs: u64) -> String {
    let iso = crate::words::utc_time(std::time::Duration::from_secs(secs));
    // `2026-11-27T09:30:00.000Z`: the same digits without the separators and the fraction.
    iso[..19].chars().filter(|c| !matches!(c, '-' | ':')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_have_one_exact_shape() {
        for good in ["out_20261121T163000_ab12cd34", "out_19700101T000000_00000000"] {
            assert!(OutputRef::is_valid(good), "{good}");
            assert_eq!(OutputRef::parse(good).expect("valid").as_str(), good);
        }
        for bad in [
            "",
            "out_",
            "../out_20261121T163000_ab12cd34",
            "out_20261121T163000_ab12cd34/..",
            "out_20261121T163000_ab12cd3",
            "out_20261121T163000_ab12cd345",
            "out_20261121T163000_AB12CD34",
            "out_20261121t163000_ab12cd34",
            "out_2026112xT163000_ab12cd34",
            "out_20261121T163000-ab12cd34",
            "OUT_20261121T163000_ab12cd34",
            "out_20261121T163000_ab12cd3g",
            "/etc/passwd",
            "..",
            "out_20261121T163000_ab12cd\u{e9}",
            "out_2026\u{e9}121T16300_ab12cd34",
        ] {
            assert!(!OutputRef::is_valid(bad), "{bad:?}");
            assert!(matches!(OutputRef::parse(bad), Err(OutputStoreError::InvalidReference(t)) if t == bad));
        }
    }

    #[test]
    fn generated_references_are_valid_and_distinct() {
        let refs: Vec<OutputRef> = (0..200).map(|_| OutputRef::new_random()).collect();
        for r in &refs {
            assert!(OutputRef::is_valid(r.as_str()), "{r}");
        }
        let mut unique = refs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), refs.len());
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "19700101T000000");
        assert_eq!(utc_timestamp(951_782_400), "20000229T000000");
        assert_eq!(utc_timestamp(1_795_278_600), "20261121T163000");
        assert_eq!(utc_timestamp(4_102_444_799), "20991231T235959");
    }
}
