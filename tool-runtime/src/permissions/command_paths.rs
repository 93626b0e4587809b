//! The files a command line names, so that Read rules apply to them as they apply to `read`.

use std::path::{Component, Path, PathBuf};

use super::shell::see_through::{Seen, Word};

/// At most this many directories a line may `cd` into are followed.
const MAX_BASES: usize = 16;
/// At most this many directory entries are looked at to expand one glob.
const MAX_ENTRIES: usize = 10_000;

/// Every path the line's arguments may name, each with the word as written, resolved against
/// `root` and every directory an earlier `cd` in the line may have moved to. A word is read as a
/// path whole, after `=` (`--file=x`, `if=x`), after a short option (`-fx`) and after the first
/// `:` (`HEAD:.env`); `~` is the home directory; a glob in the glob is expanded.
/// Links are followed where the path exists, as the command will follow them.
pub(crate) fn named_paths(seen: &Seen, root: &Path) -> Vec<(PathBuf, String)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut bases = vec![root.to_path_buf()];
    let mut paths = Vec::new();
    for word in seen.redirections.iter().filter(|word| word.resolved()) {
        for path in resolve(root, &word.text, word, home.as_deref()) {
            paths.push((path, word.text.clone()));
        }
    }
    for run in &seen.runs {
        for word in run.args.iter().filter(|word| word.resolved()) {
            for candidate in candidates(&word.text) {
                for base in &bases {
                    for path in resolve(base, candidate, word, home.as_deref()) {
                        paths.push((path, word.text.clone()));
                    }
                }
            }
        }
        if run.program.as_deref() == Some("cd") {
            let target = run.args.iter().find(|word| !word.text.starts_with('-'));
            let moved: Vec<PathBuf> = match target {
                Some(word) if word.resolved() => {
                    bases.iter().flat_map(|base| resolve(base, &word.text, word, home.as_deref())).collect()
                }
                Some(_) => Vec::new(),
                None => home.iter().cloned().collect(),
            };
            for base in moved {
                if bases.len() < MAX_BASES && !bases.contains(&base) {
                    bases.push(base);
                }
            }
        }
    }
    paths
}

/// The parts of a word that may be a path.
fn candidates(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    if !text.starts_with('-') {
        out.push(text);
    } else if !text.starts_with("--") && text.len() > 2 {
        out.push(&text[2..]);
    }
    if let Some((_, value)) = text.split_once('=') {
        out.push(value);
    }
    if let Some((_, value)) = text.split_once(':') {
        out.push(value);
    }
    out.retain(|c| !c.is_empty() && !c.starts_with('-'));
    out
}

fn resolve(base: &Path, text: &str, word: &Word, home: Option<&Path>) -> Vec<PathBuf> {
    let joined = match (text.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => base.join(text),
    };
    let lexical = normalize(&joined);
    let mut out = Vec::new();
    if word.glob {
        out.extend(expand(&lexical));
    }
    out.push(lexical);
    let resolved: Vec<PathBuf> = out.iter().filter_map(|path| follow(path)).collect();
    out.extend(resolved);
    out
}

/// `..` and `.` removed as text (the kernel's answer is added by [`follow`]).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The path with its links followed, when it (or its directory) exists.
fn follow(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = std::fs::canonicalize(path) {
        return Some(real);
    }
    let (parent, name) = (path.parent()?, path.file_name()?);
    std::fs::canonicalize(parent).ok().map(|dir| dir.join(name))
}

/// The paths a glob matches (`.e*`, `s*/key`), component by component as the shell expands it
/// (but with `*` also matching a leading dot), up to a bound.
fn expand(path: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::new()];
    let mut looked = 0;
    for component in path.components() {
        let text = component.as_os_str().to_string_lossy();
        if !text.contains(['*', '?', '[']) {
            for path in &mut found {
                path.push(component);
            }
            continue;
        }
        let Ok(glob) = globset::GlobBuilder::new(&text).literal_separator(true).build() else {
            return Vec::new();
        };
        let glob = glob.compile_matcher();
        let mut next = Vec::new();
        for dir in &found {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for entry in entries.filter_map(Result::ok) {
                looked += 1;
                if looked > MAX_ENTRIES {
                    return next;
                }
                if glob.is_match(entry.file_name()) {
                    next.push(entry.path());
                }
            }
        }
        found = next;
    }
    found
}
