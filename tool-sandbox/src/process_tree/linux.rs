//! One command's processes found through `/proc` (descendants of its shell, its process group,
//! carriers of its marker, members of its cgroup), frozen with `SIGSTOP`, then killed.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill as send};
use nix::unistd::Pid;

use super::{Cgroup, KillReport, KillScope, NotKilled};

/// Scans in one freeze before giving up on a tree that keeps changing (a fork bomb).
const FREEZE_ROUNDS: usize = 64;
/// Freezes then kills before giving up; the second one normally only confirms nothing is left.
const KILL_ATTEMPTS: usize = 4;
/// How long to let sent `SIGSTOP`s land before looking again.
const SETTLE: Duration = Duration::from_micros(500);
/// Processes of one command remembered by [`Tree::track`], at most.
const MAX_TRACKED: usize = 4096;

/// What identifies one command's processes: its shell (the process started for it, by pid and
/// start time), its marker, and its cgroup when it has one.
#[derive(Debug, Clone)]
pub struct Tree {
    /// The shell's pid, also its process group's id.
    shell: i32,
    /// The shell's start time: a process with the shell's pid but another start time is not
    /// the shell (its pid was reused), and then neither the pid nor the group id mean anything.
    shell_start: Option<u64>,
    /// `NAME=value` as it appears between NULs in `/proc/PID/environ`.
    marker: Vec<u8>,
    /// The command's own cgroup, when it has one: every process in it is the command's.
    cgroup: Option<Arc<Cgroup>>,
    /// Without a cgroup: the processes seen beneath the shell while it ran (pid and start
    /// time), found again after it exited whatever they did meanwhile.
    tracked: Arc<Mutex<HashMap<i32, u64>>>,
    /// The mount namespace of the command's own, that none of its processes can leave
    /// ([`Tree::in_mount_namespace`]): every process in it is the command's, whatever it did to
    /// its parent, group and environment.
    namespace: Option<MountNamespace>,
}

/// A namespace, by the device and inode of its `/proc/PID/ns/...` link.
type Namespace = (u64, u64);

/// A command's mount namespace, held open: its inode number is not given to another namespace
/// while a handle is (a namespace freed when its last process ends has its number given to the
/// next one made, and a kill that looked for the command's processes by a freed number would find
/// another command's).
#[derive(Debug, Clone)]
pub struct MountNamespace {
    _held: Arc<std::os::fd::OwnedFd>,
    id: Namespace,
}

impl MountNamespace {
    /// The namespace `fd` (an open `/proc/PID/ns/mnt`) refers to.
    pub(crate) fn new(fd: std::os::fd::OwnedFd) -> io::Result<MountNamespace> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::File::from(fd.try_clone()?).metadata()?;
        Ok(MountNamespace { _held: Arc::new(fd), id: (meta.dev(), meta.ino()) })
    }
}

/// The mount namespace of process `pid` (`"self"` for this one); `Err` with the error of
/// `stat`, `ENOENT` for a process that has exited (a zombie has none).
fn mount_namespace(pid: &str) -> io::Result<Namespace> {
    namespace_and_thread(pid).map(|(namespace, _)| namespace)
}

