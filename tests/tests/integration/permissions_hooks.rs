//! Hook commands in Claude Code's shape, run as real bash scripts: deny (exit 2 and JSON),
//! rewrite (validated again), a time limit, a crash, garbage output, PostToolUse feedback.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_runtime::permissions::{Policy, PolicyExt, Rules, Settings};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolCall, ToolOutput, ToolResult, ToolSpec, spec::FnTool,
};
use tool_tests::TempDir;

/// A tool that echoes its `text` argument and counts its runs.
fn echo_tool(runs: Arc<AtomicUsize>) -> FnTool {
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": false,
    });
    FnTool::new(ToolSpec::new("echo", "Echo the text.", schema), move |_, args: Value| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default().to_owned()))
        }
    })
}

/// Writes `script` as a bash script in `dir` and returns the settings running it for `event`.
fn settings(dir: &Path, event: &str, matcher: &str, script: &str, timeout: f64) -> String {
    let path = dir.join(format!("{event}-hook.sh"));
    std::fs::write(&path, format!("#!/bin/bash\n{script}\n")).unwrap();
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [
        {"type": "command", "command": format!("bash {}", path.display()), "timeout": timeout}
    ]}]}})
    .to_string()
}

struct Setup {
    dispatcher: Dispatcher,
    runs: Arc<AtomicUsize>,
    _dir: TempDir,
}

fn setup(tag: &str, event: &str, matcher: &str, script: &str, timeout: f64) -> Setup {
    let dir = TempDir::new(tag);
    let text = settings(dir.path(), event, matcher, script, timeout);
    let loaded = Settings::parse(&text, "settings.json", Rules::builder(dir.path())).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder().tool(echo_tool(runs.clone())).build().unwrap();
    let dispatcher =
        Dispatcher::builder(registry).session_id("s-1").policy(Policy::from_settings(loaded)).build();
    Setup { dispatcher, runs, _dir: dir }
}

async fn call(setup: &Setup, text: &str) -> ToolResult {
    let call = ToolCall::new("call-7", "echo", json!({"text": text}).to_string());
    setup.dispatcher.run(call, CancellationToken::new()).await
}

fn assert_not_run(setup: &Setup) {
    assert_eq!(setup.runs.load(Ordering::SeqCst), 0, "the tool must not have run");
}

#[tokio::test]
async fn exit_code_2_denies_with_the_standard_error_as_the_reason() {
    let s = setup("hook-exit2", "PreToolUse", "echo", "echo 'no echoing today' >&2; exit 2", 10.0);
    let result = call(&s, "hi").await;
    assert!(result.output.is_error);
    assert_eq!(
        result.output.text_content(),
        format!(
            "The call to `echo` was denied: the PreToolUse hook `bash {}/PreToolUse-hook.sh` refused it: no echoing today",
            s._dir.path().display()
        )
    );
    assert_not_run(&s);
}

#[tokio::test]
async fn the_event_on_stdin_is_claude_codes_and_a_json_deny_uses_its_reason() {
    // Denies only when the event carries what Claude Code's does.
    let script = r#"input=$(cat)
for field in '"session_id":"s-1"' '"hook_event_name":"PreToolUse"' '"cwd":"'; do
  case "$input" in *"$field"*) ;; *) echo "unexpected event: $input" >&2; exit 1 ;; esac
done
case "$input" in *'"tool_name":"echo"'*'"tool_input":{"text":"rm it"}'*'"tool_use_id":"call-7"'*)
  echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no removing"}}'
  exit 0 ;;
esac
exit 0"#;
    let s = setup("hook-json", "PreToolUse", "", script, 10.0);
    let denied = call(&s, "rm it").await;
    assert!(
        denied.output.text_content().ends_with("refused it: no removing"),
        "{}",
        denied.output.text_content()
    );
    assert_not_run(&s);
    let allowed = call(&s, "fine").await;
    assert_eq!(allowed.output.text_content(), "fine");
}

#[tokio::test]
async fn updated_input_is_validated_again() {
    let script = r#"input=$(cat)
case "$input" in
  *'"text":"bad"'*) echo '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"txt": "oops"}}}' ;;
  *) echo '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"text": "rewritten"}}}' ;;
esac"#;
    let s = setup("hook-rewrite", "PreToolUse", "echo|other", script, 10.0);
    assert_eq!(call(&s, "original").await.output.text_content(), "rewritten");
    let invalid = call(&s, "bad").await;
    let text = invalid.output.text_content();
    assert!(invalid.output.is_error, "{text}");
    assert!(
        text.starts_with(
            "The call to `echo` was not run: a hook rewrote its arguments and the result is invalid."
        ),
        "{text}"
    );
    assert!(text.contains("text"), "names the missing argument: {text}");
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "only the valid rewrite ran");
}

