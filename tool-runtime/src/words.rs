//! Words of the messages the runtime writes: a count with its noun.

/// `n` and `word`, plural unless `n` is 1: "1 line", "3 lines", "2 entries".
///
/// A word ending in a consonant and `y` takes `ies` ("entries", but "keys"); every other word
/// takes `s`, so pass a word with a regular plural.
pub(crate) fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        return format!("1 {word}");
    }
    let consonant_y = word.strip_suffix('y').filter(|stem| stem.ends_with(|c: char| !"aeiou".contains(c)));
    match consonant_y {
        Some(stem) if !stem.is_empty() => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn counts_take_their_plural() {
        assert_eq!(plural(1, "line"), "1 line");
        assert_eq!(plural(0, "line"), "0 lines");
        assert_eq!(plural(3, "byte"), "3 bytes");
        assert_eq!(plural(2, "entry"), "2 entries");
        assert_eq!(plural(1, "entry"), "1 entry");
        assert_eq!(plural(2, "key"), "2 keys");
        assert_eq!(plural(2, "y"), "2 ys");
    }
}