/// The mount namespace of process `pid` and the `/proc` directory of the thread it was read
/// from: the process's own, or, when its first thread has ended while others run
/// (`pthread_exit`: the process's own entries then answer nothing, as a zombie's), another
/// thread's. `ENOENT` when no thread of it is left.
fn namespace_and_thread(pid: &str) -> io::Result<(Namespace, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    let of = |dir: &Path| std::fs::metadata(dir.join("ns/mnt")).map(|meta| (meta.dev(), meta.ino()));
    let dir = PathBuf::from(format!("/proc/{pid}"));
    let first = match of(&dir) {
        Ok(namespace) => return Ok((namespace, dir)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => e,
        Err(e) => return Err(e),
    };
    let Ok(threads) = std::fs::read_dir(dir.join("task")) else { return Err(first) };
    let mut error = first;
    for thread in threads.flatten() {
        let dir = thread.path();
        match of(&dir) {
            Ok(namespace) => return Ok((namespace, dir)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => error = e,
        }
    }
    Err(error)
}

impl Tree {
    /// The tree of the command whose shell is `shell` (its process group is `shell` too),
    /// whose processes carry `var=value`, and that runs in `cgroup`. Call it right after the
    /// shell was started, while its pid is surely its own.
    pub fn new(shell: i32, var: &str, value: &str, cgroup: Option<Cgroup>) -> Self {
        let shell_start = read_stat(shell).map(|stat| stat.start);
        Tree {
            shell,
            shell_start,
            marker: format!("{var}={value}").into_bytes(),
            cgroup: cgroup.map(Arc::new),
            tracked: Arc::default(),
            namespace: None,
        }
    }

    /// Says that the command runs in the mount namespace `namespace` (from
    /// [`Placeholders::mount_namespace`](crate::Placeholders::mount_namespace)), of its own,
    /// which none of its processes can leave: then a process in it is the command's, found (and
    /// killed) even when it left the group, cleared its environment and was never seen beneath
    /// the shell, and without a cgroup the command is known to have no processes left once
    /// nothing is in it ([`Tree::may_have_processes`]). Nothing changes when `namespace` is
    /// this process's own.
    #[must_use]
    pub fn in_mount_namespace(mut self, namespace: MountNamespace) -> Self {
        if mount_namespace("self").is_ok_and(|own| own != namespace.id) {
            self.namespace = Some(namespace);
        }
        self
    }

    /// Remembers the processes beneath the shell now, while it runs (the shell adopts what the
    /// command orphans, so they are all there), for a kill after the shell is gone: a process
    /// that cleared its environment and left the group is found by its pid and start time.
    /// Only what lived at one of these looks is found: call it periodically. Nothing to do with
    /// a cgroup, which holds every process anyway.
    pub fn track(&self) {
        if self.cgroup.is_some() || self.shell_start.is_none() {
            return;
        }
        if read_stat(self.shell).map(|stat| stat.start) != self.shell_start {
            return;
        }
        let mut seen: HashMap<i32, u64> = HashMap::new();
        let mut queue = vec![self.shell];
        while let Some(pid) = queue.pop() {
            for child in children(pid) {
                if seen.len() >= MAX_TRACKED {
                    break;
                }
                if let Some(stat) = read_stat(child).filter(|stat| !stat.is_zombie())
                    && seen.insert(child, stat.start).is_none()
                {
                    queue.push(child);
                }
            }
        }
        let mut tracked = self.tracked.lock().unwrap_or_else(|p| p.into_inner());
        tracked.retain(|pid, start| {
            read_stat(*pid).is_some_and(|stat| stat.start == *start && !stat.is_zombie())
        });
        for (pid, start) in seen {
            if tracked.len() >= MAX_TRACKED {
                break;
            }
            tracked.insert(pid, start);
        }
    }
}

impl Tree {
    /// Whether processes of the command may still run: `false` only when its cgroup is known to
    /// be empty, or without one, when nothing is in its [own mount
    /// namespace](Tree::in_mount_namespace) (a look at every process started since its shell);
    /// with neither, `true`.
    pub fn may_have_processes(&self) -> bool {
        match (&self.cgroup, &self.namespace) {
            (Some(cgroup), _) => !cgroup.pids().is_empty(),
            (None, Some(namespace)) => in_namespace_anywhere(namespace.id, self.shell_start.unwrap_or(0)),
            (None, None) => true,
        }
    }

    /// Kills every process of the command that can be found (see [`Tree`]), and says what was
    /// killed. Errors only when `/proc` cannot be read.
    pub fn kill(&self) -> io::Result<KillReport> {
        kill(self)
    }

    /// The command's live processes now, as [`Tree::kill`] would find them (its shell
    /// included). Errors only when `/proc` cannot be read.
    pub fn processes(&self) -> io::Result<Vec<Process>> {
        let procs = snapshot()?;
        Ok(members(self, &procs, &mut HashMap::new())
            .iter()
            .map(|p| Process { pid: p.pid, group: p.pgid, session: p.sid })
            .collect())
    }
}

/// One process of a command ([`Tree::processes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    /// Its id.
    pub pid: i32,
    /// Its process group's id.
    pub group: i32,
    /// Its session's id.
    pub session: i32,
}

/// The children of every thread of `pid` (`/proc/PID/task/TID/children`; empty on kernels
/// built without it).
fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut children = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(text.split_ascii_whitespace().filter_map(|n| n.parse::<i32>().ok()));
        }
    }
    children
}

/// One line of `/proc/PID/stat`, the fields that matter here.
#[derive(Debug, Clone, Copy)]
struct Stat {
    pid: i32,
    ppid: i32,
    pgid: i32,
    sid: i32,
    state: u8,
    /// Clock ticks after boot: with the pid, a process's identity.
    start: u64,
}