#[tokio::test]
async fn a_hook_past_its_time_limit_is_killed_and_the_call_fails_clearly() {
    let s = setup("hook-timeout", "PreToolUse", "*", "sleep 30", 0.5);
    let result = call(&s, "hi").await;
    let text = result.output.text_content();
    assert!(result.output.is_error, "{text}");
    assert!(text.contains("did not finish within its time limit of 500ms and was killed"), "{text}");
    assert!(text.contains("not with the arguments; tell the user"), "{text}");
    assert_not_run(&s);
}

#[tokio::test]
async fn a_crashing_hook_is_an_error_result_not_an_allow() {
    let s = setup("hook-crash", "PreToolUse", "echo", "echo 'boom: missing jq' >&2; exit 1", 10.0);
    let result = call(&s, "hi").await;
    let text = result.output.text_content();
    assert!(result.output.is_error, "{text}");
    assert!(text.contains("was not run: its PreToolUse hook"), "{text}");
    assert!(text.contains("exited with code 1: boom: missing jq"), "{text}");
    assert_not_run(&s);
}

#[tokio::test]
async fn plain_text_is_no_decision_and_a_broken_decision_is_an_error_result() {
    // As in Claude Code, what a hook that exits 0 prints as plain text decides nothing.
    let s = setup("hook-text", "PreToolUse", "echo", "echo 'looks fine to me'", 10.0);
    let result = call(&s, "hi").await;
    assert_eq!(result.output.text_content(), "hi");
    let s = setup("hook-garbage", "PreToolUse", "echo", r#"echo '{"decision": "block"'"#, 10.0);
    let result = call(&s, "hi").await;
    let text = result.output.text_content();
    assert!(text.contains("starts as a JSON object on standard output and is not one"), "{text}");
    assert_not_run(&s);
    let s = setup(
        "hook-bad-decision",
        "PreToolUse",
        "echo",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "perhaps"}}'"#,
        10.0,
    );
    let text = call(&s, "hi").await.output.text_content();
    assert!(
        text.contains("printed `permissionDecision: perhaps`; expected \"allow\", \"deny\" or \"ask\""),
        "{text}"
    );
}

#[tokio::test]
async fn a_matcher_that_does_not_match_leaves_the_call_alone() {
    let s = setup("hook-nomatch", "PreToolUse", "Bash|Edit", "exit 2", 10.0);
    assert_eq!(call(&s, "hi").await.output.text_content(), "hi");
}

#[tokio::test]
async fn ask_from_a_hook_reaches_the_fallback_which_refuses_naming_the_hook() {
    let s = setup(
        "hook-ask",
        "PreToolUse",
        "echo",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}}'"#,
        10.0,
    );
    let text = call(&s, "hi").await.output.text_content();
    assert!(
        text.contains("PreToolUse-hook.sh` (sure?) says to ask first, and nobody is here to answer"),
        "{text}"
    );
    assert_not_run(&s);
}

#[tokio::test]
async fn post_tool_use_sees_the_result_and_its_feedback_reaches_the_model() {
    let script = r#"input=$(cat)
case "$input" in
  *'"hook_event_name":"PostToolUse"'*'"tool_response":{"content":"lint me","is_error":false}'*)
    echo 'line 1: trailing space' >&2; exit 2 ;;
  *'"tool_response":{"content":"fine"'*)
    echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "formatted"}}' ;;
  *) exit 3 ;;
esac"#;
    let s = setup("hook-post", "PostToolUse", "echo", script, 10.0);
    let blocked = call(&s, "lint me").await;
    assert!(blocked.output.is_error);
    assert!(blocked.output.text_content().starts_with("lint me"), "{}", blocked.output.text_content());
    assert!(
        blocked.output.text_content().ends_with("PostToolUse-hook.sh`: line 1: trailing space"),
        "{}",
        blocked.output.text_content()
    );
    let fine = call(&s, "fine").await;
    assert!(!fine.output.is_error);
    assert!(fine.output.text_content().ends_with("formatted"), "{}", fine.output.text_content());
    let failed = call(&s, "other").await;
    let text = failed.output.text_content();
    assert!(text.starts_with("The call to `echo` ran, but its PostToolUse hook"), "{text}");
    assert!(text.contains("exited with code 3"), "{text}");
    assert_eq!(s.runs.load(Ordering::SeqCst), 3);
}

