//! End-to-end tests of `tools list`, `tools call` and `tools turn`: the built binary, its exact
//! output, and its exit codes.

use crate::common;

use common::{Fixture, registry, unknown_tool_message};
use serde_json::{Value, json};
use tool_runtime::providers::DefinitionOptions;
use tool_runtime::providers::Provider;

const HELLO: &str = "     1\thello\n     2\tworld\n";

// ---------------------------------------------------------------- list

#[test]
fn list_prints_the_definitions_of_every_tool_in_each_format() {
    let fx = Fixture::new();
    let registry = registry();
    for provider in Provider::ALL {
        for strict in [false, true] {
            let mut args = vec!["list", "--format", provider.as_str()];
            if strict {
                args.push("--strict");
            }
            let run = fx.run(&args, None);
            assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
            assert_eq!(run.stderr, "");
            let expected =
                provider.definitions(&registry, &DefinitionOptions::default().with_strict(strict)).unwrap();
            assert_eq!(run.json(), Value::Array(expected), "{args:?}");
        }
    }
}

#[test]
fn list_defaults_to_mcp_and_lists_the_built_in_tools_in_order() {
    let fx = Fixture::new();
    let run = fx.run(&["list"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let definitions = run.json();
    let expected = Provider::Mcp.definitions(&registry(), &DefinitionOptions::default()).unwrap();
    assert_eq!(definitions, Value::Array(expected));
    let names: Vec<&str> =
        definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names[..4], ["read", "write", "edit", "bash"], "tools-std's own order first");
    let read = &definitions[0];
    assert_eq!(read["inputSchema"]["type"], "object");
    assert_eq!(read["inputSchema"]["required"], json!(["path"]));
    assert_eq!(read["annotations"]["readOnlyHint"], true);
}

#[test]
fn list_shapes_differ_by_provider() {
    let fx = Fixture::new();
    let first = |format: &str, strict: bool| {
        let mut args = vec!["list", "--format", format];
        if strict {
            args.push("--strict");
        }
        let run = fx.run(&args, None);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()[0].clone()
    };
    let chat = first("openai-chat", false);
    assert_eq!(chat["type"], "function");
    assert_eq!(chat["function"]["name"], "read");
    assert!(chat["function"].get("strict").is_none());
    let chat_strict = first("openai-chat", true);
    assert_eq!(chat_strict["function"]["strict"], true);
    assert_eq!(chat_strict["function"]["parameters"]["additionalProperties"], false);
    assert_eq!(first("openai-responses", false)["strict"], false);
    assert_eq!(first("openai-responses", true)["strict"], true);
    assert_eq!(first("anthropic", false)["input_schema"]["type"], "object");
    let gemini = first("gemini", false);
    assert!(gemini["parameters"].get("additionalProperties").is_none());
    assert!(gemini["parameters"].get("$schema").is_none());
}

#[test]
fn list_rejects_an_unknown_format_and_bad_flags() {
    let fx = Fixture::new();
    assert_eq!(
        fx.run(&["list", "--format", "claude"], None).usage_error(),
        "invalid value 'claude' for '--format <FORMAT>'; [possible values: openai-chat, openai-responses, anthropic, gemini, mcp] (see `tools list --help`)"
    );
    assert_eq!(
        fx.run(&["list", "--stric"], None).usage_error(),
        "unexpected argument '--stric' found; tip: a similar argument exists: '--strict' (see `tools list --help`)"
    );
    assert_eq!(
        fx.run(&["lst"], None).usage_error(),
        "unrecognized subcommand 'lst'; tip: a similar subcommand exists: 'list' (see `tools --help`)"
    );
    assert_eq!(
        fx.run(&[], None).usage_error(),
        "missing command: expected one of list, call, turn, serve, mcp (see `tools --help`)"
    );
}

#[test]
fn every_subcommand_has_help() {
    let fx = Fixture::new();
    for (args, usage) in [
        (&["--help"][..], "Usage: tools <COMMAND>"),
        (&["list", "--help"][..], "Usage: tools list [OPTIONS]"),
        (&["call", "--help"][..], "Usage: tools call [OPTIONS] <NAME> [ARGS_JSON]"),
        (&["turn", "--help"][..], "Usage: tools turn [OPTIONS] --format <FORMAT>"),
        (&["serve", "--help"][..], "Usage: tools serve [OPTIONS]"),
    ] {
        let run = fx.run(args, None);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(run.stdout.contains(usage), "{args:?}: {}", run.stdout);
        assert_eq!(run.stderr, "");
    }
    let call_help = fx.run(&["call", "--help"], None).stdout;
    for flag in ["--root <DIR>", "--timeout-ms <N>", "--allow-outside-root"] {
        assert!(call_help.contains(flag), "{flag}: {call_help}");
    }
    let turn_help = fx.run(&["turn", "--help"], None).stdout;
    for flag in ["--root <DIR>", "--events", "--allow-outside-root", "openai-responses"] {
        assert!(turn_help.contains(flag), "{flag}: {turn_help}");
    }
    let version = fx.run(&["--version"], None);
    assert_eq!(version.code, 0);
    assert_eq!(version.stdout, format!("tools {}\n", env!("CARGO_PKG_VERSION")));
}

// ---------------------------------------------------------------- call

#[test]
fn call_prints_one_object_and_exits_0_on_success() {
    let fx = Fixture::new();
    let run = fx.run(&["call", "read", r#"{"path": "hello.txt"}"#], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    let result = run.json();
    let keys: Vec<&str> = result.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["call_id", "tool", "is_error", "output", "content", "metadata"]);
    assert_eq!(result["call_id"], "call-1");
    assert_eq!(result["tool"], "read");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["output"], HELLO);
    assert_eq!(result["content"], json!([{"type": "text", "text": HELLO}]));
    assert!(result["metadata"].is_object());
}

#[test]
fn call_cuts_long_output_and_the_notice_names_the_tools_that_read_it_back() {
    let fx = Fixture::new();
    let run = fx.run(&["call", "bash", r#"{"command": "seq 1 5000"}"#], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let result = run.json();
    let reference = result["metadata"]["truncation"]["output_ref"].as_str().expect("saved").to_owned();
    let output = result["output"].as_str().unwrap();
    assert!(
        output.ends_with(&format!(
            "[Output truncated: showing lines 1-995 and lines 4006-5000 of 5000 (8847 of 23893 bytes). Full \
             output saved as {reference}; read more with tool_output_read(ref=\"{reference}\", offset=996) or \
             search it with tool_output_grep(ref=\"{reference}\", pattern=\"...\").]"
        )),
        "{output}"
    );
    // A later `tools call` (another process) reads it back from the same store.
    let args = format!(r#"{{"ref": "{reference}", "offset": 996, "limit": 2}}"#);
    let read = fx.run(&["call", "tool_output_read", &args], None);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert_eq!(
        read.json()["output"],
        "   996\t996\n   997\t997\n\n[showing lines 996-997 of 5000; use offset=998 to continue]"
    );
}

#[test]
fn call_reads_the_arguments_from_stdin_for_a_dash() {
    let fx = Fixture::new();
    let run = fx.run(&["call", "read", "-"], Some(br#"{"path": "hello.txt"}"#));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["output"], HELLO);
}

#[test]
fn call_arguments_default_to_an_empty_object() {
    let fx = Fixture::new();
    let run = fx.run(&["call", "ls"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.json()["output"].as_str().unwrap().contains("hello.txt"), "{}", run.stdout);
    // `read` needs a path: the empty object is passed on and fails validation.
    let run = fx.run(&["call", "read"], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.json()["output"].as_str().unwrap().starts_with("Invalid arguments for tool `read`"));
}

#[test]
fn call_exits_1_with_the_error_result_when_the_tool_fails() {
    let fx = Fixture::new();
    let run = fx.run(&["call", "read", r#"{"path": "missing.txt"}"#], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    let result = run.json();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["tool"], "read");
    let output = result["output"].as_str().unwrap();
    assert!(output.contains("missing.txt"), "{output}");
    assert_eq!(result["content"], json!([{"type": "text", "text": output}]));
}

/// `tools call` exits once the call is answered, so no command may go on in the background.
#[test]
fn call_runs_bash_commands_to_their_end_and_refuses_the_background() {
    let fx = Fixture::new();
    for arguments in
        [r#"{"command": "sleep 5", "background": true}"#, r#"{"command": "sleep 5", "yield_ms": 100}"#]
    {
        let run = fx.run(&["call", "bash", arguments], None);
        assert_eq!(run.code, 1, "{}", run.stderr);
        let output = run.json()["output"].as_str().unwrap().to_owned();
        assert!(output.contains("cannot be used here"), "{output}");
    }
    let run = fx.run(&["call", "bash", r#"{"command": "sleep 0.2; echo done"}"#], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.json()["output"].as_str().unwrap().contains("done"));
}

/// What a command leaves running (a job in the background, `setsid`, `nohup`) ends with the
/// `call` or `turn` that ran it, as with a `serve` session: nothing of it goes on writing the
/// workspace, and the placeholders it held are gone.
#[test]
fn call_and_turn_leave_nothing_running() {
    let fx = Fixture::new();
    let marker = format!("{}", 4_000_000 + std::process::id() % 1_000_000);
    let leave = format!(
        "sleep {marker}1 & setsid sleep {marker}2 > /dev/null 2>&1 & nohup sleep {marker}3 > /dev/null 2>&1 & echo left"
    );
    let running = || {
        let out = std::process::Command::new("pgrep").args(["-f", &format!("sleep {marker}")]).output();
        out.map(|out| String::from_utf8_lossy(&out.stdout).lines().count()).unwrap_or(0)
    };
    let run = fx.run(&["call", "bash", &json!({"command": leave}).to_string()], None);
    assert!(run.json()["output"].as_str().unwrap().contains("left"), "{}", run.stdout);
    assert_eq!(running(), 0, "a job of `call` still runs");
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": leave}}
    ]});
    let run = fx.run(&["turn", "--format", "anthropic"], Some(message.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(running(), 0, "a job of `turn` still runs");
    for name in tools_std::tool_sandbox::PLACEHOLDERS {
        assert!(std::fs::symlink_metadata(fx.ws().join(name)).is_err(), "{name} was left");
    }
}

/// How many processes `pgrep -f PATTERN` finds.
#[cfg(target_os = "linux")]
fn pgrep(pattern: &str) -> usize {
    let out = std::process::Command::new("pgrep").args(["-f", pattern]).output();
    out.map(|out| String::from_utf8_lossy(&out.stdout).lines().count()).unwrap_or(0)
}

/// A `tools call` whose command leaves `jobs` (`sleep MARKER1`, ...) running and then waits in
/// `sleep MARKER0`, once they all run.
#[cfg(target_os = "linux")]
fn call_leaving_jobs(fx: &Fixture, marker: &str, jobs: &[&str]) -> std::process::Child {
    let mut leave: String = jobs
        .iter()
        .enumerate()
        .map(|(n, how)| format!("{how} sleep {marker}{} > /dev/null 2>&1 & ", n + 1))
        .collect();
    leave.push_str(&format!("sleep {marker}0"));
    let mut call = fx.command(&["call", "bash", &json!({"command": leave}).to_string()]);
    let child = call.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let started = std::time::Instant::now();
    while pgrep(&format!("^sleep {marker}")) <= jobs.len()
        && started.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(pgrep(&format!("^sleep {marker}")), jobs.len() + 1, "the command did not start");
    child
}

/// How many of `marker`'s sleeps still run, once each is killed; `None` (a skip said) where
/// commands get no cgroup, so that what a killed call left is not found.
#[cfg(target_os = "linux")]
fn left_running(marker: &str) -> Option<usize> {
    let left = pgrep(&format!("^sleep {marker}"));
    let _ = std::process::Command::new("pkill").args(["-KILL", "-f", &format!("^sleep {marker}")]).status();
    if left != 0 && tools_std::tool_sandbox::process_tree::Cgroup::create().is_none() {
        tool_tests::skip("commands get no cgroup of their own here, so what a killed call left is not found");
        return None;
    }
    Some(left)
}

/// A `tools call` killed with `SIGKILL` cannot kill what its command left running: the process
/// it leaves watching it does, at once (and else the next `tools` process to run a command),
/// where commands get cgroups of their own.
#[cfg(target_os = "linux")]
#[test]
fn the_jobs_of_a_killed_call_are_ended_by_its_watcher() {
    let fx = Fixture::new();
    let marker = format!("{}", 5_000_000 + std::process::id() % 1_000_000);
    let mut child = call_leaving_jobs(&fx, &marker, &["setsid", "nohup"]);
    let watcher = format!("__watch-commands-of {}$", child.id());
    assert_eq!(pgrep(&watcher), 1, "no watcher");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = std::time::Instant::now();
    while (pgrep(&format!("^sleep {marker}")) > 0 || pgrep(&watcher) > 0)
        && killed.elapsed() < std::time::Duration::from_secs(5)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let Some(left) = left_running(&marker) else { return };
    assert_eq!(left, 0, "the killed call's jobs ran on");
    assert_eq!(pgrep(&watcher), 0, "the watcher ran on");
}

/// Killed with its watcher (`pkill tools`), a `tools call` leaves its jobs to the next `tools`
/// process to run a command, which ends them.
#[cfg(target_os = "linux")]
#[test]
fn the_jobs_of_a_call_killed_with_its_watcher_are_ended_by_the_next_call() {
    let fx = Fixture::new();
    let marker = format!("{}", 6_000_000 + std::process::id() % 1_000_000);
    let mut child = call_leaving_jobs(&fx, &marker, &["setsid"]);
    let watcher = format!("__watch-commands-of {}$", child.id());
    assert!(std::process::Command::new("pkill").args(["-KILL", "-f", &watcher]).status().unwrap().success());
    child.kill().unwrap();
    child.wait().unwrap();
    // Another test's `tools` process in this cgroup may end them first, as the next call does.
    let run = fx.run(&["call", "bash", r#"{"command": "echo next"}"#], None);
    assert!(run.json()["output"].as_str().unwrap_or_default().contains("next"), "{}", run.stdout);
    let Some(left) = left_running(&marker) else { return };
    assert_eq!(left, 0, "the next call left the killed call's jobs running");
}

#[test]
fn call_reports_invalid_arguments_as_the_model_would_see_them() {
    let fx = Fixture::new();
    let run = fx.run(&["call", "read", r#"{"path": 3}"#], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.json()["output"],
        "Invalid arguments for tool `read`:\n- /path: expected a string, received 3 (an integer)\nArguments received: {\"path\": 3}\nFix the arguments and call `read` again."
    );
}

#[test]
fn call_usage_errors_exit_2_with_one_line() {
    let fx = Fixture::new();
    assert_eq!(fx.run(&["call", "nope"], None).usage_error(), unknown_tool_message("nope"));
    assert_eq!(
        fx.run(&["call", "read", "{"], None).usage_error(),
        "ARGS_JSON is not valid JSON: EOF while parsing an object at line 1 column 1"
    );
    assert_eq!(
        fx.run(&["call", "read", "[1]"], None).usage_error(),
        "ARGS_JSON must be a JSON object, found an array"
    );
    assert_eq!(
        fx.run(&["call", "read", "-"], Some(b"not json")).usage_error(),
        "ARGS_JSON is not valid JSON: expected ident at line 1 column 2"
    );
    assert_eq!(
        fx.run(&["call", "read", "-"], Some(b"\xff\xfe")).usage_error(),
        "cannot read the arguments from standard input: stream did not contain valid UTF-8"
    );
    assert_eq!(
        fx.run(&["call", "read", "{}", "--timeout-ms", "0"], None).usage_error(),
        "invalid value '0' for '--timeout-ms <N>': 0 is not in 1..18446744073709551615 (see `tools call --help`)"
    );
    assert_eq!(
        fx.run(&["call", "read", "{}", "--timeout-ms", "soon"], None).usage_error(),
        "invalid value 'soon' for '--timeout-ms <N>': invalid digit found in string (see `tools call --help`)"
    );
    assert_eq!(
        fx.run(&["call"], None).usage_error(),
        "the following required arguments were not provided: <NAME> (see `tools call --help`)"
    );
    assert_eq!(
        fx.run(&["call", "read", "{}", "extra"], None).usage_error(),
        "unexpected argument 'extra' found (see `tools call --help`)"
    );
}

#[test]
fn call_timeout_ms_stops_the_call() {
    let fx = Fixture::new();
    let run = fx.run(&["call", "bash", r#"{"command": "sleep 60"}"#, "--timeout-ms", "300"], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let result = run.json();
    assert_eq!(result["is_error"], true);
    assert!(result["output"].as_str().unwrap().contains("timed out"), "{}", result["output"]);
}

#[test]
fn call_timeout_ms_is_kept_and_named_in_the_result() {
    let fx = Fixture::new();
    let started = std::time::Instant::now();
    let run = fx
        .run(&["call", "bash", r#"{"command": "echo before-limit; sleep 5"}"#, "--timeout-ms", "1000"], None);
    let elapsed = started.elapsed();
    assert_eq!(run.code, 1, "{}", run.stderr);
    let result = run.json();
    let output = result["output"].as_str().unwrap();
    assert!(
        output.starts_with(
            "before-limit\n\n[timed out after 1s: the output above is what the command printed until then."
        ),
        "{output}"
    );
    assert!(output.contains("this limit is the call's, and timeout_secs cannot raise it"), "{output}");
    assert_eq!(result["metadata"]["timed_out"], true);
    // The command is not stopped before the limit (a lower bound, which no slow machine breaks),
    // and it is stopped (it would sleep 5 s).
    assert!(elapsed >= std::time::Duration::from_millis(1000), "stopped after {elapsed:?}");
    assert!(elapsed < std::time::Duration::from_secs(5), "not stopped: {elapsed:?}");
}

#[test]
fn root_sets_the_workspace_and_outside_paths_need_a_flag() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let ws = ws.to_str().unwrap();
    // Run from outside the workspace: relative paths resolve against --root.
    let mut command = fx.command(&["call", "read", r#"{"path": "hello.txt"}"#, "--root", ws]);
    command.current_dir(fx.dir.path());
    let run = common::run(command, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["output"], HELLO);

    let outside = fx.dir.path().join("outside.txt");
    let args = json!({"path": outside}).to_string();
    let run = fx.run(&["call", "read", &args, "--root", ws], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let output = run.json()["output"].as_str().unwrap().to_owned();
    assert!(output.starts_with("Permission denied"), "{output}");
    assert!(output.contains("outside the workspace root"), "{output}");

    let run = fx.run(&["call", "read", &args, "--root", ws, "--allow-outside-root"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["output"], "     1\tsecret\n");

    let missing = fx.dir.path().join("missing");
    assert_eq!(
        fx.run(&["call", "ls", "{}", "--root", missing.to_str().unwrap()], None).usage_error(),
        format!("--root {}: no such directory", missing.display())
    );
}

// ---------------------------------------------------------------- turn

fn turn(fx: &Fixture, format: &str, message: &Value) -> Value {
    let run = fx.run(&["turn", "--format", format], Some(message.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{format}: {}", run.stderr);
    assert_eq!(run.stderr, "");
    run.json()
}

#[test]
fn turn_openai_chat() {
    let fx = Fixture::new();
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"hello.txt\"}"}},
        {"id": "c2", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
    ]});
    assert_eq!(
        turn(&fx, "openai-chat", &message),
        json!([
            {"role": "tool", "tool_call_id": "c1", "content": HELLO},
            {"role": "tool", "tool_call_id": "c2", "content": format!("Error: {}", unknown_tool_message("nope"))},
        ])
    );
}

#[test]
fn turn_openai_responses() {
    let fx = Fixture::new();
    let message = json!([
        {"type": "reasoning", "id": "r1", "summary": []},
        {"type": "function_call", "call_id": "fc1", "name": "read", "arguments": "{\"path\":\"hello.txt\"}"},
        {"type": "function_call", "call_id": "fc2", "name": "nope", "arguments": "{}"},
    ]);
    assert_eq!(
        turn(&fx, "openai-responses", &message),
        json!([
            {"type": "function_call_output", "call_id": "fc1", "output": HELLO},
            {"type": "function_call_output", "call_id": "fc2", "output": format!("Error: {}", unknown_tool_message("nope"))},
        ])
    );
}

#[test]
fn turn_anthropic() {
    let fx = Fixture::new();
    let message = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "hello.txt"}},
        {"type": "tool_use", "id": "t2", "name": "nope", "input": {}},
    ]});
    assert_eq!(
        turn(&fx, "anthropic", &message),
        json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": HELLO},
            {"type": "tool_result", "tool_use_id": "t2", "content": unknown_tool_message("nope"), "is_error": true},
        ]}])
    );
}

#[test]
fn turn_gemini() {
    let fx = Fixture::new();
    let message = json!({"role": "model", "parts": [
        {"functionCall": {"name": "read", "args": {"path": "hello.txt"}}},
        {"functionCall": {"id": "g2", "name": "nope", "args": {}}},
    ]});
    assert_eq!(
        turn(&fx, "gemini", &message),
        json!([{"role": "user", "parts": [
            {"functionResponse": {"name": "read", "response": {"output": HELLO}}},
            {"functionResponse": {"id": "g2", "name": "nope", "response": {"error": unknown_tool_message("nope")}}},
        ]}])
    );
}

#[test]
fn turn_without_tool_calls_prints_an_empty_array() {
    let fx = Fixture::new();
    assert_eq!(turn(&fx, "openai-chat", &json!({"role": "assistant", "content": "Done."})), json!([]));
}

#[test]
fn turn_runs_calls_in_the_workspace_with_the_permission_policy() {
    let fx = Fixture::new();
    let outside = fx.dir.path().join("outside.txt");
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": outside}},
    ]});
    let results = turn(&fx, "anthropic", &message);
    let block = &results[0]["content"][0];
    assert_eq!(block["is_error"], true);
    assert!(block["content"].as_str().unwrap().starts_with("Permission denied"), "{block}");

    let run = fx.run(
        &["turn", "--format", "anthropic", "--allow-outside-root"],
        Some(message.to_string().as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.json(),
        json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "     1\tsecret\n"},
        ]}])
    );
}

#[test]
fn turn_events_are_json_lines_on_stderr() {
    let fx = Fixture::new();
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"hello.txt\"}"}},
        {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"echo streamed\"}"}},
        {"id": "c3", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
    ]});
    let run = fx.run(&["turn", "--format", "openai-chat", "--events"], Some(message.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json().as_array().unwrap().len(), 3);
    let events: Vec<Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}")))
        .collect();
    for event in &events {
        assert!(event["call_id"].is_string(), "{event}");
        assert!(event["tool"].is_string(), "{event}");
        assert!(event["timestamp_ms"].as_u64().is_some_and(|t| t > 0), "{event}");
    }
    let kinds = |call: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["call_id"] == call)
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .filter(|kind| kind != "metadata")
            .collect()
    };
    assert_eq!(kinds("c1"), ["queued", "started", "finished"]);
    let bash = kinds("c2");
    assert_eq!(bash.first().map(String::as_str), Some("queued"));
    assert_eq!(bash[1], "started");
    assert_eq!(bash.last().map(String::as_str), Some("finished"));
    assert!(bash[2..bash.len() - 1].iter().all(|k| k == "progress") && bash.len() > 3, "{bash:?}");
    let streamed: String = events
        .iter()
        .filter(|e| e["call_id"] == "c2" && e["type"] == "progress")
        .filter_map(|e| e["update"]["message"].as_str())
        .collect();
    assert_eq!(streamed, "streamed\n");
    assert_eq!(kinds("c3"), ["queued", "finished"]);

    let finished =
        |call: &str| events.iter().find(|e| e["call_id"] == call && e["type"] == "finished").unwrap();
    assert_eq!(finished("c1")["status"], "completed");
    assert_eq!(finished("c1")["tool"], "read");
    assert!(finished("c1")["duration_ms"].as_f64().is_some_and(|d| d >= 0.0));
    assert_eq!(finished("c2")["status"], "completed");
    assert_eq!(finished("c3")["status"], "failed");
    assert_eq!(finished("c3")["error_kind"], "not_found");
    assert_eq!(finished("c3")["duration_ms"], 0.0);
}

