//! A hook script written for Claude Code works unchanged through the built binary: it is found
//! through `$CLAUDE_PROJECT_DIR`, its matchers name Claude Code's tools (`Bash`,
//! `mcp__SERVER__TOOL`), and its input's `tool_name` is Claude Code's (ours in
//! `tool_name_native`).

use crate::common;

use common::{Fixture, TOOLS};
use serde_json::json;

/// Refuses `rm -rf` in `Bash` calls, as such scripts do, and logs every call it sees.
const GUARD: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'"tool_name":"Bash"'*'rm -rf'*) echo "no rm -rf in $CLAUDE_PROJECT_DIR" >&2; exit 2 ;;
esac
name=${input#*\"tool_name\":\"}
native=${input#*\"tool_name_native\":\"}
echo "${name%%\"*} ${native%%\"*}" >> "$CLAUDE_PROJECT_DIR/hook.log"
exit 0
"#;

/// Puts [`GUARD`] in the workspace's `.claude/hooks`; the hook command that runs it, as Claude
/// Code's settings name it.
fn install_guard(ws: &std::path::Path) -> &'static str {
    let hooks = ws.join(".claude/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("guard.sh"), GUARD).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(hooks.join("guard.sh")).status().unwrap();
    r#""$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh"#
}

#[test]
fn a_hook_written_for_claude_code_works_unchanged() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let command = install_guard(&ws);
    let settings = fx.dir.path().join("settings.json");
    let entry =
        |matcher: &str| json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]});
    let text = json!({
        "permissions": {"defaultMode": "bypassPermissions"},
        "hooks": {"PreToolUse": [entry("Bash"), entry("Edit|Write"), entry("mcp__inner__.*")]},
    });
    std::fs::write(&settings, text.to_string()).unwrap();
    let mcp = fx.dir.path().join("mcp.json");
    let server =
        json!({"command": TOOLS, "args": ["serve", "--sandbox", "off", "--root", ws.to_str().unwrap()]});
    std::fs::write(&mcp, json!({"mcpServers": {"inner": server}}).to_string()).unwrap();
    let (settings, mcp) = (settings.to_str().unwrap(), mcp.to_str().unwrap());
    let call = |tool: &str, args: serde_json::Value| {
        let args = args.to_string();
        fx.run(&["call", tool, &args, "--settings", settings, "--mcp-config", mcp], None)
    };

    let rm = call("bash", json!({"command": "rm -rf hello.txt"}));
    assert_eq!(rm.code, 1, "{}{}", rm.stdout, rm.stderr);
    let root = std::fs::canonicalize(&ws).unwrap();
    let output = rm.json()["output"].as_str().unwrap().to_owned();
    assert!(output.ends_with(&format!("refused it: no rm -rf in {}", root.display())), "{output}");
    assert!(ws.join("hello.txt").exists());

    assert_eq!(call("bash", json!({"command": "echo hi"})).code, 0);
    assert_eq!(call("write", json!({"path": "new.txt", "content": "x\n"})).code, 0);
    assert_eq!(call("read", json!({"path": "hello.txt"})).code, 0);
    assert_eq!(call("inner__read", json!({"path": "hello.txt"})).code, 0);
    let log = std::fs::read_to_string(ws.join("hook.log")).unwrap();
    assert_eq!(log, "Bash bash\nWrite write\nmcp__inner__read inner__read\n");
}

/// Claude Code's file tools name their path `file_path`, an absolute path: a hook written for
/// them finds it (beside our `path`), and one that rewrites it moves the call.
#[test]
fn a_hook_reads_and_rewrites_claude_codes_file_path() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let root = std::fs::canonicalize(&ws).unwrap();
    let guard = format!(
        r#"input=$(cat)
case "$input" in
  *'"file_path":"{root}/.env"'*) echo "no .env" >&2; exit 2 ;;
  *'"file_path":"{root}/draft.txt"'*) echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "updatedInput": {{"file_path": "{root}/final.txt", "content": "moved"}}}}}}' ;;
esac"#,
        root = root.display()
    );
    let settings = fx.dir.path().join("settings.json");
    let entry = json!({"matcher": "Write|Read", "hooks": [{"type": "command", "command": guard}]});
    std::fs::write(
        &settings,
        json!({"permissions": {"defaultMode": "acceptEdits"}, "hooks": {"PreToolUse": [entry]}}).to_string(),
    )
    .unwrap();
    let settings = settings.to_str().unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        fx.run(&["call", tool, &args.to_string(), "--settings", settings, "--sandbox", "off"], None)
    };
    std::fs::write(ws.join(".env"), "KEY=1\n").unwrap();
    let read = call("read", json!({"path": "sub/../.env"}));
    assert!(read.json()["output"].as_str().unwrap().ends_with("refused it: no .env"), "{}", read.stdout);
    let write = call("write", json!({"path": "draft.txt", "content": "x"}));
    assert_eq!(write.code, 0, "{}{}", write.stdout, write.stderr);
    assert_eq!(std::fs::read_to_string(ws.join("final.txt")).unwrap(), "moved");
    assert!(!ws.join("draft.txt").exists());
}

