//! `--settings FILE` on `call`, `turn` and `serve`: the manual's settings file, run through the
//! built binary, and a malformed one refused before anything runs.

use crate::common;

use common::Fixture;
use serde_json::json;

/// The manual's settings file (tool-runtime's `docs/permissions.md`), written into the fixture
/// (its hooks need scripts the manual leaves to the user: this test gives them).
fn manual_settings(fx: &Fixture) -> String {
    let manual = include_str!("../../../tool-runtime/docs/permissions.md");
    let open = "```json\n";
    let from = manual.find(open).expect("a json block") + open.len();
    let to = from + manual[from..].find("```").expect("closing fence");
    let path = fx.dir.path().join("settings.json");
    std::fs::write(&path, &manual[from..to]).unwrap();
    let hooks = fx.ws().join(".claude/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    // Refuses `curl`, as a user's check-command.sh might.
    std::fs::write(
        hooks.join("check-command.sh"),
        "#!/bin/bash\ncase \"$(cat)\" in *'\"command\":\"curl'*) echo 'no network from here' >&2; exit 2 ;; esac\n",
    )
    .unwrap();
    std::process::Command::new("chmod").arg("+x").arg(hooks.join("check-command.sh")).status().unwrap();
    path.display().to_string()
}

#[test]
fn call_applies_the_manual_settings() {
    let fx = Fixture::new();
    let settings = manual_settings(&fx);
    let call = |args: serde_json::Value| {
        let args = args.to_string();
        fx.run(&["call", "bash", &args, "--settings", &settings], None)
    };
    let status = call(json!({"command": "ls hello.txt | wc -l"}));
    assert_eq!(status.code, 0, "{}{}", status.stdout, status.stderr);
    assert_eq!(status.json()["output"].as_str().unwrap().trim(), "1");

    let push = call(json!({"command": "git push origin main"}));
    assert_eq!(push.code, 1);
    let output = push.json()["output"].as_str().unwrap().to_owned();
    assert!(
        output.contains(&format!(
            "the rule `ask Bash(git push:*)` in {settings} (permissions.ask) says to ask first, and nobody is here to answer"
        )),
        "{output}"
    );

    let rm = call(json!({"command": "rm -rf hello.txt"}));
    assert_eq!(rm.code, 1);
    assert!(rm.json()["output"].as_str().unwrap().contains("`deny Bash(rm -rf:*)`"), "{}", rm.stdout);
    assert!(fx.ws().join("hello.txt").exists());

    let curl = call(json!({"command": "curl https://example.com"}));
    assert_eq!(curl.code, 1);
    assert!(
        curl.json()["output"].as_str().unwrap().ends_with("refused it: no network from here"),
        "{}",
        curl.stdout
    );

    // Paths: `Read(./.env)` is denied, outside the root is denied, `--allow-outside-root` opens it.
    std::fs::write(fx.ws().join(".env"), "TOKEN=x\n").unwrap();
    let env = fx.run(&["call", "read", r#"{"path": ".env"}"#, "--settings", &settings], None);
    assert!(env.json()["output"].as_str().unwrap().contains("`deny Read(./.env)`"), "{}", env.stdout);
    let outside = fx.dir.path().join("outside.txt").display().to_string();
    let args = json!({"path": outside}).to_string();
    let refused = fx.run(&["call", "read", &args, "--settings", &settings], None);
    assert!(
        refused.json()["output"].as_str().unwrap().contains("is outside the workspace root"),
        "{}",
        refused.stdout
    );
    let opened = fx.run(&["call", "read", &args, "--settings", &settings, "--allow-outside-root"], None);
    assert!(opened.json()["output"].as_str().unwrap().contains("secret"), "{}", opened.stdout);
}

#[test]
fn turn_applies_the_settings_to_every_call() {
    let fx = Fixture::new();
    let settings = manual_settings(&fx);
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"git status --short || true\"}"}},
        {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"rm -rf x\"}"}},
    ]});
    let run = fx.run(
        &["turn", "--format", "openai-chat", "--settings", &settings],
        Some(message.to_string().as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = run.json();
    assert!(results[1]["content"].as_str().unwrap().contains("`deny Bash(rm -rf:*)`"), "{results}");
    assert!(!results[0]["content"].as_str().unwrap().contains("refused"), "{results}");
}

#[test]
fn a_malformed_settings_file_is_a_usage_error_naming_the_rule() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("bad.json");
    std::fs::write(&path, r#"{"permissions": {"deny": ["Bash(rm -rf:*"]}}"#).unwrap();
    let path = path.display().to_string();
    for command in [&["call", "ls"][..], &["serve"][..]] {
        let mut args = command.to_vec();
        args.extend(["--settings", &path]);
        let run = fx.run(&args, None);
        assert_eq!(
            run.usage_error(),
            format!(
                "--settings {path}: rule `Bash(rm -rf:*` in {path} (permissions.deny): a pattern must end with `)` and nothing may follow it"
            )
        );
    }
}

/// The issue's bypasses of `Bash(read-only)`, `Bash(rm -rf:*)` and `Read(./.env)`, run for real
/// through the binary with the manual's settings: none of them may have its effect.
#[test]
fn the_manual_rules_hold_against_known_bypasses() {
    let fx = Fixture::new();
    let settings = manual_settings(&fx);
    let call = |command: &str| {
        let args = json!({ "command": command }).to_string();
        let run = fx.run(&["call", "bash", &args, "--settings", &settings], None);
        assert_eq!(run.code, 1, "{command}: {}{}", run.stdout, run.stderr);
        run.json()["output"].as_str().unwrap().to_owned()
    };
    // Options that run a program or write a file are not read-only, however spelled: the
    // the manual's default for Bash (ask) applies, and nobody is here to answer.
    for command in [
        "git grep --no-index --open='touch pwned' hello",
        "git grep --no-index --op='touch pwned' hello",
        "git grep --no-index --open-files-in='touch pwned' hello",
        "git grep --no-index -iO'touch pwned' hello",
        "printf 'x' | sort --o=pwned",
        "date --s=2001-01-01",
    ] {
        let output = call(command);
        assert!(output.contains("the default for `bash` says to ask first"), "{command}: {output}");
    }
    assert!(!fx.ws().join("pwned").exists(), "a refused command ran");
    for command in [
        "if true; then rm -rf hello.txt; fi",
        "command rm -rf hello.txt",
        "env rm -fr hello.txt",
        "bash -c 'rm -r -f hello.txt'",
        "/bin/rm --recursive --force hello.txt",
        "rm${IFS}-rf hello.txt",
    ] {
        let output = call(command);
        assert!(output.contains("`deny Bash(rm -rf:*)`"), "{command}: {output}");
    }
    assert!(fx.ws().join("hello.txt").exists());
    std::fs::write(fx.ws().join(".env"), "TOKEN=hunter2\n").unwrap();
    for command in ["cat .env", "grep TOKEN .env", "cat ./hello.txt ../ws/.env", "grep -r TOKEN"] {
        let output = call(command);
        assert!(output.contains("`deny Read(./.env)`"), "{command}: {output}");
        assert!(!output.contains("hunter2"), "{command}: {output}");
    }
}

#[test]
fn searches_and_listings_skip_what_read_rules_deny_or_ask_about() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("read-rules.json");
    std::fs::write(&path, r#"{"permissions": {"deny": ["Read(./.env)"], "ask": ["Read(./secrets/**)"]}}"#)
        .unwrap();
    let settings = path.display().to_string();
    std::fs::write(fx.ws().join(".env"), "TOKEN=from-env\n").unwrap();
    std::fs::create_dir_all(fx.ws().join("secrets")).unwrap();
    std::fs::write(fx.ws().join("secrets/key.txt"), "TOKEN=from-secrets\n").unwrap();
    std::fs::write(fx.ws().join("plain.txt"), "TOKEN=plain\n").unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        let run = fx.run(&["call", tool, &args.to_string(), "--settings", &settings], None);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        run.json()["output"].as_str().unwrap().to_owned()
    };
    let denied = format!("refused by the rule `deny Read(./.env)` in {settings} (permissions.deny).");
    let asked =
        format!("the rule `ask Read(./secrets/**)` in {settings} (permissions.ask) says to ask first");

    let env = call("grep", json!({"pattern": "TOKEN", "glob": ".env"}));
    assert!(!env.contains("from-env"), "{env}");
    assert!(env.ends_with(&format!("[1 file not searched: {denied}]")), "{env}");
    let all = call("grep", json!({"pattern": "TOKEN", "glob": "{.env,**/*.txt}"}));
    assert!(all.starts_with("plain.txt\n  1: TOKEN=plain\n"), "{all}");
    assert!(!all.contains("from-"), "{all}");
    assert!(all.contains(&format!("[1 file not searched: {denied}]")), "{all}");
    assert!(all.contains(&format!("[1 file not searched: {asked}")), "{all}");

    let listed = call("glob", json!({"pattern": "**/*", "hidden": true}));
    assert!(listed.lines().any(|line| line == "plain.txt") && !listed.contains("key.txt"), "{listed}");
    assert!(listed.contains(&format!("[1 file not listed: {denied}]")), "{listed}");
    let tree = call("ls", json!({}));
    assert!(!tree.contains(".env") || tree.contains("Read(./.env)"), "{tree}");
    assert!(!tree.contains("key.txt"), "{tree}");
    assert!(tree.contains(&format!("[2 entries not listed: {asked}")), "{tree}");
}
