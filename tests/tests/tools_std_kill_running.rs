//! `kill_running_commands` (what `tools serve` calls when its session ends) kills every running
//! local command with its whole tree, and what finished commands left running in the
//! background. Alone in its test binary: it kills every command of the process.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use tools_std::LocalOperations;
use tools_std::ops::{Operations, ShellRequest};
use tools_std::process::{KillReport, KillScope, kill_running_commands};

fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The job whose pid the command wrote to `path`, once `setsid` has made it a session of its own
/// (the shell writes `$!` as soon as it has forked, before the job runs `setsid`).
async fn pid_in(path: &Path) -> i32 {
    loop {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<i32>().ok())
            && session_of(pid) == Some(pid)
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The session `pid` is in (the sixth field of its `stat`).
fn session_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(3)?.parse().ok()
}

#[tokio::test]
async fn every_running_command_is_killed_with_its_tree_and_so_is_what_a_finished_one_left() {
    let dir = std::env::temp_dir().join(format!("tools-kill-running-{}", std::process::id()));
    let dirs: Vec<_> = ["a", "b", "done"].iter().map(|name| dir.join(name)).collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let request = |cwd: &Path, command: &str| ShellRequest {
        command: command.to_owned(),
        cwd: cwd.to_path_buf(),
        ..ShellRequest::default()
    };
    let running = "setsid sleep 300 > /dev/null 2>&1 & echo $! > bg.pid; wait";
    let local = LocalOperations::open(&dir).unwrap();
    let mut first = local.spawn_shell(&request(&dirs[0], running)).unwrap();
    let mut second = local.spawn_shell(&request(&dirs[1], running)).unwrap();
    let mut finished = local
        .spawn_shell(&request(&dirs[2], "setsid sleep 300 > /dev/null 2>&1 & echo $! > bg.pid"))
        .unwrap();
    finished.control.wait().await.unwrap();
    let jobs = [
        pid_in(&dirs[0].join("bg.pid")).await,
        pid_in(&dirs[1].join("bg.pid")).await,
        pid_in(&dirs[2].join("bg.pid")).await,
    ];

    let reports = kill_running_commands();

    let expected = KillReport {
        scope: KillScope::ProcessTree,
        shell: true,
        started: 1,
        outside_group: 1,
        not_killed: Vec::new(),
    };
    let left = KillReport { shell: false, ..expected.clone() };
    assert_eq!(reports, vec![expected.clone(), expected, left]);
    assert_eq!(first.control.wait().await.unwrap().signal, Some(9));
    assert_eq!(second.control.wait().await.unwrap().signal, Some(9));
    for _ in 0..200 {
        if !jobs.iter().any(|pid| runs(*pid)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let jobs_survived: Vec<i32> = jobs.iter().copied().filter(|pid| runs(*pid)).collect();
    for pid in jobs {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(jobs_survived, Vec::<i32>::new(), "jobs that survived the end of the session");
    // Killed commands are no longer known: a second call kills nothing.
    assert_eq!(kill_running_commands(), Vec::<KillReport>::new());
}