/// A patch reaches a hook written for Claude Code's tools file by file: `Write` with `file_path`
/// and `content` for a file it adds, `Edit` with `file_path`, `old_string` and `new_string` for
/// one it changes; a hook that refuses one of its files refuses the patch, and nothing is written.
#[test]
fn a_patch_reaches_claude_code_hooks_as_one_event_per_file() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let root = std::fs::canonicalize(&ws).unwrap();
    let log = root.join("hook.log");
    let guard = format!(
        r#"input=$(cat); printf '%s\n' "$input" >> {log}
case "$input" in
  *'"file_path":"{root}/Cargo.lock"'*) echo "no lock files" >&2; exit 2 ;;
esac"#,
        log = log.display(),
        root = root.display()
    );
    let settings = fx.dir.path().join("settings.json");
    let entry = json!({"matcher": "Edit|Write", "hooks": [{"type": "command", "command": guard}]});
    let text = json!({"permissions": {"defaultMode": "acceptEdits"}, "hooks": {"PreToolUse": [entry]}});
    std::fs::write(&settings, text.to_string()).unwrap();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    let patch = |second: &str| {
        format!(
            "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** Add File: {second}\n+made\n*** End Patch\n"
        )
    };
    let call = |patch: String| {
        let args = json!({"patch": patch}).to_string();
        fx.run(
            &["call", "apply_patch", &args, "--settings", settings.to_str().unwrap(), "--sandbox", "off"],
            None,
        )
    };
    let refused = call(patch("Cargo.lock"));
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(refused.json()["output"].as_str().unwrap().contains("no lock files"), "{}", refused.stdout);
    // Headers spelled as leniently as the patch tool reads them.
    let lenient = "*** Begin Patch\n  *** Add File:Cargo.lock\n+made\n*** End Patch\n".to_owned();
    let refused = call(lenient);
    assert!(refused.json()["output"].as_str().unwrap().contains("no lock files"), "{}", refused.stdout);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\ntwo\n");
    assert!(!ws.join("Cargo.lock").exists());
    std::fs::remove_file(&log).unwrap();
    let done = call(patch("new.txt"));
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    let events: Vec<serde_json::Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["tool_name"], "Edit");
    assert_eq!(events[0]["tool_input"]["file_path"], json!(root.join("a.txt")));
    assert_eq!(events[0]["tool_input"]["old_string"], "one\ntwo\n");
    assert_eq!(events[0]["tool_input"]["new_string"], "one\nTWO\n");
    assert_eq!(events[1]["tool_name"], "Write");
    assert_eq!(events[1]["tool_input"]["file_path"], json!(root.join("new.txt")));
    assert_eq!(events[1]["tool_input"]["content"], "made\n");
    assert!(
        events
            .iter()
            .all(|e| e["tool_name_native"] == "apply_patch" && e["tool_input"].get("patch").is_none())
    );
    // Each file is a run of the hook: a patch of more files than are shown is refused, unwritten.
    let many: String = (0..257).map(|n| format!("*** Add File: many/{n}.txt\n+x\n")).collect();
    let refused = call(format!("*** Begin Patch\n{many}*** End Patch\n"));
    let output = refused.json()["output"].as_str().unwrap().to_owned();
    assert!(
        refused.code == 1 && output.contains("changes 257 files") && output.contains("at most 256"),
        "{output}"
    );
    assert!(!ws.join("many").exists());
    // What a hook scanning contents is shown is what the patch writes, read as the tool reads it.
    std::fs::remove_file(&log).unwrap();
    std::fs::write(ws.join("b.txt"), "x\n***\ny\nz\n").unwrap();
    let tricky = "*** Begin Patch\n*** Update File: b.txt\n@@\n x\n ***\n-y\n+AKIA1\n z\n*** End of File\n*** End Patch\n";
    let done = call(tricky.to_owned());
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    let event: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(event["tool_input"]["new_string"], "x\n***\nAKIA1\nz\n", "{event}");
}

