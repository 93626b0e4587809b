//! The lock this user's processes take around placeholders, so that none removes one between
//! another's finding it there and that process's command binding it (the command would then
//! start without it, free to create the name). A process holds it from deciding which protected
//! names exist until its command's child has made its mounts (the child lets go of it then,
//! before `exec`, through a copy of the descriptor; the host lets go of it when the command's
//! [`Placeholders`](crate::Placeholders) are dropped, should the child fail first), and to remove
//! a placeholder, from looking for mounts on it in other namespaces until it is gone. Holding
//! it, a process may also remove another live process's placeholder that no command holds:
//! nothing can take it up meanwhile.
//!
//! An exclusive `flock` on `/tmp/tools-locks-<uid>/placeholders` (mode `0200`), in a directory of
//! mode `0700` (refused when another user owns it or others may enter it) that every command's
//! mount namespace hides. Each take opens the directory and the file anew, so that two threads
//! of one process exclude each other too, and a directory removed meanwhile is made again. It is
//! never waited on for long: a process that cannot have it within [`WAIT`] goes on as if no lock
//! existed for a command's start, and keeps its placeholders rather than remove them.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode, OFlags};

/// How long a take waits for another holder: a holder keeps it for a command's start or one
/// look through `/proc`.
const WAIT: Duration = Duration::from_secs(5);

/// The lock's directory's path.
fn path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| PathBuf::from(format!("/tmp/tools-locks-{}", rustix::process::geteuid().as_raw())))
}

/// The lock's directory, made when absent, opened anew each time (one a cleaner of `/tmp`
/// removed is made again, and every process finds the same): `None` when it is not a directory
/// of this user's that no one else may enter.
fn dir() -> Option<OwnedFd> {
    let _ = rustix::fs::mkdir(path(), Mode::RWXU);
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path(), flags, Mode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    (stat.st_uid == rustix::process::geteuid().as_raw() && stat.st_mode & 0o077 == 0).then_some(fd)
}

/// The lock's directory, where this process could make or open it: hidden from every command.
pub(crate) fn hidden_dir() -> Option<&'static Path> {
    dir().map(|_| path())
}

/// What a take got.
#[derive(Debug, Default)]
pub(crate) enum Lock {
    /// The lock, held until dropped (let go of explicitly: a copy of the descriptor in a child
    /// that failed before letting go would otherwise keep it).
    Held(OwnedFd),
    /// Another holder kept it past [`WAIT`].
    Busy,
    /// There is no lock here (no directory this user alone may enter).
    #[default]
    Absent,
}

impl Lock {
    /// Takes the lock, waiting at most [`WAIT`] for another holder.
    pub(crate) fn take() -> Lock {
        let Some(dir) = dir() else { return Lock::Absent };
        // Write-only: no sandboxed command may open it (Landlock refuses it writing outside its
        // roots, the mode reading, and it has no capability to pass over the mode), even where
        // it finds the directory (made again after a cleaner of `/tmp` removed it while the
        // command ran).
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let Ok(file) = rustix::fs::openat(dir.as_fd(), "placeholders", flags, Mode::WUSR) else {
            return Lock::Absent;
        };
        if !rustix::fs::fstat(&file).is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode).is_file()) {
            return Lock::Absent;
        }
        let _ = rustix::fs::fchmod(&file, Mode::WUSR);
        let deadline = Instant::now() + WAIT;
        loop {
            match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Lock::Held(file),
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(rustix::io::Errno::WOULDBLOCK) => return Lock::Busy,
                Err(_) => return Lock::Absent,
            }
        }
    }

    /// Whether it is held.
    pub(crate) fn is_held(&self) -> bool {
        matches!(self, Lock::Held(_))
    }

    /// A copy of the descriptor, for a command's child to let go of the lock through once its
    /// mounts are made.
    pub(crate) fn copy(&self) -> Option<OwnedFd> {
        match self {
            Lock::Held(fd) => fd.try_clone().ok(),
            _ => None,
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Lock::Held(fd) = self {
            let _ = rustix::fs::flock(&*fd, FlockOperation::Unlock);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lock;

    #[test]
    fn two_takes_exclude_each_other_even_in_one_process() {
        let first = Lock::take();
        assert!(first.is_held(), "{first:?}");
        let (tx, rx) = std::sync::mpsc::channel();
        // A copy of the descriptor elsewhere does not keep it once let go of.
        let copy = first.copy().unwrap();
        let waiter = std::thread::spawn(move || {
            let second = Lock::take();
            tx.send(()).unwrap();
            second.is_held()
        });
        // The second waits while the first is held, and has it once the first is dropped.
        assert!(rx.recv_timeout(std::time::Duration::from_millis(200)).is_err());
        drop(first);
        assert!(waiter.join().unwrap());
        drop(copy);
        let dir = super::hidden_dir().unwrap();
        let meta = std::fs::symlink_metadata(dir).unwrap();
        assert!(meta.is_dir());
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777, 0o700);
    }
}
