//! `permissions.defaultMode` through the built binary: each mode against a table of calls that
//! no rule decides (`tools call` has nobody to ask, so an ask is refused), the sandbox's
//! `autoAllowBashIfSandboxed`, and rules that still decide in every mode.

use crate::common;

use common::{Fixture, TOOLS};
use serde_json::json;

/// What happened to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ran,
    Asked,
    Refused,
}

use Outcome::{Asked, Ran, Refused};

/// An `mcpServers` file mounting `tools serve` on the fixture's workspace as `inner`.
fn mount_config(fx: &Fixture) -> String {
    let path = fx.dir.path().join("mcp.json");
    let ws = fx.ws();
    let text = json!({"mcpServers": {
        "inner": {"command": TOOLS, "args": ["serve", "--sandbox", "off", "--root", ws.to_str().unwrap()]},
    }});
    std::fs::write(&path, text.to_string()).unwrap();
    path.display().to_string()
}

fn settings(fx: &Fixture, value: serde_json::Value) -> String {
    let path = fx.dir.path().join("settings.json");
    std::fs::write(&path, value.to_string()).unwrap();
    path.display().to_string()
}

/// Runs `tool` with `args` under `settings` and says what happened, checking the words of an
/// ask or a refusal by the mode.
fn outcome(fx: &Fixture, settings: &str, extra: &[&str], tool: &str, args: &serde_json::Value) -> Outcome {
    let args = args.to_string();
    let mut argv = vec!["call", tool, args.as_str(), "--settings", settings];
    argv.extend_from_slice(extra);
    let run = fx.run(&argv, None);
    let result = run.json();
    let output = result["output"].as_str().unwrap().to_owned();
    if result["is_error"] == false {
        return Ran;
    }
    if output.contains("says to ask first, and nobody is here to answer") {
        assert!(output.contains("the permission mode `"), "{output}");
        assert!(output.contains("no rule allows this, `allow "), "{output}");
        return Asked;
    }
    assert!(output.contains("refused by the permission mode `"), "{tool} {args}: {output}");
    Refused
}

