//! Finding a program the host runs with every right of its own, where no sandboxed command can
//! have put it.

use std::path::{Path, PathBuf};

/// The first `name` (an executable file) in the directories of `path` (a `PATH` value) that
/// lie outside every directory of `excluded` (the writable roots, whose programs a sandboxed
/// command could have put there), as an absolute path with no link left in it. Relative and
/// empty entries are skipped.
pub fn resolve_program(name: &str, path: &std::ffi::OsStr, excluded: &[PathBuf]) -> Option<PathBuf> {
    let excluded: Vec<PathBuf> =
        excluded.iter().map(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone())).collect();
    let outside = |p: &Path| !excluded.iter().any(|dir| p.starts_with(dir));
    std::env::split_paths(path).filter(|dir| dir.is_absolute()).find_map(|dir| {
        let dir = std::fs::canonicalize(&dir).ok().filter(|d| outside(d))?;
        let program = std::fs::canonicalize(dir.join(name)).ok().filter(|p| outside(p))?;
        let meta = std::fs::metadata(&program).ok().filter(|m| m.is_file())?;
        #[cfg(unix)]
        if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 == 0 {
            return None;
        }
        Some(program)
    })
}