impl Stat {
    fn is_zombie(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }

    fn is_stopped(&self) -> bool {
        matches!(self.state, b'T' | b't')
    }
}

fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
    // The command name (field 2) is in parentheses and may itself contain spaces and `)`.
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    Some(Stat {
        pid,
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        sid: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn read_stat(pid: i32) -> Option<Stat> {
    parse_stat(pid, &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process visible in `/proc`.
fn snapshot() -> io::Result<Vec<Stat>> {
    let mut stats = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        // A process that ended since the directory was read is simply not there.
        if let Some(stat) = read_stat(pid) {
            stats.push(stat);
        }
    }
    Ok(stats)
}

/// Whether any process may be in `namespace`, the mount namespace of a command whose shell
/// started at `since`: one is seen there, or one that started since then cannot be looked at
/// (nor can `/proc` itself), unless it runs as another user. What started before the shell
/// cannot be the command's, nor can another user's process (`no_new_privs`, and a user
/// namespace that maps only this user).
fn in_namespace_anywhere(namespace: Namespace, since: u64) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    let me = std::process::id() as i32;
    let uid = nix::unistd::getuid().as_raw();
    for entry in entries {
        let Ok(entry) = entry else { return true };
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        // Exited since the directory was read. (A zombie is in no namespace, but a process
        // whose first thread ended shows as one while its other threads run on.)
        let Some(stat) = read_stat(pid) else { continue };
        if pid == me || stat.start < since {
            continue;
        }
        match mount_namespace(&pid.to_string()) {
            Ok(found) if found != namespace => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) if runs_as_another_user(pid, uid) => {}
            Ok(_) | Err(_) => return true,
        }
    }
    false
}

/// Whether the process `pid` that started at `start` (clock ticks after boot) is still running.
pub(crate) fn is_running(pid: i32, start: u64) -> bool {
    read_stat(pid).is_some_and(|stat| stat.start == start && !stat.is_zombie())
}

/// The start of process `pid`, in clock ticks after boot.
pub(crate) fn start_of(pid: i32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start)
}

/// The mounts made in the mount namespaces of the processes other than this process's: those of
/// commands still running, whose protection a removal of a path mounted on would take away. A
/// mount is known by its source, the file system and the path within it (a second path to the
/// same directory, a bind mount of the workspace, is the same source). Every namespace a process
/// can be looked at in is looked at; a process that cannot be looked at is passed over only if
/// it cannot be a sandboxed command: another user's (a command runs as the user whose process
/// started it, and only this user's placeholders are removed), or one without `no_new_privs` and
/// a seccomp filter (every sandboxed command has both, and cannot drop them). Any other (one
/// that made itself undumpable), or a `/proc` that cannot be read, counts as a mount on every
/// path.
pub(crate) struct MountsElsewhere {
    sources: Option<HashSet<(Vec<u8>, Vec<u8>)>>,
    /// This process's own mounts, which say where a path lies.
    own: Vec<Mount>,
}

impl MountsElsewhere {
    /// The mounts as they are now.
    pub(crate) fn now() -> MountsElsewhere {
        MountsElsewhere {
            sources: mounts_elsewhere(),
            own: mountinfo(Path::new("/proc/self")).unwrap_or_default(),
        }
    }

    /// Whether a mount is made on `path`.
    pub(crate) fn has(&self, path: &Path) -> bool {
        match (&self.sources, mount_source(&self.own, path)) {
            (Some(sources), Some(source)) => sources.contains(&source),
            _ => true,
        }
    }
}

fn mounts_elsewhere() -> Option<HashSet<(Vec<u8>, Vec<u8>)>> {
    let own = mount_namespace("self").ok()?;
    let entries = std::fs::read_dir("/proc").ok()?;
    let uid = nix::unistd::getuid().as_raw();
    let mut seen = HashSet::from([own]);
    let mut sources = HashSet::new();
    for entry in entries {
        let entry = entry.ok()?;
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        let not_a_command = || runs_as_another_user(pid, uid) || !is_confined(pid);
        let (namespace, thread) = match namespace_and_thread(&pid.to_string()) {
            Ok(found) => found,
            // Exited, or a zombie (which is in no namespace).
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(_) if not_a_command() => continue,
            Err(_) => return None,
        };
        if seen.contains(&namespace) {
            continue;
        }
        match mountinfo(&thread) {
            Ok(mounts) => sources.extend(mounts.into_iter().map(|mount| (mount.device, mount.root))),
            // Gone meanwhile: another process of its namespace may still show it.
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH) => {
                continue;
            }
            Err(_) if not_a_command() => continue,
            Err(_) => return None,
        }
        seen.insert(namespace);
    }
    Some(sources)
}

