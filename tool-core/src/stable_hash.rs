//! A hash whose value is the same in every run, on every platform and in every version: for the
//! names and ids a model or a settings file sees again (a mounted tool's shortened name, a made-up
//! call id). `std`'s and `foldhash`'s hashers are seeded or may change between versions.

/// FNV-1a, 32 bits: short enough for eight hex digits in a name, and written to as an
/// [`std::io::Write`] so JSON can be hashed as it is serialized.
///
/// ```
/// use tool_core::stable_hash::Fnv1a;
///
/// assert_eq!(Fnv1a::of(b"a"), 0xe40c_292c);
/// let mut hash = Fnv1a::new();
/// serde_json::to_writer(&mut hash, &serde_json::json!({"a": 1}))?;
/// assert_eq!(hash.finish(), Fnv1a::of(br#"{"a":1}"#));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a(u32);

impl Fnv1a {
    /// The hash of nothing yet.
    pub const fn new() -> Self {
        Fnv1a(0x811c_9dc5)
    }

    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> u32 {
        let mut hash = Fnv1a::new();
        hash.add(bytes);
        hash.finish()
    }

    /// Adds `bytes` to what is hashed.
    pub fn add(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u32::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }

    /// The hash of everything added.
    pub const fn finish(&self) -> u32 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a::new()
    }
}

impl std::io::Write for Fnv1a {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.add(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
