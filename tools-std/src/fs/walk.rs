//! The local walk: ripgrep's ignore rules over directory handles, each directory opened beneath its parent without following links.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

#[cfg(not(target_os = "linux"))]
use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::fs::ops::{FileInfo, FileKind, Found, Scope, Target, WalkEntry, WalkOptions, overrides};
use crate::fs::roots::{Roots, kind_of, not_regular, open_regular};
#[cfg(not(target_os = "linux"))]
use crate::fs::roots::{info, open_listed};

/// At most this many bytes of ignore rules are compiled by one walk, each distinct text counted
/// once (the global excludes file is read to at most this many). Compiling is what an ignore
/// file costs, about 2 s of CPU and 400 MB of memory per MiB of rules written to be costly, and
/// a command can write ignore files anywhere in the workspace; a real tree's distinct rules come
/// to a few KiB, a large monorepo's to a few hundred. A walk past it ends with an error naming
/// the file ([`Compiled::check`]).
const MAX_IGNORE_BYTES: usize = 512 * 1024;
/// A walk never descends deeper than this, whatever `max_depth` says.
const MAX_DEPTH: usize = 512;

/// The ignore rules of one directory. Each matcher is rooted at `.` and shared by every
/// directory whose ignore file has the same text (see [`Compiled`]): it is asked about paths
/// relative to the directory.
#[derive(Default)]
struct Rules {
    /// `.rgignore`, then `.ignore`, then `.gitignore`, then `.git/info/exclude`: ripgrep's order
    /// of precedence within one directory.
    custom: Option<Arc<Gitignore>>,
    ignore: Option<Arc<Gitignore>>,
    git: Option<Arc<Gitignore>>,
    exclude: Option<Arc<Gitignore>>,
    /// The directory holds `.git`: git rules from above it do not apply below it.
    has_git: bool,
}

impl Rules {
    fn is_empty(&self) -> bool {
        self.custom.is_none() && self.ignore.is_none() && self.git.is_none() && self.exclude.is_none()
    }
}

/// A chain of directories' rules, the innermost first.
struct Level {
    rules: Rules,
    /// The directory's absolute path: its rules match the paths below it relative to it.
    dir: PathBuf,
    /// This directory or one above it has a rule: without one, no entry below is matched.
    any: bool,
    parent: Option<Arc<Level>>,
}

impl Level {
    fn new(rules: Rules, dir: PathBuf, parent: Option<Arc<Level>>) -> Level {
        let any = !rules.is_empty() || parent.as_ref().is_some_and(|p| p.any);
        Level { rules, dir, any, parent }
    }

    /// The verdict of the ignore files on `path` (absolute): the innermost directory with an
    /// opinion on each kind of file wins, and the kinds rank as in [`Rules`].
    fn matched(&self, path: &Path, is_dir: bool, global: Option<&Gitignore>) -> Match<()> {
        let (mut custom, mut ignore, mut git, mut exclude) =
            (Match::None, Match::None, Match::None, Match::None);
        let mut saw_git = false;
        let mut level = Some(self);
        while let Some(current) = level {
            if !current.any {
                // Neither this directory nor any above it has a rule.
                break;
            }
            let rules = &current.rules;
            if !rules.is_empty() {
                let relative = relative_to(path, &current.dir);
                fill(&mut custom, rules.custom.as_deref(), relative, is_dir);
                fill(&mut ignore, rules.ignore.as_deref(), relative, is_dir);
                if !saw_git {
                    fill(&mut git, rules.git.as_deref(), relative, is_dir);
                    fill(&mut exclude, rules.exclude.as_deref(), relative, is_dir);
                }
            }
            saw_git |= rules.has_git;
            level = current.parent.as_deref();
        }
        let mut global_match = Match::None;
        fill(&mut global_match, global, path, is_dir);
        custom.or(ignore).or(git).or(exclude).or(global_match)
    }
}

/// `path` relative to `dir`, which holds it, as the matcher of an ignore file rooted at `dir`
/// strips it: the bytes after `dir` and a separator (a path not below `dir` is left whole).
#[cfg(unix)]
fn relative_to<'a>(path: &'a Path, dir: &Path) -> &'a Path {
    use std::os::unix::ffi::OsStrExt;
    let (bytes, dir) = (path.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    let rest = match bytes.strip_prefix(dir) {
        Some(rest) if dir.ends_with(b"/") => rest,
        Some(rest) => match rest.strip_prefix(b"/") {
            Some(rest) => rest,
            None => return path,
        },
        None => return path,
    };
    Path::new(OsStr::from_bytes(rest))
}

/// `path` relative to `dir`, which holds it.
#[cfg(not(unix))]
fn relative_to<'a>(path: &'a Path, dir: &Path) -> &'a Path {
    path.strip_prefix(dir).unwrap_or(path)
}

fn fill(slot: &mut Match<()>, matcher: Option<&Gitignore>, path: &Path, is_dir: bool) {
    if slot.is_none()
        && let Some(matcher) = matcher
    {
        *slot = match matcher.matched(path, is_dir) {
            Match::None => Match::None,
            Match::Ignore(_) => Match::Ignore(()),
            Match::Whitelist(_) => Match::Whitelist(()),
        };
    }
}

/// One directory waiting to be read. A subdirectory is not opened until its turn comes: a walk
/// holds open only the directories being read and those whose subdirectories still wait, about
/// its depth times its threads, however wide the tree (a handle per waiting directory would
/// hold hundreds, past the open-file limit in a wide enough tree, and every time a process with
/// several threads needs a larger table of open files, the kernel waits for all CPUs to pass a
/// quiescent state: milliseconds each time).
struct Pending {
    source: Source,
    target: Target,
    /// Its absolute path, for matching ignore rules (never for opening anything).
    absolute: PathBuf,
    depth: usize,
    level: Option<Arc<Level>>,
}

/// Where a waiting directory is opened from.
enum Source {
    /// The walk's root, opened when the walk starts.
    Root(Dir),
    /// The entry `name` of the directory `parent` (a name its listing held), opened beneath it
    /// by [`open_subdir`], never through a link.
    Beneath { parent: Arc<Dir>, name: std::ffi::OsString },
}

