//! The local walk: ripgrep's ignore rules over directory handles, each directory opened beneath its parent without following links.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::local::{LocalOperations, kind_of, open_regular};
use crate::ops::{FileKind, Scope, Target, WalkEntry, WalkOptions, overrides};

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

/// Walks the tree under `root` as ripgrep would (hidden files, ignore files, `--glob`
/// overrides), through directory handles: every subdirectory is opened relative to its parent's
/// handle with `O_NOFOLLOW`, so a directory swapped for a symbolic link while the walk runs is
/// skipped, never followed out of the tree.
pub(crate) fn walk(
    ops: &LocalOperations,
    root: &Target,
    options: &WalkOptions,
    visit: &mut dyn FnMut(WalkEntry) -> bool,
) -> io::Result<()> {
    let absolute_root = ops.absolute(root);
    let overrides =
        if options.globs.is_empty() { None } else { Some(overrides(&absolute_root, &options.globs)?) };
    let dir = ops.open_dir(root)?;
    let (level, global) =
        if options.respect_ignore_files { (ancestors(ops, root), global_rules()) } else { (None, None) };
    let max_depth = options.max_depth.unwrap_or(MAX_DEPTH).min(MAX_DEPTH);
    let mut stack = vec![Pending { dir, target: root.clone(), absolute: absolute_root, depth: 0, level }];
    while let Some(pending) = stack.pop() {
        let level = if options.respect_ignore_files {
            let rules = read_rules(&pending.dir, &pending.absolute);
            Some(Arc::new(Level { rules, parent: pending.level.clone() }))
        } else {
            None
        };
        let Ok(entries) = pending.dir.entries() else { continue };
        let mut names: Vec<(std::ffi::OsString, FileKind)> = entries
            .filter_map(Result::ok)
            .map(|entry| (entry.file_name(), entry.file_type().map_or(FileKind::Other, kind_of)))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        let depth = pending.depth + 1;
        let mut subdirs = Vec::new();
        for (name, kind) in names {
            let is_dir = kind == FileKind::Dir;
            if is_dir && name == ".git" {
                continue;
            }
            let absolute = pending.absolute.join(&name);
            if options.report_excluded
                && overrides.as_ref().is_some_and(|o| o.matched(&absolute, is_dir).is_ignore())
            {
                let entry = WalkEntry {
                    path: pending.target.join(&name),
                    depth,
                    kind,
                    modified: None,
                    excluded: true,
                };
                if !visit(entry) {
                    return Ok(());
                }
                continue;
            }
            if !kept(&absolute, &name, is_dir, options, overrides.as_ref(), level.as_deref(), global.as_ref())
            {
                continue;
            }
            let target = pending.target.join(&name);
            let modified = pending
                .dir
                .symlink_metadata(&name)
                .ok()
                .and_then(|m| m.modified().ok())
                .map(|t| t.into_std());
            if !visit(WalkEntry { path: target.clone(), depth, kind, modified, excluded: false }) {
                return Ok(());
            }
            if is_dir && depth < max_depth {
                // Never follow a link here: an entry that was a directory when listed and is a
                // link now is skipped.
                if let Ok(dir) = pending.dir.open_dir_nofollow(&name) {
                    subdirs.push(Pending { dir, target, absolute, depth, level: level.clone() });
                }
            }
        }
        // Depth first, in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
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
fn ancestors(ops: &LocalOperations, root: &Target) -> Option<Arc<Level>> {
    let mut chain: Vec<Rules> = Vec::new();
    let mut next = root.parent();
    while let Some(target) = next {
        if let Ok(dir) = ops.open_dir(&target) {
            chain.push(read_rules(&dir, &ops.absolute(&target)));
        }
        next = target.parent();
    }
    if root.scope() == Scope::Workspace {
        let mut next = ops.root_path().parent();
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
