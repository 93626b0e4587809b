//! A process that outlives this one to end what its commands left running: `tools` killed with
//! `SIGKILL` (an agent that kills its MCP server as it exits, the out-of-memory killer) cannot
//! kill its commands' jobs itself, which would run on until the next `tools` process in the
//! same cgroup ends them. The watcher waits for the end of this process (its standard input, a
//! pipe only this process writes to, reaches its end then, however this process ends) and ends
//! the jobs in this process's commands' cgroups ([`Cgroup::end_commands_of`]); where commands
//! get no cgroup, it has nothing to do.

#[cfg(target_os = "linux")]
use std::io::Read;
#[cfg(target_os = "linux")]
use std::os::unix::process::CommandExt;
#[cfg(target_os = "linux")]
use std::process::{Command, Stdio};

#[cfg(target_os = "linux")]
use tools_std::tool_sandbox::process_tree::Cgroup;

/// The argument that runs `tools` as the watcher of the process whose id follows it.
const WATCH: &str = "__watch-commands-of";

/// The write end of the watcher's standard input, held (never written) until this process
/// ends: it is not inherited by the commands (Rust opens its pipes close-on-exec).
#[cfg(target_os = "linux")]
static HELD: std::sync::OnceLock<std::process::ChildStdin> = std::sync::OnceLock::new();

/// Starts the watcher of this process, once; a watcher that cannot start is said on standard
/// error, and the process goes on (its commands' jobs then end with the next `tools` process).
#[cfg(target_os = "linux")]
pub(crate) fn start() {
    if HELD.get().is_some() {
        return;
    }
    let spawned = Command::new("/proc/self/exe")
        .args([WATCH, &std::process::id().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Out of the workspace, and of the process group a terminal's Ctrl-C or an agent's
        // `kill -- -PGID` reaches: it ends when this process has.
        .current_dir("/")
        .process_group(0)
        .spawn();
    match spawned {
        Ok(mut child) => {
            if let Some(stdin) = child.stdin.take() {
                let _ = HELD.set(stdin);
            }
        }
        Err(e) => crate::terminal::say(&format!(
            "tools: the process that ends the commands' jobs should this one be killed did not start: {e}"
        )),
    }
}

/// Commands get no cgroup off Linux: nothing to watch.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start() {}

/// `Some(owner)` when this process was started as a watcher (`tools __watch-commands-of PID`).
pub(crate) fn invoked(args: &[std::ffi::OsString]) -> Option<u32> {
    match args {
        [_, flag, pid] if flag == WATCH => pid.to_str()?.parse().ok(),
        _ => None,
    }
}

/// Waits for the end of `owner` (the end of standard input), then ends its commands' jobs.
#[cfg(target_os = "linux")]
pub(crate) fn watch(owner: u32) -> i32 {
    let mut buffer = [0u8; 64];
    let mut stdin = std::io::stdin().lock();
    // Nothing is ever written: a read returns at the end, or fails.
    while matches!(stdin.read(&mut buffer), Ok(n) if n > 0) {}
    Cgroup::end_commands_of(owner);
    0
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn watch(_owner: u32) -> i32 {
    0
}