impl Source {
    /// The directory, readable; the parent's handle is let go here, not when the directory has
    /// been read.
    fn open(self) -> io::Result<Dir> {
        match self {
            Source::Root(dir) => Ok(dir),
            Source::Beneath { parent, name } => open_subdir(&parent, &name),
        }
    }
}

/// What every directory of one walk shares: the options, the `--glob` overrides and the global
/// git excludes.
struct Walker<'a> {
    options: &'a WalkOptions,
    overrides: Option<ignore::overrides::Override>,
    global: Option<Gitignore>,
    compiled: Compiled,
    max_depth: usize,
    /// Read the modification time of every entry kept (the sequential walk), or leave it to the
    /// visitor (the parallel one, whose callers need it for few entries, or get it with `fstat`
    /// from a file they open anyway).
    all_times: bool,
}

impl<'a> Walker<'a> {
    /// The walker and the root's directory, waiting to be read.
    fn start(
        roots: &Roots,
        root: &Target,
        options: &'a WalkOptions,
        all_times: bool,
    ) -> io::Result<(Walker<'a>, Pending)> {
        let absolute_root = roots.absolute(root);
        let overrides =
            if options.globs.is_empty() { None } else { Some(overrides(&absolute_root, &options.globs)?) };
        let dir = listable(roots.open_dir(root)?)?;
        let compiled = Compiled::default();
        let (level, global) = if options.respect_ignore_files {
            (ancestors(roots, root, &compiled), global_rules())
        } else {
            (None, None)
        };
        compiled.check()?;
        let max_depth = options.max_depth.unwrap_or(MAX_DEPTH).min(MAX_DEPTH);
        let walker = Walker { options, overrides, global, compiled, max_depth, all_times };
        let source = Source::Root(dir);
        Ok((walker, Pending { source, target: root.clone(), absolute: absolute_root, depth: 0, level }))
    }

    /// Reads one directory: `visit` sees its entries (in name order when `sorted`), and the
    /// subdirectories to descend into are added to `subdirs`. Returns `false` once `visit` did.
    /// Unsorted, the subdirectories come first, and `publish` is handed them before the first
    /// file is visited, so that other threads can read them while this one searches the files.
    fn read(
        &self,
        pending: Pending,
        sorted: bool,
        visit: &mut dyn FnMut(WalkEntry, &Listed<'_>) -> Step,
        subdirs: &mut Vec<Pending>,
        publish: &mut dyn FnMut(&mut Vec<Pending>),
    ) -> bool {
        let options = self.options;
        let Pending { source, target: here, absolute: here_absolute, depth, level: above } = pending;
        // A directory that cannot be opened (gone, or a link now) or listed is skipped.
        let Ok(dir) = source.open() else { return true };
        let Ok(mut names) = list(&dir) else { return true };
        let dir = Arc::new(dir);
        if sorted {
            names.sort_by(|a, b| a.0.cmp(&b.0));
        } else {
            names.sort_unstable_by_key(|(_, kind)| *kind != FileKind::Dir);
        }
        let mut published = sorted;
        let level = if options.respect_ignore_files {
            let rules = listed_rules(&dir, &here_absolute, &names, &self.compiled);
            if self.compiled.exceeded() {
                return false;
            }
            Some(Arc::new(Level::new(rules, here_absolute.clone(), above)))
        } else {
            None
        };
        let depth = depth + 1;
        // Whether any rule can match below here: without one, no path is built to match.
        let matching = self.overrides.is_some()
            || self.global.is_some()
            || level.as_ref().is_some_and(|level| level.any);
        let mut absolute = PathBuf::new();
        for (name, kind) in names {
            let is_dir = kind == FileKind::Dir;
            if !published && !is_dir {
                published = true;
                if !subdirs.is_empty() {
                    publish(subdirs);
                }
            }
            if is_dir && name == ".git" {
                continue;
            }
            if matching {
                absolute.as_mut_os_string().clear();
                absolute.push(&here_absolute);
                absolute.push(&name);
            }
            if options.report_excluded
                && self.overrides.as_ref().is_some_and(|o| o.matched(&absolute, is_dir).is_ignore())
            {
                let entry = WalkEntry { path: here.join(&name), depth, kind, modified: None, excluded: true };
                if visit(entry, &Listed { dir: &dir, name: &name }) == Step::Stop {
                    return false;
                }
                continue;
            }
            if !kept(
                &absolute,
                &name,
                is_dir,
                options,
                self.overrides.as_ref(),
                level.as_deref().filter(|_| matching),
                self.global.as_ref(),
            ) {
                continue;
            }
            let target = here.join(&name);
            let modified = if self.all_times {
                dir.symlink_metadata(&name).ok().and_then(|m| m.modified().ok()).map(|t| t.into_std())
            } else {
                None
            };
            let descend = is_dir && depth < self.max_depth;
            let (path, target) = if descend { (target.clone(), Some(target)) } else { (target, None) };
            let entry = WalkEntry { path, depth, kind, modified, excluded: false };
            let step = visit(entry, &Listed { dir: &dir, name: &name });
            if step == Step::Stop {
                return false;
            }
            if let Some(target) = target
                && step == Step::Continue
            {
                // Opened when its turn comes, never through a link: an entry that was a
                // directory when listed and is a link by then is skipped.
                let absolute = here_absolute.join(&name);
                let source = Source::Beneath { parent: Arc::clone(&dir), name };
                subdirs.push(Pending { source, target, absolute, depth, level: level.clone() });
            }
        }
        true
    }
}

/// Walks the tree under `root` as ripgrep would (hidden files, ignore files, `--glob`
/// overrides), through directory handles: every subdirectory is opened relative to its parent's
/// handle with `O_NOFOLLOW`, so a directory swapped for a symbolic link while the walk runs is
/// skipped, never followed out of the tree. Entries come depth first, in name order.
pub(crate) fn walk(
    roots: &Roots,
    root: &Target,
    options: &WalkOptions,
    visit: &mut dyn FnMut(WalkEntry) -> bool,
) -> io::Result<()> {
    let (walker, first) = Walker::start(roots, root, options, true)?;
    let mut stack = vec![first];
    let mut subdirs = Vec::new();
    while let Some(pending) = stack.pop() {
        if !walker.read(pending, true, &mut |entry, _| Step::of(visit(entry)), &mut subdirs, &mut |_| {}) {
            break;
        }
        // Depth first, in name order.
        stack.extend(subdirs.drain(..).rev());
    }
    walker.compiled.check()
}

/// A walk uses at most this many threads (ripgrep's default is one per core, up to 12).
const MAX_THREADS: usize = 12;

/// The directories of a parallel walk waiting to be read, how many are being read, and how many
/// threads wait for one.
struct Queue {
    pending: Vec<Pending>,
    busy: usize,
    /// Threads asleep on the condition variable: it is notified only when one is (a notification
    /// is a system call whether or not anyone waits).
    waiting: usize,
    stopped: bool,
}

/// An entry reached through the handle of the directory that lists it.
pub(crate) struct Listed<'a> {
    /// The directory that lists it.
    pub(crate) dir: &'a Dir,
    /// Its name there (one plain name).
    pub(crate) name: &'a OsStr,
}

