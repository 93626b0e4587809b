//! Shared helpers for the workspace tests.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory (canonical, so it compares equal
/// to what the tools report), removed on drop.
#[derive(Debug)]
pub struct TempDir {
    /// Removes the directory when dropped.
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl TempDir {
    /// A new empty directory whose name contains `tag`.
    pub fn new(tag: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix(&format!("tool-tests-{tag}-"))
            .tempdir()
            .expect("create a temporary directory");
        let path = std::fs::canonicalize(dir.path()).expect("canonical temporary directory");
        TempDir { _dir: dir, path }
    }

    /// The directory, with its links resolved.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A field of this process's /proc/self/status (`VmRSS:`, `VmHWM:`, ...), in bytes.
#[cfg(target_os = "linux")]
pub fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).expect("the field is there");
    let kb: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number of kB");
    kb * 1024
}

/// Skips the running test for `reason` (something it needs is missing), saying so on stderr past
/// the test harness's capture, so the skip shows in the run's output (`.ci/run` installs what
/// these tests need and says so when it cannot).
///
/// Call it and return from the test.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    // `eprintln!` would be captured and shown only for a failing test.
    let _ = writeln!(std::io::stderr(), "skipped {test}: {reason}");
}

/// Every file under `dir` (recursively, not following links) with its content, for comparing a
/// tree before and after.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path.clone());
                out.push((path, Vec::new()));
            } else if kind.is_file() {
                let content = std::fs::read(&path).unwrap_or_default();
                out.push((path, content));
            } else {
                out.push((path, b"<special>".to_vec()));
            }
        }
    }
    out.sort();
    out
}

/// Whether `pid` runs: it exists and is not a zombie.
pub fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The running processes whose environment holds the command marker `marker`
/// (`TOOLS_COMMAND_ID=marker`).
pub fn carriers(marker: &str) -> Vec<i32> {
    let needle = format!("{}={marker}", tools_std::process::COMMAND_ID_VAR);
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        if environ.split(|&b| b == 0).any(|e| e == needle.as_bytes()) && runs(pid) {
            found.push(pid);
        }
    }
    found
}
