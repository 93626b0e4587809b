//! `LocalOperations`: the local file system, every workspace path resolved by the kernel beneath the root's directory handle.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};
use tool_runtime::environment::EnvFilter;

use crate::editing::text_file::MAX_EDIT_BYTES;
use crate::fs::ops::{
    ContentHash, DirEntry, FileChanged, FileInfo, FileKind, Operations, Precondition, ShellProcess,
    ShellRequest, Target, WalkEntry, WalkOptions, Written,
};
use crate::fs::roots::{Roots, escape, info, kind_of, not_special, open_listed, open_regular};
use crate::fs::stop;

/// The local file system and local processes.
///
/// The workspace root is opened once as a directory handle; every [`Scope::Workspace`] path is
/// resolved relative to it with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (through
/// `cap-std`, which falls back to a careful component-by-component resolution where `openat2`
/// is missing). A symbolic link or a `..` that would leave the root, even one that appears
/// while a tool works, makes the operation fail; nothing outside is opened. Paths outside the
/// root ([`Scope::Outside`], only made after the permission hook granted them) are resolved
/// from `/`. A change (a write, a new directory, a removal) opens the directories of its path,
/// which the workspace resolved, one name at a time without following any link, so a directory
/// swapped for a link since fails it rather than move it elsewhere inside the root.
///
/// [`Scope::Workspace`]: crate::fs::ops::Scope::Workspace
/// [`Scope::Outside`]: crate::fs::ops::Scope::Outside
#[derive(Clone)]
pub struct LocalOperations {
    roots: Roots,
    environment: Arc<EnvFilter>,
}

impl std::fmt::Debug for LocalOperations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalOperations").field("root", &self.roots.root_path()).finish_non_exhaustive()
    }
}

impl LocalOperations {
    /// Refuses to replace or remove `path` while a sandboxed command of this process may still
    /// run with a mount made on it ([`tool_sandbox::is_held`]): the mount would go with the
    /// name, and the command could then write (or read) what it kept it from.
    fn not_held(&self, path: &Target) -> io::Result<()> {
        let absolute = self.roots.absolute(path);
        if !tool_sandbox::is_held(&absolute) {
            return Ok(());
        }
        // Held by jobs that may have ended since: let go of those first.
        crate::shell::process::forget_ended_jobs();
        if !tool_sandbox::is_held(&absolute) {
            return Ok(());
        }
        Err(io::Error::new(io::ErrorKind::ResourceBusy, HELD))
    }

    /// Opens the directory `root` as the workspace root.
    pub fn open(root: impl AsRef<Path>) -> io::Result<LocalOperations> {
        Ok(LocalOperations { roots: Roots::open(root.as_ref())?, environment: Arc::new(EnvFilter::base()) })
    }

    /// Sets which of this process's environment variables commands inherit (default:
    /// [`EnvFilter::base`], so that API keys in the agent's environment do not reach them).
    #[must_use]
    pub fn environment(mut self, filter: EnvFilter) -> Self {
        self.environment = Arc::new(filter);
        self
    }
}

impl Operations for LocalOperations {
    fn metadata(&self, path: &Target) -> io::Result<FileInfo> {
        let (dir, path) = self.roots.anchor(path)?;
        dir.metadata(path).map(|m| info(&m)).map_err(escape)
    }

    fn symlink_metadata(&self, path: &Target) -> io::Result<FileInfo> {
        let (dir, path) = self.roots.anchor(path)?;
        dir.symlink_metadata(path).map(|m| info(&m)).map_err(escape)
    }

    fn read_link(&self, path: &Target) -> io::Result<PathBuf> {
        let (dir, path) = self.roots.anchor(path)?;
        // `read_link_contents` returns the link as stored, absolute targets included; whether
        // following it stays inside is the caller's (and the kernel's) business.
        dir.read_link_contents(path).map_err(escape)
    }

