//! The host's own file operations on paths a command could have prepared: through directory handles, never following a link, regular files only, bounded reads, new names made with `O_EXCL`.
//!
//! The checkpoint scan, its store and `undo` run in the host process, outside any sandbox, on
//! directories that sandboxed commands may write. Every operation here takes the handle of a
//! directory and one plain name in it: a name that is (or became) a symbolic link is never
//! followed, a file that is not regular is never read, and a file is created only under a new
//! random name (`O_CREAT | O_EXCL | O_NOFOLLOW`), its mode set on the descriptor, then renamed
//! into place through the same handle.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::fs::Dir;

#[cfg(unix)]
pub(crate) use unix::*;

/// What a `stat` said of an entry (symbolic links not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) kind: Kind,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    /// Type and permission bits, as `st_mode`.
    pub(crate) mode: u32,
    /// Modification and status change times, in nanoseconds since the epoch.
    pub(crate) mtime: i128,
    pub(crate) ctime: i128,
    pub(crate) uid: u32,
    /// Bytes of storage allocated to it (`st_blocks` * 512): far less than `size` in a sparse
    /// file.
    pub(crate) allocated: u64,
}

/// The kinds of entry the host tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Link,
    Other,
}

/// What reading a listed file found.
#[derive(Debug)]
pub(crate) enum Content {
    /// Its bytes, and the `stat` of the descriptor they were read from.
    Bytes(Vec<u8>, Stat),
    /// It holds more than the limit: not read past it.
    TooLarge(Stat),
    /// It is gone, or is no longer the regular file listed (a link, a FIFO, a device, another
    /// file renamed over it): nothing was read.
    Replaced,
}

/// Why a directory beneath a root could not be opened.
#[derive(Debug)]
pub(crate) enum Beneath {
    /// This directory (relative to the root) does not exist.
    Missing(PathBuf),
    /// This entry (relative to the root) is a symbolic link (`link`) or a file, not a directory.
    NotDir { at: PathBuf, link: bool },
    /// Any other error.
    Io(io::Error),
}

impl fmt::Display for Beneath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Beneath::Missing(at) => write!(f, "the directory {} does not exist", at.display()),
            Beneath::NotDir { at, link: true } => write!(f, "its parent {} is a symbolic link", at.display()),
            Beneath::NotDir { at, link: false } => {
                write!(f, "its parent {} is not a directory", at.display())
            }
            Beneath::Io(e) => e.fmt(f),
        }
    }
}

impl From<Beneath> for io::Error {
    fn from(beneath: Beneath) -> io::Error {
        match beneath {
            Beneath::Io(e) => e,
            Beneath::Missing(_) => io::Error::new(io::ErrorKind::NotFound, beneath.to_string()),
            Beneath::NotDir { .. } => io::Error::new(io::ErrorKind::NotADirectory, beneath.to_string()),
        }
    }
}

/// `name` when it is one plain name (not empty, no `/`, not `.` or `..`), which an operation
/// beneath a directory cannot leave it through.
pub(crate) fn plain(name: &OsStr) -> io::Result<&OsStr> {
    let bytes = name.as_encoded_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not the name of an entry of a directory"),
        ));
    }
    Ok(name)
}

/// The parent of `rel` (a path relative to a root, made of plain names) and its last name.
pub(crate) fn split(rel: &Path) -> io::Result<(&Path, &OsStr)> {
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a plain path beneath the root", rel.display()),
        ));
    }
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "the root itself has no parent")),
    }
}

/// A new name for a temporary file: `prefix`, 64 random bits, `.tmp`.
fn temporary_name(prefix: &str) -> OsString {
    OsString::from(format!("{prefix}.{:016x}.tmp", crate::text::random_u64()))
}

#[cfg(unix)]
mod unix {
    use std::io::{Read as _, Write as _};
    use std::os::fd::OwnedFd;

    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use rustix::io::Errno;

    use super::*;

    /// A directory, for reading and as the base of `*at` calls, never through a link.
    const DIR: OFlags =
        OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

    fn dir_from(fd: OwnedFd) -> Dir {
        Dir::from_std_file(std::fs::File::from(fd))
    }

