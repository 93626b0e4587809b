//! Words of the messages the runtime and its tools write: a count with its noun, a span of time, and a model's
//! argument quoted back without repeating a huge one whole.

use std::borrow::Cow;

/// The most characters of an argument a message repeats.
pub const QUOTE_CHARS: usize = 200;

/// `text` as a message repeats a model's argument: in double quotes with Rust's escapes, cut
/// after [`QUOTE_CHARS`] characters with the number left out, so a 10 MB argument comes back as
/// 200 characters: `"abc…"… (9999800 more characters)`.
pub fn quote(text: &str) -> String {
    match cut_at(text, QUOTE_CHARS) {
        None => format!("{text:?}"),
        Some(end) => format!("{:?}{}", &text[..end], more(&text[end..])),
    }
}

/// `text` cut after [`QUOTE_CHARS`] characters, followed by how many were left out, for a
/// message that shows it as written (between backticks, in a list of names).
pub fn excerpt(text: &str) -> Cow<'_, str> {
    excerpt_of(text, QUOTE_CHARS)
}

/// [`excerpt`] with another limit, for text that is not an argument (a library's message).
pub fn excerpt_of(text: &str, max_chars: usize) -> Cow<'_, str> {
    match cut_at(text, max_chars) {
        None => Cow::Borrowed(text),
        Some(end) => Cow::Owned(format!("{}{}", &text[..end], more(&text[end..]))),
    }
}

/// Where `text` is cut to keep `max_chars` characters, if it is longer.
fn cut_at(text: &str, max_chars: usize) -> Option<usize> {
    text.char_indices().nth(max_chars).map(|(end, _)| end)
}

fn more(rest: &str) -> String {
    let n = rest.chars().count();
    format!("… ({n} more {})", if n == 1 { "character" } else { "characters" })
}

/// Whether `c` shows nothing, or shows as something else, where text is read: a control
/// character; a line or paragraph separator; a format character (zero-width spaces and
/// joiners, direction marks, embeddings, overrides and isolates, the soft hyphen, the byte-order
/// mark, the Arabic letter mark, invisible operators, interlinear annotations, tags); a
/// variation selector or the combining grapheme joiner; a filler (Hangul's, the Braille blank,
/// the Khmer vowels that show nothing); or a space other than the ASCII one. Such a character
/// in a rule matches nothing the eye sees there, and in a name makes two names look alike.
pub fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00A0}'
                | '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{1680}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{2000}'..='\u{200F}'
                | '\u{2028}'..='\u{202F}'
                | '\u{205F}'..='\u{206F}'
                | '\u{2800}'
                | '\u{3000}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E007F}'
                | '\u{E0100}'..='\u{E01EF}'
        )
}

/// `n` and `word`, plural unless `n` is 1: "1 line", "3 lines", "2 entries".
///
/// A word ending in a consonant and `y` takes `ies` ("entries", but "keys"); every other word
/// takes `s`, so pass a word with a regular plural.
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        return format!("1 {word}");
    }
    let consonant_y = word.strip_suffix('y').filter(|stem| stem.ends_with(|c: char| !"aeiou".contains(c)));
    match consonant_y {
        Some(stem) if !stem.is_empty() => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}

/// A span of time in words, as every message of the runtime and its tools writes one:
/// `850ms`, `3s`, `1.5s`, `2m30s`, `1h5m`.
pub fn duration(duration: std::time::Duration) -> String {
    use std::fmt::Write as _;
    let millis = duration.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let secs = duration.as_secs();
    if secs < 60 {
        let tenths = duration.subsec_millis() / 100;
        return if tenths == 0 { format!("{secs}s") } else { format!("{secs}.{tenths}s") };
    }
    let (hours, minutes, seconds) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (value, unit) in [(hours, 'h'), (minutes, 'm'), (seconds, 's')] {
        if value > 0 {
            let _ = write!(out, "{value}{unit}");
        }
    }
    out
}

/// A moment in UTC, as ISO 8601 with milliseconds (`2026-11-27T09:30:00.123Z`), from its time
/// since the Unix epoch (`SystemTime::now().duration_since(UNIX_EPOCH)`). The text always has
/// this width: years past 9999 wrap.
pub fn utc_time(since_epoch: std::time::Duration) -> String {
    let secs = since_epoch.as_secs();
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since_epoch.subsec_millis()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year % 10_000, month, day)
}

/// What kind of JSON value `value` is, for error messages: "a string", "an array", "null", ...
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_are_iso_8601_in_utc() {
        use std::time::Duration;
        assert_eq!(utc_time(Duration::ZERO), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_time(Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
        assert_eq!(utc_time(Duration::from_millis(1_795_278_600_123)), "2026-11-21T16:30:00.123Z");
        assert_eq!(utc_time(Duration::from_secs(4_102_444_799)), "2099-12-31T23:59:59.000Z");
        assert_eq!(utc_time(Duration::from_secs(20_454 * 86_400)), "2026-01-01T00:00:00.000Z");
    }

    #[test]
    fn durations_read_naturally() {
        use std::time::Duration;
        assert_eq!(duration(Duration::ZERO), "0ms");
        assert_eq!(duration(Duration::from_millis(850)), "850ms");
        assert_eq!(duration(Duration::from_secs(3)), "3s");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration(Duration::from_secs(150)), "2m30s");
        assert_eq!(duration(Duration::from_secs(120)), "2m");
        assert_eq!(duration(Duration::from_secs(3900)), "1h5m");
    }

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

    #[test]
    fn quotes_stop_at_200_characters() {
        assert_eq!(quote("a\"b\n"), r#""a\"b\n""#);
        let long = "é".repeat(10_000);
        let quoted = quote(&long);
        assert_eq!(quoted, format!("{:?}… (9800 more characters)", "é".repeat(200)));
        assert_eq!(excerpt(&"x".repeat(201)), format!("{}… (1 more character)", "x".repeat(200)));
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt_of("abcdef", 3), "abc… (3 more characters)");
    }
}