/// What a walk does after a visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Go on (into the entry, when it is a directory).
    Continue,
    /// Go on, but not into this directory.
    Prune,
    /// Stop the walk.
    Stop,
}

impl Step {
    fn of(go_on: bool) -> Step {
        if go_on { Step::Continue } else { Step::Stop }
    }
}

impl Found for Listed<'_> {
    #[cfg(target_os = "linux")]
    fn symlink_metadata(&self) -> io::Result<FileInfo> {
        use rustix::fs::{AtFlags, statat};
        let name = plain_name(self.name)?;
        Ok(stat_info(&statat(self.dir, name, AtFlags::SYMLINK_NOFOLLOW)?))
    }

    #[cfg(not(target_os = "linux"))]
    fn symlink_metadata(&self) -> io::Result<FileInfo> {
        self.dir.symlink_metadata(self.name).map(|m| info(&m))
    }

    #[cfg(target_os = "linux")]
    fn open(&self) -> io::Result<(Box<dyn Read + Send>, FileInfo)> {
        let (file, info) = open_entry(self.dir, self.name)?;
        Ok((Box::new(file), info))
    }

    #[cfg(not(target_os = "linux"))]
    fn open(&self) -> io::Result<(Box<dyn Read + Send>, FileInfo)> {
        let (file, info) = open_listed(self.dir, Path::new(self.name))?;
        Ok((Box::new(file), info))
    }
}

/// `name` when it is one plain name (not empty, no `/`, not `.` or `..`): what a listing holds,
/// and so what is opened beneath the listed directory without leaving it.
#[cfg(target_os = "linux")]
fn plain_name(name: &OsStr) -> io::Result<&OsStr> {
    let bytes = name.as_encoded_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not the name of an entry of the directory"));
    }
    Ok(name)
}

/// Opens the regular file `name` that a listing of `dir` found, as [`open_listed`] does, in one
/// `openat` beneath `dir` (`O_NOFOLLOW`, non-blocking, no controlling terminal) and one `fstat`:
/// a link is refused by the open, and anything but a regular file by the `fstat` before a byte
/// is read. (cap-std's open takes about ten times the instructions, to resolve a whole path.)
#[cfg(target_os = "linux")]
fn open_entry(dir: &Dir, name: &OsStr) -> io::Result<(std::fs::File, FileInfo)> {
    use rustix::fs::{Mode, OFlags, fstat, openat};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = openat(dir, plain_name(name)?, flags, Mode::empty())?;
    let info = stat_info(&fstat(&fd)?);
    if info.kind != FileKind::File {
        return Err(not_regular(info.kind));
    }
    Ok((std::fs::File::from(fd), info))
}

/// What a `stat` says of a file, as [`info`] reads it from cap-std's metadata.
#[cfg(target_os = "linux")]
fn stat_info(stat: &rustix::fs::Stat) -> FileInfo {
    use rustix::fs::FileType;
    use std::time::{Duration, SystemTime};
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Other,
    };
    #[allow(clippy::unnecessary_cast)]
    let (seconds, nanos) = (stat.st_mtime as i64, stat.st_mtime_nsec as u32);
    let modified = if seconds >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(seconds.unsigned_abs(), nanos))
    } else {
        SystemTime::UNIX_EPOCH
            .checked_sub(Duration::from_secs(seconds.unsigned_abs()))
            .and_then(|t| t.checked_add(Duration::from_nanos(u64::from(nanos))))
    };
    #[allow(clippy::unnecessary_cast)]
    FileInfo { kind, len: stat.st_size as u64, modified, mode: Some(stat.st_mode as u32) }
}

/// Walks as [`walk`] does, reading directories on one thread per core: `visit` is called from
/// any of them, in no particular order, and reads an entry's time or content through its
/// directory's handle (in the walk's threads, where the `stat` a newest-first sort needs costs
/// least).
pub(crate) fn walk_parallel(
    roots: &Roots,
    root: &Target,
    options: &WalkOptions,
    visit: &(dyn Fn(WalkEntry, &dyn Found) -> bool + Sync),
) -> io::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS);
    walk_listed(roots, root, options, threads, &|entry, listed| Step::of(visit(entry, listed)))
}

