//! Checkpoints: the workspace's files as they were before each mutating call, kept in a shadow store outside the workspace, so that a call can be undone.
//!
//! Before `write`, `edit`, `multi_edit`, `apply_patch`, and `bash` when its sandbox lets it
//! write the workspace (`workspace-write`, or no sandbox), the workspace is scanned and every
//! file's content is kept, by its SHA-256, in a content-addressed store outside the workspace
//! (a directory of its own with a random name, mode `0700`, its files `0600`, made in
//! [`CheckpointConfig::dir`] or the temporary directory and removed with the session). After
//! the call it is scanned
//! again; the files that differ are the call's changes. A scan reuses what the previous one
//! learnt about a file whose size, modification and change times, inode and mode are unchanged
//! (and old enough that a second write in the same clock tick cannot hide), so a scan of a
//! workspace where nothing changed reads no file. On Linux every directory walked is watched
//! (inotify, set before the directory is read): while no notification arrives, the last scan
//! still holds and nothing is walked at all; when some arrive, only the directories they name
//! are listed again, and the directories created, removed or moved walked in full (see
//! BENCHMARKS.md for the cost per call). The whole workspace is walked again when that cannot be
//! trusted: notifications were lost (the kernel's queue overflowed), an ignore file (`.gitignore`,
//! `.ignore`, `.rgignore`) or `.git` changed, the root itself moved, or a directory could not be watched
//! (past [`CheckpointConfig::max_watched_dirs`] or the system's limit). Changes the kernel does
//! not notify are not seen until then: a write through a hard link from outside the workspace,
//! or through a shared memory mapping.
//!
//! Left out of the store, and so never touched by an undo: what the ignore files ignore (as the
//! file tools' walk reads them: `.gitignore`, `.ignore`, `.rgignore`, `.git/info/exclude`, the
//! global git excludes), the `.git` directory, and files larger than
//! [`CheckpointConfig::max_file_bytes`] or sparse (their size and times are still recorded: an
//! undo leaves one that was that large before the calls alone and says so; one the calls made
//! large is put back, when its size and times say nothing changed it since, and the undo names it
//! in [`UndoReport::discarded`]). The first scan of a session reads files for a limited time
//! ([`CheckpointConfig::first_read_time`]): the files it did not read are recorded by their
//! metadata ([`FileState::NotRead`]) and read by the later scans, and an undo leaves a change
//! to one of them alone and says so.
//!
//! The host runs outside any sandbox, on a workspace and a store that commands may have
//! prepared: every operation goes through directory handles and never follows a link
//! (`fs/host.rs`). A file is read only when the descriptor opened is the regular file
//! the listing named (device and inode), no further than the size limit, without blocking; a
//! file swapped meanwhile is left out of that scan. Blobs and the files an undo puts back are
//! written to new random names (`O_EXCL`), then renamed into place.
//!
//! [`Checkpoints::undo`] (and the `undo` tool) puts the files one or more calls changed back as
//! they were before (removing the files and directories they created), after checking that each
//! of those files still holds what the calls left: a file changed since (or whose parent
//! directory is a symbolic link now) is a conflict, and the undo is refused, naming it, with
//! nothing written; so is an undo that needs a stored copy the store lost or damaged (every one
//! is read and checked against its hash first). A file whose content was not kept is compared by
//! its size, times (the status change time, which no command can set back, included) and inode;
//! something there that the scans do not record (ignored now, a FIFO) is a conflict too. An undo
//! with nothing it could put back (every file's earlier content not kept) is refused, and the
//! calls stay to undo. An undo is itself a call with a checkpoint, so undoing it brings the
//! change back; one that found its files already put back is recorded too, so that undoing the
//! last call again goes further back.
//!
//! The workspace root is opened by its path at each scan and undo, and must be the directory
//! the first scan opened (device and inode): a command that may write above the root (a
//! writable home, `/tmp`) could otherwise move it away and put a link to another directory at
//! its path, for the host to read into the store or write in. Checkpoints and undo stop, with
//! that error, until it is put back.
//!
//! The checkpoints live in the dispatcher's session state and are on by default for a local
//! [`Workspace`] (a remote one has none). An application configures them, or turns them off, by
//! putting its own in the session state before the first call:
//! `state.get_or_insert_with(|| Checkpoints::new(CheckpointConfig::default()))`, or
//! `state.get_or_insert_with(Checkpoints::off)`.
//!
//! A host records and undoes without the tools, through the same session state:
//!
//! ```
//! use tools_std::checkpoint::{CheckpointConfig, Checkpoints, UndoTarget};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = std::env::temp_dir().join(format!("checkpoint-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&root)?;
//! let root = std::fs::canonicalize(&root)?;
//! std::fs::write(root.join("notes.txt"), "first\n")?;
//!
//! let state = tool_runtime::SessionState::new();
//! let config = CheckpointConfig { max_file_bytes: 256 * 1024, ..CheckpointConfig::default() };
//! let checkpoints = state.get_or_insert_with(|| Checkpoints::new(config));
//!
//! // What a mutating tool does around its work (the built-in ones do it themselves):
//! let call = checkpoints.begin(&root, "call_7", "my_tool").expect("recorded");
//! std::fs::write(root.join("notes.txt"), "second\n")?;
//! std::fs::write(root.join("new.txt"), "made by the call\n")?;
//! assert_eq!(call.finish(), Some(1));
//!
//! let listed = checkpoints.list();
//! assert_eq!((listed[0].call_id.as_str(), listed[0].changes.len()), ("call_7", 2));
//! let report = checkpoints.undo(&root, &UndoTarget::Call("call_7".into()), "host_undo", "undo")?;
//! assert_eq!(report.removed, [std::path::PathBuf::from("new.txt")]);
//! assert_eq!(std::fs::read_to_string(root.join("notes.txt"))?, "first\n");
//! # std::fs::remove_dir_all(&root)?;
//! # Ok(()) }
//! ```
//!
//! A command left running in the background (`bash` with `background` or `yield_ms`) can keep
//! changing files after its call ended: those changes belong to no checkpoint, and an undo of a
//! later call sees them as conflicts when they touch the same files.

