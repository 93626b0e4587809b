//! Scanning the workspace: every file's state, reused while its metadata holds, and the
//! changes between two scans.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cap_std::fs::Dir;

use super::store::{BlobId, Store};
use super::{Change, Checkpoints, FileState, Inner, MAX_PATH_BYTES, lock, watch};
use crate::fs::host;
use crate::fs::ops::{FileKind, Target, WalkEntry, WalkOptions};
use crate::fs::roots::Roots;
use crate::fs::walk::{Listed, Step, walk_listed};

/// A scan: every path with what it held and the metadata that held it.
/// (foldhash, seeded at random: several times cheaper than the default hasher on the tens of
/// thousands of paths a scan and a diff look up.)
pub(super) type Snapshot = HashMap<PathBuf, Cached, foldhash::fast::RandomState>;

/// What a scan learnt about a file, to reuse when its metadata has not changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) size: u64,
    pub(super) mtime: i128,
    pub(super) ctime: i128,
    pub(super) ino: u64,
    pub(super) mode: u32,
}

#[derive(Debug, Clone)]
pub(super) struct Cached {
    /// `None` for a directory.
    pub(super) stamp: Option<Stamp>,
    pub(super) state: FileState,
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

/// What one scan has read: each file by device and inode with the metadata it was read with
/// (so that the hard links to one file are read once), the bytes it may still read, how long it
/// may still spend reading files never read before (nanoseconds), and how many files it left
/// unread for lack of either (to be read by the next scan).
struct Reads {
    files: Mutex<HashMap<(u64, u64), (Stamp, FileState)>>,
    left: AtomicU64,
    time_left: AtomicU64,
    deferred: AtomicUsize,
}

impl Reads {
    fn new(max_bytes: u64, time: Duration) -> Reads {
        Reads {
            files: Mutex::default(),
            left: AtomicU64::new(max_bytes),
            time_left: AtomicU64::new(whole_nanos(time)),
            deferred: AtomicUsize::new(0),
        }
    }

    /// Whether the time for files never read is spent.
    fn late(&self) -> bool {
        self.time_left.load(Ordering::Relaxed) == 0
    }

    fn spent(&self, time: Duration) {
        let nanos = whole_nanos(time);
        let _ = self
            .time_left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| Some(left.saturating_sub(nanos)));
    }

    /// A file recorded unread for now, for the next scan to read.
    fn defer(&self, stat: &host::Stat) -> FileState {
        self.deferred.fetch_add(1, Ordering::Relaxed);
        not_kept(stat, false)
    }

    /// What another link to the file `stat` describes held when this scan read it.
    fn read_before(&self, stat: &host::Stat) -> Option<FileState> {
        let files = self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (read, state) = files.get(&(stat.dev, stat.ino))?;
        (*read == stamp(stat)).then(|| state.clone())
    }

    fn remember(&self, stat: &host::Stat, state: &FileState) {
        let mut files = self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        files.insert((stat.dev, stat.ino), (stamp(stat), state.clone()));
    }

    /// Takes `bytes` from what is left to read; `false` when not that much is left.
    fn take(&self, bytes: u64) -> bool {
        self.left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(bytes)).is_ok()
    }
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
/// Once the scan has spent its time reading files never read, such a file is recorded by its
/// metadata only ([`FileState::NotRead`]): every file of the first scan (`previous` empty), and
/// in later scans the files still not read and unchanged. So is any file once `reads` has no
/// bytes left for it; another link to a file it read (same device, inode and metadata) is not
/// read again. A sparse file (far less storage than its size: a command makes many at no cost)
/// is not kept, as one too large is not.
fn look(
    listed: &Listed<'_>,
    rel: &Path,
    previous: &Snapshot,
    racy: i128,
    max_file_bytes: u64,
    reads: &Reads,
    store: &Mutex<&mut Store>,
) -> io::Result<Option<Cached>> {
    let Ok(now) = host::stat_at(listed.dir, listed.name) else { return Ok(None) };
    let listed_stamp = stamp(&now);
    if let Some(known) = previous.get(rel).filter(|cached| cached.stamp.as_ref() == Some(&listed_stamp)) {
        match known.state {
            FileState::NotRead { .. } if reads.late() => {
                reads.deferred.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(known.clone()));
            }
            // Read now.
            FileState::NotRead { .. } => {}
            _ if listed_stamp.mtime < racy && listed_stamp.ctime < racy => return Ok(Some(known.clone())),
            _ => {}
        }
    }
    if now.kind == host::Kind::File && now.size <= max_file_bytes {
        if now.size > SPARSE_FROM && now.allocated < now.size / 8 {
            let state = not_kept(&now, true);
            return Ok(Some(Cached { stamp: Some(listed_stamp), state }));
        }
        if let Some(state) = reads.read_before(&now) {
            return Ok(Some(Cached { stamp: Some(listed_stamp), state }));
        }
        if previous.is_empty() && reads.late() || !reads.take(now.size) {
            return Ok(Some(Cached { stamp: Some(listed_stamp), state: reads.defer(&now) }));
        }
    }
    let reading = Instant::now();
    let lock_store = || store.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (stat, state) = match now.kind {
        host::Kind::Link => {
            let Some(target) = host::read_link(listed.dir, listed.name)? else { return Ok(None) };
            (now, FileState::Link { blob: lock_store().put(&target)? })
        }
        host::Kind::File if now.size > max_file_bytes => (now, not_kept(&now, true)),
        host::Kind::File => match host::read_file(listed.dir, listed.name, max_file_bytes, Some(&now)) {
            // A file this process may not read (a command's `chmod 000`, a lease held on it) is
            // recorded by its metadata and tried again by the next scan: failing the scan would
            // let any command switch checkpoints and undo off for the session.
            Err(e) if unreadable(&e) => (now, not_kept(&now, false)),
            Err(e) => return Err(e),
            Ok(host::Content::Bytes(bytes, read)) => {
                let blob = BlobId::of(&bytes);
                lock_store().put_hashed(blob, &bytes)?;
                let state = FileState::File { blob, mode: read.mode & 0o7777 };
                reads.remember(&read, &state);
                (read, state)
            }
            Ok(host::Content::TooLarge(read)) => (read, not_kept(&read, true)),
            Ok(host::Content::Replaced) => return Ok(None),
        },
        host::Kind::Dir | host::Kind::Other => return Ok(None),
    };
    // Time spent on a file never read before, read or not (its permissions), is the first
    // reading's.
    if !matches!(
        previous.get(rel),
        Some(Cached { state: FileState::File { .. } | FileState::Link { .. }, .. })
    ) {
        reads.spent(reading.elapsed());
    }
    Ok(Some(Cached { stamp: Some(stamp(&stat)), state }))
}

