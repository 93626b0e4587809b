//! Checks after edits from `--verify EXT=COMMAND` and the settings file's `verify`, through the
//! built binary: their outcome in the edit's result, a time limit, the flag winning over the
//! file, entries that cannot be meant refused before anything runs, and the sandbox they run in.

use crate::common;

use common::Fixture;
use serde_json::json;

/// A settings file of `value`, in the mode that edits without asking (`tools call` cannot ask).
fn settings(fx: &Fixture, mut value: serde_json::Value) -> String {
    let path = fx.dir.path().join("settings.json");
    value["permissions"] = json!({"defaultMode": "acceptEdits"});
    std::fs::write(&path, value.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn a_flag_checks_each_edit_of_its_extension() {
    let fx = Fixture::new();
    let write = json!({"path": "a.txt", "content": "hello\n"}).to_string();
    let run = fx.run(&["call", "write", &write, "--verify", "txt,md=grep -q 'hello' {file}"], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let out = run.json();
    assert!(out["output"].as_str().unwrap().ends_with("\n\nCheck `grep -q hello ./a.txt` passed."), "{out}");
    assert_eq!(out["metadata"]["verification"]["status"], "passed");

    let edit = json!({"path": "a.txt", "old_string": "hello", "new_string": "bye"}).to_string();
    let run =
        fx.run(&["call", "edit", &edit, "--verify", "txt=sh -c 'echo \"not hello\" >&2; exit 3'"], None);
    // The edit is applied; the check's failure is in its result.
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let text = run.json()["output"].as_str().unwrap().to_owned();
    assert!(
        text.contains("failed with exit code 3 (the edit of a.txt is applied). Its output:\nnot hello"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(fx.ws().join("a.txt")).unwrap(), "bye\n");

    // Other extensions are not checked.
    let other = json!({"path": "b.rs", "content": "x\n"}).to_string();
    let run = fx.run(&["call", "write", &other, "--verify", "txt=false"], None);
    assert!(run.json()["metadata"].get("verification").is_none(), "{}", run.stdout);
}

#[test]
fn the_settings_file_sets_checks_with_time_limits_and_the_flag_wins() {
    let fx = Fixture::new();
    let file = settings(
        &fx,
        json!({"verify": {
            "txt": {"command": ["sleep", "5"], "timeout": 0.5},
            "md": ["false"],
        }}),
    );
    let write = json!({"path": "a.txt", "content": "x\n"}).to_string();
    let started = std::time::Instant::now();
    let run = fx.run(&["call", "write", &write, "--settings", &file], None);
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "killed at its limit");
    let out = run.json();
    assert_eq!(out["metadata"]["verification"]["status"], "timed_out", "{out}");
    assert!(
        out["output"]
            .as_str()
            .unwrap()
            .contains("Check `sleep 5` timed out: it did not finish within its limit of 500ms"),
        "{out}"
    );
    // The flag's check replaces the file's for `txt`; the file's `md` entry still applies.
    let run = fx.run(&["call", "write", &write, "--settings", &file, "--verify", "txt=true"], None);
    assert_eq!(run.json()["metadata"]["verification"]["status"], "passed", "{}", run.stdout);
    let md = json!({"path": "a.md", "content": "x\n"}).to_string();
    let run = fx.run(&["call", "write", &md, "--settings", &file, "--verify", "txt=true"], None);
    assert_eq!(run.json()["metadata"]["verification"]["status"], "failed", "{}", run.stdout);
}

#[test]
fn turn_checks_the_edits_of_its_calls() {
    let fx = Fixture::new();
    let message = json!({"role": "assistant", "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "write", "arguments": json!({"path": "a.txt", "content": "x\n"}).to_string()},
    }]});
    let run = fx.run(
        &["turn", "--format", "openai-chat", "--verify", "txt=sh -c 'exit 4'"],
        Some(message.to_string().as_bytes()),
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let results = run.json();
    let content = results[0]["content"].as_str().unwrap();
    assert!(content.contains("Check `sh -c exit 4` failed with exit code 4"), "{content}");
}

#[test]
fn checks_that_cannot_be_meant_are_refused_before_anything_runs() {
    let fx = Fixture::new();
    let write = json!({"path": "a.txt", "content": "x\n"}).to_string();
    let run = fx.run(&["call", "write", &write, "--verify", "rustfmt {file}"], None);
    assert!(run.usage_error().contains("\"rustfmt {file}\" is not EXT=COMMAND"), "{}", run.stderr);
    let run = fx.run(&["call", "write", &write, "--verify", "txt=true", "--verify", "md,txt=false"], None);
    assert_eq!(
        run.usage_error(),
        "--verify names the extension \"txt\" twice; give one command per extension"
    );
    let file = settings(&fx, json!({"verify": {"txt": "cargo check"}}));
    let run = fx.run(&["call", "write", &write, "--settings", &file], None);
    assert_eq!(
        run.usage_error(),
        format!(
            "--settings {file}: `verify.txt` must be a command as a list of strings (`[\"rustfmt\", \"--check\", \
             \"{{file}}\"]`) or an object with `command` and `timeout`"
        )
    );
    assert!(!fx.ws().join("a.txt").exists(), "nothing ran");
}

/// A check is a command like any `bash` command: confined to the workspace by the sandbox, even
/// when its program lies outside it.
#[test]
fn a_check_runs_in_the_sandbox_bash_runs_in() {
    let fx = Fixture::new();
    // Not beneath the temporary directory, which sandboxed commands may write.
    let base = outside_temp_base().join(format!("verify-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    let outside = base.join("written-by-the-check");
    let _ = std::fs::remove_file(&outside);
    let script = base.join("check.sh");
    std::fs::write(&script, format!("#!/bin/sh\necho pwned > '{}'\n", outside.display())).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&script).status().unwrap();
    let write = json!({"path": "a.txt", "content": "x\n"}).to_string();
    let flag = format!("txt={}", script.display());
    let run = fx.run(&["call", "write", &write, "--verify", &flag], None);
    assert_eq!(run.json()["metadata"]["verification"]["status"], "failed", "{}", run.stdout);
    assert!(!outside.exists(), "the sandbox kept the check inside the workspace");
    // The same script run unconfined does write there: the check above can fail.
    let run = fx.run(&["call", "write", &write, "--verify", &flag, "--sandbox", "off"], None);
    assert_eq!(run.json()["metadata"]["verification"]["status"], "passed", "{}", run.stdout);
    assert!(outside.exists());
    let _ = std::fs::remove_dir_all(&base);
}

include!("../../../tool-sandbox/tests/support/outside_temp.rs");