/// A hook's `if` (Claude Code 2.1.85) is a permission rule: the hook runs only for the calls it
/// matches, a part of a compound command being enough, as for a deny rule.
#[test]
fn a_hook_runs_only_for_the_calls_its_if_matches() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir(ws.join("src")).unwrap();
    let log = |name: &str| format!(r#"echo {name} >> "$CLAUDE_PROJECT_DIR/if.log""#);
    let settings = fx.dir.path().join("settings.json");
    let hook =
        |condition: &str, name: &str| json!({"type": "command", "if": condition, "command": log(name)});
    let text = json!({
        "permissions": {"defaultMode": "bypassPermissions"},
        "hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [hook("Bash(git *)", "git")]},
            {"matcher": "Write|Edit", "hooks": [hook("Edit(./src/**)", "src")]},
        ]},
    });
    std::fs::write(&settings, text.to_string()).unwrap();
    let settings = settings.to_str().unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        let run =
            fx.run(&["call", tool, &args.to_string(), "--settings", settings, "--sandbox", "off"], None);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert!(!run.stderr.contains("not applied"), "{}", run.stderr);
    };
    call("bash", json!({"command": "echo hi"}));
    call("bash", json!({"command": "echo hi && git --version"}));
    call("write", json!({"path": "notes.txt", "content": "x"}));
    call("write", json!({"path": "src/../src/a.txt", "content": "x"}));
    // A patch: each file's path against the `if`; a link on the way followed before `..`.
    let patch = "*** Begin Patch\n*** Add File: notes2.txt\n+x\n*** Add File: src/b.txt\n+x\n*** End Patch\n";
    call("apply_patch", json!({"patch": patch}));
    std::fs::create_dir(ws.join("src/deep")).unwrap();
    std::os::unix::fs::symlink("src/deep", ws.join("l")).unwrap();
    call("write", json!({"path": "l/../c.txt", "content": "x"}));
    assert!(ws.join("src/c.txt").exists());
    // A patch of one file changed; a write through a link named by an `if` on the link.
    let patch = "*** Begin Patch\n*** Update File: src/b.txt\n@@\n-x\n+y\n*** End Patch\n";
    call("apply_patch", json!({"patch": patch}));
    std::os::unix::fs::symlink("src", ws.join("s")).unwrap();
    call("write", json!({"path": "s/d.txt", "content": "x"}));
    assert_eq!(std::fs::read_to_string(ws.join("if.log")).unwrap(), "git\nsrc\nsrc\nsrc\nsrc\nsrc\n");
}

