//! The finished commands whose background jobs still run are remembered up to a bound; past it,
//! the oldest one's jobs are killed, not forgotten: a forgotten job would outlive the session
//! and lose the placeholders of the protected names. Alone in its test binary: it kills every
//! command of the process.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use tools_std::LocalOperations;
use tools_std::ops::{Operations, ShellRequest};
use tools_std::process::kill_running_commands;

fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// How many finished commands' jobs are kept (`MAX_LEFT_BEHIND` in `tools_std::process`).
const KEPT: usize = 256;

#[tokio::test]
async fn past_the_bound_the_oldest_left_job_is_killed_not_forgotten() {
    let dir = std::env::temp_dir().join(format!("tools-left-behind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let local = LocalOperations::open(&dir).unwrap();
    let mut jobs = Vec::new();
    for i in 0..=KEPT {
        let request = ShellRequest {
            command: format!("setsid sleep 300 > /dev/null 2>&1 & echo $! > {i}.pid"),
            cwd: dir.clone(),
            ..ShellRequest::default()
        };
        let mut finished = local.spawn_shell(&request).unwrap();
        finished.control.wait().await.unwrap();
        jobs.push(pid_in(&dir.join(format!("{i}.pid"))).await);
    }
    let first_survived = (0..200).all(|_| {
        let alive = runs(jobs[0]);
        if alive {
            std::thread::sleep(Duration::from_millis(10));
        }
        alive
    });
    let others_alive = jobs[1..].iter().filter(|pid| runs(**pid)).count();

    let reports = kill_running_commands();
    let survived: Vec<i32> = jobs.iter().copied().filter(|pid| runs(*pid)).collect();
    for pid in &jobs {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!first_survived, "the oldest job was forgotten and still runs");
    assert_eq!(others_alive, KEPT, "a newer job was killed");
    assert_eq!(reports.len(), KEPT, "the end of the session ends each kept command's jobs");
    assert_eq!(survived, Vec::<i32>::new(), "jobs that survived the end of the session");
}

async fn pid_in(path: &Path) -> i32 {
    loop {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