#[test]
fn each_mode_decides_what_no_rule_decides() {
    let table: &[(&str, serde_json::Value, [Outcome; 5])] = &[
        // default, acceptEdits, plan, dontAsk, bypassPermissions
        ("read", json!({"path": "hello.txt"}), [Ran, Ran, Ran, Ran, Ran]),
        ("grep", json!({"pattern": "hello"}), [Ran, Ran, Ran, Ran, Ran]),
        ("todo_write", json!({"todos": []}), [Ran, Ran, Ran, Ran, Ran]),
        (
            "edit",
            json!({"path": "hello.txt", "old_string": "hello", "new_string": "howdy"}),
            [Asked, Ran, Refused, Refused, Ran],
        ),
        ("write", json!({"path": "new.txt", "content": "x\n"}), [Asked, Ran, Refused, Refused, Ran]),
        ("bash", json!({"command": "cat hello.txt | wc -l"}), [Ran, Ran, Ran, Ran, Ran]),
        ("bash", json!({"command": "mkdir made"}), [Asked, Ran, Refused, Refused, Ran]),
        ("bash", json!({"command": "echo x > out.txt"}), [Asked, Asked, Refused, Refused, Ran]),
        ("inner__read", json!({"path": "hello.txt"}), [Asked, Asked, Refused, Refused, Ran]),
        // Protected paths: no mode changes them unasked; reading them is a read.
        (
            "write",
            json!({"path": ".vscode/tasks.json", "content": "{}"}),
            [Asked, Asked, Refused, Refused, Asked],
        ),
        (
            "write",
            json!({"path": ".git/hooks/pre-commit", "content": "x"}),
            [Asked, Asked, Refused, Refused, Asked],
        ),
        ("write", json!({"path": "sub/.bashrc", "content": "x"}), [Asked, Asked, Refused, Refused, Asked]),
        (
            "write",
            json!({"path": ".claude/settings.json", "content": "{}"}),
            [Asked, Asked, Refused, Refused, Asked],
        ),
        // The other agents' project settings, which would let a model widen its own permissions.
        ("write", json!({"path": "opencode.json", "content": "{}"}), [Asked, Asked, Refused, Refused, Asked]),
        (
            "write",
            json!({"path": ".gemini/settings.json", "content": "{}"}),
            [Asked, Asked, Refused, Refused, Asked],
        ),
        // Claude Code's skills, commands and agents are ordinary edits; nothing else in `.claude`.
        (
            "write",
            json!({"path": ".claude/skills/review/SKILL.md", "content": "x\n"}),
            [Asked, Ran, Refused, Refused, Ran],
        ),
        (
            "write",
            json!({"path": ".claude/skills/old/../../hooks/x.sh", "content": "x\n"}),
            [Asked, Asked, Refused, Refused, Asked],
        ),
        ("read", json!({"path": "AGENTS.md"}), [Ran, Ran, Ran, Ran, Ran]),
        ("read", json!({"path": ".git/HEAD"}), [Ran, Ran, Ran, Ran, Ran]),
    ];
    let modes = ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"];
    for (i, mode) in modes.iter().enumerate() {
        for (tool, args, expected) in table {
            let fx = Fixture::new();
            std::fs::create_dir_all(fx.ws().join(".git/hooks")).unwrap();
            std::fs::create_dir_all(fx.ws().join(".claude/skills/old")).unwrap();
            std::fs::write(fx.ws().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(fx.ws().join("AGENTS.md"), "Be brief.\n").unwrap();
            let mcp = mount_config(&fx);
            let file = settings(&fx, json!({"permissions": {"defaultMode": mode}}));
            let got = outcome(&fx, &file, &["--sandbox", "off", "--mcp-config", &mcp], tool, args);
            assert_eq!(got, expected[i], "{mode}: {tool} {args}");
        }
    }
}

/// With no settings file every call runs, but a file tool's change to what the sandbox keeps
/// commands from changing (git's configuration and hooks, the agents' settings) is asked about,
/// as in every mode: otherwise `edit` could have the user's next `git status` run a program.
#[test]
fn with_no_settings_file_a_protected_path_is_still_asked_about() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let fsmonitor =
        json!({"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = x"});
    for (tool, args) in [
        ("edit", fsmonitor),
        ("write", json!({"path": ".git/hooks/pre-commit", "content": "x"})),
        ("write", json!({"path": ".claude/settings.local.json", "content": "{}"})),
        ("write", json!({"path": "sub/.vscode/tasks.json", "content": "{}"})),
    ] {
        for sandbox in ["workspace-write", "off"] {
            let run = fx.run(&["call", tool, &args.to_string(), "--sandbox", sandbox], None);
            let output = run.json()["output"].as_str().unwrap().to_owned();
            assert!(
                output.contains(
                    "the permission mode `bypassPermissions` (with no settings file, every call runs but a change to \
                     a protected path; no rule allows this"
                ) && output.contains("says to ask first, and nobody is here to answer"),
                "{tool} {args}: {output}"
            );
        }
    }
    assert_eq!(std::fs::read_to_string(ws.join(".git/config")).unwrap(), "[core]\n");
    assert!(
        !ws.join(".git/hooks/pre-commit").exists()
            && !ws.join(".claude").exists()
            && !ws.join("sub").exists()
    );
    // Everything else runs.
    let ordinary = json!({"path": "hello.txt", "old_string": "hello", "new_string": "howdy"});
    assert_eq!(fx.run(&["call", "edit", &ordinary.to_string()], None).json()["is_error"], false);
    let skill = json!({"path": ".claude/skills/a/SKILL.md", "content": "x"});
    assert_eq!(fx.run(&["call", "write", &skill.to_string()], None).json()["is_error"], false);
    let command = json!({"command": "touch made && ls made"});
    assert_eq!(fx.run(&["call", "bash", &command.to_string()], None).json()["output"], "made\n");
}

