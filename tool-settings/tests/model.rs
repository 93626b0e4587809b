//! Reading settings files into the model: what is accepted, what is refused and how the error
//! names the key, and what is said to have no effect.

use serde_json::{Value, json};
use tool_settings::SettingsFile;

fn refused(value: Value) -> String {
    SettingsFile::from_value(value.clone()).map(|_| ()).expect_err(&value.to_string()).to_string()
}

#[test]
fn errors_name_the_key_at_fault() {
    for (value, expected) in [
        (json!([]), "the settings must be a JSON object"),
        (
            json!({"permissions": {"allow": "Bash"}}),
            "`permissions.allow`: invalid type: string \"Bash\", expected a sequence",
        ),
        (
            json!({"permissions": {"allow": ["Read", 7]}}),
            "`permissions.allow[1]`: invalid type: integer `7`, expected a string",
        ),
        (
            json!({"permissions": {"frob": []}}),
            "`permissions.frob`: unknown field `frob`, expected one of `allow`",
        ),
        (
            json!({"permissions": {"defaultMode": "yolo"}}),
            "`permissions.defaultMode`: unknown variant `yolo`, expected one of `default`",
        ),
        (json!({"permissions": null}), "`permissions`: invalid type: null, expected struct Permissions"),
        (json!({"sandbox": {"enabled": null}}), "`sandbox.enabled`: invalid type: null, expected a boolean"),
        (
            json!({"sandbox": {"enabld": true}}),
            "`sandbox.enabld`: unknown field `enabld`, expected one of `enabled`",
        ),
        (
            json!({"sandbox": {"filesystem": {"denyRead": "~/.ssh"}}}),
            "`sandbox.filesystem.denyRead`: invalid type: string \"~/.ssh\", expected a sequence",
        ),
        (
            json!({"sandbox": {"limits": {"processes": 0}}}),
            "`sandbox.limits.processes`: must be a positive whole number or false (no bound), not 0",
        ),
        (
            json!({"sandbox": {"limits": {"processes": true}}}),
            "`sandbox.limits.processes`: must be a positive whole number or false",
        ),
        (
            json!({"sandbox": {"limits": {"memory": "4T"}}}),
            "`sandbox.limits.memory`: must be a positive whole number, or a size such as \"512M\"",
        ),
        (json!({"sandbox": {"limits": {"memory": "99999999999G"}}}), "`sandbox.limits.memory`: must be"),
        (
            json!({"sandbox": {"limits": {"cpu": 1}}}),
            "`sandbox.limits.cpu`: unknown field `cpu`, expected `processes` or `memory`",
        ),
        (
            json!({"sandbox": {"network": {"allowedDomain": ["x"]}}}),
            "`sandbox.network.allowedDomain`: unknown field `allowedDomain`",
        ),
        (
            json!({"hooks": {"OnSave": []}}),
            "`hooks.OnSave`: unknown field `OnSave`, expected one of `PreToolUse`",
        ),
        (json!({"hooks": {"Stop": "x"}}), "`hooks.Stop`: invalid type: string \"x\", expected a sequence"),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}),
            "`hooks.PreToolUse[0].hooks[0].type`: unknown variant `prompt`, expected `command`",
        ),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": " "}]}]}}),
            "`hooks.PreToolUse[0].hooks[0].command`: a hook's command must not be blank",
        ),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}),
            "`hooks.PreToolUse[0].hooks[0].timeout`: must be a number of seconds above 0",
        ),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "rm", "args": ["-rf", "/"]}]}]}}),
            "`hooks.PreToolUse[0].hooks[0].args`: a hook command with `args` (run without a shell) is not supported here",
        ),
        (json!({"env": {"A=B": "1"}}), "`env`: \"A=B\" is not a variable name"),
        (json!({"env": {"A": 1}}), "`env.A`: invalid type: integer `1`, expected a string"),
        (
            json!({"environment": {"inherit": ["OK", ""]}}),
            "`environment.inherit`: item 1, \"\", is not a variable name or pattern",
        ),
        (
            json!({"sandbox": {"limits": [64]}}),
            "`sandbox.limits`: invalid type: sequence, expected an object",
        ),
        (json!({"permissions": [["Bash"]]}), "`permissions`: invalid type: sequence, expected an object"),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [["command", "rm -rf /"]]}]}}),
            "`hooks.PreToolUse[0].hooks[0]`: invalid type: sequence, expected an object",
        ),
        (json!({"$schema": true}), "`$schema`: invalid type: boolean `true`, expected a string"),
    ] {
        let error = refused(value.clone());
        assert!(error.starts_with(expected), "{value}: {error}");
    }
}

#[test]
fn every_key_is_kept_and_what_has_no_effect_is_named() {
    let value = json!({
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "permissions": {"allow": ["Read"], "defaultMode": "manual", "defaults": {"Bash": "ask"}},
        "hooks": {"Stop": [], "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x", "timeout": 5, "statusMessage": "checking"}]}]},
        "sandbox": {"limits": {"processes": false, "memory": " 512m "}, "ignoreViolations": {},
                    "network": {"httpProxyPort": 8080, "allowedDomains": ["docs.rs"]}},
        "env": {"RUST_LOG": "debug"},
        "model": "opus",
        "frobnicate": 1,
    });
    let file = SettingsFile::from_value(value.clone()).unwrap();
    assert_eq!(file.to_value(), value);
    let limits = file.sandbox.as_ref().and_then(|s| s.limits.as_ref()).unwrap();
    assert_eq!(limits.processes.and_then(|p| p.get()), None);
    assert_eq!(limits.memory.as_ref().and_then(|m| m.bytes()), Some(512 << 20));
    let named: Vec<String> = file.not_applied("s.json").iter().map(|n| n.key.clone()).collect();
    assert_eq!(
        named,
        [
            "frobnicate",
            "model",
            "hooks.Stop",
            "hooks.PreToolUse[0].hooks[0].statusMessage",
            "sandbox.ignoreViolations",
            "sandbox.network.httpProxyPort"
        ]
    );
    let frob = &file.not_applied("s.json")[0];
    assert_eq!(
        frob.to_string(),
        "s.json: `frobnicate` is not applied: no such key in Claude Code's settings or this program's"
    );
}

#[test]
fn a_file_is_read_only_when_it_is_a_regular_file_of_bounded_size() {
    let dir = std::env::temp_dir().join(format!("tool-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("settings.json");
    std::fs::write(&path, r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#).unwrap();
    assert!(SettingsFile::load(&path).is_ok());
    std::fs::write(&path, " ".repeat(tool_settings::MAX_FILE_BYTES as usize + 1) + "{}").unwrap();
    assert!(SettingsFile::load(&path).unwrap_err().to_string().starts_with("larger than"));
    assert_eq!(SettingsFile::load(&dir).unwrap_err().to_string(), "not a regular file");
    let fifo = dir.join("fifo.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert_eq!(SettingsFile::load(&fifo).unwrap_err().to_string(), "not a regular file");
    std::fs::remove_dir_all(&dir).unwrap();
}
