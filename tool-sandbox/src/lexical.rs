//! Paths compared as text, the way the policy compares them.

use std::path::{Component, Path, PathBuf};

/// `path` with its `.` removed and each `..` taken with the name before it, as text: no link is
/// followed and nothing is looked up. A `..` with no name before it is dropped, so the result
/// never climbs above the path's start (`/..` is `/`, `a/../../b` is `b`).
///
/// The sandbox names the paths of its rules and violations this way; the permission rules and
/// the tools' workspace use the same function, so all three agree on what a path is.
///
/// ```
/// use std::path::Path;
/// use tool_sandbox::lexically_normal;
///
/// assert_eq!(lexically_normal(Path::new("/ws/./src/../Cargo.toml")), Path::new("/ws/Cargo.toml"));
/// assert_eq!(lexically_normal(Path::new("/../etc")), Path::new("/etc"));
/// assert_eq!(lexically_normal(Path::new("a/../../b")), Path::new("b"));
/// ```
pub fn lexically_normal(path: &Path) -> PathBuf {
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
