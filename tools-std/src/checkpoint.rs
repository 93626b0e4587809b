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
//! [`CheckpointConfig::max_file_bytes`] (their size and times are still recorded, so an undo
//! can say it left them alone). The first scan of a session reads files for a limited time
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
//! is read and checked against its hash first). An undo is itself a call with a checkpoint,
//! so undoing it brings the change back.
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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cap_std::fs::Dir;
use sha2::{Digest, Sha256};
use tool_runtime::{SessionState, ToolContext, ToolOutput};

use crate::Workspace;
use crate::fs::host;
use crate::fs::ops::{FileKind, Target, WalkEntry, WalkOptions};
use crate::fs::roots::Roots;
use crate::fs::walk::{Listed, Step, walk_listed};
use crate::text::plural;

/// Limits of a session's checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// Files larger than this are not kept (default 1 MiB).
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
    /// How long a scan reads the content of files it has never read (default 0.3 s): the first
    /// scan of a session, whose every file is new to it, and the later ones for the files the
    /// first left. Past it such a file is recorded by its metadata only
    /// ([`FileState::NotRead`]); a file a later scan finds new or changed is always read.
    pub first_read_time: Duration,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            max_file_bytes: 1024 * 1024,
            max_checkpoints: 100,
            max_store_bytes: 512 * 1024 * 1024,
            dir: None,
            max_watched_dirs: 4096,
            first_read_time: Duration::from_millis(300),
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

/// A file's content id: the SHA-256 of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId([u8; 32]);

impl BlobId {
    fn of(bytes: &[u8]) -> BlobId {
        BlobId(Sha256::digest(bytes).into())
    }

    fn hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for byte in self.0 {
            let _ = write!(out, "{byte:02x}");
        }
        out
    }
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
    /// A file over the size limit: not kept; its size and modification time tell a change.
    TooLarge {
        /// Its size in bytes.
        size: u64,
        /// Its modification time, in nanoseconds since the epoch.
        mtime: i128,
    },
    /// A file the scans have not read yet ([`CheckpointConfig::first_read_time`]): not kept,
    /// so an undo of a change to it leaves it alone; its size and modification time tell a
    /// change. A later scan reads it (the same file read is no change).
    NotRead {
        /// Its size in bytes.
        size: u64,
        /// Its modification time, in nanoseconds since the epoch.
        mtime: i128,
    },
}

/// A scan: every path with what it held and the metadata that held it.
/// (foldhash, seeded at random: several times cheaper than the default hasher on the tens of
/// thousands of paths a scan and a diff look up.)
type Snapshot = HashMap<PathBuf, Cached, foldhash::fast::RandomState>;

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

/// Which calls to undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoTarget {
    /// The latest call with this id.
    Call(String),
    /// Every call of the turn with this id that is not undone, newest first (their changes
    /// are undone together, as one).
    Turn(String),
    /// The last `n` calls that changed files and are not undone, undos left out: undoing the
    /// last call twice undoes the two last calls. (An undo is undone by its call id.)
    Last(usize),
}

/// What an undo did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UndoReport {
    /// The checkpoints undone, oldest first.
    pub undone: Vec<u64>,
    /// Files written back.
    pub restored: Vec<PathBuf>,
    /// Files and directories the calls created, removed.
    pub removed: Vec<PathBuf>,
    /// Directories the calls removed, made again.
    pub recreated: Vec<PathBuf>,
    /// Files over the size limit the calls changed, left as they are.
    pub too_large: Vec<PathBuf>,
    /// Files the calls changed that had not been read when they began (the first checkpoint of
    /// a large workspace reads for a limited time), left as they are.
    pub not_read: Vec<PathBuf>,
    /// Directories the calls created that are not empty now (they hold ignored files), kept.
    pub kept_dirs: Vec<PathBuf>,
}

/// Why an undo did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoError {
    /// Checkpoints are off, or the workspace is not on the local file system.
    Off,
    /// No checkpoint matches.
    NotFound(String),
    /// Files changed since the calls: `(path, what happened)`. Nothing was written.
    Conflicts(Vec<(PathBuf, String)>),
    /// The checkpoint store lost or damaged what it kept of these files: `(path, what
    /// happened)`. Nothing was written.
    StoreDamaged(Vec<(PathBuf, String)>),
    /// Reading or writing failed (after the checks: some files may be restored).
    Io(String),
}

impl std::fmt::Display for UndoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UndoError::Off => f.write_str(
                "Checkpoints are off in this session (or the workspace is not on the local file system), so there is \
                 nothing to undo.",
            ),
            UndoError::NotFound(message) | UndoError::Io(message) => f.write_str(message),
            UndoError::Conflicts(conflicts) => {
                write!(
                    f,
                    "Undo refused: {} changed after the call{}, and undoing would discard that later change. Nothing \
                     was written. Conflicting:",
                    plural(conflicts.len() as u64, "file"),
                    if conflicts.len() == 1 { "" } else { "s" }
                )?;
                for (path, what) in conflicts {
                    write!(f, "\n- {} ({what})", path.display())?;
                }
                f.write_str(
                    "\nUndo the later calls first (newest first), or change these files back by hand with the \
                     file tools.",
                )
            }
            UndoError::StoreDamaged(lost) => {
                write!(
                    f,
                    "Undo refused: the checkpoint store no longer holds the earlier content of {}, so the call \
                     cannot be undone whole. Nothing was written. Missing:",
                    plural(lost.len() as u64, "file"),
                )?;
                for (path, what) in lost {
                    write!(f, "\n- {} ({what})", path.display())?;
                }
                f.write_str("\nThe files are as they are now; change them back by hand with the file tools.")
            }
        }
    }
}

impl std::error::Error for UndoError {}

/// What a scan learnt about a file, to reuse when its metadata has not changed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime: i128,
    ctime: i128,
    ino: u64,
    mode: u32,
}

#[derive(Debug, Clone)]
struct Cached {
    /// `None` for a directory.
    stamp: Option<Stamp>,
    state: FileState,
}

/// The content-addressed store: `objects/XX/<rest of the hash>`, reached only through the handle
/// of its `objects` directory (see [`crate::fs::host`]): a blob is written to a new random name
/// (`O_EXCL`, mode `0600`) and renamed into place, read without following a link, no further than
/// its recorded size, and checked against its hash.
#[derive(Debug)]
struct Store {
    /// Where it is, for messages.
    dir: PathBuf,
    /// The device and inode of its directory, which a scan of a workspace holding it leaves out.
    id: (u64, u64),
    /// Its `objects` directory.
    objects: Dir,
    /// Its parent directory and its name there, to remove it with the session.
    owned: (Dir, OsString),
    /// Every blob in the store, with its size.
    blobs: HashMap<BlobId, u64>,
    bytes: u64,
    /// The blob directories (by their first byte) this store made or made private.
    made: [bool; 256],
}

impl Store {
    fn open(config: &CheckpointConfig) -> io::Result<Store> {
        let (place, parent) = match &config.dir {
            Some(dir) => (dir.clone(), host::open_state_dir(dir)?),
            None => {
                let temp = std::env::temp_dir();
                let parent = host::open_dir_path(&temp)?;
                (temp, parent)
            }
        };
        remove_abandoned_stores(&parent);
        // A new directory of our own with a random name, made with mode 0700 (a name that
        // existed already is never used: nothing can have been planted in it).
        let prefix = format!("{STORE_PREFIX}{}-", std::process::id());
        let (name, base) = host::make_private_dir(&parent, &prefix)?;
        let stat = host::stat_dir(&base)?;
        let objects = host::open_private(&base, OsStr::new("objects"))?;
        Ok(Store {
            dir: place.join(&name),
            id: (stat.dev, stat.ino),
            objects,
            owned: (parent, name),
            blobs: HashMap::new(),
            bytes: 0,
            made: [false; 256],
        })
    }

