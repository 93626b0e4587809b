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
    /// A file named on the command line (`--settings`), above the project's.
    CommandLine,
    /// `/etc/claude-code/managed-settings.json` and the drop-ins of
    /// `/etc/claude-code/managed-settings.d/`: set by an administrator, above all others.
    Managed,
}

impl Scope {
    /// `user`, `project`, `local`, `command line` or `managed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::CommandLine => "command line",
            Scope::Managed => "managed",
        }
    }
}

/// Where an administrator keeps Claude Code's managed settings on Linux.
pub const MANAGED_DIR: &str = "/etc/claude-code";

/// The settings files Claude Code reads for the project at `root`, lowest precedence first, as
/// paths whether or not they exist: user (`settings.json` in `user_dir`, Claude Code's
/// configuration directory, when known: see [`user_dir`]), project, local, managed
/// (`managed-settings.json` in [`MANAGED_DIR`], then the `*.json` drop-ins of its
/// `managed-settings.d`, in the order of their names).
pub fn claude_code_files(user_dir: Option<&Path>, root: &Path) -> Vec<(Scope, PathBuf)> {
    claude_code_files_at(user_dir, root, Path::new(MANAGED_DIR))
}

/// As [`claude_code_files`], with the managed settings in `managed` rather than [`MANAGED_DIR`].
pub fn claude_code_files_at(user_dir: Option<&Path>, root: &Path, managed: &Path) -> Vec<(Scope, PathBuf)> {
    let mut files = Vec::new();
    if let Some(dir) = user_dir {
        files.push((Scope::User, dir.join("settings.json")));
    }
    files.push((Scope::Project, root.join(".claude/settings.json")));
    files.push((Scope::Local, root.join(".claude/settings.local.json")));
    files.push((Scope::Managed, managed.join("managed-settings.json")));
    let mut drop_ins: Vec<PathBuf> = std::fs::read_dir(managed.join("managed-settings.d"))
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    drop_ins.sort();
    files.extend(drop_ins.into_iter().map(|path| (Scope::Managed, path)));
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

/// The rule names of Claude Code's file tools, whose `/path` patterns are relative to the
/// settings file they are in.
const FILE_RULES: &[&str] = &["Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS"];

/// Makes the `/path` patterns of the file rules in `value` (`Edit(/docs/**)`) absolute
/// (`Edit(//DIR/docs/**)`), for a settings file whose rules Claude Code takes from `dir`
/// rather than from the project: the user's (`dir` Claude Code's configuration directory,
/// `~/.claude` or `CLAUDE_CONFIG_DIR`, where the file is). `//path`, `~/path` and relative
/// patterns are left as they are.
pub fn anchor_rules(value: &mut Value, dir: &Path) {
    let Some(permissions) = value.get_mut("permissions").and_then(Value::as_object_mut) else { return };
    for key in ["allow", "ask", "deny"] {
        let Some(Value::Array(rules)) = permissions.get_mut(key) else { continue };
        for rule in rules.iter_mut() {
            let Some(text) = rule.as_str() else { continue };
            let Some((name, rest)) = text.split_once('(') else { continue };
            let Some(pattern) = rest.strip_suffix(')') else { continue };
            if FILE_RULES.contains(&name) && pattern.starts_with('/') && !pattern.starts_with("//") {
                // The directory is a path, not a pattern: its `[1]` or `*` are its own characters.
                let mut literal = String::new();
                for c in dir.display().to_string().chars() {
                    if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
                        literal.push('\\');
                    }
                    literal.push(c);
                }
                *rule = Value::String(format!("{name}(/{literal}/{})", &pattern[1..]));
            }
        }
    }
}

