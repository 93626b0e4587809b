//! The `tools` binary keeps a model inside `--root`, and separate processes editing one file
//! never lose an update.

use crate::common;

use std::process::Stdio;

use common::Fixture;
use serde_json::{Value, json};

/// The paths of the reported escape: a missing name or a file before `..`, then a link out.
const ESCAPES: [&str; 3] =
    ["nope/../link/outside.txt", "hello.txt/x/../../link/outside.txt", "link/outside.txt"];

fn fixture() -> Fixture {
    let fx = Fixture::new();
    std::os::unix::fs::symlink("..", fx.ws().join("link")).unwrap();
    fx
}

fn assert_untouched(fx: &Fixture) {
    assert_eq!(std::fs::read_to_string(fx.dir.path().join("outside.txt")).unwrap(), "secret\n");
}

#[test]
fn call_refuses_every_escape_with_every_file_tool() {
    let fx = fixture();
    for path in ESCAPES {
        let dir = path.trim_end_matches("/outside.txt");
        for (tool, args) in [
            ("read", json!({"path": path})),
            ("write", json!({"path": path, "content": "PWNED"})),
            ("edit", json!({"path": path, "old_string": "secret", "new_string": "PWNED"})),
            ("ls", json!({"path": dir})),
            ("grep", json!({"pattern": "secret", "path": dir})),
            ("glob", json!({"pattern": "*.txt", "path": dir})),
        ] {
            let run = fx.run(&["call", tool, &args.to_string()], None);
            assert_eq!(run.code, 1, "{tool} {args}: {}", run.stdout);
            let out = run.json();
            assert_eq!(out["is_error"], json!(true));
            let text = out["output"].as_str().unwrap();
            assert!(!text.contains("secret\n") && !text.contains("outside.txt\n"), "{tool} {args}: {text}");
        }
    }
    assert_untouched(&fx);
}

#[test]
fn turn_refuses_the_escape_for_every_call_of_a_batch() {
    let fx = fixture();
    let calls: Vec<Value> = ESCAPES
        .iter()
        .enumerate()
        .map(|(i, path)| {
            json!({"type": "tool_use", "id": format!("t{i}"), "name": "write", "input": {"path": path, "content": "PWNED"}})
        })
        .collect();
    let message = json!({"role": "assistant", "content": calls});
    let run = fx.run(&["turn", "--format", "anthropic"], Some(message.to_string().as_bytes()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let blocks = run.json()[0]["content"].as_array().unwrap().clone();
    assert_eq!(blocks.len(), ESCAPES.len());
    for block in blocks {
        assert_eq!(block["is_error"], json!(true), "{block}");
    }
    assert_untouched(&fx);
}

/// Eight `tools call edit` processes append to one file at once: each edit lands, or is
/// refused with "read the file again"; the file holds exactly the edits that landed.
#[test]
fn separate_processes_editing_one_file_never_lose_an_update() {
    let fx = Fixture::new();
    std::fs::write(fx.ws().join("log.txt"), "END\n").unwrap();
    let mut landed = Vec::new();
    for round in 0..4 {
        let children: Vec<_> = (0..8)
            .map(|i| {
                let line = format!("p{round}-{i}");
                let args =
                    json!({"path": "log.txt", "old_string": "END\n", "new_string": format!("{line}\nEND\n")});
                let child = fx
                    .command(&["call", "edit", &args.to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                (line, child)
            })
            .collect();
        for (line, child) in children {
            let output = child.wait_with_output().unwrap();
            let out: Value = serde_json::from_slice(&output.stdout).unwrap();
            if out["is_error"] == json!(false) {
                landed.push(line);
            } else {
                let text = out["output"].as_str().unwrap();
                assert!(text.contains("Read the file again"), "{text}");
            }
        }
    }
    let content = std::fs::read_to_string(fx.ws().join("log.txt")).unwrap();
    let mut lines: Vec<&str> = content.lines().filter(|l| *l != "END").collect();
    lines.sort_unstable();
    landed.sort_unstable();
    assert_eq!(lines, landed);
    assert!(!landed.is_empty());
}