/// `time` in nanoseconds, at most `u64::MAX`.
fn whole_nanos(time: Duration) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

/// A file larger than this whose storage is less than an eighth of its size is sparse.
const SPARSE_FROM: u64 = 64 * 1024;

/// Why a scan stops at `rel`, the `entries`th entry listed, whose paths so far add up to
/// `bytes`: past the bounds of [`CheckpointConfig`](super::CheckpointConfig).
fn too_much(
    rel: &Path,
    entries: usize,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
) -> Option<io::Error> {
    let why = if rel.as_os_str().len() > MAX_PATH_BYTES {
        let start: String = crate::text::display_path(rel).chars().take(80).collect();
        format!("it holds a path longer than {MAX_PATH_BYTES} bytes ({start}...)")
    } else if entries > max_entries {
        format!("it holds more than {max_entries} files and directories that .gitignore does not ignore")
    } else if bytes > max_bytes {
        format!("the paths of its files and directories add up to more than {} MiB", max_bytes >> 20)
    } else {
        return None;
    };
    Some(io::Error::other(format!(
        "{why}, so checkpoints are not recorded for it (calls run as before; `undo` has nothing new to undo). \
         Remove what a command made there, or have .gitignore ignore it"
    )))
}

/// The state of a file whose content is not kept (`large`: over the size limit, or sparse; else
/// not read yet): what tells a later change to it.
fn not_kept(stat: &host::Stat, large: bool) -> FileState {
    let (size, mtime, ctime, ino) = (stat.size, stat.mtime, stat.ctime, stat.ino);
    match large {
        true => FileState::TooLarge { size, mtime, ctime, ino },
        false => FileState::NotRead { size, mtime, ctime, ino },
    }
}

/// Opens the workspace root `root` (following the links on its way, as its user meant them),
/// refused when it is not the directory the first scan of this root opened: a command that may
/// write above the root could have moved it (or a directory above it) away and put a link to
/// another directory at its path, and the host would then read that directory into the store,
/// or put files back there, where commands may not.
pub(super) fn open_root(inner: &mut Inner, root: &Path) -> io::Result<Dir> {
    let dir = host::open_dir_path(root)?;
    let stat = host::stat_dir(&dir)?;
    match inner.roots.get(root) {
        Some(&(dev, ino)) if (dev, ino) != (stat.dev, stat.ino) => Err(io::Error::other(format!(
            "the workspace root {} is no longer the directory this session's checkpoints began with (it, or a \
             directory above it, was moved or replaced); checkpoints and undo stop until it is put back, or a \
             new session starts",
            root.display()
        ))),
        Some(_) => Ok(dir),
        None => {
            inner.roots.insert(root.to_path_buf(), (stat.dev, stat.ino));
            Ok(dir)
        }
    }
}

/// Whether opening or reading a listed file failed only for this file (its permissions, a lease
/// or a running executable), not for the scan as a whole.
fn unreadable(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::WouldBlock)
        || error.raw_os_error() == Some(nix::libc::ETXTBSY)
}

impl Checkpoints {
    /// Scans the workspace at `root`: every file not ignored, its content kept in the store.
    pub fn scan(&self, root: &Path) -> io::Result<BTreeMap<PathBuf, FileState>> {
        let mut inner = lock(&self.inner);
        let snapshot = self.scan_locked(&mut inner, root)?;
        Ok(snapshot.iter().map(|(path, cached)| (path.clone(), cached.state.clone())).collect())
    }