mod record;
mod scan;
mod store;
mod undo;
mod watch;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tool_runtime::{SessionState, ToolContext};

use crate::Workspace;

pub use record::CallGuard;
pub(crate) use record::{Recording, begin};
use scan::Snapshot;
pub use store::BlobId;
use store::Store;
pub use undo::{UndoError, UndoReport, UndoTarget};

/// Limits of a session's checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// Files larger than this are not kept (default 1 MiB), nor sparse ones (larger than 64 KiB
    /// and holding less than an eighth of their size in storage), which a command can make by
    /// the thousand at no cost: both are recorded as [`FileState::TooLarge`].
    pub max_file_bytes: u64,
    /// How many checkpoints are kept; past it the oldest is dropped (default 100).
    pub max_checkpoints: usize,
    /// How many bytes the store may hold; past it the oldest checkpoints are dropped until it
    /// fits or none is left (default 512 MiB). The copy of the current files is always kept.
    pub max_store_bytes: u64,
    /// The directory the store is made in: each session's store is a new directory of its own
    /// in it, with a random name and mode `0700`, removed with the session. `None` for the
    /// system's temporary directory. A directory given here is made (mode `0700`) when missing,
    /// and must belong to this user and be writable by no one else; it is best one that
    /// sandboxed commands can neither read nor write.
    pub dir: Option<PathBuf>,
    /// At most this many directories are watched for changes (inotify, on Linux; default
    /// 4096, 0 for none): a workspace with more is scanned in full at every checkpoint, which
    /// leaves the system's shared limit of watches to other programs.
    pub max_watched_dirs: usize,
    /// How long a scan spends reading the content of files it has never read (default 0.3 s,
    /// the time of the reads themselves, not of the walk): the first scan of a session, whose
    /// every file is new to it, and the later ones for the files the first left. Past it such a
    /// file is recorded by its metadata only ([`FileState::NotRead`]) and the next scan walks
    /// everything to read it; a file a later scan finds new or changed is read, up to
    /// [`CheckpointConfig::max_read_bytes`]. (A file this process may not read is recorded so
    /// too, and looked at again when it changes.)
    pub first_read_time: Duration,
    /// How many bytes of files one scan reads at most (by their sizes; default 256 MiB): past
    /// them, a new or changed file is recorded by its metadata ([`FileState::NotRead`]) and read
    /// by a later scan. A command can make hundreds of thousands of sparse files, or hard links
    /// to one file (read once per scan), at no cost of its own.
    pub max_read_bytes: u64,
    /// A workspace with more files, links and directories than this (not ignored) is not
    /// checkpointed: each scan says so and records nothing (default 250,000). Each entry is
    /// held in memory, and a command can make hundreds of thousands in a second.
    pub max_entries: usize,
    /// Nor is one whose paths (not ignored) add up to more bytes than this (default 64 MiB), or
    /// that holds a path longer than [`MAX_PATH_BYTES`]: a command can nest directories far
    /// deeper than a path names, and make many paths of that length with hard links.
    pub max_path_bytes: usize,
}

