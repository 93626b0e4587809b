//! The typed settings model (tool-settings), its JSON Schema and the loaders that apply it
//! (this crate's, and tool-egress's network rules) agree: on a table of files, and on generated
//! files covering every key, each read into the model and written back keeping every key.
// Hooks are part of the files: without their feature the loader refuses them.
#![cfg(feature = "command-hooks")]

use serde_json::{Value, json};
use tool_permissions::{Rules, Settings, SettingsFile, Subject, ToolCatalog};
use tool_settings::schema as settings_schema;

fn catalog() -> ToolCatalog {
    ToolCatalog::new()
        .subject("bash", Subject::Command)
        .subject("read", Subject::Path)
        .subject("edit", Subject::Path)
        .rule_name("Bash", ["bash"])
        .rule_name("Read", ["read"])
        .rule_name("Edit", ["edit"])
}

/// Reads `value` as the `tools` binary does: into the model, then through each loader.
fn load(value: &Value) -> Result<(), String> {
    let file = SettingsFile::from_value(value.clone()).map_err(|e| e.to_string())?;
    Settings::from_file(&file, "s.json", Rules::builder("/w").catalog(catalog()))
        .map_err(|e| e.to_string())?;
    // The network section is read by the egress proxy's reader.
    tool_egress::settings::from_settings(&file, "s.json").map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn the_schema_and_the_loader_agree() {
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
                           "filesystem": {"allowWrite": ["b"], "denyRead": ["~/.ssh"], "allowRead": ["~/.ssh/x"]},
                           "ignoreViolations": {},
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
        json!({"sandbox": {"filesystem": {"denyRead": "~/.ssh"}}}),
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
mod generated {
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::{Index, select};

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

    const RULES: &[&str] = &["Bash", "Bash(git diff:*)", "Bash(ls)", "Read", "Read(./src/**)", "Edit(./x)"];
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
            .prop_map(|((allow, ask, deny), dirs, mode, disable, default, defaults, external)| {
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
            })
    }

    fn hooks() -> impl Strategy<Value = Value> {
        let command = (
            select(&["true", "cat > /dev/null", "exit 0"][..]),
            some(1u32..600),
            some(select(&["checking", "formatting"][..])),
        )
            .prop_map(|(command, timeout, status)| {
                object(vec![
                    ("type", Some(json!("command"))),
                    ("command", Some(json!(command))),
                    ("timeout", timeout.map(|t| json!(t))),
                    // One of Claude Code's keys that has no effect here: kept, and named.
                    ("statusMessage", status.map(|s| json!(s))),
                ])
            });
        let entry =
            (some(select(&["Bash", "Edit|Write", "*", ""][..])), proptest::collection::vec(command, 1..3))
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
                |((allowed, denied, addresses), (limited, strict, local, all), (secrets, sockets, port))| {
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
        let filesystem = (
            (some(list(&["b", "~/cache", "/tmp/x"])), some(list(&["secrets", "./keys"]))),
            (some(list(&["~/.ssh", "/srv/keys/**"])), some(list(&["~/.ssh/known_hosts", "."]))),
            some(any::<bool>()),
        )
            .prop_map(|((allow, deny), (deny_read, allow_read), managed_only)| {
                object(vec![
                    ("allowWrite", allow),
                    ("denyWrite", deny),
                    ("denyRead", deny_read),
                    ("allowRead", allow_read),
                    ("allowManagedReadPathsOnly", managed_only.map(Value::Bool)),
                ])
            });
        (
            (some(any::<bool>()), some(list(&["docker", "git push"])), some(list(&["npm", "cargo fetch"]))),
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
        let environment =
            (some(list(&["AWS_PROFILE", "CARGO_*"])), some(any::<bool>()), some(list(&["*KEY*", "AWS_?"])))
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

    /// The pointers of every member and item of `value`.
    fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
        let children: Vec<(String, &Value)> = match value {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| (format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), v))
                .collect(),
            Value::Array(items) => items.iter().enumerate().map(|(i, v)| (format!("{at}/{i}"), v)).collect(),
            _ => Vec::new(),
        };
        for (pointer, child) in children {
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
            // serde reads a struct from an array too, which the model must refuse.
            Value::Object(_) => json!([]),
            Value::Null => json!({}),
        }
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
            let model = SettingsFile::from_value(file.clone()).map_err(|e| TestCaseError::fail(format!("{e}: {file}")))?;
            prop_assert_eq!(model.to_value(), file.clone());
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