/// `default`, `defaults` and `external_directory` that allow decide what no rule names, but are
/// no rule naming a protected path: a file tool's change to one is asked about, as in
/// `bypassPermissions` (where commands are the sandbox's to confine).
#[test]
fn defaults_that_allow_still_ask_about_protected_paths() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.ws().join(".git/hooks")).unwrap();
    let outside = fx.dir.path().join("home");
    std::fs::create_dir_all(&outside).unwrap();
    let bashrc = outside.join(".bashrc");
    for permissions in [
        json!({"default": "allow", "external_directory": "allow"}),
        json!({"defaults": {"write": "allow", "bash": "allow"}, "external_directory": "allow"}),
    ] {
        let file = settings(&fx, json!({"permissions": permissions}));
        for (tool, args, expected) in [
            ("write", json!({"path": "new.txt", "content": "x\n"}), Ran),
            ("write", json!({"path": ".git/hooks/pre-commit", "content": "x"}), Asked),
            ("write", json!({"path": bashrc.to_str().unwrap(), "content": "x"}), Asked),
        ] {
            let got = outcome(&fx, &file, &["--sandbox", "off"], tool, &args);
            assert_eq!(got, expected, "{permissions}: {tool} {args}");
        }
        assert!(!fx.ws().join(".git/hooks/pre-commit").exists() && !bashrc.exists());
    }
}