/// The longest path a scan records (the kernel's `PATH_MAX`): no program opens a longer one by
/// its name.
pub const MAX_PATH_BYTES: usize = 4096;

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            max_file_bytes: 1024 * 1024,
            max_checkpoints: 100,
            max_store_bytes: 512 * 1024 * 1024,
            dir: None,
            max_watched_dirs: 4096,
            first_read_time: Duration::from_millis(300),
            max_read_bytes: 256 * 1024 * 1024,
            max_entries: 250_000,
            max_path_bytes: 64 * 1024 * 1024,
        }
    }
}

/// The checkpoints each session of a dispatcher starts with, given as one of its dependencies
/// (`Dispatcher::builder(registry).dependency(SessionCheckpoints::Off)`), for the sessions whose
/// state holds none of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionCheckpoints {
    /// Checkpoints with these limits, their store made where [`CheckpointConfig::dir`] says.
    On(CheckpointConfig),
    /// No checkpoints: nothing is recorded, and nothing can be undone.
    Off,
}

/// What a path held at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// A regular file, kept in the store, with its permission bits.
    File {
        /// Its content.
        blob: BlobId,
        /// Its permission bits (`0o644`).
        mode: u32,
    },
    /// A symbolic link, whose target is kept in the store.
    Link {
        /// Its target's bytes.
        blob: BlobId,
    },
    /// A directory.
    Dir,
    /// A file over the size limit (or sparse): not kept; its size, times and inode tell a change.
    TooLarge {
        /// Its size in bytes.
        size: u64,
        /// Its modification time, in nanoseconds since the epoch.
        mtime: i128,
        /// Its status change time (which no command can set back), in nanoseconds since the
        /// epoch.
        ctime: i128,
        /// Its inode number.
        ino: u64,
    },
    /// A file the scans have not read yet ([`CheckpointConfig::first_read_time`],
    /// [`CheckpointConfig::max_read_bytes`]): not kept,
    /// so an undo of a change to it leaves it alone; its size, times and inode tell a
    /// change. A later scan reads it (the same file read is no change).
    NotRead {
        /// Its size in bytes.
        size: u64,
        /// Its modification time, in nanoseconds since the epoch.
        mtime: i128,
        /// Its status change time, in nanoseconds since the epoch.
        ctime: i128,
        /// Its inode number.
        ino: u64,
    },
}

/// One path a call changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the workspace root.
    pub path: PathBuf,
    /// Before the call; `None` when it did not exist.
    pub before: Option<FileState>,
    /// After the call; `None` when it did not exist.
    pub after: Option<FileState>,
}

/// What one call changed.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Its number in the session, from 1.
    pub id: u64,
    /// The call's id.
    pub call_id: String,
    /// The turn the call belonged to, when the host gave one
    /// ([`ToolContext::turn_id`](tool_runtime::ToolContext::turn_id)).
    pub turn: Option<String>,
    /// The tool called.
    pub tool: String,
    /// When the call started.
    pub time: SystemTime,
    /// The paths it changed, in order.
    pub changes: Vec<Change>,
    /// The number of the checkpoint of the undo that undid it, if one did.
    pub undone_by: Option<u64>,
    /// When it is an undo's: the checkpoints it undid.
    pub undoes: Vec<u64>,
}

#[derive(Debug, Default)]
struct Inner {
    store: Option<Store>,
    /// The last scan, by path relative to the root.
    cache: Arc<Snapshot>,
    list: VecDeque<Checkpoint>,
    next: u64,
    /// The last error, shown by the listing.
    error: Option<String>,
    /// Change notifications on every directory of the last scan, when the system has them.
    watch: Option<Arc<watch::Watch>>,
    /// The root the last scan walked, when its notifications can say what changed since.
    scanned: Option<PathBuf>,
    /// How many scans walked the whole workspace, and how many only the directories that
    /// notifications named.
    scans: ScanCounts,
    /// The last partial scan: the scan it started from, the one it made, and the only paths
    /// that can differ between them (so that a diff of the two looks at those alone).
    last_partial: Option<(std::sync::Weak<Snapshot>, Arc<Snapshot>, Vec<PathBuf>)>,
    /// How many files of the last scan are not read yet ([`FileState::NotRead`]).
    not_read: usize,
    /// The bytes of the last scan's paths, all added up.
    path_bytes: usize,
    /// Each workspace root a scan opened, and what it was then (device, inode): see
    /// `scan::open_root`.
    roots: std::collections::HashMap<PathBuf, (u64, u64)>,
}

