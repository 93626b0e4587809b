//! `Operations`: the file-system and process access the tools use, local by default, replaceable by a remote sandbox.

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

pub use crate::shell::process::{
    InputReaders, KillReport, KillScope, NotKilled, ShellControl, ShellExit, ShellHandle, ShellInput,
    ShellOutput, ShellProcess, ShellRequest,
};

/// Where a [`Target`] lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Beneath the workspace root: the path is relative to it, and an implementation must never
    /// reach outside the root while resolving it, whatever symbolic links or renames it meets
    /// (the local implementation has the kernel enforce this).
    Workspace,
    /// Outside the workspace root, where the permission hook granted access: the path is
    /// absolute.
    Outside,
}

/// A path the tools may touch: beneath the workspace root, or outside it with a grant.
///
/// Only [`Workspace::resolve`](crate::Workspace::resolve) makes targets outside the root (after
/// the permission hook allowed it), so an [`Operations`] method never sees an outside path that
/// nobody granted. The path holds only plain names: no `.`, no `..`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    scope: Scope,
    path: PathBuf,
}

impl Target {
    /// The workspace root itself.
    pub fn root() -> Target {
        Target { scope: Scope::Workspace, path: PathBuf::new() }
    }

    /// An absolute path outside the root that the permission hook granted.
    pub(crate) fn outside(path: PathBuf) -> Target {
        debug_assert!(path.is_absolute());
        Target { scope: Scope::Outside, path: normal_parts(&path).collect() }
    }

    /// Where the path lives.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The path: relative to the workspace root (empty for the root itself) in
    /// [`Scope::Workspace`], absolute in [`Scope::Outside`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path below this one named `name`. Only the plain names in `name` are kept (a `..`, a
    /// `.` or a leading `/` are dropped), so a target never climbs out of its scope.
    pub fn join(&self, name: impl AsRef<OsStr>) -> Target {
        let name = name.as_ref();
        let bytes = name.as_encoded_bytes();
        if cfg!(unix)
            && !bytes.is_empty()
            && bytes != b"."
            && bytes != b".."
            && !bytes.iter().any(|&b| std::path::is_separator(b as char))
        {
            // One plain name (what a directory listing holds): one allocation of the right size.
            let mut path = PathBuf::with_capacity(self.path.as_os_str().len() + 1 + bytes.len());
            path.push(&self.path);
            path.push(name);
            return Target { scope: self.scope, path };
        }
        let mut path = self.path.clone();
        path.extend(Path::new(name).components().filter(|c| matches!(c, Component::Normal(_))));
        Target { scope: self.scope, path }
    }

    /// The directory holding this path; `None` for the workspace root and for `/`.
    pub fn parent(&self) -> Option<Target> {
        self.path.file_name()?;
        let mut path = self.path.clone();
        path.pop();
        Some(Target { scope: self.scope, path })
    }

    /// The last name of the path; `None` for the workspace root and for `/`.
    pub fn file_name(&self) -> Option<&OsStr> {
        self.path.file_name()
    }
}

fn normal_parts(path: &Path) -> impl Iterator<Item = Component<'_>> {
    let root = path.has_root().then_some(Component::RootDir);
    root.into_iter().chain(path.components().filter(|c| matches!(c, Component::Normal(_))))
}

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

impl FileKind {
    /// How a message names this kind of file.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            FileKind::File => "a file",
            FileKind::Dir => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "a special file (a FIFO, socket or device)",
        }
    }
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

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's file name.
    pub name: std::ffi::OsString,
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
    /// Report the entries that `globs` leave out too, marked [`WalkEntry::excluded`] (never
    /// descended into), so that a caller can say how many there were.
    pub report_excluded: bool,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            hidden: false,
            respect_ignore_files: true,
            globs: Vec::new(),
            max_depth: None,
            report_excluded: false,
        }
    }
}

/// One path found by [`Operations::walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// The entry (the walk's root joined with the names below it).
    pub path: Target,
    /// Depth below the root (its children are at 1).
    pub depth: usize,
    /// What it is; symbolic links are not followed.
    pub kind: FileKind,
    /// Last modification time, when known.
    pub modified: Option<SystemTime>,
    /// Left out by [`WalkOptions::globs`], reported because of
    /// [`WalkOptions::report_excluded`]; an excluded directory is not descended into.
    pub excluded: bool,
}