/// One line of `/proc/PID/mountinfo`: its file system (`major:minor`), the path within it that
/// is mounted, and where; the paths unescaped.
struct Mount {
    device: Vec<u8>,
    root: Vec<u8>,
    point: Vec<u8>,
}

/// The mounts the process or thread of `/proc` directory `dir` sees, in the order they were made.
fn mountinfo(dir: &Path) -> io::Result<Vec<Mount>> {
    let mut text = Vec::new();
    let file = std::fs::File::open(dir.join("mountinfo"))?;
    io::Read::read_to_end(&mut io::Read::take(file, MOUNTINFO_MAX), &mut text)?;
    Ok(text
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let mut fields = line.split(|&b| b == b' ').skip(2);
            let (device, root, point) = (fields.next()?, fields.next()?, fields.next()?);
            Some(Mount { device: device.to_vec(), root: unescaped(root), point: unescaped(point) })
        })
        .collect())
}

/// The source a mount of `path` has (see [`Mount`]): the file system and path within it of the
/// last mount above `path` of `mounts` (this process's), with the rest of `path` after it.
fn mount_source(mounts: &[Mount], path: &Path) -> Option<(Vec<u8>, Vec<u8>)> {
    use std::os::unix::ffi::OsStrExt;
    let path = path.as_os_str().as_bytes();
    let under = |point: &[u8]| {
        let rest = path.strip_prefix(point)?;
        (point == b"/" || rest.is_empty() || rest.starts_with(b"/")).then_some(rest)
    };
    // The longest mount point above it; of mounts on one point, the last made (on top).
    let mount = mounts
        .iter()
        .filter(|mount| under(&mount.point).is_some())
        .max_by(|a, b| a.point.len().cmp(&b.point.len()))?;
    let rest = under(&mount.point)?;
    let rest = rest.strip_prefix(b"/").unwrap_or(rest);
    let mut root = mount.root.clone();
    if !rest.is_empty() {
        if root.last() != Some(&b'/') {
            root.push(b'/');
        }
        root.extend_from_slice(rest);
    }
    Some((mount.device.clone(), root))
}

/// The most of a process's `/proc/PID/mountinfo` read (thousands of mounts are a few hundred
/// KiB).
const MOUNTINFO_MAX: u64 = 64 << 20;

/// A path of `/proc/PID/mountinfo` as it is: its octal escapes (`\040` for a space) undone.
fn unescaped(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut at = 0;
    while at < field.len() {
        let octal =
            field.get(at + 1..at + 4).filter(|digits| digits.iter().all(|d| (b'0'..=b'7').contains(d)));
        match octal {
            Some(digits) if field[at] == b'\\' => {
                out.push(digits.iter().fold(0u8, |n, d| n.wrapping_mul(8).wrapping_add(d - b'0')));
                at += 4;
            }
            _ => {
                out.push(field[at]);
                at += 1;
            }
        }
    }
    out
}

/// Whether `pid` runs with `no_new_privs` and a seccomp filter, as every sandboxed command does
/// (`/proc/PID/status`, which anyone may read; `true` when it cannot be read).
fn is_confined(pid: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return true };
    let field = |name: &str| status.lines().find_map(|line| line.strip_prefix(name)).map(str::trim);
    field("NoNewPrivs:") != Some("0") && field("Seccomp:") != Some("0")
}

/// Whether `pid`'s real, effective, saved and file system user ids are all other than `uid`
/// (`/proc/PID/status`, which anyone may read; `false` when it cannot be read).
fn runs_as_another_user(pid: i32, uid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    let Some(ids) = status.lines().find_map(|line| line.strip_prefix("Uid:")) else { return false };
    let ids: Vec<u32> = ids.split_ascii_whitespace().filter_map(|id| id.parse().ok()).collect();
    !ids.is_empty() && ids.iter().all(|&id| id != uid)
}

/// Whether the process's environment, as it was at its last `exec`, holds `marker`.
fn carries(pid: i32, marker: &[u8]) -> bool {
    // Another user's process cannot be read; it is found through its parent, if at all.
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
    environ.split(|&b| b == 0).any(|entry| entry == marker)
}

