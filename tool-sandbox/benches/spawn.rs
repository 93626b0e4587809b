//! The cost the sandbox adds to starting a command: `bash -c true` started and waited for, with
//! and without the sandbox, runs interleaved. Run with `cargo bench -p tool-sandbox --bench spawn`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tool_sandbox::{Sandbox, SandboxPolicy};

const RUNS: usize = 300;

fn once(sandbox: Option<&Sandbox>, cwd: &Path) -> Duration {
    let started = Instant::now();
    let mut command = Command::new("bash");
    command.arg("-c").arg("true").current_dir(cwd);
    if let Some(sandbox) = sandbox {
        sandbox.apply(&mut command, cwd).expect("the sandbox applies");
    }
    let status = command.status().expect("bash runs");
    assert!(status.success());
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let root = std::env::temp_dir().join(format!("tool-sandbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "").unwrap();
    let root = root.canonicalize().unwrap();
    let prepared = Instant::now();
    let sandbox =
        Sandbox::new(SandboxPolicy::workspace_write(&root)).expect("the kernel has the sandbox's layers");
    let prepare = prepared.elapsed();
    let without_mounts =
        Sandbox::new(SandboxPolicy { protected: Vec::new(), ..SandboxPolicy::workspace_write(&root) })
            .expect("the kernel has the sandbox's layers");
    let (mut off, mut on, mut no_mounts) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..10 {
        once(None, &root);
        once(Some(&sandbox), &root);
    }
    for _ in 0..RUNS {
        off.push(once(None, &root));
        on.push(once(Some(&sandbox), &root));
        no_mounts.push(once(Some(&without_mounts), &root));
    }
    let (off, on, no_mounts) = (median(off), median(on), median(no_mounts));
    println!("{}", sandbox.report());
    println!("preparing the sandbox once:                  {:>8.3} ms", prepare.as_secs_f64() * 1e3);
    println!("bash -c true, unconfined (median of {RUNS}):     {:>8.3} ms", off.as_secs_f64() * 1e3);
    println!("bash -c true, sandboxed (median of {RUNS}):      {:>8.3} ms", on.as_secs_f64() * 1e3);
    println!("bash -c true, sandboxed without mounts:      {:>8.3} ms", no_mounts.as_secs_f64() * 1e3);
    println!(
        "added: {:.3} ms (with the read-only mounts), {:.3} ms (Landlock and seccomp alone)",
        (on.as_secs_f64() - off.as_secs_f64()) * 1e3,
        (no_mounts.as_secs_f64() - off.as_secs_f64()) * 1e3
    );
    let _ = std::fs::remove_dir_all(&root);
}