/// What [`Operations::write_atomic`] checks before it replaces a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precondition {
    /// Write whatever the file holds now.
    #[default]
    None,
    /// Write only if the file still holds the content with this [`content_hash`]; otherwise
    /// fail with a [`FileChanged`] error. The check and the replacement happen under a lock that
    /// every writer using the same implementation takes, so two such writers never both pass.
    /// The check reads no further than [`MAX_EDIT_BYTES`](crate::edit::MAX_EDIT_BYTES) and does
    /// not follow a link: a larger file, or a name that is no longer the regular file, has
    /// changed.
    Unchanged(u64),
}

/// A file changed between the moment a tool read it and the moment it meant to replace it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileChanged;

impl fmt::Display for FileChanged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the file changed since it was read")
    }
}

impl std::error::Error for FileChanged {}

impl FileChanged {
    /// Whether `error` is a [`FileChanged`] error.
    pub fn is(error: &io::Error) -> bool {
        error.get_ref().is_some_and(|inner| inner.is::<FileChanged>())
    }

    pub(crate) fn error() -> io::Error {
        io::Error::other(FileChanged)
    }
}

/// A hash of a file's content, for [`Precondition::Unchanged`]. Not cryptographic: it detects
/// changes, it does not resist someone crafting a collision.
pub fn content_hash(bytes: &[u8]) -> u64 {
    let mut hash = ContentHash::default();
    hash.update(bytes);
    hash.finish()
}

/// [`content_hash`] fed in pieces, as a file is read: the same for the same bytes however they
/// are cut.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContentHash(std::collections::hash_map::DefaultHasher);

impl ContentHash {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        use std::hash::Hasher;
        // SipHash buffers what it is fed, so the pieces do not matter; `DefaultHasher::default()`
        // has fixed keys, so the same bytes give the same hash in one build.
        self.0.write(bytes);
    }

    pub(crate) fn finish(&self) -> u64 {
        use std::hash::Hasher;
        self.0.finish()
    }
}

/// What [`Operations::write_atomic`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The size of the file written.
    pub bytes: u64,
    /// The file it replaced had this many other hard links. Those names keep the old content:
    /// a replacement is a new file under this name, so a hard link into the workspace never
    /// lets a write reach a file elsewhere.
    pub other_links: u64,
}

/// File-system and process access, as the built-in tools use it.
///
/// Paths are [`Target`]s made by the [`Workspace`](crate::Workspace): relative to the workspace
/// root, or absolute outside it where the permission hook granted access. An implementation
/// resolves a [`Scope::Workspace`] target beneath the root and never outside it, whatever the
/// tree holds or however it changes meanwhile ([`LocalOperations`](crate::LocalOperations) has
/// the kernel enforce this with `openat2(RESOLVE_BENEATH)`). The file-system methods block; the tools call them from a
/// blocking thread, so an implementation for a remote sandbox may wait on the network inside
/// them.
pub trait Operations: Send + Sync + 'static {
    /// Information about `path`, following symbolic links.
    fn metadata(&self, path: &Target) -> io::Result<FileInfo>;
    /// Information about `path` itself, not following a symbolic link.
    fn symlink_metadata(&self, path: &Target) -> io::Result<FileInfo>;
    /// The target of the symbolic link `path`, as stored in the link.
    fn read_link(&self, path: &Target) -> io::Result<PathBuf>;
    /// Opens the regular file `path`, a path the workspace resolved, for reading. Anything else
    /// (a FIFO, a socket, a device, a directory) is an `InvalidInput` error, and opening never
    /// blocks on it. No link in `path` is followed: one there was swapped in since the path was
    /// resolved and checked, and would lead the read past the rules (an error instead).
    fn open(&self, path: &Target) -> io::Result<Box<dyn Read + Send>>;
    /// The entries of the directory `path`, a resolved path (no link in it followed, as by
    /// [`Operations::open`]), in no particular order.
    fn read_dir(&self, path: &Target) -> io::Result<Vec<DirEntry>>;
    /// Creates `path` and its missing parents.
    ///
    /// The methods that change something (this one, [`Operations::write_atomic`],
    /// [`Operations::remove_file`], [`Operations::remove_dir`]) are given paths the
    /// [`Workspace`](crate::Workspace) resolved, links followed and permission asked: the local
    /// implementation opens their directories again one name at a time without following a
    /// link, so a directory that a command swapped for a link since makes the change fail, and
    /// nothing is changed elsewhere.
    fn create_dir_all(&self, path: &Target) -> io::Result<()>;
    /// Replaces the content of `path` atomically: readers see the old content or the new one,
    /// never a mix, whenever the write is interrupted. An existing file keeps its permission
    /// bits (`rwx`; a setuid, setgid or sticky bit is dropped; the new content is never readable
    /// with wider ones) and, where the process may, its owner; a file without write permission is
    /// refused (`PermissionDenied`), and so is anything but a regular file. See [`Written`] for
    /// hard links.
    fn write_atomic(&self, path: &Target, contents: &[u8], check: Precondition) -> io::Result<Written>;
    /// Removes the file `path` (a symbolic link is removed itself, not its target). A directory
    /// is refused. The default refuses everything (`Unsupported`): implementations that cannot
    /// delete files keep compiling, and `apply_patch` reports that deletes are not available.
    fn remove_file(&self, path: &Target) -> io::Result<()> {
        let _ = path;
        Err(io::Error::new(io::ErrorKind::Unsupported, "this workspace's operations cannot delete files"))
    }
    /// Removes the empty directory `path` (one that is not empty is an error). The default
    /// refuses (`Unsupported`), as [`Operations::remove_file`] does.
    fn remove_dir(&self, path: &Target) -> io::Result<()> {
        let _ = path;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this workspace's operations cannot delete directories",
        ))
    }
    /// Walks the tree under `root` (which is not itself reported), calling `visit` for every
    /// entry until it returns `false`. Unreadable entries are skipped, symbolic links are
    /// reported, not followed; an invalid glob is an `InvalidInput` error.
    fn walk(
        &self,
        root: &Target,
        options: &WalkOptions,
        visit: &mut dyn FnMut(WalkEntry) -> bool,
    ) -> io::Result<()>;
    /// Walks as [`Operations::walk`] does, but may call `visit` from several threads at once and
    /// in any order (a caller that needs an order sorts what it kept). Entries come without
    /// `modified`; `visit` reads what it needs through the [`Found`] it is given, which reaches
    /// the entry where the walk found it. The default walks on the calling thread and resolves
    /// each entry again; [`LocalOperations`](crate::LocalOperations) reads directories on one
    /// thread per core and reaches each entry through its directory's handle.
    fn walk_parallel(
        &self,
        root: &Target,
        options: &WalkOptions,
        visit: &(dyn Fn(WalkEntry, &dyn Found) -> bool + Sync),
    ) -> io::Result<()> {
        self.walk(root, options, &mut |mut entry| {
            entry.modified = None;
            let found = Resolved { ops: self, path: &entry.path };
            visit(entry.clone(), &found)
        })
    }
    /// Starts `bash -c command` in its own process group.
    fn spawn_shell(&self, request: &ShellRequest) -> io::Result<ShellProcess>;
}

