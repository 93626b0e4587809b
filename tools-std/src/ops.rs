//! `Operations`: the file-system and process access the tools use, local by default, replaceable by a remote sandbox.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use crate::process::{
    KillReport, KillScope, NotKilled, ShellControl, ShellExit, ShellProcess, ShellRequest,
};

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (only reported where links are not followed).
    Symlink,
    /// Anything else: a FIFO, a socket, a device.
    Other,
}

/// What the tools need to know about a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// What the path is.
    pub kind: FileKind,
    /// Size in bytes.
    pub len: u64,
    /// Last modification time, where the file system records one.
    pub modified: Option<SystemTime>,
    /// Unix permission bits, where there are any.
    pub mode: Option<u32>,
}

impl FileInfo {
    fn from_std(meta: &fs::Metadata) -> Self {
        let file_type = meta.file_type();
        let kind = if file_type.is_symlink() {
            FileKind::Symlink
        } else if file_type.is_dir() {
            FileKind::Dir
        } else if file_type.is_file() {
            FileKind::File
        } else {
            FileKind::Other
        };
        #[cfg(unix)]
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            Some(meta.permissions().mode())
        };
        #[cfg(not(unix))]
        let mode = None;
        FileInfo { kind, len: meta.len(), modified: meta.modified().ok(), mode }
    }
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's file name.
    pub name: OsString,
    /// What it is, without following a symbolic link.
    pub kind: FileKind,
}

/// How [`Operations::walk`] walks a tree. The defaults are ripgrep's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkOptions {
    /// Include hidden files and directories (names starting with `.`). A `.git` directory is
    /// skipped even then.
    pub hidden: bool,
    /// Honour `.gitignore` (inside a git repository or not), `.ignore`, `.rgignore`,
    /// `.git/info/exclude` and the global git excludes file.
    pub respect_ignore_files: bool,
    /// ripgrep `--glob` patterns, matched against paths relative to the walk's root: a file is
    /// kept when it matches one of them (a pattern starting with `!` excludes instead). A pattern
    /// without `/` matches a file name at any depth.
    pub globs: Vec<String>,
    /// How deep to descend (the root's children are at depth 1).
    pub max_depth: Option<usize>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions { hidden: false, respect_ignore_files: true, globs: Vec::new(), max_depth: None }
    }
}

/// One path found by [`Operations::walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// The full path (the walk's root joined with the relative path).
    pub path: PathBuf,
    /// Depth below the root (its children are at 1).
    pub depth: usize,
    /// What it is; symbolic links are not followed.
    pub kind: FileKind,
    /// Last modification time, when known.
    pub modified: Option<SystemTime>,
}

/// File-system and process access, as the built-in tools use it.
///
/// Paths given to these methods are absolute and already resolved by the [`Workspace`]
/// (symbolic links followed and checked against the workspace root). The file-system methods
/// block; the tools call them from a blocking thread, so an implementation for a remote sandbox
/// may wait on the network inside them.
///
/// [`Workspace`]: crate::Workspace
pub trait Operations: Send + Sync + 'static {
    /// Information about `path`, following symbolic links.
    fn metadata(&self, path: &Path) -> io::Result<FileInfo>;
    /// Information about `path` itself, not following a symbolic link.
    fn symlink_metadata(&self, path: &Path) -> io::Result<FileInfo>;
    /// The target of the symbolic link `path`, as stored in the link.
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
    /// Opens `path` for reading.
    fn open(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;
    /// The entries of the directory `path`, in no particular order.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
    /// Creates `path` and its missing parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Replaces the content of `path` atomically: readers see the old content or the new one,
    /// never a mix, whenever the write is interrupted. An existing file keeps its permissions.
    /// Returns the size of the file written.
    fn write_atomic(&self, path: &Path, contents: &[u8]) -> io::Result<u64>;
    /// Walks the tree under `root` (which is not itself reported), calling `visit` for every
    /// entry until it returns `false`. Unreadable entries are skipped; an invalid glob is an
    /// `InvalidInput` error.
    fn walk(
        &self,
        root: &Path,
        options: &WalkOptions,
        visit: &mut dyn FnMut(WalkEntry) -> bool,
    ) -> io::Result<()>;
    /// Starts `bash -c command` in its own process group.
    fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess>;
}

/// The local file system and local processes.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalOperations;