/// The processes of `tree` in `procs`, zombies left out (they hold nothing and cannot be
/// killed). `marked` caches the environment and namespace checks of this kill, by pid and
/// start time.
fn members<'a>(tree: &Tree, procs: &'a [Stat], marked: &mut HashMap<(i32, u64), bool>) -> Vec<&'a Stat> {
    let me = std::process::id() as i32;
    let shell_present = tree.shell_start.is_some()
        && procs.iter().any(|p| p.pid == tree.shell && Some(p.start) == tree.shell_start);
    let mut children: HashMap<i32, Vec<&Stat>> = HashMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut found: HashSet<i32> = HashSet::new();
    let mut queue: Vec<&Stat> = Vec::new();
    let in_cgroup: HashSet<i32> =
        tree.cgroup.as_ref().map(|c| c.pids().into_iter().collect()).unwrap_or_default();
    let tracked = tree.tracked.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for p in procs {
        if p.pid == me {
            continue;
        }
        let seed = in_cgroup.contains(&p.pid)
            || tracked.get(&p.pid) == Some(&p.start)
            || (shell_present && (p.pid == tree.shell || p.pgid == tree.shell))
            || (!p.is_zombie()
                && *marked.entry((p.pid, p.start)).or_insert_with(|| {
                    carries(p.pid, &tree.marker)
                        || tree.namespace.as_ref().is_some_and(|ns| {
                            Some(p.start) >= tree.shell_start
                                && mount_namespace(&p.pid.to_string()).ok() == Some(ns.id)
                        })
                }));
        if seed && found.insert(p.pid) {
            queue.push(p);
        }
    }
    while let Some(p) = queue.pop() {
        for &child in children.get(&p.pid).map(Vec::as_slice).unwrap_or_default() {
            if child.pid != me && found.insert(child.pid) {
                queue.push(child);
            }
        }
    }
    procs.iter().filter(|p| found.contains(&p.pid) && !p.is_zombie()).collect()
}

/// The live processes of `tree`, by pid.
#[cfg(test)]
fn find(tree: &Tree) -> io::Result<Vec<i32>> {
    Ok(tree.processes()?.iter().map(|p| p.pid).collect())
}

/// A process this kill has stopped or killed.
#[derive(Debug, Clone, Copy)]
struct Held {
    start: u64,
    outside_group: bool,
}

