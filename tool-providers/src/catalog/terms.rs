//! The words a tool is found by: identifiers split at `camelCase`, `snake_case` and
//! `kebab-case` boundaries, lowercased, common words dropped, plural and verb endings folded.

/// Words too common to tell one tool from another.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "i", "if", "how",
    "in", "into", "is", "it", "its", "like", "me", "my", "of", "on", "or", "so", "that", "the", "their",
    "them", "then", "this", "to", "use", "using", "want", "was", "we", "what", "which", "with", "you",
    "your",
];

/// Calls `each` with every search term of `text`, in order.
pub(crate) fn for_each_term(text: &str, mut each: impl FnMut(String)) {
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        split_identifier(word, |part| {
            let lower = part.to_lowercase();
            // A lone letter is the `s` of "repository's", not a word.
            let lone_letter = lower.chars().count() == 1 && lower.chars().all(char::is_alphabetic);
            if !lone_letter && !STOP_WORDS.contains(&lower.as_str()) {
                each(stem(&lower));
            }
        });
    }
}

/// Every search term of `text`.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |term| out.push(term));
    out
}

/// Splits `readFileHTTPServer2` into `read`, `File`, `HTTP`, `Server`, `2`: a new part starts at
/// a lowercase-to-uppercase step, before the last capital of a run followed by a lowercase letter
/// (an acronym ends), and where letters meet digits.
fn split_identifier<'a>(word: &'a str, mut each: impl FnMut(&'a str)) {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next = chars.get(i + 1).map(|&(_, n)| n);
        let boundary = (prev.is_lowercase() && c.is_uppercase())
            || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
            || (prev.is_alphabetic() && c.is_numeric())
            || (prev.is_numeric() && c.is_alphabetic());
        if boundary {
            each(&word[start..at]);
            start = at;
        }
    }
    if start < word.len() {
        each(&word[start..]);
    }
}

/// A light suffix folding, so that "files", "file"; "creating", "created", "create"; "searches",
/// "search" meet. Not a full stemmer: it only has to fold a word and its usual inflections to the
/// same key, on both sides of the search.
fn stem(word: &str) -> String {
    let mut w = word;
    let long = |w: &str, n: usize| w.chars().count() > n;
    if let Some(stem) = w.strip_suffix("ies").filter(|_| long(w, 4)) {
        return format!("{stem}y");
    }
    if let Some(stem) = w.strip_suffix("ing").filter(|_| long(w, 5)) {
        w = stem;
    } else if let Some(stem) = w.strip_suffix("ed").filter(|_| long(w, 4)) {
        w = stem;
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") && long(w, 3)
    {
        w = &w[..w.len() - 1];
    }
    if w.ends_with('e') && long(w, 3) {
        w = &w[..w.len() - 1];
    }
    w.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(terms("readFileHTTPServer2"), ["read", "fil", "http", "server", "2"]);
        assert_eq!(terms("list_open-orders"), ["list", "open", "order"]);
        assert_eq!(terms("github__create_issue"), ["github", "creat", "issu"]);
    }

    #[test]
    fn inflections_meet() {
        for (a, b) in [
            ("files", "file"),
            ("creating", "create"),
            ("created", "creates"),
            ("searches", "search"),
            ("entries", "entry"),
            ("deleting", "deleted"),
            ("branches", "branch"),
        ] {
            assert_eq!(terms(a), terms(b), "{a} / {b}");
        }
        assert_eq!(terms("status"), ["status"]);
        assert_eq!(terms("address"), ["address"]);
    }

    #[test]
    fn common_words_are_dropped() {
        assert_eq!(terms("Find the weather for a city"), ["find", "weather", "city"]);
        assert!(terms("the of and").is_empty());
    }
}
