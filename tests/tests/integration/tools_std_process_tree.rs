//! `bash` stops a command with every process it started: background jobs in their own group
//! (`set -m`), new sessions (`setsid`), `nohup`, double forks, orphans that cleared their
//! environment, and a command that keeps forking. Checked in `/proc`, with real processes.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_runtime::{CancellationToken, Registry, ToolContext, ToolOutput, context::Dependencies};
use tool_tests::{carriers, runs};
use tools_std::Workspace;

/// A workspace in a fresh temporary directory, removed on drop.
struct Ws {
    root: PathBuf,
    registry: Registry,
    deps: Arc<Dependencies>,
}

impl Ws {
    fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("tools-process-tree-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        let mut deps = Dependencies::new();
        deps.insert(Workspace::new(&root).unwrap());
        let registry = Registry::builder().tools(tools_std::all()).build().unwrap();
        Ws { root, registry, deps: Arc::new(deps) }
    }

    fn ctx(&self, token: &CancellationToken) -> ToolContext {
        ToolContext::builder("bash").dependencies(self.deps.clone()).cancellation_token(token.clone()).build()
    }

    /// Runs `command` and cancels it once it has written the file `ready`.
    async fn cancel_when_ready(&self, command: &str) -> ToolOutput {
        let token = CancellationToken::new();
        let ready = self.root.join("ready");
        let cancel = token.clone();
        let pids = self.root.join("bg.pid");
        let canceller = tokio::spawn(async move {
            wait_for_file(&ready).await;
            // A background job whose pid was written may still be between its fork and its
            // `exec` (and `setsid`): wait until it is the `sleep` it will be, so the counts in
            // the kill report do not depend on how loaded the machine is.
            for pid in std::fs::read_to_string(&pids).unwrap_or_default().split_whitespace() {
                let comm = format!("/proc/{pid}/comm");
                for _ in 0..1000 {
                    if std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "sleep") {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
            cancel.cancel();
        });
        let args = json!({"command": command, "timeout_secs": 600}).to_string();
        let out = self.registry.call("bash", &args, self.ctx(&token)).await.unwrap();
        canceller.await.unwrap();
        out
    }

    /// Runs `command` with a timeout of one second.
    async fn time_out(&self, command: &str) -> ToolOutput {
        let args = json!({"command": command, "timeout_secs": 1}).to_string();
        let out = self.registry.call("bash", &args, self.ctx(&CancellationToken::new())).await.unwrap();
        assert_eq!(out.metadata["timed_out"], json!(true), "{}", out.text_content());
        out
    }

    fn pids(&self, name: &str) -> Vec<i32> {
        let text = std::fs::read_to_string(self.root.join(name)).unwrap();
        text.split_whitespace().map(|pid| pid.parse().unwrap()).collect()
    }

    /// The command's marker, which it wrote to `id`.
    fn marker(&self) -> String {
        std::fs::read_to_string(self.root.join("id")).unwrap().trim().to_owned()
    }
}

impl Drop for Ws {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

async fn wait_for_file(path: &Path) {
    while std::fs::metadata(path).map_or(true, |m| m.len() == 0) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (briefly: `SIGKILL` was already sent) until none of `pids` runs; returns the survivors.
async fn survivors(pids: &[i32]) -> Vec<i32> {
    for _ in 0..200 {
        if !pids.iter().any(|&pid| runs(pid)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let left: Vec<i32> = pids.iter().copied().filter(|&pid| runs(pid)).collect();
    // Leave nothing behind, whatever the assertions say.
    for pid in &left {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    left
}

fn killed(out: &ToolOutput) -> &Value {
    &out.metadata["killed"]
}

#[tokio::test]
async fn a_set_m_job_in_its_own_process_group_is_killed_on_timeout() {
    let ws = Ws::new("set-m");
    let out = ws.time_out("set -m; sleep 300 & echo $! > bg.pid; wait").await;
    let job = ws.pids("bg.pid");
    assert_eq!(survivors(&job).await, Vec::<i32>::new(), "the `set -m` job outlived the timeout");
    assert!(
        out.text_content().ends_with(
            "\n\n[killed the command and 1 process it started (it had left the command's process group)]"
        ),
        "{}",
        out.text_content()
    );
    assert_eq!(
        killed(&out),
        &json!({"scope": "process_tree", "command": true, "started": 1, "outside_group": 1, "not_killed": []})
    );
}

#[tokio::test]
async fn a_setsid_process_in_a_new_session_is_killed_on_cancellation() {
    let ws = Ws::new("setsid");
    let out = ws.cancel_when_ready("setsid sleep 300 & echo $! > bg.pid; echo yes > ready; wait").await;
    assert_eq!(survivors(&ws.pids("bg.pid")).await, Vec::<i32>::new());
    assert_eq!(killed(&out)["started"], json!(1));
    assert_eq!(killed(&out)["outside_group"], json!(1));
}

#[tokio::test]
async fn a_nohup_process_with_its_output_redirected_is_killed_on_cancellation() {
    let ws = Ws::new("nohup");
    let out = ws
        .cancel_when_ready("nohup sleep 300 > /dev/null 2>&1 & echo $! > bg.pid; echo yes > ready; wait")
        .await;
    assert_eq!(survivors(&ws.pids("bg.pid")).await, Vec::<i32>::new());
    assert_eq!(killed(&out)["started"], json!(1));
    assert_eq!(killed(&out)["outside_group"], json!(0));
}

#[tokio::test]
async fn a_double_forked_daemon_in_a_new_session_is_killed() {
    let ws = Ws::new("double-fork");
    // The intermediate `sh` exits at once: the daemon's parent is gone and it is in its own session.
    let out = ws
        .cancel_when_ready(
            "(setsid sh -c 'sleep 300 & echo $! > bg.pid' &); while [ ! -s bg.pid ]; do sleep 0.01; done; \
             sleep 300 & echo yes > ready; wait",
        )
        .await;
    assert_eq!(survivors(&ws.pids("bg.pid")).await, Vec::<i32>::new());
    assert_eq!(
        killed(&out),
        &json!({"scope": "process_tree", "command": true, "started": 2, "outside_group": 1, "not_killed": []})
    );
}

#[tokio::test]
async fn an_orphan_that_cleared_its_environment_closed_its_output_and_left_the_session_is_killed() {
    let ws = Ws::new("env-i");
    let out = ws
        .cancel_when_ready(
            "env -i setsid sh -c 'sleep 300 < /dev/null > /dev/null 2>&1 & echo $! > bg.pid' > /dev/null 2>&1 & \
             while [ ! -s bg.pid ]; do sleep 0.01; done; sleep 300 & echo yes > ready; wait",
        )
        .await;
    let orphan = ws.pids("bg.pid");
    // No marker, no group, no output pipe: it is found only because the shell adopted it.
    assert_eq!(survivors(&orphan).await, Vec::<i32>::new(), "the env -i orphan escaped");
    assert_eq!(
        killed(&out),
        &json!({"scope": "process_tree", "command": true, "started": 2, "outside_group": 1, "not_killed": []})
    );
}

/// Every way of leaving that the other tests try one at a time, in one command.
const EVERY_ESCAPE: &str = "echo $TOOLS_COMMAND_ID > id; \
    (set -m; sleep 300 & echo $! >> pids); \
    setsid sleep 300 & echo $! >> pids; \
    nohup sleep 300 > /dev/null 2>&1 & echo $! >> pids; \
    (setsid sh -c 'sleep 300 & echo $! >> pids' &); \
    env -i setsid sh -c 'sleep 300 > /dev/null 2>&1 & echo $! >> pids' > /dev/null 2>&1 & \
    while [ $(wc -l < pids) -lt 5 ]; do sleep 0.01; done; echo yes > ready; wait";

#[tokio::test]
async fn a_timeout_leaves_no_process_carrying_the_command_marker() {
    let ws = Ws::new("timeout-marker");
    let out = ws.time_out(EVERY_ESCAPE).await;
    assert_eq!(survivors(&ws.pids("pids")).await, Vec::<i32>::new());
    assert_eq!(carriers(&ws.marker()), Vec::<i32>::new());
    assert_eq!(killed(&out)["command"], json!(true));
    assert_eq!(killed(&out)["started"], json!(5), "{}", out.text_content());
}

#[tokio::test]
async fn a_cancellation_leaves_no_process_carrying_the_command_marker() {
    let ws = Ws::new("cancel-marker");
    let out = ws.cancel_when_ready(EVERY_ESCAPE).await;
    assert_eq!(survivors(&ws.pids("pids")).await, Vec::<i32>::new());
    assert_eq!(carriers(&ws.marker()), Vec::<i32>::new());
    // `set -m`, `setsid`, the double fork and `env -i setsid` left the group; `nohup` did not.
    assert_eq!(
        killed(&out),
        &json!({"scope": "process_tree", "command": true, "started": 5, "outside_group": 4, "not_killed": []})
    );
}

#[tokio::test]
async fn the_result_says_what_was_killed() {
    let ws = Ws::new("result-text");
    let out = ws
        .cancel_when_ready(
            // Ready once `setsid` has left the group (it runs in the background).
            "echo before; setsid sh -c 'echo > left; exec sleep 300' & sleep 300 & (set -m; sleep 300 &); \
             while [ ! -e left ]; do sleep 0.01; done; echo yes > ready; wait",
        )
        .await;
    assert_eq!(
        out.text_content(),
        "before\n\n[cancelled: the output above is what the command printed until then.]\n\n\
         [killed the command and 3 processes it started (2 of them had left the command's process group)]"
    );
    assert!(out.is_error);
}

#[tokio::test]
async fn an_abandoned_call_kills_the_processes_that_left_the_group() {
    let ws = Ws::new("dropped");
    let args = json!({"command": "echo $TOOLS_COMMAND_ID > id; setsid sleep 300 & echo $! > bg.pid; \
                                  (setsid sh -c 'sleep 300 & echo $! >> bg.pid' &); wait"})
    .to_string();
    let token = CancellationToken::new();
    let call = ws.registry.call("bash", &args, ws.ctx(&token));
    let started = async {
        while ws.pids_if_any("bg.pid").len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    // The call's future is dropped midway, as a dispatcher that gave up on it would.
    tokio::select! {
        _ = call => panic!("the command ended by itself"),
        () = started => {}
    }
    assert_eq!(survivors(&ws.pids("bg.pid")).await, Vec::<i32>::new());
    assert_eq!(carriers(&ws.marker()), Vec::<i32>::new());
}

#[tokio::test]
async fn a_command_that_keeps_forking_is_frozen_and_killed_whole() {
    let ws = Ws::new("forker");
    let out = ws
        .cancel_when_ready(
            "echo $TOOLS_COMMAND_ID > id; for i in 1 2 3 4; do (for j in $(seq 150); do setsid sleep 300 & done) & done; \
             echo yes > ready; wait",
        )
        .await;
    let marker = ws.marker();
    let mut left = carriers(&marker);
    for _ in 0..200 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        left = carriers(&marker);
    }
    let left = survivors(&left).await;
    assert_eq!(left, Vec::<i32>::new());
    let started = killed(&out)["started"].as_u64().unwrap();
    assert!(started >= 4, "{}", out.text_content());
    assert_eq!(killed(&out)["not_killed"], json!([]));
}

/// A job a finished command left running (a server started in the background) goes on after
/// the call, as in a terminal, and ends with the session state it was started in.
#[tokio::test]
async fn a_background_job_of_a_command_that_finished_keeps_running_until_its_session_ends() {
    let ws = Ws::new("finished");
    let state = tool_runtime::SessionState::new();
    let args = json!({"command": "setsid sleep 300 > /dev/null 2>&1 & echo $! > bg.pid"}).to_string();
    let ctx = ToolContext::builder("bash").dependencies(ws.deps.clone()).session(state.clone()).build();
    let out = ws.registry.call("bash", &args, ctx).await.unwrap();
    assert!(!out.is_error, "{}", out.text_content());
    assert_eq!(out.metadata.get("killed"), None);
    let job = ws.pids("bg.pid");
    // Nothing was stopped: a server started in the background is the user's to stop.
    assert!(runs(job[0]));
    drop(state);
    assert_eq!(survivors(&job).await, Vec::<i32>::new(), "the job outlived its session state");
}

impl Ws {
    fn pids_if_any(&self, name: &str) -> Vec<i32> {
        std::fs::read_to_string(self.root.join(name))
            .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }
}
