//! URI references as `$id` and `$ref` use them: resolved against a base (RFC 3986, section
//! 5.2), split at the fragment, the fragment percent-decoded.

/// The base of a schema without an `$id`.
pub(super) const DEFAULT_BASE: &str = "tool:///schema.json";

/// `reference` resolved against `base` (which has no fragment); the fragment is kept as it is
/// written.
pub(super) fn resolve(base: &str, reference: &str) -> String {
    let (reference, fragment) = match reference.split_once('#') {
        Some((reference, fragment)) => (reference, Some(fragment)),
        None => (reference, None),
    };
    let target = if reference.is_empty() {
        base.to_owned()
    } else if has_scheme(reference) {
        let (scheme, rest) = reference.split_once(':').unwrap_or((reference, ""));
        let (authority, path) = split_authority(rest);
        format!("{scheme}:{authority}{}", remove_dot_segments(path))
    } else {
        let (scheme, rest) = base.split_once(':').unwrap_or(("", base));
        let (authority, base_path) = split_authority(rest);
        if reference.starts_with("//") {
            let (authority, path) = split_authority(reference);
            format!("{scheme}:{authority}{}", remove_dot_segments(path))
        } else if reference.starts_with('/') {
            format!("{scheme}:{authority}{}", remove_dot_segments(reference))
        } else {
            let base_path = base_path.split(['?', '#']).next().unwrap_or("");
            let directory = match base_path.rfind('/') {
                Some(end) => &base_path[..=end],
                None if !authority.is_empty() => "/",
                None => "",
            };
            format!("{scheme}:{authority}{}", remove_dot_segments(&format!("{directory}{reference}")))
        }
    };
    match fragment {
        Some(fragment) if !fragment.is_empty() => format!("{target}#{fragment}"),
        _ => target,
    }
}

/// `uri` without its fragment, and the fragment (percent-decoded) when there is one.
pub(super) fn split_fragment(uri: &str) -> (&str, Option<String>) {
    match uri.split_once('#') {
        Some((uri, fragment)) => {
            (uri, Some(percent_encoding::percent_decode_str(fragment).decode_utf8_lossy().into_owned()))
        }
        None => (uri, None),
    }
}

fn has_scheme(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else { return false };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `("//host", "/path")` for `//host/path`; `("", rest)` when there is no authority.
fn split_authority(rest: &str) -> (&str, &str) {
    match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').map_or(rest.len(), |i| i + 2);
            (&rest[..end], &rest[end..])
        }
        None => ("", rest),
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut output: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." => {
                if last {
                    output.push("");
                }
            }
            ".." => {
                if output.len() > 1 {
                    output.pop();
                }
                if last {
                    output.push("");
                }
            }
            other => output.push(other),
        }
    }
    output.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_as_rfc_3986_has_them() {
        let base = "http://example.com/root/schema.json";
        assert_eq!(resolve(base, "#/$defs/a"), "http://example.com/root/schema.json#/$defs/a");
        assert_eq!(resolve(base, "other.json"), "http://example.com/root/other.json");
        assert_eq!(resolve(base, "../up.json#x"), "http://example.com/up.json#x");
        assert_eq!(resolve(base, "/abs.json"), "http://example.com/abs.json");
        assert_eq!(resolve(base, "//other.org/x"), "http://other.org/x");
        assert_eq!(resolve(base, "urn:uuid:1234#/a"), "urn:uuid:1234#/a");
        assert_eq!(resolve("urn:uuid:1234", "#foo"), "urn:uuid:1234#foo");
        assert_eq!(resolve(DEFAULT_BASE, "node.json"), "tool:///node.json");
        assert_eq!(resolve("http://example.com", "a.json"), "http://example.com/a.json");
        assert_eq!(split_fragment("x#/%24defs/a%25b"), ("x", Some("/$defs/a%b".to_owned())));
    }
}