/// Makes the relative paths of `sandbox.filesystem` in `value` (`./secrets`, `secrets`) absolute
/// from `dir`, for a settings file whose paths Claude Code takes from there rather than from the
/// project: the user's (`dir` Claude Code's configuration directory). Absolute paths (`/path`,
/// `//path`) and `~/path` are left as they are.
pub fn anchor_sandbox_paths(value: &mut Value, dir: &Path) {
    let Some(filesystem) = value.pointer_mut("/sandbox/filesystem").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["allowWrite", "denyWrite", "denyRead", "allowRead"] {
        let Some(Value::Array(paths)) = filesystem.get_mut(key) else { continue };
        for path in paths.iter_mut() {
            let Some(text) = path.as_str() else { continue };
            if !text.starts_with('/') && !text.starts_with('~') {
                let relative = text.strip_prefix("./").unwrap_or(text);
                *path = Value::String(dir.join(relative).display().to_string());
            }
        }
    }
}

/// Merges the files of each scope as Claude Code does ([`merge`]), after applying what only
/// managed settings may say: `allowManagedPermissionRulesOnly` leaves out the other scopes'
/// permission rules (and their `default`, `defaults` and `external_directory`, which decide as
/// rules do), `allowManagedHooksOnly` their hooks, and `sandbox.network.
/// allowManagedDomainsOnly` the hosts they allow (`allowedDomains`, `WebFetch(domain:...)`
/// rules, however spelled; and their `allowedAddresses` and `networkCommands`),
/// `sandbox.filesystem.allowManagedReadPathsOnly` their `allowRead` paths (their
/// `denyRead` stays). Those keys count only in managed settings, as in Claude Code; and
/// `disableAllHooks` in another scope turns off the hooks of the other scopes, not the managed
/// ones.
pub fn merge_scoped(layers: Vec<(Scope, Value)>) -> Value {
    let managed = |pointer: &str| {
        layers.iter().any(|(scope, value)| {
            *scope == Scope::Managed && value.pointer(pointer) == Some(&Value::Bool(true))
        })
    };
    let rules_only = managed("/allowManagedPermissionRulesOnly");
    let hooks_only = managed("/allowManagedHooksOnly");
    let domains_only = managed("/sandbox/network/allowManagedDomainsOnly");
    let read_paths_only = managed("/sandbox/filesystem/allowManagedReadPathsOnly");
    // `disableAllHooks` outside managed settings turns off the hooks of those files, not an
    // administrator's.
    let others_disable_hooks = layers.iter().any(|(scope, value)| {
        *scope != Scope::Managed && value.pointer("/disableAllHooks") == Some(&Value::Bool(true))
    });
    merge(layers.into_iter().map(|(scope, mut value)| {
        if scope != Scope::Managed {
            if others_disable_hooks && let Value::Object(object) = &mut value {
                object.remove("hooks");
                object.remove("disableAllHooks");
            }
            let remove = |value: &mut Value, pointer: &str, key: &str| {
                if let Some(Value::Object(object)) = value.pointer_mut(pointer) {
                    object.remove(key);
                }
            };
            remove(&mut value, "", "allowManagedPermissionRulesOnly");
            remove(&mut value, "", "allowManagedHooksOnly");
            remove(&mut value, "/sandbox/network", "allowManagedDomainsOnly");
            remove(&mut value, "/sandbox/filesystem", "allowManagedReadPathsOnly");
            if read_paths_only {
                remove(&mut value, "/sandbox/filesystem", "allowRead");
            }
            if rules_only {
                // The defaults decide what no rule names, as a rule would.
                for key in ["allow", "ask", "deny", "default", "defaults", "external_directory"] {
                    remove(&mut value, "/permissions", key);
                }
            }
            if hooks_only {
                remove(&mut value, "", "hooks");
            }
            if domains_only {
                // Every way another file opens the network: hosts, addresses, and the commands
                // given the network.
                remove(&mut value, "/sandbox/network", "allowedDomains");
                remove(&mut value, "/sandbox/network", "allowedAddresses");
                remove(&mut value, "/sandbox", "networkCommands");
                if let Some(Value::Array(allow)) = value.pointer_mut("/permissions/allow") {
                    allow.retain(|rule| !rule.as_str().is_some_and(names_a_domain));
                }
            }
        }
        value
    }))
}