    fn open(&self, path: &Target) -> io::Result<Box<dyn Read + Send>> {
        // A resolved path: no link in it is followed again, so a name a command swapped for a
        // link since (to a file a rule refuses) is not read through; the read fails instead.
        let Some(name) = path.file_name() else {
            let (dir, path) = self.roots.anchor(path)?;
            return Ok(Box::new(open_regular(dir, path)?));
        };
        let dir = self.roots.open_resolved_dir(&path.parent().unwrap_or_else(Target::root), false)?;
        let (file, _) = open_listed(&dir, Path::new(name)).map_err(|e| {
            if e.raw_os_error() != Some(rustix::io::Errno::LOOP.raw_os_error()) {
                return e;
            }
            let name = crate::text::display_path(Path::new(name));
            io::Error::other(format!(
                "{name} changed after its path was checked: it was replaced by a symbolic link, which is not \
                 followed once a path was resolved; nothing was read"
            ))
        })?;
        Ok(Box::new(file))
    }

    fn read_dir(&self, path: &Target) -> io::Result<Vec<DirEntry>> {
        // As `open`: the directory resolved, not one a link swapped in since leads to.
        let dir = self.roots.open_resolved_dir(path, false)?;
        let mut entries = Vec::new();
        for entry in dir.entries()? {
            let entry = entry?;
            let kind = entry.file_type().map_or(FileKind::Other, kind_of);
            entries.push(DirEntry { name: entry.file_name(), kind });
        }
        Ok(entries)
    }

    fn create_dir_all(&self, path: &Target) -> io::Result<()> {
        self.roots.open_resolved_dir(path, true).map(drop)
    }

    fn write_atomic(&self, path: &Target, contents: &[u8], check: Precondition) -> io::Result<Written> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path names a directory, not a file")
        })?;
        self.not_held(path)?;
        let parent = path.parent().unwrap_or_else(Target::root);
        let dir = self.roots.open_resolved_dir(&parent, false)?;
        write_atomic_in(&dir, Path::new(name), contents, check, LOCK_PATIENCE)
    }

    fn remove_file(&self, path: &Target) -> io::Result<()> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path names a directory, not a file")
        })?;
        self.not_held(path)?;
        let parent = path.parent().unwrap_or_else(Target::root);
        let dir = self.roots.open_resolved_dir(&parent, false)?;
        // The same lock as `write_atomic`, so a removal never interleaves with a replacement.
        lock_dir(&dir, LOCK_PATIENCE)?;
        stop::commit(|| dir.remove_file(Path::new(name)))?;
        let _ = rustix::fs::fsync(&dir);
        Ok(())
    }

    fn remove_dir(&self, path: &Target) -> io::Result<()> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path names the root, which is never removed")
        })?;
        self.not_held(path)?;
        let parent = path.parent().unwrap_or_else(Target::root);
        let dir = self.roots.open_resolved_dir(&parent, false)?;
        stop::commit(|| dir.remove_dir(Path::new(name)))
    }

    fn walk(
        &self,
        root: &Target,
        options: &WalkOptions,
        visit: &mut dyn FnMut(WalkEntry) -> bool,
    ) -> io::Result<()> {
        crate::fs::walk::walk(&self.roots, root, options, visit)
    }

    fn walk_parallel(
        &self,
        root: &Target,
        options: &WalkOptions,
        visit: &(dyn Fn(WalkEntry, &dyn crate::fs::ops::Found) -> bool + Sync),
    ) -> io::Result<()> {
        crate::fs::walk::walk_parallel(&self.roots, root, options, visit)
    }

    fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess> {
        let containment = crate::shell::process::Containment {
            environment: (*self.environment).clone(),
            ..crate::shell::process::Containment::default()
        };
        crate::shell::process::spawn_contained(request, containment)
    }
}

/// How long a change waits for another process's lock on its directory before it gives up.
const LOCK_PATIENCE: Duration = Duration::from_secs(5);
/// The longest pause between two attempts to take the lock.
const LOCK_PAUSE: Duration = Duration::from_millis(20);