/// A hook's `allow` lifts the ask that no rule made (the default mode's, for a tool that is not
/// read-only), as in Claude Code; an ask rule still asks (nobody answers here, so the call is
/// refused) and a deny rule still denies.
#[tokio::test]
async fn a_hooks_allow_lifts_the_default_ask_but_not_an_ask_rule_or_a_deny() {
    let dir = TempDir::new("hook-allow");
    let path = dir.path().join("allow.sh");
    std::fs::write(
        &path,
        "#!/bin/bash\necho '{\"hookSpecificOutput\": {\"permissionDecision\": \"allow\"}}'\n",
    )
    .unwrap();
    let hooks = json!({"PreToolUse": [{"matcher": "echo", "hooks": [
        {"type": "command", "command": format!("bash {}", path.display())}
    ]}]});
    for (rule, hook, runs) in
        [(None, false, false), (None, true, true), (Some("ask"), true, false), (Some("deny"), true, false)]
    {
        let mut settings = json!({"permissions": {"defaultMode": "default"}});
        if let Some(rule) = rule {
            settings["permissions"][rule] = json!(["echo"]);
        }
        if hook {
            settings["hooks"] = hooks.clone();
        }
        let loaded =
            Settings::parse(&settings.to_string(), "settings.json", Rules::builder(dir.path())).unwrap();
        let counter = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder().tool(echo_tool(counter.clone())).build().unwrap();
        let dispatcher = Dispatcher::builder(registry).policy(Policy::from_settings(loaded)).build();
        let s = Setup { dispatcher, runs: counter, _dir: TempDir::new("hook-allow-unused") };
        let result = call(&s, "hi").await;
        let text = result.output.text_content();
        assert_eq!(s.runs.load(Ordering::SeqCst) == 1, runs, "{rule:?}, hook {hook}: {text}");
        if rule == Some("deny") {
            assert!(text.contains("refused by the rule `deny echo`"), "{text}");
        }
        if rule == Some("ask") {
            assert!(text.contains("ask echo"), "{text}");
        }
    }
}

/// A `Notification` hook runs before a person is asked for a permission, with Claude Code's
/// input; a rule that allows or denies at once asks nobody and notifies nobody.
#[tokio::test]
async fn a_notification_hook_runs_before_a_person_is_asked() {
    let dir = TempDir::new("hook-notification");
    let log = dir.path().join("notified.json");
    let hooks = json!({"Notification": [{"matcher": "permission_prompt", "hooks": [
        {"type": "command", "command": format!("cat >> {}", log.display())}
    ]}]});
    for (rule, notified) in [("allow", false), ("ask", true)] {
        let _ = std::fs::remove_file(&log);
        let text = json!({"permissions": {rule: ["echo"]}, "hooks": hooks}).to_string();
        let loaded = Settings::parse(&text, "settings.json", Rules::builder(dir.path())).unwrap();
        let counter = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder().tool(echo_tool(counter.clone())).build().unwrap();
        let policy = Policy::from_settings(loaded).asker(tool_runtime::hooks::AllowAll);
        let dispatcher = Dispatcher::builder(registry).policy(policy).build();
        let s = Setup { dispatcher, runs: counter, _dir: TempDir::new("hook-notification-unused") };
        let result = call(&s, "hi").await;
        assert_eq!(s.runs.load(Ordering::SeqCst), 1, "{rule}: {}", result.output.text_content());
        assert_eq!(log.exists(), notified, "{rule}");
        if notified {
            let event: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
            assert_eq!(event["hook_event_name"], "Notification");
            assert_eq!(event["notification_type"], "permission_prompt");
            assert_eq!(event["tool_use_id"], "call-7");
            assert!(
                event["message"].as_str().unwrap().starts_with("tools needs your permission to use echo"),
                "{event}"
            );
        }
    }
}

/// A dispatcher of the built-in tools in `dir/ws` with the hooks and rules of `settings`.
fn std_dispatcher(dir: &Path, settings: &Value) -> Dispatcher {
    let root = dir.join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let base = Rules::builder(&root).catalog(tools_std::permission_catalog());
    let loaded = Settings::parse(&settings.to_string(), "settings.json", base).unwrap();
    let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
    Dispatcher::builder(registry)
        .session_id("s-9")
        .dependency(tools_std::Workspace::new(&root).unwrap())
        .policy(Policy::from_settings(loaded))
        .build()
}

