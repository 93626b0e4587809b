//! Claude Code's settings files: where they are, and how they merge into one.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Where a settings file comes from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// `~/.claude/settings.json`: the user's, for every project.
    User,
    /// `.claude/settings.json` in the project: shared with the team.
    Project,
    /// `.claude/settings.local.json` in the project: the user's own for this project.
    Local,
    /// `/etc/claude-code/managed-settings.json`: set by an administrator, above all others.
    Managed,
}

impl Scope {
    /// `user`, `project`, `local` or `managed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Managed => "managed",
        }
    }
}

/// The settings files Claude Code reads for the project at `root`, lowest precedence first, as
/// paths whether or not they exist: user (`settings.json` in `user_dir`, Claude Code's
/// configuration directory, when known: see [`user_dir`]), project, local, managed.
pub fn claude_code_files(user_dir: Option<&Path>, root: &Path) -> Vec<(Scope, PathBuf)> {
    let mut files = Vec::new();
    if let Some(dir) = user_dir {
        files.push((Scope::User, dir.join("settings.json")));
    }
    files.push((Scope::Project, root.join(".claude/settings.json")));
    files.push((Scope::Local, root.join(".claude/settings.local.json")));
    files.push((Scope::Managed, PathBuf::from("/etc/claude-code/managed-settings.json")));
    files
}

/// Claude Code's configuration directory, as Claude Code finds it: `CLAUDE_CONFIG_DIR`, or
/// `~/.claude` (`HOME`).
pub fn user_dir() -> Option<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(|home| PathBuf::from(home).join(".claude")),
    }
}

/// Merges settings `layers`, lowest precedence first, as Claude Code merges its files: objects
/// key by key, arrays joined (each value once, the first time it comes: `permissions.allow`
/// holds every scope's rules, `hooks.PreToolUse` every scope's entries), and any other value
/// from the highest layer that sets it (`permissions.defaultMode`, `sandbox.enabled`).
pub fn merge(layers: impl IntoIterator<Item = Value>) -> Value {
    let mut merged = Value::Object(Map::new());
    for layer in layers {
        merge_into(&mut merged, layer);
    }
    merged
}

fn merge_into(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(&key) {
                    Some(existing) => merge_into(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (Value::Array(into), Value::Array(from)) => {
            for value in from {
                if !into.contains(&value) {
                    into.push(value);
                }
            }
        }
        (into, from) => *into = from,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_merge_arrays_join_and_the_higher_scope_wins_the_rest() {
        let user = json!({"permissions": {"allow": ["Read", "Bash(ls)"], "defaultMode": "plan"},
                          "sandbox": {"enabled": true}});
        let project = json!({"permissions": {"allow": ["Bash(ls)", "Edit"], "deny": ["Bash(rm:*)"]},
                             "hooks": {"PreToolUse": [{"matcher": "Bash"}]}});
        let local = json!({"permissions": {"defaultMode": "acceptEdits"}, "sandbox": {"enabled": false},
                           "hooks": {"PreToolUse": [{"matcher": "Edit"}]}});
        assert_eq!(
            merge([user, project, local]),
            json!({
                "permissions": {"allow": ["Read", "Bash(ls)", "Edit"], "deny": ["Bash(rm:*)"],
                                "defaultMode": "acceptEdits"},
                "sandbox": {"enabled": false},
                "hooks": {"PreToolUse": [{"matcher": "Bash"}, {"matcher": "Edit"}]},
            })
        );
    }
}