/// How many scans of each kind a session made (to test that the cheap one is taken).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct ScanCounts {
    full: u64,
    partial: u64,
}

/// A session's checkpoints (see the module documentation).
#[derive(Debug)]
pub struct Checkpoints {
    enabled: bool,
    config: CheckpointConfig,
    inner: Mutex<Inner>,
}

impl Default for Checkpoints {
    fn default() -> Self {
        Checkpoints::new(CheckpointConfig::default())
    }
}

fn lock(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Checkpoints {
    /// Checkpoints with these limits.
    pub fn new(config: CheckpointConfig) -> Self {
        Checkpoints { enabled: true, config, inner: Mutex::new(Inner::default()) }
    }

    /// No checkpoints: nothing is recorded, and nothing can be undone.
    pub fn off() -> Self {
        Checkpoints {
            enabled: false,
            config: CheckpointConfig::default(),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Whether checkpoints are recorded.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The limits.
    pub fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    /// The session's checkpoints (on, with the default limits, unless the application put its
    /// own in the session state).
    pub fn in_state(state: &SessionState) -> Arc<Checkpoints> {
        state.get_or_insert_with(Checkpoints::default)
    }

    /// The checkpoints of the session of `ctx`: the ones the application put in its state, or
    /// new ones as the dispatcher's [`SessionCheckpoints`] dependency says (on, with the default
    /// limits, without one).
    pub fn of_call(ctx: &ToolContext) -> Arc<Checkpoints> {
        let defaults = ctx.dependencies().get::<SessionCheckpoints>();
        let workspace = ctx.dependencies().get::<Workspace>();
        ctx.session().get_or_insert_with(|| match defaults.as_deref() {
            Some(SessionCheckpoints::Off) => Checkpoints::off(),
            Some(SessionCheckpoints::On(config)) => Checkpoints::new(config.clone()),
            None => match workspace.as_deref().and_then(Workspace::session_dir) {
                // The store of a session of the workspace's goes in the host's state directory,
                // which commands can neither read nor write (each store makes a directory of its
                // own in it).
                Some(session) => Checkpoints::new(CheckpointConfig {
                    dir: Some(session.state().to_path_buf()),
                    ..CheckpointConfig::default()
                }),
                None => Checkpoints::default(),
            },
        })
    }

    /// The checkpoints kept, oldest first.
    pub fn list(&self) -> Vec<Checkpoint> {
        lock(&self.inner).list.iter().cloned().collect()
    }

    /// Where the store is, once the first checkpoint made it.
    pub fn store_dir(&self) -> Option<PathBuf> {
        lock(&self.inner).store.as_ref().map(|s| s.dir.clone())
    }

    /// How many bytes the store holds.
    pub fn store_bytes(&self) -> u64 {
        lock(&self.inner).store.as_ref().map_or(0, |s| s.bytes)
    }

    /// The last error met while recording, if any (a checkpoint that failed is not recorded;
    /// the call itself goes on).
    pub fn last_error(&self) -> Option<String> {
        lock(&self.inner).error.clone()
    }
}

/// An id (of a call, of a turn) as a listing shows it: as it is when it is made of letters,
/// digits and `-_.:/@+#` (and not too long), else quoted with its control characters escaped,
/// so that an id cannot pass for more lines of the listing.
pub(crate) fn shown_id(id: &str) -> String {
    const LONGEST: usize = 100;
    let plain = !id.is_empty()
        && id.len() <= LONGEST
        && id.chars().all(|c| c.is_alphanumeric() || "-_.:/@+#".contains(c));
    if plain {
        return id.to_owned();
    }
    match id.char_indices().nth(LONGEST) {
        Some((cut, _)) => format!("{:?}...", &id[..cut]),
        None => format!("{id:?}"),
    }
}

/// A time as `HH:MM:SS` UTC.
pub(crate) fn clock(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02} UTC", secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

#[cfg(test)]
mod tests;
