//! A control group (cgroup v2) per command, where this process may create one beneath its own:
//! every process the command starts is in it, whatever it does to its parent, group, session or
//! environment, so it is found there after the command's shell is gone.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Set once creating or joining a cgroup failed: this process cannot use them, and stops trying.
static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// One command's cgroup directory.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// A new, empty cgroup beneath this process's own, or `None` when there is no writable
    /// cgroup v2 hierarchy here (no permission, cgroup v1 only, not Linux).
    pub fn create() -> Option<Cgroup> {
        if UNAVAILABLE.load(Ordering::Relaxed) {
            return None;
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        static SWEPT: AtomicBool = AtomicBool::new(false);
        let created = own_dir().and_then(|base| {
            if !SWEPT.swap(true, Ordering::Relaxed) {
                sweep(&base);
            }
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("tools-command-{}-{n}", std::process::id()));
            std::fs::create_dir(&dir).map(|()| Cgroup { dir })
        });
        match created {
            Ok(cgroup) => Some(cgroup),
            Err(_) => {
                Self::unavailable();
                None
            }
        }
    }

    /// Remembers that cgroups cannot be used by this process.
    pub fn unavailable() {
        UNAVAILABLE.store(true, Ordering::Relaxed);
    }

    /// Its `cgroup.procs`, open for writing: a process that writes `0` to it joins the cgroup.
    pub fn procs_for_joining(&self) -> io::Result<OwnedFd> {
        let file = std::fs::OpenOptions::new().write(true).open(self.dir.join("cgroup.procs"))?;
        Ok(OwnedFd::from(file))
    }

    /// Its `cgroup.procs`: writing `0` to it moves the writer into the cgroup.
    pub fn procs_path(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The processes in it now.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| text.lines().filter_map(|line| line.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Removes it if no process is left in it (it stays otherwise, holding what still runs).
    pub fn remove(&self) -> bool {
        std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Once nobody can stop the command any more: empty, it goes; still holding processes
        // (jobs a finished command left running, which are the user's), it stays.
        self.remove();
    }
}

/// Removes the empty cgroups that processes no longer running left beneath `base` (a cgroup
/// stays while jobs a finished command left running are in it, and nobody is there to remove it
/// once they end).
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|name| name.strip_prefix("tools-command-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if owner != std::process::id() && !Path::new(&format!("/proc/{owner}")).exists() {
            // Fails, and leaves it, while a process is still in it.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The directory of this process's cgroup in the cgroup v2 hierarchy.
fn own_dir() -> io::Result<PathBuf> {
    let not_found = || io::Error::new(io::ErrorKind::NotFound, "no cgroup v2 hierarchy");
    let own = std::fs::read_to_string("/proc/self/cgroup")?;
    let path = own.lines().find_map(|line| line.strip_prefix("0::")).ok_or_else(not_found)?.trim().to_owned();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
    for line in mounts.lines() {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER`
        let Some((before, after)) = line.split_once(" - ") else { continue };
        if after.split_whitespace().next() != Some("cgroup2") {
            continue;
        }
        let fields: Vec<&str> = before.split_whitespace().collect();
        let (Some(root), Some(mount)) = (fields.get(3), fields.get(4)) else { continue };
        let Some(inside) = path.strip_prefix(root.trim_end_matches('/')) else { continue };
        let dir = Path::new(&unescape(mount)).join(inside.trim_start_matches('/'));
        if dir.is_dir() {
            return Ok(dir);
        }
    }
    Err(not_found())
}

/// A mountinfo field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b))
        {
            out.push((bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
