//! What commands may not read ([`SandboxPolicy::unreadable`]) as the file system is now, and
//! what is read back within it ([`SandboxPolicy::readable`], the writable roots).

use std::path::{Path, PathBuf};

use crate::policy::{SandboxMode, SandboxPolicy};

/// The mounts that hide a policy's unreadable paths.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// Directories each covered by an empty file system, outermost first, with the paths bound
    /// back in it (those whose nearest hidden directory it is).
    pub(crate) dirs: Vec<(PathBuf, Vec<PathBuf>)>,
    /// Anything else (a file, a socket, a device), each covered by an empty file.
    pub(crate) files: Vec<PathBuf>,
}

impl Unreadable {
    /// Every path hidden.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.dirs.iter().map(|(dir, _)| dir).chain(&self.files)
    }
}

/// At most this many entries of one directory are hidden for one pattern of names.
pub(crate) const MAX_MATCHES: usize = 256;

/// The policy's unreadable paths as named, each pattern of names in its last component
/// (`*`, `?`, `[...]`) replaced by the entries of its directory it matches now; `Err` names a
/// pattern that matches more than [`MAX_MATCHES`] entries.
pub(crate) fn named(policy: &SandboxPolicy) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for path in &policy.unreadable {
        out.extend(matching(path, MAX_MATCHES)?);
    }
    Ok(out)
}

/// `path` itself, or when its last component is a pattern of names, the entries of its
/// directory it matches now; `Err` when more than `max` do.
pub(crate) fn matching(path: &Path, max: usize) -> Result<Vec<PathBuf>, String> {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let Some(dir) = path.parent().filter(|_| name.contains(['*', '?', '['])) else {
        return Ok(vec![path.to_path_buf()]);
    };
    // A pattern that is not one (an unclosed `[`) matches nothing, as its name would not.
    let Ok(glob) = globset::GlobBuilder::new(&name).literal_separator(true).build() else {
        return Ok(Vec::new());
    };
    let glob = glob.compile_matcher();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        if glob.is_match(entry.file_name()) {
            if out.len() == max {
                return Err(format!(
                    "more than {max} entries of {} match the unreadable pattern `{name}`: name them by a \
                     narrower pattern, or their directory",
                    dir.display()
                ));
            }
            out.push(dir.join(entry.file_name()));
        }
    }
    Ok(out)
}

/// What `path` resolves to now, when a symbolic link on its way makes that differ from its
/// text.
pub(crate) fn through_link(path: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    (real != crate::lexically_normal(path)).then_some(real)
}

/// Whether hiding `real`, which `named` resolves to, is the policy's to do: always, unless a
/// link inside a writable root (which a command may have made) leads outside them somewhere it
/// did not lead when the path was added.
fn followed(policy: &SandboxPolicy, writable: &[PathBuf], named: &Path, real: &Path) -> bool {
    let inside = |path: &Path| writable.iter().any(|root| path.starts_with(root));
    let named = crate::lexically_normal(named);
    named == real
        || !inside(&named)
        || inside(real)
        || policy.unreadable_links.iter().any(|(was, led)| *was == named && led == real)
}

