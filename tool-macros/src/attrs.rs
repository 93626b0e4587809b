//! Every attribute name and key the macro understands, in one place.

/// Keys of `#[tool(...)]`.
pub const TOOL_KEYS: &[&str] = &[
    "name",
    "description",
    "parallel",
    "timeout",
    "truncate",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "title",
    "tags",
    "crate",
];

/// Keys of `truncate(...)`.
pub const TRUNCATE_KEYS: &[&str] = &["max_lines", "max_bytes", "direction"];

/// Values of `truncate(direction = "...")`.
pub const DIRECTIONS: &[&str] = &["head", "tail", "middle"];

/// Keys of `#[arg(...)]` on a parameter.
pub const ARG_KEYS: &[&str] = &["default", "rename", "description"];

/// Marks a parameter's own settings.
pub const ARG: &str = "arg";
/// Marks the one parameter that is the whole argument object.
pub const ARGS: &str = "args";
/// Marks a parameter the runtime provides through `FromContext`.
pub const INJECT: &str = "inject";

/// Parameter attributes copied onto the generated argument field (schema constraints and serde
/// options, read by the schemars and serde derives).
pub const FORWARDED: &[&str] = &["schemars", "validate", "garde", "serde"];

/// Type names injected without `#[inject]` (besides any reference type such as `&ToolContext`).
pub const INJECTED_TYPES: &[&str] = &["ToolContext", "CancellationToken", "Dep", "SessionState"];

/// Environment variable that makes the macro print its expansion: `1` for every tool, or a
/// tool's function name.
pub const DEBUG_ENV: &str = "TOOL_MACROS_DEBUG";

/// `` `a`, `b`, `c` `` for messages.
pub fn list(keys: &[&str]) -> String {
    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

/// The closest known key to `unknown`, if it is close enough to be a typo.
pub fn suggest<'a>(unknown: &str, keys: &[&'a str]) -> Option<&'a str> {
    keys.iter()
        .map(|k| (edit_distance(unknown, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// "unknown key `x` in `#[tool]`; did you mean `y`? expected one of ...".
pub fn unknown_key_message(key: &str, context: &str, keys: &[&str]) -> String {
    match suggest(key, keys) {
        Some(close) => format!(
            "unknown key `{key}` in `{context}`; did you mean `{close}`? expected one of {}",
            list(keys)
        ),
        None => format!("unknown key `{key}` in `{context}`; expected one of {}", list(keys)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(suggest("paralel", TOOL_KEYS), Some("parallel"));
        assert_eq!(suggest("readonly", TOOL_KEYS), Some("read_only"));
        assert_eq!(suggest("zzzzzz", TOOL_KEYS), None);
    }
}