async fn run(dispatcher: &Dispatcher, id: &str, tool: &str, args: Value) -> ToolResult {
    dispatcher.run(ToolCall::new(id, tool, args.to_string()), CancellationToken::new()).await
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_bash_input_hook_sees_the_session_and_its_command_once_per_call() {
    let dir = TempDir::new("hook-bash-input");
    let log = dir.path().join("events.jsonl");
    let script = dir.path().join("input-hook.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/bash\ninput=$(cat)\nprintf '%s\\n' \"$input\" >> {}\ncase \"$input\" in *secret*) echo 'no secrets' >&2; exit 2 ;; esac\nexit 0\n",
            log.display()
        ),
    )
    .unwrap();
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "bash_input", "hooks": [
        {"type": "command", "command": format!("bash {}", script.display())}
    ]}]}});
    let dispatcher = std_dispatcher(dir.path(), &settings);
    let started =
        run(&dispatcher, "c-1", "bash", json!({"command": "cat", "interactive": true, "background": true}))
            .await;
    let id = started.output.metadata["session_id"].as_u64().expect("a session");
    let typed =
        run(&dispatcher, "c-2", "bash_input", json!({"session_id": id, "text": "hello\n", "until": "hello"}))
            .await;
    assert_eq!(typed.output.text_content().lines().next(), Some("hello"), "{}", typed.output.text_content());
    let refused =
        run(&dispatcher, "c-3", "bash_input", json!({"session_id": id, "text": "the secret\n"})).await;
    let text = refused.output.text_content();
    assert!(refused.output.is_error && text.ends_with("refused it: no secrets"), "{text}");
    let events: Vec<Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Not for `bash`, and once for each `bash_input` call.
    assert_eq!(events.len(), 2, "{events:?}");
    // Named as Claude Code's `Bash` (typing into a session runs commands), ours beside it.
    assert_eq!(events[0]["tool_name"], json!("Bash"));
    assert_eq!(events[0]["tool_name_native"], json!("bash_input"));
    assert_eq!(events[0]["session_id"], json!("s-9"));
    assert_eq!(events[0]["tool_use_id"], json!("c-2"));
    // (`session_busy` says whether `cat` was reading yet, which depends on timing.)
    let mut input = events[0]["tool_input"].clone();
    input.as_object_mut().unwrap().remove("session_busy");
    assert_eq!(
        input,
        json!({"session_id": id, "session_command": "cat", "text": "hello\n", "command": "hello"})
    );
    assert_eq!(events[1]["tool_input"]["text"], json!("the secret\n"));
    run(&dispatcher, "c-4", "bash_stop", json!({"session_id": id, "grace_ms": 0})).await;
}