/// An `if` naming `Write` or a link fires for a patch's added file and a write through the link.
#[test]
fn a_hook_if_on_write_or_on_a_link_fires_for_patches_and_links() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir(ws.join("secrets")).unwrap();
    std::os::unix::fs::symlink("secrets", ws.join("l")).unwrap();
    let deny = |condition: &str| json!({"type": "command", "if": condition, "command": format!("echo refused {condition} >&2; exit 2")});
    let settings = fx.dir.path().join("settings.json");
    let text = json!({
        "permissions": {"defaultMode": "bypassPermissions"},
        "hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [deny("Write(*.lock)"), deny("Edit(./l/**)")]}]},
    });
    std::fs::write(&settings, text.to_string()).unwrap();
    let settings = settings.to_str().unwrap();
    let call = |tool: &str, args: serde_json::Value| {
        fx.run(&["call", tool, &args.to_string(), "--settings", settings, "--sandbox", "off"], None)
    };
    let added =
        call("apply_patch", json!({"patch": "*** Begin Patch\n*** Add File: new.lock\n+x\n*** End Patch\n"}));
    assert!(added.code == 1 && added.stdout.contains("refused Write(*.lock)"), "{}", added.stdout);
    assert!(!ws.join("new.lock").exists());
    let linked = call("write", json!({"path": "l/x.txt", "content": "x"}));
    assert!(linked.code == 1 && linked.stdout.contains("refused Edit(./l/**)"), "{}", linked.stdout);
    assert!(!ws.join("secrets/x.txt").exists());
}

/// `SessionStart` and `SessionEnd` hooks run when `tools serve` starts and when its client goes
/// away, with Claude Code's input; their matchers see the `source` and the `reason`, and a
/// failing one is named on standard error without stopping the server.
#[test]
fn session_start_and_end_hooks_run_around_tools_serve() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let settings = fx.dir.path().join("settings.json");
    let hook = |name: &str| json!({"type": "command", "command": format!("cat > \"$CLAUDE_PROJECT_DIR/{name}.json\"")});
    let text = json!({"hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [hook("start")]},
            {"matcher": "resume", "hooks": [hook("resumed")]},
            {"hooks": [{"type": "command", "command": "echo broken >&2; exit 3"}]}
        ],
        "SessionEnd": [{"hooks": [hook("end")]}]
    }});
    std::fs::write(&settings, text.to_string()).unwrap();
    let run = fx.run(&["serve", "--settings", settings.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let read = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(ws.join(format!("{name}.json")))
            .unwrap_or_else(|e| panic!("{name}.json: {e}; {}", run.stderr));
        serde_json::from_str(&text).unwrap()
    };
    let start = read("start");
    assert_eq!(
        (start["hook_event_name"].as_str(), start["source"].as_str()),
        (Some("SessionStart"), Some("startup"))
    );
    let end = read("end");
    assert_eq!(
        (end["hook_event_name"].as_str(), end["reason"].as_str()),
        (Some("SessionEnd"), Some("prompt_input_exit"))
    );
    assert_eq!(start["session_id"], end["session_id"]);
    assert_eq!(start["cwd"].as_str(), ws.canonicalize().unwrap().to_str());
    assert!(!ws.join("resumed.json").exists(), "a matcher for another source ran");
    assert!(
        run.stderr.contains("tools: the SessionStart hook `echo broken >&2; exit 3` exited with code 3"),
        "{}",
        run.stderr
    );
}

/// Typing into a shell session runs commands: a `Bash` hook sees each line typed with
/// `bash_input` (as `command`, with `tool_name` `Bash`) and refuses it as it refuses a `bash` call.
#[tokio::test]
async fn a_bash_hook_sees_what_is_typed_into_a_session() {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let fx = Fixture::new();
    let ws = fx.ws();
    let command = install_guard(&ws);
    let settings = fx.dir.path().join("settings.json");
    let text = json!({
        "permissions": {"defaultMode": "bypassPermissions"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]},
    });
    std::fs::write(&settings, text.to_string()).unwrap();
    let serve = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.arg("serve").arg("--settings").arg(&settings).arg("--sandbox").arg("off");
        cmd.current_dir(&ws).env("XDG_DATA_HOME", fx.dir.path().join("data"));
        cmd.stderr(std::process::Stdio::null());
    });
    let client = ().serve(TokioChildProcess::new(serve).unwrap()).await.unwrap();
    let call = |tool: &str, arguments: serde_json::Value| {
        let serde_json::Value::Object(arguments) = arguments else { unreachable!() };
        let params = rmcp::model::CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let client = &client;
        async move {
            let result = serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap();
            (result["isError"] == true, result["content"][0]["text"].as_str().unwrap_or_default().to_owned())
        }
    };
    let (failed, started) =
        call("bash", json!({"command": "sh", "interactive": true, "background": true})).await;
    assert!(!failed, "{started}");
    let id =
        started.split("session ").nth(1).and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next());
    let id: u64 = id.and_then(|id| id.parse().ok()).unwrap_or_else(|| panic!("{started}"));
    let (failed, refused) = call(
        "bash_input",
        json!({"session_id": id, "text": "rm -rf hello.txt; echo gone\n", "wait_ms": 300}),
    )
    .await;
    assert!(failed && refused.contains("refused it: no rm -rf in"), "{refused}");
    // The hook is shown the line as the terminal leaves it: an erased character, a line
    // continued after a backslash, do not hide `rm -rf` from it.
    for text in ["rm -rX\u{7f}f hello.txt\n", "r\\\nm -rf hello.txt\n"] {
        let (failed, refused) =
            call("bash_input", json!({"session_id": id, "text": text, "wait_ms": 300})).await;
        assert!(failed && refused.contains("refused it: no rm -rf in"), "{text:?}: {refused}");
    }
    // Keys whose effect on the line cannot be known: the hook cannot be shown the command, so
    // it is asked about (and refused here, where nobody answers).
    let keys =
        json!({"session_id": id, "text": "rm -r hello.txt", "keys": ["left", "enter"], "wait_ms": 300});
    let (failed, refused) = call("bash_input", keys).await;
    assert!(failed && refused.contains("whose effect on the line cannot be known"), "{refused}");
    // So are a history expansion and a completion, which a shell turns into another line.
    for text in ["^echo^rm\n", "rm -r\t hello.txt\n"] {
        let (failed, refused) =
            call("bash_input", json!({"session_id": id, "text": text, "wait_ms": 300})).await;
        assert!(
            failed && refused.contains("whose effect on the line cannot be known"),
            "{text:?}: {refused}"
        );
    }
    let (failed, typed) =
        call("bash_input", json!({"session_id": id, "text": "echo typed\n", "until": "typed"})).await;
    assert!(!failed && typed.contains("typed"), "{typed}");
    assert!(ws.join("hello.txt").exists());
    let log = std::fs::read_to_string(ws.join("hook.log")).unwrap();
    // The refused lines are not logged (the hook stopped first); those it could not be shown,
    // and the last one, are.
    assert_eq!(log, "Bash bash\nBash bash_input\nBash bash_input\nBash bash_input\nBash bash_input\n");
    client.cancel().await.unwrap();
}