/// Walks as [`walk_parallel`] does, on `threads` threads, handing `visit` each entry with the
/// handle of the directory that lists it; `visit` may keep the walk out of a directory
/// ([`Step::Prune`]).
pub(crate) fn walk_listed(
    roots: &Roots,
    root: &Target,
    options: &WalkOptions,
    threads: usize,
    visit: &(dyn Fn(WalkEntry, &Listed<'_>) -> Step + Sync),
) -> io::Result<()> {
    let (walker, first) = Walker::start(roots, root, options, false)?;
    let threads = threads.clamp(1, MAX_THREADS);
    let queue = Mutex::new(Queue { pending: vec![first], busy: 0, waiting: 0, stopped: false });
    let ready = Condvar::new();
    let lock = || queue.lock().unwrap_or_else(PoisonError::into_inner);
    // Adds directories to the queue while their reader is still busy (so the walk cannot be
    // taken for over meanwhile).
    let publish = |subdirs: &mut Vec<Pending>| {
        let mut state = lock();
        let added = subdirs.len();
        state.pending.append(subdirs);
        let waiting = state.waiting;
        drop(state);
        match (waiting, added) {
            (0, _) => {}
            (_, 1) => ready.notify_one(),
            _ => ready.notify_all(),
        }
    };
    let work = || {
        let mut subdirs = Vec::new();
        let mut publish = publish;
        let mut state = lock();
        loop {
            if state.stopped {
                return;
            }
            let Some(pending) = state.pending.pop() else {
                if state.busy == 0 {
                    // Nothing waiting and nothing being read: the walk is over.
                    if state.waiting > 0 {
                        ready.notify_all();
                    }
                    return;
                }
                state.waiting += 1;
                state = ready.wait(state).unwrap_or_else(PoisonError::into_inner);
                state.waiting -= 1;
                continue;
            };
            state.busy += 1;
            drop(state);
            let go_on = walker.read(
                pending,
                false,
                &mut |entry, found| visit(entry, found),
                &mut subdirs,
                &mut publish,
            );
            state = lock();
            state.busy -= 1;
            state.stopped |= !go_on;
            if state.stopped {
                if state.waiting > 0 {
                    ready.notify_all();
                }
                return;
            }
            let added = subdirs.len();
            state.pending.append(&mut subdirs);
            match added {
                _ if state.waiting == 0 => {}
                0 if state.busy == 0 && state.pending.is_empty() => ready.notify_all(),
                0 => {}
                1 => ready.notify_one(),
                _ => ready.notify_all(),
            }
        }
    };
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(work);
            }
            work();
        });
    }
    walker.compiled.check()
}

/// Opens the subdirectory `name` of `parent` (a name its listing holds) for reading, without
/// following a link: one `openat` beneath `parent` with `O_NOFOLLOW | O_DIRECTORY`, refused when
/// `name` is now a link or anything but a directory. `name` is one component (no `/`, not `.` or
/// `..`), so the open cannot leave `parent`. The handle can be listed by [`list`] without opening
/// the directory again (cap-std opens directories with `O_PATH`, which cannot be read).
#[cfg(target_os = "linux")]
fn open_subdir(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
    use rustix::fs::{Mode, OFlags, openat};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(parent, plain_name(name)?, flags, Mode::empty())?;
    Ok(Dir::from_std_file(std::fs::File::from(fd)))
}

/// Opens the subdirectory `name` of `parent` without following a link.
#[cfg(not(target_os = "linux"))]
fn open_subdir(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
    parent.open_dir_nofollow(name)
}

/// The directory `dir` opened again for reading, when its handle cannot be read (cap-std opens
/// directories with `O_PATH`): once per walk, for its root.
#[cfg(target_os = "linux")]
fn listable(dir: Dir) -> io::Result<Dir> {
    use rustix::fs::{Mode, OFlags, openat};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(&dir, ".", flags, Mode::empty())?;
    Ok(Dir::from_std_file(std::fs::File::from(fd)))
}

/// The directory `dir`, which [`list`] reads as it is elsewhere.
#[cfg(not(target_os = "linux"))]
fn listable(dir: Dir) -> io::Result<Dir> {
    Ok(dir)
}

/// Bytes of directory entries read by one `getdents64` call.
#[cfg(target_os = "linux")]
const LIST_BUFFER_BYTES: usize = 32 * 1024;

/// The names and kinds of the entries of `dir`, read from the handle itself (opened by
/// [`open_subdir`] or [`listable`]): the directory is not opened again (cap-std's `entries()`
/// opens `.` beneath it: one `fcntl`, one `openat` and one `close` more per directory). The
/// handle's read position moves to the end: each directory of a walk is listed once. An entry whose kind the file system does not report is
/// asked with `lstat`, never following a link.
#[cfg(target_os = "linux")]
fn list(dir: &Dir) -> io::Result<Vec<(std::ffi::OsString, FileKind)>> {
    use rustix::fs::{FileType, RawDir};
    use std::os::unix::ffi::OsStrExt;

    let mut buffer = Vec::with_capacity(LIST_BUFFER_BYTES);
    let mut entries = RawDir::new(dir, buffer.spare_capacity_mut());
    let mut names = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = match entry {
            Ok(entry) => entry,
            // What was read before an error is kept, as a listing that stops early would be.
            Err(_) if !names.is_empty() => break,
            Err(error) => return Err(error.into()),
        };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = OsStr::from_bytes(name);
        let kind = match entry.file_type() {
            FileType::Directory => FileKind::Dir,
            FileType::RegularFile => FileKind::File,
            FileType::Symlink => FileKind::Symlink,
            FileType::Unknown => {
                dir.symlink_metadata(name).map_or(FileKind::Other, |m| kind_of(m.file_type()))
            }
            _ => FileKind::Other,
        };
        names.push((name.to_os_string(), kind));
    }
    Ok(names)
}

/// The names and kinds of the entries of `dir`.
#[cfg(not(target_os = "linux"))]
fn list(dir: &Dir) -> io::Result<Vec<(std::ffi::OsString, FileKind)>> {
    Ok(dir
        .entries()?
        .filter_map(Result::ok)
        .map(|entry| (entry.file_name(), entry.file_type().map_or(FileKind::Other, kind_of)))
        .collect())
}

fn kept(
    absolute: &Path,
    name: &OsStr,
    is_dir: bool,
    options: &WalkOptions,
    overrides: Option<&ignore::overrides::Override>,
    level: Option<&Level>,
    global: Option<&Gitignore>,
) -> bool {
    // Overrides (`--glob`) come first and decide alone when they match.
    if let Some(overrides) = overrides {
        match overrides.matched(absolute, is_dir) {
            Match::Ignore(_) => return false,
            Match::Whitelist(_) => return true,
            Match::None => {}
        }
    }
    let mut whitelisted = false;
    if let Some(level) = level {
        match level.matched(absolute, is_dir, global) {
            Match::Ignore(()) => return false,
            Match::Whitelist(()) => whitelisted = true,
            Match::None => {}
        }
    }
    let hidden = name.as_encoded_bytes().first() == Some(&b'.');
    whitelisted || options.hidden || !hidden
}

