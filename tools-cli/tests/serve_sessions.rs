//! `tools serve` with background sessions: a client that goes away (its end of the connection
//! closed) leaves no process of any session behind, including jobs that left the command's
//! process group. Checked in `/proc`.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::Fixture;
use serde_json::{Value, json};
use tool_tests::runs;

/// A safety net against a hang, not a measurement.
const WITHIN: Duration = Duration::from_secs(60);

fn send(input: &mut ChildStdin, message: &Value) {
    writeln!(input, "{message}").expect("write a line");
    input.flush().expect("flush");
}

/// The reply to request `id`, skipping notifications.
fn reply(lines: &mpsc::Receiver<String>, id: u64) -> Value {
    loop {
        let line = lines.recv_timeout(WITHIN).expect("a reply");
        let value: Value = serde_json::from_str(&line).expect("JSON");
        if value["id"] == json!(id) {
            return value;
        }
    }
}

fn pid_in(path: &Path) -> i32 {
    for _ in 0..3000 {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} was never written", path.display());
}

#[test]
fn a_client_that_goes_away_leaves_no_session_process_behind() {
    let fx = Fixture::new();
    let mut command = fx.command(&["serve"]);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut server = command.spawn().expect("spawn tools serve");
    let mut input = server.stdin.take().expect("stdin");
    let output = server.stdout.take().expect("stdout");
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    send(
        &mut input,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    assert!(reply(&lines, 0)["result"].is_object());
    send(&mut input, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let command = "echo $$ > shell.pid; sleep 300 & echo $! > job.pid; \
                   setsid sleep 300 > /dev/null 2>&1 & echo $! > setsid.pid; echo started; wait";
    send(
        &mut input,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": command, "background": true}}}),
    );
    let answer = reply(&lines, 1);
    let text = answer["result"]["content"][0]["text"].as_str().expect("text").to_owned();
    assert!(text.contains("[session 1 is still running"), "{answer}");
    let ws = fx.ws();
    let pids: Vec<i32> = ["shell.pid", "job.pid", "setsid.pid"].iter().map(|n| pid_in(&ws.join(n))).collect();
    for pid in &pids {
        assert!(runs(*pid), "{pid} is not running");
    }
    // Another call: the session goes on.
    send(
        &mut input,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "bash_list", "arguments": {}}}),
    );
    let listed = reply(&lines, 2);
    assert!(listed.to_string().contains("session 1: running"), "{listed}");

    // The client goes away: its end of the connection closes.
    drop(input);
    let mut exited = false;
    for _ in 0..(WITHIN.as_millis() / 50) {
        if server.try_wait().expect("wait").is_some() {
            exited = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(exited, "tools serve did not exit when its client went away");
    for pid in pids {
        let mut dead = false;
        for _ in 0..600 {
            if !runs(pid) {
                dead = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(dead, "{pid} outlived the client that started it");
    }
}