/// An entry of [`Operations::walk_parallel`], reached where the walk found it.
pub trait Found {
    /// The entry's information, not following a symbolic link.
    fn symlink_metadata(&self) -> io::Result<FileInfo>;
    /// Opens the entry, a regular file, for reading as [`Operations::open`] does, with its
    /// information read from the open file.
    fn open(&self) -> io::Result<(Box<dyn Read + Send>, FileInfo)>;
}

/// A [`Found`] entry resolved again by its path.
struct Resolved<'a, O: ?Sized> {
    ops: &'a O,
    path: &'a Target,
}

impl<O: Operations + ?Sized> Found for Resolved<'_, O> {
    fn symlink_metadata(&self) -> io::Result<FileInfo> {
        self.ops.symlink_metadata(self.path)
    }

    fn open(&self) -> io::Result<(Box<dyn Read + Send>, FileInfo)> {
        let reader = self.ops.open(self.path)?;
        Ok((reader, self.ops.metadata(self.path)?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_hold_only_plain_names() {
        let t = Target::root().join("a/../b/./c");
        assert_eq!(t.path(), Path::new("a/b/c"));
        assert_eq!(Target::root().join("/etc/passwd").path(), Path::new("etc/passwd"));
        // One name, as a listing holds it, and the names that are not plain.
        assert_eq!(t.join("d.rs").path(), Path::new("a/b/c/d.rs"));
        for not_plain in ["", ".", "..", "/", "../.."] {
            assert_eq!(t.join(not_plain).path(), t.path(), "{not_plain:?}");
        }
        assert_eq!(t.join("x/..").path(), Path::new("a/b/c/x"));
        let outside = Target::outside(PathBuf::from("/"));
        assert_eq!(outside.join("etc").path(), Path::new("/etc"));
        assert_eq!(t.parent().unwrap().path(), Path::new("a/b"));
        assert_eq!(Target::root().parent(), None);
        let outside = Target::outside(PathBuf::from("/tmp/../x"));
        assert_eq!(outside.path(), Path::new("/tmp/x"));
        assert_eq!(outside.scope(), Scope::Outside);
        assert_eq!(Target::outside(PathBuf::from("/")).parent(), None);
    }
}
