//! Every attribute name, key and keyword value the macro understands, in one place.

/// An enum of the keys of one attribute, with their spellings.
macro_rules! keys {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub(crate) enum $name {
            $($variant,)*
        }

        impl $name {
            /// Every spelling, in the order messages list them.
            pub(crate) const NAMES: &'static [&'static str] = &[$($text),*];

            pub(crate) fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)*
                    _ => None,
                }
            }

            // Messages need it for some key sets only.
            #[allow(dead_code)]
            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }
        }
    };
}

keys!(
    /// Keys of `#[tool(...)]`.
    ToolKey {
        Name = "name",
        Description = "description",
        Parallel = "parallel",
        Timeout = "timeout",
        Truncate = "truncate",
        ReadOnly = "read_only",
        Destructive = "destructive",
        Idempotent = "idempotent",
        OpenWorld = "open_world",
        Title = "title",
        Tags = "tags",
        Crate = "crate",
        Freeform = "freeform",
        Defer = "defer",
        Example = "example",
        Permission = "permission",
        CommandArgument = "command_argument",
        Polls = "polls",
        Undocumented = "undocumented",
    }
);

keys!(
    /// Values of `permission = "..."`: what a tool asks permission for, which its permission
    /// rules' patterns are matched against.
    PermissionSubject {
        Path = "path",
        Command = "command",
        Input = "input",
    }
);

keys!(
    /// Keys of `freeform(...)`.
    FreeformKey {
        Grammar = "grammar",
        GrammarFile = "grammar_file",
        Syntax = "syntax",
    }
);

keys!(
    /// Values of `freeform(syntax = "...")`.
    Syntax {
        Lark = "lark",
        Regex = "regex",
    }
);

keys!(
    /// Keys of `truncate(...)`.
    TruncateKey {
        MaxLines = "max_lines",
        MaxBytes = "max_bytes",
        Direction = "direction",
    }
);

keys!(
    /// Values of `truncate(direction = "...")`: which end of a long output is kept.
    Direction {
        Head = "head",
        Tail = "tail",
        Middle = "middle",
    }
);

keys!(
    /// Keys of `#[arg(...)]` on a parameter.
    ArgKey {
        Default = "default",
        Rename = "rename",
        Description = "description",
        Alias = "alias",
        Undocumented = "undocumented",
    }
);

/// Marks a parameter's own settings.
pub(crate) const ARG: &str = "arg";
/// Marks the one parameter that is the whole argument object.
pub(crate) const ARGS: &str = "args";
/// Marks a parameter the runtime provides through `FromContext`.
pub(crate) const INJECT: &str = "inject";

/// Parameter attributes copied onto the generated argument field (schema constraints and serde
/// options, read by the schemars and serde derives).
pub(crate) const FORWARDED: &[&str] = &["schemars", "validate", "garde", "serde"];

/// Type names injected without `#[inject]` (besides any reference type such as `&ToolContext`).
pub(crate) const INJECTED_TYPES: &[&str] = &["ToolContext", "CancellationToken", "Dep", "SessionState"];

/// Environment variable that makes the macro print its expansion: `1` for every tool, or a
/// tool's function name.
pub(crate) const DEBUG_ENV: &str = "TOOL_MACROS_DEBUG";

/// `` `a`, `b`, `c` `` for messages.
pub(crate) fn list(keys: &[&str]) -> String {
    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

/// The closest known key to `unknown`, if it is close enough to be a typo.
pub(crate) fn suggest<'a>(unknown: &str, keys: &[&'a str]) -> Option<&'a str> {
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
pub(crate) fn unknown_key_message(key: &str, context: &str, keys: &[&str]) -> String {
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
        assert_eq!(suggest("paralel", ToolKey::NAMES), Some("parallel"));
        assert_eq!(suggest("readonly", ToolKey::NAMES), Some("read_only"));
        assert_eq!(suggest("zzzzzz", ToolKey::NAMES), None);
    }

    #[test]
    fn keys_round_trip() {
        for name in ToolKey::NAMES.iter().chain(TruncateKey::NAMES).chain(ArgKey::NAMES) {
            let round_trip = [
                ToolKey::parse(name).map(ToolKey::as_str),
                TruncateKey::parse(name).map(TruncateKey::as_str),
                ArgKey::parse(name).map(ArgKey::as_str),
            ];
            assert!(round_trip.contains(&Some(*name)), "{name}");
        }
        assert_eq!(Direction::parse("tail"), Some(Direction::Tail));
        assert_eq!(Direction::parse("bottom"), None);
    }
}