    pub(super) fn scan_locked(&self, inner: &mut Inner, root: &Path) -> io::Result<Arc<Snapshot>> {
        if inner.store.is_none() {
            inner.store = Some(Store::open(&self.config)?);
        }
        let root_dir = open_root(inner, root)?;
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
        let roots = Roots::of(root_dir, root);
        let options = WalkOptions { hidden: true, ..WalkOptions::default() };
        // The subdirectories of listed directories that are not walked again: their last scan holds.
        let kept: Mutex<HashSet<PathBuf>> = Mutex::default();
        let found: Mutex<Vec<Found>> =
            Mutex::new(Vec::with_capacity(if scope.is_some() { 64 } else { cache.len() + 16 }));
        let failed: Mutex<Option<io::Error>> = Mutex::new(None);
        let previous = cache.clone();
        let max_file_bytes = self.config.max_file_bytes;
        let reads = Reads::new(self.config.max_read_bytes, self.config.first_read_time);
        let store = Mutex::new(store);
        let push = |item: Found| found.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(item);
        // What the walk has listed, bounded: entries and their paths' bytes are held in memory.
        let (entries, path_bytes) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let (max_entries, max_path_bytes) = (self.config.max_entries, self.config.max_path_bytes);
        let visit = |entry: WalkEntry, listed: &Listed<'_>| -> Step {
            let rel = entry.path.path();
            if listed.name == ".git" {
                return Step::Prune;
            }
            let length = rel.as_os_str().len();
            let listed_so_far = entries.fetch_add(1, Ordering::Relaxed) + 1;
            let bytes_so_far = path_bytes.fetch_add(length, Ordering::Relaxed) + length;
            if let Some(refusal) = too_much(rel, listed_so_far, bytes_so_far, max_entries, max_path_bytes) {
                *failed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(refusal);
                return Step::Stop;
            }
            let parent = rel.parent().unwrap_or(Path::new(""));
            let lists_parent = scope.as_ref().is_none_or(|s| s.lists(parent));
            if entry.kind == FileKind::Dir {
                let store_here =
                    host::stat_at(listed.dir, listed.name).is_ok_and(|s| (s.dev, s.ino) == store_id);
                if store_here {
                    return Step::Prune;
                }
                // A placeholder a running command's sandbox holds is the sandbox's, no call's
                // change: not listed itself; what the host puts in it is.
                let placeholder = tool_sandbox::is_held_placeholder(&root.join(rel));
                if scope.as_ref().is_none_or(|s| s.descends(rel)) {
                    // Called before the walk reads the directory.
                    if let Some(watch) = &watch {
                        watch.add(listed.dir, listed.name, rel);
                    }
                    if lists_parent && !placeholder {
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
            // A file placeholder (a git configuration file included but absent) is the sandbox's.
            if !lists_parent || tool_sandbox::is_held_placeholder(&root.join(rel)) {
                return Step::Continue;
            }
            match look(listed, rel, &previous, racy, max_file_bytes, &reads, &store) {
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
        // The bytes of the new snapshot's paths: the last one's, less those dropped, plus those found.
        let mut total_bytes = if scope.is_some() { inner.path_bytes } else { 0 };
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
                        total_bytes -= path.as_os_str().len();
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
            let length = rel.as_os_str().len();
            if seen.insert(rel, cached).is_none() {
                total_bytes += length;
            }
        }
        // A partial scan walks only what changed: the bounds hold for the whole snapshot too.
        let last = Path::new("");
        if let Some(refusal) = too_much(last, seen.len(), total_bytes, max_entries, max_path_bytes) {
            return Err(refusal);
        }
        if watch.is_some_and(|w| w.complete()) {
            inner.scanned = Some(root.to_path_buf());
        }
        let seen = Arc::new(seen);
        inner.last_partial = scope.is_some().then(|| (Arc::downgrade(&previous), seen.clone(), touched));
        // Files left unread for lack of time or bytes make the next scan walk everything to read
        // them; those this process may not read are looked at again when they change.
        inner.not_read = reads.deferred.load(Ordering::Relaxed);
        inner.path_bytes = total_bytes;
        inner.cache = seen.clone();
        Ok(seen)
    }
}

/// Whether two scans' entries of one path hold the same: the same state, or a file not read in
/// one and read in the other with the same metadata.
pub(super) fn same(before: &Cached, after: &Cached) -> bool {
    match (&before.state, &after.state) {
        (FileState::NotRead { .. }, FileState::File { .. } | FileState::NotRead { .. })
        | (FileState::File { .. }, FileState::NotRead { .. }) => before.stamp == after.stamp,
        (b, a) => b == a,
    }
}

pub(super) fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
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
pub(super) fn diff_paths(before: &Snapshot, after: &Snapshot, paths: &[PathBuf]) -> Vec<Change> {
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