    /// The directory of `id` (its first two hexadecimal digits) and its name there.
    fn place(id: &BlobId) -> (String, String) {
        let hex = id.hex();
        (hex[..2].to_owned(), hex[2..].to_owned())
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<BlobId> {
        let id = BlobId::of(bytes);
        self.put_hashed(id, bytes)?;
        Ok(id)
    }

    /// Keeps `bytes`, whose hash is `id`.
    fn put_hashed(&mut self, id: BlobId, bytes: &[u8]) -> io::Result<()> {
        if self.blobs.contains_key(&id) {
            return Ok(());
        }
        let (sub, name) = Store::place(&id);
        let index = usize::from(id.0[0]);
        // A directory this store made (or made private) is opened without more checks: still
        // beneath the store's handle, never through a link.
        let made = match self.made[index] {
            true => host::open_subdir(&self.objects, OsStr::new(&sub)).ok(),
            false => None,
        };
        let sub = match made {
            Some(dir) => dir,
            None => match host::open_private(&self.objects, OsStr::new(&sub)) {
                Ok(dir) => dir,
                // Something else put there (a link, a file): removed itself, never followed.
                Err(_)
                    if host::stat_at(&self.objects, OsStr::new(&sub))
                        .is_ok_and(|s| s.kind != host::Kind::Dir) =>
                {
                    host::remove_file(&self.objects, OsStr::new(&sub))?;
                    host::open_private(&self.objects, OsStr::new(&sub))?
                }
                Err(e) => return Err(e),
            },
        };
        self.made[index] = true;
        // Made `0600` (less the umask): no mode to set.
        host::replace_file(&sub, OsStr::new(&name), bytes, None, ".blob")?;
        self.blobs.insert(id, bytes.len() as u64);
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// The bytes of `id`, checked against its hash.
    fn get(&self, id: &BlobId) -> io::Result<Vec<u8>> {
        let missing = || {
            io::Error::new(io::ErrorKind::NotFound, "its stored copy is missing from the checkpoint store")
        };
        let damaged = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "its stored copy is damaged (its hash differs from the one recorded)",
            )
        };
        let size = *self.blobs.get(id).ok_or_else(missing)?;
        let (sub, name) = Store::place(id);
        let sub = match host::open_subdir(&self.objects, OsStr::new(&sub)) {
            Ok(sub) => sub,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                return Err(missing());
            }
            Err(e) => return Err(e),
        };
        match host::read_file(&sub, OsStr::new(&name), size, None)? {
            host::Content::Bytes(bytes, _) if BlobId::of(&bytes) == *id => Ok(bytes),
            host::Content::Bytes(..) | host::Content::TooLarge(_) => Err(damaged()),
            host::Content::Replaced => Err(missing()),
        }
    }

    /// Deletes every blob not in `keep`.
    fn collect(&mut self, keep: &BTreeSet<BlobId>) {
        let drop: Vec<BlobId> = self.blobs.keys().filter(|id| !keep.contains(id)).copied().collect();
        for id in drop {
            let (sub, name) = Store::place(&id);
            let removed = match host::open_subdir(&self.objects, OsStr::new(&sub)) {
                Ok(sub) => match host::remove_file(&sub, OsStr::new(&name)) {
                    Ok(()) => true,
                    Err(e) => e.kind() == io::ErrorKind::NotFound,
                },
                Err(e) => e.kind() == io::ErrorKind::NotFound,
            };
            if removed {
                self.bytes -= self.blobs.remove(&id).unwrap_or(0);
            }
        }
    }
}

/// The prefix of the stores' directories, followed by the process id.
const STORE_PREFIX: &str = "tools-checkpoints-";

/// Removes the stores that processes which no longer run left in the directory `temp`
/// (a process killed does not remove its own): directories of this user only, never following
/// a link (a link planted under such a name is left alone).
fn remove_abandoned_stores(temp: &Dir) {
    let Ok(names) = host::names(temp) else { return };
    for name in names {
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(STORE_PREFIX)) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        if pid <= 0 || process_runs(pid) {
            continue;
        }
        let ours =
            host::stat_at(temp, &name).is_ok_and(|s| s.kind == host::Kind::Dir && s.uid == host::user());
        if ours {
            let _ = host::remove_tree(temp, &name);
        }
    }
}