/// The rules of the directories above the walk's root, the innermost first. Inside the
/// workspace they are read through the root's handle; above it (a workspace inside a
/// repository) by their fixed names only, as ripgrep reads them.
fn ancestors(roots: &Roots, root: &Target, compiled: &Compiled) -> Option<Arc<Level>> {
    let mut chain: Vec<(Rules, PathBuf)> = Vec::new();
    let mut next = root.parent();
    while let Some(target) = next {
        if let Ok(dir) = roots.open_dir(&target) {
            let absolute = roots.absolute(&target);
            chain.push((read_rules(&dir, &absolute, compiled), absolute));
        }
        next = target.parent();
    }
    if root.scope() == Scope::Workspace {
        let mut next = roots.root_path().parent();
        while let Some(path) = next {
            if let Ok(dir) = Dir::open_ambient_dir(path, cap_std::ambient_authority()) {
                chain.push((read_rules(&dir, path, compiled), path.to_path_buf()));
            }
            next = path.parent();
        }
    }
    chain.into_iter().rev().fold(None, |parent, (rules, dir)| Some(Arc::new(Level::new(rules, dir, parent))))
}

/// The global git excludes file (`core.excludesFile`, or `$XDG_CONFIG_HOME/git/ignore`), found
/// as git and ripgrep find it, but read as ignore files are (the `ignore` crate's own reading
/// opens git's configuration and the excludes file blocking: a FIFO there, which a command could
/// make when the home directory is writable, would hang every walk).
fn global_rules() -> Option<Gitignore> {
    #[allow(deprecated)] // As the `ignore` crate finds the home directory.
    let home = std::env::home_dir();
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let config_home = var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    let cwd = std::env::current_dir().ok()?;
    global_rules_from(home.as_deref(), config_home.as_deref(), var("GIT_CONFIG_GLOBAL"), &cwd)
}

/// [`global_rules`] for this home and configuration directory; `global` stands for
/// `$GIT_CONFIG_GLOBAL`.
fn global_rules_from(
    home: Option<&Path>,
    config_home: Option<&Path>,
    global: Option<PathBuf>,
    cwd: &Path,
) -> Option<Gitignore> {
    // GIT_CONFIG_GLOBAL replaces both of the user's files; the system's comes last.
    let configs: Vec<PathBuf> = match global {
        Some(global) => vec![global],
        None => [home.map(|h| h.join(".gitconfig")), config_home.map(|c| c.join("git/config"))]
            .into_iter()
            .flatten()
            .collect(),
    };
    let system = std::env::var_os("GIT_CONFIG_SYSTEM")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from);
    let path = configs
        .iter()
        .chain([&system])
        .filter_map(|config| read_config_file(config))
        .find_map(|text| excludes_file(&text, home))
        .or_else(|| config_home.map(|c| c.join("git/ignore")))?;
    let text = read_config_file(&path)?;
    let mut builder = GitignoreBuilder::new(cwd);
    for line in text.lines() {
        let _ = builder.add_line(Some(path.clone()), line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

/// A configuration file of the user's (links followed: dotfiles are often links), when it is a
/// regular file: opened without blocking, read to at most [`MAX_IGNORE_BYTES`].
fn read_config_file(path: &Path) -> Option<String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY);
    }
    let file = options.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_IGNORE_BYTES as u64).read_to_string(&mut text).ok()?;
    Some(text)
}

/// `core.excludesFile` in the text of a git configuration file, `~` expanded (as the `ignore`
/// crate reads it: the first `excludesfile = PATH` line, whatever its section).
fn excludes_file(text: &str, home: Option<&Path>) -> Option<PathBuf> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        if !key.trim().eq_ignore_ascii_case("excludesfile") {
            return None;
        }
        let value = value.trim().trim_matches('"').trim();
        if value.is_empty() || value.contains(char::is_whitespace) {
            return None;
        }
        Some(match (value.strip_prefix('~'), home) {
            (Some(rest), Some(home)) => PathBuf::from(format!("{}{rest}", home.display())),
            _ => PathBuf::from(value),
        })
    })
}

/// Reads the ignore files of the directory `dir` (at `absolute`).
fn read_rules(dir: &Dir, absolute: &Path, compiled: &Compiled) -> Rules {
    let has_git = dir.symlink_metadata(".git").is_ok();
    let read = |name: &str| compiled.rules_from(dir, absolute, name);
    Rules {
        custom: read(".rgignore"),
        ignore: read(".ignore"),
        git: read(".gitignore"),
        exclude: if has_git { read(".git/info/exclude") } else { None },
        has_git,
    }
}

/// Reads the ignore files of the directory `dir` (at `absolute`) that its listing `names` holds:
/// no file system call for the names it lacks.
fn listed_rules(
    dir: &Dir,
    absolute: &Path,
    names: &[(std::ffi::OsString, FileKind)],
    compiled: &Compiled,
) -> Rules {
    let listed = |wanted: &str| names.iter().any(|(name, _)| name == wanted);
    let has_git = listed(".git");
    let read = |name: &str| if listed(name) { compiled.rules_from(dir, absolute, name) } else { None };
    Rules {
        custom: read(".rgignore"),
        ignore: read(".ignore"),
        git: read(".gitignore"),
        exclude: if has_git { compiled.rules_from(dir, absolute, ".git/info/exclude") } else { None },
        has_git,
    }
}

/// The ignore files one walk has compiled, by their text: a matcher is rooted at `.` (it is asked
/// about paths relative to the directory of the file), so the many copies of one `.gitignore`
/// in a tree (`/target` and the like) are compiled once. Compiling is most of what an ignore file
/// costs: a regex set, its automata built eagerly; at most [`MAX_IGNORE_BYTES`] of distinct text
/// are.
#[derive(Default)]
struct Compiled {
    by_text: Mutex<HashMap<String, Option<Arc<Gitignore>>>>,
    /// Bytes of distinct text compiled, or refused for want of room.
    spent: AtomicUsize,
    /// The first ignore file there was no room for: the walk stops, and ends with an error.
    over: Mutex<Option<PathBuf>>,
}

