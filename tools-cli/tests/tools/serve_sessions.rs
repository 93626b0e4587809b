//! `tools serve` ends its background sessions with everything they started, also what one left
//! running after its shell exited (`env -i setsid` and a double fork).
#![cfg(target_os = "linux")]

use crate::common;

use std::time::Duration;

use common::{Fixture, TOOLS};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;

fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

#[tokio::test]
async fn the_end_of_tools_serve_kills_what_a_finished_session_left_running() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let data = fx.dir.path().join("data");
    let command = tokio::process::Command::new(TOOLS).configure(|cmd| {
        cmd.arg("serve").current_dir(&ws).env("XDG_DATA_HOME", &data);
    });
    let client = ().serve(TokioChildProcess::new(command).expect("spawn")).await.expect("initialize");
    let escape = "env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > escaped.pid' \
                  > /dev/null 2>&1 < /dev/null & while [ ! -s escaped.pid ]; do sleep 0.01; done";
    let arguments = json!({"command": escape, "background": true});
    let call = CallToolRequestParams::new("bash").with_arguments(arguments.as_object().unwrap().clone());
    client.call_tool(call).await.expect("bash");
    let pid_file = ws.join("escaped.pid");
    let mut pid = None;
    for _ in 0..500 {
        pid = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse::<i32>().ok());
        if pid.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = pid.expect("the escaped process wrote its pid");
    // The session's shell exits right after; the escaped process goes on.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(runs(pid), "{pid} runs while the server does");
    client.cancel().await.expect("close");
    let mut survived = true;
    for _ in 0..500 {
        if !runs(pid) {
            survived = false;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    assert!(!survived, "{pid} outlived tools serve");
}
