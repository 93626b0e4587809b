//! Stop signals: `tools call` and `tools turn` on SIGTERM or SIGHUP cancel their calls, kill the
//! commands' whole process trees and still print the results; `tools serve` on SIGTERM or
//! SIGINT kills the running commands' trees before it exits. Checked in `/proc`.
#![cfg(target_os = "linux")]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::Fixture;
use serde_json::{Value, json};
use tool_tests::{carriers, runs};

/// Starts processes that leave the group (`setsid`), the session and the parent (a double
/// fork), plus one that stays, writes their pids and its marker, then waits for them.
const COMMAND: &str = "echo $TOOLS_COMMAND_ID > id; setsid sleep 600 & echo $! >> bg.pid; \
    (setsid sh -c 'sleep 600 & echo $! >> bg.pid' &); sleep 600 & echo $! >> bg.pid; \
    while [ $(wc -l < bg.pid) -lt 3 ]; do sleep 0.01; done; echo yes > ready; wait";

const KILLED: &str =
    "[killed the command and 3 processes it started (2 of them had left the command's process group)]";

fn wait_for_file(path: &Path) {
    for _ in 0..2000 {
        if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never appeared", path.display());
}

fn signal(child: &Child, name: &str) {
    let status =
        std::process::Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status();
    assert!(status.unwrap().success());
}

/// Asserts that every process of the command is gone (`SIGKILL` was sent before `tools`
/// exited; dying takes a moment), then kills whatever is left so no test leaves processes.
fn assert_tree_gone(fx: &Fixture) {
    let marker = std::fs::read_to_string(fx.ws().join("id")).unwrap().trim().to_owned();
    let pids: Vec<i32> = std::fs::read_to_string(fx.ws().join("bg.pid"))
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3);
    let mut left: Vec<i32> = Vec::new();
    for _ in 0..200 {
        left = pids.iter().copied().filter(|&p| runs(p)).chain(carriers(&marker)).collect();
        left.sort_unstable();
        left.dedup();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for pid in &left {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    assert_eq!(left, Vec::<i32>::new(), "processes of the command outlived `tools`");
}

fn call_then_signal(name: &str) {
    let fx = Fixture::new();
    let args = json!({"command": COMMAND, "timeout_secs": 600}).to_string();
    let child = fx
        .command(&["call", "bash", &args])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&fx.ws().join("ready"));
    signal(&child, name);
    let run = common::Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let result = run.json();
    assert_eq!(
        result["output"],
        format!(
            "(no output)\n\n[cancelled: the output above is what the command printed until then.]\n\n{KILLED}"
        )
    );
    assert_eq!(result["metadata"]["killed"]["started"], 3);
    assert_tree_gone(&fx);
}

#[test]
fn sigterm_to_tools_call_kills_the_command_tree_and_still_prints_the_result() {
    call_then_signal("TERM");
}

#[test]
fn sighup_to_tools_call_kills_the_command_tree_and_still_prints_the_result() {
    call_then_signal("HUP");
}

#[test]
fn sigterm_to_tools_turn_kills_the_command_tree_and_still_prints_the_results() {
    let fx = Fixture::new();
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": COMMAND, "timeout_secs": 600}},
    ]});
    let mut child = fx
        .command(&["turn", "--format", "anthropic"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(message.to_string().as_bytes()).unwrap();
    wait_for_file(&fx.ws().join("ready"));
    signal(&child, "TERM");
    let run = common::Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = run.json();
    let content = results[0]["content"][0]["content"].as_str().unwrap().to_owned();
    assert!(content.ends_with(KILLED), "{results}");
    assert_eq!(results[0]["content"][0]["is_error"], true);
    assert_tree_gone(&fx);
}

/// `tools serve` with a `bash` call running, stopped by `name`.
fn serve_then_signal(name: &str) {
    let fx = Fixture::new();
    let mut child = fx
        .command(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "signals", "version": "0"}}}));
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], 1, "{line}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": COMMAND, "timeout_secs": 600}}}));
    wait_for_file(&fx.ws().join("ready"));
    signal(&child, name);
    let status = child.wait().unwrap();
    // Standard input is still open: only the signal ended the server.
    assert_eq!(status.code(), Some(0));
    drop(stdin);
    assert_tree_gone(&fx);
}

#[test]
fn sigterm_to_tools_serve_kills_the_running_commands_trees_before_it_exits() {
    serve_then_signal("TERM");
}

#[test]
fn sigint_to_tools_serve_kills_the_running_commands_trees_before_it_exits() {
    serve_then_signal("INT");
}