#[test]
fn a_file_without_a_mode_is_in_default_mode_and_says_so() {
    let fx = Fixture::new();
    let file = settings(&fx, json!({"permissions": {"allow": ["Bash(git status)"]}}));
    let args = json!({"path": "hello.txt", "old_string": "hello", "new_string": "howdy"}).to_string();
    let run = fx.run(&["call", "edit", &args, "--settings", &file], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let output = run.json()["output"].as_str().unwrap().to_owned();
    let ws = std::fs::canonicalize(fx.ws()).unwrap();
    assert_eq!(
        output,
        format!(
            "Permission denied (edit {}/hello.txt): the permission mode `default` (as {file} names no \
             permissions.defaultMode; no rule allows this, `allow Edit(./hello.txt)` or the mode `acceptEdits` \
             would) says to ask first, and nobody is here to answer, so it was not done. Do something else, or \
             ask the user to allow it",
            ws.display()
        )
    );
    assert_eq!(std::fs::read_to_string(fx.ws().join("hello.txt")).unwrap(), "hello\nworld\n");
    // Without a settings file nothing changes: the call runs.
    let run = fx.run(&["call", "edit", &args], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn rules_decide_before_the_mode() {
    let fx = Fixture::new();
    let file = settings(
        &fx,
        json!({"permissions": {
            "defaultMode": "plan",
            "allow": ["Edit(./hello.txt)", "Bash(touch:*)"],
        }}),
    );
    let edit = json!({"path": "hello.txt", "old_string": "hello", "new_string": "howdy"});
    assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "edit", &edit), Ran);
    assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "bash", &json!({"command": "touch t"})), Ran);
    let other = json!({"path": "other.txt", "content": "x"});
    assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "write", &other), Refused);

    let file = settings(
        &fx,
        json!({"permissions": {"defaultMode": "bypassPermissions", "deny": ["Bash(rm:*)"], "ask": ["Edit"]}}),
    );
    let run = fx.run(&["call", "bash", r#"{"command": "rm hello.txt"}"#, "--settings", &file], None);
    assert!(run.json()["output"].as_str().unwrap().contains("`deny Bash(rm:*)`"), "{}", run.stdout);
    let run = fx.run(&["call", "edit", &edit.to_string(), "--settings", &file], None);
    assert!(run.json()["output"].as_str().unwrap().contains("`ask Edit`"), "{}", run.stdout);
}

#[test]
fn sandboxed_commands_run_without_asking_where_the_file_turns_the_sandbox_on() {
    let fx = Fixture::new();
    let sandbox = fx.run(&["call", "bash", r#"{"command": "true"}"#], None);
    if sandbox.json()["metadata"]["sandbox"]["mode"] != "workspace-write" {
        return; // No kernel sandbox here: nothing runs sandboxed.
    }
    let command = json!({"command": "echo x > out.txt"});
    let on = json!({"enabled": true});
    let file = settings(&fx, json!({"permissions": {"defaultMode": "default"}, "sandbox": on}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &command), Ran);
    assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "bash", &command), Asked);
    let file = settings(&fx, json!({"permissions": {"defaultMode": "plan"}, "sandbox": on}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &command), Refused);
    let file = settings(&fx, json!({"permissions": {"defaultMode": "dontAsk"}, "sandbox": on}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &command), Ran);
    let file = settings(
        &fx,
        json!({"permissions": {"defaultMode": "default"}, "sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false}}),
    );
    assert_eq!(outcome(&fx, &file, &[], "bash", &command), Asked);
    // As in Claude Code, a file that does not turn the sandbox on has its allow list and mode
    // decide (the commands still run sandboxed here); one that says so in as many words, not.
    let file = settings(&fx, json!({"permissions": {"defaultMode": "default"}}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &command), Asked);
    let file =
        settings(&fx, json!({"permissions": {"defaultMode": "dontAsk", "allow": ["Bash(git status)"]}}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &command), Refused);
    let file = settings(&fx, json!({"sandbox": {"autoAllowBashIfSandboxed": true}}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &command), Ran);
    // A command the settings run outside the sandbox is asked about.
    let sed = json!({"command": "sed -n 1p hello.txt"});
    let file = settings(&fx, json!({"sandbox": on}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &sed), Ran);
    let file = settings(&fx, json!({"sandbox": {"enabled": true, "excludedCommands": ["sed"]}}));
    assert_eq!(outcome(&fx, &file, &[], "bash", &sed), Asked);
}

#[test]
fn a_mode_that_is_not_claude_codes_is_a_usage_error() {
    let fx = Fixture::new();
    let file = settings(&fx, json!({"permissions": {"defaultMode": "yolo"}}));
    let run = fx.run(&["call", "ls", "{}", "--settings", &file], None);
    assert_eq!(
        run.usage_error(),
        format!(
            "--settings {file}: `permissions.defaultMode`: unknown variant `yolo`, expected one of `default`, \
             `manual`, `acceptEdits`, `plan`, `dontAsk`, `bypassPermissions`"
        )
    );
    let file = settings(
        &fx,
        json!({"permissions": {"defaultMode": "bypassPermissions", "disableBypassPermissionsMode": "disable"}}),
    );
    // As in Claude Code, a mode that is turned off is not entered: the mode is `default`, and
    // the start says so.
    let run = fx.run(&["call", "write", r#"{"path": "x.txt", "content": "x"}"#, "--settings", &file], None);
    assert!(
        run.stderr.contains("`permissions.defaultMode` is not applied: it is \"bypassPermissions\""),
        "{}",
        run.stderr
    );
    assert!(
        run.json()["output"].as_str().unwrap().contains("the permission mode `default`"),
        "{}",
        run.stdout
    );
    assert!(!fx.ws().join("x.txt").exists());
}

/// Under `--code-mode` the script tool asks about nothing itself: each call its script makes is
/// decided by the rules and the mode as the model's own would be, so a mode refuses or asks about
/// a script's write and lets its read run. Rules may name the script tool (`deny code`).
#[test]
fn a_script_is_not_asked_about_but_each_of_its_calls_is() {
    let script = json!({"script": r#"
        const read = await tools.read({ path: "hello.txt" });
        let write;
        try { await tools.write({ path: "new.txt", content: "x\n" }); write = "written"; }
        catch (e) { write = `${e.kind}: ${e.message}`; }
        `${read.text.includes("hello")} | ${write}`
    "#});
    let expected = [
        ("default", "true | permission_denied: Permission denied (write "),
        ("acceptEdits", "true | written"),
        ("plan", "true | permission_denied: Permission denied (write "),
        ("dontAsk", "true | permission_denied: Permission denied (write "),
        ("bypassPermissions", "true | written"),
    ];
    for (mode, start) in expected {
        let fx = Fixture::new();
        let file = settings(&fx, json!({"permissions": {"defaultMode": mode}}));
        let args = script.to_string();
        for flag in ["--code-mode", "--code-mode=only"] {
            let _ = std::fs::remove_file(fx.ws().join("new.txt"));
            let run = fx.run(&["call", "code", &args, "--settings", &file, "--sandbox", "off", flag], None);
            let result = run.json();
            let output = result["output"].as_str().unwrap();
            assert_eq!(result["is_error"], false, "{mode} {flag}: {output}");
            assert!(output.starts_with(start), "{mode} {flag}: {output}");
            assert_eq!(fx.ws().join("new.txt").exists(), output.ends_with("written"), "{mode} {flag}");
        }
    }
    // A script's refused call names what would allow it, a rule that the settings accept.
    let fx = Fixture::new();
    let file = settings(&fx, json!({"permissions": {"allow": ["Write", "code"]}}));
    let run = fx.run(&["call", "code", &script.to_string(), "--settings", &file, "--code-mode"], None);
    assert_eq!(run.json()["output"], "true | written", "{}", run.stderr);
    // A rule may refuse scripts.
    let file = settings(&fx, json!({"permissions": {"deny": ["code"]}}));
    let run = fx.run(&["call", "code", &script.to_string(), "--settings", &file, "--code-mode"], None);
    let output = run.json()["output"].as_str().unwrap().to_owned();
    assert!(output.contains("refused by the rule `deny code`"), "{output}");
    // Without code mode, a rule naming the script tool names no tool.
    let run = fx.run(&["call", "read", r#"{"path": "hello.txt"}"#, "--settings", &file], None);
    assert!(run.usage_error().contains("no tool is named `code`"), "{}", run.stderr);
}

#[test]
fn a_path_that_may_not_be_read_may_not_be_changed_either() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir(ws.join("secrets")).unwrap();
    std::fs::write(ws.join(".env"), "API_KEY=secret123\n").unwrap();
    std::fs::write(ws.join("secrets/token"), "TOKEN\n").unwrap();
    let file = settings(
        &fx,
        json!({"permissions": {
            "defaultMode": "bypassPermissions",
            "deny": ["Read(./.env)"],
            "ask": ["Read(./secrets/**)"],
            "allow": ["Edit(./.env)"],
        }}),
    );
    // Before, an edit that missed showed the closest line of the file: the secret.
    let probe = json!({"path": ".env", "old_string": "API_KEY=secreX123", "new_string": "x"});
    for (tool, args) in [
        ("edit", probe),
        ("write", json!({"path": ".env", "content": "X=1\n"})),
        ("multi_edit", json!({"path": ".env", "edits": [{"old_string": "API", "new_string": "x"}]})),
        ("write", json!({"path": "secrets/new", "content": "x"})),
        ("edit", json!({"path": "secrets/token", "old_string": "TOKEN", "new_string": "x"})),
    ] {
        let run = fx.run(&["call", tool, &args.to_string(), "--settings", &file, "--sandbox", "off"], None);
        let output = run.json()["output"].as_str().unwrap().to_owned();
        assert!(!output.contains("secret123") && !output.contains("TOKEN"), "{tool} {args}: {output}");
        assert!(
            output.contains("Read(./.env)") || output.contains("Read(./secrets/**)"),
            "{tool} {args}: {output}"
        );
    }
    assert_eq!(std::fs::read_to_string(ws.join(".env")).unwrap(), "API_KEY=secret123\n");
    assert_eq!(std::fs::read_to_string(ws.join("secrets/token")).unwrap(), "TOKEN\n");
    assert!(!ws.join("secrets/new").exists());
    // Other paths are changed as before.
    let args = json!({"path": "hello.txt", "old_string": "hello", "new_string": "hi"});
    assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "edit", &args), Ran);
}

#[test]
fn a_rule_about_a_links_name_holds_for_what_it_leads_to() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink("hello.txt", ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink("sub", ws.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(".git", ws.join("meta")).unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    let file = settings(
        &fx,
        json!({"permissions": {
            "defaultMode": "acceptEdits",
            "deny": ["Read(./link.txt)", "Edit(./link.txt)", "Edit(./linkdir/**)"],
        }}),
    );
    let refused_by = |tool: &str, args: serde_json::Value, rule: &str| {
        let run = fx.run(&["call", tool, &args.to_string(), "--settings", &file, "--sandbox", "off"], None);
        let output = run.json()["output"].as_str().unwrap().to_owned();
        assert!(output.contains(&format!("refused by the rule `{rule}`")), "{tool} {args}: {output}");
    };
    refused_by("read", json!({"path": "link.txt"}), "deny Read(./link.txt)");
    refused_by("write", json!({"path": "link.txt", "content": "x"}), "deny Edit(./link.txt)");
    refused_by(
        "edit",
        json!({"path": "./sub/../link.txt", "old_string": "hello", "new_string": "x"}),
        "deny Edit(./link.txt)",
    );
    refused_by("write", json!({"path": "linkdir/new.txt", "content": "x"}), "deny Edit(./linkdir/**)");
    assert_eq!(std::fs::read_to_string(ws.join("hello.txt")).unwrap(), "hello\nworld\n");
    assert!(!ws.join("sub/new.txt").exists());
    // What the link leads to is not refused by its own name.
    assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "read", &json!({"path": "hello.txt"})), Ran);
    // A link into a protected directory leads no change there, in any mode (a command may have
    // made it); named outright, the path is asked about, `bypassPermissions` too.
    let file = settings(&fx, json!({"permissions": {"defaultMode": "bypassPermissions"}}));
    let hook = json!({"path": "meta/hooks/pre-commit", "content": "x"}).to_string();
    let run = fx.run(&["call", "write", &hook, "--settings", &file, "--sandbox", "off"], None);
    assert!(
        run.json()["output"].as_str().unwrap().contains("leads through a symbolic link"),
        "{}",
        run.stdout
    );
    let named = json!({"path": ".git/hooks/pre-commit", "content": "x"});
    assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "write", &named), Asked);
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    // Skills are ordinary edits, but not through a link to the rest of `.claude`.
    std::fs::create_dir(ws.join(".claude")).unwrap();
    std::os::unix::fs::symlink(".", ws.join(".claude/skills")).unwrap();
    let through = json!({"path": ".claude/skills/settings.json", "content": "{}"}).to_string();
    let run = fx.run(&["call", "write", &through, "--settings", &file, "--sandbox", "off"], None);
    assert_eq!(run.json()["is_error"], true, "{}", run.stdout);
    assert!(!ws.join(".claude/settings.json").exists());
}

#[test]
fn an_additional_directory_is_decided_as_the_workspace_is() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.dir.path().join("extra")).unwrap();
    std::fs::write(fx.dir.path().join("extra/notes.txt"), "notes\n").unwrap();
    let read = json!({"path": "../extra/notes.txt"});
    let write = json!({"path": "../extra/new.txt", "content": "x"});
    // default, acceptEdits, plan, dontAsk, bypassPermissions
    let writes = [Asked, Ran, Refused, Refused, Ran];
    for (mode, expected) in
        ["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"].iter().zip(writes)
    {
        let file = settings(
            &fx,
            json!({"permissions": {"defaultMode": mode, "additionalDirectories": ["../extra"]}}),
        );
        assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "read", &read), Ran, "{mode}");
        assert_eq!(outcome(&fx, &file, &["--sandbox", "off"], "write", &write), expected, "{mode}");
        std::fs::remove_file(fx.dir.path().join("extra/new.txt")).ok();
        // Elsewhere outside the root is still outside.
        let args = json!({"path": "../outside.txt"}).to_string();
        let run = fx.run(&["call", "read", &args, "--settings", &file, "--sandbox", "off"], None);
        assert!(
            run.json()["output"].as_str().unwrap().contains("is outside the workspace root"),
            "{}",
            run.stdout
        );
    }
}
