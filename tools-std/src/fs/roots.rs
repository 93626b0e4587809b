//! The directory handles every path is opened beneath: the workspace root, and `/` for the
//! paths outside it that a permission granted; files opened through them without following
//! links or blocking on special files.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};

use crate::fs::host;
use crate::fs::ops::{FileInfo, FileKind, Scope, Target};
use crate::fs::stop;
use crate::text::display_path;

/// The workspace root's directory handle and path, and the host's root, opened when first needed.
#[derive(Clone)]
pub(crate) struct Roots {
    root: Arc<Dir>,
    root_path: Arc<PathBuf>,
    host: Arc<OnceLock<Dir>>,
}

impl Roots {
    /// Opens the directory `root` as the workspace root.
    pub(crate) fn open(root: &Path) -> io::Result<Roots> {
        Ok(Roots::of(Dir::open_ambient_dir(root, ambient_authority())?, root))
    }

    /// The workspace root `root`, opened already as `dir`.
    pub(crate) fn of(dir: Dir, root: &Path) -> Roots {
        Roots { root: Arc::new(dir), root_path: Arc::new(root.to_path_buf()), host: Arc::default() }
    }

    /// The directory handle `target` is resolved from, and the path relative to it.
    pub(crate) fn anchor<'a>(&self, target: &'a Target) -> io::Result<(&Dir, &'a Path)> {
        let path = target.path();
        match target.scope() {
            Scope::Workspace => Ok((&self.root, dot_if_empty(path))),
            Scope::Outside => {
                let host = match self.host.get() {
                    Some(host) => host,
                    None => {
                        let dir = Dir::open_ambient_dir("/", ambient_authority())?;
                        self.host.get_or_init(|| dir)
                    }
                };
                Ok((host, dot_if_empty(path.strip_prefix("/").unwrap_or(path))))
            }
        }
    }

    /// Opens the directory `target` (following links beneath its anchor).
    pub(crate) fn open_dir(&self, target: &Target) -> io::Result<Dir> {
        let (dir, path) = self.anchor(target)?;
        dir.open_dir(path).map_err(escape)
    }

    /// Opens the directory `target`, a path the workspace already resolved (the links its user
    /// named were followed then), to change something in it: one name at a time from its
    /// anchor, with `O_NOFOLLOW | O_DIRECTORY`. A directory that a command swapped for a
    /// symbolic link since is refused, never followed, so a change lands in the directory that
    /// was resolved (and asked about) or nowhere. With `create`, the directories missing on the
    /// way are made (with the umask's mode), each one a change a stopped call does not make. The
    /// handle is an open directory of its own, which can be locked and synced.
    pub(crate) fn open_resolved_dir(&self, target: &Target, create: bool) -> io::Result<Dir> {
        let (anchor, path) = self.anchor(target)?;
        let mut dir = host::open_beneath(anchor, Path::new(""), false)?;
        let mut at = PathBuf::new();
        for component in path.components() {
            let Component::Normal(name) = component else { continue };
            at.push(name);
            let mut opened = host::open_subdir(&dir, name);
            if create && opened.as_ref().is_err_and(|e| e.kind() == io::ErrorKind::NotFound) {
                match stop::commit(|| host::make_dir(&dir, name, 0o777)) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                    _ => {}
                }
                opened = host::open_subdir(&dir, name);
            }
            dir = match opened {
                Ok(sub) => sub,
                Err(e) => {
                    let refused = [rustix::io::Errno::LOOP, rustix::io::Errno::NOTDIR]
                        .iter()
                        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()));
                    // A link when it was opened, and a link still or a directory again (swapped
                    // back and forth); a file there is not a directory, as the kernel says.
                    match host::stat_at(&dir, name) {
                        Ok(now) if refused && matches!(now.kind, host::Kind::Link | host::Kind::Dir) => {
                            return Err(became_link(target, anchor, &at));
                        }
                        _ => return Err(e),
                    }
                }
            };
        }
        Ok(dir)
    }

    /// The workspace root's absolute path.
    pub(crate) fn root_path(&self) -> &Path {
        &self.root_path
    }

    /// The absolute path `target` names, for messages and ignore-file matching.
    pub(crate) fn absolute(&self, target: &Target) -> PathBuf {
        match target.scope() {
            Scope::Workspace if target.path().as_os_str().is_empty() => self.root_path.to_path_buf(),
            Scope::Workspace => self.root_path.join(target.path()),
            Scope::Outside => target.path().to_path_buf(),
        }
    }
}