/// Whether the process `pid` runs (or may: it belongs to another user).
fn process_runs(pid: i32) -> bool {
    use nix::errno::Errno;
    !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

impl Drop for Store {
    fn drop(&mut self) {
        let (parent, name) = &self.owned;
        if host::stat_at(parent, name).is_ok_and(|s| (s.dev, s.ino) == self.id) {
            let _ = host::remove_tree(parent, name);
        }
    }
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

/// A file modified this recently may be modified again within the same tick of the file
/// system's clock without its times changing: its content is read again at the next scan.
const RACY: Duration = Duration::from_secs(2);

fn nanos(time: io::Result<SystemTime>) -> i128 {
    match time {
        Ok(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        },
        Err(_) => 0,
    }
}

fn stamp(stat: &host::Stat) -> Stamp {
    Stamp { size: stat.size, mtime: stat.mtime, ctime: stat.ctime, ino: stat.ino, mode: stat.mode }
}

/// One entry a walk recorded: a directory, or a file or link with what it holds.
struct Found {
    rel: PathBuf,
    cached: Cached,
}

/// The part of the workspace a scan walks when notifications named what changed; everything
/// else is taken from the last scan.
struct Scope {
    /// Directories whose entries are read again (not their subdirectories').
    dirty: HashSet<PathBuf>,
    /// Directories walked again in full (created, removed or moved).
    deep: HashSet<PathBuf>,
    /// The directories above those, walked through to reach them with the ignore rules of
    /// each level; their own entries are taken from the last scan.
    through: HashSet<PathBuf>,
    previous: Arc<Snapshot>,
}

impl Scope {
    fn new(dirty: HashSet<PathBuf>, deep: HashSet<PathBuf>, previous: Arc<Snapshot>) -> Scope {
        let through = dirty
            .iter()
            .chain(&deep)
            .flat_map(|dir| dir.ancestors().skip(1).map(Path::to_path_buf))
            .collect();
        Scope { dirty, deep, through, previous }
    }

    /// Whether the entries of `dir` are read again: it was named, it lies in a directory walked
    /// in full, or the last scan did not have it (it is new).
    fn lists(&self, dir: &Path) -> bool {
        self.named(dir)
            || !(dir.as_os_str().is_empty()
                || matches!(self.previous.get(dir), Some(Cached { state: FileState::Dir, .. })))
    }

    /// Whether `dir` was named, or lies in a directory named to walk in full.
    fn named(&self, dir: &Path) -> bool {
        self.dirty.contains(dir) || (!self.deep.is_empty() && dir.ancestors().any(|a| self.deep.contains(a)))
    }

    fn descends(&self, dir: &Path) -> bool {
        self.through.contains(dir) || self.lists(dir)
    }

    /// Whether the last scan's entry at `path` still holds: no directory above it is listed
    /// again, or the directory below the nearest one that is was seen again by this walk
    /// (`refound`); the entries of a listed directory themselves come from the walk.
    fn keeps(&self, path: &Path, refound: &HashSet<PathBuf>) -> bool {
        if !self.dirty.iter().chain(&self.deep).any(|d| path.starts_with(d)) {
            return true;
        }
        let mut child = path;
        for dir in path.ancestors().skip(1) {
            if self.named(dir) {
                return refound.contains(child);
            }
            child = dir;
        }
        true
    }
}

/// What the scan keeps of the file or link a walk listed (`listed`, at `rel`): the last scan's
/// entry when its `stat` is unchanged (and not racy), else its content, read through its
/// directory's handle and kept in the store. `None` when it is no longer the regular file or
/// link listed (swapped meanwhile: nothing is read), or is of another kind.
///
/// Past `read_until`, a regular file never read is recorded by its metadata only
/// ([`FileState::NotRead`]): every file of the first scan (`previous` empty), and in later
/// scans the files still not read and unchanged.
fn look(
    listed: &Listed<'_>,
    rel: &Path,
    previous: &Snapshot,
    racy: i128,
    max_file_bytes: u64,
    read_until: Instant,
    store: &Mutex<&mut Store>,
) -> io::Result<Option<Cached>> {
    let Ok(now) = host::stat_at(listed.dir, listed.name) else { return Ok(None) };
    let listed_stamp = stamp(&now);
    let late = || Instant::now() >= read_until;
    if let Some(known) = previous.get(rel).filter(|cached| cached.stamp.as_ref() == Some(&listed_stamp)) {
        match known.state {
            FileState::NotRead { .. } if late() => return Ok(Some(known.clone())),
            // Read now.
            FileState::NotRead { .. } => {}
            _ if listed_stamp.mtime < racy && listed_stamp.ctime < racy => return Ok(Some(known.clone())),
            _ => {}
        }
    }
    if now.kind == host::Kind::File && now.size <= max_file_bytes && previous.is_empty() && late() {
        let state = FileState::NotRead { size: now.size, mtime: now.mtime };
        return Ok(Some(Cached { stamp: Some(listed_stamp), state }));
    }
    let lock_store = || store.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (stat, state) = match now.kind {
        host::Kind::Link => {
            let Some(target) = host::read_link(listed.dir, listed.name)? else { return Ok(None) };
            (now, FileState::Link { blob: lock_store().put(&target)? })
        }
        host::Kind::File if now.size > max_file_bytes => {
            (now, FileState::TooLarge { size: now.size, mtime: now.mtime })
        }
        host::Kind::File => match host::read_file(listed.dir, listed.name, max_file_bytes, Some(&now)) {
            // A file this process may not read (a command's `chmod 000`, a lease held on it) is
            // recorded by its metadata and tried again by the next scan: failing the scan would
            // let any command switch checkpoints and undo off for the session.
            Err(e) if unreadable(&e) => (now, FileState::NotRead { size: now.size, mtime: now.mtime }),
            Err(e) => return Err(e),
            Ok(host::Content::Bytes(bytes, read)) => {
                let blob = BlobId::of(&bytes);
                lock_store().put_hashed(blob, &bytes)?;
                (read, FileState::File { blob, mode: read.mode & 0o7777 })
            }
            Ok(host::Content::TooLarge(read)) => {
                (read, FileState::TooLarge { size: read.size, mtime: read.mtime })
            }
            Ok(host::Content::Replaced) => return Ok(None),
        },
        host::Kind::Dir | host::Kind::Other => return Ok(None),
    };
    Ok(Some(Cached { stamp: Some(stamp(&stat)), state }))
}

/// Whether opening or reading a listed file failed only for this file (its permissions, a lease
/// or a running executable), not for the scan as a whole.
fn unreadable(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::WouldBlock)
        || error.raw_os_error() == Some(nix::libc::ETXTBSY)
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

    /// Scans the workspace at `root`: every file not ignored, its content kept in the store.
    pub fn scan(&self, root: &Path) -> io::Result<BTreeMap<PathBuf, FileState>> {
        let mut inner = lock(&self.inner);
        let snapshot = self.scan_locked(&mut inner, root)?;
        Ok(snapshot.iter().map(|(path, cached)| (path.clone(), cached.state.clone())).collect())
    }

    fn scan_locked(&self, inner: &mut Inner, root: &Path) -> io::Result<Arc<Snapshot>> {
        if inner.store.is_none() {
            inner.store = Some(Store::open(&self.config)?);
        }
        let changes = match &inner.watch {
            // Files the first scan left unread: a walk of everything reads them.
            _ if inner.not_read > 0 => watch::Changes::Full,
            Some(watch) if inner.scanned.as_deref() == Some(root) => watch.changes(),
            _ => watch::Changes::Full,
        };
        let scope = match changes {
            // No directory the last scan walked saw a change: it holds.
            watch::Changes::None => return Ok(inner.cache.clone()),
            watch::Changes::Dirs { dirty, deep } => {
                inner.scans.partial += 1;
                Some(Arc::new(Scope::new(dirty, deep, inner.cache.clone())))
            }
            watch::Changes::Full => {
                inner.scans.full += 1;
                // Watched before the walk reads them, so a change during the walk is seen next time.
                inner.watch = watch::Watch::new(root, self.config.max_watched_dirs).map(Arc::new);
                None
            }
        };
        // Until this scan ends well, the notifications it consumed are not to be trusted.
        inner.scanned = None;
        let Inner { store, cache, watch, .. } = inner;
        let watch = watch.clone();
        let store = store.as_mut().expect("opened above");
        let store_id = store.id;
        let started = SystemTime::now();
        let racy = nanos(Ok(started)) - RACY.as_nanos() as i128;
        let threads = match &scope {
            Some(_) => 1,
            None => std::thread::available_parallelism().map_or(1, |n| n.get().min(4)),
        };
        // Every directory is opened beneath its parent's handle and every file beneath its
        // directory's, never through a link; ignore files are read as regular files, bounded.
        let roots = Roots::open(root)?;
        let options = WalkOptions { hidden: true, ..WalkOptions::default() };
        // The subdirectories of listed directories that are not walked again: their last scan holds.
        let kept: Mutex<HashSet<PathBuf>> = Mutex::default();
        let found: Mutex<Vec<Found>> =
            Mutex::new(Vec::with_capacity(if scope.is_some() { 64 } else { cache.len() + 16 }));
        let failed: Mutex<Option<io::Error>> = Mutex::new(None);
        let previous = cache.clone();
        let max_file_bytes = self.config.max_file_bytes;
        let read_until = Instant::now() + self.config.first_read_time;
        let store = Mutex::new(store);
        let push = |item: Found| found.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(item);
        let visit = |entry: WalkEntry, listed: &Listed<'_>| -> Step {
            let rel = entry.path.path();
            if listed.name == ".git" {
                return Step::Prune;
            }
            let parent = rel.parent().unwrap_or(Path::new(""));
            let lists_parent = scope.as_ref().is_none_or(|s| s.lists(parent));
            if entry.kind == FileKind::Dir {
                let store_here =
                    host::stat_at(listed.dir, listed.name).is_ok_and(|s| (s.dev, s.ino) == store_id);
                if store_here {
                    return Step::Prune;
                }
                if scope.as_ref().is_none_or(|s| s.descends(rel)) {
                    // Called before the walk reads the directory.
                    if let Some(watch) = &watch {
                        watch.add(&root.join(rel), rel);
                    }
                    if lists_parent {
                        push(Found {
                            rel: rel.to_path_buf(),
                            cached: Cached { stamp: None, state: FileState::Dir },
                        });
                    }
                    return Step::Continue;
                }
                if scope.is_some() && lists_parent {
                    kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(rel.to_path_buf());
                }
                return Step::Prune;
            }
            if !lists_parent {
                return Step::Continue;
            }
            match look(listed, rel, &previous, racy, max_file_bytes, read_until, &store) {
                Ok(Some(cached)) => push(Found { rel: rel.to_path_buf(), cached }),
                Ok(None) => {}
                Err(e) => {
                    *failed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(e);
                    return Step::Stop;
                }
            }
            Step::Continue
        };
        walk_listed(&roots, &Target::root(), &options, threads, &visit)?;
        if let Some(error) = failed.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()) {
            return Err(error);
        }
        let found = found.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut touched: Vec<PathBuf> = Vec::new();
        let mut seen = match &scope {
            Some(scope) => {
                let mut refound = kept.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
                refound.extend(found.iter().filter(|f| f.cached.stamp.is_none()).map(|f| f.rel.clone()));
                // Cloned whole (no path hashed again), then the listed directories' entries dropped.
                let mut seen = (*previous).clone();
                seen.retain(|path, _| {
                    let keep = scope.keeps(path, &refound);
                    if !keep {
                        touched.push(path.clone());
                    }
                    keep
                });
                seen
            }
            None => Snapshot::with_capacity_and_hasher(found.len(), Default::default()),
        };
        if scope.is_some() {
            touched.extend(found.iter().map(|f| f.rel.clone()));
        }
        for Found { rel, cached } in found {
            seen.insert(rel, cached);
        }
        if watch.is_some_and(|w| w.complete()) {
            inner.scanned = Some(root.to_path_buf());
        }
        let seen = Arc::new(seen);
        inner.last_partial = scope.is_some().then(|| (Arc::downgrade(&previous), seen.clone(), touched));
        inner.not_read = seen.values().filter(|c| matches!(c.state, FileState::NotRead { .. })).count();
        inner.cache = seen.clone();
        Ok(seen)
    }

    /// Records the workspace before a call; the checkpoint is kept when the returned guard is
    /// finished or dropped, with what the call changed. `None` when checkpoints are off or the
    /// scan failed (see [`last_error`](Self::last_error)).
    pub fn begin(self: &Arc<Self>, root: &Path, call_id: &str, tool: &str) -> Option<CallGuard> {
        self.begin_in_turn(root, call_id, None, tool)
    }

    /// [`begin`](Self::begin) for a call of turn `turn`, which an undo of the turn
    /// ([`UndoTarget::Turn`]) then undoes with the turn's other calls.
    pub fn begin_in_turn(
        self: &Arc<Self>,
        root: &Path,
        call_id: &str,
        turn: Option<&str>,
        tool: &str,
    ) -> Option<CallGuard> {
        self.start(root, call_id, turn, tool).ok().flatten()
    }

    /// [`begin_in_turn`](Self::begin_in_turn), with the error when the workspace could not be
    /// recorded; `Ok(None)` when checkpoints are off.
    fn start(
        self: &Arc<Self>,
        root: &Path,
        call_id: &str,
        turn: Option<&str>,
        tool: &str,
    ) -> Result<Option<CallGuard>, String> {
        if !self.enabled {
            return Ok(None);
        }
        let time = SystemTime::now();
        let mut inner = lock(&self.inner);
        match self.scan_locked(&mut inner, root) {
            Ok(before) => Ok(Some(CallGuard {
                checkpoints: self.clone(),
                root: root.to_path_buf(),
                before: Some(before),
                call_id: call_id.to_owned(),
                turn: turn.map(str::to_owned),
                tool: tool.to_owned(),
                time,
                not_read: inner.not_read,
            })),
            Err(e) => {
                let error = format!("Cannot record a checkpoint of {}: {e}", root.display());
                inner.error = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Records what the call of `guard` changed: its checkpoint's number, `None` when it
    /// changed nothing, or the error when the workspace could not be scanned again.
    fn finish(&self, guard: &mut CallGuard) -> Result<Option<u64>, String> {
        let Some(before) = guard.before.take() else { return Ok(None) };
        let mut inner = lock(&self.inner);
        let after = match self.scan_locked(&mut inner, &guard.root) {
            Ok(after) => after,
            Err(e) => {
                let error = format!("Cannot record a checkpoint of {}: {e}", guard.root.display());
                inner.error = Some(error.clone());
                return Err(error);
            }
        };
        let changes = match &inner.last_partial {
            _ if Arc::ptr_eq(&before, &after) => Vec::new(),
            // One partial scan since `before`: only the paths it looked at can differ.
            Some((base, made, touched))
                if std::ptr::eq(base.as_ptr(), Arc::as_ptr(&before)) && Arc::ptr_eq(made, &after) =>
            {
                diff_paths(&before, &after, touched)
            }
            _ => diff(&before, &after),
        };
        if changes.is_empty() {
            return Ok(None);
        }
        inner.next += 1;
        let id = inner.next;
        inner.list.push_back(Checkpoint {
            id,
            call_id: guard.call_id.clone(),
            turn: guard.turn.clone(),
            tool: guard.tool.clone(),
            time: guard.time,
            changes,
            undone_by: None,
            undoes: Vec::new(),
        });
        self.retain(&mut inner);
        Ok(Some(id))
    }

    /// Drops the oldest checkpoints past the limits, and the stored files nothing needs.
    fn retain(&self, inner: &mut Inner) {
        while inner.list.len() > self.config.max_checkpoints {
            inner.list.pop_front();
        }
        loop {
            let mut keep: BTreeSet<BlobId> = inner.cache.values().filter_map(|c| blob_of(&c.state)).collect();
            for checkpoint in &inner.list {
                for change in &checkpoint.changes {
                    keep.extend(change.before.as_ref().and_then(blob_of));
                    keep.extend(change.after.as_ref().and_then(blob_of));
                }
            }
            let Some(store) = inner.store.as_mut() else { return };
            store.collect(&keep);
            if store.bytes <= self.config.max_store_bytes || inner.list.is_empty() {
                return;
            }
            inner.list.pop_front();
        }
    }

    /// Puts back the files the calls `target` names changed, as they were before them; see
    /// the module documentation. `call_id` and `tool` name the undo's own call, recorded as a
    /// checkpoint so that it can be undone in turn.
    pub fn undo(
        self: &Arc<Self>,
        root: &Path,
        target: &UndoTarget,
        call_id: &str,
        tool: &str,
    ) -> Result<UndoReport, UndoError> {
        self.undo_in_turn(root, target, call_id, None, tool)
    }

    /// [`undo`](Self::undo) by a call of turn `turn` (the undo's own checkpoint records it).
    pub fn undo_in_turn(
        self: &Arc<Self>,
        root: &Path,
        target: &UndoTarget,
        call_id: &str,
        turn: Option<&str>,
        tool: &str,
    ) -> Result<UndoReport, UndoError> {
        if !self.enabled {
            return Err(UndoError::Off);
        }
        let selected = self.select(target)?;
        let mut guard = self.begin_in_turn(root, call_id, turn, tool);
        let report = self.apply(root, &selected);
        if let Some(guard) = guard.as_mut()
            && let Ok(Some(id)) = self.finish(guard)
            && report.is_ok()
        {
            let mut inner = lock(&self.inner);
            for checkpoint in inner.list.iter_mut() {
                if checkpoint.id == id {
                    checkpoint.undoes = selected.iter().map(|s| s.id).collect();
                } else if selected.iter().any(|s| s.id == checkpoint.id) {
                    checkpoint.undone_by = Some(id);
                } else if checkpoint.undone_by.is_some_and(|by| selected.iter().any(|s| s.id == by)) {
                    // Undoing an undo brings that change back.
                    checkpoint.undone_by = None;
                }
            }
        }
        report
    }

    /// The paths an undo of `target` would put back (relative to the root), for a host or a
    /// permission hook to check first.
    pub fn paths(&self, target: &UndoTarget) -> Result<Vec<PathBuf>, UndoError> {
        if !self.enabled {
            return Err(UndoError::Off);
        }
        let paths: BTreeSet<PathBuf> =
            self.select(target)?.iter().flat_map(|c| c.changes.iter().map(|ch| ch.path.clone())).collect();
        Ok(paths.into_iter().collect())
    }

    fn select(&self, target: &UndoTarget) -> Result<Vec<Checkpoint>, UndoError> {
        let inner = lock(&self.inner);
        if inner.list.is_empty() {
            return Err(UndoError::NotFound(
                "There is nothing to undo: no call has changed a file in this session (or its checkpoints were \
                 dropped)."
                    .to_owned(),
            ));
        }
        let selected: Vec<Checkpoint> = match target {
            UndoTarget::Call(id) => {
                let Some(found) = inner.list.iter().rev().find(|c| &c.call_id == id) else {
                    let known: Vec<String> =
                        inner.list.iter().rev().take(10).map(|c| shown_id(&c.call_id)).collect();
                    return Err(UndoError::NotFound(format!(
                        "No checkpoint of a call with id {id:?} (a call that changed no file has none). The latest \
                         calls that changed files: {}. The checkpoints tool lists them all.",
                        known.join(", ")
                    )));
                };
                vec![found.clone()]
            }
            UndoTarget::Turn(turn) => {
                let of_turn: Vec<&Checkpoint> =
                    inner.list.iter().filter(|c| c.turn.as_deref() == Some(turn.as_str())).collect();
                if of_turn.is_empty() {
                    let mut turns: Vec<String> = Vec::new();
                    for c in inner.list.iter().rev() {
                        if let Some(t) = &c.turn
                            && !turns.contains(&shown_id(t))
                            && turns.len() < 10
                        {
                            turns.push(shown_id(t));
                        }
                    }
                    let known = if turns.is_empty() {
                        "No call kept has a turn id.".to_owned()
                    } else {
                        format!("The latest turns with calls that changed files: {}.", turns.join(", "))
                    };
                    return Err(UndoError::NotFound(format!(
                        "No checkpoint of a call in turn {} (a call that changed no file has none). {known} The \
                         checkpoints tool lists them all.",
                        shown_id(turn)
                    )));
                }
                let ids: BTreeSet<u64> = of_turn.iter().map(|c| c.id).collect();
                // A call undone within the turn is undone again with its undo (together they
                // changed nothing); one undone by a call of another turn is left out.
                let selected: Vec<Checkpoint> = of_turn
                    .iter()
                    .filter(|c| c.undone_by.is_none_or(|by| ids.contains(&by)))
                    .map(|c| (*c).clone())
                    .collect();
                if selected.is_empty() {
                    let by: BTreeSet<String> =
                        of_turn.iter().filter_map(|c| c.undone_by).map(|id| format!("#{id}")).collect();
                    return Err(UndoError::NotFound(format!(
                        "Every call of turn {} that changed files was already undone (by checkpoint {}); undo \
                         that undo, by its call id, to bring the change back.",
                        shown_id(turn),
                        by.into_iter().collect::<Vec<_>>().join(", ")
                    )));
                }
                selected
            }
            UndoTarget::Last(0) => {
                return Err(UndoError::NotFound("`last` must be at least 1.".to_owned()));
            }
            UndoTarget::Last(n) => {
                let mut last: Vec<Checkpoint> = inner
                    .list
                    .iter()
                    .rev()
                    .filter(|c| c.undone_by.is_none() && c.undoes.is_empty())
                    .take(*n)
                    .cloned()
                    .collect();
                if last.is_empty() {
                    return Err(UndoError::NotFound(
                        "Every call kept has been undone already; undo an undo by its call id (see checkpoints) to \
                         bring its change back."
                            .to_owned(),
                    ));
                }
                last.reverse();
                last
            }
        };
        if let [one] = selected.as_slice()
            && let Some(by) = one.undone_by
        {
            let undo = inner
                .list
                .iter()
                .find(|c| c.id == by)
                .map_or(String::new(), |c| format!(" ({:?})", c.call_id));
            return Err(UndoError::NotFound(format!(
                "Call {:?} was already undone by checkpoint #{by}{undo}; undo that call to bring its change back.",
                one.call_id
            )));
        }
        Ok(selected)
    }

    fn apply(&self, root: &Path, selected: &[Checkpoint]) -> Result<UndoReport, UndoError> {
        // For each path: what it held before the first selected call that changed it, and what
        // it should hold now (after the last one).
        let mut plan: BTreeMap<PathBuf, (Option<FileState>, Option<FileState>)> = BTreeMap::new();
        for checkpoint in selected {
            for change in &checkpoint.changes {
                plan.entry(change.path.clone())
                    .and_modify(|(_, expected)| *expected = change.after.clone())
                    .or_insert((change.before.clone(), change.after.clone()));
            }
        }
        let mut inner = lock(&self.inner);
        let current = self
            .scan_locked(&mut inner, root)
            .map_err(|e| UndoError::Io(format!("Cannot scan the workspace: {e}")))?;
        let mut report =
            UndoReport { undone: selected.iter().map(|c| c.id).collect(), ..UndoReport::default() };
        let mut conflicts = Vec::new();
        // Every path is reached through the root's handle, one directory at a time, never
        // through a link: a parent made a link since would lead a write out of the workspace.
        let root_dir = host::open_dir_path(root)
            .map_err(|e| UndoError::Io(format!("Cannot open the workspace root {}: {e}", root.display())))?;
        for (path, (before, expected)) in &plan {
            let (parent, name) = match host::split(path) {
                Ok(split) => split,
                Err(e) => {
                    conflicts.push((path.clone(), e.to_string()));
                    continue;
                }
            };
            let parent_dir = match host::open_beneath(&root_dir, parent, false) {
                Ok(dir) => Some(dir),
                Err(host::Beneath::Missing(_)) => None,
                Err(e @ host::Beneath::NotDir { .. }) => {
                    conflicts.push((path.clone(), e.to_string()));
                    continue;
                }
                Err(host::Beneath::Io(e)) => {
                    return Err(UndoError::Io(format!(
                        "Cannot open the directory of {}: {e}",
                        path.display()
                    )));
                }
            };
            let now = current.get(path).map(|c| &c.state);
            let large = |s: &Option<FileState>| matches!(s, Some(FileState::TooLarge { .. }));
            if large(before) || large(expected) {
                report.too_large.push(path.clone());
                continue;
            }
            let unread = |s: &Option<FileState>| matches!(s, Some(FileState::NotRead { .. }));
            if unread(before) || unread(expected) {
                report.not_read.push(path.clone());
                continue;
            }
            if now == expected.as_ref() || before.as_ref() == now {
                continue;
            }
            // A directory the calls created may hold ignored files now: not a conflict.
            let is_dir = |dir: &Dir| host::stat_at(dir, name).is_ok_and(|s| s.kind == host::Kind::Dir);
            if matches!(expected, Some(FileState::Dir)) && parent_dir.as_ref().is_some_and(is_dir) {
                continue;
            }
            let what = match (expected, now) {
                (Some(_), None) => "deleted since".to_owned(),
                (None, Some(_)) => "created since".to_owned(),
                _ => "changed since".to_owned(),
            };
            conflicts.push((path.clone(), what));
        }
        if !conflicts.is_empty() {
            return Err(UndoError::Conflicts(conflicts));
        }
        let store = inner.store.as_ref().ok_or(UndoError::Off)?;
        let todo: Vec<(&PathBuf, &Option<FileState>)> = plan
            .iter()
            .filter(|(p, _)| !report.too_large.contains(p) && !report.not_read.contains(p))
            .map(|(p, (b, _))| (p, b))
            .collect();
        // Every stored copy the undo needs, read and checked against its hash before anything is
        // written: a store that lost or damaged one refuses the undo whole.
        let mut copies: HashMap<BlobId, Vec<u8>> = HashMap::new();
        let mut lost = Vec::new();
        for (path, before) in &todo {
            let Some(blob) = before.as_ref().and_then(blob_of) else { continue };
            if copies.contains_key(&blob) {
                continue;
            }
            match store.get(&blob) {
                Ok(bytes) => {
                    copies.insert(blob, bytes);
                }
                Err(e) => lost.push(((*path).clone(), e.to_string())),
            }
        }
        if !lost.is_empty() {
            return Err(UndoError::StoreDamaged(lost));
        }
        let io = |path: &Path, e: io::Error| {
            UndoError::Io(format!(
                "Cannot restore {}: {e}. The files before it in this list may already be restored; run checkpoints \
                 to see the state.",
                path.display()
            ))
        };
        // The directory holding `path`, and its name there (`None` when the directory is gone).
        let parent_of = |path: &Path, create: bool| -> io::Result<Option<(Dir, OsString)>> {
            let (parent, name) = host::split(path)?;
            match host::open_beneath(&root_dir, parent, create) {
                Ok(dir) => Ok(Some((dir, name.to_os_string()))),
                Err(host::Beneath::Missing(_)) if !create => Ok(None),
                Err(e) => Err(e.into()),
            }
        };
        // 1. Files and links that must go (gone before, or a directory there before).
        for (path, before) in &todo {
            let Some((dir, name)) = parent_of(path, false).map_err(|e| io(path, e))? else { continue };
            let Ok(stat) = host::stat_at(&dir, &name) else { continue };
            if stat.kind == host::Kind::Dir {
                continue;
            }
            if matches!(before, None | Some(FileState::Dir)) || matches!(before, Some(FileState::Link { .. }))
            {
                host::remove_file(&dir, &name).map_err(|e| io(path, e))?;
                if before.is_none() {
                    report.removed.push((*path).clone());
                }
            }
        }
        // 2. Directories the calls created, deepest first.
        for (path, before) in todo.iter().rev() {
            let Some((dir, name)) = parent_of(path, false).map_err(|e| io(path, e))? else { continue };
            let is_dir = host::stat_at(&dir, &name).is_ok_and(|s| s.kind == host::Kind::Dir);
            if is_dir && !matches!(before, Some(FileState::Dir)) {
                match host::remove_dir(&dir, &name) {
                    Ok(()) => report.removed.push((*path).clone()),
                    Err(_) => report.kept_dirs.push((*path).clone()),
                }
            }
        }
        // 3. Directories the calls removed, then files and links.
        for (path, before) in &todo {
            match before {
                Some(FileState::Dir) => {
                    let existed = host::open_beneath(&root_dir, path, false).is_ok();
                    if !existed {
                        host::open_beneath(&root_dir, path, true).map_err(|e| io(path, e.into()))?;
                        report.recreated.push((*path).clone());
                    }
                }
                Some(FileState::File { blob, mode }) => {
                    let Some((dir, name)) = parent_of(path, true).map_err(|e| io(path, e))? else { continue };
                    // A directory the calls put there and left empty; one that is not is an error.
                    if host::stat_at(&dir, &name).is_ok_and(|s| s.kind == host::Kind::Dir) {
                        host::remove_dir(&dir, &name).map_err(|e| io(path, e))?;
                    }
                    let bytes = copies.get(blob).map_or(&[][..], Vec::as_slice);
                    host::replace_file(&dir, &name, bytes, Some(*mode), ".tools-undo")
                        .map_err(|e| io(path, e))?;
                    report.restored.push((*path).clone());
                }
                Some(FileState::Link { blob }) => {
                    let Some((dir, name)) = parent_of(path, true).map_err(|e| io(path, e))? else { continue };
                    if host::stat_at(&dir, &name).is_ok_and(|s| s.kind != host::Kind::Dir) {
                        host::remove_file(&dir, &name).map_err(|e| io(path, e))?;
                    }
                    let target = copies.get(blob).map_or(&[][..], Vec::as_slice);
                    host::make_link(&dir, &name, target).map_err(|e| io(path, e))?;
                    report.restored.push((*path).clone());
                }
                Some(FileState::TooLarge { .. } | FileState::NotRead { .. }) | None => {}
            }
        }
        Ok(report)
    }
}

fn blob_of(state: &FileState) -> Option<BlobId> {
    match state {
        FileState::File { blob, .. } | FileState::Link { blob } => Some(*blob),
        FileState::Dir | FileState::TooLarge { .. } | FileState::NotRead { .. } => None,
    }
}

/// Whether two scans' entries of one path hold the same: the same state, or a file not read in
/// one and read in the other with the same metadata.
fn same(before: &Cached, after: &Cached) -> bool {
    match (&before.state, &after.state) {
        (FileState::NotRead { .. }, FileState::File { .. } | FileState::NotRead { .. })
        | (FileState::File { .. }, FileState::NotRead { .. }) => before.stamp == after.stamp,
        (b, a) => b == a,
    }
}

fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let state = |s: Option<&Cached>| s.map(|c| c.state.clone());
    let mut changes: Vec<Change> = before
        .iter()
        .filter(|(path, b)| after.get(*path).is_none_or(|a| !same(b, a)))
        .map(|(path, b)| Change {
            path: path.clone(),
            before: Some(b.state.clone()),
            after: state(after.get(path)),
        })
        .collect();
    changes.extend(after.iter().filter(|(path, _)| !before.contains_key(*path)).map(|(path, a)| Change {
        path: path.clone(),
        before: None,
        after: Some(a.state.clone()),
    }));
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// [`diff`] of two scans that can differ only at `paths`.
fn diff_paths(before: &Snapshot, after: &Snapshot, paths: &[PathBuf]) -> Vec<Change> {
    let mut paths: Vec<&PathBuf> = paths.iter().collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| {
            let (b, a) = (before.get(path), after.get(path));
            let unchanged = match (b, a) {
                (Some(b), Some(a)) => same(b, a),
                (b, a) => b.is_none() && a.is_none(),
            };
            (!unchanged).then(|| Change {
                path: path.clone(),
                before: b.map(|c| c.state.clone()),
                after: a.map(|c| c.state.clone()),
            })
        })
        .collect()
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

/// The checkpoint of one call in progress: kept, with the call's changes, when finished or
/// dropped.
#[derive(Debug)]
pub struct CallGuard {
    checkpoints: Arc<Checkpoints>,
    root: PathBuf,
    before: Option<Arc<Snapshot>>,
    call_id: String,
    turn: Option<String>,
    tool: String,
    time: SystemTime,
    /// How many files had not been read when the call began: a change to them cannot be undone.
    not_read: usize,
}

impl CallGuard {
    /// Records what the call changed; returns the checkpoint's number, or `None` when the call
    /// changed nothing.
    pub fn finish(self) -> Option<u64> {
        self.finish_checked().ok().flatten()
    }

    /// [`finish`](Self::finish), with the error when the workspace could not be scanned again.
    fn finish_checked(mut self) -> Result<Option<u64>, String> {
        let checkpoints = self.checkpoints.clone();
        checkpoints.finish(&mut self)
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.before.is_some() {
            let checkpoints = self.checkpoints.clone();
            let _ = checkpoints.finish(self);
        }
    }
}

/// The checkpoint of a built-in tool's call, from [`begin`]: kept when dropped (a call that
/// failed), or by [`finish_into`](Self::finish_into) with the call's output, which then says
/// when the checkpoint could not be recorded.
#[derive(Debug)]
pub(crate) struct Recording {
    guard: Option<CallGuard>,
    /// Why the workspace could not be recorded before the call.
    error: Option<String>,
}

impl Recording {
    /// No checkpoint: checkpoints are off, or the workspace is not local.
    pub(crate) fn none() -> Recording {
        Recording { guard: None, error: None }
    }

    /// Records what the call changed, and adds `checkpoint` to `output`'s metadata when it
    /// could not be recorded (`{"recorded": false, "error": ...}`): the call cannot be undone.
    pub(crate) async fn finish_into(mut self, output: ToolOutput) -> ToolOutput {
        let not_read = self.guard.as_ref().map_or(0, |guard| guard.not_read);
        let error = match (self.error.take(), self.guard.take()) {
            (Some(error), _) => Some(error),
            (None, Some(guard)) => tokio::task::spawn_blocking(move || guard.finish_checked())
                .await
                .map_err(|e| format!("The checkpoint stopped: {e}"))
                .and_then(|finished| finished)
                .err(),
            (None, None) => None,
        };
        match error {
            Some(error) => output.with_metadata(
                "checkpoint",
                serde_json::json!({
                    "recorded": false,
                    "error": format!("{error}. This call cannot be undone."),
                }),
            ),
            None if not_read > 0 => output.with_metadata(
                "checkpoint",
                serde_json::json!({
                    "recorded": true,
                    "not_read": not_read,
                    "note": format!(
                        "{} of the workspace had not been read yet when the call began (the first \
                         checkpoint reads for a limited time): an undo leaves a change to them as it is.",
                        plural(not_read as u64, "file")
                    ),
                }),
            ),
            None => output,
        }
    }
}

/// Records a checkpoint before a mutating call of `tool` on `ws`, when the session has
/// checkpoints on and the workspace is local; keep it until the call ends, then hand it the
/// call's output ([`Recording::finish_into`]).
pub(crate) async fn begin(ws: &Workspace, ctx: &ToolContext, tool: &str) -> Recording {
    if !ws.is_local() {
        return Recording::none();
    }
    let checkpoints = Checkpoints::of_call(ctx);
    if !checkpoints.is_enabled() {
        return Recording::none();
    }
    let root = ws.root().to_path_buf();
    let call_id = ctx.call_id().to_owned();
    let turn = ctx.turn_id().map(str::to_owned);
    let tool = tool.to_owned();
    let started =
        tokio::task::spawn_blocking(move || checkpoints.start(&root, &call_id, turn.as_deref(), &tool)).await;
    match started {
        Ok(Ok(guard)) => Recording { guard, error: None },
        Ok(Err(error)) => Recording { guard: None, error: Some(error) },
        Err(e) => Recording { guard: None, error: Some(format!("The checkpoint stopped: {e}")) },
    }
}

/// A time as `HH:MM:SS` UTC.
pub(crate) fn clock(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02} UTC", secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

/// Change notifications (inotify) on the directories a scan walks: while none arrives, nothing
/// beneath them changed, and the last scan still holds without a file being looked at; when
/// some arrive, they name the directories to list again.
mod watch {
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

        /// Watches the directory `dir`, at `rel` beneath the root; called before it is read, so
        /// that a change made while it is read is notified. A directory watched already (moved
        /// here from elsewhere in the tree) keeps its watch, now under its new name.
        pub(super) fn add(&self, dir: &Path, rel: &Path) {
            use std::sync::atomic::Ordering;
            if self.failed.load(Ordering::Relaxed) {
                return;
            }
            let mut dirs = self.dirs();
            let added = if dirs.len() >= self.limit {
                // Past our limit only a directory watched already may be named again.
                match self.inotify.add_watch(dir, Self::mask()) {
                    Ok(wd) if dirs.contains_key(&wd) => Some(wd),
                    Ok(wd) => {
                        let _ = self.inotify.rm_watch(wd);
                        None
                    }
                    Err(_) => None,
                }
            } else {
                self.inotify.add_watch(dir, Self::mask()).ok()
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
                                && event.mask.intersects(
                                    F::IN_CREATE | F::IN_DELETE | F::IN_MOVED_FROM | F::IN_MOVED_TO,
                                )
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
        pub(super) fn add(&self, _dir: &Path, _rel: &Path) {}
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace in a new temporary directory, removed at the end.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Tree {
            let root = std::env::temp_dir().join(format!("checkpoint-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root).unwrap();
            Tree(std::fs::canonicalize(&root).unwrap())
        }

        fn write(&self, rel: &str, content: &str) {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn counts(checkpoints: &Checkpoints) -> ScanCounts {
        lock(&checkpoints.inner).scans
    }

    /// What a scan that walks everything finds, with no notifications involved.
    fn truth(root: &Path) -> BTreeMap<PathBuf, FileState> {
        let config = CheckpointConfig { max_watched_dirs: 0, ..CheckpointConfig::default() };
        Checkpoints::new(config).scan(root).unwrap()
    }

    fn state(checkpoints: &Checkpoints, root: &Path, rel: &str) -> Option<FileState> {
        checkpoints.scan(root).unwrap().remove(Path::new(rel))
    }

    /// A file the host cannot open (here a write lease another process holds, so the host's
    /// non-blocking open fails with EWOULDBLOCK, as root too; a command's `chmod 000` does the same
    /// for an ordinary user) is recorded by its metadata, and the scan goes on: it used to fail
    /// the scan, and with it every checkpoint and undo of the session.
    #[test]
    fn a_file_the_host_cannot_open_is_recorded_unread_and_the_scan_goes_on() {
        use std::io::BufRead;
        let tree = Tree::new("unopenable");
        tree.write("a.txt", "a\n");
        tree.write("held.txt", "held\n");
        let holder = std::process::Command::new("python3")
            .arg("-c")
            .arg(
                "import fcntl, os, signal, sys, time\n\
                 signal.signal(signal.SIGIO, signal.SIG_IGN)\n\
                 fd = os.open(sys.argv[1], os.O_WRONLY)\n\
                 fcntl.fcntl(fd, 1024, fcntl.F_WRLCK)\n\
                 print('held', flush=True)\n\
                 time.sleep(30)\n",
            )
            .arg(tree.0.join("held.txt"))
            .stdout(std::process::Stdio::piped())
            .spawn();
        let Ok(mut holder) = holder else {
            return eprintln!("skipped: python3 is not installed");
        };
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
        if line.trim() != "held" {
            let _ = holder.kill();
            return eprintln!("skipped: this file system takes no lease");
        }
        let scanned = truth(&tree.0);
        let _ = holder.kill();
        let _ = holder.wait();
        assert!(matches!(scanned.get(Path::new("a.txt")), Some(FileState::File { .. })), "{scanned:?}");
        assert!(
            matches!(scanned.get(Path::new("held.txt")), Some(FileState::NotRead { size: 5, .. })),
            "{scanned:?}"
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_change_in_a_deep_directory_is_caught_by_listing_that_directory_only() {
        let tree = Tree::new("deep");
        for i in 0..20 {
            tree.write(&format!("src/m{i}/f.rs"), "fn f() {}\n");
        }
        tree.write("a/b/c/d/e/deep.txt", "one\n");
        let checkpoints = Checkpoints::default();
        let first = state(&checkpoints, &tree.0, "a/b/c/d/e/deep.txt");
        assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 0 });

        tree.write("a/b/c/d/e/deep.txt", "two\n");
        let scan = checkpoints.scan(&tree.0).unwrap();
        assert_ne!(scan.get(Path::new("a/b/c/d/e/deep.txt")), first.as_ref());
        assert_eq!(scan, truth(&tree.0));
        assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 1 });

        // Nothing since: the last scan holds, nothing is walked.
        assert_eq!(checkpoints.scan(&tree.0).unwrap(), scan);
        assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 1 });
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn lost_notifications_fall_back_to_a_full_scan() {
        let tree = Tree::new("overflow");
        tree.write("noisy/a", "");
        tree.write("noisy/b", "");
        tree.write("deep/x/y/z.txt", "before\n");
        let checkpoints = Checkpoints::default();
        checkpoints.scan(&tree.0).unwrap();
        // More notifications than the kernel queues: the later ones are lost, the change to
        // z.txt among them, and only an overflow notice says so.
        let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(16384);
        let mut files = [tree.0.join("noisy/a"), tree.0.join("noisy/b")]
            .map(|p| std::fs::OpenOptions::new().append(true).open(p).unwrap());
        for n in 0..queued + 10 {
            // Alternating, so that the kernel does not merge them into one.
            std::io::Write::write_all(&mut files[n % 2], b"x").unwrap();
        }
        tree.write("deep/x/y/z.txt", "after\n");
        let scan = checkpoints.scan(&tree.0).unwrap();
        assert_eq!(scan, truth(&tree.0), "the change to deep/x/y/z.txt is seen");
        assert_eq!(counts(&checkpoints), ScanCounts { full: 2, partial: 0 });
        // The queue was emptied: the next change is back to the cheap scan.
        tree.write("deep/x/y/z.txt", "later\n");
        assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
        assert_eq!(counts(&checkpoints), ScanCounts { full: 2, partial: 1 });
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_directory_a_call_created_is_watched_from_then_on() {
        let tree = Tree::new("newdir");
        tree.write("README", "hello\n");
        let checkpoints = Arc::new(Checkpoints::default());
        let call = checkpoints.begin(&tree.0, "call_1", "bash").unwrap();
        tree.write("made/by/the/call.txt", "1\n");
        assert_eq!(call.finish(), Some(1));
        assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 1 });
        let changes: Vec<PathBuf> = checkpoints.list()[0].changes.iter().map(|c| c.path.clone()).collect();
        assert_eq!(changes, ["made", "made/by", "made/by/the", "made/by/the/call.txt"].map(PathBuf::from));

        // Changed between calls, beneath the new directory only.
        tree.write("made/by/the/call.txt", "changed outside\n");
        tree.write("made/by/the/other.txt", "new outside\n");
        assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
        assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 2 });
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_directory_moved_within_the_tree_is_followed_under_its_new_name() {
        let tree = Tree::new("moved");
        tree.write("a/sub/inner/f.txt", "1\n");
        tree.write("b/keep.txt", "k\n");
        let checkpoints = Checkpoints::default();
        checkpoints.scan(&tree.0).unwrap();
        std::fs::rename(tree.0.join("a/sub"), tree.0.join("b/sub")).unwrap();
        assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
        // Its old watch now speaks for its new place.
        tree.write("b/sub/inner/f.txt", "2\n");
        assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
        // A directory put where another was moved from is a new one, walked in full.
        tree.write("a/sub/inner/g.txt", "g\n");
        assert_eq!(checkpoints.scan(&tree.0).unwrap(), truth(&tree.0));
        assert_eq!(counts(&checkpoints), ScanCounts { full: 1, partial: 3 });
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_ignore_file_changed_rescans_everything() {
        let tree = Tree::new("ignore");
        tree.write("deep/er/build/out.o", "object\n");
        tree.write("deep/er/.gitignore", "build/\n");
        let checkpoints = Checkpoints::default();
        assert!(!checkpoints.scan(&tree.0).unwrap().contains_key(Path::new("deep/er/build/out.o")));
        tree.write("deep/er/.gitignore", "");
        let scan = checkpoints.scan(&tree.0).unwrap();
        assert!(scan.contains_key(Path::new("deep/er/build/out.o")));
        assert_eq!(scan, truth(&tree.0));
        assert_eq!(counts(&checkpoints).full, 2);
    }

    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// Every file in the store's directory, with its bytes.
    fn stored_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    files.push((entry.path(), std::fs::read(entry.path()).unwrap()));
                }
            }
        }
        files
    }

    #[test]
    fn the_default_store_is_a_new_private_directory_with_private_files() {
        let tree = Tree::new("private");
        tree.write("secret.env", "KEY=1\n");
        let checkpoints = Checkpoints::default();
        checkpoints.scan(&tree.0).unwrap();
        let dir = checkpoints.store_dir().unwrap();
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let prefix = format!("{STORE_PREFIX}{}-", std::process::id());
        assert!(name.starts_with(&prefix) && name.len() == prefix.len() + 16, "{name}");
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(mode_of(&dir.join("objects")), 0o700);
        let files = stored_files(&dir);
        assert_eq!(files.len(), 1);
        assert_eq!(mode_of(&files[0].0), 0o600);
        assert_eq!(mode_of(files[0].0.parent().unwrap()), 0o700);
        drop(checkpoints);
        assert!(std::fs::symlink_metadata(&dir).is_err(), "removed with the session");
    }

    /// A command that can write the store plants links at the names the host writes: the blob's
    /// temporary name of old (`<hash>.tmp`), its final name, and a blob directory.
    #[test]
    fn links_planted_in_the_store_are_never_written_through() {
        let tree = Tree::new("planted");
        let outside = Tree::new("planted-outside");
        let state = Tree::new("planted-state");
        outside.write("existing", "untouched\n");
        tree.write("first.txt", "first\n");
        let checkpoints =
            Checkpoints::new(CheckpointConfig { dir: Some(state.0.clone()), ..CheckpointConfig::default() });
        checkpoints.scan(&tree.0).unwrap();
        let store = checkpoints.store_dir().unwrap();
        assert_eq!(store.parent(), Some(state.0.as_path()));
        let payload = b"written by a command\n";
        let other = b"another file\n";
        let (sub, name) = Store::place(&BlobId::of(payload));
        let (other_sub, _) = Store::place(&BlobId::of(other));
        assert_ne!(sub, other_sub, "the test needs two blob directories");
        let objects = store.join("objects");
        std::fs::create_dir_all(objects.join(&sub)).unwrap();
        std::os::unix::fs::symlink(outside.0.join("created"), objects.join(&sub).join(format!("{name}.tmp")))
            .unwrap();
        std::os::unix::fs::symlink(outside.0.join("existing"), objects.join(&sub).join(&name)).unwrap();
        std::os::unix::fs::symlink(&outside.0, objects.join(&other_sub)).unwrap();
        tree.write("f.txt", std::str::from_utf8(payload).unwrap());
        tree.write("g.txt", std::str::from_utf8(other).unwrap());

        let scan = checkpoints.scan(&tree.0).unwrap();
        assert!(matches!(scan.get(Path::new("f.txt")), Some(FileState::File { .. })), "{scan:?}");
        assert!(matches!(scan.get(Path::new("g.txt")), Some(FileState::File { .. })), "{scan:?}");
        let names: Vec<_> = std::fs::read_dir(&outside.0).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, ["existing"], "nothing made outside the store");
        assert_eq!(std::fs::read_to_string(outside.0.join("existing")).unwrap(), "untouched\n");
        // The store holds its own copies, which read back.
        let inner = lock(&checkpoints.inner);
        let kept = inner.store.as_ref().unwrap();
        assert_eq!(kept.get(&BlobId::of(payload)).unwrap(), payload);
        assert_eq!(kept.get(&BlobId::of(other)).unwrap(), other);
        assert!(std::fs::symlink_metadata(objects.join(&other_sub)).unwrap().is_dir());
    }

    /// A background command swaps a listed regular file with links to a file outside the
    /// workspace and to `/proc/self/environ` (the host's environment) while the host scans:
    /// neither is ever read, so neither reaches the store.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_file_swapped_for_a_link_while_scanned_is_never_read_through_it() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let tree = Tree::new("swap");
        let outside = Tree::new("swap-outside");
        let secret = "SECRET-OUTSIDE-THE-WORKSPACE";
        outside.write("secret", secret);
        tree.write("a.txt", "inside\n");
        std::os::unix::fs::symlink(outside.0.join("secret"), tree.0.join("to-secret")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", tree.0.join("to-environ")).unwrap();
        let environ = std::fs::read("/proc/self/environ").unwrap();
        let first_variable = environ.split(|b| *b == 0).find(|v| v.len() > 8).unwrap_or(b"").to_vec();

        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, root) = (stop.clone(), tree.0.clone());
            std::thread::spawn(move || {
                use rustix::fs::{RenameFlags, renameat_with};
                let dir = host::open_dir_path(&root).unwrap();
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let link = if swaps.is_multiple_of(2) { "to-secret" } else { "to-environ" };
                    renameat_with(&dir, "a.txt", &dir, link, RenameFlags::EXCHANGE).unwrap();
                    renameat_with(&dir, "a.txt", &dir, link, RenameFlags::EXCHANGE).unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let checkpoints =
            Checkpoints::new(CheckpointConfig { max_watched_dirs: 0, ..CheckpointConfig::default() });
        let mut read = 0;
        for _ in 0..200 {
            let scan = checkpoints.scan(&tree.0).unwrap();
            let inner = lock(&checkpoints.inner);
            let store = inner.store.as_ref().unwrap();
            for (path, state) in &scan {
                if let FileState::File { blob, .. } = state {
                    // (Compared without printing: the other content would be the environment.)
                    assert!(store.get(blob).unwrap() == b"inside\n", "{} held other content", path.display());
                    read += 1;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 200 && read > 0, "the swaps ({swaps}) raced the scans (files read {read})");
        for (path, bytes) in stored_files(&checkpoints.store_dir().unwrap()) {
            let holds =
                |needle: &[u8]| !needle.is_empty() && bytes.windows(needle.len()).any(|w| w == needle);
            assert!(!holds(secret.as_bytes()) && !holds(&first_variable), "{} holds it", path.display());
        }
    }

    /// A FIFO and links to `/dev/zero` at every ignore file's name: the scan neither blocks nor
    /// reads without end.
    #[test]
    #[cfg(target_os = "linux")]
    fn ignore_files_that_are_fifos_or_links_to_devices_are_not_read() {
        use nix::sys::stat::Mode;
        let tree = Tree::new("fifo");
        tree.write("kept.txt", "k\n");
        tree.write("sub/x.txt", "x\n");
        std::fs::create_dir_all(tree.0.join(".git/info")).unwrap();
        nix::unistd::mkfifo(&tree.0.join(".gitignore"), Mode::from_bits_truncate(0o644)).unwrap();
        nix::unistd::mkfifo(&tree.0.join("sub/.ignore"), Mode::from_bits_truncate(0o644)).unwrap();
        nix::unistd::mkfifo(&tree.0.join(".git/info/exclude"), Mode::from_bits_truncate(0o644)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", tree.0.join(".ignore")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", tree.0.join("sub/.gitignore")).unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        let root = tree.0.clone();
        std::thread::spawn(move || {
            let _ = sender
                .send(Checkpoints::default().scan(&root).map(|scan| scan.into_keys().collect::<Vec<_>>()));
        });
        let scanned = receiver.recv_timeout(Duration::from_secs(30)).expect("the scan returns").unwrap();
        for path in ["kept.txt", "sub/x.txt", ".ignore", "sub/.gitignore"] {
            assert!(scanned.contains(&PathBuf::from(path)), "{path}: {scanned:?}");
        }
    }

    /// The first scan reads for a limited time (none here): the files it did not read are
    /// recorded by their metadata; a call that changes one records the change, and its undo
    /// leaves that file alone and says so.
    #[test]
    fn files_the_first_scan_had_no_time_to_read_are_left_alone_by_undo() {
        let tree = Tree::new("not-read");
        for i in 0..20 {
            tree.write(&format!("d{}/f{i}.txt", i % 3), &format!("{i}\n"));
        }
        let config = CheckpointConfig { first_read_time: Duration::ZERO, ..CheckpointConfig::default() };
        let checkpoints = Arc::new(Checkpoints::new(config));
        let scan = checkpoints.scan(&tree.0).unwrap();
        assert_eq!(scan.values().filter(|s| matches!(s, FileState::NotRead { .. })).count(), 20);
        let call = checkpoints.begin(&tree.0, "c1", "bash").unwrap();
        tree.write("d1/f1.txt", "changed\n");
        tree.write("new.txt", "new\n");
        assert_eq!(call.finish(), Some(1));
        let changes: Vec<PathBuf> = checkpoints.list()[0].changes.iter().map(|c| c.path.clone()).collect();
        assert_eq!(changes, ["d1/f1.txt", "new.txt"].map(PathBuf::from));
        let report = checkpoints.undo(&tree.0, &UndoTarget::Call("c1".into()), "u1", "undo").unwrap();
        assert_eq!(report.not_read, [PathBuf::from("d1/f1.txt")]);
        assert_eq!(report.removed, [PathBuf::from("new.txt")]);
        assert_eq!(std::fs::read_to_string(tree.0.join("d1/f1.txt")).unwrap(), "changed\n");
    }

    /// A file not read by the first scan and read by a later one, unchanged, is no change.
    #[test]
    fn a_file_read_after_the_first_scan_is_no_change() {
        let tree = Tree::new("read-later");
        tree.write("a.txt", "a\n");
        let mut before = Snapshot::default();
        let stamp = Stamp { size: 2, mtime: 1, ctime: 1, ino: 7, mode: 0o100644 };
        let not_read = FileState::NotRead { size: 2, mtime: 1 };
        before.insert(PathBuf::from("a.txt"), Cached { stamp: Some(stamp.clone()), state: not_read });
        let mut after = Snapshot::default();
        let read = FileState::File { blob: BlobId::of(b"a\n"), mode: 0o644 };
        after.insert(PathBuf::from("a.txt"), Cached { stamp: Some(stamp.clone()), state: read.clone() });
        assert_eq!(diff(&before, &after), []);
        assert_eq!(diff_paths(&before, &after, &[PathBuf::from("a.txt")]), []);
        let changed = Stamp { mtime: 2, ..stamp };
        after.insert(PathBuf::from("a.txt"), Cached { stamp: Some(changed), state: read });
        assert_eq!(diff(&before, &after).len(), 1);
    }

    /// Random changes between scans (files written, removed and renamed, directories made,
    /// removed and moved, links): each scan that lists only the directories notifications
    /// named finds what a full walk finds.
    #[test]
    #[cfg(target_os = "linux")]
    fn partial_scans_find_what_a_full_walk_finds() {
        let tree = Tree::new("random");
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let names = ["a", "b", "c", "d"];
        let checkpoints = Arc::new(Checkpoints::default());
        checkpoints.scan(&tree.0).unwrap();
        let mut known = truth(&tree.0);
        for step in 0..300 {
            // Some changes are a call's (recorded as its checkpoint), some made between calls.
            let call = next(2) == 0;
            let guard = call.then(|| checkpoints.begin(&tree.0, &format!("call{step}"), "test").unwrap());
            let depth = next(4);
            let dir: PathBuf = (0..depth).map(|_| names[next(names.len())]).collect();
            let path = tree.0.join(&dir).join(format!("{}{}", names[next(4)], next(3)));
            let _ = match next(7) {
                0 | 1 => std::fs::create_dir_all(path.parent().unwrap())
                    .and_then(|()| std::fs::write(&path, format!("step {step}\n"))),
                2 => std::fs::remove_file(&path),
                3 => std::fs::create_dir_all(&path),
                4 if depth > 0 => std::fs::remove_dir_all(tree.0.join(&dir))
                    .and_then(|()| std::fs::create_dir_all(tree.0.join(&dir))),
                4 => Ok(()),
                5 => {
                    let to: PathBuf = (0..next(3)).map(|_| names[next(names.len())]).collect();
                    std::fs::rename(&path, tree.0.join(to).join(format!("moved{step}")))
                }
                _ => std::os::unix::fs::symlink(format!("target{step}"), &path),
            };
            let now = truth(&tree.0);
            if let Some(guard) = guard {
                let expected: Vec<PathBuf> = known
                    .keys()
                    .chain(now.keys())
                    .filter(|p| known.get(*p) != now.get(*p))
                    .cloned()
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                match guard.finish() {
                    None => assert!(expected.is_empty(), "after step {step}: {expected:?}"),
                    Some(id) => {
                        let listed = checkpoints.list();
                        let recorded = listed.iter().find(|c| c.id == id).unwrap();
                        let paths: Vec<PathBuf> = recorded.changes.iter().map(|c| c.path.clone()).collect();
                        assert_eq!(paths, expected, "after step {step}");
                        for change in &recorded.changes {
                            assert_eq!(change.before.as_ref(), known.get(&change.path), "{step}");
                            assert_eq!(change.after.as_ref(), now.get(&change.path), "{step}");
                        }
                    }
                }
            } else if next(3) != 0 {
                assert_eq!(checkpoints.scan(&tree.0).unwrap(), now, "after step {step}");
            }
            known = now;
        }
        let scans = counts(&checkpoints);
        assert_eq!(scans.full, 1, "every later scan listed only what changed");
        assert!(scans.partial > 100, "{scans:?}");
    }
}