impl Compiled {
    /// The rules of the ignore file `name` in `dir` (at `absolute`), when it has any.
    fn rules_from(&self, dir: &Dir, absolute: &Path, name: &str) -> Option<Arc<Gitignore>> {
        let file = open_regular(dir, Path::new(name)).ok()?;
        let mut bytes = Vec::new();
        file.take(MAX_IGNORE_BYTES as u64 + 1).read_to_end(&mut bytes).ok()?;
        let past =
            |len: usize| self.spent.fetch_add(len, Ordering::Relaxed).saturating_add(len) > MAX_IGNORE_BYTES;
        if bytes.len() > MAX_IGNORE_BYTES || past(0) {
            lock(&self.over).get_or_insert_with(|| absolute.join(name));
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        if let Some(known) = lock(&self.by_text).get(&text) {
            return known.clone();
        }
        if past(text.len()) {
            lock(&self.over).get_or_insert_with(|| absolute.join(name));
            return None;
        }
        // Compiled outside the lock: another thread may compile the same text meanwhile, and
        // both results are the same.
        let mut builder = GitignoreBuilder::new(".");
        let source = absolute.join(name);
        for line in text.lines() {
            // A malformed line is skipped, as ripgrep does.
            let _ = builder.add_line(Some(source.clone()), line);
        }
        let rules = builder.build().ok().filter(|g| !g.is_empty()).map(Arc::new);
        lock(&self.by_text).insert(text, rules.clone());
        rules
    }

    /// Whether an ignore file found no room: the walk stops.
    fn exceeded(&self) -> bool {
        self.spent.load(Ordering::Relaxed) > MAX_IGNORE_BYTES || lock(&self.over).is_some()
    }

    /// The walk's end: an error naming the first ignore file there was no room for.
    fn check(&self) -> io::Result<()> {
        match lock(&self.over).as_ref() {
            None => Ok(()),
            Some(file) => Err(io::Error::other(format!(
                "the ignore files here hold more rules than one walk of the tree reads ({} KiB of \
                 distinct rules; {} went past that): shorten or remove that file (`rg` and `find` \
                 through `bash` still search and list)",
                MAX_IGNORE_BYTES / 1024,
                file.display()
            ))),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::fs;
    use std::sync::Mutex;

    use super::*;
    use crate::testing::TempDir;

    /// A tree with ignore files at several levels, a repository nested in it, hidden entries
    /// and a link, and enough directories for several threads to share the walk.
    fn tree() -> TempDir {
        let dir = TempDir::new();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write(".gitignore", "*.log\nbuild/\n");
        write("a/.ignore", "!keep.log\nsecret*\n");
        write("a/keep.log", "x");
        write("a/drop.log", "x");
        write("a/secret.txt", "x");
        write("a/b/.rgignore", "*.rs\n");
        write("a/b/c.rs", "x");
        write("a/b/c.txt", "x");
        write("build/out.txt", "x");
        write("nested/.git/HEAD", "x");
        write("nested/.gitignore", "only-here.txt\n");
        write("nested/x.log", "x");
        write("nested/only-here.txt", "x");
        write(".hidden/h.txt", "x");
        for i in 0..40 {
            write(&format!("many/d{i}/f{i}.txt"), "x");
            write(&format!("many/d{i}/skip.log"), "x");
        }
        std::os::unix::fs::symlink("a", dir.path().join("link")).unwrap();
        dir
    }

    fn sequential(roots: &Roots, options: &WalkOptions) -> BTreeSet<(PathBuf, bool)> {
        let mut seen = BTreeSet::new();
        walk(roots, &Target::root(), options, &mut |entry| {
            seen.insert((entry.path.path().to_path_buf(), entry.excluded));
            true
        })
        .unwrap();
        seen
    }

    fn parallel(roots: &Roots, options: &WalkOptions) -> BTreeSet<(PathBuf, bool)> {
        let seen = Mutex::new(BTreeSet::new());
        walk_parallel(roots, &Target::root(), options, &|entry, _| {
            assert_eq!(entry.modified, None);
            seen.lock().unwrap().insert((entry.path.path().to_path_buf(), entry.excluded));
            true
        })
        .unwrap();
        seen.into_inner().unwrap()
    }

    #[test]
    fn the_parallel_walk_finds_what_the_sequential_walk_finds() {
        let dir = tree();
        let ops = Roots::open(dir.path()).unwrap();
        let defaults = WalkOptions::default();
        let found = sequential(&ops, &defaults);
        let names: BTreeSet<&str> = found.iter().filter_map(|(p, _)| p.to_str()).collect();
        for kept in ["a/keep.log", "a/b/c.txt", "nested/x.log", "link", "many/d39/f39.txt"] {
            assert!(names.contains(kept), "{kept} missing from {names:?}");
        }
        for left in ["a/drop.log", "a/secret.txt", "a/b/c.rs", "build", "nested/only-here.txt", ".hidden"] {
            assert!(!names.contains(left), "{left} in {names:?}");
        }
        for options in [
            defaults.clone(),
            WalkOptions { hidden: true, ..defaults.clone() },
            WalkOptions { respect_ignore_files: false, ..defaults.clone() },
            WalkOptions { globs: vec!["*.txt".into(), "!many/d1*/**".into()], ..defaults.clone() },
            WalkOptions { globs: vec!["*.log".into()], report_excluded: true, ..defaults.clone() },
            WalkOptions { max_depth: Some(2), ..defaults.clone() },
        ] {
            assert_eq!(parallel(&ops, &options), sequential(&ops, &options), "{options:?}");
        }
    }

    /// A command can write ignore files anywhere in the workspace; compiling them is what they
    /// cost the host (seconds and hundreds of MB per MiB of costly rules), so a walk compiles at
    /// most `MAX_IGNORE_BYTES` of distinct rules, and past that ends with an error naming the
    /// file, both ways. Copies of one file count once.
    #[test]
    fn a_walk_compiles_a_bounded_amount_of_ignore_rules() {
        let costly = |seed: usize, bytes: usize| {
            let mut text = String::new();
            for i in 0.. {
                if text.len() >= bytes {
                    break;
                }
                text.push_str(&format!("p{seed}_{i}*q\n"));
            }
            text
        };
        let dir = TempDir::new();
        for d in 0..200 {
            let sub = dir.path().join(format!("same/d{d}"));
            fs::create_dir_all(&sub).unwrap();
            fs::write(sub.join(".gitignore"), costly(0, 16 * 1024)).unwrap();
            fs::write(sub.join("f.txt"), "x").unwrap();
        }
        let roots = Roots::open(dir.path()).unwrap();
        let defaults = WalkOptions::default();
        assert_eq!(sequential(&roots, &defaults).len(), 401, "200 copies of one file are compiled once");
        assert_eq!(parallel(&roots, &defaults).len(), 401);

        for d in 0..40 {
            let sub = dir.path().join(format!("distinct/d{d}"));
            fs::create_dir_all(&sub).unwrap();
            fs::write(sub.join(".ignore"), costly(d + 1, 16 * 1024)).unwrap();
        }
        let over = |result: io::Result<()>| {
            let message = result.expect_err("the walk went past the bound").to_string();
            assert!(message.starts_with("the ignore files here hold more rules than one walk"), "{message}");
            assert!(message.contains("/distinct/d") && message.contains("/.ignore went past"), "{message}");
        };
        over(walk(&roots, &Target::root(), &defaults, &mut |_| true));
        over(walk_parallel(&roots, &Target::root(), &defaults, &|_, _| true));
        // One file past the bound alone, found above the walk's root too.
        fs::remove_dir_all(dir.path().join("distinct")).unwrap();
        fs::write(dir.path().join(".rgignore"), costly(99, MAX_IGNORE_BYTES + 1)).unwrap();
        over_root(walk(&roots, &Target::root(), &defaults, &mut |_| true));
        let below = Target::root().join(Path::new("same"));
        over_root(walk(&roots, &below, &defaults, &mut |_| true));
        // Without ignore files, nothing is compiled.
        let all = WalkOptions { respect_ignore_files: false, ..defaults };
        assert!(walk(&roots, &Target::root(), &all, &mut |_| true).is_ok());

        fn over_root(result: io::Result<()>) {
            let message = result.expect_err("the walk went past the bound").to_string();
            assert!(message.contains("/.rgignore went past"), "{message}");
        }
    }

    #[test]
    fn the_parallel_walk_stops_when_asked() {
        let dir = tree();
        let ops = Roots::open(dir.path()).unwrap();
        let seen = std::sync::atomic::AtomicUsize::new(0);
        walk_parallel(&ops, &Target::root(), &WalkOptions::default(), &|_, _| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 4
        })
        .unwrap();
        // Each thread may finish the entry it holds, no more.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
        assert!(seen.into_inner() <= 5 + threads);
    }

    /// Swaps the directory `sub` for a link to `outside` when the walk reports it: after the
    /// listing that found it, before it is opened.
    fn swap_on_visit(dir: &Path, outside: &Path, entry: &WalkEntry) {
        if entry.path.path() == Path::new("sub") {
            fs::rename(dir.join("sub"), dir.join("sub-moved")).unwrap();
            std::os::unix::fs::symlink(outside, dir.join("sub")).unwrap();
        }
    }

    #[test]
    fn a_directory_swapped_for_a_link_between_listing_and_opening_is_not_followed() {
        for parallel in [false, true] {
            let dir = TempDir::new();
            let outside = TempDir::new();
            fs::write(outside.path().join("escaped.txt"), "x").unwrap();
            fs::create_dir(dir.path().join("sub")).unwrap();
            fs::write(dir.path().join("sub/inside.txt"), "x").unwrap();
            let ops = Roots::open(dir.path()).unwrap();
            let seen = Mutex::new(Vec::new());
            let record = |entry: WalkEntry| {
                swap_on_visit(dir.path(), outside.path(), &entry);
                seen.lock().unwrap().push(entry.path.path().to_path_buf());
                true
            };
            if parallel {
                walk_parallel(&ops, &Target::root(), &WalkOptions::default(), &|entry, _| record(entry))
                    .unwrap();
            } else {
                walk(&ops, &Target::root(), &WalkOptions::default(), &mut |entry| record(entry)).unwrap();
            }
            let seen = seen.into_inner().unwrap();
            assert!(seen.contains(&PathBuf::from("sub")), "{seen:?}");
            assert!(
                !seen.iter().any(|path| path.starts_with("sub") && path != Path::new("sub")),
                "the walk went through the link (parallel: {parallel}): {seen:?}"
            );
        }
    }

    #[test]
    fn a_listing_reports_every_entry_and_its_kind() {
        let dir = TempDir::new();
        for i in 0..3000 {
            // Enough names that one read of the directory does not hold them all.
            fs::write(dir.path().join(format!("file-with-a-long-name-{i:05}")), "").unwrap();
        }
        fs::create_dir(dir.path().join("d")).unwrap();
        std::os::unix::fs::symlink("d", dir.path().join("l")).unwrap();
        nix::unistd::mkfifo(&dir.path().join("p"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let handle =
            listable(Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap()).unwrap();
        let names = list(&handle).unwrap();
        assert_eq!(names.len(), 3003);
        let kind = |wanted: &str| names.iter().find(|(name, _)| name == wanted).map(|(_, kind)| *kind);
        assert_eq!(kind("d"), Some(FileKind::Dir));
        assert_eq!(kind("l"), Some(FileKind::Symlink));
        assert_eq!(kind("p"), Some(FileKind::Other));
        assert_eq!(kind("file-with-a-long-name-02999"), Some(FileKind::File));
        assert!(kind(".").is_none() && kind("..").is_none());
    }

    #[test]
    fn a_subdirectory_is_opened_beneath_its_parent_and_never_through_a_link() {
        let dir = TempDir::new();
        let outside = TempDir::new();
        fs::write(outside.path().join("escaped.txt"), "x").unwrap();
        fs::create_dir_all(dir.path().join("d/e")).unwrap();
        fs::write(dir.path().join("file"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("d", dir.path().join("in")).unwrap();
        let handle = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let d = open_subdir(&handle, OsStr::new("d")).unwrap();
        let names: Vec<_> = list(&d).unwrap().into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["e"]);
        for refused in ["out", "in", "file", "missing", "..", ".", "", "d/e", "../d"] {
            assert!(open_subdir(&handle, OsStr::new(refused)).is_err(), "{refused} was opened");
        }
    }

    /// The global excludes file and git's configuration are read without blocking: a FIFO at
    /// either (a command could make one where the home directory is writable) is skipped.
    #[cfg(unix)]
    #[test]
    fn the_global_excludes_file_is_found_and_a_fifo_there_is_skipped() {
        let home = TempDir::new();
        let config = home.path().join(".config");
        fs::create_dir_all(config.join("git")).unwrap();
        fs::write(home.path().join(".gitconfig"), "[core]\n\texcludesFile = \"~/my-ignore\"\n").unwrap();
        fs::write(home.path().join("my-ignore"), "*.bak\n").unwrap();
        let cwd = home.path();
        let global = global_rules_from(Some(home.path()), Some(&config), None, cwd).unwrap();
        assert!(global.matched(home.path().join("x.bak"), false).is_ignore());
        assert!(!global.matched(home.path().join("x.rs"), false).is_ignore());

        let fifo = |path: &Path| {
            let _ = fs::remove_file(path);
            nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        };
        fifo(&home.path().join("my-ignore"));
        assert!(global_rules_from(Some(home.path()), Some(&config), None, cwd).is_none());
        fifo(&home.path().join(".gitconfig"));
        fifo(&config.join("git/config"));
        fifo(&config.join("git/ignore"));
        assert!(global_rules_from(Some(home.path()), Some(&config), None, cwd).is_none());
        let global = home.path().join("global");
        fs::write(&global, "[core]\nexcludesfile=/nonexistent\n").unwrap();
        assert!(global_rules_from(Some(home.path()), Some(&config), Some(global), cwd).is_none());
    }

    #[test]
    fn copies_of_one_ignore_file_are_compiled_once_and_each_applies_to_its_own_directory() {
        let dir = TempDir::new();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        // Anchored and unanchored patterns, in three copies of one text and one other.
        for top in ["a", "b", "c/d"] {
            write(&format!("{top}/.gitignore"), "/top.txt\nsub/x.txt\n*.log\n");
            for file in ["top.txt", "sub/x.txt", "deeper/top.txt", "deeper/sub/x.txt", "e.log", "keep.txt"] {
                write(&format!("{top}/{file}"), "x");
            }
        }
        write("c/.gitignore", "!d/e.log\n");
        write("top.txt", "x");
        let ops = Roots::open(dir.path()).unwrap();
        let options = WalkOptions::default();
        let (walker, first) = Walker::start(&ops, &Target::root(), &options, false).unwrap();
        let mut found = BTreeSet::new();
        let (mut stack, mut subdirs) = (vec![first], Vec::new());
        while let Some(pending) = stack.pop() {
            walker.read(
                pending,
                true,
                &mut |entry: WalkEntry, _: &Listed<'_>| {
                    if entry.kind == FileKind::File {
                        found.insert(entry.path.path().to_str().unwrap().to_owned());
                    }
                    Step::Continue
                },
                &mut subdirs,
                &mut |_| {},
            );
            stack.append(&mut subdirs);
        }
        let expected: BTreeSet<String> = ["top.txt", "a/deeper/top.txt", "a/deeper/sub/x.txt", "a/keep.txt"]
            .iter()
            .flat_map(|p| {
                let p = p.strip_prefix("a/").map(str::to_owned);
                match p {
                    Some(rest) => vec![format!("a/{rest}"), format!("b/{rest}"), format!("c/d/{rest}")],
                    None => vec!["top.txt".to_owned()],
                }
            })
            // The innermost ignore file decides: `c/d/.gitignore` ignores what `c/.gitignore` keeps.
            .collect();
        assert_eq!(found, expected);
        assert_eq!(lock(&walker.compiled.by_text).len(), 2, "one matcher per distinct text");
        // The same as the sequential walk of the whole tree.
        let whole: BTreeSet<String> = sequential(&ops, &options)
            .into_iter()
            .filter_map(|(p, _)| p.to_str().map(str::to_owned))
            .collect();
        assert!(found.is_subset(&whole), "{found:?} {whole:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_entry_is_opened_beneath_its_directory_never_through_a_link_nor_blocking() {
        let dir = tree();
        let handle =
            listable(Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap()).unwrap();
        let (_, info) = open_entry(&handle, OsStr::new(".gitignore")).unwrap();
        assert_eq!((info.kind, info.len), (FileKind::File, 13));
        let modified = fs::metadata(dir.path().join(".gitignore")).unwrap().modified().unwrap();
        assert_eq!(info.modified, Some(modified));
        let listed = Listed { dir: &handle, name: OsStr::new(".gitignore") };
        assert_eq!(listed.symlink_metadata().unwrap().modified, Some(modified));
        std::os::unix::fs::symlink(".gitignore", dir.path().join("to-file")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("out")).unwrap();
        for link in ["to-file", "out"] {
            assert!(open_entry(&handle, OsStr::new(link)).is_err(), "{link} was followed");
            let listed = Listed { dir: &handle, name: OsStr::new(link) };
            assert_eq!(listed.symlink_metadata().unwrap().kind, FileKind::Symlink);
        }
        nix::unistd::mkfifo(&dir.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = open_entry(&handle, OsStr::new("fifo")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = open_entry(&handle, OsStr::new("a")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
        for refused in ["a/keep.log", "..", ".", "", "../etc/hostname"] {
            let err = open_entry(&handle, OsStr::new(refused)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{refused}");
        }
    }

    #[test]
    fn a_listed_file_is_opened_through_its_directory_without_following_links() {
        use crate::fs::roots::open_listed;
        let dir = tree();
        let handle = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let (_, info) = open_listed(&handle, Path::new("a/keep.log")).unwrap();
        assert_eq!((info.kind, info.len), (FileKind::File, 1));
        assert!(info.modified.is_some());
        std::os::unix::fs::symlink(".gitignore", dir.path().join("to-file")).unwrap();
        assert!(open_listed(&handle, Path::new("to-file")).is_err());
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("out")).unwrap();
        assert!(open_listed(&handle, Path::new("out")).is_err());
        nix::unistd::mkfifo(&dir.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = open_listed(&handle, Path::new("fifo")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = open_listed(&handle, Path::new("a")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
    }
}
