//! The protected names below the top of a writable root: a repository checked out inside the
//! workspace (`vendor/lib/.git`), a package's agent settings (`packages/app/.claude`) or
//! editor tasks (`web/.vscode`) run what they name when the user works in that directory, as
//! those at the top do when the user works there.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The most protected names looked for below the top of one writable root protects; past it
/// the command is refused (a command could otherwise make that many names to have one that was
/// there before it go unprotected).
pub(crate) const MAX_NESTED: usize = 1024;

/// Which names are protected: literal names, and patterns of names (`.env.*`).
pub(crate) struct Names {
    literal: Vec<OsString>,
    patterns: globset::GlobSet,
    /// Every first component as given, sorted: what a look is remembered by.
    key: Vec<OsString>,
}

impl Names {
    /// The first components of the relative protected paths `protected`.
    pub(crate) fn first_of<'a>(protected: impl IntoIterator<Item = &'a Path>) -> Names {
        let mut literal = Vec::new();
        let mut patterns = globset::GlobSetBuilder::new();
        let mut key = Vec::new();
        for path in protected {
            let Some(first) = path.components().next() else { continue };
            key.push(first.as_os_str().to_owned());
            let text = first.as_os_str().to_string_lossy();
            if text.contains(['*', '?', '[']) {
                if let Ok(glob) = globset::GlobBuilder::new(&text).literal_separator(true).build() {
                    patterns.add(glob);
                }
            } else {
                literal.push(first.as_os_str().to_owned());
            }
        }
        key.sort();
        key.dedup();
        Names { literal, patterns: patterns.build().unwrap_or_else(|_| globset::GlobSet::empty()), key }
    }

    /// Whether `name` is one of them.
    pub(crate) fn matches(&self, name: &OsStr) -> bool {
        self.literal.iter().any(|l| l == name) || self.patterns.is_match(name)
    }
}

/// How each directory is opened: to be listed, never through a link.
#[cfg(unix)]
const DIRECTORY: nix::fcntl::OFlag = nix::fcntl::OFlag::O_RDONLY
    .union(nix::fcntl::OFlag::O_DIRECTORY)
    .union(nix::fcntl::OFlag::O_NOFOLLOW)
    .union(nix::fcntl::OFlag::O_CLOEXEC);

/// A directory's identity and last change (device, inode, modification and change times).
#[cfg(unix)]
type Stamp = (u64, u64, i64, i64, i64, i64);

#[cfg(unix)]
fn stamp(stat: &nix::sys::stat::FileStat) -> Stamp {
    #[allow(clippy::unnecessary_cast)]
    (
        stat.st_dev as u64,
        stat.st_ino as u64,
        stat.st_mtime,
        stat.st_mtime_nsec,
        stat.st_ctime,
        stat.st_ctime_nsec,
    )
}

/// A look below a root's top: each directory listed with its stamp then, and what was found.
#[cfg(unix)]
type Look = (Vec<(PathBuf, Stamp)>, Result<Vec<PathBuf>, Vec<PathBuf>>);

/// The entries named as one of `names` in the directories from one to `depth - 1` levels below
/// `root`: with `depth` 3, `a/.git` and `a/b/.git`, not `.git` itself nor `a/b/c/.git`; and the
/// directories on the way this process may not list, whatever their name. Each directory is
/// opened from its parent's handle without following a link, and none named as a protected
/// name is looked inside; an `Err` with what was found when there are more than
/// [`MAX_NESTED`]. The answer is kept while no directory listed changes (a directory whose
/// entries change gets new times; one replaced, or a link on the way, another inode or
/// type), so that a large tree is listed again only where it changed: checking costs a
/// `lstat` per directory, listing one a read of every entry.
#[cfg(unix)]
pub(crate) fn below_top(root: &Path, names: &Names, depth: usize) -> Result<Vec<PathBuf>, Vec<PathBuf>> {
    type Looks = std::collections::HashMap<(PathBuf, usize, Vec<OsString>), Look>;
    static LOOKS: std::sync::OnceLock<std::sync::Mutex<Looks>> = std::sync::OnceLock::new();
    let key = (root.to_path_buf(), depth, names.key.clone());
    let looks = LOOKS.get_or_init(Default::default);
    if let Some((listed, found)) = looks.lock().unwrap_or_else(|p| p.into_inner()).get(&key)
        && listed.iter().all(|(dir, was)| nix::sys::stat::lstat(dir).is_ok_and(|now| stamp(&now) == *was))
    {
        return found.clone();
    }
    let (mut listed, mut found) = (Vec::new(), Vec::new());
    let result = match nix::dir::Dir::open(root, DIRECTORY, nix::sys::stat::Mode::empty()) {
        Ok(mut dir) => look(&mut dir, root, 1, depth, names, &mut listed, &mut found),
        Err(_) => Ok(()),
    };
    found.sort();
    let result = match result {
        Ok(()) => Ok(found),
        Err(()) => Err(found),
    };
    looks.lock().unwrap_or_else(|p| p.into_inner()).insert(key, (listed, result.clone()));
    result
}

