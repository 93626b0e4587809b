//! The host's private directory of a session: its own state, which commands may neither read
//! nor write, the commands' own temporary directory, and what the host hands commands to read.

use std::io;
use std::path::{Path, PathBuf};

/// A directory made at the start of a session, `<system temporary directory>/tools-<pid>-<random>/`,
/// mode `0700`, made with `mkdir` so that a name planted in advance fails instead of being used,
/// and removed (without following links) when dropped, or, when its process was killed, by the
/// next session directory made beside it. A session holds an exclusive `flock` on its directory
/// for as long as it lives (taken without waiting: a directory another process locked first is
/// given up for another name, and after eight an error says so); one is taken for abandoned
/// only when nobody holds that lock, its
/// process does not run, and it is more than a minute old (a session in another pid namespace
/// that shares the temporary directory, whose pid means nothing here, still holds its lock):
///
/// - [`state`](SessionDir::state): the host's own files (checkpoint store, anything it writes
///   for itself). A [`SandboxPolicy`](crate::SandboxPolicy) given this directory
///   ([`with_session_dir`](crate::SandboxPolicy::with_session_dir)) hides it from commands.
/// - [`tmp`](SessionDir::tmp): the commands' temporary directory (`TMPDIR`, `TMP`, `TEMP`),
///   the one temporary directory they may write.
/// - [`shared`](SessionDir::shared): files the host writes for commands to read (the egress
///   proxy's CA bundle); readable, not writable.
#[derive(Debug)]
pub struct SessionDir {
    path: PathBuf,
    /// The device and inode of `path` as made, so that a directory put in its place is not
    /// removed.
    #[cfg(unix)]
    id: (u64, u64),
    /// The directory, open and locked (`flock`, exclusive) while the session lives.
    #[cfg(target_os = "linux")]
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl SessionDir {
    /// Makes a session directory in the system's temporary directory.
    pub fn create() -> io::Result<SessionDir> {
        Self::create_in(&std::env::temp_dir())
    }

    /// Makes a session directory in `parent`.
    pub fn create_in(parent: &Path) -> io::Result<SessionDir> {
        let parent = std::fs::canonicalize(parent)?;
        remove_abandoned(&parent);
        let mut last = None;
        for _ in 0..8 {
            let path = parent.join(format!("tools-{}-{:016x}", std::process::id(), random()?));
            match make_private_dir(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    last = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            }
            // Locked at once, without waiting: another process that opened the new directory
            // first (one watching the temporary directory) could otherwise hold this one up for
            // as long as it likes. Then the directory is given up for another name.
            #[cfg(target_os = "linux")]
            let lock = match lock(&path) {
                Locked::Contended => {
                    let _ = std::fs::remove_dir(&path);
                    last = Some(io::Error::new(
                        io::ErrorKind::ResourceBusy,
                        "another process locked each new session directory before this one could",
                    ));
                    continue;
                }
                Locked::Held(lock) => Some(lock),
                Locked::Unavailable => None,
            };
            for sub in ["state", "tmp", "shared"] {
                make_private_dir(&path.join(sub))?;
            }
            return Ok(SessionDir {
                #[cfg(unix)]
                id: id_of(&path)?,
                #[cfg(target_os = "linux")]
                _lock: lock,
                path,
            });
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free name for a session directory")))
    }

    /// The directory itself.
    pub fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The host's own state: neither readable nor writable by commands.
    pub fn state(&self) -> PathBuf {
        self.path.join("state")
    }

    /// The commands' temporary directory.
    pub fn tmp(&self) -> PathBuf {
        self.path.join("tmp")
    }

    /// Files the host hands commands to read.
    pub fn shared(&self) -> PathBuf {
        self.path.join("shared")
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        // `remove_dir_all` removes a link it meets instead of following it; what was made
        // beneath `tmp` by commands goes with it.
        #[cfg(unix)]
        if id_of(&self.path).ok() != Some(self.id) {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The `state` and `tmp` directories of the other session directories beside the one whose
/// `state` is `state` (other sessions of this user, in the same temporary directory): hidden
/// from commands too. Empty when `state` is not a session directory's.
pub(crate) fn other_sessions(state: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(session) = state.parent().filter(|_| state.file_name() == Some("state".as_ref())) else {
        return out;
    };
    let Some(parent) = session.parent().filter(|_| is_session_name(session)) else { return out };
    let Some(uid) = owner(session) else { return out };
    let Ok(entries) = std::fs::read_dir(parent) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == session || !is_session_name(&path) || owner(&path) != Some(uid) {
            continue;
        }
        for sub in ["state", "tmp"] {
            let sub = path.join(sub);
            if owner(&sub) == Some(uid) {
                out.push(sub);
            }
        }
    }
    out
}

fn is_session_name(path: &Path) -> bool {
    session_pid(path).is_some()
}

/// The pid in a session directory's name, `tools-<pid>-<16 hexadecimal digits>`.
fn session_pid(path: &Path) -> Option<u32> {
    let rest = path.file_name()?.to_str()?.strip_prefix("tools-")?;
    let (pid, hex) = rest.split_once('-')?;
    (hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(())?;
    pid.parse().ok()
}

/// Removes the session directories of this user in `parent` whose process no longer runs (one
/// killed does not remove its own). Linux only: elsewhere nothing says a process ended.
#[cfg(not(target_os = "linux"))]
fn remove_abandoned(_parent: &Path) {}

#[cfg(target_os = "linux")]
fn remove_abandoned(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let uid = crate::child::ids().0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = session_pid(&path) else { continue };
        if owner(&path) != Some(uid) || Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        let old = std::fs::symlink_metadata(&path)
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > ABANDONED_AFTER);
        // Held while it is removed, so that nobody takes it meanwhile.
        if old && let Locked::Held(_held) = lock(&path) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// How old a session directory nobody holds must be to be taken for abandoned: a session locks
/// its directory right after making it.
#[cfg(target_os = "linux")]
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether a directory was locked.
#[cfg(target_os = "linux")]
enum Locked {
    /// Open and locked exclusively.
    Held(nix::fcntl::Flock<std::fs::File>),
    /// Another holds the lock.
    Contended,
    /// It cannot be opened or locked here (gone, a file system without `flock`).
    Unavailable,
}

/// The directory at `path` (not a link), open and locked exclusively, without waiting.
#[cfg(target_os = "linux")]
fn lock(path: &Path) -> Locked {
    use std::os::unix::fs::OpenOptionsExt;
    let opened =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW).open(path);
    let Ok(dir) = opened else { return Locked::Unavailable };
    match nix::fcntl::Flock::lock(dir, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Locked::Held(lock),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Locked::Contended,
        Err(_) => Locked::Unavailable,
    }
}

/// The owner of a directory (not a link).
fn owner(path: &Path) -> Option<u32> {
    let meta = std::fs::symlink_metadata(path).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    return Some(std::os::unix::fs::MetadataExt::uid(&meta));
    #[cfg(not(unix))]
    Some(0)
}

fn random() -> io::Result<u64> {
    getrandom::u64().map_err(|e| io::Error::other(format!("no random number for a directory name: {e}")))
}

fn make_private_dir(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

#[cfg(unix)]
fn id_of(path: &Path) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Err(io::Error::new(io::ErrorKind::NotADirectory, "not a directory"));
    }
    Ok((meta.dev(), meta.ino()))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_session_directory_is_private_and_removed_with_what_commands_left_in_it() {
        let dir = SessionDir::create().unwrap();
        let path = dir.path();
        for sub in [dir.path(), dir.state(), dir.tmp(), dir.shared()] {
            let mode = std::fs::metadata(&sub).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", sub.display());
        }
        std::fs::create_dir_all(dir.tmp().join("a/b")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.tmp().join("link")).unwrap();
        let other = SessionDir::create().unwrap();
        assert_ne!(other.path(), path);
        drop(dir);
        assert!(!path.exists());
        assert!(Path::new("/etc/passwd").exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_directory_of_a_session_whose_process_ended_is_removed_by_the_next() {
        let parent = std::env::temp_dir().join(format!("session-dir-test-{}", std::process::id()));
        std::fs::create_dir_all(&parent).unwrap();
        let make = |pid: u32, n: u64, age: u64| {
            let path = parent.join(format!("tools-{pid}-{n:016x}"));
            std::fs::create_dir_all(path.join("state")).unwrap();
            let then = std::time::SystemTime::now() - std::time::Duration::from_secs(age);
            std::fs::File::open(&path).unwrap().set_modified(then).unwrap();
            path
        };
        // A pid past the kernel's limit runs nowhere (here: a process of another pid namespace).
        let abandoned = make(u32::MAX, 1, 120);
        let running = make(std::process::id(), 2, 120);
        let just_made = make(u32::MAX, 3, 0);
        // Another pid namespace's session, alive: it holds its lock.
        let elsewhere = make(u32::MAX, 4, 120);
        let Locked::Held(held) = lock(&elsewhere) else { panic!("not locked") };
        let dir = SessionDir::create_in(&parent).unwrap();
        assert!(!abandoned.exists(), "the abandoned one stays");
        assert!(running.exists() && just_made.exists() && elsewhere.exists());
        // Its own lock keeps it from being taken for abandoned, pid or not.
        assert!(matches!(lock(&dir.path()), Locked::Contended), "a live session's directory is not locked");
        drop((dir, held));
        std::fs::remove_dir_all(&parent).unwrap();
    }

    /// A process that watches the temporary directory and locks each new directory before the
    /// session can does not hold the session up: it gives each up for another name, and says
    /// so when every one was taken.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_locking_each_new_directory_first_holds_no_session_up() {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let parent = std::env::temp_dir().join(format!("session-race-{}", std::process::id()));
        std::fs::create_dir_all(&parent).unwrap();
        let inotify = Inotify::init(InitFlags::empty()).unwrap();
        inotify.add_watch(&parent, AddWatchFlags::IN_CREATE).unwrap();
        let watched = parent.clone();
        // Holds every lock it takes until the test ends.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while let Ok(events) = inotify.read_events() {
                for event in events {
                    let Some(name) = event.name else { continue };
                    if let Locked::Held(lock) = lock(&watched.join(name)) {
                        held.push(lock);
                    }
                }
            }
        });
        let (sender, receiver) = std::sync::mpsc::channel();
        let at = parent.clone();
        std::thread::spawn(move || sender.send(SessionDir::create_in(&at)));
        let made =
            receiver.recv_timeout(std::time::Duration::from_secs(20)).expect("the session was held up");
        match made {
            // It won a race: the lock on its directory is its own.
            Ok(dir) => assert!(dir._lock.is_some() && matches!(lock(&dir.path()), Locked::Contended)),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::ResourceBusy, "{e}"),
        }
        let _ = std::fs::remove_dir_all(&parent);
    }
}
