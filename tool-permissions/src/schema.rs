//! The JSON Schema of a settings file, generated from a typed model of what the loader accepts
//! ([`settings_schema`]), so that editors validate the file; `settings.schema.json` at the
//! crate's root is this schema, checked by a test against the loader, and by a property test:
//! for generated files covering every key, the typed model, the schema and the loader accept
//! the same files, and a file read into the model and written back keeps every key.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A settings file: Claude Code's `settings.json`, with this project's own keys. Keys that are
/// not applied are accepted and named when the file is loaded.
#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct SettingsFile {
    /// The schema the file follows.
    #[serde(rename = "$schema")]
    schema: Option<String>,
    /// Permission rules, the permission mode, and the directories outside the workspace.
    permissions: Option<Permissions>,
    /// Hook commands by event: `PreToolUse` and `PostToolUse` run; the other events of Claude
    /// Code are accepted and not run.
    hooks: Option<Hooks>,
    /// `true`: no hook command runs.
    #[serde(rename = "disableAllHooks")]
    disable_all_hooks: Option<bool>,
    /// How commands are confined.
    sandbox: Option<Sandbox>,
    /// Which environment variables commands, hooks and stdio servers inherit.
    environment: Option<Environment>,
    /// Variables set for commands, hook commands and stdio MCP servers, on top of what they
    /// inherit (a server's own `env` and the sandbox's variables win).
    env: Option<BTreeMap<String, String>>,
    /// The `tools` binary: a check per file extension after edits.
    verify: Option<BTreeMap<String, Value>>,
    /// The `tools` binary: whether calls that change files record checkpoints.
    checkpoints: Option<Checkpoints>,
    /// The `tools` binary: start every server of the project's `.mcp.json`.
    #[serde(rename = "enableAllProjectMcpServers")]
    enable_all_project_mcp_servers: Option<bool>,
    /// The `tools` binary: the servers of the project's `.mcp.json` to start.
    #[serde(rename = "enabledMcpjsonServers")]
    enabled_mcpjson_servers: Option<Vec<String>>,
    /// The `tools` binary: the servers of the project's `.mcp.json` never to start.
    #[serde(rename = "disabledMcpjsonServers")]
    disabled_mcpjson_servers: Option<Vec<String>>,
    /// Any other key (Claude Code's `model`, `statusLine`, ...): accepted, named as not applied.
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

/// `allow`, `ask` or `deny`.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    Allow,
    Ask,
    Deny,
}

