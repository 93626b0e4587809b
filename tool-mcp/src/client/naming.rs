//! The names mounted tools get: `<server>__<tool>` by default, always a valid tool name.

use std::fmt;
use std::sync::Arc;

use tool_core::is_valid_tool_name;
use tool_core::stable_hash::Fnv1a;

/// The longest tool name every provider accepts.
const MAX_NAME: usize = 64;

/// A naming rule: `(server, tool) -> name`.
pub type NameFn = dyn Fn(&str, &str) -> String + Send + Sync;

/// How a mounted tool is named in the registry. Whatever a rule returns is then made a valid
/// tool name ([`tool_name`]).
#[derive(Clone, Default)]
pub enum Naming {
    /// `<server>__<tool>` (the default): tools of different servers never clash.
    #[default]
    Prefixed,
    /// The server's own tool name, as is.
    Bare,
    /// `<prefix><tool>` with a prefix of your choice.
    Prefix(String),
    /// Any rule: `(server, tool) -> name`.
    Custom(Arc<NameFn>),
}

impl fmt::Debug for Naming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Naming::Prefixed => f.write_str("Prefixed"),
            Naming::Bare => f.write_str("Bare"),
            Naming::Prefix(prefix) => f.debug_tuple("Prefix").field(prefix).finish(),
            Naming::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl Naming {
    /// The registry name of the tool `tool` of the server `server`.
    pub fn name(&self, server: &str, tool: &str) -> String {
        let raw = match self {
            Naming::Prefixed => format!("{server}__{tool}"),
            Naming::Bare => tool.to_owned(),
            Naming::Prefix(prefix) => format!("{prefix}{tool}"),
            Naming::Custom(rule) => rule(server, tool),
        };
        tool_name(&raw)
    }
}

/// `raw` as a valid tool name: every character outside `[A-Za-z0-9_-]` becomes `_`, and a name
/// longer than 64 characters keeps its first 55 and ends in `-` and 8 hex digits of a hash of the
/// whole raw name, so that two long names with the same beginning stay apart.
pub fn tool_name(raw: &str) -> String {
    if is_valid_tool_name(raw) {
        return raw.to_owned();
    }
    let mut name: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    if name.is_empty() {
        name.push_str("tool");
    }
    if name.len() > MAX_NAME {
        // The characters are ASCII by now, so byte and character counts agree.
        name.truncate(MAX_NAME - 9);
        name.push_str(&format!("-{:08x}", Fnv1a::of(raw.as_bytes())));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_sanitized_and_kept_within_64_characters() {
        assert_eq!(Naming::Prefixed.name("fs", "read_file"), "fs__read_file");
        assert_eq!(Naming::Bare.name("fs", "read_file"), "read_file");
        assert_eq!(Naming::Prefix("x_".into()).name("fs", "read"), "x_read");
        assert_eq!(Naming::Prefixed.name("my server", "get.item/v2"), "my_server__get_item_v2");
        assert_eq!(Naming::Prefixed.name("café", "ok"), "caf___ok");
        assert_eq!(tool_name(""), "tool");

        let long_a = Naming::Prefixed.name("server", &format!("{}a", "x".repeat(80)));
        let long_b = Naming::Prefixed.name("server", &format!("{}b", "x".repeat(80)));
        assert_eq!(long_a.len(), 64);
        assert!(is_valid_tool_name(&long_a) && is_valid_tool_name(&long_b));
        assert_ne!(long_a, long_b, "the hash keeps names with a common beginning apart");
        assert_eq!(long_a[..55], long_b[..55]);
        assert_eq!(long_a, Naming::Prefixed.name("server", &format!("{}a", "x".repeat(80))), "stable");

        let custom = Naming::Custom(Arc::new(|server, tool| format!("{tool}@{server}")));
        assert_eq!(custom.name("fs", "read"), "read_fs");
    }
}