#[test]
fn turn_usage_errors_exit_2_with_one_line() {
    let fx = Fixture::new();
    let turn = |format: &str, stdin: &[u8]| fx.run(&["turn", "--format", format], Some(stdin));
    assert_eq!(
        turn("gemini", b"{oops").usage_error(),
        "standard input is not valid JSON: key must be a string at line 1 column 2"
    );
    assert_eq!(
        turn("anthropic", b"").usage_error(),
        "standard input is empty; expected one assistant message in anthropic format"
    );
    assert_eq!(
        turn("anthropic", br#"{"role": "user", "content": []}"#).usage_error(),
        "invalid Anthropic Messages message: expected a message with role `assistant` (the model's turn), found role `user`"
    );
    let message =
        turn("openai-chat", br#"{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function"}]}"#);
    assert!(message.usage_error().starts_with("invalid OpenAI Chat Completions message at `tool_calls[0]"));
    assert!(
        turn("openai-chat", b"\xff")
            .usage_error()
            .starts_with("cannot read the assistant message from standard input")
    );
    assert_eq!(
        turn("mcp", b"{}").usage_error(),
        "invalid value 'mcp' for '--format <FORMAT>'; [possible values: openai-chat, openai-responses, anthropic, gemini] (see `tools turn --help`)"
    );
    assert_eq!(
        fx.run(&["turn"], Some(b"{}")).usage_error(),
        "the following required arguments were not provided: --format <FORMAT> (see `tools turn --help`)"
    );
}

/// Whether process `pid` has ended (gone, or a zombie waiting to be reaped).
#[cfg(target_os = "linux")]
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status.lines().any(|l| l.starts_with("State:") && l.contains('Z')),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn interrupting_a_call_stops_the_tool_and_still_prints_its_result() {
    use std::process::Stdio;
    use std::time::Duration;

    let fx = Fixture::new();
    let child = fx
        .command(&[
            "call",
            "bash",
            r#"{"command": "echo $$ > pid.txt; exec sleep 600", "timeout_secs": 600}"#,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = fx.ws().join("pid.txt");
    let mut pid = None;
    for _ in 0..400 {
        if let Some(n) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse::<u32>().ok()) {
            pid = Some(n);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = pid.expect("the command started");
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let run = common::Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let result = run.json();
    assert_eq!(result["is_error"], true);
    // bash hands back what the command printed and says why it stopped.
    assert!(
        result["output"].as_str().unwrap().ends_with(
            "[cancelled: the output above is what the command printed until then.]\n\n[killed the command; no process it started was still running]"
        ),
        "{result}"
    );
    assert_eq!(result["metadata"]["error_kind"], "cancelled");
    assert_eq!(result["metadata"]["cancelled"], true);
    // Without cancellation the command would run for 10 minutes.
    for _ in 0..200 {
        if ended(pid) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ended(pid), "the command (pid {pid}) outlived `tools call`");
}

#[test]
fn turn_runs_exclusive_calls_one_at_a_time_in_order() {
    let fx = Fixture::new();
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "sleep 0.2; echo first"}},
        {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": "echo second"}},
    ]});
    let run = fx.run(&["turn", "--format", "anthropic", "--events"], Some(message.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.json(),
        json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "first\n"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "second\n"},
        ]}])
    );
    let lifecycle: Vec<(String, String)> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|e| e["type"] == "started" || e["type"] == "finished")
        .map(|e| (e["call_id"].as_str().unwrap().to_owned(), e["type"].as_str().unwrap().to_owned()))
        .collect();
    let expected: Vec<(String, String)> =
        [("t1", "started"), ("t1", "finished"), ("t2", "started"), ("t2", "finished")]
            .iter()
            .map(|(c, t)| ((*c).to_owned(), (*t).to_owned()))
            .collect();
    assert_eq!(lifecycle, expected, "bash is exclusive: the second call starts after the first finished");
}