/// Why a path that a running command's sandbox holds is not changed (see
/// [`LocalOperations::not_held`]).
pub(crate) const HELD: &str = "a command still running (a background command, or what a command left running) has it \
    read-only or hidden in its sandbox, and changing it now would undo that for the command; it can be changed once \
    that command ends (bash_stop stops a background session; a job a finished command left running ends by itself or \
    with the session)";

/// Takes the exclusive lock (`flock`) that writers of the directory `dir` share around their
/// check and their rename: other `tools` processes take it too, so two writers never both pass
/// their checks. Any process may take it, a sandboxed command included, so it is never waited on
/// blindly: attempts without blocking, for at most `patience`, then an error; and none after the
/// call this work belongs to was stopped. Released when `dir` is closed.
fn lock_dir(dir: &Dir, patience: Duration) -> io::Result<()> {
    use rustix::fs::{FlockOperation, flock};
    use rustix::io::Errno;
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if stop::stopped() {
            return Err(stop::stopped_error());
        }
        match flock(dir, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(Errno::WOULDBLOCK | Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let waited = started.elapsed();
        if waited >= patience {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "another process has held a lock on the directory (`flock`) for more than {}, so nothing \
                     was written; a command running in the background may hold it: stop it (bash_list, \
                     bash_stop) and try again",
                    tool_runtime::words::duration(patience)
                ),
            ));
        }
        std::thread::sleep(pause.min(patience - waited));
        pause = (pause * 2).min(LOCK_PAUSE);
    }
}

/// Writes `contents` to a fresh temporary file in `dir`, gives it the old file's permission bits
/// and owner, and renames it over `name`, all relative to the directory handle (so a directory
/// swapped for a link meanwhile changes nothing). Writers take the directory's lock
/// ([`lock_dir`]) for the check and the rename; the rename is not made once the call was stopped.
fn write_atomic_in(
    dir: &Dir,
    name: &Path,
    contents: &[u8],
    check: Precondition,
    patience: Duration,
) -> io::Result<Written> {
    lock_dir(dir, patience)?;
    let old = match dir.symlink_metadata(name) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if let Some(meta) = &old {
        // A link here was resolved by the caller; one that appeared since is replaced by the
        // file, never followed.
        if !meta.is_symlink() {
            not_special(meta)?;
        }
        if meta.is_file() && meta.mode() & 0o222 == 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "the file is read-only (mode {:o}); make it writable first (for example `chmod u+w`) if it should change",
                    meta.mode() & 0o7777
                ),
            ));
        }
    }
    if let Precondition::Unchanged(expected) = check {
        let holds = match &old {
            Some(meta) if meta.is_file() => holds(dir, name, meta, expected)?,
            _ => false,
        };
        if !holds {
            return Err(FileChanged::error());
        }
    }
    let old_file = old.as_ref().filter(|m| m.is_file());
    let (temp_name, mut file) = create_temp_file(dir, name, old_file.is_some())?;
    let result = (|| {
        file.write_all(contents)?;
        file.flush()?;
        if let Some(meta) = old_file {
            #[cfg(unix)]
            {
                // Keep the owner where we may; an unprivileged process keeps its own.
                let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
            }
            // The permission bits only: a setuid, setgid or sticky bit that a command gave the
            // file is not given to what the host writes.
            file.set_permissions(<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(
                meta.mode() & 0o777,
            ))?;
        }
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        drop(file);
        stop::commit(|| dir.rename(&temp_name, dir, name))?;
        Ok(bytes)
    })();
    match result {
        Ok(bytes) => {
            // Make the rename itself durable; a file system that cannot sync a directory is fine.
            let _ = rustix::fs::fsync(dir);
            let other_links = old_file.map_or(0, |m| m.nlink().saturating_sub(1));
            Ok(Written { bytes, other_links })
        }
        Err(e) => {
            let _ = dir.remove_file(&temp_name);
            Err(e)
        }
    }
}

