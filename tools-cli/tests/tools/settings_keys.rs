//! Every key of a settings file is applied or named at start with the reason, through the built
//! binary; relative paths are resolved as Claude Code resolves them.

use crate::common;

use common::Fixture;
use serde_json::json;

#[test]
fn keys_that_are_not_applied_are_named_at_start() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("settings.json");
    let text = json!({
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "env": {"FOO": "1"},
        "model": "opus",
        "verify": {},
        "permissions": {"allow": ["Read"], "disableAutoMode": "disable"},
        "hooks": {"Stop": [], "UserPromptSubmit": [], "PreToolUse": [], "PermissionDenied": []},
        "sandbox": {"ignoreViolations": {}, "failIfUnavailable": false, "filesystem": {"allowRead": ["~/x"]}},
        "allowManagedPermissionRulesOnly": true,
        "allowManagedHooksOnly": false,
        "frobnicate": true,
    });
    std::fs::write(&path, text.to_string()).unwrap();
    let file = path.display().to_string();
    let run = fx.run(&["call", "read", r#"{"path": "hello.txt"}"#, "--settings", &file], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    let says =
        |key: &str, reason: &str| format!("tools: --settings {file}: `{key}` is not applied: {reason}");
    for expected in [
        says(
            "model",
            "it configures Claude Code's own model, interface, account or updates, which this program does not \
             have",
        ),
        says("frobnicate", "no such key in Claude Code's settings or this program's"),
        says("hooks.Stop", "this program runs tools, not an agent's loop, so nothing stops"),
        says("hooks.UserPromptSubmit", "this program runs tools, and sees no prompts"),
        says(
            "sandbox.ignoreViolations",
            "a refused access is refused; allow the path with `sandbox.filesystem.allowWrite` instead",
        ),
        says(
            "hooks.PermissionDenied",
            "a refused call's result tells the model why; nothing runs after a refusal",
        ),
        says(
            "sandbox.failIfUnavailable",
            "the sandbox is never left out: where the kernel cannot make it, commands are refused (--sandbox off \
             runs them unconfined)",
        ),
    ] {
        assert!(lines.contains(&expected.as_str()), "{expected}\nnot in:\n{}", run.stderr);
    }
    // The keys it applies are not named: `$schema`, `env`, `verify`, `permissions` (with
    // `disableAutoMode`: there is no `auto` mode to use), `hooks.PreToolUse`, the managed-only
    // keys (the file is the only one).
    assert_eq!(lines.len(), 7, "{}", run.stderr);

    // `disableAllHooks` is applied: the hook that would refuse the call does not run.
    let hook = json!({"matcher": "read", "hooks": [{"type": "command", "command": "exit 2"}]});
    std::fs::write(&path, json!({"hooks": {"PreToolUse": [hook]}, "disableAllHooks": true}).to_string())
        .unwrap();
    let run = fx.run(&["call", "read", r#"{"path": "hello.txt"}"#, "--settings", &file], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
}

#[test]
fn a_relative_additional_directory_is_taken_from_the_project_root() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("settings.json");
    std::fs::write(&path, json!({"permissions": {"additionalDirectories": ["../"]}}).to_string()).unwrap();
    let outside = fx.dir.path().join("outside.txt").display().to_string();
    let args = json!({"path": outside}).to_string();
    let run = fx.run(&["call", "read", &args, "--settings", path.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json()["output"], "     1\tsecret\n");
}

/// A link in an additional directory (where sandboxed commands may write) takes a file tool only
/// where the rules let it go: where the link leads is asked about as itself.
#[test]
fn a_link_in_an_additional_directory_is_judged_by_where_it_leads() {
    let fx = Fixture::new();
    let (shared, victim) = (fx.dir.path().join("shared"), fx.dir.path().join("victim"));
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("key"), "victim's\n").unwrap();
    std::fs::write(shared.join("secret"), "secret\n").unwrap();
    std::fs::write(shared.join("plain"), "plain\n").unwrap();
    std::os::unix::fs::symlink(&victim, shared.join("v")).unwrap();
    std::os::unix::fs::symlink("secret", shared.join("innocent")).unwrap();
    let path = fx.dir.path().join("settings.json");
    let settings = json!({"permissions": {
        "defaultMode": "acceptEdits",
        "additionalDirectories": [shared],
        "deny": [format!("Read(/{}/secret)", shared.display())],
    }});
    std::fs::write(&path, settings.to_string()).unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        fx.run(&["call", tool, &args.to_string(), "--settings", path.to_str().unwrap()], None)
    };
    let plain = call("read", json!({"path": shared.join("plain")}));
    assert_eq!(
        (plain.code, plain.json()["output"].as_str()),
        (0, Some("     1\tplain\n")),
        "{}",
        plain.stderr
    );
    let written = call("write", json!({"path": shared.join("v/authorized_keys"), "content": "evil\n"}));
    assert_eq!(written.code, 1, "{}", written.stdout);
    let said = written.json()["output"].as_str().unwrap().to_owned();
    assert!(said.contains("(where") && said.contains("outside the workspace root"), "{said}");
    assert!(!victim.join("authorized_keys").exists(), "written through the link");
    for (tool, args) in [
        ("read", json!({"path": shared.join("v/key")})),
        ("read", json!({"path": shared.join("innocent")})),
        ("grep", json!({"pattern": "secret", "path": shared.join("innocent")})),
    ] {
        let run = call(tool, args.clone());
        assert_eq!(run.code, 1, "{tool} {args}: {}", run.stdout);
    }
    let run = call("read", json!({"path": shared.join("innocent")}));
    assert!(run.json()["output"].as_str().unwrap().contains("deny Read("), "{}", run.stdout);
}

/// `env` sets variables for commands and hook commands, as it does for a Claude Code session, on
/// top of what they inherit; `environment.exclude` leaves inherited ones out; the sandbox's own
/// `TMPDIR` wins over the file's.
#[test]
fn env_sets_variables_for_commands_and_hooks() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("settings.json");
    let hook = json!({"matcher": "Bash", "hooks": [{"type": "command",
        "command": "echo \"$GREETING ${HOME_SECRET:-none}\" > \"$CLAUDE_PROJECT_DIR/hook.txt\""}]});
    let text = json!({
        "env": {"GREETING": "hi", "TMPDIR": "/nowhere"},
        "environment": {"inherit": ["HOME_*"], "exclude": ["*SECRET*"]},
        "hooks": {"PreToolUse": [hook]},
        "sandbox": {"enabled": true},
    });
    std::fs::write(&path, text.to_string()).unwrap();
    let script = r#"{"command": "echo \"$GREETING ${HOME_SECRET:-none} $HOME_PLACE\"; test \"$TMPDIR\" != /nowhere && echo own-tmp"}"#;
    let mut command = fx.command(&["call", "bash", script, "--settings", path.to_str().unwrap()]);
    command.env("HOME_SECRET", "s3cret").env("HOME_PLACE", "here");
    let run = common::run(command, None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json()["output"], "hi none here\nown-tmp\n", "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(fx.ws().join("hook.txt")).unwrap(), "hi none\n");
}