/// Whether `rule` is a `WebFetch(domain:...)` rule, spelled as the network proxy reads it
/// (spaces around the rule and its pattern allowed).
fn names_a_domain(rule: &str) -> bool {
    let inner = rule.trim().strip_prefix("WebFetch(").and_then(|rest| rest.strip_suffix(')'));
    inner.is_some_and(|inner| inner.trim().starts_with("domain:"))
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
    fn managed_drop_ins_come_after_the_managed_file_in_the_order_of_their_names() {
        let dir = std::env::temp_dir().join(format!("tool-settings-managed-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("managed-settings.d")).unwrap();
        for name in ["20-b.json", "10-a.json", "notes.txt"] {
            std::fs::write(dir.join("managed-settings.d").join(name), "{}").unwrap();
        }
        let files = claude_code_files_at(None, Path::new("/w"), &dir);
        let managed: Vec<_> =
            files.iter().filter(|(scope, _)| *scope == Scope::Managed).map(|(_, p)| p.clone()).collect();
        assert_eq!(
            managed,
            [
                dir.join("managed-settings.json"),
                dir.join("managed-settings.d/10-a.json"),
                dir.join("managed-settings.d/20-b.json")
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn managed_only_keys_leave_out_the_other_scopes_rules_hooks_and_hosts() {
        let user = json!({
            "permissions": {"allow": ["Bash", "WebFetch(domain:evil.example)"], "deny": ["Read(./x)"],
                            "default": "allow", "defaults": {"bash": "allow"}, "external_directory": "allow"},
            "hooks": {"PreToolUse": [{"matcher": "Bash"}]},
            "sandbox": {"network": {"allowedDomains": ["evil.example"], "allowManagedDomainsOnly": false}},
            "allowManagedHooksOnly": false,
        });
        let managed = json!({
            "permissions": {"deny": ["Bash(rm:*)"], "allow": ["WebFetch(domain:docs.example)"]},
            "allowManagedPermissionRulesOnly": true,
            "allowManagedHooksOnly": true,
            "sandbox": {"network": {"allowManagedDomainsOnly": true, "allowedDomains": ["docs.example"]}},
        });
        let merged = merge_scoped(vec![(Scope::User, user.clone()), (Scope::Managed, managed.clone())]);
        assert_eq!(
            merged["permissions"],
            json!({"deny": ["Bash(rm:*)"], "allow": ["WebFetch(domain:docs.example)"]})
        );
        assert!(merged.get("hooks").is_none());
        assert_eq!(merged["sandbox"]["network"]["allowedDomains"], json!(["docs.example"]));
        // Only managed settings can say so: in the user's file the keys count for nothing.
        let mut user_says = user.clone();
        user_says["allowManagedPermissionRulesOnly"] = json!(true);
        let merged = merge_scoped(vec![
            (Scope::User, json!({"permissions": {"allow": ["Edit"]}})),
            (Scope::Project, user_says),
        ]);
        assert_eq!(merged["permissions"]["allow"], json!(["Edit", "Bash", "WebFetch(domain:evil.example)"]));
        assert!(merged.get("allowManagedPermissionRulesOnly").is_none());
        // Domains only: the other scopes' rules stay, less their hosts, however spelled, their
        // addresses and the commands they give the network.
        let managed = json!({"sandbox": {"network": {"allowManagedDomainsOnly": true}}});
        let mut spelled = user.clone();
        spelled["permissions"]["allow"] =
            json!(["Bash", " WebFetch(domain:a.example)", "WebFetch( domain:b.example )"]);
        spelled["sandbox"]["network"]["allowedAddresses"] = json!(["1.1.1.1"]);
        spelled["sandbox"]["networkCommands"] = json!(["curl"]);
        let merged = merge_scoped(vec![(Scope::User, spelled), (Scope::Managed, managed)]);
        assert_eq!(merged["permissions"]["allow"], json!(["Bash"]));
        assert_eq!(merged["hooks"]["PreToolUse"], json!([{"matcher": "Bash"}]));
        assert!(merged["sandbox"]["network"].get("allowedDomains").is_none());
        assert!(merged["sandbox"]["network"].get("allowedAddresses").is_none());
        assert!(merged["sandbox"].get("networkCommands").is_none());
        // Read paths only: the other scopes' `allowRead` goes, their `denyRead` stays.
        let project = json!({"sandbox": {"filesystem": {"allowRead": ["~/.ssh"], "denyRead": ["~/.aws"],
                                                          "allowManagedReadPathsOnly": false}}});
        let managed = json!({"sandbox": {"filesystem": {"allowManagedReadPathsOnly": true, "denyRead": ["~"],
                                                          "allowRead": ["~/src"]}}});
        let merged = merge_scoped(vec![(Scope::Project, project.clone()), (Scope::Managed, managed)]);
        assert_eq!(merged["sandbox"]["filesystem"]["allowRead"], json!(["~/src"]));
        assert_eq!(merged["sandbox"]["filesystem"]["denyRead"], json!(["~/.aws", "~"]));
        let merged = merge_scoped(vec![(Scope::Project, project)]);
        assert_eq!(merged["sandbox"]["filesystem"], json!({"allowRead": ["~/.ssh"], "denyRead": ["~/.aws"]}));
    }

    #[test]
    fn disable_all_hooks_outside_managed_settings_leaves_the_managed_hooks() {
        let hook = |name: &str| json!({"PreToolUse": [{"matcher": name, "hooks": []}]});
        let user = json!({"disableAllHooks": true, "hooks": hook("User")});
        let project = json!({"hooks": hook("Project")});
        let managed = json!({"hooks": hook("Managed")});
        let merged = merge_scoped(vec![
            (Scope::User, user),
            (Scope::Project, project.clone()),
            (Scope::Managed, managed.clone()),
        ]);
        assert_eq!(merged, managed);
        // In managed settings it turns off every hook.
        let off = json!({"disableAllHooks": true});
        let merged = merge_scoped(vec![(Scope::Project, project), (Scope::Managed, off)]);
        assert_eq!(merged["disableAllHooks"], json!(true));
    }

    #[test]
    fn a_user_files_relative_sandbox_paths_are_taken_from_its_directory() {
        let mut value = json!({"sandbox": {"filesystem": {
            "denyRead": ["./secrets", "keys/**", "/etc/app", "//srv", "~/.ssh"],
            "allowWrite": ["cache"]
        }}});
        anchor_sandbox_paths(&mut value, Path::new("/home/me/.claude"));
        assert_eq!(
            value,
            json!({"sandbox": {"filesystem": {
                "denyRead": ["/home/me/.claude/secrets", "/home/me/.claude/keys/**", "/etc/app", "//srv", "~/.ssh"],
                "allowWrite": ["/home/me/.claude/cache"]
            }}})
        );
    }

    #[test]
    fn a_files_slash_patterns_are_taken_from_its_directory() {
        let mut value = json!({"permissions": {
            "allow": ["Edit(/docs/**)", "Bash(/usr/bin/make)", "Read(//etc/hosts)", "Read(~/x)", "Read(src/**)"],
            "deny": ["Read(/secrets/**)"]
        }});
        anchor_rules(&mut value, Path::new("/home/me/.claude"));
        let mut odd = json!({"permissions": {"deny": ["Read(/secrets/**)"]}});
        anchor_rules(&mut odd, Path::new("/home/me/cfg[1]*"));
        assert_eq!(odd, json!({"permissions": {"deny": ["Read(//home/me/cfg\\[1\\]\\*/secrets/**)"]}}));
        assert_eq!(
            value,
            json!({"permissions": {
                "allow": ["Edit(//home/me/.claude/docs/**)", "Bash(/usr/bin/make)", "Read(//etc/hosts)", "Read(~/x)", "Read(src/**)"],
                "deny": ["Read(//home/me/.claude/secrets/**)"]
            }})
        );
    }

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