/// Whether `name` in `dir` is still the regular file `listed` and holds the content whose
/// [`content_hash`](crate::fs::ops::content_hash) is `expected`. Opened without following a
/// link, blocking or taking a terminal, and read no further than [`MAX_EDIT_BYTES`] (no tool
/// hashes a longer content it read): a larger file, a link, a FIFO or another file renamed over
/// it has changed.
fn holds(dir: &Dir, name: &Path, listed: &Metadata, expected: u64) -> io::Result<bool> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::LOOP | Errno::NXIO | Errno::NOTDIR | Errno::OPNOTSUPP) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let stat = rustix::fs::fstat(&fd)?;
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let (dev, ino, size) = (stat.st_dev as u64, stat.st_ino as u64, stat.st_size as u64);
    let regular = rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile;
    if !regular || (dev, ino) != (listed.dev(), listed.ino()) || size > MAX_EDIT_BYTES {
        return Ok(false);
    }
    let mut reader = std::fs::File::from(fd).take(MAX_EDIT_BYTES + 1);
    let mut hash = ContentHash::default();
    let mut buffer = vec![0; 64 * 1024];
    let mut read = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        read += n as u64;
        hash.update(&buffer[..n]);
    }
    Ok(read <= MAX_EDIT_BYTES && hash.finish() == expected)
}