impl Operations for LocalOperations {
    fn metadata(&self, path: &Path) -> io::Result<FileInfo> {
        fs::metadata(path).map(|m| FileInfo::from_std(&m))
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<FileInfo> {
        fs::symlink_metadata(path).map(|m| FileInfo::from_std(&m))
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        fs::read_link(path)
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(fs::File::open(path)?))
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(path)? {
            let entry = entry?;
            let kind = match entry.file_type() {
                Ok(t) if t.is_symlink() => FileKind::Symlink,
                Ok(t) if t.is_dir() => FileKind::Dir,
                Ok(t) if t.is_file() => FileKind::File,
                _ => FileKind::Other,
            };
            entries.push(DirEntry { name: entry.file_name(), kind });
        }
        Ok(entries)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn write_atomic(&self, path: &Path, contents: &[u8]) -> io::Result<u64> {
        write_atomic_local(path, contents)
    }

    fn walk(
        &self,
        root: &Path,
        options: &WalkOptions,
        visit: &mut dyn FnMut(WalkEntry) -> bool,
    ) -> io::Result<()> {
        let mut builder = ignore::WalkBuilder::new(root);
        builder
            .hidden(!options.hidden)
            .git_ignore(options.respect_ignore_files)
            .git_exclude(options.respect_ignore_files)
            .git_global(options.respect_ignore_files)
            .ignore(options.respect_ignore_files)
            .parents(options.respect_ignore_files)
            .require_git(false)
            .follow_links(false)
            .max_depth(options.max_depth)
            .filter_entry(|entry| entry.depth() == 0 || entry.file_name() != ".git");
        if options.respect_ignore_files {
            builder.add_custom_ignore_filename(".rgignore");
        }
        if !options.globs.is_empty() {
            builder.overrides(overrides(root, &options.globs)?);
        }
        for entry in builder.build() {
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            let kind = match entry.file_type() {
                Some(t) if t.is_symlink() => FileKind::Symlink,
                Some(t) if t.is_dir() => FileKind::Dir,
                Some(t) if t.is_file() => FileKind::File,
                _ => FileKind::Other,
            };
            let modified = entry.metadata().ok().and_then(|m| m.modified().ok());
            let depth = entry.depth();
            if !visit(WalkEntry { path: entry.into_path(), depth, kind, modified }) {
                break;
            }
        }
        Ok(())
    }

    fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess> {
        crate::process::spawn_local(request)
    }
}

/// ripgrep `--glob` patterns relative to `root`, compiled; an invalid one is an `InvalidInput`
/// error naming it.
pub(crate) fn overrides(root: &Path, globs: &[String]) -> io::Result<ignore::overrides::Override> {
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    for glob in globs {
        builder.add(glob).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("invalid glob `{glob}`: {}", glob_error(&e)))
        })?;
    }
    builder.build().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, glob_error(&e)))
}

/// The message of an `ignore` glob error, without the crate's own wording around it.
fn glob_error(error: &ignore::Error) -> String {
    match error {
        ignore::Error::Glob { err, .. } => err.clone(),
        other => other.to_string(),
    }
}

/// Writes `contents` next to `path` in a fresh temporary file, syncs it, gives it the old file's
/// permissions, and renames it over `path`.
fn write_atomic_local(path: &Path, contents: &[u8]) -> io::Result<u64> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{} does not name a file", path.display()))
    })?;
    let old_permissions = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            ));
        }
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let (temp_path, mut file) = create_temp_file(dir, name)?;
    let result = (|| {
        file.write_all(contents)?;
        file.flush()?;
        if let Some(permissions) = old_permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        let written = file.metadata()?.len();
        drop(file);
        fs::rename(&temp_path, path)?;
        Ok(written)
    })();
    match result {
        Ok(written) => {
            // Make the rename itself durable; a file system that cannot sync a directory is fine.
            if let Ok(dir) = fs::File::open(dir) {
                let _ = dir.sync_all();
            }
            Ok(written)
        }
        Err(e) => {
            let _ = fs::remove_file(&temp_path);
            Err(e)
        }
    }
}

fn create_temp_file(dir: &Path, name: &std::ffi::OsStr) -> io::Result<(PathBuf, fs::File)> {
    let lossy = name.to_string_lossy();
    let stem: String = lossy.chars().take(64).collect();
    let mut attempt = 0u32;
    loop {
        let temp = dir.join(format!(".{stem}.{}.{:016x}.tmp", std::process::id(), random_u64()));
        match fs::OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp_file() {
        let dir = crate::testing::TempDir::new();
        let path = dir.path().join("script.sh");
        fs::write(&path, "old").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
        }
        assert_eq!(LocalOperations.write_atomic(&path, b"new content").unwrap(), 11);
        assert_eq!(fs::read_to_string(&path).unwrap(), "new content");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o751);
        }
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![OsString::from("script.sh")]);
    }

    #[test]
    fn a_reader_sees_the_old_content_or_the_new_never_a_mix() {
        let dir = crate::testing::TempDir::new();
        let path = dir.path().join("data.txt");
        let size = 1024 * 1024;
        LocalOperations.write_atomic(&path, &vec![b'a'; size]).unwrap();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
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
            LocalOperations.write_atomic(&path, &vec![byte; size]).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(reader.join().unwrap() > 0);
    }

    #[test]
    fn atomic_write_refuses_a_directory() {
        let dir = crate::testing::TempDir::new();
        let err = LocalOperations.write_atomic(dir.path(), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
    }

    #[test]
    fn walk_reports_an_invalid_glob() {
        let dir = crate::testing::TempDir::new();
        let options = WalkOptions { globs: vec!["a[".into()], ..Default::default() };
        let err = LocalOperations.walk(dir.path(), &options, &mut |_| true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().starts_with("invalid glob `a[`: "), "{err}");
    }
}