/// The error for the directory `at` (relative to `anchor`) of `target`, a symbolic link when it
/// was opened: where the link leads out of the workspace, as `cap-std` says it; otherwise, that
/// the directory changed after the path was resolved.
fn became_link(target: &Target, anchor: &Dir, at: &Path) -> io::Error {
    if let Err(e) = anchor.open_dir(at)
        && is_escape(&e)
    {
        return escape(e);
    }
    let shown = match target.scope() {
        Scope::Workspace => display_path(at),
        Scope::Outside => display_path(&Path::new("/").join(at)),
    };
    io::Error::other(format!(
        "the directory {shown} changed after its path was checked: it was replaced by a symbolic link, which \
         is not followed once a path was resolved; nothing was read or written"
    ))
}

fn dot_if_empty(path: &Path) -> &Path {
    if path.as_os_str().is_empty() { Path::new(".") } else { path }
}

fn is_escape(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied && error.to_string().contains("outside of the filesystem")
}

/// cap-std reports an escape attempt as a bare `PermissionDenied`; name it.
pub(crate) fn escape(error: io::Error) -> io::Error {
    if is_escape(&error) {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the path leads outside the workspace root (through a symbolic link or `..`), which is not allowed",
        )
    } else {
        error
    }
}

pub(crate) fn kind_of(file_type: cap_std::fs::FileType) -> FileKind {
    if file_type.is_symlink() {
        FileKind::Symlink
    } else if file_type.is_dir() {
        FileKind::Dir
    } else if file_type.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    }
}

pub(crate) fn info(meta: &Metadata) -> FileInfo {
    FileInfo {
        kind: kind_of(meta.file_type()),
        len: meta.len(),
        modified: meta.modified().ok().map(|t| t.into_std()),
        mode: Some(meta.mode()),
    }
}

/// Opens a regular file for reading without blocking on a FIFO or a device: anything but a
/// regular file is refused before it is opened, and again after (in case it was swapped in
/// meanwhile), and the open itself is non-blocking and never acquires a controlling terminal.
/// (Regular files ignore `O_NONBLOCK`, so reads behave as usual.)
pub(crate) fn open_regular(dir: &Dir, path: &Path) -> io::Result<std::fs::File> {
    not_special(&dir.metadata(path).map_err(escape)?)?;
    let mut options = OpenOptions::new();
    options.read(true).nonblock(true);
    #[cfg(unix)]
    options.custom_flags(nix::libc::O_NOCTTY);
    let file = dir.open_with(path, &options).map_err(escape)?;
    not_special(&file.metadata()?)?;
    Ok(file.into_std())
}

/// Opens the regular file `name` of `dir` without following a link: a name a listing found, or
/// the last name of a resolved path (where a link is one swapped in since). The open file is
/// checked (a FIFO, a device, a directory is refused); its information comes from it.
pub(crate) fn open_listed(dir: &Dir, name: &Path) -> io::Result<(std::fs::File, FileInfo)> {
    let mut options = OpenOptions::new();
    options.read(true).nonblock(true).follow(FollowSymlinks::No);
    #[cfg(unix)]
    options.custom_flags(nix::libc::O_NOCTTY);
    let file = dir.open_with(name, &options).map_err(escape)?;
    let meta = file.metadata()?;
    not_special(&meta)?;
    Ok((file.into_std(), info(&meta)))
}

pub(crate) fn not_special(meta: &Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(not_regular(kind_of(meta.file_type())))
}

/// The error for a file of `kind` where a regular file was expected.
pub(crate) fn not_regular(kind: FileKind) -> io::Error {
    io::Error::new(
        if kind == FileKind::Dir { io::ErrorKind::IsADirectory } else { io::ErrorKind::InvalidInput },
        format!("it is {}, not a regular file", kind.describe()),
    )
}
