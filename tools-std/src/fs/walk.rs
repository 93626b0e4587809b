//! The local walk: ripgrep's ignore rules over directory handles, each directory opened beneath its parent without following links.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

#[cfg(not(target_os = "linux"))]
use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::fs::ops::{FileInfo, FileKind, Found, Scope, Target, WalkEntry, WalkOptions, overrides};
use crate::fs::roots::{Roots, info, kind_of, open_listed, open_regular};

/// Ignore files larger than this are not read (no real one comes close).
const MAX_IGNORE_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// A walk never descends deeper than this, whatever `max_depth` says.
const MAX_DEPTH: usize = 512;

/// The ignore rules of one directory.
#[derive(Default)]
struct Rules {
    /// `.rgignore`, then `.ignore`, then `.gitignore`, then `.git/info/exclude`: ripgrep's order
    /// of precedence within one directory.
    custom: Option<Gitignore>,
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds `.git`: git rules from above it do not apply below it.
    has_git: bool,
}

/// A chain of directories' rules, the innermost first.
struct Level {
    rules: Rules,
    parent: Option<Arc<Level>>,
}

impl Level {
    /// The verdict of the ignore files on `path`: the innermost directory with an opinion on
    /// each kind of file wins, and the kinds rank as in [`Rules`].
    fn matched(&self, path: &Path, is_dir: bool, global: Option<&Gitignore>) -> Match<()> {
        let (mut custom, mut ignore, mut git, mut exclude) =
            (Match::None, Match::None, Match::None, Match::None);
        let mut saw_git = false;
        let mut level = Some(self);
        while let Some(current) = level {
            let rules = &current.rules;
            fill(&mut custom, rules.custom.as_ref(), path, is_dir);
            fill(&mut ignore, rules.ignore.as_ref(), path, is_dir);
            if !saw_git {
                fill(&mut git, rules.git.as_ref(), path, is_dir);
                fill(&mut exclude, rules.exclude.as_ref(), path, is_dir);
            }
            saw_git |= rules.has_git;
            level = current.parent.as_deref();
        }
        let mut global_match = Match::None;
        fill(&mut global_match, global, path, is_dir);
        custom.or(ignore).or(git).or(exclude).or(global_match)
    }
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

/// One directory waiting to be read.
struct Pending {
    dir: Dir,
    target: Target,
    /// Its absolute path, for matching ignore rules (never for opening anything).
    absolute: PathBuf,
    depth: usize,
    level: Option<Arc<Level>>,
}

/// What every directory of one walk shares: the options, the `--glob` overrides and the global
/// git excludes.
struct Walker<'a> {
    options: &'a WalkOptions,
    overrides: Option<ignore::overrides::Override>,
    global: Option<Gitignore>,
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
        let (level, global) = if options.respect_ignore_files {
            (ancestors(roots, root), global_rules())
        } else {
            (None, None)
        };
        let max_depth = options.max_depth.unwrap_or(MAX_DEPTH).min(MAX_DEPTH);
        let walker = Walker { options, overrides, global, max_depth, all_times };
        Ok((walker, Pending { dir, target: root.clone(), absolute: absolute_root, depth: 0, level }))
    }

    /// Reads one directory: `visit` sees its entries (in name order when `sorted`), and the
    /// subdirectories to descend into are added to `subdirs`. Returns `false` once `visit` did.
    fn read(
        &self,
        pending: Pending,
        sorted: bool,
        visit: &mut dyn FnMut(WalkEntry, &dyn Found) -> bool,
        subdirs: &mut Vec<Pending>,
    ) -> bool {
        let options = self.options;
        let Ok(mut names) = list(&pending.dir) else { return true };
        if sorted {
            names.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let level = if options.respect_ignore_files {
            let rules = listed_rules(&pending.dir, &pending.absolute, &names);
            Some(Arc::new(Level { rules, parent: pending.level.clone() }))
        } else {
            None
        };
        let depth = pending.depth + 1;
        for (name, kind) in names {
            let is_dir = kind == FileKind::Dir;
            if is_dir && name == ".git" {
                continue;
            }
            let absolute = pending.absolute.join(&name);
            if options.report_excluded
                && self.overrides.as_ref().is_some_and(|o| o.matched(&absolute, is_dir).is_ignore())
            {
                let entry = WalkEntry {
                    path: pending.target.join(&name),
                    depth,
                    kind,
                    modified: None,
                    excluded: true,
                };
                if !visit(entry, &Listed { dir: &pending.dir, name: &name }) {
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
                level.as_deref(),
                self.global.as_ref(),
            ) {
                continue;
            }
            let target = pending.target.join(&name);
            let modified = if self.all_times {
                pending.dir.symlink_metadata(&name).ok().and_then(|m| m.modified().ok()).map(|t| t.into_std())
            } else {
                None
            };
            let entry = WalkEntry { path: target.clone(), depth, kind, modified, excluded: false };
            if !visit(entry, &Listed { dir: &pending.dir, name: &name }) {
                return false;
            }
            if is_dir && depth < self.max_depth {
                // Never follow a link here: an entry that was a directory when listed and is a
                // link now is skipped.
                if let Ok(dir) = open_subdir(&pending.dir, &name) {
                    subdirs.push(Pending { dir, target, absolute, depth, level: level.clone() });
                }
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
        if !walker.read(pending, true, &mut |entry, _| visit(entry), &mut subdirs) {
            return Ok(());
        }
        // Depth first, in name order.
        stack.extend(subdirs.drain(..).rev());
    }
    Ok(())
}

/// A walk uses at most this many threads (ripgrep's default is one per core, up to 12).
const MAX_THREADS: usize = 12;

/// The directories of a parallel walk waiting to be read, and how many are being read.
struct Queue {
    pending: Vec<Pending>,
    busy: usize,
    stopped: bool,
}

/// An entry reached through the handle of the directory that lists it.
struct Listed<'a> {
    dir: &'a Dir,
    name: &'a OsStr,
}

impl Found for Listed<'_> {
    fn symlink_metadata(&self) -> io::Result<FileInfo> {
        self.dir.symlink_metadata(self.name).map(|m| info(&m))
    }

    fn open(&self) -> io::Result<(Box<dyn Read + Send>, FileInfo)> {
        let (file, info) = open_listed(self.dir, Path::new(self.name))?;
        Ok((Box::new(file), info))
    }
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
    let (walker, first) = Walker::start(roots, root, options, false)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS);
    let queue = Mutex::new(Queue { pending: vec![first], busy: 0, stopped: false });
    let ready = Condvar::new();
    let lock = || queue.lock().unwrap_or_else(PoisonError::into_inner);
    let work = || {
        let mut subdirs = Vec::new();
        let mut state = lock();
        loop {
            if state.stopped {
                return;
            }
            let Some(pending) = state.pending.pop() else {
                if state.busy == 0 {
                    // Nothing waiting and nothing being read: the walk is over.
                    ready.notify_all();
                    return;
                }
                state = ready.wait(state).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            state.busy += 1;
            drop(state);
            let go_on = walker.read(pending, false, &mut |entry, found| visit(entry, found), &mut subdirs);
            state = lock();
            state.busy -= 1;
            state.stopped |= !go_on;
            if state.stopped {
                ready.notify_all();
                return;
            }
            let added = subdirs.len();
            state.pending.append(&mut subdirs);
            match added {
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
    Ok(())
}

/// Opens the subdirectory `name` of `parent` (a name its listing holds) for reading, without
/// following a link: one `openat` beneath `parent` with `O_NOFOLLOW | O_DIRECTORY`, refused when
/// `name` is now a link or anything but a directory. `name` is one component (no `/`, not `.` or
/// `..`), so the open cannot leave `parent`. The handle can be listed by [`list`] without opening
/// the directory again (cap-std opens directories with `O_PATH`, which cannot be read).
#[cfg(target_os = "linux")]
fn open_subdir(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
    use rustix::fs::{Mode, OFlags, openat};
    let bytes = name.as_encoded_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not the name of an entry of the directory"));
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(parent, name, flags, Mode::empty())?;
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
fn ancestors(roots: &Roots, root: &Target) -> Option<Arc<Level>> {
    let mut chain: Vec<Rules> = Vec::new();
    let mut next = root.parent();
    while let Some(target) = next {
        if let Ok(dir) = roots.open_dir(&target) {
            chain.push(read_rules(&dir, &roots.absolute(&target)));
        }
        next = target.parent();
    }
    if root.scope() == Scope::Workspace {
        let mut next = roots.root_path().parent();
        while let Some(path) = next {
            if let Ok(dir) = Dir::open_ambient_dir(path, cap_std::ambient_authority()) {
                chain.push(read_rules(&dir, path));
            }
            next = path.parent();
        }
    }
    chain.into_iter().rev().fold(None, |parent, rules| Some(Arc::new(Level { rules, parent })))
}

/// The global git excludes file (`core.excludesFile`, or `$XDG_CONFIG_HOME/git/ignore`).
fn global_rules() -> Option<Gitignore> {
    let (global, _) = Gitignore::global();
    (!global.is_empty()).then_some(global)
}

/// Reads the ignore files of the directory `dir` (at `absolute`).
fn read_rules(dir: &Dir, absolute: &Path) -> Rules {
    let has_git = dir.symlink_metadata(".git").is_ok();
    Rules {
        custom: rules_from(dir, absolute, ".rgignore"),
        ignore: rules_from(dir, absolute, ".ignore"),
        git: rules_from(dir, absolute, ".gitignore"),
        exclude: if has_git { rules_from(dir, absolute, ".git/info/exclude") } else { None },
        has_git,
    }
}

/// Reads the ignore files of the directory `dir` (at `absolute`) that its listing `names` holds:
/// no file system call for the names it lacks.
fn listed_rules(dir: &Dir, absolute: &Path, names: &[(std::ffi::OsString, FileKind)]) -> Rules {
    let listed = |wanted: &str| names.iter().any(|(name, _)| name == wanted);
    let has_git = listed(".git");
    let read = |name: &str| if listed(name) { rules_from(dir, absolute, name) } else { None };
    Rules {
        custom: read(".rgignore"),
        ignore: read(".ignore"),
        git: read(".gitignore"),
        exclude: if has_git { rules_from(dir, absolute, ".git/info/exclude") } else { None },
        has_git,
    }
}

fn rules_from(dir: &Dir, absolute: &Path, name: &str) -> Option<Gitignore> {
    let file = open_regular(dir, Path::new(name)).ok()?;
    let mut text = String::new();
    file.take(MAX_IGNORE_FILE_BYTES).read_to_string(&mut text).ok()?;
    let mut builder = GitignoreBuilder::new(absolute);
    let source = absolute.join(name);
    for line in text.lines() {
        // A malformed line is skipped, as ripgrep does.
        let _ = builder.add_line(Some(source.clone()), line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
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

    #[test]
    fn a_listed_file_is_opened_through_its_directory_without_following_links() {
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