#[cfg(target_os = "linux")]
#[test]
fn call_sandboxes_bash_by_default_and_takes_writable_roots() {
    let probe = tool_sandbox_probe();
    if !probe {
        return;
    }
    let root = tools_test_dir("sandbox-root");
    let extra = tools_test_dir("sandbox-extra");
    let target = extra.join("written");
    let args = format!(r#"{{"command": "echo x > {}"}}"#, target.display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(["call", "bash", &args, "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[sandbox: writing to"));
    assert!(!target.exists());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(["call", "bash", &args, "--root"])
        .arg(&root)
        .arg("--writable-root")
        .arg(&extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(target.exists());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tools"))
        .args(["call", "bash", &args, "--sandbox", "read-only", "--writable-root"])
        .arg(&extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "tools: --writable-root only applies to --sandbox workspace-write, and the sandbox is read-only"
    );
}

/// Whether the kernel has Landlock and seccomp (under CI it must).
#[cfg(target_os = "linux")]
fn tool_sandbox_probe() -> bool {
    let landlock = std::path::Path::new("/sys/kernel/security/landlock").exists()
        || std::process::Command::new("python3")
            .args(["-c", "import ctypes; l = ctypes.CDLL(None); raise SystemExit(0 if l.syscall(444, None, 0, 1) > 0 else 1)"])
            .status()
            .is_ok_and(|s| s.success());
    assert!(landlock || std::env::var("CI").as_deref() != Ok("true"), "CI must have Landlock");
    landlock
}

/// A new directory outside the temporary directory, which sandboxed commands may write.
fn tools_test_dir(tag: &str) -> std::path::PathBuf {
    let path = outside_temp_base().join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    path.canonicalize().unwrap()
}

/// Through the binary, a hook command runs in the commands' sandbox, and a mounted stdio server
/// whose entry says `"sandbox": "read-only"` runs in that one: neither can write outside the
/// workspace, while the same server without the key can.
#[cfg(target_os = "linux")]
#[test]
fn hooks_and_mounted_servers_with_a_sandbox_key_run_sandboxed() {
    if !tool_sandbox_probe() {
        return;
    }
    let root = tools_test_dir("sandbox-hook-root");
    let outside = tools_test_dir("sandbox-hook-outside");
    let marker = outside.join("hook-wrote");
    let settings = outside.join("settings.json");
    let hook = format!("echo x > {} || exit 1; exit 0", marker.display());
    let text = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "ls", "hooks": [
        {"type": "command", "command": hook}
    ]}]}});
    std::fs::write(&settings, text.to_string()).unwrap();
    let tools = env!("CARGO_BIN_EXE_tools");
    let call = |extra: &[&str]| {
        std::process::Command::new(tools)
            .args(["call", "ls", "{}", "--root"])
            .arg(&root)
            .arg("--settings")
            .arg(&settings)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = call(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("PreToolUse hook"), "{stdout}");
    assert!(!marker.exists(), "the sandboxed hook wrote outside the workspace");
    let out = call(&["--sandbox", "off"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(marker.exists(), "unconfined, the hook writes");

    // A server that writes a file outside the workspace as it starts, then serves.
    let written = |name: &str| outside.join(format!("{name}-wrote"));
    let server = |name: &str| {
        let script =
            format!("echo x > {}; exec {tools} serve --root {}", written(name).display(), root.display());
        serde_json::json!({"command": "/bin/sh", "args": ["-c", script]})
    };
    let mut confined = server("confined");
    confined["sandbox"] = serde_json::json!("read-only");
    let config = outside.join("mcp.json");
    let text = serde_json::json!({"mcpServers": {"confined": confined, "free": server("free")}});
    std::fs::write(&config, text.to_string()).unwrap();
    let out = std::process::Command::new(tools)
        .args(["call", "confined__ls", "{}", "--sandbox", "off", "--root"])
        .arg(&root)
        .arg("--mcp-config")
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("tools: MCP server `confined`: sandbox read-only"), "{stderr}");
    assert!(!stderr.contains("`free`"), "{stderr}");
    assert!(!written("confined").exists(), "the sandboxed server wrote outside the workspace");
    assert!(written("free").exists(), "the server without a sandbox key runs unconfined");

    std::fs::write(&config, r#"{"mcpServers": {"x": {"command": "true", "sandbox": "sometimes"}}}"#).unwrap();
    let out = std::process::Command::new(tools).args(["list", "--mcp-config"]).arg(&config).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`sandbox`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

include!("../../../tool-sandbox/tests/support/outside_temp.rs");