#[cfg(not(unix))]
pub(crate) fn below_top(_: &Path, _: &Names, _: usize) -> Result<Vec<PathBuf>, Vec<PathBuf>> {
    Ok(Vec::new())
}

/// Adds to `found` what [`below_top`] finds in `dir` (at `path`, whose entries are `level`
/// levels below the root) and beneath it, and to `listed` each directory listed; `Err` past
/// [`MAX_NESTED`].
#[cfg(unix)]
fn look(
    dir: &mut nix::dir::Dir,
    path: &Path,
    level: usize,
    depth: usize,
    names: &Names,
    listed: &mut Vec<(PathBuf, Stamp)>,
    found: &mut Vec<PathBuf>,
) -> Result<(), ()> {
    use nix::dir::Type;
    use std::os::unix::ffi::OsStrExt;
    // Taken before the listing: a change made while it is read gives the directory new times.
    if let Ok(stat) = nix::sys::stat::fstat(&*dir) {
        listed.push((path.to_path_buf(), stamp(&stat)));
    }
    let mut subdirs = Vec::new();
    for entry in dir.iter().flatten() {
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        if names.matches(OsStr::from_bytes(name.to_bytes())) {
            // Those at the top are the policy's own.
            if level > 1 {
                found.push(path.join(OsStr::from_bytes(name.to_bytes())));
                if found.len() > MAX_NESTED {
                    return Err(());
                }
            }
        } else if level < depth && matches!(entry.file_type(), Some(Type::Directory) | None) {
            subdirs.push(name.to_owned());
        }
    }
    for name in subdirs {
        let at = path.join(OsStr::from_bytes(name.to_bytes()));
        match nix::dir::Dir::openat(&*dir, name.as_c_str(), DIRECTORY, nix::sys::stat::Mode::empty()) {
            Ok(mut sub) => look(&mut sub, &at, level + 1, depth, names, listed, found)?,
            // One this process may not list (`chmod 000` by a command, to hide what is in it)
            // is found as a whole, to be read-only as a whole.
            Err(nix::errno::Errno::EACCES | nix::errno::Errno::EPERM) => {
                // Its mode changing (`chmod 755` again) is a change to look again for.
                if let Ok(stat) =
                    nix::sys::stat::fstatat(&*dir, name.as_c_str(), nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                {
                    listed.push((at.clone(), stamp(&stat)));
                }
                found.push(at);
                if found.len() > MAX_NESTED {
                    return Err(());
                }
            }
            // A link, or what is no longer a directory, fails to open.
            Err(_) => {}
        }
    }
    Ok(())
}

/// Of what [`below_top`] finds, those that `path` lies in or is, on its text and the links on
/// its way as they are now (the first link stops the look, as it stops [`below_top`]).
pub(crate) fn on_the_way(root: &Path, path: &Path, names: &Names, depth: usize) -> Vec<PathBuf> {
    let Ok(rest) = path.strip_prefix(root) else { return Vec::new() };
    let mut at = root.to_path_buf();
    for (level, part) in rest.components().enumerate().take(depth) {
        at.push(part);
        let Ok(meta) = std::fs::symlink_metadata(&at) else { break };
        if names.matches(part.as_os_str()) {
            return if level > 0 { vec![at] } else { Vec::new() };
        }
        if !meta.is_dir() {
            break;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_below_the_top_are_found_to_the_depth_without_following_links() {
        let root = std::env::temp_dir().join(format!("nested-{}", std::process::id()));
        for dir in [".git/x/.claude", "a/.git", "a/b/.claude", "a/b/c/.git", "d/.env.local", "e/f"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("a/CLAUDE.md"), "").unwrap();
        std::os::unix::fs::symlink(root.join("e"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("e/f/g")).unwrap();
        let protected = [".git", ".claude", "CLAUDE.md", ".env.*"].map(Path::new);
        let names = Names::first_of(protected);
        let found = below_top(&root, &names, 3).unwrap();
        let depth_two = below_top(&root, &names, 2).unwrap();
        let top_only = below_top(&root, &names, 1).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        let relative: Vec<_> = found.iter().map(|p| p.strip_prefix(&root).unwrap().to_owned()).collect();
        // Not `a/b/c/.git` (a level deeper), not inside `.git`, not through either link.
        let expected = ["a/.git", "a/CLAUDE.md", "a/b/.claude", "d/.env.local"].map(PathBuf::from);
        assert_eq!(relative, expected);
        assert_eq!(depth_two.len(), 3, "{depth_two:?}");
        assert!(top_only.is_empty());
    }

    #[test]
    fn a_change_anywhere_listed_is_seen_by_the_next_look() {
        let root = std::env::temp_dir().join(format!("nested-change-{}", std::process::id()));
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let names = Names::first_of([Path::new(".claude")]);
        let look = || below_top(&root, &names, 3).unwrap();
        let mut seen = vec![look()];
        // Each change right after a look, within the same clock tick as likely as not.
        std::fs::create_dir(root.join("a/b/.claude")).unwrap();
        seen.push(look());
        std::fs::rename(root.join("a"), root.join("moved")).unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        seen.push(look());
        std::fs::remove_dir(root.join("a")).unwrap();
        std::os::unix::fs::symlink(root.join("moved"), root.join("a")).unwrap();
        seen.push(look());
        std::fs::remove_file(root.join("a")).unwrap();
        std::fs::rename(root.join("moved"), root.join("a")).unwrap();
        seen.push(look());
        std::fs::remove_dir_all(&root).unwrap();
        let (claude, moved) = (vec![root.join("a/b/.claude")], vec![root.join("moved/b/.claude")]);
        // Not through the link.
        assert_eq!(seen, [vec![], claude.clone(), moved.clone(), moved, claude]);
    }

    /// A command could `chmod 000` a directory to hide the repository in it from an ordinary
    /// user's look; such a directory is found as a whole (root lists it anyway).
    #[test]
    fn a_directory_that_cannot_be_listed_is_found_as_a_whole() {
        use std::os::unix::fs::PermissionsExt;
        if nix::unistd::geteuid().is_root() {
            eprintln!("skipped: root lists every directory");
            return;
        }
        let root = std::env::temp_dir().join(format!("nested-closed-{}", std::process::id()));
        std::fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
        let names = Names::first_of([Path::new(".git")]);
        let open = below_top(&root, &names, 3).unwrap();
        std::fs::set_permissions(root.join("vendor"), std::fs::Permissions::from_mode(0o000)).unwrap();
        let closed = below_top(&root, &names, 3).unwrap();
        std::fs::set_permissions(root.join("vendor"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let reopened = below_top(&root, &names, 3).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(open, [root.join("vendor/lib/.git")]);
        assert_eq!(closed, [root.join("vendor")]);
        assert_eq!(reopened, open);
    }

    #[test]
    fn past_the_most_names_the_walk_says_so() {
        let root = std::env::temp_dir().join(format!("nested-many-{}", std::process::id()));
        for n in 0..=MAX_NESTED {
            std::fs::create_dir_all(root.join(format!("d{n}/.claude"))).unwrap();
        }
        let names = Names::first_of([Path::new(".claude")]);
        let result = below_top(&root, &names, 3);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(result.expect_err("more than the most").len(), MAX_NESTED + 1);
    }
}
