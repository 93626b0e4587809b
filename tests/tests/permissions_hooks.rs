//! Hook commands in Claude Code's shape, run as real bash scripts: deny (exit 2 and JSON),
//! rewrite (validated again), a time limit, a crash, garbage output, PostToolUse feedback.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_runtime::permissions::{Policy, Rules, Settings};
use tool_runtime::{
    CancellationToken, Dispatcher, FnTool, Registry, ToolCall, ToolOutput, ToolResult, ToolSpec,
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
    assert!(text.contains("did not finish within its time limit of 0.5s and was killed"), "{text}");
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
async fn garbage_on_standard_output_is_an_error_result() {
    let s = setup("hook-garbage", "PreToolUse", "echo", "echo 'looks fine to me'", 10.0);
    let result = call(&s, "hi").await;
    let text = result.output.text_content();
    assert!(text.contains("printed something that is not a JSON object on standard output"), "{text}");
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

#[tokio::test]
async fn a_hooks_allow_lets_a_rules_ask_about_the_call_through_but_not_a_deny() {
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
    for (rule, runs) in [("ask", true), ("deny", false)] {
        let text = json!({"permissions": {rule: ["echo"]}, "hooks": hooks}).to_string();
        let loaded = Settings::parse(&text, "settings.json", Rules::builder(dir.path())).unwrap();
        let counter = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder().tool(echo_tool(counter.clone())).build().unwrap();
        let dispatcher = Dispatcher::builder(registry).policy(Policy::from_settings(loaded)).build();
        let s = Setup { dispatcher, runs: counter, _dir: TempDir::new("hook-allow-unused") };
        let result = call(&s, "hi").await;
        assert_eq!(s.runs.load(Ordering::SeqCst) == 1, runs, "{rule}: {}", result.output.text_content());
        if !runs {
            assert!(
                result.output.text_content().contains("refused by the rule `deny echo`"),
                "{}",
                result.output.text_content()
            );
        }
    }
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