    fn stat_of(stat: &rustix::fs::Stat) -> Stat {
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        };
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        Stat {
            kind,
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            size: stat.st_size as u64,
            mode: stat.st_mode as u32,
            mtime: i128::from(stat.st_mtime as i64) * 1_000_000_000 + i128::from(stat.st_mtime_nsec as i64),
            ctime: i128::from(stat.st_ctime as i64) * 1_000_000_000 + i128::from(stat.st_ctime_nsec as i64),
            uid: stat.st_uid as u32,
            allocated: (stat.st_blocks as u64).saturating_mul(512),
        }
    }

    /// Opens the directory at `path`, a path the host chose (a workspace root, the place of its
    /// own state): links on the way to it are followed, as its user meant them.
    pub(crate) fn open_dir_path(path: &Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(dir_from(rustix::fs::open(path, flags, Mode::empty())?))
    }

    /// Opens the subdirectory `name` of `parent`, refused when `name` is a link or not a directory.
    pub(crate) fn open_subdir(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
        Ok(dir_from(rustix::fs::openat(parent, plain(name)?, DIR, Mode::empty())?))
    }

    /// Opens the directory `rel` beneath `root`, one name at a time, never through a link; with
    /// `create`, the directories missing on the way are made (with the umask's mode).
    pub(crate) fn open_beneath(root: &Dir, rel: &Path, create: bool) -> Result<Dir, Beneath> {
        let mut dir =
            dir_from(rustix::fs::openat(root, ".", DIR, Mode::empty()).map_err(|e| Beneath::Io(e.into()))?);
        let mut at = PathBuf::new();
        for component in rel.components() {
            let Component::Normal(name) = component else {
                return Err(Beneath::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain path beneath the root", rel.display()),
                )));
            };
            at.push(name);
            let mut opened = rustix::fs::openat(&dir, name, DIR, Mode::empty());
            if create && matches!(opened, Err(Errno::NOENT)) {
                match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(Beneath::Io(e.into())),
                }
                opened = rustix::fs::openat(&dir, name, DIR, Mode::empty());
            }
            dir = match opened {
                Ok(fd) => dir_from(fd),
                Err(Errno::NOENT) => return Err(Beneath::Missing(at)),
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    let link = stat_at(&dir, name).is_ok_and(|s| s.kind == Kind::Link);
                    return Err(Beneath::NotDir { at, link });
                }
                Err(e) => return Err(Beneath::Io(e.into())),
            };
        }
        Ok(dir)
    }

    /// What `name` in `dir` is, not following a link.
    pub(crate) fn stat_at(dir: &Dir, name: &OsStr) -> io::Result<Stat> {
        Ok(stat_of(&rustix::fs::statat(dir, plain(name)?, AtFlags::SYMLINK_NOFOLLOW)?))
    }

    /// What the directory `dir` is.
    pub(crate) fn stat_dir(dir: &Dir) -> io::Result<Stat> {
        Ok(stat_of(&rustix::fs::fstat(dir)?))
    }

    /// Reads the regular file `name` of `dir`, at most `max` bytes: opened without following a
    /// link, without blocking (a FIFO) and without taking a terminal, then `fstat`: anything but
    /// a regular file, or a file other than the one `listed` (device, inode), is not read.
    pub(crate) fn read_file(dir: &Dir, name: &OsStr, max: u64, listed: Option<&Stat>) -> io::Result<Content> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(dir, plain(name)?, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Gone, a link now, or a device or socket that cannot be opened this way.
            Err(Errno::NOENT | Errno::LOOP | Errno::NXIO | Errno::NOTDIR | Errno::OPNOTSUPP) => {
                return Ok(Content::Replaced);
            }
            Err(e) => return Err(e.into()),
        };
        let stat = stat_of(&rustix::fs::fstat(&fd)?);
        if stat.kind != Kind::File || listed.is_some_and(|l| (l.dev, l.ino) != (stat.dev, stat.ino)) {
            return Ok(Content::Replaced);
        }
        if stat.size > max {
            return Ok(Content::TooLarge(stat));
        }
        let mut bytes = Vec::with_capacity(stat.size as usize);
        std::fs::File::from(fd).take(max.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Ok(Content::TooLarge(stat));
        }
        Ok(Content::Bytes(bytes, stat))
    }

    /// The target of the symbolic link `name` of `dir`; `None` when it is no longer a link.
    pub(crate) fn read_link(dir: &Dir, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        match rustix::fs::readlinkat(dir, plain(name)?, Vec::new()) {
            Ok(target) => Ok(Some(target.into_bytes())),
            Err(Errno::NOENT | Errno::INVAL) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates a file under a new random name beginning with `prefix` in `dir`
    /// (`O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing planted there is opened), with `mode`.
    pub(crate) fn create_temporary(
        dir: &Dir,
        prefix: &str,
        mode: u32,
    ) -> io::Result<(OsString, std::fs::File)> {
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let mut last = None;
        for _ in 0..16 {
            let name = temporary_name(prefix);
            match rustix::fs::openat(dir, &name, flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => return Ok((name, std::fs::File::from(fd))),
                Err(Errno::EXIST) => last = Some(Errno::EXIST),
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.unwrap_or(Errno::EXIST).into())
    }

    /// Puts a file holding `bytes` at `name` in `dir`: written to a new temporary file (mode
    /// `0600`), its permission bits set to `mode` on the descriptor (when given; the `rwx` bits
    /// only, never setuid, setgid or sticky, which a command may have given the file recorded),
    /// then renamed over `name`: the one change, made only while the call doing this work was
    /// not stopped ([`stop::commit`](crate::fs::stop::commit)).
    pub(crate) fn replace_file(
        dir: &Dir,
        name: &OsStr,
        bytes: &[u8],
        mode: Option<u32>,
        prefix: &str,
    ) -> io::Result<()> {
        let name = plain(name)?;
        let (temporary, mut file) = create_temporary(dir, prefix, 0o600)?;
        let written = (|| {
            file.write_all(bytes)?;
            if let Some(mode) = mode {
                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & 0o777))?;
            }
            crate::fs::stop::commit(|| Ok(rustix::fs::renameat(dir, &temporary, dir, name)?))
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(dir, &temporary, AtFlags::empty());
        }
        written
    }

    /// Removes the entry `name` of `dir` that is not a directory (a link itself, not its target).
    pub(crate) fn remove_file(dir: &Dir, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(dir, plain(name)?, AtFlags::empty())?)
    }

    /// Removes the empty directory `name` of `dir`.
    pub(crate) fn remove_dir(dir: &Dir, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(dir, plain(name)?, AtFlags::REMOVEDIR)?)
    }

    /// Makes the directory `name` in `dir` with `mode` (less the umask); an error if anything
    /// is there already.
    pub(crate) fn make_dir(dir: &Dir, name: &OsStr, mode: u32) -> io::Result<()> {
        Ok(rustix::fs::mkdirat(dir, plain(name)?, Mode::from_raw_mode(mode))?)
    }

    /// Makes a symbolic link `name` in `dir` to `target`.
    pub(crate) fn make_link(dir: &Dir, name: &OsStr, target: &[u8]) -> io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        Ok(rustix::fs::symlinkat(OsStr::from_bytes(target), dir, plain(name)?)?)
    }

    /// The names in `dir`.
    pub(crate) fn names(dir: &Dir) -> io::Result<Vec<OsString>> {
        Ok(dir.entries()?.filter_map(Result::ok).map(|entry| entry.file_name()).collect())
    }

    /// Removes `name` in `dir` and, when it is a directory, everything beneath it, never
    /// following a link (a link is removed itself). Directories deeper than 64 levels below it
    /// are left (none of the host's own is), so that a tree made to be deep cannot exhaust the
    /// stack.
    pub(crate) fn remove_tree(dir: &Dir, name: &OsStr) -> io::Result<()> {
        remove_tree_within(dir, name, 64)
    }

    fn remove_tree_within(dir: &Dir, name: &OsStr, depth: usize) -> io::Result<()> {
        if stat_at(dir, name)?.kind != Kind::Dir {
            return remove_file(dir, name);
        }
        if depth > 0 {
            let sub = open_subdir(dir, name)?;
            for entry in names(&sub)? {
                let _ = remove_tree_within(&sub, &entry, depth - 1);
            }
        }
        remove_dir(dir, name)
    }

    /// The effective user of this process.
    pub(crate) fn user() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    /// A new directory `prefix-<random>` in `parent`, made with mode `0700` (it did not exist:
    /// nothing can have been planted in it), and its handle.
    pub(crate) fn make_private_dir(parent: &Dir, prefix: &str) -> io::Result<(OsString, Dir)> {
        for _ in 0..16 {
            let name = OsString::from(format!("{prefix}{:016x}", crate::text::random_u64()));
            match make_dir(parent, &name, 0o700) {
                Ok(()) => return Ok((name.clone(), open_private(parent, &name)?)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(io::ErrorKind::AlreadyExists, "no new name was free for a private directory"))
    }

    /// Opens the subdirectory `name` of `parent` as a private one: made with `0700` when missing,
    /// made `0700` when it is ours and open to others, refused when it belongs to another user.
    pub(crate) fn open_private(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
        match make_dir(parent, name, 0o700) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let dir = open_subdir(parent, name)?;
        let stat = stat_dir(&dir)?;
        if stat.uid != user() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} belongs to another user", Path::new(name).display()),
            ));
        }
        if stat.mode & 0o077 != 0 {
            rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o700))?;
        }
        Ok(dir)
    }

    /// Opens (making it with `0700` when missing) the directory at `path`, which the host chose
    /// for its own state; refused unless it is ours and no one else may write it.
    pub(crate) fn open_state_dir(path: &Path) -> io::Result<Dir> {
        match rustix::fs::mkdir(path, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(Errno::NOENT) => {
                if let Some(parent) = path.parent() {
                    for ancestor in parent.ancestors().collect::<Vec<_>>().into_iter().rev() {
                        if ancestor.as_os_str().is_empty() {
                            continue;
                        }
                        match rustix::fs::mkdir(ancestor, Mode::from_raw_mode(0o700)) {
                            Ok(()) | Err(Errno::EXIST) => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                }
                match rustix::fs::mkdir(path, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
        let dir = dir_from(rustix::fs::open(path, DIR, Mode::empty())?);
        let stat = stat_dir(&dir)?;
        if stat.uid != user() || stat.mode & 0o022 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a private directory (it must belong to this user and be writable by no one else)",
                    path.display()
                ),
            ));
        }
        Ok(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    /// The std::fs path functions, and the `Path` methods that call them: each resolves a path
    /// string and follows links on the way.
    const PATH_FUNCTIONS: &[&str] = &[
        "std::fs::read",
        "std::fs::write",
        "std::fs::remove",
        "std::fs::rename",
        "std::fs::create_dir",
        "std::fs::metadata",
        "std::fs::symlink_metadata",
        "std::fs::canonicalize",
        "std::fs::copy",
        "std::fs::hard_link",
        "std::fs::set_permissions",
        "std::fs::OpenOptions",
        "std::fs::DirBuilder",
        "File::open(",
        "File::create(",
        "use std::fs",
        "unix::fs::symlink",
        ".exists()",
        ".is_dir()",
        ".is_file()",
        ".is_symlink()",
        ".symlink_metadata(",
        ".read_link(",
        ".canonicalize(",
        "read_dir(",
        "remove_dir_all",
    ];

    /// The lines of `source` before its tests, comments left out, that call a path function.
    fn path_calls(source: &str) -> Vec<String> {
        let code = source.rsplit_once("#[cfg(test)]\nmod tests").map_or(source, |(code, _)| code);
        code.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
            // The workspace's own operations (`ops.`) are confined to its root by handles.
            .filter(|(_, line)| {
                PATH_FUNCTIONS.iter().any(|f| line.replace(&format!("ops{f}"), "").contains(f))
            })
            .map(|(n, line)| format!("{}: {}", n + 1, line.trim()))
            .collect()
    }

    #[test]
    fn the_host_side_modules_call_no_path_function() {
        let sample = "fn f() {\n    // std::fs::write in a comment is fine\n    std::fs::write(p, b)?;\n}\n\
                      #[cfg(test)]\nmod tests {\n    std::fs::read(p);\n}\n";
        assert_eq!(path_calls(sample), ["3: std::fs::write(p, b)?;"], "the check finds a call");
        assert_eq!(
            path_calls("let a = ops.symlink_metadata(t);\nlet b = path.symlink_metadata();\n").len(),
            1
        );
        for (name, source) in [
            ("fs/host.rs", include_str!("host.rs")),
            ("checkpoint/mod.rs", include_str!("../checkpoint/mod.rs")),
            ("checkpoint/record.rs", include_str!("../checkpoint/record.rs")),
            ("checkpoint/scan.rs", include_str!("../checkpoint/scan.rs")),
            ("checkpoint/store.rs", include_str!("../checkpoint/store.rs")),
            ("checkpoint/undo.rs", include_str!("../checkpoint/undo.rs")),
            ("checkpoint/watch.rs", include_str!("../checkpoint/watch.rs")),
            ("tools/undo.rs", include_str!("../tools/undo.rs")),
            ("tools/checkpoints.rs", include_str!("../tools/checkpoints.rs")),
        ] {
            assert_eq!(path_calls(source), Vec::<String>::new(), "{name} calls a path function");
        }
    }

    #[test]
    fn a_directory_beneath_the_root_is_never_reached_through_a_link() {
        let root = TempDir::new();
        let outside = TempDir::new();
        std::fs::create_dir_all(root.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("a/link")).unwrap();
        std::fs::write(root.path().join("a/file"), "").unwrap();
        let dir = open_dir_path(root.path()).unwrap();
        assert!(open_beneath(&dir, Path::new("a/b"), false).is_ok());
        let refused =
            |rel: &str, create: bool| open_beneath(&dir, Path::new(rel), create).unwrap_err().to_string();
        assert_eq!(refused("a/link/x", true), "its parent a/link is a symbolic link");
        assert_eq!(refused("a/file/x", false), "its parent a/file is not a directory");
        assert_eq!(refused("a/missing/x", false), "the directory a/missing does not exist");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing made through the link");
        assert!(open_beneath(&dir, Path::new("a/new/deeper"), true).is_ok());
        assert!(std::fs::symlink_metadata(root.path().join("a/new/deeper")).unwrap().is_dir());
    }

    #[test]
    fn only_the_regular_file_listed_is_read_and_no_further_than_the_limit() {
        let root = TempDir::new();
        std::fs::write(root.path().join("file"), "0123456789").unwrap();
        std::fs::write(root.path().join("other"), "other").unwrap();
        std::os::unix::fs::symlink("file", root.path().join("link")).unwrap();
        nix::unistd::mkfifo(&root.path().join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600))
            .unwrap();
        let dir = open_dir_path(root.path()).unwrap();
        let name = OsStr::new;
        let listed = stat_at(&dir, name("file")).unwrap();
        assert!(
            matches!(read_file(&dir, name("file"), 10, Some(&listed)).unwrap(), Content::Bytes(b, _) if b == b"0123456789")
        );
        assert!(matches!(read_file(&dir, name("file"), 9, Some(&listed)).unwrap(), Content::TooLarge(_)));
        assert!(matches!(read_file(&dir, name("link"), 10, None).unwrap(), Content::Replaced));
        assert!(matches!(read_file(&dir, name("fifo"), 10, None).unwrap(), Content::Replaced));
        // Another file renamed over the name listed.
        std::fs::rename(root.path().join("other"), root.path().join("file")).unwrap();
        assert!(matches!(read_file(&dir, name("file"), 10, Some(&listed)).unwrap(), Content::Replaced));
        assert_eq!(read_link(&dir, name("link")).unwrap(), Some(b"file".to_vec()));
    }

    #[test]
    fn a_file_is_replaced_through_a_new_name_never_through_a_link_planted() {
        use std::os::unix::fs::PermissionsExt;
        let root = TempDir::new();
        let outside = TempDir::new();
        std::fs::write(outside.path().join("victim"), "untouched").unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), root.path().join("target")).unwrap();
        let dir = open_dir_path(root.path()).unwrap();
        replace_file(&dir, OsStr::new("target"), b"written", Some(0o640), ".t").unwrap();
        assert_eq!(std::fs::read_to_string(outside.path().join("victim")).unwrap(), "untouched");
        let meta = std::fs::symlink_metadata(root.path().join("target")).unwrap();
        assert!(meta.is_file() && meta.permissions().mode() & 0o7777 == 0o640);
        assert_eq!(std::fs::read_to_string(root.path().join("target")).unwrap(), "written");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn a_file_put_back_gets_the_permission_bits_but_not_setuid_setgid_or_sticky() {
        use std::os::unix::fs::PermissionsExt;
        let root = TempDir::new();
        let dir = open_dir_path(root.path()).unwrap();
        replace_file(&dir, OsStr::new("tool"), b"x", Some(0o100_000 | 0o7755), ".t").unwrap();
        let meta = std::fs::symlink_metadata(root.path().join("tool")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
    }
}