/// Stops every process of `tree` with `SIGSTOP` until a scan finds none that is not stopped (a
/// stopped process cannot fork, so the set is then complete), kills them all with `SIGKILL`,
/// and looks again. Errors only when `/proc` cannot be read.
///
/// A pid is signalled only right after a scan saw it with the start time recorded, and
/// `SIGSTOP` is checked: should the pid have been reused in between by an unrelated process,
/// that process is continued again and left alone. A stopped process keeps its pid until
/// `SIGKILL`, so the kill itself cannot hit a reused pid.
fn kill(tree: &Tree) -> io::Result<KillReport> {
    let mut marked = HashMap::new();
    let mut stopped: HashMap<i32, Held> = HashMap::new();
    let mut killed: HashMap<i32, Held> = HashMap::new();
    let mut failed: HashMap<i32, Errno> = HashMap::new();
    for _ in 0..KILL_ATTEMPTS {
        for round in 0..FREEZE_ROUNDS {
            if round > 0 {
                std::thread::sleep(SETTLE);
            }
            let procs = match snapshot() {
                Ok(procs) => procs,
                Err(e) => {
                    // Never leave a process stopped: kill what was already frozen.
                    for pid in stopped.keys() {
                        let _ = send(Pid::from_raw(*pid), Signal::SIGKILL);
                    }
                    return Err(e);
                }
            };
            let mut settled = true;
            for p in members(tree, &procs, &mut marked) {
                let held = |map: &HashMap<i32, Held>| map.get(&p.pid).is_some_and(|h| h.start == p.start);
                if held(&killed) || failed.contains_key(&p.pid) {
                    continue;
                }
                if held(&stopped) {
                    settled &= p.is_stopped();
                    continue;
                }
                settled = false;
                match send(Pid::from_raw(p.pid), Signal::SIGSTOP) {
                    Ok(()) if read_stat(p.pid).is_some_and(|now| now.start == p.start) => {
                        stopped.insert(p.pid, Held { start: p.start, outside_group: p.pgid != tree.shell });
                    }
                    Ok(()) => {
                        let _ = send(Pid::from_raw(p.pid), Signal::SIGCONT);
                    }
                    Err(Errno::ESRCH) => {}
                    Err(e) => {
                        failed.insert(p.pid, e);
                    }
                }
            }
            if settled {
                break;
            }
        }
        if stopped.is_empty() {
            break;
        }
        for (pid, held) in stopped.drain() {
            match send(Pid::from_raw(pid), Signal::SIGKILL) {
                Ok(()) | Err(Errno::ESRCH) => {
                    killed.insert(pid, held);
                }
                Err(e) => {
                    failed.insert(pid, e);
                }
            }
        }
    }
    let mut not_killed: Vec<NotKilled> =
        failed.into_iter().map(|(pid, errno)| NotKilled { pid, reason: reason(errno) }).collect();
    // Whatever is still there kept starting processes faster than they could be stopped.
    for p in members(tree, &snapshot().unwrap_or_default(), &mut marked) {
        let known = killed.get(&p.pid).is_some_and(|h| h.start == p.start)
            || not_killed.iter().any(|n| n.pid == p.pid);
        if !known {
            not_killed.push(NotKilled {
                pid: p.pid,
                reason: "it kept starting new processes faster than they could be stopped".to_owned(),
            });
        }
    }
    not_killed.sort_by_key(|n| n.pid);
    if let Some(cgroup) = &tree.cgroup {
        // The killed processes leave it within moments; what is still there keeps it.
        for _ in 0..20 {
            if cgroup.pids().is_empty() && cgroup.remove() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let shell = killed.get(&tree.shell).is_some_and(|h| Some(h.start) == tree.shell_start);
    let others = killed.iter().filter(|(pid, _)| !(shell && **pid == tree.shell));
    let (started, outside_group) =
        others.fold((0, 0), |(n, out), (_, h)| (n + 1, out + usize::from(h.outside_group)));
    Ok(KillReport { scope: KillScope::ProcessTree, shell, started, outside_group, not_killed })
}

fn reason(errno: Errno) -> String {
    match errno {
        Errno::EPERM => "not permitted: it runs as another user or with other privileges".to_owned(),
        other => other.desc().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_paths_are_unescaped_and_a_path_has_the_source_of_the_mount_above_it() {
        assert_eq!(unescaped(br"/a\040b\134c\011\012"), b"/a b\\c\t\n");
        // Not an escape: left as it is.
        assert_eq!(unescaped(br"/a\09x\"), br"/a\09x\");
        let dir = std::env::current_dir().unwrap();
        let own = mountinfo(Path::new("/proc/self")).unwrap();
        let (device, root) = mount_source(&own, &dir).unwrap();
        assert!(device.contains(&b':'), "{}", String::from_utf8_lossy(&device));
        // The path within its file system ends as the path does.
        use std::os::unix::ffi::OsStrExt;
        let name = dir.file_name().unwrap().as_bytes();
        assert!(root.ends_with(name), "{}", String::from_utf8_lossy(&root));
        let (_, top) = mount_source(&own, Path::new("/")).unwrap();
        assert_eq!(top, b"/");
    }

    #[test]
    fn stat_with_a_command_name_holding_spaces_and_parentheses() {
        let line = "4242 (a b) (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let stat = parse_stat(4242, line).unwrap();
        assert_eq!((stat.ppid, stat.pgid, stat.state, stat.start), (1, 4242, b'S', 987654));
        assert!(parse_stat(1, "1 (truncated").is_none());
    }

    #[test]
    fn another_users_process_is_told_by_every_one_of_its_user_ids() {
        let me = std::process::id() as i32;
        let uid = nix::unistd::getuid().as_raw();
        assert!(!runs_as_another_user(me, uid));
        assert!(runs_as_another_user(me, uid.wrapping_add(1)));
        // Unknown: not another user's.
        assert!(!runs_as_another_user(i32::MAX, uid.wrapping_add(1)));
    }

    #[test]
    fn this_process_is_never_a_member_even_when_it_carries_the_marker() {
        let me = std::process::id() as i32;
        // PATH is set for every test run; any variable of this process's environment would do.
        let entry = format!("PATH={}", std::env::var("PATH").expect("PATH is set"));
        let tree = Tree {
            shell: me,
            shell_start: read_stat(me).map(|s| s.start),
            marker: entry.into_bytes(),
            cgroup: None,
            tracked: Arc::default(),
            namespace: None,
        };
        assert!(carries(me, &tree.marker));
        assert!(!find(&tree).unwrap().contains(&me));
    }
}