/// The manual's settings file (tool-runtime's `docs/permissions.md`), its `PostToolUse` hook
/// replaced by one that logs the tool it ran for: the matcher is the manual's.
#[tokio::test]
async fn the_manuals_after_edit_hook_runs_after_every_tool_that_edits() {
    let manual = include_str!("../../../tool-runtime/docs/permissions.md");
    let from = manual.find("```json\n").expect("a json block") + "```json\n".len();
    let to = from + manual[from..].find("```").expect("closing fence");
    let mut settings: Value = serde_json::from_str(&manual[from..to]).unwrap();
    let dir = TempDir::new("hook-manual-edit");
    let log = dir.path().join("ran.txt");
    let script = dir.path().join("log.sh");
    std::fs::write(&script, format!("#!/bin/bash\ncat >> {}\necho >> {}\n", log.display(), log.display()))
        .unwrap();
    settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"] = json!(format!("bash {}", script.display()));
    settings["hooks"]["PreToolUse"] = json!([]);
    settings["permissions"] = json!({});
    let dispatcher = std_dispatcher(dir.path(), &settings);
    let calls = [
        ("write", json!({"path": "a.txt", "content": "one\n"})),
        ("edit", json!({"path": "a.txt", "old_string": "one", "new_string": "two"})),
        ("multi_edit", json!({"path": "a.txt", "edits": [{"old_string": "two", "new_string": "three"}]})),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-three\n+four\n*** End Patch\n"}),
        ),
    ];
    for (n, (tool, args)) in calls.iter().enumerate() {
        let result = run(&dispatcher, &format!("e-{n}"), tool, args.clone()).await;
        assert!(!result.output.is_error, "{tool}: {}", result.output.text_content());
    }
    let ran: Vec<(String, String)> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let event = serde_json::from_str::<Value>(l).unwrap();
            let name = |key: &str| event[key].as_str().unwrap().to_owned();
            (name("tool_name"), name("tool_name_native"))
        })
        .collect();
    // Claude Code's names, with ours beside them.
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        ran,
        [
            pair("Write", "write"),
            pair("Edit", "edit"),
            pair("MultiEdit", "multi_edit"),
            pair("Edit", "apply_patch")
        ]
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn what_a_hook_leaves_running_dies_with_it_and_does_not_hold_the_call() {
    let dir = TempDir::new("hook-setsid");
    let pids = dir.path().join("pids");
    // One child leaves the group and closes its output; one leaves the group and keeps it.
    let script = format!(
        "setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! >> {p}\n(setsid sh -c 'echo $$ >> {p}; exec sleep 300' &)\nuntil [ \"$(wc -l < {p})\" -ge 2 ]; do sleep 0.01; done\nexit 0",
        p = pids.display()
    );
    let s = setup("hook-setsid", "PreToolUse", "echo", &script, 10.0);
    let started = std::time::Instant::now();
    let result = call(&s, "hi").await;
    let elapsed = started.elapsed();
    assert_eq!(result.output.text_content(), "hi", "the hook's own exit allows the call");
    let pids: Vec<i32> =
        std::fs::read_to_string(&pids).unwrap().lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let mut survivors = pids.clone();
    for _ in 0..200 {
        survivors.retain(|pid| tool_tests::runs(*pid));
        if survivors.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    for pid in &survivors {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    assert!(survivors.is_empty(), "the hook's children {survivors:?} outlived it");
    assert!(elapsed < std::time::Duration::from_secs(5), "the call waited {elapsed:?} for the hook's child");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_hooks_child_that_cleared_its_environment_and_left_its_group_dies_with_it() {
    let dir = TempDir::new("hook-escape");
    let pid_file = dir.path().join("escaped.pid");
    let script = format!(
        "env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > {p}' > /dev/null 2>&1 < /dev/null &\n\
         until [ -s {p} ]; do sleep 0.01; done\nexit 0",
        p = pid_file.display()
    );
    let s = setup("hook-escape", "PreToolUse", "echo", &script, 10.0);
    assert_eq!(call(&s, "hi").await.output.text_content(), "hi");
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let mut survived = true;
    for _ in 0..200 {
        if !tool_tests::runs(pid) {
            survived = false;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    if survived && tool_runtime::process_tree::Cgroup::create().is_none() {
        return tool_tests::skip(
            "this process cannot create cgroups here, and only one finds such a process",
        );
    }
    assert!(!survived, "the hook's escaped child {pid} outlived it");
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn hook_commands_can_run_in_a_sandbox() {
    use tool_sandbox::{Probe, Sandbox, SandboxPolicy};
    let probe = Probe::get();
    if probe.landlock_abi.is_none() || !probe.seccomp {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must have Landlock and seccomp: {probe}");
        tool_tests::skip(&format!("the kernel lacks Landlock or seccomp ({probe})"));
        return;
    }
    let dir = TempDir::new("hook-sandbox");
    let marker = dir.path().join("hook-wrote");
    let script = format!("echo x > {} || exit 1; exit 0", marker.display());
    let text = settings(dir.path(), "PreToolUse", "echo", &script, 10.0);
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = Arc::new(Registry::builder().tool(echo_tool(runs.clone())).build().unwrap());
    // Read-only: the hook may not write, so it fails, and the call is not run.
    let sandbox = Arc::new(Sandbox::new(SandboxPolicy::read_only()).unwrap());
    let loaded = Settings::parse(&text, "settings.json", Rules::builder(dir.path())).unwrap();
    let policy = Policy::from_settings(loaded).hook_sandbox(sandbox);
    let dispatcher = Dispatcher::builder(registry.clone()).policy(policy).build();
    let result =
        dispatcher.run(ToolCall::new("c", "echo", r#"{"text": "hi"}"#), CancellationToken::new()).await;
    assert!(result.output.is_error, "{}", result.output.text_content());
    assert!(!marker.exists());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // Unconfined, the same hook writes and the call runs.
    let loaded = Settings::parse(&text, "settings.json", Rules::builder(dir.path())).unwrap();
    let dispatcher = Dispatcher::builder(registry).policy(Policy::from_settings(loaded)).build();
    let result =
        dispatcher.run(ToolCall::new("c", "echo", r#"{"text": "hi"}"#), CancellationToken::new()).await;
    assert!(!result.output.is_error, "{}", result.output.text_content());
    assert!(marker.exists());
}