/// A new file next to `name`, readable by its owner only when it replaces an existing file (its
/// permissions are set to the old file's before the rename), with the default mode otherwise.
fn create_temp_file(dir: &Dir, name: &Path, replacing: bool) -> io::Result<(PathBuf, std::fs::File)> {
    let lossy = name.to_string_lossy();
    let stem: String = lossy.chars().take(64).collect();
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).follow(FollowSymlinks::No).mode(if replacing {
        0o600
    } else {
        0o666
    });
    let mut attempt = 0u32;
    loop {
        let temp =
            PathBuf::from(format!(".{stem}.{}.{:016x}.tmp", std::process::id(), crate::text::random_u64()));
        match dir.open_with(&temp, &options) {
            Ok(file) => return Ok((temp, file.into_std())),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use cap_std::ambient_authority;

    use super::*;
    use crate::fs::ops::content_hash;
    use crate::testing::TempDir;

    fn local(dir: &TempDir) -> LocalOperations {
        LocalOperations::open(dir.path()).unwrap()
    }

    /// What `env` prints in a command spawned through `ops`.
    async fn command_env(ops: &LocalOperations, dir: &TempDir) -> String {
        use tokio::io::AsyncReadExt;
        let request =
            ShellRequest { command: "env".into(), cwd: dir.path().to_path_buf(), ..ShellRequest::default() };
        let mut process = ops.spawn_shell(&request).unwrap();
        let mut seen = String::new();
        process.output.read_to_string(&mut seen).await.unwrap();
        seen
    }

    #[tokio::test]
    async fn commands_inherit_what_the_environment_filter_lets_through() {
        use tool_runtime::environment::EnvFilter;
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some(), "cargo sets it for its tests");
        let dir = TempDir::new();
        let has = |seen: &str| seen.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR="));
        assert!(!has(&command_env(&local(&dir), &dir).await));
        assert!(has(&command_env(&local(&dir).environment(EnvFilter::inherit_all()), &dir).await));
        assert!(has(&command_env(&local(&dir).environment(EnvFilter::base().with("CARGO_*")), &dir).await));
    }

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp_file() {
        let dir = TempDir::new();
        let path = dir.path().join("script.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
        let ops = local(&dir);
        let written = ops.write_atomic(&Target::root().join("script.sh"), b"new content", Precondition::None);
        assert_eq!(written.unwrap(), Written { bytes: 11, other_links: 0 });
        assert_eq!(fs::read_to_string(&path).unwrap(), "new content");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o751);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![OsString::from("script.sh")]);
    }

    #[test]
    fn a_reader_sees_the_old_content_or_the_new_never_a_mix() {
        let dir = TempDir::new();
        let path = dir.path().join("data.txt");
        let target = Target::root().join("data.txt");
        let ops = local(&dir);
        let size = 1024 * 1024;
        ops.write_atomic(&target, &vec![b'a'; size], Precondition::None).unwrap();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (path, done) = (path.clone(), done.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    let content = fs::read(&path).unwrap();
                    assert_eq!(content.len(), size);
                    assert!(content.iter().all(|&b| b == content[0]), "a torn read");
                    reads += 1;
                }
                reads
            })
        };
        for i in 0..20 {
            let byte = if i % 2 == 0 { b'b' } else { b'a' };
            ops.write_atomic(&target, &vec![byte; size], Precondition::None).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(reader.join().unwrap() > 0);
    }

    #[test]
    fn the_temporary_file_of_a_replacement_is_private_until_it_gets_the_old_mode() {
        let dir = TempDir::new();
        let handle = Dir::open_ambient_dir(dir.path(), ambient_authority()).unwrap();
        let (_, replacing) = create_temp_file(&handle, Path::new("secret"), true).unwrap();
        assert_eq!(replacing.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn atomic_write_refuses_a_directory() {
        let dir = TempDir::new();
        fs::create_dir(dir.path().join("sub")).unwrap();
        let err =
            local(&dir).write_atomic(&Target::root().join("sub"), b"x", Precondition::None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
    }

    /// A tree as a command could leave it between the resolution of `a/b/c/...` and the change:
    /// the directory at `depth` (1 for `a`, 3 for `a/b/c`) is a symbolic link to a decoy in
    /// `.git/hooks` that holds the rest of the path, a file `victim` and an empty `emptydir`.
    fn swapped_at(depth: usize) -> (TempDir, PathBuf) {
        let dir = TempDir::new();
        let names = ["a", "b", "c"];
        let decoy = dir.path().join(".git/hooks/decoy").join(names[depth..].join("/"));
        fs::create_dir_all(decoy.join("emptydir")).unwrap();
        fs::write(decoy.join("victim"), "kept").unwrap();
        let link = dir.path().join(names[..depth].join("/"));
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        let up = "../".repeat(depth - 1);
        std::os::unix::fs::symlink(format!("{up}.git/hooks/decoy"), &link).unwrap();
        (dir, decoy)
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_resolution_is_never_followed_by_a_change() {
        for depth in 1..=3 {
            let (dir, decoy) = swapped_at(depth);
            let ops = local(&dir);
            let at = |name: &str| Target::root().join("a/b/c").join(name);
            let changed = ["a", "a/b", "a/b/c"][depth - 1];
            let expected = format!(
                "the directory {changed} changed after its path was checked: it was replaced by a symbolic link, \
                 which is not followed once a path was resolved; nothing was read or written"
            );
            // Reads too: a read that a link leads elsewhere gets past the rules about paths.
            let errors = [
                ops.write_atomic(&at("pre-commit"), b"#!/bin/sh\nid\n", Precondition::None).map(drop),
                ops.create_dir_all(&at("new/deeper")),
                ops.remove_file(&at("victim")),
                ops.remove_dir(&at("emptydir")),
                ops.open(&at("victim")).map(drop),
                ops.read_dir(&at("emptydir")).map(drop),
            ];
            for (i, result) in errors.into_iter().enumerate() {
                let err = result.expect_err("a change through the link");
                assert_eq!(err.to_string(), expected, "depth {depth}, change {i}");
            }
            let mut left: Vec<_> = fs::read_dir(&decoy).unwrap().map(|e| e.unwrap().file_name()).collect();
            left.sort();
            assert_eq!(left, ["emptydir", "victim"], "depth {depth}: the decoy changed");
            assert_eq!(fs::read_to_string(decoy.join("victim")).unwrap(), "kept");
        }
    }

    #[test]
    fn a_file_swapped_for_a_link_after_resolution_is_not_read_through() {
        let dir = TempDir::new();
        fs::write(dir.path().join(".env"), "KEY=secret\n").unwrap();
        std::os::unix::fs::symlink(".env", dir.path().join("notes.txt")).unwrap();
        let Err(err) = local(&dir).open(&Target::root().join("notes.txt")) else { panic!("read through") };
        assert_eq!(
            err.to_string(),
            "notes.txt changed after its path was checked: it was replaced by a symbolic link, which is not \
             followed once a path was resolved; nothing was read"
        );
    }

    #[test]
    fn a_directory_swapped_for_a_link_out_of_the_root_is_named_as_an_escape() {
        let dir = TempDir::new();
        let outside = TempDir::new();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("d")).unwrap();
        let err =
            local(&dir).write_atomic(&Target::root().join("d/f"), b"x", Precondition::None).unwrap_err();
        assert!(err.to_string().contains("leads outside the workspace root"), "{err}");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn directories_are_made_one_at_a_time_and_an_existing_one_is_kept() {
        let dir = TempDir::new();
        let ops = local(&dir);
        ops.create_dir_all(&Target::root().join("x/y/z")).unwrap();
        ops.create_dir_all(&Target::root().join("x/y/z")).unwrap();
        assert!(fs::symlink_metadata(dir.path().join("x/y/z")).unwrap().is_dir());
        fs::write(dir.path().join("x/file"), "").unwrap();
        let err = ops.create_dir_all(&Target::root().join("x/file/z")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory, "{err}");
    }

    /// The name of a file that changed since it was read, in every way a command may change it:
    /// the check fails without following a link or blocking, and a hard link keeps its content.
    #[test]
    fn an_unchanged_check_sees_the_final_name_swapped_for_a_link_a_fifo_or_a_hard_link() {
        let dir = TempDir::new();
        let hooks = dir.path().join(".git/hooks");
        fs::create_dir_all(&hooks).unwrap();
        fs::write(hooks.join("pre-commit"), "old").unwrap();
        let ops = local(&dir);
        let target = Target::root().join("f");
        let unchanged = Precondition::Unchanged(content_hash(b"old"));

        std::os::unix::fs::symlink(".git/hooks/pre-commit", dir.path().join("f")).unwrap();
        let err = ops.write_atomic(&target, b"new", unchanged).unwrap_err();
        assert!(FileChanged::is(&err), "a link is not the file that was read: {err}");
        assert!(fs::symlink_metadata(dir.path().join("f")).unwrap().is_symlink());

        fs::remove_file(dir.path().join("f")).unwrap();
        nix::unistd::mkfifo(&dir.path().join("f"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = ops.write_atomic(&target, b"new", unchanged).unwrap_err();
        assert_eq!(err.to_string(), "it is a special file (a FIFO, socket or device), not a regular file");

        fs::remove_file(dir.path().join("f")).unwrap();
        fs::hard_link(hooks.join("pre-commit"), dir.path().join("f")).unwrap();
        let written = ops.write_atomic(&target, b"new", unchanged).unwrap();
        assert_eq!(written, Written { bytes: 3, other_links: 1 });
        assert_eq!(fs::read_to_string(hooks.join("pre-commit")).unwrap(), "old");
        assert_eq!(fs::read_to_string(dir.path().join("f")).unwrap(), "new");
    }

    /// Set in the process that runs the check under a memory limit.
    const BOUNDED_CHILD: &str = "TOOLS_STD_BOUNDED_PRECONDITION";

    /// A command swaps the file for a huge sparse one: the unchanged check reads no further than
    /// a tool reads, so it neither takes the file's size in memory nor reads it for minutes. The
    /// memory limit is the whole process's, so the test runs itself again under `ulimit -v`.
    #[test]
    fn an_unchanged_check_reads_no_further_than_the_edit_limit() {
        if std::env::var_os(BOUNDED_CHILD).is_some() {
            let dir = TempDir::new();
            let file = fs::File::create(dir.path().join("f")).unwrap();
            file.set_len(16 << 30).unwrap();
            let check = Precondition::Unchanged(content_hash(b"old"));
            let err = local(&dir).write_atomic(&Target::root().join("f"), b"new", check).unwrap_err();
            assert!(FileChanged::is(&err), "{err}");
            return;
        }
        let name = "fs::local::tests::an_unchanged_check_reads_no_further_than_the_edit_limit";
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(BOUNDED_CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the check under `ulimit -v` failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn a_replacement_keeps_the_permission_bits_but_not_setuid_setgid_or_sticky() {
        let dir = TempDir::new();
        let path = dir.path().join("tool");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o6755)).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            0o6755,
            "set as a command may"
        );
        local(&dir).write_atomic(&Target::root().join("tool"), b"new", Precondition::None).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o755);
    }

    /// The directory's lock, held as `flock -x . sleep 1000` in a background command holds it.
    fn hold_lock(dir: &Path) -> fs::File {
        let holder = fs::File::open(dir).unwrap();
        holder.lock().unwrap();
        holder
    }

    #[test]
    fn a_lock_held_by_another_process_is_waited_for_a_bounded_time_then_refused() {
        let dir = TempDir::new();
        fs::write(dir.path().join("f"), "old").unwrap();
        let holder = hold_lock(dir.path());
        let handle = crate::fs::host::open_dir_path(dir.path()).unwrap();
        let err =
            write_atomic_in(&handle, Path::new("f"), b"new", Precondition::None, Duration::ZERO).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ResourceBusy);
        assert_eq!(
            err.to_string(),
            "another process has held a lock on the directory (`flock`) for more than 0ms, so nothing was \
             written; a command running in the background may hold it: stop it (bash_list, bash_stop) and try \
             again"
        );
        assert_eq!(fs::read_to_string(dir.path().join("f")).unwrap(), "old");
        drop(holder);
        write_atomic_in(&handle, Path::new("f"), b"new", Precondition::None, Duration::ZERO).unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("f")).unwrap(), "new");
    }

    /// A write waits for a lock a command holds; its call is stopped (its future dropped), and
    /// only then is the lock released: the write must not land after the call was stopped.
    #[tokio::test]
    async fn a_write_of_a_stopped_call_never_lands_when_the_lock_is_released() {
        for change in ["write", "remove"] {
            let dir = TempDir::new();
            fs::write(dir.path().join("f"), "old").unwrap();
            let ws = crate::Workspace::new(dir.path()).unwrap();
            let holder = hold_lock(dir.path());
            let (done, finished) = std::sync::mpsc::channel();
            let work = ws.blocking(move |ops| {
                let target = Target::root().join("f");
                let result = match change {
                    "write" => ops.write_atomic(&target, b"new", Precondition::None).map(drop),
                    _ => ops.remove_file(&target),
                };
                done.send(result).unwrap();
            });
            let mut work = Box::pin(work);
            // Started (its first poll spawns it), then stopped.
            tokio::select! {
                biased;
                _ = &mut work => panic!("the {change} finished while the lock was held"),
                () = std::future::ready(()) => {}
            }
            drop(work);
            drop(holder);
            let result = tokio::task::spawn_blocking(move || finished.recv()).await.unwrap();
            if let Ok(result) = result {
                let err = result.expect_err("a change after its call was stopped");
                assert!(err.to_string().contains("stopped"), "{err}");
            }
            assert_eq!(fs::read_to_string(dir.path().join("f")).unwrap(), "old", "{change}");
        }
    }

    /// Operations that exchange `sub` with `sublink` (a link to `.git/hooks`) right before the
    /// first change, as a command looping `renameat2(RENAME_EXCHANGE)` would once in a while:
    /// after the path was resolved and the permission asked, before the change.
    struct SwapBeforeChange {
        local: LocalOperations,
        root: PathBuf,
        swapped: std::sync::atomic::AtomicBool,
    }

    impl SwapBeforeChange {
        fn swap(&self) {
            if !self.swapped.swap(true, std::sync::atomic::Ordering::SeqCst) {
                let root = rustix::fs::CWD;
                let (sub, link) = (self.root.join("sub"), self.root.join("sublink"));
                rustix::fs::renameat_with(root, &sub, root, &link, rustix::fs::RenameFlags::EXCHANGE)
                    .unwrap();
            }
        }
    }

    impl Operations for SwapBeforeChange {
        fn metadata(&self, path: &Target) -> io::Result<FileInfo> {
            self.local.metadata(path)
        }
        fn symlink_metadata(&self, path: &Target) -> io::Result<FileInfo> {
            self.local.symlink_metadata(path)
        }
        fn read_link(&self, path: &Target) -> io::Result<PathBuf> {
            self.local.read_link(path)
        }
        fn open(&self, path: &Target) -> io::Result<Box<dyn Read + Send>> {
            self.local.open(path)
        }
        fn read_dir(&self, path: &Target) -> io::Result<Vec<DirEntry>> {
            self.local.read_dir(path)
        }
        fn create_dir_all(&self, path: &Target) -> io::Result<()> {
            self.swap();
            self.local.create_dir_all(path)
        }
        fn write_atomic(&self, path: &Target, contents: &[u8], check: Precondition) -> io::Result<Written> {
            self.swap();
            self.local.write_atomic(path, contents, check)
        }
        fn walk(
            &self,
            root: &Target,
            options: &WalkOptions,
            visit: &mut dyn FnMut(WalkEntry) -> bool,
        ) -> io::Result<()> {
            self.local.walk(root, options, visit)
        }
        fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess> {
            self.local.spawn_shell(request)
        }
    }

    #[tokio::test]
    async fn write_edit_and_apply_patch_never_land_in_a_link_swapped_in_after_resolution() {
        use serde_json::json;
        let patch = "*** Begin Patch\n*** Add File: sub/pre-commit\n+id\n*** End Patch";
        for (tool, args) in [
            ("write", json!({"path": "sub/pre-commit", "content": "id\n"})),
            ("apply_patch", json!({"patch": patch})),
            ("edit", json!({"path": "sub/f", "old_string": "old", "new_string": "id"})),
        ] {
            let fx = crate::testing::Fixture::with_workspace(|ws| {
                let ops = SwapBeforeChange {
                    local: LocalOperations::open(ws.root()).unwrap(),
                    root: ws.root().to_path_buf(),
                    swapped: Default::default(),
                };
                crate::Workspace::with_operations(ws.root(), Arc::new(ops)).unwrap()
            });
            fx.write("sub/f", "old");
            fx.write(".git/hooks/f", "old");
            std::os::unix::fs::symlink(".git/hooks", fx.root().join("sublink")).unwrap();
            fx.text("read", json!({"path": "sub/f"})).await;
            let err = fx.error(tool, args).await;
            assert!(
                err.message().contains("the directory sub changed after its path was checked"),
                "{tool}: {}",
                err.message()
            );
            let hooks = fx.root().join(".git/hooks");
            assert!(!hooks.join("pre-commit").exists(), "{tool} wrote the hook");
            assert_eq!(fs::read_to_string(hooks.join("f")).unwrap(), "old", "{tool}");
        }
    }

    #[test]
    fn walk_reports_an_invalid_glob() {
        let dir = TempDir::new();
        let options = WalkOptions { globs: vec!["a[".into()], ..Default::default() };
        let err = local(&dir).walk(&Target::root(), &options, &mut |_| true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().starts_with("invalid glob `a[`: "), "{err}");
    }
}
