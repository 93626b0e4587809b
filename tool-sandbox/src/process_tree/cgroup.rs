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
    /// Its cgroups in cgroup v1 hierarchies, made for a limit the v2 one cannot enforce (the
    /// `pids` or `memory` controller mounted on its own, as on hybrid systems).
    v1: Vec<PathBuf>,
}

/// What a [`Cgroup::limit`] made the kernel enforce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limited {
    /// The number of processes and threads (`pids.max`).
    pub processes: bool,
    /// The memory its processes may use together (`memory.max`, `memory.limit_in_bytes`).
    pub memory: bool,
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
                sweep(&base, has_ended);
            }
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("tools-command-{}-{n}", std::process::id()));
            std::fs::create_dir(&dir).map(|()| Cgroup { dir, v1: Vec::new() })
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

    /// Bounds its processes (and threads) to `processes` and their memory to `memory` bytes,
    /// where a controller is there to do it: in its own directory when the controller is enabled
    /// for it (cgroup v2), else in a cgroup of the same name in the controller's cgroup v1
    /// hierarchy, which [`Cgroup::procs_for_joining`] then joins too. Says what is enforced.
    pub fn limit(&mut self, processes: Option<u64>, memory: Option<u64>) -> Limited {
        let mut enforced = Limited::default();
        if let Some(max) = processes {
            enforced.processes =
                write_limit(&self.dir, "pids.max", max) || self.limit_v1("pids", "pids.max", max);
        }
        if let Some(max) = memory {
            enforced.memory = if write_limit(&self.dir, "memory.max", max) {
                // Without swap to fall back on; a kernel without swap accounting has no file.
                let _ = write_limit(&self.dir, "memory.swap.max", 0);
                true
            } else {
                self.limit_v1("memory", "memory.limit_in_bytes", max)
            };
        }
        enforced
    }

    /// Makes a cgroup of this one's name in the v1 hierarchy of `controller` and writes `max`
    /// to its `file`.
    fn limit_v1(&mut self, controller: &str, file: &str, max: u64) -> bool {
        let Some(name) = self.dir.file_name() else { return false };
        let Ok(base) = v1_dir(controller) else { return false };
        let dir = base.join(name);
        if std::fs::create_dir(&dir).is_err() {
            return false;
        }
        if write_limit(&dir, file, max) {
            self.v1.push(dir);
            true
        } else {
            let _ = std::fs::remove_dir(&dir);
            false
        }
    }

    /// Its `cgroup.procs`, and those of its v1 cgroups, open for writing: a process that
    /// writes `0` to each joins them all.
    pub fn procs_for_joining(&self) -> io::Result<Vec<OwnedFd>> {
        std::iter::once(&self.dir)
            .chain(&self.v1)
            .map(|dir| {
                let file = std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs"))?;
                Ok(OwnedFd::from(file))
            })
            .collect()
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
        for dir in &self.v1 {
            let _ = std::fs::remove_dir(dir);
        }
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

impl Cgroup {
    /// Ends what the commands of the process `owner`, which has ended (or is ending: a zombie
    /// still has its `/proc` entry), left running in their cgroups beneath this process's own,
    /// as [`Cgroup::create`] does for every ended process the first time: for a process that
    /// watches another and outlives it (`tools` starts one that waits for its end).
    pub fn end_commands_of(owner: u32) {
        if let Ok(base) = own_dir() {
            sweep(&base, |pid| pid == owner);
        }
    }
}

/// Ends what processes no longer running left beneath `base`: the processes still in their
/// commands' cgroups (jobs a command left running, which its process would have killed at the
/// end of its session had it not been killed itself) are killed (`cgroup.kill`), and the
/// cgroups removed once empty. `ended`: whether the process of that id has ended.
fn sweep(base: &Path, ended: impl Fn(u32) -> bool) {
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
        if owner != std::process::id() && ended(owner) {
            let dir = entry.path();
            // A process of another pid namespace shows as 0: its owner may be alive there.
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            let elsewhere = procs.lines().any(|pid| pid.trim() == "0");
            if !elsewhere && std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
                // The kernel kills them at once; they leave the cgroup as they are reaped.
                for _ in 0..50 {
                    let events = std::fs::read_to_string(dir.join("cgroup.events")).unwrap_or_default();
                    if !events.lines().any(|line| line == "populated 1") {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(4));
                }
            }
            // Fails, and leaves it, while a process is still in it.
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// Whether the process `pid` has ended (and was reaped).
fn has_ended(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Writes `max` to the limit `file` of the cgroup `dir`, if it has one.
fn write_limit(dir: &Path, file: &str, max: u64) -> bool {
    let path = dir.join(file);
    path.exists() && std::fs::write(path, max.to_string()).is_ok()
}

/// The directory of this process's cgroup in the cgroup v2 hierarchy.
fn own_dir() -> io::Result<PathBuf> {
    let not_found = || io::Error::new(io::ErrorKind::NotFound, "no cgroup v2 hierarchy");
    let own = std::fs::read_to_string("/proc/self/cgroup")?;
    let path = own.lines().find_map(|line| line.strip_prefix("0::")).ok_or_else(not_found)?.trim().to_owned();
    mounted_dir(&path, |fstype, _| fstype == "cgroup2").ok_or_else(not_found)
}

/// The directory of this process's cgroup in the cgroup v1 hierarchy of `controller`, where
/// one is mounted; the empty cgroups that processes no longer running left there are removed
/// the first time.
fn v1_dir(controller: &str) -> io::Result<PathBuf> {
    let not_found =
        || io::Error::new(io::ErrorKind::NotFound, format!("no cgroup v1 `{controller}` hierarchy"));
    let own = std::fs::read_to_string("/proc/self/cgroup")?;
    // `ID:CONTROLLERS:PATH`, the controllers separated by commas.
    let path = own
        .lines()
        .find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            controllers.split(',').any(|c| c == controller).then(|| path.trim().to_owned())
        })
        .ok_or_else(not_found)?;
    let dir = mounted_dir(&path, |fstype, options| {
        fstype == "cgroup" && options.split(',').any(|o| o == controller)
    })
    .ok_or_else(not_found)?;
    static SWEPT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut swept = SWEPT.lock().unwrap_or_else(|p| p.into_inner());
    if !swept.iter().any(|c| c == controller) {
        swept.push(controller.to_owned());
        sweep(&dir, has_ended);
    }
    Ok(dir)
}

/// Where the cgroup `path` is, in the first mount whose file system type and super-block
/// options `wanted` accepts.
fn mounted_dir(path: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    for line in mounts.lines() {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER`
        let Some((before, after)) = line.split_once(" - ") else { continue };
        let mut after = after.split_whitespace();
        let (Some(fstype), Some(_), Some(options)) = (after.next(), after.next(), after.next()) else {
            continue;
        };
        if !wanted(fstype, options) {
            continue;
        }
        let fields: Vec<&str> = before.split_whitespace().collect();
        let (Some(root), Some(mount)) = (fields.get(3), fields.get(4)) else { continue };
        let Some(inside) = path.strip_prefix(root.trim_end_matches('/')) else { continue };
        let dir = Path::new(&unescape(mount)).join(inside.trim_start_matches('/'));
        if dir.is_dir() {
            return Some(dir);
        }
    }
    None
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
