//! A command's whole process tree: found through `/proc` (the descendants of its shell, its
//! process group, the processes carrying its marker, its cgroup), frozen with `SIGSTOP`, then
//! killed, with a report of exactly what was killed. `tools-std`'s `bash` and the permission
//! hook commands both use it (Linux; elsewhere only the report types exist).

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod session;

#[cfg(target_os = "linux")]
pub use cgroup::{Cgroup, Limited};
#[cfg(target_os = "linux")]
pub use linux::{MountNamespace, Process, Tree};
#[cfg(target_os = "linux")]
pub(crate) use linux::{MountsElsewhere, is_running, start_of};
#[cfg(target_os = "linux")]
pub use session::lead_session;

/// The environment variable set, to a value unique to the command ([`new_marker`]), for every
/// command whose tree is killed: its descendants inherit it, which is how they are found.
pub const MARKER_VAR: &str = "TOOLS_COMMAND_ID";

/// A value no other command of any process on this machine has: this process's id, a counter,
/// and randomness (against a pid reused by a later process).
pub fn new_marker() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // The pid and counter are unique among live processes; randomness covers a reused pid.
    format!("{}-{n}-{:016x}", std::process::id(), getrandom::u64().unwrap_or(0))
}

/// How the processes of a command were found when it was killed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KillScope {
    /// Every process of the command was looked for (its descendants, its process group, and
    /// every process carrying its marker), and the counts are exact.
    #[default]
    ProcessTree,
    /// Only the command's process group was signalled; processes that left it were not looked
    /// for, and nothing was counted.
    ProcessGroup,
}

/// A process of the command that was found but could not be killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotKilled {
    /// Its process id.
    pub pid: i32,
    /// Why, in words.
    pub reason: String,
}

/// What a kill of a command's tree killed ([`Tree::kill`] on Linux).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillReport {
    /// How the processes were found; with [`KillScope::ProcessGroup`] the counts below are 0.
    pub scope: KillScope,
    /// The shell itself was still running and was killed.
    pub shell: bool,
    /// Processes the command started (other than the shell) that were killed.
    pub started: usize,
    /// How many of `started` had left the shell's process group (`set -m`, `setsid`, a daemon).
    pub outside_group: usize,
    /// Processes of the command that were found but survived.
    pub not_killed: Vec<NotKilled>,
}
