//! Change notifications (inotify) on the directories a scan walks: while none arrives, nothing
//! beneath them changed, and the last scan still holds without a file being looked at; when
//! some arrive, they name the directories to list again.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What changed since the last time the notifications were read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Changes {
    /// Nothing: the last scan holds.
    None,
    /// Only beneath these directories (relative to the root).
    Dirs {
        /// Directories whose entries changed: each is listed again (not its subdirectories).
        dirty: HashSet<PathBuf>,
        /// Directories created, removed or moved: each is walked again in full.
        deep: HashSet<PathBuf>,
    },
    /// Anything may have changed: notifications were lost (the queue overflowed), the root
    /// itself moved, an ignore file changed, or a directory is not watched.
    Full,
}

/// Names whose change can change what is ignored anywhere beneath their directory.
#[cfg(target_os = "linux")]
fn changes_ignore_rules(name: &std::ffi::OsStr) -> bool {
    name == ".gitignore" || name == ".ignore" || name == ".git"
}

#[cfg(target_os = "linux")]
pub(super) struct Watch {
    inotify: nix::sys::inotify::Inotify,
    /// Each watched directory, relative to the root (the root is the empty path).
    dirs: std::sync::Mutex<std::collections::HashMap<nix::sys::inotify::WatchDescriptor, PathBuf>>,
    /// A directory could not be watched (the system's limit of watches, or ours).
    failed: std::sync::atomic::AtomicBool,
    /// How many directories may be watched.
    limit: usize,
}

#[cfg(target_os = "linux")]
impl Watch {
    /// Every change to an entry of a directory, or to the directory itself.
    fn mask() -> nix::sys::inotify::AddWatchFlags {
        use nix::sys::inotify::AddWatchFlags as F;
        F::IN_MODIFY
            | F::IN_ATTRIB
            | F::IN_CREATE
            | F::IN_DELETE
            | F::IN_MOVED_FROM
            | F::IN_MOVED_TO
            | F::IN_DELETE_SELF
            | F::IN_MOVE_SELF
            | F::IN_DONT_FOLLOW
            | F::IN_ONLYDIR
    }

    /// Notifications on `root` (its subdirectories are added by [`add`](Self::add)).
    pub(super) fn new(root: &Path, limit: usize) -> Option<Watch> {
        use nix::sys::inotify::{InitFlags, Inotify};
        if limit == 0 {
            return None;
        }
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let wd = inotify.add_watch(root, Self::mask()).ok()?;
        Some(Watch {
            inotify,
            dirs: std::sync::Mutex::new(std::collections::HashMap::from([(wd, PathBuf::new())])),
            failed: std::sync::atomic::AtomicBool::new(false),
            limit,
        })
    }

    fn dirs(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<nix::sys::inotify::WatchDescriptor, PathBuf>>
    {
        self.dirs.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Watches the subdirectory `name` of `parent`, at `rel` beneath the root; called before it
    /// is read, so that a change made while it is read is notified. It is opened beneath
    /// `parent`'s handle, never through a link, and watched through that descriptor, so a
    /// command that swaps a directory on the way for a link cannot have another one watched
    /// in its place. A directory watched already (moved here from elsewhere in the tree) keeps
    /// its watch, now under its new name.
    pub(super) fn add(&self, parent: &cap_std::fs::Dir, name: &std::ffi::OsStr, rel: &Path) {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::Ordering;
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        let Ok(opened) = crate::fs::host::open_subdir(parent, name) else {
            self.failed.store(true, Ordering::Relaxed);
            return;
        };
        // The descriptor's own link in /proc, followed: the directory opened, wherever it is.
        let dir = PathBuf::from(format!("/proc/self/fd/{}", opened.as_raw_fd()));
        let mask = Self::mask() - nix::sys::inotify::AddWatchFlags::IN_DONT_FOLLOW;
        let mut dirs = self.dirs();
        let added = if dirs.len() >= self.limit {
            // Past our limit only a directory watched already may be named again.
            match self.inotify.add_watch(&dir, mask) {
                Ok(wd) if dirs.contains_key(&wd) => Some(wd),
                Ok(wd) => {
                    let _ = self.inotify.rm_watch(wd);
                    None
                }
                Err(_) => None,
            }
        } else {
            self.inotify.add_watch(&dir, mask).ok()
        };
        match added {
            Some(wd) => {
                dirs.insert(wd, rel.to_path_buf());
            }
            None => self.failed.store(true, Ordering::Relaxed),
        }
    }

    /// Whether every directory walked is watched.
    pub(super) fn complete(&self) -> bool {
        !self.failed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Reads the notifications that arrived since the last call (or since the watches
    /// were made), and says what they leave to scan again.
    pub(super) fn changes(&self) -> Changes {
        use nix::sys::inotify::AddWatchFlags as F;
        if !self.complete() {
            return Changes::Full;
        }
        let mut dirty = HashSet::new();
        let mut deep = HashSet::new();
        let mut full = false;
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) if !events.is_empty() => events,
                Err(nix::errno::Errno::EAGAIN) => break,
                // End of the stream, or an error: nothing says what changed.
                _ => return Changes::Full,
            };
            // Every notification is read even after one asks for a full scan, so that the
            // next call starts from an empty queue.
            if full {
                continue;
            }
            let mut dirs = self.dirs();
            for event in events {
                if event.mask.intersects(F::IN_Q_OVERFLOW | F::IN_UNMOUNT) {
                    full = true;
                    break;
                }
                if event.mask.contains(F::IN_IGNORED) {
                    // The directory is gone (its parent's notification says so).
                    dirs.remove(&event.wd);
                    continue;
                }
                let Some(dir) = dirs.get(&event.wd) else {
                    full = true;
                    break;
                };
                match event.name {
                    None if dir.as_os_str().is_empty()
                        && event.mask.intersects(F::IN_DELETE_SELF | F::IN_MOVE_SELF) =>
                    {
                        full = true;
                        break;
                    }
                    // A directory's own change: its parent's notification names it too.
                    None => {}
                    Some(name) => {
                        if changes_ignore_rules(&name) {
                            full = true;
                            break;
                        }
                        if event.mask.contains(F::IN_ISDIR)
                            && event
                                .mask
                                .intersects(F::IN_CREATE | F::IN_DELETE | F::IN_MOVED_FROM | F::IN_MOVED_TO)
                        {
                            deep.insert(dir.join(&name));
                        }
                        dirty.insert(dir.clone());
                    }
                }
            }
        }
        if full {
            Changes::Full
        } else if dirty.is_empty() {
            Changes::None
        } else {
            Changes::Dirs { dirty, deep }
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) struct Watch;

#[cfg(not(target_os = "linux"))]
impl Watch {
    pub(super) fn new(_root: &Path, _limit: usize) -> Option<Watch> {
        None
    }
    pub(super) fn add(&self, _parent: &cap_std::fs::Dir, _name: &std::ffi::OsStr, _rel: &Path) {}
    pub(super) fn complete(&self) -> bool {
        false
    }
    pub(super) fn changes(&self) -> Changes {
        Changes::Full
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}