/// What happens to a call that no rule decides.
#[derive(Deserialize, Serialize, JsonSchema)]
enum Mode {
    #[serde(rename = "default")]
    Default,
    /// Claude Code's other name for `default`.
    #[serde(rename = "manual")]
    Manual,
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    #[serde(rename = "plan")]
    Plan,
    #[serde(rename = "dontAsk")]
    DontAsk,
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Permissions {
    /// Rules that allow: `Tool`, `Tool(pattern)`, `mcp__SERVER__TOOL`, `WebFetch(domain:HOST)`.
    allow: Option<Vec<String>>,
    /// Rules that ask first.
    ask: Option<Vec<String>>,
    /// Rules that refuse; deny beats ask beats allow.
    deny: Option<Vec<String>>,
    /// Directories outside the workspace the tools may use (relative ones from the project root).
    #[serde(rename = "additionalDirectories")]
    additional_directories: Option<Vec<String>>,
    /// The permission mode.
    #[serde(rename = "defaultMode")]
    default_mode: Option<Mode>,
    /// `"disable"`: `bypassPermissions` may not be used.
    #[serde(rename = "disableBypassPermissionsMode")]
    disable_bypass_permissions_mode: Option<Disable>,
    /// What no rule decides, whatever the mode.
    default: Option<Action>,
    /// What no rule decides, per tool.
    defaults: Option<BTreeMap<String, Action>>,
    /// Paths outside the workspace that no rule names (default: deny).
    external_directory: Option<Action>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Disable {
    Disable,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, non_snake_case)]
struct Hooks {
    PreToolUse: Option<Vec<HookEntry>>,
    PostToolUse: Option<Vec<HookEntry>>,
    PostToolUseFailure: Option<Vec<HookEntry>>,
    PermissionRequest: Option<Vec<HookEntry>>,
    Notification: Option<Vec<HookEntry>>,
    UserPromptSubmit: Option<Vec<HookEntry>>,
    Stop: Option<Vec<HookEntry>>,
    SubagentStart: Option<Vec<HookEntry>>,
    SubagentStop: Option<Vec<HookEntry>>,
    PreCompact: Option<Vec<HookEntry>>,
    PostCompact: Option<Vec<HookEntry>>,
    SessionStart: Option<Vec<HookEntry>>,
    SessionEnd: Option<Vec<HookEntry>>,
    Setup: Option<Vec<HookEntry>>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct HookEntry {
    /// A regular expression matched against the whole tool name (ours or Claude Code's); empty,
    /// `*` or absent: every tool.
    matcher: Option<String>,
    hooks: Vec<HookCommand>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct HookCommand {
    #[serde(rename = "type")]
    kind: CommandKind,
    /// Run with `sh -c` in the workspace root.
    #[schemars(regex(pattern = r"\S"))]
    command: String,
    /// Seconds, above 0 (default 60).
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 86400))]
    timeout: Option<f64>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum CommandKind {
    Command,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Sandbox {
    /// `false`: commands run unconfined.
    enabled: Option<bool>,
    /// Commands that run outside the sandbox.
    #[serde(rename = "excludedCommands")]
    excluded_commands: Option<Vec<String>>,
    /// Commands that run in the sandbox with the network on.
    #[serde(rename = "networkCommands")]
    network_commands: Option<Vec<String>>,
    /// `false`: every request to leave the sandbox is refused.
    #[serde(rename = "allowUnsandboxedCommands")]
    allow_unsandboxed_commands: Option<bool>,
    /// `true`: commands may write the repository's metadata (`.git`).
    #[serde(rename = "allowGitWrites")]
    allow_git_writes: Option<bool>,
    /// Sandboxed commands run without asking when no rule decides them (default `true`).
    #[serde(rename = "autoAllowBashIfSandboxed")]
    auto_allow_bash_if_sandboxed: Option<bool>,
    /// Bounds on each command's processes and memory.
    limits: Option<Limits>,
    filesystem: Option<Filesystem>,
    /// The network proxy's rules (see the tool-egress crate).
    network: Option<Network>,
    /// Not applied.
    #[serde(rename = "enableWeakerNestedSandbox")]
    enable_weaker_nested_sandbox: Option<Value>,
    /// Not applied.
    #[serde(rename = "ignoreViolations")]
    ignore_violations: Option<Value>,
}

/// The network proxy's rules, read by tool-egress.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Network {
    /// Hosts commands may reach: `example.com`, `*.example.com` (subdomains), `example.com:443`,
    /// `*`, or an address or a network (`10.0.0.0/8`).
    #[serde(rename = "allowedDomains")]
    allowed_domains: Option<Vec<String>>,
    /// Hosts refused, whatever allows them.
    #[serde(rename = "deniedDomains")]
    denied_domains: Option<Vec<String>>,
    /// Addresses and networks that may be reached although not public.
    #[serde(rename = "allowedAddresses")]
    allowed_addresses: Option<Vec<String>>,
    /// Plain-HTTP `GET`, `HEAD` and `OPTIONS` only.
    limited: Option<bool>,
    /// Never ask: a host no rule allows is refused.
    #[serde(rename = "strictAllowlist")]
    strict_allowlist: Option<bool>,
    /// Environment variables holding secrets, each with the hosts it may be sent to.
    secrets: Option<BTreeMap<String, Vec<String>>>,
    /// Commands may listen on local ports.
    #[serde(rename = "allowLocalBinding")]
    allow_local_binding: Option<bool>,
    /// Unix socket paths commands may connect to.
    #[serde(rename = "allowUnixSockets")]
    allow_unix_sockets: Option<Vec<String>>,
    /// Every Unix socket.
    #[serde(rename = "allowAllUnixSockets")]
    allow_all_unix_sockets: Option<bool>,
    /// Not applied.
    #[serde(rename = "allowManagedDomainsOnly")]
    allow_managed_domains_only: Option<Value>,
    /// Not applied.
    #[serde(rename = "allowMachLookup")]
    allow_mach_lookup: Option<Value>,
    /// Not applied.
    #[serde(rename = "httpProxyPort")]
    http_proxy_port: Option<Value>,
    /// Not applied.
    #[serde(rename = "socksProxyPort")]
    socks_proxy_port: Option<Value>,
    /// Not applied.
    #[serde(rename = "tlsTerminate")]
    tls_terminate: Option<Value>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Filesystem {
    /// More writable roots (relative to the workspace root, `~/` from the home directory).
    #[serde(rename = "allowWrite")]
    allow_write: Option<Vec<String>>,
    /// More protected paths.
    #[serde(rename = "denyWrite")]
    deny_write: Option<Vec<String>>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Limits {
    /// At most this many processes and threads per command (default 4096), or `false`.
    processes: Option<Count>,
    /// At most this much memory per command: bytes, a size such as `"4G"`, or `false` (the
    /// default).
    memory: Option<Bound>,
}

/// A number, or `false` for none.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Count {
    /// A positive number.
    Number(#[schemars(range(min = 1))] u64),
    /// `false`: no bound.
    #[schemars(extend("const" = false))]
    Off(bool),
}

/// A size, or `false` for none.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Bound {
    /// A positive number.
    Number(#[schemars(range(min = 1))] u64),
    /// A size with `K`, `M` or `G`.
    Size(#[schemars(regex(pattern = r"^\s*[0-9]+\s*[kKmMgG]?\s*$"))] String),
    /// `false`: no bound.
    #[schemars(extend("const" = false))]
    Off(bool),
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Environment {
    /// Names (a trailing `*` matches a prefix) inherited besides the base variables.
    inherit: Option<Vec<String>>,
    /// `true`: the whole environment is inherited.
    #[serde(rename = "inheritAll")]
    inherit_all: Option<bool>,
    /// Name patterns (`*` and `?` match, case ignored) left out even where `inherit`,
    /// `inheritAll` or the base variables would pass them.
    exclude: Option<Vec<String>>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct Checkpoints {
    enabled: Option<bool>,
}

/// The JSON Schema of a settings file (draft 2020-12).
pub fn settings_schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(SettingsFile)).unwrap_or(Value::Null);
    // An absent key is the default; `null` is not (the loader refuses it).
    without_null(&mut schema);
    schema["title"] =
        Value::String("Settings of the tools framework (Claude Code's settings.json)".to_owned());
    schema
}

/// `schema` without the `null` that schemars allows for each optional key.
fn without_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    map.insert("type".to_owned(), only);
                }
            }
            if let Some(Value::Array(any_of)) = map.get_mut("anyOf") {
                any_of.retain(|s| s.get("type").and_then(Value::as_str) != Some("null"));
                if any_of.len() == 1 {
                    let only = any_of.remove(0);
                    map.remove("anyOf");
                    if let Value::Object(only) = only {
                        map.extend(only);
                    }
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regenerated with `SETTINGS_SCHEMA=overwrite cargo test -p tool-permissions schema`.
    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/settings.schema.json");
        let generated = serde_json::to_string_pretty(&settings_schema()).unwrap() + "\n";
        if std::env::var("SETTINGS_SCHEMA").as_deref() == Ok("overwrite") {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(committed == generated, "settings.schema.json is stale: regenerate it (see this test's doc)");
    }

    /// Hooks are part of the file: without their feature the loader refuses them.
    #[test]
    #[cfg(feature = "command-hooks")]
    fn the_schema_and_the_loader_agree() {
        use crate::{Rules, Settings, Subject, ToolCatalog};
        use serde_json::json;
        let schema = jsonschema::validator_for(&settings_schema()).unwrap();
        let manual = include_str!("../../tool-runtime/docs/permissions.md");
        let from = manual.find("```json\n").unwrap() + 8;
        let manual: Value =
            serde_json::from_str(&manual[from..from + manual[from..].find("```").unwrap()]).unwrap();
        let accepted = [
            manual,
            json!({}),
            json!({"$schema": "x", "model": "opus", "env": {"A": "1"}, "verify": {"rs": ["true"]}}),
            json!({"permissions": {"defaultMode": "manual", "additionalDirectories": ["../x"],
                                   "disableBypassPermissionsMode": "disable", "defaults": {"Bash": "ask"}}}),
            json!({"hooks": {"Stop": [], "PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 5}]}]},
                   "disableAllHooks": true}),
            json!({"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false, "network": {},
                               "filesystem": {"allowWrite": ["b"]}, "ignoreViolations": {},
                               "limits": {"processes": 64, "memory": "1G"}}}),
            json!({"sandbox": {"limits": {"processes": false, "memory": 1048576}}}),
            json!({"environment": {"inherit": ["AWS_*"], "inheritAll": false}}),
            json!({"environment": {"inheritAll": true, "exclude": ["*KEY*"]}, "env": {"RUST_LOG": "debug"}}),
        ];
        let refused = [
            json!({"permissions": {"allow": "Bash"}}),
            json!({"permissions": {"defaultMode": "yolo"}}),
            json!({"permissions": {"defaultMode": "auto"}}),
            json!({"permissions": {"frob": []}}),
            json!({"permissions": {"default": "maybe"}}),
            json!({"sandbox": {"enabld": true}}),
            json!({"sandbox": {"enabled": "yes"}}),
            json!({"sandbox": {"filesystem": {"denyRead": ["~/.ssh"]}}}),
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}),
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}),
            json!({"hooks": {"OnSave": []}}),
            json!({"hooks": {"Stop": "x"}}),
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}),
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "  "}]}]}}),
            json!({"$schema": true}),
            json!({"sandbox": {"network": {"allowedDomain": ["example.com"]}}}),
            json!({"sandbox": {"network": {"secrets": {"TOKEN": "api.github.com"}}}}),
            json!({"environment": {"inherit": "X"}}),
            json!({"environment": {"exclude": "X"}}),
            json!({"env": {"A": 1}}),
            json!({"env": ["A=1"]}),
            json!({"disableAllHooks": "yes"}),
            json!({"permissions": null}),
            json!({"sandbox": {"enabled": null}}),
            json!({"sandbox": {"limits": {"cpu": 1}}}),
            json!({"sandbox": {"limits": {"processes": true}}}),
            json!({"sandbox": {"limits": {"processes": 0}}}),
            json!({"sandbox": {"limits": {"memory": "lots"}}}),
            json!({"sandbox": {"limits": {"processes": "64"}}}),
        ];
        let catalog = || {
            ToolCatalog::new()
                .subject("bash", Subject::Command)
                .subject("read", Subject::Path)
                .subject("edit", Subject::Path)
                .rule_name("Bash", ["bash"])
                .rule_name("Read", ["read"])
                .rule_name("Edit", ["edit"])
        };
        let load = |value: &Value| {
            Settings::from_value(value.clone(), "s.json", Rules::builder("/w").catalog(catalog()))
                .map(|_| ())
                .map_err(|e| e.to_string())?;
            // The network section is read by the egress proxy's reader.
            tool_egress::settings::from_settings(value, "s.json").map(|_| ()).map_err(|e| e.to_string())
        };
        for value in &accepted {
            assert!(schema.is_valid(value), "the schema refuses {value}");
            if let Err(e) = load(value) {
                panic!("the loader refuses {value}: {e}");
            }
        }
        for value in &refused {
            assert!(!schema.is_valid(value), "the schema accepts {value}");
            assert!(load(value).is_err(), "the loader accepts {value}");
        }
    }

    /// Generated settings files covering every key of the model.
    #[cfg(feature = "command-hooks")]
    mod generated {
        use super::super::*;
        use crate::{Rules, Settings, Subject, ToolCatalog};
        use proptest::prelude::*;
        use proptest::sample::{Index, select};
        use serde_json::{Map, json};

        fn some<T: std::fmt::Debug + Clone + 'static>(
            strategy: impl Strategy<Value = T> + 'static,
        ) -> BoxedStrategy<Option<T>> {
            proptest::option::of(strategy).boxed()
        }

        fn list(pool: &'static [&'static str]) -> BoxedStrategy<Value> {
            proptest::collection::vec(select(pool), 0..3).prop_map(|items| json!(items)).boxed()
        }

        /// An object of the keys given `Some` value.
        fn object(entries: Vec<(&str, Option<Value>)>) -> Value {
            Value::Object(entries.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v))).collect())
        }

        const RULES: &[&str] =
            &["Bash", "Bash(git diff:*)", "Bash(ls)", "Read", "Read(./src/**)", "Edit(./x)"];
        const ACTIONS: &[&str] = &["allow", "ask", "deny"];
        const MODES: &[&str] = &["default", "manual", "acceptEdits", "plan", "dontAsk", "bypassPermissions"];
        const EVENTS: &[&str] = &[
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PermissionRequest",
            "Notification",
            "UserPromptSubmit",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "PostCompact",
            "SessionStart",
            "SessionEnd",
            "Setup",
        ];

        fn permissions() -> impl Strategy<Value = Value> {
            (
                (some(list(RULES)), some(list(RULES)), some(list(RULES))),
                some(list(&["../shared", "~/notes", "/opt/data"])),
                some(select(MODES)),
                some(Just("disable")),
                some(select(ACTIONS)),
                some(proptest::collection::btree_map(
                    select(&["Bash", "Read", "Edit"][..]),
                    select(ACTIONS),
                    0..3,
                )),
                some(select(ACTIONS)),
            )
                .prop_map(
                    |((allow, ask, deny), dirs, mode, disable, default, defaults, external)| {
                        // The one rule across keys, which a schema does not say: no bypass mode
                        // where it is turned off.
                        let disable = disable.filter(|_| mode != Some("bypassPermissions"));
                        object(vec![
                            ("allow", allow),
                            ("ask", ask),
                            ("deny", deny),
                            ("additionalDirectories", dirs),
                            ("defaultMode", mode.map(|m| json!(m))),
                            ("disableBypassPermissionsMode", disable.map(|d| json!(d))),
                            ("default", default.map(|a| json!(a))),
                            ("defaults", defaults.map(|d| json!(d))),
                            ("external_directory", external.map(|a| json!(a))),
                        ])
                    },
                )
        }

        fn hooks() -> impl Strategy<Value = Value> {
            let command = (select(&["true", "cat > /dev/null", "exit 0"][..]), some(1u32..600)).prop_map(
                |(command, timeout)| {
                    object(vec![
                        ("type", Some(json!("command"))),
                        ("command", Some(json!(command))),
                        ("timeout", timeout.map(|t| json!(t))),
                    ])
                },
            );
            let entry = (
                some(select(&["Bash", "Edit|Write", "*", ""][..])),
                proptest::collection::vec(command, 1..3),
            )
                .prop_map(|(matcher, hooks)| {
                    object(vec![("matcher", matcher.map(|m| json!(m))), ("hooks", Some(json!(hooks)))])
                });
            proptest::collection::btree_map(select(EVENTS), proptest::collection::vec(entry, 0..2), 0..4)
                .prop_map(|events| json!(events))
        }

        fn network() -> impl Strategy<Value = Value> {
            let hosts = &["example.com", "*.crates.io", "docs.rs:443", "10.0.0.0/8"];
            (
                (some(list(hosts)), some(list(&["*.internal", "evil.example"])), some(list(&["127.0.0.1"]))),
                (some(any::<bool>()), some(any::<bool>()), some(any::<bool>()), some(any::<bool>())),
                (
                    some(Just(json!({"GITHUB_TOKEN": ["api.github.com"]}))),
                    some(list(&["/run/docker.sock"])),
                    some(Just(json!(8080))),
                ),
            )
                .prop_map(
                    |(
                        (allowed, denied, addresses),
                        (limited, strict, local, all),
                        (secrets, sockets, port),
                    )| {
                        object(vec![
                            ("allowedDomains", allowed),
                            ("deniedDomains", denied),
                            ("allowedAddresses", addresses),
                            ("limited", limited.map(|b| json!(b))),
                            ("strictAllowlist", strict.map(|b| json!(b))),
                            ("allowLocalBinding", local.map(|b| json!(b))),
                            ("allowAllUnixSockets", all.map(|b| json!(b))),
                            ("secrets", secrets),
                            ("allowUnixSockets", sockets),
                            ("httpProxyPort", port),
                        ])
                    },
                )
        }

        fn sandbox() -> impl Strategy<Value = Value> {
            let limits = (
                some(prop_oneof![(1u64..100_000).prop_map(|n| json!(n)), Just(json!(false))]),
                some(prop_oneof![
                    (1u64..1 << 40).prop_map(|n| json!(n)),
                    select(&["4G", "512M", " 64 k"][..]).prop_map(|s| json!(s)),
                    Just(json!(false))
                ]),
            )
                .prop_map(|(processes, memory)| object(vec![("processes", processes), ("memory", memory)]));
            let filesystem = (some(list(&["b", "~/cache", "/tmp/x"])), some(list(&["secrets", "./keys"])))
                .prop_map(|(allow, deny)| object(vec![("allowWrite", allow), ("denyWrite", deny)]));
            (
                (
                    some(any::<bool>()),
                    some(list(&["docker", "git push"])),
                    some(list(&["npm", "cargo fetch"])),
                ),
                (some(any::<bool>()), some(any::<bool>()), some(any::<bool>())),
                (some(limits), some(filesystem), some(network())),
                (some(any::<bool>()), some(Just(json!({"*": ["/usr/bin"]})))),
            )
                .prop_map(
                    |(
                        (enabled, excluded, network_commands),
                        (unsandboxed, git, auto),
                        (limits, fs, network),
                        (weaker, violations),
                    )| {
                        object(vec![
                            ("enabled", enabled.map(|b| json!(b))),
                            ("excludedCommands", excluded),
                            ("networkCommands", network_commands),
                            ("allowUnsandboxedCommands", unsandboxed.map(|b| json!(b))),
                            ("allowGitWrites", git.map(|b| json!(b))),
                            ("autoAllowBashIfSandboxed", auto.map(|b| json!(b))),
                            ("limits", limits),
                            ("filesystem", fs),
                            ("network", network),
                            ("enableWeakerNestedSandbox", weaker.map(|b| json!(b))),
                            ("ignoreViolations", violations),
                        ])
                    },
                )
        }

        fn settings_file() -> impl Strategy<Value = Value> {
            let environment = (
                some(list(&["AWS_PROFILE", "CARGO_*"])),
                some(any::<bool>()),
                some(list(&["*KEY*", "AWS_?"])),
            )
                .prop_map(|(inherit, all, exclude)| {
                    object(vec![
                        ("inherit", inherit),
                        ("inheritAll", all.map(|b| json!(b))),
                        ("exclude", exclude),
                    ])
                });
            let env = proptest::collection::btree_map(
                select(&["RUST_LOG", "GREETING", "A_B"][..]),
                "[a-z0-9 =]{0,8}",
                0..3,
            );
            (
                (
                    some(Just("https://json.schemastore.org/claude-code-settings.json")),
                    some(permissions()),
                    some(hooks()),
                    some(any::<bool>()),
                ),
                (
                    some(sandbox()),
                    some(environment),
                    some(env),
                    some(Just(json!({"rs": ["rustfmt", "--check", "{file}"]}))),
                ),
                (some(any::<bool>()), some(any::<bool>()), some(list(&["docs", "db"])), some(list(&["web"]))),
                (
                    some(select(&["opus", "sonnet"][..])),
                    some(Just(json!({"type": "command", "command": "status"}))),
                ),
            )
                .prop_map(
                    |(
                        (schema, permissions, hooks, disable),
                        (sandbox, environment, env, verify),
                        (checkpoints, all, enabled, disabled),
                        (model, status),
                    )| {
                        object(vec![
                            ("$schema", schema.map(|s| json!(s))),
                            ("permissions", permissions),
                            ("hooks", hooks),
                            ("disableAllHooks", disable.map(|b| json!(b))),
                            ("sandbox", sandbox),
                            ("environment", environment),
                            ("env", env.map(|e| json!(e))),
                            ("verify", verify),
                            ("checkpoints", checkpoints.map(|b| json!({"enabled": b}))),
                            ("enableAllProjectMcpServers", all.map(|b| json!(b))),
                            ("enabledMcpjsonServers", enabled),
                            ("disabledMcpjsonServers", disabled),
                            ("model", model.map(|m| json!(m))),
                            ("statusLine", status),
                        ])
                    },
                )
        }

        /// `value` with object members that are `null` removed, and whole floats as integers.
        fn written_back(value: Value) -> Value {
            match value {
                Value::Object(map) => Value::Object(
                    map.into_iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| (k, written_back(v)))
                        .collect::<Map<_, _>>(),
                ),
                Value::Array(items) => Value::Array(items.into_iter().map(written_back).collect()),
                Value::Number(n)
                    if n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0 && f >= 0.0) =>
                {
                    json!(n.as_f64().unwrap_or_default() as u64)
                }
                other => other,
            }
        }

        /// The pointers of every member and item of `value`, with the keys this crate's loader
        /// reads (the others belong to the `tools` binary and tool-egress, which check them).
        fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
            let children: Vec<(String, &Value)> = match value {
                Value::Object(map) => map
                    .iter()
                    .map(|(k, v)| (format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), v))
                    .collect(),
                Value::Array(items) => {
                    items.iter().enumerate().map(|(i, v)| (format!("{at}/{i}"), v)).collect()
                }
                _ => Vec::new(),
            };
            for (pointer, child) in children {
                let theirs = [
                    "/verify",
                    "/checkpoints",
                    "/enable",
                    "/disabledMcp",
                    "/sandbox/network/httpProxyPort",
                    "/model",
                    "/statusLine",
                    "/sandbox/enableWeaker",
                    "/sandbox/ignoreViolations",
                ];
                if theirs.iter().any(|t| pointer.starts_with(t)) {
                    continue;
                }
                out.push(pointer.clone());
                pointers(child, pointer, out);
            }
        }

        /// A value of another type than `value`'s.
        fn wrong(value: &Value) -> Value {
            match value {
                Value::Bool(_) => json!("yes"),
                Value::Number(_) => json!("many"),
                Value::String(_) => json!(true),
                Value::Array(_) => json!("x"),
                Value::Object(_) => json!(7),
                Value::Null => json!({}),
            }
        }

        fn load(value: &Value) -> Result<(), String> {
            let catalog = ToolCatalog::new()
                .subject("bash", Subject::Command)
                .subject("read", Subject::Path)
                .subject("edit", Subject::Path)
                .rule_name("Bash", ["bash"])
                .rule_name("Read", ["read"])
                .rule_name("Edit", ["edit"]);
            Settings::from_value(value.clone(), "s.json", Rules::builder("/w").catalog(catalog))
                .map(|_| ())
                .map_err(|e| e.to_string())?;
            // The network section is read by the egress proxy's reader.
            tool_egress::settings::from_settings(value, "s.json").map(|_| ()).map_err(|e| e.to_string())
        }

        proptest! {
            #![proptest_config(ProptestConfig {
                cases: 256,
                failure_persistence: None,
                ..ProptestConfig::default()
            })]

            /// Read into the typed model and written back, a file keeps every key and value;
            /// the schema and the loader accept it.
            #[test]
            fn a_file_written_back_from_the_model_keeps_every_key(file in settings_file()) {
                let model: SettingsFile = serde_json::from_value(file.clone()).map_err(|e| TestCaseError::fail(format!("{e}: {file}")))?;
                prop_assert_eq!(written_back(serde_json::to_value(&model).unwrap()), file.clone());
                let schema = jsonschema::validator_for(&settings_schema()).unwrap();
                prop_assert!(schema.is_valid(&file), "the schema refuses {}", file);
                prop_assert!(load(&file).is_ok(), "the loader refuses {}: {:?}", file, load(&file));
            }

            /// A file with one member of the wrong type: the schema and the loader agree on it.
            #[test]
            fn the_schema_and_the_loader_agree_on_a_damaged_file(file in settings_file(), at in any::<Index>()) {
                let mut all = Vec::new();
                pointers(&file, String::new(), &mut all);
                prop_assume!(!all.is_empty());
                let pointer = &all[at.index(all.len())];
                let mut damaged = file.clone();
                let target = damaged.pointer_mut(pointer).unwrap();
                *target = wrong(target);
                let schema = jsonschema::validator_for(&settings_schema()).unwrap();
                let loaded = load(&damaged);
                prop_assert_eq!(schema.is_valid(&damaged), loaded.is_ok(), "at {}: {} ({:?})", pointer, damaged, loaded);
            }
        }
    }
}