/// Resolves the policy's unreadable ([`named`]) and readable paths that exist now (links
/// followed, as a mount on them would) and keeps those that change anything: of the paths
/// above a path, the deepest decides, so a path denied beneath a denied one, or allowed beneath
/// an allowed one or where nothing is denied, adds nothing. A path named both ways is readable.
pub(crate) fn plan(policy: &SandboxPolicy) -> Result<Unreadable, String> {
    if policy.unreadable.is_empty() || policy.mode == SandboxMode::Off {
        return Ok(Unreadable::default());
    }
    let real = |path: &PathBuf| std::fs::canonicalize(path).ok();
    let writable = policy.writable();
    // (path, readable)
    let mut entries: Vec<(PathBuf, bool)> = named(policy)?
        .iter()
        .filter_map(|named| real(named).filter(|real| followed(policy, &writable, named, real)))
        .map(|p| (p, false))
        .collect();
    entries.extend(policy.readable.iter().chain(&writable).filter_map(real).map(|p| (p, true)));
    // Sorted by path, an entry's ancestors come before it; on the same path, readable first.
    entries.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    entries.dedup_by(|later, earlier| later.0 == earlier.0);
    let nearest = |i: usize| (0..i).rev().find(|&j| entries[i].0.starts_with(&entries[j].0));
    let kept: Vec<&(PathBuf, bool)> = (0..entries.len())
        .filter(|&i| match nearest(i) {
            Some(j) => entries[j].1 != entries[i].1,
            None => !entries[i].1,
        })
        .map(|i| &entries[i])
        .collect();
    let mut out = Unreadable::default();
    for (index, (path, readable)) in kept.iter().enumerate() {
        if *readable {
            continue;
        }
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            out.files.push(path.clone());
            continue;
        }
        // Kept entries alternate along a branch: what is read back here is each readable path
        // whose nearest kept ancestor this directory is.
        let within = kept[index + 1..]
            .iter()
            .enumerate()
            .filter(|(_, (inner, inner_readable))| *inner_readable && inner.starts_with(path))
            .filter(|(k, (inner, _))| {
                !kept[index + 1..index + 1 + k].iter().any(|(between, _)| inner.starts_with(between))
            })
            .map(|(_, (inner, _))| inner.clone())
            .collect();
        out.dirs.push((path.clone(), within));
    }
    out.dirs.sort_by_key(|(dir, _)| depth(dir));
    Ok(out)
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory tree of its own, removed when dropped.
    struct Tree(PathBuf);

    impl Tree {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tree() -> Tree {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = Tree(std::env::temp_dir().join(format!("unreadable-{}-{n}", std::process::id())));
        for sub in ["home/.ssh", "home/src/app/secrets", "home/src/lib", "home/docs", "ws/private"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("home/.netrc"), "machine x").unwrap();
        std::fs::write(dir.path().join("ws/.env"), "KEY=1").unwrap();
        dir
    }

    #[test]
    fn the_deepest_path_named_decides_and_what_adds_nothing_is_dropped() {
        let dir = tree();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let policy = SandboxPolicy::read_only()
            .with_unreadable(home.clone())
            .with_unreadable(home.join(".ssh"))
            .with_unreadable(home.join(".netrc"))
            .with_readable(home.join("src"))
            .with_readable(home.join("src/lib"))
            .with_unreadable(home.join("src/app/secrets"))
            .with_unreadable(root.join("absent"))
            .with_readable(root.join("ws"));
        let plan = plan(&policy).unwrap();
        assert_eq!(
            plan.dirs,
            vec![(home.clone(), vec![home.join("src")]), (home.join("src/app/secrets"), vec![])],
            "{plan:?}"
        );
        assert!(plan.files.is_empty(), "{plan:?}");
    }

    #[test]
    fn files_are_covered_and_the_writable_roots_are_read_back() {
        let dir = tree();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        let policy = SandboxPolicy::workspace_write(ws.clone())
            .with_unreadable(root.clone())
            .with_unreadable(ws.join(".env"))
            .with_unreadable(ws.join("private"))
            .with_readable(ws.join("private"));
        let plan = plan(&policy).unwrap();
        assert_eq!(plan.dirs, vec![(root.clone(), vec![ws.clone()])], "{plan:?}");
        assert_eq!(plan.files, vec![ws.join(".env")], "{plan:?}");
    }

    #[test]
    fn a_pattern_of_names_hides_the_entries_it_matches_now() {
        let dir = tree();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        for name in [".env.local", ".env.production", "key.pem", "notes.txt"] {
            std::fs::write(ws.join(name), "x").unwrap();
        }
        let policy = SandboxPolicy::read_only()
            .with_unreadable(ws.join(".env.*"))
            .with_unreadable(ws.join("*.pem"))
            .with_unreadable(ws.join("[unclosed"))
            .with_unreadable(root.join("absent/*"));
        let mut files = plan(&policy).unwrap().files;
        files.sort();
        assert_eq!(files, vec![ws.join(".env.local"), ws.join(".env.production"), ws.join("key.pem")]);
        for n in 0..=MAX_MATCHES {
            std::fs::write(ws.join(format!("many-{n}")), "").unwrap();
        }
        let err = plan(&SandboxPolicy::read_only().with_unreadable(ws.join("many-*"))).unwrap_err();
        assert!(err.contains("more than 256 entries"), "{err}");
    }

    #[test]
    fn a_link_hides_what_it_leads_to() {
        let dir = tree();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("keys")).unwrap();
        let plan = plan(&SandboxPolicy::read_only().with_unreadable(root.join("keys"))).unwrap();
        assert_eq!(plan.dirs, vec![(root.join("home/.ssh"), vec![])]);
    }

    #[test]
    fn a_link_made_in_a_writable_root_later_hides_nothing_outside_it() {
        let dir = tree();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        // There when the path was added: followed out of the writable root.
        std::os::unix::fs::symlink(root.join("home/.ssh"), ws.join("keys")).unwrap();
        let policy = SandboxPolicy::workspace_write(&ws)
            .with_unreadable(ws.join("keys"))
            .with_unreadable(ws.join("later"))
            .with_unreadable(ws.join("inside"))
            .with_unreadable(ws.join(".env.*"));
        // Made afterwards (as a command could): followed only within the writable roots.
        std::os::unix::fs::symlink(root.join("home/docs"), ws.join("later")).unwrap();
        std::os::unix::fs::symlink(root.join("home/src"), ws.join(".env.x")).unwrap();
        std::os::unix::fs::symlink(ws.join("private"), ws.join("inside")).unwrap();
        let plan = plan(&policy).unwrap();
        let hidden: Vec<&PathBuf> = plan.paths().collect();
        assert!(hidden.contains(&&root.join("home/.ssh")), "{plan:?}");
        assert!(hidden.contains(&&ws.join("private")), "{plan:?}");
        assert!(
            !hidden
                .iter()
                .any(|p| p.starts_with(root.join("home/docs")) || p.starts_with(root.join("home/src")))
        );
        // Repointed after it was added: not followed out either.
        std::fs::remove_file(ws.join("keys")).unwrap();
        std::os::unix::fs::symlink(root.join("home/docs"), ws.join("keys")).unwrap();
        let again = super::plan(&policy).unwrap();
        assert!(again.paths().all(|p| !p.starts_with(root.join("home"))), "{again:?}");
    }
}
